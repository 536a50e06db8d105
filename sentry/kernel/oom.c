/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The OOM killer and the limits husk update changes (oom.h). The memory file asks for room
 * (memfile_charge calls oom_reclaim through mf->oom); the victim is the process with the most
 * resident memory, killed with SIGKILL as Linux's OOM killer sends it (SI_KERNEL, so pid 1 too),
 * and the caller waits until its memory is back in the allocator.
 */
#include <errno.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <time.h>

#include "common/list.h"
#include "common/log.h"
#include "common/util.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/oom.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/memfile.h"
#include "sentry/mm/mm.h"

/*
 * How long a caller waits for a victim's memory to come back: a victim stuck behind a lock the
 * caller holds (a tmpfs write) must not hang it.
 */
#define OOM_WAIT_MS 2000

static pthread_mutex_t oom_lock = PTHREAD_MUTEX_INITIALIZER;

/* Waiters for the next OOM kill (oom_wait_kills): the control server's, husk's OOM reporter. */
static pthread_mutex_t kill_wait_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t kill_wait_cond = PTHREAD_COND_INITIALIZER;

int64_t oom_badness(uint64_t rss_pages, int oom_score_adj, uint64_t total_pages)
{
	if (oom_score_adj <= OOM_SCORE_ADJ_MIN)
		return INT64_MIN;
	if (rss_pages > INT64_MAX / 2)
		rss_pages = INT64_MAX / 2;
	if (total_pages > INT64_MAX / 2000)
		total_pages = INT64_MAX / 2000;
	/* Linux scales total_pages / 1000 first; multiplying first keeps small sandboxes' scale. */
	return (int64_t)rss_pages + (int64_t)oom_score_adj * (int64_t)total_pages / 1000;
}

int oom_choose_victim(const struct oom_candidate *c, size_t n, uint64_t total_pages)
{
	int64_t best_points = INT64_MIN;
	int best = -1;

	for (size_t i = 0; i < n; i++) {
		int64_t p = oom_badness(c[i].rss_pages, c[i].oom_score_adj, total_pages);

		if (c[i].rss_pages == 0 || p == INT64_MIN)
			continue;
		if (best < 0 || p > best_points) {
			best = (int)i;
			best_points = p;
		}
	}
	return best;
}

unsigned long oom_score(uint64_t rss_pages, int oom_score_adj, uint64_t total_pages)
{
	int64_t b = oom_badness(rss_pages, oom_score_adj, total_pages);
	int64_t total = total_pages ? (int64_t)MIN(total_pages, (uint64_t)INT64_MAX / 2000) : 1;
	int64_t p;

	if (b == INT64_MIN)
		return 0;
	/* Linux: (1000 + badness * 1000 / totalpages) * 2 / 3, in 0..2000 before the scaling. */
	p = 1000 + (b > INT64_MAX / 1000 ? INT64_MAX / 1000 : b) * 1000 / total;
	p = p < 0 ? 0 : p > 2000 ? 2000 : p;
	return (unsigned long)(p * 2 / 3);
}

uint64_t oom_total_pages(struct kernel *k)
{
	uint64_t limit = __atomic_load_n(&k->mf.limit, __ATOMIC_RELAXED);
	struct sysinfo si;

	if (limit)
		return limit / PAGE_SIZE;
	if (sysinfo(&si) < 0)
		return 1;
	return (uint64_t)si.totalram * si.mem_unit / PAGE_SIZE;
}

int oom_set_score_adj(struct task *writer, struct thread_group *tg, int value, bool legacy)
{
	bool privileged = !writer || cred_capable(&writer->cred, CAP_SYS_RESOURCE);
	int ret = 0;

	if (value < OOM_SCORE_ADJ_MIN || value > OOM_SCORE_ADJ_MAX)
		return -EINVAL;
	pthread_mutex_lock(&tg->lock);
	if (value < tg->oom_score_adj_min && !privileged) {
		ret = -EACCES;
	} else {
		__atomic_store_n(&tg->oom_score_adj, value, __ATOMIC_RELAXED);
		if (!legacy && privileged)
			__atomic_store_n(&tg->oom_score_adj_min, value, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&tg->lock);
	return ret;
}

/* A live process and a reference on it and on its address space. */
struct victim {
	struct thread_group *tg;
	struct mm *mm;
	char comm[16];
	int oom_score_adj;
};

struct collect {
	struct victim *v;
	size_t n, cap;
	bool exiting; /* a process (not the caller's) is exiting already */
	struct thread_group *self; /* the caller's process, or NULL */
};

static int collect_one(struct thread_group *tg, void *arg)
{
	struct collect *c = arg;
	struct task *leader;
	struct mm *mm = NULL;

	pthread_mutex_lock(&tg->lock);
	if (tg->state != TG_RUNNING) {
		pthread_mutex_unlock(&tg->lock);
		return 0;
	}
	if (tg->exiting) {
		if (tg != c->self)
			c->exiting = true;
		pthread_mutex_unlock(&tg->lock);
		return 0;
	}
	leader = tg->leader;
	if (leader) {
		mm = task_get_mm(leader);
	}
	if (mm && c->n < c->cap) {
		tg_get(tg);
		c->v[c->n].tg = tg;
		c->v[c->n].mm = mm;
		c->v[c->n].oom_score_adj = __atomic_load_n(&tg->oom_score_adj, __ATOMIC_RELAXED);
		memcpy(c->v[c->n].comm, leader->comm, sizeof(c->v[c->n].comm));
		c->v[c->n].comm[sizeof(c->v[c->n].comm) - 1] = '\0';
		c->n++;
		mm = NULL;
	}
	pthread_mutex_unlock(&tg->lock);
	if (mm)
		mm_put(mm);
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000 * 1000 };

	nanosleep(&ts, NULL);
}

static bool tg_running(struct thread_group *tg)
{
	pthread_mutex_lock(&tg->lock);
	bool r = tg->state == TG_RUNNING;
	pthread_mutex_unlock(&tg->lock);
	return r;
}

/*
 * Waits until need bytes fit, or until victim (when not NULL) has ended and a little more for
 * its pages to be freed, at most OOM_WAIT_MS. Returns true when they fit.
 */
static bool wait_for_room(struct memfile *mf, uint64_t need, struct thread_group *victim)
{
	int after_end = 0;

	for (int ms = 0; ms < OOM_WAIT_MS; ms++) {
		if (memfile_fits(mf, need))
			return true;
		if (victim && !tg_running(victim) && ++after_end > 50)
			break;
		sleep_ms(1);
	}
	return memfile_fits(mf, need);
}

/* mf->oom: kills the process with the most resident memory. See memfile.h. */
static int oom_reclaim(struct memfile *mf, uint64_t need, void *arg)
{
	struct kernel *k = arg;
	struct task *cur = task_current();
	struct collect c = { .self = cur ? cur->tg : NULL };
	int ret = -ENOMEM;

	pthread_mutex_lock(&oom_lock);
	/* Another caller may have made room while this one waited for the lock. */
	if (memfile_fits(mf, need)) {
		ret = 0;
		goto out_unlock;
	}
	if (cur && task_fatal_signal_pending(cur))
		goto out_unlock;
	__atomic_fetch_add(&mf->events_oom, 1, __ATOMIC_RELAXED);

	pthread_mutex_lock(&k->tree_lock);
	c.cap = (size_t)k->nr_tasks + 1;
	c.v = calloc(c.cap, sizeof(*c.v));
	if (c.v)
		pid_for_each_tg(k, collect_one, &c);
	pthread_mutex_unlock(&k->tree_lock);
	if (!c.v)
		goto out_unlock;

	/* A victim still on its way out: its memory is coming back, do not kill another. */
	if (c.exiting) {
		ret = wait_for_room(mf, need, NULL) ? 0 : -ENOMEM;
		goto out_put;
	}

	struct oom_candidate *cand = calloc(c.n ? c.n : 1, sizeof(*cand));
	if (!cand)
		goto out_put;
	for (size_t i = 0; i < c.n; i++) {
		cand[i].pid = c.v[i].tg->pid;
		cand[i].rss_pages = mm_rss_pages(c.v[i].mm);
		cand[i].oom_score_adj = c.v[i].oom_score_adj;
		/*
		 * The caller's pending request counts as its own: Linux charges a large read(2)
		 * into a fresh buffer page by page, so its reader is the biggest when memory runs
		 * out; here the room is asked for all at once, before any of it is touched.
		 */
		if (c.v[i].tg == c.self)
			cand[i].rss_pages += need / PAGE_SIZE;
		/* The victim's pages must not be kept alive by this reference. */
		mm_put(c.v[i].mm);
		c.v[i].mm = NULL;
	}
	int best = oom_choose_victim(cand, c.n, oom_total_pages(k));
	if (best < 0) {
		free(cand);
		goto out_put;
	}
	struct victim *v = &c.v[best];
	log_warn("memory limit %llu reached: killed pid %d (%s)",
		 (unsigned long long)__atomic_load_n(&mf->limit, __ATOMIC_RELAXED), v->tg->pid,
		 v->comm);
	free(cand);
	signal_send(v->tg, NULL, SIGKILL, NULL, 0);
	__atomic_fetch_add(&mf->events_oom_kill, 1, __ATOMIC_RELAXED);
	oom_wake_waiters();
	/* The caller itself was chosen: it dies instead of waiting. */
	if (v->tg == c.self)
		goto out_put;
	ret = wait_for_room(mf, need, v->tg) ? 0 : -ENOMEM;
	if (ret < 0 && !tg_running(v->tg))
		ret = 0; /* gone: the caller checks again and may pick another victim */

out_put:
	for (size_t i = 0; i < c.n; i++) {
		if (c.v[i].mm)
			mm_put(c.v[i].mm);
		tg_put(c.v[i].tg);
	}
	free(c.v);
out_unlock:
	pthread_mutex_unlock(&oom_lock);
	return ret;
}

void oom_wake_waiters(void)
{
	pthread_mutex_lock(&kill_wait_lock);
	pthread_cond_broadcast(&kill_wait_cond);
	pthread_mutex_unlock(&kill_wait_lock);
}

uint64_t oom_wait_kills(struct kernel *k, uint64_t seen, const bool *cancel)
{
	uint64_t n;

	pthread_mutex_lock(&kill_wait_lock);
	/* The count is bumped before the broadcast, which takes this lock: no wakeup is lost. */
	while ((n = __atomic_load_n(&k->mf.events_oom_kill, __ATOMIC_RELAXED)) <= seen &&
	       !__atomic_load_n(cancel, __ATOMIC_ACQUIRE))
		pthread_cond_wait(&kill_wait_cond, &kill_wait_lock);
	pthread_mutex_unlock(&kill_wait_lock);
	return n;
}

void oom_init(struct kernel *k)
{
	k->mf.oom_arg = k;
	k->mf.oom = oom_reclaim;
}

int oom_set_memory_limit(struct kernel *k, uint64_t limit)
{
	memfile_set_limit(&k->mf, limit);
	/* As Linux's memory.max write: the limit holds even when nothing more can be killed. */
	if (limit && memfile_charge(&k->mf, 0) < 0)
		log_warn("memory limit %llu: the usage stays above it (%llu bytes)",
			 (unsigned long long)limit, (unsigned long long)memfile_usage(&k->mf));
	return 0;
}

int oom_update_limits(struct kernel *k, int64_t memory, int64_t pids)
{
	int ret = 0;

	if (memory < -2 || pids < -2 || pids > INT32_MAX)
		return -EINVAL;
	if (pids != -2) {
		pthread_mutex_lock(&k->tree_lock);
		k->pids_limit = pids < 0 ? 0 : (int)pids;
		pthread_mutex_unlock(&k->tree_lock);
	}
	if (memory != -2)
		ret = oom_set_memory_limit(k, memory < 0 ? 0 : (uint64_t)memory);
	return ret;
}

void oom_stats(struct kernel *k, struct oom_stats *out)
{
	out->memory_usage = memfile_usage(&k->mf); /* also updates the peak */
	out->memory_limit = __atomic_load_n(&k->mf.limit, __ATOMIC_RELAXED);
	out->memory_peak = __atomic_load_n(&k->mf.peak, __ATOMIC_RELAXED);
	out->oom_kills = __atomic_load_n(&k->mf.events_oom_kill, __ATOMIC_RELAXED);
	pthread_mutex_lock(&k->tree_lock);
	out->pids_current = k->nr_tasks;
	out->pids_limit = k->pids_limit;
	pthread_mutex_unlock(&k->tree_lock);
}
