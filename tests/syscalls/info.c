/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Conformance: uname, sysinfo, getrandom, resource limits, CPU affinity, sched_yield.
 * uname's values differ in husk (its own release, the sandbox's host name): only their shape
 * is checked.
 */
#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "check.h"

struct kutsname {
	char f[6][65];
};

struct ksysinfo {
	int64_t uptime;
	uint64_t loads[3];
	uint64_t totalram, freeram, sharedram, bufferram, totalswap, freeswap;
	uint16_t procs, pad;
	uint64_t totalhigh, freehigh;
	uint32_t mem_unit;
	char f[4];
};

struct krlimit {
	uint64_t cur, max;
};

static int terminated(const char *s)
{
	return memchr(s, '\0', 65) != NULL;
}

static void check_uname(void)
{
	struct kutsname u;
	const char *rel = u.f[2];

	memset(&u, 'x', sizeof(u));
	CHECK_RET(syscall(SYS_uname, &u), 0);
	for (int i = 0; i < 6; i++)
		CHECK(terminated(u.f[i]), "field %d is not NUL-terminated", i);
	CHECK(!strcmp(u.f[0], "Linux"), "sysname '%.65s'", u.f[0]);
	CHECK(!strcmp(u.f[4], "x86_64"), "machine '%.65s'", u.f[4]);
	/* release: digits and dots first, like 6.1.0 */
	CHECK(isdigit((unsigned char)rel[0]) && strchr(rel, '.') != NULL, "release '%.65s'", rel);
	CHECK(u.f[3][0] != '\0', "version is empty");
	CHECK_ERR(syscall(SYS_uname, NULL), EFAULT);
	CHECK_ERR(syscall(SYS_uname, (void *)1), EFAULT);
}

static void check_sysinfo(void)
{
	struct ksysinfo si;

	memset(&si, 0xff, sizeof(si));
	CHECK_RET(syscall(SYS_sysinfo, &si), 0);
	CHECK(si.uptime >= 0, "uptime %ld", (long)si.uptime);
	CHECK(si.mem_unit >= 1, "mem_unit %u", si.mem_unit);
	CHECK(si.totalram > 0, "totalram 0");
	CHECK(si.freeram <= si.totalram, "freeram %lu > totalram %lu", (unsigned long)si.freeram,
	      (unsigned long)si.totalram);
	CHECK(si.procs >= 1, "procs %u", si.procs);
	CHECK_ERR(syscall(SYS_sysinfo, NULL), EFAULT);
}

static void check_getrandom(void)
{
	uint8_t a[64], b[64];
	size_t big = 100000;
	uint8_t *p = calloc(1, big);
	size_t nonzero = 0;

	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	CHECK_RET(syscall(SYS_getrandom, a, sizeof(a), 0), 64);
	CHECK_RET(syscall(SYS_getrandom, b, sizeof(b), 0), 64);
	CHECK(memcmp(a, b, sizeof(a)) != 0, "two getrandom calls gave the same bytes");
	CHECK_RET(syscall(SYS_getrandom, a, sizeof(a), 0x1 /* GRND_NONBLOCK */), 64);
	CHECK_RET(syscall(SYS_getrandom, a, sizeof(a), 0x4 /* GRND_INSECURE */), 64);
	CHECK_RET(syscall(SYS_getrandom, a, sizeof(a), 0x3 /* GRND_RANDOM|GRND_NONBLOCK */), 64);
	CHECK_RET(syscall(SYS_getrandom, a, 0, 0), 0);
	CHECK_RET(syscall(SYS_getrandom, NULL, 0, 0), 0);
	CHECK_ERR(syscall(SYS_getrandom, a, sizeof(a), 0x8), EINVAL);
	CHECK_ERR(syscall(SYS_getrandom, a, sizeof(a), 0x6 /* INSECURE|RANDOM */), EINVAL);
	CHECK_ERR(syscall(SYS_getrandom, (void *)1, 16, 0), EFAULT);
	CHECK_RET(syscall(SYS_getrandom, p, big, 0), (long)big);
	for (size_t i = 0; i < big; i++)
		nonzero += p[i] != 0;
	/* About 99.6% of random bytes are non-zero; 90% leaves a wide margin. */
	CHECK(nonzero > big * 9 / 10, "only %zu of %zu bytes non-zero", nonzero, big);
	free(p);
}

static void check_rlimits(void)
{
	struct krlimit lim, old, now;
	long pid = syscall(SYS_getpid);
	int fds[3], lowest;

	CHECK_RET(syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &old), 0);
	CHECK(old.cur <= old.max, "NOFILE %lu > %lu", (unsigned long)old.cur,
	      (unsigned long)old.max);
	CHECK_RET(syscall(SYS_prlimit64, pid, RLIMIT_NOFILE, NULL, &now), 0);
	CHECK(now.cur == old.cur && now.max == old.max, "own pid reads other limits");
	CHECK_RET(syscall(SYS_getrlimit, RLIMIT_NOFILE, &now), 0);
	CHECK(now.cur == old.cur && now.max == old.max, "getrlimit disagrees with prlimit64");

	/* Lower the soft limit (the hard one stays): the new value reads back, and the fd table
	 * honours it. */
	lowest = (int)syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY);
	if (lowest >= 0)
		syscall(SYS_close, lowest);
	lim = (struct krlimit){ (uint64_t)lowest + 2, old.max };
	CHECK(lowest >= 0 && lim.cur <= old.max, "no room to test (lowest fd %d)", lowest);
	CHECK_RET(syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &lim, &now), 0);
	CHECK(now.cur == old.cur, "old value returned while setting");
	CHECK_RET(syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &now), 0);
	CHECK(now.cur == lim.cur && now.max == old.max, "set %lu, read %lu", (unsigned long)lim.cur,
	      (unsigned long)now.cur);
	fds[0] = (int)syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY);
	fds[1] = (int)syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY);
	CHECK(fds[0] == lowest && fds[1] == lowest + 1, "fds %d %d", fds[0], fds[1]);
	CHECK_ERR(fds[2] = (int)syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY), EMFILE);
	CHECK_ERR(syscall(SYS_dup, fds[0]), EMFILE);
	CHECK_ERR(syscall(SYS_fcntl, fds[0], F_DUPFD, lowest + 2), EINVAL);
	CHECK_ERR(syscall(SYS_dup2, fds[0], lowest + 2), EBADF);
	for (int i = 0; i < 3; i++)
		if (fds[i] >= 0)
			syscall(SYS_close, fds[i]);
	CHECK_RET(syscall(SYS_setrlimit, RLIMIT_NOFILE, &old), 0);
	CHECK_RET(syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &now), 0);
	CHECK(now.cur == old.cur, "restore failed");

	lim = (struct krlimit){ 10, 5 };
	CHECK_ERR(syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &lim, NULL), EINVAL);
	CHECK_ERR(syscall(SYS_setrlimit, RLIMIT_NOFILE, &lim), EINVAL);
	/* Beyond fs.nr_open (1048576 by default): refused even to root. */
	lim = (struct krlimit){ 10, 1048577 };
	CHECK_ERR(syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &lim, NULL), EPERM);
	CHECK_ERR(syscall(SYS_prlimit64, 0, 16 /* RLIM_NLIMITS */, NULL, &now), EINVAL);
	CHECK_ERR(syscall(SYS_getrlimit, 16, &now), EINVAL);
	CHECK_ERR(syscall(SYS_prlimit64, INT_MAX, RLIMIT_NOFILE, NULL, &now), ESRCH);
	CHECK_ERR(syscall(SYS_prlimit64, -1, RLIMIT_NOFILE, NULL, &now), ESRCH);
	/* The new limit is read before the pid is looked up. */
	CHECK_ERR(syscall(SYS_prlimit64, INT_MAX, RLIMIT_NOFILE, (void *)1, NULL), EFAULT);
	CHECK_ERR(syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, (void *)1), EFAULT);
	CHECK_ERR(syscall(SYS_getrlimit, RLIMIT_NOFILE, (void *)1), EFAULT);
	CHECK_ERR(syscall(SYS_setrlimit, RLIMIT_NOFILE, (void *)1), EFAULT);
}

static void check_affinity(void)
{
	uint64_t mask[16];
	long n;
	int bits = 0;

	memset(mask, 0, sizeof(mask));
	n = CHECK_OK(syscall(SYS_sched_getaffinity, 0, sizeof(mask), mask));
	CHECK(n >= 8 && n <= (long)sizeof(mask) && n % 8 == 0, "returned %ld", n);
	for (int i = 0; i < 16; i++)
		bits += __builtin_popcountll(mask[i]);
	CHECK(bits >= 1, "empty CPU mask");
	CHECK_RET(syscall(SYS_sched_getaffinity, syscall(SYS_getpid), sizeof(mask), mask), n);
	CHECK_ERR(syscall(SYS_sched_getaffinity, 0, 0, mask), EINVAL);
	CHECK_ERR(syscall(SYS_sched_getaffinity, 0, 12, mask), EINVAL);
	CHECK_ERR(syscall(SYS_sched_getaffinity, INT_MAX, sizeof(mask), mask), ESRCH);
	CHECK_ERR(syscall(SYS_sched_getaffinity, 0, sizeof(mask), (void *)1), EFAULT);
	CHECK_RET(syscall(SYS_sched_yield), 0);
}

int main(void)
{
	check_uname();
	check_sysinfo();
	check_getrandom();
	check_rlimits();
	check_affinity();
	return finish();
}
