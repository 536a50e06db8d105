/* SPDX-License-Identifier: Apache-2.0 */
/* cred_capable for handler tests that do not link sentry/kernel/cred.c (sys_info.c's, sys_signal.c's). */
#include "sentry/kernel/task.h"

bool cred_capable(const struct cred *c, int cap)
{
	return cap >= 0 && cap < 64 && (c->cap_effective & (1ULL << cap));
}

/* nsproxy.c's sysctl resolver asks for the calling task: none in these tests. */
__thread struct task *husk_current_task;
