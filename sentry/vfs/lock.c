/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The lock table (lock.h). One mutex (table_lock) protects every inode entry, lock list,
 * waiter and owner count; it is a leaf except for the wait queues' own locks, which
 * waitq_wake_all takes under it. Blocking waits are task_wait on the inode's wait queue, with
 * the table lock released.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include "common/list.h"
#include "common/util.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/waitq.h"
#include "sentry/vfs/lock.h"
#include "sentry/vfs/vfs.h"

#define LOCK_END INT64_MAX /* a range "to the end of the file" ends here (inclusive) */
#define DEADLOCK_MAX_STEPS 10 /* as Linux's MAX_DEADLK_ITERATIONS */

/* One lock: [start, end] inclusive. */
struct file_lock {
	struct list_head link; /* in its inode's posix or flock list */
	int type; /* F_RDLCK or F_WRLCK */
	int64_t start, end;
	const void *owner; /* POSIX: the fd table; OFD and flock: the file */
	bool ofd; /* an OFD (or flock) lock: owned by a file */
	int32_t pid; /* POSIX: the setter's thread group; -1 for OFD locks */
};

/* The locks of one inode, with the queue its blocked lockers wait on. */
struct lock_inode {
	struct list_head link; /* in inodes */
	uint64_t dev, ino;
	struct list_head posix; /* POSIX and OFD locks */
	struct list_head flock; /* flock locks */
	int users; /* blocked lockers (and lock operations in progress) */
	struct waitq wq;
};

/* A blocked F_SETLKW of a POSIX owner: the wait-for graph's edges. */
struct lock_waiter {
	struct list_head link; /* in waiters */
	const void *owner;
	const void *blocker; /* the POSIX owner of the lock it waits for (NULL: an OFD lock) */
};

/* How many POSIX locks an owner holds, so that closes of owners with none cost nothing. */
struct lock_owner {
	struct list_head link; /* in owners */
	const void *owner;
	long count;
};

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct list_head inodes = LIST_HEAD_INIT(inodes);
static struct list_head waiters = LIST_HEAD_INIT(waiters);
static struct list_head owners = LIST_HEAD_INIT(owners);

/* --- inodes and owners (table_lock held) --- */

static struct lock_inode *inode_find(uint64_t dev, uint64_t ino, bool create)
{
	struct lock_inode *li;

	list_for_each_entry(li, &inodes, link) {
		if (li->dev == dev && li->ino == ino)
			return li;
	}
	if (!create)
		return NULL;
	li = calloc(1, sizeof(*li));
	if (!li)
		return NULL;
	li->dev = dev;
	li->ino = ino;
	list_init(&li->posix);
	list_init(&li->flock);
	waitq_init(&li->wq);
	list_add_tail(&li->link, &inodes);
	return li;
}

/* Frees li when nothing uses it any more. */
static void inode_maybe_free(struct lock_inode *li)
{
	if (li->users || !list_empty(&li->posix) || !list_empty(&li->flock))
		return;
	list_del(&li->link);
	pthread_mutex_destroy(&li->wq.lock);
	free(li);
}

static struct lock_owner *owner_find(const void *owner)
{
	struct lock_owner *o;

	list_for_each_entry(o, &owners, link) {
		if (o->owner == owner)
			return o;
	}
	return NULL;
}

/* Counts one more (delta 1) or fewer (-1) POSIX lock of owner; -ENOMEM only when adding. */
static int owner_count(const void *owner, long delta)
{
	struct lock_owner *o = owner_find(owner);

	if (!o) {
		if (delta < 0)
			return 0;
		o = calloc(1, sizeof(*o));
		if (!o)
			return -ENOMEM;
		o->owner = owner;
		list_add_tail(&o->link, &owners);
	}
	o->count += delta;
	if (o->count <= 0) {
		list_del(&o->link);
		free(o);
	}
	return 0;
}

static void lock_free(struct file_lock *fl)
{
	if (!fl->ofd)
		owner_count(fl->owner, -1);
	list_del(&fl->link);
	free(fl);
}

/* --- conflicts --- */

static bool same_owner(const struct file_lock *a, const void *owner, bool ofd)
{
	return a->owner == owner && a->ofd == ofd;
}

/* The first lock of list that conflicts with type over [start, end] for owner, or NULL. */
static struct file_lock *find_conflict(struct list_head *list, int type, int64_t start, int64_t end,
				       const void *owner, bool ofd)
{
	struct file_lock *fl;

	list_for_each_entry(fl, list, link) {
		if (same_owner(fl, owner, ofd))
			continue;
		if (fl->end < start || fl->start > end)
			continue;
		if (type == F_WRLCK || fl->type == F_WRLCK)
			return fl;
	}
	return NULL;
}

/*
 * Linux's posix_locks_deadlock: whether owner waiting for blocker closes a cycle of POSIX
 * owners, each blocked in F_SETLKW by the next.
 */
static bool would_deadlock(const void *owner, const void *blocker)
{
	for (int steps = 0; blocker && steps < DEADLOCK_MAX_STEPS; steps++) {
		struct lock_waiter *w;
		const void *next = NULL;

		if (blocker == owner)
			return true;
		list_for_each_entry(w, &waiters, link) {
			if (w->owner == blocker) {
				next = w->blocker;
				break;
			}
		}
		blocker = next;
	}
	return false;
}

/* --- setting locks --- */

/*
 * Sets (type F_RDLCK/F_WRLCK) or clears (F_UNLCK) owner's lock over [start, end] in list: the
 * owner's locks over the range are cut out (split when the range is inside one), then the new
 * lock is inserted and merged with the owner's adjacent locks of the same type. Returns 0 or
 * -ENOLCK (nothing changed).
 */
static int apply_lock(struct list_head *list, int type, int64_t start, int64_t end,
		      const void *owner, bool ofd, int32_t pid)
{
	struct file_lock *nl = NULL, *split = NULL, *fl, *tmp;

	if (type != F_UNLCK) {
		nl = calloc(1, sizeof(*nl));
		if (!nl || (!ofd && owner_count(owner, 1) < 0)) {
			free(nl);
			return -ENOLCK;
		}
		*nl = (struct file_lock){ .type = type,
					  .start = start,
					  .end = end,
					  .owner = owner,
					  .ofd = ofd,
					  .pid = ofd ? -1 : pid };
	}
	/* At most one split: when one lock strictly contains the range. */
	list_for_each_entry(fl, list, link) {
		if (same_owner(fl, owner, ofd) && fl->start < start && fl->end > end) {
			split = calloc(1, sizeof(*split));
			if (!split || (!ofd && owner_count(owner, 1) < 0)) {
				free(split);
				if (nl) {
					if (!ofd)
						owner_count(owner, -1);
					free(nl);
				}
				return -ENOLCK;
			}
			*split = *fl;
			split->start = end + 1;
			fl->end = start - 1;
			list_add(&split->link, &fl->link);
			break;
		}
	}
	list_for_each_entry_safe(fl, tmp, list, link) {
		if (fl == split || !same_owner(fl, owner, ofd))
			continue;
		if (fl->end < start || fl->start > end)
			continue;
		if (fl->start < start)
			fl->end = start - 1;
		else if (fl->end > end)
			fl->start = end + 1;
		else
			lock_free(fl);
	}
	if (!nl)
		return 0;
	/* Merge with adjacent locks of the owner of the same type. */
	list_for_each_entry_safe(fl, tmp, list, link) {
		if (!same_owner(fl, owner, ofd) || fl->type != type)
			continue;
		if ((nl->start > 0 && fl->end == nl->start - 1) ||
		    (nl->end != LOCK_END && fl->start == nl->end + 1)) {
			nl->start = MIN(nl->start, fl->start);
			nl->end = MAX(nl->end, fl->end);
			lock_free(fl);
		}
	}
	list_add_tail(&nl->link, list);
	return 0;
}

/* What one blocking lock request is: for the wait condition. */
struct lock_req {
	struct lock_inode *li;
	struct list_head *list;
	int type;
	int64_t start, end;
	const void *owner;
	bool ofd;
};

static bool lock_req_free(void *arg)
{
	struct lock_req *r = arg;
	bool free_now;

	pthread_mutex_lock(&table_lock);
	free_now = !find_conflict(r->list, r->type, r->start, r->end, r->owner, r->ofd);
	pthread_mutex_unlock(&table_lock);
	return free_now;
}

/*
 * Takes the lock r describes, waiting (wait) while it conflicts. posix: the request is a POSIX
 * owner's F_SETLKW, subject to deadlock detection. li is held (users) by the caller.
 */
static int lock_wait_apply(struct task *t, struct lock_req *r, bool wait, bool posix, int32_t pid)
{
	struct lock_waiter w = { .owner = r->owner };
	struct waitq *wq = &r->li->wq;
	bool waiting = false;
	int err;

	pthread_mutex_lock(&table_lock);
	for (;;) {
		struct file_lock *c = r->type == F_UNLCK ? NULL :
							   find_conflict(r->list, r->type, r->start,
									 r->end, r->owner, r->ofd);

		if (!c) {
			err = apply_lock(r->list, r->type, r->start, r->end, r->owner, r->ofd, pid);
			if (err == 0)
				waitq_wake_all(wq); /* a release or downgrade may free others */
			break;
		}
		if (!wait) {
			err = -EAGAIN;
			break;
		}
		if (posix && !c->ofd && would_deadlock(r->owner, c->owner)) {
			err = -EDEADLK;
			break;
		}
		if (posix) {
			w.blocker = c->ofd ? NULL : c->owner;
			if (!waiting)
				list_add_tail(&w.link, &waiters);
			waiting = true;
		}
		pthread_mutex_unlock(&table_lock);
		err = (int)task_wait(t, &wq, 1, lock_req_free, r, NULL, true);
		pthread_mutex_lock(&table_lock);
		if (err < 0)
			break;
	}
	if (waiting)
		list_del(&w.link);
	pthread_mutex_unlock(&table_lock);
	return err;
}

/* The inode key of f, remembered in f for its last close. */
static int file_key(struct file *f, uint64_t *dev, uint64_t *ino)
{
	struct vfs_attr a;
	int err = file_getattr(f, &a);

	if (err < 0)
		return err;
	*dev = a.dev;
	*ino = a.ino;
	return 0;
}

/* The inode entry of f, with one more user (put with inode_unuse). NULL: -ENOLCK. */
static struct lock_inode *inode_use(struct file *f, uint64_t dev, uint64_t ino, bool ofd_owner)
{
	struct lock_inode *li;

	pthread_mutex_lock(&table_lock);
	li = inode_find(dev, ino, true);
	if (li) {
		li->users++;
		if (ofd_owner) {
			f->lock_dev = dev;
			f->lock_ino = ino;
			__atomic_store_n(&f->lock_used, true, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&table_lock);
	return li;
}

static void inode_unuse(struct lock_inode *li)
{
	pthread_mutex_lock(&table_lock);
	li->users--;
	inode_maybe_free(li);
	pthread_mutex_unlock(&table_lock);
}

/* --- fcntl --- */

/* The range of fl for f: [*start, *end]. Returns 0 or -EINVAL/-EOVERFLOW. */
static int flock_range(struct file *f, const struct vfs_flock *fl, int64_t *start, int64_t *end)
{
	int64_t base = 0;

	switch (fl->whence) {
	case SEEK_SET:
		break;
	case SEEK_CUR:
		pthread_mutex_lock(&f->pos_lock);
		base = f->pos;
		pthread_mutex_unlock(&f->pos_lock);
		break;
	case SEEK_END: {
		struct vfs_attr a;
		int err = file_getattr(f, &a);

		if (err < 0)
			return err;
		base = a.size;
		break;
	}
	default:
		return -EINVAL;
	}
	if (__builtin_add_overflow(base, fl->start, start))
		return -EOVERFLOW;
	if (fl->len > 0) {
		if (__builtin_add_overflow(*start, fl->len - 1, end))
			return -EOVERFLOW;
	} else if (fl->len == 0) {
		*end = LOCK_END;
	} else {
		*end = *start - 1;
		if (__builtin_add_overflow(*start, fl->len, start))
			return -EINVAL;
	}
	if (*start < 0)
		return -EINVAL;
	return 0;
}

int vfs_fcntl_lock(struct task *t, struct file *f, int cmd, struct vfs_flock *fl)
{
	bool ofd = cmd == VFS_F_OFD_GETLK || cmd == VFS_F_OFD_SETLK || cmd == VFS_F_OFD_SETLKW;
	bool getlk = cmd == VFS_F_GETLK || cmd == VFS_F_OFD_GETLK;
	bool wait = cmd == VFS_F_SETLKW || cmd == VFS_F_OFD_SETLKW;
	int acc = __atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_ACCMODE;
	const void *owner = ofd ? (const void *)f : (const void *)t->fdt;
	struct lock_req r;
	uint64_t dev, ino;
	int64_t start, end;
	int err;

	if (ofd && fl->pid != 0)
		return -EINVAL;
	if (fl->type != F_RDLCK && fl->type != F_WRLCK && fl->type != F_UNLCK)
		return -EINVAL;
	if (getlk && fl->type == F_UNLCK)
		return -EINVAL;
	err = flock_range(f, fl, &start, &end);
	if (err < 0)
		return err;
	if (!getlk) {
		if (fl->type == F_RDLCK && acc != O_RDONLY && acc != O_RDWR)
			return -EBADF;
		if (fl->type == F_WRLCK && acc != O_WRONLY && acc != O_RDWR)
			return -EBADF;
	}
	err = file_key(f, &dev, &ino);
	if (err < 0)
		return err;

	if (getlk) {
		struct lock_inode *li;
		struct file_lock *c = NULL;

		pthread_mutex_lock(&table_lock);
		li = inode_find(dev, ino, false);
		if (li)
			c = find_conflict(&li->posix, fl->type, start, end, owner, ofd);
		if (c) {
			fl->type = (int16_t)c->type;
			fl->whence = SEEK_SET;
			fl->start = c->start;
			fl->len = c->end == LOCK_END ? 0 : c->end - c->start + 1;
			fl->pid = c->pid;
		} else {
			fl->type = F_UNLCK;
		}
		pthread_mutex_unlock(&table_lock);
		return 0;
	}

	r = (struct lock_req){
		.type = fl->type, .start = start, .end = end, .owner = owner, .ofd = ofd
	};
	r.li = inode_use(f, dev, ino, ofd);
	if (!r.li)
		return -ENOLCK;
	r.list = &r.li->posix;
	err = lock_wait_apply(t, &r, wait, !ofd, task_pid(t));
	inode_unuse(r.li);
	return err;
}

/* --- flock --- */

int vfs_flock(struct task *t, struct file *f, int op)
{
	int kind = op & ~LOCK_NB;
	struct lock_req r;
	uint64_t dev, ino;
	int err;

	if (kind != LOCK_SH && kind != LOCK_EX && kind != LOCK_UN)
		return -EINVAL;
	err = file_key(f, &dev, &ino);
	if (err < 0)
		return err;
	r = (struct lock_req){ .start = 0, .end = LOCK_END, .owner = f, .ofd = true };
	r.li = inode_use(f, dev, ino, true);
	if (!r.li)
		return -ENOLCK;
	r.list = &r.li->flock;
	/* A conversion first drops the lock held (Linux's flock_lock_inode). */
	r.type = F_UNLCK;
	err = lock_wait_apply(t, &r, false, false, 0);
	if (err == 0 && kind != LOCK_UN) {
		r.type = kind == LOCK_SH ? F_RDLCK : F_WRLCK;
		err = lock_wait_apply(t, &r, !(op & LOCK_NB), false, 0);
		if (err == -EAGAIN)
			err = -EWOULDBLOCK;
	}
	inode_unuse(r.li);
	return err;
}

/* --- releases --- */

/* Drops every lock of owner in list. Returns whether one was dropped. */
static bool drop_owner(struct list_head *list, const void *owner, bool ofd)
{
	struct file_lock *fl, *tmp;
	bool any = false;

	list_for_each_entry_safe(fl, tmp, list, link) {
		if (same_owner(fl, owner, ofd)) {
			lock_free(fl);
			any = true;
		}
	}
	return any;
}

void vfs_locks_close_posix(struct fdtable *owner, struct file *f)
{
	struct lock_inode *li;
	uint64_t dev, ino;
	bool has;

	pthread_mutex_lock(&table_lock);
	has = owner_find(owner) != NULL;
	pthread_mutex_unlock(&table_lock);
	if (!has || file_key(f, &dev, &ino) < 0)
		return;
	pthread_mutex_lock(&table_lock);
	li = inode_find(dev, ino, false);
	if (li && drop_owner(&li->posix, owner, false)) {
		waitq_wake_all(&li->wq);
		inode_maybe_free(li);
	}
	pthread_mutex_unlock(&table_lock);
}

void vfs_locks_owner_gone(struct fdtable *owner)
{
	struct lock_inode *li, *tmp;

	pthread_mutex_lock(&table_lock);
	if (owner_find(owner)) {
		list_for_each_entry_safe(li, tmp, &inodes, link) {
			if (drop_owner(&li->posix, owner, false)) {
				waitq_wake_all(&li->wq);
				inode_maybe_free(li);
			}
		}
	}
	pthread_mutex_unlock(&table_lock);
}

void vfs_locks_release_file(struct file *f)
{
	struct lock_inode *li;

	if (!__atomic_load_n(&f->lock_used, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&table_lock);
	li = inode_find(f->lock_dev, f->lock_ino, false);
	if (li) {
		bool any = drop_owner(&li->posix, f, true);

		any |= drop_owner(&li->flock, f, true);
		if (any)
			waitq_wake_all(&li->wq);
		inode_maybe_free(li);
	}
	pthread_mutex_unlock(&table_lock);
}
