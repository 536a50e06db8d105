/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Mount namespaces and pivot_root(2): unshare(CLONE_NEWNS) and clone(CLONE_NEWNS) copy the
 * tree (new mount ids, the same filesystems), mounts and umounts on either side stay there,
 * /proc/PID/mountinfo shows PID's namespace, the cwd moves onto the copy; CLONE_NEWNS with
 * CLONE_FS is EINVAL. pivot_root's errors and the pivot_root(".", ".") + umount2(".",
 * MNT_DETACH) idiom of runc and systemd, which moves other processes' roots and cwds at the old
 * root too. setns(CLONE_NEWNS) through /proc/PID/ns/mnt and a
 * pidfd (root and cwd at the namespace's top; EINVAL with a thread sharing the fs context or a
 * wrong nstype, EPERM without capabilities), as nsenter -m and runc exec use it. Natively everything runs below a private tmpfs in a
 * namespace of the program's own, so nothing reaches the host's mount table.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "mountns.h"
#include "scratch.h"

/* The mount id of path's line in file (a mountinfo), or -1. */
static long mount_id_in(const char *file, const char *path)
{
	FILE *f = fopen(file, "r");
	char line[1024], mp[512];
	long id = -1, v;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%ld %*s %*s %*s %511s", &v, mp) == 2 && !strcmp(mp, path))
			id = v;
	fclose(f);
	return id;
}

static long mount_id(const char *path)
{
	return mount_id_in("/proc/self/mountinfo", path);
}

static int touch(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY, 0644);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static void unshare_isolation(void)
{
	int to_child[2], to_parent[2], st;
	long parent_t = mount_id(T);
	char path[64];
	pid_t pid;

	CHECK(parent_t > 0, "no mount at %s", T);
	CHECK_RET(mkdir(at("a"), 0755), 0);
	CHECK_RET(mkdir(at("b"), 0755), 0);
	CHECK_RET(mkdir(at("sub"), 0755), 0);
	CHECK_RET(touch(at("shared-file")), 0);
	if (pipe(to_child) < 0 || pipe(to_parent) < 0)
		return;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct stat s1, s2;

		checks_passed = checks_failed = 0;
		CHECK_RET(chdir(T), 0);
		CHECK_RET(stat(T, &s1), 0);
		CHECK_RET(unshare(CLONE_NEWNS), 0);
		/* The copy: a new mount id, the same filesystem. */
		CHECK(mount_id(T) > 0 && mount_id(T) != parent_t, "mount id %ld (parent's %ld)",
		      mount_id(T), parent_t);
		CHECK_RET(stat(T, &s2), 0);
		CHECK(s1.st_dev == s2.st_dev && s1.st_ino == s2.st_ino, "not the same filesystem");
		CHECK_RET(mount("child", at("a"), "tmpfs", 0, NULL), 0);
		CHECK_RET(touch(at("a/mine")), 0);
		/* The cwd moved onto the copy: a mount made here shows through it. */
		CHECK_RET(mount("sub", at("sub"), "tmpfs", 0, NULL), 0);
		CHECK_RET(touch("sub/via-cwd"), 0);
		CHECK_RET(access(at("sub/via-cwd"), F_OK), 0);
		mountns_step(to_child[0], to_parent[1]); /* the parent looks, and mounts on b */
		CHECK_ERR(access(at("b/theirs"), F_OK), ENOENT);
		CHECK(mount_id(at("b")) < 0, "the parent's mount shows here");
		/* An umount here leaves the parent's tree alone. */
		CHECK_RET(umount2(at("a"), 0), 0);
		CHECK_RET(chdir("/"), 0);
		CHECK_RET(umount2(T, MNT_DETACH), 0);
		CHECK_ERR(access(at("shared-file"), F_OK), ENOENT);
		mountns_step(to_child[0], to_parent[1]);
		fflush(stdout);
		_exit(checks_failed ? 1 : 0);
	}
	CHECK(pid > 0, "fork: %s", strerror(errno));
	if (pid <= 0)
		return;
	mountns_step(to_parent[0], -1);
	CHECK_ERR(access(at("a/mine"), F_OK), ENOENT);
	CHECK(mount_id(at("a")) < 0, "the child's mount shows here");
	CHECK_ERR(access(at("sub/via-cwd"), F_OK), ENOENT);
	snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)pid);
	CHECK(mount_id_in(path, at("a")) > 0, "%s does not show the child's mount", path);
	CHECK(mount_id_in(path, T) != parent_t, "%s shows our mount ids", path);
	CHECK_RET(mount("parent", at("b"), "tmpfs", 0, NULL), 0);
	CHECK_RET(touch(at("b/theirs")), 0);
	mountns_step(-1, to_child[1]);
	mountns_step(to_parent[0], -1);
	CHECK_RET(access(at("shared-file"), F_OK), 0);
	CHECK(mount_id(T) == parent_t, "our mount went");
	mountns_step(-1, to_child[1]);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "child status %d", st);
	CHECK_RET(umount2(at("b"), 0), 0);
	close(to_child[0]);
	close(to_child[1]);
	close(to_parent[0]);
	close(to_parent[1]);
}

static void clone_newns(void)
{
	long pid;
	int st;

	CHECK_ERR(syscall(SYS_clone, CLONE_NEWNS | CLONE_FS | SIGCHLD, 0, 0, 0, 0), EINVAL);
	fflush(stdout);
	pid = syscall(SYS_clone, CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0);
	if (pid == 0) {
		int bad = 0;

		bad |= mount("cl", at("a"), "tmpfs", 0, NULL) != 0;
		bad |= touch(at("a/cloned")) != 0;
		bad |= access(at("a/cloned"), F_OK) != 0;
		_exit(bad);
	}
	CHECK(pid > 0, "clone: %s", strerror(errno));
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "clone child failed");
	CHECK_ERR(access(at("a/cloned"), F_OK), ENOENT);
	CHECK(mount_id(at("a")) < 0, "the clone's mount shows here");
}

static void pivot(void)
{
	pid_t pid;
	int st;

	CHECK_RET(mkdir(at("nr"), 0755), 0);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct stat before, after;
		int go[2], ost = 0;
		pid_t other;

		checks_passed = checks_failed = 0;
		CHECK_RET(unshare(CLONE_NEWNS), 0);
		/* Errors first: not directories, not a mount, put_old outside new_root, busy. */
		CHECK_RET(touch(at("nr-file")), 0);
		CHECK_ERR(syscall(SYS_pivot_root, at("nr-file"), at("nr")), ENOTDIR);
		CHECK_ERR(syscall(SYS_pivot_root, at("nr"), at("missing")), ENOENT);
		CHECK_ERR(syscall(SYS_pivot_root, at("nr"), at("nr")), EINVAL);
		CHECK_RET(mount("newroot", at("nr"), "tmpfs", 0, NULL), 0);
		CHECK_RET(mkdir(at("nr/old"), 0755), 0);
		CHECK_RET(touch(at("nr/inside")), 0);
		CHECK_ERR(syscall(SYS_pivot_root, at("nr"), at("a")), EINVAL);
		CHECK_ERR(syscall(SYS_pivot_root, "/", "/"), EBUSY);
		CHECK_RET(stat(at("nr"), &before), 0);
		/*
		 * Another process of the namespace, root and cwd at the old root: pivot_root
		 * moves both to the new root (Linux's chroot_fs_refs).
		 */
		CHECK_RET(pipe(go), 0);
		fflush(stdout);
		other = fork();
		if (other == 0) {
			char cwd[64] = "";

			if (chdir("/") < 0)
				_exit(2);
			mountns_step(go[0], -1);
			if (access("/inside", F_OK) < 0 || !getcwd(cwd, sizeof(cwd)) ||
			    strcmp(cwd, "/") || access("inside", F_OK) < 0)
				_exit(4);
			_exit(0);
		}
		/* runc's idiom: pivot_root(".", "."), then the old root lazily away. */
		CHECK_RET(chdir(at("nr")), 0);
		CHECK_RET(syscall(SYS_pivot_root, ".", "."), 0);
		CHECK_RET(umount2(".", MNT_DETACH), 0);
		CHECK_RET(write(go[1], "x", 1), 1);
		CHECK(other > 0 && waitpid(other, &ost, 0) == other && WIFEXITED(ost) &&
			      WEXITSTATUS(ost) == 0,
		      "the other process did not move to the new root (status %d)", ost);
		CHECK_RET(chdir("/"), 0);
		CHECK_RET(stat("/", &after), 0);
		CHECK(before.st_dev == after.st_dev && before.st_ino == after.st_ino,
		      "/ is not the new root");
		CHECK_RET(access("/inside", F_OK), 0);
		CHECK_RET(access("/old", F_OK), 0);
		CHECK_RET(stat("/..", &after), 0);
		CHECK(before.st_ino == after.st_ino, "/.. left the new root");
		CHECK_ERR(access("/proc/self", F_OK), ENOENT);
		CHECK_ERR(access("/etc/passwd", F_OK), ENOENT);
		/* A second pivot with put_old as a directory below: the old root goes there. */
		CHECK_RET(mkdir("/nr2", 0755), 0);
		CHECK_RET(mount("nr2", "/nr2", "tmpfs", 0, NULL), 0);
		CHECK_RET(mkdir("/nr2/put", 0755), 0);
		CHECK_RET(syscall(SYS_pivot_root, "/nr2", "/nr2/put"), 0);
		CHECK_RET(access("/put/inside", F_OK), 0);
		fflush(stdout);
		_exit(checks_failed ? 1 : 0);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "pivot child failed (status %d)", st);
	/* Nothing changed here. */
	CHECK_RET(access("/etc/passwd", F_OK), 0);
	CHECK(mount_id(at("nr")) < 0, "the child's new root shows here");
}

static void *idle_thread(void *arg)
{
	int fd = *(int *)arg;
	char c;

	return read(fd, &c, 1) < 0 ? NULL : arg;
}

/* Child side of setns: joins the namespace of fd, checks what it sees there. */
static void setns_child(int fd, int home)
{
	char cwd[256];
	struct stat a, b;

	CHECK_ERR(setns(fd, CLONE_NEWNET), EINVAL);
	CHECK_RET(setns(fd, CLONE_NEWNS), 0);
	CHECK_RET(access(at("sn/f"), F_OK), 0);
	/* Root and cwd are the namespace's top: / (the sandbox's root in husk). */
	CHECK(getcwd(cwd, sizeof(cwd)) && !strcmp(cwd, "/"), "cwd after setns: %s", cwd);
	CHECK(stat("/proc/self/ns/mnt", &a) == 0 && fstat(fd, &b) == 0 && a.st_ino == b.st_ino,
	      "/proc/self/ns/mnt is not the joined namespace");
	/* Back home through an fd opened before: the namespace's mount is not there. */
	CHECK_RET(setns(home, 0), 0);
	CHECK_ERR(access(at("sn/f"), F_OK), ENOENT);
}

static void setns_mnt(void)
{
	int go[2], ready[2], fd, home, pfd, st;
	pthread_t th;
	pid_t a, c;
	char path[64], x;

	CHECK_RET(mkdir(at("sn"), 0755), 0);
	CHECK_RET(pipe(go), 0);
	CHECK_RET(pipe(ready), 0);
	fflush(stdout);
	a = fork();
	if (a == 0) {
		/* The namespace to join: a tmpfs with a file that only it has. */
		if (unshare(CLONE_NEWNS) < 0 || mount("sn", at("sn"), "tmpfs", 0, NULL) < 0 ||
		    touch(at("sn/f")) < 0)
			_exit(2);
		mountns_step(go[0], ready[1]);
		_exit(0);
	}
	CHECK_RET(read(ready[0], &x, 1), 1);
	CHECK_ERR(access(at("sn/f"), F_OK), ENOENT);
	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", a);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	home = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0 && home >= 0, "open ns files: %s", strerror(errno));

	/* A thread sharing the fs context: EINVAL, as Linux (fs->users != 1). */
	CHECK_RET(pthread_create(&th, NULL, idle_thread, &go[0]), 0);
	CHECK_ERR(setns(fd, CLONE_NEWNS), EINVAL);

	fflush(stdout);
	c = fork();
	if (c == 0) {
		checks_passed = checks_failed = 0;
		setns_child(fd, home);
		fflush(stdout);
		_exit(checks_failed ? 1 : 0);
	}
	CHECK(c > 0 && waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "setns child failed");

	/* Through a pidfd, as runc exec joins a container's namespaces. */
	pfd = (int)syscall(SYS_pidfd_open, a, 0);
	CHECK(pfd >= 0, "pidfd_open: %s", strerror(errno));
	fflush(stdout);
	c = fork();
	if (c == 0) {
		checks_passed = checks_failed = 0;
		CHECK_RET(setns(pfd, CLONE_NEWNS), 0);
		CHECK_RET(access(at("sn/f"), F_OK), 0);
		fflush(stdout);
		_exit(checks_failed ? 1 : 0);
	}
	CHECK(c > 0 && waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "pidfd setns child failed");

	/* Without CAP_SYS_ADMIN: EPERM. */
	fflush(stdout);
	c = fork();
	if (c == 0) {
		checks_passed = checks_failed = 0;
		if (setresuid(65534, 65534, 65534) < 0)
			_exit(2);
		CHECK_ERR(setns(fd, CLONE_NEWNS), EPERM);
		fflush(stdout);
		_exit(checks_failed ? 1 : 0);
	}
	CHECK(c > 0 && waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "unprivileged setns child failed");

	CHECK_RET(write(go[1], "xx", 2), 2); /* ends the thread and the namespace's holder */
	CHECK_RET(pthread_join(th, NULL), 0);
	CHECK(waitpid(a, &st, 0) == a && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "namespace holder failed (status %d)", st);
	close(fd);
	close(home);
	close(pfd);
	close(go[0]);
	close(go[1]);
	close(ready[0]);
	close(ready[1]);
}

static void body(void)
{
	if (!mountns_enter(T, sizeof(T)))
		return;
	unshare_isolation();
	clone_newns();
	setns_mnt();
	pivot();
	CHECK_RET(umount2(T, 0), 0);
}

int main(void)
{
	return mountns_main("mount_ns", body);
}
