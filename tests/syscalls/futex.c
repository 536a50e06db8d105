/* SPDX-License-Identifier: Apache-2.0 */
/*
 * futex: WAIT/WAKE (private and shared, across fork on MAP_SHARED memory) and the number woken,
 * BITSET, REQUEUE, CMP_REQUEUE, futex_waitv, WAKE_OP (every operation and comparison), timeouts (FUTEX_WAIT
 * relative, WAIT_BITSET absolute on CLOCK_MONOTONIC or CLOCK_REALTIME, LOCK_PI absolute on
 * CLOCK_REALTIME), priority-inheritance futexes (LOCK_PI, TRYLOCK_PI, UNLOCK_PI,
 * WAIT_REQUEUE_PI/CMP_REQUEUE_PI, PTHREAD_PRIO_INHERIT mutexes, robust PI owner-died), robust
 * lists (set/get_robust_list of another thread, processing at thread exit), errors, and 16
 * pthreads with mutexes, condition variables and barriers.
 *
 * Waiters are known to be queued by counting them (requeue_count below), never by sleeping.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"

#define NSEC_PER_SEC 1000000000L
#define MS 1000000L

static long futex(uint32_t *uaddr, int op, uint32_t val, const void *timeout, uint32_t *uaddr2,
		  uint32_t val3)
{
	return syscall(SYS_futex, uaddr, op, val, timeout, uaddr2, val3);
}

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static int64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static struct timespec ns_to_ts(int64_t ns)
{
	return (struct timespec){ ns / NSEC_PER_SEC, ns % NSEC_PER_SEC };
}

static uint32_t word, word2, scratch;
static atomic_int woken;

/*
 * The number of waiters queued on w: all of them are requeued to a scratch word and back (each
 * requeue returns how many it moved). flags is 0 or FUTEX_PRIVATE_FLAG.
 */
static long requeue_count(uint32_t *w, uint32_t *tmp, int flags)
{
	long n = futex(w, FUTEX_REQUEUE | flags, 0, (void *)(long)INT_MAX, tmp, 0);

	if (n > 0)
		futex(tmp, FUTEX_REQUEUE | flags, 0, (void *)(long)INT_MAX, w, 0);
	return n;
}

/* Waits (polling, 60 s at most) until n waiters are queued on w. Returns whether they are. */
static int await_waiters(uint32_t *w, int flags, long n)
{
	int64_t end = now_ns(CLOCK_MONOTONIC) + 60 * NSEC_PER_SEC;
	struct timespec ms = { 0, MS };

	while (requeue_count(w, &scratch, flags) < n) {
		if (now_ns(CLOCK_MONOTONIC) > end) {
			CHECK(0, "%ld waiters never queued", n);
			return 0;
		}
		nanosleep(&ms, NULL);
	}
	return 1;
}

/* Waits on word (value 0) until woken; counts the wakeups. */
static void *waiter(void *arg)
{
	(void)arg;
	if (futex(&word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0) == 0)
		atomic_fetch_add(&woken, 1);
	return NULL;
}

static void *bitset_waiter(void *arg)
{
	uint32_t bits = (uint32_t)(uintptr_t)arg;

	if (futex(&word, FUTEX_WAIT_BITSET_PRIVATE, 0, NULL, NULL, bits) == 0)
		atomic_fetch_add(&woken, 1);
	return NULL;
}

static void start(pthread_t *th, int n, void *(*fn)(void *), void *arg)
{
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, fn, arg);
}

static void join(pthread_t *th, int n)
{
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
}

/* --- timeouts: each must not end before its time (a lower bound only) --- */
static void check_timeouts(void)
{
	struct timespec ts;
	int64_t t0, t1, end, rt_off;

	word = 1;
	/* FUTEX_WAIT: relative, measured on CLOCK_MONOTONIC. */
	ts = ns_to_ts(200 * MS);
	t0 = now_ns(CLOCK_MONOTONIC);
	CHECK_ERR(futex(&word, FUTEX_WAIT_PRIVATE, 1, &ts, NULL, 0), ETIMEDOUT);
	t1 = now_ns(CLOCK_MONOTONIC);
	CHECK(t1 - t0 >= 200 * MS, "relative 200 ms FUTEX_WAIT ended after %lld ns",
	      (long long)(t1 - t0));
	/* A shared (non-private) wait is relative too. */
	t0 = now_ns(CLOCK_MONOTONIC);
	CHECK_ERR(futex(&word, FUTEX_WAIT, 1, &ts, NULL, 0), ETIMEDOUT);
	t1 = now_ns(CLOCK_MONOTONIC);
	CHECK(t1 - t0 >= 200 * MS, "relative shared FUTEX_WAIT ended after %lld ns",
	      (long long)(t1 - t0));
	/* FUTEX_WAIT with FUTEX_CLOCK_REALTIME: Linux refuses it. */
	CHECK_ERR(futex(&word, FUTEX_WAIT_PRIVATE | FUTEX_CLOCK_REALTIME, 1, &ts, NULL, 0), ENOSYS);

	/* WAIT_BITSET: absolute CLOCK_MONOTONIC. */
	end = now_ns(CLOCK_MONOTONIC) + 200 * MS;
	ts = ns_to_ts(end);
	CHECK_ERR(futex(&word, FUTEX_WAIT_BITSET_PRIVATE, 1, &ts, NULL, FUTEX_BITSET_MATCH_ANY),
		  ETIMEDOUT);
	t1 = now_ns(CLOCK_MONOTONIC);
	CHECK(t1 >= end, "WAIT_BITSET monotonic ended %lld ns early", (long long)(end - t1));
	/* ... so a time already past on CLOCK_MONOTONIC ends at once. */
	ts = ns_to_ts(now_ns(CLOCK_MONOTONIC) - NSEC_PER_SEC);
	CHECK_ERR(futex(&word, FUTEX_WAIT_BITSET_PRIVATE, 1, &ts, NULL, FUTEX_BITSET_MATCH_ANY),
		  ETIMEDOUT);
	/* WAIT_BITSET | CLOCK_REALTIME: absolute CLOCK_REALTIME. */
	rt_off = realtime_offset_ns();
	end = now_ns(CLOCK_REALTIME) + 200 * MS;
	ts = ns_to_ts(end);
	CHECK_ERR(futex(&word, FUTEX_WAIT_BITSET_PRIVATE | FUTEX_CLOCK_REALTIME, 1, &ts, NULL,
			FUTEX_BITSET_MATCH_ANY),
		  ETIMEDOUT);
	t1 = now_ns(CLOCK_REALTIME) + realtime_set_back_ns(rt_off);
	CHECK(t1 >= end, "WAIT_BITSET realtime ended %lld ns early", (long long)(end - t1));
	/* A monotonic time is decades in the realtime past: it ends at once. */
	ts = ns_to_ts(now_ns(CLOCK_MONOTONIC) + 3600 * NSEC_PER_SEC);
	CHECK_ERR(futex(&word, FUTEX_WAIT_BITSET_PRIVATE | FUTEX_CLOCK_REALTIME, 1, &ts, NULL,
			FUTEX_BITSET_MATCH_ANY),
		  ETIMEDOUT);

	/* Invalid timespecs. */
	ts = (struct timespec){ 0, -1 };
	CHECK_ERR(futex(&word, FUTEX_WAIT_PRIVATE, 1, &ts, NULL, 0), EINVAL);
	ts = (struct timespec){ -1, 0 };
	CHECK_ERR(futex(&word, FUTEX_WAIT_PRIVATE, 1, &ts, NULL, 0), EINVAL);
	ts = (struct timespec){ 0, NSEC_PER_SEC };
	CHECK_ERR(futex(&word, FUTEX_WAIT_BITSET_PRIVATE, 1, &ts, NULL, FUTEX_BITSET_MATCH_ANY),
		  EINVAL);
	CHECK_ERR(futex(&word, FUTEX_WAIT_PRIVATE, 1, (void *)8, NULL, 0), EFAULT);
}

/* --- a handled signal ends a timed FUTEX_WAIT with EINTR (ERESTART_RESTARTBLOCK) --- */
static atomic_int handled, main_tid;

static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&handled, 1);
}

/* Interrupts the main thread's wait; with arg, waits for the restarted wait and wakes it. */
static void *interrupter(void *arg)
{
	if (!await_waiters(&word, FUTEX_PRIVATE_FLAG, 1))
		return NULL;
	syscall(SYS_tgkill, getpid(), atomic_load(&main_tid), SIGUSR1);
	if (arg) {
		while (atomic_load(&handled) == 0)
			sched_yield();
		if (await_waiters(&word, FUTEX_PRIVATE_FLAG, 1))
			CHECK_RET(futex(&word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0), 1);
	}
	return NULL;
}

static void check_interrupted_wait(void)
{
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	struct timespec ts = { 3600, 0 };
	pthread_t th;

	sigaction(SIGUSR1, &sa, NULL);
	atomic_store(&main_tid, gettid_());
	word = 0;
	pthread_create(&th, NULL, interrupter, NULL);
	/* Even with SA_RESTART: a timed wait is not restarted after a handler, as Linux. */
	CHECK_ERR(futex(&word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0), EINTR);
	pthread_join(th, NULL);
	/* Untimed, SA_RESTART restarts it: it is woken by a wake after the handler ran. */
	atomic_store(&handled, 0);
	pthread_create(&th, NULL, interrupter, (void *)1);
	CHECK_RET(futex(&word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0), 0);
	pthread_join(th, NULL);
	CHECK_RET(atomic_load(&handled), 1);
	sa.sa_handler = SIG_DFL;
	sigaction(SIGUSR1, &sa, NULL);
}

/* --- WAKE_OP: every operation and comparison, with one waiter kept on word2 --- */
static atomic_int op_waiter_stop;

static void *op_waiter(void *arg)
{
	(void)arg;
	while (!atomic_load(&op_waiter_stop)) {
		uint32_t v = __atomic_load_n(&word2, __ATOMIC_SEQ_CST);

		if (futex(&word2, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0) == 0)
			atomic_fetch_add(&woken, 1);
	}
	return NULL;
}

struct wake_op_case {
	uint32_t before;
	int op, oparg, cmp, cmparg;
	uint32_t after;
	int hit;
};

static void check_wake_op(void)
{
	static const struct wake_op_case cases[] = {
		{ 5, FUTEX_OP_SET, 9, FUTEX_OP_CMP_EQ, 5, 9, 1 },
		{ 5, FUTEX_OP_SET, 9, FUTEX_OP_CMP_EQ, 6, 9, 0 },
		{ 5, FUTEX_OP_ADD, 3, FUTEX_OP_CMP_NE, 5, 8, 0 },
		{ 5, FUTEX_OP_ADD, -1, FUTEX_OP_CMP_NE, 4, 4, 1 },
		{ 0xf0, FUTEX_OP_OR, 0x0f, FUTEX_OP_CMP_LT, 0xf1, 0xff, 1 },
		{ 0xf0, FUTEX_OP_OR, 0x0f, FUTEX_OP_CMP_LT, 0xf0, 0xff, 0 },
		{ 0xff, FUTEX_OP_ANDN, 0x0f, FUTEX_OP_CMP_LE, 0xff, 0xf0, 1 },
		{ 0xff, FUTEX_OP_ANDN, 0x0f, FUTEX_OP_CMP_LE, 0xfe, 0xf0, 0 },
		{ 0xff, FUTEX_OP_XOR, 0x0f, FUTEX_OP_CMP_GT, 0xfe, 0xf0, 1 },
		{ 0xff, FUTEX_OP_XOR, 0x0f, FUTEX_OP_CMP_GT, 0xff, 0xf0, 0 },
		{ 7, FUTEX_OP_SET, 1, FUTEX_OP_CMP_GE, 7, 1, 1 },
		{ 7, FUTEX_OP_SET, 1, FUTEX_OP_CMP_GE, 8, 1, 0 },
		/* Comparisons are signed: -1 < 0. */
		{ 0xffffffff, FUTEX_OP_SET, 0, FUTEX_OP_CMP_LT, 0, 0, 1 },
		/* FUTEX_OP_OPARG_SHIFT: the operand is 1 << oparg. */
		{ 0, FUTEX_OP_OR | FUTEX_OP_OPARG_SHIFT, 4, FUTEX_OP_CMP_EQ, 0, 16, 1 },
		{ 1, FUTEX_OP_ADD | FUTEX_OP_OPARG_SHIFT, 31, FUTEX_OP_CMP_EQ, 1, 0x80000001u, 1 },
	};
	pthread_t th;
	uint32_t w1 = 0;

	woken = 0;
	word2 = 0;
	pthread_create(&th, NULL, op_waiter, NULL);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct wake_op_case *c = &cases[i];
		int before_woken;

		if (!await_waiters(&word2, FUTEX_PRIVATE_FLAG, 1))
			break;
		before_woken = atomic_load(&woken);
		/* The waiter stays queued while its word changes under it. */
		__atomic_store_n(&word2, c->before, __ATOMIC_SEQ_CST);
		/* No one waits on w1: only the word2 wake counts. */
		CHECK_RET(futex(&w1, FUTEX_WAKE_OP_PRIVATE, 1, (void *)1L, &word2,
				FUTEX_OP(c->op, c->oparg, c->cmp, c->cmparg)),
			  c->hit);
		CHECK(word2 == c->after, "case %zu: word2 %#x, want %#x", i, word2, c->after);
		if (c->hit) {
			/* The waiter was woken: wait until it has counted it. */
			while (atomic_load(&woken) == before_woken)
				sched_yield();
		}
	}
	/* An unknown operation or comparison: ENOSYS, and the word unchanged. */
	word2 = 3;
	CHECK_ERR(futex(&w1, FUTEX_WAKE_OP_PRIVATE, 1, (void *)1L, &word2, (6u << 28) | 1), ENOSYS);
	CHECK_ERR(futex(&w1, FUTEX_WAKE_OP_PRIVATE, 1, (void *)1L, &word2,
			FUTEX_OP(FUTEX_OP_SET, 1, 9, 0)),
		  ENOSYS);
	/* Linux applies the op before it checks the comparison. */
	CHECK_RET(word2, 1);
	atomic_store(&op_waiter_stop, 1);
	futex(&word2, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	while (pthread_tryjoin_np(th, NULL) != 0) {
		__atomic_add_fetch(&word2, 1, __ATOMIC_SEQ_CST);
		futex(&word2, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
		sched_yield();
	}
	/* WAKE_OP on a bad second address: EFAULT. */
	CHECK_ERR(futex(&w1, FUTEX_WAKE_OP_PRIVATE, 1, (void *)1L, (uint32_t *)8,
			FUTEX_OP(FUTEX_OP_SET, 1, FUTEX_OP_CMP_EQ, 0)),
		  EFAULT);
}

/* --- futex_waitv: several words, woken by a plain FUTEX_WAKE on any --- */
struct waitv {
	uint64_t val, uaddr;
	uint32_t flags, reserved;
};
#define FUTEX2_SIZE_U32 0x02
#define FUTEX2_PRIVATE 128
static uint32_t wv_a, wv_b;
static atomic_long waitv_result = -100;

static long futex_waitv(struct waitv *v, unsigned int n, unsigned int flags, void *ts, int clk)
{
	return syscall(449, v, n, flags, ts, clk);
}

static void *waitv_waiter(void *arg)
{
	struct waitv v[2] = {
		{ .val = 0, .uaddr = (uintptr_t)&wv_a, .flags = FUTEX2_SIZE_U32 },
		{ .val = 0, .uaddr = (uintptr_t)&wv_b, .flags = FUTEX2_SIZE_U32 | FUTEX2_PRIVATE },
	};

	(void)arg;
	atomic_store(&waitv_result, futex_waitv(v, 2, 0, NULL, 0));
	return NULL;
}

static void check_futex_waitv(void)
{
	struct waitv v[2] = {
		{ .val = 0, .uaddr = (uintptr_t)&wv_a, .flags = FUTEX2_SIZE_U32 },
		{ .val = 1, .uaddr = (uintptr_t)&wv_b, .flags = FUTEX2_SIZE_U32 | FUTEX2_PRIVATE },
	};
	pthread_t th;

	wv_a = wv_b = 0;
	/* A value differs: EAGAIN at once. Bad flags, sizes and counts: EINVAL. */
	CHECK_ERR(futex_waitv(v, 2, 0, NULL, 0), EAGAIN);
	CHECK_ERR(futex_waitv(v, 0, 0, NULL, 0), EINVAL);
	CHECK_ERR(futex_waitv(v, 129, 0, NULL, 0), EINVAL);
	CHECK_ERR(futex_waitv(NULL, 1, 0, NULL, 0), EINVAL);
	CHECK_ERR(futex_waitv(v, 1, 1, NULL, 0), EINVAL);
	v[0].flags = 3; /* 64-bit words: not supported by Linux either */
	CHECK_ERR(futex_waitv(v, 1, 0, NULL, 0), EINVAL);
	v[0].flags = FUTEX2_SIZE_U32;
	v[0].reserved = 1;
	CHECK_ERR(futex_waitv(v, 1, 0, NULL, 0), EINVAL);
	v[0].reserved = 0;
	v[0].val = 1ULL << 32;
	CHECK_ERR(futex_waitv(v, 1, 0, NULL, 0), EINVAL);
	CHECK_ERR(futex_waitv((struct waitv *)8, 1, 0, NULL, 0), EFAULT);
	/* Woken through the second word (private, so a private wake): returns its index. The
	 * first word's key is the shared one: a private wake there misses it. */
	pthread_create(&th, NULL, waitv_waiter, NULL);
	await_waiters(&wv_b, FUTEX_PRIVATE_FLAG, 1);
	CHECK_RET(futex(&wv_a, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0), 0);
	CHECK_RET(futex(&wv_b, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0), 1);
	pthread_join(th, NULL);
	CHECK_RET(atomic_load(&waitv_result), 1);
	/* And through the first (shared): index 0, the other queue left. */
	pthread_create(&th, NULL, waitv_waiter, NULL);
	await_waiters(&wv_a, 0, 1);
	CHECK_RET(futex(&wv_a, FUTEX_WAKE, 1, NULL, NULL, 0), 1);
	pthread_join(th, NULL);
	CHECK_RET(atomic_load(&waitv_result), 0);
	CHECK_RET(futex(&wv_b, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0), 0);
}

/* --- priority inheritance --- */
static uint32_t pi_word, cond_word;
static atomic_int pi_stage;
static atomic_long pi_tid;

/* Takes pi_word, holds it until pi_stage becomes 1, then unlocks it. */
static void *pi_holder(void *arg)
{
	uint32_t tid = (uint32_t)gettid_(), zero = 0;

	(void)arg;
	if (!__atomic_compare_exchange_n(&pi_word, &zero, tid, false, __ATOMIC_SEQ_CST,
					 __ATOMIC_SEQ_CST))
		futex(&pi_word, FUTEX_LOCK_PI_PRIVATE, 0, NULL, NULL, 0);
	atomic_store(&pi_tid, tid);
	while (atomic_load(&pi_stage) == 0)
		sched_yield();
	/* The fast path fails once a waiter has set FUTEX_WAITERS. */
	if (!__atomic_compare_exchange_n(&pi_word, &(uint32_t){ tid }, 0, false, __ATOMIC_SEQ_CST,
					 __ATOMIC_SEQ_CST))
		CHECK_RET(futex(&pi_word, FUTEX_UNLOCK_PI_PRIVATE, 0, NULL, NULL, 0), 0);
	return NULL;
}

/* Takes pi_word, waits until a waiter has set FUTEX_WAITERS, and exits holding it. */
static void *pi_owner_exits(void *arg)
{
	uint32_t tid = (uint32_t)gettid_(), zero = 0;

	(void)arg;
	if (!__atomic_compare_exchange_n(&pi_word, &zero, tid, false, __ATOMIC_SEQ_CST,
					 __ATOMIC_SEQ_CST))
		return NULL;
	atomic_store(&pi_tid, tid);
	/* LOCK_PI sets the bit and queues under one hold of the futex's lock. */
	while (!(__atomic_load_n(&pi_word, __ATOMIC_SEQ_CST) & FUTEX_WAITERS))
		sched_yield();
	return NULL;
}

/* Waits on cond_word with WAIT_REQUEUE_PI onto pi_word; returns holding pi_word, then unlocks. */
static void *requeue_pi_waiter(void *arg)
{
	uint32_t tid = (uint32_t)gettid_();
	long r;

	(void)arg;
	r = futex(&cond_word, FUTEX_WAIT_REQUEUE_PI_PRIVATE, 0, NULL, &pi_word, 0);
	if (r == 0) {
		atomic_fetch_add(&woken, 1);
		CHECK((pi_word & FUTEX_TID_MASK) == tid, "requeue_pi: pi_word %#x, tid %u", pi_word,
		      tid);
		if (!__atomic_compare_exchange_n(&pi_word, &(uint32_t){ tid }, 0, false,
						 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			CHECK_RET(futex(&pi_word, FUTEX_UNLOCK_PI_PRIVATE, 0, NULL, NULL, 0), 0);
	} else {
		CHECK(0, "WAIT_REQUEUE_PI returned %ld (%s)", r, strerror(errno));
	}
	return NULL;
}

#define PI_THREADS 8
#define PI_ROUNDS 2000
static pthread_mutex_t pi_mtx;
static long pi_counter;

static void *pi_worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < PI_ROUNDS; i++) {
		pthread_mutex_lock(&pi_mtx);
		pi_counter++;
		pthread_mutex_unlock(&pi_mtx);
	}
	return NULL;
}

static pthread_mutex_t robust_mtx;

static void *lock_and_exit(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&robust_mtx);
	return NULL; /* still holding it */
}

static void check_robust_mutex(int protocol)
{
	pthread_mutexattr_t a;
	pthread_t th;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutexattr_setprotocol(&a, protocol);
	pthread_mutex_init(&robust_mtx, &a);
	pthread_create(&th, NULL, lock_and_exit, NULL);
	pthread_join(th, NULL);
	CHECK_RET(pthread_mutex_lock(&robust_mtx), EOWNERDEAD);
	CHECK_RET(pthread_mutex_consistent(&robust_mtx), 0);
	CHECK_RET(pthread_mutex_unlock(&robust_mtx), 0);
	CHECK_RET(pthread_mutex_lock(&robust_mtx), 0);
	CHECK_RET(pthread_mutex_unlock(&robust_mtx), 0);
	pthread_mutex_destroy(&robust_mtx);
	pthread_mutexattr_destroy(&a);
}

static void check_pi(void)
{
	uint32_t tid = (uint32_t)gettid_();
	pthread_mutexattr_t a;
	pthread_t th[PI_THREADS];
	struct timespec ts;
	int64_t end, t1, rt_off;

	/* TRYLOCK_PI on a free word takes it; the holder gets EDEADLK from LOCK_PI. */
	pi_word = 0;
	CHECK_RET(futex(&pi_word, FUTEX_TRYLOCK_PI_PRIVATE, 0, NULL, NULL, 0), 0);
	CHECK(pi_word == tid, "pi_word %#x after TRYLOCK_PI, tid %#x", pi_word, tid);
	CHECK_ERR(futex(&pi_word, FUTEX_LOCK_PI_PRIVATE, 0, NULL, NULL, 0), EDEADLK);
	CHECK_ERR(futex(&pi_word, FUTEX_TRYLOCK_PI_PRIVATE, 0, NULL, NULL, 0), EDEADLK);
	CHECK_RET(futex(&pi_word, FUTEX_UNLOCK_PI_PRIVATE, 0, NULL, NULL, 0), 0);
	CHECK_RET(pi_word, 0);
	/* UNLOCK_PI of a word one does not own: EPERM. */
	CHECK_ERR(futex(&pi_word, FUTEX_UNLOCK_PI_PRIVATE, 0, NULL, NULL, 0), EPERM);
	/* LOCK_PI on a word naming no task: ESRCH. */
	pi_word = 0x3ffffffe;
	CHECK_ERR(futex(&pi_word, FUTEX_LOCK_PI_PRIVATE, 0, NULL, NULL, 0), ESRCH);
	pi_word = 0;
	CHECK_ERR(futex((uint32_t *)8, FUTEX_LOCK_PI_PRIVATE, 0, NULL, NULL, 0), EFAULT);

	/* Held by another thread: TRYLOCK_PI says EAGAIN; LOCK_PI's timeout is absolute
	 * CLOCK_REALTIME (and sets FUTEX_WAITERS); then LOCK_PI gets it once the holder unlocks. */
	atomic_store(&pi_stage, 0);
	atomic_store(&pi_tid, 0);
	pthread_create(&th[0], NULL, pi_holder, NULL);
	while (atomic_load(&pi_tid) == 0)
		sched_yield();
	CHECK_ERR(futex(&pi_word, FUTEX_TRYLOCK_PI_PRIVATE, 0, NULL, NULL, 0), EAGAIN);
	rt_off = realtime_offset_ns();
	end = now_ns(CLOCK_REALTIME) + 200 * MS;
	ts = ns_to_ts(end);
	CHECK_ERR(futex(&pi_word, FUTEX_LOCK_PI_PRIVATE, 0, &ts, NULL, 0), ETIMEDOUT);
	t1 = now_ns(CLOCK_REALTIME) + realtime_set_back_ns(rt_off);
	CHECK(t1 >= end, "LOCK_PI timeout ended %lld ns early", (long long)(end - t1));
	/* LOCK_PI2 counts on CLOCK_MONOTONIC, or CLOCK_REALTIME with the flag. */
	end = now_ns(CLOCK_MONOTONIC) + 200 * MS;
	ts = ns_to_ts(end);
	CHECK_ERR(futex(&pi_word, FUTEX_LOCK_PI2_PRIVATE, 0, &ts, NULL, 0), ETIMEDOUT);
	t1 = now_ns(CLOCK_MONOTONIC);
	CHECK(t1 >= end, "LOCK_PI2 timeout ended %lld ns early", (long long)(end - t1));
	rt_off = realtime_offset_ns();
	end = now_ns(CLOCK_REALTIME) + 200 * MS;
	ts = ns_to_ts(end);
	CHECK_ERR(futex(&pi_word, FUTEX_LOCK_PI2_PRIVATE | FUTEX_CLOCK_REALTIME, 0, &ts, NULL, 0),
		  ETIMEDOUT);
	t1 = now_ns(CLOCK_REALTIME) + realtime_set_back_ns(rt_off);
	CHECK(t1 >= end, "LOCK_PI2 realtime timeout ended %lld ns early", (long long)(end - t1));
	atomic_store(&pi_stage, 1);
	CHECK_RET(futex(&pi_word, FUTEX_LOCK_PI_PRIVATE, 0, NULL, NULL, 0), 0);
	CHECK((pi_word & FUTEX_TID_MASK) == tid, "pi_word %#x after contended LOCK_PI", pi_word);
	pthread_join(th[0], NULL);
	CHECK_RET(futex(&pi_word, FUTEX_UNLOCK_PI_PRIVATE, 0, NULL, NULL, 0), 0);
	CHECK_RET(pi_word, 0);

	/* An owner (not robust) exits while a waiter waits: the waiter gets the lock, the word
	 * naming it with FUTEX_WAITERS and FUTEX_OWNER_DIED. */
	atomic_store(&pi_tid, 0);
	pi_word = 0;
	pthread_create(&th[0], NULL, pi_owner_exits, NULL);
	while (atomic_load(&pi_tid) == 0)
		sched_yield();
	CHECK_RET(futex(&pi_word, FUTEX_LOCK_PI_PRIVATE, 0, NULL, NULL, 0), 0);
	CHECK(pi_word == (tid | FUTEX_WAITERS | FUTEX_OWNER_DIED),
	      "pi_word %#x after its owner exited", pi_word);
	pthread_join(th[0], NULL);
	CHECK_RET(futex(&pi_word, FUTEX_UNLOCK_PI_PRIVATE, 0, NULL, NULL, 0), 0);
	CHECK_RET(pi_word, 0);

	/* CMP_REQUEUE_PI: nr_wake must be 1; value mismatch EAGAIN; with pi_word free the first
	 * waiter takes it at once, the others are requeued onto it and get it in turn. */
	woken = 0;
	cond_word = 0;
	pi_word = 0;
	start(th, 3, requeue_pi_waiter, NULL);
	CHECK_ERR(futex(&cond_word, FUTEX_CMP_REQUEUE_PI_PRIVATE, 2, (void *)(long)INT_MAX,
			&pi_word, 0),
		  EINVAL);
	CHECK_ERR(futex(&cond_word, FUTEX_CMP_REQUEUE_PI_PRIVATE, 1, (void *)(long)INT_MAX,
			&pi_word, 5),
		  EAGAIN);
	{
		/* Take pi_word first so that every waiter is requeued, and count them as they
		 * arrive: the returned count is woken + requeued. */
		long total = 0;
		int64_t stop = now_ns(CLOCK_MONOTONIC) + 60 * NSEC_PER_SEC;

		CHECK_RET(futex(&pi_word, FUTEX_LOCK_PI_PRIVATE, 0, NULL, NULL, 0), 0);
		while (total < 3 && now_ns(CLOCK_MONOTONIC) < stop) {
			long r = futex(&cond_word, FUTEX_CMP_REQUEUE_PI_PRIVATE, 1,
				       (void *)(long)INT_MAX, &pi_word, 0);

			if (r < 0) {
				CHECK(0, "CMP_REQUEUE_PI: %s", strerror(errno));
				break;
			}
			total += r;
			sched_yield();
		}
		CHECK_RET(total, 3);
		CHECK(pi_word == (tid | FUTEX_WAITERS), "pi_word %#x after requeue", pi_word);
		CHECK_RET(futex(&pi_word, FUTEX_UNLOCK_PI_PRIVATE, 0, NULL, NULL, 0), 0);
	}
	join(th, 3);
	CHECK_RET(woken, 3);
	CHECK_RET(pi_word, 0);
	/* With the PI word free, the one waiter woken takes it directly (count 1). */
	woken = 0;
	start(th, 1, requeue_pi_waiter, NULL);
	{
		long r = 0;
		int64_t stop = now_ns(CLOCK_MONOTONIC) + 60 * NSEC_PER_SEC;

		while (r == 0 && now_ns(CLOCK_MONOTONIC) < stop) {
			r = futex(&cond_word, FUTEX_CMP_REQUEUE_PI_PRIVATE, 1, (void *)0L, &pi_word,
				  0);
			sched_yield();
		}
		CHECK_RET(r, 1);
	}
	join(th, 1);
	CHECK_RET(woken, 1);
	/* WAIT_REQUEUE_PI onto the same word: EINVAL. */
	CHECK_ERR(futex(&cond_word, FUTEX_WAIT_REQUEUE_PI_PRIVATE, 0, NULL, &cond_word, 0), EINVAL);

	/* A PTHREAD_PRIO_INHERIT mutex contended by several threads. */
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
	pthread_mutex_init(&pi_mtx, &a);
	pthread_mutexattr_destroy(&a);
	start(th, PI_THREADS, pi_worker, NULL);
	join(th, PI_THREADS);
	CHECK_RET(pi_counter, PI_THREADS * PI_ROUNDS);
	pthread_mutex_destroy(&pi_mtx);

	/* Robust mutexes whose owner exits holding them: EOWNERDEAD for the next, PI or not. */
	check_robust_mutex(PTHREAD_PRIO_NONE);
	check_robust_mutex(PTHREAD_PRIO_INHERIT);
}

/* --- robust lists --- */
struct robust_entry {
	struct robust_entry *next;
	uint32_t lock; /* the futex word, at futex_offset from the entry */
};

static struct {
	struct robust_entry *next;
	long futex_offset;
	struct robust_entry *pending;
} rhead;
static struct robust_entry rentry;
static atomic_int rstage;
static atomic_long rtid;

/* Sets its own robust list holding rentry.lock (with a waiter bit), and exits. */
static void *robust_owner(void *arg)
{
	(void)arg;
	rhead.next = &rentry;
	rhead.futex_offset = (long)offsetof(struct robust_entry, lock);
	rhead.pending = NULL;
	rentry.next = (struct robust_entry *)&rhead;
	rentry.lock = (uint32_t)gettid_() | FUTEX_WAITERS;
	CHECK_RET(syscall(SYS_set_robust_list, &rhead, sizeof(rhead)), 0);
	atomic_store(&rtid, gettid_());
	while (atomic_load(&rstage) == 0)
		sched_yield();
	return NULL;
}

static void check_robust_list(void)
{
	void *head = NULL;
	size_t len = 0;
	pthread_t th;
	pid_t pid;
	int status;

	CHECK_ERR(syscall(SYS_set_robust_list, &rhead, sizeof(rhead) + 1), EINVAL);
	CHECK_RET(syscall(SYS_get_robust_list, 0, &head, &len), 0);
	CHECK(len == sizeof(rhead), "own robust list len %zu", len);
	pthread_create(&th, NULL, robust_owner, NULL);
	while (atomic_load(&rtid) == 0)
		sched_yield();
	/* Another thread's list, by tid. */
	head = NULL;
	len = 0;
	CHECK_RET(syscall(SYS_get_robust_list, (int)atomic_load(&rtid), &head, &len), 0);
	CHECK(head == &rhead && len == sizeof(rhead), "other thread's list %p len %zu", head, len);
	CHECK_ERR(syscall(SYS_get_robust_list, (int)atomic_load(&rtid), (void *)8, &len), EFAULT);
	CHECK_ERR(syscall(SYS_get_robust_list, -1, &head, &len), ESRCH);
	CHECK_ERR(syscall(SYS_get_robust_list, 0x3ffffffe, &head, &len), ESRCH);
	/* Another process's: allowed to root; refused (EPERM) once the caller is uid 1000. */
	pid = fork();
	if (pid == 0) {
		pid_t parent = getppid();

		if (syscall(SYS_get_robust_list, parent, &head, &len) != 0)
			_exit(1);
		if (setresgid(1000, 1000, 1000) || setresuid(1000, 1000, 1000))
			_exit(2);
		if (syscall(SYS_get_robust_list, parent, &head, &len) != -1 || errno != EPERM)
			_exit(3);
		_exit(0);
	}
	CHECK_RET(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "get_robust_list child %#x", status);

	/* At its exit, the futex it held gets FUTEX_OWNER_DIED (keeping FUTEX_WAITERS). */
	atomic_store(&rstage, 1);
	pthread_join(th, NULL);
	CHECK(rentry.lock == (FUTEX_OWNER_DIED | FUTEX_WAITERS), "robust lock %#x after exit",
	      rentry.lock);
}

/* --- 16 threads: mutex, condition variable, barrier --- */
#define NTHREADS 16
#define ROUNDS 2000
static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t barrier;
static long counter, turn;

static void *worker(void *arg)
{
	long id = (long)arg;

	for (int i = 0; i < ROUNDS; i++) {
		pthread_mutex_lock(&mtx);
		counter++;
		pthread_mutex_unlock(&mtx);
	}
	pthread_barrier_wait(&barrier);
	/* Take turns in id order through the condition variable. */
	pthread_mutex_lock(&mtx);
	while (turn != id)
		pthread_cond_wait(&cond, &mtx);
	turn++;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&mtx);
	pthread_barrier_wait(&barrier);
	return NULL;
}

int main(void)
{
	pthread_t th[NTHREADS];

	/* Errors: value differs, unaligned, bad address, bad bitset, unknown op. */
	word = 1;
	CHECK_ERR(futex(&word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0), EAGAIN);
	CHECK_ERR(futex((uint32_t *)((char *)&word + 1), FUTEX_WAIT_PRIVATE, 1, NULL, NULL, 0),
		  EINVAL);
	CHECK_ERR(futex((uint32_t *)8, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0), EFAULT);
	CHECK_ERR(futex(&word, FUTEX_WAIT_BITSET_PRIVATE, 1, NULL, NULL, 0), EINVAL);
	CHECK_ERR(futex(&word, FUTEX_WAKE_BITSET_PRIVATE, 1, NULL, NULL, 0), EINVAL);
	CHECK_ERR(futex(&word, 99, 1, NULL, NULL, 0), ENOSYS);
	CHECK_ERR(futex(&word, FUTEX_WAKE_PRIVATE | FUTEX_CLOCK_REALTIME, 1, NULL, NULL, 0),
		  ENOSYS);
	CHECK_RET(futex(&word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0), 0);
	/* A plain requeue onto the same word is allowed (a PI one is not: below). */
	CHECK_RET(futex(&word, FUTEX_REQUEUE_PRIVATE, 1, (void *)1L, &word, 0), 0);

	check_timeouts();
	check_interrupted_wait();

	/* WAKE returns the number woken, at most n: 3 waiters, wake 2, then the rest. */
	word = 0;
	woken = 0;
	start(th, 3, waiter, NULL);
	await_waiters(&word, FUTEX_PRIVATE_FLAG, 3);
	CHECK_RET(futex(&word, FUTEX_WAKE_PRIVATE, 2, NULL, NULL, 0), 2);
	CHECK_RET(futex(&word, FUTEX_WAKE_PRIVATE, 10, NULL, NULL, 0), 1);
	join(th, 3);
	CHECK(woken == 3, "woken %d", (int)woken);
	/* A wake without FUTEX_PRIVATE_FLAG misses a private waiter even on a private mapping:
	 * Linux keys the two apart (FUT_OFF_MMSHARED). */
	start(th, 1, waiter, NULL);
	await_waiters(&word, FUTEX_PRIVATE_FLAG, 1);
	CHECK_RET(futex(&word, FUTEX_WAKE, 10, NULL, NULL, 0), 0);
	CHECK_RET(requeue_count(&word, &scratch, 0), 0);
	CHECK_RET(futex(&word, FUTEX_WAKE_PRIVATE, 10, NULL, NULL, 0), 1);
	join(th, 1);

	/* BITSET: a wake with bit 2 wakes only the waiter that asked for it. */
	woken = 0;
	start(th, 1, bitset_waiter, (void *)(uintptr_t)1);
	start(th + 1, 1, bitset_waiter, (void *)(uintptr_t)2);
	await_waiters(&word, FUTEX_PRIVATE_FLAG, 2);
	CHECK_RET(futex(&word, FUTEX_WAKE_BITSET_PRIVATE, 10, NULL, NULL, 2), 1);
	pthread_join(th[1], NULL);
	CHECK_RET(futex(&word, FUTEX_WAKE_BITSET_PRIVATE, 10, NULL, NULL, 1), 1);
	pthread_join(th[0], NULL);
	CHECK(woken == 2, "woken %d", (int)woken);

	/* CMP_REQUEUE: value mismatch gives EAGAIN; then wake 1 and move 2 to word2. */
	woken = 0;
	word2 = 0;
	start(th, 3, waiter, NULL);
	await_waiters(&word, FUTEX_PRIVATE_FLAG, 3);
	CHECK_ERR(futex(&word, FUTEX_CMP_REQUEUE_PRIVATE, 1, (void *)2L, &word2, 7), EAGAIN);
	CHECK_ERR(futex(&word, FUTEX_CMP_REQUEUE_PRIVATE, 1, (void *)-1L, &word2, 0), EINVAL);
	CHECK_RET(futex(&word, FUTEX_CMP_REQUEUE_PRIVATE, 1, (void *)2L, &word2, 0), 3);
	CHECK_RET(futex(&word, FUTEX_WAKE_PRIVATE, 10, NULL, NULL, 0), 0);
	CHECK_RET(futex(&word2, FUTEX_WAKE_PRIVATE, 10, NULL, NULL, 0), 2);
	join(th, 3);
	CHECK(woken == 3, "woken %d", (int)woken);
	/* REQUEUE (no compare) counts the same way; nr_requeue limits the move. */
	start(th, 3, waiter, NULL);
	await_waiters(&word, FUTEX_PRIVATE_FLAG, 3);
	CHECK_RET(futex(&word, FUTEX_REQUEUE_PRIVATE, 0, (void *)2L, &word2, 0), 2);
	CHECK_RET(futex(&word2, FUTEX_WAKE_PRIVATE, 10, NULL, NULL, 0), 2);
	CHECK_RET(futex(&word, FUTEX_WAKE_PRIVATE, 10, NULL, NULL, 0), 1);
	join(th, 3);

	check_wake_op();

	/* Shared futex across fork on MAP_SHARED memory: the child's wake reaches the parent. */
	{
		uint32_t *shared =
			mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		int status = -1;
		pid_t pid;

		shared[0] = 0;
		pid = fork();
		if (pid == 0) {
			int64_t stop = now_ns(CLOCK_MONOTONIC) + 60 * NSEC_PER_SEC;

			/* Wait until the parent is queued (counted through shared[1]). */
			while (requeue_count(shared, shared + 1, 0) < 1 &&
			       now_ns(CLOCK_MONOTONIC) < stop)
				sched_yield();
			__atomic_store_n(shared, 1, __ATOMIC_SEQ_CST);
			_exit(futex(shared, FUTEX_WAKE, 1, NULL, NULL, 0) == 1 ? 0 : 1);
		}
		CHECK(pid > 0, "fork %d", pid);
		while (__atomic_load_n(shared, __ATOMIC_SEQ_CST) == 0)
			futex(shared, FUTEX_WAIT, 0, NULL, NULL, 0);
		CHECK_RET(waitpid(pid, &status, 0), pid);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
		munmap(shared, 4096);
	}

	/* A shared futex is the page, not the address: a memfd mapped twice meets itself. */
	{
		int fd = (int)syscall(SYS_memfd_create, "futex", 0);
		uint32_t *m1, *m2;

		CHECK(fd >= 0 && ftruncate(fd, 4096) == 0, "memfd: %s", strerror(errno));
		m1 = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		m2 = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		CHECK(m1 != MAP_FAILED && m2 != MAP_FAILED && m1 != m2, "mmap twice");
		m1[1] = 0;
		if (m1 != MAP_FAILED && m2 != MAP_FAILED) {
			pid_t pid = fork();
			int status = -1;

			if (pid == 0)
				_exit(futex(&m1[1], FUTEX_WAIT, 0, NULL, NULL, 0) == 0 ? 0 : 1);
			await_waiters(&m2[1], 0, 1);
			CHECK_RET(futex(&m2[1], FUTEX_WAKE, 1, NULL, NULL, 0), 1);
			CHECK_RET(waitpid(pid, &status, 0), pid);
			CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "waiter %#x", status);
			/* A private wake through the other address does not reach it. */
			CHECK_RET(futex(&m2[1], FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0), 0);
		}
		munmap(m1, 4096);
		munmap(m2, 4096);
		close(fd);
	}

	check_futex_waitv();
	check_pi();
	check_robust_list();

	/* 16 threads: locked increments, ordered turns through a condition variable, barriers. */
	pthread_barrier_init(&barrier, NULL, NTHREADS);
	for (long i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	join(th, NTHREADS);
	CHECK_RET(counter, NTHREADS * ROUNDS);
	CHECK_RET(turn, NTHREADS);
	pthread_barrier_destroy(&barrier);
	return finish();
}
