/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Linux AIO: io_setup(2), io_destroy(2), io_submit(2), io_getevents(2), io_pgetevents(2),
 * io_cancel(2).
 *
 * Model: a context belongs to an address space (struct mm; it goes with it, through
 * mm_release_hook) and owns a ring mapped in the guest at the context's id, laid out as Linux's
 * struct aio_ring (header, then io_event slots), so that libaio's user-space check of the ring
 * sees what Linux would show. Requests run to completion inside io_submit through the ordinary
 * pread/pwrite/preadv/pwritev/fsync handlers (Linux also completes buffered I/O there), and their
 * events are written to the ring's tail; io_getevents takes them from its head. io_cancel finds
 * none of those (-EINVAL, as Linux for a finished request).
 *
 * IOCB_CMD_POLL is the one request left in flight: ready at submission, it completes there;
 * otherwise it waits (struct aio_poll, on its context's list) with a waitq_callback on the file's
 * poll wait queue. The callback runs under the waker's locks: it only queues the request for the
 * poll worker thread, which polls the file with no lock held and, once an asked event is ready,
 * completes it: the event into the ring (through the context's mm, which the context never
 * outlives: the mm's release hook ends every pending poll first), a wake of io_getevents, the
 * RESFD eventfd. io_cancel completes a pending poll with res 0 (-EINPROGRESS, as Linux);
 * io_destroy and the mm's end drop them without an event.
 *
 * Locks: aio_lock (the context list and the aio-nr total), then a context's lock (its ring, its
 * pending polls), then a file's poll wait queue (adding and removing the callback), then the
 * worker's queue lock (a leaf, taken by the callback). The context's wait queue and the eventfd
 * are woken with no lock held.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/cpus.h"
#include "common/list.h"
#include "common/refcount.h"
#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/fs/anon/anon.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/waitq.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/handlers.h"
#include "syscalls/sys_poll.h"

#define AIO_RING_MAGIC 0xa10a10a1
#define AIO_RING_HDR 32 /* sizeof(struct aio_ring) */
#define IO_EVENT_SIZE 32
#define AIO_MAX_NR 65536 /* fs.aio-max-nr's default */
#define IOCB_CMD_PREAD 0
#define IOCB_CMD_PWRITE 1
#define IOCB_CMD_FSYNC 2
#define IOCB_CMD_FDSYNC 3
#define IOCB_CMD_POLL 5
#define IOCB_CMD_PREADV 7
#define IOCB_CMD_PWRITEV 8
#define IOCB_FLAG_RESFD 1
#define RWF_KNOWN 0x1fU
#define KIOCB_KEY 0

/* struct iocb (x86-64, little endian). */
struct linux_iocb {
	uint64_t aio_data;
	uint32_t aio_key;
	uint32_t aio_rw_flags;
	uint16_t aio_lio_opcode;
	int16_t aio_reqprio;
	uint32_t aio_fildes;
	uint64_t aio_buf;
	uint64_t aio_nbytes;
	int64_t aio_offset;
	uint64_t aio_reserved2;
	uint32_t aio_flags;
	uint32_t aio_resfd;
};

struct linux_io_event {
	uint64_t data;
	uint64_t obj;
	int64_t res;
	int64_t res2;
};

struct aio_ctx {
	struct refcount ref;
	struct list_head link; /* in aio_ctxs (aio_lock) */
	struct mm *mm; /* not referenced: the context goes when the mm does */
	uint64_t id; /* the ring's guest address */
	uint64_t ring_len;
	uint32_t nr; /* ring slots; one stays empty */
	uint32_t max_reqs; /* what io_setup asked for (aio-nr) */
	bool dead; /* aio_lock, atomic: io_destroy'ed or its mm gone */
	pthread_mutex_t lock; /* the ring's head and tail, polls */
	struct waitq wq; /* woken when events are added */
	struct list_head polls; /* of aio_poll.link: pending polls (lock) */
	uint32_t npending; /* lock: their number (each keeps a slot of the ring) */
};

/*
 * A pending IOCB_CMD_POLL (Linux's poll_iocb). References: the context's list (until it is
 * done), the worker's queue while queued, and whoever is completing it.
 */
struct aio_poll {
	struct refcount ref;
	struct list_head link; /* c->polls (c->lock) while pending */
	struct aio_ctx *c; /* a reference */
	struct file *f, *resfd; /* references; resfd may be NULL */
	struct waitq *wq; /* f's poll wait queue, NULL if it has none */
	struct waitq_callback cb; /* on wq while pending (added and removed under c->lock) */
	uint64_t data, obj;
	unsigned int events; /* asked, with POLLERR and POLLHUP */
	bool done; /* c->lock */
	bool queued; /* poll_queue_lock */
	struct aio_poll *next; /* the worker's queue (poll_queue_lock) */
};

static pthread_mutex_t aio_lock = PTHREAD_MUTEX_INITIALIZER;
static struct list_head aio_ctxs = LIST_HEAD_INIT(aio_ctxs);
static uint64_t aio_nr; /* aio_lock */

static void ctx_put(struct aio_ctx *c)
{
	if (!refcount_dec(&c->ref))
		return;
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static void polls_drop(struct aio_ctx *c);

/* The mm's contexts go with it (mm_release_hook), their pending polls first. */
static void aio_mm_release(struct mm *mm)
{
	struct list_head gone = LIST_HEAD_INIT(gone);
	struct aio_ctx *c, *tmp;

	pthread_mutex_lock(&aio_lock);
	list_for_each_entry_safe(c, tmp, &aio_ctxs, link) {
		if (c->mm != mm)
			continue;
		list_del(&c->link);
		__atomic_store_n(&c->dead, true, __ATOMIC_RELAXED);
		aio_nr -= c->max_reqs;
		list_add_tail(&c->link, &gone);
	}
	pthread_mutex_unlock(&aio_lock);
	/* Outside aio_lock: dropping a poll puts its files. */
	list_for_each_entry_safe(c, tmp, &gone, link) {
		polls_drop(c);
		ctx_put(c);
	}
}

/* The live context id of t's address space (a new reference), or NULL. */
static struct aio_ctx *ctx_lookup(struct task *t, uint64_t id)
{
	struct aio_ctx *c;

	pthread_mutex_lock(&aio_lock);
	list_for_each_entry(c, &aio_ctxs, link) {
		if (c->mm == t->mm && c->id == id && !c->dead) {
			refcount_inc(&c->ref);
			pthread_mutex_unlock(&aio_lock);
			return c;
		}
	}
	pthread_mutex_unlock(&aio_lock);
	return NULL;
}

/* Reads head and tail (c->lock held); the guest may have written them: they are reduced. */
static int ring_read(struct aio_ctx *c, uint32_t *head, uint32_t *tail)
{
	uint32_t ht[2];

	if (mm_copy_in(c->mm, ht, c->id + 8, sizeof(ht)) != sizeof(ht))
		return -EFAULT;
	*head = ht[0] % c->nr;
	*tail = ht[1] % c->nr;
	return 0;
}

static uint32_t ring_avail(struct aio_ctx *c, uint32_t head, uint32_t tail)
{
	return (tail + c->nr - head) % c->nr;
}

/*
 * Appends ev at the tail (c->lock held, c's mm alive: a task of it, or c not dead). 0, -EAGAIN
 * (full) or -EFAULT.
 */
static int ring_push(struct aio_ctx *c, const struct linux_io_event *ev)
{
	uint32_t head, tail;
	int r = ring_read(c, &head, &tail);

	if (r)
		return r;
	if (ring_avail(c, head, tail) >= c->nr - 1)
		return -EAGAIN;
	if (mm_poke(c->mm, c->id + AIO_RING_HDR + (uint64_t)tail * IO_EVENT_SIZE, ev,
		    sizeof(*ev)) != sizeof(*ev))
		return -EFAULT;
	tail = (tail + 1) % c->nr;
	if (mm_poke(c->mm, c->id + 12, &tail, sizeof(tail)) != sizeof(tail))
		return -EFAULT;
	return 0;
}

/* io_setup(2): the ring is an anonymous private mapping of the caller (not kept across fork). */
long sys_io_setup(struct task *t, const struct syscall_args *args)
{
	uint32_t nr_events = (uint32_t)args->a[0];
	uint64_t ctxp = args->a[1], id, len;
	uint32_t hdr[8] = { 0 };
	struct aio_ctx *c;
	cpu_set_t set;
	uint64_t want;
	long ret;

	if (mm_copy_in(t->mm, &id, ctxp, sizeof(id)) != sizeof(id))
		return -EFAULT;
	if (id || nr_events == 0)
		return -EINVAL;
	/* Linux's sizing: room for twice max(nr_events, 4 per CPU), in whole pages. */
	want = MAX((uint64_t)nr_events, 4 * (uint64_t)(husk_cpus_get(&set) ? 1 : CPU_COUNT(&set)));
	want *= 2;
	if (want > 0x10000000U / IO_EVENT_SIZE)
		return -EINVAL;
	if (nr_events > AIO_MAX_NR)
		return -EAGAIN;
	len = PAGE_ALIGN_UP(AIO_RING_HDR + want * IO_EVENT_SIZE);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	refcount_init(&c->ref, 1);
	pthread_mutex_init(&c->lock, NULL);
	waitq_init(&c->wq);
	list_init(&c->polls);
	c->mm = t->mm;
	c->nr = (uint32_t)((len - AIO_RING_HDR) / IO_EVENT_SIZE);
	c->max_reqs = nr_events;
	c->ring_len = len;
	pthread_mutex_lock(&aio_lock);
	ret = -EAGAIN;
	if (aio_nr + nr_events > AIO_MAX_NR)
		goto out_unlock;
	ret = mm_mmap(t->mm, 0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, NULL, 0);
	if (ret < 0)
		goto out_unlock;
	c->id = (uint64_t)ret;
	hdr[1] = c->nr;
	hdr[4] = AIO_RING_MAGIC;
	hdr[5] = 1; /* AIO_RING_COMPAT_FEATURES */
	hdr[7] = AIO_RING_HDR;
	if (mm_poke(t->mm, c->id, hdr, sizeof(hdr)) != sizeof(hdr) ||
	    mm_copy_out(t->mm, ctxp, &c->id, sizeof(c->id)) != sizeof(c->id)) {
		mm_munmap(t->mm, c->id, len);
		ret = -EFAULT;
		goto out_unlock;
	}
	__atomic_store_n(&mm_release_hook, aio_mm_release, __ATOMIC_RELEASE);
	aio_nr += nr_events;
	list_add_tail(&c->link, &aio_ctxs);
	pthread_mutex_unlock(&aio_lock);
	return 0;
out_unlock:
	pthread_mutex_unlock(&aio_lock);
	ctx_put(c);
	return ret;
}

/* io_destroy(2): the ring is unmapped; unreaped events and pending polls go with it. */
long sys_io_destroy(struct task *t, const struct syscall_args *args)
{
	struct aio_ctx *c = ctx_lookup(t, args->a[0]);
	bool mine = false;

	if (!c)
		return -EINVAL;
	pthread_mutex_lock(&aio_lock);
	if (!c->dead) {
		__atomic_store_n(&c->dead, true, __ATOMIC_RELAXED);
		list_del(&c->link);
		aio_nr -= c->max_reqs;
		mine = true;
	}
	pthread_mutex_unlock(&aio_lock);
	if (mine) {
		polls_drop(c); /* Linux cancels them: their events go with the ring */
		mm_munmap(t->mm, c->id, c->ring_len);
		waitq_wake_all(&c->wq);
		ctx_put(c); /* the list's reference */
	}
	ctx_put(c);
	return mine ? 0 : -EINVAL;
}

/*
 * Runs one request through the ordinary handler; returns the event's result. Files without a
 * position (pipes, sockets) are read and written as read(2)/write(2) do, ignoring the offset.
 */
static int64_t run_iocb(struct task *t, const struct linux_iocb *cb, bool stream)
{
	struct syscall_args a = { { cb->aio_fildes, cb->aio_buf, cb->aio_nbytes,
				    (uint64_t)cb->aio_offset, 0, 0 } };
	long r;

	switch (cb->aio_lio_opcode) {
	case IOCB_CMD_PREAD:
		r = stream ? sys_read(t, &a) : sys_pread64(t, &a);
		break;
	case IOCB_CMD_PWRITE:
		r = stream ? sys_write(t, &a) : sys_pwrite64(t, &a);
		break;
	case IOCB_CMD_PREADV:
		r = stream ? sys_readv(t, &a) : sys_preadv(t, &a);
		break;
	case IOCB_CMD_PWRITEV:
		r = stream ? sys_writev(t, &a) : sys_pwritev(t, &a);
		break;
	case IOCB_CMD_FSYNC:
		r = sys_fsync(t, &a);
		break;
	default:
		r = sys_fdatasync(t, &a);
		break;
	}
	/* An interrupted request ends with -EINTR: it is not restarted. */
	if (r == -ERESTARTSYS || r == -ERESTARTNOINTR || r == -ERESTARTNOHAND ||
	    r == -ERESTART_RESTARTBLOCK)
		r = -EINTR;
	return r;
}

/* Adds 1 to the eventfd f (IOCB_FLAG_RESFD). */
static void resfd_signal(struct file *f)
{
	uint64_t one = 1;
	struct iovec iov = { &one, sizeof(one) };

	f->ops->write(f, &iov, 1, NULL);
}

/* --- IOCB_CMD_POLL --- */

static pthread_mutex_t poll_queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t poll_queue_cond = PTHREAD_COND_INITIALIZER;
static struct aio_poll *poll_queue; /* poll_queue_lock */
static pthread_once_t poll_worker_once = PTHREAD_ONCE_INIT;
static bool poll_worker_running;

static void poll_put(struct aio_poll *p)
{
	if (!refcount_dec(&p->ref))
		return;
	file_put(p->f);
	if (p->resfd)
		file_put(p->resfd);
	ctx_put(p->c);
	free(p);
}

/*
 * Completes p once (any thread, no lock held): off its context's list and its wait queue, and
 * unless drop, its event with result res into the ring, waking io_getevents and the eventfd.
 * Returns false when p was done already.
 */
static bool poll_finish(struct aio_poll *p, int64_t res, bool drop)
{
	struct linux_io_event ev = { .data = p->data, .obj = p->obj, .res = res };
	struct aio_ctx *c = p->c;
	bool pushed = false;

	pthread_mutex_lock(&c->lock);
	if (p->done) {
		pthread_mutex_unlock(&c->lock);
		return false;
	}
	__atomic_store_n(&p->done, true, __ATOMIC_RELAXED);
	list_del(&p->link);
	c->npending--;
	if (p->wq)
		waitq_remove_callback(p->wq, &p->cb);
	/* dead: the mm may be going; its release hook waits for this lock before it goes on. */
	if (!drop && !__atomic_load_n(&c->dead, __ATOMIC_RELAXED))
		pushed = ring_push(c, &ev) == 0;
	pthread_mutex_unlock(&c->lock);
	if (pushed) {
		waitq_wake_all(&c->wq);
		if (p->resfd)
			resfd_signal(p->resfd);
	}
	poll_put(p); /* the list's reference */
	return true;
}

/* Ends every pending poll of c, which is dead, without an event. */
static void polls_drop(struct aio_ctx *c)
{
	for (;;) {
		struct aio_poll *p;

		pthread_mutex_lock(&c->lock);
		if (list_empty(&c->polls)) {
			pthread_mutex_unlock(&c->lock);
			return;
		}
		p = list_first_entry(&c->polls, struct aio_poll, link);
		refcount_inc(&p->ref);
		pthread_mutex_unlock(&c->lock);
		poll_finish(p, 0, true);
		poll_put(p);
	}
}

static void *poll_worker(void *arg)
{
	(void)arg;
	for (;;) {
		struct aio_poll *p;
		unsigned int m, normal;

		pthread_mutex_lock(&poll_queue_lock);
		while (!poll_queue)
			pthread_cond_wait(&poll_queue_cond, &poll_queue_lock);
		p = poll_queue;
		poll_queue = p->next;
		p->next = NULL;
		p->queued = false;
		pthread_mutex_unlock(&poll_queue_lock);

		if (!__atomic_load_n(&p->done, __ATOMIC_RELAXED)) {
			m = p->f->ops->poll(p->f, NULL);
			/*
			 * Linux completes from the wake with the waker's events, which name the
			 * normal band too (a pipe's writer: POLLIN | POLLRDNORM).
			 */
			normal = (p->events & POLLIN ? POLLRDNORM : 0) |
				 (p->events & POLLOUT ? POLLWRNORM : 0);
			if (m & p->events)
				poll_finish(p, m & (p->events | normal), false);
		}
		poll_put(p); /* the queue's reference */
	}
	return NULL;
}

static void poll_worker_start(void)
{
	pthread_t th;

	if (pthread_create(&th, NULL, poll_worker, NULL) == 0) {
		pthread_detach(th);
		poll_worker_running = true;
	}
}

/* The wait queue callback (under the waker's locks): hand p to the worker. */
static void poll_wake(struct waitq_callback *cb)
{
	struct aio_poll *p = container_of(cb, struct aio_poll, cb);

	pthread_mutex_lock(&poll_queue_lock);
	if (!p->queued) {
		p->queued = true;
		refcount_inc(&p->ref);
		p->next = poll_queue;
		poll_queue = p;
		pthread_cond_signal(&poll_queue_cond);
	}
	pthread_mutex_unlock(&poll_queue_lock);
}

/*
 * Linux's aio_poll: returns 1 with *res when f is ready for events (complete it now), 0 when the
 * request waits, or -errno.
 */
static int poll_start(struct aio_ctx *c, struct file *f, struct file *resfd,
		      const struct linux_iocb *cb, uint64_t obj, int64_t *res)
{
	unsigned int events = (unsigned int)cb->aio_buf | POLLERR | POLLHUP, m;
	struct waitq *wq = NULL;
	struct aio_poll *p;

	if (!f->ops || !f->ops->poll) {
		*res = (POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM) & events;
		return 1;
	}
	m = f->ops->poll(f, &wq);
	if (m & events) {
		*res = m & events;
		return 1;
	}
	pthread_once(&poll_worker_once, poll_worker_start);
	if (!poll_worker_running)
		return -ENOMEM;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	refcount_init(&p->ref, 1); /* the context's list's */
	refcount_inc(&c->ref);
	p->c = c;
	file_get(f);
	p->f = f;
	if (resfd)
		file_get(resfd);
	p->resfd = resfd;
	p->wq = wq;
	p->cb.fn = poll_wake;
	p->data = cb->aio_data;
	p->obj = obj;
	p->events = events;
	pthread_mutex_lock(&c->lock);
	list_add_tail(&p->link, &c->polls);
	c->npending++;
	if (wq)
		waitq_add_callback(wq, &p->cb);
	pthread_mutex_unlock(&c->lock);
	/* A wake between the first poll and the callback's registration is not lost. */
	m = f->ops->poll(f, NULL);
	if (m & events) {
		refcount_inc(&p->ref);
		poll_finish(p, m & events, false);
		poll_put(p);
	}
	return 0;
}

/* io_submit_one's checks, then the request. 0 or -errno for io_submit. */
static long submit_one(struct task *t, struct aio_ctx *c, uint64_t addr)
{
	struct linux_io_event ev = { 0 };
	struct file *resfd = NULL, *f = NULL;
	struct linux_iocb cb;
	uint32_t head, tail;
	uint32_t key = KIOCB_KEY;
	bool stream;
	int acc;
	long r;

	if (mm_copy_in(t->mm, &cb, addr, sizeof(cb)) != sizeof(cb))
		return -EFAULT;
	if (cb.aio_reserved2 || (int64_t)cb.aio_nbytes < 0)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	r = ring_read(c, &head, &tail);
	if (!r && ring_avail(c, head, tail) + c->npending >= c->nr - 1)
		r = -EAGAIN;
	pthread_mutex_unlock(&c->lock);
	if (r)
		return r;
	if (cb.aio_flags & IOCB_FLAG_RESFD) {
		resfd = fdtable_lookup(t->fdt, (int)cb.aio_resfd);
		if (!resfd)
			return -EBADF;
		if (!file_is_eventfd(resfd)) {
			file_put(resfd);
			return -EINVAL;
		}
	}
	r = -EFAULT;
	if (mm_copy_out(t->mm, addr + offsetof(struct linux_iocb, aio_key), &key, sizeof(key)) !=
	    sizeof(key))
		goto out;
	r = -EBADF;
	f = fdtable_lookup(t->fdt, (int)cb.aio_fildes);
	if (!f)
		goto out;
	acc = __atomic_load_n(&f->flags, __ATOMIC_RELAXED) & (O_ACCMODE | O_PATH);
	stream = !f->ops || !f->ops->llseek;
	switch (cb.aio_lio_opcode) {
	case IOCB_CMD_PREAD:
	case IOCB_CMD_PREADV:
		if (acc != O_RDONLY && acc != O_RDWR)
			goto out;
		break;
	case IOCB_CMD_PWRITE:
	case IOCB_CMD_PWRITEV:
		if (acc != O_WRONLY && acc != O_RDWR)
			goto out;
		break;
	case IOCB_CMD_FSYNC:
	case IOCB_CMD_FDSYNC:
		r = -EINVAL;
		if (cb.aio_buf || cb.aio_offset || cb.aio_nbytes || cb.aio_rw_flags)
			goto out;
		break;
	case IOCB_CMD_POLL:
		/* Events beyond 16 bits, or fields poll does not use. */
		r = -EINVAL;
		if ((uint16_t)cb.aio_buf != cb.aio_buf || cb.aio_offset || cb.aio_nbytes ||
		    cb.aio_rw_flags)
			goto out;
		r = poll_start(c, f, resfd, &cb, addr, &ev.res);
		if (r <= 0)
			goto out; /* waiting (0) or refused */
		break;
	default:
		r = -EINVAL;
		goto out;
	}
	r = -EOPNOTSUPP;
	if (cb.aio_rw_flags & ~RWF_KNOWN)
		goto out;
	ev.data = cb.aio_data;
	ev.obj = addr;
	if (cb.aio_lio_opcode != IOCB_CMD_POLL)
		ev.res = run_iocb(t, &cb, stream);
	pthread_mutex_lock(&c->lock);
	r = ring_push(c, &ev);
	pthread_mutex_unlock(&c->lock);
	if (r == 0) {
		waitq_wake_all(&c->wq);
		if (resfd)
			resfd_signal(resfd);
	}
out:
	if (f)
		file_put(f);
	if (resfd)
		file_put(resfd);
	return r;
}

/* io_submit(2): each request but a poll not ready completes before the call returns. */
long sys_io_submit(struct task *t, const struct syscall_args *args)
{
	long nr = (long)args->a[1], i;
	struct aio_ctx *c;
	uint64_t addr;
	long r = 0;

	if (nr < 0)
		return -EINVAL;
	c = ctx_lookup(t, args->a[0]);
	if (!c)
		return -EINVAL;
	if (nr > (long)c->nr)
		nr = (long)c->nr;
	for (i = 0; i < nr; i++) {
		if (mm_copy_in(t->mm, &addr, args->a[2] + (uint64_t)i * 8, sizeof(addr)) !=
		    sizeof(addr)) {
			r = -EFAULT;
			break;
		}
		r = submit_one(t, c, addr);
		if (r)
			break;
	}
	ctx_put(c);
	return i ? i : r;
}

struct getevents_wait {
	struct task *t;
	struct aio_ctx *c;
};

static bool events_ready(void *arg)
{
	struct getevents_wait *w = arg;
	uint32_t head, tail;
	bool ready;

	pthread_mutex_lock(&w->c->lock);
	ready = __atomic_load_n(&w->c->dead, __ATOMIC_RELAXED) ||
		ring_read(w->c, &head, &tail) < 0 || ring_avail(w->c, head, tail) > 0;
	pthread_mutex_unlock(&w->c->lock);
	return ready;
}

/* Takes up to want events into the guest's array at addr. Returns how many or -EFAULT. */
static long take_events(struct task *t, struct aio_ctx *c, uint64_t addr, long want)
{
	struct linux_io_event ev;
	uint32_t head, tail;
	long n = 0;

	pthread_mutex_lock(&c->lock);
	if (ring_read(c, &head, &tail) < 0) {
		pthread_mutex_unlock(&c->lock);
		return -EFAULT;
	}
	while (n < want && head != tail) {
		if (mm_copy_in(t->mm, &ev, c->id + AIO_RING_HDR + (uint64_t)head * IO_EVENT_SIZE,
			       sizeof(ev)) != sizeof(ev) ||
		    mm_copy_out(t->mm, addr + (uint64_t)n * sizeof(ev), &ev, sizeof(ev)) !=
			    sizeof(ev))
			break;
		head = (head + 1) % c->nr;
		n++;
	}
	if (n)
		mm_poke(t->mm, c->id + 8, &head, sizeof(head));
	pthread_mutex_unlock(&c->lock);
	return n ? n : (head != tail && want ? -EFAULT : 0);
}

static long do_getevents(struct task *t, const struct syscall_args *args)
{
	long min_nr = (long)args->a[1], nr = (long)args->a[2], got = 0, r;
	struct getevents_wait w = { .t = t };
	struct timespec deadline, now;
	struct waitq *wq;
	int64_t ts[2];
	bool has_timeout = args->a[4] != 0;

	if (has_timeout) {
		if (mm_copy_in(t->mm, ts, args->a[4], sizeof(ts)) != sizeof(ts))
			return -EFAULT;
		clock_gettime(CLOCK_MONOTONIC, &now);
		/* Linux takes the timespec as it is (no range check); a negative one is 0. */
		if (ts[0] < 0 || ts[1] < 0)
			ts[0] = ts[1] = 0;
		deadline.tv_sec = now.tv_sec + ts[0] + (now.tv_nsec + ts[1]) / 1000000000;
		deadline.tv_nsec = (now.tv_nsec + ts[1]) % 1000000000;
	}
	w.c = ctx_lookup(t, args->a[0]);
	if (!w.c)
		return -EINVAL;
	if (min_nr < 0 || nr < 0 || min_nr > nr) {
		ctx_put(w.c);
		return -EINVAL;
	}
	wq = &w.c->wq;
	for (;;) {
		r = take_events(t, w.c, args->a[3] + (uint64_t)got * sizeof(struct linux_io_event),
				nr - got);
		if (r < 0) {
			r = got ? got : r;
			break;
		}
		got += r;
		if (got >= min_nr || got == nr || __atomic_load_n(&w.c->dead, __ATOMIC_RELAXED)) {
			r = got;
			break;
		}
		r = task_wait(t, &wq, 1, events_ready, &w, has_timeout ? &deadline : NULL, true);
		if (r == -ETIMEDOUT) {
			r = take_events(t, w.c,
					args->a[3] + (uint64_t)got * sizeof(struct linux_io_event),
					nr - got);
			r = got + (r > 0 ? r : 0);
			break;
		}
		if (r < 0) {
			r = got ? got : -EINTR;
			break;
		}
	}
	ctx_put(w.c);
	return r;
}

/* io_getevents(2): the timeout is relative. */
long sys_io_getevents(struct task *t, const struct syscall_args *args)
{
	return do_getevents(t, args);
}

/* io_pgetevents(2): as io_getevents with a signal mask for the wait. */
long sys_io_pgetevents(struct task *t, const struct syscall_args *args)
{
	uint64_t usig[2];
	int pushed = 0;
	long r;

	if (args->a[5]) {
		if (mm_copy_in(t->mm, usig, args->a[5], sizeof(usig)) != sizeof(usig))
			return -EFAULT;
		pushed = poll_sigmask_push(t, usig[0], usig[1]);
		if (pushed < 0)
			return pushed;
	}
	r = do_getevents(t, args);
	poll_sigmask_pop(t, pushed, r);
	return r;
}

/*
 * io_cancel(2): a pending poll completes with res 0 and the call returns -EINPROGRESS (its event
 * is in the ring, as Linux); every other request has finished: -EINVAL.
 */
long sys_io_cancel(struct task *t, const struct syscall_args *args)
{
	struct aio_poll *p, *found = NULL;
	struct aio_ctx *c;
	uint32_t key;
	long r;

	if (mm_copy_in(t->mm, &key, args->a[1] + offsetof(struct linux_iocb, aio_key),
		       sizeof(key)) != sizeof(key))
		return -EFAULT;
	if (key != KIOCB_KEY)
		return -EINVAL;
	c = ctx_lookup(t, args->a[0]);
	if (!c)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	list_for_each_entry(p, &c->polls, link) {
		if (p->obj == args->a[1]) {
			found = p;
			refcount_inc(&p->ref);
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	ctx_put(c);
	if (!found)
		return -EINVAL;
	r = poll_finish(found, 0, false) ? -EINPROGRESS : -EINVAL;
	poll_put(found);
	return r;
}
