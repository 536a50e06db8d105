/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Conformance: path resolution and directories: openat with O_DIRECTORY/O_NOFOLLOW/O_PATH,
 * getdents64, getcwd/chdir/fchdir, readlink/readlinkat, access/faccessat/faccessat2.
 * Uses what Debian 12 has: /etc/passwd and the merged-/usr symlinks /bin -> usr/bin,
 * /lib -> usr/lib, /sbin -> usr/sbin.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "check.h"

#ifndef AT_EACCESS
#define AT_EACCESS 0x200
#endif

struct kdirent {
	uint64_t d_ino;
	int64_t d_off;
	uint16_t d_reclen;
	uint8_t d_type;
	char d_name[];
};

static void check_open(void)
{
	struct stat st, st2;
	int fd, etc;

	fd = (int)CHECK_OK(syscall(SYS_openat, AT_FDCWD, "/etc", O_RDONLY | O_DIRECTORY));
	syscall(SYS_close, fd);
	CHECK_ERR(syscall(SYS_openat, AT_FDCWD, "/etc/passwd", O_RDONLY | O_DIRECTORY), ENOTDIR);
	CHECK_ERR(syscall(SYS_openat, AT_FDCWD, "/nonexistent-husk-test", O_RDONLY), ENOENT);
	CHECK_ERR(syscall(SYS_openat, AT_FDCWD, "/etc/passwd/x", O_RDONLY), ENOTDIR);
	CHECK_ERR(syscall(SYS_openat, AT_FDCWD, "", O_RDONLY), ENOENT);
	CHECK_ERR(syscall(SYS_open, "", O_RDONLY), ENOENT);

	/* Symlinks: followed by default, refused by O_NOFOLLOW, opened themselves with O_PATH. */
	fd = (int)CHECK_OK(syscall(SYS_openat, AT_FDCWD, "/bin", O_RDONLY | O_DIRECTORY));
	CHECK_RET(syscall(SYS_fstat, fd, &st), 0);
	CHECK(S_ISDIR(st.st_mode), "/bin opened as mode %o", st.st_mode);
	syscall(SYS_close, fd);
	CHECK_ERR(syscall(SYS_openat, AT_FDCWD, "/bin", O_RDONLY | O_NOFOLLOW), ELOOP);
	/* With O_DIRECTORY too, the link is not a directory. */
	CHECK_ERR(syscall(SYS_openat, AT_FDCWD, "/lib", O_RDONLY | O_NOFOLLOW | O_DIRECTORY),
		  ENOTDIR);
	fd = (int)CHECK_OK(syscall(SYS_openat, AT_FDCWD, "/bin", O_PATH | O_NOFOLLOW));
	CHECK_RET(syscall(SYS_fstat, fd, &st), 0);
	CHECK(S_ISLNK(st.st_mode), "O_PATH|O_NOFOLLOW mode %o", st.st_mode);
	{
		char buf[16];

		/* O_PATH descriptors do not read. */
		CHECK_ERR(syscall(SYS_read, fd, buf, 1), EBADF);
	}
	syscall(SYS_close, fd);
	/* Symlinks in the middle of a path are always followed. */
	fd = (int)CHECK_OK(syscall(SYS_openat, AT_FDCWD, "/bin/env", O_RDONLY | O_NOFOLLOW));
	syscall(SYS_close, fd);
	/* /bin/sh is itself a link (to dash): the last component is not followed. */
	CHECK_ERR(syscall(SYS_openat, AT_FDCWD, "/bin/sh", O_RDONLY | O_NOFOLLOW), ELOOP);

	/* Relative to a directory descriptor. */
	etc = (int)CHECK_OK(syscall(SYS_openat, AT_FDCWD, "/etc", O_RDONLY | O_DIRECTORY));
	fd = (int)CHECK_OK(syscall(SYS_openat, etc, "passwd", O_RDONLY));
	CHECK_RET(syscall(SYS_fstat, fd, &st), 0);
	CHECK_RET(syscall(SYS_stat, "/etc/passwd", &st2), 0);
	CHECK(st.st_ino == st2.st_ino && st.st_dev == st2.st_dev,
	      "etcfd/passwd is not /etc/passwd");
	CHECK_ERR(syscall(SYS_openat, fd, "x", O_RDONLY), ENOTDIR);
	syscall(SYS_close, fd);
	fd = (int)CHECK_OK(syscall(SYS_openat, etc, "../etc/./passwd", O_RDONLY));
	syscall(SYS_close, fd);
	fd = (int)CHECK_OK(syscall(SYS_openat, etc, "../../../..", O_RDONLY | O_DIRECTORY));
	CHECK_RET(syscall(SYS_fstat, fd, &st), 0);
	CHECK_RET(syscall(SYS_stat, "/", &st2), 0);
	CHECK(st.st_ino == st2.st_ino, ".. at the root stays at the root");
	syscall(SYS_close, fd);
	syscall(SYS_close, etc);
	CHECK_ERR(syscall(SYS_openat, etc, "passwd", O_RDONLY), EBADF);
	fd = (int)CHECK_OK(syscall(SYS_openat, etc, "/etc/passwd", O_RDONLY));
	syscall(SYS_close, fd);
}

/* Reads all entries of dir with a buffer of bufsize; returns the count, -1 on error. */
static int scan_dir(int fd, size_t bufsize, int *found_passwd, int *found_dots,
		    uint64_t *passwd_ino, int *passwd_type)
{
	char *buf = malloc(bufsize);
	int count = 0;
	long n;

	*found_passwd = *found_dots = 0;
	while ((n = syscall(SYS_getdents64, fd, buf, bufsize)) > 0) {
		for (long off = 0; off < n;) {
			struct kdirent *d = (struct kdirent *)(buf + off);

			if (d->d_reclen == 0 || d->d_reclen % 8 != 0) {
				free(buf);
				return -1;
			}
			count++;
			if (!strcmp(d->d_name, "passwd")) {
				(*found_passwd)++;
				*passwd_ino = d->d_ino;
				*passwd_type = d->d_type;
			}
			if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
				(*found_dots)++;
			off += d->d_reclen;
		}
	}
	free(buf);
	return n < 0 ? -1 : count;
}

static void check_getdents(void)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/etc", O_RDONLY | O_DIRECTORY);
	int passwd, dots, type = -1, count, count2;
	uint64_t ino = 0;
	struct stat st;
	char small[8];

	CHECK(fd >= 0, "open /etc");
	count = scan_dir(fd, 32768, &passwd, &dots, &ino, &type);
	CHECK(count > 10, "/etc has %d entries", count);
	CHECK(passwd == 1, "passwd seen %d times", passwd);
	CHECK(dots == 2, ". and .. seen %d times", dots);
	CHECK(type == DT_REG, "passwd d_type %d", type);
	CHECK_RET(syscall(SYS_stat, "/etc/passwd", &st), 0);
	CHECK(ino == st.st_ino, "d_ino %lu, st_ino %lu", (unsigned long)ino,
	      (unsigned long)st.st_ino);
	/* At the end: 0. Rewind and read again with a small buffer: same entries. */
	{
		char big[4096];

		CHECK_RET(syscall(SYS_getdents64, fd, big, sizeof(big)), 0);
	}
	CHECK_RET(syscall(SYS_lseek, fd, 0, SEEK_SET), 0);
	count2 = scan_dir(fd, 256, &passwd, &dots, &ino, &type);
	CHECK(count2 == count, "%d entries with a small buffer, %d with a big one", count2, count);
	CHECK(passwd == 1 && dots == 2, "small buffer: passwd %d dots %d", passwd, dots);
	CHECK_RET(syscall(SYS_lseek, fd, 0, SEEK_SET), 0);
	CHECK_ERR(syscall(SYS_getdents64, fd, small, sizeof(small)), EINVAL);
	CHECK_ERR(syscall(SYS_getdents64, fd, (void *)1, 4096), EFAULT);
	syscall(SYS_close, fd);
	CHECK_ERR(syscall(SYS_getdents64, fd, small, sizeof(small)), EBADF);
	fd = (int)syscall(SYS_openat, AT_FDCWD, "/etc/passwd", O_RDONLY);
	CHECK_ERR(syscall(SYS_getdents64, fd, small, sizeof(small)), ENOTDIR);
	syscall(SYS_close, fd);
}

static void check_cwd(void)
{
	char buf[4096];
	int usr, file;

	CHECK_RET(syscall(SYS_chdir, "/etc"), 0);
	CHECK_RET(syscall(SYS_getcwd, buf, sizeof(buf)), 5); /* length with the NUL */
	CHECK(!strcmp(buf, "/etc"), "cwd '%s'", buf);
	file = (int)CHECK_OK(syscall(SYS_openat, AT_FDCWD, "passwd", O_RDONLY));
	usr = (int)CHECK_OK(syscall(SYS_openat, AT_FDCWD, "/usr", O_RDONLY | O_DIRECTORY));
	CHECK_RET(syscall(SYS_fchdir, usr), 0);
	CHECK_RET(syscall(SYS_getcwd, buf, sizeof(buf)), 5);
	CHECK(!strcmp(buf, "/usr"), "cwd after fchdir '%s'", buf);
	CHECK_RET(syscall(SYS_chdir, ".."), 0);
	CHECK_RET(syscall(SYS_getcwd, buf, sizeof(buf)), 2);
	CHECK(!strcmp(buf, "/"), "cwd after .. '%s'", buf);
	CHECK_RET(syscall(SYS_chdir, ".."), 0);
	CHECK_RET(syscall(SYS_getcwd, buf, sizeof(buf)), 2);
	CHECK_RET(syscall(SYS_chdir, "/bin"), 0); /* the link is resolved */
	CHECK_RET(syscall(SYS_getcwd, buf, sizeof(buf)), 9);
	CHECK(!strcmp(buf, "/usr/bin"), "cwd after chdir /bin '%s'", buf);
	CHECK_ERR(syscall(SYS_getcwd, buf, 8), ERANGE);
	CHECK_ERR(syscall(SYS_getcwd, buf, 0), ERANGE);
	CHECK_ERR(syscall(SYS_getcwd, (void *)1, sizeof(buf)), EFAULT);
	CHECK_ERR(syscall(SYS_chdir, "/etc/passwd"), ENOTDIR);
	CHECK_ERR(syscall(SYS_chdir, "/nonexistent-husk-test"), ENOENT);
	CHECK_ERR(syscall(SYS_chdir, ""), ENOENT);
	CHECK_ERR(syscall(SYS_chdir, (char *)1), EFAULT);
	CHECK_ERR(syscall(SYS_fchdir, file), ENOTDIR);
	CHECK_ERR(syscall(SYS_fchdir, 555), EBADF);
	/* A failed chdir leaves the directory as it was. */
	CHECK_RET(syscall(SYS_getcwd, buf, sizeof(buf)), 9);
	syscall(SYS_close, usr);
	syscall(SYS_close, file);
	CHECK_RET(syscall(SYS_chdir, "/"), 0);
}

static void check_readlink(void)
{
	char buf[64];
	int root, link;

	memset(buf, 0, sizeof(buf));
	CHECK_RET(syscall(SYS_readlink, "/bin", buf, sizeof(buf)), 7);
	CHECK(!memcmp(buf, "usr/bin", 7), "readlink /bin '%s'", buf);
	memset(buf, 'x', sizeof(buf));
	CHECK_RET(syscall(SYS_readlink, "/sbin", buf, 3), 3); /* truncated, no NUL added */
	CHECK(!memcmp(buf, "usrx", 4), "truncated readlink '%.4s'", buf);
	CHECK_ERR(syscall(SYS_readlink, "/etc/passwd", buf, sizeof(buf)), EINVAL);
	CHECK_ERR(syscall(SYS_readlink, "/nonexistent-husk-test", buf, sizeof(buf)), ENOENT);
	CHECK_ERR(syscall(SYS_readlink, "/bin", buf, 0), EINVAL);
	CHECK_ERR(syscall(SYS_readlink, "/bin", (void *)1, sizeof(buf)), EFAULT);
	CHECK_ERR(syscall(SYS_readlink, (char *)1, buf, sizeof(buf)), EFAULT);
	CHECK_ERR(syscall(SYS_readlink, "/bin/", buf, sizeof(buf)), EINVAL);
	root = (int)CHECK_OK(syscall(SYS_openat, AT_FDCWD, "/", O_RDONLY | O_DIRECTORY));
	CHECK_RET(syscall(SYS_readlinkat, root, "lib", buf, sizeof(buf)), 7);
	CHECK(!memcmp(buf, "usr/lib", 7), "readlinkat '%.7s'", buf);
	/* An empty path reads the link an O_PATH descriptor refers to. */
	link = (int)CHECK_OK(syscall(SYS_openat, AT_FDCWD, "/bin", O_PATH | O_NOFOLLOW));
	CHECK_RET(syscall(SYS_readlinkat, link, "", buf, sizeof(buf)), 7);
	CHECK_ERR(syscall(SYS_readlinkat, root, "", buf, sizeof(buf)), ENOENT);
	syscall(SYS_close, link);
	syscall(SYS_close, root);
}

static void check_access(void)
{
	int root = (int)syscall(SYS_openat, AT_FDCWD, "/", O_RDONLY | O_DIRECTORY);
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/etc/passwd", O_RDONLY);

	CHECK_RET(syscall(SYS_access, "/etc/passwd", F_OK), 0);
	CHECK_RET(syscall(SYS_access, "/etc/passwd", R_OK), 0);
	/* No execute bit at all: refused even to root. */
	CHECK_ERR(syscall(SYS_access, "/etc/passwd", X_OK), EACCES);
	CHECK_RET(syscall(SYS_access, "/usr/bin/env", X_OK), 0);
	CHECK_RET(syscall(SYS_access, "/dev/null", R_OK | W_OK), 0);
	CHECK_RET(syscall(SYS_access, "/bin", R_OK | X_OK), 0);
	CHECK_ERR(syscall(SYS_access, "/nonexistent-husk-test", F_OK), ENOENT);
	CHECK_ERR(syscall(SYS_access, "/etc/passwd/x", F_OK), ENOTDIR);
	CHECK_ERR(syscall(SYS_access, "/etc/passwd", 8), EINVAL);
	CHECK_ERR(syscall(SYS_access, (char *)1, F_OK), EFAULT);
	CHECK_RET(syscall(SYS_faccessat, root, "etc/passwd", R_OK), 0);
	CHECK_ERR(syscall(SYS_faccessat, fd, "x", R_OK), ENOTDIR);
	CHECK_RET(syscall(SYS_faccessat2, root, "etc/passwd", R_OK, AT_EACCESS), 0);
	CHECK_RET(syscall(SYS_faccessat2, AT_FDCWD, "/bin", F_OK, AT_SYMLINK_NOFOLLOW), 0);
	CHECK_RET(syscall(SYS_faccessat2, fd, "", R_OK, AT_EMPTY_PATH), 0);
	CHECK_ERR(syscall(SYS_faccessat2, fd, "", R_OK, 0), ENOENT);
	CHECK_ERR(syscall(SYS_faccessat2, AT_FDCWD, "/etc/passwd", R_OK, 0x1), EINVAL);
	CHECK_ERR(syscall(SYS_faccessat2, AT_FDCWD, "/etc/passwd", 8, 0), EINVAL);
	syscall(SYS_close, fd);
	syscall(SYS_close, root);
}

int main(void)
{
	CHECK_RET(syscall(SYS_chdir, "/"), 0);
	check_open();
	check_getdents();
	check_cwd();
	check_readlink();
	check_access();
	return finish();
}
