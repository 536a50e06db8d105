/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inotify_init(2), inotify_init1(2), inotify_add_watch(2), inotify_rm_watch(2). The instance is
 * an anon file (sentry/fs/anon/inotify.c); watches and events are sentry/vfs/notify.c's. Only
 * changes made inside the sandbox are reported: the host's changes to a volume are not.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "common/cleanup.h"
#include "include/abi/linux/errno.h"
#include "sentry/fs/anon/anon.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/fs.h"
#include "sentry/vfs/notify.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/handlers.h"

#define LINUX_IN_CLOEXEC O_CLOEXEC
#define LINUX_IN_NONBLOCK O_NONBLOCK

static long do_inotify_init(struct task *t, int flags)
{
	struct file *f;
	int err, fd;

	if (flags & ~(LINUX_IN_CLOEXEC | LINUX_IN_NONBLOCK))
		return -EINVAL;
	err = inotify_create_file(flags & LINUX_IN_NONBLOCK, &f);
	if (err < 0)
		return err;
	fd = fdtable_install(t->fdt, f, 0, flags & LINUX_IN_CLOEXEC, task_nofile_limit(t));
	file_put(f);
	return fd;
}

/* inotify_init(2) */
long sys_inotify_init(struct task *t, const struct syscall_args *args)
{
	return do_inotify_init(t, 0);
}

/* inotify_init1(2) */
long sys_inotify_init1(struct task *t, const struct syscall_args *args)
{
	return do_inotify_init(t, (int)args->a[0]);
}

/* inotify_add_watch(2): read permission on the file is needed, as Linux. */
long sys_inotify_add_watch(struct task *t, const struct syscall_args *args)
{
	uint32_t mask = (uint32_t)args->a[2];
	_cleanup_free_ char *path = NULL;
	struct vfs_path p;
	struct file *f;
	ssize_t n;
	long ret;

	f = fdtable_lookup(t->fdt, (int)args->a[0]);
	if (!f)
		return -EBADF;
	ret = -EINVAL;
	if (!file_is_inotify(f))
		goto out_put_file;
	/* Linux checks the mask before the lookup. */
	if (!(mask & VFS_IN_ALL_EVENTS) ||
	    ((mask & VFS_IN_MASK_ADD) && (mask & VFS_IN_MASK_CREATE)))
		goto out_put_file;
	ret = -ENOMEM;
	path = malloc(VFS_PATH_MAX);
	if (!path)
		goto out_put_file;
	n = mm_copy_in_string(t->mm, path, args->a[1], VFS_PATH_MAX);
	if (n < 0) {
		ret = n;
		goto out_put_file;
	}
	ret = vfs_lookup_at(t, AT_FDCWD, path,
			    (mask & VFS_IN_DONT_FOLLOW) ? AT_SYMLINK_NOFOLLOW : 0, &p);
	if (ret < 0)
		goto out_put_file;
	ret = vfs_path_permission(t, &p, 4 /* R_OK */);
	if (ret == 0)
		ret = inotify_add_watch_file(f, p.node, mask);
	vfs_path_put(&p);
out_put_file:
	file_put(f);
	return ret;
}

/* inotify_rm_watch(2) */
long sys_inotify_rm_watch(struct task *t, const struct syscall_args *args)
{
	struct file *f = fdtable_lookup(t->fdt, (int)args->a[0]);
	long ret;

	if (!f)
		return -EBADF;
	ret = inotify_rm_watch_file(f, (int)args->a[1]);
	file_put(f);
	return ret;
}
