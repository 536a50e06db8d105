/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Thread and process exit, zombies, re-parenting, wait4/waitid, pidfds and the end of the
 * sandbox.
 *
 * A thread leaving removes itself from its process's task list. The leader's host thread waits
 * until every other thread is gone and then does the process's exit: it owns the process's
 * platform space (ptrace: the tracer of the stub's first thread), so it must be the last to let
 * go of the mm. The process becomes a zombie, its children go to the nearest subreaper or to
 * pid 1, and its parent is notified (or the process is reaped at once when the parent ignores
 * SIGCHLD). When pid 1's process ends, every other process is killed and the sandbox ends.
 *
 * SIGCHLD is sent with k->tree_lock held (as Linux does under tasklist_lock), so that it is
 * pending before the parent can see and reap the zombie: a late SIGCHLD would interrupt the
 * parent's next wait. Other signals generated here (pdeath signals, SIGHUP/SIGCONT to orphaned
 * stopped groups) are collected under the lock and sent after it is released.
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "common/err.h"
#include "common/log.h"
#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/kernel/futex.h"
#include "sentry/kernel/ipc.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/ptrace.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/nsproxy.h"
#include "sentry/kernel/pidns.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/timer.h"
#include "sentry/kernel/waitq.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/vfs.h"

#define WCORE_FLAG 0x80
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* The SIGCHLD part of the x86-64 siginfo (the rest of the 128 bytes is zero). */
struct chld_siginfo {
	int32_t signo, err, code, pad0;
	int32_t pid;
	uint32_t uid;
	int32_t status, pad1;
	int64_t utime, stime; /* clock ticks */
};

/* A signal to send once k->tree_lock is released. */
struct deferred_sig {
	struct deferred_sig *next;
	struct thread_group *tg; /* referenced */
	int sig;
	bool has_info;
	uint8_t info[128] __attribute__((aligned(8))); /* read as a struct siginfo */
};

struct sigbatch {
	struct deferred_sig *head, **tail;
};

static void sigbatch_init(struct sigbatch *b)
{
	b->head = NULL;
	b->tail = &b->head;
}

static void sigbatch_add(struct sigbatch *b, struct thread_group *tg, int sig, const void *info)
{
	struct deferred_sig *d = calloc(1, sizeof(*d));

	if (!d) {
		log_warn("pid %d: out of memory: signal %d lost", tg->pid, sig);
		return;
	}
	tg_get(tg);
	d->tg = tg;
	d->sig = sig;
	if (info) {
		memcpy(d->info, info, sizeof(d->info));
		d->has_info = true;
	}
	*b->tail = d;
	b->tail = &d->next;
}

/* Sends the batch in order (with no lock held) and frees it. */
static void sigbatch_send(struct sigbatch *b)
{
	struct deferred_sig *d, *n;

	for (d = b->head; d; d = n) {
		n = d->next;
		signal_send_tg(d->tg, d->sig, d->has_info ? d->info : NULL);
		tg_put(d->tg);
		free(d);
	}
	sigbatch_init(b);
}

#define NSEC_PER_TICK (1000000000ULL / 100) /* USER_HZ */

/* The CLD_* code and si_status for a wait status. */
static void decode_exit(int status, int *code, int *cstatus)
{
	if ((status & 0x7f) == 0) {
		*code = CLD_EXITED;
		*cstatus = (status >> 8) & 0xff;
	} else {
		*code = (status & WCORE_FLAG) ? CLD_DUMPED : CLD_KILLED;
		*cstatus = status & 0x7f;
	}
}

static void fill_chld_info(uint8_t buf[128], struct thread_group *c, int code, int status)
{
	struct chld_siginfo *si = (struct chld_siginfo *)(void *)buf;

	memset(buf, 0, 128);
	si->signo = SIGCHLD;
	si->code = code;
	/* As the parent's pid namespace sees it. */
	si->pid = c->parent ? pid_ns_tg_nr(c, c->parent->pidns) : c->pid;
	si->uid = c->leader ? c->leader->cred.uid : 0;
	si->status = status;
	si->utime = (int64_t)((c->utime_ns + c->cutime_ns) / NSEC_PER_TICK);
	si->stime = (int64_t)((c->stime_ns + c->cstime_ns) / NSEC_PER_TICK);
}

/* The parent's SIGCHLD disposition: ignored (SIG_IGN), and its flags. */
static void chld_action(struct thread_group *parent, bool *ignored, uint64_t *flags)
{
	struct sighand *sh = parent->sighand;

	pthread_mutex_lock(&sh->lock);
	*ignored = sh->actions[SIGCHLD - 1].handler == (uint64_t)(uintptr_t)SIG_IGN;
	*flags = sh->actions[SIGCHLD - 1].flags;
	pthread_mutex_unlock(&sh->lock);
}

/*
 * Removes a zombie from the tree and the pid table, charging its times to its parent
 * (k->tree_lock held). May free c: the caller must not touch it afterwards.
 */
static void tg_reap(struct thread_group *c)
{
	struct thread_group *p = c->parent;

	c->reaped = true;
	pthread_mutex_lock(&c->lock);
	c->state = TG_DEAD;
	pthread_mutex_unlock(&c->lock);
	if (p) {
		list_del(&c->sibling);
		list_init(&c->sibling);
		pthread_mutex_lock(&p->lock);
		p->cutime_ns += c->utime_ns + c->cutime_ns;
		p->cstime_ns += c->stime_ns + c->cstime_ns;
		p->cmaxrss_kb = MAX(p->cmaxrss_kb, MAX(c->maxrss_kb, c->cmaxrss_kb));
		pthread_mutex_unlock(&p->lock);
	}
	waitq_wake_all(&c->exit_wq);
	pid_remove(c->k, c->leader);
}

/*
 * Tells c's parent that c is a zombie: sends its exit signal with CLD_* siginfo and wakes its
 * waiters. Returns true when c must be reaped at once: no parent, or a parent that ignores
 * SIGCHLD or set SA_NOCLDWAIT (exit signal SIGCHLD only). k->tree_lock held, no tg->lock.
 */
static bool notify_parent_exit(struct thread_group *c)
{
	struct thread_group *p = c->parent;
	uint8_t info[128] __attribute__((aligned(8))); /* read as a struct siginfo */
	bool autoreap = false, ignored;
	uint64_t flags;
	int code, st, sig = c->exit_signal;

	if (!p)
		return !c->is_init;
	decode_exit(c->exit_status, &code, &st);
	fill_chld_info(info, c, code, st);
	if (sig == SIGCHLD) {
		chld_action(p, &ignored, &flags);
		if (ignored) {
			autoreap = true;
			sig = 0;
		} else if (flags & SA_NOCLDWAIT) {
			autoreap = true;
		}
	}
	if (sig > 0 && sig <= LINUX_NSIG) {
		((struct chld_siginfo *)(void *)info)->signo = sig;
		signal_send_tg(p, sig, info);
	}
	waitq_wake_all(&p->child_wq);
	return autoreap;
}

struct pgrp_scan {
	int32_t pgid, sid;
	struct thread_group *ignore;
	bool orphaned, stopped;
	struct sigbatch *b;
};

static int pgrp_scan_fn(struct thread_group *tg, void *arg)
{
	struct pgrp_scan *s = arg;

	if (tg->pgid != s->pgid || tg == s->ignore || tg->state != TG_RUNNING)
		return 0;
	/* A member whose parent is in another group of the same session keeps it attached. */
	if (tg->parent && tg->parent != s->ignore && tg->parent->pgid != s->pgid &&
	    tg->parent->sid == s->sid)
		s->orphaned = false;
	if (__atomic_load_n(&tg->stopped, __ATOMIC_ACQUIRE))
		s->stopped = true;
	return 0;
}

static int pgrp_hup_fn(struct thread_group *tg, void *arg)
{
	struct pgrp_scan *s = arg;

	if (tg->pgid == s->pgid && tg != s->ignore && tg->state == TG_RUNNING) {
		sigbatch_add(s->b, tg, SIGHUP, NULL);
		sigbatch_add(s->b, tg, SIGCONT, NULL);
	}
	return 0;
}

/*
 * POSIX: a process group that becomes orphaned (ignoring the exiting process) while one of its
 * members is stopped gets SIGHUP then SIGCONT. k->tree_lock held.
 */
static void check_orphaned_pgrp(struct kernel *k, int32_t pgid, int32_t sid,
				struct thread_group *ignore, struct sigbatch *b)
{
	struct pgrp_scan s = {
		.pgid = pgid, .sid = sid, .ignore = ignore, .orphaned = true, .b = b
	};

	pid_for_each_tg(k, pgrp_scan_fn, &s);
	if (s.orphaned && s.stopped)
		pid_for_each_tg(k, pgrp_hup_fn, &s);
}

/*
 * The nearest live subreaper above tg in its pid namespace, else that namespace's pid 1 (the
 * sandbox's pid 1 for the sandbox's namespace); NULL when tg is the sandbox's pid 1 or its
 * namespace is ending.
 */
static struct thread_group *find_reaper(struct thread_group *tg)
{
	struct thread_group *p;
	struct task *init;

	if (tg->is_init)
		return NULL;
	/* A pid namespace whose pid 1 ended: its processes are being killed, and go unwaited
	 * (Linux's zap_pid_ns_processes reaps them). */
	if (pid_ns_dying(tg->pidns))
		return NULL;
	for (p = tg->parent; p; p = p->parent) {
		/* Subreapers are looked for inside the namespace only, up to its pid 1. */
		if (tg->pidns &&
		    (p == tg->pidns->reaper || !pid_ns_is_ancestor(tg->pidns, p->pidns)))
			break;
		if (p->subreaper && p->state == TG_RUNNING && !p->exiting)
			return p;
	}
	if (tg->pidns && tg->pidns->reaper)
		return tg->pidns->reaper;
	init = pid_lookup(tg->k, 1);
	return init ? init->tg : NULL;
}

/* Moves tg's children to their new reaper (k->tree_lock held). */
static void reparent_children(struct thread_group *tg, struct sigbatch *b)
{
	struct thread_group *reaper = find_reaper(tg), *c, *n;
	struct task *t;

	list_for_each_entry_safe(c, n, &tg->children, sibling) {
		list_del(&c->sibling);
		c->parent = reaper;
		c->ppid = reaper ? reaper->pid : 0;
		if (reaper)
			list_add_tail(&c->sibling, &reaper->children);
		else
			list_init(&c->sibling);
		/* We don't want people slaying init (Linux's reparent_leader). */
		c->exit_signal = SIGCHLD;
		pthread_mutex_lock(&c->lock);
		list_for_each_entry(t, &c->tasks, tg_link) {
			if (t->pdeath_signal) {
				sigbatch_add(b, c, t->pdeath_signal, NULL);
				break;
			}
		}
		pthread_mutex_unlock(&c->lock);
		if (c->pgid != tg->pgid && c->sid == tg->sid)
			check_orphaned_pgrp(tg->k, c->pgid, c->sid, tg, b);
		if (c->state == TG_ZOMBIE && !c->ptrace_held && notify_parent_exit(c))
			tg_reap(c);
	}
}

void tg_release_traced_zombie(struct thread_group *tg)
{
	if (!tg->ptrace_held)
		return;
	tg->ptrace_held = false;
	if (tg->state == TG_ZOMBIE && notify_parent_exit(tg))
		tg_reap(tg);
}

/* Kills a whole process (end of the sandbox). tree_lock held. */
static int kill_tg_fn(struct thread_group *tg, void *arg)
{
	struct task *t;

	if (tg == arg)
		return 0;
	pthread_mutex_lock(&tg->lock);
	if (!tg->group_exit) {
		tg->group_exit = true;
		tg->exiting = true;
		tg->exit_status = SIGKILL;
	}
	list_for_each_entry(t, &tg->tasks, tg_link) {
		__atomic_store_n(&t->exiting, true, __ATOMIC_RELEASE);
		task_wake(t);
	}
	pthread_mutex_unlock(&tg->lock);
	return 0;
}

struct pid_ns_kill {
	struct pid_ns *ns;
	struct thread_group *init;
};

/* Kills a process of an ending pid namespace (tree_lock held). */
static int kill_ns_fn(struct thread_group *tg, void *arg)
{
	struct pid_ns_kill *nk = arg;

	if (tg == nk->init || !pid_ns_is_ancestor(nk->ns, tg->pidns))
		return 0;
	return kill_tg_fn(tg, NULL);
}

/* The process of t (its leader, last out) ends: zombie, re-parenting, notification. */
static void process_exit(struct task *t)
{
	struct thread_group *tg = t->tg;
	struct kernel *k = t->k;
	struct sigbatch b;
	int reboot_sig = 0;
	bool reap;

	sigbatch_init(&b);
	pthread_mutex_lock(&k->tree_lock);
	if (tg->is_init) {
		pid_for_each_tg(k, kill_tg_fn, tg);
		reboot_sig = nsproxy_initial(k)->pid->reboot;
	}
	if (tg->pidns && tg->pidns->reaper == tg) {
		/* A pid namespace's pid 1: the namespace ends, every other process of it is
		 * killed, and its parent hears of it once they are gone (Linux's
		 * zap_pid_ns_processes). */
		struct pid_ns_kill nk = { .ns = tg->pidns, .init = tg };

		tg->pidns->dead = true;
		pid_for_each_tg(k, kill_ns_fn, &nk);
		reparent_children(tg, &b);
		pid_ns_wait_empty(k, tg->pidns, tg);
		tg->pidns->reaper = NULL;
		reboot_sig = tg->pidns->reboot;
	}
	pthread_mutex_lock(&tg->lock);
	if (!tg->group_exit)
		tg->exit_status = t->exit_code;
	/* After reboot(2) in its namespace, pid 1 is reported killed by the command's signal. */
	if (reboot_sig)
		tg->exit_status = reboot_sig;
	tg->exiting = true;
	pthread_mutex_unlock(&tg->lock);
	if (tg->parent && tg->parent->pgid != tg->pgid && tg->parent->sid == tg->sid)
		check_orphaned_pgrp(k, tg->pgid, tg->sid, tg, &b);
	reparent_children(tg, &b);
	pthread_mutex_lock(&tg->lock);
	tg->state = TG_ZOMBIE;
	pthread_mutex_unlock(&tg->lock);
	if (tg->pidns)
		pid_ns_task_gone(); /* its namespace's ending pid 1 may wait for it */
	/* A traced leader's process waits for its tracer before its real parent hears of it. */
	if (unlikely(__atomic_load_n(&t->ptrace, __ATOMIC_ACQUIRE)) && ptrace_holds_zombie(tg)) {
		tg->ptrace_held = true;
		reap = false;
	} else {
		reap = notify_parent_exit(tg);
	}
	waitq_wake_all(&tg->exit_wq);
	if (reap)
		tg_reap(tg);
	pthread_mutex_unlock(&k->tree_lock);
	sigbatch_send(&b);
}

void task_exit_thread(struct task *t)
{
	struct thread_group *tg = t->tg;
	struct kernel *k = t->k;
	bool leader;

	if (unlikely(__atomic_load_n(&t->ptrace, __ATOMIC_ACQUIRE)))
		ptrace_exit_event(t);
	/* Robust futexes first, then CLEARTID, as Linux: a joiner sees the lists processed. */
	if (t->mm)
		futex_exit_cleanup(t);
	if (t->mm && t->clear_child_tid) {
		uint32_t zero = 0;

		if (mm_copy_out(t->mm, t->clear_child_tid, &zero, sizeof(zero)) == sizeof(zero))
			futex_wake(t, t->clear_child_tid, 1);
	}
	task_vfork_release(t);

	/* Only an exec's de-threading changes tg->leader, and it waits for this thread. */
	pthread_mutex_lock(&tg->lock);
	leader = tg->leader == t;
	pthread_mutex_unlock(&tg->lock);
	if (!leader)
		task_release(t);
	else
		signal_leader_exiting(t);

	pthread_mutex_lock(&k->tree_lock);
	pthread_mutex_lock(&tg->lock);
	cputime_task_exit(t);
	list_del(&t->tg_link);
	list_init(&t->tg_link);
	tg->nr_threads--;
	pthread_cond_broadcast(&tg->threads_cond);
	if (!leader) {
		pid_remove(k, t);
		pthread_mutex_unlock(&tg->lock);
		pthread_mutex_unlock(&k->tree_lock);
		goto out;
	}
	pthread_mutex_unlock(&k->tree_lock);

	/* The leader: wait for the other threads, unless an exec in one of them replaces it. */
	while (tg->nr_threads > 0 && !tg->exec_task)
		pthread_cond_wait(&tg->threads_cond, &tg->lock);
	if (tg->exec_task) {
		pthread_mutex_unlock(&tg->lock);
		/* A tracer is not told of the death of a leader an exec replaces (ptrace(2)). */
		if (unlikely(t->pt))
			t->pt->quiet_exit = true;
		task_release(t);
		pthread_mutex_lock(&k->tree_lock);
		pthread_mutex_lock(&tg->lock);
		pid_remove(k, t);
		tg->leader_exited = true;
		pthread_cond_broadcast(&tg->threads_cond);
		pthread_mutex_unlock(&tg->lock);
		pthread_mutex_unlock(&k->tree_lock);
		goto out;
	}
	pthread_mutex_unlock(&tg->lock);
	/* pid 1's process ends, and the sandbox with it: the memory it and every other process
	 * hold goes with the sentry's memfd, not range by range. */
	if (tg->is_init)
		memfile_set_ending(&k->mf);
	cputime_rss_sample(t); /* the last look at the process's memory, for ru_maxrss */
	task_release(t);
	/* SEM_UNDO adjustments, before the parent can see the process dead (Linux's exit_sem). */
	ipc_sem_exit(tg, tg->pid);
	timer_exit_tg(tg); /* its timers stop, and drop their references on it */
	process_exit(t);
out:
	/* Tracees of this thread are detached; a tracee becomes its tracer's zombie. */
	if (t->pt)
		ptrace_exit_thread(t);
	pid_task_finished(k);
	task_put(t); /* the host thread's reference */
}

int task_run_init(struct task *init)
{
	struct thread_group *tg = init->tg;
	struct kernel *k = init->k;

	tg_get(tg);
	task_run(init);
	task_exit_thread(init);
	/* Every other process was killed by pid 1's exit: wait until their stubs are gone. */
	pid_wait_all_finished(k);
	int status = tg->exit_status;
	tg_put(tg);
	return status;
}

/* --- wait4 / waitid --- */

struct wait_ctx {
	struct task *t;
	int which;
	int32_t id;
	int options;
	struct task_wait_result *res;
	long ret; /* set when the wait is over */
};

static bool wait_matches(const struct wait_ctx *w, const struct thread_group *c)
{
	switch (w->which) {
	case P_PID:
		if (c->pid != w->id)
			return false;
		break;
	case P_PGID:
		if (c->pgid != w->id)
			return false;
		break;
	default:
		break;
	}
	if (w->options & __WALL)
		return true;
	/* A "clone" child is one that does not report to its parent with SIGCHLD. */
	return (c->exit_signal != SIGCHLD) == !!(w->options & __WCLONE);
}

/* One scan of the children (tree_lock held): true when the wait is over (w->ret set). */
static bool wait_scan(struct wait_ctx *w)
{
	struct thread_group *tg = w->t->tg, *c, *n;
	struct task_wait_result *r = w->res;
	bool any = false;
	int32_t vpid;

	/* Tracees first: their ptrace-stops and exits (ptrace.c). */
	w->ret = ptrace_wait_scan(w->t, w->which, w->id, w->options, r, &any);
	if (w->ret > 0)
		return true;
	list_for_each_entry_safe(c, n, &tg->children, sibling) {
		if (!wait_matches(w, c))
			continue;
		any = true;
		vpid = pid_ns_tg_nr(c, tg->pidns); /* the caller's number for it */
		r->pid = vpid;
		r->uid = c->leader ? c->leader->cred.uid : 0;
		r->utime_ns = c->utime_ns + c->cutime_ns;
		r->stime_ns = c->stime_ns + c->cstime_ns;
		r->maxrss_kb = MAX(c->maxrss_kb, c->cmaxrss_kb);
		if (c->state == TG_ZOMBIE && (w->options & WEXITED) && !c->ptrace_held) {
			r->status = c->exit_status;
			decode_exit(c->exit_status, &r->cld_code, &r->cld_status);
			w->ret = vpid;
			if (!(w->options & WNOWAIT))
				tg_reap(c);
			return true;
		}
		if (c->state != TG_RUNNING)
			continue;
		pthread_mutex_lock(&c->lock);
		if ((w->options & WSTOPPED) && c->stopped && c->report_stop) {
			r->status = (c->stop_signal << 8) | 0x7f;
			r->cld_code = CLD_STOPPED;
			r->cld_status = c->stop_signal;
			if (!(w->options & WNOWAIT))
				c->report_stop = false;
			pthread_mutex_unlock(&c->lock);
			w->ret = vpid;
			return true;
		}
		if ((w->options & WCONTINUED) && c->report_continue) {
			r->status = 0xffff;
			r->cld_code = CLD_CONTINUED;
			r->cld_status = SIGCONT;
			if (!(w->options & WNOWAIT))
				c->report_continue = false;
			pthread_mutex_unlock(&c->lock);
			w->ret = vpid;
			return true;
		}
		pthread_mutex_unlock(&c->lock);
	}
	if (!any) {
		w->ret = -ECHILD;
		return true;
	}
	return false;
}

static bool wait_cond(void *arg)
{
	struct wait_ctx *w = arg;
	bool done;

	pthread_mutex_lock(&w->t->k->tree_lock);
	done = wait_scan(w);
	pthread_mutex_unlock(&w->t->k->tree_lock);
	return done;
}

long task_wait_child(struct task *t, int which, int32_t id, int options,
		     struct task_wait_result *res)
{
	struct wait_ctx w = { .t = t, .which = which, .id = id, .options = options, .res = res };
	struct waitq *wq = &t->tg->child_wq;
	long ret;

	memset(res, 0, sizeof(*res));
	if (wait_cond(&w))
		return w.ret;
	if (options & WNOHANG)
		return 0;
	ret = task_wait(t, &wq, 1, wait_cond, &w, NULL, true);
	return ret < 0 ? ret : w.ret;
}

void tg_child_state_changed(struct thread_group *child)
{
	struct kernel *k = child->k;
	struct thread_group *p;
	uint8_t info[128] __attribute__((aligned(8))); /* read as a struct siginfo */
	bool ignored;
	uint64_t flags;
	int code = 0, st = 0;

	pthread_mutex_lock(&k->tree_lock);
	p = child->parent;
	if (!p || child->state != TG_RUNNING) {
		pthread_mutex_unlock(&k->tree_lock);
		return;
	}
	pthread_mutex_lock(&child->lock);
	if (child->stopped && child->report_stop) {
		code = CLD_STOPPED;
		st = child->stop_signal;
	} else if (child->report_continue) {
		code = CLD_CONTINUED;
		st = SIGCONT;
	}
	pthread_mutex_unlock(&child->lock);
	/* Sent before the report can be consumed by a wait, as for exits. */
	if (code) {
		chld_action(p, &ignored, &flags);
		if (!ignored && !(flags & SA_NOCLDSTOP)) {
			fill_chld_info(info, child, code, st);
			signal_send_tg(p, SIGCHLD, info);
		}
	}
	waitq_wake_all(&p->child_wq);
	pthread_mutex_unlock(&k->tree_lock);
}

/* --- pidfds --- */

static unsigned int pidfd_poll(struct file *f, struct waitq **wq)
{
	struct thread_group *tg = f->priv;
	unsigned int ev = 0;

	if (wq)
		*wq = &tg->exit_wq;
	pthread_mutex_lock(&tg->k->tree_lock);
	if (tg->reaped)
		ev = POLLIN | POLLRDNORM | POLLHUP;
	else if (tg->state != TG_RUNNING)
		ev = POLLIN | POLLRDNORM;
	pthread_mutex_unlock(&tg->k->tree_lock);
	return ev;
}

static void pidfd_release(struct file *f)
{
	tg_put(f->priv);
}

static const struct file_ops pidfd_ops = {
	.poll = pidfd_poll,
	.release = pidfd_release,
};

long pidfd_create_fd(struct task *t, struct thread_group *tg, int flags)
{
	struct file *f;
	uint64_t limit;
	int fd;

	tg_get(tg);
	f = file_alloc(&pidfd_ops, O_RDWR | (flags & O_NONBLOCK), tg);
	if (!f) {
		tg_put(tg);
		return -ENOMEM;
	}
	limit = t->tg->rlimits[RLIMIT_NOFILE].rlim_cur;
	fd = fdtable_install(t->fdt, f, 0, true, limit > INT_MAX ? INT_MAX : (int)limit);
	file_put(f);
	return fd;
}

struct thread_group *pidfd_get_tg(struct task *t, int fd)
{
	struct thread_group *tg;
	struct file *f = fdtable_lookup(t->fdt, fd);

	if (!f)
		return ERR_PTR(-EBADF);
	if (f->ops != &pidfd_ops) {
		file_put(f);
		return ERR_PTR(-EBADF);
	}
	tg = f->priv;
	tg_get(tg);
	file_put(f);
	return tg;
}
