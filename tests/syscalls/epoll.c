/* SPDX-License-Identifier: Apache-2.0 */
/* epoll: ctl errors, level and edge triggering, EPOLLONESHOT, EPOLLEXCLUSIVE rules, removal at
 * close, timeouts, a wakeup from another thread, epoll_pwait's mask and EINTR. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <time.h>

#include "check.h"

static int pfd[2];

static void *late_writer(void *arg)
{
	struct timespec ts = { 0, 100000000 };

	nanosleep(&ts, NULL);
	write(pfd[1], "y", 1);
	return NULL;
}

static void on_alarm(int sig)
{
}

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 42 }, out[4];
	int ep, q[2];
	pthread_t th;
	char buf[8];

	CHECK_ERR(epoll_create(0), EINVAL);
	CHECK_ERR(epoll_create1(1), EINVAL);
	ep = CHECK_OK(epoll_create1(EPOLL_CLOEXEC));
	CHECK_RET(fcntl(ep, F_GETFD), FD_CLOEXEC);
	CHECK_RET(pipe(pfd), 0);

	/* ctl errors. */
	CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_ADD, ep, &ev), EINVAL);
	CHECK_ERR(epoll_ctl(pfd[0], EPOLL_CTL_ADD, pfd[1], &ev), EINVAL);
	CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_MOD, pfd[0], &ev), ENOENT);
	CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_DEL, pfd[0], NULL), ENOENT);
	CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_ADD, 999, &ev), EBADF);
	CHECK_ERR(epoll_ctl(ep, 7, pfd[0], &ev), EINVAL);
	CHECK_RET(epoll_ctl(ep, EPOLL_CTL_ADD, pfd[0], &ev), 0);
	CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_ADD, pfd[0], &ev), EEXIST);
	CHECK_ERR(epoll_wait(ep, out, 0, 0), EINVAL);
	CHECK_ERR(epoll_wait(pfd[0], out, 1, 0), EINVAL);

	/* Level-triggered: reported while data is there. */
	CHECK_RET(epoll_wait(ep, out, 4, 0), 0);
	CHECK_RET(epoll_wait(ep, out, 4, 20), 0);
	CHECK_RET(write(pfd[1], "ab", 2), 2);
	CHECK_RET(epoll_wait(ep, out, 4, 0), 1);
	CHECK(out[0].events == EPOLLIN && out[0].data.u64 == 42, "event %#x data %llu",
	      out[0].events, (unsigned long long)out[0].data.u64);
	CHECK_RET(epoll_wait(ep, out, 4, 0), 1);

	/* Edge-triggered: once per new write. */
	ev.events = EPOLLIN | EPOLLET;
	CHECK_RET(epoll_ctl(ep, EPOLL_CTL_MOD, pfd[0], &ev), 0);
	CHECK_RET(epoll_wait(ep, out, 4, 0), 1);
	CHECK_RET(epoll_wait(ep, out, 4, 0), 0);
	CHECK_RET(write(pfd[1], "c", 1), 1);
	CHECK_RET(epoll_wait(ep, out, 4, 0), 1);
	CHECK_RET(epoll_wait(ep, out, 4, 0), 0);
	CHECK_RET(read(pfd[0], buf, sizeof(buf)), 3);

	/* EPOLLONESHOT: one report, then silent until MOD re-arms it. */
	ev.events = EPOLLIN | EPOLLONESHOT;
	CHECK_RET(epoll_ctl(ep, EPOLL_CTL_MOD, pfd[0], &ev), 0);
	CHECK_RET(write(pfd[1], "d", 1), 1);
	CHECK_RET(epoll_wait(ep, out, 4, 0), 1);
	CHECK_RET(epoll_wait(ep, out, 4, 0), 0);
	CHECK_RET(epoll_ctl(ep, EPOLL_CTL_MOD, pfd[0], &ev), 0);
	CHECK_RET(epoll_wait(ep, out, 4, 0), 1);
	CHECK_RET(read(pfd[0], buf, sizeof(buf)), 1);

	/* EPOLLEXCLUSIVE: ADD only; MOD of an exclusive item is EINVAL. */
	CHECK_RET(pipe(q), 0);
	ev.events = EPOLLIN | EPOLLEXCLUSIVE;
	CHECK_RET(epoll_ctl(ep, EPOLL_CTL_ADD, q[0], &ev), 0);
	CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_MOD, q[0], &ev), EINVAL);
	ev.events = EPOLLIN | EPOLLEXCLUSIVE | EPOLLONESHOT;
	CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_ADD, q[1], &ev), EINVAL);
	CHECK_RET(epoll_ctl(ep, EPOLL_CTL_DEL, q[0], NULL), 0);

	/* A closed fd leaves the set: its data no longer reported. */
	ev.events = EPOLLOUT;
	ev.data.u64 = 7;
	CHECK_RET(epoll_ctl(ep, EPOLL_CTL_ADD, q[1], &ev), 0);
	CHECK_RET(epoll_wait(ep, out, 4, 0), 1);
	CHECK_RET(close(q[1]), 0);
	CHECK_RET(epoll_wait(ep, out, 4, 0), 0);
	close(q[0]);

	/* Level again, woken by another thread's write. */
	ev.events = EPOLLIN;
	ev.data.u64 = 9;
	CHECK_RET(epoll_ctl(ep, EPOLL_CTL_MOD, pfd[0], &ev), 0);
	pthread_create(&th, NULL, late_writer, NULL);
	CHECK_RET(epoll_wait(ep, out, 4, -1), 1);
	CHECK_RET(out[0].data.u64, 9);
	pthread_join(th, NULL);
	CHECK_RET(read(pfd[0], buf, sizeof(buf)), 1);

	/* A handled signal interrupts epoll_wait with EINTR, even with SA_RESTART. */
	{
		struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };

		sigaction(SIGALRM, &sa, NULL);
		alarm(1);
		CHECK_ERR(epoll_wait(ep, out, 4, 5000), EINTR);
		alarm(0);
	}

	/* Hang-up of the writer is reported without being asked for. */
	close(pfd[1]);
	CHECK_RET(epoll_wait(ep, out, 4, 0), 1);
	CHECK(out[0].events & EPOLLHUP, "events %#x", out[0].events);
	close(pfd[0]);
	close(ep);
	return finish();
}
