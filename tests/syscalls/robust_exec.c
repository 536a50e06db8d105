/* SPDX-License-Identifier: Apache-2.0 */
/*
 * robust_exec: robust futexes are released at execve, as at exit (Linux's exec_mm_release): a
 * process holding a robust mutex in shared memory execs a program that lives on, and another
 * process then gets EOWNERDEAD, whether it was blocked in pthread_mutex_lock before the exec
 * (plain and priority-inheritance mutexes) or tries the lock afterwards. The exec is known to be
 * done when a close-on-exec pipe reads EOF (Linux closes those after releasing the mutexes); a
 * waiter is known to be blocked by its thread's state in /proc/self/task/TID/stat.
 *
 * Run as `robust_exec hold FD` it is the program exec'd: it waits for EOF on FD and exits 0.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"
#include "child.h"

struct shared {
	pthread_mutex_t m;
};

struct waiter {
	pthread_t th;
	pthread_mutex_t *m;
	int32_t tid; /* atomic */
	int ret, consistent, unlock; /* of the lock, then (if it was EOWNERDEAD) the repair */
};

static void *lock_fn(void *arg)
{
	struct waiter *w = arg;
	struct timespec dl;

	__atomic_store_n(&w->tid, (int32_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	/* A deadline only so that a mutex never released ends the test (ETIMEDOUT). */
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 30;
	w->ret = pthread_mutex_timedlock(w->m, &dl);
	/* The thread's exit would leave the mutex dead again: repair and release it here. */
	if (w->ret == EOWNERDEAD) {
		w->consistent = pthread_mutex_consistent(w->m);
		w->unlock = pthread_mutex_unlock(w->m);
	}
	return NULL;
}

/* Waits (60 s at most) until the waiter thread sleeps with the word's FUTEX_WAITERS set. */
static bool await_blocked(struct waiter *w)
{
	struct timespec ms = { 0, 1000000 };
	volatile int *word = (volatile int *)w->m; /* glibc's __data.__lock */

	for (int i = 0; i < 60000; i++) {
		int32_t tid = __atomic_load_n(&w->tid, __ATOMIC_ACQUIRE);

		if (tid && (*word & 0x80000000) && thread_state(tid) == 'S')
			return true;
		nanosleep(&ms, NULL);
	}
	CHECK(0, "the waiter never blocked (word %#x)", *word);
	return false;
}

static int hold(const char *fd_arg)
{
	int fd = atoi(fd_arg);
	char c;

	while (read(fd, &c, 1) > 0)
		;
	return 0;
}

/*
 * A child locks the mutex (robust, process-shared, PI if pi) and execs `robust_exec hold`; with
 * waiter, a thread here blocks on the mutex first. Afterwards the mutex is ours with EOWNERDEAD
 * while the exec'd program still runs.
 */
static void check_exec_releases(bool pi, bool waiter)
{
	struct shared *s =
		mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int locked[2], go[2], held[2];
	pthread_mutexattr_t a;
	struct waiter w = { 0 };
	char c = 0;
	pid_t pid;
	int st;

	if (s == MAP_FAILED) {
		CHECK(0, "mmap: %s", strerror(errno));
		return;
	}
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (pi)
		pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
	CHECK_RET(pthread_mutex_init(&s->m, &a), 0);
	/* locked: the child's end is close-on-exec (EOF once it exec'd); go: the parent says when
	 * to exec; held: the exec'd program lives until it reads EOF there. */
	if (pipe2(locked, O_CLOEXEC) < 0 || pipe(go) < 0 || pipe(held) < 0) {
		CHECK(0, "pipe: %s", strerror(errno));
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		char fd_arg[16];

		close(locked[0]);
		close(go[1]);
		close(held[1]);
		if (pthread_mutex_lock(&s->m) != 0)
			_exit(3);
		if (write(locked[1], "L", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(4);
		snprintf(fd_arg, sizeof(fd_arg), "%d", held[0]);
		execl("/proc/self/exe", "robust_exec", "hold", fd_arg, (char *)NULL);
		_exit(5);
	}
	close(locked[1]);
	close(go[0]);
	close(held[0]);
	CHECK(read(locked[0], &c, 1) == 1 && c == 'L', "the child did not lock the mutex");
	if (waiter) {
		w.m = &s->m;
		pthread_create(&w.th, NULL, lock_fn, &w);
		await_blocked(&w);
	} else {
		CHECK_RET(pthread_mutex_trylock(&s->m), EBUSY);
	}
	CHECK_RET(write(go[1], "x", 1), 1);
	/* EOF: the child exec'd (or died, which the status below tells). */
	CHECK_RET(read(locked[0], &c, 1), 0);
	if (waiter) {
		pthread_join(w.th, NULL);
		CHECK(w.ret == EOWNERDEAD, "%s: a waiter blocked before the exec got %d (%s)",
		      pi ? "PI" : "plain", w.ret, strerror(w.ret));
		CHECK(w.consistent == 0 && w.unlock == 0, "consistent %d, unlock %d", w.consistent,
		      w.unlock);
	} else {
		int r = pthread_mutex_trylock(&s->m);

		CHECK(r == EOWNERDEAD, "%s: trylock after the exec got %d (%s)",
		      pi ? "PI" : "plain", r, strerror(r));
		CHECK_RET(pthread_mutex_consistent(&s->m), 0);
		CHECK_RET(pthread_mutex_unlock(&s->m), 0);
	}
	/* The exec'd program was alive all along: it exits now, with 0. */
	CHECK_RET(waitpid(pid, &st, WNOHANG), 0);
	close(held[1]);
	CHECK_RET(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the exec'd child's status %#x", st);
	/* Free again, and consistent. */
	CHECK_RET(pthread_mutex_trylock(&s->m), 0);
	CHECK_RET(pthread_mutex_unlock(&s->m), 0);
	close(locked[0]);
	close(go[1]);
	munmap(s, sizeof(*s));
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "hold") == 0)
		return hold(argv[2]);
	check_exec_releases(false, false);
	check_exec_releases(false, true);
	check_exec_releases(true, false);
	check_exec_releases(true, true);
	return finish();
}
