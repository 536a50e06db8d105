/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Signal system calls: actions, masks, the alternate stack, sending (kill, tkill, tgkill,
 * rt_sigqueueinfo, rt_tgsigqueueinfo, pidfd_send_signal), waiting (rt_sigsuspend, pause,
 * rt_sigtimedwait), rt_sigpending, rt_sigreturn and restart_syscall. The machinery lives in
 * sentry/kernel/signals.c and signal_frame.c.
 */
#include <errno.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "common/err.h"
#include "include/abi/linux/errno.h"
#include "include/abi/linux/signal.h"
#include "sentry/fs/proc/proc.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/nsproxy.h"
#include "sentry/kernel/pidns.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/waitq.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/handlers.h"

#define LINUX_SIGSET_SIZE 8
#define LINUX_UNBLOCKABLE (SIGBIT(LINUX_SIGKILL) | SIGBIT(LINUX_SIGSTOP))

/* sa_flags bits user space may set and read back (kernel/signal.c UAPI_SA_FLAGS on x86-64). */
#define LINUX_UAPI_SA_FLAGS                                                                   \
	(LINUX_SA_NOCLDSTOP | LINUX_SA_NOCLDWAIT | LINUX_SA_SIGINFO | LINUX_SA_ONSTACK |      \
	 LINUX_SA_RESTART | LINUX_SA_NODEFER | LINUX_SA_RESETHAND | LINUX_SA_EXPOSE_TAGBITS | \
	 LINUX_SA_RESTORER)

_Static_assert(sizeof(struct linux_sigaction) == 32, "x86-64 kernel sigaction is 32 bytes");

static int copy_out_all(struct task *t, uint64_t addr, const void *src, size_t len)
{
	ssize_t n = mm_copy_out(t->mm, addr, src, len);

	return n == (ssize_t)len ? 0 : -EFAULT;
}

static int copy_in_all(struct task *t, void *dst, uint64_t addr, size_t len)
{
	ssize_t n = mm_copy_in(t->mm, dst, addr, len);

	return n == (ssize_t)len ? 0 : -EFAULT;
}

static bool valid_signal(uint64_t sig)
{
	return sig <= LINUX_NSIG;
}

/* Would the action ignore sig (SIG_IGN, or SIG_DFL of a signal whose default is to ignore)? */
static bool action_ignores(const struct linux_sigaction *ka, int sig)
{
	static const uint64_t dfl_ignore = SIGBIT(LINUX_SIGCONT) | SIGBIT(LINUX_SIGCHLD) |
					   SIGBIT(LINUX_SIGWINCH) | SIGBIT(LINUX_SIGURG);

	return ka->handler == LINUX_SIG_IGN ||
	       (ka->handler == LINUX_SIG_DFL && (SIGBIT(sig) & dfl_ignore));
}

/* rt_sigaction(2): an action that ignores the signal discards it where it is pending. */
long sys_rt_sigaction(struct task *t, const struct syscall_args *args)
{
	int sig = (int)args->a[0];
	uint64_t act_addr = args->a[1], oact_addr = args->a[2];
	struct thread_group *tg = t->tg;
	struct linux_sigaction act, oact;
	bool discard = false;
	int err;

	if (args->a[3] != LINUX_SIGSET_SIZE)
		return -EINVAL;
	if (act_addr) {
		err = copy_in_all(t, &act, act_addr, sizeof(act));
		if (err)
			return err;
	}
	if (sig < 1 || sig > LINUX_NSIG ||
	    (act_addr && (sig == LINUX_SIGKILL || sig == LINUX_SIGSTOP)))
		return -EINVAL;

	pthread_mutex_lock(&tg->sighand->lock);
	oact = tg->sighand->actions[sig - 1];
	if (act_addr) {
		/* Unknown flags are dropped so that programs can probe for support. */
		act.flags &= LINUX_UAPI_SA_FLAGS;
		act.mask &= ~LINUX_UNBLOCKABLE;
		tg->sighand->actions[sig - 1] = act;
		discard = action_ignores(&act, sig);
	}
	pthread_mutex_unlock(&tg->sighand->lock);
	if (discard) {
		/* POSIX: setting an ignoring action discards the pending signal, blocked or not. */
		struct task *u;

		pthread_mutex_lock(&tg->lock);
		list_for_each_entry(u, &tg->tasks, tg_link) {
			while (signal_dequeue(u, SIGBIT(sig), NULL))
				;
		}
		pthread_mutex_unlock(&tg->lock);
	}

	if (oact_addr) {
		oact.flags &= LINUX_UAPI_SA_FLAGS;
		return copy_out_all(t, oact_addr, &oact, sizeof(oact));
	}
	return 0;
}

/* rt_sigprocmask(2): as Linux, `how` is only checked when a new set is given. */
long sys_rt_sigprocmask(struct task *t, const struct syscall_args *args)
{
	int how = (int)args->a[0];
	uint64_t set_addr = args->a[1], oset_addr = args->a[2];
	uint64_t old = t->sigmask, set;
	int err;

	if (args->a[3] != LINUX_SIGSET_SIZE)
		return -EINVAL;
	if (set_addr) {
		err = copy_in_all(t, &set, set_addr, sizeof(set));
		if (err)
			return err;
		switch (how) {
		case LINUX_SIG_BLOCK:
			set = old | set;
			break;
		case LINUX_SIG_UNBLOCK:
			set = old & ~set;
			break;
		case LINUX_SIG_SETMASK:
			break;
		default:
			return -EINVAL;
		}
		signal_set_blocked(t, set);
	}
	if (oset_addr)
		return copy_out_all(t, oset_addr, &old, sizeof(old));
	return 0;
}

/* sigaltstack(2): the AMX-sized minimum of Linux is not enforced. */
long sys_sigaltstack(struct task *t, const struct syscall_args *args)
{
	uint64_t ss_addr = args->a[0], oss_addr = args->a[1];
	struct linux_stack ss, oss;
	int err;

	if (ss_addr) {
		err = copy_in_all(t, &ss, ss_addr, sizeof(ss));
		if (err)
			return err;
	}
	err = signal_altstack(t, ss_addr ? &ss : NULL, &oss, t->regs.rsp);
	if (err)
		return err;
	if (oss_addr)
		return copy_out_all(t, oss_addr, &oss, sizeof(oss));
	return 0;
}

/* rt_sigreturn(2) */
long sys_rt_sigreturn(struct task *t, const struct syscall_args *args)
{
	return signal_frame_return(t);
}

/* restart_syscall(2): resumes a call interrupted with ERESTART_RESTARTBLOCK. */
long sys_restart_syscall(struct task *t, const struct syscall_args *args)
{
	long (*fn)(struct task *) = t->restart_fn;

	t->restart_fn = NULL;
	return fn ? fn(t) : -EINTR;
}

/* rt_sigpending(2): the pending signals that are blocked. */
long sys_rt_sigpending(struct task *t, const struct syscall_args *args)
{
	uint64_t size = args->a[1];
	uint64_t set = signal_pending_set(t) & t->sigmask;

	if (size > LINUX_SIGSET_SIZE)
		return -EINVAL;
	return copy_out_all(t, args->a[0], &set, size);
}

/* Waits, interruptibly, until a signal is pending that t does not block. */
static long wait_for_signal(struct task *t)
{
	long ret;

	do
		ret = task_wait(t, NULL, 0, NULL, NULL, NULL, true);
	while (ret == 0);
	return ret;
}

/* rt_sigsuspend(2) */
long sys_rt_sigsuspend(struct task *t, const struct syscall_args *args)
{
	uint64_t mask;

	if (args->a[1] != LINUX_SIGSET_SIZE)
		return -EINVAL;
	if (copy_in_all(t, &mask, args->a[0], sizeof(mask)) < 0)
		return -EFAULT;
	t->saved_sigmask = t->sigmask;
	t->restore_sigmask = true;
	signal_set_blocked(t, mask);
	wait_for_signal(t);
	return -ERESTARTNOHAND;
}

/* pause(2) */
long sys_pause(struct task *t, const struct syscall_args *args)
{
	wait_for_signal(t);
	return -ERESTARTNOHAND;
}

struct sigwait_arg {
	struct task *t;
	uint64_t mask;
};

static bool sigwait_ready(void *arg)
{
	struct sigwait_arg *a = arg;

	return (signal_pending_set(a->t) & a->mask) != 0;
}

/* rt_sigtimedwait(2) */
long sys_rt_sigtimedwait(struct task *t, const struct syscall_args *args)
{
	uint64_t info_addr = args->a[1], ts_addr = args->a[2];
	struct linux_siginfo info;
	struct timespec ts, deadline, now;
	struct sigwait_arg wa = { t, 0 };
	uint64_t blocked;
	long ret = 0;
	int sig;

	if (args->a[3] != LINUX_SIGSET_SIZE)
		return -EINVAL;
	if (copy_in_all(t, &wa.mask, args->a[0], sizeof(wa.mask)) < 0)
		return -EFAULT;
	wa.mask &= ~LINUX_UNBLOCKABLE;
	if (ts_addr) {
		struct {
			int64_t sec, nsec;
		} uts;

		if (copy_in_all(t, &uts, ts_addr, sizeof(uts)) < 0)
			return -EFAULT;
		if (uts.sec < 0 || uts.nsec < 0 || uts.nsec >= 1000000000)
			return -EINVAL;
		ts.tv_sec = uts.sec;
		ts.tv_nsec = uts.nsec;
	}

	sig = signal_dequeue(t, wa.mask, &info);
	if (!sig && !(ts_addr && ts.tv_sec == 0 && ts.tv_nsec == 0)) {
		/* As Linux: the awaited signals are unblocked while the task sleeps, so that a
		 * process-directed one picks this thread. */
		blocked = t->sigmask;
		/* Still blocked for sig_ignored (Linux's real_blocked): pid 1 keeps them. */
		__atomic_store_n(&t->real_blocked, blocked, __ATOMIC_RELAXED);
		signal_set_blocked(t, blocked & ~wa.mask);
		if (ts_addr) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			deadline.tv_sec = now.tv_sec + ts.tv_sec;
			deadline.tv_nsec = now.tv_nsec + ts.tv_nsec;
			if (deadline.tv_nsec >= 1000000000) {
				deadline.tv_sec++;
				deadline.tv_nsec -= 1000000000;
			}
		}
		ret = task_wait(t, NULL, 0, sigwait_ready, &wa, ts_addr ? &deadline : NULL, true);
		/* Take the signal before blocking it again: re-blocking first would hand a pending
		 * process-directed one to another thread (which may die of it). */
		sig = signal_dequeue(t, wa.mask, &info);
		signal_set_blocked(t, blocked);
		__atomic_store_n(&t->real_blocked, 0, __ATOMIC_RELAXED);
	}
	if (!sig)
		return ret != -ERESTARTSYS ?
			       -EAGAIN :
			       /* a freeze alone (pause, checkpoint) restarts it, unseen */
			       kernel_freezing(t->k) ? -ERESTARTNOHAND :
						       -EINTR;
	if (info_addr && copy_out_all(t, info_addr, &info, sizeof(info)) < 0)
		return -EFAULT;
	return sig;
}

/* Linux's kill_ok_by_cred() plus the SIGCONT-in-session exception (check_kill_permission). */
static int kill_permitted(struct task *t, struct thread_group *tg, int sig,
			  const struct linux_siginfo *info)
{
	const struct cred *c = &t->cred, *tc;

	/* A pod member with a pid namespace of its own reaches its own processes only. */
	if (!pid_visible(t->tg, tg) || !task_sees_tg(t, tg))
		return -ESRCH;
	/* Only signals from user space are checked (si_code <= 0 or SI_USER). */
	if (info && info->si_code > 0 && info->si_code != LINUX_SI_USER)
		return 0;
	if (tg == t->tg)
		return 0;
	tc = &tg->leader->cred;
	if (c->euid == tc->suid || c->euid == tc->uid || c->uid == tc->suid || c->uid == tc->uid ||
	    cred_capable(c, CAP_KILL))
		return 0;
	if (sig == LINUX_SIGCONT && tg->sid == t->tg->sid)
		return 0;
	return -EPERM;
}

/*
 * Sends to tg (t: one of its threads, or NULL) from t, as Linux's send_signal_locked: from an
 * ancestor pid namespace the signal has si_pid 0 and may kill or stop a namespace's init.
 */
static int send_from(struct task *t, struct thread_group *tg, struct task *to, int sig,
		     const struct linux_siginfo *info)
{
	struct linux_siginfo copy;

	if (t->tg->pidns == tg->pidns || !tg->pidns)
		return signal_send(tg, to, sig, info, 0);
	if (pid_ns_is_ancestor(tg->pidns, t->tg->pidns))
		return signal_send(tg, to, sig, info, 0); /* from inside */
	if (info && info->si_code <= 0) {
		copy = *info;
		copy.kill.pid = 0;
		info = &copy;
	}
	return signal_send(tg, to, sig, info, SIGSEND_FROM_OUTSIDE);
}

/* Checks and sends one process-directed signal (sig 0: checks only). */
static int send_checked(struct task *t, struct thread_group *tg, int sig,
			const struct linux_siginfo *info)
{
	int ret = kill_permitted(t, tg, sig, info);

	if (ret < 0 || sig == 0)
		return ret;
	return send_from(t, tg, NULL, sig, info);
}

/* The process whose pid (or any thread's tid) is pid, with a reference, or NULL. */
static struct thread_group *find_process(struct task *t, int32_t pid)
{
	struct task *u = task_find_vtask(t, pid);
	struct thread_group *tg = NULL;

	if (!u)
		return NULL;
	if (!u->tg->reaped) {
		tg = u->tg;
		tg_get(tg);
	}
	task_put(u);
	return tg;
}

struct kill_many {
	struct task *t;
	int sig;
	const struct linux_siginfo *info;
	int32_t pgid; /* 0: every process but pid 1 and the caller's */
	int count, success;
	long ret;
};

static int kill_one(struct thread_group *tg, void *arg)
{
	struct kill_many *km = arg;
	long ret;

	if (tg->reaped || !task_sees_tg(km->t, tg))
		return 0;
	/* kill(-1) spares the caller's pid namespace's init too. */
	if (km->pgid ? tg->pgid != km->pgid :
		       (tg->pid <= 1 || tg == km->t->tg ||
			(km->t->tg->pidns && km->t->tg->pidns->reaper == tg)))
		return 0;
	ret = send_checked(km->t, tg, km->sig, km->info);
	km->count++;
	if (km->pgid) {
		/* Linux's __kill_pgrp_info: success if any succeeded, else the last error. */
		km->success |= ret == 0;
		km->ret = ret;
	} else if (ret != -EPERM) {
		/* kill(-1): Linux reports the last error other than EPERM. */
		km->ret = ret;
	}
	return 0;
}

/* Sends to a process group (pgid > 0) or to every process but pid 1 and the caller (0). */
static long kill_many(struct task *t, int32_t pgid, int sig, const struct linux_siginfo *info)
{
	struct kill_many km = { t, sig, info, pgid, 0, 0, 0 };

	pthread_mutex_lock(&t->k->tree_lock);
	pid_for_each_tg(t->k, kill_one, &km);
	pthread_mutex_unlock(&t->k->tree_lock);
	if (!km.count)
		return -ESRCH;
	return km.success ? 0 : km.ret;
}

/* Sends sig with info to pid as kill(2) reads pid (> 0, 0, -1, < -1). */
static long kill_pid(struct task *t, int32_t pid, int sig, const struct linux_siginfo *info)
{
	struct thread_group *tg;
	long ret;

	if (pid > 0) {
		tg = find_process(t, pid);
		if (!tg)
			return -ESRCH;
		ret = send_checked(t, tg, sig, info);
		tg_put(tg);
		return ret;
	}
	if (pid == -1)
		return kill_many(t, 0, sig, info);
	if (pid == 0)
		return kill_many(t, t->tg->pgid, sig, info);
	if (pid == INT32_MIN)
		return -ESRCH;
	pid = task_global_nr(t, -pid); /* the caller's number of the group */
	return pid ? kill_many(t, pid, sig, info) : -ESRCH;
}

/* kill(2) */
long sys_kill(struct task *t, const struct syscall_args *args)
{
	int32_t pid = (int32_t)args->a[0];
	int sig = (int)args->a[1];
	struct linux_siginfo info;

	if (!valid_signal((uint32_t)sig))
		return -EINVAL;
	signal_info_from(&info, sig, LINUX_SI_USER, t);
	return kill_pid(t, pid, sig, &info);
}

/* Sends to one thread, checking that it belongs to tgid when tgid > 0 (tgkill). */
static long send_to_thread(struct task *t, int32_t tgid, int32_t tid, int sig,
			   const struct linux_siginfo *info)
{
	struct task *u = task_find_vtask(t, tid);
	long ret;

	if (!u)
		return -ESRCH;
	if ((tgid > 0 && task_vpid(t, u->tg) != tgid) || u->exiting) {
		task_put(u);
		return -ESRCH;
	}
	ret = kill_permitted(t, u->tg, sig, info);
	if (ret == 0 && sig != 0)
		ret = send_from(t, u->tg, u, sig, info);
	task_put(u);
	return ret;
}

/* tgkill(2) */
long sys_tgkill(struct task *t, const struct syscall_args *args)
{
	int32_t tgid = (int32_t)args->a[0], tid = (int32_t)args->a[1];
	int sig = (int)args->a[2];
	struct linux_siginfo info;

	if (tgid <= 0 || tid <= 0)
		return -EINVAL;
	if (!valid_signal((uint32_t)sig))
		return -EINVAL;
	signal_info_from(&info, sig, LINUX_SI_TKILL, t);
	return send_to_thread(t, tgid, tid, sig, &info);
}

/* tkill(2) */
long sys_tkill(struct task *t, const struct syscall_args *args)
{
	int32_t tid = (int32_t)args->a[0];
	int sig = (int)args->a[1];
	struct linux_siginfo info;

	if (tid <= 0)
		return -EINVAL;
	if (!valid_signal((uint32_t)sig))
		return -EINVAL;
	signal_info_from(&info, sig, LINUX_SI_TKILL, t);
	return send_to_thread(t, 0, tid, sig, &info);
}

/*
 * Reads a siginfo given by the guest for sig. Linux's rule: only the process itself may claim
 * a kernel si_code (>= 0) or SI_TKILL; si_signo is the signal sent.
 */
static int guest_info(struct task *t, uint64_t addr, int sig, int32_t target_pid,
		      struct linux_siginfo *info)
{
	if (copy_in_all(t, info, addr, sizeof(*info)) < 0)
		return -EFAULT;
	if ((info->si_code >= 0 || info->si_code == LINUX_SI_TKILL) && target_pid != task_pid(t))
		return -EPERM;
	info->si_signo = sig;
	return 0;
}

/* rt_sigqueueinfo(2) */
long sys_rt_sigqueueinfo(struct task *t, const struct syscall_args *args)
{
	int32_t pid = (int32_t)args->a[0];
	int sig = (int)args->a[1];
	struct linux_siginfo info;
	int ret;

	ret = guest_info(t, args->a[2], sig, pid, &info);
	if (ret < 0)
		return ret;
	if (!valid_signal((uint32_t)sig))
		return -EINVAL;
	if (pid <= 0) {
		/* Linux's kill_proc_info looks the pid up as is: no process has pid <= 0. */
		return -ESRCH;
	}
	return kill_pid(t, pid, sig, &info);
}

/* rt_tgsigqueueinfo(2) */
long sys_rt_tgsigqueueinfo(struct task *t, const struct syscall_args *args)
{
	int32_t tgid = (int32_t)args->a[0], tid = (int32_t)args->a[1];
	int sig = (int)args->a[2];
	struct linux_siginfo info;
	int ret;

	if (tgid <= 0 || tid <= 0)
		return -EINVAL;
	ret = guest_info(t, args->a[3], sig, tgid, &info);
	if (ret < 0)
		return ret;
	if (!valid_signal((uint32_t)sig))
		return -EINVAL;
	return send_to_thread(t, tgid, tid, sig, &info);
}

/* The process a /proc/PID directory fd names (a new reference), or an ERR_PTR. */
static struct thread_group *proc_dir_tg(struct task *t, int fd)
{
	struct file *f = fdtable_lookup(t->fdt, fd);
	struct thread_group *tg = ERR_PTR(-EBADF);
	struct task *o;
	int32_t pid;

	if (!f)
		return tg;
	pid = proc_file_pid(f);
	file_put(f);
	if (pid < 0)
		return tg;
	pthread_mutex_lock(&t->k->tree_lock);
	o = pid_lookup(t->k, pid);
	if (o && o->tg->pid == pid) {
		tg = o->tg;
		tg_get(tg);
	} else {
		tg = ERR_PTR(-ESRCH);
	}
	pthread_mutex_unlock(&t->k->tree_lock);
	return tg;
}

/* pidfd_send_signal(2): a pidfd or a /proc/PID directory; flags must be 0 (the PIDFD_SIGNAL_* scopes came after 6.6). */
long sys_pidfd_send_signal(struct task *t, const struct syscall_args *args)
{
	int fd = (int)args->a[0];
	int sig = (int)args->a[1];
	uint64_t info_addr = args->a[2];
	struct linux_siginfo info;
	struct thread_group *tg;
	long ret;

	if (args->a[3] != 0)
		return -EINVAL;
	if (!valid_signal((uint32_t)sig))
		return -EINVAL;
	tg = pidfd_get_tg(t, fd);
	if (IS_ERR(tg))
		tg = proc_dir_tg(t, fd);
	if (IS_ERR(tg))
		return PTR_ERR(tg);
	if (info_addr) {
		ret = -EFAULT;
		if (copy_in_all(t, &info, info_addr, sizeof(info)) < 0)
			goto out_put;
		ret = -EINVAL;
		if (info.si_signo != sig)
			goto out_put;
		ret = -EPERM;
		if (tg != t->tg && (info.si_code >= 0 || info.si_code == LINUX_SI_TKILL))
			goto out_put;
	} else {
		signal_info_from(&info, sig, LINUX_SI_USER, t);
	}
	ret = tg->reaped ? -ESRCH : send_checked(t, tg, sig, &info);
out_put:
	tg_put(tg);
	return ret;
}
