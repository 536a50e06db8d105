/* SPDX-License-Identifier: Apache-2.0 */
/* pipe(2), pipe2(2): see sentry/fs/pipe/pipe.h. */
#include <fcntl.h>
#include <limits.h>
#include <sys/resource.h>

#include "include/abi/linux/errno.h"
#include "sentry/fs/pipe/pipe.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/handlers.h"

static long do_pipe2(struct task *t, uint64_t addr, int flags)
{
	struct file *ends[2];
	int fds[2], limit = task_nofile_limit(t);
	bool cloexec = flags & O_CLOEXEC;
	long ret;

	if (flags & ~(O_CLOEXEC | O_NONBLOCK | O_DIRECT))
		return -EINVAL;
	ret = pipe_create(flags, t->cred.fsuid, t->cred.fsgid, ends);
	if (ret < 0)
		return ret;
	fds[0] = fdtable_install(t->fdt, ends[0], 0, cloexec, limit);
	if (fds[0] < 0) {
		ret = fds[0];
		goto out_put;
	}
	fds[1] = fdtable_install(t->fdt, ends[1], 0, cloexec, limit);
	if (fds[1] < 0) {
		ret = fds[1];
		fdtable_close(t->fdt, fds[0]);
		goto out_put;
	}
	if (mm_copy_out(t->mm, addr, fds, sizeof(fds)) != sizeof(fds)) {
		fdtable_close(t->fdt, fds[0]);
		fdtable_close(t->fdt, fds[1]);
		ret = -EFAULT;
		goto out_put;
	}
	ret = 0;
out_put:
	file_put(ends[0]);
	file_put(ends[1]);
	return ret;
}

/* pipe(2) */
long sys_pipe(struct task *t, const struct syscall_args *args)
{
	return do_pipe2(t, args->a[0], 0);
}

/* pipe2(2): O_NOTIFICATION_PIPE is not supported (EINVAL, as a kernel without watch_queue). */
long sys_pipe2(struct task *t, const struct syscall_args *args)
{
	return do_pipe2(t, args->a[0], (int)args->a[1]);
}
