/* SPDX-License-Identifier: Apache-2.0 */
/*
 * signal_target: a signal sent to the process (kill(getpid())) that no thread blocks is handled
 * by the main thread, while other threads keep entering and leaving the kernel (short
 * nanosleeps): Linux's complete_signal() picks the main thread first when it does not block the
 * signal. Programs rely on it: python runs its signal handlers in the main thread only, so
 * signal.pause() in the main thread never returns if the handler runs in another one. The main
 * thread waits in pause(2), which must return EINTR each round, with the handler run on the main
 * thread. The sender knows the main thread sleeps in pause() by its state in
 * /proc/self/task/TID/stat ('S'), never by sleeping.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "check.h"
#include "child.h"

#define WORKERS 3
#define ROUNDS 200

static pid_t main_tid;
static volatile sig_atomic_t handled, handled_elsewhere;
static bool stop; /* atomic */

static void on_usr1(int sig)
{
	(void)sig;
	if ((pid_t)syscall(SYS_gettid) == main_tid)
		handled++;
	else
		handled_elsewhere++;
}

static void on_usr2(int sig)
{
	(void)sig;
}

/* Enters and leaves the kernel as fast as it can until told to stop. */
static void *busy(void *arg)
{
	struct timespec ns = { 0, 1000 };

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
		nanosleep(&ns, NULL);
	return NULL;
}

/* Sends SIGUSR1 to the process each round, once the main thread sleeps in pause(). */
static void *sender(void *arg)
{
	int *round = arg;
	struct timespec ns = { 0, 100000 };

	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		int r = __atomic_load_n(round, __ATOMIC_ACQUIRE);

		if (r > 0 && r <= ROUNDS && thread_state(main_tid) == 'S') {
			int other = handled_elsewhere;

			kill(getpid(), SIGUSR1);
			/* Until the main thread took it and started the next round. */
			while (__atomic_load_n(round, __ATOMIC_ACQUIRE) == r &&
			       !__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
				/* Taken by another thread: wake the main thread (SIGUSR2 to it
				 * alone) so that the failure is counted, not waited for. */
				if (handled_elsewhere != other) {
					syscall(SYS_tgkill, getpid(), main_tid, SIGUSR2);
					other = handled_elsewhere;
				}
				nanosleep(&ns, NULL);
			}
		} else {
			nanosleep(&ns, NULL);
		}
	}
	return NULL;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	pthread_t w[WORKERS], s;
	int round = 0, eintr = 0;

	main_tid = (pid_t)syscall(SYS_gettid);
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0, "sigaction: %s", strerror(errno));
	sa.sa_handler = on_usr2;
	CHECK(sigaction(SIGUSR2, &sa, NULL) == 0, "sigaction: %s", strerror(errno));
	for (int i = 0; i < WORKERS; i++)
		pthread_create(&w[i], NULL, busy, NULL);
	pthread_create(&s, NULL, sender, &round);
	for (int r = 1; r <= ROUNDS; r++) {
		int before = handled, other = handled_elsewhere;

		__atomic_store_n(&round, r, __ATOMIC_RELEASE);
		/* The sender waits until this thread sleeps in pause(): the signal comes after. */
		while (handled == before && handled_elsewhere == other) {
			if (pause() < 0 && errno == EINTR)
				eintr++;
		}
	}
	__atomic_store_n(&round, ROUNDS + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&stop, true, __ATOMIC_RELEASE);
	pthread_join(s, NULL);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(w[i], NULL);
	/*
	 * Linux itself picks another thread now and then: a CI run on a loaded machine saw 1 of
	 * 200 natively (wants_signal() passes over a main thread it finds with TIF_SIGPENDING
	 * set). A kernel that picks any unblocking thread sends most of them elsewhere (4 of 5
	 * threads here), so "at most 1 in 50" still tells the two apart.
	 */
	CHECK(handled + handled_elsewhere == ROUNDS && handled_elsewhere <= ROUNDS / 50,
	      "process-directed SIGUSR1: %d handled on the main thread, %d on another (of %d)",
	      (int)handled, (int)handled_elsewhere, ROUNDS);
	CHECK(eintr >= ROUNDS, "pause returned EINTR %d times for %d rounds", eintr, ROUNDS);
	return finish();
}
