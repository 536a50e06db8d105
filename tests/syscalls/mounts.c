/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mount(2) and umount2(2): new tmpfs (size=, mode=, uid=, gid=), proc, sysfs, devpts and mqueue
 * instances, binds (of a subdirectory, recursive or not), remounts (ro, nosuid, noexec
 * enforced), propagation types in mountinfo's optional fields, MS_MOVE, umount2's EBUSY and
 * MNT_DETACH and UMOUNT_NOFOLLOW, and the errors (EPERM, EFAULT, ENODEV, EINVAL, ENOENT,
 * ENOTDIR, ELOOP). Everything runs in a child in a mount namespace of its own, with / made
 * private, so that nothing reaches the host's mount table natively; all mounts are under a
 * tmpfs on the scratch directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "mountns.h"
#include "scratch.h"

/* The 4th field (root) of path's mountinfo line. */
static bool mount_root_field(const char *path, char *root, size_t len)
{
	char line[1024], r[512];

	if (!mountinfo_line(path, line, sizeof(line)) || sscanf(line, "%*s %*s %*s %511s", r) != 1)
		return false;
	if (strlen(r) >= len)
		return false;
	memcpy(root, r, strlen(r) + 1);
	return true;
}

static bool is_mountpoint(const char *path)
{
	char line[1024];

	return mountinfo_line(path, line, sizeof(line));
}

static int touch(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY, 0755);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static void errors(void)
{
	CHECK_RET(mkdir(at("e"), 0755), 0);
	CHECK_RET(touch(at("file")), 0);
	CHECK_ERR(mount("x", at("e"), "nosuchfs", 0, NULL), ENODEV);
	CHECK_ERR(mount("x", at("missing"), "tmpfs", 0, NULL), ENOENT);
	CHECK_ERR(mount("x", at("file"), "tmpfs", 0, NULL), ENOTDIR);
	CHECK_ERR(mount("x", at("e"), NULL, 0, NULL), EINVAL);
	CHECK_ERR(mount("x", at("e"), (char *)1, 0, NULL), EFAULT);
	CHECK_ERR(mount("x", (char *)1, "tmpfs", 0, NULL), EFAULT);
	CHECK_ERR(mount((char *)1, at("e"), "tmpfs", 0, NULL), EFAULT);
	CHECK_ERR(mount("x", at("e"), "tmpfs", 0, "nosuchoption"), EINVAL);
	CHECK_ERR(mount("x", at("e"), "tmpfs", 0, "size=lots"), EINVAL);
	CHECK_ERR(mount(NULL, at("e"), NULL, MS_SHARED | MS_PRIVATE, NULL), EINVAL);
	/* Not a mount's root. */
	CHECK_ERR(mount(NULL, at("e"), NULL, MS_PRIVATE, NULL), EINVAL);
	CHECK_ERR(mount(NULL, at("e"), NULL, MS_REMOUNT, NULL), EINVAL);
	CHECK_ERR(mount(NULL, at("e"), NULL, MS_BIND, NULL), EINVAL);
	CHECK_ERR(mount("", at("e"), NULL, MS_MOVE, NULL), EINVAL);
	CHECK_ERR(mount(at("e"), at("e"), NULL, MS_MOVE, NULL), EINVAL);
	CHECK_ERR(mount(at("nope"), at("e"), NULL, MS_BIND, NULL), ENOENT);
	CHECK_ERR(mount(at("file"), at("e"), NULL, MS_BIND, NULL), ENOTDIR);
	CHECK_ERR(umount2(at("e"), 0), EINVAL);
	CHECK_ERR(umount2(at("missing"), 0), ENOENT);
	CHECK_ERR(umount2(T, 0x100), EINVAL);
	CHECK_ERR(umount2((char *)1, 0), EFAULT);
}

static void as_user(void)
{
	if (setresgid(1000, 1000, 1000) < 0 || setresuid(1000, 1000, 1000) < 0) {
		CHECK(0, "setresuid: %s", strerror(errno));
		return;
	}
	CHECK_ERR(mount("x", at("e"), "tmpfs", 0, NULL), EPERM);
	CHECK_ERR(mount("x", at("e"), "nosuchfs", 0, NULL), EPERM);
	CHECK_ERR(mount("x", at("missing"), "tmpfs", 0, NULL), ENOENT);
	CHECK_ERR(umount2(T, 0), EPERM);
	CHECK_ERR(umount2(T, MNT_DETACH), EPERM);
	CHECK_ERR(syscall(SYS_pivot_root, T, T), EPERM);
	CHECK_ERR(unshare(CLONE_NEWNS), EPERM);
}

static void tmpfs_options(void)
{
	char line[1024], buf[4096];
	struct statfs sfs;
	struct stat st;
	long total = 0;
	ssize_t n;
	int fd;

	CHECK_RET(mkdir(at("t"), 0755), 0);
	CHECK_RET(mount("x", at("t"), "tmpfs", 0, "size=1m,mode=700,uid=5,gid=6"), 0);
	CHECK_RET(stat(at("t"), &st), 0);
	CHECK(st.st_mode == (S_IFDIR | 0700) && st.st_uid == 5 && st.st_gid == 6,
	      "root mode %o uid %d gid %d", st.st_mode, (int)st.st_uid, (int)st.st_gid);
	CHECK_RET(statfs(at("t"), &sfs), 0);
	CHECK(sfs.f_type == 0x01021994, "f_type %lx", (long)sfs.f_type);
	CHECK(mountinfo_line(at("t"), line, sizeof(line)), "no mountinfo line");
	CHECK(strstr(line, " - tmpfs x rw,size=1024k,mode=700,uid=5,gid=6\n") != NULL, "line: %s",
	      line);
	CHECK(strstr(line, " rw,relatime ") != NULL, "line: %s", line);
	/* The size is enforced. */
	fd = open(at("t/big"), O_CREAT | O_WRONLY, 0644);
	CHECK(fd >= 0, "create: %s", strerror(errno));
	memset(buf, 'x', sizeof(buf));
	while (fd >= 0 && total < 4 << 20 && (n = write(fd, buf, sizeof(buf))) > 0)
		total += n;
	CHECK(total <= 1 << 20 && errno == ENOSPC, "wrote %ld bytes into a 1 MiB tmpfs (%s)", total,
	      strerror(errno));
	close(fd);
	/* /proc/mounts: source, point, type, options. */
	{
		FILE *f = fopen("/proc/mounts", "r");
		char want[512];
		bool found = false;

		snprintf(want, sizeof(want),
			 "x %s tmpfs rw,relatime,size=1024k,mode=700,uid=5,gid=6 0 0\n", at("t"));
		while (f && fgets(line, sizeof(line), f))
			found |= !strcmp(line, want);
		if (f)
			fclose(f);
		CHECK(found, "/proc/mounts has no line %s", want);
	}
	/* size= as a percentage of the machine's memory (systemd mounts /run with size=20%): whole
	 * pages, rounded up, as Linux's shmem. */
	CHECK_RET(mkdir(at("pct"), 0755), 0);
	CHECK_RET(mount("x", at("pct"), "tmpfs", 0, "mode=0755,size=20%,nr_inodes=800k"), 0);
	{
		struct sysinfo si;
		char want[64];
		unsigned long long pages;

		sysinfo(&si);
		pages = (unsigned long long)si.totalram * si.mem_unit / 4096;
		snprintf(want, sizeof(want), ",size=%lluk",
			 (pages * 4096 * 20 / 100 + 4095) / 4096 * 4);
		CHECK(mountinfo_line(at("pct"), line, sizeof(line)) && strstr(line, want),
		      "size=20%%: want %s, line: %s", want, line);
	}
	CHECK_RET(umount2(at("pct"), 0), 0);
	CHECK_ERR(mount("x", at("pct"), "tmpfs", 0, "size=x%"), EINVAL);
	/* A second mount on top hides the first; umount shows it again. */
	CHECK_RET(mount("y", at("t"), "tmpfs", 0, NULL), 0);
	CHECK_ERR(access(at("t/big"), F_OK), ENOENT);
	CHECK(mountinfo_line(at("t"), line, sizeof(line)) && strstr(line, " - tmpfs y rw\n"),
	      "line: %s", line);
	CHECK_RET(umount2(at("t"), 0), 0);
	CHECK_RET(access(at("t/big"), F_OK), 0);
	CHECK_RET(umount2(at("t"), 0), 0);
	CHECK(!is_mountpoint(at("t")), "still mounted");
}

static void pseudo_filesystems(void)
{
	static const struct {
		const char *type, *probe;
		long magic;
	} fss[] = {
		{ "proc", "self/status", 0x9fa0 },
		{ "sysfs", "kernel", 0x62656572 },
		{ "devpts", "ptmx", 0x1cd1 },
		{ "mqueue", NULL, 0x19800202 },
	};
	char line[1024], want[64];
	struct statfs sfs;

	CHECK_RET(mkdir(at("p"), 0755), 0);
	for (size_t i = 0; i < sizeof(fss) / sizeof(fss[0]); i++) {
		CHECK_RET(mount("src", at("p"), fss[i].type, 0, NULL), 0);
		CHECK_RET(statfs(at("p"), &sfs), 0);
		CHECK(sfs.f_type == fss[i].magic, "%s: f_type %lx", fss[i].type, (long)sfs.f_type);
		if (fss[i].probe) {
			char p[256];

			snprintf(p, sizeof(p), "p/%s", fss[i].probe);
			CHECK_RET(access(at(p), F_OK), 0);
		}
		snprintf(want, sizeof(want), " - %s src rw", fss[i].type);
		CHECK(mountinfo_line(at("p"), line, sizeof(line)) && strstr(line, want),
		      "%s: line %s", fss[i].type, line);
		CHECK_RET(umount2(at("p"), 0), 0);
	}
}

static void binds(void)
{
	char root[256], line[1024];

	CHECK_RET(mkdir(at("a"), 0755), 0);
	CHECK_RET(mkdir(at("a/sub"), 0755), 0);
	CHECK_RET(mkdir(at("a/sub/inner"), 0755), 0);
	CHECK_RET(touch(at("a/sub/f")), 0);
	CHECK_RET(mkdir(at("b"), 0755), 0);
	CHECK_RET(mkdir(at("c"), 0755), 0);
	CHECK_RET(mkdir(at("d"), 0755), 0);
	CHECK_RET(mount(NULL, at("a/sub/inner"), "tmpfs", 0, NULL), 0);
	CHECK_RET(touch(at("a/sub/inner/g")), 0);

	/* A bind of a subdirectory: its root field is the directory's path in the tmpfs. */
	CHECK_RET(mount(at("a/sub"), at("b"), NULL, MS_BIND, NULL), 0);
	CHECK_RET(access(at("b/f"), F_OK), 0);
	CHECK(mount_root_field(at("b"), root, sizeof(root)) && !strcmp(root, "/a/sub"),
	      "root field %s", root);
	/* Not recursive: the submount is not there; recursive: it is. */
	CHECK_ERR(access(at("b/inner/g"), F_OK), ENOENT);
	CHECK_RET(mount(at("a"), at("c"), NULL, MS_BIND | MS_REC, NULL), 0);
	CHECK_RET(access(at("c/sub/inner/g"), F_OK), 0);
	CHECK(is_mountpoint(at("c/sub/inner")), "no submount in the recursive bind");
	CHECK(mount_root_field(at("c"), root, sizeof(root)) && !strcmp(root, "/a"), "root field %s",
	      root);
	/* Same files: a write through one shows through the other. */
	CHECK_RET(touch(at("c/sub/new")), 0);
	CHECK_RET(access(at("b/new"), F_OK), 0);

	/* remount,bind,ro: this mount only. */
	CHECK_RET(mount(NULL, at("b"), NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL), 0);
	CHECK_ERR(open(at("b/x"), O_CREAT | O_WRONLY, 0644), EROFS);
	CHECK_ERR(mkdir(at("b/y"), 0755), EROFS);
	CHECK_ERR(unlink(at("b/f")), EROFS);
	CHECK_RET(touch(at("a/sub/x")), 0);
	CHECK(mountinfo_line(at("b"), line, sizeof(line)) && strstr(line, " ro,relatime "),
	      "line %s", line);
	/* A bind of a read-only mount is read-only. */
	CHECK_RET(mount(at("b"), at("d"), NULL, MS_BIND, NULL), 0);
	CHECK_ERR(mkdir(at("d/y"), 0755), EROFS);
	CHECK_RET(umount2(at("d"), 0), 0);
	CHECK_RET(mount(NULL, at("b"), NULL, MS_REMOUNT | MS_BIND, NULL), 0);
	CHECK_RET(mkdir(at("b/y"), 0755), 0);

	/* umount of the recursive bind: busy with its submount; lazily, all of it goes. */
	CHECK_ERR(umount2(at("c"), 0), EBUSY);
	CHECK_RET(umount2(at("c"), MNT_DETACH), 0);
	CHECK(!is_mountpoint(at("c")) && !is_mountpoint(at("c/sub/inner")), "still mounted");
	CHECK_RET(umount2(at("b"), 0), 0);
	CHECK_RET(umount2(at("a/sub/inner"), 0), 0);
}

static void remount_flags(void)
{
	char line[1024], path[256];
	int fd, st;
	pid_t pid;

	CHECK_RET(mkdir(at("x"), 0755), 0);
	CHECK_RET(mount("x", at("x"), "tmpfs", MS_NOEXEC, NULL), 0);
	CHECK(mountinfo_line(at("x"), line, sizeof(line)) && strstr(line, " rw,noexec,relatime "),
	      "line %s", line);
	/* A copy of /bin/true: exec refused on noexec. */
	snprintf(path, sizeof(path), "%s", at("x/true"));
	{
		int in = open("/bin/true", O_RDONLY);
		char buf[65536];
		ssize_t n;

		fd = open(path, O_CREAT | O_WRONLY, 0755);
		CHECK(in >= 0 && fd >= 0, "copy /bin/true: %s", strerror(errno));
		while (in >= 0 && fd >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
			CHECK_RET(write(fd, buf, n), n);
		close(in);
		close(fd);
	}
	CHECK_ERR(access(path, X_OK), EACCES);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		execl(path, "true", (char *)NULL);
		_exit(errno == EACCES ? 42 : 43);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 42,
	      "exec on noexec: status %d", st);
	/* remount without noexec: exec works; with nosuid,nodev,ro: shown and enforced. */
	CHECK_RET(mount(NULL, at("x"), NULL, MS_REMOUNT, NULL), 0);
	CHECK_RET(access(path, X_OK), 0);
	CHECK_RET(mount(NULL, at("x"), NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL),
		  0);
	CHECK(mountinfo_line(at("x"), line, sizeof(line)) &&
		      strstr(line, " ro,nosuid,nodev,relatime ") && strstr(line, " - tmpfs x ro\n"),
	      "line %s", line);
	CHECK_ERR(open(at("x/new"), O_CREAT | O_WRONLY, 0644), EROFS);
	CHECK_RET(umount2(at("x"), 0), 0);
}

static void propagation(void)
{
	char line[1024];

	CHECK_RET(mkdir(at("s"), 0755), 0);
	CHECK_RET(mkdir(at("s/in"), 0755), 0);
	CHECK_RET(mkdir(at("u"), 0755), 0);
	CHECK_RET(mount("s", at("s"), "tmpfs", 0, NULL), 0);
	CHECK_RET(mkdir(at("s/in"), 0755), 0);
	CHECK_RET(mount("in", at("s/in"), "tmpfs", 0, NULL), 0);
	CHECK(mountinfo_line(at("s"), line, sizeof(line)) && !strstr(line, "shared:"), "line %s",
	      line);
	CHECK_RET(mount(NULL, at("s"), NULL, MS_SHARED, NULL), 0);
	CHECK(mountinfo_line(at("s"), line, sizeof(line)) && strstr(line, " shared:"), "line %s",
	      line);
	CHECK(mountinfo_line(at("s/in"), line, sizeof(line)) && !strstr(line, " shared:"),
	      "not recursive: %s", line);
	CHECK_RET(mount(NULL, at("s"), NULL, MS_SHARED | MS_REC, NULL), 0);
	CHECK(mountinfo_line(at("s/in"), line, sizeof(line)) && strstr(line, " shared:"),
	      "recursive: %s", line);
	/* A bind of a shared mount is its peer: same shared:N. */
	CHECK_RET(mount(at("s"), at("u"), NULL, MS_BIND, NULL), 0);
	{
		char l2[1024];
		const char *a, *b;

		CHECK(mountinfo_line(at("s"), line, sizeof(line)) &&
			      mountinfo_line(at("u"), l2, sizeof(l2)) &&
			      (a = strstr(line, " shared:")) && (b = strstr(l2, " shared:")) &&
			      atoi(a + 8) == atoi(b + 8),
		      "peers: %s%s", line, l2);
	}
	/* Slave of its peer group: master:N; alone it would be private. */
	CHECK_RET(mount(NULL, at("s"), NULL, MS_SLAVE, NULL), 0);
	CHECK(mountinfo_line(at("s"), line, sizeof(line)) && strstr(line, " master:") &&
		      !strstr(line, " shared:"),
	      "slave: %s", line);
	CHECK_RET(umount2(at("u"), 0), 0);
	CHECK_RET(mount(NULL, at("s/in"), NULL, MS_SLAVE, NULL), 0);
	CHECK(mountinfo_line(at("s/in"), line, sizeof(line)) && !strstr(line, " master:") &&
		      !strstr(line, " shared:"),
	      "lone slave: %s", line);
	CHECK_RET(mount(NULL, at("s"), NULL, MS_PRIVATE | MS_REC, NULL), 0);
	CHECK(mountinfo_line(at("s"), line, sizeof(line)) && !strstr(line, " master:") &&
		      !strstr(line, " shared:"),
	      "private: %s", line);
	CHECK_RET(mount(NULL, at("s"), NULL, MS_UNBINDABLE, NULL), 0);
	CHECK(mountinfo_line(at("s"), line, sizeof(line)) && strstr(line, " unbindable "),
	      "unbindable: %s", line);
	CHECK_ERR(mount(at("s"), at("u"), NULL, MS_BIND, NULL), EINVAL);
	CHECK_RET(mount(NULL, at("s"), NULL, MS_PRIVATE, NULL), 0);
	CHECK_RET(umount2(at("s"), MNT_DETACH), 0);
}

static void moves(void)
{
	char line[1024];

	CHECK_RET(mkdir(at("m1"), 0755), 0);
	CHECK_RET(mkdir(at("m2"), 0755), 0);
	CHECK_RET(mount("mv", at("m1"), "tmpfs", 0, NULL), 0);
	CHECK_RET(mkdir(at("m1/sub"), 0755), 0);
	CHECK_RET(touch(at("m1/f")), 0);
	CHECK_ERR(mount(at("m1"), at("m1/sub"), NULL, MS_MOVE, NULL), ELOOP);
	CHECK_RET(mount(at("m1"), at("m2"), NULL, MS_MOVE, NULL), 0);
	CHECK_RET(access(at("m2/f"), F_OK), 0);
	CHECK_ERR(access(at("m1/f"), F_OK), ENOENT);
	CHECK(!is_mountpoint(at("m1")) && mountinfo_line(at("m2"), line, sizeof(line)),
	      "not moved");
	CHECK_ERR(umount2(at("m1"), 0), EINVAL);
	CHECK_RET(umount2(at("m2"), 0), 0);
}

static void umounts(void)
{
	int fd;

	CHECK_RET(mkdir(at("busy"), 0755), 0);
	CHECK_RET(mount("busy", at("busy"), "tmpfs", 0, NULL), 0);
	/* A cwd in it. */
	CHECK_RET(chdir(at("busy")), 0);
	CHECK_ERR(umount2(at("busy"), 0), EBUSY);
	CHECK_RET(chdir("/"), 0);
	/* An open file in it. */
	fd = open(at("busy/f"), O_CREAT | O_RDWR, 0644);
	CHECK(fd >= 0, "create: %s", strerror(errno));
	CHECK_ERR(umount2(at("busy"), 0), EBUSY);
	/* Lazily: gone from the tree, the open file still works. */
	CHECK_RET(umount2(at("busy"), MNT_DETACH), 0);
	CHECK(!is_mountpoint(at("busy")), "still mounted");
	CHECK_ERR(access(at("busy/f"), F_OK), ENOENT);
	CHECK_RET(write(fd, "abc", 3), 3);
	CHECK_RET(pread(fd, (char[4]){ 0 }, 3, 0), 3);
	close(fd);
	/* A cwd in a lazily unmounted mount stays usable; .. stays at its root. */
	CHECK_RET(mount("busy", at("busy"), "tmpfs", 0, NULL), 0);
	CHECK_RET(mkdir(at("busy/d"), 0755), 0);
	CHECK_RET(chdir(at("busy/d")), 0);
	CHECK_RET(umount2(at("busy"), MNT_DETACH), 0);
	CHECK_RET(touch("here"), 0);
	CHECK_RET(chdir("../.."), 0);
	CHECK_RET(access("d/here", F_OK), 0);
	CHECK_RET(chdir("/"), 0);
	/* UMOUNT_NOFOLLOW: a symlink to a mountpoint is not one. */
	CHECK_RET(mount("busy", at("busy"), "tmpfs", 0, NULL), 0);
	CHECK_RET(symlink(at("busy"), at("lnk")), 0);
	CHECK_ERR(umount2(at("lnk"), UMOUNT_NOFOLLOW), EINVAL);
	CHECK_RET(umount2(at("lnk"), 0), 0);
	CHECK(!is_mountpoint(at("busy")), "still mounted");
	CHECK_ERR(umount2(at("busy"), MNT_EXPIRE | MNT_DETACH), EINVAL);
}

static void body(void)
{
	/* Natively: a namespace of our own with / private, so that nothing leaks to the host. */
	if (!mountns_enter(T, sizeof(T)))
		return;
	errors();
	mountns_child(as_user, "unprivileged checks");
	tmpfs_options();
	pseudo_filesystems();
	binds();
	remount_flags();
	propagation();
	moves();
	umounts();
	CHECK_RET(umount2(T, 0), 0);
}

int main(void)
{
	if (mountns_main("mounts", body))
		return 1;
	/* Not the summary: the child printed it. Nothing is left mounted here. */
	CHECK(!is_mountpoint(scratch), "scratch mounted outside");
	return checks_failed ? 1 : 0;
}
