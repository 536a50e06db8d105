/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Threads: 16 pthreads with a mutex, a condition variable and a barrier; tids and pids; join
 * (CLONE_CHILD_CLEARTID wakes the joiner); 200 threads created and joined; exit_group with
 * threads blocked; the leader leaving first (pthread_exit in main) with the process's status
 * then coming from the last thread.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define NTHREADS 16
#define NITER 20000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t barrier;
static long counter;
static int go;
static pid_t tids[NTHREADS];
static int same_pid[NTHREADS];
static pid_t main_pid;

static void *worker(void *arg)
{
	long i = (long)arg;

	tids[i] = (pid_t)syscall(SYS_gettid);
	same_pid[i] = getpid() == main_pid;
	pthread_barrier_wait(&barrier);
	pthread_mutex_lock(&lock);
	while (!go)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	for (int n = 0; n < NITER; n++) {
		pthread_mutex_lock(&lock);
		counter++;
		pthread_mutex_unlock(&lock);
	}
	return (void *)(i * 3);
}

static void test_workers(void)
{
	pthread_t th[NTHREADS];
	pid_t me = getpid();
	int distinct = 1;

	main_pid = me;

	pthread_barrier_init(&barrier, NULL, NTHREADS + 1);
	for (long i = 0; i < NTHREADS; i++)
		CHECK_RET(pthread_create(&th[i], NULL, worker, (void *)i), 0);
	pthread_barrier_wait(&barrier);
	for (int i = 0; i < NTHREADS; i++) {
		distinct &= tids[i] != me && tids[i] > 0;
		for (int j = 0; j < i; j++)
			distinct &= tids[i] != tids[j];
	}
	CHECK(distinct, "thread ids are not distinct");
	for (int i = 0; i < NTHREADS; i++)
		CHECK(same_pid[i], "thread %d saw another pid", i);
	pthread_mutex_lock(&lock);
	go = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	for (long i = 0; i < NTHREADS; i++) {
		void *ret;

		CHECK_RET(pthread_join(th[i], &ret), 0);
		CHECK((long)ret == i * 3, "thread %ld returned %ld", i, (long)ret);
	}
	CHECK(counter == (long)NTHREADS * NITER, "counter %ld", counter);
	CHECK(getpid() == me, "pid changed");
	pthread_barrier_destroy(&barrier);
}

static void *mxcsr_fn(void *arg)
{
	unsigned int v;

	__asm__ volatile("stmxcsr %0" : "=m"(v));
	return (void *)(uintptr_t)v;
}

/* A new thread starts with its creator's floating-point control state (MXCSR here). */
static void test_fpstate(void)
{
	unsigned int saved, up;
	pthread_t th;
	void *ret;

	__asm__ volatile("stmxcsr %0" : "=m"(saved));
	up = (saved & ~0x6000u) | 0x2000u; /* round down */
	__asm__ volatile("ldmxcsr %0" : : "m"(up));
	CHECK_RET(pthread_create(&th, NULL, mxcsr_fn, NULL), 0);
	__asm__ volatile("ldmxcsr %0" : : "m"(saved));
	CHECK_RET(pthread_join(th, &ret), 0);
	CHECK((unsigned int)(uintptr_t)ret == up, "thread MXCSR %#x, creator's %#x",
	      (unsigned int)(uintptr_t)ret, up);
}

static void *getpid_fn(void *arg)
{
	return (void *)(long)getpid();
}

static void test_churn(void)
{
	int ok = 1;

	for (int i = 0; i < 200; i++) {
		pthread_t th;
		void *ret;

		if (pthread_create(&th, NULL, getpid_fn, NULL) != 0 ||
		    pthread_join(th, &ret) != 0) {
			ok = 0;
			break;
		}
		ok &= (long)ret == getpid();
	}
	CHECK(ok, "200 threads created and joined");
}

/* Runs fn in a child and returns its exit code (or 1000 + signal). */
static int child_status(void (*fn)(void))
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		fn();
		_exit(99);
	}
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
}

static void *block_fn(void *arg)
{
	pthread_mutex_lock(&lock);
	for (;;)
		pthread_cond_wait(&cond, &lock);
	return NULL;
}

static void exit_with_blocked_threads(void)
{
	pthread_t th[4];
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	go = 0;
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, block_fn, NULL);
	nanosleep(&ts, NULL);
	exit(3);
}

static void *late_exit_fn(void *arg)
{
	struct timespec ts = { 0, 50 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	if (arg)
		exit(5);
	return NULL;
}

static void leader_leaves_last_exits(void)
{
	pthread_t th;

	pthread_create(&th, NULL, late_exit_fn, (void *)1);
	pthread_exit(NULL);
}

static void leader_leaves_last_returns(void)
{
	pthread_t th;

	pthread_create(&th, NULL, late_exit_fn, NULL);
	pthread_exit(NULL);
}

static void *kill_self_fn(void *arg)
{
	raise(SIGTERM);
	for (;;)
		pause();
	return NULL;
}

static void thread_takes_fatal_signal(void)
{
	pthread_t th;

	pthread_create(&th, NULL, kill_self_fn, NULL);
	for (;;)
		pause();
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	test_workers();
	test_churn();
	test_fpstate();
	CHECK_RET(child_status(exit_with_blocked_threads), 3);
	CHECK_RET(child_status(leader_leaves_last_exits), 5);
	CHECK_RET(child_status(leader_leaves_last_returns), 0);
	CHECK_RET(child_status(thread_takes_fatal_signal), 1000 + SIGTERM);
	return finish();
}
