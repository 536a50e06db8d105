/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every timeout-taking call counts its time as Linux does: relative or absolute, on which clock,
 * TIMER_ABSTIME or not. nanosleep, clock_nanosleep, poll, ppoll, select, pselect6, epoll_wait,
 * epoll_pwait2, rt_sigtimedwait, semtimedop, mq_timedsend/mq_timedreceive, recvmmsg, SO_RCVTIMEO,
 * io_getevents, futex_waitv, timer_settime, timerfd_settime, setitimer.
 *
 * Only lower bounds are checked: a 200 ms wait must not end before 200 ms have passed on its
 * clock. An absolute time on the wrong clock shows as a wait that ends at once (a relative
 * time read as absolute) or as one that never ends (a monotonic time read as realtime the
 * other way round is decades in the past, so those must end at once): a watchdog thread fails
 * the program after 120 s instead of letting it hang.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/futex.h>
#include <mqueue.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/ipc.h>
#include <sys/select.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <time.h>

#include "check.h"

#define NSEC_PER_SEC 1000000000LL
#define MS 1000000LL
#define WAIT (200 * MS)

static int64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static struct timespec ts_of(int64_t ns)
{
	return (struct timespec){ (time_t)(ns / NSEC_PER_SEC), (long)(ns % NSEC_PER_SEC) };
}

/* A wait of WAIT that started at start (on clock) must not have ended before start + WAIT. */
#define CHECK_WAITED(clock, start, what)                                                          \
	do {                                                                                      \
		int64_t _el = now_ns(clock) - (start);                                            \
		CHECK(_el >= WAIT, "%s ended after %lld ms of %lld", what, (long long)(_el / MS), \
		      (long long)(WAIT / MS));                                                    \
	} while (0)

/* An absolute wait until end (on clock) must not have ended before it; REALTIME ones allow for
 * the clock set back since rt_off was read (check.h). */
#define CHECK_REACHED(clock, end, what)                                                           \
	do {                                                                                      \
		int64_t _n = now_ns(clock);                                                       \
		if ((clock) == CLOCK_REALTIME)                                                    \
			_n += realtime_set_back_ns(rt_off);                                       \
		CHECK(_n >= (end), "%s ended %lld ms early", what, (long long)(((end)-_n) / MS)); \
	} while (0)

/* REALTIME minus MONOTONIC when the last deadline was taken (check.h). */
static int64_t rt_off;

/* now + WAIT on clock, noting rt_off. */
static int64_t deadline_in(clockid_t clock)
{
	rt_off = realtime_offset_ns();
	return now_ns(clock) + WAIT;
}

static void *watchdog(void *arg)
{
	struct timespec ts = { 120, 0 };

	(void)arg;
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
	printf("FAIL timeouts.c: a wait did not end within 120 s\n");
	printf("%d passed, %d failed\n", checks_passed, checks_failed + 1);
	fflush(stdout);
	_exit(1);
}

static void check_sleeps(void)
{
	struct timespec ts;
	int64_t t0, end;

	ts = ts_of(WAIT);
	t0 = now_ns(CLOCK_MONOTONIC);
	CHECK_RET(syscall(SYS_nanosleep, &ts, NULL), 0);
	CHECK_WAITED(CLOCK_MONOTONIC, t0, "nanosleep");

	/* clock_nanosleep: relative on each clock, absolute with TIMER_ABSTIME. */
	static const clockid_t clocks[] = { CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_BOOTTIME };
	for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++) {
		ts = ts_of(WAIT);
		t0 = now_ns(CLOCK_MONOTONIC);
		CHECK_RET(syscall(SYS_clock_nanosleep, clocks[i], 0, &ts, NULL), 0);
		CHECK_WAITED(CLOCK_MONOTONIC, t0, "relative clock_nanosleep");
		end = deadline_in(clocks[i]);
		ts = ts_of(end);
		CHECK_RET(syscall(SYS_clock_nanosleep, clocks[i], TIMER_ABSTIME, &ts, NULL), 0);
		CHECK_REACHED(clocks[i], end, "absolute clock_nanosleep");
	}
	/* A monotonic time taken as a realtime deadline is long past: at once. */
	ts = ts_of(now_ns(CLOCK_MONOTONIC) + 3600 * NSEC_PER_SEC);
	CHECK_RET(syscall(SYS_clock_nanosleep, CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL), 0);
}

static void check_polls(void)
{
	struct timespec ts;
	struct timeval tv;
	int64_t t0;
	int ep;

	t0 = now_ns(CLOCK_MONOTONIC);
	CHECK_RET(poll(NULL, 0, (int)(WAIT / MS)), 0);
	CHECK_WAITED(CLOCK_MONOTONIC, t0, "poll");

	/* ppoll and pselect6 are relative, and write back the time left (none). */
	ts = ts_of(WAIT);
	t0 = now_ns(CLOCK_MONOTONIC);
	CHECK_RET(syscall(SYS_ppoll, NULL, 0, &ts, NULL, 8), 0);
	CHECK_WAITED(CLOCK_MONOTONIC, t0, "ppoll");
	CHECK(ts.tv_sec == 0 && ts.tv_nsec == 0, "ppoll left %ld.%09ld", (long)ts.tv_sec,
	      ts.tv_nsec);
	ts = ts_of(WAIT);
	t0 = now_ns(CLOCK_MONOTONIC);
	CHECK_RET(syscall(SYS_pselect6, 0, NULL, NULL, NULL, &ts, NULL), 0);
	CHECK_WAITED(CLOCK_MONOTONIC, t0, "pselect6");
	CHECK(ts.tv_sec == 0 && ts.tv_nsec == 0, "pselect6 left %ld.%09ld", (long)ts.tv_sec,
	      ts.tv_nsec);
	tv = (struct timeval){ 0, WAIT / 1000 };
	t0 = now_ns(CLOCK_MONOTONIC);
	CHECK_RET(syscall(SYS_select, 0, NULL, NULL, NULL, &tv), 0);
	CHECK_WAITED(CLOCK_MONOTONIC, t0, "select");
	CHECK(tv.tv_sec == 0 && tv.tv_usec == 0, "select left %ld.%06ld", (long)tv.tv_sec,
	      (long)tv.tv_usec);

	ep = CHECK_OK(epoll_create1(0));
	{
		struct epoll_event ev;

		t0 = now_ns(CLOCK_MONOTONIC);
		CHECK_RET(epoll_wait(ep, &ev, 1, (int)(WAIT / MS)), 0);
		CHECK_WAITED(CLOCK_MONOTONIC, t0, "epoll_wait");
		/* epoll_pwait2's timespec is relative. */
		ts = ts_of(WAIT);
		t0 = now_ns(CLOCK_MONOTONIC);
		CHECK_RET(syscall(SYS_epoll_pwait2, ep, &ev, 1, &ts, NULL, 8), 0);
		CHECK_WAITED(CLOCK_MONOTONIC, t0, "epoll_pwait2");
		ts = (struct timespec){ 0, NSEC_PER_SEC };
		CHECK_ERR(syscall(SYS_epoll_pwait2, ep, &ev, 1, &ts, NULL, 8), EINVAL);
	}
	close(ep);
}

static void check_signals_ipc(void)
{
	struct timespec ts;
	sigset_t set;
	int64_t t0;
	int id;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	sigprocmask(SIG_BLOCK, &set, NULL);
	ts = ts_of(WAIT);
	t0 = now_ns(CLOCK_MONOTONIC);
	CHECK_ERR(syscall(SYS_rt_sigtimedwait, &set, NULL, &ts, 8), EAGAIN);
	CHECK_WAITED(CLOCK_MONOTONIC, t0, "rt_sigtimedwait");
	ts = (struct timespec){ 0, -1 };
	CHECK_ERR(syscall(SYS_rt_sigtimedwait, &set, NULL, &ts, 8), EINVAL);

	/* semtimedop: relative. */
	id = (int)CHECK_OK(semget(IPC_PRIVATE, 1, IPC_CREAT | 0600));
	{
		struct sembuf op = { 0, -1, 0 };

		ts = ts_of(WAIT);
		t0 = now_ns(CLOCK_MONOTONIC);
		CHECK_ERR(semtimedop(id, &op, 1, &ts), EAGAIN);
		CHECK_WAITED(CLOCK_MONOTONIC, t0, "semtimedop");
	}
	semctl(id, 0, IPC_RMID);
}

/* mq_timedsend/mq_timedreceive: absolute CLOCK_REALTIME. */
static void check_mqueue(void)
{
	struct mq_attr attr = { .mq_maxmsg = 1, .mq_msgsize = 8 };
	const char *name = "husk-timeouts-test";
	struct timespec ts;
	char buf[8] = "x";
	int64_t end;
	long q;

	q = syscall(SYS_mq_open, name, O_RDWR | O_CREAT | O_EXCL, 0600, &attr);
	if (q < 0 && errno == EEXIST) {
		syscall(SYS_mq_unlink, name);
		q = syscall(SYS_mq_open, name, O_RDWR | O_CREAT | O_EXCL, 0600, &attr);
	}
	if (q < 0 && errno == ENOSYS) {
		printf("skip: POSIX message queues are not implemented here (ENOSYS)\n");
		return;
	}
	if (q < 0) {
		CHECK(0, "mq_open: %s", strerror(errno));
		return;
	}
	end = deadline_in(CLOCK_REALTIME);
	ts = ts_of(end);
	CHECK_ERR(syscall(SYS_mq_timedreceive, q, buf, sizeof(buf), NULL, &ts), ETIMEDOUT);
	CHECK_REACHED(CLOCK_REALTIME, end, "mq_timedreceive");
	CHECK_RET(syscall(SYS_mq_timedsend, q, buf, 1, 0, NULL), 0);
	end = deadline_in(CLOCK_REALTIME);
	ts = ts_of(end);
	CHECK_ERR(syscall(SYS_mq_timedsend, q, buf, 1, 0, &ts), ETIMEDOUT);
	CHECK_REACHED(CLOCK_REALTIME, end, "mq_timedsend");
	/* A monotonic time is in the realtime past: at once. */
	ts = ts_of(now_ns(CLOCK_MONOTONIC) + 3600 * NSEC_PER_SEC);
	CHECK_ERR(syscall(SYS_mq_timedsend, q, buf, 1, 0, &ts), ETIMEDOUT);
	close((int)q);
	syscall(SYS_mq_unlink, name);
}

/* recvmmsg: the timeout is checked after each datagram; 0 returns what has come. */
static void check_recvmmsg(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	char b0[16], b1[16];
	struct iovec iov[2] = { { b0, sizeof(b0) }, { b1, sizeof(b1) } };
	struct mmsghdr m[2] = { { .msg_hdr = { .msg_iov = &iov[0], .msg_iovlen = 1 } },
				{ .msg_hdr = { .msg_iov = &iov[1], .msg_iovlen = 1 } } };
	struct timespec ts;
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	CHECK(s >= 0, "socket: %s", strerror(errno));
	CHECK_RET(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK_RET(getsockname(s, (struct sockaddr *)&a, &alen), 0);
	CHECK_RET(sendto(s, "one", 3, 0, (struct sockaddr *)&a, sizeof(a)), 3);
	ts = (struct timespec){ 0, 0 };
	/* Without the timeout it would block for the second datagram. */
	CHECK_RET(syscall(SYS_recvmmsg, s, m, 2, 0, &ts), 1);
	CHECK_RET(m[0].msg_len, 3);
	ts = (struct timespec){ 0, NSEC_PER_SEC };
	CHECK_ERR(syscall(SYS_recvmmsg, s, m, 2, 0, &ts), EINVAL);
	CHECK_ERR(syscall(SYS_recvmmsg, s, m, 2, 0, (void *)8), EFAULT);
	/* Two queued, a long timeout: both, and the time left is written back. */
	CHECK_RET(sendto(s, "one", 3, 0, (struct sockaddr *)&a, sizeof(a)), 3);
	CHECK_RET(sendto(s, "two!", 4, 0, (struct sockaddr *)&a, sizeof(a)), 4);
	ts = (struct timespec){ 100, 0 };
	CHECK_RET(syscall(SYS_recvmmsg, s, m, 2, 0, &ts), 2);
	CHECK(ts.tv_sec < 100 || (ts.tv_sec == 100 && ts.tv_nsec == 0), "time left %ld.%09ld",
	      (long)ts.tv_sec, ts.tv_nsec);
	/* SO_RCVTIMEO: a relative timeout on each blocking receive. */
	{
		struct timeval tv = { 0, WAIT / 1000 };
		int64_t t0;

		CHECK_RET(setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
		t0 = now_ns(CLOCK_MONOTONIC);
		CHECK_ERR(recv(s, b0, sizeof(b0), 0), EAGAIN);
		CHECK_WAITED(CLOCK_MONOTONIC, t0, "recv with SO_RCVTIMEO");
	}
	close(s);
}

/* io_getevents: relative. */
static void check_aio(void)
{
	aio_context_t ctx = 0;
	struct io_event ev;
	struct timespec ts;
	int64_t t0;

	if (syscall(SYS_io_setup, 4, &ctx) < 0) {
		if (errno == ENOSYS) {
			printf("skip: Linux AIO is not implemented here (ENOSYS)\n");
			return;
		}
		CHECK(0, "io_setup: %s", strerror(errno));
		return;
	}
	ts = ts_of(WAIT);
	t0 = now_ns(CLOCK_MONOTONIC);
	CHECK_RET(syscall(SYS_io_getevents, ctx, 1, 1, &ev, &ts), 0);
	CHECK_WAITED(CLOCK_MONOTONIC, t0, "io_getevents");
	syscall(SYS_io_destroy, ctx);
}

/* futex_waitv: absolute on the clock it names. */
struct waitv {
	uint64_t val, uaddr;
	uint32_t flags, reserved;
};

static void check_futex_waitv(void)
{
	static uint32_t w = 1;
	struct waitv v = { .val = 1, .uaddr = (uintptr_t)&w, .flags = 2 /* FUTEX2_SIZE_U32 */ };
	struct timespec ts;
	int64_t end;
	long r;

	end = deadline_in(CLOCK_MONOTONIC);
	ts = ts_of(end);
	r = syscall(449 /* futex_waitv */, &v, 1, 0, &ts, CLOCK_MONOTONIC);
	if (r < 0 && errno == ENOSYS) {
		printf("skip: futex_waitv is not implemented here (ENOSYS)\n");
		return;
	}
	CHECK(r == -1 && errno == ETIMEDOUT, "futex_waitv monotonic: %ld (%s)", r, strerror(errno));
	CHECK_REACHED(CLOCK_MONOTONIC, end, "futex_waitv monotonic");
	end = deadline_in(CLOCK_REALTIME);
	ts = ts_of(end);
	CHECK_ERR(syscall(449, &v, 1, 0, &ts, CLOCK_REALTIME), ETIMEDOUT);
	CHECK_REACHED(CLOCK_REALTIME, end, "futex_waitv realtime");
	ts = ts_of(now_ns(CLOCK_MONOTONIC) + 3600 * NSEC_PER_SEC);
	CHECK_ERR(syscall(449, &v, 1, 0, &ts, CLOCK_REALTIME), ETIMEDOUT);
	CHECK_ERR(syscall(449, &v, 1, 0, &ts, CLOCK_BOOTTIME), EINVAL);
	CHECK_ERR(syscall(449, &v, 1, 1, &ts, CLOCK_MONOTONIC), EINVAL);
	/* The value differs: EAGAIN at once. */
	v.val = 0;
	CHECK_ERR(syscall(449, &v, 1, 0, &ts, CLOCK_MONOTONIC), EAGAIN);
}

/* Waits for the blocked signal sig. */
#define wait_signal(sig)                                                                          \
	do {                                                                                      \
		sigset_t _set;                                                                    \
		long _r;                                                                          \
                                                                                                  \
		sigemptyset(&_set);                                                               \
		sigaddset(&_set, sig);                                                            \
		_r = syscall(SYS_rt_sigtimedwait, &_set, NULL, NULL, 8);                          \
		CHECK(_r == sig, "rt_sigtimedwait: %ld (%s)", _r, _r < 0 ? strerror(errno) : ""); \
	} while (0)

static void check_timers(void)
{
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1 };
	struct itimerspec its = { 0 };
	struct itimerval itv = { 0 };
	sigset_t set;
	timer_t tm;
	int64_t t0, end;
	uint64_t n;
	int fd;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGALRM);
	sigprocmask(SIG_BLOCK, &set, NULL);

	/* timer_settime on CLOCK_MONOTONIC and CLOCK_REALTIME, relative and absolute. */
	static const clockid_t clocks[] = { CLOCK_MONOTONIC, CLOCK_REALTIME };
	for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++) {
		if (timer_create(clocks[i], &sev, &tm) != 0) {
			CHECK(0, "timer_create: %s", strerror(errno));
			continue;
		}
		its.it_value = ts_of(WAIT);
		t0 = now_ns(CLOCK_MONOTONIC);
		CHECK_RET(timer_settime(tm, 0, &its, NULL), 0);
		wait_signal(SIGUSR1);
		CHECK_WAITED(CLOCK_MONOTONIC, t0, "relative timer");
		end = deadline_in(clocks[i]);
		its.it_value = ts_of(end);
		CHECK_RET(timer_settime(tm, TIMER_ABSTIME, &its, NULL), 0);
		wait_signal(SIGUSR1);
		CHECK_REACHED(clocks[i], end, "absolute timer");
		timer_delete(tm);
	}
	/* A realtime timer set to a monotonic time fires at once. */
	if (timer_create(CLOCK_REALTIME, &sev, &tm) == 0) {
		its.it_value = ts_of(now_ns(CLOCK_MONOTONIC) + 3600 * NSEC_PER_SEC);
		CHECK_RET(timer_settime(tm, TIMER_ABSTIME, &its, NULL), 0);
		wait_signal(SIGUSR1);
		timer_delete(tm);
	}

	/* timerfd_settime, relative and absolute. */
	for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++) {
		fd = (int)CHECK_OK(timerfd_create(clocks[i], 0));
		its.it_value = ts_of(WAIT);
		t0 = now_ns(CLOCK_MONOTONIC);
		CHECK_RET(timerfd_settime(fd, 0, &its, NULL), 0);
		CHECK_RET(read(fd, &n, sizeof(n)), sizeof(n));
		CHECK_WAITED(CLOCK_MONOTONIC, t0, "relative timerfd");
		end = deadline_in(clocks[i]);
		its.it_value = ts_of(end);
		CHECK_RET(timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL), 0);
		CHECK_RET(read(fd, &n, sizeof(n)), sizeof(n));
		CHECK_REACHED(clocks[i], end, "absolute timerfd");
		close(fd);
	}
	fd = (int)CHECK_OK(timerfd_create(CLOCK_REALTIME, 0));
	its.it_value = ts_of(now_ns(CLOCK_MONOTONIC) + 3600 * NSEC_PER_SEC);
	CHECK_RET(timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL), 0);
	CHECK_RET(read(fd, &n, sizeof(n)), sizeof(n));
	close(fd);

	/* setitimer(ITIMER_REAL): relative. */
	itv.it_value = (struct timeval){ 0, WAIT / 1000 };
	t0 = now_ns(CLOCK_MONOTONIC);
	CHECK_RET(setitimer(ITIMER_REAL, &itv, NULL), 0);
	wait_signal(SIGALRM);
	CHECK_WAITED(CLOCK_MONOTONIC, t0, "setitimer");
}

int main(void)
{
	pthread_t wd;

	sigset_t set;

	setvbuf(stdout, NULL, _IONBF, 0);
	/* The signals the waits take stay blocked in the watchdog thread. */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGALRM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	pthread_create(&wd, NULL, watchdog, NULL);
	check_sleeps();
	check_polls();
	check_signals_ipc();
	check_mqueue();
	check_recvmmsg();
	check_aio();
	check_futex_waitv();
	check_timers();
	return finish();
}
