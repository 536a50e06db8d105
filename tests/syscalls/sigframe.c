/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Conformance: the signal frame as Linux 6.x lays it out on x86-64 (ucontext flags, sigcontext
 * registers, the XSAVE area with its magics, alignment), a handler that changes the context
 * it returns to, and default actions seen by a parent (core bit, kill of a process group,
 * kill(-1)). Forks.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* REG_* */
#endif
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <ucontext.h>

#include "check.h"

#define FP_XSTATE_MAGIC1 0x46505853U
#define FP_XSTATE_MAGIC2 0x46505845U

static volatile uint64_t h_rsp, h_fp, h_ucflags, h_rip_saved, h_magic1, h_magic2, h_xsize;
static volatile uint64_t h_rdi, h_r12;

static void on_frame(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uint8_t *fp = (uint8_t *)uc->uc_mcontext.fpregs;
	uint32_t m1, xsize;

	h_rsp = (uint64_t)__builtin_frame_address(0);
	h_fp = (uint64_t)fp;
	h_ucflags = uc->uc_flags;
	h_r12 = uc->uc_mcontext.gregs[REG_R12];
	memcpy(&m1, fp + 464, 4);
	memcpy(&xsize, fp + 464 + 16, 4);
	h_magic1 = m1;
	h_xsize = xsize;
	if (m1 == FP_XSTATE_MAGIC1) {
		uint32_t m2;

		memcpy(&m2, fp + xsize, 4);
		h_magic2 = m2;
	}
	/* Return with a changed register: rt_sigreturn must restore the frame's values. */
	uc->uc_mcontext.gregs[REG_R12] = 0x1234567;
}

static void check_frame(void)
{
	struct sigaction sa;
	uint64_t r12_after;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_frame;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR1, &sa, NULL);
	__asm__ volatile("mov $0xabcdef, %%r12\n\t"
			 "mov %[nr], %%eax\n\t"
			 "mov %[pid], %%edi\n\t"
			 "mov %[sig], %%esi\n\t"
			 "syscall\n\t"
			 "mov %%r12, %[out]\n\t"
			 : [out] "=r"(r12_after)
			 : [nr] "i"(SYS_kill), [pid] "r"(getpid()), [sig] "i"(SIGUSR1)
			 : "rax", "rdi", "rsi", "rcx", "r11", "r12", "memory");
	CHECK(h_r12 == 0xabcdef, "sigcontext r12 %llx", (unsigned long long)h_r12);
	CHECK(r12_after == 0x1234567, "r12 after sigreturn %llx", (unsigned long long)r12_after);
	CHECK((h_ucflags & 0x7) == 0x7, "uc_flags %llx (FP_XSTATE|SIGCONTEXT_SS|STRICT_RESTORE_SS)",
	      (unsigned long long)h_ucflags);
	CHECK(h_fp % 64 == 0, "fpstate %llx not 64-byte aligned", (unsigned long long)h_fp);
	CHECK(h_magic1 == FP_XSTATE_MAGIC1, "magic1 %llx", (unsigned long long)h_magic1);
	CHECK(h_magic2 == FP_XSTATE_MAGIC2, "magic2 %llx after %llu bytes",
	      (unsigned long long)h_magic2, (unsigned long long)h_xsize);
	CHECK(h_xsize >= 576, "xstate_size %llu", (unsigned long long)h_xsize);
	signal(SIGUSR1, SIG_DFL);
}

/* A sigreturn with a frame whose MXCSR has reserved bits set: SIGSEGV, as Linux. */
static void on_bad_mxcsr(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uint32_t bad = 0xffffffff;

	memcpy((uint8_t *)uc->uc_mcontext.fpregs + 24, &bad, 4);
}

static void check_bad_frame_kills(void)
{
	pid_t pid = fork();
	int st = 0;

	if (pid == 0) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_bad_mxcsr;
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGUSR1, &sa, NULL);
		raise(SIGUSR1);
		_exit(0);
	}
	CHECK_RET(waitpid(pid, &st, 0), pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "bad MXCSR: status %x", st);
}

static int *volatile bad_ptr = (int *)8;

static void check_default_actions(void)
{
	int st = 0;
	pid_t pid = fork();

	if (pid == 0) {
		raise(SIGABRT);
		_exit(0);
	}
	CHECK_RET(waitpid(pid, &st, 0), pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "SIGABRT: status %x", st);
	/* The core bit depends on RLIMIT_CORE natively; husk (pid 1) always reports "core". */
	if (getpid() == 1)
		CHECK(WCOREDUMP(st), "no core bit in %x", st);

	pid = fork();
	if (pid == 0) {
		raise(SIGTERM);
		_exit(0);
	}
	CHECK_RET(waitpid(pid, &st, 0), pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM && !WCOREDUMP(st), "SIGTERM: status %x",
	      st);

	/* A blocked fault signal kills (force_sig): SIGSEGV from a NULL store while blocked. */
	pid = fork();
	if (pid == 0) {
		sigset_t s;

		sigemptyset(&s);
		sigaddset(&s, SIGSEGV);
		sigprocmask(SIG_BLOCK, &s, NULL);
		signal(SIGSEGV, SIG_IGN);
		*bad_ptr = 1;
		_exit(0);
	}
	CHECK_RET(waitpid(pid, &st, 0), pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "blocked SIGSEGV: status %x", st);
}

static void check_kill_group(void)
{
	pid_t a, b;
	int st = 0;

	/* Two children in a new process group, killed with kill(-pgid). */
	a = fork();
	if (a == 0) {
		setpgid(0, 0);
		pause();
		_exit(1);
	}
	setpgid(a, a);
	b = fork();
	if (b == 0) {
		setpgid(0, a);
		pause();
		_exit(1);
	}
	setpgid(b, a);
	CHECK_RET(kill(-a, SIGTERM), 0);
	CHECK_RET(waitpid(a, &st, 0), a);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "group member a: %x", st);
	CHECK_RET(waitpid(b, &st, 0), b);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "group member b: %x", st);
	CHECK_ERR(kill(-a, SIGTERM), ESRCH);
}

int main(void)
{
	check_frame();
	check_bad_frame_kills();
	check_default_actions();
	check_kill_group();
	return finish();
}
