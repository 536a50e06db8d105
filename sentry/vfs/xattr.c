/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Extended attributes through the VFS (see xattr.h): the checks of Linux's fs/xattr.c and the
 * capability module's, then the filesystem's node op.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "include/abi/linux/errno.h"
#include "sentry/kernel/task.h"
#include "sentry/vfs/fs.h"
#include "sentry/vfs/notify.h"
#include "sentry/vfs/xattr.h"

#define CAP_FOWNER_BIT 3
#define CAP_SYS_ADMIN_BIT 21
#define CAP_SETFCAP_BIT 31

static bool has_prefix(const char *name, const char *prefix)
{
	return strncmp(name, prefix, strlen(prefix)) == 0;
}

/* The effective capability cap of c (the bit itself: fsuid 0 is not enough, as in Linux). */
static bool xattr_capable(const struct cred *c, int cap)
{
	return (c->cap_effective >> cap) & 1;
}

/*
 * The namespaces Linux knows: -EOPNOTSUPP for a name in none of them, -EINVAL for a bare
 * prefix (Linux's xattr_resolve_name).
 */
static int check_namespace(const char *name)
{
	static const char *const prefixes[] = { "user.", "trusted.", "security.", "system." };

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (has_prefix(name, prefixes[i]))
			return name[strlen(prefixes[i])] ? 0 : -EINVAL;
	return -EOPNOTSUPP;
}

/* Linux's xattr_permission with cap_inode_setxattr/removexattr; may is VFS_MAY_READ or WRITE. */
static int xattr_permission(struct task *t, const struct vfs_path *p, const char *name, int may,
			    const struct vfs_attr *a)
{
	const struct cred *c = &t->cred;
	bool write = may & VFS_MAY_WRITE;

	if (has_prefix(name, "security.") || has_prefix(name, "system.")) {
		if (!write)
			return 0;
		if (!strcmp(name, "security.capability"))
			return xattr_capable(c, CAP_SETFCAP_BIT) ? 0 : -EPERM;
		if (has_prefix(name, "security."))
			return xattr_capable(c, CAP_SYS_ADMIN_BIT) ? 0 : -EPERM;
		return 0;
	}
	if (has_prefix(name, "trusted.")) {
		if (!xattr_capable(c, CAP_SYS_ADMIN_BIT))
			return write ? -EPERM : -ENODATA;
		return 0;
	}
	if (has_prefix(name, "user.")) {
		if (!S_ISREG(a->mode) && !S_ISDIR(a->mode))
			return write ? -EPERM : -ENODATA;
		if (S_ISDIR(a->mode) && (a->mode & S_ISVTX) && write && c->fsuid != a->uid &&
		    !xattr_capable(c, CAP_FOWNER_BIT))
			return -EPERM;
	}
	return vfs_permission(c, a, may);
}

/* The checks common to every call; write calls first need a writable mount. */
static int xattr_prepare(struct task *t, const struct vfs_path *p, const char *name, int may)
{
	struct vfs_attr a;
	int err;

	if ((may & VFS_MAY_WRITE) && vfs_mount_readonly(p->mnt))
		return -EROFS;
	err = vfs_node_getattr(p->node, &a);
	if (err < 0)
		return err;
	err = xattr_permission(t, p, name, may, &a);
	if (err < 0)
		return err;
	return check_namespace(name);
}

ssize_t vfs_getxattr(struct task *t, const struct vfs_path *p, const char *name, void *buf,
		     size_t size)
{
	ssize_t n;
	int err;

	err = xattr_prepare(t, p, name, VFS_MAY_READ);
	if (err < 0)
		return err;
	if (!p->node->ops->getxattr)
		return -EOPNOTSUPP;
	if (size > VFS_XATTR_SIZE_MAX)
		size = VFS_XATTR_SIZE_MAX;
	n = p->node->ops->getxattr(p->node, name, buf, size);
	if (n == -ERANGE && size >= VFS_XATTR_SIZE_MAX)
		return -E2BIG;
	return n;
}

int vfs_setxattr(struct task *t, const struct vfs_path *p, const char *name, const void *value,
		 size_t size, int flags)
{
	int err;

	err = xattr_prepare(t, p, name, VFS_MAY_WRITE);
	if (err < 0)
		return err;
	if (!p->node->ops->setxattr)
		return -EOPNOTSUPP;
	err = p->node->ops->setxattr(p->node, name, value, size, flags);
	if (err == 0)
		vfs_notify_node(p->node, VFS_IN_ATTRIB);
	return err;
}

ssize_t vfs_listxattr(struct task *t, const struct vfs_path *p, char *buf, size_t size)
{
	ssize_t n;

	if (!p->node->ops->listxattr)
		return 0;
	if (size > VFS_XATTR_LIST_MAX)
		size = VFS_XATTR_LIST_MAX;
	n = p->node->ops->listxattr(p->node, buf, size, xattr_capable(&t->cred, CAP_SYS_ADMIN_BIT));
	if (n == -ERANGE && size >= VFS_XATTR_LIST_MAX)
		return -E2BIG;
	return n;
}

int vfs_removexattr(struct task *t, const struct vfs_path *p, const char *name)
{
	int err;

	err = xattr_prepare(t, p, name, VFS_MAY_WRITE);
	if (err < 0)
		return err;
	if (!p->node->ops->removexattr)
		return -EOPNOTSUPP;
	err = p->node->ops->removexattr(p->node, name);
	if (err == 0)
		vfs_notify_node(p->node, VFS_IN_ATTRIB);
	return err;
}
