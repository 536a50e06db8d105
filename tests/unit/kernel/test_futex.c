/* SPDX-License-Identifier: Apache-2.0 */
/* Futexes (sentry/kernel/futex.c): wait/wake, bitsets, requeue, wake-op, robust lists, PI. */
#include <criterion/criterion.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>

#include "include/abi/linux/errno.h"
#include "sentry/kernel/futex.h"
#include "tests/unit/kernel/fake_wait.h"

static struct fake_world w;

static void setup(void)
{
	fake_world_init(&w);
}

static void teardown(void)
{
	/* Every operation unpinned the words it pinned. */
	cr_expect_eq(__atomic_load_n(&fake_pins, __ATOMIC_RELAXED), 0);
	fake_world_fini(&w);
}

TestSuite(futex, .init = setup, .fini = teardown);

static uint64_t addr_of(uint32_t *word)
{
	return (uint64_t)(uintptr_t)word;
}

struct waiter {
	struct task *t;
	uint32_t *word;
	uint32_t val, bitset;
	bool private;
	long ret;
	bool done; /* atomic */
};

static void *wait_thread(void *arg)
{
	struct waiter *wt = arg;

	wt->ret = futex_wait(wt->t, addr_of(wt->word), wt->private, wt->val, wt->bitset, NULL);
	__atomic_store_n(&wt->done, true, __ATOMIC_RELEASE);
	return NULL;
}

static void start_waiter(pthread_t *th, struct waiter *wt, struct task *t, uint32_t *word,
			 uint32_t bitset)
{
	*wt = (struct waiter){
		.t = t, .word = word, .val = *word, .bitset = bitset, .private = true
	};
	fake_run_as(th, t, wait_thread, wt);
}

/*
 * Returns once a waiter is queued on word, without waking it: requeues it to a scratch word
 * (which counts it only once it is queued), then back. No timing involved.
 */
static void wait_until_queued(uint32_t *word, bool private)
{
	uint32_t scratch = 0;

	while (futex_requeue(&w.t[0], addr_of(word), addr_of(&scratch), private, 0, 1, false, 0) ==
	       0)
		sched_yield();
	cr_assert_eq(futex_requeue(&w.t[0], addr_of(&scratch), addr_of(word), private, 0, 1, false,
				   0),
		     1);
}

/* Wakes one waiter of word (by t[0]) once it is queued. */
static void wake_one_when_queued(uint32_t *word, uint32_t bitset)
{
	wait_until_queued(word, true);
	cr_assert_eq(futex_wake_bitset(&w.t[0], addr_of(word), true, 1, bitset), 1);
}

Test(futex, wait_on_a_changed_word_is_eagain)
{
	uint32_t word = 5;

	cr_assert_eq(futex_wait(&w.t[0], addr_of(&word), true, 4, FUTEX_BITSET_ANY, NULL), -EAGAIN);
}

Test(futex, unaligned_word_is_einval_and_unmapped_efault)
{
	uint32_t words[2] = { 0, 0 };

	cr_assert_eq(futex_wait(&w.t[0], addr_of(words) + 1, true, 0, FUTEX_BITSET_ANY, NULL),
		     -EINVAL);
	cr_assert_eq(futex_wake_bitset(&w.t[0], addr_of(words) + 2, true, 1, FUTEX_BITSET_ANY),
		     -EINVAL);
	cr_assert_eq(futex_wait(&w.t[0], 16, true, 0, FUTEX_BITSET_ANY, NULL), -EFAULT);
	cr_assert_eq(futex_wait(&w.t[0], 16, false, 0, FUTEX_BITSET_ANY, NULL), -EFAULT);
	cr_assert_eq(futex_lock_pi(&w.t[0], 16, true, NULL, false), -EFAULT);
}

Test(futex, private_wake_and_requeue_need_no_page)
{
	uint32_t word = 1;

	/* A private key is the mm and the address: nothing is read. */
	cr_assert_eq(futex_wake_bitset(&w.t[0], 16, true, 1, FUTEX_BITSET_ANY), 0);
	cr_assert_eq(futex_requeue(&w.t[0], 16, 32, true, 1, 1, false, 0), 0);
	cr_assert_eq(futex_requeue(&w.t[0], addr_of(&word), 32, true, 1, 1, true, 1), 0);
	cr_assert_eq(futex_requeue(&w.t[0], 16, addr_of(&word), true, 1, 1, true, 1), -EFAULT);
	cr_assert_eq(futex_wake_op(&w.t[0], 16, addr_of(&word), true, 1, 1, 0), 0);
	cr_assert_eq(word, 0); /* FUTEX_OP_SET 0 */
	cr_assert_eq(futex_wake_op(&w.t[0], addr_of(&word), 16, true, 1, 1, 0), -EFAULT);
	/* A shared one needs its page; a kernel address is never one. */
	cr_assert_eq(futex_wake_bitset(&w.t[0], 16, false, 1, FUTEX_BITSET_ANY), -EFAULT);
	cr_assert_eq(futex_wake_bitset(&w.t[0], 0xffff888000000000ULL, true, 1, FUTEX_BITSET_ANY),
		     -EFAULT);
}

Test(futex, wake_with_no_waiter_wakes_nobody)
{
	uint32_t word = 0;

	cr_assert_eq(futex_wake_bitset(&w.t[0], addr_of(&word), true, 10, FUTEX_BITSET_ANY), 0);
}

Test(futex, passed_deadline_times_out)
{
	uint32_t word = 0;
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	cr_assert_eq(futex_wait(&w.t[0], addr_of(&word), true, 0, FUTEX_BITSET_ANY, &now),
		     -ETIMEDOUT);
}

Test(futex, wake_releases_a_waiter)
{
	uint32_t word = 1;
	struct waiter wt;
	pthread_t th;

	start_waiter(&th, &wt, &w.t[1], &word, FUTEX_BITSET_ANY);
	wake_one_when_queued(&word, FUTEX_BITSET_ANY);
	pthread_join(th, NULL);
	cr_assert_eq(wt.ret, 0);
	cr_assert_eq(futex_wake_bitset(&w.t[0], addr_of(&word), true, 1, FUTEX_BITSET_ANY), 0,
		     "a woken waiter is off the queue");
}

Test(futex, wake_skips_waiters_of_other_bits)
{
	uint32_t word = 0;
	struct waiter wt;
	pthread_t th;

	start_waiter(&th, &wt, &w.t[1], &word, 0x1);
	wait_until_queued(&word, true);
	cr_assert_eq(futex_wake_bitset(&w.t[0], addr_of(&word), true, 1, 0x2), 0);
	cr_assert_eq(futex_wake_bitset(&w.t[0], addr_of(&word), true, 1, 0x1 | 0x8), 1);
	pthread_join(th, NULL);
	cr_assert_eq(wt.ret, 0);
}

Test(futex, signal_interrupts_a_wait)
{
	uint32_t word = 0;
	struct waiter wt;
	pthread_t th;

	start_waiter(&th, &wt, &w.t[1], &word, FUTEX_BITSET_ANY);
	fake_set_signal_pending(&w.t[1], true);
	pthread_join(th, NULL);
	cr_assert_eq(wt.ret, -ERESTARTSYS);
	cr_assert_eq(futex_wake_bitset(&w.t[0], addr_of(&word), true, 1, FUTEX_BITSET_ANY), 0,
		     "an interrupted waiter leaves the queue");
}

Test(futex, requeue_moves_waiters_to_the_second_word)
{
	uint32_t a = 0, b = 0;
	struct waiter w1, w2;
	pthread_t th1, th2;
	long n;

	start_waiter(&th1, &w1, &w.t[1], &a, FUTEX_BITSET_ANY);
	start_waiter(&th2, &w2, &w.t[2], &a, FUTEX_BITSET_ANY);
	/* CMP_REQUEUE checks the word first; then both move to b as they get queued. */
	cr_assert_eq(futex_requeue(&w.t[0], addr_of(&a), addr_of(&b), true, 0, 1, true, 7),
		     -EAGAIN);
	n = 0;
	while (n < 2) {
		long r = futex_requeue(&w.t[0], addr_of(&a), addr_of(&b), true, 0, 2, true, 0);

		cr_assert_geq(r, 0);
		n += r;
		sched_yield();
	}
	cr_assert_eq(futex_wake_bitset(&w.t[0], addr_of(&a), true, 2, FUTEX_BITSET_ANY), 0);
	cr_assert_eq(futex_wake_bitset(&w.t[0], addr_of(&b), true, 2, FUTEX_BITSET_ANY), 2);
	pthread_join(th1, NULL);
	pthread_join(th2, NULL);
	cr_assert_eq(w1.ret, 0);
	cr_assert_eq(w2.ret, 0);
}

Test(futex, wake_op_changes_the_word_and_wakes_on_its_comparison)
{
	uint32_t a = 0, b = 3;
	struct waiter wt;
	pthread_t th;
	/* op: *b = 10 (SET); then wake b's waiters if the old value > 2. */
	uint32_t op = FUTEX_OP(FUTEX_OP_SET, 10, FUTEX_OP_CMP_GT, 2);
	long n;

	cr_assert_eq(futex_wake_op(&w.t[0], addr_of(&a), addr_of(&b), true, 1, 1, op), 0);
	cr_assert_eq(b, 10);
	start_waiter(&th, &wt, &w.t[1], &b, FUTEX_BITSET_ANY);
	wait_until_queued(&b, true);
	/* The comparison fails (old 10 is not < 5): the word changes, nobody wakes. */
	op = FUTEX_OP(FUTEX_OP_ADD, 1, FUTEX_OP_CMP_LT, 5);
	cr_assert_eq(futex_wake_op(&w.t[0], addr_of(&a), addr_of(&b), true, 1, 1, op), 0);
	cr_assert_eq(b, 11);
	op = FUTEX_OP(FUTEX_OP_OR, 4, FUTEX_OP_CMP_EQ, 11);
	n = futex_wake_op(&w.t[0], addr_of(&a), addr_of(&b), true, 1, 1, op);
	pthread_join(th, NULL);
	cr_assert_eq(n, 1);
	cr_assert_eq(b, 15);
	cr_assert_eq(wt.ret, 0);
	cr_assert_eq(futex_wake_op(&w.t[0], addr_of(&a), addr_of(&b), true, 1, 1, 0xf0000000u),
		     -ENOSYS);
}

Test(futex, robust_list_marks_owner_died_and_wakes_a_waiter)
{
	static int dummy_mm;
	struct {
		uint64_t next;
		int64_t futex_offset;
		uint64_t pending;
	} head;
	struct {
		uint64_t next;
		uint32_t word;
	} lock;
	struct waiter wt;
	pthread_t th;

	for (int i = 0; i < 4; i++)
		w.t[i].mm = (struct mm *)&dummy_mm;
	head.next = (uint64_t)(uintptr_t)&lock;
	head.futex_offset = (int64_t)((uintptr_t)&lock.word - (uintptr_t)&lock);
	head.pending = 0;
	lock.next = (uint64_t)(uintptr_t)&head;
	lock.word = (uint32_t)w.t[0].tid | FUTEX_WAITERS;
	w.t[0].robust_list = (uint64_t)(uintptr_t)&head;
	w.t[0].robust_len = sizeof(head);

	wt = (struct waiter){ .t = &w.t[1],
			      .word = &lock.word,
			      .val = lock.word,
			      .bitset = FUTEX_BITSET_ANY,
			      .private = false };
	fake_run_as(&th, &w.t[1], wait_thread, &wt);
	wait_until_queued(&lock.word, false);
	futex_exit_cleanup(&w.t[0]);
	pthread_join(th, NULL);
	cr_assert_eq(wt.ret, 0);
	cr_assert_eq(lock.word, FUTEX_OWNER_DIED | FUTEX_WAITERS);
}

Test(futex, pi_lock_takes_a_free_word_and_refuses_its_owner)
{
	uint32_t word = 0;
	struct task *t = &w.t[0];

	cr_assert_eq(futex_lock_pi(t, addr_of(&word), true, NULL, false), 0);
	cr_assert_eq(word, (uint32_t)t->tid);
	cr_assert_eq(futex_lock_pi(t, addr_of(&word), true, NULL, false), -EDEADLK);
	cr_assert_eq(futex_lock_pi(t, addr_of(&word), true, NULL, true), -EDEADLK);
	cr_assert_eq(futex_unlock_pi(&w.t[1], addr_of(&word), true), -EPERM);
	cr_assert_eq(futex_unlock_pi(t, addr_of(&word), true), 0);
	cr_assert_eq(word, 0);
}

Test(futex, pi_trylock_of_a_held_word_sets_waiters_and_is_eagain)
{
	uint32_t word = (uint32_t)w.t[1].tid;

	cr_assert_eq(futex_lock_pi(&w.t[0], addr_of(&word), true, NULL, true), -EAGAIN);
	cr_assert_eq(word, (uint32_t)w.t[1].tid | FUTEX_WAITERS);
	/* A tid that names no task: ESRCH. */
	word = 0x3ffffff0;
	cr_assert_eq(futex_lock_pi(&w.t[0], addr_of(&word), true, NULL, false), -ESRCH);
}

struct pi_locker {
	struct task *t;
	uint32_t *word;
	long ret;
};

static void *pi_lock_thread(void *arg)
{
	struct pi_locker *l = arg;

	l->ret = futex_lock_pi(l->t, addr_of(l->word), true, NULL, false);
	return NULL;
}

Test(futex, pi_unlock_hands_the_word_to_the_waiter)
{
	uint32_t word = (uint32_t)w.t[0].tid;
	struct pi_locker l = { .t = &w.t[1], .word = &word, .ret = -1 };
	pthread_t th;

	fake_run_as(&th, &w.t[1], pi_lock_thread, &l);
	/* The waiter sets FUTEX_WAITERS and queues under one hold of the bucket lock, which
	 * UNLOCK_PI takes: once the bit shows, the unlock finds the waiter. */
	while (!(__atomic_load_n(&word, __ATOMIC_SEQ_CST) & FUTEX_WAITERS))
		sched_yield();
	cr_assert_eq(futex_unlock_pi(&w.t[0], addr_of(&word), true), 0);
	pthread_join(th, NULL);
	cr_assert_eq(l.ret, 0);
	cr_assert_eq(word & FUTEX_TID_MASK, (uint32_t)w.t[1].tid);
}
