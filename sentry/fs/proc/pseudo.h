/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pseudo filesystems (procfs, sysfs): trees of synthetic nodes described by static tables of
 * entries, with directories whose children are computed (pids, fds), and regular files whose
 * contents are generated when they are opened (Linux's seq_file: a sequence of reads sees one
 * snapshot) and again when a read does not go on where the last one ended (after an lseek).
 *
 * Nodes are made on each lookup and not cached: a node holds its parent, and the process and
 * fd it describes by number (pid, tid, fd); generators look them up again and answer -ESRCH (or
 * empty contents) once the process is gone, as Linux does.
 */
#ifndef HUSK_SENTRY_FS_PSEUDO_H
#define HUSK_SENTRY_FS_PSEUDO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "sentry/vfs/fs.h"

struct kernel;
struct pseudo_node;
struct task;

/* Computed children of a directory (numbers: pids, tids, fds). */
struct pseudo_dyn {
	/*
	 * Looks name up: returns a new node (pseudo_node_new) or ERR_PTR(-ENOENT) and friends.
	 */
	struct vfs_node *(*lookup)(struct pseudo_node *dir, const char *name);
	/*
	 * Emits children whose number is >= *idx in increasing order, each with next_off
	 * base + its number + 1, setting *idx past each one accepted; stops when e refuses one.
	 * Returns 0 or -errno.
	 */
	int (*iterate)(struct pseudo_node *dir, int64_t *idx, struct dir_emitter *e, int64_t base);
};

/* One entry of a directory table; tables end with an entry whose name is NULL. */
struct pseudo_ent {
	const char *name;
	uint32_t mode; /* S_IFMT | permission bits */
	/* S_IFREG: writes the contents to out. Returns 0 or -errno (open fails with it). */
	int (*gen)(struct pseudo_node *n, FILE *out);
	/* S_IFREG, optional: a write(2) of len bytes at offset 0. Returns len or -errno. */
	ssize_t (*write)(struct pseudo_node *n, const char *buf, size_t len);
	/* S_IFLNK: the target into buf (no NUL); returns its length or -errno. */
	ssize_t (*readlink)(struct pseudo_node *n, char *buf, size_t len);
	/* S_IFLNK, optional: a magic link (see vfs_node_ops.get_link). */
	int (*get_link)(struct pseudo_node *n, struct vfs_path *out);
	/* Optional: opens the node (instead of gen); the VFS then sets f->mnt/f->node. */
	struct file *(*open)(struct pseudo_node *n, int flags);
	/* Optional: adjusts the attributes pseudo_getattr computed. Returns 0 or -errno. */
	int (*getattr)(struct pseudo_node *n, struct vfs_attr *attr);
	/* Optional: chown/chmod/utimens (vfs_node_ops.setattr); without it, -EROFS. */
	int (*setattr)(struct pseudo_node *n, const struct vfs_setattr *sa);
	/* S_IFDIR: static children, then computed ones. */
	const struct pseudo_ent *children;
	const struct pseudo_dyn *dyn;
	/* Number of this entry, unique in the filesystem (for inode numbers). */
	unsigned int id;
	/*
	 * procfs S_IFREG, or every file below an S_IFDIR: lseek as Linux's generic_file_llseek on
	 * the size 0 (cmdline, environ, auxv, /proc/sys) rather than seq_file's seq_lseek (no
	 * SEEK_END, SEEK_DATA, SEEK_HOLE).
	 */
	bool plain_seek;
	/*
	 * S_IFREG: a view of the mount tree (/proc/PID/mounts, mountinfo) that polls as Linux's
	 * mounts_poll: always POLLIN, plus POLLERR|POLLPRI once after each change of the mounts
	 * since the open or the last poll that reported one, and a wake of its queue at each
	 * change (epoll's EPOLLET, which libmount's monitor and so systemd use).
	 */
	bool mount_events;
};

/* A pseudo filesystem instance (procfs or sysfs). */
struct pid_ns;

struct pseudo_fs {
	struct vfs_fs base;
	struct kernel *k; /* not owned: outlives the mounts */
	uint32_t magic; /* statfs f_type */
	struct timespec btime; /* times of nodes not tied to a process */
	/*
	 * The first mount of the instance (not referenced: mounts are never detached yet), for
	 * magic links that lead to nodes of this filesystem. NULL before it is mounted.
	 */
	struct vfs_mount *mnt;
	/*
	 * proc: the pid namespace of the mounter (its active one when it mounted), whose numbers
	 * the pid directories, self and the ids inside use. Referenced; NULL for the sandbox's
	 * initial one (its numbers are the tids). Nodes keep the sandbox's numbers (pid, tid).
	 */
	struct pid_ns *pidns;
};

struct pseudo_node {
	struct vfs_node base;
	const struct pseudo_ent *ent;
	int32_t pid, tid; /* the process (and thread) a /proc/PID node describes, else 0 */
	int fd; /* fd/ and fdinfo/ entries, else -1 */
	uint64_t ino;
};

static inline struct pseudo_node *pseudo_node_of(struct vfs_node *n)
{
	return (struct pseudo_node *)n;
}

static inline struct pseudo_fs *pseudo_fs_of(struct pseudo_node *n)
{
	return (struct pseudo_fs *)n->base.fs;
}

/*
 * A new node for ent named name under parent (a new reference on parent), with parent's pid,
 * tid and fd unless changed afterwards. Returns it (one reference) or NULL.
 */
struct pseudo_node *pseudo_node_new(struct pseudo_node *parent, const struct pseudo_ent *ent,
				    const char *name);
/* Calls pseudo_node_new and fills pid, tid, fd; ERR_PTR(-ENOMEM) on failure. */
struct vfs_node *pseudo_node_new_at(struct pseudo_node *parent, const struct pseudo_ent *ent,
				    const char *name, int32_t pid, int32_t tid, int fd);

/*
 * Initialises fs with root table ent (a directory entry) and makes the root node.
 * type is the filesystem name ("proc", "sysfs"). Returns 0 or -ENOMEM.
 */
int pseudo_fs_init(struct pseudo_fs *fs, struct kernel *k, const char *type, uint32_t magic,
		   const struct pseudo_ent *root);

/*
 * Mounts fs (the caller's reference is taken over) with flags on the directory name (one
 * component) of the root, creating it (mode 0555) when the root is writable and lacks it.
 * Returns 0 or -errno.
 */
int pseudo_fs_mount(struct kernel *k, struct pseudo_fs *fs, const char *name, int flags);

/* The inode number of the node of ent for (pid, tid, fd), as getattr and listings show it. */
uint64_t pseudo_ino(const struct pseudo_ent *ent, int32_t pid, int32_t tid, int fd);
/* d_type for a mode. */
unsigned int pseudo_dtype(uint32_t mode);

/* Copies s into buf (at most len bytes, no NUL), as readlink does; returns strlen(s). */
ssize_t pseudo_copy_link(const char *s, char *buf, size_t len);

/*
 * The task a node describes (its tid, or its pid's leader), a new reference, or NULL when the
 * process is gone.
 */
struct task *pseudo_node_task(struct pseudo_node *n);

/* The ops of pseudo nodes other than magic links. */
extern const struct vfs_node_ops pseudo_node_ops;

/* Table entries: a read-only generated file, and a directory with the given permissions. */
#define PSEUDO_REG(nm, id_, fn)                                          \
	{                                                                \
		.name = nm, .mode = S_IFREG | 0444, .gen = fn, .id = id_ \
	}
#define PSEUDO_DIR(nm, id_, ch, perm)                                           \
	{                                                                       \
		.name = nm, .mode = S_IFDIR | (perm), .children = ch, .id = id_ \
	}

#endif
