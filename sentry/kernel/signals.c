/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Signals. This first version answers "is a signal pending?", applies the restart rules when no
 * handler can run, and kills the process on a fault; sending and delivery come with the
 * processes issue (see signal.h).
 */
#include "sentry/kernel/signals.h"

#include <signal.h>

#include "include/abi/linux/errno.h"
#include "sentry/platform/platform.h"

#include "sentry/kernel/task.h"

bool task_signal_pending(struct task *t)
{
	uint64_t pending = __atomic_load_n(&t->pending.set, __ATOMIC_ACQUIRE) |
			   __atomic_load_n(&t->tg->shared_pending.set, __ATOMIC_ACQUIRE);

	return (pending & ~t->sigmask) != 0 || t->tg->exiting;
}

bool task_fatal_signal_pending(struct task *t)
{
	uint64_t pending = __atomic_load_n(&t->pending.set, __ATOMIC_ACQUIRE) |
			   __atomic_load_n(&t->tg->shared_pending.set, __ATOMIC_ACQUIRE);

	return (pending & SIGBIT(SIGKILL)) != 0 || t->tg->exiting;
}

/* Wait-status bit for "dumped core". */
#define WCORE_FLAG 0x80
#define NR_restart_syscall 219

void signal_deliver(struct task *t, bool after_syscall)
{
	long ret = (long)t->regs.rax;

	if (!after_syscall || (long)t->regs.orig_rax < 0 || !linux_errno_is_restart(ret))
		return;
	/* No handler can run yet: every restart code restarts, as Linux does without one. */
	t->regs.rax = ret == -ERESTART_RESTARTBLOCK ? NR_restart_syscall : t->regs.orig_rax;
	t->regs.rip -= 2;
}

void signal_force_fault(struct task *t, const struct platform_event *ev)
{
	task_exit_group(t, ev->signo | WCORE_FLAG);
}
