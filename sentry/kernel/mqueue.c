/* SPDX-License-Identifier: Apache-2.0 */
/*
 * POSIX message queues: see mqueue.h.
 *
 * Model: struct mqueue is a vfs_node of the anonymous filesystem (so that fstat and /proc/PID/fd
 * work) with one reference per open file and one for its name while it is linked in the
 * namespace. Messages are kept in one list sorted by priority (highest first, FIFO within a
 * priority). Senders and receivers that must wait sleep on q->wq and retry when woken.
 *
 * Locks: mq_ns_lock (the namespace list and every queue's linked flag), then q->lock (messages,
 * attributes, notification). A notification signal is sent after q->lock is dropped.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "common/err.h"
#include "common/cleanup.h"
#include "common/list.h"
#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "include/abi/linux/signal.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/mqueue.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/sysctl.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/waitq.h"
#include "sentry/mm/mm.h"
#include "sentry/net/net.h"
#include "sentry/time/vtime.h"
#include "sentry/vfs/fs.h"
#include "sentry/vfs/vfs.h"

#define MQ_PRIO_MAX 32768
#define HARD_MSGMAX 65536
#define HARD_MSGSIZEMAX (16 * 1024 * 1024)
/* Linux's per-message overhead in RLIMIT_MSGQUEUE accounting (msg_msg and a tree node). */
#define MQ_MSG_OVERHEAD 96
#define CAP_DAC_OVERRIDE 1
#define CAP_FOWNER 3
#define CAP_SYS_RESOURCE 24
#define LINUX_SIGEV_SIGNAL 0
#define LINUX_SIGEV_NONE 1
#define LINUX_SIGEV_THREAD 2

struct mq_msg {
	struct list_head link;
	uint32_t prio;
	size_t len;
	uint8_t data[];
};

struct mqueue {
	struct vfs_node node; /* first */
	struct list_head ns_link; /* in mq_all (mq_ns_lock) */
	char name[MQ_NAME_MAX + 1];
	bool linked; /* mq_ns_lock: the name is in the namespace */
	uint32_t uid, gid, mode; /* owner and permission bits (fixed at creation) */
	uint64_t bytes; /* RLIMIT_MSGQUEUE charge of its owner */
	struct timespec ctime;

	pthread_mutex_t lock;
	struct waitq wq; /* woken when a message is queued or taken */
	struct list_head msgs; /* lock: of struct mq_msg, by priority */
	int64_t maxmsg, msgsize, curmsgs; /* lock */
	int receivers; /* lock: tasks waiting in receive */
	struct thread_group *notify_owner; /* lock: referenced, or NULL */
	struct linux_sigevent notify; /* lock */
	/* SIGEV_THREAD (lock): the netlink socket (referenced) the cookie goes to. */
	struct file *notify_sock;
	uint8_t notify_cookie[MQ_COOKIE_LEN];
};

/* A registration taken off a queue, to end outside its lock. */
struct mq_notify_end {
	struct thread_group *owner;
	struct file *sock;
	uint8_t cookie[MQ_COOKIE_LEN];
};

static pthread_mutex_t mq_ns_lock = PTHREAD_MUTEX_INITIALIZER;
static struct list_head mq_all = LIST_HEAD_INIT(mq_all); /* every live queue */
static int mq_nr_linked; /* mq_ns_lock */

static struct mqueue *node_mq(struct vfs_node *n)
{
	return container_of(n, struct mqueue, node);
}

static const struct file_ops mq_fops;

/* The queue open at fd (a new file reference in *fp), or -EBADF. */
static struct mqueue *fd_mq(struct task *t, int fd, struct file **fp)
{
	struct file *f = fdtable_lookup(t->fdt, fd);

	if (!f)
		return ERR_PTR(-EBADF);
	if (f->ops != &mq_fops) {
		file_put(f);
		return ERR_PTR(-EBADF);
	}
	*fp = f;
	return f->priv;
}

static bool in_groups(const struct cred *c, uint32_t gid)
{
	if (c->egid == gid)
		return true;
	for (int i = 0; i < c->ngroups; i++)
		if (c->groups[i] == gid)
			return true;
	return false;
}

/* generic_permission for mask (4 read, 2 write) on q. */
static int mq_permission(struct task *t, struct mqueue *q, uint32_t mask)
{
	const struct cred *c = &t->cred;
	uint32_t m = q->mode;

	if (c->fsuid == q->uid)
		m >>= 6;
	else if (in_groups(c, q->gid))
		m >>= 3;
	if ((m & mask) == mask)
		return 0;
	return cred_capable(c, CAP_DAC_OVERRIDE) ? 0 : -EACCES;
}

/* mq_ns_lock held. */
static struct mqueue *ns_lookup(const char *name)
{
	struct mqueue *q;

	list_for_each_entry(q, &mq_all, ns_link) {
		if (q->linked && strcmp(q->name, name) == 0)
			return q;
	}
	return NULL;
}

/* mq_ns_lock held: bytes charged to uid's queues. */
static uint64_t ns_user_bytes(uint32_t uid)
{
	struct mqueue *q;
	uint64_t sum = 0;

	list_for_each_entry(q, &mq_all, ns_link) {
		if (q->uid == uid)
			sum += q->bytes;
	}
	return sum;
}

/* Takes the notification registration off q (q->lock held) into *end, for notify_end. */
static void notify_clear(struct mqueue *q, struct mq_notify_end *end)
{
	end->owner = q->notify_owner;
	end->sock = q->notify_sock;
	memcpy(end->cookie, q->notify_cookie, sizeof(end->cookie));
	q->notify_owner = NULL;
	q->notify_sock = NULL;
}

/*
 * Ends a registration taken off its queue (no lock held): a SIGEV_THREAD one sends its cookie
 * marked how (NOTIFY_WOKENUP when a message came, NOTIFY_REMOVED otherwise) to its socket.
 */
static void notify_end(struct mq_notify_end *end, uint8_t how)
{
	if (end->sock) {
		end->cookie[MQ_COOKIE_LEN - 1] = how;
		netlink_file_deliver(end->sock, end->cookie, MQ_COOKIE_LEN);
		file_put(end->sock);
	}
	if (end->owner)
		tg_put(end->owner);
	end->owner = NULL;
	end->sock = NULL;
}

static void mq_node_release(struct vfs_node *n)
{
	struct mqueue *q = node_mq(n);
	struct mq_msg *m, *tmp;

	pthread_mutex_lock(&mq_ns_lock);
	list_del(&q->ns_link);
	pthread_mutex_unlock(&mq_ns_lock);
	list_for_each_entry_safe(m, tmp, &q->msgs, link) {
		list_del(&m->link);
		free(m);
	}
	if (q->notify_owner)
		tg_put(q->notify_owner);
	if (q->notify_sock)
		file_put(q->notify_sock);
	pthread_mutex_destroy(&q->lock);
	free(q);
}

static int mq_getattr(struct vfs_node *n, struct vfs_attr *attr)
{
	struct mqueue *q = node_mq(n);

	pthread_mutex_lock(&q->lock);
	*attr = (struct vfs_attr){
		.dev = n->fs->dev,
		.ino = (uint64_t)(uintptr_t)n >> 4,
		.nlink = 1,
		.mode = S_IFREG | q->mode,
		.uid = q->uid,
		.gid = q->gid,
		.blksize = 4096,
		.size = (int64_t)q->curmsgs,
		.atime = q->ctime,
		.mtime = q->ctime,
		.ctime = q->ctime,
	};
	pthread_mutex_unlock(&q->lock);
	return 0;
}

/* read(2): the queue's description, as /dev/mqueue files read in Linux. */
static ssize_t mq_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	struct mqueue *q = f->priv;
	char buf[128];
	size_t done = 0;
	int n, signo = 0, how = 0;
	int32_t pid = 0;
	uint64_t qsize = 0;
	struct mq_msg *m;

	pthread_mutex_lock(&q->lock);
	list_for_each_entry(m, &q->msgs, link) {
		qsize += m->len;
	}
	if (q->notify_owner) {
		how = q->notify.sigev_notify;
		signo = how == LINUX_SIGEV_SIGNAL ? q->notify.sigev_signo : 0;
		pid = q->notify_owner->pid;
	}
	pthread_mutex_unlock(&q->lock);
	n = snprintf(buf, sizeof(buf), "QSIZE:%-10llu NOTIFY:%-5d SIGNO:%-5d NOTIFY_PID:%-6d\n",
		     (unsigned long long)qsize, how, signo, pid);
	if (!pos || *pos >= n)
		return 0;
	for (int i = 0; i < iovcnt && *pos < n; i++) {
		size_t c = MIN(iov[i].iov_len, (size_t)(n - *pos));

		memcpy(iov[i].iov_base, buf + *pos, c);
		*pos += (int64_t)c;
		done += c;
	}
	return (ssize_t)done;
}

static unsigned int mq_poll(struct file *f, struct waitq **wq)
{
	struct mqueue *q = f->priv;
	unsigned int ev = 0;

	if (wq)
		*wq = &q->wq;
	pthread_mutex_lock(&q->lock);
	if (q->curmsgs)
		ev |= POLLIN | POLLRDNORM;
	if (q->curmsgs < q->maxmsg)
		ev |= POLLOUT | POLLWRNORM;
	pthread_mutex_unlock(&q->lock);
	return ev;
}

/* Linux removes the notification of a process that closes a descriptor of the queue. */
static void mq_file_release(struct file *f)
{
	struct mqueue *q = f->priv;
	struct task *t = task_current();
	struct mq_notify_end end = { 0 };

	pthread_mutex_lock(&q->lock);
	if (t && q->notify_owner == t->tg)
		notify_clear(q, &end);
	pthread_mutex_unlock(&q->lock);
	notify_end(&end, MQ_NOTIFY_REMOVED);
}

static int64_t mq_llseek(struct file *f, int64_t off, int whence)
{
	return vfs_generic_llseek(f, off, whence, 0);
}

static const struct vfs_node_ops mq_node_ops = {
	.getattr = mq_getattr,
	.release = mq_node_release,
};

static const struct file_ops mq_fops = {
	.read = mq_read,
	.llseek = mq_llseek,
	.poll = mq_poll,
	.release = mq_file_release,
};

/* A new file on q (a new node reference) with the open flags; -ENOMEM. */
static struct file *mq_file(struct mqueue *q, int oflag)
{
	struct file *f = file_alloc(&mq_fops, oflag & (O_ACCMODE | O_NONBLOCK), q);

	if (!f)
		return NULL;
	vfs_node_get(&q->node);
	f->node = &q->node;
	f->mnt = vfs_anon_mount();
	vfs_mount_get(f->mnt);
	return f;
}

static int check_name(const char *name)
{
	size_t len = strlen(name);

	if (len == 0)
		return -ENOENT;
	if (len > MQ_NAME_MAX)
		return -ENAMETOOLONG;
	if (strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return -EACCES;
	return 0;
}

/* Creates q named name (mq_ns_lock held). */
static struct mqueue *mq_create(struct task *t, const char *name, uint32_t mode,
				const struct linux_mq_attr *attr)
{
	bool cap = cred_capable(&t->cred, CAP_SYS_RESOURCE);
	int64_t maxmsg, msgsize;
	uint64_t bytes, limit;
	struct mqueue *q;

	if (attr) {
		maxmsg = attr->mq_maxmsg;
		msgsize = attr->mq_msgsize;
		if (maxmsg <= 0 || msgsize <= 0)
			return ERR_PTR(-EINVAL);
		if (cap ? (maxmsg > HARD_MSGMAX || msgsize > HARD_MSGSIZEMAX) :
			  (maxmsg > sysctl_get(SYSCTL_FS_MQUEUE_MSG_MAX, 0) ||
			   msgsize > sysctl_get(SYSCTL_FS_MQUEUE_MSGSIZE_MAX, 0)))
			return ERR_PTR(-EINVAL);
	} else {
		maxmsg = MIN(sysctl_get(SYSCTL_FS_MQUEUE_MSG_DEFAULT, 0),
			     sysctl_get(SYSCTL_FS_MQUEUE_MSG_MAX, 0));
		msgsize = MIN(sysctl_get(SYSCTL_FS_MQUEUE_MSGSIZE_DEFAULT, 0),
			      sysctl_get(SYSCTL_FS_MQUEUE_MSGSIZE_MAX, 0));
	}
	if (mq_nr_linked >= sysctl_get(SYSCTL_FS_MQUEUE_QUEUES_MAX, 0) && !cap)
		return ERR_PTR(-ENOSPC);
	bytes = (uint64_t)maxmsg * ((uint64_t)msgsize + MQ_MSG_OVERHEAD);
	pthread_mutex_lock(&t->tg->lock);
	limit = t->tg->rlimits[RLIMIT_MSGQUEUE].rlim_cur;
	pthread_mutex_unlock(&t->tg->lock);
	if (ns_user_bytes(t->cred.euid) + bytes > limit)
		return ERR_PTR(-EMFILE);
	q = calloc(1, sizeof(*q));
	if (!q)
		return ERR_PTR(-ENOMEM);
	if (vfs_anon_node_init(&q->node, &mq_node_ops, S_IFREG) < 0) {
		free(q);
		return ERR_PTR(-ENOMEM);
	}
	snprintf(q->name, sizeof(q->name), "%s", name);
	q->uid = t->cred.fsuid;
	q->gid = t->cred.fsgid;
	q->mode = mode & 0777;
	q->bytes = bytes;
	clock_gettime(CLOCK_REALTIME, &q->ctime);
	pthread_mutex_init(&q->lock, NULL);
	waitq_init(&q->wq);
	list_init(&q->msgs);
	q->maxmsg = maxmsg;
	q->msgsize = msgsize;
	/* The name's reference is the node's first one. */
	q->linked = true;
	mq_nr_linked++;
	list_add_tail(&q->ns_link, &mq_all);
	return q;
}

long mqueue_open(struct task *t, const char *name, int oflag, uint32_t mode,
		 const struct linux_mq_attr *attr)
{
	static const uint32_t acc_mask[3] = { 4, 2, 6 };
	struct mqueue *q;
	struct file *f;
	long ret;

	ret = check_name(name);
	if (ret)
		return ret;
	pthread_mutex_lock(&mq_ns_lock);
	q = ns_lookup(name);
	if (q) {
		ret = -EEXIST;
		if ((oflag & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL))
			goto out_unlock;
		ret = -EINVAL;
		if ((oflag & O_ACCMODE) == O_ACCMODE)
			goto out_unlock;
		ret = mq_permission(t, q, acc_mask[oflag & O_ACCMODE]);
		if (ret)
			goto out_unlock;
	} else {
		ret = -ENOENT;
		if (!(oflag & O_CREAT))
			goto out_unlock;
		q = mq_create(t, name, mode & ~fs_context_umask(t->fs), attr);
		if (IS_ERR(q)) {
			ret = PTR_ERR(q);
			goto out_unlock;
		}
	}
	ret = -ENOMEM;
	f = mq_file(q, oflag);
	if (!f)
		goto out_unlock;
	pthread_mutex_unlock(&mq_ns_lock);
	ret = fdtable_install(t->fdt, f, 0, true, task_nofile_limit(t));
	file_put(f);
	return ret;
out_unlock:
	pthread_mutex_unlock(&mq_ns_lock);
	return ret;
}

long mqueue_unlink(struct task *t, const char *name)
{
	struct mqueue *q;
	long ret;

	ret = check_name(name);
	if (ret)
		return ret;
	pthread_mutex_lock(&mq_ns_lock);
	q = ns_lookup(name);
	ret = -ENOENT;
	if (!q)
		goto out_unlock;
	/* The queue directory is sticky (1777): only the owner or CAP_FOWNER. */
	ret = -EPERM;
	if (q->uid != t->cred.fsuid && !cred_capable(&t->cred, CAP_FOWNER))
		goto out_unlock;
	q->linked = false;
	mq_nr_linked--;
	pthread_mutex_unlock(&mq_ns_lock);
	vfs_node_put(&q->node); /* the name's reference */
	return 0;
out_unlock:
	pthread_mutex_unlock(&mq_ns_lock);
	return ret;
}

static bool mq_has_room(void *arg)
{
	struct mqueue *q = arg;
	bool r;

	pthread_mutex_lock(&q->lock);
	r = q->curmsgs < q->maxmsg;
	pthread_mutex_unlock(&q->lock);
	return r;
}

static bool mq_has_msg(void *arg)
{
	struct mqueue *q = arg;
	bool r;

	pthread_mutex_lock(&q->lock);
	r = q->curmsgs > 0;
	pthread_mutex_unlock(&q->lock);
	return r;
}

static bool file_nonblock(struct file *f)
{
	return __atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_NONBLOCK;
}

long mqueue_send(struct task *t, int fd, uint64_t msg, size_t len, uint32_t prio,
		 const struct timespec *abs)
{
	struct mq_notify_end end = { 0 };
	struct linux_siginfo info;
	struct timespec deadline;
	struct waitq *wq;
	struct mq_msg *m, *pos;
	struct mqueue *q;
	struct file *f;
	int sig = 0;
	long ret;

	if (prio >= MQ_PRIO_MAX)
		return -EINVAL;
	q = fd_mq(t, fd, &f);
	if (IS_ERR(q))
		return PTR_ERR(q);
	ret = -EBADF;
	if ((f->flags & O_ACCMODE) == O_RDONLY)
		goto out;
	ret = -EMSGSIZE;
	if ((int64_t)len > q->msgsize)
		goto out;
	ret = -ENOMEM;
	m = malloc(sizeof(*m) + len);
	if (!m)
		goto out;
	m->prio = prio;
	m->len = len;
	ret = -EFAULT;
	if (len && mm_copy_in(t->mm, m->data, msg, len) != (ssize_t)len) {
		free(m);
		goto out;
	}
	if (abs)
		deadline = vtime_guest_abs_to_host_mono(CLOCK_REALTIME, *abs);
	wq = &q->wq;
	for (;;) {
		pthread_mutex_lock(&q->lock);
		if (q->curmsgs < q->maxmsg)
			break;
		pthread_mutex_unlock(&q->lock);
		ret = -EAGAIN;
		if (file_nonblock(f))
			goto out_free;
		ret = task_wait(t, &wq, 1, mq_has_room, q, abs ? &deadline : NULL, true);
		if (ret < 0)
			goto out_free;
	}
	/* After the last message of a higher or equal priority. */
	list_for_each_entry(pos, &q->msgs, link) {
		if (pos->prio < prio)
			break;
	}
	list_add_tail(&m->link, &pos->link);
	q->curmsgs++;
	if (q->curmsgs == 1 && !q->receivers && q->notify_owner) {
		if (q->notify.sigev_notify == LINUX_SIGEV_SIGNAL && q->notify.sigev_signo) {
			sig = q->notify.sigev_signo;
			memset(&info, 0, sizeof(info));
			info.si_signo = sig;
			info.si_code = LINUX_SI_MESGQ;
			info.kill.pid = task_pid(t);
			info.kill.uid = t->cred.uid;
			info.kill.value = q->notify.sigev_value;
		}
		notify_clear(q, &end);
	}
	pthread_mutex_unlock(&q->lock);
	waitq_wake_all(&q->wq);
	if (sig)
		signal_send_tg(end.owner, sig, &info);
	notify_end(&end, MQ_NOTIFY_WOKENUP);
	file_put(f);
	return 0;
out_free:
	free(m);
out:
	file_put(f);
	return ret;
}

long mqueue_receive(struct task *t, int fd, uint64_t msg, size_t len, uint64_t prio_addr,
		    const struct timespec *abs)
{
	struct timespec deadline;
	struct waitq *wq;
	struct mq_msg *m;
	struct mqueue *q;
	struct file *f;
	long ret;

	q = fd_mq(t, fd, &f);
	if (IS_ERR(q))
		return PTR_ERR(q);
	ret = -EBADF;
	if ((f->flags & O_ACCMODE) == O_WRONLY)
		goto out;
	ret = -EMSGSIZE;
	if ((int64_t)len < q->msgsize)
		goto out;
	if (abs)
		deadline = vtime_guest_abs_to_host_mono(CLOCK_REALTIME, *abs);
	wq = &q->wq;
	for (;;) {
		pthread_mutex_lock(&q->lock);
		if (q->curmsgs > 0)
			break;
		pthread_mutex_unlock(&q->lock);
		ret = -EAGAIN;
		if (file_nonblock(f))
			goto out;
		pthread_mutex_lock(&q->lock);
		q->receivers++;
		pthread_mutex_unlock(&q->lock);
		ret = task_wait(t, &wq, 1, mq_has_msg, q, abs ? &deadline : NULL, true);
		pthread_mutex_lock(&q->lock);
		q->receivers--;
		pthread_mutex_unlock(&q->lock);
		if (ret < 0)
			goto out;
	}
	m = list_first_entry(&q->msgs, struct mq_msg, link);
	list_del(&m->link);
	q->curmsgs--;
	pthread_mutex_unlock(&q->lock);
	waitq_wake_all(&q->wq);
	ret = (long)m->len;
	if ((m->len && mm_copy_out(t->mm, msg, m->data, m->len) != (ssize_t)m->len) ||
	    (prio_addr &&
	     mm_copy_out(t->mm, prio_addr, &m->prio, sizeof(m->prio)) != sizeof(m->prio)))
		ret = -EFAULT; /* the message is lost, as in Linux */
	free(m);
out:
	file_put(f);
	return ret;
}

long mqueue_notify(struct task *t, int fd, const struct linux_sigevent *ev,
		   const uint8_t cookie[MQ_COOKIE_LEN])
{
	struct mq_notify_end end = { 0 };
	struct file *sock = NULL;
	struct mqueue *q;
	struct file *f;
	long ret = 0;

	if (ev) {
		if (ev->sigev_notify != LINUX_SIGEV_NONE &&
		    ev->sigev_notify != LINUX_SIGEV_SIGNAL &&
		    ev->sigev_notify != LINUX_SIGEV_THREAD)
			return -EINVAL;
		if (ev->sigev_notify == LINUX_SIGEV_SIGNAL &&
		    (ev->sigev_signo < 0 || ev->sigev_signo > LINUX_NSIG))
			return -EINVAL;
		/* SIGEV_THREAD: sigev_signo is a netlink socket for the cookie (glibc's). */
		if (ev->sigev_notify == LINUX_SIGEV_THREAD) {
			sock = fdtable_lookup(t->fdt, ev->sigev_signo);
			if (!sock)
				return -EBADF;
			ret = netlink_file_deliver(sock, NULL, 0);
			if (ret) {
				file_put(sock);
				return ret;
			}
		}
	}
	q = fd_mq(t, fd, &f);
	if (IS_ERR(q)) {
		if (sock)
			file_put(sock);
		return PTR_ERR(q);
	}
	pthread_mutex_lock(&q->lock);
	if (!ev) {
		if (q->notify_owner == t->tg)
			notify_clear(q, &end);
	} else if (q->notify_owner) {
		ret = -EBUSY;
	} else {
		tg_get(t->tg);
		q->notify_owner = t->tg;
		q->notify = *ev;
		q->notify_sock = steal_pointer(&sock);
		if (q->notify_sock)
			memcpy(q->notify_cookie, cookie, MQ_COOKIE_LEN);
	}
	pthread_mutex_unlock(&q->lock);
	notify_end(&end, MQ_NOTIFY_REMOVED);
	if (sock)
		file_put(sock);
	file_put(f);
	return ret;
}

long mqueue_getsetattr(struct task *t, int fd, const struct linux_mq_attr *nattr,
		       struct linux_mq_attr *oattr)
{
	struct mqueue *q;
	struct file *f;
	int flags;

	if (nattr && (nattr->mq_flags & ~(int64_t)O_NONBLOCK))
		return -EINVAL;
	q = fd_mq(t, fd, &f);
	if (IS_ERR(q))
		return PTR_ERR(q);
	flags = __atomic_load_n(&f->flags, __ATOMIC_RELAXED);
	if (oattr) {
		memset(oattr, 0, sizeof(*oattr));
		oattr->mq_flags = flags & O_NONBLOCK;
		pthread_mutex_lock(&q->lock);
		oattr->mq_maxmsg = q->maxmsg;
		oattr->mq_msgsize = q->msgsize;
		oattr->mq_curmsgs = q->curmsgs;
		pthread_mutex_unlock(&q->lock);
	}
	if (nattr) {
		if (nattr->mq_flags & O_NONBLOCK)
			__atomic_or_fetch(&f->flags, O_NONBLOCK, __ATOMIC_RELAXED);
		else
			__atomic_and_fetch(&f->flags, ~O_NONBLOCK, __ATOMIC_RELAXED);
	}
	file_put(f);
	return 0;
}

int mqueue_count_linked(void)
{
	int n;

	pthread_mutex_lock(&mq_ns_lock);
	n = mq_nr_linked;
	pthread_mutex_unlock(&mq_ns_lock);
	return n;
}

/* --- checkpoint and restore --- */

int mqueue_save(int (*queue)(struct mqueue *q, const struct mqueue_state *st, void *arg),
		int (*msg)(uint32_t prio, const void *data, size_t len, void *arg), void *arg)
{
	struct mqueue *q;
	struct mq_msg *m;
	int r = 0;

	pthread_mutex_lock(&mq_ns_lock);
	list_for_each_entry(q, &mq_all, ns_link) {
		bool notify;

		pthread_mutex_lock(&q->lock);
		notify = q->notify_owner != NULL;
		pthread_mutex_unlock(&q->lock);
		if (notify) {
			r = -EOPNOTSUPP;
			goto out;
		}
	}
	list_for_each_entry(q, &mq_all, ns_link) {
		struct mqueue_state st = {
			.name = q->name,
			.linked = q->linked,
			.uid = q->uid,
			.gid = q->gid,
			.mode = q->mode,
			.ctime = q->ctime,
		};

		pthread_mutex_lock(&q->lock);
		st.maxmsg = q->maxmsg;
		st.msgsize = q->msgsize;
		r = queue(q, &st, arg);
		list_for_each_entry(m, &q->msgs, link) {
			if (r < 0)
				break;
			r = msg(m->prio, m->data, m->len, arg);
		}
		pthread_mutex_unlock(&q->lock);
		if (r < 0)
			break;
	}
out:
	pthread_mutex_unlock(&mq_ns_lock);
	return r;
}

struct mqueue *mqueue_of_file(struct file *f)
{
	return f->ops == &mq_fops ? f->priv : NULL;
}

struct mqueue *mqueue_restore(const struct mqueue_state *st)
{
	struct mqueue *q;

	if (!st->name || check_name(st->name) || st->maxmsg < 1 || st->maxmsg > MQ_RESTORE_MAXMSG ||
	    st->msgsize < 1 || st->msgsize > MQ_RESTORE_MSGSIZE || (st->mode & ~0777u))
		return ERR_PTR(-EINVAL);
	pthread_mutex_lock(&mq_ns_lock);
	if (st->linked && ns_lookup(st->name)) {
		q = ERR_PTR(-EEXIST);
		goto out_unlock;
	}
	q = calloc(1, sizeof(*q));
	if (!q || vfs_anon_node_init(&q->node, &mq_node_ops, S_IFREG) < 0) {
		free(q);
		q = ERR_PTR(-ENOMEM);
		goto out_unlock;
	}
	snprintf(q->name, sizeof(q->name), "%s", st->name);
	q->uid = st->uid;
	q->gid = st->gid;
	q->mode = st->mode;
	q->maxmsg = st->maxmsg;
	q->msgsize = st->msgsize;
	q->bytes = (uint64_t)st->maxmsg * ((uint64_t)st->msgsize + MQ_MSG_OVERHEAD);
	q->ctime = st->ctime;
	pthread_mutex_init(&q->lock, NULL);
	waitq_init(&q->wq);
	list_init(&q->msgs);
	list_add_tail(&q->ns_link, &mq_all);
	if (st->linked) {
		/* The name's reference, beside the caller's. */
		q->linked = true;
		mq_nr_linked++;
		vfs_node_get(&q->node);
	}
out_unlock:
	pthread_mutex_unlock(&mq_ns_lock);
	return q;
}

int mqueue_restore_msg(struct mqueue *q, uint32_t prio, const void *data, size_t len)
{
	struct mq_msg *m, *pos;

	if (prio >= MQ_PRIO_MAX || (int64_t)len > q->msgsize)
		return -EMSGSIZE;
	m = malloc(sizeof(*m) + len);
	if (!m)
		return -ENOMEM;
	m->prio = prio;
	m->len = len;
	if (len)
		memcpy(m->data, data, len);
	pthread_mutex_lock(&q->lock);
	if (q->curmsgs >= q->maxmsg) {
		pthread_mutex_unlock(&q->lock);
		free(m);
		return -EAGAIN;
	}
	list_for_each_entry(pos, &q->msgs, link) {
		if (pos->prio < prio)
			break;
	}
	list_add_tail(&m->link, &pos->link);
	q->curmsgs++;
	pthread_mutex_unlock(&q->lock);
	return 0;
}

struct file *mqueue_file_restore(struct mqueue *q, int flags)
{
	if ((flags & O_ACCMODE) == O_ACCMODE)
		return NULL;
	return mq_file(q, flags);
}

void mqueue_put(struct mqueue *q)
{
	vfs_node_put(&q->node);
}

/* --- the mqueue filesystem (sentry/fs/mqueue) --- */

struct mqueue *mqueue_lookup(const char *name)
{
	struct mqueue *q;

	pthread_mutex_lock(&mq_ns_lock);
	q = ns_lookup(name);
	if (q)
		vfs_node_get(&q->node);
	pthread_mutex_unlock(&mq_ns_lock);
	return q;
}

struct mqueue *mqueue_create_named(struct task *t, const char *name, uint32_t mode)
{
	struct mqueue *q;
	long err = check_name(name);

	if (err)
		return ERR_PTR(err);
	pthread_mutex_lock(&mq_ns_lock);
	q = ns_lookup(name) ? ERR_PTR(-EEXIST) : mq_create(t, name, mode, NULL);
	if (!IS_ERR(q))
		vfs_node_get(&q->node); /* the caller's; the name holds the first */
	pthread_mutex_unlock(&mq_ns_lock);
	return q;
}

int mqueue_name_at(int64_t index, char *name, size_t len)
{
	struct mqueue *q;
	int64_t i = 0;
	int ret = -ENOENT;

	pthread_mutex_lock(&mq_ns_lock);
	list_for_each_entry(q, &mq_all, ns_link) {
		if (!q->linked)
			continue;
		if (i++ == index) {
			snprintf(name, len, "%s", q->name);
			ret = 0;
			break;
		}
	}
	pthread_mutex_unlock(&mq_ns_lock);
	return ret;
}

int mqueue_stat(struct mqueue *q, struct vfs_attr *attr)
{
	return mq_getattr(&q->node, attr);
}

struct file *mqueue_file_open(struct mqueue *q, int flags)
{
	struct file *f = file_alloc(&mq_fops, flags & (O_ACCMODE | O_NONBLOCK), q);

	return f ? f : ERR_PTR(-ENOMEM);
}
