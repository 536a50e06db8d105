/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ptrace(2) conformance: TRACEME and the exec SIGTRAP, PTRACE_SYSCALL stops with TRACESYSGOOD
 * and GET_SYSCALL_INFO, changing a result at syscall exit and skipping a call at entry,
 * PEEK/POKE (read-only data included), GETREGS/PEEKUSER, signal suppression and injection, fork
 * auto-attach, EXITKILL, SEIZE + INTERRUPT + LISTEN, process_vm_readv/writev and the EPERM and
 * ESRCH cases. Runs as root (natively and in husk).
 */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>

#include "check.h"

#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif

/* The subset of struct ptrace_syscall_info the checks read. */
struct sc_info {
	uint8_t op;
	uint8_t pad[3];
	uint32_t arch;
	uint64_t ip, sp;
	union {
		struct {
			uint64_t nr, args[6];
		} entry;
		struct {
			int64_t rval;
			uint8_t is_error;
		} exit;
	};
};

static volatile long data_word = 0x1234;
static const long ro_word = 1;
static volatile long stack_addr;
static volatile int usr1_count, usr2_count;

static long pt(int req, pid_t pid, unsigned long addr, unsigned long data)
{
	return syscall(SYS_ptrace, req, pid, addr, data);
}

/* Waits for pid (any kind of child or tracee). Returns the status, or -1. */
static int wait_for(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, __WALL) != pid)
		return -1;
	return st;
}

/* A child that asks to be traced and stops itself with SIGSTOP, then runs fn. */
static pid_t traced_child(int (*fn)(void))
{
	pid_t pid = fork();

	if (pid == 0) {
		if (pt(PTRACE_TRACEME, 0, 0, 0) < 0)
			_exit(100);
		raise(SIGSTOP);
		_exit(fn());
	}
	return pid;
}

/* Waits for the child's initial SIGSTOP; true if it came. */
static bool initial_stop(pid_t pid)
{
	int st = wait_for(pid);

	return st != -1 && WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP;
}

/* Resumes with req (CONT/SYSCALL) until the tracee exits; returns its wait status. */
static int run_to_exit(pid_t pid)
{
	int st;

	for (;;) {
		if (pt(PTRACE_CONT, pid, 0, 0) < 0)
			return -1;
		st = wait_for(pid);
		if (st == -1 || !WIFSTOPPED(st))
			return st;
	}
}

/* --- TRACEME, TracerPid, exec --- */

static int tracer_pid_of_self(void)
{
	char buf[4096];
	FILE *f = fopen("/proc/self/status", "r");
	int pid = -1;

	if (!f)
		return -1;
	while (fgets(buf, sizeof(buf), f)) {
		if (sscanf(buf, "TracerPid: %d", &pid) == 1)
			break;
	}
	fclose(f);
	return pid;
}

static void test_traceme_exec(const char *self)
{
	siginfo_t si;
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		if (pt(PTRACE_TRACEME, 0, 0, 0) < 0)
			_exit(100);
		/* A second TRACEME: already traced. */
		if (pt(PTRACE_TRACEME, 0, 0, 0) != -1 || errno != EPERM)
			_exit(101);
		if (tracer_pid_of_self() != getppid())
			_exit(102);
		execl(self, self, "exit-7", (char *)NULL);
		_exit(103);
	}
	st = wait_for(pid);
	/* The legacy SIGTRAP after execve (no PTRACE_O_TRACEEXEC), sent as SI_USER. */
	CHECK(st != -1 && WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP, "status %#x", st);
	CHECK_RET(pt(PTRACE_GETSIGINFO, pid, 0, (unsigned long)&si), 0);
	CHECK(si.si_signo == SIGTRAP && si.si_code == SI_USER, "signo %d code %d", si.si_signo,
	      si.si_code);
	st = run_to_exit(pid);
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 7, "status %#x", st);

	/* With PTRACE_O_TRACEEXEC: the exec event, GETEVENTMSG the tid. */
	pid = fork();
	if (pid == 0) {
		pt(PTRACE_TRACEME, 0, 0, 0);
		raise(SIGSTOP);
		execl(self, self, "exit-7", (char *)NULL);
		_exit(103);
	}
	if (!initial_stop(pid)) {
		CHECK(0, "no initial stop");
		return;
	}
	CHECK_RET(pt(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACEEXEC), 0);
	CHECK_RET(pt(PTRACE_CONT, pid, 0, 0), 0);
	st = wait_for(pid);
	CHECK(st != -1 && WIFSTOPPED(st) && (st >> 8) == (SIGTRAP | (PTRACE_EVENT_EXEC << 8)),
	      "status %#x", st);
	unsigned long msg = 0;
	CHECK_RET(pt(PTRACE_GETEVENTMSG, pid, 0, (unsigned long)&msg), 0);
	CHECK(msg == (unsigned long)pid, "eventmsg %lu, pid %d", msg, pid);
	st = run_to_exit(pid);
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 7, "status %#x", st);
}

/* --- syscall stops --- */

static int getppid_loop(void)
{
	for (int i = 0; i < 5; i++)
		syscall(SYS_getppid);
	return 0;
}

static void test_syscall_stops(void)
{
	struct user_regs_struct r;
	struct sc_info info;
	int st, entries = 0, exits = 0, info_ok = 0;
	bool entering = true;
	pid_t pid = traced_child(getppid_loop);

	if (!initial_stop(pid)) {
		CHECK(0, "no initial stop");
		return;
	}
	CHECK_RET(pt(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD), 0);
	/* At a signal-delivery-stop, GET_SYSCALL_INFO says "none" but has ip and sp. */
	memset(&info, 0xff, sizeof(info));
	long n = pt(PTRACE_GET_SYSCALL_INFO, pid, sizeof(info), (unsigned long)&info);
	CHECK(n == 24 && info.op == 0 && info.arch == 0xc000003e && info.ip && info.sp,
	      "size %ld op %d arch %#x", n, info.op, info.arch);
	for (;;) {
		CHECK_RET(pt(PTRACE_SYSCALL, pid, 0, 0), 0);
		st = wait_for(pid);
		if (st == -1 || !WIFSTOPPED(st))
			break;
		CHECK(WSTOPSIG(st) == (SIGTRAP | 0x80), "status %#x", st);
		if (pt(PTRACE_GETREGS, pid, 0, (unsigned long)&r) < 0)
			break;
		n = pt(PTRACE_GET_SYSCALL_INFO, pid, sizeof(info), (unsigned long)&info);
		if (r.orig_rax == SYS_getppid) {
			if (entering) {
				entries++;
				if (n == 80 && info.op == 1 && info.entry.nr == SYS_getppid)
					info_ok++;
			} else {
				exits++;
				if (n == 33 && info.op == 2 && info.exit.rval == getpid() &&
				    !info.exit.is_error)
					info_ok++;
			}
		}
		entering = !entering;
	}
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
	CHECK(entries == 5 && exits == 5, "entries %d exits %d", entries, exits);
	CHECK(info_ok == 10, "GET_SYSCALL_INFO right at %d of 10 stops", info_ok);
}

/* Runs the tracee with PTRACE_SYSCALL to the entry (entry true) or exit stop of call nr. */
static bool syscall_stop_at(pid_t pid, long nr, bool entry, struct user_regs_struct *r)
{
	bool entering = true;
	int st;

	for (;;) {
		if (pt(PTRACE_SYSCALL, pid, 0, 0) < 0)
			return false;
		st = wait_for(pid);
		if (st == -1 || !WIFSTOPPED(st))
			return false;
		if (pt(PTRACE_GETREGS, pid, 0, (unsigned long)r) < 0)
			return false;
		if ((long)r->orig_rax == nr && entering == entry)
			return true;
		entering = !entering;
	}
}

static int check_getppid_changed(void)
{
	return syscall(SYS_getppid) == 4242 ? 0 : 1;
}

static int check_renumbered(void)
{
	/* The tracer turns getppid into getpid at entry. */
	return syscall(SYS_getppid) == getpid() ? 0 : 1;
}

static int check_skipped(void)
{
	/* The tracer skips the kill and makes getpid return 777. */
	if (syscall(SYS_getpid) != 777)
		return 1;
	syscall(SYS_kill, getpid(), SIGKILL);
	return 0;
}

static void test_change_and_skip(void)
{
	struct user_regs_struct r;
	int st;
	pid_t pid = traced_child(check_getppid_changed);

	if (initial_stop(pid) && syscall_stop_at(pid, SYS_getppid, false, &r)) {
		CHECK(r.rax == (unsigned long)getpid(), "getppid returned %llu", r.rax);
		/* The result through POKEUSER. */
		CHECK_RET(pt(PTRACE_POKEUSER, pid, offsetof(struct user_regs_struct, rax), 4242),
			  0);
	} else {
		CHECK(0, "no getppid exit stop");
	}
	st = run_to_exit(pid);
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);

	pid = traced_child(check_renumbered);
	if (initial_stop(pid) && syscall_stop_at(pid, SYS_getppid, true, &r)) {
		r.orig_rax = SYS_getpid;
		CHECK_RET(pt(PTRACE_SETREGS, pid, 0, (unsigned long)&r), 0);
	} else {
		CHECK(0, "no getppid entry stop");
	}
	st = run_to_exit(pid);
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);

	pid = traced_child(check_skipped);
	if (initial_stop(pid) && syscall_stop_at(pid, SYS_getpid, true, &r)) {
		CHECK(r.rax == (unsigned long)-ENOSYS, "rax at entry %lld", (long long)r.rax);
		r.orig_rax = -1;
		r.rax = 777;
		CHECK_RET(pt(PTRACE_SETREGS, pid, 0, (unsigned long)&r), 0);
	} else {
		CHECK(0, "no getpid entry stop");
	}
	/* The exit stop of the skipped call shows the tracer's result. */
	CHECK_RET(pt(PTRACE_SYSCALL, pid, 0, 0), 0);
	st = wait_for(pid);
	CHECK_RET(pt(PTRACE_GETREGS, pid, 0, (unsigned long)&r), 0);
	CHECK(st != -1 && WIFSTOPPED(st) && r.rax == 777, "status %#x rax %lld", st,
	      (long long)r.rax);
	if (syscall_stop_at(pid, SYS_kill, true, &r)) {
		r.orig_rax = -1;
		r.rax = 0;
		CHECK_RET(pt(PTRACE_SETREGS, pid, 0, (unsigned long)&r), 0);
	} else {
		CHECK(0, "no kill entry stop");
	}
	st = run_to_exit(pid);
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
}

/* --- memory and registers --- */

static int check_memory(void)
{
	volatile long local = 0;

	stack_addr = (long)&local;
	raise(SIGSTOP);
	if (data_word != 0x5678)
		return 1;
	if (*(volatile const long *)&ro_word != 2)
		return 2;
	/* The tracer set MXCSR's rounding control to "toward zero". */
	unsigned int mxcsr = 0;
	__asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
	if ((mxcsr & 0x6000) != 0x6000)
		return 3;
	return 0;
}

static void test_peek_poke_regs(void)
{
	struct user_regs_struct r;
	unsigned long w = 0, sa = 0;
	int st;
	pid_t pid = traced_child(check_memory);

	if (!initial_stop(pid)) {
		CHECK(0, "no initial stop");
		return;
	}
	CHECK_RET(pt(PTRACE_CONT, pid, 0, 0), 0);
	st = wait_for(pid);
	CHECK(st != -1 && WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP, "status %#x", st);

	CHECK_RET(pt(PTRACE_PEEKDATA, pid, (unsigned long)&data_word, (unsigned long)&w), 0);
	CHECK(w == 0x1234, "peek %#lx", w);
	CHECK_RET(pt(PTRACE_POKEDATA, pid, (unsigned long)&data_word, 0x5678), 0);
	/* Read-only data: written in the tracee's private copy, as a breakpoint in text. */
	CHECK_RET(pt(PTRACE_POKEDATA, pid, (unsigned long)&ro_word, 2), 0);
	CHECK_RET(pt(PTRACE_PEEKTEXT, pid, (unsigned long)&ro_word, (unsigned long)&w), 0);
	CHECK(w == 2, "peek of the poked read-only word %#lx", w);
	CHECK(ro_word == 1, "the tracer's own copy changed: %ld", ro_word);
	CHECK_ERR(pt(PTRACE_PEEKDATA, pid, 8, (unsigned long)&w), EIO);
	CHECK_ERR(pt(PTRACE_POKEDATA, pid, 8, 0), EIO);

	/* rsp near the child's local variable; rip just after a `syscall` (raise's tgkill). */
	CHECK_RET(pt(PTRACE_GETREGS, pid, 0, (unsigned long)&r), 0);
	CHECK_RET(pt(PTRACE_PEEKDATA, pid, (unsigned long)&stack_addr, (unsigned long)&sa), 0);
	CHECK(r.rsp < sa && sa - r.rsp < 65536, "rsp %#llx, local at %#lx", r.rsp, sa);
	CHECK_RET(pt(PTRACE_PEEKTEXT, pid, r.rip - 2, (unsigned long)&w), 0);
	CHECK((w & 0xffff) == 0x050f, "bytes before rip %#lx", w & 0xffff);
	CHECK(r.cs == 0x33 && r.ss == 0x2b, "cs %#llx ss %#llx", r.cs, r.ss);
	CHECK_RET(pt(PTRACE_PEEKUSER, pid, offsetof(struct user_regs_struct, rip),
		     (unsigned long)&w),
		  0);
	CHECK(w == r.rip, "PEEKUSER rip %#lx, GETREGS %#llx", w, r.rip);
	CHECK_RET(pt(PTRACE_PEEKUSER, pid, offsetof(struct user, u_debugreg[7]), (unsigned long)&w),
		  0);
	CHECK_ERR(pt(PTRACE_PEEKUSER, pid, 3, (unsigned long)&w), EIO);
	CHECK_ERR(pt(PTRACE_PEEKUSER, pid, 4096, (unsigned long)&w), EIO);
	/* A null code segment and a non-canonical FS base are refused. */
	r.cs = 0;
	CHECK_ERR(pt(PTRACE_SETREGS, pid, 0, (unsigned long)&r), EIO);
	r.cs = 0x33;
	r.fs_base = 1ULL << 63;
	CHECK_ERR(pt(PTRACE_SETREGS, pid, 0, (unsigned long)&r), EIO);
	CHECK_RET(pt(PTRACE_GETREGS, pid, 0, (unsigned long)&r), 0);

	/* FP registers: the FXSAVE area has a sane MXCSR (0x1f80 after start). */
	struct user_fpregs_struct fp;
	CHECK_RET(pt(PTRACE_GETFPREGS, pid, 0, (unsigned long)&fp), 0);
	CHECK(fp.mxcsr == 0x1f80, "mxcsr %#x", fp.mxcsr);
	fp.mxcsr |= 0x6000;
	CHECK_RET(pt(PTRACE_SETFPREGS, pid, 0, (unsigned long)&fp), 0);
	struct iovec iov = { &r, sizeof(r) };
	CHECK_RET(pt(PTRACE_GETREGSET, pid, 1 /* NT_PRSTATUS */, (unsigned long)&iov), 0);
	CHECK(iov.iov_len == sizeof(r), "NT_PRSTATUS length %zu", iov.iov_len);

	/* process_vm_readv/writev on the stopped child. */
	long v = 0, nv = 0x9abc;
	struct iovec lio = { &v, sizeof(v) }, rio = { (void *)&data_word, sizeof(v) };
	CHECK_RET(process_vm_readv(pid, &lio, 1, &rio, 1, 0), sizeof(v));
	CHECK(v == 0x5678, "process_vm_readv read %#lx", v);
	lio.iov_base = &nv;
	CHECK_RET(process_vm_writev(pid, &lio, 1, &rio, 1, 0), sizeof(v));
	CHECK_RET(pt(PTRACE_PEEKDATA, pid, (unsigned long)&data_word, (unsigned long)&w), 0);
	CHECK(w == 0x9abc, "after process_vm_writev %#lx", w);
	CHECK_ERR(process_vm_readv(pid, &lio, 1, &rio, 1, 1), EINVAL);
	rio.iov_base = (void *)8;
	CHECK_ERR(process_vm_readv(pid, &lio, 1, &rio, 1, 0), EFAULT);
	CHECK_RET(pt(PTRACE_POKEDATA, pid, (unsigned long)&data_word, 0x5678), 0);

	st = run_to_exit(pid);
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
}

/* --- signals --- */

static void on_usr1(int sig)
{
	(void)sig;
	usr1_count++;
}

static void on_usr2(int sig)
{
	(void)sig;
	usr2_count++;
}

static int check_signals(void)
{
	raise(SIGUSR1); /* suppressed by the tracer */
	raise(SIGUSR2); /* replaced by SIGUSR1 */
	return usr1_count * 10 + usr2_count;
}

static void test_signals(void)
{
	siginfo_t si;
	int st;
	pid_t pid;

	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	pid = traced_child(check_signals);
	signal(SIGUSR1, SIG_DFL);
	signal(SIGUSR2, SIG_DFL);
	if (!initial_stop(pid)) {
		CHECK(0, "no initial stop");
		return;
	}
	CHECK_RET(pt(PTRACE_CONT, pid, 0, 0), 0);
	st = wait_for(pid);
	CHECK(st != -1 && WIFSTOPPED(st) && WSTOPSIG(st) == SIGUSR1, "status %#x", st);
	CHECK_RET(pt(PTRACE_GETSIGINFO, pid, 0, (unsigned long)&si), 0);
	CHECK(si.si_signo == SIGUSR1 && si.si_code == SI_TKILL && si.si_pid == pid,
	      "signo %d code %d pid %d", si.si_signo, si.si_code, si.si_pid);
	si.si_errno = 42;
	CHECK_RET(pt(PTRACE_SETSIGINFO, pid, 0, (unsigned long)&si), 0);
	memset(&si, 0, sizeof(si));
	CHECK_RET(pt(PTRACE_GETSIGINFO, pid, 0, (unsigned long)&si), 0);
	CHECK(si.si_errno == 42 && si.si_signo == SIGUSR1, "errno %d signo %d", si.si_errno,
	      si.si_signo);
	CHECK_RET(pt(PTRACE_CONT, pid, 0, 0), 0);
	st = wait_for(pid);
	CHECK(st != -1 && WIFSTOPPED(st) && WSTOPSIG(st) == SIGUSR2, "status %#x", st);
	CHECK_ERR(pt(PTRACE_CONT, pid, 0, 65), EIO);
	CHECK_RET(pt(PTRACE_CONT, pid, 0, SIGUSR1), 0);
	/* The injected SIGUSR1 is delivered without another stop. */
	st = wait_for(pid);
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 10, "status %#x", st);

	/* A signal that kills: the tracer sees the stop, then the death. */
	pid = traced_child(getppid_loop);
	if (initial_stop(pid)) {
		kill(pid, SIGTERM);
		CHECK_RET(pt(PTRACE_CONT, pid, 0, 0), 0);
		st = wait_for(pid);
		CHECK(st != -1 && WIFSTOPPED(st) && WSTOPSIG(st) == SIGTERM, "status %#x", st);
		CHECK_RET(pt(PTRACE_CONT, pid, 0, SIGTERM), 0);
		st = wait_for(pid);
		CHECK(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status %#x", st);
	}
}

/* --- fork events --- */

static int forker(void)
{
	int st;
	pid_t c = fork();

	if (c == 0)
		_exit(7);
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st))
		return 50;
	return WEXITSTATUS(st);
}

static void test_fork_event(void)
{
	unsigned long msg = 0;
	int st;
	pid_t pid = traced_child(forker), gc;

	if (!initial_stop(pid)) {
		CHECK(0, "no initial stop");
		return;
	}
	CHECK_RET(pt(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACEFORK), 0);
	CHECK_RET(pt(PTRACE_CONT, pid, 0, 0), 0);
	st = wait_for(pid);
	CHECK(st != -1 && WIFSTOPPED(st) && (st >> 8) == (SIGTRAP | (PTRACE_EVENT_FORK << 8)),
	      "status %#x", st);
	CHECK_RET(pt(PTRACE_GETEVENTMSG, pid, 0, (unsigned long)&msg), 0);
	gc = (pid_t)msg;
	CHECK(gc > 0 && gc != pid, "new pid %d", gc);
	/* The new process is traced from the start: it stops with SIGSTOP. */
	st = wait_for(gc);
	CHECK(st != -1 && WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP, "grandchild status %#x", st);
	CHECK_RET(pt(PTRACE_CONT, gc, 0, 0), 0);
	/* Its exit is the tracer's to see first; then its real parent reaps it. */
	st = wait_for(gc);
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 7, "grandchild status %#x", st);
	st = run_to_exit(pid);
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 7, "status %#x", st);
}

static int vforker(void)
{
	int st;
	pid_t c = vfork();

	if (c == 0)
		_exit(9);
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st))
		return 50;
	return WEXITSTATUS(st);
}

static void *thread_fn(void *arg)
{
	return arg;
}

static int threader(void)
{
	pthread_t th;
	void *ret = NULL;

	if (pthread_create(&th, NULL, thread_fn, (void *)4) != 0)
		return 50;
	pthread_join(th, &ret);
	return (int)(long)ret;
}

static int exiter(void)
{
	return 5;
}

/* Resumes pid and expects the event stop ev; returns GETEVENTMSG, or -1. */
static long expect_event(pid_t pid, int ev)
{
	unsigned long msg = 0;
	int st;

	if (pt(PTRACE_CONT, pid, 0, 0) < 0)
		return -1;
	st = wait_for(pid);
	CHECK(st != -1 && WIFSTOPPED(st) && (st >> 8) == (SIGTRAP | (ev << 8)),
	      "event %d: status %#x", ev, st);
	if (st == -1 || !WIFSTOPPED(st))
		return -1;
	CHECK_RET(pt(PTRACE_GETEVENTMSG, pid, 0, (unsigned long)&msg), 0);
	return (long)msg;
}

static void test_other_events(void)
{
	long msg;
	int st;
	pid_t pid;

	/* vfork: the VFORK event, the child's SIGSTOP, then VFORK_DONE once it exited. */
	pid = traced_child(vforker);
	if (initial_stop(pid)) {
		CHECK_RET(pt(PTRACE_SETOPTIONS, pid, 0,
			     PTRACE_O_TRACEVFORK | PTRACE_O_TRACEVFORKDONE),
			  0);
		msg = expect_event(pid, PTRACE_EVENT_VFORK);
		st = msg > 0 ? wait_for((pid_t)msg) : -1;
		CHECK(st != -1 && WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP, "status %#x", st);
		CHECK_RET(pt(PTRACE_CONT, (pid_t)msg, 0, 0), 0);
		st = wait_for((pid_t)msg);
		CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 9, "status %#x", st);
		CHECK_RET(expect_event(pid, PTRACE_EVENT_VFORK_DONE), msg);
		st = run_to_exit(pid);
		CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 9, "status %#x", st);
	}

	/* A thread: the CLONE event; the thread's exit is reported to the tracer (__WALL). */
	pid = traced_child(threader);
	if (initial_stop(pid)) {
		CHECK_RET(pt(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACECLONE), 0);
		msg = expect_event(pid, PTRACE_EVENT_CLONE);
		st = msg > 0 ? wait_for((pid_t)msg) : -1;
		CHECK(st != -1 && WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP, "status %#x", st);
		CHECK_RET(pt(PTRACE_CONT, (pid_t)msg, 0, 0), 0);
		st = wait_for((pid_t)msg);
		CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "thread status %#x", st);
		st = run_to_exit(pid);
		CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 4, "status %#x", st);
	}

	/* PTRACE_O_TRACEEXIT: a stop before the exit, GETEVENTMSG the wait status. */
	pid = traced_child(exiter);
	if (initial_stop(pid)) {
		CHECK_RET(pt(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACEEXIT), 0);
		CHECK_RET(expect_event(pid, PTRACE_EVENT_EXIT), 5 << 8);
		st = run_to_exit(pid);
		CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 5, "status %#x", st);
	}
}

/* --- single step and breakpoints --- */

static volatile int bp_hits;

__attribute__((noinline)) static void bp_target(void)
{
	bp_hits++;
	__asm__ volatile("" ::: "memory");
}

static int stepper(void)
{
	raise(SIGSTOP);
	bp_target();
	return bp_hits == 1 ? 0 : 1;
}

static void test_step_and_breakpoint(void)
{
	struct user_regs_struct r;
	unsigned long addr = (unsigned long)bp_target, orig = 0;
	unsigned long long last;
	int st, moved = 0, traps = 0;
	pid_t pid = traced_child(stepper);

	if (!initial_stop(pid) || pt(PTRACE_CONT, pid, 0, 0) < 0) {
		CHECK(0, "no initial stop");
		return;
	}
	st = wait_for(pid);
	CHECK(st != -1 && WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP, "status %#x", st);
	CHECK_RET(pt(PTRACE_GETREGS, pid, 0, (unsigned long)&r), 0);
	last = r.rip;
	/* Single steps: each a SIGTRAP, rip moving on (the first one over raise's return path). */
	for (int i = 0; i < 10; i++) {
		if (pt(PTRACE_SINGLESTEP, pid, 0, 0) < 0)
			break;
		st = wait_for(pid);
		if (st == -1 || !WIFSTOPPED(st) || WSTOPSIG(st) != SIGTRAP)
			break;
		traps++;
		pt(PTRACE_GETREGS, pid, 0, (unsigned long)&r);
		if (r.rip != last)
			moved++;
		last = r.rip;
	}
	CHECK(traps == 10 && moved == 10, "%d traps, rip moved %d times", traps, moved);

	/* An int3 in the read-only text: SIGTRAP with rip just after it. */
	CHECK_RET(pt(PTRACE_PEEKTEXT, pid, addr, (unsigned long)&orig), 0);
	CHECK_RET(pt(PTRACE_POKETEXT, pid, addr, (orig & ~0xffUL) | 0xcc), 0);
	CHECK_RET(pt(PTRACE_CONT, pid, 0, 0), 0);
	st = wait_for(pid);
	CHECK(st != -1 && WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP, "status %#x", st);
	CHECK_RET(pt(PTRACE_GETREGS, pid, 0, (unsigned long)&r), 0);
	CHECK(r.rip == addr + 1, "rip %#llx, breakpoint at %#lx", r.rip, addr);
	/* As a debugger: restore the byte, back up rip, step over, continue. */
	CHECK_RET(pt(PTRACE_POKETEXT, pid, addr, orig), 0);
	r.rip = addr;
	CHECK_RET(pt(PTRACE_SETREGS, pid, 0, (unsigned long)&r), 0);
	CHECK_RET(pt(PTRACE_SINGLESTEP, pid, 0, 0), 0);
	st = wait_for(pid);
	CHECK(st != -1 && WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP, "status %#x", st);
	st = run_to_exit(pid);
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
}

/* --- SEIZE, INTERRUPT, LISTEN, EXITKILL --- */

static pid_t sleeper(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		for (;;)
			pause();
	}
	return pid;
}

static void test_seize(void)
{
	int st;
	pid_t pid = sleeper();

	CHECK_ERR(pt(PTRACE_SEIZE, pid, 1, 0), EIO);
	CHECK_RET(pt(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACESYSGOOD), 0);
	/* Seizing does not stop it. */
	CHECK_RET(waitpid(pid, &st, WNOHANG | __WALL), 0);
	CHECK_ERR(pt(PTRACE_GETREGS, pid, 0, (unsigned long)&st), ESRCH);
	CHECK_RET(pt(PTRACE_INTERRUPT, pid, 0, 0), 0);
	st = wait_for(pid);
	CHECK(st != -1 && WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP &&
		      (st >> 16) == PTRACE_EVENT_STOP,
	      "status %#x", st);
	CHECK_RET(pt(PTRACE_CONT, pid, 0, 0), 0);

	/* A group stop of a seized tracee: the SIGSTOP delivery stop, then PTRACE_EVENT_STOP. */
	kill(pid, SIGSTOP);
	st = wait_for(pid);
	CHECK(st != -1 && WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP && (st >> 16) == 0,
	      "status %#x", st);
	CHECK_RET(pt(PTRACE_CONT, pid, 0, SIGSTOP), 0);
	st = wait_for(pid);
	CHECK(st != -1 && WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP &&
		      (st >> 16) == PTRACE_EVENT_STOP,
	      "status %#x", st);
	/* LISTEN: stays stopped; SIGCONT makes it trap again. */
	CHECK_RET(pt(PTRACE_LISTEN, pid, 0, 0), 0);
	CHECK_RET(waitpid(pid, &st, WNOHANG | __WALL), 0);
	kill(pid, SIGCONT);
	st = wait_for(pid);
	CHECK(st != -1 && WIFSTOPPED(st) && (st >> 16) == PTRACE_EVENT_STOP, "status %#x", st);
	CHECK_RET(pt(PTRACE_CONT, pid, 0, 0), 0);
	st = wait_for(pid);
	CHECK(st != -1 && WIFSTOPPED(st) && WSTOPSIG(st) == SIGCONT, "status %#x", st);
	CHECK_RET(pt(PTRACE_DETACH, pid, 0, 0), 0);
	CHECK_ERR(pt(PTRACE_INTERRUPT, pid, 0, 0), ESRCH);
	kill(pid, SIGKILL);
	st = wait_for(pid);
	CHECK(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
}

static void test_exitkill(void)
{
	int st;
	pid_t victim = sleeper(), tracer = fork();

	if (tracer == 0)
		_exit(pt(PTRACE_SEIZE, victim, 0, PTRACE_O_EXITKILL) == 0 ? 0 : 1);
	st = wait_for(tracer);
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "tracer status %#x", st);
	/* The tracer's exit killed its tracee. */
	st = wait_for(victim);
	CHECK(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "victim status %#x", st);
}

static void test_eperm(void)
{
	int st;
	pid_t victim = sleeper(), other;

	CHECK_ERR(pt(PTRACE_ATTACH, getpid(), 0, 0), EPERM);
	CHECK_ERR(pt(PTRACE_ATTACH, 0x3ffffff, 0, 0), ESRCH);
	CHECK_ERR(pt(PTRACE_CONT, victim, 0, 0), ESRCH);
	CHECK_RET(pt(PTRACE_ATTACH, victim, 0, 0), 0);
	st = wait_for(victim);
	CHECK(st != -1 && WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP, "status %#x", st);
	/* Already traced: EPERM, also for another process. */
	CHECK_ERR(pt(PTRACE_ATTACH, victim, 0, 0), EPERM);
	other = fork();
	if (other == 0)
		_exit(pt(PTRACE_SEIZE, victim, 0, 0) == -1 && errno == EPERM ? 0 : 1);
	st = wait_for(other);
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "second tracer status %#x", st);
	CHECK_RET(pt(PTRACE_DETACH, victim, 0, 0), 0);

	/* Another uid without CAP_SYS_PTRACE may not trace root's process. */
	other = fork();
	if (other == 0) {
		if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
			_exit(2);
		if (pt(PTRACE_ATTACH, victim, 0, 0) != -1 || errno != EPERM)
			_exit(1);
		struct iovec lio = { &st, sizeof(st) }, rio = { &st, sizeof(st) };
		_exit(process_vm_readv(victim, &lio, 1, &rio, 1, 0) == -1 && errno == EPERM ? 0 :
											      3);
	}
	st = wait_for(other);
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "unprivileged status %#x", st);

	/* DETACH injects its data signal: SIGTERM's default action ends the victim. */
	CHECK_RET(pt(PTRACE_ATTACH, victim, 0, 0), 0);
	st = wait_for(victim);
	CHECK(st != -1 && WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP, "status %#x", st);
	CHECK_RET(pt(PTRACE_DETACH, victim, 0, SIGTERM), 0);
	st = wait_for(victim);
	CHECK(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status %#x", st);
}

int main(int argc, char **argv)
{
	char self[4096];
	ssize_t n;

	if (argc > 1 && strcmp(argv[1], "exit-7") == 0)
		return 7;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0) {
		perror("readlink /proc/self/exe");
		return 1;
	}
	self[n] = 0;
	setvbuf(stdout, NULL, _IONBF, 0);

	test_traceme_exec(self);
	test_syscall_stops();
	test_change_and_skip();
	test_peek_poke_regs();
	test_signals();
	test_fork_event();
	test_other_events();
	test_step_and_breakpoint();
	test_seize();
	test_exitkill();
	test_eperm();
	return finish();
}
