/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The task lookups and the signal send O_ASYNC's notifier (sentry/vfs/fasync.c) needs, for the
 * sys_file.c test, which links no process table: no task is ever found, nothing is sent.
 */
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"

struct task *kernel_find_task(struct kernel *k, int32_t tid)
{
	return NULL;
}

void task_put(struct task *t)
{
}

int signal_send(struct thread_group *tg, struct task *t, int sig, const void *info,
		unsigned int flags)
{
	return 0;
}
