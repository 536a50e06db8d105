/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timerfd_create/settime/gettime: flags and errors, one-shot and periodic expiry counts,
 * absolute times on MONOTONIC and REALTIME, blocking and interrupted reads, poll, epoll and a
 * timerfd seen through nested epoll instances (plus the nesting loop check).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <time.h>

#include "check.h"

static struct itimerspec its(time_t vs, long vns, time_t is, long ins)
{
	return (struct itimerspec){ .it_value = { vs, vns }, .it_interval = { is, ins } };
}

static void on_alarm(int sig)
{
	(void)sig;
}

static void test_errors(void)
{
	struct itimerspec v = its(1, 0, 0, 0), bad = its(0, 1000000000, 0, 0), cur;
	int efd = eventfd(0, 0);
	int fd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, 0));

	CHECK_ERR(timerfd_create(CLOCK_MONOTONIC, 1), EINVAL);
	CHECK_ERR(timerfd_create(CLOCK_PROCESS_CPUTIME_ID, 0), EINVAL);
	CHECK_ERR(timerfd_create(-1, 0), EINVAL);
	CHECK_ERR(timerfd_settime(fd, 4, &v, NULL), EINVAL);
	CHECK_ERR(timerfd_settime(fd, 0, &bad, NULL), EINVAL);
	bad = its(-1, 0, 0, 0);
	CHECK_ERR(timerfd_settime(fd, 0, &bad, NULL), EINVAL);
	CHECK_ERR(timerfd_settime(efd, 0, &v, NULL), EINVAL);
	CHECK_ERR(timerfd_settime(999, 0, &v, NULL), EBADF);
	CHECK_ERR(timerfd_gettime(efd, &cur), EINVAL);
	CHECK_ERR(syscall(SYS_timerfd_settime, fd, 0, (void *)8, NULL), EFAULT);
	CHECK_ERR(syscall(SYS_timerfd_gettime, fd, (void *)8), EFAULT);
	close(efd);
	close(fd);
}

static void test_flags_and_settings(void)
{
	struct itimerspec v = its(100, 0, 2, 500), old, cur;
	uint64_t n;
	char small[4];
	int fd = CHECK_OK(timerfd_create(CLOCK_BOOTTIME, TFD_NONBLOCK | TFD_CLOEXEC));

	CHECK_RET(fcntl(fd, F_GETFD), FD_CLOEXEC);
	CHECK_RET(fcntl(fd, F_GETFL) & (O_NONBLOCK | O_ACCMODE), O_NONBLOCK | O_RDWR);
	CHECK_RET(timerfd_gettime(fd, &cur), 0);
	CHECK(cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec == 0 && cur.it_interval.tv_sec == 0,
	      "a new timer is disarmed: %ld.%09ld", (long)cur.it_value.tv_sec,
	      cur.it_value.tv_nsec);
	CHECK_ERR(read(fd, &n, 8), EAGAIN);
	CHECK_ERR(read(fd, small, sizeof(small)), EINVAL);
	CHECK_RET(timerfd_settime(fd, 0, &v, NULL), 0);
	CHECK_RET(timerfd_gettime(fd, &cur), 0);
	CHECK(cur.it_value.tv_sec >= 98 && cur.it_value.tv_sec <= 99, "100 s left: %ld",
	      (long)cur.it_value.tv_sec);
	CHECK(cur.it_interval.tv_sec == 2 && cur.it_interval.tv_nsec == 500, "interval %ld.%09ld",
	      (long)cur.it_interval.tv_sec, cur.it_interval.tv_nsec);
	/* Disarming returns the old setting. */
	v = its(0, 0, 0, 0);
	CHECK_RET(timerfd_settime(fd, 0, &v, &old), 0);
	CHECK(old.it_value.tv_sec >= 98 && old.it_interval.tv_sec == 2,
	      "old value %ld interval %ld", (long)old.it_value.tv_sec,
	      (long)old.it_interval.tv_sec);
	CHECK_RET(timerfd_gettime(fd, &cur), 0);
	CHECK(cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec == 0, "disarmed: %ld.%09ld",
	      (long)cur.it_value.tv_sec, cur.it_value.tv_nsec);
	close(fd);
}

static void test_expiry(void)
{
	struct itimerspec v = its(0, 10000000, 0, 0), cur;
	struct pollfd p;
	struct timespec now;
	uint64_t n = 0;
	int64_t rt_off;
	ssize_t r;
	int fd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, 0));

	/* One-shot, relative: poll waits for it, read gives 1, then the timer is disarmed. */
	CHECK_RET(timerfd_settime(fd, 0, &v, NULL), 0);
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	CHECK_RET(poll(&p, 1, -1), 1);
	CHECK_RET(p.revents, POLLIN);
	CHECK_RET(read(fd, &n, 8), 8);
	CHECK_RET(n, 1);
	CHECK_RET(poll(&p, 1, 0), 0);
	CHECK_RET(timerfd_gettime(fd, &cur), 0);
	CHECK(cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec == 0, "expired one-shot: %ld.%09ld",
	      (long)cur.it_value.tv_sec, cur.it_value.tv_nsec);

	/* A blocking read waits for the expiry. */
	CHECK_RET(timerfd_settime(fd, 0, &v, NULL), 0);
	CHECK_RET(read(fd, &n, 8), 8);
	CHECK_RET(n, 1);

	/* Periodic: expirations accumulate until read. */
	v = its(0, 1000000, 0, 1000000);
	CHECK_RET(timerfd_settime(fd, 0, &v, NULL), 0);
	usleep(20000);
	CHECK_RET(read(fd, &n, 8), 8);
	CHECK(n >= 2, "a 1 ms timer read after 20 ms counts %llu", (unsigned long long)n);
	/* settime resets the count. */
	v = its(100, 0, 0, 0);
	usleep(5000);
	CHECK_RET(timerfd_settime(fd, 0, &v, NULL), 0);
	CHECK_RET(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	CHECK_ERR(read(fd, &n, 8), EAGAIN);

	/* Absolute time in the past with an interval: the missed periods are counted at once. */
	clock_gettime(CLOCK_MONOTONIC, &now);
	v = its(now.tv_sec - 1, now.tv_nsec, 0, 100000000);
	CHECK_RET(timerfd_settime(fd, TFD_TIMER_ABSTIME, &v, NULL), 0);
	CHECK_RET(fcntl(fd, F_SETFL, 0), 0);
	CHECK_RET(read(fd, &n, 8), 8);
	CHECK(n >= 10 && n < 1000, "1 s behind a 100 ms period counts %llu", (unsigned long long)n);
	close(fd);

	/* Absolute on CLOCK_REALTIME, CANCEL_ON_SET accepted. */
	fd = CHECK_OK(timerfd_create(CLOCK_REALTIME, 0));
	clock_gettime(CLOCK_REALTIME, &now);
	now.tv_nsec += 20000000;
	if (now.tv_nsec >= 1000000000) {
		now.tv_sec++;
		now.tv_nsec -= 1000000000;
	}
	v = its(now.tv_sec, now.tv_nsec, 0, 0);
	rt_off = realtime_offset_ns();
	CHECK_RET(timerfd_settime(fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &v, NULL), 0);
	r = read(fd, &n, 8);
	/* ECANCELED is the answer when the clock was set meanwhile (a host's NTP step, in CI). */
	rt_off -= realtime_offset_ns();
	if (r < 0 && errno == ECANCELED && (rt_off > 50000 || rt_off < -50000)) {
		printf("note: the realtime clock was set by %lld ns during the wait: ECANCELED\n",
		       (long long)-rt_off);
	} else {
		CHECK(r == 8, "read of a CANCEL_ON_SET timerfd: %zd (%s)", r, strerror(errno));
		CHECK_RET(n, 1);
	}
	close(fd);
}

static void test_interrupted_read(void)
{
	struct sigaction sa = { .sa_handler = on_alarm }; /* no SA_RESTART */
	struct itimerval alarm_in = { .it_value = { 0, 20000 } };
	uint64_t n;
	int fd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, 0));

	sigemptyset(&sa.sa_mask);
	CHECK_RET(sigaction(SIGALRM, &sa, NULL), 0);
	CHECK_RET(setitimer(ITIMER_REAL, &alarm_in, NULL), 0);
	CHECK_ERR(read(fd, &n, 8), EINTR);
	signal(SIGALRM, SIG_DFL);
	close(fd);
}

static void test_epoll(void)
{
	struct itimerspec v = its(0, 20000000, 0, 0);
	struct epoll_event ev, out[2];
	struct pollfd p;
	uint64_t n;
	int fd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK));
	int inner = CHECK_OK(epoll_create1(0));
	int outer = CHECK_OK(epoll_create1(0));

	ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 7 };
	CHECK_RET(epoll_ctl(inner, EPOLL_CTL_ADD, fd, &ev), 0);
	ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 8 };
	CHECK_RET(epoll_ctl(outer, EPOLL_CTL_ADD, inner, &ev), 0);
	/* A loop is refused. */
	ev = (struct epoll_event){ .events = EPOLLIN };
	CHECK_ERR(epoll_ctl(inner, EPOLL_CTL_ADD, outer, &ev), ELOOP);

	CHECK_RET(epoll_wait(outer, out, 2, 0), 0);
	CHECK_RET(timerfd_settime(fd, 0, &v, NULL), 0);
	/* poll on the outer instance sleeps until the timer, two levels down, expires. */
	p = (struct pollfd){ .fd = outer, .events = POLLIN };
	CHECK_RET(poll(&p, 1, -1), 1);
	CHECK_RET(p.revents, POLLIN);
	CHECK_RET(epoll_wait(outer, out, 2, 0), 1);
	CHECK_RET(out[0].data.u64, 8);
	CHECK_RET(epoll_wait(inner, out, 2, 0), 1);
	CHECK_RET(out[0].data.u64, 7);
	CHECK_RET(read(fd, &n, 8), 8);
	CHECK_RET(epoll_wait(outer, out, 2, 0), 0);

	/* epoll_wait on the outer instance also sleeps until the inner one is ready. */
	CHECK_RET(timerfd_settime(fd, 0, &v, NULL), 0);
	CHECK_RET(epoll_wait(outer, out, 2, -1), 1);
	CHECK_RET(out[0].events, EPOLLIN);
	CHECK_RET(out[0].data.u64, 8);
	close(outer);
	close(inner);
	close(fd);
}

int main(void)
{
	test_errors();
	test_flags_and_settings();
	test_expiry();
	test_interrupted_read();
	test_epoll();
	return finish();
}
