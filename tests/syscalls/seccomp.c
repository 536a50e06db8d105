/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seccomp(2) and prctl(PR_SET_SECCOMP) filters a guest installs on itself: actions (ERRNO,
 * TRAP with its siginfo and the rolled-back rax, KILL_PROCESS), a forced SIGSYS when the
 * program blocks or ignores it, the precedence of stacked filters, inheritance across fork and
 * execve, SECCOMP_GET_ACTION_AVAIL, PR_GET_SECCOMP, and EACCES without no_new_privs or
 * CAP_SYS_ADMIN. Each filter is installed in a forked child.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "check.h"

#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1
#endif

/* A filter returning action for system call nr and ALLOW for every other call. */
static int install(int nr, unsigned int action)
{
	struct sock_filter prog[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned int)nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, action),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog fprog = { .len = sizeof(prog) / sizeof(prog[0]), .filter = prog };

	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog);
}

/* Runs fn in a child and returns its wait status. */
static int in_child(int (*fn)(void))
{
	int status = -1;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(fn());
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

static int nnp(void)
{
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 ? 0 : 1;
}

/* --- ERRNO --- */

static int child_errno(void)
{
	if (nnp() || install(SYS_getppid, SECCOMP_RET_ERRNO | 42) != 0)
		return 10;
	errno = 0;
	if (syscall(SYS_getppid) != -1 || errno != 42)
		return 11;
	if (syscall(SYS_getpid) <= 0) /* other calls are allowed */
		return 12;
	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != 2)
		return 13;
	return 0;
}

/* --- TRAP --- */

static volatile int trap_signo, trap_code, trap_syscall, trap_errno;
static volatile unsigned int trap_arch;

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	trap_signo = sig;
	trap_code = si->si_code;
	trap_syscall = si->si_syscall;
	trap_arch = si->si_arch;
	trap_errno = si->si_errno;
}

static int child_trap(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO };
	long r;

	if (sigaction(SIGSYS, &sa, NULL) || nnp() ||
	    install(SYS_getppid, SECCOMP_RET_TRAP | 7) != 0)
		return 10;
	r = syscall(SYS_getppid);
	if (trap_signo != SIGSYS)
		return 11;
	if (trap_code != SYS_SECCOMP)
		return 12;
	if (trap_syscall != SYS_getppid || trap_arch != AUDIT_ARCH_X86_64)
		return 13;
	if (trap_errno != 7)
		return 14;
	/* The call was rolled back: rax still holds its number when the handler returns. */
	if (r != SYS_getppid)
		return 15;
	return 0;
}

/* A blocked SIGSYS is forced: the action becomes SIG_DFL and the process dies. */
static int child_trap_blocked(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGSYS);
	if (sigprocmask(SIG_BLOCK, &set, NULL) || nnp() || install(SYS_getppid, SECCOMP_RET_TRAP))
		return 10;
	syscall(SYS_getppid);
	return 20; /* not reached */
}

static int child_trap_ignored(void)
{
	if (signal(SIGSYS, SIG_IGN) == SIG_ERR || nnp() || install(SYS_getppid, SECCOMP_RET_TRAP))
		return 10;
	syscall(SYS_getppid);
	return 20;
}

/* --- KILL --- */

static int child_kill(void)
{
	if (nnp() || install(SYS_getppid, SECCOMP_RET_KILL_PROCESS))
		return 10;
	syscall(SYS_getppid);
	return 20;
}

/* --- stacking: the strictest action wins; among equals, the newest filter's data --- */

static int child_stack(void)
{
	if (nnp() || install(SYS_getppid, SECCOMP_RET_ERRNO | 5) ||
	    install(SYS_getppid, SECCOMP_RET_ERRNO | 7) || install(SYS_getuid, SECCOMP_RET_ALLOW))
		return 10;
	errno = 0;
	if (syscall(SYS_getppid) != -1 || errno != 7)
		return 11;
	/* A later ALLOW filter cannot undo an earlier ERRNO. */
	if (install(SYS_getppid, SECCOMP_RET_ALLOW))
		return 12;
	errno = 0;
	if (syscall(SYS_getppid) != -1 || errno != 7)
		return 13;
	/* KILL in an older filter beats ERRNO in a newer one. */
	if (install(SYS_getpid, SECCOMP_RET_KILL_PROCESS) ||
	    install(SYS_getpid, SECCOMP_RET_ERRNO | 9))
		return 14;
	syscall(SYS_getpid);
	return 20;
}

/* --- inheritance: fork and execve keep the filters --- */

static int child_inherit(void)
{
	int status;
	pid_t pid;

	if (nnp() || install(SYS_mkdirat, SECCOMP_RET_ERRNO | 1) ||
	    install(SYS_mkdir, SECCOMP_RET_ERRNO | 1))
		return 10;
	pid = fork();
	if (pid == 0) {
		errno = 0;
		_exit(syscall(SYS_mkdirat, AT_FDCWD, "/nonexistent-dir/x", 0700) == -1 &&
				      errno == EPERM ?
			      0 :
			      1);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
		return 11;
	/* After execve: mkdir(1) fails with EPERM and exits 1. */
	pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", "mkdir /tmp/seccomp-inherit-probe 2>/dev/null",
		      (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 12;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 1)
		return 13;
	/* The directory must not exist: mkdir failed. */
	if (access("/tmp/seccomp-inherit-probe", F_OK) == 0) {
		rmdir("/tmp/seccomp-inherit-probe");
		return 14;
	}
	return 0;
}

/* --- EACCES without no_new_privs and without CAP_SYS_ADMIN --- */

static int child_eacces(void)
{
	struct __user_cap_header_struct {
		unsigned int version;
		int pid;
	} hdr = { 0x20080522, 0 };
	struct {
		unsigned int effective, permitted, inheritable;
	} data[2] = { { 0 } };

	/* Drop every capability (uid stays 0): the filter needs no_new_privs now. */
	if (syscall(SYS_capset, &hdr, data))
		return 10;
	errno = 0;
	if (install(SYS_getppid, SECCOMP_RET_ERRNO | 1) != -1 || errno != EACCES)
		return 11;
	if (nnp() || install(SYS_getppid, SECCOMP_RET_ERRNO | 1) != 0)
		return 12;
	return 0;
}

int main(void)
{
	unsigned int action;
	int st;

	CHECK_RET(in_child(child_errno), 0);
	CHECK_RET(in_child(child_trap), 0);

	st = in_child(child_trap_blocked);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS, "blocked SIGSYS: status %#x", st);
	st = in_child(child_trap_ignored);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS, "ignored SIGSYS: status %#x", st);
	st = in_child(child_kill);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS, "KILL_PROCESS: status %#x", st);
	st = in_child(child_stack);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS, "stacked filters: status %#x", st);
	CHECK_RET(in_child(child_inherit), 0);
	CHECK_RET(in_child(child_eacces), 0);

	action = SECCOMP_RET_ERRNO;
	CHECK_RET(syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action), 0);
	action = SECCOMP_RET_KILL_PROCESS;
	CHECK_RET(syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action), 0);
	action = 0x12340000u;
	CHECK_ERR(syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action), EOPNOTSUPP);
	CHECK_ERR(syscall(SYS_seccomp, 99, 0, NULL), EINVAL);
	CHECK_RET(prctl(PR_GET_SECCOMP, 0, 0, 0, 0), 0);
	return finish();
}
