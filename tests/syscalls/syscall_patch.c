/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a `mov $nr, %eax; syscall` site guarantees, however often it runs: husk's seccomp
 * platform rewrites such sites after their first trap (syscall patching), so every check runs
 * each site many times, the first run trapping and the rest going through the patch. Natively
 * the kernel gives all of it.
 *   - the result, and every register but rax, rcx and r11 unchanged (general, vector, flags);
 *     rcx = the address after the syscall instruction and r11 = rflags, as the instruction sets
 *     them;
 *   - the 128-byte red zone below rsp untouched (leaf code keeps data there);
 *   - a jump straight to the syscall instruction with another number in eax runs that call;
 *   - a blocking call interrupted by a signal: restarted with SA_RESTART, EINTR without;
 *   - threads that run one site together while it is first used get their own results;
 *   - a signal sent while a thread returns from a patched call, after which it computes without
 *     calls, is delivered (not lost);
 *   - a forked child runs the sites of its parent; glibc's wrappers (getppid, getpid) too;
 *   - arch_prctl(ARCH_SET_GS) and a MAP_FIXED mapping over low memory leave the sites working.
 */
#include <asm/prctl.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "child.h"

#define ROUNDS 300

/* A child's function whose steps return 0 or the failing step's number, as one check. */
#define CHECKED_CHILD(name)                            \
	static void name(void *arg)                    \
	{                                              \
		int r = name##_step(arg);              \
                                                       \
		CHECK(r == 0, "failed at step %d", r); \
	}

/* One site: getpid through the exact pattern, nothing else in the asm touches the stack. */
static long site_getpid(void)
{
	long r;

	__asm__ volatile("mov $39, %%eax\n\tsyscall" : "=a"(r) : : "rcx", "r11", "memory");
	return r;
}

/* The general registers around a site: all but rax, rcx and r11 must come back unchanged. */
struct gregs {
	uint64_t rbx, rdx, rsi, rdi, rbp, r8, r9, r10, r12, r13, r14, r15;
	uint64_t rcx, r11, rflags_before, ret;
};

static void regs_site(struct gregs *g)
{
	/* Values the asm loads, then stores back after the call (rbp/rbx saved by hand). */
	/* Below the red zone first: this is a leaf function. */
	__asm__ volatile("sub $128, %%rsp\n\t"
			 "push %%rbp\n\t"
			 "push %%rbx\n\t"
			 "push %%rdi\n\t" /* g */
			 "mov $0x1111111111111111, %%rbx\n\t"
			 "mov $0x2222222222222222, %%rdx\n\t"
			 "mov $0x3333333333333333, %%rsi\n\t"
			 "mov $0x4444444444444444, %%rdi\n\t"
			 "mov $0x5555555555555555, %%rbp\n\t"
			 "mov $0x6666666666666666, %%r8\n\t"
			 "mov $0x7777777777777777, %%r9\n\t"
			 "mov $0x8888888888888888, %%r10\n\t"
			 "mov $0x9999999999999999, %%r12\n\t"
			 "mov $0xaaaaaaaaaaaaaaaa, %%r13\n\t"
			 "mov $0xbbbbbbbbbbbbbbbb, %%r14\n\t"
			 "mov $0xcccccccccccccccc, %%r15\n\t"
			 "stc\n\t" /* CF set: the flags must survive */
			 "pushfq\n\t"
			 "pop %%rcx\n\t"
			 "movq %%rcx, %%xmm15\n\t"
			 "mov $39, %%eax\n\t"
			 "syscall\n\t"
			 "1:\n\t"
			 "push %%rdi\n\t"
			 "mov 8(%%rsp), %%rdi\n\t" /* g */
			 "mov %%rbx, 0(%%rdi)\n\t"
			 "mov %%rdx, 8(%%rdi)\n\t"
			 "mov %%rsi, 16(%%rdi)\n\t"
			 "pop %%rsi\n\t" /* the rdi of after the call */
			 "mov %%rsi, 24(%%rdi)\n\t"
			 "mov %%rbp, 32(%%rdi)\n\t"
			 "mov %%r8, 40(%%rdi)\n\t"
			 "mov %%r9, 48(%%rdi)\n\t"
			 "mov %%r10, 56(%%rdi)\n\t"
			 "mov %%r12, 64(%%rdi)\n\t"
			 "mov %%r13, 72(%%rdi)\n\t"
			 "mov %%r14, 80(%%rdi)\n\t"
			 "mov %%r15, 88(%%rdi)\n\t"
			 "lea 1b(%%rip), %%rsi\n\t"
			 "sub %%rsi, %%rcx\n\t" /* 0 when rcx = the address after syscall */
			 "mov %%rcx, 96(%%rdi)\n\t"
			 "mov %%r11, 104(%%rdi)\n\t"
			 "movq %%xmm15, %%rsi\n\t"
			 "mov %%rsi, 112(%%rdi)\n\t"
			 "mov %%rax, 120(%%rdi)\n\t"
			 "pop %%rdi\n\t"
			 "pop %%rbx\n\t"
			 "pop %%rbp\n\t"
			 "add $128, %%rsp\n\t"
			 :
			 : "D"(g)
			 : "rax", "rcx", "rdx", "rsi", "r8", "r9", "r10", "r11", "r12", "r13",
			   "r14", "r15", "xmm15", "memory", "cc");
}

static void registers(void)
{
	int bad = 0;

	for (int i = 0; i < ROUNDS; i++) {
		struct gregs g;

		memset(&g, 0, sizeof(g));
		regs_site(&g);
		if (g.rbx != 0x1111111111111111ULL || g.rdx != 0x2222222222222222ULL ||
		    g.rsi != 0x3333333333333333ULL || g.rdi != 0x4444444444444444ULL ||
		    g.rbp != 0x5555555555555555ULL || g.r8 != 0x6666666666666666ULL ||
		    g.r9 != 0x7777777777777777ULL || g.r10 != 0x8888888888888888ULL ||
		    g.r12 != 0x9999999999999999ULL || g.r13 != 0xaaaaaaaaaaaaaaaaULL ||
		    g.r14 != 0xbbbbbbbbbbbbbbbbULL || g.r15 != 0xccccccccccccccccULL ||
		    (long)g.ret != getpid()) {
			if (!bad++)
				CHECK(0,
				      "round %d: a register changed across the call: rbx %#lx rdx "
				      "%#lx rsi %#lx rdi %#lx rbp %#lx r8 %#lx r9 %#lx r10 %#lx r12 "
				      "%#lx r13 %#lx r14 %#lx r15 %#lx ret %ld",
				      i, g.rbx, g.rdx, g.rsi, g.rdi, g.rbp, g.r8, g.r9, g.r10,
				      g.r12, g.r13, g.r14, g.r15, (long)g.ret);
		}
		/* rcx: the address after the instruction; r11: rflags (CF still set, RF clear). */
		if (g.rcx != 0 || (g.r11 & 0x1) != 1 ||
		    (g.r11 & ~0x10000ULL) != (g.rflags_before & ~0x10000ULL)) {
			if (!bad++)
				CHECK(0,
				      "round %d: rcx - next rip = %ld, r11 %#lx, rflags before %#lx",
				      i, (long)g.rcx, g.r11, g.rflags_before);
		}
	}
	CHECK(bad == 0, "%d rounds of %d had a bad register", bad, ROUNDS);
}

/* The red zone: 16 words below rsp, written before and read after the call, by the asm. */
static void red_zone(void)
{
	int bad = 0;

	for (int i = 0; i < ROUNDS; i++) {
		uint64_t seen = 0;

		__asm__ volatile("mov $-128, %%rcx\n\t"
				 "1: lea 0x5a5a(%%rcx), %%rax\n\t"
				 "mov %%rax, (%%rsp,%%rcx)\n\t"
				 "add $8, %%rcx\n\t"
				 "jnz 1b\n\t"
				 "mov $39, %%eax\n\t"
				 "syscall\n\t"
				 "xor %%edx, %%edx\n\t"
				 "mov $-128, %%rcx\n\t"
				 "2: lea 0x5a5a(%%rcx), %%rax\n\t"
				 "cmp %%rax, (%%rsp,%%rcx)\n\t"
				 "je 3f\n\t"
				 "inc %%rdx\n\t"
				 "3: add $8, %%rcx\n\t"
				 "jnz 2b\n\t"
				 : "=d"(seen)
				 :
				 : "rax", "rcx", "r11", "memory", "cc");
		if (seen)
			bad++;
	}
	CHECK(bad == 0, "the red zone changed in %d of %d rounds", bad, ROUNDS);
}

/* Vector registers across a site: ymm/xmm values survive (SSE at least). */
static void vectors(void)
{
	int bad = 0;

	for (int i = 0; i < ROUNDS; i++) {
		uint64_t lo = 0x0123456789abcdefULL + (uint64_t)i, out0 = 0, out1 = 0;

		__asm__ volatile("movq %2, %%xmm3\n\t"
				 "pshufd $0x44, %%xmm3, %%xmm3\n\t"
				 "mov $39, %%eax\n\t"
				 "syscall\n\t"
				 "movq %%xmm3, %0\n\t"
				 "pshufd $0xee, %%xmm3, %%xmm4\n\t"
				 "movq %%xmm4, %1\n\t"
				 : "=r"(out0), "=r"(out1)
				 : "r"(lo)
				 : "rax", "rcx", "r11", "xmm3", "xmm4", "memory");
		if (out0 != lo || out1 != lo)
			bad++;
	}
	CHECK(bad == 0, "xmm3 changed across the call in %d of %d rounds", bad, ROUNDS);
}

/*
 * A jump straight to a site's syscall instruction with another number in eax: that number's
 * call runs (getppid, not getpid).
 */
static __attribute__((noinline)) long jump_site(long nr, bool direct)
{
	long r;

	__asm__ volatile("test %2, %2\n\t"
			 "jnz 2f\n\t"
			 "mov $39, %%eax\n\t"
			 "1: syscall\n\t"
			 "jmp 3f\n\t"
			 "2: mov %1, %%rax\n\t"
			 "jmp 1b\n\t"
			 "3:\n\t"
			 : "=&a"(r)
			 : "r"(nr), "r"((long)direct)
			 : "rcx", "r11", "memory", "cc");
	return r;
}

static void direct_jump(void)
{
	int bad = 0;

	for (int i = 0; i < ROUNDS; i++) {
		if (jump_site(0, false) != getpid() || jump_site(SYS_getppid, true) != getppid())
			bad++;
	}
	CHECK(bad == 0, "%d of %d rounds ran the wrong call", bad, ROUNDS);
}

/* read(fd, buf, 1) through a site of its own. */
static long site_read(int fd, void *buf)
{
	long r;

	__asm__ volatile("mov $0, %%eax\n\tsyscall"
			 : "=a"(r)
			 : "D"((long)fd), "S"(buf), "d"(1L)
			 : "rcx", "r11", "memory");
	return r;
}

static volatile sig_atomic_t alarms, in_read;
static int go_w = -1;

/* Tells the child "a signal reached the read" (only once the read is under way). */
static void on_alarm(int sig)
{
	(void)sig;
	if (in_read && !alarms) {
		alarms++;
		(void)!write(go_w, "g", 1);
	}
}

/*
 * The child signals the parent every 20 ms until the parent's handler has run inside the read
 * (the go pipe says so), then writes the byte the read waits for.
 */
static int restarting_step(void *arg)
{
	bool restart = arg != NULL;
	int data[2], go[2], st;
	char c = 0;
	struct sigaction sa;
	pid_t kid;
	long r;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = restart ? SA_RESTART : 0;
	if (pipe(data) < 0 || pipe(go) < 0 || sigaction(SIGUSR1, &sa, NULL) < 0)
		return 10;
	go_w = go[1];
	/* Warm the site up first (patched from here on, where patching exists). */
	for (int i = 0; i < 5; i++) {
		if (write(data[1], "w", 1) != 1 || site_read(data[0], &c) != 1 || c != 'w')
			return 11;
	}
	kid = fork();
	if (kid < 0)
		return 12;
	if (kid == 0) {
		char g;

		fcntl(go[0], F_SETFL, O_NONBLOCK);
		for (;;) {
			struct timespec ts = { 0, 20 * 1000 * 1000 };

			kill(getppid(), SIGUSR1);
			nanosleep(&ts, NULL);
			if (read(go[0], &g, 1) == 1)
				break;
		}
		_exit(write(data[1], "x", 1) == 1 ? 0 : 1);
	}
	close(go[0]);
	in_read = 1;
	r = site_read(data[0], &c);
	in_read = 0;
	if (alarms == 0)
		return 13;
	if (restart) {
		/* The handler ran inside the read, which went on and got the byte. */
		if (r != 1 || c != 'x')
			return 14;
	} else if (r == -EINTR) {
		if (site_read(data[0], &c) != 1 || c != 'x')
			return 15;
	} else if (r != 1 || c != 'x') {
		/* 1 only if the signal came before the read began (a window of a few instructions). */
		return 16;
	}
	if (waitpid(kid, &st, 0) != kid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 17;
	return 0;
}

CHECKED_CHILD(restarting)

static void restarts(void)
{
	int st = in_child(restarting, (void *)1);

	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "SA_RESTART: status %#x", st);
	st = in_child(restarting, NULL);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "no SA_RESTART: status %#x", st);
}

/* Threads hammering one site from its first use. */
#define NTHREADS 4
static pthread_barrier_t start;
static long site_tid(void)
{
	long r;

	__asm__ volatile("mov $186, %%eax\n\tsyscall" : "=a"(r) : : "rcx", "r11", "memory");
	return r;
}

static void *hammer(void *arg)
{
	long bad = 0, me = syscall(SYS_gettid);

	(void)arg;
	pthread_barrier_wait(&start);
	for (int i = 0; i < 2000; i++) {
		if (site_tid() != me)
			bad++;
	}
	return (void *)bad;
}

static void threads(void)
{
	pthread_t th[NTHREADS];
	long bad = 0;

	pthread_barrier_init(&start, NULL, NTHREADS);
	for (int i = 0; i < NTHREADS; i++)
		CHECK_RET(pthread_create(&th[i], NULL, hammer, NULL), 0);
	for (int i = 0; i < NTHREADS; i++) {
		void *r;

		pthread_join(th[i], &r);
		bad += (long)r;
	}
	CHECK(bad == 0, "%ld calls of gettid got another thread's id", bad);
}

/*
 * A signal sent while the target returns from a patched call, which then computes without
 * making any call: it must still arrive (a lost one leaves the target spinning for ever). The
 * target makes the call and spins until its handler ran; the sender signals it at once.
 */
#define SPIN_ROUNDS 3000
static volatile int spin_seen, spin_round, spin_go;
static pid_t spin_tid;

static void on_spin_signal(int sig)
{
	(void)sig;
	spin_seen = 1;
}

static void *spin_target(void *arg)
{
	(void)arg;
	spin_tid = (pid_t)syscall(SYS_gettid);
	for (int r = 1; r <= SPIN_ROUNDS; r++) {
		while (__atomic_load_n(&spin_go, __ATOMIC_ACQUIRE) != r)
			site_getpid();
		/* The call the signal races with, then no call until the handler has run. */
		site_getpid();
		while (!__atomic_load_n(&spin_seen, __ATOMIC_ACQUIRE))
			__asm__ volatile("pause");
		spin_seen = 0;
		__atomic_store_n(&spin_round, r, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void interrupts(void)
{
	struct sigaction sa;
	pthread_t th;
	int done = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_spin_signal;
	CHECK_RET(sigaction(SIGUSR2, &sa, NULL), 0);
	spin_tid = 0;
	CHECK_RET(pthread_create(&th, NULL, spin_target, NULL), 0);
	while (!__atomic_load_n(&spin_tid, __ATOMIC_ACQUIRE))
		sched_yield();
	for (int r = 1; r <= SPIN_ROUNDS; r++) {
		__atomic_store_n(&spin_go, r, __ATOMIC_RELEASE);
		syscall(SYS_tgkill, getpid(), spin_tid, SIGUSR2);
		while (__atomic_load_n(&spin_round, __ATOMIC_ACQUIRE) != r)
			sched_yield();
		done = r;
	}
	pthread_join(th, NULL);
	CHECK(done == SPIN_ROUNDS, "%d rounds of %d", done, SPIN_ROUNDS);
	signal(SIGUSR2, SIG_DFL);
}

/*
 * ROUNDS runs of the getpid site and of regs_site in a child: 0 if they held, else fail (a
 * getpid or getppid went wrong) or fail + 1 (a register or the result did). parent: the
 * expected getppid, or 0 for any.
 */
static int sites_hold(pid_t parent, int fail)
{
	for (int i = 0; i < ROUNDS; i++) {
		pid_t pp = getppid();

		if (site_getpid() != getpid() || (parent ? pp != parent : pp <= 0))
			return fail;
		struct gregs g;

		regs_site(&g);
		if (g.r15 != 0xccccccccccccccccULL || (long)g.ret != getpid())
			return fail + 1;
	}
	return 0;
}

static int forked_step(void *arg)
{
	pid_t parent = (pid_t)(long)arg;

	return sites_hold(parent, 1);
}

CHECKED_CHILD(forked)

/* arch_prctl(ARCH_SET_GS): the value reads back, and sites keep working afterwards. */
static int gs_user_step(void *arg)
{
	static uint64_t block[64];
	unsigned long v = 0;

	(void)arg;
	if (syscall(SYS_arch_prctl, ARCH_SET_GS, (unsigned long)block) != 0)
		return 1;
	for (int i = 0; i < ROUNDS; i++) {
		if (site_getpid() != getpid())
			return 2;
		uint64_t x;

		block[3] = (uint64_t)i;
		__asm__ volatile("mov %%gs:24, %0" : "=r"(x));
		if (x != (uint64_t)i)
			return 3;
	}
	if (syscall(SYS_arch_prctl, ARCH_GET_GS, &v) != 0 || v != (unsigned long)block)
		return 4;
	return 0;
}

CHECKED_CHILD(gs_user)

/* A fixed mapping over low memory (where a patching sandbox may keep things): sites work on. */
static int low_map_step(void *arg)
{
	(void)arg;
	for (int i = 0; i < 20; i++)
		if (site_getpid() != getpid())
			return 1;
	for (uintptr_t a = 0x60000; a < 0x80000; a += 0x10000) {
		void *p = mmap((void *)a, 0x10000, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);

		if (p != (void *)a)
			return 2;
		memset(p, 0xcc, 0x10000);
	}
	return sites_hold(0, 3);
}

CHECKED_CHILD(low_map)

int main(void)
{
	int st;

	for (int i = 0; i < ROUNDS; i++) {
		if (site_getpid() != getpid() || getppid() != getppid()) {
			CHECK(0, "round %d: getpid through a site disagrees", i);
			break;
		}
	}
	registers();
	red_zone();
	vectors();
	direct_jump();
	restarts();
	threads();
	interrupts();
	st = in_child(forked, (void *)(long)getpid());
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "forked child: status %#x", st);
	st = in_child(gs_user, NULL);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "gs child: status %#x", st);
	st = in_child(low_map, NULL);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "low mapping child: status %#x", st);
	return finish();
}
