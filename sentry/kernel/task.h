/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tasks (guest threads) and thread groups (guest processes).
 *
 * Each task is run by one sentry host thread executing task_run(): switch to the guest through
 * the platform, handle the system call or fault that brought control back, repeat.
 */
#ifndef HUSK_SENTRY_TASK_H
#define HUSK_SENTRY_TASK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>

#include "common/refcount.h"
#include "sentry/platform/platform.h"

struct kernel;
struct mm;
struct fdtable;
struct fs_context;

#define LINUX_NSIG 64
#define LINUX_RLIM_NLIMITS 16

/* struct sigaction as the kernel sees it on x86-64 (rt_sigaction). */
struct linux_sigaction {
	uint64_t handler;
	uint64_t flags;
	uint64_t restorer;
	uint64_t mask;
};

struct cred {
	uint32_t uid, euid, suid, fsuid;
	uint32_t gid, egid, sgid, fsgid;
	int ngroups;
	uint32_t groups[32];
};

/* A guest process. Single-threaded for now; fields are protected by lock. */
struct thread_group {
	struct refcount ref;
	pthread_mutex_t lock;
	int32_t pid, ppid, pgid, sid;
	struct linux_sigaction actions[LINUX_NSIG]; /* index signo - 1 */
	struct rlimit rlimits[LINUX_RLIM_NLIMITS];
	bool exiting;
	int exit_status; /* wait status: (code << 8) or signal number */
};

struct task {
	struct kernel *k;
	int32_t tid;
	struct thread_group *tg;
	struct mm *mm; /* referenced */
	struct fdtable *fdt; /* referenced */
	struct fs_context *fs; /* referenced */
	struct cred cred;
	struct platform_ctx *ctx;
	arch_regs_t regs; /* guest registers while in the sentry */

	uint64_t clear_child_tid;
	uint64_t robust_list, robust_len;
	uint64_t rseq, rseq_len;
	uint32_t rseq_sig;
	uint64_t sigmask; /* blocked signals, bit signo - 1 */
	uint64_t altstack_sp, altstack_size;
	int altstack_flags;
	char comm[16];

	bool exiting; /* set by exit/exit_group: the run loop ends */
};

/* Number of the thread group's pid as the guest sees it. */
static inline int32_t task_pid(const struct task *t)
{
	return t->tg->pid;
}

/*
 * Creates pid 1 for kernel k with the given fd table and fs context (references taken),
 * credentials from the host caller (uid/gid given), default rlimits. Returns ERR_PTR(-errno).
 */
struct task *task_create_init(struct kernel *k, struct fdtable *fdt, struct fs_context *fs,
			      uint32_t uid, uint32_t gid);

/*
 * Replaces t's program with the one at path (execve without the guest-memory copy-in):
 * loads it into a new mm and platform space, then switches t over. On failure t is unchanged.
 * Returns 0 or -errno (-ENOENT, -EACCES, -ENOEXEC, -E2BIG, -ENOMEM).
 */
int task_exec(struct task *t, const char *path, char *const argv[], char *const envp[]);

/* Runs t until it exits; returns its wait status (exit code << 8, or the killing signal). */
int task_run(struct task *t);

/*
 * Releases what a task that has finished running holds: its platform context, mm (and with
 * it the stub, killed and reaped), fd table and fs context.
 */
void task_release(struct task *t);

/* Ends the task's thread group with the given wait status (exit_group semantics). */
void task_exit_group(struct task *t, int status);

#endif
