/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Signal state: actions, the blocked mask and the alternate stack, recorded with Linux's
 * checks. Nothing is delivered yet (delivery comes with the processes issue), so setting
 * SIG_IGN discards no pending signal and unblocking runs no handler.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "syscalls/handlers.h"

#define LINUX_SIGKILL 9
#define LINUX_SIGSTOP 19
#define LINUX_SIGSET_SIZE 8
#define LINUX_SIGMASK(sig) (1ULL << ((sig)-1))
#define LINUX_UNBLOCKABLE (LINUX_SIGMASK(LINUX_SIGKILL) | LINUX_SIGMASK(LINUX_SIGSTOP))

#define LINUX_SIG_BLOCK 0
#define LINUX_SIG_UNBLOCK 1
#define LINUX_SIG_SETMASK 2

/* sa_flags bits user space may set and read back (kernel/signal.c UAPI_SA_FLAGS on x86-64). */
#define LINUX_SA_NOCLDSTOP 0x00000001ULL
#define LINUX_SA_NOCLDWAIT 0x00000002ULL
#define LINUX_SA_SIGINFO 0x00000004ULL
#define LINUX_SA_EXPOSE_TAGBITS 0x00000800ULL
#define LINUX_SA_RESTORER 0x04000000ULL
#define LINUX_SA_ONSTACK 0x08000000ULL
#define LINUX_SA_RESTART 0x10000000ULL
#define LINUX_SA_NODEFER 0x40000000ULL
#define LINUX_SA_RESETHAND 0x80000000ULL
#define LINUX_UAPI_SA_FLAGS                                                                   \
	(LINUX_SA_NOCLDSTOP | LINUX_SA_NOCLDWAIT | LINUX_SA_SIGINFO | LINUX_SA_ONSTACK |      \
	 LINUX_SA_RESTART | LINUX_SA_NODEFER | LINUX_SA_RESETHAND | LINUX_SA_EXPOSE_TAGBITS | \
	 LINUX_SA_RESTORER)

#define LINUX_SS_ONSTACK 1
#define LINUX_SS_DISABLE 2
#define LINUX_SS_AUTODISARM (1U << 31)
#define LINUX_SS_FLAG_BITS LINUX_SS_AUTODISARM
#define LINUX_MINSIGSTKSZ 2048

/* stack_t on x86-64 */
struct linux_stack {
	uint64_t ss_sp;
	int32_t ss_flags;
	int32_t __pad;
	uint64_t ss_size;
};
_Static_assert(sizeof(struct linux_stack) == 24, "x86-64 stack_t is 24 bytes");
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

/* rt_sigaction(2): the action is stored only; no handler runs yet. */
long sys_rt_sigaction(struct task *t, const struct syscall_args *args)
{
	int sig = (int)args->a[0];
	uint64_t act_addr = args->a[1], oact_addr = args->a[2];
	struct thread_group *tg = t->tg;
	struct linux_sigaction act, oact;
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
	}
	pthread_mutex_unlock(&tg->sighand->lock);

	if (oact_addr) {
		oact.flags &= LINUX_UAPI_SA_FLAGS;
		return copy_out_all(t, oact_addr, &oact, sizeof(oact));
	}
	return 0;
}

/*
 * rt_sigprocmask(2): as Linux, `how` is only checked when a new set is given. Unblocking
 * delivers nothing yet.
 */
long sys_rt_sigprocmask(struct task *t, const struct syscall_args *args)
{
	int how = (int)args->a[0];
	uint64_t set_addr = args->a[1], oset_addr = args->a[2];
	/* Only this task changes its mask; nothing reads it from another thread yet. */
	uint64_t old = t->sigmask, set;
	int err;

	if (args->a[3] != LINUX_SIGSET_SIZE)
		return -EINVAL;
	if (set_addr) {
		err = copy_in_all(t, &set, set_addr, sizeof(set));
		if (err)
			return err;
		set &= ~LINUX_UNBLOCKABLE;
		switch (how) {
		case LINUX_SIG_BLOCK:
			t->sigmask = old | set;
			break;
		case LINUX_SIG_UNBLOCK:
			t->sigmask = old & ~set;
			break;
		case LINUX_SIG_SETMASK:
			t->sigmask = set;
			break;
		default:
			return -EINVAL;
		}
	}
	if (oset_addr)
		return copy_out_all(t, oset_addr, &old, sizeof(old));
	return 0;
}

/* Linux's on_sig_stack(): is sp inside the task's alternate stack? */
static int on_sig_stack(const struct task *t, uint64_t sp)
{
	if ((uint32_t)t->altstack_flags & LINUX_SS_AUTODISARM)
		return 0;
	return sp > t->altstack_sp && sp - t->altstack_sp <= t->altstack_size;
}

/* Linux's sas_ss_flags(): the state of the alternate stack as seen from sp. */
static uint32_t sas_ss_flags(const struct task *t, uint64_t sp)
{
	if (!t->altstack_size)
		return LINUX_SS_DISABLE;
	return on_sig_stack(t, sp) ? LINUX_SS_ONSTACK : 0;
}

/*
 * sigaltstack(2): the stack is recorded (and `on stack` computed from the guest's rsp at the
 * call); nothing is delivered on it yet. The AMX-sized minimum of Linux is not enforced.
 */
long sys_sigaltstack(struct task *t, const struct syscall_args *args)
{
	uint64_t ss_addr = args->a[0], oss_addr = args->a[1];
	uint64_t sp = t->regs.rsp;
	struct linux_stack ss, oss;
	int err;

	if (ss_addr) {
		err = copy_in_all(t, &ss, ss_addr, sizeof(ss));
		if (err)
			return err;
	}

	memset(&oss, 0, sizeof(oss));
	oss.ss_sp = t->altstack_sp;
	oss.ss_size = t->altstack_size;
	oss.ss_flags =
		(int32_t)(sas_ss_flags(t, sp) | ((uint32_t)t->altstack_flags & LINUX_SS_FLAG_BITS));

	if (ss_addr) {
		uint32_t flags = (uint32_t)ss.ss_flags;
		uint32_t mode = flags & ~LINUX_SS_FLAG_BITS;

		if (on_sig_stack(t, sp))
			return -EPERM;
		if (mode != LINUX_SS_DISABLE && mode != LINUX_SS_ONSTACK && mode != 0)
			return -EINVAL;
		/* Linux returns early, without the size check, when nothing changes. */
		if (!(t->altstack_sp == ss.ss_sp && t->altstack_size == ss.ss_size &&
		      (uint32_t)t->altstack_flags == flags)) {
			if (mode == LINUX_SS_DISABLE) {
				ss.ss_size = 0;
				ss.ss_sp = 0;
			} else if (ss.ss_size < LINUX_MINSIGSTKSZ) {
				return -ENOMEM;
			}
			t->altstack_sp = ss.ss_sp;
			t->altstack_size = ss.ss_size;
			t->altstack_flags = (int)flags;
		}
	}

	if (oss_addr)
		return copy_out_all(t, oss_addr, &oss, sizeof(oss));
	return 0;
}
