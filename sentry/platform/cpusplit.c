/* SPDX-License-Identifier: Apache-2.0 */
/* Splitting a stub process's CPU clock among its guest threads (cpusplit.h). */
#include <string.h>
#include <time.h>

#include "sentry/platform/cpusplit.h"

void cpu_split_init(struct cpu_split *s, pid_t pid)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->pid = pid;
}

void cpu_split_destroy(struct cpu_split *s)
{
	pthread_mutex_destroy(&s->lock);
}

void cpu_split_reaped(struct cpu_split *s)
{
	__atomic_store_n(&s->reaped, 1, __ATOMIC_RELEASE);
}

void cpu_split_thread_init(struct cpu_split_thread *t)
{
	memset(t, 0, sizeof(*t));
}

/* The stub's process CPU clock (CPUCLOCK_SCHED of its pid), never going back. lock held. */
static uint64_t stub_clock(struct cpu_split *s)
{
	clockid_t clk = (clockid_t)((~(unsigned int)s->pid << 3) | 2);
	struct timespec ts;
	uint64_t v;

	/* Once reaped, the pid may name another process: keep the last value. */
	if (!s->pid || __atomic_load_n(&s->reaped, __ATOMIC_ACQUIRE) || clock_gettime(clk, &ts) < 0)
		return s->last;
	v = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	return v > s->last ? v : s->last;
}

/* Shares the stub's time since the last sample out. lock held. */
static void sample(struct cpu_split *s)
{
	uint64_t now = stub_clock(s), delta = now - s->last;

	s->last = now;
	if (s->running > 0)
		s->share += delta / (uint64_t)s->running;
	else if (s->owner)
		s->owner->ns += delta;
}

void cpu_split_enter(struct cpu_split *s, struct cpu_split_thread *t)
{
	pthread_mutex_lock(&s->lock);
	if (s->running > 0 || (s->owner && s->owner != t))
		sample(s);
	s->running++;
	t->running = true;
	t->enter_share = s->share;
	pthread_mutex_unlock(&s->lock);
}

void cpu_split_leave(struct cpu_split *s, struct cpu_split_thread *t)
{
	pthread_mutex_lock(&s->lock);
	if (s->running > 1)
		sample(s);
	t->ns += s->share - t->enter_share;
	t->running = false;
	s->running--;
	s->owner = t;
	pthread_mutex_unlock(&s->lock);
}

void cpu_split_thread_reset(struct cpu_split *s, struct cpu_split_thread *t, bool forget)
{
	pthread_mutex_lock(&s->lock);
	sample(s);
	t->ns = 0;
	if (forget && s->owner == t)
		s->owner = NULL;
	pthread_mutex_unlock(&s->lock);
}

uint64_t cpu_split_read(struct cpu_split *s, struct cpu_split_thread *t)
{
	uint64_t ns;

	pthread_mutex_lock(&s->lock);
	sample(s);
	ns = t->ns;
	if (t->running)
		ns += s->share - t->enter_share;
	pthread_mutex_unlock(&s->lock);
	return ns;
}
