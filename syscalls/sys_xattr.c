/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Extended attributes. No filesystem of the sentry stores them yet (the gofer's xattr messages
 * come with the filesystem issue), so each file behaves as on a filesystem without xattr
 * support: get gives -ENOTSUP, list gives an empty list, set and remove give -ENOTSUP. The path
 * or fd is still resolved first, so a missing file is -ENOENT and a bad fd -EBADF, as on Linux.
 */
#include <fcntl.h>
#include <limits.h>

#include "include/abi/linux/errno.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/handlers.h"

/* Resolves the path argument (following the final symlink unless nofollow). */
static long xattr_resolve(struct task *t, uint64_t upath, bool nofollow)
{
	char path[PATH_MAX];
	struct vfs_path p;
	ssize_t n;
	int ret;

	n = mm_copy_in_string(t->mm, path, upath, sizeof(path));
	if (n < 0)
		return n;
	ret = vfs_lookup_at(t, AT_FDCWD, path, nofollow ? AT_SYMLINK_NOFOLLOW : 0, &p);
	if (ret < 0)
		return ret;
	vfs_path_put(&p);
	return 0;
}

static long xattr_check_fd(struct task *t, int fd)
{
	struct file *f = fdtable_lookup(t->fdt, fd);

	if (!f)
		return -EBADF;
	file_put(f);
	return 0;
}

/* Checks the attribute name argument as Linux does: readable, 1..255 bytes. */
static long xattr_check_name(struct task *t, uint64_t uname)
{
	char name[256];
	ssize_t n = mm_copy_in_string(t->mm, name, uname, sizeof(name));

	if (n == -ENAMETOOLONG)
		return -ERANGE;
	if (n < 0)
		return n;
	return n == 0 ? -ERANGE : 0;
}

/* getxattr(2): -ENOTSUP (no filesystem stores extended attributes yet). */
long sys_getxattr(struct task *t, const struct syscall_args *args)
{
	long ret = xattr_resolve(t, args->a[0], false);
	if (ret == 0)
		ret = xattr_check_name(t, args->a[1]);
	return ret < 0 ? ret : -ENOTSUP;
}

/* lgetxattr(2): as getxattr, without following a final symlink. */
long sys_lgetxattr(struct task *t, const struct syscall_args *args)
{
	long ret = xattr_resolve(t, args->a[0], true);
	if (ret == 0)
		ret = xattr_check_name(t, args->a[1]);
	return ret < 0 ? ret : -ENOTSUP;
}

/* fgetxattr(2): as getxattr, on an fd. */
long sys_fgetxattr(struct task *t, const struct syscall_args *args)
{
	long ret = xattr_check_fd(t, (int)args->a[0]);
	if (ret == 0)
		ret = xattr_check_name(t, args->a[1]);
	return ret < 0 ? ret : -ENOTSUP;
}

/* listxattr(2): an empty list. */
long sys_listxattr(struct task *t, const struct syscall_args *args)
{
	return xattr_resolve(t, args->a[0], false);
}

/* llistxattr(2): an empty list. */
long sys_llistxattr(struct task *t, const struct syscall_args *args)
{
	return xattr_resolve(t, args->a[0], true);
}

/* flistxattr(2): an empty list. */
long sys_flistxattr(struct task *t, const struct syscall_args *args)
{
	return xattr_check_fd(t, (int)args->a[0]);
}
