/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clone(2), fork(2), vfork(2), clone3(2): creating tasks and starting their host threads.
 *
 * The creator (the parent's host thread) does what the platform wants done by the owner of
 * the parent's context: mm_fork (write-protects the parent's pages in its own stub) or
 * ctx_clone (a new stub thread). The child's host thread then makes the new context its own
 * (mm_activate + ctx_create, or ctx_adopt), writes CLONE_CHILD_SETTID, and runs task_run.
 *
 * References: the new task has one reference for its host thread and one for the pid table.
 * It references its thread group, mm, fd table and fs context. A vfork parent and its child
 * share a refcounted struct vfork_done.
 */
#include <errno.h>
#include <linux/capability.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>

#include "common/err.h"
#include "common/log.h"
#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/fs/cgroup/cgroup.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/ptrace.h"
#include "sentry/kernel/nsproxy.h"
#include "sentry/kernel/pidns.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/seccomp.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/timer.h"
#include "sentry/kernel/waitq.h"
#include "sentry/mm/mm.h"
#include "sentry/platform/platform.h"
#include "sentry/vfs/mount_user.h"
#include "sentry/vfs/vfs.h"

#define CLONE_NS_FLAGS                                                                 \
	(CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | \
	 CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWTIME)
/* Host thread stack: handlers keep a few pages of locals; the loader more. */
#define TASK_THREAD_STACK (1u << 20)

/* The vfork handshake, shared by parent and child (each holds a reference). */
struct vfork_done {
	struct completion c;
	int refs; /* atomic */
};

static void vfork_done_put(struct vfork_done *v)
{
	if (__atomic_sub_fetch(&v->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(v);
}

void task_vfork_release(struct task *t)
{
	struct vfork_done *v;

	if (!t->vfork_done)
		return;
	v = container_of(t->vfork_done, struct vfork_done, c);
	t->vfork_done = NULL;
	complete(&v->c);
	vfork_done_put(v);
}

/* Allocates and frees enough in a fresh thread's malloc arena that glibc trims its heap. */
static void *prime_arena_fn(void *arg)
{
	enum { N = 64, SZ = 16384 }; /* 1 MiB: past the 128 KiB trim threshold and top pad */
	void *p[N];

	for (int i = 0; i < N; i++)
		p[i] = malloc(SZ);
	for (int i = N - 1; i >= 0; i--)
		free(p[i]);
	return NULL;
}

void task_host_prepare(void)
{
	pthread_t th;

	/* glibc sets its arena limit (8 per CPU) with get_nprocs(), which reads /sys, the first
	 * time a ninth arena is wanted: set the same limit now. */
	mallopt(M_ARENA_MAX, 8 * get_nprocs());

	if (pthread_create(&th, NULL, prime_arena_fn, NULL) == 0)
		pthread_join(th, NULL);
}

int task_clone_check(const struct task *t, const struct task_clone_args *a)
{
	uint64_t f = a->flags;

	if ((f & (CLONE_NEWNS | CLONE_FS)) == (CLONE_NEWNS | CLONE_FS))
		return -EINVAL;
	if ((f & (CLONE_NEWUSER | CLONE_FS)) == (CLONE_NEWUSER | CLONE_FS))
		return -EINVAL;
	if ((f & CLONE_THREAD) && !(f & CLONE_SIGHAND))
		return -EINVAL;
	if ((f & CLONE_SIGHAND) && !(f & CLONE_VM))
		return -EINVAL;
	/* init is unkillable by its children's means: it may not make siblings of them. */
	if ((f & CLONE_PARENT) &&
	    (t->tg->is_init || (t->tg->pidns && t->tg->pidns->reaper == t->tg)))
		return -EINVAL;
	if ((f & CLONE_THREAD) && (f & (CLONE_NEWUSER | CLONE_NEWPID)))
		return -EINVAL;
	if ((f & CLONE_PIDFD) && (f & CLONE_DETACHED))
		return -EINVAL;
	if ((f & CLONE_PIDFD) && (f & CLONE_PARENT_SETTID) && a->pidfd == a->parent_tid)
		return -EINVAL;
	if ((f & CLONE_CLEAR_SIGHAND) && (f & CLONE_SIGHAND))
		return -EINVAL;
	if (a->exit_signal < 0 || a->exit_signal > LINUX_NSIG)
		return -EINVAL;
	/* An FS base past the last user page: EPERM, as Linux's ARCH_SET_FS. */
	if ((f & CLONE_SETTLS) && a->tls >= TASK_SIZE_MAX)
		return -EPERM;
	/*
	 * UTS, IPC, network, user, pid and cgroup namespaces are nsproxy.c's, mount namespaces the VFS's
	 * (sentry/vfs/mount_user.c); time namespaces are not made yet.
	 */
	if (f & CLONE_NS_FLAGS & ~((uint64_t)NSPROXY_CLONE_FLAGS | CLONE_NEWNS))
		return -EPERM;
	/*
	 * A mount namespace needs CAP_SYS_ADMIN in the caller's user namespace, or in the one the
	 * same clone makes (the child has every capability there).
	 */
	if ((f & CLONE_NEWNS) && !(f & CLONE_NEWUSER) &&
	    !nsproxy_ns_capable(&t->cred, t->ns ? t->ns->user : nsproxy_initial(t->k)->user,
				t->ns ? t->ns->user : nsproxy_initial(t->k)->user, CAP_SYS_ADMIN))
		return -EPERM;
	return 0;
}

/* The child's host thread: take over the context, then run. */
static void *task_thread_main(void *arg)
{
	struct task *t = arg;
	const struct platform_ops *ops = t->k->platform->ops;
	int ret;

	t->thread = pthread_self();
	if (t->ctx) {
		ret = ops->ctx_adopt(t->ctx);
	} else {
		uint64_t t0 = task_monotonic_ns();

		ret = mm_activate(t->mm);
		if (ret == 0)
			ret = ops->ctx_create(t->mm->as, &t->ctx);
		log_debug("timing: fork child %d: mm_activate+ctx_create %llu us", t->tid,
			  (unsigned long long)(task_monotonic_ns() - t0) / 1000);
	}
	if (ret == 0 && t->clone_fpstate) {
		/* Linux copies the FPU state: MXCSR and x87 control modes survive fork. */
		ret = ops->ctx_set_fpstate(t->ctx, t->clone_fpstate, t->clone_fpstate_len);
		free(t->clone_fpstate);
		t->clone_fpstate = NULL;
	}
	if (ret == 0 && t->restore_threads)
		ret = task_start_restored_threads(t);
	if (ret < 0) {
		log_error("pid %d: cannot start the new task: %s", t->tid, strerror(-ret));
		task_exit_group(t, SIGKILL);
	} else {
		if (t->set_child_tid) {
			/* Its tid in its own pid namespace. */
			uint32_t tid = (uint32_t)pid_ns_task_nr(t, t->tg->pidns);

			/* In the child's memory, as Linux's schedule_tail: a fault is ignored. */
			(void)mm_copy_out(t->mm, t->set_child_tid, &tid, sizeof(tid));
		}
		task_run(t);
	}
	task_exit_thread(t);
	return NULL;
}

/* Saves p's FP/vector state for c's thread to load (on p's thread: its owner). */
static int copy_fpstate(struct task *c, struct task *p)
{
	const struct platform_ops *ops = p->k->platform->ops;
	size_t len = platform_fpstate_size();
	int ret;

	if (!ops->ctx_get_fpstate || !ops->ctx_set_fpstate || !p->ctx)
		return 0;
	c->clone_fpstate = malloc(len);
	if (!c->clone_fpstate)
		return -ENOMEM;
	ret = ops->ctx_get_fpstate(p->ctx, c->clone_fpstate, len);
	if (ret < 0) {
		free(c->clone_fpstate);
		c->clone_fpstate = NULL;
		return ret;
	}
	c->clone_fpstate_len = len;
	return 0;
}

/* Copies parent's credentials and thread-level state into a new task. */
static void copy_task_state(struct task *c, struct task *p, const struct task_clone_args *a)
{
	c->cred = p->cred;
	c->sigmask = p->sigmask;
	c->no_new_privs = p->no_new_privs;
	c->personality = p->personality;
	c->ioprio = p->ioprio;
	/* As Linux: a forked process keeps the rseq registration; a thread or vfork child has none. */
	if (!(a->flags & CLONE_VM)) {
		c->rseq = p->rseq;
		c->rseq_len = p->rseq_len;
		c->rseq_sig = p->rseq_sig;
		c->rseq_cpu = (uint32_t)-1; /* written again before the child first runs */
	}
	c->sched_policy = p->sched_policy;
	c->sched_priority = p->sched_priority;
	if (p->sched_reset_on_fork && p->sched_priority) {
		/* SCHED_RESET_ON_FORK: a real-time policy is not inherited; the flag is not either. */
		c->sched_policy = 0;
		c->sched_priority = 0;
	}
	c->affinity_set = __atomic_load_n(&p->affinity_set, __ATOMIC_RELAXED);
	for (size_t i = 0; i < sizeof(c->affinity) / sizeof(c->affinity[0]); i++)
		c->affinity[i] = __atomic_load_n(&p->affinity[i], __ATOMIC_RELAXED);
	seccomp_task_inherit(c, p);
	memcpy(c->comm, p->comm, sizeof(c->comm));
	c->regs = p->regs;
	c->regs.rax = 0;
	if (a->stack)
		c->regs.rsp = a->stack;
	if (a->flags & CLONE_SETTLS)
		c->regs.fs_base = a->tls;
	/* A new thread sharing the stack area would clobber the parent's alternate stack. */
	if ((a->flags & (CLONE_VM | CLONE_VFORK)) != CLONE_VM) {
		c->altstack_sp = p->altstack_sp;
		c->altstack_size = p->altstack_size;
		c->altstack_flags = p->altstack_flags;
	}
	if (a->flags & CLONE_CHILD_SETTID)
		c->set_child_tid = a->child_tid;
	if (a->flags & CLONE_CHILD_CLEARTID)
		c->clear_child_tid = a->child_tid;
}

/* A new process's thread group: signal actions, limits, tree place filled later. */
static struct thread_group *clone_tg(struct task *p, const struct task_clone_args *a)
{
	struct thread_group *ptg = p->tg, *tg;
	struct sighand *sh = NULL;

	if (a->flags & CLONE_SIGHAND) {
		sh = ptg->sighand;
		refcount_inc(&sh->ref);
	}
	tg = tg_alloc(p->k, sh);
	if (!tg) {
		if (sh)
			refcount_dec(&sh->ref);
		return NULL;
	}
	tg->container = ptg->container;
	if (!(a->flags & CLONE_SIGHAND)) {
		pthread_mutex_lock(&ptg->sighand->lock);
		memcpy(tg->sighand->actions, ptg->sighand->actions, sizeof(tg->sighand->actions));
		pthread_mutex_unlock(&ptg->sighand->lock);
		if (a->flags & CLONE_CLEAR_SIGHAND) {
			for (int i = 0; i < LINUX_NSIG; i++) {
				if (tg->sighand->actions[i].handler > 1)
					memset(&tg->sighand->actions[i], 0,
					       sizeof(tg->sighand->actions[i]));
			}
		}
	}
	pthread_mutex_lock(&ptg->lock);
	memcpy(tg->rlimits, ptg->rlimits, sizeof(tg->rlimits));
	tg->dumpable = ptg->dumpable;
	tg->oom_score_adj = __atomic_load_n(&ptg->oom_score_adj, __ATOMIC_RELAXED);
	tg->oom_score_adj_min = __atomic_load_n(&ptg->oom_score_adj_min, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&ptg->lock);
	tg->exit_signal = a->exit_signal;
	return tg;
}

/*
 * Links c into the tree and the pid table, as a thread of p's process or as a new process
 * (tg). Fails with -ERESTARTNOINTR when p's process is exiting, so that no task escapes an
 * exit_group, a de-threading exec or the end of the sandbox; with -EAGAIN when the sandbox
 * already has k->pids_limit tasks.
 */
static int link_task(struct task *p, struct task *c, struct thread_group *tg,
		     const struct task_clone_args *a)
{
	struct kernel *k = p->k;
	struct thread_group *ptg = p->tg, *parent;
	struct pid_ns *pidns = (a->flags & CLONE_THREAD) ? ptg->pidns : tg->pidns;
	int32_t tid;
	int ret = 0;

	pthread_mutex_lock(&k->tree_lock);
	/* The sandbox's pids limit (OCI linux.resources.pids.limit), as the pids cgroup's. */
	if ((k->pids_limit > 0 && k->nr_tasks >= k->pids_limit) ||
	    pid_container_full(k, ptg->container) ||
	    cgroup_can_fork(k, (a->flags & CLONE_THREAD) || !a->cgroup ? ptg->cgroup : a->cgroup) <
		    0) {
		ret = -EAGAIN;
		goto out_unlock;
	}
	tid = a->set_tid ? a->set_tid : pid_alloc(k);
	if (a->set_tid) {
		ret = pid_alloc_exact(k, a->set_tid);
		if (ret < 0)
			goto out_unlock;
	}
	if (tid < 0) {
		ret = tid;
		goto out_unlock;
	}
	/* Its numbers in the nested pid namespaces its process is in (none: the sandbox's). */
	if (pidns) {
		ret = pid_ns_alloc(k, c, (a->flags & CLONE_THREAD) ? NULL : tg, pidns);
		if (ret < 0)
			goto out_unlock;
	}
	pthread_mutex_lock(&ptg->lock);
	if (ptg->exiting || p->exiting) {
		pthread_mutex_unlock(&ptg->lock);
		ret = -ERESTARTNOINTR;
		goto out_unlock;
	}
	c->tid = tid;
	if (a->flags & CLONE_THREAD) {
		c->tg = ptg;
		tg_get(ptg);
		list_add_tail(&c->tg_link, &ptg->tasks);
		ptg->nr_threads++;
		pthread_mutex_unlock(&ptg->lock);
	} else {
		pthread_mutex_unlock(&ptg->lock);
		parent = (a->flags & CLONE_PARENT) ? ptg->parent : ptg;
		c->tg = tg; /* takes tg's reference */
		tg->pid = tid;
		tg->leader = c;
		tg->parent = parent;
		tg->ppid = parent ? parent->pid : 0;
		tg->pgid = ptg->pgid;
		tg->sid = ptg->sid;
		tg->cgroup = a->cgroup ? a->cgroup : ptg->cgroup;
		cgroup_get(tg->cgroup);
		list_add_tail(&c->tg_link, &tg->tasks);
		tg->nr_threads = 1;
		if (parent)
			list_add_tail(&tg->sibling, &parent->children);
	}
	pid_insert(k, c);
out_unlock:
	pthread_mutex_unlock(&k->tree_lock);
	return ret;
}

/*
 * Starts c's host thread (counted as running by the caller, before c was linked, so that the
 * end of the sandbox waits for it). Returns 0 or -errno.
 */
static int start_thread(struct task *c)
{
	pthread_attr_t attr;
	pthread_t th;
	int ret;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, TASK_THREAD_STACK);
	task_get(c); /* the host thread's reference */
	ret = pthread_create(&th, &attr, task_thread_main, c);
	pthread_attr_destroy(&attr);
	if (ret != 0) {
		task_put(c);
		return -ret;
	}
	return 0;
}

int task_start_restored(struct task *t)
{
	return start_thread(t);
}

int task_start_restored_threads(struct task *t)
{
	const struct platform_ops *ops = t->k->platform->ops;
	int ret = 0;

	for (int i = 0; i < t->nr_restore_threads; i++) {
		struct task *c = t->restore_threads[i];

		if (ret == 0)
			ret = ops->ctx_clone(t->ctx, &c->ctx);
		if (ret == 0) {
			ret = start_thread(c);
			if (ret < 0) {
				ops->ctx_destroy(c->ctx);
				c->ctx = NULL;
			}
		}
		if (ret < 0) {
			/* It never runs: it leaves as a thread that exits at once, with its group. */
			task_exit_group(c, SIGKILL);
			task_exit_thread(c);
		}
		task_put(c); /* restore_threads' reference */
	}
	free(t->restore_threads);
	t->restore_threads = NULL;
	t->nr_restore_threads = 0;
	return ret;
}

int task_activate_restored(struct task *t)
{
	const struct platform_ops *ops = t->k->platform->ops;
	int ret = mm_activate(t->mm);

	if (ret == 0)
		ret = ops->ctx_create(t->mm->as, &t->ctx);
	if (ret == 0 && t->clone_fpstate) {
		ret = ops->ctx_set_fpstate(t->ctx, t->clone_fpstate, t->clone_fpstate_len);
		free(t->clone_fpstate);
		t->clone_fpstate = NULL;
	}
	if (ret == 0 && t->restore_threads)
		ret = task_start_restored_threads(t);
	return ret;
}

long task_clone(struct task *p, const struct task_clone_args *a)
{
	const struct platform_ops *ops = p->k->platform->ops;
	struct thread_group *tg = NULL;
	struct vfork_done *vd = NULL;
	struct task *c;
	int32_t tid;
	int pidfd = -1, event = 0;
	long ret;

	c = task_alloc(p->k);
	if (!c)
		return -ENOMEM;
	copy_task_state(c, p, a);
	c->ns = nsproxy_copy(p, a->flags, &c->cred);
	if (IS_ERR(c->ns)) {
		ret = PTR_ERR(c->ns);
		c->ns = NULL;
		task_put(c);
		return ret;
	}
	if (!c->ns && p->ns) {
		nsproxy_get(p->ns);
		c->ns = p->ns;
	}
	/* Linux's copy_process: a thread stays in its process's pid namespace. */
	if ((a->flags & CLONE_THREAD) && task_nsproxy(c)->pid != task_active_pid_ns(p)) {
		task_put(c);
		return -EINVAL;
	}
	ret = copy_fpstate(c, p);
	if (ret < 0) {
		task_put(c);
		return ret;
	}

	if (a->flags & CLONE_VM) {
		mm_get(p->mm);
		c->mm = p->mm;
		ret = ops->ctx_clone(p->ctx, &c->ctx);
		if (ret < 0) {
			c->ctx = NULL;
			goto out_release;
		}
	} else {
		uint64_t t0 = task_monotonic_ns();

		c->mm = mm_fork(p->mm);
		log_debug("timing: fork by %d: mm_fork %llu us", p->tid,
			  (unsigned long long)(task_monotonic_ns() - t0) / 1000);
		if (IS_ERR(c->mm)) {
			ret = PTR_ERR(c->mm);
			c->mm = NULL;
			goto out_release;
		}
	}
	if (a->flags & CLONE_FILES) {
		fdtable_get(p->fdt);
		c->fdt = p->fdt;
	} else {
		c->fdt = fdtable_dup(p->fdt);
	}
	if (a->flags & CLONE_FS) {
		fs_context_get(p->fs);
		c->fs = p->fs;
	} else {
		c->fs = fs_context_copy(p->fs);
		if (c->fs && (a->flags & CLONE_NEWNS) &&
		    vfs_mnt_ns_unshare(c->fs, task_nsproxy(c)->user) < 0) {
			fs_context_put(c->fs);
			c->fs = NULL;
		}
	}
	if (!c->fdt || !c->fs) {
		ret = -ENOMEM;
		goto out_release;
	}
	if (!(a->flags & CLONE_THREAD)) {
		tg = clone_tg(p, a);
		if (!tg) {
			ret = -ENOMEM;
			goto out_release;
		}
		/* A new process goes to the creator's pid_for_children. */
		if (task_nsproxy(c)->pid->level) {
			tg->pidns = task_nsproxy(c)->pid;
			pid_ns_get(tg->pidns);
		}
	}
	if (a->flags & CLONE_VFORK) {
		vd = calloc(1, sizeof(*vd));
		if (!vd) {
			ret = -ENOMEM;
			goto out_put_tg;
		}
		completion_init(&vd->c);
		vd->refs = 2;
		c->vfork_done = &vd->c;
	}

	/* Counted before it can be seen, so that the end of the sandbox waits for it. */
	pid_task_started(p->k);
	ret = link_task(p, c, tg, a);
	if (ret < 0) {
		pid_task_finished(p->k);
		goto out_free_vfork;
	}
	tg = NULL; /* c owns it now */
	tid = task_vtid(p, c); /* as the creator's pid namespace sees it */
	/* An inherited RLIMIT_CPU counts the new process's own time. */
	if (!(a->flags & CLONE_THREAD))
		timer_rlimit_cpu(c->tg);

	if (a->flags & CLONE_PIDFD) {
		pidfd = (int)pidfd_create_fd(p, c->tg, O_CLOEXEC);
		if (pidfd >= 0 &&
		    mm_copy_out(p->mm, a->pidfd, &pidfd, sizeof(pidfd)) != sizeof(pidfd)) {
			fdtable_close(p->fdt, pidfd);
			pidfd = -EFAULT;
		}
	}
	if (pidfd < -1 || ((a->flags & CLONE_PARENT_SETTID) &&
			   mm_copy_out(p->mm, a->parent_tid, &tid, sizeof(tid)) != sizeof(tid))) {
		/* The child never ran: it leaves as a thread that exits at once. */
		ret = pidfd < -1 ? pidfd : -EFAULT;
		if (vd) {
			vfork_done_put(vd);
			vd = NULL;
		}
		task_exit_group(c, SIGKILL);
		if (start_thread(c) < 0)
			task_exit_thread(c); /* takes the creation reference */
		else
			task_put(c);
		return ret;
	}

	/* A traced parent's new task may be auto-attached to the same tracer before it runs. */
	if (unlikely(__atomic_load_n(&p->ptrace, __ATOMIC_ACQUIRE)))
		event = ptrace_clone(p, c, a->flags, a->exit_signal);
	ret = start_thread(c);
	if (ret < 0) {
		/* Linked but cannot run: let it go through the exit path on this thread. */
		log_error("pid %d: cannot start a host thread: %s", tid, strerror((int)-ret));
		if (vd)
			vfork_done_put(vd);
		task_exit_group(c, SIGKILL);
		task_exit_thread(c); /* takes the creation reference */
		return -EAGAIN;
	}
	task_put(c); /* the creation reference: the host thread and pid table hold theirs */

	if (event)
		ptrace_event(p, event, (uint64_t)tid);
	if (vd) {
		/* Killable only, as Linux: the child may not run long without its parent. */
		task_wait_for_completion(p, &vd->c);
		vfork_done_put(vd);
		if (unlikely(__atomic_load_n(&p->ptrace, __ATOMIC_ACQUIRE)))
			ptrace_event(p, PT_EVENT_VFORK_DONE, (uint64_t)tid);
	}
	return tid;

out_free_vfork:
	if (vd) {
		c->vfork_done = NULL;
		free(vd);
	}
out_put_tg:
	if (tg)
		tg_put(tg);
out_release:
	if (c->ctx)
		ops->ctx_destroy(c->ctx);
	c->ctx = NULL;
	task_release(c);
	c->tg = NULL;
	task_put(c);
	return ret;
}
