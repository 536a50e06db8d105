/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Blocking in the sentry: wait queues and interruptible waits.
 *
 * A task blocks with task_wait(): it registers on one or more wait queues, then sleeps on its
 * own condition variable until a waker calls waitq_wake_all() on one of them (or task_wake() on
 * the task), a signal becomes pending for it, or its deadline passes. The condition is always
 * rechecked after registering, so no wakeup can be lost.
 *
 * Interrupted waits return -ERESTARTSYS; the syscall exit path (signal_deliver) turns that into a
 * restart or -EINTR as Linux does.
 *
 * Lock order: a waitq's lock, then a task's wait_lock. Conditions are evaluated with no wait
 * lock held.
 */
#ifndef HUSK_SENTRY_WAITQ_H
#define HUSK_SENTRY_WAITQ_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "common/list.h"

struct task;

struct waitq {
	pthread_mutex_t lock;
	struct list_head waiters; /* of struct waitq_entry */
	uint64_t seq; /* atomic: incremented by each waitq_wake_all (epoll's edge detection) */
	struct list_head callbacks; /* of struct waitq_callback (lock) */
};

/*
 * A function waitq_wake_all calls besides waking tasks (O_ASYNC's notifier, vfs/fasync.c).
 * fn runs with the queue's lock held, and maybe the waker's own locks: it must neither block
 * nor take a lock that is not a leaf.
 */
struct waitq_callback {
	struct list_head link;
	void (*fn)(struct waitq_callback *cb);
};

/* Registers cb on wq until waitq_remove_callback; after that returns, fn is not running. */
void waitq_add_callback(struct waitq *wq, struct waitq_callback *cb);
void waitq_remove_callback(struct waitq *wq, struct waitq_callback *cb);

void waitq_init(struct waitq *wq);
/* Wakes every task registered on wq (they recheck their conditions). Any thread. */
void waitq_wake_all(struct waitq *wq);
/* True if some task is registered on wq (a hint: it may change at once). */
bool waitq_has_waiters(struct waitq *wq);

/*
 * Wakes t: a task blocked in task_wait() rechecks its condition, signals and deadline; a task
 * running guest code is interrupted (its ctx_switch returns PLATFORM_EV_INTERRUPT) so that it
 * can act on a new signal. Any thread.
 */
void task_wake(struct task *t);

/* Returns true when the wait is over. Called with no wait lock held. */
typedef bool (*wait_cond_fn)(void *arg);

/*
 * Blocks t until cond(arg) is true (returns 0), a signal is pending for t (-ERESTARTSYS; only
 * SIGKILL and group exit when interruptible is false), or the absolute CLOCK_MONOTONIC deadline
 * passes (-ETIMEDOUT; NULL means no deadline). t is registered on wqs[0..nwq) while it waits.
 * Must be called by t's own host thread.
 */
long task_wait(struct task *t, struct waitq *const *wqs, int nwq, wait_cond_fn cond, void *arg,
	       const struct timespec *deadline, bool interruptible);

/*
 * Sleeps until the absolute time abs on the host's clock (CLOCK_MONOTONIC, CLOCK_REALTIME,
 * CLOCK_BOOTTIME, ...), interruptibly: a guest's time on MONOTONIC or BOOTTIME is converted by
 * the caller first (vtime_guest_to_host_ts, sentry/time/vtime.h). Returns 0 when it passed,
 * -ERESTARTSYS on a signal.
 */
long task_sleep_until(struct task *t, clockid_t clock, const struct timespec *abs);

/* A one-shot event (vfork): complete() wakes every task in task_wait_for_completion(). */
struct completion {
	struct waitq wq;
	bool done; /* atomic */
};

void completion_init(struct completion *c);
void complete(struct completion *c);
/* Waits (killable) for c. Returns 0, or -ERESTARTSYS if t is being killed. */
long task_wait_for_completion(struct task *t, struct completion *c);

#endif
