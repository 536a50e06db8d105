/* SPDX-License-Identifier: Apache-2.0 */
/* The sentry's seccomp allow-list (sentry/filter.c): what it lets through and what it kills. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sentry/confine.h"

/* Runs fn in a child under the sentry filter; returns the child's wait status. */
static int run_filtered(void (*fn)(void))
{
	int st;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			_exit(100);
		if (sentry_install_filter() < 0)
			_exit(101);
		fn();
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return st;
}

static void do_openat(void)
{
	syscall(SYS_openat, AT_FDCWD, "/etc/passwd", O_RDONLY);
}

static void do_open(void)
{
	syscall(SYS_open, "/etc/passwd", O_RDONLY);
}

static void do_socket(void)
{
	syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
}

static void do_execve(void)
{
	char *argv[] = { "/bin/true", NULL };
	syscall(SYS_execve, "/bin/true", argv, NULL);
}

static void do_ioctl_other(void)
{
	/* TIOCSTI (push input into a terminal) is not on the list. */
	char c = 'x';
	syscall(SYS_ioctl, 0, 0x5412, &c);
}

static void do_allowed(void)
{
	char buf[1];
	struct timespec ts;

	/* Calls the sentry makes all the time must go through. */
	if (syscall(SYS_getpid) <= 0)
		_exit(2);
	if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
		_exit(3);
	if (getrandom(buf, sizeof(buf), 0) != 1)
		_exit(4);
	if (write(2, "", 0) < 0)
		_exit(5);
}

Test(sentry_filter, opening_a_host_path_kills_the_sentry)
{
	int st = run_filtered(do_openat);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS, "status %#x", st);
	st = run_filtered(do_open);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS, "status %#x", st);
}

Test(sentry_filter, sockets_and_exec_kill_the_sentry)
{
	int st = run_filtered(do_socket);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS, "status %#x", st);
	st = run_filtered(do_execve);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS, "status %#x", st);
}

Test(sentry_filter, only_listed_ioctls_pass)
{
	int st = run_filtered(do_ioctl_other);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS, "status %#x", st);
}

Test(sentry_filter, the_sentrys_own_calls_pass)
{
	int st = run_filtered(do_allowed);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
}
