/* SPDX-License-Identifier: Apache-2.0 */
/* The set*id rules of sentry/kernel/cred.c, on a bare task (no sentry around it). */
#include <criterion/criterion.h>
#include <errno.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/stat.h>

#include "common/idmap.h"
#include "sentry/kernel/cred.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"

#define ALL_CAPS ((1ULL << (CAP_LAST_CAP + 1)) - 1)
#define NONE ((uint32_t)-1)

static struct task root_task(void)
{
	struct task t;

	memset(&t, 0, sizeof(t));
	t.cred.cap_effective = t.cred.cap_permitted = t.cred.cap_bounding = ALL_CAPS;
	return t;
}

Test(cred, setuid_as_root_sets_all_ids_and_drops_caps)
{
	struct task t = root_task();

	cr_assert_eq(cred_setuid(&t, 1000), 0);
	cr_assert_eq(t.cred.uid, 1000);
	cr_assert_eq(t.cred.euid, 1000);
	cr_assert_eq(t.cred.suid, 1000);
	cr_assert_eq(t.cred.fsuid, 1000);
	cr_assert_eq(t.cred.cap_permitted, 0);
	cr_assert_eq(t.cred.cap_effective, 0);
	cr_assert_eq(cred_setuid(&t, 0), -EPERM);
}

Test(cred, keepcaps_keeps_permitted_but_clears_effective)
{
	struct task t = root_task();

	t.cred.keep_caps = true;
	cr_assert_eq(cred_setresuid(&t, 5, 5, 5), 0);
	cr_assert_eq(t.cred.cap_permitted, ALL_CAPS);
	cr_assert_eq(t.cred.cap_effective, 0);
}

Test(cred, euid_back_to_zero_restores_effective_from_permitted)
{
	struct task t = root_task();

	cr_assert_eq(cred_setresuid(&t, 7, 7, 0), 0);
	cr_assert_eq(t.cred.cap_effective, 0);
	cr_assert_eq(t.cred.cap_permitted, ALL_CAPS);
	cr_assert_eq(cred_setresuid(&t, NONE, 0, NONE), 0);
	cr_assert_eq(t.cred.cap_effective, ALL_CAPS);
}

Test(cred, unprivileged_setresuid_only_takes_current_ids)
{
	struct task t;

	memset(&t, 0, sizeof(t));
	t.cred.uid = 1;
	t.cred.euid = 2;
	t.cred.suid = 3;
	cr_assert_eq(cred_setresuid(&t, 3, 1, 2), 0);
	cr_assert_eq(t.cred.uid, 3);
	cr_assert_eq(t.cred.euid, 1);
	cr_assert_eq(t.cred.suid, 2);
	cr_assert_eq(t.cred.fsuid, 1);
	cr_assert_eq(cred_setresuid(&t, 4, NONE, NONE), -EPERM);
	cr_assert_eq(t.cred.uid, 3);
}

Test(cred, setreuid_moves_saved_uid_to_new_effective)
{
	struct task t;

	memset(&t, 0, sizeof(t));
	t.cred.uid = 10;
	t.cred.euid = 20;
	t.cred.suid = 30;
	/* Only the effective uid changes, to the real one: saved stays. */
	cr_assert_eq(cred_setreuid(&t, NONE, 10), 0);
	cr_assert_eq(t.cred.suid, 30);
	/* To the saved one (not the old real uid): saved follows. */
	cr_assert_eq(cred_setreuid(&t, NONE, 30), 0);
	cr_assert_eq(t.cred.suid, 30);
	cr_assert_eq(cred_setreuid(&t, 30, NONE), 0);
	cr_assert_eq(t.cred.uid, 30);
	cr_assert_eq(t.cred.suid, 30);
	cr_assert_eq(cred_setreuid(&t, 99, NONE), -EPERM);
}

Test(cred, setfsuid_returns_old_value_and_moves_fs_caps)
{
	struct task t = root_task();

	cr_assert_eq(cred_setfsuid(&t, 1000), 0);
	cr_assert_eq(t.cred.fsuid, 1000);
	cr_assert_eq(t.cred.cap_effective & (1ULL << CAP_CHOWN), 0);
	cr_assert_neq(t.cred.cap_effective & (1ULL << CAP_SETUID), 0);
	cr_assert_eq(cred_setfsuid(&t, NONE), 1000);
	cr_assert_eq(cred_setfsuid(&t, 0), 1000);
	cr_assert_neq(t.cred.cap_effective & (1ULL << CAP_CHOWN), 0);
}

Test(cred, setgid_family_follows_cap_setgid)
{
	struct task t = root_task();

	cr_assert_eq(cred_setresgid(&t, 1, 2, 3), 0);
	cr_assert_eq(t.cred.fsgid, 2);
	t.cred.cap_effective = 0;
	cr_assert_eq(cred_setgid(&t, 9), -EPERM);
	cr_assert_eq(cred_setgid(&t, 3), 0);
	cr_assert_eq(t.cred.egid, 3);
	cr_assert_eq(t.cred.gid, 1);
	cr_assert_eq(cred_setregid(&t, NONE, 1), 0);
	cr_assert_eq(t.cred.sgid, 3);
	cr_assert_eq(cred_setgid(&t, NONE), -EINVAL);
}

Test(cred, unsafe_exec_of_a_setuid_file_gains_nothing)
{
	struct task t = root_task();
	struct cred_exec_file f = { .mode = S_IFREG | 04755, .uid = 0, .gid = 0 };
	struct cred out;
	bool secure;

	cr_assert_eq(cred_setuid(&t, 1000), 0);
	cr_assert_eq(cred_exec_transform(&t.cred, 0, &f, &out, &secure), 0);
	cr_assert_eq(out.euid, 0);
	cr_assert_eq(out.cap_permitted, ALL_CAPS);
	cr_assert_eq(cred_exec_transform(&t.cred, CRED_UNSAFE_SHARE, &f, &out, &secure), 0);
	cr_assert_eq(out.euid, 1000);
	cr_assert_eq(out.suid, 1000);
	cr_assert_eq(out.cap_permitted, 0);
	cr_assert_eq(cred_exec_transform(&t.cred, CRED_UNSAFE_PTRACE, &f, &out, &secure), 0);
	cr_assert_eq(out.euid, 1000);
	cr_assert_eq(out.cap_effective, 0);
}

Test(cred, unsafe_exec_keeps_the_ids_of_a_caller_with_cap_setuid)
{
	struct task t = root_task();
	struct cred_exec_file f = { .mode = S_IFREG | 04755, .uid = 2000, .gid = 0 };
	struct cred out;
	bool secure;

	cr_assert_eq(cred_exec_transform(&t.cred, CRED_UNSAFE_PTRACE, &f, &out, &secure), 0);
	cr_assert_eq(out.euid, 2000);
	cr_assert_eq(cred_exec_transform(&t.cred, CRED_UNSAFE_NNP | CRED_UNSAFE_SHARE, &f, &out,
					 &secure),
		     0);
	cr_assert_eq(out.euid, 0);
}

Test(cred, ids_outside_the_sandbox_mappings_are_einval)
{
	static struct kernel k; /* only its mappings are read */
	struct task t = root_task();

	cr_assert_eq(idmap_parse("0:100000:1000", &k.uid_map), 0);
	cr_assert_eq(idmap_parse("0:200000:10,10:5000:1", &k.gid_map), 0);
	t.k = &k;
	cr_assert(cred_id_valid(&t, false, 999));
	cr_assert_not(cred_id_valid(&t, false, 1000));
	cr_assert(cred_id_valid(&t, true, 10));
	cr_assert_not(cred_id_valid(&t, true, 11));
	cr_assert_not(cred_id_valid(&t, false, NONE));
	/* EINVAL comes before the permission check, and changes nothing. */
	cr_assert_eq(cred_setresuid(&t, NONE, 1000, NONE), -EINVAL);
	cr_assert_eq(cred_setreuid(&t, 5000, NONE), -EINVAL);
	cr_assert_eq(cred_setuid(&t, 100000), -EINVAL);
	cr_assert_eq(cred_setresgid(&t, 11, NONE, NONE), -EINVAL);
	cr_assert_eq(cred_setregid(&t, NONE, 200000), -EINVAL);
	cr_assert_eq(cred_setgid(&t, 12), -EINVAL);
	cr_assert_eq(t.cred.uid, 0);
	cr_assert_eq(t.cred.egid, 0);
	/* setfsuid of an unmapped id changes nothing and returns the old one. */
	cr_assert_eq(cred_setfsuid(&t, 1000), 0);
	cr_assert_eq(t.cred.fsuid, 0);
	cr_assert_eq(cred_setfsgid(&t, 11), 0);
	cr_assert_eq(t.cred.fsgid, 0);
	/* Mapped ids work as before. */
	cr_assert_eq(cred_setresgid(&t, 10, 10, 10), 0);
	cr_assert_eq(cred_setuid(&t, 999), 0);
	cr_assert_eq(t.cred.euid, 999);
	/* Without mappings every id but -1 is one. */
	memset(&k.uid_map, 0, sizeof(k.uid_map));
	cr_assert(cred_id_valid(&t, false, 4000000000u));
}
