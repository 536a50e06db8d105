/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Conformance: stat, lstat, fstat, newfstatat, statx, statfs, fstatfs on files every Debian 12
 * root has (/etc/passwd, the /bin -> usr/bin symlink, /dev/null...). The calls are compared
 * with each other, not with fixed values.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#include "check.h"

#ifndef STATX_MNT_ID
#define STATX_MNT_ID 0x00001000U
#endif

static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_mode == b->st_mode &&
	       a->st_size == b->st_size && a->st_nlink == b->st_nlink && a->st_uid == b->st_uid &&
	       a->st_gid == b->st_gid && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec && a->st_rdev == b->st_rdev;
}

static void check_passwd(void)
{
	struct stat st, st2;
	struct statx stx;
	int fd, etc;

	CHECK_RET(syscall(SYS_stat, "/etc/passwd", &st), 0);
	CHECK(S_ISREG(st.st_mode), "mode %o", st.st_mode);
	CHECK(st.st_size > 0 && st.st_nlink >= 1 && st.st_blksize > 0, "size %ld nlink %lu",
	      (long)st.st_size, (unsigned long)st.st_nlink);

	CHECK_RET(syscall(SYS_lstat, "/etc/passwd", &st2), 0);
	CHECK(same_file(&st, &st2), "lstat differs from stat");
	CHECK_RET(syscall(SYS_newfstatat, AT_FDCWD, "/etc/passwd", &st2, 0), 0);
	CHECK(same_file(&st, &st2), "newfstatat differs from stat");

	fd = (int)CHECK_OK(syscall(SYS_openat, AT_FDCWD, "/etc/passwd", O_RDONLY));
	CHECK_RET(syscall(SYS_fstat, fd, &st2), 0);
	CHECK(same_file(&st, &st2), "fstat differs from stat");
	memset(&st2, 0, sizeof(st2));
	CHECK_RET(syscall(SYS_newfstatat, fd, "", &st2, AT_EMPTY_PATH), 0);
	CHECK(same_file(&st, &st2), "newfstatat(fd, \"\", AT_EMPTY_PATH) differs");
	memset(&st2, 0, sizeof(st2));
	CHECK_RET(syscall(SYS_newfstatat, fd, NULL, &st2, AT_EMPTY_PATH), 0);
	CHECK(same_file(&st, &st2), "newfstatat(fd, NULL, AT_EMPTY_PATH) differs");
	/* On the fd itself, other flag bits are not looked at. */
	CHECK_RET(syscall(SYS_newfstatat, fd, "", &st2, AT_EMPTY_PATH | 0x100000), 0);
	CHECK_ERR(syscall(SYS_newfstatat, fd, "x", &st2, 0), ENOTDIR);

	etc = (int)CHECK_OK(syscall(SYS_openat, AT_FDCWD, "/etc", O_RDONLY | O_DIRECTORY));
	CHECK_RET(syscall(SYS_newfstatat, etc, "passwd", &st2, 0), 0);
	CHECK(same_file(&st, &st2), "newfstatat(etcfd, passwd) differs");
	CHECK_RET(syscall(SYS_newfstatat, etc, "../etc/./passwd", &st2, 0), 0);
	CHECK(same_file(&st, &st2), "newfstatat(etcfd, ../etc/./passwd) differs");

	memset(&stx, 0xff, sizeof(stx));
	CHECK_RET(syscall(SYS_statx, AT_FDCWD, "/etc/passwd", 0, STATX_BASIC_STATS, &stx), 0);
	CHECK((stx.stx_mask & STATX_BASIC_STATS) == STATX_BASIC_STATS, "mask %x", stx.stx_mask);
	CHECK(stx.stx_ino == st.st_ino && stx.stx_size == (uint64_t)st.st_size &&
		      stx.stx_mode == st.st_mode && stx.stx_nlink == st.st_nlink &&
		      stx.stx_uid == st.st_uid && stx.stx_gid == st.st_gid &&
		      stx.stx_blocks == (uint64_t)st.st_blocks,
	      "statx fields differ from stat");
	CHECK(stx.stx_dev_major == major(st.st_dev) && stx.stx_dev_minor == minor(st.st_dev),
	      "statx dev %u:%u, stat dev %u:%u", stx.stx_dev_major, stx.stx_dev_minor,
	      major(st.st_dev), minor(st.st_dev));
	CHECK(stx.stx_mtime.tv_sec == st.st_mtim.tv_sec &&
		      stx.stx_mtime.tv_nsec == (uint32_t)st.st_mtim.tv_nsec,
	      "statx mtime differs");
	CHECK(!(stx.stx_mask & STATX_MNT_ID) || stx.stx_mnt_id != 0, "mount id 0");
	memset(&stx, 0, sizeof(stx));
	CHECK_RET(syscall(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx), 0);
	CHECK(stx.stx_ino == st.st_ino, "statx on the fd: ino %lu", (unsigned long)stx.stx_ino);
	CHECK_RET(syscall(SYS_statx, etc, "passwd", AT_STATX_DONT_SYNC, STATX_BASIC_STATS, &stx),
		  0);
	CHECK(stx.stx_ino == st.st_ino, "statx relative: ino %lu", (unsigned long)stx.stx_ino);
	syscall(SYS_close, fd);
	syscall(SYS_close, etc);
}

static void check_symlink_and_dirs(void)
{
	struct stat st, st2;
	struct statx stx;
	int fd;

	/* Debian 12 merges /usr: /bin is a symlink to usr/bin. */
	CHECK_RET(syscall(SYS_lstat, "/bin", &st), 0);
	CHECK(S_ISLNK(st.st_mode) && st.st_size == 7, "lstat /bin mode %o size %ld", st.st_mode,
	      (long)st.st_size);
	CHECK_RET(syscall(SYS_newfstatat, AT_FDCWD, "/bin", &st2, AT_SYMLINK_NOFOLLOW), 0);
	CHECK(same_file(&st, &st2), "newfstatat NOFOLLOW differs from lstat");
	CHECK_RET(syscall(SYS_statx, AT_FDCWD, "/bin", AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS,
			  &stx),
		  0);
	CHECK(S_ISLNK(stx.stx_mode) && stx.stx_ino == st.st_ino, "statx NOFOLLOW mode %o",
	      stx.stx_mode);

	CHECK_RET(syscall(SYS_stat, "/bin", &st), 0);
	CHECK(S_ISDIR(st.st_mode), "stat /bin mode %o", st.st_mode);
	CHECK_RET(syscall(SYS_stat, "/usr/bin", &st2), 0);
	CHECK(same_file(&st, &st2), "stat /bin differs from /usr/bin");
	CHECK_RET(syscall(SYS_stat, "/bin/", &st2), 0);
	CHECK(same_file(&st, &st2), "stat /bin/ differs from /usr/bin");
	CHECK_RET(syscall(SYS_lstat, "/bin/", &st2), 0);
	CHECK(S_ISDIR(st2.st_mode), "lstat /bin/ (trailing slash follows) mode %o", st2.st_mode);

	/* An O_PATH descriptor of the link itself. */
	fd = (int)CHECK_OK(syscall(SYS_openat, AT_FDCWD, "/bin", O_PATH | O_NOFOLLOW));
	CHECK_RET(syscall(SYS_fstat, fd, &st2), 0);
	CHECK(S_ISLNK(st2.st_mode), "fstat of O_PATH link mode %o", st2.st_mode);
	CHECK_RET(syscall(SYS_newfstatat, fd, "", &st2, AT_EMPTY_PATH), 0);
	CHECK(S_ISLNK(st2.st_mode), "fstatat of O_PATH link mode %o", st2.st_mode);
	syscall(SYS_close, fd);

	/* . and .. */
	CHECK_RET(syscall(SYS_stat, "/", &st), 0);
	CHECK(S_ISDIR(st.st_mode), "/ mode %o", st.st_mode);
	CHECK_RET(syscall(SYS_stat, "/..", &st2), 0);
	CHECK(same_file(&st, &st2), "/.. is not /");
	CHECK_RET(syscall(SYS_stat, "/etc/..", &st2), 0);
	CHECK(same_file(&st, &st2), "/etc/.. is not /");
	CHECK_RET(syscall(SYS_stat, "//./etc/../", &st2), 0);
	CHECK(same_file(&st, &st2), "//./etc/../ is not /");
	/* An empty path at AT_FDCWD is the working directory. */
	CHECK_RET(syscall(SYS_chdir, "/"), 0);
	CHECK_RET(syscall(SYS_newfstatat, AT_FDCWD, "", &st2, AT_EMPTY_PATH), 0);
	CHECK(same_file(&st, &st2), "cwd is not /");
	CHECK_RET(syscall(SYS_statx, AT_FDCWD, NULL, AT_EMPTY_PATH, STATX_BASIC_STATS, &stx), 0);
	CHECK(stx.stx_ino == st.st_ino, "statx of cwd");
	CHECK_RET(syscall(SYS_stat, "etc/passwd", &st2), 0);
	CHECK(S_ISREG(st2.st_mode), "relative stat");
}

static void check_devices(void)
{
	static const struct {
		const char *path;
		unsigned maj, min;
	} devs[] = { { "/dev/null", 1, 3 },
		     { "/dev/zero", 1, 5 },
		     { "/dev/full", 1, 7 },
		     { "/dev/random", 1, 8 },
		     { "/dev/urandom", 1, 9 } };
	struct stat st;
	struct statx stx;

	for (unsigned i = 0; i < sizeof(devs) / sizeof(devs[0]); i++) {
		CHECK_RET(syscall(SYS_stat, devs[i].path, &st), 0);
		CHECK(S_ISCHR(st.st_mode) && (st.st_mode & 0777) == 0666, "%s mode %o",
		      devs[i].path, st.st_mode);
		CHECK(major(st.st_rdev) == devs[i].maj && minor(st.st_rdev) == devs[i].min,
		      "%s rdev %u:%u", devs[i].path, major(st.st_rdev), minor(st.st_rdev));
		CHECK_RET(syscall(SYS_statx, AT_FDCWD, devs[i].path, 0, STATX_BASIC_STATS, &stx),
			  0);
		CHECK(stx.stx_rdev_major == devs[i].maj && stx.stx_rdev_minor == devs[i].min,
		      "%s statx rdev %u:%u", devs[i].path, stx.stx_rdev_major, stx.stx_rdev_minor);
	}
}

static void check_errors(void)
{
	struct stat st;
	struct statx stx;
	char *longname = malloc(5000);
	int fd;

	CHECK_ERR(syscall(SYS_stat, "/nonexistent-husk-test", &st), ENOENT);
	CHECK_ERR(syscall(SYS_stat, "/etc/passwd/x", &st), ENOTDIR);
	CHECK_ERR(syscall(SYS_stat, "/etc/passwd/", &st), ENOTDIR);
	CHECK_ERR(syscall(SYS_stat, "", &st), ENOENT);
	CHECK_ERR(syscall(SYS_lstat, "", &st), ENOENT);
	CHECK_ERR(syscall(SYS_newfstatat, AT_FDCWD, "", &st, 0), ENOENT);
	memset(longname, 'a', 4999);
	longname[0] = '/';
	longname[300] = '\0'; /* one component of 299 bytes */
	CHECK_ERR(syscall(SYS_stat, longname, &st), ENAMETOOLONG);
	longname[300] = 'a';
	longname[4999] = '\0'; /* a path longer than PATH_MAX */
	CHECK_ERR(syscall(SYS_stat, longname, &st), ENAMETOOLONG);
	free(longname);

	CHECK_ERR(syscall(SYS_stat, (char *)1, &st), EFAULT);
	CHECK_ERR(syscall(SYS_stat, NULL, &st), EFAULT);
	CHECK_ERR(syscall(SYS_stat, "/etc/passwd", (void *)1), EFAULT);
	CHECK_ERR(syscall(SYS_lstat, "/etc/passwd", NULL), EFAULT);

	fd = (int)CHECK_OK(syscall(SYS_openat, AT_FDCWD, "/etc/passwd", O_RDONLY));
	syscall(SYS_close, fd);
	CHECK_ERR(syscall(SYS_fstat, fd, &st), EBADF);
	CHECK_ERR(syscall(SYS_fstat, -1, &st), EBADF);
	CHECK_ERR(syscall(SYS_newfstatat, fd, "etc", &st, 0), EBADF);
	CHECK_ERR(syscall(SYS_newfstatat, fd, "", &st, AT_EMPTY_PATH), EBADF);
	CHECK_ERR(syscall(SYS_newfstatat, -5, "", &st, AT_EMPTY_PATH), EBADF);
	/* An absolute path ignores dirfd, even a bad one. */
	CHECK_RET(syscall(SYS_newfstatat, fd, "/etc", &st, 0), 0);

	/* Flags: the sync-type bits are accepted by newfstatat; anything else is EINVAL, and the
	 * flags are checked before the path is read. */
	CHECK_RET(syscall(SYS_newfstatat, AT_FDCWD, "/etc", &st, AT_STATX_FORCE_SYNC), 0);
	CHECK_RET(syscall(SYS_newfstatat, AT_FDCWD, "/etc", &st, AT_NO_AUTOMOUNT), 0);
	CHECK_ERR(syscall(SYS_newfstatat, AT_FDCWD, "/etc", &st, 0x8000), EINVAL);
	CHECK_ERR(syscall(SYS_newfstatat, AT_FDCWD, "/etc", &st, AT_REMOVEDIR), EINVAL);
	CHECK_ERR(syscall(SYS_newfstatat, AT_FDCWD, (char *)1, &st, 0x8000), EINVAL);

	CHECK_ERR(syscall(SYS_statx, AT_FDCWD, "/etc", 0, 0x80000000U /* STATX__RESERVED */, &stx),
		  EINVAL);
	CHECK_ERR(syscall(SYS_statx, AT_FDCWD, "/etc", AT_STATX_FORCE_SYNC | AT_STATX_DONT_SYNC,
			  STATX_BASIC_STATS, &stx),
		  EINVAL);
	CHECK_ERR(syscall(SYS_statx, AT_FDCWD, "/etc", 0x8000, STATX_BASIC_STATS, &stx), EINVAL);
	CHECK_ERR(syscall(SYS_statx, AT_FDCWD, (char *)1, 0, 0x80000000U, &stx), EINVAL);
	CHECK_ERR(syscall(SYS_statx, AT_FDCWD, (char *)1, 0, STATX_BASIC_STATS, &stx), EFAULT);
	CHECK_ERR(syscall(SYS_statx, AT_FDCWD, "/etc", 0, STATX_BASIC_STATS, (void *)1), EFAULT);
	CHECK_ERR(syscall(SYS_statx, AT_FDCWD, "/nonexistent-husk-test", 0, STATX_BASIC_STATS,
			  &stx),
		  ENOENT);
	CHECK_ERR(syscall(SYS_statx, AT_FDCWD, "", 0, STATX_BASIC_STATS, &stx), ENOENT);
	CHECK_ERR(syscall(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx), EBADF);
}

static void check_statfs(void)
{
	struct statfs root, etc, f;
	int fd;

	CHECK_RET(syscall(SYS_statfs, "/", &root), 0);
	CHECK(root.f_bsize > 0 && root.f_namelen > 0, "bsize %ld namelen %ld", (long)root.f_bsize,
	      (long)root.f_namelen);
	CHECK_RET(syscall(SYS_statfs, "/etc", &etc), 0);
	CHECK(etc.f_type == root.f_type, "/etc type %lx, / type %lx", (long)etc.f_type,
	      (long)root.f_type);
	fd = (int)CHECK_OK(syscall(SYS_openat, AT_FDCWD, "/etc/passwd", O_RDONLY));
	CHECK_RET(syscall(SYS_fstatfs, fd, &f), 0);
	CHECK(f.f_type == root.f_type && f.f_bsize == root.f_bsize, "fstatfs type %lx",
	      (long)f.f_type);
	syscall(SYS_close, fd);
	fd = (int)CHECK_OK(syscall(SYS_openat, AT_FDCWD, "/bin", O_PATH | O_NOFOLLOW));
	CHECK_RET(syscall(SYS_fstatfs, fd, &f), 0);
	CHECK(f.f_type == root.f_type, "fstatfs of O_PATH type %lx", (long)f.f_type);
	syscall(SYS_close, fd);
	CHECK_ERR(syscall(SYS_fstatfs, fd, &f), EBADF);
	CHECK_ERR(syscall(SYS_statfs, "/nonexistent-husk-test", &f), ENOENT);
	CHECK_ERR(syscall(SYS_statfs, "", &f), ENOENT);
	CHECK_ERR(syscall(SYS_statfs, NULL, &f), EFAULT);
	CHECK_ERR(syscall(SYS_statfs, "/", (void *)1), EFAULT);
}

int main(void)
{
	check_passwd();
	check_symlink_and_dirs();
	check_devices();
	check_errors();
	check_statfs();
	return finish();
}
