/* SPDX-License-Identifier: Apache-2.0 */
/* Mounts, the mount tree, paths (mount + node pairs) and the anonymous mount. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "common/err.h"
#include "common/util.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/waitq.h"
#include "sentry/vfs/fs.h"
#include "sentry/vfs/internal.h"

/*
 * The mount lock: protects every mount's children/sibling lists and writes of node->mounts.
 * Readers are path walks crossing a mountpoint; writers are mount and (later) umount.
 */
static pthread_rwlock_t mount_lock = PTHREAD_RWLOCK_INITIALIZER;
static uint64_t next_mount_id = 1;
static long mounts_alive; /* atomic: mounts made and not yet freed */
/* Every mount made and not yet freed (vfs_mount.all); the all lock is a leaf. */
static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;
static struct list_head all_mounts = LIST_HEAD_INIT(all_mounts);

void vfs_mount_each_existing(void (*fn)(struct vfs_mount *m, void *arg), void *arg)
{
	struct vfs_mount *m;

	pthread_mutex_lock(&all_lock);
	list_for_each_entry(m, &all_mounts, all)
		fn(m, arg);
	pthread_mutex_unlock(&all_lock);
}

/*
 * Mount events (Linux's mnt_namespace.event and .poll, for /proc/PID/mount{s,info}'s poll): one
 * counter for the whole sandbox, bumped by every change of any mount tree, so a namespace's
 * readers also see the other namespaces' changes (a spurious event only makes them re-read).
 */
static uint64_t mount_event; /* atomic */
static struct waitq mount_event_wq = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.waiters = LIST_HEAD_INIT(mount_event_wq.waiters),
	.callbacks = LIST_HEAD_INIT(mount_event_wq.callbacks),
};

void vfs_mount_event(void)
{
	__atomic_add_fetch(&mount_event, 1, __ATOMIC_RELEASE);
	waitq_wake_all(&mount_event_wq);
}

uint64_t vfs_mount_event_read(struct waitq **wq)
{
	if (wq)
		*wq = &mount_event_wq;
	return __atomic_load_n(&mount_event, __ATOMIC_ACQUIRE);
}

long vfs_mount_count(void)
{
	return __atomic_load_n(&mounts_alive, __ATOMIC_RELAXED);
}

void vfs_mount_read_lock(void)
{
	pthread_rwlock_rdlock(&mount_lock);
}

void vfs_mount_read_unlock(void)
{
	pthread_rwlock_unlock(&mount_lock);
}

void vfs_mount_write_lock(void)
{
	pthread_rwlock_wrlock(&mount_lock);
}

void vfs_mount_write_unlock(void)
{
	pthread_rwlock_unlock(&mount_lock);
	/* Every change of a tree is made under the write lock. */
	vfs_mount_event();
}

/* The tree the calling thread sets up instead of k's (vfs_setup_root_begin), or NULL. */
static __thread struct vfs_path *setup_root;

void vfs_setup_root_begin(struct vfs_path *root)
{
	setup_root = root;
}

void vfs_setup_root_end(void)
{
	setup_root = NULL;
}

void vfs_kernel_root(struct kernel *k, struct vfs_path *out)
{
	if (setup_root) {
		*out = *setup_root;
		return;
	}
	out->mnt = k->root_mnt;
	out->node = k->root_node;
}

struct vfs_mount *vfs_kernel_root_mnt(struct kernel *k)
{
	return setup_root ? setup_root->mnt : k->root_mnt;
}

void vfs_kernel_set_root(struct kernel *k, struct vfs_mount *m)
{
	struct vfs_mount **mp = setup_root ? &setup_root->mnt : &k->root_mnt;
	struct vfs_node **np = setup_root ? &setup_root->node : &k->root_node;

	vfs_mount_put(*mp);
	vfs_node_put(*np);
	*mp = m;
	*np = m->root;
	vfs_node_get(m->root);
}

struct vfs_mount *vfs_mount_create(struct vfs_fs *fs, struct vfs_node *root, int flags)
{
	struct vfs_mount *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	refcount_init(&m->ref, 1);
	__atomic_add_fetch(&mounts_alive, 1, __ATOMIC_RELAXED);
	m->id = __atomic_fetch_add(&next_mount_id, 1, __ATOMIC_RELAXED);
	m->flags = flags;
	m->fs = fs;
	vfs_fs_get(fs);
	m->root = root;
	vfs_node_get(root);
	list_init(&m->children);
	list_init(&m->sibling);
	pthread_mutex_lock(&all_lock);
	list_add_tail(&m->all, &all_mounts);
	pthread_mutex_unlock(&all_lock);
	return m;
}

void vfs_mount_get(struct vfs_mount *m)
{
	refcount_inc(&m->ref);
}

void vfs_mount_put(struct vfs_mount *m)
{
	if (!m || !refcount_dec(&m->ref))
		return;
	/* Only a detached mount can get here: the tree holds a reference on attached ones. */
	pthread_mutex_lock(&all_lock);
	list_del(&m->all);
	pthread_mutex_unlock(&all_lock);
	vfs_node_put(m->root);
	vfs_fs_put(m->fs);
	vfs_node_put(m->mountpoint);
	vfs_mount_put(m->parent);
	vfs_mount_label_free(m->label);
	free(m);
	__atomic_sub_fetch(&mounts_alive, 1, __ATOMIC_RELAXED);
}

void vfs_mount_label_free(struct vfs_mount_label *l)
{
	if (!l)
		return;
	free(l->source);
	free(l->fstype);
	free(l->atime);
	free(l->super_opts);
	free(l->root);
	free(l);
}

int vfs_mount_attach(struct vfs_mount *m, const struct vfs_path *mountpoint)
{
	/* A directory on a directory, a non-directory on a non-directory (file binds). */
	if (vfs_node_is_dir(mountpoint->node) != vfs_node_is_dir(m->root))
		return vfs_node_is_dir(m->root) ? -ENOTDIR : -EISDIR;
	vfs_mount_get(m); /* the tree's reference */
	m->parent = mountpoint->mnt;
	vfs_mount_get(m->parent);
	m->mountpoint = mountpoint->node;
	vfs_node_get(m->mountpoint);

	pthread_rwlock_wrlock(&mount_lock);
	list_add_tail(&m->sibling, &m->parent->children);
	__atomic_add_fetch(&m->mountpoint->mounts, 1, __ATOMIC_RELEASE);
	__atomic_add_fetch(&m->mountpoint->fs->mounted_on, 1, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&mount_lock);
	vfs_mount_event();
	if (m->fs->ops && m->fs->ops->mounted)
		m->fs->ops->mounted(m->fs, m);
	return 0;
}

/* Whether a mount on a is one on b (the same node, or the same file of a proc-like fs). */
static bool same_mountpoint(struct vfs_node *a, struct vfs_node *b)
{
	return a == b || (a->fs == b->fs && a->fs->ops->same_node && a->fs->ops->same_node(a, b));
}

/* Whether something may be mounted on node (its own count, or its filesystem's). */
static bool maybe_mounted_on(struct vfs_node *node)
{
	return __atomic_load_n(&node->mounts, __ATOMIC_ACQUIRE) > 0 ||
	       (node->fs && node->fs->ops && node->fs->ops->same_node &&
		__atomic_load_n(&node->fs->mounted_on, __ATOMIC_ACQUIRE) > 0);
}

/* The mount attached last on (mnt, node), with a new reference, or NULL. */
static struct vfs_mount *mount_on(struct vfs_mount *mnt, struct vfs_node *node)
{
	struct vfs_mount *c, *found = NULL;

	pthread_rwlock_rdlock(&mount_lock);
	list_for_each_entry(c, &mnt->children, sibling)
		if (same_mountpoint(c->mountpoint, node))
			found = c;
	if (found)
		vfs_mount_get(found);
	pthread_rwlock_unlock(&mount_lock);
	return found;
}

void vfs_path_follow_mounts(struct vfs_path *p)
{
	/* The counter keeps the lock out of the walk for nodes nothing is mounted on. */
	while (maybe_mounted_on(p->node)) {
		struct vfs_mount *m = mount_on(p->mnt, p->node);

		if (!m)
			return;
		vfs_node_get(m->root);
		vfs_path_put(p);
		p->mnt = m;
		p->node = m->root;
	}
}

void vfs_path_put(struct vfs_path *p)
{
	vfs_node_put(p->node);
	vfs_mount_put(p->mnt);
	p->node = NULL;
	p->mnt = NULL;
}

void vfs_path_copy(struct vfs_path *dst, const struct vfs_path *src)
{
	dst->mnt = src->mnt;
	dst->node = src->node;
	if (dst->mnt)
		vfs_mount_get(dst->mnt);
	if (dst->node)
		vfs_node_get(dst->node);
}

uint64_t vfs_path_mnt_id(const struct vfs_path *p)
{
	return p->mnt ? p->mnt->id : 0;
}

struct vfs_mount *vfs_mount_next_below(struct vfs_mount *m, struct vfs_mount *top)
{
	if (!list_empty(&m->children))
		return list_first_entry(&m->children, struct vfs_mount, sibling);
	/* The next sibling of m or of its nearest ancestor below top. */
	while (m != top && m->sibling.next == &m->parent->children)
		m = m->parent;
	if (m == top)
		return NULL;
	return list_entry(m->sibling.next, struct vfs_mount, sibling);
}

/* Appends top and what is attached below it, parents first, to the array (mount lock held). */
static int mount_collect(struct vfs_mount *top, struct vfs_mount ***v, size_t *n, size_t *cap)
{
	for (struct vfs_mount *m = top; m; m = vfs_mount_next_below(m, top)) {
		if (*n == *cap) {
			size_t ncap = *cap ? *cap * 2 : 16;
			struct vfs_mount **nv = realloc(*v, ncap * sizeof(*nv));

			if (!nv)
				return -ENOMEM;
			*v = nv;
			*cap = ncap;
		}
		vfs_mount_get(m);
		(*v)[(*n)++] = m;
	}
	return 0;
}

int vfs_mount_for_each(struct vfs_mount *top, int (*fn)(struct vfs_mount *m, void *arg), void *arg)
{
	struct vfs_mount **v = NULL;
	size_t n = 0, cap = 0;
	int ret;

	pthread_rwlock_rdlock(&mount_lock);
	ret = mount_collect(top, &v, &n, &cap);
	pthread_rwlock_unlock(&mount_lock);
	for (size_t i = 0; i < n; i++) {
		if (ret == 0)
			ret = fn(v[i], arg);
		vfs_mount_put(v[i]);
	}
	free(v);
	return ret;
}

/* --- the anonymous filesystem --- */

static struct vfs_fs anon_fs;
static struct vfs_node anon_root;
static struct vfs_mount *anon_mnt;
static pthread_once_t anon_once = PTHREAD_ONCE_INIT;

static int anon_getattr(struct vfs_node *n, struct vfs_attr *attr)
{
	*attr = (struct vfs_attr){
		.dev = n->fs->dev,
		.ino = 1,
		.nlink = 2,
		.mode = S_IFDIR | 0500,
		.blksize = 4096,
	};
	return 0;
}

static void anon_release_node(struct vfs_node *n)
{
	/* The anonymous root lives as long as the process. */
}

static void anon_release_fs(struct vfs_fs *fs)
{
}

static const struct vfs_node_ops anon_root_ops = {
	.getattr = anon_getattr,
	.release = anon_release_node,
};

static const struct vfs_fs_ops anon_fs_ops = {
	.release = anon_release_fs,
};

static void anon_init(void)
{
	vfs_fs_init(&anon_fs, &anon_fs_ops, "anon");
	if (vfs_node_init(&anon_root, &anon_root_ops, &anon_fs, NULL, "", S_IFDIR) < 0)
		return;
	anon_fs.root = &anon_root;
	anon_mnt = vfs_mount_create(&anon_fs, &anon_root, MS_NOSUID | MS_NODEV | MS_NOEXEC);
}

struct vfs_mount *vfs_anon_mount(void)
{
	pthread_once(&anon_once, anon_init);
	return anon_mnt;
}

int vfs_anon_node_init(struct vfs_node *n, const struct vfs_node_ops *ops, uint32_t type)
{
	if (!vfs_anon_mount())
		return -ENOMEM;
	return vfs_node_init(n, ops, &anon_fs, NULL, "", type);
}

/*
 * The name in dir, made if missing (a directory 0755, or with isdir false an empty regular file
 * 0644, root's). Symlinks are not followed here. Namespace lock held.
 */
static int lookup_or_make(struct vfs_path *dir, const char *name, bool isdir, struct vfs_path *out)
{
	struct vfs_create_args a = { .mode = isdir ? S_IFDIR | 0755 : S_IFREG | 0644 };
	struct vfs_node *n;
	int err = vfs_lookup_one(dir, name, out);

	if (err != -ENOENT)
		return err;
	if (vfs_mount_readonly(dir->mnt))
		return -EROFS;
	if (!dir->node->ops->create)
		return -EROFS;
	err = dir->node->ops->create(dir->node, name, &a, &n);
	if (err < 0)
		return err;
	out->mnt = dir->mnt;
	vfs_mount_get(out->mnt);
	out->node = n;
	vfs_path_follow_mounts(out);
	return 0;
}

/* Replaces *bufp by target + "/" + rest. Returns 0 or -ENOMEM / -ENAMETOOLONG. */
static int mountpoint_splice(char **bufp, const char *target, const char *rest)
{
	size_t tl = strlen(target), rl = strlen(rest);
	char *n;

	if (tl + rl + 2 > VFS_PATH_MAX)
		return -ENAMETOOLONG;
	n = malloc(tl + rl + 2);
	if (!n)
		return -ENOMEM;
	memcpy(n, target, tl);
	n[tl] = '/';
	memcpy(n + tl + 1, rest, rl + 1);
	free(*bufp);
	*bufp = n;
	return 0;
}

/*
 * Resolves the absolute guest path from k's root for a mount, as runc prepares a mountpoint:
 * symlinks met on the way (the last name's too) are followed inside the guest's tree, and
 * missing names are made, directories but the last, which is a directory when isdir and an
 * empty regular file otherwise. Returns 0 and *out (referenced) or -errno (-EINVAL for a "."
 * or ".." in path itself, -ENOTDIR, -ELOOP, -EROFS when a name is missing on a read-only mount).
 */
static int mountpoint_make(struct kernel *k, const char *path, bool isdir, struct vfs_path *out)
{
	struct vfs_path root;
	struct vfs_path cur;
	struct cred c = { .cap_effective = ~0ULL }; /* root's, with every capability */
	char *buf, *p, target[VFS_PATH_MAX];
	bool from_link = false;
	int err = 0, nlinks = 0;

	vfs_kernel_root(k, &root);

	if (path[0] != '/' || !root.node)
		return -EINVAL;
	buf = strdup(path);
	if (!buf)
		return -ENOMEM;
	vfs_path_copy(&cur, &root);
	vfs_path_follow_mounts(&cur);
	vfs_ns_lock();
	p = buf;
	for (;;) {
		struct vfs_path next;
		char *name, *rest;
		bool last;
		ssize_t n;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		name = p;
		rest = strchrnul(p, '/');
		p = *rest ? rest + 1 : rest;
		*rest = '\0';
		for (rest = p; *rest == '/'; rest++)
			;
		last = !*rest;
		if (!vfs_node_is_dir(cur.node)) {
			err = -ENOTDIR;
			break;
		}
		if (strlen(name) > VFS_NAME_MAX) {
			err = -ENAMETOOLONG;
			break;
		}
		if (!strcmp(name, ".") || !strcmp(name, "..")) {
			/* Only a symlink's target may say "." or "..": ".." stays at the root. */
			if (!from_link) {
				err = -EINVAL;
				break;
			}
			if (name[1] == '\0')
				continue;
			err = vfs_walk(&c, &root, &cur, "..", 0, &next);
		} else {
			err = lookup_or_make(&cur, name, last ? isdir : true, &next);
		}
		if (err < 0)
			break;
		if (!vfs_node_is_symlink(next.node)) {
			vfs_path_put(&cur);
			cur = next;
			continue;
		}
		/* A symlink: its target, then the rest, from the root or from here. */
		n = ++nlinks > VFS_MAXSYMLINKS ?
			    -ELOOP :
			    vfs_path_readlink(&next, target, sizeof(target) - 1);
		vfs_path_put(&next);
		if (n <= 0) {
			err = n < 0 ? (int)n : -ENOENT;
			break;
		}
		target[n] = '\0';
		err = mountpoint_splice(&buf, target, p);
		if (err < 0)
			break;
		p = buf;
		from_link = true;
		if (target[0] == '/') {
			vfs_path_put(&cur);
			vfs_path_copy(&cur, &root);
			vfs_path_follow_mounts(&cur);
		}
	}
	vfs_ns_unlock();
	free(buf);
	if (err < 0) {
		vfs_path_put(&cur);
		return err;
	}
	*out = cur;
	return 0;
}

int vfs_mount_at(struct kernel *k, const char *path, struct vfs_fs *fs, int flags)
{
	struct vfs_path cur;
	struct vfs_mount *m;
	int err = mountpoint_make(k, path, vfs_node_is_dir(fs->root), &cur);

	if (err < 0)
		return err;
	m = vfs_mount_create(fs, fs->root, flags);
	if (!m) {
		err = -ENOMEM;
		goto out_put_path;
	}
	/* -ENOTDIR: a directory over a non-directory; -EISDIR: the reverse. */
	err = vfs_mount_attach(m, &cur);
	vfs_mount_put(m);
out_put_path:
	vfs_path_put(&cur);
	return err;
}

int vfs_mount_subtree_at(struct kernel *k, const char *path, struct vfs_fs *fs, const char *sub,
			 int flags)
{
	struct vfs_node *n = fs->root;
	struct vfs_path cur;
	struct vfs_mount *m;
	char name[VFS_NAME_MAX + 1];
	int err;

	vfs_node_get(n);
	while (*sub) {
		const char *end = strchrnul(sub, '/');
		struct vfs_node *next;

		if ((size_t)(end - sub) > VFS_NAME_MAX || end == sub || !n->ops->lookup) {
			vfs_node_put(n);
			return -EINVAL;
		}
		snprintf(name, sizeof(name), "%.*s", (int)(end - sub), sub);
		next = n->ops->lookup(n, name);
		vfs_node_put(n);
		if (IS_ERR(next))
			return (int)PTR_ERR(next);
		n = next;
		sub = *end ? end + 1 : end;
	}
	err = mountpoint_make(k, path, vfs_node_is_dir(n), &cur);
	if (err < 0)
		goto out_put_node;
	m = vfs_mount_create(fs, n, flags);
	if (!m) {
		err = -ENOMEM;
		goto out_put_path;
	}
	err = vfs_mount_attach(m, &cur);
	vfs_mount_put(m);
out_put_path:
	vfs_path_put(&cur);
out_put_node:
	vfs_node_put(n);
	return err;
}

int vfs_make_mountpoint(struct kernel *k, const char *path, bool isdir)
{
	struct vfs_path p;
	int err = mountpoint_make(k, path, isdir, &p);

	if (err < 0)
		return err;
	if (vfs_node_is_dir(p.node) != isdir)
		err = isdir ? -ENOTDIR : -EISDIR;
	vfs_path_put(&p);
	return err;
}

void vfs_mount_set_flags(struct vfs_mount *m, int flags)
{
	__atomic_store_n(&m->flags, flags, __ATOMIC_RELEASE);
}

/* Resolves the absolute guest path from k's root as root would (final symlinks followed). */
static int mount_resolve(struct kernel *k, const char *path, struct vfs_path *out)
{
	struct vfs_path root;
	struct cred c = { .cap_effective = ~0ULL }; /* root's, with every capability */

	vfs_kernel_root(k, &root);

	if (path[0] != '/' || !root.node)
		return -EINVAL;
	return vfs_walk(&c, &root, &root, path, VFS_LOOKUP_FOLLOW, out);
}

int vfs_mount_mask(struct kernel *k, const char *path, struct vfs_fs *empty_dir,
		   struct vfs_node *empty_file)
{
	struct vfs_path p;
	struct vfs_mount *m;
	int err = mount_resolve(k, path, &p);

	if (err < 0)
		return err;
	/* runc binds /dev/null over files; the guest may have no /dev, so an empty file instead. */
	if (vfs_node_is_dir(p.node))
		m = vfs_mount_create(empty_dir, empty_dir->root, MS_RDONLY | MS_NOSUID | MS_NODEV);
	else
		m = vfs_mount_create(empty_file->fs, empty_file, MS_RDONLY | MS_NOSUID | MS_NODEV);
	if (!m) {
		err = -ENOMEM;
		goto out_put_path;
	}
	err = vfs_mount_attach(m, &p);
	vfs_mount_put(m);
out_put_path:
	vfs_path_put(&p);
	return err;
}

int vfs_mount_readonly_path(struct kernel *k, const char *path)
{
	struct vfs_path p;
	struct vfs_mount *m;
	int err = mount_resolve(k, path, &p);

	if (err < 0)
		return err;
	/* A bind of the node onto itself: the same filesystem, the mount's flags plus MS_RDONLY. */
	m = vfs_mount_create(p.mnt->fs, p.node, p.mnt->flags | MS_RDONLY);
	if (!m) {
		err = -ENOMEM;
		goto out_put_path;
	}
	err = vfs_mount_attach(m, &p);
	vfs_mount_put(m);
out_put_path:
	vfs_path_put(&p);
	return err;
}

int vfs_mount_bind_self(struct kernel *k, const char *path, int flags)
{
	struct vfs_path p;
	struct vfs_mount *m;
	int err = mount_resolve(k, path, &p);

	if (err < 0)
		return err;
	m = vfs_mount_create(p.mnt->fs, p.node, flags);
	if (!m) {
		err = -ENOMEM;
		goto out_put_path;
	}
	err = vfs_mount_attach(m, &p);
	vfs_mount_put(m);
out_put_path:
	vfs_path_put(&p);
	return err;
}

int vfs_mount_set_label(struct kernel *k, const char *path, struct vfs_mount_label *l, int flags)
{
	struct vfs_path p;
	struct vfs_mount_label *old;
	int err = mount_resolve(k, path, &p);

	if (err < 0) {
		vfs_mount_label_free(l);
		return err;
	}
	/* The walk crossed into the top mount at path: its root is what path names. */
	if (p.node != p.mnt->root || p.mnt == vfs_kernel_root_mnt(k)) {
		vfs_path_put(&p);
		vfs_mount_label_free(l);
		return -EINVAL;
	}
	old = __atomic_exchange_n(&p.mnt->label, l, __ATOMIC_ACQ_REL);
	if (flags >= 0)
		vfs_mount_set_flags(p.mnt, flags);
	vfs_path_put(&p);
	vfs_mount_label_free(old);
	return 0;
}

int vfs_make_node(struct kernel *k, const char *path, const struct vfs_create_args *a)
{
	const char *slash = strrchr(path, '/');
	struct vfs_path dir, old;
	struct vfs_node *n;
	char parent[VFS_PATH_MAX];
	int err;

	if (path[0] != '/' || !slash || !slash[1] || strlen(slash + 1) > VFS_NAME_MAX ||
	    !strcmp(slash + 1, ".") || !strcmp(slash + 1, ".."))
		return -EINVAL;
	if ((size_t)(slash - path) >= sizeof(parent))
		return -ENAMETOOLONG;
	snprintf(parent, sizeof(parent), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	err = mountpoint_make(k, parent, true, &dir);
	if (err < 0)
		return err;
	if (!vfs_node_is_dir(dir.node)) {
		err = -ENOTDIR;
		goto out_put_dir;
	}
	vfs_ns_lock();
	err = vfs_lookup_one(&dir, slash + 1, &old);
	if (err == 0) {
		vfs_path_put(&old);
		err = -EEXIST;
	} else if (err == -ENOENT) {
		if (vfs_mount_readonly(dir.mnt) || !dir.node->ops->create)
			err = -EROFS;
		else
			err = dir.node->ops->create(dir.node, slash + 1, a, &n);
		if (err == 0)
			vfs_node_put(n);
	}
	vfs_ns_unlock();
out_put_dir:
	vfs_path_put(&dir);
	return err;
}
