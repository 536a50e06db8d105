/* SPDX-License-Identifier: Apache-2.0 */
/* common/userns.c: rootless confinement's user namespace. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/userns.h"

#define SKIP_STATUS 77

static void read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, len - 1);

	buf[n > 0 ? n : 0] = 0;
	if (fd >= 0)
		close(fd);
}

/* Runs fn in a child and returns its exit status (a failed check is its line number). */
static int in_child(int (*fn)(void))
{
	int st;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(fn());
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "the child died of signal %d", WTERMSIG(st));
	return WEXITSTATUS(st);
}

#define CHECK(cond)                               \
	do {                                      \
		if (!(cond))                      \
			return __LINE__ % 50 + 1; \
	} while (0)

static int unprivileged_child(void)
{
	char before[64] = { 0 }, after[64] = { 0 }, map[64];
	uid_t uid;
	gid_t gid;
	bool entered;
	int ret;

	/* As root: become nobody first (every capability goes with the uid change). */
	if (geteuid() == 0 && (setresgid(65534, 65534, 65534) < 0 || setgroups(0, NULL) < 0 ||
			       setresuid(65534, 65534, 65534) < 0))
		return 150;
	/* The uid change made us non-dumpable: /proc/self's files would be root's. */
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
		return 151;
	uid = geteuid();
	gid = getegid();
	CHECK(!userns_privileged());
	CHECK(readlink("/proc/self/ns/user", before, sizeof(before)) > 0);
	ret = userns_enter_unless_privileged(&entered);
	if (ret == -EPERM || ret == -ENOSPC)
		return SKIP_STATUS; /* no unprivileged user namespaces here */
	if (ret < 0)
		return 100 + (-ret % 50);
	CHECK(entered);
	CHECK(readlink("/proc/self/ns/user", after, sizeof(after)) > 0);
	CHECK(strcmp(before, after) != 0);
	CHECK(getuid() == 0 && geteuid() == 0 && getgid() == 0);
	read_text("/proc/self/uid_map", map, sizeof(map));
	/* The kernel pads each column: compare the words. */
	{
		unsigned int a, b, c;

		CHECK(sscanf(map, "%u %u %u", &a, &b, &c) == 3);
		CHECK(a == 0 && b == uid && c == 1);
		read_text("/proc/self/gid_map", map, sizeof(map));
		CHECK(sscanf(map, "%u %u %u", &a, &b, &c) == 3);
		CHECK(a == 0 && b == gid && c == 1);
	}
	read_text("/proc/self/setgroups", map, sizeof(map));
	CHECK(strncmp(map, "deny", 4) == 0);
	CHECK(userns_nested());
	/* Root in it: the rest of the confinement can make its namespaces. */
	CHECK(userns_privileged());
	CHECK(unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS) == 0);
	return 0;
}

Test(userns, unprivileged_caller_becomes_root_of_a_namespace_of_its_own)
{
	int st = in_child(unprivileged_child);

	if (st == SKIP_STATUS)
		cr_skip_test("this host has no unprivileged user namespaces");
	cr_assert_eq(
		st, 0,
		"code %d: 1-50 a CHECK (line %% 50 + 1), 100+errno entering, 150-151 dropping to nobody",
		st);
}

static int privileged_child(void)
{
	char before[64] = { 0 }, after[64] = { 0 };
	bool entered = true;

	CHECK(readlink("/proc/self/ns/user", before, sizeof(before)) > 0);
	CHECK(userns_enter_unless_privileged(&entered) == 0);
	CHECK(!entered);
	CHECK(readlink("/proc/self/ns/user", after, sizeof(after)) > 0);
	CHECK(strcmp(before, after) == 0);
	return 0;
}

Test(userns, privileged_caller_stays_in_its_namespace)
{
	if (!userns_privileged())
		cr_skip_test("needs CAP_SYS_ADMIN (run as root)");
	int st = in_child(privileged_child);

	cr_assert_eq(st, 0, "check failed (code %d)", st);
}
