/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The root overlay: a read-only lower filesystem (the gofer's) below a tmpfs upper, in the
 * manner of Linux's overlayfs. Each overlay node refers to its upper node, its lower node, or
 * both (a merged directory). Changes go to the upper layer only:
 *
 * - copy-up: the first write, setattr or link of a lower file copies it (data, mode, owner,
 *   times) and its missing ancestors (directories only) into the upper layer;
 * - whiteouts: removing a name the lower layer has leaves a 0:0 character device at that name in
 *   the upper layer, which hides the lower entry;
 * - opaque directories: a directory made where the lower layer has (or had) a name is marked
 *   opaque in tmpfs, so the lower directory's entries do not show through;
 * - readdir merges upper entries (less whiteouts) with lower ones (less names the upper has);
 *   each open directory lists from a snapshot taken at position 0;
 * - rename of a lower file copies it up first; renaming a directory that has a lower part gives
 *   -EXDEV (as overlayfs without redirect_dir: mv falls back to copying).
 *
 * Inode numbers: a node that has a lower part (or was copied up from one: tmpfs's origin mark)
 * keeps the lower inode number, so st_ino is the same before and after copy-up; upper-only
 * nodes get the upper inode number with bit 63 set. st_dev is the overlay's own. A hard link in
 * the lower layer is broken by copy-up (each name is copied on its own), as overlayfs does
 * without its index feature. Files open read-only before a copy-up keep reading the lower copy.
 *
 * A guest's mount -t overlay (overlay_mount) is the same model over directories: its upper
 * directory must be on a tmpfs (the marks live there); lowerdir=A:B is A over B as a read-only
 * overlay, in which A's whiteouts and trusted.overlay.opaque xattrs count; without an upper
 * directory every change is -EROFS (ovl->ro). Whiteouts of lower layers hide names everywhere.
 *
 * One recursive lock per overlay (ovl->lock) covers every operation: lookups, copy-up and
 * changes. Lock order: the VFS namespace lock, ovl->lock, then the layers' own locks.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "common/cleanup.h"
#include "common/err.h"
#include "common/log.h"
#include "common/util.h"
#include "include/abi/linux/stat.h"
#include "sentry/fs/gofer/gofer_fs.h"
#include "sentry/fs/overlay/overlay.h"
#include "sentry/fs/pipe/pipe.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/kernel/kernel.h"
#include "sentry/vfs/fs.h"
#include "sentry/vfs/vfs.h"

#define OVERLAYFS_SUPER_MAGIC 0x794c7630
#define OVL_UPPER_INO_BIT (1ULL << 63)
#define OVL_COPY_CHUNK (256 * 1024)

struct ovl_fs {
	struct vfs_fs base;
	struct vfs_fs *lower_fs; /* referenced */
	struct vfs_fs *upper_fs; /* referenced */
	bool mounted; /* a guest's mount -t overlay (overlay_mount), not the sandbox's root */
	bool ro; /* no writable upper layer: every change is -EROFS */
	pthread_mutex_t lock; /* recursive; protects every node's upper, lower and children */
};

struct ovl_node {
	struct vfs_node base;
	struct vfs_node *upper; /* referenced; NULL until copied up */
	struct vfs_node *lower; /* referenced; NULL for upper-only nodes */
	uint64_t ino;
	struct vfs_dcache children; /* name -> ovl node, or negative */
};

static const struct vfs_node_ops ovl_node_ops;
static const struct file_ops ovl_dir_file_ops;

static struct ovl_fs *ovl_of(const struct vfs_node *n)
{
	return container_of(n->fs, struct ovl_fs, base);
}

static struct ovl_node *onode(const struct vfs_node *n)
{
	return container_of(n, struct ovl_node, base);
}

static void ovl_lock(struct ovl_fs *fs)
{
	pthread_mutex_lock(&fs->lock);
}

static void ovl_unlock(struct ovl_fs *fs)
{
	pthread_mutex_unlock(&fs->lock);
}

/* The layer node that stands for n: upper if any (lock held). */
static struct vfs_node *real(struct ovl_node *n)
{
	return n->upper ? n->upper : n->lower;
}

static struct vfs_node *layer_lookup(struct vfs_node *dir, const char *name)
{
	if (!dir || !vfs_node_is_dir(dir) || !dir->ops->lookup)
		return ERR_PTR(-ENOENT);
	return dir->ops->lookup(dir, name);
}

static bool is_whiteout(struct vfs_node *n)
{
	struct vfs_attr a;

	if ((n->type & S_IFMT) != S_IFCHR || vfs_node_getattr(n, &a) < 0)
		return false;
	return a.rdev == 0;
}

/* Whether name in layer directory dir is a whiteout. */
static bool layer_whiteout(struct vfs_node *dir, const char *name)
{
	struct vfs_node *w = layer_lookup(dir, name);
	bool wo = !IS_ERR(w) && is_whiteout(w);

	if (!IS_ERR(w))
		vfs_node_put(w);
	return wo;
}

/*
 * The marks on an upper node: tmpfs keeps them in its inodes (a writable upper layer is always
 * a tmpfs). An upper layer that is one of a guest mount's lower layers (lowerdir=A:B, A over B)
 * may be any filesystem: there, as in overlayfs, a directory is opaque when its
 * trusted.overlay.opaque xattr is "y", and no origin is recorded.
 */
static bool opaque_mark(struct vfs_node *dir)
{
	char v[2];

	if (tmpfs_is_node(dir))
		return tmpfs_opaque(dir);
	if (!vfs_node_is_dir(dir) || !dir->ops->getxattr)
		return false;
	return dir->ops->getxattr(dir, "trusted.overlay.opaque", v, sizeof(v)) == 1 && v[0] == 'y';
}

static uint64_t origin_mark(struct vfs_node *n)
{
	return tmpfs_is_node(n) ? tmpfs_origin_ino(n) : 0;
}

/* Whether the lower layer shows name in directory d (lock held). */
static bool lower_has(struct ovl_node *d, const char *name)
{
	struct vfs_node *l;
	bool has;

	if (!d->lower || (d->upper && opaque_mark(d->upper)))
		return false;
	l = layer_lookup(d->lower, name);
	if (IS_ERR(l))
		return false;
	has = !is_whiteout(l);
	vfs_node_put(l);
	return has;
}

static uint64_t compute_ino(struct vfs_node *upper, struct vfs_node *lower)
{
	struct vfs_attr a;
	uint64_t origin;

	if (upper) {
		origin = origin_mark(upper);
		if (origin)
			return origin;
	}
	if (lower && vfs_node_getattr(lower, &a) == 0)
		return a.ino;
	if (upper && vfs_node_getattr(upper, &a) == 0)
		return a.ino | OVL_UPPER_INO_BIT;
	return 0;
}

/* A node over upper and lower (references taken), named name under parent. */
static struct ovl_node *node_new(struct ovl_fs *fs, struct vfs_node *parent, const char *name,
				 struct vfs_node *upper, struct vfs_node *lower, uint64_t ino)
{
	struct ovl_node *n = calloc(1, sizeof(*n));
	struct vfs_node *r = upper ? upper : lower;

	if (!n)
		return NULL;
	if (vfs_node_init(&n->base, &ovl_node_ops, &fs->base, parent, name, r->type) < 0) {
		free(n);
		return NULL;
	}
	n->upper = upper;
	if (upper)
		vfs_node_get(upper);
	n->lower = lower;
	if (lower)
		vfs_node_get(lower);
	n->ino = ino ? ino : compute_ino(upper, lower);
	vfs_dcache_init(&n->children);
	return n;
}

/* --- lookups and attributes --- */

/* Looks name up in d (lock held): a new reference or ERR_PTR(-ENOENT). */
static struct vfs_node *lookup_locked(struct ovl_fs *fs, struct ovl_node *d, const char *name)
{
	struct vfs_node *cached, *u = NULL, *l = NULL, *r;
	struct ovl_node *n;
	bool opaque = false;

	if (vfs_dcache_lookup(&d->children, name, &cached))
		return cached ? cached : ERR_PTR(-ENOENT);
	if (d->upper) {
		r = layer_lookup(d->upper, name);
		if (!IS_ERR(r)) {
			if (is_whiteout(r)) {
				vfs_node_put(r);
				vfs_dcache_insert(&d->children, name, NULL);
				return ERR_PTR(-ENOENT);
			}
			u = r;
		} else if (PTR_ERR(r) != -ENOENT) {
			return r;
		}
		opaque = opaque_mark(d->upper);
	}
	/* Below an upper directory only a lower directory shows (merged); nothing below a file. */
	if (!opaque && d->lower && (!u || vfs_node_is_dir(u))) {
		r = layer_lookup(d->lower, name);
		if (!IS_ERR(r)) {
			if ((u && !vfs_node_is_dir(r)) || is_whiteout(r))
				vfs_node_put(r);
			else
				l = r;
		} else if (PTR_ERR(r) != -ENOENT) {
			vfs_node_put(u);
			return r;
		}
	}
	if (u && l && opaque_mark(u)) {
		vfs_node_put(l);
		l = NULL;
	}
	if (!u && !l) {
		vfs_dcache_insert(&d->children, name, NULL);
		return ERR_PTR(-ENOENT);
	}
	n = node_new(fs, &d->base, name, u, l, 0);
	vfs_node_put(u);
	vfs_node_put(l);
	if (!n)
		return ERR_PTR(-ENOMEM);
	vfs_dcache_insert(&d->children, name, &n->base);
	return &n->base;
}

static struct vfs_node *ovl_lookup(struct vfs_node *dir, const char *name)
{
	struct ovl_fs *fs = ovl_of(dir);
	struct vfs_node *n;

	ovl_lock(fs);
	n = lookup_locked(fs, onode(dir), name);
	ovl_unlock(fs);
	return n;
}

static int ovl_getattr(struct vfs_node *n, struct vfs_attr *attr)
{
	struct ovl_fs *fs = ovl_of(n);
	struct vfs_node *r;
	int err;

	ovl_lock(fs);
	r = real(onode(n));
	vfs_node_get(r);
	ovl_unlock(fs);
	err = vfs_node_getattr(r, attr);
	vfs_node_put(r);
	if (err < 0)
		return err;
	attr->dev = fs->base.dev;
	attr->ino = onode(n)->ino;
	return 0;
}

static ssize_t ovl_readlink(struct vfs_node *n, char *buf, size_t len)
{
	struct ovl_fs *fs = ovl_of(n);
	struct vfs_node *r;
	ssize_t ret;

	ovl_lock(fs);
	r = real(onode(n));
	vfs_node_get(r);
	ovl_unlock(fs);
	ret = r->ops->readlink ? r->ops->readlink(r, buf, len) : -EINVAL;
	vfs_node_put(r);
	return ret;
}

static int ovl_statfs(struct vfs_node *n, struct linux_statfs *st)
{
	struct ovl_node *root = onode(ovl_of(n)->base.root);
	struct vfs_node *ur = root->upper ? root->upper : root->lower;
	int err = ur->ops->statfs ? ur->ops->statfs(ur, st) : -ENOSYS;

	if (err == 0)
		st->f_type = OVERLAYFS_SUPER_MAGIC;
	return err;
}

/* --- copy-up --- */

static int copy_data(struct vfs_node *from, struct vfs_node *to)
{
	struct file *in, *out;
	int64_t ipos = 0, opos = 0;
	char *buf;
	int err = 0;

	in = from->ops->open ? from->ops->open(from, O_RDONLY) : ERR_PTR(-ENXIO);
	if (IS_ERR(in))
		return (int)PTR_ERR(in);
	out = to->ops->open(to, O_WRONLY);
	if (IS_ERR(out)) {
		file_put(in);
		return (int)PTR_ERR(out);
	}
	buf = malloc(OVL_COPY_CHUNK);
	if (!buf)
		err = -ENOMEM;
	/* The copy is the sentry's: the caller's RLIMIT_FSIZE and CAP_FSETID do not apply. */
	vfs_internal_writes(true);
	while (!err) {
		struct iovec iov = { .iov_base = buf, .iov_len = OVL_COPY_CHUNK };
		ssize_t n = in->ops->read(in, &iov, 1, &ipos);

		if (n <= 0) {
			err = (int)n;
			break;
		}
		for (ssize_t done = 0; done < n && !err;) {
			struct iovec w = { .iov_base = buf + done, .iov_len = (size_t)(n - done) };
			ssize_t m = out->ops->write(out, &w, 1, &opos);

			if (m <= 0)
				err = m < 0 ? (int)m : -EIO;
			else
				done += m;
		}
	}
	vfs_internal_writes(false);
	free(buf);
	file_put(in);
	file_put(out);
	return err;
}

/* Removes a whiteout at name in upper directory ud, if there is one. Returns whether it did. */
static bool drop_whiteout(struct vfs_node *ud, const char *name)
{
	struct vfs_node *w = layer_lookup(ud, name);
	bool dropped = false;

	if (IS_ERR(w))
		return false;
	if (is_whiteout(w))
		dropped = ud->ops->unlink(ud, name, w) == 0;
	vfs_node_put(w);
	return dropped;
}

/* Gives n an upper node (lock held); data false skips a regular file's contents. */
/*
 * Copies the extended attributes of lower (the gofer serves user.* and security.capability)
 * to upper. Names the upper layer does not keep (-EOPNOTSUPP) are skipped, as overlayfs does.
 */
static int copy_xattrs(struct vfs_node *lower, struct vfs_node *upper)
{
	_cleanup_free_ char *names = NULL;
	_cleanup_free_ char *value = NULL;
	ssize_t len;

	if (!lower->ops->listxattr || !upper->ops->setxattr)
		return 0;
	len = lower->ops->listxattr(lower, NULL, 0, true);
	if (len <= 0)
		return len == -EOPNOTSUPP ? 0 : (int)len;
	names = malloc((size_t)len);
	value = malloc(VFS_XATTR_SIZE_MAX);
	if (!names || !value)
		return -ENOMEM;
	len = lower->ops->listxattr(lower, names, (size_t)len, true);
	if (len < 0)
		return (int)len; /* -ERANGE: the list grew on the host meanwhile */
	for (char *name = names; name < names + len; name += strlen(name) + 1) {
		ssize_t vlen = lower->ops->getxattr(lower, name, value, VFS_XATTR_SIZE_MAX);
		int err;

		if (vlen == -ENODATA || vlen == -EOPNOTSUPP)
			continue;
		if (vlen < 0)
			return (int)vlen;
		err = upper->ops->setxattr(upper, name, value, (size_t)vlen, 0);
		if (err < 0 && err != -EOPNOTSUPP)
			return err;
	}
	return 0;
}

static int copy_up(struct ovl_fs *fs, struct ovl_node *n, bool data)
{
	struct vfs_create_args a = { 0 };
	struct vfs_setattr sa = { 0 };
	struct ovl_node *parent;
	struct vfs_node *u;
	struct vfs_attr la;
	char *target = NULL;
	int err;

	if (n->upper)
		return 0;
	parent = onode(n->base.parent);
	err = copy_up(fs, parent, false);
	if (err < 0)
		return err;
	err = vfs_node_getattr(n->lower, &la);
	if (err < 0)
		return err;
	a = (struct vfs_create_args){
		.mode = la.mode, .uid = la.uid, .gid = la.gid, .rdev = la.rdev
	};
	if (S_ISLNK(la.mode)) {
		ssize_t len;

		target = malloc(VFS_PATH_MAX);
		if (!target)
			return -ENOMEM;
		len = n->lower->ops->readlink(n->lower, target, VFS_PATH_MAX - 1);
		if (len < 0 || len >= VFS_PATH_MAX) {
			free(target);
			return len < 0 ? (int)len : -ENAMETOOLONG;
		}
		target[len] = '\0';
		a.target = target;
	}
	drop_whiteout(parent->upper, n->base.name);
	err = parent->upper->ops->create(parent->upper, n->base.name, &a, &u);
	free(target);
	if (err < 0)
		return err;
	if (S_ISREG(la.mode) && data && la.size > 0)
		err = copy_data(n->lower, u);
	if (err == 0 && (S_ISREG(la.mode) || S_ISDIR(la.mode)))
		err = copy_xattrs(n->lower, u);
	if (err < 0) {
		if (S_ISDIR(la.mode))
			parent->upper->ops->rmdir(parent->upper, n->base.name, u);
		else
			parent->upper->ops->unlink(parent->upper, n->base.name, u);
		vfs_node_put(u);
		return err;
	}
	/* Keep the lower file's times; ctime can only be now, as on Linux. */
	sa.valid = VFS_SETATTR_ATIME | VFS_SETATTR_MTIME;
	sa.atime = la.atime;
	sa.mtime = la.mtime;
	u->ops->setattr(u, &sa);
	tmpfs_set_origin_ino(u, n->ino);
	n->upper = u;
	/* A copied-up non-directory no longer needs its lower node. */
	if (!S_ISDIR(la.mode)) {
		vfs_node_put(n->lower);
		n->lower = NULL;
	}
	return 0;
}

/* --- directories: merged listings --- */

struct ovl_dirent {
	char *name;
	uint64_t ino;
	unsigned int type;
};

struct ovl_list {
	struct ovl_dirent *v;
	size_t n, cap;
	struct vfs_dcache seen; /* names already taken by an upper entry or whiteout */
};

static int olist_add(struct ovl_list *l, const char *name, size_t len, uint64_t ino,
		     unsigned int type)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct ovl_dirent *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n].name = strndup(name, len);
	if (!l->v[l->n].name)
		return -ENOMEM;
	l->v[l->n].ino = ino;
	l->v[l->n].type = type;
	l->n++;
	return 0;
}

static void olist_free(struct ovl_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
	vfs_dcache_clear(&l->seen, NULL, NULL);
	memset(l, 0, sizeof(*l));
}

/* Collects the entries of one layer directory into a flat list (names, inos, types). */
struct collect {
	struct dir_emitter e;
	struct ovl_list *l;
	int err;
};

static bool collect_emit(struct dir_emitter *e, const char *name, size_t namelen, uint64_t ino,
			 unsigned int dtype, int64_t next_off)
{
	struct collect *c = container_of(e, struct collect, e);

	if ((namelen == 1 && name[0] == '.') || (namelen == 2 && !memcmp(name, "..", 2)))
		return true;
	c->err = olist_add(c->l, name, namelen, ino, dtype);
	return c->err == 0;
}

static int collect_layer(struct vfs_node *dir, struct ovl_list *l)
{
	struct collect c = { .e.emit = collect_emit, .l = l };
	int64_t pos = 0;

	for (;;) {
		int64_t before = pos;
		size_t had = l->n;
		int err = dir->ops->iterate(dir, &pos, &c.e);

		if (err < 0)
			return err;
		if (c.err < 0)
			return c.err;
		if (pos == before || l->n == had)
			return 0;
	}
}

/*
 * The merged entries of directory d (lock held), without "." and "..". With inos false, the
 * inode numbers are not looked up (emptiness checks).
 */
static int merge_dir(struct ovl_fs *fs, struct ovl_node *d, struct ovl_list *out, bool inos)
{
	struct ovl_list up = { 0 }, low = { 0 };
	bool opaque = d->upper && opaque_mark(d->upper);
	int err = 0;

	if (d->upper)
		err = collect_layer(d->upper, &up);
	if (!err && d->lower && !opaque && vfs_node_is_dir(d->lower))
		err = collect_layer(d->lower, &low);
	for (size_t i = 0; !err && i < up.n; i++) {
		struct ovl_dirent *e = &up.v[i];
		uint64_t ino = e->ino | OVL_UPPER_INO_BIT;

		vfs_dcache_insert(&out->seen, e->name, NULL);
		if (e->type == DT_CHR && layer_whiteout(d->upper, e->name))
			continue;
		if (inos) {
			struct vfs_node *n = lookup_locked(fs, d, e->name);

			if (!IS_ERR(n)) {
				ino = onode(n)->ino;
				vfs_node_put(n);
			}
		}
		err = olist_add(out, e->name, strlen(e->name), ino, e->type);
	}
	for (size_t i = 0; !err && i < low.n; i++) {
		struct ovl_dirent *e = &low.v[i];
		struct vfs_node *dummy;

		if (vfs_dcache_lookup(&out->seen, e->name, &dummy))
			continue;
		/* A lower layer's whiteouts hide names too (a guest's lowerdir=A:B keeps them). */
		if (e->type == DT_CHR && layer_whiteout(d->lower, e->name))
			continue;
		err = olist_add(out, e->name, strlen(e->name), e->ino, e->type);
	}
	olist_free(&up);
	olist_free(&low);
	return err;
}

/* Removes the whiteouts left in upper directory ud (before it is removed or replaced). */
static int clear_whiteouts(struct vfs_node *ud)
{
	struct ovl_list l = { 0 };
	int err = collect_layer(ud, &l);

	for (size_t i = 0; !err && i < l.n; i++) {
		struct vfs_node *w = layer_lookup(ud, l.v[i].name);

		if (IS_ERR(w))
			continue;
		if (is_whiteout(w))
			err = ud->ops->unlink(ud, l.v[i].name, w);
		vfs_node_put(w);
	}
	olist_free(&l);
	return err;
}

/* -ENOTEMPTY unless directory d shows no entry (lock held). */
static int check_empty(struct ovl_fs *fs, struct ovl_node *d)
{
	struct ovl_list l = { 0 };
	int err = merge_dir(fs, d, &l, false);

	if (err == 0 && l.n)
		err = -ENOTEMPTY;
	olist_free(&l);
	return err;
}

/* An open directory: the snapshot of its merged entries, taken at position 0. */
struct ovl_dir_file {
	struct ovl_list list;
	bool built;
};

static int ovl_dir_iterate(struct file *f, struct dir_emitter *e)
{
	struct ovl_dir_file *df = f->priv;
	struct ovl_node *d = onode(f->node);
	struct ovl_fs *fs = ovl_of(f->node);
	int err = 0;

	if (f->pos == 0 || !df->built) {
		olist_free(&df->list);
		ovl_lock(fs);
		err = merge_dir(fs, d, &df->list, true);
		ovl_unlock(fs);
		if (err < 0) {
			olist_free(&df->list);
			return err;
		}
		df->built = true;
	}
	if (f->pos == 0) {
		if (!e->emit(e, ".", 1, d->ino, DT_DIR, 1))
			return 0;
		f->pos = 1;
	}
	if (f->pos == 1) {
		struct vfs_node *up = vfs_node_get_parent(f->node);
		uint64_t ino = up ? onode(up)->ino : d->ino;

		vfs_node_put(up);
		if (!e->emit(e, "..", 2, ino, DT_DIR, 2))
			return 0;
		f->pos = 2;
	}
	while (f->pos >= 2 && (size_t)(f->pos - 2) < df->list.n) {
		struct ovl_dirent *de = &df->list.v[f->pos - 2];

		if (!e->emit(e, de->name, strlen(de->name), de->ino, de->type, f->pos + 1))
			break;
		f->pos++;
	}
	return 0;
}

static ssize_t ovl_dir_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	return -EISDIR;
}

static int64_t ovl_dir_llseek(struct file *f, int64_t off, int whence)
{
	if (whence == SEEK_SET)
		return off < 0 ? -EINVAL : off;
	if (whence == SEEK_CUR)
		return vfs_generic_llseek(f, off, whence, 0);
	return -EINVAL;
}

static void ovl_dir_release(struct file *f)
{
	struct ovl_dir_file *df = f->priv;

	olist_free(&df->list);
	free(df);
}

static const struct file_ops ovl_dir_file_ops = {
	.read = ovl_dir_read,
	.llseek = ovl_dir_llseek,
	.iterate = ovl_dir_iterate,
	.release = ovl_dir_release,
};

static struct file *ovl_open_dir(struct vfs_node *n, int flags)
{
	struct ovl_dir_file *df = calloc(1, sizeof(*df));
	struct file *f;

	if (!df)
		return ERR_PTR(-ENOMEM);
	f = file_alloc(&ovl_dir_file_ops, flags, df);
	if (!f) {
		free(df);
		return ERR_PTR(-ENOMEM);
	}
	return f;
}

/* --- files --- */

static struct file *ovl_open(struct vfs_node *n, int flags)
{
	struct ovl_fs *fs = ovl_of(n);
	struct ovl_node *on = onode(n);
	bool write = (flags & O_ACCMODE) == O_WRONLY || (flags & O_ACCMODE) == O_RDWR;
	struct vfs_node *r;
	struct file *f;

	/* The overlay's inode number is the FIFO's identity, the same before and after copy-up. */
	if (S_ISFIFO(n->type))
		return pipe_fifo_open(n, flags);
	ovl_lock(fs);
	if (S_ISREG(n->type) && (write || (flags & O_TRUNC))) {
		int err = fs->ro ? -EROFS : copy_up(fs, on, !(flags & O_TRUNC));

		if (err < 0) {
			ovl_unlock(fs);
			return ERR_PTR(err);
		}
	}
	r = real(on);
	vfs_node_get(r);
	ovl_unlock(fs);
	f = r->ops->open ? r->ops->open(r, flags) : ERR_PTR(-ENXIO);
	vfs_node_put(r);
	return f;
}

/* --- changes --- */

static int ovl_create(struct vfs_node *dir, const char *name, const struct vfs_create_args *a,
		      struct vfs_node **out)
{
	struct ovl_fs *fs = ovl_of(dir);
	struct ovl_node *d = onode(dir), *n;
	struct vfs_node *existing, *u;
	bool had_whiteout;
	int err;

	if (fs->ro)
		return -EROFS;
	ovl_lock(fs);
	existing = lookup_locked(fs, d, name);
	if (!IS_ERR(existing)) {
		vfs_node_put(existing);
		err = -EEXIST;
		goto out;
	}
	err = copy_up(fs, d, false);
	if (err < 0)
		goto out;
	had_whiteout = drop_whiteout(d->upper, name);
	err = d->upper->ops->create(d->upper, name, a, &u);
	if (err < 0)
		goto out;
	/* A new directory where the lower layer has a name must not show its entries. */
	if (S_ISDIR(a->mode) && (had_whiteout || lower_has(d, name)))
		tmpfs_set_opaque(u, true);
	n = node_new(fs, dir, name, u, NULL, 0);
	vfs_node_put(u);
	if (!n) {
		err = -ENOMEM;
		goto out;
	}
	vfs_dcache_insert(&d->children, name, &n->base);
	*out = &n->base;
out:
	ovl_unlock(fs);
	return err;
}

static int ovl_tmpfile(struct vfs_node *dir, const struct vfs_create_args *a, struct vfs_node **out)
{
	struct ovl_fs *fs = ovl_of(dir);
	struct ovl_node *d = onode(dir), *n;
	struct vfs_node *u;
	int err;

	if (fs->ro)
		return -EROFS;
	ovl_lock(fs);
	err = copy_up(fs, d, false);
	if (err == 0)
		err = d->upper->ops->tmpfile ? d->upper->ops->tmpfile(d->upper, a, &u) :
					       -EOPNOTSUPP;
	if (err == 0) {
		n = node_new(fs, dir, u->name, u, NULL, 0);
		vfs_node_put(u);
		if (!n)
			err = -ENOMEM;
		else
			*out = &n->base;
	}
	ovl_unlock(fs);
	return err;
}

static int ovl_link(struct vfs_node *dir, const char *name, struct vfs_node *old,
		    struct vfs_node **out)
{
	struct ovl_fs *fs = ovl_of(dir);
	struct ovl_node *d = onode(dir), *o = onode(old), *n;
	struct vfs_node *u;
	int err;

	if (old->fs != dir->fs)
		return -EXDEV;
	if (fs->ro)
		return -EROFS;
	ovl_lock(fs);
	err = copy_up(fs, o, true);
	if (err == 0)
		err = copy_up(fs, d, false);
	if (err < 0)
		goto out;
	drop_whiteout(d->upper, name);
	err = d->upper->ops->link(d->upper, name, o->upper, &u);
	if (err < 0)
		goto out;
	n = node_new(fs, dir, name, u, NULL, o->ino);
	vfs_node_put(u);
	if (!n) {
		err = -ENOMEM;
		goto out;
	}
	vfs_dcache_insert(&d->children, name, &n->base);
	*out = &n->base;
out:
	ovl_unlock(fs);
	return err;
}

/* Leaves a whiteout at name in d's upper directory if the lower layer has the name. */
static int whiteout_if_needed(struct ovl_node *d, const char *name)
{
	struct vfs_create_args wa = { .mode = S_IFCHR };
	struct vfs_node *w;
	int err;

	if (!lower_has(d, name))
		return 0;
	err = d->upper->ops->create(d->upper, name, &wa, &w);
	if (err == 0)
		vfs_node_put(w);
	return err;
}

/* Forgets the cached children of directory n (it was removed or replaced). */
static void forget_children(struct ovl_node *n)
{
	vfs_dcache_clear(&n->children, NULL, NULL);
}

static int ovl_remove(struct vfs_node *dir, const char *name, struct vfs_node *child, bool isdir)
{
	struct ovl_fs *fs = ovl_of(dir);
	struct ovl_node *d = onode(dir), *c = onode(child);
	int err;

	if (fs->ro)
		return -EROFS;
	ovl_lock(fs);
	if (isdir) {
		err = check_empty(fs, c);
		if (err < 0)
			goto out;
	}
	err = copy_up(fs, d, false);
	if (err < 0)
		goto out;
	if (c->upper) {
		if (isdir) {
			err = clear_whiteouts(c->upper);
			if (err == 0)
				err = d->upper->ops->rmdir(d->upper, name, c->upper);
		} else {
			err = d->upper->ops->unlink(d->upper, name, c->upper);
		}
		if (err < 0)
			goto out;
	}
	err = whiteout_if_needed(d, name);
	if (isdir)
		forget_children(c);
	vfs_dcache_insert(&d->children, name, NULL);
out:
	ovl_unlock(fs);
	return err;
}

static int ovl_unlink(struct vfs_node *dir, const char *name, struct vfs_node *child)
{
	return ovl_remove(dir, name, child, false);
}

static int ovl_rmdir(struct vfs_node *dir, const char *name, struct vfs_node *child)
{
	return ovl_remove(dir, name, child, true);
}

static int ovl_rename(struct vfs_node *olddir, const char *oldname, struct vfs_node *node,
		      struct vfs_node *newdir, const char *newname, struct vfs_node *target,
		      unsigned int flags)
{
	struct ovl_fs *fs = ovl_of(olddir);
	struct ovl_node *od = onode(olddir), *nd = onode(newdir), *x = onode(node);
	struct ovl_node *y = target ? onode(target) : NULL;
	bool exchange = flags & VFS_RENAME_EXCHANGE;
	bool x_dir = vfs_node_is_dir(node), y_dir = target && vfs_node_is_dir(target);
	bool old_whiteout, x_opaque, y_opaque = false;
	int err;

	if (flags & VFS_RENAME_WHITEOUT)
		return -EINVAL;
	if (newdir->fs != olddir->fs)
		return -EXDEV;
	if (fs->ro)
		return -EROFS;
	ovl_lock(fs);
	/* Directories with a lower part cannot move in place (overlayfs without redirect_dir). */
	if ((x_dir && x->lower) || (exchange && y_dir && y->lower)) {
		err = -EXDEV;
		goto out;
	}
	if (y && y_dir && !exchange) {
		err = check_empty(fs, y);
		if (err < 0)
			goto out;
	}
	err = copy_up(fs, x, true);
	if (err == 0)
		err = copy_up(fs, od, false);
	if (err == 0)
		err = copy_up(fs, nd, false);
	if (err == 0 && exchange)
		err = copy_up(fs, y, true);
	if (err < 0)
		goto out;
	if (y && y_dir && !exchange && y->upper) {
		err = clear_whiteouts(y->upper);
		if (err < 0)
			goto out;
	}
	old_whiteout = !exchange && lower_has(od, oldname);
	x_opaque = x_dir && lower_has(nd, newname);
	if (exchange)
		y_opaque = y_dir && lower_has(od, oldname);
	if (!y || !y->upper)
		drop_whiteout(nd->upper, newname);
	err = od->upper->ops->rename(od->upper, oldname, x->upper, nd->upper, newname,
				     y ? y->upper : NULL,
				     flags & (VFS_RENAME_NOREPLACE | VFS_RENAME_EXCHANGE));
	if (err < 0)
		goto out;
	if (x_opaque)
		tmpfs_set_opaque(x->upper, true);
	if (y_opaque)
		tmpfs_set_opaque(y->upper, true);
	if (old_whiteout)
		err = whiteout_if_needed(od, oldname);
	/* The overlay's own names follow the upper layer's. */
	vfs_node_get(node);
	if (exchange) {
		vfs_node_get(target);
		vfs_node_move(node, newdir, newname);
		vfs_node_move(target, olddir, oldname);
		vfs_dcache_insert(&od->children, oldname, target);
		vfs_dcache_insert(&nd->children, newname, node);
		vfs_node_put(target);
	} else {
		if (y && y_dir)
			forget_children(y);
		vfs_node_move(node, newdir, newname);
		vfs_dcache_insert(&od->children, oldname, NULL);
		vfs_dcache_insert(&nd->children, newname, node);
	}
	vfs_node_put(node);
out:
	ovl_unlock(fs);
	return err;
}

static int ovl_setattr(struct vfs_node *n, const struct vfs_setattr *sa)
{
	struct ovl_fs *fs = ovl_of(n);
	struct ovl_node *on = onode(n);
	bool data = !((sa->valid & VFS_SETATTR_SIZE) && sa->size == 0);
	int err;

	if (fs->ro)
		return -EROFS;
	ovl_lock(fs);
	err = copy_up(fs, on, data);
	if (err == 0)
		err = on->upper->ops->setattr(on->upper, sa);
	ovl_unlock(fs);
	return err;
}

/* --- extended attributes: read from the real node, written after a copy-up --- */

static ssize_t ovl_getxattr(struct vfs_node *n, const char *name, void *buf, size_t size)
{
	struct ovl_fs *fs = ovl_of(n);
	struct vfs_node *r;
	ssize_t ret;

	ovl_lock(fs);
	r = real(onode(n));
	ret = r->ops->getxattr ? r->ops->getxattr(r, name, buf, size) : -EOPNOTSUPP;
	ovl_unlock(fs);
	return ret;
}

static ssize_t ovl_listxattr(struct vfs_node *n, char *buf, size_t size, bool list_trusted)
{
	struct ovl_fs *fs = ovl_of(n);
	struct vfs_node *r;
	ssize_t ret;

	ovl_lock(fs);
	r = real(onode(n));
	ret = r->ops->listxattr ? r->ops->listxattr(r, buf, size, list_trusted) : 0;
	ovl_unlock(fs);
	return ret;
}

static int ovl_setxattr(struct vfs_node *n, const char *name, const void *value, size_t size,
			int flags)
{
	struct ovl_fs *fs = ovl_of(n);
	struct ovl_node *on = onode(n);
	int err;

	if (fs->ro)
		return -EROFS;
	ovl_lock(fs);
	err = copy_up(fs, on, true);
	if (err == 0)
		err = on->upper->ops->setxattr ?
			      on->upper->ops->setxattr(on->upper, name, value, size, flags) :
			      -EOPNOTSUPP;
	ovl_unlock(fs);
	return err;
}

static int ovl_removexattr(struct vfs_node *n, const char *name)
{
	struct ovl_fs *fs = ovl_of(n);
	struct ovl_node *on = onode(n);
	int err = 0;

	if (fs->ro)
		return -EROFS;
	ovl_lock(fs);
	/* Removing what the lower file does not have needs no copy-up (overlayfs does the same). */
	if (!on->upper) {
		ssize_t r = on->lower->ops->getxattr ?
				    on->lower->ops->getxattr(on->lower, name, NULL, 0) :
				    -EOPNOTSUPP;
		if (r < 0)
			err = (int)r;
	}
	if (err == 0)
		err = copy_up(fs, on, true);
	if (err == 0)
		err = on->upper->ops->removexattr ? on->upper->ops->removexattr(on->upper, name) :
						    -EOPNOTSUPP;
	ovl_unlock(fs);
	return err;
}

static void ovl_node_release(struct vfs_node *n)
{
	struct ovl_node *on = onode(n);

	vfs_dcache_clear(&on->children, NULL, NULL);
	vfs_node_put(on->upper);
	vfs_node_put(on->lower);
	free(on);
}

static void drop_tree(struct vfs_node *n, void *arg)
{
	vfs_dcache_clear(&onode(n)->children, drop_tree, NULL);
	if (arg != n)
		vfs_node_put(n);
}

static void ovl_fs_release(struct vfs_fs *vfs)
{
	struct ovl_fs *fs = container_of(vfs, struct ovl_fs, base);

	drop_tree(fs->base.root, fs->base.root);
	vfs_node_put(fs->base.root);
	vfs_fs_put(fs->upper_fs);
	vfs_fs_put(fs->lower_fs);
	pthread_mutex_destroy(&fs->lock);
	free(fs);
}

static const struct vfs_node_ops ovl_node_ops = {
	.lookup = ovl_lookup,
	.getattr = ovl_getattr,
	.readlink = ovl_readlink,
	.open = ovl_open,
	.statfs = ovl_statfs,
	.release = ovl_node_release,
	.open_dir = ovl_open_dir,
	.create = ovl_create,
	.tmpfile = ovl_tmpfile,
	.link = ovl_link,
	.unlink = ovl_unlink,
	.rmdir = ovl_rmdir,
	.rename = ovl_rename,
	.setattr = ovl_setattr,
	.getxattr = ovl_getxattr,
	.setxattr = ovl_setxattr,
	.listxattr = ovl_listxattr,
	.removexattr = ovl_removexattr,
};

static const struct vfs_fs_ops ovl_fs_ops = {
	.release = ovl_fs_release,
};

/* An overlay of upper (NULL: none) over lower, directories; references taken on both. */
static struct ovl_fs *ovl_new(struct vfs_node *lower, struct vfs_node *upper, bool ro, bool mounted)
{
	struct ovl_fs *fs = calloc(1, sizeof(*fs));
	pthread_mutexattr_t ma;
	struct ovl_node *root;

	if (!fs)
		return NULL;
	vfs_fs_init(&fs->base, &ovl_fs_ops, "overlay");
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&fs->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	root = node_new(fs, NULL, "", upper, lower, 0);
	if (!root) {
		pthread_mutex_destroy(&fs->lock);
		free(fs);
		return NULL;
	}
	vfs_fs_get(lower->fs);
	fs->lower_fs = lower->fs;
	if (upper) {
		vfs_fs_get(upper->fs);
		fs->upper_fs = upper->fs;
	}
	fs->ro = ro;
	fs->mounted = mounted;
	fs->base.root = &root->base;
	return fs;
}

struct vfs_fs *overlay_create(struct vfs_fs *lower, struct vfs_fs *upper)
{
	struct ovl_fs *fs = ovl_new(lower->root, upper->root, false, false);

	return fs ? &fs->base : NULL;
}

struct vfs_fs *overlay_mount(struct vfs_node *const *lowers, size_t n, struct vfs_node *upper)
{
	struct vfs_node *below = lowers[n - 1];
	struct vfs_fs *held = NULL;
	struct ovl_fs *fs = NULL;

	if (upper && !tmpfs_is_node(upper))
		return ERR_PTR(-EINVAL);
	/* lowerdir=A:B:C is A over (B over C): each step a read-only overlay, as overlayfs's. */
	for (size_t i = n - 1; i-- > 0;) {
		fs = ovl_new(below, lowers[i], true, true);
		vfs_fs_put(held);
		if (!fs)
			return ERR_PTR(-ENOMEM);
		held = &fs->base;
		below = fs->base.root;
	}
	if (upper || n == 1) {
		fs = ovl_new(below, upper, !upper, true);
		vfs_fs_put(held);
		if (!fs)
			return ERR_PTR(-ENOMEM);
	}
	return &fs->base;
}

/* --- checkpoint and restore (sentry/state/fs.c) --- */

struct vfs_fs *overlay_upper(struct vfs_fs *fs)
{
	if (fs->ops != &ovl_fs_ops || container_of(fs, struct ovl_fs, base)->mounted)
		return NULL;
	return container_of(fs, struct ovl_fs, base)->upper_fs;
}

struct vfs_node *overlay_node_detached(struct vfs_fs *vfs, struct vfs_node *upper, uint64_t ino)
{
	struct ovl_fs *fs = container_of(vfs, struct ovl_fs, base);
	struct ovl_node *n;

	if (vfs->ops != &ovl_fs_ops)
		return ERR_PTR(-EINVAL);
	n = node_new(fs, NULL, "", upper, NULL, ino);
	return n ? &n->base : ERR_PTR(-ENOMEM);
}

/* Collects the positive entries of a name cache (vfs_dcache_clear's callback). */
struct refresh_list {
	struct vfs_node **v;
	size_t n, cap;
	bool nomem;
};

static void refresh_collect(struct vfs_node *n, void *arg)
{
	struct refresh_list *l = arg;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct vfs_node **v = realloc(l->v, cap * sizeof(*v));

		if (!v) {
			l->nomem = true;
			vfs_node_put(n);
			return;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = n;
}

/* See overlay_restore_refresh (lock held). */
static void refresh_dir(struct ovl_node *d)
{
	struct refresh_list l = { 0 };

	vfs_dcache_clear(&d->children, refresh_collect, &l);
	for (size_t i = 0; i < l.n; i++) {
		struct ovl_node *c = onode(l.v[i]);

		/* Only the cache held it: the next lookup makes it again from the layers. */
		if (refcount_read(&c->base.ref) == 1) {
			vfs_node_put(&c->base);
			continue;
		}
		if (!c->upper && d->upper) {
			struct vfs_node *u = layer_lookup(d->upper, c->base.name);

			if (!IS_ERR(u) && is_whiteout(u)) {
				/* Removed since: holders keep a node no walk reaches. */
				vfs_node_put(u);
				vfs_node_put(&c->base);
				continue;
			}
			if (!IS_ERR(u))
				c->upper = u;
		}
		vfs_dcache_insert(&d->children, c->base.name, &c->base);
		refresh_dir(c);
		vfs_node_put(&c->base);
	}
	free(l.v);
}

void overlay_restore_refresh(struct vfs_fs *vfs)
{
	struct ovl_fs *fs = container_of(vfs, struct ovl_fs, base);

	if (vfs->ops != &ovl_fs_ops)
		return;
	ovl_lock(fs);
	refresh_dir(onode(fs->base.root));
	ovl_unlock(fs);
}

int vfs_mount_root_overlay(struct kernel *k, struct gofer_client *gc, uint64_t upper_size)
{
	struct vfs_fs *lower, *upper, *ovl;
	struct vfs_attr ra;
	int err;

	err = gofer_fs_create(gc, true, &lower);
	if (err < 0)
		return err;
	/*
	 * MAP_SHARED: a writable mapping needs a file open for writing, which copy-up made an upper
	 * (tmpfs) file; a read-only one of a lower file maps the gofer's page cache.
	 */
	gofer_fs_set_memfile(lower, &k->mf);
	/* The upper root looks like the lower one: the merged root shows the upper's attributes. */
	err = vfs_node_getattr(lower->root, &ra);
	if (err < 0) {
		vfs_fs_put(lower);
		return err;
	}
	upper = tmpfs_create(&k->mf, upper_size, ra.mode & 07777, ra.uid, ra.gid);
	if (!upper) {
		vfs_fs_put(lower);
		return -ENOMEM;
	}
	ovl = overlay_create(lower, upper);
	vfs_fs_put(lower);
	vfs_fs_put(upper);
	if (!ovl)
		return -ENOMEM;
	return vfs_set_root_fs(k, ovl, 0);
}
