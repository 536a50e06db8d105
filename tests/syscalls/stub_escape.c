/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Conformance: a guest that tries to get out through the platform's stub. Child processes
 *  (c) send themselves SIGUSR2, SIGSYS and SIGSEGV with kill and tgkill: these are guest signals
 *      and behave as on Linux (handlers, si_code, default actions);
 *  (d) run `int $0x80` and `sysenter`: a Linux-like signal at the instruction (husk has no 32-bit
 *      system calls: `int $0x80` is the SIGSEGV of a kernel without IA-32 emulation);
 *  (a) in husk only: look for the stub's code page above the guest range (where the ptrace and
 *      seccomp platforms put it) and jump to its `syscall` instructions with forbidden numbers;
 *  (b) in husk only: write garbage over the seccomp platform's thread areas at their fixed
 *      address, from the thread itself and from another thread while the first sleeps in a call.
 * Every child must end (killed, or by a Linux-like signal or error) or at least be killable,
 * while this process, in the same sandbox, goes on. Natively (a) and (b) are skipped.
 *
 * Among them the cases that once wedged a guest thread on the seccomp platform (a jump to the code
 * page's exit, a thread area's sleep flag cleared): the task must stay killable. `--no-hang`
 * leaves them out (to look at the rest should they hang again).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>

#include "check.h"
#include "child.h"

/*
 * Where the platforms put their stub pages (sentry/platform/ptrace/ptrace.h and
 * seccomp/seccomp.h): the first free step of 0x10000000 from PLATFORM_GUEST_MAX (ptrace) or
 * PLATFORM_GUEST_MAX + 0x40000000 (seccomp) below 0x7fff00000000. The seccomp platform's thread
 * areas are 32 KiB each from its code page + 1 MiB (slot 0: a process's first thread).
 */
#define STUB_ADDR_FIRST 0x7ffe00000000UL
#define STUB_ADDR_STEP 0x10000000UL
#define STUB_ADDR_LIMIT 0x7fff00000000UL
#define SC_AREAS_OFF 0x100000UL
#define SC_AREA_SIZE 0x8000UL
#define SC_A_STUB_SLEEPS 8

/* A child that has not ended after this long is killed; then it must end within as long. */
#define CHILD_TIMEOUT_MS 10000

static bool hang_checks;

/* ---- children with a deadline ---------------------------------------------------------- */

enum outcome {
	ENDED, /* by itself: *status is its wait status */
	KILLED, /* did not end in time; SIGKILL ended it */
	STUCK, /* not even SIGKILL ended it */
};

static bool wait_pidfd(int pidfd, int ms)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	int r;

	while ((r = poll(&p, 1, ms)) < 0 && errno == EINTR)
		;
	return r == 1;
}

/* Runs fn(arg) in a child that exits with fn's result; waits for it with a deadline. */
static enum outcome run_child(int (*fn)(void *), void *arg, int *status)
{
	pid_t pid;
	int pidfd;

	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(fn(arg));
	if (pid < 0) {
		CHECK(0, "fork: %s", strerror(errno));
		*status = 0;
		return ENDED;
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		CHECK(0, "pidfd_open: %s", strerror(errno));
		kill(pid, SIGKILL);
		waitpid(pid, status, 0);
		return KILLED;
	}
	if (wait_pidfd(pidfd, CHILD_TIMEOUT_MS)) {
		close(pidfd);
		waitpid(pid, status, 0);
		return ENDED;
	}
	kill(pid, SIGKILL);
	if (wait_pidfd(pidfd, CHILD_TIMEOUT_MS)) {
		close(pidfd);
		waitpid(pid, status, 0);
		return KILLED;
	}
	close(pidfd);
	return STUCK; /* left behind: the sandbox may not exit */
}

static const char *outcome_str(enum outcome o, int st, char *buf, size_t len)
{
	if (o == STUCK)
		return "still running after SIGKILL";
	if (o == KILLED)
		return "ran on until SIGKILL";
	if (WIFSIGNALED(st))
		snprintf(buf, len, "killed by signal %d", WTERMSIG(st));
	else
		snprintf(buf, len, "exited %d", WEXITSTATUS(st));
	return buf;
}

/* ---- (c) guest signals sent by the guest itself ------------------------------------------ */

static volatile int got_sig, got_code, got_pid, got_count;

static void on_sig(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	got_sig = sig;
	got_code = si->si_code;
	got_pid = si->si_pid;
	got_count++;
}

static void handle(int sig)
{
	struct sigaction sa = { .sa_sigaction = on_sig, .sa_flags = SA_SIGINFO };

	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

static void signals_handled(void *arg)
{
	static const int sigs[] = { SIGUSR2, SIGSYS, SIGSEGV };
	pid_t me = getpid();
	sigset_t set, pend;

	(void)arg;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		int sig = sigs[i];

		handle(sig);
		got_count = 0;
		CHECK_RET(kill(me, sig), 0);
		CHECK(got_count == 1 && got_sig == sig && got_code == SI_USER && got_pid == me,
		      "kill %d: count %d sig %d code %d pid %d", sig, got_count, got_sig, got_code,
		      got_pid);
		got_count = 0;
		CHECK_RET(syscall(SYS_tgkill, me, gettid(), sig), 0);
		CHECK(got_count == 1 && got_sig == sig && got_code == SI_TKILL,
		      "tgkill %d: count %d sig %d code %d", sig, got_count, got_sig, got_code);
		/* Blocked: pending until unblocked, then delivered once. */
		sigemptyset(&set);
		sigaddset(&set, sig);
		got_count = 0;
		CHECK_RET(sigprocmask(SIG_BLOCK, &set, NULL), 0);
		CHECK_RET(kill(me, sig), 0);
		CHECK(got_count == 0, "blocked %d delivered", sig);
		CHECK_RET(sigpending(&pend), 0);
		CHECK(sigismember(&pend, sig) == 1, "%d not pending", sig);
		CHECK_RET(sigprocmask(SIG_UNBLOCK, &set, NULL), 0);
		CHECK(got_count == 1 && got_sig == sig, "unblocked %d: count %d", sig, got_count);
		signal(sig, SIG_DFL);
	}
}

struct self_kill {
	int sig;
	bool by_tgkill;
};

static int kill_self(void *arg)
{
	struct self_kill *k = arg;

	if (k->by_tgkill)
		syscall(SYS_tgkill, getpid(), gettid(), k->sig);
	else
		kill(getpid(), k->sig);
	return 99; /* not reached */
}

static void check_signals(void)
{
	static const int sigs[] = { SIGUSR2, SIGSYS, SIGSEGV };

	in_child(signals_handled, NULL);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		for (int t = 0; t < 2; t++) {
			struct self_kill k = { .sig = sigs[i], .by_tgkill = t };
			char buf[64];
			int st = 0;
			enum outcome o = run_child(kill_self, &k, &st);

			CHECK(o == ENDED && WIFSIGNALED(st) && WTERMSIG(st) == k.sig,
			      "%s(self, %d) with the default action: %s", t ? "tgkill" : "kill",
			      k.sig, outcome_str(o, st, buf, sizeof(buf)));
		}
	}
}

/* ---- (d) int $0x80 and sysenter ------------------------------------------------------------ */

static sigjmp_buf fault_jmp;
static volatile int f_sig, f_code;
static volatile uint64_t f_rip, f_addr;

static void on_fault(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	f_sig = sig;
	f_code = si->si_code;
	f_addr = (uint64_t)si->si_addr;
	f_rip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	siglongjmp(fault_jmp, 1);
}

static void catch_faults(void)
{
	struct sigaction sa = { .sa_sigaction = on_fault, .sa_flags = SA_SIGINFO | SA_NODEFER };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGILL, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGTRAP, &sa, NULL);
}

/* int $0x80 with eax = nr, ebx = arg; returns eax, or -1000 - signo if it faulted. */
static long do_int80(long nr, long arg, uint64_t *at)
{
	static volatile uint64_t where;
	long ax = nr;

	f_sig = 0;
	if (sigsetjmp(fault_jmp, 1)) {
		*at = where;
		return -1000 - f_sig;
	}
	__asm__ volatile("lea 1f(%%rip), %%rcx\n\t"
			 "mov %%rcx, %1\n\t"
			 "1: int $0x80\n\t"
			 : "+a"(ax), "=m"(where)
			 : "b"(arg)
			 : "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory");
	*at = where;
	return ax;
}

static long do_sysenter(uint64_t *at)
{
	static volatile uint64_t where;
	long ax = __NR_getpid;

	f_sig = 0;
	if (sigsetjmp(fault_jmp, 1)) {
		*at = where;
		return -1000 - f_sig;
	}
	__asm__ volatile("lea 1f(%%rip), %%rcx\n\t"
			 "mov %%rcx, %1\n\t"
			 "1: sysenter\n\t"
			 : "+a"(ax), "=m"(where)
			 :
			 : "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory");
	*at = where;
	return ax;
}

static void legacy_entries(void *arg)
{
	uint64_t at = 0;
	long r;

	(void)arg;
	catch_faults();
	/* 32-bit getpid (20). Linux with IA-32 emulation runs it; husk raises SIGSEGV. */
	r = do_int80(20, 0, &at);
	if (in_husk())
		CHECK(r == -1000 - SIGSEGV && f_code == SI_KERNEL && f_rip == at && f_addr == 0,
		      "int $0x80 (getpid): result %ld signal %d code %#x rip %#llx (instruction at "
		      "%#llx) addr %#llx",
		      r, f_sig, f_code, (unsigned long long)f_rip, (unsigned long long)at,
		      (unsigned long long)f_addr);
	else
		CHECK(r == getpid() || (r == -1000 - SIGSEGV && f_code == SI_KERNEL && f_rip == at),
		      "int $0x80 (getpid): result %ld signal %d code %#x", r, f_sig, f_code);
	if (in_husk()) {
		/* 32-bit exit, execve, clone, mmap2: none may run. */
		static const long nrs[] = { 1, 11, 120, 192, 90 };

		for (size_t i = 0; i < sizeof(nrs) / sizeof(nrs[0]); i++) {
			r = do_int80(nrs[i], 42, &at);
			CHECK(r == -1000 - SIGSEGV && f_code == SI_KERNEL && f_rip == at,
			      "int $0x80 (%ld): result %ld signal %d code %#x", nrs[i], r, f_sig,
			      f_code);
		}
	}
	/* sysenter in 64-bit mode: #UD on AMD; on Intel Linux has no 64-bit path either. */
	r = do_sysenter(&at);
	CHECK((r == -1000 - SIGILL && f_rip == at) || r == -1000 - SIGSEGV,
	      "sysenter: result %ld signal %d code %#x rip %#llx (instruction at %#llx)", r, f_sig,
	      f_code, (unsigned long long)f_rip, (unsigned long long)at);
	/* The process goes on: a system call still works. */
	CHECK_RET(syscall(SYS_getpid), getpid());
}

/* ---- (a) the stub's code page ----------------------------------------------------------------- */

/* Whether the byte at addr can be read (a fault is caught). */
static bool readable(uint64_t addr, uint8_t *byte)
{
	f_sig = 0;
	if (sigsetjmp(fault_jmp, 1))
		return false;
	*byte = *(volatile uint8_t *)addr;
	return true;
}

#define MAX_PAGES 16
static uint64_t stub_pages[MAX_PAGES];
static int nstub_pages;

static void find_stub_pages(void)
{
	uint8_t b;

	catch_faults();
	for (uint64_t a = STUB_ADDR_FIRST; a < STUB_ADDR_LIMIT && nstub_pages < MAX_PAGES;
	     a += STUB_ADDR_STEP) {
		if (readable(a, &b))
			stub_pages[nstub_pages++] = a;
	}
	signal(SIGSEGV, SIG_DFL);
	signal(SIGILL, SIG_DFL);
	signal(SIGBUS, SIG_DFL);
	signal(SIGTRAP, SIG_DFL);
	for (int i = 0; i < nstub_pages; i++)
		printf("note: a stub page is readable from the guest at %#llx\n",
		       (unsigned long long)stub_pages[i]);
}

struct jump {
	uint64_t to;
	long nr;
};

/* Jumps to j->to with rax = j->nr and arguments that would pass the stubs' own checks. */
static int jump_there(void *arg)
{
	struct jump *j = arg;

	__asm__ volatile("mov %0, %%r11\n\t"
			 "mov %1, %%rax\n\t"
			 "mov $0x10000, %%edi\n\t"
			 "mov $4096, %%esi\n\t"
			 "mov $7, %%edx\n\t"
			 "mov $0x11, %%r10d\n\t"
			 "mov $3, %%r8d\n\t"
			 "xor %%r9d, %%r9d\n\t"
			 "jmp *%%r11\n\t"
			 :
			 : "r"(j->to), "r"(j->nr)
			 : "rax", "rdi", "rsi", "rdx", "r10", "r8", "r9", "r11", "memory");
	return 0; /* not reached */
}

static void jump_and_check(uint64_t to, long nr, bool must_signal)
{
	struct jump j = { .to = to, .nr = nr };
	char buf[64];
	int st = 0;
	enum outcome o = run_child(jump_there, &j, &st);

	CHECK(o != STUCK, "jump to %#llx with rax %ld: %s", (unsigned long long)to, nr,
	      outcome_str(o, st, buf, sizeof(buf)));
	if (must_signal)
		CHECK(o == ENDED && WIFSIGNALED(st), "jump to %#llx with rax %ld: %s",
		      (unsigned long long)to, nr, outcome_str(o, st, buf, sizeof(buf)));
	if (o != ENDED || !WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
		printf("note: jump to %#llx with rax %ld: %s\n", (unsigned long long)to, nr,
		       outcome_str(o, st, buf, sizeof(buf)));
}

static void check_code_page(void)
{
	static const long nrs[] = {
		__NR_mmap,  __NR_mprotect, __NR_munmap,	    __NR_ptrace, __NR_fork,    __NR_execve,
		__NR_clone, __NR_read,	   __NR_write,	    __NR_kill,	 __NR_seccomp, __NR_openat,
		__NR_prctl, __NR_socket,   __NR_exit_group, __NR_getpid, __NR_sendmsg, 1000,
	};

	if (nstub_pages == 0) {
		/* Not readable: then not there for the guest either. */
		for (uint64_t a = STUB_ADDR_FIRST; a < STUB_ADDR_LIMIT; a += STUB_ADDR_STEP)
			jump_and_check(a, __NR_mmap, true);
		return;
	}
	for (int i = 0; i < nstub_pages; i++) {
		const uint8_t *p = (const uint8_t *)stub_pages[i];
		uint64_t sites[64];
		int n = 0;

		for (int k = 0; k + 1 < 4096 && n < 64; k++) {
			if (p[k] == 0x0f && p[k + 1] == 0x05)
				sites[n++] = stub_pages[i] + (uint64_t)k;
		}
		printf("note: %d syscall instructions in the stub page at %#llx\n", n,
		       (unsigned long long)stub_pages[i]);
		for (int s = 0; s < n; s++)
			jump_and_check(sites[s], __NR_mmap, false);
		for (size_t k = 0; n > 0 && k < sizeof(nrs) / sizeof(nrs[0]); k++)
			jump_and_check(sites[0], nrs[k], false);
		if (hang_checks && n > 0) {
			jump_and_check(sites[0], __NR_exit, false);
			jump_and_check(sites[0], __NR_rt_sigreturn, false);
		}
	}
}

/* ---- (b) the seccomp platform's thread areas ------------------------------------------------ */

struct area_write {
	uint64_t area;
	uint8_t fill;
	size_t len;
};

/* Fills the area (guarding faults), then makes calls; 0: calls fine, 3: the write faulted. */
static int scribble_own_area(void *arg)
{
	struct area_write *w = arg;
	int p[2];
	char c = 0;
	volatile size_t done = 0;

	catch_faults();
	if (sigsetjmp(fault_jmp, 1) == 0) {
		for (; done < w->len; done++)
			((volatile uint8_t *)w->area)[done] = w->fill;
	} else {
		return 3;
	}
	if (syscall(SYS_getpid) != getpid() || pipe(p) < 0 || write(p[1], "x", 1) != 1 ||
	    read(p[0], &c, 1) != 1 || c != 'x')
		return 4;
	return 0;
}

struct sleeper {
	int fd[2];
	pid_t tid;
	char got;
	long n;
};

static void *read_one(void *arg)
{
	struct sleeper *s = arg;

	__atomic_store_n(&s->tid, gettid(), __ATOMIC_RELEASE);
	s->n = read(s->fd[0], &s->got, 1);
	return NULL;
}

/* Main thread scribbles over the area of a thread (slot 1) that sleeps in read, then wakes it. */
static int scribble_sleeper_area(void *arg)
{
	struct area_write *w = arg;
	struct sleeper s = { 0 };
	pthread_t th;

	if (pipe(s.fd) < 0 || pthread_create(&th, NULL, read_one, &s) != 0)
		return 5;
	while (__atomic_load_n(&s.tid, __ATOMIC_ACQUIRE) == 0 || thread_state(s.tid) != 'S')
		sched_yield();
	catch_faults();
	if (sigsetjmp(fault_jmp, 1) == 0) {
		for (size_t i = 0; i < w->len; i++)
			((volatile uint8_t *)w->area)[i] = w->fill;
	} else {
		if (write(s.fd[1], "y", 1) != 1)
			return 6;
		pthread_join(th, NULL);
		return 3;
	}
	if (write(s.fd[1], "y", 1) != 1)
		return 6;
	pthread_join(th, NULL);
	return s.n == 1 && s.got == 'y' ? 0 : 4;
}

static void check_area(uint64_t area, int (*fn)(void *), uint8_t fill, size_t len, const char *what)
{
	struct area_write w = { .area = area, .fill = fill, .len = len };
	char buf[64];
	int st = 0;
	enum outcome o = run_child(fn, &w, &st);

	/* Acceptable: the calls work (0), the write faults as on Linux (3), a kill. */
	CHECK(o == ENDED && (WIFSIGNALED(st) || (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 3)),
	      "%s at %#llx (fill %#x): %s", what, (unsigned long long)area, fill,
	      outcome_str(o, st, buf, sizeof(buf)));
	printf("note: %s at %#llx (fill %#x): %s\n", what, (unsigned long long)area, fill,
	       outcome_str(o, st, buf, sizeof(buf)));
}

static void check_areas(void)
{
	uint64_t bases[MAX_PAGES];
	int n = 0;

	/* The areas of whichever stub page was found, or every candidate's. */
	if (nstub_pages) {
		for (int i = 0; i < nstub_pages; i++)
			bases[n++] = stub_pages[i];
	} else {
		for (uint64_t a = STUB_ADDR_FIRST + 0x40000000UL;
		     a < STUB_ADDR_LIMIT && n < MAX_PAGES; a += STUB_ADDR_STEP)
			bases[n++] = a;
	}
	for (int i = 0; i < n; i++) {
		uint64_t slot0 = bases[i] + SC_AREAS_OFF, slot1 = slot0 + SC_AREA_SIZE;

		check_area(slot0, scribble_own_area, 0x41, 4096, "own area header");
		check_area(slot0, scribble_own_area, 0xff, SC_AREA_SIZE, "own area");
		check_area(slot0, scribble_own_area, 0x00, 4096, "own area header");
		check_area(slot0, scribble_sleeper_area, 0x41, 4096, "a sleeping thread's area");
		check_area(slot1, scribble_sleeper_area, 0x41, 4096, "a sleeping thread's area");
		if (hang_checks) {
			check_area(slot0 + SC_A_STUB_SLEEPS, scribble_sleeper_area, 0, 4,
				   "a sleeping thread's sleep flag");
			check_area(slot1 + SC_A_STUB_SLEEPS, scribble_sleeper_area, 0, 4,
				   "a sleeping thread's sleep flag");
		}
	}
}

int main(int argc, char **argv)
{
	int p[2];
	char c = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	hang_checks = !(argc > 1 && strcmp(argv[1], "--no-hang") == 0);
	check_signals();
	in_child(legacy_entries, NULL);
	if (in_husk()) {
		find_stub_pages();
		check_code_page();
		check_areas();
	} else {
		printf("note: the stub checks are skipped: not in husk\n");
	}
	/* This process is unaffected. */
	CHECK_RET(syscall(SYS_getpid), getpid());
	CHECK_OK(pipe(p));
	CHECK_RET(write(p[1], "z", 1), 1);
	CHECK(read(p[0], &c, 1) == 1 && c == 'z', "pipe after the children");
	return finish();
}
