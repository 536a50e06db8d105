/* SPDX-License-Identifier: Apache-2.0 */
/*
 * futex: WAIT/WAKE (private and shared, across fork on MAP_SHARED memory), BITSET, REQUEUE,
 * CMP_REQUEUE, WAKE_OP, timeouts (relative, absolute, CLOCK_REALTIME), EAGAIN/EINVAL/EFAULT,
 * and 16 pthreads with mutexes, condition variables and barriers.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"

static long futex(uint32_t *uaddr, int op, uint32_t val, const void *timeout, uint32_t *uaddr2,
		  uint32_t val3)
{
	return syscall(SYS_futex, uaddr, op, val, timeout, uaddr2, val3);
}

static uint32_t word, word2;
static atomic_int woken;

/* Waits on word (value 0) until woken; counts the wakeups. */
static void *waiter(void *arg)
{
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

/*
 * Gives new waiters time to queue: Linux offers no way to count a futex's waiters. 200 ms is
 * far more than a thread needs to start and block, natively or in husk.
 */
static void settle(void)
{
	struct timespec ts = { 0, 200000000 };

	nanosleep(&ts, NULL);
}

static void start(pthread_t *th, int n, void *(*fn)(void *), void *arg)
{
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, fn, arg);
	settle();
}

static void join(pthread_t *th, int n)
{
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
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
	struct timespec rel = { 0, 30000000 }, abs;

	/* Errors: value differs, unaligned, bad address, bad bitset, unknown op. */
	word = 1;
	CHECK_ERR(futex(&word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0), EAGAIN);
	CHECK_ERR(futex((uint32_t *)((char *)&word + 1), FUTEX_WAIT_PRIVATE, 1, NULL, NULL, 0),
		  EINVAL);
	CHECK_ERR(futex((uint32_t *)8, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0), EFAULT);
	CHECK_ERR(futex(&word, FUTEX_WAIT_BITSET_PRIVATE, 1, NULL, NULL, 0), EINVAL);
	CHECK_ERR(futex(&word, 99, 1, NULL, NULL, 0), ENOSYS);
	CHECK_RET(futex(&word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0), 0);

	/* Timeouts: relative (FUTEX_WAIT), absolute on MONOTONIC and REALTIME (WAIT_BITSET). */
	CHECK_ERR(futex(&word, FUTEX_WAIT_PRIVATE, 1, &rel, NULL, 0), ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &abs);
	abs.tv_nsec += 30000000;
	if (abs.tv_nsec >= 1000000000) {
		abs.tv_sec++;
		abs.tv_nsec -= 1000000000;
	}
	CHECK_ERR(futex(&word, FUTEX_WAIT_BITSET_PRIVATE, 1, &abs, NULL, FUTEX_BITSET_MATCH_ANY),
		  ETIMEDOUT);
	clock_gettime(CLOCK_REALTIME, &abs);
	abs.tv_sec -= 1;
	CHECK_ERR(futex(&word, FUTEX_WAIT_BITSET_PRIVATE | FUTEX_CLOCK_REALTIME, 1, &abs, NULL,
			FUTEX_BITSET_MATCH_ANY),
		  ETIMEDOUT);
	rel.tv_nsec = -1;
	CHECK_ERR(futex(&word, FUTEX_WAIT_PRIVATE, 1, &rel, NULL, 0), EINVAL);

	/* WAKE wakes at most n: 3 waiters, wake 2, then the rest. */
	word = 0;
	start(th, 3, waiter, NULL);
	CHECK_RET(futex(&word, FUTEX_WAKE_PRIVATE, 2, NULL, NULL, 0), 2);
	CHECK_RET(futex(&word, FUTEX_WAKE_PRIVATE, 10, NULL, NULL, 0), 1);
	join(th, 3);
	CHECK(woken == 3, "woken %d", (int)woken);

	/* BITSET: a wake with bit 2 wakes only the waiter that asked for it. */
	woken = 0;
	start(th, 1, bitset_waiter, (void *)(uintptr_t)1);
	start(th + 1, 1, bitset_waiter, (void *)(uintptr_t)2);
	CHECK_RET(futex(&word, FUTEX_WAKE_BITSET_PRIVATE, 10, NULL, NULL, 2), 1);
	pthread_join(th[1], NULL);
	CHECK_RET(futex(&word, FUTEX_WAKE_BITSET_PRIVATE, 10, NULL, NULL, 1), 1);
	pthread_join(th[0], NULL);
	CHECK(woken == 2, "woken %d", (int)woken);

	/* CMP_REQUEUE: value mismatch gives EAGAIN; then wake 1 and move 2 to word2. */
	woken = 0;
	start(th, 3, waiter, NULL);
	CHECK_ERR(futex(&word, FUTEX_CMP_REQUEUE_PRIVATE, 1, (void *)2, &word2, 7), EAGAIN);
	CHECK_RET(futex(&word, FUTEX_CMP_REQUEUE_PRIVATE, 1, (void *)2, &word2, 0), 3);
	CHECK_RET(futex(&word, FUTEX_WAKE_PRIVATE, 10, NULL, NULL, 0), 0);
	CHECK_RET(futex(&word2, FUTEX_WAKE_PRIVATE, 10, NULL, NULL, 0), 2);
	join(th, 3);
	CHECK(woken == 3, "woken %d", (int)woken);
	/* REQUEUE (no compare) counts the same way. */
	start(th, 2, waiter, NULL);
	CHECK_RET(futex(&word, FUTEX_REQUEUE_PRIVATE, 0, (void *)5, &word2, 0), 2);
	CHECK_RET(futex(&word2, FUTEX_WAKE_PRIVATE, 10, NULL, NULL, 0), 2);
	join(th, 2);

	/* WAKE_OP: word2 += 1 (old 0); wake 1 on word, and on word2 if old == 0. */
	word2 = 0;
	start(th, 1, waiter, NULL);
	CHECK_RET(futex(&word, FUTEX_WAKE_OP_PRIVATE, 1, (void *)1, &word2,
			FUTEX_OP(FUTEX_OP_ADD, 1, FUTEX_OP_CMP_EQ, 0)),
		  1);
	CHECK_RET(word2, 1);
	join(th, 1);
	CHECK_RET(futex(&word, FUTEX_WAKE_OP_PRIVATE, 1, (void *)1, &word2,
			FUTEX_OP(FUTEX_OP_SET, 7, FUTEX_OP_CMP_GT, 5)),
		  0);
	CHECK_RET(word2, 7);

	/* Shared futex across fork on MAP_SHARED memory: the child's wake reaches the parent. */
	{
		uint32_t *shared =
			mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		int status = -1;
		pid_t pid;

		*shared = 0;
		pid = fork();
		if (pid == 0) {
			settle();
			__atomic_store_n(shared, 1, __ATOMIC_SEQ_CST);
			while (futex(shared, FUTEX_WAKE, 1, NULL, NULL, 0) != 1)
				settle();
			_exit(0);
		}
		CHECK(pid > 0, "fork %d", pid);
		while (__atomic_load_n(shared, __ATOMIC_SEQ_CST) == 0)
			futex(shared, FUTEX_WAIT, 0, NULL, NULL, 0);
		CHECK_RET(waitpid(pid, &status, 0), pid);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
		munmap(shared, 4096);
	}

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
