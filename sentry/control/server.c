/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control server: one thread accepts on the listening socket husk passed (--control-fd);
 * each connection gets a thread that reads one request, answers it and, for an exec that
 * waits, sends CONTROL_EXITED when the process ends. The peer is husk on the same host, but
 * its messages are still checked like any input (control_decode_exec).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "runtime/control.h"
#include "sentry/control/control.h"
#include "sentry/fs/gofer/client.h"
#include "sentry/kernel/oom.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/timer.h"
#include "sentry/net/net.h"
#include "sentry/state/state.h"
#include "sentry/time/vtime.h"
#include "syscalls/handlers.h"

/* Weak: the control server is also linked without sentry/net (its unit tests). */
#pragma weak net_egress_counts

#define CONTROL_THREAD_STACK (256u << 10)

static int listen_fd = -1;

int control_listen_fd(void)
{
	return listen_fd;
}

void control_set_listen_fd(int fd)
{
	listen_fd = fd;
}

struct conn {
	struct kernel *k;
	int fd;
};

ssize_t control_recv_request(int fd, void *buf, size_t len, int *fds, int *nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * CONTROL_MAX_FDS)];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf.buf,
		.msg_controllen = sizeof(cbuf.buf),
	};
	struct cmsghdr *c;
	ssize_t n;

	*nfds = 0;
	do
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

		for (size_t i = 0; i < k; i++) {
			int f;

			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*nfds < CONTROL_MAX_FDS)
				fds[(*nfds)++] = f;
			else
				close(f);
		}
	}
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		for (int i = 0; i < *nfds; i++)
			close(fds[i]);
		*nfds = 0;
		return -EMSGSIZE;
	}
	return n;
}

/* One message (sendmsg: the filter allows it, not send/sendto). */
void control_send_msg(int fd, const void *buf, size_t len)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	do
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
}

static void serve_ps(struct kernel *k, int fd)
{
	size_t max = CONTROL_PS_MAX;
	size_t sz = sizeof(struct control_hdr) + sizeof(struct control_ps_reply) +
		    max * sizeof(struct control_ps_entry);
	char *buf = calloc(1, sz);
	struct control_hdr h = { .magic = CONTROL_MAGIC,
				 .version = CONTROL_VERSION,
				 .op = CONTROL_PS_REPLY };
	struct control_ps_reply r = { 0 };
	int n;

	if (!buf) {
		r.err = -ENOMEM;
		h.len = sizeof(r);
		char small[sizeof(h) + sizeof(r)];
		memcpy(small, &h, sizeof(h));
		memcpy(small + sizeof(h), &r, sizeof(r));
		control_send_msg(fd, small, sizeof(small));
		return;
	}
	n = control_list_processes(k, (struct control_ps_entry *)(buf + sizeof(h) + sizeof(r)),
				   (int)max);
	r.err = n < 0 ? n : 0;
	r.n = n < 0 ? 0 : (uint32_t)n;
	h.len = (uint32_t)(sizeof(r) + r.n * sizeof(struct control_ps_entry));
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), &r, sizeof(r));
	control_send_msg(fd, buf, sizeof(h) + h.len);
	free(buf);
}

/* CONTROL_UPDATE: new memory and pids limits (husk update), applied at once. */
static void serve_update(struct kernel *k, int fd, const void *msg, size_t len)
{
	struct control_hdr h = { .magic = CONTROL_MAGIC,
				 .version = CONTROL_VERSION,
				 .op = CONTROL_REPLY,
				 .len = sizeof(struct control_reply) };
	struct control_reply r = { 0 };
	struct control_update u;
	char out[sizeof(h) + sizeof(r)];

	r.err = control_decode_update(msg, len, &u);
	if (r.err == 0) {
		log_info("control: update: memory %lld, pids %lld", (long long)u.memory,
			 (long long)u.pids);
		r.err = oom_update_limits(k, u.memory, u.pids);
	}
	memcpy(out, &h, sizeof(h));
	memcpy(out + sizeof(h), &r, sizeof(r));
	control_send_msg(fd, out, sizeof(out));
}

/* CONTROL_STATS: the sandbox's memory and pids usage and limits (husk events --stats). */
static void serve_stats(struct kernel *k, int fd, size_t len)
{
	struct control_hdr h = { .magic = CONTROL_MAGIC,
				 .version = CONTROL_VERSION,
				 .op = CONTROL_STATS_REPLY,
				 .len = sizeof(struct control_stats) };
	struct control_stats r = { 0 };
	char out[sizeof(h) + sizeof(r)];

	if (len != sizeof(h)) {
		r.err = -EINVAL;
	} else {
		struct oom_stats st;
		struct cputime cpu;

		oom_stats(k, &st);
		r.memory_usage = st.memory_usage;
		r.memory_limit = st.memory_limit;
		r.memory_peak = st.memory_peak;
		r.oom_kills = st.oom_kills;
		r.pids_current = st.pids_current;
		r.pids_limit = st.pids_limit;
		cpu = cputime_kernel(k);
		r.cpu_user = cpu.utime;
		r.cpu_kernel = cpu.stime;
		r.syscalls = __atomic_load_n(&k->nr_syscalls, __ATOMIC_RELAXED);
		r.faults = __atomic_load_n(&k->nr_faults, __ATOMIC_RELAXED);
		r.gofer_ops = gofer_client_msgs(-1);
		r.gofer_bytes = gofer_client_bytes();
		if (net_egress_counts)
			net_egress_counts(&r.egress_allowed, &r.egress_denied);
	}
	memcpy(out, &h, sizeof(h));
	memcpy(out + sizeof(h), &r, sizeof(r));
	control_send_msg(fd, out, sizeof(out));
}

/* How long a pause or checkpoint waits for every task to stop (they stop within microseconds
 * unless the host starves the sentry). */
#define FREEZE_TIMEOUT_MS 30000

static pthread_mutex_t pause_lock = PTHREAD_MUTEX_INITIALIZER;
static bool paused; /* pause_lock */

static void send_reply(int fd, int err)
{
	struct control_hdr h = { .magic = CONTROL_MAGIC,
				 .version = CONTROL_VERSION,
				 .op = CONTROL_REPLY,
				 .len = sizeof(struct control_reply) };
	struct control_reply r = { .err = err };
	char out[sizeof(h) + sizeof(r)];

	memcpy(out, &h, sizeof(h));
	memcpy(out + sizeof(h), &r, sizeof(r));
	control_send_msg(fd, out, sizeof(out));
}

/* CONTROL_PAUSE / CONTROL_RESUME: every task stops (freeze.c) until resumed. */
/* pid_for_each_tg: moves the host deadlines of tg's restart blocks by *arg ns (tasks parked). */
static int shift_restarts(struct thread_group *tg, void *arg)
{
	struct task *t;

	pthread_mutex_lock(&tg->lock);
	list_for_each_entry(t, &tg->tasks, tg_link)
		restart_deadline_shift(t, *(int64_t *)arg);
	pthread_mutex_unlock(&tg->lock);
	return 0;
}

static void serve_pause(struct kernel *k, int fd, bool pause, size_t len)
{
	int err = 0;

	if (len != sizeof(struct control_hdr)) {
		send_reply(fd, -EINVAL);
		return;
	}
	pthread_mutex_lock(&pause_lock);
	if (pause && !paused) {
		int32_t busy;
		uint64_t t0 = task_monotonic_ns();

		err = kernel_freeze(k, false, FREEZE_TIMEOUT_MS, &busy);
		if (err == 0) {
			timers_hold();
			paused = true;
			log_info("control: paused in %llu us",
				 (unsigned long long)(task_monotonic_ns() - t0) / 1000);
		} else {
			log_warn("control: pause: task %d did not stop", busy);
		}
	} else if (!pause && paused) {
		/*
		 * The guest's clocks stood still while it was paused (sentry/time/README.md), and
		 * so did its timers and the timeouts of the waits its threads restart.
		 */
		int64_t d = (int64_t)(task_monotonic_ns() - k->frozen_at_ns);

		vtime_offset_add(d);
		timers_release();
		pthread_mutex_lock(&k->tree_lock);
		pid_for_each_tg(k, shift_restarts, &d);
		pthread_mutex_unlock(&k->tree_lock);
		kernel_thaw(k);
		paused = false;
		log_info("control: resumed");
	}
	pthread_mutex_unlock(&pause_lock);
	send_reply(fd, err);
}

/* Held while a checkpoint is written and answered (control_checkpoint_barrier). */
static pthread_mutex_t ckpt_lock = PTHREAD_MUTEX_INITIALIZER;

void control_checkpoint_barrier(void)
{
	pthread_mutex_lock(&ckpt_lock);
	pthread_mutex_unlock(&ckpt_lock);
}

/* CONTROL_CHECKPOINT: save the sandbox into the two fds given (sentry/state). */
static void serve_checkpoint(struct kernel *k, int fd, const void *msg, size_t len, int *fds,
			     int nfds)
{
	struct control_hdr h = { .magic = CONTROL_MAGIC,
				 .version = CONTROL_VERSION,
				 .op = CONTROL_CHECKPOINT_REPLY,
				 .len = sizeof(struct control_checkpoint_reply) };
	struct control_checkpoint_reply r = { 0 };
	struct control_checkpoint req;
	struct state_stats st = { 0 };
	bool leave = true, locked = false;
	char out[sizeof(h) + sizeof(r)];

	if (len != sizeof(h) + sizeof(req) || nfds != 2) {
		r.err = -EINVAL;
		snprintf(r.msg, sizeof(r.msg), "malformed checkpoint request");
	} else if (control_container_count() > 0) {
		/* The image has no member containers (their trees, their gofers). */
		r.err = -EBUSY;
		snprintf(r.msg, sizeof(r.msg),
			 "a pod's sandbox with member containers cannot be checkpointed");
	} else {
		memcpy(&req, (const char *)msg + sizeof(h), sizeof(req));
		leave = req.flags & CONTROL_CKPT_LEAVE_RUNNING;
		pthread_mutex_lock(&ckpt_lock);
		locked = true;
		pthread_mutex_lock(&pause_lock);
		r.err = state_checkpoint(k, fds[0], fds[1], leave, &st, r.msg, sizeof(r.msg));
		if (r.err == 0 && !leave)
			log_info("control: checkpoint written: the sandbox ends");
		pthread_mutex_unlock(&pause_lock);
		r.image_bytes = st.image_bytes;
		r.pages_bytes = st.pages_bytes;
		r.freeze_ns = st.freeze_ns;
		r.save_ns = st.save_ns;
	}
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	memcpy(out, &h, sizeof(h));
	memcpy(out + sizeof(h), &r, sizeof(r));
	control_send_msg(fd, out, sizeof(out));
	if (locked)
		pthread_mutex_unlock(&ckpt_lock);
}

/*
 * A hangup watch: a thread that polls a connection whose request is still being served (an
 * exec waiting for its process, an OOM wait) and calls on_hup if the peer hangs up first: husk
 * exec or its exec proxy was killed (containerd's shim SIGKILLs the pid husk gave it when an
 * exec times out). The watch owns the connection's fd from then on and closes it when both it
 * and the serving thread are done with it.
 */
struct hup_watch {
	pthread_mutex_t lock;
	int refs; /* lock: the watcher thread's and the serving thread's */
	int fd;
	bool done; /* lock: the request was served; a hangup now means nothing */
	void (*on_hup)(void *arg); /* called with lock held, before done */
	void *arg;
};

static void hup_watch_put(struct hup_watch *w)
{
	bool last;

	pthread_mutex_lock(&w->lock);
	last = --w->refs == 0;
	pthread_mutex_unlock(&w->lock);
	if (last) {
		close(w->fd);
		pthread_mutex_destroy(&w->lock);
		free(w);
	}
}

static void *hup_watch_main(void *arg)
{
	struct hup_watch *w = arg;
	bool hup = true;

	for (;;) {
		struct pollfd p = { .fd = w->fd, .events = POLLIN | POLLRDHUP };
		char buf[64];
		struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t n;

		if (poll(&p, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			/* Cannot watch (out of memory): the peer is not known to be gone. */
			log_warn("control: watching a connection: %s", strerror(errno));
			hup = false;
			break;
		}
		if (p.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL))
			break;
		/* The peer sends nothing more after its request: whatever comes is dropped (with
		 * recvmsg: sentry/filter.c allows no other receive call; fds sent are not taken). */
		n = recvmsg(w->fd, &mh, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			break;
	}
	pthread_mutex_lock(&w->lock);
	if (hup && !w->done)
		w->on_hup(w->arg);
	pthread_mutex_unlock(&w->lock);
	hup_watch_put(w);
	return NULL;
}

/* Starts watching fd (now the watch's). Returns the watch, or NULL (fd still the caller's). */
static struct hup_watch *hup_watch_start(int fd, void (*on_hup)(void *), void *arg)
{
	struct hup_watch *w = calloc(1, sizeof(*w));
	pthread_attr_t attr;
	pthread_t th;
	int ret;

	if (!w)
		return NULL;
	pthread_mutex_init(&w->lock, NULL);
	w->refs = 2;
	w->fd = fd;
	w->on_hup = on_hup;
	w->arg = arg;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, CONTROL_THREAD_STACK);
	ret = pthread_create(&th, &attr, hup_watch_main, w);
	pthread_attr_destroy(&attr);
	if (ret != 0) {
		pthread_mutex_destroy(&w->lock);
		free(w);
		return NULL;
	}
	return w;
}

/* The request was served: a hangup from now on changes nothing (on_hup has run or never will). */
static void hup_watch_done(struct hup_watch *w)
{
	pthread_mutex_lock(&w->lock);
	w->done = true;
	pthread_mutex_unlock(&w->lock);
}

/* on_hup of an exec: as runc's exec'd process when the engine kills the pid it was given. */
static void exec_hup(void *arg)
{
	struct thread_group *tg = arg;

	log_info("control: exec pid %d: its husk exec is gone: killing it", tg->pid);
	control_kill_process(tg);
}

/*
 * The OOM waits being served. A waiter is answered at the next OOM kill and then waits for its
 * peer to hang up, which husk-oomwatch does once it has made the kill an OOM of the host cgroup
 * (runtime/oomreport.c): the end of the sandbox waits for that (control_oom_barrier), since an
 * engine deletes the container, and its cgroup, as soon as the sentry is gone. When husk
 * started a husk-oomwatch for the sandbox (--oom-reporter: control_oom_expect_reporter), the end
 * also waits for the kills no wait is pending for (one before the watcher's first wait, or
 * between two of its waits): the watcher reports each (oom_armed, oom_reported, moved on by its
 * CONTROL_OOM_REPORTER waits).
 */
struct oom_waiter {
	uint64_t seen; /* the request's count */
	bool gone; /* the peer hung up (atomic) */
	struct oom_waiter *next; /* oomw_lock */
};

/* How long an answered waiter (and the end of the sandbox) waits for the peer's hang-up. */
#define OOM_ACK_MS 60000

static pthread_mutex_t oomw_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t oomw_cond = PTHREAD_COND_INITIALIZER;
static struct oom_waiter *oomw_list; /* oomw_lock */
static bool oom_armed; /* oomw_lock: a husk-oomwatch reports the kills */
static uint64_t oom_reported; /* oomw_lock: the kills husk-oomwatch has reported */

void control_oom_expect_reporter(void)
{
	pthread_mutex_lock(&oomw_lock);
	oom_armed = true;
	pthread_mutex_unlock(&oomw_lock);
}

/* on_hup of an OOM wait: the waiter looks at its flag again. */
static void oom_hup(void *arg)
{
	struct oom_waiter *o = arg;

	__atomic_store_n(&o->gone, true, __ATOMIC_RELEASE);
	oom_wake_waiters();
	pthread_mutex_lock(&oomw_lock);
	pthread_cond_broadcast(&oomw_cond);
	pthread_mutex_unlock(&oomw_lock);
}

static struct timespec deadline_in(long ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

void control_oom_barrier(struct kernel *k)
{
	struct timespec end = deadline_in(OOM_ACK_MS);
	struct oom_stats st;

	oom_stats(k, &st);
	pthread_mutex_lock(&oomw_lock);
	for (;;) {
		bool pending = oom_armed && oom_reported < st.oom_kills;

		for (struct oom_waiter *o = oomw_list; o; o = o->next)
			pending |= o->seen < st.oom_kills &&
				   !__atomic_load_n(&o->gone, __ATOMIC_ACQUIRE);
		if (!pending || pthread_cond_timedwait(&oomw_cond, &oomw_lock, &end) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&oomw_lock);
}

/* CONTROL_OOM_WAIT: answers once the OOM killer has killed more than the request's count. */
static void serve_oom_wait(struct kernel *k, int *fd, const void *msg, size_t len)
{
	struct control_hdr h = { .magic = CONTROL_MAGIC,
				 .version = CONTROL_VERSION,
				 .op = CONTROL_OOM_REPLY,
				 .len = sizeof(struct control_oom) };
	struct control_oom req, r = { 0 };
	struct oom_waiter o = { 0 };
	struct hup_watch *w;
	char out[sizeof(h) + sizeof(r)];

	memcpy(&h, msg, sizeof(h));
	if (len != sizeof(h) + sizeof(req) || h.len != sizeof(req)) {
		send_reply(*fd, -EINVAL);
		return;
	}
	memcpy(&req, (const char *)msg + sizeof(h), sizeof(req));
	o.seen = req.kills;
	pthread_mutex_lock(&oomw_lock);
	o.next = oomw_list;
	oomw_list = &o;
	/* The kills up to its count were reported (or came before it watched). */
	if ((req.flags & CONTROL_OOM_REPORTER) && oom_reported < req.kills)
		oom_reported = req.kills;
	pthread_mutex_unlock(&oomw_lock);
	w = hup_watch_start(*fd, oom_hup, &o);
	if (!w) {
		send_reply(*fd, -ENOMEM);
		goto out_unlink;
	}
	r.kills = oom_wait_kills(k, req.kills, &o.gone);
	h.op = CONTROL_OOM_REPLY;
	h.len = sizeof(r);
	memcpy(out, &h, sizeof(h));
	memcpy(out + sizeof(h), &r, sizeof(r));
	if (!__atomic_load_n(&o.gone, __ATOMIC_ACQUIRE)) {
		struct timespec end = deadline_in(OOM_ACK_MS);

		control_send_msg(*fd, out, sizeof(out));
		/* Until the peer is done with it (or gives no sign for too long). */
		pthread_mutex_lock(&oomw_lock);
		while (!__atomic_load_n(&o.gone, __ATOMIC_ACQUIRE) &&
		       pthread_cond_timedwait(&oomw_cond, &oomw_lock, &end) != ETIMEDOUT)
			;
		if ((req.flags & CONTROL_OOM_REPORTER) && oom_reported < r.kills)
			oom_reported = r.kills;
		pthread_mutex_unlock(&oomw_lock);
	}
	/* Once done is set, oom_hup no longer touches o. */
	hup_watch_done(w);
	hup_watch_put(w);
	*fd = -1;
out_unlink:
	pthread_mutex_lock(&oomw_lock);
	for (struct oom_waiter **p = &oomw_list; *p; p = &(*p)->next) {
		if (*p == &o) {
			*p = o.next;
			break;
		}
	}
	pthread_cond_broadcast(&oomw_cond);
	pthread_mutex_unlock(&oomw_lock);
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	struct thread_group *tg = NULL;
	struct control_hdr h;
	char reply[64];
	int fds[CONTROL_MAX_FDS], nfds;
	void *buf = malloc(CONTROL_MAX_MSG);
	ssize_t n;

	if (!buf)
		goto out;
	n = control_recv_request(c->fd, buf, CONTROL_MAX_MSG, fds, &nfds);
	if (n < (ssize_t)sizeof(h)) {
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		goto out;
	}
	memcpy(&h, buf, sizeof(h));
	/* Pods (container.c): a member's start, or a request for one member. */
	if (h.magic == CONTROL_MAGIC && h.version == CONTROL_VERSION &&
	    h.op == CONTROL_CONTAINER_CREATE) {
		control_container_create(c->k, c->fd, buf, (size_t)n, fds, nfds);
		goto out;
	}
	if (h.magic == CONTROL_MAGIC && h.version == CONTROL_VERSION &&
	    h.op == CONTROL_CONTAINER_TARGET) {
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		control_container_target(c->k, c->fd, buf, (size_t)n);
		goto out;
	}
	if (h.magic == CONTROL_MAGIC && h.version == CONTROL_VERSION &&
	    h.op == CONTROL_CHECKPOINT) {
		serve_checkpoint(c->k, c->fd, buf, (size_t)n, fds, nfds);
		goto out;
	}
	if (h.magic == CONTROL_MAGIC && h.version == CONTROL_VERSION && h.op != CONTROL_EXEC) {
		/* Only an exec request carries fds. */
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		nfds = 0;
		switch (h.op) {
		case CONTROL_PS:
			serve_ps(c->k, c->fd);
			goto out;
		case CONTROL_SIGNAL:
			n = control_serve_signal(c->k, buf, (size_t)n, reply);
			control_send_msg(c->fd, reply, (size_t)n);
			goto out;
		case CONTROL_UPDATE:
			serve_update(c->k, c->fd, buf, (size_t)n);
			goto out;
		case CONTROL_STATS:
			serve_stats(c->k, c->fd, (size_t)n);
			goto out;
		case CONTROL_PAUSE:
		case CONTROL_RESUME:
			serve_pause(c->k, c->fd, h.op == CONTROL_PAUSE, (size_t)n);
			goto out;
		case CONTROL_OOM_WAIT:
			serve_oom_wait(c->k, &c->fd, buf, (size_t)n);
			goto out;
		default:
			break;
		}
	}
	/* Anything else is an exec request (control_serve rejects what is not one). */
	n = control_serve(c->k, buf, (size_t)n, fds, nfds, reply, &tg);
	control_send_msg(c->fd, reply, (size_t)n);
	if (tg) {
		struct control_hdr eh = { .magic = CONTROL_MAGIC,
					  .version = CONTROL_VERSION,
					  .op = CONTROL_EXITED,
					  .len = sizeof(struct control_exited) };
		struct control_exited ex;
		char msg[sizeof(eh) + sizeof(ex)];

		/* Until it ends, the process lives only as long as its husk exec holds on. */
		struct hup_watch *w = hup_watch_start(c->fd, exec_hup, tg);

		ex.status = control_wait_exit(c->k, tg);
		if (w)
			hup_watch_done(w);
		tg_put(tg);
		memcpy(msg, &eh, sizeof(eh));
		memcpy(msg + sizeof(eh), &ex, sizeof(ex));
		control_send_msg(c->fd, msg, sizeof(msg));
		if (w) {
			/* The watch closes the fd once its thread is done with it too. */
			hup_watch_put(w);
			c->fd = -1;
		}
	}
out:
	free(buf);
	if (c->fd >= 0)
		close(c->fd);
	free(c);
	return NULL;
}

static void *accept_main(void *arg)
{
	struct kernel *k = arg;
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, CONTROL_THREAD_STACK);
	for (;;) {
		int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		struct conn *c;
		pthread_t th;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				/* Out of resources for now: try again a little later. */
				struct timespec ts = { 0, 10 * 1000 * 1000 };

				nanosleep(&ts, NULL);
				continue;
			}
			log_error("control socket: accept: %s", strerror(errno));
			break;
		}
		c = malloc(sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->k = k;
		c->fd = fd;
		if (pthread_create(&th, &attr, conn_main, c) != 0) {
			close(fd);
			free(c);
		}
	}
	pthread_attr_destroy(&attr);
	return NULL;
}

void control_serve_stats(struct kernel *k, int fd, size_t len)
{
	serve_stats(k, fd, len);
}

int control_server_start(struct kernel *k, int fd)
{
	pthread_attr_t attr;
	pthread_t th;
	int ret;

	listen_fd = fd;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, CONTROL_THREAD_STACK);
	ret = pthread_create(&th, &attr, accept_main, k);
	pthread_attr_destroy(&attr);
	return -ret;
}
