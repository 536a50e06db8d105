/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Extended attributes in a scratch directory under /tmp (ext4 natively, the overlay's tmpfs
 * upper layer in husk): set/get/list/remove by path, without following symlinks, by fd, and
 * through the *xattrat calls of Linux 6.13 (skipped where the kernel lacks them); flags,
 * size-0 queries, ERANGE, E2BIG, namespaces, trusted.* without privilege, user.* types and
 * permissions.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "check.h"
#include "scratch.h"

#ifndef SYS_setxattrat
#define SYS_setxattrat 463
#define SYS_getxattrat 464
#define SYS_listxattrat 465
#define SYS_removexattrat 466
#endif

struct xattr_args {
	uint64_t value;
	uint32_t size;
	uint32_t flags;
};

/* Whether list (len bytes) holds name. */
static int list_has(const char *list, ssize_t len, const char *name)
{
	for (const char *p = list; p < list + len; p += strlen(p) + 1)
		if (!strcmp(p, name))
			return 1;
	return 0;
}

static void test_basic(void)
{
	char buf[256];
	ssize_t n;

	CHECK_OK(close(open("f", O_CREAT | O_WRONLY, 0644)));
	CHECK_RET(setxattr("f", "user.a", "hello", 5, 0), 0);
	CHECK_RET(getxattr("f", "user.a", NULL, 0), 5);
	CHECK_RET(getxattr("f", "user.a", buf, sizeof(buf)), 5);
	CHECK(!memcmp(buf, "hello", 5), "value %.5s", buf);
	CHECK_ERR(getxattr("f", "user.a", buf, 4), ERANGE);
	CHECK_ERR(getxattr("f", "user.missing", buf, sizeof(buf)), ENODATA);
	/* Flags. */
	CHECK_ERR(setxattr("f", "user.a", "x", 1, XATTR_CREATE), EEXIST);
	CHECK_ERR(setxattr("f", "user.b", "x", 1, XATTR_REPLACE), ENODATA);
	CHECK_RET(setxattr("f", "user.a", "bye", 3, XATTR_REPLACE), 0);
	CHECK_RET(getxattr("f", "user.a", buf, sizeof(buf)), 3);
	CHECK_ERR(setxattr("f", "user.c", "x", 1, 4), EINVAL);
	/* An empty value is a value. */
	CHECK_RET(setxattr("f", "user.empty", "", 0, XATTR_CREATE), 0);
	CHECK_RET(getxattr("f", "user.empty", buf, sizeof(buf)), 0);
	/* Lists. */
	n = listxattr("f", NULL, 0);
	CHECK(n >= (ssize_t)(sizeof("user.a") + sizeof("user.empty")), "list length %zd", n);
	n = listxattr("f", buf, sizeof(buf));
	CHECK(n > 0 && list_has(buf, n, "user.a") && list_has(buf, n, "user.empty"), "list %zd", n);
	CHECK_ERR(listxattr("f", buf, 3), ERANGE);
	/* Removal. */
	CHECK_RET(removexattr("f", "user.empty"), 0);
	CHECK_ERR(removexattr("f", "user.empty"), ENODATA);
	CHECK_ERR(getxattr("f", "user.empty", buf, sizeof(buf)), ENODATA);
	n = listxattr("f", buf, sizeof(buf));
	CHECK(n > 0 && !list_has(buf, n, "user.empty"), "list after remove %zd", n);
	/* Missing files and bad fds. */
	CHECK_ERR(getxattr("nofile", "user.a", buf, sizeof(buf)), ENOENT);
	CHECK_ERR(setxattr("nofile", "user.a", "x", 1, 0), ENOENT);
	CHECK_ERR(fgetxattr(-1, "user.a", buf, sizeof(buf)), EBADF);
	CHECK_ERR(flistxattr(9999, buf, sizeof(buf)), EBADF);
}

static void test_names_and_sizes(void)
{
	char name[300], buf[16];
	char *big = calloc(1, 70000);

	memset(name, 'n', sizeof(name));
	memcpy(name, "user.", 5);
	name[256] = '\0'; /* 256 bytes: one too many */
	CHECK_ERR(setxattr("f", name, "x", 1, 0), ERANGE);
	CHECK_ERR(getxattr("f", name, buf, sizeof(buf)), ERANGE);
	name[255] = '\0'; /* 255: the longest */
	CHECK_RET(setxattr("f", name, "x", 1, 0), 0);
	CHECK_RET(getxattr("f", name, buf, sizeof(buf)), 1);
	CHECK_RET(removexattr("f", name), 0);
	CHECK_ERR(setxattr("f", "", "x", 1, 0), ERANGE);
	CHECK_ERR(getxattr("f", "", buf, sizeof(buf)), ERANGE);
	/* Values past 64 KiB. */
	CHECK_ERR(setxattr("f", "user.big", big, 65537, 0), E2BIG);
	/* Namespaces: unknown prefixes and bare ones. */
	CHECK_ERR(setxattr("f", "foo.bar", "x", 1, 0), EOPNOTSUPP);
	CHECK_ERR(getxattr("f", "foo.bar", buf, sizeof(buf)), EOPNOTSUPP);
	CHECK_ERR(getxattr("f", "nodot", buf, sizeof(buf)), EOPNOTSUPP);
	CHECK_ERR(setxattr("f", "user.", "x", 1, 0), EINVAL);
	free(big);
}

static void test_types_and_links(void)
{
	char buf[64];

	/* Directories carry user.* too. */
	CHECK_OK(mkdir("d", 0755));
	CHECK_RET(setxattr("d", "user.dir", "1", 1, 0), 0);
	CHECK_RET(getxattr("d", "user.dir", buf, sizeof(buf)), 1);
	/* Symlinks: the l* calls act on the link, where user.* is not allowed. */
	CHECK_OK(symlink("f", "l"));
	CHECK_RET(getxattr("l", "user.a", buf, sizeof(buf)), 3);
	CHECK_ERR(lgetxattr("l", "user.a", buf, sizeof(buf)), ENODATA);
	CHECK_ERR(lsetxattr("l", "user.a", "x", 1, 0), EPERM);
	CHECK_ERR(lremovexattr("l", "user.a"), EPERM);
	CHECK_RET(llistxattr("l", buf, sizeof(buf)), 0);
	/* By fd. */
	int fd = (int)CHECK_OK(open("f", O_RDONLY));
	CHECK_RET(fsetxattr(fd, "user.fd", "v", 1, 0), 0);
	CHECK_RET(fgetxattr(fd, "user.fd", buf, sizeof(buf)), 1);
	ssize_t n = flistxattr(fd, buf, sizeof(buf));
	CHECK(n > 0 && list_has(buf, n, "user.fd"), "flistxattr %zd", n);
	CHECK_RET(fremovexattr(fd, "user.fd"), 0);
	CHECK_ERR(fremovexattr(fd, "user.fd"), ENODATA);
	close(fd);
	/* O_PATH fds do not count for the f* calls. */
	fd = (int)CHECK_OK(open("f", O_PATH));
	CHECK_ERR(fgetxattr(fd, "user.a", buf, sizeof(buf)), EBADF);
	close(fd);
	/* A hard link shares the attributes. */
	CHECK_OK(link("f", "f2"));
	CHECK_RET(getxattr("f2", "user.a", buf, sizeof(buf)), 3);
	/* A rename keeps them. */
	CHECK_OK(rename("f2", "f3"));
	CHECK_RET(getxattr("f3", "user.a", buf, sizeof(buf)), 3);
}

/* Unprivileged rules, in a child that drops to uid/gid 65534 (when root). */
static void test_unprivileged(void)
{
	pid_t pid;
	int status;

	if (geteuid() != 0) {
		printf("skip: unprivileged checks need root to drop privileges\n");
		return;
	}
	CHECK_OK(close(open("mine", O_CREAT | O_WRONLY, 0600)));
	CHECK_OK(setxattr("mine", "user.secret", "s", 1, 0));
	CHECK_OK(close(open("open", O_CREAT | O_WRONLY, 0666)));
	CHECK_OK(chmod("open", 0666));
	CHECK_OK(mkdir("sticky", 01777));
	CHECK_OK(setxattr("sticky", "user.s", "s", 1, 0));
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		char buf[16];

		checks_passed = checks_failed = 0;
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(3);
		/* trusted.* needs CAP_SYS_ADMIN: invisible to get, refused to set. */
		CHECK_ERR(getxattr("open", "trusted.t", buf, sizeof(buf)), ENODATA);
		CHECK_ERR(setxattr("open", "trusted.t", "x", 1, 0), EPERM);
		CHECK_ERR(setxattr("open", "security.x", "x", 1, 0), EPERM);
		/* user.* follows the mode bits. */
		CHECK_ERR(getxattr("mine", "user.secret", buf, sizeof(buf)), EACCES);
		CHECK_ERR(setxattr("mine", "user.x", "x", 1, 0), EACCES);
		CHECK_RET(setxattr("open", "user.x", "x", 1, 0), 0);
		/* A sticky directory's user.* belong to its owner. */
		CHECK_ERR(setxattr("sticky", "user.x", "x", 1, 0), EPERM);
		CHECK_RET(getxattr("sticky", "user.s", buf, sizeof(buf)), 1);
		fflush(stdout);
		_exit(checks_failed ? 1 : 0);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "unprivileged child: status %#x", status);
	/* Root may use trusted.* (ext4 natively, tmpfs in husk). */
	CHECK_RET(setxattr("open", "trusted.t", "t", 1, 0), 0);
	char buf[8];
	CHECK_RET(getxattr("open", "trusted.t", buf, sizeof(buf)), 1);
	CHECK_RET(removexattr("open", "trusted.t"), 0);
}

static void test_xattrat(void)
{
	char buf[32];
	struct xattr_args a = { .value = (uintptr_t) "at", .size = 2, .flags = 0 };
	int dfd;
	long r;

	r = syscall(SYS_setxattrat, AT_FDCWD, "f", 0, "user.at", &a, sizeof(a));
	if (r < 0 && errno == ENOSYS) {
		printf("skip: *xattrat calls need Linux 6.13\n");
		return;
	}
	CHECK(r == 0, "setxattrat: %s", strerror(errno));
	a = (struct xattr_args){ .value = (uintptr_t)buf, .size = sizeof(buf) };
	CHECK_RET(syscall(SYS_getxattrat, AT_FDCWD, "f", 0, "user.at", &a, sizeof(a)), 2);
	CHECK(!memcmp(buf, "at", 2), "getxattrat value");
	a.flags = 1;
	CHECK_ERR(syscall(SYS_getxattrat, AT_FDCWD, "f", 0, "user.at", &a, sizeof(a)), EINVAL);
	a.flags = 0;
	CHECK_ERR(syscall(SYS_getxattrat, AT_FDCWD, "f", 0, "user.at", &a, 8), EINVAL);
	CHECK_ERR(syscall(SYS_getxattrat, AT_FDCWD, "f", 0x10000, "user.at", &a, sizeof(a)),
		  EINVAL);
	/* AT_EMPTY_PATH on an fd, and a directory fd with a relative path. */
	dfd = (int)CHECK_OK(open(".", O_RDONLY | O_DIRECTORY));
	CHECK_RET(syscall(SYS_getxattrat, dfd, "f", 0, "user.at", &a, sizeof(a)), 2);
	int fd = (int)CHECK_OK(open("f", O_RDONLY));
	CHECK_RET(syscall(SYS_getxattrat, fd, "", AT_EMPTY_PATH, "user.at", &a, sizeof(a)), 2);
	r = syscall(SYS_listxattrat, dfd, "f", 0, buf, sizeof(buf));
	CHECK(r > 0 && list_has(buf, r, "user.at"), "listxattrat %ld", r);
	CHECK_RET(syscall(SYS_removexattrat, dfd, "f", 0, "user.at"), 0);
	CHECK_ERR(syscall(SYS_removexattrat, dfd, "f", 0, "user.at"), ENODATA);
	/* A symlink without following: user.* not allowed there. */
	a = (struct xattr_args){ .value = (uintptr_t) "x", .size = 1 };
	CHECK_ERR(syscall(SYS_setxattrat, dfd, "l", AT_SYMLINK_NOFOLLOW, "user.x", &a, sizeof(a)),
		  EPERM);
	close(fd);
	close(dfd);
}

int main(void)
{
	scratch_make("xattr");
	/* Natively the scratch filesystem must take user xattrs (ext4 does; some tmpfs not). */
	CHECK_OK(close(open("probe", O_CREAT | O_WRONLY, 0644)));
	if (setxattr("probe", "user.probe", "1", 1, 0) < 0 && errno == EOPNOTSUPP) {
		printf("skip: /tmp does not support user xattrs here\n");
		return finish();
	}
	test_basic();
	test_names_and_sizes();
	test_types_and_links();
	test_unprivileged();
	test_xattrat();
	return finish();
}
