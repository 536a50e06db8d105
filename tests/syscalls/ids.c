/* SPDX-License-Identifier: Apache-2.0 */
/* Conformance: credentials and process ids of a single-threaded process. */
#include <stdint.h>
#include <sys/types.h>

#include "check.h"

int main(void)
{
	long uid = syscall(SYS_getuid), euid = syscall(SYS_geteuid);
	long gid = syscall(SYS_getgid), egid = syscall(SYS_getegid);
	uint32_t r = 7, e = 7, s = 7;
	uint32_t groups[1024];
	long n;

	/* Nothing here is setuid: real, effective and saved ids agree. */
	CHECK(uid >= 0, "getuid %ld", uid);
	CHECK(gid >= 0, "getgid %ld", gid);
	CHECK(uid == euid, "uid %ld euid %ld", uid, euid);
	CHECK(gid == egid, "gid %ld egid %ld", gid, egid);
	CHECK_RET(syscall(SYS_getresuid, &r, &e, &s), 0);
	CHECK(r == uid && e == euid && s == uid, "getresuid %u %u %u, uid %ld", r, e, s, uid);
	r = e = s = 7;
	CHECK_RET(syscall(SYS_getresgid, &r, &e, &s), 0);
	CHECK(r == gid && e == egid && s == gid, "getresgid %u %u %u, gid %ld", r, e, s, gid);
	CHECK_ERR(syscall(SYS_getresuid, (void *)1, &e, &s), EFAULT);
	CHECK_ERR(syscall(SYS_getresgid, &r, &e, (void *)1), EFAULT);

	/* getgroups: size 0 counts, a big enough buffer gets them all, a short one is EINVAL. */
	n = CHECK_OK(syscall(SYS_getgroups, 0, NULL));
	CHECK(n >= 0 && n <= 1024, "getgroups(0) %ld", n);
	CHECK_RET(syscall(SYS_getgroups, 1024, groups), n);
	CHECK_ERR(syscall(SYS_getgroups, -1, groups), EINVAL);
	if (n > 0) {
		CHECK_ERR(syscall(SYS_getgroups, n - 1, groups), EINVAL);
		CHECK_ERR(syscall(SYS_getgroups, n, (void *)1), EFAULT);
	}

	/* Single-threaded: the thread id is the process id. */
	CHECK(syscall(SYS_gettid) == syscall(SYS_getpid), "gettid != getpid");
	CHECK(syscall(SYS_getpid) > 0, "getpid");
	CHECK(syscall(SYS_getppid) >= 0, "getppid");
	return finish();
}
