/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /
 *   etc/ passwd                      dir/ sub/ file, rel -> ../etc/passwd, up -> ..
 *   link_abs -> /etc/passwd          link_rel -> etc/passwd       link_dir -> dir/sub
 *   link_root -> /                   dangling -> /nonexistent     empty -> ""
 *   loop -> loop                     c0 -> c1 -> ... -> c40 -> etc/passwd
 *   locked/ (0700 root) inner        shared/ (0710 root:100) doc
 *   mnt/ dev/ (empty)                script (0644, no x bit)
 */
#include <stdio.h>

#include "tests/unit/vfs/tree.h"

void tree_build(struct tree *t)
{
	static char names[40][8], targets[40][8];

	t->fs = testfs_create();
	t->root = testfs_root(t->fs);
	t->etc = testfs_mkdir(t->root, "etc", 0755, 0, 0);
	t->passwd = testfs_mkfile(t->etc, "passwd", 0644, "root:x:0:0:root:/root:/bin/sh\n");
	t->dir = testfs_mkdir(t->root, "dir", 0755, 0, 0);
	t->sub = testfs_mkdir(t->dir, "sub", 0755, 0, 0);
	t->subfile = testfs_mkfile(t->sub, "file", 0644, "in sub\n");
	t->rel = testfs_symlink(t->dir, "rel", "../etc/passwd");
	testfs_symlink(t->dir, "up", "..");
	t->link_abs = testfs_symlink(t->root, "link_abs", "/etc/passwd");
	testfs_symlink(t->root, "link_rel", "etc/passwd");
	t->link_dir = testfs_symlink(t->root, "link_dir", "dir/sub");
	testfs_symlink(t->root, "link_root", "/");
	testfs_symlink(t->root, "dangling", "/nonexistent");
	testfs_symlink(t->root, "empty", "");
	t->loop = testfs_symlink(t->root, "loop", "loop");
	for (int i = 0; i < 40; i++) {
		snprintf(names[i], sizeof(names[i]), "c%d", i);
		snprintf(targets[i], sizeof(targets[i]), "c%d", i + 1);
		testfs_symlink(t->root, names[i], targets[i]);
	}
	testfs_symlink(t->root, "c40", "etc/passwd");
	t->locked = testfs_mkdir(t->root, "locked", 0700, 0, 0);
	t->inner = testfs_mkfile(t->locked, "inner", 0644, "secret\n");
	t->shared = testfs_mkdir(t->root, "shared", 0710, 0, 100);
	t->doc = testfs_mkfile(t->shared, "doc", 0644, "doc\n");
	t->mnt = testfs_mkdir(t->root, "mnt", 0755, 0, 0);
	t->dev = testfs_mkdir(t->root, "dev", 0755, 0, 0);
	t->script = testfs_mkfile(t->root, "script", 0644, "#!/bin/sh\n");
}
