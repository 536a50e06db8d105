/* SPDX-License-Identifier: Apache-2.0 */
/*
 * System V message queues (Linux's ipc/msg.c).
 *
 * A blocked msgsnd or msgrcv sleeps on its queue's wait queue; its wait condition retries the
 * operation under msg_ids.lock (a receive takes the message off the queue there, and copies it
 * to the guest after), so it completes, fails (EIDRM once the queue is removed) or sleeps again
 * each time the queue changes. Every change of the queue wakes it.
 *
 * References: the id table holds one on each queue; each sleeper holds one. msg_ids.lock
 * protects every queue and its messages; it is taken before a wait queue's lock.
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>

#include "common/list.h"
#include "common/refcount.h"
#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/kernel/ipc_priv.h"
#include "sentry/kernel/sysctl.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/waitq.h"
#include "sentry/mm/mm.h"

/* Linux's compile-time constants that msgctl(IPC_INFO) reports. */
#define MSGPOOL (32000 * 16384 / 1024)
#define MSGMAP 16384
#define MSGTQL 16384
#define MSGSSZ 16
#define MSGSEG 0xffff

struct msg_msg {
	struct list_head link; /* in msg_queue.msgs */
	int64_t mtype;
	size_t len;
	char text[];
};

struct msg_queue {
	struct ipc_kperm perm; /* first: the id table's entry */
	struct refcount ref;
	int64_t stime, rtime, ctime;
	uint64_t cbytes, qnum, qbytes;
	int32_t lspid, lrpid;
	struct waitq wq; /* woken on every change and at removal */
	struct list_head msgs; /* of struct msg_msg, oldest first */
};

static struct ipc_ids msg_ids = IPC_IDS_INIT;
static uint64_t msg_hdrs, msg_bytes; /* messages and bytes in every queue (msg_ids.lock) */

static void queue_put(struct msg_queue *q)
{
	if (refcount_dec(&q->ref))
		free(q);
}

/* --- msgget --- */

struct msg_get_args {
	int32_t key;
	int flags;
};

static int msg_create(struct task *t, struct ipc_ids *ids, void *arg)
{
	struct msg_get_args *g = arg;
	int mni = (int)sysctl_get(SYSCTL_KERNEL_MSGMNI, 0);
	struct msg_queue *q;
	int r;

	if (ids->in_use >= mni)
		return -ENOSPC;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	refcount_init(&q->ref, 1);
	ipc_init_perm(&q->perm, &t->cred, g->key, g->flags);
	q->ctime = ipc_now();
	q->qbytes = (uint64_t)sysctl_get(SYSCTL_KERNEL_MSGMNB, 0);
	waitq_init(&q->wq);
	list_init(&q->msgs);
	r = ipc_add(ids, &q->perm, mni);
	if (r < 0)
		free(q);
	return r;
}

static const struct ipc_get_ops msg_get_ops = {
	.create = msg_create,
};

long ipc_msgget(struct task *t, int32_t key, int flags)
{
	struct msg_get_args g = { .key = key, .flags = flags };

	return ipc_get(t, &msg_ids, key, flags, &msg_get_ops, &g);
}

/* --- msgsnd --- */

struct msg_sender {
	struct msg_queue *q;
	struct msg_msg *m; /* owned until queued */
	int flags;
	int32_t pid;
	bool done;
	long result;
};

/* A try to queue s->m (msg_ids.lock held): true when over (s->result set). */
static bool send_try(struct msg_sender *s)
{
	struct msg_queue *q = s->q;
	struct msg_msg *m = s->m;

	if (q->perm.deleted) {
		s->result = -EIDRM;
		return true;
	}
	if (m->len + q->cbytes > q->qbytes || 1 + q->qnum > q->qbytes) {
		if (!(s->flags & LINUX_IPC_NOWAIT))
			return false;
		s->result = -EAGAIN;
		return true;
	}
	list_add_tail(&m->link, &q->msgs);
	s->m = NULL;
	q->cbytes += m->len;
	q->qnum++;
	q->lspid = s->pid;
	q->stime = ipc_now();
	msg_hdrs++;
	msg_bytes += m->len;
	waitq_wake_all(&q->wq);
	s->result = 0;
	return true;
}

static bool send_cond(void *arg)
{
	struct msg_sender *s = arg;

	pthread_mutex_lock(&msg_ids.lock);
	if (!s->done)
		s->done = send_try(s);
	pthread_mutex_unlock(&msg_ids.lock);
	return s->done;
}

long ipc_msgsnd(struct task *t, int id, uint64_t msgp, uint64_t msgsz, int flags)
{
	struct msg_sender s = { .flags = flags, .pid = task_pid(t) };
	int64_t mtype;
	long r, wr;

	if (mm_copy_in(t->mm, &mtype, msgp, sizeof(mtype)) != sizeof(mtype))
		return -EFAULT;
	if (msgsz > (uint64_t)sysctl_get(SYSCTL_KERNEL_MSGMAX, 0) || (int64_t)msgsz < 0 || id < 0)
		return -EINVAL;
	if (mtype < 1)
		return -EINVAL;
	s.m = malloc(sizeof(*s.m) + msgsz);
	if (!s.m)
		return -ENOMEM;
	s.m->mtype = mtype;
	s.m->len = msgsz;
	if (msgsz && mm_copy_in(t->mm, s.m->text, msgp + sizeof(mtype), msgsz) != (ssize_t)msgsz) {
		free(s.m);
		return -EFAULT;
	}

	pthread_mutex_lock(&msg_ids.lock);
	s.q = (struct msg_queue *)ipc_lookup(&msg_ids, id);
	r = s.q ? ipc_perms(&t->cred, &s.q->perm, 0222) : -EINVAL;
	if (r == 0 && send_try(&s))
		r = s.result;
	else if (r == 0)
		r = 1;
	if (r != 1) {
		pthread_mutex_unlock(&msg_ids.lock);
		free(s.m);
		return r;
	}
	refcount_inc(&s.q->ref);
	pthread_mutex_unlock(&msg_ids.lock);

	struct waitq *wq = &s.q->wq;
	wr = task_wait(t, &wq, 1, send_cond, &s, NULL, true);

	pthread_mutex_lock(&msg_ids.lock);
	if (!s.done) {
		s.done = true;
		/* As Linux: restarted only when no handler ran. */
		s.result = wr == -ERESTARTSYS ? -ERESTARTNOHAND : wr;
	}
	pthread_mutex_unlock(&msg_ids.lock);
	queue_put(s.q);
	free(s.m);
	return s.result;
}

/* --- msgrcv --- */

enum search_mode { SEARCH_ANY, SEARCH_EQUAL, SEARCH_NOTEQUAL, SEARCH_LESSEQUAL, SEARCH_NUMBER };

struct msg_receiver {
	struct msg_queue *q;
	enum search_mode mode;
	int64_t typ;
	uint64_t bufsz;
	int flags;
	int32_t pid;
	bool done;
	long result;
	struct msg_msg *m; /* the message taken (or copied), owned */
};

static struct msg_msg *find_msg(struct msg_queue *q, enum search_mode mode, int64_t typ)
{
	struct msg_msg *m, *found = NULL;
	int64_t count = 0;

	list_for_each_entry(m, &q->msgs, link) {
		switch (mode) {
		case SEARCH_ANY:
			return m;
		case SEARCH_EQUAL:
			if (m->mtype == typ)
				return m;
			break;
		case SEARCH_NOTEQUAL:
			if (m->mtype != typ)
				return m;
			break;
		case SEARCH_LESSEQUAL:
			/* The first message of the lowest type <= typ. */
			if (m->mtype <= typ && (!found || m->mtype < found->mtype))
				found = m;
			break;
		case SEARCH_NUMBER:
			if (count++ == typ)
				return m;
			break;
		}
	}
	return found;
}

static bool recv_try(struct msg_receiver *r)
{
	struct msg_queue *q = r->q;
	struct msg_msg *m;

	if (q->perm.deleted) {
		r->result = -EIDRM;
		return true;
	}
	m = find_msg(q, r->mode, r->typ);
	if (!m) {
		if (!(r->flags & LINUX_IPC_NOWAIT))
			return false;
		r->result = -ENOMSG;
		return true;
	}
	if (r->bufsz < m->len && !(r->flags & LINUX_MSG_NOERROR)) {
		r->result = -E2BIG;
		return true;
	}
	if (r->flags & LINUX_MSG_COPY) {
		uint64_t max = MIN(r->bufsz, (uint64_t)sysctl_get(SYSCTL_KERNEL_MSGMAX, 0));

		/* As Linux's copy_msg: the copy buffer holds min(bufsz, msgmax) bytes. */
		if (m->len > max) {
			r->result = -EINVAL;
			return true;
		}
		r->m = malloc(sizeof(*m) + m->len);
		if (!r->m) {
			r->result = -ENOMEM;
			return true;
		}
		memcpy(r->m, m, sizeof(*m) + m->len);
		r->result = 0;
		return true;
	}
	list_del(&m->link);
	q->cbytes -= m->len;
	q->qnum--;
	q->lrpid = r->pid;
	q->rtime = ipc_now();
	msg_hdrs--;
	msg_bytes -= m->len;
	waitq_wake_all(&q->wq);
	r->m = m;
	r->result = 0;
	return true;
}

static bool recv_cond(void *arg)
{
	struct msg_receiver *r = arg;

	pthread_mutex_lock(&msg_ids.lock);
	if (!r->done)
		r->done = recv_try(r);
	pthread_mutex_unlock(&msg_ids.lock);
	return r->done;
}

long ipc_msgrcv(struct task *t, int id, uint64_t msgp, uint64_t msgsz, int64_t msgtyp, int flags)
{
	struct msg_receiver r = { .bufsz = msgsz, .flags = flags, .pid = task_pid(t) };
	long ret, wr;

	if (id < 0 || (int64_t)msgsz < 0)
		return -EINVAL;
	if ((flags & LINUX_MSG_COPY) && ((flags & LINUX_MSG_EXCEPT) || !(flags & LINUX_IPC_NOWAIT)))
		return -EINVAL;
	if (flags & LINUX_MSG_COPY) {
		r.mode = SEARCH_NUMBER;
		r.typ = msgtyp;
	} else if (msgtyp == 0) {
		r.mode = SEARCH_ANY;
	} else if (msgtyp < 0) {
		r.mode = SEARCH_LESSEQUAL;
		r.typ = msgtyp == INT64_MIN ? INT64_MAX : -msgtyp;
	} else {
		r.mode = (flags & LINUX_MSG_EXCEPT) ? SEARCH_NOTEQUAL : SEARCH_EQUAL;
		r.typ = msgtyp;
	}

	pthread_mutex_lock(&msg_ids.lock);
	r.q = (struct msg_queue *)ipc_lookup(&msg_ids, id);
	ret = r.q ? ipc_perms(&t->cred, &r.q->perm, 0444) : -EINVAL;
	if (ret < 0) {
		pthread_mutex_unlock(&msg_ids.lock);
		return ret;
	}
	r.done = recv_try(&r);
	if (!r.done) {
		refcount_inc(&r.q->ref);
		pthread_mutex_unlock(&msg_ids.lock);
		struct waitq *wq = &r.q->wq;
		wr = task_wait(t, &wq, 1, recv_cond, &r, NULL, true);
		pthread_mutex_lock(&msg_ids.lock);
		if (!r.done) {
			r.done = true;
			r.result = wr == -ERESTARTSYS ? -ERESTARTNOHAND : wr;
		}
		pthread_mutex_unlock(&msg_ids.lock);
		queue_put(r.q);
	} else {
		pthread_mutex_unlock(&msg_ids.lock);
	}
	if (r.result < 0)
		return r.result;

	/* As Linux: a message that cannot be copied out is lost. */
	size_t n = MIN(msgsz, r.m->len);
	if (mm_copy_out(t->mm, msgp, &r.m->mtype, sizeof(r.m->mtype)) != sizeof(r.m->mtype) ||
	    (n && mm_copy_out(t->mm, msgp + sizeof(r.m->mtype), r.m->text, n) != (ssize_t)n))
		ret = -EFAULT;
	else
		ret = (long)n;
	free(r.m);
	return ret;
}

/* --- msgctl --- */

static long copy_out(struct task *t, uint64_t addr, const void *src, size_t len)
{
	return mm_copy_out(t->mm, addr, src, len) == (ssize_t)len ? 0 : -EFAULT;
}

static long msg_info(struct task *t, int cmd, uint64_t buf)
{
	struct linux_msginfo info = {
		.msgmni = (int32_t)sysctl_get(SYSCTL_KERNEL_MSGMNI, 0),
		.msgmax = (int32_t)sysctl_get(SYSCTL_KERNEL_MSGMAX, 0),
		.msgmnb = (int32_t)sysctl_get(SYSCTL_KERNEL_MSGMNB, 0),
		.msgssz = MSGSSZ,
		.msgseg = MSGSEG,
	};
	long r;

	pthread_mutex_lock(&msg_ids.lock);
	if (cmd == LINUX_MSG_INFO) {
		info.msgpool = msg_ids.in_use;
		info.msgmap = (int32_t)msg_hdrs;
		info.msgtql = (int32_t)msg_bytes;
	} else {
		info.msgpool = MSGPOOL;
		info.msgmap = MSGMAP;
		info.msgtql = MSGTQL;
	}
	r = ipc_info_ret(&msg_ids);
	pthread_mutex_unlock(&msg_ids.lock);
	return copy_out(t, buf, &info, sizeof(info)) ?: r;
}

/* IPC_RMID (msg_ids.lock held): sleepers wake to EIDRM, messages go. */
static void queue_remove(struct msg_queue *q)
{
	struct msg_msg *m, *tmp;

	ipc_remove(&msg_ids, &q->perm);
	list_for_each_entry_safe(m, tmp, &q->msgs, link) {
		list_del(&m->link);
		msg_hdrs--;
		msg_bytes -= m->len;
		free(m);
	}
	q->qnum = q->cbytes = 0;
	waitq_wake_all(&q->wq);
}

long ipc_msgctl(struct task *t, int id, int cmd, uint64_t buf)
{
	struct linux_msqid64_ds ds;
	struct msg_queue *q;
	long r = 0;

	if (cmd < 0 || id < 0)
		return -EINVAL;
	switch (cmd) {
	case LINUX_IPC_INFO:
	case LINUX_MSG_INFO:
		return msg_info(t, cmd, buf);
	case LINUX_IPC_SET:
		if (mm_copy_in(t->mm, &ds, buf, sizeof(ds)) != sizeof(ds))
			return -EFAULT;
		break;
	case LINUX_IPC_STAT:
	case LINUX_MSG_STAT:
	case LINUX_MSG_STAT_ANY:
	case LINUX_IPC_RMID:
		break;
	default:
		return -EINVAL;
	}

	pthread_mutex_lock(&msg_ids.lock);
	q = (struct msg_queue *)ipc_ctl_lookup(&msg_ids, id,
					       cmd == LINUX_MSG_STAT || cmd == LINUX_MSG_STAT_ANY);
	if (!q) {
		pthread_mutex_unlock(&msg_ids.lock);
		return -EINVAL;
	}
	switch (cmd) {
	case LINUX_IPC_STAT:
	case LINUX_MSG_STAT:
	case LINUX_MSG_STAT_ANY:
		r = ipc_stat_perms(&t->cred, &q->perm, cmd == LINUX_MSG_STAT_ANY);
		if (r < 0)
			break;
		memset(&ds, 0, sizeof(ds));
		ipc_fill_perm64(&ds.msg_perm, &q->perm);
		ds.msg_stime = q->stime;
		ds.msg_rtime = q->rtime;
		ds.msg_ctime = q->ctime;
		ds.msg_cbytes = q->cbytes;
		ds.msg_qnum = q->qnum;
		ds.msg_qbytes = q->qbytes;
		ds.msg_lspid = q->lspid;
		ds.msg_lrpid = q->lrpid;
		r = cmd == LINUX_IPC_STAT ? 0 : q->perm.id;
		break;
	case LINUX_IPC_SET:
		r = ipc_check_owner(&t->cred, &q->perm);
		if (r < 0)
			break;
		if (ds.msg_qbytes > (uint64_t)sysctl_get(SYSCTL_KERNEL_MSGMNB, 0) &&
		    !cred_capable(&t->cred, CAP_SYS_RESOURCE)) {
			r = -EPERM;
			break;
		}
		q->qbytes = ds.msg_qbytes;
		ipc_set_perm(&q->perm, &ds.msg_perm);
		q->ctime = ipc_now();
		/* Senders may fit now; receivers recheck too. */
		waitq_wake_all(&q->wq);
		break;
	case LINUX_IPC_RMID:
		r = ipc_check_owner(&t->cred, &q->perm);
		if (r < 0)
			break;
		queue_remove(q);
		break;
	}
	pthread_mutex_unlock(&msg_ids.lock);
	if (r >= 0 && cmd == LINUX_IPC_RMID)
		queue_put(q);
	if (r >= 0 &&
	    (cmd == LINUX_IPC_STAT || cmd == LINUX_MSG_STAT || cmd == LINUX_MSG_STAT_ANY)) {
		long e = copy_out(t, buf, &ds, sizeof(ds));

		if (e < 0)
			return e;
	}
	return r;
}

/* --- /proc/sysvipc/msg --- */

int ipc_proc_msg(FILE *out)
{
	fprintf(out,
		"       key      msqid perms      cbytes       qnum lspid lrpid   uid   gid  cuid  "
		"cgid      stime      rtime      ctime\n");
	pthread_mutex_lock(&msg_ids.lock);
	for (int i = 0; i <= msg_ids.max_idx; i++) {
		struct msg_queue *q = (struct msg_queue *)msg_ids.slots[i];

		if (!ipc_visible(q ? &q->perm : NULL))
			continue;
		fprintf(out,
			"%10d %10d  %4o  %10lu %10lu %5u %5u %5u %5u %5u %5u %10lld %10lld %10lld\n",
			q->perm.key, q->perm.id, q->perm.mode, (unsigned long)q->cbytes,
			(unsigned long)q->qnum, (unsigned int)q->lspid, (unsigned int)q->lrpid,
			q->perm.uid, q->perm.gid, q->perm.cuid, q->perm.cgid, (long long)q->stime,
			(long long)q->rtime, (long long)q->ctime);
	}
	pthread_mutex_unlock(&msg_ids.lock);
	return 0;
}

int ipc_msg_count(void)
{
	int n;

	pthread_mutex_lock(&msg_ids.lock);
	n = msg_ids.in_use;
	pthread_mutex_unlock(&msg_ids.lock);
	return n;
}

/* --- checkpoint and restore --- */

struct ipc_ids *ipc_msg_ids(void)
{
	return &msg_ids;
}

int ipc_msg_save(int (*queue)(const struct ipc_msg_state *st, void *arg),
		 int (*msg)(int64_t mtype, const void *text, size_t len, void *arg), void *arg)
{
	int r = 0;

	pthread_mutex_lock(&msg_ids.lock);
	for (int i = 0; i <= msg_ids.max_idx && r == 0; i++) {
		struct msg_queue *q = (struct msg_queue *)msg_ids.slots[i];
		struct ipc_msg_state st = { 0 };
		struct msg_msg *m;

		/* Objects of IPC namespaces the guest made are not saved (nsproxy.h). */
		if (!q || q->perm.ns)
			continue;
		ipc_perm_to_state(&st.perm, &q->perm);
		st.stime = q->stime;
		st.rtime = q->rtime;
		st.ctime = q->ctime;
		st.qbytes = q->qbytes;
		st.lspid = q->lspid;
		st.lrpid = q->lrpid;
		r = queue(&st, arg);
		list_for_each_entry(m, &q->msgs, link) {
			if (r < 0)
				break;
			r = msg(m->mtype, m->text, m->len, arg);
		}
	}
	pthread_mutex_unlock(&msg_ids.lock);
	return r;
}

int ipc_msg_restore(const struct ipc_msg_state *st)
{
	struct msg_queue *q = calloc(1, sizeof(*q));
	int r;

	if (!q)
		return -ENOMEM;
	refcount_init(&q->ref, 1);
	ipc_perm_from_state(&q->perm, &st->perm);
	q->stime = st->stime;
	q->rtime = st->rtime;
	q->ctime = st->ctime;
	q->qbytes = st->qbytes;
	q->lspid = st->lspid;
	q->lrpid = st->lrpid;
	waitq_init(&q->wq);
	list_init(&q->msgs);
	pthread_mutex_lock(&msg_ids.lock);
	r = ipc_insert_at(&msg_ids, &q->perm, st->perm.id);
	pthread_mutex_unlock(&msg_ids.lock);
	if (r < 0)
		free(q);
	return r;
}

int ipc_msg_restore_msg(int32_t id, int64_t mtype, const void *text, size_t len)
{
	struct msg_queue *q;
	struct msg_msg *m;

	if (mtype < 1)
		return -EINVAL;
	m = malloc(sizeof(*m) + len);
	if (!m)
		return -ENOMEM;
	m->mtype = mtype;
	m->len = len;
	if (len)
		memcpy(m->text, text, len);
	pthread_mutex_lock(&msg_ids.lock);
	q = (struct msg_queue *)ipc_lookup(&msg_ids, id);
	if (!q) {
		pthread_mutex_unlock(&msg_ids.lock);
		free(m);
		return -EINVAL;
	}
	/* As queued (a queue's qbytes may have been lowered below its contents by IPC_SET). */
	list_add_tail(&m->link, &q->msgs);
	q->cbytes += len;
	q->qnum++;
	msg_hdrs++;
	msg_bytes += len;
	pthread_mutex_unlock(&msg_ids.lock);
	return 0;
}

void ipc_msg_ns_exit(uint32_t ns)
{
	for (;;) {
		struct msg_queue *q = NULL;

		pthread_mutex_lock(&msg_ids.lock);
		for (int i = 0; i <= msg_ids.max_idx && !q; i++) {
			struct msg_queue *o = (struct msg_queue *)msg_ids.slots[i];

			if (o && o->perm.ns == ns)
				q = o;
		}
		if (q)
			queue_remove(q);
		pthread_mutex_unlock(&msg_ids.lock);
		if (!q)
			return;
		queue_put(q); /* the table's reference */
	}
}
