/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Credentials: the id calls and capget/capset; the set* rules are in sentry/kernel/cred.c.
 * Values come from the calling task's struct cred (sentry/kernel/task.h); the host's
 * credentials are never consulted. The credentials hold the sandbox's ids: the calls show and
 * take them as the caller's user namespace maps them (nsproxy.h; unmapped: 65534 shown, EINVAL
 * taken).
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "sentry/kernel/cred.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/nsproxy.h"
#include "sentry/kernel/pidns.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "syscalls/handlers.h"

/* Copies len bytes out to guest memory; anything short of all of it is -EFAULT. */
static int copy_out_all(struct task *t, uint64_t addr, const void *src, size_t len)
{
	ssize_t n = mm_copy_out(t->mm, addr, src, len);

	return n == (ssize_t)len ? 0 : -EFAULT;
}

/* Copies len bytes in from guest memory; anything short of all of it is -EFAULT. */
static int copy_in_all(struct task *t, void *dst, uint64_t addr, size_t len)
{
	ssize_t n = mm_copy_in(t->mm, dst, addr, len);

	return n == (ssize_t)len ? 0 : -EFAULT;
}

/* getuid(2) */
long sys_getuid(struct task *t, const struct syscall_args *args)
{
	return task_uid_to(t, t->cred.uid);
}

/* geteuid(2) */
long sys_geteuid(struct task *t, const struct syscall_args *args)
{
	return task_uid_to(t, t->cred.euid);
}

/* getgid(2) */
long sys_getgid(struct task *t, const struct syscall_args *args)
{
	return task_gid_to(t, t->cred.gid);
}

/* getegid(2) */
long sys_getegid(struct task *t, const struct syscall_args *args)
{
	return task_gid_to(t, t->cred.egid);
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
		uint32_t g[32];

		for (int i = 0; i < n; i++)
			g[i] = task_gid_to(t, t->cred.groups[i]);
		err = copy_out_all(t, list, g, (size_t)n * sizeof(g[0]));
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
	return put_res_ids(t, args, task_uid_to(t, t->cred.uid), task_uid_to(t, t->cred.euid),
			   task_uid_to(t, t->cred.suid));
}

/* getresgid(2) */
long sys_getresgid(struct task *t, const struct syscall_args *args)
{
	return put_res_ids(t, args, task_gid_to(t, t->cred.gid), task_gid_to(t, t->cred.egid),
			   task_gid_to(t, t->cred.sgid));
}

/*
 * The first n set*id arguments as sandbox ids in out: -1 stays -1 (no change); an id the
 * caller's user namespace does not map is -EINVAL, as Linux's make_kuid gives an invalid id.
 */
static int in_ids(struct task *t, bool gid, const struct syscall_args *args, int n, uint32_t *out)
{
	task_cred_sync_root(t);
	for (int i = 0; i < n; i++) {
		out[i] = (uint32_t)args->a[i];
		if (out[i] == (uint32_t)-1 || !task_user_ns(t))
			continue;
		if (!(gid ? task_gid_from(t, out[i], &out[i]) : task_uid_from(t, out[i], &out[i])))
			return -EINVAL;
	}
	return 0;
}

/* setuid(2) */
long sys_setuid(struct task *t, const struct syscall_args *args)
{
	uint32_t id[3];

	if (in_ids(t, false, args, 1, id) < 0)
		return -EINVAL;
	return cred_setuid(t, id[0]);
}

/* setgid(2) */
long sys_setgid(struct task *t, const struct syscall_args *args)
{
	uint32_t id[3];

	if (in_ids(t, true, args, 1, id) < 0)
		return -EINVAL;
	return cred_setgid(t, id[0]);
}

/* setreuid(2) */
long sys_setreuid(struct task *t, const struct syscall_args *args)
{
	uint32_t id[3];

	if (in_ids(t, false, args, 2, id) < 0)
		return -EINVAL;
	return cred_setreuid(t, id[0], id[1]);
}

/* setregid(2) */
long sys_setregid(struct task *t, const struct syscall_args *args)
{
	uint32_t id[3];

	if (in_ids(t, true, args, 2, id) < 0)
		return -EINVAL;
	return cred_setregid(t, id[0], id[1]);
}

/* setresuid(2) */
long sys_setresuid(struct task *t, const struct syscall_args *args)
{
	uint32_t id[3];

	if (in_ids(t, false, args, 3, id) < 0)
		return -EINVAL;
	return cred_setresuid(t, id[0], id[1], id[2]);
}

/* setresgid(2) */
long sys_setresgid(struct task *t, const struct syscall_args *args)
{
	uint32_t id[3];

	if (in_ids(t, true, args, 3, id) < 0)
		return -EINVAL;
	return cred_setresgid(t, id[0], id[1], id[2]);
}

/* setfsuid(2) */
long sys_setfsuid(struct task *t, const struct syscall_args *args)
{
	uint32_t id[1];

	if (in_ids(t, false, args, 1, id) < 0)
		return task_uid_to(t, t->cred.fsuid);
	return task_uid_to(t, cred_setfsuid(t, id[0]));
}

/* setfsgid(2) */
long sys_setfsgid(struct task *t, const struct syscall_args *args)
{
	uint32_t id[1];

	if (in_ids(t, true, args, 1, id) < 0)
		return task_gid_to(t, t->cred.fsgid);
	return task_gid_to(t, cred_setfsgid(t, id[0]));
}

/*
 * Linux's may_setgroups: CAP_SETGID in the caller's user namespace, which (unless it is the
 * sandbox's) has its gid_map written and setgroups not "deny".
 */
static bool may_setgroups(struct task *t)
{
	struct user_ns *u = task_user_ns(t);
	bool ok;

	if (!u || !u->level)
		return cred_capable(&t->cred, CAP_SETGID);
	if (!cred_own_capable(&t->cred, CAP_SETGID))
		return false;
	pthread_mutex_lock(&u->lock);
	ok = u->gid_map_set && !u->setgroups_deny;
	pthread_mutex_unlock(&u->lock);
	return ok;
}

static int cmp_gid(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* setgroups(2): at most 32 groups are kept (more: EINVAL, where Linux allows 65536). */
long sys_setgroups(struct task *t, const struct syscall_args *args)
{
	int size = (int)args->a[0];
	uint32_t groups[32];
	int err;

	if (size < 0 || size > 65536)
		return -EINVAL;
	if (!may_setgroups(t))
		return -EPERM;
	if (size > (int)(sizeof(groups) / sizeof(groups[0])))
		return -EINVAL;
	if (size > 0) {
		err = copy_in_all(t, groups, args->a[1], (size_t)size * sizeof(groups[0]));
		if (err)
			return err;
	}
	/* Every group must be an id of the guest's user namespace (Linux's EINVAL), and of the
	 * caller's: taken as the sandbox's. */
	for (int i = 0; i < size; i++)
		if (!task_gid_from(t, groups[i], &groups[i]) || !cred_id_valid(t, true, groups[i]))
			return -EINVAL;
	/* Linux keeps the list sorted (groups_sort), and getgroups shows it so. */
	qsort(groups, (size_t)size, sizeof(groups[0]), cmp_gid);
	memcpy(t->cred.groups, groups, (size_t)size * sizeof(groups[0]));
	t->cred.ngroups = size;
	return 0;
}

/* The capget/capset header and data (linux/capability.h). */
struct cap_header {
	uint32_t version;
	int32_t pid;
};

struct cap_data {
	uint32_t effective, permitted, inheritable;
};

#define CAP_VALID_MASK ((1ULL << (CAP_LAST_CAP + 1)) - 1)

/*
 * Checks the header's version: returns the number of data structs (1 for version 1, 2 for 2
 * and 3), or writes version 3 back and returns -EINVAL, as Linux's cap_validate_magic.
 */
static int cap_validate(struct task *t, uint64_t hdrp, struct cap_header *h)
{
	uint32_t v3 = _LINUX_CAPABILITY_VERSION_3;

	if (copy_in_all(t, h, hdrp, sizeof(*h)))
		return -EFAULT;
	switch (h->version) {
	case _LINUX_CAPABILITY_VERSION_1:
		return 1;
	case _LINUX_CAPABILITY_VERSION_2:
	case _LINUX_CAPABILITY_VERSION_3:
		return 2;
	default:
		if (copy_out_all(t, hdrp, &v3, sizeof(v3)))
			return -EFAULT;
		return -EINVAL;
	}
}

/* capget(2) */
long sys_capget(struct task *t, const struct syscall_args *args)
{
	struct cap_header h;
	struct cap_data d[2];
	struct cred c;
	int n;

	n = cap_validate(t, args->a[0], &h);
	if (!args->a[1])
		return n == -EINVAL || n > 0 ? 0 : n;
	if (n < 0)
		return n;
	if (h.pid < 0)
		return -EINVAL;
	if (h.pid && h.pid != t->tid) {
		struct task *o = task_find_vtask(t, h.pid);

		if (!o)
			return -ESRCH;
		c = o->cred;
		task_put(o);
	} else {
		c = t->cred;
	}
	for (int i = 0; i < 2; i++) {
		d[i].effective = (uint32_t)(c.cap_effective >> (32 * i));
		d[i].permitted = (uint32_t)(c.cap_permitted >> (32 * i));
		d[i].inheritable = (uint32_t)(c.cap_inheritable >> (32 * i));
	}
	return copy_out_all(t, args->a[1], d, (size_t)n * sizeof(d[0]));
}

/* capset(2): the calling thread only, with Linux's subset rules. */
long sys_capset(struct task *t, const struct syscall_args *args)
{
	struct cap_header h;
	struct cap_data d[2] = { { 0 } };
	struct cred *c = &t->cred;
	uint64_t eff, perm, inh;
	int n;

	n = cap_validate(t, args->a[0], &h);
	if (n < 0)
		return n;
	if (h.pid != 0 && h.pid != t->tid)
		return -EPERM;
	if (copy_in_all(t, d, args->a[1], (size_t)n * sizeof(d[0])))
		return -EFAULT;
	eff = ((uint64_t)d[1].effective << 32 | d[0].effective) & CAP_VALID_MASK;
	perm = ((uint64_t)d[1].permitted << 32 | d[0].permitted) & CAP_VALID_MASK;
	inh = ((uint64_t)d[1].inheritable << 32 | d[0].inheritable) & CAP_VALID_MASK;
	/* New inheritable bits come from the permitted set unless the caller has CAP_SETPCAP,
	 * and never from outside the bounding set. */
	if (!cred_own_capable(c, CAP_SETPCAP) && (inh & ~(c->cap_inheritable | c->cap_permitted)))
		return -EPERM;
	if (inh & ~(c->cap_inheritable | c->cap_bounding))
		return -EPERM;
	if (perm & ~c->cap_permitted)
		return -EPERM;
	if (eff & ~perm)
		return -EPERM;
	c->cap_effective = eff;
	c->cap_permitted = perm;
	c->cap_inheritable = inh;
	c->cap_ambient &= perm & inh;
	return 0;
}
