/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandbox's pid namespace: the tid -> task table, tid allocation, and the count of running
 * task host threads the end of the sandbox waits for.
 *
 * Every task is in the table from its creation until it is gone: a non-leader thread until it
 * exits, a leader (whose tid is its process's pid) until its process is reaped. The table holds
 * one reference on each task in it. Protected by k->tree_lock.
 */
#include <errno.h>
#include <stdlib.h>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/pidns.h"
#include "sentry/kernel/task.h"

#define PID_BUCKETS 1024
/* Linux's default pid_max: tids wrap around to 2 (pid 1 is init's) past it. */
#define PID_MAX 4194304

struct pid_table {
	struct list_head buckets[PID_BUCKETS]; /* of task.pid_link */
	/* Running task host threads (own lock: taken with no other lock held). */
	pthread_mutex_t run_lock;
	pthread_cond_t run_cond;
	int running;
};

static struct pid_table *table(struct kernel *k)
{
	return k->pids;
}

int pid_table_init(struct kernel *k)
{
	struct pid_table *pt;

	if (k->pids)
		return 0;
	pt = calloc(1, sizeof(*pt));
	if (!pt)
		return -ENOMEM;
	for (int i = 0; i < PID_BUCKETS; i++)
		list_init(&pt->buckets[i]);
	pthread_mutex_init(&pt->run_lock, NULL);
	pthread_cond_init(&pt->run_cond, NULL);
	pthread_mutex_init(&k->tree_lock, NULL);
	kernel_freeze_init(k);
	k->pids = pt;
	return 0;
}

struct task *pid_lookup(struct kernel *k, int32_t tid)
{
	struct task *t;

	if (tid <= 0 || !k->pids)
		return NULL;
	list_for_each_entry(t, &table(k)->buckets[tid % PID_BUCKETS], pid_link) {
		if (t->tid == tid)
			return t;
	}
	return NULL;
}

/* True if id is some live task's tid or some process's pgid or sid (Linux keeps those). */
static int id_in_use_fn(struct thread_group *tg, void *arg)
{
	int32_t id = *(int32_t *)arg;

	return tg->pgid == id || tg->sid == id;
}

static bool id_in_use(struct kernel *k, int32_t id)
{
	return pid_lookup(k, id) || pid_for_each_tg(k, id_in_use_fn, &id);
}

int32_t pid_alloc(struct kernel *k)
{
	int32_t tid;

	pthread_mutex_lock(&k->lock);
	tid = k->next_tid;
	pthread_mutex_unlock(&k->lock);
	for (int tries = 0; tries < PID_MAX; tries++) {
		if (tid < 2 || tid >= PID_MAX)
			tid = 2;
		if (!id_in_use(k, tid)) {
			pthread_mutex_lock(&k->lock);
			k->next_tid = tid + 1;
			pthread_mutex_unlock(&k->lock);
			return tid;
		}
		tid++;
	}
	return -EAGAIN;
}

int pid_alloc_exact(struct kernel *k, int32_t tid)
{
	if (tid <= 0 || tid >= PID_MAX)
		return -EINVAL;
	return id_in_use(k, tid) ? -EEXIST : 0;
}

/*
 * Pod members' tasks and pids limits, by number (thread_group.container; k->tree_lock). One
 * table per sentry process: a sentry has one kernel.
 */
#define PID_CONTAINERS_MAX 4096
static int container_tasks[PID_CONTAINERS_MAX];
static int container_pids_limit[PID_CONTAINERS_MAX];

static void count_container(const struct task *t, int d)
{
	int32_t c = t->tg ? t->tg->container : 0;

	if (c > 0 && c < PID_CONTAINERS_MAX)
		container_tasks[c] += d;
}

void pid_insert(struct kernel *k, struct task *t)
{
	task_get(t);
	list_add_tail(&t->pid_link, &table(k)->buckets[t->tid % PID_BUCKETS]);
	k->nr_tasks++;
	count_container(t, 1);
}

void pid_remove(struct kernel *k, struct task *t)
{
	bool nested = t->tg && t->tg->pidns;

	list_del(&t->pid_link);
	list_init(&t->pid_link);
	k->nr_tasks--;
	count_container(t, -1);
	task_put(t);
	if (nested)
		pid_ns_task_gone(); /* an ending namespace's pid 1 may wait for it */
}

bool pid_container_full(struct kernel *k, int32_t container)
{
	(void)k;
	if (container <= 0 || container >= PID_CONTAINERS_MAX)
		return false;
	return container_pids_limit[container] > 0 &&
	       container_tasks[container] >= container_pids_limit[container];
}

void pid_container_set_pids_limit(struct kernel *k, int32_t container, int limit)
{
	if (container <= 0 || container >= PID_CONTAINERS_MAX)
		return;
	pthread_mutex_lock(&k->tree_lock);
	container_pids_limit[container] = limit > 0 ? limit : 0;
	pthread_mutex_unlock(&k->tree_lock);
}

void pid_container_pids(struct kernel *k, int32_t container, int *current, int *limit)
{
	*current = *limit = 0;
	if (container <= 0 || container >= PID_CONTAINERS_MAX)
		return;
	pthread_mutex_lock(&k->tree_lock);
	*current = container_tasks[container];
	*limit = container_pids_limit[container];
	pthread_mutex_unlock(&k->tree_lock);
}

int pid_for_each_tg(struct kernel *k, int (*fn)(struct thread_group *tg, void *arg), void *arg)
{
	struct task *t;
	int ret;

	if (!k->pids)
		return 0;
	for (int i = 0; i < PID_BUCKETS; i++) {
		list_for_each_entry(t, &table(k)->buckets[i], pid_link) {
			if (t->tid != t->tg->pid)
				continue;
			ret = fn(t->tg, arg);
			if (ret)
				return ret;
		}
	}
	return 0;
}

int pid_for_each_task(struct kernel *k, int (*fn)(struct task *t, void *arg), void *arg)
{
	struct task *t;
	int ret;

	if (!k->pids)
		return 0;
	for (int i = 0; i < PID_BUCKETS; i++) {
		list_for_each_entry(t, &table(k)->buckets[i], pid_link) {
			ret = fn(t, arg);
			if (ret)
				return ret;
		}
	}
	return 0;
}

struct task *kernel_find_task(struct kernel *k, int32_t tid)
{
	struct task *t;

	pthread_mutex_lock(&k->tree_lock);
	t = pid_lookup(k, tid);
	if (t)
		task_get(t);
	pthread_mutex_unlock(&k->tree_lock);
	return t;
}

/* Pod members with a pid namespace of their own, by number (thread_group.container). */
#define PID_PRIVATE_MAX PID_CONTAINERS_MAX
static uint64_t private_containers[PID_PRIVATE_MAX / 64];

void pid_container_set_private(int32_t container, bool private_pids)
{
	uint64_t bit;

	if (container <= 0 || container >= PID_PRIVATE_MAX)
		return;
	bit = 1ULL << (container % 64);
	if (private_pids)
		__atomic_fetch_or(&private_containers[container / 64], bit, __ATOMIC_RELEASE);
	else
		__atomic_fetch_and(&private_containers[container / 64], ~bit, __ATOMIC_RELEASE);
}

/* The pid namespace a container's processes are in: its own number, or 0 (the sandbox's). */
static int32_t pid_group(int32_t container)
{
	if (container <= 0 || container >= PID_PRIVATE_MAX)
		return 0;
	return (__atomic_load_n(&private_containers[container / 64], __ATOMIC_ACQUIRE) >>
		(container % 64)) &
			       1 ?
		       container :
		       0;
}

int32_t pid_container_ns(int32_t container)
{
	return pid_group(container);
}

bool pid_visible(const struct thread_group *viewer, const struct thread_group *target)
{
	return !viewer || pid_group(viewer->container) == pid_group(target->container);
}

struct thread_group *kernel_find_tg(struct kernel *k, int32_t pid)
{
	struct thread_group *tg = NULL;
	struct task *t;

	pthread_mutex_lock(&k->tree_lock);
	t = pid_lookup(k, pid);
	if (t && t->tg->pid == pid && !t->tg->reaped) {
		tg = t->tg;
		tg_get(tg);
	}
	pthread_mutex_unlock(&k->tree_lock);
	return tg;
}

void pid_task_started(struct kernel *k)
{
	pthread_mutex_lock(&table(k)->run_lock);
	table(k)->running++;
	pthread_mutex_unlock(&table(k)->run_lock);
}

void pid_task_finished(struct kernel *k)
{
	pthread_mutex_lock(&table(k)->run_lock);
	if (--table(k)->running == 0)
		pthread_cond_broadcast(&table(k)->run_cond);
	pthread_mutex_unlock(&table(k)->run_lock);
}

int pid_tasks_running(struct kernel *k)
{
	int n;

	pthread_mutex_lock(&table(k)->run_lock);
	n = table(k)->running;
	pthread_mutex_unlock(&table(k)->run_lock);
	return n;
}

void pid_wait_all_finished(struct kernel *k)
{
	pthread_mutex_lock(&table(k)->run_lock);
	while (table(k)->running > 0)
		pthread_cond_wait(&table(k)->run_cond, &table(k)->run_lock);
	pthread_mutex_unlock(&table(k)->run_lock);
}
