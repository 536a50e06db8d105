/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stub's seccomp filter (DESIGN.md rule 5), installed in a forked child of the test: calls
 * are allowed only from the code page and only with the numbers the stub needs.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sentry/platform/ptrace/ptrace.h"

/* Calls the `syscall; ret` gadget at page with nr and two arguments, past the red zone. */
static long gadget_call(uint64_t page, long nr, long a1, long a2)
{
	long ret;

	__asm__ volatile("sub $128, %%rsp\n\t"
			 "call *%[fn]\n\t"
			 "add $128, %%rsp"
			 : "=a"(ret)
			 : [fn] "r"(page), "a"(nr), "D"(a1), "S"(a2)
			 : "rcx", "r11", "rdx", "memory");
	return ret;
}

enum action {
	CALL_ALLOWED_FROM_PAGE,
	CALL_OTHER_FROM_PAGE,
	CALL_ALLOWED_ELSEWHERE,
	PDEATHSIG_KILL_FROM_PAGE, /* allowed: a stub forked from the template sets it */
	PDEATHSIG_TERM_FROM_PAGE, /* any other signal: killed */
	FORK_OTHER_FLAGS_FROM_PAGE, /* clone with flags that are neither a thread nor the fork */
	FORK_AFTER_CHILD_FILTER, /* the template's fork, under the child filter: killed */
	SECCOMP_WITH_FLAGS_FROM_PAGE, /* seccomp(SET_MODE_FILTER, TSYNC...): killed */
};

/* Forks a child that installs the filter for its own gadget page and does action. */
static int run_filtered(enum action action)
{
	int status;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct rlimit nocore = { 0, 0 };
		struct sock_filter filter[PTRACE_STUB_FILTER_MAX];
		struct sock_fprog prog;
		uint8_t *page, *scratch;
		long r;

		setrlimit(RLIMIT_CORE, &nocore);
		page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		scratch = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (page == MAP_FAILED || scratch == MAP_FAILED)
			_exit(2);
		page[0] = 0x0f; /* syscall */
		page[1] = 0x05;
		page[2] = 0xc3; /* ret */
		if (mprotect(page, 4096, PROT_READ | PROT_EXEC) < 0)
			_exit(3);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			_exit(4);
		if (action == FORK_AFTER_CHILD_FILTER) {
			/* Stacked in the other order than in a stub: the result is the same. */
			prog.len = (unsigned short)ptrace_stub_child_filter(filter);
			prog.filter = filter;
			if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
				_exit(4);
		}
		prog.len = (unsigned short)ptrace_stub_filter((uint64_t)page, filter);
		prog.filter = filter;
		if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
			_exit(4);
		switch (action) {
		case CALL_ALLOWED_FROM_PAGE:
			r = gadget_call((uint64_t)page, __NR_munmap, (long)scratch, 4096);
			gadget_call((uint64_t)page, __NR_exit_group, r == 0 ? 42 : 5, 0);
			break;
		case CALL_OTHER_FROM_PAGE:
			gadget_call((uint64_t)page, __NR_getpid, 0, 0);
			gadget_call((uint64_t)page, __NR_exit_group, 6, 0);
			break;
		case CALL_ALLOWED_ELSEWHERE:
			syscall(SYS_munmap, scratch, 4096);
			gadget_call((uint64_t)page, __NR_exit_group, 7, 0);
			break;
		case PDEATHSIG_KILL_FROM_PAGE:
			r = gadget_call((uint64_t)page, __NR_prctl, PR_SET_PDEATHSIG, SIGKILL);
			gadget_call((uint64_t)page, __NR_exit_group, r == 0 ? 42 : 8, 0);
			break;
		case PDEATHSIG_TERM_FROM_PAGE:
			gadget_call((uint64_t)page, __NR_prctl, PR_SET_PDEATHSIG, SIGTERM);
			gadget_call((uint64_t)page, __NR_exit_group, 9, 0);
			break;
		case FORK_OTHER_FLAGS_FROM_PAGE:
			/* A plain fork(2); were it allowed, both would exit 10. */
			gadget_call((uint64_t)page, __NR_clone, SIGCHLD, 0);
			gadget_call((uint64_t)page, __NR_exit_group, 10, 0);
			break;
		case FORK_AFTER_CHILD_FILTER:
			/* Allowed by the template's filter alone: only the child filter stops it. */
			gadget_call((uint64_t)page, __NR_clone, STUB_FORK_FLAGS, 0);
			gadget_call((uint64_t)page, __NR_exit_group, 11, 0);
			break;
		case SECCOMP_WITH_FLAGS_FROM_PAGE:
			gadget_call((uint64_t)page, __NR_seccomp, SECCOMP_SET_MODE_FILTER,
				    SECCOMP_FILTER_FLAG_TSYNC);
			gadget_call((uint64_t)page, __NR_exit_group, 13, 0);
			break;
		}
		for (;;)
			;
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return status;
}

Test(platform_stub_filter, allows_the_stubs_calls_from_the_code_page)
{
	int status = run_filtered(CALL_ALLOWED_FROM_PAGE);

	cr_assert(WIFEXITED(status), "status %#x", status);
	cr_assert_eq(WEXITSTATUS(status), 42);
}

Test(platform_stub_filter, kills_other_calls_from_the_code_page)
{
	int status = run_filtered(CALL_OTHER_FROM_PAGE);

	cr_assert(WIFSIGNALED(status), "status %#x", status);
	cr_assert_eq(WTERMSIG(status), SIGSYS);
}

Test(platform_stub_filter, kills_allowed_calls_from_outside_the_code_page)
{
	int status = run_filtered(CALL_ALLOWED_ELSEWHERE);

	cr_assert(WIFSIGNALED(status), "status %#x", status);
	cr_assert_eq(WTERMSIG(status), SIGSYS);
}

Test(platform_stub_filter, allows_pdeathsig_sigkill_from_the_code_page)
{
	int status = run_filtered(PDEATHSIG_KILL_FROM_PAGE);

	cr_assert(WIFEXITED(status), "status %#x", status);
	cr_assert_eq(WEXITSTATUS(status), 42);
}

Test(platform_stub_filter, kills_pdeathsig_other_than_sigkill)
{
	int status = run_filtered(PDEATHSIG_TERM_FROM_PAGE);

	cr_assert(WIFSIGNALED(status), "status %#x", status);
	cr_assert_eq(WTERMSIG(status), SIGSYS);
}

Test(platform_stub_filter, kills_clone_with_other_flags)
{
	int status = run_filtered(FORK_OTHER_FLAGS_FROM_PAGE);

	cr_assert(WIFSIGNALED(status), "status %#x", status);
	cr_assert_eq(WTERMSIG(status), SIGSYS);
}

Test(platform_stub_filter, child_filter_kills_the_templates_fork)
{
	int status = run_filtered(FORK_AFTER_CHILD_FILTER);

	cr_assert(WIFSIGNALED(status), "status %#x", status);
	cr_assert_eq(WTERMSIG(status), SIGSYS);
}

Test(platform_stub_filter, kills_seccomp_with_flags)
{
	int status = run_filtered(SECCOMP_WITH_FLAGS_FROM_PAGE);

	cr_assert(WIFSIGNALED(status), "status %#x", status);
	cr_assert_eq(WTERMSIG(status), SIGSYS);
}
