/* SPDX-License-Identifier: Apache-2.0 */
/*
 * System V IPC, what the families share (Linux's ipc/util.c): id tables, keys, permissions.
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/ipc_priv.h"
#include "sentry/kernel/nsproxy.h"
#include "sentry/kernel/sysctl.h"
#include "sentry/kernel/task.h"

/* Linux's ipc_min_cycle (RADIX_TREE_MAP_SIZE): indexes cycle through at least this many. */
#define IPC_MIN_CYCLE 64

int64_t ipc_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec;
}

uint64_t ipc_sysctl_u64(int id)
{
	char buf[32];

	if (sysctl_read((enum sysctl_id)id, buf, sizeof(buf)) <= 0)
		return 0;
	return strtoull(buf, NULL, 10);
}

uint32_t ipc_cur_ns(void)
{
	struct task *t = task_current();

	return t && t->ns ? t->ns->ipc->id : 0;
}

struct ipc_kperm *ipc_find_key(struct ipc_ids *ids, int32_t key)
{
	uint32_t ns = ipc_cur_ns();

	for (int i = 0; i <= ids->max_idx; i++) {
		struct ipc_kperm *p = ids->slots[i];

		if (p && p->key == key && p->ns == ns)
			return p;
	}
	return NULL;
}

static int grow(struct ipc_ids *ids, int need)
{
	int ncap = ids->cap ? ids->cap : IPC_MIN_CYCLE;
	struct ipc_kperm **n;

	while (ncap < need)
		ncap *= 2;
	if (ncap > IPC_MNI)
		ncap = IPC_MNI;
	if (ncap <= ids->cap)
		return 0;
	n = realloc(ids->slots, (size_t)ncap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	memset(n + ids->cap, 0, (size_t)(ncap - ids->cap) * sizeof(*n));
	ids->slots = n;
	ids->cap = ncap;
	return 0;
}

/* First free index in [from, end), or -1. */
static int free_slot(struct ipc_ids *ids, int from, int end)
{
	for (int i = from; i < end; i++)
		if (!ids->slots[i])
			return i;
	return -1;
}

int ipc_add(struct ipc_ids *ids, struct ipc_kperm *p, int limit)
{
	int end, idx, r;

	if (limit > IPC_MNI)
		limit = IPC_MNI;
	if (ids->in_use >= limit)
		return -ENOSPC;
	/* As Linux 6.x: cycle through max(in_use * 3/2, 64) indexes before reusing one. */
	end = MAX(ids->in_use * 3 / 2, IPC_MIN_CYCLE);
	if (end > IPC_MNI)
		end = IPC_MNI;
	r = grow(ids, end);
	if (r < 0)
		return r;
	idx = ids->last_idx + 1 < end ? free_slot(ids, ids->last_idx + 1, end) : -1;
	if (idx < 0)
		idx = free_slot(ids, 0, end);
	if (idx < 0)
		return -ENOSPC;
	if (idx <= ids->last_idx) {
		ids->seq++;
		if (ids->seq >= IPC_SEQ_MAX)
			ids->seq = 0;
	}
	ids->last_idx = idx;
	ids->slots[idx] = p;
	ids->in_use++;
	if (idx > ids->max_idx)
		ids->max_idx = idx;
	p->seq = ids->seq;
	p->id = (int)(p->seq * IPC_ID_MULT + (uint32_t)idx);
	p->deleted = false;
	p->ns = ipc_cur_ns();
	return p->id;
}

int ipc_insert_at(struct ipc_ids *ids, struct ipc_kperm *p, int32_t id)
{
	int idx, r;

	if (id < 0 || (uint32_t)id / IPC_ID_MULT >= IPC_SEQ_MAX)
		return -EINVAL;
	idx = id % IPC_ID_MULT;
	r = grow(ids, idx + 1);
	if (r < 0)
		return r;
	if (idx >= ids->cap)
		return -EINVAL;
	if (ids->slots[idx])
		return -EEXIST;
	ids->slots[idx] = p;
	ids->in_use++;
	if (idx > ids->max_idx)
		ids->max_idx = idx;
	p->seq = (uint32_t)id / IPC_ID_MULT;
	p->id = id;
	p->deleted = false;
	return 0;
}

void ipc_perm_from_state(struct ipc_kperm *p, const struct ipc_perm_state *st)
{
	p->key = st->key;
	p->uid = st->uid;
	p->gid = st->gid;
	p->cuid = st->cuid;
	p->cgid = st->cgid;
	p->mode = st->mode;
}

void ipc_perm_to_state(struct ipc_perm_state *st, const struct ipc_kperm *p)
{
	st->key = p->key;
	st->uid = p->uid;
	st->gid = p->gid;
	st->cuid = p->cuid;
	st->cgid = p->cgid;
	st->mode = p->mode;
	st->id = p->id;
}

void ipc_ids_get_state(struct ipc_ids *ids, struct ipc_ids_state *out)
{
	pthread_mutex_lock(&ids->lock);
	out->seq = ids->seq;
	out->last_idx = ids->last_idx;
	pthread_mutex_unlock(&ids->lock);
}

int ipc_ids_set_state(struct ipc_ids *ids, const struct ipc_ids_state *in)
{
	if (in->seq >= IPC_SEQ_MAX || in->last_idx < -1 || in->last_idx >= IPC_MNI)
		return -EINVAL;
	pthread_mutex_lock(&ids->lock);
	ids->seq = in->seq;
	ids->last_idx = in->last_idx;
	pthread_mutex_unlock(&ids->lock);
	return 0;
}

void ipc_remove(struct ipc_ids *ids, struct ipc_kperm *p)
{
	int idx = p->id % IPC_ID_MULT;

	if (p->deleted || idx >= ids->cap || ids->slots[idx] != p)
		return;
	ids->slots[idx] = NULL;
	ids->in_use--;
	p->deleted = true;
	while (ids->max_idx >= 0 && !ids->slots[ids->max_idx])
		ids->max_idx--;
}

struct ipc_kperm *ipc_lookup(struct ipc_ids *ids, int id)
{
	struct ipc_kperm *p;

	if (id < 0)
		return NULL;
	p = ipc_at(ids, id % IPC_ID_MULT);
	if (!p || p->seq != (uint32_t)(id / IPC_ID_MULT))
		return NULL;
	return p;
}

struct ipc_kperm *ipc_at(struct ipc_ids *ids, int idx)
{
	if (idx < 0 || idx > ids->max_idx || !ipc_visible(ids->slots[idx]))
		return NULL;
	return ids->slots[idx];
}

struct ipc_kperm *ipc_ctl_lookup(struct ipc_ids *ids, int id, bool by_index)
{
	return by_index ? ipc_at(ids, id) : ipc_lookup(ids, id);
}

int ipc_stat_perms(const struct cred *c, const struct ipc_kperm *p, bool any)
{
	return any ? 0 : ipc_perms(c, p, 0444);
}

int ipc_info_ret(struct ipc_ids *ids)
{
	return ids->max_idx < 0 ? 0 : ids->max_idx;
}

void ipc_init_perm(struct ipc_kperm *p, const struct cred *c, int32_t key, int flags)
{
	p->key = key;
	p->uid = p->cuid = c->euid;
	p->gid = p->cgid = c->egid;
	p->mode = (uint32_t)flags & 0777;
}

static bool in_group(const struct cred *c, uint32_t gid)
{
	if (c->egid == gid)
		return true;
	for (int i = 0; i < c->ngroups; i++)
		if (c->groups[i] == gid)
			return true;
	return false;
}

int ipc_perms(const struct cred *c, const struct ipc_kperm *p, int flag)
{
	uint32_t requested = ((uint32_t)flag >> 6 | (uint32_t)flag >> 3 | (uint32_t)flag) & 7;
	uint32_t granted = p->mode;

	if (c->euid == p->cuid || c->euid == p->uid)
		granted >>= 6;
	else if (in_group(c, p->cgid) || in_group(c, p->gid))
		granted >>= 3;
	if ((requested & ~granted & 7) && !cred_capable(c, CAP_IPC_OWNER))
		return -EACCES;
	return 0;
}

int ipc_check_owner(const struct cred *c, const struct ipc_kperm *p)
{
	if (c->euid == p->uid || c->euid == p->cuid || cred_capable(c, CAP_SYS_ADMIN))
		return 0;
	return -EPERM;
}

void ipc_set_perm(struct ipc_kperm *p, const struct linux_ipc64_perm *in)
{
	p->uid = in->uid;
	p->gid = in->gid;
	p->mode = (p->mode & ~0777u) | (in->mode & 0777u);
}

void ipc_fill_perm64(struct linux_ipc64_perm *out, const struct ipc_kperm *p)
{
	memset(out, 0, sizeof(*out));
	out->key = p->key;
	out->uid = p->uid;
	out->gid = p->gid;
	out->cuid = p->cuid;
	out->cgid = p->cgid;
	out->mode = p->mode;
	out->seq = (uint16_t)p->seq;
}

long ipc_get(struct task *t, struct ipc_ids *ids, int32_t key, int flags,
	     const struct ipc_get_ops *ops, void *arg)
{
	struct ipc_kperm *p;
	long r;

	pthread_mutex_lock(&ids->lock);
	if (key == LINUX_IPC_PRIVATE) {
		r = ops->create(t, ids, arg);
		goto out;
	}
	p = ipc_find_key(ids, key);
	if (!p) {
		r = (flags & LINUX_IPC_CREAT) ? ops->create(t, ids, arg) : -ENOENT;
		goto out;
	}
	if ((flags & LINUX_IPC_CREAT) && (flags & LINUX_IPC_EXCL)) {
		r = -EEXIST;
		goto out;
	}
	r = ops->more_checks ? ops->more_checks(p, arg) : 0;
	if (r == 0)
		r = ipc_perms(&t->cred, p, flags);
	if (r == 0)
		r = p->id;
out:
	pthread_mutex_unlock(&ids->lock);
	return r;
}

static struct ipc_ids *family_ids(enum ipc_family fam)
{
	switch (fam) {
	case IPC_FAMILY_SHM:
		return ipc_shm_ids();
	case IPC_FAMILY_SEM:
		return ipc_sem_ids();
	default:
		return ipc_msg_ids();
	}
}

void ipc_ids_save(enum ipc_family fam, struct ipc_ids_state *out)
{
	ipc_ids_get_state(family_ids(fam), out);
}

int ipc_ids_restore(enum ipc_family fam, const struct ipc_ids_state *in)
{
	return ipc_ids_set_state(family_ids(fam), in);
}
