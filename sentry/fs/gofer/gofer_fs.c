/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The root filesystem, served by the gofer (sentry/fs/gofer/client.h).
 *
 * Each node holds a gofer handle, its attributes and a cache of its children by name
 * (negative entries too on a read-only mount). The host is assumed not to change the tree
 * behind the sandbox's back: nothing is revalidated (see sentry/vfs/README.md). Opening a file
 * asks the gofer once for a host FD; reads and writes then go straight to that FD.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/err.h"
#include "common/log.h"
#include "common/util.h"
#include "include/abi/linux/stat.h"
#include "sentry/fs/dev/dev.h"
#include "sentry/fs/gofer/client.h"
#include "sentry/kernel/kernel.h"
#include "sentry/vfs/fs.h"

struct gofer_fs {
	struct vfs_fs base;
	struct gofer_client *gc; /* not owned: the kernel's, outlives the filesystem */
	bool readonly;
};

struct gofer_node {
	struct vfs_node base;
	uint64_t handle; /* owned: closed on release */
	pthread_mutex_t lock; /* protects attr, children, link, link_len */
	struct gofer_attr attr;
	struct vfs_dcache children;
	char *link; /* symlink target, cached on first read (read-only mounts) */
	size_t link_len;
};

/* An open regular file: the host FD the gofer donated. */
struct gofer_file {
	int fd; /* owned */
};

static struct gofer_fs *gofer_fs_of(struct vfs_node *n)
{
	return container_of(n->fs, struct gofer_fs, base);
}

static struct gofer_node *gofer_node_of(struct vfs_node *n)
{
	return container_of(n, struct gofer_node, base);
}

static const struct vfs_node_ops gofer_node_ops;

static struct gofer_node *gofer_node_new(struct gofer_fs *fs, struct vfs_node *parent,
					 const char *name, uint64_t handle,
					 const struct gofer_attr *attr)
{
	struct gofer_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	if (vfs_node_init(&n->base, &gofer_node_ops, &fs->base, parent, name, attr->mode) < 0) {
		free(n);
		return NULL;
	}
	n->handle = handle;
	n->attr = *attr;
	pthread_mutex_init(&n->lock, NULL);
	vfs_dcache_init(&n->children);
	return n;
}

static struct vfs_node *gofer_lookup(struct vfs_node *dir, const char *name)
{
	struct gofer_node *gd = gofer_node_of(dir);
	struct gofer_fs *fs = gofer_fs_of(dir);
	const char *names[1] = { name };
	struct gofer_node *child;
	struct vfs_node *cached;
	struct gofer_attr attr;
	uint64_t handle;
	int n;

	/* The lock is held across the walk so that two lookups of a name make one node. */
	pthread_mutex_lock(&gd->lock);
	if (vfs_dcache_lookup(&gd->children, name, &cached)) {
		pthread_mutex_unlock(&gd->lock);
		return cached ? cached : ERR_PTR(-ENOENT);
	}
	n = gofer_walk(fs->gc, gd->handle, names, 1, &handle, &attr);
	if (n <= 0) {
		if (n == 0 && fs->readonly)
			vfs_dcache_insert(&gd->children, name, NULL); /* best effort */
		pthread_mutex_unlock(&gd->lock);
		return ERR_PTR(n == 0 ? -ENOENT : n);
	}
	child = gofer_node_new(fs, dir, name, handle, &attr);
	if (!child) {
		pthread_mutex_unlock(&gd->lock);
		gofer_close(fs->gc, &handle, 1);
		return ERR_PTR(-ENOMEM);
	}
	/* Uncached when out of memory: the node still works, it is just looked up again. */
	vfs_dcache_insert(&gd->children, name, &child->base);
	pthread_mutex_unlock(&gd->lock);
	return &child->base;
}

static void attr_from_gofer(struct vfs_attr *a, const struct gofer_attr *g, uint64_t dev)
{
	*a = (struct vfs_attr){
		.dev = dev,
		.ino = g->ino,
		.nlink = g->nlink,
		.mode = g->mode,
		.uid = g->uid,
		.gid = g->gid,
		.rdev = vfs_mkdev(major(g->rdev), minor(g->rdev)),
		.size = g->size,
		.blksize = g->blksize,
		.blocks = g->blocks,
		.atime = { .tv_sec = g->atime_sec, .tv_nsec = g->atime_nsec },
		.mtime = { .tv_sec = g->mtime_sec, .tv_nsec = g->mtime_nsec },
		.ctime = { .tv_sec = g->ctime_sec, .tv_nsec = g->ctime_nsec },
	};
}

static int gofer_getattr(struct vfs_node *n, struct vfs_attr *attr)
{
	struct gofer_node *gn = gofer_node_of(n);
	struct gofer_fs *fs = gofer_fs_of(n);
	struct gofer_attr ga;
	int err;

	if (!fs->readonly) {
		/* A writable mount changes under us (our own writes): ask again. */
		err = gofer_stat(fs->gc, gn->handle, &ga);
		if (err < 0)
			return err;
		pthread_mutex_lock(&gn->lock);
		gn->attr = ga;
		pthread_mutex_unlock(&gn->lock);
	} else {
		pthread_mutex_lock(&gn->lock);
		ga = gn->attr;
		pthread_mutex_unlock(&gn->lock);
	}
	attr_from_gofer(attr, &ga, fs->base.dev);
	return 0;
}

static ssize_t gofer_readlink_op(struct vfs_node *n, char *buf, size_t len)
{
	struct gofer_node *gn = gofer_node_of(n);
	struct gofer_fs *fs = gofer_fs_of(n);
	ssize_t ret;

	if (!vfs_node_is_symlink(n))
		return -EINVAL;
	pthread_mutex_lock(&gn->lock);
	if (!gn->link) {
		char *target = malloc(VFS_PATH_MAX);
		ssize_t r;

		if (!target) {
			pthread_mutex_unlock(&gn->lock);
			return -ENOMEM;
		}
		r = gofer_readlink(fs->gc, gn->handle, target, VFS_PATH_MAX);
		if (r < 0) {
			pthread_mutex_unlock(&gn->lock);
			free(target);
			return r;
		}
		gn->link = target;
		gn->link_len = (size_t)r;
	}
	memcpy(buf, gn->link, MIN(len, gn->link_len));
	ret = (ssize_t)gn->link_len;
	if (!fs->readonly) {
		free(gn->link);
		gn->link = NULL;
	}
	pthread_mutex_unlock(&gn->lock);
	return ret;
}

/* --- regular files --- */

static int gofer_file_fd(struct file *f)
{
	return ((struct gofer_file *)f->priv)->fd;
}

static ssize_t gofer_file_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	int fd = gofer_file_fd(f);
	ssize_t n;

	do {
		n = pos ? preadv(fd, iov, iovcnt, *pos) : readv(fd, iov, iovcnt);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (pos)
		*pos += n;
	return n;
}

static ssize_t gofer_file_write(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	int fd = gofer_file_fd(f);
	bool append = __atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_APPEND;
	ssize_t n;

	do {
		/* The host FD has O_APPEND when the guest asked for it: write at its end. */
		n = (pos && !append) ? pwritev(fd, iov, iovcnt, *pos) : writev(fd, iov, iovcnt);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (pos) {
		if (append) {
			off_t end = lseek(fd, 0, SEEK_CUR);

			if (end >= 0)
				*pos = end;
		} else {
			*pos += n;
		}
	}
	return n;
}

static int64_t gofer_file_llseek(struct file *f, int64_t off, int whence)
{
	int fd = gofer_file_fd(f);
	struct stat st;

	if (whence == SEEK_DATA || whence == SEEK_HOLE) {
		/* Holes are the host's to know; lseek moves only the host FD's unused offset. */
		off_t r = lseek(fd, off, whence);

		return r < 0 ? -errno : r;
	}
	if (fstat(fd, &st) < 0)
		return -errno;
	return vfs_generic_llseek(f, off, whence, st.st_size);
}

static void gofer_file_release(struct file *f)
{
	struct gofer_file *gf = f->priv;

	close(gf->fd);
	free(gf);
}

static const struct file_ops gofer_file_ops = {
	.read = gofer_file_read,
	.write = gofer_file_write,
	.llseek = gofer_file_llseek,
	.release = gofer_file_release,
};

static struct file *gofer_open_op(struct vfs_node *n, int flags)
{
	struct gofer_node *gn = gofer_node_of(n);
	struct gofer_fs *fs = gofer_fs_of(n);
	struct gofer_file *gf;
	int hostflags, fd;
	struct file *f;

	switch (n->type) {
	case S_IFREG:
		break;
	case S_IFCHR: {
		uint64_t rdev;

		/* Device nodes of the image open the sentry's devices, never the host's. */
		pthread_mutex_lock(&gn->lock);
		rdev = gn->attr.rdev;
		pthread_mutex_unlock(&gn->lock);
		return devfs_open_chrdev(major(rdev), minor(rdev), flags);
	}
	default:
		/* FIFOs and sockets of the image come with pipes and unix sockets. */
		return ERR_PTR(-ENXIO);
	}
	/* Mode 3 (ioctl only) reads and writes nothing: read-only is enough on the host. */
	hostflags = (flags & O_ACCMODE) == 3 ? O_RDONLY : (flags & O_ACCMODE);
	hostflags |= flags & (O_TRUNC | O_APPEND);
	if (fs->readonly && ((hostflags & O_ACCMODE) != O_RDONLY || (hostflags & O_TRUNC)))
		return ERR_PTR(-EROFS); /* the VFS checked already; the gofer would refuse too */
	gf = malloc(sizeof(*gf));
	if (!gf)
		return ERR_PTR(-ENOMEM);
	fd = gofer_open(fs->gc, gn->handle, hostflags);
	if (fd < 0) {
		free(gf);
		return ERR_PTR(fd);
	}
	gf->fd = fd;
	f = file_alloc(&gofer_file_ops, flags, gf);
	if (!f) {
		close(fd);
		free(gf);
		return ERR_PTR(-ENOMEM);
	}
	return f;
}

/* --- directories --- */

/*
 * Directory positions: the gofer sends no "." and "..", so the VFS makes them up at positions
 * 0 and 1; position 2 is the gofer's cookie 0 (its first entry) and any other position is a
 * gofer cookie (a host d_off). Host cookies of 1 or 2 would be ambiguous; the usual host
 * filesystems (ext4, xfs, btrfs, tmpfs, overlayfs) never give them to a named entry.
 */
#define GOFER_POS_DOT 0
#define GOFER_POS_DOTDOT 1
#define GOFER_POS_FIRST 2

struct gofer_iter {
	struct dir_emitter *e;
	int64_t *pos;
	bool full;
};

static int gofer_iter_one(void *arg, const struct gofer_dirent *d)
{
	struct gofer_iter *it = arg;

	if (!it->e->emit(it->e, d->name, d->namelen, d->ino, d->type, d->next)) {
		it->full = true;
		return 1;
	}
	*it->pos = d->next;
	return 0;
}

static uint64_t gofer_node_ino(struct vfs_node *n)
{
	struct gofer_node *gn = gofer_node_of(n);
	uint64_t ino;

	pthread_mutex_lock(&gn->lock);
	ino = gn->attr.ino;
	pthread_mutex_unlock(&gn->lock);
	return ino;
}

static int gofer_iterate(struct vfs_node *dir, int64_t *pos, struct dir_emitter *e)
{
	struct gofer_node *gd = gofer_node_of(dir);
	struct gofer_fs *fs = gofer_fs_of(dir);
	struct gofer_iter it = { .e = e, .pos = pos };

	if (*pos == GOFER_POS_DOT) {
		if (!e->emit(e, ".", 1, gofer_node_ino(dir), DT_DIR, GOFER_POS_DOTDOT))
			return 0;
		*pos = GOFER_POS_DOTDOT;
	}
	if (*pos == GOFER_POS_DOTDOT) {
		/* The parent in this filesystem; the mount's parent is not known here. */
		struct vfs_node *up = dir->parent ? dir->parent : dir;

		if (!e->emit(e, "..", 2, gofer_node_ino(up), DT_DIR, GOFER_POS_FIRST))
			return 0;
		*pos = GOFER_POS_FIRST;
	}
	for (;;) {
		int64_t before = *pos;
		int64_t cookie = *pos == GOFER_POS_FIRST ? 0 : *pos;
		int n = gofer_getdents(fs->gc, gd->handle, cookie, gofer_iter_one, &it);

		if (n < 0)
			return n;
		/* A reply that does not move the cookie would loop for ever: treat it as the end. */
		if (n == 0 || it.full || *pos == before)
			return 0;
	}
}

static int gofer_statfs_op(struct vfs_node *n, struct linux_statfs *st)
{
	struct gofer_fs *fs = gofer_fs_of(n);
	struct gofer_statfs gs;
	int err;

	err = gofer_statfs(fs->gc, gofer_node_of(n)->handle, &gs);
	if (err < 0)
		return err;
	memset(st, 0, sizeof(*st));
	st->f_type = (int64_t)gs.type;
	st->f_bsize = (int64_t)gs.bsize;
	st->f_blocks = gs.blocks;
	st->f_bfree = gs.bfree;
	st->f_bavail = gs.bavail;
	st->f_files = gs.files;
	st->f_ffree = gs.ffree;
	st->f_namelen = (int64_t)gs.namelen;
	st->f_frsize = (int64_t)gs.frsize;
	return 0;
}

static void gofer_node_release(struct vfs_node *n)
{
	struct gofer_node *gn = gofer_node_of(n);
	struct gofer_fs *fs = gofer_fs_of(n);

	/* Positive children hold a reference on n: only negative entries can be left. */
	vfs_dcache_clear(&gn->children, NULL, NULL);
	gofer_close(fs->gc, &gn->handle, 1);
	free(gn->link);
	pthread_mutex_destroy(&gn->lock);
	free(gn);
}

/* Breaks the parent <-> child reference cycles below n, so that unused nodes go. */
static void gofer_drop_tree(struct vfs_node *n, void *arg)
{
	struct gofer_node *gn = gofer_node_of(n);

	pthread_mutex_lock(&gn->lock);
	vfs_dcache_clear(&gn->children, gofer_drop_tree, NULL);
	pthread_mutex_unlock(&gn->lock);
	if (arg != n)
		vfs_node_put(n); /* the cache's reference */
}

static void gofer_fs_release(struct vfs_fs *vfs)
{
	struct gofer_fs *fs = container_of(vfs, struct gofer_fs, base);

	gofer_drop_tree(fs->base.root, fs->base.root);
	vfs_node_put(fs->base.root);
	free(fs);
}

static const struct vfs_node_ops gofer_node_ops = {
	.lookup = gofer_lookup,
	.getattr = gofer_getattr,
	.readlink = gofer_readlink_op,
	.open = gofer_open_op,
	.iterate = gofer_iterate,
	.statfs = gofer_statfs_op,
	.release = gofer_node_release,
};

static const struct vfs_fs_ops gofer_fs_ops = {
	.release = gofer_fs_release,
};

int vfs_mount_root(struct kernel *k, struct gofer_client *gc, bool readonly)
{
	struct gofer_node *root;
	struct gofer_attr attr;
	struct gofer_fs *fs;
	struct vfs_mount *m;
	uint64_t handle;
	int err;

	err = gofer_mount(gc, &handle, &attr);
	if (err < 0)
		return err;
	if (!S_ISDIR(attr.mode)) {
		log_error("gofer: the served root is not a directory (mode %o)", attr.mode);
		gofer_close(gc, &handle, 1);
		return -ENOTDIR;
	}
	fs = calloc(1, sizeof(*fs));
	if (!fs) {
		gofer_close(gc, &handle, 1);
		return -ENOMEM;
	}
	vfs_fs_init(&fs->base, &gofer_fs_ops, "gofer");
	fs->gc = gc;
	fs->readonly = readonly;
	root = gofer_node_new(fs, NULL, "", handle, &attr);
	if (!root) {
		gofer_close(gc, &handle, 1);
		free(fs);
		return -ENOMEM;
	}
	fs->base.root = &root->base;
	m = vfs_mount_create(&fs->base, &root->base, readonly ? MS_RDONLY : 0);
	vfs_fs_put(&fs->base); /* the mount holds it now (or it goes) */
	if (!m)
		return -ENOMEM;

	vfs_mount_put(k->root_mnt);
	vfs_node_put(k->root_node);
	k->root_mnt = m;
	k->root_node = m->root;
	vfs_node_get(k->root_node);
	return 0;
}
