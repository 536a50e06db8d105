/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wakeup: the round trip of one trapped system call between a "stub" process and the "sentry"
 * process that serves it, under several wake-up schemes (see README.md in this folder).
 *
 * The sentry is this process; each run forks a stub that shares one memfd mapping with it (the
 * control words and the stub's alternate signal stack, at the same address in both). The stub
 * calls getppid() W + N times; the sentry answers call i with the value i, and the stub checks
 * it. The stub times the last N calls with the vDSO's clock_gettime (no system call).
 *
 *   native        getppid() runs on the host kernel (no filter, no sentry)
 *   sigsys-local  SECCOMP_RET_TRAP; the SIGSYS handler answers by itself (the cost of the trap)
 *   pingpong*     no trap: the stub runs the futex scheme's hand-over instead of each call (the
 *                 cost of the futex wake-ups alone)
 *   futex*        SECCOMP_RET_TRAP; the handler, on the shared alternate stack, publishes the
 *                 frame and sleeps on a futex; the sentry writes rax into the frame and wakes it
 *   notif*        SECCOMP_RET_USER_NOTIF; the sentry answers with NOTIF_RECV / NOTIF_SEND
 *   hybrid*       SECCOMP_RET_TRAP, then from the handler one system call that the filter (by
 *                 instruction pointer) answers with SECCOMP_RET_USER_NOTIF; the sentry writes
 *                 rax into the frame, then NOTIF_SEND
 *   ptrace*       PTRACE_SYSEMU, waitpid, PTRACE_GETREGS, PTRACE_SETREGS (husk's ptrace platform)
 *
 * "-bound": the sentry and the stub are bound to one CPU; "-sync": the listener has
 * SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP; "-spin": both sides spin a few microseconds before
 * they sleep.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/* Linux 6.6; Debian 12's headers predate them. */
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP 1UL
#endif
#ifndef PTRACE_SYSEMU
#define PTRACE_SYSEMU 31
#endif

#define ST_RUN 1 /* sentry -> stub: the frame holds the result */
#define ST_STOPPED 2 /* stub -> sentry: a call; its frame is at shared->uc */

#define ALTSTACK_SIZE (64 * 1024)
#define MAX_RUNS 64
#define RUN_TIMEOUT_S 300 /* a run that takes longer (a lost wake-up) fails */

enum kind { K_NATIVE, K_SIGSYS, K_PINGPONG, K_FUTEX, K_NOTIF, K_HYBRID, K_PTRACE };

struct scheme {
	const char *name;
	enum kind kind;
	bool bind; /* sentry and stub on one CPU */
	bool spin; /* futex: spin before sleeping */
	bool sync; /* notif, hybrid: SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP */
};

static const struct scheme schemes[] = {
	{ "native", K_NATIVE, false, false, false },
	{ "sigsys-local", K_SIGSYS, false, false, false },
	{ "pingpong-bound", K_PINGPONG, true, false, false },
	{ "pingpong", K_PINGPONG, false, false, false },
	{ "futex-bound", K_FUTEX, true, false, false },
	{ "futex", K_FUTEX, false, false, false },
	{ "futex-spin", K_FUTEX, false, true, false },
	{ "notif-bound", K_NOTIF, true, false, false },
	{ "notif", K_NOTIF, false, false, false },
	{ "notif-sync-bound", K_NOTIF, true, false, true },
	{ "notif-sync", K_NOTIF, false, false, true },
	{ "hybrid-bound", K_HYBRID, true, false, false },
	{ "hybrid", K_HYBRID, false, false, false },
	{ "hybrid-sync-bound", K_HYBRID, true, false, true },
	{ "hybrid-sync", K_HYBRID, false, false, true },
	{ "ptrace-bound", K_PTRACE, true, false, false },
	{ "ptrace", K_PTRACE, false, false, false },
};

#define NSCHEMES (sizeof(schemes) / sizeof(schemes[0]))

/* The shared page (memfd, MAP_SHARED, mapped before fork: same address in both processes). */
struct shared {
	uint32_t state; /* futex word: ST_* */
	uint32_t sentry_sleeps; /* the sentry is (about to be) in FUTEX_WAIT on state */
	uint32_t stub_sleeps; /* the stub is (about to be) in FUTEX_WAIT on state */
	uint32_t spin; /* pause iterations before sleeping (both sides) */
	ucontext_t *uc; /* the stub's signal frame at its last stop */
	uint64_t local; /* sigsys-local: calls answered */
	uint64_t t0, t1; /* stub: CLOCK_MONOTONIC around the N timed calls */
	uint64_t bad; /* stub: calls that returned another value than the sentry's */
	char err[128]; /* stub: why its set-up failed */
};

struct result {
	double ns[MAX_RUNS]; /* per round trip, one per run */
	double vcsw, icsw; /* context switches, both processes, all runs */
	double cpu_ns; /* user + system time, both processes, all runs */
	uint64_t calls; /* round trips served, all runs */
	int runs;
	char err[160];
};

static struct shared *sh;
static volatile sig_atomic_t timed_out; /* the sentry's SIGALRM: give up the run */
static char *altstack;
static long warmup = 1000, iters = 100000;
static int nruns = 7;
static double spin_us = 5;
static uint32_t spin_iters;

/* The instruction after the hybrid handler's `syscall` (the filter's USER_NOTIF key). */
extern const char hybrid_syscall_end[];

static inline long raw_syscall1(long nr, long a)
{
	long r;

	__asm__ volatile("syscall" : "=a"(r) : "a"(nr), "D"(a) : "rcx", "r11", "memory");
	return r;
}

static inline long raw_futex(uint32_t *word, int op, uint32_t val)
{
	register long r10 __asm__("r10") = 0;
	long r;

	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(SYS_futex), "D"(word), "S"(op), "d"(val), "r"(r10)
			 : "rcx", "r11", "memory");
	return r;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void stub_fail(const char *what)
{
	snprintf(sh->err, sizeof(sh->err), "stub: %s: %s", what, strerror(errno));
	_exit(1);
}

/* Spins up to n pause iterations while *word == val. Returns true if it changed. */
static bool spin_while(const uint32_t *word, uint32_t val, uint32_t n)
{
	for (; n; n--) {
		if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != val)
			return true;
		__builtin_ia32_pause();
	}
	return false;
}

/* husk's protocol (sentry/platform/seccomp): a sleeps flag saves the FUTEX_WAKE nobody needs. */
static void futex_sleep_while(uint32_t *word, uint32_t val, uint32_t *sleeps)
{
	if (spin_while(word, val, sh->spin))
		return;
	__atomic_exchange_n(sleeps, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(word, __ATOMIC_SEQ_CST) == val && !timed_out)
		raw_futex(word, FUTEX_WAIT, val);
	__atomic_store_n(sleeps, 0, __ATOMIC_RELAXED);
}

static void futex_set_and_wake(uint32_t *word, uint32_t val, const uint32_t *sleeps)
{
	__atomic_exchange_n(word, val, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(sleeps, __ATOMIC_SEQ_CST))
		raw_futex(word, FUTEX_WAKE, 1);
}

static void on_sigsys_local(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	((ucontext_t *)uc)->uc_mcontext.gregs[REG_RAX] = (greg_t)sh->local++;
}

static void on_sigsys_futex(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	sh->uc = uc;
	futex_set_and_wake(&sh->state, ST_STOPPED, &sh->sentry_sleeps);
	futex_sleep_while(&sh->state, ST_STOPPED, &sh->stub_sleeps);
}

/* pingpong: the futex scheme's hand-over without the signal, on a frame of its own. */
static long pingpong_call(void)
{
	ucontext_t *uc = (ucontext_t *)altstack;

	uc->uc_mcontext.gregs[REG_RAX] = SYS_getppid;
	on_sigsys_futex(SIGSYS, NULL, uc);
	return uc->uc_mcontext.gregs[REG_RAX];
}

static __attribute__((noinline)) void on_sigsys_hybrid(int sig, siginfo_t *si, void *uc)
{
	long r;

	(void)sig;
	(void)si;
	sh->uc = uc;
	/* The filter answers this one call with USER_NOTIF: the sentry replies when it is done. */
	__asm__ volatile("syscall\n"
			 ".globl hybrid_syscall_end\n"
			 "hybrid_syscall_end:"
			 : "=a"(r)
			 : "a"(SYS_getppid)
			 : "rcx", "r11", "memory");
	(void)r;
}

#define LD(off) ((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off)))
#define JEQ(k, jt, jf) ((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (jt), (jf)))
#define RET(v) ((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, (v)))
#define IP_LO offsetof(struct seccomp_data, instruction_pointer)

/*
 * The stub's filter: getppid from the hybrid handler's call site -> USER_NOTIF (hybrid), other
 * getppid -> trap (TRAP or USER_NOTIF), everything else allowed. Returns the listener or -1.
 */
static int install_filter(uint32_t trap, bool hybrid)
{
	uint64_t ip = (uint64_t)hybrid_syscall_end;
	struct sock_filter f[16];
	struct sock_fprog prog = { .filter = f };
	unsigned int flags =
		trap == SECCOMP_RET_USER_NOTIF || hybrid ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0;
	int n = 0;

	f[n++] = LD(offsetof(struct seccomp_data, arch));
	f[n++] = JEQ(AUDIT_ARCH_X86_64, 1, 0);
	f[n++] = RET(SECCOMP_RET_KILL_PROCESS);
	f[n++] = LD(offsetof(struct seccomp_data, nr));
	f[n++] = JEQ(SYS_getppid, 1, 0);
	f[n++] = RET(SECCOMP_RET_ALLOW);
	if (hybrid) {
		f[n++] = LD(IP_LO + 4);
		f[n++] = JEQ((uint32_t)(ip >> 32), 0, 3);
		f[n++] = LD(IP_LO);
		f[n++] = JEQ((uint32_t)ip, 0, 1);
		f[n++] = RET(SECCOMP_RET_USER_NOTIF);
	}
	f[n++] = RET(trap);
	prog.len = (unsigned short)n;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
}

static void send_fd(int sock, int fd)
{
	char byte = 0;
	struct iovec iov = { &byte, 1 };
	union {
		struct cmsghdr hdr;
		char buf[CMSG_SPACE(sizeof(int))];
	} cm = { 0 };
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = cm.buf,
			      .msg_controllen = sizeof(cm.buf) };

	cm.hdr.cmsg_len = CMSG_LEN(sizeof(int));
	cm.hdr.cmsg_level = SOL_SOCKET;
	cm.hdr.cmsg_type = SCM_RIGHTS;
	memcpy(CMSG_DATA(&cm.hdr), &fd, sizeof(fd));
	if (sendmsg(sock, &msg, 0) != 1)
		stub_fail("sendmsg");
}

static int recv_fd(int sock)
{
	char byte;
	struct iovec iov = { &byte, 1 };
	union {
		struct cmsghdr hdr;
		char buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = cm.buf,
			      .msg_controllen = sizeof(cm.buf) };
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &msg, 0) != 1)
		return -1;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(fd));
	return fd;
}

static void set_handler(void (*fn)(int, siginfo_t *, void *))
{
	stack_t ss = { .ss_sp = altstack, .ss_size = ALTSTACK_SIZE };
	struct sigaction sa = { .sa_sigaction = fn, .sa_flags = SA_SIGINFO | SA_ONSTACK };

	if (sigaltstack(&ss, NULL) < 0)
		stub_fail("sigaltstack");
	sigfillset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL) < 0)
		stub_fail("sigaction");
}

/* The stub process: set up as the scheme wants, then W + N getppid calls. */
static __attribute__((noreturn)) void stub_main(const struct scheme *s, int sock)
{
	bool check = s->kind != K_NATIVE;
	uint64_t bad = 0;
	int fd = -1;

	switch (s->kind) {
	case K_NATIVE:
	case K_PINGPONG:
		break;
	case K_SIGSYS:
		set_handler(on_sigsys_local);
		fd = install_filter(SECCOMP_RET_TRAP, false);
		break;
	case K_FUTEX:
		set_handler(on_sigsys_futex);
		fd = install_filter(SECCOMP_RET_TRAP, false);
		break;
	case K_NOTIF:
		fd = install_filter(SECCOMP_RET_USER_NOTIF, false);
		break;
	case K_HYBRID:
		set_handler(on_sigsys_hybrid);
		fd = install_filter(SECCOMP_RET_TRAP, true);
		break;
	case K_PTRACE:
		if (ptrace(PTRACE_TRACEME, 0, 0, 0) < 0)
			stub_fail("PTRACE_TRACEME");
		raise(SIGSTOP);
		break;
	}
	if (fd < 0 && s->kind != K_NATIVE && s->kind != K_PINGPONG && s->kind != K_PTRACE)
		stub_fail("seccomp");
	if (fd > 0) {
		send_fd(sock, fd);
		close(fd);
	}
	close(sock);
	for (long i = 0; i < warmup + iters; i++) {
		if (i == warmup)
			sh->t0 = now_ns();
		long r = s->kind == K_PINGPONG ? pingpong_call() : raw_syscall1(SYS_getppid, 0);

		if (r != i && check)
			bad++;
	}
	sh->t1 = now_ns();
	sh->bad = bad;
	_exit(0);
}

static int serve_futex(long total)
{
	for (long i = 0; i < total; i++) {
		futex_sleep_while(&sh->state, ST_RUN, &sh->sentry_sleeps);
		if (timed_out)
			return -ETIMEDOUT;
		if (sh->uc->uc_mcontext.gregs[REG_RAX] != SYS_getppid)
			return -EPROTO;
		sh->uc->uc_mcontext.gregs[REG_RAX] = i;
		futex_set_and_wake(&sh->state, ST_RUN, &sh->stub_sleeps);
	}
	return 0;
}

static int serve_notif(int fd, bool hybrid, long total)
{
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;

	for (long i = 0; i < total; i++) {
		memset(&req, 0, sizeof(req));
		if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
			return -errno;
		if (req.data.nr != SYS_getppid)
			return -EPROTO;
		resp = (struct seccomp_notif_resp){ .id = req.id, .val = i };
		if (hybrid) {
			/* The handler's call returns 0; the guest's result goes into its frame. */
			if (sh->uc->uc_mcontext.gregs[REG_RAX] != SYS_getppid)
				return -EPROTO;
			sh->uc->uc_mcontext.gregs[REG_RAX] = i;
			resp.val = 0;
		}
		if (ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0)
			return -errno;
	}
	return 0;
}

/* Waits for the tracee's next stop. Returns 0, -ECHILD if it ended, or -errno (-EINTR: timeout). */
static int wait_stopped(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, __WALL) != pid)
		return -errno;
	return WIFSTOPPED(st) ? 0 : -ECHILD;
}

static int serve_ptrace(pid_t pid, long total)
{
	struct user_regs_struct regs;
	int ret = wait_stopped(pid);

	if (ret < 0)
		return ret;
	if (ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_EXITKILL) < 0)
		return -errno;
	for (long i = 0; i < total;) {
		if (ptrace(PTRACE_SYSEMU, pid, 0, 0) < 0)
			return -errno;
		ret = wait_stopped(pid);
		if (ret < 0)
			return ret;
		if (ptrace(PTRACE_GETREGS, pid, 0, &regs) < 0)
			return -errno;
		/* Anything else (there should be nothing) fails with ENOSYS. */
		regs.rax = regs.orig_rax == SYS_getppid ? (unsigned long long)i++ :
							  (unsigned long long)-ENOSYS;
		if (ptrace(PTRACE_SETREGS, pid, 0, &regs) < 0)
			return -errno;
	}
	/* Let the stub store its times; its next call, exit_group, ends it with SIGKILL instead. */
	if (ptrace(PTRACE_SYSEMU, pid, 0, 0) < 0)
		return -errno;
	ret = wait_stopped(pid);
	kill(pid, SIGKILL);
	return ret;
}

static void on_alarm(int sig)
{
	(void)sig;
	timed_out = 1;
}

static void bind_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	if (cpu >= 0)
		CPU_SET(cpu, &set);
	else
		for (int c = 0; c < CPU_SETSIZE; c++)
			CPU_SET(c, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static uint64_t csw(const struct rusage *ru, bool voluntary)
{
	return (uint64_t)(voluntary ? ru->ru_nvcsw : ru->ru_nivcsw);
}

static double cpu_ns(const struct rusage *ru)
{
	return ((double)ru->ru_utime.tv_sec + (double)ru->ru_stime.tv_sec) * 1e9 +
	       ((double)ru->ru_utime.tv_usec + (double)ru->ru_stime.tv_usec) * 1e3;
}

/* One run of scheme s: fork a stub, serve it, reap it. Adds to *r; returns 0 or -1 (r->err). */
static int run_once(const struct scheme *s, struct result *r)
{
	long total = warmup + iters;
	struct rusage ru0, ru1, ruc;
	int sv[2], fd = -1, st, ret = 0;
	pid_t pid;

	memset(sh, 0, sizeof(*sh));
	sh->state = ST_RUN;
	sh->spin = s->spin ? spin_iters : 0;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return snprintf(r->err, sizeof(r->err), "socketpair: %s", strerror(errno)), -1;
	if (s->bind)
		bind_cpu(sched_getcpu());
	timed_out = 0;
	alarm(RUN_TIMEOUT_S);
	getrusage(RUSAGE_THREAD, &ru0);
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		stub_main(s, sv[1]);
	}
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		bind_cpu(-1);
		return snprintf(r->err, sizeof(r->err), "fork: %s", strerror(errno)), -1;
	}
	switch (s->kind) {
	case K_NATIVE:
	case K_SIGSYS:
		break;
	case K_PINGPONG:
	case K_FUTEX:
		ret = serve_futex(total);
		break;
	case K_NOTIF:
	case K_HYBRID:
		fd = recv_fd(sv[0]);
		if (fd < 0) {
			ret = -EBADF;
			break;
		}
		if (s->sync && ioctl(fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
				     SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, 0) < 0) {
			ret = -errno;
			break;
		}
		ret = serve_notif(fd, s->kind == K_HYBRID, total);
		break;
	case K_PTRACE:
		ret = serve_ptrace(pid, total);
		break;
	}
	alarm(0);
	if (ret < 0)
		kill(pid, SIGKILL);
	if (fd >= 0)
		close(fd);
	close(sv[0]);
	if (wait4(pid, &st, __WALL, &ruc) != pid)
		ret = ret ? ret : -ECHILD;
	getrusage(RUSAGE_THREAD, &ru1);
	bind_cpu(-1);
	if (sh->err[0])
		return snprintf(r->err, sizeof(r->err), "%s", sh->err), -1;
	if (ret < 0)
		return snprintf(r->err, sizeof(r->err), "sentry: %s", strerror(-ret)), -1;
	if (s->kind == K_PTRACE ? !WIFSIGNALED(st) : !WIFEXITED(st) || WEXITSTATUS(st))
		return snprintf(r->err, sizeof(r->err), "stub ended with status %#x", st), -1;
	if (sh->bad)
		return snprintf(r->err, sizeof(r->err), "%llu wrong results",
				(unsigned long long)sh->bad),
		       -1;
	r->ns[r->runs++] = (double)(sh->t1 - sh->t0) / (double)iters;
	r->vcsw += (double)(csw(&ru1, true) - csw(&ru0, true) + csw(&ruc, true));
	r->icsw += (double)(csw(&ru1, false) - csw(&ru0, false) + csw(&ruc, false));
	r->cpu_ns += cpu_ns(&ru1) - cpu_ns(&ru0) + cpu_ns(&ruc);
	r->calls += (uint64_t)total;
	return 0;
}

/* Pause iterations that take about spin_us microseconds here (the fastest of 20 tries: load). */
static uint32_t calibrate_spin(void)
{
	uint32_t word = 0;
	uint64_t best = UINT64_MAX;

	for (int k = 0; k < 20; k++) {
		uint64_t t0 = now_ns(), dt;

		spin_while(&word, 0, 10000);
		dt = now_ns() - t0;
		best = dt < best ? dt : best;
	}
	return (uint32_t)(spin_us * 1000.0 * 10000.0 / (double)(best ? best : 1));
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(struct result *r)
{
	double v[MAX_RUNS];

	memcpy(v, r->ns, sizeof(double) * (size_t)r->runs);
	qsort(v, (size_t)r->runs, sizeof(double), cmp_double);
	return r->runs % 2 ? v[r->runs / 2] : (v[r->runs / 2 - 1] + v[r->runs / 2]) / 2;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: wakeup [-r RUNS] [-n ITERS] [-w WARMUP] [-s SPIN_US] [SCHEME...]\n"
		   "schemes:");
	for (size_t i = 0; i < NSCHEMES; i++)
		fprintf(f, " %s", schemes[i].name);
	fprintf(f, "\n");
}

int main(int argc, char **argv)
{
	static struct result res[NSCHEMES];
	bool want[NSCHEMES] = { 0 };
	double ref = 0, ref_cpu = 0;
	int opt, mfd, nwant = 0;
	char *map;

	while ((opt = getopt(argc, argv, "r:n:w:s:h")) != -1) {
		switch (opt) {
		case 'r':
			nruns = atoi(optarg);
			break;
		case 'n':
			iters = atol(optarg);
			break;
		case 'w':
			warmup = atol(optarg);
			break;
		case 's':
			spin_us = atof(optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (nruns < 1 || nruns > MAX_RUNS || iters < 1 || warmup < 0) {
		usage(stderr);
		return 2;
	}
	for (int a = optind; a < argc; a++) {
		size_t i = 0;

		while (i < NSCHEMES && strcmp(argv[a], schemes[i].name))
			i++;
		if (i == NSCHEMES) {
			fprintf(stderr, "wakeup: unknown scheme %s\n", argv[a]);
			usage(stderr);
			return 2;
		}
		want[i] = true;
		nwant++;
	}
	for (size_t i = 0; i < NSCHEMES && !nwant; i++)
		want[i] = true;

	mfd = memfd_create("wakeup", MFD_CLOEXEC);
	if (mfd < 0 || ftruncate(mfd, 4096 + ALTSTACK_SIZE) < 0) {
		perror("wakeup: memfd");
		return 1;
	}
	map = mmap(NULL, 4096 + ALTSTACK_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (map == MAP_FAILED) {
		perror("wakeup: mmap");
		return 1;
	}
	sh = (struct shared *)map;
	altstack = map + 4096;
	spin_iters = calibrate_spin();
	/* No SA_RESTART: a run that hangs gets EINTR in the sentry's wait and fails. */
	sigaction(SIGALRM, &(struct sigaction){ .sa_handler = on_alarm }, NULL);

	printf("# %ld calls per run (after %ld warm-up), %d runs per scheme, interleaved; "
	       "spin %.1f us = %u pauses\n",
	       iters, warmup, nruns, spin_us, spin_iters);
	fflush(stdout);
	/* Round-robin over the schemes, so that a change of load hits all of them alike. */
	for (int run = 0; run < nruns; run++) {
		for (size_t i = 0; i < NSCHEMES; i++) {
			if (want[i] && !res[i].err[0])
				run_once(&schemes[i], &res[i]);
		}
	}

	for (size_t i = 0; i < NSCHEMES; i++) {
		if (!strcmp(schemes[i].name, "ptrace") && res[i].runs)
			ref = median(&res[i]), ref_cpu = res[i].cpu_ns / (double)res[i].calls;
	}
	printf("| scheme | best ns | median ns | median / ptrace | CPU ns | CPU / ptrace | "
	       "csw (vol + invol) |\n"
	       "|---|---:|---:|---:|---:|---:|---:|\n");
	for (size_t i = 0; i < NSCHEMES; i++) {
		struct result *r = &res[i];
		double best = r->ns[0];

		if (!want[i])
			continue;
		if (r->err[0] && !r->runs) {
			printf("| %s | failed: %s | | | | | |\n", schemes[i].name, r->err);
			continue;
		}
		for (int k = 1; k < r->runs; k++)
			best = r->ns[k] < best ? r->ns[k] : best;
		printf("| %s | %.0f | %.0f | ", schemes[i].name, best, median(r));
		if (ref > 0)
			printf("%.2f", median(r) / ref);
		printf(" | %.0f | ", r->cpu_ns / (double)r->calls);
		if (ref_cpu > 0)
			printf("%.2f", r->cpu_ns / (double)r->calls / ref_cpu);
		printf(" | %.2f + %.2f |", r->vcsw / (double)r->calls, r->icsw / (double)r->calls);
		if (r->err[0])
			printf(" (a later run failed: %s)", r->err);
		printf("\n");
	}
	return 0;
}
