/* SPDX-License-Identifier: Apache-2.0 */
/*
 * open(2): the last steps of Linux's path_openat (O_CREAT handling, type and permission checks
 * in Linux's order) on top of the walker of namei.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>

/* common/util.h before sys/user.h (through task.h): util.h would redefine PAGE_SIZE. */
#include "common/util.h"
#include "common/err.h"
#include "sentry/kernel/task.h"
#include "sentry/vfs/internal.h"
#include "sentry/vfs/notify.h"

/* Linux's own values: glibc's O_LARGEFILE is 0 on x86-64, its __O_TMPFILE has O_DIRECTORY. */
#define LINUX_O_LARGEFILE 0100000
#define LINUX_O_TMPFILE_BIT 020000000

/* VFS_MAY_* bits an open with flags asks for (O_TRUNC needs write permission). */
static int open_may(int flags)
{
	int may;

	switch (flags & O_ACCMODE) {
	case O_RDONLY:
		may = VFS_MAY_READ;
		break;
	case O_WRONLY:
		may = VFS_MAY_WRITE;
		break;
	default: /* O_RDWR, and 3 (ioctl-only) which Linux checks as read-write */
		may = VFS_MAY_READ | VFS_MAY_WRITE;
		break;
	}
	if (flags & O_TRUNC)
		may |= VFS_MAY_WRITE;
	return may;
}

/* The status flags a file keeps (what F_GETFL reports). */
static int file_status_flags(int flags)
{
	if (flags & O_PATH)
		return flags & (O_PATH | O_DIRECTORY | O_NOFOLLOW);
	/* x86-64 Linux forces O_LARGEFILE on every open. */
	return (flags & ~(O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_CLOEXEC)) | LINUX_O_LARGEFILE;
}

/*
 * Opens the node at p: Linux's do_open and may_open. A node the open just created is opened
 * without permission checks or truncation (created true), as Linux's FMODE_CREATED.
 */
static int open_node(struct task *t, const struct vfs_path *p, int flags, bool created,
		     struct file **out)
{
	uint32_t type = p->node->type;
	struct file *f;
	int err = 0;

	if ((flags & O_CREAT) && S_ISDIR(type))
		return -EISDIR;
	if ((flags & O_DIRECTORY) && !S_ISDIR(type))
		return -ENOTDIR;
	if (flags & O_PATH) {
		f = vfs_path_file_create(flags);
		if (!f)
			return -ENOMEM;
		goto attach;
	}
	if ((flags & O_TRUNC) && S_ISREG(type) && vfs_mount_readonly(p->mnt))
		return -EROFS;
	switch (type) {
	case S_IFLNK:
		return -ELOOP;
	case S_IFDIR:
		if (open_may(flags) & VFS_MAY_WRITE)
			return -EISDIR;
		break;
	case S_IFCHR:
	case S_IFBLK:
		if (p->mnt->flags & MS_NODEV)
			return -EACCES;
		flags &= ~O_TRUNC;
		break;
	case S_IFIFO:
	case S_IFSOCK:
		flags &= ~O_TRUNC;
		break;
	}
	if (created)
		flags &= ~O_TRUNC;
	else
		err = vfs_path_permission_cred(&t->cred, p, open_may(flags));
	if (err < 0)
		return err;
	if (flags & O_NOATIME) {
		struct vfs_attr attr;

		err = vfs_node_getattr(p->node, &attr);
		if (err < 0)
			return err;
		/* inode_owner_or_capable */
		if (t->cred.fsuid != attr.uid && !cred_capable(&t->cred, CAP_FOWNER))
			return -EPERM;
	}
	if (S_ISDIR(type) && p->node->ops->open_dir) {
		f = p->node->ops->open_dir(p->node, flags);
		if (IS_ERR(f))
			return (int)PTR_ERR(f);
	} else if (S_ISDIR(type)) {
		f = vfs_dir_file_create(flags);
		if (!f)
			return -ENOMEM;
	} else {
		if (!p->node->ops->open)
			return -ENXIO;
		f = p->node->ops->open(p->node, flags);
		if (IS_ERR(f))
			return (int)PTR_ERR(f);
	}
attach:
	f->flags = file_status_flags(flags);
	f->mnt = p->mnt;
	f->node = p->node;
	vfs_mount_get(f->mnt);
	vfs_node_get(f->node);
	if (!(flags & O_PATH)) {
		/* The filesystem's open truncated (O_TRUNC was dropped where it does not apply). */
		if ((flags & O_TRUNC) && S_ISREG(type))
			vfs_notify_node(p->node, VFS_IN_MODIFY);
		vfs_notify_node(p->node, VFS_IN_OPEN);
	}
	*out = f;
	return 0;
}

/* Creates regular file name in dir for open (namespace lock held). *out: its path. */
static int create_file(struct task *t, const struct vfs_path *dir, const char *name,
		       unsigned int mode, struct vfs_path *out)
{
	unsigned int umask = t->fs ? fs_context_umask(t->fs) : 022;
	struct vfs_create_args a;
	struct vfs_node *n;
	int err;

	err = vfs_may_create(&t->cred, dir, S_IFREG | (mode & 07777 & ~umask), &a);
	if (err < 0)
		return err;
	if (!dir->node->ops->create)
		return -EROFS;
	err = dir->node->ops->create(dir->node, name, &a, &n);
	if (err < 0)
		return err;
	vfs_notify_name(dir->node, name, n, VFS_IN_CREATE, 0);
	out->mnt = dir->mnt;
	vfs_mount_get(out->mnt);
	out->node = n;
	return 0;
}

/* O_TMPFILE: an unnamed regular file in the directory at dir. */
static int open_tmpfile(struct task *t, const struct vfs_path *dir, int flags, unsigned int mode,
			struct file **out)
{
	unsigned int umask = t->fs ? fs_context_umask(t->fs) : 022;
	struct vfs_create_args a;
	struct vfs_path p;
	int err;

	err = vfs_may_create(&t->cred, dir, S_IFREG | (mode & 07777 & ~umask), &a);
	if (err < 0)
		return err;
	if (!dir->node->ops->tmpfile)
		return -EOPNOTSUPP;
	a.no_link = flags & O_EXCL;
	err = dir->node->ops->tmpfile(dir->node, &a, &p.node);
	if (err < 0)
		return err;
	p.mnt = dir->mnt;
	vfs_mount_get(p.mnt);
	err = open_node(t, &p, flags & ~(LINUX_O_TMPFILE_BIT | O_DIRECTORY), true, out);
	vfs_path_put(&p);
	return err;
}

/* open with O_CREAT: resolve the parent, then the last name, following symlinks by hand. */
static int open_create(struct task *t, struct vfs_walk_state *ws, const struct vfs_path *start,
		       const char *path, int flags, unsigned int mode, struct file **out)
{
	struct vfs_path dir_start, dir, child;
	char *target = NULL;
	struct vfs_last last;
	int err;

	vfs_path_copy(&dir_start, start);
	for (;;) {
		err = vfs_walk_state(ws, &dir_start, target ? target : path, VFS_WALK_PARENT, &dir,
				     &last);
		vfs_path_put(&dir_start);
		free(target);
		target = NULL;
		if (err < 0)
			return err;
		/* ".", "..", "/" name directories; a trailing slash asks for one: not creatable. */
		if (last.type != VFS_LAST_NORM || last.trailing) {
			vfs_path_put(&dir);
			return -EISDIR;
		}
		vfs_ns_lock();
		err = vfs_lookup_one(&dir, last.name, &child);
		if (err == -ENOENT) {
			err = create_file(t, &dir, last.name, mode, &child);
			vfs_ns_unlock();
			vfs_path_put(&dir);
			if (err < 0)
				return err;
			err = open_node(t, &child, flags, true, out);
			vfs_path_put(&child);
			return err;
		}
		vfs_ns_unlock();
		if (err < 0) {
			vfs_path_put(&dir);
			return err;
		}
		if (flags & O_EXCL) {
			vfs_path_put(&child);
			vfs_path_put(&dir);
			return -EEXIST;
		}
		if (!vfs_node_is_symlink(child.node) || (flags & O_NOFOLLOW))
			break;
		if (child.node->ops->get_link) {
			/* A magic link (procfs): open what it names. */
			struct vfs_path to;

			err = vfs_follow_magic_link(ws, child.node, &to);
			vfs_path_put(&child);
			if (err < 0) {
				vfs_path_put(&dir);
				return err;
			}
			child = to;
			break;
		}
		err = vfs_read_link_target(ws, child.node, &target);
		vfs_path_put(&child);
		if (err < 0) {
			vfs_path_put(&dir);
			return err;
		}
		if (target[0] == '/') {
			vfs_path_copy(&dir_start, ws->root);
			vfs_path_put(&dir);
		} else {
			dir_start = dir;
		}
	}
	vfs_path_put(&dir);
	err = open_node(t, &child, flags, false, out);
	vfs_path_put(&child);
	return err;
}

int vfs_open(struct task *t, int dirfd, const char *path, int flags, unsigned int mode,
	     struct file **out)
{
	return vfs_open_resolve(t, dirfd, path, flags, mode, 0, out);
}

int vfs_open_resolve(struct task *t, int dirfd, const char *path, int flags, unsigned int mode,
		     unsigned int resolve, struct file **out)
{
	struct vfs_walk_state ws = { .cred = &t->cred, .resolve = resolve };
	struct vfs_path root, start, p;
	bool tmpfile = false;
	int err;

	if (resolve & ~(VFS_RESOLVE_NO_XDEV | VFS_RESOLVE_NO_MAGICLINKS | VFS_RESOLVE_NO_SYMLINKS |
			VFS_RESOLVE_BENEATH | VFS_RESOLVE_IN_ROOT | VFS_RESOLVE_CACHED))
		return -EINVAL;
	if ((resolve & VFS_RESOLVE_BENEATH) && (resolve & VFS_RESOLVE_IN_ROOT))
		return -EINVAL;
	if ((resolve & VFS_RESOLVE_CACHED) && (flags & (O_TRUNC | O_CREAT | LINUX_O_TMPFILE_BIT)))
		return -EAGAIN;
	if (flags & O_PATH)
		flags &= O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	if ((flags & (O_DIRECTORY | O_CREAT)) == (O_DIRECTORY | O_CREAT))
		return -EINVAL;
	if (flags & LINUX_O_TMPFILE_BIT) {
		if ((flags & (LINUX_O_TMPFILE_BIT | O_DIRECTORY | O_CREAT)) !=
			    (LINUX_O_TMPFILE_BIT | O_DIRECTORY) ||
		    !(open_may(flags) & VFS_MAY_WRITE))
			return -EINVAL;
		tmpfile = true;
	}
	if (!*path)
		return -ENOENT;

	if (resolve & (VFS_RESOLVE_BENEATH | VFS_RESOLVE_IN_ROOT)) {
		/* The walk's root is dirfd itself: `..` and absolute links stop (or fail) there. */
		err = vfs_dirfd_path(t, dirfd, &root);
		if (err < 0)
			return err;
		vfs_path_copy(&start, &root);
	} else {
		vfs_task_root(t, &root);
		if (path[0] == '/') {
			vfs_path_copy(&start, &root);
		} else {
			err = vfs_dirfd_path(t, dirfd, &start);
			if (err < 0) {
				vfs_path_put(&root);
				return err;
			}
		}
	}
	ws.root = &root;
	if (tmpfile) {
		err = vfs_walk_state(&ws, &start, path, VFS_LOOKUP_FOLLOW | VFS_LOOKUP_DIRECTORY,
				     &p, NULL);
		if (err == 0) {
			err = open_tmpfile(t, &p, flags, mode, out);
			vfs_path_put(&p);
		}
	} else if (flags & O_CREAT) {
		err = open_create(t, &ws, &start, path, flags, mode, out);
	} else {
		int lf = (flags & O_NOFOLLOW) ? 0 : VFS_LOOKUP_FOLLOW;

		if (flags & O_DIRECTORY)
			lf |= VFS_LOOKUP_DIRECTORY;
		err = vfs_walk_state(&ws, &start, path, lf, &p, NULL);
		if (err == 0) {
			err = open_node(t, &p, flags, false, out);
			vfs_path_put(&p);
		}
	}
	vfs_path_put(&start);
	vfs_path_put(&root);
	return err;
}
