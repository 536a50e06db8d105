/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stand-ins for sentry/kernel/cputime.c for the sys_time tests: the harness's one task has
 * the times its process recorded (tg->utime_ns, tg->stime_ns) and nothing live.
 */
#include "sentry/kernel/cputime.h"
#include "sentry/kernel/task.h"

struct cputime cputime_task(struct task *t)
{
	return (struct cputime){ t->tg->utime_ns, t->tg->stime_ns };
}

struct cputime cputime_tg(struct thread_group *tg)
{
	return (struct cputime){ tg->utime_ns, tg->stime_ns };
}
