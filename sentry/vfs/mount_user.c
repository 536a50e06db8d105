/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What guests do to the mount tree: chroot(2), mount(2) of a filesystem the caller made, bind
 * mounts, remounts, propagation types, moves, umount2(2), pivot_root(2) and mount namespaces
 * (copies of a tree). Everything happens in the sentry's own tree: nothing reaches the host.
 */
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <pthread.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "common/err.h"
#include "common/util.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/nsproxy.h"
#include "sentry/kernel/task.h"
#include "sentry/vfs/fs.h"
#include "sentry/vfs/internal.h"
#include "sentry/vfs/mount_user.h"

/* nsproxy.c (weak: the VFS's unit tests link without the kernel's namespaces; none of them
 * reaches these calls). */
#pragma weak nsproxy_initial
#pragma weak task_nsproxy
#pragma weak task_ns_capable
#pragma weak user_ns_get
#pragma weak user_ns_put

/*
 * Guest changes of the mount tree are serialised by the op lock (Linux's namespace_sem), so
 * that the peer groups and slaves a propagation reads stay as they are while it copies. It is
 * taken first, before any other lock of the VFS.
 */
static pthread_mutex_t op_lock = PTHREAD_MUTEX_INITIALIZER;

static uint32_t next_ns_index;

/*
 * Peer groups: how many mounts each shared:N has (N indexes the array), so that MS_SLAVE of a
 * mount with no peer makes it private, as Linux. The peer lock is a leaf.
 */
static pthread_mutex_t peer_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t *peer_count; /* protected by peer_lock */
static uint64_t peer_cap, next_peer_group = 1;

/* m joins group (0: a new one). Returns the group, or 0 when out of memory. */
static uint64_t peer_join(uint64_t group)
{
	pthread_mutex_lock(&peer_lock);
	if (!group)
		group = next_peer_group++;
	if (group >= peer_cap) {
		uint64_t ncap = peer_cap ? peer_cap * 2 : 64;
		uint32_t *nv;

		while (ncap <= group)
			ncap *= 2;
		nv = realloc(peer_count, ncap * sizeof(*nv));
		if (!nv) {
			pthread_mutex_unlock(&peer_lock);
			return 0;
		}
		memset(nv + peer_cap, 0, (ncap - peer_cap) * sizeof(*nv));
		peer_count = nv;
		peer_cap = ncap;
	}
	peer_count[group]++;
	pthread_mutex_unlock(&peer_lock);
	return group;
}

static void peer_leave(uint64_t group)
{
	pthread_mutex_lock(&peer_lock);
	if (group && group < peer_cap && peer_count[group])
		peer_count[group]--;
	pthread_mutex_unlock(&peer_lock);
}

static uint32_t peer_members(uint64_t group)
{
	uint32_t n = 0;

	pthread_mutex_lock(&peer_lock);
	if (group < peer_cap)
		n = peer_count[group];
	pthread_mutex_unlock(&peer_lock);
	return n;
}

/* m stops being shared (mount lock held, or m not yet visible). */
static void make_unshared(struct vfs_mount *m)
{
	if (m->propagation == MS_SHARED)
		peer_leave(m->peer_group);
	m->peer_group = 0;
}

/*
 * Linux's fs.mount-max (its default): guests may not make mounts past this many in the sentry
 * (all trees and namespaces together): -ENOSPC, so that a loop of recursive binds or namespace
 * copies cannot grow the sentry's memory without bound.
 */
#define VFS_MOUNT_MAX 100000

static int mount_room(long more)
{
	return vfs_mount_count() + more > VFS_MOUNT_MAX ? -ENOSPC : 0;
}

/* --- helpers on the tree (the mount lock held) --- */

/* The top of m's tree: the mount with no parent, or the detached mount m hangs from. */
static struct vfs_mount *tree_top(struct vfs_mount *m)
{
	while (m->parent && !m->detached)
		m = m->parent;
	return m;
}

/* Whether node is n or below it in one filesystem. */
static bool node_below(struct vfs_node *node, struct vfs_node *n)
{
	for (; node; node = node->parent)
		if (node == n)
			return true;
	return false;
}

/* Whether (m, node) is at or below (top, top_node) in the tree (mount lock held). */
static bool path_below(struct vfs_mount *m, struct vfs_node *node, struct vfs_mount *top,
		       struct vfs_node *top_node)
{
	for (;;) {
		if (m == top)
			return node_below(node, top_node);
		if (!m->parent || m->detached)
			return false;
		node = m->mountpoint;
		m = m->parent;
	}
}

/* A growable array of mounts, each referenced. */
struct mount_vec {
	struct vfs_mount **v;
	size_t n, cap;
};

static int vec_push(struct mount_vec *mv, struct vfs_mount *m)
{
	if (mv->n == mv->cap) {
		size_t ncap = mv->cap ? mv->cap * 2 : 16;
		struct vfs_mount **nv = realloc(mv->v, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		mv->v = nv;
		mv->cap = ncap;
	}
	vfs_mount_get(m);
	mv->v[mv->n++] = m;
	return 0;
}

static void vec_put(struct mount_vec *mv)
{
	for (size_t i = 0; i < mv->n; i++)
		vfs_mount_put(mv->v[i]);
	free(mv->v);
	mv->v = NULL;
	mv->n = mv->cap = 0;
}

/* m and every mount below it, parents first (mount lock held). */
static int collect(struct vfs_mount *top, struct mount_vec *mv)
{
	for (struct vfs_mount *m = top; m; m = vfs_mount_next_below(m, top)) {
		int err = vec_push(mv, m);

		if (err < 0)
			return err;
	}
	return 0;
}

/* Takes one attached mount m (no children left) out of its tree (mount lock held). */
static void detach_one(struct vfs_mount *m, struct mount_vec *drop)
{
	list_del(&m->sibling);
	list_init(&m->sibling);
	__atomic_sub_fetch(&m->mountpoint->mounts, 1, __ATOMIC_RELEASE);
	__atomic_sub_fetch(&m->mountpoint->fs->mounted_on, 1, __ATOMIC_RELEASE);
	m->detached = true;
	make_unshared(m);
	m->propagation = 0;
	/* The tree's reference goes to drop, which already holds one of its own. */
	vec_push(drop, m);
	vfs_mount_put(m); /* out of memory for drop: the last put here (no callback runs) */
}

/*
 * Takes m out of its tree, its submounts first, iteratively (mount lock held for writing).
 * The tree's references go into drop, for the caller to put once the lock is released; each
 * mount keeps its parent and mountpoint (references) until it is freed, so that walks inside
 * it stay valid. A top (no parent) stays where it is; its submounts go.
 */
static void umount_tree_locked(struct vfs_mount *top, struct mount_vec *drop)
{
	struct vfs_mount *m = top;

	for (;;) {
		struct vfs_mount *parent;

		while (!list_empty(&m->children))
			m = list_first_entry(&m->children, struct vfs_mount, sibling);
		if (m == top)
			break;
		parent = m->parent;
		detach_one(m, drop);
		m = parent;
	}
	if (!top->detached && top->parent)
		detach_one(top, drop);
}

/* Takes top, a tree made here that could not be attached, apart, and drops the caller's ref. */
static void drop_tree(struct vfs_mount *top)
{
	struct mount_vec drop = { 0 };

	vfs_mount_write_lock();
	umount_tree_locked(top, &drop);
	vfs_mount_write_unlock();
	vec_put(&drop);
	vfs_mount_put(top);
}

/* The caller's root (referenced) and the top of its tree. */
static struct vfs_mount *task_top(struct task *t, struct vfs_path *root)
{
	struct vfs_mount *top;

	vfs_task_root(t, root);
	vfs_mount_read_lock();
	top = tree_top(root->mnt);
	vfs_mount_read_unlock();
	return top;
}

/* Whether m is attached in the caller's tree (Linux's check_mnt). */
static bool in_task_tree(struct task *t, struct vfs_mount *m)
{
	struct vfs_path root;
	bool ok;

	task_top(t, &root);
	vfs_mount_read_lock();
	ok = !m->detached && tree_top(m) == tree_top(root.mnt);
	vfs_mount_read_unlock();
	vfs_path_put(&root);
	return ok;
}

/* --- who may mount --- */

struct user_ns *vfs_mnt_ns_owner(struct task *t)
{
	struct vfs_mnt_ns *ns = t->fs ? t->fs->mnt_ns : NULL;

	return ns ? ns->owner : nsproxy_initial(t->k)->user;
}

bool vfs_may_mount(struct task *t)
{
	return task_ns_capable(t, vfs_mnt_ns_owner(t), CAP_SYS_ADMIN);
}

/* Whether m has a locked submount on node or below it (mount lock held). */
static bool has_locked_children(struct vfs_mount *m, struct vfs_node *node)
{
	struct vfs_mount *c;

	list_for_each_entry(c, &m->children, sibling)
		if ((c->locks & VFS_MNT_LOCKED) && node_below(c->mountpoint, node))
			return true;
	return false;
}

/* --- chroot --- */

int vfs_chroot(struct task *t, const char *path)
{
	struct vfs_path p, old;
	int err = vfs_lookup_at(t, AT_FDCWD, path, 0, &p);

	if (err < 0)
		return err;
	if (!vfs_node_is_dir(p.node)) {
		err = -ENOTDIR;
		goto out_put;
	}
	err = vfs_path_permission(t, &p, VFS_MAY_EXEC);
	if (err < 0)
		goto out_put;
	/* Linux: CAP_SYS_CHROOT in the caller's own user namespace. */
	if (!task_ns_capable(t, task_nsproxy(t)->user, CAP_SYS_CHROOT)) {
		err = -EPERM;
		goto out_put;
	}
	pthread_mutex_lock(&t->fs->lock);
	old = t->fs->root;
	vfs_path_copy(&t->fs->root, &p);
	pthread_mutex_unlock(&t->fs->lock);
	vfs_path_put(&old);
out_put:
	vfs_path_put(&p);
	return err;
}

/* --- new mounts --- */

/* The mountinfo label of a new mount, or NULL when out of memory. */
static struct vfs_mount_label *label_new(const char *source, const char *fstype,
					 const char *super_opts, const char *root)
{
	struct vfs_mount_label *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->source = strdup(source && *source ? source : "none");
	l->fstype = strdup(fstype);
	l->super_opts = strdup(super_opts ? super_opts : "");
	l->root = strdup(root ? root : "/");
	if (!l->source || !l->fstype || !l->super_opts || !l->root) {
		vfs_mount_label_free(l);
		return NULL;
	}
	return l;
}

static struct vfs_mount_label *label_dup(const struct vfs_mount_label *o)
{
	struct vfs_mount_label *l;

	if (!o)
		return NULL;
	l = label_new(o->source, o->fstype ? o->fstype : "", o->super_opts, o->root);
	if (!l)
		return NULL;
	if (!o->fstype) {
		free(l->fstype);
		l->fstype = NULL;
	}
	if (o->atime)
		l->atime = strdup(o->atime);
	l->super_ro = o->super_ro;
	return l;
}

/* The label's atime word for MS_NOATIME, MS_STRICTATIME or the default relatime. */
static void label_set_atime(struct vfs_mount_label *l, int flags)
{
	const char *w = (flags & MS_NOATIME)	 ? "noatime" :
			(flags & MS_STRICTATIME) ? "" :
						   "relatime";

	if (!l)
		return;
	/* The old word is not freed: a reader of mountinfo may hold it (a few bytes a remount). */
	l->atime = strdup(w);
}

static int propagate_new(struct vfs_mount *dest, struct vfs_node *mp, struct vfs_mount *src);
static void lock_tree(struct vfs_mount *top);

/*
 * Attaches m (a new tree's top) at p (a guest's new mount): the mountpoint's type rules, then
 * the tree, then copies on the mounts p's mount propagates to. Op lock held.
 */
static int attach_new(struct vfs_mount *m, const struct vfs_path *p)
{
	int err;

	vfs_mount_write_lock();
	m->anon_tree = false;
	vfs_mount_write_unlock();
	err = vfs_mount_attach(m, p);
	if (err == 0)
		err = propagate_new(p->mnt, p->node, m);
	return err;
}

static int mount_new_locked(struct task *t, const struct vfs_path *at, struct vfs_fs *fs,
			    struct vfs_node *root, int flags, const char *source,
			    const char *fstype, const char *super_opts)
{
	struct vfs_mount *m;
	int err;

	if (!vfs_node_is_dir(at->node))
		return -ENOTDIR;
	if (!in_task_tree(t, at->mnt))
		return -EINVAL;
	if (mount_room(1) < 0)
		return -ENOSPC;
	m = vfs_mount_create(fs, root, flags & VFS_MNT_FLAGS);
	if (!m)
		return -ENOMEM;
	m->label = label_new(source, fstype, super_opts, "/");
	if (m->label)
		m->label->super_ro = flags & MS_RDONLY;
	label_set_atime(m->label, flags);
	err = attach_new(m, at);
	vfs_mount_put(m);
	return err;
}

int vfs_mount_new(struct task *t, const struct vfs_path *at, struct vfs_fs *fs, int flags,
		  const char *source, const char *fstype, const char *super_opts)
{
	int r;

	pthread_mutex_lock(&op_lock);
	r = mount_new_locked(t, at, fs, fs->root, flags, source, fstype, super_opts);
	pthread_mutex_unlock(&op_lock);
	return r;
}

int vfs_mount_new_root(struct task *t, const struct vfs_path *at, struct vfs_fs *fs,
		       struct vfs_node *root, int flags, const char *source, const char *fstype,
		       const char *super_opts)
{
	int r;

	pthread_mutex_lock(&op_lock);
	r = mount_new_locked(t, at, fs, root, flags, source, fstype, super_opts);
	pthread_mutex_unlock(&op_lock);
	return r;
}

/* The path of node inside its filesystem below from ("/a/b"), after prefix. */
static int node_fs_path(struct vfs_node *from, struct vfs_node *node, const char *prefix, char *buf,
			size_t size)
{
	char *tmp = malloc(VFS_PATH_MAX);
	char *s;
	int n;

	if (!tmp)
		return -ENOMEM;
	s = tmp + VFS_PATH_MAX - 1;
	*s = '\0';
	vfs_rename_read_lock();
	for (; node && node != from; node = node->parent) {
		size_t nl = strlen(node->name);

		if ((size_t)(s - tmp) < nl + 2)
			break;
		s -= nl;
		memcpy(s, node->name, nl);
		*--s = '/';
	}
	vfs_rename_read_unlock();
	if (!strcmp(prefix, "/"))
		prefix = "";
	n = snprintf(buf, size, "%s%s", prefix, *s || *prefix ? s : "/");
	free(tmp);
	return n < (int)size ? 0 : -ENAMETOOLONG;
}

/*
 * How a copy relates to its original (Linux's CL_* flags): COPY_PEERS keeps the propagation
 * (a shared mount's copy is its peer, a slave's a slave of the same master: binds, copies of a
 * namespace in the same user namespace); COPY_TO_SLAVE makes a shared mount's copy its slave
 * (CL_SHARED_TO_SLAVE: a namespace copied into a less privileged user namespace); COPY_SLAVE
 * makes every copy of a shared mount its slave and of another mount private (propagation to a
 * slave).
 */
enum copy_mode { COPY_PEERS, COPY_TO_SLAVE, COPY_SLAVE };

/* A copy of m showing node (a node of m's filesystem), detached: a bind of (m, node). */
static struct vfs_mount *clone_mount(struct vfs_mount *m, struct vfs_node *node,
				     enum copy_mode mode)
{
	struct vfs_mount *c = vfs_mount_create(m->fs, node, m->flags);
	char *root;

	if (!c)
		return NULL;
	if (node == m->root) {
		c->label = label_dup(m->label);
	} else {
		root = malloc(VFS_PATH_MAX);
		if (root &&
		    node_fs_path(m->root, node, m->label && m->label->root ? m->label->root : "/",
				 root, VFS_PATH_MAX) == 0) {
			c->label = label_dup(m->label);
			if (!c->label)
				c->label = label_new(NULL, m->fs->type, NULL, NULL);
			if (c->label) {
				free(c->label->root);
				c->label->root = root;
				root = NULL;
				if (!m->label) {
					/* A derived label: keep deriving type and source. */
					free(c->label->source);
					free(c->label->fstype);
					c->label->source = NULL;
					c->label->fstype = NULL;
					c->label->super_ro = m->flags & MS_RDONLY;
				}
			}
		}
		free(root);
	}
	/* Linux's clone_mnt keeps the lock flags; a bind's top loses VFS_MNT_LOCKED later. */
	c->locks = m->locks;
	if (mode == COPY_PEERS) {
		if (m->propagation == MS_SHARED && peer_join(m->peer_group)) {
			c->propagation = MS_SHARED;
			c->peer_group = m->peer_group;
			c->master = m->master;
		} else if (m->master) {
			c->propagation = MS_SLAVE;
			c->master = m->master;
		}
	} else if (m->propagation == MS_SHARED) {
		c->propagation = MS_SLAVE;
		c->master = m->peer_group;
	} else if (mode == COPY_TO_SLAVE && m->master) {
		c->propagation = MS_SLAVE;
		c->master = m->master;
	}
	return c; /* an unbindable mount's copy (a namespace's) is private, as Linux shows */
}

/* Attaches c on (parent, mountpoint) in the tree (mount lock held for writing). */
static void attach_locked(struct vfs_mount *c, struct vfs_mount *parent, struct vfs_node *mp)
{
	vfs_mount_get(c); /* the tree's */
	c->parent = parent;
	vfs_mount_get(parent);
	c->mountpoint = mp;
	vfs_node_get(mp);
	list_add_tail(&c->sibling, &parent->children);
	__atomic_add_fetch(&mp->mounts, 1, __ATOMIC_RELEASE);
	__atomic_add_fetch(&mp->fs->mounted_on, 1, __ATOMIC_RELEASE);
}

/*
 * Copies the tree below (src, node) (the mounts of src under node with rec; src alone
 * without) as a detached tree whose top shows node. Unbindable submounts are left out but by a
 * namespace copy (olds asked).
 * Returns the top (one reference) or ERR_PTR(-errno); *map receives old/new pairs if asked.
 */
static struct vfs_mount *copy_tree(struct vfs_mount *src, struct vfs_node *node, bool rec,
				   enum copy_mode mode, struct mount_vec *olds,
				   struct mount_vec *news)
{
	struct mount_vec old = { 0 }, made = { 0 };
	struct vfs_mount *top;
	int err = 0;

	if (mount_room(1) < 0)
		return ERR_PTR(-ENOSPC);
	top = clone_mount(src, node, mode);
	if (!top)
		return ERR_PTR(-ENOMEM);
	/* Not a tree propagation reaches until attached (anon_tree: being built). */
	top->anon_tree = true;
	if (vec_push(&old, src) < 0 || vec_push(&made, top) < 0) {
		err = -ENOMEM;
		goto out;
	}
	if (rec) {
		struct mount_vec all = { 0 };

		vfs_mount_write_lock();
		err = collect(src, &all);
		for (size_t i = 1; err == 0 && i < all.n; i++) {
			struct vfs_mount *m = all.v[i], *c;
			size_t pi;

			for (pi = 0; pi < old.n && old.v[pi] != m->parent; pi++)
				;
			if (pi == old.n)
				continue;
			if (pi == 0 && !node_below(m->mountpoint, node))
				continue;
			/* A namespace copy (olds asked) takes unbindable mounts too (Linux's
			 * CL_COPY_UNBINDABLE); binds leave them out. */
			if (m->propagation == MS_UNBINDABLE && !olds) {
				/* Leaving a locked mount out would reveal what it covers (Linux). */
				if (m->locks & VFS_MNT_LOCKED) {
					err = -EPERM;
					break;
				}
				continue;
			}
			if (mount_room(1) < 0) {
				err = -ENOSPC;
				break;
			}
			c = clone_mount(m, m->root, mode);
			if (!c) {
				err = -ENOMEM;
				break;
			}
			attach_locked(c, made.v[pi], m->mountpoint);
			err = vec_push(&old, m);
			if (err == 0)
				err = vec_push(&made, c);
			vfs_mount_put(c);
		}
		vfs_mount_write_unlock();
		vec_put(&all);
	}
out:
	if (err < 0) {
		drop_tree(top);
		top = ERR_PTR(err);
	}
	if (olds && !IS_ERR(top)) {
		*olds = old;
		*news = made;
	} else {
		vec_put(&old);
		vec_put(&made);
	}
	return top;
}

/* Whether src's mount has locked submounts at or below src's node. */
static bool src_has_locked(const struct vfs_path *src)
{
	bool r;

	vfs_mount_read_lock();
	r = has_locked_children(src->mnt, src->node);
	vfs_mount_read_unlock();
	return r;
}

static int mount_bind_locked(struct task *t, const struct vfs_path *src, const struct vfs_path *at,
			     bool rec)
{
	struct vfs_mount *top;
	int err;

	if (!in_task_tree(t, at->mnt) || !in_task_tree(t, src->mnt))
		return -EINVAL;
	if (src->mnt->propagation == MS_UNBINDABLE)
		return -EINVAL;
	/* Linux's graft_tree: a directory on a non-directory or the reverse is ENOTDIR. */
	if (vfs_node_is_dir(at->node) != vfs_node_is_dir(src->node))
		return -ENOTDIR;
	/* Linux's __do_loopback: a bind alone of a mount with locked submounts would show what
	 * they cover. */
	if (!rec && src_has_locked(src))
		return -EINVAL;
	/* Binds of shared mounts are their peers, of slaves slaves of the same master. */
	top = copy_tree(src->mnt, src->node, rec, COPY_PEERS, NULL, NULL);
	if (IS_ERR(top))
		return (int)PTR_ERR(top);
	top->locks &= ~VFS_MNT_LOCKED;
	err = attach_new(top, at);
	if (err < 0)
		drop_tree(top);
	else
		vfs_mount_put(top);
	return err;
}

int vfs_mount_bind(struct task *t, const struct vfs_path *src, const struct vfs_path *at, bool rec)
{
	int r;

	pthread_mutex_lock(&op_lock);
	r = mount_bind_locked(t, src, at, rec);
	pthread_mutex_unlock(&op_lock);
	return r;
}

static struct vfs_mount *mount_clone_tree_locked(struct task *t, const struct vfs_path *src,
						 bool rec)
{
	struct vfs_mount *top;

	if (!in_task_tree(t, src->mnt))
		return ERR_PTR(-EINVAL);
	if (src->mnt->propagation == MS_UNBINDABLE)
		return ERR_PTR(-EINVAL);
	if (!rec && src_has_locked(src))
		return ERR_PTR(-EINVAL);
	top = copy_tree(src->mnt, src->node, rec, COPY_PEERS, NULL, NULL);
	if (!IS_ERR(top)) {
		top->anon_tree = true;
		top->locks &= ~VFS_MNT_LOCKED;
	}
	return top;
}

struct vfs_mount *vfs_mount_clone_tree(struct task *t, const struct vfs_path *src, bool rec)
{
	struct vfs_mount *r;

	pthread_mutex_lock(&op_lock);
	r = mount_clone_tree_locked(t, src, rec);
	pthread_mutex_unlock(&op_lock);
	return r;
}

struct vfs_mount *vfs_mount_detached(struct vfs_fs *fs, int flags, const char *source,
				     const char *fstype, const char *super_opts)
{
	struct vfs_mount *m;

	if (mount_room(1) < 0)
		return ERR_PTR(-ENOSPC);
	m = vfs_mount_create(fs, fs->root, flags & VFS_MNT_FLAGS);
	if (!m)
		return ERR_PTR(-ENOMEM);
	m->label = label_new(source, fstype, super_opts, "/");
	if (m->label)
		m->label->super_ro = flags & MS_RDONLY;
	label_set_atime(m->label, flags);
	m->anon_tree = true;
	return m;
}

static int mount_attach_tree_locked(struct task *t, struct vfs_mount *m, const struct vfs_path *at)
{
	int err;

	if (!in_task_tree(t, at->mnt))
		return -EINVAL;
	if (vfs_node_is_dir(at->node) != vfs_node_is_dir(m->root))
		return -ENOTDIR;
	vfs_mount_write_lock();
	if (!m->anon_tree || m->parent || m->detached) {
		vfs_mount_write_unlock();
		return -EINVAL;
	}
	vfs_mount_write_unlock();
	err = attach_new(m, at);
	if (err < 0 && !m->parent)
		m->anon_tree = true;
	return err;
}

int vfs_mount_attach_tree(struct task *t, struct vfs_mount *m, const struct vfs_path *at)
{
	int r;

	pthread_mutex_lock(&op_lock);
	r = mount_attach_tree_locked(t, m, at);
	pthread_mutex_unlock(&op_lock);
	return r;
}

/* --- propagation (Linux's fs/pnode.c, reduced) --- */

/* Whether m is in a tree that propagation reaches: attached, not being built (mount lock). */
static bool prop_live(struct vfs_mount *m)
{
	struct vfs_mount *top;

	if (m->detached)
		return false;
	top = tree_top(m);
	return !top->detached && !top->anon_tree;
}

static void collect_propagating(struct vfs_mount *m, void *arg)
{
	if ((m->propagation == MS_SHARED || m->master) && prop_live(m))
		vec_push(arg, m);
}

/* The owner of m's tree (mount lock held): NULL for the sandbox's (the initial user ns). */
static struct user_ns *tree_owner(struct vfs_mount *m)
{
	struct vfs_mount *top = tree_top(m);

	return top->ns && top->ns->owner->level ? top->ns->owner : NULL;
}

static bool vec_has(const struct mount_vec *v, struct vfs_mount *m)
{
	for (size_t i = 0; i < v->n; i++)
		if (v->v[i] == m)
			return true;
	return false;
}

/* Every mount of the tree below top becomes shared, a new peer group each (mount lock held). */
static int make_tree_shared(struct vfs_mount *top)
{
	for (struct vfs_mount *m = top; m; m = vfs_mount_next_below(m, top)) {
		if (m->propagation == MS_SHARED)
			continue;
		m->peer_group = peer_join(0);
		if (!m->peer_group)
			return -ENOMEM;
		m->propagation = MS_SHARED;
	}
	return 0;
}

/* One step of a propagation: the copy of tree tmpl that a group's mounts receive. */
struct prop_step {
	uint64_t group;
	struct vfs_mount *tmpl; /* referenced */
	struct vfs_mount *skip; /* the group's mount that has tmpl already */
};

/*
 * After src, a new tree, was attached at (dest, mp): copies of it on every mount dest
 * propagates to (Linux's propagate_mnt): dest's peers get peers of src, the slaves of dest's
 * group slaves of it, and a slave that is shared passes its copy on to its own peers and
 * slaves. A mount whose root does not contain mp gets none. Copies into a tree of another user
 * namespace are locked but for their top. src's mounts become shared first, as Linux's
 * attach_recursive_mnt. Op lock held. 0 or -errno (copies made so far stay).
 */
static int propagate_new(struct vfs_mount *dest, struct vfs_node *mp, struct vfs_mount *src)
{
	struct mount_vec live = { 0 }, mine = { 0 };
	struct prop_step *steps = NULL;
	size_t nsteps = 0, cap = 0;
	struct user_ns *owner;
	int err;

	vfs_mount_write_lock();
	if (dest->propagation != MS_SHARED) {
		vfs_mount_write_unlock();
		return 0;
	}
	err = make_tree_shared(src);
	if (err == 0)
		err = collect(src, &mine);
	if (err == 0)
		vfs_mount_each_existing(collect_propagating, &live);
	owner = tree_owner(dest);
	vfs_mount_write_unlock();
	steps = malloc(sizeof(*steps) * 4);
	cap = 4;
	if (!steps)
		err = -ENOMEM;
	if (err == 0) {
		vfs_mount_get(src);
		steps[nsteps++] = (struct prop_step){ dest->peer_group, src, dest };
	}
	for (size_t si = 0; err == 0 && si < nsteps; si++) {
		struct prop_step st = steps[si];

		for (size_t i = 0; err == 0 && i < live.n; i++) {
			struct vfs_mount *q = live.v[i], *copy;
			struct vfs_path at = { .mnt = q, .node = mp };
			bool peer = q->propagation == MS_SHARED && q->peer_group == st.group;
			bool locked_copy;

			if (q == st.skip || vec_has(&mine, q) || (!peer && q->master != st.group))
				continue;
			if (!node_below(mp, q->root))
				continue; /* mp is not visible in q */
			copy = copy_tree(st.tmpl, st.tmpl->root, true,
					 peer ? COPY_PEERS : COPY_SLAVE, NULL, NULL);
			if (IS_ERR(copy)) {
				err = (int)PTR_ERR(copy);
				break;
			}
			vfs_mount_write_lock();
			locked_copy = tree_owner(q) != owner;
			if (locked_copy) {
				lock_tree(copy);
				copy->locks &= ~VFS_MNT_LOCKED;
			}
			/* A slave that is shared passes the copy on to its peers and slaves. */
			if (!peer && q->propagation == MS_SHARED)
				err = make_tree_shared(copy);
			copy->anon_tree = false;
			vfs_mount_write_unlock();
			if (err == 0)
				err = vfs_mount_attach(copy, &at);
			if (err < 0) {
				drop_tree(copy);
				break;
			}
			if (!peer && q->propagation == MS_SHARED) {
				bool seen = false;

				for (size_t k = 0; k < nsteps; k++)
					seen |= steps[k].group == q->peer_group;
				if (!seen && nsteps == cap) {
					struct prop_step *nv =
						realloc(steps, sizeof(*nv) * cap * 2);

					if (!nv) {
						err = -ENOMEM;
						vfs_mount_put(copy);
						break;
					}
					steps = nv;
					cap *= 2;
				}
				if (!seen) {
					steps[nsteps++] =
						(struct prop_step){ q->peer_group, copy, q };
					continue; /* the step holds the copy's reference */
				}
			}
			vfs_mount_put(copy);
		}
	}
	for (size_t i = 0; i < nsteps; i++)
		vfs_mount_put(steps[i].tmpl);
	free(steps);
	vec_put(&live);
	vec_put(&mine);
	return err;
}

/*
 * Linux's propagate_umount, reduced: after m left (parent, mp), the mounts at mp of every mount
 * parent propagates to that show the same (filesystem, root) go too, when they are not locked
 * and have no submounts (or with MNT_DETACH, with theirs). With drop NULL, only Linux's
 * propagate_mount_busy: -EBUSY when one of them without submounts is in use (a cwd, an open
 * file), else 0. Op and mount (write) locks held.
 */
static int propagate_umount(struct vfs_mount *parent, struct vfs_node *mp, struct vfs_mount *m,
			    int flags, struct mount_vec *drop)
{
	struct mount_vec live = { 0 };
	uint64_t *groups;
	size_t ng = 0, gcap = 8;
	int err = 0;

	if (parent->propagation != MS_SHARED)
		return 0;
	groups = malloc(sizeof(*groups) * gcap);
	if (!groups)
		return drop ? 0 : -ENOMEM;
	groups[ng++] = parent->peer_group;
	vfs_mount_each_existing(collect_propagating, &live);
	for (size_t gi = 0; gi < ng; gi++) {
		for (size_t i = 0; i < live.n; i++) {
			struct vfs_mount *q = live.v[i], *c, *found = NULL;
			bool peer = q->propagation == MS_SHARED && q->peer_group == groups[gi];

			if (q == parent || q->detached || (!peer && q->master != groups[gi]))
				continue;
			if (!peer && q->propagation == MS_SHARED) {
				bool seen = false;

				for (size_t k = 0; k < ng; k++)
					seen |= groups[k] == q->peer_group;
				if (!seen && ng == gcap) {
					uint64_t *nv = realloc(groups, sizeof(*nv) * gcap * 2);

					if (nv) {
						groups = nv;
						gcap *= 2;
					}
				}
				if (!seen && ng < gcap)
					groups[ng++] = q->peer_group;
			}
			list_for_each_entry(c, &q->children, sibling)
				if (c->mountpoint == mp)
					found = c;
			if (!found || found->fs != m->fs || found->root != m->root ||
			    (found->locks & VFS_MNT_LOCKED))
				continue;
			if (!(flags & MNT_DETACH) && !list_empty(&found->children))
				continue;
			if (!drop) {
				/* References beyond the tree's (and live's, when it is shared). */
				if (refcount_read(&found->ref) > 1 + vec_has(&live, found))
					err = -EBUSY;
				continue;
			}
			umount_tree_locked(found, drop);
		}
	}
	free(groups);
	vec_put(&live);
	return err;
}

/* --- changes to mounts --- */

/* Whether p names a mount's root (Linux's path_mounted). */
static bool is_mount_root(const struct vfs_path *p)
{
	return p->node == p->mnt->root;
}

/* The mount's atime choice: MS_NOATIME, MS_STRICTATIME or MS_RELATIME (the label's word). */
static int mount_atime(struct vfs_mount *m)
{
	const char *w = m->label ? m->label->atime : NULL;

	if (w && !strcmp(w, "noatime"))
		return MS_NOATIME;
	if (w && !*w)
		return MS_STRICTATIME;
	return MS_RELATIME;
}

/* Linux's can_change_locked_flags: a remount to flags keeps every locked flag of m. */
static bool can_change_locked_flags(struct vfs_mount *m, int flags)
{
	int l = m->locks;

	if ((l & VFS_MNT_LOCK_READONLY) && !(flags & MS_RDONLY))
		return false;
	if ((l & VFS_MNT_LOCK_NODEV) && !(flags & MS_NODEV))
		return false;
	if ((l & VFS_MNT_LOCK_NOSUID) && !(flags & MS_NOSUID))
		return false;
	if ((l & VFS_MNT_LOCK_NOEXEC) && !(flags & MS_NOEXEC))
		return false;
	/* Without an atime flag a remount keeps the mount's (Linux's path_mount). */
	if ((l & VFS_MNT_LOCK_ATIME) && (flags & (MS_NOATIME | MS_STRICTATIME | MS_RELATIME))) {
		int want = (flags & MS_NOATIME)	    ? MS_NOATIME :
			   (flags & MS_STRICTATIME) ? MS_STRICTATIME :
						      MS_RELATIME;

		if (want != mount_atime(m))
			return false;
	}
	return true;
}

int vfs_mount_remount(struct task *t, const struct vfs_path *p, int flags, bool bind)
{
	struct vfs_mount *m = p->mnt;

	if (!is_mount_root(p) || !in_task_tree(t, m))
		return -EINVAL;
	if (!can_change_locked_flags(m, flags))
		return -EPERM;
	/* Reconfiguring the filesystem itself: CAP_SYS_ADMIN over its user namespace. */
	if (!bind &&
	    !task_ns_capable(t, m->fs->user_ns ? m->fs->user_ns : nsproxy_initial(t->k)->user,
			     CAP_SYS_ADMIN))
		return -EPERM;
	vfs_mount_set_flags(m, flags & VFS_MNT_FLAGS);
	/* Without MS_BIND the superblock's read-only flag changes too (the label's). */
	if (!bind && m->label)
		m->label->super_ro = flags & MS_RDONLY;
	if (m->label && (flags & (MS_NOATIME | MS_STRICTATIME | MS_RELATIME)))
		label_set_atime(m->label, flags);
	vfs_mount_event();
	return 0;
}

static int mount_change_type_locked(struct task *t, const struct vfs_path *p, int type, bool rec)
{
	struct mount_vec v = { 0 };
	int err;

	if (!is_mount_root(p) || !in_task_tree(t, p->mnt))
		return -EINVAL;
	vfs_mount_write_lock();
	err = rec ? collect(p->mnt, &v) : vec_push(&v, p->mnt);
	if (err == 0) {
		for (size_t i = 0; i < v.n; i++) {
			struct vfs_mount *m = v.v[i];

			if (type == MS_SHARED) {
				/* A slave made shared stays a slave too (shared:N master:M). */
				if (m->propagation != MS_SHARED) {
					m->peer_group = peer_join(0);
					if (!m->peer_group) {
						err = -ENOMEM;
						break;
					}
				}
			} else if (type == MS_SLAVE) {
				/* Its peers become its master; with none, its own master stays, and
				 * without one it is private (Linux's do_make_slave). */
				if (m->propagation == MS_SHARED) {
					if (peer_members(m->peer_group) > 1)
						m->master = m->peer_group;
					make_unshared(m);
					if (!m->master) {
						m->propagation = 0;
						continue;
					}
				} else if (m->propagation != MS_SLAVE) {
					continue;
				}
			} else {
				make_unshared(m);
				m->master = 0;
			}
			m->propagation = type == MS_PRIVATE ? 0 : type;
		}
	}
	vfs_mount_write_unlock();
	vec_put(&v);
	return err;
}

int vfs_mount_change_type(struct task *t, const struct vfs_path *p, int type, bool rec)
{
	int r;

	pthread_mutex_lock(&op_lock);
	r = mount_change_type_locked(t, p, type, rec);
	pthread_mutex_unlock(&op_lock);
	return r;
}

int vfs_mount_setattr(struct task *t, const struct vfs_path *p, int set, int clr, int atime,
		      int propagation, bool rec)
{
	struct mount_vec v = { 0 };
	bool anon;
	int err;

	pthread_mutex_lock(&op_lock);
	vfs_mount_read_lock();
	anon = tree_top(p->mnt)->anon_tree;
	vfs_mount_read_unlock();
	/* A mount of t's tree, or of a detached one open_tree made (runc: open_tree, then this). */
	if (!is_mount_root(p) || (!anon && !in_task_tree(t, p->mnt))) {
		err = -EINVAL;
		goto out;
	}
	vfs_mount_read_lock();
	err = rec ? collect(p->mnt, &v) : vec_push(&v, p->mnt);
	vfs_mount_read_unlock();
	/* All or nothing (Linux's mount_setattr_prepare): the locked flags of every mount first. */
	for (size_t i = 0; !err && i < v.n; i++) {
		int f = (__atomic_load_n(&v.v[i]->flags, __ATOMIC_ACQUIRE) & ~clr) | set;

		if (!can_change_locked_flags(v.v[i], f | atime))
			err = -EPERM;
	}
	for (size_t i = 0; !err && i < v.n; i++) {
		struct vfs_mount *m = v.v[i];
		int f = (__atomic_load_n(&m->flags, __ATOMIC_ACQUIRE) & ~clr) | set;

		vfs_mount_set_flags(m, f & VFS_MNT_FLAGS);
		if (atime && m->label)
			label_set_atime(m->label, atime);
	}
	if (!err && v.n)
		vfs_mount_event(); /* mountinfo's pollers (the flags changed outside the write lock) */
	if (!err && propagation)
		err = mount_change_type_locked(t, p, propagation, rec);
out:
	pthread_mutex_unlock(&op_lock);
	vec_put(&v);
	return err;
}

static int mount_move_locked(struct task *t, const struct vfs_path *src, const struct vfs_path *at)
{
	struct vfs_mount *m = src->mnt, *old_parent;
	struct vfs_node *old_mp;
	int err = 0;

	if (!is_mount_root(src) || !in_task_tree(t, m) || !in_task_tree(t, at->mnt))
		return -EINVAL;
	if (m->locks & VFS_MNT_LOCKED)
		return -EINVAL;
	if (vfs_node_is_dir(at->node) != vfs_node_is_dir(m->root))
		return -EINVAL; /* Linux's do_move_mount */
	vfs_mount_write_lock();
	if (!m->parent || m->detached) {
		err = -EINVAL;
	} else if (path_below(at->mnt, at->node, m, m->root)) {
		err = -ELOOP; /* into itself */
	} else if (m->parent->propagation == MS_SHARED) {
		err = -EINVAL; /* Linux refuses moving a mount out of a shared parent */
	}
	if (err < 0) {
		vfs_mount_write_unlock();
		return err;
	}
	old_parent = m->parent;
	old_mp = m->mountpoint;
	list_del(&m->sibling);
	__atomic_sub_fetch(&old_mp->mounts, 1, __ATOMIC_RELEASE);
	__atomic_sub_fetch(&old_mp->fs->mounted_on, 1, __ATOMIC_RELEASE);
	attach_locked(m, at->mnt, at->node);
	vfs_mount_put(m); /* attach_locked took a second tree reference */
	vfs_mount_write_unlock();
	vfs_mount_put(old_parent);
	vfs_node_put(old_mp);
	/* Under a shared mount the moved tree propagates as a new one (attach_recursive_mnt). */
	return propagate_new(at->mnt, at->node, m);
}

int vfs_mount_move(struct task *t, const struct vfs_path *src, const struct vfs_path *at)
{
	int r;

	pthread_mutex_lock(&op_lock);
	r = mount_move_locked(t, src, at);
	pthread_mutex_unlock(&op_lock);
	return r;
}

static int umount_locked(struct task *t, const struct vfs_path *p, int flags)
{
	struct vfs_mount *m = p->mnt;
	struct vfs_path root;
	struct mount_vec drop = { 0 };
	int err = 0;

	if (!is_mount_root(p) || !in_task_tree(t, m))
		return -EINVAL;
	/* Linux's can_umount: a locked mount stays (what it covers stays hidden), even lazily. */
	if (m->locks & VFS_MNT_LOCKED)
		return -EINVAL;
	if ((flags & MNT_FORCE) && !cred_capable(&t->cred, CAP_SYS_ADMIN))
		return -EPERM;
	vfs_task_root(t, &root);
	if (flags & MNT_EXPIRE) {
		/* Expiry marks are not kept: every mount counts as in use since the last call. */
		err = (m == root.mnt || (flags & (MNT_FORCE | MNT_DETACH))) ? -EINVAL : -EAGAIN;
		vfs_path_put(&root);
		return err;
	}
	vfs_mount_write_lock();
	if (m == root.mnt && !(flags & MNT_DETACH)) {
		/* Linux remounts the caller's root read-only here; husk answers EBUSY. */
		err = -EBUSY;
	} else if (!m->parent) {
		/* The top of the tree (the sandbox's root): nothing below it to fall back on. */
		err = -EINVAL;
	} else if (!(flags & MNT_DETACH)) {
		/* Busy: submounts, or references beyond the tree's and this call's (a cwd, a root,
		 * an open file). */
		if (!list_empty(&m->children) || refcount_read(&m->ref) > 2)
			err = -EBUSY;
		else
			err = propagate_umount(m->parent, m->mountpoint, m, flags, NULL);
	}
	if (err == 0) {
		struct vfs_mount *parent = m->parent;
		struct vfs_node *mp = m->mountpoint;

		/* m keeps its parent and mountpoint references until freed: drop holds it. */
		umount_tree_locked(m, &drop);
		propagate_umount(parent, mp, m, flags, &drop);
	}
	vfs_mount_write_unlock();
	vec_put(&drop);
	vfs_path_put(&root);
	return err;
}

int vfs_umount(struct task *t, const struct vfs_path *p, int flags)
{
	int r;

	pthread_mutex_lock(&op_lock);
	r = umount_locked(t, p, flags);
	pthread_mutex_unlock(&op_lock);
	return r;
}

/* --- pivot_root --- */

/* The kernel's (sentry/kernel/pid.c): weak, as the vfs unit tests link without it. */
#pragma weak pid_for_each_task

struct fs_vec {
	struct fs_context **v;
	size_t n, cap;
};

/* Adds t's fs context (a new reference) to the vector, once. tree_lock held. */
static int collect_fs(struct task *t, void *arg)
{
	struct fs_vec *fv = arg;
	struct fs_context *fs = task_get_fs(t);

	if (!fs)
		return 0;
	for (size_t i = 0; i < fv->n; i++) {
		if (fv->v[i] == fs) {
			fs_context_put(fs);
			return 0;
		}
	}
	if (fv->n == fv->cap) {
		size_t ncap = fv->cap ? fv->cap * 2 : 16;
		struct fs_context **nv = realloc(fv->v, ncap * sizeof(*nv));

		if (!nv) {
			fs_context_put(fs);
			return -ENOMEM;
		}
		fv->v = nv;
		fv->cap = ncap;
	}
	fv->v[fv->n++] = fs;
	return 0;
}

/* Moves fs's root and cwd from old to new where they are exactly old. */
static void move_fs_refs(struct fs_context *fs, const struct vfs_path *old,
			 const struct vfs_path *new)
{
	struct vfs_path put[2] = { 0 };

	pthread_mutex_lock(&fs->lock);
	if (fs->root.mnt == old->mnt && fs->root.node == old->node) {
		put[0] = fs->root;
		vfs_path_copy(&fs->root, new);
	}
	if (fs->cwd.mnt == old->mnt && fs->cwd.node == old->node) {
		put[1] = fs->cwd;
		vfs_path_copy(&fs->cwd, new);
	}
	pthread_mutex_unlock(&fs->lock);
	if (put[0].mnt)
		vfs_path_put(&put[0]);
	if (put[1].mnt)
		vfs_path_put(&put[1]);
}

/*
 * Linux's chroot_fs_refs after pivot_root: every process whose root or cwd is the old root (its
 * mount and node: so only in the caller's mount namespace) gets the new one. The caller's own
 * context first, so that it moves even when the process table cannot be walked (out of memory).
 */
static void chroot_fs_refs(struct task *t, const struct vfs_path *old, const struct vfs_path *new)
{
	struct fs_vec fv = { 0 };

	move_fs_refs(t->fs, old, new);
	if (!pid_for_each_task) /* the unit tests' fake kernel has no process table */
		return;
	pthread_mutex_lock(&t->k->tree_lock);
	pid_for_each_task(t->k, collect_fs, &fv);
	pthread_mutex_unlock(&t->k->tree_lock);
	for (size_t i = 0; i < fv.n; i++) {
		move_fs_refs(fv.v[i], old, new);
		fs_context_put(fv.v[i]);
	}
	free(fv.v);
}

/* Whether m is attached in the tree whose top is top (mount lock held). */
static bool in_tree_locked(struct vfs_mount *m, struct vfs_mount *top)
{
	return !m->detached && tree_top(m) == top;
}

static bool fs_ns_owns(struct fs_context *fs, struct vfs_mount *top)
{
	return fs->mnt_ns && fs->mnt_ns->root == top;
}

static int pivot_root_locked(struct task *t, const struct vfs_path *new_root,
			     const struct vfs_path *put_old)
{
	struct vfs_mount *nm = new_root->mnt, *om = put_old->mnt, *rm, *top;
	struct vfs_mount *ex_parent = NULL, *root_parent = NULL;
	struct vfs_node *ex_mp = NULL, *root_mp = NULL;
	struct vfs_path root, newp;
	int err = 0;

	if (!vfs_node_is_dir(new_root->node) || !vfs_node_is_dir(put_old->node))
		return -ENOTDIR;
	top = task_top(t, &root);
	rm = root.mnt;
	vfs_mount_write_lock();
	if (!in_tree_locked(nm, top) || !in_tree_locked(rm, top) || !in_tree_locked(om, top))
		err = -EINVAL;
	else if (nm->propagation == MS_SHARED || om->propagation == MS_SHARED ||
		 (nm->parent && nm->parent->propagation == MS_SHARED) ||
		 (rm->parent && rm->parent->propagation == MS_SHARED))
		err = -EINVAL;
	else if (nm == rm || om == rm)
		err = -EBUSY;
	else if (root.node != rm->root || new_root->node != nm->root || !nm->parent)
		err = -EINVAL; /* not mountpoints, or new_root not attached */
	else if (nm->locks & VFS_MNT_LOCKED)
		err = -EINVAL; /* it would uncover what it hides */
	else if (!rm->parent && !fs_ns_owns(t->fs, rm))
		err = -EINVAL; /* the sandbox's own root is its tree's top, as Linux's rootfs */
	else if (!path_below(om, put_old->node, nm, nm->root))
		err = -EINVAL; /* put_old not under new_root */
	else if (!path_below(nm, new_root->node, rm, root.node))
		err = -EINVAL; /* new_root not under the root */
	if (err < 0) {
		vfs_mount_write_unlock();
		vfs_path_put(&root);
		return err;
	}
	/* new_root leaves its place; the old root goes on put_old; new_root takes its place. */
	ex_parent = nm->parent;
	ex_mp = nm->mountpoint;
	list_del(&nm->sibling);
	__atomic_sub_fetch(&ex_mp->mounts, 1, __ATOMIC_RELEASE);
	__atomic_sub_fetch(&ex_mp->fs->mounted_on, 1, __ATOMIC_RELEASE);
	if (rm->parent) {
		root_parent = rm->parent;
		root_mp = rm->mountpoint;
		list_del(&rm->sibling);
		__atomic_sub_fetch(&root_mp->mounts, 1, __ATOMIC_RELEASE);
		__atomic_sub_fetch(&root_mp->fs->mounted_on, 1, __ATOMIC_RELEASE);
	}
	/* Linux: the old root's lock goes to the new root, which takes its place. */
	if (rm->locks & VFS_MNT_LOCKED) {
		nm->locks |= VFS_MNT_LOCKED;
		rm->locks &= ~VFS_MNT_LOCKED;
	}
	/* rm's old reference (the tree's, or the namespace's for a top) is replaced here. */
	attach_locked(rm, om, put_old->node);
	vfs_mount_put(rm);
	if (root_parent) {
		attach_locked(nm, root_parent, root_mp);
		vfs_mount_put(nm);
	} else {
		/* new_root becomes the namespace's top: the tree's reference becomes the ns's. */
		nm->parent = NULL;
		nm->mountpoint = NULL;
		t->fs->mnt_ns->root = nm;
		nm->ns = t->fs->mnt_ns;
		rm->ns = NULL;
	}
	vfs_mount_write_unlock();
	vfs_mount_put(ex_parent);
	vfs_node_put(ex_mp);
	vfs_mount_put(root_parent);
	vfs_node_put(root_mp);
	newp.mnt = nm;
	newp.node = nm->root;
	chroot_fs_refs(t, &root, &newp);
	vfs_path_put(&root);
	return 0;
}

int vfs_pivot_root(struct task *t, const struct vfs_path *new_root, const struct vfs_path *put_old)
{
	int r;

	pthread_mutex_lock(&op_lock);
	r = pivot_root_locked(t, new_root, put_old);
	pthread_mutex_unlock(&op_lock);
	return r;
}

/* --- mount namespaces --- */

void vfs_mnt_ns_get(struct vfs_mnt_ns *ns)
{
	refcount_inc(&ns->ref);
}

void vfs_mnt_ns_put(struct vfs_mnt_ns *ns)
{
	struct mount_vec drop = { 0 };
	struct vfs_mount *c;

	if (!ns || !refcount_dec(&ns->ref))
		return;
	/* The namespace's mounts go with it (Linux's put_mnt_ns: umount_tree of the whole tree),
	 * not while a propagation copies onto them. */
	pthread_mutex_lock(&op_lock);
	vfs_mount_write_lock();
	while (!list_empty(&ns->root->children)) {
		c = list_first_entry(&ns->root->children, struct vfs_mount, sibling);
		umount_tree_locked(c, &drop);
	}
	ns->root->detached = true;
	ns->root->ns = NULL;
	make_unshared(ns->root);
	vfs_mount_write_unlock();
	pthread_mutex_unlock(&op_lock);
	vec_put(&drop);
	vfs_mount_put(ns->root);
	user_ns_put(ns->owner);
	free(ns);
}

/* Moves *p onto its copy if its mount is one of olds. */
static void move_path(struct vfs_path *p, const struct mount_vec *olds,
		      const struct mount_vec *news)
{
	for (size_t i = 0; i < olds->n; i++) {
		if (p->mnt == olds->v[i]) {
			vfs_mount_get(news->v[i]);
			vfs_mount_put(p->mnt);
			p->mnt = news->v[i];
			return;
		}
	}
}

/*
 * Linux's lock_mnt_tree: every mount of a copy made for a less privileged user namespace keeps
 * its flags, and all but the top are locked to their parents (mount lock held).
 */
static void lock_tree(struct vfs_mount *top)
{
	for (struct vfs_mount *m = top; m; m = vfs_mount_next_below(m, top)) {
		int l = VFS_MNT_LOCK_ATIME;

		if (m->flags & MS_RDONLY)
			l |= VFS_MNT_LOCK_READONLY;
		if (m->flags & MS_NODEV)
			l |= VFS_MNT_LOCK_NODEV;
		if (m->flags & MS_NOSUID)
			l |= VFS_MNT_LOCK_NOSUID;
		if (m->flags & MS_NOEXEC)
			l |= VFS_MNT_LOCK_NOEXEC;
		if (m != top)
			l |= VFS_MNT_LOCKED;
		m->locks |= l;
	}
}

static int mnt_ns_unshare_locked(struct fs_context *fs, struct user_ns *owner,
				 struct vfs_mnt_ns **old_nsp)
{
	struct mount_vec olds = { 0 }, news = { 0 };
	struct vfs_mnt_ns *ns = calloc(1, sizeof(*ns)), *old_ns;
	struct vfs_mount *top, *copy;
	struct vfs_path root;
	uint32_t idx;
	bool less;

	if (!ns)
		return -ENOMEM;
	/* Into a user namespace other than the old namespace's owner (Linux's copy_mnt_ns). */
	less = fs->mnt_ns ? fs->mnt_ns->owner != owner : owner->level != 0;
	fs_context_get_root(fs, &root);
	vfs_mount_read_lock();
	top = tree_top(root.mnt);
	vfs_mount_get(top);
	vfs_mount_read_unlock();
	vfs_path_put(&root);
	/* Every mount copied, peers kept, or for a less privileged owner made slaves. */
	copy = copy_tree(top, top->root, true, less ? COPY_TO_SLAVE : COPY_PEERS, &olds, &news);
	vfs_mount_put(top);
	if (IS_ERR(copy)) {
		free(ns);
		return (int)PTR_ERR(copy);
	}
	vfs_mount_write_lock();
	if (less)
		lock_tree(copy);
	copy->anon_tree = false;
	vfs_mount_write_unlock();
	refcount_init(&ns->ref, 1);
	user_ns_get(owner);
	ns->owner = owner;
	idx = __atomic_fetch_add(&next_ns_index, 1, __ATOMIC_RELAXED);
	/* In Linux's range of namespace inodes, the mnt slot (2) of a 16-apart block. */
	ns->ino = 0xF0000000u + ((0x80000u + idx) & 0xFFFFFu) * 16u + 2u;
	ns->root = copy; /* the copy's reference */
	copy->ns = ns;
	pthread_mutex_lock(&fs->lock);
	move_path(&fs->root, &olds, &news);
	move_path(&fs->cwd, &olds, &news);
	old_ns = fs->mnt_ns;
	fs->mnt_ns = ns;
	pthread_mutex_unlock(&fs->lock);
	vec_put(&olds);
	vec_put(&news);
	*old_nsp = old_ns; /* put by the caller, without the op lock */
	return 0;
}

int vfs_mnt_ns_unshare(struct fs_context *fs, struct user_ns *owner)
{
	struct vfs_mnt_ns *old_ns = NULL;
	int r;

	pthread_mutex_lock(&op_lock);
	r = mnt_ns_unshare_locked(fs, owner, &old_ns);
	pthread_mutex_unlock(&op_lock);
	vfs_mnt_ns_put(old_ns);
	return r;
}

int vfs_mnt_ns_enter(struct task *t, struct task *from)
{
	struct fs_context *fs = t->fs, *src = from->fs;
	struct vfs_path root, old_root, old_cwd;
	struct vfs_mnt_ns *ns = NULL, *old_ns;
	struct user_ns *owner;
	struct vfs_mount *top;

	if (!fs || !src)
		return -EINVAL;
	/* Linux's mntns_install: the caller's fs context is its own (no CLONE_FS sharers). */
	if (refcount_read(&fs->ref) != 1)
		return -EINVAL;
	pthread_mutex_lock(&op_lock);
	pthread_mutex_lock(&src->lock);
	if (src->mnt_ns) {
		ns = src->mnt_ns;
		vfs_mnt_ns_get(ns);
	}
	vfs_path_copy(&root, &src->root);
	pthread_mutex_unlock(&src->lock);
	owner = ns ? ns->owner : nsproxy_initial(t->k)->user;
	if (!task_ns_capable(t, owner, CAP_SYS_ADMIN) ||
	    !task_ns_capable(t, task_nsproxy(t)->user, CAP_SYS_CHROOT) ||
	    !task_ns_capable(t, task_nsproxy(t)->user, CAP_SYS_ADMIN)) {
		pthread_mutex_unlock(&op_lock);
		vfs_path_put(&root);
		vfs_mnt_ns_put(ns);
		return -EPERM;
	}
	/* The root and cwd become the namespace's top, and what is mounted on it (LOOKUP_DOWN). */
	vfs_mount_read_lock();
	top = ns ? ns->root : tree_top(root.mnt);
	vfs_mount_get(top);
	vfs_mount_read_unlock();
	vfs_path_put(&root);
	root.mnt = top; /* the reference just taken */
	root.node = top->root;
	vfs_node_get(root.node);
	vfs_path_follow_mounts(&root);
	pthread_mutex_lock(&fs->lock);
	old_root = fs->root;
	old_cwd = fs->cwd;
	vfs_path_copy(&fs->root, &root);
	vfs_path_copy(&fs->cwd, &root);
	old_ns = fs->mnt_ns;
	fs->mnt_ns = ns; /* the reference taken above */
	pthread_mutex_unlock(&fs->lock);
	pthread_mutex_unlock(&op_lock);
	vfs_path_put(&root);
	vfs_path_put(&old_root);
	vfs_path_put(&old_cwd);
	vfs_mnt_ns_put(old_ns);
	return 0;
}

uint64_t vfs_mnt_ns_ino(struct task *t)
{
	uint64_t ino = 0;

	if (!t->fs)
		return 0;
	pthread_mutex_lock(&t->fs->lock);
	if (t->fs->mnt_ns)
		ino = t->fs->mnt_ns->ino;
	pthread_mutex_unlock(&t->fs->lock);
	return ino;
}
