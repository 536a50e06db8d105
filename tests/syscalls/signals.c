/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Conformance: signal delivery in one process: handlers with SA_SIGINFO (siginfo and
 * ucontext), SA_RESETHAND, SA_NODEFER, sigaltstack with SA_ONSTACK, FP registers preserved
 * across a handler, a SIGSEGV handler that fixes the mapping, SIGFPE on division by zero,
 * syscall restart vs EINTR, sigsuspend, sigtimedwait, rt_sigqueueinfo, pending and blocked
 * sets, kill errors. No fork: runs as pid 1 in husk and as any pid natively.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>

#include "check.h"

#define BIT(sig) (1ULL << ((sig)-1))

static volatile int got_sig, got_code, got_pid, got_value, raised, depth, max_depth;
static volatile uint64_t got_addr, got_sp, got_uc_mask;
static volatile int got_ss_flags;
static char *fault_page;

static void on_info(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	got_sig = sig;
	got_code = si->si_code;
	got_pid = si->si_pid;
	got_value = si->si_value.sival_int;
	got_uc_mask = *(uint64_t *)&uc->uc_sigmask;
	got_ss_flags = uc->uc_stack.ss_flags;
	got_sp = (uint64_t)__builtin_frame_address(0);
}

static void on_plain(int sig)
{
	got_sig = sig;
}

static void on_nest(int sig)
{
	depth++;
	if (depth > max_depth)
		max_depth = depth;
	if (!raised) {
		raised = 1;
		raise(sig);
	}
	depth--;
}

static void set_handler(int sig, void *fn, int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	if (flags & SA_SIGINFO)
		sa.sa_sigaction = fn;
	else
		sa.sa_handler = fn;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

static void check_siginfo_handler(void)
{
	sigset_t s;

	set_handler(SIGUSR1, on_info, SA_SIGINFO);
	got_sig = 0;
	CHECK_RET(kill(getpid(), SIGUSR1), 0);
	CHECK(got_sig == SIGUSR1, "handler saw %d", got_sig);
	CHECK(got_code == SI_USER, "si_code %d", got_code);
	CHECK(got_pid == getpid(), "si_pid %d", got_pid);
	/* The handler's ucontext holds the mask to restore (nothing blocked). */
	CHECK(got_uc_mask == 0, "uc_sigmask %llx", (unsigned long long)got_uc_mask);
	/* The mask is back after the handler returns. */
	sigprocmask(SIG_SETMASK, NULL, &s);
	CHECK(!sigismember(&s, SIGUSR1), "SIGUSR1 still blocked after the handler");

	/* tgkill: SI_TKILL. */
	got_sig = 0;
	CHECK_RET(syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGUSR1), 0);
	CHECK(got_sig == SIGUSR1 && got_code == SI_TKILL, "tgkill: sig %d code %d", got_sig,
	      got_code);

	/* rt_sigqueueinfo to itself with a value. */
	{
		siginfo_t si;

		memset(&si, 0, sizeof(si));
		si.si_code = SI_QUEUE;
		si.si_pid = getpid();
		si.si_uid = getuid();
		si.si_value.sival_int = 4242;
		got_sig = 0;
		CHECK_RET(syscall(SYS_rt_sigqueueinfo, getpid(), SIGUSR1, &si), 0);
		CHECK(got_sig == SIGUSR1 && got_code == SI_QUEUE && got_value == 4242,
		      "sigqueueinfo: sig %d code %d value %d", got_sig, got_code, got_value);
	}
	signal(SIGUSR1, SIG_DFL);
}

static void check_resethand_nodefer(void)
{
	struct sigaction old;

	set_handler(SIGUSR2, on_plain, SA_RESETHAND);
	got_sig = 0;
	raise(SIGUSR2);
	CHECK(got_sig == SIGUSR2, "handler saw %d", got_sig);
	sigaction(SIGUSR2, NULL, &old);
	CHECK(old.sa_handler == SIG_DFL, "SA_RESETHAND left handler %p", (void *)old.sa_handler);

	/* Without SA_NODEFER the signal raised in its handler waits until the handler ends. */
	set_handler(SIGUSR2, on_nest, 0);
	depth = max_depth = raised = 0;
	raise(SIGUSR2);
	CHECK(max_depth == 1, "deferred: depth reached %d", max_depth);
	set_handler(SIGUSR2, on_nest, SA_NODEFER);
	depth = max_depth = raised = 0;
	raise(SIGUSR2);
	CHECK(max_depth == 2, "SA_NODEFER: depth reached %d", max_depth);
	signal(SIGUSR2, SIG_DFL);
}

static void check_altstack(void)
{
	static char stack[65536] __attribute__((aligned(16)));
	stack_t ss = { .ss_sp = stack, .ss_size = sizeof(stack), .ss_flags = 0 }, old;

	CHECK_RET(sigaltstack(&ss, &old), 0);
	set_handler(SIGUSR1, on_info, SA_SIGINFO | SA_ONSTACK);
	got_sp = 0;
	raise(SIGUSR1);
	CHECK(got_sp > (uint64_t)stack && got_sp <= (uint64_t)stack + sizeof(stack),
	      "handler frame at %llx, not on the alternate stack", (unsigned long long)got_sp);
	CHECK(got_ss_flags == 0, "uc_stack.ss_flags %d", got_ss_flags);
	/* Without SA_ONSTACK the normal stack is used. */
	set_handler(SIGUSR1, on_info, SA_SIGINFO);
	raise(SIGUSR1);
	CHECK(!(got_sp > (uint64_t)stack && got_sp <= (uint64_t)stack + sizeof(stack)),
	      "handler without SA_ONSTACK ran on the alternate stack");
	ss.ss_flags = SS_DISABLE;
	CHECK_RET(sigaltstack(&ss, NULL), 0);
	signal(SIGUSR1, SIG_DFL);
}

static void on_clobber(int sig)
{
	__asm__ volatile("xorps %%xmm0, %%xmm0\n\txorps %%xmm7, %%xmm7\n\t"
			 "pcmpeqd %%xmm15, %%xmm15" ::
				 : "xmm0", "xmm7", "xmm15");
	got_sig = sig;
}

static void check_fp_preserved(void)
{
	double in0 = 1.25, in7 = -3.5, in15 = 1e300, out0, out7, out15;

	set_handler(SIGUSR1, on_clobber, 0);
	got_sig = 0;
	/* The values sit in xmm0/7/15 across the system call that delivers the signal. */
	__asm__ volatile("movsd %[a], %%xmm0\n\t"
			 "movsd %[b], %%xmm7\n\t"
			 "movsd %[c], %%xmm15\n\t"
			 "mov %[nr], %%eax\n\t"
			 "mov %[pid], %%edi\n\t"
			 "mov %[sig], %%esi\n\t"
			 "syscall\n\t"
			 "movsd %%xmm0, %[x]\n\t"
			 "movsd %%xmm7, %[y]\n\t"
			 "movsd %%xmm15, %[z]\n\t"
			 : [x] "=m"(out0), [y] "=m"(out7), [z] "=m"(out15)
			 : [a] "m"(in0), [b] "m"(in7), [c] "m"(in15), [nr] "i"(SYS_kill),
			   [pid] "r"(getpid()), [sig] "i"(SIGUSR1)
			 : "rax", "rdi", "rsi", "rcx", "r11", "xmm0", "xmm7", "xmm15", "memory");
	CHECK(got_sig == SIGUSR1, "handler did not run");
	CHECK(out0 == in0 && out7 == in7 && out15 == in15, "xmm registers %g %g %g", out0, out7,
	      out15);
	signal(SIGUSR1, SIG_DFL);
}

static void on_segv(int sig, siginfo_t *si, void *ucv)
{
	got_sig = sig;
	got_code = si->si_code;
	got_addr = (uint64_t)si->si_addr;
	/* Make the page writable: the faulting store runs again and succeeds. */
	mprotect(fault_page, 4096, PROT_READ | PROT_WRITE);
}

static volatile int fpe_zero, fpe_num = 7;
static sigjmp_buf fpe_jmp;

static void on_fpe(int sig, siginfo_t *si, void *ucv)
{
	got_sig = sig;
	got_code = si->si_code;
	siglongjmp(fpe_jmp, 1);
}

static void check_faults(void)
{
	fault_page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	set_handler(SIGSEGV, on_segv, SA_SIGINFO);
	got_sig = 0;
	*(volatile char *)(fault_page + 100) = 7;
	CHECK(got_sig == SIGSEGV, "no SIGSEGV handler ran (%d)", got_sig);
	CHECK(got_code == SEGV_ACCERR, "si_code %d, want SEGV_ACCERR", got_code);
	CHECK(got_addr == (uint64_t)fault_page + 100, "si_addr %llx, want %p",
	      (unsigned long long)got_addr, fault_page + 100);
	CHECK(fault_page[100] == 7, "store not redone after the handler");
	/* An unmapped page: SEGV_MAPERR. */
	munmap(fault_page, 4096);
	fault_page = mmap(fault_page, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(fault_page, 4096);
	got_sig = 0;
	{
		/* Map it back in the handler: on_segv's mprotect fails on nothing, so map first. */
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_fpe; /* jumps back */
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGSEGV, &sa, NULL);
		if (!sigsetjmp(fpe_jmp, 1))
			*(volatile char *)fault_page = 1;
		CHECK(got_sig == SIGSEGV && got_code == SEGV_MAPERR, "unmapped: sig %d code %d",
		      got_sig, got_code);
	}
	signal(SIGSEGV, SIG_DFL);

	set_handler(SIGFPE, on_fpe, SA_SIGINFO);
	got_sig = got_code = 0;
	if (!sigsetjmp(fpe_jmp, 1)) {
		volatile int x = fpe_num / fpe_zero;
		(void)x;
	}
	CHECK(got_sig == SIGFPE && got_code == FPE_INTDIV, "division: sig %d code %d", got_sig,
	      got_code);
	signal(SIGFPE, SIG_DFL);
}

static void check_restart(void)
{
	struct timespec ts;
	sigset_t s;

	/* sigsuspend returns -EINTR after the handler; the mask given is in force meanwhile and
	 * the old one is back afterwards. */
	set_handler(SIGUSR1, on_plain, 0);
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	sigprocmask(SIG_BLOCK, &s, NULL);
	raise(SIGUSR1); /* pending, blocked */
	{
		uint64_t pend = 0;

		CHECK_RET(syscall(SYS_rt_sigpending, &pend, 8), 0);
		CHECK(pend == BIT(SIGUSR1), "pending %llx", (unsigned long long)pend);
		CHECK_ERR(syscall(SYS_rt_sigpending, &pend, 16), EINVAL);
	}
	got_sig = 0;
	sigemptyset(&s);
	CHECK_ERR(sigsuspend(&s), EINTR);
	CHECK(got_sig == SIGUSR1, "sigsuspend: handler saw %d", got_sig);
	sigprocmask(SIG_SETMASK, NULL, &s);
	CHECK(sigismember(&s, SIGUSR1), "sigsuspend did not restore the mask");
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	sigprocmask(SIG_UNBLOCK, &s, NULL);

	/* A nanosleep interrupted by a handled signal: -EINTR (even with SA_RESTART), with the
	 * remaining time. */
	set_handler(SIGALRM, on_plain, SA_RESTART);
	got_sig = 0;
	{
		struct itimerval it = { { 0, 0 }, { 0, 50 * 1000 } };
		struct timespec rem = { 0, 0 };

		if (setitimer(ITIMER_REAL, &it, NULL) == 0) {
			ts.tv_sec = 5;
			ts.tv_nsec = 0;
			CHECK_ERR(nanosleep(&ts, &rem), EINTR);
			CHECK(got_sig == SIGALRM, "alarm handler saw %d", got_sig);
			CHECK(rem.tv_sec > 0 && rem.tv_sec <= 5, "remaining %ld s",
			      (long)rem.tv_sec);
		} else {
			printf("skip: setitimer not available (%s)\n", strerror(errno));
		}
	}
	signal(SIGALRM, SIG_DFL);
	signal(SIGUSR1, SIG_DFL);
}

static void check_sigtimedwait(void)
{
	struct timespec zero = { 0, 0 }, short_ts = { 0, 20 * 1000 * 1000 };
	siginfo_t si;
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	sigaddset(&s, SIGRTMIN);
	sigprocmask(SIG_BLOCK, &s, NULL);
	CHECK_ERR(sigtimedwait(&s, &si, &zero), EAGAIN);
	CHECK_ERR(sigtimedwait(&s, &si, &short_ts), EAGAIN);
	{
		struct timespec bad = { 0, 1000000000 };

		CHECK_ERR(sigtimedwait(&s, &si, &bad), EINVAL);
	}

	/* rt signals queue in order with their values; standard ones coalesce. */
	for (int i = 0; i < 3; i++) {
		union sigval v = { .sival_int = 100 + i };

		CHECK_RET(sigqueue(getpid(), SIGRTMIN, v), 0);
	}
	raise(SIGUSR2);
	raise(SIGUSR2);
	/* SIGUSR2 is lower-numbered than SIGRTMIN: it comes first, once. */
	CHECK_RET(sigtimedwait(&s, &si, &zero), SIGUSR2);
	for (int i = 0; i < 3; i++) {
		memset(&si, 0, sizeof(si));
		CHECK_RET(sigtimedwait(&s, &si, &zero), SIGRTMIN);
		CHECK(si.si_code == SI_QUEUE && si.si_value.sival_int == 100 + i,
		      "rt %d: code %d value %d", i, si.si_code, si.si_value.sival_int);
	}
	CHECK_ERR(sigtimedwait(&s, &si, &zero), EAGAIN);
	sigprocmask(SIG_UNBLOCK, &s, NULL);

	/* Setting SIG_IGN discards a pending signal. */
	sigprocmask(SIG_BLOCK, &s, NULL);
	raise(SIGUSR2);
	signal(SIGUSR2, SIG_IGN);
	CHECK_ERR(sigtimedwait(&s, &si, &zero), EAGAIN);
	signal(SIGUSR2, SIG_DFL);
	sigprocmask(SIG_UNBLOCK, &s, NULL);
}

static void check_kill_errors(void)
{
	siginfo_t si;

	CHECK_ERR(kill(getpid(), 65), EINVAL);
	CHECK_ERR(kill(getpid(), -1), EINVAL);
	CHECK_RET(kill(getpid(), 0), 0);
	CHECK_ERR(kill(4000000, 0), ESRCH);
	CHECK_ERR(syscall(SYS_tgkill, 0, 1, 0), EINVAL);
	CHECK_ERR(syscall(SYS_tgkill, getpid(), 4000000, 0), ESRCH);
	CHECK_ERR(syscall(SYS_tkill, -1, 0), EINVAL);
	/* Another process may not be sent a kernel si_code. */
	memset(&si, 0, sizeof(si));
	si.si_code = SI_KERNEL;
	CHECK_ERR(syscall(SYS_rt_sigqueueinfo, 4000000, SIGUSR1, &si), EPERM);
	CHECK_ERR(syscall(SYS_rt_sigqueueinfo, getpid(), SIGUSR1, (void *)8), EFAULT);
	/* Ignored signals are dropped: no handler, no effect. */
	signal(SIGUSR1, SIG_IGN);
	CHECK_RET(kill(getpid(), SIGUSR1), 0);
	signal(SIGUSR1, SIG_DFL);
	/* SIGCHLD's default action is to ignore. */
	CHECK_RET(kill(getpid(), SIGCHLD), 0);
}

int main(void)
{
	check_siginfo_handler();
	check_resethand_nodefer();
	check_altstack();
	check_fp_preserved();
	check_faults();
	check_restart();
	check_sigtimedwait();
	check_kill_errors();
	return finish();
}
