/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stand-ins for the pid table for the sys_id tests: capget(2) of another pid looks it up with
 * kernel_find_task (task_find_vtask). The harness has one task, the caller; every other pid does not exist.
 */
#include <stddef.h>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/pidns.h"
#include "sentry/kernel/task.h"

struct task *kernel_find_task(struct kernel *k, int32_t tid)
{
	return NULL;
}

/* The caller's pid namespace is the initial one: its numbers are the table's. */
struct task *task_find_vtask(struct task *viewer, int32_t nr)
{
	return kernel_find_task(viewer->k, nr);
}

void task_put(struct task *t)
{
}
