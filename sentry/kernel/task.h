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

#include "common/list.h"
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

/*
 * Credentials of a task (copied on clone; shared semantics come from copying at the right
 * time, as Linux's COW creds). Capabilities are bit sets of CAP_* (linux/capability.h).
 */
struct cred {
	uint32_t uid, euid, suid, fsuid;
	uint32_t gid, egid, sgid, fsgid;
	int ngroups;
	uint32_t groups[32];
	uint64_t cap_effective, cap_permitted, cap_inheritable, cap_bounding, cap_ambient;
	uint32_t securebits;
	bool keep_caps; /* PR_SET_KEEPCAPS */
};

/* A queued signal: its siginfo (128 bytes, x86-64 layout) for SA_SIGINFO handlers. */
struct sigqueue {
	struct list_head link;
	uint8_t info[128];
};

/* Pending signals: a set plus the queue of their siginfos (rt signals may be queued twice). */
struct sigpending {
	uint64_t set; /* bit signo - 1 */
	struct list_head queue; /* of struct sigqueue */
};

/* Signal actions, shared by the threads of a process (CLONE_SIGHAND). */
struct sighand {
	struct refcount ref;
	pthread_mutex_t lock; /* protects actions, and every sigpending of the tasks using it */
	struct linux_sigaction actions[LINUX_NSIG]; /* index signo - 1 */
};

enum tg_state {
	TG_RUNNING,
	TG_ZOMBIE, /* every thread has exited; the parent has not reaped it */
	TG_DEAD, /* reaped (or auto-reaped) */
};

/*
 * A guest process: its threads, its place in the process tree, signal state shared by its
 * threads, limits and exit status.
 *
 * Locks: tree fields (parent, children, sibling, pgid, sid, and the kernel's pid table) are
 * protected by k->tree_lock; the rest by tg->lock unless noted. Lock order: k->tree_lock, then
 * tg->lock, then sighand->lock, then a task's wait_lock.
 */
struct thread_group {
	struct refcount ref;
	pthread_mutex_t lock;
	struct kernel *k;
	int32_t pid; /* the leader's tid */
	int32_t ppid; /* kept in sync with parent->pid for cheap getppid */
	struct task *leader;
	struct list_head tasks; /* of task.tg_link */
	int nr_threads; /* live threads */

	/* Process tree (k->tree_lock). */
	struct thread_group *parent;
	struct list_head children; /* of thread_group.sibling */
	struct list_head sibling;
	int32_t pgid, sid;
	bool subreaper; /* PR_SET_CHILD_SUBREAPER */

	struct sighand *sighand; /* referenced */
	struct sigpending shared_pending; /* sighand->lock */
	int exit_signal; /* sent to the parent when this process ends (clone's low byte) */

	struct rlimit rlimits[LINUX_RLIM_NLIMITS];
	uint32_t umask_unused; /* umask lives in fs_context */

	/* Exit and job control (tg->lock). */
	enum tg_state state;
	bool exiting; /* exit_group or a fatal signal started; threads are leaving */
	int exit_status; /* wait status: (code << 8) | termsig | core flag */
	bool stopped; /* group stop in effect */
	int stop_signal;
	bool report_stop; /* a stop not yet reported to wait(WUNTRACED) */
	bool report_continue; /* a continue not yet reported to wait(WCONTINUED) */

	/* Accounting for getrusage/times/wait4 (tg->lock), in nanoseconds. */
	uint64_t utime_ns, stime_ns, cutime_ns, cstime_ns;
	uint64_t start_ns; /* CLOCK_MONOTONIC at creation */

	void *timers; /* interval and POSIX timers, owned by sentry/kernel/timer.c */
	bool dumpable;
};

/* See sentry/kernel/waitq.h. */
struct waitq;
struct completion;

struct task {
	struct refcount ref;
	struct kernel *k;
	int32_t tid;
	struct thread_group *tg; /* referenced */
	struct list_head tg_link; /* in tg->tasks (tg->lock) */
	pthread_t thread; /* the host thread running task_run() */

	struct mm *mm; /* referenced */
	struct fdtable *fdt; /* referenced */
	struct fs_context *fs; /* referenced */
	struct cred cred; /* written only by the task itself */
	struct platform_ctx *ctx;
	arch_regs_t regs; /* guest registers while in the sentry */

	/* Signals (sighand->lock for pending). */
	struct sigpending pending;
	uint64_t sigmask; /* blocked signals, bit signo - 1; written by the task itself */
	uint64_t saved_sigmask; /* restored after a handler runs (sigsuspend, pselect, ppoll) */
	bool restore_sigmask;
	uint64_t altstack_sp, altstack_size;
	int altstack_flags;
	int pdeath_signal; /* PR_SET_PDEATHSIG */

	/* Blocking (see waitq.h): wait_lock protects the two flags. */
	pthread_mutex_t wait_lock;
	pthread_cond_t wait_cond;
	bool wake_pending; /* a wakeup arrived since the task last checked */
	bool in_guest; /* between ctx_switch calls: interrupt with ctx_interrupt */

	/* Thread life. */
	uint64_t set_child_tid, clear_child_tid;
	uint64_t robust_list, robust_len;
	uint64_t rseq, rseq_len;
	uint32_t rseq_sig;
	struct completion *vfork_done; /* signalled at exec or exit of a vfork child */
	bool no_new_privs;
	char comm[16];

	/* ERESTART_RESTARTBLOCK: how to restart (nanosleep's remaining time, ...). */
	long (*restart_fn)(struct task *t);
	uint64_t restart_data[4];

	bool exiting; /* set by exit/exit_group or a fatal signal: the run loop ends */
	int exit_code; /* this thread's exit code (exit(2)) */
};

void task_get(struct task *t);
void task_put(struct task *t);

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
