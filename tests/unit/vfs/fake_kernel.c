/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process-model calls of sentry/kernel/ that filesystems in vfs_lib use (devpts: sessions,
 * process groups, job-control signals), for VFS tests that link no kernel: one task, no other
 * process, every capability.
 */
#include "sentry/kernel/ipc.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/ptrace.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/pidns.h"
#include "sentry/kernel/task.h"
#include "sentry/time/vtime.h"

struct thread_group *kernel_find_tg(struct kernel *k, int32_t pid)
{
	return NULL;
}

int signal_send_tg(struct thread_group *tg, int sig, const void *info)
{
	return 0;
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

bool cred_capable(const struct cred *c, int cap)
{
	return cap >= 0 && cap < 64 && (c->cap_effective & (1ULL << cap));
}

/* /proc/sysvipc's generators (sentry/kernel/ipc*.c is not linked here): no objects. */
int ipc_proc_shm(FILE *out)
{
	return 0;
}

int ipc_proc_sem(FILE *out)
{
	return 0;
}

int ipc_proc_msg(FILE *out)
{
	return 0;
}

/* /proc/PID/mem's open check (sentry/kernel/ptrace.c is not linked here): the one task may. */
int ptrace_may_access(struct task *caller, struct task *target)
{
	return 0;
}

/* procfs's uptime and start times (sentry/time is not linked here): no offset. */
uint64_t vtime_host_to_guest_mono(uint64_t host_ns)
{
	return host_ns;
}

/* Pid namespaces (sentry/kernel/pidns.c): the harness has the initial one only. */
int32_t pid_ns_task_nr(const struct task *t, const struct pid_ns *ns)
{
	return t->tid;
}

int32_t pid_ns_tg_nr(const struct thread_group *tg, const struct pid_ns *ns)
{
	return tg->pid;
}

int32_t pid_ns_nr_of(struct kernel *k, int32_t global, const struct pid_ns *ns)
{
	return global;
}

struct task *pid_ns_lookup(struct kernel *k, const struct pid_ns *ns, int32_t nr)
{
	return NULL;
}

int32_t task_vnr(struct task *viewer, int32_t global)
{
	return global;
}

int32_t task_global_nr(struct task *viewer, int32_t nr)
{
	return nr;
}
