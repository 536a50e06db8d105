/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPU time accounting: CLOCK_PROCESS_CPUTIME_ID and CLOCK_THREAD_CPUTIME_ID advance while the
 * program burns CPU, and getrusage, times, /proc/PID/stat, wait4's and waitid's rusage, CPU
 * clocks of other processes and threads and ru_maxrss agree.
 *
 * Every busy loop ends when a CPU clock has advanced by BURN_NS, or fails after a generous
 * wall-clock time (a CPU clock that does not advance must fail the test, not hang it). Only lower
 * bounds are checked, and only for CPU time the program itself burned; every figure gets some
 * slack below BURN_NS for the rounding of the interfaces (ticks, microseconds).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/times.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define BURN_NS 100000000LL /* 100 ms */
#define SLACK_NS 80000000LL /* what a 100 ms burn must at least show as */
#define SLACK_TICKS 8 /* the same in clock ticks (USER_HZ 100), truncation allowed for */
#define WALL_LIMIT_S 120 /* a busy loop that takes longer fails */
#define BIG (64L << 20)
#define EARLIEST \
	20000000LL /* a 50 ms CPU timer may not fire before (see test_timers) */ /* touched to see ru_maxrss grow */

static volatile uint64_t sink;

static int64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	if (clock_gettime(c, &ts) < 0)
		return -1;
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t tv_ns(const struct timeval *tv)
{
	return (int64_t)tv->tv_sec * 1000000000LL + (int64_t)tv->tv_usec * 1000;
}

static int64_t ru_ns(const struct rusage *ru)
{
	return tv_ns(&ru->ru_utime) + tv_ns(&ru->ru_stime);
}

/*
 * Runs a pure computation until clock c has advanced by ns. Returns false (after the wall-clock
 * limit) if it never does.
 */
static bool burn(clockid_t c, int64_t ns)
{
	int64_t start = clock_ns(c),
		wall_end = clock_ns(CLOCK_MONOTONIC) + WALL_LIMIT_S * 1000000000LL;
	uint64_t x = 1;

	if (start < 0)
		return false;
	for (;;) {
		/* Mostly user time: the clock is read every million steps only. */
		for (int i = 0; i < 1000000; i++)
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		sink = x;
		int64_t now = clock_ns(c);

		if (now < 0)
			return false;
		if (now - start >= ns)
			return true;
		if (clock_ns(CLOCK_MONOTONIC) > wall_end)
			return false;
	}
}

/* utime + stime (fields 14 and 15) and cutime + cstime (16, 17) of a /proc stat file, in ticks. */
static bool proc_stat_ticks(const char *path, long long *self, long long *children)
{
	char buf[1024], *p;
	long long f[4];
	FILE *fp = fopen(path, "r");
	size_t n;

	if (!fp)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = 0;
	p = strrchr(buf, ')'); /* the name may hold spaces */
	if (!p)
		return false;
	/* After ") ": state(3) ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt. */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lld %lld %lld %lld", &f[0],
		   &f[1], &f[2], &f[3]) != 4)
		return false;
	*self = f[0] + f[1];
	*children = f[2] + f[3];
	return true;
}

/* The process's own CPU clock, the thread's, and the figures that must agree with them. */
static void test_self(void)
{
	struct rusage ru0, ru1, ruth;
	struct tms tm0, tm1;
	struct timespec res;
	long long st0, st1, c;
	int64_t p0, p1, th1, p2;

	CHECK(clock_getres(CLOCK_PROCESS_CPUTIME_ID, &res) == 0 && (res.tv_sec || res.tv_nsec),
	      "clock_getres(CLOCK_PROCESS_CPUTIME_ID): %s", strerror(errno));
	CHECK(clock_getres(CLOCK_THREAD_CPUTIME_ID, &res) == 0 && (res.tv_sec || res.tv_nsec),
	      "clock_getres(CLOCK_THREAD_CPUTIME_ID): %s", strerror(errno));
	CHECK_OK(getrusage(RUSAGE_SELF, &ru0));
	CHECK_OK(times(&tm0));
	CHECK(proc_stat_ticks("/proc/self/stat", &st0, &c), "cannot parse /proc/self/stat");
	p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	CHECK(p0 >= 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID): %s", strerror(errno));

	CHECK(burn(CLOCK_PROCESS_CPUTIME_ID, BURN_NS),
	      "CLOCK_PROCESS_CPUTIME_ID did not advance by 100 ms in %d s of busy loop",
	      WALL_LIMIT_S);

	/* Read in this order, each is at least the one before (thread <= process). */
	th1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	p1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	CHECK_OK(getrusage(RUSAGE_SELF, &ru1));
	CHECK_OK(getrusage(RUSAGE_THREAD, &ruth));
	CHECK_OK(times(&tm1));
	CHECK(proc_stat_ticks("/proc/self/stat", &st1, &c), "cannot parse /proc/self/stat");
	p2 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);

	CHECK(p1 - p0 >= BURN_NS, "process clock advanced by %lld ns", (long long)(p1 - p0));
	CHECK(th1 >= SLACK_NS, "thread clock %lld ns after burning 100 ms", (long long)th1);
	CHECK(p1 >= th1, "process clock %lld < thread clock %lld", (long long)p1, (long long)th1);
	CHECK(p2 >= p1, "process clock went back: %lld then %lld", (long long)p1, (long long)p2);
	CHECK(ru_ns(&ru1) - ru_ns(&ru0) >= SLACK_NS, "getrusage(RUSAGE_SELF) grew by %lld ns",
	      (long long)(ru_ns(&ru1) - ru_ns(&ru0)));
	CHECK(ru_ns(&ru1) >= ru_ns(&ru0), "getrusage went back");
	/* A pure computation: most of it is user time. */
	CHECK(tv_ns(&ru1.ru_utime) - tv_ns(&ru0.ru_utime) >= BURN_NS / 5,
	      "ru_utime grew by %lld ns only after a 100 ms busy loop",
	      (long long)(tv_ns(&ru1.ru_utime) - tv_ns(&ru0.ru_utime)));
	CHECK(ru_ns(&ruth) >= SLACK_NS, "getrusage(RUSAGE_THREAD) %lld ns",
	      (long long)ru_ns(&ruth));
	CHECK(ru_ns(&ruth) <= ru_ns(&ru1) + 10000000LL,
	      "RUSAGE_THREAD %lld ns well above RUSAGE_SELF %lld ns", (long long)ru_ns(&ruth),
	      (long long)ru_ns(&ru1));
	CHECK((tm1.tms_utime + tm1.tms_stime) - (tm0.tms_utime + tm0.tms_stime) >= SLACK_TICKS,
	      "times() grew by %ld ticks",
	      (long)((tm1.tms_utime + tm1.tms_stime) - (tm0.tms_utime + tm0.tms_stime)));
	CHECK(st1 - st0 >= SLACK_TICKS, "/proc/self/stat utime+stime grew by %lld ticks",
	      st1 - st0);
	/* The same figure, in three units: within a tick or two of each other. */
	CHECK(llabs(st1 - (long long)(ru_ns(&ru1) / 10000000LL)) <= 3,
	      "/proc/self/stat %lld ticks, getrusage %lld ns", st1, (long long)ru_ns(&ru1));
	CHECK(llabs((long long)(tm1.tms_utime + tm1.tms_stime) - st1) <= 3,
	      "times() %ld ticks, /proc/self/stat %lld", (long)(tm1.tms_utime + tm1.tms_stime),
	      st1);
}

/* A child's time shows in RUSAGE_CHILDREN, times(), /proc/self/stat and wait4's rusage. */
static void test_child_wait4(void)
{
	struct rusage rc0, rc1, rw;
	struct tms tm0, tm1;
	long long s, c0, c1;
	int status = 0;
	pid_t pid;

	CHECK_OK(getrusage(RUSAGE_CHILDREN, &rc0));
	CHECK_OK(times(&tm0));
	CHECK(proc_stat_ticks("/proc/self/stat", &s, &c0), "cannot parse /proc/self/stat");
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(burn(CLOCK_PROCESS_CPUTIME_ID, BURN_NS) ? 0 : 1);
	CHECK(pid > 0, "fork: %s", strerror(errno));
	if (pid <= 0)
		return;
	CHECK_RET(wait4(pid, &status, 0, &rw), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the child's CPU clock did not advance (status %#x)", status);
	CHECK(ru_ns(&rw) >= SLACK_NS, "wait4's rusage has %lld ns", (long long)ru_ns(&rw));
	CHECK(tv_ns(&rw.ru_utime) >= BURN_NS / 5, "wait4's ru_utime %lld ns",
	      (long long)tv_ns(&rw.ru_utime));
	CHECK_OK(getrusage(RUSAGE_CHILDREN, &rc1));
	CHECK(ru_ns(&rc1) - ru_ns(&rc0) >= SLACK_NS, "RUSAGE_CHILDREN grew by %lld ns",
	      (long long)(ru_ns(&rc1) - ru_ns(&rc0)));
	CHECK_OK(times(&tm1));
	CHECK((tm1.tms_cutime + tm1.tms_cstime) - (tm0.tms_cutime + tm0.tms_cstime) >= SLACK_TICKS,
	      "times() cutime+cstime grew by %ld ticks",
	      (long)((tm1.tms_cutime + tm1.tms_cstime) - (tm0.tms_cutime + tm0.tms_cstime)));
	CHECK(proc_stat_ticks("/proc/self/stat", &s, &c1), "cannot parse /proc/self/stat");
	CHECK(c1 - c0 >= SLACK_TICKS, "/proc/self/stat cutime+cstime grew by %lld ticks", c1 - c0);
}

/* waitid(2)'s rusage (the raw call's fifth argument; si_utime/si_stime stay unset). */
static void test_child_waitid(void)
{
	struct rusage rw;
	siginfo_t si;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(burn(CLOCK_PROCESS_CPUTIME_ID, BURN_NS) ? 0 : 1);
	CHECK(pid > 0, "fork: %s", strerror(errno));
	if (pid <= 0)
		return;
	memset(&si, 0, sizeof(si));
	memset(&rw, 0, sizeof(rw));
	CHECK_RET(syscall(SYS_waitid, P_PID, pid, &si, WEXITED, &rw), 0);
	CHECK(si.si_pid == pid && si.si_code == CLD_EXITED && si.si_status == 0,
	      "waitid: pid %d code %d status %d", si.si_pid, si.si_code, si.si_status);
	CHECK(ru_ns(&rw) >= SLACK_NS, "waitid's rusage has %lld ns", (long long)ru_ns(&rw));
}

/* The CPU clock of another process (clock_getcpuclockid) and its /proc/PID/stat. */
static void test_other_process(void)
{
	char path[64], c;
	long long self, children;
	int p[2], q[2], status;
	clockid_t clk;
	struct timespec res;
	int64_t ns;
	pid_t pid;

	if (pipe(p) < 0 || pipe(q) < 0) {
		CHECK(0, "pipe: %s", strerror(errno));
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		c = burn(CLOCK_PROCESS_CPUTIME_ID, BURN_NS) ? 'y' : 'n';
		if (write(p[1], &c, 1) != 1 || read(q[0], &c, 1) != 1)
			_exit(2);
		_exit(0);
	}
	CHECK(pid > 0, "fork: %s", strerror(errno));
	if (pid <= 0)
		return;
	close(p[1]);
	close(q[0]);
	CHECK(read(p[0], &c, 1) == 1 && c == 'y', "the child's CPU clock did not advance");
	CHECK_RET(clock_getcpuclockid(pid, &clk), 0);
	CHECK(clock_getres(clk, &res) == 0, "clock_getres of the child's clock: %s",
	      strerror(errno));
	ns = clock_ns(clk);
	CHECK(ns >= BURN_NS, "the child's CPU clock reads %lld ns", (long long)ns);
	/* A thread clock names a thread of the caller's own process only. */
	CHECK_ERR(clock_gettime((clockid_t)((~(unsigned)pid << 3) | 6), &res), EINVAL);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	CHECK(proc_stat_ticks(path, &self, &children) && self >= SLACK_TICKS,
	      "%s: utime+stime %lld ticks", path, self);
	CHECK(write(q[1], "x", 1) == 1, "write: %s", strerror(errno));
	CHECK_RET(waitpid(pid, &status, 0), pid);
	close(p[0]);
	close(q[1]);
}

struct burner {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stage; /* 1: burnt, waiting; 2: may exit */
	bool ok;
	int64_t own_ns; /* its CLOCK_THREAD_CPUTIME_ID when it had burnt */
	struct rusage ru; /* its RUSAGE_THREAD then */
	pid_t tid;
};

static void *burner_main(void *arg)
{
	struct burner *b = arg;

	b->tid = gettid();
	b->ok = burn(CLOCK_THREAD_CPUTIME_ID, BURN_NS);
	b->own_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	getrusage(RUSAGE_THREAD, &b->ru);
	pthread_mutex_lock(&b->lock);
	b->stage = 1;
	pthread_cond_broadcast(&b->cond);
	while (b->stage != 2)
		pthread_cond_wait(&b->cond, &b->lock);
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

/* A thread's own clock, its clock seen from another thread, its /proc stat, and its time
 * staying in the process's after it exits. */
static void test_thread(void)
{
	struct burner b = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	struct rusage ru0, ru1;
	long long self, children;
	char path[96];
	pthread_t th;
	clockid_t clk;
	int64_t p0, p1, mine0, mine1, ns;

	CHECK_OK(getrusage(RUSAGE_SELF, &ru0));
	p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	mine0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	if (pthread_create(&th, NULL, burner_main, &b) != 0) {
		CHECK(0, "pthread_create failed");
		return;
	}
	pthread_mutex_lock(&b.lock);
	while (b.stage != 1)
		pthread_cond_wait(&b.cond, &b.lock);
	pthread_mutex_unlock(&b.lock);
	CHECK(b.ok, "the thread's CPU clock did not advance by 100 ms");
	CHECK(b.own_ns >= BURN_NS, "the thread's clock %lld", (long long)b.own_ns);
	CHECK(ru_ns(&b.ru) >= SLACK_NS, "the thread's RUSAGE_THREAD %lld ns",
	      (long long)ru_ns(&b.ru));

	CHECK_RET(pthread_getcpuclockid(th, &clk), 0);
	ns = clock_ns(clk);
	CHECK(ns >= b.own_ns, "the thread's clock seen from main: %lld, its own read: %lld",
	      (long long)ns, (long long)b.own_ns);
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)b.tid);
	CHECK(proc_stat_ticks(path, &self, &children) && self >= SLACK_TICKS,
	      "%s: utime+stime %lld ticks", path, self);
	/* The main thread only waited: its own time is not the burner's. */
	mine1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	CHECK(mine1 - mine0 < ns, "main thread's clock grew by %lld while the other burnt %lld",
	      (long long)(mine1 - mine0), (long long)ns);

	pthread_mutex_lock(&b.lock);
	b.stage = 2;
	pthread_cond_broadcast(&b.cond);
	pthread_mutex_unlock(&b.lock);
	pthread_join(th, NULL);

	p1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	CHECK(p1 - p0 >= BURN_NS, "process clock grew by %lld ns over a thread's 100 ms",
	      (long long)(p1 - p0));
	CHECK_OK(getrusage(RUSAGE_SELF, &ru1));
	CHECK(ru_ns(&ru1) - ru_ns(&ru0) >= SLACK_NS,
	      "RUSAGE_SELF grew by %lld ns over an exited thread's 100 ms",
	      (long long)(ru_ns(&ru1) - ru_ns(&ru0)));
}

static void touch(char *p, long len)
{
	for (long i = 0; i < len; i += 4096)
		p[i] = 1;
}

/* ru_maxrss of the process, and of a child in wait4's rusage and RUSAGE_CHILDREN. */
static void test_maxrss(void)
{
	struct rusage r0, r1, rw, rc;
	int status;
	char *p;
	pid_t pid;

	CHECK_OK(getrusage(RUSAGE_SELF, &r0));
	p = mmap(NULL, BIG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED, "mmap: %s", strerror(errno));
	if (p == MAP_FAILED)
		return;
	touch(p, BIG);
	munmap(p, BIG);
	/* A peak, not the current size: it stays after the unmap; an earlier one (thread
	 * stacks, arenas) may be higher. */
	CHECK_OK(getrusage(RUSAGE_SELF, &r1));
	CHECK(r1.ru_maxrss >= (BIG >> 10) * 3 / 4 && r1.ru_maxrss >= r0.ru_maxrss,
	      "ru_maxrss %ld KiB before touching (and unmapping) 64 MiB, %ld after", r0.ru_maxrss,
	      r1.ru_maxrss);

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		char *q =
			mmap(NULL, BIG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (q == MAP_FAILED)
			_exit(1);
		touch(q, BIG);
		munmap(q, BIG); /* the peak is what counts */
		_exit(0);
	}
	CHECK(pid > 0, "fork: %s", strerror(errno));
	if (pid <= 0)
		return;
	CHECK_RET(wait4(pid, &status, 0, &rw), pid);
	CHECK(rw.ru_maxrss >= (BIG >> 10) * 3 / 4, "wait4's ru_maxrss %ld KiB", rw.ru_maxrss);
	CHECK_OK(getrusage(RUSAGE_CHILDREN, &rc));
	CHECK(rc.ru_maxrss >= rw.ru_maxrss, "RUSAGE_CHILDREN ru_maxrss %ld KiB, the child's %ld",
	      rc.ru_maxrss, rw.ru_maxrss);
}

static volatile sig_atomic_t got_sig[65];
static volatile int64_t sig_clock[65]; /* the process's CPU clock when it came */

static void on_sig(int sig)
{
	if (!got_sig[sig])
		sig_clock[sig] = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	got_sig[sig]++;
}

/* Busy until signal sig came, the CPU clock advanced by limit_ns, or the wall-clock limit. */
static bool burn_until_signal(int sig, int64_t limit_ns)
{
	int64_t start = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	int64_t wall_end = clock_ns(CLOCK_MONOTONIC) + WALL_LIMIT_S * 1000000000LL;
	uint64_t x = 1;

	while (!got_sig[sig]) {
		for (int i = 0; i < 100000 && !got_sig[sig]; i++)
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		sink = x;
		if (clock_ns(CLOCK_PROCESS_CPUTIME_ID) - start > limit_ns ||
		    clock_ns(CLOCK_MONOTONIC) > wall_end)
			break;
	}
	return got_sig[sig];
}

static void catch_sig(int sig)
{
	struct sigaction sa = { .sa_handler = on_sig };

	sigemptyset(&sa.sa_mask);
	got_sig[sig] = 0;
	sigaction(sig, &sa, NULL);
}

/*
 * setitimer(ITIMER_VIRTUAL/ITIMER_PROF) and timer_create on the CPU clocks fire as CPU time
 * passes, not as wall time does. Linux counts the itimers in ticks, which run ahead of the
 * CPU clock on a busy machine: a 50 ms timer is only required to come after 20 ms.
 */
static void test_timers(void)
{
	struct itimerval it = { .it_value = { 0, 50000 } }, cur;
	struct itimerspec its = { .it_value = { 0, 50000000 } }, icur;
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL };
	int64_t p0;
	timer_t tm;

	/* ITIMER_VIRTUAL: user time. */
	catch_sig(SIGVTALRM);
	p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	it.it_value.tv_usec = 50000;
	CHECK_RET(setitimer(ITIMER_VIRTUAL, &it, NULL), 0);
	CHECK(burn_until_signal(SIGVTALRM, 20 * BURN_NS), "no SIGVTALRM after 2 s of CPU time");
	CHECK(sig_clock[SIGVTALRM] - p0 >= EARLIEST, "SIGVTALRM after %lld ns of CPU time",
	      (long long)(sig_clock[SIGVTALRM] - p0));

	/* ITIMER_PROF: user and system time. */
	catch_sig(SIGPROF);
	p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	CHECK_RET(setitimer(ITIMER_PROF, &it, NULL), 0);
	CHECK(burn_until_signal(SIGPROF, 20 * BURN_NS), "no SIGPROF after 2 s of CPU time");
	CHECK(sig_clock[SIGPROF] - p0 >= EARLIEST, "SIGPROF after %lld ns of CPU time",
	      (long long)(sig_clock[SIGPROF] - p0));

	/* Not while the process sleeps: 1 s of CPU time does not pass in a 100 ms sleep. */
	catch_sig(SIGVTALRM);
	it.it_value = (struct timeval){ 1, 0 };
	CHECK_RET(setitimer(ITIMER_VIRTUAL, &it, NULL), 0);
	usleep(100000);
	CHECK(!got_sig[SIGVTALRM], "ITIMER_VIRTUAL of 1 s fired during a 100 ms sleep");
	CHECK_RET(getitimer(ITIMER_VIRTUAL, &cur), 0);
	/* Rounded to the tick by Linux: no more than the second set, give or take one. */
	CHECK(cur.it_value.tv_sec * 1000000 + cur.it_value.tv_usec > 0 &&
		      cur.it_value.tv_sec * 1000000 + cur.it_value.tv_usec <= 1100000,
	      "getitimer(ITIMER_VIRTUAL) left %ld.%06ld s", (long)cur.it_value.tv_sec,
	      (long)cur.it_value.tv_usec);
	it.it_value = (struct timeval){ 0, 0 };
	CHECK_RET(setitimer(ITIMER_VIRTUAL, &it, NULL), 0);

	/* timer_create on the process's CPU clock. */
	catch_sig(SIGUSR1);
	sev.sigev_signo = SIGUSR1;
	CHECK_RET(timer_create(CLOCK_PROCESS_CPUTIME_ID, &sev, &tm), 0);
	p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	CHECK_RET(timer_settime(tm, 0, &its, NULL), 0);
	CHECK_RET(timer_gettime(tm, &icur), 0);
	CHECK(icur.it_value.tv_sec == 0 && icur.it_value.tv_nsec > 0 &&
		      icur.it_value.tv_nsec <= 50000000,
	      "timer_gettime: %ld.%09ld s left", (long)icur.it_value.tv_sec, icur.it_value.tv_nsec);
	CHECK(burn_until_signal(SIGUSR1, 20 * BURN_NS),
	      "no signal from a CLOCK_PROCESS_CPUTIME_ID timer after 2 s of CPU time");
	CHECK(sig_clock[SIGUSR1] - p0 >= EARLIEST, "the process CPU timer fired after %lld ns",
	      (long long)(sig_clock[SIGUSR1] - p0));
	timer_delete(tm);

	/* ... and on the thread's. */
	catch_sig(SIGUSR2);
	sev.sigev_signo = SIGUSR2;
	CHECK_RET(timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &tm), 0);
	p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	CHECK_RET(timer_settime(tm, 0, &its, NULL), 0);
	CHECK(burn_until_signal(SIGUSR2, 20 * BURN_NS),
	      "no signal from a CLOCK_THREAD_CPUTIME_ID timer after 2 s of CPU time");
	CHECK(sig_clock[SIGUSR2] - p0 >= EARLIEST, "the thread CPU timer fired after %lld ns",
	      (long long)(sig_clock[SIGUSR2] - p0));
	timer_delete(tm);
}

static volatile int spin_stop;

static void *spinner(void *arg)
{
	int64_t wall_end = clock_ns(CLOCK_MONOTONIC) + WALL_LIMIT_S * 1000000000LL;
	uint64_t x = 1;

	(void)arg;
	while (!spin_stop && clock_ns(CLOCK_MONOTONIC) < wall_end) {
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		sink = x;
	}
	return NULL;
}

/* clock_nanosleep on the process's CPU clock ends as another thread burns CPU. */
static void test_cpu_sleep(void)
{
	struct timespec req = { 0, 50000000 };
	pthread_t th;
	int64_t p0, p1, p2;
	int r;

	spin_stop = 0;
	if (pthread_create(&th, NULL, spinner, NULL) != 0) {
		CHECK(0, "pthread_create failed");
		return;
	}
	catch_sig(SIGALRM); /* a broken sleep ends in EINTR */
	alarm(WALL_LIMIT_S);
	p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	r = clock_nanosleep(CLOCK_PROCESS_CPUTIME_ID, 0, &req, NULL);
	p1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	CHECK(r == 0, "relative sleep of 50 ms on CLOCK_PROCESS_CPUTIME_ID: %s", strerror(r));
	CHECK(p1 - p0 >= 50000000LL, "the process clock advanced by %lld ns during it",
	      (long long)(p1 - p0));
	req.tv_nsec = (p1 + 50000000LL) % 1000000000LL;
	req.tv_sec = (p1 + 50000000LL) / 1000000000LL;
	r = clock_nanosleep(CLOCK_PROCESS_CPUTIME_ID, TIMER_ABSTIME, &req, NULL);
	p2 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	CHECK(r == 0, "absolute sleep on CLOCK_PROCESS_CPUTIME_ID: %s", strerror(r));
	CHECK(p2 >= p1 + 50000000LL, "woke at %lld ns, the target was %lld", (long long)p2,
	      (long long)(p1 + 50000000LL));
	alarm(0);
	spin_stop = 1;
	pthread_join(th, NULL);
}

/* RLIMIT_CPU: SIGXCPU at the soft limit (1 s), SIGKILL at the hard one (2 s). */
static void test_rlimit_cpu(void)
{
	int status = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct rlimit rl = { 1, 2 };

		catch_sig(SIGXCPU);
		if (setrlimit(RLIMIT_CPU, &rl) < 0)
			_exit(3);
		if (!burn_until_signal(SIGXCPU, 10 * 10 * BURN_NS))
			_exit(4);
		/* Linux counts the limit in ticks, which run ahead of the clock on a busy machine. */
		if (sig_clock[SIGXCPU] < 500000000LL)
			_exit(5);
		/* Past the hard limit: SIGKILL. */
		burn(CLOCK_PROCESS_CPUTIME_ID, 10 * 10 * BURN_NS);
		_exit(6);
	}
	CHECK(pid > 0, "fork: %s", strerror(errno));
	if (pid <= 0)
		return;
	CHECK_RET(waitpid(pid, &status, 0), pid);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	      "RLIMIT_CPU 1 s/2 s: status %#x (exit 4: no SIGXCPU, 5: SIGXCPU before 1 s, 6: no "
	      "SIGKILL)",
	      status);
}

/* Invalid CPU clocks. */
static void test_errors(void)
{
	clockid_t clk;

	CHECK_ERR(syscall(SYS_getrusage, 7, &(struct rusage){ 0 }), EINVAL);
	/* A pid that does not exist. */
	CHECK(clock_getcpuclockid(0x3ffffff0, &clk) != 0, "clock_getcpuclockid of no process");
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_self();
	test_child_wait4();
	test_child_waitid();
	test_other_process();
	test_thread();
	test_maxrss();
	test_timers();
	test_cpu_sleep();
	test_rlimit_cpu();
	test_errors();
	return finish();
}
