/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The mqueue filesystem (/dev/mqueue, mq_overview(7)): one directory whose entries are the
 * POSIX message queues of the sandbox (sentry/kernel/mqueue.c holds them; every instance shows
 * the same ones, as every mount of one IPC namespace's mqueue does on Linux). Reading a queue's
 * file gives its "QSIZE:..." line; unlink removes the queue (mq_unlink). A queue's node is made
 * at each lookup and holds the queue. An open with O_CREAT there makes a queue of the default
 * sizes, as on Linux; mkdir, mknod and the like answer EPERM.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>

#include "common/err.h"
#include "common/util.h"
#include "include/abi/linux/stat.h"
#include "sentry/fs/mqueue/mqueue.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/mqueue.h"
#include "sentry/vfs/fs.h"

#define MQUEUE_MAGIC 0x19800202 /* Linux's */

struct mqfs_node {
	struct vfs_node base;
	struct mqueue *q; /* referenced; NULL for the root */
	uint64_t ino;
};

struct mqfs {
	struct vfs_fs base;
	struct timespec ctime;
};

static struct mqfs_node *mqn(struct vfs_node *n)
{
	return container_of(n, struct mqfs_node, base);
}

static const struct vfs_node_ops mqfs_node_ops;

static struct mqfs_node *mqfs_node_new(struct vfs_fs *fs, struct vfs_node *parent, const char *name,
				       struct mqueue *q)
{
	struct mqfs_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	if (vfs_node_init(&n->base, &mqfs_node_ops, fs, parent, name, q ? S_IFREG : S_IFDIR) < 0) {
		free(n);
		return NULL;
	}
	n->q = q;
	n->ino = q ? 2 + ((uint64_t)(uintptr_t)q >> 4) : 1;
	return n;
}

static struct vfs_node *mqfs_lookup(struct vfs_node *dir, const char *name)
{
	struct mqueue *q = mqueue_lookup(name);
	struct mqfs_node *n;

	if (!q)
		return ERR_PTR(-ENOENT);
	n = mqfs_node_new(dir->fs, dir, name, q);
	if (!n) {
		mqueue_put(q);
		return ERR_PTR(-ENOMEM);
	}
	return &n->base;
}

static int mqfs_getattr(struct vfs_node *n, struct vfs_attr *attr)
{
	struct mqfs_node *m = mqn(n);
	struct mqfs *fs = container_of(n->fs, struct mqfs, base);

	if (m->q) {
		mqueue_stat(m->q, attr);
		/* Linux's i_size of a queue is the QSIZE line's length; st_size here is 80. */
		attr->size = 80;
	} else {
		*attr = (struct vfs_attr){
			.nlink = 2,
			.mode = S_IFDIR | 01777,
			.blksize = 4096,
			.atime = fs->ctime,
			.mtime = fs->ctime,
			.ctime = fs->ctime,
		};
	}
	attr->dev = n->fs->dev;
	attr->ino = m->ino;
	return 0;
}

static struct file *mqfs_open(struct vfs_node *n, int flags)
{
	struct mqfs_node *m = mqn(n);

	if (!m->q)
		return ERR_PTR(-EISDIR);
	return mqueue_file_open(m->q, flags);
}

static int mqfs_iterate(struct vfs_node *dir, int64_t *pos, struct dir_emitter *e)
{
	/* Positions: 0 ".", 1 "..", 2 + i the i-th named queue. */
	for (; *pos >= 0; (*pos)++) {
		char name[256];
		bool ok;

		if (*pos < 2) {
			ok = e->emit(e, *pos ? ".." : ".", (size_t)*pos + 1, 1, DT_DIR, *pos + 1);
		} else {
			struct mqueue *q;
			uint64_t ino = 0;

			if (mqueue_name_at(*pos - 2, name, sizeof(name)) < 0)
				break;
			q = mqueue_lookup(name);
			if (q) {
				ino = 2 + ((uint64_t)(uintptr_t)q >> 4);
				mqueue_put(q);
			}
			ok = e->emit(e, name, strlen(name), ino, DT_REG, *pos + 1);
		}
		if (!ok)
			break;
	}
	return 0;
}

static int mqfs_create(struct vfs_node *dir, const char *name, const struct vfs_create_args *a,
		       struct vfs_node **out)
{
	struct task *t = task_current();
	struct mqfs_node *n;
	struct mqueue *q;

	/* Regular files only: a queue (Linux's mqueue_create); no directories or devices. */
	if (!t || !S_ISREG(a->mode))
		return -EPERM;
	q = mqueue_create_named(t, name, a->mode & 0777);
	if (IS_ERR(q))
		return (int)PTR_ERR(q);
	n = mqfs_node_new(dir->fs, dir, name, q);
	if (!n) {
		mqueue_put(q);
		return -ENOMEM;
	}
	*out = &n->base;
	return 0;
}

static int mqfs_unlink(struct vfs_node *dir, const char *name, struct vfs_node *child)
{
	struct task *t = task_current();
	long ret;

	if (!t)
		return -EPERM;
	ret = mqueue_unlink(t, name);
	return (int)ret;
}

static int mqfs_statfs(struct vfs_node *n, struct linux_statfs *st)
{
	memset(st, 0, sizeof(*st));
	st->f_type = MQUEUE_MAGIC;
	st->f_bsize = 4096;
	st->f_frsize = 4096;
	st->f_namelen = 255;
	return 0;
}

static void mqfs_release_node(struct vfs_node *n)
{
	struct mqfs_node *m = mqn(n);

	if (m->q)
		mqueue_put(m->q);
	free(m);
}

static void mqfs_release(struct vfs_fs *vfs)
{
	struct mqfs *fs = container_of(vfs, struct mqfs, base);

	vfs_node_put(fs->base.root);
	free(fs);
}

static const struct vfs_node_ops mqfs_node_ops = {
	.lookup = mqfs_lookup,
	.getattr = mqfs_getattr,
	.open = mqfs_open,
	.iterate = mqfs_iterate,
	.create = mqfs_create,
	.unlink = mqfs_unlink,
	.statfs = mqfs_statfs,
	.release = mqfs_release_node,
};

static const struct vfs_fs_ops mqfs_fs_ops = {
	.release = mqfs_release,
};

struct vfs_fs *mqueuefs_create(void)
{
	struct mqfs *fs = calloc(1, sizeof(*fs));
	struct mqfs_node *root;

	if (!fs)
		return NULL;
	vfs_fs_init(&fs->base, &mqfs_fs_ops, "mqueue");
	clock_gettime(CLOCK_REALTIME, &fs->ctime);
	root = mqfs_node_new(&fs->base, NULL, "", NULL);
	if (!root) {
		free(fs);
		return NULL;
	}
	fs->base.root = &root->base;
	return &fs->base;
}
