/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sethostname(2) and setdomainname(2): uname and /proc/sys/kernel/{hostname,domainname} see the
 * new names; EINVAL past 64 bytes, EFAULT, EPERM without CAP_SYS_ADMIN.
 *
 * Natively the calls run in a child in a new UTS namespace, so the host's name never changes. In
 * husk (uname's version says so) unshare is EPERM and the sandbox is the child's UTS namespace
 * already; an unshare failure elsewhere (a confined native run) skips the checks.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "check.h"
#include "child.h"

static int read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	return (int)n;
}

static int child(void)
{
	char name[80], buf[80];
	struct utsname u;

	memset(name, 'h', 64);
	name[64] = 0;
	CHECK_ERR(sethostname(name, 65), EINVAL);
	CHECK_ERR(syscall(SYS_sethostname, name, -1), EINVAL);
	CHECK_ERR(syscall(SYS_sethostname, (void *)8, 10), EFAULT);
	CHECK_RET(sethostname(name, 64), 0);
	CHECK_RET(uname(&u), 0);
	CHECK(!strcmp(u.nodename, name), "nodename after a 64-byte name: %s", u.nodename);
	/* The name is the bytes given, not NUL-terminated ones. */
	CHECK_RET(sethostname("box-1XYZ", 5), 0);
	CHECK_RET(uname(&u), 0);
	CHECK(!strcmp(u.nodename, "box-1"), "nodename: %s", u.nodename);
	CHECK(read_file("/proc/sys/kernel/hostname", buf, sizeof(buf)) > 0 &&
		      !strcmp(buf, "box-1\n"),
	      "/proc/sys/kernel/hostname: %s", buf);
	CHECK_RET(setdomainname("example.test", 12), 0);
	CHECK_RET(uname(&u), 0);
	CHECK(!strcmp(u.domainname, "example.test"), "domainname: %s", u.domainname);
	CHECK(read_file("/proc/sys/kernel/domainname", buf, sizeof(buf)) > 0 &&
		      !strcmp(buf, "example.test\n"),
	      "/proc/sys/kernel/domainname: %s", buf);
	CHECK_RET(sethostname("", 0), 0);
	CHECK_RET(uname(&u), 0);
	CHECK(u.nodename[0] == 0, "empty nodename: %s", u.nodename);

	/* Without CAP_SYS_ADMIN: EPERM, before the length is looked at. */
	{
		struct {
			unsigned int version;
			int pid;
		} hdr = { 0x20080522, 0 };
		struct {
			unsigned int effective, permitted, inheritable;
		} data[2] = { { 0 } };

		CHECK_RET(syscall(SYS_capset, &hdr, data), 0);
		CHECK_ERR(sethostname("x", 1), EPERM);
		CHECK_ERR(sethostname(name, 65), EPERM);
		CHECK_ERR(setdomainname("x", 1), EPERM);
	}
	return checks_failed ? 1 : 0;
}

int main(void)
{
	int st;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		/* husk refuses new namespaces (EPERM): its sandbox is a UTS namespace already. */
		if (unshare(CLONE_NEWUTS) < 0 && !in_husk()) {
			printf("SKIP: unshare(CLONE_NEWUTS): %s\n", strerror(errno));
			_exit(77);
		}
		_exit(child());
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid, "fork/wait");
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
		return finish();
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child's checks failed (status %#x)", st);
	return finish();
}
