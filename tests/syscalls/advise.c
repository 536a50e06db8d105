/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Advice, residency and odd descriptor calls: close_range (plain, CLOEXEC, UNSHARE, errors),
 * posix_fadvise/fadvise64, readahead, sync_file_range, mlock/mlock2/munlock/mlockall/
 * munlockall, mincore, personality.
 */
#include <fcntl.h>
#include <limits.h>
#include <linux/close_range.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "check.h"

static int is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

static void test_close_range(void)
{
	int base = 100, fl;
	pid_t pid;
	int st;

	for (int i = 0; i < 6; i++)
		CHECK_RET(dup2(0, base + i), base + i);
	/* [base+1, base+2] closed, the others stay. */
	CHECK_RET(syscall(SYS_close_range, base + 1, base + 2, 0), 0);
	CHECK(is_open(base) && !is_open(base + 1) && !is_open(base + 2) && is_open(base + 3),
	      "close_range closed the wrong fds");
	/* CLOEXEC marks without closing. */
	CHECK_RET(syscall(SYS_close_range, base + 3, base + 4, CLOSE_RANGE_CLOEXEC), 0);
	fl = fcntl(base + 3, F_GETFD);
	CHECK(fl == FD_CLOEXEC, "F_GETFD after CLOSE_RANGE_CLOEXEC: %d", fl);
	CHECK(fcntl(base, F_GETFD) == 0, "an fd outside the range was marked");
	/* A range with nothing open, and one to ~0U. */
	CHECK_RET(syscall(SYS_close_range, 5000, 6000, 0), 0);
	CHECK_ERR(syscall(SYS_close_range, 10, 9, 0), EINVAL);
	CHECK_ERR(syscall(SYS_close_range, 0, 10, 0x80), EINVAL);
	/* UNSHARE in a CLONE_FILES child: the parent's fds stay. */
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(syscall(SYS_close_range, base, ~0U, CLOSE_RANGE_UNSHARE) == 0 &&
				      !is_open(base) && !is_open(base + 5) && is_open(0) ?
			      0 :
			      1);
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "child close_range to ~0: status %#x", st);
	CHECK_RET(syscall(SYS_close_range, base, ~0U, 0), 0);
	CHECK(!is_open(base) && !is_open(base + 5) && is_open(0) && is_open(2),
	      "close_range to ~0 in the parent");
}

static void test_fadvise(void)
{
	int fd = open("/etc/passwd", O_RDONLY), p[2], s[2];

	CHECK(fd >= 0, "open /etc/passwd: %s", strerror(errno));
	CHECK_RET(syscall(SYS_fadvise64, fd, 0, 0, POSIX_FADV_SEQUENTIAL), 0);
	CHECK_RET(syscall(SYS_fadvise64, fd, 0, 4096, POSIX_FADV_DONTNEED), 0);
	CHECK_RET(syscall(SYS_fadvise64, fd, 0, 4096, POSIX_FADV_NOREUSE), 0);
	CHECK_ERR(syscall(SYS_fadvise64, fd, 0, 0, 99), EINVAL);
	CHECK_ERR(syscall(SYS_fadvise64, fd, 0, (long)-1, POSIX_FADV_NORMAL), EINVAL);
	CHECK_ERR(syscall(SYS_fadvise64, 999, 0, 0, POSIX_FADV_NORMAL), EBADF);
	CHECK_RET(pipe(p), 0);
	CHECK_ERR(syscall(SYS_fadvise64, p[0], 0, 0, POSIX_FADV_NORMAL), ESPIPE);
	CHECK_RET(socketpair(AF_UNIX, SOCK_STREAM, 0, s), 0);
	/* Only pipes and FIFOs refuse advice. */
	CHECK_RET(syscall(SYS_fadvise64, s[0], 0, 0, POSIX_FADV_NORMAL), 0);

	CHECK_RET(syscall(SYS_readahead, fd, 0, 65536), 0);
	CHECK_ERR(syscall(SYS_readahead, p[0], 0, 4096), EINVAL);
	CHECK_ERR(syscall(SYS_readahead, p[1], 0, 4096), EBADF);
	CHECK_ERR(syscall(SYS_readahead, 999, 0, 4096), EBADF);

	CHECK_RET(syscall(SYS_sync_file_range, fd, 0, 0, 0), 0);
	CHECK_RET(syscall(SYS_sync_file_range, fd, 0, 4096, 7), 0);
	CHECK_ERR(syscall(SYS_sync_file_range, fd, 0, 0, 8), EINVAL);
	CHECK_ERR(syscall(SYS_sync_file_range, fd, (long)-1, 0, 0), EINVAL);
	CHECK_ERR(syscall(SYS_sync_file_range, fd, 1, LONG_MAX, 0), EINVAL);
	CHECK_ERR(syscall(SYS_sync_file_range, p[0], 0, 0, 0), ESPIPE);
	CHECK_ERR(syscall(SYS_sync_file_range, 999, 0, 0, 0), EBADF);
	close(fd);
	close(p[0]);
	close(p[1]);
	close(s[0]);
	close(s[1]);
}

static void test_mlock(void)
{
	size_t pg = 4096;
	char *m = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char vec[8];

	CHECK(m != MAP_FAILED, "mmap: %s", strerror(errno));
	m[0] = 1;
	/* An unaligned start is rounded down; the length rounded up. */
	CHECK_RET(mlock(m + 10, 100), 0);
	CHECK_RET(munlock(m + 10, 100), 0);
	CHECK_RET(syscall(SYS_mlock2, m, pg, 1 /* MLOCK_ONFAULT */), 0);
	CHECK_ERR(syscall(SYS_mlock2, m, pg, 2), EINVAL);
	CHECK_RET(munlock(m, 4 * pg), 0);
	/* A hole in the range: ENOMEM. */
	CHECK_RET(munmap(m + pg, pg), 0);
	CHECK_ERR(mlock(m, 3 * pg), ENOMEM);
	CHECK_ERR(munlock(m, 3 * pg), ENOMEM);
	CHECK_RET(mlockall(MCL_CURRENT), 0);
	CHECK_RET(munlockall(), 0);
	CHECK_ERR(mlockall(0), EINVAL);
	CHECK_ERR(mlockall(MCL_ONFAULT), EINVAL);
	CHECK_ERR(mlockall(0x100), EINVAL);

	CHECK_RET(mincore(m, pg, vec), 0);
	CHECK(vec[0] & 1, "mincore: a touched page is not resident (%#x)", vec[0]);
	CHECK_ERR(mincore(m + 1, pg, vec), EINVAL);
	CHECK_ERR(mincore(m, 2 * pg, vec), ENOMEM);
	CHECK_RET(mincore(m + 2 * pg, 2 * pg, vec), 0);
	munmap(m, 4 * pg);
}

static void test_personality(void)
{
	int old = personality(0xffffffff);
	int st;
	pid_t pid;

	CHECK(old == PER_LINUX, "personality: %#x", old);
	CHECK_RET(personality(PER_LINUX | ADDR_NO_RANDOMIZE), PER_LINUX);
	CHECK_RET(personality(0xffffffff), PER_LINUX | ADDR_NO_RANDOMIZE);
	/* Inherited by a child. */
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(personality(0xffffffff) == (PER_LINUX | ADDR_NO_RANDOMIZE) ? 0 : 1);
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "child personality: status %#x", st);
	CHECK_RET(personality(PER_LINUX), PER_LINUX | ADDR_NO_RANDOMIZE);
}

int main(void)
{
	test_close_range();
	test_fadvise();
	test_mlock();
	test_personality();
	return finish();
}
