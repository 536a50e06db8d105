/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guest's clocks with an offset (sentry/time/README.md, "The guest's offset"; in husk the
 * tests run this with HUSK_TEST_CLOCK_OFFSET_NS=+-3600 s): a program sees only the guest's
 * clocks, so it checks that every road to them gives one clock and that every deadline on
 * them is taken on them. The vDSO's clock_gettime (through libc) and the system call agree on
 * MONOTONIC, MONOTONIC_RAW, BOOTTIME and REALTIME, and REALTIME with time() and gettimeofday;
 * absolute deadlines 1 ms ahead of the guest's MONOTONIC (and BOOTTIME) on clock_nanosleep,
 * futex (FUTEX_WAIT_BITSET), timerfd and POSIX timers expire promptly, not an hour away, and
 * not before the deadline; timerfd_gettime and timer_gettime after an absolute arming 10 s
 * ahead say about 10 s; sysinfo's uptime, /proc/uptime and /proc/self/stat's start time agree.
 */
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define MS 1000000LL
#define SEC 1000000000LL
/* How long "promptly" may take on a loaded machine; an offset mistake is an hour. */
#define PROMPT_NS (3 * SEC)
/* How far a trapped read may be from the vDSO's around it (a busy machine). */
#define AGREE_NS (50 * MS)

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * SEC + ts->tv_nsec;
}

static struct timespec ns_ts(int64_t ns)
{
	return (struct timespec){ .tv_sec = ns / SEC, .tv_nsec = ns % SEC };
}

/* The clock through libc (the vDSO where there is one). */
static int64_t vdso_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts_ns(&ts);
}

/* The clock through the system call itself. */
static int64_t sys_ns(clockid_t clock)
{
	struct timespec ts;

	if (syscall(SYS_clock_gettime, clock, &ts))
		return -1;
	return ts_ns(&ts);
}

static void reads_agree(void)
{
	static const struct {
		clockid_t id;
		const char *name;
	} clocks[] = { { CLOCK_MONOTONIC, "MONOTONIC" },
		       { CLOCK_MONOTONIC_RAW, "MONOTONIC_RAW" },
		       { CLOCK_BOOTTIME, "BOOTTIME" },
		       { CLOCK_REALTIME, "REALTIME" } };

	for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++) {
		int64_t a = vdso_ns(clocks[i].id), s = sys_ns(clocks[i].id);
		int64_t b = vdso_ns(clocks[i].id);

		CHECK(s >= a - AGREE_NS && s <= b + AGREE_NS,
		      "%s: vDSO %lld, system call %lld, vDSO %lld", clocks[i].name, (long long)a,
		      (long long)s, (long long)b);
	}
	/* BOOTTIME counts at least what MONOTONIC does; both are positive. */
	{
		int64_t m = sys_ns(CLOCK_MONOTONIC), b = sys_ns(CLOCK_BOOTTIME);

		CHECK(m > 0 && b >= m - AGREE_NS, "MONOTONIC %lld, BOOTTIME %lld", (long long)m,
		      (long long)b);
	}
	/*
	 * REALTIME is the wall clock: time() and gettimeofday agree with it. time() reads the coarse
	 * clock (Linux: the last tick's, REALTIME_COARSE), which may still be in the second before
	 * REALTIME's just after a second begins: it is bounded by REALTIME_COARSE before it (a
	 * native run failed once comparing it with REALTIME).
	 */
	{
		struct timeval tv;
		int64_t c0 = sys_ns(CLOCK_REALTIME_COARSE) / SEC;
		int64_t r0 = sys_ns(CLOCK_REALTIME) / SEC;
		time_t t = time(NULL);
		int64_t r1;

		gettimeofday(&tv, NULL);
		r1 = sys_ns(CLOCK_REALTIME) / SEC;
		CHECK(t >= c0 && t <= r1, "time() %lld, REALTIME_COARSE %lld, REALTIME ..%lld s",
		      (long long)t, (long long)c0, (long long)r1);
		CHECK(tv.tv_sec >= r0 && tv.tv_sec <= r1,
		      "gettimeofday %lld, REALTIME %lld..%lld s", (long long)tv.tv_sec,
		      (long long)r0, (long long)r1);
	}
}

/* An absolute deadline on clock 1 ms ahead; its wait ended: promptly and not early. */
static void check_deadline(const char *what, clockid_t clock, int64_t deadline, int64_t start)
{
	int64_t end = vdso_ns(clock), took = vdso_ns(CLOCK_MONOTONIC) - start;

	CHECK(end >= deadline, "%s: woke %lld ns before the deadline", what,
	      (long long)(deadline - end));
	CHECK(took < PROMPT_NS, "%s: took %lld ms for a deadline 1 ms ahead", what,
	      (long long)(took / MS));
}

static void nanosleep_abs(clockid_t clock, const char *what)
{
	int64_t start = vdso_ns(CLOCK_MONOTONIC), deadline = vdso_ns(clock) + MS;
	struct timespec ts = ns_ts(deadline);

	CHECK_RET(clock_nanosleep(clock, TIMER_ABSTIME, &ts, NULL), 0);
	check_deadline(what, clock, deadline, start);
	/* A deadline a second past returns at once. */
	ts = ns_ts(vdso_ns(clock) - SEC);
	start = vdso_ns(CLOCK_MONOTONIC);
	CHECK_RET(clock_nanosleep(clock, TIMER_ABSTIME, &ts, NULL), 0);
	CHECK(vdso_ns(CLOCK_MONOTONIC) - start < PROMPT_NS, "%s: a past deadline slept", what);
}

static void futex_abs(void)
{
	uint32_t word = 0;
	int64_t start = vdso_ns(CLOCK_MONOTONIC), deadline = start + MS;
	struct timespec ts = ns_ts(deadline);

	/* FUTEX_WAIT_BITSET without FUTEX_CLOCK_REALTIME: an absolute MONOTONIC time. */
	CHECK_ERR(syscall(SYS_futex, &word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 0, &ts, NULL,
			  FUTEX_BITSET_MATCH_ANY),
		  ETIMEDOUT);
	check_deadline("futex", CLOCK_MONOTONIC, deadline, start);
}

static void timerfd_abs(clockid_t clock, const char *what)
{
	int fd = CHECK_OK(timerfd_create(clock, TFD_CLOEXEC));
	int64_t start = vdso_ns(CLOCK_MONOTONIC), deadline = vdso_ns(clock) + MS;
	struct itimerspec its = { .it_value = ns_ts(deadline) }, cur;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint64_t n = 0;

	if (fd < 0)
		return;
	CHECK_RET(timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL), 0);
	CHECK_RET(poll(&p, 1, (int)(PROMPT_NS / MS)), 1);
	CHECK_RET(read(fd, &n, sizeof(n)), (long)sizeof(n));
	CHECK(n == 1, "%s: %llu expirations", what, (unsigned long long)n);
	check_deadline(what, clock, deadline, start);
	/* Armed 10 s ahead: about 10 s left, however far the host's clock is. */
	its.it_value = ns_ts(vdso_ns(clock) + 10 * SEC);
	CHECK_RET(timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL), 0);
	CHECK_RET(timerfd_gettime(fd, &cur), 0);
	CHECK(ts_ns(&cur.it_value) > 9 * SEC && ts_ns(&cur.it_value) <= 10 * SEC,
	      "%s: timerfd_gettime says %lld ms left of 10 s", what,
	      (long long)(ts_ns(&cur.it_value) / MS));
	close(fd);
}

static volatile sig_atomic_t fired;

static void on_alarm(int sig)
{
	(void)sig;
	fired = 1;
}

static void posix_timer_abs(clockid_t clock, const char *what)
{
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM };
	struct sigaction sa = { .sa_handler = on_alarm };
	struct itimerspec its = { 0 }, cur;
	int64_t start, deadline;
	timer_t id;

	sigaction(SIGALRM, &sa, NULL);
	if (CHECK_OK(timer_create(clock, &sev, &id)) < 0)
		return;
	fired = 0;
	start = vdso_ns(CLOCK_MONOTONIC);
	deadline = vdso_ns(clock) + MS;
	its.it_value = ns_ts(deadline);
	CHECK_RET(timer_settime(id, TIMER_ABSTIME, &its, NULL), 0);
	while (!fired && vdso_ns(CLOCK_MONOTONIC) - start < PROMPT_NS)
		usleep(1000);
	CHECK(fired, "%s: no signal within %lld s", what, (long long)(PROMPT_NS / SEC));
	check_deadline(what, clock, deadline, start);
	its.it_value = ns_ts(vdso_ns(clock) + 10 * SEC);
	CHECK_RET(timer_settime(id, TIMER_ABSTIME, &its, NULL), 0);
	CHECK_RET(timer_gettime(id, &cur), 0);
	CHECK(ts_ns(&cur.it_value) > 9 * SEC && ts_ns(&cur.it_value) <= 10 * SEC,
	      "%s: timer_gettime says %lld ms left of 10 s", what,
	      (long long)(ts_ns(&cur.it_value) / MS));
	timer_delete(id);
	signal(SIGALRM, SIG_DFL);
}

/* sysinfo, /proc/uptime and /proc/self/stat's start time tell one story. */
static void uptimes(void)
{
	struct sysinfo si;
	double up = -1, idle;
	unsigned long long start = 0;
	long tck = sysconf(_SC_CLK_TCK);
	char buf[4096], *p;
	FILE *f;
	size_t n;

	CHECK_RET(sysinfo(&si), 0);
	f = fopen("/proc/uptime", "r");
	CHECK(f != NULL, "/proc/uptime: %s", strerror(errno));
	if (!f)
		return;
	CHECK(fscanf(f, "%lf %lf", &up, &idle) == 2, "/proc/uptime unreadable");
	fclose(f);
	CHECK(up >= si.uptime - 2 && up <= si.uptime + 2, "/proc/uptime %.2f, sysinfo %ld", up,
	      si.uptime);
	f = fopen("/proc/self/stat", "r");
	CHECK(f != NULL, "/proc/self/stat: %s", strerror(errno));
	if (!f)
		return;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* Field 22, counted after the command's closing parenthesis (field 2). */
	p = strrchr(buf, ')');
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	CHECK(p && sscanf(p + 1, "%llu", &start) == 1, "/proc/self/stat: no start time");
	/* This process started a moment ago: its start time is just below the uptime. */
	CHECK((double)start / (double)tck <= up + 1 && (double)start / (double)tck > up - 60,
	      "start time %.2f s, uptime %.2f s", (double)start / (double)tck, up);
}

int main(void)
{
	reads_agree();
	nanosleep_abs(CLOCK_MONOTONIC, "clock_nanosleep MONOTONIC");
	nanosleep_abs(CLOCK_BOOTTIME, "clock_nanosleep BOOTTIME");
	futex_abs();
	timerfd_abs(CLOCK_MONOTONIC, "timerfd MONOTONIC");
	timerfd_abs(CLOCK_BOOTTIME, "timerfd BOOTTIME");
	posix_timer_abs(CLOCK_MONOTONIC, "timer MONOTONIC");
	posix_timer_abs(CLOCK_BOOTTIME, "timer BOOTTIME");
	uptimes();
	reads_agree();
	return finish();
}
