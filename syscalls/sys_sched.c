/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scheduling and accounting: sched_* (policies recorded per task, never applied to the host),
 * getpriority/setpriority (one nice value for the sandbox, never applied to the host), CPU
 * affinity (kept per thread, not applied), getcpu, times, getrusage, membarrier.
 *
 * CPU time: user time is the time guest code ran (its stub thread's), system time the CPU time
 * of the sentry thread that serves the task (sentry/kernel/cputime.h).
 */
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "common/cpus.h"
#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/pidns.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/time/vtime.h"
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
	o = task_find_vtask(t, pid);
	if (!o)
		return -ESRCH;
	task_put(o);
	return 0;
}

#define LINUX_SCHED_FLAG_RESET_ON_FORK 0x01
#define LINUX_SCHED_FLAG_KEEP_POLICY 0x08
#define LINUX_SCHED_FLAG_KEEP_PARAMS 0x10
#define LINUX_SCHED_FLAG_UTIL_CLAMP 0x60
#define LINUX_SCHED_FLAG_ALL 0x7f
#define SCHED_ATTR_SIZE_VER0 48
#define SCHED_ATTR_SIZE_VER1 56
#define SETPARAM_POLICY (-1)

/* struct sched_attr, SCHED_ATTR_SIZE_VER1. */
struct linux_sched_attr {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
	uint32_t sched_util_min, sched_util_max;
};

/* The task pid names (0: t), a new reference, or NULL. */
static struct task *sched_target(struct task *t, int32_t pid)
{
	if (pid == 0 || pid == t->tid) {
		task_get(t);
		return t;
	}
	return task_find_vtask(t, pid);
}

static bool rt_policy(uint32_t policy)
{
	return policy == LINUX_SCHED_FIFO || policy == LINUX_SCHED_RR;
}

/* Linux's __sched_setscheduler checks, then records the policy (never applied to the host). */
static long sched_apply(struct task *t, struct task *p, struct linux_sched_attr *a, int policy)
{
	bool cap_nice = cred_capable(&t->cred, 23 /* CAP_SYS_NICE */);
	uint32_t cur_policy = __atomic_load_n(&p->sched_policy, __ATOMIC_RELAXED);
	uint32_t cur_prio = __atomic_load_n(&p->sched_priority, __ATOMIC_RELAXED);
	int nice = __atomic_load_n(&nice_value, __ATOMIC_RELAXED);
	bool reset = a->sched_flags & LINUX_SCHED_FLAG_RESET_ON_FORK;
	uint64_t rtprio;

	if (policy == SETPARAM_POLICY) {
		policy = (int)cur_policy;
		reset = __atomic_load_n(&p->sched_reset_on_fork, __ATOMIC_RELAXED);
	}
	if (policy != LINUX_SCHED_OTHER && policy != LINUX_SCHED_BATCH &&
	    policy != LINUX_SCHED_IDLE && !rt_policy((uint32_t)policy) &&
	    policy != LINUX_SCHED_DEADLINE)
		return -EINVAL;
	if (a->sched_flags & ~(uint64_t)LINUX_SCHED_FLAG_ALL)
		return -EINVAL;
	if (a->sched_priority > 99)
		return -EINVAL;
	if (rt_policy((uint32_t)policy) != (a->sched_priority != 0))
		return -EINVAL;
	if (!cap_nice) {
		pthread_mutex_lock(&t->tg->lock);
		rtprio = t->tg->rlimits[RLIMIT_RTPRIO].rlim_cur;
		pthread_mutex_unlock(&t->tg->lock);
		if (!rt_policy((uint32_t)policy) && policy != LINUX_SCHED_DEADLINE &&
		    !(a->sched_flags & LINUX_SCHED_FLAG_KEEP_PARAMS) && a->sched_nice < nice)
			return -EPERM;
		if (rt_policy((uint32_t)policy)) {
			if ((uint32_t)policy != cur_policy && !rtprio)
				return -EPERM;
			if (a->sched_priority > cur_prio && a->sched_priority > rtprio)
				return -EPERM;
		}
		if (policy == LINUX_SCHED_DEADLINE)
			return -EPERM;
		if (p->cred.euid != t->cred.euid && p->cred.uid != t->cred.euid)
			return -EPERM;
		if (__atomic_load_n(&p->sched_reset_on_fork, __ATOMIC_RELAXED) && !reset)
			return -EPERM;
	}
	if (policy == LINUX_SCHED_DEADLINE)
		return -EBUSY; /* no deadline bandwidth to admit it to */
	if (!rt_policy((uint32_t)policy) && !(a->sched_flags & LINUX_SCHED_FLAG_KEEP_PARAMS))
		__atomic_store_n(&nice_value, a->sched_nice, __ATOMIC_RELAXED);
	__atomic_store_n(&p->sched_policy, (uint32_t)policy, __ATOMIC_RELAXED);
	__atomic_store_n(&p->sched_priority, a->sched_priority, __ATOMIC_RELAXED);
	__atomic_store_n(&p->sched_reset_on_fork, reset, __ATOMIC_RELAXED);
	return 0;
}

/* sched_getscheduler(2) */
long sys_sched_getscheduler(struct task *t, const struct syscall_args *args)
{
	int32_t pid = (int32_t)args->a[0];
	struct task *p;
	long ret;

	if (pid < 0)
		return -EINVAL;
	p = sched_target(t, pid);
	if (!p)
		return -ESRCH;
	ret = __atomic_load_n(&p->sched_policy, __ATOMIC_RELAXED);
	if (__atomic_load_n(&p->sched_reset_on_fork, __ATOMIC_RELAXED))
		ret |= LINUX_SCHED_RESET_ON_FORK;
	task_put(p);
	return ret;
}

/* sched_getparam(2) */
long sys_sched_getparam(struct task *t, const struct syscall_args *args)
{
	int32_t pid = (int32_t)args->a[0], prio;
	struct task *p;

	if (!args->a[1] || pid < 0)
		return -EINVAL;
	p = sched_target(t, pid);
	if (!p)
		return -ESRCH;
	prio = (int32_t)__atomic_load_n(&p->sched_priority, __ATOMIC_RELAXED);
	task_put(p);
	return copy_out_all(t, args->a[1], &prio, sizeof(prio));
}

static long set_sched(struct task *t, int32_t pid, int policy, uint64_t param)
{
	struct linux_sched_attr a = { .size = sizeof(a) };
	struct task *p;
	int32_t prio;
	long ret;

	if (!param || pid < 0)
		return -EINVAL;
	if (mm_copy_in(t->mm, &prio, param, sizeof(prio)) != sizeof(prio))
		return -EFAULT;
	p = sched_target(t, pid);
	if (!p)
		return -ESRCH;
	if (policy != SETPARAM_POLICY && (policy & LINUX_SCHED_RESET_ON_FORK)) {
		a.sched_flags = LINUX_SCHED_FLAG_RESET_ON_FORK;
		policy &= ~LINUX_SCHED_RESET_ON_FORK;
	}
	if (prio < 0) {
		task_put(p);
		return -EINVAL;
	}
	a.sched_priority = (uint32_t)prio;
	a.sched_nice = __atomic_load_n(&nice_value, __ATOMIC_RELAXED);
	ret = sched_apply(t, p, &a, policy);
	task_put(p);
	return ret;
}

/* sched_setscheduler(2): recorded, not applied to the host; real-time needs CAP_SYS_NICE or
 * RLIMIT_RTPRIO; SCHED_DEADLINE gives EBUSY (EPERM unprivileged). */
long sys_sched_setscheduler(struct task *t, const struct syscall_args *args)
{
	if ((int)args->a[1] < 0)
		return -EINVAL;
	return set_sched(t, (int32_t)args->a[0], (int)args->a[1], args->a[2]);
}

/* sched_setparam(2): as sched_setscheduler with the task's own policy. */
long sys_sched_setparam(struct task *t, const struct syscall_args *args)
{
	return set_sched(t, (int32_t)args->a[0], SETPARAM_POLICY, args->a[1]);
}

/* sched_setattr(2): as sched_setscheduler; the nice value is the sandbox's one (setpriority). */
long sys_sched_setattr(struct task *t, const struct syscall_args *args)
{
	int32_t pid = (int32_t)args->a[0];
	uint64_t addr = args->a[1];
	struct linux_sched_attr a = { 0 };
	uint8_t tail[64];
	uint32_t size;
	struct task *p;
	int policy;
	long ret;

	if (!addr || pid < 0 || (uint32_t)args->a[2])
		return -EINVAL;
	if (mm_copy_in(t->mm, &size, addr, sizeof(size)) != sizeof(size))
		return -EFAULT;
	if (!size)
		size = SCHED_ATTR_SIZE_VER0;
	if (size > 4096 || size < SCHED_ATTR_SIZE_VER0)
		goto err_size;
	if (mm_copy_in(t->mm, &a, addr, MIN(size, sizeof(a))) != (ssize_t)MIN(size, sizeof(a)))
		return -EFAULT;
	for (uint64_t off = sizeof(a); off < size; off += sizeof(tail)) {
		size_t n = MIN(sizeof(tail), size - off);

		if (mm_copy_in(t->mm, tail, addr + off, n) != (ssize_t)n)
			return -EFAULT;
		for (size_t i = 0; i < n; i++)
			if (tail[i])
				goto err_size;
	}
	if ((a.sched_flags & LINUX_SCHED_FLAG_UTIL_CLAMP) && size < SCHED_ATTR_SIZE_VER1)
		return -EINVAL;
	a.sched_nice = a.sched_nice < -20 ? -20 : a.sched_nice > 19 ? 19 : a.sched_nice;
	if ((int32_t)a.sched_policy < 0)
		return -EINVAL;
	policy = (a.sched_flags & LINUX_SCHED_FLAG_KEEP_POLICY) ? SETPARAM_POLICY :
								  (int)a.sched_policy;
	p = sched_target(t, pid);
	if (!p)
		return -ESRCH;
	ret = sched_apply(t, p, &a, policy);
	task_put(p);
	return ret;
err_size:
	size = sizeof(a);
	if (mm_copy_out(t->mm, addr, &size, sizeof(size)) != sizeof(size))
		return -EFAULT;
	return -E2BIG;
}

/* sched_getattr(2) */
long sys_sched_getattr(struct task *t, const struct syscall_args *args)
{
	int32_t pid = (int32_t)args->a[0];
	uint32_t usize = (uint32_t)args->a[2];
	struct linux_sched_attr a = { 0 };
	struct task *p;

	if (!args->a[1] || pid < 0 || usize > 4096 || usize < SCHED_ATTR_SIZE_VER0 ||
	    (uint32_t)args->a[3])
		return -EINVAL;
	p = sched_target(t, pid);
	if (!p)
		return -ESRCH;
	a.sched_policy = __atomic_load_n(&p->sched_policy, __ATOMIC_RELAXED);
	a.sched_priority = __atomic_load_n(&p->sched_priority, __ATOMIC_RELAXED);
	if (__atomic_load_n(&p->sched_reset_on_fork, __ATOMIC_RELAXED))
		a.sched_flags |= LINUX_SCHED_FLAG_RESET_ON_FORK;
	task_put(p);
	if (!rt_policy(a.sched_policy))
		a.sched_nice = __atomic_load_n(&nice_value, __ATOMIC_RELAXED);
	a.sched_util_max = 1024;
	a.size = (uint32_t)MIN(sizeof(a), (size_t)usize);
	return copy_out_all(t, args->a[1], &a, a.size);
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

	if (husk_cpus_get(&set))
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
	o = task_find_vtask(t, pid);
	if (!o)
		return NULL;
	if (set && t->cred.euid != o->cred.euid && t->cred.euid != o->cred.uid &&
	    !cred_capable(&t->cred, 23 /* CAP_SYS_NICE */)) {
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
		bool all = true;

		for (unsigned int i = 0; i < n && i < AFFINITY_WORDS * 64; i++)
			all &= (mask[i / 64] >> (i % 64)) & 1;
		/* The vDSO's getcpu cannot apply a thread's mask: sys_getcpu answers from now on. */
		if (!all)
			vtime_getcpu_exact();
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
 * thread's affinity excludes reads as the first one it allows.
 * The vDSO's getcpu computes the same (the host CPU of the guest thread, modulo the guest's
 * CPUs) until a thread restricts its affinity, then calls this (sentry/time/README.md).
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
	    !cred_capable(&t->cred, 23 /* CAP_SYS_NICE */))
		return -EACCES;
	__atomic_store_n(&nice_value, nice, __ATOMIC_RELAXED);
	return 0;
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

/*
 * getrusage(2): RUSAGE_SELF, RUSAGE_CHILDREN, RUSAGE_THREAD; times and ru_maxrss (see
 * sentry/kernel/cputime.h), the other counters read 0.
 */
long sys_getrusage(struct task *t, const struct syscall_args *args)
{
	int who = (int)args->a[0];
	struct linux_rusage ru;
	struct cputime c;

	memset(&ru, 0, sizeof(ru));
	switch (who) {
	case RUSAGE_SELF:
		c = cputime_tg(t->tg);
		ru.maxrss = (int64_t)cputime_maxrss_kb(t);
		break;
	case RUSAGE_CHILDREN:
		pthread_mutex_lock(&t->tg->lock);
		c.utime = t->tg->cutime_ns;
		c.stime = t->tg->cstime_ns;
		ru.maxrss = (int64_t)t->tg->cmaxrss_kb;
		pthread_mutex_unlock(&t->tg->lock);
		break;
	case RUSAGE_THREAD:
		c = cputime_task(t);
		ru.maxrss = (int64_t)cputime_maxrss_kb(t);
		break;
	default:
		return -EINVAL;
	}
	ns_to_tv(c.utime, ru.utime);
	ns_to_tv(c.stime, ru.stime);
	return copy_out_all(t, args->a[1], &ru, sizeof(ru));
}

/* times(2): the guest's CLOCK_MONOTONIC in clock ticks (USER_HZ), as Linux counts from boot. */
long sys_times(struct task *t, const struct syscall_args *args)
{
	int64_t tms[4];
	struct timespec now;
	uint64_t tick = 1000000000ULL / USER_HZ;
	struct cputime c = cputime_tg(t->tg);

	tms[0] = (int64_t)(c.utime / tick);
	tms[1] = (int64_t)(c.stime / tick);
	pthread_mutex_lock(&t->tg->lock);
	tms[2] = (int64_t)(t->tg->cutime_ns / tick);
	tms[3] = (int64_t)(t->tg->cstime_ns / tick);
	pthread_mutex_unlock(&t->tg->lock);
	if (args->a[0] && copy_out_all(t, args->a[0], tms, sizeof(tms)))
		return -EFAULT;
	vtime_gettime(CLOCK_MONOTONIC, &now);
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
