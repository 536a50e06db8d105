/* SPDX-License-Identifier: Apache-2.0 */
/* See fake_wait.h. */
#include "tests/unit/kernel/fake_wait.h"
#include "sentry/kernel/task.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "include/abi/linux/errno.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/signals.h"
#include "sentry/mm/mm.h"

#define MAX_TASKS 4

static bool sig_pending[MAX_TASKS]; /* atomic; by index in the world */
static int sig_sent[MAX_TASKS]; /* atomic */
static struct fake_world *world;

static int task_index(const struct task *t)
{
	if (!world || t < world->t || t >= world->t + MAX_TASKS)
		abort();
	return (int)(t - world->t);
}

void fake_world_init(struct fake_world *w)
{
	memset(w, 0, sizeof(*w));
	memset(sig_pending, 0, sizeof(sig_pending));
	memset(sig_sent, 0, sizeof(sig_sent));
	world = w;
	pthread_mutex_init(&w->tg.lock, NULL);
	w->tg.pid = 1;
	for (int i = 0; i < MAX_TASKS; i++) {
		struct task *t = &w->t[i];

		t->k = &w->k;
		t->tg = &w->tg;
		t->tid = 1 + i;
		pthread_mutex_init(&t->wait_lock, NULL);
		pthread_cond_init(&t->wait_cond, NULL);
	}
}

void fake_world_fini(struct fake_world *w)
{
	for (int i = 0; i < MAX_TASKS; i++) {
		pthread_mutex_destroy(&w->t[i].wait_lock);
		pthread_cond_destroy(&w->t[i].wait_cond);
	}
	pthread_mutex_destroy(&w->tg.lock);
	world = NULL;
}

void fake_set_signal_pending(struct task *t, bool pending)
{
	__atomic_store_n(&sig_pending[task_index(t)], pending, __ATOMIC_RELEASE);
	if (pending)
		task_wake(t);
}

int fake_take_sent_signal(struct task *t)
{
	return __atomic_exchange_n(&sig_sent[task_index(t)], 0, __ATOMIC_ACQ_REL);
}

struct run_arg {
	struct task *t;
	void *(*fn)(void *);
	void *arg;
};

static void *run_trampoline(void *p)
{
	struct run_arg a = *(struct run_arg *)p;

	free(p);
	task_set_current(a.t);
	return a.fn(a.arg);
}

void fake_run_as(pthread_t *th, struct task *t, void *(*fn)(void *), void *arg)
{
	struct run_arg *a = malloc(sizeof(*a));

	if (!a)
		abort();
	*a = (struct run_arg){ t, fn, arg };
	if (pthread_create(th, NULL, run_trampoline, a))
		abort();
}

/* --- the signal calls waitq.c, pipes and futexes make --- */

bool task_signal_pending(struct task *t)
{
	return __atomic_load_n(&sig_pending[task_index(t)], __ATOMIC_ACQUIRE);
}

bool task_fatal_signal_pending(struct task *t)
{
	return false;
}

int signal_send_task(struct task *t, int sig, const void *info)
{
	__atomic_store_n(&sig_sent[task_index(t)], sig, __ATOMIC_RELEASE);
	return 0;
}

/* --- guest memory: addresses are sentry pointers; no VMA is shared --- */

ssize_t mm_copy_in(struct mm *mm, void *dst, uint64_t addr, size_t len)
{
	memcpy(dst, (const void *)(uintptr_t)addr, len);
	return (ssize_t)len;
}

ssize_t mm_copy_out(struct mm *mm, uint64_t addr, const void *src, size_t len)
{
	memcpy((void *)(uintptr_t)addr, src, len);
	return (ssize_t)len;
}

int mm_translate(struct mm *mm, uint64_t addr, size_t len, bool write, struct iovec *iov,
		 int max_iov, size_t *covered)
{
	if (addr < 4096)
		return -EFAULT; /* the zero page faults, as in a guest */
	iov[0].iov_base = (void *)(uintptr_t)addr;
	iov[0].iov_len = len;
	*covered = len;
	return 1;
}

/* Pins taken and not yet released (futex.c unpins every one it takes). */
long fake_pins;

int mm_translate_pin(struct mm *mm, uint64_t addr, size_t len, bool write, struct iovec *iov,
		     int max_iov, size_t *covered)
{
	int n = mm_translate(mm, addr, len, write, iov, max_iov, covered);

	if (n > 0)
		__atomic_add_fetch(&fake_pins, n, __ATOMIC_RELAXED);
	return n;
}

void mm_translate_unpin(struct mm *mm, const struct iovec *iov, int n)
{
	if (n > 0)
		__atomic_sub_fetch(&fake_pins, n, __ATOMIC_RELAXED);
}

/* One private anonymous read-write VMA over everything above the zero page. */
int mm_for_each_vma(struct mm *mm, int (*fn)(const struct mm_vma_info *vma, void *arg), void *arg)
{
	const struct mm_vma_info v = { .start = 4096,
				       .end = 1ULL << 47,
				       .prot = PROT_READ | PROT_WRITE,
				       .flags = MM_VMA_PRIVATE | MM_VMA_ANON };

	return fn(&v, arg);
}

/* The VFS's permission checks ask for capabilities (cred.c is not linked here). */
bool cred_capable(const struct cred *c, int cap)
{
	return cap >= 0 && cap < 64 && (c->cap_effective & (1ULL << cap));
}

/* --- the pid table: the world's tasks by tid (PI futex owners) --- */

struct task *pid_lookup(struct kernel *k, int32_t tid)
{
	(void)k;
	if (!world || tid < 1 || tid > MAX_TASKS)
		return NULL;
	return &world->t[tid - 1];
}

/* No freezes here (sentry/kernel/freeze.c). */
void task_park(struct task *t, int where)
{
	(void)t;
	(void)where;
}
