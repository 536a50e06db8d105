/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The interface between the VFS and the filesystems (sentry/fs/<name>/): filesystem instances,
 * nodes, mounts, a reusable name cache, and helpers for filesystems. Syscalls and other
 * subsystems use vfs.h; only the VFS and filesystems include this header.
 *
 * sentry/vfs/README.md describes the model, who holds references on whom, and the lock order.
 */
#ifndef HUSK_SENTRY_VFS_FS_H
#define HUSK_SENTRY_VFS_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "common/list.h"
#include "common/refcount.h"
#include "sentry/vfs/vfs.h"

struct cred;
struct user_ns;
struct linux_statfs;

#define VFS_NAME_MAX 255
#define VFS_PATH_MAX 4096
#define VFS_MAXSYMLINKS 40

/* Permission bits asked of vfs_permission() (Linux's MAY_*). */
#define VFS_MAY_EXEC 1
#define VFS_MAY_WRITE 2
#define VFS_MAY_READ 4

/* Device numbers in Linux's user-visible encoding (new_encode_dev; glibc's makedev). */
static inline uint64_t vfs_mkdev(uint32_t major, uint32_t minor)
{
	return (uint64_t)((minor & 0xffu) | ((major & 0xfffu) << 8) | ((minor & ~0xffu) << 12));
}

/* The major and minor numbers of a vfs_mkdev device number. */
static inline uint32_t vfs_dev_major(uint64_t dev)
{
	return (uint32_t)((dev >> 8) & 0xfff);
}

static inline uint32_t vfs_dev_minor(uint64_t dev)
{
	return (uint32_t)((dev & 0xff) | ((dev >> 12) & 0xfff00));
}

/* --- filesystem instances --- */

struct vfs_fs;

struct vfs_fs_ops {
	/*
	 * Called when the last reference goes (no mount shows the filesystem any more): breaks
	 * the filesystem's own reference cycles (name caches), drops fs->root and frees the
	 * instance. Nodes still referenced from elsewhere stay valid until they are put.
	 */
	void (*release)(struct vfs_fs *fs);
	/*
	 * For filesystems whose lookups make a new node each time (proc, sys): whether a and b
	 * (nodes of this filesystem) are the same file, so that a mount on one is found from the
	 * other. NULL: a node is its file (node identity).
	 */
	bool (*same_node)(struct vfs_node *a, struct vfs_node *b);
	/*
	 * Optional: m (a mount of this filesystem) was attached to the tree, which holds it
	 * (proc and sys keep their first mount, where their magic links lead).
	 */
	void (*mounted)(struct vfs_fs *fs, struct vfs_mount *m);
};

/* One instance of a filesystem (Linux's super_block). Filesystems embed it. */
struct vfs_fs {
	struct refcount ref; /* held by each mount of it */
	const struct vfs_fs_ops *ops;
	const char *type; /* "gofer", "devfs", ... (static string) */
	uint64_t dev; /* st_dev of its nodes, from vfs_alloc_anon_dev() */
	struct vfs_node *root; /* referenced */
	int mounted_on; /* mounts whose mountpoint is a node of this fs; atomic, for same_node */
	/* Linux's s_user_ns: the user namespace a guest's mount(2) made it in (referenced, put by
	 * vfs_fs_put), or NULL for the sandbox's initial one. */
	struct user_ns *user_ns;
};

/* Initialises the common part with one reference; root is set by the filesystem. */
void vfs_fs_init(struct vfs_fs *fs, const struct vfs_fs_ops *ops, const char *type);
void vfs_fs_get(struct vfs_fs *fs);
void vfs_fs_put(struct vfs_fs *fs);
/* An unused anonymous device number (major 0), as Linux gives to virtual filesystems. */
uint64_t vfs_alloc_anon_dev(void);

/* --- nodes --- */

/*
 * What a new node is made of. The VFS computes every field (Linux's inode_init_owner): mode is
 * S_IFMT | permission bits with the umask applied and S_ISGID inherited from a setgid
 * directory; uid/gid are the creator's fsuid and fsgid (or the setgid directory's group).
 */
struct vfs_create_args {
	uint32_t mode;
	uint32_t uid, gid;
	uint64_t rdev; /* device nodes, in vfs_mkdev encoding */
	const char *target; /* symlinks: the target (1..VFS_PATH_MAX-1 bytes) */
	/* O_TMPFILE with O_EXCL: linkat may never give the file a name (no I_LINKABLE). */
	bool no_link;
};

/* Which fields of struct vfs_setattr to change (Linux's ATTR_*). */
#define VFS_SETATTR_MODE 0x1
#define VFS_SETATTR_UID 0x2
#define VFS_SETATTR_GID 0x4
#define VFS_SETATTR_SIZE 0x8
#define VFS_SETATTR_ATIME 0x10
#define VFS_SETATTR_MTIME 0x20
/* ctime is set to the current time by every setattr; this sets it to ctime instead (copy-up). */
#define VFS_SETATTR_CTIME 0x40

struct vfs_setattr {
	unsigned int valid; /* VFS_SETATTR_* */
	uint32_t mode; /* permission bits only (07777) */
	uint32_t uid, gid;
	int64_t size;
	struct timespec atime, mtime, ctime;
};

/* rename(2) flags (Linux's RENAME_*). */
#define VFS_RENAME_NOREPLACE 0x1
#define VFS_RENAME_EXCHANGE 0x2
#define VFS_RENAME_WHITEOUT 0x4

/*
 * Write operations of nodes. The VFS serialises every namespace change with one lock (see
 * README.md: "Writes"), has checked permissions, the read-only flag of the mount, that the names
 * are single components (not "." or ".."), and, for creations, that the name did not exist when
 * it looked. Filesystems still answer -EEXIST/-ENOENT/-ENOTEMPTY from their own state. A NULL
 * member means "not supported": the VFS answers -EPERM for creations and links, -EROFS for
 * the others (a filesystem that cannot be written).
 */
struct vfs_node_ops {
	/*
	 * Looks up name (NUL-terminated, 1..VFS_NAME_MAX bytes, never "." or "..") in directory
	 * dir. The VFS has checked search permission. Returns a new reference or ERR_PTR(-errno)
	 * (-ENOENT when there is no such entry). Its parent must be dir.
	 */
	struct vfs_node *(*lookup)(struct vfs_node *dir, const char *name);
	/* Attributes of n (st_dev is n->fs->dev). Returns 0 or -errno. */
	int (*getattr)(struct vfs_node *n, struct vfs_attr *attr);
	/* Copies the target of symlink n into buf (no NUL). Returns its full length or -errno. */
	ssize_t (*readlink)(struct vfs_node *n, char *buf, size_t len);
	/*
	 * Opens a node that is not a directory (directories are opened by the VFS with a generic
	 * file that calls iterate). flags are the open(2) flags; the VFS has checked permissions,
	 * the mount's read-only flag and the file type. Returns a file (the VFS then fills f->mnt
	 * and f->node) or ERR_PTR(-errno). NULL op: -ENXIO.
	 */
	struct file *(*open)(struct vfs_node *n, int flags);
	/*
	 * Emits the entries of directory dir from position *pos, advancing *pos past each entry
	 * e accepted (to the next_off it was given). Stops without error when e refuses one.
	 * Returns 0 (also at the end) or -errno. Called with the file's pos_lock held.
	 */
	int (*iterate)(struct vfs_node *dir, int64_t *pos, struct dir_emitter *e);
	/* statfs(2) of the filesystem n is in; the VFS fills f_flags. NULL op: -ENOSYS. */
	int (*statfs)(struct vfs_node *n, struct linux_statfs *st);
	/* Frees the filesystem's node after the VFS dropped name and parent. Required. */
	void (*release)(struct vfs_node *n);

	/*
	 * Opens directory n as a file of the filesystem's own (for directories whose listing needs
	 * per-open state: overlay merges). NULL: the VFS makes a generic directory file that calls
	 * iterate.
	 */
	struct file *(*open_dir)(struct vfs_node *n, int flags);

	/* --- writes (see "Write operations" above) --- */

	/*
	 * Creates name in dir as a->mode says: S_IFREG, S_IFDIR, S_IFLNK (a->target), S_IFIFO,
	 * S_IFSOCK, S_IFCHR, S_IFBLK. Returns 0 and *out (a new reference, parent dir) or -errno
	 * (-EEXIST, -ENOSPC, -ENOENT when dir was removed).
	 */
	int (*create)(struct vfs_node *dir, const char *name, const struct vfs_create_args *a,
		      struct vfs_node **out);
	/*
	 * O_TMPFILE: a regular file in dir's filesystem with no name (link count 0). Returns 0
	 * and *out (a new reference whose parent is dir) or -errno. NULL: -EOPNOTSUPP.
	 */
	int (*tmpfile)(struct vfs_node *dir, const struct vfs_create_args *a,
		       struct vfs_node **out);
	/*
	 * A new name for old (a non-directory of the same filesystem) in dir. Returns 0 and
	 * *out (a new reference: the node of the new name) or -errno (-EMLINK, -ENOENT when old
	 * has no link left and is not an O_TMPFILE file).
	 */
	int (*link)(struct vfs_node *dir, const char *name, struct vfs_node *old,
		    struct vfs_node **out);
	/* Removes the name of non-directory child from dir. Returns 0 or -errno. */
	int (*unlink)(struct vfs_node *dir, const char *name, struct vfs_node *child);
	/* Removes directory child from dir. Returns 0, -ENOTEMPTY or -errno. */
	int (*rmdir)(struct vfs_node *dir, const char *name, struct vfs_node *child);
	/*
	 * Moves node (named oldname in olddir) to newname in newdir, replacing target (the node of
	 * newname, or NULL) as rename(2) says: flags VFS_RENAME_*. The VFS has checked the types
	 * (directory over directory only), that node is not an ancestor of newdir, that no
	 * node involved is a mountpoint, and NOREPLACE/EXCHANGE against the target it saw. The
	 * filesystem renames its nodes itself (vfs_node_move). Returns 0 or -errno (-ENOTEMPTY,
	 * -EXDEV when the filesystem cannot do it in place).
	 */
	int (*rename)(struct vfs_node *olddir, const char *oldname, struct vfs_node *node,
		      struct vfs_node *newdir, const char *newname, struct vfs_node *target,
		      unsigned int flags);
	/*
	 * Changes attributes of n (the VFS checked ownership and permissions and computed the
	 * values, suid/sgid clearing included); sets ctime (to sa->ctime if VFS_SETATTR_CTIME, else
	 * now). SIZE only for regular files. Returns 0 or -errno (-EFBIG, -ENOSPC).
	 */
	int (*setattr)(struct vfs_node *n, const struct vfs_setattr *sa);

	/*
	 * Magic links (procfs's fd/N, exe, cwd, root): a symlink that resolves to a position in the
	 * mount tree instead of a string. Path walks that follow n jump to *out (a new reference);
	 * readlink still calls readlink. Returns 0 or -errno. NULL: an ordinary symlink. Added by
	 * the procfs engineer.
	 */
	int (*get_link)(struct vfs_node *n, struct vfs_path *out);

	/*
	 * Extended attributes (sentry/vfs/xattr.c calls them). The VFS has checked the name (a
	 * known namespace prefix and more, 1..VFS_XATTR_NAME_MAX bytes), the size (at most
	 * VFS_XATTR_SIZE_MAX), the flags, the mount's read-only flag and Linux's permission rules
	 * (trusted.* and security.* privileges, user.* only on regular files and directories,
	 * read or write permission on the node). Filesystems still refuse what they cannot store
	 * (-EOPNOTSUPP for a namespace they do not keep, -EPERM for one they keep read-only).
	 * Added by the filesystem round 4 engineer.
	 *
	 * getxattr: with size 0 returns the value's length (buf unused); otherwise copies it into
	 * buf and returns its length, -ERANGE when it does not fit, -ENODATA when absent.
	 * setxattr: flags VFS_XATTR_CREATE (-EEXIST if present) or VFS_XATTR_REPLACE (-ENODATA if
	 * absent); returns 0 or -errno (-ENOSPC). listxattr: the names, each NUL-terminated, as
	 * getxattr sizes them; trusted.* names only when list_trusted. removexattr: 0 or -ENODATA.
	 * NULL members: get/set/remove -EOPNOTSUPP, list an empty list.
	 */
	ssize_t (*getxattr)(struct vfs_node *n, const char *name, void *buf, size_t size);
	int (*setxattr)(struct vfs_node *n, const char *name, const void *value, size_t size,
			int flags);
	ssize_t (*listxattr)(struct vfs_node *n, char *buf, size_t size, bool list_trusted);
	int (*removexattr)(struct vfs_node *n, const char *name);
};

/* Extended attribute limits and setxattr flags (Linux's XATTR_*). */
#define VFS_XATTR_NAME_MAX 255
#define VFS_XATTR_SIZE_MAX 65536
#define VFS_XATTR_LIST_MAX 65536
#define VFS_XATTR_CREATE 0x1
#define VFS_XATTR_REPLACE 0x2

/*
 * A node of a filesystem: a name (Linux's dentry) with its file. Filesystems with hard links
 * (tmpfs) give each name its own node and share their inode between them. Filesystems embed it
 * first. Fields are fixed after vfs_node_init except where noted.
 */
struct vfs_node {
	struct refcount ref;
	const struct vfs_node_ops *ops;
	struct vfs_fs *fs; /* not referenced: whoever holds a node holds a mount of fs */
	/* parent and name change only in vfs_node_move, under the rename lock. */
	struct vfs_node *parent; /* referenced; NULL for a filesystem's root and anonymous nodes */
	char *name; /* owned; "" for a root */
	uint32_t type; /* S_IFMT bits */
	int mounts; /* mounts whose mountpoint is this node; written under the mount lock */
	/*
	 * inotify (notify.c): the node's inode lost its last name while the node was in use (an
	 * open file): IN_DELETE_SELF and IN_IGNORED are due at its last put. Atomic.
	 */
	bool notify_pending;
};

/*
 * Initialises the common part of a node with one reference. Takes a new reference on parent
 * (may be NULL) and copies name. Returns 0 or -ENOMEM.
 */
int vfs_node_init(struct vfs_node *n, const struct vfs_node_ops *ops, struct vfs_fs *fs,
		  struct vfs_node *parent, const char *name, uint32_t type);
void vfs_node_get(struct vfs_node *n);
/* Drops a reference; the last one frees name, calls ops->release and puts the parent. */
void vfs_node_put(struct vfs_node *n);

static inline bool vfs_node_is_dir(const struct vfs_node *n)
{
	return (n->type & 0170000) == 0040000;
}

static inline bool vfs_node_is_symlink(const struct vfs_node *n)
{
	return (n->type & 0170000) == 0120000;
}

/* --- a name cache filesystems may embed in their directories --- */

struct vfs_dcache_entry;

/*
 * Children of a directory by name: positive entries hold a reference on their node, negative
 * entries (node NULL) remember that a name does not exist. Not locked: the owner's lock
 * protects it.
 */
struct vfs_dcache {
	struct vfs_dcache_entry **buckets;
	size_t nbuckets;
	size_t count;
};

void vfs_dcache_init(struct vfs_dcache *c);
/*
 * Looks name up. Returns true when the name is cached; then *node is a new reference, or NULL
 * for a negative entry.
 */
bool vfs_dcache_lookup(struct vfs_dcache *c, const char *name, struct vfs_node **node);
/* Adds or replaces name -> node (node NULL: negative). Takes a new reference. 0 or -ENOMEM. */
int vfs_dcache_insert(struct vfs_dcache *c, const char *name, struct vfs_node *node);
/*
 * Empties the cache, calling fn(node, arg) for each positive entry with the reference the
 * cache held (fn must put it). fn NULL: the references are put.
 */
void vfs_dcache_clear(struct vfs_dcache *c, void (*fn)(struct vfs_node *n, void *arg), void *arg);
/* Removes name (positive or negative); the reference a positive entry held is put. */
void vfs_dcache_remove(struct vfs_dcache *c, const char *name);

/*
 * Renames n: its parent becomes newparent (a new reference is taken, the old parent is put)
 * and its name newname. Filesystems call it from their rename op. Takes the rename lock (see
 * vfs_rename_read_lock). Returns 0 or -ENOMEM (n unchanged).
 */
int vfs_node_move(struct vfs_node *n, struct vfs_node *newparent, const char *newname);
/*
 * The rename lock: readers of node->parent and node->name other than the filesystem's own
 * serialised paths (path strings, `..`) hold it for reading; vfs_node_move for writing.
 */
void vfs_rename_read_lock(void);
void vfs_rename_read_unlock(void);
/* A new reference on n's parent (NULL for a root), read under the rename lock. */
struct vfs_node *vfs_node_get_parent(struct vfs_node *n);

/* --- mounts --- */

/*
 * A filesystem (or, later, a subtree of one: bind mounts) shown at a point of the mount tree.
 * Fields are fixed after vfs_mount_attach except where noted.
 */
struct vfs_mount {
	struct refcount ref;
	uint64_t id;
	int flags; /* MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC */
	struct vfs_fs *fs; /* referenced */
	struct vfs_node *root; /* referenced: the node shown at the mount's root */
	struct vfs_mount *parent; /* referenced; NULL for the root of the tree */
	struct vfs_node *mountpoint; /* referenced; NULL for the root of the tree */
	struct list_head children; /* of mounts attached below; protected by the mount lock */
	struct list_head sibling; /* in parent->children; protected by the mount lock */
	struct vfs_mount_label *label; /* owned; NULL: /proc/PID/mountinfo derives it */
	/* Guest mounts (mount_user.c); written under the mount lock. */
	int propagation; /* 0 (private), MS_SHARED, MS_SLAVE or MS_UNBINDABLE */
	uint64_t peer_group; /* shared:N while MS_SHARED */
	uint64_t master; /* master:N while MS_SLAVE */
	bool detached; /* umounted: out of every tree; parent and mountpoint kept until freed */
	struct vfs_mnt_ns *ns; /* not referenced: the namespace whose top this mount is, or NULL */
	bool anon_tree; /* the top of a tree open_tree/fsmount made, not attached yet */
	int locks; /* VFS_MNT_LOCKED, VFS_MNT_LOCK_* (mount_user.h); written under the mount lock */
	struct list_head all; /* in mount.c's list of every mount (vfs_mount_each_existing) */
};

/*
 * A mount namespace made by unshare/clone(CLONE_NEWNS) (mount_user.c): a copy of a tree. Held
 * by fs contexts (fs->mnt_ns); the last put detaches every mount of the tree. The sandbox's own
 * tree (and each pod member's) has none: fs->mnt_ns NULL.
 */
struct vfs_mnt_ns {
	struct refcount ref;
	uint64_t ino; /* the identity /proc/PID/ns/mnt shows */
	struct vfs_mount *root; /* referenced: the top of the tree; changed by pivot_root */
	struct user_ns *owner; /* referenced: the creator's user namespace (Linux's user_ns) */
};

/*
 * What /proc/PID/mountinfo and /proc/mounts show of a mount the runtime described (a
 * config.json mount): each string owned, NULL for the derived default.
 */
struct vfs_mount_label {
	char *source; /* the source field ("shm", "/dev/vda" for a bind) */
	char *fstype; /* "tmpfs", "mqueue", the host's for a bind */
	char *atime; /* "relatime", "noatime" or "" (strictatime) */
	char *super_opts; /* the filesystem's options after rw/ro ("size=65536k,mode=755") */
	bool super_ro; /* the superblock's own ro (sysfs ro, a read-only host filesystem) */
	char *root; /* the 4th field: "/home/x/data" for a bind of it, else "/" */
};

/*
 * Creates a detached mount of fs showing root (a node of fs), with flags. Takes new references
 * on fs and root. Returns the mount (one reference) or NULL when out of memory.
 */
struct vfs_mount *vfs_mount_create(struct vfs_fs *fs, struct vfs_node *root, int flags);
void vfs_mount_get(struct vfs_mount *m);
void vfs_mount_put(struct vfs_mount *m);
/*
 * Attaches m on top of mountpoint (a directory if m's root is one, else a non-directory): later
 * walks reaching mountpoint continue at m's root. The mount tree takes its own reference on m;
 * m references the mountpoint's mount and node. Returns 0, -ENOTDIR or -EISDIR.
 */
int vfs_mount_attach(struct vfs_mount *m, const struct vfs_path *mountpoint);

/*
 * Calls fn(m, arg) for top and every mount attached below it, parents before children, in
 * attachment order (a snapshot taken under the mount lock; fn runs without it and holds a
 * reference on m). Stops at a non-zero return of fn and returns it; 0 otherwise, -ENOMEM.
 * Added by the procfs engineer (/proc/PID/mounts, mountinfo).
 */
int vfs_mount_for_each(struct vfs_mount *top, int (*fn)(struct vfs_mount *m, void *arg), void *arg);

/*
 * Mounts fs (the caller keeps its reference) with flags at the absolute guest path of k's
 * tree, creating the missing names of the path on the way (in the overlay's upper layer, or on
 * the host with a writable gofer root), root's: directories (0755), and for the last name a
 * directory when fs's root is one, else an empty regular file (0644; a file bind mount). As
 * runc does, symlinks met on the way, the last name's too, are followed, inside the guest's
 * tree (an absolute target from k's root, ".." never above it). Call after the root is mounted.
 * Returns 0 or -errno (-EINVAL for a relative path or a "." or ".." component in path itself,
 * -ENOTDIR, -EISDIR (a non-directory over a directory), -ELOOP, -EROFS when a name is missing
 * on a read-only mount).
 */
struct kernel;
int vfs_mount_at(struct kernel *k, const char *path, struct vfs_fs *fs, int flags);

/*
 * As vfs_mount_at, but shows the node at sub (a relative path inside fs, "a/b") at the mount's
 * root, as a bind of a subdirectory does. Returns 0 or -errno (-ENOENT: no sub in fs).
 */
int vfs_mount_subtree_at(struct kernel *k, const char *path, struct vfs_fs *fs, const char *sub,
			 int flags);

/*
 * Makes the mountpoint vfs_mount_at would make for a filesystem whose root is a directory
 * (isdir) or not, and mounts nothing. Returns 0 or vfs_mount_at's errors.
 */
int vfs_make_mountpoint(struct kernel *k, const char *path, bool isdir);

/*
 * Replaces m's flags (MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC), as mount -o remount,bind
 * does: e.g. the root made read-only once its mountpoints were made (root.readonly). Mounts
 * attached on m keep their own flags. Walks read flags without a lock: meant for set-up, before
 * any guest task runs.
 */
void vfs_mount_set_flags(struct vfs_mount *m, int flags);

/*
 * config.json maskedPaths: mounts the root of empty_dir (an empty filesystem) read-only over the
 * directory at the absolute guest path, or empty_file (an empty regular file's node) read-only
 * over a non-directory. The caller keeps its references. Returns 0 or -errno (-ENOENT: no such
 * path).
 */
int vfs_mount_mask(struct kernel *k, const char *path, struct vfs_fs *empty_dir,
		   struct vfs_node *empty_file);
/*
 * config.json readonlyPaths: a read-only bind of the node at the absolute guest path onto
 * itself (its mount's flags plus MS_RDONLY). Returns 0 or -errno (-ENOENT: no such path).
 */
int vfs_mount_readonly_path(struct kernel *k, const char *path);
/*
 * A bind of the node at the absolute guest path onto itself with flags (MS_*), e.g. the
 * sysfs's fs/cgroup for a config.json cgroup mount. Returns 0 or -errno (-ENOENT: no such path).
 */
int vfs_mount_bind_self(struct kernel *k, const char *path, int flags);
/*
 * Gives the mount whose root is at the absolute guest path (the top one) the label l (taking
 * ownership of it, freed with vfs_mount_label_free on failure too) and flags (MS_*, replacing
 * its flags; -1 keeps them). Returns 0 or -errno (-EINVAL: nothing is mounted there).
 */
int vfs_mount_set_label(struct kernel *k, const char *path, struct vfs_mount_label *l, int flags);
void vfs_mount_label_free(struct vfs_mount_label *l);
/*
 * Makes the node a describes (its mode, owner, rdev as given: no umask) at the absolute guest
 * path of k's tree, as root, the missing directories before it as vfs_mount_at makes them
 * (config.json linux.devices). Returns 0 or -errno (-EEXIST, -EROFS, -ENOTDIR, -EINVAL).
 */
int vfs_make_node(struct kernel *k, const char *path, const struct vfs_create_args *a);

static inline bool vfs_mount_readonly(const struct vfs_mount *m)
{
	return m->flags & 1; /* MS_RDONLY */
}

/* --- paths, permissions, resolution helpers --- */

/* Copies src into dst, taking new references. */
void vfs_path_copy(struct vfs_path *dst, const struct vfs_path *src);
/* Crosses mounts: while something is mounted on p, replaces p by that mount's root. */
void vfs_path_follow_mounts(struct vfs_path *p);

/*
 * Linux's generic_permission: may is a VFS_MAY_* mask. fsuid 0 may read and write anything
 * and execute what has at least one x bit (or is a directory). Returns 0 or -EACCES.
 */
int vfs_permission(const struct cred *c, const struct vfs_attr *attr, int may);

/* Attributes of a node through its ops. */
int vfs_node_getattr(struct vfs_node *n, struct vfs_attr *attr);

/*
 * Walks path from start (absolute paths from root) as cred, following symlinks as the flags
 * say (VFS_LOOKUP_*). Returns 0 and *out (referenced) or -errno.
 */
#define VFS_LOOKUP_FOLLOW 1 /* follow a final symlink */
#define VFS_LOOKUP_DIRECTORY 2 /* the result must be a directory */
int vfs_walk(const struct cred *cred, const struct vfs_path *root, const struct vfs_path *start,
	     const char *path, int flags, struct vfs_path *out);

/*
 * Looks name (a single component, not "." or "..") up in directory dir without permission
 * checks and crosses mounts on the result. Returns 0 and *out (referenced) or -errno.
 */
int vfs_lookup_one(const struct vfs_path *dir, const char *name, struct vfs_path *out);

/*
 * Writes the path of p as seen from root into buf (size bytes, NUL-terminated), "/"-separated
 * from root; a p outside root is prefixed with "(unreachable)". Returns the length without the
 * NUL, -ERANGE when size is too small, -ENAMETOOLONG past VFS_PATH_MAX.
 */
int vfs_path_to_string(const struct vfs_path *root, const struct vfs_path *p, char *buf,
		       size_t size);

/* --- files helpers for filesystems --- */

/*
 * lseek arithmetic for a file whose size is size (SEEK_SET, SEEK_CUR, SEEK_END, SEEK_DATA,
 * SEEK_HOLE as for a file without holes). Returns the new position or -EINVAL/-ENXIO.
 */
int64_t vfs_generic_llseek(struct file *f, int64_t off, int whence, int64_t size);

/*
 * RLIMIT_FSIZE of the calling task for a write of a regular file at off (Linux's
 * generic_write_check_limits): returns 0, with *count cut to end at the limit, or -EFBIG after
 * sending SIGXFSZ to the caller when off is at or past it. Filesystems call it for each write
 * of a non-empty range; no task (sentry-internal writes): no limit.
 */
int vfs_write_check_limit(int64_t off, size_t *count);
/*
 * The mode a write by the calling task leaves a regular file with (Linux's file_remove_privs):
 * without CAP_FSETID, S_ISUID and a group-executable S_ISGID are cleared. mode has S_IFMT.
 */
uint32_t vfs_write_kill_priv(uint32_t mode);
/*
 * Marks the calling thread's writes as the sentry's own (overlay copy-up) while on: no
 * RLIMIT_FSIZE and no clearing of set-id bits, as for a write with no task.
 */
void vfs_internal_writes(bool on);

/*
 * The anonymous mount: where nodes of files that have no name in the tree live (host files;
 * later pipes, sockets, eventfds), so that every file has a path for fstat and friends.
 * Returns it (no new reference; it lives as long as the process).
 */
struct vfs_mount *vfs_anon_mount(void);
/* Initialises n as a node of the anonymous filesystem (no parent, empty name). */
int vfs_anon_node_init(struct vfs_node *n, const struct vfs_node_ops *ops, uint32_t type);

#endif
