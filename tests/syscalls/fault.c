/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Conformance: -EFAULT for bad pointers across the foundation's calls, and partial progress
 * when a buffer runs into an unmapped page. Wild pointers are passed to raw syscall(), which
 * hands them to the kernel as they are; no signal is ever taken.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>

#include "check.h"

#define PG 4096L
#define KERNEL_ADDR ((void *)0xffff888000000000UL)

int main(void)
{
	/* Three pages: read-write, read-only, then a hole. */
	char *p = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *rw = p, *ro = p + PG, *hole = p + 2 * PG;
	int zero = open("/dev/zero", O_RDONLY), passwd = open("/etc/passwd", O_RDONLY);
	struct stat st;
	char buf[256];

	if (p == MAP_FAILED || zero < 0 || passwd < 0) {
		CHECK(0, "setup failed: %s", strerror(errno));
		return finish();
	}
	munmap(hole, PG);
	mprotect(ro, PG, PROT_READ);

	/* read(2) into wild, kernel, read-only and unmapped memory. */
	CHECK_ERR(syscall(SYS_read, zero, (void *)1, 16), EFAULT);
	CHECK_ERR(syscall(SYS_read, zero, NULL, 16), EFAULT);
	CHECK_ERR(syscall(SYS_read, zero, KERNEL_ADDR, 16), EFAULT);
	CHECK_ERR(syscall(SYS_read, zero, ro, 16), EFAULT);
	CHECK_ERR(syscall(SYS_read, zero, hole, 16), EFAULT);
	CHECK_ERR(syscall(SYS_read, passwd, hole, 16), EFAULT);
	CHECK_ERR(syscall(SYS_pread64, passwd, (void *)1, 16, 0L), EFAULT);
	/* A zero-length read touches nothing. */
	CHECK_RET(syscall(SYS_read, zero, (void *)1, 0), 0);

	/* Partial progress: a read that runs into a bad page returns what it copied. */
	{
		long n;

		memset(ro - 100, 0x55, 100);
		n = syscall(SYS_read, zero, ro - 100, 200);
		CHECK(n > 0 && n <= 100, "read from /dev/zero across a read-only page: %ld", n);
		CHECK(n <= 0 || (ro[-100] == 0 && ro[-101 + n] == 0), "zeros were not written");
		n = syscall(SYS_pread64, passwd, ro - 100, 200, 0L);
		CHECK(n > 0 && n <= 100, "pread of a file across a read-only page: %ld", n);
		CHECK(n < 4 || !memcmp(ro - 100, "root", 4), "file bytes before the fault");
		n = syscall(SYS_getrandom, ro - 100, 200, 0);
		CHECK(n > 0 && n <= 100, "getrandom across a read-only page: %ld", n);
	}

	/* readv: a bad iovec array, and a bad buffer in the first iovec. */
	{
		struct iovec iov[2] = { { (void *)1, 10 }, { buf, 10 } };

		CHECK_ERR(syscall(SYS_readv, zero, (void *)1, 1), EFAULT);
		CHECK_ERR(syscall(SYS_readv, zero, iov, 2), EFAULT);
		/* The second buffer bad: the first one's bytes are returned. */
		iov[0] = (struct iovec){ buf, 10 };
		iov[1] = (struct iovec){ hole, 10 };
		CHECK_RET(syscall(SYS_readv, zero, iov, 2), 10);
	}

	/* Paths: wild pointers, and strings that run into a hole. */
	{
		char *s = hole - 8;

		CHECK_ERR(syscall(SYS_openat, AT_FDCWD, (char *)1, O_RDONLY), EFAULT);
		CHECK_ERR(syscall(SYS_open, KERNEL_ADDR, O_RDONLY), EFAULT);
		CHECK_ERR(syscall(SYS_stat, (char *)1, &st), EFAULT);
		CHECK_ERR(syscall(SYS_newfstatat, AT_FDCWD, (char *)1, &st, 0), EFAULT);
		CHECK_ERR(syscall(SYS_access, (char *)1, F_OK), EFAULT);
		CHECK_ERR(syscall(SYS_chdir, (char *)1), EFAULT);
		CHECK_ERR(syscall(SYS_readlink, (char *)1, buf, sizeof(buf)), EFAULT);
		/* "/etc/pa" and no NUL before the hole. */
		mprotect(ro, PG, PROT_READ | PROT_WRITE);
		memcpy(s, "/etc/pas", 8);
		CHECK_ERR(syscall(SYS_stat, s, &st), EFAULT);
		/* The same bytes NUL-terminated before the hole are a fine path. */
		memcpy(s, "/etc/\0\0\0", 8);
		CHECK_RET(syscall(SYS_stat, s, &st), 0);
		/* No NUL before the hole; and PATH_MAX bytes without a NUL, all mapped. */
		memset(rw, '/', 2 * PG);
		CHECK_ERR(syscall(SYS_stat, rw + 2 * PG - 4000, &st), EFAULT);
		CHECK_ERR(syscall(SYS_stat, rw + 2 * PG - 4096, &st), ENAMETOOLONG);
		rw[2 * PG - 1] = '\0';
		CHECK_ERR(syscall(SYS_stat, rw, &st), ENAMETOOLONG);
		mprotect(ro, PG, PROT_READ);
	}

	/* Results written to bad memory. */
	{
		CHECK_ERR(syscall(SYS_fstat, passwd, (void *)1), EFAULT);
		CHECK_ERR(syscall(SYS_fstat, passwd, ro), EFAULT);
		CHECK_ERR(syscall(SYS_stat, "/etc/passwd", hole), EFAULT);
		CHECK_ERR(syscall(SYS_uname, NULL), EFAULT);
		CHECK_ERR(syscall(SYS_uname, ro), EFAULT);
		CHECK_ERR(syscall(SYS_sysinfo, ro), EFAULT);
		CHECK_ERR(syscall(SYS_clock_gettime, CLOCK_MONOTONIC, ro), EFAULT);
		CHECK_ERR(syscall(SYS_clock_getres, CLOCK_MONOTONIC, ro), EFAULT);
		CHECK_ERR(syscall(SYS_gettimeofday, ro, NULL), EFAULT);
		CHECK_ERR(syscall(SYS_getcwd, ro, 100), EFAULT);
		CHECK_ERR(syscall(SYS_readlink, "/bin", ro, 100), EFAULT);
		CHECK_ERR(syscall(SYS_getdents64, open("/etc", O_RDONLY | O_DIRECTORY), ro, PG),
			  EFAULT);
		CHECK_ERR(syscall(SYS_getresuid, ro, ro, ro), EFAULT);
		CHECK_ERR(syscall(SYS_prlimit64, 0, 7 /* RLIMIT_NOFILE */, NULL, ro), EFAULT);
		CHECK_ERR(syscall(SYS_sched_getaffinity, 0, 128, ro), EFAULT);
		CHECK_ERR(syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, ro, 8), EFAULT);
		CHECK_ERR(syscall(SYS_rt_sigaction, SIGUSR1, NULL, ro, 8), EFAULT);
		CHECK_ERR(syscall(SYS_sigaltstack, NULL, ro), EFAULT);
		CHECK_ERR(syscall(SYS_statfs, "/", ro), EFAULT);
		CHECK_ERR(syscall(SYS_statx, AT_FDCWD, "/", 0, 0x7ff, ro), EFAULT);
		/* Arguments read from bad memory. */
		CHECK_ERR(syscall(SYS_nanosleep, hole, NULL), EFAULT);
		CHECK_ERR(syscall(SYS_rt_sigaction, SIGUSR1, hole, NULL, 8), EFAULT);
		CHECK_ERR(syscall(SYS_rt_sigprocmask, SIG_BLOCK, hole, NULL, 8), EFAULT);
		CHECK_ERR(syscall(SYS_sigaltstack, hole, NULL), EFAULT);
		CHECK_ERR(syscall(SYS_setrlimit, 7, hole), EFAULT);
	}

	/* A write of read-only memory is fine: the kernel only reads it. */
	{
		int null = open("/dev/null", O_WRONLY);

		CHECK_RET(syscall(SYS_write, null, ro, 16), 16);
		close(null);
	}
	return finish();
}
