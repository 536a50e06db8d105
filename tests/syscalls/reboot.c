/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reboot(2) in a child pid namespace (Linux's reboot_pid_ns), as container managers see a
 * container's systemd end: a restart kills the namespace's pid 1, reported killed by SIGHUP; a
 * halt or power-off, by SIGINT; whether pid 1 itself or another process of the namespace calls
 * it. Errors: EPERM without CAP_SYS_BOOT, EINVAL for wrong magic numbers and for the commands a
 * child namespace refuses (Ctrl-Alt-Del on/off, kexec, suspend).
 *
 * Every reboot call is made in a new pid namespace by its pid 1 or pid 2 (checked first): run
 * natively as root this program must never reach the host's own reboot. When the namespace
 * cannot be made, nothing is called and the check fails.
 */
#include <errno.h>
#include <linux/reboot.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static long sys_reboot(unsigned int magic1, unsigned int magic2, unsigned int cmd)
{
	return syscall(SYS_reboot, magic1, magic2, cmd, NULL);
}

static long reboot_cmd(unsigned int cmd)
{
	return sys_reboot(LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2, cmd);
}

/*
 * Runs fn as pid 1 of a new pid namespace and returns its wait status (-1 when the namespace
 * or the process could not be made: then fn never ran).
 */
static int in_new_pidns(void (*fn)(void))
{
	pid_t pid, init;
	int st, go[2];

	fflush(stdout);
	if (pipe(go) < 0)
		return -1;
	/* A middle process unshares, so the test's own process keeps its namespace. */
	pid = fork();
	if (pid == 0) {
		close(go[0]);
		if (unshare(CLONE_NEWPID) < 0)
			_exit(100);
		init = fork();
		if (init == 0) {
			close(go[1]);
			if (getpid() != 1)
				_exit(101); /* never reboot outside a namespace of our own */
			fn();
			_exit(102);
		}
		if (init < 0)
			_exit(100);
		if (waitpid(init, &st, 0) != init)
			_exit(100);
		/* The init's wait status, to the test's process. */
		if (write(go[1], &st, sizeof(st)) != sizeof(st))
			_exit(100);
		_exit(0);
	}
	close(go[1]);
	if (pid < 0) {
		close(go[0]);
		return -1;
	}
	if (read(go[0], &st, sizeof(st)) != sizeof(st))
		st = -1;
	close(go[0]);
	waitpid(pid, NULL, 0);
	return st;
}

static void init_power_off(void)
{
	reboot_cmd(LINUX_REBOOT_CMD_POWER_OFF);
	_exit(103); /* not reached: the call ends the caller */
}

static void init_halt(void)
{
	reboot_cmd(LINUX_REBOOT_CMD_HALT);
	_exit(103);
}

static void init_restart(void)
{
	reboot_cmd(LINUX_REBOOT_CMD_RESTART);
	_exit(103);
}

/* pid 2 of the namespace restarts it; pid 1 waits for its child, which never comes back. */
static void child_restarts(void)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		if (getpid() != 2)
			_exit(101);
		reboot_cmd(LINUX_REBOOT_CMD_RESTART2);
		_exit(103);
	}
	waitpid(pid, &st, 0);
	/* Reached only if the call did not end the namespace. */
	_exit(104);
}

/* The errors, checked by pid 1 of a namespace; it exits with the number of failed checks. */
static void init_errors(void)
{
	pid_t pid;
	int st;

	checks_passed = checks_failed = 0;
	CHECK_ERR(sys_reboot(0x12345678, LINUX_REBOOT_MAGIC2, LINUX_REBOOT_CMD_POWER_OFF), EINVAL);
	CHECK_ERR(sys_reboot(LINUX_REBOOT_MAGIC1, 0x12345678, LINUX_REBOOT_CMD_POWER_OFF), EINVAL);
	CHECK_ERR(reboot_cmd(LINUX_REBOOT_CMD_CAD_OFF), EINVAL);
	CHECK_ERR(reboot_cmd(LINUX_REBOOT_CMD_CAD_ON), EINVAL);
	CHECK_ERR(reboot_cmd(LINUX_REBOOT_CMD_SW_SUSPEND), EINVAL);
	CHECK_ERR(reboot_cmd(LINUX_REBOOT_CMD_KEXEC), EINVAL);
	CHECK_ERR(reboot_cmd(0x11111111), EINVAL);
	/* The other magic numbers are accepted (a refused command shows it got past them). */
	CHECK_ERR(sys_reboot(LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2A, LINUX_REBOOT_CMD_CAD_OFF),
		  EINVAL);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		/* Without CAP_SYS_BOOT: EPERM, before the magic numbers are looked at. */
		if (setresuid(65534, 65534, 65534) < 0)
			_exit(2);
		errno = 0;
		if (reboot_cmd(LINUX_REBOOT_CMD_POWER_OFF) != -1 || errno != EPERM)
			_exit(1);
		if (sys_reboot(0, 0, 0) != -1 || errno != EPERM)
			_exit(1);
		_exit(0);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "unprivileged reboot: status %#x", st);
	fflush(stdout);
	_exit(checks_failed);
}

static void expect_killed(const char *what, void (*fn)(void), int sig)
{
	int st = in_new_pidns(fn);

	CHECK(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == sig,
	      "%s: expected pid 1 killed by signal %d, got status %#x", what, sig, st);
}

int main(void)
{
	int st = in_new_pidns(init_errors);

	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "errors: status %#x", st);
	expect_killed("power off by pid 1", init_power_off, SIGINT);
	expect_killed("halt by pid 1", init_halt, SIGINT);
	expect_killed("restart by pid 1", init_restart, SIGHUP);
	expect_killed("restart by pid 2", child_restarts, SIGHUP);
	return finish();
}
