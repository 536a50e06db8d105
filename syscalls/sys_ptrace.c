/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ptrace(2) of guest tasks by guest tasks (the sentry's own, sentry/kernel/ptrace.c) and
 * process_vm_readv/process_vm_writev(2).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/util.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/ptrace.h"
#include "sentry/kernel/pidns.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "syscalls/handlers.h"

#define VM_IOV_MAX 1024
#define VM_BOUNCE 65536

/* ptrace(2): no PTRACE_SYSEMU*, no hardware breakpoints (debug registers read as 0). */
long sys_ptrace(struct task *t, const struct syscall_args *args)
{
	return ptrace_request(t, (long)args->a[0], (int32_t)args->a[1], args->a[2], args->a[3]);
}

struct vm_iovec {
	uint64_t base;
	uint64_t len;
};

/* Copies in an iovec array of n entries; their total must fit a ssize_t. */
static long get_iovecs(struct task *t, uint64_t addr, uint64_t n, struct vm_iovec **out)
{
	struct vm_iovec *v;
	uint64_t total = 0;

	*out = NULL;
	if (n > VM_IOV_MAX)
		return -EINVAL;
	if (n == 0)
		return 0;
	v = calloc(n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (mm_copy_in(t->mm, v, addr, n * sizeof(*v)) != (ssize_t)(n * sizeof(*v))) {
		free(v);
		return -EFAULT;
	}
	for (uint64_t i = 0; i < n; i++) {
		if (v[i].len > INT64_MAX - total) {
			free(v);
			return -EINVAL;
		}
		total += v[i].len;
	}
	*out = v;
	return 0;
}

/*
 * The core of process_vm_readv/writev: walks both iovec arrays in step, through a bounce
 * buffer. Returns the bytes moved; a fault ends the transfer (-EFAULT if nothing moved).
 */
static long vm_rw(struct task *t, const struct syscall_args *args, bool write)
{
	struct vm_iovec *lv = NULL, *rv = NULL;
	uint64_t nl = args->a[2], nr = args->a[4];
	uint64_t li = 0, ri = 0, loff = 0, roff = 0;
	struct task *target;
	struct mm *rmm;
	uint8_t *buf;
	long ret, total = 0;

	if (args->a[5] != 0)
		return -EINVAL;
	ret = get_iovecs(t, args->a[1], nl, &lv);
	if (ret == 0)
		ret = get_iovecs(t, args->a[3], nr, &rv);
	if (ret < 0)
		goto out_free;
	target = task_find_vtask(t, (int32_t)args->a[0]);
	if (!target) {
		ret = -ESRCH;
		goto out_free;
	}
	ret = ptrace_may_access(t, target);
	rmm = task_get_mm(target);
	task_put(target);
	if (ret < 0 || !rmm) {
		if (rmm)
			mm_put(rmm);
		ret = ret < 0 ? ret : -ESRCH;
		goto out_free;
	}
	buf = malloc(VM_BOUNCE);
	if (!buf) {
		mm_put(rmm);
		ret = -ENOMEM;
		goto out_free;
	}
	while (li < nl && ri < nr) {
		uint64_t n;
		ssize_t got;

		if (loff == lv[li].len) {
			li++;
			loff = 0;
			continue;
		}
		if (roff == rv[ri].len) {
			ri++;
			roff = 0;
			continue;
		}
		n = MIN(MIN(lv[li].len - loff, rv[ri].len - roff), (uint64_t)VM_BOUNCE);
		if (write) {
			got = mm_copy_in(t->mm, buf, lv[li].base + loff, n);
			if (got != (ssize_t)n) {
				ret = -EFAULT;
				break;
			}
			got = mm_copy_out(rmm, rv[ri].base + roff, buf, n);
		} else {
			got = mm_copy_in(rmm, buf, rv[ri].base + roff, n);
			if (got > 0 &&
			    mm_copy_out(t->mm, lv[li].base + loff, buf, (size_t)got) != got) {
				ret = -EFAULT;
				break;
			}
		}
		if (got <= 0) {
			ret = -EFAULT;
			break;
		}
		total += got;
		loff += (uint64_t)got;
		roff += (uint64_t)got;
		if ((uint64_t)got < n) {
			/* A partial remote transfer ends the call. */
			break;
		}
	}
	free(buf);
	mm_put(rmm);
	if (total > 0)
		ret = total;
	else if (ret != -EFAULT)
		ret = 0;
out_free:
	free(lv);
	free(rv);
	return ret;
}

/* process_vm_readv(2): permission as PTRACE_MODE_ATTACH_REALCREDS. */
long sys_process_vm_readv(struct task *t, const struct syscall_args *args)
{
	return vm_rw(t, args, false);
}

/* process_vm_writev(2): the remote pages must be writable (no FOLL_FORCE, as Linux). */
long sys_process_vm_writev(struct task *t, const struct syscall_args *args)
{
	return vm_rw(t, args, true);
}
