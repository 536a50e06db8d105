/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Nested pid numbering: see pidns.h. The numbers of the nested namespaces live in the tasks
 * (task.ns_nr); lookups there scan the one pid table (pid.c), as a guest that nests pid
 * namespaces has few processes. k->tree_lock protects the numbers and each namespace's
 * last_nr, reaper and dead.
 */
#include <errno.h>
#include <sys/types.h>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/nsproxy.h"
#include "sentry/kernel/pidns.h"
#include "sentry/kernel/task.h"

/* As pid.c's: numbers wrap around past Linux's default pid_max. */
#define PIDNS_NR_MAX 4194304

/* ns's level (NULL: the initial one, level 0). */
static int level_of(const struct pid_ns *ns)
{
	return ns ? ns->level : 0;
}

/* inner's ancestor of level level (inner itself at its own level). */
static const struct pid_ns *up_to(const struct pid_ns *inner, int level)
{
	while (inner && inner->level > level)
		inner = inner->parent;
	return inner;
}

bool pid_ns_is_ancestor(const struct pid_ns *outer, const struct pid_ns *inner)
{
	int l = level_of(outer);

	if (!l)
		return true;
	if (level_of(inner) < l)
		return false;
	return up_to(inner, l) == outer;
}

int32_t pid_ns_task_nr(const struct task *t, const struct pid_ns *ns)
{
	int l = level_of(ns);

	if (!l)
		return t->tid;
	if (!t->tg || !pid_ns_is_ancestor(ns, t->tg->pidns))
		return 0;
	return t->ns_nr[l];
}

int32_t pid_ns_tg_nr(const struct thread_group *tg, const struct pid_ns *ns)
{
	if (!level_of(ns))
		return tg->pid;
	if (!tg->leader || !pid_ns_is_ancestor(ns, tg->pidns))
		return 0;
	return tg->leader->ns_nr[ns->level];
}

int32_t pid_ns_nr_of(struct kernel *k, int32_t global, const struct pid_ns *ns)
{
	struct task *t;

	if (!level_of(ns) || global <= 0)
		return global;
	t = pid_lookup(k, global);
	return t ? pid_ns_task_nr(t, ns) : 0;
}

struct lookup {
	const struct pid_ns *ns;
	int32_t nr;
	struct task *found;
};

static int lookup_fn(struct task *t, void *arg)
{
	struct lookup *l = arg;

	if (t->ns_nr[l->ns->level] == l->nr && pid_ns_is_ancestor(l->ns, t->tg->pidns)) {
		l->found = t;
		return 1;
	}
	return 0;
}

struct task *pid_ns_lookup(struct kernel *k, const struct pid_ns *ns, int32_t nr)
{
	struct lookup l = { .ns = ns, .nr = nr };

	if (!level_of(ns))
		return pid_lookup(k, nr);
	if (nr <= 0)
		return NULL;
	pid_for_each_task(k, lookup_fn, &l);
	return l.found;
}

int pid_ns_alloc(struct kernel *k, struct task *c, struct thread_group *tg, struct pid_ns *ns)
{
	struct pid_ns *n;

	for (n = ns; n && n->level > 0; n = n->parent) {
		int32_t nr = n->last_nr;
		int tries;

		/* Linux's alloc_pid: no process enters a namespace whose pid 1 has ended. */
		if (n->dead)
			return -ENOMEM;
		if (!n->last_nr) {
			/* Its first process is its init, and only a new process can be one. */
			if (!tg)
				return -EINVAL;
			n->last_nr = 1;
			n->reaper = tg;
			c->ns_nr[n->level] = 1;
			continue;
		}
		for (tries = 0; tries < PIDNS_NR_MAX; tries++) {
			if (++nr >= PIDNS_NR_MAX)
				nr = 2;
			if (!pid_ns_lookup(k, n, nr))
				break;
		}
		if (tries == PIDNS_NR_MAX)
			return -EAGAIN;
		n->last_nr = nr;
		c->ns_nr[n->level] = nr;
	}
	return 0;
}

int32_t task_vtid(struct task *viewer, struct task *t)
{
	struct pid_ns *ns = viewer->tg->pidns;
	int32_t nr;

	if (!ns)
		return t->tid;
	pthread_mutex_lock(&viewer->k->tree_lock);
	nr = pid_ns_task_nr(t, ns);
	pthread_mutex_unlock(&viewer->k->tree_lock);
	return nr;
}

int32_t task_vpid(struct task *viewer, struct thread_group *tg)
{
	struct pid_ns *ns = viewer->tg->pidns;
	int32_t nr;

	if (!ns)
		return tg->pid;
	pthread_mutex_lock(&viewer->k->tree_lock);
	nr = pid_ns_tg_nr(tg, ns);
	pthread_mutex_unlock(&viewer->k->tree_lock);
	return nr;
}

int32_t task_vnr(struct task *viewer, int32_t global)
{
	struct pid_ns *ns = viewer->tg->pidns;
	int32_t nr;

	if (!ns || global <= 0)
		return global;
	pthread_mutex_lock(&viewer->k->tree_lock);
	nr = pid_ns_nr_of(viewer->k, global, ns);
	pthread_mutex_unlock(&viewer->k->tree_lock);
	return nr;
}

int32_t task_global_nr(struct task *viewer, int32_t nr)
{
	struct pid_ns *ns = viewer->tg->pidns;
	struct task *t;
	int32_t g;

	if (!ns || nr <= 0)
		return nr;
	pthread_mutex_lock(&viewer->k->tree_lock);
	t = pid_ns_lookup(viewer->k, ns, nr);
	g = t ? t->tid : 0;
	pthread_mutex_unlock(&viewer->k->tree_lock);
	return g;
}

struct task *task_find_vtask(struct task *viewer, int32_t nr)
{
	struct pid_ns *ns = viewer->tg->pidns;
	struct task *t;

	if (!ns)
		return kernel_find_task(viewer->k, nr);
	pthread_mutex_lock(&viewer->k->tree_lock);
	t = pid_ns_lookup(viewer->k, ns, nr);
	if (t)
		task_get(t);
	pthread_mutex_unlock(&viewer->k->tree_lock);
	return t;
}

struct thread_group *task_find_vtg(struct task *viewer, int32_t nr)
{
	struct pid_ns *ns = viewer->tg->pidns;
	struct thread_group *tg = NULL;
	struct task *t;

	if (!ns)
		return kernel_find_tg(viewer->k, nr);
	pthread_mutex_lock(&viewer->k->tree_lock);
	t = pid_ns_lookup(viewer->k, ns, nr);
	if (t && t->tg->leader == t && !t->tg->reaped) {
		tg = t->tg;
		tg_get(tg);
	}
	pthread_mutex_unlock(&viewer->k->tree_lock);
	return tg;
}

bool task_sees_tg(struct task *viewer, const struct thread_group *tg)
{
	return pid_ns_is_ancestor(viewer->tg->pidns, tg->pidns);
}

/* Signalled (under k->tree_lock) each time a task of a nested namespace leaves the table. */
static pthread_cond_t gone_cond = PTHREAD_COND_INITIALIZER;

void pid_ns_task_gone(void)
{
	pthread_cond_broadcast(&gone_cond);
}

bool pid_ns_dying(const struct pid_ns *ns)
{
	for (; ns && ns->level; ns = ns->parent) {
		if (ns->dead)
			return true;
	}
	return false;
}

struct ns_member {
	const struct pid_ns *ns;
	const struct thread_group *init;
};

static int ns_member_fn(struct task *t, void *arg)
{
	struct ns_member *m = arg;

	/*
	 * A zombie is not waited for: its parent may be outside and waiting for init. Nor is a
	 * traced task: its tracer may be init itself, which detaches its tracees only after
	 * this wait (task_exit_thread), and a killed tracee ends once detached.
	 */
	return t->tg != m->init && t->tg->state == TG_RUNNING &&
	       !__atomic_load_n(&t->ptrace, __ATOMIC_ACQUIRE) &&
	       pid_ns_is_ancestor(m->ns, t->tg->pidns);
}

void pid_ns_wait_empty(struct kernel *k, struct pid_ns *ns, struct thread_group *init)
{
	struct ns_member m = { .ns = ns, .init = init };

	while (pid_for_each_task(k, ns_member_fn, &m))
		pthread_cond_wait(&gone_cond, &k->tree_lock);
}
