/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "common/err.h"
#include "common/util.h"
#include "include/abi/linux/stat.h"
#include "tests/unit/vfs/testfs.h"

int testfs_nodes_released;
int testfs_files_released;
int testfs_fs_released;

static struct testfs_node *tn(struct vfs_node *n)
{
	return container_of(n, struct testfs_node, base);
}

static struct vfs_node *t_lookup(struct vfs_node *dir, const char *name)
{
	struct testfs_node *d = tn(dir);

	for (int i = 0; i < d->nchildren; i++) {
		if (strcmp(d->children[i]->base.name, name) == 0) {
			vfs_node_get(&d->children[i]->base);
			return &d->children[i]->base;
		}
	}
	return ERR_PTR(-ENOENT);
}

static int t_getattr(struct vfs_node *n, struct vfs_attr *attr)
{
	struct testfs_node *t = tn(n);

	*attr = (struct vfs_attr){
		.dev = n->fs->dev,
		.ino = t->ino,
		.nlink = 1,
		.mode = t->mode,
		.uid = t->uid,
		.gid = t->gid,
		.size = t->data ? (int64_t)strlen(t->data) : 0,
		.blksize = 4096,
	};
	return 0;
}

static ssize_t t_readlink(struct vfs_node *n, char *buf, size_t len)
{
	size_t l = strlen(tn(n)->data);

	memcpy(buf, tn(n)->data, MIN(l, len));
	return (ssize_t)l;
}

static ssize_t t_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	const char *data = tn(f->node)->data;
	int64_t size = (int64_t)strlen(data), p = *pos;
	ssize_t done = 0;

	for (int i = 0; i < iovcnt && p < size; i++) {
		size_t n = MIN(iov[i].iov_len, (size_t)(size - p));

		memcpy(iov[i].iov_base, data + p, n);
		p += (int64_t)n;
		done += (ssize_t)n;
	}
	*pos = p;
	return done;
}

static int64_t t_llseek(struct file *f, int64_t off, int whence)
{
	return vfs_generic_llseek(f, off, whence, (int64_t)strlen(tn(f->node)->data));
}

static void t_release_file(struct file *f)
{
	testfs_files_released++;
}

static const struct file_ops t_file_ops = {
	.read = t_read,
	.llseek = t_llseek,
	.release = t_release_file,
};

static struct file *t_open(struct vfs_node *n, int flags)
{
	struct file *f = file_alloc(&t_file_ops, flags, NULL);

	return f ? f : ERR_PTR(-ENOMEM);
}

static int t_iterate(struct vfs_node *dir, int64_t *pos, struct dir_emitter *e)
{
	struct testfs_node *d = tn(dir);

	for (; *pos >= 0 && *pos < d->nchildren + 2; (*pos)++) {
		int64_t i = *pos;
		bool ok;

		if (i == 0)
			ok = e->emit(e, ".", 1, d->ino, DT_DIR, 1);
		else if (i == 1)
			ok = e->emit(e, "..", 2, d->ino, DT_DIR, 2);
		else
			ok = e->emit(e, d->children[i - 2]->base.name,
				     strlen(d->children[i - 2]->base.name), d->children[i - 2]->ino,
				     IFTODT(d->children[i - 2]->mode), i + 1);
		if (!ok)
			break;
	}
	return 0;
}

static int t_statfs(struct vfs_node *n, struct linux_statfs *st)
{
	st->f_type = 0x7e57;
	st->f_bsize = 4096;
	st->f_namelen = 255;
	return 0;
}

static void t_release(struct vfs_node *n)
{
	struct testfs_node *t = tn(n);

	testfs_nodes_released++;
	free(t->children);
	free(t);
}

static const struct vfs_node_ops t_ops = {
	.lookup = t_lookup,
	.getattr = t_getattr,
	.readlink = t_readlink,
	.open = t_open,
	.iterate = t_iterate,
	.statfs = t_statfs,
	.release = t_release,
};

static void drop_children(struct testfs_node *d)
{
	for (int i = 0; i < d->nchildren; i++) {
		drop_children(d->children[i]);
		vfs_node_put(&d->children[i]->base);
	}
	d->nchildren = 0;
}

static void t_fs_release(struct vfs_fs *vfs)
{
	struct testfs *fs = container_of(vfs, struct testfs, base);

	testfs_fs_released++;
	drop_children(tn(fs->base.root));
	vfs_node_put(fs->base.root);
	free(fs);
}

static const struct vfs_fs_ops t_fs_ops = {
	.release = t_fs_release,
};

static struct testfs_node *node_new(struct testfs *fs, struct testfs_node *parent, const char *name,
				    uint32_t mode, uint32_t uid, uint32_t gid, const char *data)
{
	struct testfs_node *n = calloc(1, sizeof(*n));

	if (!n || vfs_node_init(&n->base, &t_ops, &fs->base, parent ? &parent->base : NULL, name,
				mode) < 0)
		abort();
	n->mode = mode;
	n->uid = uid;
	n->gid = gid;
	n->ino = ++fs->next_ino;
	n->data = data;
	if (parent) {
		parent->children =
			realloc(parent->children, (size_t)(parent->nchildren + 1) * sizeof(n));
		if (!parent->children)
			abort();
		parent->children[parent->nchildren++] = n; /* our creation reference */
	}
	return n;
}

struct testfs *testfs_create(void)
{
	struct testfs *fs = calloc(1, sizeof(*fs));

	if (!fs)
		abort();
	vfs_fs_init(&fs->base, &t_fs_ops, "testfs");
	fs->base.root = &node_new(fs, NULL, "", S_IFDIR | 0755, 0, 0, NULL)->base;
	return fs;
}

struct testfs_node *testfs_root(struct testfs *fs)
{
	return tn(fs->base.root);
}

static struct testfs *fs_of(struct testfs_node *n)
{
	return container_of(n->base.fs, struct testfs, base);
}

struct testfs_node *testfs_mkdir(struct testfs_node *dir, const char *name, uint32_t perm,
				 uint32_t uid, uint32_t gid)
{
	return node_new(fs_of(dir), dir, name, S_IFDIR | perm, uid, gid, NULL);
}

struct testfs_node *testfs_mkfile(struct testfs_node *dir, const char *name, uint32_t perm,
				  const char *data)
{
	return node_new(fs_of(dir), dir, name, S_IFREG | perm, 0, 0, data);
}

struct testfs_node *testfs_symlink(struct testfs_node *dir, const char *name, const char *target)
{
	return node_new(fs_of(dir), dir, name, S_IFLNK | 0777, 0, 0, target);
}

void harness_init(struct harness *h, struct testfs *fs, int mount_flags)
{
	memset(h, 0, sizeof(*h));
	h->k.root_mnt = vfs_mount_create(&fs->base, fs->base.root, mount_flags);
	vfs_fs_put(&fs->base); /* the mount holds it */
	h->k.root_node = fs->base.root;
	vfs_node_get(h->k.root_node);
	harness_init_task(h);
}

void harness_init_task(struct harness *h)
{
	pthread_mutex_init(&h->tg.lock, NULL);
	refcount_init(&h->tg.ref, 1);
	h->tg.pid = h->tg.pgid = h->tg.sid = 1;
	for (int i = 0; i < LINUX_RLIM_NLIMITS; i++)
		h->tg.rlimits[i].rlim_cur = h->tg.rlimits[i].rlim_max = RLIM_INFINITY;
	h->tg.rlimits[RLIMIT_NOFILE].rlim_cur = 1024;
	h->t.k = &h->k;
	h->t.tid = 1;
	h->t.tg = &h->tg;
	h->t.cred.cap_effective = h->t.cred.cap_permitted = ~0ULL; /* root's */
	h->t.fdt = fdtable_create();
	h->t.fs = fs_context_create(&h->k);
	if (!h->t.fdt || !h->t.fs)
		abort();
}

void harness_set_cred(struct harness *h, uint32_t uid, uint32_t gid)
{
	struct cred *c = &h->t.cred;

	memset(c, 0, sizeof(*c));
	c->uid = c->euid = c->suid = c->fsuid = uid;
	c->gid = c->egid = c->sgid = c->fsgid = gid;
	/* Root has every capability, others none (permission checks follow capabilities). */
	if (uid == 0)
		c->cap_effective = c->cap_permitted = ~0ULL;
}

void harness_fini(struct harness *h)
{
	fdtable_put(h->t.fdt);
	fs_context_put(h->t.fs);
	vfs_node_put(h->k.root_node);
	vfs_mount_put(h->k.root_mnt);
}
