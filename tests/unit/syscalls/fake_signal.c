/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stand-ins for what sys_signal.c and sentry/kernel/signals.c, signal_frame.c reach outside
 * them, for the unit test of the signal handlers: no process tree (only the harness's task),
 * waits that return at once, no platform.
 */
#include <errno.h>

#include "common/err.h"
#include "include/abi/linux/errno.h"
#include "sentry/fs/proc/proc.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/pidns.h"
#include "sentry/kernel/ptrace.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/waitq.h"
#include "sentry/platform/platform.h"

void task_wake(struct task *t)
{
}

void waitq_init(struct waitq *wq)
{
	pthread_mutex_init(&wq->lock, NULL);
	list_init(&wq->waiters);
}

void waitq_wake_all(struct waitq *wq)
{
}

long task_wait(struct task *t, struct waitq *const *wqs, int nwq, wait_cond_fn cond, void *arg,
	       const struct timespec *deadline, bool interruptible)
{
	if (cond && cond(arg))
		return 0;
	return deadline ? -ETIMEDOUT : -ERESTARTSYS;
}

void task_exit_group(struct task *t, int status)
{
	t->tg->exiting = true;
	t->tg->exit_status = status;
	t->exiting = true;
}

void tg_child_state_changed(struct thread_group *child)
{
}

size_t platform_fpstate_size(void)
{
	return 1024;
}

uint64_t platform_user_xfeatures(void)
{
	return 0x7; /* x87, SSE, AVX */
}

struct task *kernel_find_task(struct kernel *k, int32_t tid)
{
	return NULL;
}

void task_put(struct task *t)
{
}

void tg_get(struct thread_group *tg)
{
}

void tg_put(struct thread_group *tg)
{
}

/* Pod members' pid namespaces (sentry/kernel/pid.c): none here, every process is visible. */
bool pid_visible(const struct thread_group *viewer, const struct thread_group *target)
{
	(void)viewer, (void)target;
	return true;
}

int pid_for_each_tg(struct kernel *k, int (*fn)(struct thread_group *tg, void *arg), void *arg)
{
	return 0;
}

struct thread_group *pidfd_get_tg(struct task *t, int fd)
{
	return ERR_PTR(-EBADF);
}

/* No procfs: no file is a /proc/PID directory. */
int32_t proc_file_pid(struct file *f)
{
	return -EBADF;
}

struct task *pid_lookup(struct kernel *k, int32_t tid)
{
	return NULL;
}

/* ptrace hooks of signals.c: the harness's tasks are never traced. */
bool ptrace_trap(struct task *t)
{
	return false;
}

bool ptrace_runs_in_group_stop(struct task *t)
{
	return false;
}

int ptrace_signal(struct task *t, int sig, struct linux_siginfo *info)
{
	return sig;
}

/* Pid namespaces (sentry/kernel/pidns.c): the harness's task is in the initial one. */
bool pid_ns_is_ancestor(const struct pid_ns *outer, const struct pid_ns *inner)
{
	return true;
}

bool task_sees_tg(struct task *viewer, const struct thread_group *tg)
{
	return true;
}

struct task *task_find_vtask(struct task *viewer, int32_t nr)
{
	return kernel_find_task(viewer->k, nr);
}

int32_t task_vpid(struct task *viewer, struct thread_group *tg)
{
	return tg->pid;
}

int32_t task_global_nr(struct task *viewer, int32_t nr)
{
	return nr;
}
