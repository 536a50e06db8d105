/* SPDX-License-Identifier: Apache-2.0 */
/* Rootless confinement's user namespace (common/userns.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/userns.h"

bool userns_privileged(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) < 0)
		return false;
	return (data[CAP_SYS_ADMIN / 32].effective >> (CAP_SYS_ADMIN % 32)) & 1;
}

bool userns_nested(void)
{
	FILE *f = fopen("/proc/self/uid_map", "re");
	unsigned long inside, outside, count;
	bool ret = false;

	if (!f)
		return false;
	if (fscanf(f, "%lu %lu %lu", &inside, &outside, &count) == 3)
		ret = !(inside == 0 && outside == 0 && count == 4294967295UL);
	fclose(f);
	return ret;
}

/* Writes text to /proc/self/<file>. Returns 0 or -errno. */
static int write_self(const char *file, const char *text)
{
	char path[64];
	size_t len = strlen(text);
	ssize_t n;
	int fd, ret = 0;

	snprintf(path, sizeof(path), "/proc/self/%s", file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, text, len);
	if (n < 0)
		ret = -errno;
	else if ((size_t)n != len)
		ret = -EIO;
	close(fd);
	return ret;
}

int userns_enter_unless_privileged(bool *entered)
{
	char map[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int ret;

	*entered = false;
	if (userns_privileged())
		return 0;
	/* The new namespace is owned by our own uid: only we (and the host's root) can act in
	 * it, and its capabilities reach only namespaces and objects it owns. */
	if (unshare(CLONE_NEWUSER) < 0)
		return -errno;
	/* "deny" first: an unprivileged process may write a gid map only once setgroups is
	 * denied (else dropping a group with setgroups could grant access a deny ACL withholds). */
	ret = write_self("setgroups", "deny");
	if (ret < 0)
		return ret;
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned int)uid);
	ret = write_self("uid_map", map);
	if (ret < 0)
		return ret;
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned int)gid);
	ret = write_self("gid_map", map);
	if (ret < 0)
		return ret;
	*entered = true;
	return 0;
}

const char *userns_hint(int err)
{
	if (err == -EPERM || err == -ENOSPC)
		return " (husk needs CAP_SYS_ADMIN or unprivileged user namespaces: see "
		       "kernel.unprivileged_userns_clone, user.max_user_namespaces and "
		       "kernel.apparmor_restrict_unprivileged_userns)";
	return "";
}
