/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Interval timers (setitimer/alarm) and POSIX timers (timer_create) of a process.
 *
 * One sentry thread fires every armed timer of the sandbox from a deadline-ordered list on
 * the host's CLOCK_MONOTONIC; absolute values are on the guest's clocks (MONOTONIC and
 * BOOTTIME have its offset, sentry/time/vtime.h) and are converted, as deadlines on
 * CLOCK_REALTIME/BOOTTIME/TAI, when the timer is armed. CPU-time timers (ITIMER_VIRTUAL,
 * ITIMER_PROF, timers on CLOCK_*_CPUTIME_ID, RLIMIT_CPU) are in the same list: their deadline
 * is only when to look at their clock next (the time left divided by the host's CPUs, at least
 * 4 ms, up to 64 ms while the clock stands still; sentry/kernel/cputime.h gives the clock), so
 * they fire a few milliseconds of wall time late.
 * A timer holds a reference on its process (and on its target thread for SIGEV_THREAD_ID, and
 * on the thread whose CPU clock counts); one that fires for a process that is exiting disarms,
 * and the process's exit deletes them all. State hangs off tg->timers.
 */
#ifndef HUSK_SENTRY_TIMER_H
#define HUSK_SENTRY_TIMER_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct task;
struct thread_group;

/* A time value and interval in nanoseconds (itimerspec / itimerval, normalised). */
struct timer_spec {
	uint64_t value_ns; /* 0: disarmed */
	uint64_t interval_ns;
};

/*
 * setitimer/getitimer for which (ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF) of t's process.
 * new may be NULL (get only); old may be NULL. Returns 0 or -EINVAL / -ENOMEM.
 */
int timer_itimer(struct task *t, int which, const struct timer_spec *new, struct timer_spec *old);

/*
 * timer_create: clock is a guest clock id already validated by the caller (its host clock given
 * in host_clock); notify 0 (signal) or 1 (SIGEV_NONE); the signal carries value, or the
 * timer's id when value_is_id; target is the thread for SIGEV_THREAD_ID (a new reference is
 * taken) or NULL; cpu_task the thread whose CPU clock counts for TIMER_CLOCK_THREAD_CPU (a
 * new reference is taken), else unused. Returns the timer id (>= 0) or -EAGAIN / -ENOMEM.
 */
int timer_create_posix(struct task *t, int host_clock, int notify, int signo, uint64_t value,
		       bool value_is_id, struct task *target, struct task *cpu_task);
/* host_clock of timer_create_posix for the CPU clocks (of the caller's process, of cpu_task). */
#define TIMER_CLOCK_PROCESS_CPU 1000
#define TIMER_CLOCK_THREAD_CPU 1001
/*
 * timer_settime: new is relative, or absolute on the timer's clock when abs. Returns 0,
 * -EINVAL (no such timer).
 */
int timer_settime_posix(struct task *t, int id, bool abs, const struct timer_spec *new,
			struct timer_spec *old);
int timer_gettime_posix(struct task *t, int id, struct timer_spec *cur);
/* Overruns of the last expiry whose signal was delivered (here: of the last expiry). */
int timer_getoverrun_posix(struct task *t, int id);
int timer_delete_posix(struct task *t, int id);

/*
 * Arms (or disarms) tg's RLIMIT_CPU timer after its limit changed or the process was created
 * with one: SIGXCPU when its CPU time reaches the soft limit and each second after, SIGKILL at
 * the hard limit. Takes tg->lock and the timer lock. Returns 0 or -ENOMEM.
 */
int timer_rlimit_cpu(struct thread_group *tg);

/* Deletes every timer of tg (exit of the process; exec for POSIX timers). */
void timer_exit_tg(struct thread_group *tg);
/* A POSIX timer as a checkpoint saves it (sentry/state): timer_create's choices and its time
 * left (relative) and interval. */
#define TIMER_POSIX_MAX 256
struct timer_posix_desc {
	int host_clock, notify, signo;
	uint64_t value;
	int32_t target_tid, cpu_tid; /* 0: none */
	int overrun;
	struct timer_spec cur;
};
/* Describes t's process's timer id: 0, or -ENOENT when there is none. */
int timer_posix_describe(struct task *t, int id, struct timer_posix_desc *d);
/* Makes t's process's timer id from d (a restore), armed for d->cur relative to now.
 * target and cpu_task as timer_create_posix's. Returns 0 or -EINVAL / -EEXIST / -ENOMEM. */
int timer_posix_restore(struct task *t, int id, const struct timer_posix_desc *d,
			struct task *target, struct task *cpu_task);

/* --- callback timers (timerfd) --- */

struct ktimer;

/*
 * Called by the timer thread on each expiry, with the timer lock held: it may only take locks
 * that are never held around a timer_* call (a wait queue's, to wake it) and must not block.
 */
typedef void (*timer_fn)(void *arg);

/*
 * A disarmed timer on host_clock (CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME) that counts
 * its expirations and calls fn(arg) after each. It belongs to no process. NULL: out of memory.
 */
struct ktimer *timer_cb_create(clockid_t host_clock, timer_fn fn, void *arg);

/*
 * A pause (husk pause): timers_hold stops every timer on the guest's MONOTONIC and BOOTTIME
 * clocks (the guest's clocks stand still while it is paused: sentry/time/README.md), keeping the
 * time each has left; timers_release, at resume, arms them again with that time left. REALTIME
 * timers go on (the guest's REALTIME is the host's). Neither nests.
 */
void timers_hold(void);
void timers_release(void);
/*
 * Arms (new->value_ns relative, or absolute on the timer's clock when abs) or disarms
 * (value 0) kt, and resets its expiration count, as timerfd_settime. An absolute time already
 * past expires at once (with the intervals missed since counted, when periodic). old, when not
 * NULL, gets the previous setting (time left, relative). Returns 0 or -errno.
 */
int timer_cb_settime(struct ktimer *kt, bool abs, const struct timer_spec *new,
		     struct timer_spec *old);
/* The time left until the next expiry (0: disarmed) and the interval. */
void timer_cb_gettime(struct ktimer *kt, struct timer_spec *cur);
/* Expirations since the last take (or settime); take resets the count to 0. */
uint64_t timer_cb_ticks(struct ktimer *kt, bool take);
/* Disarms and frees kt; fn is not running and will not run once this returns. NULL: no-op. */
void timer_cb_destroy(struct ktimer *kt);
/*
 * Checkpoint (sentry/state/anon.c): kt's host clock, its deadline on the host's CLOCK_MONOTONIC
 * (0: disarmed), interval and untaken expirations; timer_cb_restore sets them again (deadline
 * already moved to this host's clock; a past one expires at once). Returns 0 or -errno.
 */
void timer_cb_save(struct ktimer *kt, int *host_clock, uint64_t *expiry, uint64_t *interval,
		   uint64_t *ticks);
int timer_cb_restore(struct ktimer *kt, uint64_t expiry, uint64_t interval, uint64_t ticks);

#endif
