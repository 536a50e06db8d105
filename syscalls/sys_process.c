/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Processes: fork, vfork, clone, clone3, execve, execveat, wait4, waitid, sessions and process
 * groups, prctl, pidfd_open. The work is in sentry/kernel/task_*.c; this file decodes and
 * validates arguments as Linux does and copies results out.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "common/err.h"
#include "include/abi/linux/errno.h"
#include "sentry/fs/cgroup/cgroup.h"
#include "sentry/fs/proc/proc_ids.h"
#include "sentry/kernel/nsproxy.h"
#include "sentry/kernel/pidns.h"
#include "sentry/kernel/cred.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/ptrace.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/mount_user.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/handlers.h"

#define CSIGNAL_MASK 0xffULL
#define CLONE_LEGACY_FLAGS 0xffffffffULL
#define CLONE_ARGS_VER0 64
#define CLONE_ARGS_VER2 88
#define CLONE3_MAX_SIZE 4096
#define PIDFD_THREAD_FLAG O_EXCL
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* fork(2) */
long sys_fork(struct task *t, const struct syscall_args *args)
{
	struct task_clone_args a = { .exit_signal = SIGCHLD };

	return task_clone(t, &a);
}

/* vfork(2) */
long sys_vfork(struct task *t, const struct syscall_args *args)
{
	struct task_clone_args a = { .flags = CLONE_VM | CLONE_VFORK, .exit_signal = SIGCHLD };

	return task_clone(t, &a);
}

/* clone(2): x86-64 argument order (flags, stack, parent_tid, child_tid, tls). */
long sys_clone(struct task *t, const struct syscall_args *args)
{
	uint64_t flags = args->a[0] & 0xffffffffULL;
	struct task_clone_args a = {
		.flags = flags & ~CSIGNAL_MASK,
		.exit_signal = (int)(flags & CSIGNAL_MASK),
		.stack = args->a[1],
		.parent_tid = args->a[2],
		.pidfd = args->a[2],
		.child_tid = args->a[3],
		.tls = args->a[4],
	};
	int ret;

	ret = task_clone_check(t, &a);
	if (ret < 0)
		return ret;
	return task_clone(t, &a);
}

/* The clone3 argument block as user space passes it (struct clone_args, version 2). */
struct clone3_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
	uint64_t set_tid, set_tid_size, cgroup;
};

/* clone3(2): set_tid of one level only; CLONE_INTO_CGROUP with a cgroup2 directory fd. */
long sys_clone3(struct task *t, const struct syscall_args *args)
{
	uint64_t uargs = args->a[0], size = args->a[1];
	struct clone3_args ka = { 0 };
	struct task_clone_args a;
	uint8_t rest[64];
	int ret;

	if (size > CLONE3_MAX_SIZE)
		return -E2BIG;
	if (size < CLONE_ARGS_VER0)
		return -EINVAL;
	if (mm_copy_in(t->mm, &ka, uargs, size < sizeof(ka) ? size : sizeof(ka)) !=
	    (ssize_t)(size < sizeof(ka) ? size : sizeof(ka)))
		return -EFAULT;
	/* copy_struct_from_user: bytes the kernel does not know must be zero. */
	for (uint64_t off = sizeof(ka); off < size; off += sizeof(rest)) {
		size_t n = size - off < sizeof(rest) ? (size_t)(size - off) : sizeof(rest);

		if (mm_copy_in(t->mm, rest, uargs + off, n) != (ssize_t)n)
			return -EFAULT;
		for (size_t i = 0; i < n; i++) {
			if (rest[i])
				return -E2BIG;
		}
	}
	if (ka.set_tid_size > 32)
		return -EINVAL;
	if (!ka.set_tid && ka.set_tid_size)
		return -EINVAL;
	if (ka.set_tid && !ka.set_tid_size)
		return -EINVAL;
	if ((ka.exit_signal & ~CSIGNAL_MASK) || ka.exit_signal > LINUX_NSIG)
		return -EINVAL;
	if ((ka.flags & CLONE_INTO_CGROUP) && (ka.cgroup > INT_MAX || size < CLONE_ARGS_VER2))
		return -EINVAL;
	if (ka.flags & ~(CLONE_LEGACY_FLAGS | CLONE_CLEAR_SIGHAND | CLONE_INTO_CGROUP))
		return -EINVAL;
	/* CSIGNAL bits other than CLONE_NEWTIME's belong in exit_signal. */
	if (ka.flags & (CLONE_DETACHED | (CSIGNAL_MASK & ~(uint64_t)CLONE_NEWTIME)))
		return -EINVAL;
	if ((ka.flags & (CLONE_THREAD | CLONE_PARENT)) && ka.exit_signal)
		return -EINVAL;
	if ((ka.stack == 0) != (ka.stack_size == 0))
		return -EINVAL;
	if (ka.stack && ka.stack + ka.stack_size < ka.stack)
		return -EINVAL;

	memset(&a, 0, sizeof(a));
	a.flags = ka.flags;
	a.pidfd = ka.pidfd;
	a.child_tid = ka.child_tid;
	a.parent_tid = ka.parent_tid;
	a.exit_signal = (int)ka.exit_signal;
	a.stack = ka.stack ? ka.stack + ka.stack_size : 0;
	a.tls = ka.tls;
	if (ka.set_tid_size) {
		int32_t tid;

		if (ka.set_tid_size > 1)
			return -EINVAL; /* one pid namespace level */
		if (mm_copy_in(t->mm, &tid, ka.set_tid, sizeof(tid)) != sizeof(tid))
			return -EFAULT;
		if (tid < 0)
			return -EINVAL;
		if (tid > 0 && !cred_capable(&t->cred, CAP_SYS_ADMIN) &&
		    !cred_capable(&t->cred, 40 /* CAP_CHECKPOINT_RESTORE */))
			return -EPERM;
		a.set_tid = tid;
	}
	ret = task_clone_check(t, &a);
	if (ret < 0)
		return ret;
	if (ka.flags & CLONE_INTO_CGROUP) {
		struct file *f = fdtable_lookup(t->fdt, (int)ka.cgroup);
		struct cgroup *cg;
		long r;

		if (!f)
			return -EBADF;
		cg = cgroup_clone_into(t, f);
		file_put(f);
		if (IS_ERR(cg))
			return PTR_ERR(cg);
		a.cgroup = cg;
		r = task_clone(t, &a);
		cgroup_put(cg);
		return r;
	}
	return task_clone(t, &a);
}

/* execve(2) */
long sys_execve(struct task *t, const struct syscall_args *args)
{
	return task_execve_guest(t, AT_FDCWD, args->a[0], args->a[1], args->a[2], 0);
}

/* execveat(2): as Linux; a script run through a descriptor is named /dev/fd/N (ENOENT if
 * close-on-exec). */
long sys_execveat(struct task *t, const struct syscall_args *args)
{
	return task_execve_guest(t, (int)args->a[0], args->a[1], args->a[2], args->a[3],
				 (int)args->a[4]);
}

/* struct rusage with only the times and ru_maxrss filled, as copied out by wait4/waitid. */
static int put_rusage(struct task *t, uint64_t addr, const struct task_wait_result *r)
{
	struct rusage ru;

	memset(&ru, 0, sizeof(ru));
	ru.ru_utime.tv_sec = (time_t)(r->utime_ns / 1000000000ULL);
	ru.ru_utime.tv_usec = (suseconds_t)(r->utime_ns % 1000000000ULL / 1000);
	ru.ru_stime.tv_sec = (time_t)(r->stime_ns / 1000000000ULL);
	ru.ru_stime.tv_usec = (suseconds_t)(r->stime_ns % 1000000000ULL / 1000);
	ru.ru_maxrss = (long)r->maxrss_kb;
	return mm_copy_out(t->mm, addr, &ru, sizeof(ru)) == sizeof(ru) ? 0 : -EFAULT;
}

/* wait4(2): rusage has the times only. */
long sys_wait4(struct task *t, const struct syscall_args *args)
{
	int32_t pid = (int32_t)args->a[0];
	int options = (int)args->a[2];
	struct task_wait_result r;
	int which = P_ALL;
	int32_t id = 0;
	long ret;

	if (options & ~(WNOHANG | WUNTRACED | WCONTINUED | __WNOTHREAD | __WCLONE | __WALL))
		return -EINVAL;
	if (pid == INT32_MIN)
		return -ESRCH;
	if (pid > 0) {
		which = P_PID;
		id = pid;
	} else if (pid == 0) {
		which = P_PGID;
		id = t->tg->pgid;
	} else if (pid < -1) {
		which = P_PGID;
		id = -pid;
	}
	if (t->tg->pidns && pid != 0 && pid != -1)
		id = task_global_nr(t, id) ?: -1; /* the caller's number; -1: none, ECHILD */
	ret = task_wait_child(t, which, id, options | WEXITED, &r);
	if (ret <= 0)
		return ret;
	if (args->a[1] && mm_copy_out(t->mm, args->a[1], &r.status, sizeof(int)) != sizeof(int))
		return -EFAULT;
	if (args->a[3] && put_rusage(t, args->a[3], &r) < 0)
		return -EFAULT;
	return ret;
}

/* The part of siginfo waitid(2) writes. */
struct waitid_info {
	int32_t signo, err, code, pad;
	int32_t pid;
	uint32_t uid;
	int32_t status;
};

/* waitid(2): rusage has the times only. */
long sys_waitid(struct task *t, const struct syscall_args *args)
{
	int idtype = (int)args->a[0];
	int32_t id = (int32_t)args->a[1];
	uint64_t infop = args->a[2];
	int options = (int)args->a[3];
	struct waitid_info info;
	struct task_wait_result r;
	bool pidfd_nonblock = false;
	long ret;

	if (options & ~(WNOHANG | WNOWAIT | WEXITED | WSTOPPED | WCONTINUED | __WNOTHREAD |
			__WCLONE | __WALL))
		return -EINVAL;
	if (!(options & (WEXITED | WSTOPPED | WCONTINUED)))
		return -EINVAL;
	switch (idtype) {
	case P_ALL:
		break;
	case P_PID:
		if (id <= 0)
			return -EINVAL;
		if (t->tg->pidns)
			id = task_global_nr(t, id) ?:
						     -1; /* the caller's number; -1: none, ECHILD */
		break;
	case P_PGID:
		if (id < 0)
			return -EINVAL;
		if (id == 0)
			id = t->tg->pgid;
		else if (t->tg->pidns)
			id = task_global_nr(t, id) ?: -1;
		break;
	case P_PIDFD: {
		struct thread_group *tg;
		struct file *f;

		if (id < 0)
			return -EINVAL;
		tg = pidfd_get_tg(t, id);
		if (IS_ERR(tg))
			return PTR_ERR(tg);
		f = fdtable_lookup(t->fdt, id);
		if (f) {
			if (f->flags & O_NONBLOCK) {
				options |= WNOHANG;
				pidfd_nonblock = true;
			}
			file_put(f);
		}
		idtype = P_PID;
		id = tg->pid;
		tg_put(tg);
		break;
	}
	default:
		return -EINVAL;
	}
	ret = task_wait_child(t, idtype, id, options, &r);
	/* A non-blocking pidfd says "not yet" with EAGAIN rather than an empty siginfo. */
	if (ret == 0 && pidfd_nonblock)
		return -EAGAIN;
	if (ret < 0)
		return ret;
	if (ret > 0 && args->a[4] && put_rusage(t, args->a[4], &r) < 0)
		return -EFAULT;
	if (!infop)
		return 0;
	memset(&info, 0, sizeof(info));
	if (ret > 0) {
		info.signo = SIGCHLD;
		info.code = r.cld_code;
		info.pid = r.pid;
		info.uid = r.uid;
		info.status = r.cld_status;
	}
	if (mm_copy_out(t->mm, infop, &info, sizeof(info)) != sizeof(info))
		return -EFAULT;
	return 0;
}

struct pgrp_query {
	int32_t pgid, sid; /* sid -1: any session */
};

static int pgrp_match(struct thread_group *tg, void *arg)
{
	struct pgrp_query *q = arg;

	return tg->pgid == q->pgid && tg->state != TG_DEAD && (q->sid < 0 || tg->sid == q->sid);
}

/* True if some process is in group pgid (of session sid, or any when sid < 0). tree_lock. */
static bool pgrp_exists(struct kernel *k, int32_t pgid, int32_t sid)
{
	struct pgrp_query q = { .pgid = pgid, .sid = sid };

	return pid_for_each_tg(k, pgrp_match, &q) != 0;
}

/* setsid(2) */
long sys_setsid(struct task *t, const struct syscall_args *args)
{
	struct kernel *k = t->k;
	struct thread_group *tg = t->tg;
	long ret;

	pthread_mutex_lock(&k->tree_lock);
	if (pgrp_exists(k, tg->pid, -1)) {
		ret = -EPERM; /* a group leader, or its pid names another group */
	} else {
		tg->sid = tg->pid;
		tg->pgid = tg->pid;
		ret = pid_ns_tg_nr(tg, tg->pidns);
	}
	pthread_mutex_unlock(&k->tree_lock);
	return ret;
}

/* setpgid(2) */
long sys_setpgid(struct task *t, const struct syscall_args *args)
{
	struct kernel *k = t->k;
	struct thread_group *me = t->tg, *p;
	int32_t pid = (int32_t)args->a[0], pgid = (int32_t)args->a[1];
	struct task *pt;
	long ret;

	if (me->pidns && pid > 0) {
		/* The caller's numbers, as the sandbox's. */
		pid = task_global_nr(t, pid);
		if (!pid)
			return -ESRCH;
	}
	if (me->pidns && pgid > 0) {
		int32_t g = task_global_nr(t, pgid);

		if (!g)
			return -EPERM; /* no such group in the caller's namespace */
		pgid = g;
	}
	if (!pid)
		pid = me->pid;
	if (!pgid)
		pgid = pid;
	if (pgid < 0)
		return -EINVAL;
	pthread_mutex_lock(&k->tree_lock);
	ret = -ESRCH;
	pt = pid_lookup(k, pid);
	if (!pt || pt->tg->reaped)
		goto out;
	ret = -EINVAL;
	if (pt->tg->pid != pid)
		goto out;
	p = pt->tg;
	if (p->parent == me) {
		ret = -EPERM;
		if (p->sid != me->sid)
			goto out;
		ret = -EACCES;
		if (p->did_exec)
			goto out;
	} else if (p != me) {
		ret = -ESRCH;
		goto out;
	}
	ret = -EPERM;
	if (p->sid == p->pid)
		goto out; /* a session leader */
	if (pgid != pid && !pgrp_exists(k, pgid, me->sid))
		goto out;
	p->pgid = pgid;
	ret = 0;
out:
	pthread_mutex_unlock(&k->tree_lock);
	return ret;
}

/* The process of thread tid (0: the caller's) for getpgid/getsid; NULL if none. tree_lock. */
static struct thread_group *find_tg_of(struct task *t, int32_t tid)
{
	struct task *o;

	if (tid == 0)
		return t->tg;
	o = pid_ns_lookup(t->k, t->tg->pidns, tid);
	return o && !o->tg->reaped ? o->tg : NULL;
}

/* getpgid(2) */
long sys_getpgid(struct task *t, const struct syscall_args *args)
{
	int32_t pid = (int32_t)args->a[0];
	struct thread_group *tg;
	long ret;

	if (pid < 0)
		return -ESRCH;
	pthread_mutex_lock(&t->k->tree_lock);
	tg = find_tg_of(t, pid);
	ret = tg ? pid_ns_nr_of(t->k, tg->pgid, t->tg->pidns) : -ESRCH;
	pthread_mutex_unlock(&t->k->tree_lock);
	return ret;
}

/* getsid(2) */
long sys_getsid(struct task *t, const struct syscall_args *args)
{
	int32_t pid = (int32_t)args->a[0];
	struct thread_group *tg;
	long ret;

	if (pid < 0)
		return -ESRCH;
	pthread_mutex_lock(&t->k->tree_lock);
	tg = find_tg_of(t, pid);
	ret = tg ? pid_ns_nr_of(t->k, tg->sid, t->tg->pidns) : -ESRCH;
	pthread_mutex_unlock(&t->k->tree_lock);
	return ret;
}

/* getpgrp(2) */
long sys_getpgrp(struct task *t, const struct syscall_args *args)
{
	long ret;

	pthread_mutex_lock(&t->k->tree_lock);
	ret = pid_ns_nr_of(t->k, t->tg->pgid, t->tg->pidns);
	pthread_mutex_unlock(&t->k->tree_lock);
	return ret;
}

/* getppid(2): 0 for pid 1 (and for orphans of an ending sandbox), as in a pid namespace. */
long sys_getppid(struct task *t, const struct syscall_args *args)
{
	long ret;

	if (!t->tg->pidns)
		return __atomic_load_n(&t->tg->ppid, __ATOMIC_RELAXED);
	/* In a nested pid namespace: 0 when the parent is outside it. */
	pthread_mutex_lock(&t->k->tree_lock);
	ret = t->tg->parent ? pid_ns_tg_nr(t->tg->parent, t->tg->pidns) : 0;
	pthread_mutex_unlock(&t->k->tree_lock);
	return ret;
}

/*
 * pidfd_getfd(2): a duplicate (close-on-exec) of another process's fd, with ptrace access
 * (PTRACE_MODE_ATTACH_REALCREDS) to it.
 */
long sys_pidfd_getfd(struct task *t, const struct syscall_args *args)
{
	int targetfd = (int)args->a[1];
	struct thread_group *tg;
	struct task *leader = NULL;
	struct fdtable *fdt = NULL;
	struct file *f = NULL;
	long ret;

	if ((unsigned int)args->a[2])
		return -EINVAL;
	tg = pidfd_get_tg(t, (int)args->a[0]);
	if (IS_ERR(tg))
		return PTR_ERR(tg);
	ret = -ESRCH;
	pthread_mutex_lock(&tg->lock);
	if (tg->state == TG_RUNNING && !tg->exiting)
		ret = 0;
	pthread_mutex_unlock(&tg->lock);
	if (ret)
		goto out;
	leader = kernel_find_task(t->k, tg->pid);
	if (!leader) {
		ret = -ESRCH;
		goto out;
	}
	ret = ptrace_may_access(t, leader);
	if (ret)
		goto out;
	/* As /proc/PID/fd: the table of a thread that is leaving may be gone already. */
	fdt = task_get_fdt(leader);
	if (fdt) {
		f = fdtable_lookup(fdt, targetfd);
		fdtable_put(fdt);
	}
	ret = -EBADF;
	if (!f)
		goto out;
	ret = fdtable_install(t->fdt, f, 0, true, task_nofile_limit(t));
	file_put(f);
out:
	if (leader)
		task_put(leader);
	tg_put(tg);
	return ret;
}

/* pidfd_open(2) */
long sys_pidfd_open(struct task *t, const struct syscall_args *args)
{
	int32_t pid = (int32_t)args->a[0];
	unsigned int flags = (unsigned int)args->a[1];
	struct thread_group *tg = NULL;
	struct task *o;
	long ret;

	if (flags & ~(unsigned int)(O_NONBLOCK | PIDFD_THREAD_FLAG))
		return -EINVAL;
	if (pid <= 0)
		return -EINVAL;
	pthread_mutex_lock(&t->k->tree_lock);
	o = pid_ns_lookup(t->k, t->tg->pidns, pid);
	if (!o || o->tg->reaped) {
		ret = -ESRCH;
	} else if (!(flags & PIDFD_THREAD_FLAG) && pid_ns_tg_nr(o->tg, t->tg->pidns) != pid) {
		ret = -ENOENT; /* not a process: Linux 6.9+ */
	} else {
		tg = o->tg;
		tg_get(tg);
		ret = 0;
	}
	pthread_mutex_unlock(&t->k->tree_lock);
	if (ret < 0)
		return ret;
	ret = pidfd_create_fd(t, tg, (int)(flags & O_NONBLOCK));
	tg_put(tg);
	return ret;
}

static bool valid_signal(uint64_t sig)
{
	return sig <= LINUX_NSIG;
}

/* prctl(2): the options the issue lists; others give EINVAL. */
long sys_prctl(struct task *t, const struct syscall_args *args)
{
	int option = (int)args->a[0];
	uint64_t a2 = args->a[1];
	char name[16];
	int v;

	switch (option) {
	case PR_SET_NAME:
		/* Up to 15 bytes, stopping at a NUL: a short name next to a hole is fine. */
		memset(name, 0, sizeof(name));
		for (size_t i = 0; i < sizeof(name) - 1; i++) {
			if (mm_copy_in(t->mm, &name[i], a2 + i, 1) != 1)
				return -EFAULT;
			if (!name[i])
				break;
		}
		memcpy(t->comm, name, sizeof(name));
		return 0;
	case PR_GET_NAME:
		memcpy(name, t->comm, sizeof(name));
		name[sizeof(name) - 1] = 0;
		return mm_copy_out(t->mm, a2, name, sizeof(name)) == sizeof(name) ? 0 : -EFAULT;
	case PR_SET_PDEATHSIG:
		if (!valid_signal(a2))
			return -EINVAL;
		t->pdeath_signal = (int)a2;
		return 0;
	case PR_GET_PDEATHSIG:
		v = t->pdeath_signal;
		return mm_copy_out(t->mm, a2, &v, sizeof(v)) == sizeof(v) ? 0 : -EFAULT;
	case PR_SET_NO_NEW_PRIVS:
		if (a2 != 1 || args->a[2] || args->a[3] || args->a[4])
			return -EINVAL;
		t->no_new_privs = true;
		return 0;
	case PR_GET_NO_NEW_PRIVS:
		if (a2 || args->a[2] || args->a[3] || args->a[4])
			return -EINVAL;
		return t->no_new_privs;
	case PR_GET_DUMPABLE:
		return t->tg->dumpable;
	case PR_SET_DUMPABLE:
		if (a2 != 0 && a2 != 1)
			return -EINVAL;
		t->tg->dumpable = a2 == 1;
		return 0;
	case PR_SET_CHILD_SUBREAPER:
		pthread_mutex_lock(&t->k->tree_lock);
		t->tg->subreaper = a2 != 0;
		pthread_mutex_unlock(&t->k->tree_lock);
		return 0;
	case PR_GET_CHILD_SUBREAPER:
		v = t->tg->subreaper;
		return mm_copy_out(t->mm, a2, &v, sizeof(v)) == sizeof(v) ? 0 : -EFAULT;
	case PR_SET_KEEPCAPS:
		if (a2 > 1)
			return -EINVAL;
		t->cred.keep_caps = a2 == 1;
		return 0;
	case PR_GET_KEEPCAPS:
		return t->cred.keep_caps;
	case PR_CAPBSET_READ:
		if (a2 > CAP_LAST_CAP)
			return -EINVAL;
		return !!(t->cred.cap_bounding & (1ULL << a2));
	default:
		/* PR_CAP_AMBIENT, PR_CAPBSET_DROP, PR_[GS]ET_SECUREBITS; -EINVAL for the rest. */
		return cred_prctl(t, option, a2, args->a[2], args->a[3], args->a[4]);
	}
}

/*
 * unshare(2): CLONE_FILES and CLONE_FS give the caller tables of its own; CLONE_SYSVSEM changes
 * nothing (SEM_UNDO lists are per process already); CLONE_THREAD, CLONE_SIGHAND and CLONE_VM
 * are accepted for a single-threaded process, as Linux. CLONE_NEWNS gives a mount namespace of
 * the sentry's (CAP_SYS_ADMIN in the caller's user namespace, which owns it), CLONE_NEWUTS,
 * CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWUSER, CLONE_NEWPID (the caller's pid_for_children) and
 * CLONE_NEWCGROUP nsproxy.c's; time namespaces are refused with EPERM.
 */
long sys_unshare(struct task *t, const struct syscall_args *args)
{
	uint64_t flags = args->a[0];
	const uint64_t ns = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
			    CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP |
			    0x80 /* CLONE_NEWTIME */;
	const uint64_t known = ns | CLONE_FILES | CLONE_FS | CLONE_SYSVSEM | CLONE_THREAD |
			       CLONE_SIGHAND | CLONE_VM;
	int nthreads, err;

	if (flags & ~known)
		return -EINVAL;
	/* As Linux: a new user namespace needs its own fs context and a single thread. */
	if (flags & CLONE_NEWUSER)
		flags |= CLONE_THREAD | CLONE_FS;
	pthread_mutex_lock(&t->tg->lock);
	nthreads = t->tg->nr_threads;
	pthread_mutex_unlock(&t->tg->lock);
	if ((flags & (CLONE_THREAD | CLONE_SIGHAND | CLONE_VM)) && nthreads > 1)
		return -EINVAL;
	/*
	 * UTS, IPC, network, user, pid and cgroup namespaces are nsproxy.c's, mount namespaces the VFS's
	 * (sentry/vfs/mount_user.c); time namespaces are not made yet.
	 */
	if (flags & ns & ~((uint64_t)NSPROXY_CLONE_FLAGS | CLONE_NEWNS))
		return -EPERM;
	if (flags & CLONE_NEWNS) {
		/*
		 * CAP_SYS_ADMIN in the caller's user namespace, or in the one this call makes
		 * (which the caller owns with every capability); implies CLONE_FS. Checked
		 * before anything is unshared.
		 */
		if (!(flags & CLONE_NEWUSER) &&
		    !task_ns_capable(t, task_nsproxy(t)->user, CAP_SYS_ADMIN))
			return -EPERM;
		flags |= CLONE_FS;
	}
	err = nsproxy_unshare(t, flags);
	if (err < 0)
		return err;
	if (flags & CLONE_FS) {
		struct fs_context *fs = fs_context_copy(t->fs);

		if (!fs)
			return -ENOMEM;
		fs_context_put(task_set_fs(t, fs));
	}
	if (flags & CLONE_NEWNS) {
		err = vfs_mnt_ns_unshare(t->fs, task_nsproxy(t)->user);
		if (err < 0)
			return err;
	}
	if (flags & CLONE_FILES) {
		struct fdtable *fdt = fdtable_dup(t->fdt);

		if (!fdt)
			return -ENOMEM;
		fdtable_put(task_set_fdt(t, fdt));
	}
	return 0;
}

/*
 * setns(2) on an opened /proc/PID/ns/{uts,ipc,net,user,pid} or a pidfd (nstype: the CLONE_NEW*
 * set to take), with Linux's permission rules (nsproxy_setns; CLONE_NEWPID sets
 * pid_for_children). Other namespace types: EINVAL for now.
 */
long sys_setns(struct task *t, const struct syscall_args *args)
{
	const uint64_t all = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
			     CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP |
			     0x80 /* CLONE_NEWTIME */;
	int fd = (int)args->a[0], nstype = (int)args->a[1], type;
	struct task *from = NULL;
	struct thread_group *tg;
	struct nsproxy *ns;
	struct file *f;
	long ret;

	f = fdtable_lookup(t->fdt, fd);
	if (!f)
		return -EBADF;
	type = proc_ns_file_get(f, &ns);
	if (type == CLONE_NEWNS) {
		/* Mount namespaces live in fs contexts: the one the process is in now. */
		from = proc_ns_file_task(f);
		nsproxy_put(ns);
		file_put(f);
		if (nstype && nstype != type)
			ret = -EINVAL;
		else
			ret = from ? vfs_mnt_ns_enter(t, from) : -ESRCH;
		task_put(from);
		return ret;
	}
	file_put(f);
	if (type > 0) {
		if (nstype && nstype != type)
			ret = -EINVAL;
		else
			ret = nsproxy_setns(t, ns, (uint64_t)type);
		nsproxy_put(ns);
		return ret;
	}
	tg = pidfd_get_tg(t, fd);
	if (IS_ERR(tg))
		return -EINVAL;
	if (!nstype || ((uint64_t)nstype & ~all)) {
		tg_put(tg);
		return -EINVAL;
	}
	pthread_mutex_lock(&tg->lock);
	if (tg->leader && tg->state == TG_RUNNING) {
		/* A pidfd's pid namespace is the process's own (Linux's nsset from a task). */
		ns = task_get_nsproxy_active(tg->leader);
		ret = ns ? 0 : -ENOMEM;
		from = tg->leader;
		task_get(from);
	} else {
		ret = -ESRCH;
	}
	pthread_mutex_unlock(&tg->lock);
	tg_put(tg);
	if (ret < 0)
		return ret;
	/* The others first (a user namespace gives the capabilities), then the mounts. */
	if (nstype & ~CLONE_NEWNS)
		ret = nsproxy_setns(t, ns, (uint64_t)nstype & ~(uint64_t)CLONE_NEWNS);
	if (ret == 0 && (nstype & CLONE_NEWNS))
		ret = vfs_mnt_ns_enter(t, from);
	nsproxy_put(ns);
	task_put(from);
	return ret;
}
