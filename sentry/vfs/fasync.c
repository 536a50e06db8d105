/* SPDX-License-Identifier: Apache-2.0 */
/*
 * F_SETOWN, F_SETSIG and O_ASYNC (Linux's fown_struct and fasync, fs/fcntl.c).
 *
 * A file's async state (struct file_async, made on first use) holds its owner (a thread, a
 * process or a process group, and the ids of whoever set it, for Linux's sigio_perm), the
 * F_SETSIG signal, and while O_ASYNC is on a callback on the file's poll wait queue. The callback
 * runs inside waitq_wake_all, maybe under the waker's locks: it only queues the state for the
 * notifier thread, which polls the file with no lock held and sends the signal: the F_SETSIG
 * signal with si_code POLL_IN/POLL_OUT/POLL_HUP, si_band and si_fd (the descriptor O_ASYNC was
 * set through), or a plain SIGIO (SI_KERNEL) without F_SETSIG.
 *
 * Which event: readable is POLL_IN at each wake (Linux signals each arrival of data; a wake for
 * another reason while data waits gives one more, harmless, signal); becoming writable is
 * POLL_OUT and a hang-up POLL_HUP (edges only, else a writer would hear of each of its writes;
 * Linux's pipe_read sends its writers POLL_OUT after every read, even of a pipe not full).
 *
 * F_NOTIFY (vfs_fasync_dirnotify): a dnotify watch (notify.c) holds a reference on the state and
 * signals its owner with POLL_MSG, synchronously from the event's hook, with no notify lock held.
 *
 * Lifetime: the file holds one reference on its state and each queued notification another.
 * fa->lock is held by the notifier across the poll and the send, and by file_put's
 * vfs_fasync_release while it detaches the file: after that the notifier never touches the file.
 * Lock order: fa->lock, then the file's own locks (poll), then the kernel's tree and signal
 * locks. The queue lock and the callback are leaves.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/refcount.h"
#include "include/abi/linux/signal.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/waitq.h"
#include "sentry/vfs/notify.h"
#include "sentry/vfs/vfs.h"

#define LINUX_SIGIO 29
#define LINUX_POLL_IN 1
#define LINUX_POLL_OUT 2
#define LINUX_POLL_MSG 3
#define LINUX_POLL_HUP 6
#define LINUX_SI_KERNEL 0x80

struct file_async {
	struct refcount ref;
	pthread_mutex_t lock;
	struct file *f; /* lock; NULL once the file is going */
	struct kernel *k; /* lock */
	/* The owner (lock): VFS_OWNER_*, id 0 for none, and its setter's uid and euid. */
	int owner_type;
	int32_t owner_id;
	uint32_t uid, euid;
	int sig; /* lock: F_SETSIG's signal, 0 for SIGIO without information */
	/* O_ASYNC (lock): the callback on wq while enabled, the fd for si_fd, the last events. */
	bool enabled;
	struct waitq *wq;
	struct waitq_callback cb;
	int fd;
	unsigned int last;
	/* The notifier's queue (queue_lock). */
	bool queued;
	struct file_async *next;
};

static pthread_mutex_t fasync_create_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cond = PTHREAD_COND_INITIALIZER;
static struct file_async *queue_head, *queue_tail; /* queue_lock */
static pthread_once_t notifier_once = PTHREAD_ONCE_INIT;
static bool notifier_running;

static void fa_put(struct file_async *fa)
{
	if (fa && refcount_dec(&fa->ref)) {
		pthread_mutex_destroy(&fa->lock);
		free(fa);
	}
}

/* f's async state, made on first use (NULL when out of memory). */
static struct file_async *fa_of(struct file *f)
{
	struct file_async *fa = __atomic_load_n(&f->async, __ATOMIC_ACQUIRE);

	if (fa)
		return fa;
	pthread_mutex_lock(&fasync_create_lock);
	fa = f->async;
	if (!fa) {
		fa = calloc(1, sizeof(*fa));
		if (fa) {
			refcount_init(&fa->ref, 1);
			pthread_mutex_init(&fa->lock, NULL);
			fa->f = f;
			fa->owner_type = VFS_OWNER_TID; /* Linux's initial PIDTYPE_PID */
			vfs_fasync_release_fn = vfs_fasync_release;
			__atomic_store_n(&f->async, fa, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&fasync_create_lock);
	return fa;
}

/* Linux's sigio_perm: the setter may signal a task whose ids it shares (or it was root). */
static bool sigio_perm(const struct file_async *fa, const struct cred *tc)
{
	return fa->euid == 0 || fa->euid == tc->suid || fa->euid == tc->uid ||
	       fa->uid == tc->suid || fa->uid == tc->uid;
}

struct pgrp_send {
	struct file_async *fa;
	int sig;
	const struct linux_siginfo *info;
};

static int pgrp_send_one(struct thread_group *tg, void *arg)
{
	struct pgrp_send *ps = arg;

	if (!tg->reaped && tg->pgid == ps->fa->owner_id && sigio_perm(ps->fa, &tg->leader->cred))
		signal_send(tg, NULL, ps->sig, ps->info, 0);
	return 0;
}

/* Sends sig (info may be NULL: SI_KERNEL) to fa's owner (fa->lock held). */
static void send_to_owner(struct file_async *fa, int sig, const struct linux_siginfo *info)
{
	struct kernel *k = fa->k;

	if (!k || !fa->owner_id)
		return;
	if (fa->owner_type == VFS_OWNER_PGRP) {
		struct pgrp_send ps = { fa, sig, info };

		pthread_mutex_lock(&k->tree_lock);
		pid_for_each_tg(k, pgrp_send_one, &ps);
		pthread_mutex_unlock(&k->tree_lock);
		return;
	}
	struct task *t = kernel_find_task(k, fa->owner_id);

	if (!t)
		return;
	if (sigio_perm(fa, &t->cred)) {
		if (fa->owner_type == VFS_OWNER_TID)
			signal_send(t->tg, t, sig, info, 0);
		else if (!t->tg->reaped)
			signal_send(t->tg, NULL, sig, info, 0);
	}
	task_put(t);
}

/* Linux's send_sigio_to_task: the F_SETSIG signal with its information, else plain SIGIO. */
static void notify(struct file_async *fa, int reason, int fd)
{
	/* band_table of fs/fcntl.c, by reason - POLL_IN. */
	static const int64_t bands[] = {
		POLLIN | POLLRDNORM,	       POLLOUT | POLLWRNORM | POLLWRBAND,
		POLLIN | POLLRDNORM | POLLMSG, POLLERR,
		POLLPRI | POLLRDBAND,	       POLLHUP | POLLERR,
	};
	struct linux_siginfo info;

	if (!fa->sig) {
		send_to_owner(fa, LINUX_SIGIO, NULL);
		return;
	}
	memset(&info, 0, sizeof(info));
	info.si_signo = fa->sig;
	info.si_code = reason;
	info.poll.band = bands[reason - LINUX_POLL_IN];
	info.poll.fd = fd;
	send_to_owner(fa, fa->sig, &info);
}

/* Polls fa's file and signals its owner (the notifier thread; fa->lock held). */
static void check(struct file_async *fa)
{
	struct file *f = fa->f;
	unsigned int m, last = fa->last;

	if (!f || !fa->enabled || !f->ops || !f->ops->poll)
		return;
	m = f->ops->poll(f, NULL);
	fa->last = m;
	if (m & POLLIN)
		notify(fa, LINUX_POLL_IN, fa->fd);
	else if ((m & POLLOUT) && !(last & POLLOUT))
		notify(fa, LINUX_POLL_OUT, fa->fd);
	else if ((m & POLLHUP) && !(last & POLLHUP))
		notify(fa, LINUX_POLL_HUP, fa->fd);
}

static void *notifier_main(void *arg)
{
	for (;;) {
		struct file_async *fa;

		pthread_mutex_lock(&queue_lock);
		while (!queue_head)
			pthread_cond_wait(&queue_cond, &queue_lock);
		fa = queue_head;
		queue_head = fa->next;
		if (!queue_head)
			queue_tail = NULL;
		fa->next = NULL;
		fa->queued = false;
		pthread_mutex_unlock(&queue_lock);

		pthread_mutex_lock(&fa->lock);
		check(fa);
		pthread_mutex_unlock(&fa->lock);
		fa_put(fa);
	}
	return NULL;
}

static void notifier_start(void)
{
	pthread_t th;

	if (pthread_create(&th, NULL, notifier_main, NULL) == 0) {
		pthread_detach(th);
		notifier_running = true;
	}
}

/* The wait queue callback: queue fa for the notifier (a leaf lock only). */
static void fa_wake(struct waitq_callback *cb)
{
	struct file_async *fa = container_of(cb, struct file_async, cb);

	pthread_mutex_lock(&queue_lock);
	if (!fa->queued) {
		fa->queued = true;
		refcount_inc(&fa->ref);
		if (queue_tail)
			queue_tail->next = fa;
		else
			queue_head = fa;
		queue_tail = fa;
		pthread_cond_signal(&queue_cond);
	}
	pthread_mutex_unlock(&queue_lock);
}

int vfs_fasync_setown(struct task *t, struct file *f, int type, int32_t id)
{
	struct file_async *fa;

	if (type != VFS_OWNER_TID && type != VFS_OWNER_PID && type != VFS_OWNER_PGRP)
		return -EINVAL;
	if (id < 0)
		return -EINVAL;
	if (id) {
		bool found = false;

		if (type == VFS_OWNER_PGRP) {
			struct thread_group *tg = kernel_find_tg(t->k, id);
			struct task *u = tg ? NULL : kernel_find_task(t->k, id);

			/* A group's id is its leader's pid, alive or not: any process with it. */
			found = tg || u;
			if (tg)
				tg_put(tg);
			if (u)
				task_put(u);
		} else {
			struct task *u = kernel_find_task(t->k, id);

			found = u != NULL;
			if (u)
				task_put(u);
		}
		if (!found)
			return -ESRCH;
	}
	fa = fa_of(f);
	if (!fa)
		return -ENOMEM;
	pthread_mutex_lock(&fa->lock);
	fa->k = t->k;
	fa->owner_type = type;
	fa->owner_id = id;
	fa->uid = t->cred.uid;
	fa->euid = t->cred.euid;
	pthread_mutex_unlock(&fa->lock);
	return 0;
}

void vfs_fasync_getown(struct file *f, int *type, int32_t *id)
{
	struct file_async *fa = __atomic_load_n(&f->async, __ATOMIC_ACQUIRE);

	*type = VFS_OWNER_TID;
	*id = 0;
	if (!fa)
		return;
	pthread_mutex_lock(&fa->lock);
	*type = fa->owner_type;
	*id = fa->owner_id;
	pthread_mutex_unlock(&fa->lock);
}

int vfs_fasync_setsig(struct file *f, int sig)
{
	struct file_async *fa;

	if (sig < 0 || sig > 64)
		return -EINVAL;
	fa = fa_of(f);
	if (!fa)
		return -ENOMEM;
	pthread_mutex_lock(&fa->lock);
	fa->sig = sig;
	pthread_mutex_unlock(&fa->lock);
	return 0;
}

int vfs_fasync_getsig(struct file *f)
{
	struct file_async *fa = __atomic_load_n(&f->async, __ATOMIC_ACQUIRE);
	int sig;

	if (!fa)
		return 0;
	pthread_mutex_lock(&fa->lock);
	sig = fa->sig;
	pthread_mutex_unlock(&fa->lock);
	return sig;
}

int vfs_fasync_enable(struct task *t, struct file *f, int fd, bool on)
{
	struct file_async *fa;
	struct waitq *wq = NULL;
	unsigned int m = 0;

	if (!on && !__atomic_load_n(&f->async, __ATOMIC_ACQUIRE))
		return 0;
	fa = fa_of(f);
	if (!fa)
		return -ENOMEM;
	/* Files whose readiness never changes (regular files) keep the flag and nothing else. */
	if (on && f->ops && f->ops->poll) {
		m = f->ops->poll(f, &wq);
		pthread_once(&notifier_once, notifier_start);
		if (!notifier_running)
			return -ENOMEM;
	}
	pthread_mutex_lock(&fa->lock);
	if (!fa->k)
		fa->k = t->k;
	fa->fd = fd;
	if (on && !fa->enabled && wq) {
		fa->wq = wq;
		fa->last = m;
		fa->cb.fn = fa_wake;
		fa->enabled = true;
		waitq_add_callback(wq, &fa->cb);
	} else if (!on && fa->enabled) {
		waitq_remove_callback(fa->wq, &fa->cb);
		fa->enabled = false;
		fa->wq = NULL;
	}
	pthread_mutex_unlock(&fa->lock);
	return 0;
}

/* F_NOTIFY's default owner: t's process unless one was set (Linux's __f_setown, no force). */
static void setown_default(struct task *t, struct file_async *fa)
{
	pthread_mutex_lock(&fa->lock);
	if (!fa->owner_id) {
		fa->k = t->k;
		fa->owner_type = VFS_OWNER_PID;
		fa->owner_id = task_pid(t);
		fa->uid = t->cred.uid;
		fa->euid = t->cred.euid;
	}
	pthread_mutex_unlock(&fa->lock);
}

/* A dnotify event: POLL_MSG with si_fd fd to fa's owner, unless its file is gone. */
static void dnotify_send(struct file_async *fa, int fd)
{
	pthread_mutex_lock(&fa->lock);
	if (fa->f)
		notify(fa, LINUX_POLL_MSG, fd);
	pthread_mutex_unlock(&fa->lock);
}

static void fa_get(struct file_async *fa)
{
	refcount_inc(&fa->ref);
}

static const struct dnotify_ops fasync_dnotify_ops = {
	.send = dnotify_send,
	.get = fa_get,
	.put = fa_put,
};

long vfs_fasync_dirnotify(struct task *t, struct file *f, int fd, unsigned long arg)
{
	struct file_async *fa = NULL;
	long r;

	if (arg & ~(unsigned long)VFS_DN_MULTISHOT) {
		fa = fa_of(f);
		if (!fa)
			return -ENOMEM;
		refcount_inc(&fa->ref); /* for the watch */
	}
	r = vfs_dnotify_set(&fasync_dnotify_ops, fa, t->fdt, f, fd, arg);
	if (r == 0 && fa)
		setown_default(t, fa);
	return r;
}

void vfs_fasync_release(struct file *f)
{
	struct file_async *fa = f->async;

	if (!fa)
		return;
	vfs_dnotify_release(f);
	pthread_mutex_lock(&fa->lock);
	if (fa->enabled) {
		waitq_remove_callback(fa->wq, &fa->cb);
		fa->enabled = false;
	}
	fa->f = NULL;
	pthread_mutex_unlock(&fa->lock);
	f->async = NULL;
	fa_put(fa);
}
