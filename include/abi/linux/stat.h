/* SPDX-License-Identifier: Apache-2.0 */
/* Structures the guest reads from stat(2), statx(2), getdents64(2), statfs(2) on x86-64. */
#ifndef HUSK_ABI_LINUX_STAT_H
#define HUSK_ABI_LINUX_STAT_H

#include <stdint.h>

/* struct stat of x86-64 (fstat, stat, lstat, newfstatat): 144 bytes. */
struct linux_stat {
	uint64_t st_dev;
	uint64_t st_ino;
	uint64_t st_nlink;
	uint32_t st_mode;
	uint32_t st_uid;
	uint32_t st_gid;
	uint32_t __pad0;
	uint64_t st_rdev;
	int64_t st_size;
	int64_t st_blksize;
	int64_t st_blocks;
	uint64_t st_atime_sec;
	uint64_t st_atime_nsec;
	uint64_t st_mtime_sec;
	uint64_t st_mtime_nsec;
	uint64_t st_ctime_sec;
	uint64_t st_ctime_nsec;
	int64_t __unused[3];
};
_Static_assert(sizeof(struct linux_stat) == 144, "x86-64 struct stat is 144 bytes");

struct linux_statx_timestamp {
	int64_t tv_sec;
	uint32_t tv_nsec;
	int32_t __reserved;
};

/* struct statx: 256 bytes. */
struct linux_statx {
	uint32_t stx_mask;
	uint32_t stx_blksize;
	uint64_t stx_attributes;
	uint32_t stx_nlink;
	uint32_t stx_uid;
	uint32_t stx_gid;
	uint16_t stx_mode;
	uint16_t __spare0;
	uint64_t stx_ino;
	uint64_t stx_size;
	uint64_t stx_blocks;
	uint64_t stx_attributes_mask;
	struct linux_statx_timestamp stx_atime;
	struct linux_statx_timestamp stx_btime;
	struct linux_statx_timestamp stx_ctime;
	struct linux_statx_timestamp stx_mtime;
	uint32_t stx_rdev_major;
	uint32_t stx_rdev_minor;
	uint32_t stx_dev_major;
	uint32_t stx_dev_minor;
	uint64_t stx_mnt_id;
	uint32_t stx_dio_mem_align;
	uint32_t stx_dio_offset_align;
	uint64_t __spare3[12];
};
_Static_assert(sizeof(struct linux_statx) == 256, "struct statx is 256 bytes");

/* struct linux_dirent64 header; the NUL-terminated name follows, record padded to 8 bytes. */
struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	uint16_t d_reclen;
	uint8_t d_type;
	char d_name[];
};

/* struct statfs of x86-64: 120 bytes. */
struct linux_statfs {
	int64_t f_type;
	int64_t f_bsize;
	uint64_t f_blocks;
	uint64_t f_bfree;
	uint64_t f_bavail;
	uint64_t f_files;
	uint64_t f_ffree;
	int32_t f_fsid[2];
	int64_t f_namelen;
	int64_t f_frsize;
	int64_t f_flags;
	int64_t f_spare[4];
};
_Static_assert(sizeof(struct linux_statfs) == 120, "x86-64 struct statfs is 120 bytes");

#endif
