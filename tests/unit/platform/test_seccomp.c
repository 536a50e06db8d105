/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The seccomp platform against real guest code. The generic behaviour is tested by generic.c
 * (compiled into this executable, suites platform_seccomp and platform_seccomp_create); this file
 * gives it the seccomp hooks and tests what is the seccomp backend's own: the zygote, the stub's
 * confinement, its thread areas, and what a hostile guest can do to the areas and pages it shares
 * with the sentry.
 *
 * Tests named *_does_not_hang guard their switch with a watchdog: after 1 s it calls
 * ctx_interrupt (an INTERRUPT is an acceptable outcome), and after WATCHDOG_KILL_S more seconds
 * it kills the stub so that the test ends; the test then fails ("the sentry hung").
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "generic.h"
#include "sentry/platform/seccomp/seccomp.h"

/* Guest layout beyond generic.h's. */
#define ALT_OFF 0x8000UL /* 32 KiB: a fake thread area in guest memory */
#define ALT_ADDR 0xb00000ULL
/* Where a second snippet goes in the code page. */
#define CODE2 0x800UL
/* 4 MiB of guest memory the RSS test touches (past the pool). */
#define BIG_OFF POOL_END
#define BIG_LEN (4UL << 20)
#define BIG_ADDR 0x10000000ULL
_Static_assert(BIG_OFF + BIG_LEN <= MEM_SIZE, "the memory file holds the RSS test's memory");

#define WATCHDOG_INTERRUPT_S 1
#define WATCHDOG_KILL_S 30

/* two nops, then syscall(39) (single-step) */
SNIPPET(snip_nops, "nop\n"
		   "nop\n"
		   "mov $39, %eax\n"
		   "syscall\n"
		   "ud2\n");
/* write a word to each of edx pages from rbx on, then syscall(39) */
SNIPPET(snip_touch, "1: movq $1, (%rbx)\n"
		    "add $4096, %rbx\n"
		    "dec %edx\n"
		    "jnz 1b\n"
		    "mov $39, %eax\n"
		    "syscall\n"
		    "ud2\n");
/* burn CPU (ecx iterations), then syscall(39) */
SNIPPET(snip_burn, "1: dec %ecx\n"
		   "jnz 1b\n"
		   "mov $39, %eax\n"
		   "syscall\n"
		   "ud2\n");
/* jump to r11 (into the stub's code page) with the registers the test set */
SNIPPET(snip_jump, "jmp *%r11\n");
/* *(u32 *)rbx = edx, then syscall(39) twice */
SNIPPET(snip_store32, "mov %edx, (%rbx)\n"
		      "mov $39, %eax\n"
		      "syscall\n"
		      "mov $39, %eax\n"
		      "syscall\n"
		      "ud2\n");
/* *(u64 *)rbx = rdx, then syscall(39) */
SNIPPET(snip_store64, "mov %rdx, (%rbx)\n"
		      "mov $39, %eax\n"
		      "syscall\n"
		      "ud2\n");
/* a stack_t at rbx: {rdx, 0, rsi}, then syscall(39) */
SNIPPET(snip_store_stack, "mov %rdx, (%rbx)\n"
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
SNIPPET(snip_forge_tid, "movq $1, (%rcx)\n"
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
SNIPPET(snip_store_loop, "movq $1, (%rcx)\n"
			 "1: mov %rdx, (%rbx)\n"
			 "mov %rdx, 8(%rbx)\n"
			 "jmp 1b\n");

static const struct sc_code *code;

static void seccomp_init(void)
{
	int err = 0;

	cr_assert(seccomp_platform_available(), "this host cannot run the seccomp platform");
	code = sc_code_get(&err);
	cr_assert_not_null(code, "sc_code_get: %d", err);
}

static size_t seccomp_own_pages(uint64_t *out, size_t max)
{
	cr_assert_geq(max, 2);
	out[0] = code->page;
	out[1] = code->page + SC_AREAS_OFF;
	return 2;
}

/* Sent, not raised by the guest: none of them is a fault or a system call. */
static void seccomp_send_foreign_signals(pid_t pid)
{
	pid_t guest_tid = -1;

	threads_of(pid, &guest_tid);
	kill(pid, SIGWINCH);
	kill(pid, SIGSEGV);
	kill(pid, SIGSYS);
	syscall(SYS_tgkill, pid, guest_tid, SIGSYS);
	syscall(SYS_tgkill, pid, guest_tid, SIGILL);
	syscall(SYS_tgkill, pid, guest_tid, SC_INTERRUPT_SIGNAL);
	syscall(SYS_tgkill, pid, pid, SIGSEGV);
}

const struct test_backend test_backend = {
	.name = "seccomp",
	.init = seccomp_init,
	.stub_pid = seccomp_as_stub_pid,
	.own_threads = 1, /* the controller */
	.helpers = 1, /* the zygote */
	.own_pages = seccomp_own_pages,
	.send_foreign_signals = seccomp_send_foreign_signals,
	.interrupt_signal = SC_INTERRUPT_SIGNAL,
	.kept_after_destroy = 8 * SC_AREA_SIZE, /* SC_EXITED_MAX areas */
};

/* The memory-file offset of the last thread area the platform took. */
static int64_t last_area(void)
{
	int64_t off = pool_last_alloc(SC_AREA_SIZE);

	cr_assert_geq(off, 0, "no thread area was allocated");
	return off;
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

/* ---- what the generic tests do not ask of every backend ---------------------------------- */

Test(platform_seccomp, protect_of_an_unmapped_range_fails_with_enomem)
{
	cr_assert_eq(ops()->as_protect(as, EXTRA_ADDR, 4096, PROT_READ), -ENOMEM);
	run_getpid();
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
	run_getpid();
}

Test(platform_seccomp, singlestep_runs_one_instruction)
{
	struct platform_event ev;

	cr_assert_not_null(ops()->ctx_singlestep);
	LOAD(snip_nops);
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
	LOAD(snip_burn);
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
	LOAD(snip_touch);
	regs.rbx = BIG_ADDR;
	regs.rdx = BIG_LEN / 4096;
	cr_assert_eq(run().kind, PLATFORM_EV_SYSCALL);
	rss = ops()->ctx_peak_rss_kb(ctx);
	cr_assert_geq(rss, (long)(BIG_LEN / 1024 / 2), "peak rss %ld kB (the stub's VmHWM: %ld kB)",
		      rss, pid_status_number(stub_pid(), "VmHWM:"));
}

/* The zygote: the child of this process that is no space's stub. */
static pid_t zygote_pid(void)
{
	pid_t kids[16], z = -1;
	int n = list_children(kids, 16);

	for (int i = 0; i < n && i < 16; i++) {
		char path[64], comm[32] = "";
		FILE *f;

		if (kids[i] == stub_pid())
			continue;
		/* Only stubs count: a sanitizer's helper (llvm-symbolizer) may be a child too. */
		snprintf(path, sizeof(path), "/proc/%d/comm", kids[i]);
		f = fopen(path, "r");
		if (f) {
			if (!fgets(comm, sizeof(comm), f))
				comm[0] = 0;
			fclose(f);
		}
		if (strncmp(comm, "husk-stub", 9) != 0)
			continue;
		cr_assert_eq(z, -1, "more than one stub besides the space's");
		z = kids[i];
	}
	cr_assert_gt(z, 0, "no zygote among %d children", n);
	return z;
}

/* ---- the stub's confinement ---------------------------------------------------------------- */

static const int stub_fds[] = { SC_STUB_MEMFD, SC_STUB_SOCK };

Test(platform_seccomp, stub_holds_only_the_memory_file_and_its_socket)
{
	char target[256];

	check_fds_are(stub_pid(), stub_fds, ARRAY_SIZE_(stub_fds));
	fd_target(stub_pid(), SC_STUB_SOCK, target, sizeof(target));
	cr_assert_eq(strncmp(target, "socket:[", 8), 0, "fd %d is %s", SC_STUB_SOCK, target);
}

/*
 * Waits until the zygote sleeps in read() on its socket, its fork loop's start: after a fork it
 * replies first and closes its copies of the new pair after, so until then it holds them.
 */
static void wait_zygote_idle(pid_t z)
{
	char path[64], line[256] = "";
	struct timespec ms = { 0, 1000000 };

	snprintf(path, sizeof(path), "/proc/%d/syscall", z);
	for (int i = 0; i < 100000; i++) {
		FILE *f = fopen(path, "r");
		unsigned long nr = ~0UL, fd = ~0UL;

		cr_assert_not_null(f, "%s: %s", path, strerror(errno));
		if (!fgets(line, sizeof(line), f))
			line[0] = 0;
		fclose(f);
		if (sscanf(line, "%lu %lx", &nr, &fd) == 2 && nr == SYS_read && fd == SC_STUB_SOCK)
			return;
		nanosleep(&ms, NULL);
	}
	cr_assert_fail("the zygote never went back to reading its socket: %s", line);
}

Test(platform_seccomp, zygote_holds_only_the_memory_file_and_its_socket)
{
	pid_t z = zygote_pid();

	wait_zygote_idle(z);
	check_fds_are(z, stub_fds, ARRAY_SIZE_(stub_fds));
}

/* Checks that every mapping of pid is one the stub is allowed; counts the kinds. */
static void check_stub_maps(pid_t pid, int *areas_seen, int *guest_seen)
{
	uint64_t c = code->page;
	int code_seen = 0, scratch_seen = 0, cmd_seen = 0;
	char line[512];
	FILE *f;

	*areas_seen = *guest_seen = 0;
	f = open_maps(pid);
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
	/* An ended thread's area stays mapped for the next thread to take (reuse_exited_locked). */
	ops()->ctx_destroy(ctx2);
	check_stub_maps(stub_pid(), &areas, &guest);
	cr_assert_eq(areas, 2);
	for (int i = 0; i < 5; i++) {
		/* Once the ended thread is gone (it ends on its own), its area is the one taken. */
		threads_settle(stub_pid(), test_backend.own_threads + 1);
		cr_assert_eq(ops()->ctx_create(as, &ctx2), 0);
		ops()->ctx_destroy(ctx2);
	}
	check_stub_maps(stub_pid(), &areas, &guest);
	cr_assert_eq(areas, 2, "ended threads' areas are not reused (%d mapped)", areas);
}

Test(platform_seccomp, zygote_maps_only_its_code_and_scratch_pages)
{
	char line[512];
	pid_t z = zygote_pid();
	int n = 0;
	FILE *f;

	f = open_maps(z);
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
	occupy_pages(spots, ARRAY_SIZE_(spots));
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
	pid_t procs[] = { zygote_pid(), stub_pid() }, pid = procs[1], guest_tid = -1;
	char dir[64], line[512];

	/* The zygote, and a stub: forked by the zygote, CLONE_PARENT (this process reaps it). */
	for (size_t i = 0; i < ARRAY_SIZE_(procs); i++) {
		snprintf(dir, sizeof(dir), "/proc/%d", procs[i]);
		check_husk_stub_under_filter(dir);
		cr_assert_eq(status_number(dir, "Seccomp_filters:"), 1);
		cr_assert_eq(status_number(dir, "TracerPid:"), 0);
		cr_assert_eq(status_number(dir, "PPid:"), getpid());
	}
	/* The stub's guest thread stacked the guest filter. */
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
	pid_t guest_tid = -1;
	char dir[64];

	setup_platform();
	cr_assert_eq(seccomp_platform_prepare(plat), 0);
	install_filter_killing(__NR_acct);
	setup_space();
	run_getpid();
	cr_assert_eq(pid_status_number(getpid(), "Seccomp_filters:"), 1);
	cr_assert_eq(pid_status_number(zygote_pid(), "Seccomp_filters:"), 1);
	cr_assert_eq(pid_status_number(stub_pid(), "Seccomp_filters:"), 1);
	cr_assert_eq(threads_of(stub_pid(), &guest_tid), 2);
	snprintf(dir, sizeof(dir), "/proc/%d/task/%d", stub_pid(), guest_tid);
	cr_assert_eq(status_number(dir, "Seccomp_filters:"), 2);
	teardown();
}

/* The host's OOM killer takes a stub before the sentry: the zygote and its stubs are at 1000. */
Test(platform_seccomp_create, prepare_puts_stubs_first_for_the_host_oom_killer)
{
	char own[32], z[32], st[32];
	char path[64];

	setup_platform();
	cr_assert_eq(seccomp_platform_prepare(plat), 0);
	setup_space();
	run_getpid();
	proc_line("/proc/self", "oom_score_adj", "", own, sizeof(own));
	snprintf(path, sizeof(path), "/proc/%d", zygote_pid());
	proc_line(path, "oom_score_adj", "", z, sizeof(z));
	snprintf(path, sizeof(path), "/proc/%d", stub_pid());
	proc_line(path, "oom_score_adj", "", st, sizeof(st));
	cr_assert_str_eq(z, "1000\n");
	cr_assert_str_eq(st, "1000\n");
	cr_assert_str_neq(own, "1000\n", "the sentry's own stays as it was");
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

/* ---- death and cleanup ----------------------------------------------------------------------- */

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

	LOAD(snip_spin);
	regs.rbx = DATA_ADDR;
	cr_assert_eq(pthread_create(&th, NULL, kill_stub_when_spinning, &pid), 0);
	ev = run();
	pthread_join(th, NULL);
	cr_assert_eq(ev.kind, PLATFORM_EV_DIED, "kind %d", ev.kind);
	/* New spaces still work. */
	teardown();
	setup();
	run_getpid();
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
	run_getpid();
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
	load_code_at(0xf00, snip_syscall_start, snip_syscall_end);
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

/* The first `syscall` instruction of the stub's code. */
static uint64_t first_code_syscall(void)
{
	uint64_t sites[1];

	cr_assert_eq(code_syscall_sites(sites, ARRAY_SIZE_(sites)), 1);
	return sites[0];
}

/* Loads snip_jump, which jumps to site (in the stub's code) with rax = nr. */
static void load_jump(uint64_t site, long nr)
{
	LOAD(snip_jump);
	regs.r11 = site;
	regs.rax = (uint64_t)nr;
}

/* Ends the fixture's space (its guest got it killed) and makes a new one. */
static void renew_space(void)
{
	ops()->as_destroy(as);
	as = NULL;
	setup_space();
}

Test(platform_seccomp, the_guest_can_write_its_own_area)
{
	/* What the tests below build on: areas are guest-writable memory in the stub. */
	struct platform_event ev;
	uint64_t area;

	run_getpid();
	area = area_stub_addr(last_area());
	cr_assert_eq(area, code->page + SC_AREAS_OFF);
	LOAD(snip_store64);
	regs.rbx = area + 4096 - 8; /* the last word of the header page */
	regs.rdx = 0x1234;
	ev = run();
	cr_assert_eq(ev.kind, PLATFORM_EV_SYSCALL, "kind %d signo %d", ev.kind, ev.signo);
	cr_assert_eq(*(uint64_t *)(mem + last_area() + 4096 - 8), 0x1234);
}

/* The guest may read the stub's code and command pages (they are in its process) but not write. */
Test(platform_seccomp, the_code_and_command_pages_are_read_only_to_the_guest)
{
	uint64_t targets[] = { code->page, code->page + SC_CMD_OFF };
	struct platform_event ev;

	for (size_t i = 0; i < ARRAY_SIZE_(targets); i++)
		check_store_is_refused(targets[i]);
	LOAD(snip_load);
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

		load_jump(site, nr);
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
		renew_space();
	}
	check_a_new_space_works();
}

Test(platform_seccomp, futex_calls_from_the_code_page_other_than_wait_and_wake_are_killed)
{
	static const long futex_ops[] = { 3 /* REQUEUE */, 5 /* WAKE_OP */, 9 /* WAIT_BITSET */,
					  128 /* WAIT_PRIVATE */, 129 /* WAKE_PRIVATE */ };
	for (size_t i = 0; i < ARRAY_SIZE_(futex_ops); i++) {
		struct platform_event ev;

		load_jump(first_code_syscall(), __NR_futex);
		regs.rdi = DATA_ADDR;
		regs.rsi = (uint64_t)futex_ops[i];
		regs.rdx = 1;
		ev = guarded_switch(ctx, &regs, "futex from the code page");
		cr_assert_eq(ev.kind, PLATFORM_EV_DIED, "op %ld: kind %d", futex_ops[i], ev.kind);
		renew_space();
	}
}

/* FUTEX_WAIT from the code page is allowed: the guest must still be interruptible. */
Test(platform_seccomp, a_futex_wait_from_the_code_page_does_not_hang)
{
	struct platform_event ev;

	load_jump(first_code_syscall(), __NR_futex);
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

	load_jump(first_code_syscall(), __NR_exit);
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

	run_getpid();
	area = area_stub_addr(last_area());
	/* The writer: a second guest thread, on its own host thread. */
	load_code_at(CODE2, snip_store_loop_start, snip_store_loop_end);
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

	LOAD(snip_syscall);
	load_code_at(CODE2, snip_forge_tid_start, snip_forge_tid_end);
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
	/*
	 * A forged reply names no thread of the stub: the platform kills the space (no thread is
	 * made after that), or the forgery missed and threads were made. Either way the decoy
	 * must keep its affinity (below).
	 */
	fprintf(stderr, "seccomp platform: %d threads made, %llu clone replies rewritten\n", made,
		(unsigned long long)data_word(DATA_OFF + 72));
	cr_assert_eq(changed, 0,
		     "after %d new threads the decoy process %d was bound to %d CPU(s): the sentry "
		     "used a tid the guest forged",
		     changed, decoy, CPU_COUNT(&now));
	check_a_new_space_works();
}

/* A second guest thread writes into the stopped ctx's frame (via snip_store64/snip_store_stack). */
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

/* Resumes the fixture's ctx (rax = 0) under the watchdog, after the writer wrote its frame. */
static struct platform_event resume_after_the_write(const char *what)
{
	regs.rax = 0;
	return guarded_switch(ctx, &regs, what);
}

/* Ends the writer; the sentry side must still work. */
static void end_the_writer(struct platform_ctx *c2)
{
	ops()->ctx_destroy(c2);
	check_a_new_space_works();
}

/* Stops ctx at a system call and returns its frame's ucontext (a stub address). */
static uint64_t stop_and_find_frame(void)
{
	uint64_t uc;

	run_getpid();
	uc = *(uint64_t *)(mem + last_area() + SC_A_UC);
	cr_assert_geq(uc, area_stub_addr(last_area()) + 4096);
	return uc;
}

Test(platform_seccomp, a_guest_corrupting_a_stopped_threads_fpstate_pointer_is_contained)
{
	uint64_t uc = stop_and_find_frame();
	struct platform_ctx *c2;
	struct platform_event ev;

	c2 = second_ctx_writes(snip_store64_start, snip_store64_end,
			       uc + offsetof(ucontext_t, uc_mcontext.fpregs), 0x41410000ULL, 0);
	ev = resume_after_the_write("resume with a bad fpregs pointer");
	/* Its sigreturn fails: the stub dies, or the guest gets a SIGSEGV as Linux would. */
	cr_assert(ev.kind == PLATFORM_EV_DIED ||
			  (ev.kind == PLATFORM_EV_FAULT && ev.signo == SIGSEGV),
		  "kind %d signo %d", ev.kind, ev.signo);
	end_the_writer(c2);
}

Test(platform_seccomp, a_guest_corrupting_a_stopped_threads_xstate_header_is_contained)
{
	uint64_t uc = stop_and_find_frame();
	uint64_t fp = *(uint64_t *)(mem + last_area() + (uc - area_stub_addr(last_area())) +
				    offsetof(ucontext_t, uc_mcontext.fpregs));
	struct platform_ctx *c2;
	struct platform_event ev;

	cr_assert_neq(fp, 0);
	/* XSTATE_BV with every bit set, XCOMP_BV with the compacted bit. */
	c2 = second_ctx_writes(snip_store64_start, snip_store64_end, fp + 512, ~0ULL, 0);
	ev = resume_after_the_write("resume with a bad xstate header");
	cr_assert(ev.kind == PLATFORM_EV_DIED || ev.kind == PLATFORM_EV_SYSCALL ||
			  (ev.kind == PLATFORM_EV_FAULT && ev.signo == SIGSEGV),
		  "kind %d signo %d", ev.kind, ev.signo);
	end_the_writer(c2);
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
	c2 = second_ctx_writes(snip_store_stack_start, snip_store_stack_end,
			       uc + offsetof(ucontext_t, uc_stack), ALT_ADDR + 4096,
			       SC_AREA_SIZE - 4096);
	/* Resume: snip_syscall goes on to syscall(60), a fresh stop. */
	ev = resume_after_the_write("system call after the signal stack was moved");
	cr_assert(ev.kind == PLATFORM_EV_DIED ||
			  (ev.kind == PLATFORM_EV_SYSCALL && regs.orig_rax == 60),
		  "kind %d orig_rax %lld", ev.kind, regs.orig_rax);
	end_the_writer(c2);
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
	area = area_stub_addr(last_area());
	c2 = second_ctx_writes(snip_store32_start, snip_store32_end, area + SC_A_STUB_SLEEPS, 0, 0);
	ev = resume_after_the_write("resume after the sleep flag was cleared");
	cr_assert(ev.kind == PLATFORM_EV_DIED || ev.kind == PLATFORM_EV_INTERRUPT ||
			  (ev.kind == PLATFORM_EV_SYSCALL && regs.orig_rax == 60),
		  "kind %d orig_rax %lld", ev.kind, regs.orig_rax);
	end_the_writer(c2);
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
		area = area_stub_addr(last_area());
		LOAD(snip_store32);
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
		renew_space();
	}
	check_a_new_space_works();
}

/* ---- benchmarks (figures only) --------------------------------------------------------------- */

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
