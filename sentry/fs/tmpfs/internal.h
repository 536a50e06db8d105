/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tmpfs's objects, for tmpfs.c and the checkpoint code that saves and rebuilds them
 * (sentry/state/fs.c). Nothing else includes this header: the rest of the sentry uses tmpfs.h.
 * Every field is protected by the filesystem's lock (tmpfs->lock).
 */
#ifndef HUSK_SENTRY_FS_TMPFS_INTERNAL_H
#define HUSK_SENTRY_FS_TMPFS_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "common/list.h"
#include "common/refcount.h"
#include "common/util.h"
#include "sentry/vfs/fs.h"

struct memfile;

#define TMPFS_PAGE 4096
/* Linux's MAX_LFS_FILESIZE on 64-bit. */
#define TMPFS_MAX_SIZE ((int64_t)0x7fffffffffffffffLL)
/*
 * The page table of a file is flat: a page at index i costs 8 * i bytes of sentry memory, zeroed.
 * Data past this many pages (64 GiB) is -EFBIG, so that one byte written at a wild offset
 * cannot make the sentry allocate and zero gigabytes (Linux's tmpfs takes sparse files up to
 * TMPFS_MAX_SIZE; a sparse table would lift this limit).
 */
#define TMPFS_MAX_PAGES ((size_t)1 << 24)
/* Linux's tmpfs allows any link count up to this. */
#define TMPFS_LINK_MAX 0xffffffffu

/* Directory positions: 0 and 1 are "." and ".."; entries have cookies from 2 up. */
#define TMPFS_POS_FIRST 2

struct tmpfs {
	struct vfs_fs base;
	/* Protects everything below and in every inode and node. Recursive: see tmpfs_create. */
	pthread_mutex_t lock;
	struct memfile *mf; /* not owned: the kernel's; NULL: data in heap pages */
	uint64_t size_limit; /* bytes of file data */
	uint64_t pages_used;
	uint64_t next_ino;
};

struct tmpfs_inode {
	struct refcount ref; /* one per node (name) of the file */
	uint64_t ino;
	uint32_t mode, uid, gid;
	uint64_t rdev;
	uint32_t nlink;
	struct timespec atime, mtime, ctime;
	/* regular files */
	int64_t size;
	uint64_t *pages; /* page slots (see the top of the file); 0 entries are holes */
	size_t npages; /* length of pages */
	size_t nalloc; /* pages allocated */
	bool tmpfile; /* made by O_TMPFILE and never linked: linkat may give it a name */
	uint32_t seals; /* F_SEAL_*: F_SEAL_SEAL but for a memfd made with MFD_ALLOW_SEALING */
	char *memfd_name; /* memfd_create's name (owned), else NULL */
	/* symlinks */
	char *target;
	/* directories */
	struct vfs_dcache names; /* name -> node, referenced */
	struct list_head entries; /* of tmpfs_node.entry, by cookie */
	uint64_t next_cookie;
	/* the overlay's marks */
	bool opaque;
	uint64_t origin_ino;
	/* extended attributes, in the order they were set */
	struct tmpfs_xattr *xattrs;
	size_t xattr_bytes; /* names and values, against TMPFS_XATTR_INODE_MAX */
};

/* One extended attribute of an inode. */
struct tmpfs_xattr {
	struct tmpfs_xattr *next;
	size_t size;
	char *name; /* owned */
	void *value; /* owned; NULL when size is 0 */
};

/* Bytes of names and values one inode may hold (Linux's tmpfs limits user.* by its ispace). */
#define TMPFS_XATTR_INODE_MAX (1024 * 1024)

struct tmpfs_node {
	struct vfs_node base;
	struct tmpfs_inode *inode; /* referenced */
	struct list_head entry; /* in the parent's entries while linked */
	uint64_t cookie;
	bool linked;
};

static inline struct tmpfs *tmpfs_of(const struct vfs_node *n)
{
	return container_of(n->fs, struct tmpfs, base);
}

static inline struct tmpfs_node *tnode(const struct vfs_node *n)
{
	return container_of(n, struct tmpfs_node, base);
}

static inline struct tmpfs_inode *tinode(const struct vfs_node *n)
{
	return tnode(n)->inode;
}

/*
 * A new inode of fs made as a says (fs lock held), with the next inode number and no node yet
 * (its first tmpfs_node_new makes it live). NULL when out of memory.
 */
struct tmpfs_inode *tmpfs_inode_new(struct tmpfs *fs, const struct vfs_create_args *a);
/* Drops a node's reference on its inode (fs lock held); the last frees it and its pages. */
void tmpfs_inode_put(struct tmpfs *fs, struct tmpfs_inode *in);
/* A node for inode in (takes a new reference on it) named name under parent (may be NULL). */
struct tmpfs_node *tmpfs_node_new(struct tmpfs *fs, struct vfs_node *parent, const char *name,
				  struct tmpfs_inode *in);
/* Enters child under name in directory dir (fs lock held); dir takes a reference. 0 or -errno. */
int tmpfs_dir_link(struct tmpfs_inode *dir, const char *name, struct tmpfs_node *child);
/* The tmpfs node of an open tmpfs regular file (f->priv), or NULL if f is not one. */
struct tmpfs_node *tmpfs_file_node(struct file *f);
/*
 * The hidden tmpfs that memfds of memory file mf live in, and its mount (no new references:
 * they live as long as the process), made if there is none yet. NULL when out of memory.
 */
struct vfs_fs *tmpfs_memfd_fs(struct memfile *mf, struct vfs_mount **mnt);

#endif
