/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inotify's core (Linux's fsnotify + inotify groups): watches on inodes, and the hooks the VFS
 * calls for each change made inside the sandbox. An inotify file (sentry/fs/anon/inotify.c)
 * owns one group; the syscalls are in syscalls/sys_inotify.c.
 *
 * Watches are keyed by inode, (st_dev, st_ino) from getattr, so that every name of a file (tmpfs
 * hard links) and every node of it reach the same watches, and a watch holds no node. Only
 * changes made through the sentry's VFS are seen: a host change to a volume is not.
 *
 * The hooks cost one atomic load while no watch exists anywhere; otherwise each asks getattr of
 * the node (and its parent) before taking the notify lock. Call them with no notify lock held
 * (any VFS or filesystem lock may be held: the notify lock is a leaf but for the groups' wait
 * queues).
 */
#ifndef HUSK_SENTRY_VFS_NOTIFY_H
#define HUSK_SENTRY_VFS_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct file;
struct vfs_node;
struct waitq;

/* Event bits and watch flags (Linux's IN_*, include/uapi/linux/inotify.h). */
#define VFS_IN_ACCESS 0x00000001u
#define VFS_IN_MODIFY 0x00000002u
#define VFS_IN_ATTRIB 0x00000004u
#define VFS_IN_CLOSE_WRITE 0x00000008u
#define VFS_IN_CLOSE_NOWRITE 0x00000010u
#define VFS_IN_OPEN 0x00000020u
#define VFS_IN_MOVED_FROM 0x00000040u
#define VFS_IN_MOVED_TO 0x00000080u
#define VFS_IN_CREATE 0x00000100u
#define VFS_IN_DELETE 0x00000200u
#define VFS_IN_DELETE_SELF 0x00000400u
#define VFS_IN_MOVE_SELF 0x00000800u
#define VFS_IN_UNMOUNT 0x00002000u
#define VFS_IN_Q_OVERFLOW 0x00004000u
#define VFS_IN_IGNORED 0x00008000u
#define VFS_IN_ALL_EVENTS 0x00000fffu
/* With IN_MOVED_FROM: a rename within one directory (dnotify's DN_RENAME; inotify ignores it). */
#define VFS_IN_DN_RENAME 0x00001000u
#define VFS_IN_ONLYDIR 0x01000000u
#define VFS_IN_DONT_FOLLOW 0x02000000u
#define VFS_IN_EXCL_UNLINK 0x04000000u
#define VFS_IN_MASK_CREATE 0x10000000u
#define VFS_IN_MASK_ADD 0x20000000u
#define VFS_IN_ISDIR 0x40000000u
#define VFS_IN_ONESHOT 0x80000000u

/* Linux's defaults (/proc/sys/fs/inotify/max_queued_events, max_user_instances). */
#define NOTIFY_MAX_QUEUED_EVENTS 16384
#define NOTIFY_MAX_GROUPS 128
#define NOTIFY_MAX_WATCHES 65536

/* The number of watches in the sandbox (atomic), for the hooks' fast path. */
extern int vfs_notify_watches;

static inline bool vfs_notify_active(void)
{
	return __atomic_load_n(&vfs_notify_watches, __ATOMIC_RELAXED) > 0;
}

/* --- hooks (each does nothing while no watch exists) --- */

/*
 * An event on node n itself (IN_ACCESS, IN_MODIFY, IN_ATTRIB, IN_OPEN, IN_CLOSE_*): reported to
 * n's watches and, with n's name, to its parent directory's (not to an IN_EXCL_UNLINK watch of
 * the parent when n has no link left). IN_ISDIR is added for directories.
 */
void vfs_notify_node(struct vfs_node *n, uint32_t mask);
/* An event reported to n's own watches only (IN_ATTRIB for link counts, IN_MOVE_SELF). */
void vfs_notify_self(struct vfs_node *n, uint32_t mask);
/*
 * An event on the entry name of directory dir (IN_CREATE, IN_DELETE, IN_MOVED_FROM/TO with
 * cookie); child is the node it names, for IN_ISDIR (may be NULL).
 */
void vfs_notify_name(struct vfs_node *dir, const char *name, struct vfs_node *child, uint32_t mask,
		     uint32_t cookie);
/*
 * After a name of victim was removed: name in dir (unlink, rmdir), or dir NULL for the target
 * a rename replaced. Reports, in Linux's order: IN_ATTRIB to victim when attrib (its link count
 * changed: unlink, rename over it); when it has no link left (directories: isdir),
 * IN_DELETE_SELF and IN_IGNORED for each of the gone inode's watches, which end; then IN_DELETE
 * on dir. The caller holds one reference on victim: when others hold it too (an open file),
 * IN_DELETE_SELF and IN_IGNORED wait for its last put (vfs_notify_node_gone).
 */
void vfs_notify_delete(struct vfs_node *dir, const char *name, struct vfs_node *victim, bool isdir,
		       bool attrib);
/*
 * The last reference to n went, whose inode lost its last name while n was in use
 * (n->notify_pending): IN_DELETE_SELF and IN_IGNORED now, as Linux when the dentry goes.
 */
void vfs_notify_node_gone(struct vfs_node *n);
/* Open, access, modify and close events of file f: vfs_notify_node on f->node, not O_PATH. */
void vfs_notify_file(struct file *f, uint32_t mask);
/* A new cookie pairing IN_MOVED_FROM with IN_MOVED_TO (never 0). */
uint32_t vfs_notify_cookie(void);

/* --- dnotify (fcntl F_NOTIFY) --- */

/* Linux's DN_* (include/uapi/linux/fcntl.h). */
#define VFS_DN_ACCESS 0x00000001u
#define VFS_DN_MODIFY 0x00000002u
#define VFS_DN_CREATE 0x00000004u
#define VFS_DN_DELETE 0x00000008u
#define VFS_DN_RENAME 0x00000010u
#define VFS_DN_ATTRIB 0x00000020u
#define VFS_DN_MULTISHOT 0x80000000u

struct file_async;

/*
 * How a dnotify watch reaches the state that signals (fasync.c's, kept out of links without
 * it): send signals fa's owner of an event with si_fd fd, with no notify lock held; get takes
 * a reference on fa (under the notify lock: a leaf), put drops one.
 */
struct dnotify_ops {
	void (*send)(struct file_async *fa, int fd);
	void (*get)(struct file_async *fa);
	void (*put)(struct file_async *fa);
};

/*
 * fcntl(fd, F_NOTIFY, arg) through fd table owner, f the file at fd, fa f's async state (a
 * reference this takes; NULL when arg has no event): arg's DN_* events (added to those of an
 * earlier F_NOTIFY of f by owner) on directory f call ops->send(fa, fd), once unless
 * DN_MULTISHOT. Events in the directory (of its entries and of their inodes) and of the
 * directory itself count, not those deeper. arg without an event removes owner's watch of f
 * (any file). Returns 0, -ENOTDIR or -ENOMEM.
 */
long vfs_dnotify_set(const struct dnotify_ops *ops, struct file_async *fa, const void *owner,
		     struct file *f, int fd, unsigned long arg);
/* owner's fd table closed a descriptor of f: owner's dnotify watch of f goes (Linux's flush). */
void vfs_dnotify_close(const void *owner, struct file *f);
/* f is released: its dnotify watches go. */
void vfs_dnotify_release(struct file *f);

/* --- groups (one per inotify file) --- */

struct notify_group;

/* A new group. Returns 0 and *out, -EMFILE past NOTIFY_MAX_GROUPS, or -ENOMEM. */
int notify_group_create(struct notify_group **out);
/* Removes the group's watches (no IN_IGNORED: nobody can read them) and frees it. */
void notify_group_destroy(struct notify_group *g);
/*
 * inotify_add_watch(2) on node n (the caller resolved the path and checked read permission):
 * mask's events, with IN_MASK_ADD (OR into an existing watch's mask), IN_MASK_CREATE (-EEXIST
 * when n is watched already), IN_ONESHOT, IN_EXCL_UNLINK, IN_ONLYDIR (-ENOTDIR unless n is a
 * directory). Returns the watch descriptor (the existing one when n is watched already) or
 * -errno (-EINVAL without an event bit or with both MASK_ADD and MASK_CREATE, -ENOSPC).
 */
int notify_add_watch(struct notify_group *g, struct vfs_node *n, uint32_t mask);
/* inotify_rm_watch(2): queues IN_IGNORED for wd and drops it. 0 or -EINVAL (no such wd). */
int notify_rm_watch(struct notify_group *g, int wd);
/*
 * Takes whole events from the head of the queue into buf (struct inotify_event records, names
 * NUL-padded to 16 bytes). Returns the bytes stored, -EAGAIN when the queue is empty, -EINVAL
 * when the first event does not fit in size.
 */
ssize_t notify_group_read(struct notify_group *g, void *buf, size_t size);
/* Bytes of the queued events (FIONREAD). */
size_t notify_group_pending(struct notify_group *g);
/* The queue woken whenever an event is queued. */
struct waitq *notify_group_waitq(struct notify_group *g);

#endif
