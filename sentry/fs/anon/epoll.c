/* SPDX-License-Identifier: Apache-2.0 */
/*
 * epoll instances. An item is (fd, file) with its interest mask and data; readiness is asked
 * of the file's poll op at each wait (no callbacks), and the waiter sleeps on the wait queues of
 * every item's file plus the instance's own (woken by epoll_ctl).
 *
 * Edge-triggered items report when the file is ready and its wait queue was woken since the
 * last report (waitq.seq), which is Linux's "a new event arrived" up to spurious reports.
 * EPOLLONESHOT disables an item after one report until EPOLL_CTL_MOD. EPOLLEXCLUSIVE is
 * accepted (every waiter is woken: allowed, only less efficient).
 *
 * Nesting: an epoll file is readable when one of its items is ready. A task waiting on an epoll
 * (directly, through poll/select, or through an outer epoll) sleeps on the queues of every item
 * of every nested instance (poll_queues_add_file), so a change deep down wakes it. Adding an
 * epoll that would close a cycle, or nest deeper than EP_MAX_NESTS, gives -ELOOP; such adds are
 * serialised by nest_lock, and instance locks are taken outer before inner.
 *
 * Items hold a reference on their file; an item whose fd no longer names that file in the
 * waiter's table is dropped at the next wait, which stands in for Linux's removal at close.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/stat.h>

#include "common/list.h"
#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/fs/anon/anon.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/waitq.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/fs.h"

struct epoll_item {
	struct list_head link;
	int fd;
	struct file *f; /* referenced */
	uint32_t events;
	uint64_t data;
	bool disabled; /* EPOLLONESHOT fired */
	uint64_t seq; /* wait queue seq at the last report (edge-triggered) */
	bool reported;
};

struct epoll {
	struct vfs_node node; /* first */
	pthread_mutex_t lock;
	struct waitq wq; /* woken by ctl changes */
	struct list_head items; /* lock */
	int nitems;
};

struct linux_epoll_event {
	uint32_t events;
	uint64_t data;
} __attribute__((packed));

#define EP_MAX_NESTS 4

static const struct file_ops epoll_ops;
/* Serialises EPOLL_CTL_ADD of epoll files, so that two adds cannot close a cycle together. */
static pthread_mutex_t nest_lock = PTHREAD_MUTEX_INITIALIZER;

bool file_is_epoll(struct file *f)
{
	return f->ops == &epoll_ops;
}

static unsigned int item_poll(struct epoll_item *it, struct waitq **wq)
{
	if (!it->f->ops->poll) {
		if (wq)
			*wq = NULL;
		return POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM;
	}
	return it->f->ops->poll(it->f, wq);
}

static struct epoll_item *find_item(struct epoll *ep, int fd, struct file *f)
{
	struct epoll_item *it;

	list_for_each_entry(it, &ep->items, link) {
		if (it->fd == fd && it->f == f)
			return it;
	}
	return NULL;
}

/*
 * How deep epoll files nest below f (0: f is an epoll with no epoll items), or -ELOOP when
 * that passes EP_MAX_NESTS or reaches avoid (a cycle). Locks each instance on the way down.
 */
static int nest_depth(struct file *f, struct file *avoid, int level)
{
	struct epoll *ep = f->priv;
	struct epoll_item *it;
	int depth = 0;

	if (f == avoid || level > EP_MAX_NESTS)
		return -ELOOP;
	pthread_mutex_lock(&ep->lock);
	list_for_each_entry(it, &ep->items, link) {
		int d;

		if (!file_is_epoll(it->f))
			continue;
		d = nest_depth(it->f, avoid, level + 1);
		if (d < 0) {
			depth = d;
			break;
		}
		depth = MAX(depth, d + 1);
	}
	pthread_mutex_unlock(&ep->lock);
	return depth;
}

static int epoll_ctl_locked(struct file *epf, int op, int fd, struct file *target, uint32_t events,
			    uint64_t data);

int epoll_ctl_file(struct file *epf, int op, int fd, struct file *target, uint32_t events,
		   uint64_t data)
{
	int ret;

	if (op != EPOLL_CTL_ADD || !file_is_epoll(target) || target == epf)
		return epoll_ctl_locked(epf, op, fd, target, events, data);
	pthread_mutex_lock(&nest_lock);
	ret = nest_depth(target, epf, 1);
	if (ret >= 0)
		ret = epoll_ctl_locked(epf, op, fd, target, events, data);
	pthread_mutex_unlock(&nest_lock);
	return ret;
}

/* epoll_ctl_file once nesting is checked. */
static int epoll_ctl_locked(struct file *epf, int op, int fd, struct file *target, uint32_t events,
			    uint64_t data)
{
	struct epoll *ep = epf->priv;
	struct epoll_item *it;
	int ret = 0;

	if (target == epf)
		return -EINVAL;
	if (!target->ops || !target->ops->poll)
		return -EPERM;
	if ((events & EPOLLEXCLUSIVE) &&
	    (op == EPOLL_CTL_MOD ||
	     (events & ~(EPOLLEXCLUSIVE | EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLET |
			 EPOLLWAKEUP | EPOLLRDNORM | EPOLLWRNORM | EPOLLRDBAND | EPOLLWRBAND))))
		return -EINVAL;
	if (file_is_epoll(target) && (events & EPOLLEXCLUSIVE))
		return -EINVAL;
	/* EPOLLERR and EPOLLHUP are always reported. */
	events |= EPOLLERR | EPOLLHUP;
	pthread_mutex_lock(&ep->lock);
	it = find_item(ep, fd, target);
	switch (op) {
	case EPOLL_CTL_ADD:
		if (it) {
			ret = -EEXIST;
			break;
		}
		it = calloc(1, sizeof(*it));
		if (!it) {
			ret = -ENOMEM;
			break;
		}
		it->fd = fd;
		file_get(target);
		it->f = target;
		it->events = events;
		it->data = data;
		list_add_tail(&it->link, &ep->items);
		ep->nitems++;
		break;
	case EPOLL_CTL_MOD:
		if (!it) {
			ret = -ENOENT;
			break;
		}
		if (it->events & EPOLLEXCLUSIVE) {
			ret = -EINVAL;
			break;
		}
		it->events = events;
		it->data = data;
		it->disabled = false;
		it->reported = false;
		break;
	case EPOLL_CTL_DEL:
		if (!it) {
			ret = -ENOENT;
			break;
		}
		list_del(&it->link);
		ep->nitems--;
		file_put(it->f);
		free(it);
		break;
	default:
		ret = -EINVAL;
	}
	pthread_mutex_unlock(&ep->lock);
	if (ret == 0)
		waitq_wake_all(&ep->wq);
	return ret;
}

int epoll_items_save(struct file *epf, struct epoll_item_state **out, int *n)
{
	struct epoll *ep = epf->priv;
	struct epoll_item_state *v;
	struct epoll_item *it;
	int i = 0;

	pthread_mutex_lock(&ep->lock);
	v = calloc((size_t)ep->nitems + 1, sizeof(*v));
	if (!v) {
		pthread_mutex_unlock(&ep->lock);
		return -ENOMEM;
	}
	list_for_each_entry(it, &ep->items, link) {
		file_get(it->f);
		v[i++] = (struct epoll_item_state){ it->fd, it->f, it->events, it->data,
						    it->disabled };
	}
	pthread_mutex_unlock(&ep->lock);
	*out = v;
	*n = i;
	return 0;
}

int epoll_item_restore(struct file *epf, const struct epoll_item_state *st)
{
	struct epoll *ep = epf->priv;
	struct epoll_item *it;
	int ret = epoll_ctl_file(epf, EPOLL_CTL_ADD, st->fd, st->f, st->events, st->data);

	if (ret < 0 || !st->disabled)
		return ret;
	pthread_mutex_lock(&ep->lock);
	it = find_item(ep, st->fd, st->f);
	if (it)
		it->disabled = true;
	pthread_mutex_unlock(&ep->lock);
	return 0;
}

/* Drops items whose fd was closed (or reused) in t's table. Called locked. */
static void prune_closed(struct epoll *ep, struct task *t)
{
	struct epoll_item *it, *tmp;

	list_for_each_entry_safe(it, tmp, &ep->items, link) {
		struct file *cur = fdtable_lookup(t->fdt, it->fd);

		file_put(cur);
		if (cur == it->f)
			continue;
		list_del(&it->link);
		ep->nitems--;
		file_put(it->f);
		free(it);
	}
}

static int pq_push(struct poll_queues *q, struct waitq *wq, struct file *owner)
{
	for (int i = 0; i < q->n; i++) {
		if (q->wqs[i] == wq)
			return 0;
	}
	if (q->n == q->cap) {
		int cap = q->cap ? 2 * q->cap : 8;
		struct waitq **w = realloc(q->wqs, (size_t)cap * sizeof(*w));

		if (!w)
			return -ENOMEM;
		q->wqs = w;
		q->cap = cap;
	}
	if (q->nfiles == q->files_cap) {
		int cap = q->files_cap ? 2 * q->files_cap : 8;
		struct file **fs = realloc(q->files, (size_t)cap * sizeof(*fs));

		if (!fs)
			return -ENOMEM;
		q->files = fs;
		q->files_cap = cap;
	}
	q->wqs[q->n++] = wq;
	file_get(owner);
	q->files[q->nfiles++] = owner;
	return 0;
}

static int pq_add(struct poll_queues *q, struct file *f, int level)
{
	struct epoll_item *it;
	struct waitq *wq = NULL;
	struct epoll *ep;
	int ret;

	if (!file_is_epoll(f)) {
		if (!f->ops || !f->ops->poll)
			return 0;
		f->ops->poll(f, &wq);
		return wq ? pq_push(q, wq, f) : 0;
	}
	ep = f->priv;
	ret = pq_push(q, &ep->wq, f);
	if (ret < 0 || level > EP_MAX_NESTS)
		return ret;
	pthread_mutex_lock(&ep->lock);
	list_for_each_entry(it, &ep->items, link) {
		ret = pq_add(q, it->f, level + 1);
		if (ret < 0)
			break;
	}
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

int poll_queues_add_file(struct poll_queues *q, struct file *f)
{
	return pq_add(q, f, 0);
}

void poll_queues_reset(struct poll_queues *q)
{
	while (q->nfiles > 0)
		file_put(q->files[--q->nfiles]);
	q->n = 0;
}

void poll_queues_free(struct poll_queues *q)
{
	poll_queues_reset(q);
	free(q->wqs);
	free(q->files);
	*q = (struct poll_queues){ 0 };
}

struct epoll_scan {
	struct epoll *ep;
	struct linux_epoll_event *out;
	int max;
	bool consume; /* false: only say whether something is ready */
};

/* Collects ready events (locked); returns the count. */
static int epoll_scan_locked(struct epoll_scan *s)
{
	struct epoll_item *it;
	int n = 0;

	list_for_each_entry(it, &s->ep->items, link) {
		struct waitq *wq = NULL;
		unsigned int ready;
		uint64_t seq = 0;

		if (n >= s->max)
			break;
		if (it->disabled)
			continue;
		ready = item_poll(it, &wq) & it->events;
		if (!ready)
			continue;
		if (wq)
			seq = __atomic_load_n(&wq->seq, __ATOMIC_ACQUIRE);
		if ((it->events & EPOLLET) && it->reported && seq == it->seq)
			continue;
		if (s->consume) {
			s->out[n].events = ready;
			s->out[n].data = it->data;
			it->reported = true;
			it->seq = seq;
			if (it->events & EPOLLONESHOT)
				it->disabled = true;
		}
		n++;
	}
	return n;
}

static bool epoll_any_ready(void *arg)
{
	struct epoll_scan *s = arg;
	int n;

	pthread_mutex_lock(&s->ep->lock);
	n = epoll_scan_locked(s);
	pthread_mutex_unlock(&s->ep->lock);
	return n > 0;
}

long epoll_wait_file(struct task *t, struct file *epf, uint64_t out, int maxevents,
		     const struct timespec *deadline, bool nowait)
{
	struct epoll *ep = epf->priv;
	struct linux_epoll_event *evs = calloc((size_t)maxevents, sizeof(*evs));
	struct epoll_scan s = { ep, evs, maxevents, true };
	struct epoll_scan probe = { ep, NULL, 1, false };
	struct poll_queues q = { 0 };
	long ret;
	int n;

	if (!evs)
		return -ENOMEM;
	for (;;) {
		pthread_mutex_lock(&ep->lock);
		prune_closed(ep, t);
		n = epoll_scan_locked(&s);
		pthread_mutex_unlock(&ep->lock);
		if (n > 0 || nowait)
			break;
		/*
		 * Queues are gathered after the scan: a wakeup in between bumps no waiter, but
		 * task_wait rechecks the condition after registering, so it is not lost.
		 */
		ret = poll_queues_add_file(&q, epf);
		if (ret < 0)
			goto out;
		ret = task_wait(t, q.wqs, q.n, epoll_any_ready, &probe, deadline, true);
		poll_queues_reset(&q);
		if (ret == -ETIMEDOUT) {
			n = 0;
			break;
		}
		if (ret < 0)
			goto out;
	}
	ret = n;
	if (n > 0 && mm_copy_out(t->mm, out, evs, (size_t)n * sizeof(*evs)) !=
			     (ssize_t)((size_t)n * sizeof(*evs)))
		ret = -EFAULT;
out:
	poll_queues_free(&q);
	free(evs);
	return ret;
}

/*
 * An epoll fd is readable when one of its items is ready (nested epoll, poll on epoll). The
 * queue given is only the instance's own: waiters use poll_queues_add_file to get the items'.
 */
static unsigned int epoll_poll(struct file *f, struct waitq **wq)
{
	struct epoll *ep = f->priv;
	struct epoll_scan probe = { ep, NULL, 1, false };

	if (wq)
		*wq = &ep->wq;
	return epoll_any_ready(&probe) ? POLLIN | POLLRDNORM : 0;
}

static void epoll_release(struct file *f)
{
	struct epoll *ep = f->priv;
	struct epoll_item *it, *tmp;

	list_for_each_entry_safe(it, tmp, &ep->items, link) {
		list_del(&it->link);
		file_put(it->f);
		free(it);
	}
}

static int epoll_getattr(struct vfs_node *n, struct vfs_attr *attr)
{
	*attr = (struct vfs_attr){
		.dev = n->fs->dev,
		.ino = (uint64_t)(uintptr_t)n >> 4,
		.nlink = 1,
		.mode = S_IFREG | 0600,
		.blksize = 4096,
	};
	return 0;
}

static void epoll_node_release(struct vfs_node *n)
{
	struct epoll *ep = container_of(n, struct epoll, node);

	pthread_mutex_destroy(&ep->lock);
	free(ep);
}

static const struct vfs_node_ops epoll_node_ops = {
	.getattr = epoll_getattr,
	.release = epoll_node_release,
};

static const struct file_ops epoll_ops = {
	.poll = epoll_poll,
	.release = epoll_release,
};

struct file *epoll_create_file(void)
{
	struct epoll *ep = calloc(1, sizeof(*ep));

	if (!ep)
		return NULL;
	if (vfs_anon_node_init(&ep->node, &epoll_node_ops, S_IFREG) < 0) {
		free(ep);
		return NULL;
	}
	pthread_mutex_init(&ep->lock, NULL);
	waitq_init(&ep->wq);
	list_init(&ep->items);
	return anon_file_create(&ep->node, &epoll_ops, O_RDWR, ep);
}
