/* SPDX-License-Identifier: Apache-2.0 */
/*
 * setitimer(2), getitimer(2), alarm(2), timer_create(2) and friends over sentry/kernel/timer.c.
 * CPU-time timers (ITIMER_VIRTUAL, ITIMER_PROF, CPU clocks) count the guest's CPU time (see
 * timer.h); a timer on the CPU clock of another process is refused (EINVAL), where Linux allows
 * it.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "include/abi/linux/errno.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/pidns.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/timer.h"
#include "sentry/mm/mm.h"
#include "syscalls/handlers.h"

#define NSEC_PER_SEC 1000000000ULL
#define LINUX_SIGEV_SIGNAL 0
#define LINUX_SIGEV_NONE 1
#define LINUX_SIGEV_THREAD 2
#define LINUX_SIGEV_THREAD_ID 4
#define LINUX_SIGALRM 14
#define LINUX_TIMER_ABSTIME 1

struct linux_sigevent {
	uint64_t value;
	int32_t signo;
	int32_t notify;
	int32_t tid;
	int32_t pad[11];
};

static int copy_in_all(struct task *t, void *dst, uint64_t addr, size_t len)
{
	return mm_copy_in(t->mm, dst, addr, len) == (ssize_t)len ? 0 : -EFAULT;
}

static int copy_out_all(struct task *t, uint64_t addr, const void *src, size_t len)
{
	return mm_copy_out(t->mm, addr, src, len) == (ssize_t)len ? 0 : -EFAULT;
}

/* struct itimerval <-> timer_spec; usec outside [0, 1e6) is EINVAL. */
static int itimerval_in(struct task *t, uint64_t addr, struct timer_spec *s)
{
	int64_t v[4];
	int err = copy_in_all(t, v, addr, sizeof(v));

	if (err)
		return err;
	for (int i = 0; i < 4; i += 2) {
		if (v[i] < 0 || v[i + 1] < 0 || v[i + 1] >= 1000000)
			return -EINVAL;
	}
	s->interval_ns = (uint64_t)v[0] * NSEC_PER_SEC + (uint64_t)v[1] * 1000;
	s->value_ns = (uint64_t)v[2] * NSEC_PER_SEC + (uint64_t)v[3] * 1000;
	return 0;
}

static int itimerval_out(struct task *t, uint64_t addr, const struct timer_spec *s)
{
	/* Linux rounds a pending value of less than a microsecond up to one. */
	uint64_t val_us = (s->value_ns + 999) / 1000;
	int64_t v[4] = {
		(int64_t)(s->interval_ns / NSEC_PER_SEC),
		(int64_t)(s->interval_ns % NSEC_PER_SEC / 1000),
		(int64_t)(val_us / 1000000),
		(int64_t)(val_us % 1000000),
	};

	return copy_out_all(t, addr, v, sizeof(v));
}

static int itimerspec_in(struct task *t, uint64_t addr, struct timer_spec *s)
{
	int64_t v[4];
	int err = copy_in_all(t, v, addr, sizeof(v));

	if (err)
		return err;
	for (int i = 0; i < 4; i += 2) {
		if (v[i] < 0 || v[i + 1] < 0 || v[i + 1] >= (int64_t)NSEC_PER_SEC)
			return -EINVAL;
	}
	s->interval_ns = (uint64_t)v[0] * NSEC_PER_SEC + (uint64_t)v[1];
	s->value_ns = (uint64_t)v[2] * NSEC_PER_SEC + (uint64_t)v[3];
	return 0;
}

static int itimerspec_out(struct task *t, uint64_t addr, const struct timer_spec *s)
{
	int64_t v[4] = {
		(int64_t)(s->interval_ns / NSEC_PER_SEC),
		(int64_t)(s->interval_ns % NSEC_PER_SEC),
		(int64_t)(s->value_ns / NSEC_PER_SEC),
		(int64_t)(s->value_ns % NSEC_PER_SEC),
	};

	return copy_out_all(t, addr, v, sizeof(v));
}

/* setitimer(2): a NULL new value disarms, as Linux (deprecated there) does. */
long sys_setitimer(struct task *t, const struct syscall_args *args)
{
	struct timer_spec new = { 0, 0 }, old;
	int which = (int)args->a[0];
	int err;

	if (args->a[1] && (err = itimerval_in(t, args->a[1], &new)))
		return err;
	err = timer_itimer(t, which, &new, &old);
	if (err)
		return err;
	return args->a[2] ? itimerval_out(t, args->a[2], &old) : 0;
}

/* getitimer(2) */
long sys_getitimer(struct task *t, const struct syscall_args *args)
{
	struct timer_spec cur;
	int err = timer_itimer(t, (int)args->a[0], NULL, &cur);

	return err ? err : itimerval_out(t, args->a[1], &cur);
}

/* alarm(2) */
long sys_alarm(struct task *t, const struct syscall_args *args)
{
	struct timer_spec new = { (uint64_t)(uint32_t)args->a[0] * NSEC_PER_SEC, 0 }, old;
	uint64_t secs;

	if (timer_itimer(t, 0, &new, &old))
		return 0;
	secs = old.value_ns / NSEC_PER_SEC;
	/* Linux rounds to the nearest second, and a pending alarm never reads as 0. */
	if (old.value_ns % NSEC_PER_SEC >= NSEC_PER_SEC / 2 || (!secs && old.value_ns))
		secs++;
	return (long)secs;
}

/*
 * The host clock behind a guest clock for timers, or -EINVAL / -EOPNOTSUPP. CPU clocks give
 * TIMER_CLOCK_PROCESS_CPU or TIMER_CLOCK_THREAD_CPU with *cpu_task the thread (a reference).
 */
static int timer_clock(struct task *t, int32_t id, struct task **cpu_task)
{
	*cpu_task = NULL;
	if (id < 0) {
		/* CPU clock of a pid or tid (clock_getcpuclockid): CPUCLOCK_PID, _PERTHREAD, _WHICH. */
		int32_t pid = ~(id >> 3);
		bool perthread = id & 4;
		struct task *o;

		if ((id & 7) == 7 || (id & 3) == 3)
			return -EINVAL;
		if (!perthread)
			return pid == 0 || pid == task_pid(t) ? TIMER_CLOCK_PROCESS_CPU : -EINVAL;
		o = pid == 0 ? (task_get(t), t) : task_find_vtask(t, pid);
		if (!o || o->tg != t->tg) {
			if (o)
				task_put(o);
			return -EINVAL;
		}
		*cpu_task = o;
		return TIMER_CLOCK_THREAD_CPU;
	}
	switch (id) {
	case 0: /* CLOCK_REALTIME */
	case 8: /* CLOCK_REALTIME_ALARM */
		return CLOCK_REALTIME;
	case 1: /* CLOCK_MONOTONIC */
		return CLOCK_MONOTONIC;
	case 2: /* CLOCK_PROCESS_CPUTIME_ID */
		return TIMER_CLOCK_PROCESS_CPU;
	case 3: /* CLOCK_THREAD_CPUTIME_ID */
		task_get(t);
		*cpu_task = t;
		return TIMER_CLOCK_THREAD_CPU;
	case 7: /* CLOCK_BOOTTIME */
	case 9: /* CLOCK_BOOTTIME_ALARM */
		return CLOCK_BOOTTIME;
	case 11: /* CLOCK_TAI */
		return CLOCK_TAI;
	case 4: /* MONOTONIC_RAW, REALTIME_COARSE, MONOTONIC_COARSE: no timers */
	case 5:
	case 6:
		return -EOPNOTSUPP;
	default:
		return -EINVAL;
	}
}

/* timer_create on host clock clock (cpu_task: see timer_clock). */
static long timer_create_on(struct task *t, const struct syscall_args *args, int clock,
			    struct task *cpu_task)
{
	struct linux_sigevent ev = { 0 };
	struct task *target = NULL;
	int id, notify, err;

	if (args->a[1]) {
		err = copy_in_all(t, &ev, args->a[1], sizeof(ev));
		if (err)
			return err;
	} else {
		ev.notify = LINUX_SIGEV_SIGNAL;
		ev.signo = LINUX_SIGALRM;
	}
	notify = ev.notify;
	switch (notify) {
	case LINUX_SIGEV_THREAD_ID:
		target = task_find_vtask(t, ev.tid);
		if (!target || target->tg != t->tg) {
			if (target)
				task_put(target);
			return -EINVAL;
		}
		/* fallthrough */
	case LINUX_SIGEV_SIGNAL:
	case LINUX_SIGEV_THREAD:
		if (ev.signo <= 0 || ev.signo > 64) {
			if (target)
				task_put(target);
			return -EINVAL;
		}
		break;
	case LINUX_SIGEV_NONE:
		break;
	default:
		return -EINVAL;
	}
	/* Without a sigevent, the signal's value is the timer id. */
	id = timer_create_posix(t, clock, notify == LINUX_SIGEV_NONE ? 1 : 0, ev.signo, ev.value,
				!args->a[1], target, cpu_task);
	if (target)
		task_put(target);
	if (id < 0)
		return id;
	{
		int32_t out = id;

		err = copy_out_all(t, args->a[2], &out, sizeof(out));
		if (err) {
			timer_delete_posix(t, id);
			return err;
		}
	}
	return 0;
}

/* timer_create(2): SIGEV_THREAD is the kernel's SIGEV_SIGNAL (glibc builds the thread). */
long sys_timer_create(struct task *t, const struct syscall_args *args)
{
	struct task *cpu_task;
	int clock = timer_clock(t, (int32_t)args->a[0], &cpu_task);
	long ret;

	if (clock < 0)
		return clock;
	ret = timer_create_on(t, args, clock, cpu_task);
	if (cpu_task)
		task_put(cpu_task);
	return ret;
}

/* timer_settime(2) */
long sys_timer_settime(struct task *t, const struct syscall_args *args)
{
	struct timer_spec new, old;
	int err = itimerspec_in(t, args->a[2], &new);

	if (err)
		return err;
	err = timer_settime_posix(t, (int)args->a[0], args->a[1] & LINUX_TIMER_ABSTIME, &new, &old);
	if (err)
		return err;
	return args->a[3] ? itimerspec_out(t, args->a[3], &old) : 0;
}

/* timer_gettime(2) */
long sys_timer_gettime(struct task *t, const struct syscall_args *args)
{
	struct timer_spec cur;
	int err = timer_gettime_posix(t, (int)args->a[0], &cur);

	return err ? err : itimerspec_out(t, args->a[1], &cur);
}

/* timer_getoverrun(2) */
long sys_timer_getoverrun(struct task *t, const struct syscall_args *args)
{
	return timer_getoverrun_posix(t, (int)args->a[0]);
}

/* timer_delete(2) */
long sys_timer_delete(struct task *t, const struct syscall_args *args)
{
	return timer_delete_posix(t, (int)args->a[0]);
}
