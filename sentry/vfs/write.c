/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Namespace and attribute changes (Linux's fs/namei.c do_mknodat .. do_renameat2, fs/attr.c,
 * fs/open.c chmod/chown/truncate, fs/utimes.c): resolution, Linux's checks in Linux's order,
 * then the filesystem's op. Every namespace change runs under the namespace lock, so that a
 * name checked missing (or present) stays so until the filesystem acts.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>

/* common/util.h before sys/user.h (through task.h): util.h would redefine PAGE_SIZE. */
#include "common/util.h"
#include "common/err.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/nsproxy.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "sentry/fs/dev/dev.h"
#include "sentry/vfs/internal.h"
#include "sentry/vfs/notify.h"

static pthread_mutex_t ns_lock = PTHREAD_MUTEX_INITIALIZER;

void vfs_ns_lock(void)
{
	pthread_mutex_lock(&ns_lock);
}

void vfs_ns_unlock(void)
{
	pthread_mutex_unlock(&ns_lock);
}

static bool capable(const struct cred *c, int cap)
{
	return cred_capable(c, cap);
}

/* RLIMIT_FSIZE of the calling task, or -1 for none. */
static int64_t fsize_limit(struct task *t)
{
	rlim_t cur;

	if (!t)
		return -1;
	pthread_mutex_lock(&t->tg->lock);
	cur = t->tg->rlimits[RLIMIT_FSIZE].rlim_cur;
	pthread_mutex_unlock(&t->tg->lock);
	return cur == RLIM_INFINITY || cur > INT64_MAX ? -1 : (int64_t)cur;
}

/* Past RLIMIT_FSIZE: SIGXFSZ to the caller and -EFBIG. */
static int fsize_exceeded(struct task *t)
{
	signal_send_task(t, SIGXFSZ, NULL);
	return -EFBIG;
}

static __thread bool internal_writes;

void vfs_internal_writes(bool on)
{
	internal_writes = on;
}

int vfs_write_check_limit(int64_t off, size_t *count)
{
	struct task *t = internal_writes ? NULL : task_current();
	int64_t limit = fsize_limit(t);

	if (limit < 0 || *count == 0)
		return 0;
	if (off >= limit)
		return fsize_exceeded(t);
	if (*count > (uint64_t)(limit - off))
		*count = (size_t)(limit - off);
	return 0;
}

uint32_t vfs_write_kill_priv(uint32_t mode)
{
	struct task *t = internal_writes ? NULL : task_current();
	uint32_t kill = 0;

	if (!S_ISREG(mode))
		return mode;
	if (mode & S_ISUID)
		kill |= S_ISUID;
	if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
		kill |= S_ISGID;
	if (!kill || !t || cred_capable(&t->cred, CAP_FSETID))
		return mode;
	return mode & ~kill;
}

int vfs_may_create(const struct cred *cred, const struct vfs_path *dir, uint32_t mode,
		   struct vfs_create_args *a)
{
	struct vfs_attr da;
	int err;

	if (vfs_mount_readonly(dir->mnt))
		return -EROFS;
	/* Linux's fsuidgid_has_mapping: the new node's owner must have an id in the user
	 * namespace of the filesystem (a guest's mount in a user namespace). */
	if (dir->mnt->fs->user_ns &&
	    (!user_ns_kid_mapped(dir->mnt->fs->user_ns, false, cred->fsuid) ||
	     !user_ns_kid_mapped(dir->mnt->fs->user_ns, true, cred->fsgid)))
		return -EOVERFLOW;
	err = vfs_node_getattr(dir->node, &da);
	if (err < 0)
		return err;
	err = vfs_permission(cred, &da, VFS_MAY_WRITE | VFS_MAY_EXEC);
	if (err < 0)
		return err;
	*a = (struct vfs_create_args){ .mode = mode, .uid = cred->fsuid, .gid = cred->fsgid };
	if (da.mode & S_ISGID) {
		a->gid = da.gid;
		if (S_ISDIR(mode))
			a->mode |= S_ISGID;
		else if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) &&
			 !vfs_cred_in_group(cred, da.gid) && !capable(cred, CAP_FSETID))
			a->mode &= ~(uint32_t)S_ISGID;
	}
	return 0;
}

/* The root and the start of a walk of path for dirfd (new references). */
static int walk_start(struct task *t, int dirfd, const char *path, struct vfs_path *root,
		      struct vfs_path *start)
{
	int err;

	vfs_task_root(t, root);
	if (path[0] == '/') {
		vfs_path_copy(start, root);
		return 0;
	}
	err = vfs_dirfd_path(t, dirfd, start);
	if (err < 0)
		vfs_path_put(root);
	return err;
}

/* Resolves the directory holding path's last component. */
static int walk_parent(struct task *t, int dirfd, const char *path, struct vfs_path *dir,
		       struct vfs_last *last)
{
	struct vfs_walk_state ws = { .cred = &t->cred };
	struct vfs_path root, start;
	int err;

	if (!*path)
		return -ENOENT;
	err = walk_start(t, dirfd, path, &root, &start);
	if (err < 0)
		return err;
	ws.root = &root;
	err = vfs_walk_state(&ws, &start, path, VFS_WALK_PARENT, dir, last);
	vfs_path_put(&start);
	vfs_path_put(&root);
	return err;
}

/* The node named name in dir itself (no mount crossing), or ERR_PTR. */
static struct vfs_node *lookup_here(const struct vfs_path *dir, const char *name)
{
	if (!dir->node->ops->lookup)
		return ERR_PTR(-ENOENT);
	return dir->node->ops->lookup(dir->node, name);
}

/*
 * Linux's filename_create: the parent of path and a last name that does not exist yet.
 * Returns 0 with *dir and *last (caller holds the namespace lock) or -errno.
 */
static int create_prepare(struct task *t, int dirfd, const char *path, bool want_dir,
			  struct vfs_path *dir, struct vfs_last *last)
{
	struct vfs_node *n;
	int err = walk_parent(t, dirfd, path, dir, last);

	if (err < 0)
		return err;
	if (last->type != VFS_LAST_NORM) {
		err = -EEXIST;
		goto out_put;
	}
	n = lookup_here(dir, last->name);
	if (!IS_ERR(n)) {
		vfs_node_put(n);
		err = -EEXIST;
		goto out_put;
	}
	err = (int)PTR_ERR(n);
	if (err != -ENOENT)
		goto out_put;
	/* A trailing slash names a directory: only mkdir may create one. */
	if (last->trailing && !want_dir) {
		err = -ENOENT;
		goto out_put;
	}
	return 0;
out_put:
	vfs_path_put(dir);
	return err;
}

/* Makes node type|perm at path (mknod, mkdir, symlink). */
static int do_create(struct task *t, int dirfd, const char *path, uint32_t mode, uint64_t rdev,
		     const char *target)
{
	struct vfs_create_args a;
	struct vfs_path dir;
	struct vfs_last last;
	struct vfs_node *n;
	int err;

	vfs_ns_lock();
	err = create_prepare(t, dirfd, path, S_ISDIR(mode), &dir, &last);
	if (err < 0)
		goto out_unlock;
	err = vfs_may_create(&t->cred, &dir, mode, &a);
	if (err < 0)
		goto out_put;
	a.rdev = rdev;
	a.target = target;
	if (!dir.node->ops->create) {
		err = -EPERM;
		goto out_put;
	}
	err = dir.node->ops->create(dir.node, last.name, &a, &n);
	if (err == 0) {
		vfs_notify_name(dir.node, last.name, n, VFS_IN_CREATE, 0);
		vfs_node_put(n);
	}
out_put:
	vfs_path_put(&dir);
out_unlock:
	vfs_ns_unlock();
	return err;
}

static unsigned int task_umask(struct task *t)
{
	return t->fs ? fs_context_umask(t->fs) : 022;
}

int vfs_mknodat(struct task *t, int dirfd, const char *path, unsigned int mode, uint64_t dev)
{
	uint32_t type = mode & S_IFMT;

	switch (type) {
	case 0:
		type = S_IFREG;
		break;
	case S_IFREG:
	case S_IFIFO:
	case S_IFSOCK:
		break;
	case S_IFCHR:
	case S_IFBLK:
		/* CAP_MKNOD; whiteouts (0:0 character devices) too. */
		if (!cred_capable(&t->cred, CAP_MKNOD))
			return -EPERM;
		/* The device cgroup's "m" (linux.resources.devices). */
		if (devfs_check(type == S_IFCHR ? 'c' : 'b', vfs_dev_major(dev), vfs_dev_minor(dev),
				DEVFS_ACC_MKNOD) < 0)
			return -EPERM;
		break;
	case S_IFDIR:
		return -EPERM;
	default:
		return -EINVAL;
	}
	if (!S_ISCHR(type) && !S_ISBLK(type))
		dev = 0;
	return do_create(t, dirfd, path, type | (mode & 07777 & ~task_umask(t)), dev, NULL);
}

int vfs_mkdirat(struct task *t, int dirfd, const char *path, unsigned int mode)
{
	return do_create(t, dirfd, path, S_IFDIR | (mode & 01777 & ~task_umask(t)), 0, NULL);
}

int vfs_symlinkat(struct task *t, const char *target, int dirfd, const char *path)
{
	if (!*target)
		return -ENOENT;
	return do_create(t, dirfd, path, S_IFLNK | 0777, 0, target);
}

/* Linux's may_delete: the checks before removing victim (named in dir). */
static int may_delete(const struct cred *cred, const struct vfs_path *dir, struct vfs_node *victim,
		      bool isdir)
{
	struct vfs_attr da, va;
	int err;

	err = vfs_node_getattr(dir->node, &da);
	if (err < 0)
		return err;
	err = vfs_node_getattr(victim, &va);
	if (err < 0)
		return err;
	err = vfs_permission(cred, &da, VFS_MAY_WRITE | VFS_MAY_EXEC);
	if (err < 0)
		return err;
	/* Sticky directories: only the owner of the file or of the directory may remove it. */
	if ((da.mode & S_ISVTX) && cred->fsuid != va.uid && cred->fsuid != da.uid &&
	    !capable(cred, CAP_FOWNER))
		return -EPERM;
	if (isdir) {
		if (!S_ISDIR(va.mode))
			return -ENOTDIR;
		if (victim == dir->mnt->root)
			return -EBUSY;
	} else if (S_ISDIR(va.mode)) {
		return -EISDIR;
	}
	return 0;
}

static bool is_mountpoint(struct vfs_node *n)
{
	return __atomic_load_n(&n->mounts, __ATOMIC_ACQUIRE) > 0;
}

static int do_rmdir(struct task *t, int dirfd, const char *path)
{
	struct vfs_path dir;
	struct vfs_last last;
	struct vfs_node *victim;
	int err;

	vfs_ns_lock();
	err = walk_parent(t, dirfd, path, &dir, &last);
	if (err < 0)
		goto out_unlock;
	switch (last.type) {
	case VFS_LAST_DOTDOT:
		err = -ENOTEMPTY;
		goto out_put;
	case VFS_LAST_DOT:
		err = -EINVAL;
		goto out_put;
	case VFS_LAST_ROOT:
		err = -EBUSY;
		goto out_put;
	default:
		break;
	}
	if (vfs_mount_readonly(dir.mnt)) {
		err = -EROFS;
		goto out_put;
	}
	victim = lookup_here(&dir, last.name);
	if (IS_ERR(victim)) {
		err = (int)PTR_ERR(victim);
		goto out_put;
	}
	err = may_delete(&t->cred, &dir, victim, true);
	if (err == 0 && is_mountpoint(victim))
		err = -EBUSY;
	if (err == 0)
		err = dir.node->ops->rmdir ? dir.node->ops->rmdir(dir.node, last.name, victim) :
					     -EROFS;
	if (err == 0)
		vfs_notify_delete(dir.node, last.name, victim, true, false);
	vfs_node_put(victim);
out_put:
	vfs_path_put(&dir);
out_unlock:
	vfs_ns_unlock();
	return err;
}

static int do_unlink(struct task *t, int dirfd, const char *path)
{
	struct vfs_path dir;
	struct vfs_last last;
	struct vfs_node *victim;
	int err;

	vfs_ns_lock();
	err = walk_parent(t, dirfd, path, &dir, &last);
	if (err < 0)
		goto out_unlock;
	if (last.type != VFS_LAST_NORM) {
		err = -EISDIR;
		goto out_put;
	}
	if (vfs_mount_readonly(dir.mnt)) {
		err = -EROFS;
		goto out_put;
	}
	victim = lookup_here(&dir, last.name);
	if (IS_ERR(victim)) {
		err = (int)PTR_ERR(victim);
		goto out_put;
	}
	if (last.trailing)
		err = vfs_node_is_dir(victim) ? -EISDIR : -ENOTDIR;
	else
		err = may_delete(&t->cred, &dir, victim, false);
	if (err == 0 && is_mountpoint(victim))
		err = -EBUSY;
	if (err == 0)
		err = dir.node->ops->unlink ? dir.node->ops->unlink(dir.node, last.name, victim) :
					      -EROFS;
	if (err == 0)
		vfs_notify_delete(dir.node, last.name, victim, false, true);
	vfs_node_put(victim);
out_put:
	vfs_path_put(&dir);
out_unlock:
	vfs_ns_unlock();
	return err;
}

int vfs_unlinkat(struct task *t, int dirfd, const char *path, int flags)
{
	if (flags & ~AT_REMOVEDIR)
		return -EINVAL;
	return (flags & AT_REMOVEDIR) ? do_rmdir(t, dirfd, path) : do_unlink(t, dirfd, path);
}

/* Linux's may_linkat with fs.protected_hardlinks = 1 (Debian's default). */
static int may_link(const struct cred *cred, struct vfs_node *n)
{
	struct vfs_attr a;
	int err;

	err = vfs_node_getattr(n, &a);
	if (err < 0)
		return err;
	if (cred->fsuid == a.uid)
		return 0;
	/* safe_hardlink_source: a plain regular file the caller may read and write. */
	if (S_ISREG(a.mode) && !(a.mode & S_ISUID) &&
	    (a.mode & (S_ISGID | S_IXGRP)) != (S_ISGID | S_IXGRP) &&
	    vfs_permission(cred, &a, VFS_MAY_READ | VFS_MAY_WRITE) == 0)
		return 0;
	return capable(cred, CAP_FOWNER) ? 0 : -EPERM;
}

int vfs_linkat(struct task *t, int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
	       int flags)
{
	struct vfs_create_args a;
	struct vfs_path old, dir;
	struct vfs_last last;
	struct vfs_node *n;
	int err;

	if (flags & ~(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH))
		return -EINVAL;
	err = vfs_lookup_at(t, olddirfd, oldpath,
			    ((flags & AT_SYMLINK_FOLLOW) ? 0 : AT_SYMLINK_NOFOLLOW) |
				    (flags & AT_EMPTY_PATH),
			    &old);
	if (err < 0)
		return err;
	vfs_ns_lock();
	err = create_prepare(t, newdirfd, newpath, false, &dir, &last);
	if (err < 0)
		goto out_unlock;
	if (dir.mnt != old.mnt) {
		err = -EXDEV;
		goto out_put;
	}
	err = vfs_may_create(&t->cred, &dir, S_IFREG, &a);
	if (err < 0)
		goto out_put;
	if (vfs_node_is_dir(old.node)) {
		err = -EPERM;
		goto out_put;
	}
	err = may_link(&t->cred, old.node);
	if (err < 0)
		goto out_put;
	if (!dir.node->ops->link) {
		err = -EPERM;
		goto out_put;
	}
	err = dir.node->ops->link(dir.node, last.name, old.node, &n);
	if (err == 0) {
		/* Linux's fsnotify_link: the link count, then the new name. */
		vfs_notify_self(old.node, VFS_IN_ATTRIB);
		vfs_notify_name(dir.node, last.name, n, VFS_IN_CREATE, 0);
		vfs_node_put(n);
	}
out_put:
	vfs_path_put(&dir);
out_unlock:
	vfs_ns_unlock();
	vfs_path_put(&old);
	return err;
}

/* Whether a is b or one of b's ancestors in the filesystem (rename lock held). */
static bool is_ancestor(struct vfs_node *a, struct vfs_node *b)
{
	for (; b; b = b->parent)
		if (a == b)
			return true;
	return false;
}

static bool same_file(struct vfs_node *a, struct vfs_node *b)
{
	struct vfs_attr aa, ba;

	if (a == b)
		return true;
	if (vfs_node_getattr(a, &aa) < 0 || vfs_node_getattr(b, &ba) < 0)
		return false;
	return aa.dev == ba.dev && aa.ino == ba.ino;
}

/* The checks of Linux's vfs_rename once both nodes are known (namespace lock held). */
static int rename_checks(struct task *t, const struct vfs_path *od, struct vfs_node *old,
			 const struct vfs_path *nd, struct vfs_node *target, unsigned int flags)
{
	bool is_dir = vfs_node_is_dir(old);
	bool exchange = flags & VFS_RENAME_EXCHANGE;
	int err;

	err = may_delete(&t->cred, od, old, is_dir);
	if (err < 0)
		return err;
	if (target) {
		err = may_delete(&t->cred, nd, target, is_dir);
		if (err == -ENOTDIR || err == -EISDIR) {
			/* Exchanges swap any two types; otherwise the types must agree. */
			if (!exchange)
				return err;
			err = may_delete(&t->cred, nd, target, vfs_node_is_dir(target));
		}
		if (err < 0)
			return err;
	} else {
		struct vfs_create_args a;

		err = vfs_may_create(&t->cred, nd, S_IFREG, &a);
		if (err < 0)
			return err;
	}
	/* A directory that changes parent rewrites its "..": it must be writable. */
	if (od->node != nd->node) {
		if (is_dir) {
			err = vfs_path_permission_cred(&t->cred, &(struct vfs_path){ od->mnt, old },
						       VFS_MAY_WRITE);
			if (err < 0)
				return err;
		}
		if (exchange && target && vfs_node_is_dir(target)) {
			err = vfs_path_permission_cred(
				&t->cred, &(struct vfs_path){ nd->mnt, target }, VFS_MAY_WRITE);
			if (err < 0)
				return err;
		}
	}
	if (is_mountpoint(old) || (target && is_mountpoint(target)))
		return -EBUSY;
	return 0;
}

/* Linux's fsnotify_move for a rename done (twice for an exchange), then the replaced target. */
static void notify_rename(const struct vfs_path *od, const char *oldname, struct vfs_node *old,
			  const struct vfs_path *nd, const char *newname, struct vfs_node *target,
			  unsigned int flags)
{
	/* dnotify's DN_RENAME: a rename within one directory only. */
	uint32_t same = od->node == nd->node ? VFS_IN_DN_RENAME : 0;
	uint32_t cookie;

	if (!vfs_notify_active())
		return;
	cookie = vfs_notify_cookie();
	vfs_notify_name(od->node, oldname, old, VFS_IN_MOVED_FROM | same, cookie);
	vfs_notify_name(nd->node, newname, old, VFS_IN_MOVED_TO, cookie);
	if (target && !(flags & VFS_RENAME_EXCHANGE))
		vfs_notify_self(target, VFS_IN_ATTRIB);
	vfs_notify_self(old, VFS_IN_MOVE_SELF);
	if (target && (flags & VFS_RENAME_EXCHANGE)) {
		cookie = vfs_notify_cookie();
		vfs_notify_name(nd->node, newname, target, VFS_IN_MOVED_FROM | same, cookie);
		vfs_notify_name(od->node, oldname, target, VFS_IN_MOVED_TO, cookie);
		vfs_notify_self(target, VFS_IN_MOVE_SELF);
	} else if (target) {
		vfs_notify_delete(NULL, NULL, target, vfs_node_is_dir(target), false);
	}
}

int vfs_renameat2(struct task *t, int olddirfd, const char *oldpath, int newdirfd,
		  const char *newpath, unsigned int flags)
{
	struct vfs_path od, nd;
	struct vfs_last ol, nl;
	struct vfs_node *old = NULL, *target = NULL;
	bool bad_old, bad_new;
	int err;

	if (flags & ~(VFS_RENAME_NOREPLACE | VFS_RENAME_EXCHANGE | VFS_RENAME_WHITEOUT))
		return -EINVAL;
	if ((flags & VFS_RENAME_EXCHANGE) && (flags & (VFS_RENAME_NOREPLACE | VFS_RENAME_WHITEOUT)))
		return -EINVAL;
	if ((flags & VFS_RENAME_WHITEOUT) && t->cred.euid != 0)
		return -EPERM;

	vfs_ns_lock();
	err = walk_parent(t, olddirfd, oldpath, &od, &ol);
	if (err < 0)
		goto out_unlock;
	err = walk_parent(t, newdirfd, newpath, &nd, &nl);
	if (err < 0)
		goto out_put_od;
	if (od.mnt != nd.mnt) {
		err = -EXDEV;
		goto out_put_nd;
	}
	if (ol.type != VFS_LAST_NORM) {
		err = -EBUSY;
		goto out_put_nd;
	}
	if (nl.type != VFS_LAST_NORM) {
		err = (flags & VFS_RENAME_NOREPLACE) ? -EEXIST : -EBUSY;
		goto out_put_nd;
	}
	if (vfs_mount_readonly(od.mnt)) {
		err = -EROFS;
		goto out_put_nd;
	}
	old = lookup_here(&od, ol.name);
	if (IS_ERR(old)) {
		err = (int)PTR_ERR(old);
		old = NULL;
		goto out_put_nd;
	}
	target = lookup_here(&nd, nl.name);
	if (IS_ERR(target)) {
		err = (int)PTR_ERR(target);
		target = NULL;
		if (err != -ENOENT)
			goto out_put_nodes;
		if (flags & VFS_RENAME_EXCHANGE)
			goto out_put_nodes;
		err = 0;
	} else if (flags & VFS_RENAME_NOREPLACE) {
		err = -EEXIST;
		goto out_put_nodes;
	}
	/* Trailing slashes ask for directories. */
	bad_old = ol.trailing && !vfs_node_is_dir(old);
	bad_new = nl.trailing && !vfs_node_is_dir(old) && !(flags & VFS_RENAME_EXCHANGE);
	if ((flags & VFS_RENAME_EXCHANGE) && nl.trailing && !vfs_node_is_dir(target))
		bad_new = true;
	if (bad_old || bad_new) {
		err = -ENOTDIR;
		goto out_put_nodes;
	}
	/* Neither may be an ancestor of the other's new parent. */
	vfs_rename_read_lock();
	if (is_ancestor(old, nd.node))
		err = -EINVAL;
	else if (target && is_ancestor(target, od.node))
		err = (flags & VFS_RENAME_EXCHANGE) ? -EINVAL : -ENOTEMPTY;
	vfs_rename_read_unlock();
	if (err < 0)
		goto out_put_nodes;
	/* Two names of one file: rename does nothing, successfully. */
	if (target && same_file(old, target))
		goto out_put_nodes;
	err = rename_checks(t, &od, old, &nd, target, flags);
	if (err < 0)
		goto out_put_nodes;
	if (!od.node->ops->rename) {
		err = -EROFS;
		goto out_put_nodes;
	}
	err = od.node->ops->rename(od.node, ol.name, old, nd.node, nl.name, target, flags);
	if (err == 0)
		notify_rename(&od, ol.name, old, &nd, nl.name, target, flags);
out_put_nodes:
	vfs_node_put(old);
	vfs_node_put(target);
out_put_nd:
	vfs_path_put(&nd);
out_put_od:
	vfs_path_put(&od);
out_unlock:
	vfs_ns_unlock();
	return err;
}

/* --- attributes --- */

/* The inotify event of a setattr (Linux's fsnotify_change). */
static uint32_t setattr_event(unsigned int valid)
{
	unsigned int times = VFS_SETATTR_ATIME | VFS_SETATTR_MTIME;
	uint32_t mask = 0;

	if (valid & (VFS_SETATTR_UID | VFS_SETATTR_GID | VFS_SETATTR_MODE))
		mask |= VFS_IN_ATTRIB;
	if (valid & VFS_SETATTR_SIZE)
		mask |= VFS_IN_MODIFY;
	if ((valid & times) == times)
		mask |= VFS_IN_ATTRIB;
	else if (valid & VFS_SETATTR_ATIME)
		mask |= VFS_IN_ACCESS;
	else if (valid & VFS_SETATTR_MTIME)
		mask |= VFS_IN_MODIFY;
	return mask;
}

static int setattr(struct vfs_node *n, const struct vfs_setattr *sa)
{
	uint32_t mask;
	int err;

	if (!n->ops->setattr)
		return -EROFS;
	err = n->ops->setattr(n, sa);
	if (err == 0 && vfs_notify_active()) {
		/* One event per bit, as Linux's fsnotify_dentry reports each set bit. */
		mask = setattr_event(sa->valid);
		for (uint32_t bit = 1; bit <= VFS_IN_ATTRIB; bit <<= 1)
			if (mask & bit)
				vfs_notify_node(n, bit);
	}
	return err;
}

static bool owner_or_capable(const struct cred *c, const struct vfs_attr *a)
{
	return c->fsuid == a->uid || capable(c, CAP_FOWNER);
}

int vfs_path_chmod(struct task *t, const struct vfs_path *p, unsigned int mode)
{
	struct vfs_setattr sa = { .valid = VFS_SETATTR_MODE, .mode = mode & 07777 };
	struct vfs_attr a;
	int err;

	if (vfs_mount_readonly(p->mnt))
		return -EROFS;
	err = vfs_node_getattr(p->node, &a);
	if (err < 0)
		return err;
	if (!owner_or_capable(&t->cred, &a))
		return -EPERM;
	/* Linux's setattr_prepare: only members of the file's group keep S_ISGID. */
	if (!vfs_cred_in_group(&t->cred, a.gid) && !capable(&t->cred, CAP_FSETID))
		sa.mode &= ~(uint32_t)S_ISGID;
	return setattr(p->node, &sa);
}

int vfs_path_chown(struct task *t, const struct vfs_path *p, uint32_t uid, uint32_t gid)
{
	struct vfs_setattr sa = { 0 };
	struct vfs_attr a;
	int err;

	if (vfs_mount_readonly(p->mnt))
		return -EROFS;
	err = vfs_node_getattr(p->node, &a);
	if (err < 0)
		return err;
	if (uid != (uint32_t)-1) {
		if ((uid != a.uid || t->cred.fsuid != a.uid) && !capable(&t->cred, CAP_CHOWN))
			return -EPERM;
		sa.valid |= VFS_SETATTR_UID;
		sa.uid = uid;
	}
	if (gid != (uint32_t)-1) {
		if ((t->cred.fsuid != a.uid ||
		     (gid != a.gid && !vfs_cred_in_group(&t->cred, gid))) &&
		    !capable(&t->cred, CAP_CHOWN))
			return -EPERM;
		sa.valid |= VFS_SETATTR_GID;
		sa.gid = gid;
	}
	/* Changing owners of a non-directory drops set-user-ID, and set-group-ID if executable. */
	if (!S_ISDIR(a.mode)) {
		uint32_t mode = a.mode & 07777;

		if (mode & S_ISUID)
			mode &= ~(uint32_t)S_ISUID;
		if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
			mode &= ~(uint32_t)S_ISGID;
		if (mode != (a.mode & 07777)) {
			sa.valid |= VFS_SETATTR_MODE;
			sa.mode = mode;
		}
	}
	return setattr(p->node, &sa);
}

int vfs_path_utimens(struct task *t, const struct vfs_path *p, const struct timespec *times)
{
	struct vfs_setattr sa = { .valid = VFS_SETATTR_ATIME | VFS_SETATTR_MTIME };
	struct timespec now;
	struct vfs_attr a;
	int err;

	if (times) {
		for (int i = 0; i < 2; i++)
			if (times[i].tv_nsec != UTIME_NOW && times[i].tv_nsec != UTIME_OMIT &&
			    (times[i].tv_nsec < 0 || times[i].tv_nsec >= 1000000000L))
				return -EINVAL;
		if (times[0].tv_nsec == UTIME_OMIT && times[1].tv_nsec == UTIME_OMIT)
			return 0;
	}
	if (vfs_mount_readonly(p->mnt))
		return -EROFS;
	err = vfs_node_getattr(p->node, &a);
	if (err < 0)
		return err;
	clock_gettime(CLOCK_REALTIME, &now);
	sa.atime = sa.mtime = now;
	if (times) {
		bool explicit = false;

		if (times[0].tv_nsec == UTIME_OMIT)
			sa.valid &= ~(unsigned int)VFS_SETATTR_ATIME;
		else if (times[0].tv_nsec != UTIME_NOW)
			sa.atime = times[0], explicit = true;
		if (times[1].tv_nsec == UTIME_OMIT)
			sa.valid &= ~(unsigned int)VFS_SETATTR_MTIME;
		else if (times[1].tv_nsec != UTIME_NOW)
			sa.mtime = times[1], explicit = true;
		/* Setting a time other than now is for the owner only. */
		if (explicit) {
			if (!owner_or_capable(&t->cred, &a))
				return -EPERM;
			return setattr(p->node, &sa);
		}
	}
	/* Now: the owner, or anyone who may write the file. */
	if (!owner_or_capable(&t->cred, &a)) {
		err = vfs_permission(&t->cred, &a, VFS_MAY_WRITE);
		if (err < 0)
			return err;
	}
	return setattr(p->node, &sa);
}

/* Truncation to size: the mode change that goes with it (killing set-user-ID). */
static int do_truncate(struct task *t, struct vfs_node *n, int64_t size)
{
	struct vfs_setattr sa = { .valid = VFS_SETATTR_SIZE | VFS_SETATTR_MTIME, .size = size };
	struct vfs_attr a;
	int err;

	err = vfs_node_getattr(n, &a);
	if (err < 0)
		return err;
	/* inode_newsize_ok: growing past RLIMIT_FSIZE. */
	if (size > a.size && fsize_limit(t) >= 0 && size > fsize_limit(t))
		return fsize_exceeded(t);
	clock_gettime(CLOCK_REALTIME, &sa.mtime);
	if (!capable(&t->cred, CAP_FSETID)) {
		uint32_t mode = a.mode & 07777;

		mode &= ~(uint32_t)S_ISUID;
		if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
			mode &= ~(uint32_t)S_ISGID;
		if (mode != (a.mode & 07777)) {
			sa.valid |= VFS_SETATTR_MODE;
			sa.mode = mode;
		}
	}
	return setattr(n, &sa);
}

int vfs_path_truncate(struct task *t, const struct vfs_path *p, int64_t size)
{
	int err;

	if (size < 0)
		return -EINVAL;
	if (vfs_node_is_dir(p->node))
		return -EISDIR;
	if (!S_ISREG(p->node->type))
		return -EINVAL;
	err = vfs_path_permission_cred(&t->cred, p, VFS_MAY_WRITE);
	if (err < 0)
		return err;
	return do_truncate(t, p->node, size);
}

int vfs_file_truncate(struct task *t, struct file *f, int64_t size)
{
	int acc = __atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_ACCMODE;

	if (size < 0)
		return -EINVAL;
	if (!f->node || !S_ISREG(f->node->type) || (acc != O_WRONLY && acc != O_RDWR))
		return -EINVAL;
	return do_truncate(t, f->node, size);
}
