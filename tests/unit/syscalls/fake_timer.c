/* SPDX-License-Identifier: Apache-2.0 */
/* Stand-in for sentry/kernel/timer.c for the sys_info tests: RLIMIT_CPU arms no timer here. */
#include "sentry/kernel/timer.h"

int timer_rlimit_cpu(struct thread_group *tg)
{
	(void)tg;
	return 0;
}
