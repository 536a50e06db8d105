/* SPDX-License-Identifier: Apache-2.0 */
/* The fixed tree most VFS tests walk (see tree.c for its shape). */
#ifndef HUSK_TESTS_UNIT_VFS_TREE_H
#define HUSK_TESTS_UNIT_VFS_TREE_H

#include "tests/unit/vfs/testfs.h"

struct tree {
	struct testfs *fs;
	struct testfs_node *root, *etc, *passwd, *dir, *sub, *subfile, *rel, *link_abs, *link_dir,
		*loop, *locked, *inner, *shared, *doc, *mnt, *dev, *script;
};

/* Builds the tree (one reference on t->fs). */
void tree_build(struct tree *t);

#endif
