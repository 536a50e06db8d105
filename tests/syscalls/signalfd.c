/* SPDX-License-Identifier: Apache-2.0 */
/*
 * signalfd/signalfd4: flags and errors, the signalfd_siginfo fields for kill, sigqueue and
 * tgkill, several records in one read, changing the mask of an existing fd, poll and epoll
 * readiness, and a blocking read woken by a signal from another process.
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
#include <sys/signalfd.h>
#include <sys/wait.h>

#include "check.h"

static uint64_t bit(int sig)
{
	return 1ULL << (sig - 1);
}

static void test_errors(void)
{
	uint64_t mask = bit(SIGUSR1);
	char small[100];
	int efd = eventfd(0, 0);
	int fd = CHECK_OK(syscall(SYS_signalfd4, -1, &mask, 8, SFD_NONBLOCK));

	CHECK_ERR(syscall(SYS_signalfd4, -1, &mask, 8, 1), EINVAL);
	CHECK_ERR(syscall(SYS_signalfd4, -1, &mask, 4, 0), EINVAL);
	CHECK_ERR(syscall(SYS_signalfd4, -1, &mask, 16, 0), EINVAL);
	CHECK_ERR(syscall(SYS_signalfd4, -1, (void *)8, 8, 0), EFAULT);
	CHECK_ERR(syscall(SYS_signalfd4, efd, &mask, 8, 0), EINVAL);
	CHECK_ERR(syscall(SYS_signalfd4, 999, &mask, 8, 0), EBADF);
	CHECK_ERR(read(fd, small, sizeof(small)), EINVAL);
	CHECK_ERR(write(fd, small, sizeof(small)), EINVAL);
	close(fd);
	close(efd);
}

static void test_records(void)
{
	struct signalfd_siginfo si[3];
	uint64_t mask = bit(SIGUSR1) | bit(SIGUSR2) | bit(SIGRTMIN) | bit(SIGKILL);
	sigset_t block;
	union sigval val = { .sival_int = 42 };
	struct pollfd p;
	int fd;

	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGUSR2);
	sigaddset(&block, SIGRTMIN);
	CHECK_RET(sigprocmask(SIG_BLOCK, &block, NULL), 0);
	/* SIGKILL in the mask is dropped silently; signalfd(2) has no flags. */
	fd = CHECK_OK(syscall(SYS_signalfd, -1, &mask, 8));
	CHECK_RET(fcntl(fd, F_GETFD), 0);
	CHECK_RET(fcntl(fd, F_GETFL) & (O_NONBLOCK | O_ACCMODE), O_RDWR);
	CHECK_RET(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	CHECK_ERR(read(fd, si, sizeof(si[0])), EAGAIN);
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	CHECK_RET(poll(&p, 1, 0), 0);

	CHECK_RET(kill(getpid(), SIGUSR1), 0);
	CHECK_RET(poll(&p, 1, 0), 1);
	CHECK_RET(p.revents, POLLIN);
	CHECK_RET(read(fd, si, sizeof(si)), sizeof(si[0]));
	CHECK_RET(si[0].ssi_signo, SIGUSR1);
	CHECK_RET(si[0].ssi_code, SI_USER);
	CHECK_RET(si[0].ssi_pid, getpid());
	CHECK_RET(si[0].ssi_uid, getuid());

	CHECK_RET(sigqueue(getpid(), SIGRTMIN, val), 0);
	CHECK_RET(read(fd, si, sizeof(si[0])), sizeof(si[0]));
	CHECK_RET(si[0].ssi_signo, SIGRTMIN);
	CHECK_RET(si[0].ssi_code, SI_QUEUE);
	CHECK_RET(si[0].ssi_int, 42);
	CHECK_RET(si[0].ssi_ptr, 42);
	CHECK_RET(si[0].ssi_pid, getpid());

	/* Two pending signals, one read of two records: the thread's own first. */
	CHECK_RET(syscall(SYS_tgkill, getpid(), gettid(), SIGUSR2), 0);
	CHECK_RET(kill(getpid(), SIGUSR1), 0);
	CHECK_RET(read(fd, si, sizeof(si)), 2 * sizeof(si[0]));
	CHECK_RET(si[0].ssi_signo, SIGUSR2);
	CHECK_RET(si[0].ssi_code, SI_TKILL);
	CHECK_RET(si[0].ssi_pid, getpid());
	CHECK_RET(si[1].ssi_signo, SIGUSR1);
	CHECK_RET(si[1].ssi_code, SI_USER);

	/* A new mask on the same fd: SIGUSR1 stays pending, unread. */
	mask = bit(SIGUSR2);
	CHECK_RET(syscall(SYS_signalfd4, fd, &mask, 8, 0), fd);
	CHECK_RET(kill(getpid(), SIGUSR1), 0);
	CHECK_ERR(read(fd, si, sizeof(si[0])), EAGAIN);
	CHECK_RET(poll(&p, 1, 0), 0);
	CHECK_RET(kill(getpid(), SIGUSR2), 0);
	CHECK_RET(read(fd, si, sizeof(si[0])), sizeof(si[0]));
	CHECK_RET(si[0].ssi_signo, SIGUSR2);
	{
		sigset_t pend;

		sigpending(&pend);
		CHECK_RET(sigismember(&pend, SIGUSR1), 1);
	}
	/* Take SIGUSR1 back out through a signalfd, leaving nothing pending. */
	mask = bit(SIGUSR1);
	CHECK_RET(syscall(SYS_signalfd4, fd, &mask, 8, 0), fd);
	CHECK_RET(read(fd, si, sizeof(si[0])), sizeof(si[0]));
	CHECK_RET(si[0].ssi_signo, SIGUSR1);
	close(fd);
}

static void test_blocking_and_epoll(void)
{
	struct signalfd_siginfo si;
	struct epoll_event ev, out;
	uint64_t mask = bit(SIGUSR1);
	int status = -1;
	pid_t child;
	int fd = CHECK_OK(syscall(SYS_signalfd4, -1, &mask, 8, SFD_CLOEXEC));
	int ep = CHECK_OK(epoll_create1(0));

	CHECK_RET(fcntl(fd, F_GETFD), FD_CLOEXEC);
	ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 5 };
	CHECK_RET(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
	CHECK_RET(epoll_wait(ep, &out, 1, 0), 0);

	/* A blocking read until another process sends the signal. */
	child = fork();
	if (child == 0) {
		usleep(20000);
		kill(getppid(), SIGUSR1);
		_exit(0);
	}
	CHECK(child > 0, "fork: %s", strerror(errno));
	CHECK_RET(read(fd, &si, sizeof(si)), sizeof(si));
	CHECK_RET(si.ssi_signo, SIGUSR1);
	CHECK_RET(si.ssi_pid, child);
	CHECK_RET(waitpid(child, &status, 0), child);

	/* epoll_wait sleeps until the signal comes. */
	child = fork();
	if (child == 0) {
		usleep(20000);
		kill(getppid(), SIGUSR1);
		_exit(0);
	}
	CHECK_RET(epoll_wait(ep, &out, 1, -1), 1);
	CHECK_RET(out.events, EPOLLIN);
	CHECK_RET(out.data.u64, 5);
	CHECK_RET(read(fd, &si, sizeof(si)), sizeof(si));
	CHECK_RET(si.ssi_signo, SIGUSR1);
	CHECK_RET(waitpid(child, &status, 0), child);
	/* The SIGCHLDs of the children are pending but not in the mask. */
	CHECK_RET(epoll_wait(ep, &out, 1, 0), 0);
	close(ep);
	close(fd);
}

int main(void)
{
	test_errors();
	test_records();
	test_blocking_and_epoll();
	return finish();
}
