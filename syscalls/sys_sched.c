/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scheduling and accounting: sched_* (SCHED_OTHER only), getpriority/setpriority (recorded per
 * process, never applied to the host), CPU affinity (kept per thread, not applied), getcpu, times,
 * getrusage, membarrier.
 *
 * CPU time: a task's user time runs in its stub and is not measured yet; the sentry's time spent
 * on the process's behalf is counted as system time (the sentry thread's CPU clock for
 * RUSAGE_THREAD, the whole sentry's for RUSAGE_SELF: one sentry serves one sandbox).
 */
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "syscalls/handlers.h"

#define LINUX_SCHED_OTHER 0
#define LINUX_SCHED_FIFO 1
#define LINUX_SCHED_RR 2
#define LINUX_SCHED_BATCH 3
#define LINUX_SCHED_IDLE 5
#define LINUX_SCHED_DEADLINE 6
#define LINUX_SCHED_RESET_ON_FORK 0x40000000
#define USER_HZ 100

/* The nice value of every process: per-process records would need a field in thread_group. */
static int nice_value; /* atomic */

static int copy_out_all(struct task *t, uint64_t addr, const void *src, size_t len)
{
	return mm_copy_out(t->mm, addr, src, len) == (ssize_t)len ? 0 : -EFAULT;
}

/* 0 if pid names the caller or another live task, else -ESRCH (or -EINVAL for pid < 0). */
static int check_pid(struct task *t, int32_t pid)
{
	struct task *o;

	if (pid < 0)
		return -EINVAL;
	if (pid == 0 || pid == t->tid)
		return 0;
	o = kernel_find_task(t->k, pid);
	if (!o)
		return -ESRCH;
	task_put(o);
	return 0;
}

/* sched_getscheduler(2): always SCHED_OTHER. */
long sys_sched_getscheduler(struct task *t, const struct syscall_args *args)
{
	int err = check_pid(t, (int32_t)args->a[0]);

	return err ? err : LINUX_SCHED_OTHER;
}

/* sched_getparam(2): priority 0. */
long sys_sched_getparam(struct task *t, const struct syscall_args *args)
{
	int32_t prio = 0;
	int err;

	if (!args->a[1])
		return -EINVAL;
	err = check_pid(t, (int32_t)args->a[0]);
	if (err)
		return err;
	return copy_out_all(t, args->a[1], &prio, sizeof(prio));
}

static long set_sched(struct task *t, int32_t pid, int policy, uint64_t param)
{
	int32_t prio;
	int err;

	if (!param)
		return -EINVAL;
	err = check_pid(t, pid);
	if (err)
		return err;
	if (mm_copy_in(t->mm, &prio, param, sizeof(prio)) != sizeof(prio))
		return -EFAULT;
	policy &= ~LINUX_SCHED_RESET_ON_FORK;
	switch (policy) {
	case LINUX_SCHED_OTHER:
	case LINUX_SCHED_BATCH:
	case LINUX_SCHED_IDLE:
		if (prio != 0)
			return -EINVAL;
		/* Only SCHED_OTHER is kept: batch and idle are hints it already satisfies. */
		return policy == LINUX_SCHED_OTHER ? 0 : -EPERM;
	case LINUX_SCHED_FIFO:
	case LINUX_SCHED_RR:
		if (prio < 1 || prio > 99)
			return -EINVAL;
		return -EPERM; /* real-time scheduling is not offered in the sandbox */
	default:
		return -EINVAL;
	}
}

/* sched_setscheduler(2): SCHED_OTHER only; real-time policies give EPERM. */
long sys_sched_setscheduler(struct task *t, const struct syscall_args *args)
{
	return set_sched(t, (int32_t)args->a[0], (int)args->a[1], args->a[2]);
}

/* sched_setparam(2): priority 0 only (SCHED_OTHER). */
long sys_sched_setparam(struct task *t, const struct syscall_args *args)
{
	return set_sched(t, (int32_t)args->a[0], LINUX_SCHED_OTHER, args->a[1]);
}

static long prio_bound(int policy, bool max)
{
	switch (policy) {
	case LINUX_SCHED_FIFO:
	case LINUX_SCHED_RR:
		return max ? 99 : 1;
	case LINUX_SCHED_OTHER:
	case LINUX_SCHED_BATCH:
	case LINUX_SCHED_IDLE:
	case LINUX_SCHED_DEADLINE:
		return 0;
	default:
		return -EINVAL;
	}
}

/* sched_get_priority_max(2) */
long sys_sched_get_priority_max(struct task *t, const struct syscall_args *args)
{
	return prio_bound((int)args->a[0], true);
}

/* sched_get_priority_min(2) */
long sys_sched_get_priority_min(struct task *t, const struct syscall_args *args)
{
	return prio_bound((int)args->a[0], false);
}

/* sched_rr_get_interval(2): 0 for SCHED_OTHER, as Linux's CFS reports for a fair task. */
long sys_sched_rr_get_interval(struct task *t, const struct syscall_args *args)
{
	int64_t ts[2] = { 0, 0 };
	int err = check_pid(t, (int32_t)args->a[0]);

	return err ? err : copy_out_all(t, args->a[1], ts, sizeof(ts));
}

/* Online CPUs as the guest numbers them (0..n-1). */
static unsigned int guest_cpus(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	n = CPU_COUNT(&set);
	return n > 0 ? (unsigned int)n : 1;
}

/*
 * The task pid names (0: the caller) with a reference, or NULL. For sched_setaffinity, with
 * Linux's check_same_owner rule (same euid as the target's euid or uid, or CAP_SYS_NICE):
 * *err is -ESRCH, -EINVAL (pid < 0) or -EPERM when NULL is returned.
 */
static struct task *affinity_target(struct task *t, int32_t pid, bool set, int *err)
{
	struct task *o;

	*err = pid < 0 ? -EINVAL : -ESRCH;
	if (pid < 0)
		return NULL;
	if (pid == 0 || pid == t->tid) {
		task_get(t);
		return t;
	}
	o = kernel_find_task(t->k, pid);
	if (!o)
		return NULL;
	if (set && t->cred.euid != o->cred.euid && t->cred.euid != o->cred.uid &&
	    !(t->cred.cap_effective & (1ULL << 23 /* CAP_SYS_NICE */))) {
		task_put(o);
		*err = -EPERM;
		return NULL;
	}
	return o;
}

#define AFFINITY_WORDS 16 /* sizeof(((struct task *)0)->affinity) / 8: CPU_SETSIZE bits */

/* o's mask of guest CPUs 0..n-1. */
static void affinity_read(struct task *o, unsigned int n, uint64_t mask[AFFINITY_WORDS])
{
	bool set = __atomic_load_n(&o->affinity_set, __ATOMIC_ACQUIRE);

	memset(mask, 0, AFFINITY_WORDS * sizeof(uint64_t));
	for (unsigned int i = 0; i < n && i < AFFINITY_WORDS * 64; i++) {
		if (!set ||
		    (__atomic_load_n(&o->affinity[i / 64], __ATOMIC_RELAXED) >> (i % 64)) & 1)
			mask[i / 64] |= 1ULL << (i % 64);
	}
}

/*
 * sched_setaffinity(2): the mask (zero-extended, truncated past CPU_SETSIZE) is kept per thread,
 * without offline CPUs, and reported by sched_getaffinity; EINVAL when it has no online CPU.
 * Sentry threads are not pinned for the guest: it is a record only.
 */
long sys_sched_setaffinity(struct task *t, const struct syscall_args *args)
{
	unsigned int len = (unsigned int)args->a[1], n = guest_cpus();
	uint64_t mask[AFFINITY_WORDS] = { 0 };
	/* Linux reads no further than nr_cpu_ids bits (in longs), then looks for the task. */
	size_t copy = MIN(MIN((size_t)len, (size_t)(n + 63) / 64 * 8), sizeof(mask));
	bool any = false;
	struct task *o;
	int err;

	if (copy && mm_copy_in(t->mm, mask, args->a[2], copy) != (ssize_t)copy)
		return -EFAULT;
	o = affinity_target(t, (int32_t)args->a[0], true, &err);
	if (!o)
		return err == -EINVAL ? -ESRCH : err;
	for (unsigned int i = 0; i < AFFINITY_WORDS * 64; i++) {
		if (i >= n)
			mask[i / 64] &= ~(1ULL << (i % 64));
		else
			any |= (mask[i / 64] >> (i % 64)) & 1;
	}
	if (any) {
		for (unsigned int w = 0; w < AFFINITY_WORDS; w++)
			__atomic_store_n(&o->affinity[w], mask[w], __ATOMIC_RELAXED);
		__atomic_store_n(&o->affinity_set, true, __ATOMIC_RELEASE);
	}
	task_put(o);
	return any ? 0 : -EINVAL;
}

/*
 * sched_getaffinity(2): the host's usable CPUs renumbered 0..n-1, as far as the thread's own
 * mask allows; nr_cpu_ids is n, so the returned size is n bits rounded up to longs. No
 * permission is needed to read another task's mask.
 */
long sys_sched_getaffinity(struct task *t, const struct syscall_args *args)
{
	unsigned int len = (unsigned int)args->a[1];
	uint64_t mask[AFFINITY_WORDS];
	unsigned int n = guest_cpus();
	unsigned int size = (n + 63) / 64 * 8;
	unsigned int retlen;
	struct task *o;
	int err;

	/* Linux computes len * 8 in unsigned int arithmetic; keep its wrap-around. */
	if (len * 8u < n)
		return -EINVAL;
	if (len & (sizeof(uint64_t) - 1))
		return -EINVAL;
	o = affinity_target(t, (int32_t)args->a[0], false, &err);
	if (!o)
		return err == -EINVAL ? -ESRCH : err;
	affinity_read(o, n, mask);
	task_put(o);
	retlen = MIN(len, MIN(size, (unsigned int)sizeof(mask)));
	err = copy_out_all(t, args->a[2], mask, retlen);
	return err ? err : (long)retlen;
}

/*
 * getcpu(2): the host CPU the sentry thread runs on, within the guest's numbering; a CPU the
 * thread's affinity excludes reads as the first one it allows (the sentry does not pin it).
 */
long sys_getcpu(struct task *t, const struct syscall_args *args)
{
	int cpu = sched_getcpu();
	unsigned int n = guest_cpus();
	uint32_t c = cpu < 0 ? 0 : (uint32_t)cpu % n, node = 0;
	uint64_t mask[AFFINITY_WORDS];
	int err;

	affinity_read(t, n, mask);
	if (c >= AFFINITY_WORDS * 64 || !((mask[c / 64] >> (c % 64)) & 1)) {
		for (unsigned int i = 0; i < n && i < AFFINITY_WORDS * 64; i++) {
			if ((mask[i / 64] >> (i % 64)) & 1) {
				c = i;
				break;
			}
		}
	}
	if (args->a[0] && (err = copy_out_all(t, args->a[0], &c, sizeof(c))))
		return err;
	if (args->a[1] && (err = copy_out_all(t, args->a[1], &node, sizeof(node))))
		return err;
	return 0;
}

#define LINUX_PRIO_PROCESS 0
#define LINUX_PRIO_PGRP 1
#define LINUX_PRIO_USER 2

/* getpriority(2): returns 20 - nice, as the raw system call does. */
long sys_getpriority(struct task *t, const struct syscall_args *args)
{
	int which = (int)args->a[0];

	if (which < LINUX_PRIO_PROCESS || which > LINUX_PRIO_USER)
		return -EINVAL;
	if (which == LINUX_PRIO_PROCESS && (int32_t)args->a[1] != 0) {
		int err = check_pid(t, (int32_t)args->a[1]);

		if (err)
			return err;
	}
	return 20 - __atomic_load_n(&nice_value, __ATOMIC_RELAXED);
}

/* setpriority(2): one nice value for the sandbox; lowering it needs CAP_SYS_NICE. */
long sys_setpriority(struct task *t, const struct syscall_args *args)
{
	int which = (int)args->a[0], nice = (int)args->a[2];

	if (which < LINUX_PRIO_PROCESS || which > LINUX_PRIO_USER)
		return -EINVAL;
	if (which == LINUX_PRIO_PROCESS && (int32_t)args->a[1] != 0) {
		int err = check_pid(t, (int32_t)args->a[1]);

		if (err)
			return err;
	}
	nice = nice < -20 ? -20 : nice > 19 ? 19 : nice;
	if (nice < __atomic_load_n(&nice_value, __ATOMIC_RELAXED) &&
	    !(t->cred.cap_effective & (1ULL << 23 /* CAP_SYS_NICE */)))
		return -EACCES;
	__atomic_store_n(&nice_value, nice, __ATOMIC_RELAXED);
	return 0;
}

static uint64_t host_cpu_ns(clockid_t c)
{
	struct timespec ts;

	if (clock_gettime(c, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

struct linux_rusage {
	int64_t utime[2], stime[2];
	int64_t maxrss, ixrss, idrss, isrss, minflt, majflt, nswap, inblock, oublock, msgsnd,
		msgrcv, nsignals, nvcsw, nivcsw;
};

static void ns_to_tv(uint64_t ns, int64_t tv[2])
{
	tv[0] = (int64_t)(ns / 1000000000ULL);
	tv[1] = (int64_t)(ns % 1000000000ULL / 1000);
}

/* getrusage(2): RUSAGE_SELF, RUSAGE_CHILDREN, RUSAGE_THREAD; see the file comment on times. */
long sys_getrusage(struct task *t, const struct syscall_args *args)
{
	int who = (int)args->a[0];
	struct linux_rusage ru;
	uint64_t u, s;

	memset(&ru, 0, sizeof(ru));
	pthread_mutex_lock(&t->tg->lock);
	switch (who) {
	case RUSAGE_SELF:
		u = t->tg->utime_ns;
		s = t->tg->stime_ns + host_cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
		break;
	case RUSAGE_CHILDREN:
		u = t->tg->cutime_ns;
		s = t->tg->cstime_ns;
		break;
	case RUSAGE_THREAD:
		u = 0;
		s = host_cpu_ns(CLOCK_THREAD_CPUTIME_ID);
		break;
	default:
		pthread_mutex_unlock(&t->tg->lock);
		return -EINVAL;
	}
	pthread_mutex_unlock(&t->tg->lock);
	ns_to_tv(u, ru.utime);
	ns_to_tv(s, ru.stime);
	return copy_out_all(t, args->a[1], &ru, sizeof(ru));
}

/* times(2): clock ticks (USER_HZ) since the sandbox started. */
long sys_times(struct task *t, const struct syscall_args *args)
{
	int64_t tms[4];
	struct timespec now;
	uint64_t tick = 1000000000ULL / USER_HZ;

	pthread_mutex_lock(&t->tg->lock);
	tms[0] = (int64_t)(t->tg->utime_ns / tick);
	tms[1] = (int64_t)((t->tg->stime_ns + host_cpu_ns(CLOCK_PROCESS_CPUTIME_ID)) / tick);
	tms[2] = (int64_t)(t->tg->cutime_ns / tick);
	tms[3] = (int64_t)(t->tg->cstime_ns / tick);
	pthread_mutex_unlock(&t->tg->lock);
	if (args->a[0] && copy_out_all(t, args->a[0], tms, sizeof(tms)))
		return -EFAULT;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (long)(((uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec) / tick);
}

#define MEMBARRIER_CMD_QUERY 0
#define MEMBARRIER_CMD_GLOBAL (1 << 0)
#define MEMBARRIER_CMD_GLOBAL_EXPEDITED (1 << 1)
#define MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED (1 << 2)
#define MEMBARRIER_CMD_PRIVATE_EXPEDITED (1 << 3)
#define MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED (1 << 4)
#define MEMBARRIER_SUPPORTED                                                           \
	(MEMBARRIER_CMD_GLOBAL | MEMBARRIER_CMD_GLOBAL_EXPEDITED |                     \
	 MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED | MEMBARRIER_CMD_PRIVATE_EXPEDITED | \
	 MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED)

/*
 * membarrier(2): QUERY, GLOBAL(_EXPEDITED), PRIVATE_EXPEDITED and the REGISTER commands
 * (registration is not required first, where Linux gives EPERM without it).
 *
 * What Linux promises: when the call returns, every other thread of the process that was
 * running has executed a full barrier. Threads in the sentry (blocked, or handling a system
 * call or fault) satisfy it already: their way in was a ptrace stop, a host context switch,
 * which is a full barrier. The call is a fence in the sentry; a thread running guest code at
 * that moment is NOT forced through a barrier. On x86-64 (TSO) the difference only shows for a
 * thread whose own stores sit in its store buffer while it never enters the kernel; forcing it
 * would mean interrupting every running thread of the mm (ctx_interrupt) and waiting for each
 * stop, which the platform interface does not offer a wait for yet.
 */
long sys_membarrier(struct task *t, const struct syscall_args *args)
{
	int cmd = (int)args->a[0];
	unsigned int flags = (unsigned int)args->a[1];

	if (cmd == MEMBARRIER_CMD_QUERY)
		return flags ? -EINVAL : MEMBARRIER_SUPPORTED;
	if (flags)
		return -EINVAL;
	if (!(cmd & MEMBARRIER_SUPPORTED) || (cmd & (cmd - 1)))
		return -EINVAL;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return 0;
}
