/* SPDX-License-Identifier: Apache-2.0 */
/* syscalls/sys_stat.c over a fake VFS: conversions, flag handling and order of checks. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "include/abi/linux/stat.h"
#include "tests/unit/syscalls/fake.h"

static struct harness h;
static struct vfs_node *passwd, *etc, *link;

static const struct vfs_attr passwd_attr = {
	.dev = 0x10305, /* makedev(259, 5) in the user-space encoding */
	.ino = 1234,
	.nlink = 1,
	.mode = S_IFREG | 0644,
	.uid = 0,
	.gid = 42,
	.rdev = 0,
	.size = 1500,
	.blksize = 4096,
	.blocks = 8,
	.atime = { 100, 1 },
	.mtime = { 200, 2 },
	.ctime = { 300, 3 },
};

static void setup(void)
{
	struct vfs_attr a = passwd_attr;

	harness_init(&h, 0, 0);
	passwd = fake_vfs_add("/etc/passwd", &a);
	a.ino = 2;
	a.mode = S_IFDIR | 0755;
	etc = fake_vfs_add("/etc", &a);
	a.ino = 3;
	a.mode = S_IFLNK | 0777;
	link = fake_vfs_add("/bin", &a);
}

static void teardown(void)
{
	cr_assert_eq(fake_refs, 0, "every reference taken was dropped");
}

TestSuite(sys_stat, .init = setup, .fini = teardown);

#define AT_FDCWD_ARG ((uint64_t)(int64_t)AT_FDCWD)

Test(sys_stat, stat_converts_every_field)
{
	struct linux_stat st;

	memset(&st, 0xff, sizeof(st));
	cr_assert_eq(CALL(&h.t, stat, A("/etc/passwd"), A(&st)), 0);
	cr_assert_eq(st.st_dev, 0x10305);
	cr_assert_eq(st.st_ino, 1234);
	cr_assert_eq(st.st_nlink, 1);
	cr_assert_eq(st.st_mode, S_IFREG | 0644);
	cr_assert_eq(st.st_uid, 0);
	cr_assert_eq(st.st_gid, 42);
	cr_assert_eq(st.__pad0, 0);
	cr_assert_eq(st.st_rdev, 0);
	cr_assert_eq(st.st_size, 1500);
	cr_assert_eq(st.st_blksize, 4096);
	cr_assert_eq(st.st_blocks, 8);
	cr_assert_eq(st.st_atime_sec, 100);
	cr_assert_eq(st.st_atime_nsec, 1);
	cr_assert_eq(st.st_mtime_sec, 200);
	cr_assert_eq(st.st_mtime_nsec, 2);
	cr_assert_eq(st.st_ctime_sec, 300);
	cr_assert_eq(st.st_ctime_nsec, 3);
	cr_assert_eq(st.__unused[0], 0);
	cr_assert_eq(fake_lookup_dirfd, AT_FDCWD);
	cr_assert_eq(fake_lookup_flags, 0);
}

Test(sys_stat, lstat_does_not_follow)
{
	struct linux_stat st;

	cr_assert_eq(CALL(&h.t, lstat, A("/bin"), A(&st)), 0);
	cr_assert_eq(st.st_mode, S_IFLNK | 0777);
	cr_assert_eq(fake_lookup_flags, AT_SYMLINK_NOFOLLOW);
}

Test(sys_stat, newfstatat_passes_dirfd_and_lookup_flags)
{
	struct linux_stat st;

	cr_assert_eq(CALL(&h.t, newfstatat, 7, A("/etc"), A(&st),
			  AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | 0x2000),
		     0);
	cr_assert_eq(fake_lookup_dirfd, 7);
	cr_assert_eq(fake_lookup_flags, AT_SYMLINK_NOFOLLOW);
	cr_assert_eq(st.st_ino, 2);
}

Test(sys_stat, newfstatat_sync_type_bits_are_accepted)
{
	struct linux_stat st;

	cr_assert_eq(CALL(&h.t, newfstatat, AT_FDCWD_ARG, A("/etc"), A(&st), 0x6000), 0);
}

Test(sys_stat, bad_flags_are_einval_before_the_path_is_used)
{
	struct linux_stat st;

	cr_assert_eq(CALL(&h.t, newfstatat, AT_FDCWD_ARG, A("/etc"), A(&st), 0x8000), -EINVAL);
	cr_assert_eq(CALL(&h.t, newfstatat, AT_FDCWD_ARG, 1, A(&st), 0x8000), -EINVAL);
	cr_assert_eq(fake_lookup_calls, 0);
}

Test(sys_stat, path_errors)
{
	struct linux_stat st;
	static char longpath[5000];

	cr_assert_eq(CALL(&h.t, stat, 1, A(&st)), -EFAULT);
	cr_assert_eq(CALL(&h.t, stat, 0, A(&st)), -EFAULT);
	memset(longpath, 'a', sizeof(longpath) - 1);
	cr_assert_eq(CALL(&h.t, stat, A(longpath), A(&st)), -ENAMETOOLONG);
	cr_assert_eq(CALL(&h.t, stat, A("/nonexistent"), A(&st)), -ENOENT);
	cr_assert_eq(CALL(&h.t, stat, A(""), A(&st)), -ENOENT);
	cr_assert_eq(CALL(&h.t, stat, A("/etc"), 1), -EFAULT);
}

Test(sys_stat, empty_path_on_an_fd_is_fstat_and_ignores_other_flags)
{
	struct linux_stat st;

	fake_fd_install(3, passwd, NULL);
	cr_assert_eq(CALL(&h.t, newfstatat, 3, A(""), A(&st), AT_EMPTY_PATH | 0x100000), 0);
	cr_assert_eq(st.st_ino, 1234);
	cr_assert_eq(CALL(&h.t, newfstatat, 3, 0, A(&st), AT_EMPTY_PATH), 0);
	cr_assert_eq(fake_lookup_calls, 0, "no path walk for the fd itself");
	cr_assert_eq(CALL(&h.t, newfstatat, 9, A(""), A(&st), AT_EMPTY_PATH), -EBADF);
}

Test(sys_stat, empty_path_at_cwd_goes_to_lookup)
{
	struct linux_stat st;

	/* The fake has no "" node: what matters is what was asked. */
	cr_assert_eq(CALL(&h.t, newfstatat, AT_FDCWD_ARG, 0, A(&st), AT_EMPTY_PATH), -ENOENT);
	cr_assert_eq(fake_lookup_calls, 1);
	cr_assert_str_eq(fake_lookup_path, "");
	cr_assert_eq(fake_lookup_flags, AT_EMPTY_PATH);
}

Test(sys_stat, fstat_uses_the_path_of_an_o_path_file)
{
	struct linux_stat st;

	fake_fd_install(4, link, NULL);
	cr_assert_eq(CALL(&h.t, fstat, 4, A(&st)), 0);
	cr_assert_eq(st.st_mode, S_IFLNK | 0777);
	cr_assert_eq(fake_file_getattr_calls, 0);
}

Test(sys_stat, fstat_of_a_file_with_no_path_uses_its_getattr)
{
	struct vfs_attr a = { .mode = S_IFIFO | 0600, .ino = 77 };
	struct linux_stat st;

	fake_fd_install(5, NULL, &a);
	cr_assert_eq(CALL(&h.t, fstat, 5, A(&st)), 0);
	cr_assert_eq(st.st_mode, S_IFIFO | 0600);
	cr_assert_eq(st.st_ino, 77);
	cr_assert_eq(fake_file_getattr_calls, 1);
}

Test(sys_stat, fstat_errors)
{
	struct linux_stat st;

	fake_fd_install(3, passwd, NULL);
	cr_assert_eq(CALL(&h.t, fstat, 9, A(&st)), -EBADF);
	cr_assert_eq(CALL(&h.t, fstat, (uint64_t)-1, A(&st)), -EBADF);
	cr_assert_eq(CALL(&h.t, fstat, 3, 1), -EFAULT);
}

Test(sys_stat, statx_fills_basic_stats_and_mount_id)
{
	struct linux_statx stx;

	memset(&stx, 0xff, sizeof(stx));
	cr_assert_eq(CALL(&h.t, statx, AT_FDCWD_ARG, A("/etc/passwd"), 0, 0x7ff, A(&stx)), 0);
	cr_assert_eq(stx.stx_mask, 0x7ff | 0x1000);
	cr_assert_eq(stx.stx_mnt_id, FAKE_MNT_ID);
	cr_assert_eq(stx.stx_dev_major, 259);
	cr_assert_eq(stx.stx_dev_minor, 5);
	cr_assert_eq(stx.stx_rdev_major, 0);
	cr_assert_eq(stx.stx_ino, 1234);
	cr_assert_eq(stx.stx_mode, S_IFREG | 0644);
	cr_assert_eq(stx.stx_size, 1500);
	cr_assert_eq(stx.stx_blocks, 8);
	cr_assert_eq(stx.stx_blksize, 4096);
	cr_assert_eq(stx.stx_nlink, 1);
	cr_assert_eq(stx.stx_gid, 42);
	cr_assert_eq(stx.stx_mtime.tv_sec, 200);
	cr_assert_eq(stx.stx_mtime.tv_nsec, 2);
	cr_assert_eq(stx.stx_btime.tv_sec, 0);
	cr_assert_eq(stx.stx_attributes, 0);
	cr_assert_eq(stx.__spare3[11], 0);
}

Test(sys_stat, statx_reports_unique_mount_id_when_asked)
{
	struct linux_statx stx;

	cr_assert_eq(CALL(&h.t, statx, AT_FDCWD_ARG, A("/etc"), 0, 0x4000, A(&stx)), 0);
	cr_assert_eq(stx.stx_mask, 0x7ff | 0x4000);
	cr_assert_eq(stx.stx_mnt_id, FAKE_MNT_ID);
}

Test(sys_stat, statx_rdev_of_a_device)
{
	struct vfs_attr a = { .mode = S_IFCHR | 0666, .rdev = makedev(1, 3), .dev = 5 };
	struct linux_statx stx;

	fake_vfs_add("/dev/null", &a);
	cr_assert_eq(CALL(&h.t, statx, AT_FDCWD_ARG, A("/dev/null"), 0, 0x7ff, A(&stx)), 0);
	cr_assert_eq(stx.stx_rdev_major, 1);
	cr_assert_eq(stx.stx_rdev_minor, 3);
}

Test(sys_stat, statx_checks_in_linux_order)
{
	struct linux_statx stx;

	/* Mask and sync-type checks come before the path's own fault. */
	cr_assert_eq(CALL(&h.t, statx, AT_FDCWD_ARG, 1, 0, 0x80000000u, A(&stx)), -EINVAL);
	cr_assert_eq(CALL(&h.t, statx, AT_FDCWD_ARG, 1, 0x6000, 0x7ff, A(&stx)), -EINVAL);
	cr_assert_eq(CALL(&h.t, statx, AT_FDCWD_ARG, 1, 0x8000, 0x7ff, A(&stx)), -EINVAL);
	cr_assert_eq(CALL(&h.t, statx, AT_FDCWD_ARG, 1, 0, 0x7ff, A(&stx)), -EFAULT);
	cr_assert_eq(CALL(&h.t, statx, AT_FDCWD_ARG, A("/etc"), 0x2000, 0x7ff, A(&stx)), 0);
	cr_assert_eq(CALL(&h.t, statx, AT_FDCWD_ARG, A("/etc"), 0, 0x7ff, 1), -EFAULT);
	cr_assert_eq(CALL(&h.t, statx, AT_FDCWD_ARG, A("/nope"), 0, 0x7ff, 1), -ENOENT);
}

Test(sys_stat, statx_on_an_fd_checks_mask_but_not_other_flags)
{
	struct linux_statx stx;

	fake_fd_install(3, passwd, NULL);
	cr_assert_eq(CALL(&h.t, statx, 3, A(""), AT_EMPTY_PATH | 0x100000, 0x7ff, A(&stx)), 0);
	cr_assert_eq(stx.stx_ino, 1234);
	cr_assert_eq(CALL(&h.t, statx, 3, 0, AT_EMPTY_PATH, 0x80000000u, A(&stx)), -EINVAL);
	cr_assert_eq(CALL(&h.t, statx, 3, A(""), AT_EMPTY_PATH | 0x6000, 0x7ff, A(&stx)), -EINVAL);
	cr_assert_eq(fake_lookup_calls, 0);
}

Test(sys_stat, statx_of_a_file_with_no_path_has_no_mount_id)
{
	struct vfs_attr a = { .mode = S_IFIFO | 0600 };
	struct linux_statx stx;

	fake_fd_install(5, NULL, &a);
	cr_assert_eq(CALL(&h.t, statx, 5, A(""), AT_EMPTY_PATH, 0xfff, A(&stx)), 0);
	cr_assert_eq(stx.stx_mask, 0x7ff);
	cr_assert_eq(stx.stx_mnt_id, 0);
}

Test(sys_stat, statfs_of_a_path)
{
	struct linux_statfs st;

	cr_assert_eq(CALL(&h.t, statfs, A("/etc"), A(&st)), 0);
	cr_assert_eq(st.f_type, FAKE_STATFS_TYPE);
	cr_assert_eq(CALL(&h.t, statfs, A(""), A(&st)), -ENOENT);
	cr_assert_eq(CALL(&h.t, statfs, 0, A(&st)), -EFAULT);
	cr_assert_eq(CALL(&h.t, statfs, A("/etc"), 1), -EFAULT);
	etc->statfs_err = -ENOSYS;
	cr_assert_eq(CALL(&h.t, statfs, A("/etc"), A(&st)), -ENOSYS);
}

Test(sys_stat, fstatfs_of_path_and_pathless_files)
{
	struct vfs_attr pipe_attr = { .mode = S_IFIFO | 0600 };
	struct linux_statfs st;

	fake_fd_install(3, passwd, NULL);
	fake_fd_install(5, NULL, &pipe_attr);
	cr_assert_eq(CALL(&h.t, fstatfs, 3, A(&st)), 0);
	cr_assert_eq(st.f_type, FAKE_STATFS_TYPE);
	cr_assert_eq(CALL(&h.t, fstatfs, 5, A(&st)), 0);
	cr_assert_eq(st.f_type, 0x50495045);
	cr_assert_eq(st.f_bsize, 4096);
	cr_assert_eq(st.f_namelen, 255);
	cr_assert_eq(CALL(&h.t, fstatfs, 9, A(&st)), -EBADF);
	cr_assert_eq(CALL(&h.t, fstatfs, 3, 1), -EFAULT);
}
