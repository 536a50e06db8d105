/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A test-only gofer client (sentry/fs/gofer/client.h) served in-process from a host
 * directory, with the gofer's rules: single-name walks with O_NOFOLLOW stopping after a
 * symlink, no "." or ".." in getdents, FDs donated by open. It counts calls and open handles so
 * that tests can check caching and that every handle is closed. getdents returns at most two
 * entries per call, so that iteration needs several calls.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "include/abi/linux/stat.h"
#include "sentry/fs/gofer/client.h"
#include "tests/unit/vfs/fake_gofer.h"

struct gofer_client {
	int root_fd;
};

int fake_gofer_walks;
int fake_gofer_handles;
int fake_gofer_getdents_calls;
extern int fake_gofer_stats;

struct gofer_client *fake_gofer_create(const char *dir)
{
	struct gofer_client *c = calloc(1, sizeof(*c));

	c->root_fd = open(dir, O_PATH | O_DIRECTORY);
	if (c->root_fd < 0)
		abort();
	return c;
}

int gofer_client_create(int sock, struct gofer_client **out)
{
	return -ENOSYS;
}

void gofer_client_destroy(struct gofer_client *c)
{
	close(c->root_fd);
	free(c);
}

static int stat_fd(int fd, struct gofer_attr *a)
{
	struct stat st;

	if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	*a = (struct gofer_attr){
		.dev = st.st_dev,
		.ino = st.st_ino,
		.nlink = st.st_nlink,
		.mode = st.st_mode,
		.uid = st.st_uid,
		.gid = st.st_gid,
		.rdev = st.st_rdev,
		.size = st.st_size,
		.blksize = st.st_blksize,
		.blocks = st.st_blocks,
		.mtime_sec = st.st_mtim.tv_sec,
		.mtime_nsec = (uint32_t)st.st_mtim.tv_nsec,
	};
	return 0;
}

int gofer_mount(struct gofer_client *c, uint64_t *root, struct gofer_attr *attr)
{
	int fd = dup(c->root_fd);

	if (fd < 0)
		return -errno;
	fake_gofer_handles++;
	*root = (uint64_t)fd;
	return stat_fd(fd, attr);
}

int gofer_walk(struct gofer_client *c, uint64_t dir, const char *const *names, int n,
	       uint64_t *handles, struct gofer_attr *attrs)
{
	uint64_t cur = dir;
	int i;

	fake_gofer_walks++;
	for (i = 0; i < n; i++) {
		int fd = openat((int)cur, names[i], O_PATH | O_NOFOLLOW);

		if (fd < 0) {
			if (errno == ENOENT)
				break;
			return -errno;
		}
		fake_gofer_handles++;
		handles[i] = (uint64_t)fd;
		stat_fd(fd, &attrs[i]);
		cur = (uint64_t)fd;
		if (S_ISLNK(attrs[i].mode)) {
			i++;
			break;
		}
	}
	return i;
}

int gofer_stat(struct gofer_client *c, uint64_t h, struct gofer_attr *attr)
{
	fake_gofer_stats++;
	return stat_fd((int)h, attr);
}

int gofer_open(struct gofer_client *c, uint64_t h, int flags)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", (int)h);
	fd = open(path, flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

ssize_t gofer_readlink(struct gofer_client *c, uint64_t h, char *buf, size_t len)
{
	ssize_t n = readlinkat((int)h, "", buf, len);

	return n < 0 ? -errno : n;
}

int gofer_getdents(struct gofer_client *c, uint64_t h, int64_t off,
		   int (*fn)(void *arg, const struct gofer_dirent *d), void *arg)
{
	char buf[4096] __attribute__((aligned(8)));
	int fd = openat((int)h, ".", O_RDONLY | O_DIRECTORY), count = 0;
	long n;

	fake_gofer_getdents_calls++;
	if (fd < 0)
		return -errno;
	if (lseek(fd, off, SEEK_SET) < 0) {
		close(fd);
		return -errno;
	}
	n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
	for (long pos = 0; pos < n && count < 2;) {
		const struct linux_dirent64 *d = (const void *)(buf + pos);
		struct gofer_dirent gd = {
			.ino = d->d_ino,
			.next = d->d_off,
			.type = d->d_type,
			.namelen = (uint16_t)strlen(d->d_name),
			.name = d->d_name,
		};

		pos += d->d_reclen;
		if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
			continue;
		count++;
		if (fn(arg, &gd))
			break;
	}
	close(fd);
	return n < 0 ? -EIO : count;
}

int gofer_statfs(struct gofer_client *c, uint64_t h, struct gofer_statfs *st)
{
	struct statfs s;

	if (fstatfs((int)h, &s) < 0)
		return -errno;
	*st = (struct gofer_statfs){
		.type = (uint64_t)s.f_type,
		.bsize = (uint64_t)s.f_bsize,
		.blocks = s.f_blocks,
		.namelen = (uint64_t)s.f_namelen,
	};
	return 0;
}

void gofer_close(struct gofer_client *c, const uint64_t *handles, int n)
{
	for (int i = 0; i < n; i++) {
		close((int)handles[i]);
		fake_gofer_handles--;
	}
}

/* --- writes: the host's *at calls on the handles (O_PATH FDs) --- */

int fake_gofer_stats;

/* A handle and attributes of the node name in dir just made; closes fd on failure. */
static int fake_made(uint64_t dir, const char *name, uint64_t *h, struct gofer_attr *attr)
{
	int fd = openat((int)dir, name, O_PATH | O_NOFOLLOW);

	if (fd < 0)
		return -errno;
	if (attr)
		stat_fd(fd, attr);
	if (h) {
		fake_gofer_handles++;
		*h = (uint64_t)fd;
	} else {
		close(fd);
	}
	return 0;
}

static void fake_own(uint64_t dir, const char *name, uint32_t uid, uint32_t gid)
{
	if (fchownat((int)dir, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
		abort();
}

int gofer_create(struct gofer_client *c, uint64_t dir, const char *name, int flags, uint32_t mode,
		 uint32_t uid, uint32_t gid, uint64_t *h, struct gofer_attr *attr)
{
	int fd = openat((int)dir, name,
			(flags & O_ACCMODE) | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0);
	int err;

	if (fd < 0)
		return -errno;
	fchmod(fd, mode & 07777);
	fake_own(dir, name, uid, gid);
	err = fake_made(dir, name, h, attr);
	if (err < 0) {
		close(fd);
		return err;
	}
	return fd;
}

int gofer_mkdir(struct gofer_client *c, uint64_t dir, const char *name, uint32_t mode, uint32_t uid,
		uint32_t gid, uint64_t *h, struct gofer_attr *attr)
{
	if (mkdirat((int)dir, name, 0) < 0)
		return -errno;
	fake_own(dir, name, uid, gid);
	fchmodat((int)dir, name, mode & 07777, 0);
	return fake_made(dir, name, h, attr);
}

int gofer_mknod(struct gofer_client *c, uint64_t dir, const char *name, uint32_t mode, uint32_t uid,
		uint32_t gid, uint64_t *h, struct gofer_attr *attr)
{
	if (!S_ISFIFO(mode) && !S_ISSOCK(mode))
		return -EPERM;
	if (mknodat((int)dir, name, (mode & S_IFMT) | (mode & 07777), 0) < 0)
		return -errno;
	fake_own(dir, name, uid, gid);
	return fake_made(dir, name, h, attr);
}

int gofer_symlink(struct gofer_client *c, uint64_t dir, const char *name, const char *target,
		  uint32_t uid, uint32_t gid, uint64_t *h, struct gofer_attr *attr)
{
	if (symlinkat(target, (int)dir, name) < 0)
		return -errno;
	fake_own(dir, name, uid, gid);
	return fake_made(dir, name, h, attr);
}

int gofer_link(struct gofer_client *c, uint64_t olddir, const char *oldname, uint64_t newdir,
	       const char *newname, uint64_t *h, struct gofer_attr *attr)
{
	if (linkat((int)olddir, oldname, (int)newdir, newname, 0) < 0)
		return -errno;
	return fake_made(newdir, newname, h, attr);
}

int gofer_unlink(struct gofer_client *c, uint64_t dir, const char *name, uint32_t flags)
{
	return unlinkat((int)dir, name, (int)flags) < 0 ? -errno : 0;
}

int gofer_rename(struct gofer_client *c, uint64_t olddir, const char *oldname, uint64_t newdir,
		 const char *newname, uint32_t flags)
{
	return renameat2((int)olddir, oldname, (int)newdir, newname, flags) < 0 ? -errno : 0;
}

int gofer_setstat(struct gofer_client *c, uint64_t h, const struct gofer_setstat *st,
		  struct gofer_attr *attr)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", (int)h);
	if ((st->mask & GOFER_SETSTAT_SIZE) && truncate(path, st->size) < 0)
		return -errno;
	if ((st->mask & (GOFER_SETSTAT_UID | GOFER_SETSTAT_GID)) &&
	    fchownat((int)h, "", (st->mask & GOFER_SETSTAT_UID) ? st->uid : (uint32_t)-1,
		     (st->mask & GOFER_SETSTAT_GID) ? st->gid : (uint32_t)-1,
		     AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if ((st->mask & GOFER_SETSTAT_MODE) && chmod(path, st->mode) < 0)
		return -errno;
	if (st->mask & (GOFER_SETSTAT_ATIME | GOFER_SETSTAT_MTIME)) {
		struct timespec ts[2] = {
			{ st->atime_sec,
			  (st->mask & GOFER_SETSTAT_ATIME) ? st->atime_nsec : UTIME_OMIT },
			{ st->mtime_sec,
			  (st->mask & GOFER_SETSTAT_MTIME) ? st->mtime_nsec : UTIME_OMIT },
		};

		if (utimensat(AT_FDCWD, path, ts, 0) < 0)
			return -errno;
	}
	return attr ? stat_fd((int)h, attr) : 0;
}

int gofer_walk_stat(struct gofer_client *c, uint64_t dir, const char *const *names, int n,
		    struct gofer_attr *attrs)
{
	return -ENOSYS;
}

int gofer_fsync(struct gofer_client *c, uint64_t h, bool datasync)
{
	return 0;
}

/* Extended attributes: user.* of the handle's file, through its /proc/self/fd link. */
static void fd_path(uint64_t h, char *buf, size_t size)
{
	snprintf(buf, size, "/proc/self/fd/%d", (int)h);
}

ssize_t gofer_getxattr(struct gofer_client *c, uint64_t h, const char *name, void *buf, size_t size)
{
	char path[64];
	ssize_t n;

	fd_path(h, path, sizeof(path));
	n = getxattr(path, name, buf, size);
	return n < 0 ? -errno : n;
}

int gofer_setxattr(struct gofer_client *c, uint64_t h, const char *name, const void *value,
		   size_t size, uint32_t flags)
{
	char path[64];

	fd_path(h, path, sizeof(path));
	return setxattr(path, name, value, size, (int)flags) < 0 ? -errno : 0;
}

ssize_t gofer_listxattr(struct gofer_client *c, uint64_t h, char *buf, size_t size)
{
	char path[64];
	ssize_t n;

	fd_path(h, path, sizeof(path));
	n = listxattr(path, buf, size);
	return n < 0 ? -errno : n;
}

int gofer_removexattr(struct gofer_client *c, uint64_t h, const char *name)
{
	char path[64];

	fd_path(h, path, sizeof(path));
	return removexattr(path, name) < 0 ? -errno : 0;
}
