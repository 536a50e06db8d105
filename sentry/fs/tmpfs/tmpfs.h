/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tmpfs: a filesystem in sentry memory. File data lives in 4 KiB pages of the memory file,
 * allocated on write (holes read as zeros), up to a size limit (ENOSPC past it); MAP_SHARED
 * mappings map those very pages (file op get_pages). Hard links, symlinks, device
 * nodes, FIFOs (opened as pipes of sentry/fs/pipe, one per inode) and sockets (nodes that
 * unix sockets bind; opening one gives -ENXIO, as Linux). Each name is its own vfs_node; names
 * of one file share a tmpfs inode.
 *
 * It is also the upper layer of the root overlay (sentry/fs/overlay), which keeps two facts per
 * inode here: whether a directory is opaque and the inode number a copied-up file had below.
 */
#ifndef HUSK_SENTRY_FS_TMPFS_H
#define HUSK_SENTRY_FS_TMPFS_H

#include <stdbool.h>
#include <stdint.h>

struct kernel;
struct vfs_fs;
struct vfs_node;

#define TMPFS_MAGIC 0x01021994

/*
 * A new tmpfs (one reference) whose root directory has mode (permission bits, e.g. 01777) and
 * owner uid:gid. size_limit is in bytes of file data; 0 means Linux's default, half of the
 * host's physical memory. mf is the kernel's memory file (not owned; must outlive the
 * filesystem): file data lives in its pages, so that files can be mapped MAP_SHARED (the
 * get_pages file op). mf NULL keeps file data in heap pages and MAP_SHARED gives -ENODEV.
 * Returns it or NULL when out of memory.
 */
struct memfile;
struct vfs_fs *tmpfs_create(struct memfile *mf, uint64_t size_limit, uint32_t mode, uint32_t uid,
			    uint32_t gid);

/* Whether n is a node of a tmpfs. */
bool tmpfs_is_node(const struct vfs_node *n);

/* The overlay's marks on an upper directory and an upper file (n must be a tmpfs node). */
bool tmpfs_opaque(struct vfs_node *dir);
void tmpfs_set_opaque(struct vfs_node *dir, bool opaque);
uint64_t tmpfs_origin_ino(struct vfs_node *n);
void tmpfs_set_origin_ino(struct vfs_node *n, uint64_t ino);

/*
 * Parses a tmpfs size: a number of bytes with an optional k, m or g suffix (powers of 1024),
 * as mount -o size= takes it. Returns 0 and *out, or -EINVAL.
 */
int tmpfs_parse_size(const char *s, uint64_t *out);

/*
 * Mounts a new tmpfs (mode 01777, owned by root, size_limit as for tmpfs_create) at the absolute
 * guest path, creating the missing directories of the path (mode 0755, root's) on the way.
 * Call after the root is mounted. Returns 0 or -errno.
 */
int vfs_mount_tmpfs(struct kernel *k, const char *path, uint64_t size_limit);

/* File seals (fcntl F_ADD_SEALS, memfd_create), Linux's values. */
#define LINUX_F_SEAL_SEAL 0x0001
#define LINUX_F_SEAL_SHRINK 0x0002
#define LINUX_F_SEAL_GROW 0x0004
#define LINUX_F_SEAL_WRITE 0x0008
#define LINUX_F_SEAL_FUTURE_WRITE 0x0010
#define LINUX_F_SEAL_EXEC 0x0020
#define LINUX_F_SEAL_ALL 0x003f

struct file;

/*
 * F_GET_SEALS: the seals of tmpfs file f (F_SEAL_SEAL for every file but a memfd made with
 * MFD_ALLOW_SEALING). Returns them, or -EINVAL when f is not a tmpfs file.
 */
int tmpfs_file_seals(struct file *f);
/*
 * F_ADD_SEALS: adds seals to f's file. Returns 0, -EINVAL (not a tmpfs file, unknown seals),
 * -EPERM (f not open for writing, or F_SEAL_SEAL set). Writable shared mappings do not make
 * F_SEAL_WRITE fail with EBUSY (they are not counted).
 */
int tmpfs_file_add_seals(struct file *f, unsigned int seals);

#define TMPFS_MEMFD_NAME_MAX 249 /* NAME_MAX minus "memfd:" */
#define TMPFS_MEMFD_ALLOW_SEALING 0x1u
#define TMPFS_MEMFD_NOEXEC 0x2u /* MFD_NOEXEC_SEAL: mode 0666, F_SEAL_EXEC, sealable */

/*
 * memfd_create(2): a new file with no name in a hidden tmpfs of memory file mf, opened O_RDWR.
 * Returns 0 and *out (one reference), -EINVAL (name longer than TMPFS_MEMFD_NAME_MAX), -ENOMEM.
 */
int tmpfs_memfd_create(struct memfile *mf, const char *name, unsigned int flags, struct file **out);
/* The memfd_create name of n's file (for /proc/PID/fd), or NULL if it is not a memfd. */
const char *tmpfs_memfd_name(const struct vfs_node *n);

#endif
