/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process tree as seen from inside: getppid, sessions and process groups (setsid,
 * setpgid, getpgid, getsid, getpgrp with their errors), pidfd_open, and, when running as pid 1
 * (inside husk), that orphans are re-parented to it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

static long pidfd_open(pid_t pid, unsigned int flags)
{
	return syscall(SYS_pidfd_open, pid, flags);
}

/* Runs fn in a child and adds its counts to ours. */
static void in_child(void (*fn)(void))
{
	int counts[2] = { 0, 0 }, p[2], st;
	pid_t pid;

	if (pipe(p) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		checks_passed = checks_failed = 0;
		fn();
		counts[0] = checks_passed;
		counts[1] = checks_failed;
		write(p[1], counts, sizeof(counts));
		_exit(0);
	}
	close(p[1]);
	if (read(p[0], counts, sizeof(counts)) == sizeof(counts)) {
		checks_passed += counts[0];
		checks_failed += counts[1];
	}
	close(p[0]);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "a child failed (status %#x)", st);
}

/* A child that waits on a pipe until the parent closes it. */
static pid_t blocked_child(int *wfd, void (*before)(void))
{
	int p[2];
	char c;
	pid_t pid;

	if (pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[1]);
		if (before)
			before();
		while (read(p[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(p[0]);
	*wfd = p[1];
	return pid;
}

static void reap(pid_t pid, int wfd)
{
	close(wfd);
	waitpid(pid, NULL, 0);
}

static void sessions(void)
{
	pid_t me = getpid(), pid;
	int wfd;

	/* A fresh child is in its parent's group and session; setsid makes it a leader. */
	CHECK_RET(getpgid(0), getpgrp());
	CHECK_RET(getsid(0), getsid(getppid()));
	CHECK_RET(setsid(), me);
	CHECK_RET(getsid(0), me);
	CHECK_RET(getpgrp(), me);
	CHECK_ERR(setsid(), EPERM); /* already a group leader */
	CHECK_ERR(setpgid(0, 0), EPERM); /* a session leader cannot move */

	pid = blocked_child(&wfd, NULL);
	CHECK_RET(getpgid(pid), me);
	CHECK_RET(getsid(pid), me);
	CHECK_RET(setpgid(pid, pid), 0);
	CHECK_RET(getpgid(pid), pid);
	CHECK_RET(setpgid(pid, me), 0); /* back to an existing group of the session */
	CHECK_ERR(setpgid(pid, 999999), EPERM); /* no such group */
	CHECK_ERR(setpgid(pid, -1), EINVAL);
	CHECK_ERR(setpgid(999999, 0), ESRCH);
	CHECK_ERR(getpgid(999999), ESRCH);
	CHECK_ERR(getsid(999999), ESRCH);
	reap(pid, wfd);

	/* A child that called setsid is in another session: EPERM. */
	pid = blocked_child(&wfd, (void (*)(void))setsid);
	for (int i = 0; i < 500 && getsid(pid) != pid; i++)
		usleep(10000);
	CHECK_RET(getsid(pid), pid);
	CHECK_ERR(setpgid(pid, pid), EPERM);
	reap(pid, wfd);
}

static void not_a_child(void)
{
	/* Our parent is neither us nor our child. */
	CHECK_ERR(setpgid(getppid(), 0), ESRCH);
}

static void exec_then_setpgid(void)
{
	int p[2], st;
	char c;
	pid_t pid;

	if (pipe(p) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		char fd[16];
		char *argv[] = { "sh", "-c", "read x <&$0", fd, NULL };

		close(p[1]);
		snprintf(fd, sizeof(fd), "%d", p[0]);
		argv[3] = fd;
		execv("/bin/sh", argv);
		_exit(97);
	}
	close(p[0]);
	/* Wait until the child has exec'd: its comm changes to sh's. */
	for (int i = 0; i < 500; i++) {
		if (setpgid(pid, pid) < 0 && errno == EACCES)
			break;
		usleep(10000);
	}
	CHECK_ERR(setpgid(pid, pid), EACCES);
	c = '\n';
	write(p[1], &c, 1);
	close(p[1]);
	CHECK_RET(waitpid(pid, &st, 0), pid);
}

static void *thread_fn(void *arg)
{
	*(pid_t *)arg = (pid_t)syscall(SYS_gettid);
	for (;;)
		pause();
	return NULL;
}

static void pidfds(void)
{
	pid_t pid, tid = 0;
	pthread_t th;
	struct pollfd pfd;
	siginfo_t si;
	int wfd, fd;

	CHECK_ERR(pidfd_open(0, 0), EINVAL);
	CHECK_ERR(pidfd_open(-1, 0), EINVAL);
	CHECK_ERR(pidfd_open(getpid(), 1), EINVAL);
	CHECK_ERR(pidfd_open(999999, 0), ESRCH);
	pthread_create(&th, NULL, thread_fn, &tid);
	while (!__atomic_load_n(&tid, __ATOMIC_ACQUIRE))
		usleep(1000);
	CHECK_ERR(pidfd_open(tid, 0), ENOENT); /* a thread, not a process */

	pid = blocked_child(&wfd, NULL);
	fd = (int)pidfd_open(pid, 0);
	CHECK(fd >= 0, "pidfd_open: %s", strerror(errno));
	CHECK_RET(fcntl(fd, F_GETFD), FD_CLOEXEC);
	pfd.fd = fd;
	pfd.events = POLLIN;
	CHECK_RET(poll(&pfd, 1, 0), 0);
	close(wfd);
	/* Readable once the process has exited. */
	CHECK_RET(poll(&pfd, 1, 10000), 1);
	CHECK(pfd.revents & POLLIN, "revents %#x", pfd.revents);
	memset(&si, 0, sizeof(si));
	CHECK_RET(waitid(P_PIDFD, (id_t)fd, &si, WEXITED), 0);
	CHECK(si.si_pid == pid, "pid %d", si.si_pid);
	CHECK_ERR(waitid(P_PIDFD, (id_t)fd, &si, WEXITED), ECHILD);
	close(fd);
	CHECK_ERR(waitid(P_PIDFD, 0, &si, WEXITED), EBADF); /* stdin is not a pidfd */

	/* A pidfd with O_NONBLOCK makes waitid non-blocking. */
	pid = blocked_child(&wfd, NULL);
	fd = (int)pidfd_open(pid, O_NONBLOCK);
	CHECK_ERR(waitid(P_PIDFD, (id_t)fd, &si, WEXITED), EAGAIN);
	reap(pid, wfd);
	close(fd);
}

static void as_init(void)
{
	pid_t pid, grandchild = 0;
	int p[2], st;

	/* Orphans go to pid 1, which is us in husk. */
	if (pipe(p) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		pid_t g = fork();

		if (g == 0) {
			for (int i = 0; i < 500 && getppid() != 1; i++)
				usleep(10000);
			_exit(getppid() == 1 ? 42 : 1);
		}
		write(p[1], &g, sizeof(g));
		_exit(0);
	}
	close(p[1]);
	CHECK_RET(read(p[0], &grandchild, sizeof(grandchild)), sizeof(grandchild));
	CHECK_RET(waitpid(pid, &st, 0), pid);
	CHECK_RET(waitpid(grandchild, &st, 0), grandchild);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 42, "grandchild status %#x", st);
	CHECK_RET(getppid(), 0);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	in_child(sessions);
	in_child(not_a_child);
	in_child(exec_then_setpgid);
	in_child(pidfds);
	if (getpid() == 1)
		as_init();
	return finish();
}
