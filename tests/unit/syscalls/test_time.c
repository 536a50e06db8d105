/* SPDX-License-Identifier: Apache-2.0 */
/* syscalls/sys_time.c: clock ids, resolutions, argument checks and their order, sleeping. */
#include <criterion/criterion.h>
#include <errno.h>
#include <time.h>

#include "tests/unit/syscalls/fake.h"

static struct harness h;

static void setup(void)
{
	harness_init(&h, 0, 0);
}

TestSuite(sys_time, .init = setup);

struct lts {
	int64_t sec, nsec;
};

static int64_t ns(const struct lts *ts)
{
	return ts->sec * 1000000000LL + ts->nsec;
}

static int64_t host_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* CPU clock id of pid (process) or tid (thread) as clock_getcpuclockid builds it. */
static uint64_t cpu_clock_id(int32_t pid, bool thread, int which)
{
	return (uint64_t)(int64_t)(int32_t)((~(uint32_t)pid << 3) | (thread ? 4u : 0u) |
					    (uint32_t)which);
}

Test(sys_time, every_linux_clock_reads)
{
	const int ids[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11 };

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		struct lts ts = { -1, -1 };

		cr_assert_eq(CALL(&h.t, clock_gettime, ids[i], A(&ts)), 0, "clock %d", ids[i]);
		cr_assert(ts.sec >= 0 && ts.nsec >= 0 && ts.nsec < 1000000000, "clock %d", ids[i]);
	}
}

Test(sys_time, unknown_clocks_are_einval)
{
	const int64_t ids[] = { 10, 12, 15, 16, 1000, -1, -5 };
	struct lts ts;

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		cr_assert_eq(CALL(&h.t, clock_gettime, (uint64_t)ids[i], A(&ts)), -EINVAL,
			     "clock %ld", (long)ids[i]);
		cr_assert_eq(CALL(&h.t, clock_getres, (uint64_t)ids[i], A(&ts)), -EINVAL);
	}
}

Test(sys_time, clock_id_uses_low_32_bits)
{
	struct lts ts;

	cr_assert_eq(CALL(&h.t, clock_gettime, (1ULL << 32) | 1, A(&ts)), 0);
}

Test(sys_time, realtime_is_the_hosts)
{
	struct lts ts;
	int64_t before = host_ns(CLOCK_REALTIME), after;

	cr_assert_eq(CALL(&h.t, clock_gettime, 0, A(&ts)), 0);
	after = host_ns(CLOCK_REALTIME);
	cr_assert(ns(&ts) >= before && ns(&ts) <= after);
}

Test(sys_time, monotonic_does_not_go_back)
{
	struct lts a, b;

	cr_assert_eq(CALL(&h.t, clock_gettime, 1, A(&a)), 0);
	cr_assert_eq(CALL(&h.t, clock_gettime, 1, A(&b)), 0);
	cr_assert(ns(&b) >= ns(&a));
}

Test(sys_time, own_cpu_clocks_by_pid_and_tid_read)
{
	struct lts ts;

	cr_assert_eq(CALL(&h.t, clock_gettime, cpu_clock_id(0, false, 2), A(&ts)), 0);
	cr_assert_eq(CALL(&h.t, clock_gettime, cpu_clock_id(1, false, 0), A(&ts)), 0);
	cr_assert_eq(CALL(&h.t, clock_gettime, cpu_clock_id(1, true, 1), A(&ts)), 0);
	cr_assert_eq(CALL(&h.t, clock_gettime, cpu_clock_id(7, false, 2), A(&ts)), -EINVAL);
	cr_assert_eq(CALL(&h.t, clock_gettime, cpu_clock_id(7, true, 2), A(&ts)), -EINVAL);
}

Test(sys_time, gettime_bad_pointer_is_efault)
{
	cr_assert_eq(CALL(&h.t, clock_gettime, 1, 0), -EFAULT);
	cr_assert_eq(CALL(&h.t, clock_gettime, 1, 1), -EFAULT);
}

Test(sys_time, getres_accepts_null)
{
	cr_assert_eq(CALL(&h.t, clock_getres, 1, 0), 0);
	cr_assert_eq(CALL(&h.t, clock_getres, 10, 0), -EINVAL);
}

Test(sys_time, getres_is_1ns_for_high_res_and_the_tick_for_coarse)
{
	struct lts res;
	struct timespec coarse;

	clock_getres(CLOCK_MONOTONIC_COARSE, &coarse);
	cr_assert_eq(CALL(&h.t, clock_getres, 1, A(&res)), 0);
	cr_assert_eq(res.sec, 0);
	cr_assert_eq(res.nsec, 1);
	cr_assert_eq(CALL(&h.t, clock_getres, 5, A(&res)), 0);
	cr_assert_eq(res.nsec, coarse.tv_nsec);
	cr_assert_eq(CALL(&h.t, clock_getres, cpu_clock_id(0, false, 0), A(&res)), 0);
	cr_assert_eq(res.nsec, coarse.tv_nsec);
	cr_assert_eq(CALL(&h.t, clock_getres, cpu_clock_id(0, false, 2), A(&res)), 0);
	cr_assert_eq(res.nsec, 1);
}

Test(sys_time, gettimeofday_fills_tv_and_a_utc_timezone)
{
	struct {
		int64_t sec, usec;
	} tv = { -1, -1 };
	int32_t tz[2] = { 7, 7 };
	int64_t before = host_ns(CLOCK_REALTIME) / 1000;

	cr_assert_eq(CALL(&h.t, gettimeofday, A(&tv), A(tz)), 0);
	cr_assert(tv.sec * 1000000 + tv.usec >= before);
	cr_assert(tv.usec >= 0 && tv.usec < 1000000);
	cr_assert_eq(tz[0], 0);
	cr_assert_eq(tz[1], 0);
	cr_assert_eq(CALL(&h.t, gettimeofday, 0, 0), 0);
	cr_assert_eq(CALL(&h.t, gettimeofday, 1, 0), -EFAULT);
	cr_assert_eq(CALL(&h.t, gettimeofday, 0, 1), -EFAULT);
}

Test(sys_time, time_returns_and_stores_seconds)
{
	int64_t stored = 0;
	time_t before = time(NULL);
	long r = CALL(&h.t, time, A(&stored));

	cr_assert_geq(r, before);
	cr_assert_eq(stored, r);
	cr_assert_geq(CALL(&h.t, time, 0), before);
	cr_assert_eq(CALL(&h.t, time, 1), -EFAULT);
}

Test(sys_time, nanosleep_rejects_bad_timespecs)
{
	struct lts neg_sec = { -1, 0 }, big_nsec = { 0, 1000000000 }, neg_nsec = { 0, -1 };

	cr_assert_eq(CALL(&h.t, nanosleep, A(&neg_sec), 0), -EINVAL);
	cr_assert_eq(CALL(&h.t, nanosleep, A(&big_nsec), 0), -EINVAL);
	cr_assert_eq(CALL(&h.t, nanosleep, A(&neg_nsec), 0), -EINVAL);
	cr_assert_eq(CALL(&h.t, nanosleep, 1, 0), -EFAULT);
}

Test(sys_time, nanosleep_sleeps_at_least_the_request)
{
	struct lts req = { 0, 2000000 }, rem = { 5, 5 };
	int64_t before = host_ns(CLOCK_MONOTONIC);

	cr_assert_eq(CALL(&h.t, nanosleep, A(&req), A(&rem)), 0);
	cr_assert_geq(host_ns(CLOCK_MONOTONIC) - before, 2000000);
	/* rem is written only when a sleep is interrupted. */
	cr_assert_eq(rem.sec, 5);
	cr_assert_eq(rem.nsec, 5);
}

Test(sys_time, clock_nanosleep_checks_in_linux_order)
{
	struct lts ok = { 0, 1 }, bad = { 0, 1000000000 };

	/* No such clock, or a clock that cannot sleep, wins over a bad pointer. */
	cr_assert_eq(CALL(&h.t, clock_nanosleep, 10, 0, 1, 0), -EINVAL);
	cr_assert_eq(CALL(&h.t, clock_nanosleep, 4, 0, 1, 0), -EOPNOTSUPP);
	cr_assert_eq(CALL(&h.t, clock_nanosleep, 3, 0, 1, 0), -EOPNOTSUPP);
	cr_assert_eq(CALL(&h.t, clock_nanosleep, 5, 0, A(&ok), 0), -EOPNOTSUPP);
	cr_assert_eq(CALL(&h.t, clock_nanosleep, 6, 0, A(&ok), 0), -EOPNOTSUPP);
	cr_assert_eq(CALL(&h.t, clock_nanosleep, (uint64_t)-5, 0, 1, 0), -EOPNOTSUPP);
	/* Then the request is read and checked. */
	cr_assert_eq(CALL(&h.t, clock_nanosleep, 1, 0, 1, 0), -EFAULT);
	cr_assert_eq(CALL(&h.t, clock_nanosleep, 1, 0, A(&bad), 0), -EINVAL);
	/* Then the clock's own checks: per-thread CPU clocks cannot sleep. */
	cr_assert_eq(CALL(&h.t, clock_nanosleep, cpu_clock_id(0, true, 2), 0, 1, 0), -EFAULT);
	cr_assert_eq(CALL(&h.t, clock_nanosleep, cpu_clock_id(0, true, 2), 0, A(&ok), 0), -EINVAL);
	cr_assert_eq(CALL(&h.t, clock_nanosleep, (uint64_t)-1, 0, A(&ok), 0), -EINVAL);
}

Test(sys_time, clock_nanosleep_ignores_unknown_flags)
{
	struct lts ok = { 0, 1 };

	cr_assert_eq(CALL(&h.t, clock_nanosleep, 1, 0xf0, A(&ok), 0), 0);
}

Test(sys_time, clock_nanosleep_absolute_deadline_in_the_past_returns_at_once)
{
	struct lts past = { 1, 0 };

	cr_assert_eq(CALL(&h.t, clock_nanosleep, 1, 1, A(&past), 0), 0);
	cr_assert_eq(CALL(&h.t, clock_nanosleep, 0, 1, A(&past), 0), 0);
	cr_assert_eq(CALL(&h.t, clock_nanosleep, 11, 1, A(&past), 0), 0);
	cr_assert_eq(CALL(&h.t, clock_nanosleep, 7, 1, A(&past), 0), 0);
}

Test(sys_time, clock_nanosleep_absolute_waits_for_the_deadline)
{
	int64_t deadline = host_ns(CLOCK_MONOTONIC) + 3000000;
	struct lts abs = { deadline / 1000000000, deadline % 1000000000 };

	cr_assert_eq(CALL(&h.t, clock_nanosleep, 1, 1, A(&abs), 0), 0);
	cr_assert_geq(host_ns(CLOCK_MONOTONIC), deadline);
}

Test(sys_time, alarm_clocks_need_root_and_only_take_abstime)
{
	struct lts past = { 1, 0 };

	cr_assert_eq(CALL(&h.t, clock_nanosleep, 8, 2, A(&past), 0), -EINVAL);
	cr_assert_eq(CALL(&h.t, clock_nanosleep, 9, 1, A(&past), 0), 0);
	h.t.cred.euid = 1000;
	cr_assert_eq(CALL(&h.t, clock_nanosleep, 8, 1, A(&past), 0), -EPERM);
}
