/* SPDX-License-Identifier: Apache-2.0 */
/*
 * futex(2) for a process with one thread: there is never another waiter or waker, so WAKE wakes
 * no one and WAIT either fails at once (value changed) or sleeps until its timeout. The full
 * futex (queues, requeue, PI, robust lists) comes with threads in the processes issue.
 */
#include <linux/futex.h>
#include <stdint.h>
#include <time.h>

#include "include/abi/linux/errno.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "syscalls/handlers.h"

#define NSEC_PER_SEC 1000000000L

/* Sleeps for the futex timeout at addr: relative for FUTEX_WAIT, absolute for WAIT_BITSET
 * (on CLOCK_REALTIME with FUTEX_CLOCK_REALTIME, else CLOCK_MONOTONIC). NULL sleeps forever. */
static long futex_sleep(struct task *t, uint64_t addr, bool absolute, clockid_t clock)
{
	struct timespec ts;

	if (!addr) {
		/* Nothing can wake this thread: Linux would block until a signal arrives. */
		struct timespec hour = { 3600, 0 };
		for (;;)
			nanosleep(&hour, NULL);
	}
	if (mm_copy_in(t->mm, &ts, addr, sizeof(ts)) != sizeof(ts))
		return -EFAULT;
	if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= NSEC_PER_SEC)
		return -EINVAL;
	while (clock_nanosleep(clock, absolute ? TIMER_ABSTIME : 0, &ts, &ts) == EINTR)
		;
	return -ETIMEDOUT;
}

/* futex(2): single-threaded semantics, see above; other operations -ENOSYS. */
long sys_futex(struct task *t, const struct syscall_args *args)
{
	uint64_t uaddr = args->a[0];
	int op = (int)args->a[1];
	int cmd = op & FUTEX_CMD_MASK;
	uint32_t val = (uint32_t)args->a[2];
	clockid_t clock = (op & FUTEX_CLOCK_REALTIME) ? CLOCK_REALTIME : CLOCK_MONOTONIC;
	uint32_t cur;

	if (uaddr & 3)
		return -EINVAL;
	switch (cmd) {
	case FUTEX_WAIT:
	case FUTEX_WAIT_BITSET:
		if (cmd == FUTEX_WAIT_BITSET && (uint32_t)args->a[5] == 0)
			return -EINVAL;
		if (cmd == FUTEX_WAIT && (op & FUTEX_CLOCK_REALTIME))
			return -ENOSYS;
		if (mm_copy_in(t->mm, &cur, uaddr, sizeof(cur)) != sizeof(cur))
			return -EFAULT;
		if (cur != val)
			return -EAGAIN;
		return futex_sleep(t, args->a[3], cmd == FUTEX_WAIT_BITSET, clock);
	case FUTEX_WAKE:
	case FUTEX_WAKE_BITSET:
		if (cmd == FUTEX_WAKE_BITSET && (uint32_t)args->a[5] == 0)
			return -EINVAL;
		/* Linux checks that the address is valid before finding no waiter. */
		if (mm_copy_in(t->mm, &cur, uaddr, sizeof(cur)) != sizeof(cur))
			return -EFAULT;
		return 0;
	default:
		return -ENOSYS;
	}
}
