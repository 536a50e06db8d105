/* SPDX-License-Identifier: Apache-2.0 */
/* Wait queues and interruptible waits; see wait.h. */
#include "sentry/kernel/waitq.h"

#include <errno.h>
#include <stdlib.h>

#include "include/abi/linux/errno.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "sentry/platform/platform.h"

struct waitq_entry {
	struct list_head link;
	struct task *t;
};

void waitq_init(struct waitq *wq)
{
	pthread_mutex_init(&wq->lock, NULL);
	list_init(&wq->waiters);
	list_init(&wq->callbacks);
	wq->seq = 0;
}

void waitq_add_callback(struct waitq *wq, struct waitq_callback *cb)
{
	pthread_mutex_lock(&wq->lock);
	list_add_tail(&cb->link, &wq->callbacks);
	pthread_mutex_unlock(&wq->lock);
}

void waitq_remove_callback(struct waitq *wq, struct waitq_callback *cb)
{
	pthread_mutex_lock(&wq->lock);
	list_del(&cb->link);
	pthread_mutex_unlock(&wq->lock);
}

void task_wake(struct task *t)
{
	bool in_guest;

	pthread_mutex_lock(&t->wait_lock);
	t->wake_pending = true;
	in_guest = t->in_guest;
	pthread_cond_signal(&t->wait_cond);
	pthread_mutex_unlock(&t->wait_lock);
	if (in_guest && t->ctx)
		t->k->platform->ops->ctx_interrupt(t->ctx);
}

void waitq_wake_all(struct waitq *wq)
{
	struct waitq_entry *e;

	__atomic_add_fetch(&wq->seq, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&wq->lock);
	list_for_each_entry(e, &wq->waiters, link)
		task_wake(e->t);
	if (wq->callbacks.next) {
		struct waitq_callback *cb;

		list_for_each_entry(cb, &wq->callbacks, link)
			cb->fn(cb);
	}
	pthread_mutex_unlock(&wq->lock);
}

bool waitq_has_waiters(struct waitq *wq)
{
	bool any;

	pthread_mutex_lock(&wq->lock);
	any = !list_empty(&wq->waiters);
	pthread_mutex_unlock(&wq->lock);
	return any;
}

static bool deadline_passed(const struct timespec *deadline)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > deadline->tv_sec ||
	       (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec);
}

/* True when t must stop waiting because of signals: any unblocked one, or only a kill. */
static bool wait_interrupted(struct task *t, bool interruptible)
{
	if (interruptible)
		return task_signal_pending(t);
	return task_fatal_signal_pending(t);
}

long task_wait(struct task *t, struct waitq *const *wqs, int nwq, wait_cond_fn cond, void *arg,
	       const struct timespec *deadline, bool interruptible)
{
	struct waitq_entry small[8], *entries = small;
	long ret;

	if (nwq > (int)(sizeof(small) / sizeof(small[0]))) {
		entries = calloc((size_t)nwq, sizeof(*entries));
		if (!entries)
			return -ENOMEM;
	}
	for (int i = 0; i < nwq; i++) {
		entries[i].t = t;
		pthread_mutex_lock(&wqs[i]->lock);
		list_add_tail(&entries[i].link, &wqs[i]->waiters);
		pthread_mutex_unlock(&wqs[i]->lock);
	}

	for (;;) {
		/* Clear before checking: a wakeup after this point is seen by the sleep below. */
		pthread_mutex_lock(&t->wait_lock);
		t->wake_pending = false;
		pthread_mutex_unlock(&t->wait_lock);

		if (cond && cond(arg)) {
			ret = 0;
			break;
		}
		if (wait_interrupted(t, interruptible)) {
			ret = -ERESTARTSYS;
			break;
		}
		if (deadline && deadline_passed(deadline)) {
			ret = -ETIMEDOUT;
			break;
		}
		/* A wait a freeze cannot interrupt parks inside (freeze.c); tid 0 is no task. */
		if (unlikely(!interruptible && t->tid && t->k && kernel_freezing(t->k))) {
			task_park(t, t->wait_parks_clean ? TASK_PARKED_CLEAN : TASK_PARKED_WAIT);
			continue;
		}

		pthread_mutex_lock(&t->wait_lock);
		while (!t->wake_pending) {
			if (deadline) {
				if (pthread_cond_timedwait(&t->wait_cond, &t->wait_lock,
							   deadline) == ETIMEDOUT)
					break;
			} else {
				pthread_cond_wait(&t->wait_cond, &t->wait_lock);
			}
		}
		pthread_mutex_unlock(&t->wait_lock);
	}

	for (int i = 0; i < nwq; i++) {
		pthread_mutex_lock(&wqs[i]->lock);
		list_del(&entries[i].link);
		pthread_mutex_unlock(&wqs[i]->lock);
	}
	if (entries != small)
		free(entries);
	return ret;
}

#define NSEC_PER_SEC 1000000000L

long task_sleep_until(struct task *t, clockid_t clock, const struct timespec *abs)
{
	struct timespec now, mono;
	long ret;

	/* Sleep against CLOCK_MONOTONIC; for other clocks, re-derive the deadline after each
	 * wakeup so that a changed realtime clock is honoured at the next check. */
	for (;;) {
		struct timespec cnow;
		int64_t left_s, left_ns;

		clock_gettime(clock, &cnow);
		/* A deadline centuries away (the guest's tv_sec may be up to INT64_MAX) saturates:
		 * the wait is then re-derived after ~292 years, never cut short by an overflow. */
		if (__builtin_sub_overflow((int64_t)abs->tv_sec, (int64_t)cnow.tv_sec, &left_s) ||
		    __builtin_mul_overflow(left_s, (int64_t)NSEC_PER_SEC, &left_ns) ||
		    __builtin_add_overflow(left_ns, (int64_t)(abs->tv_nsec - cnow.tv_nsec),
					   &left_ns))
			left_ns = abs->tv_sec < cnow.tv_sec ? 0 : INT64_MAX;
		if (left_ns <= 0)
			return 0;
		clock_gettime(CLOCK_MONOTONIC, &now);
		mono.tv_sec = now.tv_sec + left_ns / NSEC_PER_SEC;
		mono.tv_nsec = now.tv_nsec + left_ns % NSEC_PER_SEC;
		if (mono.tv_nsec >= NSEC_PER_SEC) {
			mono.tv_sec++;
			mono.tv_nsec -= NSEC_PER_SEC;
		}
		ret = task_wait(t, NULL, 0, NULL, NULL, &mono, true);
		if (ret == -ERESTARTSYS)
			return ret;
		if (clock == CLOCK_MONOTONIC && ret == -ETIMEDOUT)
			return 0;
	}
}

void completion_init(struct completion *c)
{
	waitq_init(&c->wq);
	__atomic_store_n(&c->done, false, __ATOMIC_RELAXED);
}

void complete(struct completion *c)
{
	__atomic_store_n(&c->done, true, __ATOMIC_RELEASE);
	waitq_wake_all(&c->wq);
}

static bool completion_done(void *arg)
{
	struct completion *c = arg;

	return __atomic_load_n(&c->done, __ATOMIC_ACQUIRE);
}

long task_wait_for_completion(struct task *t, struct completion *c)
{
	struct waitq *wq = &c->wq;

	return task_wait(t, &wq, 1, completion_done, c, NULL, false);
}
