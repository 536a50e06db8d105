/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The machinery of pseudo filesystems (pseudo.h): lookups in static tables and computed
 * directories, attributes, generated files (contents made at open, read at positions like a
 * regular file, and made again for a read that does not go on where the last one ended, as
 * seq_file's), symlinks and magic links.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "common/err.h"
#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "include/abi/linux/stat.h"
#include "sentry/fs/proc/pseudo.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/vfs/internal.h"

uint64_t pseudo_ino(const struct pseudo_ent *ent, int32_t pid, int32_t tid, int fd)
{
	/* Distinct for every (entry, thread, fd) the sandbox can have: ids < 4096, fds < 2^20. */
	return ((uint64_t)(uint32_t)tid << 32) | ((uint64_t)(uint32_t)(fd + 1) << 12) |
	       (ent->id & 0xfffu);
}

unsigned int pseudo_dtype(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR:
		return DT_DIR;
	case S_IFLNK:
		return DT_LNK;
	default:
		return DT_REG;
	}
}

ssize_t pseudo_copy_link(const char *s, char *buf, size_t len)
{
	size_t n = strlen(s);

	memcpy(buf, s, MIN(n, len));
	return (ssize_t)n;
}

static const struct vfs_node_ops pseudo_magic_node_ops;

static void pseudo_release_node(struct vfs_node *n)
{
	free(pseudo_node_of(n));
}

struct pseudo_node *pseudo_node_new(struct pseudo_node *parent, const struct pseudo_ent *ent,
				    const char *name)
{
	struct pseudo_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	if (vfs_node_init(&n->base, ent->get_link ? &pseudo_magic_node_ops : &pseudo_node_ops,
			  parent->base.fs, &parent->base, name, ent->mode & S_IFMT) < 0) {
		free(n);
		return NULL;
	}
	n->ent = ent;
	n->pid = parent->pid;
	n->tid = parent->tid;
	n->fd = parent->fd;
	n->ino = pseudo_ino(ent, n->pid, n->tid, n->fd);
	return n;
}

struct vfs_node *pseudo_node_new_at(struct pseudo_node *parent, const struct pseudo_ent *ent,
				    const char *name, int32_t pid, int32_t tid, int fd)
{
	struct pseudo_node *n = pseudo_node_new(parent, ent, name);

	if (!n)
		return ERR_PTR(-ENOMEM);
	n->pid = pid;
	n->tid = tid;
	n->fd = fd;
	n->ino = pseudo_ino(ent, pid, tid, fd);
	return &n->base;
}

struct task *pseudo_node_task(struct pseudo_node *n)
{
	struct kernel *k = pseudo_fs_of(n)->k;

	if (!n->tid || !k)
		return NULL;
	return kernel_find_task(k, n->tid);
}

static struct vfs_node *pseudo_lookup(struct vfs_node *dir, const char *name)
{
	struct pseudo_node *d = pseudo_node_of(dir);
	const struct pseudo_ent *c;

	for (c = d->ent->children; c && c->name; c++) {
		if (strcmp(c->name, name) == 0) {
			struct pseudo_node *n = pseudo_node_new(d, c, name);

			return n ? &n->base : ERR_PTR(-ENOMEM);
		}
	}
	if (d->ent->dyn)
		return d->ent->dyn->lookup(d, name);
	return ERR_PTR(-ENOENT);
}

static int pseudo_getattr(struct vfs_node *vn, struct vfs_attr *attr)
{
	struct pseudo_node *n = pseudo_node_of(vn);
	struct pseudo_fs *fs = pseudo_fs_of(n);
	uint32_t uid = 0, gid = 0;

	if (n->pid) {
		struct task *t = pseudo_node_task(n);

		if (!t)
			return -ENOENT;
		uid = t->cred.euid;
		gid = t->cred.egid;
		task_put(t);
	}
	*attr = (struct vfs_attr){
		.dev = fs->base.dev,
		.ino = n->ino,
		.nlink = S_ISDIR(n->ent->mode) ? 2 : 1,
		.mode = n->ent->mode,
		.uid = uid,
		.gid = gid,
		.blksize = 1024,
		.atime = fs->btime,
		.mtime = fs->btime,
		.ctime = fs->btime,
	};
	/* sysfs shows regular files as one page; procfs as empty. */
	if (S_ISREG(n->ent->mode) && fs->magic != 0x9fa0)
		attr->size = 4096, attr->blksize = 4096;
	return n->ent->getattr ? n->ent->getattr(n, attr) : 0;
}

static int pseudo_setattr(struct vfs_node *vn, const struct vfs_setattr *sa)
{
	struct pseudo_node *n = pseudo_node_of(vn);

	return n->ent->setattr ? n->ent->setattr(n, sa) : -EROFS;
}

static ssize_t pseudo_readlink(struct vfs_node *vn, char *buf, size_t len)
{
	struct pseudo_node *n = pseudo_node_of(vn);

	if (!n->ent->readlink)
		return -EINVAL;
	return n->ent->readlink(n, buf, len);
}

static int pseudo_get_link(struct vfs_node *vn, struct vfs_path *out)
{
	struct pseudo_node *n = pseudo_node_of(vn);

	if (!n->ent->get_link)
		return -ENOENT;
	return n->ent->get_link(n, out);
}

/* --- generated files --- */

/*
 * The contents of one open of a generated file. Linux's seq_file keeps the records it made in
 * its buffer while reads go on from where the last one ended, and makes them again, from the
 * current state, for a read anywhere else (after an lseek, or a pread elsewhere: seq_read_iter's
 * traverse); so does this: data is made again when a read does not start at read_pos. systemd
 * reads /proc/self/mountinfo again through one fd after lseek(fd, 0, SEEK_SET) and loops until
 * the mount it just made shows up.
 */
struct pseudo_buf {
	pthread_mutex_t lock; /* data, len and read_pos (preads of one file run at once) */
	char *data;
	size_t len;
	int64_t read_pos; /* where the last read ended, 0 after the open */
	uint64_t mount_event; /* mount_events files: the mount event last reported (atomic) */
};

/* Makes n's contents into b->data and b->len (freeing the old ones). Returns 0 or -errno. */
static int gen_contents(struct pseudo_node *n, struct pseudo_buf *b)
{
	char *data = NULL;
	size_t len = 0;
	FILE *out;
	int err;

	out = open_memstream(&data, &len);
	if (!out)
		return -ENOMEM;
	err = n->ent->gen(n, out);
	if (fclose(out) != 0 && err == 0)
		err = -ENOMEM;
	if (err < 0) {
		free(data);
		return err;
	}
	free(b->data);
	b->data = data;
	b->len = len;
	return 0;
}

static ssize_t gen_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	struct pseudo_buf *b = f->priv;
	size_t done = 0;
	int err;

	if (*pos < 0)
		return -EINVAL;
	pthread_mutex_lock(&b->lock);
	if (*pos != b->read_pos) {
		err = gen_contents(pseudo_node_of(f->node), b);
		if (err < 0) {
			pthread_mutex_unlock(&b->lock);
			return err;
		}
	}
	for (int i = 0; i < iovcnt && (size_t)*pos < b->len; i++) {
		size_t n = MIN(iov[i].iov_len, b->len - (size_t)*pos);

		memcpy(iov[i].iov_base, b->data + *pos, n);
		*pos += (int64_t)n;
		done += n;
	}
	b->read_pos = *pos;
	pthread_mutex_unlock(&b->lock);
	return (ssize_t)done;
}

static ssize_t gen_write(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	struct pseudo_node *n = pseudo_node_of(f->node);
	size_t total = 0, off = 0;
	char *buf;
	ssize_t ret;

	if (!n->ent->write)
		return -EIO;
	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (total > 4096)
		total = 4096;
	buf = malloc(total + 1);
	if (!buf)
		return -ENOMEM;
	for (int i = 0; i < iovcnt && off < total; i++) {
		size_t c = MIN(iov[i].iov_len, total - off);

		memcpy(buf + off, iov[i].iov_base, c);
		off += c;
	}
	buf[total] = '\0';
	ret = n->ent->write(n, buf, total);
	free(buf);
	if (ret > 0 && pos)
		*pos += ret;
	return ret;
}

/*
 * Linux's lseek of procfs and sysfs files: sysfs attributes are generic_file_llseek on their
 * size (a page); most procfs files are seq_files (SEEK_SET and SEEK_CUR only), the others
 * generic_file_llseek on their size, 0.
 */
static int64_t gen_llseek(struct file *f, int64_t off, int whence)
{
	struct pseudo_node *n = pseudo_node_of(f->node);

	if (pseudo_fs_of(n)->magic != 0x9fa0 /* PROC_SUPER_MAGIC */)
		return vfs_generic_llseek(f, off, whence, 4096);
	for (struct vfs_node *v = f->node; v; v = v->parent) {
		/* Pseudo nodes are never renamed: their parents are fixed. */
		if (pseudo_node_of(v)->ent->plain_seek)
			return vfs_generic_llseek(f, off, whence, 0);
	}
	if (whence != SEEK_SET && whence != SEEK_CUR)
		return -EINVAL;
	return vfs_generic_llseek(f, off, whence, 0);
}

static void gen_release(struct file *f)
{
	struct pseudo_buf *b = f->priv;

	pthread_mutex_destroy(&b->lock);
	free(b->data);
	free(b);
}

static const struct file_ops gen_fops = {
	.read = gen_read,
	.write = gen_write,
	.llseek = gen_llseek,
	.release = gen_release,
};

/*
 * Linux's mounts_poll: readable always; POLLERR|POLLPRI when the mounts changed since the open
 * or the poll that last said so (that poll takes the event, as Linux's does).
 */
static unsigned int gen_mounts_poll(struct file *f, struct waitq **wq)
{
	struct pseudo_buf *b = f->priv;
	uint64_t now = vfs_mount_event_read(wq);
	uint64_t seen = __atomic_load_n(&b->mount_event, __ATOMIC_ACQUIRE);
	unsigned int mask = POLLIN | POLLRDNORM;

	if (seen != now && __atomic_compare_exchange_n(&b->mount_event, &seen, now, false,
						       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		mask |= POLLERR | POLLPRI;
	return mask;
}

static const struct file_ops gen_mounts_fops = {
	.read = gen_read,
	.write = gen_write,
	.llseek = gen_llseek,
	.poll = gen_mounts_poll,
	.release = gen_release,
};

static struct file *pseudo_open(struct vfs_node *vn, int flags)
{
	struct pseudo_node *n = pseudo_node_of(vn);
	struct pseudo_buf *b;
	struct file *f;
	int err;

	if (n->ent->open)
		return n->ent->open(n, flags);
	if (!S_ISREG(n->ent->mode) || !n->ent->gen)
		return ERR_PTR(-ENXIO);
	if ((flags & O_ACCMODE) != O_RDONLY && !n->ent->write)
		return ERR_PTR(-EACCES);
	b = calloc(1, sizeof(*b));
	if (!b)
		return ERR_PTR(-ENOMEM);
	pthread_mutex_init(&b->lock, NULL);
	/* Before the snapshot: a change while it is made is reported. */
	if (n->ent->mount_events)
		b->mount_event = vfs_mount_event_read(NULL);
	/* Write-only opens of writable files need no snapshot. */
	if ((flags & O_ACCMODE) != O_WRONLY) {
		err = gen_contents(n, b);
		if (err < 0) {
			pthread_mutex_destroy(&b->lock);
			free(b);
			return ERR_PTR(err);
		}
	}
	f = file_alloc(n->ent->mount_events ? &gen_mounts_fops : &gen_fops, flags, b);
	if (!f) {
		pthread_mutex_destroy(&b->lock);
		free(b->data);
		free(b);
		return ERR_PTR(-ENOMEM);
	}
	return f;
}

/* --- directories --- */

static int pseudo_iterate(struct vfs_node *dir, int64_t *pos, struct dir_emitter *e)
{
	struct pseudo_node *d = pseudo_node_of(dir);
	int64_t nstatic = 0, base;
	const struct pseudo_ent *c;

	for (c = d->ent->children; c && c->name; c++)
		nstatic++;
	base = 2 + nstatic;
	/* Positions: 0 ".", 1 "..", 2 + i the i-th static entry, base + N computed entry N. */
	while (*pos >= 0 && *pos < base) {
		bool ok;

		if (*pos == 0) {
			ok = e->emit(e, ".", 1, d->ino, DT_DIR, 1);
		} else if (*pos == 1) {
			struct vfs_node *p = vfs_node_get_parent(dir);
			uint64_t ino = p ? pseudo_node_of(p)->ino : d->ino;

			vfs_node_put(p);
			ok = e->emit(e, "..", 2, ino, DT_DIR, 2);
		} else {
			c = &d->ent->children[*pos - 2];
			ok = e->emit(e, c->name, strlen(c->name),
				     pseudo_ino(c, d->pid, d->tid, d->fd), pseudo_dtype(c->mode),
				     *pos + 1);
		}
		if (!ok)
			return 0;
		(*pos)++;
	}
	if (d->ent->dyn && *pos >= base) {
		int64_t idx = *pos - base;
		int err = d->ent->dyn->iterate(d, &idx, e, base);

		*pos = base + idx;
		return err;
	}
	return 0;
}

/* --- directories --- */

static ssize_t pseudo_dir_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	return -EISDIR;
}

/* procfs and sysfs directories seek as generic_file_llseek on the size 0, SEEK_END included. */
static int64_t pseudo_dir_llseek(struct file *f, int64_t off, int whence)
{
	return vfs_generic_llseek(f, off, whence, 0);
}

static int pseudo_dir_iterate(struct file *f, struct dir_emitter *e)
{
	return pseudo_iterate(f->node, &f->pos, e);
}

static const struct file_ops pseudo_dir_fops = {
	.read = pseudo_dir_read,
	.llseek = pseudo_dir_llseek,
	.iterate = pseudo_dir_iterate,
};

static struct file *pseudo_open_dir(struct vfs_node *vn, int flags)
{
	struct file *f = file_alloc(&pseudo_dir_fops, flags, NULL);

	return f ? f : ERR_PTR(-ENOMEM);
}

static int pseudo_statfs(struct vfs_node *vn, struct linux_statfs *st)
{
	memset(st, 0, sizeof(*st));
	st->f_type = pseudo_fs_of(pseudo_node_of(vn))->magic;
	st->f_bsize = 4096;
	st->f_frsize = 4096;
	st->f_namelen = VFS_NAME_MAX;
	return 0;
}

const struct vfs_node_ops pseudo_node_ops = {
	.lookup = pseudo_lookup,
	.getattr = pseudo_getattr,
	.setattr = pseudo_setattr,
	.readlink = pseudo_readlink,
	.open = pseudo_open,
	.iterate = pseudo_iterate,
	.open_dir = pseudo_open_dir,
	.statfs = pseudo_statfs,
	.release = pseudo_release_node,
};

/* Magic links: the same with get_link, which path walks follow instead of the string. */
static const struct vfs_node_ops pseudo_magic_node_ops = {
	.lookup = pseudo_lookup,
	.getattr = pseudo_getattr,
	.readlink = pseudo_readlink,
	.open = pseudo_open,
	.iterate = pseudo_iterate,
	.open_dir = pseudo_open_dir,
	.statfs = pseudo_statfs,
	.release = pseudo_release_node,
	.get_link = pseudo_get_link,
};

/* --- instances --- */

static void pseudo_fs_release(struct vfs_fs *vfs)
{
	struct pseudo_fs *fs = container_of(vfs, struct pseudo_fs, base);

	vfs_node_put(fs->base.root);
	free(fs);
}

/* Lookups make new nodes: one entry of one task (or fd) is one file (its inode number). */
static bool pseudo_same_node(struct vfs_node *a, struct vfs_node *b)
{
	struct pseudo_node *x = pseudo_node_of(a), *y = pseudo_node_of(b);

	return x->ent == y->ent && x->ino == y->ino;
}

/* The first mount is where the magic links (/proc/PID/fd/N, /proc/PID/ns/net...) lead; the tree holds it. */
static void pseudo_mounted(struct vfs_fs *base, struct vfs_mount *m)
{
	struct pseudo_fs *fs = (struct pseudo_fs *)base;

	if (!fs->mnt)
		fs->mnt = m;
}

static const struct vfs_fs_ops pseudo_fs_ops = {
	.release = pseudo_fs_release,
	.same_node = pseudo_same_node,
	.mounted = pseudo_mounted,
};

int pseudo_fs_init(struct pseudo_fs *fs, struct kernel *k, const char *type, uint32_t magic,
		   const struct pseudo_ent *root)
{
	struct pseudo_node *n = calloc(1, sizeof(*n));

	if (!n)
		return -ENOMEM;
	vfs_fs_init(&fs->base, &pseudo_fs_ops, type);
	fs->k = k;
	fs->magic = magic;
	clock_gettime(CLOCK_REALTIME, &fs->btime);
	if (vfs_node_init(&n->base, &pseudo_node_ops, &fs->base, NULL, "", S_IFDIR) < 0) {
		free(n);
		return -ENOMEM;
	}
	n->ent = root;
	n->fd = -1;
	n->ino = 1;
	fs->base.root = &n->base;
	return 0;
}

int pseudo_fs_mount(struct kernel *k, struct pseudo_fs *fs, const char *name, int flags)
{
	struct vfs_path root;
	struct vfs_path at;
	struct vfs_mount *m;
	int err;

	vfs_kernel_root(k, &root);
	if (!root.mnt || !root.node) {
		vfs_fs_put(&fs->base);
		return -EINVAL;
	}
	vfs_path_copy(&root, &root);
	vfs_path_follow_mounts(&root);
	vfs_ns_lock();
	err = vfs_lookup_one(&root, name, &at);
	if (err == -ENOENT && !vfs_mount_readonly(root.mnt) && root.node->ops->create) {
		/* The image has no mountpoint: make one, as OCI runtimes do. */
		struct vfs_create_args a = { .mode = S_IFDIR | 0555 };
		struct vfs_node *n;

		err = root.node->ops->create(root.node, name, &a, &n);
		if (err == 0) {
			at.mnt = root.mnt;
			vfs_mount_get(at.mnt);
			at.node = n;
		}
	}
	vfs_ns_unlock();
	vfs_path_put(&root);
	if (err == 0 && !vfs_node_is_dir(at.node)) {
		vfs_path_put(&at);
		err = -ENOTDIR;
	}
	if (err < 0) {
		vfs_fs_put(&fs->base);
		return err;
	}
	m = vfs_mount_create(&fs->base, fs->base.root, flags);
	vfs_fs_put(&fs->base); /* the mount holds it now */
	if (!m) {
		vfs_path_put(&at);
		return -ENOMEM;
	}
	err = vfs_mount_attach(m, &at);
	vfs_mount_put(m);
	vfs_path_put(&at);
	return err;
}
