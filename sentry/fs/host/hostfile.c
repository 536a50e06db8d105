/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Files over host FDs the sentry was given by its caller, as stdio or with --preserve-fds
 * (pipes, terminals, sockets, regular files): the sentry reads and writes the host FD for the
 * guest, which never holds it. Pipes, terminals and sockets are stream files (no position)
 * read and written with readv/writev. Regular files share their offset with the caller, as the
 * guest's FD shares the caller's open file description (`{ husk do CMD; echo more; } >out`
 * appends after CMD's output): read, write and lseek use the host FD's own offset (the file is
 * host_offset), pread/pwrite preadv/pwritev. Their node lives in the
 * anonymous filesystem, so fstat and AT_EMPTY_PATH work; a terminal's file has its devpts entry
 * as path instead (/dev/pts/N, devpts_host_hold), and the file holds its host node in priv
 * whatever its path (a filesystem's open gives it the opened node's: hostfile_open).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <termios.h>
#include <unistd.h>

#include "common/util.h"
#include "sentry/fs/devpts/devpts.h"
#include "sentry/fs/host/hostfile.h"
#include "sentry/fs/host/hosttty.h"
#include "include/abi/linux/errno.h"
#include "include/abi/linux/stat.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/hostpoll.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/fs.h"

struct hostfile_node {
	struct vfs_node base;
	int fd; /* owned */
	struct hostpoll_watch *watch; /* readiness of fd, or NULL: always ready */
	int origin; /* the sentry's own fd (0, 1, 2) it was made from, or -1 (checkpoints) */
	bool tty; /* a terminal: its ioctls and job control are hosttty.c's */
	bool pts; /* the terminal holds a devpts entry (devpts_host_hold) */
	dev_t rdev; /* the terminal's device number */
};

static int host_fd(struct file *f)
{
	return ((struct hostfile_node *)f->priv)->fd;
}

static struct hostfile_node *host_node(struct file *f)
{
	return f->priv;
}

static int host_errno(int e)
{
	return e == EINTR ? -ERESTARTSYS : -e;
}

/* For a guest O_NONBLOCK file over a blocking host FD: is it ready for events now? */
static bool host_ready(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };

	return poll(&p, 1, 0) > 0;
}

/*
 * A blocking guest read or write of a host terminal or pipe: wait for readiness as an
 * interruptible task wait, so that the host read() that follows does not block the task's
 * host thread where a signal cannot reach it.
 */
static long host_wait_ready(struct file *f, short events)
{
	struct hostpoll_watch *w = ((struct hostfile_node *)f->priv)->watch;
	struct task *t = task_current();

	if (!w || !t || (__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_NONBLOCK))
		return 0;
	return hostpoll_wait(t, w, (unsigned int)events);
}

static ssize_t host_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	int fd = host_fd(f);
	ssize_t n;
	long r;

	if (host_node(f)->tty &&
	    (r = hosttty_job_control(fd, host_node(f)->rdev, task_current(), true)) < 0)
		return r;
	if (iovcnt && (r = host_wait_ready(f, POLLIN)) < 0)
		return r;

	/* The host FD's own O_NONBLOCK is shared with the caller's terminal: never set it. */
	if ((__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_NONBLOCK) && iovcnt &&
	    !host_ready(fd, POLLIN))
		return -EAGAIN;
	n = readv(fd, iov, iovcnt);
	return n < 0 ? host_errno(errno) : n;
}

static ssize_t host_write(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	int fd = host_fd(f);
	ssize_t n;
	long r;

	if (host_node(f)->tty &&
	    (r = hosttty_job_control(fd, host_node(f)->rdev, task_current(), false)) < 0)
		return r;
	if (iovcnt && (r = host_wait_ready(f, POLLOUT)) < 0)
		return r;

	if ((__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_NONBLOCK) && iovcnt &&
	    !host_ready(fd, POLLOUT))
		return -EAGAIN;
	n = writev(fd, iov, iovcnt);
	return n < 0 ? host_errno(errno) : n;
}

/*
 * Regular files: read(2)/write(2) come with no position (f->host_offset) and use the host FD's
 * shared offset; pread(2)/pwrite(2) come with theirs: positional host I/O.
 */
static ssize_t host_reg_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	ssize_t n;

	if (!pos)
		return host_read(f, iov, iovcnt, NULL);
	n = preadv(host_fd(f), iov, iovcnt, *pos);
	if (n < 0)
		return host_errno(errno);
	*pos += n;
	return n;
}

static ssize_t host_reg_write(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	ssize_t n;

	if (!pos)
		return host_write(f, iov, iovcnt, NULL); /* the caller's O_APPEND applies */
	n = pwritev(host_fd(f), iov, iovcnt, *pos);
	if (n < 0)
		return host_errno(errno);
	*pos += n;
	return n;
}

static int64_t host_reg_llseek(struct file *f, int64_t off, int whence)
{
	off_t r = lseek(host_fd(f), off, whence);

	return r < 0 ? -errno : r;
}

/* Copies n bytes of buf out to the guest at arg. */
static long copy_out_exact(struct task *t, uint64_t arg, const void *buf, size_t n)
{
	ssize_t r = mm_copy_out(t->mm, arg, buf, n);

	return r == (ssize_t)n ? 0 : -EFAULT;
}

static long host_ioctl(struct file *f, struct task *t, unsigned int cmd, uint64_t arg)
{
	struct hostfile_node *hn = host_node(f);
	int val;

	/* Terminals: the allow-list and job control of hosttty.c. */
	if (hn->tty)
		return hosttty_ioctl(hn->fd, hn->rdev, t, cmd, arg);
	switch (cmd) {
	case FIONREAD:
		if (ioctl(hn->fd, FIONREAD, &val) < 0)
			return errno == EINVAL || errno == ENOTTY ? -ENOTTY : -errno;
		return copy_out_exact(t, arg, &val, sizeof(val));
	default:
		return -ENOTTY;
	}
}

/* Readiness from the host FD; watched FDs give their watch's queue, others are always ready. */
static unsigned int host_poll(struct file *f, struct waitq **wq)
{
	struct hostfile_node *hn = f->priv;

	if (wq)
		*wq = hn->watch ? &hn->watch->wq : NULL;
	if (!hn->watch)
		return POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM;
	return hostpoll_ready(hn->fd, POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM | POLLRDHUP);
}

/* The file's own reference on its host node (f->priv), whatever path it has. */
static void host_release(struct file *f)
{
	vfs_node_put(&host_node(f)->base);
}

static const struct file_ops hostfile_ops = {
	.read = host_read,
	.write = host_write,
	.ioctl = host_ioctl,
	.poll = host_poll,
	.release = host_release,
};

static const struct file_ops hostfile_reg_ops = {
	.read = host_reg_read,
	.write = host_reg_write,
	.llseek = host_reg_llseek,
	.ioctl = host_ioctl,
	.poll = host_poll,
	.release = host_release,
	.map_private_by_read = true,
};

static int hostnode_getattr(struct vfs_node *n, struct vfs_attr *attr)
{
	struct hostfile_node *hn = container_of(n, struct hostfile_node, base);
	struct stat st;

	if (fstat(hn->fd, &st) < 0)
		return -errno;
	*attr = (struct vfs_attr){
		.dev = n->fs->dev,
		.ino = st.st_ino,
		.nlink = st.st_nlink,
		.mode = st.st_mode,
		.uid = st.st_uid,
		.gid = st.st_gid,
		.rdev = st.st_rdev,
		.size = st.st_size,
		.blksize = st.st_blksize,
		.blocks = st.st_blocks,
		.atime = st.st_atim,
		.mtime = st.st_mtim,
		.ctime = st.st_ctim,
	};
	return 0;
}

static int hostnode_statfs(struct vfs_node *n, struct linux_statfs *out)
{
	struct hostfile_node *hn = container_of(n, struct hostfile_node, base);
	struct statfs st;

	if (fstatfs(hn->fd, &st) < 0)
		return -errno;
	memset(out, 0, sizeof(*out));
	out->f_type = st.f_type;
	out->f_bsize = st.f_bsize;
	out->f_blocks = st.f_blocks;
	out->f_bfree = st.f_bfree;
	out->f_bavail = st.f_bavail;
	out->f_files = st.f_files;
	out->f_ffree = st.f_ffree;
	out->f_namelen = st.f_namelen;
	out->f_frsize = st.f_frsize;
	return 0;
}

static void hostnode_release(struct vfs_node *n)
{
	struct hostfile_node *hn = container_of(n, struct hostfile_node, base);

	hostpoll_unwatch(hn->watch);
	if (hn->pts)
		devpts_host_release(hn->rdev);
	if (hn->fd >= 0)
		close(hn->fd);
	free(hn);
}

static const struct vfs_node_ops hostnode_ops = {
	.getattr = hostnode_getattr,
	.statfs = hostnode_statfs,
	.release = hostnode_release,
};

/* A host file over hostfd (taken on success), without a path. NULL when out of memory. */
static struct file *host_file_new(int hostfd, int flags)
{
	struct hostfile_node *hn = calloc(1, sizeof(*hn));
	struct stat st;
	struct file *f;

	if (!hn)
		return NULL;
	/* Until it succeeds the caller keeps hostfd: the node must not close it. */
	hn->fd = -1;
	hn->origin = -1;
	if (vfs_anon_node_init(&hn->base, &hostnode_ops,
			       fstat(hostfd, &st) == 0 ? st.st_mode : S_IFCHR) < 0) {
		free(hn);
		return NULL;
	}
	/* As Linux on x86-64, where every open file has O_LARGEFILE (F_GETFL shows it). */
	f = file_alloc(S_ISREG(hn->base.type) ? &hostfile_reg_ops : &hostfile_ops, flags | 0100000,
		       hn);
	if (!f) {
		vfs_node_put(&hn->base);
		return NULL;
	}
	hn->fd = hostfd;
	hn->watch = hostpoll_watch(hostfd);
	if (S_ISCHR(hn->base.type) && fstat(hostfd, &st) == 0) {
		struct termios tm;

		hn->tty = ioctl(hostfd, TCGETS, &tm) == 0;
		hn->rdev = st.st_rdev;
		/* The guest sees a terminal as /dev/pts/N while it has it open. */
		hn->pts = hn->tty && devpts_host_hold(hostfd) >= 0;
	}
	/* The node's first reference moves to the file's priv (host_release puts it). */
	if (S_ISREG(hn->base.type)) {
		off_t pos = lseek(hostfd, 0, SEEK_CUR);

		f->pos = pos > 0 ? pos : 0;
		f->host_offset = true;
	}
	return f;
}

struct file *hostfile_open(int hostfd, int flags)
{
	return host_file_new(hostfd, flags);
}

struct file *hostfile_create(int hostfd, int flags)
{
	struct file *f = host_file_new(hostfd, flags);
	struct hostfile_node *hn;

	if (!f)
		return NULL;
	hn = host_node(f);
	/*
	 * A host terminal that devpts shows (the console, husk do's terminal) is /dev/pts/N to
	 * the guest: /proc/PID/fd/N, fstat and ttyname(3) agree with that entry's stat.
	 */
	if (hn->tty && devpts_host_path(hn->rdev, &f->mnt, &f->node) == 0)
		return f;
	f->node = &hn->base;
	vfs_node_get(f->node);
	f->mnt = vfs_anon_mount();
	vfs_mount_get(f->mnt);
	return f;
}

void hostfile_repath(struct task *t, int n)
{
	struct file *f = fdtable_lookup(t->fdt, n);
	struct hostfile_node *hn;
	struct vfs_attr attr;
	struct vfs_path p;
	char path[32];
	int index;

	if (!f)
		return;
	hn = (f->ops == &hostfile_ops) ? host_node(f) : NULL;
	index = hn && hn->pts ? devpts_host_index(hn->rdev) : -1;
	snprintf(path, sizeof(path), "/dev/pts/%d", index);
	if (index >= 0 && vfs_lookup_at(t, AT_FDCWD, path, 0, &p) == 0) {
		/* Only the same entry: 136:index, on a devpts. */
		if (vfs_path_getattr(&p, &attr) == 0 && S_ISCHR(attr.mode) &&
		    attr.rdev == vfs_mkdev(136, (uint32_t)index) &&
		    !strcmp(p.mnt->fs->type, "devpts")) {
			struct vfs_mount *om = f->mnt;
			struct vfs_node *on = f->node;

			f->mnt = p.mnt;
			f->node = p.node;
			p.mnt = om;
			p.node = on;
		}
		vfs_path_put(&p);
	}
	file_put(f);
}

void hostfile_acquire_ctty(struct task *t, int n)
{
	struct file *f = fdtable_lookup(t->fdt, n);
	struct hostfile_node *hn;

	if (!f)
		return;
	hn = (f->ops == &hostfile_ops) ? host_node(f) : NULL;
	if (hn && hn->tty)
		hosttty_open_acquire(hn->fd, hn->rdev, t);
	file_put(f);
}

int hostfile_install(struct fdtable *fdt, int hostfd, int n)
{
	struct file *f;
	int fl, dupfd, ret;

	fl = fcntl(hostfd, F_GETFL);
	if (fl < 0)
		return -EBADF;
	dupfd = fcntl(hostfd, F_DUPFD_CLOEXEC, 10);
	if (dupfd < 0)
		return -errno;
	f = hostfile_create(dupfd, fl & ~O_CLOEXEC);
	if (!f) {
		close(dupfd);
		return -ENOMEM;
	}
	ret = fdtable_install_at(fdt, f, n, false, 1024);
	file_put(f);
	return ret < 0 ? ret : 0;
}

int hostfile_recv_fds(int sock, int *fds, int max)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * HOSTFILE_MAX_PRESERVE)];
		struct cmsghdr align;
	} cbuf;
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf.buf,
		.msg_controllen = sizeof(cbuf.buf),
	};
	struct cmsghdr *c;
	ssize_t r;
	int n = 0;

	do
		r = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		size_t k;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (n < max && n < HOSTFILE_MAX_PRESERVE)
				fds[n++] = fd;
			else
				close(fd);
		}
	}
	if (r == 0 || (mh.msg_flags & MSG_CTRUNC)) {
		for (int i = 0; i < n; i++)
			close(fds[i]);
		return r == 0 ? -ENODATA : -EMSGSIZE;
	}
	return n;
}

static bool is_hostfile(struct file *f)
{
	return f->ops == &hostfile_ops || f->ops == &hostfile_reg_ops;
}

void hostfile_set_origin(struct file *f, int n)
{
	if (is_hostfile(f))
		((struct hostfile_node *)f->priv)->origin = n;
}

int hostfile_origin(struct file *f)
{
	if (!is_hostfile(f))
		return -EINVAL;
	return ((struct hostfile_node *)f->priv)->origin;
}
