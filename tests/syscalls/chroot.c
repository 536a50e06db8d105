/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chroot(2): its errors (EFAULT, ENOENT, ENOTDIR, EACCES before EPERM for a caller without
 * CAP_SYS_CHROOT), `..` at the new root staying there, /proc/PID/root following it, and a
 * directory fd opened before the chroot still reaching outside (to the root the caller saw
 * before, no further: in husk that is the sandbox's root). Each chroot runs in a child.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "scratch.h"

static struct stat root_before; /* "/" as the program saw it before any chroot */

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Runs fn in a child; its checks count through its exit status (the failures it saw). */
static void in_child(void (*fn)(void))
{
	pid_t pid;
	int st;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		checks_passed = checks_failed = 0;
		fn();
		fflush(stdout);
		_exit(checks_failed > 100 ? 100 : checks_failed);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "child failed (status %d)", pid > 0 ? st : -1);
}

static void errors_as_user(void)
{
	/* uid 1000 has no capability: search permission first (EACCES), then EPERM. */
	if (setresgid(1000, 1000, 1000) < 0 || setresuid(1000, 1000, 1000) < 0) {
		CHECK(0, "setresuid: %s", strerror(errno));
		return;
	}
	CHECK_ERR(syscall(SYS_chroot, "closed"), EACCES);
	CHECK_ERR(syscall(SYS_chroot, "closed/x"), EACCES);
	CHECK_ERR(syscall(SYS_chroot, "root"), EPERM);
	CHECK_ERR(syscall(SYS_chroot, "missing"), ENOENT);
}

static void dotdot_stays(void)
{
	struct stat a, b, f;
	int out = open(".", O_RDONLY | O_DIRECTORY);

	CHECK(out >= 0, "open .: %s", strerror(errno));
	CHECK_RET(syscall(SYS_chroot, "root"), 0);
	/* The cwd is still outside; / is the new root. */
	CHECK_RET(chdir("/"), 0);
	CHECK_RET(stat("/", &a), 0);
	CHECK_RET(stat("/..", &b), 0);
	CHECK(same_file(&a, &b), "/.. is not /");
	CHECK_RET(stat("/sub/../../../f", &f), 0);
	CHECK_RET(access("/f", F_OK), 0);
	for (int i = 0; i < 8; i++)
		CHECK_RET(chdir(".."), 0);
	CHECK_RET(stat(".", &b), 0);
	CHECK(same_file(&a, &b), "chdir .. left the root");
	/* The inside file is there, the outside one is not. */
	CHECK_ERR(access("/outside", F_OK), ENOENT);

	/* An fd opened before reaches outside, as on Linux, up to the root seen before. */
	CHECK_RET(faccessat(out, "outside", F_OK, 0), 0);
	CHECK_RET(fchdir(out), 0);
	for (int i = 0; i < 64; i++)
		CHECK_RET(chdir(".."), 0);
	CHECK_RET(stat(".", &b), 0);
	CHECK(same_file(&root_before, &b), ".. from outside did not end at the old root");
	CHECK_RET(fstatat(out, "../../../../../../../../..", &b, 0), 0);
	CHECK(same_file(&root_before, &b), "openat .. did not end at the old root");
	close(out);
}

static void proc_root(void)
{
	char want[PATH_MAX], got[PATH_MAX], link[64];
	int to_child[2], to_parent[2];
	pid_t pid;
	char c = 0;
	ssize_t n;
	int st;

	snprintf(want, sizeof(want), "%s/root", scratch);
	if (pipe(to_child) < 0 || pipe(to_parent) < 0) {
		CHECK(0, "pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		c = syscall(SYS_chroot, "root") == 0 ? 'y' : 'n';
		if (write(to_parent[1], &c, 1) != 1 || read(to_child[0], &c, 1) != 1)
			_exit(2);
		_exit(0);
	}
	CHECK(pid > 0, "fork: %s", strerror(errno));
	if (pid <= 0)
		return;
	CHECK(read(to_parent[0], &c, 1) == 1 && c == 'y', "the child's chroot failed");
	snprintf(link, sizeof(link), "/proc/%d/root", (int)pid);
	n = readlink(link, got, sizeof(got) - 1);
	CHECK(n > 0, "readlink %s: %s", link, strerror(errno));
	if (n > 0) {
		got[n] = '\0';
		CHECK(!strcmp(got, want), "%s is %s, want %s", link, got, want);
	}
	n = readlink("/proc/self/root", got, sizeof(got) - 1);
	CHECK(n == 1 && got[0] == '/', "/proc/self/root changed in the parent");
	CHECK_RET(write(to_child[1], "x", 1), 1);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "child status %d", st);
	close(to_child[0]);
	close(to_child[1]);
	close(to_parent[0]);
	close(to_parent[1]);
}

int main(void)
{
	int fd;

	CHECK_RET(stat("/", &root_before), 0);
	scratch_make("chroot");
	CHECK_RET(mkdir("root", 0755), 0);
	CHECK_RET(mkdir("root/sub", 0755), 0);
	CHECK_RET(mkdir("closed", 0700), 0);
	CHECK_RET(mkdir("closed/x", 0755), 0);
	fd = open("root/f", O_CREAT | O_WRONLY, 0644);
	CHECK(fd >= 0, "create root/f: %s", strerror(errno));
	close(fd);
	fd = open("outside", O_CREAT | O_WRONLY, 0644);
	CHECK(fd >= 0, "create outside: %s", strerror(errno));
	close(fd);

	CHECK_ERR(syscall(SYS_chroot, (void *)1), EFAULT);
	CHECK_ERR(syscall(SYS_chroot, "missing"), ENOENT);
	CHECK_ERR(syscall(SYS_chroot, "root/f"), ENOTDIR);
	CHECK_ERR(syscall(SYS_chroot, "root/f/x"), ENOTDIR);
	CHECK_ERR(syscall(SYS_chroot, ""), ENOENT);
	in_child(errors_as_user);
	in_child(dotdot_stays);
	proc_root();
	return finish();
}
