/*
 * The KVM platform's own tests (issue 19), through platform.h with no sentry: a hand-assembled
 * guest makes system calls, faults on purpose, runs privileged instructions, is interrupted
 * from another thread and loses a mapping; the round trip of a system call is measured.
 *   kvm-platform [N [require]]   N: system calls in the timed loop (default 20000)
 * Prints "ok"/"FAIL" per check and the figure; exits 0, 1 on a failure, 77 without /dev/kvm
 * or when the platform's self-test fails (a failure instead with "require": in the harness).
 */
#include <cpuid.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "sentry/platform/kvm/kvm.h"
#include "sentry/platform/platform.h"

#define MEMSIZE (4ULL << 30) /* sparse: what the tests touch, and a reservation's offsets */
#define RES (1ULL << 30) /* a PROT_NONE reservation: 1 GiB + 2 MiB + 8 KiB */
#define RES_LEN ((1ULL << 30) + (2ULL << 20) + 8192)
#define RES_OFF (1ULL << 31) /* its memory-file offset */
#define CODE 0x400000ULL
#define DATA 0x600000ULL
#define STACK 0x7f0000ULL

static uint8_t *base;
static uint64_t next_off = 0;
static int failures;

static int64_t bump_alloc(void *arg, uint64_t len)
{
	(void)arg;
	if (next_off + len > MEMSIZE)
		return -ENOMEM;
	int64_t off = (int64_t)next_off;
	next_off += len;
	return off;
}

static void bump_free(void *arg, uint64_t off, uint64_t len)
{
	(void)arg, (void)off, (void)len;
}

#define CHECK(cond, ...)                              \
	do {                                          \
		if (cond) {                           \
			printf("ok: " __VA_ARGS__);   \
		} else {                              \
			printf("FAIL: " __VA_ARGS__); \
			failures++;                   \
		}                                     \
		printf("\n");                         \
	} while (0)

/* The guest program (offsets from CODE). */
static const uint8_t guest[] = {
	/* 0x00 */ 0xb8,
	0x27,
	0x00,
	0x00,
	0x00, /* mov $39, %eax */
	/* 0x05 */ 0x0f,
	0x05, /* syscall */
	/* 0x07 */ 0x48,
	0x89,
	0x04,
	0x25,
	0x00,
	0x00,
	0x60,
	0x00, /* mov %rax, 0x600000 */
	/* 0x0f */ 0x8b,
	0x04,
	0x25,
	0x00,
	0x00,
	0x70,
	0x00, /* mov 0x700000, %eax */
	/* 0x16 */ 0xc7,
	0x04,
	0x25,
	0x00,
	0x00,
	0x40,
	0x00,
	0x01,
	0x00,
	0x00,
	0x00, /* movl $1, CODE */
	/* 0x21 */ 0xcc, /* int3 */
	/* 0x22 */ 0xf4, /* hlt */
	/* 0x23 */ 0xe6,
	0x80, /* out %al, $0x80 */
	/* 0x25 */ 0x0f,
	0x05, /* syscall */
	/* 0x27 */ 0xeb,
	0xfc, /* jmp 0x25 */
	/* 0x29 */ 0xeb,
	0xfe, /* jmp . */
	/* 0x2b */ 0x0f,
	0x01,
	0xd9, /* vmmcall */
	/* 0x2e */ 0x0f,
	0x22,
	0xd8, /* mov %rax, %cr3 */
	/* 0x31 */ 0xcd,
	0x80, /* int $0x80 */
	/* 0x33 */ 0x0f,
	0x0b, /* ud2 */
};

/* At CODE + CPUID_AT: what the guest's cpuid and xgetbv say, stored at DATA (see below). */
#define CPUID_AT 0x100
/* clang-format off */
static const uint8_t cpuid_code[] = {
	0xb8, 0x01, 0x00, 0x00, 0x00,		/* mov $1, %eax */
	0x31, 0xc9,				/* xor %ecx, %ecx */
	0x0f, 0xa2,				/* cpuid */
	0x89, 0x0c, 0x25, 0x00, 0x00, 0x60, 0x00, /* mov %ecx, DATA+0x00 */
	0xb8, 0x07, 0x00, 0x00, 0x00,		/* mov $7, %eax */
	0x31, 0xc9,				/* xor %ecx, %ecx */
	0x0f, 0xa2,				/* cpuid */
	0x89, 0x1c, 0x25, 0x04, 0x00, 0x60, 0x00, /* mov %ebx, DATA+0x04 */
	0x89, 0x0c, 0x25, 0x08, 0x00, 0x60, 0x00, /* mov %ecx, DATA+0x08 */
	0x89, 0x14, 0x25, 0x0c, 0x00, 0x60, 0x00, /* mov %edx, DATA+0x0c */
	0xb8, 0x00, 0x00, 0x00, 0x40,		/* mov $0x40000000, %eax */
	0x31, 0xc9,				/* xor %ecx, %ecx */
	0x0f, 0xa2,				/* cpuid */
	0x89, 0x1c, 0x25, 0x10, 0x00, 0x60, 0x00, /* mov %ebx, DATA+0x10 */
	0xb8, 0x0d, 0x00, 0x00, 0x00,		/* mov $0xd, %eax */
	0x31, 0xc9,				/* xor %ecx, %ecx */
	0x0f, 0xa2,				/* cpuid */
	0x89, 0x04, 0x25, 0x14, 0x00, 0x60, 0x00, /* mov %eax, DATA+0x14 */
	0x89, 0x14, 0x25, 0x18, 0x00, 0x60, 0x00, /* mov %edx, DATA+0x18 */
	0x89, 0x0c, 0x25, 0x1c, 0x00, 0x60, 0x00, /* mov %ecx, DATA+0x1c */
	0x31, 0xc9,				/* xor %ecx, %ecx */
	0x0f, 0x01, 0xd0,			/* xgetbv */
	0x89, 0x04, 0x25, 0x20, 0x00, 0x60, 0x00, /* mov %eax, DATA+0x20 */
	0x89, 0x14, 0x25, 0x24, 0x00, 0x60, 0x00, /* mov %edx, DATA+0x24 */
	0xb8, 0x01, 0x00, 0x00, 0x80,		/* mov $0x80000001, %eax */
	0x31, 0xc9,				/* xor %ecx, %ecx */
	0x0f, 0xa2,				/* cpuid */
	0x89, 0x0c, 0x25, 0x28, 0x00, 0x60, 0x00, /* mov %ecx, DATA+0x28 */
	0x0f, 0x05,				/* syscall */
};
/* clang-format on */

/* At CODE + LOAD_AT: mov (%rdi), %rax; syscall (the value read is the call's number). */
#define LOAD_AT 0x200
static const uint8_t load_code[] = { 0x48, 0x8b, 0x07, 0x0f, 0x05 };

static struct platform_ctx *ctx;

/* Runs the load at addr: the value read, or -1 with *fault_addr after a fault. */
static int64_t guest_load(const struct platform_ops *ops, arch_regs_t *r, uint64_t addr,
			  uint64_t *fault_addr)
{
	struct platform_event ev;

	r->rip = CODE + LOAD_AT;
	r->rdi = addr;
	*fault_addr = 0;
	if (ops->ctx_switch(ctx, r, &ev) < 0)
		return -2;
	if (ev.kind == PLATFORM_EV_SYSCALL)
		return (int64_t)r->orig_rax;
	if (ev.kind == PLATFORM_EV_FAULT && ev.signo == SIGSEGV)
		*fault_addr = ev.addr;
	return -1;
}
static volatile int stop_kicking;

static void *kicker(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop_kicking, __ATOMIC_SEQ_CST)) {
		ctx->as->p->ops->ctx_interrupt(ctx);
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!kvm_platform_available()) {
		printf("kvm-platform: no usable /dev/kvm (skipped)\n");
		return 77;
	}
	int st = kvm_platform_selftest();
	if (st < 0) {
		printf("kvm-platform: the self-test fails on this host's KVM: %s%s\n",
		       strerror(-st), argc > 2 ? "" : " (skipped)");
		return argc > 2 ? 1 : 77;
	}
	printf("ok: self-test\n");
	int memfd = memfd_create("kvm-platform-test", MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, MEMSIZE) < 0)
		return perror("memfd"), 1;
	base = mmap(NULL, MEMSIZE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (base == MAP_FAILED)
		return perror("mmap"), 1;
	struct platform *p;
	int ret = platform_create("kvm", memfd, &p);
	if (ret < 0) {
		printf("FAIL: platform_create(kvm): %s\n", strerror(-ret));
		return 1;
	}
	p->mem_base = base;
	p->mem_alloc = bump_alloc;
	p->mem_free = bump_free;
	const struct platform_ops *ops = p->ops;
	struct platform_as *as;
	ret = ops->as_create(p, &as);
	if (ret < 0) {
		printf("FAIL: as_create: %s\n", strerror(-ret));
		return 1;
	}
	int64_t code = bump_alloc(NULL, 4096), data = bump_alloc(NULL, 4096);
	int64_t stack = bump_alloc(NULL, 4096);
	memcpy(base + code, guest, sizeof(guest));
	memcpy(base + code + CPUID_AT, cpuid_code, sizeof(cpuid_code));
	memcpy(base + code + LOAD_AT, load_code, sizeof(load_code));
	CHECK(ops->as_map(as, CODE, 4096, PROT_READ | PROT_EXEC, (uint64_t)code) == 0, "map code");
	CHECK(ops->as_map(as, DATA, 4096, PROT_READ | PROT_WRITE, (uint64_t)data) == 0, "map data");
	CHECK(ops->as_map(as, STACK, 4096, PROT_READ | PROT_WRITE, (uint64_t)stack) == 0,
	      "map stack");
	CHECK(ops->as_map(as, 0x7ffe00000000ULL, 4096, PROT_READ, 0) == -EINVAL,
	      "a mapping above PLATFORM_GUEST_MAX is refused");
	CHECK(ops->as_map(as, CODE, 4096, PROT_READ, MEMSIZE) == -EINVAL,
	      "a mapping past the memory file is refused");
	ret = ops->ctx_create(as, &ctx);
	if (ret < 0) {
		printf("FAIL: ctx_create: %s\n", strerror(-ret));
		return 1;
	}

	arch_regs_t r = { 0 };
	struct platform_event ev;
	r.rip = CODE;
	r.rsp = STACK + 4096;
	r.eflags = 0x202;
	r.r8 = 0x0808080808080808ULL, r.r15 = 0x1515151515151515ULL, r.rbp = 0xbbbb;
	r.rdi = 1, r.rsi = 2, r.rdx = 3, r.r10 = 4;
	r.fs_base = 0x123000;
	ret = ops->ctx_switch(ctx, &r, &ev);
	CHECK(ret == 0 && ev.kind == PLATFORM_EV_SYSCALL && r.orig_rax == 39 && r.rip == CODE + 7 &&
		      r.rcx == CODE + 7 && r.rdi == 1 && r.rsi == 2 && r.rdx == 3 && r.r10 == 4 &&
		      r.r8 == 0x0808080808080808ULL && r.r15 == 0x1515151515151515ULL &&
		      r.rbp == 0xbbbb && r.rsp == STACK + 4096 && r.cs == 0x33 &&
		      r.fs_base == 0x123000,
	      "syscall: ret %d kind %d nr %llu rip %#llx rcx %#llx r8 %#llx rsp %#llx", ret,
	      ev.kind, r.orig_rax, r.rip, r.rcx, r.r8, r.rsp);
	r.rax = 4242;
	ret = ops->ctx_switch(ctx, &r, &ev);
	CHECK(ret == 0 && ev.kind == PLATFORM_EV_FAULT && ev.signo == SIGSEGV &&
		      ev.code == SEGV_MAPERR && ev.addr == 0x700000 && r.rip == CODE + 0xf &&
		      ev.trapno == 14,
	      "read of an unmapped page: kind %d sig %d code %d addr %#llx rip %#llx", ev.kind,
	      ev.signo, ev.code, (unsigned long long)ev.addr, r.rip);
	CHECK(*(uint64_t *)(base + data) == 4242,
	      "the call's result was written to guest memory (%llu)",
	      (unsigned long long)*(uint64_t *)(base + data));
	r.rip += 7;
	ret = ops->ctx_switch(ctx, &r, &ev);
	CHECK(ret == 0 && ev.kind == PLATFORM_EV_FAULT && ev.signo == SIGSEGV &&
		      ev.code == SEGV_ACCERR && ev.addr == CODE && r.rip == CODE + 0x16,
	      "write to read-only code: kind %d sig %d code %d addr %#llx", ev.kind, ev.signo,
	      ev.code, (unsigned long long)ev.addr);
	r.rip += 11;
	ret = ops->ctx_switch(ctx, &r, &ev);
	CHECK(ret == 0 && ev.kind == PLATFORM_EV_FAULT && ev.signo == SIGTRAP &&
		      r.rip == CODE + 0x22,
	      "int3: kind %d sig %d rip %#llx", ev.kind, ev.signo, r.rip);
	ret = ops->ctx_switch(ctx, &r, &ev);
	CHECK(ret == 0 && ev.kind == PLATFORM_EV_FAULT && ev.signo == SIGSEGV &&
		      r.rip == CODE + 0x22,
	      "hlt in user mode: kind %d sig %d rip %#llx", ev.kind, ev.signo, r.rip);
	r.rip += 1;
	ret = ops->ctx_switch(ctx, &r, &ev);
	CHECK(ret == 0 && ev.kind == PLATFORM_EV_FAULT && ev.signo == SIGSEGV &&
		      r.rip == CODE + 0x23,
	      "out in user mode: kind %d sig %d rip %#llx", ev.kind, ev.signo, r.rip);
	static const struct {
		uint64_t at;
		int signo;
		const char *what;
	} priv[] = { { 0x2e, SIGSEGV, "mov to cr3" },
		     { 0x31, SIGSEGV, "int $0x80" },
		     { 0x33, SIGILL, "ud2" } };
	for (size_t i = 0; i < sizeof(priv) / sizeof(priv[0]); i++) {
		r.rip = CODE + priv[i].at;
		ret = ops->ctx_switch(ctx, &r, &ev);
		CHECK(ret == 0 && ev.kind == PLATFORM_EV_FAULT && ev.signo == priv[i].signo &&
			      r.rip == CODE + priv[i].at,
		      "%s in user mode: kind %d sig %d (want %d) rip %#llx", priv[i].what, ev.kind,
		      ev.signo, priv[i].signo, r.rip);
	}

	/* vmmcall: KVM answers a hypercall from ring 3 with -KVM_EPERM in rax, and the guest
	 * runs on (to the mov to cr3 after it), or the host makes it a #UD. */
	r.rip = CODE + 0x2b;
	r.rax = 0;
	ret = ops->ctx_switch(ctx, &r, &ev);
	CHECK(ret == 0 && ev.kind == PLATFORM_EV_FAULT &&
		      ((ev.signo == SIGSEGV && r.rip == CODE + 0x2e && r.rax == (uint64_t)-1) ||
		       (ev.signo == SIGILL && r.rip == CODE + 0x2b)),
	      "vmmcall in user mode: kind %d sig %d rip %#llx rax %#llx", ev.kind, ev.signo, r.rip,
	      r.rax);

	/* The timed loop: syscall; jmp back. */
	r.rip = CODE + 0x25;
	double best = 1e30;
	for (int round = 0; round < 3; round++) {
		double t0 = now_us();
		long i;
		for (i = 0; i < n; i++) {
			r.rax = (uint64_t)i;
			ret = ops->ctx_switch(ctx, &r, &ev);
			if (ret < 0 || ev.kind != PLATFORM_EV_SYSCALL || r.orig_rax != (uint64_t)i)
				break;
		}
		double per = (now_us() - t0) / n;
		CHECK(i == n, "%ld system calls in a loop (stopped at %ld: ret %d kind %d)", n, i,
		      ret, ev.kind);
		if (per < best)
			best = per;
	}
	printf("kvm-platform: system call round trip, best of 3 x %ld: %.2f us\n", n, best);

	/* An interrupt from another thread ends a guest spinning in user mode. */
	pthread_t th;
	r.rip = CODE + 0x29;
	pthread_create(&th, NULL, kicker, NULL);
	ret = ops->ctx_switch(ctx, &r, &ev);
	__atomic_store_n(&stop_kicking, 1, __ATOMIC_SEQ_CST);
	pthread_join(th, NULL);
	CHECK(ret == 0 && ev.kind == PLATFORM_EV_INTERRUPT && r.rip == CODE + 0x29 && r.cs == 0x33,
	      "ctx_interrupt: ret %d kind %d rip %#llx", ret, ev.kind, r.rip);
	/* A pending interrupt is reported once: drain it, then run on. */
	r.rip = CODE + 0x25;
	for (int i = 0; i < 2; i++) {
		ret = ops->ctx_switch(ctx, &r, &ev);
		if (ev.kind == PLATFORM_EV_SYSCALL)
			break;
	}
	CHECK(ret == 0 && ev.kind == PLATFORM_EV_SYSCALL, "runs on after the interrupt (kind %d)",
	      ev.kind);

	/* FP state round trip: MXCSR. */
	size_t fsz = platform_fpstate_size();
	uint8_t *fp = calloc(1, fsz);
	ret = ops->ctx_get_fpstate(ctx, fp, fsz);
	uint32_t mxcsr;
	memcpy(&mxcsr, fp + 24, 4);
	CHECK(ret == (int)fsz && mxcsr == 0x1f80, "fpstate: %d bytes, mxcsr %#x", ret, mxcsr);
	mxcsr = 0x1f80 | 0x6000;
	memcpy(fp + 24, &mxcsr, 4);
	CHECK(ops->ctx_set_fpstate(ctx, fp, fsz) == 0, "set fpstate");
	ret = ops->ctx_switch(ctx, &r, &ev);
	memset(fp, 0, fsz);
	ops->ctx_get_fpstate(ctx, fp, fsz);
	memcpy(&mxcsr, fp + 24, 4);
	CHECK(mxcsr == (0x1f80 | 0x6000), "mxcsr kept across a switch: %#x", mxcsr);

	/* The guest's CPUID is filtered: nothing whose CR4 bit is off, no virtualisation, no KVM
	 * leaves, the hypervisor bit as the host has it, XSAVE cut to what the platform keeps. */
	r.rip = CODE + CPUID_AT;
	ret = ops->ctx_switch(ctx, &r, &ev);
	CHECK(ret == 0 && ev.kind == PLATFORM_EV_SYSCALL &&
		      r.rip == CODE + CPUID_AT + sizeof(cpuid_code),
	      "cpuid and xgetbv run in user mode (kind %d sig %d rip %#llx)", ev.kind, ev.signo,
	      r.rip);
	if (ret == 0 && ev.kind == PLATFORM_EV_SYSCALL) {
		uint32_t g[11], hx, hy, hc1 = 0, hd;
		memcpy(g, base + data, sizeof(g));
		__cpuid(1, hx, hy, hc1, hd);
		uint64_t xcr0 = g[8] | (uint64_t)g[9] << 32, xsup = g[5] | (uint64_t)g[6] << 32;
		CHECK((g[0] & (1U << 31)) == (hc1 & (1U << 31)),
		      "hypervisor bit as the host's (guest %u, host %u)", g[0] >> 31, hc1 >> 31);
		CHECK(!(g[0] & (1U << 5 | 1U << 3)), "no VMX, no MONITOR (leaf 1 ecx %#x)", g[0]);
		CHECK(!(g[1] & 1), "no FSGSBASE (leaf 7 ebx %#x)", g[1]);
		CHECK(!(g[2] & (1U << 2 | 1U << 3 | 1U << 4 | 1U << 7 | 1U << 16)),
		      "no UMIP, PKU, OSPKE, CET, LA57 (leaf 7 ecx %#x)", g[2]);
		CHECK(!(g[3] & (1U << 20 | 1U << 22 | 1U << 24 | 1U << 25)),
		      "no IBT, no AMX (leaf 7 edx %#x)", g[3]);
		CHECK(g[4] != 0x4b4d564b, "no KVM signature leaf (0x40000000 ebx %#x)", g[4]);
		CHECK(!(g[10] & (1U << 2)), "no SVM (leaf 0x80000001 ecx %#x)", g[10]);
		CHECK(xsup == xcr0 && (xcr0 & 3) == 3 && !(xcr0 & (1ULL << 9 | 3ULL << 17)) &&
			      (xcr0 & ~platform_user_xfeatures()) == 0,
		      "XSAVE components = XCR0 = the host's user features without PKRU and AMX "
		      "(leaf 0xd %#llx, xcr0 %#llx, host %#llx)",
		      (unsigned long long)xsup, (unsigned long long)xcr0,
		      (unsigned long long)platform_user_xfeatures());
		CHECK(g[7] >= 576 && g[7] <= 4096,
		      "XSAVE area at most 4096 bytes (leaf 0xd ecx %u)", g[7]);
	}

	/* A large PROT_NONE reservation costs no page tables until a part of it is protected
	 * (a 1 GiB chunk, a 2 MiB chunk, PTEs for the 8 KiB tail), and keeps its offsets. */
	{
		uint64_t mid = RES + (512ULL << 20) + 3 * 4096, tail = RES + RES_LEN - 4096, fa;

		*(uint64_t *)(base + RES_OFF + (mid - RES)) = 0x1111;
		*(uint64_t *)(base + RES_OFF + (tail - RES)) = 0x2222;
		CHECK(ops->as_map(as, RES, RES_LEN, PROT_NONE, RES_OFF) == 0,
		      "map a 1 GiB + 2 MiB + 8 KiB reservation PROT_NONE");
		int64_t v = guest_load(ops, &r, mid, &fa);
		CHECK(v == -1 && fa == mid, "a load in the reservation faults (%lld at %#llx)",
		      (long long)v, (unsigned long long)fa);
		CHECK(ops->as_protect(as, mid, 4096, PROT_READ) == 0 &&
			      ops->as_protect(as, tail, 4096, PROT_READ) == 0,
		      "protect a page in the middle and the last page readable");
		v = guest_load(ops, &r, mid, &fa);
		CHECK(v == 0x1111, "the middle page maps its offset (read %#llx)", (long long)v);
		v = guest_load(ops, &r, tail, &fa);
		CHECK(v == 0x2222, "the last page maps its offset (read %#llx)", (long long)v);
		v = guest_load(ops, &r, mid + 4096, &fa);
		CHECK(v == -1 && fa == mid + 4096, "the next page is still PROT_NONE (%lld)",
		      (long long)v);
		v = guest_load(ops, &r, RES + (1ULL << 30), &fa);
		CHECK(v == -1 && fa == RES + (1ULL << 30), "the 2 MiB chunk is PROT_NONE (%lld)",
		      (long long)v);
		CHECK(ops->as_unmap(as, RES, RES_LEN) == 0, "unmap the reservation");
		v = guest_load(ops, &r, mid, &fa);
		CHECK(v == -1 && fa == mid, "a load after the unmap faults (%lld)", (long long)v);
		CHECK(ops->as_protect(as, mid, 4096, PROT_READ) == 0, "protect after the unmap");
		v = guest_load(ops, &r, mid, &fa);
		CHECK(v == -1 && fa == mid, "protect brings back nothing unmapped (%lld)",
		      (long long)v);
		CHECK(ops->as_map(as, RES, RES_LEN, PROT_NONE, RES_OFF) == 0 &&
			      ops->as_protect(as, mid, 4096, PROT_READ) == 0,
		      "map the reservation again and protect the middle page");
		v = guest_load(ops, &r, mid, &fa);
		CHECK(v == 0x1111, "the middle page reads again (%#llx)", (long long)v);
		ops->as_unmap(as, RES, RES_LEN);
	}

	/* Unmapping takes effect for the next access (the TLB is flushed). */
	r.rip = CODE + 0x7;
	ret = ops->ctx_switch(ctx, &r, &ev);
	CHECK(ret == 0 && ev.kind == PLATFORM_EV_FAULT, "write to data (kind %d)", ev.kind);
	CHECK(ops->as_unmap(as, DATA, 4096) == 0, "unmap data");
	r.rip = CODE + 0x7;
	ret = ops->ctx_switch(ctx, &r, &ev);
	CHECK(ret == 0 && ev.kind == PLATFORM_EV_FAULT && ev.signo == SIGSEGV && ev.addr == DATA &&
		      ev.code == SEGV_MAPERR && r.rip == CODE + 0x7,
	      "write after unmap faults: kind %d sig %d addr %#llx", ev.kind, ev.signo,
	      (unsigned long long)ev.addr);
	CHECK(ops->as_protect(as, CODE, 4096, PROT_NONE) == 0, "protect code none");
	r.rip = CODE + 0x25;
	ret = ops->ctx_switch(ctx, &r, &ev);
	CHECK(ret == 0 && ev.kind == PLATFORM_EV_FAULT && ev.signo == SIGSEGV &&
		      ev.addr == CODE + 0x25,
	      "fetch from PROT_NONE faults: kind %d addr %#llx", ev.kind,
	      (unsigned long long)ev.addr);
	CHECK(ops->as_protect(as, CODE, 4096, PROT_READ | PROT_EXEC) == 0, "protect code rx");
	ret = ops->ctx_switch(ctx, &r, &ev);
	CHECK(ret == 0 && ev.kind == PLATFORM_EV_SYSCALL, "runs again after mprotect (kind %d)",
	      ev.kind);

	ops->ctx_destroy(ctx);
	ops->as_destroy(as);
	platform_destroy(p);
	printf("kvm-platform: %d failures\n", failures);
	return failures ? 1 : 0;
}
