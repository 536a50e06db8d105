/* SPDX-License-Identifier: Apache-2.0 */
/*
 * File bind mounts in the VFS: a gofer serving one regular file (the real server in a child,
 * tests/unit/gofer/helpers.c, and the real client) mounted over a file of the root overlay,
 * as the sentry mounts config.json's binds of files (podman's /etc/hosts); mountpoints made
 * in the overlay's upper layer (also for a root made read-only afterwards); mount crossing on
 * non-directories; EBUSY for the mountpoint; per-mount noexec.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sentry/fs/gofer/client.h"
#include "sentry/fs/gofer/gofer_fs.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/mm/memfile.h"
#include "tests/unit/gofer/helpers.h"
#include "tests/unit/vfs/fsutil.h"
#include "tests/unit/vfs/testfs.h"

#define CONTENT "127.0.0.1 localhost\n"

static char dir[64]; /* the root's tree (helpers.c's tree_create) */
static char vdir[64], vfile[96]; /* the bound host file, in a directory of its own */
static pid_t root_server, file_server;
static struct gofer_client *root_gc, *file_gc;
static struct harness h;

static void host_read(char *buf, size_t len)
{
	FILE *f = fopen(vfile, "r");
	size_t n;

	cr_assert_not_null(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

static void start(bool file_readonly)
{
	struct gofer_server_config root_cfg = { .readonly = true };
	struct gofer_server_config file_cfg = { .readonly = file_readonly };
	FILE *f;
	int sock;

	tree_create(dir);
	snprintf(vdir, sizeof(vdir), "/tmp/husk-file-mount.XXXXXX");
	cr_assert_not_null(mkdtemp(vdir));
	snprintf(vfile, sizeof(vfile), "%s/hosts", vdir);
	f = fopen(vfile, "w");
	cr_assert_not_null(f);
	fputs(CONTENT, f);
	fclose(f);
	cr_assert_eq(chmod(vfile, 0755), 0); /* executable, for the noexec tests */

	root_server = server_start(dir, &root_cfg, &sock);
	cr_assert_eq(gofer_client_create(sock, &root_gc), 0);
	file_server = server_start(vfile, &file_cfg, &sock);
	cr_assert_eq(gofer_client_create(sock, &file_gc), 0);
	memset(&h, 0, sizeof(h));
	cr_assert_eq(memfile_init(&h.k.mf, 1ULL << 28), 0);
	cr_assert_eq(vfs_mount_root_overlay(&h.k, root_gc, 0), 0);
	harness_init_task(&h);
}

static void start_rw(void)
{
	start(false);
}

static void start_ro(void)
{
	start(true);
}

static void finish(void)
{
	harness_fini(&h);
	gofer_client_destroy(file_gc);
	gofer_client_destroy(root_gc);
	cr_assert_eq(child_wait(file_server), 0);
	cr_assert_eq(child_wait(root_server), 0);
	tree_remove(dir);
	unlink(vfile);
	rmdir(vdir);
}

static void mount_file(const char *path, int flags)
{
	int err = vfs_mount_volume_flags(&h.k, file_gc, path, flags);

	cr_assert_eq(err, 0, "mount at %s: %s", path, strerror(-err));
}

static void read_ok(const char *path, const char *want)
{
	char buf[128];
	ssize_t n = fsu_read_file(&h, path, buf, sizeof(buf));

	cr_assert_geq(n, 0, "read %s: %s", path, strerror((int)-n));
	cr_assert_str_eq(buf, want, "%s", path);
}

TestSuite(file_mount, .init = start_rw, .fini = finish);
TestSuite(file_mount_ro, .init = start_ro, .fini = finish);

Test(file_mount, shows_the_host_file_over_an_image_file)
{
	struct vfs_attr a, root;

	read_ok("/file", "hello gofer\n");
	mount_file("/file", 0);
	read_ok("/file", CONTENT);
	cr_assert_eq(fsu_stat(&h, "/file", true, &a), 0);
	cr_assert(S_ISREG(a.mode), "mode %o", a.mode);
	cr_assert_eq(a.size, (int64_t)strlen(CONTENT));
	cr_assert_eq(fsu_stat(&h, "/", true, &root), 0);
	cr_assert_neq(a.dev, root.dev, "the file is its own mount's");
}

Test(file_mount, writes_reach_the_host_file)
{
	char buf[128];

	mount_file("/file", 0);
	cr_assert_eq(fsu_append(&h, "/file", "::1 localhost\n"), 14);
	host_read(buf, sizeof(buf));
	cr_assert_str_eq(buf, CONTENT "::1 localhost\n");
	cr_assert_eq(fsu_write_file(&h, "/file", 0644, "truncated\n"), 10);
	host_read(buf, sizeof(buf));
	cr_assert_str_eq(buf, "truncated\n");
}

Test(file_mount_ro, readonly_file_bind_is_erofs)
{
	struct file *f;
	char buf[128];

	mount_file("/file", MS_RDONLY);
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/file", O_WRONLY, 0, &f), -EROFS);
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/file", O_RDONLY | O_TRUNC, 0, &f), -EROFS);
	read_ok("/file", CONTENT);
	host_read(buf, sizeof(buf));
	cr_assert_str_eq(buf, CONTENT);
}

Test(file_mount_ro, host_changes_to_a_readonly_bound_file_show)
{
	struct vfs_attr a;
	FILE *f;

	mount_file("/file", MS_RDONLY);
	cr_assert_eq(fsu_stat(&h, "/file", true, &a), 0);
	cr_assert_eq(a.size, (int64_t)strlen(CONTENT));
	f = fopen(vfile, "a");
	cr_assert_not_null(f);
	fputs("::1 localhost\n", f);
	fclose(f);
	cr_assert_eq(fsu_stat(&h, "/file", true, &a), 0);
	cr_assert_eq(a.size, (int64_t)strlen(CONTENT "::1 localhost\n"), "size %ld", (long)a.size);
	read_ok("/file", CONTENT "::1 localhost\n");
}

Test(file_mount, missing_mountpoint_and_parents_are_made_in_the_upper_layer)
{
	char list[256], host[128];
	struct vfs_attr a;

	mount_file("/run/secret/token", 0);
	read_ok("/run/secret/token", CONTENT);
	cr_assert_eq(fsu_list(&h, "/run/secret", list, sizeof(list)), 0);
	cr_assert_str_eq(list, "token", "nothing of the host file's directory shows");
	cr_assert_eq(fsu_stat(&h, "/run", true, &a), 0);
	cr_assert(S_ISDIR(a.mode));
	snprintf(host, sizeof(host), "%s/run", dir);
	cr_assert_eq(access(host, F_OK), -1, "the host's tree is never written");
}

Test(file_mount, mountpoint_cannot_be_removed_or_renamed)
{
	mount_file("/file", 0);
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/file", 0), -EBUSY);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/file", AT_FDCWD, "/file2", 0), -EBUSY);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/a/b/c", AT_FDCWD, "/file", 0), -EBUSY);
	read_ok("/file", CONTENT);
}

Test(file_mount, a_file_over_a_directory_is_eisdir)
{
	cr_assert_eq(vfs_mount_volume_flags(&h.k, file_gc, "/sub", 0), -EISDIR);
}

Test(file_mount, a_directory_over_a_file_is_enotdir)
{
	struct vfs_fs *fs = tmpfs_create(NULL, 0, 0755, 0, 0);

	cr_assert_not_null(fs);
	cr_assert_eq(vfs_mount_at(&h.k, "/file", fs, 0), -ENOTDIR);
	vfs_fs_put(fs);
}

Test(file_mount, dot_and_dotdot_in_the_path_are_einval)
{
	cr_assert_eq(vfs_mount_volume_flags(&h.k, file_gc, "/a/../file", 0), -EINVAL);
	cr_assert_eq(vfs_mount_volume_flags(&h.k, file_gc, "/./file", 0), -EINVAL);
	cr_assert_eq(vfs_mount_volume_flags(&h.k, file_gc, "file", 0), -EINVAL);
}

/* passwd_link -> /etc/passwd (missing): the target is made and mounted on, as runc does. */
Test(file_mount, a_symlink_mountpoint_is_followed_inside_the_tree)
{
	mount_file("/passwd_link", 0);
	read_ok("/etc/passwd", CONTENT);
	read_ok("/passwd_link", CONTENT);
}

/* up_link -> ../../.. : ".." never climbs above the guest's root. */
Test(file_mount, a_symlink_never_leads_above_the_root)
{
	mount_file("/up_link/escape", 0);
	read_ok("/escape", CONTENT);
}

Test(file_mount, read_only_root_keeps_its_mounts_writable)
{
	struct vfs_mount *root = h.k.root_mnt;
	char buf[128];

	mount_file("/run/token", 0);
	vfs_mount_set_flags(root, root->flags | MS_RDONLY);
	cr_assert_eq(fsu_write_file(&h, "/x", 0644, "x"), -EROFS);
	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/y", 0755), -EROFS);
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/a/b/c", 0), -EROFS);
	cr_assert_eq(fsu_append(&h, "/run/token", "more\n"), 5);
	host_read(buf, sizeof(buf));
	cr_assert_str_eq(buf, CONTENT "more\n");
}

static void exec_check(const char *path, int want_exec, bool want_noexec, bool want_nosuid)
{
	struct vfs_path p;
	struct file *f;

	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, path, 0, &p), 0);
	cr_assert_eq(vfs_path_may_exec(&h.t, &p), want_exec, "%s", path);
	vfs_path_put(&p);
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, path, O_RDONLY, 0, &f), 0);
	cr_assert_eq(vfs_file_noexec(f), want_noexec, "%s", path);
	cr_assert_eq(vfs_file_nosuid(f), want_nosuid, "%s", path);
	file_put(f);
}

Test(file_mount, noexec_refuses_execution_of_the_bound_file)
{
	mount_file("/run/noexec", MS_NOEXEC | MS_NODEV);
	exec_check("/run/noexec", -EACCES, true, false);
}

Test(file_mount, nosuid_is_the_mounts_own)
{
	mount_file("/run/nosuid", MS_NOSUID);
	exec_check("/run/nosuid", 0, false, true);
}

Test(file_mount, without_noexec_the_bound_file_can_be_executed)
{
	mount_file("/run/exec", 0);
	exec_check("/run/exec", 0, false, false);
}

Test(file_mount, noexec_tmpfs_refuses_execution)
{
	struct vfs_fs *fs = tmpfs_create(NULL, 0, 01777, 0, 0);

	cr_assert_not_null(fs);
	cr_assert_eq(vfs_mount_at(&h.k, "/scratch", fs, MS_NOSUID | MS_NODEV | MS_NOEXEC), 0);
	vfs_fs_put(fs);
	cr_assert_eq(fsu_write_file(&h, "/scratch/prog", 0755, "#!/bin/sh\n"), 10);
	exec_check("/scratch/prog", -EACCES, true, true);
}

/*
 * A pod member's tree (sentry/control/container.c): built on this thread between
 * vfs_setup_root_begin and vfs_setup_root_end, with the same mount functions, beside the
 * kernel's tree, which neither changes nor sees the member's mounts.
 */
Test(file_mount, a_pod_members_tree_is_built_beside_the_kernels)
{
	struct cred c = { .cap_effective = ~0ULL };
	struct vfs_path member = { 0 }, kroot, p;
	struct vfs_mount *kmnt = h.k.root_mnt;
	struct vfs_attr a;

	vfs_setup_root_begin(&member);
	cr_assert_eq(vfs_mount_root_overlay(&h.k, root_gc, 0), 0);
	mount_file("/run/member/hosts", 0);
	vfs_kernel_root(&h.k, &kroot);
	cr_assert_eq(kroot.mnt, member.mnt, "the set-up's root is the member's");
	vfs_setup_root_end();
	cr_assert_not_null(member.mnt);
	cr_assert_neq(member.mnt, kmnt);
	cr_assert_eq(h.k.root_mnt, kmnt, "the kernel's root is unchanged");
	vfs_kernel_root(&h.k, &kroot);
	cr_assert_eq(kroot.mnt, kmnt, "after the set-up, the kernel's root again");
	cr_assert_eq(fsu_stat(&h, "/run/member/hosts", true, &a), -ENOENT);
	cr_assert_eq(vfs_walk(&c, &member, &member, "/run/member/hosts", VFS_LOOKUP_FOLLOW, &p), 0);
	cr_assert_neq(p.mnt, member.mnt, "the member's bind is a mount of its tree");
	vfs_path_put(&p);
	cr_assert_eq(vfs_walk(&c, &member, &member, "/file", VFS_LOOKUP_FOLLOW, &p), 0,
		     "the member's root shows the image");
	vfs_path_put(&p);
	vfs_path_put(&member);
}
