/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pod members: containers started inside a running sandbox (runtime/control_pod.h has the
 * wire format, runtime/README.md "Pods" the whole picture).
 *
 * A member is made on the thread of its CONTROL_CONTAINER_CREATE connection: main.c's set-up
 * hook parses the member's husk-sentry argv and builds its mount tree (its own gofers' root
 * overlay and mounts), then kernel_spawn starts its init in that tree with the member's
 * number, defaults and limits, waiting at the member's start gate (its exec.fifo). The thread
 * replies with the init's pid and stays: it sends CONTROL_EXITED when the init ends. A second
 * thread watches the connection: husk's container proxy holds its other end, and when it
 * closes (the proxy exited after CONTROL_EXITED, or was killed: husk kill KILL, husk delete),
 * every process of the member is SIGKILLed. Once both are done the member's gofers are
 * disconnected (they exit) and it leaves the list.
 *
 * References: the list holds one reference on each member (refs, under members_lock), and each
 * CONTROL_CONTAINER_TARGET request one while it is served. The mount tree is not freed when the
 * member goes (mounts and their parents hold each other, vfs/README.md): its root's references
 * are dropped and its gofer clients disconnected, so that any node left reaching them gets -EIO.
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

#include "common/list.h"
#include "include/abi/linux/signal.h"
#include "common/log.h"
#include "runtime/control.h"
#include "runtime/control_pod.h"
#include "sentry/control/control.h"
#include "sentry/fs/gofer/client.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/oom.h"
#include "sentry/kernel/seccomp.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/memfile.h"
#include "sentry/mm/mm.h"

_Static_assert(sizeof(((struct control_member_setup *)0)->rlimits) ==
		       sizeof(((struct thread_group *)0)->rlimits),
	       "a member's rlimits are a process's");

#define WATCH_THREAD_STACK (64u << 10)

struct member_entry {
	struct list_head link; /* members_lock */
	struct control_member m;
};

static pthread_mutex_t members_lock = PTHREAD_MUTEX_INITIALIZER;
static struct list_head members = LIST_HEAD_INIT(members);
static int32_t next_num = 1; /* members_lock */
static control_member_setup_fn setup_fn;

int control_container_count(void)
{
	struct member_entry *e;
	int n = 0;

	pthread_mutex_lock(&members_lock);
	list_for_each_entry(e, &members, link)
		n++;
	pthread_mutex_unlock(&members_lock);
	return n;
}

void control_set_member_setup(control_member_setup_fn fn)
{
	setup_fn = fn;
}

/* The member called id, with a new reference, or NULL. */
static struct control_member *member_find(const char *id)
{
	struct member_entry *e;

	pthread_mutex_lock(&members_lock);
	list_for_each_entry(e, &members, link) {
		if (!strcmp(e->m.id, id)) {
			e->m.refs++;
			pthread_mutex_unlock(&members_lock);
			return &e->m;
		}
	}
	pthread_mutex_unlock(&members_lock);
	return NULL;
}

/* The member numbered num, with a new reference, or NULL. */
static struct control_member *member_by_num(int32_t num)
{
	struct member_entry *e;

	pthread_mutex_lock(&members_lock);
	list_for_each_entry(e, &members, link) {
		if (e->m.num == num) {
			e->m.refs++;
			pthread_mutex_unlock(&members_lock);
			return &e->m;
		}
	}
	pthread_mutex_unlock(&members_lock);
	return NULL;
}

/* Frees what the set-up gave m (fds closed, gofers disconnected, tree dropped). */
static void setup_release(struct control_member_setup *s)
{
	for (int i = 0; i < 3; i++) {
		if (s->stdio[i] >= 0)
			close(s->stdio[i]);
		s->stdio[i] = -1;
	}
	for (int i = 0; i < s->npreserve; i++)
		close(s->preserve[i]);
	s->npreserve = 0;
	if (s->gate_fd >= 0)
		close(s->gate_fd);
	s->gate_fd = -1;
	for (int i = 0; i < s->ngofers; i++)
		gofer_client_disconnect(s->gofers[i]);
	if (s->root.mnt)
		vfs_path_put(&s->root);
	s->root.mnt = NULL;
	s->root.node = NULL;
	if (s->guest.seccomp)
		seccomp_filter_put(s->guest.seccomp);
	s->guest.seccomp = NULL;
	free(s->envp);
	s->envp = NULL;
}

static void member_put(struct control_member *m);

/* Takes m off the list (it can no longer be found) and drops the list's reference. */
static void member_unlist(struct control_member *m)
{
	struct member_entry *e = container_of(m, struct member_entry, m);

	pthread_mutex_lock(&members_lock);
	if (!list_empty(&e->link)) {
		list_del(&e->link);
		list_init(&e->link);
	}
	pthread_mutex_unlock(&members_lock);
	member_put(m);
}

static void member_put(struct control_member *m)
{
	struct member_entry *e = container_of(m, struct member_entry, m);
	bool last;

	pthread_mutex_lock(&members_lock);
	last = --m->refs == 0;
	if (last && !list_empty(&e->link))
		list_del(&e->link);
	pthread_mutex_unlock(&members_lock);
	if (!last)
		return;
	setup_release(&m->s);
	free(e);
}

/* --- a member's memory limit --- */

/* Signalled at each member's OOM kill (control_member_oom_wait). */
static pthread_mutex_t oom_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t oom_cond = PTHREAD_COND_INITIALIZER;

/*
 * How often a member's usage is measured: once its processes were charged this many bytes since
 * the last measure. Its usage is the resident memory of its processes (a walk of their VMAs),
 * so a member may go past its limit by up to this much before its OOM kill.
 */
#define MEMBER_CHECK_BYTES (256u << 10)

struct member_proc {
	struct thread_group *tg;
	struct mm *mm;
	int oom_score_adj;
};

struct member_walk {
	int32_t num;
	struct member_proc *v;
	size_t n, cap;
	bool exiting; /* one of its processes is on its way out */
};

static int member_collect(struct thread_group *tg, void *arg)
{
	struct member_walk *w = arg;
	struct mm *mm = NULL;

	if (tg->container != w->num)
		return 0;
	pthread_mutex_lock(&tg->lock);
	if (tg->state != TG_RUNNING) {
		pthread_mutex_unlock(&tg->lock);
		return 0;
	}
	if (tg->exiting) {
		w->exiting = true;
		pthread_mutex_unlock(&tg->lock);
		return 0;
	}
	if (tg->leader)
		mm = task_get_mm(tg->leader);
	if (mm && w->n < w->cap) {
		tg_get(tg);
		w->v[w->n].tg = tg;
		w->v[w->n].mm = mm;
		w->v[w->n].oom_score_adj = __atomic_load_n(&tg->oom_score_adj, __ATOMIC_RELAXED);
		w->n++;
		mm = NULL;
	}
	pthread_mutex_unlock(&tg->lock);
	if (mm)
		mm_put(mm);
	return 0;
}

/*
 * The member's processes (references in w->v, released by walk_put) and their resident pages
 * (rss[i] each, malloc'd in *rss). Returns the total in pages.
 */
static uint64_t member_walk(struct kernel *k, struct member_walk *w, uint64_t **rss)
{
	uint64_t total = 0;

	*rss = NULL;
	pthread_mutex_lock(&k->tree_lock);
	w->cap = (size_t)k->nr_tasks + 1;
	w->v = calloc(w->cap, sizeof(*w->v));
	if (w->v)
		pid_for_each_tg(k, member_collect, w);
	pthread_mutex_unlock(&k->tree_lock);
	if (!w->v)
		return 0;
	*rss = calloc(w->n ? w->n : 1, sizeof(uint64_t));
	for (size_t i = 0; i < w->n; i++) {
		uint64_t r = mm_rss_pages(w->v[i].mm);

		if (*rss)
			(*rss)[i] = r;
		total += r;
		/* No victim's pages are kept alive by this reference. */
		mm_put(w->v[i].mm);
		w->v[i].mm = NULL;
	}
	return total;
}

static void walk_put(struct member_walk *w)
{
	for (size_t i = 0; i < w->n; i++) {
		if (w->v[i].mm)
			mm_put(w->v[i].mm);
		tg_put(w->v[i].tg);
	}
	free(w->v);
}

/* Kills the process of m that a memory cgroup's OOM killer would (most resident pages). */
static void member_oom_kill(struct kernel *k, struct control_member *m, struct member_walk *w,
			    const uint64_t *rss, uint64_t usage, struct thread_group *self,
			    uint64_t need)
{
	struct oom_candidate *cand = calloc(w->n ? w->n : 1, sizeof(*cand));
	int best;

	if (!cand || !rss) {
		free(cand);
		return;
	}
	for (size_t i = 0; i < w->n; i++) {
		cand[i].pid = w->v[i].tg->pid;
		cand[i].rss_pages = rss[i];
		cand[i].oom_score_adj = w->v[i].oom_score_adj;
		/* The caller's pending request is its own, as the sandbox's OOM killer counts it. */
		if (w->v[i].tg == self)
			cand[i].rss_pages += need / PAGE_SIZE;
	}
	best = oom_choose_victim(cand, w->n, m->memory_limit / PAGE_SIZE);
	free(cand);
	if (best < 0)
		return;
	log_warn("pod: container %s: memory limit %llu reached (%llu resident): killed pid %d",
		 m->id, (unsigned long long)m->memory_limit, (unsigned long long)usage * PAGE_SIZE,
		 w->v[best].tg->pid);
	signal_send(w->v[best].tg, NULL, LINUX_SIGKILL, NULL, 0);
	pthread_mutex_lock(&oom_lock);
	__atomic_fetch_add(&m->oom_kills, 1, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&oom_cond);
	pthread_mutex_unlock(&oom_lock);
}

/* mf->charge_hook: a member's processes past its limit lose their biggest. */
static void member_charge(struct memfile *mf, uint64_t len, void *arg)
{
	struct kernel *k = arg;
	struct task *cur = task_current();
	struct control_member *m;
	struct member_walk w = { 0 };
	uint64_t *rss, usage;

	if (!cur || !cur->tg || cur->tg->container <= 0)
		return;
	m = member_by_num(cur->tg->container);
	if (!m)
		return;
	if (!__atomic_load_n(&m->memory_limit, __ATOMIC_RELAXED) ||
	    __atomic_add_fetch(&m->charged, len, __ATOMIC_RELAXED) < MEMBER_CHECK_BYTES) {
		member_put(m);
		return;
	}
	__atomic_store_n(&m->charged, 0, __ATOMIC_RELAXED);
	w.num = m->num;
	usage = member_walk(k, &w, &rss) + len / PAGE_SIZE;
	/* A victim still on its way out gives its memory back: no second kill meanwhile. */
	if (!w.exiting && usage * PAGE_SIZE > m->memory_limit)
		member_oom_kill(k, m, &w, rss, usage, cur->tg, len);
	free(rss);
	walk_put(&w);
	member_put(m);
}

int control_member_oom_wait(struct control_member *m, int fd, uint64_t kills, uint64_t *total)
{
	int ret = 0;

	pthread_mutex_lock(&oom_lock);
	while (__atomic_load_n(&m->oom_kills, __ATOMIC_RELAXED) <= kills) {
		struct pollfd p = { .fd = fd, .events = POLLRDHUP };
		struct timespec ts;

		/* The peer's hangup ends the wait: checked every 200 ms. */
		if (poll(&p, 1, 0) > 0) {
			ret = -EPIPE;
			break;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 200 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&oom_cond, &oom_lock, &ts);
	}
	*total = __atomic_load_n(&m->oom_kills, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&oom_lock);
	return ret;
}

void control_members_init(struct kernel *k)
{
	/* Allocations are charged from then on: only once a member has a memory limit. */
	k->mf.charge_arg = k;
	/* New anonymous memory is populated on first touch, where memfile_fits is asked. */
	__atomic_store_n(&k->mf.lazy, true, __ATOMIC_RELEASE);
	__atomic_store_n(&k->mf.charge_hook, member_charge, __ATOMIC_RELEASE);
}

int control_member_memory(struct kernel *k, int32_t num, uint64_t *usage, uint64_t *limit,
			  uint64_t *oom_kills)
{
	struct control_member *m = num > 0 ? member_by_num(num) : NULL;
	struct member_walk w = { .num = num };
	uint64_t *rss;

	if (!m)
		return -ESRCH;
	*usage = member_walk(k, &w, &rss) * PAGE_SIZE;
	free(rss);
	walk_put(&w);
	*limit = __atomic_load_n(&m->memory_limit, __ATOMIC_RELAXED);
	*oom_kills = __atomic_load_n(&m->oom_kills, __ATOMIC_RELAXED);
	member_put(m);
	return 0;
}

static void send_reply(int fd, int err, int32_t pid)
{
	struct control_hdr h = { .magic = CONTROL_MAGIC,
				 .version = CONTROL_VERSION,
				 .op = CONTROL_REPLY,
				 .len = sizeof(struct control_reply) };
	struct control_reply r = { .err = err, .pid = pid };
	char out[sizeof(h) + sizeof(r)];

	memcpy(out, &h, sizeof(h));
	memcpy(out + sizeof(h), &r, sizeof(r));
	control_send_msg(fd, out, sizeof(out));
}

/*
 * CONTROL_OOM_WAIT aimed at member m (husk-oomwatch of a member container): answers at the
 * member's next OOM kill past the request's count, then waits (at most a minute, polling) for
 * the watcher to hang up once it made its report. A hang-up before the kill ends the wait.
 */
static void serve_member_oom_wait(struct control_member *m, int fd, const void *msg, size_t len)
{
	struct control_hdr h;
	struct control_oom req, r = { 0 };
	char out[sizeof(h) + sizeof(r)];
	uint64_t total = 0;

	memcpy(&h, msg, sizeof(h));
	if (len != sizeof(h) + sizeof(req) || h.len != sizeof(req)) {
		r.err = -EINVAL;
	} else {
		memcpy(&req, (const char *)msg + sizeof(h), sizeof(req));
		if (req.flags & CONTROL_OOM_REPORTER) {
			/* The kills up to its count were reported (or came before it watched). */
			pthread_mutex_lock(&oom_lock);
			if (m->oom_reported < req.kills)
				m->oom_reported = req.kills;
			pthread_mutex_unlock(&oom_lock);
		}
		if (control_member_oom_wait(m, fd, req.kills, &total) < 0)
			return; /* the watcher is gone */
		r.kills = total;
	}
	h.op = CONTROL_OOM_REPLY;
	h.len = sizeof(r);
	memcpy(out, &h, sizeof(h));
	memcpy(out + sizeof(h), &r, sizeof(r));
	control_send_msg(fd, out, sizeof(out));
	for (int i = 0; r.err == 0 && i < 600; i++) {
		struct pollfd p = { .fd = fd, .events = POLLRDHUP };

		if (poll(&p, 1, 100) != 0)
			break;
	}
	/* The watcher hung up: it made its report (or gave up). */
	pthread_mutex_lock(&oom_lock);
	if (r.err == 0 && m->oom_reported < total)
		m->oom_reported = total;
	pthread_cond_broadcast(&oom_cond);
	pthread_mutex_unlock(&oom_lock);
}

/*
 * Before a member's proxy learns that its init ended: when husk started a husk-oomwatch for it
 * (--oom-reporter), each OOM kill is reported first (at most a minute), even one before the
 * watcher's first wait, so that the engine, which removes the cgroup once the container is
 * gone, reads the OOM before the exit, as the sandbox's end waits (server.c).
 */
static void member_oom_barrier(struct control_member *m)
{
	struct timespec end;

	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += 60;
	pthread_mutex_lock(&oom_lock);
	while (m->s.oom_reporter &&
	       m->oom_reported < __atomic_load_n(&m->oom_kills, __ATOMIC_RELAXED) &&
	       pthread_cond_timedwait(&oom_cond, &oom_lock, &end) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&oom_lock);
}

static void send_exited(int fd, int status)
{
	struct control_hdr h = { .magic = CONTROL_MAGIC,
				 .version = CONTROL_VERSION,
				 .op = CONTROL_EXITED,
				 .len = sizeof(struct control_exited) };
	struct control_exited ex = { .status = status };
	char out[sizeof(h) + sizeof(ex)];

	memcpy(out, &h, sizeof(h));
	memcpy(out + sizeof(h), &ex, sizeof(ex));
	control_send_msg(fd, out, sizeof(out));
}

/* Whether id (size bytes) is a NUL-terminated container id husk would accept. */
static bool id_ok(const char *id, size_t size)
{
	size_t len = strnlen(id, size);

	if (len == 0 || len == size)
		return false;
	for (size_t i = 0; i < len; i++) {
		char ch = id[i];

		if (!(ch >= 'a' && ch <= 'z') && !(ch >= 'A' && ch <= 'Z') &&
		    !(ch >= '0' && ch <= '9') && !strchr("_+.-", ch))
			return false;
	}
	return true;
}

struct watch {
	struct kernel *k;
	struct control_member *m;
	int fd;
};

/* The member's life line: once husk's end of the connection closes, the member is killed. */
static void *watch_main(void *arg)
{
	struct watch *w = arg;
	struct pollfd p = { .fd = w->fd, .events = POLLIN | POLLRDHUP };
	char byte = 0;

	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
	log_info("pod: container %s: its proxy is gone: killing its processes", w->m->id);
	control_send_signal_container(w->k, w->m->num, -1, LINUX_SIGKILL);
	/* An init still at its gate runs into the SIGKILL now. */
	if (w->m->s.gate_fd >= 0 && write(w->m->s.gate_fd, &byte, 1) < 0)
		log_debug("pod: container %s: gate: %s", w->m->id, strerror(errno));
	return NULL;
}

void control_container_create(struct kernel *k, int fd, const void *msg, size_t len, int *fds,
			      int nfds)
{
	const char *p =
		(const char *)msg + sizeof(struct control_hdr) + sizeof(struct control_container);
	const char *end = (const char *)msg + len;
	struct control_container cc;
	struct member_entry *e = NULL;
	struct control_member *m = NULL, *dup;
	struct thread_group *init = NULL;
	struct watch w;
	pthread_attr_t attr;
	pthread_t watcher;
	char **argv = NULL, why[256] = "";
	int32_t pid = 0;
	int err = 0, status;

	if (len < sizeof(struct control_hdr) + sizeof(cc)) {
		err = -EINVAL;
		goto out_reply;
	}
	memcpy(&cc, (const char *)msg + sizeof(struct control_hdr), sizeof(cc));
	if (!id_ok(cc.id, sizeof(cc.id)) || cc.nargs < 2 || cc.nargs > CONTROL_CONTAINER_MAX_ARGS ||
	    cc.nfds > CONTROL_CONTAINER_MAX_FDS || (int)cc.nfds != nfds || !setup_fn) {
		err = -EINVAL;
		goto out_reply;
	}
	argv = calloc(cc.nargs + 1, sizeof(char *));
	if (!argv) {
		err = -ENOMEM;
		goto out_reply;
	}
	for (uint32_t i = 0; i < cc.nargs; i++) {
		const char *nul = p < end ? memchr(p, 0, (size_t)(end - p)) : NULL;

		if (!nul) {
			err = -EINVAL;
			goto out_reply;
		}
		argv[i] = (char *)p;
		p = nul + 1;
	}
	if (p != end) {
		err = -EINVAL;
		goto out_reply;
	}
	dup = member_find(cc.id);
	if (dup) {
		member_put(dup);
		err = -EEXIST;
		goto out_reply;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		err = -ENOMEM;
		goto out_reply;
	}
	m = &e->m;
	list_init(&e->link);
	m->refs = 1;
	snprintf(m->id, sizeof(m->id), "%s", cc.id);
	m->s.gate_fd = -1;
	for (int i = 0; i < 3; i++)
		m->s.stdio[i] = -1;
	/* The hook takes every fd. */
	err = setup_fn(k, (int)cc.nargs, argv, fds, cc.slots, nfds, &m->s, why, sizeof(why));
	nfds = 0;
	if (err < 0) {
		log_warn("pod: container %s: %s", m->id, why[0] ? why : strerror(-err));
		goto out_reply;
	}
	m->memory_limit = m->s.memory_limit;
	if (m->memory_limit)
		control_members_init(k);
	pthread_mutex_lock(&members_lock);
	m->num = next_num++;
	list_add_tail(&e->link, &members);
	m->refs++; /* the list's */
	pthread_mutex_unlock(&members_lock);
	/* Before its init exists: it never sees the others. */
	pid_container_set_private(m->num, m->s.private_pids);
	pid_container_set_pids_limit(k, m->num, m->s.pids_limit);
	{
		struct spawn_spec s = {
			.argv = (const char *const *)m->s.argv,
			.envp = (const char *const *)m->s.envp,
			.cwd = m->s.cwd,
			.uid = m->s.uid,
			.gid = m->s.gid,
			.ngroups = m->s.ngroups,
			.groups = m->s.groups,
			.umask = m->s.umask,
			.stdio = { m->s.stdio[0], m->s.stdio[1], m->s.stdio[2] },
			.npreserve = m->s.npreserve,
			.preserve = m->s.preserve,
			.pid_out = &pid,
			.tg_out = &init,
			.member = m,
			.gate = true,
			.gate_fd = m->s.gate_fd,
		};

		err = kernel_spawn(k, &s);
	}
	if (err < 0) {
		log_warn("pod: container %s: starting %s: %s", m->id, m->s.argv[0], strerror(-err));
		member_unlist(m);
		goto out_reply;
	}
	/* kernel_spawn made the process its own copies. */
	for (int i = 0; i < 3; i++) {
		if (m->s.stdio[i] >= 0)
			close(m->s.stdio[i]);
		m->s.stdio[i] = -1;
	}
	for (int i = 0; i < m->s.npreserve; i++)
		close(m->s.preserve[i]);
	m->s.npreserve = 0;
	log_info("pod: container %s is member %d, its init pid %d", m->id, m->num, pid);
	send_reply(fd, 0, pid);
	free(argv);
	argv = NULL;

	w.k = k;
	w.m = m;
	w.fd = fd;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, WATCH_THREAD_STACK);
	err = -pthread_create(&watcher, &attr, watch_main, &w);
	pthread_attr_destroy(&attr);
	if (err < 0)
		control_send_signal_container(k, m->num, -1, LINUX_SIGKILL);
	status = control_wait_exit(k, init);
	tg_put(init);
	log_info("pod: container %s: its init ended (status %#x)", m->id, status);
	/* No request for it is served from now on (an exec would outlive the kill below). */
	__atomic_store_n(&m->ending, true, __ATOMIC_RELEASE);
	member_oom_barrier(m);
	send_exited(fd, status);
	/* The member's processes end with its init, as in a pid namespace of its own. */
	control_send_signal_container(k, m->num, -1, LINUX_SIGKILL);
	if (err == 0)
		pthread_join(watcher, NULL);
	member_unlist(m);
	member_put(m);
	return;

out_reply:
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	if (m)
		member_put(m);
	else
		free(e);
	free(argv);
	send_reply(fd, err, 0);
}

static void serve_member_ps(struct kernel *k, struct control_member *m, int fd)
{
	size_t max = CONTROL_PS_MAX;
	struct control_hdr h = { .magic = CONTROL_MAGIC,
				 .version = CONTROL_VERSION,
				 .op = CONTROL_PS_REPLY };
	struct control_ps_reply r = { 0 };
	size_t sz = sizeof(h) + sizeof(r) + max * sizeof(struct control_ps_entry);
	char *buf = calloc(1, sz);
	int n;

	if (!buf)
		return;
	n = control_list_container_processes(
		k, m->num, (struct control_ps_entry *)(buf + sizeof(h) + sizeof(r)), (int)max);
	r.err = n < 0 ? n : 0;
	r.n = n < 0 ? 0 : (uint32_t)n;
	h.len = (uint32_t)(sizeof(r) + r.n * sizeof(struct control_ps_entry));
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), &r, sizeof(r));
	control_send_msg(fd, buf, sizeof(h) + h.len);
	free(buf);
}

/* A member's exec waiting for its process: the connection closing first kills the process. */
struct exec_watch {
	struct thread_group *tg; /* the caller's reference */
	int fd;
	bool ended; /* atomic: the process ended, its status is on its way */
};

static void *exec_watch_main(void *arg)
{
	struct exec_watch *w = arg;
	struct pollfd p = { .fd = w->fd, .events = POLLIN | POLLRDHUP };
	struct linux_siginfo info;

	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
	if (__atomic_load_n(&w->ended, __ATOMIC_ACQUIRE))
		return NULL;
	log_info("pod: an exec's connection closed before its process %d ended: killed",
		 w->tg->pid);
	signal_info_from(&info, LINUX_SIGKILL, LINUX_SI_USER, NULL);
	signal_send(w->tg, NULL, LINUX_SIGKILL, &info, SIGSEND_FROM_OUTSIDE);
	return NULL;
}

/* CONTROL_STATS for a member: its memory as its /sys/fs/cgroup shows it, its processes. */
static void serve_member_stats(struct kernel *k, struct control_member *m, int fd, size_t len)
{
	struct control_hdr h = { .magic = CONTROL_MAGIC,
				 .version = CONTROL_VERSION,
				 .op = CONTROL_STATS_REPLY,
				 .len = sizeof(struct control_stats) };
	struct control_stats r = { 0 };
	char out[sizeof(h) + sizeof(r)];
	uint64_t usage = 0, limit = 0, kills = 0;

	if (len != sizeof(h)) {
		r.err = -EINVAL;
	} else {
		control_member_memory(k, m->num, &usage, &limit, &kills);
		r.memory_usage = usage;
		r.memory_limit = limit;
		r.oom_kills = kills;
		{
			int cur, lim;

			pid_container_pids(k, m->num, &cur, &lim);
			r.pids_current = cur;
			r.pids_limit = lim;
		}
	}
	memcpy(out, &h, sizeof(h));
	memcpy(out + sizeof(h), &r, sizeof(r));
	control_send_msg(fd, out, sizeof(out));
}

void control_container_target(struct kernel *k, int fd, const void *msg, size_t len)
{
	struct control_container_target t;
	struct control_member *m;
	struct control_hdr h;
	int fds[CONTROL_MAX_FDS], nfds;
	char reply[64];
	void *buf;
	ssize_t n;

	if (len != sizeof(h) + sizeof(t))
		return;
	memcpy(&t, (const char *)msg + sizeof(h), sizeof(t));
	if (!id_ok(t.id, sizeof(t.id)))
		return;
	m = member_find(t.id);
	if (!m)
		return; /* the connection closes: husk reports the container as not running */
	buf = malloc(CONTROL_MAX_MSG);
	n = buf ? control_recv_request(fd, buf, CONTROL_MAX_MSG, fds, &nfds) : -ENOMEM;
	if (n < (ssize_t)sizeof(h))
		goto out;
	memcpy(&h, buf, sizeof(h));
	if (h.magic != CONTROL_MAGIC || h.version != CONTROL_VERSION)
		goto out_close;
	/*
	 * Once its init ended, only husk-oomwatch's waits: the end waits for the kills it has
	 * yet to report (member_oom_barrier), one of them maybe made while it reconnected.
	 */
	if (__atomic_load_n(&m->ending, __ATOMIC_ACQUIRE) && h.op != CONTROL_OOM_WAIT)
		goto out_close;
	switch (h.op) {
	case CONTROL_EXEC: {
		struct thread_group *tg = NULL;

		n = control_serve_member(k, m, buf, (size_t)n, fds, nfds, reply, &tg);
		nfds = 0;
		control_send_msg(fd, reply, (size_t)n);
		if (tg) {
			struct exec_watch ew = { .tg = tg, .fd = fd };
			pthread_attr_t attr;
			pthread_t th;
			int status, werr;

			/* As for the sandbox's own execs: the process dies with husk exec (or its
			 * proxy), as runc's exec'd process with the pid the engine holds. */
			pthread_attr_init(&attr);
			pthread_attr_setstacksize(&attr, WATCH_THREAD_STACK);
			werr = pthread_create(&th, &attr, exec_watch_main, &ew);
			pthread_attr_destroy(&attr);
			status = control_wait_exit(k, tg);
			__atomic_store_n(&ew.ended, true, __ATOMIC_RELEASE);
			send_exited(fd, status);
			if (werr == 0)
				pthread_join(th, NULL);
			tg_put(tg);
		}
		break;
	}
	case CONTROL_SIGNAL: {
		struct control_signal sg;
		int err = control_decode_signal(buf, (size_t)n, &sg);

		if (!err)
			err = control_send_signal_container(k, m->num, sg.pid, sg.sig);
		send_reply(fd, err, sg.pid);
		break;
	}
	case CONTROL_PS:
		serve_member_ps(k, m, fd);
		break;
	case CONTROL_STATS:
		serve_member_stats(k, m, fd, (size_t)n);
		break;
	case CONTROL_UPDATE: {
		/* Its memory limit (the next charge measures against it) and pids limit. */
		struct control_update u;
		int err = control_decode_update(buf, (size_t)n, &u);

		if (!err && u.memory != -2)
			__atomic_store_n(&m->memory_limit, u.memory < 0 ? 0 : (uint64_t)u.memory,
					 __ATOMIC_RELAXED);
		if (!err && u.memory > 0)
			control_members_init(k);
		if (!err && u.pids != -2)
			pid_container_set_pids_limit(k, m->num, u.pids < 0 ? 0 : (int)u.pids);
		if (!err)
			__atomic_store_n(&m->charged, MEMBER_CHECK_BYTES, __ATOMIC_RELAXED);
		send_reply(fd, err, 0);
		break;
	}
	case CONTROL_OOM_WAIT:
		serve_member_oom_wait(m, fd, buf, (size_t)n);
		break;
	case CONTROL_PAUSE:
	case CONTROL_RESUME:
		send_reply(fd, -EOPNOTSUPP, 0);
		break;
	default:
		break;
	}
out_close:
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
out:
	free(buf);
	member_put(m);
}
