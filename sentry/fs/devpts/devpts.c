/* SPDX-License-Identifier: Apache-2.0 */
/*
 * devpts and the pseudo-terminal pairs (devpts.h).
 *
 * A pair (struct tty) holds two buffers: input (written by the master, processed by the line
 * discipline, read by the slave) and output (written by the slave with output processing,
 * read by the master). In canonical mode the input holds complete lines only, with their
 * lengths queued in lines[] (a length of 0 is an end-of-file from VEOF on an empty line);
 * the line being edited is in line[]. Signals the line discipline generates are sent after
 * tty->lock is released.
 *
 * References: the registry holds one reference on a pair while its master is open; each open
 * master or slave file holds one. Closing the master removes the pair from the registry (its
 * /dev/pts/N goes, its number is free again) and hangs the slaves up (reads 0, writes -EIO).
 *
 * The master's termios calls act on the slave's termios, as Linux's. Packet mode (TIOCPKT)
 * queues TIOCPKT_* status bits in tty->pktstatus (slave flushes, TCXONC stop/start, IXON
 * changes), which a master read returns alone before any data; data follows a TIOCPKT_DATA
 * byte. TCXONC TCOOFF holds the slave's writes until TCOON; ^S/^Q typed on the master are
 * ordinary input.
 *
 * Locks: reg_lock (the registry), then a tty's lock; neither is held while signals are sent or
 * while k->tree_lock is taken.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <termios.h>
#include <sys/ioctl.h>
#include <fcntl.h>
#include <unistd.h>

#include "common/err.h"
#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "include/abi/linux/stat.h"
#include "sentry/fs/devpts/devpts.h"
#include "sentry/fs/host/hostfile.h"
#include "sentry/fs/host/hosttty.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/jobids.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/pidns.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/waitq.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/fs.h"

#define TTY_IN_SIZE 4096 /* Linux's N_TTY_BUF_SIZE */
#define TTY_OUT_SIZE 16384
#define TTY_MAX_LINES 256
#define LINUX_CAP_SYS_ADMIN 21

/* The kernel's struct termios on x86-64 (TCGETS/TCSETS), not glibc's. */
struct linux_termios {
	uint32_t c_iflag, c_oflag, c_cflag, c_lflag;
	uint8_t c_line;
	uint8_t c_cc[19];
};

/* struct termios2 (TCGETS2/TCSETS2): the termios and the speeds in bits per second. */
struct linux_termios2 {
	struct linux_termios t;
	uint32_t ispeed, ospeed;
};
#define LINUX_TCGETS2 0x802c542aU
#define LINUX_TCSETS2 0x402c542bU
#define LINUX_TCSETSW2 0x402c542cU
#define LINUX_TCSETSF2 0x402c542dU
#ifndef BOTHER
#define BOTHER 0010000
#endif

struct linux_winsize {
	uint16_t ws_row, ws_col, ws_xpixel, ws_ypixel;
};

struct tty {
	struct refcount ref;
	uint32_t index;
	pthread_mutex_t lock; /* protects everything below */
	struct waitq wq; /* woken on every change of buffers, state and termios */
	struct linux_termios termios; /* the slave's, which the master's termios calls act on too */
	uint32_t ispeed, ospeed; /* termios2's speeds */
	bool packet; /* TIOCPKT on the master: its reads start with a status byte */
	uint8_t pktstatus; /* TIOCPKT_* notifications for the master not yet read */
	bool stopped; /* TCXONC TCOOFF on the slave: its output waits for TCOON */
	struct linux_winsize ws;
	bool locked; /* TIOCSPTLCK: the slave cannot be opened */
	bool master_closed;
	bool slave_ever; /* a slave was opened once: master reads -EIO after the last close */
	int slave_opens;
	uint8_t in[TTY_IN_SIZE];
	size_t in_len;
	uint32_t lines[TTY_MAX_LINES]; /* canonical: lengths of the lines in in[] */
	int nlines;
	uint8_t line[TTY_IN_SIZE];
	size_t line_len;
	uint8_t out[TTY_OUT_SIZE];
	size_t out_len;
	int32_t session; /* controlling terminal of this session, or 0 */
	int32_t pgrp; /* foreground process group, or 0 */
	struct kernel *k; /* of the task that opened the master, for signals; may be NULL */
	int32_t sig_pgrp; /* a signal for pgrp sig_pgrp is due (sent after unlock) */
	int sig;
	/*
	 * A host terminal shown as this entry (devpts_add_host, devpts_host_hold): none of the
	 * above is used, its opens wrap a duplicate of host_fd (set once) as host files. It is
	 * in the registry while it is permanent or host files over it are open.
	 */
	bool host;
	int host_fd;
	dev_t host_rdev;
	int host_users; /* reg_lock: host files over it (devpts_host_hold) */
	bool host_permanent; /* reg_lock: devpts_add_host's, kept for the sentry's life */
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tty *ttys[DEVPTS_MAX]; /* reg_lock; referenced */
static struct vfs_mount *devpts_mnt; /* the mount of /dev/pts, for TIOCGPTPEER; referenced */

static void tty_put(struct tty *tty)
{
	if (!tty || !refcount_dec(&tty->ref))
		return;
	if (tty->host)
		close(tty->host_fd);
	pthread_mutex_destroy(&tty->lock);
	free(tty);
}

/* Linux's tty_std_termios, as a pty slave starts. */
static void termios_init(struct linux_termios *t)
{
	static const uint8_t cc[19] = { 3,   034, 0177, 025, 4,	  0,   1,   0, 021,
					023, 032, 0,	022, 017, 027, 026, 0 };

	memset(t, 0, sizeof(*t));
	t->c_iflag = ICRNL | IXON;
	t->c_oflag = OPOST | ONLCR;
	t->c_cflag = B38400 | CS8 | CREAD;
	t->c_lflag = ISIG | ICANON | ECHO | ECHOE | ECHOK | ECHOCTL | ECHOKE | IEXTEN;
	memcpy(t->c_cc, cc, sizeof(cc));
}

/* The speed in bits per second of a CBAUD value (Linux's baud_table), 0 for B0 or unknown. */
static uint32_t baud_of(uint32_t cbaud)
{
	static const uint32_t low[16] = { 0,   50,   75,   110,	 134,  150,  200,   300,
					  600, 1200, 1800, 2400, 4800, 9600, 19200, 38400 };
	static const uint32_t high[] = { 57600,	  115200,  230400,  460800,  500000,
					 576000,  921600,  1000000, 1152000, 1500000,
					 2000000, 2500000, 3000000, 3500000, 4000000 };

	if (!(cbaud & CBAUDEX))
		return low[cbaud & 017];
	cbaud &= 017;
	return cbaud >= 1 && cbaud <= 15 ? high[cbaud - 1] : 0;
}

/* A registered pair with a new reference, or NULL. */
static struct tty *tty_lookup(uint32_t index)
{
	struct tty *tty = NULL;

	if (index >= DEVPTS_MAX)
		return NULL;
	pthread_mutex_lock(&reg_lock);
	tty = ttys[index];
	if (tty)
		refcount_inc(&tty->ref);
	pthread_mutex_unlock(&reg_lock);
	return tty;
}

/* --- signals and sessions --- */

struct pgrp_sig {
	int32_t pgid;
	int sig;
};

static int pgrp_sig_one(struct thread_group *tg, void *arg)
{
	struct pgrp_sig *ps = arg;

	if (!tg->reaped && tg->pgid == ps->pgid)
		signal_send_tg(tg, ps->sig, NULL);
	return 0;
}

/* Sends sig to every process of group pgid (SI_KERNEL, as the tty layer does). */
static void kill_pgrp(struct kernel *k, int32_t pgid, int sig)
{
	struct pgrp_sig ps = { pgid, sig };

	if (!k || pgid <= 0 || !k->pids)
		return;
	pthread_mutex_lock(&k->tree_lock);
	pid_for_each_tg(k, pgrp_sig_one, &ps);
	pthread_mutex_unlock(&k->tree_lock);
}

/* Sends the signal the line discipline left in tty (call without tty->lock). */
static void tty_flush_signal(struct tty *tty, int32_t pgrp, int sig)
{
	if (sig)
		kill_pgrp(tty->k, pgrp, sig);
}

/* The controlling terminal of session sid, a new reference, or NULL. */
static struct tty *ctty_of_session(struct kernel *k, int32_t sid)
{
	struct tty *found = NULL;

	if (sid <= 0)
		return NULL;
	pthread_mutex_lock(&reg_lock);
	for (size_t i = 0; i < DEVPTS_MAX && !found; i++) {
		if (ttys[i] && __atomic_load_n(&ttys[i]->session, __ATOMIC_RELAXED) == sid) {
			found = ttys[i];
			refcount_inc(&found->ref);
		}
	}
	pthread_mutex_unlock(&reg_lock);
	if (found && !kernel_session_alive(k, sid)) {
		pthread_mutex_lock(&found->lock);
		if (found->session == sid)
			found->session = found->pgrp = 0;
		pthread_mutex_unlock(&found->lock);
		tty_put(found);
		found = NULL;
	}
	return found;
}

void devpts_ctty_of(struct task *t, int32_t *tty_nr, int32_t *tpgid)
{
	struct job_ids ids;
	struct tty *tty;

	*tty_nr = 0;
	*tpgid = -1;
	task_job_ids(t, &ids);
	tty = ctty_of_session(t->k, ids.sid);
	if (!tty) {
		hosttty_ctty_of(t, tty_nr, tpgid); /* the caller's terminal (husk do) */
		return;
	}
	pthread_mutex_lock(&tty->lock);
	*tty_nr = (int32_t)vfs_mkdev(PTS_MAJOR, tty->index);
	*tpgid = tty->pgrp ? tty->pgrp : -1;
	pthread_mutex_unlock(&tty->lock);
	tty_put(tty);
}

/* --- the line discipline (tty->lock held) --- */

/* Output processing of one byte into out[] (OPOST, ONLCR, OCRNL, ONLRET). False when full. */
static bool out_put(struct tty *tty, uint8_t c)
{
	const struct linux_termios *tm = &tty->termios;

	if ((tm->c_oflag & OPOST) && c == '\n' && (tm->c_oflag & ONLCR)) {
		if (tty->out_len + 2 > TTY_OUT_SIZE)
			return false;
		tty->out[tty->out_len++] = '\r';
		tty->out[tty->out_len++] = '\n';
		return true;
	}
	if ((tm->c_oflag & OPOST) && c == '\r' && (tm->c_oflag & OCRNL))
		c = '\n';
	if (tty->out_len >= TTY_OUT_SIZE)
		return false;
	tty->out[tty->out_len++] = c;
	return true;
}

static void echo_char(struct tty *tty, uint8_t c)
{
	const struct linux_termios *tm = &tty->termios;

	if ((tm->c_lflag & ECHOCTL) && ((c < 32 && c != '\t' && c != '\n') || c == 0177)) {
		out_put(tty, '^');
		out_put(tty, c == 0177 ? '?' : (uint8_t)(c + '@'));
		return;
	}
	out_put(tty, c);
}

/* Width of the echo of c (for erasing it). */
static int echo_width(const struct tty *tty, uint8_t c)
{
	if ((tty->termios.c_lflag & ECHOCTL) && ((c < 32 && c != '\t') || c == 0177))
		return 2;
	return 1;
}

static void erase_one(struct tty *tty)
{
	uint8_t c;

	if (!tty->line_len)
		return;
	c = tty->line[--tty->line_len];
	if ((tty->termios.c_lflag & ECHO) && (tty->termios.c_lflag & ECHOE)) {
		for (int i = echo_width(tty, c); i > 0; i--) {
			out_put(tty, '\b');
			out_put(tty, ' ');
			out_put(tty, '\b');
		}
	}
}

static void commit_line(struct tty *tty)
{
	if (tty->nlines >= TTY_MAX_LINES || tty->in_len + tty->line_len > TTY_IN_SIZE)
		return; /* full: the line stays being edited */
	memcpy(tty->in + tty->in_len, tty->line, tty->line_len);
	tty->in_len += tty->line_len;
	tty->lines[tty->nlines++] = (uint32_t)tty->line_len;
	tty->line_len = 0;
}

static void flush_input(struct tty *tty)
{
	tty->in_len = 0;
	tty->nlines = 0;
	tty->line_len = 0;
}

/*
 * Processes one byte written by the master. Returns false when it could not be taken (the
 * input is full). A signal to generate is left in tty->sig.
 */
static bool ldisc_receive(struct tty *tty, uint8_t c)
{
	const struct linux_termios *tm = &tty->termios;
	uint32_t l = tm->c_lflag;
	const uint8_t *cc = tm->c_cc;

	if (tm->c_iflag & ISTRIP)
		c &= 0x7f;
	if (c == '\r') {
		if (tm->c_iflag & IGNCR)
			return true;
		if (tm->c_iflag & ICRNL)
			c = '\n';
	} else if (c == '\n' && (tm->c_iflag & INLCR)) {
		c = '\r';
	}
	if ((l & ISIG) && c && (c == cc[VINTR] || c == cc[VQUIT] || c == cc[VSUSP])) {
		tty->sig = c == cc[VINTR] ? SIGINT : c == cc[VQUIT] ? SIGQUIT : SIGTSTP;
		tty->sig_pgrp = tty->pgrp;
		if (!(l & NOFLSH))
			flush_input(tty);
		if (l & ECHO)
			echo_char(tty, c);
		return true;
	}
	if (l & ICANON) {
		if (c && c == cc[VERASE]) {
			erase_one(tty);
			return true;
		}
		if (c && c == cc[VKILL]) {
			if ((l & ECHO) && (l & (ECHOK | ECHOKE)) && (l & ECHOE)) {
				while (tty->line_len)
					erase_one(tty);
			} else {
				tty->line_len = 0;
				if ((l & ECHO) && (l & ECHOK))
					out_put(tty, '\n');
			}
			return true;
		}
		if (c && c == cc[VWERASE] && (l & IEXTEN)) {
			while (tty->line_len && tty->line[tty->line_len - 1] == ' ')
				erase_one(tty);
			while (tty->line_len && tty->line[tty->line_len - 1] != ' ')
				erase_one(tty);
			return true;
		}
		if (c && c == cc[VEOF]) {
			if (tty->nlines >= TTY_MAX_LINES)
				return false;
			commit_line(tty); /* an empty line is an end of file */
			return true;
		}
		if (c == '\n' || (c && (c == cc[VEOL] || c == cc[VEOL2]))) {
			if (tty->line_len >= TTY_IN_SIZE || tty->nlines >= TTY_MAX_LINES ||
			    tty->in_len + tty->line_len + 1 > TTY_IN_SIZE)
				return false;
			tty->line[tty->line_len++] = c;
			commit_line(tty);
			if ((l & ECHO) || (c == '\n' && (l & ECHONL)))
				echo_char(tty, c);
			return true;
		}
		/* Linux keeps the last byte of a full line for the newline. */
		if (tty->line_len >= TTY_IN_SIZE - 1)
			return true;
		tty->line[tty->line_len++] = c;
		if (l & ECHO)
			echo_char(tty, c);
		return true;
	}
	if (tty->in_len >= TTY_IN_SIZE)
		return false;
	tty->in[tty->in_len++] = c;
	if (l & ECHO)
		echo_char(tty, c);
	return true;
}

/* Bytes a slave read can take now (canonical: a line; 0 with lines queued is an EOF). */
static bool slave_readable(const struct tty *tty)
{
	if (tty->termios.c_lflag & ICANON)
		return tty->nlines > 0;
	return tty->in_len > 0;
}

/* Moves to or from canonical mode with what is buffered (tty->lock held). */
static void set_termios(struct tty *tty, const struct linux_termios *nt)
{
	bool was = tty->termios.c_lflag & ICANON, now = nt->c_lflag & ICANON;
	const struct linux_termios *ot = &tty->termios;
	bool old_flow = (ot->c_iflag & IXON) && ot->c_cc[VSTOP] == 023 && ot->c_cc[VSTART] == 021;
	bool new_flow = (nt->c_iflag & IXON) && nt->c_cc[VSTOP] == 023 && nt->c_cc[VSTART] == 021;

	/* As Linux: a packet-mode master hears whether ^S/^Q flow control is on. */
	if (tty->packet && old_flow != new_flow) {
		tty->pktstatus &= ~(TIOCPKT_NOSTOP | TIOCPKT_DOSTOP);
		tty->pktstatus |= new_flow ? TIOCPKT_DOSTOP : TIOCPKT_NOSTOP;
	}

	if (was && !now) {
		/* Lines and the partial line become plain input. */
		size_t n = MIN(tty->line_len, TTY_IN_SIZE - tty->in_len);

		memcpy(tty->in + tty->in_len, tty->line, n);
		tty->in_len += n;
		tty->line_len = 0;
		tty->nlines = 0;
	} else if (!was && now) {
		/* Pending input is the start of the line being edited. */
		size_t n = MIN(tty->in_len, TTY_IN_SIZE - tty->line_len);

		memmove(tty->line + n, tty->line, tty->line_len);
		memcpy(tty->line, tty->in, n);
		tty->line_len += n;
		tty->in_len = 0;
		tty->nlines = 0;
	}
	tty->termios = *nt;
	tty->ispeed = tty->ospeed = baud_of(nt->c_cflag & CBAUD);
}

/* --- blocking --- */

struct tty_wait {
	struct tty *tty;
	bool (*ready)(struct tty *tty);
};

static bool tty_wait_cond(void *arg)
{
	struct tty_wait *w = arg;
	bool r;

	pthread_mutex_lock(&w->tty->lock);
	r = w->ready(w->tty);
	pthread_mutex_unlock(&w->tty->lock);
	return r;
}

/* Waits (interruptibly) until ready(tty) holds. Returns 0, -EAGAIN without a task, -ERESTARTSYS. */
static long tty_wait(struct tty *tty, bool (*ready)(struct tty *tty))
{
	struct task *t = task_current();
	struct waitq *wq = &tty->wq;
	struct tty_wait w = { tty, ready };

	if (!t)
		return -EAGAIN;
	return task_wait(t, &wq, 1, tty_wait_cond, &w, NULL, true);
}

static bool master_read_ready(struct tty *tty)
{
	return tty->out_len > 0 || (tty->slave_ever && tty->slave_opens == 0) ||
	       (tty->packet && tty->pktstatus);
}

static bool master_write_ready(struct tty *tty)
{
	/* Some room in what the line discipline fills. */
	return (tty->termios.c_lflag & ICANON) ?
		       tty->line_len < TTY_IN_SIZE - 1 || tty->nlines == 0 :
		       tty->in_len < TTY_IN_SIZE;
}

static bool slave_read_ready(struct tty *tty)
{
	return slave_readable(tty) || tty->master_closed;
}

static bool slave_write_ready(struct tty *tty)
{
	if (tty->stopped && !tty->master_closed)
		return false;
	return tty->out_len + 2 <= TTY_OUT_SIZE || tty->master_closed;
}

static size_t iov_len(const struct iovec *iov, int iovcnt)
{
	size_t n = 0;

	for (int i = 0; i < iovcnt; i++)
		n += iov[i].iov_len;
	return n;
}

/* Copies up to len bytes of src into iov at offset off. */
static void iov_put(const struct iovec *iov, int iovcnt, size_t off, const uint8_t *src, size_t len)
{
	for (int i = 0; i < iovcnt && len; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		size_t n = MIN(len, iov[i].iov_len - off);

		memcpy((uint8_t *)iov[i].iov_base + off, src, n);
		src += n;
		len -= n;
		off = 0;
	}
}

static uint8_t iov_byte(const struct iovec *iov, int iovcnt, size_t off)
{
	for (int i = 0; i < iovcnt; i++) {
		if (off < iov[i].iov_len)
			return ((const uint8_t *)iov[i].iov_base)[off];
		off -= iov[i].iov_len;
	}
	return 0;
}

/* --- the master --- */

static ssize_t master_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	struct tty *tty = f->priv;
	size_t want = iov_len(iov, iovcnt);

	if (!want)
		return 0;
	for (;;) {
		long err;

		pthread_mutex_lock(&tty->lock);
		/* Packet mode: a pending status byte alone, else TIOCPKT_DATA before the data. */
		if (tty->packet && tty->pktstatus) {
			uint8_t st = tty->pktstatus;

			tty->pktstatus = 0;
			pthread_mutex_unlock(&tty->lock);
			iov_put(iov, iovcnt, 0, &st, 1);
			return 1;
		}
		if (tty->out_len && tty->packet) {
			size_t n = MIN(want - 1, tty->out_len);
			uint8_t data = TIOCPKT_DATA;

			iov_put(iov, iovcnt, 0, &data, 1);
			iov_put(iov, iovcnt, 1, tty->out, n);
			memmove(tty->out, tty->out + n, tty->out_len - n);
			tty->out_len -= n;
			pthread_mutex_unlock(&tty->lock);
			waitq_wake_all(&tty->wq);
			return (ssize_t)n + 1;
		}
		if (tty->out_len) {
			size_t n = MIN(want, tty->out_len);

			iov_put(iov, iovcnt, 0, tty->out, n);
			memmove(tty->out, tty->out + n, tty->out_len - n);
			tty->out_len -= n;
			pthread_mutex_unlock(&tty->lock);
			waitq_wake_all(&tty->wq);
			return (ssize_t)n;
		}
		if (tty->slave_ever && tty->slave_opens == 0) {
			pthread_mutex_unlock(&tty->lock);
			return -EIO;
		}
		pthread_mutex_unlock(&tty->lock);
		if (__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_NONBLOCK)
			return -EAGAIN;
		err = tty_wait(tty, master_read_ready);
		if (err < 0)
			return err;
	}
}

static ssize_t master_write(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	struct tty *tty = f->priv;
	size_t len = iov_len(iov, iovcnt), done = 0;

	while (done < len) {
		int32_t pgrp;
		int sig;
		long err;

		pthread_mutex_lock(&tty->lock);
		while (done < len && ldisc_receive(tty, iov_byte(iov, iovcnt, done)))
			done++;
		sig = tty->sig;
		pgrp = tty->sig_pgrp;
		tty->sig = 0;
		pthread_mutex_unlock(&tty->lock);
		waitq_wake_all(&tty->wq);
		tty_flush_signal(tty, pgrp, sig);
		if (done == len)
			break;
		if (done || (__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_NONBLOCK))
			return done ? (ssize_t)done : -EAGAIN;
		err = tty_wait(tty, master_write_ready);
		if (err < 0)
			return err;
	}
	return (ssize_t)done;
}

static unsigned int master_poll(struct file *f, struct waitq **wq)
{
	struct tty *tty = f->priv;
	unsigned int ev = 0;

	if (wq)
		*wq = &tty->wq;
	pthread_mutex_lock(&tty->lock);
	if (tty->out_len)
		ev |= POLLIN | POLLRDNORM;
	if (tty->packet && tty->pktstatus)
		ev |= POLLPRI | POLLIN | POLLRDNORM;
	if (tty->slave_ever && tty->slave_opens == 0)
		ev |= POLLHUP | POLLIN;
	if (master_write_ready(tty))
		ev |= POLLOUT | POLLWRNORM;
	pthread_mutex_unlock(&tty->lock);
	return ev;
}

static void master_release(struct file *f)
{
	struct tty *tty = f->priv;
	int32_t pgrp;

	pthread_mutex_lock(&reg_lock);
	if (ttys[tty->index] == tty) {
		ttys[tty->index] = NULL;
		tty_put(tty); /* the registry's */
	}
	pthread_mutex_unlock(&reg_lock);
	pthread_mutex_lock(&tty->lock);
	tty->master_closed = true;
	pgrp = tty->session ? tty->pgrp : 0;
	tty->session = 0;
	pthread_mutex_unlock(&tty->lock);
	waitq_wake_all(&tty->wq);
	/* A hangup: the foreground group of the session it controlled gets SIGHUP and SIGCONT. */
	if (pgrp) {
		kill_pgrp(tty->k, pgrp, SIGHUP);
		kill_pgrp(tty->k, pgrp, SIGCONT);
	}
	tty_put(tty);
}

/* --- the slave --- */

/*
 * Job control for t touching its controlling terminal from a background group: sends sig to
 * its group and returns -ERESTARTSYS, -EIO when sig is ignored or blocked (reads), 0 when t may
 * go on.
 */
static long job_control(struct tty *tty, struct task *t, int sig, bool is_read)
{
	struct job_ids ids;
	int32_t session, pgrp;
	bool ignored;

	if (!t)
		return 0;
	task_job_ids(t, &ids);
	pthread_mutex_lock(&tty->lock);
	session = tty->session;
	pgrp = tty->pgrp;
	pthread_mutex_unlock(&tty->lock);
	if (!session || session != ids.sid || !pgrp || pgrp == ids.pgid)
		return 0;
	pthread_mutex_lock(&t->tg->sighand->lock);
	ignored = t->tg->sighand->actions[sig - 1].handler == (uint64_t)(uintptr_t)SIG_IGN ||
		  (t->sigmask & SIGBIT(sig));
	pthread_mutex_unlock(&t->tg->sighand->lock);
	if (ignored)
		return is_read ? -EIO : 0;
	kill_pgrp(t->k, ids.pgid, sig);
	return -ERESTARTSYS;
}

static ssize_t slave_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	struct tty *tty = f->priv;
	size_t want = iov_len(iov, iovcnt);
	long err = job_control(tty, task_current(), SIGTTIN, true);

	if (err < 0)
		return err;
	if (!want)
		return 0;
	for (;;) {
		pthread_mutex_lock(&tty->lock);
		if (tty->termios.c_lflag & ICANON) {
			if (tty->nlines) {
				size_t l = tty->lines[0], n = MIN(want, l);

				iov_put(iov, iovcnt, 0, tty->in, n);
				memmove(tty->in, tty->in + n, tty->in_len - n);
				tty->in_len -= n;
				if (n == l) {
					memmove(tty->lines, tty->lines + 1,
						(size_t)(tty->nlines - 1) * sizeof(tty->lines[0]));
					tty->nlines--;
				} else {
					tty->lines[0] -= (uint32_t)n;
				}
				pthread_mutex_unlock(&tty->lock);
				waitq_wake_all(&tty->wq);
				return (ssize_t)n; /* 0 for an end-of-file line */
			}
		} else if (tty->in_len) {
			size_t n = MIN(want, tty->in_len);

			iov_put(iov, iovcnt, 0, tty->in, n);
			memmove(tty->in, tty->in + n, tty->in_len - n);
			tty->in_len -= n;
			pthread_mutex_unlock(&tty->lock);
			waitq_wake_all(&tty->wq);
			return (ssize_t)n;
		} else if (tty->termios.c_cc[VMIN] == 0 && tty->termios.c_cc[VTIME] == 0) {
			pthread_mutex_unlock(&tty->lock);
			return 0; /* polling read */
		}
		if (tty->master_closed) {
			pthread_mutex_unlock(&tty->lock);
			return 0;
		}
		pthread_mutex_unlock(&tty->lock);
		if (__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_NONBLOCK)
			return -EAGAIN;
		err = tty_wait(tty, slave_read_ready);
		if (err < 0)
			return err;
	}
}

static ssize_t slave_write(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	struct tty *tty = f->priv;
	size_t len = iov_len(iov, iovcnt), done = 0;
	long err;

	pthread_mutex_lock(&tty->lock);
	bool tostop = tty->termios.c_lflag & TOSTOP;
	pthread_mutex_unlock(&tty->lock);
	if (tostop) {
		err = job_control(tty, task_current(), SIGTTOU, false);
		if (err < 0)
			return err;
	}
	while (done < len) {
		pthread_mutex_lock(&tty->lock);
		if (tty->master_closed) {
			pthread_mutex_unlock(&tty->lock);
			return done ? (ssize_t)done : -EIO;
		}
		while (done < len && out_put(tty, iov_byte(iov, iovcnt, done)))
			done++;
		pthread_mutex_unlock(&tty->lock);
		waitq_wake_all(&tty->wq);
		if (done == len)
			break;
		if (__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_NONBLOCK)
			return done ? (ssize_t)done : -EAGAIN;
		err = tty_wait(tty, slave_write_ready);
		if (err < 0)
			return done ? (ssize_t)done : err;
	}
	return (ssize_t)done;
}

static unsigned int slave_poll(struct file *f, struct waitq **wq)
{
	struct tty *tty = f->priv;
	unsigned int ev = 0;

	if (wq)
		*wq = &tty->wq;
	pthread_mutex_lock(&tty->lock);
	if (slave_readable(tty))
		ev |= POLLIN | POLLRDNORM;
	if (tty->master_closed)
		ev |= POLLHUP | POLLIN | POLLOUT;
	else if (slave_write_ready(tty))
		ev |= POLLOUT | POLLWRNORM;
	pthread_mutex_unlock(&tty->lock);
	return ev;
}

static void slave_release(struct file *f)
{
	struct tty *tty = f->priv;

	pthread_mutex_lock(&tty->lock);
	tty->slave_opens--;
	pthread_mutex_unlock(&tty->lock);
	waitq_wake_all(&tty->wq);
	tty_put(tty);
}

/* --- ioctls --- */

static long copy_out(struct task *t, uint64_t addr, const void *src, size_t len)
{
	if (!t || !t->mm)
		return -EFAULT;
	return mm_copy_out(t->mm, addr, src, len) == (ssize_t)len ? 0 : -EFAULT;
}

static long copy_in(struct task *t, void *dst, uint64_t addr, size_t len)
{
	if (!t || !t->mm)
		return -EFAULT;
	return mm_copy_in(t->mm, dst, addr, len) == (ssize_t)len ? 0 : -EFAULT;
}

/* Makes tty the controlling terminal of t's session (TIOCSCTTY, open without O_NOCTTY). */
static long tty_set_ctty(struct tty *tty, struct task *t, bool steal, bool quiet)
{
	struct job_ids ids;
	struct tty *cur;
	int32_t owner;

	task_job_ids(t, &ids);
	if (ids.pid != ids.sid)
		return quiet ? 0 : -EPERM;
	cur = ctty_of_session(t->k, ids.sid);
	if (cur) {
		tty_put(cur);
		return cur == tty ? 0 : quiet ? 0 : -EPERM;
	}
	pthread_mutex_lock(&tty->lock);
	owner = tty->session;
	pthread_mutex_unlock(&tty->lock);
	if (owner && kernel_session_alive(t->k, owner)) {
		if (quiet)
			return 0;
		if (!steal || !cred_capable(&t->cred, LINUX_CAP_SYS_ADMIN))
			return -EPERM;
	}
	pthread_mutex_lock(&tty->lock);
	tty->session = ids.sid;
	tty->pgrp = ids.pgid;
	if (!tty->k)
		tty->k = t->k;
	pthread_mutex_unlock(&tty->lock);
	return 0;
}

/* Whether tty is t's controlling terminal. */
static bool is_ctty(struct tty *tty, struct task *t)
{
	struct job_ids ids;
	bool r;

	task_job_ids(t, &ids);
	pthread_mutex_lock(&tty->lock);
	r = tty->session && tty->session == ids.sid;
	pthread_mutex_unlock(&tty->lock);
	return r;
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

static struct file *slave_file_for(struct tty *tty, int flags);
static void slave_file_set_path(struct file *f, uint32_t index);

static long tty_ioctl(struct file *f, struct task *t, unsigned int cmd, uint64_t arg, bool master)
{
	struct tty *tty = f->priv;
	struct linux_termios tm;
	struct linux_winsize ws;
	int32_t v;
	long err;

	switch (cmd) {
	/* As Linux, the master's termios calls act on the slave's termios. */
	case TCGETS:
	case LINUX_TCGETS2: {
		struct linux_termios2 tm2;

		pthread_mutex_lock(&tty->lock);
		tm = tty->termios;
		tm2.t = tty->termios;
		tm2.ispeed = tty->ispeed;
		tm2.ospeed = tty->ospeed;
		pthread_mutex_unlock(&tty->lock);
		if (cmd == TCGETS)
			return copy_out(t, arg, &tm, sizeof(tm));
		return copy_out(t, arg, &tm2, sizeof(tm2));
	}
	case TCSETS:
	case TCSETSW:
	case TCSETSF:
	case LINUX_TCSETS2:
	case LINUX_TCSETSW2:
	case LINUX_TCSETSF2: {
		bool two = cmd != TCSETS && cmd != TCSETSW && cmd != TCSETSF;
		struct linux_termios2 tm2;

		err = two ? copy_in(t, &tm2, arg, sizeof(tm2)) : copy_in(t, &tm, arg, sizeof(tm));
		if (err < 0)
			return err;
		if (two)
			tm = tm2.t;
		if (!master) {
			err = job_control(tty, t, SIGTTOU, false);
			if (err < 0)
				return err;
		}
		pthread_mutex_lock(&tty->lock);
		if (cmd == TCSETSF || cmd == LINUX_TCSETSF2)
			flush_input(tty);
		set_termios(tty, &tm);
		/* BOTHER: the speeds are the numbers given. */
		if (two && (tm.c_cflag & CBAUD) == BOTHER)
			tty->ispeed = tty->ospeed = tm2.ospeed;
		pthread_mutex_unlock(&tty->lock);
		waitq_wake_all(&tty->wq);
		return 0;
	}
	case TIOCPKT:
		if (!master)
			return -ENOTTY;
		err = copy_in(t, &v, arg, sizeof(v));
		if (err < 0)
			return err;
		pthread_mutex_lock(&tty->lock);
		if (v && !tty->packet)
			tty->pktstatus = 0;
		tty->packet = v != 0;
		pthread_mutex_unlock(&tty->lock);
		return 0;
	case TIOCGPKT:
		if (!master)
			return -ENOTTY;
		pthread_mutex_lock(&tty->lock);
		v = tty->packet;
		pthread_mutex_unlock(&tty->lock);
		return copy_out(t, arg, &v, sizeof(v));
	case TIOCGWINSZ:
		pthread_mutex_lock(&tty->lock);
		ws = tty->ws;
		pthread_mutex_unlock(&tty->lock);
		return copy_out(t, arg, &ws, sizeof(ws));
	case TIOCSWINSZ: {
		int32_t pgrp = 0;

		err = copy_in(t, &ws, arg, sizeof(ws));
		if (err < 0)
			return err;
		pthread_mutex_lock(&tty->lock);
		if (memcmp(&ws, &tty->ws, sizeof(ws)) != 0) {
			tty->ws = ws;
			pgrp = tty->pgrp;
		}
		pthread_mutex_unlock(&tty->lock);
		if (pgrp)
			kill_pgrp(tty->k ? tty->k : t->k, pgrp, SIGWINCH);
		return 0;
	}
	case FIONREAD: /* TIOCINQ */
		pthread_mutex_lock(&tty->lock);
		if (master)
			v = (int32_t)tty->out_len;
		else
			v = (tty->termios.c_lflag & ICANON) && tty->nlines ?
				    (int32_t)tty->lines[0] :
				    (int32_t)tty->in_len;
		pthread_mutex_unlock(&tty->lock);
		return copy_out(t, arg, &v, sizeof(v));
	case TIOCOUTQ:
		pthread_mutex_lock(&tty->lock);
		v = master ? (int32_t)tty->in_len : (int32_t)tty->out_len;
		pthread_mutex_unlock(&tty->lock);
		return copy_out(t, arg, &v, sizeof(v));
	case TCFLSH:
		if (arg > 2)
			return -EINVAL;
		pthread_mutex_lock(&tty->lock);
		/* TCIFLUSH 0, TCOFLUSH 1, TCIOFLUSH 2, as seen from the side asking. */
		if (arg == 0 || arg == 2) {
			if (master) {
				tty->out_len = 0;
			} else {
				flush_input(tty);
				if (tty->packet)
					tty->pktstatus |= TIOCPKT_FLUSHREAD;
			}
		}
		if (arg == 1 || arg == 2) {
			if (master) {
				flush_input(tty);
			} else {
				tty->out_len = 0;
				if (tty->packet)
					tty->pktstatus |= TIOCPKT_FLUSHWRITE;
			}
		}
		pthread_mutex_unlock(&tty->lock);
		waitq_wake_all(&tty->wq);
		return 0;
	case TCXONC:
		if (arg > TCION)
			return -EINVAL;
		/* The slave's output stops and starts (TCIOFF/TCION would send ^S/^Q: nothing). */
		if (master || arg > TCOON)
			return 0;
		pthread_mutex_lock(&tty->lock);
		if ((arg == TCOOFF) != tty->stopped) {
			tty->stopped = arg == TCOOFF;
			if (tty->packet) {
				tty->pktstatus &= ~(TIOCPKT_STOP | TIOCPKT_START);
				tty->pktstatus |= tty->stopped ? TIOCPKT_STOP : TIOCPKT_START;
			}
		}
		pthread_mutex_unlock(&tty->lock);
		waitq_wake_all(&tty->wq);
		return 0;
	case TCSBRK:
	case TIOCEXCL:
	case TIOCNXCL:
		return 0;
	case TIOCGPTN:
		if (!master)
			return -ENOTTY;
		v = (int32_t)tty->index;
		return copy_out(t, arg, &v, sizeof(v));
	case TIOCSPTLCK:
		if (!master)
			return -ENOTTY;
		err = copy_in(t, &v, arg, sizeof(v));
		if (err < 0)
			return err;
		pthread_mutex_lock(&tty->lock);
		tty->locked = v != 0;
		pthread_mutex_unlock(&tty->lock);
		return 0;
	case TIOCGPTLCK:
		if (!master)
			return -ENOTTY;
		pthread_mutex_lock(&tty->lock);
		v = tty->locked;
		pthread_mutex_unlock(&tty->lock);
		return copy_out(t, arg, &v, sizeof(v));
	case TIOCGPTPEER: {
		struct file *sf;
		uint64_t limit = t->tg->rlimits[RLIMIT_NOFILE].rlim_cur;
		int fd;

		if (!master)
			return -ENOTTY;
		/* As Linux: a locked pair has no peer to give. */
		pthread_mutex_lock(&tty->lock);
		bool locked = tty->locked;
		pthread_mutex_unlock(&tty->lock);
		if (locked)
			return -EIO;
		sf = slave_file_for(tty,
				    (int)(arg & (O_ACCMODE | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)));
		if (IS_ERR(sf))
			return PTR_ERR(sf);
		slave_file_set_path(sf, tty->index);
		fd = fdtable_install(t->fdt, sf, 0, arg & O_CLOEXEC,
				     limit > INT32_MAX ? INT32_MAX : (int)limit);
		file_put(sf);
		return fd;
	}
	case TIOCSCTTY:
		if (master)
			return -ENOTTY; /* Linux allows it on a master; nothing here needs it */
		return tty_set_ctty(tty, t, arg == 1, false);
	case TIOCNOTTY: {
		struct job_ids ids;
		int32_t pgrp;

		if (!is_ctty(tty, t))
			return -ENOTTY;
		task_job_ids(t, &ids);
		if (ids.pid != ids.sid)
			return 0; /* only the leader detaches the session here */
		pthread_mutex_lock(&tty->lock);
		pgrp = tty->pgrp;
		tty->session = tty->pgrp = 0;
		pthread_mutex_unlock(&tty->lock);
		kill_pgrp(t->k, pgrp, SIGHUP);
		kill_pgrp(t->k, pgrp, SIGCONT);
		return 0;
	}
	case TIOCGPGRP:
		if (master)
			return -ENOTTY;
		if (!is_ctty(tty, t))
			return -ENOTTY;
		pthread_mutex_lock(&tty->lock);
		v = tty->pgrp;
		pthread_mutex_unlock(&tty->lock);
		v = task_vnr(t, v); /* the caller's pid namespace's number (0: outside it) */
		return copy_out(t, arg, &v, sizeof(v));
	case TIOCSPGRP: {
		struct pgrp_find pf = { 0 };
		struct job_ids ids;

		if (master || !is_ctty(tty, t))
			return -ENOTTY;
		err = copy_in(t, &v, arg, sizeof(v));
		if (err < 0)
			return err;
		if (v < 0)
			return -EINVAL;
		/* The caller's number, as the sandbox's (none in its namespace: ESRCH). */
		if (v > 0 && !(v = task_global_nr(t, v)))
			return -ESRCH;
		err = job_control(tty, t, SIGTTOU, false);
		if (err < 0)
			return err;
		task_job_ids(t, &ids);
		pf.pgid = v;
		pf.sid = ids.sid;
		pthread_mutex_lock(&t->k->tree_lock);
		pid_for_each_tg(t->k, pgrp_find_one, &pf);
		pthread_mutex_unlock(&t->k->tree_lock);
		if (!pf.found)
			return pf.other_session ? -EPERM : -ESRCH;
		pthread_mutex_lock(&tty->lock);
		tty->pgrp = v;
		pthread_mutex_unlock(&tty->lock);
		return 0;
	}
	case TIOCGSID:
		if (master || !is_ctty(tty, t))
			return -ENOTTY;
		pthread_mutex_lock(&tty->lock);
		v = tty->session;
		pthread_mutex_unlock(&tty->lock);
		v = task_vnr(t, v);
		return copy_out(t, arg, &v, sizeof(v));
	case TIOCGDEV:
		v = (int32_t)vfs_mkdev(master ? PTMX_MAJOR : PTS_MAJOR,
				       master ? PTMX_MINOR : tty->index);
		return copy_out(t, arg, &v, sizeof(v));
	default:
		return -ENOTTY;
	}
}

static long master_ioctl(struct file *f, struct task *t, unsigned int cmd, uint64_t arg)
{
	return tty_ioctl(f, t, cmd, arg, true);
}

static long slave_ioctl(struct file *f, struct task *t, unsigned int cmd, uint64_t arg)
{
	return tty_ioctl(f, t, cmd, arg, false);
}

static const struct file_ops master_fops = {
	.read = master_read,
	.write = master_write,
	.ioctl = master_ioctl,
	.poll = master_poll,
	.release = master_release,
};

static const struct file_ops slave_fops = {
	.read = slave_read,
	.write = slave_write,
	.ioctl = slave_ioctl,
	.poll = slave_poll,
	.release = slave_release,
};

/* --- opening --- */

struct file *devpts_open_master(int flags)
{
	struct task *t = task_current();
	struct tty *tty = calloc(1, sizeof(*tty));
	struct file *f;
	uint32_t i;

	if (!tty)
		return ERR_PTR(-ENOMEM);
	refcount_init(&tty->ref, 2); /* the registry's and the master file's */
	pthread_mutex_init(&tty->lock, NULL);
	waitq_init(&tty->wq);
	termios_init(&tty->termios);
	tty->ispeed = tty->ospeed = 38400;
	tty->locked = true;
	tty->k = t ? t->k : NULL;
	f = file_alloc(&master_fops, flags & ~O_NOCTTY, tty);
	if (!f) {
		free(tty);
		return ERR_PTR(-ENOMEM);
	}
	pthread_mutex_lock(&reg_lock);
	for (i = 0; i < DEVPTS_MAX && ttys[i]; i++)
		;
	if (i == DEVPTS_MAX) {
		pthread_mutex_unlock(&reg_lock);
		refcount_dec(&tty->ref); /* the registry never got it */
		file_put(f);
		return ERR_PTR(-ENOSPC);
	}
	tty->index = i;
	ttys[i] = tty;
	pthread_mutex_unlock(&reg_lock);
	return f;
}

/* A slave file of tty (new reference on tty), applying the controlling-terminal rules. */
static struct file *slave_file_for(struct tty *tty, int flags)
{
	struct task *t = task_current();
	struct file *f;

	pthread_mutex_lock(&tty->lock);
	if (tty->master_closed) {
		pthread_mutex_unlock(&tty->lock);
		return ERR_PTR(-EIO);
	}
	tty->slave_opens++;
	tty->slave_ever = true;
	pthread_mutex_unlock(&tty->lock);
	refcount_inc(&tty->ref);
	f = file_alloc(&slave_fops, flags & ~O_NOCTTY, tty);
	if (!f) {
		pthread_mutex_lock(&tty->lock);
		tty->slave_opens--;
		pthread_mutex_unlock(&tty->lock);
		tty_put(tty);
		return ERR_PTR(-ENOMEM);
	}
	if (t && !(flags & O_NOCTTY))
		tty_set_ctty(tty, t, false, true);
	return f;
}

/* A new guest file of host terminal entry tty (no path: the caller gives it one). */
static struct file *host_open(struct tty *tty, int flags)
{
	struct task *t = task_current();
	struct file *f;
	int fd = fcntl(tty->host_fd, F_DUPFD_CLOEXEC, 10);

	if (fd < 0)
		return ERR_PTR(-errno);
	/* The guest's access mode and flags; the host fd's O_NONBLOCK is the sentry's. */
	f = hostfile_open(fd, flags & (O_ACCMODE | O_NONBLOCK | O_APPEND));
	if (!f) {
		close(fd);
		return ERR_PTR(-ENOMEM);
	}
	/* A session leader without a controlling terminal acquires it (hosttty.c's rules). */
	if (t && !(flags & O_NOCTTY)) {
		struct tty *own;
		struct job_ids ids;

		task_job_ids(t, &ids);
		own = ctty_of_session(t->k, ids.sid);
		if (own)
			tty_put(own);
		else
			hosttty_open_acquire(tty->host_fd, tty->host_rdev, t);
	}
	return f;
}

/* The entry of host terminal rdev (reg_lock held), or NULL. */
static struct tty *host_entry_find(dev_t rdev)
{
	for (uint32_t i = 0; i < DEVPTS_MAX; i++) {
		if (ttys[i] && ttys[i]->host && ttys[i]->host_rdev == rdev)
			return ttys[i];
	}
	return NULL;
}

/* Takes a hold on the entry of rdev (reg_lock held): a use, or its permanence. */
static int host_entry_hold(struct tty *tty, bool permanent)
{
	if (permanent)
		tty->host_permanent = true;
	else
		tty->host_users++;
	return (int)tty->index;
}

/* The entry of the host terminal hostfd, made when missing, with a hold on it. */
static int host_entry_get(int hostfd, bool permanent)
{
	struct tty *tty, *found;
	struct stat st;
	uint32_t i;
	int ret;

	if (fstat(hostfd, &st) < 0)
		return -errno;
	pthread_mutex_lock(&reg_lock);
	found = host_entry_find(st.st_rdev);
	ret = found ? host_entry_hold(found, permanent) : -ENOENT;
	pthread_mutex_unlock(&reg_lock);
	if (found)
		return ret;
	tty = calloc(1, sizeof(*tty));
	if (!tty)
		return -ENOMEM;
	refcount_init(&tty->ref, 1); /* the registry's, until the last hold goes */
	pthread_mutex_init(&tty->lock, NULL);
	waitq_init(&tty->wq);
	termios_init(&tty->termios);
	tty->host = true;
	tty->host_rdev = st.st_rdev;
	tty->host_fd = fcntl(hostfd, F_DUPFD_CLOEXEC, 10);
	if (tty->host_fd < 0) {
		ret = -errno;
		pthread_mutex_destroy(&tty->lock);
		free(tty);
		return ret;
	}
	pthread_mutex_lock(&reg_lock);
	/* Made meanwhile by another thread: that one. */
	found = host_entry_find(st.st_rdev);
	if (found) {
		ret = host_entry_hold(found, permanent);
	} else {
		for (i = 0; i < DEVPTS_MAX && ttys[i]; i++)
			;
		if (i < DEVPTS_MAX) {
			tty->index = i;
			ttys[i] = tty;
			ret = host_entry_hold(tty, permanent);
			tty = NULL;
		} else {
			ret = -ENOSPC;
		}
	}
	pthread_mutex_unlock(&reg_lock);
	tty_put(tty); /* not registered: freed, its fd closed */
	return ret;
}

int devpts_add_host(int hostfd)
{
	return host_entry_get(hostfd, true);
}

int devpts_host_hold(int hostfd)
{
	return host_entry_get(hostfd, false);
}

void devpts_host_release(dev_t rdev)
{
	struct tty *tty;

	pthread_mutex_lock(&reg_lock);
	tty = host_entry_find(rdev);
	if (tty && tty->host_users > 0 && --tty->host_users == 0 && !tty->host_permanent)
		ttys[tty->index] = NULL;
	else
		tty = NULL;
	pthread_mutex_unlock(&reg_lock);
	tty_put(tty); /* the registry's: the number is free again */
}

int devpts_host_index(dev_t rdev)
{
	struct tty *tty;
	int found;

	pthread_mutex_lock(&reg_lock);
	tty = host_entry_find(rdev);
	found = tty ? (int)tty->index : -1;
	pthread_mutex_unlock(&reg_lock);
	return found;
}

struct file *devpts_open_slave(uint32_t index, int flags)
{
	struct tty *tty = tty_lookup(index);
	struct file *f;
	bool locked;

	if (!tty)
		return ERR_PTR(-ENXIO);
	if (tty->host) {
		f = host_open(tty, flags);
		tty_put(tty);
		return f;
	}
	pthread_mutex_lock(&tty->lock);
	locked = tty->locked;
	pthread_mutex_unlock(&tty->lock);
	f = locked ? ERR_PTR(-EIO) : slave_file_for(tty, flags);
	tty_put(tty);
	return f;
}

struct file *devpts_open_ctty(int flags)
{
	struct task *t = task_current();
	struct tty *tty;
	struct job_ids ids;
	struct file *f;

	if (!t)
		return ERR_PTR(-ENXIO);
	task_job_ids(t, &ids);
	tty = ctty_of_session(t->k, ids.sid);
	if (!tty)
		return hosttty_open_ctty(t, flags); /* the caller's terminal (husk do), or ENXIO */
	f = slave_file_for(tty, flags | O_NOCTTY);
	tty_put(tty);
	return f;
}

/* --- the filesystem: / with ptmx and one node per pair --- */

struct devpts_node {
	struct vfs_node base;
	int64_t index; /* -1 the root, -2 ptmx, else a pair */
};

static struct timespec devpts_time;

static struct devpts_node *dn_of(struct vfs_node *n)
{
	return container_of(n, struct devpts_node, base);
}

static const struct vfs_node_ops devpts_node_ops;

static struct devpts_node *devpts_node_new(struct vfs_node *parent, const char *name, int64_t index)
{
	struct devpts_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	if (vfs_node_init(&n->base, &devpts_node_ops, parent->fs, parent, name,
			  index == -1 ? S_IFDIR : S_IFCHR) < 0) {
		free(n);
		return NULL;
	}
	n->index = index;
	return n;
}

static long parse_index(const char *name)
{
	long v = 0;

	if (!*name || (name[0] == '0' && name[1]) || strlen(name) > 5)
		return -1;
	for (const char *p = name; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (*p - '0');
	}
	return v;
}

static struct vfs_node *devpts_lookup(struct vfs_node *dir, const char *name)
{
	struct devpts_node *n;
	long i;

	if (!strcmp(name, "ptmx")) {
		n = devpts_node_new(dir, name, -2);
		return n ? &n->base : ERR_PTR(-ENOMEM);
	}
	i = parse_index(name);
	if (i < 0 || i >= DEVPTS_MAX)
		return ERR_PTR(-ENOENT);
	pthread_mutex_lock(&reg_lock);
	bool exists = ttys[i] != NULL;
	pthread_mutex_unlock(&reg_lock);
	if (!exists)
		return ERR_PTR(-ENOENT);
	n = devpts_node_new(dir, name, i);
	return n ? &n->base : ERR_PTR(-ENOMEM);
}

static int devpts_getattr(struct vfs_node *vn, struct vfs_attr *attr)
{
	struct devpts_node *n = dn_of(vn);

	*attr = (struct vfs_attr){
		.dev = vn->fs->dev,
		.ino = (uint64_t)(n->index + 3),
		.nlink = n->index == -1 ? 2 : 1,
		.blksize = 1024,
		.atime = devpts_time,
		.mtime = devpts_time,
		.ctime = devpts_time,
	};
	if (n->index == -1) {
		attr->mode = S_IFDIR | 0755;
	} else if (n->index == -2) {
		attr->mode = S_IFCHR | 0666;
		attr->rdev = vfs_mkdev(PTMX_MAJOR, PTMX_MINOR);
	} else {
		/* Linux gives the slave to its opener, group tty (5), mode 0620. */
		attr->mode = S_IFCHR | 0620;
		attr->gid = 5;
		attr->rdev = vfs_mkdev(PTS_MAJOR, (uint32_t)n->index);
		struct tty *tty = tty_lookup((uint32_t)n->index);
		struct stat st;

		if (!tty)
			return -ENOENT;
		/* A host terminal: its owner and mode, as the host's devpts shows them. */
		if (tty->host && fstat(tty->host_fd, &st) == 0) {
			attr->mode = S_IFCHR | (st.st_mode & 07777);
			attr->uid = st.st_uid;
			attr->gid = st.st_gid;
		}
		tty_put(tty);
	}
	return 0;
}

static struct file *devpts_open(struct vfs_node *vn, int flags)
{
	struct devpts_node *n = dn_of(vn);

	if (n->index == -1)
		return ERR_PTR(-EISDIR);
	if (n->index == -2)
		return devpts_open_master(flags);
	return devpts_open_slave((uint32_t)n->index, flags);
}

static int devpts_iterate(struct vfs_node *dir, int64_t *pos, struct dir_emitter *e)
{
	/* Positions: 0 ".", 1 "..", 2 "ptmx", 3 + i pair i. */
	while (*pos >= 0 && *pos < 3) {
		bool ok = *pos == 0 ? e->emit(e, ".", 1, 2, DT_DIR, 1) :
			  *pos == 1 ? e->emit(e, "..", 2, 2, DT_DIR, 2) :
				      e->emit(e, "ptmx", 4, 1, DT_CHR, 3);

		if (!ok)
			return 0;
		(*pos)++;
	}
	for (int64_t i = *pos - 3; i >= 0 && i < DEVPTS_MAX; i++) {
		char name[16];
		bool exists;
		int len;

		pthread_mutex_lock(&reg_lock);
		exists = ttys[i] != NULL;
		pthread_mutex_unlock(&reg_lock);
		*pos = i + 3;
		if (!exists)
			continue;
		len = snprintf(name, sizeof(name), "%d", (int)i);
		if (!e->emit(e, name, (size_t)len, (uint64_t)i + 3, DT_CHR, i + 4))
			return 0;
	}
	*pos = DEVPTS_MAX + 3;
	return 0;
}

static int devpts_statfs(struct vfs_node *n, struct linux_statfs *st)
{
	memset(st, 0, sizeof(*st));
	st->f_type = DEVPTS_SUPER_MAGIC;
	st->f_bsize = 4096;
	st->f_frsize = 4096;
	st->f_namelen = VFS_NAME_MAX;
	return 0;
}

static void devpts_release_node(struct vfs_node *n)
{
	free(dn_of(n));
}

static const struct vfs_node_ops devpts_node_ops = {
	.lookup = devpts_lookup,
	.getattr = devpts_getattr,
	.open = devpts_open,
	.iterate = devpts_iterate,
	.statfs = devpts_statfs,
	.release = devpts_release_node,
};

static void devpts_release(struct vfs_fs *fs)
{
	vfs_node_put(fs->root);
	free(fs);
}

static void devpts_mounted(struct vfs_fs *fs, struct vfs_mount *m);

static const struct vfs_fs_ops devpts_fs_ops = {
	.release = devpts_release,
	.mounted = devpts_mounted,
};

struct vfs_fs *devpts_create(void)
{
	struct vfs_fs *fs = calloc(1, sizeof(*fs));
	struct devpts_node *root = calloc(1, sizeof(*root));

	if (!fs || !root) {
		free(fs);
		free(root);
		return NULL;
	}
	vfs_fs_init(fs, &devpts_fs_ops, "devpts");
	clock_gettime(CLOCK_REALTIME, &devpts_time);
	if (vfs_node_init(&root->base, &devpts_node_ops, fs, NULL, "", S_IFDIR) < 0) {
		free(root);
		free(fs);
		return NULL;
	}
	root->index = -1;
	fs->root = &root->base;
	return fs;
}

/* /dev/pts/N in the first devpts mounted: *m and *n referenced. Returns 0 or -errno. */
static int entry_path(uint32_t index, struct vfs_mount **mp, struct vfs_node **np)
{
	struct vfs_mount *m;
	struct vfs_node *n;
	char name[16];

	pthread_mutex_lock(&reg_lock);
	m = devpts_mnt;
	if (m)
		vfs_mount_get(m);
	pthread_mutex_unlock(&reg_lock);
	if (!m)
		return -ENOENT;
	snprintf(name, sizeof(name), "%u", index);
	n = devpts_lookup(m->root, name);
	if (IS_ERR(n)) {
		vfs_mount_put(m);
		return (int)PTR_ERR(n);
	}
	*mp = m;
	*np = n;
	return 0;
}

/* Gives a slave file made by TIOCGPTPEER its path /dev/pts/N (for ttyname(3)). */
static void slave_file_set_path(struct file *f, uint32_t index)
{
	struct vfs_mount *m;
	struct vfs_node *n;

	if (entry_path(index, &m, &n) < 0)
		return;
	f->mnt = m;
	f->node = n;
}

int devpts_host_path(dev_t rdev, struct vfs_mount **m, struct vfs_node **n)
{
	int index = devpts_host_index(rdev);

	return index < 0 ? -ENOENT : entry_path((uint32_t)index, m, n);
}

/* The first devpts attached anywhere (vfs_mount_devpts, a config's devpts mount) is where
 * /dev/pts/N of TIOCGPTPEER and of the host terminals lead; a bind of a node of it is not. */
static void devpts_mounted(struct vfs_fs *fs, struct vfs_mount *m)
{
	if (m->root != fs->root)
		return;
	pthread_mutex_lock(&reg_lock);
	if (!devpts_mnt) {
		vfs_mount_get(m);
		devpts_mnt = m;
	}
	pthread_mutex_unlock(&reg_lock);
}

int vfs_mount_devpts(struct kernel *k)
{
	struct vfs_path root;
	struct vfs_path dev, pts;
	struct vfs_mount *m;
	struct vfs_fs *fs;
	int err;

	vfs_kernel_root(k, &root);
	if (!root.mnt)
		return -EINVAL;
	vfs_path_copy(&root, &root);
	vfs_path_follow_mounts(&root);
	err = vfs_lookup_one(&root, "dev", &dev);
	vfs_path_put(&root);
	if (err < 0)
		return err == -ENOENT ? 0 : err;
	err = vfs_lookup_one(&dev, "pts", &pts);
	vfs_path_put(&dev);
	if (err < 0)
		return err == -ENOENT ? 0 : err;
	fs = devpts_create();
	if (!fs) {
		vfs_path_put(&pts);
		return -ENOMEM;
	}
	m = vfs_mount_create(fs, fs->root, MS_NOSUID | MS_NOEXEC);
	vfs_fs_put(fs);
	if (!m) {
		vfs_path_put(&pts);
		return -ENOMEM;
	}
	err = vfs_mount_attach(m, &pts);
	vfs_path_put(&pts);
	/* The tree holds it now (and devpts_mounted, when it is the first). */
	vfs_mount_put(m);
	return err;
}
