/* SPDX-License-Identifier: Apache-2.0 */
/* The stub process of the ptrace platform: its code page and its creation. Private to ptrace/. */
#ifndef HUSK_SENTRY_PLATFORM_PTRACE_STUB_H
#define HUSK_SENTRY_PLATFORM_PTRACE_STUB_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sentry/platform/platform.h"

/* Where the code page lives (the same address in the sentry and in every stub). */
struct stub_code {
	uint64_t page; /* start of the page */
	uint64_t gadget; /* `syscall; int3`: injected calls run here */
	uint64_t gadget_done; /* rip at the SIGTRAP stop after an injected call */
	uint64_t setup_done; /* rip at the SIGTRAP stop that ends the stub's set-up */
	uint64_t clone; /* `syscall` of clone: the parent traps after it, the child parks */
	uint64_t clone_done; /* rip at the parent's SIGTRAP stop after the clone */
	uint64_t fork; /* `syscall` of the template's fork (clone STUB_FORK_FLAGS) */
	uint64_t fork_done; /* rip at the template's SIGTRAP stop after the fork */
	uint64_t forked_done; /* rip at the new stub's SIGTRAP stop once it set itself up */
};

/*
 * Reserves and fills the code page in the sentry the first time it is called (later calls
 * return the first result). Returns the code page, or NULL and *err = -errno.
 */
const struct stub_code *stub_code_get(int *err);

/*
 * Forks a stub from the calling thread and waits until it has set itself up: it holds only
 * memfd (as PTRACE_STUB_MEMFD), maps only the code page, runs under its seccomp filter, and
 * sits in a ptrace stop with the calling thread as tracer (options EXITKILL|TRACESYSGOOD).
 * Returns 0 with *pid and *regs (its registers at that stop), or -errno; on failure no
 * process is left behind.
 */
int stub_spawn(const struct stub_code *code, int memfd, int imagefd, pid_t *pid, arch_regs_t *regs);

/*
 * True if stubs may be bound to their tracer's CPU: the first stub_spawn() of the process
 * finds out whether the sentry's seccomp filter allows sched_setaffinity (the first stub
 * inherits that filter and tries the call; if it is killed, a second stub is made without).
 */
bool stub_cpu_binding(void);

/* waitpid(pid, status, __WALL) that retries on EINTR. Returns 0 or -errno. */
int stub_wait(pid_t pid, int *status);

/* Kills pid with SIGKILL and reaps it. pid must be an unreaped child of this process. */
void stub_kill_and_reap(pid_t pid);

#endif
