/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The OOM killer (sentry/kernel/oom.c) over real address spaces (sentry/mm with the fake platform
 * of tests/unit/mm) and a hand-made process table: the victim is the process with the most
 * resident memory, it gets SIGKILL, and the caller waits for its memory. Also the limits husk
 * update sets.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <linux/capability.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "common/err.h"
#include "common/util.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/oom.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/memfile.h"
#include "tests/unit/mm/fake.h"

#define P PAGE_SIZE
#define A 0x10000000ULL
#define NPROC 3

/* --- the process table: NPROC processes, each one thread (its leader) --- */

__thread struct task *husk_current_task;
static struct thread_group tgs[NPROC];
static struct task tasks[NPROC];
static int killed[NPROC]; /* SIGKILLs each process got */

int pid_for_each_tg(struct kernel *k, int (*fn)(struct thread_group *tg, void *arg), void *arg)
{
	for (int i = 0; i < NPROC; i++) {
		if (tgs[i].state == TG_DEAD)
			continue;
		int r = fn(&tgs[i], arg);
		if (r)
			return r;
	}
	return 0;
}

void tg_get(struct thread_group *tg)
{
}

/* As sentry/kernel/cred.c: the effective set decides. */
bool cred_capable(const struct cred *c, int cap)
{
	return (c->cap_effective >> cap) & 1;
}

void tg_put(struct thread_group *tg)
{
}

bool task_fatal_signal_pending(struct task *t)
{
	return killed[t - tasks] > 0;
}

/* SIGKILL ends the process at once: its address space goes (and its pages with it). */
int signal_send(struct thread_group *tg, struct task *t, int sig, const void *info,
		unsigned int flags)
{
	int i = (int)(tg - tgs);

	cr_assert_eq(sig, SIGKILL);
	cr_assert_null(t);
	killed[i]++;
	if (tg != (husk_current_task ? husk_current_task->tg : NULL)) {
		pthread_mutex_lock(&tg->lock);
		tg->state = TG_ZOMBIE;
		struct mm *mm = tasks[i].mm;
		tasks[i].mm = NULL;
		pthread_mutex_unlock(&tg->lock);
		mm_put(mm);
	}
	return 0;
}

/* Makes process i with pid 10 + i holding pages resident pages of anonymous memory. */
static void make_process(int i, uint64_t pages)
{
	struct mm *mm = mm_create(&fake_kernel);

	cr_assert(!IS_ERR(mm));
	cr_assert_eq(mm_mmap(mm, A, 64 * P, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, NULL, 0),
		     (long)A);
	for (uint64_t p = 0; p < pages; p++) {
		uint8_t b = 1;
		cr_assert_eq(mm_copy_out(mm, A + p * P, &b, 1), 1);
	}
	pthread_mutex_init(&tgs[i].lock, NULL);
	tgs[i].pid = 10 + i;
	tgs[i].state = TG_RUNNING;
	tgs[i].leader = &tasks[i];
	tasks[i].tg = &tgs[i];
	tasks[i].mm = mm;
	snprintf(tasks[i].comm, sizeof(tasks[i].comm), "proc%d", i);
}

static void setup(void)
{
	fake_setup();
	memset(tgs, 0, sizeof(tgs));
	memset(tasks, 0, sizeof(tasks));
	memset(killed, 0, sizeof(killed));
	husk_current_task = NULL;
	pthread_mutex_init(&fake_kernel.tree_lock, NULL);
	fake_kernel.nr_tasks = NPROC;
	fake_kernel.pids_limit = 0;
	oom_init(&fake_kernel);
	make_process(0, 4);
	make_process(1, 32);
	make_process(2, 8);
}

static void teardown(void)
{
	for (int i = 0; i < NPROC; i++)
		if (tasks[i].mm)
			mm_put(tasks[i].mm);
	fake_teardown();
}

TestSuite(oom, .init = setup, .fini = teardown);

Test(oom, choose_victim_takes_the_largest_rss)
{
	struct oom_candidate c[] = { { 1, 10 }, { 2, 300 }, { 3, 20 } };

	cr_assert_eq(oom_choose_victim(c, 3, 1000), 1);
}

Test(oom, choose_victim_takes_the_first_of_equals)
{
	struct oom_candidate c[] = { { 1, 5 }, { 7, 9 }, { 3, 9 } };

	cr_assert_eq(oom_choose_victim(c, 3, 1000), 1);
}

Test(oom, choose_victim_never_takes_a_process_without_memory)
{
	struct oom_candidate c[] = { { 1, 0 }, { 2, 0 } };

	cr_assert_eq(oom_choose_victim(c, 2, 1000), -1);
	cr_assert_eq(oom_choose_victim(c, 0, 1000), -1);
}

Test(oom, a_charge_past_the_limit_kills_the_process_with_most_memory)
{
	struct memfile *mf = &fake_kernel.mf;

	memfile_set_limit(mf, memfile_usage(mf));
	cr_assert_eq(memfile_charge(mf, P), 0);
	cr_assert_eq(killed[0], 0);
	cr_assert_eq(killed[1], 1);
	cr_assert_eq(killed[2], 0);
	cr_assert_eq(mf->events_oom_kill, 1);
	cr_assert_eq(mf->events_oom, 1);
	cr_assert(memfile_fits(mf, 32 * P), "the victim's 32 pages were given back");
}

Test(oom, kills_go_on_until_the_charge_fits)
{
	struct memfile *mf = &fake_kernel.mf;

	/* Room for 36 more pages needs the 32-page process and then the 8-page one. */
	memfile_set_limit(mf, memfile_usage(mf));
	cr_assert_eq(memfile_charge(mf, 36 * P), 0);
	cr_assert_eq(killed[1], 1);
	cr_assert_eq(killed[2], 1);
	cr_assert_eq(killed[0], 0);
	cr_assert_eq(mf->events_oom_kill, 2);
}

Test(oom, the_caller_chosen_as_victim_dies_instead_of_waiting)
{
	struct memfile *mf = &fake_kernel.mf;

	husk_current_task = &tasks[1];
	memfile_set_limit(mf, memfile_usage(mf));
	cr_assert_eq(memfile_charge(mf, P), -ENOMEM);
	cr_assert_eq(killed[1], 1);
	cr_assert_eq(killed[0] + killed[2], 0, "no one else pays for the caller");
}

Test(oom, the_callers_pending_request_counts_as_its_memory)
{
	struct memfile *mf = &fake_kernel.mf;

	/* Process 0 holds 4 pages but asks for 40 at once: it is the one using the most. */
	husk_current_task = &tasks[0];
	memfile_set_limit(mf, memfile_usage(mf));
	cr_assert_eq(memfile_charge(mf, 40 * P), -ENOMEM);
	cr_assert_eq(killed[0], 1);
	cr_assert_eq(killed[1] + killed[2], 0);
}

Test(oom, nothing_to_kill_gives_enomem)
{
	struct memfile *mf = &fake_kernel.mf;

	for (int i = 0; i < NPROC; i++)
		tgs[i].state = TG_DEAD;
	memfile_set_limit(mf, memfile_usage(mf));
	cr_assert_eq(memfile_charge(mf, P), -ENOMEM);
	cr_assert_eq(mf->events_oom_kill, 0);
}

Test(oom, a_lower_limit_kills_down_to_it)
{
	struct memfile *mf = &fake_kernel.mf;
	uint64_t usage = memfile_usage(mf);

	cr_assert_eq(oom_update_limits(&fake_kernel, (int64_t)(usage - 20 * P), -2), 0);
	cr_assert_eq(mf->limit, usage - 20 * P);
	cr_assert_eq(killed[1], 1);
	cr_assert_eq(killed[0] + killed[2], 0);
	cr_assert_leq(memfile_usage(mf), mf->limit);
}

Test(oom, a_lower_limit_holds_when_nothing_can_be_killed)
{
	struct memfile *mf = &fake_kernel.mf;

	for (int i = 0; i < NPROC; i++)
		tgs[i].state = TG_DEAD;
	cr_assert_eq(oom_update_limits(&fake_kernel, P, -2), 0);
	cr_assert_eq(mf->limit, P);
}

Test(oom, update_sets_unsets_and_keeps_limits)
{
	struct memfile *mf = &fake_kernel.mf;

	cr_assert_eq(oom_update_limits(&fake_kernel, 1LL << 30, 5), 0);
	cr_assert_eq(mf->limit, 1ULL << 30);
	cr_assert(mf->lazy);
	cr_assert_eq(fake_kernel.pids_limit, 5);
	cr_assert_eq(oom_update_limits(&fake_kernel, -2, -2), 0);
	cr_assert_eq(mf->limit, 1ULL << 30);
	cr_assert_eq(fake_kernel.pids_limit, 5);
	cr_assert_eq(oom_update_limits(&fake_kernel, -1, -1), 0);
	cr_assert_eq(mf->limit, 0);
	cr_assert_eq(fake_kernel.pids_limit, 0);
	cr_assert_eq(oom_update_limits(&fake_kernel, -3, 1), -EINVAL);
	cr_assert_eq(oom_update_limits(&fake_kernel, 1, 1LL << 32), -EINVAL);
	cr_assert_eq(fake_kernel.pids_limit, 0, "a rejected update changes nothing");
	cr_assert_eq(killed[0] + killed[1] + killed[2], 0);
}

Test(oom, choose_victim_weighs_oom_score_adj_against_the_total)
{
	/* 1000 total pages: each point of oom_score_adj is one page. */
	struct oom_candidate c[] = { { 1, 300, 0 }, { 2, 10, 500 }, { 3, 900, -1000 } };

	cr_assert_eq(oom_badness(300, 0, 1000), 300);
	cr_assert_eq(oom_badness(10, 500, 1000), 510);
	cr_assert_eq(oom_badness(10, -500, 1000), -490);
	cr_assert_eq(oom_badness(900, -1000, 1000), INT64_MIN);
	cr_assert_eq(oom_choose_victim(c, 3, 1000), 1, "the highest badness goes first");
	c[1].oom_score_adj = 200;
	cr_assert_eq(oom_choose_victim(c, 3, 1000), 0);
	/* -1000 is never chosen, even when it is all there is. */
	cr_assert_eq(oom_choose_victim(&c[2], 1, 1000), -1);
	/* Negative badness still loses only to higher. */
	struct oom_candidate d[] = { { 1, 10, -900 }, { 2, 10, -800 } };
	cr_assert_eq(oom_choose_victim(d, 2, 1000), 1);
}

Test(oom, oom_score_is_linux_scale)
{
	/* (1000 + badness * 1000 / total) * 2 / 3 */
	cr_assert_eq(oom_score(0, 0, 1000), 666);
	cr_assert_eq(oom_score(1000, 0, 1000), 1333);
	cr_assert_eq(oom_score(0, 1000, 1000), 1333);
	cr_assert_eq(oom_score(500, -1000, 1000), 0);
	cr_assert_eq(oom_score(0, -999, 1000), 0);
}

Test(oom, writing_oom_score_adj_follows_linux_rules)
{
	struct thread_group *tg = &tgs[0];
	struct task w = { 0 };

	tg->oom_score_adj = tg->oom_score_adj_min = 0;
	/* Without CAP_SYS_RESOURCE: up freely, not below the floor. */
	cr_assert_eq(oom_set_score_adj(&w, tg, 1001, false), -EINVAL);
	cr_assert_eq(oom_set_score_adj(&w, tg, -1001, false), -EINVAL);
	cr_assert_eq(oom_set_score_adj(&w, tg, 300, false), 0);
	cr_assert_eq(tg->oom_score_adj, 300);
	cr_assert_eq(oom_set_score_adj(&w, tg, -1, false), -EACCES);
	cr_assert_eq(tg->oom_score_adj, 300);
	cr_assert_eq(oom_set_score_adj(&w, tg, 0, false), 0);
	cr_assert_eq(tg->oom_score_adj_min, 0, "an unprivileged write moved the floor");
	/* With it: anything in range, and a (non-legacy) write sets the floor. */
	w.cred.cap_effective = 1ull << CAP_SYS_RESOURCE;
	cr_assert_eq(oom_set_score_adj(&w, tg, -500, false), 0);
	cr_assert_eq(tg->oom_score_adj_min, -500);
	cr_assert_eq(oom_set_score_adj(&w, tg, -1000, true), 0);
	cr_assert_eq(tg->oom_score_adj_min, -500, "a legacy oom_adj write moved the floor");
	w.cred.cap_effective = 0;
	cr_assert_eq(oom_set_score_adj(&w, tg, -600, false), -EACCES);
	cr_assert_eq(oom_set_score_adj(&w, tg, -500, false), 0);
	/* The runtime (no writer) has every right. */
	cr_assert_eq(oom_set_score_adj(NULL, tg, -1000, false), 0);
	cr_assert_eq(tg->oom_score_adj_min, -1000);
}

Test(oom, a_process_with_oom_score_adj_minus_1000_is_never_killed)
{
	struct memfile *mf = &fake_kernel.mf;

	/* The biggest process is protected: the next biggest goes instead. */
	tgs[1].oom_score_adj = -1000;
	memfile_set_limit(mf, memfile_usage(mf));
	cr_assert_eq(memfile_charge(mf, P), 0);
	cr_assert_eq(killed[1], 0);
	cr_assert_eq(killed[2], 1);
	cr_assert_eq(killed[0], 0);
}

Test(oom, oom_score_adj_1000_is_killed_first)
{
	struct memfile *mf = &fake_kernel.mf;

	/* The smallest process asks to go first. */
	tgs[0].oom_score_adj = 1000;
	memfile_set_limit(mf, memfile_usage(mf));
	cr_assert_eq(memfile_charge(mf, P), 0);
	cr_assert_eq(killed[0], 1);
	cr_assert_eq(killed[1], 0);
	cr_assert_eq(killed[2], 0);
}

/* --- oom_wait_kills: the control server's CONTROL_OOM_WAIT (husk-oomwatch, husk events) --- */

struct waiter {
	uint64_t seen;
	bool cancel;
	uint64_t got;
};

static void *wait_main(void *arg)
{
	struct waiter *w = arg;

	w->got = oom_wait_kills(&fake_kernel, w->seen, &w->cancel);
	return NULL;
}

Test(oom, a_waiter_wakes_at_the_next_kill_with_the_new_count)
{
	struct memfile *mf = &fake_kernel.mf;
	struct waiter w = { .seen = 0, .got = 99 };
	pthread_t th;

	cr_assert_eq(pthread_create(&th, NULL, wait_main, &w), 0);
	memfile_set_limit(mf, memfile_usage(mf));
	cr_assert_eq(memfile_charge(mf, P), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(w.got, 1);
}

Test(oom, a_waiter_behind_the_count_returns_at_once)
{
	struct memfile *mf = &fake_kernel.mf;
	bool cancel = false;

	memfile_set_limit(mf, memfile_usage(mf));
	cr_assert_eq(memfile_charge(mf, 36 * P), 0);
	cr_assert_eq(oom_wait_kills(&fake_kernel, 0, &cancel), 2);
	cr_assert_eq(oom_wait_kills(&fake_kernel, 1, &cancel), 2);
}

Test(oom, a_cancelled_waiter_returns_the_count_unchanged)
{
	struct waiter w = { .seen = 0, .got = 99 };
	pthread_t th;

	cr_assert_eq(pthread_create(&th, NULL, wait_main, &w), 0);
	__atomic_store_n(&w.cancel, true, __ATOMIC_RELEASE);
	oom_wake_waiters();
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(w.got, 0);
	cr_assert_eq(killed[0] + killed[1] + killed[2], 0);
}
