/* SPDX-License-Identifier: Apache-2.0 */
/* What every anonymous-inode file shares (anon.h): its file on the anonymous mount. */
#include <stddef.h>
#include <time.h>

#include "sentry/fs/anon/anon.h"
#include "sentry/vfs/fs.h"
#include "sentry/vfs/vfs.h"

struct file *anon_file_create(struct vfs_node *node, const struct file_ops *ops, int flags,
			      void *priv)
{
	struct file *f = file_alloc(ops, flags, priv);

	if (!f) {
		vfs_node_put(node); /* releases the object */
		return NULL;
	}
	f->node = node; /* the node's first reference moves to the file */
	f->mnt = vfs_anon_mount();
	vfs_mount_get(f->mnt);
	return f;
}
