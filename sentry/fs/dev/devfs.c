/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sentry's character devices with Linux's numbers (mem driver, major 1): null 1:3, zero
 * 1:5, full 1:7, random 1:8, urandom 1:9; the terminals tty 5:0 (the caller's controlling
 * terminal), ptmx 5:2 and the slaves 136:N (sentry/fs/devpts). random and urandom read from
 * getrandom(2) in the sentry (no host file is opened). Every open of a device node, on any
 * filesystem, comes here and passes the device rules (linux.resources.devices) first.
 *
 * /dev itself is a tmpfs made as runc makes it (OCI's default devices): the devices above,
 * mode 0666; the symlinks fd -> /proc/self/fd, stdin/stdout/stderr -> /proc/self/fd/0..2 and
 * ptmx -> pts/ptmx; the directories pts (devpts goes there), shm (1777, a tmpfs) and mqueue
 * (1777, the POSIX message queues). Guests may make more in it (mknod under the rules).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/err.h"
#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "include/abi/linux/stat.h"
#include "sentry/fs/dev/dev.h"
#include "sentry/fs/devpts/devpts.h"
#include "sentry/fs/host/hostfile.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/kernel/kernel.h"
#include "sentry/vfs/fs.h"

#define DEVFS_SHM_SIZE (64ULL << 20)
#define DEVFS_SIZE (64ULL << 20) /* runc's size=65536k */

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

static unsigned int open_access(int flags)
{
	switch (flags & O_ACCMODE) {
	case O_WRONLY:
		return DEVFS_ACC_WRITE;
	case O_RDWR:
		return DEVFS_ACC_READ | DEVFS_ACC_WRITE;
	default:
		return DEVFS_ACC_READ;
	}
}

/* The device numbers the sentry has as character devices (devfs_open_chrdev). */
static const struct {
	uint32_t major, minor;
	const struct file_ops *fops;
} chrdevs[] = {
	{ 1, 3, &null_fops },	{ 1, 5, &zero_fops },	{ 1, 7, &full_fops },
	{ 1, 8, &random_fops }, { 1, 9, &random_fops },
};

/* The sentry's duplicate of its stdin when it is the container's console (OCI terminal). */
static int console_fd = -1;

int devfs_set_console(int hostfd)
{
	int fd = fcntl(hostfd, F_DUPFD_CLOEXEC, 10);

	if (fd < 0)
		return -errno;
	if (console_fd >= 0)
		close(console_fd);
	console_fd = fd;
	return 0;
}

/* /dev/console (5:1): the console's host terminal, as the guest's stdio has it. */
static struct file *console_open(int flags)
{
	struct file *f;
	int fd;

	if (console_fd < 0)
		return ERR_PTR(-ENXIO);
	fd = fcntl(console_fd, F_DUPFD_CLOEXEC, 10);
	if (fd < 0)
		return ERR_PTR(-errno);
	/* No path: the VFS gives it /dev/console's. */
	f = hostfile_open(fd, flags & (O_ACCMODE | O_APPEND | O_NONBLOCK));
	if (!f) {
		close(fd);
		return ERR_PTR(-ENOMEM);
	}
	/* A checkpoint records it as the sentry's stdin; a restore wraps the new one's. */
	hostfile_set_origin(f, 0);
	return f;
}

struct file *devfs_open_chrdev(uint32_t major, uint32_t minor, int flags)
{
	int err = devfs_check('c', major, minor, open_access(flags));

	if (err < 0)
		return ERR_PTR(err);
	/* The terminals: /dev/tty (5:0), /dev/ptmx (5:2) and the slaves (136:N) of devpts. */
	if (major == TTYAUX_MAJOR && minor == 0)
		return devpts_open_ctty(flags);
	if (major == TTYAUX_MAJOR && minor == 1)
		return console_open(flags);
	if (major == PTMX_MAJOR && minor == PTMX_MINOR)
		return devpts_open_master(flags);
	if (major >= PTS_MAJOR && major < PTS_MAJOR + 8)
		return devpts_open_slave((major - PTS_MAJOR) * 256 + minor, flags);
	for (size_t i = 0; i < ARRAY_SIZE(chrdevs); i++) {
		if (chrdevs[i].major == major && chrdevs[i].minor == minor) {
			struct file *f = file_alloc(chrdevs[i].fops, flags, NULL);

			return f ? f : ERR_PTR(-ENOMEM);
		}
	}
	return ERR_PTR(-ENXIO);
}

struct file *devfs_open_blkdev(uint32_t major, uint32_t minor, int flags)
{
	int err = devfs_check('b', major, minor, open_access(flags));

	return ERR_PTR(err < 0 ? err : -ENXIO);
}

/* --- /dev: a tmpfs made as runc makes it --- */

static const struct devfs_entry {
	const char *name;
	uint32_t mode; /* S_IFCHR, S_IFLNK or S_IFDIR with the permission bits */
	uint32_t major, minor;
	const char *target; /* symlinks */
} devfs_entries[] = {
	/* clang-format off */
	/* In name order: a listing of /dev shows them so (tmpfs lists in creation order). */
	{ "fd", S_IFLNK | 0777, 0, 0, "/proc/self/fd" },
	{ "full", S_IFCHR | 0666, 1, 7, NULL },
	{ "mqueue", S_IFDIR | 01777, 0, 0, NULL },
	{ "null", S_IFCHR | 0666, 1, 3, NULL },
	{ "ptmx", S_IFLNK | 0777, 0, 0, "pts/ptmx" },
	{ "pts", S_IFDIR | 0755, 0, 0, NULL },
	{ "random", S_IFCHR | 0666, 1, 8, NULL },
	{ "shm", S_IFDIR | 01777, 0, 0, NULL },
	{ "stderr", S_IFLNK | 0777, 0, 0, "/proc/self/fd/2" },
	{ "stdin", S_IFLNK | 0777, 0, 0, "/proc/self/fd/0" },
	{ "stdout", S_IFLNK | 0777, 0, 0, "/proc/self/fd/1" },
	{ "tty", S_IFCHR | 0666, TTYAUX_MAJOR, 0, NULL },
	{ "urandom", S_IFCHR | 0666, 1, 9, NULL },
	{ "zero", S_IFCHR | 0666, 1, 5, NULL },
	/* clang-format on */
};

/* Makes name in dir as a describes, or leaves what is there. Returns 0 or -errno. */
static int dev_make(struct vfs_node *dir, const char *name, const struct vfs_create_args *a)
{
	struct vfs_node *n = dir->ops->lookup ? dir->ops->lookup(dir, name) : ERR_PTR(-ENOENT);
	int err;

	if (!IS_ERR(n)) {
		vfs_node_put(n);
		return -EEXIST;
	}
	err = dir->ops->create(dir, name, a, &n);
	if (err < 0)
		return err;
	vfs_node_put(n);
	return 0;
}

int devfs_add_node(struct vfs_fs *fs, const char *name, uint32_t mode, uint64_t rdev, uint32_t uid,
		   uint32_t gid)
{
	struct vfs_create_args a = { .mode = mode, .uid = uid, .gid = gid, .rdev = rdev };

	return dev_make(fs->root, name, &a);
}

struct vfs_fs *devfs_create(struct kernel *k, uint64_t size, uint32_t mode)
{
	struct vfs_fs *fs = tmpfs_create(&k->mf, size, mode & 07777, 0, 0);

	if (!fs)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(devfs_entries); i++) {
		const struct devfs_entry *e = &devfs_entries[i];
		struct vfs_create_args a = {
			.mode = e->mode,
			.rdev = S_ISCHR(e->mode) ? vfs_mkdev(e->major, e->minor) : 0,
			.target = e->target,
		};
		int err = dev_make(fs->root, e->name, &a);

		if (err < 0) {
			vfs_fs_put(fs);
			return NULL;
		}
	}
	return fs;
}

int vfs_mount_dev(struct kernel *k)
{
	struct vfs_path root;
	struct vfs_path dev;
	struct vfs_fs *fs;
	int err;

	vfs_kernel_root(k, &root);
	if (!root.mnt || !root.node)
		return -EINVAL;
	err = vfs_lookup_one(&root, "dev", &dev);
	if (err == -ENOENT || err == -ENOTDIR)
		return 0;
	if (err < 0)
		return err;
	err = vfs_node_is_dir(dev.node) ? 0 : -ENOTDIR;
	vfs_path_put(&dev);
	if (err < 0)
		return 0;
	fs = devfs_create(k, DEVFS_SIZE, 0755);
	if (!fs)
		return -ENOMEM;
	err = vfs_mount_at(k, "/dev", fs, MS_NOSUID | MS_NOEXEC);
	vfs_fs_put(fs); /* the mount holds it now */
	if (err < 0)
		return err;
	/* /dev/shm: a tmpfs of Docker's default size, for POSIX shared memory and semaphores. */
	err = vfs_mount_tmpfs(k, "/dev/shm", DEVFS_SHM_SIZE);
	if (err < 0)
		return err;
	/* /dev/pts: the pseudo-terminals. */
	return vfs_mount_devpts(k);
}
