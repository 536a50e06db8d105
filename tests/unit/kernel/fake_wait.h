/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A test-only world for the waiting code (wait queues, pipes, futexes): bare tasks with no
 * platform, guest addresses that are sentry pointers (identity mm_translate, one private VMA), and
 * signals that a test makes pending by hand.
 */
#ifndef HUSK_TESTS_UNIT_KERNEL_FAKE_WAIT_H
#define HUSK_TESTS_UNIT_KERNEL_FAKE_WAIT_H

#include <pthread.h>
#include <stdbool.h>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"

/* A kernel and a process of up to four tasks, all zeroed but for what waiting needs. */
struct fake_world {
	struct kernel k;
	struct thread_group tg;
	struct task t[4];
};

void fake_world_init(struct fake_world *w);
void fake_world_fini(struct fake_world *w);

/* Makes a signal pending (or not) for t, and wakes t so that a wait notices. */
void fake_set_signal_pending(struct task *t, bool pending);

/* The last signal signal_send_task sent to t (0: none), and clears it. */
int fake_take_sent_signal(struct task *t);

/* Guest pages pinned (mm_translate_pin) and not yet unpinned. */
extern long fake_pins;

/* Runs fn(arg) on a new thread whose current task is t. */
void fake_run_as(pthread_t *th, struct task *t, void *(*fn)(void *), void *arg);

#endif
