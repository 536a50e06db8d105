/* SPDX-License-Identifier: Apache-2.0 */
/* Path resolution over the test filesystem: dots, symlinks, limits, permissions, mounts. */
#include <criterion/criterion.h>
#include <errno.h>
#include <linux/capability.h>
#include <fcntl.h>
#include <string.h>

#include "sentry/vfs/internal.h"
#include "tests/unit/vfs/tree.h"

static struct tree tr;
static struct harness h;

static void setup(void)
{
	tree_build(&tr);
	harness_init(&h, tr.fs, 0);
}

static void teardown(void)
{
	harness_fini(&h);
}

TestSuite(vfs_resolve, .init = setup, .fini = teardown);

/* Resolves path from the cwd; returns the node reached (one test reference dropped) or NULL. */
static int lookup(const char *path, int at_flags, struct vfs_node **node)
{
	struct vfs_path p;
	int err = vfs_lookup_at(&h.t, AT_FDCWD, path, at_flags, &p);

	*node = NULL;
	if (err == 0) {
		*node = p.node;
		vfs_path_put(&p);
	}
	return err;
}

static void expect(const char *path, int at_flags, struct testfs_node *want)
{
	struct vfs_node *n;
	int err = lookup(path, at_flags, &n);

	cr_assert_eq(err, 0, "%s: got %d", path, err);
	cr_assert_eq(n, &want->base, "%s reached %s", path, n ? n->name : "(none)");
}

static void expect_err(const char *path, int at_flags, int want)
{
	struct vfs_node *n;
	int err = lookup(path, at_flags, &n);

	cr_assert_eq(err, want, "%s: got %d, want %d", path, err, want);
}

Test(vfs_resolve, absolute_path_reaches_file)
{
	expect("/etc/passwd", 0, tr.passwd);
	expect("//etc///passwd", 0, tr.passwd);
}

Test(vfs_resolve, dot_components_are_skipped)
{
	expect("/./etc/./passwd", 0, tr.passwd);
	expect("/etc/.", 0, tr.etc);
}

Test(vfs_resolve, dotdot_goes_to_parent)
{
	expect("/dir/sub/../../etc/passwd", 0, tr.passwd);
	expect("/dir/sub/..", 0, tr.dir);
}

Test(vfs_resolve, dotdot_at_root_stays_at_root)
{
	expect("/..", 0, tr.root);
	expect("/../../../etc/passwd", 0, tr.passwd);
	expect("..", 0, tr.root);
}

Test(vfs_resolve, relative_path_starts_at_cwd)
{
	cr_assert_eq(fs_context_chdir(&h.t, "/dir"), 0);
	expect("sub/file", 0, tr.subfile);
	expect("../etc/passwd", 0, tr.passwd);
}

Test(vfs_resolve, relative_path_starts_at_dirfd)
{
	struct file *f;
	struct vfs_path p;
	int fd;

	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/dir", O_RDONLY | O_DIRECTORY, 0, &f), 0);
	fd = fdtable_install(h.t.fdt, f, 0, false, 1024);
	file_put(f);
	cr_assert_eq(vfs_lookup_at(&h.t, fd, "sub/file", 0, &p), 0);
	cr_assert_eq(p.node, &tr.subfile->base);
	vfs_path_put(&p);
	/* An absolute path ignores dirfd. */
	cr_assert_eq(vfs_lookup_at(&h.t, 99, "/etc/passwd", 0, &p), 0);
	vfs_path_put(&p);
	cr_assert_eq(vfs_lookup_at(&h.t, 99, "etc/passwd", 0, &p), -EBADF);
}

Test(vfs_resolve, relative_path_from_file_dirfd_is_enotdir)
{
	struct file *f;
	struct vfs_path p;
	int fd;

	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/etc/passwd", O_RDONLY, 0, &f), 0);
	fd = fdtable_install(h.t.fdt, f, 0, false, 1024);
	file_put(f);
	cr_assert_eq(vfs_lookup_at(&h.t, fd, "x", 0, &p), -ENOTDIR);
}

Test(vfs_resolve, empty_path_is_enoent_unless_at_empty_path)
{
	struct vfs_path p;

	expect_err("", 0, -ENOENT);
	cr_assert_eq(fs_context_chdir(&h.t, "/etc"), 0);
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "", AT_EMPTY_PATH, &p), 0);
	cr_assert_eq(p.node, &tr.etc->base);
	vfs_path_put(&p);
}

Test(vfs_resolve, absolute_symlink_is_followed)
{
	expect("/link_abs", 0, tr.passwd);
	expect("/link_rel", 0, tr.passwd);
	expect("/link_root/etc/passwd", 0, tr.passwd);
}

Test(vfs_resolve, relative_symlink_resolves_from_its_directory)
{
	expect("/dir/rel", 0, tr.passwd);
	expect("/dir/up/etc", 0, tr.etc);
}

Test(vfs_resolve, dotdot_after_symlink_to_dir_is_physical)
{
	expect("/link_dir/..", 0, tr.dir);
	expect("/link_dir/file", 0, tr.subfile);
}

Test(vfs_resolve, final_symlink_kept_with_nofollow)
{
	expect("/link_abs", AT_SYMLINK_NOFOLLOW, tr.link_abs);
	/* Only the final component: an inner symlink is always followed. */
	expect("/link_dir/file", AT_SYMLINK_NOFOLLOW, tr.subfile);
}

Test(vfs_resolve, chain_of_40_symlinks_resolves)
{
	expect("/c1", 0, tr.passwd);
}

Test(vfs_resolve, chain_of_41_symlinks_is_eloop)
{
	expect_err("/c0", 0, -ELOOP);
	expect_err("/loop", 0, -ELOOP);
	expect_err("/loop/x", AT_SYMLINK_NOFOLLOW, -ELOOP);
}

Test(vfs_resolve, dangling_or_empty_symlink_is_enoent)
{
	expect_err("/dangling", 0, -ENOENT);
	expect_err("/empty", 0, -ENOENT);
	expect_err("/nonexistent", 0, -ENOENT);
}

Test(vfs_resolve, trailing_slash_on_file_is_enotdir)
{
	expect_err("/etc/passwd/", 0, -ENOTDIR);
	expect_err("/link_abs/", AT_SYMLINK_NOFOLLOW, -ENOTDIR);
	expect_err("/etc/passwd/.", 0, -ENOTDIR);
}

Test(vfs_resolve, trailing_slash_follows_symlink_to_dir)
{
	expect("/etc/", 0, tr.etc);
	expect("/link_dir/", AT_SYMLINK_NOFOLLOW, tr.sub);
}

Test(vfs_resolve, file_as_inner_component_is_enotdir)
{
	expect_err("/etc/passwd/x", 0, -ENOTDIR);
	expect_err("/link_abs/x", 0, -ENOTDIR);
}

Test(vfs_resolve, component_of_256_bytes_is_enametoolong)
{
	char path[300];

	path[0] = '/';
	memset(path + 1, 'a', 256);
	path[257] = '\0';
	expect_err(path, 0, -ENAMETOOLONG);
	path[256] = '\0'; /* 255 bytes: a legal name that does not exist */
	expect_err(path, 0, -ENOENT);
}

Test(vfs_resolve, path_of_4096_bytes_is_enametoolong)
{
	static char path[4200];

	for (int i = 0; i < 4096; i += 2)
		memcpy(path + i, "/.", 2);
	path[4096] = '\0';
	expect_err(path, 0, -ENAMETOOLONG);
	path[4095] = '\0';
	expect(path, 0, tr.root);
}

Test(vfs_resolve, directory_without_search_permission_is_eacces)
{
	harness_set_cred(&h, 1000, 1000);
	expect_err("/locked/inner", 0, -EACCES);
	expect_err("/locked/../etc", 0, -EACCES);
	/* The directory itself can be reached: only what is inside needs search permission. */
	expect("/locked", 0, tr.locked);
	expect_err("/shared/doc", 0, -EACCES);
}

Test(vfs_resolve, group_search_permission_uses_supplementary_groups)
{
	harness_set_cred(&h, 1000, 1000);
	h.t.cred.groups[0] = 100;
	h.t.cred.ngroups = 1;
	expect("/shared/doc", 0, tr.doc);
	expect_err("/locked/inner", 0, -EACCES);
}

Test(vfs_resolve, root_searches_any_directory)
{
	expect("/locked/inner", 0, tr.inner);
}

Test(vfs_resolve, root_needs_an_x_bit_to_execute)
{
	struct cred root = { .cap_effective = ~0ULL };
	struct vfs_attr a = { .mode = S_IFREG | 0644 };

	cr_assert_eq(vfs_permission(&root, &a, VFS_MAY_READ | VFS_MAY_WRITE), 0);
	cr_assert_eq(vfs_permission(&root, &a, VFS_MAY_EXEC), -EACCES);
	a.mode = S_IFREG | 0100;
	cr_assert_eq(vfs_permission(&root, &a, VFS_MAY_EXEC), 0);
	a.mode = S_IFDIR;
	cr_assert_eq(vfs_permission(&root, &a, VFS_MAY_EXEC), 0);
}

Test(vfs_resolve, root_without_dac_capabilities_is_held_to_mode_bits)
{
	struct cred root = { .cap_effective = ~0ULL & ~(1ULL << CAP_DAC_OVERRIDE) };
	struct vfs_attr a = { .mode = S_IFREG | 0600, .uid = 7, .gid = 7 };

	/* CAP_DAC_READ_SEARCH: reading files, reading and searching directories. */
	cr_assert_eq(vfs_permission(&root, &a, VFS_MAY_READ), 0);
	cr_assert_eq(vfs_permission(&root, &a, VFS_MAY_WRITE), -EACCES);
	a.mode = S_IFDIR | 0700;
	cr_assert_eq(vfs_permission(&root, &a, VFS_MAY_EXEC | VFS_MAY_READ), 0);
	cr_assert_eq(vfs_permission(&root, &a, VFS_MAY_WRITE | VFS_MAY_EXEC), -EACCES);
	root.cap_effective &= ~(1ULL << CAP_DAC_READ_SEARCH);
	cr_assert_eq(vfs_permission(&root, &a, VFS_MAY_EXEC), -EACCES);
	a.mode = S_IFREG | 0600;
	cr_assert_eq(vfs_permission(&root, &a, VFS_MAY_READ), -EACCES);
}

Test(vfs_resolve, owner_bits_apply_to_owner_even_when_others_allow)
{
	struct cred c = { .uid = 5, .fsuid = 5, .fsgid = 5 };
	struct vfs_attr a = { .mode = S_IFREG | 0077, .uid = 5, .gid = 6 };

	cr_assert_eq(vfs_permission(&c, &a, VFS_MAY_READ), -EACCES);
	a.uid = 7;
	cr_assert_eq(vfs_permission(&c, &a, VFS_MAY_READ), 0);
}

/* Mounts a second test filesystem (with x/ and x/y, and a link to /etc/passwd) on /mnt. */
static struct testfs *mount_second(struct testfs_node **x)
{
	struct testfs *fs2 = testfs_create();
	struct vfs_path mp;
	struct vfs_mount *m;

	*x = testfs_mkdir(testfs_root(fs2), "x", 0755, 0, 0);
	testfs_mkdir(*x, "y", 0755, 0, 0);
	testfs_symlink(testfs_root(fs2), "back", "/etc/passwd");
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/mnt", 0, &mp), 0);
	m = vfs_mount_create(&fs2->base, fs2->base.root, 0);
	vfs_fs_put(&fs2->base);
	cr_assert_eq(vfs_mount_attach(m, &mp), 0);
	vfs_mount_put(m);
	vfs_path_put(&mp);
	return fs2;
}

Test(vfs_resolve, walk_crosses_into_mount_and_back_with_dotdot)
{
	struct testfs_node *x;
	struct testfs *fs2 = mount_second(&x);
	struct vfs_path p;

	expect("/mnt/x", 0, x);
	expect("/mnt", 0, testfs_root(fs2));
	expect("/mnt/..", 0, tr.root);
	expect("/mnt/x/../..", 0, tr.root);
	expect("/mnt/x/../../etc/passwd", 0, tr.passwd);
	expect("/mnt/back", 0, tr.passwd);

	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/mnt/x", 0, &p), 0);
	cr_assert_neq(vfs_path_mnt_id(&p), h.k.root_mnt->id);
	cr_assert_eq(p.mnt->parent, h.k.root_mnt);
	vfs_path_put(&p);
}

Test(vfs_resolve, relative_dotdot_from_inside_mount_leaves_it)
{
	struct testfs_node *x;

	mount_second(&x);
	cr_assert_eq(fs_context_chdir(&h.t, "/mnt/x"), 0);
	expect("../..", 0, tr.root);
	expect("../../mnt/x/y/..", 0, x);
}

Test(vfs_resolve, dotdot_stays_at_a_context_root_below_the_tree_root)
{
	struct vfs_path dir;

	/* A chroot to /dir: "/" and ".." there are /dir, absolute links resolve inside it. */
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/dir", 0, &dir), 0);
	vfs_path_put(&h.t.fs->root);
	vfs_path_copy(&h.t.fs->root, &dir);
	fs_context_set_cwd(h.t.fs, &dir);
	vfs_path_put(&dir);
	expect("/..", 0, tr.dir);
	expect("../../sub/file", 0, tr.subfile);
	expect_err("/etc/passwd", 0, -ENOENT);
}

Test(vfs_resolve, walk_takes_and_drops_references)
{
	int before = refcount_read(&tr.passwd->base.ref);
	struct vfs_path p;

	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/dir/rel", 0, &p), 0);
	cr_assert_eq(refcount_read(&tr.passwd->base.ref), before + 1);
	vfs_path_put(&p);
	cr_assert_eq(refcount_read(&tr.passwd->base.ref), before);
	/* dir is held by root's entry and by its three children (sub, rel, up) only. */
	cr_assert_eq(refcount_read(&tr.dir->base.ref), 4);
}
