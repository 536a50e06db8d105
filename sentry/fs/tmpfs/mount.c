/* SPDX-License-Identifier: Apache-2.0 */
/* Mounting a tmpfs in the sandbox's tree (/dev/shm, husk do --tmpfs). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "common/err.h"
#include "common/util.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/kernel/kernel.h"
#include "sentry/vfs/internal.h"

int vfs_mount_tmpfs(struct kernel *k, const char *path, uint64_t size_limit)
{
	struct vfs_fs *fs;
	int err;

	if (path[0] != '/')
		return -EINVAL;
	fs = tmpfs_create(&k->mf, size_limit, 01777, 0, 0);
	if (!fs)
		return -ENOMEM;
	err = vfs_mount_at(k, path, fs, MS_NOSUID | MS_NODEV);
	vfs_fs_put(fs);
	return err;
}
