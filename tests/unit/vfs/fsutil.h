/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers of the tmpfs and overlay tests: a harness around any filesystem, and short calls for
 * writing, reading, stat-ing and listing through the VFS as the harness's task.
 */
#ifndef HUSK_TESTS_UNIT_VFS_FSUTIL_H
#define HUSK_TESTS_UNIT_VFS_FSUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "tests/unit/vfs/testfs.h"

/* Makes h a kernel whose root mount shows fs (the mount takes over the caller's reference). */
void fsu_harness_init(struct harness *h, struct vfs_fs *fs);

/* Creates (or truncates) path with mode and writes data. Returns bytes written or -errno. */
ssize_t fsu_write_file(struct harness *h, const char *path, unsigned int mode, const char *data);
/* Appends data to an existing path. Returns bytes written or -errno. */
ssize_t fsu_append(struct harness *h, const char *path, const char *data);
/* Reads path into buf (NUL-terminated, at most size - 1 bytes). Returns the length or -errno. */
ssize_t fsu_read_file(struct harness *h, const char *path, char *buf, size_t size);
/* Attributes of path, following a final symlink unless nofollow. Returns 0 or -errno. */
int fsu_stat(struct harness *h, const char *path, bool nofollow, struct vfs_attr *a);
/* Writes len bytes through f at *pos. Returns bytes written or -errno. */
ssize_t fsu_fwrite(struct file *f, const void *buf, size_t len);

/* The names of a directory listing, without "." and "..", sorted, space-separated. */
struct fsu_entry {
	char name[256];
	uint64_t ino;
	unsigned int type;
	int64_t next;
};
/*
 * Reads at most max entries of open directory f from its position (as getdents64 would).
 * Returns how many it stored or -errno.
 */
int fsu_readdir(struct file *f, struct fsu_entry *out, int max);
/* Lists path: writes the sorted names (no "." and "..") into buf, space-separated. */
int fsu_list(struct harness *h, const char *path, char *buf, size_t size);

#endif
