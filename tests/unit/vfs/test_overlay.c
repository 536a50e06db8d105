/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The root overlay through the VFS, over a lower tmpfs the tests fill first (the overlay never
 * writes it) and an upper tmpfs the tests also look at directly: copy-up, whiteouts, opaque
 * directories, merged listings, renames, links, permissions, O_TMPFILE.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "include/abi/linux/stat.h"
#include "sentry/fs/overlay/overlay.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/vfs/fs.h"
#include "tests/unit/vfs/fsutil.h"

#define OVERLAYFS_SUPER_MAGIC 0x794c7630
#define LINUX_O_TMPFILE (020000000 | O_DIRECTORY)

/* h: the overlay; hl: its lower layer; hu: its upper layer. */
static struct harness h, hl, hu;

static int chown_in(struct harness *x, const char *path, uint32_t uid, uint32_t gid)
{
	struct vfs_path p;
	int err = vfs_lookup_at(&x->t, AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, &p);

	if (err < 0)
		return err;
	err = vfs_path_chown(&x->t, &p, uid, gid);
	vfs_path_put(&p);
	return err;
}

static int utimes_in(struct harness *x, const char *path, time_t at, time_t mt)
{
	struct timespec ts[2] = { { at, 111 }, { mt, 222 } };
	struct vfs_path p;
	int err = vfs_lookup_at(&x->t, AT_FDCWD, path, 0, &p);

	if (err < 0)
		return err;
	err = vfs_path_utimens(&x->t, &p, ts);
	vfs_path_put(&p);
	return err;
}

/*
 * The lower layer:
 *   etc/ passwd (0640 7:8 "lowerdata\n", atime 1000, mtime 2000) hosts
 *   dir/ a b sub/ x          emptydir/          link -> etc/passwd
 *   pub/ (0755 root) file (0666 "pub")          hl1, hl2 (one file)
 */
static void fill_lower(void)
{
	struct harness *x = &hl;

	cr_assert_eq(vfs_mkdirat(&x->t, AT_FDCWD, "/etc", 0755), 0);
	cr_assert_eq(fsu_write_file(x, "/etc/passwd", 0640, "lowerdata\n"), 10);
	cr_assert_eq(chown_in(x, "/etc/passwd", 7, 8), 0);
	cr_assert_eq(utimes_in(x, "/etc/passwd", 1000, 2000), 0);
	cr_assert_eq(fsu_write_file(x, "/etc/hosts", 0644, "hosts\n"), 6);
	cr_assert_eq(vfs_mkdirat(&x->t, AT_FDCWD, "/dir", 0755), 0);
	cr_assert_eq(fsu_write_file(x, "/dir/a", 0644, "a"), 1);
	cr_assert_eq(fsu_write_file(x, "/dir/b", 0644, "b"), 1);
	cr_assert_eq(vfs_mkdirat(&x->t, AT_FDCWD, "/dir/sub", 0755), 0);
	cr_assert_eq(fsu_write_file(x, "/dir/sub/x", 0644, "x"), 1);
	cr_assert_eq(vfs_mkdirat(&x->t, AT_FDCWD, "/emptydir", 0755), 0);
	cr_assert_eq(vfs_symlinkat(&x->t, "etc/passwd", AT_FDCWD, "/link"), 0);
	cr_assert_eq(vfs_mkdirat(&x->t, AT_FDCWD, "/pub", 0755), 0);
	cr_assert_eq(fsu_write_file(x, "/pub/file", 0666, "pub"), 3);
	cr_assert_eq(fsu_write_file(x, "/hl1", 0644, "hard"), 4);
	cr_assert_eq(vfs_linkat(&x->t, AT_FDCWD, "/hl1", AT_FDCWD, "/hl2", 0), 0);
}

static void setup(void)
{
	struct vfs_fs *lower = tmpfs_create(NULL, 0, 0755, 0, 0);
	struct vfs_fs *upper = tmpfs_create(NULL, 0, 0755, 0, 0);
	struct vfs_fs *ovl;

	cr_assert(lower && upper);
	ovl = overlay_create(lower, upper);
	cr_assert_not_null(ovl);
	fsu_harness_init(&hl, lower);
	fsu_harness_init(&hu, upper);
	fsu_harness_init(&h, ovl);
	fs_context_set_umask(hl.t.fs, 0);
	fs_context_set_umask(h.t.fs, 0);
	fill_lower();
}

static void teardown(void)
{
	harness_fini(&h);
	harness_fini(&hu);
	harness_fini(&hl);
}

TestSuite(overlay, .init = setup, .fini = teardown);

static struct vfs_attr attr_of(struct harness *x, const char *path)
{
	struct vfs_attr a;

	cr_assert_eq(fsu_stat(x, path, true, &a), 0, "stat %s", path);
	return a;
}

static void expect_content(struct harness *x, const char *path, const char *want)
{
	char buf[256];

	cr_assert_eq(fsu_read_file(x, path, buf, sizeof(buf)), (ssize_t)strlen(want), "read %s",
		     path);
	cr_assert_str_eq(buf, want, "contents of %s", path);
}

static void expect_list(struct harness *x, const char *path, const char *want)
{
	char buf[512];

	cr_assert_eq(fsu_list(x, path, buf, sizeof(buf)), 0, "list %s", path);
	cr_assert_str_eq(buf, want, "listing of %s", path);
}

static int open_close(struct harness *x, const char *path, int flags)
{
	struct file *f;
	int err = vfs_open(&x->t, AT_FDCWD, path, flags, 0644, &f);

	if (err == 0)
		file_put(f);
	return err;
}

static void expect_missing(struct harness *x, const char *path)
{
	struct vfs_attr a;

	cr_assert_eq(fsu_stat(x, path, true, &a), -ENOENT, "%s should not exist", path);
}

/* --- copy-up --- */

Test(overlay, copy_up_keeps_contents_mode_owner_times_and_inode)
{
	struct vfs_attr before = attr_of(&h, "/etc/passwd"), after, up;

	expect_missing(&hu, "/etc/passwd");
	cr_assert_eq(open_close(&h, "/etc/passwd", O_RDWR), 0);
	up = attr_of(&hu, "/etc/passwd"); /* it is in the upper layer now */
	cr_assert_eq(up.size, 10);
	after = attr_of(&h, "/etc/passwd");
	cr_assert_eq(after.ino, before.ino);
	cr_assert_eq(after.dev, before.dev);
	cr_assert_eq(after.mode, S_IFREG | 0640);
	cr_assert_eq(after.uid, 7);
	cr_assert_eq(after.gid, 8);
	cr_assert_eq(after.size, 10);
	cr_assert_eq(after.mtime.tv_sec, 2000);
	cr_assert_eq(after.mtime.tv_nsec, 222);
	cr_assert_eq(after.atime.tv_sec, 1000);
	cr_assert_eq(after.nlink, 1);
	expect_content(&h, "/etc/passwd", "lowerdata\n");
	/* The copied-up parent keeps its attributes too. */
	cr_assert_eq(attr_of(&hu, "/etc").mode, S_IFDIR | 0755);
}

Test(overlay, writes_go_to_the_upper_copy_only)
{
	cr_assert_eq(fsu_append(&h, "/etc/passwd", "more\n"), 5);
	expect_content(&h, "/etc/passwd", "lowerdata\nmore\n");
	expect_content(&hl, "/etc/passwd", "lowerdata\n");
	/* O_TRUNC copies up nothing of the data. */
	cr_assert_eq(fsu_write_file(&h, "/etc/hosts", 0644, "new"), 3);
	expect_content(&h, "/etc/hosts", "new");
	expect_content(&hl, "/etc/hosts", "hosts\n");
}

Test(overlay, read_only_open_and_stat_copy_nothing_up)
{
	expect_content(&h, "/dir/sub/x", "x");
	attr_of(&h, "/dir/sub/x");
	cr_assert_eq(vfs_access(&h.t, AT_FDCWD, "/dir/sub/x", W_OK, 0), 0);
	expect_missing(&hu, "/dir");
}

Test(overlay, chown_of_a_symlink_copies_the_link_up)
{
	char buf[64];
	struct vfs_path p;
	ssize_t n;

	cr_assert_eq(chown_in(&h, "/link", 5, 6), 0);
	cr_assert_eq(attr_of(&hu, "/link").uid, 5);
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/link", AT_SYMLINK_NOFOLLOW, &p), 0);
	n = vfs_path_readlink(&p, buf, sizeof(buf));
	vfs_path_put(&p);
	cr_assert_eq(n, 10);
	cr_assert_eq(memcmp(buf, "etc/passwd", 10), 0);
	expect_content(&h, "/link", "lowerdata\n");
}

Test(overlay, upper_only_files_get_inode_numbers_apart_from_the_lower_ones)
{
	struct vfs_attr n, l;

	cr_assert_eq(fsu_write_file(&h, "/new", 0644, ""), 0);
	n = attr_of(&h, "/new");
	l = attr_of(&hl, "/etc/passwd");
	cr_assert_neq(n.ino, l.ino);
	cr_assert_neq(n.ino, attr_of(&hu, "/new").ino, "upper-only inodes are marked");
}

/* --- whiteouts and opaque directories --- */

Test(overlay, unlink_leaves_a_whiteout_that_hides_the_lower_name)
{
	struct vfs_attr w;

	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/etc/hosts", 0), 0);
	expect_missing(&h, "/etc/hosts");
	expect_list(&h, "/etc", "passwd");
	cr_assert_eq(open_close(&h, "/etc/hosts", O_RDONLY), -ENOENT);
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/etc/hosts", 0), -ENOENT);
	w = attr_of(&hu, "/etc/hosts");
	cr_assert(S_ISCHR(w.mode));
	cr_assert_eq(w.rdev, 0);
	expect_content(&hl, "/etc/hosts", "hosts\n");
	/* A new file at the name starts empty, not with the lower contents. */
	cr_assert_eq(open_close(&h, "/etc/hosts", O_CREAT | O_EXCL | O_WRONLY), 0);
	expect_content(&h, "/etc/hosts", "");
	expect_list(&h, "/etc", "hosts passwd");
}

Test(overlay, rmdir_of_a_lower_directory_needs_it_empty_in_the_merge)
{
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/dir/sub", AT_REMOVEDIR), -ENOTEMPTY);
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/dir/sub/x", 0), 0);
	expect_list(&h, "/dir/sub", "");
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/dir/sub", AT_REMOVEDIR), 0);
	expect_missing(&h, "/dir/sub");
	expect_list(&h, "/dir", "a b");
	cr_assert(S_ISCHR(attr_of(&hu, "/dir/sub").mode));
}

Test(overlay, new_directory_over_a_removed_one_is_opaque)
{
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/dir/sub/x", 0), 0);
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/dir/sub", AT_REMOVEDIR), 0);
	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/dir/sub", 0700), 0);
	expect_list(&h, "/dir/sub", "");
	expect_missing(&h, "/dir/sub/x");
	cr_assert_eq(attr_of(&h, "/dir/sub").mode, S_IFDIR | 0700);
	cr_assert_eq(attr_of(&h, "/dir/sub").nlink, 2);
	cr_assert_eq(fsu_write_file(&h, "/dir/sub/y", 0644, "y"), 1);
	expect_list(&h, "/dir/sub", "y");
	/* The lower layer still has the old tree. */
	expect_list(&hl, "/dir/sub", "x");
}

Test(overlay, removing_a_merged_directory_removes_its_whiteouts)
{
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/dir/sub/x", 0), 0);
	cr_assert_eq(fsu_write_file(&h, "/dir/sub/y", 0644, "y"), 1);
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/dir/sub/y", 0), 0);
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/dir/sub", AT_REMOVEDIR), 0);
	expect_missing(&h, "/dir/sub");
	cr_assert(S_ISCHR(attr_of(&hu, "/dir/sub").mode));
}

/* --- merged listings --- */

Test(overlay, readdir_merges_layers_without_duplicates_or_whiteouts)
{
	struct fsu_entry v[32];
	struct vfs_attr lb = attr_of(&hl, "/dir/b");
	struct file *f;
	int n;

	cr_assert_eq(fsu_write_file(&h, "/dir/c", 0644, "c"), 1);
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/dir/a", 0), 0);
	cr_assert_eq(fsu_append(&h, "/dir/b", "+"), 1); /* b is in both layers now */
	expect_list(&h, "/dir", "b c sub");
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/dir", O_RDONLY | O_DIRECTORY, 0, &f), 0);
	n = fsu_readdir(f, v, 32);
	cr_assert_eq(n, 5, "got %d entries", n);
	cr_assert_eq(fsu_readdir(f, v + n, 32 - n), 0);
	file_put(f);
	for (int i = 0; i < n; i++) {
		if (!strcmp(v[i].name, "b")) {
			cr_assert_eq(v[i].ino, lb.ino, "copied-up entries keep the lower inode");
			cr_assert_eq(v[i].type, DT_REG);
		}
		if (!strcmp(v[i].name, "sub"))
			cr_assert_eq(v[i].type, DT_DIR);
		if (!strcmp(v[i].name, "c"))
			cr_assert_eq(v[i].ino, attr_of(&h, "/dir/c").ino);
	}
}

Test(overlay, readdir_positions_are_stable_across_seek_back)
{
	struct fsu_entry first[3], rest[32], again[32];
	struct file *f;
	int64_t mark;
	int n, m;

	for (int i = 0; i < 5; i++) {
		char p[16];

		snprintf(p, sizeof(p), "/dir/u%d", i);
		cr_assert_eq(fsu_write_file(&h, p, 0644, ""), 0);
	}
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/dir", O_RDONLY | O_DIRECTORY, 0, &f), 0);
	cr_assert_eq(fsu_readdir(f, first, 3), 3);
	mark = f->pos;
	n = fsu_readdir(f, rest, 32);
	cr_assert_eq(n, 3 + 5 - 1, "got %d", n); /* a b sub u0..u4, one of them already read */
	f->pos = f->ops->llseek(f, mark, SEEK_SET);
	cr_assert_eq(f->pos, mark);
	m = fsu_readdir(f, again, 32);
	cr_assert_eq(m, n);
	for (int i = 0; i < n; i++)
		cr_assert_str_eq(again[i].name, rest[i].name);
	/* Rewinding lists again from the start, including a name added since. */
	cr_assert_eq(fsu_write_file(&h, "/dir/late", 0644, ""), 0);
	f->pos = f->ops->llseek(f, 0, SEEK_SET);
	m = fsu_readdir(f, again, 32);
	cr_assert_eq(m, 2 + 3 + 5 + 1);
	file_put(f);
}

/* --- renames --- */

Test(overlay, rename_of_a_directory_with_a_lower_part_is_exdev)
{
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/dir", AT_FDCWD, "/dir2", 0), -EXDEV);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/emptydir", AT_FDCWD, "/e2", 0), -EXDEV);
	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/updir", 0755), 0);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/dir", AT_FDCWD, "/updir", VFS_RENAME_EXCHANGE),
		     -EXDEV);
	expect_list(&h, "/dir", "a b sub");
}

Test(overlay, rename_of_an_upper_directory_moves_its_contents)
{
	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/up", 0755), 0);
	cr_assert_eq(fsu_write_file(&h, "/up/f", 0644, "f"), 1);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/up", AT_FDCWD, "/dir/moved", 0), 0);
	expect_content(&h, "/dir/moved/f", "f");
	expect_missing(&h, "/up");
	expect_list(&h, "/dir", "a b moved sub");
}

Test(overlay, rename_of_a_lower_file_copies_it_up_and_whites_out_the_old_name)
{
	struct vfs_attr before = attr_of(&h, "/etc/passwd");

	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/etc/passwd", AT_FDCWD, "/dir/pw", 0), 0);
	expect_missing(&h, "/etc/passwd");
	expect_list(&h, "/etc", "hosts");
	expect_content(&h, "/dir/pw", "lowerdata\n");
	cr_assert_eq(attr_of(&h, "/dir/pw").ino, before.ino);
	cr_assert_eq(attr_of(&h, "/dir/pw").uid, 7);
	/* Back again: the whiteout gives way. */
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/dir/pw", AT_FDCWD, "/etc/passwd", 0), 0);
	expect_content(&h, "/etc/passwd", "lowerdata\n");
	expect_list(&h, "/etc", "hosts passwd");
	expect_list(&h, "/dir", "a b sub");
}

Test(overlay, rename_noreplace_and_exchange_of_lower_files)
{
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/dir/a", AT_FDCWD, "/dir/b",
				   VFS_RENAME_NOREPLACE),
		     -EEXIST);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/dir/a", AT_FDCWD, "/dir/b",
				   VFS_RENAME_EXCHANGE),
		     0);
	expect_content(&h, "/dir/a", "b");
	expect_content(&h, "/dir/b", "a");
	expect_list(&h, "/dir", "a b sub");
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/dir/a", AT_FDCWD, "/dir/b", 0), 0);
	expect_content(&h, "/dir/b", "b");
	expect_list(&h, "/dir", "b sub");
}

Test(overlay, rename_over_an_empty_lower_directory_hides_the_lower_one)
{
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/dir/sub/x", 0), 0);
	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/new", 0755), 0);
	cr_assert_eq(fsu_write_file(&h, "/new/n", 0644, "n"), 1);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/new", AT_FDCWD, "/emptydir", 0), 0);
	expect_list(&h, "/emptydir", "n");
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/emptydir", AT_FDCWD, "/dir/sub", 0), 0);
	expect_list(&h, "/dir/sub", "n");
	expect_missing(&h, "/dir/sub/x");
	expect_missing(&h, "/emptydir");
	expect_list(&h, "/", "dir etc hl1 hl2 link pub");
}

Test(overlay, rename_of_a_directory_onto_a_non_empty_merged_one_is_enotempty)
{
	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/new", 0755), 0);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/new", AT_FDCWD, "/dir/sub", 0), -ENOTEMPTY);
}

/* --- links --- */

Test(overlay, hard_links_count_in_the_merged_view)
{
	cr_assert_eq(attr_of(&h, "/hl1").nlink, 2);
	cr_assert_eq(vfs_linkat(&h.t, AT_FDCWD, "/etc/passwd", AT_FDCWD, "/etc/pw2", 0), 0);
	cr_assert_eq(attr_of(&h, "/etc/passwd").nlink, 2);
	cr_assert_eq(attr_of(&h, "/etc/pw2").nlink, 2);
	cr_assert_eq(attr_of(&h, "/etc/pw2").ino, attr_of(&h, "/etc/passwd").ino);
	cr_assert_eq(fsu_append(&h, "/etc/pw2", "x"), 1);
	expect_content(&h, "/etc/passwd", "lowerdata\nx");
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/etc/passwd", 0), 0);
	cr_assert_eq(attr_of(&h, "/etc/pw2").nlink, 1);
	expect_missing(&h, "/etc/passwd");
}

Test(overlay, tmpfile_in_a_lower_directory_can_be_linked)
{
	struct file *f;
	int fd;

	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/dir", LINUX_O_TMPFILE | O_RDWR, 0600, &f), 0);
	cr_assert_eq(fsu_fwrite(f, "tmp", 3), 3);
	fd = fdtable_install(h.t.fdt, f, 0, false, 1024);
	file_put(f);
	cr_assert_geq(fd, 0);
	expect_list(&h, "/dir", "a b sub");
	cr_assert_eq(vfs_linkat(&h.t, fd, "", AT_FDCWD, "/dir/t", AT_EMPTY_PATH), 0);
	expect_content(&h, "/dir/t", "tmp");
	expect_list(&h, "/dir", "a b sub t");
	cr_assert_eq(attr_of(&h, "/dir/t").nlink, 1);
	cr_assert_eq(fdtable_close(h.t.fdt, fd), 0);
}

/* --- permissions --- */

Test(overlay, non_root_may_write_a_writable_lower_file_in_a_read_only_directory)
{
	harness_set_cred(&h, 1000, 1000);
	cr_assert_eq(fsu_append(&h, "/pub/file", "!"), 1);
	expect_content(&h, "/pub/file", "pub!");
	cr_assert_eq(attr_of(&h, "/pub/file").uid, 0);
	cr_assert_eq(fsu_write_file(&h, "/pub/other", 0644, ""), -EACCES);
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/pub/file", 0), -EACCES);
	cr_assert_eq(open_close(&h, "/etc/passwd", O_RDONLY), -EACCES);
	cr_assert_eq(open_close(&h, "/etc/hosts", O_WRONLY), -EACCES);
	/* Refused writes copy nothing up. */
	expect_missing(&hu, "/etc");
}

Test(overlay, statfs_reports_the_overlay_type)
{
	struct linux_statfs st;
	struct vfs_path p;

	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/etc", 0, &p), 0);
	cr_assert_eq(vfs_path_statfs(&p, &st), 0);
	vfs_path_put(&p);
	cr_assert_eq(st.f_type, OVERLAYFS_SUPER_MAGIC);
}
