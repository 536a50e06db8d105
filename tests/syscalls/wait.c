/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wait4 and waitid: statuses (exit, kill, core, stop, continue), WNOHANG, WNOWAIT, pid and
 * group selection, rusage, errors; SIGCHLD on exit; auto-reaping when SIGCHLD is ignored;
 * re-parenting of orphans to a subreaper; children forked by another thread; waitid without
 * WEXITED/WSTOPPED/WCONTINUED refused at once.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

/* A child that blocks reading fd until its write end closes, then exits with code. */
static pid_t blocked_child(int *wfd, int code)
{
	int p[2];
	char c;
	pid_t pid;

	if (pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[1]);
		while (read(p[0], &c, 1) > 0)
			;
		_exit(code);
	}
	close(p[0]);
	*wfd = p[1];
	return pid;
}

static void test_wait4(void)
{
	struct rusage ru;
	int st, wfd;
	pid_t pid;

	CHECK_ERR(wait4(-1, &st, WNOHANG, NULL), ECHILD);
	CHECK_ERR(wait4(-1, &st, 0x1000, NULL), EINVAL);
	CHECK_ERR(syscall(SYS_wait4, INT32_MIN, &st, 0, NULL), ESRCH);

	pid = blocked_child(&wfd, 9);
	CHECK(pid > 0, "fork");
	/* Nothing ready under WNOHANG: 0, and the status is left as it was (Linux writes it only
	 * for a child found). */
	st = 12345;
	CHECK_RET(wait4(pid, &st, WNOHANG, NULL), 0);
	CHECK(st == 12345, "WNOHANG wrote status %#x", st);
	CHECK_RET(wait4(-1, &st, WNOHANG, NULL), 0);
	CHECK_RET(wait4(-1, NULL, WNOHANG, NULL), 0);
	/* wait4 takes no WNOWAIT, WEXITED or WSTOPPED (waitid's). */
	CHECK_ERR(wait4(pid, &st, WNOHANG | WNOWAIT, NULL), EINVAL);
	CHECK_ERR(wait4(pid, &st, WNOHANG | WEXITED, NULL), EINVAL);
	CHECK_ERR(wait4(pid + 100000, &st, WNOHANG, NULL), ECHILD);
	close(wfd);
	memset(&ru, 0xff, sizeof(ru));
	CHECK_RET(wait4(pid, &st, 0, &ru), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 9, "status %#x", st);
	CHECK(ru.ru_utime.tv_usec >= 0 && ru.ru_utime.tv_usec < 1000000, "rusage not filled");
	CHECK_ERR(wait4(pid, &st, WNOHANG, NULL), ECHILD);

	/* Process groups: wait4(0) is the caller's group, wait4(-pgid) another. */
	pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		_exit(2);
	}
	setpgid(pid, pid); /* either side may win the race; both set the same group */
	CHECK_ERR(wait4(0, &st, WNOHANG, NULL), ECHILD);
	CHECK_RET(wait4(-pid, &st, 0, NULL), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2, "status %#x", st);

	/* Killed, and killed with a core dump (the core bit depends on the limit only). */
	pid = blocked_child(&wfd, 0);
	CHECK_RET(kill(pid, SIGKILL), 0);
	CHECK_RET(wait4(pid, &st, 0, NULL), pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL && !WCOREDUMP(st), "status %#x", st);
	close(wfd);
}

static void test_waitid(void)
{
	siginfo_t si;
	int wfd;
	pid_t pid;

	CHECK_ERR(waitid(P_ALL, 0, &si, 0), EINVAL);
	CHECK_ERR(waitid(P_ALL, 0, &si, WNOHANG), EINVAL);
	CHECK_ERR(waitid(P_ALL, 0, &si, WNOWAIT | WNOHANG), EINVAL);
	CHECK_ERR(waitid(P_ALL, 0, &si, WEXITED | 0x1000), EINVAL);
	CHECK_ERR(waitid(P_PID, 0, &si, WEXITED), EINVAL);
	CHECK_ERR(waitid(7, 0, &si, WEXITED), EINVAL);
	CHECK_ERR(waitid(P_ALL, 0, &si, WEXITED | WNOHANG), ECHILD);

	pid = blocked_child(&wfd, 11);
	/* Without WEXITED, WSTOPPED or WCONTINUED: EINVAL at once, even with a child to wait for. */
	CHECK_ERR(waitid(P_PID, (id_t)pid, &si, 0), EINVAL);
	CHECK_ERR(waitid(P_ALL, 0, &si, WNOWAIT), EINVAL);
	memset(&si, 0xff, sizeof(si));
	CHECK_RET(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG), 0);
	CHECK(si.si_pid == 0 && si.si_signo == 0, "WNOHANG left pid %d signo %d", si.si_pid,
	      si.si_signo);
	/* Linux zeroes all it writes: code, errno, uid and status too. */
	CHECK(si.si_code == 0 && si.si_errno == 0 && si.si_uid == 0 && si.si_status == 0,
	      "WNOHANG left code %d errno %d uid %d status %d", si.si_code, si.si_errno,
	      (int)si.si_uid, si.si_status);
	memset(&si, 0xff, sizeof(si));
	CHECK_RET(waitid(P_PID, (id_t)pid, &si, WSTOPPED | WCONTINUED | WNOHANG), 0);
	CHECK(si.si_pid == 0 && si.si_signo == 0, "WSTOPPED WNOHANG left pid %d", si.si_pid);
	CHECK_RET(waitid(P_PGID, 0, &si, WEXITED | WNOHANG), 0);
	CHECK_RET(syscall(SYS_waitid, P_ALL, 0, NULL, WEXITED | WNOHANG, NULL), 0);
	close(wfd);
	/* WNOWAIT leaves the zombie for a later wait. */
	memset(&si, 0, sizeof(si));
	CHECK_RET(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	CHECK(si.si_signo == SIGCHLD && si.si_code == CLD_EXITED && si.si_status == 11 &&
		      si.si_pid == pid && si.si_uid == getuid(),
	      "signo %d code %d status %d pid %d", si.si_signo, si.si_code, si.si_status,
	      si.si_pid);
	memset(&si, 0, sizeof(si));
	CHECK_RET(waitid(P_ALL, 0, &si, WEXITED), 0);
	CHECK(si.si_pid == pid && si.si_status == 11, "pid %d status %d", si.si_pid, si.si_status);
	CHECK_ERR(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG), ECHILD);

	/* Killed: CLD_KILLED with the signal. */
	pid = blocked_child(&wfd, 0);
	kill(pid, SIGTERM);
	memset(&si, 0, sizeof(si));
	CHECK_RET(waitid(P_PID, (id_t)pid, &si, WEXITED), 0);
	CHECK(si.si_code == CLD_KILLED && si.si_status == SIGTERM, "code %d status %d", si.si_code,
	      si.si_status);
	close(wfd);
}

/* A child forked by another thread: waits in the main thread give the pid fork returned. */
static void *fork_in_thread(void *arg)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(5);
	*(pid_t *)arg = pid;
	return NULL;
}

static void test_thread_fork(void)
{
	pthread_t th;
	siginfo_t si;
	pid_t pid = -1;
	int st = 0;

	pthread_create(&th, NULL, fork_in_thread, &pid);
	pthread_join(th, NULL);
	CHECK(pid > 0, "fork in a thread: %d", pid);
	CHECK_RET(wait4(-1, &st, 0, NULL), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 5, "status %#x", st);
	pthread_create(&th, NULL, fork_in_thread, &pid);
	pthread_join(th, NULL);
	memset(&si, 0, sizeof(si));
	CHECK_RET(waitid(P_ALL, 0, &si, WEXITED), 0);
	CHECK(si.si_pid == pid && si.si_status == 5, "waitid pid %d (fork %d) status %d", si.si_pid,
	      pid, si.si_status);
}

/* A "clone" child (exit signal other than SIGCHLD) is waited for with __WCLONE or __WALL only. */
static void test_clone_child(void)
{
	siginfo_t si;
	int st = 0;
	long pid = syscall(SYS_clone, 0 /* no exit signal */, 0, NULL, NULL, 0);

	if (pid == 0)
		syscall(SYS_exit_group, 4);
	CHECK(pid > 0, "clone: %s", strerror(errno));
	if (pid <= 0)
		return;
	/* Wait for it to be a zombie without reaping it. */
	memset(&si, 0, sizeof(si));
	CHECK_RET(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT | __WCLONE), 0);
	CHECK_ERR(wait4((pid_t)pid, &st, WNOHANG, NULL), ECHILD);
	CHECK_ERR(wait4(-1, &st, WNOHANG, NULL), ECHILD);
	CHECK_ERR(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG), ECHILD);
	CHECK_RET(wait4((pid_t)pid, &st, __WALL, NULL), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 4, "status %#x", st);
	/* And a SIGCHLD child is not one for __WCLONE. */
	pid = fork();
	if (pid == 0)
		_exit(3);
	memset(&si, 0, sizeof(si));
	CHECK_RET(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	CHECK_ERR(wait4((pid_t)pid, &st, __WCLONE | WNOHANG, NULL), ECHILD);
	CHECK_RET(wait4((pid_t)pid, &st, 0, NULL), pid);
}

static void test_stop_continue(void)
{
	int st, wfd;
	pid_t pid;

	siginfo_t si;
	int pidfd;

	pid = blocked_child(&wfd, 0);
	CHECK_RET(kill(pid, SIGSTOP), 0);
	/* waitid(WSTOPPED | WNOWAIT) through a pidfd sees the stop and leaves it reportable. */
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	CHECK(pidfd >= 0, "pidfd_open: %s", strerror(errno));
	memset(&si, 0, sizeof(si));
	CHECK_RET(waitid(P_PIDFD, (id_t)pidfd, &si, WSTOPPED | WNOWAIT), 0);
	CHECK(si.si_pid == pid && si.si_code == CLD_STOPPED && si.si_status == SIGSTOP,
	      "pid %d code %d status %d", si.si_pid, si.si_code, si.si_status);
	CHECK_RET(waitpid(pid, &st, WUNTRACED), pid);
	CHECK(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP, "status %#x", st);
	/* Reported once. */
	CHECK_RET(waitpid(pid, &st, WUNTRACED | WNOHANG), 0);
	memset(&si, 0xff, sizeof(si));
	CHECK_RET(waitid(P_PIDFD, (id_t)pidfd, &si, WSTOPPED | WNOHANG), 0);
	CHECK(si.si_pid == 0, "stop reported twice: pid %d", si.si_pid);
	close(pidfd);
	/* Not a child: a thread of this process, by tid. */
	CHECK_ERR(waitpid((pid_t)syscall(SYS_gettid), &st, WNOHANG), ECHILD);
	CHECK_RET(kill(pid, SIGCONT), 0);
	CHECK_RET(waitpid(pid, &st, WCONTINUED), pid);
	CHECK(WIFCONTINUED(st), "status %#x", st);
	close(wfd);
	CHECK_RET(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st), "status %#x", st);
}

static volatile sig_atomic_t got_chld;
static void on_chld(int sig)
{
	got_chld = 1;
}

static void test_sigchld(void)
{
	struct sigaction sa;
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	pid_t pid;
	int st;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_chld;
	sigaction(SIGCHLD, &sa, NULL);
	got_chld = 0;
	pid = fork();
	if (pid == 0)
		_exit(0);
	CHECK_RET(waitpid(pid, &st, 0), pid);
	for (int i = 0; i < 250 && !got_chld; i++)
		nanosleep(&ts, NULL);
	CHECK(got_chld, "no SIGCHLD after a child's exit");

	/* The SIGCHLD of a reaped child is pending by the time wait returns: it never interrupts
	 * the next wait (no SA_RESTART here). */
	int eintr = 0;
	for (int i = 0; i < 40; i++) {
		pid = fork();
		if (pid == 0)
			_exit(0);
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			eintr++;
	}
	CHECK(eintr == 0, "%d waits interrupted by an earlier child's SIGCHLD", eintr);

	/* SIGCHLD ignored: children are reaped by the kernel and wait gives ECHILD. */
	sa.sa_handler = SIG_IGN;
	sigaction(SIGCHLD, &sa, NULL);
	pid = fork();
	if (pid == 0)
		_exit(0);
	CHECK_ERR(waitpid(pid, &st, 0), ECHILD);
	sa.sa_handler = SIG_DFL;
	sigaction(SIGCHLD, &sa, NULL);
}

static void test_subreaper(void)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	pid_t me = getpid(), pid, grandchild = 0;
	int p[2], st, v = -1;

	CHECK_RET(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
	CHECK_RET(prctl(PR_GET_CHILD_SUBREAPER, &v, 0, 0, 0), 0);
	CHECK(v == 1, "subreaper %d", v);
	if (pipe(p) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		pid_t g = fork();

		if (g == 0) {
			/* Orphaned when its parent exits: adopted by the subreaper above. */
			for (int i = 0; i < 500 && getppid() != me; i++)
				nanosleep(&ts, NULL);
			_exit(getppid() == me ? 42 : 1);
		}
		write(p[1], &g, sizeof(g));
		_exit(0);
	}
	close(p[1]);
	CHECK_RET(read(p[0], &grandchild, sizeof(grandchild)), sizeof(grandchild));
	close(p[0]);
	CHECK_RET(waitpid(pid, &st, 0), pid);
	CHECK_RET(waitpid(grandchild, &st, 0), grandchild);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 42, "grandchild status %#x", st);
	prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
}

static volatile sig_atomic_t got_hup;
static void on_hup(int sig)
{
	got_hup = 1;
}

/*
 * POSIX: a process group that becomes orphaned while one of its members is stopped gets
 * SIGHUP then SIGCONT. C starts a session, G stops in its own group of that session; when C
 * exits, G goes to us (the subreaper, in another session) and its group is orphaned.
 */
static void test_orphaned_pgrp(void)
{
	int p[2], st;
	pid_t pid, g = 0;

	CHECK_RET(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
	if (pipe(p) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		setsid();
		g = fork();
		if (g == 0) {
			struct sigaction sa;

			memset(&sa, 0, sizeof(sa));
			sa.sa_handler = on_hup;
			sigaction(SIGHUP, &sa, NULL);
			setpgid(0, 0);
			raise(SIGSTOP);
			/* Resumed by the SIGCONT that follows the SIGHUP. */
			_exit(got_hup ? 42 : 1);
		}
		setpgid(g, g);
		write(p[1], &g, sizeof(g));
		waitpid(g, &st, WUNTRACED); /* G is stopped */
		_exit(0);
	}
	close(p[1]);
	CHECK_RET(read(p[0], &g, sizeof(g)), sizeof(g));
	close(p[0]);
	CHECK_RET(waitpid(pid, &st, 0), pid);
	/* A watchdog, not a timing check: without the SIGCONT, G would stay stopped forever. */
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	pid_t r = 0;
	for (int i = 0; i < 1500 && r == 0; i++) {
		r = waitpid(g, &st, WNOHANG);
		if (r == 0)
			nanosleep(&ts, NULL);
	}
	if (r == 0) {
		kill(g, SIGKILL);
		waitpid(g, &st, 0);
	}
	CHECK(r == g && WIFEXITED(st) && WEXITSTATUS(st) == 42,
	      "orphaned stopped member: waitpid %d, status %#x", r, st);
	prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	test_wait4();
	test_waitid();
	test_thread_fork();
	test_clone_child();
	test_stop_continue();
	test_sigchld();
	test_subreaper();
	test_orphaned_pgrp();
	return finish();
}
