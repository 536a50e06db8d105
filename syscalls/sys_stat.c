/* SPDX-License-Identifier: Apache-2.0 */
/*
 * File attributes: the stat family, statx and statfs, over the VFS (sentry/vfs/vfs.h), and
 * name_to_handle_at (no handles: EOPNOTSUPP).
 *
 * Device numbers in struct vfs_attr (dev, rdev) are taken to be in the user-space dev_t
 * encoding that stat(2) reports (the one glibc's major()/minor() decode); statx splits them.
 *
 * The order of checks follows Linux 6.18: an empty path with AT_EMPTY_PATH on a real fd is
 * fstat (no flag check), then flags, then the path's own error, then the lookup.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "common/cleanup.h"
#include "include/abi/linux/stat.h"
#include "sentry/kernel/nsproxy.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/handlers.h"

#define LINUX_AT_FDCWD (-100)
#define LINUX_AT_SYMLINK_NOFOLLOW 0x100
#define LINUX_AT_NO_AUTOMOUNT 0x800
#define LINUX_AT_EMPTY_PATH 0x1000
#define LINUX_AT_STATX_SYNC_TYPE 0x6000
#define LINUX_AT_SYMLINK_FOLLOW 0x400
#define LINUX_AT_HANDLE_FID 0x200
#define LINUX_AT_HANDLE_MNT_ID_UNIQUE 0x001
#define LINUX_AT_HANDLE_CONNECTABLE 0x002
#define LINUX_PATH_MAX 4096

#define LINUX_STATX_BASIC_STATS 0x000007ffU
#define LINUX_STATX_MNT_ID 0x00001000U
#define LINUX_STATX_MNT_ID_UNIQUE 0x00004000U
#define LINUX_STATX__RESERVED 0x80000000U

/* Magic numbers for files with no path in the mount tree (include/uapi/linux/magic.h). */
#define LINUX_PIPEFS_MAGIC 0x50495045
#define LINUX_SOCKFS_MAGIC 0x534F434B
#define LINUX_ANON_INODE_FS_MAGIC 0x09041934
#define LINUX_ST_VALID 0x0020

/* Flags the stat family accepts on a path lookup. */
#define STAT_LOOKUP_FLAGS                                                          \
	(LINUX_AT_SYMLINK_NOFOLLOW | LINUX_AT_NO_AUTOMOUNT | LINUX_AT_EMPTY_PATH | \
	 LINUX_AT_STATX_SYNC_TYPE)

static inline void file_putp(struct file **f)
{
	if (*f)
		file_put(*f);
}

static inline void vfs_path_putp(struct vfs_path *p)
{
	if (p->mnt || p->node)
		vfs_path_put(p);
}

#define _cleanup_file_ _cleanup_(file_putp)
#define _cleanup_vfs_path_ _cleanup_(vfs_path_putp)

static int copy_out_all(struct task *t, uint64_t addr, const void *src, size_t len)
{
	ssize_t n = mm_copy_out(t->mm, addr, src, len);

	return n == (ssize_t)len ? 0 : -EFAULT;
}

/* A guest path argument as getname() would see it. */
struct stat_name {
	char buf[LINUX_PATH_MAX];
	int err; /* -EFAULT or -ENAMETOOLONG from the copy; the caller reports it in its turn */
	bool empty; /* AT_EMPTY_PATH was given and the path is NULL or "" */
};

static void stat_name_copy(struct task *t, uint64_t addr, int flags, struct stat_name *n)
{
	ssize_t len;

	n->err = 0;
	n->empty = false;
	n->buf[0] = '\0';
	if (!addr && (flags & LINUX_AT_EMPTY_PATH)) {
		n->empty = true;
		return;
	}
	len = mm_copy_in_string(t->mm, n->buf, addr, sizeof(n->buf));
	if (len < 0) {
		n->err = (int)len;
		return;
	}
	n->empty = len == 0 && (flags & LINUX_AT_EMPTY_PATH);
}

/* Attributes (and mount id, 0 when the file has no path) of the file at fd. */
static int fd_getattr(struct task *t, int fd, struct vfs_attr *attr, uint64_t *mnt_id)
{
	_cleanup_file_ struct file *f = fdtable_lookup(t->fdt, fd);

	if (!f)
		return -EBADF;
	*mnt_id = 0;
	if (f->mnt && f->node) {
		/* Borrows the file's references: O_PATH files work as any other. */
		struct vfs_path p = { .mnt = f->mnt, .node = f->node };

		*mnt_id = vfs_path_mnt_id(&p);
		return vfs_path_getattr(&p, attr);
	}
	return file_getattr(f, attr);
}

/*
 * Resolves name relative to dirfd and returns its attributes and mount id. flags are the
 * already validated AT_* flags.
 */
static int path_getattr(struct task *t, int dirfd, const struct stat_name *name, int flags,
			struct vfs_attr *attr, uint64_t *mnt_id)
{
	_cleanup_vfs_path_ struct vfs_path p = { 0 };
	int err;

	if (name->err)
		return name->err;
	err = vfs_lookup_at(t, dirfd, name->buf,
			    flags & (LINUX_AT_SYMLINK_NOFOLLOW | LINUX_AT_EMPTY_PATH), &p);
	if (err)
		return err;
	err = vfs_path_getattr(&p, attr);
	if (err)
		return err;
	*mnt_id = vfs_path_mnt_id(&p);
	return 0;
}

static int put_stat(struct task *t, uint64_t addr, const struct vfs_attr *a)
{
	struct linux_stat st;

	memset(&st, 0, sizeof(st));
	st.st_dev = a->dev;
	st.st_ino = a->ino;
	st.st_nlink = a->nlink;
	st.st_mode = a->mode;
	st.st_uid = task_uid_to(t, a->uid);
	st.st_gid = task_gid_to(t, a->gid);
	st.st_rdev = a->rdev;
	st.st_size = a->size;
	st.st_blksize = a->blksize;
	st.st_blocks = a->blocks;
	st.st_atime_sec = (uint64_t)a->atime.tv_sec;
	st.st_atime_nsec = (uint64_t)a->atime.tv_nsec;
	st.st_mtime_sec = (uint64_t)a->mtime.tv_sec;
	st.st_mtime_nsec = (uint64_t)a->mtime.tv_nsec;
	st.st_ctime_sec = (uint64_t)a->ctime.tv_sec;
	st.st_ctime_nsec = (uint64_t)a->ctime.tv_nsec;
	return copy_out_all(t, addr, &st, sizeof(st));
}

static struct linux_statx_timestamp statx_ts(const struct timespec *ts)
{
	return (struct linux_statx_timestamp){ .tv_sec = ts->tv_sec,
					       .tv_nsec = (uint32_t)ts->tv_nsec };
}

/* Fills and copies out a struct statx; mnt_id 0 means the file has no path. */
static int put_statx(struct task *t, uint64_t addr, const struct vfs_attr *a, uint64_t mnt_id,
		     unsigned int mask)
{
	struct linux_statx stx;

	memset(&stx, 0, sizeof(stx));
	stx.stx_mask = LINUX_STATX_BASIC_STATS;
	if (mnt_id) {
		/* The sentry's mount ids are never reused, so they serve as the unique ones. */
		stx.stx_mask |= (mask & LINUX_STATX_MNT_ID_UNIQUE) ? LINUX_STATX_MNT_ID_UNIQUE :
								     LINUX_STATX_MNT_ID;
		stx.stx_mnt_id = mnt_id;
	}
	stx.stx_blksize = (uint32_t)a->blksize;
	stx.stx_nlink = (uint32_t)a->nlink;
	stx.stx_uid = task_uid_to(t, a->uid);
	stx.stx_gid = task_gid_to(t, a->gid);
	stx.stx_mode = (uint16_t)a->mode;
	stx.stx_ino = a->ino;
	stx.stx_size = (uint64_t)a->size;
	stx.stx_blocks = (uint64_t)a->blocks;
	stx.stx_atime = statx_ts(&a->atime);
	stx.stx_ctime = statx_ts(&a->ctime);
	stx.stx_mtime = statx_ts(&a->mtime);
	stx.stx_rdev_major = major(a->rdev);
	stx.stx_rdev_minor = minor(a->rdev);
	stx.stx_dev_major = major(a->dev);
	stx.stx_dev_minor = minor(a->dev);
	return copy_out_all(t, addr, &stx, sizeof(stx));
}

/* newfstatat(2) and the calls built on it. */
static long do_fstatat(struct task *t, int dirfd, uint64_t path_addr, uint64_t buf, int flags)
{
	struct stat_name name;
	struct vfs_attr attr;
	uint64_t mnt_id;
	int err;

	stat_name_copy(t, path_addr, flags, &name);
	if (name.empty && dirfd >= 0)
		err = fd_getattr(t, dirfd, &attr, &mnt_id);
	else if (flags & ~STAT_LOOKUP_FLAGS)
		return -EINVAL;
	else
		err = path_getattr(t, dirfd, &name, flags, &attr, &mnt_id);
	if (err)
		return err;
	return put_stat(t, buf, &attr);
}

/* fstat(2) */
long sys_fstat(struct task *t, const struct syscall_args *args)
{
	struct vfs_attr attr;
	uint64_t mnt_id;
	int err = fd_getattr(t, (int)args->a[0], &attr, &mnt_id);

	if (err)
		return err;
	return put_stat(t, args->a[1], &attr);
}

/* stat(2) */
long sys_stat(struct task *t, const struct syscall_args *args)
{
	return do_fstatat(t, LINUX_AT_FDCWD, args->a[0], args->a[1], 0);
}

/* lstat(2) */
long sys_lstat(struct task *t, const struct syscall_args *args)
{
	return do_fstatat(t, LINUX_AT_FDCWD, args->a[0], args->a[1], LINUX_AT_SYMLINK_NOFOLLOW);
}

/* newfstatat(2): the AT_STATX_SYNC_TYPE bits are accepted (and ignored) as in Linux. */
long sys_newfstatat(struct task *t, const struct syscall_args *args)
{
	return do_fstatat(t, (int)args->a[0], args->a[1], args->a[2], (int)args->a[3]);
}

/*
 * statx(2): returns STATX_BASIC_STATS and the mount id (STATX_MNT_ID, or STATX_MNT_ID_UNIQUE
 * when asked for); no birth time, no stx_attributes, no direct-I/O alignment yet.
 */
long sys_statx(struct task *t, const struct syscall_args *args)
{
	int dirfd = (int)args->a[0];
	int flags = (int)args->a[2];
	unsigned int mask = (unsigned int)args->a[3];
	struct stat_name name;
	struct vfs_attr attr;
	uint64_t mnt_id;
	int err;

	stat_name_copy(t, args->a[1], flags, &name);
	if (mask & LINUX_STATX__RESERVED)
		return -EINVAL;
	if ((flags & LINUX_AT_STATX_SYNC_TYPE) == LINUX_AT_STATX_SYNC_TYPE)
		return -EINVAL;
	if (name.empty && dirfd >= 0) {
		err = fd_getattr(t, dirfd, &attr, &mnt_id);
	} else {
		if (flags & ~STAT_LOOKUP_FLAGS)
			return -EINVAL;
		err = path_getattr(t, dirfd, &name, flags, &attr, &mnt_id);
	}
	if (err)
		return err;
	return put_statx(t, args->a[4], &attr, mnt_id, mask);
}

/* statfs(2) of a file with no path: what Linux reports for its pseudo filesystems. */
static int nopath_statfs(struct file *f, struct linux_statfs *st)
{
	struct vfs_attr attr;
	int err = file_getattr(f, &attr);

	if (err)
		return err;
	memset(st, 0, sizeof(*st));
	switch (attr.mode & S_IFMT) {
	case S_IFIFO:
		st->f_type = LINUX_PIPEFS_MAGIC;
		break;
	case S_IFSOCK:
		st->f_type = LINUX_SOCKFS_MAGIC;
		break;
	default:
		st->f_type = LINUX_ANON_INODE_FS_MAGIC;
		break;
	}
	st->f_bsize = 4096;
	st->f_frsize = 4096;
	st->f_namelen = 255;
	st->f_flags = LINUX_ST_VALID;
	return 0;
}

/* statfs(2) */
long sys_statfs(struct task *t, const struct syscall_args *args)
{
	_cleanup_vfs_path_ struct vfs_path p = { 0 };
	struct stat_name name;
	struct linux_statfs st;
	int err;

	stat_name_copy(t, args->a[0], 0, &name);
	if (name.err)
		return name.err;
	err = vfs_lookup_at(t, LINUX_AT_FDCWD, name.buf, 0, &p);
	if (err)
		return err;
	memset(&st, 0, sizeof(st));
	err = vfs_path_statfs(&p, &st);
	if (err)
		return err;
	return copy_out_all(t, args->a[1], &st, sizeof(st));
}

/*
 * fstatfs(2): O_PATH files work; files with no path (host stdio, pipes) report a pseudo
 * filesystem by their type (pipefs, sockfs, else anon_inodefs).
 */
long sys_fstatfs(struct task *t, const struct syscall_args *args)
{
	_cleanup_file_ struct file *f = fdtable_lookup(t->fdt, (int)args->a[0]);
	struct linux_statfs st;
	int err;

	if (!f)
		return -EBADF;
	memset(&st, 0, sizeof(st));
	err = -ENOSYS;
	if (f->mnt && f->node) {
		struct vfs_path p = { .mnt = f->mnt, .node = f->node };

		err = vfs_path_statfs(&p, &st);
	}
	/* Pipes, sockets and anon files (their nodes have no statfs): their pseudo filesystem. */
	if (err == -ENOSYS)
		err = nopath_statfs(f, &st);
	if (err)
		return err;
	return copy_out_all(t, args->a[1], &st, sizeof(st));
}

/*
 * name_to_handle_at(2): no filesystem of the sandbox has export operations, so once the flags
 * are checked and the path found (errors as Linux's, in its order), the answer is EOPNOTSUPP, as
 * Linux gives for proc; programs (systemd, libmount) then use statx's mount id or fdinfo. Linux
 * would give tmpfs files handles, and any file an AT_HANDLE_FID one.
 */
long sys_name_to_handle_at(struct task *t, const struct syscall_args *args)
{
	int dirfd = (int)args->a[0];
	int flags = (int)args->a[4];
	_cleanup_vfs_path_ struct vfs_path p = { 0 };
	struct stat_name *name;
	int err;

	if (flags & ~(LINUX_AT_SYMLINK_FOLLOW | LINUX_AT_EMPTY_PATH | LINUX_AT_HANDLE_FID |
		      LINUX_AT_HANDLE_MNT_ID_UNIQUE | LINUX_AT_HANDLE_CONNECTABLE))
		return -EINVAL;
	/* A connectable handle is one to decode: not a FID, nor of a file with no known parent. */
	if ((flags & LINUX_AT_HANDLE_CONNECTABLE) &&
	    (flags & (LINUX_AT_HANDLE_FID | LINUX_AT_EMPTY_PATH)))
		return -EINVAL;
	name = malloc(sizeof(*name));
	if (!name)
		return -ENOMEM;
	stat_name_copy(t, args->a[1], flags, name);
	err = name->err;
	if (!err)
		err = vfs_lookup_at(
			t, dirfd, name->buf,
			(flags & LINUX_AT_EMPTY_PATH) |
				(flags & LINUX_AT_SYMLINK_FOLLOW ? 0 : LINUX_AT_SYMLINK_NOFOLLOW),
			&p);
	free(name);
	return err ? err : -EOPNOTSUPP;
}
