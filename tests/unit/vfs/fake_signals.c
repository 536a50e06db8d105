/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The signal calls sentry/kernel/waitq.c and pipes (SIGPIPE) need, for VFS tests that link the real wait
 * queues (pipes, host files) without the signals code: no signal is ever pending.
 */
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"

bool task_signal_pending(struct task *t)
{
	return false;
}

bool task_fatal_signal_pending(struct task *t)
{
	return false;
}

int signal_send_task(struct task *t, int sig, const void *info)
{
	return 0;
}

/* No freezes here (sentry/kernel/freeze.c). */
void task_park(struct task *t, int where)
{
	(void)t;
	(void)where;
}
