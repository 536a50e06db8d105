/* SPDX-License-Identifier: Apache-2.0 */
/* System calls about the calling task itself: TLS, tids, robust lists, rseq, exit. */
#include <asm/prctl.h>
#include <signal.h>

#include "include/abi/linux/errno.h"
#include "sentry/kernel/rseq.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/pidns.h"
#include "sentry/kernel/ptrace.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/platform/platform.h"
#include "syscalls/handlers.h"

/* Linux's TASK_SIZE_MAX: user addresses end a page below 2^47 (4-level paging). */
#define USER_ADDR_LIMIT TASK_SIZE_MAX

/* arch_prctl(2): FS/GS base; ARCH_SET_CPUID gives -ENODEV (no CPUID faulting); CET, AMX: -EINVAL. */
long sys_arch_prctl(struct task *t, const struct syscall_args *args)
{
	int code = (int)args->a[0];
	uint64_t addr = args->a[1];
	uint64_t v;

	switch (code) {
	case ARCH_SET_FS:
		if (addr >= USER_ADDR_LIMIT)
			return -EPERM;
		t->regs.fs_base = addr;
		return 0;
	case ARCH_SET_GS:
		if (addr >= USER_ADDR_LIMIT)
			return -EPERM;
		t->regs.gs_base = addr;
		return 0;
	case ARCH_GET_FS:
		v = t->regs.fs_base;
		return mm_copy_out(t->mm, addr, &v, sizeof(v)) == sizeof(v) ? 0 : -EFAULT;
	case ARCH_GET_GS:
		v = t->regs.gs_base;
		return mm_copy_out(t->mm, addr, &v, sizeof(v)) == sizeof(v) ? 0 : -EFAULT;
	case ARCH_GET_CPUID:
		return 1; /* CPUID does not fault */
	case ARCH_SET_CPUID:
		return -ENODEV; /* as Linux on a CPU without CPUID faulting */
	default:
		return -EINVAL;
	}
}

/* set_tid_address(2) */
long sys_set_tid_address(struct task *t, const struct syscall_args *args)
{
	t->clear_child_tid = args->a[0];
	return task_own_tid(t); /* in its own pid namespace: glibc keeps it as the thread's tid */
}

/* set_robust_list(2): recorded; walked at thread exit (futex_exit_cleanup). */
long sys_set_robust_list(struct task *t, const struct syscall_args *args)
{
	/* sizeof(struct robust_list_head) on x86-64 */
	if (args->a[1] != 24)
		return -EINVAL;
	t->robust_list = args->a[0];
	t->robust_len = args->a[1];
	return 0;
}

/* get_robust_list(2): any task by tid, with ptrace access (PTRACE_MODE_READ) to it. */
long sys_get_robust_list(struct task *t, const struct syscall_args *args)
{
	int32_t pid = (int32_t)args->a[0];
	uint64_t head, len;

	if (pid == 0 || pid == t->tid) {
		head = t->robust_list;
		len = t->robust_len;
	} else {
		struct task *target;
		int err;

		pthread_mutex_lock(&t->k->tree_lock);
		target = pid > 0 ? pid_ns_lookup(t->k, t->tg->pidns, pid) : NULL;
		if (target)
			task_get(target);
		pthread_mutex_unlock(&t->k->tree_lock);
		if (!target)
			return -ESRCH;
		err = ptrace_may_access(t, target);
		/* Written by the target's own thread: a racy read gives one value or the other. */
		head = __atomic_load_n(&target->robust_list, __ATOMIC_RELAXED);
		len = __atomic_load_n(&target->robust_len, __ATOMIC_RELAXED);
		task_put(target);
		if (err)
			return err;
	}
	if (mm_copy_out(t->mm, args->a[1], &head, sizeof(head)) != sizeof(head))
		return -EFAULT;
	if (mm_copy_out(t->mm, args->a[2], &len, sizeof(len)) != sizeof(len))
		return -EFAULT;
	return 0;
}

/*
 * rseq(2): cpu_id is getcpu(2)'s number; critical sections are aborted at every return from the
 * sentry, not at host preemption of the stub (which the sentry does not see).
 */
long sys_rseq(struct task *t, const struct syscall_args *args)
{
	return rseq_syscall(t, args->a[0], (uint32_t)args->a[1], (int)args->a[2],
			    (uint32_t)args->a[3]);
}

/* exit(2): ends the calling thread; the last one out ends the process with its leader's code. */
long sys_exit(struct task *t, const struct syscall_args *args)
{
	t->exit_code = ((int)args->a[0] & 0xff) << 8;
	__atomic_store_n(&t->exiting, true, __ATOMIC_RELEASE);
	return 0;
}

/* exit_group(2) */
long sys_exit_group(struct task *t, const struct syscall_args *args)
{
	task_exit_group(t, ((int)args->a[0] & 0xff) << 8);
	return 0;
}

/*
 * reboot(2), as Linux's reboot_pid_ns in a child pid namespace (the sandbox is a container's, so
 * even its initial namespace is one): CAP_SYS_BOOT in the namespace's owner (EPERM), the magic
 * numbers (EINVAL), then a restart, halt or power-off kills the namespace's pid 1 and ends the
 * caller's thread; pid 1 is then reported killed by SIGHUP (restart) or SIGINT (the others).
 * Other commands, Ctrl-Alt-Del's included: EINVAL.
 */
long sys_reboot(struct task *t, const struct syscall_args *args)
{
	uint32_t magic1 = (uint32_t)args->a[0], magic2 = (uint32_t)args->a[1];
	uint32_t cmd = (uint32_t)args->a[2];
	struct pid_ns *ns = task_active_pid_ns(t);
	struct kernel *k = t->k;
	struct thread_group *init;
	int sig;

	if (!task_ns_capable(t, ns->owner, 22 /* CAP_SYS_BOOT */))
		return -EPERM;
	if (magic1 != 0xfee1dead || (magic2 != 672274793 && magic2 != 85072278 &&
				     magic2 != 369367448 && magic2 != 537993216))
		return -EINVAL;
	switch (cmd) {
	case 0x01234567: /* LINUX_REBOOT_CMD_RESTART */
	case 0xa1b2c3d4: /* LINUX_REBOOT_CMD_RESTART2 */
		sig = SIGHUP;
		break;
	case 0x4321fedc: /* LINUX_REBOOT_CMD_POWER_OFF */
	case 0xcdef0123: /* LINUX_REBOOT_CMD_HALT */
		sig = SIGINT;
		break;
	default:
		return -EINVAL;
	}
	pthread_mutex_lock(&k->tree_lock);
	init = ns->level == 0 ? (k->init ? k->init->tg : NULL) : ns->reaper;
	if (init) {
		tg_get(init);
		ns->reboot = sig;
	}
	pthread_mutex_unlock(&k->tree_lock);
	if (init) {
		signal_send_tg(init, SIGKILL, NULL);
		tg_put(init);
	}
	/* Linux's do_exit(0): this thread ends (pid 1's whole process, by the SIGKILL). */
	t->exit_code = 0;
	__atomic_store_n(&t->exiting, true, __ATOMIC_RELEASE);
	return 0;
}

/* getpid(2): the pid in the caller's pid namespace. */
long sys_getpid(struct task *t, const struct syscall_args *args)
{
	return t->tg->pidns ? task_vpid(t, t->tg) : task_pid(t);
}

/* gettid(2) */
long sys_gettid(struct task *t, const struct syscall_args *args)
{
	return t->tg->pidns ? task_vtid(t, t) : t->tid;
}
