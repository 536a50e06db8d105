/* SPDX-License-Identifier: Apache-2.0 */
/* Filesystem contexts: a task's root, working directory and umask (Linux's fs_struct). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

/* common/util.h before sys/user.h (through task.h): util.h would redefine PAGE_SIZE. */
#include "common/util.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/vfs/internal.h"
#include "sentry/vfs/mount_user.h"

struct fs_context *fs_context_create(struct kernel *k)
{
	struct fs_context *fs = calloc(1, sizeof(*fs));

	if (!fs)
		return NULL;
	refcount_init(&fs->ref, 1);
	pthread_mutex_init(&fs->lock, NULL);
	/* k's root, or the pod member's tree the calling thread sets up (vfs_setup_root_begin). */
	vfs_kernel_root(k, &fs->root);
	vfs_path_copy(&fs->root, &fs->root);
	vfs_path_copy(&fs->cwd, &fs->root);
	fs->umask = 022;
	return fs;
}

void fs_context_get(struct fs_context *fs)
{
	refcount_inc(&fs->ref);
}

int fs_context_users(struct fs_context *fs)
{
	return refcount_read(&fs->ref);
}

void fs_context_put(struct fs_context *fs)
{
	if (!fs || !refcount_dec(&fs->ref))
		return;
	vfs_path_put(&fs->root);
	vfs_path_put(&fs->cwd);
	vfs_mnt_ns_put(fs->mnt_ns);
	pthread_mutex_destroy(&fs->lock);
	free(fs);
}

struct fs_context *fs_context_copy(struct fs_context *fs)
{
	struct fs_context *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	refcount_init(&n->ref, 1);
	pthread_mutex_init(&n->lock, NULL);
	pthread_mutex_lock(&fs->lock);
	vfs_path_copy(&n->root, &fs->root);
	vfs_path_copy(&n->cwd, &fs->cwd);
	n->umask = fs->umask;
	n->mnt_ns = fs->mnt_ns;
	if (n->mnt_ns)
		vfs_mnt_ns_get(n->mnt_ns);
	pthread_mutex_unlock(&fs->lock);
	return n;
}

void fs_context_get_root(struct fs_context *fs, struct vfs_path *out)
{
	pthread_mutex_lock(&fs->lock);
	vfs_path_copy(out, &fs->root);
	pthread_mutex_unlock(&fs->lock);
}

void fs_context_get_cwd(struct fs_context *fs, struct vfs_path *out)
{
	pthread_mutex_lock(&fs->lock);
	vfs_path_copy(out, &fs->cwd);
	pthread_mutex_unlock(&fs->lock);
}

void fs_context_set_cwd(struct fs_context *fs, const struct vfs_path *p)
{
	struct vfs_path old;

	pthread_mutex_lock(&fs->lock);
	old = fs->cwd;
	vfs_path_copy(&fs->cwd, p);
	pthread_mutex_unlock(&fs->lock);
	vfs_path_put(&old);
}

unsigned int fs_context_set_umask(struct fs_context *fs, unsigned int mask)
{
	unsigned int old;

	pthread_mutex_lock(&fs->lock);
	old = fs->umask;
	fs->umask = mask & 0777;
	pthread_mutex_unlock(&fs->lock);
	return old;
}

unsigned int fs_context_umask(struct fs_context *fs)
{
	unsigned int mask;

	pthread_mutex_lock(&fs->lock);
	mask = fs->umask;
	pthread_mutex_unlock(&fs->lock);
	return mask;
}

int fs_context_chdir(struct task *t, const char *path)
{
	struct vfs_path p;
	int err;

	err = vfs_lookup_at(t, AT_FDCWD, path, 0, &p);
	if (err < 0)
		return err;
	if (!vfs_node_is_dir(p.node)) {
		vfs_path_put(&p);
		return -ENOTDIR;
	}
	err = vfs_path_permission(t, &p, VFS_MAY_EXEC);
	if (err == 0)
		fs_context_set_cwd(t->fs, &p);
	vfs_path_put(&p);
	return err;
}

int fs_context_fchdir(struct task *t, struct file *f)
{
	struct vfs_path p;
	int err;

	err = vfs_file_path(f, &p);
	if (err < 0)
		return -ENOTDIR;
	if (!vfs_node_is_dir(p.node)) {
		vfs_path_put(&p);
		return -ENOTDIR;
	}
	err = vfs_path_permission(t, &p, VFS_MAY_EXEC);
	if (err == 0)
		fs_context_set_cwd(t->fs, &p);
	vfs_path_put(&p);
	return err;
}

int vfs_getcwd(struct task *t, char *buf, size_t size)
{
	struct vfs_path root, cwd;
	int n;

	vfs_task_root(t, &root);
	vfs_dirfd_path(t, AT_FDCWD, &cwd);
	if (!root.mnt || !cwd.mnt)
		n = -ENOENT; /* nothing mounted yet */
	else
		n = vfs_path_to_string(&root, &cwd, buf, size);
	vfs_path_put(&cwd);
	vfs_path_put(&root);
	return n < 0 ? n : n + 1;
}
