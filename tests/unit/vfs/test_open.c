/* SPDX-License-Identifier: Apache-2.0 */
/* vfs_open, files opened from nodes, directory iteration, getcwd, access. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "include/abi/linux/stat.h"
#include "sentry/vfs/internal.h"
#include "tests/unit/vfs/tree.h"

static struct tree tr;
static struct harness h;

static void setup_ro(void)
{
	tree_build(&tr);
	harness_init(&h, tr.fs, MS_RDONLY);
	testfs_files_released = testfs_nodes_released = testfs_fs_released = 0;
}

static void setup_rw(void)
{
	tree_build(&tr);
	harness_init(&h, tr.fs, 0);
	testfs_files_released = testfs_nodes_released = testfs_fs_released = 0;
}

static void teardown(void)
{
	harness_fini(&h);
}

TestSuite(vfs_open, .init = setup_ro, .fini = teardown);
TestSuite(vfs_open_rw, .init = setup_rw, .fini = teardown);
TestSuite(vfs_getcwd, .init = setup_rw, .fini = teardown);
TestSuite(vfs_access, .init = setup_ro, .fini = teardown);

static int open_path(const char *path, int flags, struct file **f)
{
	*f = NULL;
	return vfs_open(&h.t, AT_FDCWD, path, flags, 0644, f);
}

static void expect_open_err(const char *path, int flags, int want)
{
	struct file *f;
	int err = open_path(path, flags, &f);

	if (err == 0)
		file_put(f);
	cr_assert_eq(err, want, "open(%s, %#x): got %d, want %d", path, flags, err, want);
}

Test(vfs_open, read_only_open_reads_the_file)
{
	struct file *f;
	char buf[64] = { 0 };

	cr_assert_eq(open_path("/etc/passwd", O_RDONLY, &f), 0);
	cr_assert_eq(f->node, &tr.passwd->base);
	cr_assert_eq(f->mnt, h.k.root_mnt);
	cr_assert_eq(file_pread(f, buf, 4, 0), 4);
	cr_assert_str_eq(buf, "root");
	cr_assert_eq(file_pread(f, buf, sizeof(buf), 5), 25);
	file_put(f);
	cr_assert_eq(testfs_files_released, 1);
}

Test(vfs_open, status_flags_drop_open_only_flags)
{
	struct file *f;

	cr_assert_eq(open_path("/etc/passwd", O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, &f), 0);
	cr_assert_eq(f->flags, 0100000 /* O_LARGEFILE */ | O_NONBLOCK);
	file_put(f);
	cr_assert_eq(open_path("/etc", O_PATH | O_DIRECTORY | O_CLOEXEC | O_RDWR, &f), 0);
	cr_assert_eq(f->flags, O_PATH | O_DIRECTORY);
	file_put(f);
}

Test(vfs_open, write_access_on_read_only_mount_is_erofs)
{
	expect_open_err("/etc/passwd", O_WRONLY, -EROFS);
	expect_open_err("/etc/passwd", O_RDWR, -EROFS);
	expect_open_err("/etc/passwd", O_RDONLY | O_TRUNC, -EROFS);
	expect_open_err("/link_abs", O_WRONLY, -EROFS);
}

Test(vfs_open, creat_of_existing_file_opens_it_read_only)
{
	struct file *f;

	cr_assert_eq(open_path("/etc/passwd", O_RDONLY | O_CREAT, &f), 0);
	cr_assert_eq(f->node, &tr.passwd->base);
	file_put(f);
	/* Through a symlink, too. */
	cr_assert_eq(open_path("/link_abs", O_RDONLY | O_CREAT, &f), 0);
	cr_assert_eq(f->node, &tr.passwd->base);
	file_put(f);
	expect_open_err("/etc/passwd", O_WRONLY | O_CREAT, -EROFS);
}

Test(vfs_open, creat_excl_of_existing_name_is_eexist)
{
	expect_open_err("/etc/passwd", O_RDONLY | O_CREAT | O_EXCL, -EEXIST);
	expect_open_err("/dangling", O_RDONLY | O_CREAT | O_EXCL, -EEXIST);
}

Test(vfs_open, creat_of_missing_name_is_erofs)
{
	expect_open_err("/etc/new", O_WRONLY | O_CREAT, -EROFS);
	/* A dangling symlink is followed: creating its target is refused the same way. */
	expect_open_err("/dangling", O_WRONLY | O_CREAT, -EROFS);
	expect_open_err("/nodir/new", O_WRONLY | O_CREAT, -ENOENT);
}

Test(vfs_open, creat_of_directory_or_trailing_slash_is_eisdir)
{
	expect_open_err("/etc", O_RDONLY | O_CREAT, -EISDIR);
	expect_open_err("/etc/passwd/", O_RDONLY | O_CREAT, -EISDIR);
	expect_open_err("/", O_RDONLY | O_CREAT, -EISDIR);
	expect_open_err("/etc/..", O_RDONLY | O_CREAT, -EISDIR);
}

Test(vfs_open, creat_with_directory_flag_is_einval)
{
	expect_open_err("/etc/new", O_RDONLY | O_CREAT | O_DIRECTORY, -EINVAL);
}

Test(vfs_open, nofollow_on_symlink_is_eloop_except_with_o_path)
{
	struct file *f;

	expect_open_err("/link_abs", O_RDONLY | O_NOFOLLOW, -ELOOP);
	expect_open_err("/link_abs", O_RDONLY | O_NOFOLLOW | O_CREAT, -ELOOP);
	cr_assert_eq(open_path("/link_abs", O_PATH | O_NOFOLLOW, &f), 0);
	cr_assert_eq(f->node, &tr.link_abs->base);
	cr_assert_null(f->ops->read);
	file_put(f);
}

Test(vfs_open, directory_flag_on_file_is_enotdir)
{
	expect_open_err("/etc/passwd", O_RDONLY | O_DIRECTORY, -ENOTDIR);
	expect_open_err("/link_abs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW, -ENOTDIR);
}

Test(vfs_open_rw, directory_opened_for_writing_is_eisdir)
{
	expect_open_err("/etc", O_WRONLY, -EISDIR);
	expect_open_err("/etc", O_RDWR, -EISDIR);
	expect_open_err("/etc", O_RDONLY | O_TRUNC, -EISDIR);
}

Test(vfs_open_rw, permission_bits_apply_to_non_root)
{
	struct file *f;

	harness_set_cred(&h, 1000, 1000);
	expect_open_err("/etc/passwd", O_RDWR, -EACCES);
	cr_assert_eq(open_path("/etc/passwd", O_RDONLY, &f), 0);
	file_put(f);
	expect_open_err("/locked", O_RDONLY, -EACCES);
	expect_open_err("/etc/passwd", O_RDONLY | O_NOATIME, -EPERM);
}

Test(vfs_open, empty_path_is_enoent)
{
	expect_open_err("", O_RDONLY, -ENOENT);
}

struct collect {
	struct dir_emitter e;
	char names[64][32];
	int64_t offs[64];
	int n, max;
};

static bool collect_emit(struct dir_emitter *e, const char *name, size_t namelen, uint64_t ino,
			 unsigned int dtype, int64_t next_off)
{
	struct collect *c = (struct collect *)e;

	if (c->n >= c->max)
		return false;
	memcpy(c->names[c->n], name, namelen);
	c->names[c->n][namelen] = '\0';
	c->offs[c->n] = next_off;
	c->n++;
	return true;
}

Test(vfs_open, directory_iteration_resumes_at_position)
{
	struct collect c = { .e.emit = collect_emit, .max = 2 };
	struct file *f;

	cr_assert_eq(open_path("/dir", O_RDONLY | O_DIRECTORY, &f), 0);
	cr_assert_eq(f->ops->iterate(f, &c.e), 0);
	cr_assert_eq(c.n, 2);
	cr_assert_str_eq(c.names[0], ".");
	cr_assert_str_eq(c.names[1], "..");
	c.max = 64;
	cr_assert_eq(f->ops->iterate(f, &c.e), 0);
	cr_assert_eq(c.n, 5);
	cr_assert_str_eq(c.names[2], "sub");
	cr_assert_str_eq(c.names[3], "rel");
	cr_assert_str_eq(c.names[4], "up");
	cr_assert_eq(f->pos, c.offs[4]);
	/* lseek back to an entry's offset gives the entries after it again. */
	cr_assert_eq(f->ops->llseek(f, c.offs[2], SEEK_SET), c.offs[2]);
	f->pos = c.offs[2];
	c.n = 0;
	cr_assert_eq(f->ops->iterate(f, &c.e), 0);
	cr_assert_eq(c.n, 2);
	cr_assert_str_eq(c.names[0], "rel");
	cr_assert_eq(f->ops->read(f, NULL, 0, &f->pos), -EISDIR);
	file_put(f);
}

Test(vfs_open, statfs_reports_mount_flags)
{
	struct linux_statfs st;
	struct vfs_path p;

	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/etc", 0, &p), 0);
	cr_assert_eq(vfs_path_statfs(&p, &st), 0);
	cr_assert_eq(st.f_type, 0x7e57);
	cr_assert_eq(st.f_flags, 0x20 | 1 /* ST_VALID | ST_RDONLY */);
	vfs_path_put(&p);
}

Test(vfs_getcwd, builds_path_from_root)
{
	char buf[64];

	cr_assert_eq(vfs_getcwd(&h.t, buf, sizeof(buf)), 2);
	cr_assert_str_eq(buf, "/");
	cr_assert_eq(fs_context_chdir(&h.t, "/link_dir"), 0);
	cr_assert_eq(vfs_getcwd(&h.t, buf, sizeof(buf)), 9);
	cr_assert_str_eq(buf, "/dir/sub");
}

Test(vfs_getcwd, too_small_buffer_is_erange)
{
	char buf[16];

	cr_assert_eq(fs_context_chdir(&h.t, "/dir/sub"), 0);
	cr_assert_eq(vfs_getcwd(&h.t, buf, 8), -ERANGE);
	cr_assert_eq(vfs_getcwd(&h.t, buf, 9), 9);
	cr_assert_str_eq(buf, "/dir/sub");
}

Test(vfs_getcwd, path_crosses_mounts)
{
	struct testfs *fs2 = testfs_create();
	struct testfs_node *x = testfs_mkdir(testfs_root(fs2), "x", 0755, 0, 0);
	struct vfs_mount *m;
	struct vfs_path mp;
	char buf[64];

	(void)x;
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/mnt", 0, &mp), 0);
	m = vfs_mount_create(&fs2->base, fs2->base.root, 0);
	vfs_fs_put(&fs2->base);
	cr_assert_eq(vfs_mount_attach(m, &mp), 0);
	vfs_mount_put(m);
	vfs_path_put(&mp);
	cr_assert_eq(fs_context_chdir(&h.t, "/mnt/x"), 0);
	cr_assert_eq(vfs_getcwd(&h.t, buf, sizeof(buf)), 7);
	cr_assert_str_eq(buf, "/mnt/x");
	cr_assert_eq(fs_context_chdir(&h.t, "/mnt"), 0);
	cr_assert_eq(vfs_getcwd(&h.t, buf, sizeof(buf)), 5);
	cr_assert_str_eq(buf, "/mnt");
}

Test(vfs_getcwd, cwd_outside_root_is_unreachable)
{
	struct vfs_path p;
	char buf[64];

	cr_assert_eq(fs_context_chdir(&h.t, "/etc"), 0);
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/dir", 0, &p), 0);
	vfs_path_put(&h.t.fs->root);
	h.t.fs->root = p;
	cr_assert_eq(vfs_getcwd(&h.t, buf, sizeof(buf)), 18);
	cr_assert_str_eq(buf, "(unreachable)/etc");
}

Test(vfs_getcwd, chdir_needs_a_searchable_directory)
{
	cr_assert_eq(fs_context_chdir(&h.t, "/etc/passwd"), -ENOTDIR);
	harness_set_cred(&h, 1000, 1000);
	cr_assert_eq(fs_context_chdir(&h.t, "/locked"), -EACCES);
	cr_assert_eq(fs_context_chdir(&h.t, "/etc"), 0);
}

Test(vfs_access, write_on_read_only_mount_is_erofs)
{
	cr_assert_eq(vfs_access(&h.t, AT_FDCWD, "/etc/passwd", W_OK, 0), -EROFS);
	cr_assert_eq(vfs_access(&h.t, AT_FDCWD, "/etc/passwd", R_OK, 0), 0);
	cr_assert_eq(vfs_access(&h.t, AT_FDCWD, "/etc/passwd", F_OK, 0), 0);
	cr_assert_eq(vfs_access(&h.t, AT_FDCWD, "/nope", F_OK, 0), -ENOENT);
}

Test(vfs_access, root_exec_needs_an_x_bit)
{
	cr_assert_eq(vfs_access(&h.t, AT_FDCWD, "/script", X_OK, 0), -EACCES);
	cr_assert_eq(vfs_access(&h.t, AT_FDCWD, "/etc", X_OK, 0), 0);
}

Test(vfs_access, uses_real_ids_unless_eaccess)
{
	/* Effective root, real uid 1000: access() answers for uid 1000. */
	harness_set_cred(&h, 1000, 1000);
	h.t.cred.euid = h.t.cred.fsuid = 0;
	cr_assert_eq(vfs_access(&h.t, AT_FDCWD, "/locked/inner", F_OK, 0), -EACCES);
	cr_assert_eq(vfs_access(&h.t, AT_FDCWD, "/locked/inner", F_OK, AT_EACCESS), 0);
}

Test(vfs_access, bad_mode_or_flags_is_einval)
{
	cr_assert_eq(vfs_access(&h.t, AT_FDCWD, "/etc", 8, 0), -EINVAL);
	cr_assert_eq(vfs_access(&h.t, AT_FDCWD, "/etc", F_OK, 0x1000000), -EINVAL);
	cr_assert_eq(vfs_access(&h.t, AT_FDCWD, "", F_OK, 0), -ENOENT);
	cr_assert_eq(vfs_access(&h.t, AT_FDCWD, "", F_OK, AT_EMPTY_PATH), 0);
}
