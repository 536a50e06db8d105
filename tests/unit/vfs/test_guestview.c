/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the guest sees of config.json's devices: the device rules (as the device cgroup), /dev
 * as runc makes it, linux.devices nodes. (Mount labels in mountinfo: test_proc.c.)
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "common/err.h"
#include "sentry/fs/dev/dev.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/vfs/fs.h"
#include "sentry/vfs/vfs.h"
#include "tests/unit/vfs/fake_mm.h"
#include "tests/unit/vfs/tree.h"

static struct tree tr;
static struct harness h;

static void setup(void)
{
	tree_build(&tr);
	harness_init(&h, tr.fs, MS_RDONLY);
}

static void teardown(void)
{
	devfs_set_rules(NULL, 0);
	harness_fini(&h);
}

TestSuite(dev_rules, .init = setup, .fini = teardown);

#define R DEVFS_ACC_READ
#define W DEVFS_ACC_WRITE
#define M DEVFS_ACC_MKNOD

Test(dev_rules, no_rules_allow_everything)
{
	cr_assert_eq(devfs_check('c', 1, 11, R | W | M), 0);
	cr_assert_eq(devfs_check('b', 7, 0, R), 0);
}

Test(dev_rules, the_last_matching_rule_decides_each_access)
{
	const struct devfs_rule rules[] = {
		{ .allow = false, .type = 'a', .major = -1, .minor = -1, .access = R | W | M },
		{ .allow = true, .type = 'c', .major = 1, .minor = 3, .access = R | W },
		{ .allow = true, .type = 'c', .major = 136, .minor = -1, .access = R | W | M },
		{ .allow = false, .type = 'c', .major = 136, .minor = 2, .access = W },
	};

	cr_assert_eq(devfs_set_rules(rules, 4), 0);
	cr_assert_eq(devfs_check('c', 1, 3, R | W), 0);
	cr_assert_eq(devfs_check('c', 1, 3, M), -EPERM, "m was not allowed for 1:3");
	cr_assert_eq(devfs_check('c', 1, 5, R), -EPERM);
	cr_assert_eq(devfs_check('b', 1, 3, R), -EPERM, "the allow was for character devices");
	cr_assert_eq(devfs_check('c', 136, 7, R | W | M), 0, "a wildcard minor");
	cr_assert_eq(devfs_check('c', 136, 2, R), 0);
	cr_assert_eq(devfs_check('c', 136, 2, R | W), -EPERM, "a later deny of w only");
}

Test(dev_rules, opens_answer_eperm_when_refused_and_enxio_for_what_is_missing)
{
	const struct devfs_rule rules[] = {
		{ .allow = false, .type = 'a', .major = -1, .minor = -1, .access = R | W | M },
		{ .allow = true, .type = 'c', .major = 1, .minor = 3, .access = R },
		{ .allow = true, .type = 'c', .major = 1, .minor = 11, .access = R },
		{ .allow = true, .type = 'b', .major = 7, .minor = 0, .access = R },
	};
	struct file *f;

	cr_assert_eq(devfs_set_rules(rules, 4), 0);
	f = devfs_open_chrdev(1, 3, O_RDONLY);
	cr_assert(!IS_ERR(f));
	file_put(f);
	cr_assert_eq(PTR_ERR(devfs_open_chrdev(1, 3, O_WRONLY)), -EPERM);
	cr_assert_eq(PTR_ERR(devfs_open_chrdev(1, 5, O_RDONLY)), -EPERM);
	cr_assert_eq(PTR_ERR(devfs_open_chrdev(1, 11, O_RDONLY)), -ENXIO);
	cr_assert_eq(PTR_ERR(devfs_open_blkdev(7, 0, O_RDONLY)), -ENXIO);
	cr_assert_eq(PTR_ERR(devfs_open_blkdev(7, 1, O_RDONLY)), -EPERM);
}

Test(dev_rules, mknod_passes_the_m_rule)
{
	const struct devfs_rule rules[] = {
		{ .allow = false, .type = 'a', .major = -1, .minor = -1, .access = M },
		{ .allow = true, .type = 'c', .major = 1, .minor = 3, .access = M },
	};

	cr_assert_eq(vfs_mount_dev(&h.k), 0);
	cr_assert_eq(devfs_set_rules(rules, 2), 0);
	cr_assert_eq(vfs_mknodat(&h.t, AT_FDCWD, "/dev/a", S_IFCHR | 0600, vfs_mkdev(1, 3)), 0);
	cr_assert_eq(vfs_mknodat(&h.t, AT_FDCWD, "/dev/b", S_IFCHR | 0600, vfs_mkdev(1, 5)),
		     -EPERM);
	cr_assert_eq(vfs_mknodat(&h.t, AT_FDCWD, "/dev/c", S_IFIFO | 0600, 0), 0,
		     "FIFOs are no devices");
}

Test(dev_rules, dev_is_runc_s)
{
	struct vfs_path p;
	struct vfs_attr a;
	char target[32];
	struct file *f;

	cr_assert_eq(vfs_mount_dev(&h.k), 0);
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/dev/ptmx", AT_SYMLINK_NOFOLLOW, &p), 0);
	cr_assert(vfs_node_is_symlink(p.node));
	cr_assert_eq(vfs_path_readlink(&p, target, sizeof(target)), 8);
	cr_assert_eq(memcmp(target, "pts/ptmx", 8), 0);
	vfs_path_put(&p);
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/dev/ptmx", O_RDWR, 0, &f), 0, "through the link");
	file_put(f);
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/dev/mqueue", 0, &p), 0);
	cr_assert_eq(vfs_path_getattr(&p, &a), 0);
	cr_assert_eq(a.mode, S_IFDIR | 01777);
	vfs_path_put(&p);
}

Test(dev_rules, devices_are_made_with_their_owner_and_mode)
{
	struct vfs_create_args args = {
		.mode = S_IFCHR | 0620, .uid = 1, .gid = 2, .rdev = vfs_mkdev(1, 3)
	};
	struct vfs_path p;
	struct vfs_attr a;

	cr_assert_eq(vfs_mount_dev(&h.k), 0);
	cr_assert_eq(vfs_make_node(&h.k, "/dev/net/mynull", &args), 0);
	cr_assert_eq(vfs_make_node(&h.k, "/dev/net/mynull", &args), -EEXIST);
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/dev/net/mynull", 0, &p), 0);
	cr_assert_eq(vfs_path_getattr(&p, &a), 0);
	cr_assert_eq(a.mode, S_IFCHR | 0620);
	cr_assert_eq(a.uid, 1);
	cr_assert_eq(a.gid, 2);
	cr_assert_eq(a.rdev, vfs_mkdev(1, 3));
	vfs_path_put(&p);
}
