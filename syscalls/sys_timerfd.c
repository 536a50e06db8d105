/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timerfd_create(2), timerfd_settime(2), timerfd_gettime(2) over sentry/fs/anon/timerfd.c.
 * TFD_TIMER_CANCEL_ON_SET is accepted but never fires: the guest cannot set the clock, and a
 * host clock step reaches the guest's (sentry/time) without a cancel.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <time.h>

#include "include/abi/linux/errno.h"
#include "sentry/fs/anon/anon.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/timer.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/handlers.h"

#define NSEC_PER_SEC 1000000000ULL
#define LINUX_TFD_TIMER_ABSTIME 1
#define LINUX_TFD_TIMER_CANCEL_ON_SET 2
#define LINUX_TFD_CLOEXEC 02000000
#define LINUX_TFD_NONBLOCK 04000
#define LINUX_CLOCK_REALTIME 0
#define LINUX_CLOCK_MONOTONIC 1
#define LINUX_CLOCK_BOOTTIME 7
#define LINUX_CLOCK_REALTIME_ALARM 8
#define LINUX_CLOCK_BOOTTIME_ALARM 9

/* timerfd_create(2): the *_ALARM clocks need CAP_WAKE_ALARM, which no guest has (EPERM). */
long sys_timerfd_create(struct task *t, const struct syscall_args *args)
{
	int clockid = (int)args->a[0], flags = (int)args->a[1];
	int host_clock;
	struct file *f;
	rlim_t cur;
	int fd;

	if (flags & ~(LINUX_TFD_CLOEXEC | LINUX_TFD_NONBLOCK))
		return -EINVAL;
	switch (clockid) {
	case LINUX_CLOCK_REALTIME:
		host_clock = CLOCK_REALTIME;
		break;
	case LINUX_CLOCK_MONOTONIC:
		host_clock = CLOCK_MONOTONIC;
		break;
	case LINUX_CLOCK_BOOTTIME:
		host_clock = CLOCK_BOOTTIME;
		break;
	case LINUX_CLOCK_REALTIME_ALARM:
	case LINUX_CLOCK_BOOTTIME_ALARM:
		return -EPERM;
	default:
		return -EINVAL;
	}
	f = timerfd_create_file(clockid, host_clock, flags & LINUX_TFD_NONBLOCK ? O_NONBLOCK : 0);
	if (!f)
		return -ENOMEM;
	pthread_mutex_lock(&t->tg->lock);
	cur = t->tg->rlimits[RLIMIT_NOFILE].rlim_cur;
	pthread_mutex_unlock(&t->tg->lock);
	fd = fdtable_install(t->fdt, f, 0, flags & LINUX_TFD_CLOEXEC,
			     cur > INT_MAX ? INT_MAX : (int)cur);
	file_put(f);
	return fd;
}

/* The timerfd at fd (a new reference), or NULL with *err -EBADF / -EINVAL. */
static struct file *timerfd_lookup(struct task *t, int fd, long *err)
{
	struct file *f = fdtable_lookup(t->fdt, fd);

	if (!f) {
		*err = -EBADF;
		return NULL;
	}
	if (!file_is_timerfd(f)) {
		file_put(f);
		*err = -EINVAL;
		return NULL;
	}
	return f;
}

static long itimerspec_out(struct task *t, uint64_t addr, const struct timer_spec *s)
{
	int64_t v[4] = {
		(int64_t)(s->interval_ns / NSEC_PER_SEC),
		(int64_t)(s->interval_ns % NSEC_PER_SEC),
		(int64_t)(s->value_ns / NSEC_PER_SEC),
		(int64_t)(s->value_ns % NSEC_PER_SEC),
	};

	return mm_copy_out(t->mm, addr, v, sizeof(v)) == (ssize_t)sizeof(v) ? 0 : -EFAULT;
}

/* timerfd_settime(2) */
long sys_timerfd_settime(struct task *t, const struct syscall_args *args)
{
	int flags = (int)args->a[1];
	struct timer_spec new, old;
	struct file *f;
	int64_t v[4];
	long err;

	if (flags & ~(LINUX_TFD_TIMER_ABSTIME | LINUX_TFD_TIMER_CANCEL_ON_SET))
		return -EINVAL;
	if (mm_copy_in(t->mm, v, args->a[2], sizeof(v)) != (ssize_t)sizeof(v))
		return -EFAULT;
	for (int i = 0; i < 4; i += 2) {
		if (v[i] < 0 || v[i + 1] < 0 || v[i + 1] >= (int64_t)NSEC_PER_SEC)
			return -EINVAL;
	}
	new.interval_ns = (uint64_t)v[0] * NSEC_PER_SEC + (uint64_t)v[1];
	new.value_ns = (uint64_t)v[2] * NSEC_PER_SEC + (uint64_t)v[3];
	f = timerfd_lookup(t, (int)args->a[0], &err);
	if (!f)
		return err;
	err = timerfd_settime_file(f, flags & LINUX_TFD_TIMER_ABSTIME, &new, &old);
	file_put(f);
	if (err)
		return err;
	return args->a[3] ? itimerspec_out(t, args->a[3], &old) : 0;
}

/* timerfd_gettime(2) */
long sys_timerfd_gettime(struct task *t, const struct syscall_args *args)
{
	struct timer_spec cur;
	struct file *f;
	long err;

	f = timerfd_lookup(t, (int)args->a[0], &err);
	if (!f)
		return err;
	timerfd_gettime_file(f, &cur);
	file_put(f);
	return itimerspec_out(t, args->a[1], &cur);
}
