/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inotify's core (see notify.h): a table of watched inodes, each with its watches, and per group
 * a queue of events. dnotify's watches (F_NOTIFY) hang on the same inode entries; an event owes
 * their owners signals, which deliver() sends once notify_lock is released.
 *
 * Locks: notify_lock (global) protects the inode table, every watch (inotify's and dnotify's)
 * and every group's watch list; a group's lock protects its queue. Order: notify_lock, then a group's lock, then the
 * group's wait queue (woken with the group lock released). getattr is asked before notify_lock
 * is taken, so filesystem locks are never taken under it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/list.h"
#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/kernel/waitq.h"
#include "sentry/vfs/fs.h"
#include "sentry/vfs/notify.h"

#define NOTIFY_BUCKETS 256
/* sizeof(struct inotify_event): wd, mask, cookie, len. */
#define EVENT_HDR 16

int vfs_notify_watches;

struct notify_event {
	struct list_head link;
	int32_t wd;
	uint32_t mask, cookie;
	uint32_t len; /* name bytes with NUL padding to EVENT_HDR; 0 without a name */
	char name[];
};

struct notify_inode {
	struct notify_inode *next; /* hash chain */
	uint64_t dev, ino;
	struct list_head watches; /* of notify_watch.inode_link */
	struct list_head dnotify; /* of dnotify_watch.inode_link */
};

/*
 * A dnotify watch: F_NOTIFY on open directory f through the fd table owner (Linux's
 * dnotify_struct). f and owner are keys, never dereferenced; the watch holds a reference on f's
 * async state, whose owner it signals. It goes with F_NOTIFY 0, a close of any descriptor of f
 * in owner's table, f's release, the directory's end, or its first event unless VFS_DN_MULTISHOT.
 */
struct dnotify_watch {
	struct list_head inode_link;
	struct list_head all_link; /* dnotify_all */
	struct notify_inode *in;
	const struct file *f;
	const void *owner;
	const struct dnotify_ops *ops;
	struct file_async *fa;
	int fd;
	uint32_t mask; /* DN_* with VFS_DN_MULTISHOT */
};

/* A signal deliver() owes a dnotify watch's owner, sent once notify_lock is released. */
struct dnotify_send {
	const struct dnotify_ops *ops;
	struct file_async *fa;
	int fd;
};

struct notify_watch {
	struct list_head inode_link;
	struct list_head group_link;
	struct notify_inode *in;
	struct notify_group *g;
	int wd;
	uint32_t mask; /* events and IN_ONESHOT, IN_EXCL_UNLINK */
};

struct notify_group {
	struct list_head watches; /* of notify_watch.group_link; notify_lock */
	int next_wd; /* notify_lock */
	pthread_mutex_t lock;
	struct list_head events; /* lock */
	size_t nevents, bytes; /* lock */
	bool overflow_queued; /* lock: an IN_Q_OVERFLOW is in events */
	struct waitq wq;
};

static pthread_mutex_t notify_lock = PTHREAD_MUTEX_INITIALIZER;
static struct notify_inode *buckets[NOTIFY_BUCKETS]; /* notify_lock */
static int ngroups; /* notify_lock */
static uint32_t next_cookie; /* atomic */
static struct list_head dnotify_all = LIST_HEAD_INIT(dnotify_all); /* notify_lock */
static int dnotify_count; /* atomic: the close hook's fast path */

static size_t bucket_of(uint64_t dev, uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) ^ dev) % NOTIFY_BUCKETS;
}

static struct notify_inode *inode_find(uint64_t dev, uint64_t ino)
{
	struct notify_inode *in;

	for (in = buckets[bucket_of(dev, ino)]; in; in = in->next)
		if (in->dev == dev && in->ino == ino)
			return in;
	return NULL;
}

static void inode_free_if_unused(struct notify_inode *in)
{
	struct notify_inode **pp;

	if (!list_empty(&in->watches) || !list_empty(&in->dnotify))
		return;
	for (pp = &buckets[bucket_of(in->dev, in->ino)]; *pp; pp = &(*pp)->next) {
		if (*pp == in) {
			*pp = in->next;
			break;
		}
	}
	free(in);
}

/* Queues an event on g (notify_lock held); merges it with an identical last event, as Linux. */
static void queue_event(struct notify_group *g, int wd, uint32_t mask, uint32_t cookie,
			const char *name)
{
	size_t nlen = name ? strlen(name) : 0;
	uint32_t len = nlen ? (uint32_t)((nlen + EVENT_HDR) / EVENT_HDR * EVENT_HDR) : 0;
	struct notify_event *e;

	pthread_mutex_lock(&g->lock);
	if (!list_empty(&g->events)) {
		struct notify_event *last = list_entry(g->events.prev, struct notify_event, link);

		if (last->wd == wd && last->mask == mask && last->cookie == cookie &&
		    ((!nlen && !last->len) || (nlen && last->len && !strcmp(last->name, name)))) {
			pthread_mutex_unlock(&g->lock);
			return;
		}
	}
	if (g->nevents >= NOTIFY_MAX_QUEUED_EVENTS) {
		/* Full: one IN_Q_OVERFLOW, then nothing until the reader makes room. */
		if (g->overflow_queued) {
			pthread_mutex_unlock(&g->lock);
			return;
		}
		g->overflow_queued = true;
		wd = -1;
		mask = VFS_IN_Q_OVERFLOW;
		cookie = 0;
		len = 0;
	}
	e = calloc(1, sizeof(*e) + len);
	if (!e) {
		pthread_mutex_unlock(&g->lock);
		return; /* Linux drops the event too when it cannot allocate it */
	}
	e->wd = wd;
	e->mask = mask;
	e->cookie = cookie;
	e->len = len;
	if (len)
		memcpy(e->name, name, nlen);
	list_add_tail(&e->link, &g->events);
	g->nevents++;
	g->bytes += EVENT_HDR + len;
	pthread_mutex_unlock(&g->lock);
	waitq_wake_all(&g->wq);
}

/*
 * Drops watch w (notify_lock held), queueing IN_IGNORED when ignored is true. Its inode entry
 * stays, maybe empty: the caller frees it with inode_free_if_unused once done with it.
 */
static void watch_remove(struct notify_watch *w, bool ignored)
{
	if (ignored)
		queue_event(w->g, w->wd, VFS_IN_IGNORED, 0, NULL);
	list_del(&w->inode_link);
	list_del(&w->group_link);
	free(w);
	__atomic_sub_fetch(&vfs_notify_watches, 1, __ATOMIC_RELAXED);
}

/* The DN_* events of inotify event mask (Linux's convert_arg, backwards). */
static uint32_t dn_events(uint32_t mask)
{
	uint32_t dn = 0;

	if (mask & VFS_IN_ACCESS)
		dn |= VFS_DN_ACCESS;
	if (mask & VFS_IN_MODIFY)
		dn |= VFS_DN_MODIFY;
	if (mask & VFS_IN_ATTRIB)
		dn |= VFS_DN_ATTRIB;
	if (mask & (VFS_IN_CREATE | VFS_IN_MOVED_TO))
		dn |= VFS_DN_CREATE;
	if (mask & (VFS_IN_DELETE | VFS_IN_MOVED_FROM))
		dn |= VFS_DN_DELETE;
	if (mask & VFS_IN_DN_RENAME)
		dn |= VFS_DN_RENAME;
	return dn;
}

/* Drops dnotify watch d (notify_lock held; its inode entry stays, maybe empty). */
static void dnotify_remove(struct dnotify_watch *d)
{
	list_del(&d->inode_link);
	list_del(&d->all_link);
	d->ops->put(d->fa);
	free(d);
	__atomic_sub_fetch(&dnotify_count, 1, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&vfs_notify_watches, 1, __ATOMIC_RELAXED);
}

/*
 * Linux's dnotify_handle_event (notify_lock held): each of in's dnotify watches of an event in
 * dn owes its owner a signal, added to *sends with a reference on the async state; one-shot
 * watches go. Out of memory, the signal is lost (Linux's allocation failures lose events too).
 */
static void dnotify_deliver(struct notify_inode *in, uint32_t dn, struct dnotify_send **sends,
			    size_t *nsends)
{
	struct dnotify_watch *d, *tmp;

	list_for_each_entry_safe(d, tmp, &in->dnotify, inode_link) {
		struct dnotify_send *more;

		if (!(d->mask & dn))
			continue;
		more = realloc(*sends, (*nsends + 1) * sizeof(**sends));
		if (more) {
			*sends = more;
			more[*nsends].ops = d->ops;
			more[*nsends].fa = d->fa;
			more[*nsends].fd = d->fd;
			d->ops->get(d->fa); /* the send's, the watch may go first */
			(*nsends)++;
		}
		if (!(d->mask & VFS_DN_MULTISHOT))
			dnotify_remove(d);
	}
}

/*
 * Delivers mask (an event bit, maybe with IN_ISDIR) on inode (dev, ino) to the watches that
 * want it, with name (NULL: the event is about the inode itself). unlinked: the subject has no
 * link left, so IN_EXCL_UNLINK watches are skipped.
 */
static void deliver(uint64_t dev, uint64_t ino, uint32_t mask, uint32_t cookie, const char *name,
		    bool unlinked)
{
	struct dnotify_send *sends = NULL;
	struct notify_watch *w, *tmp;
	struct notify_inode *in;
	size_t nsends = 0;
	uint32_t dn = dn_events(mask);

	mask &= ~VFS_IN_DN_RENAME;
	/* inotify never reports IN_ISDIR with the self events (Linux keeps that for fanotify). */
	if (mask & (VFS_IN_MOVE_SELF | VFS_IN_DELETE_SELF))
		mask &= ~VFS_IN_ISDIR;
	pthread_mutex_lock(&notify_lock);
	in = inode_find(dev, ino);
	if (in) {
		/* Linux's FS_RENAME comes before FS_MOVED_FROM: a watch of both hears each. */
		if (dn & VFS_DN_RENAME)
			dnotify_deliver(in, VFS_DN_RENAME, &sends, &nsends);
		if (dn & ~VFS_DN_RENAME)
			dnotify_deliver(in, dn & ~VFS_DN_RENAME, &sends, &nsends);
		list_for_each_entry_safe(w, tmp, &in->watches, inode_link) {
			if (!(w->mask & mask & VFS_IN_ALL_EVENTS))
				continue;
			if (unlinked && (w->mask & VFS_IN_EXCL_UNLINK))
				continue;
			queue_event(w->g, w->wd, mask, cookie, name);
			if (w->mask & VFS_IN_ONESHOT)
				watch_remove(w, true);
		}
		inode_free_if_unused(in); /* its last watch may have been a one-shot one */
	}
	pthread_mutex_unlock(&notify_lock);
	for (size_t i = 0; i < nsends; i++) {
		sends[i].ops->send(sends[i].fa, sends[i].fd);
		sends[i].ops->put(sends[i].fa);
	}
	free(sends);
}

uint32_t vfs_notify_cookie(void)
{
	uint32_t c;

	do
		c = __atomic_add_fetch(&next_cookie, 1, __ATOMIC_RELAXED);
	while (c == 0);
	return c;
}

void vfs_notify_self(struct vfs_node *n, uint32_t mask)
{
	struct vfs_attr a;

	if (!vfs_notify_active() || !n || vfs_node_getattr(n, &a) < 0)
		return;
	if (S_ISDIR(a.mode))
		mask |= VFS_IN_ISDIR;
	deliver(a.dev, a.ino, mask, 0, NULL, false);
}

void vfs_notify_node(struct vfs_node *n, uint32_t mask)
{
	char name[VFS_NAME_MAX + 1];
	struct vfs_node *parent;
	struct vfs_attr a, pa;

	if (!vfs_notify_active() || !n || vfs_node_getattr(n, &a) < 0)
		return;
	if (S_ISDIR(a.mode))
		mask |= VFS_IN_ISDIR;
	/* The parent's watches first, then the node's own (Linux's fsnotify_handle_event). */
	vfs_rename_read_lock();
	parent = n->parent;
	if (parent) {
		vfs_node_get(parent);
		snprintf(name, sizeof(name), "%s", n->name ? n->name : "");
	}
	vfs_rename_read_unlock();
	if (parent) {
		if (name[0] && vfs_node_getattr(parent, &pa) == 0)
			deliver(pa.dev, pa.ino, mask, 0, name, a.nlink == 0);
		vfs_node_put(parent);
	}
	deliver(a.dev, a.ino, mask, 0, NULL, false);
}

void vfs_notify_name(struct vfs_node *dir, const char *name, struct vfs_node *child, uint32_t mask,
		     uint32_t cookie)
{
	struct vfs_attr da;

	if (!vfs_notify_active() || vfs_node_getattr(dir, &da) < 0)
		return;
	if (child && vfs_node_is_dir(child))
		mask |= VFS_IN_ISDIR;
	deliver(da.dev, da.ino, mask, cookie, name, false);
}

/* Ends every watch on inode (dev, ino), inotify's with IN_IGNORED: the inode is gone. */
static void drop_inode(uint64_t dev, uint64_t ino)
{
	struct dnotify_watch *d, *dtmp;
	struct notify_watch *w, *tmp;
	struct notify_inode *in;

	pthread_mutex_lock(&notify_lock);
	in = inode_find(dev, ino);
	if (in) {
		list_for_each_entry_safe(w, tmp, &in->watches, inode_link)
			watch_remove(w, true);
		list_for_each_entry_safe(d, dtmp, &in->dnotify, inode_link)
			dnotify_remove(d);
		inode_free_if_unused(in);
	}
	pthread_mutex_unlock(&notify_lock);
}

/* A node whose IN_DELETE_SELF waits for its last put, with its inode's key. */
struct notify_pending {
	struct notify_pending *next;
	struct vfs_node *n;
	uint64_t dev, ino;
};

static struct notify_pending *pending; /* notify_lock */

void vfs_notify_delete(struct vfs_node *dir, const char *name, struct vfs_node *victim, bool isdir,
		       bool attrib)
{
	struct notify_pending *p = NULL;
	struct vfs_attr a;
	bool gone, busy;

	if (!vfs_notify_active())
		return;
	if (attrib)
		vfs_notify_self(victim, VFS_IN_ATTRIB);
	if (vfs_node_getattr(victim, &a) < 0)
		return;
	gone = isdir || a.nlink == 0;
	/* Linux's dentry still in use (an open file, a cwd): the inode goes at the last put. */
	busy = gone && refcount_read(&victim->ref) > 1;
	if (busy) {
		p = malloc(sizeof(*p));
		if (!p)
			busy = false;
	}
	if (gone && !busy) {
		deliver(a.dev, a.ino, VFS_IN_DELETE_SELF, 0, NULL, false);
		drop_inode(a.dev, a.ino);
	}
	if (dir)
		vfs_notify_name(dir, name, victim, VFS_IN_DELETE, 0);
	if (busy) {
		*p = (struct notify_pending){ .n = victim, .dev = a.dev, .ino = a.ino };
		pthread_mutex_lock(&notify_lock);
		if (__atomic_load_n(&victim->notify_pending, __ATOMIC_RELAXED)) {
			free(p); /* already due (a directory removed twice cannot be) */
		} else {
			p->next = pending;
			pending = p;
			__atomic_store_n(&victim->notify_pending, true, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&notify_lock);
	}
}

void vfs_notify_node_gone(struct vfs_node *n)
{
	struct notify_pending **pp, *p = NULL;

	pthread_mutex_lock(&notify_lock);
	for (pp = &pending; *pp; pp = &(*pp)->next) {
		if ((*pp)->n == n) {
			p = *pp;
			*pp = p->next;
			break;
		}
	}
	__atomic_store_n(&n->notify_pending, false, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&notify_lock);
	if (!p)
		return;
	deliver(p->dev, p->ino, VFS_IN_DELETE_SELF, 0, NULL, false);
	drop_inode(p->dev, p->ino);
	free(p);
}

void vfs_notify_file(struct file *f, uint32_t mask)
{
	if (!vfs_notify_active() || !f || !f->node ||
	    (__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_PATH))
		return;
	vfs_notify_node(f->node, mask);
}

/* --- groups --- */

int notify_group_create(struct notify_group **out)
{
	struct notify_group *g;

	pthread_mutex_lock(&notify_lock);
	if (ngroups >= NOTIFY_MAX_GROUPS) {
		pthread_mutex_unlock(&notify_lock);
		return -EMFILE;
	}
	ngroups++;
	pthread_mutex_unlock(&notify_lock);
	g = calloc(1, sizeof(*g));
	if (!g) {
		pthread_mutex_lock(&notify_lock);
		ngroups--;
		pthread_mutex_unlock(&notify_lock);
		return -ENOMEM;
	}
	list_init(&g->watches);
	list_init(&g->events);
	pthread_mutex_init(&g->lock, NULL);
	waitq_init(&g->wq);
	g->next_wd = 1;
	*out = g;
	return 0;
}

void notify_group_destroy(struct notify_group *g)
{
	struct notify_watch *w, *tmp;
	struct notify_event *e, *etmp;

	if (!g)
		return;
	pthread_mutex_lock(&notify_lock);
	list_for_each_entry_safe(w, tmp, &g->watches, group_link) {
		struct notify_inode *in = w->in;

		watch_remove(w, false);
		inode_free_if_unused(in);
	}
	ngroups--;
	pthread_mutex_unlock(&notify_lock);
	list_for_each_entry_safe(e, etmp, &g->events, link)
		free(e);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

int notify_add_watch(struct notify_group *g, struct vfs_node *n, uint32_t mask)
{
	uint32_t keep = VFS_IN_ALL_EVENTS | VFS_IN_ONESHOT | VFS_IN_EXCL_UNLINK;
	struct notify_watch *w;
	struct notify_inode *in;
	struct vfs_attr a;
	int err, wd;

	if (!(mask & VFS_IN_ALL_EVENTS))
		return -EINVAL;
	if ((mask & VFS_IN_MASK_ADD) && (mask & VFS_IN_MASK_CREATE))
		return -EINVAL;
	err = vfs_node_getattr(n, &a);
	if (err < 0)
		return err;
	if ((mask & VFS_IN_ONLYDIR) && !S_ISDIR(a.mode))
		return -ENOTDIR;

	pthread_mutex_lock(&notify_lock);
	in = inode_find(a.dev, a.ino);
	if (in) {
		list_for_each_entry(w, &in->watches, inode_link) {
			if (w->g != g)
				continue;
			if (mask & VFS_IN_MASK_CREATE) {
				wd = -EEXIST;
			} else {
				if (mask & VFS_IN_MASK_ADD)
					w->mask |= mask & keep;
				else
					w->mask = mask & keep;
				wd = w->wd;
			}
			pthread_mutex_unlock(&notify_lock);
			return wd;
		}
	}
	if (__atomic_load_n(&vfs_notify_watches, __ATOMIC_RELAXED) >= NOTIFY_MAX_WATCHES) {
		wd = -ENOSPC;
		goto out_unlock;
	}
	if (!in) {
		size_t b = bucket_of(a.dev, a.ino);

		in = calloc(1, sizeof(*in));
		if (!in) {
			wd = -ENOMEM;
			goto out_unlock;
		}
		in->dev = a.dev;
		in->ino = a.ino;
		list_init(&in->watches);
		list_init(&in->dnotify);
		in->next = buckets[b];
		buckets[b] = in;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		inode_free_if_unused(in);
		wd = -ENOMEM;
		goto out_unlock;
	}
	w->in = in;
	w->g = g;
	w->mask = mask & keep;
	w->wd = wd = g->next_wd++;
	if (g->next_wd <= 0)
		g->next_wd = 1; /* wrapped: Linux's idr is cyclic too */
	list_add_tail(&w->inode_link, &in->watches);
	list_add_tail(&w->group_link, &g->watches);
	__atomic_add_fetch(&vfs_notify_watches, 1, __ATOMIC_RELAXED);
out_unlock:
	pthread_mutex_unlock(&notify_lock);
	return wd;
}

int notify_rm_watch(struct notify_group *g, int wd)
{
	struct notify_watch *w;

	pthread_mutex_lock(&notify_lock);
	list_for_each_entry(w, &g->watches, group_link) {
		if (w->wd == wd) {
			struct notify_inode *in = w->in;

			watch_remove(w, true);
			inode_free_if_unused(in);
			pthread_mutex_unlock(&notify_lock);
			return 0;
		}
	}
	pthread_mutex_unlock(&notify_lock);
	return -EINVAL;
}

ssize_t notify_group_read(struct notify_group *g, void *buf, size_t size)
{
	size_t done = 0;

	pthread_mutex_lock(&g->lock);
	if (list_empty(&g->events)) {
		pthread_mutex_unlock(&g->lock);
		return -EAGAIN;
	}
	while (!list_empty(&g->events)) {
		struct notify_event *e = list_first_entry(&g->events, struct notify_event, link);
		size_t need = EVENT_HDR + e->len;
		uint32_t hdr[3] = { e->mask, e->cookie, e->len };
		int32_t wd = e->wd;

		if (need > size - done)
			break;
		memcpy((char *)buf + done, &wd, 4);
		memcpy((char *)buf + done + 4, hdr, sizeof(hdr));
		memcpy((char *)buf + done + EVENT_HDR, e->name, e->len);
		done += need;
		list_del(&e->link);
		if (e->mask == VFS_IN_Q_OVERFLOW)
			g->overflow_queued = false;
		g->nevents--;
		g->bytes -= need;
		free(e);
	}
	pthread_mutex_unlock(&g->lock);
	return done ? (ssize_t)done : -EINVAL;
}

size_t notify_group_pending(struct notify_group *g)
{
	size_t n;

	pthread_mutex_lock(&g->lock);
	n = g->bytes;
	pthread_mutex_unlock(&g->lock);
	return n;
}

struct waitq *notify_group_waitq(struct notify_group *g)
{
	return &g->wq;
}

/* --- dnotify --- */

/* Finds the inode entry of (dev, ino), made if need be (notify_lock held). NULL: no memory. */
static struct notify_inode *inode_find_or_add(uint64_t dev, uint64_t ino)
{
	struct notify_inode *in = inode_find(dev, ino);
	size_t b = bucket_of(dev, ino);

	if (in)
		return in;
	in = calloc(1, sizeof(*in));
	if (!in)
		return NULL;
	in->dev = dev;
	in->ino = ino;
	list_init(&in->watches);
	list_init(&in->dnotify);
	in->next = buckets[b];
	buckets[b] = in;
	return in;
}

/* Drops the dnotify watches of f, of owner's only unless owner is NULL. */
static void dnotify_remove_of(const void *owner, const struct file *f)
{
	struct dnotify_watch *d, *tmp;

	if (!__atomic_load_n(&dnotify_count, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&notify_lock);
	list_for_each_entry_safe(d, tmp, &dnotify_all, all_link) {
		struct notify_inode *in = d->in;

		if (d->f != f || (owner && d->owner != owner))
			continue;
		dnotify_remove(d);
		inode_free_if_unused(in);
	}
	pthread_mutex_unlock(&notify_lock);
}

long vfs_dnotify_set(const struct dnotify_ops *ops, struct file_async *fa, const void *owner,
		     struct file *f, int fd, unsigned long arg)
{
	struct dnotify_watch *d;
	struct notify_inode *in;
	struct vfs_attr a;
	int err = 0;

	/* Linux's fcntl_dirnotify: no event is a removal, of any file. */
	if (!(arg & ~(unsigned long)VFS_DN_MULTISHOT)) {
		dnotify_remove_of(owner, f);
		goto out_put;
	}
	err = f->node ? vfs_node_getattr(f->node, &a) : -ENOTDIR;
	if (err < 0)
		goto out_put;
	if (!S_ISDIR(a.mode)) {
		err = -ENOTDIR;
		goto out_put;
	}
	pthread_mutex_lock(&notify_lock);
	in = inode_find_or_add(a.dev, a.ino);
	if (!in) {
		err = -ENOMEM;
		goto out_unlock;
	}
	list_for_each_entry(d, &in->dnotify, inode_link) {
		/* Linux's attach_dn: the events add up, and the last fd is the one reported. */
		if (d->f == f && d->owner == owner) {
			d->fd = fd;
			d->mask |= (uint32_t)arg;
			goto out_unlock;
		}
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		inode_free_if_unused(in);
		err = -ENOMEM;
		goto out_unlock;
	}
	d->in = in;
	d->f = f;
	d->owner = owner;
	d->ops = ops;
	d->fa = fa;
	fa = NULL; /* the watch's reference */
	d->fd = fd;
	d->mask = (uint32_t)arg;
	list_add_tail(&d->inode_link, &in->dnotify);
	list_add_tail(&d->all_link, &dnotify_all);
	__atomic_add_fetch(&dnotify_count, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&vfs_notify_watches, 1, __ATOMIC_RELAXED);
out_unlock:
	pthread_mutex_unlock(&notify_lock);
out_put:
	if (fa)
		ops->put(fa);
	return err;
}

void vfs_dnotify_close(const void *owner, struct file *f)
{
	dnotify_remove_of(owner, f);
}

void vfs_dnotify_release(struct file *f)
{
	dnotify_remove_of(NULL, f);
}
