/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memfd_create(2) and file seals: the file (empty, read-write, its /proc/self/fd name), data
 * through write/read/mmap and across fork, flags and name errors, F_GET_SEALS/F_ADD_SEALS on
 * sealable and unsealable files, and what F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_WRITE and
 * F_SEAL_SEAL refuse.
 */
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "check.h"

#ifndef F_ADD_SEALS
#define F_ADD_SEALS 1033
#define F_GET_SEALS 1034
#define F_SEAL_SEAL 0x0001
#define F_SEAL_SHRINK 0x0002
#define F_SEAL_GROW 0x0004
#define F_SEAL_WRITE 0x0008
#endif
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#define MFD_EXEC 0x0010U
#endif
#ifndef F_SEAL_EXEC
#define F_SEAL_EXEC 0x0020
#endif

static int memfd(const char *name, unsigned int flags)
{
	return (int)syscall(SYS_memfd_create, name, flags);
}

static void test_basics(void)
{
	char link[64], target[300], buf[16] = { 0 };
	struct stat st;
	int fd = memfd("husk-test", MFD_CLOEXEC), st2;
	ssize_t n;
	char *m;
	pid_t pid;

	CHECK(fd >= 0, "memfd_create: %s", strerror(errno));
	CHECK_RET(fcntl(fd, F_GETFD), FD_CLOEXEC);
	CHECK_RET(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDWR);
	CHECK_RET(fstat(fd, &st), 0);
	CHECK(S_ISREG(st.st_mode) && st.st_size == 0 && st.st_nlink == 0,
	      "fstat: mode %o size %lld nlink %lu", st.st_mode, (long long)st.st_size,
	      (unsigned long)st.st_nlink);
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	target[n > 0 ? n : 0] = 0;
	CHECK(!strcmp(target, "/memfd:husk-test (deleted)"), "readlink: %s", target);

	CHECK_RET(write(fd, "hello", 5), 5);
	CHECK_RET(pread(fd, buf, sizeof(buf), 0), 5);
	CHECK(!memcmp(buf, "hello", 5), "read back: %s", buf);
	CHECK_RET(ftruncate(fd, 8192), 0);
	m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(m != MAP_FAILED, "mmap: %s", strerror(errno));
	if (m != MAP_FAILED) {
		CHECK(!memcmp(m, "hello", 5), "mapping sees the write");
		/* A child writes through the shared mapping; the parent reads it with pread. */
		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			memcpy(m + 4096, "child", 5);
			_exit(0);
		}
		waitpid(pid, &st2, 0);
		memset(buf, 0, sizeof(buf));
		CHECK_RET(pread(fd, buf, 5, 4096), 5);
		CHECK(!memcmp(buf, "child", 5), "the child's write: %s", buf);
		munmap(m, 8192);
	}
	/* Reopening through /proc gives the same file. */
	{
		int fd2 = open(link, O_RDONLY);

		CHECK(fd2 >= 0, "open %s: %s", link, strerror(errno));
		memset(buf, 0, sizeof(buf));
		CHECK_RET(pread(fd2, buf, 5, 0), 5);
		CHECK(!memcmp(buf, "hello", 5), "reopened: %s", buf);
		close(fd2);
	}
	close(fd);
}

static void test_errors(void)
{
	char longname[300];

	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	CHECK_ERR(memfd(longname, 0), EINVAL);
	longname[249] = 0; /* the longest name */
	{
		int fd = memfd(longname, 0);

		CHECK(fd >= 0, "a 249-byte name: %s", strerror(errno));
		close(fd);
	}
	CHECK_ERR(memfd("x", 0x1000), EINVAL);
	CHECK_ERR(memfd("x", MFD_EXEC | MFD_NOEXEC_SEAL), EINVAL);
	CHECK_ERR(syscall(SYS_memfd_create, (void *)8, 0), EFAULT);
}

static void test_seals(void)
{
	int fd = memfd("plain", 0), sfd;
	char c = 'x';

	/* Without MFD_ALLOW_SEALING: F_SEAL_SEAL is set and nothing can be added. */
	CHECK_RET(fcntl(fd, F_GET_SEALS), F_SEAL_SEAL);
	CHECK_ERR(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), EPERM);
	close(fd);
	/* Files that are not shmem have no seals. */
	fd = open("/proc/self/status", O_RDONLY);
	CHECK_ERR(fcntl(fd, F_GET_SEALS), EINVAL);
	close(fd);

	sfd = memfd("sealed", MFD_ALLOW_SEALING);
	CHECK_RET(fcntl(sfd, F_GET_SEALS), 0);
	CHECK_RET(ftruncate(sfd, 4096), 0);
	CHECK_ERR(fcntl(sfd, F_ADD_SEALS, 0x1000), EINVAL);
	CHECK_RET(fcntl(sfd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	CHECK_ERR(ftruncate(sfd, 100), EPERM);
	CHECK_RET(ftruncate(sfd, 8192), 0);
	CHECK_RET(fcntl(sfd, F_ADD_SEALS, F_SEAL_GROW), 0);
	CHECK_RET(fcntl(sfd, F_GET_SEALS), F_SEAL_SHRINK | F_SEAL_GROW);
	CHECK_ERR(ftruncate(sfd, 8193), EPERM);
	CHECK_ERR(pwrite(sfd, &c, 1, 8192), EPERM);
	CHECK_RET(pwrite(sfd, &c, 1, 8191), 1); /* inside the file: allowed */
	CHECK_RET(pwrite(sfd, "ab", 2, 8191), 1); /* a short write up to the size */
	CHECK_ERR(fallocate(sfd, 0, 0, 16384), EPERM);
	CHECK_RET(fcntl(sfd, F_ADD_SEALS, F_SEAL_WRITE), 0);
	CHECK_ERR(pwrite(sfd, &c, 1, 0), EPERM);
	/* No new writable shared mapping; read-only and private ones are fine. */
	CHECK(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, sfd, 0) == MAP_FAILED &&
		      errno == EPERM,
	      "a writable shared mapping of a write-sealed memfd: %s", strerror(errno));
	{
		void *ro = mmap(NULL, 4096, PROT_READ, MAP_SHARED, sfd, 0);
		void *pv = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, sfd, 0);

		CHECK(ro != MAP_FAILED && pv != MAP_FAILED, "read-only/private mappings: %s",
		      strerror(errno));
		if (ro != MAP_FAILED)
			munmap(ro, 4096);
		if (pv != MAP_FAILED)
			munmap(pv, 4096);
	}
	CHECK_ERR(fallocate(sfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096), EPERM);
	CHECK_RET(pread(sfd, &c, 1, 8191), 1);
	CHECK_RET(fcntl(sfd, F_ADD_SEALS, F_SEAL_SEAL), 0);
	CHECK_ERR(fcntl(sfd, F_ADD_SEALS, F_SEAL_SHRINK), EPERM);
	close(sfd);

	/* F_ADD_SEALS needs a writable file description. */
	sfd = memfd("ro", MFD_ALLOW_SEALING);
	{
		char link[64];
		int ro;

		snprintf(link, sizeof(link), "/proc/self/fd/%d", sfd);
		ro = open(link, O_RDONLY);
		CHECK(ro >= 0, "reopen read-only: %s", strerror(errno));
		CHECK_ERR(fcntl(ro, F_ADD_SEALS, F_SEAL_GROW), EPERM);
		CHECK_RET(fcntl(ro, F_GET_SEALS), 0);
		close(ro);
	}
	close(sfd);

	/* MFD_NOEXEC_SEAL: mode 0666, F_SEAL_EXEC, and sealing allowed. */
	sfd = memfd("noexec", MFD_NOEXEC_SEAL);
	if (sfd >= 0) {
		struct stat st;

		CHECK_RET(fstat(sfd, &st), 0);
		CHECK((st.st_mode & 0777) == 0666, "MFD_NOEXEC_SEAL mode %o", st.st_mode & 0777);
		CHECK_RET(fcntl(sfd, F_GET_SEALS), F_SEAL_EXEC);
		close(sfd);
	} else {
		CHECK(0, "MFD_NOEXEC_SEAL: %s", strerror(errno));
	}
}

int main(void)
{
	test_basics();
	test_errors();
	test_seals();
	return finish();
}
