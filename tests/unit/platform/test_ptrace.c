/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ptrace platform against real guest code: each test writes a few instructions into its
 * own memory file, maps them into a fresh stub and checks what comes back from ctx_switch.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sentry/platform/platform.h"
#include "sentry/platform/ptrace/ptrace.h"

/* Guest layout: memory-file offsets and the guest addresses they are mapped at. */
#define MEM_SIZE (16 * 4096UL)
#define CODE_OFF 0x0000UL
#define DATA_OFF 0x1000UL
#define RO_OFF 0x2000UL
#define STACK_OFF 0x3000UL
#define EXTRA_OFF 0x4000UL
#define CODE_ADDR 0x400000ULL
#define DATA_ADDR 0x600000ULL
#define RO_ADDR 0x700000ULL
#define STACK_ADDR 0x800000ULL
#define EXTRA_ADDR 0xa00000ULL
#define UNMAPPED_ADDR 0x900000ULL
#define ARRAY_SIZE_(a) (sizeof(a) / sizeof((a)[0]))

/* A snippet of guest code, assembled into .rodata and copied into the code page. */
#define SNIPPET(name, body)                                                                      \
	__asm__(".pushsection .rodata.guest_snippets, \"a\"\n" #name "_start:\n" body "\n" #name \
		"_end:\n"                                                                        \
		".popsection\n");                                                                \
	extern const char name##_start[], name##_end[]

/* syscall; store rax to (%rbx); syscall(60) */
SNIPPET(snip_syscall, "syscall\n"
		      "mov %rax, (%rbx)\n"
		      "mov $60, %eax\n"
		      "syscall\n"
		      "ud2\n");
/* load from (%rbx) into rdi, then syscall(39) */
SNIPPET(snip_load, "mov (%rbx), %rdi\n"
		   "mov $39, %eax\n"
		   "syscall\n"
		   "ud2\n");
/* store 7 to (%rbx), then syscall(39) */
SNIPPET(snip_store, "movq $7, (%rbx)\n"
		    "mov $39, %eax\n"
		    "syscall\n"
		    "ud2\n");
SNIPPET(snip_ud2, "ud2\n");
/* rdi = *(uint64_t *)fs_base, then syscall(39) */
SNIPPET(snip_fs, "mov %fs:0, %rdi\n"
		 "mov $39, %eax\n"
		 "syscall\n"
		 "ud2\n");
/* tell the test we run (*rbx = 1), then spin forever */
SNIPPET(snip_spin, "movq $1, (%rbx)\n"
		   "1: jmp 1b\n");
SNIPPET(snip_int80, "mov $20, %eax\n"
		    "int $0x80\n"
		    "ud2\n");
/* munmap(CODE_ADDR, 4096): if the host ran it, fetching the next instruction would fault */
SNIPPET(snip_munmap_self, "mov $11, %eax\n"
			  "mov $0x400000, %edi\n"
			  "mov $4096, %esi\n"
			  "syscall\n"
			  "mov $39, %eax\n"
			  "syscall\n"
			  "ud2\n");
/* rdi = low quadword of xmm0; syscall(39); xmm1 = rsi; syscall(39) */
SNIPPET(snip_xmm, "movq %xmm0, %rdi\n"
		  "mov $39, %eax\n"
		  "syscall\n"
		  "movq %rsi, %xmm1\n"
		  "mov $39, %eax\n"
		  "syscall\n"
		  "ud2\n");
/* syscall(9) as a guest mmap; then rdi = *(%rbx), rsi = rax; syscall(39) */
SNIPPET(snip_mmap_then_load, "mov $9, %eax\n"
			     "syscall\n"
			     "mov (%rbx), %rdi\n"
			     "mov %rax, %rsi\n"
			     "mov $39, %eax\n"
			     "syscall\n"
			     "ud2\n");
/* tell the test we run (*rcx = 1), then load (%rbx) forever */
SNIPPET(snip_load_loop, "movq $1, (%rcx)\n"
			"1: mov (%rbx), %rax\n"
			"jmp 1b\n");
/* the benchmark: syscall(39) forever */
SNIPPET(snip_loop, "1: mov $39, %eax\n"
		   "syscall\n"
		   "jmp 1b\n");

static int memfd = -1;
static uint8_t *mem;
static struct platform *plat;
static struct platform_as *as;
static struct platform_ctx *ctx;
static arch_regs_t regs;

static const struct platform_ops *ops(void)
{
	return plat->ops;
}

static void load_code(const char *start, const char *end)
{
	memset(mem + CODE_OFF, 0xcc, 4096); /* int3 everywhere else */
	memcpy(mem + CODE_OFF, start, (size_t)(end - start));
	memset(&regs, 0, sizeof(regs));
	regs.rip = CODE_ADDR;
	regs.rsp = STACK_ADDR + 4096;
	regs.cs = 0x33;
	regs.ss = 0x2b;
	regs.eflags = 0x202;
}

#define LOAD(name) load_code(name##_start, name##_end)

static void setup(void)
{
	memfd = memfd_create("husk-test-mem", MFD_CLOEXEC);
	cr_assert_geq(memfd, 0);
	cr_assert_eq(ftruncate(memfd, (off_t)MEM_SIZE), 0);
	mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	cr_assert_neq(mem, MAP_FAILED);
	cr_assert_eq(platform_create("ptrace", memfd, &plat), 0);
	cr_assert_eq(ops()->as_create(plat, &as), 0);
	/* Mappings before the first ctx exists (the loader's case). */
	cr_assert_eq(ops()->as_map(as, CODE_ADDR, 4096, PROT_READ | PROT_EXEC, CODE_OFF), 0);
	cr_assert_eq(ops()->as_map(as, DATA_ADDR, 4096, PROT_READ | PROT_WRITE, DATA_OFF), 0);
	cr_assert_eq(ops()->as_map(as, RO_ADDR, 4096, PROT_READ, RO_OFF), 0);
	cr_assert_eq(ops()->as_map(as, STACK_ADDR, 4096, PROT_READ | PROT_WRITE, STACK_OFF), 0);
	cr_assert_eq(ops()->ctx_create(as, &ctx), 0);
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

static struct platform_event run(void)
{
	struct platform_event ev;

	cr_assert_eq(ops()->ctx_switch(ctx, &regs, &ev), 0);
	return ev;
}

static uint64_t data_word(unsigned long off)
{
	return __atomic_load_n((uint64_t *)(mem + off), __ATOMIC_ACQUIRE);
}

/*
 * Timeouts are per suite only: criterion 2.4.1's runner leaks a timer (LeakSanitizer reports it)
 * when a test overrides its suite's timeout while others run in parallel.
 */
TestSuite(platform_ptrace, .init = setup, .fini = teardown, .timeout = 60);
TestSuite(platform_create, .timeout = 60);

Test(platform_ptrace, syscall_stops_with_number_and_arguments)
{
	struct platform_event ev;

	LOAD(snip_syscall);
	regs.rax = 39;
	regs.rdi = 0x1111;
	regs.rsi = 0x2222;
	regs.rdx = 0x3333;
	regs.r10 = 0x4444;
	regs.r8 = 0x5555;
	regs.r9 = 0x6666;
	regs.rbx = DATA_ADDR;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(regs.orig_rax, 39);
	cr_assert_eq(regs.rdi, 0x1111);
	cr_assert_eq(regs.rsi, 0x2222);
	cr_assert_eq(regs.rdx, 0x3333);
	cr_assert_eq(regs.r10, 0x4444);
	cr_assert_eq(regs.r8, 0x5555);
	cr_assert_eq(regs.r9, 0x6666);
	cr_assert_eq(regs.rip, CODE_ADDR + 2, "rip %#llx is not after the syscall", regs.rip);
}

Test(platform_ptrace, guest_sees_the_rax_the_sentry_sets)
{
	struct platform_event ev;

	LOAD(snip_syscall);
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

Test(platform_ptrace, guest_syscall_is_never_run_by_the_host)
{
	struct platform_event ev;

	LOAD(snip_munmap_self);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(regs.orig_rax, 11);
	regs.rax = 0;
	ev = run();
	/* Had munmap run, fetching the next instruction would have faulted. */
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL, "kind %d signo %d", ev.kind, ev.signo);
	cr_assert_eq(regs.orig_rax, 39);
}

Test(platform_ptrace, unmapped_access_faults_with_its_address)
{
	struct platform_event ev;

	LOAD(snip_load);
	regs.rbx = UNMAPPED_ADDR + 8;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_FAULT);
	cr_assert_eq(ev.signo, SIGSEGV);
	cr_assert_eq(ev.code, SEGV_MAPERR);
	cr_assert_eq(ev.addr, UNMAPPED_ADDR + 8);
	cr_assert_eq(ev.trapno, 14);
	cr_assert_eq(regs.rip, CODE_ADDR, "rip %#llx is not the faulting instruction", regs.rip);
}

Test(platform_ptrace, fault_is_suppressed_and_retried_after_the_sentry_fixes_it)
{
	struct platform_event ev;

	LOAD(snip_load);
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

/* The usual case: a guest mmap whose handler maps the range before the guest resumes. */
Test(platform_ptrace, map_at_a_syscall_stop_is_there_when_the_guest_resumes)
{
	struct platform_event ev;

	*(uint64_t *)(mem + EXTRA_OFF) = 0x5eed;
	LOAD(snip_mmap_then_load);
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

Test(platform_ptrace, ud2_gives_sigill)
{
	struct platform_event ev;

	LOAD(snip_ud2);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_FAULT);
	cr_assert_eq(ev.signo, SIGILL);
	cr_assert_eq(ev.code, ILL_ILLOPN);
	cr_assert_eq(ev.addr, CODE_ADDR);
	cr_assert_eq(ev.trapno, 6);
}

Test(platform_ptrace, int80_gives_sigsegv_at_the_instruction)
{
	struct platform_event ev;

	LOAD(snip_int80);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_FAULT);
	cr_assert_eq(ev.signo, SIGSEGV);
	cr_assert_eq(ev.code, SI_KERNEL);
	cr_assert_eq(regs.rip, CODE_ADDR + 5, "rip %#llx", regs.rip);
	cr_assert_eq(regs.rax, 20);
}

Test(platform_ptrace, write_to_read_only_page_faults)
{
	struct platform_event ev;

	LOAD(snip_store);
	regs.rbx = RO_ADDR;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_FAULT);
	cr_assert_eq(ev.signo, SIGSEGV);
	cr_assert_eq(ev.code, SEGV_ACCERR);
	cr_assert_eq(ev.addr, RO_ADDR);
	cr_assert_eq(data_word(RO_OFF), 0);
}

Test(platform_ptrace, protect_changes_what_the_guest_may_do)
{
	struct platform_event ev;

	LOAD(snip_store);
	regs.rbx = RO_ADDR;
	cr_assert_eq(ops()->as_protect(as, RO_ADDR, 4096, PROT_READ | PROT_WRITE), 0);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(data_word(RO_OFF), 7);

	LOAD(snip_store);
	regs.rbx = DATA_ADDR;
	cr_assert_eq(ops()->as_protect(as, DATA_ADDR, 4096, PROT_READ), 0);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_FAULT);
	cr_assert_eq(ev.code, SEGV_ACCERR);
	cr_assert_eq(ev.addr, DATA_ADDR);
}

Test(platform_ptrace, unmap_then_access_faults)
{
	struct platform_event ev;

	*(uint64_t *)(mem + DATA_OFF) = 42;
	LOAD(snip_load);
	regs.rbx = DATA_ADDR;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(regs.rdi, 42);

	cr_assert_eq(ops()->as_unmap(as, DATA_ADDR, 4096), 0);
	LOAD(snip_load);
	regs.rbx = DATA_ADDR;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_FAULT);
	cr_assert_eq(ev.signo, SIGSEGV);
	cr_assert_eq(ev.code, SEGV_MAPERR);
	cr_assert_eq(ev.addr, DATA_ADDR);
}

Test(platform_ptrace, fs_base_is_visible_to_the_guest)
{
	struct platform_event ev;

	*(uint64_t *)(mem + DATA_OFF + 0x40) = 0xfeedfacecafeULL;
	LOAD(snip_fs);
	regs.fs_base = DATA_ADDR + 0x40;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(regs.rdi, 0xfeedfacecafeULL);
	cr_assert_eq(regs.fs_base, DATA_ADDR + 0x40);
}

Test(platform_ptrace, zero_selectors_mean_the_64_bit_defaults)
{
	struct platform_event ev;

	LOAD(snip_syscall);
	regs.cs = 0;
	regs.ss = 0;
	regs.rax = 39;
	regs.rbx = DATA_ADDR;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(regs.cs, 0x33);
	cr_assert_eq(regs.ss, 0x2b);
}

/* The first line of /proc/<pid>/<file> that starts with key, or "" */
static void proc_line(pid_t pid, const char *file, const char *key, char *out, size_t len)
{
	char path[64], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, file);
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

Test(platform_ptrace, stub_runs_under_its_seccomp_filter_named_husk_stub)
{
	pid_t pid = ptrace_as_stub_pid(as);
	char line[512];

	cr_assert_gt(pid, 0);
	proc_line(pid, "status", "Seccomp:", line, sizeof(line));
	cr_assert_str_eq(line, "Seccomp:\t2\n");
	proc_line(pid, "status", "NoNewPrivs:", line, sizeof(line));
	cr_assert_str_eq(line, "NoNewPrivs:\t1\n");
	proc_line(pid, "comm", "", line, sizeof(line));
	cr_assert_str_eq(line, "husk-stub\n");
}

Test(platform_ptrace, stub_holds_only_the_memory_file)
{
	pid_t pid = ptrace_as_stub_pid(as);
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
		cr_assert_eq(atoi(d->d_name), PTRACE_STUB_MEMFD, "stub holds fd %s", d->d_name);
	}
	closedir(dir);
	cr_assert_eq(count, 1);

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, PTRACE_STUB_MEMFD);
	n = readlink(path, target, sizeof(target) - 1);
	cr_assert_gt(n, 0);
	target[n] = 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	n = readlink(path, want, sizeof(want) - 1);
	cr_assert_gt(n, 0);
	want[n] = 0;
	cr_assert_str_eq(target, want);
}

Test(platform_ptrace, stub_maps_only_its_code_page_and_guest_memory)
{
	pid_t pid = ptrace_as_stub_pid(as);
	uint64_t code = ptrace_stub_code_page();
	int guest = 0, code_seen = 0, vsyscall = 0;
	char path[64], line[512];
	FILE *f;

	cr_assert_gt(code, 0);
	cr_assert_geq(code, PLATFORM_GUEST_MAX);
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;

		cr_assert_eq(sscanf(line, "%llx-%llx", &lo, &hi), 2);
		if (strstr(line, "[vsyscall]")) {
			vsyscall++;
		} else if (lo == code && hi == code + 4096) {
			code_seen++;
		} else {
			cr_assert(strstr(line, "/memfd:husk-test-mem"), "unexpected mapping: %s",
				  line);
			cr_assert(lo >= PLATFORM_GUEST_MIN && hi <= PLATFORM_GUEST_MAX, "%s", line);
			guest++;
		}
	}
	fclose(f);
	cr_assert_eq(code_seen, 1);
	cr_assert_leq(vsyscall, 1);
	cr_assert_eq(guest, 4); /* code, data, read-only, stack */
}

/* True if /proc/<pid>/maps has a mapping that contains addr. */
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

/* Sentry memory on both sides of the code page, and near the top, must not reach a stub. */
Test(platform_ptrace, stub_unmaps_sentry_memory_around_its_code_page)
{
	uint64_t code = ptrace_stub_code_page();
	uint64_t spots[] = { code - 4096, code + 4096, 0x7ffffff00000ULL };
	struct platform_as *as2;
	pid_t pid2;

	for (size_t i = 0; i < ARRAY_SIZE_(spots); i++) {
		void *m = mmap((void *)spots[i], 4096, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

		if (m == MAP_FAILED) /* already in use by this process: just as good */
			cr_assert_eq(errno, EEXIST);
		cr_assert(maps_contain(getpid(), spots[i]));
	}
	cr_assert_eq(ops()->as_create(plat, &as2), 0);
	pid2 = ptrace_as_stub_pid(as2);
	for (size_t i = 0; i < ARRAY_SIZE_(spots); i++)
		cr_assert_not(maps_contain(pid2, spots[i]), "stub still maps %#llx",
			      (unsigned long long)spots[i]);
	cr_assert(maps_contain(pid2, code));
	ops()->as_destroy(as2);
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

Test(platform_ptrace, as_destroy_leaves_no_process_and_no_fd)
{
	struct platform_as *as2;
	pid_t pid, pid2;
	int fds;

	fds = count_fds();
	cr_assert_eq(ops()->as_create(plat, &as2), 0);
	pid2 = ptrace_as_stub_pid(as2);
	cr_assert_gt(pid2, 0);
	cr_assert_eq(kill(pid2, 0), 0);
	ops()->as_destroy(as2);
	cr_assert_eq(count_fds(), fds);
	cr_assert_eq(kill(pid2, 0), -1);
	cr_assert_eq(errno, ESRCH);

	pid = ptrace_as_stub_pid(as);
	ops()->as_destroy(as);
	as = NULL;
	cr_assert_eq(kill(pid, 0), -1);
	cr_assert_eq(errno, ESRCH);
	/* The template stub and the stub kept ready go with the platform. */
	platform_destroy(plat);
	plat = NULL;
	cr_assert_eq(waitpid(-1, NULL, WNOHANG | __WALL), -1);
	cr_assert_eq(errno, ECHILD);
}

/* The number after `key` in /proc/pid/status, or -1. */
static long status_number(pid_t pid, const char *key)
{
	char line[256];

	proc_line(pid, "status", key, line, sizeof(line));
	return line[0] ? strtol(line + strlen(key), NULL, 10) : -1;
}

Test(platform_ptrace, stubs_after_the_first_are_forked_from_a_template_with_the_child_filter)
{
	struct platform_as *as2, *as3;
	pid_t pid = ptrace_as_stub_pid(as), pid2, pid3;

	cr_assert_eq(ops()->as_create(plat, &as2), 0);
	cr_assert_eq(ops()->as_create(plat, &as3), 0);
	pid2 = ptrace_as_stub_pid(as2);
	pid3 = ptrace_as_stub_pid(as3);
	/* CLONE_PARENT: the template's parent (this process) is theirs, so this process reaps. */
	cr_assert_eq(status_number(pid, "PPid:"), getpid());
	cr_assert_eq(status_number(pid2, "PPid:"), getpid());
	cr_assert_eq(status_number(pid3, "PPid:"), getpid());
	/*
	 * The first space's stub was forked by the caller (its filter alone); the next ones come
	 * from the template: its filter and the child filter that forbids forking again.
	 */
	cr_assert_eq(status_number(pid, "Seccomp_filters:"), 1);
	cr_assert_eq(status_number(pid2, "Seccomp_filters:"), 2);
	cr_assert_eq(status_number(pid3, "Seccomp_filters:"), 2);
	/* Traced by the thread that created the space (PTRACE_SEIZE), not by the factory. */
	cr_assert_eq(status_number(pid, "TracerPid:"), gettid());
	cr_assert_eq(status_number(pid2, "TracerPid:"), gettid());
	cr_assert_eq(status_number(pid3, "TracerPid:"), gettid());
	ops()->as_destroy(as3);
	ops()->as_destroy(as2);
}

Test(platform_ptrace, killed_stub_reports_died)
{
	struct platform_event ev;

	LOAD(snip_spin);
	regs.rbx = DATA_ADDR;
	cr_assert_eq(kill(ptrace_as_stub_pid(as), SIGKILL), 0);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_DIED);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_DIED);
	cr_assert_eq(ops()->as_map(as, EXTRA_ADDR, 4096, PROT_READ, EXTRA_OFF), -ESRCH);
}

Test(platform_ptrace, mappings_outside_the_guest_range_are_refused)
{
	uint64_t code = ptrace_stub_code_page();

	cr_assert_eq(ops()->as_map(as, code, 4096, PROT_READ, 0), -EINVAL);
	cr_assert_eq(ops()->as_map(as, PLATFORM_GUEST_MAX - 4096, 8192, PROT_READ, 0), -EINVAL);
	cr_assert_eq(ops()->as_map(as, 0, 4096, PROT_READ, 0), -EINVAL);
	cr_assert_eq(ops()->as_map(as, EXTRA_ADDR + 1, 4096, PROT_READ, 0), -EINVAL);
	cr_assert_eq(ops()->as_map(as, EXTRA_ADDR, 4096, PROT_READ, 1), -EINVAL);
	cr_assert_eq(ops()->as_map(as, EXTRA_ADDR, 0, PROT_READ, 0), -EINVAL);
	cr_assert_eq(ops()->as_map(as, EXTRA_ADDR, 4096, PROT_READ | PROT_GROWSDOWN, 0), -EINVAL);
	cr_assert_eq(ops()->as_unmap(as, code, 4096), -EINVAL);
	cr_assert_eq(ops()->as_protect(as, code, 4096, PROT_READ), -EINVAL);
	cr_assert_eq(ops()->as_map(as, UINT64_MAX & ~4095ULL, 8192, PROT_READ, 0), -EINVAL);
}

/* Runs snip_syscall in ctx c with rax = nr, rbx = where to store the result; checks the stop. */
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

static int count_children(void)
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
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t len = fread(buf, 1, sizeof(buf) - 1, f);
		buf[len] = 0;
		fclose(f);
		for (char *p = strtok(buf, " \n"); p; p = strtok(NULL, " \n"))
			n++;
	}
	closedir(dir);
	return n;
}

static int count_threads_of(pid_t pid)
{
	char path[64];
	int n = 0;
	struct dirent *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	DIR *dir = opendir(path);
	if (!dir)
		return 0;
	while ((d = readdir(dir)))
		n += d->d_name[0] != '.';
	closedir(dir);
	return n;
}

Test(platform_ptrace, a_second_ctx_is_a_new_stub_thread_sharing_memory)
{
	struct platform_ctx *ctx2;

	LOAD(snip_syscall);
	cr_assert_eq(ops()->ctx_create(as, &ctx2), 0);
	cr_assert_neq(ctx2, ctx);
	cr_assert_eq(count_threads_of(ptrace_as_stub_pid(as)), 2);
	run_syscall_in(ctx2, 39, DATA_ADDR);
	cr_assert_eq(data_word(DATA_OFF), 39000);
	run_syscall_in(ctx, 102, DATA_ADDR + 8);
	cr_assert_eq(data_word(DATA_OFF + 8), 102000);
	/* Ending one guest thread ends its stub thread only. */
	ops()->ctx_destroy(ctx2);
	cr_assert_eq(count_threads_of(ptrace_as_stub_pid(as)), 1);
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

Test(platform_ptrace, a_cloned_ctx_is_driven_by_the_thread_that_adopts_it)
{
	struct adopter a = { .destroy = true };
	struct platform_event ev;
	pthread_t th;

	LOAD(snip_syscall);
	cr_assert_eq(ops()->ctx_clone(ctx, &a.c), 0);
	/* Not adopted yet: nobody may drive it. */
	cr_assert_eq(ops()->ctx_switch(a.c, &regs, &ev), -EPERM);
	cr_assert_eq(pthread_create(&th, NULL, adopt_and_run, &a), 0);
	pthread_join(th, NULL);
	cr_assert_eq(a.adopt_ret, 0);
	cr_assert_eq(data_word(DATA_OFF + 16), 39000);
	cr_assert_eq(count_threads_of(ptrace_as_stub_pid(as)), 1);
	run_syscall_in(ctx, 39, DATA_ADDR);
}

Test(platform_ptrace, a_clone_never_adopted_is_ended_by_its_creator)
{
	struct platform_ctx *c2;

	cr_assert_eq(ops()->ctx_clone(ctx, &c2), 0);
	cr_assert_eq(count_threads_of(ptrace_as_stub_pid(as)), 2);
	ops()->ctx_destroy(c2);
	cr_assert_eq(count_threads_of(ptrace_as_stub_pid(as)), 1);
	LOAD(snip_syscall);
	run_syscall_in(ctx, 39, DATA_ADDR);
}

struct spinner {
	struct platform_ctx *c;
	struct platform_event ev;
	arch_regs_t r;
};

static void *adopt_and_spin(void *arg)
{
	struct spinner *sp = arg;

	cr_assert_eq(ops()->ctx_adopt(sp->c), 0);
	memset(&sp->r, 0, sizeof(sp->r));
	sp->r.rip = CODE_ADDR;
	sp->r.eflags = 0x202;
	sp->r.rbx = EXTRA_ADDR;
	sp->r.rcx = DATA_ADDR;
	cr_assert_eq(ops()->ctx_switch(sp->c, &sp->r, &sp->ev), 0);
	ops()->ctx_destroy(sp->c);
	return NULL;
}

Test(platform_ptrace, an_unmap_by_one_thread_holds_for_a_thread_running_guest_code)
{
	struct spinner sp;
	pthread_t th;

	LOAD(snip_load_loop);
	cr_assert_eq(ops()->as_map(as, EXTRA_ADDR, 4096, PROT_READ, EXTRA_OFF), 0);
	cr_assert_eq(ops()->ctx_clone(ctx, &sp.c), 0);
	cr_assert_eq(pthread_create(&th, NULL, adopt_and_spin, &sp), 0);
	while (data_word(DATA_OFF) != 1)
		sched_yield();
	/* The other thread is reading EXTRA_ADDR in a loop; when this returns it is gone. */
	cr_assert_eq(ops()->as_unmap(as, EXTRA_ADDR, 4096), 0);
	pthread_join(th, NULL);
	cr_assert_eq(sp.ev.kind, PLATFORM_EV_FAULT);
	cr_assert_eq(sp.ev.signo, SIGSEGV);
	cr_assert_eq(sp.ev.code, SEGV_MAPERR);
	cr_assert_eq(sp.ev.addr, EXTRA_ADDR);
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
	cr_assert_eq(ops()->as_map(c->as, CODE_ADDR, 4096, PROT_READ | PROT_EXEC, CODE_OFF), 0);
	cr_assert_eq(ops()->as_map(c->as, DATA_ADDR, 4096, PROT_READ | PROT_WRITE, DATA_OFF), 0);
	cr_assert_eq(ops()->as_map(c->as, STACK_ADDR, 4096, PROT_READ | PROT_WRITE, STACK_OFF), 0);
	cr_assert_eq(ops()->ctx_create(c->as, &mine), 0);
	cr_assert_eq(ops()->ctx_clone(mine, &c->for_main), 0);
	ops()->ctx_destroy(mine);
	return NULL;
}

Test(platform_ptrace, the_process_outlives_the_host_thread_that_made_it)
{
	struct creator c;
	pthread_t th;

	LOAD(snip_syscall);
	cr_assert_eq(pthread_create(&th, NULL, create_space_and_leave, &c), 0);
	pthread_join(th, NULL);
	/* Its initial thread has exited and its creator is gone: the clone still runs. */
	cr_assert_eq(ops()->ctx_adopt(c.for_main), 0);
	run_syscall_in(c.for_main, 39, DATA_ADDR + 24);
	cr_assert_eq(data_word(DATA_OFF + 24), 39000);
	/* Mappings go through the thread this one traces. */
	cr_assert_eq(ops()->as_map(c.as, EXTRA_ADDR, 4096, PROT_READ, EXTRA_OFF), 0);
	ops()->ctx_destroy(c.for_main);
	pid_t pid = ptrace_as_stub_pid(c.as);
	ops()->as_destroy(c.as);
	cr_assert_eq(kill(pid, 0), -1);
}

static void *churn_threads(void *arg)
{
	for (int i = 0; i < 200; i++) {
		struct adopter a = { .destroy = true };
		pthread_t th;

		cr_assert_eq(ops()->ctx_clone(ctx, &a.c), 0);
		cr_assert_eq(pthread_create(&th, NULL, adopt_and_run, &a), 0);
		pthread_join(th, NULL);
		cr_assert_eq(a.adopt_ret, 0);
	}
	return NULL;
}

Test(platform_ptrace, first_space_starts_no_template_factory)
{
	/* The fixture made one space: its stub is this process's only child (no template). */
	cr_assert_eq(count_children(), 1);
}

Test(platform_ptrace, churning_spaces_and_threads_leaves_nothing_behind)
{
	struct platform_as *first;
	int fds, children;
	pid_t pid = ptrace_as_stub_pid(as);

	/* The second space starts the template factory: its stubs are counted from then on. */
	cr_assert_eq(ops()->as_create(plat, &first), 0);
	ops()->as_destroy(first);
	for (int i = 0; i < 500 && count_children() != 3; i++)
		usleep(10000);
	fds = count_fds();
	children = count_children();
	cr_assert_eq(children, 3, "the stub, the template and the stub kept ready");
	LOAD(snip_syscall);
	churn_threads(NULL);
	cr_assert_eq(count_threads_of(pid), 1);
	for (int i = 0; i < 500; i++) {
		struct platform_as *a2;
		struct platform_ctx *c2;

		cr_assert_eq(ops()->as_create(plat, &a2), 0);
		cr_assert_eq(ops()->ctx_create(a2, &c2), 0);
		ops()->ctx_destroy(c2);
		ops()->as_destroy(a2);
	}
	/*
	 * The template factory replaces the stub as_create took in the background, so for a
	 * moment there may be one child more or less: wait (up to 5 s) for it to settle before
	 * comparing. A leak keeps the count off for good.
	 */
	for (int i = 0; i < 500 && (count_children() != children || count_fds() != fds); i++)
		usleep(10000);
	cr_assert_eq(count_fds(), fds);
	cr_assert_eq(count_children(), children);
	run_syscall_in(ctx, 39, DATA_ADDR);
}

static void *switch_from_other_thread(void *arg)
{
	struct platform_event ev;

	return (void *)(long)ops()->ctx_switch(ctx, &regs, &ev);
}

Test(platform_ptrace, switch_from_another_thread_is_refused)
{
	pthread_t th;
	void *ret;

	cr_assert_eq(pthread_create(&th, NULL, switch_from_other_thread, NULL), 0);
	cr_assert_eq(pthread_join(th, &ret), 0);
	cr_assert_eq((long)ret, -EPERM);
}

static void *map_from_other_thread(void *arg)
{
	return (void *)(long)ops()->as_map(as, EXTRA_ADDR, 4096, PROT_READ, EXTRA_OFF);
}

Test(platform_ptrace, map_from_another_thread_applies_at_next_switch)
{
	struct platform_event ev;
	pthread_t th;
	void *ret;

	*(uint64_t *)(mem + EXTRA_OFF) = 99;
	cr_assert_eq(pthread_create(&th, NULL, map_from_other_thread, NULL), 0);
	cr_assert_eq(pthread_join(th, &ret), 0);
	cr_assert_eq((long)ret, 0);
	LOAD(snip_load);
	regs.rbx = EXTRA_ADDR;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL, "kind %d signo %d", ev.kind, ev.signo);
	cr_assert_eq(regs.rdi, 99);
}

struct interrupter {
	bool extra_signals;
};

/* Waits until the guest runs its spin loop, then interrupts it. */
static void *interrupt_when_spinning(void *arg)
{
	struct interrupter *it = arg;
	pid_t pid = ptrace_as_stub_pid(as);

	while (data_word(DATA_OFF) != 1)
		sched_yield();
	if (it->extra_signals) {
		kill(pid, SIGWINCH);
		kill(pid, SIGSTOP);
		kill(pid, SIGSEGV); /* sent, not raised by the guest: not a fault */
	}
	ops()->ctx_interrupt(ctx);
	return NULL;
}

Test(platform_ptrace, interrupt_from_another_thread_stops_a_spinning_guest)
{
	struct interrupter it = { .extra_signals = false };
	struct platform_event ev;
	pthread_t th;

	LOAD(snip_spin);
	regs.rbx = DATA_ADDR;
	cr_assert_eq(pthread_create(&th, NULL, interrupt_when_spinning, &it), 0);
	ev = run();
	pthread_join(th, NULL);
	cr_assert_eq(ev.kind, PLATFORM_EV_INTERRUPT);
	cr_assert_eq(data_word(DATA_OFF), 1);
	cr_assert(regs.rip > CODE_ADDR && regs.rip < CODE_ADDR + 32, "rip %#llx", regs.rip);
}

Test(platform_ptrace, foreign_signals_are_suppressed)
{
	struct interrupter it = { .extra_signals = true };
	struct platform_event ev;
	pthread_t th;

	LOAD(snip_spin);
	regs.rbx = DATA_ADDR;
	cr_assert_eq(pthread_create(&th, NULL, interrupt_when_spinning, &it), 0);
	ev = run();
	pthread_join(th, NULL);
	cr_assert_eq(ev.kind, PLATFORM_EV_INTERRUPT, "kind %d signo %d", ev.kind, ev.signo);
	/* Still alive and not group-stopped: it runs on to its next system call. */
	LOAD(snip_syscall);
	regs.rax = 39;
	regs.rbx = DATA_ADDR;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL, "kind %d signo %d", ev.kind, ev.signo);
}

Test(platform_ptrace, interrupt_before_switch_is_reported_once)
{
	struct platform_event ev;

	LOAD(snip_syscall);
	regs.rax = 39;
	regs.rbx = DATA_ADDR;
	ops()->ctx_interrupt(ctx);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_INTERRUPT);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(regs.orig_rax, 39);
}

Test(platform_ptrace, interrupt_survives_a_mapping_change_before_the_switch)
{
	struct platform_event ev;

	LOAD(snip_syscall);
	regs.rax = 39;
	regs.rbx = DATA_ADDR;
	ops()->ctx_interrupt(ctx);
	/* The stub runs the mmap with the interrupt signal pending and swallows it. */
	cr_assert_eq(ops()->as_map(as, EXTRA_ADDR, 4096, PROT_READ, EXTRA_OFF), 0);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_INTERRUPT);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
}

static void *protect_unmapped_from_other_thread(void *arg)
{
	return (void *)(long)ops()->as_protect(as, EXTRA_ADDR, 4096, PROT_READ);
}

Test(platform_ptrace, queued_change_that_fails_is_reported_by_the_next_switch)
{
	struct platform_event ev;
	pthread_t th;
	void *ret;

	cr_assert_eq(pthread_create(&th, NULL, protect_unmapped_from_other_thread, NULL), 0);
	cr_assert_eq(pthread_join(th, &ret), 0);
	cr_assert_eq((long)ret, 0);
	LOAD(snip_syscall);
	cr_assert_eq(ops()->ctx_switch(ctx, &regs, &ev), -ENOMEM);
}

/* A sentry thread may block signals; its stubs must still see the interrupt signal. */
Test(platform_ptrace, interrupt_works_when_the_tracer_blocks_signals)
{
	struct interrupter it = { .extra_signals = false };
	struct platform_event ev;
	sigset_t blocked;
	pthread_t th;

	teardown();
	/* Not every signal: criterion's own timeout must still get through. */
	sigemptyset(&blocked);
	sigaddset(&blocked, PTRACE_INTERRUPT_SIGNAL);
	sigaddset(&blocked, SIGUSR1);
	sigaddset(&blocked, SIGTERM);
	sigaddset(&blocked, SIGWINCH);
	cr_assert_eq(pthread_sigmask(SIG_BLOCK, &blocked, NULL), 0);
	setup();
	LOAD(snip_spin);
	regs.rbx = DATA_ADDR;
	cr_assert_eq(pthread_create(&th, NULL, interrupt_when_spinning, &it), 0);
	ev = run();
	pthread_join(th, NULL);
	cr_assert_eq(ev.kind, PLATFORM_EV_INTERRUPT);
}

Test(platform_ptrace, fpstate_round_trips_through_the_guest)
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

	LOAD(snip_xmm);
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

Test(platform_create, unknown_name_is_enoent)
{
	struct platform *p = NULL;
	int fd = memfd_create("x", MFD_CLOEXEC);

	cr_assert_eq(platform_create("kvm-nope", fd, &p), -ENOENT);
	cr_assert_null(p);
	close(fd);
}

Test(platform_create, closed_memfd_is_ebadf)
{
	struct platform *p = NULL;

	cr_assert_eq(platform_create("ptrace", 987, &p), -EBADF);
	cr_assert_null(p);
}

/*
 * Like a sentry whose seccomp filter lacks sched_setaffinity: the test process (and the stubs it
 * forks) die if anything calls it. Stubs must still come up and run guest code.
 */
Test(platform_create, works_under_a_sentry_filter_without_sched_setaffinity)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sched_setaffinity, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = ARRAY_SIZE_(filter), .filter = filter };
	struct platform_event ev;

	cr_assert_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	cr_assert_eq(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog), 0);
	setup();
	LOAD(snip_syscall);
	regs.rax = 39;
	regs.rbx = DATA_ADDR;
	for (int i = 0; i < 100; i++) {
		ev = run();
		cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
		regs.rip -= 2; /* again */
		regs.rax = 39;
	}
	teardown();
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Not an assertion on time: prints the cost of one guest system call round trip. */
Test(platform_ptrace, syscall_round_trip_benchmark)
{
	enum { N = 20000 };
	struct platform_event ev;
	double t0, t1;

	LOAD(snip_loop);
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
	fprintf(stderr, "ptrace platform: %d guest syscall round trips, %.2f us each\n", N,
		(t1 - t0) / N);
}

/* Not a check: prints what a new address space costs (as_create + as_destroy). */
Test(platform_create, as_create_benchmark)
{
	struct platform *p;
	struct timespec t0, t1;
	int fd = memfd_create("husk-bench", MFD_CLOEXEC);
	const int n = 200;

	cr_assert_geq(fd, 0);
	cr_assert_eq(platform_create("ptrace", fd, &p), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < n; i++) {
		struct platform_as *a;

		cr_assert_eq(p->ops->as_create(p, &a), 0);
		p->ops->as_destroy(a);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("ptrace platform: as_create + as_destroy %.1f us each\n",
	       ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / n /
		       1e3);
	platform_destroy(p);
	close(fd);
}
