/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Extended attributes through the VFS: Linux's namespace and permission rules (fs/xattr.c's
 * xattr_permission and the capability checks of security/commoncap.c) in front of the
 * filesystems' xattr node ops (fs.h). Called by syscalls/sys_xattr.c with sentry buffers; the
 * syscalls check the flags, name length and size first, as Linux's setxattr_copy does.
 */
#ifndef HUSK_SENTRY_VFS_XATTR_H
#define HUSK_SENTRY_VFS_XATTR_H

#include <stddef.h>
#include <sys/types.h>

struct task;
struct vfs_path;

/*
 * getxattr(2) of name on p as t: size 0 asks for the value's length. Returns the length, or
 * -errno: -ENODATA (absent; also trusted.* without CAP_SYS_ADMIN, user.* on other types than
 * regular files and directories), -ERANGE (size too small), -EOPNOTSUPP (a namespace the
 * filesystem does not keep), -EACCES (no read permission, for user.*), -E2BIG (a value past
 * VFS_XATTR_SIZE_MAX).
 */
ssize_t vfs_getxattr(struct task *t, const struct vfs_path *p, const char *name, void *buf,
		     size_t size);
/*
 * setxattr(2): flags VFS_XATTR_CREATE / VFS_XATTR_REPLACE (checked by the caller). Returns 0 or
 * -errno: -EROFS, -EPERM (trusted.* and security.* without CAP_SYS_ADMIN, security.capability
 * without CAP_SETFCAP, user.* on other types or in a sticky directory not owned), -EACCES,
 * -EEXIST, -ENODATA, -EOPNOTSUPP, -ENOSPC. Reports IN_ATTRIB on success.
 */
int vfs_setxattr(struct task *t, const struct vfs_path *p, const char *name, const void *value,
		 size_t size, int flags);
/*
 * listxattr(2): the names, NUL-terminated; size 0 asks for the length. trusted.* names are
 * listed only for CAP_SYS_ADMIN. Returns the length or -errno (-ERANGE, -E2BIG).
 */
ssize_t vfs_listxattr(struct task *t, const struct vfs_path *p, char *buf, size_t size);
/* removexattr(2): as vfs_setxattr; -ENODATA when absent. Reports IN_ATTRIB on success. */
int vfs_removexattr(struct task *t, const struct vfs_path *p, const char *name);

#endif
