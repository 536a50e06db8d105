/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The seccomp programs built into husk-sentry and husk-gofer at build time (sentry/filter.h,
 * gofer/filter.h) are exactly what libseccomp compiles from the rules at run time, and the
 * install functions load them.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gofer/confine.h"
#include "gofer/filter.h"
#include "sentry/confine.h"
#include "sentry/filter.h"

/* The program libseccomp compiles from ctx now (released), into buf; returns its length. */
static size_t export(scmp_filter_ctx ctx, struct sock_filter *buf, size_t max)
{
	int fd = memfd_create("export", MFD_CLOEXEC);
	ssize_t n;

	cr_assert_geq(fd, 0);
	cr_assert_eq(seccomp_export_bpf(ctx, fd), 0);
	seccomp_release(ctx);
	n = pread(fd, buf, max * sizeof(*buf), 0);
	close(fd);
	cr_assert_gt(n, 0);
	cr_assert_eq(n % (ssize_t)sizeof(*buf), 0);
	return (size_t)n / sizeof(*buf);
}

static void assert_same_program(const struct sock_filter *prebuilt, unsigned short len,
				scmp_filter_ctx ctx)
{
	static struct sock_filter now[4096];
	size_t n = export(ctx, now, 4096);

	cr_assert_eq(len, n, "prebuilt %u instructions, libseccomp now %zu", len, n);
	cr_assert_eq(memcmp(prebuilt, now, n * sizeof(now[0])), 0,
		     "the prebuilt program differs from the rules");
}

Test(prebuilt_filters, sentry_default_program_is_what_libseccomp_compiles_now)
{
	scmp_filter_ctx ctx;

	cr_assert(sentry_filter_is_default());
	cr_assert_eq(sentry_filter_build(&ctx), 0);
	assert_same_program(sentry_filter_prebuilt, sentry_filter_prebuilt_len, ctx);
}

Test(prebuilt_filters, gofer_readonly_program_is_what_libseccomp_compiles_now)
{
	scmp_filter_ctx ctx;

	cr_assert_eq(gofer_filter_build(true, &ctx), 0);
	assert_same_program(gofer_filter_prebuilt_ro, gofer_filter_prebuilt_ro_len, ctx);
}

Test(prebuilt_filters, gofer_writable_program_is_what_libseccomp_compiles_now)
{
	scmp_filter_ctx ctx;

	cr_assert_eq(gofer_filter_build(false, &ctx), 0);
	assert_same_program(gofer_filter_prebuilt_rw, gofer_filter_prebuilt_rw_len, ctx);
}

/* Runs install in a child, then an openat (allowed nowhere); returns the wait status. */
static int status_after(int (*install)(void))
{
	int st;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (install() < 0)
			_exit(100);
		if (prctl(PR_GET_SECCOMP) != 2)
			_exit(101);
		syscall(SYS_openat, AT_FDCWD, "/etc/passwd", O_RDONLY | O_CREAT, 0600);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return st;
}

static int install_sentry(void)
{
	return sentry_install_filter();
}

static int install_gofer_ro(void)
{
	return gofer_install_filter(true);
}

Test(prebuilt_filters, installed_prebuilt_programs_kill_a_forbidden_call)
{
	int st = status_after(install_sentry);

	cr_assert(WIFSIGNALED(st), "status %#x", st);
	cr_assert_eq(WTERMSIG(st), SIGSYS);
	st = status_after(install_gofer_ro);
	cr_assert(WIFSIGNALED(st), "status %#x", st);
	cr_assert_eq(WTERMSIG(st), SIGSYS);
}
