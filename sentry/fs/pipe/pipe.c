/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pipes; see pipe.h. The data is a ring buffer under p->lock; p->wq is woken after every
 * change a reader, writer or poller could be waiting for (data, space, an end closing).
 *
 * Packets (O_DIRECT writers): a queue of segments records where packets start and end, as
 * Linux's pipe buffers do; a packet takes one of cap / PIPE_BUF slots. Stream data between
 * packets is one segment. With no packet in the pipe the queue is empty and unused.
 */
#include "sentry/fs/pipe/pipe.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "common/err.h"
#include "common/list.h"
#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/waitq.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/fs.h"

#define LINUX_SIGPIPE 13

struct pipe_seg {
	size_t len;
	bool packet;
};

struct pipe {
	struct vfs_node node; /* first: the files' nodes; released with the last */
	pthread_mutex_t lock;
	struct waitq wq;
	uint8_t *buf; /* lock: ring of cap bytes */
	size_t cap, head, len; /* lock */
	struct pipe_seg *segs; /* lock: ring of nslots; empty when no packet is queued */
	size_t seg_head, nsegs, nslots;
	int readers, writers; /* lock */
	/* lock: opens of each end so far; a FIFO's blocked open waits for the other's to change */
	unsigned int r_counter, w_counter;
	/* lock (after creation): the node's owners, permission bits and times (fchown, fchmod) */
	uint32_t uid, gid, mode;
	struct timespec atime, mtime, ctime;
	/* FIFOs only, under fifo_lock: the inode, the table link, the files (and opens) using it */
	uint64_t fifo_dev, fifo_ino;
	struct list_head fifo_link;
	int fifo_refs;
};

static const struct file_ops pipe_read_ops, pipe_write_ops;
static const struct file_ops fifo_read_ops, fifo_write_ops, fifo_rdwr_ops;

static struct pipe *file_pipe(struct file *f)
{
	return f->priv;
}

bool file_is_pipe(struct file *f)
{
	return f->ops == &pipe_read_ops || f->ops == &pipe_write_ops || f->ops == &fifo_read_ops ||
	       f->ops == &fifo_write_ops || f->ops == &fifo_rdwr_ops;
}

/* Whether f reads from its pipe (a read end, or a FIFO opened O_RDWR). */
static bool file_pipe_reads(struct file *f)
{
	return f->ops == &pipe_read_ops || f->ops == &fifo_read_ops || f->ops == &fifo_rdwr_ops;
}

static bool file_pipe_writes(struct file *f)
{
	return f->ops == &pipe_write_ops || f->ops == &fifo_write_ops || f->ops == &fifo_rdwr_ops;
}

static size_t iov_total(const struct iovec *iov, int iovcnt)
{
	size_t n = 0;

	for (int i = 0; i < iovcnt; i++)
		n += iov[i].iov_len;
	return n;
}

/* A cursor over an iovec array. */
struct iov_cursor {
	const struct iovec *iov;
	int cnt, i;
	size_t off;
};

/* Copies n bytes between the ring at logical offset start and the cursor (to_iov: ring->iov). */
static void ring_copy(struct pipe *p, size_t start, size_t n, struct iov_cursor *c, bool to_iov)
{
	while (n) {
		size_t pos = (p->head + start) % p->cap;
		size_t chunk = MIN(n, p->cap - pos);
		size_t seg;

		while (c->i < c->cnt && c->off == c->iov[c->i].iov_len) {
			c->i++;
			c->off = 0;
		}
		if (c->i >= c->cnt)
			return;
		seg = MIN(chunk, c->iov[c->i].iov_len - c->off);
		if (to_iov)
			memcpy((uint8_t *)c->iov[c->i].iov_base + c->off, p->buf + pos, seg);
		else
			memcpy(p->buf + pos, (const uint8_t *)c->iov[c->i].iov_base + c->off, seg);
		c->off += seg;
		start += seg;
		n -= seg;
	}
}

static void seg_pop_bytes(struct pipe *p, size_t n)
{
	while (n && p->nsegs) {
		struct pipe_seg *s = &p->segs[p->seg_head];
		size_t k = MIN(n, s->len);

		s->len -= k;
		n -= k;
		if (s->len == 0) {
			p->seg_head = (p->seg_head + 1) % p->nslots;
			p->nsegs--;
		}
	}
}

/* Number of segment slots a write of a packet (or stream data) would take now. */
static size_t seg_slots_needed(struct pipe *p, bool packet)
{
	if (packet)
		return 1 + (p->nsegs == 0 && p->len > 0); /* untracked stream data first */
	if (p->nsegs == 0 || !p->segs[(p->seg_head + p->nsegs - 1) % p->nslots].packet)
		return 0;
	return 1;
}

static bool seg_slots_ok(struct pipe *p, bool packet)
{
	return p->nsegs + seg_slots_needed(p, packet) <= p->nslots;
}

/* Records n bytes about to be appended (p->len not yet advanced); packet: one packet. */
static void seg_push(struct pipe *p, size_t n, bool packet)
{
	struct pipe_seg *last;

	if (!packet && p->nsegs == 0)
		return; /* pure stream: no bookkeeping */
	if (packet && p->nsegs == 0 && p->len > 0) {
		p->segs[p->seg_head] = (struct pipe_seg){ p->len, false };
		p->nsegs = 1;
	}
	last = p->nsegs ? &p->segs[(p->seg_head + p->nsegs - 1) % p->nslots] : NULL;
	if (!packet && last && !last->packet) {
		last->len += n;
		return;
	}
	p->segs[(p->seg_head + p->nsegs) % p->nslots] = (struct pipe_seg){ n, packet };
	p->nsegs++;
}

/* Reads what is in the pipe (p->len > 0) into iov. Called locked. */
static size_t pipe_take(struct pipe *p, const struct iovec *iov, int iovcnt, size_t want)
{
	struct iov_cursor c = { iov, iovcnt, 0, 0 };
	size_t n, consume;

	if (p->nsegs && p->segs[p->seg_head].packet) {
		/* One packet per read; what does not fit is dropped. */
		consume = p->segs[p->seg_head].len;
		n = MIN(want, consume);
	} else {
		consume = p->nsegs ? p->segs[p->seg_head].len : p->len;
		consume = n = MIN(want, consume);
	}
	ring_copy(p, 0, n, &c, true);
	seg_pop_bytes(p, consume);
	p->head = (p->head + consume) % p->cap;
	p->len -= consume;
	if (p->len == 0)
		p->head = 0;
	return n;
}

static bool pipe_readable(void *arg)
{
	struct pipe *p = arg;
	bool r;

	pthread_mutex_lock(&p->lock);
	r = p->len > 0 || p->writers == 0;
	pthread_mutex_unlock(&p->lock);
	return r;
}

static ssize_t pipe_do_read(struct file *f, const struct iovec *iov, int iovcnt, bool nonblock)
{
	struct pipe *p = file_pipe(f);
	struct waitq *wq = &p->wq;
	size_t want = iov_total(iov, iovcnt);
	struct task *t;
	long r;

	if (want == 0)
		return 0;
	for (;;) {
		pthread_mutex_lock(&p->lock);
		if (p->len > 0) {
			size_t n = pipe_take(p, iov, iovcnt, want);

			pthread_mutex_unlock(&p->lock);
			waitq_wake_all(&p->wq);
			return (ssize_t)n;
		}
		if (p->writers == 0) {
			pthread_mutex_unlock(&p->lock);
			return 0;
		}
		pthread_mutex_unlock(&p->lock);
		t = task_current();
		if (nonblock || (__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_NONBLOCK) || !t)
			return -EAGAIN;
		r = task_wait(t, &wq, 1, pipe_readable, p, NULL, true);
		if (r < 0)
			return r;
	}
}

static ssize_t pipe_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	(void)pos;
	return pipe_do_read(f, iov, iovcnt, false);
}

/* Free space a write of n bytes (atomic or not) needs to make progress. */
static size_t write_need(size_t n)
{
	return n <= LINUX_PIPE_BUF ? n : 1;
}

struct write_wait {
	struct pipe *p;
	size_t need;
	bool packet;
};

static bool pipe_writable_locked(struct pipe *p, size_t need, bool packet)
{
	if (p->readers == 0)
		return true;
	return seg_slots_ok(p, packet) && p->cap - p->len >= need;
}

static bool pipe_writable(void *arg)
{
	struct write_wait *w = arg;
	bool r;

	pthread_mutex_lock(&w->p->lock);
	r = pipe_writable_locked(w->p, w->need, w->packet);
	pthread_mutex_unlock(&w->p->lock);
	return r;
}

static void pipe_put_bytes(struct pipe *p, struct iov_cursor *c, size_t n, bool packet)
{
	ring_copy(p, p->len, n, c, false);
	seg_push(p, n, packet);
	p->len += n;
}

/*
 * Writes iov; total is the size of the whole write(2) this is (a part of), which decides
 * PIPE_BUF atomicity (a later part of a large write is not atomic).
 */
static ssize_t pipe_do_write(struct file *f, const struct iovec *iov, int iovcnt, size_t total,
			     bool nonblock)
{
	struct pipe *p = file_pipe(f);
	struct waitq *wq = &p->wq;
	struct iov_cursor c = { iov, iovcnt, 0, 0 };
	size_t want = iov_total(iov, iovcnt), done = 0;
	int flags = __atomic_load_n(&f->flags, __ATOMIC_RELAXED);
	bool packet = flags & O_DIRECT;
	struct task *t = task_current();

	if (want == 0)
		return 0;
	for (;;) {
		struct write_wait ww = { p, 0, packet };
		bool wrote = false;
		long r;

		pthread_mutex_lock(&p->lock);
		if (p->readers == 0) {
			pthread_mutex_unlock(&p->lock);
			if (t)
				signal_send_task(t, LINUX_SIGPIPE, NULL);
			return done ? (ssize_t)done : -EPIPE;
		}
		while (done < want && seg_slots_ok(p, packet)) {
			size_t left = want - done, n;

			if (packet) {
				n = MIN(left, (size_t)LINUX_PIPE_BUF);
				if (p->cap - p->len < n)
					break;
			} else if (left <= LINUX_PIPE_BUF && done == 0 && total <= LINUX_PIPE_BUF) {
				/* Atomic: all or nothing. */
				if (p->cap - p->len < left)
					break;
				n = left;
			} else {
				n = MIN(left, p->cap - p->len);
				if (n == 0)
					break;
			}
			pipe_put_bytes(p, &c, n, packet);
			done += n;
			wrote = true;
		}
		ww.need = packet ? MIN(want - done, (size_t)LINUX_PIPE_BUF) :
				   write_need(want - done);
		pthread_mutex_unlock(&p->lock);
		if (wrote)
			waitq_wake_all(&p->wq);
		if (done == want)
			return (ssize_t)done;
		if (nonblock || (flags & O_NONBLOCK) || !t)
			return done ? (ssize_t)done : -EAGAIN;
		r = task_wait(t, &wq, 1, pipe_writable, &ww, NULL, true);
		if (r < 0)
			return done ? (ssize_t)done : r;
	}
}

static ssize_t pipe_write(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	(void)pos;
	return pipe_do_write(f, iov, iovcnt, iov_total(iov, iovcnt), false);
}

ssize_t pipe_readv_nowait(struct file *f, const struct iovec *iov, int iovcnt)
{
	if (!file_pipe_reads(f))
		return -EINVAL;
	return pipe_do_read(f, iov, iovcnt, true);
}

ssize_t pipe_writev_nowait(struct file *f, const struct iovec *iov, int iovcnt, size_t total)
{
	if (!file_pipe_writes(f))
		return -EINVAL;
	return pipe_do_write(f, iov, iovcnt, total, true);
}

size_t pipe_nread(struct file *f)
{
	struct pipe *p = file_pipe(f);
	size_t n;

	if (!file_pipe_reads(f) && !file_pipe_writes(f))
		return 0;
	pthread_mutex_lock(&p->lock);
	n = p->len;
	pthread_mutex_unlock(&p->lock);
	return n;
}

long pipe_wait_ready(struct file *f, bool write, size_t left, size_t total)
{
	struct pipe *p = file_pipe(f);
	struct waitq *wq = &p->wq;
	struct task *t = task_current();

	if (!t)
		return -EAGAIN;
	if (!write && file_pipe_reads(f))
		return task_wait(t, &wq, 1, pipe_readable, p, NULL, true);
	if (write && file_pipe_writes(f)) {
		bool packet = __atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_DIRECT;
		struct write_wait ww = { p, 0, packet };

		if (packet)
			ww.need = MIN(left, (size_t)LINUX_PIPE_BUF);
		else
			ww.need = total <= LINUX_PIPE_BUF ? left : 1;
		return task_wait(t, &wq, 1, pipe_writable, &ww, NULL, true);
	}
	return -EINVAL;
}

static unsigned int pipe_poll_common(struct file *f, struct waitq **wq, bool rd)
{
	struct pipe *p = file_pipe(f);
	unsigned int mask = 0;

	if (wq)
		*wq = &p->wq;
	pthread_mutex_lock(&p->lock);
	if (rd) {
		if (p->len > 0)
			mask |= POLLIN | POLLRDNORM;
		/* A FIFO opened O_NONBLOCK with no writer hangs up only once one has come. */
		if (p->writers == 0 && f->pipe_wseen != p->w_counter + 1)
			mask |= POLLHUP;
	} else {
		/* Linux: writable while a slot (a page) is free. */
		bool packet = __atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_DIRECT;

		if (seg_slots_ok(p, packet) &&
		    p->cap - p->len >= MIN((size_t)LINUX_PIPE_BUF, p->cap))
			mask |= POLLOUT | POLLWRNORM;
		if (p->readers == 0)
			mask |= POLLERR;
	}
	pthread_mutex_unlock(&p->lock);
	return mask;
}

static unsigned int pipe_poll_read(struct file *f, struct waitq **wq)
{
	return pipe_poll_common(f, wq, true);
}

static unsigned int pipe_poll_write(struct file *f, struct waitq **wq)
{
	return pipe_poll_common(f, wq, false);
}

static long pipe_ioctl(struct file *f, struct task *t, unsigned int cmd, uint64_t arg)
{
	struct pipe *p = file_pipe(f);
	int val;

	if (cmd != FIONREAD)
		return -ENOTTY;
	pthread_mutex_lock(&p->lock);
	val = (int)p->len;
	pthread_mutex_unlock(&p->lock);
	if (mm_copy_out(t->mm, arg, &val, sizeof(val)) != sizeof(val))
		return -EFAULT;
	return 0;
}

static void pipe_release(struct file *f)
{
	struct pipe *p = file_pipe(f);

	pthread_mutex_lock(&p->lock);
	if (f->ops == &pipe_read_ops)
		p->readers--;
	else
		p->writers--;
	pthread_mutex_unlock(&p->lock);
	waitq_wake_all(&p->wq);
}

static int pipe_node_getattr(struct vfs_node *n, struct vfs_attr *attr)
{
	struct pipe *p = container_of(n, struct pipe, node);

	pthread_mutex_lock(&p->lock);
	*attr = (struct vfs_attr){
		.dev = n->fs->dev,
		.ino = (uint64_t)(uintptr_t)p >> 4,
		.nlink = 1,
		.mode = S_IFIFO | p->mode,
		.uid = p->uid,
		.gid = p->gid,
		.blksize = 4096,
		.atime = p->atime,
		.mtime = p->mtime,
		.ctime = p->ctime,
	};
	pthread_mutex_unlock(&p->lock);
	return 0;
}

/*
 * fchown, fchmod and utimensat of an anonymous pipe's end (the VFS checked the caller's rights):
 * kept on the pipe, as Linux's pipefs inode keeps them (buildah hands its container a stdin pipe
 * it chowned to the container's user). A size is -EINVAL (ftruncate never gets here for a pipe).
 */
static int pipe_node_setattr(struct vfs_node *n, const struct vfs_setattr *sa)
{
	struct pipe *p = container_of(n, struct pipe, node);
	struct timespec now;

	if (sa->valid & VFS_SETATTR_SIZE)
		return -EINVAL;
	clock_gettime(CLOCK_REALTIME, &now);
	pthread_mutex_lock(&p->lock);
	if (sa->valid & VFS_SETATTR_MODE)
		p->mode = sa->mode & 07777;
	if (sa->valid & VFS_SETATTR_UID)
		p->uid = sa->uid;
	if (sa->valid & VFS_SETATTR_GID)
		p->gid = sa->gid;
	if (sa->valid & VFS_SETATTR_ATIME)
		p->atime = sa->atime;
	if (sa->valid & VFS_SETATTR_MTIME)
		p->mtime = sa->mtime;
	p->ctime = (sa->valid & VFS_SETATTR_CTIME) ? sa->ctime : now;
	pthread_mutex_unlock(&p->lock);
	return 0;
}

static void pipe_node_release(struct vfs_node *n)
{
	struct pipe *p = container_of(n, struct pipe, node);

	pthread_mutex_destroy(&p->lock);
	free(p->buf);
	free(p->segs);
	free(p);
}

static const struct vfs_node_ops pipe_node_ops = {
	.getattr = pipe_node_getattr,
	.setattr = pipe_node_setattr,
	.release = pipe_node_release,
};

static struct file *pipe_file(struct pipe *p, const struct file_ops *ops, int flags)
{
	struct file *f = file_alloc(ops, flags, p);

	if (!f)
		return NULL;
	vfs_node_get(&p->node);
	f->node = &p->node;
	f->mnt = vfs_anon_mount();
	vfs_mount_get(f->mnt);
	return f;
}

/* A pipe with no end open; its node has one reference. NULL when out of memory. */
static struct pipe *pipe_alloc(uint32_t uid, uint32_t gid)
{
	struct pipe *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->cap = PIPE_DEF_SIZE;
	p->nslots = p->cap / LINUX_PIPE_BUF;
	p->buf = malloc(p->cap);
	p->segs = calloc(p->nslots, sizeof(*p->segs));
	if (!p->buf || !p->segs || vfs_anon_node_init(&p->node, &pipe_node_ops, S_IFIFO) < 0) {
		free(p->buf);
		free(p->segs);
		free(p);
		return NULL;
	}
	pthread_mutex_init(&p->lock, NULL);
	waitq_init(&p->wq);
	list_init(&p->fifo_link);
	p->uid = uid;
	p->gid = gid;
	p->mode = 0600;
	clock_gettime(CLOCK_REALTIME, &p->ctime);
	p->atime = p->mtime = p->ctime;
	return p;
}

int pipe_create(int flags, uint32_t uid, uint32_t gid, struct file *ends[2])
{
	struct pipe *p = pipe_alloc(uid, gid);

	if (!p)
		return -ENOMEM;
	p->readers = p->writers = 1;
	flags &= O_NONBLOCK | O_DIRECT;
	ends[0] = pipe_file(p, &pipe_read_ops, O_RDONLY | flags);
	ends[1] = pipe_file(p, &pipe_write_ops, O_WRONLY | flags);
	if (!ends[0] || !ends[1]) {
		/* The files' release ops would count ends that never existed: drop them raw. */
		p->readers = p->writers = 2;
		file_put(ends[0]);
		file_put(ends[1]);
		vfs_node_put(&p->node);
		return -ENOMEM;
	}
	/* The node's first reference was only for construction. */
	vfs_node_put(&p->node);
	return 0;
}

/* Rounds size up to a power-of-two number of pages, as Linux's round_pipe_size. */
static size_t round_pipe_size(uint64_t size)
{
	size_t r = PAGE_SIZE;

	if (size > (1ULL << 31))
		return 0;
	while (r < size)
		r <<= 1;
	return r;
}

static int pipe_resize(struct pipe *p, size_t cap)
{
	uint8_t *nbuf;
	struct pipe_seg *nsegs;
	size_t nslots = cap / LINUX_PIPE_BUF;
	int ret = 0;

	nbuf = malloc(cap);
	nsegs = calloc(nslots, sizeof(*nsegs));
	if (!nbuf || !nsegs) {
		free(nbuf);
		free(nsegs);
		return -ENOMEM;
	}
	pthread_mutex_lock(&p->lock);
	if (p->len > cap || p->nsegs > nslots) {
		ret = -EBUSY;
	} else {
		struct iovec iov = { nbuf, p->len };
		struct iov_cursor c = { &iov, 1, 0, 0 };

		ring_copy(p, 0, p->len, &c, true);
		for (size_t i = 0; i < p->nsegs; i++)
			nsegs[i] = p->segs[(p->seg_head + i) % p->nslots];
		free(p->buf);
		free(p->segs);
		p->buf = nbuf;
		p->segs = nsegs;
		p->cap = cap;
		p->nslots = nslots;
		p->head = 0;
		p->seg_head = 0;
		nbuf = NULL;
		nsegs = NULL;
	}
	pthread_mutex_unlock(&p->lock);
	free(nbuf);
	free(nsegs);
	if (ret == 0)
		waitq_wake_all(&p->wq);
	return ret;
}

long pipe_fcntl(struct task *t, struct file *f, int cmd, uint64_t arg)
{
	struct pipe *p;
	size_t cap;
	long ret;

	if (!file_is_pipe(f))
		return -EBADF;
	p = file_pipe(f);
	if (cmd == F_GETPIPE_SZ) {
		pthread_mutex_lock(&p->lock);
		cap = p->cap;
		pthread_mutex_unlock(&p->lock);
		return (long)cap;
	}
	if (cmd != F_SETPIPE_SZ)
		return -EINVAL;
	cap = round_pipe_size((uint32_t)arg);
	if (cap == 0)
		return -EINVAL;
	if (cap > PIPE_MAX_SIZE && !(t->cred.cap_effective & (1ULL << CAP_SYS_RESOURCE)))
		return -EPERM;
	ret = pipe_resize(p, cap);
	return ret < 0 ? ret : (long)cap;
}

ssize_t pipe_peek(struct file *f, void *buf, size_t len, bool nonblock)
{
	struct pipe *p;
	struct waitq *wq;
	struct task *t;
	long r;

	if (!file_is_pipe(f) || !file_pipe_reads(f))
		return -EINVAL;
	p = file_pipe(f);
	wq = &p->wq;
	if (len == 0)
		return 0;
	for (;;) {
		pthread_mutex_lock(&p->lock);
		if (p->len > 0) {
			struct iovec iov = { buf, len };
			struct iov_cursor c = { &iov, 1, 0, 0 };
			size_t n = MIN(len, p->len);

			ring_copy(p, 0, n, &c, true);
			pthread_mutex_unlock(&p->lock);
			return (ssize_t)n;
		}
		if (p->writers == 0) {
			pthread_mutex_unlock(&p->lock);
			return 0;
		}
		pthread_mutex_unlock(&p->lock);
		t = task_current();
		if (nonblock || (__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_NONBLOCK) || !t)
			return -EAGAIN;
		r = task_wait(t, &wq, 1, pipe_readable, p, NULL, true);
		if (r < 0)
			return r;
	}
}

ssize_t pipe_fill(struct file *f, const void *buf, size_t len, bool nonblock)
{
	struct pipe *p;
	struct waitq *wq;
	struct task *t = task_current();
	long r;

	if (!file_is_pipe(f) || !file_pipe_writes(f))
		return -EINVAL;
	p = file_pipe(f);
	wq = &p->wq;
	for (;;) {
		struct write_wait ww = { p, 1, false };
		size_t n = 0;

		pthread_mutex_lock(&p->lock);
		if (p->readers == 0) {
			pthread_mutex_unlock(&p->lock);
			if (t)
				signal_send_task(t, LINUX_SIGPIPE, NULL);
			return -EPIPE;
		}
		if (len == 0) {
			pthread_mutex_unlock(&p->lock);
			return 0;
		}
		if (seg_slots_ok(p, false))
			n = MIN(len, p->cap - p->len);
		if (n) {
			struct iovec iov = { (void *)buf, n };
			struct iov_cursor c = { &iov, 1, 0, 0 };

			pipe_put_bytes(p, &c, n, false);
		}
		pthread_mutex_unlock(&p->lock);
		if (n) {
			waitq_wake_all(&p->wq);
			return (ssize_t)n;
		}
		if (nonblock || (__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_NONBLOCK) || !t)
			return -EAGAIN;
		r = task_wait(t, &wq, 1, pipe_writable, &ww, NULL, true);
		if (r < 0)
			return r;
	}
}

/* --- FIFOs: one pipe per inode while it is open --- */

/* The pipes of open FIFOs (fifo_refs > 0), by inode. A leaf lock, never held with pipe->lock. */
static pthread_mutex_t fifo_lock = PTHREAD_MUTEX_INITIALIZER;
static struct list_head fifo_table = LIST_HEAD_INIT(fifo_table);

/*
 * The pipe of the FIFO inode (dev, ino), made if it has none: a new fifo_refs count and node
 * reference (fifo_put drops both). NULL when out of memory.
 */
static struct pipe *fifo_get(uint64_t dev, uint64_t ino, uint32_t uid, uint32_t gid)
{
	struct pipe *p;

	pthread_mutex_lock(&fifo_lock);
	list_for_each_entry(p, &fifo_table, fifo_link) {
		if (p->fifo_dev == dev && p->fifo_ino == ino) {
			p->fifo_refs++;
			vfs_node_get(&p->node);
			pthread_mutex_unlock(&fifo_lock);
			return p;
		}
	}
	p = pipe_alloc(uid, gid);
	if (p) {
		p->fifo_dev = dev;
		p->fifo_ino = ino;
		p->fifo_refs = 1; /* the construction reference of the node is this one's */
		list_add_tail(&p->fifo_link, &fifo_table);
	}
	pthread_mutex_unlock(&fifo_lock);
	return p;
}

static void fifo_put(struct pipe *p)
{
	pthread_mutex_lock(&fifo_lock);
	if (--p->fifo_refs == 0)
		list_del(&p->fifo_link); /* the buffer goes with the last opener */
	pthread_mutex_unlock(&fifo_lock);
	vfs_node_put(&p->node);
}

struct fifo_wait {
	struct pipe *p;
	const unsigned int *counter;
	unsigned int seen;
};

/* Whether the other end was opened since the wait began (it may be closed again already). */
static bool fifo_partner_came(void *arg)
{
	struct fifo_wait *w = arg;
	bool r;

	pthread_mutex_lock(&w->p->lock);
	r = *w->counter != w->seen;
	pthread_mutex_unlock(&w->p->lock);
	return r;
}

/* Takes back the ends an open counted (rd, wr) and its reference on p. */
static void fifo_open_undo(struct pipe *p, bool rd, bool wr)
{
	pthread_mutex_lock(&p->lock);
	p->readers -= rd;
	p->writers -= wr;
	pthread_mutex_unlock(&p->lock);
	waitq_wake_all(&p->wq);
	fifo_put(p);
}

struct file *pipe_fifo_open(struct vfs_node *n, int flags)
{
	int acc = flags & O_ACCMODE;
	bool rd = acc == O_RDONLY || acc == O_RDWR, wr = acc == O_WRONLY || acc == O_RDWR;
	bool nonblock = flags & O_NONBLOCK, wake = false;
	struct fifo_wait w = { NULL, NULL, 0 };
	unsigned int wseen = 0;
	struct vfs_attr a;
	struct pipe *p;
	struct file *f;
	int err;

	if (!rd && !wr)
		return ERR_PTR(-EINVAL); /* mode 3: Linux's fifo_open knows neither end */
	err = vfs_node_getattr(n, &a);
	if (err < 0)
		return ERR_PTR(err);
	p = fifo_get(a.dev, a.ino, a.uid, a.gid);
	if (!p)
		return ERR_PTR(-ENOMEM);
	pthread_mutex_lock(&p->lock);
	if (wr && !rd && nonblock && p->readers == 0) {
		pthread_mutex_unlock(&p->lock);
		fifo_put(p);
		return ERR_PTR(-ENXIO);
	}
	if (rd) {
		p->r_counter++;
		wake |= p->readers++ == 0;
	}
	if (wr) {
		p->w_counter++;
		wake |= p->writers++ == 0;
	}
	w.p = p;
	if (rd && !wr && p->writers == 0) {
		if (nonblock)
			wseen = p->w_counter + 1; /* no POLLHUP until a writer came */
		else
			w.counter = &p->w_counter;
	} else if (wr && !rd && p->readers == 0) {
		w.counter = &p->r_counter;
	}
	if (w.counter)
		w.seen = *w.counter;
	pthread_mutex_unlock(&p->lock);
	if (wake)
		waitq_wake_all(&p->wq);
	if (w.counter) {
		struct waitq *wq = &p->wq;
		struct task *t = task_current();
		long r = t ? task_wait(t, &wq, 1, fifo_partner_came, &w, NULL, true) : -EAGAIN;

		if (r < 0) {
			fifo_open_undo(p, rd, wr);
			return ERR_PTR(r);
		}
	}
	f = file_alloc(rd && wr ? &fifo_rdwr_ops : rd ? &fifo_read_ops : &fifo_write_ops, flags, p);
	if (!f) {
		fifo_open_undo(p, rd, wr);
		return ERR_PTR(-ENOMEM);
	}
	f->pipe_wseen = wseen;
	return f;
}

static void fifo_release(struct file *f)
{
	struct pipe *p = file_pipe(f);

	fifo_open_undo(p, file_pipe_reads(f), file_pipe_writes(f));
}

static unsigned int fifo_poll_rdwr(struct file *f, struct waitq **wq)
{
	return pipe_poll_common(f, wq, true) | pipe_poll_common(f, NULL, false);
}

/* --- checkpoint and restore --- */

int pipe_save(struct file *f, struct pipe_state *st)
{
	struct pipe *p;
	int err = 0;

	if (!file_is_pipe(f))
		return -EINVAL;
	p = file_pipe(f);
	memset(st, 0, sizeof(*st));
	st->id = p;
	st->fifo = f->ops == &fifo_read_ops || f->ops == &fifo_write_ops ||
		   f->ops == &fifo_rdwr_ops;
	st->rd = file_pipe_reads(f);
	st->wr = file_pipe_writes(f);
	st->wseen = f->pipe_wseen;
	pthread_mutex_lock(&p->lock);
	st->cap = p->cap;
	st->len = p->len;
	st->nsegs = p->nsegs;
	st->uid = p->uid;
	st->gid = p->gid;
	st->mode = p->mode;
	st->r_counter = p->r_counter;
	st->w_counter = p->w_counter;
	st->data = malloc(p->len ? p->len : 1);
	st->segs = calloc(p->nsegs ? p->nsegs : 1, sizeof(*st->segs));
	if (!st->data || !st->segs) {
		err = -ENOMEM;
	} else {
		struct iovec iov = { st->data, p->len };
		struct iov_cursor c = { &iov, 1, 0, 0 };

		ring_copy(p, 0, p->len, &c, true);
		for (size_t i = 0; i < p->nsegs; i++) {
			struct pipe_seg *sg = &p->segs[(p->seg_head + i) % p->nslots];

			st->segs[i] = (struct pipe_state_seg){ sg->len, sg->packet };
		}
	}
	pthread_mutex_unlock(&p->lock);
	if (err < 0) {
		free(st->data);
		free(st->segs);
		st->data = NULL;
		st->segs = NULL;
	}
	return err;
}

/* Gives p (no file open on it) st's contents. 0, -EINVAL (inconsistent), -ENOMEM. */
static int pipe_load(struct pipe *p, const struct pipe_state *st)
{
	size_t total = 0;
	int err;

	if (st->cap < PAGE_SIZE || st->cap > ((size_t)1 << 31) || (st->cap & (st->cap - 1)) ||
	    st->len > st->cap || st->nsegs > st->cap / LINUX_PIPE_BUF || (st->len && !st->data))
		return -EINVAL;
	for (size_t i = 0; i < st->nsegs; i++) {
		if (st->segs[i].len == 0 || st->segs[i].len > st->cap ||
		    (st->segs[i].packet && st->segs[i].len > LINUX_PIPE_BUF))
			return -EINVAL;
		total += st->segs[i].len;
	}
	if (st->nsegs && total != st->len)
		return -EINVAL;
	if (st->cap != p->cap) {
		err = pipe_resize(p, st->cap);
		if (err < 0)
			return err;
	}
	pthread_mutex_lock(&p->lock);
	memcpy(p->buf, st->data, st->len);
	p->head = 0;
	p->len = st->len;
	p->seg_head = 0;
	p->nsegs = st->nsegs;
	for (size_t i = 0; i < st->nsegs; i++)
		p->segs[i] = (struct pipe_seg){ st->segs[i].len, st->segs[i].packet };
	p->r_counter = st->r_counter;
	p->w_counter = st->w_counter;
	p->uid = st->uid;
	p->gid = st->gid;
	p->mode = st->mode & 07777;
	pthread_mutex_unlock(&p->lock);
	return 0;
}

struct vfs_node *pipe_restore_new(const struct pipe_state *st)
{
	struct pipe *p = pipe_alloc(st->uid, st->gid);
	int err;

	if (!p)
		return ERR_PTR(-ENOMEM);
	err = pipe_load(p, st);
	if (err < 0) {
		vfs_node_put(&p->node);
		return ERR_PTR(err);
	}
	return &p->node;
}

struct file *pipe_restore_end(struct vfs_node *pipe, bool rd, int flags)
{
	struct pipe *p = container_of(pipe, struct pipe, node);
	struct file *f = pipe_file(p, rd ? &pipe_read_ops : &pipe_write_ops, flags);

	if (!f)
		return ERR_PTR(-ENOMEM);
	pthread_mutex_lock(&p->lock);
	if (rd)
		p->readers++;
	else
		p->writers++;
	pthread_mutex_unlock(&p->lock);
	return f;
}

struct file *pipe_restore_fifo(struct vfs_node *n, const struct pipe_state *st, bool fill,
			       int flags)
{
	struct vfs_attr a;
	struct pipe *p;
	struct file *f;
	int err;

	if (!st->rd && !st->wr)
		return ERR_PTR(-EINVAL);
	err = vfs_node_getattr(n, &a);
	if (err < 0)
		return ERR_PTR(err);
	p = fifo_get(a.dev, a.ino, a.uid, a.gid);
	if (!p)
		return ERR_PTR(-ENOMEM);
	if (fill) {
		pthread_mutex_lock(&p->lock);
		err = p->readers || p->writers ? -EINVAL : 0;
		pthread_mutex_unlock(&p->lock);
		if (err == 0)
			err = pipe_load(p, st);
		if (err < 0) {
			fifo_put(p);
			return ERR_PTR(err);
		}
	}
	pthread_mutex_lock(&p->lock);
	p->readers += st->rd;
	p->writers += st->wr;
	pthread_mutex_unlock(&p->lock);
	f = file_alloc(st->rd && st->wr ? &fifo_rdwr_ops :
		       st->rd		? &fifo_read_ops :
					  &fifo_write_ops,
		       flags, p);
	if (!f) {
		fifo_open_undo(p, st->rd, st->wr);
		return ERR_PTR(-ENOMEM);
	}
	f->pipe_wseen = st->wseen;
	return f;
}

static const struct file_ops pipe_read_ops = {
	.read = pipe_read,
	.poll = pipe_poll_read,
	.ioctl = pipe_ioctl,
	.release = pipe_release,
};

static const struct file_ops pipe_write_ops = {
	.write = pipe_write,
	.poll = pipe_poll_write,
	.ioctl = pipe_ioctl,
	.release = pipe_release,
};

static const struct file_ops fifo_read_ops = {
	.read = pipe_read,
	.poll = pipe_poll_read,
	.ioctl = pipe_ioctl,
	.release = fifo_release,
};

static const struct file_ops fifo_write_ops = {
	.write = pipe_write,
	.poll = pipe_poll_write,
	.ioctl = pipe_ioctl,
	.release = fifo_release,
};

static const struct file_ops fifo_rdwr_ops = {
	.read = pipe_read,
	.write = pipe_write,
	.poll = fifo_poll_rdwr,
	.ioctl = pipe_ioctl,
	.release = fifo_release,
};
