/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host terminals (hosttty.h): termios and friends on the host FD, job control in the sentry.
 *
 * Each host terminal the guest holds is known by its device number (st_rdev): every guest file
 * over it shares one record of the guest session that has it as its controlling terminal and of
 * that session's foreground group, protected by tty_lock. Lock order: tty_lock, then
 * k->tree_lock (never the other way).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <unistd.h>

#include "common/err.h"
#include "common/log.h"
#include "include/abi/linux/errno.h"
#include "include/abi/linux/signal.h"
#include "sentry/fs/devpts/devpts.h"
#include "sentry/fs/host/hostfile.h"
#include "sentry/fs/host/hosttty.h"
#include "sentry/kernel/jobids.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/vfs.h"

#define LINUX_CAP_SYS_ADMIN 21
/* Linux's struct termios (TCGETS) and struct termios2 (TCGETS2) sizes on x86-64. */
#define LINUX_TERMIOS_SIZE 36
#define LINUX_TERMIOS2_SIZE 44
#define LINUX_TCGETS2 0x802c542aU
#define LINUX_TCSETS2 0x402c542bU
#define LINUX_TCSETSW2 0x402c542cU
#define LINUX_TCSETSF2 0x402c542dU

#define HOSTTTY_MAX 8

struct hosttty {
	bool used;
	dev_t rdev;
	int32_t session; /* the guest session it is the controlling terminal of, or 0 */
	int32_t pgrp; /* that session's foreground group */
	int fd; /* a host fd of it (the sentry's own), for the guest's /dev/tty, or -1 */
};

static pthread_mutex_t tty_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hosttty ttys[HOSTTTY_MAX]; /* tty_lock */
static struct kernel *tty_kernel; /* set once by hosttty_init */
static bool have_own; /* the sentry's own terminal (one of its fds 0-2) */
/* How the terminal's signals are sent (hostsig_send, set by hostsig_start); NULL: not sent. */
static int (*tty_send)(struct thread_group *tg, int sig, const struct linux_siginfo *info,
		       unsigned int flags);
static dev_t own_rdev;

/* The record of rdev, made when missing (tty_lock held). NULL when the table is full. */
static struct hosttty *tty_find(dev_t rdev, bool make)
{
	struct hosttty *free_slot = NULL;

	for (int i = 0; i < HOSTTTY_MAX; i++) {
		if (ttys[i].used && ttys[i].rdev == rdev)
			return &ttys[i];
		if (!ttys[i].used && !free_slot)
			free_slot = &ttys[i];
	}
	if (!make || !free_slot)
		return NULL;
	*free_slot = (struct hosttty){ .used = true, .rdev = rdev, .fd = -1 };
	return free_slot;
}

static bool is_terminal(int fd)
{
	struct termios tm;

	return ioctl(fd, TCGETS, &tm) == 0;
}

void hosttty_set_sender(int (*send)(struct thread_group *tg, int sig,
				    const struct linux_siginfo *info, unsigned int flags))
{
	tty_send = send;
}

void hosttty_init(struct kernel *k)
{
	struct stat st;

	tty_kernel = k;
	for (int fd = 0; fd < 3; fd++) {
		if (fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && is_terminal(fd)) {
			pthread_mutex_lock(&tty_lock);
			struct hosttty *tty = tty_find(st.st_rdev, true);

			if (tty) {
				tty->session = 1;
				tty->pgrp = 1;
				tty->fd = fcntl(fd, F_DUPFD_CLOEXEC, 10);
			}
			own_rdev = st.st_rdev;
			have_own = true;
			pthread_mutex_unlock(&tty_lock);
			/* The guest sees it as /dev/pts/0 (before any pty of its own). */
			if (devpts_add_host(fd) < 0)
				log_warn("the terminal has no /dev/pts entry");
			return;
		}
	}
}

/* The session and foreground group of rdev, after dropping a session whose leader is gone. */
static void tty_state(struct kernel *k, dev_t rdev, int32_t *session, int32_t *pgrp)
{
	struct hosttty *tty;

	*session = *pgrp = 0;
	pthread_mutex_lock(&tty_lock);
	tty = tty_find(rdev, false);
	if (tty) {
		*session = tty->session;
		*pgrp = tty->pgrp;
	}
	pthread_mutex_unlock(&tty_lock);
	if (*session && !kernel_session_alive(k, *session)) {
		pthread_mutex_lock(&tty_lock);
		tty = tty_find(rdev, false);
		if (tty && tty->session == *session)
			tty->session = tty->pgrp = 0;
		pthread_mutex_unlock(&tty_lock);
		*session = *pgrp = 0;
	}
}

/* Whether some terminal other than rdev is the controlling terminal of session sid. */
static bool session_has_other_ctty(dev_t rdev, int32_t sid)
{
	bool r = false;

	pthread_mutex_lock(&tty_lock);
	for (int i = 0; i < HOSTTTY_MAX && !r; i++)
		r = ttys[i].used && ttys[i].rdev != rdev && ttys[i].session == sid;
	pthread_mutex_unlock(&tty_lock);
	return r;
}

struct pgrp_sig {
	int32_t pgid;
	int sig;
	int found;
};

static int pgrp_sig_one(struct thread_group *tg, void *arg)
{
	struct pgrp_sig *ps = arg;

	if (!tg->reaped && tg->pgid == ps->pgid) {
		/* From the terminal (SI_KERNEL); pid 1 of husk do dies of what it does not handle. */
		if (tty_send)
			tty_send(tg, ps->sig, NULL, 0);
		ps->found++;
	}
	return 0;
}

/* Sends sig to every process of group pgid, as the tty layer does. Returns how many. */
static int kill_pgrp(struct kernel *k, int32_t pgid, int sig)
{
	struct pgrp_sig ps = { pgid, sig, 0 };

	if (!k || pgid <= 0 || !k->pids)
		return 0;
	pthread_mutex_lock(&k->tree_lock);
	pid_for_each_tg(k, pgrp_sig_one, &ps);
	pthread_mutex_unlock(&k->tree_lock);
	return ps.found;
}

/* Whether t takes sig with SIG_IGN or blocks it. */
static bool sig_ignored_or_blocked(struct task *t, int sig)
{
	bool r;

	pthread_mutex_lock(&t->tg->sighand->lock);
	r = t->tg->sighand->actions[sig - 1].handler == LINUX_SIG_IGN || (t->sigmask & SIGBIT(sig));
	pthread_mutex_unlock(&t->tg->sighand->lock);
	return r;
}

/* Whether t is in a background group of the session that holds rdev. */
static bool in_background(dev_t rdev, struct task *t, struct job_ids *ids)
{
	int32_t session, pgrp;

	tty_state(t->k, rdev, &session, &pgrp);
	task_job_ids(t, ids);
	return session && session == ids->sid && pgrp && pgrp != ids->pgid;
}

/* Linux's tty_check_change and the read side of job control: sig is SIGTTOU or SIGTTIN. */
static long job_control(dev_t rdev, struct task *t, int sig)
{
	struct job_ids ids;

	if (!t || !in_background(rdev, t, &ids))
		return 0;
	if (sig_ignored_or_blocked(t, sig))
		return sig == LINUX_SIGTTIN ? -EIO : 0;
	kill_pgrp(t->k, ids.pgid, sig);
	return -ERESTARTSYS;
}

long hosttty_job_control(int fd, dev_t rdev, struct task *t, bool is_read)
{
	struct termios tm;
	struct job_ids ids;

	if (is_read)
		return job_control(rdev, t, LINUX_SIGTTIN);
	/* Writes from the background stop only with TOSTOP; the host is asked only then. */
	if (!t || !in_background(rdev, t, &ids) || ioctl(fd, TCGETS, &tm) < 0 ||
	    !(tm.c_lflag & TOSTOP))
		return 0;
	return job_control(rdev, t, LINUX_SIGTTOU);
}

static long copy_out(struct task *t, uint64_t addr, const void *src, size_t len)
{
	if (!t)
		return -EFAULT;
	return mm_copy_out(t->mm, addr, src, len) == (ssize_t)len ? 0 : -EFAULT;
}

static long copy_in(struct task *t, void *dst, uint64_t addr, size_t len)
{
	if (!t)
		return -EFAULT;
	return mm_copy_in(t->mm, dst, addr, len) == (ssize_t)len ? 0 : -EFAULT;
}

/* A host ioctl that reads a structure of len bytes into the guest at arg. */
static long host_get(int fd, struct task *t, unsigned long cmd, uint64_t arg, size_t len)
{
	uint8_t buf[64];

	memset(buf, 0, sizeof(buf));
	if (ioctl(fd, cmd, buf) < 0)
		return -errno;
	return copy_out(t, arg, buf, len);
}

/* A host ioctl that sets a structure of len bytes from the guest at arg. */
static long host_set(int fd, struct task *t, unsigned long cmd, uint64_t arg, size_t len)
{
	uint8_t buf[64];
	long err;

	memset(buf, 0, sizeof(buf));
	err = copy_in(t, buf, arg, len);
	if (err < 0)
		return err;
	return ioctl(fd, cmd, buf) < 0 ? -errno : 0;
}

struct pgrp_find {
	int32_t pgid, sid;
	bool found, other_session;
};

static int pgrp_find_one(struct thread_group *tg, void *arg)
{
	struct pgrp_find *pf = arg;

	if (tg->reaped || tg->pgid != pf->pgid)
		return 0;
	if (tg->sid == pf->sid)
		pf->found = true;
	else
		pf->other_session = true;
	return 0;
}

/* TIOCSCTTY: makes rdev (host fd) the controlling terminal of t's session (t leads it). */
static long set_ctty(int fd, dev_t rdev, struct task *t, bool steal)
{
	int32_t session, pgrp;
	struct hosttty *tty;
	struct job_ids ids;

	task_job_ids(t, &ids);
	if (ids.pid != ids.sid)
		return -EPERM;
	tty_state(t->k, rdev, &session, &pgrp);
	if (session == ids.sid)
		return 0;
	if (session_has_other_ctty(rdev, ids.sid))
		return -EPERM;
	if (session && (!steal || !cred_capable(&t->cred, LINUX_CAP_SYS_ADMIN)))
		return -EPERM;
	pthread_mutex_lock(&tty_lock);
	tty = tty_find(rdev, true);
	if (tty) {
		tty->session = ids.sid;
		tty->pgrp = ids.pgid;
		if (tty->fd < 0)
			tty->fd = fcntl(fd, F_DUPFD_CLOEXEC, 10);
	}
	pthread_mutex_unlock(&tty_lock);
	return tty ? 0 : -ENOMEM;
}

void hosttty_open_acquire(int fd, dev_t rdev, struct task *t)
{
	/* set_ctty's refusals are tty_open's silent no: not a leader, or the terminal is taken. */
	(void)set_ctty(fd, rdev, t, false);
}

long hosttty_ioctl(int fd, dev_t rdev, struct task *t, unsigned int cmd, uint64_t arg)
{
	int32_t session, pgrp, v;
	struct job_ids ids;
	long err;
	int iv;

	switch (cmd) {
	case TCGETS:
		return host_get(fd, t, TCGETS, arg, LINUX_TERMIOS_SIZE);
	case LINUX_TCGETS2:
		return host_get(fd, t, LINUX_TCGETS2, arg, LINUX_TERMIOS2_SIZE);
	case TCSETS:
	case TCSETSW:
	case TCSETSF:
	case LINUX_TCSETS2:
	case LINUX_TCSETSW2:
	case LINUX_TCSETSF2:
		err = job_control(rdev, t, LINUX_SIGTTOU);
		if (err < 0)
			return err;
		return host_set(fd, t, cmd, arg,
				(cmd == TCSETS || cmd == TCSETSW || cmd == TCSETSF) ?
					LINUX_TERMIOS_SIZE :
					LINUX_TERMIOS2_SIZE);
	case TIOCGWINSZ:
		return host_get(fd, t, TIOCGWINSZ, arg, sizeof(struct winsize));
	case TIOCSWINSZ:
		/* The host sends SIGWINCH to its foreground group, the sentry among it, which
		 * passes it on to the guest's foreground group (hosttty_terminal_signal). */
		return host_set(fd, t, TIOCSWINSZ, arg, sizeof(struct winsize));
	case FIONREAD: /* TIOCINQ */
	case TIOCOUTQ:
		if (ioctl(fd, cmd, &iv) < 0)
			return -errno;
		return copy_out(t, arg, &iv, sizeof(iv));
	case TCFLSH:
		if (arg > TCIOFLUSH)
			return -EINVAL;
		goto check_then_host;
	case TCXONC:
		if (arg > TCION)
			return -EINVAL;
		goto check_then_host;
	case TCSBRK:
	case TCSBRKP:
check_then_host:
		err = job_control(rdev, t, LINUX_SIGTTOU);
		if (err < 0)
			return err;
		return ioctl(fd, cmd, (unsigned long)(unsigned int)arg) < 0 ? -errno : 0;
	case TIOCGPGRP:
		task_job_ids(t, &ids);
		tty_state(t->k, rdev, &session, &pgrp);
		/*
		 * Not the caller's controlling terminal: Linux says ENOTTY; the caller's own group
		 * is answered instead, as before job control was tracked, for the husk exec'd
		 * shells that share the caller's terminal without holding it.
		 */
		v = session && session == ids.sid ? pgrp : ids.pgid;
		return copy_out(t, arg, &v, sizeof(v));
	case TIOCGSID:
		task_job_ids(t, &ids);
		tty_state(t->k, rdev, &session, &pgrp);
		if (!session || session != ids.sid)
			return -ENOTTY;
		return copy_out(t, arg, &session, sizeof(session));
	case TIOCSPGRP: {
		struct pgrp_find pf = { 0 };
		struct hosttty *tty;

		task_job_ids(t, &ids);
		tty_state(t->k, rdev, &session, &pgrp);
		if (!session || session != ids.sid)
			return -ENOTTY;
		err = copy_in(t, &v, arg, sizeof(v));
		if (err < 0)
			return err;
		if (v < 0)
			return -EINVAL;
		err = job_control(rdev, t, LINUX_SIGTTOU);
		if (err < 0)
			return err;
		pf.pgid = v;
		pf.sid = ids.sid;
		pthread_mutex_lock(&t->k->tree_lock);
		pid_for_each_tg(t->k, pgrp_find_one, &pf);
		pthread_mutex_unlock(&t->k->tree_lock);
		if (!pf.found)
			return pf.other_session ? -EPERM : -ESRCH;
		pthread_mutex_lock(&tty_lock);
		tty = tty_find(rdev, false);
		if (tty && tty->session == session)
			tty->pgrp = v;
		pthread_mutex_unlock(&tty_lock);
		return 0;
	}
	case TIOCSCTTY:
		return set_ctty(fd, rdev, t, arg == 1);
	case TIOCNOTTY: {
		struct hosttty *tty;

		task_job_ids(t, &ids);
		tty_state(t->k, rdev, &session, &pgrp);
		if (!session || session != ids.sid)
			return -ENOTTY;
		if (ids.pid != ids.sid)
			return 0; /* only the leader detaches the session here */
		pthread_mutex_lock(&tty_lock);
		tty = tty_find(rdev, false);
		if (tty && tty->session == session)
			tty->session = tty->pgrp = 0;
		pthread_mutex_unlock(&tty_lock);
		kill_pgrp(t->k, pgrp, LINUX_SIGHUP);
		kill_pgrp(t->k, pgrp, LINUX_SIGCONT);
		return 0;
	}
	default:
		/* TIOCSTI, TIOCLINUX, TIOCCONS, TIOCSETD, TIOCEXCL and the rest never reach
		 * the host terminal. */
		return -ENOTTY;
	}
}

bool hosttty_terminal_signal(struct kernel *k, int sig)
{
	int32_t session, pgrp;

	if (!have_own)
		return false;
	tty_state(k ? k : tty_kernel, own_rdev, &session, &pgrp);
	if (!session || !pgrp)
		return false;
	/* No process left in the foreground group: nobody gets it, as on Linux. */
	kill_pgrp(k ? k : tty_kernel, pgrp, sig);
	return true;
}

struct file *hosttty_open_ctty(struct task *t, int flags)
{
	struct job_ids ids;
	struct file *f;
	int fd = -1;

	task_job_ids(t, &ids);
	pthread_mutex_lock(&tty_lock);
	for (int i = 0; i < HOSTTTY_MAX && fd < 0; i++) {
		if (ttys[i].used && ttys[i].session == ids.sid && ttys[i].fd >= 0)
			fd = fcntl(ttys[i].fd, F_DUPFD_CLOEXEC, 10);
	}
	pthread_mutex_unlock(&tty_lock);
	if (fd < 0 || !kernel_session_alive(t->k, ids.sid)) {
		if (fd >= 0)
			close(fd);
		return ERR_PTR(-ENXIO);
	}
	/* A new open file of the terminal: the guest's access mode, no O_NONBLOCK of the host. */
	f = hostfile_open(fd, flags & (O_ACCMODE | O_NONBLOCK | O_APPEND));
	if (!f) {
		close(fd);
		return ERR_PTR(-ENOMEM);
	}
	return f;
}

bool hosttty_ctty_of(struct task *t, int32_t *tty_nr, int32_t *tpgid)
{
	int32_t session = 0, pgrp = 0;
	dev_t rdev = 0;
	struct job_ids ids;
	int index;

	task_job_ids(t, &ids);
	pthread_mutex_lock(&tty_lock);
	for (int i = 0; i < HOSTTTY_MAX && !session; i++) {
		if (ttys[i].used && ttys[i].session && ttys[i].session == ids.sid) {
			session = ttys[i].session;
			pgrp = ttys[i].pgrp;
			rdev = ttys[i].rdev;
		}
	}
	pthread_mutex_unlock(&tty_lock);
	if (!session)
		return false;
	/* A terminal devpts shows is its /dev/pts/N to the guest. */
	index = devpts_host_index(rdev);
	if (index >= 0)
		rdev = makedev(PTS_MAJOR, (unsigned int)index);
	/* Linux's encoding of a device number in /proc/PID/stat's tty_nr. */
	*tty_nr = (int32_t)((minor(rdev) & 0xff) | (major(rdev) << 8) |
			    ((minor(rdev) & ~0xffU) << 12));
	*tpgid = pgrp ? pgrp : -1;
	return true;
}
