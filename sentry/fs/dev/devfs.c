/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The minimal /dev: an in-memory directory of five character devices with Linux's numbers
 * (mem driver, major 1): null 1:3, zero 1:5, full 1:7, random 1:8, urandom 1:9, mode 0666.
 * random and urandom read from getrandom(2) in the sentry (no host file is opened).
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "common/err.h"
#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "include/abi/linux/stat.h"
#include "sentry/fs/dev/dev.h"
#include "sentry/kernel/kernel.h"
#include "sentry/vfs/fs.h"

#define DEVFS_MAGIC 0x01021994 /* TMPFS_MAGIC: what /dev reports on Linux (devtmpfs) */

static size_t iov_total(const struct iovec *iov, int iovcnt)
{
	size_t n = 0;

	for (int i = 0; i < iovcnt; i++)
		n += iov[i].iov_len;
	return n;
}

static ssize_t null_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	return 0;
}

static ssize_t null_write(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	return (ssize_t)iov_total(iov, iovcnt);
}

static ssize_t zero_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	for (int i = 0; i < iovcnt; i++)
		memset(iov[i].iov_base, 0, iov[i].iov_len);
	return (ssize_t)iov_total(iov, iovcnt);
}

static ssize_t full_write(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	return iov_total(iov, iovcnt) ? -ENOSPC : 0;
}

static ssize_t random_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	size_t done = 0;

	for (int i = 0; i < iovcnt; i++) {
		size_t off = 0;

		while (off < iov[i].iov_len) {
			ssize_t n =
				getrandom((char *)iov[i].iov_base + off, iov[i].iov_len - off, 0);

			if (n < 0) {
				if (done)
					return (ssize_t)done;
				return errno == EINTR ? -ERESTARTSYS : -errno;
			}
			off += (size_t)n;
			done += (size_t)n;
		}
	}
	return (ssize_t)done;
}

/* Linux's null_lseek (null, zero, full) and noop_llseek (random): the position stays 0. */
static int64_t dev_llseek(struct file *f, int64_t off, int whence)
{
	return 0;
}

static const struct file_ops null_fops = {
	.read = null_read,
	.write = null_write,
	.llseek = dev_llseek,
};

static const struct file_ops zero_fops = {
	.read = zero_read,
	.write = null_write,
	.llseek = dev_llseek,
};

static const struct file_ops full_fops = {
	.read = zero_read,
	.write = full_write,
	.llseek = dev_llseek,
};

static const struct file_ops random_fops = {
	.read = random_read,
	.write = null_write, /* accepted and dropped: the sentry's pool is the host's */
	.llseek = dev_llseek,
};

static const struct devfs_entry {
	const char *name;
	uint32_t major, minor;
	const struct file_ops *fops;
} devfs_entries[] = {
	/* clang-format off */
	{ "full", 1, 7, &full_fops },
	{ "null", 1, 3, &null_fops },
	{ "random", 1, 8, &random_fops },
	{ "urandom", 1, 9, &random_fops },
	{ "zero", 1, 5, &zero_fops },
	/* clang-format on */
};

#define DEVFS_NENTRIES ARRAY_SIZE(devfs_entries)

struct file *devfs_open_chrdev(uint32_t major, uint32_t minor, int flags)
{
	for (size_t i = 0; i < DEVFS_NENTRIES; i++) {
		const struct devfs_entry *e = &devfs_entries[i];

		if (e->major == major && e->minor == minor) {
			struct file *f = file_alloc(e->fops, flags, NULL);

			return f ? f : ERR_PTR(-ENOMEM);
		}
	}
	return ERR_PTR(-ENXIO);
}

/* --- the filesystem --- */

struct devfs_node {
	struct vfs_node base;
	uint64_t ino;
	const struct devfs_entry *entry; /* NULL for the root directory */
};

struct devfs {
	struct vfs_fs base;
	struct timespec ctime;
	struct devfs_node *children[DEVFS_NENTRIES]; /* referenced */
};

static struct devfs *devfs_of(struct vfs_node *n)
{
	return container_of(n->fs, struct devfs, base);
}

static struct devfs_node *devfs_node_of(struct vfs_node *n)
{
	return container_of(n, struct devfs_node, base);
}

static struct vfs_node *devfs_lookup(struct vfs_node *dir, const char *name)
{
	struct devfs *fs = devfs_of(dir);

	for (size_t i = 0; i < DEVFS_NENTRIES; i++) {
		if (strcmp(devfs_entries[i].name, name) == 0) {
			vfs_node_get(&fs->children[i]->base);
			return &fs->children[i]->base;
		}
	}
	return ERR_PTR(-ENOENT);
}

static int devfs_getattr(struct vfs_node *n, struct vfs_attr *attr)
{
	struct devfs_node *dn = devfs_node_of(n);
	struct devfs *fs = devfs_of(n);

	*attr = (struct vfs_attr){
		.dev = fs->base.dev,
		.ino = dn->ino,
		.nlink = dn->entry ? 1 : 2,
		.mode = dn->entry ? (S_IFCHR | 0666) : (S_IFDIR | 0755),
		.rdev = dn->entry ? vfs_mkdev(dn->entry->major, dn->entry->minor) : 0,
		.blksize = 4096,
		.atime = fs->ctime,
		.mtime = fs->ctime,
		.ctime = fs->ctime,
	};
	return 0;
}

static struct file *devfs_open(struct vfs_node *n, int flags)
{
	const struct devfs_entry *e = devfs_node_of(n)->entry;

	if (!e)
		return ERR_PTR(-EISDIR);
	return devfs_open_chrdev(e->major, e->minor, flags);
}

static int devfs_iterate(struct vfs_node *dir, int64_t *pos, struct dir_emitter *e)
{
	struct devfs *fs = devfs_of(dir);

	/* Positions: 0 ".", 1 "..", 2 + i the i-th device. */
	for (; *pos >= 0 && *pos < (int64_t)DEVFS_NENTRIES + 2; (*pos)++) {
		int64_t i = *pos;
		bool ok;

		if (i == 0)
			ok = e->emit(e, ".", 1, devfs_node_of(dir)->ino, DT_DIR, i + 1);
		else if (i == 1)
			ok = e->emit(e, "..", 2, devfs_node_of(dir)->ino, DT_DIR, i + 1);
		else
			ok = e->emit(e, devfs_entries[i - 2].name,
				     strlen(devfs_entries[i - 2].name), fs->children[i - 2]->ino,
				     DT_CHR, i + 1);
		if (!ok)
			break;
	}
	return 0;
}

static int devfs_statfs(struct vfs_node *n, struct linux_statfs *st)
{
	memset(st, 0, sizeof(*st));
	st->f_type = DEVFS_MAGIC;
	st->f_bsize = 4096;
	st->f_frsize = 4096;
	st->f_namelen = VFS_NAME_MAX;
	st->f_files = DEVFS_NENTRIES + 1;
	return 0;
}

static void devfs_release_node(struct vfs_node *n)
{
	free(devfs_node_of(n));
}

static void devfs_release(struct vfs_fs *vfs)
{
	struct devfs *fs = container_of(vfs, struct devfs, base);

	for (size_t i = 0; i < DEVFS_NENTRIES; i++)
		vfs_node_put(&fs->children[i]->base);
	vfs_node_put(fs->base.root);
	free(fs);
}

static const struct vfs_node_ops devfs_node_ops = {
	.lookup = devfs_lookup,
	.getattr = devfs_getattr,
	.open = devfs_open,
	.iterate = devfs_iterate,
	.statfs = devfs_statfs,
	.release = devfs_release_node,
};

static const struct vfs_fs_ops devfs_fs_ops = {
	.release = devfs_release,
};

static struct devfs_node *devfs_node_new(struct devfs *fs, struct vfs_node *parent,
					 const struct devfs_entry *e, uint64_t ino)
{
	struct devfs_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	if (vfs_node_init(&n->base, &devfs_node_ops, &fs->base, parent, e ? e->name : "",
			  e ? S_IFCHR : S_IFDIR) < 0) {
		free(n);
		return NULL;
	}
	n->ino = ino;
	n->entry = e;
	return n;
}

struct vfs_fs *devfs_create(void)
{
	struct devfs *fs = calloc(1, sizeof(*fs));
	struct devfs_node *root;

	if (!fs)
		return NULL;
	vfs_fs_init(&fs->base, &devfs_fs_ops, "devfs");
	clock_gettime(CLOCK_REALTIME, &fs->ctime);
	root = devfs_node_new(fs, NULL, NULL, 1);
	if (!root) {
		free(fs);
		return NULL;
	}
	fs->base.root = &root->base;
	for (size_t i = 0; i < DEVFS_NENTRIES; i++) {
		fs->children[i] = devfs_node_new(fs, &root->base, &devfs_entries[i], i + 2);
		if (!fs->children[i]) {
			/* devfs_release puts what exists; the rest are NULL. */
			for (size_t j = 0; j < i; j++)
				vfs_node_put(&fs->children[j]->base);
			vfs_node_put(&root->base);
			free(fs);
			return NULL;
		}
	}
	return &fs->base;
}

int vfs_mount_dev(struct kernel *k)
{
	struct vfs_path root = { .mnt = k->root_mnt, .node = k->root_node };
	struct vfs_mount *m;
	struct vfs_path dev;
	struct vfs_fs *fs;
	int err;

	if (!root.mnt || !root.node)
		return -EINVAL;
	err = vfs_lookup_one(&root, "dev", &dev);
	if (err == -ENOENT || err == -ENOTDIR)
		return 0;
	if (err < 0)
		return err;
	if (!vfs_node_is_dir(dev.node)) {
		vfs_path_put(&dev);
		return 0;
	}
	fs = devfs_create();
	if (!fs) {
		vfs_path_put(&dev);
		return -ENOMEM;
	}
	m = vfs_mount_create(fs, fs->root, MS_NOSUID | MS_NOEXEC);
	vfs_fs_put(fs); /* the mount holds it now */
	if (!m) {
		vfs_path_put(&dev);
		return -ENOMEM;
	}
	err = vfs_mount_attach(m, &dev);
	vfs_mount_put(m); /* the tree holds it now, when attached */
	vfs_path_put(&dev);
	return err;
}
