/* SPDX-License-Identifier: Apache-2.0 */
/* poll, ppoll, select, pselect6 over pipes: readiness, POLLNVAL, EBADF, timeouts, a wakeup
 * by another thread, and ppoll's temporary signal mask. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/select.h>
#include <time.h>

#include "check.h"

static int pfd[2];
static volatile sig_atomic_t got;

static void on_usr1(int sig)
{
	got = 1;
}

static void *late_writer(void *arg)
{
	struct timespec ts = { 0, 100000000 };

	nanosleep(&ts, NULL);
	write(pfd[1], "x", 1);
	return NULL;
}

int main(void)
{
	struct pollfd p[3];
	struct timespec ts = { 0, 20000000 };
	struct timeval tv = { 0, 20000 };
	fd_set rd, wr;
	sigset_t block, with_usr1;
	pthread_t th;
	char c;

	CHECK_RET(pipe(pfd), 0);
	p[0] = (struct pollfd){ .fd = pfd[0], .events = POLLIN };
	p[1] = (struct pollfd){ .fd = pfd[1], .events = POLLOUT };
	p[2] = (struct pollfd){ .fd = 1000, .events = POLLIN };
	/* The write end is writable; the bad fd is POLLNVAL; the empty read end is not ready. */
	CHECK_RET(poll(p, 3, 0), 2);
	CHECK_RET(p[0].revents, 0);
	CHECK_RET(p[1].revents, POLLOUT);
	CHECK_RET(p[2].revents, POLLNVAL);
	/* A negative fd is skipped. */
	p[2].fd = -1;
	CHECK_RET(poll(p, 1, 20), 0);
	CHECK_RET(ppoll(p, 1, &ts, NULL), 0);

	/* Another thread's write wakes a poll with no timeout. */
	pthread_create(&th, NULL, late_writer, NULL);
	CHECK_RET(poll(p, 1, -1), 1);
	CHECK_RET(p[0].revents, POLLIN);
	pthread_join(th, NULL);

	/* select: readable and writable sets; EBADF for a closed fd; the timeout. */
	FD_ZERO(&rd);
	FD_ZERO(&wr);
	FD_SET(pfd[0], &rd);
	FD_SET(pfd[1], &wr);
	CHECK_RET(select(pfd[1] + 1, &rd, &wr, NULL, &tv), 2);
	CHECK(FD_ISSET(pfd[0], &rd) && FD_ISSET(pfd[1], &wr), "sets");
	CHECK_RET(read(pfd[0], &c, 1), 1);
	FD_ZERO(&rd);
	FD_SET(pfd[0], &rd);
	tv = (struct timeval){ 0, 20000 };
	CHECK_RET(select(pfd[0] + 1, &rd, NULL, NULL, &tv), 0);
	CHECK(!FD_ISSET(pfd[0], &rd), "empty pipe selected");
	CHECK(tv.tv_sec == 0 && tv.tv_usec == 0, "time left %ld", (long)tv.tv_usec);
	{
		int closed = dup(pfd[0]);

		close(closed);
		FD_SET(closed, &rd);
		CHECK_ERR(select(closed + 1, &rd, NULL, NULL, &tv), EBADF);
	}
	CHECK_ERR(select(-1, NULL, NULL, NULL, &tv), EINVAL);
	FD_ZERO(&rd);
	FD_SET(pfd[0], &rd);
	CHECK_RET(pselect(pfd[0] + 1, &rd, NULL, NULL, &ts, NULL), 0);

	/* ppoll's mask: SIGUSR1 blocked outside, unblocked during the wait, handled there. */
	signal(SIGUSR1, on_usr1);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, NULL);
	raise(SIGUSR1);
	CHECK(!got, "blocked signal delivered");
	sigemptyset(&with_usr1);
	ts = (struct timespec){ 5, 0 };
	CHECK_ERR(ppoll(p, 1, &ts, &with_usr1), EINTR);
	CHECK(got, "signal not delivered during ppoll");
	{
		sigset_t now;

		sigprocmask(SIG_BLOCK, NULL, &now);
		CHECK(sigismember(&now, SIGUSR1), "mask not restored after ppoll");
	}
	CHECK_ERR(syscall(SYS_ppoll, p, 1, &ts, &with_usr1, 4), EINVAL);

	/* The reader sees POLLHUP once the writers are gone. */
	close(pfd[1]);
	p[0].events = POLLIN;
	CHECK_RET(poll(p, 1, 0), 1);
	CHECK_RET(p[0].revents, POLLHUP);
	close(pfd[0]);
	return finish();
}
