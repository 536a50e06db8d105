/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Conformance: clocks and sleeps. Only lower bounds on elapsed time are checked (a sleep never
 * ends early); nothing depends on how fast the machine is. Alarm clocks are left out: they
 * need an RTC natively.
 */
#include <stdint.h>
#include <time.h>

#include "check.h"

struct kts {
	int64_t sec, nsec;
};

static int64_t to_ns(const struct kts *t)
{
	return t->sec * 1000000000LL + t->nsec;
}

static int64_t now_ns(int clock)
{
	struct kts t = { 0, 0 };

	syscall(SYS_clock_gettime, clock, &t);
	return to_ns(&t);
}

/* A CPU clock id for pid (or tid with thread) as clock_getcpuclockid(3) builds them. */
static int cpu_clock(int pid, int thread, int which)
{
	return (int)((~(unsigned int)pid << 3) | (thread ? 4u : 0u) | (unsigned int)which);
}

int main(void)
{
	static const int clocks[] = {
		CLOCK_REALTIME,		 CLOCK_MONOTONIC,     CLOCK_PROCESS_CPUTIME_ID,
		CLOCK_THREAD_CPUTIME_ID, CLOCK_MONOTONIC_RAW, CLOCK_REALTIME_COARSE,
		CLOCK_MONOTONIC_COARSE,	 CLOCK_BOOTTIME,      CLOCK_TAI
	};
	static const int bad_clocks[] = { 10, 12, 16, 1000, -1 };
	struct kts t, res;
	int64_t a, b;

	for (unsigned i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++) {
		t = (struct kts){ -1, -1 };
		CHECK_RET(syscall(SYS_clock_gettime, clocks[i], &t), 0);
		CHECK(t.sec >= 0 && t.nsec >= 0 && t.nsec < 1000000000, "clock %d: %ld.%ld",
		      clocks[i], (long)t.sec, (long)t.nsec);
		res = (struct kts){ -1, -1 };
		CHECK_RET(syscall(SYS_clock_getres, clocks[i], &res), 0);
		CHECK(res.sec == 0 && res.nsec > 0 && res.nsec <= 100000000, "clock %d res %ld.%ld",
		      clocks[i], (long)res.sec, (long)res.nsec);
		CHECK_RET(syscall(SYS_clock_getres, clocks[i], NULL), 0);
	}
	for (unsigned i = 0; i < sizeof(bad_clocks) / sizeof(bad_clocks[0]); i++) {
		CHECK_ERR(syscall(SYS_clock_gettime, bad_clocks[i], &t), EINVAL);
		CHECK_ERR(syscall(SYS_clock_getres, bad_clocks[i], &res), EINVAL);
		CHECK_ERR(syscall(SYS_clock_getres, bad_clocks[i], NULL), EINVAL);
	}
	CHECK_ERR(syscall(SYS_clock_gettime, CLOCK_MONOTONIC, NULL), EFAULT);
	CHECK_ERR(syscall(SYS_clock_gettime, CLOCK_REALTIME, (void *)1), EFAULT);

	/* High-resolution clocks have 1 ns resolution. */
	CHECK_RET(syscall(SYS_clock_getres, CLOCK_MONOTONIC, &res), 0);
	CHECK(res.sec == 0 && res.nsec == 1, "monotonic res %ld", (long)res.nsec);

	/* CPU clocks named by pid 0, own pid and own tid. */
	CHECK_RET(syscall(SYS_clock_gettime, cpu_clock(0, 0, 2), &t), 0);
	CHECK_RET(syscall(SYS_clock_gettime, cpu_clock(0, 1, 2), &t), 0);
	CHECK_RET(syscall(SYS_clock_gettime, cpu_clock((int)getpid(), 0, 0), &t), 0);
	CHECK_RET(syscall(SYS_clock_gettime, cpu_clock((int)syscall(SYS_gettid), 1, 1), &t), 0);
	CHECK_ERR(syscall(SYS_clock_gettime, cpu_clock(0, 0, 3), &t), EINVAL);
	/* Above PID_MAX_LIMIT: no such process anywhere. */
	CHECK_ERR(syscall(SYS_clock_gettime, cpu_clock(4194305, 0, 2), &t), EINVAL);

	/* Monotonic clocks do not go back; BOOTTIME counts at least what MONOTONIC does. */
	a = now_ns(CLOCK_MONOTONIC);
	for (int i = 0; i < 1000; i++) {
		b = now_ns(CLOCK_MONOTONIC);
		if (b < a)
			break;
		a = b;
	}
	CHECK(b >= a, "CLOCK_MONOTONIC went back: %ld then %ld", (long)a, (long)b);
	a = now_ns(CLOCK_MONOTONIC_RAW);
	b = now_ns(CLOCK_MONOTONIC_RAW);
	CHECK(b >= a, "CLOCK_MONOTONIC_RAW went back");
	a = now_ns(CLOCK_MONOTONIC);
	b = now_ns(CLOCK_BOOTTIME);
	CHECK(b >= a, "BOOTTIME %ld < MONOTONIC %ld", (long)b, (long)a);

	/* time, gettimeofday and CLOCK_REALTIME agree in order. */
	{
		int64_t secs = 0, r;
		struct {
			int64_t sec, usec;
		} tv = { -1, -1 };
		int32_t tz[2];

		r = syscall(SYS_time, &secs);
		CHECK(r > 1600000000 && r == secs, "time %ld stored %ld", (long)r, (long)secs);
		CHECK_RET(syscall(SYS_gettimeofday, &tv, NULL), 0);
		CHECK(tv.sec >= r && tv.usec >= 0 && tv.usec < 1000000, "gettimeofday %ld.%ld",
		      (long)tv.sec, (long)tv.usec);
		CHECK_RET(syscall(SYS_clock_gettime, CLOCK_REALTIME, &t), 0);
		CHECK(t.sec * 1000000 + t.nsec / 1000 >= tv.sec * 1000000 + tv.usec,
		      "realtime before gettimeofday");
		CHECK(syscall(SYS_time, NULL) >= r, "time(NULL)");
		CHECK_RET(syscall(SYS_gettimeofday, NULL, NULL), 0);
		CHECK_RET(syscall(SYS_gettimeofday, NULL, tz), 0);
		CHECK_ERR(syscall(SYS_gettimeofday, (void *)1, NULL), EFAULT);
		CHECK_ERR(syscall(SYS_time, (void *)1), EFAULT);
	}

	/* nanosleep: 10 ms returns 0 and at least 10 ms have passed. */
	{
		struct kts req = { 0, 10000000 }, rem = { 9, 9 };

		a = now_ns(CLOCK_MONOTONIC);
		CHECK_RET(syscall(SYS_nanosleep, &req, &rem), 0);
		b = now_ns(CLOCK_MONOTONIC);
		CHECK(b - a >= 10000000, "slept %ld ns", (long)(b - a));
		CHECK_RET(syscall(SYS_nanosleep, &(struct kts){ 0, 0 }, NULL), 0);
		CHECK_ERR(syscall(SYS_nanosleep, &(struct kts){ 0, 1000000000 }, NULL), EINVAL);
		CHECK_ERR(syscall(SYS_nanosleep, &(struct kts){ -1, 0 }, NULL), EINVAL);
		CHECK_ERR(syscall(SYS_nanosleep, &(struct kts){ 0, -1 }, NULL), EINVAL);
		CHECK_ERR(syscall(SYS_nanosleep, NULL, NULL), EFAULT);
	}

	/* clock_nanosleep: relative, absolute, and which clocks may sleep. */
	{
		struct kts ms = { 0, 1000000 }, past = { 0, 0 }, deadline;

		CHECK_RET(syscall(SYS_clock_nanosleep, CLOCK_REALTIME, 0, &ms, NULL), 0);
		CHECK_RET(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ms, NULL), 0);
		CHECK_RET(syscall(SYS_clock_nanosleep, CLOCK_BOOTTIME, 0, &ms, NULL), 0);
		CHECK_RET(syscall(SYS_clock_nanosleep, CLOCK_TAI, 0, &ms, NULL), 0);
		CHECK_RET(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, TIMER_ABSTIME, &past, NULL),
			  0);
		CHECK_RET(syscall(SYS_clock_nanosleep, CLOCK_REALTIME, TIMER_ABSTIME, &past, NULL),
			  0);
		/* An absolute CPU-time deadline already passed returns at once. */
		CHECK_RET(syscall(SYS_clock_nanosleep, CLOCK_PROCESS_CPUTIME_ID, TIMER_ABSTIME,
				  &past, NULL),
			  0);
		a = now_ns(CLOCK_MONOTONIC) + 5000000;
		deadline = (struct kts){ a / 1000000000, a % 1000000000 };
		CHECK_RET(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline,
				  NULL),
			  0);
		b = now_ns(CLOCK_MONOTONIC);
		CHECK(b >= a, "woke %ld ns before the deadline", (long)(a - b));
		/* Unknown flag bits are ignored. */
		CHECK_RET(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0xf0, &ms, NULL), 0);

		CHECK_ERR(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC_RAW, 0, &ms, NULL),
			  EOPNOTSUPP);
		CHECK_ERR(syscall(SYS_clock_nanosleep, CLOCK_REALTIME_COARSE, 0, &ms, NULL),
			  EOPNOTSUPP);
		CHECK_ERR(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC_COARSE, 0, &ms, NULL),
			  EOPNOTSUPP);
		CHECK_ERR(syscall(SYS_clock_nanosleep, CLOCK_THREAD_CPUTIME_ID, 0, &ms, NULL),
			  EOPNOTSUPP);
		/* Per-thread CPU clocks have an nsleep that refuses. */
		CHECK_ERR(syscall(SYS_clock_nanosleep, cpu_clock(0, 1, 2), 0, &ms, NULL), EINVAL);
		CHECK_ERR(syscall(SYS_clock_nanosleep, 10, 0, &ms, NULL), EINVAL);
		CHECK_ERR(syscall(SYS_clock_nanosleep, 16, 0, &ms, NULL), EINVAL);
		/* The clock is checked before the request is read. */
		CHECK_ERR(syscall(SYS_clock_nanosleep, 10, 0, (void *)1, NULL), EINVAL);
		CHECK_ERR(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC_RAW, 0, (void *)1, NULL),
			  EOPNOTSUPP);
		CHECK_ERR(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, (void *)1, NULL),
			  EFAULT);
		CHECK_ERR(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0,
				  &(struct kts){ 0, 1000000000 }, NULL),
			  EINVAL);
		CHECK_ERR(syscall(SYS_clock_nanosleep, CLOCK_REALTIME, TIMER_ABSTIME,
				  &(struct kts){ -1, 0 }, NULL),
			  EINVAL);
	}
	return finish();
}
