/* SPDX-License-Identifier: Apache-2.0 */
/* Filesystem instances, nodes and the per-directory name cache. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "sentry/kernel/nsproxy.h"
#include "sentry/vfs/fs.h"
#include "sentry/vfs/notify.h"

/* nsproxy.c (weak: unit tests link the VFS without it; they make no guest-owned fs). */
#pragma weak user_ns_put

void vfs_fs_init(struct vfs_fs *fs, const struct vfs_fs_ops *ops, const char *type)
{
	refcount_init(&fs->ref, 1);
	fs->ops = ops;
	fs->type = type;
	fs->dev = vfs_alloc_anon_dev();
	fs->root = NULL;
	fs->user_ns = NULL;
}

void vfs_fs_get(struct vfs_fs *fs)
{
	refcount_inc(&fs->ref);
}

void vfs_fs_put(struct vfs_fs *fs)
{
	if (fs && refcount_dec(&fs->ref)) {
		if (fs->user_ns)
			user_ns_put(fs->user_ns);
		fs->ops->release(fs);
	}
}

uint64_t vfs_alloc_anon_dev(void)
{
	/* Linux starts anonymous minors at 1 and never reuses them while in use; never freeing
	 * them here is fine for the few filesystems a sandbox makes. */
	static uint32_t next_minor;
	uint32_t minor = __atomic_add_fetch(&next_minor, 1, __ATOMIC_RELAXED);

	return vfs_mkdev(0, minor);
}

int vfs_node_init(struct vfs_node *n, const struct vfs_node_ops *ops, struct vfs_fs *fs,
		  struct vfs_node *parent, const char *name, uint32_t type)
{
	n->name = strdup(name ? name : "");
	if (!n->name)
		return -ENOMEM;
	refcount_init(&n->ref, 1);
	n->ops = ops;
	n->fs = fs;
	n->parent = parent;
	if (parent)
		vfs_node_get(parent);
	n->type = type & 0170000;
	n->mounts = 0;
	return 0;
}

void vfs_node_get(struct vfs_node *n)
{
	refcount_inc(&n->ref);
}

void vfs_node_put(struct vfs_node *n)
{
	/* Iterative: dropping a deep node may drop its whole chain of ancestors. */
	while (n && refcount_dec(&n->ref)) {
		struct vfs_node *parent = n->parent;

		if (__atomic_load_n(&n->notify_pending, __ATOMIC_ACQUIRE))
			vfs_notify_node_gone(n);
		free(n->name);
		n->name = NULL;
		n->parent = NULL;
		n->ops->release(n);
		n = parent;
	}
}

int vfs_node_getattr(struct vfs_node *n, struct vfs_attr *attr)
{
	if (!n->ops->getattr)
		return -EOPNOTSUPP;
	return n->ops->getattr(n, attr);
}

/* --- name cache --- */

struct vfs_dcache_entry {
	struct vfs_dcache_entry *next;
	struct vfs_node *node; /* referenced; NULL for a negative entry */
	uint64_t hash;
	char name[];
};

static uint64_t name_hash(const char *name)
{
	/* FNV-1a */
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *name; name++) {
		h ^= (unsigned char)*name;
		h *= 0x100000001b3ull;
	}
	return h;
}

void vfs_dcache_init(struct vfs_dcache *c)
{
	c->buckets = NULL;
	c->nbuckets = 0;
	c->count = 0;
}

static struct vfs_dcache_entry **dcache_slot(struct vfs_dcache *c, const char *name, uint64_t h)
{
	struct vfs_dcache_entry **pp;

	if (!c->nbuckets)
		return NULL;
	for (pp = &c->buckets[h & (c->nbuckets - 1)]; *pp; pp = &(*pp)->next)
		if ((*pp)->hash == h && strcmp((*pp)->name, name) == 0)
			return pp;
	return NULL;
}

bool vfs_dcache_lookup(struct vfs_dcache *c, const char *name, struct vfs_node **node)
{
	struct vfs_dcache_entry **pp = dcache_slot(c, name, name_hash(name));

	if (!pp)
		return false;
	*node = (*pp)->node;
	if (*node)
		vfs_node_get(*node);
	return true;
}

static int dcache_grow(struct vfs_dcache *c)
{
	size_t n = c->nbuckets ? c->nbuckets * 2 : 8;
	struct vfs_dcache_entry **b = calloc(n, sizeof(*b));

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct vfs_dcache_entry *e = c->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	}
	free(c->buckets);
	c->buckets = b;
	c->nbuckets = n;
	return 0;
}

int vfs_dcache_insert(struct vfs_dcache *c, const char *name, struct vfs_node *node)
{
	uint64_t h = name_hash(name);
	struct vfs_dcache_entry **pp = dcache_slot(c, name, h);
	struct vfs_dcache_entry *e;
	size_t len;

	if (pp) {
		struct vfs_node *old = (*pp)->node;

		if (node)
			vfs_node_get(node);
		(*pp)->node = node;
		vfs_node_put(old);
		return 0;
	}
	if (c->count >= c->nbuckets && dcache_grow(c) < 0 && !c->nbuckets)
		return -ENOMEM;
	len = strlen(name);
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return -ENOMEM;
	memcpy(e->name, name, len + 1);
	e->hash = h;
	e->node = node;
	if (node)
		vfs_node_get(node);
	e->next = c->buckets[h & (c->nbuckets - 1)];
	c->buckets[h & (c->nbuckets - 1)] = e;
	c->count++;
	return 0;
}

void vfs_dcache_clear(struct vfs_dcache *c, void (*fn)(struct vfs_node *n, void *arg), void *arg)
{
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct vfs_dcache_entry *e = c->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			if (e->node) {
				if (fn)
					fn(e->node, arg);
				else
					vfs_node_put(e->node);
			}
			free(e);
		}
	}
	free(c->buckets);
	vfs_dcache_init(c);
}

void vfs_dcache_remove(struct vfs_dcache *c, const char *name)
{
	struct vfs_dcache_entry **pp = dcache_slot(c, name, name_hash(name));
	struct vfs_dcache_entry *e;

	if (!pp)
		return;
	e = *pp;
	*pp = e->next;
	c->count--;
	vfs_node_put(e->node);
	free(e);
}

/* --- renames --- */

/* Protects every node's parent and name against vfs_node_move (see fs.h). */
static pthread_rwlock_t rename_lock = PTHREAD_RWLOCK_INITIALIZER;

void vfs_rename_read_lock(void)
{
	pthread_rwlock_rdlock(&rename_lock);
}

void vfs_rename_read_unlock(void)
{
	pthread_rwlock_unlock(&rename_lock);
}

struct vfs_node *vfs_node_get_parent(struct vfs_node *n)
{
	struct vfs_node *p;

	pthread_rwlock_rdlock(&rename_lock);
	p = n->parent;
	if (p)
		vfs_node_get(p);
	pthread_rwlock_unlock(&rename_lock);
	return p;
}

int vfs_node_move(struct vfs_node *n, struct vfs_node *newparent, const char *newname)
{
	char *name = strdup(newname);
	struct vfs_node *old_parent;
	char *old_name;

	if (!name)
		return -ENOMEM;
	vfs_node_get(newparent);
	pthread_rwlock_wrlock(&rename_lock);
	old_parent = n->parent;
	old_name = n->name;
	n->parent = newparent;
	n->name = name;
	pthread_rwlock_unlock(&rename_lock);
	free(old_name);
	vfs_node_put(old_parent);
	return 0;
}
