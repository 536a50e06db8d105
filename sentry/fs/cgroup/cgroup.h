/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cgroup v2 in the sentry (README.md): one hierarchy per sandbox, made of the sentry's own
 * objects (no host cgroup is ever created), that every cgroup2 mount shows. Each thread group
 * belongs to one cgroup (thread_group.cgroup; NULL means the root).
 */
#ifndef HUSK_SENTRY_FS_CGROUP_H
#define HUSK_SENTRY_FS_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct cgroup;
struct file;
struct kernel;
struct task;
struct thread_group;
struct vfs_fs;
struct vfs_node;

#define CGROUP2_SUPER_MAGIC 0x63677270

/* A new cgroup2 filesystem instance showing the sandbox's hierarchy. NULL: out of memory. */
struct vfs_fs *cgroupfs_create(struct kernel *k);

/*
 * The directory of cg (NULL: the root) in fs, a cgroupfs_create instance: a new reference, or
 * ERR_PTR(-ENOENT) when cg was removed, -ENOMEM. What a cgroup2 mount made in a cgroup
 * namespace shows at its root.
 */
struct vfs_node *cgroupfs_node_of(struct vfs_fs *fs, struct cgroup *cg);

void cgroup_get(struct cgroup *cg);
void cgroup_put(struct cgroup *cg);

/* The root cgroup (no reference needed: it lives as long as the sentry). */
struct cgroup *cgroup_root(void);

/*
 * tg's cgroup path as a reader whose cgroup namespace is rooted at root (NULL: the hierarchy's
 * root) sees it ("/", "/a/b"; "/../x" for a cgroup outside root, as Linux's cgroup_path_ns)
 * into buf (NUL-terminated). Takes k->tree_lock. Returns its length or -ENAMETOOLONG.
 */
int cgroup_tg_path(struct kernel *k, struct thread_group *tg, struct cgroup *root, char *buf,
		   size_t len);

/* tg's cgroup, a new reference (the root's is static). Takes k->tree_lock. */
struct cgroup *cgroup_tg_get(struct kernel *k, struct thread_group *tg);

/*
 * cgroup.procs (threads: cgroup.threads): the pids (tids) of the live processes of cg, or of
 * every live process of the sandbox when cg is NULL, one per line in increasing order, into
 * out. Takes k->tree_lock. Returns 0 or -ENOMEM.
 */
int cgroup_print_ids(struct kernel *k, struct cgroup *cg, FILE *out, bool threads);

/*
 * Fork: whether one more task may enter cg (NULL: the root) under the pids.max of it and its
 * ancestors. k->tree_lock held. Returns 0 or -EAGAIN.
 */
int cgroup_can_fork(struct kernel *k, struct cgroup *cg);

/*
 * clone3's CLONE_INTO_CGROUP by t: the cgroup of f, an open cgroup2 directory, as a new
 * reference, once t may move a process there (as a cgroup.procs write). ERR_PTR(-EBADF) when
 * f is not one, -ENOENT when it was removed, -EACCES, -EBUSY (controllers on for its children).
 */
struct cgroup *cgroup_clone_into(struct task *t, struct file *f);

#endif
