/* SPDX-License-Identifier: Apache-2.0 */
/* signalfd(2), signalfd4(2) over sentry/fs/anon/signalfd.c. */
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <sys/resource.h>

#include "include/abi/linux/errno.h"
#include "sentry/fs/anon/anon.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/waitq.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/handlers.h"

#define LINUX_SFD_CLOEXEC 02000000
#define LINUX_SFD_NONBLOCK 04000

static long do_signalfd(struct task *t, int fd, uint64_t umask, uint64_t sizemask, int flags)
{
	struct file *f;
	uint64_t mask;
	rlim_t cur;
	int ret;

	if (flags & ~(LINUX_SFD_CLOEXEC | LINUX_SFD_NONBLOCK))
		return -EINVAL;
	if (sizemask != sizeof(mask))
		return -EINVAL;
	if (mm_copy_in(t->mm, &mask, umask, sizeof(mask)) != (ssize_t)sizeof(mask))
		return -EFAULT;
	if (fd != -1) {
		f = fdtable_lookup(t->fdt, fd);
		if (!f)
			return -EBADF;
		if (!file_is_signalfd(f)) {
			file_put(f);
			return -EINVAL;
		}
		signalfd_set_mask(f, mask);
		file_put(f);
		/* Readers blocked on the old mask recheck against the new one. */
		waitq_wake_all(signal_waitq(t));
		return fd;
	}
	f = signalfd_create_file(mask, flags & LINUX_SFD_NONBLOCK ? O_NONBLOCK : 0);
	if (!f)
		return -ENOMEM;
	pthread_mutex_lock(&t->tg->lock);
	cur = t->tg->rlimits[RLIMIT_NOFILE].rlim_cur;
	pthread_mutex_unlock(&t->tg->lock);
	ret = fdtable_install(t->fdt, f, 0, flags & LINUX_SFD_CLOEXEC,
			      cur > INT_MAX ? INT_MAX : (int)cur);
	file_put(f);
	return ret;
}

/* signalfd(2) */
long sys_signalfd(struct task *t, const struct syscall_args *args)
{
	return do_signalfd(t, (int)args->a[0], args->a[1], args->a[2], 0);
}

/* signalfd4(2) */
long sys_signalfd4(struct task *t, const struct syscall_args *args)
{
	return do_signalfd(t, (int)args->a[0], args->a[1], args->a[2], (int)args->a[3]);
}
