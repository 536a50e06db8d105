/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ptrace platform against real guest code. The generic behaviour is tested by generic.c
 * (compiled into this executable, suites platform_ptrace and platform_create); this file gives
 * it the ptrace hooks and tests what is the ptrace backend's own: the stub's confinement, the
 * template factory, the tracer's rules.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "generic.h"
#include "sentry/platform/ptrace/ptrace.h"

static size_t ptrace_own_pages(uint64_t *out, size_t max)
{
	cr_assert_geq(max, 1);
	out[0] = ptrace_stub_code_page();
	return 1;
}

static void ptrace_send_foreign_signals(pid_t stub)
{
	kill(stub, SIGWINCH);
	kill(stub, SIGSTOP);
	kill(stub, SIGSEGV); /* sent, not raised by the guest: not a fault */
}

/* Not adopted yet: nobody may drive it. */
static void ptrace_check_unadopted_switch(struct platform_ctx *c)
{
	struct platform_event ev;

	cr_assert_eq(ops()->ctx_switch(c, &regs, &ev), -EPERM);
}

const struct test_backend test_backend = {
	.name = "ptrace",
	.stub_pid = ptrace_as_stub_pid,
	.own_threads = 0,
	.helpers = 2, /* the template stub and the stub kept ready */
	.own_pages = ptrace_own_pages,
	.send_foreign_signals = ptrace_send_foreign_signals,
	.interrupt_signal = PTRACE_INTERRUPT_SIGNAL,
	.check_unadopted_switch = ptrace_check_unadopted_switch,
};

/*
 * Timeouts are per suite only: criterion 2.4.1's runner leaks a timer (LeakSanitizer reports it)
 * when a test overrides its suite's timeout while others run in parallel.
 */
TestSuite(platform_ptrace, .init = setup, .fini = teardown, .timeout = 60);
TestSuite(platform_create, .timeout = 60);

/* ---- the stub's confinement ---------------------------------------------------------------- */

Test(platform_ptrace, stub_runs_under_its_seccomp_filter_named_husk_stub)
{
	char dir[64];

	snprintf(dir, sizeof(dir), "/proc/%d", stub_pid());
	check_husk_stub_under_filter(dir);
}

Test(platform_ptrace, stub_holds_only_the_memory_file)
{
	static const int fds[] = { PTRACE_STUB_MEMFD };

	check_fds_are(stub_pid(), fds, ARRAY_SIZE_(fds));
}

Test(platform_ptrace, stub_maps_only_its_code_page_and_guest_memory)
{
	uint64_t code = ptrace_stub_code_page();
	int guest = 0, code_seen = 0, vsyscall = 0;
	char line[512];
	FILE *f;

	cr_assert_gt(code, 0);
	cr_assert_geq(code, PLATFORM_GUEST_MAX);
	f = open_maps(stub_pid());
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

/* Sentry memory on both sides of the code page, and near the top, must not reach a stub. */
Test(platform_ptrace, stub_unmaps_sentry_memory_around_its_code_page)
{
	uint64_t code = ptrace_stub_code_page();
	uint64_t spots[] = { code - 4096, code + 4096, 0x7ffffff00000ULL };
	struct platform_as *as2;
	pid_t pid2;

	occupy_pages(spots, ARRAY_SIZE_(spots));
	cr_assert_eq(ops()->as_create(plat, &as2), 0);
	pid2 = stub_pid_of(as2);
	for (size_t i = 0; i < ARRAY_SIZE_(spots); i++)
		cr_assert_not(maps_contain(pid2, spots[i]), "stub still maps %#llx",
			      (unsigned long long)spots[i]);
	cr_assert(maps_contain(pid2, code));
	ops()->as_destroy(as2);
}

/* ---- the template factory ------------------------------------------------------------------ */

Test(platform_ptrace, first_space_starts_no_template_factory)
{
	/* The fixture made one space: its stub is this process's only child (no template). */
	cr_assert_eq(count_children(), 1);
}

Test(platform_ptrace, stubs_after_the_first_are_forked_from_a_template_with_the_child_filter)
{
	struct platform_as *as2, *as3;
	pid_t pid[3];

	pid[0] = stub_pid();
	cr_assert_eq(ops()->as_create(plat, &as2), 0);
	cr_assert_eq(ops()->as_create(plat, &as3), 0);
	pid[1] = stub_pid_of(as2);
	pid[2] = stub_pid_of(as3);
	for (int i = 0; i < 3; i++) {
		/* CLONE_PARENT: the template's parent (this process) is theirs: it reaps. */
		cr_assert_eq(pid_status_number(pid[i], "PPid:"), getpid());
		/*
		 * The first space's stub was forked by the caller (its filter alone); the next
		 * ones come from the template: its filter and the child filter that forbids
		 * forking again.
		 */
		cr_assert_eq(pid_status_number(pid[i], "Seccomp_filters:"), i == 0 ? 1 : 2);
		/* Traced by the thread that created the space (PTRACE_SEIZE), not the factory. */
		cr_assert_eq(pid_status_number(pid[i], "TracerPid:"), gettid());
	}
	ops()->as_destroy(as3);
	ops()->as_destroy(as2);
}

/* ---- the tracer's rules -------------------------------------------------------------------- */

static void *switch_from_other_thread(void *arg)
{
	struct platform_event ev;

	(void)arg;
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

static void *protect_unmapped_from_other_thread(void *arg)
{
	(void)arg;
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

/* ---- creation ------------------------------------------------------------------------------ */

Test(platform_create, unknown_name_is_enoent)
{
	struct platform *p = NULL;
	int fd = memfd_create("x", MFD_CLOEXEC);

	cr_assert_eq(platform_create("kvm-nope", fd, &p), -ENOENT);
	cr_assert_null(p);
	close(fd);
}

/*
 * Like a sentry whose seccomp filter lacks sched_setaffinity: the test process (and the stubs it
 * forks) die if anything calls it. Stubs must still come up and run guest code.
 */
Test(platform_create, works_under_a_sentry_filter_without_sched_setaffinity)
{
	struct platform_event ev;

	install_filter_killing(__NR_sched_setaffinity);
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
