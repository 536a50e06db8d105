/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ptrace platform (PTRACE_SYSEMU), internal interface. The sentry reaches it only through
 * platform_create("ptrace", ...); the declarations here are for platform.c and the unit tests.
 * See sentry/platform/README.md for the model and the stub's memory layout.
 */
#ifndef HUSK_SENTRY_PLATFORM_PTRACE_H
#define HUSK_SENTRY_PLATFORM_PTRACE_H

#include <linux/filter.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sentry/platform/platform.h"

/* The memory file's FD number inside every stub (the stub holds no other FD). */
#define PTRACE_STUB_MEMFD 3
#define PTRACE_STUB_IMAGEFD 4 /* a restore's pages file (struct platform's imagefd), if any */

/*
 * Preferred address of the stub code page, the first page of the area above
 * PLATFORM_GUEST_MAX. If the sentry already has something there, the next free
 * PTRACE_STUB_ADDR_STEP step below PTRACE_STUB_ADDR_LIMIT is used (see README.md).
 */
#define PTRACE_STUB_ADDR PLATFORM_GUEST_MAX
#define PTRACE_STUB_ADDR_STEP 0x10000000ULL
#define PTRACE_STUB_ADDR_LIMIT 0x7fff00000000ULL

/* clone(2) flags of a new stub thread (ctx_clone): a thread sharing everything. */
#define STUB_CLONE_FLAGS 0x50f00 /* VM|FS|FILES|SIGHAND|THREAD|SYSVSEM */

/*
 * clone(2) flags of a new stub forked from the template stub (as_create): a process whose parent
 * is the template's (the sentry's stub factory thread), traced by the template's tracer from its
 * first instruction (see README.md, "The template stub"). Exit signal 0.
 */
#define STUB_FORK_FLAGS 0xa000 /* PARENT|PTRACE */

/* Host signal ctx_interrupt sends to a stub thread (harmless if it ever reached anyone). */
#define PTRACE_INTERRUPT_SIGNAL SIGCHLD

/* Longest filter ptrace_stub_filter() builds. */
#define PTRACE_STUB_FILTER_MAX 64
/* Length of the filter ptrace_stub_child_filter() builds. */
#define PTRACE_STUB_CHILD_FILTER_LEN 6

/*
 * Creates the ptrace platform over memfd (not owned). Returns 0 and *out, or -errno
 * (-EBADF if memfd is not open, -ENOMEM, or the error of reserving the stub code page).
 */
int ptrace_platform_create(int memfd, struct platform **out);

/*
 * Builds the stub's seccomp filter for a code page at code_page (page aligned) into out
 * (room for PTRACE_STUB_FILTER_MAX instructions): a call is allowed only if its instruction
 * pointer is inside [code_page, code_page + 4096) and its number is mmap, mprotect, munmap,
 * exit or exit_group, or futex with FUTEX_WAIT_PRIVATE (a new thread waiting to be adopted), or
 * clone with exactly STUB_CLONE_FLAGS (a new stub thread) or exactly STUB_FORK_FLAGS (a new stub
 * forked from the template), or prctl(PR_SET_PDEATHSIG, 0 or SIGKILL), or
 * seccomp(SECCOMP_SET_MODE_FILTER, 0, ...) (a filter can only take rights away); every other
 * call, and every call of another ABI, kills the process. The template stub runs under it.
 * Returns the number of instructions.
 */
size_t ptrace_stub_filter(uint64_t code_page, struct sock_filter *out);

/*
 * Builds into out (PTRACE_STUB_CHILD_FILTER_LEN instructions) the filter a stub forked from the
 * template stacks on the one it inherited: clone with STUB_FORK_FLAGS kills the process, so that
 * only the template can fork. Returns the number of instructions.
 */
size_t ptrace_stub_child_filter(struct sock_filter *out);

/*
 * Address of the stub code page every stub of this process uses, or 0 before the first
 * platform was created. Stable for the life of the process.
 */
uint64_t ptrace_stub_code_page(void);

/* Host pid of the stub process behind as (for tests and diagnostics), or -1 once reaped. */
pid_t ptrace_as_stub_pid(struct platform_as *as);

#endif
