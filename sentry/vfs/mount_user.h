/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Guest mount operations (mount_user.c): chroot, mount, umount, pivot_root and mount namespaces.
 * The syscall layer resolves paths, checks capabilities and makes filesystems; these functions
 * change the tree. Every path argument is the caller's (references stay the caller's).
 */
#ifndef HUSK_SENTRY_VFS_MOUNT_USER_H
#define HUSK_SENTRY_VFS_MOUNT_USER_H

#include <stdbool.h>
#include <stdint.h>

struct fs_context;
struct task;
struct vfs_fs;
struct vfs_mnt_ns;
struct vfs_path;
struct user_ns;

/* The per-mount flags a guest may set. */
#define VFS_MNT_FLAGS (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)

/*
 * Locked mounts (vfs_mount.locks; Linux's MNT_LOCKED and MNT_LOCK_*): a mount namespace copied
 * into a less privileged user namespace locks its mounts. VFS_MNT_LOCKED (every mount but the
 * copy's top): not unmounted nor moved alone, so that what it covers stays hidden; the LOCK_*
 * flags: the flag (the atime choice) may not be cleared (changed) by a remount.
 */
#define VFS_MNT_LOCKED 0x01
#define VFS_MNT_LOCK_READONLY 0x02
#define VFS_MNT_LOCK_NOSUID 0x04
#define VFS_MNT_LOCK_NODEV 0x08
#define VFS_MNT_LOCK_NOEXEC 0x10
#define VFS_MNT_LOCK_ATIME 0x20

/*
 * The user namespace owning t's mount namespace (its fs context's; the sandbox's initial one for
 * the sandbox's own tree), borrowed: t itself only (its fs context's namespace never changes).
 */
struct user_ns *vfs_mnt_ns_owner(struct task *t);
/* Linux's may_mount: CAP_SYS_ADMIN in the user namespace owning t's mount namespace. */
bool vfs_may_mount(struct task *t);

/*
 * chroot(2) of t's process (its fs context) to path: -ENOTDIR, -EACCES (search), walk errors,
 * then -EPERM without CAP_SYS_CHROOT, as Linux orders them. Returns 0 or -errno.
 */
int vfs_chroot(struct task *t, const char *path);

/*
 * Mounts a new instance fs (the mount takes its own reference; the caller puts its own) on
 * the directory at, with flags (MS_RDONLY, MS_NOSUID, MS_NODEV,
 * MS_NOEXEC, atime flags) and what mountinfo shows. Returns 0, -ENOTDIR, -EINVAL (at not in
 * t's tree) or -ENOMEM.
 */
int vfs_mount_new(struct task *t, const struct vfs_path *at, struct vfs_fs *fs, int flags,
		  const char *source, const char *fstype, const char *super_opts);
/*
 * vfs_mount_new showing root, a directory of fs, at the mount's root (a cgroup2 mount in a
 * cgroup namespace: its root cgroup's directory; mountinfo's root field stays "/", as Linux's).
 */
int vfs_mount_new_root(struct task *t, const struct vfs_path *at, struct vfs_fs *fs,
		       struct vfs_node *root, int flags, const char *source, const char *fstype,
		       const char *super_opts);
/* A bind of src on at (with rec: src's submounts below it too). 0 or -errno. */
int vfs_mount_bind(struct task *t, const struct vfs_path *src, const struct vfs_path *at, bool rec);
/*
 * open_tree(OPEN_TREE_CLONE): a detached copy of src (with rec, its submounts below it too),
 * one reference, marked anon_tree until vfs_mount_attach_tree. ERR_PTR(-EINVAL) when src is not
 * in t's tree or unbindable; -ENOMEM.
 */
struct vfs_mount *vfs_mount_clone_tree(struct task *t, const struct vfs_path *src, bool rec);
/* fsmount(2): a detached mount of fs's root (one reference; fs gets its own), as above. */
struct vfs_mount *vfs_mount_detached(struct vfs_fs *fs, int flags, const char *source,
				     const char *fstype, const char *super_opts);
/* move_mount(2) of a detached tree top m onto at. 0, -EINVAL (m attached already), -ENOTDIR. */
int vfs_mount_attach_tree(struct task *t, struct vfs_mount *m, const struct vfs_path *at);
/*
 * MS_REMOUNT (bind: MS_REMOUNT|MS_BIND) of the mount whose root is p. 0, -EINVAL, or -EPERM
 * (a locked flag cleared; without MS_BIND, no CAP_SYS_ADMIN over the filesystem's user ns).
 */
int vfs_mount_remount(struct task *t, const struct vfs_path *p, int flags, bool bind);
/* MS_SHARED, MS_PRIVATE, MS_SLAVE or MS_UNBINDABLE (type), with rec for the submounts. */
int vfs_mount_change_type(struct task *t, const struct vfs_path *p, int type, bool rec);
/*
 * mount_setattr(2) of the mount whose root is p (with rec, its submounts too): flags set and clr
 * (MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC), atime (0 to keep, else MS_NOATIME, MS_RELATIME
 * or MS_STRICTATIME), propagation (0 or a type as vfs_mount_change_type). p may be a detached
 * tree of open_tree. 0, -EINVAL (not a mount's root), -EPERM (a locked flag would change; no
 * mount changes then), -ENOMEM.
 */
int vfs_mount_setattr(struct task *t, const struct vfs_path *p, int set, int clr, int atime,
		      int propagation, bool rec);
/* MS_MOVE of the mount whose root is src onto at. 0, -EINVAL or -ELOOP. */
int vfs_mount_move(struct task *t, const struct vfs_path *src, const struct vfs_path *at);
/*
 * umount2(2) of the mount whose root is p (MNT_DETACH, MNT_EXPIRE, MNT_FORCE in flags).
 * Returns 0, -EINVAL (not a mount root, not in t's tree, locked, the tree's top), -EPERM
 * (MNT_FORCE without CAP_SYS_ADMIN over the sandbox), -EBUSY (without
 * MNT_DETACH: submounts, a cwd, root or open file in it; t's root), -EAGAIN (MNT_EXPIRE).
 */
int vfs_umount(struct task *t, const struct vfs_path *p, int flags);
/* pivot_root(2): the checks of the man page, then the swap. 0 or -errno. */
int vfs_pivot_root(struct task *t, const struct vfs_path *new_root, const struct vfs_path *put_old);

/*
 * Gives fs (private to the caller: unshare or clone with CLONE_NEWNS) a new mount namespace
 * owned by user namespace owner (the caller's, after a CLONE_NEWUSER of the same call): a copy
 * of the whole tree its root is in, its root and cwd moved onto the copies. A copy into a user
 * namespace other than the old namespace's owner (a less privileged one) locks the copied
 * mounts and makes shared mounts slaves of their originals, as Linux. 0 or -ENOMEM/-ENOSPC.
 */
int vfs_mnt_ns_unshare(struct fs_context *fs, struct user_ns *owner);
void vfs_mnt_ns_get(struct vfs_mnt_ns *ns);
void vfs_mnt_ns_put(struct vfs_mnt_ns *ns);
/*
 * setns(CLONE_NEWNS) of t into the mount namespace from is in now (the sandbox's own tree when
 * from has none), as Linux's mntns_install: -EINVAL when t's fs context is shared (CLONE_FS),
 * -EPERM without CAP_SYS_ADMIN over the namespace's owner and CAP_SYS_CHROOT and CAP_SYS_ADMIN
 * in t's user namespace; t's root and cwd become the namespace's top. 0 or -errno.
 */
int vfs_mnt_ns_enter(struct task *t, struct task *from);
/*
 * The identity of t's mount namespace (the inode number /proc/PID/ns/mnt shows), or 0 when t
 * is in its sandbox's (or pod member's) own tree: the caller keeps its own number for those.
 */
uint64_t vfs_mnt_ns_ino(struct task *t);

#endif
