/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Crash reports (issue 18): when the sentry dies of SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT
 * (a failed assert() aborts), it writes a raw backtrace of every sentry thread (addresses, with
 * the module list), with the guest system call each was serving, to its log and to the crash
 * file the runtime gives it, then dies of the same signal; the runtime symbolizes it
 * (husk do's stderr, husk events). See README.md for the design.
 */
#ifndef HUSK_SENTRY_CRASH_CRASH_H
#define HUSK_SENTRY_CRASH_CRASH_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * Reserved for the crash report (each thread's walk); never blocked, never forwarded to the
 * guest (sentry/kernel/hostsig.c). Its handler ignores any sender but the sentry itself.
 */
#define CRASH_SIGNAL (SIGRTMAX - 2)

/* The guest call a thread is serving; written by that thread only, read by its own handler. */
struct crash_syscall {
	long nr; /* -1: none */
	int32_t tid; /* the guest task's tid in the sandbox */
	uint64_t args[6];
};

extern __thread struct crash_syscall crash_current;

/* Marks the calling thread as serving guest call nr of task tid (cleared by crash_syscall_end). */
static inline void crash_syscall_begin(int32_t tid, long nr, const uint64_t args[6])
{
	crash_current.tid = tid;
	for (int i = 0; i < 6; i++)
		crash_current.args[i] = args[i];
	__atomic_store_n(&crash_current.nr, nr, __ATOMIC_RELAXED);
}

static inline void crash_syscall_end(void)
{
	__atomic_store_n(&crash_current.nr, -1L, __ATOMIC_RELAXED);
}

/*
 * Installs the crash handlers and the calling (main) thread's alternate signal stack, and
 * records the sentry's loaded ELF objects (path, load bias, address range, build-id) from
 * memory: call it before confinement (/proc/self/exe names the executable only then). No file
 * is opened, no DWARF read: the report is raw (addresses, module+offset) and the runtime
 * symbolizes it (runtime/crashsym.c). name_of maps a guest call number to its name (NULL:
 * unknown). report_fd (or -1) also receives the report (the runtime's crash file, which husk
 * events reads); the log's fd does too, unless report_fd_only (husk do: the runtime prints it
 * symbolized to the same stderr). Returns 0 or -errno.
 */
int crash_init(const char *(*name_of)(long nr), int report_fd, bool report_fd_only);

/*
 * Every sentry thread is registered (its tid, for the crashing thread to signal it) and gets
 * an alternate signal stack (a stack overflow is reported too). husk-sentry links with
 * -Wl,--wrap=pthread_create (crash_wrap.c), which calls these around each thread's function.
 * crash_thread_enter returns an opaque token for crash_thread_leave.
 */
void *crash_thread_enter(void);
void crash_thread_leave(void *token);

/*
 * The debug-only trigger: crash_debug_init reads HUSK_DEBUG_CRASH=NAME[:segv|abort|assert]
 * from the environment; then the first guest call NAME crashes the sentry on purpose. Only a
 * sentry built with HUSK_DEBUG_CRASH calls it (husk-sentry-crashtest, a test binary that is
 * not installed, or husk-sentry itself with meson's -Ddebug_crash=true); in any other,
 * crash_debug_nr stays -1 and the check below is one compare per guest call.
 */
extern long crash_debug_nr;
void crash_debug_init(void);
void crash_debug_fire(long nr);
static inline void crash_debug_check(long nr)
{
	if (__builtin_expect(nr == crash_debug_nr, 0))
		crash_debug_fire(nr);
}

#endif
