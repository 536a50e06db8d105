/* SPDX-License-Identifier: Apache-2.0 */
/* eventfd(2), eventfd2(2). */
#include <fcntl.h>
#include <limits.h>
#include <sys/eventfd.h>
#include <sys/resource.h>

#include "include/abi/linux/errno.h"
#include "sentry/fs/anon/anon.h"
#include "sentry/kernel/task.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/handlers.h"

static long do_eventfd(struct task *t, uint32_t initval, int flags)
{
	struct file *f;
	int fd;

	if (flags & ~(EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE))
		return -EINVAL;
	f = eventfd_create(initval, flags);
	if (!f)
		return -ENOMEM;
	fd = fdtable_install(t->fdt, f, 0, flags & EFD_CLOEXEC, task_nofile_limit(t));
	file_put(f);
	return fd;
}

/* eventfd(2) */
long sys_eventfd(struct task *t, const struct syscall_args *args)
{
	return do_eventfd(t, (uint32_t)args->a[0], 0);
}

/* eventfd2(2) */
long sys_eventfd2(struct task *t, const struct syscall_args *args)
{
	return do_eventfd(t, (uint32_t)args->a[0], (int)args->a[1]);
}
