/* SPDX-License-Identifier: Apache-2.0 */
/*
 * signalfd files: read(2) dequeues signals in the file's mask that are pending for the READING
 * task (its own and its process's, blocked or not), as struct signalfd_siginfo records of 128
 * bytes; poll reports POLLIN when one is pending for the polling task. As in Linux, the file
 * names no process: after fork, a child reads its own signals through an inherited signalfd.
 *
 * Waiters sleep on signal_waitq() of their own process, which the signal code wakes each time a
 * signal is queued.
 */
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "include/abi/linux/signal.h"
#include "sentry/fs/anon/anon.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/waitq.h"
#include "sentry/vfs/fs.h"

#define LINUX_SIGKILL 9
#define LINUX_SIGSTOP 19
#define LINUX_SIGILL 4
#define LINUX_SIGTRAP 5
#define LINUX_SIGBUS 7
#define LINUX_SIGFPE 8
#define LINUX_SIGSEGV 11
#define LINUX_SIGCHLD 17
#define LINUX_SIGPOLL 29
#define LINUX_SIGSYS 31
#define LINUX_SI_KERNEL 0x80
#define LINUX_SI_TIMER (-2)
#define LINUX_SI_SIGIO (-5)

/* struct signalfd_siginfo of <linux/signalfd.h>. */
struct linux_signalfd_siginfo {
	uint32_t ssi_signo;
	int32_t ssi_errno;
	int32_t ssi_code;
	uint32_t ssi_pid;
	uint32_t ssi_uid;
	int32_t ssi_fd;
	uint32_t ssi_tid;
	uint32_t ssi_band;
	uint32_t ssi_overrun;
	uint32_t ssi_trapno;
	int32_t ssi_status;
	int32_t ssi_int;
	uint64_t ssi_ptr;
	uint64_t ssi_utime;
	uint64_t ssi_stime;
	uint64_t ssi_addr;
	uint16_t ssi_addr_lsb;
	uint16_t __pad2;
	int32_t ssi_syscall;
	uint64_t ssi_call_addr;
	uint32_t ssi_arch;
	uint8_t __pad[28];
};
_Static_assert(sizeof(struct linux_signalfd_siginfo) == 128, "signalfd_siginfo is 128 bytes");
_Static_assert(offsetof(struct linux_signalfd_siginfo, ssi_ptr) == 48, "ssi_ptr at 48");
_Static_assert(offsetof(struct linux_signalfd_siginfo, ssi_addr) == 72, "ssi_addr at 72");
_Static_assert(offsetof(struct linux_signalfd_siginfo, ssi_call_addr) == 88, "ssi_call_addr");

struct signalfd {
	struct vfs_node node; /* first */
	uint64_t mask; /* atomic; bit signo - 1; never SIGKILL or SIGSTOP */
};

static const struct file_ops sfd_ops;

static struct signalfd *file_sfd(struct file *f)
{
	return f->priv;
}

bool file_is_signalfd(struct file *f)
{
	return f->ops == &sfd_ops;
}

static uint64_t clean_mask(uint64_t mask)
{
	return mask & ~(SIGBIT(LINUX_SIGKILL) | SIGBIT(LINUX_SIGSTOP));
}

void signalfd_set_mask(struct file *f, uint64_t mask)
{
	__atomic_store_n(&file_sfd(f)->mask, clean_mask(mask), __ATOMIC_RELEASE);
}

static uint64_t sfd_mask(struct signalfd *sfd)
{
	return __atomic_load_n(&sfd->mask, __ATOMIC_ACQUIRE);
}

uint64_t signalfd_mask(struct file *f)
{
	return sfd_mask(file_sfd(f));
}

/* Linux's signalfd_copyinfo: the fields that siginfo_layout() says the siginfo carries. */
static void siginfo_to_ssi(const struct linux_siginfo *si, struct linux_signalfd_siginfo *o)
{
	int sig = si->si_signo, code = si->si_code;

	memset(o, 0, sizeof(*o));
	o->ssi_signo = (uint32_t)sig;
	o->ssi_errno = si->si_errno;
	o->ssi_code = code;
	if (code > 0 && code < LINUX_SI_KERNEL) {
		/* A code of the signal's own (si_code class by signal). */
		switch (sig) {
		case LINUX_SIGILL:
		case LINUX_SIGFPE:
		case LINUX_SIGSEGV:
		case LINUX_SIGBUS:
		case LINUX_SIGTRAP:
			o->ssi_addr = si->fault.addr;
			o->ssi_addr_lsb = (uint16_t)si->fault.addr_lsb;
			return;
		case LINUX_SIGCHLD:
			o->ssi_pid = (uint32_t)si->chld.pid;
			o->ssi_uid = si->chld.uid;
			o->ssi_status = si->chld.status;
			o->ssi_utime = (uint64_t)si->chld.utime;
			o->ssi_stime = (uint64_t)si->chld.stime;
			return;
		case LINUX_SIGPOLL:
			o->ssi_band = (uint32_t)si->poll.band;
			o->ssi_fd = si->poll.fd;
			return;
		case LINUX_SIGSYS:
			o->ssi_call_addr = si->sys.call_addr;
			o->ssi_syscall = si->sys.syscall;
			o->ssi_arch = si->sys.arch;
			return;
		}
	}
	if (code == LINUX_SI_TIMER) {
		o->ssi_tid = (uint32_t)si->timer.tid;
		o->ssi_overrun = (uint32_t)si->timer.overrun;
		o->ssi_ptr = si->timer.value;
		o->ssi_int = (int32_t)si->timer.value;
		return;
	}
	if (code == LINUX_SI_SIGIO) {
		o->ssi_band = (uint32_t)si->poll.band;
		o->ssi_fd = si->poll.fd;
		return;
	}
	o->ssi_pid = (uint32_t)si->kill.pid;
	o->ssi_uid = si->kill.uid;
	if (code < 0) { /* SI_QUEUE, SI_TKILL, SI_MESGQ, ...: with a value */
		o->ssi_ptr = si->kill.value;
		o->ssi_int = (int32_t)si->kill.value;
	}
}

/* Copies len bytes of src to iov at byte offset off. */
static void iov_put(const struct iovec *iov, int iovcnt, size_t off, const void *src, size_t len)
{
	const uint8_t *b = src;

	for (int i = 0; i < iovcnt && len > 0; i++) {
		size_t n;

		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		n = MIN(iov[i].iov_len - off, len);
		memcpy((uint8_t *)iov[i].iov_base + off, b, n);
		b += n;
		len -= n;
		off = 0;
	}
}

struct sfd_wait {
	struct signalfd *sfd;
	struct task *t;
};

static bool sfd_readable(void *arg)
{
	struct sfd_wait *w = arg;

	return (signal_pending_set(w->t) & sfd_mask(w->sfd)) != 0;
}

static ssize_t sfd_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	struct signalfd *sfd = file_sfd(f);
	struct task *t = task_current();
	struct sfd_wait w = { sfd, t };
	size_t len = 0, count, done = 0;
	struct waitq *wq;
	long r;

	(void)pos;
	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	count = len / sizeof(struct linux_signalfd_siginfo);
	if (!count)
		return -EINVAL;
	if (!t)
		return -EAGAIN;
	wq = signal_waitq(t);
	for (;;) {
		while (done < count) {
			struct linux_signalfd_siginfo ssi;
			struct linux_siginfo si;

			if (!signal_dequeue(t, sfd_mask(sfd), &si))
				break;
			siginfo_to_ssi(&si, &ssi);
			iov_put(iov, iovcnt, done * sizeof(ssi), &ssi, sizeof(ssi));
			done++;
		}
		if (done)
			return (ssize_t)(done * sizeof(struct linux_signalfd_siginfo));
		if (__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_NONBLOCK)
			return -EAGAIN;
		r = task_wait(t, &wq, 1, sfd_readable, &w, NULL, true);
		if (r < 0)
			return r;
	}
}

static unsigned int sfd_poll(struct file *f, struct waitq **wq)
{
	struct task *t = task_current();

	if (!t) {
		if (wq)
			*wq = NULL;
		return 0;
	}
	if (wq)
		*wq = signal_waitq(t);
	return (signal_pending_set(t) & sfd_mask(file_sfd(f))) ? POLLIN | POLLRDNORM : 0;
}

static int sfd_getattr(struct vfs_node *n, struct vfs_attr *attr)
{
	*attr = (struct vfs_attr){
		.dev = n->fs->dev,
		.ino = (uint64_t)(uintptr_t)n >> 4,
		.nlink = 1,
		.mode = S_IFREG | 0600,
		.blksize = 4096,
	};
	return 0;
}

static void sfd_node_release(struct vfs_node *n)
{
	free(container_of(n, struct signalfd, node));
}

static const struct vfs_node_ops sfd_node_ops = {
	.getattr = sfd_getattr,
	.release = sfd_node_release,
};

static const struct file_ops sfd_ops = {
	.read = sfd_read,
	.poll = sfd_poll,
};

struct file *signalfd_create_file(uint64_t mask, int flags)
{
	struct signalfd *sfd = calloc(1, sizeof(*sfd));

	if (!sfd)
		return NULL;
	if (vfs_anon_node_init(&sfd->node, &sfd_node_ops, S_IFREG) < 0) {
		free(sfd);
		return NULL;
	}
	sfd->mask = clean_mask(mask);
	return anon_file_create(&sfd->node, &sfd_ops, O_RDWR | (flags & O_NONBLOCK), sfd);
}
