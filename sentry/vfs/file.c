/* SPDX-License-Identifier: Apache-2.0 */
/* Open file descriptions, and the generic files the VFS makes itself (directories, O_PATH). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/vfs/internal.h"
#include "sentry/vfs/fs.h"
#include "sentry/vfs/lock.h"
#include "sentry/vfs/notify.h"

struct file *file_alloc(const struct file_ops *ops, int flags, void *priv)
{
	struct file *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	refcount_init(&f->ref, 1);
	f->ops = ops;
	f->flags = flags;
	f->priv = priv;
	pthread_mutex_init(&f->pos_lock, NULL);
	return f;
}

void file_get(struct file *f)
{
	refcount_inc(&f->ref);
}

void (*vfs_fasync_release_fn)(struct file *f);

void file_put(struct file *f)
{
	if (!f || !refcount_dec(&f->ref))
		return;
	if (f->async && vfs_fasync_release_fn)
		vfs_fasync_release_fn(f);
	vfs_locks_release_file(f);
	if (vfs_notify_active() && f->mnt) {
		int acc = f->flags & O_ACCMODE;

		vfs_notify_file(f, (acc == O_WRONLY || acc == O_RDWR) ? VFS_IN_CLOSE_WRITE :
									VFS_IN_CLOSE_NOWRITE);
	}
	if (f->ops && f->ops->release)
		f->ops->release(f);
	vfs_node_put(f->node);
	vfs_mount_put(f->mnt);
	pthread_mutex_destroy(&f->pos_lock);
	free(f);
}

ssize_t file_pread(struct file *f, void *buf, size_t len, int64_t off)
{
	size_t done = 0;

	if (!f->ops || !f->ops->read || !f->ops->llseek)
		return -EINVAL;
	if (off < 0)
		return -EINVAL;
	/* The loader and mm want whole ranges: go on after short reads until the end. */
	while (done < len) {
		struct iovec iov = { .iov_base = (char *)buf + done, .iov_len = len - done };
		int64_t pos = off + (int64_t)done;
		ssize_t n = f->ops->read(f, &iov, 1, &pos);

		if (n < 0)
			return done ? (ssize_t)done : n;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

int file_getattr(struct file *f, struct vfs_attr *attr)
{
	if (f->ops && f->ops->getattr)
		return f->ops->getattr(f, attr);
	if (f->node)
		return vfs_node_getattr(f->node, attr);
	return -EBADF;
}

int vfs_file_path(struct file *f, struct vfs_path *out)
{
	if (!f->mnt || !f->node)
		return -EBADF;
	out->mnt = f->mnt;
	out->node = f->node;
	vfs_mount_get(out->mnt);
	vfs_node_get(out->node);
	return 0;
}

int64_t vfs_generic_llseek(struct file *f, int64_t off, int whence, int64_t size)
{
	int64_t base;

	switch (whence) {
	case SEEK_SET:
		base = 0;
		break;
	case SEEK_CUR:
		base = f->pos;
		break;
	case SEEK_END:
		base = size;
		break;
	case SEEK_DATA:
		/* No holes: all data up to size. */
		if (off < 0 || off >= size)
			return -ENXIO;
		return off;
	case SEEK_HOLE:
		if (off < 0 || off >= size)
			return -ENXIO;
		return size;
	default:
		return -EINVAL;
	}
	if (__builtin_add_overflow(base, off, &base) || base < 0)
		return -EINVAL;
	return base;
}

/* --- directories --- */

static ssize_t dir_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	return -EISDIR;
}

static int64_t dir_llseek(struct file *f, int64_t off, int whence)
{
	/* Positions are the filesystem's cookies: only absolute and relative moves make sense. */
	switch (whence) {
	case SEEK_SET:
		return off < 0 ? -EINVAL : off;
	case SEEK_CUR:
		if (off == 0)
			return f->pos;
		return vfs_generic_llseek(f, off, whence, 0);
	default:
		return -EINVAL;
	}
}

static int dir_iterate(struct file *f, struct dir_emitter *e)
{
	if (!f->node->ops->iterate)
		return -ENOTDIR;
	return f->node->ops->iterate(f->node, &f->pos, e);
}

static const struct file_ops dir_file_ops = {
	.read = dir_read,
	.llseek = dir_llseek,
	.iterate = dir_iterate,
};

/* O_PATH files: only a path; every operation but the *at(2) family and fstat fails. */
static const struct file_ops path_file_ops = {
	.read = NULL,
};

struct file *vfs_dir_file_create(int flags)
{
	return file_alloc(&dir_file_ops, flags, NULL);
}

struct file *vfs_path_file_create(int flags)
{
	return file_alloc(&path_file_ops, flags, NULL);
}
