/* SPDX-License-Identifier: Apache-2.0 */
/*
 * System V IPC and POSIX message queues in a checkpoint image (sentry/state/README.md, "IPC"):
 * `IpcState` (image.proto) holds every segment, semaphore set, SEM_UNDO list, message queue and
 * POSIX queue with the ids they had, and each family's id allocation state; files of kind
 * STATE_FILE_SHM (a shmat's attach, which the segment's VMAs map) and STATE_FILE_MQUEUE (an
 * mq_open descriptor) name their object.
 *
 * A segment's pages are those of its memfd, saved as a nameless tmpfs file (fs.c, kind
 * STATE_FILE_MEMFD): the restore puts them at the same memory-file offsets as the VMAs of its
 * attaches, so an attachment and the segment are the same memory again.
 *
 * Tasks blocked in semop, msgsnd, msgrcv, mq_timedsend or mq_timedreceive are not waiters in
 * the image: the freeze made their calls return to be restarted, and they block again after the
 * restore. mq_notify registrations are refused (not saved yet).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/err.h"
#include "sentry/kernel/ipc.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/mqueue.h"
#include "sentry/kernel/task.h"
#include "sentry/state/state.h"
#include "sentry/vfs/fs.h"
#include "sentry/vfs/vfs.h"

#define MSG_NEW(s, T, init)                          \
	({                                           \
		T *m_ = state_alloc((s), sizeof(T)); \
		if (m_)                              \
			init(m_);                    \
		m_;                                  \
	})

/* An arena array of message pointers that grows (doubling; the old copy stays in the arena). */
struct grow {
	size_t cap;
};

static int push(struct state_save *s, void ***v, size_t *n, struct grow *g, void *item)
{
	if (*n == g->cap) {
		size_t nc = g->cap ? g->cap * 2 : 8;
		void **nv = state_alloc(s, nc * sizeof(void *));

		if (!nv)
			return -ENOMEM;
		if (*n)
			memcpy(nv, *v, *n * sizeof(void *));
		*v = nv;
		g->cap = nc;
	}
	(*v)[(*n)++] = item;
	return 0;
}

#define PUSH(s, arr, n, g, item) push((s), (void ***)&(arr), &(n), (g), (item))

struct state_ipc_save {
	struct state_save *s;
	Husk__State__IpcState *st;
	struct grow g_shms, g_sems, g_undos, g_msgs, g_mqs, g_cur;
	struct file **memfds; /* referenced, by index in st->shms */
	Husk__State__MsgQueue *cur_msgq; /* the queue the message callbacks fill */
	Husk__State__Mqueue *cur_mq;
	struct state_ptrmap mqs; /* struct mqueue * -> Mqueue.id */
};

static Husk__State__IpcPerm *save_perm(struct state_save *s, const struct ipc_perm_state *p)
{
	Husk__State__IpcPerm *m = MSG_NEW(s, Husk__State__IpcPerm, husk__state__ipc_perm__init);

	if (!m)
		return NULL;
	m->id = p->id;
	m->key = p->key;
	m->uid = p->uid;
	m->gid = p->gid;
	m->cuid = p->cuid;
	m->cgid = p->cgid;
	m->mode = p->mode;
	return m;
}

static Husk__State__IpcIds *save_ids(struct state_save *s, enum ipc_family fam)
{
	Husk__State__IpcIds *m = MSG_NEW(s, Husk__State__IpcIds, husk__state__ipc_ids__init);
	struct ipc_ids_state st;

	if (!m)
		return NULL;
	ipc_ids_save(fam, &st);
	m->seq = st.seq;
	m->last_idx = st.last_idx;
	return m;
}

static int save_shm(const struct ipc_shm_state *st, void *arg)
{
	struct state_ipc_save *is = arg;
	struct state_save *s = is->s;
	Husk__State__ShmSeg *m = MSG_NEW(s, Husk__State__ShmSeg, husk__state__shm_seg__init);
	struct file **nv;

	if (!m || !(m->perm = save_perm(s, &st->perm)))
		return -ENOMEM;
	m->size = st->size;
	m->atime = st->atime;
	m->dtime = st->dtime;
	m->ctime = st->ctime;
	m->cpid = st->cpid;
	m->lpid = st->lpid;
	nv = realloc(is->memfds, (is->st->n_shms + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	is->memfds = nv;
	/* Saved once the family's lock is dropped (fs.c takes the filesystems' locks). */
	file_get(st->memfd);
	nv[is->st->n_shms] = st->memfd;
	if (PUSH(s, is->st->shms, is->st->n_shms, &is->g_shms, m) < 0) {
		file_put(st->memfd);
		return -ENOMEM;
	}
	return 0;
}

static int save_sem(const struct ipc_sem_state *st, void *arg)
{
	struct state_ipc_save *is = arg;
	struct state_save *s = is->s;
	Husk__State__SemSet *m = MSG_NEW(s, Husk__State__SemSet, husk__state__sem_set__init);
	size_t n = (size_t)st->nsems;

	if (!m || !(m->perm = save_perm(s, &st->perm)))
		return -ENOMEM;
	m->otime = st->otime;
	m->ctime = st->ctime;
	m->vals = state_alloc(s, n * sizeof(int32_t));
	m->pids = state_alloc(s, n * sizeof(int32_t));
	if (!m->vals || !m->pids)
		return -ENOMEM;
	memcpy(m->vals, st->vals, n * sizeof(int32_t));
	memcpy(m->pids, st->pids, n * sizeof(int32_t));
	m->n_vals = m->n_pids = n;
	return PUSH(s, is->st->sems, is->st->n_sems, &is->g_sems, m);
}

static int save_undo(struct thread_group *tg, int32_t semid, int nsems, const int16_t *adj,
		     void *arg)
{
	struct state_ipc_save *is = arg;
	struct state_save *s = is->s;
	Husk__State__SemUndo *m = MSG_NEW(s, Husk__State__SemUndo, husk__state__sem_undo__init);

	if (!m)
		return -ENOMEM;
	m->pid = tg->pid;
	m->semid = semid;
	m->n_adj = (size_t)nsems;
	m->adj = state_alloc(s, (size_t)nsems * sizeof(int32_t));
	if (!m->adj)
		return -ENOMEM;
	for (int i = 0; i < nsems; i++)
		m->adj[i] = adj[i];
	return PUSH(s, is->st->sem_undos, is->st->n_sem_undos, &is->g_undos, m);
}

static int save_msgq(const struct ipc_msg_state *st, void *arg)
{
	struct state_ipc_save *is = arg;
	struct state_save *s = is->s;
	Husk__State__MsgQueue *m = MSG_NEW(s, Husk__State__MsgQueue, husk__state__msg_queue__init);

	if (!m || !(m->perm = save_perm(s, &st->perm)))
		return -ENOMEM;
	m->stime = st->stime;
	m->rtime = st->rtime;
	m->ctime = st->ctime;
	m->qbytes = st->qbytes;
	m->lspid = st->lspid;
	m->lrpid = st->lrpid;
	is->cur_msgq = m;
	is->g_cur.cap = 0;
	return PUSH(s, is->st->msgs, is->st->n_msgs, &is->g_msgs, m);
}

static int save_bytes(struct state_save *s, ProtobufCBinaryData *out, const void *p, size_t len)
{
	out->data = state_alloc(s, len ? len : 1);
	if (!out->data)
		return -ENOMEM;
	if (len)
		memcpy(out->data, p, len);
	out->len = len;
	return 0;
}

static int save_msg(int64_t mtype, const void *text, size_t len, void *arg)
{
	struct state_ipc_save *is = arg;
	struct state_save *s = is->s;
	Husk__State__SysvMsg *m = MSG_NEW(s, Husk__State__SysvMsg, husk__state__sysv_msg__init);

	if (!m || save_bytes(s, &m->text, text, len) < 0)
		return -ENOMEM;
	m->mtype = mtype;
	return PUSH(s, is->cur_msgq->msgs, is->cur_msgq->n_msgs, &is->g_cur, m);
}

static int save_mq(struct mqueue *q, const struct mqueue_state *st, void *arg)
{
	struct state_ipc_save *is = arg;
	struct state_save *s = is->s;
	Husk__State__Mqueue *m = MSG_NEW(s, Husk__State__Mqueue, husk__state__mqueue__init);

	if (!m)
		return -ENOMEM;
	m->id = state_ptrmap_add(&is->mqs, q);
	m->name = state_strdup(s, st->name);
	if (!m->id || !m->name)
		return -ENOMEM;
	m->linked = st->linked;
	m->uid = st->uid;
	m->gid = st->gid;
	m->mode = st->mode;
	m->ctime_sec = st->ctime.tv_sec;
	m->ctime_nsec = st->ctime.tv_nsec;
	m->maxmsg = st->maxmsg;
	m->msgsize = st->msgsize;
	is->cur_mq = m;
	is->g_cur.cap = 0;
	return PUSH(s, is->st->mqueues, is->st->n_mqueues, &is->g_mqs, m);
}

static int save_mq_msg(uint32_t prio, const void *data, size_t len, void *arg)
{
	struct state_ipc_save *is = arg;
	struct state_save *s = is->s;
	Husk__State__MqMsg *m = MSG_NEW(s, Husk__State__MqMsg, husk__state__mq_msg__init);

	if (!m || save_bytes(s, &m->data, data, len) < 0)
		return -ENOMEM;
	m->prio = prio;
	return PUSH(s, is->cur_mq->msgs, is->cur_mq->n_msgs, &is->g_cur, m);
}

int state_ipc_save(struct state_save *s, Husk__State__Image *img)
{
	struct state_ipc_save *is = calloc(1, sizeof(*is));
	Husk__State__IpcState *st = MSG_NEW(s, Husk__State__IpcState, husk__state__ipc_state__init);
	int r;

	if (!is || !st) {
		free(is);
		return state_save_fail(s, -ENOMEM, "out of memory");
	}
	s->ipc = is;
	is->s = s;
	is->st = st;
	st->shm_ids = save_ids(s, IPC_FAMILY_SHM);
	st->sem_ids = save_ids(s, IPC_FAMILY_SEM);
	st->msg_ids = save_ids(s, IPC_FAMILY_MSG);
	if (!st->shm_ids || !st->sem_ids || !st->msg_ids)
		return state_save_fail(s, -ENOMEM, "out of memory");
	r = ipc_shm_save(save_shm, is);
	if (r == 0)
		r = ipc_sem_save(save_sem, is);
	if (r == 0)
		r = ipc_sem_undo_save(save_undo, is);
	if (r == 0)
		r = ipc_msg_save(save_msgq, save_msg, is);
	if (r < 0)
		return state_save_fail(s, r, "saving System V IPC: %s", strerror(-r));
	r = mqueue_save(save_mq, save_mq_msg, is);
	if (r == -EOPNOTSUPP)
		return state_save_fail(s, r,
				       "a POSIX message queue has an mq_notify registration: "
				       "not saved yet");
	if (r < 0)
		return state_save_fail(s, r, "saving POSIX message queues: %s", strerror(-r));
	/* Each segment's pages: its memfd, a nameless tmpfs file. */
	for (size_t i = 0; i < st->n_shms; i++) {
		st->shms[i]->memfd = state_save_file_id(s, is->memfds[i]);
		if (!st->shms[i]->memfd)
			return -EINVAL;
	}
	img->ipc = st;
	return 0;
}

bool state_ipc_file(struct file *f)
{
	return ipc_shm_is_attach(f) || mqueue_of_file(f);
}

int state_ipc_file_save(struct state_save *s, struct file *f, Husk__State__File *out)
{
	struct mqueue *q;

	if (!s->ipc)
		return state_save_fail(s, -EINVAL, "files saved before IPC objects");
	if (ipc_shm_is_attach(f)) {
		out->kind = STATE_FILE_SHM;
		out->has_shm = true;
		out->shm = ipc_shm_attach_id(f);
		return 0;
	}
	q = mqueue_of_file(f);
	out->mqueue = q ? state_ptrmap_find(&s->ipc->mqs, q) : 0;
	if (!out->mqueue)
		return state_save_fail(s, -EINVAL, "a message queue file without its queue");
	out->kind = STATE_FILE_MQUEUE;
	out->has_mqueue = true;
	return 0;
}

void state_ipc_save_end(struct state_save *s)
{
	struct state_ipc_save *is = s->ipc;

	if (!is)
		return;
	for (size_t i = 0; is->memfds && i < is->st->n_shms; i++)
		file_put(is->memfds[i]);
	free(is->memfds);
	state_ptrmap_free(&is->mqs);
	free(is);
	s->ipc = NULL;
}

/* --- restore --- */

struct state_ipc_restore {
	struct mqueue **mqs; /* by index in IpcState.mqueues (referenced) */
	size_t nmqs;
};

static void perm_from(struct ipc_perm_state *p, const Husk__State__IpcPerm *m)
{
	p->id = m->id;
	p->key = m->key;
	p->uid = m->uid;
	p->gid = m->gid;
	p->cuid = m->cuid;
	p->cgid = m->cgid;
	p->mode = m->mode;
}

static int restore_ids(struct state_restore *r, enum ipc_family fam, const char *what,
		       const Husk__State__IpcIds *m)
{
	struct ipc_ids_state st = { .seq = m->seq, .last_idx = m->last_idx };

	if (ipc_ids_restore(fam, &st) < 0)
		return state_restore_fail(r, -EINVAL, "%s ids: sequence %u, index %d", what, m->seq,
					  m->last_idx);
	return 0;
}

static int restore_shm(struct state_restore *r, const Husk__State__ShmSeg *m)
{
	struct ipc_shm_state st = {
		.size = m->size,
		.atime = m->atime,
		.dtime = m->dtime,
		.ctime = m->ctime,
		.cpid = m->cpid,
		.lpid = m->lpid,
	};
	struct vfs_attr a;
	int ret;

	perm_from(&st.perm, m->perm);
	st.memfd = state_restore_file_id(r, m->memfd);
	if (!st.memfd)
		return -EINVAL;
	/* The segment's size is its memfd's (shmget made it so). */
	if (file_getattr(st.memfd, &a) < 0 || a.size < 0 || (uint64_t)a.size != m->size)
		return state_restore_fail(r, -EINVAL, "shm %d: its memfd is not of its size",
					  m->perm->id);
	ret = ipc_shm_restore(&st);
	if (ret < 0)
		return state_restore_fail(r, ret, "shm %d cannot be restored: %s", m->perm->id,
					  strerror(-ret));
	return 0;
}

static int restore_sem(struct state_restore *r, const Husk__State__SemSet *m)
{
	struct ipc_sem_state st = {
		.otime = m->otime,
		.ctime = m->ctime,
		.nsems = (int)m->n_vals,
		.vals = m->vals,
		.pids = m->pids,
	};
	int ret;

	perm_from(&st.perm, m->perm);
	if (m->n_vals != m->n_pids || m->n_vals > IPC_SEM_RESTORE_MAX)
		return state_restore_fail(r, -EINVAL, "semaphore set %d: bad counts", m->perm->id);
	ret = ipc_sem_restore(&st);
	if (ret < 0)
		return state_restore_fail(r, ret, "semaphore set %d cannot be restored: %s",
					  m->perm->id, strerror(-ret));
	return 0;
}

static int restore_msgq(struct state_restore *r, const Husk__State__MsgQueue *m)
{
	struct ipc_msg_state st = {
		.stime = m->stime,
		.rtime = m->rtime,
		.ctime = m->ctime,
		.qbytes = m->qbytes,
		.lspid = m->lspid,
		.lrpid = m->lrpid,
	};
	int ret;

	perm_from(&st.perm, m->perm);
	ret = ipc_msg_restore(&st);
	for (size_t i = 0; i < m->n_msgs && ret == 0; i++)
		ret = ipc_msg_restore_msg(m->perm->id, m->msgs[i]->mtype, m->msgs[i]->text.data,
					  m->msgs[i]->text.len);
	if (ret < 0)
		return state_restore_fail(r, ret, "message queue %d cannot be restored: %s",
					  m->perm->id, strerror(-ret));
	return 0;
}

static int restore_mq(struct state_restore *r, size_t i, const Husk__State__Mqueue *m)
{
	struct mqueue_state st = {
		.name = m->name,
		.linked = m->linked,
		.uid = m->uid,
		.gid = m->gid,
		.mode = m->mode,
		.ctime = { .tv_sec = m->ctime_sec, .tv_nsec = m->ctime_nsec },
		.maxmsg = m->maxmsg,
		.msgsize = m->msgsize,
	};
	struct mqueue *q = mqueue_restore(&st);
	int ret = 0;

	if (IS_ERR(q))
		return state_restore_fail(r, (int)PTR_ERR(q),
					  "POSIX message queue %u cannot be restored: %s", m->id,
					  strerror((int)-PTR_ERR(q)));
	r->ipc->mqs[i] = q;
	for (size_t j = 0; j < m->n_msgs && ret == 0; j++)
		ret = mqueue_restore_msg(q, m->msgs[j]->prio, m->msgs[j]->data.data,
					 m->msgs[j]->data.len);
	if (ret < 0)
		return state_restore_fail(r, ret, "POSIX message queue %u: a message: %s", m->id,
					  strerror(-ret));
	return 0;
}

int state_ipc_restore(struct state_restore *r)
{
	const Husk__State__IpcState *in = r->img->ipc;
	int ret = 0;

	if (!in)
		return 0;
	r->ipc = calloc(1, sizeof(*r->ipc));
	if (r->ipc)
		r->ipc->mqs = calloc(in->n_mqueues + 1, sizeof(*r->ipc->mqs));
	if (!r->ipc || !r->ipc->mqs)
		return state_restore_fail(r, -ENOMEM, "out of memory");
	r->ipc->nmqs = in->n_mqueues;
	if (restore_ids(r, IPC_FAMILY_SHM, "shm", in->shm_ids) < 0 ||
	    restore_ids(r, IPC_FAMILY_SEM, "semaphore", in->sem_ids) < 0 ||
	    restore_ids(r, IPC_FAMILY_MSG, "message queue", in->msg_ids) < 0)
		return -EINVAL;
	for (size_t i = 0; i < in->n_shms && ret == 0; i++)
		ret = restore_shm(r, in->shms[i]);
	for (size_t i = 0; i < in->n_sems && ret == 0; i++)
		ret = restore_sem(r, in->sems[i]);
	for (size_t i = 0; i < in->n_msgs && ret == 0; i++)
		ret = restore_msgq(r, in->msgs[i]);
	for (size_t i = 0; i < in->n_mqueues && ret == 0; i++)
		ret = restore_mq(r, i, in->mqueues[i]);
	return ret;
}

int state_ipc_restore_undo(struct state_restore *r)
{
	const Husk__State__IpcState *in = r->img->ipc;

	for (size_t i = 0; in && i < in->n_sem_undos; i++) {
		const Husk__State__SemUndo *m = in->sem_undos[i];
		_cleanup_free_ int16_t *adj = NULL;
		struct thread_group *tg = NULL;
		struct task *t;
		int ret;

		if (!m->n_adj || m->n_adj > IPC_SEM_RESTORE_MAX)
			return state_restore_fail(r, -EINVAL, "SEM_UNDO %zu: %zu semaphores", i,
						  m->n_adj);
		adj = calloc(m->n_adj, sizeof(*adj));
		if (!adj)
			return state_restore_fail(r, -ENOMEM, "out of memory");
		for (size_t j = 0; j < m->n_adj; j++) {
			if (m->adj[j] < -LINUX_SEMAEM - 1 || m->adj[j] > LINUX_SEMAEM)
				return state_restore_fail(r, -EINVAL, "SEM_UNDO %zu: adjustment %d",
							  i, m->adj[j]);
			adj[j] = (int16_t)m->adj[j];
		}
		pthread_mutex_lock(&r->k->tree_lock);
		t = pid_lookup(r->k, m->pid);
		if (t && t->tg->pid == m->pid && t->tg->state == TG_RUNNING)
			tg = t->tg;
		pthread_mutex_unlock(&r->k->tree_lock);
		if (!tg)
			return state_restore_fail(r, -EINVAL, "SEM_UNDO %zu: no process %d", i,
						  m->pid);
		ret = ipc_sem_undo_restore(tg, m->semid, (int)m->n_adj, adj);
		if (ret < 0)
			return state_restore_fail(r, ret, "SEM_UNDO %zu: pid %d, set %d: %s", i,
						  m->pid, m->semid, strerror(-ret));
	}
	return 0;
}

struct file *state_ipc_file_restore(struct state_restore *r, const Husk__State__File *in)
{
	struct file *f;

	if (in->kind == STATE_FILE_SHM) {
		if (!in->has_shm || !r->ipc) {
			state_restore_fail(r, -EINVAL, "file %u: no segment", in->id);
			return NULL;
		}
		f = ipc_shm_attach_restore(in->shm, in->flags & O_ACCMODE);
		if (IS_ERR(f)) {
			state_restore_fail(r, (int)PTR_ERR(f), "file %u: no shm segment %d", in->id,
					   in->shm);
			return NULL;
		}
		return f;
	}
	for (size_t i = 0; r->ipc && in->has_mqueue && i < r->ipc->nmqs; i++) {
		if (r->img->ipc->mqueues[i]->id != in->mqueue)
			continue;
		f = mqueue_file_restore(r->ipc->mqs[i], in->flags);
		if (!f)
			state_restore_fail(r, -EINVAL, "file %u: bad flags for a message queue",
					   in->id);
		return f;
	}
	state_restore_fail(r, -EINVAL, "file %u: no message queue %u", in->id, in->mqueue);
	return NULL;
}

void state_ipc_restore_end(struct state_restore *r)
{
	if (!r->ipc)
		return;
	for (size_t i = 0; i < r->ipc->nmqs; i++)
		if (r->ipc->mqs[i])
			mqueue_put(r->ipc->mqs[i]);
	free(r->ipc->mqs);
	free(r->ipc);
	r->ipc = NULL;
	ipc_shm_restore_end();
}
