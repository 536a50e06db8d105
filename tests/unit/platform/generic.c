/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The generic behaviour of a platform backend against real guest code, through platform_ops
 * only: each test writes a few instructions into its own memory file, maps them into a fresh stub
 * and checks what comes back from ctx_switch. Compiled into each backend's test executable
 * (generic.h says how); the backend's own file supplies test_backend.
 *
 * The test plays the sentry: it gives the platform a memory file and, as the sentry does for
 * every backend, the mem_alloc/mem_free pair (a bump allocator with a free list that counts the
 * bytes out, so that leaks show).
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "generic.h"

SNIPPET(snip_syscall, "syscall\n"
		      "mov %rax, (%rbx)\n"
		      "mov $60, %eax\n"
		      "syscall\n"
		      "ud2\n");
SNIPPET(snip_load, "mov (%rbx), %rdi\n"
		   "mov $39, %eax\n"
		   "syscall\n"
		   "ud2\n");
SNIPPET(snip_store, "movq $7, (%rbx)\n"
		    "mov $39, %eax\n"
		    "syscall\n"
		    "ud2\n");
SNIPPET(snip_spin, "movq $1, (%rbx)\n"
		   "1: jmp 1b\n");
SNIPPET(snip_ud2, "ud2\n");
/* rdi = *(uint64_t *)fs_base, rsi = *(uint64_t *)gs_base, then syscall(39) */
SNIPPET(snip_fs, "mov %fs:0, %rdi\n"
		 "mov %gs:0, %rsi\n"
		 "mov $39, %eax\n"
		 "syscall\n"
		 "ud2\n");
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

int memfd = -1;
uint8_t *mem;
struct platform *plat;
struct platform_as *as;
struct platform_ctx *ctx;
arch_regs_t regs;

/* ---- the memory pool the platform takes its pages from ---------------------------------- */

struct pool_block {
	uint64_t off, len;
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t pool_next = POOL_OFF;
static uint64_t pool_out; /* bytes handed out and not given back */
static struct pool_block pool_free_list[8192];
static size_t pool_nfree;
static struct pool_block pool_last[8]; /* the last allocation of each size */
static int pool_nbad;

static void pool_note_last(uint64_t off, uint64_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE_(pool_last); i++) {
		if (pool_last[i].len == len || pool_last[i].len == 0) {
			pool_last[i] = (struct pool_block){ off, len };
			return;
		}
	}
}

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
		pool_note_last((uint64_t)off, len);
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
		pool_nbad++;
	else {
		pool_free_list[pool_nfree++] = (struct pool_block){ off, len };
		pool_out -= len;
	}
	pthread_mutex_unlock(&pool_lock);
}

uint64_t pool_bytes_out(void)
{
	uint64_t n;

	pthread_mutex_lock(&pool_lock);
	n = pool_out;
	pthread_mutex_unlock(&pool_lock);
	return n;
}

int pool_bad_frees(void)
{
	int n;

	pthread_mutex_lock(&pool_lock);
	n = pool_nbad;
	pthread_mutex_unlock(&pool_lock);
	return n;
}

int64_t pool_last_alloc(uint64_t len)
{
	int64_t off = -1;

	pthread_mutex_lock(&pool_lock);
	for (size_t i = 0; i < ARRAY_SIZE_(pool_last); i++) {
		if (pool_last[i].len == len)
			off = (int64_t)pool_last[i].off;
	}
	pthread_mutex_unlock(&pool_lock);
	return off;
}

/* ---- fixture ----------------------------------------------------------------------------- */

const struct platform_ops *ops(void)
{
	return plat->ops;
}

void load_code_at(unsigned long at, const char *start, const char *end)
{
	memcpy(mem + CODE_OFF + at, start, (size_t)(end - start));
}

void load_code(const char *start, const char *end)
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

void map_guest(struct platform_as *a)
{
	cr_assert_eq(ops()->as_map(a, CODE_ADDR, 4096, PROT_READ | PROT_EXEC, CODE_OFF), 0);
	cr_assert_eq(ops()->as_map(a, DATA_ADDR, 4096, PROT_READ | PROT_WRITE, DATA_OFF), 0);
	cr_assert_eq(ops()->as_map(a, RO_ADDR, 4096, PROT_READ, RO_OFF), 0);
	cr_assert_eq(ops()->as_map(a, STACK_ADDR, 4096, PROT_READ | PROT_WRITE, STACK_OFF), 0);
}

void setup_platform(void)
{
	if (test_backend.init)
		test_backend.init();
	memfd = memfd_create("husk-test-mem", MFD_CLOEXEC);
	cr_assert_geq(memfd, 0);
	cr_assert_eq(ftruncate(memfd, (off_t)MEM_SIZE), 0);
	mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	cr_assert_neq(mem, MAP_FAILED);
	cr_assert_eq(platform_create(test_backend.name, memfd, &plat), 0);
	cr_assert_str_eq(plat->ops->name, test_backend.name);
	plat->mem_base = mem;
	plat->mem_alloc = pool_alloc;
	plat->mem_free = pool_free;
	plat->mem_arg = &pool_next;
}

void setup_space(void)
{
	cr_assert_eq(ops()->as_create(plat, &as), 0);
	/* Mappings before the first ctx exists (the loader's case). */
	map_guest(as);
	cr_assert_eq(ops()->ctx_create(as, &ctx), 0);
}

void setup(void)
{
	setup_platform();
	setup_space();
}

void teardown(void)
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

struct platform_event run_in(struct platform_ctx *c, arch_regs_t *r)
{
	struct platform_event ev;

	cr_assert_eq(ops()->ctx_switch(c, r, &ev), 0);
	return ev;
}

struct platform_event run(void)
{
	return run_in(ctx, &regs);
}

void run_getpid(void)
{
	struct platform_event ev;

	LOAD(snip_syscall);
	regs.rax = 39;
	regs.rbx = DATA_ADDR;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL, "kind %d signo %d", ev.kind, ev.signo);
	cr_assert_eq(regs.orig_rax, 39);
}

void run_syscall_in(struct platform_ctx *c, uint64_t nr, uint64_t store_at)
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

uint64_t data_word(unsigned long off)
{
	return __atomic_load_n((uint64_t *)(mem + off), __ATOMIC_ACQUIRE);
}

pid_t stub_pid_of(struct platform_as *a)
{
	pid_t pid = test_backend.stub_pid(a);

	cr_assert_gt(pid, 0);
	return pid;
}

pid_t stub_pid(void)
{
	return stub_pid_of(as);
}

/* ---- what /proc says ------------------------------------------------------------------------ */

void proc_line(const char *dir, const char *file, const char *key, char *out, size_t len)
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

long status_number(const char *dir, const char *key)
{
	char line[512];

	proc_line(dir, "status", key, line, sizeof(line));
	return line[0] ? strtol(line + strlen(key), NULL, 10) : -1;
}

long pid_status_number(pid_t pid, const char *key)
{
	char dir[64];

	snprintf(dir, sizeof(dir), "/proc/%d", pid);
	return status_number(dir, key);
}

void check_husk_stub_under_filter(const char *dir)
{
	char line[512];

	proc_line(dir, "status", "Seccomp:", line, sizeof(line));
	cr_assert_str_eq(line, "Seccomp:\t2\n", "%s: %s", dir, line);
	proc_line(dir, "status", "NoNewPrivs:", line, sizeof(line));
	cr_assert_str_eq(line, "NoNewPrivs:\t1\n", "%s: %s", dir, line);
	proc_line(dir, "comm", "", line, sizeof(line));
	cr_assert_str_eq(line, "husk-stub\n", "%s: %s", dir, line);
}

void fd_target(pid_t pid, int fd, char *out, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
	n = readlink(path, out, len - 1);
	cr_assert_gt(n, 0, "%s: %s", path, strerror(errno));
	out[n] = 0;
}

void check_fds_are(pid_t pid, const int *want, size_t n)
{
	char path[64], target[256], ours[256];
	struct dirent *d;
	size_t count = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	dir = opendir(path);
	cr_assert_not_null(dir);
	while ((d = readdir(dir))) {
		bool wanted = false;

		if (d->d_name[0] == '.')
			continue;
		count++;
		for (size_t i = 0; i < n; i++)
			wanted |= atoi(d->d_name) == want[i];
		cr_assert(wanted, "process %d holds fd %s", pid, d->d_name);
	}
	closedir(dir);
	cr_assert_eq(count, n);
	fd_target(pid, want[0], target, sizeof(target));
	fd_target(getpid(), memfd, ours, sizeof(ours));
	cr_assert_str_eq(target, ours);
}

FILE *open_maps(pid_t pid)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	return f;
}

bool maps_contain(pid_t pid, uint64_t addr)
{
	char line[512];
	bool found = false;
	FILE *f;

	f = open_maps(pid);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;

		if (sscanf(line, "%llx-%llx", &lo, &hi) == 2 && addr >= lo && addr < hi)
			found = true;
	}
	fclose(f);
	return found;
}

void occupy_pages(const uint64_t *addrs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		void *m = mmap((void *)addrs[i], 4096, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

		if (m == MAP_FAILED) /* already in use by this process: just as good */
			cr_assert_eq(errno, EEXIST);
		cr_assert(maps_contain(getpid(), addrs[i]));
	}
}

int count_fds(void)
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

int list_children(pid_t *out, int max)
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

int count_children(void)
{
	return list_children(NULL, 0);
}

int threads_of(pid_t pid, pid_t *other)
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

/*
 * threads_of(pid) once it is want, or after 5 s: a backend may end a destroyed ctx's thread
 * without waiting for it (seccomp does), so the count settles shortly after ctx_destroy.
 */
int threads_settle(pid_t pid, int want)
{
	int n = threads_of(pid, NULL);

	for (int i = 0; i < 500 && n != want; i++) {
		usleep(10000);
		n = threads_of(pid, NULL);
	}
	return n;
}

void install_filter_killing(long nr)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = ARRAY_SIZE_(filter), .filter = filter };

	cr_assert_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	cr_assert_eq(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog), 0);
}

double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Adopts sp->c and switches it once with sp->r (the caller sets rip and the registers it uses). */
void *adopt_and_switch(void *arg)
{
	struct spinner *sp = arg;

	cr_assert_eq(ops()->ctx_adopt(sp->c), 0);
	sp->r.eflags = 0x202;
	sp->ret = ops()->ctx_switch(sp->c, &sp->r, &sp->ev);
	if (sp->destroy)
		ops()->ctx_destroy(sp->c);
	return NULL;
}

/* ---- system calls, faults, mappings ----------------------------------------------------- */

Test(GENERIC_SUITE, syscall_stops_with_number_and_arguments)
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

Test(GENERIC_SUITE, guest_sees_the_rax_the_sentry_sets)
{
	struct platform_event ev;

	run_getpid();
	regs.rax = 0x123456789abcULL;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(regs.orig_rax, 60);
	cr_assert_eq(data_word(DATA_OFF), 0x123456789abcULL);
}

Test(GENERIC_SUITE, guest_syscall_is_never_run_by_the_host)
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

/* Runs snip_load with rbx = addr and checks that it faults there with SIGSEGV/code. */
static struct platform_event check_load_faults(uint64_t addr, int code)
{
	struct platform_event ev;

	LOAD(snip_load);
	regs.rbx = addr;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_FAULT, "kind %d", ev.kind);
	cr_assert_eq(ev.signo, SIGSEGV);
	cr_assert_eq(ev.code, code);
	cr_assert_eq(ev.addr, addr);
	cr_assert_eq(regs.rip, CODE_ADDR, "rip %#llx is not the faulting instruction", regs.rip);
	return ev;
}

Test(GENERIC_SUITE, unmapped_access_faults_with_its_address)
{
	cr_assert_eq(check_load_faults(UNMAPPED_ADDR + 8, SEGV_MAPERR).trapno, 14);
}

Test(GENERIC_SUITE, fault_is_suppressed_and_retried_after_the_sentry_fixes_it)
{
	struct platform_event ev;

	check_load_faults(EXTRA_ADDR, SEGV_MAPERR);
	*(uint64_t *)(mem + EXTRA_OFF) = 0xabcdef;
	cr_assert_eq(ops()->as_map(as, EXTRA_ADDR, 4096, PROT_READ, EXTRA_OFF), 0);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(regs.rdi, 0xabcdef);
}

/* The usual case: a guest mmap whose handler maps the range before the guest resumes. */
Test(GENERIC_SUITE, map_at_a_syscall_stop_is_there_when_the_guest_resumes)
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

Test(GENERIC_SUITE, ud2_gives_sigill)
{
	struct platform_event ev;

	LOAD(snip_ud2);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_FAULT);
	cr_assert_eq(ev.signo, SIGILL);
	cr_assert_eq(ev.code, ILL_ILLOPN);
	cr_assert_eq(ev.addr, CODE_ADDR);
	cr_assert_eq(ev.trapno, 6);
	cr_assert_eq(regs.rip, CODE_ADDR);
}

Test(GENERIC_SUITE, int80_gives_sigsegv_at_the_instruction)
{
	struct platform_event ev;

	LOAD(snip_int80);
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

void check_store_is_refused(uint64_t addr)
{
	struct platform_event ev;

	LOAD(snip_store);
	regs.rbx = addr;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_FAULT, "%#llx: kind %d", (unsigned long long)addr,
		     ev.kind);
	cr_assert_eq(ev.signo, SIGSEGV);
	cr_assert_eq(ev.code, SEGV_ACCERR);
	cr_assert_eq(ev.addr, addr);
	cr_assert_eq(regs.rip, CODE_ADDR);
}

Test(GENERIC_SUITE, write_to_read_only_page_faults)
{
	check_store_is_refused(RO_ADDR);
	cr_assert_eq(data_word(RO_OFF), 0);
}

Test(GENERIC_SUITE, protect_changes_what_the_guest_may_do)
{
	struct platform_event ev;

	LOAD(snip_store);
	regs.rbx = RO_ADDR;
	cr_assert_eq(ops()->as_protect(as, RO_ADDR, 4096, PROT_READ | PROT_WRITE), 0);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(data_word(RO_OFF), 7);

	cr_assert_eq(ops()->as_protect(as, DATA_ADDR, 4096, PROT_READ), 0);
	check_store_is_refused(DATA_ADDR);
}

Test(GENERIC_SUITE, unmap_then_access_faults)
{
	struct platform_event ev;

	*(uint64_t *)(mem + DATA_OFF) = 42;
	LOAD(snip_load);
	regs.rbx = DATA_ADDR;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(regs.rdi, 42);

	cr_assert_eq(ops()->as_unmap(as, DATA_ADDR, 4096), 0);
	check_load_faults(DATA_ADDR, SEGV_MAPERR);
}

Test(GENERIC_SUITE, fs_and_gs_base_are_visible_to_the_guest)
{
	struct platform_event ev;

	*(uint64_t *)(mem + DATA_OFF + 0x40) = 0xfeedfacecafeULL;
	*(uint64_t *)(mem + DATA_OFF + 0x80) = 0x600dbeefULL;
	LOAD(snip_fs);
	regs.fs_base = DATA_ADDR + 0x40;
	regs.gs_base = DATA_ADDR + 0x80;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(regs.rdi, 0xfeedfacecafeULL);
	cr_assert_eq(regs.rsi, 0x600dbeefULL);
	cr_assert_eq(regs.fs_base, DATA_ADDR + 0x40);
	cr_assert_eq(regs.gs_base, DATA_ADDR + 0x80);
}

Test(GENERIC_SUITE, zero_selectors_mean_the_64_bit_defaults)
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

Test(GENERIC_SUITE, mappings_outside_the_guest_range_are_refused)
{
	uint64_t own[4];
	size_t n = test_backend.own_pages(own, ARRAY_SIZE_(own));

	cr_assert_gt(n, 0);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(ops()->as_map(as, own[i], 4096, PROT_READ | PROT_WRITE, 0), -EINVAL);
		cr_assert_eq(ops()->as_unmap(as, own[i], 4096), -EINVAL);
		cr_assert_eq(ops()->as_protect(as, own[i], 4096, PROT_READ | PROT_WRITE), -EINVAL);
	}
	cr_assert_eq(ops()->as_map(as, PLATFORM_GUEST_MAX - 4096, 8192, PROT_READ, 0), -EINVAL);
	cr_assert_eq(ops()->as_map(as, 0, 4096, PROT_READ, 0), -EINVAL);
	cr_assert_eq(ops()->as_map(as, EXTRA_ADDR + 1, 4096, PROT_READ, 0), -EINVAL);
	cr_assert_eq(ops()->as_map(as, EXTRA_ADDR, 4096, PROT_READ, 1), -EINVAL);
	cr_assert_eq(ops()->as_map(as, EXTRA_ADDR, 0, PROT_READ, 0), -EINVAL);
	cr_assert_eq(ops()->as_map(as, EXTRA_ADDR, 4096, PROT_READ | PROT_GROWSDOWN, 0), -EINVAL);
	cr_assert_eq(ops()->as_map(as, UINT64_MAX & ~4095ULL, 8192, PROT_READ, 0), -EINVAL);
	/* Still alive and well. */
	run_getpid();
}

static void *map_from_other_thread(void *arg)
{
	(void)arg;
	return (void *)(long)ops()->as_map(as, EXTRA_ADDR, 4096, PROT_READ, EXTRA_OFF);
}

Test(GENERIC_SUITE, map_from_another_thread_applies_at_next_switch)
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

Test(GENERIC_SUITE, fpstate_round_trips_through_the_guest)
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

/* ---- threads ------------------------------------------------------------------------------- */

Test(GENERIC_SUITE, a_second_ctx_is_a_new_stub_thread_sharing_memory)
{
	int own = test_backend.own_threads;
	struct platform_ctx *ctx2;

	LOAD(snip_syscall);
	cr_assert_eq(ops()->ctx_create(as, &ctx2), 0);
	cr_assert_neq(ctx2, ctx);
	cr_assert_eq(threads_of(stub_pid(), NULL), own + 2);
	run_syscall_in(ctx2, 39, DATA_ADDR);
	cr_assert_eq(data_word(DATA_OFF), 39000);
	run_syscall_in(ctx, 102, DATA_ADDR + 8);
	cr_assert_eq(data_word(DATA_OFF + 8), 102000);
	/* Ending one guest thread ends its stub thread only. */
	ops()->ctx_destroy(ctx2);
	cr_assert_eq(threads_settle(stub_pid(), own + 1), own + 1);
	run_syscall_in(ctx, 39, DATA_ADDR);
}

struct adopter {
	struct platform_ctx *c;
	int adopt_ret;
};

/* Adopts a->c, runs snip_syscall in it and ends it. */
static void *adopt_and_run(void *arg)
{
	struct adopter *a = arg;

	a->adopt_ret = ops()->ctx_adopt(a->c);
	if (a->adopt_ret == 0) {
		run_syscall_in(a->c, 39, DATA_ADDR + 16);
		ops()->ctx_destroy(a->c);
	}
	return NULL;
}

Test(GENERIC_SUITE, a_cloned_ctx_is_driven_by_the_thread_that_adopts_it)
{
	struct adopter a = { 0 };
	pthread_t th;

	LOAD(snip_syscall);
	cr_assert_eq(ops()->ctx_clone(ctx, &a.c), 0);
	if (test_backend.check_unadopted_switch)
		test_backend.check_unadopted_switch(a.c);
	cr_assert_eq(pthread_create(&th, NULL, adopt_and_run, &a), 0);
	pthread_join(th, NULL);
	cr_assert_eq(a.adopt_ret, 0);
	cr_assert_eq(data_word(DATA_OFF + 16), 39000);
	cr_assert_eq(threads_settle(stub_pid(), test_backend.own_threads + 1),
		     test_backend.own_threads + 1);
	run_syscall_in(ctx, 39, DATA_ADDR);
}

Test(GENERIC_SUITE, a_clone_never_adopted_is_ended_by_its_creator)
{
	struct platform_ctx *c2;

	cr_assert_eq(ops()->ctx_clone(ctx, &c2), 0);
	cr_assert_eq(threads_of(stub_pid(), NULL), test_backend.own_threads + 2);
	ops()->ctx_destroy(c2);
	cr_assert_eq(threads_settle(stub_pid(), test_backend.own_threads + 1),
		     test_backend.own_threads + 1);
	LOAD(snip_syscall);
	run_syscall_in(ctx, 39, DATA_ADDR);
}

Test(GENERIC_SUITE, an_unmap_by_one_thread_holds_for_a_thread_running_guest_code)
{
	struct spinner sp = { .destroy = true };
	pthread_t th;

	LOAD(snip_load_loop);
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

Test(GENERIC_SUITE, the_process_outlives_the_host_thread_that_made_it)
{
	struct creator c;
	pthread_t th;
	pid_t pid;

	LOAD(snip_syscall);
	cr_assert_eq(pthread_create(&th, NULL, create_space_and_leave, &c), 0);
	pthread_join(th, NULL);
	/* Its initial thread has exited and its creator is gone: the clone still runs. */
	cr_assert_eq(ops()->ctx_adopt(c.for_main), 0);
	run_syscall_in(c.for_main, 39, DATA_ADDR + 24);
	cr_assert_eq(data_word(DATA_OFF + 24), 39000);
	cr_assert_eq(ops()->as_map(c.as, EXTRA_ADDR, 4096, PROT_READ, EXTRA_OFF), 0);
	ops()->ctx_destroy(c.for_main);
	pid = stub_pid_of(c.as);
	ops()->as_destroy(c.as);
	cr_assert_eq(kill(pid, 0), -1);
}

/* ---- interrupts ---------------------------------------------------------------------------- */

/* Waits until the guest runs its spin loop, then interrupts it. */
static void *interrupt_when_spinning(void *arg)
{
	bool foreign_signals = arg != NULL;

	while (data_word(DATA_OFF) != 1)
		sched_yield();
	if (foreign_signals)
		test_backend.send_foreign_signals(stub_pid());
	ops()->ctx_interrupt(ctx);
	return NULL;
}

/* Runs snip_spin until another thread interrupts it (after foreign signals, if asked). */
static struct platform_event spin_until_interrupted(bool foreign_signals)
{
	struct platform_event ev;
	pthread_t th;

	LOAD(snip_spin);
	regs.rbx = DATA_ADDR;
	cr_assert_eq(pthread_create(&th, NULL, interrupt_when_spinning,
				    foreign_signals ? &th : NULL),
		     0);
	ev = run();
	pthread_join(th, NULL);
	cr_assert_eq(ev.kind, PLATFORM_EV_INTERRUPT, "kind %d signo %d", ev.kind, ev.signo);
	return ev;
}

Test(GENERIC_SUITE, interrupt_from_another_thread_stops_a_spinning_guest)
{
	spin_until_interrupted(false);
	cr_assert_eq(data_word(DATA_OFF), 1);
	cr_assert(regs.rip > CODE_ADDR && regs.rip < CODE_ADDR + 32, "rip %#llx", regs.rip);
	/* It goes on from there. */
	run_getpid();
}

Test(GENERIC_SUITE, foreign_signals_are_suppressed)
{
	spin_until_interrupted(true);
	/* Still alive and not stopped: it runs on to its next system call, reported as one. */
	run_getpid();
}

Test(GENERIC_SUITE, interrupt_before_switch_is_reported_once)
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

Test(GENERIC_SUITE, interrupt_survives_a_mapping_change_before_the_switch)
{
	struct platform_event ev;

	LOAD(snip_syscall);
	regs.rax = 39;
	regs.rbx = DATA_ADDR;
	ops()->ctx_interrupt(ctx);
	/* The stub may run the change with the interrupt signal pending and swallow it. */
	cr_assert_eq(ops()->as_map(as, EXTRA_ADDR, 4096, PROT_READ, EXTRA_OFF), 0);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_INTERRUPT);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
}

/* A sentry thread may block signals; its stubs must still see the interrupt signal. */
Test(GENERIC_SUITE, interrupt_works_when_the_sentry_thread_blocks_signals)
{
	sigset_t blocked;

	teardown();
	/* Not every signal: criterion's own timeout must still get through. */
	sigemptyset(&blocked);
	sigaddset(&blocked, test_backend.interrupt_signal);
	sigaddset(&blocked, SIGUSR1);
	sigaddset(&blocked, SIGCHLD);
	sigaddset(&blocked, SIGTERM);
	sigaddset(&blocked, SIGWINCH);
	cr_assert_eq(pthread_sigmask(SIG_BLOCK, &blocked, NULL), 0);
	setup();
	spin_until_interrupted(false);
}

/* ---- death and cleanup ----------------------------------------------------------------------- */

Test(GENERIC_SUITE, killed_stub_reports_died)
{
	struct platform_event ev;

	LOAD(snip_spin);
	regs.rbx = DATA_ADDR;
	cr_assert_eq(kill(stub_pid(), SIGKILL), 0);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_DIED);
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_DIED);
	cr_assert_eq(ops()->as_map(as, EXTRA_ADDR, 4096, PROT_READ, EXTRA_OFF), -ESRCH);
}

Test(GENERIC_SUITE, as_destroy_leaves_no_process_no_fd_and_no_memory)
{
	struct platform_as *as2;
	pid_t pid, pid2;
	uint64_t out;
	int fds;

	fds = count_fds();
	out = pool_bytes_out();
	cr_assert_eq(ops()->as_create(plat, &as2), 0);
	pid2 = stub_pid_of(as2);
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
	/*
	 * What the backend keeps besides stubs (ptrace: a template stub and the stub kept ready;
	 * seccomp: the zygote) goes with the platform.
	 */
	platform_destroy(plat);
	plat = NULL;
	cr_assert_eq(waitpid(-1, NULL, WNOHANG | __WALL), -1);
	cr_assert_eq(errno, ECHILD);
	cr_assert_eq(pool_bad_frees(), 0);
}

Test(GENERIC_SUITE, churning_spaces_and_threads_leaves_nothing_behind)
{
	int children = 1 + test_backend.helpers, fds;
	struct platform_as *second;
	uint64_t out;

	/* A second space starts all that the backend keeps besides stubs (ptrace: the template). */
	cr_assert_eq(ops()->as_create(plat, &second), 0);
	ops()->as_destroy(second);
	for (int i = 0; i < 500 && count_children() != children; i++)
		usleep(10000);
	cr_assert_eq(count_children(), children, "the stub and %d helper(s)", test_backend.helpers);
	fds = count_fds();
	out = pool_bytes_out();
	LOAD(snip_syscall);
	for (int i = 0; i < 200; i++) {
		struct adopter a = { 0 };
		pthread_t th;

		cr_assert_eq(ops()->ctx_clone(ctx, &a.c), 0);
		cr_assert_eq(pthread_create(&th, NULL, adopt_and_run, &a), 0);
		pthread_join(th, NULL);
		cr_assert_eq(a.adopt_ret, 0);
	}
	cr_assert_eq(threads_settle(stub_pid(), test_backend.own_threads + 1),
		     test_backend.own_threads + 1);
	cr_assert_leq(pool_bytes_out(), out + test_backend.kept_after_destroy);
	out = pool_bytes_out(); /* what the fixture's space keeps: the spaces below give all back */
	for (int i = 0; i < 500; i++) {
		struct platform_as *a2;
		struct platform_ctx *c2;

		cr_assert_eq(ops()->as_create(plat, &a2), 0);
		cr_assert_eq(ops()->ctx_create(a2, &c2), 0);
		if (i % 2)
			ops()->ctx_destroy(c2); /* else as_destroy ends it */
		ops()->as_destroy(a2);
	}
	/*
	 * A backend may replace the stub as_create took in the background (ptrace's template
	 * factory), so for a moment there may be one child more or less: wait (up to 5 s) for it
	 * to settle before comparing. A leak keeps the count off for good.
	 */
	for (int i = 0; i < 500 && (count_children() != children || count_fds() != fds); i++)
		usleep(10000);
	cr_assert_eq(count_fds(), fds);
	cr_assert_eq(count_children(), children);
	cr_assert_eq(pool_bytes_out(), out);
	cr_assert_eq(pool_bad_frees(), 0);
	run_syscall_in(ctx, 39, DATA_ADDR);
}

/* ---- creation ------------------------------------------------------------------------------ */

Test(GENERIC_CREATE_SUITE, closed_memfd_is_ebadf)
{
	struct platform *p = NULL;

	cr_assert_eq(platform_create(test_backend.name, 987, &p), -EBADF);
	cr_assert_null(p);
}

/* ---- a restore's pages file (as_map_image) ------------------------------------------------- */

Test(GENERIC_SUITE, map_image_without_an_image_file_is_enosys)
{
	cr_assert_eq(ops()->as_map_image(as, EXTRA_ADDR, 4096, PROT_READ, 0), -ENOSYS);
}

Test(GENERIC_CREATE_SUITE, image_pages_are_mapped_private_and_never_writable, .fini = teardown)
{
	char path[] = "/tmp/husk-test-image-XXXXXX";
	uint64_t page[512] = { 0 }, back = 0;
	struct platform_event ev;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	unlink(path);
	page[0] = 0x1badcafe;
	cr_assert_eq(pwrite(fd, page, sizeof(page), 8192), (ssize_t)sizeof(page));
	setup_platform();
	plat->imagefd = fd; /* before the first space: the stubs get it when they start */
	setup_space();
	cr_assert_eq(ops()->as_map_image(as, EXTRA_ADDR, 4096, PROT_READ | PROT_WRITE, 8192),
		     -EINVAL);
	cr_assert_eq(ops()->as_map_image(as, EXTRA_ADDR + 1, 4096, PROT_READ, 8192), -EINVAL);
	cr_assert_eq(ops()->as_map_image(as, EXTRA_ADDR, 4096, PROT_READ, 8192), 0);
	LOAD(snip_load);
	regs.rbx = EXTRA_ADDR;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL, "kind %d signo %d", ev.kind, ev.signo);
	cr_assert_eq(regs.rdi, 0x1badcafe);
	check_store_is_refused(EXTRA_ADDR);
	/* Made writable anyway (as_protect), a store lands in a private copy, never the file. */
	cr_assert_eq(ops()->as_protect(as, EXTRA_ADDR, 4096, PROT_READ | PROT_WRITE), 0);
	LOAD(snip_store);
	regs.rbx = EXTRA_ADDR;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(pread(fd, &back, sizeof(back), 8192), (ssize_t)sizeof(back));
	cr_assert_eq(back, 0x1badcafe);
	/* The memory file again at the same address. */
	*(uint64_t *)(mem + EXTRA_OFF) = 0x5eed;
	cr_assert_eq(ops()->as_map(as, EXTRA_ADDR, 4096, PROT_READ, EXTRA_OFF), 0);
	LOAD(snip_load);
	regs.rbx = EXTRA_ADDR;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL);
	cr_assert_eq(regs.rdi, 0x5eed);
	teardown();
	close(fd);
}

/* ---- benchmarks (figures only) --------------------------------------------------------------- */

/* Not an assertion on time: prints the cost of one guest system call round trip. */
Test(GENERIC_SUITE, syscall_round_trip_benchmark)
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
	fprintf(stderr, "%s platform: %d guest syscall round trips, %.2f us each\n",
		test_backend.name, N, (t1 - t0) / N);
}
