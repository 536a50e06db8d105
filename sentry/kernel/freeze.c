/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Freezing the sandbox's tasks (kernel.h): husk pause without a cgroup freezer, and the stop
 * before a checkpoint is saved. Every task parks itself: in task_run before it would switch to
 * the guest (task.c), in a group stop, or inside a wait that cannot be interrupted (waitq.c).
 * The freezer kicks every task (task_wake: a task in the guest is interrupted, one in an
 * interruptible wait sees task_signal_pending and leaves it with -ERESTARTSYS, which restarts
 * the call since no handler runs) and waits until as many tasks are parked as there are task
 * host threads.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "sentry/platform/platform.h"

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/waitq.h"

void kernel_freeze_init(struct kernel *k)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&k->freeze_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&k->freeze_cond, &ca);
	pthread_condattr_destroy(&ca);
}

/*
 * Stores t's FP state for the clean freeze of generation gen (a checkpoint), once per
 * generation: when t parks, and when a checkpoint finds it already parked (husk pause, then
 * checkpoint, as containerd does). Only the context's owner may read it, so t's own thread does
 * it. Counted in nr_parked_fp, which the freezer waits for; a platform that cannot give the
 * state leaves park_fp NULL, which the checkpoint refuses with a message.
 */
static void park_store_fp(struct task *t, int where)
{
	struct kernel *k = t->k;
	uint64_t gen;

	if (where != TASK_PARKED_CLEAN || !__atomic_load_n(&k->freeze_save_fp, __ATOMIC_ACQUIRE))
		return;
	gen = __atomic_load_n(&k->freeze_fp_gen, __ATOMIC_ACQUIRE);
	if (t->park_fp_gen == gen)
		return;
	if (t->ctx && k->platform->ops->ctx_get_fpstate) {
		size_t len = platform_fpstate_size();

		if (!t->park_fp || t->park_fp_len != len) {
			free(t->park_fp);
			t->park_fp = malloc(len);
			t->park_fp_len = t->park_fp ? len : 0;
		}
		if (t->park_fp && k->platform->ops->ctx_get_fpstate(t->ctx, t->park_fp, len) < 0) {
			free(t->park_fp);
			t->park_fp = NULL;
			t->park_fp_len = 0;
		}
	} else {
		free(t->park_fp);
		t->park_fp = NULL;
		t->park_fp_len = 0;
	}
	pthread_mutex_lock(&k->freeze_lock);
	t->park_fp_gen = gen;
	/* Counted only while parked, and only for the current generation. */
	if (t->parked && gen == k->freeze_fp_gen)
		k->nr_parked_fp++;
	pthread_cond_broadcast(&k->freeze_cond);
	pthread_mutex_unlock(&k->freeze_lock);
}

void task_park(struct task *t, int where)
{
	struct kernel *k = t->k;

	pthread_mutex_lock(&k->freeze_lock);
	t->parked = where;
	k->nr_parked++;
	if (where == TASK_PARKED_WAIT)
		k->nr_parked_unclean++;
	pthread_cond_broadcast(&k->freeze_cond);
	pthread_mutex_unlock(&k->freeze_lock);
	/* Sleeps on its own condition: the thaw and a kill (husk kill of a paused sandbox) both
	 * wake it there (task_wake). Nothing else runs: a paused sandbox uses no CPU. */
	for (;;) {
		pthread_mutex_lock(&t->wait_lock);
		t->wake_pending = false;
		pthread_mutex_unlock(&t->wait_lock);
		if (!kernel_freezing(k) || task_fatal_signal_pending(t))
			break;
		park_store_fp(t, where);
		pthread_mutex_lock(&t->wait_lock);
		while (!t->wake_pending)
			pthread_cond_wait(&t->wait_cond, &t->wait_lock);
		pthread_mutex_unlock(&t->wait_lock);
	}
	pthread_mutex_lock(&k->freeze_lock);
	k->nr_parked--;
	if (where == TASK_PARKED_WAIT)
		k->nr_parked_unclean--;
	if (where == TASK_PARKED_CLEAN && t->park_fp_gen == k->freeze_fp_gen && k->nr_parked_fp > 0)
		k->nr_parked_fp--;
	/* The state stored is this park's: a later checkpoint stores it again. */
	t->park_fp_gen = 0;
	t->parked = 0;
	pthread_cond_broadcast(&k->freeze_cond);
	pthread_mutex_unlock(&k->freeze_lock);
}

static int wake_one(struct thread_group *tg, void *arg)
{
	struct task *t;

	(void)arg;
	pthread_mutex_lock(&tg->lock);
	list_for_each_entry(t, &tg->tasks, tg_link)
		task_wake(t);
	pthread_mutex_unlock(&tg->lock);
	return 0;
}

static int find_unparked(struct thread_group *tg, void *arg)
{
	struct task *t;
	int32_t *tid = arg;

	pthread_mutex_lock(&tg->lock);
	list_for_each_entry(t, &tg->tasks, tg_link) {
		if (__atomic_load_n(&t->parked, __ATOMIC_RELAXED) != TASK_PARKED_CLEAN) {
			*tid = t->tid;
			break;
		}
	}
	pthread_mutex_unlock(&tg->lock);
	return *tid != 0;
}

int kernel_freeze(struct kernel *k, bool clean, int timeout_ms, int32_t *busy_tid)
{
	struct timespec deadline;
	bool first;
	int ret = 0;

	if (busy_tid)
		*busy_tid = 0;
	if (clean) {
		/* A new generation: every parked task (parked by a pause too) stores its FP state
		 * again, and the wait below counts those that did. */
		pthread_mutex_lock(&k->freeze_lock);
		k->freeze_fp_gen++;
		k->nr_parked_fp = 0;
		__atomic_store_n(&k->freeze_save_fp, true, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&k->freeze_lock);
	}
	first = __atomic_add_fetch(&k->freezing, 1, __ATOMIC_SEQ_CST) == 1;
	pthread_mutex_lock(&k->tree_lock);
	pid_for_each_tg(k, wake_one, NULL);
	pthread_mutex_unlock(&k->tree_lock);

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&k->freeze_lock);
	for (;;) {
		int running = pid_tasks_running(k);

		if (k->nr_parked >= running &&
		    (!clean || (k->nr_parked_unclean == 0 && k->nr_parked_fp >= k->nr_parked)))
			break;
		/* Threads that end are not counted by a broadcast here: look again each 10 ms. */
		struct timespec ts, now;

		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > deadline.tv_sec ||
		    (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec)) {
			ret = -EBUSY;
			break;
		}
		ts = now;
		ts.tv_nsec += 10000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&k->freeze_cond, &k->freeze_lock, &ts);
	}
	/* A checkpoint of a paused sandbox keeps the pause's time (husk resume counts from it). */
	if (ret == 0 && first)
		k->frozen_at_ns = task_monotonic_ns();
	pthread_mutex_unlock(&k->freeze_lock);
	if (ret < 0) {
		if (busy_tid) {
			pthread_mutex_lock(&k->tree_lock);
			pid_for_each_tg(k, find_unparked, busy_tid);
			pthread_mutex_unlock(&k->tree_lock);
		}
		kernel_thaw(k);
	}
	return ret;
}

void kernel_thaw(struct kernel *k)
{
	bool last;

	pthread_mutex_lock(&k->freeze_lock);
	last = __atomic_sub_fetch(&k->freezing, 1, __ATOMIC_SEQ_CST) == 0;
	if (last)
		__atomic_store_n(&k->freeze_save_fp, false, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&k->freeze_cond);
	pthread_mutex_unlock(&k->freeze_lock);
	if (last) {
		pthread_mutex_lock(&k->tree_lock);
		pid_for_each_tg(k, wake_one, NULL);
		pthread_mutex_unlock(&k->tree_lock);
	}
}
