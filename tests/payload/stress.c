/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stress [--threads N] [--rounds R | --seconds S] [--skip LIST]: a multithreaded stress of the
 * paths a sandbox's kernel must get right under concurrency (issue 12's "Done when").
 *
 * N threads (default 8, even) form pairs. Each round, every thread:
 *   - plays futex ping-pong with its partner (a baton passed back and forth), the futex word
 *     switching between private memory (FUTEX_WAIT_PRIVATE, with and without a relative
 *     timeout) and a MAP_SHARED page seen through two different addresses (plain FUTEX_WAIT,
 *     and FUTEX_WAIT_BITSET with an absolute timeout): the two views must be one futex;
 *   - hands a shared anonymous mapping (one view, two views made by mremap, or a memfd mapped
 *     twice) to its partner, who checks every byte the creator wrote and writes its own;
 *   - churns private memory: mmap, fill and check every page, mprotect to PROT_NONE and
 *     PROT_READ (SIGSEGV recovered with siglongjmp on a sigaltstack, exact si_addr and si_code),
 *     futex on a PROT_NONE page (EFAULT), MADV_DONTNEED (zeroes), mremap to grow, munmap in
 *     pieces, and a touch of an address nothing maps (SEGV_MAPERR);
 *   - keeps known values in all 16 vector registers (YMM with AVX) and MXCSR across a tgkill of
 *     itself made from inside that code and a spin during which other threads' signals land:
 *     every handler scribbles over the vector registers, rt_sigreturn must give them back;
 *   - sends SIGUSR1 with tgkill to another thread or to itself through a per-target mailbox and
 *     waits for the handler's acknowledgement (so each send must be received exactly once), and
 *     queues real-time signals with rt_tgsigqueueinfo carrying per-(sender, target) sequence
 *     numbers that each handler checks arrive in order, one by one;
 *   - arms a one-shot POSIX timer (CLOCK_MONOTONIC or CLOCK_REALTIME, relative or absolute in
 *     the past) that sends SIGALRM to the thread itself, and waits for exactly that signal;
 *   - now and then forks a child that checks and writes private (copy-on-write) and shared
 *     memory and exits with a known status.
 *
 * Every result is checked; the first mismatch prints "stress: FAIL ..." on stderr and exits 1.
 * --rounds R (the default, 50) does exactly R rounds and prints a summary line whose counts
 * follow from R and N only, so a native run and a sandboxed run print the same line. --seconds S
 * runs for about S seconds (the even thread of each pair decides, at the start of a round, to
 * stop), checks the same invariants, prints the counts it reached and then a last line
 * "stress: threads=N seconds=S ok", which is again the same everywhere. No check depends on
 * timing; no sleep synchronises anything (but a hang, no progress at all for 120 s, is reported
 * with where each thread is, and exits 3). --skip takes a comma list of phases to leave out
 * (shared, private, vector, usr1, rt, timer, fork) to narrow a failure down.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cpuid.h>
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 16
#define PINGS 8 /* ping-pong exchanges per round */
#define PASSES_PER_VARIANT 3 /* the futex word changes variant every this many passes */
#define FORK_EVERY 16 /* a thread forks in one round out of this many */
#define PAGE 4096UL
#define WORDS_PER_PAGE (PAGE / sizeof(uint64_t))
#define STOP_BATON 0xdead0001U
#define RT_WINDOW 4 /* real-time signals in flight per (sender, target) */
#define HANG_SECONDS 120 /* no progress at all for this long: report where everyone is */

/* Phases --skip can leave out. */
enum phase {
	PH_SHARED,
	PH_PRIVATE,
	PH_VECTOR,
	PH_USR1,
	PH_RT,
	PH_TIMER,
	PH_FORK,
	PH_COUNT,
};
static const char *const phase_names[PH_COUNT] = { "shared", "private", "vector", "usr1",
						   "rt",     "timer",	"fork" };
static bool skip[PH_COUNT];

static int nthreads = 8;
static long rounds_arg = 50;
static long seconds_arg = -1; /* >= 0: time mode */
static long long deadline_ns;
static bool have_avx;
static pid_t my_pid;
static int sig_rt;

/* Per-target SIGUSR1 mailbox: one send in flight per target, under `lock`. */
struct mailbox {
	uint32_t lock; /* 0 free, 1 locked, 2 locked with waiters */
	uint32_t from, seq; /* who sent the signal in flight and its sequence number */
	uint32_t posted, acked; /* sends posted, sends the handler acknowledged */
} __attribute__((aligned(64)));

/* Two partners: the baton, its futex words and the shared-mapping handoff. */
struct pair {
	uint32_t word_priv[2]; /* variants 0 and 1 */
	uint32_t data; /* the value passed with the baton */
	uint32_t *shared_view[2]; /* one MAP_SHARED page, mapped at two addresses */
	unsigned char *hand_view[2]; /* the mapping handed over this round, as each side sees it */
	size_t hand_len;
} __attribute__((aligned(64)));

struct worker {
	int id;
	pid_t tid;
	pthread_t thread;
	uint32_t seq; /* baton passes so far (both partners agree) */
	long rounds_done;
	/* Work done, counted by the thread itself (and its handlers, for the *_got fields). */
	long passes, shared_pages, private_pages, segv_want, efault, vector_windows, usr2_want;
	long usr1_sent_total, rt_sent_total, alarms_armed, forks, timeouts;
	long segv_got, usr2_got;
	uint32_t alarms_got; /* futex word: SIGALRMs received */
	uint32_t usr1_got, rt_got; /* signals received from anyone */
	timer_t timers[2];
	const char *volatile doing; /* for the hang report */
	volatile long round_now;
} __attribute__((aligned(64)));

static struct worker workers[MAX_THREADS];
static struct pair pairs[MAX_THREADS / 2];
static struct mailbox mailboxes[MAX_THREADS];
/* [sender][target]: written by the sender (sent) or by the target's handler (recv). */
static uint32_t usr1_sent[MAX_THREADS][MAX_THREADS], usr1_recv[MAX_THREADS][MAX_THREADS];
static uint32_t rt_sent[MAX_THREADS][MAX_THREADS], rt_recv[MAX_THREADS][MAX_THREADS];
static uint32_t started, finished; /* futex words of the start and end barriers */
static uint32_t exited; /* workers done (futex word the main thread watches) */
static uint64_t progress; /* phases completed by anyone */

static __thread int my_id = -1;
static __thread sigjmp_buf segv_jb;
static __thread void *volatile segv_addr;
static __thread volatile int segv_code, segv_armed;

/* --- reporting --- */

/* Prints "stress: FAIL thread T: MSG" on stderr and exits 1; usable from signal handlers. */
static void __attribute__((noreturn, format(printf, 1, 2))) fail(const char *fmt, ...)
{
	char buf[512];
	int n;
	va_list ap;

	n = snprintf(buf, sizeof(buf), "stress: FAIL thread %d: ", my_id);
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (write(2, buf, (size_t)n) < 0)
		_exit(1);
	_exit(1);
}

/* --- small helpers --- */

static uint32_t load32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void store32(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static long futex(uint32_t *uaddr, int op, uint32_t val, const struct timespec *ts, uint32_t val3)
{
	return syscall(SYS_futex, uaddr, op, val, ts, NULL, val3);
}

/* Waits (private futex, no timeout) until *word != seen; interruptions are fine. */
static void wait_change(uint32_t *word, uint32_t seen, const char *what)
{
	if (futex(word, FUTEX_WAIT_PRIVATE, seen, NULL, 0) < 0 && errno != EAGAIN && errno != EINTR)
		fail("futex wait for %s: %s", what, strerror(errno));
}

static void wake_all(uint32_t *word, const char *what)
{
	if (futex(word, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, 0) < 0)
		fail("futex wake for %s: %s", what, strerror(errno));
}

static long long now_ns(clockid_t clk)
{
	struct timespec ts;

	if (clock_gettime(clk, &ts))
		fail("clock_gettime(%d): %s", (int)clk, strerror(errno));
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static struct timespec ns_to_ts(long long ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000LL, .tv_nsec = ns % 1000000000LL };

	return ts;
}

static uint64_t pattern(uint64_t key, uint64_t i)
{
	uint64_t x = (key + 1) * 0x9e3779b97f4a7c15ULL ^ (i + 3) * 0xc2b2ae3d27d4eb4fULL;

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ULL;
	return x ^ (x >> 32);
}

/* Fills pages [first, first + pages) of the mapping at base with key's pattern. */
static void fill_at(void *base, size_t first, size_t pages, uint64_t key)
{
	uint64_t *w = base;

	for (size_t i = first * WORDS_PER_PAGE; i < (first + pages) * WORDS_PER_PAGE; i++)
		w[i] = pattern(key, i);
}

static void fill(void *p, size_t pages, uint64_t key)
{
	fill_at(p, 0, pages, key);
}

/* Checks every word of pages [first, first + pages) of the mapping at base. */
static void check_at(const void *base, size_t first, size_t pages, uint64_t key, const char *what)
{
	const volatile uint64_t *w = base;

	for (size_t i = first * WORDS_PER_PAGE; i < (first + pages) * WORDS_PER_PAGE; i++) {
		uint64_t got = w[i];

		if (got != pattern(key, i))
			fail("%s: page %zu word %zu is %#llx, want %#llx", what, i / WORDS_PER_PAGE,
			     i % WORDS_PER_PAGE, (unsigned long long)got,
			     (unsigned long long)pattern(key, i));
	}
}

static void check(const void *p, size_t pages, uint64_t key, const char *what)
{
	check_at(p, 0, pages, key, what);
}

static void check_zero(const void *p, size_t pages, const char *what)
{
	const volatile uint64_t *w = p;

	for (size_t i = 0; i < pages * WORDS_PER_PAGE; i++)
		if (w[i])
			fail("%s: page %zu word %zu is %#llx, want 0", what, i / WORDS_PER_PAGE,
			     i % WORDS_PER_PAGE, (unsigned long long)w[i]);
}

static void *map_anon(size_t pages, int prot, int flags, const char *what)
{
	void *p = mmap(NULL, pages * PAGE, prot, flags | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		fail("mmap of %zu pages for %s: %s", pages, what, strerror(errno));
	return p;
}

static void unmap(void *p, size_t pages, const char *what)
{
	if (munmap(p, pages * PAGE))
		fail("munmap of %s: %s", what, strerror(errno));
}

static void protect(void *p, size_t pages, int prot, const char *what)
{
	if (mprotect(p, pages * PAGE, prot))
		fail("mprotect(%d) of %s: %s", prot, what, strerror(errno));
}

/* --- vector registers --- */

static bool detect_avx(void)
{
	unsigned int a, b, c, d, lo, hi;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_AVX) || !(c & bit_OSXSAVE))
		return false;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return (lo & 0x6) == 0x6;
}

#define VCLOBBER                                                                                 \
	"xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", \
		"xmm11", "xmm12", "xmm13", "xmm14", "xmm15"

/*
 * Run by every handler: computes with all 16 vector registers (a value through all of them,
 * XORed with itself) and checks the result, leaving every register clobbered for the
 * interrupted code's sake: rt_sigreturn must restore them.
 */
static void vector_scribble(uint32_t salt)
{
	uint8_t in[32] __attribute__((aligned(32))), out[32] __attribute__((aligned(32)));
	uint8_t zero[32] __attribute__((aligned(32)));

	for (int i = 0; i < 32; i++)
		in[i] = (uint8_t)(salt * 7 + (uint32_t)i * 13 + 1);
	if (have_avx)
		__asm__ volatile("vmovdqu %[in], %%ymm0\n\t"
				 "vmovdqa %%ymm0, %%ymm1\n\tvmovdqa %%ymm1, %%ymm2\n\t"
				 "vmovdqa %%ymm2, %%ymm3\n\tvmovdqa %%ymm3, %%ymm4\n\t"
				 "vmovdqa %%ymm4, %%ymm5\n\tvmovdqa %%ymm5, %%ymm6\n\t"
				 "vmovdqa %%ymm6, %%ymm7\n\tvmovdqa %%ymm7, %%ymm8\n\t"
				 "vmovdqa %%ymm8, %%ymm9\n\tvmovdqa %%ymm9, %%ymm10\n\t"
				 "vmovdqa %%ymm10, %%ymm11\n\tvmovdqa %%ymm11, %%ymm12\n\t"
				 "vmovdqa %%ymm12, %%ymm13\n\tvmovdqa %%ymm13, %%ymm14\n\t"
				 "vxorps %%ymm0, %%ymm14, %%ymm15\n\t"
				 "vmovdqu %%ymm14, %[out]\n\t"
				 "vmovdqu %%ymm15, %[zero]\n\t"
				 "vzeroupper"
				 : [out] "=m"(out), [zero] "=m"(zero)
				 : [in] "m"(in)
				 : VCLOBBER);
	else
		__asm__ volatile("movdqu %[in], %%xmm0\n\t"
				 "movdqa %%xmm0, %%xmm1\n\tmovdqa %%xmm1, %%xmm2\n\t"
				 "movdqa %%xmm2, %%xmm3\n\tmovdqa %%xmm3, %%xmm4\n\t"
				 "movdqa %%xmm4, %%xmm5\n\tmovdqa %%xmm5, %%xmm6\n\t"
				 "movdqa %%xmm6, %%xmm7\n\tmovdqa %%xmm7, %%xmm8\n\t"
				 "movdqa %%xmm8, %%xmm9\n\tmovdqa %%xmm9, %%xmm10\n\t"
				 "movdqa %%xmm10, %%xmm11\n\tmovdqa %%xmm11, %%xmm12\n\t"
				 "movdqa %%xmm12, %%xmm13\n\tmovdqa %%xmm13, %%xmm14\n\t"
				 "movdqa %%xmm14, %%xmm15\n\tpxor %%xmm0, %%xmm15\n\t"
				 "movdqu %%xmm14, %[out]\n\t"
				 "movdqu %%xmm15, %[zero]"
				 : [out] "=m"(out), [zero] "=m"(zero)
				 : [in] "m"(in)
				 : VCLOBBER);
	if (memcmp(in, out, have_avx ? 32 : 16))
		fail("vector registers in a handler: a value moved through all 16 came out wrong");
	for (int i = 0; i < (have_avx ? 32 : 16); i++)
		if (zero[i])
			fail("vector registers in a handler: x ^ x is not 0 at byte %d", i);
}

struct vstate {
	uint8_t v[16][32];
	uint32_t mxcsr;
} __attribute__((aligned(32)));

#define YMM_LOAD(n) "vmovdqu " #n "*32(%[in]), %%ymm" #n "\n\t"
#define YMM_STORE(n) "vmovdqu %%ymm" #n ", " #n "*32(%[out])\n\t"
#define XMM_LOAD(n) "movdqu " #n "*32(%[in]), %%xmm" #n "\n\t"
#define XMM_STORE(n) "movdqu %%xmm" #n ", " #n "*32(%[out])\n\t"
#define ALL16(M) \
	M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15)
#define MXCSR_DEFAULT 0x1f80U

/*
 * Loads *in into the vector registers and MXCSR, sends itself SIGUSR2 with tgkill from inside
 * (the handler runs before the next instruction), spins while other threads' signals land,
 * then stores everything into *out. Returns tgkill's result.
 */
static long vector_hold(const struct vstate *in, struct vstate *out, pid_t tid, unsigned long spins)
{
	long ret = SYS_tgkill;
	uint32_t def = MXCSR_DEFAULT;

	if (have_avx)
		__asm__ volatile(
			ALL16(YMM_LOAD) "ldmxcsr 512(%[in])\n\t"
					"syscall\n\t"
					"mov %[n], %%rcx\n\t"
					"1: dec %%rcx\n\t"
					"jnz 1b\n\t" ALL16(YMM_STORE) "stmxcsr 512(%[out])\n\t"
								      "ldmxcsr %[def]\n\t"
								      "vzeroupper"
			: "+a"(ret)
			: [in] "r"(in), [out] "r"(out), [n] "r"(spins), "D"((long)my_pid),
			  "S"((long)tid), "d"((long)SIGUSR2), [def] "m"(def)
			: "rcx", "r11", "memory", "cc", VCLOBBER);
	else
		__asm__ volatile(
			ALL16(XMM_LOAD) "ldmxcsr 512(%[in])\n\t"
					"syscall\n\t"
					"mov %[n], %%rcx\n\t"
					"1: dec %%rcx\n\t"
					"jnz 1b\n\t" ALL16(XMM_STORE) "stmxcsr 512(%[out])\n\t"
								      "ldmxcsr %[def]"
			: "+a"(ret)
			: [in] "r"(in), [out] "r"(out), [n] "r"(spins), "D"((long)my_pid),
			  "S"((long)tid), "d"((long)SIGUSR2), [def] "m"(def)
			: "rcx", "r11", "memory", "cc", VCLOBBER);
	return ret;
}

/* --- signal handlers --- */

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (my_id < 0 || !segv_armed)
		fail("unexpected SIGSEGV at %p (si_code %d)", si->si_addr, si->si_code);
	if (si->si_addr != segv_addr || si->si_code != segv_code)
		fail("SIGSEGV at %p with si_code %d, want %p with si_code %d", si->si_addr,
		     si->si_code, segv_addr, segv_code);
	segv_armed = 0;
	workers[my_id].segv_got++;
	siglongjmp(segv_jb, 1);
}

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	struct mailbox *mb;
	uint32_t posted, from, seq;

	(void)sig;
	(void)uc;
	if (my_id < 0)
		fail("SIGUSR1 in a thread that is not a worker");
	mb = &mailboxes[my_id];
	posted = load32(&mb->posted);
	if (posted == load32(&mb->acked))
		fail("SIGUSR1 with no send posted (delivered twice?)");
	if (si->si_code != SI_TKILL || si->si_pid != my_pid)
		fail("SIGUSR1 with si_code %d si_pid %d, want SI_TKILL from %d", si->si_code,
		     (int)si->si_pid, (int)my_pid);
	from = mb->from;
	seq = mb->seq;
	if (from >= (uint32_t)nthreads || seq != usr1_recv[from][my_id] + 1)
		fail("SIGUSR1 from %u has sequence %u, want %u", from, seq,
		     from < (uint32_t)nthreads ? usr1_recv[from][my_id] + 1 : 0);
	store32(&usr1_recv[from][my_id], seq);
	__atomic_add_fetch(&workers[my_id].usr1_got, 1, __ATOMIC_RELAXED);
	vector_scribble(seq);
	store32(&mb->acked, posted);
	wake_all(&mb->acked, "a SIGUSR1 acknowledgement");
}

static void on_usr2(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (my_id < 0)
		fail("SIGUSR2 in a thread that is not a worker");
	if (si->si_code != SI_TKILL || si->si_pid != my_pid)
		fail("SIGUSR2 with si_code %d si_pid %d, want SI_TKILL from %d", si->si_code,
		     (int)si->si_pid, (int)my_pid);
	workers[my_id].usr2_got++;
	vector_scribble((uint32_t)workers[my_id].usr2_got);
}

static void on_rt(int sig, siginfo_t *si, void *uc)
{
	uint32_t v, from, seq, want;

	(void)sig;
	(void)uc;
	if (my_id < 0)
		fail("real-time signal in a thread that is not a worker");
	if (si->si_code != SI_QUEUE || si->si_pid != my_pid)
		fail("real-time signal with si_code %d si_pid %d, want SI_QUEUE from %d",
		     si->si_code, (int)si->si_pid, (int)my_pid);
	v = (uint32_t)si->si_value.sival_int;
	from = v >> 24;
	seq = v & 0xffffff;
	if (from >= (uint32_t)nthreads)
		fail("real-time signal from thread %u", from);
	want = (rt_recv[from][my_id] + 1) & 0xffffff;
	if (seq != want)
		fail("real-time signal from %u has sequence %u, want %u (lost, doubled or "
		     "reordered)",
		     from, seq, want);
	store32(&rt_recv[from][my_id], rt_recv[from][my_id] + 1);
	__atomic_add_fetch(&workers[my_id].rt_got, 1, __ATOMIC_RELAXED);
	vector_scribble(v);
	wake_all(&rt_recv[from][my_id], "a real-time signal");
}

static void on_alrm(int sig, siginfo_t *si, void *uc)
{
	struct worker *w;
	int over;

	(void)sig;
	(void)uc;
	if (my_id < 0)
		fail("SIGALRM in a thread that is not a worker");
	w = &workers[my_id];
	if (si->si_code != SI_TIMER || si->si_value.sival_int < 0 || si->si_value.sival_int > 1)
		fail("SIGALRM with si_code %d value %d, want SI_TIMER from timer 0 or 1",
		     si->si_code, si->si_value.sival_int);
	over = timer_getoverrun(w->timers[si->si_value.sival_int]);
	if (over != 0)
		fail("one-shot timer overrun is %d, want 0", over);
	vector_scribble((uint32_t)w->alarms_got);
	store32(&w->alarms_got, w->alarms_got + 1);
	wake_all(&w->alarms_got, "SIGALRM");
}

/* --- the baton: futex ping-pong between partners --- */

/* Where the futex word of variant v lives for this thread. */
static uint32_t *baton_word(struct worker *w, int v)
{
	struct pair *p = &pairs[w->id / 2];

	if (v < 2)
		return &p->word_priv[v];
	return &p->shared_view[w->id & 1][v - 2];
}

static int variant_of(uint32_t seq)
{
	return (int)((seq / PASSES_PER_VARIANT) % 4);
}

/* Passes the baton with val to the partner. */
static void give(struct worker *w, uint32_t val)
{
	struct pair *p = &pairs[w->id / 2];
	int v;
	uint32_t *word;
	long r;

	p->data = val;
	w->seq++;
	v = variant_of(w->seq);
	word = baton_word(w, v);
	store32(word, w->seq);
	if (v == 0 || v == 1)
		r = futex(word, FUTEX_WAKE_PRIVATE, 1, NULL, 0);
	else if (v == 2)
		r = futex(word, FUTEX_WAKE, 1, NULL, 0);
	else
		r = futex(word, FUTEX_WAKE_BITSET, 1, NULL, FUTEX_BITSET_MATCH_ANY);
	if (r < 0 || r > 1)
		fail("futex wake (variant %d) returned %ld (%s)", v, r,
		     r < 0 ? strerror(errno) : "");
	w->passes++;
}

/* Waits for the baton and returns the value passed with it. */
static uint32_t take(struct worker *w)
{
	struct pair *p = &pairs[w->id / 2];
	uint32_t *word, cur;
	struct timespec ts;
	int v;
	long r;

	w->seq++;
	v = variant_of(w->seq);
	word = baton_word(w, v);
	while ((cur = load32(word)) != w->seq) {
		switch (v) {
		case 0:
			r = futex(word, FUTEX_WAIT_PRIVATE, cur, NULL, 0);
			break;
		case 1:
			ts = ns_to_ts(100000LL * (1 + w->seq % 3));
			r = futex(word, FUTEX_WAIT_PRIVATE, cur, &ts, 0);
			break;
		case 2:
			r = futex(word, FUTEX_WAIT, cur, NULL, 0);
			break;
		default:
			ts = ns_to_ts(now_ns(CLOCK_MONOTONIC) + 300000);
			r = futex(word, FUTEX_WAIT_BITSET, cur, &ts, FUTEX_BITSET_MATCH_ANY);
			break;
		}
		if (r == 0 || errno == EAGAIN || errno == EINTR)
			continue;
		if (errno == ETIMEDOUT && (v == 1 || v == 3)) {
			w->timeouts++;
			continue;
		}
		fail("futex wait (variant %d) for pass %u: %s", v, w->seq, strerror(errno));
	}
	w->passes++;
	return p->data;
}

static uint32_t ping_value(int pair, uint32_t seq)
{
	return (uint32_t)pattern((uint64_t)pair, seq) & 0x7fffffff;
}

/*
 * The ping-pong: the even thread (who holds the baton at the start of every round) passes a
 * value, the odd one checks it and passes another back, PINGS times. In time mode the even
 * thread's first pass may be STOP_BATON instead. Returns false when the pair stops.
 */
static bool pingpong(struct worker *w, long round)
{
	int pair = w->id / 2;
	bool even = !(w->id & 1);

	for (int i = 0; i < PINGS; i++) {
		if (even) {
			uint32_t got, want;

			if (i == 0 && seconds_arg >= 0 && now_ns(CLOCK_MONOTONIC) >= deadline_ns) {
				give(w, STOP_BATON);
				return false;
			}
			give(w, ping_value(pair, w->seq + 1));
			want = ~ping_value(pair, w->seq + 1) & 0x7fffffff;
			got = take(w);
			if (got != want)
				fail("round %ld pong %d: got %#x, want %#x", round, i, got, want);
		} else {
			uint32_t got = take(w), want = ping_value(pair, w->seq);

			if (i == 0 && got == STOP_BATON)
				return false;
			if (got != want)
				fail("round %ld ping %d: got %#x, want %#x", round, i, got, want);
			give(w, ~ping_value(pair, w->seq + 1) & 0x7fffffff);
		}
	}
	return true;
}

/* --- phases --- */

static void expect_segv(void *addr, bool write, int code, const char *what)
{
	long before = workers[my_id].segv_got;

	workers[my_id].segv_want++;
	segv_addr = addr;
	segv_code = code;
	if (sigsetjmp(segv_jb, 1) == 0) {
		segv_armed = 1;
		if (write)
			*(volatile unsigned char *)addr = 1;
		else
			(void)*(volatile unsigned char *)addr;
		segv_armed = 0;
		fail("%s: touching %p (%s) raised no SIGSEGV", what, addr,
		     write ? "write" : "read");
	}
	if (workers[my_id].segv_got != before + 1)
		fail("%s: SIGSEGV handler ran %ld times, want 1", what,
		     workers[my_id].segv_got - before);
}

/*
 * The mapping handed between partners. The creator (the even thread in even rounds, the odd one
 * in odd rounds) maps it (one view; two views by mremap; a memfd mapped twice), fills it through
 * its view and passes the baton; the partner checks every word through its own view, writes
 * its own pattern and passes back; the creator checks that and unmaps.
 */
/* Pages handed over in a round: the creator's choice, so both partners count the same. */
static size_t shared_pages_of(int id, long round)
{
	int creator = (round & 1) ? (id | 1) : (id & ~1);

	return 2 + (size_t)((round * 5 + creator) % 7);
}

static void shared_phase(struct worker *w, long round)
{
	struct pair *p = &pairs[w->id / 2];
	bool even = !(w->id & 1);
	bool creator = even == !(round & 1);
	int kind = (int)((round / 2) % 3);
	size_t pages = shared_pages_of(w->id, round);
	uint64_t key = ((uint64_t)round << 8) | (uint64_t)w->id;
	int side = w->id & 1;

	if (!even && creator) /* the baton is with the even thread: fetch it */
		take(w);
	else if (even && !creator)
		give(w, 0);
	if (creator) {
		unsigned char *a, *b;
		size_t len = pages * PAGE;

		if (kind == 2) {
			int fd = (int)syscall(SYS_memfd_create, "stress", 0);

			if (fd < 0)
				fail("memfd_create: %s", strerror(errno));
			if (ftruncate(fd, (off_t)len))
				fail("ftruncate of a memfd: %s", strerror(errno));
			a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			if (a == MAP_FAILED || b == MAP_FAILED)
				fail("mmap of a memfd: %s", strerror(errno));
			close(fd);
		} else {
			a = map_anon(pages, PROT_READ | PROT_WRITE, MAP_SHARED, "a shared mapping");
			b = a;
			if (kind == 1) {
				b = mremap(a, 0, len, MREMAP_MAYMOVE);
				if (b == MAP_FAILED)
					fail("mremap of a shared mapping to a second view: %s",
					     strerror(errno));
			}
		}
		p->hand_view[side] = a;
		p->hand_view[!side] = b;
		p->hand_len = len;
		fill(a, pages, key);
		give(w, (uint32_t)pages);
		if (take(w) != (uint32_t)pages * 2)
			fail("round %ld: the partner did not check the shared mapping", round);
		check(a, pages, key ^ 0x5555, "the partner's writes seen through a shared mapping");
		if (kind == 2)
			check(b, pages, key ^ 0x5555, "a memfd's second view");
		if (b != a)
			unmap(b, pages, "a second view");
		unmap(a, pages, "a shared mapping");
	} else {
		uint32_t got = take(w);
		unsigned char *mine = p->hand_view[side];
		uint64_t ckey = ((uint64_t)round << 8) | (uint64_t)(w->id ^ 1);

		if (got != pages)
			fail("round %ld: handed %u pages, want %zu", round, got, pages);
		check(mine, pages, ckey, "a partner's writes seen through a shared mapping");
		fill(mine, pages, ckey ^ 0x5555);
		give(w, got * 2);
	}
	/* Hand the baton back to the even thread for the next round. */
	if (!even && creator)
		give(w, 0);
	else if (even && !creator)
		take(w);
	w->shared_pages += (long)pages;
}

static void private_phase(struct worker *w, long round)
{
	size_t pages = 3 + (size_t)((round * 7 + w->id) % 10);
	uint64_t key = ((uint64_t)round << 8) | (uint64_t)w->id | (1ULL << 40);
	unsigned char *p = map_anon(pages, PROT_READ | PROT_WRITE, MAP_PRIVATE, "private memory");
	unsigned char *q, *mid = p + PAGE;
	unsigned char *wild = (unsigned char *)0x1000 + w->id * 64 + round % 64;

	check_zero(p, pages, "fresh private memory");
	fill(p, pages, key);
	check(p, pages, key, "private memory");
	/* PROT_NONE: reads and writes fault, a futex there is EFAULT; the contents stay. */
	protect(mid, 1, PROT_NONE, "a private page");
	expect_segv(mid + round % PAGE, true, SEGV_ACCERR, "write to PROT_NONE");
	expect_segv(mid + (round * 3) % PAGE, false, SEGV_ACCERR, "read of PROT_NONE");
	if (futex((uint32_t *)mid, FUTEX_WAIT_PRIVATE, 0, NULL, 0) != -1 || errno != EFAULT)
		fail("futex wait on a PROT_NONE page: %s, want EFAULT", strerror(errno));
	w->efault++;
	protect(mid, 1, PROT_READ, "a private page");
	expect_segv(mid + 8, true, SEGV_ACCERR, "write to PROT_READ");
	check(p, pages, key, "private memory after PROT_NONE and PROT_READ");
	protect(mid, 1, PROT_READ | PROT_WRITE, "a private page");
	/* An address nothing maps. */
	expect_segv(wild, (round & 1) != 0, SEGV_MAPERR, "touch of an unmapped address");
	/* MADV_DONTNEED empties private pages. */
	if (madvise(p + 2 * PAGE, PAGE, MADV_DONTNEED))
		fail("madvise(MADV_DONTNEED): %s", strerror(errno));
	check_zero(p + 2 * PAGE, 1, "a private page after MADV_DONTNEED");
	fill_at(p, 2, 1, key ^ 2);
	check_at(p, 2, 1, key ^ 2, "a refilled page");
	fill_at(p, 2, 1, key);
	/* Growing moves or extends the mapping with its contents; the new tail is zero. */
	q = mremap(p, pages * PAGE, (pages + 2) * PAGE, MREMAP_MAYMOVE);
	if (q == MAP_FAILED)
		fail("mremap to grow private memory: %s", strerror(errno));
	check(q, pages, key, "private memory after mremap");
	check_zero(q + pages * PAGE, 2, "the tail mremap added");
	/* Unmap in pieces: a page in the middle, then the rest. */
	unmap(q + PAGE, 1, "a page of private memory");
	check(q, 1, key, "the page before an unmapped hole");
	unmap(q, 1, "the first page");
	unmap(q + 2 * PAGE, pages, "the rest of private memory");
	w->private_pages += (long)pages + 2;
}

static void vector_phase(struct worker *w, long round)
{
	struct vstate in, out;
	long before = w->usr2_got, r;

	memset(&in, 0, sizeof(in));
	memset(&out, 0, sizeof(out));
	for (int reg = 0; reg < 16; reg++)
		for (int i = 0; i < 32; i++)
			in.v[reg][i] = (uint8_t)pattern(((uint64_t)round << 8) | (uint64_t)w->id,
							(uint64_t)(reg * 32 + i));
	if (!have_avx)
		for (int reg = 0; reg < 16; reg++)
			memset(in.v[reg] + 16, 0, 16);
	in.mxcsr = (round & 1) ? 0x5f80 : 0x7f80; /* round up / toward zero */
	w->usr2_want++;
	r = vector_hold(&in, &out, w->tid, 20000 + (unsigned long)(round % 7) * 10000);
	if (r != 0)
		fail("tgkill of itself from the vector window returned %ld", r);
	if (w->usr2_got != before + 1)
		fail("SIGUSR2 to itself ran the handler %ld times, want 1", w->usr2_got - before);
	for (int reg = 0; reg < 16; reg++) {
		if (memcmp(in.v[reg], out.v[reg], 16))
			fail("round %ld: xmm%d changed across signals", round, reg);
		if (memcmp(in.v[reg] + 16, out.v[reg] + 16, 16))
			fail("round %ld: upper half of ymm%d changed across signals", round, reg);
	}
	if (out.mxcsr != in.mxcsr)
		fail("round %ld: mxcsr %#x became %#x across signals", round, in.mxcsr, out.mxcsr);
	w->vector_windows++;
}

static void lock(uint32_t *l)
{
	uint32_t c = 0;

	if (__atomic_compare_exchange_n(l, &c, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	if (c != 2)
		c = __atomic_exchange_n(l, 2, __ATOMIC_ACQUIRE);
	while (c != 0) {
		if (futex(l, FUTEX_WAIT_PRIVATE, 2, NULL, 0) < 0 && errno != EAGAIN &&
		    errno != EINTR)
			fail("futex wait for a mailbox lock: %s", strerror(errno));
		c = __atomic_exchange_n(l, 2, __ATOMIC_ACQUIRE);
	}
}

static void unlock(uint32_t *l)
{
	if (__atomic_exchange_n(l, 0, __ATOMIC_RELEASE) == 2 &&
	    futex(l, FUTEX_WAKE_PRIVATE, 1, NULL, 0) < 0)
		fail("futex wake for a mailbox lock: %s", strerror(errno));
}

/* Which threads this thread signals in a round (the same schedule counts the expectations). */
static int usr1_target(int id, long round)
{
	if (round % 4 == 3)
		return id;
	return (id + 1 + (int)(round % (nthreads - 1))) % nthreads;
}

static int rt_targets(int id, long round, int t[3])
{
	t[0] = (id + 1 + (int)((round * 3) % (nthreads - 1))) % nthreads;
	t[1] = (id + 1 + (int)((round * 3 + 1) % (nthreads - 1))) % nthreads;
	t[2] = id;
	return round % 2 ? 3 : 2;
}

static void usr1_phase(struct worker *w, long round)
{
	int t = usr1_target(w->id, round);
	struct mailbox *mb = &mailboxes[t];
	uint32_t posted, acked;

	lock(&mb->lock);
	mb->from = (uint32_t)w->id;
	mb->seq = ++usr1_sent[w->id][t];
	posted = mb->posted + 1;
	store32(&mb->posted, posted);
	if (syscall(SYS_tgkill, my_pid, workers[t].tid, SIGUSR1))
		fail("tgkill(SIGUSR1) of thread %d: %s", t, strerror(errno));
	while ((acked = load32(&mb->acked)) != posted)
		wait_change(&mb->acked, acked, "a SIGUSR1 acknowledgement");
	unlock(&mb->lock);
	w->usr1_sent_total++;
}

static void rt_send(struct worker *w, int t)
{
	siginfo_t si;
	uint32_t seq, recv;

	while (rt_sent[w->id][t] - (recv = load32(&rt_recv[w->id][t])) >= RT_WINDOW)
		wait_change(&rt_recv[w->id][t], recv, "real-time signals to drain");
	seq = ++rt_sent[w->id][t];
	memset(&si, 0, sizeof(si));
	si.si_signo = sig_rt;
	si.si_code = SI_QUEUE;
	si.si_pid = my_pid;
	si.si_uid = getuid();
	si.si_value.sival_int = (int)(((uint32_t)w->id << 24) | (seq & 0xffffff));
	if (syscall(SYS_rt_tgsigqueueinfo, my_pid, workers[t].tid, sig_rt, &si))
		fail("rt_tgsigqueueinfo to thread %d: %s", t, strerror(errno));
	w->rt_sent_total++;
}

static void rt_phase(struct worker *w, long round)
{
	int t[3], n = rt_targets(w->id, round, t);

	for (int i = 0; i < n; i++)
		rt_send(w, t[i]);
}

static void timer_phase(struct worker *w, long round)
{
	int which = (int)(round & 1);
	clockid_t clk = which ? CLOCK_REALTIME : CLOCK_MONOTONIC;
	struct itimerspec its = { 0 };
	uint32_t want = w->alarms_got + 1, got;
	int flags = 0;

	if (round % 5 == 4) {
		/* Absolute and already past: it fires at once. */
		its.it_value = ns_to_ts(now_ns(clk) - 1000000);
		flags = TIMER_ABSTIME;
	} else {
		its.it_value = ns_to_ts(100000LL * (1 + round % 4));
	}
	w->alarms_armed++;
	if (timer_settime(w->timers[which], flags, &its, NULL))
		fail("timer_settime: %s", strerror(errno));
	while ((got = load32(&w->alarms_got)) != want) {
		if (got > want)
			fail("SIGALRM: %u received, want %u", got, want);
		wait_change(&w->alarms_got, got, "SIGALRM");
	}
}

/*
 * A child checks the private memory it inherited (copy-on-write) and overwrites it, writes the
 * shared page, maps and touches memory of its own, and exits with a known status; the parent
 * checks its private memory did not change and sees the child's shared writes.
 */
static void fork_phase(struct worker *w, long round)
{
	uint64_t key = ((uint64_t)round << 8) | (uint64_t)w->id | (2ULL << 40);
	unsigned char *priv = map_anon(4, PROT_READ | PROT_WRITE, MAP_PRIVATE, "fork memory");
	unsigned char *shared = map_anon(2, PROT_READ | PROT_WRITE, MAP_SHARED, "fork memory");
	int code = 40 + (int)(round % 8), status;
	pid_t pid;

	fill(priv, 4, key);
	pid = fork();
	if (pid < 0)
		fail("fork: %s", strerror(errno));
	if (pid == 0) {
		unsigned char *own;

		check(priv, 4, key, "a child's copy of private memory");
		fill(priv, 4, key ^ 7);
		check_zero(shared, 2, "shared memory in the child");
		fill(shared, 2, key ^ 9);
		own = map_anon(8, PROT_READ | PROT_WRITE, MAP_PRIVATE, "the child's memory");
		fill(own, 8, key ^ 11);
		check(own, 8, key ^ 11, "the child's memory");
		check(priv, 4, key ^ 7, "a child's private writes");
		_exit(code);
	}
	while (waitpid(pid, &status, 0) != pid)
		if (errno != EINTR)
			fail("waitpid: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != code)
		fail("the child ended with status %#x, want exit %d", status, code);
	check(priv, 4, key, "private memory after a child wrote its copy");
	check(shared, 2, key ^ 9, "shared memory the child wrote");
	unmap(priv, 4, "fork memory");
	unmap(shared, 2, "fork memory");
	w->forks++;
}

static bool fork_round(int id, long round)
{
	return (round + id) % FORK_EVERY == FORK_EVERY - 1;
}

/* --- threads --- */

static void made_progress(void)
{
	__atomic_add_fetch(&progress, 1, __ATOMIC_RELAXED);
}

static void barrier(uint32_t *count)
{
	uint32_t c = __atomic_add_fetch(count, 1, __ATOMIC_ACQ_REL);

	if (c == (uint32_t)nthreads) {
		wake_all(count, "a barrier");
		return;
	}
	while ((c = load32(count)) < (uint32_t)nthreads)
		wait_change(count, c, "a barrier");
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	stack_t ss = { .ss_size = 64 * 1024 };
	typedef void (*phase_fn)(struct worker *, long);
	static const phase_fn independent[] = { private_phase, vector_phase, usr1_phase, rt_phase,
						timer_phase };
	static const enum phase independent_ph[] = { PH_PRIVATE, PH_VECTOR, PH_USR1, PH_RT,
						     PH_TIMER };
	const int nind = (int)(sizeof(independent) / sizeof(independent[0]));

	my_id = w->id;
	w->tid = (pid_t)syscall(SYS_gettid);
	ss.ss_sp = malloc(ss.ss_size);
	if (!ss.ss_sp || sigaltstack(&ss, NULL))
		fail("sigaltstack: %s", strerror(errno));
	for (int i = 0; i < 2; i++) {
		struct sigevent sev = { 0 };

		sev.sigev_notify = SIGEV_THREAD_ID;
		sev.sigev_signo = SIGALRM;
		sev.sigev_value.sival_int = i;
		sev._sigev_un._tid = w->tid;
		if (timer_create(i ? CLOCK_REALTIME : CLOCK_MONOTONIC, &sev, &w->timers[i]))
			fail("timer_create: %s", strerror(errno));
	}
	w->doing = "start barrier";
	barrier(&started);

	for (long round = 0; seconds_arg >= 0 || round < rounds_arg; round++) {
		w->round_now = round;
		w->doing = "pingpong";
		if (!pingpong(w, round))
			break;
		made_progress();
		if (!skip[PH_SHARED]) {
			w->doing = phase_names[PH_SHARED];
			shared_phase(w, round);
			made_progress();
		}
		/* The independent phases, in an order that turns with the round. */
		for (int i = 0; i < nind; i++) {
			int k = (int)((i + round + w->id) % nind);

			if (skip[independent_ph[k]])
				continue;
			w->doing = phase_names[independent_ph[k]];
			independent[k](w, round);
			made_progress();
		}
		if (!skip[PH_FORK] && fork_round(w->id, round)) {
			w->doing = phase_names[PH_FORK];
			fork_phase(w, round);
			made_progress();
		}
		w->rounds_done = round + 1;
	}

	/* Wait for this thread's real-time signals to be received before saying it is done. */
	w->doing = "draining real-time signals";
	for (int t = 0; t < nthreads; t++) {
		uint32_t recv;

		while ((recv = load32(&rt_recv[w->id][t])) != rt_sent[w->id][t])
			wait_change(&rt_recv[w->id][t], recv, "real-time signals to drain");
	}
	/* Stay (and keep handling signals) until everybody is done sending. */
	w->doing = "end barrier";
	barrier(&finished);
	for (int i = 0; i < 2; i++)
		if (timer_delete(w->timers[i]))
			fail("timer_delete: %s", strerror(errno));
	w->doing = "exited";
	__atomic_add_fetch(&exited, 1, __ATOMIC_RELEASE);
	wake_all(&exited, "the main thread");
	return NULL;
}

/*
 * Waits for the workers to exit. Not a timing check: only when nobody at all completed a phase
 * for HANG_SECONDS (a hang, however busy the machine) does it print where each thread is and
 * what is in flight, and exit 3.
 */
static void watch(void)
{
	uint64_t last = UINT64_MAX;
	long long idle_since = now_ns(CLOCK_MONOTONIC);
	uint32_t n;

	while ((n = load32(&exited)) < (uint32_t)nthreads) {
		struct timespec ts = { .tv_sec = 5 };
		uint64_t p;

		if (futex(&exited, FUTEX_WAIT_PRIVATE, n, &ts, 0) < 0 && errno != EAGAIN &&
		    errno != EINTR && errno != ETIMEDOUT)
			fail("futex wait for the workers: %s", strerror(errno));
		p = __atomic_load_n(&progress, __ATOMIC_RELAXED);
		if (p != last) {
			last = p;
			idle_since = now_ns(CLOCK_MONOTONIC);
			continue;
		}
		if (now_ns(CLOCK_MONOTONIC) - idle_since < HANG_SECONDS * 1000000000LL)
			continue;
		fprintf(stderr, "stress: FAIL: no progress for %d s; %u of %d threads exited\n",
			HANG_SECONDS, n, nthreads);
		for (int i = 0; i < nthreads; i++) {
			struct worker *w = &workers[i];
			struct mailbox *mb = &mailboxes[i];

			fprintf(stderr,
				"stress:   thread %d (tid %d): round %ld, %s; baton pass %u; "
				"SIGALRM %ld armed %u received; mailbox lock %u posted %u acked %u\n",
				i, (int)w->tid, w->round_now, w->doing, w->seq, w->alarms_armed,
				load32(&w->alarms_got), load32(&mb->lock), load32(&mb->posted),
				load32(&mb->acked));
			for (int t = 0; t < nthreads; t++)
				if (rt_sent[i][t] != load32(&rt_recv[i][t]))
					fprintf(stderr,
						"stress:     real-time signals to %d: %u sent, %u "
						"received\n",
						t, rt_sent[i][t], load32(&rt_recv[i][t]));
		}
		_exit(3);
	}
}

/* --- setup, the checks at the end, main --- */

static void handle(int sig, void (*fn)(int, siginfo_t *, void *), int extra)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | extra;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL))
		fail("sigaction(%d): %s", sig, strerror(errno));
}

static void setup_pairs(void)
{
	for (int i = 0; i < nthreads / 2; i++) {
		uint32_t *a = map_anon(1, PROT_READ | PROT_WRITE, MAP_SHARED, "a futex page");
		uint32_t *b = mremap(a, 0, PAGE, MREMAP_MAYMOVE);

		if (b == MAP_FAILED)
			fail("mremap of a futex page to a second view: %s", strerror(errno));
		if (a == b)
			fail("mremap gave the second view the first one's address");
		pairs[i].shared_view[0] = a;
		pairs[i].shared_view[1] = b;
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: stress [--threads N] [--rounds R | --seconds S] [--skip "
			"shared,private,vector,usr1,rt,timer,fork]\n");
	exit(2);
}

static long number(const char *s)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(s, &end, 10);
	if (errno || end == s || *end || n < 0)
		usage();
	return n;
}

static void parse_skip(char *list)
{
	for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
		int i;

		for (i = 0; i < PH_COUNT; i++)
			if (strcmp(tok, phase_names[i]) == 0)
				break;
		if (i == PH_COUNT)
			usage();
		skip[i] = true;
	}
}

/* Sums a long field of every worker. */
#define SUM(field)                                     \
	({                                             \
		long s_ = 0;                           \
		for (int i_ = 0; i_ < nthreads; i_++)  \
			s_ += (long)workers[i_].field; \
		s_;                                    \
	})

static void expect(const char *what, long got, long want)
{
	if (got != want)
		fail("%s: %ld, want %ld", what, got, want);
}

/* Checks what must hold whatever the number of rounds. */
static void check_invariants(void)
{
	long usr1 = 0, rt = 0;

	for (int i = 0; i < nthreads; i++) {
		struct worker *w = &workers[i];

		if (w->seq != workers[i ^ 1].seq)
			fail("partners %d and %d disagree on the baton passes: %u and %u", i, i ^ 1,
			     w->seq, workers[i ^ 1].seq);
		if (w->rounds_done != workers[i ^ 1].rounds_done)
			fail("partners %d and %d did %ld and %ld rounds", i, i ^ 1, w->rounds_done,
			     workers[i ^ 1].rounds_done);
		expect("SIGSEGVs received", w->segv_got, w->segv_want);
		expect("SIGUSR2s received", w->usr2_got, w->usr2_want);
		expect("SIGALRMs received", w->alarms_got, w->alarms_armed);
		for (int t = 0; t < nthreads; t++) {
			if (usr1_sent[i][t] != usr1_recv[i][t])
				fail("SIGUSR1 from %d to %d: %u sent, %u received", i, t,
				     usr1_sent[i][t], usr1_recv[i][t]);
			if (rt_sent[i][t] != rt_recv[i][t])
				fail("real-time signals from %d to %d: %u sent, %u received", i, t,
				     rt_sent[i][t], rt_recv[i][t]);
		}
		usr1 += w->usr1_got;
		rt += w->rt_got;
	}
	expect("SIGUSR1s handled", usr1, SUM(usr1_sent_total));
	expect("real-time signals handled", rt, SUM(rt_sent_total));
}

/* Replays the schedule for R rounds and checks every count against it. */
static void check_counts(long rounds)
{
	long passes = 0, shared = 0, priv = 0, segv = 0, usr1 = 0, rt = 0, forks = 0;

	for (int id = 0; id < nthreads; id++) {
		for (long r = 0; r < rounds; r++) {
			int t[3];
			bool even = !(id & 1), creator = even == !(r & 1);

			passes += 2 * PINGS;
			if (!skip[PH_SHARED]) {
				passes += 2 + (creator != even ? 2 : 0);
				shared += (long)shared_pages_of(id, r);
			}
			if (!skip[PH_PRIVATE]) {
				priv += 3 + (r * 7 + id) % 10 + 2;
				segv += 4;
			}
			if (!skip[PH_USR1])
				usr1++;
			if (!skip[PH_RT])
				rt += rt_targets(id, r, t);
			if (!skip[PH_FORK] && fork_round(id, r))
				forks++;
		}
		expect("rounds done", workers[id].rounds_done, rounds);
	}
	expect("baton passes", SUM(passes), passes);
	expect("shared pages handed over", SUM(shared_pages), shared);
	expect("private pages checked", SUM(private_pages), priv);
	expect("SIGSEGVs", SUM(segv_got), segv);
	expect("futex EFAULTs", SUM(efault), skip[PH_PRIVATE] ? 0 : nthreads * rounds);
	expect("vector windows", SUM(vector_windows), skip[PH_VECTOR] ? 0 : nthreads * rounds);
	expect("SIGUSR1s sent", SUM(usr1_sent_total), usr1);
	expect("real-time signals sent", SUM(rt_sent_total), rt);
	expect("SIGALRMs", SUM(alarms_armed), skip[PH_TIMER] ? 0 : nthreads * rounds);
	expect("forks", SUM(forks), forks);
}

static void print_counts(void)
{
	printf("passes=%ld shared_pages=%ld private_pages=%ld segv=%ld efault=%ld "
	       "vector=%ld usr1=%ld rt=%ld alarms=%ld forks=%ld",
	       SUM(passes), SUM(shared_pages), SUM(private_pages), SUM(segv_got), SUM(efault),
	       SUM(vector_windows), SUM(usr1_sent_total), SUM(rt_sent_total), SUM(alarms_armed),
	       SUM(forks));
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (i + 1 >= argc)
			usage();
		if (strcmp(argv[i], "--threads") == 0)
			nthreads = (int)number(argv[++i]);
		else if (strcmp(argv[i], "--rounds") == 0)
			rounds_arg = number(argv[++i]);
		else if (strcmp(argv[i], "--seconds") == 0)
			seconds_arg = number(argv[++i]);
		else if (strcmp(argv[i], "--skip") == 0)
			parse_skip(argv[++i]);
		else
			usage();
	}
	if (nthreads < 2 || nthreads > MAX_THREADS || nthreads % 2)
		usage();

	have_avx = detect_avx();
	my_pid = getpid();
	sig_rt = SIGRTMIN + 2;
	handle(SIGSEGV, on_segv, SA_ONSTACK);
	handle(SIGUSR1, on_usr1, 0);
	handle(SIGUSR2, on_usr2, 0);
	handle(sig_rt, on_rt, 0);
	handle(SIGALRM, on_alrm, 0);
	setup_pairs();
	if (seconds_arg >= 0)
		deadline_ns = now_ns(CLOCK_MONOTONIC) + seconds_arg * 1000000000LL;

	for (int i = 0; i < nthreads; i++) {
		int err;

		workers[i].id = i;
		err = pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]);
		if (err)
			fail("pthread_create: %s", strerror(err));
	}
	watch();
	for (int i = 0; i < nthreads; i++) {
		int err = pthread_join(workers[i].thread, NULL);

		if (err)
			fail("pthread_join: %s", strerror(err));
	}

	check_invariants();
	if (seconds_arg < 0) {
		check_counts(rounds_arg);
		printf("stress: threads=%d rounds=%ld ", nthreads, rounds_arg);
		print_counts();
		printf(" ok\n");
	} else {
		printf("stress: did rounds=");
		for (int i = 0; i < nthreads; i += 2)
			printf("%s%ld", i ? "," : "", workers[i].rounds_done);
		printf(" ");
		print_counts();
		printf(" futex_timeouts=%ld\n", SUM(timeouts));
		printf("stress: threads=%d seconds=%ld ok\n", nthreads, seconds_arg);
	}
	return 0;
}
