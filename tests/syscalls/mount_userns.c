/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Mounts inside user namespaces (man 7 user_namespaces, "restrictions on mount"; man 7
 * mount_namespaces): uid 65534 makes a user and a mount namespace together and mounts there
 * (tmpfs, binds, devpts, mqueue with an IPC namespace of its own; not ext4: EPERM); the mounts
 * copied from the more privileged namespace are locked (not unmounted or moved alone: EINVAL;
 * their flags not cleared by a remount: EPERM; a bind alone of a mount with locked submounts:
 * EINVAL) while those made inside are not; shared mounts copied in become slaves, so mounts
 * propagate to them from outside and not back; peers and slaves made inside propagate as
 * Linux's. Natively everything runs below a private tmpfs in a namespace of the program's own.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "mountns.h"
#include "scratch.h"

#define NOBODY 65534

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

static int touch(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY, 0644);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static bool mounted(const char *path)
{
	char line[1024];

	return mountinfo_line(path, line, sizeof(line));
}

/* Becomes uid and gid 65534 with no groups. */
static bool become_nobody(void)
{
	if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
	    setresuid(NOBODY, NOBODY, NOBODY) < 0) {
		CHECK(0, "setresuid: %s", strerror(errno));
		return false;
	}
	/* The id change made the process undumpable: its /proc files root's. */
	return prctl(PR_SET_DUMPABLE, 1) == 0;
}

/* unshare(CLONE_NEWUSER | more), then root inside mapped to 65534 outside. */
static bool enter_userns(int more)
{
	if (unshare(CLONE_NEWUSER | more) < 0) {
		CHECK(0, "unshare: %s", strerror(errno));
		return false;
	}
	CHECK_RET(write_file("/proc/self/uid_map", "0 65534 1"), 0);
	CHECK_RET(write_file("/proc/self/setgroups", "deny"), 0);
	CHECK_RET(write_file("/proc/self/gid_map", "0 65534 1"), 0);
	return getuid() == 0;
}

/* Who may make and use mount namespaces. */
static void permissions(void)
{
	if (!become_nobody())
		return;
	/* Without a user namespace of its own: no CAP_SYS_ADMIN anywhere. */
	CHECK_ERR(unshare(CLONE_NEWNS), EPERM);
	CHECK_ERR(mount("x", at("a"), "tmpfs", 0, NULL), EPERM);
	/* A user namespace alone: the mount namespace is still the parent's. */
	if (!enter_userns(0))
		return;
	CHECK_ERR(mount("x", at("a"), "tmpfs", 0, NULL), EPERM);
	CHECK_ERR(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), EPERM);
	CHECK_ERR(umount2(at("under"), MNT_DETACH), EPERM);
	/* Now a mount namespace of this user namespace's. */
	CHECK_RET(unshare(CLONE_NEWNS), 0);
	CHECK_RET(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	CHECK_RET(mount("x", at("a"), "tmpfs", 0, NULL), 0);
	CHECK_RET(umount2(at("a"), 0), 0);
}

/* What may be mounted, and what the mounts made inside are. */
static void filesystems(void)
{
	struct stat st;
	char line[1024];

	if (!become_nobody() || !enter_userns(CLONE_NEWNS))
		return;
	CHECK_RET(mkdir(at("a"), 0755), 0);
	CHECK_RET(mount("x", at("a"), "tmpfs", 0, NULL), 0);
	CHECK_RET(touch(at("a/f")), 0);
	/* The root of the tmpfs is the mounter's: root inside. */
	CHECK_RET(stat(at("a"), &st), 0);
	CHECK(st.st_uid == 0 && st.st_gid == 0, "owner %d:%d", (int)st.st_uid, (int)st.st_gid);
	CHECK(mountinfo_line(at("a"), line, sizeof(line)) &&
		      strstr(line, " - tmpfs x rw,uid=65534,gid=65534\n"),
	      "line %s", line);
	/* Ids of options are the caller's: an unmapped one is EINVAL. */
	CHECK_RET(mkdir(at("b"), 0755), 0);
	CHECK_ERR(mount("x", at("b"), "tmpfs", 0, "uid=5"), EINVAL);
	/* Binds of what the caller sees. */
	CHECK_RET(mount(at("a"), at("b"), NULL, MS_BIND, NULL), 0);
	CHECK_RET(access(at("b/f"), F_OK), 0);
	/* A remount of a filesystem made here, flags set and cleared. */
	CHECK_RET(mount(NULL, at("a"), NULL, MS_REMOUNT | MS_RDONLY | MS_NOEXEC, NULL), 0);
	CHECK_ERR(touch(at("a/g")), EROFS);
	CHECK_RET(mount(NULL, at("a"), NULL, MS_REMOUNT, NULL), 0);
	CHECK_RET(touch(at("a/g")), 0);
	CHECK_RET(umount2(at("b"), 0), 0);
	CHECK_RET(umount2(at("a"), 0), 0);
	/* Not a filesystem of user namespaces. */
	CHECK_ERR(mount("none", at("a"), "ext4", 0, NULL), EPERM);
	CHECK_ERR(mount("none", at("a"), "nosuchfs", 0, NULL), ENODEV);
	/* devpts: its own instance. */
	CHECK_RET(mkdir(at("pts"), 0755), 0);
	CHECK_RET(mount("devpts", at("pts"), "devpts", 0, "newinstance,ptmxmode=0666"), 0);
	CHECK_RET(access(at("pts/ptmx"), F_OK), 0);
	CHECK_RET(umount2(at("pts"), 0), 0);
	/* mqueue belongs to the IPC namespace's owner: not this one's yet. */
	CHECK_RET(mkdir(at("mq"), 0755), 0);
	CHECK_ERR(mount("mqueue", at("mq"), "mqueue", 0, NULL), EPERM);
	CHECK_RET(unshare(CLONE_NEWIPC), 0);
	CHECK_RET(mount("mqueue", at("mq"), "mqueue", 0, NULL), 0);
	CHECK_RET(umount2(at("mq"), 0), 0);
}

/* The mounts copied in are locked; those made here are not. */
static void locked(void)
{
	char line[1024];

	if (!become_nobody() || !enter_userns(CLONE_NEWNS))
		return;
	/* Not unmounted alone, even lazily: what is under it stays hidden. */
	CHECK_ERR(umount2(at("under"), 0), EINVAL);
	CHECK_ERR(umount2(at("under"), MNT_DETACH), EINVAL);
	CHECK_ERR(access(at("under/secret"), F_OK), ENOENT);
	CHECK_RET(access(at("under/cover"), F_OK), 0);
	/* Nor moved. */
	CHECK_RET(mkdir(at("d"), 0755), 0);
	CHECK_ERR(mount(at("under"), at("d"), NULL, MS_MOVE, NULL), EINVAL);
	/* Its flags stay: ro and nosuid may not be cleared, nor the atime changed. */
	CHECK_ERR(mount(NULL, at("ro"), NULL, MS_REMOUNT | MS_BIND, NULL), EPERM);
	CHECK_ERR(mount(NULL, at("ro"), NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL), EPERM);
	CHECK_ERR(mount(NULL, at("ro"), NULL,
			MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOATIME, NULL),
		  EPERM);
	/* Adding one is fine, and what was added here may go again. */
	CHECK_RET(mount(NULL, at("ro"), NULL,
			MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC, NULL),
		  0);
	CHECK(mountinfo_line(at("ro"), line, sizeof(line)) && strstr(line, " ro,nosuid,noexec,"),
	      "line %s", line);
	CHECK_RET(mount(NULL, at("ro"), NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID, NULL),
		  0);
	/* The filesystem itself belongs to the sandbox's user namespace: no reconfiguring. */
	CHECK_ERR(mount(NULL, at("ro"), NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID, NULL), EPERM);
	/* A bind alone of a mount with locked submounts would show what they cover. */
	CHECK_RET(mkdir(at("c"), 0755), 0);
	CHECK_ERR(mount(T, at("c"), NULL, MS_BIND, NULL), EINVAL);
	/* A recursive one keeps them, locked; its top is not. */
	CHECK_RET(mount(T, at("c"), NULL, MS_BIND | MS_REC, NULL), 0);
	CHECK_RET(access(at("c/under/cover"), F_OK), 0);
	CHECK_ERR(umount2(at("c/under"), MNT_DETACH), EINVAL);
	CHECK_RET(umount2(at("c"), MNT_DETACH), 0);
	/* A mount made here on top of a locked one may go. */
	CHECK_RET(mount("x", at("under"), "tmpfs", 0, NULL), 0);
	CHECK_ERR(access(at("under/cover"), F_OK), ENOENT);
	CHECK_RET(umount2(at("under"), 0), 0);
	CHECK_RET(access(at("under/cover"), F_OK), 0);
	/* A further namespace of the same user namespace locks nothing more. */
	CHECK_RET(mount("x", at("d"), "tmpfs", 0, NULL), 0);
	CHECK_RET(mount(NULL, at("d"), NULL, MS_UNBINDABLE, NULL), 0);
	CHECK_RET(unshare(CLONE_NEWNS), 0);
	/* A namespace copy takes unbindable mounts too (private copies). */
	CHECK(mountinfo_line(at("d"), line, sizeof(line)) && !strstr(line, " unbindable "),
	      "line %s", line);
	CHECK_RET(umount2(at("d"), 0), 0);
	CHECK_ERR(umount2(at("under"), MNT_DETACH), EINVAL);
}

/* clone(CLONE_NEWUSER | CLONE_NEWNS): the child owns its mount namespace, maps or not (a
 * file it makes without: EOVERFLOW). */
static void clone_child(void)
{
	long pid;
	int st;

	if (!become_nobody())
		return;
	fflush(stdout);
	pid = syscall(SYS_clone, CLONE_NEWUSER | CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0);
	if (pid == 0) {
		int bad = 0;

		bad |= mount("x", at("a"), "tmpfs", 0, NULL) != 0;
		/* No uid_map yet: the creator's ids have none in the tmpfs's namespace. */
		bad |= (touch(at("a/f")) != -1 || errno != EOVERFLOW) << 1;
		bad |= (umount2(at("under"), MNT_DETACH) != -1 || errno != EINVAL) << 2;
		bad |= (umount2(at("a"), 0) != 0) << 3;
		_exit(bad);
	}
	CHECK(pid > 0, "clone: %s", strerror(errno));
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "clone child status %#x", st);
}

/* runc's pivot_root(".", ".") and a lazy umount of the old root, in a user namespace. */
static void pivot(void)
{
	struct stat before, after;

	if (!become_nobody() || !enter_userns(CLONE_NEWNS))
		return;
	CHECK_RET(mkdir(at("nr"), 0755), 0);
	CHECK_RET(mount("nr", at("nr"), "tmpfs", 0, NULL), 0);
	CHECK_RET(touch(at("nr/inside")), 0);
	CHECK_RET(stat(at("nr"), &before), 0);
	CHECK_RET(chdir(at("nr")), 0);
	CHECK_RET(syscall(SYS_pivot_root, ".", "."), 0);
	CHECK_RET(umount2(".", MNT_DETACH), 0);
	CHECK_RET(chdir("/"), 0);
	CHECK_RET(stat("/", &after), 0);
	CHECK(before.st_dev == after.st_dev && before.st_ino == after.st_ino,
	      "/ is not the new root");
	CHECK_RET(access("/inside", F_OK), 0);
	CHECK_ERR(access("/proc/self", F_OK), ENOENT);
}

/*
 * Propagation: sh (shared outside) is copied in as a slave: a mount outside under it shows
 * inside, one inside does not show outside. Inside, peers and a slave made there.
 */
static void propagation(void)
{
	int to_child[2], to_parent[2], st;
	char line[1024];
	pid_t pid;

	CHECK_RET(mkdir(at("sh/out"), 0755), 0);
	CHECK_RET(mkdir(at("sh/in"), 0755), 0);
	if (pipe(to_child) < 0 || pipe(to_parent) < 0)
		return;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		checks_passed = checks_failed = 0;
		close(to_child[1]);
		close(to_parent[0]);
		if (!become_nobody() || !enter_userns(CLONE_NEWNS))
			_exit(1);
		CHECK(mountinfo_line(at("sh"), line, sizeof(line)) && strstr(line, " master:") &&
			      !strstr(line, " shared:"),
		      "not a slave: %s", line);
		mountns_step(to_child[0], to_parent[1]); /* the parent mounts on sh/out */
		CHECK(mounted(at("sh/out")), "the master's mount did not propagate");
		CHECK_RET(access(at("sh/out/from-parent"), F_OK), 0);
		CHECK_RET(mount("in", at("sh/in"), "tmpfs", 0, NULL), 0);
		/* Peers made here: a mount under one shows under the other. */
		CHECK_RET(mkdir(at("p1"), 0755), 0);
		CHECK_RET(mkdir(at("p2"), 0755), 0);
		CHECK_RET(mkdir(at("p3"), 0755), 0);
		CHECK_RET(mount("p", at("p1"), "tmpfs", 0, NULL), 0);
		CHECK_RET(mkdir(at("p1/x"), 0755), 0);
		CHECK_RET(mkdir(at("p1/y"), 0755), 0);
		CHECK_RET(mount(NULL, at("p1"), NULL, MS_SHARED, NULL), 0);
		CHECK_RET(mount(at("p1"), at("p2"), NULL, MS_BIND, NULL), 0);
		CHECK_RET(mount(at("p1"), at("p3"), NULL, MS_BIND, NULL), 0);
		CHECK_RET(mount(NULL, at("p3"), NULL, MS_SLAVE, NULL), 0);
		CHECK_RET(mount("x", at("p1/x"), "tmpfs", 0, NULL), 0);
		CHECK_RET(touch(at("p1/x/f")), 0);
		CHECK_RET(access(at("p2/x/f"), F_OK), 0);
		CHECK_RET(access(at("p3/x/f"), F_OK), 0);
		/* Under a shared mount a new mount is shared itself. */
		CHECK(mountinfo_line(at("p2/x"), line, sizeof(line)) && strstr(line, " shared:"),
		      "line %s", line);
		/* A mount moved under a shared one propagates too. */
		CHECK_RET(mkdir(at("p1/w"), 0755), 0);
		CHECK_RET(mkdir(at("mv"), 0755), 0);
		CHECK_RET(mount("mv", at("mv"), "tmpfs", 0, NULL), 0);
		CHECK_RET(touch(at("mv/f")), 0);
		CHECK_RET(mount(at("mv"), at("p1/w"), NULL, MS_MOVE, NULL), 0);
		CHECK_RET(access(at("p2/w/f"), F_OK), 0);
		CHECK_RET(access(at("p3/w/f"), F_OK), 0);
		/* From the slave nothing goes back. */
		CHECK_RET(mount("y", at("p3/y"), "tmpfs", 0, NULL), 0);
		CHECK_RET(touch(at("p3/y/f")), 0);
		CHECK_ERR(access(at("p1/y/f"), F_OK), ENOENT);
		CHECK(!mounted(at("p2/y")), "a slave's mount reached its master");
		/* A copy in use makes the umount busy (not lazily). */
		CHECK_RET(mkdir(at("p1/z"), 0755), 0);
		CHECK_RET(mount("z", at("p1/z"), "tmpfs", 0, NULL), 0);
		CHECK_RET(chdir(at("p3/z")), 0);
		CHECK_ERR(umount2(at("p1/z"), 0), EBUSY);
		CHECK_RET(chdir("/"), 0);
		CHECK_RET(umount2(at("p1/z"), 0), 0);
		CHECK(!mounted(at("p2/z")) && !mounted(at("p3/z")), "umount did not propagate");
		/* umount propagates to the peers and the slave. */
		CHECK_RET(umount2(at("p2/x"), 0), 0);
		CHECK(!mounted(at("p1/x")) && !mounted(at("p3/x")), "umount did not propagate");
		/* A slave made shared is both. */
		CHECK_RET(mount(NULL, at("sh"), NULL, MS_SHARED, NULL), 0);
		CHECK(mountinfo_line(at("sh"), line, sizeof(line)) && strstr(line, " shared:") &&
			      strstr(line, " master:"),
		      "not shared and slave: %s", line);
		mountns_step(to_child[0], to_parent[1]); /* the parent looks */
		fflush(stdout);
		_exit(checks_failed ? 1 : 0);
	}
	CHECK(pid > 0, "fork: %s", strerror(errno));
	close(to_child[0]);
	close(to_parent[1]);
	if (pid <= 0)
		return;
	mountns_step(to_parent[0], -1);
	CHECK_RET(mount("out", at("sh/out"), "tmpfs", 0, NULL), 0);
	CHECK_RET(touch(at("sh/out/from-parent")), 0);
	mountns_step(to_parent[0], to_child[1]);
	CHECK(!mounted(at("sh/in")), "the slave's mount reached the master");
	mountns_step(-1, to_child[1]);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "child status %d", st);
	CHECK_RET(umount2(at("sh/out"), 0), 0);
	close(to_child[1]);
	close(to_parent[0]);
}

static void body(void)
{
	if (!mountns_enter(T, sizeof(T)))
		return;
	/* The tree the user namespaces copy: mounts to lock, a secret under one, a shared one. */
	CHECK_RET(chmod(T, 01777), 0);
	CHECK_RET(mkdir(at("under"), 0755), 0);
	CHECK_RET(touch(at("under/secret")), 0);
	CHECK_RET(mount("cover", at("under"), "tmpfs", 0, NULL), 0);
	CHECK_RET(touch(at("under/cover")), 0);
	CHECK_RET(mkdir(at("ro"), 0755), 0);
	CHECK_RET(mount("ro", at("ro"), "tmpfs", MS_RDONLY | MS_NOSUID, NULL), 0);
	CHECK_RET(mkdir(at("sh"), 0777), 0);
	CHECK_RET(mount("sh", at("sh"), "tmpfs", 0, "mode=1777"), 0);
	CHECK_RET(mount(NULL, at("sh"), NULL, MS_SHARED, NULL), 0);
	CHECK_RET(mkdir(at("a"), 0777), 0);
	mountns_child(permissions, "permissions");
	CHECK_RET(rmdir(at("a")), 0);
	mountns_child(filesystems, "filesystems");
	mountns_child(locked, "locked mounts");
	mountns_child(clone_child, "clone");
	mountns_child(pivot, "pivot_root");
	propagation();
	CHECK(!mounted(at("a")) && !mounted(at("d")), "a child's mount shows here");
	CHECK_RET(umount2(at("sh"), 0), 0);
	CHECK_RET(umount2(at("ro"), 0), 0);
	CHECK_RET(umount2(at("under"), 0), 0);
	CHECK_RET(umount2(T, MNT_DETACH), 0);
}

int main(void)
{
	return mountns_main("mount_userns", body);
}
