/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tmpfs through the VFS: link counts, the size limit (short writes, ENOSPC), sticky and setgid
 * directories, permissions of a non-root task, renames, O_TMPFILE + linkat, stable readdir.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "include/abi/linux/stat.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/vfs/fs.h"
#include "tests/unit/vfs/fsutil.h"

#define PAGE 4096
#define LIMIT_PAGES 8

static struct harness h;

static void setup(void)
{
	struct vfs_fs *fs = tmpfs_create(NULL, LIMIT_PAGES * PAGE, 0755, 0, 0);

	cr_assert_not_null(fs);
	fsu_harness_init(&h, fs);
	/* Modes in the tests are the modes wanted. */
	fs_context_set_umask(h.t.fs, 0);
}

static void teardown(void)
{
	harness_fini(&h);
}

TestSuite(tmpfs, .init = setup, .fini = teardown);

static uint64_t nlink_of(const char *path)
{
	struct vfs_attr a;

	cr_assert_eq(fsu_stat(&h, path, true, &a), 0, "stat %s", path);
	return a.nlink;
}

static uint32_t mode_of(const char *path)
{
	struct vfs_attr a;

	cr_assert_eq(fsu_stat(&h, path, true, &a), 0, "stat %s", path);
	return a.mode;
}

static void as_user(uint32_t uid, uint32_t gid)
{
	harness_set_cred(&h, uid, gid);
}

static void as_root(void)
{
	harness_set_cred(&h, 0, 0);
}

static int chmod_path(const char *path, unsigned int mode)
{
	struct vfs_path p;
	int err = vfs_lookup_at(&h.t, AT_FDCWD, path, 0, &p);

	if (err < 0)
		return err;
	err = vfs_path_chmod(&h.t, &p, mode);
	vfs_path_put(&p);
	return err;
}

static int chown_path(const char *path, uint32_t uid, uint32_t gid)
{
	struct vfs_path p;
	int err = vfs_lookup_at(&h.t, AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, &p);

	if (err < 0)
		return err;
	err = vfs_path_chown(&h.t, &p, uid, gid);
	vfs_path_put(&p);
	return err;
}

static int open_close(const char *path, int flags)
{
	struct file *f;
	int err = vfs_open(&h.t, AT_FDCWD, path, flags, 0644, &f);

	if (err == 0)
		file_put(f);
	return err;
}

/* --- link counts --- */

Test(tmpfs, link_counts_follow_links_and_subdirectories)
{
	cr_assert_eq(nlink_of("/"), 2);
	cr_assert_eq(fsu_write_file(&h, "/f", 0644, "x"), 1);
	cr_assert_eq(nlink_of("/f"), 1);
	cr_assert_eq(vfs_linkat(&h.t, AT_FDCWD, "/f", AT_FDCWD, "/g", 0), 0);
	cr_assert_eq(nlink_of("/f"), 2);
	cr_assert_eq(nlink_of("/g"), 2);
	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/d", 0755), 0);
	cr_assert_eq(nlink_of("/d"), 2);
	cr_assert_eq(nlink_of("/"), 3);
	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/d/e", 0755), 0);
	cr_assert_eq(nlink_of("/d"), 3);
	/* A directory moving to another parent moves its ".." link. */
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/d/e", AT_FDCWD, "/e", 0), 0);
	cr_assert_eq(nlink_of("/d"), 2);
	cr_assert_eq(nlink_of("/"), 4);
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/g", 0), 0);
	cr_assert_eq(nlink_of("/f"), 1);
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/e", AT_REMOVEDIR), 0);
	cr_assert_eq(nlink_of("/"), 3);
}

Test(tmpfs, open_file_keeps_data_after_last_unlink_with_nlink_zero)
{
	struct file *f;
	struct vfs_attr a;
	char buf[8] = { 0 };

	cr_assert_eq(fsu_write_file(&h, "/f", 0644, "kept"), 4);
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/f", O_RDONLY, 0, &f), 0);
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/f", 0), 0);
	cr_assert_eq(file_getattr(f, &a), 0);
	cr_assert_eq(a.nlink, 0);
	cr_assert_eq(file_pread(f, buf, sizeof(buf) - 1, 0), 4);
	cr_assert_str_eq(buf, "kept");
	file_put(f);
}

Test(tmpfs, exchange_of_file_and_directory_moves_the_dotdot_link)
{
	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/a", 0755), 0);
	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/a/sub", 0755), 0);
	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/b", 0755), 0);
	cr_assert_eq(fsu_write_file(&h, "/b/file", 0644, ""), 0);
	cr_assert_eq(nlink_of("/a"), 3);
	cr_assert_eq(nlink_of("/b"), 2);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/a/sub", AT_FDCWD, "/b/file",
				   VFS_RENAME_EXCHANGE),
		     0);
	cr_assert(S_ISREG(mode_of("/a/sub")));
	cr_assert(S_ISDIR(mode_of("/b/file")));
	cr_assert_eq(nlink_of("/a"), 2);
	cr_assert_eq(nlink_of("/b"), 3);
}

/* --- the size limit --- */

Test(tmpfs, write_past_the_limit_is_short_then_enospc)
{
	static char big[(LIMIT_PAGES + 2) * PAGE];
	struct file *f;

	memset(big, 'x', sizeof(big));
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/big", O_CREAT | O_WRONLY, 0644, &f), 0);
	cr_assert_eq(fsu_fwrite(f, big, sizeof(big)), LIMIT_PAGES * PAGE);
	cr_assert_eq(fsu_fwrite(f, "y", 1), -ENOSPC);
	file_put(f);
	/* Other files cannot get a page either; a hole costs nothing. */
	cr_assert_eq(fsu_write_file(&h, "/other", 0644, "z"), -ENOSPC);
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/other", O_WRONLY, 0, &f), 0);
	cr_assert_eq(vfs_file_truncate(&h.t, f, 1 << 20), 0);
	file_put(f);
	/* Space comes back when the file shrinks. */
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/big", O_WRONLY, 0, &f), 0);
	cr_assert_eq(vfs_file_truncate(&h.t, f, PAGE), 0);
	file_put(f);
	cr_assert_eq(fsu_write_file(&h, "/other", 0644, "z"), 1);
}

Test(tmpfs, unlinked_file_frees_its_pages_on_last_close)
{
	static char big[LIMIT_PAGES * PAGE];
	struct file *f;

	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/big", O_CREAT | O_RDWR, 0644, &f), 0);
	cr_assert_eq(fsu_fwrite(f, big, sizeof(big)), (ssize_t)sizeof(big));
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/big", 0), 0);
	/* Still open: still charged. */
	cr_assert_eq(fsu_write_file(&h, "/small", 0644, "a"), -ENOSPC);
	file_put(f);
	cr_assert_eq(fsu_write_file(&h, "/small", 0644, "a"), 1);
}

Test(tmpfs, fallocate_past_the_limit_fails_and_keeps_nothing)
{
	struct file *f;
	struct vfs_attr a;

	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/f", O_CREAT | O_RDWR, 0644, &f), 0);
	cr_assert_eq(f->ops->fallocate(f, 0, 0, (LIMIT_PAGES + 1) * PAGE), -ENOSPC);
	cr_assert_eq(file_getattr(f, &a), 0);
	cr_assert_eq(a.size, 0);
	cr_assert_eq(a.blocks, 0, "fallocate left %lld blocks", (long long)a.blocks);
	/* Within the limit it succeeds. */
	cr_assert_eq(f->ops->fallocate(f, 0, 0, LIMIT_PAGES * PAGE), 0);
	cr_assert_eq(file_getattr(f, &a), 0);
	cr_assert_eq(a.size, LIMIT_PAGES * PAGE);
	file_put(f);
}

/* --- sticky and setgid directories --- */

Test(tmpfs, sticky_directory_lets_only_owners_remove_or_rename)
{
	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/tmp", 0777), 0);
	cr_assert_eq(chmod_path("/tmp", 01777), 0);
	as_user(1000, 1000);
	cr_assert_eq(fsu_write_file(&h, "/tmp/mine", 0666, "m"), 1);
	as_user(1001, 1001);
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/tmp/mine", 0), -EPERM);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/tmp/mine", AT_FDCWD, "/tmp/theirs", 0),
		     -EPERM);
	/* Replacing it by a rename is a removal too. */
	cr_assert_eq(fsu_write_file(&h, "/tmp/other", 0666, "o"), 1);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/tmp/other", AT_FDCWD, "/tmp/mine", 0), -EPERM);
	/* Writing it is still allowed by its mode. */
	cr_assert_eq(fsu_append(&h, "/tmp/mine", "w"), 1);
	as_user(1000, 1000);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/tmp/mine", AT_FDCWD, "/tmp/moved", 0), 0);
	as_root();
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/tmp/moved", 0), 0);
}

Test(tmpfs, setgid_directory_gives_its_group_and_bit_to_new_nodes)
{
	struct vfs_attr a;

	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/sg", 0777), 0);
	cr_assert_eq(chown_path("/sg", 0, 50), 0);
	cr_assert_eq(chmod_path("/sg", 02777), 0);
	as_user(1000, 1000);
	cr_assert_eq(fsu_write_file(&h, "/sg/f", 0644, ""), 0);
	cr_assert_eq(fsu_stat(&h, "/sg/f", true, &a), 0);
	cr_assert_eq(a.gid, 50);
	cr_assert_eq(a.uid, 1000);
	cr_assert_eq(a.mode & 07777, 0644);
	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/sg/d", 0755), 0);
	cr_assert_eq(fsu_stat(&h, "/sg/d", true, &a), 0);
	cr_assert_eq(a.gid, 50);
	cr_assert_eq(a.mode & 07777, 02755);
	/* A non-member's new file does not keep a group-executable S_ISGID. */
	cr_assert_eq(open_close("/sg/x", O_CREAT | O_WRONLY), 0);
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/sg/x", 0), 0);
	cr_assert_eq(vfs_mknodat(&h.t, AT_FDCWD, "/sg/x", S_IFREG | 02755, 0), 0);
	cr_assert_eq(mode_of("/sg/x") & 07777, 0755);
	/* chmod by a non-member drops S_ISGID too. */
	cr_assert_eq(chmod_path("/sg/f", 02644), 0);
	cr_assert_eq(mode_of("/sg/f") & 07777, 0644);
}

/* --- permissions of a non-root task --- */

Test(tmpfs, non_root_needs_write_and_search_permission)
{
	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/ro", 0755), 0);
	cr_assert_eq(fsu_write_file(&h, "/ro/secret", 0600, "s"), 1);
	cr_assert_eq(fsu_write_file(&h, "/ro/pub", 0644, "p"), 1);
	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/closed", 0700), 0);
	cr_assert_eq(fsu_write_file(&h, "/closed/f", 0666, "c"), 1);
	as_user(1000, 1000);
	cr_assert_eq(fsu_write_file(&h, "/ro/new", 0644, ""), -EACCES);
	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/ro/d", 0755), -EACCES);
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/ro/pub", 0), -EACCES);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/ro/pub", AT_FDCWD, "/ro/pub2", 0), -EACCES);
	cr_assert_eq(open_close("/ro/secret", O_RDONLY), -EACCES);
	cr_assert_eq(open_close("/ro/pub", O_RDONLY), 0);
	cr_assert_eq(open_close("/ro/pub", O_WRONLY), -EACCES);
	cr_assert_eq(open_close("/ro/pub", O_RDONLY | O_TRUNC), -EACCES);
	cr_assert_eq(open_close("/closed/f", O_RDONLY), -EACCES);
	cr_assert_eq(vfs_access(&h.t, AT_FDCWD, "/ro/pub", W_OK, 0), -EACCES);
	/* Not the owner: no chmod, no chown, no explicit times. */
	cr_assert_eq(chmod_path("/ro/pub", 0666), -EPERM);
	cr_assert_eq(chown_path("/ro/pub", 1000, (uint32_t)-1), -EPERM);
	{
		struct timespec ts[2] = { { 1, 0 }, { 1, 0 } };
		struct vfs_path p;

		cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/ro/pub", 0, &p), 0);
		cr_assert_eq(vfs_path_utimens(&h.t, &p, ts), -EPERM);
		cr_assert_eq(vfs_path_utimens(&h.t, &p, NULL), -EACCES);
		vfs_path_put(&p);
	}
}

Test(tmpfs, owner_may_chmod_and_give_group_but_not_owner)
{
	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/home", 0777), 0);
	harness_set_cred(&h, 1000, 1000);
	h.t.cred.ngroups = 1;
	h.t.cred.groups[0] = 60;
	cr_assert_eq(fsu_write_file(&h, "/home/f", 0644, "x"), 1);
	cr_assert_eq(chmod_path("/home/f", 0600), 0);
	cr_assert_eq(mode_of("/home/f") & 07777, 0600);
	cr_assert_eq(chown_path("/home/f", (uint32_t)-1, 60), 0);
	cr_assert_eq(chown_path("/home/f", (uint32_t)-1, 61), -EPERM);
	cr_assert_eq(chown_path("/home/f", 1001, (uint32_t)-1), -EPERM);
	{
		struct timespec ts[2] = { { 5, 0 }, { 7, 0 } };
		struct vfs_path p;
		struct vfs_attr a;

		cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/home/f", 0, &p), 0);
		cr_assert_eq(vfs_path_utimens(&h.t, &p, ts), 0);
		cr_assert_eq(vfs_path_getattr(&p, &a), 0);
		cr_assert_eq(a.atime.tv_sec, 5);
		cr_assert_eq(a.mtime.tv_sec, 7);
		vfs_path_put(&p);
	}
}

Test(tmpfs, protected_hardlinks_refuse_links_to_files_the_user_cannot_write)
{
	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/pub", 0777), 0);
	cr_assert_eq(fsu_write_file(&h, "/pub/rootfile", 0644, "r"), 1);
	as_user(1000, 1000);
	cr_assert_eq(vfs_linkat(&h.t, AT_FDCWD, "/pub/rootfile", AT_FDCWD, "/pub/l", 0), -EPERM);
	cr_assert_eq(fsu_write_file(&h, "/pub/mine", 0600, "m"), 1);
	cr_assert_eq(vfs_linkat(&h.t, AT_FDCWD, "/pub/mine", AT_FDCWD, "/pub/l", 0), 0);
	cr_assert_eq(nlink_of("/pub/mine"), 2);
}

/* --- renames --- */

Test(tmpfs, rename_noreplace_and_exchange)
{
	char buf[16];

	cr_assert_eq(fsu_write_file(&h, "/a", 0644, "A"), 1);
	cr_assert_eq(fsu_write_file(&h, "/b", 0644, "B"), 1);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/a", AT_FDCWD, "/b", VFS_RENAME_NOREPLACE),
		     -EEXIST);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/a", AT_FDCWD, "/c", VFS_RENAME_EXCHANGE),
		     -ENOENT);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/a", AT_FDCWD, "/b",
				   VFS_RENAME_EXCHANGE | VFS_RENAME_NOREPLACE),
		     -EINVAL);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/a", AT_FDCWD, "/b", VFS_RENAME_EXCHANGE), 0);
	cr_assert_eq(fsu_read_file(&h, "/a", buf, sizeof(buf)), 1);
	cr_assert_str_eq(buf, "B");
	cr_assert_eq(fsu_read_file(&h, "/b", buf, sizeof(buf)), 1);
	cr_assert_str_eq(buf, "A");
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/a", AT_FDCWD, "/c", VFS_RENAME_NOREPLACE), 0);
	cr_assert_eq(fsu_stat(&h, "/a", true, &(struct vfs_attr){ 0 }), -ENOENT);
}

Test(tmpfs, rename_type_rules)
{
	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/d", 0755), 0);
	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/full", 0755), 0);
	cr_assert_eq(fsu_write_file(&h, "/full/x", 0644, ""), 0);
	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/empty", 0755), 0);
	cr_assert_eq(fsu_write_file(&h, "/f", 0644, ""), 0);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/d", AT_FDCWD, "/full", 0), -ENOTEMPTY);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/d", AT_FDCWD, "/f", 0), -ENOTDIR);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/f", AT_FDCWD, "/d", 0), -EISDIR);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/d", AT_FDCWD, "/d/inside", 0), -EINVAL);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/f", AT_FDCWD, "/f/", 0), -ENOTDIR);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/d", AT_FDCWD, "/empty", 0), 0);
	cr_assert_eq(nlink_of("/"), 4);
	cr_assert_eq(fsu_stat(&h, "/d", true, &(struct vfs_attr){ 0 }), -ENOENT);
}

Test(tmpfs, rename_between_two_links_of_one_file_does_nothing)
{
	cr_assert_eq(fsu_write_file(&h, "/f", 0644, ""), 0);
	cr_assert_eq(vfs_linkat(&h.t, AT_FDCWD, "/f", AT_FDCWD, "/g", 0), 0);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/f", AT_FDCWD, "/g", 0), 0);
	cr_assert_eq(nlink_of("/f"), 2);
	cr_assert_eq(nlink_of("/g"), 2);
}

/* --- O_TMPFILE --- */

#define LINUX_O_TMPFILE (020000000 | O_DIRECTORY)

static int install(struct file *f)
{
	int fd = fdtable_install(h.t.fdt, f, 0, false, 1024);

	file_put(f);
	return fd;
}

Test(tmpfs, tmpfile_has_no_name_until_linkat)
{
	struct file *f;
	struct vfs_attr a;
	char buf[16];
	int fd;

	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/d", 0755), 0);
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/d", LINUX_O_TMPFILE | O_RDWR, 0600, &f), 0);
	cr_assert_eq(fsu_fwrite(f, "anon", 4), 4);
	cr_assert_eq(file_getattr(f, &a), 0);
	cr_assert_eq(a.nlink, 0);
	cr_assert(S_ISREG(a.mode));
	cr_assert_eq(a.mode & 07777, 0600);
	fd = install(f);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fsu_list(&h, "/d", buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "");
	cr_assert_eq(vfs_linkat(&h.t, fd, "", AT_FDCWD, "/d/named", 0), -ENOENT);
	cr_assert_eq(vfs_linkat(&h.t, fd, "", AT_FDCWD, "/d/named", AT_EMPTY_PATH), 0);
	cr_assert_eq(fsu_read_file(&h, "/d/named", buf, sizeof(buf)), 4);
	cr_assert_str_eq(buf, "anon");
	cr_assert_eq(nlink_of("/d/named"), 1);
	/* Once named and unlinked again it is an ordinary deleted file: no new name. */
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/d/named", 0), 0);
	cr_assert_eq(vfs_linkat(&h.t, fd, "", AT_FDCWD, "/d/again", AT_EMPTY_PATH), -ENOENT);
	cr_assert_eq(fdtable_close(h.t.fdt, fd), 0);
}

Test(tmpfs, tmpfile_with_o_excl_can_never_be_linked)
{
	struct file *f;
	int fd;

	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/", LINUX_O_TMPFILE | O_EXCL | O_WRONLY, 0600, &f),
		     0);
	fd = install(f);
	cr_assert_eq(vfs_linkat(&h.t, fd, "", AT_FDCWD, "/named", AT_EMPTY_PATH), -ENOENT);
	cr_assert_eq(fdtable_close(h.t.fdt, fd), 0);
}

Test(tmpfs, tmpfile_needs_write_permission_on_the_directory)
{
	struct file *f = NULL;

	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/d", 0755), 0);
	as_user(1000, 1000);
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/d", LINUX_O_TMPFILE | O_RDWR, 0600, &f), -EACCES);
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/d", LINUX_O_TMPFILE | O_RDONLY, 0600, &f), -EINVAL);
}

/* --- directory listings --- */

Test(tmpfs, readdir_position_survives_seek_back_and_removals)
{
	struct fsu_entry first[4], rest[16], again[16];
	struct file *f;
	int64_t mark;
	int n, m;

	for (int i = 0; i < 6; i++) {
		char p[8];

		snprintf(p, sizeof(p), "/f%d", i);
		cr_assert_eq(fsu_write_file(&h, p, 0644, ""), 0);
	}
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/", O_RDONLY | O_DIRECTORY, 0, &f), 0);
	cr_assert_eq(fsu_readdir(f, first, 4), 4); /* ".", "..", f0, f1 */
	mark = f->pos;
	cr_assert_eq(mark, first[3].next);
	n = fsu_readdir(f, rest, 16);
	cr_assert_eq(n, 4);
	cr_assert_str_eq(rest[0].name, "f2");
	f->pos = f->ops->llseek(f, mark, SEEK_SET);
	m = fsu_readdir(f, again, 16);
	cr_assert_eq(m, n);
	for (int i = 0; i < n; i++)
		cr_assert_str_eq(again[i].name, rest[i].name);
	/* Removing an entry already read does not shift later positions. */
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/f1", 0), 0);
	f->pos = f->ops->llseek(f, mark, SEEK_SET);
	m = fsu_readdir(f, again, 16);
	cr_assert_eq(m, n);
	cr_assert_str_eq(again[0].name, "f2");
	/* Removing one not yet read drops it only. */
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/f3", 0), 0);
	f->pos = f->ops->llseek(f, mark, SEEK_SET);
	m = fsu_readdir(f, again, 16);
	cr_assert_eq(m, n - 1);
	cr_assert_str_eq(again[1].name, "f4");
	file_put(f);
}

Test(tmpfs, statfs_counts_pages_against_the_limit)
{
	struct linux_statfs st;
	struct vfs_path p;

	cr_assert_eq(fsu_write_file(&h, "/f", 0644, "12345"), 5);
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/", 0, &p), 0);
	cr_assert_eq(vfs_path_statfs(&p, &st), 0);
	vfs_path_put(&p);
	cr_assert_eq(st.f_type, TMPFS_MAGIC);
	cr_assert_eq(st.f_blocks, LIMIT_PAGES);
	cr_assert_eq(st.f_bfree, LIMIT_PAGES - 1);
}
