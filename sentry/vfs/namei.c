/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Path resolution (Linux's fs/namei.c, reduced): components one at a time, `.` and `..`,
 * mount crossing both ways, symlinks (at most VFS_MAXSYMLINKS per resolution), search
 * permission on every directory walked through, and the path-level helpers of vfs.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "common/err.h"
#include "common/util.h"
#include "include/abi/linux/stat.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/vfs/internal.h"

bool vfs_cred_in_group(const struct cred *c, uint32_t gid)
{
	if (c->fsgid == gid)
		return true;
	for (int i = 0; i < c->ngroups && i < (int)ARRAY_SIZE(c->groups); i++)
		if (c->groups[i] == gid)
			return true;
	return false;
}

/*
 * Linux's generic_permission: the owner's, group's or others' bits; then CAP_DAC_READ_SEARCH
 * (reading files, reading and searching directories) and CAP_DAC_OVERRIDE (anything but
 * executing a file with no execute bit). Capabilities, not uid 0, override the bits.
 */
int vfs_permission(const struct cred *c, const struct vfs_attr *attr, int may)
{
	uint32_t mode = attr->mode, bits;

	may &= VFS_MAY_READ | VFS_MAY_WRITE | VFS_MAY_EXEC;
	if (c->fsuid == attr->uid)
		bits = mode >> 6;
	else if (vfs_cred_in_group(c, attr->gid))
		bits = mode >> 3;
	else
		bits = mode;
	if (!(may & ~bits & 7))
		return 0;
	if (S_ISDIR(mode)) {
		if (!(may & VFS_MAY_WRITE) && cred_capable(c, CAP_DAC_READ_SEARCH))
			return 0;
		return cred_capable(c, CAP_DAC_OVERRIDE) ? 0 : -EACCES;
	}
	if (may == VFS_MAY_READ && cred_capable(c, CAP_DAC_READ_SEARCH))
		return 0;
	if ((!(may & VFS_MAY_EXEC) || (mode & 0111)) && cred_capable(c, CAP_DAC_OVERRIDE))
		return 0;
	return -EACCES;
}

int vfs_path_permission_cred(const struct cred *cred, const struct vfs_path *p, int may)
{
	struct vfs_attr attr;
	uint32_t type = p->node->type;
	int err;

	if ((may & VFS_MAY_WRITE) && vfs_mount_readonly(p->mnt) &&
	    (S_ISREG(type) || S_ISDIR(type) || S_ISLNK(type)))
		return -EROFS;
	err = vfs_node_getattr(p->node, &attr);
	if (err < 0)
		return err;
	return vfs_permission(cred, &attr, may);
}

int vfs_path_permission(struct task *t, const struct vfs_path *p, int may)
{
	return vfs_path_permission_cred(&t->cred, p, may);
}

int vfs_path_may_exec(struct task *t, const struct vfs_path *p)
{
	if (!S_ISREG(p->node->type) || (p->mnt->flags & MS_NOEXEC))
		return -EACCES;
	return vfs_path_permission_cred(&t->cred, p, VFS_MAY_EXEC);
}

bool vfs_file_noexec(const struct file *f)
{
	return f->mnt && (__atomic_load_n(&f->mnt->flags, __ATOMIC_ACQUIRE) & MS_NOEXEC);
}

bool vfs_file_nosuid(const struct file *f)
{
	return f->mnt && (__atomic_load_n(&f->mnt->flags, __ATOMIC_ACQUIRE) & MS_NOSUID);
}

/* Search permission on directory p. */
static int may_lookup(const struct vfs_walk_state *ws, const struct vfs_path *p)
{
	struct vfs_attr attr;
	int err;

	/* Either capability searches every directory: skip the attribute fetch. */
	if (cred_capable(ws->cred, CAP_DAC_READ_SEARCH) || cred_capable(ws->cred, CAP_DAC_OVERRIDE))
		return 0;
	err = vfs_node_getattr(p->node, &attr);
	if (err < 0)
		return err;
	return vfs_permission(ws->cred, &attr, VFS_MAY_EXEC);
}

static bool path_equal(const struct vfs_path *a, const struct vfs_path *b)
{
	return a->mnt == b->mnt && a->node == b->node;
}

/*
 * `..`: stays at the walk's root; from a mount's root, goes to its mountpoint first. Returns 0,
 * or -EXDEV when openat2's RESOLVE_BENEATH or RESOLVE_NO_XDEV forbid the step.
 */
static int follow_dotdot(const struct vfs_walk_state *ws, struct vfs_path *cur)
{
	struct vfs_path up;

	for (;;) {
		if (path_equal(cur, ws->root))
			return (ws->resolve & VFS_RESOLVE_BENEATH) ? -EXDEV : 0;
		if (cur->node != cur->mnt->root)
			break;
		if (!cur->mnt->parent || cur->mnt->detached)
			return 0; /* the top of the tree, outside root: stay, as Linux does */
		if (ws->resolve & VFS_RESOLVE_NO_XDEV)
			return -EXDEV;
		/* Under the mount lock: a move or pivot_root may change (and put) the parent. */
		vfs_mount_read_lock();
		up.mnt = cur->mnt->parent;
		up.node = cur->mnt->mountpoint;
		if (cur->mnt->detached || !up.mnt) {
			vfs_mount_read_unlock();
			return 0;
		}
		vfs_path_copy(&up, &up);
		vfs_mount_read_unlock();
		vfs_path_put(cur);
		*cur = up;
	}
	up.node = vfs_node_get_parent(cur->node);
	if (!up.node)
		return 0;
	up.mnt = cur->mnt;
	vfs_mount_get(up.mnt);
	vfs_path_put(cur);
	*cur = up;
	if ((ws->resolve & VFS_RESOLVE_NO_XDEV) &&
	    __atomic_load_n(&cur->node->mounts, __ATOMIC_ACQUIRE) > 0)
		return -EXDEV;
	vfs_path_follow_mounts(cur);
	return 0;
}

int vfs_read_link_target(struct vfs_walk_state *ws, struct vfs_node *node, char **target)
{
	char *buf;
	ssize_t n;

	if (ws->resolve & VFS_RESOLVE_NO_SYMLINKS)
		return -ELOOP;
	if (++ws->nlinks > VFS_MAXSYMLINKS)
		return -ELOOP;
	if (!node->ops->readlink)
		return -EINVAL;
	buf = malloc(VFS_PATH_MAX);
	if (!buf)
		return -ENOMEM;
	n = node->ops->readlink(node, buf, VFS_PATH_MAX - 1);
	if (n < 0 || n == 0 || n >= VFS_PATH_MAX) {
		free(buf);
		return n < 0 ? (int)n : n == 0 ? -ENOENT : -ENAMETOOLONG;
	}
	buf[n] = '\0';
	*target = buf;
	return 0;
}

int vfs_follow_magic_link(struct vfs_walk_state *ws, struct vfs_node *node, struct vfs_path *out)
{
	/* Linux's nd_jump_link: -ELOOP without magic links, -EXDEV for scoped lookups. */
	if (ws->resolve & (VFS_RESOLVE_NO_SYMLINKS | VFS_RESOLVE_NO_MAGICLINKS))
		return -ELOOP;
	if (++ws->nlinks > VFS_MAXSYMLINKS)
		return -ELOOP;
	if (ws->resolve & (VFS_RESOLVE_BENEATH | VFS_RESOLVE_IN_ROOT))
		return -EXDEV;
	return node->ops->get_link(node, out);
}

/* Replaces *bufp by target + rest (rest points into *bufp). */
static int splice_link(char **bufp, const char *target, const char *rest)
{
	size_t tl = strlen(target), rl = strlen(rest);
	char *n = malloc(tl + rl + 1);

	if (!n)
		return -ENOMEM;
	memcpy(n, target, tl);
	memcpy(n + tl, rest, rl + 1);
	free(*bufp);
	*bufp = n;
	return 0;
}

static enum vfs_last_type classify(const char *name, size_t len)
{
	if (name[0] == '.' && len == 1)
		return VFS_LAST_DOT;
	if (name[0] == '.' && name[1] == '.' && len == 2)
		return VFS_LAST_DOTDOT;
	return VFS_LAST_NORM;
}

int vfs_lookup_one(const struct vfs_path *dir, const char *name, struct vfs_path *out)
{
	struct vfs_node *n;

	if (!dir->node->ops->lookup)
		return -ENOENT;
	n = dir->node->ops->lookup(dir->node, name);
	if (IS_ERR(n))
		return (int)PTR_ERR(n);
	out->mnt = dir->mnt;
	vfs_mount_get(out->mnt);
	out->node = n;
	vfs_path_follow_mounts(out);
	return 0;
}

int vfs_walk_state(struct vfs_walk_state *ws, const struct vfs_path *start, const char *path,
		   int flags, struct vfs_path *out, struct vfs_last *last)
{
	size_t len = strlen(path);
	struct vfs_path cur;
	bool must_dir = false;
	char *buf, *p;
	int err = 0;

	if (len == 0)
		return -ENOENT;
	if (len >= VFS_PATH_MAX)
		return -ENAMETOOLONG;
	if (!(*path == '/' ? ws->root : start)->node)
		return -ENOENT; /* nothing mounted yet */
	if (*path == '/' && (ws->resolve & VFS_RESOLVE_BENEATH))
		return -EXDEV;
	buf = strdup(path);
	if (!buf)
		return -ENOMEM;
	p = buf;
	vfs_path_copy(&cur, *p == '/' ? ws->root : start);

	for (;;) {
		struct vfs_path child;
		enum vfs_last_type type;
		char *name, *after, saved;
		bool is_last, trailing;
		size_t nlen;

		while (*p == '/')
			p++;
		if (!*p) {
			/* Nothing but slashes: the path names cur ("/", or a link to "/"). */
			if (flags & VFS_WALK_PARENT) {
				last->name[0] = '\0';
				last->type = VFS_LAST_ROOT;
				last->trailing = false;
			}
			break;
		}
		name = p;
		while (*p && *p != '/')
			p++;
		nlen = (size_t)(p - name);
		after = p;
		while (*after == '/')
			after++;
		is_last = !*after;
		trailing = is_last && after != p;

		if (!vfs_node_is_dir(cur.node)) {
			err = -ENOTDIR;
			break;
		}
		err = may_lookup(ws, &cur);
		if (err < 0)
			break;
		type = classify(name, nlen);
		if (is_last && (flags & VFS_WALK_PARENT)) {
			if (nlen > VFS_NAME_MAX) {
				err = -ENAMETOOLONG;
				break;
			}
			memcpy(last->name, name, nlen);
			last->name[nlen] = '\0';
			last->type = type;
			last->trailing = trailing;
			break;
		}
		if (type == VFS_LAST_DOT || type == VFS_LAST_DOTDOT) {
			if (type == VFS_LAST_DOTDOT)
				err = follow_dotdot(ws, &cur);
			if (err < 0)
				break;
			if (is_last)
				break;
			p = after;
			continue;
		}
		if (nlen > VFS_NAME_MAX) {
			err = -ENAMETOOLONG;
			break;
		}
		saved = *p;
		*p = '\0';
		err = vfs_lookup_one(&cur, name, &child);
		*p = saved;
		if (err < 0)
			break;
		if (child.mnt != cur.mnt && (ws->resolve & VFS_RESOLVE_NO_XDEV)) {
			vfs_path_put(&child);
			err = -EXDEV;
			break;
		}
		if (vfs_node_is_symlink(child.node) && child.node->ops->get_link &&
		    (!is_last || (flags & VFS_LOOKUP_FOLLOW) || trailing)) {
			/* A magic link (procfs): continue from the position it names. */
			struct vfs_path to;

			err = vfs_follow_magic_link(ws, child.node, &to);
			vfs_path_put(&child);
			if (err < 0)
				break;
			vfs_path_put(&cur);
			cur = to;
			if (is_last) {
				must_dir = trailing;
				break;
			}
			p = after;
			continue;
		}
		if (vfs_node_is_symlink(child.node) &&
		    (!is_last || (flags & VFS_LOOKUP_FOLLOW) || trailing)) {
			char *target;

			err = vfs_read_link_target(ws, child.node, &target);
			vfs_path_put(&child);
			if (err < 0)
				break;
			if (target[0] == '/' && (ws->resolve & VFS_RESOLVE_BENEATH)) {
				free(target);
				err = -EXDEV;
				break;
			}
			/* Continue with the target followed by the rest (its slashes included). */
			err = splice_link(&buf, target, p);
			free(target);
			if (err < 0)
				break;
			p = buf;
			if (*p == '/') {
				if ((ws->resolve & VFS_RESOLVE_NO_XDEV) &&
				    cur.mnt != ws->root->mnt) {
					err = -EXDEV;
					break;
				}
				vfs_path_put(&cur);
				vfs_path_copy(&cur, ws->root);
			}
			continue;
		}
		vfs_path_put(&cur);
		cur = child;
		if (is_last) {
			must_dir = trailing;
			break;
		}
		p = after;
	}
	free(buf);
	if (!err && !(flags & VFS_WALK_PARENT) && (must_dir || (flags & VFS_LOOKUP_DIRECTORY)) &&
	    !vfs_node_is_dir(cur.node))
		err = -ENOTDIR;
	if (err < 0) {
		vfs_path_put(&cur);
		return err;
	}
	*out = cur;
	return 0;
}

int vfs_walk(const struct cred *cred, const struct vfs_path *root, const struct vfs_path *start,
	     const char *path, int flags, struct vfs_path *out)
{
	struct vfs_walk_state ws = { .cred = cred, .root = root };

	return vfs_walk_state(&ws, start, path, flags & ~VFS_WALK_PARENT, out, NULL);
}

void vfs_task_root(struct task *t, struct vfs_path *out)
{
	if (t->fs) {
		fs_context_get_root(t->fs, out);
		return;
	}
	out->mnt = t->k->root_mnt;
	out->node = t->k->root_node;
	vfs_path_copy(out, out);
}

int vfs_dirfd_path(struct task *t, int dirfd, struct vfs_path *out)
{
	struct file *f;
	int err;

	if (dirfd == AT_FDCWD) {
		if (t->fs) {
			fs_context_get_cwd(t->fs, out);
			return 0;
		}
		vfs_task_root(t, out);
		return 0;
	}
	f = t->fdt ? fdtable_lookup(t->fdt, dirfd) : NULL;
	if (!f)
		return -EBADF;
	err = vfs_file_path(f, out);
	file_put(f);
	/* A file with no path (none yet: every file has at least an anonymous one) is no dir. */
	return err == -EBADF ? -ENOTDIR : err;
}

int vfs_lookup_at(struct task *t, int dirfd, const char *path, int at_flags, struct vfs_path *out)
{
	struct vfs_walk_state ws = { .cred = &t->cred };
	struct vfs_path root, start;
	int err;

	if (!*path) {
		if (!(at_flags & AT_EMPTY_PATH))
			return -ENOENT;
		return vfs_dirfd_path(t, dirfd, out);
	}
	vfs_task_root(t, &root);
	ws.root = &root;
	if (path[0] == '/') {
		/* An absolute path ignores dirfd, even a bad one. */
		vfs_path_copy(&start, &root);
	} else {
		err = vfs_dirfd_path(t, dirfd, &start);
		if (err < 0) {
			vfs_path_put(&root);
			return err;
		}
	}
	err = vfs_walk_state(&ws, &start, path,
			     (at_flags & AT_SYMLINK_NOFOLLOW) ? 0 : VFS_LOOKUP_FOLLOW, out, NULL);
	vfs_path_put(&start);
	vfs_path_put(&root);
	return err;
}

int vfs_path_getattr(const struct vfs_path *p, struct vfs_attr *attr)
{
	return vfs_node_getattr(p->node, attr);
}

int vfs_path_statfs(const struct vfs_path *p, struct linux_statfs *st)
{
	int err;

	memset(st, 0, sizeof(*st));
	if (!p->node->ops->statfs)
		return -ENOSYS;
	err = p->node->ops->statfs(p->node, st);
	if (err < 0)
		return err;
	/* Linux's calculate_f_flags: ST_VALID and the mount's flags (same bit values). */
	st->f_flags = 0x20 | (p->mnt->flags & (ST_RDONLY | ST_NOSUID | ST_NODEV | ST_NOEXEC));
	if (!st->f_fsid[0] && !st->f_fsid[1]) {
		st->f_fsid[0] = (int32_t)(p->node->fs->dev & 0xffffffffu);
		st->f_fsid[1] = (int32_t)(p->node->fs->dev >> 32);
	}
	return 0;
}

int vfs_path_to_string(const struct vfs_path *root, const struct vfs_path *p, char *buf,
		       size_t size)
{
	static const char unreachable_prefix[] = "(unreachable)";
	/* Built backwards from the end of a scratch page, as Linux's d_path does. */
	char *page = malloc(VFS_PATH_MAX);
	const struct vfs_mount *mnt = p->mnt;
	const struct vfs_node *node = p->node;
	bool unreachable = false;
	int ret = -ENAMETOOLONG;
	size_t len;
	char *s;

	if (!page)
		return -ENOMEM;
	s = page + VFS_PATH_MAX - 1;
	*s = '\0';
	/* Names and parents stay put while the walk up reads them. */
	vfs_rename_read_lock();
	vfs_mount_read_lock();
	while (mnt != root->mnt || node != root->node) {
		size_t nl;

		if (node == mnt->root) {
			if (!mnt->parent || mnt->detached) {
				/* Not below root (a cwd left outside a chroot). */
				unreachable = true;
				break;
			}
			node = mnt->mountpoint;
			mnt = mnt->parent;
			continue;
		}
		if (!node->parent) {
			unreachable = true;
			break;
		}
		nl = strlen(node->name);
		if ((size_t)(s - page) < nl + 1) {
			vfs_mount_read_unlock();
			vfs_rename_read_unlock();
			goto out;
		}
		s -= nl;
		memcpy(s, node->name, nl);
		*--s = '/';
		node = node->parent;
	}
	vfs_mount_read_unlock();
	vfs_rename_read_unlock();
	if (!*s) {
		if (s == page)
			goto out;
		*--s = '/';
	}
	if (unreachable) {
		if ((size_t)(s - page) < sizeof(unreachable_prefix) - 1)
			goto out;
		s -= sizeof(unreachable_prefix) - 1;
		memcpy(s, unreachable_prefix, sizeof(unreachable_prefix) - 1);
	}
	len = strlen(s);
	if (len + 1 > size) {
		ret = -ERANGE;
		goto out;
	}
	memcpy(buf, s, len + 1);
	ret = (int)len;
out:
	free(page);
	return ret;
}

ssize_t vfs_path_readlink(const struct vfs_path *p, char *buf, size_t len)
{
	ssize_t n;

	if (!vfs_node_is_symlink(p->node) || !p->node->ops->readlink)
		return -EINVAL;
	n = p->node->ops->readlink(p->node, buf, len);
	if (n < 0)
		return n;
	return (ssize_t)MIN((size_t)n, len);
}

int vfs_access(struct task *t, int dirfd, const char *path, int mode, int flags)
{
	struct vfs_walk_state ws;
	struct vfs_path root, start, p;
	struct cred cred = t->cred;
	int err;

	if (mode & ~(R_OK | W_OK | X_OK))
		return -EINVAL;
	if (flags & ~(AT_EACCESS | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
		return -EINVAL;
	/*
	 * access(2) asks about the real ids: the whole walk runs with them (Linux's
	 * access_override_creds), and with the capabilities a real uid 0 would have (the
	 * permitted set) or none.
	 */
	if (!(flags & AT_EACCESS)) {
		cred.fsuid = cred.uid;
		cred.fsgid = cred.gid;
		if (!(cred.securebits & SECBIT_NO_SETUID_FIXUP))
			cred.cap_effective = cred.uid == 0 ? cred.cap_permitted : 0;
	}
	ws = (struct vfs_walk_state){ .cred = &cred };
	if (!*path) {
		if (!(flags & AT_EMPTY_PATH))
			return -ENOENT;
		err = vfs_dirfd_path(t, dirfd, &p);
		if (err < 0)
			return err;
	} else {
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
		err = vfs_walk_state(&ws, &start, path,
				     (flags & AT_SYMLINK_NOFOLLOW) ? 0 : VFS_LOOKUP_FOLLOW, &p,
				     NULL);
		vfs_path_put(&start);
		vfs_path_put(&root);
		if (err < 0)
			return err;
	}
	/* Linux's do_faccessat: X_OK of a regular file on a noexec mount is refused first. */
	if ((mode & X_OK) && S_ISREG(p.node->type) && (p.mnt->flags & MS_NOEXEC))
		err = -EACCES;
	else if (mode)
		err = vfs_path_permission_cred(&cred, &p, mode);
	vfs_path_put(&p);
	return err;
}
