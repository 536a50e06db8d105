/* SPDX-License-Identifier: Apache-2.0 */
/*
 * I/O priorities: ioprio_get(2), ioprio_set(2). The value is recorded per task (task->ioprio),
 * inherited at clone and reported back with Linux's rules; the sandbox's I/O is not scheduled
 * by it.
 */
#include <sys/resource.h>

#include "include/abi/linux/errno.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/pidns.h"
#include "sentry/kernel/task.h"
#include "syscalls/handlers.h"

#define IOPRIO_WHO_PROCESS 1
#define IOPRIO_WHO_PGRP 2
#define IOPRIO_WHO_USER 3
#define IOPRIO_CLASS_NONE 0
#define IOPRIO_CLASS_RT 1
#define IOPRIO_CLASS_BE 2
#define IOPRIO_CLASS_IDLE 3
#define IOPRIO_CLASS(v) (((v) >> 13) & 7)
#define IOPRIO_LEVEL(v) ((v)&7)
#define IOPRIO_VALUE(c, l) (((c) << 13) | (l))
#define CAP_SYS_NICE 23
#define CAP_SYS_ADMIN 21

/* The priority a task's I/O gets: an unset one follows its scheduling policy and nice value. */
static int effective_ioprio(struct task *p)
{
	uint32_t v = __atomic_load_n(&p->ioprio, __ATOMIC_RELAXED);
	uint32_t policy = __atomic_load_n(&p->sched_policy, __ATOMIC_RELAXED);
	struct syscall_args self = { 0 };
	int nice = 20 - (int)sys_getpriority(p, &self); /* one nice value for the sandbox */

	if (IOPRIO_CLASS(v) != IOPRIO_CLASS_NONE)
		return (int)v;
	if (policy == 1 || policy == 2)
		return IOPRIO_VALUE(IOPRIO_CLASS_RT, (nice + 20) / 5);
	if (policy == 5)
		return IOPRIO_VALUE(IOPRIO_CLASS_IDLE, 0);
	return IOPRIO_VALUE(IOPRIO_CLASS_BE, (nice + 20) / 5);
}

/* Linux's ioprio_check_cap: 0, -EINVAL or -EPERM. */
static int ioprio_check(struct task *t, int v)
{
	switch (IOPRIO_CLASS(v)) {
	case IOPRIO_CLASS_RT:
		if (!cred_capable(&t->cred, CAP_SYS_NICE) && !cred_capable(&t->cred, CAP_SYS_ADMIN))
			return -EPERM;
		return 0;
	case IOPRIO_CLASS_BE:
	case IOPRIO_CLASS_IDLE:
		return 0;
	case IOPRIO_CLASS_NONE:
		return IOPRIO_LEVEL(v) ? -EINVAL : 0;
	default:
		return -EINVAL;
	}
}

struct ioprio_walk {
	struct task *t;
	int which;
	uint32_t who;
	bool set;
	int value; /* set: the new value */
	long ret; /* -ESRCH until a task matches */
};

static void ioprio_one(struct ioprio_walk *w, struct task *p)
{
	if (w->set) {
		if (p->cred.uid != w->t->cred.euid && p->cred.uid != w->t->cred.uid &&
		    !cred_capable(&w->t->cred, CAP_SYS_NICE)) {
			w->ret = -EPERM;
			return;
		}
		__atomic_store_n(&p->ioprio, (uint32_t)w->value, __ATOMIC_RELAXED);
		if (w->ret == -ESRCH)
			w->ret = 0;
		return;
	}
	int v = effective_ioprio(p);

	if (w->ret == -ESRCH || v < w->ret)
		w->ret = v;
}

static int ioprio_tg_fn(struct thread_group *tg, void *arg)
{
	struct ioprio_walk *w = arg;
	struct task *p;

	if (w->which == IOPRIO_WHO_PGRP && (uint32_t)tg->pgid != w->who)
		return 0;
	pthread_mutex_lock(&tg->lock);
	list_for_each_entry(p, &tg->tasks, tg_link) {
		if (w->which == IOPRIO_WHO_USER && p->cred.uid != w->who)
			continue;
		ioprio_one(w, p);
		if (w->ret == -EPERM)
			break;
	}
	pthread_mutex_unlock(&tg->lock);
	return w->ret == -EPERM;
}

static long ioprio_walk(struct ioprio_walk *w)
{
	struct task *p;

	w->ret = -ESRCH;
	switch (w->which) {
	case IOPRIO_WHO_PROCESS:
		p = w->who ? task_find_vtask(w->t, (int32_t)w->who) : w->t;
		if (!p)
			return -ESRCH;
		if (!w->set)
			w->ret = __atomic_load_n(&p->ioprio, __ATOMIC_RELAXED);
		else
			ioprio_one(w, p);
		if (w->who)
			task_put(p);
		return w->ret;
	case IOPRIO_WHO_PGRP:
		pthread_mutex_lock(&w->t->k->tree_lock);
		if (!w->who)
			w->who = (uint32_t)w->t->tg->pgid;
		pid_for_each_tg(w->t->k, ioprio_tg_fn, w);
		pthread_mutex_unlock(&w->t->k->tree_lock);
		return w->ret;
	case IOPRIO_WHO_USER:
		if (!w->who)
			w->who = w->t->cred.uid;
		pthread_mutex_lock(&w->t->k->tree_lock);
		pid_for_each_tg(w->t->k, ioprio_tg_fn, w);
		pthread_mutex_unlock(&w->t->k->tree_lock);
		return w->ret;
	default:
		return -EINVAL;
	}
}

/* ioprio_get(2): PROCESS gives the value set (0 if none); PGRP and USER the best effective one. */
long sys_ioprio_get(struct task *t, const struct syscall_args *args)
{
	struct ioprio_walk w = { .t = t, .which = (int)args->a[0], .who = (uint32_t)args->a[1] };

	return ioprio_walk(&w);
}

/* ioprio_set(2): recorded; I/O is not scheduled by it. */
long sys_ioprio_set(struct task *t, const struct syscall_args *args)
{
	struct ioprio_walk w = { .t = t,
				 .which = (int)args->a[0],
				 .who = (uint32_t)args->a[1],
				 .set = true,
				 .value = (int)(args->a[2] & 0xffff) };
	int err = ioprio_check(t, (int)args->a[2]);

	if (err)
		return err;
	return ioprio_walk(&w);
}
