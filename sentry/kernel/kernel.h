/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kernel: state of one sandbox shared by all its tasks.
 */
#ifndef HUSK_SENTRY_KERNEL_H
#define HUSK_SENTRY_KERNEL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/idmap.h"
#include "sentry/mm/memfile.h"

struct platform;
struct gofer_client;
struct vfs_mount;
struct vfs_node;
struct task;
struct nsproxy;

#define HUSK_UTS_RELEASE "6.6.0"
#define HUSK_UTS_VERSION "#1 SMP husk"

struct kernel {
	struct platform *platform;
	struct memfile mf;
	struct gofer_client *gofer;

	/* The root of the sandbox's mount tree; set by vfs_mount_root(); owned by vfs. */
	struct vfs_mount *root_mnt;
	struct vfs_node *root_node;

	/*
	 * The process tree and the pid table: parent/children/sibling/pgid/sid of every thread
	 * group and the tid -> task map. Taken before any tg->lock.
	 */
	pthread_mutex_t tree_lock;
	void *pids; /* tid -> task map, private to sentry/kernel/pid.c (tree_lock) */
	int nr_tasks; /* live tasks (tree_lock) */
	int pids_limit; /* linux.resources.pids.limit: clone past it is -EAGAIN; 0: none */

	pthread_mutex_t lock; /* protects the fields below */
	char hostname[65];
	char domainname[65];
	int32_t next_tid;
	struct task *init; /* pid 1 */
	uint64_t unimpl_logged[8]; /* bitmap: unimplemented syscalls already logged */

	uint64_t boot_ns; /* CLOCK_MONOTONIC at start, for sysinfo uptime */
	bool strace; /* print each guest call (husk do --strace) */
	int strace_fd; /* where --strace lines go */

	/* User and system time of every guest thread that has exited (atomics; cputime.c). */
	uint64_t exited_utime_ns, exited_stime_ns;
	/* System calls dispatched and page faults taken by guest tasks (relaxed atomics; read by
	 * CONTROL_STATS for husk serve's usage). */
	uint64_t nr_syscalls, nr_faults;

	/*
	 * Freezing (freeze.c): while freezing > 0 (atomic) every task parks (task_park) before
	 * it would run guest code, and interruptible waits end as on a signal with no handler
	 * (the call restarts after the thaw). freeze_lock protects the counts; freeze_cond is
	 * signalled when a task parks or leaves and when the freeze ends.
	 */
	int freezing;
	pthread_mutex_t freeze_lock;
	pthread_cond_t freeze_cond;
	int nr_parked; /* tasks parked (freeze_lock) */
	int nr_parked_unclean; /* of which parked inside a wait that cannot restart (vfork) */
	uint64_t frozen_at_ns; /* CLOCK_MONOTONIC when the last freeze completed */
	bool freeze_save_fp; /* a checkpoint: tasks parking cleanly store their FP state */
	uint64_t freeze_fp_gen; /* bumped by each clean freeze (freeze_lock) */
	int nr_parked_fp; /* parked tasks that stored their FP state for freeze_fp_gen */

	/*
	 * Ids and namespaces as the guest sees them (/proc/PID/uid_map, gid_map, ns/): the
	 * sandbox's id mappings (linux.uidMappings; empty: the identity), set before the first
	 * task and constant after; the first namespace inode number, random per sandbox (0 until
	 * proc first needs it; atomic).
	 */
	struct idmap uid_map, gid_map;
	uint32_t ns_ino_base;
	/* The initial UTS, IPC and user namespaces (nsproxy.c; made on first use, atomic). */
	struct nsproxy *init_ns;
	/* process.oomScoreAdj: what a process started by the control socket gets by default. */
	int oom_score_adj;
};

/*
 * Stops every task of the sandbox (husk pause, checkpoint): each parks before it would run guest
 * code again; a task blocked in an interruptible wait leaves it (its call restarts later), one in
 * a wait that cannot be interrupted (a vfork parent) parks inside it. Returns 0 once every task
 * is parked (for clean: parked where its whole state is its registers and the kernel objects,
 * i.e. not inside a wait), else -EBUSY after timeout_ms (the freeze is undone) with *busy_tid
 * the tid of a task that did not park. Nested freezes count. Any non-task thread.
 */
int kernel_freeze(struct kernel *k, bool clean, int timeout_ms, int32_t *busy_tid);
/* Ends one kernel_freeze: when none is left, the tasks run again. */
void kernel_thaw(struct kernel *k);
static inline bool kernel_freezing(struct kernel *k)
{
	return __atomic_load_n(&k->freezing, __ATOMIC_ACQUIRE) > 0;
}
/* Sets up the freeze lock and condition (pid_table_init calls it). */
void kernel_freeze_init(struct kernel *k);

/*
 * Finds the task with guest tid, or the thread group with guest pid, and returns a new
 * reference (task_put / tg_put), or NULL. Any thread.
 */
struct task *kernel_find_task(struct kernel *k, int32_t tid);
struct thread_group *kernel_find_tg(struct kernel *k, int32_t pid);

/* Logs "unimplemented system call NAME (NR)" once per sandbox per number. */
void kernel_log_unimplemented(struct kernel *k, long nr);

#endif
