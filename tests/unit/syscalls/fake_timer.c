/* SPDX-License-Identifier: Apache-2.0 */
/* Stand-ins for the sys_info tests: RLIMIT_CPU arms no timer here (sentry/kernel/timer.c), and
 * there is no other process to look up. */
#include "sentry/kernel/timer.h"

int timer_rlimit_cpu(struct thread_group *tg)
{
	(void)tg;
	return 0;
}

/* prlimit64 of another process: these tests have no other process (ESRCH). */
#include "sentry/kernel/pidns.h"
#include "sentry/kernel/task.h"

struct task *task_find_vtask(struct task *viewer, int32_t nr)
{
	(void)viewer, (void)nr;
	return NULL;
}

void task_put(struct task *t)
{
	(void)t;
}
