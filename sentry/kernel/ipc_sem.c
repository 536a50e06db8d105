/* SPDX-License-Identifier: Apache-2.0 */
/*
 * System V semaphores (Linux's ipc/sem.c).
 *
 * A blocked semop registers a waiter on its set (for GETNCNT/GETZCNT: the operation it blocks
 * on, as Linux 4.x+ counts) and sleeps on the set's wait queue; its wait condition retries the
 * whole operation atomically under sem_ids.lock, so it completes, fails (EIDRM, ERANGE, EAGAIN)
 * or sleeps again each time the set changes. Every change of values wakes the set's queue.
 *
 * SEM_UNDO adjustments are kept per process (thread group), not inherited by fork, kept across
 * execve, applied by ipc_sem_exit when the process's last thread exits (the hook is in
 * task_exit.c), cleared for a semaphore by SETVAL/SETALL and dropped with the set (IPC_RMID).
 *
 * References: the id table holds one on each set; each waiter holds one while it sleeps.
 * sem_ids.lock protects every set's values, waiters and the undo lists; it is taken before a
 * wait queue's lock (waitq_wake_all under it).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/list.h"
#include "common/refcount.h"
#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/kernel/ipc_priv.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/sysctl.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/waitq.h"
#include "sentry/mm/mm.h"

struct sem {
	int val;
	int32_t pid;
};

struct sem_set {
	struct ipc_kperm perm; /* first: the id table's entry */
	struct refcount ref;
	int nsems;
	int64_t otime, ctime;
	struct waitq wq; /* woken on every change of values and at removal */
	struct list_head waiters; /* of struct sem_waiter */
	struct sem sems[];
};

/* One semop sleeping on a set. */
struct sem_waiter {
	struct list_head link; /* in set->waiters */
	struct sem_set *set;
	struct thread_group *tg;
	int32_t pid;
	struct linux_sembuf *sops;
	size_t nsops;
	bool alter;
	bool undos;
	size_t blocking; /* index in sops of the operation it waits on */
	bool done;
	long result;
};

/* SEM_UNDO adjustments of one process for one set. */
struct sem_undo {
	struct list_head link; /* in sem_undo_list.units */
	int semid;
	int nsems;
	int16_t adj[];
};

struct sem_undo_list {
	struct list_head link; /* in undo_lists */
	struct thread_group *tg; /* not referenced: ipc_sem_exit removes the list */
	struct list_head units;
};

static struct ipc_ids sem_ids = IPC_IDS_INIT;
static int64_t used_sems; /* sem_ids.lock */
static struct list_head undo_lists = LIST_HEAD_INIT(undo_lists); /* sem_ids.lock */

static int sem_limit(int i)
{
	int64_t v = sysctl_get(SYSCTL_KERNEL_SEM, (unsigned int)i);

	return v < 0 ? 0 : v > INT32_MAX ? INT32_MAX : (int)v;
}
#define SEMMSL sem_limit(0)
#define SEMMNS sem_limit(1)
#define SEMOPM sem_limit(2)
#define SEMMNI sem_limit(3)

static void set_put(struct sem_set *s)
{
	if (refcount_dec(&s->ref))
		free(s);
}

/* --- undo lists (sem_ids.lock) --- */

static struct sem_undo_list *undo_list_of(struct thread_group *tg, bool create)
{
	struct sem_undo_list *l;

	list_for_each_entry(l, &undo_lists, link)
		if (l->tg == tg)
			return l;
	if (!create)
		return NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->tg = tg;
	list_init(&l->units);
	list_add_tail(&l->link, &undo_lists);
	return l;
}

static struct sem_undo *find_undo(struct thread_group *tg, struct sem_set *s, bool create)
{
	struct sem_undo_list *l = undo_list_of(tg, create);
	struct sem_undo *u;

	if (!l)
		return NULL;
	list_for_each_entry(u, &l->units, link)
		if (u->semid == s->perm.id)
			return u;
	if (!create)
		return NULL;
	u = calloc(1, sizeof(*u) + (size_t)s->nsems * sizeof(u->adj[0]));
	if (!u)
		return NULL;
	u->semid = s->perm.id;
	u->nsems = s->nsems;
	list_add_tail(&u->link, &l->units);
	return u;
}

/* Calls fn on every process's adjustments for set id (sem_ids.lock held). */
static void for_each_undo(int semid, void (*fn)(struct sem_undo *u, void *arg), void *arg)
{
	struct sem_undo_list *l;
	struct sem_undo *u, *tmp;

	list_for_each_entry(l, &undo_lists, link)
		list_for_each_entry_safe(u, tmp, &l->units, link)
			if (u->semid == semid)
				fn(u, arg);
}

static void undo_clear(struct sem_undo *u, void *arg)
{
	int num = *(int *)arg;

	if (num < 0)
		memset(u->adj, 0, (size_t)u->nsems * sizeof(u->adj[0]));
	else if (num < u->nsems)
		u->adj[num] = 0;
}

static void undo_free(struct sem_undo *u, void *arg)
{
	list_del(&u->link);
	free(u);
}

/* --- semget --- */

struct sem_get_args {
	int32_t key;
	int nsems;
	int flags;
};

static int sem_create(struct task *t, struct ipc_ids *ids, void *arg)
{
	struct sem_get_args *g = arg;
	struct sem_set *s;
	int r;

	if (!g->nsems)
		return -EINVAL;
	if (used_sems + g->nsems > SEMMNS)
		return -ENOSPC;
	if (ids->in_use >= SEMMNI)
		return -ENOSPC;
	s = calloc(1, sizeof(*s) + (size_t)g->nsems * sizeof(s->sems[0]));
	if (!s)
		return -ENOMEM;
	refcount_init(&s->ref, 1);
	ipc_init_perm(&s->perm, &t->cred, g->key, g->flags);
	s->nsems = g->nsems;
	s->ctime = ipc_now();
	waitq_init(&s->wq);
	list_init(&s->waiters);
	r = ipc_add(ids, &s->perm, SEMMNI);
	if (r < 0) {
		free(s);
		return r;
	}
	used_sems += g->nsems;
	return r;
}

static int sem_more_checks(struct ipc_kperm *p, void *arg)
{
	struct sem_get_args *g = arg;

	return g->nsems > ((struct sem_set *)p)->nsems ? -EINVAL : 0;
}

static const struct ipc_get_ops sem_get_ops = {
	.create = sem_create,
	.more_checks = sem_more_checks,
};

long ipc_semget(struct task *t, int32_t key, int nsems, int flags)
{
	struct sem_get_args g = { .key = key, .nsems = nsems, .flags = flags };

	if (nsems < 0 || nsems > SEMMSL)
		return -EINVAL;
	return ipc_get(t, &sem_ids, key, flags, &sem_get_ops, &g);
}

/* --- semop --- */

/*
 * Linux's perform_atomic_semop: applies every operation or none (sem_ids.lock held). Returns 0
 * when applied, 1 when it must wait (*blocking: the operation), -EAGAIN (that operation has
 * IPC_NOWAIT) or -ERANGE (a value or an adjustment out of range).
 */
static int try_semop(struct sem_set *s, const struct linux_sembuf *sops, size_t nsops,
		     struct sem_undo *u, int32_t pid, size_t *blocking)
{
	size_t i;
	int r;

	for (i = 0; i < nsops; i++) {
		const struct linux_sembuf *op = &sops[i];
		struct sem *sem = &s->sems[op->sem_num];
		int result = sem->val;

		if (!op->sem_op && result)
			goto would_block;
		result += op->sem_op;
		if (result < 0)
			goto would_block;
		if (result > LINUX_SEMVMX) {
			r = -ERANGE;
			goto revert;
		}
		if (op->sem_flg & LINUX_SEM_UNDO) {
			int adj = u->adj[op->sem_num] - op->sem_op;

			if (adj < -LINUX_SEMAEM - 1 || adj > LINUX_SEMAEM) {
				r = -ERANGE;
				goto revert;
			}
			u->adj[op->sem_num] = (int16_t)adj;
		}
		sem->val = result;
	}
	for (i = 0; i < nsops; i++)
		s->sems[sops[i].sem_num].pid = pid;
	return 0;

would_block:
	*blocking = i;
	r = (sops[i].sem_flg & LINUX_IPC_NOWAIT) ? -EAGAIN : 1;
revert:
	while (i-- > 0) {
		s->sems[sops[i].sem_num].val -= sops[i].sem_op;
		if (sops[i].sem_flg & LINUX_SEM_UNDO)
			u->adj[sops[i].sem_num] =
				(int16_t)(u->adj[sops[i].sem_num] + sops[i].sem_op);
	}
	return r;
}

/* A try of w's operation (sem_ids.lock held): true when w is over (w->result set). */
static bool waiter_try(struct sem_waiter *w)
{
	struct sem_set *s = w->set;
	struct sem_undo *u = NULL;
	int r;

	if (s->perm.deleted) {
		w->result = -EIDRM;
		return true;
	}
	if (w->undos) {
		u = find_undo(w->tg, s, true);
		if (!u) {
			w->result = -ENOMEM;
			return true;
		}
	}
	r = try_semop(s, w->sops, w->nsops, u, w->pid, &w->blocking);
	if (r == 1)
		return false;
	if (r == 0) {
		s->otime = ipc_now();
		if (w->alter)
			waitq_wake_all(&s->wq);
	}
	w->result = r;
	return true;
}

static bool waiter_cond(void *arg)
{
	struct sem_waiter *w = arg;

	pthread_mutex_lock(&sem_ids.lock);
	if (!w->done)
		w->done = waiter_try(w);
	pthread_mutex_unlock(&sem_ids.lock);
	return w->done;
}

long ipc_semtimedop(struct task *t, int id, uint64_t sops, uint64_t nsops,
		    const struct timespec *timeout)
{
	struct sem_waiter w = { .tg = t->tg, .pid = task_pid(t), .nsops = nsops };
	_cleanup_free_ struct linux_sembuf *ops = NULL;
	struct timespec deadline;
	size_t max = 0;
	long r, wr;

	if (nsops < 1 || id < 0)
		return -EINVAL;
	if (nsops > (uint64_t)SEMOPM)
		return -E2BIG;
	ops = calloc(nsops, sizeof(*ops));
	if (!ops)
		return -ENOMEM;
	if (mm_copy_in(t->mm, ops, sops, nsops * sizeof(*ops)) != (ssize_t)(nsops * sizeof(*ops)))
		return -EFAULT;
	for (size_t i = 0; i < nsops; i++) {
		if (ops[i].sem_num >= max)
			max = ops[i].sem_num;
		if (ops[i].sem_flg & LINUX_SEM_UNDO)
			w.undos = true;
		if (ops[i].sem_op != 0)
			w.alter = true;
	}
	w.sops = ops;
	if (timeout) {
		if (timeout->tv_sec < 0 || timeout->tv_nsec < 0 || timeout->tv_nsec >= 1000000000L)
			return -EINVAL;
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += timeout->tv_sec;
		deadline.tv_nsec += timeout->tv_nsec;
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
	}

	pthread_mutex_lock(&sem_ids.lock);
	w.set = (struct sem_set *)ipc_lookup(&sem_ids, id);
	if (!w.set) {
		r = -EINVAL;
		goto out_unlock;
	}
	if (max >= (size_t)w.set->nsems) {
		r = -EFBIG;
		goto out_unlock;
	}
	r = ipc_perms(&t->cred, &w.set->perm, w.alter ? 0222 : 0444);
	if (r < 0)
		goto out_unlock;
	if (waiter_try(&w)) {
		r = w.result;
		goto out_unlock;
	}
	refcount_inc(&w.set->ref);
	list_add_tail(&w.link, &w.set->waiters);
	pthread_mutex_unlock(&sem_ids.lock);

	struct waitq *wq = &w.set->wq;
	wr = task_wait(t, &wq, 1, waiter_cond, &w, timeout ? &deadline : NULL, true);

	pthread_mutex_lock(&sem_ids.lock);
	list_del(&w.link);
	if (w.done)
		r = w.result;
	else if (wr == -ETIMEDOUT)
		r = -EAGAIN;
	else if (wr == -ERESTARTSYS)
		/* As Linux: never restarted, even under SA_RESTART; but a freeze alone (pause,
		 * checkpoint) restarts it unseen (a timeout then starts again). */
		r = kernel_freezing(t->k) ? -ERESTARTNOHAND : -EINTR;
	else
		r = wr;
	pthread_mutex_unlock(&sem_ids.lock);
	set_put(w.set);
	return r;

out_unlock:
	pthread_mutex_unlock(&sem_ids.lock);
	return r;
}

/* --- semctl --- */

static long copy_out(struct task *t, uint64_t addr, const void *src, size_t len)
{
	return mm_copy_out(t->mm, addr, src, len) == (ssize_t)len ? 0 : -EFAULT;
}

static long sem_info(struct task *t, int cmd, uint64_t buf)
{
	struct linux_seminfo info = {
		.semmni = SEMMNI,
		.semmns = SEMMNS,
		.semmsl = SEMMSL,
		.semopm = SEMOPM,
		.semvmx = LINUX_SEMVMX,
	};
	long r;

	/* Linux's constants: SEMMAP = SEMMNU = SEMMNS, SEMUME = SEMOPM, SEMUSZ 20, SEMAEM. */
	info.semmap = info.semmns;
	info.semmnu = info.semmns;
	info.semume = info.semopm;
	pthread_mutex_lock(&sem_ids.lock);
	if (cmd == LINUX_SEM_INFO) {
		info.semusz = sem_ids.in_use;
		info.semaem = (int32_t)used_sems;
	} else {
		info.semusz = 20;
		info.semaem = LINUX_SEMAEM;
	}
	r = ipc_info_ret(&sem_ids);
	pthread_mutex_unlock(&sem_ids.lock);
	return copy_out(t, buf, &info, sizeof(info)) ?: r;
}

static int count_waiting(struct sem_set *s, int num, bool zero)
{
	struct sem_waiter *w;
	int n = 0;

	list_for_each_entry(w, &s->waiters, link) {
		const struct linux_sembuf *op = &w->sops[w->blocking];

		if (!w->done && op->sem_num == num && (zero ? op->sem_op == 0 : op->sem_op < 0))
			n++;
	}
	return n;
}

/* IPC_RMID (sem_ids.lock held): waiters wake to EIDRM, adjustments go. */
static void set_remove(struct sem_set *s)
{
	ipc_remove(&sem_ids, &s->perm);
	used_sems -= s->nsems;
	for_each_undo(s->perm.id, undo_free, NULL);
	waitq_wake_all(&s->wq);
}

static long sem_setall(struct task *t, int id, uint64_t arg)
{
	_cleanup_free_ uint16_t *vals = NULL;
	struct sem_set *s;
	int nsems, all = -1;
	long r;

	pthread_mutex_lock(&sem_ids.lock);
	s = (struct sem_set *)ipc_lookup(&sem_ids, id);
	r = s ? ipc_perms(&t->cred, &s->perm, 0222) : -EINVAL;
	nsems = s ? s->nsems : 0;
	pthread_mutex_unlock(&sem_ids.lock);
	if (r < 0)
		return r;
	vals = calloc((size_t)nsems, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	if (mm_copy_in(t->mm, vals, arg, (size_t)nsems * sizeof(*vals)) !=
	    (ssize_t)((size_t)nsems * sizeof(*vals)))
		return -EFAULT;
	for (int i = 0; i < nsems; i++)
		if (vals[i] > LINUX_SEMVMX)
			return -ERANGE;
	pthread_mutex_lock(&sem_ids.lock);
	/* The set may have gone, or been replaced, while the values were read. */
	if (ipc_lookup(&sem_ids, id) != &s->perm) {
		r = -EIDRM;
		goto out_unlock;
	}
	for (int i = 0; i < nsems; i++) {
		s->sems[i].val = vals[i];
		s->sems[i].pid = task_pid(t);
	}
	for_each_undo(id, undo_clear, &all);
	s->ctime = ipc_now();
	waitq_wake_all(&s->wq);
out_unlock:
	pthread_mutex_unlock(&sem_ids.lock);
	return r;
}

long ipc_semctl(struct task *t, int id, int num, int cmd, uint64_t arg)
{
	struct linux_semid64_ds ds;
	_cleanup_free_ uint16_t *vals = NULL;
	size_t nvals = 0;
	struct sem_set *s;
	int val = (int)(uint32_t)arg;
	long r = 0;

	if (id < 0)
		return -EINVAL;
	switch (cmd) {
	case LINUX_IPC_INFO:
	case LINUX_SEM_INFO:
		return sem_info(t, cmd, arg);
	case LINUX_SETALL:
		return sem_setall(t, id, arg);
	case LINUX_SETVAL:
		if (val < 0 || val > LINUX_SEMVMX)
			return -ERANGE;
		break;
	case LINUX_IPC_SET:
		if (mm_copy_in(t->mm, &ds, arg, sizeof(ds)) != sizeof(ds))
			return -EFAULT;
		break;
	case LINUX_IPC_STAT:
	case LINUX_SEM_STAT:
	case LINUX_SEM_STAT_ANY:
	case LINUX_IPC_RMID:
	case LINUX_GETVAL:
	case LINUX_GETPID:
	case LINUX_GETNCNT:
	case LINUX_GETZCNT:
	case LINUX_GETALL:
		break;
	default:
		return -EINVAL;
	}

	pthread_mutex_lock(&sem_ids.lock);
	s = (struct sem_set *)ipc_ctl_lookup(&sem_ids, id,
					     cmd == LINUX_SEM_STAT || cmd == LINUX_SEM_STAT_ANY);
	if (!s) {
		r = -EINVAL;
		goto out_unlock;
	}
	switch (cmd) {
	case LINUX_IPC_STAT:
	case LINUX_SEM_STAT:
	case LINUX_SEM_STAT_ANY:
		r = ipc_stat_perms(&t->cred, &s->perm, cmd == LINUX_SEM_STAT_ANY);
		if (r < 0)
			break;
		memset(&ds, 0, sizeof(ds));
		ipc_fill_perm64(&ds.sem_perm, &s->perm);
		ds.sem_otime = s->otime;
		ds.sem_ctime = s->ctime;
		ds.sem_nsems = (uint64_t)s->nsems;
		r = cmd == LINUX_IPC_STAT ? 0 : s->perm.id;
		break;
	case LINUX_IPC_SET:
		r = ipc_check_owner(&t->cred, &s->perm);
		if (r < 0)
			break;
		ipc_set_perm(&s->perm, &ds.sem_perm);
		s->ctime = ipc_now();
		break;
	case LINUX_IPC_RMID:
		r = ipc_check_owner(&t->cred, &s->perm);
		if (r < 0)
			break;
		set_remove(s);
		break;
	case LINUX_GETALL:
		r = ipc_perms(&t->cred, &s->perm, 0444);
		if (r < 0)
			break;
		nvals = (size_t)s->nsems;
		vals = calloc(nvals, sizeof(*vals));
		if (!vals) {
			r = -ENOMEM;
			break;
		}
		for (size_t i = 0; i < nvals; i++)
			vals[i] = (uint16_t)s->sems[i].val;
		break;
	default: /* one semaphore */
		r = ipc_perms(&t->cred, &s->perm, cmd == LINUX_SETVAL ? 0222 : 0444);
		if (r < 0)
			break;
		if (num < 0 || num >= s->nsems) {
			r = -EINVAL;
			break;
		}
		switch (cmd) {
		case LINUX_GETVAL:
			r = s->sems[num].val;
			break;
		case LINUX_GETPID:
			r = s->sems[num].pid;
			break;
		case LINUX_GETNCNT:
			r = count_waiting(s, num, false);
			break;
		case LINUX_GETZCNT:
			r = count_waiting(s, num, true);
			break;
		case LINUX_SETVAL:
			s->sems[num].val = val;
			s->sems[num].pid = task_pid(t);
			for_each_undo(id, undo_clear, &num);
			s->ctime = ipc_now();
			waitq_wake_all(&s->wq);
			break;
		}
		break;
	}
	pthread_mutex_unlock(&sem_ids.lock);
	if (r >= 0 && cmd == LINUX_IPC_RMID)
		set_put(s);
	if (r >= 0 &&
	    (cmd == LINUX_IPC_STAT || cmd == LINUX_SEM_STAT || cmd == LINUX_SEM_STAT_ANY)) {
		long e = copy_out(t, arg, &ds, sizeof(ds));

		if (e < 0)
			return e;
	}
	if (r >= 0 && cmd == LINUX_GETALL)
		return copy_out(t, arg, vals, nvals * sizeof(*vals));
	return r;

out_unlock:
	pthread_mutex_unlock(&sem_ids.lock);
	return r;
}

/* --- process exit --- */

void ipc_sem_exit(struct thread_group *tg, int32_t pid)
{
	struct sem_undo_list *l;
	struct sem_undo *u, *tmp;

	pthread_mutex_lock(&sem_ids.lock);
	l = undo_list_of(tg, false);
	if (!l) {
		pthread_mutex_unlock(&sem_ids.lock);
		return;
	}
	list_for_each_entry_safe(u, tmp, &l->units, link) {
		struct sem_set *s = (struct sem_set *)ipc_lookup(&sem_ids, u->semid);
		bool changed = false;

		for (int i = 0; s && i < u->nsems && i < s->nsems; i++) {
			int v;

			if (!u->adj[i])
				continue;
			/* As Linux: the result is clamped to [0, SEMVMX]. */
			v = s->sems[i].val + u->adj[i];
			s->sems[i].val = v < 0 ? 0 : v > LINUX_SEMVMX ? LINUX_SEMVMX : v;
			s->sems[i].pid = pid;
			changed = true;
		}
		if (changed)
			waitq_wake_all(&s->wq);
		list_del(&u->link);
		free(u);
	}
	list_del(&l->link);
	free(l);
	pthread_mutex_unlock(&sem_ids.lock);
}

/* --- /proc/sysvipc/sem --- */

int ipc_proc_sem(FILE *out)
{
	fprintf(out,
		"       key      semid perms      nsems   uid   gid  cuid  cgid      otime      "
		"ctime\n");
	pthread_mutex_lock(&sem_ids.lock);
	for (int i = 0; i <= sem_ids.max_idx; i++) {
		struct sem_set *s = (struct sem_set *)sem_ids.slots[i];

		if (!ipc_visible(s ? &s->perm : NULL))
			continue;
		fprintf(out, "%10d %10d  %4o %10u %5u %5u %5u %5u %10lld %10lld\n", s->perm.key,
			s->perm.id, s->perm.mode, (unsigned int)s->nsems, s->perm.uid, s->perm.gid,
			s->perm.cuid, s->perm.cgid, (long long)s->otime, (long long)s->ctime);
	}
	pthread_mutex_unlock(&sem_ids.lock);
	return 0;
}

int ipc_sem_count(void)
{
	int n;

	pthread_mutex_lock(&sem_ids.lock);
	n = sem_ids.in_use;
	pthread_mutex_unlock(&sem_ids.lock);
	return n;
}

/* --- checkpoint and restore --- */

struct ipc_ids *ipc_sem_ids(void)
{
	return &sem_ids;
}

int ipc_sem_save(int (*fn)(const struct ipc_sem_state *st, void *arg), void *arg)
{
	int32_t *buf = NULL;
	int r = 0;

	pthread_mutex_lock(&sem_ids.lock);
	for (int i = 0; i <= sem_ids.max_idx && r == 0; i++) {
		struct sem_set *s = (struct sem_set *)sem_ids.slots[i];
		struct ipc_sem_state st = { 0 };
		int32_t *nb;

		/* Objects of IPC namespaces the guest made are not saved (nsproxy.h). */
		if (!s || s->perm.ns)
			continue;
		nb = realloc(buf, (size_t)s->nsems * 2 * sizeof(*buf));
		if (!nb) {
			r = -ENOMEM;
			break;
		}
		buf = nb;
		for (int j = 0; j < s->nsems; j++) {
			buf[j] = s->sems[j].val;
			buf[s->nsems + j] = s->sems[j].pid;
		}
		ipc_perm_to_state(&st.perm, &s->perm);
		st.otime = s->otime;
		st.ctime = s->ctime;
		st.nsems = s->nsems;
		st.vals = buf;
		st.pids = buf + s->nsems;
		r = fn(&st, arg);
	}
	pthread_mutex_unlock(&sem_ids.lock);
	free(buf);
	return r;
}

int ipc_sem_undo_save(int (*fn)(struct thread_group *tg, int32_t semid, int nsems,
				const int16_t *adj, void *arg),
		      void *arg)
{
	struct sem_undo_list *l;
	struct sem_undo *u;
	int r = 0;

	pthread_mutex_lock(&sem_ids.lock);
	list_for_each_entry(l, &undo_lists, link) {
		list_for_each_entry(u, &l->units, link) {
			r = fn(l->tg, u->semid, u->nsems, u->adj, arg);
			if (r < 0)
				goto out;
		}
	}
out:
	pthread_mutex_unlock(&sem_ids.lock);
	return r;
}

int ipc_sem_restore(const struct ipc_sem_state *st)
{
	struct sem_set *s;
	int r;

	if (st->nsems < 1 || st->nsems > IPC_SEM_RESTORE_MAX)
		return -EINVAL;
	for (int i = 0; i < st->nsems; i++)
		if (st->vals[i] < 0 || st->vals[i] > LINUX_SEMVMX)
			return -ERANGE;
	s = calloc(1, sizeof(*s) + (size_t)st->nsems * sizeof(s->sems[0]));
	if (!s)
		return -ENOMEM;
	refcount_init(&s->ref, 1);
	ipc_perm_from_state(&s->perm, &st->perm);
	s->nsems = st->nsems;
	s->otime = st->otime;
	s->ctime = st->ctime;
	for (int i = 0; i < st->nsems; i++) {
		s->sems[i].val = st->vals[i];
		s->sems[i].pid = st->pids[i];
	}
	waitq_init(&s->wq);
	list_init(&s->waiters);
	pthread_mutex_lock(&sem_ids.lock);
	r = ipc_insert_at(&sem_ids, &s->perm, st->perm.id);
	if (r == 0)
		used_sems += st->nsems;
	pthread_mutex_unlock(&sem_ids.lock);
	if (r < 0)
		free(s);
	return r;
}

int ipc_sem_undo_restore(struct thread_group *tg, int32_t semid, int nsems, const int16_t *adj)
{
	struct sem_set *s;
	struct sem_undo *u;
	int r = 0;

	pthread_mutex_lock(&sem_ids.lock);
	s = (struct sem_set *)ipc_lookup(&sem_ids, semid);
	if (!s || s->nsems != nsems) {
		r = -EINVAL;
		goto out;
	}
	if (find_undo(tg, s, false)) {
		r = -EEXIST;
		goto out;
	}
	u = find_undo(tg, s, true);
	if (!u) {
		r = -ENOMEM;
		goto out;
	}
	memcpy(u->adj, adj, (size_t)nsems * sizeof(u->adj[0]));
out:
	pthread_mutex_unlock(&sem_ids.lock);
	return r;
}

void ipc_sem_ns_exit(uint32_t ns)
{
	for (;;) {
		struct sem_set *s = NULL;

		pthread_mutex_lock(&sem_ids.lock);
		for (int i = 0; i <= sem_ids.max_idx && !s; i++) {
			struct sem_set *o = (struct sem_set *)sem_ids.slots[i];

			if (o && o->perm.ns == ns)
				s = o;
		}
		if (s)
			set_remove(s);
		pthread_mutex_unlock(&sem_ids.lock);
		if (!s)
			return;
		set_put(s); /* the table's reference */
	}
}
