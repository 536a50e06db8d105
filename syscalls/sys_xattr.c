/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Extended attributes: the get/set/list/remove families by path, by path without following a
 * final symlink, by fd, and Linux 6.13's *xattrat calls. The argument checks come first in
 * Linux's order (flags, name, size, then the lookup); the namespace and permission rules are in
 * sentry/vfs/xattr.c; what each filesystem keeps is in its xattr ops (tmpfs: user, trusted,
 * security; the overlay: its upper layer, the gofer's below; the gofer: user.* and a read-only
 * security.capability).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "include/abi/linux/errno.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/fs.h"
#include "sentry/vfs/vfs.h"
#include "sentry/vfs/xattr.h"
#include "syscalls/handlers.h"

/* Linux's struct xattr_args (setxattrat/getxattrat) and its first size. */
struct linux_xattr_args {
	uint64_t value;
	uint32_t size;
	uint32_t flags;
};
#define XATTR_ARGS_SIZE_VER0 16
#define XATTR_AT_FLAGS (AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)

/* How a call names its file: a path (dirfd, path, at_flags) or an fd (path 0). */
struct xattr_target {
	int dirfd;
	uint64_t upath; /* 0: dirfd itself, as an f*xattr call */
	int at_flags;
};

/* Resolves the target. An fd must not be O_PATH (-EBADF), as Linux's fdget. */
static int xattr_resolve(struct task *t, const struct xattr_target *tg, struct vfs_path *out)
{
	_cleanup_free_ char *path = NULL;
	struct file *f;
	ssize_t n;
	int err;

	if (tg->upath) {
		path = malloc(VFS_PATH_MAX);
		if (!path)
			return -ENOMEM;
		n = mm_copy_in_string(t->mm, path, tg->upath, VFS_PATH_MAX);
		if (n < 0)
			return (int)n;
		/* An empty path with AT_EMPTY_PATH names dirfd: an fd call (Linux 6.13). */
		if (n > 0 || !(tg->at_flags & AT_EMPTY_PATH))
			return vfs_lookup_at(t, tg->dirfd, path, tg->at_flags, out);
	}
	f = fdtable_lookup(t->fdt, tg->dirfd);
	if (!f)
		return -EBADF;
	if (__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_PATH)
		err = -EBADF;
	else
		err = vfs_file_path(f, out);
	file_put(f);
	return err;
}

/* Copies the attribute name in: -ERANGE when empty or longer than VFS_XATTR_NAME_MAX. */
static int xattr_name_in(struct task *t, uint64_t uname, char *name)
{
	ssize_t n = mm_copy_in_string(t->mm, name, uname, VFS_XATTR_NAME_MAX + 1);

	if (n == -ENAMETOOLONG)
		return -ERANGE;
	if (n < 0)
		return (int)n;
	return n == 0 ? -ERANGE : 0;
}

/*
 * The VFS's xattr checks (sentry/vfs/xattr.c) test capability bits alone, and a task in a user
 * namespace the guest made has them for that namespace only: it may not write security.* or
 * trusted.* names nor read trusted.* ones (Linux: CAP_SYS_ADMIN over the filesystem's
 * namespace, the sandbox's; a security.capability written there is converted to the
 * namespace's root id, not done here: EPERM). 0 or the error.
 */
static int nested_userns_xattr(struct task *t, const char *name, bool write)
{
	if (!t->cred.userns_level)
		return 0;
	if (!strncmp(name, "trusted.", 8))
		return write ? -EPERM : -ENODATA;
	if (write && !strncmp(name, "security.", 9))
		return -EPERM;
	return 0;
}

static long do_getxattr(struct task *t, const struct xattr_target *tg, uint64_t uname,
			uint64_t uvalue, size_t size)
{
	char name[VFS_XATTR_NAME_MAX + 1];
	_cleanup_free_ void *buf = NULL;
	struct vfs_path p;
	ssize_t n;
	int err;

	if (!tg->upath) {
		/* fgetxattr: the fd first, as Linux. */
		err = xattr_resolve(t, tg, &p);
		if (err < 0)
			return err;
		err = xattr_name_in(t, uname, name);
		if (err < 0) {
			vfs_path_put(&p);
			return err;
		}
	} else {
		err = xattr_name_in(t, uname, name);
		if (err < 0)
			return err;
		err = xattr_resolve(t, tg, &p);
		if (err < 0)
			return err;
	}
	err = nested_userns_xattr(t, name, false);
	if (err < 0) {
		vfs_path_put(&p);
		return err;
	}
	if (size > VFS_XATTR_SIZE_MAX)
		size = VFS_XATTR_SIZE_MAX;
	if (size) {
		buf = malloc(size);
		if (!buf) {
			vfs_path_put(&p);
			return -ENOMEM;
		}
	}
	n = vfs_getxattr(t, &p, name, buf, size);
	vfs_path_put(&p);
	if (n > 0 && size && mm_copy_out(t->mm, uvalue, buf, (size_t)n) != n)
		return -EFAULT;
	return n;
}

static long do_setxattr(struct task *t, const struct xattr_target *tg, uint64_t uname,
			uint64_t uvalue, size_t size, int flags)
{
	char name[VFS_XATTR_NAME_MAX + 1];
	_cleanup_free_ void *value = NULL;
	struct vfs_path p;
	bool resolved = false;
	int err;

	if (!tg->upath) {
		err = xattr_resolve(t, tg, &p);
		if (err < 0)
			return err;
		resolved = true;
	}
	/* Linux's setxattr_copy: flags, name, size, value. */
	err = -EINVAL;
	if (flags & ~(VFS_XATTR_CREATE | VFS_XATTR_REPLACE))
		goto out;
	err = xattr_name_in(t, uname, name);
	if (err < 0)
		goto out;
	if (size) {
		err = -E2BIG;
		if (size > VFS_XATTR_SIZE_MAX)
			goto out;
		err = -ENOMEM;
		value = malloc(size);
		if (!value)
			goto out;
		err = -EFAULT;
		if (mm_copy_in(t->mm, value, uvalue, size) != (ssize_t)size)
			goto out;
	}
	if (!resolved) {
		err = xattr_resolve(t, tg, &p);
		if (err < 0)
			return err;
		resolved = true;
	}
	err = nested_userns_xattr(t, name, true);
	if (err == 0)
		err = vfs_setxattr(t, &p, name, value, size, flags);
out:
	if (resolved)
		vfs_path_put(&p);
	return err;
}

static long do_listxattr(struct task *t, const struct xattr_target *tg, uint64_t ulist, size_t size)
{
	_cleanup_free_ char *buf = NULL;
	struct vfs_path p;
	ssize_t n;
	int err;

	err = xattr_resolve(t, tg, &p);
	if (err < 0)
		return err;
	if (size > VFS_XATTR_LIST_MAX)
		size = VFS_XATTR_LIST_MAX;
	if (size) {
		buf = malloc(size);
		if (!buf) {
			vfs_path_put(&p);
			return -ENOMEM;
		}
	}
	n = vfs_listxattr(t, &p, buf, size);
	vfs_path_put(&p);
	if (n > 0 && size && mm_copy_out(t->mm, ulist, buf, (size_t)n) != n)
		return -EFAULT;
	return n;
}

static long do_removexattr(struct task *t, const struct xattr_target *tg, uint64_t uname)
{
	char name[VFS_XATTR_NAME_MAX + 1];
	struct vfs_path p;
	int err;

	if (!tg->upath) {
		err = xattr_resolve(t, tg, &p);
		if (err < 0)
			return err;
		err = xattr_name_in(t, uname, name);
	} else {
		err = xattr_name_in(t, uname, name);
		if (err < 0)
			return err;
		err = xattr_resolve(t, tg, &p);
		if (err < 0)
			return err;
	}
	if (err == 0)
		err = nested_userns_xattr(t, name, true);
	if (err == 0)
		err = vfs_removexattr(t, &p, name);
	vfs_path_put(&p);
	return err;
}

static struct xattr_target by_path(uint64_t upath, bool nofollow)
{
	return (struct xattr_target){ AT_FDCWD, upath, nofollow ? AT_SYMLINK_NOFOLLOW : 0 };
}

static struct xattr_target by_fd(uint64_t fd)
{
	return (struct xattr_target){ (int)fd, 0, 0 };
}

/*
 * The *xattrat target: -EINVAL for unknown at_flags. A NULL path with AT_EMPTY_PATH names
 * dirfd (Linux's getname_maybe_null).
 */
static int by_at(const struct syscall_args *args, struct xattr_target *tg)
{
	unsigned int at_flags = (unsigned int)args->a[2];

	if (at_flags & ~(unsigned int)XATTR_AT_FLAGS)
		return -EINVAL;
	*tg = (struct xattr_target){ (int)args->a[0], args->a[1], (int)at_flags };
	if (!tg->upath && !(at_flags & AT_EMPTY_PATH))
		return -EFAULT;
	return 0;
}

/* Copies in struct xattr_args as copy_struct_from_user does (-E2BIG for non-zero extra bytes). */
static int xattr_args_in(struct task *t, uint64_t uargs, size_t usize,
			 struct linux_xattr_args *args)
{
	uint8_t extra[64];

	if (usize < XATTR_ARGS_SIZE_VER0 || usize > 4096)
		return usize < XATTR_ARGS_SIZE_VER0 ? -EINVAL : -E2BIG;
	if (mm_copy_in(t->mm, args, uargs, sizeof(*args)) != sizeof(*args))
		return -EFAULT;
	for (size_t off = sizeof(*args); off < usize; off += sizeof(extra)) {
		size_t n = usize - off < sizeof(extra) ? usize - off : sizeof(extra);

		if (mm_copy_in(t->mm, extra, uargs + off, n) != (ssize_t)n)
			return -EFAULT;
		for (size_t i = 0; i < n; i++)
			if (extra[i])
				return -E2BIG;
	}
	return 0;
}

/* getxattr(2) */
long sys_getxattr(struct task *t, const struct syscall_args *args)
{
	struct xattr_target tg = by_path(args->a[0], false);

	return do_getxattr(t, &tg, args->a[1], args->a[2], args->a[3]);
}

/* lgetxattr(2) */
long sys_lgetxattr(struct task *t, const struct syscall_args *args)
{
	struct xattr_target tg = by_path(args->a[0], true);

	return do_getxattr(t, &tg, args->a[1], args->a[2], args->a[3]);
}

/* fgetxattr(2) */
long sys_fgetxattr(struct task *t, const struct syscall_args *args)
{
	struct xattr_target tg = by_fd(args->a[0]);

	return do_getxattr(t, &tg, args->a[1], args->a[2], args->a[3]);
}

/* setxattr(2) */
long sys_setxattr(struct task *t, const struct syscall_args *args)
{
	struct xattr_target tg = by_path(args->a[0], false);

	return do_setxattr(t, &tg, args->a[1], args->a[2], args->a[3], (int)args->a[4]);
}

/* lsetxattr(2) */
long sys_lsetxattr(struct task *t, const struct syscall_args *args)
{
	struct xattr_target tg = by_path(args->a[0], true);

	return do_setxattr(t, &tg, args->a[1], args->a[2], args->a[3], (int)args->a[4]);
}

/* fsetxattr(2) */
long sys_fsetxattr(struct task *t, const struct syscall_args *args)
{
	struct xattr_target tg = by_fd(args->a[0]);

	return do_setxattr(t, &tg, args->a[1], args->a[2], args->a[3], (int)args->a[4]);
}

/* listxattr(2) */
long sys_listxattr(struct task *t, const struct syscall_args *args)
{
	struct xattr_target tg = by_path(args->a[0], false);

	return do_listxattr(t, &tg, args->a[1], args->a[2]);
}

/* llistxattr(2) */
long sys_llistxattr(struct task *t, const struct syscall_args *args)
{
	struct xattr_target tg = by_path(args->a[0], true);

	return do_listxattr(t, &tg, args->a[1], args->a[2]);
}

/* flistxattr(2) */
long sys_flistxattr(struct task *t, const struct syscall_args *args)
{
	struct xattr_target tg = by_fd(args->a[0]);

	return do_listxattr(t, &tg, args->a[1], args->a[2]);
}

/* removexattr(2) */
long sys_removexattr(struct task *t, const struct syscall_args *args)
{
	struct xattr_target tg = by_path(args->a[0], false);

	return do_removexattr(t, &tg, args->a[1]);
}

/* lremovexattr(2) */
long sys_lremovexattr(struct task *t, const struct syscall_args *args)
{
	struct xattr_target tg = by_path(args->a[0], true);

	return do_removexattr(t, &tg, args->a[1]);
}

/* fremovexattr(2) */
long sys_fremovexattr(struct task *t, const struct syscall_args *args)
{
	struct xattr_target tg = by_fd(args->a[0]);

	return do_removexattr(t, &tg, args->a[1]);
}

/* setxattrat(2) (Linux 6.13): struct xattr_args gives value, size and flags. */
long sys_setxattrat(struct task *t, const struct syscall_args *args)
{
	struct linux_xattr_args xa;
	struct xattr_target tg;
	int err = by_at(args, &tg);

	if (err == 0)
		err = xattr_args_in(t, args->a[4], args->a[5], &xa);
	if (err < 0)
		return err;
	return do_setxattr(t, &tg, args->a[3], xa.value, xa.size, (int)xa.flags);
}

/* getxattrat(2) (Linux 6.13): struct xattr_args gives value and size; flags must be 0. */
long sys_getxattrat(struct task *t, const struct syscall_args *args)
{
	struct linux_xattr_args xa;
	struct xattr_target tg;
	int err = by_at(args, &tg);

	if (err == 0)
		err = xattr_args_in(t, args->a[4], args->a[5], &xa);
	if (err == 0 && xa.flags)
		err = -EINVAL;
	if (err < 0)
		return err;
	return do_getxattr(t, &tg, args->a[3], xa.value, xa.size);
}

/* listxattrat(2) (Linux 6.13) */
long sys_listxattrat(struct task *t, const struct syscall_args *args)
{
	struct xattr_target tg;
	int err = by_at(args, &tg);

	if (err < 0)
		return err;
	return do_listxattr(t, &tg, args->a[3], args->a[4]);
}

/* removexattrat(2) (Linux 6.13) */
long sys_removexattrat(struct task *t, const struct syscall_args *args)
{
	struct xattr_target tg;
	int err = by_at(args, &tg);

	if (err < 0)
		return err;
	return do_removexattr(t, &tg, args->a[3]);
}
