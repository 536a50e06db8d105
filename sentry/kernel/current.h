/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The task whose system call the calling host thread is running.
 *
 * Each task has its own host thread (task.h), so "the current task" is a thread-local value.
 * syscall_dispatch() sets it before every handler. File operations that must block (pipe reads,
 * reads of host stdio) have no task argument in struct file_ops: they use task_current() to
 * sleep interruptibly on the calling task's behalf. NULL on a thread that runs no task (the
 * loader at start, sentry service threads): such callers never block.
 */
#ifndef HUSK_SENTRY_CURRENT_H
#define HUSK_SENTRY_CURRENT_H

#include <stddef.h>

struct task;

extern __thread struct task *husk_current_task;

static inline struct task *task_current(void)
{
	return husk_current_task;
}

static inline void task_set_current(struct task *t)
{
	husk_current_task = t;
}

#endif
