/* SPDX-License-Identifier: Apache-2.0 */
/* syscalls/sys_info.c: uname, sysinfo, getrandom, rlimits. */
#include <criterion/criterion.h>
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "tests/unit/syscalls/fake.h"

static struct harness h;

static void setup(void)
{
	harness_init(&h, 0, 0);
}

TestSuite(sys_info, .init = setup);

struct utsname6 {
	char f[6][65];
};

struct rl64 {
	uint64_t cur, max;
};

struct si {
	int64_t uptime;
	uint64_t loads[3];
	uint64_t totalram, freeram, sharedram, bufferram, totalswap, freeswap;
	uint16_t procs, pad;
	uint64_t totalhigh, freehigh;
	uint32_t mem_unit;
	char f[4];
};

Test(sys_info, uname_reports_the_sandbox_names)
{
	struct utsname6 u;

	memset(&u, 'x', sizeof(u));
	cr_assert_eq(CALL(&h.t, uname, A(&u)), 0);
	cr_assert_str_eq(u.f[0], "Linux");
	cr_assert_str_eq(u.f[1], "sandbox-host");
	cr_assert_str_eq(u.f[2], HUSK_UTS_RELEASE);
	cr_assert_str_eq(u.f[3], HUSK_UTS_VERSION);
	cr_assert_str_eq(u.f[4], "x86_64");
	cr_assert_str_eq(u.f[5], "sandbox.domain");
	/* The rest of each field is zeroed, not left over. */
	cr_assert_eq(u.f[0][64], '\0');
	cr_assert_eq(u.f[0][10], '\0');
}

Test(sys_info, uname_bad_or_short_buffer_is_efault)
{
	static char buf[4096 * 2];

	cr_assert_eq(CALL(&h.t, uname, 0), -EFAULT);
	fake_mm_set_bad(buf + 100, 1);
	cr_assert_eq(CALL(&h.t, uname, A(buf)), -EFAULT);
}

Test(sys_info, sysinfo_counts_uptime_from_boot_rounding_up)
{
	struct si s;

	/* Booted 1.5 s ago: uptime reads 2. */
	h.k.boot_ns -= 1500000000ULL;
	memset(&s, 0xff, sizeof(s));
	cr_assert_eq(CALL(&h.t, sysinfo, A(&s)), 0);
	cr_assert(s.uptime == 2 || s.uptime == 3, "uptime %ld", (long)s.uptime);
	cr_assert_eq(s.procs, 1);
	cr_assert_eq(s.mem_unit, 1);
	cr_assert_eq(s.loads[0], 0);
	cr_assert_eq(s.totalswap, 0);
	cr_assert_gt(s.totalram, 0);
	cr_assert_leq(s.freeram, s.totalram);
}

Test(sys_info, sysinfo_totalram_is_capped_by_the_memory_file)
{
	struct si s;

	h.k.mf.size = 1ULL << 20;
	cr_assert_eq(CALL(&h.t, sysinfo, A(&s)), 0);
	cr_assert_eq(s.totalram, 1ULL << 20);
	cr_assert_leq(s.freeram, 1ULL << 20);
	cr_assert_eq(CALL(&h.t, sysinfo, 1), -EFAULT);
}

Test(sys_info, getrandom_fills_the_buffer)
{
	uint8_t a[64] = { 0 }, b[64] = { 0 };

	cr_assert_eq(CALL(&h.t, getrandom, A(a), sizeof(a), 0), 64);
	cr_assert_eq(CALL(&h.t, getrandom, A(b), sizeof(b), 1 | 2), 64);
	cr_assert_neq(memcmp(a, b, sizeof(a)), 0);
	cr_assert_eq(CALL(&h.t, getrandom, A(a), sizeof(a), 4), 64);
}

Test(sys_info, getrandom_flag_checks)
{
	uint8_t a[16];

	cr_assert_eq(CALL(&h.t, getrandom, A(a), sizeof(a), 8), -EINVAL);
	cr_assert_eq(CALL(&h.t, getrandom, A(a), sizeof(a), 2 | 4), -EINVAL);
}

Test(sys_info, getrandom_zero_length_returns_zero)
{
	cr_assert_eq(CALL(&h.t, getrandom, 0, 0, 0), 0);
}

Test(sys_info, getrandom_returns_partial_count_on_fault)
{
	static uint8_t buf[3 * 4096 + 200];

	fake_mm_set_bad(buf + 5000, 100);
	cr_assert_eq(CALL(&h.t, getrandom, A(buf), sizeof(buf), 0), 5000);
	cr_assert_eq(CALL(&h.t, getrandom, A(buf + 5000), 10, 0), -EFAULT);
}

Test(sys_info, getrandom_range_beyond_user_space_is_efault)
{
	/* Checked up front (access_ok): nothing is written even where memory is mapped. */
	cr_assert_eq(CALL(&h.t, getrandom, 0x7ffffffff000ULL - 8, 16, 0), -EFAULT);
	cr_assert_eq(CALL(&h.t, getrandom, (uint64_t)-8, 16, 0), -EFAULT);
}

Test(sys_info, prlimit_gets_and_sets_own_limits)
{
	struct rl64 old, lim = { 512, 4096 };

	cr_assert_eq(CALL(&h.t, prlimit64, 0, RLIMIT_NOFILE, 0, A(&old)), 0);
	cr_assert_eq(old.cur, 1024);
	cr_assert_eq(old.max, 4096);
	cr_assert_eq(CALL(&h.t, prlimit64, 1, RLIMIT_NOFILE, A(&lim), A(&old)), 0);
	cr_assert_eq(old.cur, 1024);
	cr_assert_eq(h.tg.rlimits[RLIMIT_NOFILE].rlim_cur, 512);
	cr_assert_eq(h.tg.rlimits[RLIMIT_NOFILE].rlim_max, 4096);
}

Test(sys_info, prlimit_other_pid_is_esrch_after_reading_new)
{
	struct rl64 old;

	cr_assert_eq(CALL(&h.t, prlimit64, 2, RLIMIT_NOFILE, 0, A(&old)), -ESRCH);
	cr_assert_eq(CALL(&h.t, prlimit64, (uint64_t)-1, RLIMIT_NOFILE, 0, A(&old)), -ESRCH);
	cr_assert_eq(CALL(&h.t, prlimit64, 2, RLIMIT_NOFILE, 1, 0), -EFAULT);
}

Test(sys_info, prlimit_checks)
{
	struct rl64 lim;

	cr_assert_eq(CALL(&h.t, prlimit64, 0, 16, 0, 0), -EINVAL);
	lim = (struct rl64){ 10, 5 };
	cr_assert_eq(CALL(&h.t, prlimit64, 0, RLIMIT_NOFILE, A(&lim), 0), -EINVAL);
	lim = (struct rl64){ 10, (1 << 20) + 1 };
	cr_assert_eq(CALL(&h.t, prlimit64, 0, RLIMIT_NOFILE, A(&lim), 0), -EPERM);
	cr_assert_eq(CALL(&h.t, prlimit64, 0, RLIMIT_NOFILE, 0, 1), -EFAULT);
}

Test(sys_info, raising_a_hard_limit_needs_root)
{
	struct rl64 lim = { 100, 8192 };

	h.t.cred.euid = 1000;
	cr_assert_eq(CALL(&h.t, prlimit64, 0, RLIMIT_NOFILE, A(&lim), 0), -EPERM);
	cr_assert_eq(h.tg.rlimits[RLIMIT_NOFILE].rlim_max, 4096);
	/* Lowering is allowed, and then raising back is not. */
	lim = (struct rl64){ 100, 2048 };
	cr_assert_eq(CALL(&h.t, prlimit64, 0, RLIMIT_NOFILE, A(&lim), 0), 0);
	lim = (struct rl64){ 100, 4096 };
	cr_assert_eq(CALL(&h.t, prlimit64, 0, RLIMIT_NOFILE, A(&lim), 0), -EPERM);
	h.t.cred.euid = 0;
	cr_assert_eq(CALL(&h.t, prlimit64, 0, RLIMIT_NOFILE, A(&lim), 0), 0);
	cr_assert_eq(h.tg.rlimits[RLIMIT_NOFILE].rlim_max, 4096);
}

Test(sys_info, getrlimit_and_setrlimit)
{
	struct rl64 lim;

	cr_assert_eq(CALL(&h.t, getrlimit, RLIMIT_STACK, A(&lim)), 0);
	cr_assert_eq(lim.cur, RLIM_INFINITY);
	lim = (struct rl64){ 8 << 20, 16 << 20 };
	cr_assert_eq(CALL(&h.t, setrlimit, RLIMIT_STACK, A(&lim)), 0);
	memset(&lim, 0, sizeof(lim));
	cr_assert_eq(CALL(&h.t, getrlimit, RLIMIT_STACK, A(&lim)), 0);
	cr_assert_eq(lim.cur, 8 << 20);
	cr_assert_eq(lim.max, 16 << 20);
	cr_assert_eq(CALL(&h.t, getrlimit, 16, A(&lim)), -EINVAL);
	cr_assert_eq(CALL(&h.t, getrlimit, RLIMIT_STACK, 1), -EFAULT);
	cr_assert_eq(CALL(&h.t, setrlimit, RLIMIT_STACK, 1), -EFAULT);
}

/* sched_getaffinity moved to sys_sched.c (per-thread masks): tests/syscalls/affinity.c. */

Test(sys_info, sched_yield_returns_zero)
{
	cr_assert_eq(CALL(&h.t, sched_yield), 0);
}
