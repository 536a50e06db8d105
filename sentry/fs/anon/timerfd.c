/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timerfd files: a callback timer of sentry/kernel/timer.c whose expirations read(2) takes as
 * one 8-byte count, blocking (interruptibly) while there are none.
 *
 * The timer thread calls tfd_expired() with the timer lock held; it only wakes the file's wait
 * queue. The file's release destroys the timer (which waits for a running callback) before
 * the node, which embeds the wait queue, can go.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/fs/anon/anon.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/timer.h"
#include "sentry/kernel/waitq.h"
#include "sentry/vfs/fs.h"

struct timerfd {
	struct vfs_node node; /* first */
	struct waitq wq; /* woken on each expiry */
	struct ktimer *kt; /* owned; set once at creation */
	int clockid; /* the guest's clock id */
};

static const struct file_ops tfd_ops;

static struct timerfd *file_tfd(struct file *f)
{
	return f->priv;
}

bool file_is_timerfd(struct file *f)
{
	return f->ops == &tfd_ops;
}

static void tfd_expired(void *arg)
{
	struct timerfd *tfd = arg;

	waitq_wake_all(&tfd->wq);
}

static bool tfd_readable(void *arg)
{
	struct timerfd *tfd = arg;

	return timer_cb_ticks(tfd->kt, false) > 0;
}

/* Copies the 8 bytes of v to the start of iov (whose total length the caller checked). */
static void iov_put8(const struct iovec *iov, int iovcnt, uint64_t v)
{
	const uint8_t *b = (const uint8_t *)&v;
	size_t done = 0;

	for (int i = 0; i < iovcnt && done < 8; i++) {
		size_t n = MIN(iov[i].iov_len, 8 - done);

		memcpy(iov[i].iov_base, b + done, n);
		done += n;
	}
}

static ssize_t tfd_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	struct timerfd *tfd = file_tfd(f);
	struct waitq *wq = &tfd->wq;
	struct task *t = task_current();
	size_t len = 0;
	uint64_t n;
	long r;

	(void)pos;
	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (len < 8)
		return -EINVAL;
	for (;;) {
		n = timer_cb_ticks(tfd->kt, true);
		if (n) {
			iov_put8(iov, iovcnt, n);
			return 8;
		}
		if ((__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_NONBLOCK) || !t)
			return -EAGAIN;
		r = task_wait(t, &wq, 1, tfd_readable, tfd, NULL, true);
		if (r < 0)
			return r;
	}
}

static unsigned int tfd_poll(struct file *f, struct waitq **wq)
{
	struct timerfd *tfd = file_tfd(f);

	if (wq)
		*wq = &tfd->wq;
	return timer_cb_ticks(tfd->kt, false) ? POLLIN | POLLRDNORM : 0;
}

static void tfd_release(struct file *f)
{
	struct timerfd *tfd = file_tfd(f);

	timer_cb_destroy(tfd->kt);
	tfd->kt = NULL;
}

static int tfd_getattr(struct vfs_node *n, struct vfs_attr *attr)
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

static void tfd_node_release(struct vfs_node *n)
{
	struct timerfd *tfd = container_of(n, struct timerfd, node);

	timer_cb_destroy(tfd->kt); /* still there only if no file was made */
	free(tfd);
}

int timerfd_settime_file(struct file *f, bool abs, const struct timer_spec *new,
			 struct timer_spec *old)
{
	return timer_cb_settime(file_tfd(f)->kt, abs, new, old);
}

void timerfd_gettime_file(struct file *f, struct timer_spec *cur)
{
	timer_cb_gettime(file_tfd(f)->kt, cur);
}

void timerfd_save(struct file *f, int *clockid, int *host_clock, uint64_t *expiry,
		  uint64_t *interval, uint64_t *ticks)
{
	struct timerfd *tfd = file_tfd(f);

	*clockid = tfd->clockid;
	timer_cb_save(tfd->kt, host_clock, expiry, interval, ticks);
}

int timerfd_restore(struct file *f, uint64_t expiry, uint64_t interval, uint64_t ticks)
{
	return timer_cb_restore(file_tfd(f)->kt, expiry, interval, ticks);
}

static const struct vfs_node_ops tfd_node_ops = {
	.getattr = tfd_getattr,
	.release = tfd_node_release,
};

static const struct file_ops tfd_ops = {
	.read = tfd_read,
	.poll = tfd_poll,
	.release = tfd_release,
};

struct file *timerfd_create_file(int clockid, int host_clock, int flags)
{
	struct timerfd *tfd = calloc(1, sizeof(*tfd));

	if (!tfd)
		return NULL;
	if (vfs_anon_node_init(&tfd->node, &tfd_node_ops, S_IFREG) < 0) {
		free(tfd);
		return NULL;
	}
	waitq_init(&tfd->wq);
	tfd->clockid = clockid;
	tfd->kt = timer_cb_create(host_clock, tfd_expired, tfd);
	if (!tfd->kt) {
		vfs_node_put(&tfd->node);
		return NULL;
	}
	return anon_file_create(&tfd->node, &tfd_ops, O_RDWR | (flags & O_NONBLOCK), tfd);
}
