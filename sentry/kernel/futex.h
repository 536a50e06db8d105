/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Futexes: wait queues keyed by a guest word.
 *
 * A private futex (FUTEX_PRIVATE_FLAG) is keyed by (mm, guest address); a shared one in a
 * MAP_SHARED mapping by the memory-file offset of the word, so processes that share the page
 * (across fork, or mapping the same shared memory) meet on it; a shared one in a private mapping
 * by (mm, address) marked apart from the private key, as Linux's FUT_OFF_MMSHARED (a wake
 * without FUTEX_PRIVATE_FLAG does not reach a private waiter, nor the reverse).
 *
 * Waiters sleep with task_wait() (interruptible, with a CLOCK_MONOTONIC deadline); a wake
 * removes the waiter from its queue before task_wake(), so a woken waiter never consumes a
 * second wake. The value check and the queueing happen under the bucket lock, as in Linux, so
 * no wake between them is lost.
 */
#ifndef HUSK_SENTRY_FUTEX_H
#define HUSK_SENTRY_FUTEX_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct task;

#define FUTEX_BITSET_ANY 0xffffffffu

/*
 * FUTEX_WAIT_BITSET: if the word at uaddr equals val, sleeps until a wake whose bitset meets
 * bitset, a signal (-ERESTARTSYS), or the absolute CLOCK_MONOTONIC deadline (-ETIMEDOUT; NULL:
 * none). Returns 0 when woken, -EAGAIN when the word differs, -EFAULT, -EINVAL (unaligned).
 */
long futex_wait(struct task *t, uint64_t uaddr, bool private, uint32_t val, uint32_t bitset,
		const struct timespec *deadline);

/*
 * Wakes at most n waiters on uaddr whose bitset meets bitset. Returns the number woken, or
 * -EFAULT / -EINVAL.
 */
long futex_wake_bitset(struct task *t, uint64_t uaddr, bool private, int n, uint32_t bitset);

/* FUTEX_WAKE on a non-private futex (CLONE_CHILD_CLEARTID at thread exit). */
int futex_wake(struct task *t, uint64_t uaddr, int n);

/*
 * FUTEX_REQUEUE / FUTEX_CMP_REQUEUE: wakes nr_wake waiters of uaddr and moves up to nr_requeue
 * of the rest to uaddr2. With cmp, fails with -EAGAIN unless the word at uaddr equals val3.
 * Returns the number woken plus the number requeued.
 */
long futex_requeue(struct task *t, uint64_t uaddr, uint64_t uaddr2, bool private, int nr_wake,
		   int nr_requeue, bool cmp, uint32_t val3);

/*
 * FUTEX_WAKE_OP: atomically applies the operation encoded in val3 to the word at uaddr2, wakes
 * nr_wake waiters of uaddr, and, if the comparison encoded in val3 holds for the old value,
 * nr_wake2 waiters of uaddr2. Returns the total woken, -EFAULT, -ENOSYS (bad op).
 */
long futex_wake_op(struct task *t, uint64_t uaddr, uint64_t uaddr2, bool private, int nr_wake,
		   int nr_wake2, uint32_t val3);

/* One word of futex_waitv: wait while the word at uaddr is val. */
struct futex_waitv_req {
	uint64_t uaddr;
	uint32_t val;
	bool private;
};

/*
 * futex_waitv(2): if every word still has its value, sleeps until one is woken (as by
 * FUTEX_WAKE), a signal (-ERESTARTSYS) or the absolute CLOCK_MONOTONIC deadline (-ETIMEDOUT).
 * Returns the index of a woken word, -EAGAIN (a value differs), -EFAULT, -EINVAL, -ENOMEM.
 */
long futex_waitv(struct task *t, const struct futex_waitv_req *reqs, int n,
		 const struct timespec *deadline);

/*
 * FUTEX_LOCK_PI / FUTEX_TRYLOCK_PI: takes the PI lock at uaddr (the word becomes t's tid), or
 * queues behind its owner (setting FUTEX_WAITERS) until UNLOCK_PI hands it over or the absolute
 * CLOCK_MONOTONIC deadline passes. Returns 0, -EDEADLK (t owns it), -ESRCH (the owner is gone),
 * -EAGAIN (trylock, owned), -ETIMEDOUT, -ERESTARTNOINTR, -EFAULT, -EINVAL.
 */
long futex_lock_pi(struct task *t, uint64_t uaddr, bool private, const struct timespec *deadline,
		   bool trylock);

/* FUTEX_UNLOCK_PI: hands the lock to the first waiter, or frees it. 0, -EPERM (not owner). */
long futex_unlock_pi(struct task *t, uint64_t uaddr, bool private);

/*
 * FUTEX_WAIT_REQUEUE_PI: waits on uaddr (if it equals val) for a FUTEX_CMP_REQUEUE_PI to uaddr2,
 * and returns 0 owning the PI lock at uaddr2; -EAGAIN, -EINVAL (same word), -ETIMEDOUT...
 */
long futex_wait_requeue_pi(struct task *t, uint64_t uaddr, uint64_t uaddr2, bool private,
			   uint32_t val, const struct timespec *deadline);

/*
 * FUTEX_CMP_REQUEUE_PI: if the word at uaddr equals val3, gives the PI lock at uaddr2 to the
 * first WAIT_REQUEUE_PI waiter if it is free, and moves up to nr_requeue waiters onto it.
 * Returns woken + requeued; -EINVAL (nr_wake != 1, a waiter bound elsewhere), -EAGAIN, -ESRCH.
 */
long futex_cmp_requeue_pi(struct task *t, uint64_t uaddr, uint64_t uaddr2, bool private,
			  int nr_wake, int nr_requeue, uint32_t val3);

/*
 * Thread exit: walks t's robust list (set_robust_list) and, for each futex t still owns (the
 * word's TID bits are t->tid), sets FUTEX_OWNER_DIED, clears the TID, and wakes one waiter if
 * FUTEX_WAITERS was set (a PI one: its PI waiters retry). Bounded (2048 entries) against circular
 * lists. Then PI waiters waiting for t retry. Call on t's own thread while its mm is still there,
 * before CLONE_CHILD_CLEARTID (the caller's: write 0 + futex_wake), as Linux does.
 */
void futex_exit_cleanup(struct task *t);

/*
 * execve, past the point of no return and before the old mm goes (Linux's exec_mm_release): t's
 * robust list is walked as at exit (with t's tid after de-threading), then forgotten; PI waiters
 * waiting for t retry. t stays a live owner of what it still holds.
 */
void futex_exec_cleanup(struct task *t);

#endif
