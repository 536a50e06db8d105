/* SPDX-License-Identifier: Apache-2.0 */
/*
 * poll(2), ppoll(2), select(2), pselect6(2): one engine over the files' poll ops. A task waits
 * on the wait queues every polled file gives, and rescans when any is woken.
 */
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/fs/anon/anon.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/waitq.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/handlers.h"
#include "syscalls/sys_poll.h"

#define NSEC_PER_SEC 1000000000L

unsigned int file_poll(struct file *f, struct waitq **wq)
{
	if (!f->ops || !f->ops->poll) {
		if (wq)
			*wq = NULL;
		return POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM;
	}
	return f->ops->poll(f, wq);
}

struct poll_entry {
	struct file *f; /* referenced, or NULL (negative fd, or bad fd: POLLNVAL) */
	int fd;
	short events;
	short revents;
};

struct poll_set {
	struct poll_entry *e;
	int n;
	int ready; /* poll_any_ready: how many entries its last scan found ready */
};

/* Scans every entry; returns how many have revents. */
static int poll_scan(struct poll_set *s)
{
	int ready = 0;

	for (int i = 0; i < s->n; i++) {
		struct poll_entry *e = &s->e[i];
		unsigned int mask;

		e->revents = 0;
		if (e->fd < 0)
			continue;
		if (!e->f) {
			e->revents = POLLNVAL;
			ready++;
			continue;
		}
		mask = file_poll(e->f, NULL);
		e->revents = (short)(mask & ((unsigned short)e->events | POLLERR | POLLHUP));
		if (e->revents)
			ready++;
	}
	return ready;
}

static bool poll_any_ready(void *arg)
{
	struct poll_set *s = arg;

	s->ready = poll_scan(s);
	return s->ready > 0;
}

/*
 * Polls s until something is ready, the deadline passes (NULL: never) or a signal comes. The
 * wait is on every file's queues (an epoll file's include its items', so a nested epoll wakes
 * it); task_wait rechecks readiness after registering, so nothing between is lost.
 */
static long poll_wait(struct task *t, struct poll_set *s, const struct timespec *deadline,
		      bool nowait)
{
	struct poll_queues q = { 0 };
	int ready;
	long r;

	for (;;) {
		ready = poll_scan(s);
		if (ready || nowait)
			break;
		for (int i = 0; i < s->n; i++) {
			if (s->e[i].f && poll_queues_add_file(&q, s->e[i].f) < 0) {
				poll_queues_free(&q);
				return -ENOMEM;
			}
		}
		r = task_wait(t, q.wqs, q.n, poll_any_ready, s, deadline, true);
		poll_queues_reset(&q);
		/* The scan that ended the wait has the revents: scanning again could miss an event
		 * that a file's poll reports once (mountinfo's POLLPRI, Linux's mounts_poll). */
		if (r == 0 && s->ready > 0) {
			ready = s->ready;
			break;
		}
		if (r == -ETIMEDOUT) {
			ready = poll_scan(s);
			break;
		}
		if (r < 0) {
			poll_queues_free(&q);
			return r;
		}
	}
	poll_queues_free(&q);
	return ready;
}

static void poll_set_release(struct poll_set *s)
{
	for (int i = 0; i < s->n; i++)
		file_put(s->e[i].f);
	free(s->e);
}

/* Absolute CLOCK_MONOTONIC deadline from a relative timespec. */
struct timespec poll_deadline_after(struct timespec rel)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (rel.tv_sec > INT32_MAX)
		rel.tv_sec = INT32_MAX; /* 68 years */
	now.tv_sec += rel.tv_sec;
	now.tv_nsec += rel.tv_nsec;
	if (now.tv_nsec >= NSEC_PER_SEC) {
		now.tv_sec++;
		now.tv_nsec -= NSEC_PER_SEC;
	}
	return now;
}

/* Time left until deadline (zero once passed). */
static struct timespec time_left(const struct timespec *deadline)
{
	struct timespec now, r;

	clock_gettime(CLOCK_MONOTONIC, &now);
	r.tv_sec = deadline->tv_sec - now.tv_sec;
	r.tv_nsec = deadline->tv_nsec - now.tv_nsec;
	if (r.tv_nsec < 0) {
		r.tv_sec--;
		r.tv_nsec += NSEC_PER_SEC;
	}
	if (r.tv_sec < 0)
		r.tv_sec = r.tv_nsec = 0;
	return r;
}

/* The common part of poll and ppoll; deadline NULL: no timeout. */
static long do_poll(struct task *t, uint64_t ufds, uint64_t nfds, const struct timespec *deadline,
		    bool nowait)
{
	struct poll_set s = { 0 };
	struct pollfd *pfd;
	long ret;

	if (nfds > (uint64_t)task_nofile_limit(t) || nfds > 1u << 20)
		return -EINVAL;
	s.n = (int)nfds;
	pfd = calloc(nfds + 1, sizeof(*pfd));
	s.e = calloc(nfds + 1, sizeof(*s.e));
	if (!pfd || !s.e) {
		free(pfd);
		free(s.e);
		return -ENOMEM;
	}
	if (nfds &&
	    mm_copy_in(t->mm, pfd, ufds, nfds * sizeof(*pfd)) != (ssize_t)(nfds * sizeof(*pfd))) {
		free(pfd);
		free(s.e);
		return -EFAULT;
	}
	for (int i = 0; i < s.n; i++) {
		s.e[i].fd = pfd[i].fd;
		s.e[i].events = pfd[i].events;
		if (pfd[i].fd >= 0)
			s.e[i].f = fdtable_lookup(t->fdt, pfd[i].fd);
	}
	ret = poll_wait(t, &s, deadline, nowait);
	if (ret >= 0) {
		for (int i = 0; i < s.n; i++)
			pfd[i].revents = s.e[i].revents;
		/* Linux writes each revents back; only the revents fields change. */
		if (nfds && mm_copy_out(t->mm, ufds, pfd, nfds * sizeof(*pfd)) !=
				    (ssize_t)(nfds * sizeof(*pfd)))
			ret = -EFAULT;
	}
	poll_set_release(&s);
	free(pfd);
	return ret;
}

void restart_deadline_shift(struct task *t, int64_t d)
{
	/* Deadlines on the host's CLOCK_MONOTONIC; UINT64_MAX is none. Wraps, never overflows. */
	if (t->restart_fn == futex_wait_restart && t->restart_data[3] != UINT64_MAX)
		t->restart_data[3] += (uint64_t)d;
	else if (t->restart_fn == poll_restart && t->restart_data[2] != UINT64_MAX)
		t->restart_data[2] += (uint64_t)d;
}

/* poll's restart block: ufds, nfds, deadline (ns, or UINT64_MAX: none). */
long poll_restart(struct task *t)
{
	uint64_t dl = t->restart_data[2];
	struct timespec deadline = { (time_t)(dl / NSEC_PER_SEC), (long)(dl % NSEC_PER_SEC) };
	long ret;

	t->restart_fn = NULL;
	ret = do_poll(t, t->restart_data[0], t->restart_data[1],
		      dl == UINT64_MAX ? NULL : &deadline, false);
	if (ret == -ERESTARTSYS) {
		t->restart_fn = poll_restart;
		ret = -ERESTART_RESTARTBLOCK;
	}
	return ret;
}

/* poll(2) */
long sys_poll(struct task *t, const struct syscall_args *args)
{
	int timeout = (int)args->a[2];
	struct timespec deadline;
	long ret;

	if (timeout > 0)
		deadline = poll_deadline_after(
			(struct timespec){ timeout / 1000, (timeout % 1000) * 1000000L });
	ret = do_poll(t, args->a[0], args->a[1], timeout > 0 ? &deadline : NULL, timeout == 0);
	if (ret == -ERESTARTSYS) {
		t->restart_data[0] = args->a[0];
		t->restart_data[1] = args->a[1];
		t->restart_data[2] = timeout > 0 ? (uint64_t)deadline.tv_sec * NSEC_PER_SEC +
							   (uint64_t)deadline.tv_nsec :
						   UINT64_MAX;
		t->restart_fn = poll_restart;
		ret = -ERESTART_RESTARTBLOCK;
	}
	return ret;
}

/*
 * Installs a temporary signal mask for ppoll/pselect6 from guest address addr (size must be
 * 8). Returns 1 if one was installed, 0 if addr is 0, or -errno.
 */
int poll_sigmask_push(struct task *t, uint64_t addr, uint64_t size)
{
	uint64_t mask;

	if (!addr)
		return 0;
	if (size != sizeof(mask))
		return -EINVAL;
	if (mm_copy_in(t->mm, &mask, addr, sizeof(mask)) != sizeof(mask))
		return -EFAULT;
	t->saved_sigmask = t->sigmask;
	t->sigmask = mask & ~(SIGBIT(9) | SIGBIT(19)); /* SIGKILL and SIGSTOP stay unblocked */
	return 1;
}

/*
 * After the wait: an interrupted call keeps the temporary mask until the handler has run
 * (signal delivery restores saved_sigmask); any other result restores it now.
 */
void poll_sigmask_pop(struct task *t, int pushed, long ret)
{
	if (pushed <= 0)
		return;
	if (ret == -ERESTARTNOHAND || ret == -EINTR)
		t->restore_sigmask = true;
	else
		t->sigmask = t->saved_sigmask;
}

static int read_timespec(struct task *t, uint64_t addr, struct timespec *ts)
{
	int64_t v[2];

	if (mm_copy_in(t->mm, v, addr, sizeof(v)) != sizeof(v))
		return -EFAULT;
	if (v[0] < 0 || v[1] < 0 || v[1] >= NSEC_PER_SEC)
		return -EINVAL;
	ts->tv_sec = v[0];
	ts->tv_nsec = v[1];
	return 0;
}

static void write_timespec_left(struct task *t, uint64_t addr, const struct timespec *deadline)
{
	struct timespec left = time_left(deadline);
	int64_t v[2] = { left.tv_sec, left.tv_nsec };

	/* Linux ignores a fault here: the result of the call stands. */
	mm_copy_out(t->mm, addr, v, sizeof(v));
}

/* ppoll(2): the remaining time is written back, as Linux does. */
long sys_ppoll(struct task *t, const struct syscall_args *args)
{
	struct timespec rel, deadline;
	bool has_timeout = args->a[2] != 0, nowait = false;
	int pushed;
	long ret;

	if (has_timeout) {
		ret = read_timespec(t, args->a[2], &rel);
		if (ret < 0)
			return ret;
		nowait = rel.tv_sec == 0 && rel.tv_nsec == 0;
		deadline = poll_deadline_after(rel);
	}
	pushed = poll_sigmask_push(t, args->a[3], args->a[4]);
	if (pushed < 0)
		return pushed;
	ret = do_poll(t, args->a[0], args->a[1], has_timeout ? &deadline : NULL, nowait);
	if (ret == -ERESTARTSYS)
		ret = -ERESTARTNOHAND;
	poll_sigmask_pop(t, pushed, ret);
	if (has_timeout && !nowait)
		write_timespec_left(t, args->a[2], &deadline);
	return ret;
}

#define POLLIN_SET (POLLRDNORM | POLLRDBAND | POLLIN | POLLHUP | POLLERR)
#define POLLOUT_SET (POLLWRBAND | POLLWRNORM | POLLOUT | POLLERR)
#define POLLEX_SET (POLLPRI)

/* select's core: n fds, three optional guest fd_sets, deadline NULL: none. */
static long do_select(struct task *t, int n, uint64_t inp, uint64_t outp, uint64_t exp,
		      const struct timespec *deadline, bool nowait)
{
	size_t words, bytes;
	uint64_t *in = NULL, *out = NULL, *ex = NULL, *res;
	uint64_t addrs[3] = { inp, outp, exp };
	uint64_t **sets[3] = { &in, &out, &ex };
	struct poll_set s = { 0 };
	long ret;
	int k = 0;

	if (n < 0)
		return -EINVAL;
	if (n > task_nofile_limit(t))
		n = task_nofile_limit(t);
	if (n > 1 << 20)
		return -EINVAL;
	words = ((size_t)n + 63) / 64;
	bytes = words * 8;
	res = calloc(3 * words + 1, sizeof(uint64_t));
	if (!res)
		return -ENOMEM;
	for (int i = 0; i < 3; i++) {
		if (!addrs[i])
			continue;
		*sets[i] = calloc(words + 1, sizeof(uint64_t));
		if (!*sets[i]) {
			ret = -ENOMEM;
			goto out;
		}
		/* Bits past n in the last byte are ignored. */
		if (bytes && mm_copy_in(t->mm, *sets[i], addrs[i], (n + 7) / 8) != (n + 7) / 8) {
			ret = -EFAULT;
			goto out;
		}
	}
	s.e = calloc((size_t)n + 1, sizeof(*s.e));
	if (!s.e) {
		ret = -ENOMEM;
		goto out;
	}
	for (int fd = 0; fd < n; fd++) {
		uint64_t bit = 1ULL << (fd % 64);
		short ev = 0;

		if (in && (in[fd / 64] & bit))
			ev |= POLLIN_SET;
		if (out && (out[fd / 64] & bit))
			ev |= POLLOUT_SET;
		if (ex && (ex[fd / 64] & bit))
			ev |= POLLEX_SET;
		if (!ev)
			continue;
		s.e[k].fd = fd;
		s.e[k].events = ev;
		s.e[k].f = fdtable_lookup(t->fdt, fd);
		if (!s.e[k].f) {
			s.n = k;
			ret = -EBADF;
			goto out;
		}
		k++;
	}
	s.n = k;
	ret = poll_wait(t, &s, deadline, nowait);
	if (ret < 0)
		goto out;
	ret = 0;
	for (int i = 0; i < s.n; i++) {
		struct poll_entry *e = &s.e[i];
		uint64_t bit = 1ULL << (e->fd % 64);
		/* select counts POLLHUP/POLLERR as readable, POLLERR as writable. */
		unsigned int m = (unsigned short)e->revents;

		if (in && (in[e->fd / 64] & bit) && (m & POLLIN_SET)) {
			res[e->fd / 64] |= bit;
			ret++;
		}
		if (out && (out[e->fd / 64] & bit) && (m & POLLOUT_SET)) {
			res[words + e->fd / 64] |= bit;
			ret++;
		}
		if (ex && (ex[e->fd / 64] & bit) && (m & POLLEX_SET)) {
			res[2 * words + e->fd / 64] |= bit;
			ret++;
		}
	}
	for (int i = 0; i < 3; i++) {
		if (addrs[i] && bytes &&
		    mm_copy_out(t->mm, addrs[i], res + i * words, (n + 7) / 8) != (n + 7) / 8) {
			ret = -EFAULT;
			break;
		}
	}
out:
	poll_set_release(&s);
	free(in);
	free(out);
	free(ex);
	free(res);
	return ret;
}

/* select(2): the timeval is updated with the time left, as Linux does. */
long sys_select(struct task *t, const struct syscall_args *args)
{
	struct timespec deadline;
	bool has_timeout = args->a[4] != 0, nowait = false;
	int64_t tv[2];
	long ret;

	if (has_timeout) {
		if (mm_copy_in(t->mm, tv, args->a[4], sizeof(tv)) != sizeof(tv))
			return -EFAULT;
		if (tv[0] < 0 || tv[1] < 0)
			return -EINVAL;
		/* Linux normalises large tv_usec values rather than refusing them. */
		tv[0] += tv[1] / 1000000;
		tv[1] %= 1000000;
		nowait = tv[0] == 0 && tv[1] == 0;
		deadline = poll_deadline_after((struct timespec){ tv[0], tv[1] * 1000 });
	}
	ret = do_select(t, (int)args->a[0], args->a[1], args->a[2], args->a[3],
			has_timeout ? &deadline : NULL, nowait);
	if (ret == -ERESTARTSYS)
		ret = -ERESTARTNOHAND;
	if (has_timeout && !nowait) {
		struct timespec left = time_left(&deadline);

		tv[0] = left.tv_sec;
		tv[1] = left.tv_nsec / 1000;
		mm_copy_out(t->mm, args->a[4], tv, sizeof(tv));
	}
	return ret;
}

/* pselect6(2): the sixth argument is { const sigset_t *ss; size_t ss_len; }. */
long sys_pselect6(struct task *t, const struct syscall_args *args)
{
	struct timespec rel, deadline;
	bool has_timeout = args->a[4] != 0, nowait = false;
	uint64_t sig[2] = { 0, 0 };
	int pushed = 0;
	long ret;

	if (has_timeout) {
		ret = read_timespec(t, args->a[4], &rel);
		if (ret < 0)
			return ret;
		nowait = rel.tv_sec == 0 && rel.tv_nsec == 0;
		deadline = poll_deadline_after(rel);
	}
	if (args->a[5]) {
		if (mm_copy_in(t->mm, sig, args->a[5], sizeof(sig)) != sizeof(sig))
			return -EFAULT;
		pushed = poll_sigmask_push(t, sig[0], sig[1]);
		if (pushed < 0)
			return pushed;
	}
	ret = do_select(t, (int)args->a[0], args->a[1], args->a[2], args->a[3],
			has_timeout ? &deadline : NULL, nowait);
	if (ret == -ERESTARTSYS)
		ret = -ERESTARTNOHAND;
	poll_sigmask_pop(t, pushed, ret);
	if (has_timeout && !nowait)
		write_timespec_left(t, args->a[4], &deadline);
	return ret;
}
