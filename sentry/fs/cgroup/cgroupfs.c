/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cgroup2 filesystem (cgroup.h): a directory per cgroup of the sandbox's hierarchy with
 * Linux's interface files. Nodes are made at each lookup and hold their cgroup; a file's
 * contents are generated when it is opened (one snapshot per open, as kernfs's seq_file) and
 * each write(2) is one command, as on Linux.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/err.h"
#include "common/util.h"
#include "include/abi/linux/stat.h"
#include "sentry/fs/cgroup/internal.h"
#include "sentry/fs/proc/proc.h"
#include "sentry/kernel/cputime.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/memfile.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/fs.h"

struct cgfs {
	struct vfs_fs base;
	struct kernel *k; /* not owned */
};

struct cgfs_node {
	struct vfs_node base;
	struct cgroup *cg; /* referenced */
	const struct cg_file *file; /* NULL for the directory */
};

static struct cgfs_node *cgn(struct vfs_node *n)
{
	return container_of(n, struct cgfs_node, base);
}

static struct kernel *node_k(struct vfs_node *n)
{
	return container_of(n->fs, struct cgfs, base)->k;
}

/* --- nodes --- */

static const struct vfs_node_ops cgfs_node_ops;

static struct vfs_node *node_new(struct vfs_node *parent, struct vfs_fs *fs, const char *name,
				 struct cgroup *cg, const struct cg_file *file)
{
	struct cgfs_node *n = calloc(1, sizeof(*n));

	if (!n)
		return ERR_PTR(-ENOMEM);
	if (vfs_node_init(&n->base, &cgfs_node_ops, fs, parent, name, file ? S_IFREG : S_IFDIR) <
	    0) {
		free(n);
		return ERR_PTR(-ENOMEM);
	}
	cgroup_get(cg);
	n->cg = cg;
	n->file = file;
	return &n->base;
}

static struct vfs_node *cgfs_lookup(struct vfs_node *dir, const char *name)
{
	struct cgroup *cg = cgn(dir)->cg, *c, *found = NULL;
	struct vfs_node *n;

	/* A removed cgroup's directory (still open) is empty, as Linux's. */
	if (cgroup_removed(cg))
		return ERR_PTR(-ENOENT);
	for (size_t i = 0; i < cgroup_nfiles; i++)
		if (!strcmp(cgroup_files[i].name, name))
			return cgroup_file_shown(cg, &cgroup_files[i]) ?
				       node_new(dir, dir->fs, name, cg, &cgroup_files[i]) :
				       ERR_PTR(-ENOENT);
	pthread_mutex_lock(&cgroup_lock);
	if (!cg->removed) {
		list_for_each_entry(c, &cg->children, sibling) {
			if (!strcmp(c->name, name)) {
				found = c;
				cgroup_get(found);
				break;
			}
		}
	}
	pthread_mutex_unlock(&cgroup_lock);
	if (!found)
		return ERR_PTR(-ENOENT);
	n = node_new(dir, dir->fs, name, found, NULL);
	cgroup_put(found);
	return n;
}

struct vfs_node *cgroupfs_node_of(struct vfs_fs *fs, struct cgroup *cg)
{
	struct vfs_node *dir, *n;

	if (!cg || !cg->parent) {
		vfs_node_get(fs->root);
		return fs->root;
	}
	dir = cgroupfs_node_of(fs, cg->parent);
	if (IS_ERR(dir))
		return dir;
	/* Names are fixed (no rename in cgroupfs); a removed cgroup is not found: ENOENT. */
	n = cgfs_lookup(dir, cg->name);
	vfs_node_put(dir);
	return n;
}

static uint64_t node_ino(struct cgroup *cg, const struct cg_file *f)
{
	return (cg->ino << 8) | (f ? (uint64_t)(f - cgroup_files) + 1 : 0);
}

/* The owner and mode of cg's directory (f NULL) or file f: chown/chmod's, else the defaults. */
void cgroup_file_owner(struct cgroup *cg, const struct cg_file *f, struct vfs_attr *attr)
{
	const struct cgroup_owner *o = &cg->owner[f ? 1 + (f - cgroup_files) : 0];

	attr->mode = !f			       ? S_IFDIR | (cg->parent ? 0755 : 0555) :
		     cgroup_file_writer(cg, f) ? S_IFREG | f->mode :
						 S_IFREG | (f->mode & 0444);
	attr->uid = cg->uid;
	attr->gid = cg->gid;
	pthread_mutex_lock(&cgroup_lock);
	if (o->set) {
		attr->mode = (attr->mode & S_IFMT) | o->mode;
		attr->uid = o->uid;
		attr->gid = o->gid;
	}
	pthread_mutex_unlock(&cgroup_lock);
}

static int cgfs_getattr(struct vfs_node *vn, struct vfs_attr *attr)
{
	struct cgfs_node *n = cgn(vn);
	struct cgroup *cg = n->cg;
	int nchildren = 0;
	struct cgroup *c;

	if (!n->file) {
		pthread_mutex_lock(&cgroup_lock);
		list_for_each_entry(c, &cg->children, sibling)
			nchildren++;
		pthread_mutex_unlock(&cgroup_lock);
	}
	*attr = (struct vfs_attr){
		.dev = vn->fs->dev,
		.ino = node_ino(cg, n->file),
		.nlink = n->file ? 1 : 2 + (uint32_t)nchildren,
		.blksize = 4096,
		.atime = cg->ctime,
		.mtime = cg->ctime,
		.ctime = cg->ctime,
	};
	cgroup_file_owner(cg, n->file, attr);
	return 0;
}

static int cgfs_iterate(struct vfs_node *dir, int64_t *pos, struct dir_emitter *e)
{
	struct cgroup *cg = cgn(dir)->cg;
	int64_t nfiles = (int64_t)cgroup_nfiles;

	/* Positions: 0 ".", 1 "..", 2 + i file i, 2 + nfiles + j the j-th child cgroup. */
	for (; *pos >= 0; (*pos)++) {
		bool ok = true;

		if (*pos < 2) {
			ok = e->emit(e, *pos ? ".." : ".", (size_t)*pos + 1, cg->ino << 8, DT_DIR,
				     *pos + 1);
		} else if (*pos < 2 + nfiles) {
			const struct cg_file *f = &cgroup_files[*pos - 2];

			if (cgroup_file_shown(cg, f) && !cgroup_removed(cg))
				ok = e->emit(e, f->name, strlen(f->name), node_ino(cg, f), DT_REG,
					     *pos + 1);
		} else {
			int64_t j = *pos - 2 - nfiles, i = 0;
			char name[VFS_NAME_MAX + 1];
			uint64_t ino = 0;
			struct cgroup *c;

			name[0] = '\0';
			pthread_mutex_lock(&cgroup_lock);
			list_for_each_entry(c, &cg->children, sibling) {
				if (i++ == j) {
					snprintf(name, sizeof(name), "%s", c->name);
					ino = c->ino << 8;
					break;
				}
			}
			pthread_mutex_unlock(&cgroup_lock);
			if (!name[0])
				break;
			ok = e->emit(e, name, strlen(name), ino, DT_DIR, *pos + 1);
		}
		if (!ok)
			break;
	}
	return 0;
}

static int cgfs_mkdir(struct vfs_node *dir, const char *name, const struct vfs_create_args *a,
		      struct vfs_node **out)
{
	struct cgroup *parent = cgn(dir)->cg, *cg, *p;
	struct vfs_node *n;
	int depth = 0, ret = 0;

	if (!S_ISDIR(a->mode))
		return -EPERM;
	for (size_t i = 0; i < cgroup_nfiles; i++)
		if (!strcmp(cgroup_files[i].name, name))
			return -EEXIST;
	cg = calloc(1, sizeof(*cg));
	if (!cg || !(cg->name = strdup(name))) {
		free(cg);
		return -ENOMEM;
	}
	cgroup_defaults(cg);
	cg->uid = a->uid;
	cg->gid = a->gid;
	pthread_mutex_lock(&cgroup_lock);
	if (parent->removed) {
		ret = -ENOENT;
		goto out_unlock;
	}
	list_for_each_entry(p, &parent->children, sibling) {
		if (!strcmp(p->name, name)) {
			ret = -EEXIST;
			goto out_unlock;
		}
	}
	/* Linux's cgroup.max.depth and cgroup.max.descendants of every ancestor: EAGAIN. */
	for (p = parent; p; p = p->parent, depth++) {
		if ((p->max_depth >= 0 && depth + 1 > p->max_depth) ||
		    (p->max_descendants >= 0 &&
		     cgroup_count_descendants(p) >= p->max_descendants)) {
			ret = -EAGAIN;
			goto out_unlock;
		}
	}
	cg->ino = cgroup_alloc_ino_locked();
	cgroup_get(parent);
	cg->parent = parent;
	list_add_tail(&cg->sibling, &parent->children); /* the list's reference */
out_unlock:
	pthread_mutex_unlock(&cgroup_lock);
	if (ret < 0) {
		cgroup_put(cg);
		return ret;
	}
	n = node_new(dir, dir->fs, name, cg, NULL);
	if (IS_ERR(n))
		return (int)PTR_ERR(n);
	*out = n;
	return 0;
}

static int cgfs_rmdir(struct vfs_node *dir, const char *name, struct vfs_node *child)
{
	struct kernel *k = node_k(dir);
	struct cgroup *cg = cgn(child)->cg;
	int procs, ret = 0;

	if (cgn(child)->file)
		return -ENOTDIR;
	pthread_mutex_lock(&k->tree_lock);
	cgroup_count_locked(k, cg, &procs, NULL);
	pthread_mutex_lock(&cgroup_lock);
	if (cg->removed)
		ret = -ENOENT;
	else if (procs || !list_empty(&cg->children))
		ret = -EBUSY;
	else {
		cg->removed = true;
		list_del(&cg->sibling);
		list_init(&cg->sibling);
	}
	pthread_mutex_unlock(&cgroup_lock);
	pthread_mutex_unlock(&k->tree_lock);
	if (ret == 0)
		cgroup_put(cg); /* the list's reference */
	return ret;
}

/* chown and chmod (the VFS checked the rights): what delegating a cgroup to a user does. */
static int cgfs_setattr(struct vfs_node *vn, const struct vfs_setattr *sa)
{
	struct cgfs_node *n = cgn(vn);
	struct cgroup_owner *o = &n->cg->owner[n->file ? 1 + (n->file - cgroup_files) : 0];
	struct vfs_attr cur;

	cgroup_file_owner(n->cg, n->file, &cur);
	pthread_mutex_lock(&cgroup_lock);
	o->mode = (sa->valid & VFS_SETATTR_MODE) ? sa->mode & 07777 : cur.mode & 07777;
	o->uid = (sa->valid & VFS_SETATTR_UID) ? sa->uid : cur.uid;
	o->gid = (sa->valid & VFS_SETATTR_GID) ? sa->gid : cur.gid;
	o->set = true;
	pthread_mutex_unlock(&cgroup_lock);
	return 0; /* sizes and times: nothing to keep */
}

static int cgfs_unlink(struct vfs_node *dir, const char *name, struct vfs_node *child)
{
	return -EPERM;
}

static int cgfs_statfs(struct vfs_node *n, struct linux_statfs *st)
{
	memset(st, 0, sizeof(*st));
	st->f_type = CGROUP2_SUPER_MAGIC;
	st->f_bsize = 4096;
	st->f_frsize = 4096;
	st->f_namelen = 255;
	return 0;
}

static void cgfs_release_node(struct vfs_node *vn)
{
	struct cgfs_node *n = cgn(vn);

	cgroup_put(n->cg);
	free(n);
}

/* --- open files --- */

struct cg_open {
	char *data;
	size_t len;
	bool unreadable; /* a write-only file (cgroup.kill): reads are EINVAL */
};

static ssize_t cgf_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	struct cg_open *b = f->priv;
	size_t done = 0;

	if (*pos < 0 || b->unreadable)
		return -EINVAL;
	for (int i = 0; i < iovcnt && (size_t)*pos < b->len; i++) {
		size_t n = MIN(iov[i].iov_len, b->len - (size_t)*pos);

		memcpy(iov[i].iov_base, b->data + *pos, n);
		*pos += (int64_t)n;
		done += n;
	}
	return (ssize_t)done;
}

static ssize_t cgf_write(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	struct cgfs_node *n = cgn(f->node);
	struct task *t = task_current();
	size_t total = 0, off = 0;
	char *buf;
	int ret;

	if (!cgroup_file_writer(n->cg, n->file) || !t)
		return -EINVAL;
	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (total > 4096)
		return -E2BIG;
	buf = malloc(total + 1);
	if (!buf)
		return -ENOMEM;
	for (int i = 0; i < iovcnt; i++) {
		memcpy(buf + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	buf[total] = '\0';
	ret = n->file->write(node_k(f->node), n->cg, t, buf, total);
	free(buf);
	if (ret < 0)
		return ret;
	if (pos)
		*pos += (int64_t)total;
	return (ssize_t)total;
}

static int64_t cgf_llseek(struct file *f, int64_t off, int whence)
{
	return vfs_generic_llseek(f, off, whence, 0);
}

static void cgf_release(struct file *f)
{
	struct cg_open *b = f->priv;

	free(b->data);
	free(b);
}

static const struct file_ops cgf_fops = {
	.read = cgf_read,
	.write = cgf_write,
	.llseek = cgf_llseek,
	.release = cgf_release,
};

static struct file *cgfs_open(struct vfs_node *vn, int flags)
{
	struct cgfs_node *n = cgn(vn);
	struct cg_open *b;
	struct file *f;
	int err = 0;

	if (!n->file)
		return ERR_PTR(-EISDIR);
	/*
	 * As kernfs's cgroup files: every open works (the permission bits decide); a write of a
	 * file with no write method and a read of one with nothing to read are EINVAL.
	 */
	b = calloc(1, sizeof(*b));
	if (!b)
		return ERR_PTR(-ENOMEM);
	b->unreadable = !n->file->gen;
	if ((flags & O_ACCMODE) != O_WRONLY && n->file->gen) {
		FILE *out = open_memstream(&b->data, &b->len);

		if (!out) {
			free(b);
			return ERR_PTR(-ENOMEM);
		}
		err = n->file->gen(node_k(vn), n->cg, out);
		if (fclose(out) != 0 && err == 0)
			err = -ENOMEM;
		if (err < 0) {
			free(b->data);
			free(b);
			return ERR_PTR(err);
		}
	}
	f = file_alloc(&cgf_fops, flags, b);
	if (!f) {
		free(b->data);
		free(b);
		return ERR_PTR(-ENOMEM);
	}
	return f;
}

static const struct vfs_node_ops cgfs_node_ops = {
	.lookup = cgfs_lookup,
	.getattr = cgfs_getattr,
	.open = cgfs_open,
	.iterate = cgfs_iterate,
	.create = cgfs_mkdir,
	.unlink = cgfs_unlink,
	.rmdir = cgfs_rmdir,
	.setattr = cgfs_setattr,
	.statfs = cgfs_statfs,
	.release = cgfs_release_node,
};

/* --- instances --- */

struct cgroup *cgroup_of_file(struct file *f)
{
	if (!f->node || f->node->ops != &cgfs_node_ops || cgn(f->node)->file)
		return ERR_PTR(-EBADF);
	cgroup_get(cgn(f->node)->cg);
	return cgn(f->node)->cg;
}

struct cgroup *cgroup_clone_into(struct task *t, struct file *f)
{
	struct cgroup *cg;
	int ret;

	if (!f->node || f->node->ops != &cgfs_node_ops || cgn(f->node)->file)
		return ERR_PTR(-EBADF);
	cg = cgn(f->node)->cg;
	ret = cgroup_may_move(t, t->tg, cg);
	pthread_mutex_lock(&cgroup_lock);
	if (ret == 0 && cg->removed)
		ret = -ENOENT;
	else if (ret == 0 && cg->parent && cg->subtree_control)
		ret = -EBUSY; /* no internal processes */
	pthread_mutex_unlock(&cgroup_lock);
	if (ret < 0)
		return ERR_PTR(ret);
	cgroup_get(cg);
	return cg;
}

static bool cgfs_same_node(struct vfs_node *a, struct vfs_node *b)
{
	return cgn(a)->cg == cgn(b)->cg && cgn(a)->file == cgn(b)->file;
}

static void cgfs_release(struct vfs_fs *vfs)
{
	struct cgfs *fs = container_of(vfs, struct cgfs, base);

	vfs_node_put(fs->base.root);
	free(fs);
}

static const struct vfs_fs_ops cgfs_fs_ops = {
	.release = cgfs_release,
	.same_node = cgfs_same_node,
};

/*
 * The one instance (Linux's one v2 superblock: every mount has its st_dev). It keeps a
 * reference of its own, so it lives as long as the sentry, as the hierarchy does.
 */
static struct cgfs *the_fs; /* the_fs_lock */
static pthread_mutex_t the_fs_lock = PTHREAD_MUTEX_INITIALIZER;

struct vfs_fs *cgroupfs_create(struct kernel *k)
{
	struct vfs_node *root;
	struct cgfs *fs;

	pthread_mutex_lock(&the_fs_lock);
	fs = the_fs;
	if (!fs && (fs = calloc(1, sizeof(*fs)))) {
		vfs_fs_init(&fs->base, &cgfs_fs_ops, "cgroup2");
		fs->k = k;
		root = node_new(NULL, &fs->base, "", cgroup_root(), NULL);
		if (IS_ERR(root)) {
			free(fs);
			fs = NULL;
		} else {
			fs->base.root = root;
			the_fs = fs; /* the reference vfs_fs_init gave */
		}
	}
	if (fs)
		vfs_fs_get(&fs->base);
	pthread_mutex_unlock(&the_fs_lock);
	return fs ? &fs->base : NULL;
}
