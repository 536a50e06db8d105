/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The seccomp platform against real guest code, through platform_ops only: each test writes a
 * few instructions into its own memory file, maps them into a fresh stub and checks what comes
 * back from ctx_switch. The generic tests mirror test_ptrace.c; the rest check the stub's
 * confinement and what a hostile guest can do to the thread areas it shares with the sentry.
 *
 * The test plays the sentry: it gives the platform a memory file and the mem_alloc/mem_free
 * pair (a bump allocator with a free list that counts the bytes out, so that leaks show).
 *
 * Tests named *_does_not_hang guard their switch with a watchdog: after 1 s it calls
 * ctx_interrupt (an INTERRUPT is an acceptable outcome), and after WATCHDOG_KILL_S more seconds
 * it kills the stub so that the test ends; the test then fails ("the sentry hung").
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sentry/platform/platform.h"
#include "sentry/platform/seccomp/seccomp.h"

/* Guest layout: memory-file offsets and the guest addresses they are mapped at. */
#define GUEST_MEM 0x10000UL
#define CODE_OFF 0x0000UL
#define DATA_OFF 0x1000UL
#define RO_OFF 0x2000UL
#define STACK_OFF 0x3000UL
#define EXTRA_OFF 0x4000UL
#define ALT_OFF 0x8000UL /* 32 KiB: a fake thread area in guest memory */
#define CODE_ADDR 0x400000ULL
#define DATA_ADDR 0x600000ULL
#define RO_ADDR 0x700000ULL
#define STACK_ADDR 0x800000ULL
#define EXTRA_ADDR 0xa00000ULL
#define ALT_ADDR 0xb00000ULL
#define UNMAPPED_ADDR 0x900000ULL
/* Where a second snippet goes in the code page. */
#define CODE2 0x800UL
/* The platform's own pages (command pages, thread areas) come from here on. */
#define POOL_OFF 0x100000UL
#define POOL_END (64UL << 20)
/* 4 MiB of guest memory the RSS test touches. */
#define BIG_OFF POOL_END
#define BIG_LEN (4UL << 20)
#define BIG_ADDR 0x10000000ULL
#define MEM_SIZE (BIG_OFF + BIG_LEN)
#define ARRAY_SIZE_(a) (sizeof(a) / sizeof((a)[0]))

#define WATCHDOG_INTERRUPT_S 1
#define WATCHDOG_KILL_S 30

/* A snippet of guest code, assembled into .rodata and copied into the code page. */
#define SNIPPET(name, body)                                                                      \
	__asm__(".pushsection .rodata.guest_snippets, \"a\"\n" #name "_start:\n" body "\n" #name \
		"_end:\n"                                                                        \
		".popsection\n");                                                                \
	extern const char name##_start[], name##_end[]

/* syscall; store rax to (%rbx); syscall(60) */
SNIPPET(sc_syscall, "syscall\n"
		    "mov %rax, (%rbx)\n"
		    "mov $60, %eax\n"
		    "syscall\n"
		    "ud2\n");
/* load from (%rbx) into rdi, then syscall(39) */
SNIPPET(sc_load, "mov (%rbx), %rdi\n"
		 "mov $39, %eax\n"
		 "syscall\n"
		 "ud2\n");
/* store 7 to (%rbx), then syscall(39) */
SNIPPET(sc_store, "movq $7, (%rbx)\n"
		  "mov $39, %eax\n"
		  "syscall\n"
		  "ud2\n");
SNIPPET(sc_ud2, "ud2\n");
/* rdi = *(uint64_t *)fs_base, rsi = *(uint64_t *)gs_base, then syscall(39) */
SNIPPET(sc_fs, "mov %fs:0, %rdi\n"
	       "mov %gs:0, %rsi\n"
	       "mov $39, %eax\n"
	       "syscall\n"
	       "ud2\n");
/* tell the test we run (*rbx = 1), then spin forever */
SNIPPET(sc_spin, "movq $1, (%rbx)\n"
		 "1: jmp 1b\n");
SNIPPET(sc_int80, "mov $20, %eax\n"
		  "int $0x80\n"
		  "ud2\n");
/* munmap(CODE_ADDR, 4096): if the host ran it, fetching the next instruction would fault */
SNIPPET(sc_munmap_self, "mov $11, %eax\n"
			"mov $0x400000, %edi\n"
			"mov $4096, %esi\n"
			"syscall\n"
			"mov $39, %eax\n"
			"syscall\n"
			"ud2\n");
/* rdi = low quadword of xmm0; syscall(39); xmm1 = rsi; syscall(39) */
SNIPPET(sc_xmm, "movq %xmm0, %rdi\n"
		"mov $39, %eax\n"
		"syscall\n"
		"movq %rsi, %xmm1\n"
		"mov $39, %eax\n"
		"syscall\n"
		"ud2\n");
/* syscall(9) as a guest mmap; then rdi = *(%rbx), rsi = rax; syscall(39) */
SNIPPET(sc_mmap_then_load, "mov $9, %eax\n"
			   "syscall\n"
			   "mov (%rbx), %rdi\n"
			   "mov %rax, %rsi\n"
			   "mov $39, %eax\n"
			   "syscall\n"
			   "ud2\n");
/* tell the test we run (*rcx = 1), then load (%rbx) forever */
SNIPPET(sc_load_loop, "movq $1, (%rcx)\n"
		      "1: mov (%rbx), %rax\n"
		      "jmp 1b\n");
/* the benchmark: syscall(39) forever */
SNIPPET(sc_loop, "1: mov $39, %eax\n"
		 "syscall\n"
		 "jmp 1b\n");
/* two nops, then syscall(39) (single-step) */
SNIPPET(sc_nops, "nop\n"
		 "nop\n"
		 "mov $39, %eax\n"
		 "syscall\n"
		 "ud2\n");
/* write a word to each of edx pages from rbx on, then syscall(39) */
SNIPPET(sc_touch, "1: movq $1, (%rbx)\n"
		  "add $4096, %rbx\n"
		  "dec %edx\n"
		  "jnz 1b\n"
		  "mov $39, %eax\n"
		  "syscall\n"
		  "ud2\n");
/* burn CPU (ecx iterations), then syscall(39) */
SNIPPET(sc_burn, "1: dec %ecx\n"
		 "jnz 1b\n"
		 "mov $39, %eax\n"
		 "syscall\n"
		 "ud2\n");
/* jump to r11 (into the stub's code page) with the registers the test set */
SNIPPET(sc_jump, "jmp *%r11\n");
/* *(u32 *)rbx = edx, then syscall(39) twice */
SNIPPET(sc_store32, "mov %edx, (%rbx)\n"
		    "mov $39, %eax\n"
		    "syscall\n"
		    "mov $39, %eax\n"
		    "syscall\n"
		    "ud2\n");
/* *(u64 *)rbx = rdx, then syscall(39) */
SNIPPET(sc_store64, "mov %rdx, (%rbx)\n"
		    "mov $39, %eax\n"
		    "syscall\n"
		    "ud2\n");
/* a stack_t at rbx: {rdx, 0, rsi}, then syscall(39) */
SNIPPET(sc_store_stack, "mov %rdx, (%rbx)\n"
			"movq $0, 8(%rbx)\n"
			"mov %rsi, 16(%rbx)\n"
			"mov $39, %eax\n"
			"syscall\n"
			"ud2\n");
/*
 * tell the test we run (*rcx = 1), then forever: whenever the word at rbx holds a small positive
 * number other than rdx (a thread id, not an address, an errno or 0), replace it with rdx and
 * count it in 8(%rcx)
 */
SNIPPET(sc_forge_tid, "movq $1, (%rcx)\n"
		      "1: mov (%rbx), %rax\n"
		      "test %rax, %rax\n"
		      "jle 1b\n"
		      "cmp $0x400000, %rax\n"
		      "jae 1b\n"
		      "cmp %rdx, %rax\n"
		      "je 1b\n"
		      "mov %rdx, (%rbx)\n"
		      "incq 8(%rcx)\n"
		      "jmp 1b\n");
/* tell the test we run (*rcx = 1), then store rdx at (%rbx) and 8(%rbx) forever */
SNIPPET(sc_store_loop, "movq $1, (%rcx)\n"
		       "1: mov %rdx, (%rbx)\n"
		       "mov %rdx, 8(%rbx)\n"
		       "jmp 1b\n");

static long pid_status_number(pid_t pid, const char *key);

static int memfd = -1;
static uint8_t *mem;
static struct platform *plat;
static struct platform_as *as;
static struct platform_ctx *ctx;
static arch_regs_t regs;
static const struct sc_code *code;

/* ---- the memory pool the platform takes its pages from ---------------------------------- */

struct pool_block {
	uint64_t off, len;
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t pool_next = POOL_OFF;
static uint64_t pool_out; /* bytes handed out and not given back */
static struct pool_block pool_free_list[8192];
static size_t pool_nfree;
static int64_t pool_last_area = -1; /* offset of the last SC_AREA_SIZE allocation */
static int pool_bad_frees;

static int64_t pool_alloc(void *arg, uint64_t len)
{
	int64_t off = -ENOMEM;

	cr_assert_eq(arg, &pool_next);
	if (!len || len % 4096)
		return -EINVAL;
	pthread_mutex_lock(&pool_lock);
	for (size_t i = 0; i < pool_nfree; i++) {
		if (pool_free_list[i].len == len) {
			off = (int64_t)pool_free_list[i].off;
			pool_free_list[i] = pool_free_list[--pool_nfree];
			memset(mem + off, 0, len);
			break;
		}
	}
	if (off < 0 && pool_next + len <= POOL_END) {
		off = (int64_t)pool_next;
		pool_next += len;
	}
	if (off >= 0) {
		pool_out += len;
		if (len == SC_AREA_SIZE)
			pool_last_area = off;
	}
	pthread_mutex_unlock(&pool_lock);
	return off;
}

static void pool_free(void *arg, uint64_t off, uint64_t len)
{
	(void)arg;
	pthread_mutex_lock(&pool_lock);
	if (off < POOL_OFF || off + len > pool_next || len > pool_out ||
	    pool_nfree == ARRAY_SIZE_(pool_free_list))
		pool_bad_frees++;
	else {
		pool_free_list[pool_nfree++] = (struct pool_block){ off, len };
		pool_out -= len;
	}
	pthread_mutex_unlock(&pool_lock);
}

static uint64_t pool_bytes_out(void)
{
	uint64_t n;

	pthread_mutex_lock(&pool_lock);
	n = pool_out;
	pthread_mutex_unlock(&pool_lock);
	return n;
}

/* ---- fixture ----------------------------------------------------------------------------- */

static const struct platform_ops *ops(void)
{
	return plat->ops;
}

static void load_code_at(unsigned long at, const char *start, const char *end)
{
	memcpy(mem + CODE_OFF + at, start, (size_t)(end - start));
}

static void load_code(const char *start, const char *end)
{
	memset(mem + CODE_OFF, 0xcc, 4096); /* int3 everywhere else */
	load_code_at(0, start, end);
	memset(&regs, 0, sizeof(regs));
	regs.rip = CODE_ADDR;
	regs.rsp = STACK_ADDR + 4096;
	regs.cs = 0x33;
	regs.ss = 0x2b;
	regs.eflags = 0x202;
}

#define LOAD(name) load_code(name##_start, name##_end)

static void map_guest(struct platform_as *a)
{
	cr_assert_eq(ops()->as_map(a, CODE_ADDR, 4096, PROT_READ | PROT_EXEC, CODE_OFF), 0);
	cr_assert_eq(ops()->as_map(a, DATA_ADDR, 4096, PROT_READ | PROT_WRITE, DATA_OFF), 0);
	cr_assert_eq(ops()->as_map(a, RO_ADDR, 4096, PROT_READ, RO_OFF), 0);
	cr_assert_eq(ops()->as_map(a, STACK_ADDR, 4096, PROT_READ | PROT_WRITE, STACK_OFF), 0);
}

/* The memory file and the platform, without a space. */
static void setup_platform(void)
{
	int err = 0;

	cr_assert(seccomp_platform_available(), "this host cannot run the seccomp platform");
	memfd = memfd_create("husk-test-mem", MFD_CLOEXEC);
	cr_assert_geq(memfd, 0);
	cr_assert_eq(ftruncate(memfd, (off_t)MEM_SIZE), 0);
	mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	cr_assert_neq(mem, MAP_FAILED);
	cr_assert_eq(platform_create("seccomp", memfd, &plat), 0);
	cr_assert_str_eq(plat->ops->name, "seccomp");
	plat->mem_base = mem;
	plat->mem_alloc = pool_alloc;
	plat->mem_free = pool_free;
	plat->mem_arg = &pool_next;
	code = sc_code_get(&err);
	cr_assert_not_null(code, "sc_code_get: %d", err);
}

static void setup_space(void)
{
	cr_assert_eq(ops()->as_create(plat, &as), 0);
	/* Mappings before the first ctx exists (the loader's case). */
	map_guest(as);
	cr_assert_eq(ops()->ctx_create(as, &ctx), 0);
}

static void setup(void)
{
	setup_platform();
	setup_space();
}

static void teardown(void)
{
	if (as)
		ops()->as_destroy(as);
	as = NULL;
	ctx = NULL;
	platform_destroy(plat);
	plat = NULL;
	if (mem)
		munmap(mem, MEM_SIZE);
	mem = NULL;
	if (memfd >= 0)
		close(memfd);
	memfd = -1;
}

static struct platform_event run_in(struct platform_ctx *c, arch_regs_t *r)
{
	struct platform_event ev;

	cr_assert_eq(ops()->ctx_switch(c, r, &ev), 0);
	return ev;
}

static struct platform_event run(void)
{
	return run_in(ctx, &regs);
}

static uint64_t data_word(unsigned long off)
{
	return __atomic_load_n((uint64_t *)(mem + off), __ATOMIC_ACQUIRE);
}

static pid_t stub_pid(void)
{
	pid_t pid = seccomp_as_stub_pid(as);

	cr_assert_gt(pid, 0);
	return pid;
}

/* The stub address of the area whose memory-file offset is area_off (from its last stop). */
static uint64_t area_stub_addr(int64_t area_off)
{
	uint64_t uc = *(uint64_t *)(mem + area_off + SC_A_UC);

	cr_assert(uc >= code->page + SC_AREAS_OFF, "no frame in the area yet (uc %#llx)",
		  (unsigned long long)uc);
	return uc & ~(uint64_t)(SC_AREA_SIZE - 1);
}

/*
 * Timeouts are per suite only: criterion 2.4.1's runner leaks a timer (LeakSanitizer reports it)
 * when a test overrides its suite's timeout while others run in parallel.
 */
TestSuite(platform_seccomp, .init = setup, .fini = teardown, .timeout = 120);
TestSuite(platform_seccomp_create, .timeout = 120);

/* ---- the generic behaviour (as test_ptrace.c) -------------------------------------------- */

Test(platform_seccomp, syscall_stops_with_number_and_arguments)
{
	struct platform_event ev;

	LOAD(sc_syscall);
	regs.rax = 39;
	regs.rdi = 0x1111;
	regs.rsi = 0x2222;
	regs.rdx = 0x3333;
	regs.r10 = 0x4444;
	regs.r8 = 0x5555;
	regs.r9 = 0x6666;
	regs.rbx = DATA_ADDR;
	regs.r12 = 0x7777;
	regs.r15 = 0x8888;
	regs.rbp = 0x9999;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(regs.orig_rax, 39);
	cr_assert_eq(regs.rdi, 0x1111);
	cr_assert_eq(regs.rsi, 0x2222);
	cr_assert_eq(regs.rdx, 0x3333);
	cr_assert_eq(regs.r10, 0x4444);
	cr_assert_eq(regs.r8, 0x5555);
	cr_assert_eq(regs.r9, 0x6666);
	cr_assert_eq(regs.r12, 0x7777);
	cr_assert_eq(regs.r15, 0x8888);
	cr_assert_eq(regs.rbp, 0x9999);
	cr_assert_eq(regs.rbx, DATA_ADDR);
	cr_assert_eq(regs.rsp, STACK_ADDR + 4096);
	cr_assert_eq(regs.rip, CODE_ADDR + 2, "rip %#llx is not after the syscall", regs.rip);
	cr_assert_eq(regs.cs, 0x33);
	cr_assert_eq(regs.ss, 0x2b);
}

Test(platform_seccomp, guest_sees_the_rax_the_sentry_sets)
{
	struct platform_event ev;

	LOAD(sc_syscall);
	regs.rax = 39;
	regs.rbx = DATA_ADDR;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	regs.rax = 0x123456789abcULL;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(regs.orig_rax, 60);
	cr_assert_eq(data_word(DATA_OFF), 0x123456789abcULL);
}

Test(platform_seccomp, guest_syscall_is_never_run_by_the_host)
{
	struct platform_event ev;

	LOAD(sc_munmap_self);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(regs.orig_rax, 11);
	regs.rax = 0;
	ev = run();
	/* Had munmap run, fetching the next instruction would have faulted. */
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL, "kind %d signo %d", ev.kind, ev.signo);
	cr_assert_eq(regs.orig_rax, 39);
}

Test(platform_seccomp, unmapped_access_faults_with_its_address)
{
	struct platform_event ev;

	LOAD(sc_load);
	regs.rbx = UNMAPPED_ADDR + 8;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_FAULT);
	cr_assert_eq(ev.signo, SIGSEGV);
	cr_assert_eq(ev.code, SEGV_MAPERR);
	cr_assert_eq(ev.addr, UNMAPPED_ADDR + 8);
	cr_assert_eq(ev.trapno, 14);
	cr_assert_eq(regs.rip, CODE_ADDR, "rip %#llx is not the faulting instruction", regs.rip);
}

Test(platform_seccomp, fault_is_suppressed_and_retried_after_the_sentry_fixes_it)
{
	struct platform_event ev;

	LOAD(sc_load);
	regs.rbx = EXTRA_ADDR;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_FAULT);
	cr_assert_eq(ev.signo, SIGSEGV);
	*(uint64_t *)(mem + EXTRA_OFF) = 0xabcdef;
	cr_assert_eq(ops()->as_map(as, EXTRA_ADDR, 4096, PROT_READ, EXTRA_OFF), 0);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(regs.rdi, 0xabcdef);
}

Test(platform_seccomp, map_at_a_syscall_stop_is_there_when_the_guest_resumes)
{
	struct platform_event ev;

	*(uint64_t *)(mem + EXTRA_OFF) = 0x5eed;
	LOAD(sc_mmap_then_load);
	regs.rbx = EXTRA_ADDR;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(regs.orig_rax, 9);
	cr_assert_eq(ops()->as_map(as, EXTRA_ADDR, 4096, PROT_READ, EXTRA_OFF), 0);
	regs.rax = EXTRA_ADDR;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL, "kind %d signo %d", ev.kind, ev.signo);
	cr_assert_eq(regs.orig_rax, 39);
	cr_assert_eq(regs.rdi, 0x5eed);
	cr_assert_eq(regs.rsi, EXTRA_ADDR);
}

Test(platform_seccomp, ud2_gives_sigill)
{
	struct platform_event ev;

	LOAD(sc_ud2);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_FAULT);
	cr_assert_eq(ev.signo, SIGILL);
	cr_assert_eq(ev.code, ILL_ILLOPN);
	cr_assert_eq(ev.addr, CODE_ADDR);
	cr_assert_eq(ev.trapno, 6);
	cr_assert_eq(regs.rip, CODE_ADDR);
}

Test(platform_seccomp, int80_gives_sigsegv_at_the_instruction)
{
	struct platform_event ev;

	LOAD(sc_int80);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_FAULT);
	cr_assert_eq(ev.signo, SIGSEGV);
	cr_assert_eq(ev.code, SI_KERNEL);
	cr_assert_eq(regs.rip, CODE_ADDR + 5, "rip %#llx", regs.rip);
	cr_assert_eq(regs.rax, 20);
	/* Resumed past it, the guest goes on as usual. */
	regs.rip += 2;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_FAULT);
	cr_assert_eq(ev.signo, SIGILL);
}

Test(platform_seccomp, write_to_read_only_page_faults)
{
	struct platform_event ev;

	LOAD(sc_store);
	regs.rbx = RO_ADDR;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_FAULT);
	cr_assert_eq(ev.signo, SIGSEGV);
	cr_assert_eq(ev.code, SEGV_ACCERR);
	cr_assert_eq(ev.addr, RO_ADDR);
	cr_assert_eq(data_word(RO_OFF), 0);
}

Test(platform_seccomp, protect_changes_what_the_guest_may_do)
{
	struct platform_event ev;

	LOAD(sc_store);
	regs.rbx = RO_ADDR;
	cr_assert_eq(ops()->as_protect(as, RO_ADDR, 4096, PROT_READ | PROT_WRITE), 0);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(data_word(RO_OFF), 7);

	LOAD(sc_store);
	regs.rbx = DATA_ADDR;
	cr_assert_eq(ops()->as_protect(as, DATA_ADDR, 4096, PROT_READ), 0);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_FAULT);
	cr_assert_eq(ev.code, SEGV_ACCERR);
	cr_assert_eq(ev.addr, DATA_ADDR);
}

Test(platform_seccomp, protect_of_an_unmapped_range_fails_with_enomem)
{
	cr_assert_eq(ops()->as_protect(as, EXTRA_ADDR, 4096, PROT_READ), -ENOMEM);
	LOAD(sc_syscall);
	regs.rax = 39;
	regs.rbx = DATA_ADDR;
	cr_assert_eq(run().kind, PLATFORM_EV_SYSCALL);
}

Test(platform_seccomp, unmap_then_access_faults)
{
	struct platform_event ev;

	*(uint64_t *)(mem + DATA_OFF) = 42;
	LOAD(sc_load);
	regs.rbx = DATA_ADDR;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(regs.rdi, 42);

	cr_assert_eq(ops()->as_unmap(as, DATA_ADDR, 4096), 0);
	LOAD(sc_load);
	regs.rbx = DATA_ADDR;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_FAULT);
	cr_assert_eq(ev.signo, SIGSEGV);
	cr_assert_eq(ev.code, SEGV_MAPERR);
	cr_assert_eq(ev.addr, DATA_ADDR);
}

Test(platform_seccomp, fs_and_gs_base_are_visible_to_the_guest)
{
	struct platform_event ev;

	*(uint64_t *)(mem + DATA_OFF + 0x40) = 0xfeedfacecafeULL;
	*(uint64_t *)(mem + DATA_OFF + 0x80) = 0x600dbeefULL;
	LOAD(sc_fs);
	regs.fs_base = DATA_ADDR + 0x40;
	regs.gs_base = DATA_ADDR + 0x80;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(regs.rdi, 0xfeedfacecafeULL);
	cr_assert_eq(regs.rsi, 0x600dbeefULL);
	cr_assert_eq(regs.fs_base, DATA_ADDR + 0x40);
	cr_assert_eq(regs.gs_base, DATA_ADDR + 0x80);
}

Test(platform_seccomp, zero_selectors_mean_the_64_bit_defaults)
{
	struct platform_event ev;

	LOAD(sc_syscall);
	regs.cs = 0;
	regs.ss = 0;
	regs.rax = 39;
	regs.rbx = DATA_ADDR;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(regs.cs, 0x33);
	cr_assert_eq(regs.ss, 0x2b);
}

Test(platform_seccomp, fpstate_round_trips_through_the_guest)
{
	size_t size = platform_fpstate_size();
	uint8_t *buf = calloc(1, size + 64);
	struct platform_event ev;
	uint64_t v;
	int n;

	cr_assert_not_null(buf);
	cr_assert_eq(ops()->ctx_get_fpstate(ctx, buf, size - 1), -ENOSPC);
	n = ops()->ctx_get_fpstate(ctx, buf, size + 64);
	cr_assert_eq(n, (int)size, "kernel xstate is %d bytes, CPUID says %zu", n, size);
	v = 0x0123456789abcdefULL;
	memcpy(buf + 160, &v, 8); /* xmm0 in the FXSAVE area */
	buf[512] |= 2; /* XSTATE_BV: SSE state present */
	cr_assert_eq(ops()->ctx_set_fpstate(ctx, buf, size), 0);
	cr_assert_eq(ops()->ctx_set_fpstate(ctx, buf, size - 8), -EINVAL);

	LOAD(sc_xmm);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(regs.rdi, v);
	regs.rsi = 0xfedcba9876543210ULL;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	memset(buf, 0, size);
	cr_assert_eq(ops()->ctx_get_fpstate(ctx, buf, size), (int)size);
	memcpy(&v, buf + 176, 8); /* xmm1 */
	cr_assert_eq(v, 0xfedcba9876543210ULL);
	free(buf);
}

Test(platform_seccomp, a_malformed_fpstate_is_refused)
{
	size_t size = platform_fpstate_size();
	uint8_t *buf = calloc(1, size);
	uint32_t bad_mxcsr = 0xffff0000U;

	cr_assert_not_null(buf);
	cr_assert_eq(ops()->ctx_get_fpstate(ctx, buf, size), (int)size);
	memcpy(buf + 24, &bad_mxcsr, 4);
	cr_assert_eq(ops()->ctx_set_fpstate(ctx, buf, size), -EINVAL);
	cr_assert_eq(ops()->ctx_get_fpstate(ctx, buf, size), (int)size);
	buf[530] = 1; /* a reserved byte of the XSAVE header */
	cr_assert_eq(ops()->ctx_set_fpstate(ctx, buf, size), -EINVAL);
	free(buf);
	LOAD(sc_syscall);
	regs.rax = 39;
	regs.rbx = DATA_ADDR;
	cr_assert_eq(run().kind, PLATFORM_EV_SYSCALL);
}

Test(platform_seccomp, singlestep_runs_one_instruction)
{
	struct platform_event ev;

	cr_assert_not_null(ops()->ctx_singlestep);
	LOAD(sc_nops);
	cr_assert_eq(ops()->ctx_singlestep(ctx, &regs, &ev), 0);
	cr_assert_eq(ev.kind, PLATFORM_EV_FAULT, "kind %d", ev.kind);
	cr_assert_eq(ev.signo, SIGTRAP);
	cr_assert_eq(ev.code, TRAP_TRACE);
	cr_assert_eq(regs.rip, CODE_ADDR + 1, "rip %#llx", regs.rip);
	cr_assert_eq(regs.eflags & 0x100, 0, "the trap flag shows in eflags %#llx", regs.eflags);
	/* A plain switch afterwards does not trap. */
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL, "kind %d signo %d", ev.kind, ev.signo);
	cr_assert_eq(regs.orig_rax, 39);
}

Test(platform_seccomp, cpu_time_advances_under_a_busy_guest)
{
	uint64_t before, after;

	cr_assert_not_null(ops()->ctx_cpu_ns);
	LOAD(sc_burn);
	regs.rcx = 200000000;
	before = ops()->ctx_cpu_ns(ctx);
	cr_assert_eq(run().kind, PLATFORM_EV_SYSCALL);
	after = ops()->ctx_cpu_ns(ctx);
	cr_assert_gt(after, before);
	cr_assert_geq(ops()->ctx_cpu_ns(ctx), after);
}

/* The host's peak RSS of the stub, after the guest touched 4 MiB (the host counts it lazily). */
Test(platform_seccomp, peak_rss_counts_the_memory_the_guest_touched)
{
	long rss;

	cr_assert_not_null(ops()->ctx_peak_rss_kb);
	cr_assert_eq(ops()->as_map(as, BIG_ADDR, BIG_LEN, PROT_READ | PROT_WRITE, BIG_OFF), 0);
	LOAD(sc_touch);
	regs.rbx = BIG_ADDR;
	regs.rdx = BIG_LEN / 4096;
	cr_assert_eq(run().kind, PLATFORM_EV_SYSCALL);
	rss = ops()->ctx_peak_rss_kb(ctx);
	cr_assert_geq(rss, (long)(BIG_LEN / 1024 / 2), "peak rss %ld kB (the stub's VmHWM: %ld kB)",
		      rss, pid_status_number(stub_pid(), "VmHWM:"));
}

/* The first line of /proc/<pid>/<file> that starts with key, or "" */
static void proc_line(const char *dir, const char *file, const char *key, char *out, size_t len)
{
	char path[128], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "re");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	out[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, strlen(key)) == 0) {
			snprintf(out, len, "%s", line);
			break;
		}
	}
	fclose(f);
}

/* The number after `key` in <dir>/status, or -1. */
static long status_number(const char *dir, const char *key)
{
	char line[512];

	proc_line(dir, "status", key, line, sizeof(line));
	return line[0] ? strtol(line + strlen(key), NULL, 10) : -1;
}

static long pid_status_number(pid_t pid, const char *key)
{
	char dir[64];

	snprintf(dir, sizeof(dir), "/proc/%d", pid);
	return status_number(dir, key);
}

static int count_fds(void)
{
	struct dirent *d;
	int n = 0;
	DIR *dir = opendir("/proc/self/fd");

	cr_assert_not_null(dir);
	while ((d = readdir(dir)))
		n += d->d_name[0] != '.';
	closedir(dir);
	return n - 1; /* the directory's own FD */
}

/* This process's children (pids into out, up to max); returns how many. */
static int list_children(pid_t *out, int max)
{
	int n = 0;
	DIR *dir = opendir("/proc/self/task");
	struct dirent *d;
	char path[300], buf[4096];

	cr_assert_not_null(dir);
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/children", d->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		size_t len = fread(buf, 1, sizeof(buf) - 1, f);
		buf[len] = 0;
		fclose(f);
		for (char *p = strtok(buf, " \n"); p; p = strtok(NULL, " \n")) {
			if (n < max)
				out[n] = (pid_t)atoi(p);
			n++;
		}
	}
	closedir(dir);
	return n;
}

static int count_children(void)
{
	return list_children(NULL, 0);
}

/* Threads of pid; the first one that is not pid itself goes to *other (if not NULL). */
static int threads_of(pid_t pid, pid_t *other)
{
	char path[64];
	int n = 0;
	struct dirent *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	DIR *dir = opendir(path);
	if (!dir)
		return 0;
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		n++;
		if (other && atoi(d->d_name) != pid)
			*other = (pid_t)atoi(d->d_name);
	}
	closedir(dir);
	return n;
}

/* The zygote: the child of this process that is no space's stub. */
static pid_t zygote_pid(void)
{
	pid_t kids[16], z = -1;
	int n = list_children(kids, 16);

	for (int i = 0; i < n && i < 16; i++) {
		if (kids[i] != stub_pid()) {
			cr_assert_eq(z, -1, "more than one child besides the stub");
			z = kids[i];
		}
	}
	cr_assert_gt(z, 0, "no zygote among %d children", n);
	return z;
}

/* ---- the stub's confinement ---------------------------------------------------------------- */

Test(platform_seccomp, stub_holds_only_the_memory_file_and_its_socket)
{
	pid_t pid = stub_pid();
	char path[64], target[256], want[256];
	struct dirent *d;
	int count = 0;
	DIR *dir;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	dir = opendir(path);
	cr_assert_not_null(dir);
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		count++;
		cr_assert(atoi(d->d_name) == SC_STUB_MEMFD || atoi(d->d_name) == SC_STUB_SOCK,
			  "stub holds fd %s", d->d_name);
	}
	closedir(dir);
	cr_assert_eq(count, 2);

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, SC_STUB_MEMFD);
	n = readlink(path, target, sizeof(target) - 1);
	cr_assert_gt(n, 0);
	target[n] = 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	n = readlink(path, want, sizeof(want) - 1);
	cr_assert_gt(n, 0);
	want[n] = 0;
	cr_assert_str_eq(target, want);
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, SC_STUB_SOCK);
	n = readlink(path, target, sizeof(target) - 1);
	cr_assert_gt(n, 0);
	target[n] = 0;
	cr_assert_eq(strncmp(target, "socket:[", 8), 0, "fd 4 is %s", target);
}

Test(platform_seccomp, zygote_holds_only_the_memory_file_and_its_socket)
{
	pid_t z = zygote_pid();
	char path[64];
	struct dirent *d;
	int count = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/fd", z);
	dir = opendir(path);
	cr_assert_not_null(dir);
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		count++;
		cr_assert(atoi(d->d_name) == SC_STUB_MEMFD || atoi(d->d_name) == SC_STUB_SOCK,
			  "zygote holds fd %s", d->d_name);
	}
	closedir(dir);
	cr_assert_eq(count, 2);
}

/* Checks that every mapping of pid is one the stub is allowed; counts the kinds. */
static void check_stub_maps(pid_t pid, int *areas_seen, int *guest_seen)
{
	uint64_t c = code->page;
	int code_seen = 0, scratch_seen = 0, cmd_seen = 0;
	char path[64], line[512];
	FILE *f;

	*areas_seen = *guest_seen = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;
		char perms[8];

		cr_assert_eq(sscanf(line, "%llx-%llx %7s", &lo, &hi, perms), 3);
		if (strstr(line, "[vsyscall]"))
			continue;
		if (lo == c && hi == c + 4096) {
			cr_assert_str_eq(perms, "r-xp", "%s", line);
			code_seen++;
		} else if (lo == c + SC_SCRATCH_OFF && hi == c + 2 * 4096) {
			cr_assert_str_eq(perms, "rw-p", "%s", line);
			scratch_seen++;
		} else if (lo == c + SC_CMD_OFF && hi == c + SC_CMD_OFF + 4096) {
			cr_assert_str_eq(perms, "r--s", "%s", line);
			cr_assert(strstr(line, "/memfd:husk-test-mem"), "%s", line);
			cmd_seen++;
		} else if (lo >= c + SC_AREAS_OFF &&
			   hi <= c + SC_AREAS_OFF + (uint64_t)SC_MAX_THREADS * SC_AREA_SIZE) {
			cr_assert_eq((lo - c - SC_AREAS_OFF) % SC_AREA_SIZE, 0, "%s", line);
			cr_assert_eq((hi - lo) % SC_AREA_SIZE, 0, "%s", line);
			cr_assert_str_eq(perms, "rw-s", "%s", line);
			cr_assert(strstr(line, "/memfd:husk-test-mem"), "%s", line);
			*areas_seen += (int)((hi - lo) / SC_AREA_SIZE);
		} else {
			cr_assert(strstr(line, "/memfd:husk-test-mem"), "unexpected mapping: %s",
				  line);
			cr_assert(lo >= PLATFORM_GUEST_MIN && hi <= PLATFORM_GUEST_MAX, "%s", line);
			cr_assert_eq(perms[3], 's', "%s", line);
			(*guest_seen)++;
		}
	}
	fclose(f);
	cr_assert_eq(code_seen, 1);
	cr_assert_eq(scratch_seen, 1);
	cr_assert_eq(cmd_seen, 1);
}

Test(platform_seccomp, stub_maps_only_its_pages_and_guest_memory)
{
	struct platform_ctx *ctx2;
	int areas, guest;

	cr_assert_geq(code->page, PLATFORM_GUEST_MAX);
	cr_assert_lt(code->page + SC_AREAS_OFF + (uint64_t)SC_MAX_THREADS * SC_AREA_SIZE,
		     0x800000000000ULL);
	check_stub_maps(stub_pid(), &areas, &guest);
	cr_assert_eq(areas, 1);
	cr_assert_eq(guest, 4);
	cr_assert_eq(ops()->ctx_create(as, &ctx2), 0);
	check_stub_maps(stub_pid(), &areas, &guest);
	cr_assert_eq(areas, 2);
	ops()->ctx_destroy(ctx2);
	check_stub_maps(stub_pid(), &areas, &guest);
	cr_assert_eq(areas, 1, "the ended thread's area is still mapped");
}

Test(platform_seccomp, zygote_maps_only_its_code_and_scratch_pages)
{
	char path[64], line[512];
	pid_t z = zygote_pid();
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", z);
	f = fopen(path, "re");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;

		cr_assert_eq(sscanf(line, "%llx-%llx", &lo, &hi), 2);
		if (strstr(line, "[vsyscall]"))
			continue;
		cr_assert(lo >= code->page && hi <= code->page + 2 * 4096, "zygote maps %s", line);
		n++;
	}
	fclose(f);
	cr_assert_eq(n, 2);
}

static bool maps_contain(pid_t pid, uint64_t addr)
{
	char path[64], line[512];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;

		if (sscanf(line, "%llx-%llx", &lo, &hi) == 2 && addr >= lo && addr < hi)
			found = true;
	}
	fclose(f);
	return found;
}

/* Sentry memory next to the stub's pages and near the top must not reach the zygote or stubs. */
Test(platform_seccomp_create, zygote_unmaps_sentry_memory_around_its_pages)
{
	int err = 0;
	const struct sc_code *c = sc_code_get(&err);
	uint64_t spots[4];

	cr_assert_not_null(c);
	spots[0] = c->page - 4096;
	spots[1] = c->page + 2 * 4096;
	spots[2] = c->page + SC_AREAS_OFF;
	spots[3] = 0x7ffffff00000ULL;
	for (size_t i = 0; i < ARRAY_SIZE_(spots); i++) {
		void *m = mmap((void *)spots[i], 4096, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

		if (m == MAP_FAILED) /* already in use by this process: just as good */
			cr_assert_eq(errno, EEXIST);
		cr_assert(maps_contain(getpid(), spots[i]));
	}
	/* The zygote starts with the first space, after the mappings above. */
	setup();
	for (size_t i = 0; i < ARRAY_SIZE_(spots); i++) {
		cr_assert_not(maps_contain(zygote_pid(), spots[i]), "zygote maps %#llx",
			      (unsigned long long)spots[i]);
		cr_assert_not(maps_contain(stub_pid(), spots[i]) &&
				      spots[i] != c->page + SC_AREAS_OFF,
			      "stub maps %#llx", (unsigned long long)spots[i]);
	}
	teardown();
}

Test(platform_seccomp, zygote_is_husk_stub_with_its_own_filter_and_no_new_privs)
{
	pid_t z = zygote_pid(), pid = stub_pid(), guest_tid = -1;
	char dir[64], line[512];

	snprintf(dir, sizeof(dir), "/proc/%d", z);
	proc_line(dir, "status", "Seccomp:", line, sizeof(line));
	cr_assert_str_eq(line, "Seccomp:\t2\n");
	proc_line(dir, "status", "NoNewPrivs:", line, sizeof(line));
	cr_assert_str_eq(line, "NoNewPrivs:\t1\n");
	proc_line(dir, "comm", "", line, sizeof(line));
	cr_assert_str_eq(line, "husk-stub\n");
	cr_assert_eq(status_number(dir, "Seccomp_filters:"), 1);
	cr_assert_eq(status_number(dir, "TracerPid:"), 0);
	cr_assert_eq(status_number(dir, "PPid:"), getpid());

	/* A stub: forked by the zygote, CLONE_PARENT (this process reaps it), same filter. */
	snprintf(dir, sizeof(dir), "/proc/%d", pid);
	proc_line(dir, "comm", "", line, sizeof(line));
	cr_assert_str_eq(line, "husk-stub\n");
	cr_assert_eq(status_number(dir, "Seccomp:"), 2);
	cr_assert_eq(status_number(dir, "NoNewPrivs:"), 1);
	cr_assert_eq(status_number(dir, "Seccomp_filters:"), 1);
	cr_assert_eq(status_number(dir, "PPid:"), getpid());
	cr_assert_eq(status_number(dir, "TracerPid:"), 0);
	/* Its guest thread stacked the guest filter. */
	cr_assert_eq(threads_of(pid, &guest_tid), 2);
	snprintf(dir, sizeof(dir), "/proc/%d/task/%d", pid, guest_tid);
	cr_assert_eq(status_number(dir, "Seccomp_filters:"), 2);
	cr_assert_eq(status_number(dir, "Seccomp:"), 2);
	/* The controller blocks every signal (the guest thread, stopped in its handler, too). */
	snprintf(dir, sizeof(dir), "/proc/%d/task/%d", pid, pid);
	proc_line(dir, "status", "SigBlk:", line, sizeof(line));
	cr_assert_str_eq(line, "SigBlk:\tfffffffffffbfeff\n", "controller %s", line);
}

/* A sentry installs its own filter after seccomp_platform_prepare: stubs must not carry it. */
Test(platform_seccomp_create, stubs_do_not_inherit_a_filter_installed_after_prepare)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_acct, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = ARRAY_SIZE_(filter), .filter = filter };
	pid_t guest_tid = -1;
	char dir[64];

	setup_platform();
	cr_assert_eq(seccomp_platform_prepare(plat), 0);
	cr_assert_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	cr_assert_eq(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog), 0);
	setup_space();
	LOAD(sc_syscall);
	regs.rax = 39;
	regs.rbx = DATA_ADDR;
	cr_assert_eq(run().kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(pid_status_number(getpid(), "Seccomp_filters:"), 1);
	cr_assert_eq(pid_status_number(zygote_pid(), "Seccomp_filters:"), 1);
	cr_assert_eq(pid_status_number(stub_pid(), "Seccomp_filters:"), 1);
	cr_assert_eq(threads_of(stub_pid(), &guest_tid), 2);
	snprintf(dir, sizeof(dir), "/proc/%d/task/%d", stub_pid(), guest_tid);
	cr_assert_eq(status_number(dir, "Seccomp_filters:"), 2);
	teardown();
}

Test(platform_seccomp_create, as_create_without_mem_alloc_is_enosys)
{
	struct platform *p;
	struct platform_as *a = NULL;
	int fd = memfd_create("x", MFD_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(platform_create("seccomp", fd, &p), 0);
	cr_assert_eq(p->ops->as_create(p, &a), -ENOSYS);
	platform_destroy(p);
	close(fd);
	cr_assert_eq(count_children(), 0);
}

Test(platform_seccomp_create, closed_memfd_is_ebadf)
{
	struct platform *p = NULL;

	cr_assert_eq(platform_create("seccomp", 987, &p), -EBADF);
	cr_assert_null(p);
}

Test(platform_seccomp, mappings_outside_the_guest_range_are_refused)
{
	uint64_t c = code->page;

	cr_assert_eq(ops()->as_map(as, c, 4096, PROT_READ, 0), -EINVAL);
	cr_assert_eq(ops()->as_map(as, c + SC_AREAS_OFF, 4096, PROT_READ | PROT_WRITE, 0), -EINVAL);
	cr_assert_eq(ops()->as_map(as, PLATFORM_GUEST_MAX - 4096, 8192, PROT_READ, 0), -EINVAL);
	cr_assert_eq(ops()->as_map(as, 0, 4096, PROT_READ, 0), -EINVAL);
	cr_assert_eq(ops()->as_map(as, EXTRA_ADDR + 1, 4096, PROT_READ, 0), -EINVAL);
	cr_assert_eq(ops()->as_map(as, EXTRA_ADDR, 4096, PROT_READ, 1), -EINVAL);
	cr_assert_eq(ops()->as_map(as, EXTRA_ADDR, 0, PROT_READ, 0), -EINVAL);
	cr_assert_eq(ops()->as_map(as, EXTRA_ADDR, 4096, PROT_READ | PROT_GROWSDOWN, 0), -EINVAL);
	cr_assert_eq(ops()->as_unmap(as, c, 4096), -EINVAL);
	cr_assert_eq(ops()->as_unmap(as, c + SC_AREAS_OFF, SC_AREA_SIZE), -EINVAL);
	cr_assert_eq(ops()->as_protect(as, c, 4096, PROT_READ | PROT_WRITE), -EINVAL);
	cr_assert_eq(ops()->as_map(as, UINT64_MAX & ~4095ULL, 8192, PROT_READ, 0), -EINVAL);
	/* Still alive and well. */
	LOAD(sc_syscall);
	regs.rax = 39;
	regs.rbx = DATA_ADDR;
	cr_assert_eq(run().kind, PLATFORM_EV_SYSCALL);
}

/* ---- threads ------------------------------------------------------------------------------- */

/* Runs sc_syscall in ctx c with rax = nr, rbx = where to store the result; checks the stop. */
static void run_syscall_in(struct platform_ctx *c, uint64_t nr, uint64_t store_at)
{
	struct platform_event ev;
	arch_regs_t r;

	memset(&r, 0, sizeof(r));
	r.rip = CODE_ADDR;
	r.rsp = STACK_ADDR + 2048;
	r.eflags = 0x202;
	r.rax = nr;
	r.rbx = store_at;
	cr_assert_eq(ops()->ctx_switch(c, &r, &ev), 0);
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL, "kind %d signo %d", ev.kind, ev.signo);
	cr_assert_eq(r.orig_rax, nr);
	r.rax = nr * 1000;
	cr_assert_eq(ops()->ctx_switch(c, &r, &ev), 0);
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(r.orig_rax, 60);
}

Test(platform_seccomp, a_second_ctx_is_a_new_stub_thread_sharing_memory)
{
	struct platform_ctx *ctx2;

	LOAD(sc_syscall);
	cr_assert_eq(ops()->ctx_create(as, &ctx2), 0);
	cr_assert_neq(ctx2, ctx);
	/* The controller and two guest threads. */
	cr_assert_eq(threads_of(stub_pid(), NULL), 3);
	run_syscall_in(ctx2, 39, DATA_ADDR);
	cr_assert_eq(data_word(DATA_OFF), 39000);
	run_syscall_in(ctx, 102, DATA_ADDR + 8);
	cr_assert_eq(data_word(DATA_OFF + 8), 102000);
	/* Ending one guest thread ends its stub thread only. */
	ops()->ctx_destroy(ctx2);
	cr_assert_eq(threads_of(stub_pid(), NULL), 2);
	run_syscall_in(ctx, 39, DATA_ADDR);
}

struct adopter {
	struct platform_ctx *c;
	int adopt_ret;
	bool destroy;
};

static void *adopt_and_run(void *arg)
{
	struct adopter *a = arg;

	a->adopt_ret = ops()->ctx_adopt(a->c);
	if (a->adopt_ret == 0) {
		run_syscall_in(a->c, 39, DATA_ADDR + 16);
		if (a->destroy)
			ops()->ctx_destroy(a->c);
	}
	return NULL;
}

Test(platform_seccomp, a_cloned_ctx_is_driven_by_the_thread_that_adopts_it)
{
	struct adopter a = { .destroy = true };
	pthread_t th;

	LOAD(sc_syscall);
	cr_assert_eq(ops()->ctx_clone(ctx, &a.c), 0);
	cr_assert_eq(pthread_create(&th, NULL, adopt_and_run, &a), 0);
	pthread_join(th, NULL);
	cr_assert_eq(a.adopt_ret, 0);
	cr_assert_eq(data_word(DATA_OFF + 16), 39000);
	cr_assert_eq(threads_of(stub_pid(), NULL), 2);
	run_syscall_in(ctx, 39, DATA_ADDR);
}

Test(platform_seccomp, a_clone_never_adopted_is_ended_by_its_creator)
{
	struct platform_ctx *c2;

	cr_assert_eq(ops()->ctx_clone(ctx, &c2), 0);
	cr_assert_eq(threads_of(stub_pid(), NULL), 3);
	ops()->ctx_destroy(c2);
	cr_assert_eq(threads_of(stub_pid(), NULL), 2);
	LOAD(sc_syscall);
	run_syscall_in(ctx, 39, DATA_ADDR);
}

struct spinner {
	struct platform_ctx *c;
	struct platform_event ev;
	arch_regs_t r;
	int ret;
};

/* Adopts sp->c and switches it once with sp->r (the caller sets rbx, rcx, rdx, rip). */
static void *adopt_and_switch(void *arg)
{
	struct spinner *sp = arg;

	cr_assert_eq(ops()->ctx_adopt(sp->c), 0);
	sp->r.eflags = 0x202;
	sp->ret = ops()->ctx_switch(sp->c, &sp->r, &sp->ev);
	return NULL;
}

Test(platform_seccomp, an_unmap_by_one_thread_holds_for_a_thread_running_guest_code)
{
	struct spinner sp = { 0 };
	pthread_t th;

	LOAD(sc_load_loop);
	cr_assert_eq(ops()->as_map(as, EXTRA_ADDR, 4096, PROT_READ, EXTRA_OFF), 0);
	cr_assert_eq(ops()->ctx_clone(ctx, &sp.c), 0);
	sp.r.rip = CODE_ADDR;
	sp.r.rbx = EXTRA_ADDR;
	sp.r.rcx = DATA_ADDR;
	cr_assert_eq(pthread_create(&th, NULL, adopt_and_switch, &sp), 0);
	while (data_word(DATA_OFF) != 1)
		sched_yield();
	/* The other thread is reading EXTRA_ADDR in a loop; when this returns it is gone. */
	cr_assert_eq(ops()->as_unmap(as, EXTRA_ADDR, 4096), 0);
	pthread_join(th, NULL);
	cr_assert_eq(sp.ret, 0);
	cr_assert_eq(sp.ev.kind, PLATFORM_EV_FAULT);
	cr_assert_eq(sp.ev.signo, SIGSEGV);
	cr_assert_eq(sp.ev.code, SEGV_MAPERR);
	cr_assert_eq(sp.ev.addr, EXTRA_ADDR);
	ops()->ctx_destroy(sp.c);
}

struct creator {
	struct platform_as *as;
	struct platform_ctx *for_main;
};

/* Creates a space and its first ctx, clones one for the main thread, ends its own, exits. */
static void *create_space_and_leave(void *arg)
{
	struct creator *c = arg;
	struct platform_ctx *mine;

	cr_assert_eq(ops()->as_create(plat, &c->as), 0);
	map_guest(c->as);
	cr_assert_eq(ops()->ctx_create(c->as, &mine), 0);
	cr_assert_eq(ops()->ctx_clone(mine, &c->for_main), 0);
	ops()->ctx_destroy(mine);
	return NULL;
}

Test(platform_seccomp, the_process_outlives_the_host_thread_that_made_it)
{
	struct creator c;
	pthread_t th;
	pid_t pid;

	LOAD(sc_syscall);
	cr_assert_eq(pthread_create(&th, NULL, create_space_and_leave, &c), 0);
	pthread_join(th, NULL);
	cr_assert_eq(ops()->ctx_adopt(c.for_main), 0);
	run_syscall_in(c.for_main, 39, DATA_ADDR + 24);
	cr_assert_eq(data_word(DATA_OFF + 24), 39000);
	cr_assert_eq(ops()->as_map(c.as, EXTRA_ADDR, 4096, PROT_READ, EXTRA_OFF), 0);
	ops()->ctx_destroy(c.for_main);
	pid = seccomp_as_stub_pid(c.as);
	cr_assert_gt(pid, 0);
	ops()->as_destroy(c.as);
	cr_assert_eq(kill(pid, 0), -1);
}

static void *map_from_other_thread(void *arg)
{
	(void)arg;
	return (void *)(long)ops()->as_map(as, EXTRA_ADDR, 4096, PROT_READ, EXTRA_OFF);
}

Test(platform_seccomp, map_from_another_thread_is_seen_at_the_next_switch)
{
	struct platform_event ev;
	pthread_t th;
	void *ret;

	*(uint64_t *)(mem + EXTRA_OFF) = 99;
	cr_assert_eq(pthread_create(&th, NULL, map_from_other_thread, NULL), 0);
	cr_assert_eq(pthread_join(th, &ret), 0);
	cr_assert_eq((long)ret, 0);
	LOAD(sc_load);
	regs.rbx = EXTRA_ADDR;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL, "kind %d signo %d", ev.kind, ev.signo);
	cr_assert_eq(regs.rdi, 99);
}

/* ---- interrupts ---------------------------------------------------------------------------- */

struct interrupter {
	bool extra_signals;
};

/* Waits until the guest runs its spin loop, then interrupts it. */
static void *interrupt_when_spinning(void *arg)
{
	struct interrupter *it = arg;
	pid_t pid = stub_pid(), guest_tid = -1;

	while (data_word(DATA_OFF) != 1)
		sched_yield();
	if (it->extra_signals) {
		/* Sent, not raised by the guest: none of them is a fault or a system call. */
		threads_of(pid, &guest_tid);
		kill(pid, SIGWINCH);
		kill(pid, SIGSEGV);
		kill(pid, SIGSYS);
		syscall(SYS_tgkill, pid, guest_tid, SIGSYS);
		syscall(SYS_tgkill, pid, guest_tid, SIGILL);
		syscall(SYS_tgkill, pid, guest_tid, SC_INTERRUPT_SIGNAL);
		syscall(SYS_tgkill, pid, pid, SIGSEGV);
	}
	ops()->ctx_interrupt(ctx);
	return NULL;
}

Test(platform_seccomp, interrupt_from_another_thread_stops_a_spinning_guest)
{
	struct interrupter it = { .extra_signals = false };
	struct platform_event ev;
	pthread_t th;

	LOAD(sc_spin);
	regs.rbx = DATA_ADDR;
	cr_assert_eq(pthread_create(&th, NULL, interrupt_when_spinning, &it), 0);
	ev = run();
	pthread_join(th, NULL);
	cr_assert_eq(ev.kind, PLATFORM_EV_INTERRUPT);
	cr_assert_eq(data_word(DATA_OFF), 1);
	cr_assert(regs.rip > CODE_ADDR && regs.rip < CODE_ADDR + 32, "rip %#llx", regs.rip);
	/* It goes on from there. */
	LOAD(sc_syscall);
	regs.rax = 39;
	regs.rbx = DATA_ADDR;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL, "kind %d signo %d", ev.kind, ev.signo);
}

Test(platform_seccomp, foreign_signals_are_ignored)
{
	struct interrupter it = { .extra_signals = true };
	struct platform_event ev;
	pthread_t th;

	LOAD(sc_spin);
	regs.rbx = DATA_ADDR;
	cr_assert_eq(pthread_create(&th, NULL, interrupt_when_spinning, &it), 0);
	ev = run();
	pthread_join(th, NULL);
	cr_assert_eq(ev.kind, PLATFORM_EV_INTERRUPT, "kind %d signo %d", ev.kind, ev.signo);
	/* Still alive: it runs on to its next system call, which is reported as one. */
	LOAD(sc_syscall);
	regs.rax = 39;
	regs.rbx = DATA_ADDR;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL, "kind %d signo %d", ev.kind, ev.signo);
	cr_assert_eq(regs.orig_rax, 39);
}

Test(platform_seccomp, interrupt_before_switch_is_reported_once)
{
	struct platform_event ev;

	LOAD(sc_syscall);
	regs.rax = 39;
	regs.rbx = DATA_ADDR;
	ops()->ctx_interrupt(ctx);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_INTERRUPT);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(regs.orig_rax, 39);
}

Test(platform_seccomp, interrupt_survives_a_mapping_change_before_the_switch)
{
	struct platform_event ev;

	LOAD(sc_syscall);
	regs.rax = 39;
	regs.rbx = DATA_ADDR;
	ops()->ctx_interrupt(ctx);
	cr_assert_eq(ops()->as_map(as, EXTRA_ADDR, 4096, PROT_READ, EXTRA_OFF), 0);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_INTERRUPT);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
}

/* A sentry thread may block signals; its stubs must still see the interrupt signal. */
Test(platform_seccomp, interrupt_works_when_the_sentry_thread_blocks_signals)
{
	struct interrupter it = { .extra_signals = false };
	struct platform_event ev;
	sigset_t blocked;
	pthread_t th;

	teardown();
	/* Not every signal: criterion's own timeout must still get through. */
	sigemptyset(&blocked);
	sigaddset(&blocked, SC_INTERRUPT_SIGNAL);
	sigaddset(&blocked, SIGUSR1);
	sigaddset(&blocked, SIGCHLD);
	sigaddset(&blocked, SIGWINCH);
	cr_assert_eq(pthread_sigmask(SIG_BLOCK, &blocked, NULL), 0);
	setup();
	LOAD(sc_spin);
	regs.rbx = DATA_ADDR;
	cr_assert_eq(pthread_create(&th, NULL, interrupt_when_spinning, &it), 0);
	ev = run();
	pthread_join(th, NULL);
	cr_assert_eq(ev.kind, PLATFORM_EV_INTERRUPT);
}

/* ---- death and cleanup ----------------------------------------------------------------------- */

Test(platform_seccomp, killed_stub_reports_died)
{
	struct platform_event ev;

	LOAD(sc_spin);
	regs.rbx = DATA_ADDR;
	cr_assert_eq(kill(stub_pid(), SIGKILL), 0);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_DIED);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_DIED);
	cr_assert_eq(ops()->as_map(as, EXTRA_ADDR, 4096, PROT_READ, EXTRA_OFF), -ESRCH);
}

static void *kill_stub_when_spinning(void *arg)
{
	pid_t pid = *(pid_t *)arg;

	while (data_word(DATA_OFF) != 1)
		sched_yield();
	kill(pid, SIGKILL);
	return NULL;
}

Test(platform_seccomp, a_stub_killed_while_its_guest_runs_reports_died)
{
	struct platform_event ev;
	pid_t pid = stub_pid();
	pthread_t th;

	LOAD(sc_spin);
	regs.rbx = DATA_ADDR;
	cr_assert_eq(pthread_create(&th, NULL, kill_stub_when_spinning, &pid), 0);
	ev = run();
	pthread_join(th, NULL);
	cr_assert_eq(ev.kind, PLATFORM_EV_DIED, "kind %d", ev.kind);
	/* New spaces still work. */
	teardown();
	setup();
	LOAD(sc_syscall);
	regs.rax = 39;
	regs.rbx = DATA_ADDR;
	cr_assert_eq(run().kind, PLATFORM_EV_SYSCALL);
}

Test(platform_seccomp, a_killed_zygote_fails_as_create_and_not_the_sentry)
{
	struct platform_as *a2 = NULL;
	pid_t z = zygote_pid();
	int ret;

	/* As in the sentry, which leaves SIGPIPE at its default (criterion may ignore it). */
	{
		sigset_t pipe_set;

		signal(SIGPIPE, SIG_DFL);
		sigemptyset(&pipe_set);
		sigaddset(&pipe_set, SIGPIPE);
		pthread_sigmask(SIG_UNBLOCK, &pipe_set, NULL);
	}
	cr_assert_eq(kill(z, SIGKILL), 0);
	/* Until it is gone (not reaped: the platform does that). */
	{
		siginfo_t si;

		cr_assert_eq(waitid(P_PID, (id_t)z, &si, WEXITED | WNOWAIT | __WALL), 0);
	}
	ret = ops()->as_create(plat, &a2);
	if (ret == 0) {
		/* A new zygote is acceptable too, as long as it works. */
		struct platform_ctx *c2;

		map_guest(a2);
		cr_assert_eq(ops()->ctx_create(a2, &c2), 0);
		ops()->ctx_destroy(c2);
		ops()->as_destroy(a2);
	} else {
		cr_assert_lt(ret, 0);
	}
	/* The existing space is unaffected. */
	LOAD(sc_syscall);
	regs.rax = 39;
	regs.rbx = DATA_ADDR;
	cr_assert_eq(run().kind, PLATFORM_EV_SYSCALL);
}

Test(platform_seccomp, as_destroy_leaves_no_process_no_fd_and_no_memory)
{
	struct platform_as *as2;
	pid_t pid, pid2;
	uint64_t out;
	int fds;

	fds = count_fds();
	out = pool_bytes_out();
	cr_assert_eq(ops()->as_create(plat, &as2), 0);
	pid2 = seccomp_as_stub_pid(as2);
	cr_assert_gt(pid2, 0);
	cr_assert_eq(kill(pid2, 0), 0);
	ops()->as_destroy(as2);
	cr_assert_eq(count_fds(), fds);
	cr_assert_eq(pool_bytes_out(), out);
	cr_assert_eq(kill(pid2, 0), -1);
	cr_assert_eq(errno, ESRCH);

	pid = stub_pid();
	ops()->as_destroy(as);
	as = NULL;
	cr_assert_eq(kill(pid, 0), -1);
	cr_assert_eq(errno, ESRCH);
	cr_assert_eq(pool_bytes_out(), 0);
	/* The zygote goes with the platform. */
	platform_destroy(plat);
	plat = NULL;
	cr_assert_eq(waitpid(-1, NULL, WNOHANG | __WALL), -1);
	cr_assert_eq(errno, ECHILD);
	cr_assert_eq(pool_bad_frees, 0);
}

static void churn_threads(void)
{
	for (int i = 0; i < 200; i++) {
		struct adopter a = { .destroy = true };
		pthread_t th;

		cr_assert_eq(ops()->ctx_clone(ctx, &a.c), 0);
		cr_assert_eq(pthread_create(&th, NULL, adopt_and_run, &a), 0);
		pthread_join(th, NULL);
		cr_assert_eq(a.adopt_ret, 0);
	}
}

Test(platform_seccomp, churning_spaces_and_threads_leaves_nothing_behind)
{
	int fds = count_fds(), children = count_children();
	uint64_t out = pool_bytes_out();

	cr_assert_eq(children, 2, "the stub and the zygote");
	LOAD(sc_syscall);
	churn_threads();
	cr_assert_eq(threads_of(stub_pid(), NULL), 2);
	cr_assert_eq(pool_bytes_out(), out);
	for (int i = 0; i < 300; i++) {
		struct platform_as *a2;
		struct platform_ctx *c2;

		cr_assert_eq(ops()->as_create(plat, &a2), 0);
		cr_assert_eq(ops()->ctx_create(a2, &c2), 0);
		if (i % 2)
			ops()->ctx_destroy(c2); /* else as_destroy ends it */
		ops()->as_destroy(a2);
	}
	cr_assert_eq(count_fds(), fds);
	cr_assert_eq(count_children(), children);
	cr_assert_eq(pool_bytes_out(), out);
	cr_assert_eq(pool_bad_frees, 0);
	run_syscall_in(ctx, 39, DATA_ADDR);
}

/* ---- a hostile guest ------------------------------------------------------------------------ */

/*
 * A watchdog for switches that might never return: after WATCHDOG_INTERRUPT_S it interrupts the
 * ctx (what the sentry does to a task it must stop), after WATCHDOG_KILL_S more it kills the
 * stub so that the switch returns, and says so.
 */
struct watchdog {
	pthread_t th;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct platform_ctx *c;
	pid_t pid;
	bool done, interrupted, fired;
};

static bool watchdog_wait(struct watchdog *w, int secs)
{
	struct timespec ts;
	bool done;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += secs;
	pthread_mutex_lock(&w->lock);
	while (!w->done && pthread_cond_timedwait(&w->cond, &w->lock, &ts) != ETIMEDOUT)
		;
	done = w->done;
	pthread_mutex_unlock(&w->lock);
	return done;
}

static void *watchdog_main(void *arg)
{
	struct watchdog *w = arg;

	if (watchdog_wait(w, WATCHDOG_INTERRUPT_S))
		return NULL;
	w->interrupted = true;
	ops()->ctx_interrupt(w->c);
	if (watchdog_wait(w, WATCHDOG_KILL_S))
		return NULL;
	w->fired = true;
	kill(w->pid, SIGKILL);
	return NULL;
}

static void watchdog_start(struct watchdog *w, struct platform_ctx *c, pid_t pid)
{
	pthread_condattr_t attr;

	memset(w, 0, sizeof(*w));
	w->c = c;
	w->pid = pid;
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &attr);
	pthread_condattr_destroy(&attr);
	cr_assert_eq(pthread_create(&w->th, NULL, watchdog_main, w), 0);
}

static void watchdog_stop(struct watchdog *w)
{
	pthread_mutex_lock(&w->lock);
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->th, NULL);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
}

/* ctx_switch under a watchdog; fails the test if the watchdog had to kill the stub. */
static struct platform_event guarded_switch(struct platform_ctx *c, arch_regs_t *r,
					    const char *what)
{
	struct platform_event ev;
	struct watchdog w;
	int ret;

	watchdog_start(&w, c, stub_pid());
	ret = ops()->ctx_switch(c, r, &ev);
	watchdog_stop(&w);
	cr_assert_not(w.fired,
		      "%s: the switch hung: neither the platform nor a ctx_interrupt ended it in "
		      "%d s (the watchdog killed the stub; switch then returned %d, kind %d)",
		      what, WATCHDOG_INTERRUPT_S + WATCHDOG_KILL_S, ret, ev.kind);
	cr_assert_eq(ret, 0);
	return ev;
}

/* The sentry side still works: a new space runs a system call. */
static void check_a_new_space_works(void)
{
	struct platform_as *a2;
	struct platform_ctx *c2;
	struct platform_event ev;
	arch_regs_t r = { 0 };

	memset(mem + CODE_OFF + 0xf00, 0, 0x100);
	load_code_at(0xf00, sc_syscall_start, sc_syscall_end);
	cr_assert_eq(ops()->as_create(plat, &a2), 0);
	map_guest(a2);
	cr_assert_eq(ops()->ctx_create(a2, &c2), 0);
	r.rip = CODE_ADDR + 0xf00;
	r.rax = 39;
	r.rbx = DATA_ADDR;
	r.eflags = 0x202;
	cr_assert_eq(ops()->ctx_switch(c2, &r, &ev), 0);
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(r.orig_rax, 39);
	ops()->ctx_destroy(c2);
	ops()->as_destroy(a2);
}

/* The addresses of the `syscall` instructions (0f 05) of the stub's code. */
static size_t code_syscall_sites(uint64_t *out, size_t max)
{
	const uint8_t *p = (const uint8_t *)code->page;
	size_t n = 0;

	/* The code is at the start of the page; the filters start at 0x800. */
	for (size_t i = 0; i + 1 < 0x800; i++) {
		if (p[i] == 0x0f && p[i + 1] == 0x05 && n < max)
			out[n++] = code->page + i;
	}
	return n;
}

Test(platform_seccomp, the_guest_can_write_its_own_area)
{
	/* What the tests below build on: areas are guest-writable memory in the stub. */
	struct platform_event ev;
	uint64_t area;

	LOAD(sc_syscall);
	regs.rax = 39;
	regs.rbx = DATA_ADDR;
	cr_assert_eq(run().kind, PLATFORM_EV_SYSCALL);
	area = area_stub_addr(pool_last_area);
	cr_assert_eq(area, code->page + SC_AREAS_OFF);
	LOAD(sc_store64);
	regs.rbx = area + 4096 - 8; /* the last word of the header page */
	regs.rdx = 0x1234;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL, "kind %d signo %d", ev.kind, ev.signo);
	cr_assert_eq(*(uint64_t *)(mem + pool_last_area + 4096 - 8), 0x1234);
}

/* The guest may read the stub's code and command pages (they are in its process) but not write. */
Test(platform_seccomp, the_code_and_command_pages_are_read_only_to_the_guest)
{
	uint64_t targets[] = { code->page, code->page + SC_CMD_OFF };
	struct platform_event ev;

	for (size_t i = 0; i < ARRAY_SIZE_(targets); i++) {
		LOAD(sc_store);
		regs.rbx = targets[i];
		ev = run();
		cr_assert_eq(ev.kind, PLATFORM_EV_FAULT, "%#llx: kind %d",
			     (unsigned long long)targets[i], ev.kind);
		cr_assert_eq(ev.signo, SIGSEGV);
		cr_assert_eq(ev.code, SEGV_ACCERR);
		cr_assert_eq(ev.addr, targets[i]);
		cr_assert_eq(regs.rip, CODE_ADDR);
	}
	LOAD(sc_load);
	regs.rbx = code->page;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL, "kind %d", ev.kind);
	cr_assert_eq(regs.rdi, *(uint64_t *)code->page);
}

/* Jumping to any `syscall` of the stub's code with a forbidden number kills the stub. */
Test(platform_seccomp, a_guest_calling_from_the_code_page_with_forbidden_numbers_is_killed)
{
	static const long numbers[] = {
		__NR_read,
		__NR_write,
		__NR_open,
		__NR_close,
		__NR_mmap,
		__NR_mprotect,
		__NR_munmap,
		__NR_rt_sigaction,
		__NR_rt_sigprocmask,
		__NR_ioctl,
		__NR_dup2,
		__NR_socket,
		__NR_sendmsg,
		__NR_clone,
		__NR_fork,
		__NR_execve,
		__NR_kill,
		__NR_getrusage,
		__NR_ptrace,
		__NR_sigaltstack,
		__NR_prctl,
		__NR_arch_prctl,
		__NR_exit_group,
		__NR_tgkill,
		__NR_openat,
		__NR_process_vm_writev,
		__NR_seccomp,
		__NR_memfd_create,
		__NR_getpid,
		0x40000000L,
		1000,
	};
	uint64_t sites[128];
	size_t nsites = code_syscall_sites(sites, ARRAY_SIZE_(sites));

	cr_assert_gt(nsites, 10, "found %zu syscall instructions in the code page", nsites);
	/* Every number at the first site, and mmap at every site. */
	for (size_t i = 0; i < ARRAY_SIZE_(numbers) + nsites; i++) {
		bool by_number = i < ARRAY_SIZE_(numbers);
		long nr = by_number ? numbers[i] : __NR_mmap;
		uint64_t site = by_number ? sites[0] : sites[i - ARRAY_SIZE_(numbers)];
		struct platform_event ev;

		LOAD(sc_jump);
		regs.r11 = site;
		regs.rax = (uint64_t)nr;
		/* Arguments that would pass the stub filter's own checks. */
		regs.rdi = nr == __NR_clone ? SC_THREAD_CLONE_FLAGS :
					      (nr == __NR_mmap ? DATA_ADDR : 4);
		regs.rsi = 4096;
		regs.rdx = PROT_READ | PROT_WRITE | PROT_EXEC;
		regs.r10 = MAP_SHARED | MAP_FIXED;
		regs.r8 = SC_STUB_MEMFD;
		regs.r9 = 0;
		ev = guarded_switch(ctx, &regs, "forbidden call from the code page");
		cr_assert_eq(ev.kind, PLATFORM_EV_DIED, "nr %ld at %#llx: kind %d signo %d", nr,
			     (unsigned long long)site, ev.kind, ev.signo);
		ops()->as_destroy(as);
		as = NULL;
		setup_space();
	}
	check_a_new_space_works();
}

Test(platform_seccomp, futex_calls_from_the_code_page_other_than_wait_and_wake_are_killed)
{
	static const long futex_ops[] = { 3 /* REQUEUE */, 5 /* WAKE_OP */, 9 /* WAIT_BITSET */,
					  128 /* WAIT_PRIVATE */, 129 /* WAKE_PRIVATE */ };
	uint64_t sites[128];

	cr_assert_gt(code_syscall_sites(sites, ARRAY_SIZE_(sites)), 0);
	for (size_t i = 0; i < ARRAY_SIZE_(futex_ops); i++) {
		struct platform_event ev;

		LOAD(sc_jump);
		regs.r11 = sites[0];
		regs.rax = __NR_futex;
		regs.rdi = DATA_ADDR;
		regs.rsi = (uint64_t)futex_ops[i];
		regs.rdx = 1;
		ev = guarded_switch(ctx, &regs, "futex from the code page");
		cr_assert_eq(ev.kind, PLATFORM_EV_DIED, "op %ld: kind %d", futex_ops[i], ev.kind);
		ops()->as_destroy(as);
		as = NULL;
		setup_space();
	}
}

/* FUTEX_WAIT from the code page is allowed: the guest must still be interruptible. */
Test(platform_seccomp, a_futex_wait_from_the_code_page_does_not_hang)
{
	struct platform_event ev;
	uint64_t sites[128];

	cr_assert_gt(code_syscall_sites(sites, ARRAY_SIZE_(sites)), 0);
	LOAD(sc_jump);
	regs.r11 = sites[0];
	regs.rax = __NR_futex;
	regs.rdi = DATA_ADDR;
	regs.rsi = 0; /* FUTEX_WAIT on a word that is 0: sleeps */
	regs.rdx = 0;
	regs.r10 = 0;
	ev = guarded_switch(ctx, &regs, "FUTEX_WAIT from the code page");
	cr_assert(ev.kind == PLATFORM_EV_INTERRUPT || ev.kind == PLATFORM_EV_DIED ||
			  ev.kind == PLATFORM_EV_FAULT,
		  "kind %d", ev.kind);
	check_a_new_space_works();
}

/*
 * exit is allowed from the code page (the handler's way out): a guest that jumps to it ends its
 * stub thread. The switch must then report DIED (or at least return), not wait forever.
 * (Found hanging: wait_stop() checked only that the stub *process* lived; it now also checks the
 * thread's CLONE_CHILD_CLEARTID word and tgkill(pid, tid, 0).)
 */
Test(platform_seccomp, a_guest_exiting_through_the_code_page_does_not_hang)
{
	struct platform_event ev;
	uint64_t sites[128];

	cr_assert_gt(code_syscall_sites(sites, ARRAY_SIZE_(sites)), 0);
	LOAD(sc_jump);
	regs.r11 = sites[0];
	regs.rax = __NR_exit;
	regs.rdi = 0;
	ev = guarded_switch(ctx, &regs, "exit from the code page");
	cr_assert(ev.kind == PLATFORM_EV_DIED || ev.kind == PLATFORM_EV_INTERRUPT, "kind %d",
		  ev.kind);
	check_a_new_space_works();
}

/*
 * Another guest thread overwrites this thread's area pointers (SC_A_INFO, SC_A_UC) in a loop,
 * racing with the handler that writes them at each stop: the sentry must kill the space (or
 * see the real values), never use them, and live on.
 */
Test(platform_seccomp, a_guest_overwriting_area_pointers_gets_its_space_killed)
{
	struct spinner sp = { 0 };
	struct platform_event ev;
	uint64_t area;
	bool died = false;
	pthread_t th;

	LOAD(sc_syscall);
	regs.rax = 39;
	regs.rbx = DATA_ADDR;
	cr_assert_eq(run().kind, PLATFORM_EV_SYSCALL);
	area = area_stub_addr(pool_last_area);
	/* The writer: a second guest thread, on its own host thread. */
	load_code_at(CODE2, sc_store_loop_start, sc_store_loop_end);
	cr_assert_eq(ops()->ctx_clone(ctx, &sp.c), 0);
	sp.r.rip = CODE_ADDR + CODE2;
	sp.r.rbx = area + SC_A_INFO;
	sp.r.rcx = DATA_ADDR + 64;
	sp.r.rdx = 0x4141414141414141ULL;
	cr_assert_eq(pthread_create(&th, NULL, adopt_and_switch, &sp), 0);
	while (data_word(DATA_OFF + 64) != 1)
		sched_yield();
	/* The victim makes system calls until the sentry notices. */
	for (int i = 0; i < 100000 && !died; i++) {
		regs.rip = CODE_ADDR;
		regs.rax = 39;
		regs.rbx = DATA_ADDR;
		ev = guarded_switch(ctx, &regs, "victim of overwritten pointers");
		if (ev.kind == PLATFORM_EV_DIED)
			died = true;
		else
			cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL, "kind %d signo %d", ev.kind,
				     ev.signo);
	}
	if (!died)
		ops()->ctx_interrupt(sp.c);
	pthread_join(th, NULL);
	cr_assert_eq(sp.ret, 0);
	cr_assert(died, "100000 stops with the pointers overwritten and no kill");
	cr_assert(sp.ev.kind == PLATFORM_EV_DIED, "writer: kind %d", sp.ev.kind);
	cr_assert_eq(ops()->as_map(as, EXTRA_ADDR, 4096, PROT_READ, EXTRA_OFF), -ESRCH);
	ops()->ctx_destroy(sp.c);
	check_a_new_space_works();
}

/*
 * The controller's scratch page (its reply buffer) is writable by guest threads of the same stub.
 * A guest thread that rewrites the reply to a clone request (the new thread's tid) with the pid
 * of another host process must not make the sentry act on that process: here, bind the decoy to
 * one CPU (ctx_switch's sched_setaffinity of the tid it was told).
 * (Found failing: the tid of the reply, in the guest-writable scratch page, went to
 * sched_setaffinity() unchecked; it is now checked to be a thread of the stub with tgkill 0.)
 */
Test(platform_seccomp, a_guest_forging_the_controllers_clone_reply_cannot_touch_another_process)
{
	struct spinner sp = { 0 };
	cpu_set_t all, now;
	pid_t decoy;
	int pfd[2], changed = 0, made = 0;
	pthread_t th;

	cr_assert_eq(sched_getaffinity(0, sizeof(all), &all), 0);
	if (CPU_COUNT(&all) < 2)
		cr_skip_test("one CPU: binding cannot be seen");
	cr_assert_eq(pipe(pfd), 0);
	decoy = fork();
	if (decoy == 0) {
		char c;

		close(pfd[1]);
		_exit(read(pfd[0], &c, 1) < 0);
	}
	close(pfd[0]);
	cr_assert_gt(decoy, 0);
	cr_assert_eq(sched_setaffinity(decoy, sizeof(all), &all), 0);

	LOAD(sc_syscall);
	load_code_at(CODE2, sc_forge_tid_start, sc_forge_tid_end);
	cr_assert_eq(ops()->ctx_clone(ctx, &sp.c), 0);
	sp.r.rip = CODE_ADDR + CODE2;
	sp.r.rbx = code->page + SC_SCRATCH_OFF + SC_S_REPLY;
	sp.r.rcx = DATA_ADDR + 64;
	sp.r.rdx = (uint64_t)decoy;
	cr_assert_eq(pthread_create(&th, NULL, adopt_and_switch, &sp), 0);
	while (data_word(DATA_OFF + 64) != 1)
		sched_yield();
	for (int i = 0; i < 1000 && !changed; i++) {
		struct platform_ctx *c;

		if (ops()->ctx_create(as, &c) != 0)
			continue;
		made++;
		run_syscall_in(c, 39, DATA_ADDR);
		ops()->ctx_destroy(c);
		cr_assert_eq(sched_getaffinity(decoy, sizeof(now), &now), 0);
		if (!CPU_EQUAL(&now, &all))
			changed = i + 1;
	}
	ops()->ctx_interrupt(sp.c);
	pthread_join(th, NULL);
	ops()->ctx_destroy(sp.c);
	close(pfd[1]);
	waitpid(decoy, NULL, 0);
	cr_assert_gt(made, 0, "no thread could be made while the reply was forged");
	fprintf(stderr, "seccomp platform: %d threads made, %llu clone replies rewritten\n", made,
		(unsigned long long)data_word(DATA_OFF + 72));
	cr_assert_eq(changed, 0,
		     "after %d new threads the decoy process %d was bound to %d CPU(s): the sentry "
		     "used a tid the guest forged",
		     changed, decoy, CPU_COUNT(&now));
	check_a_new_space_works();
}

/* A second guest thread writes into the stopped ctx's frame (via sc_store64/sc_store_stack). */
static struct platform_ctx *second_ctx_writes(const char *start, const char *end, uint64_t at,
					      uint64_t v1, uint64_t v2)
{
	struct platform_ctx *c2;
	struct platform_event ev;
	arch_regs_t r = { 0 };

	load_code_at(CODE2, start, end);
	cr_assert_eq(ops()->ctx_create(as, &c2), 0);
	r.rip = CODE_ADDR + CODE2;
	r.rbx = at;
	r.rdx = v1;
	r.rsi = v2;
	r.eflags = 0x202;
	ev = guarded_switch(c2, &r, "the writer");
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL, "writer: kind %d signo %d", ev.kind, ev.signo);
	return c2;
}

/* Stops ctx at a system call and returns its frame's ucontext (a stub address). */
static uint64_t stop_and_find_frame(void)
{
	uint64_t uc;

	LOAD(sc_syscall);
	regs.rax = 39;
	regs.rbx = DATA_ADDR;
	cr_assert_eq(run().kind, PLATFORM_EV_SYSCALL);
	uc = *(uint64_t *)(mem + pool_last_area + SC_A_UC);
	cr_assert_geq(uc, area_stub_addr(pool_last_area) + 4096);
	return uc;
}

Test(platform_seccomp, a_guest_corrupting_a_stopped_threads_fpstate_pointer_is_contained)
{
	uint64_t uc = stop_and_find_frame();
	struct platform_ctx *c2;
	struct platform_event ev;

	c2 = second_ctx_writes(sc_store64_start, sc_store64_end,
			       uc + offsetof(ucontext_t, uc_mcontext.fpregs), 0x41410000ULL, 0);
	regs.rax = 0;
	ev = guarded_switch(ctx, &regs, "resume with a bad fpregs pointer");
	/* Its sigreturn fails: the stub dies, or the guest gets a SIGSEGV as Linux would. */
	cr_assert(ev.kind == PLATFORM_EV_DIED ||
			  (ev.kind == PLATFORM_EV_FAULT && ev.signo == SIGSEGV),
		  "kind %d signo %d", ev.kind, ev.signo);
	ops()->ctx_destroy(c2);
	check_a_new_space_works();
}

Test(platform_seccomp, a_guest_corrupting_a_stopped_threads_xstate_header_is_contained)
{
	uint64_t uc = stop_and_find_frame();
	uint64_t fp = *(uint64_t *)(mem + pool_last_area + (uc - area_stub_addr(pool_last_area)) +
				    offsetof(ucontext_t, uc_mcontext.fpregs));
	struct platform_ctx *c2;
	struct platform_event ev;

	cr_assert_neq(fp, 0);
	/* XSTATE_BV with every bit set, XCOMP_BV with the compacted bit. */
	c2 = second_ctx_writes(sc_store64_start, sc_store64_end, fp + 512, ~0ULL, 0);
	regs.rax = 0;
	ev = guarded_switch(ctx, &regs, "resume with a bad xstate header");
	cr_assert(ev.kind == PLATFORM_EV_DIED || ev.kind == PLATFORM_EV_SYSCALL ||
			  (ev.kind == PLATFORM_EV_FAULT && ev.signo == SIGSEGV),
		  "kind %d signo %d", ev.kind, ev.signo);
	ops()->ctx_destroy(c2);
	check_a_new_space_works();
}

/*
 * Another guest thread rewrites the stopped thread's uc_stack (the alternate stack its
 * rt_sigreturn restores) to point at guest memory. The thread's next system call must still
 * reach the sentry (or the space die); it must not run the handler on guest memory and leave the
 * sentry waiting forever.
 */
Test(platform_seccomp, a_guest_moving_a_threads_signal_stack_does_not_hang)
{
	uint64_t uc = stop_and_find_frame();
	struct platform_ctx *c2;
	struct platform_event ev;

	cr_assert_eq(ops()->as_map(as, ALT_ADDR, SC_AREA_SIZE, PROT_READ | PROT_WRITE, ALT_OFF), 0);
	c2 = second_ctx_writes(sc_store_stack_start, sc_store_stack_end,
			       uc + offsetof(ucontext_t, uc_stack), ALT_ADDR + 4096,
			       SC_AREA_SIZE - 4096);
	/* Resume: sc_syscall goes on to syscall(60), a fresh stop. */
	regs.rax = 0;
	ev = guarded_switch(ctx, &regs, "system call after the signal stack was moved");
	cr_assert(ev.kind == PLATFORM_EV_DIED ||
			  (ev.kind == PLATFORM_EV_SYSCALL && regs.orig_rax == 60),
		  "kind %d orig_rax %lld", ev.kind, regs.orig_rax);
	ops()->ctx_destroy(c2);
	check_a_new_space_works();
}

/*
 * Another guest thread clears the stopped thread's "stub sleeps" flag: the sentry must still wake
 * the thread when it resumes it (or kill the space), not wait forever.
 * (Found hanging: resume() wakes the thread only if the guest-writable SC_A_STUB_SLEEPS says it
 * sleeps; wait_stop() now wakes it again at each liveness check.)
 */
Test(platform_seccomp, a_guest_clearing_a_stopped_threads_sleep_flag_does_not_hang)
{
	uint64_t area;
	struct platform_ctx *c2;
	struct platform_event ev;

	stop_and_find_frame();
	area = area_stub_addr(pool_last_area);
	c2 = second_ctx_writes(sc_store32_start, sc_store32_end, area + SC_A_STUB_SLEEPS, 0, 0);
	regs.rax = 0;
	ev = guarded_switch(ctx, &regs, "resume after the sleep flag was cleared");
	cr_assert(ev.kind == PLATFORM_EV_DIED || ev.kind == PLATFORM_EV_INTERRUPT ||
			  (ev.kind == PLATFORM_EV_SYSCALL && regs.orig_rax == 60),
		  "kind %d orig_rax %lld", ev.kind, regs.orig_rax);
	ops()->ctx_destroy(c2);
	check_a_new_space_works();
}

/* A guest writing garbage into its own state word: an odd event or a kill, never a hang. */
Test(platform_seccomp, a_guest_writing_its_state_word_does_not_hang)
{
	static const uint32_t values[] = { 0, SC_ST_STOPPED, SC_ST_EXIT, 0xdeadbeef, SC_ST_RUN };

	for (size_t i = 0; i < ARRAY_SIZE_(values); i++) {
		uint64_t area;
		struct platform_event ev;
		bool died = false;

		stop_and_find_frame();
		area = area_stub_addr(pool_last_area);
		LOAD(sc_store32);
		regs.rbx = area + SC_A_STATE;
		regs.rdx = values[i];
		for (int k = 0; k < 4 && !died; k++) {
			ev = guarded_switch(ctx, &regs, "after a write to the state word");
			died = ev.kind == PLATFORM_EV_DIED;
			cr_assert(died || ev.kind == PLATFORM_EV_SYSCALL ||
					  ev.kind == PLATFORM_EV_FAULT ||
					  ev.kind == PLATFORM_EV_INTERRUPT,
				  "value %#x: kind %d", values[i], ev.kind);
		}
		ops()->as_destroy(as);
		as = NULL;
		setup_space();
	}
	check_a_new_space_works();
}

/* ---- benchmarks (figures only) --------------------------------------------------------------- */

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Not an assertion on time: prints the cost of one guest system call round trip. */
Test(platform_seccomp, syscall_round_trip_benchmark)
{
	enum { N = 20000 };
	struct platform_event ev;
	double t0, t1;

	LOAD(sc_loop);
	ev = run(); /* warm up */
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	t0 = now_us();
	for (int i = 0; i < N; i++) {
		regs.rax = (uint64_t)i;
		cr_assert_eq(ops()->ctx_switch(ctx, &regs, &ev), 0);
		if (ev.kind != PLATFORM_EV_SYSCALL)
			cr_assert_fail("kind %d at %d", ev.kind, i);
	}
	t1 = now_us();
	fprintf(stderr, "seccomp platform: %d guest syscall round trips, %.2f us each\n", N,
		(t1 - t0) / N);
}

/* Not a check: prints what a new address space and a new thread cost. */
Test(platform_seccomp, as_create_and_ctx_create_benchmark)
{
	const int n = 200;
	double t0, t1, t2;

	t0 = now_us();
	for (int i = 0; i < n; i++) {
		struct platform_as *a;

		cr_assert_eq(ops()->as_create(plat, &a), 0);
		ops()->as_destroy(a);
	}
	t1 = now_us();
	for (int i = 0; i < n; i++) {
		struct platform_ctx *c;

		cr_assert_eq(ops()->ctx_create(as, &c), 0);
		ops()->ctx_destroy(c);
	}
	t2 = now_us();
	fprintf(stderr,
		"seccomp platform: as_create + as_destroy %.1f us each, ctx_create + "
		"ctx_destroy %.1f us each\n",
		(t1 - t0) / n, (t2 - t1) / n);
}
