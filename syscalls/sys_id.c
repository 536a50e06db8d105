/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Credentials: the get* half of the id calls. Values come from the calling task's struct cred
 * (sentry/kernel/task.h); the host's credentials are never consulted.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/types.h>

#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "syscalls/handlers.h"

/* Copies len bytes out to guest memory; anything short of all of it is -EFAULT. */
static int copy_out_all(struct task *t, uint64_t addr, const void *src, size_t len)
{
	ssize_t n = mm_copy_out(t->mm, addr, src, len);

	return n == (ssize_t)len ? 0 : -EFAULT;
}

/* getuid(2) */
long sys_getuid(struct task *t, const struct syscall_args *args)
{
	return t->cred.uid;
}

/* geteuid(2) */
long sys_geteuid(struct task *t, const struct syscall_args *args)
{
	return t->cred.euid;
}

/* getgid(2) */
long sys_getgid(struct task *t, const struct syscall_args *args)
{
	return t->cred.gid;
}

/* getegid(2) */
long sys_getegid(struct task *t, const struct syscall_args *args)
{
	return t->cred.egid;
}

/* getgroups(2) */
long sys_getgroups(struct task *t, const struct syscall_args *args)
{
	int size = (int)args->a[0]; /* the kernel takes an int: upper bits are ignored */
	uint64_t list = args->a[1];
	int n = t->cred.ngroups;
	int err;

	if (size < 0)
		return -EINVAL;
	if (size == 0)
		return n;
	if (size < n)
		return -EINVAL;
	if (n > 0) {
		err = copy_out_all(t, list, t->cred.groups, (size_t)n * sizeof(t->cred.groups[0]));
		if (err)
			return err;
	}
	return n;
}

/* Stores the three ids one by one, stopping at the first fault as Linux's put_user chain does. */
static long put_res_ids(struct task *t, const struct syscall_args *args, uint32_t r, uint32_t e,
			uint32_t s)
{
	int err;

	err = copy_out_all(t, args->a[0], &r, sizeof(r));
	if (!err)
		err = copy_out_all(t, args->a[1], &e, sizeof(e));
	if (!err)
		err = copy_out_all(t, args->a[2], &s, sizeof(s));
	return err;
}

/* getresuid(2) */
long sys_getresuid(struct task *t, const struct syscall_args *args)
{
	return put_res_ids(t, args, t->cred.uid, t->cred.euid, t->cred.suid);
}

/* getresgid(2) */
long sys_getresgid(struct task *t, const struct syscall_args *args)
{
	return put_res_ids(t, args, t->cred.gid, t->cred.egid, t->cred.sgid);
}
