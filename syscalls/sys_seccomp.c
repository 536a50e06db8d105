/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seccomp(2) and prctl's PR_SET_SECCOMP/PR_GET_SECCOMP: guest programs installing their own
 * filters, run by the sentry's interpreter (sentry/kernel/seccomp.c) before each call.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <sys/prctl.h>

#include "common/cleanup.h"
#include "sentry/kernel/seccomp.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "syscalls/handlers.h"

/* struct sock_fprog as an x86-64 guest lays it out. */
struct guest_fprog {
	uint16_t len;
	uint16_t pad[3];
	uint64_t filter;
};

/* Copies the guest's sock_fprog at addr and its program in, then installs it. */
static long set_mode_filter(struct task *t, unsigned int flags, uint64_t addr)
{
	_cleanup_free_ struct sock_filter *prog = NULL;
	struct guest_fprog fp;
	size_t bytes;

	if (mm_copy_in(t->mm, &fp, addr, sizeof(fp)) != (ssize_t)sizeof(fp))
		return -EFAULT;
	if (fp.len == 0 || fp.len > SECCOMP_MAX_INSNS)
		return -EINVAL;
	bytes = (size_t)fp.len * sizeof(struct sock_filter);
	prog = malloc(bytes);
	if (!prog)
		return -ENOMEM;
	if (mm_copy_in(t->mm, prog, fp.filter, bytes) != (ssize_t)bytes)
		return -EFAULT;
	return seccomp_set_filter(t, flags, prog, fp.len);
}

/* The actions SECCOMP_GET_ACTION_AVAIL reports. */
static bool action_available(uint32_t action)
{
	switch (action) {
	case SECCOMP_RET_KILL_PROCESS:
	case SECCOMP_RET_KILL_THREAD:
	case SECCOMP_RET_TRAP:
	case SECCOMP_RET_ERRNO:
	case SECCOMP_RET_TRACE:
	case SECCOMP_RET_LOG:
	case SECCOMP_RET_ALLOW:
		return true;
	default:
		/* SECCOMP_RET_USER_NOTIF included: no listener can be made here. */
		return false;
	}
}

/* seccomp(2): no user notification (NEW_LISTENER gives EINVAL, GET_NOTIF_SIZES EOPNOTSUPP). */
long sys_seccomp(struct task *t, const struct syscall_args *args)
{
	unsigned int op = (unsigned int)args->a[0];
	unsigned int flags = (unsigned int)args->a[1];
	uint64_t uargs = args->a[2];
	uint32_t action;

	switch (op) {
	case SECCOMP_SET_MODE_STRICT:
		if (flags || uargs)
			return -EINVAL;
		return seccomp_set_strict(t);
	case SECCOMP_SET_MODE_FILTER:
		return set_mode_filter(t, flags, uargs);
	case SECCOMP_GET_ACTION_AVAIL:
		if (flags)
			return -EINVAL;
		if (mm_copy_in(t->mm, &action, uargs, sizeof(action)) != sizeof(action))
			return -EFAULT;
		return action_available(action) ? 0 : -EOPNOTSUPP;
	case SECCOMP_GET_NOTIF_SIZES:
		return -EOPNOTSUPP;
	default:
		return -EINVAL;
	}
}

/* prctl(2): PR_GET_SECCOMP and PR_SET_SECCOMP here, every other option in sys_prctl. */
long sys_prctl_seccomp(struct task *t, const struct syscall_args *args)
{
	switch ((int)args->a[0]) {
	case PR_GET_SECCOMP:
		return __atomic_load_n(&t->seccomp_mode, __ATOMIC_ACQUIRE);
	case PR_SET_SECCOMP:
		if (args->a[1] == SECCOMP_MODE_STRICT)
			return seccomp_set_strict(t);
		if (args->a[1] == SECCOMP_MODE_FILTER)
			return set_mode_filter(t, 0, args->a[2]);
		return -EINVAL;
	default:
		return sys_prctl(t, args);
	}
}
