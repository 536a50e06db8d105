/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Saving a sandbox (state.h): every task stopped, the kernel's objects into an Image message,
 * the memory-file ranges they use into the pages file.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/cpus.h"
#include "common/log.h"
#include "include/abi/linux/signal.h"
#include "sentry/control/control.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/nsproxy.h"
#include "sentry/kernel/seccomp.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/sysctl.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/timer.h"
#include "sentry/mm/internal.h"
#include "sentry/mm/mm.h"
#include "sentry/mm/vma.h"
#include "sentry/state/state.h"
#include "sentry/state/state_internal.h"
#include "sentry/time/vtime.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/handlers.h"

/* A growable array of message pointers, copied into the arena at the end. */
struct vec {
	void **v;
	size_t n, cap;
};

static int vec_push(struct vec *a, void *p)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 16;
		void **v = realloc(a->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = p;
	return 0;
}

/* The vectors of the repeated fields of the Image being built. */
struct save_vecs {
	struct vec tgs, tasks, mms, fdtables, fscontexts, files, sighands, seccomps;
};

static struct save_vecs *V(struct state_save *s)
{
	return s->priv;
}

#define NEW(s, type, init)                                 \
	({                                                 \
		type *m_ = state_alloc((s), sizeof(type)); \
		if (m_)                                    \
			init(m_);                          \
		m_;                                        \
	})

/* Copies a vector into arena memory as a protobuf-c repeated field. */
static void *vec_finish(struct state_save *s, struct vec *a, size_t *n)
{
	void **out = a->n ? state_alloc(s, a->n * sizeof(void *)) : NULL;

	if (out)
		memcpy(out, a->v, a->n * sizeof(void *));
	*n = out ? a->n : 0;
	return out;
}

/* --- files --- */

uint32_t state_save_file_id(struct state_save *s, struct file *f)
{
	uint32_t id = state_ptrmap_find(&s->files, f);
	Husk__State__File *m;

	if (id)
		return id;
	id = state_ptrmap_add(&s->files, f);
	m = NEW(s, Husk__State__File, husk__state__file__init);
	if (!id || !m) {
		state_save_fail(s, -ENOMEM, "out of memory");
		return 0;
	}
	m->id = id;
	m->flags = f->flags;
	pthread_mutex_lock(&f->pos_lock);
	m->pos = f->pos;
	pthread_mutex_unlock(&f->pos_lock);
	if (vec_push(&V(s)->files, m) < 0) {
		state_save_fail(s, -ENOMEM, "out of memory");
		return 0;
	}
	if (state_file_save(s, f, m) < 0)
		return 0;
	return id;
}

/* --- memory --- */

static uint32_t save_mm(struct state_save *s, struct mm *mm)
{
	uint32_t id = state_ptrmap_find(&s->mms, mm);
	Husk__State__Mm *m;
	struct vma_set *vs;
	size_t n = 0;

	if (id)
		return id;
	id = state_ptrmap_add(&s->mms, mm);
	m = NEW(s, Husk__State__Mm, husk__state__mm__init);
	if (!id || !m || vec_push(&V(s)->mms, m) < 0) {
		state_save_fail(s, -ENOMEM, "out of memory");
		return 0;
	}
	m->id = id;
	/* Patched system-call sites jump into this sentry's stub code: put them back first. */
	mm_patch_revert(mm, "checkpoint");
	pthread_mutex_lock(&mm->lock);
	vs = vset(mm);
	m->vmas = state_alloc(s, (vs->n ? vs->n : 1) * sizeof(*m->vmas));
	for (size_t i = 0; m->vmas && i < vs->n; i++) {
		const struct vma *v = &vs->v[i];
		Husk__State__Vma *vm;

		/* The trap table of syscall patching (mm/patch.c) holds this sentry's addresses. */
		if (mm_patch_is_table(mm, v->start, v->end))
			continue;
		vm = NEW(s, Husk__State__Vma, husk__state__vma__init);
		if (!vm)
			break;
		vm->start = v->start;
		vm->end = v->end;
		vm->prot = (uint32_t)v->prot;
		vm->kind = v->flags & 0xffffu;
		vm->flags = v->flags & ~(0xffffu | VMA_IMAGE); /* how it is mapped: not state */
		vm->mem_off = v->off;
		state_save_range(s, v->off, v->end - v->start);
		if (v->file) {
			pthread_mutex_unlock(&mm->lock);
			vm->has_file = true;
			vm->file = state_save_file_id(s, v->file);
			pthread_mutex_lock(&mm->lock);
			if (!vm->file)
				break;
			vm->has_file_off = true;
			vm->file_off = v->file_off;
		} else if (v->obj) {
			vm->has_file_off = true;
			vm->file_off = v->file_off;
		}
		if (v->obj) {
			vm->has_obj = vm->has_obj_size = true;
			vm->obj = v->obj;
			vm->obj_size = v->obj_size;
		}
		m->vmas[n++] = vm;
	}
	m->n_vmas = n;
	m->start_brk = mm->start_brk;
	m->brk = mm->brk;
	m->start_data = mm->start_data;
	m->end_data = mm->end_data;
	m->mmap_base = mm->mmap_base;
	m->stack_top = mm->stack_top;
	m->arg_start = mm->arg_start;
	m->arg_end = mm->arg_end;
	m->env_start = mm->env_start;
	m->env_end = mm->env_end;
	m->n_auxv = (size_t)mm->auxv_len;
	m->auxv = state_alloc(s, sizeof(uint64_t) * 64);
	if (m->auxv)
		memcpy(m->auxv, mm->auxv, sizeof(uint64_t) * (size_t)mm->auxv_len);
	pthread_mutex_unlock(&mm->lock);
	if (!m->vmas || !m->auxv)
		return state_save_fail(s, -ENOMEM, "out of memory"), 0;
	return s->err[0] ? 0 : id;
}

/* --- processes --- */

static uint32_t save_fdtable(struct state_save *s, struct fdtable *fdt)
{
	uint32_t id = state_ptrmap_find(&s->fdtables, fdt);
	Husk__State__FdTable *m;
	struct vec fds = { 0 };
	struct file *f;
	int fd = 0, ret = 0;

	if (id)
		return id;
	id = state_ptrmap_add(&s->fdtables, fdt);
	m = NEW(s, Husk__State__FdTable, husk__state__fd_table__init);
	if (!id || !m || vec_push(&V(s)->fdtables, m) < 0) {
		state_save_fail(s, -ENOMEM, "out of memory");
		return 0;
	}
	m->id = id;
	while ((fd = fdtable_next(fdt, fd, &f)) >= 0) {
		Husk__State__Fd *e = NEW(s, Husk__State__Fd, husk__state__fd__init);

		if (!e || vec_push(&fds, e) < 0) {
			file_put(f);
			ret = state_save_fail(s, -ENOMEM, "out of memory");
			break;
		}
		e->fd = fd;
		e->cloexec = fdtable_get_cloexec(fdt, fd) == 1;
		e->file = state_save_file_id(s, f);
		file_put(f);
		if (!e->file) {
			ret = -EINVAL;
			break;
		}
		fd++;
	}
	m->fds = (Husk__State__Fd **)vec_finish(s, &fds, &m->n_fds);
	free(fds.v);
	return ret < 0 ? 0 : id;
}

static uint32_t save_fs(struct state_save *s, struct task *t)
{
	uint32_t id = state_ptrmap_find(&s->fscontexts, t->fs);
	Husk__State__FsContext *m;
	char cwd[4096];
	int r;

	if (id)
		return id;
	id = state_ptrmap_add(&s->fscontexts, t->fs);
	m = NEW(s, Husk__State__FsContext, husk__state__fs_context__init);
	if (!id || !m || vec_push(&V(s)->fscontexts, m) < 0) {
		state_save_fail(s, -ENOMEM, "out of memory");
		return 0;
	}
	m->id = id;
	r = vfs_getcwd(t, cwd, sizeof(cwd));
	if (r < 0 || cwd[0] != '/') {
		state_save_fail(s, -EOPNOTSUPP, "pid %d: its working directory %s cannot be saved",
				t->tid, r < 0 ? strerror(-r) : "was deleted");
		return 0;
	}
	m->cwd = state_strdup(s, cwd);
	m->umask = fs_context_umask(t->fs);
	return m->cwd ? id : 0;
}

static uint32_t save_sighand(struct state_save *s, struct sighand *sh)
{
	uint32_t id = state_ptrmap_find(&s->sighands, sh);
	Husk__State__Sighand *m;

	if (id)
		return id;
	id = state_ptrmap_add(&s->sighands, sh);
	m = NEW(s, Husk__State__Sighand, husk__state__sighand__init);
	if (!id || !m || vec_push(&V(s)->sighands, m) < 0) {
		state_save_fail(s, -ENOMEM, "out of memory");
		return 0;
	}
	m->id = id;
	m->n_actions = LINUX_NSIG;
	m->actions = state_alloc(s, LINUX_NSIG * sizeof(*m->actions));
	if (!m->actions)
		return 0;
	pthread_mutex_lock(&sh->lock);
	for (int i = 0; i < LINUX_NSIG; i++) {
		Husk__State__SigAction *a =
			NEW(s, Husk__State__SigAction, husk__state__sig_action__init);

		if (!a)
			break;
		a->handler = sh->actions[i].handler;
		a->flags = sh->actions[i].flags;
		a->restorer = sh->actions[i].restorer;
		a->mask = sh->actions[i].mask;
		m->actions[i] = a;
	}
	pthread_mutex_unlock(&sh->lock);
	return id;
}

/* The queued siginfos of a pending set (sighand->lock held). */
static Husk__State__SigQueued **save_queue(struct state_save *s, struct list_head *q, size_t *n)
{
	struct sigqueue *e;
	size_t count = 0, i = 0;
	Husk__State__SigQueued **out;

	list_for_each_entry(e, q, link)
		count++;
	*n = 0;
	if (!count)
		return NULL;
	out = state_alloc(s, count * sizeof(*out));
	if (!out)
		return NULL;
	list_for_each_entry(e, q, link) {
		Husk__State__SigQueued *m =
			NEW(s, Husk__State__SigQueued, husk__state__sig_queued__init);
		uint8_t *info = state_alloc(s, sizeof(e->info));

		if (!m || !info)
			return NULL;
		memcpy(info, e->info, sizeof(e->info));
		m->info.data = info;
		m->info.len = sizeof(e->info);
		out[i++] = m;
	}
	*n = i;
	return out;
}

/* A seccomp filter and, first, its chain (the same object once: TSYNC compares them). */
static uint32_t save_seccomp(struct state_save *s, struct seccomp_filter *f)
{
	uint32_t id = state_ptrmap_find(&s->seccomps, f), prev = 0;
	Husk__State__SeccompFilter *m;
	void *insns;

	if (id)
		return id;
	if (f->prev) {
		prev = save_seccomp(s, f->prev);
		if (!prev)
			return 0;
	}
	id = state_ptrmap_add(&s->seccomps, f);
	m = NEW(s, Husk__State__SeccompFilter, husk__state__seccomp_filter__init);
	insns = state_alloc(s, f->len * sizeof(f->insns[0]) + 1);
	if (!id || !m || !insns || vec_push(&V(s)->seccomps, m) < 0) {
		state_save_fail(s, -ENOMEM, "out of memory");
		return 0;
	}
	memcpy(insns, f->insns, f->len * sizeof(f->insns[0]));
	m->id = id;
	m->prev = prev;
	m->log = f->log;
	m->insns.data = insns;
	m->insns.len = f->len * sizeof(f->insns[0]);
	return id;
}

static uint32_t restart_kind(long (*fn)(struct task *))
{
	if (!fn)
		return STATE_RESTART_NONE;
	if (fn == sleep_restart)
		return STATE_RESTART_SLEEP;
	if (fn == cpu_sleep)
		return STATE_RESTART_CPU_SLEEP;
	if (fn == futex_wait_restart)
		return STATE_RESTART_FUTEX;
	if (fn == poll_restart)
		return STATE_RESTART_POLL;
	return UINT32_MAX;
}

static int save_task(struct state_save *s, struct task *t)
{
	Husk__State__Task *m = NEW(s, Husk__State__Task, husk__state__task__init);
	Husk__State__Cred *c = NEW(s, Husk__State__Cred, husk__state__cred__init);
	struct sighand *sh = t->tg->sighand;
	uint8_t *regs = state_alloc(s, sizeof(t->regs));

	if (!m || !c || !regs || vec_push(&V(s)->tasks, m) < 0)
		return state_save_fail(s, -ENOMEM, "out of memory");
	if (__atomic_load_n(&t->ptrace, __ATOMIC_RELAXED) || t->pt)
		return state_save_fail(s, -EOPNOTSUPP, "pid %d is traced (ptrace): not saved yet",
				       t->tid);
	if (t->ns && (t->ns->uts->id || t->ns->ipc->id || t->ns->user->id || t->ns->net->id))
		return state_save_fail(s, -EOPNOTSUPP,
				       "pid %d: namespaces made by unshare/clone are not saved yet",
				       t->tid);
	if (!t->park_fp)
		return state_save_fail(s, -EIO, "pid %d: its FP state could not be read", t->tid);
	m->tid = t->tid;
	m->pid = t->tg->pid;
	m->mm = save_mm(s, t->mm);
	m->fdtable = save_fdtable(s, t->fdt);
	m->fs = save_fs(s, t);
	if (!m->mm || !m->fdtable || !m->fs)
		return -EINVAL;
	m->cred = c;
	c->uid = t->cred.uid;
	c->euid = t->cred.euid;
	c->suid = t->cred.suid;
	c->fsuid = t->cred.fsuid;
	c->gid = t->cred.gid;
	c->egid = t->cred.egid;
	c->sgid = t->cred.sgid;
	c->fsgid = t->cred.fsgid;
	c->n_groups = (size_t)t->cred.ngroups;
	c->groups = state_alloc(s, sizeof(uint32_t) * 32);
	if (!c->groups)
		return state_save_fail(s, -ENOMEM, "out of memory");
	memcpy(c->groups, t->cred.groups, sizeof(uint32_t) * (size_t)t->cred.ngroups);
	c->cap_effective = t->cred.cap_effective;
	c->cap_permitted = t->cred.cap_permitted;
	c->cap_inheritable = t->cred.cap_inheritable;
	c->cap_bounding = t->cred.cap_bounding;
	c->cap_ambient = t->cred.cap_ambient;
	c->securebits = t->cred.securebits;
	c->keep_caps = t->cred.keep_caps;
	memcpy(regs, &t->regs, sizeof(t->regs));
	m->regs.data = regs;
	m->regs.len = sizeof(t->regs);
	m->fpstate.data = t->park_fp;
	m->fpstate.len = t->park_fp_len;
	pthread_mutex_lock(&sh->lock);
	m->pending = t->pending.set;
	m->queue = save_queue(s, &t->pending.queue, &m->n_queue);
	pthread_mutex_unlock(&sh->lock);
	m->sigmask = t->sigmask;
	m->saved_sigmask = t->saved_sigmask;
	m->restore_sigmask = t->restore_sigmask;
	m->altstack_sp = t->altstack_sp;
	m->altstack_size = t->altstack_size;
	m->altstack_flags = t->altstack_flags;
	m->pdeath_signal = t->pdeath_signal;
	m->set_child_tid = 0; /* written once, at the thread's start */
	m->clear_child_tid = t->clear_child_tid;
	m->robust_list = t->robust_list;
	m->robust_len = t->robust_len;
	m->affinity_set = t->affinity_set;
	m->n_affinity = 16;
	m->affinity = state_alloc(s, sizeof(t->affinity));
	if (!m->affinity)
		return state_save_fail(s, -ENOMEM, "out of memory");
	memcpy(m->affinity, t->affinity, sizeof(t->affinity));
	m->rseq = t->rseq;
	m->rseq_len = t->rseq_len;
	m->rseq_sig = t->rseq_sig;
	m->no_new_privs = t->no_new_privs;
	m->personality = t->personality;
	m->comm = state_alloc(s, sizeof(t->comm) + 1);
	if (!m->comm)
		return state_save_fail(s, -ENOMEM, "out of memory");
	memcpy(m->comm, t->comm, sizeof(t->comm));
	m->restart_kind = restart_kind(t->restart_fn);
	if (m->restart_kind == UINT32_MAX)
		return state_save_fail(s, -EOPNOTSUPP, "pid %d: unknown restart function", t->tid);
	m->n_restart_data = 4;
	m->restart_data = state_alloc(s, sizeof(t->restart_data));
	if (!m->restart_data)
		return state_save_fail(s, -ENOMEM, "out of memory");
	memcpy(m->restart_data, t->restart_data, sizeof(t->restart_data));
	m->start_ns = t->start_ns;
	m->ioprio = t->ioprio;
	m->sched_policy = t->sched_policy;
	m->sched_priority = t->sched_priority;
	m->sched_reset_on_fork = t->sched_reset_on_fork;
	m->seccomp_mode = (uint32_t)t->seccomp_mode;
	if (t->seccomp_filter) {
		m->has_seccomp_filter = true;
		m->seccomp_filter = save_seccomp(s, t->seccomp_filter);
		if (!m->seccomp_filter)
			return -ENOMEM;
	}
	return 0;
}

/* Interval and POSIX timers, with their time left (they stand still while saved). */
static int save_timers(struct state_save *s, struct thread_group *tg, Husk__State__ThreadGroup *m)
{
	struct task *t = tg->leader;
	struct vec v = { 0 };
	int ret = 0;

	for (int which = 0; which < 3 + TIMER_POSIX_MAX && ret == 0; which++) {
		struct timer_posix_desc d = { 0 };
		Husk__State__Timer *tm;

		if (which < 3) {
			if (timer_itimer(t, which, NULL, &d.cur) < 0 || !d.cur.value_ns)
				continue;
		} else if (timer_posix_describe(t, which - 3, &d) < 0) {
			continue;
		}
		tm = NEW(s, Husk__State__Timer, husk__state__timer__init);
		if (!tm || vec_push(&v, tm) < 0) {
			ret = state_save_fail(s, -ENOMEM, "out of memory");
			break;
		}
		tm->kind = which < 3 ? (uint32_t)which : 3;
		tm->value_ns = d.cur.value_ns;
		tm->interval_ns = d.cur.interval_ns;
		if (which >= 3) {
			tm->has_id = tm->has_host_clock = tm->has_notify = tm->has_signo = true;
			tm->has_sigval = tm->has_target_tid = tm->has_cpu_tid = true;
			tm->has_overrun = true;
			tm->id = which - 3;
			tm->host_clock = d.host_clock;
			tm->notify = d.notify;
			tm->signo = d.signo;
			tm->sigval = d.value;
			tm->target_tid = d.target_tid;
			tm->cpu_tid = d.cpu_tid;
			tm->overrun = d.overrun;
		}
	}
	m->timers = (Husk__State__Timer **)vec_finish(s, &v, &m->n_timers);
	free(v.v);
	return ret;
}

static int save_tg(struct thread_group *tg, void *arg)
{
	struct state_save *s = arg;
	Husk__State__ThreadGroup *m =
		NEW(s, Husk__State__ThreadGroup, husk__state__thread_group__init);
	struct task *t;
	int ret = 0;

	if (tg->state == TG_DEAD)
		return 0;
	if (!m || vec_push(&V(s)->tgs, m) < 0)
		return state_save_fail(s, -ENOMEM, "out of memory");
	if (tg->state == TG_ZOMBIE && tg->ptrace_held)
		return state_save_fail(s, -EOPNOTSUPP, "pid %d: a traced zombie", tg->pid);
	pthread_mutex_lock(&tg->lock);
	if (tg->state == TG_RUNNING && (tg->exec_task || tg->exiting || tg->leader_exited ||
					!tg->leader || tg->leader->tg != tg)) {
		pthread_mutex_unlock(&tg->lock);
		return state_save_fail(s, -EBUSY, "pid %d is exec'ing or exiting", tg->pid);
	}
	m->pid = tg->pid;
	m->ppid = tg->parent ? tg->parent->pid : 0;
	m->pgid = tg->pgid;
	m->sid = tg->sid;
	m->exit_signal = tg->exit_signal;
	m->n_rlimits = LINUX_RLIM_NLIMITS;
	m->rlimits = state_alloc(s, LINUX_RLIM_NLIMITS * sizeof(*m->rlimits));
	for (int i = 0; m->rlimits && i < LINUX_RLIM_NLIMITS; i++) {
		Husk__State__Rlimit *r = NEW(s, Husk__State__Rlimit, husk__state__rlimit__init);

		if (!r)
			break;
		r->cur = tg->rlimits[i].rlim_cur;
		r->max = tg->rlimits[i].rlim_max;
		m->rlimits[i] = r;
	}
	m->state = tg->state;
	m->exit_status = tg->exit_status;
	m->stopped = tg->stopped;
	m->stop_signal = tg->stop_signal;
	m->subreaper = tg->subreaper;
	m->dumpable = tg->dumpable;
	m->did_exec = tg->did_exec;
	m->is_init = tg->is_init;
	m->utime_ns = tg->utime_ns;
	m->stime_ns = tg->stime_ns;
	m->cutime_ns = tg->cutime_ns;
	m->cstime_ns = tg->cstime_ns;
	m->start_ns = tg->start_ns;
	m->maxrss_kb = tg->maxrss_kb;
	m->cmaxrss_kb = tg->cmaxrss_kb;
	m->report_stop = tg->report_stop;
	m->report_continue = tg->report_continue;
	m->sig_notify = tg->sig_notify;
	m->has_oom_score_adj = m->has_oom_score_adj_min = true;
	m->oom_score_adj = __atomic_load_n(&tg->oom_score_adj, __ATOMIC_RELAXED);
	m->oom_score_adj_min = __atomic_load_n(&tg->oom_score_adj_min, __ATOMIC_RELAXED);
	if (tg->state == TG_ZOMBIE && tg->leader) {
		char comm[sizeof(tg->leader->comm) + 1] = { 0 };

		memcpy(comm, tg->leader->comm, sizeof(tg->leader->comm));
		m->zombie_comm = state_strdup(s, comm);
	}
	pthread_mutex_unlock(&tg->lock);
	if (!m->rlimits)
		return state_save_fail(s, -ENOMEM, "out of memory");
	m->sighand = save_sighand(s, tg->sighand);
	if (!m->sighand)
		return -ENOMEM;
	pthread_mutex_lock(&tg->sighand->lock);
	m->shared_pending = tg->shared_pending.set;
	m->shared_queue = save_queue(s, &tg->shared_pending.queue, &m->n_shared_queue);
	pthread_mutex_unlock(&tg->sighand->lock);
	if (tg->state == TG_RUNNING && save_timers(s, tg, m) < 0)
		return -EINVAL;
	/* The leader first: restore starts the others from its thread. */
	if (tg->state == TG_RUNNING) {
		ret = save_task(s, tg->leader);
		list_for_each_entry(t, &tg->tasks, tg_link) {
			if (ret < 0)
				break;
			if (t == tg->leader)
				continue;
			if (t->mm != tg->leader->mm) {
				ret = state_save_fail(s, -EOPNOTSUPP,
						      "pid %d: threads with different memory",
						      tg->pid);
				break;
			}
			ret = save_task(s, t);
		}
	}
	return ret < 0 ? ret : (s->err[0] ? -EINVAL : 0);
}

/* --- the image and the pages --- */

static int cmp_range(const void *a, const void *b)
{
	const struct state_range *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* Sorts and merges the ranges saved objects use. */
static void merge_ranges(struct state_ranges *rs)
{
	size_t n = 0;

	qsort(rs->v, rs->n, sizeof(rs->v[0]), cmp_range);
	for (size_t i = 0; i < rs->n; i++) {
		if (n && rs->v[i].off <= rs->v[n - 1].off + rs->v[n - 1].len) {
			uint64_t end = rs->v[i].off + rs->v[i].len;

			if (end > rs->v[n - 1].off + rs->v[n - 1].len)
				rs->v[n - 1].len = end - rs->v[n - 1].off;
		} else {
			rs->v[n++] = rs->v[i];
		}
	}
	rs->n = n;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Writes the ranges' data (holes stay holes: no bytes) and lists them in img->pages. */
/* Writes the data pieces of img->pages, from..to bytes of the pages file. */
struct page_writer {
	struct state_save *s;
	int fd;
	uint64_t from, to;
	int ret;
};

/*
 * Copies n bytes from the restored image's pages file at src to the new one at dst, through a
 * read-only mapping of the old file in pieces (one copy, as from the memory file; the sentry's
 * filter has no copy_file_range). Offsets are page multiples.
 */
static int copy_from_image(int in, uint64_t src, int out, uint64_t dst, uint64_t n)
{
	const uint64_t piece = 32ULL << 20;

	while (n) {
		uint64_t len = n < piece ? n : piece, done = 0;
		void *p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, in, (off_t)src);

		if (p == MAP_FAILED)
			return -errno;
		while (done < len) {
			ssize_t w = pwrite(out, (char *)p + done, len - done, (off_t)(dst + done));

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				int err = w < 0 ? -errno : -EIO;

				munmap(p, len);
				return err;
			}
			done += (uint64_t)w;
		}
		munmap(p, len);
		src += len;
		dst += len;
		n -= len;
	}
	return 0;
}

static void *write_pages_part(void *arg)
{
	struct page_writer *w = arg;
	const Husk__State__Image *img = w->s->img;
	uint8_t *base = w->s->k->mf.base;
	int imfd = memfile_image_fd(&w->s->k->mf);

	for (size_t i = 0; i < img->n_pages && w->ret == 0; i++) {
		const Husk__State__MemRange *m = img->pages[i];
		uint64_t a, b, src = w->s->page_src ? w->s->page_src[i] : UINT64_MAX;

		if (!m->has_file_off || m->file_off + m->len <= w->from || m->file_off >= w->to)
			continue;
		a = m->file_off > w->from ? m->file_off : w->from;
		b = m->file_off + m->len < w->to ? m->file_off + m->len : w->to;
		if (src != UINT64_MAX) {
			w->ret = imfd < 0 ? -EBADF :
					    copy_from_image(imfd, src + (a - m->file_off), w->fd, a,
							    b - a);
			continue;
		}
		while (a < b) {
			ssize_t n = pwrite(w->fd, base + m->mem_off + (a - m->file_off), b - a,
					   (off_t)a);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				w->ret = n < 0 ? -errno : -EIO;
				break;
			}
			a += (uint64_t)n;
		}
	}
	return NULL;
}

/*
 * The pages' bytes, in two halves written at once when there is enough of them: the cost is the
 * host allocating the file's pages, which two CPUs do faster than one.
 */
static int write_pages(struct state_save *s, int fd, uint64_t total)
{
	struct page_writer w[2] = { { s, fd, 0, total, 0 }, { s, fd, total, total, 0 } };
	pthread_t th;
	cpu_set_t cpus;
	bool two = total >= (8u << 20) && husk_cpus_get(&cpus) == 0 && CPU_COUNT(&cpus) > 1;

	if (two) {
		w[0].to = w[1].from = (total / 2) & ~4095ULL;
		if (pthread_create(&th, NULL, write_pages_part, &w[1]) != 0) {
			two = false;
			w[0].to = total;
		}
	}
	write_pages_part(&w[0]);
	if (two)
		pthread_join(th, NULL);
	return w[0].ret ? w[0].ret : w[1].ret;
}

/* Appends a MemRange [off, off+len) (data at *file_off, advanced; or a hole) and its source. */
static int push_range(struct state_save *s, struct vec *out, struct vec *src, uint64_t off,
		      uint64_t len, bool data, uint64_t from, uint64_t *file_off)
{
	Husk__State__MemRange *m = NEW(s, Husk__State__MemRange, husk__state__mem_range__init);

	if (!m || vec_push(out, m) < 0 || vec_push(src, (void *)(uintptr_t)from) < 0)
		return -ENOMEM;
	m->mem_off = off;
	m->len = len;
	if (data) {
		m->has_file_off = true;
		m->file_off = *file_off;
		*file_off += len;
	}
	return 0;
}

static int save_pages(struct state_save *s, int pages_fd, uint64_t *bytes)
{
	struct memfile *mf = &s->k->mf;
	struct vec out = { 0 }, src = { 0 };
	uint64_t file_off = 0;
	int ret = 0;

	merge_ranges(&s->ranges);
	for (size_t i = 0; i < s->ranges.n && ret == 0; i++) {
		uint64_t off = s->ranges.v[i].off, end = off + s->ranges.v[i].len;

		if (end > mf->size || end < off) {
			ret = state_save_fail(s, -EIO, "a range past the memory file");
			break;
		}
		while (off < end && ret == 0) {
			/*
			 * Pages a restored sandbox never loaded are holes in the memory file and data
			 * in its own pages file: copied from there (write_pages), not loaded.
			 */
			uint64_t ps = end, pe = end, pf = 0;
			bool pending = memfile_image_next_pending(mf, off, end, &ps, &pe, &pf);
			off_t data = lseek(mf->fd, (off_t)off, SEEK_DATA);
			uint64_t d = data < 0 ? end : (uint64_t)data, piece_end;

			if (d > end)
				d = end;
			if (pending && ps < d)
				d = ps;
			if (d > off) {
				/* A hole: zeros, no bytes in the file. */
				ret = push_range(s, &out, &src, off, d - off, false, UINT64_MAX,
						 &file_off);
				off = d;
				continue;
			}
			if (pending && ps == off) {
				ret = push_range(s, &out, &src, off, pe - off, true, pf, &file_off);
				off = pe;
				continue;
			}
			off_t hole = lseek(mf->fd, (off_t)off, SEEK_HOLE);

			piece_end = hole < 0 ? end : (uint64_t)hole;
			if (piece_end > end)
				piece_end = end;
			piece_end = (piece_end + 4095) & ~4095ULL;
			if (piece_end > end || piece_end <= off)
				piece_end = end;
			if (pending && ps < piece_end)
				piece_end = ps;
			ret = push_range(s, &out, &src, off, piece_end - off, true, UINT64_MAX,
					 &file_off);
			off = piece_end;
		}
	}
	s->img->pages = (Husk__State__MemRange **)vec_finish(s, &out, &s->img->n_pages);
	s->page_src = malloc((src.n ? src.n : 1) * sizeof(*s->page_src));
	if (!s->page_src && ret == 0)
		ret = -ENOMEM;
	for (size_t i = 0; s->page_src && i < src.n; i++)
		s->page_src[i] = (uint64_t)(uintptr_t)src.v[i];
	free(src.v);
	free(out.v);
	*bytes = file_off;
	if (ret < 0)
		return state_save_fail(s, ret, "out of memory");
	ret = write_pages(s, pages_fd, file_off);
	return ret < 0 ? state_save_fail(s, ret, "writing the pages file: %s", strerror(-ret)) : 0;
}

static int save_all(struct state_save *s)
{
	struct kernel *k = s->k;
	Husk__State__Image *img = NEW(s, Husk__State__Image, husk__state__image__init);
	Husk__State__Kernel *km = NEW(s, Husk__State__Kernel, husk__state__kernel__init);
	Husk__State__FsState *fs = NEW(s, Husk__State__FsState, husk__state__fs_state__init);
	uint64_t vvar = 0, vdso = 0, vdso_len = 0;
	int ret;

	if (!img || !km || !fs)
		return state_save_fail(s, -ENOMEM, "out of memory");
	s->img = img;
	img->version = STATE_IMAGE_VERSION;
	img->kernel = km;
	img->fs = fs;
	pthread_mutex_lock(&k->lock);
	km->hostname = state_strdup(s, k->hostname);
	km->domainname = state_strdup(s, k->domainname);
	km->next_tid = k->next_tid;
	km->init_pid = k->init ? k->init->tid : 1;
	pthread_mutex_unlock(&k->lock);
	km->guest_mono_ns = (uint64_t)vtime_now_ns(CLOCK_MONOTONIC);
	km->uptime_ns = task_monotonic_ns() - k->boot_ns;
	km->boot_ns = k->boot_ns;
	km->pids_limit = k->pids_limit;
	vtime_vdso_pages(&vvar, &vdso, &vdso_len);
	km->vvar_off = vvar;
	km->vdso_off = vdso;
	km->vdso_len = vdso_len;
	ret = state_fs_save(s, fs);
	if (ret < 0)
		return ret;
	/* IPC objects before the processes: their files (attaches, queues) name them. */
	ret = state_ipc_save(s, img);
	if (ret < 0)
		return ret;
	/* The sysctl table as the guest left it (writes to /proc/sys): every writable value. */
	img->sysctls = state_alloc(s, SYSCTL_COUNT * sizeof(char *));
	for (int id = 0; img->sysctls && id < SYSCTL_COUNT; id++) {
		const struct sysctl_def *d = sysctl_def(id);
		char val[512], kv[640];
		ssize_t n;

		if (!d || (d->flags & SYSCTL_F_RO) || id == SYSCTL_KERNEL_HOSTNAME ||
		    id == SYSCTL_KERNEL_DOMAINNAME)
			continue;
		n = sysctl_read(id, val, sizeof(val));
		if (n <= 0)
			continue;
		if (val[n - 1] == '\n')
			val[n - 1] = 0;
		snprintf(kv, sizeof(kv), "%s=%s", d->name, val);
		img->sysctls[img->n_sysctls++] = state_strdup(s, kv);
	}
	pthread_mutex_lock(&k->tree_lock);
	ret = pid_for_each_tg(k, save_tg, s);
	pthread_mutex_unlock(&k->tree_lock);
	if (ret < 0 || s->err[0])
		return ret < 0 ? ret : -EINVAL;
	img->tgs = (Husk__State__ThreadGroup **)vec_finish(s, &V(s)->tgs, &img->n_tgs);
	img->tasks = (Husk__State__Task **)vec_finish(s, &V(s)->tasks, &img->n_tasks);
	img->mms = (Husk__State__Mm **)vec_finish(s, &V(s)->mms, &img->n_mms);
	img->fdtables = (Husk__State__FdTable **)vec_finish(s, &V(s)->fdtables, &img->n_fdtables);
	img->fscontexts =
		(Husk__State__FsContext **)vec_finish(s, &V(s)->fscontexts, &img->n_fscontexts);
	img->files = (Husk__State__File **)vec_finish(s, &V(s)->files, &img->n_files);
	img->sighands = (Husk__State__Sighand **)vec_finish(s, &V(s)->sighands, &img->n_sighands);
	img->seccomp_filters = (Husk__State__SeccompFilter **)vec_finish(s, &V(s)->seccomps,
									 &img->n_seccomp_filters);
	return 0;
}

int state_checkpoint(struct kernel *k, int image_fd, int pages_fd, bool leave_running,
		     struct state_stats *st, char *err, size_t errlen)
{
	struct save_vecs vecs = { 0 };
	struct state_save s = { .k = k, .priv = &vecs };
	uint64_t t0 = task_monotonic_ns(), t1;
	int32_t busy = 0;
	int ret;

	ret = kernel_freeze(k, true, STATE_FREEZE_TIMEOUT_MS, &busy);
	t1 = task_monotonic_ns();
	st->freeze_ns = t1 - t0;
	if (ret < 0) {
		snprintf(err, errlen,
			 "pid %d did not stop (a vfork parent, a traced or exiting task)", busy);
		return ret;
	}
	ret = save_all(&s);
	uint64_t t2 = task_monotonic_ns();
	if (ret == 0 && !s.err[0])
		ret = save_pages(&s, pages_fd, &st->pages_bytes);
	log_debug("timing: checkpoint: objects %llu us, pages %llu us",
		  (unsigned long long)(t2 - t1) / 1000,
		  (unsigned long long)(task_monotonic_ns() - t2) / 1000);
	if (ret == 0 && !s.err[0]) {
		size_t len = husk__state__image__get_packed_size(s.img);
		uint8_t *buf = len <= STATE_IMAGE_MAX ? malloc(len ? len : 1) : NULL;

		if (!buf) {
			ret = state_save_fail(&s, -ENOMEM, "the image is too large (%zu bytes)",
					      len);
		} else {
			husk__state__image__pack(s.img, buf);
			ret = write_all(image_fd, buf, len);
			if (ret < 0)
				state_save_fail(&s, ret, "writing the image: %s", strerror(-ret));
			st->image_bytes = len;
			free(buf);
		}
	}
	if (ret == 0 && s.err[0])
		ret = -EINVAL;
	st->save_ns = task_monotonic_ns() - t1;
	if (ret < 0)
		snprintf(err, errlen, "%s", s.err[0] ? s.err : strerror(-ret));
	else
		log_info("checkpoint: %zu processes, %zu tasks, %zu files; image %llu bytes, pages "
			 "%llu bytes; stop %llu us, save %llu us",
			 s.img->n_tgs, s.img->n_tasks, s.img->n_files,
			 (unsigned long long)st->image_bytes, (unsigned long long)st->pages_bytes,
			 (unsigned long long)st->freeze_ns / 1000,
			 (unsigned long long)st->save_ns / 1000);
	/* Ending: nothing the guest does after the image may be seen, so the kill comes first. */
	if (ret == 0 && !leave_running)
		control_send_signal(k, -1, LINUX_SIGKILL);
	kernel_thaw(k);
	state_fs_save_end(&s);
	state_net_save_end(&s);
	state_ipc_save_end(&s);
	state_arena_free(&s);
	free(s.page_src);
	state_ptrmap_free(&s.files);
	state_ptrmap_free(&s.mms);
	state_ptrmap_free(&s.fdtables);
	state_ptrmap_free(&s.fscontexts);
	state_ptrmap_free(&s.sighands);
	state_ptrmap_free(&s.seccomps);
	free(vecs.seccomps.v);
	free(s.ranges.v);
	free(vecs.tgs.v);
	free(vecs.tasks.v);
	free(vecs.mms.v);
	free(vecs.fdtables.v);
	free(vecs.fscontexts.v);
	free(vecs.files.v);
	free(vecs.sighands.v);
	return ret;
}
