/* SPDX-License-Identifier: Apache-2.0 */
/* syscalls/sys_id.c: ids come from the task's credentials, with Linux's getgroups rules. */
#include <criterion/criterion.h>
#include <errno.h>

#include "tests/unit/syscalls/fake.h"

static struct harness h;

static void setup(void)
{
	harness_init(&h, 1000, 1001);
	h.t.cred.euid = 2000;
	h.t.cred.suid = 3000;
	h.t.cred.egid = 2001;
	h.t.cred.sgid = 3001;
	h.t.cred.ngroups = 3;
	h.t.cred.groups[0] = 10;
	h.t.cred.groups[1] = 20;
	h.t.cred.groups[2] = 30;
}

TestSuite(sys_id, .init = setup);

Test(sys_id, plain_ids_come_from_cred)
{
	cr_assert_eq(CALL(&h.t, getuid), 1000);
	cr_assert_eq(CALL(&h.t, geteuid), 2000);
	cr_assert_eq(CALL(&h.t, getgid), 1001);
	cr_assert_eq(CALL(&h.t, getegid), 2001);
}

Test(sys_id, getgroups_size_zero_returns_count_without_writing)
{
	cr_assert_eq(CALL(&h.t, getgroups, 0, 0), 3);
}

Test(sys_id, getgroups_fills_list)
{
	uint32_t g[8] = { 0 };

	cr_assert_eq(CALL(&h.t, getgroups, 8, A(g)), 3);
	cr_assert_eq(g[0], 10);
	cr_assert_eq(g[1], 20);
	cr_assert_eq(g[2], 30);
	cr_assert_eq(g[3], 0);
}

Test(sys_id, getgroups_too_small_is_einval)
{
	uint32_t g[8];

	cr_assert_eq(CALL(&h.t, getgroups, 2, A(g)), -EINVAL);
}

Test(sys_id, getgroups_negative_size_is_einval)
{
	cr_assert_eq(CALL(&h.t, getgroups, (uint64_t)-1, 0), -EINVAL);
}

Test(sys_id, getgroups_size_uses_low_32_bits)
{
	/* 1 << 32 is an int 0 for the kernel: the count is returned. */
	cr_assert_eq(CALL(&h.t, getgroups, 1ULL << 32, 0), 3);
}

Test(sys_id, getgroups_bad_pointer_is_efault)
{
	cr_assert_eq(CALL(&h.t, getgroups, 8, 1), -EFAULT);
}

Test(sys_id, getgroups_with_no_groups_writes_nothing)
{
	h.t.cred.ngroups = 0;
	cr_assert_eq(CALL(&h.t, getgroups, 4, 1), 0);
}

Test(sys_id, getresuid_and_getresgid_write_three_ids)
{
	uint32_t r = 0, e = 0, s = 0;

	cr_assert_eq(CALL(&h.t, getresuid, A(&r), A(&e), A(&s)), 0);
	cr_assert_eq(r, 1000);
	cr_assert_eq(e, 2000);
	cr_assert_eq(s, 3000);
	cr_assert_eq(CALL(&h.t, getresgid, A(&r), A(&e), A(&s)), 0);
	cr_assert_eq(r, 1001);
	cr_assert_eq(e, 2001);
	cr_assert_eq(s, 3001);
}

Test(sys_id, getresuid_stops_at_first_fault)
{
	uint32_t r = 0, s = 0;

	cr_assert_eq(CALL(&h.t, getresuid, A(&r), 1, A(&s)), -EFAULT);
	cr_assert_eq(r, 1000);
	cr_assert_eq(s, 0);
}
