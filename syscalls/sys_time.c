/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Clocks and sleeping.
 *
 * The guest's clocks are the host's as the time page computes them from the TSC (sentry/time:
 * the same code as the guest's vDSO, kept within a microsecond or so of the host's clocks, and
 * the host's own clocks when the TSC is not used), MONOTONIC and BOOTTIME minus the sandbox's
 * offset (vtime_offset_ns: pauses, restore), so deadlines on them are converted to the host's
 * before the sentry sleeps on them. CPU-time clocks (of the
 * caller, or of another process or thread by clock id) read the guest's user and system time
 * (sentry/kernel/cputime.h); a sleep on a process's CPU clock looks at it every 10 ms at most.
 * Alarm clocks read CLOCK_REALTIME/CLOCK_BOOTTIME and sleep on them; the sentry needs no RTC.
 *
 * Sleeps are interruptible task waits on an absolute deadline (task_sleep_until, then until
 * the guest's clock has reached it too: guest_sleep_until). An interrupted relative sleep
 * writes the time left to rem and restarts through restart_syscall with the same deadline
 * (ERESTART_RESTARTBLOCK); an absolute one returns -ERESTARTNOHAND.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* common/util.h before sys/user.h (through task.h): util.h would redefine PAGE_SIZE. */
#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/pidns.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/waitq.h"
#include "sentry/mm/mm.h"
#include "sentry/time/vtime.h"
#include "syscalls/handlers.h"

/* Guest clock ids (include/uapi/linux/time.h). */
#define LINUX_CLOCK_REALTIME 0
#define LINUX_CLOCK_MONOTONIC 1
#define LINUX_CLOCK_PROCESS_CPUTIME_ID 2
#define LINUX_CLOCK_THREAD_CPUTIME_ID 3
#define LINUX_CLOCK_MONOTONIC_RAW 4
#define LINUX_CLOCK_REALTIME_COARSE 5
#define LINUX_CLOCK_MONOTONIC_COARSE 6
#define LINUX_CLOCK_BOOTTIME 7
#define LINUX_CLOCK_REALTIME_ALARM 8
#define LINUX_CLOCK_BOOTTIME_ALARM 9
#define LINUX_CLOCK_TAI 11
#define LINUX_TIMER_ABSTIME 1

/* Negative clock ids name CPU clocks of a pid or tid (include/linux/posix-timers_types.h). */
#define CPUCLOCK_PERTHREAD_MASK 4
#define CPUCLOCK_CLOCK_MASK 3
#define CPUCLOCK_PROF 0
#define CPUCLOCK_VIRT 1
#define CPUCLOCK_SCHED 2
#define CPUCLOCK_MAX 3
#define CLOCKFD CPUCLOCK_MAX
#define CLOCKFD_MASK (CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_CLOCK_MASK)

#define NSEC_PER_SEC 1000000000L

/* struct __kernel_timespec, struct __kernel_old_timeval, struct timezone on x86-64. */
struct linux_timespec {
	int64_t tv_sec;
	int64_t tv_nsec;
};

struct linux_timeval {
	int64_t tv_sec;
	int64_t tv_usec;
};

struct linux_timezone {
	int32_t tz_minuteswest;
	int32_t tz_dsttime;
};

/* What clock_nanosleep(2) does with a clock, in Linux's order of checks. */
enum nsleep_kind {
	NSLEEP_NO_CLOCK, /* no such clock: -EINVAL before reading the request */
	NSLEEP_UNSUPPORTED, /* the clock has no nsleep: -EOPNOTSUPP before reading the request */
	NSLEEP_INVALID, /* a CPU clock that cannot sleep: -EINVAL after reading the request */
	NSLEEP_PLAIN,
	NSLEEP_ALARM, /* needs CAP_WAKE_ALARM (uid 0 in the sentry) and only TIMER_ABSTIME */
};

/* How a guest clock maps onto host clocks. */
struct guest_clock {
	bool readable; /* clock_gettime/clock_getres work; else -EINVAL */
	clockid_t host; /* host clock giving the guest's value */
	clockid_t host_rel; /* host clock a relative sleep counts on */
	bool tick_res; /* resolution is the tick (coarse clocks, PROF/VIRT CPU clocks) */
	enum nsleep_kind nsleep;
	/* A guest CPU clock: read with guest_cpu_clock_ns instead of the host clock. */
	bool cpu;
	bool cpu_thread; /* a thread's clock, else a process's */
	int cpu_which; /* CPUCLOCK_PROF (user + system), CPUCLOCK_VIRT (user), CPUCLOCK_SCHED */
	int32_t cpu_id; /* the tid or pid, 0 for the caller's own */
};

/* Decodes a negative (per-pid or per-thread) CPU clock id as Linux's clockid_to_kclock. */
static void cpu_clock_lookup(struct task *t, int32_t id, struct guest_clock *c)
{
	int32_t pid = ~(id >> 3); /* CPUCLOCK_PID: id is negative, the shift is arithmetic */
	bool perthread = id & CPUCLOCK_PERTHREAD_MASK;
	int which = id & CPUCLOCK_CLOCK_MASK;

	if ((id & CLOCKFD_MASK) == CLOCKFD) {
		/* A posix clock device fd: the sentry has none. */
		c->nsleep = NSLEEP_UNSUPPORTED;
		return;
	}
	/* Clocks of this kind have an nsleep; it rejects per-thread and invalid ones. */
	c->nsleep = NSLEEP_INVALID;
	if (which >= CPUCLOCK_MAX)
		return;
	if (pid == (perthread ? t->tid : task_pid(t)))
		pid = 0;
	if (pid != 0) {
		/* A thread of the caller's process, or any process (by its leader's pid). */
		struct task *o = task_find_vtask(t, pid);
		bool ok = o && (perthread ? o->tg == t->tg : o->tid == task_pid(o));

		if (o)
			task_put(o);
		if (!ok)
			return;
	}
	if (perthread) {
		c->host = CLOCK_THREAD_CPUTIME_ID;
	} else {
		c->host = CLOCK_PROCESS_CPUTIME_ID;
		c->nsleep = NSLEEP_PLAIN;
	}
	c->host_rel = c->host;
	c->readable = true;
	c->tick_res = which != CPUCLOCK_SCHED;
	c->cpu = true;
	c->cpu_thread = perthread;
	c->cpu_which = which;
	c->cpu_id = pid;
}

/*
 * The value of guest CPU clock c in nanoseconds, or -EINVAL when the thread or process it names
 * is gone.
 */
static int64_t guest_cpu_clock_ns(struct task *t, const struct guest_clock *c)
{
	struct task *o = t;
	struct cputime ct;

	if (c->cpu_id) {
		o = task_find_vtask(t, c->cpu_id);
		if (!o)
			return -EINVAL;
	}
	ct = c->cpu_thread ? cputime_task(o) : cputime_tg(o->tg);
	if (o != t)
		task_put(o);
	if (c->cpu_which == CPUCLOCK_VIRT)
		return (int64_t)ct.utime;
	return (int64_t)(ct.utime + ct.stime);
}

/* Fills *c for guest clock id; c->readable false means -EINVAL for gettime/getres. */
static void clock_lookup(struct task *t, int32_t id, struct guest_clock *c)
{
	*c = (struct guest_clock){ .readable = true, .nsleep = NSLEEP_UNSUPPORTED };

	switch (id) {
	case LINUX_CLOCK_REALTIME:
		c->host = CLOCK_REALTIME;
		c->host_rel = CLOCK_MONOTONIC; /* relative sleeps ignore clock changes */
		c->nsleep = NSLEEP_PLAIN;
		break;
	case LINUX_CLOCK_MONOTONIC:
		c->host = c->host_rel = CLOCK_MONOTONIC;
		c->nsleep = NSLEEP_PLAIN;
		break;
	case LINUX_CLOCK_PROCESS_CPUTIME_ID:
		c->host = c->host_rel = CLOCK_PROCESS_CPUTIME_ID;
		c->nsleep = NSLEEP_PLAIN;
		c->cpu = true;
		c->cpu_which = CPUCLOCK_SCHED;
		break;
	case LINUX_CLOCK_THREAD_CPUTIME_ID:
		c->host = CLOCK_THREAD_CPUTIME_ID;
		c->cpu = true;
		c->cpu_thread = true;
		c->cpu_which = CPUCLOCK_SCHED;
		break;
	case LINUX_CLOCK_MONOTONIC_RAW:
		c->host = CLOCK_MONOTONIC_RAW;
		break;
	case LINUX_CLOCK_REALTIME_COARSE:
		c->host = CLOCK_REALTIME_COARSE;
		c->tick_res = true;
		break;
	case LINUX_CLOCK_MONOTONIC_COARSE:
		c->host = CLOCK_MONOTONIC_COARSE;
		c->tick_res = true;
		break;
	case LINUX_CLOCK_BOOTTIME:
		c->host = c->host_rel = CLOCK_BOOTTIME;
		c->nsleep = NSLEEP_PLAIN;
		break;
	case LINUX_CLOCK_REALTIME_ALARM:
		c->host = c->host_rel = CLOCK_REALTIME;
		c->nsleep = NSLEEP_ALARM;
		break;
	case LINUX_CLOCK_BOOTTIME_ALARM:
		c->host = c->host_rel = CLOCK_BOOTTIME;
		c->nsleep = NSLEEP_ALARM;
		break;
	case LINUX_CLOCK_TAI:
		c->host = CLOCK_TAI;
		c->host_rel = CLOCK_MONOTONIC;
		c->nsleep = NSLEEP_PLAIN;
		break;
	default:
		c->readable = false;
		c->nsleep = NSLEEP_NO_CLOCK;
		if (id < 0)
			cpu_clock_lookup(t, id, c);
		break;
	}
}

static int copy_out_all(struct task *t, uint64_t addr, const void *src, size_t len)
{
	ssize_t n = mm_copy_out(t->mm, addr, src, len);

	return n == (ssize_t)len ? 0 : -EFAULT;
}

static int copy_in_all(struct task *t, void *dst, uint64_t addr, size_t len)
{
	ssize_t n = mm_copy_in(t->mm, dst, addr, len);

	return n == (ssize_t)len ? 0 : -EFAULT;
}

/* Reads a struct __kernel_timespec and checks it as timespec64_valid() does. */
static int copy_in_timespec(struct task *t, uint64_t addr, struct timespec *out)
{
	struct linux_timespec lts;
	int err = copy_in_all(t, &lts, addr, sizeof(lts));

	if (err)
		return err;
	if (lts.tv_sec < 0 || (uint64_t)lts.tv_nsec >= (uint64_t)NSEC_PER_SEC)
		return -EINVAL;
	out->tv_sec = lts.tv_sec;
	out->tv_nsec = lts.tv_nsec;
	return 0;
}

/* a + b for valid timespecs, saturating instead of overflowing. */
static struct timespec timespec_add_sat(struct timespec a, struct timespec b)
{
	struct timespec r;

	if (__builtin_add_overflow(a.tv_sec, b.tv_sec, &r.tv_sec))
		return (struct timespec){ .tv_sec = INT64_MAX, .tv_nsec = NSEC_PER_SEC - 1 };
	r.tv_nsec = a.tv_nsec + b.tv_nsec;
	if (r.tv_nsec >= NSEC_PER_SEC) {
		r.tv_nsec -= NSEC_PER_SEC;
		if (r.tv_sec == INT64_MAX)
			return (struct timespec){ .tv_sec = INT64_MAX,
						  .tv_nsec = NSEC_PER_SEC - 1 };
		r.tv_sec++;
	}
	return r;
}

/* Writes the time left until deadline on host clock to the guest's rem (if any). */
static long write_rem(struct task *t, uint64_t rem, clockid_t clock,
		      const struct timespec *deadline)
{
	struct timespec now;
	struct linux_timespec left = { 0, 0 };

	if (!rem)
		return 0;
	vtime_gettime(clock, &now);
	left.tv_sec = deadline->tv_sec - now.tv_sec;
	left.tv_nsec = deadline->tv_nsec - now.tv_nsec;
	if (left.tv_nsec < 0) {
		left.tv_sec--;
		left.tv_nsec += NSEC_PER_SEC;
	}
	if (left.tv_sec < 0)
		left.tv_sec = left.tv_nsec = 0;
	return copy_out_all(t, rem, &left, sizeof(left));
}

/*
 * task_sleep_until on clock until the guest's deadline (the host's time for it: plus the
 * guest's offset on MONOTONIC and BOOTTIME), ending only once the guest's clock (the time
 * page's, which the vDSO reads) has reached deadline too: the host's clock that the sentry
 * sleeps on may be a little behind it or ahead of it (sentry/time/README.md), and a pause
 * that grew the offset meanwhile moved the guest's deadline later on the host's clock.
 */
static long guest_sleep_until(struct task *t, clockid_t clock, const struct timespec *deadline)
{
	struct timespec target = vtime_guest_to_host_ts(clock, *deadline);

	for (;;) {
		struct timespec now, host;
		int64_t left;
		long ret = task_sleep_until(t, clock, &target);

		if (ret || vtime_gettime(clock, &now) || clock_gettime(clock, &host))
			return ret;
		if (now.tv_sec > deadline->tv_sec ||
		    (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec))
			return 0;
		/* Behind by less than a calibration's correction: sleep that much more. */
		left = (deadline->tv_sec - now.tv_sec) * NSEC_PER_SEC +
		       (deadline->tv_nsec - now.tv_nsec);
		target = timespec_add_sat(host, (struct timespec){ left / NSEC_PER_SEC,
								   left % NSEC_PER_SEC });
	}
}

/* restart_syscall for an interrupted relative sleep: data = clock, deadline ns, rem. */
long sleep_restart(struct task *t)
{
	clockid_t clock = (clockid_t)t->restart_data[0];
	struct timespec deadline = {
		.tv_sec = (time_t)(t->restart_data[1] / NSEC_PER_SEC),
		.tv_nsec = (long)(t->restart_data[1] % NSEC_PER_SEC),
	};
	long ret;

	t->restart_fn = NULL;
	ret = guest_sleep_until(t, clock, &deadline);
	if (ret == -ERESTARTSYS) {
		long err = write_rem(t, t->restart_data[2], clock, &deadline);

		if (err)
			return err;
		t->restart_fn = sleep_restart;
		return -ERESTART_RESTARTBLOCK;
	}
	return ret;
}

/*
 * Sleeps until clock reaches deadline, interruptibly. A relative sleep (rem_ok) that a
 * signal interrupts writes the time left to rem and arranges its restart; an absolute one
 * returns -ERESTARTNOHAND (restarted as is when no handler runs, else -EINTR).
 */
static long sleep_until(struct task *t, clockid_t clock, const struct timespec *deadline, bool rel,
			uint64_t rem)
{
	long ret = guest_sleep_until(t, clock, deadline);
	long err;

	if (ret != -ERESTARTSYS)
		return ret;
	if (!rel)
		return -ERESTARTNOHAND;
	err = write_rem(t, rem, clock, deadline);
	if (err)
		return err;
	t->restart_data[0] = (uint64_t)clock;
	/* A deadline past 2554 saturates (a wrapped one would end the restarted sleep early). */
	if ((uint64_t)deadline->tv_sec >= UINT64_MAX / NSEC_PER_SEC)
		t->restart_data[1] = UINT64_MAX;
	else
		t->restart_data[1] =
			(uint64_t)deadline->tv_sec * NSEC_PER_SEC + (uint64_t)deadline->tv_nsec;
	t->restart_data[2] = rem;
	t->restart_fn = sleep_restart;
	return -ERESTART_RESTARTBLOCK;
}

/* Sleeps for req (relative) or until req (absolute) on guest clock c; rem as above. */
static long clock_sleep(struct task *t, const struct guest_clock *c, bool abs, struct timespec req,
			uint64_t rem)
{
	struct timespec now, deadline = req;
	int err;

	if (abs)
		return sleep_until(t, c->host, &deadline, false, 0);
	err = vtime_gettime(c->host_rel, &now);
	if (err)
		return err;
	deadline = timespec_add_sat(now, req);
	return sleep_until(t, c->host_rel, &deadline, true, rem);
}

/* clock_gettime(2) */
long sys_clock_gettime(struct task *t, const struct syscall_args *args)
{
	struct guest_clock c;
	struct timespec ts;
	struct linux_timespec lts;

	clock_lookup(t, (int32_t)args->a[0], &c);
	if (!c.readable)
		return -EINVAL;
	if (c.cpu) {
		int64_t ns = guest_cpu_clock_ns(t, &c);

		if (ns < 0)
			return ns;
		ts.tv_sec = ns / NSEC_PER_SEC;
		ts.tv_nsec = ns % NSEC_PER_SEC;
	} else {
		/* The vDSO's computation (sentry/time/vvar.h), so that both give one clock. */
		int err = vtime_gettime(c.host, &ts);

		if (err)
			return err;
	}
	lts = (struct linux_timespec){ .tv_sec = ts.tv_sec, .tv_nsec = ts.tv_nsec };
	return copy_out_all(t, args->a[1], &lts, sizeof(lts));
}

/*
 * clock_settime(2): the sandbox never sets the host's clock, so a valid request gets -EPERM even
 * with CAP_SYS_TIME, as in a container that lacks it; invalid ones get Linux's -EINVAL first.
 */
long sys_clock_settime(struct task *t, const struct syscall_args *args)
{
	struct guest_clock c;
	struct linux_timespec lts;
	int32_t id = (int32_t)args->a[0];

	clock_lookup(t, id, &c);
	if (!c.readable || (id >= 0 && id != CLOCK_REALTIME))
		return -EINVAL; /* only CLOCK_REALTIME and the CPU clocks have a set operation */
	if (mm_copy_in(t->mm, &lts, args->a[1], sizeof(lts)) != sizeof(lts))
		return -EFAULT;
	if (id != CLOCK_REALTIME)
		return -EPERM; /* CPU clocks cannot be set */
	if (lts.tv_sec < 0 || lts.tv_nsec < 0 || lts.tv_nsec >= 1000000000)
		return -EINVAL;
	return -EPERM;
}

/*
 * settimeofday(2): as clock_settime, the sandbox never sets the host's clock: -EPERM for every
 * valid request (Linux checks CAP_SYS_TIME even when both pointers are NULL); a bad pointer
 * gives -EFAULT and an out-of-range time or timezone -EINVAL first, as Linux.
 */
long sys_settimeofday(struct task *t, const struct syscall_args *args)
{
	struct linux_timeval tv;
	struct {
		int32_t minuteswest, dsttime;
	} tz;

	if (args->a[0]) {
		if (mm_copy_in(t->mm, &tv, args->a[0], sizeof(tv)) != sizeof(tv))
			return -EFAULT;
		if (tv.tv_usec < 0 || tv.tv_usec >= 1000000 || tv.tv_sec < 0)
			return -EINVAL;
	}
	if (args->a[1]) {
		if (mm_copy_in(t->mm, &tz, args->a[1], sizeof(tz)) != sizeof(tz))
			return -EFAULT;
		if (tz.minuteswest < -15 * 60 || tz.minuteswest > 15 * 60)
			return -EINVAL;
	}
	return -EPERM;
}

/* clock_getres(2): a NULL result pointer only validates the clock, as in Linux. */
long sys_clock_getres(struct task *t, const struct syscall_args *args)
{
	struct guest_clock c;
	struct timespec res;
	struct linux_timespec lts;

	clock_lookup(t, (int32_t)args->a[0], &c);
	if (!c.readable)
		return -EINVAL;
	if (clock_getres(c.tick_res ? CLOCK_MONOTONIC_COARSE : c.host, &res))
		return -errno;
	if (!args->a[1])
		return 0;
	lts = (struct linux_timespec){ .tv_sec = res.tv_sec, .tv_nsec = res.tv_nsec };
	return copy_out_all(t, args->a[1], &lts, sizeof(lts));
}

/* gettimeofday(2): the timezone reads as UTC (0, 0). */
long sys_gettimeofday(struct task *t, const struct syscall_args *args)
{
	uint64_t tv = args->a[0], tz = args->a[1];
	int err;

	if (tv) {
		struct timespec ts;
		struct linux_timeval ltv;

		err = vtime_gettime(CLOCK_REALTIME, &ts);
		if (err)
			return err;
		ltv = (struct linux_timeval){ .tv_sec = ts.tv_sec, .tv_usec = ts.tv_nsec / 1000 };
		err = copy_out_all(t, tv, &ltv, sizeof(ltv));
		if (err)
			return err;
	}
	if (tz) {
		struct linux_timezone ltz = { 0, 0 };

		err = copy_out_all(t, tz, &ltz, sizeof(ltz));
		if (err)
			return err;
	}
	return 0;
}

/* time(2) */
long sys_time(struct task *t, const struct syscall_args *args)
{
	struct timespec ts;
	int64_t now;
	int err = vtime_gettime(CLOCK_REALTIME, &ts);

	if (err)
		return err;
	now = ts.tv_sec;
	if (args->a[0]) {
		err = copy_out_all(t, args->a[0], &now, sizeof(now));
		if (err)
			return err;
	}
	return now;
}

/* nanosleep(2) */
long sys_nanosleep(struct task *t, const struct syscall_args *args)
{
	struct guest_clock c;
	struct timespec req;
	int err = copy_in_timespec(t, args->a[0], &req);

	if (err)
		return err;
	clock_lookup(t, LINUX_CLOCK_MONOTONIC, &c);
	return clock_sleep(t, &c, false, req, args->a[1]);
}

/* Restarted or first CPU-clock sleep: data = the clock's pid, the target ns, rem, which. */
long cpu_sleep(struct task *t)
{
	struct guest_clock c = { .cpu = true,
				 .cpu_id = (int32_t)t->restart_data[0],
				 .cpu_which = (int)t->restart_data[3] };
	uint64_t target = t->restart_data[1], rem = t->restart_data[2];
	struct timespec deadline;
	int64_t now;
	long ret;

	t->restart_fn = NULL;
	for (;;) {
		now = guest_cpu_clock_ns(t, &c);
		if (now < 0)
			return now;
		if ((uint64_t)now >= target)
			return 0;
		/* Look again when the clock may have got there, at least every 10 ms (host time:
		 * task_sleep_until sleeps on the host's clock). */
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline = timespec_add_sat(
			deadline,
			(struct timespec){ 0, (long)MIN(target - (uint64_t)now, 10000000) });
		ret = task_sleep_until(t, CLOCK_MONOTONIC, &deadline);
		if (ret == -ERESTARTSYS)
			break;
		if (ret < 0)
			return ret;
	}
	if (!rem)
		return -ERESTARTNOHAND; /* absolute */
	if (rem != 1) {
		uint64_t left = target - (uint64_t)now;
		struct linux_timespec lts = { (int64_t)(left / NSEC_PER_SEC),
					      (int64_t)(left % NSEC_PER_SEC) };

		ret = copy_out_all(t, rem, &lts, sizeof(lts));
		if (ret)
			return ret;
	}
	t->restart_fn = cpu_sleep;
	return -ERESTART_RESTARTBLOCK;
}

/*
 * clock_nanosleep on a process's CPU clock: the guest's CPU time is no host clock to sleep on,
 * so the sleep looks at it every few milliseconds (Linux arms a CPU timer).
 */
static long cpu_clock_sleep(struct task *t, const struct guest_clock *c, bool abs,
			    struct timespec req, uint64_t rem)
{
	uint64_t want = (uint64_t)req.tv_sec * NSEC_PER_SEC + (uint64_t)req.tv_nsec;
	int64_t now = guest_cpu_clock_ns(t, c);

	if (now < 0)
		return now;
	if ((uint64_t)req.tv_sec >= UINT64_MAX / NSEC_PER_SEC / 2)
		want = UINT64_MAX / 2; /* centuries: never */
	t->restart_data[0] = (uint64_t)(uint32_t)c->cpu_id;
	t->restart_data[1] = abs ? want : (uint64_t)now + want;
	/* rem: 0 for an absolute sleep, 1 for a relative one without rem, else the address. */
	t->restart_data[2] = abs ? 0 : rem ? rem : 1;
	t->restart_data[3] = (uint64_t)c->cpu_which;
	return cpu_sleep(t);
}

/* clock_nanosleep(2): unknown flag bits are ignored as in Linux (alarm clocks reject them). */
long sys_clock_nanosleep(struct task *t, const struct syscall_args *args)
{
	struct guest_clock c;
	struct timespec req;
	int flags = (int)args->a[1];
	int err;

	clock_lookup(t, (int32_t)args->a[0], &c);
	if (c.nsleep == NSLEEP_NO_CLOCK)
		return -EINVAL;
	if (c.nsleep == NSLEEP_UNSUPPORTED)
		return -EOPNOTSUPP;
	err = copy_in_timespec(t, args->a[2], &req);
	if (err)
		return err;
	if (c.nsleep == NSLEEP_INVALID)
		return -EINVAL;
	if (c.nsleep == NSLEEP_ALARM) {
		if (flags & ~LINUX_TIMER_ABSTIME)
			return -EINVAL;
		if (t->cred.euid != 0)
			return -EPERM;
	}
	if (c.cpu)
		return cpu_clock_sleep(t, &c, flags & LINUX_TIMER_ABSTIME, req, args->a[3]);
	return clock_sleep(t, &c, flags & LINUX_TIMER_ABSTIME, req, args->a[3]);
}
