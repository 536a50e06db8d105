/* SPDX-License-Identifier: Apache-2.0 */
/* The gofer's filesystem as an instance, for layering (the root overlay's lower layer). */
#ifndef HUSK_SENTRY_FS_GOFER_FS_H
#define HUSK_SENTRY_FS_GOFER_FS_H

#include <stdbool.h>

struct gofer_client;
struct vfs_fs;

/*
 * Attaches to the gofer's served root and returns a filesystem instance over it (one
 * reference), read-only (host changes are then not tracked) or writable. gc is not owned: it
 * must outlive the filesystem. Returns 0 and *out or -errno.
 */
int gofer_fs_create(struct gofer_client *gc, bool readonly, struct vfs_fs **out);

/*
 * Gives the filesystem the kernel's memory file (not owned; must outlive it) for its page
 * cache, so that its files can be mapped MAP_SHARED. Call before any file is mapped; without it
 * MAP_SHARED of its files gives -ENODEV. vfs_mount_root and vfs_mount_volume call it.
 */
struct memfile;
void gofer_fs_set_memfile(struct vfs_fs *fs, struct memfile *mf);

/*
 * Sets how many donated FDs of read-only files fs (a read-only gofer filesystem) keeps for
 * repeated opens (128 by default; 0 disables the cache), closing the least recently used past
 * it. gofer_fs_fd_cache_count gives how many it holds now (for tests).
 */
void gofer_fs_set_fd_cache(struct vfs_fs *fs, int max);
int gofer_fs_fd_cache_count(struct vfs_fs *fs);

/*
 * Mounts the tree gc serves (a volume: husk do --volume HOST:GUEST[:ro]) at the absolute guest
 * path, creating missing directories of the path as vfs_mount_at does; read-only (MS_RDONLY,
 * writes -EROFS) or writable through the gofer. The host may change a volume behind the
 * sandbox: its attributes are asked for on every stat. gc must outlive the mount.
 * Returns 0 or -errno.
 */
struct kernel;
int vfs_mount_volume(struct kernel *k, struct gofer_client *gc, const char *path, bool readonly);

/*
 * vfs_mount_volume with the mount's flags: MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC (config.json
 * bind mounts' ro, nosuid, nodev, noexec). gc may serve a single regular file (the gofer of a
 * file bind mount): it is then mounted over the file at path, which is made (empty, 0644, and
 * its missing parent directories) when the tree has no such name, as runc makes mountpoints.
 * Returns 0 or -errno (-EISDIR: a file over a directory; -ENOTDIR: a directory over a file).
 */
int vfs_mount_volume_flags(struct kernel *k, struct gofer_client *gc, const char *path, int flags);

#endif
