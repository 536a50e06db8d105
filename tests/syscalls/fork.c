/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fork, vfork, clone and clone3: return values, copy-on-write, shared memory under vfork and
 * CLONE_VM, the tid-writing flags, pidfds, exit signals, and Linux's flag validation errnos.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* Raw clone(2), x86-64 argument order; with no stack the child returns here like fork. */
static long raw_clone(unsigned long flags, void *stack, int *ptid, int *ctid, unsigned long tls)
{
	return syscall(SYS_clone, flags, stack, ptid, ctid, tls);
}

/*
 * clone(CLONE_VM|CLONE_VFORK) onto stack: the child stores 77 in *shared and exits with 5, all
 * in registers (it may not return through the parent's stack frame).
 */
static long clone_vm_child(void *stack, volatile int *shared)
{
	register long r10 __asm__("r10") = 0;
	register long r8 __asm__("r8") = 0;
	long ret;

	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 "movl $77, (%%rbx)\n\t"
			 "mov $60, %%eax\n\t"
			 "mov $5, %%edi\n\t"
			 "syscall\n\t"
			 "1:\n\t"
			 : "=a"(ret)
			 : "a"((long)SYS_clone), "D"((long)(CLONE_VM | CLONE_VFORK | SIGCHLD)),
			   "S"(stack), "d"(0L), "r"(r10), "r"(r8), "b"(shared)
			 : "rcx", "r11", "memory");
	return ret;
}

static long raw_clone3(struct clone_args *a, size_t size)
{
	return syscall(SYS_clone3, a, size);
}

/* Waits for pid and returns its exit code, or 1000 + signal, or -1. */
static int reap(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, __WALL) != pid)
		return -1;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 1000 + WTERMSIG(st);
	return -1;
}

static volatile int cow_value = 5;

static void test_fork(void)
{
	pid_t me = getpid(), pid;

	pid = fork();
	if (pid == 0)
		_exit(getppid() == me && getpid() != me ? 7 : 1);
	CHECK(pid > 0, "fork returned %d", pid);
	CHECK_RET(reap(pid), 7);

	/* Copy-on-write both ways: neither side sees the other's later writes. */
	cow_value = 5;
	pid = fork();
	if (pid == 0) {
		int seen = cow_value;

		cow_value = 9;
		_exit(seen == 5 && cow_value == 9 ? 0 : 1);
	}
	cow_value = 6;
	CHECK_RET(reap(pid), 0);
	CHECK(cow_value == 6, "parent's value %d changed by the child", cow_value);

	/* A large touched area is copied on write, not corrupted. */
	size_t len = 8 << 20;
	char *big = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(big != MAP_FAILED, "mmap failed");
	if (big != MAP_FAILED) {
		for (size_t i = 0; i < len; i += 4096)
			big[i] = (char)(i >> 12);
		pid = fork();
		if (pid == 0) {
			for (size_t i = 0; i < len; i += 4096) {
				if (big[i] != (char)(i >> 12))
					_exit(2);
				big[i] = 0x55;
			}
			_exit(0);
		}
		CHECK_RET(reap(pid), 0);
		int ok = 1;
		for (size_t i = 0; i < len; i += 4096)
			ok &= big[i] == (char)(i >> 12);
		CHECK(ok, "the child's writes reached the parent's pages");
		munmap(big, len);
	}
}

static unsigned int get_mxcsr(void)
{
	unsigned int v;

	__asm__ volatile("stmxcsr %0" : "=m"(v));
	return v;
}

static void set_mxcsr(unsigned int v)
{
	__asm__ volatile("ldmxcsr %0" : : "m"(v));
}

/* The child starts with its parent's floating-point control state (here: MXCSR rounding). */
static void test_fpstate(void)
{
	unsigned int saved = get_mxcsr(), up = (saved & ~0x6000u) | 0x4000u; /* round up */
	pid_t pid;

	set_mxcsr(up);
	pid = fork();
	if (pid == 0)
		_exit(get_mxcsr() == up ? 0 : 1);
	set_mxcsr(saved);
	CHECK_RET(reap(pid), 0);
}

static volatile int vfork_flag;

static void test_vfork(void)
{
	pid_t pid;

	vfork_flag = 0;
	pid = vfork();
	if (pid == 0) {
		/* Shared memory: the parent sees this once it resumes. */
		vfork_flag = 42;
		_exit(3);
	}
	CHECK(vfork_flag == 42, "vfork child's write not seen: %d", vfork_flag);
	CHECK_RET(reap(pid), 3);
}

static void test_clone_flags(void)
{
	int ptid = 0, ctid = 0;
	pid_t pid;

	CHECK_ERR(raw_clone(CLONE_THREAD | SIGCHLD, NULL, NULL, NULL, 0), EINVAL);
	CHECK_ERR(raw_clone(CLONE_SIGHAND | SIGCHLD, NULL, NULL, NULL, 0), EINVAL);
	CHECK_ERR(raw_clone(CLONE_FS | CLONE_NEWNS | SIGCHLD, NULL, NULL, NULL, 0), EINVAL);
	/* Legacy clone passes the pidfd through parent_tid: the two cannot both be asked. */
	CHECK_ERR(raw_clone(CLONE_PIDFD | CLONE_PARENT_SETTID | SIGCHLD, NULL, &ptid, NULL, 0),
		  EINVAL);
	CHECK_ERR(raw_clone(CLONE_PIDFD | CLONE_DETACHED | SIGCHLD, NULL, &ptid, NULL, 0), EINVAL);

	/* CLONE_PARENT_SETTID writes the tid in the parent; CHILD_SETTID in the child's copy. */
	pid = (pid_t)raw_clone(CLONE_PARENT_SETTID | CLONE_CHILD_SETTID | SIGCHLD, NULL, &ptid,
			       &ctid, 0);
	if (pid == 0)
		_exit(ctid == getpid() ? 0 : 1);
	CHECK(pid > 0, "clone failed");
	CHECK(ptid == pid, "parent_tid %d, child %d", ptid, pid);
	CHECK(ctid == 0, "child_tid in the parent is %d", ctid);
	CHECK_RET(reap(pid), 0);

	/* A child with exit signal 0 is a "clone" child: only __WCLONE or __WALL waits see it. */
	pid = (pid_t)raw_clone(0, NULL, NULL, NULL, 0);
	if (pid == 0)
		_exit(4);
	CHECK(pid > 0, "clone failed");
	CHECK_ERR(waitpid(pid, NULL, WNOHANG), ECHILD);
	int st = 0;
	CHECK_RET(waitpid(pid, &st, __WCLONE), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 4, "status %#x", st);

	/* CLONE_VM without a thread: the child writes into the parent's memory. */
	static char stack[65536] __attribute__((aligned(16)));
	volatile int *shared = &vfork_flag;
	*shared = 0;
	pid = (pid_t)clone_vm_child(stack + sizeof(stack), shared);
	CHECK(pid > 0, "clone(CLONE_VM|CLONE_VFORK) failed");
	CHECK(*shared == 77, "CLONE_VM child's write not seen: %d", *shared);
	CHECK_RET(reap(pid), 5);
}

static void test_clone3(void)
{
	struct clone_args a;
	char big[128];
	int pidfd = -1;
	pid_t pid;

	memset(&a, 0, sizeof(a));
	a.exit_signal = SIGCHLD;
	CHECK_ERR(raw_clone3(&a, 32), EINVAL);
	CHECK_ERR(raw_clone3(&a, 8192), E2BIG);
	memset(big, 0, sizeof(big));
	memcpy(big, &a, sizeof(a));
	big[100] = 1;
	CHECK_ERR(raw_clone3((struct clone_args *)big, sizeof(big)), E2BIG);
	a.flags = CLONE_THREAD | CLONE_SIGHAND | CLONE_VM;
	CHECK_ERR(raw_clone3(&a, sizeof(a)), EINVAL); /* a thread with an exit signal */
	a.flags = 0;
	a.exit_signal = 65;
	CHECK_ERR(raw_clone3(&a, sizeof(a)), EINVAL);
	a.exit_signal = SIGCHLD;
	a.stack_size = 4096;
	CHECK_ERR(raw_clone3(&a, sizeof(a)), EINVAL); /* a size without a stack */
	a.stack_size = 0;
	a.flags = CLONE_DETACHED;
	CHECK_ERR(raw_clone3(&a, sizeof(a)), EINVAL);
	a.flags = CLONE_SIGHAND | CLONE_CLEAR_SIGHAND | CLONE_VM;
	CHECK_ERR(raw_clone3(&a, sizeof(a)), EINVAL);

	/* set_tid naming a pid in use. */
	pid_t want = getpid();
	memset(&a, 0, sizeof(a));
	a.exit_signal = SIGCHLD;
	a.set_tid = (uint64_t)(uintptr_t)&want;
	a.set_tid_size = 1;
	CHECK_ERR(raw_clone3(&a, sizeof(a)), EEXIST);
	a.set_tid_size = 0;
	CHECK_ERR(raw_clone3(&a, sizeof(a)), EINVAL); /* set_tid without a size */

	/* fork through clone3, with a pidfd; waitid(P_PIDFD) reaps through it. */
	memset(&a, 0, sizeof(a));
	a.flags = CLONE_PIDFD;
	a.pidfd = (uint64_t)(uintptr_t)&pidfd;
	a.exit_signal = SIGCHLD;
	pid = (pid_t)raw_clone3(&a, sizeof(a));
	if (pid == 0)
		_exit(6);
	CHECK(pid > 0, "clone3 failed: %s", strerror(errno));
	CHECK(pidfd >= 0, "no pidfd");
	if (pidfd >= 0) {
		siginfo_t si;

		CHECK_RET(fcntl(pidfd, F_GETFD), FD_CLOEXEC);
		memset(&si, 0, sizeof(si));
		CHECK_RET(waitid(P_PIDFD, (id_t)pidfd, &si, WEXITED), 0);
		CHECK(si.si_pid == pid && si.si_code == CLD_EXITED && si.si_status == 6,
		      "pid %d code %d status %d", si.si_pid, si.si_code, si.si_status);
		close(pidfd);
	}
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	test_fork();
	test_fpstate();
	test_vfork();
	test_clone_flags();
	test_clone3();
	return finish();
}
