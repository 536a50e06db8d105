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
#include <stdint.h>
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

/* The cgroup of f, an open cgroup2 directory, a new reference; ERR_PTR(-EBADF) otherwise. */
struct cgroup *cgroup_of_file(struct file *f);

/* --- BPF_CGROUP_DEVICE programs (bpf.c; bpf(2) in syscalls/sys_bpf.c) --- */

struct bpf_prog;

/*
 * BPF_PROG_ATTACH of p to cg with flags (BPF_F_ALLOW_OVERRIDE, BPF_F_ALLOW_MULTI, BPF_F_REPLACE
 * with replace): Linux's rules. Takes its own reference. Returns 0, -EINVAL (flags), -EPERM (an
 * ancestor's program may not be overridden, or flags differ from the attached ones'), -EINVAL
 * (attached already), -E2BIG (64 attached), -ENOENT (replace not attached).
 */
int cgroup_bpf_attach(struct cgroup *cg, struct bpf_prog *p, uint32_t flags,
		      struct bpf_prog *replace);
/* BPF_PROG_DETACH of p (NULL: the one program of a non-multi attachment). 0, -ENOENT, -EINVAL. */
int cgroup_bpf_detach(struct cgroup *cg, struct bpf_prog *p);
/*
 * BPF_PROG_QUERY: the ids of cg's programs (effective: those that run for its tasks) into ids
 * (up to max), their number in *count and the attach flags in *flags (0 for effective).
 * Returns 0, or -ENOSPC when more than max are there (ids holds the first max).
 */
int cgroup_bpf_query(struct cgroup *cg, bool effective, uint32_t *flags, uint32_t *ids,
		     uint32_t max, uint32_t *count);
/*
 * Runs the effective device programs of t's cgroup on an access (DEVFS_ACC_* bits, as
 * sentry/fs/dev's) to device type ('c', 'b') major:minor: 0, or -EPERM when one returns 0.
 */
int cgroup_bpf_dev_check(struct task *t, char type, uint32_t major, uint32_t minor,
			 unsigned int access);

#endif
