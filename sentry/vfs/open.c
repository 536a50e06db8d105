/* SPDX-License-Identifier: Apache-2.0 */
/*
 * open(2): the last steps of Linux's path_openat (O_CREAT handling, type and permission checks
 * in Linux's order) on top of the walker of namei.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>

/* common/util.h before sys/user.h (through task.h): util.h would redefine PAGE_SIZE. */
#include "common/util.h"
#include "common/err.h"
#include "sentry/kernel/task.h"
#include "sentry/vfs/internal.h"

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

/* Opens the existing node at p: Linux's do_open and may_open. */
static int open_existing(struct task *t, const struct vfs_path *p, int flags, struct file **out)
{
	uint32_t type = p->node->type;
	struct file *f;
	int err;

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
	err = vfs_path_permission_cred(&t->cred, p, open_may(flags));
	if (err < 0)
		return err;
	if (flags & O_NOATIME) {
		struct vfs_attr attr;

		err = vfs_node_getattr(p->node, &attr);
		if (err < 0)
			return err;
		if (t->cred.fsuid != 0 && t->cred.fsuid != attr.uid)
			return -EPERM;
	}
	if (S_ISDIR(type)) {
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
	*out = f;
	return 0;
}

/* open with O_CREAT: resolve the parent, then the last name, following symlinks by hand. */
static int open_create(struct task *t, struct vfs_walk_state *ws, const struct vfs_path *start,
		       const char *path, int flags, struct file **out)
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
		err = vfs_lookup_one(&dir, last.name, &child);
		if (err == -ENOENT) {
			/*
			 * Creating files comes with the writable filesystems (tmpfs, overlay);
			 * until then every mount refuses it as a read-only one would.
			 */
			vfs_path_put(&dir);
			return -EROFS;
		}
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
	err = open_existing(t, &child, flags, out);
	vfs_path_put(&child);
	return err;
}

int vfs_open(struct task *t, int dirfd, const char *path, int flags, unsigned int mode,
	     struct file **out)
{
	struct vfs_walk_state ws = { .cred = &t->cred };
	struct vfs_path root, start, p;
	int err;

	if (flags & O_PATH)
		flags &= O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	if ((flags & (O_DIRECTORY | O_CREAT)) == (O_DIRECTORY | O_CREAT))
		return -EINVAL;
	if (flags & LINUX_O_TMPFILE_BIT) {
		if ((flags & (LINUX_O_TMPFILE_BIT | O_DIRECTORY | O_CREAT)) !=
			    (LINUX_O_TMPFILE_BIT | O_DIRECTORY) ||
		    !(open_may(flags) & VFS_MAY_WRITE))
			return -EINVAL;
		return -EOPNOTSUPP; /* no filesystem supports it yet */
	}
	if (!*path)
		return -ENOENT;

	vfs_task_root(t, &root);
	ws.root = &root;
	if (path[0] == '/') {
		vfs_path_copy(&start, &root);
	} else {
		err = vfs_dirfd_path(t, dirfd, &start);
		if (err < 0) {
			vfs_path_put(&root);
			return err;
		}
	}
	if (flags & O_CREAT) {
		err = open_create(t, &ws, &start, path, flags, out);
	} else {
		int lf = (flags & O_NOFOLLOW) ? 0 : VFS_LOOKUP_FOLLOW;

		if (flags & O_DIRECTORY)
			lf |= VFS_LOOKUP_DIRECTORY;
		err = vfs_walk_state(&ws, &start, path, lf, &p, NULL);
		if (err == 0) {
			err = open_existing(t, &p, flags, out);
			vfs_path_put(&p);
		}
	}
	vfs_path_put(&start);
	vfs_path_put(&root);
	return err;
}
