/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /dev: an in-memory directory of character devices with Linux's numbers (mem driver, major
 * 1): null 1:3, zero 1:5, full 1:7, random 1:8, urandom 1:9; the terminals tty 5:0 (the
 * caller's controlling terminal) and ptmx 5:2 (sentry/fs/devpts), all mode 0666; the symlinks
 * fd -> /proc/self/fd and stdin/stdout/stderr -> /proc/self/fd/0..2; the directories shm
 * (1777), on which vfs_mount_dev mounts a 64 MiB tmpfs, and pts, on which it mounts devpts.
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
#include "sentry/fs/devpts/devpts.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/kernel/kernel.h"
#include "sentry/vfs/fs.h"

#define DEVFS_MAGIC 0x01021994 /* TMPFS_MAGIC: what /dev reports on Linux (devtmpfs) */
#define DEVFS_SHM_SIZE (64ULL << 20)

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
	.map_private_by_read = true,
};

bool devfs_file_is_zero(const struct file *f)
{
	return f->ops == &zero_fops;
}

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

/* Character devices whose files come from elsewhere (devpts) have no fops: DEVFS_CHR_EXT. */
static const struct file_ops ext_fops;
#define DEVFS_CHR_EXT (&ext_fops)

static const struct devfs_entry {
	const char *name;
	uint32_t major, minor;
	const struct file_ops *fops; /* NULL: a directory, or a symlink when target is set */
	const char *target;
} devfs_entries[] = {
	/* clang-format off */
	{ "fd", 0, 0, NULL, "/proc/self/fd" },
	{ "full", 1, 7, &full_fops, NULL },
	{ "null", 1, 3, &null_fops, NULL },
	{ "ptmx", PTMX_MAJOR, PTMX_MINOR, DEVFS_CHR_EXT, NULL },
	{ "pts", 0, 0, NULL, NULL }, /* a directory: devpts is mounted on it */
	{ "random", 1, 8, &random_fops, NULL },
	{ "shm", 0, 0, NULL, NULL }, /* a directory: a tmpfs is mounted on it */
	{ "stderr", 0, 0, NULL, "/proc/self/fd/2" },
	{ "stdin", 0, 0, NULL, "/proc/self/fd/0" },
	{ "stdout", 0, 0, NULL, "/proc/self/fd/1" },
	{ "tty", TTYAUX_MAJOR, 0, DEVFS_CHR_EXT, NULL },
	{ "urandom", 1, 9, &random_fops, NULL },
	{ "zero", 1, 5, &zero_fops, NULL },
	/* clang-format on */
};

#define DEVFS_NENTRIES ARRAY_SIZE(devfs_entries)

static bool devfs_is_chr(const struct devfs_entry *e)
{
	return e && e->fops;
}

static bool devfs_is_link(const struct devfs_entry *e)
{
	return e && e->target;
}

struct file *devfs_open_chrdev(uint32_t major, uint32_t minor, int flags)
{
	/* The terminals: /dev/tty (5:0), /dev/ptmx (5:2) and the slaves (136:N) of devpts. */
	if (major == TTYAUX_MAJOR && minor == 0)
		return devpts_open_ctty(flags);
	if (major == PTMX_MAJOR && minor == PTMX_MINOR)
		return devpts_open_master(flags);
	if (major >= PTS_MAJOR && major < PTS_MAJOR + 8)
		return devpts_open_slave((major - PTS_MAJOR) * 256 + minor, flags);
	for (size_t i = 0; i < DEVFS_NENTRIES; i++) {
		const struct devfs_entry *e = &devfs_entries[i];

		if (e->fops && e->fops != DEVFS_CHR_EXT && e->major == major && e->minor == minor) {
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

	if (devfs_node_of(dir)->entry)
		return ERR_PTR(-ENOENT); /* shm and pts are empty below their mounts */
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
	bool dev = devfs_is_chr(dn->entry), link = devfs_is_link(dn->entry);
	uint32_t mode = S_IFDIR | 0755;

	if (dev)
		mode = S_IFCHR | 0666;
	else if (link)
		mode = S_IFLNK | 0777;
	else if (dn->entry && !strcmp(dn->entry->name, "shm"))
		mode = S_IFDIR | 01777;
	*attr = (struct vfs_attr){
		.dev = fs->base.dev,
		.ino = dn->ino,
		.nlink = dev || link ? 1 : 2,
		.mode = mode,
		.rdev = dev ? vfs_mkdev(dn->entry->major, dn->entry->minor) : 0,
		.size = link ? (int64_t)strlen(dn->entry->target) : 0,
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

	if (!e || !e->fops)
		return ERR_PTR(-EISDIR);
	return devfs_open_chrdev(e->major, e->minor, flags);
}

static ssize_t devfs_readlink(struct vfs_node *n, char *buf, size_t len)
{
	const struct devfs_entry *e = devfs_node_of(n)->entry;
	size_t l;

	if (!devfs_is_link(e))
		return -EINVAL;
	l = strlen(e->target);
	memcpy(buf, e->target, MIN(l, len));
	return (ssize_t)l;
}

static int devfs_iterate(struct vfs_node *dir, int64_t *pos, struct dir_emitter *e)
{
	struct devfs *fs = devfs_of(dir);
	/* The shm and pts directories are empty below their mounts. */
	int64_t end = devfs_node_of(dir)->entry ? 2 : (int64_t)DEVFS_NENTRIES + 2;

	/* Positions: 0 ".", 1 "..", 2 + i the i-th device. */
	for (; *pos >= 0 && *pos < end; (*pos)++) {
		int64_t i = *pos;
		bool ok;

		if (i == 0)
			ok = e->emit(e, ".", 1, devfs_node_of(dir)->ino, DT_DIR, i + 1);
		else if (i == 1)
			ok = e->emit(e, "..", 2, devfs_node_of(dir)->ino, DT_DIR, i + 1);
		else
			ok = e->emit(e, devfs_entries[i - 2].name,
				     strlen(devfs_entries[i - 2].name), fs->children[i - 2]->ino,
				     devfs_is_chr(&devfs_entries[i - 2])  ? DT_CHR :
				     devfs_is_link(&devfs_entries[i - 2]) ? DT_LNK :
									    DT_DIR,
				     i + 1);
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
	.readlink = devfs_readlink,
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
			  devfs_is_chr(e)  ? S_IFCHR :
			  devfs_is_link(e) ? S_IFLNK :
					     S_IFDIR) < 0) {
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
	if (err < 0)
		return err;
	/* /dev/shm: a tmpfs of Docker's default size, for POSIX shared memory and semaphores. */
	err = vfs_mount_tmpfs(k, "/dev/shm", DEVFS_SHM_SIZE);
	if (err < 0)
		return err;
	/* /dev/pts: the pseudo-terminals. */
	return vfs_mount_devpts(k);
}
