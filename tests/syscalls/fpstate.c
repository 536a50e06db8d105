/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Conformance: the floating-point and vector state of a thread survives everything the kernel
 * does to it. A thread keeps checksummed data in all 16 YMM registers, in MXCSR and in the x87
 * control word and stack while another thread interrupts it with signals thousands of times
 * (Go's async preemption does exactly this, and its memmove keeps data in YMM); the handler
 * starts with the initial FP state and clobbers every register, and rt_sigreturn must give
 * the interrupted code its state back exactly. Also: a handler that edits the saved state, a
 * system call interrupted by a signal, fork, a new thread, execve, and a ptrace stop.
 * Without AVX, the vector checks cover the XMM registers only.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cpuid.h>
#include <elf.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>

#include "check.h"
#include "child.h"

#define NREG 16
#define MXCSR_DEFAULT 0x1f80U
#define MXCSR_TEST 0x5f80U /* round up: a mode nobody sets by accident */
#define FCW_DEFAULT 0x37fU
#define FCW_TEST 0x27fU /* 53-bit precision */
#define XSAVE_YMM_OFFSET 576 /* standard-format offset of the YMM upper halves */

static bool have_avx;

struct vstate {
	uint8_t ymm[NREG][32];
	uint32_t mxcsr;
	uint16_t fcw;
	long double st0, st1;
} __attribute__((aligned(32)));

static bool detect_avx(void)
{
	unsigned int a, b, c, d, lo, hi;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_AVX) || !(c & bit_OSXSAVE))
		return false;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return (lo & 0x6) == 0x6;
}

static void fill_pattern(struct vstate *s, uint64_t seed)
{
	for (int r = 0; r < NREG; r++)
		for (int i = 0; i < 32; i++)
			s->ymm[r][i] = (uint8_t)((seed * 131 + (uint64_t)r * 29 + (uint64_t)i * 7) ^
						 (seed >> 8));
	if (!have_avx)
		for (int r = 0; r < NREG; r++)
			memset(s->ymm[r] + 16, 0, 16);
}

#define YMM_LOAD(n) "vmovdqu " #n "*32(%[in]), %%ymm" #n "\n\t"
#define YMM_STORE(n) "vmovdqu %%ymm" #n ", " #n "*32(%[out])\n\t"
#define XMM_LOAD(n) "movdqu " #n "*32(%[in]), %%xmm" #n "\n\t"
#define XMM_STORE(n) "movdqu %%xmm" #n ", " #n "*32(%[out])\n\t"
#define ALL16(M) \
	M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15)
#define VCLOBBER                                                                                 \
	"xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", \
		"xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "st", "st(1)", "st(2)", "st(3)",    \
		"st(4)", "st(5)", "st(6)", "st(7)"

/* Labels of the window in which signals are meant to land (see spin_with_state). */
extern const char fp_window_start[], fp_window_end[];

/*
 * Loads *in into every vector register, MXCSR, FCW and two x87 registers, spins `spins` times
 * touching only rcx and the flags (the window), then stores everything into *out and puts MXCSR
 * and FCW back to their defaults.
 */
static void spin_with_state(const struct vstate *in, struct vstate *out, unsigned long spins)
{
	if (have_avx)
		__asm__ volatile(ALL16(YMM_LOAD) "ldmxcsr %c[mx](%[in])\n\t"
						 "fldcw %c[cw](%[in])\n\t"
						 "fldt %c[s1](%[in])\n\t"
						 "fldt %c[s0](%[in])\n\t"
						 "mov %[n], %%rcx\n\t"
						 ".globl fp_window_start\n"
						 "fp_window_start:\n\t"
						 "1: dec %%rcx\n\t"
						 "jnz 1b\n"
						 ".globl fp_window_end\n"
						 "fp_window_end:\n\t" ALL16(
							 YMM_STORE) "stmxcsr %c[mx](%[out])\n\t"
								    "fnstcw %c[cw](%[out])\n\t"
								    "fstpt %c[s0](%[out])\n\t"
								    "fstpt %c[s1](%[out])\n\t"
								    "vzeroupper\n\t"
				 :
				 : [in] "r"(in), [out] "r"(out), [n] "r"(spins),
				   [mx] "i"(offsetof(struct vstate, mxcsr)),
				   [cw] "i"(offsetof(struct vstate, fcw)),
				   [s0] "i"(offsetof(struct vstate, st0)),
				   [s1] "i"(offsetof(struct vstate, st1))
				 : "rcx", "memory", "cc", VCLOBBER);
	else
		__asm__ volatile(
			ALL16(XMM_LOAD) "ldmxcsr %c[mx](%[in])\n\t"
					"fldcw %c[cw](%[in])\n\t"
					"fldt %c[s1](%[in])\n\t"
					"fldt %c[s0](%[in])\n\t"
					"mov %[n], %%rcx\n\t"
					"2: dec %%rcx\n\t"
					"jnz 2b\n\t" ALL16(XMM_STORE) "stmxcsr %c[mx](%[out])\n\t"
								      "fnstcw %c[cw](%[out])\n\t"
								      "fstpt %c[s0](%[out])\n\t"
								      "fstpt %c[s1](%[out])\n\t"
			:
			: [in] "r"(in), [out] "r"(out), [n] "r"(spins),
			  [mx] "i"(offsetof(struct vstate, mxcsr)),
			  [cw] "i"(offsetof(struct vstate, fcw)),
			  [s0] "i"(offsetof(struct vstate, st0)),
			  [s1] "i"(offsetof(struct vstate, st1))
			: "rcx", "memory", "cc", VCLOBBER);
	{
		uint32_t mx = MXCSR_DEFAULT;
		uint16_t cw = FCW_DEFAULT;

		__asm__ volatile("ldmxcsr %0\n\tfldcw %1" : : "m"(mx), "m"(cw));
	}
}

static void prepare(struct vstate *in, uint64_t seed)
{
	memset(in, 0, sizeof(*in));
	fill_pattern(in, seed);
	in->mxcsr = MXCSR_TEST;
	in->fcw = FCW_TEST;
	in->st0 = 1.25L + (long double)seed;
	in->st1 = -3.5L * (long double)(seed + 1);
}

/* Compares what came out with what went in; returns a description of the first difference. */
static const char *diff_state(const struct vstate *in, const struct vstate *out, int *reg)
{
	for (int r = 0; r < NREG; r++) {
		if (memcmp(in->ymm[r], out->ymm[r], 16)) {
			*reg = r;
			return "xmm (low half)";
		}
		if (memcmp(in->ymm[r] + 16, out->ymm[r] + 16, 16)) {
			*reg = r;
			return "ymm upper half";
		}
	}
	*reg = -1;
	if (in->mxcsr != out->mxcsr)
		return "mxcsr";
	if (in->fcw != out->fcw)
		return "x87 control word";
	if (in->st0 != out->st0 || in->st1 != out->st1)
		return "x87 stack";
	return NULL;
}

/* --- the stress: a thread interrupted thousands of times in the window --- */

static volatile int stress_done;
static volatile long hits, in_window, bad_entry_mxcsr, bad_entry_fcw, bad_entry_ymm;
static pid_t victim_tid;

static void on_urg(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uint64_t rip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	uint32_t mx;
	uint16_t cw;

	(void)sig;
	(void)si;
	/* The handler starts with the initial FP state (Linux's fpu__clear_user_states). */
	__asm__ volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(mx), "=m"(cw));
	if (mx != MXCSR_DEFAULT)
		bad_entry_mxcsr++;
	if (cw != FCW_DEFAULT)
		bad_entry_fcw++;
	if (have_avx) {
		uint64_t hi[4];

		__asm__ volatile("vextracti128 $1, %%ymm3, %0\n\t"
				 "vextracti128 $1, %%ymm12, %1"
				 : "=m"(hi[0]), "=m"(hi[2]));
		if (hi[0] | hi[1] | hi[2] | hi[3])
			bad_entry_ymm++;
		/* Clobber everything: rt_sigreturn must restore it. */
		__asm__ volatile("vpcmpeqd %%ymm0, %%ymm0, %%ymm0\n\t"
				 "vmovdqa %%ymm0, %%ymm1\n\tvmovdqa %%ymm0, %%ymm2\n\t"
				 "vmovdqa %%ymm0, %%ymm3\n\tvmovdqa %%ymm0, %%ymm4\n\t"
				 "vmovdqa %%ymm0, %%ymm5\n\tvmovdqa %%ymm0, %%ymm6\n\t"
				 "vmovdqa %%ymm0, %%ymm7\n\tvmovdqa %%ymm0, %%ymm8\n\t"
				 "vmovdqa %%ymm0, %%ymm9\n\tvmovdqa %%ymm0, %%ymm10\n\t"
				 "vmovdqa %%ymm0, %%ymm11\n\tvmovdqa %%ymm0, %%ymm12\n\t"
				 "vmovdqa %%ymm0, %%ymm13\n\tvmovdqa %%ymm0, %%ymm14\n\t"
				 "vmovdqa %%ymm0, %%ymm15\n\t" ::
					 : VCLOBBER);
	} else {
		__asm__ volatile("pcmpeqd %%xmm0, %%xmm0\n\tmovdqa %%xmm0, %%xmm7\n\t"
				 "movdqa %%xmm0, %%xmm15" ::
					 : "xmm0", "xmm7", "xmm15");
	}
	{
		uint32_t m2 = 0x7f80; /* round toward zero */
		uint16_t c2 = 0x7f; /* 24-bit precision */

		__asm__ volatile("ldmxcsr %0\n\tfldcw %1\n\tfldz\n\tfstp %%st(0)"
				 :
				 : "m"(m2), "m"(c2));
	}
	if (have_avx && rip >= (uint64_t)fp_window_start && rip < (uint64_t)fp_window_end)
		in_window++;
	else if (!have_avx)
		in_window++;
	hits++;
}

static void *killer(void *arg)
{
	(void)arg;
	while (!stress_done) {
		syscall(SYS_tgkill, getpid(), victim_tid, SIGURG);
		for (volatile int i = 0; i < 3000; i++)
			;
	}
	return NULL;
}

static void check_stress(void)
{
	struct sigaction sa;
	struct vstate in, out;
	pthread_t th;
	long iters = 0, bad = 0;
	const char *first = NULL;
	int first_reg = -1;
	long want = 3000;
	struct timespec t0, t;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_urg;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGURG, &sa, NULL);
	victim_tid = (pid_t)syscall(SYS_gettid);
	stress_done = 0;
	if (pthread_create(&th, NULL, killer, NULL)) {
		CHECK(0, "pthread_create failed");
		return;
	}
	/*
	 * Until enough signals landed in the window; the iteration cap only stops a broken run.
	 * On a busy machine each signal in husk waits for a few threads to get a CPU (tens of ms
	 * with other work on every core): after 5 s, 300 are enough (they still cover every
	 * register each time).
	 */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (iters = 0; in_window < want && iters < 2000000; iters++) {
		const char *d;
		int reg;

		if (want > 300 && (iters & 255) == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if (t.tv_sec - t0.tv_sec >= 5)
				want = 300;
		}

		prepare(&in, (uint64_t)iters);
		memset(&out, 0xcc, sizeof(out));
		spin_with_state(&in, &out, 20000);
		d = diff_state(&in, &out, &reg);
		if (d) {
			if (!bad) {
				first = d;
				first_reg = reg;
			}
			bad++;
		}
	}
	stress_done = 1;
	pthread_join(th, NULL);
	signal(SIGURG, SIG_DFL);
	printf("stress: %ld signals, %ld in the window (%ld wanted), %ld iterations\n", hits,
	       in_window, want, iters);
	CHECK(in_window >= want, "only %ld of %ld signals landed in the window (%ld iterations)",
	      in_window, want, iters);
	CHECK(bad == 0, "%ld of %ld iterations lost state: first %s (register %d)", bad, iters,
	      first ? first : "-", first_reg);
	CHECK(bad_entry_mxcsr == 0, "%ld handlers started with MXCSR not 0x1f80", bad_entry_mxcsr);
	CHECK(bad_entry_fcw == 0, "%ld handlers started with FCW not 0x37f", bad_entry_fcw);
	CHECK(bad_entry_ymm == 0, "%ld handlers started with YMM upper halves not zero",
	      bad_entry_ymm);
}

/* --- a handler that edits the saved state --- */

static void on_edit(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uint8_t *fp = (uint8_t *)uc->uc_mcontext.fpregs;

	(void)sig;
	(void)si;
	/* xmm5 at 160 + 5 * 16 in the FXSAVE area; its upper half in the YMM component. */
	memset(fp + 160 + 5 * 16, 0x5a, 16);
	if (have_avx) {
		uint64_t bv;

		memset(fp + XSAVE_YMM_OFFSET + 5 * 16, 0xa5, 16);
		/* The component may have been saved in its init state: mark it present. */
		memcpy(&bv, fp + 512, 8);
		bv |= 0x4;
		memcpy(fp + 512, &bv, 8);
	}
	uc->uc_mcontext.fpregs->mxcsr = MXCSR_TEST;
}

static void check_edit(void)
{
	struct sigaction sa;
	uint8_t out[32] __attribute__((aligned(32)));
	uint8_t want[32];
	uint32_t mx = 0, dflt = MXCSR_DEFAULT;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_edit;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR2, &sa, NULL);
	memset(out, 0, sizeof(out));
	if (have_avx)
		__asm__ volatile("vpxor %%ymm5, %%ymm5, %%ymm5\n\t"
				 "mov %[nr], %%eax\n\tmov %[tid], %%edi\n\tmov %[sig], %%esi\n\t"
				 "syscall\n\t"
				 "vmovdqu %%ymm5, %[o]\n\tstmxcsr %[mx]\n\tldmxcsr %[d]"
				 : [o] "=m"(out), [mx] "=m"(mx)
				 : [nr] "i"(SYS_tkill), [tid] "r"((int)syscall(SYS_gettid)),
				   [sig] "i"(SIGUSR2), [d] "m"(dflt)
				 : "rax", "rdi", "rsi", "rcx", "r11", "memory", "xmm5");
	else
		__asm__ volatile("pxor %%xmm5, %%xmm5\n\t"
				 "mov %[nr], %%eax\n\tmov %[tid], %%edi\n\tmov %[sig], %%esi\n\t"
				 "syscall\n\t"
				 "movdqu %%xmm5, %[o]\n\tstmxcsr %[mx]\n\tldmxcsr %[d]"
				 : [o] "=m"(out), [mx] "=m"(mx)
				 : [nr] "i"(SYS_tkill), [tid] "r"((int)syscall(SYS_gettid)),
				   [sig] "i"(SIGUSR2), [d] "m"(dflt)
				 : "rax", "rdi", "rsi", "rcx", "r11", "memory", "xmm5");
	memset(want, 0x5a, 16);
	memset(want + 16, have_avx ? 0xa5 : 0, 16);
	CHECK(memcmp(out, want, have_avx ? 32 : 16) == 0,
	      "xmm5/ymm5 after a handler edited the frame: %02x..%02x", out[0], out[31]);
	CHECK(mx == MXCSR_TEST, "mxcsr after a handler edited the frame: %#x", mx);
	signal(SIGUSR2, SIG_DFL);
}

/* --- a blocking system call interrupted by a signal preserves the vector state --- */

static void on_alarm(int sig)
{
	(void)sig;
	if (have_avx)
		__asm__ volatile("vpcmpeqd %%ymm9, %%ymm9, %%ymm9" ::: "xmm9");
}

struct blocked_arg {
	pid_t tid;
	volatile int *ready;
};

static void *poke_blocked(void *arg)
{
	struct blocked_arg *a = arg;

	/* Signal the reader only once it sleeps in read(2) (state S in /proc). */
	for (int i = 0; i < 200000 && thread_state(a->tid) != 'S'; i++)
		sched_yield();
	syscall(SYS_tgkill, getpid(), a->tid, SIGALRM);
	return NULL;
}

static void check_syscall_interrupted(void)
{
	struct vstate in, out;
	struct sigaction sa;
	struct blocked_arg a;
	pthread_t th;
	int p[2];
	long ret = 0;
	int reg;
	const char *d;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm; /* no SA_RESTART: read returns EINTR */
	sigaction(SIGALRM, &sa, NULL);
	if (pipe(p) < 0) {
		CHECK(0, "pipe: %s", strerror(errno));
		return;
	}
	prepare(&in, 77);
	memset(&out, 0, sizeof(out));
	a.tid = (pid_t)syscall(SYS_gettid);
	pthread_create(&th, NULL, poke_blocked, &a);
	if (have_avx)
		__asm__ volatile(ALL16(YMM_LOAD) "ldmxcsr %c[mx](%[in])\n\t"
						 "mov %[nr], %%eax\n\t"
						 "mov %[fd], %%edi\n\t"
						 "lea %c[cw](%[out]), %%rsi\n\t"
						 "mov $1, %%edx\n\t"
						 "syscall\n\t"
						 "mov %%rax, %[ret]\n\t" ALL16(
							 YMM_STORE) "stmxcsr %c[mx](%[out])\n\t"
								    "vzeroupper\n\t"
				 : [ret] "=m"(ret)
				 : [in] "r"(in.ymm), [out] "r"(out.ymm), [nr] "i"(SYS_read),
				   [fd] "r"(p[0]), [mx] "i"(offsetof(struct vstate, mxcsr)),
				   [cw] "i"(offsetof(struct vstate, fcw))
				 : "rax", "rdi", "rsi", "rdx", "rcx", "r11", "memory", VCLOBBER);
	else
		__asm__ volatile(ALL16(XMM_LOAD) "ldmxcsr %c[mx](%[in])\n\t"
						 "mov %[nr], %%eax\n\t"
						 "mov %[fd], %%edi\n\t"
						 "lea %c[cw](%[out]), %%rsi\n\t"
						 "mov $1, %%edx\n\t"
						 "syscall\n\t"
						 "mov %%rax, %[ret]\n\t" ALL16(
							 XMM_STORE) "stmxcsr %c[mx](%[out])\n\t"
				 : [ret] "=m"(ret)
				 : [in] "r"(in.ymm), [out] "r"(out.ymm), [nr] "i"(SYS_read),
				   [fd] "r"(p[0]), [mx] "i"(offsetof(struct vstate, mxcsr)),
				   [cw] "i"(offsetof(struct vstate, fcw))
				 : "rax", "rdi", "rsi", "rdx", "rcx", "r11", "memory", VCLOBBER);
	{
		uint32_t mx = MXCSR_DEFAULT;

		__asm__ volatile("ldmxcsr %0" : : "m"(mx));
	}
	pthread_join(th, NULL);
	close(p[0]);
	close(p[1]);
	CHECK(ret == -EINTR, "read interrupted by a handler: %ld", ret);
	out.fcw = in.fcw;
	out.st0 = in.st0;
	out.st1 = in.st1;
	d = diff_state(&in, &out, &reg);
	CHECK(!d, "state across an interrupted read: %s (register %d)", d ? d : "", reg);
	signal(SIGALRM, SIG_DFL);
}

/* --- fork, a new thread, execve --- */

static void check_fork(void)
{
	struct vstate in, out;
	long pid = 0;
	int st = 0, reg;
	const char *d;

	prepare(&in, 5);
	memset(&out, 0, sizeof(out));
	if (have_avx)
		__asm__ volatile(ALL16(YMM_LOAD) "ldmxcsr %c[mx](%[in])\n\t"
						 "mov %[nr], %%eax\n\t"
						 "syscall\n\t"
						 "mov %%rax, %[pid]\n\t" ALL16(
							 YMM_STORE) "stmxcsr %c[mx](%[out])\n\t"
								    "vzeroupper\n\t"
				 : [pid] "=m"(pid)
				 : [in] "r"(in.ymm), [out] "r"(out.ymm), [nr] "i"(SYS_fork),
				   [mx] "i"(offsetof(struct vstate, mxcsr))
				 : "rax", "rcx", "r11", "memory", VCLOBBER);
	else
		__asm__ volatile(ALL16(XMM_LOAD) "ldmxcsr %c[mx](%[in])\n\t"
						 "mov %[nr], %%eax\n\t"
						 "syscall\n\t"
						 "mov %%rax, %[pid]\n\t" ALL16(
							 XMM_STORE) "stmxcsr %c[mx](%[out])\n\t"
				 : [pid] "=m"(pid)
				 : [in] "r"(in.ymm), [out] "r"(out.ymm), [nr] "i"(SYS_fork),
				   [mx] "i"(offsetof(struct vstate, mxcsr))
				 : "rax", "rcx", "r11", "memory", VCLOBBER);
	{
		uint32_t mx = MXCSR_DEFAULT;

		__asm__ volatile("ldmxcsr %0" : : "m"(mx));
	}
	out.fcw = in.fcw;
	out.st0 = in.st0;
	out.st1 = in.st1;
	d = diff_state(&in, &out, &reg);
	if (pid == 0)
		_exit(d ? 10 + (reg < 0 ? 0 : reg) : 0);
	CHECK(pid > 0, "fork: %ld", pid);
	CHECK(!d, "parent's state across fork: %s (register %d)", d ? d : "", reg);
	if (pid > 0) {
		waitpid((pid_t)pid, &st, 0);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "the child's state after fork differs (status %#x: 10 + register)", st);
	}
}

static void *read_mxcsr_thread(void *arg)
{
	uint32_t *mx = arg;
	uint16_t cw;

	__asm__ volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(*mx), "=m"(cw));
	mx[1] = cw;
	return NULL;
}

static void check_thread_inherits(void)
{
	uint32_t got[2] = { 0, 0 }, mx = MXCSR_TEST, dflt = MXCSR_DEFAULT;
	uint16_t cw = FCW_TEST, cdflt = FCW_DEFAULT;
	pthread_t th;

	/* Linux copies the creating thread's FP state into a new thread (fpu_clone). */
	__asm__ volatile("ldmxcsr %0\n\tfldcw %1" : : "m"(mx), "m"(cw));
	if (pthread_create(&th, NULL, read_mxcsr_thread, got) == 0)
		pthread_join(th, NULL);
	__asm__ volatile("ldmxcsr %0\n\tfldcw %1" : : "m"(dflt), "m"(cdflt));
	CHECK(got[0] == MXCSR_TEST, "a new thread's MXCSR: %#x, want the creator's %#x", got[0],
	      MXCSR_TEST);
	CHECK(got[1] == FCW_TEST, "a new thread's FCW: %#x, want the creator's %#x", got[1],
	      FCW_TEST);
}

static int exec_child_main(void)
{
	uint32_t mx;
	uint16_t cw;

	__asm__ volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(mx), "=m"(cw));
	/* execve gives the new program the initial FP state. */
	return (mx == MXCSR_DEFAULT ? 0 : 1) | (cw == FCW_DEFAULT ? 0 : 2);
}

static void check_exec(const char *self)
{
	pid_t pid;
	int st = 0;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		uint32_t mx = MXCSR_TEST;
		uint16_t cw = FCW_TEST;
		char *argv[] = { (char *)self, (char *)"--exec-child", NULL };

		__asm__ volatile("ldmxcsr %0\n\tfldcw %1" : : "m"(mx), "m"(cw));
		execv(self, argv);
		_exit(99);
	}
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "after execve MXCSR/FCW are not the defaults (status %#x: 1 MXCSR, 2 FCW, 99 exec)",
	      st);
}

/* --- a tracer reads and writes the state at a ptrace stop --- */

static void check_ptrace(void)
{
	struct vstate in, out;
	uint8_t *xs;
	struct iovec iov;
	pid_t pid;
	int st = 0;

	prepare(&in, 9);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0)
			_exit(98);
		memset(&out, 0, sizeof(out));
		/* Stop with the state loaded; the tracer sets xmm3 (and ymm3's upper half). */
		if (have_avx)
			__asm__ volatile(
				ALL16(YMM_LOAD) "ldmxcsr %c[mx](%[in])\n\t"
						"mov %[nr], %%eax\n\t"
						"mov %[pid], %%edi\n\t"
						"mov %[sig], %%esi\n\t"
						"syscall\n\t" ALL16(
							YMM_STORE) "stmxcsr %c[mx](%[out])\n\t"
								   "vzeroupper\n\t"
				:
				: [in] "r"(in.ymm), [out] "r"(out.ymm), [nr] "i"(SYS_kill),
				  [pid] "r"(getpid()), [sig] "i"(SIGSTOP),
				  [mx] "i"(offsetof(struct vstate, mxcsr))
				: "rax", "rdi", "rsi", "rcx", "r11", "memory", VCLOBBER);
		else
			__asm__ volatile(
				ALL16(XMM_LOAD) "ldmxcsr %c[mx](%[in])\n\t"
						"mov %[nr], %%eax\n\t"
						"mov %[pid], %%edi\n\t"
						"mov %[sig], %%esi\n\t"
						"syscall\n\t" ALL16(
							XMM_STORE) "stmxcsr %c[mx](%[out])\n\t"
				:
				: [in] "r"(in.ymm), [out] "r"(out.ymm), [nr] "i"(SYS_kill),
				  [pid] "r"(getpid()), [sig] "i"(SIGSTOP),
				  [mx] "i"(offsetof(struct vstate, mxcsr))
				: "rax", "rdi", "rsi", "rcx", "r11", "memory", VCLOBBER);
		memset(in.ymm[3], 0x3c, 32);
		if (!have_avx)
			memset(in.ymm[3] + 16, 0, 16);
		for (int r = 0; r < NREG; r++)
			if (memcmp(in.ymm[r], out.ymm[r], 32))
				_exit(10 + r);
		_exit(out.mxcsr == MXCSR_TEST ? 0 : 40);
	}
	waitpid(pid, &st, 0);
	CHECK(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP, "tracee stop: status %#x", st);
	if (!WIFSTOPPED(st)) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return;
	}
	xs = aligned_alloc(64, 16384);
	memset(xs, 0, 16384);
	iov.iov_base = xs;
	iov.iov_len = 16384;
	CHECK(ptrace(PTRACE_GETREGSET, pid, (void *)NT_X86_XSTATE, &iov) == 0,
	      "GETREGSET NT_X86_XSTATE: %s", strerror(errno));
	{
		uint32_t mx;

		memcpy(&mx, xs + 24, 4);
		CHECK(mx == MXCSR_TEST, "tracer sees MXCSR %#x", mx);
	}
	CHECK(memcmp(xs + 160 + 7 * 16, in.ymm[7], 16) == 0, "tracer sees xmm7");
	if (have_avx)
		CHECK(memcmp(xs + XSAVE_YMM_OFFSET + 7 * 16, in.ymm[7] + 16, 16) == 0,
		      "tracer sees ymm7's upper half");
	memset(xs + 160 + 3 * 16, 0x3c, 16);
	if (have_avx) {
		uint64_t bv;

		memset(xs + XSAVE_YMM_OFFSET + 3 * 16, 0x3c, 16);
		memcpy(&bv, xs + 512, 8);
		bv |= 0x7;
		memcpy(xs + 512, &bv, 8);
	}
	CHECK(ptrace(PTRACE_SETREGSET, pid, (void *)NT_X86_XSTATE, &iov) == 0,
	      "SETREGSET NT_X86_XSTATE: %s", strerror(errno));
	free(xs);
	ptrace(PTRACE_CONT, pid, NULL, NULL);
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "tracee's state after the stop (status %#x: 10 + register, 40 MXCSR)", st);
}

int main(int argc, char **argv)
{
	have_avx = detect_avx();
	if (argc > 1 && strcmp(argv[1], "--exec-child") == 0)
		return exec_child_main();
	if (!have_avx)
		printf("no AVX here: the vector checks cover XMM only\n");
	check_stress();
	check_edit();
	check_syscall_interrupted();
	check_fork();
	check_thread_inherits();
	check_exec(argv[0]);
	check_ptrace();
	return finish();
}
