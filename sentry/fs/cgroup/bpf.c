/* SPDX-License-Identifier: Apache-2.0 */
/*
 * BPF_CGROUP_DEVICE programs attached to cgroups (cgroup.h): Linux's attach rules
 * (kernel/bpf/cgroup.c) and its effective programs: a task's access runs the programs of its
 * cgroup and of each ancestor up to the first attached without BPF_F_ALLOW_MULTI, each of which
 * must allow it. Programs are the sentry's (sentry/kernel/bpf.c): nothing reaches the host.
 *
 * Locks: cgroup_lock guards every cgroup's dev_progs, dev_nprogs and dev_flags; programs run
 * under it (each is bounded: forward jumps only, at most BPF_DEV_MAX_INSNS).
 */
#include <errno.h>
#include <string.h>

#include "sentry/fs/cgroup/internal.h"
#include "sentry/kernel/bpf.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"

#define F_ALLOW_OVERRIDE 1u
#define F_ALLOW_MULTI 2u
#define F_REPLACE 4u
#define DEVCG_ACC_MKNOD 1u
#define DEVCG_ACC_READ 2u
#define DEVCG_ACC_WRITE 4u
#define DEVCG_DEV_BLOCK 1u
#define DEVCG_DEV_CHAR 2u
/* sentry/fs/dev's access bits (dev.h's DEVFS_ACC_*). */
#define ACC_READ 0x1u
#define ACC_WRITE 0x2u
#define ACC_MKNOD 0x4u

void cgroup_bpf_release(struct cgroup *cg)
{
	for (int i = 0; i < cg->dev_nprogs; i++)
		bpf_prog_put(cg->dev_progs[i]);
	cg->dev_nprogs = 0;
}

/* Linux's hierarchy_allows_attach: no ancestor has a program attached without a flag. */
static bool allows_attach_locked(struct cgroup *cg)
{
	for (struct cgroup *p = cg->parent; p; p = p->parent)
		if (p->dev_nprogs)
			return p->dev_flags & (F_ALLOW_OVERRIDE | F_ALLOW_MULTI);
	return true;
}

static int find_locked(struct cgroup *cg, struct bpf_prog *p)
{
	for (int i = 0; i < cg->dev_nprogs; i++)
		if (cg->dev_progs[i] == p)
			return i;
	return -1;
}

int cgroup_bpf_attach(struct cgroup *cg, struct bpf_prog *p, uint32_t flags,
		      struct bpf_prog *replace)
{
	uint32_t saved = flags & (F_ALLOW_OVERRIDE | F_ALLOW_MULTI);
	int ret = 0, at;

	if ((flags & ~(F_ALLOW_OVERRIDE | F_ALLOW_MULTI | F_REPLACE)) ||
	    saved == (F_ALLOW_OVERRIDE | F_ALLOW_MULTI) ||
	    ((flags & F_REPLACE) && !(flags & F_ALLOW_MULTI)) || (replace && !(flags & F_REPLACE)))
		return -EINVAL;
	pthread_mutex_lock(&cgroup_lock);
	if (!allows_attach_locked(cg)) {
		ret = -EPERM;
	} else if (cg->dev_nprogs && cg->dev_flags != saved) {
		ret = -EPERM; /* programs attached with other flags: no mixing */
	} else if (saved & F_ALLOW_MULTI) {
		if (find_locked(cg, p) >= 0) {
			ret = -EINVAL; /* Linux's find_attach_entry: not the same program twice */
		} else if (flags & F_REPLACE) {
			at = replace ? find_locked(cg, replace) : -1;
			if (at < 0) {
				ret = -ENOENT;
			} else {
				bpf_prog_get(p);
				bpf_prog_put(cg->dev_progs[at]);
				cg->dev_progs[at] = p;
			}
		} else if (cg->dev_nprogs >= CG_BPF_MAX_PROGS) {
			ret = -E2BIG;
		} else {
			bpf_prog_get(p);
			cg->dev_progs[cg->dev_nprogs++] = p;
		}
	} else {
		/* One program: attaching replaces it. */
		bpf_prog_get(p);
		if (cg->dev_nprogs)
			bpf_prog_put(cg->dev_progs[0]);
		cg->dev_progs[0] = p;
		cg->dev_nprogs = 1;
	}
	if (ret == 0)
		cg->dev_flags = saved;
	pthread_mutex_unlock(&cgroup_lock);
	return ret;
}

int cgroup_bpf_detach(struct cgroup *cg, struct bpf_prog *p)
{
	int ret = 0, at;

	pthread_mutex_lock(&cgroup_lock);
	if (!cg->dev_nprogs) {
		ret = -ENOENT;
	} else if (!p) {
		/* Linux's find_detach_entry: only a single non-multi program goes without one. */
		if (cg->dev_flags & F_ALLOW_MULTI) {
			ret = -EINVAL;
		} else {
			bpf_prog_put(cg->dev_progs[0]);
			cg->dev_nprogs = 0;
		}
	} else if ((at = find_locked(cg, p)) < 0) {
		ret = -ENOENT;
	} else {
		bpf_prog_put(cg->dev_progs[at]);
		memmove(&cg->dev_progs[at], &cg->dev_progs[at + 1],
			(size_t)(cg->dev_nprogs - at - 1) * sizeof(cg->dev_progs[0]));
		cg->dev_nprogs--;
	}
	if (ret == 0 && !cg->dev_nprogs)
		cg->dev_flags = 0;
	pthread_mutex_unlock(&cgroup_lock);
	return ret;
}

/* Calls fn on each effective program of cg (Linux's compute_effective_progs order) until it
 * returns false. cgroup_lock held. */
static void each_effective_locked(struct cgroup *cg, bool (*fn)(struct bpf_prog *, void *),
				  void *arg)
{
	int cnt = 0;

	for (struct cgroup *p = cg; p; p = p->parent) {
		if (cnt && !(p->dev_flags & F_ALLOW_MULTI))
			continue;
		for (int i = 0; i < p->dev_nprogs; i++)
			if (!fn(p->dev_progs[i], arg))
				return;
		cnt += p->dev_nprogs;
	}
}

struct query {
	uint32_t *ids, max, n;
};

static bool query_fn(struct bpf_prog *p, void *arg)
{
	struct query *q = arg;

	if (q->n < q->max && q->ids)
		q->ids[q->n] = p->id;
	q->n++;
	return true;
}

int cgroup_bpf_query(struct cgroup *cg, bool effective, uint32_t *flags, uint32_t *ids,
		     uint32_t max, uint32_t *count)
{
	struct query q = { .ids = ids, .max = max };

	pthread_mutex_lock(&cgroup_lock);
	if (effective) {
		each_effective_locked(cg, query_fn, &q);
		*flags = 0;
	} else {
		for (int i = 0; i < cg->dev_nprogs; i++)
			query_fn(cg->dev_progs[i], &q);
		*flags = cg->dev_flags;
	}
	pthread_mutex_unlock(&cgroup_lock);
	*count = q.n;
	return ids && q.n > max ? -ENOSPC : 0;
}

struct run {
	struct bpf_dev_ctx ctx;
	bool denied;
};

static bool run_fn(struct bpf_prog *p, void *arg)
{
	struct run *r = arg;

	if (bpf_dev_run(p->insns, p->n, p->aux, &r->ctx) == 0)
		r->denied = true;
	return !r->denied;
}

int cgroup_bpf_dev_check(struct task *t, char type, uint32_t major, uint32_t minor,
			 unsigned int access)
{
	struct run r = { 0 };
	uint32_t acc = 0;
	struct cgroup *cg;

	if (!t || !t->tg)
		return 0;
	if (access & ACC_READ)
		acc |= DEVCG_ACC_READ;
	if (access & ACC_WRITE)
		acc |= DEVCG_ACC_WRITE;
	if (access & ACC_MKNOD)
		acc |= DEVCG_ACC_MKNOD;
	r.ctx.access_type = (acc << 16) | (type == 'b' ? DEVCG_DEV_BLOCK : DEVCG_DEV_CHAR);
	r.ctx.major = major;
	r.ctx.minor = minor;
	cg = cgroup_tg_get(t->k, t->tg);
	pthread_mutex_lock(&cgroup_lock);
	each_effective_locked(cg, run_fn, &r);
	pthread_mutex_unlock(&cgroup_lock);
	cgroup_put(cg);
	return r.denied ? -EPERM : 0;
}
