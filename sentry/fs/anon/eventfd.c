/* SPDX-License-Identifier: Apache-2.0 */
/*
 * eventfd(2) files: a 64-bit counter. read takes the whole count (or 1 in semaphore mode) and
 * blocks at zero; write adds and blocks while the sum would exceed 0xfffffffffffffffe.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>

#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/fs/anon/anon.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/waitq.h"
#include "sentry/vfs/fs.h"

#define EVENTFD_MAX 0xfffffffffffffffeULL

struct eventfd {
	struct vfs_node node; /* first */
	pthread_mutex_t lock;
	struct waitq wq;
	uint64_t count; /* lock */
	bool semaphore;
};

static struct eventfd *file_efd(struct file *f)
{
	return f->priv;
}

/* Copies exactly 8 bytes between v and iov. */
static bool iov_copy8(const struct iovec *iov, int iovcnt, uint64_t *v, bool to_iov)
{
	uint8_t *b = (uint8_t *)v;
	size_t done = 0;

	for (int i = 0; i < iovcnt && done < 8; i++) {
		size_t n = MIN(iov[i].iov_len, 8 - done);

		if (to_iov)
			memcpy(iov[i].iov_base, b + done, n);
		else
			memcpy(b + done, iov[i].iov_base, n);
		done += n;
	}
	return done == 8;
}

static size_t iov_len(const struct iovec *iov, int iovcnt)
{
	size_t n = 0;

	for (int i = 0; i < iovcnt; i++)
		n += iov[i].iov_len;
	return n;
}

static bool efd_readable(void *arg)
{
	struct eventfd *e = arg;

	return __atomic_load_n(&e->count, __ATOMIC_ACQUIRE) > 0;
}

struct efd_write_arg {
	struct eventfd *e;
	uint64_t v;
};

static bool efd_writable(void *arg)
{
	struct efd_write_arg *a = arg;

	return __atomic_load_n(&a->e->count, __ATOMIC_ACQUIRE) < EVENTFD_MAX - a->v + 1;
}

static ssize_t efd_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	struct eventfd *e = file_efd(f);
	struct waitq *wq = &e->wq;
	struct task *t = task_current();
	uint64_t v;
	long r;

	if (iov_len(iov, iovcnt) < 8)
		return -EINVAL;
	for (;;) {
		pthread_mutex_lock(&e->lock);
		if (e->count > 0) {
			v = e->semaphore ? 1 : e->count;
			e->count -= v;
			pthread_mutex_unlock(&e->lock);
			waitq_wake_all(&e->wq);
			iov_copy8(iov, iovcnt, &v, true);
			return 8;
		}
		pthread_mutex_unlock(&e->lock);
		if ((__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_NONBLOCK) || !t)
			return -EAGAIN;
		r = task_wait(t, &wq, 1, efd_readable, e, NULL, true);
		if (r < 0)
			return r;
	}
}

static ssize_t efd_write(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	struct eventfd *e = file_efd(f);
	struct waitq *wq = &e->wq;
	struct task *t = task_current();
	struct efd_write_arg a = { e, 0 };
	long r;

	if (iov_len(iov, iovcnt) < 8)
		return -EINVAL;
	iov_copy8(iov, iovcnt, &a.v, false);
	if (a.v == UINT64_MAX)
		return -EINVAL;
	for (;;) {
		pthread_mutex_lock(&e->lock);
		if (e->count < EVENTFD_MAX - a.v + 1) {
			e->count += a.v;
			pthread_mutex_unlock(&e->lock);
			if (a.v)
				waitq_wake_all(&e->wq);
			return 8;
		}
		pthread_mutex_unlock(&e->lock);
		if ((__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_NONBLOCK) || !t)
			return -EAGAIN;
		r = task_wait(t, &wq, 1, efd_writable, &a, NULL, true);
		if (r < 0)
			return r;
	}
}

static unsigned int efd_poll(struct file *f, struct waitq **wq)
{
	struct eventfd *e = file_efd(f);
	unsigned int mask = 0;
	uint64_t c;

	if (wq)
		*wq = &e->wq;
	pthread_mutex_lock(&e->lock);
	c = e->count;
	pthread_mutex_unlock(&e->lock);
	if (c > 0)
		mask |= POLLIN | POLLRDNORM;
	if (c == UINT64_MAX)
		mask |= POLLERR;
	if (c < EVENTFD_MAX)
		mask |= POLLOUT | POLLWRNORM;
	return mask;
}

static int efd_getattr(struct vfs_node *n, struct vfs_attr *attr)
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

static void efd_node_release(struct vfs_node *n)
{
	struct eventfd *e = container_of(n, struct eventfd, node);

	pthread_mutex_destroy(&e->lock);
	free(e);
}

static const struct vfs_node_ops efd_node_ops = {
	.getattr = efd_getattr,
	.release = efd_node_release,
};

static const struct file_ops efd_ops = {
	.read = efd_read,
	.write = efd_write,
	.poll = efd_poll,
};

struct file *eventfd_create(uint64_t initval, int flags)
{
	struct eventfd *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	if (vfs_anon_node_init(&e->node, &efd_node_ops, S_IFREG) < 0) {
		free(e);
		return NULL;
	}
	pthread_mutex_init(&e->lock, NULL);
	waitq_init(&e->wq);
	e->count = initval;
	e->semaphore = flags & EFD_SEMAPHORE;
	return anon_file_create(&e->node, &efd_ops, O_RDWR | (flags & O_NONBLOCK), e);
}

void eventfd_save(struct file *f, uint64_t *count, bool *semaphore)
{
	struct eventfd *e = file_efd(f);

	pthread_mutex_lock(&e->lock);
	*count = e->count;
	*semaphore = e->semaphore;
	pthread_mutex_unlock(&e->lock);
}

bool file_is_eventfd(const struct file *f)
{
	return f->ops == &efd_ops;
}
