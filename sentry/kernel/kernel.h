/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kernel: state of one sandbox shared by all its tasks.
 */
#ifndef HUSK_SENTRY_KERNEL_H
#define HUSK_SENTRY_KERNEL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "sentry/mm/memfile.h"

struct platform;
struct gofer_client;
struct vfs_mount;
struct vfs_node;
struct task;

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
};

/*
 * Finds the task with guest tid, or the thread group with guest pid, and returns a new
 * reference (task_put / tg_put), or NULL. Any thread.
 */
struct task *kernel_find_task(struct kernel *k, int32_t tid);
struct thread_group *kernel_find_tg(struct kernel *k, int32_t pid);

/* Logs "unimplemented system call NAME (NR)" once per sandbox per number. */
void kernel_log_unimplemented(struct kernel *k, long nr);

#endif
