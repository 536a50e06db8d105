/* SPDX-License-Identifier: Apache-2.0 */
/* CPU time and peak RSS of tasks and processes: see cputime.h. */
#include <time.h>
#include <unistd.h>

/* common/util.h before sys/user.h (through task.h): util.h would redefine PAGE_SIZE. */
#include "common/util.h"
#include "common/list.h"
#include "sentry/kernel/cputime.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/platform/platform.h"

/* CPU clock of host thread tid of the sentry (MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)). */
static uint64_t host_thread_cpu_ns(pid_t tid)
{
	clockid_t clk = (clockid_t)((~(unsigned int)tid << 3) | 6);
	struct timespec ts;

	if (clock_gettime(clk, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void cputime_task_init(struct task *t)
{
	pthread_mutex_init(&t->cpu.lock, NULL);
}

void cputime_task_start(struct task *t)
{
	pid_t tid = gettid();
	uint64_t base = host_thread_cpu_ns(tid);

	pthread_mutex_lock(&t->cpu.lock);
	t->cpu.ctx = t->ctx;
	t->cpu.host_base = base;
	t->cpu.host_tid = tid;
	pthread_mutex_unlock(&t->cpu.lock);
}

/* The context's time so far. cpu.lock held. */
static uint64_t ctx_ns(struct task *t)
{
	const struct platform_ops *ops = t->k->platform->ops;

	if (!t->cpu.ctx || !ops->ctx_cpu_ns)
		return 0;
	return ops->ctx_cpu_ns(t->cpu.ctx);
}

void cputime_set_ctx(struct task *t, struct platform_ctx *ctx)
{
	pthread_mutex_lock(&t->cpu.lock);
	if (!t->cpu.exited)
		t->cpu.user_done += ctx_ns(t);
	t->cpu.ctx = t->cpu.exited ? NULL : ctx;
	pthread_mutex_unlock(&t->cpu.lock);
}

/* cpu.lock held. */
static struct cputime task_times_locked(struct task *t)
{
	struct cputime c = { .utime = t->cpu.user_done, .stime = t->cpu.sys_done };
	uint64_t now;

	if (t->cpu.exited)
		return c;
	c.utime += ctx_ns(t);
	if (t->cpu.host_tid) {
		now = host_thread_cpu_ns(t->cpu.host_tid);
		if (now > t->cpu.host_base)
			c.stime += now - t->cpu.host_base;
	}
	return c;
}

struct cputime cputime_task(struct task *t)
{
	struct cputime c;

	pthread_mutex_lock(&t->cpu.lock);
	c = task_times_locked(t);
	pthread_mutex_unlock(&t->cpu.lock);
	return c;
}

void cputime_task_exit(struct task *t)
{
	struct cputime c;

	pthread_mutex_lock(&t->cpu.lock);
	if (t->cpu.exited) {
		pthread_mutex_unlock(&t->cpu.lock);
		return;
	}
	c = task_times_locked(t);
	t->cpu.user_done = c.utime;
	t->cpu.sys_done = c.stime;
	t->cpu.ctx = NULL;
	t->cpu.host_tid = 0;
	t->cpu.exited = true;
	pthread_mutex_unlock(&t->cpu.lock);
	t->tg->utime_ns += c.utime;
	t->tg->stime_ns += c.stime;
	__atomic_add_fetch(&t->k->exited_utime_ns, c.utime, __ATOMIC_RELAXED);
	__atomic_add_fetch(&t->k->exited_stime_ns, c.stime, __ATOMIC_RELAXED);
}

struct cputime cputime_tg_locked(struct thread_group *tg)
{
	struct cputime c = { .utime = tg->utime_ns, .stime = tg->stime_ns }, tc;
	struct task *t;

	list_for_each_entry(t, &tg->tasks, tg_link) {
		tc = cputime_task(t);
		c.utime += tc.utime;
		c.stime += tc.stime;
	}
	return c;
}

struct cputime cputime_tg(struct thread_group *tg)
{
	struct cputime c;

	pthread_mutex_lock(&tg->lock);
	c = cputime_tg_locked(tg);
	pthread_mutex_unlock(&tg->lock);
	return c;
}

/* Adds the live threads of tg to the struct cputime arg. tree_lock held. */
static int add_live_threads(struct thread_group *tg, void *arg)
{
	struct cputime *c = arg, tc;
	struct task *t;

	pthread_mutex_lock(&tg->lock);
	list_for_each_entry(t, &tg->tasks, tg_link) {
		tc = cputime_task(t);
		c->utime += tc.utime;
		c->stime += tc.stime;
	}
	pthread_mutex_unlock(&tg->lock);
	return 0;
}

struct cputime cputime_kernel(struct kernel *k)
{
	struct cputime c = { 0, 0 };

	/* Threads exit under tree_lock: each is counted exactly once, live or exited. */
	pthread_mutex_lock(&k->tree_lock);
	pid_for_each_tg(k, add_live_threads, &c);
	c.utime += __atomic_load_n(&k->exited_utime_ns, __ATOMIC_RELAXED);
	c.stime += __atomic_load_n(&k->exited_stime_ns, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&k->tree_lock);
	return c;
}

void cputime_rss_sample(struct task *t)
{
	const struct platform_ops *ops = t->k->platform->ops;
	uint64_t kb = 0;
	long peak = -1;

	if (!t->mm)
		return;
	/*
	 * The host's hiwater mark of the guest's process sees the peaks between two samples
	 * (one round trip to the stub, 10-20 us); else the resident pages now (an lseek or two
	 * per VMA: slower, and blind to a peak already freed).
	 */
	if (t->ctx && ops->ctx_peak_rss_kb && pthread_equal(t->thread, pthread_self()))
		peak = ops->ctx_peak_rss_kb(t->ctx);
	if (peak >= 0)
		kb = (uint64_t)peak;
	else
		kb = mm_rss_pages(t->mm) * (PAGE_SIZE / 1024);
	pthread_mutex_lock(&t->tg->lock);
	if (kb > t->tg->maxrss_kb)
		t->tg->maxrss_kb = kb;
	pthread_mutex_unlock(&t->tg->lock);
}

uint64_t cputime_maxrss_kb(struct task *t)
{
	uint64_t kb;

	cputime_rss_sample(t);
	pthread_mutex_lock(&t->tg->lock);
	kb = t->tg->maxrss_kb;
	pthread_mutex_unlock(&t->tg->lock);
	return kb;
}
