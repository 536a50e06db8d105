/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inotify files: an anon file around a notify group (sentry/vfs/notify.c keeps the watches and
 * the queue). read takes whole struct inotify_event records and blocks while the queue is empty;
 * poll says POLLIN when it is not; FIONREAD gives the queued bytes.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/fs/anon/anon.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/waitq.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/fs.h"
#include "sentry/vfs/notify.h"

/* What one read copies at most (whole events; the rest stays queued). */
#define INOTIFY_READ_MAX 65536

struct inotify {
	struct vfs_node node; /* first */
	struct notify_group *g; /* owned */
};

static const struct file_ops inotify_ops;

static struct inotify *file_ino(struct file *f)
{
	return f->priv;
}

bool file_is_inotify(struct file *f)
{
	return f && f->ops == &inotify_ops;
}

static bool inotify_readable(void *arg)
{
	return notify_group_pending(arg) > 0;
}

/* Copies len bytes of buf into iov. */
static void iov_fill(const struct iovec *iov, int iovcnt, const char *buf, size_t len)
{
	for (int i = 0; i < iovcnt && len; i++) {
		size_t n = MIN(iov[i].iov_len, len);

		memcpy(iov[i].iov_base, buf, n);
		buf += n;
		len -= n;
	}
}

static ssize_t inotify_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	struct notify_group *g = file_ino(f)->g;
	struct waitq *wq = notify_group_waitq(g);
	struct task *t = task_current();
	size_t size = 0;
	char *buf;
	ssize_t n;

	for (int i = 0; i < iovcnt; i++)
		size += iov[i].iov_len;
	size = MIN(size, INOTIFY_READ_MAX);
	buf = malloc(size ? size : 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		n = notify_group_read(g, buf, size);
		if (n != -EAGAIN)
			break;
		if ((__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_NONBLOCK) || !t)
			break;
		n = task_wait(t, &wq, 1, inotify_readable, g, NULL, true);
		if (n < 0)
			break;
	}
	if (n > 0)
		iov_fill(iov, iovcnt, buf, (size_t)n);
	free(buf);
	return n;
}

static unsigned int inotify_poll(struct file *f, struct waitq **wq)
{
	struct notify_group *g = file_ino(f)->g;

	if (wq)
		*wq = notify_group_waitq(g);
	return notify_group_pending(g) ? POLLIN | POLLRDNORM : 0;
}

static long inotify_ioctl(struct file *f, struct task *t, unsigned int cmd, uint64_t arg)
{
	int val;

	if (cmd != FIONREAD)
		return -ENOTTY;
	val = (int)MIN(notify_group_pending(file_ino(f)->g), (size_t)0x7fffffff);
	if (mm_copy_out(t->mm, arg, &val, sizeof(val)) != sizeof(val))
		return -EFAULT;
	return 0;
}

static int inotify_getattr(struct vfs_node *n, struct vfs_attr *attr)
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

static void inotify_node_release(struct vfs_node *n)
{
	struct inotify *in = container_of(n, struct inotify, node);

	notify_group_destroy(in->g);
	free(in);
}

static const struct vfs_node_ops inotify_node_ops = {
	.getattr = inotify_getattr,
	.release = inotify_node_release,
};

static const struct file_ops inotify_ops = {
	.read = inotify_read,
	.poll = inotify_poll,
	.ioctl = inotify_ioctl,
};

int inotify_create_file(int flags, struct file **out)
{
	struct inotify *in = calloc(1, sizeof(*in));
	struct file *f;
	int err;

	if (!in)
		return -ENOMEM;
	err = notify_group_create(&in->g);
	if (err < 0) {
		free(in);
		return err;
	}
	if (vfs_anon_node_init(&in->node, &inotify_node_ops, S_IFREG) < 0) {
		notify_group_destroy(in->g);
		free(in);
		return -ENOMEM;
	}
	f = anon_file_create(&in->node, &inotify_ops, O_RDONLY | (flags & O_NONBLOCK), in);
	if (!f)
		return -ENOMEM;
	*out = f;
	return 0;
}

int inotify_add_watch_file(struct file *f, struct vfs_node *n, uint32_t mask)
{
	if (!file_is_inotify(f))
		return -EINVAL;
	return notify_add_watch(file_ino(f)->g, n, mask);
}

int inotify_rm_watch_file(struct file *f, int wd)
{
	if (!file_is_inotify(f))
		return -EINVAL;
	return notify_rm_watch(file_ino(f)->g, wd);
}
