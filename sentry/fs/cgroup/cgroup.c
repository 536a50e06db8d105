/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandbox's cgroup v2 hierarchy (cgroup.h): cgroups, membership of thread groups, the
 * pids limit at fork, and the values of the interface files. cgroupfs.c shows it as files.
 *
 * Locks: k->tree_lock (membership: thread_group.cgroup) before cgroup_lock (the tree of
 * cgroups and their values). One hierarchy per sentry process: a sentry has one kernel.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "sentry/fs/cgroup/internal.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"

pthread_mutex_t cgroup_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cgroup root_cg;
static pthread_once_t root_once = PTHREAD_ONCE_INIT;
static uint64_t next_ino = 1; /* cgroup_lock */

const char *const cgroup_ctrl_names[CG_NR] = { "cpuset", "cpu", "io", "memory", "pids" };

void cgroup_defaults(struct cgroup *cg)
{
	refcount_init(&cg->ref, 1);
	list_init(&cg->children);
	list_init(&cg->sibling);
	cg->max_depth = -1;
	cg->max_descendants = -1;
	cg->pids_max = -1;
	cg->mem_max = cg->mem_high = cg->swap_max = UINT64_MAX;
	snprintf(cg->cpu_max, sizeof(cg->cpu_max), "max 100000");
	cg->cpu_weight = 100;
	cg->io_weight = 100;
	clock_gettime(CLOCK_REALTIME, &cg->ctime);
}

static void root_init(void)
{
	cgroup_defaults(&root_cg);
	root_cg.name = "";
	root_cg.ino = next_ino++;
}

uint64_t cgroup_alloc_ino_locked(void)
{
	return next_ino++;
}

struct cgroup *cgroup_root(void)
{
	pthread_once(&root_once, root_init);
	return &root_cg;
}

void cgroup_get(struct cgroup *cg)
{
	if (cg && cg != &root_cg)
		refcount_inc(&cg->ref);
}

void cgroup_put(struct cgroup *cg)
{
	if (!cg || cg == &root_cg || !refcount_dec(&cg->ref))
		return;
	cgroup_put(cg->parent);
	cgroup_bpf_release(cg);
	free(cg->name);
	free(cg);
}

struct cgroup *cgroup_of_tg(struct thread_group *tg)
{
	return tg->cgroup ? tg->cgroup : cgroup_root();
}

bool cgroup_is_descendant(struct cgroup *cg, struct cgroup *of)
{
	for (; cg; cg = cg->parent)
		if (cg == of)
			return true;
	return false;
}

/* cg's ancestors up to (not including) top, leaf first, into parts; their number, or -1. */
static int chain_locked(struct cgroup *cg, struct cgroup *top, const char **parts, int max)
{
	int n = 0;

	for (; cg && cg != top && cg->parent; cg = cg->parent) {
		if (n == max)
			return -1;
		parts[n++] = cg->name;
	}
	return n;
}

/* cg's path seen from root (Linux's kernfs_path_from_node: ".." up to the common ancestor). */
static int path_from_locked(struct cgroup *cg, struct cgroup *root, char *buf, size_t len)
{
	const char *parts[64];
	struct cgroup *common = root;
	size_t off = 0;
	int n, ups = 0;

	if (!root)
		root = common = cgroup_root();
	while (!cgroup_is_descendant(cg, common)) {
		common = common->parent;
		ups++;
	}
	n = chain_locked(cg, common, parts, 64);
	if (n < 0)
		return -ENAMETOOLONG;
	if (n == 0 && ups == 0)
		return snprintf(buf, len, "/") < (int)len ? 1 : -ENAMETOOLONG;
	while (ups-- > 0) {
		if (len - off < 4)
			return -ENAMETOOLONG;
		memcpy(buf + off, "/..", 4);
		off += 3;
	}
	while (n-- > 0) {
		int w = snprintf(buf + off, len - off, "/%s", parts[n]);

		if (w < 0 || (size_t)w >= len - off)
			return -ENAMETOOLONG;
		off += (size_t)w;
	}
	return (int)off;
}

int cgroup_path(struct cgroup *cg, char *buf, size_t len)
{
	int r;

	pthread_mutex_lock(&cgroup_lock);
	r = path_from_locked(cg, NULL, buf, len);
	pthread_mutex_unlock(&cgroup_lock);
	return r;
}

struct cgroup *cgroup_tg_get(struct kernel *k, struct thread_group *tg)
{
	struct cgroup *cg;

	pthread_mutex_lock(&k->tree_lock);
	cg = cgroup_of_tg(tg);
	cgroup_get(cg);
	pthread_mutex_unlock(&k->tree_lock);
	return cg;
}

int cgroup_tg_path(struct kernel *k, struct thread_group *tg, struct cgroup *root, char *buf,
		   size_t len)
{
	struct cgroup *cg = cgroup_tg_get(k, tg);
	int r;

	pthread_mutex_lock(&cgroup_lock);
	r = path_from_locked(cg, root, buf, len);
	pthread_mutex_unlock(&cgroup_lock);
	cgroup_put(cg);
	return r;
}

/* --- membership --- */

struct count_arg {
	struct cgroup *cg;
	int tasks, procs;
};

static int count_fn(struct thread_group *tg, void *arg)
{
	struct count_arg *c = arg;

	if (__atomic_load_n(&tg->state, __ATOMIC_RELAXED) != TG_RUNNING)
		return 0;
	if (!cgroup_is_descendant(cgroup_of_tg(tg), c->cg))
		return 0;
	c->procs++;
	c->tasks += __atomic_load_n(&tg->nr_threads, __ATOMIC_RELAXED);
	return 0;
}

void cgroup_count_locked(struct kernel *k, struct cgroup *cg, int *procs, int *tasks)
{
	struct count_arg c = { .cg = cg };

	pid_for_each_tg(k, count_fn, &c);
	if (procs)
		*procs = c.procs;
	if (tasks)
		*tasks = c.tasks;
}

int cgroup_can_fork(struct kernel *k, struct cgroup *cg)
{
	if (!cg)
		cg = cgroup_root();
	for (; cg; cg = cg->parent) {
		int64_t max;
		int tasks;

		pthread_mutex_lock(&cgroup_lock);
		max = cg->pids_max;
		pthread_mutex_unlock(&cgroup_lock);
		if (max < 0)
			continue;
		cgroup_count_locked(k, cg, NULL, &tasks);
		if (tasks >= max) {
			pthread_mutex_lock(&cgroup_lock);
			cg->pids_events_max++;
			pthread_mutex_unlock(&cgroup_lock);
			return -EAGAIN;
		}
	}
	return 0;
}

int cgroup_move(struct kernel *k, struct thread_group *tg, struct cgroup *dst)
{
	struct cgroup *old;
	int ret = 0;

	pthread_mutex_lock(&k->tree_lock);
	pthread_mutex_lock(&cgroup_lock);
	if (__atomic_load_n(&tg->state, __ATOMIC_RELAXED) != TG_RUNNING)
		ret = -ESRCH;
	else if (dst->removed)
		ret = -ENODEV;
	else if (dst->parent && dst->subtree_control)
		ret = -EBUSY; /* no internal processes */
	pthread_mutex_unlock(&cgroup_lock);
	if (ret == 0) {
		old = tg->cgroup;
		cgroup_get(dst);
		tg->cgroup = dst == &root_cg ? NULL : dst;
		if (dst == &root_cg)
			cgroup_put(dst);
		cgroup_put(old);
	}
	pthread_mutex_unlock(&k->tree_lock);
	return ret;
}
