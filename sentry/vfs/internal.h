/* SPDX-License-Identifier: Apache-2.0 */
/* Declarations shared by the files of sentry/vfs only. */
#ifndef HUSK_SENTRY_VFS_INTERNAL_H
#define HUSK_SENTRY_VFS_INTERNAL_H

#include <pthread.h>

#include "sentry/vfs/fs.h"
#include "sentry/vfs/vfs.h"

struct fs_context {
	struct refcount ref;
	pthread_mutex_t lock; /* protects root, cwd and umask */
	struct vfs_path root;
	struct vfs_path cwd;
	unsigned int umask;
	struct vfs_mnt_ns *mnt_ns; /* referenced, NULL for the sandbox's tree; set at creation */
};

/* Copies of the context's root and cwd (new references). */
void fs_context_get_root(struct fs_context *fs, struct vfs_path *out);
void fs_context_get_cwd(struct fs_context *fs, struct vfs_path *out);
/* Replaces the cwd by p (takes new references). */
void fs_context_set_cwd(struct fs_context *fs, const struct vfs_path *p);

/*
 * The mount lock (mount.c): a rwlock over children lists, node->mounts and the parent,
 * mountpoint, detached and propagation fields of attached mounts. A leaf: nothing that takes
 * another lock runs under it; d_path (vfs_path_to_string) reads under it inside the rename lock.
 */
void vfs_mount_read_lock(void);
void vfs_mount_read_unlock(void);
void vfs_mount_write_lock(void);
void vfs_mount_write_unlock(void);

/*
 * The mount after m in a walk of top and what is attached below it, parents first, or NULL
 * at the end (mount lock held). Iterative: guests may stack mounts deeper than recursion on a
 * thread's stack would allow.
 */
struct vfs_mount *vfs_mount_next_below(struct vfs_mount *m, struct vfs_mount *top);

/*
 * Calls fn(m, arg) for every mount that exists (made and not yet freed) under a leaf lock of
 * the list's own: fn may look at m and take a reference only on a mount its tree holds (an
 * attached one, the mount lock held by the caller). For propagation (mount_user.c).
 */
void vfs_mount_each_existing(void (*fn)(struct vfs_mount *m, void *arg), void *arg);

/* How many mounts exist (made and not yet freed), for mount_user.c's limit. */
long vfs_mount_count(void);

struct waitq;
/*
 * A mount tree changed (a mount, umount, move, propagation or remount): bumps the sandbox's
 * mount event counter and wakes its wait queue. vfs_mount_write_unlock calls it. Any thread.
 */
void vfs_mount_event(void);
/* The mount event counter now; stores its wait queue in *wq when wq is not NULL. */
uint64_t vfs_mount_event_read(struct waitq **wq);

/* A generic directory file (iterate through node->ops->iterate); f->mnt/node set by caller. */
struct file *vfs_dir_file_create(int flags);
/* An O_PATH file; f->mnt/node set by caller. */
struct file *vfs_path_file_create(int flags);

/* The start of a walk for dirfd (AT_FDCWD: cwd), with new references. 0 or -EBADF. */
int vfs_dirfd_path(struct task *t, int dirfd, struct vfs_path *out);
/* The root of t's walks (its fs context's root, else the kernel's), new references. */
void vfs_task_root(struct task *t, struct vfs_path *out);

/* Last component of a path, as left by vfs_walk_parent. */
enum vfs_last_type { VFS_LAST_NORM, VFS_LAST_DOT, VFS_LAST_DOTDOT, VFS_LAST_ROOT };

struct vfs_last {
	char name[VFS_NAME_MAX + 1];
	enum vfs_last_type type;
	bool trailing; /* followed by a slash */
};

/* State of one resolution: symlinks followed so far, across the steps of an open. */
struct vfs_walk_state {
	const struct cred *cred;
	const struct vfs_path *root;
	int nlinks;
	unsigned int resolve; /* VFS_RESOLVE_* of openat2 (BENEATH: root is the start) */
};

/*
 * The walker behind vfs_walk. With VFS_WALK_PARENT it stops before the last component: *out is
 * the directory holding it (search permission checked) and *last describes it.
 */
#define VFS_WALK_PARENT 0x100
int vfs_walk_state(struct vfs_walk_state *ws, const struct vfs_path *start, const char *path,
		   int flags, struct vfs_path *out, struct vfs_last *last);
/*
 * Follows symlink node: reads its target into a new string (caller frees) after counting the
 * link against VFS_MAXSYMLINKS. Returns 0 or -errno (-ELOOP, -ENOENT for an empty target).
 */
int vfs_read_link_target(struct vfs_walk_state *ws, struct vfs_node *node, char **target);

/*
 * Follows magic link node (ops->get_link, procfs) after counting it against VFS_MAXSYMLINKS:
 * *out is the position it names (new references). Returns 0 or -errno (-ELOOP, also under
 * openat2's RESOLVE_NO_MAGICLINKS, NO_SYMLINKS, BENEATH and IN_ROOT, as Linux).
 */
int vfs_follow_magic_link(struct vfs_walk_state *ws, struct vfs_node *node, struct vfs_path *out);

/* Checks may (VFS_MAY_*) on p for cred, with -EROFS for writes on a read-only mount. */
int vfs_path_permission_cred(const struct cred *cred, const struct vfs_path *p, int may);

/* Whether gid is c's fsgid or one of its supplementary groups (Linux's in_group_p). */
bool vfs_cred_in_group(const struct cred *c, uint32_t gid);

/*
 * The namespace lock (write.c): held across the check-then-change of every namespace
 * modification (create, link, unlink, rmdir, rename), so that what was checked still holds.
 * Taken before any filesystem lock.
 */
void vfs_ns_lock(void);
void vfs_ns_unlock(void);

/*
 * The checks and attributes of a new node named in directory dir (Linux's may_create and
 * inode_init_owner): -EROFS on a read-only mount, -EACCES without write and search permission.
 * Fills a with mode (type | perm, umask applied by the caller), owner and setgid inheritance.
 */
int vfs_may_create(const struct cred *cred, const struct vfs_path *dir, uint32_t mode,
		   struct vfs_create_args *a);

#endif
