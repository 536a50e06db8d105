/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The set*id family, setgroups, and capget/capset: Linux's permission rules and the
 * capability changes that follow uid changes. Runs as root; every change happens in a child.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <grp.h>
#include <linux/capability.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

struct caps {
	uint64_t eff, perm, inh;
};

static int get_caps(struct caps *c)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d) < 0)
		return -1;
	c->eff = (uint64_t)d[1].effective << 32 | d[0].effective;
	c->perm = (uint64_t)d[1].permitted << 32 | d[0].permitted;
	c->inh = (uint64_t)d[1].inheritable << 32 | d[0].inheritable;
	return 0;
}

static long set_caps(const struct caps *c)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = {
		{ (uint32_t)c->eff, (uint32_t)c->perm, (uint32_t)c->inh },
		{ (uint32_t)(c->eff >> 32), (uint32_t)(c->perm >> 32), (uint32_t)(c->inh >> 32) },
	};

	return syscall(SYS_capset, &h, d);
}

#define BIT(cap) (1ULL << (cap))

/* Runs fn in a child (credentials changes stay there) and adds its counts to ours. */
static void in_child(void (*fn)(void))
{
	int counts[2] = { 0, 0 }, p[2], st;
	pid_t pid;

	if (pipe(p) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		checks_passed = checks_failed = 0;
		fn();
		counts[0] = checks_passed;
		counts[1] = checks_failed;
		write(p[1], counts, sizeof(counts));
		_exit(0);
	}
	close(p[1]);
	if (read(p[0], counts, sizeof(counts)) == sizeof(counts)) {
		checks_passed += counts[0];
		checks_failed += counts[1];
	}
	close(p[0]);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "a child failed (status %#x)", st);
}

static void uid_rules(void)
{
	uid_t r, e, s;
	struct caps c;

	CHECK_RET(getresuid(&r, &e, &s), 0);
	CHECK(r == 0 && e == 0 && s == 0, "not root: %u %u %u", r, e, s);
	CHECK_RET(get_caps(&c), 0);
	CHECK(c.eff & BIT(CAP_SETUID), "no CAP_SETUID");
	CHECK_ERR(syscall(SYS_setuid, -1), EINVAL);

	/* euid 0 -> 1000 with suid 0 kept: effective cleared, permitted kept. */
	CHECK_RET(setresuid(1000, 1000, 0), 0);
	CHECK_RET(get_caps(&c), 0);
	CHECK(c.eff == 0 && c.perm != 0, "eff %#llx perm %#llx", (unsigned long long)c.eff,
	      (unsigned long long)c.perm);
	CHECK_RET(syscall(SYS_setfsuid, -1), 1000);
	/* Without CAP_SETUID: only r/e/s values. */
	CHECK_ERR(setresuid(2000, -1, -1), EPERM);
	CHECK_ERR(setreuid(-1, 2000), EPERM);
	CHECK_ERR(setuid(2000), EPERM);
	/* setfsuid to an unrelated id fails silently and returns the old fsuid. */
	CHECK_RET(syscall(SYS_setfsuid, 2000), 1000);
	CHECK_RET(syscall(SYS_setfsuid, -1), 1000);
	/* Back to euid 0 (it is the saved uid): effective becomes permitted again. */
	CHECK_RET(setresuid(-1, 0, -1), 0);
	CHECK_RET(get_caps(&c), 0);
	CHECK(c.eff == c.perm && c.eff != 0, "eff %#llx perm %#llx", (unsigned long long)c.eff,
	      (unsigned long long)c.perm);
	CHECK_RET(getresuid(&r, &e, &s), 0);
	CHECK(r == 1000 && e == 0 && s == 0, "%u %u %u", r, e, s);

	/* setreuid: a new real uid moves the saved uid to the new effective one. */
	CHECK_RET(setreuid(0, 3000), 0);
	CHECK_RET(getresuid(&r, &e, &s), 0);
	CHECK(r == 0 && e == 3000 && s == 3000, "%u %u %u", r, e, s);
	CHECK_RET(setreuid(-1, 0), 0); /* the real uid is 0 */
	CHECK_RET(getresuid(&r, &e, &s), 0);
	CHECK(r == 0 && e == 0 && s == 3000, "%u %u %u", r, e, s);

	/* setuid as root sets all three; all non-zero drops every capability. */
	CHECK_RET(setuid(4000), 0);
	CHECK_RET(getresuid(&r, &e, &s), 0);
	CHECK(r == 4000 && e == 4000 && s == 4000, "%u %u %u", r, e, s);
	CHECK_RET(get_caps(&c), 0);
	CHECK(c.eff == 0 && c.perm == 0, "eff %#llx perm %#llx", (unsigned long long)c.eff,
	      (unsigned long long)c.perm);
	CHECK_ERR(setuid(0), EPERM);
	CHECK_ERR(setgroups(0, NULL), EPERM);
}

static void keepcaps(void)
{
	struct caps c;

	CHECK_RET(prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0), 0);
	CHECK_RET(prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0), 1);
	CHECK_RET(setresuid(1000, 1000, 1000), 0);
	CHECK_RET(get_caps(&c), 0);
	CHECK(c.eff == 0 && c.perm != 0, "eff %#llx perm %#llx", (unsigned long long)c.eff,
	      (unsigned long long)c.perm);
}

static void gid_rules(void)
{
	gid_t r, e, s, list[8];

	CHECK_RET(setresgid(100, 200, 300), 0);
	CHECK_RET(getresgid(&r, &e, &s), 0);
	CHECK(r == 100 && e == 200 && s == 300, "%u %u %u", r, e, s);
	CHECK_RET(syscall(SYS_setfsgid, -1), 200);
	CHECK_RET(setregid(-1, 300), 0);
	CHECK_RET(getresgid(&r, &e, &s), 0);
	CHECK(r == 100 && e == 300 && s == 300, "%u %u %u", r, e, s);
	CHECK_RET(setgid(5), 0);
	CHECK_RET(getresgid(&r, &e, &s), 0);
	CHECK(r == 5 && e == 5 && s == 5, "%u %u %u", r, e, s);

	gid_t g[] = { 30, 10, 20 };
	CHECK_RET(setgroups(3, g), 0);
	CHECK_RET(getgroups(0, NULL), 3);
	CHECK_ERR(getgroups(2, list), EINVAL);
	CHECK_RET(getgroups(8, list), 3);
	CHECK(list[0] == 10 && list[1] == 20 && list[2] == 30, "groups %u %u %u", list[0], list[1],
	      list[2]);
	CHECK_ERR(setgroups(-1, g), EINVAL);
	CHECK_RET(setgroups(0, NULL), 0);
	CHECK_RET(getgroups(0, NULL), 0);

	/* Without CAP_SETGID (euid non-zero drops it): only r/e/s values. */
	CHECK_RET(setresuid(0, 1000, 0), 0);
	CHECK_ERR(setgid(77), EPERM);
	CHECK_ERR(setresgid(-1, 77, -1), EPERM);
	CHECK_RET(setresgid(-1, 5, -1), 0);
}

static void cap_rules(void)
{
	struct __user_cap_header_struct h = { 0x12345678, 0 };
	struct __user_cap_data_struct d[2];
	struct caps c, n;

	/* A wrong version: EINVAL, and the kernel's preferred version is written back. */
	CHECK_ERR(syscall(SYS_capget, &h, d), EINVAL);
	CHECK(h.version == _LINUX_CAPABILITY_VERSION_3, "version %#x", h.version);
	h.version = 0x12345678;
	CHECK_RET(syscall(SYS_capget, &h, NULL), 0); /* probing with no data */
	h.version = _LINUX_CAPABILITY_VERSION_3;
	h.pid = -1;
	CHECK_ERR(syscall(SYS_capget, &h, d), EINVAL);
	h.pid = getppid();
	CHECK_RET(syscall(SYS_capget, &h, d), 0);
	h.pid = getppid();
	CHECK_ERR(syscall(SYS_capset, &h, d), EPERM);

	CHECK_RET(get_caps(&c), 0);
	/* Effective beyond permitted: EPERM. */
	n = c;
	n.perm &= ~BIT(CAP_NET_RAW);
	n.eff = c.eff;
	CHECK_ERR(set_caps(&n), EPERM);
	/* Drop one from both; it cannot come back. */
	n.eff &= ~BIT(CAP_NET_RAW);
	CHECK_RET(set_caps(&n), 0);
	CHECK_RET(get_caps(&c), 0);
	CHECK(!(c.perm & BIT(CAP_NET_RAW)) && !(c.eff & BIT(CAP_NET_RAW)), "not dropped");
	n.perm |= BIT(CAP_NET_RAW);
	CHECK_ERR(set_caps(&n), EPERM);
	/* Inheritable may take any permitted capability. */
	n = c;
	n.inh = BIT(CAP_CHOWN);
	CHECK_RET(set_caps(&n), 0);
	CHECK_RET(get_caps(&c), 0);
	CHECK(c.inh == BIT(CAP_CHOWN), "inh %#llx", (unsigned long long)c.inh);
	CHECK_RET(prctl(PR_CAPBSET_READ, CAP_CHOWN, 0, 0, 0), 1);
	CHECK_ERR(prctl(PR_CAPBSET_READ, 64, 0, 0, 0), EINVAL);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (getuid() != 0) {
		printf("creds: not root, nothing to check\n");
		return finish();
	}
	in_child(uid_rules);
	in_child(keepcaps);
	in_child(gid_rules);
	in_child(cap_rules);
	return finish();
}
