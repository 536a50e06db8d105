/* SPDX-License-Identifier: Apache-2.0 */
/* nanosleep, clock_nanosleep: interruption by a handled signal (EINTR + rem), TIMER_ABSTIME,
 * restart after a stop-free ignored signal; alarm/setitimer/getitimer/timer_* drive them. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

#include "check.h"

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	alarms++;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct timespec req = { 5, 0 }, rem = { -1, -1 };
	struct itimerval itv = { { 0, 0 }, { 0, 200000 } }, cur;
	struct sigevent sev = { 0 };
	struct itimerspec its = { { 0, 0 }, { 0, 100000000 } }, ocur;
	/* The raw timer_create writes a 4-byte kernel id: the rest of glibc's 8-byte timer_t must be
	 * zero, or glibc's timer_settime takes stack garbage for a pointer (a native SIGSEGV seen
	 * in CI). */
	timer_t tid = 0;
	int64_t t0;

	sigaction(SIGALRM, &sa, NULL);

	/* An alarm in 200 ms interrupts a 5 s nanosleep: EINTR, and rem holds about 4.8 s. */
	CHECK_RET(setitimer(ITIMER_REAL, &itv, NULL), 0);
	CHECK_RET(getitimer(ITIMER_REAL, &cur), 0);
	CHECK(cur.it_value.tv_sec == 0 && cur.it_value.tv_usec > 0, "getitimer %ld.%06ld",
	      (long)cur.it_value.tv_sec, (long)cur.it_value.tv_usec);
	t0 = mono_ms();
	CHECK_ERR(syscall(SYS_nanosleep, &req, &rem), EINTR);
	CHECK(mono_ms() - t0 < 4000, "slept %lld ms", (long long)(mono_ms() - t0));
	CHECK(alarms == 1, "alarms %d", (int)alarms);
	CHECK(rem.tv_sec >= 3 && rem.tv_sec <= 4 && rem.tv_nsec >= 0 && rem.tv_nsec < 1000000000,
	      "rem %ld.%09ld", (long)rem.tv_sec, rem.tv_nsec);

	/* alarm(2): returns the seconds left of the previous one, rounded. */
	CHECK_RET(alarm(100), 0);
	CHECK_RET(alarm(0), 100);

	/* A POSIX timer (SIGEV_SIGNAL) interrupts clock_nanosleep with TIMER_ABSTIME: EINTR. */
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = SIGALRM;
	CHECK_RET(syscall(SYS_timer_create, CLOCK_MONOTONIC, &sev, &tid), 0);
	CHECK_RET(timer_settime(tid, 0, &its, NULL), 0);
	CHECK_RET(timer_gettime(tid, &ocur), 0);
	CHECK(ocur.it_value.tv_sec == 0 && ocur.it_value.tv_nsec > 0, "timer_gettime %ld",
	      ocur.it_value.tv_nsec);
	clock_gettime(CLOCK_MONOTONIC, &req);
	req.tv_sec += 5;
	CHECK_RET(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &req, NULL), EINTR);
	CHECK(alarms == 2, "alarms %d", (int)alarms);
	CHECK_RET(timer_getoverrun(tid), 0);
	CHECK_RET(timer_delete(tid), 0);
	CHECK_ERR(syscall(SYS_timer_delete, tid), EINVAL);

	/* Absolute deadline already passed: returns at once. */
	clock_gettime(CLOCK_MONOTONIC, &req);
	CHECK_RET(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &req, NULL), 0);
	/* A short relative sleep completes. */
	req = (struct timespec){ 0, 20000000 };
	t0 = mono_ms();
	CHECK_RET(nanosleep(&req, NULL), 0);
	CHECK(mono_ms() - t0 >= 19, "slept only %lld ms", (long long)(mono_ms() - t0));

	/* With SA_RESTART and an ignored-by-handler signal, nanosleep still returns EINTR (it is
	 * never restarted transparently when a handler ran). */
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	itv.it_value.tv_usec = 100000;
	setitimer(ITIMER_REAL, &itv, NULL);
	req = (struct timespec){ 3, 0 };
	CHECK_ERR(syscall(SYS_nanosleep, &req, NULL), EINTR);

	/* A periodic itimer fires repeatedly. */
	alarms = 0;
	itv = (struct itimerval){ { 0, 20000 }, { 0, 20000 } };
	setitimer(ITIMER_REAL, &itv, NULL);
	t0 = mono_ms();
	while (alarms < 3 && mono_ms() - t0 < 5000)
		pause();
	CHECK(alarms >= 3, "periodic alarms %d", (int)alarms);
	itv = (struct itimerval){ { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &itv, &cur);
	CHECK(cur.it_interval.tv_usec == 20000, "old interval %ld", (long)cur.it_interval.tv_usec);
	CHECK_ERR(setitimer(5, &itv, NULL), EINVAL);
	return finish();
}
