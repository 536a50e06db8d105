/* SPDX-License-Identifier: Apache-2.0 */
/* epoll_create(2), epoll_create1, epoll_ctl, epoll_wait, epoll_pwait, epoll_pwait2. */
#include <fcntl.h>
#include <limits.h>
#include <sys/epoll.h>
#include <sys/resource.h>

#include "include/abi/linux/errno.h"
#include "sentry/fs/anon/anon.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/handlers.h"
#include "syscalls/sys_poll.h"

#define NSEC_PER_SEC 1000000000L

struct linux_epoll_event {
	uint32_t events;
	uint64_t data;
} __attribute__((packed));

static long do_epoll_create(struct task *t, int flags)
{
	struct file *f;
	int fd;

	if (flags & ~EPOLL_CLOEXEC)
		return -EINVAL;
	f = epoll_create_file();
	if (!f)
		return -ENOMEM;
	fd = fdtable_install(t->fdt, f, 0, flags & EPOLL_CLOEXEC, task_nofile_limit(t));
	file_put(f);
	return fd;
}

/* epoll_create(2) */
long sys_epoll_create(struct task *t, const struct syscall_args *args)
{
	if ((int)args->a[0] <= 0)
		return -EINVAL;
	return do_epoll_create(t, 0);
}

/* epoll_create1(2) */
long sys_epoll_create1(struct task *t, const struct syscall_args *args)
{
	return do_epoll_create(t, (int)args->a[0]);
}

/* epoll_ctl(2) */
long sys_epoll_ctl(struct task *t, const struct syscall_args *args)
{
	int epfd = (int)args->a[0], op = (int)args->a[1], fd = (int)args->a[2];
	struct linux_epoll_event ev = { 0, 0 };
	struct file *ep, *target;
	long ret;

	if (op != EPOLL_CTL_DEL && mm_copy_in(t->mm, &ev, args->a[3], sizeof(ev)) != sizeof(ev))
		return -EFAULT;
	ep = fdtable_lookup(t->fdt, epfd);
	if (!ep)
		return -EBADF;
	target = fdtable_lookup(t->fdt, fd);
	if (!target) {
		file_put(ep);
		return -EBADF;
	}
	if (!file_is_epoll(ep) || epfd == fd)
		ret = -EINVAL;
	else
		ret = epoll_ctl_file(ep, op, fd, target, ev.events, ev.data);
	file_put(target);
	file_put(ep);
	return ret;
}

static long do_epoll_wait(struct task *t, int epfd, uint64_t events, int maxevents,
			  const struct timespec *deadline, bool nowait)
{
	struct file *ep;
	long ret;

	if (maxevents <= 0 || maxevents > INT_MAX / (int)sizeof(struct linux_epoll_event))
		return -EINVAL;
	ep = fdtable_lookup(t->fdt, epfd);
	if (!ep)
		return -EBADF;
	if (!file_is_epoll(ep)) {
		file_put(ep);
		return -EINVAL;
	}
	ret = epoll_wait_file(t, ep, events, maxevents, deadline, nowait);
	file_put(ep);
	/* epoll_wait is never restarted: a signal gives EINTR even with SA_RESTART. A freeze
	 * (pause, checkpoint) alone restarts it, unseen. */
	if (ret == -ERESTARTSYS)
		return kernel_freezing(t->k) ? -ERESTARTNOHAND : -EINTR;
	return ret;
}

static long epoll_wait_ms(struct task *t, const struct syscall_args *args, int timeout)
{
	struct timespec deadline;

	if (timeout > 0)
		deadline = poll_deadline_after(
			(struct timespec){ timeout / 1000, (timeout % 1000) * 1000000L });
	return do_epoll_wait(t, (int)args->a[0], args->a[1], (int)args->a[2],
			     timeout > 0 ? &deadline : NULL, timeout == 0);
}

/* epoll_wait(2) */
long sys_epoll_wait(struct task *t, const struct syscall_args *args)
{
	return epoll_wait_ms(t, args, (int)args->a[3]);
}

/* epoll_pwait(2) */
long sys_epoll_pwait(struct task *t, const struct syscall_args *args)
{
	int pushed = poll_sigmask_push(t, args->a[4], args->a[5]);
	long ret;

	if (pushed < 0)
		return pushed;
	ret = epoll_wait_ms(t, args, (int)args->a[3]);
	poll_sigmask_pop(t, pushed, ret);
	return ret;
}

/* epoll_pwait2(2): the timeout is a struct timespec (NULL: none). */
long sys_epoll_pwait2(struct task *t, const struct syscall_args *args)
{
	struct timespec deadline;
	int64_t ts[2] = { 0, 0 };
	bool nowait = false;
	int pushed;
	long ret;

	if (args->a[3]) {
		if (mm_copy_in(t->mm, ts, args->a[3], sizeof(ts)) != sizeof(ts))
			return -EFAULT;
		if (ts[0] < 0 || ts[1] < 0 || ts[1] >= NSEC_PER_SEC)
			return -EINVAL;
		nowait = ts[0] == 0 && ts[1] == 0;
		deadline = poll_deadline_after((struct timespec){ ts[0], ts[1] });
	}
	pushed = poll_sigmask_push(t, args->a[4], args->a[5]);
	if (pushed < 0)
		return pushed;
	ret = do_epoll_wait(t, (int)args->a[0], args->a[1], (int)args->a[2],
			    args->a[3] ? &deadline : NULL, nowait);
	poll_sigmask_pop(t, pushed, ret);
	return ret;
}
