/* SPDX-License-Identifier: Apache-2.0 */
/*
 * runtime/cgroup_name.c (issue 18): a container's default cgroup path is /husk/<id> under the
 * default state root and /husk/<id>@<cksum of the root> under any other, so that two roots'
 * containers of one id (two test runs at once) never share a cgroup.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/oci.h"

/* The values are what coreutils' `printf %s S | cksum` prints first. */
Test(cgroup_name, cksum_is_posix_cksum)
{
	char long_a[300];

	cr_assert_eq(cgroup_cksum("", 0), 4294967295u);
	cr_assert_eq(cgroup_cksum("/tmp/husk-oci.abc123/state", 26), 3307681275u);
	/* A length of two bytes goes into the CRC after the data. */
	memset(long_a, 'a', sizeof(long_a));
	cr_assert_eq(cgroup_cksum(long_a, sizeof(long_a)), 1664553091u);
}

Test(cgroup_name, default_root_keeps_husk_id)
{
	char *p = cgroup_default_path(HUSK_DEFAULT_ROOT, "c1");

	cr_assert_str_eq(p, "/husk/c1");
	free(p);
}

Test(cgroup_name, other_root_gets_its_cksum)
{
	char *p = cgroup_default_path("/tmp/husk-oci.abc123/state", "c1");

	/* The root does not exist: its path as given. 3307681275 = 0xc52735fb. */
	cr_assert_str_eq(p, "/husk/c1@c52735fb");
	free(p);
}

Test(cgroup_name, one_root_however_spelt)
{
	char dir[] = "/tmp/husk-cgname.XXXXXX", link[64], rel[PATH_MAX], want[64];
	char *a, *b, *c, cwd[PATH_MAX];

	cr_assert_not_null(mkdtemp(dir));
	snprintf(link, sizeof(link), "%s.link", dir);
	cr_assert_eq(symlink(dir, link), 0);
	cr_assert_not_null(getcwd(cwd, sizeof(cwd)));
	cr_assert_eq(chdir("/tmp"), 0);
	snprintf(rel, sizeof(rel), "%s", dir + strlen("/tmp/"));
	a = cgroup_default_path(dir, "x");
	b = cgroup_default_path(link, "x");
	c = cgroup_default_path(rel, "x");
	cr_assert_eq(chdir(cwd), 0);
	snprintf(want, sizeof(want), "/husk/x@%08x", cgroup_cksum(dir, strlen(dir)));
	cr_assert_str_eq(a, want);
	cr_assert_str_eq(b, want);
	cr_assert_str_eq(c, want);
	/* Two roots, two cgroups. */
	free(c);
	c = cgroup_default_path("/tmp", "x");
	cr_assert_str_neq(a, c);
	free(a);
	free(b);
	free(c);
	unlink(link);
	rmdir(dir);
}
