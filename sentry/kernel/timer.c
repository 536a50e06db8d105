/* SPDX-License-Identifier: Apache-2.0 */
/* Interval and POSIX timers; see timer.h. timer_lock protects every timer and tg->timers. */
#include "sentry/kernel/timer.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cpus.h"
#include "common/list.h"
#include "common/util.h"
#include "include/abi/linux/signal.h"
#include "sentry/kernel/cputime.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "sentry/time/vtime.h"

#define NSEC_PER_SEC 1000000000ULL
#define MAX_POSIX_TIMERS 256
#define LINUX_SI_TIMER (-2)
#define LINUX_SIGEV_SIGNAL 0
#define LINUX_SIGEV_NONE 1
#define LINUX_SIGEV_THREAD_ID 4
#define LINUX_SIGALRM 14
#define LINUX_SIGVTALRM 26
#define LINUX_SIGPROF 27

struct ktimer {
	struct list_head link; /* in armed (or held: timers_hold), while armed */
	bool armed;
	bool held; /* in held: its clock stands still (a pause) */
	uint64_t expiry; /* CLOCK_MONOTONIC ns */
	uint64_t interval;
	struct thread_group *tg; /* referenced */
	struct task *target; /* referenced, SIGEV_THREAD_ID only */
	int signo, notify, id;
	uint64_t value;
	int overrun;
	clockid_t host_clock;
	bool posix;
	/* Callback timers (timer_cb_*): no process; fn(arg) runs on each expiry. */
	timer_fn fn;
	void *arg;
	uint64_t ticks; /* expirations not yet taken */
	/*
	 * CPU-time timers (cpu != CPU_NONE): they expire when the clock reaches cpu_expiry; expiry
	 * is then only the next time to look at the clock (see cpu_poll_time).
	 */
	int cpu;
	struct task *cpu_task; /* CPU_THREAD: the thread whose clock counts (referenced) */
	uint64_t cpu_expiry;
	uint64_t cpu_seen; /* the clock at the last look */
	int cpu_idle; /* looks in a row that found the clock where it was */
	bool rlimit; /* RLIMIT_CPU: SIGXCPU at the soft limit and each second after, SIGKILL at
			the hard one */
};

enum {
	CPU_NONE,
	CPU_VIRT, /* the process's user time (ITIMER_VIRTUAL) */
	CPU_PROF, /* the process's user + system time (ITIMER_PROF, CLOCK_PROCESS_CPUTIME_ID) */
	CPU_THREAD, /* a thread's user + system time (CLOCK_THREAD_CPUTIME_ID) */
};

struct tg_timers {
	struct ktimer *itimers[3];
	struct ktimer *posix[MAX_POSIX_TIMERS];
	struct ktimer *rlimit_cpu;
};

static pthread_mutex_t timer_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t timer_cond;
static struct list_head armed = LIST_HEAD_INIT(armed);
/* Timers on the guest's stopped clocks while the sandbox is paused (timers_hold). */
static struct list_head held = LIST_HEAD_INIT(held);
static bool holding;
static uint64_t held_at;
static bool thread_started;

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Seconds (an rlimit) in nanoseconds, saturating. */
static uint64_t secs_to_ns(uint64_t s)
{
	return s > UINT64_MAX / NSEC_PER_SEC ? UINT64_MAX : s * NSEC_PER_SEC;
}

/* The value of a CPU-time timer's clock, in ns. timer_lock held (it is taken before tg->lock). */
static uint64_t cpu_clock(const struct ktimer *kt)
{
	struct cputime c;

	if (kt->cpu == CPU_THREAD)
		c = cputime_task(kt->cpu_task);
	else
		c = cputime_tg(kt->tg);
	return kt->cpu == CPU_VIRT ? c.utime : c.utime + c.stime;
}

/*
 * When to look at a CPU-time timer's clock next (it is clock_now): a clock cannot advance faster
 * than the host's CPUs run (a thread's, than one), so not before the time left divided by their
 * number; but at most every 4 ms (Linux looks at its tick), and less often while the clock
 * stands still (a process that sleeps), up to every 64 ms.
 */
static uint64_t cpu_poll_time(struct ktimer *kt, uint64_t clock_now)
{
	static unsigned int ncpus;
	uint64_t left = kt->cpu_expiry > clock_now ? kt->cpu_expiry - clock_now : 0, floor;
	unsigned int n = __atomic_load_n(&ncpus, __ATOMIC_RELAXED);

	if (!n) {
		cpu_set_t set;

		n = husk_cpus_get(&set) == 0 ? (unsigned int)CPU_COUNT(&set) : 0;
		if (!n)
			n = 64;
		__atomic_store_n(&ncpus, n, __ATOMIC_RELAXED);
	}
	if (kt->cpu != CPU_THREAD)
		left /= n;
	kt->cpu_idle = clock_now == kt->cpu_seen ? MIN(kt->cpu_idle + 1, 4) : 0;
	kt->cpu_seen = clock_now;
	floor = 4000000ULL << kt->cpu_idle;
	/* At least every 10 s: a far expiry needs no exact wake-up (nor an overflowing one). */
	return now_ns(CLOCK_MONOTONIC) + MIN(MAX(left, floor), 10 * NSEC_PER_SEC);
}

static void disarm(struct ktimer *kt)
{
	if (kt->armed) {
		list_del(&kt->link);
		kt->armed = false;
		kt->held = false;
	}
}

/* Inserts kt in deadline order (timer_lock held) and wakes the thread if it is first. */
static void arm(struct ktimer *kt, uint64_t expiry)
{
	struct ktimer *pos;

	disarm(kt);
	kt->expiry = expiry;
	kt->armed = true;
	list_for_each_entry(pos, &armed, link) {
		if (pos->expiry > expiry) {
			list__insert(&kt->link, pos->link.prev, &pos->link);
			pthread_cond_signal(&timer_cond);
			return;
		}
	}
	list_add_tail(&kt->link, &armed);
	pthread_cond_signal(&timer_cond);
}

/* Arms CPU-time timer kt to expire when its clock reaches cpu_expiry (timer_lock held). */
static void arm_cpu(struct ktimer *kt, uint64_t cpu_expiry)
{
	kt->cpu_expiry = cpu_expiry;
	arm(kt, cpu_poll_time(kt, cpu_clock(kt)));
}

/*
 * A CPU-time timer's turn in the timer thread: false if its clock has not reached cpu_expiry
 * (it is armed again to look later); true if it expired, re-armed if periodic, with
 * overrun set. RLIMIT_CPU's timer sets *sig to the signal it sends. timer_lock held.
 */
static bool cpu_expired(struct ktimer *kt, int *sig)
{
	uint64_t c = cpu_clock(kt), hard;

	if (c < kt->cpu_expiry) {
		arm(kt, cpu_poll_time(kt, c));
		return false;
	}
	kt->overrun = 0;
	if (kt->rlimit) {
		/* Linux's check_process_timers: SIGKILL past the hard limit, else SIGXCPU and the
		 * soft limit moved one second on. */
		pthread_mutex_lock(&kt->tg->lock);
		hard = kt->tg->rlimits[RLIMIT_CPU].rlim_max;
		pthread_mutex_unlock(&kt->tg->lock);
		if (hard != RLIM_INFINITY && c >= secs_to_ns(hard)) {
			*sig = SIGKILL;
			return true;
		}
		*sig = SIGXCPU;
		kt->cpu_expiry = kt->cpu_expiry > UINT64_MAX - NSEC_PER_SEC ?
					 UINT64_MAX :
					 kt->cpu_expiry + NSEC_PER_SEC;
		if (hard != RLIM_INFINITY && kt->cpu_expiry > secs_to_ns(hard))
			kt->cpu_expiry = secs_to_ns(hard);
		arm(kt, cpu_poll_time(kt, c));
		return true;
	}
	*sig = kt->signo;
	if (kt->interval) {
		uint64_t late = (c - kt->cpu_expiry) / kt->interval;

		kt->overrun = late > INT32_MAX ? INT32_MAX : (int)late;
		if (__builtin_mul_overflow(late + 1, kt->interval, &late) ||
		    __builtin_add_overflow(kt->cpu_expiry, late, &kt->cpu_expiry))
			kt->cpu_expiry = UINT64_MAX; /* never again */
		arm(kt, cpu_poll_time(kt, c));
	}
	return true;
}

/*
 * The signal an expiry of kt sends, sig (kt->signo, or RLIMIT_CPU's): *info filled for a POSIX
 * timer (returns true), else no siginfo (false). timer_lock held: kt may be freed once it is
 * released, so everything fire() needs is copied here.
 */
static bool fire_info(const struct ktimer *kt, int sig, struct linux_siginfo *info)
{
	if (!kt->posix)
		return false;
	memset(info, 0, sizeof(*info));
	info->si_signo = sig;
	info->si_code = LINUX_SI_TIMER;
	info->timer.tid = kt->id;
	info->timer.overrun = kt->overrun;
	info->timer.value = kt->value;
	return true;
}

static void fire(int sig, const struct linux_siginfo *info, struct thread_group *tg,
		 struct task *target)
{
	if (target)
		signal_send_task(target, sig, info);
	else
		signal_send_tg(tg, sig, info);
}

void timers_hold(void)
{
	struct ktimer *kt, *n;

	pthread_mutex_lock(&timer_lock);
	if (!holding) {
		holding = true;
		held_at = now_ns(CLOCK_MONOTONIC);
		list_for_each_entry_safe(kt, n, &armed, link) {
			/* REALTIME goes on (the guest's is the host's); CPU clocks stand still. */
			if (kt->cpu || kt->host_clock == CLOCK_REALTIME ||
			    kt->host_clock == CLOCK_TAI)
				continue;
			/* Still armed: disarm (and arm) take it from here. */
			list_del(&kt->link);
			list_add_tail(&kt->link, &held);
			kt->held = true;
		}
	}
	pthread_mutex_unlock(&timer_lock);
}

void timers_release(void)
{
	pthread_mutex_lock(&timer_lock);
	if (holding) {
		uint64_t d = now_ns(CLOCK_MONOTONIC) - held_at;

		holding = false;
		while (!list_empty(&held)) {
			struct ktimer *kt = list_first_entry(&held, struct ktimer, link);

			arm(kt, add_sat(kt->expiry, d));
		}
	}
	pthread_mutex_unlock(&timer_lock);
}

static void *timer_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&timer_lock);
	for (;;) {
		struct ktimer *kt;
		struct thread_group *tg;
		struct task *target;
		struct linux_siginfo info;
		bool has_info;
		uint64_t now;
		int sig;

		if (list_empty(&armed)) {
			pthread_cond_wait(&timer_cond, &timer_lock);
			continue;
		}
		kt = list_first_entry(&armed, struct ktimer, link);
		now = now_ns(CLOCK_MONOTONIC);
		if (now < kt->expiry) {
			struct timespec dl = { (time_t)(kt->expiry / NSEC_PER_SEC),
					       (long)(kt->expiry % NSEC_PER_SEC) };

			pthread_cond_timedwait(&timer_cond, &timer_lock, &dl);
			continue;
		}
		disarm(kt);
		if (kt->fn) {
			uint64_t exp = 1;

			if (kt->interval) {
				exp += (now - kt->expiry) / kt->interval;
				arm(kt, kt->expiry + exp * kt->interval);
			}
			kt->ticks += exp;
			/* Under timer_lock, so timer_cb_destroy waits for it to return. */
			kt->fn(kt->arg);
			continue;
		}
		if (kt->tg->exiting || kt->tg->state != TG_RUNNING)
			continue; /* the process is going: its timers stop */
		sig = kt->signo;
		if (kt->cpu) {
			if (!cpu_expired(kt, &sig))
				continue;
		} else {
			kt->overrun = 0;
			if (kt->interval) {
				uint64_t late = (now - kt->expiry) / kt->interval;

				kt->overrun = late > INT32_MAX ? INT32_MAX : (int)late;
				arm(kt, kt->expiry + (late + 1) * kt->interval);
			}
		}
		if (kt->notify == LINUX_SIGEV_NONE)
			continue;
		tg = kt->tg;
		target = kt->target;
		tg_get(tg);
		if (target)
			task_get(target);
		has_info = fire_info(kt, sig, &info);
		pthread_mutex_unlock(&timer_lock);
		/* kt may be gone now: only the references and copies taken above are used. */
		fire(sig, has_info ? &info : NULL, tg, target);
		if (target)
			task_put(target);
		tg_put(tg);
		pthread_mutex_lock(&timer_lock);
	}
	return NULL;
}

/* Starts the timer thread once (timer_lock held). Returns 0 or -errno. */
static int timer_start(void)
{
	pthread_condattr_t ca;
	sigset_t all, old;
	pthread_t th;
	int err;

	if (thread_started)
		return 0;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&timer_cond, &ca);
	pthread_condattr_destroy(&ca);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(&th, NULL, timer_thread, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return -err;
	pthread_detach(th);
	thread_started = true;
	return 0;
}

/* tg's timer table, created on first use (timer_lock held). */
static struct tg_timers *tg_timers(struct thread_group *tg)
{
	if (!tg->timers)
		tg->timers = calloc(1, sizeof(struct tg_timers));
	return tg->timers;
}

static struct ktimer *ktimer_new(struct thread_group *tg)
{
	struct ktimer *kt = calloc(1, sizeof(*kt));

	if (!kt)
		return NULL;
	list_init(&kt->link);
	tg_get(tg);
	kt->tg = tg;
	return kt;
}

/* Frees a timer already disarmed and unlinked, with timer_lock NOT held (tg_put may free tg). */
static void ktimer_free(struct ktimer *kt)
{
	if (kt->target)
		task_put(kt->target);
	if (kt->cpu_task)
		task_put(kt->cpu_task);
	tg_put(kt->tg);
	free(kt);
}

static void get_spec(struct ktimer *kt, struct timer_spec *out)
{
	/* A held timer's time left is what it had when its clock stopped (timers_hold). */
	uint64_t now = kt && kt->held ? held_at : now_ns(CLOCK_MONOTONIC);

	out->interval_ns = kt ? kt->interval : 0;
	out->value_ns = 0;
	if (kt && kt->armed && kt->cpu) {
		uint64_t c = cpu_clock(kt);

		out->value_ns = kt->cpu_expiry > c ? kt->cpu_expiry - c : 1;
	} else if (kt && kt->armed) {
		out->value_ns = kt->expiry > now ? kt->expiry - now : 1;
	}
}

int timer_itimer(struct task *t, int which, const struct timer_spec *new, struct timer_spec *old)
{
	static const int signos[3] = { LINUX_SIGALRM, LINUX_SIGVTALRM, LINUX_SIGPROF };
	struct tg_timers *tt;
	struct ktimer *kt;
	int err;

	if (which < 0 || which > 2)
		return -EINVAL;
	pthread_mutex_lock(&timer_lock);
	tt = tg_timers(t->tg);
	if (!tt) {
		pthread_mutex_unlock(&timer_lock);
		return -ENOMEM;
	}
	kt = tt->itimers[which];
	if (old)
		get_spec(kt, old);
	if (new) {
		if (!kt && new->value_ns) {
			kt = tt->itimers[which] = ktimer_new(t->tg);
			if (!kt) {
				pthread_mutex_unlock(&timer_lock);
				return -ENOMEM;
			}
			kt->signo = signos[which];
			kt->notify = LINUX_SIGEV_SIGNAL;
			kt->cpu = which == 1 ? CPU_VIRT : which == 2 ? CPU_PROF : CPU_NONE;
			/* ITIMER_REAL counts the monotonic clock (Linux: an hrtimer on it). */
			kt->host_clock = CLOCK_MONOTONIC;
		}
		if (kt) {
			kt->interval = new->interval_ns;
			if (new->value_ns) {
				err = timer_start();
				if (err) {
					pthread_mutex_unlock(&timer_lock);
					return err;
				}
				if (kt->cpu)
					arm_cpu(kt, add_sat(cpu_clock(kt), new->value_ns));
				else
					arm(kt, now_ns(CLOCK_MONOTONIC) + new->value_ns);
			} else {
				disarm(kt);
			}
		}
	}
	pthread_mutex_unlock(&timer_lock);
	return 0;
}

int timer_create_posix(struct task *t, int host_clock, int notify, int signo, uint64_t value,
		       bool value_is_id, struct task *target, struct task *cpu_task)
{
	struct tg_timers *tt;
	struct ktimer *kt;
	int id = -1;

	pthread_mutex_lock(&timer_lock);
	tt = tg_timers(t->tg);
	if (!tt) {
		pthread_mutex_unlock(&timer_lock);
		return -ENOMEM;
	}
	for (int i = 0; i < MAX_POSIX_TIMERS; i++) {
		if (!tt->posix[i]) {
			id = i;
			break;
		}
	}
	if (id < 0) {
		pthread_mutex_unlock(&timer_lock);
		return -EAGAIN;
	}
	kt = ktimer_new(t->tg);
	if (!kt) {
		pthread_mutex_unlock(&timer_lock);
		return -ENOMEM;
	}
	kt->posix = true;
	kt->id = id;
	kt->notify = notify;
	kt->signo = signo;
	kt->value = value_is_id ? (uint64_t)id : value;
	kt->host_clock = host_clock;
	if (target) {
		task_get(target);
		kt->target = target;
	}
	if (host_clock == TIMER_CLOCK_PROCESS_CPU) {
		kt->cpu = CPU_PROF;
	} else if (host_clock == TIMER_CLOCK_THREAD_CPU) {
		kt->cpu = CPU_THREAD;
		task_get(cpu_task);
		kt->cpu_task = cpu_task;
	}
	tt->posix[id] = kt;
	pthread_mutex_unlock(&timer_lock);
	return id;
}

/* The POSIX timer id of t's process (timer_lock held), or NULL. */
static struct ktimer *posix_lookup(struct task *t, int id)
{
	struct tg_timers *tt = t->tg->timers;

	if (!tt || id < 0 || id >= MAX_POSIX_TIMERS)
		return NULL;
	return tt->posix[id];
}

/*
 * The (host) CLOCK_MONOTONIC time of a (relative, or absolute on the guest's clock) timer value.
 * An absolute time already past stays in the past (clamped at 0), so that a periodic timer
 * counts the periods missed since, as Linux's hrtimer_forward does.
 */
static uint64_t mono_expiry(clockid_t clock, bool abs, uint64_t value_ns)
{
	uint64_t mono = now_ns(CLOCK_MONOTONIC);
	int64_t guest;
	uint64_t cnow;

	if (!abs)
		return mono + value_ns;
	/* The guest's time on clock: MONOTONIC and BOOTTIME have its offset (sentry/time). */
	guest = vtime_now_ns(clock);
	cnow = guest > 0 ? (uint64_t)guest : 0;
	if (value_ns >= cnow)
		return mono + (value_ns - cnow);
	return cnow - value_ns < mono ? mono - (cnow - value_ns) : 0;
}

int timer_settime_posix(struct task *t, int id, bool abs, const struct timer_spec *new,
			struct timer_spec *old)
{
	struct ktimer *kt;
	int err = 0;

	pthread_mutex_lock(&timer_lock);
	kt = posix_lookup(t, id);
	if (!kt) {
		pthread_mutex_unlock(&timer_lock);
		return -EINVAL;
	}
	if (old)
		get_spec(kt, old);
	kt->interval = new->interval_ns;
	kt->overrun = 0;
	if (!new->value_ns) {
		disarm(kt);
	} else {
		err = timer_start();
		if (!err && kt->cpu)
			arm_cpu(kt, abs ? new->value_ns : add_sat(cpu_clock(kt), new->value_ns));
		else if (!err)
			arm(kt, mono_expiry(kt->host_clock, abs, new->value_ns));
	}
	pthread_mutex_unlock(&timer_lock);
	return err;
}

int timer_gettime_posix(struct task *t, int id, struct timer_spec *cur)
{
	struct ktimer *kt;

	pthread_mutex_lock(&timer_lock);
	kt = posix_lookup(t, id);
	if (kt)
		get_spec(kt, cur);
	pthread_mutex_unlock(&timer_lock);
	return kt ? 0 : -EINVAL;
}

int timer_posix_describe(struct task *t, int id, struct timer_posix_desc *d)
{
	struct ktimer *kt;

	pthread_mutex_lock(&timer_lock);
	kt = posix_lookup(t, id);
	if (kt) {
		d->host_clock = kt->host_clock;
		d->notify = kt->notify;
		d->signo = kt->signo;
		d->value = kt->value;
		d->target_tid = kt->target ? kt->target->tid : 0;
		d->cpu_tid = kt->cpu_task ? kt->cpu_task->tid : 0;
		d->overrun = kt->overrun;
		get_spec(kt, &d->cur);
	}
	pthread_mutex_unlock(&timer_lock);
	return kt ? 0 : -ENOENT;
}

int timer_posix_restore(struct task *t, int id, const struct timer_posix_desc *d,
			struct task *target, struct task *cpu_task)
{
	struct tg_timers *tt;
	struct ktimer *kt;

	if (id < 0 || id >= MAX_POSIX_TIMERS)
		return -EINVAL;
	pthread_mutex_lock(&timer_lock);
	tt = tg_timers(t->tg);
	if (!tt || tt->posix[id]) {
		pthread_mutex_unlock(&timer_lock);
		return tt ? -EEXIST : -ENOMEM;
	}
	kt = ktimer_new(t->tg);
	if (!kt) {
		pthread_mutex_unlock(&timer_lock);
		return -ENOMEM;
	}
	kt->posix = true;
	kt->id = id;
	kt->notify = d->notify;
	kt->signo = d->signo;
	kt->value = d->value;
	kt->host_clock = d->host_clock;
	kt->overrun = d->overrun;
	if (target) {
		task_get(target);
		kt->target = target;
	}
	if (d->host_clock == TIMER_CLOCK_PROCESS_CPU) {
		kt->cpu = CPU_PROF;
	} else if (d->host_clock == TIMER_CLOCK_THREAD_CPU) {
		kt->cpu = CPU_THREAD;
		task_get(cpu_task);
		kt->cpu_task = cpu_task;
	}
	tt->posix[id] = kt;
	pthread_mutex_unlock(&timer_lock);
	if (d->cur.value_ns)
		return timer_settime_posix(t, id, false, &d->cur, NULL);
	return 0;
}

int timer_getoverrun_posix(struct task *t, int id)
{
	struct ktimer *kt;
	int r;

	pthread_mutex_lock(&timer_lock);
	kt = posix_lookup(t, id);
	r = kt ? kt->overrun : -EINVAL;
	pthread_mutex_unlock(&timer_lock);
	return r;
}

int timer_delete_posix(struct task *t, int id)
{
	struct ktimer *kt;

	pthread_mutex_lock(&timer_lock);
	kt = posix_lookup(t, id);
	if (kt) {
		((struct tg_timers *)t->tg->timers)->posix[id] = NULL;
		disarm(kt);
	}
	pthread_mutex_unlock(&timer_lock);
	if (!kt)
		return -EINVAL;
	ktimer_free(kt);
	return 0;
}

void timer_exit_tg(struct thread_group *tg)
{
	struct tg_timers *tt;

	pthread_mutex_lock(&timer_lock);
	tt = tg->timers;
	tg->timers = NULL;
	if (tt) {
		for (int i = 0; i < 3; i++) {
			if (tt->itimers[i])
				disarm(tt->itimers[i]);
		}
		for (int i = 0; i < MAX_POSIX_TIMERS; i++) {
			if (tt->posix[i])
				disarm(tt->posix[i]);
		}
		if (tt->rlimit_cpu)
			disarm(tt->rlimit_cpu);
	}
	pthread_mutex_unlock(&timer_lock);
	if (!tt)
		return;
	for (int i = 0; i < 3; i++) {
		if (tt->itimers[i])
			ktimer_free(tt->itimers[i]);
	}
	for (int i = 0; i < MAX_POSIX_TIMERS; i++) {
		if (tt->posix[i])
			ktimer_free(tt->posix[i]);
	}
	if (tt->rlimit_cpu)
		ktimer_free(tt->rlimit_cpu);
	free(tt);
}

int timer_rlimit_cpu(struct thread_group *tg)
{
	struct tg_timers *tt;
	struct ktimer *kt;
	rlim_t soft;
	int err;

	pthread_mutex_lock(&tg->lock);
	soft = tg->rlimits[RLIMIT_CPU].rlim_cur;
	pthread_mutex_unlock(&tg->lock);
	pthread_mutex_lock(&timer_lock);
	tt = tg->timers;
	if (soft == RLIM_INFINITY) {
		if (tt && tt->rlimit_cpu)
			disarm(tt->rlimit_cpu);
		pthread_mutex_unlock(&timer_lock);
		return 0;
	}
	tt = tg_timers(tg);
	if (!tt) {
		pthread_mutex_unlock(&timer_lock);
		return -ENOMEM;
	}
	kt = tt->rlimit_cpu;
	if (!kt) {
		kt = tt->rlimit_cpu = ktimer_new(tg);
		if (!kt) {
			pthread_mutex_unlock(&timer_lock);
			return -ENOMEM;
		}
		kt->cpu = CPU_PROF;
		kt->rlimit = true;
		kt->notify = LINUX_SIGEV_SIGNAL;
	}
	err = timer_start();
	/* A soft limit of 0 acts as 1 s, as in Linux. */
	if (!err)
		arm_cpu(kt, secs_to_ns(soft ? soft : 1));
	pthread_mutex_unlock(&timer_lock);
	return err;
}

/* --- callback timers --- */

struct ktimer *timer_cb_create(clockid_t host_clock, timer_fn fn, void *arg)
{
	struct ktimer *kt = calloc(1, sizeof(*kt));

	if (!kt)
		return NULL;
	list_init(&kt->link);
	kt->host_clock = host_clock;
	kt->fn = fn;
	kt->arg = arg;
	return kt;
}

int timer_cb_settime(struct ktimer *kt, bool abs, const struct timer_spec *new,
		     struct timer_spec *old)
{
	int err = 0;

	pthread_mutex_lock(&timer_lock);
	if (old)
		get_spec(kt, old);
	kt->interval = new->interval_ns;
	kt->ticks = 0;
	if (!new->value_ns) {
		disarm(kt);
	} else {
		err = timer_start();
		if (!err)
			arm(kt, mono_expiry(kt->host_clock, abs, new->value_ns));
	}
	pthread_mutex_unlock(&timer_lock);
	return err;
}

void timer_cb_gettime(struct ktimer *kt, struct timer_spec *cur)
{
	pthread_mutex_lock(&timer_lock);
	get_spec(kt, cur);
	pthread_mutex_unlock(&timer_lock);
}

uint64_t timer_cb_ticks(struct ktimer *kt, bool take)
{
	uint64_t n;

	pthread_mutex_lock(&timer_lock);
	n = kt->ticks;
	if (take)
		kt->ticks = 0;
	pthread_mutex_unlock(&timer_lock);
	return n;
}

void timer_cb_save(struct ktimer *kt, int *host_clock, uint64_t *expiry, uint64_t *interval,
		   uint64_t *ticks)
{
	pthread_mutex_lock(&timer_lock);
	*host_clock = kt->host_clock;
	*expiry = kt->armed ? (kt->expiry ? kt->expiry : 1) : 0;
	/* Held (a pause): the deadline its time left gives from now. */
	if (kt->held)
		*expiry = add_sat(*expiry, now_ns(CLOCK_MONOTONIC) - held_at);
	*interval = kt->interval;
	*ticks = kt->ticks;
	pthread_mutex_unlock(&timer_lock);
}

int timer_cb_restore(struct ktimer *kt, uint64_t expiry, uint64_t interval, uint64_t ticks)
{
	int err = 0;

	pthread_mutex_lock(&timer_lock);
	kt->interval = interval;
	kt->ticks = ticks;
	if (!expiry) {
		disarm(kt);
	} else {
		err = timer_start();
		if (!err)
			arm(kt, expiry);
	}
	pthread_mutex_unlock(&timer_lock);
	return err;
}

void timer_cb_destroy(struct ktimer *kt)
{
	if (!kt)
		return;
	pthread_mutex_lock(&timer_lock);
	disarm(kt);
	pthread_mutex_unlock(&timer_lock);
	free(kt);
}
