/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The little harness shared by the conformance programs: each check prints one line when it
 * fails, and finish() prints `N passed, M failed` and gives the exit status (0 only if M == 0).
 *
 * Programs call the kernel through raw syscall() where glibc would hide a behaviour, so the
 * errno checked is the kernel's. They must pass natively and in husk alike: see README.md for
 * what they may assume about the environment.
 */
#ifndef HUSK_TESTS_SYSCALLS_CHECK_H
#define HUSK_TESTS_SYSCALLS_CHECK_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

static int checks_passed, checks_failed;

static void __attribute__((format(printf, 4, 5)))
check_fail(const char *file, int line, const char *what, const char *fmt, ...)
{
	va_list ap;

	printf("FAIL %s:%d: %s: ", file, line, what);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	checks_failed++;
}

/* CHECK(cond, fmt, ...): passes when cond is true; the message says what was seen. */
#define CHECK(cond, ...)                                                             \
	do {                                                                         \
		if (cond)                                                            \
			checks_passed++;                                             \
		else                                                                 \
			check_fail(__FILE__, __LINE__, "!(" #cond ")", __VA_ARGS__); \
	} while (0)

/* Evaluates a call returning -1/errno on failure; expects it to fail with exactly err. */
#define CHECK_ERR(call, err)                                                                  \
	do {                                                                                  \
		errno = 0;                                                                    \
		long _r = (long)(call);                                                       \
		int _e = errno;                                                               \
		if (_r == -1 && _e == (err))                                                  \
			checks_passed++;                                                      \
		else                                                                          \
			check_fail(__FILE__, __LINE__, #call, "expected -1 %s, got %ld (%s)", \
				   strerror(err), _r, _r == -1 ? strerror(_e) : "no error");  \
	} while (0)

/* Evaluates a call; expects it to return exactly want. */
#define CHECK_RET(call, want)                                                                   \
	do {                                                                                    \
		errno = 0;                                                                      \
		long _r = (long)(call);                                                         \
		int _e = errno;                                                                 \
		long _w = (long)(want);                                                         \
		if (_r == _w)                                                                   \
			checks_passed++;                                                        \
		else                                                                            \
			check_fail(__FILE__, __LINE__, #call, "expected %ld, got %ld (%s)", _w, \
				   _r, _r == -1 ? strerror(_e) : "no error");                   \
	} while (0)

/* Evaluates a call; expects it not to return -1; the expression is the call's result. */
#define CHECK_OK(call)                                                                         \
	({                                                                                     \
		errno = 0;                                                                     \
		long _r = (long)(call);                                                        \
		int _e = errno;                                                                \
		if (_r != -1)                                                                  \
			checks_passed++;                                                       \
		else                                                                           \
			check_fail(__FILE__, __LINE__, #call, "failed with %s", strerror(_e)); \
		_r;                                                                            \
	})

/* Prints the summary line and returns the exit status. */
static int finish(void)
{
	printf("%d passed, %d failed\n", checks_passed, checks_failed);
	fflush(stdout);
	return checks_failed ? 1 : 0;
}

#endif
