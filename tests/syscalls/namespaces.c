/* SPDX-License-Identifier: Apache-2.0 */
/*
 * UTS, IPC and user namespaces (issue 17): unshare(2) and clone(2) with CLONE_NEWUTS,
 * CLONE_NEWIPC and CLONE_NEWUSER, setns(2) on /proc/PID/ns files and pidfds, and the
 * namespace identities of /proc/PID/ns. Hostnames are per UTS namespace and copied at unshare;
 * SysV objects of another IPC namespace are unreachable by id and by key; a new user namespace
 * gives every capability in it and none outside, shows unmapped ids as 65534, takes uid_map
 * and gid_map once by man 7 user_namespaces' rules, nests 33 deep at most (ENOSPC beyond, as
 * Linux 6.x: the man page's EUSERS is older kernels'), and wants
 * a single-threaded caller. The unprivileged rules run in a child that dropped to uid 65534.
 * Each check runs in a forked child, so that the caller's namespaces never change.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "check.h"

/* Writes s to path in one write(2). Returns 0 or -errno. */
static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;
	int e;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	e = errno;
	close(fd);
	return n < 0 ? -e : 0;
}

/* Reads path into buf (NUL-terminated). Returns the length or -errno. */
static int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return (int)n;
}

static ino_t ns_ino(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_ino : 0;
}

/*
 * Runs fn in a forked child (its namespaces change, the caller's never do); the child's check
 * counts come back through a pipe and add to the caller's.
 */
static void in_child(void (*fn)(void))
{
	int pfd[2], counts[2] = { 0, 0 }, st;
	pid_t pid;

	fflush(stdout);
	if (pipe(pfd) < 0) {
		CHECK(0, "pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		checks_passed = checks_failed = 0;
		fn();
		fflush(stdout);
		counts[0] = checks_passed;
		counts[1] = checks_failed;
		_exit(write(pfd[1], counts, sizeof(counts)) == sizeof(counts) ? 0 : 1);
	}
	close(pfd[1]);
	CHECK(pid > 0, "fork: %s", strerror(errno));
	if (pid > 0) {
		CHECK(read(pfd[0], counts, sizeof(counts)) == sizeof(counts), "child died");
		CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "child: status %#x", st);
		checks_passed += counts[0];
		checks_failed += counts[1];
	}
	close(pfd[0]);
}

/* Drops to uid and gid 65534 with no groups, dumpable (so it may write /proc/self files). */
static bool drop_to_nobody(void)
{
	if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
	    setresuid(65534, 65534, 65534) < 0)
		return false;
	return prctl(PR_SET_DUMPABLE, 1) == 0;
}

/* --- UTS --- */

static void uts_child(void)
{
	struct utsname before, u;
	char buf[128];
	ino_t outer = ns_ino("/proc/self/ns/uts");
	int fd = open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC);

	CHECK(fd >= 0, "open ns/uts: %s", strerror(errno));
	CHECK_OK(uname(&before));
	CHECK_RET(unshare(CLONE_NEWUTS), 0);
	CHECK_OK(uname(&u));
	CHECK(!strcmp(u.nodename, before.nodename), "copied name %s, was %s", u.nodename,
	      before.nodename);
	CHECK(ns_ino("/proc/self/ns/uts") != outer, "same uts identity after unshare");
	CHECK_RET(sethostname("nsinner", 7), 0);
	CHECK_RET(setdomainname("nsdomain", 8), 0);
	CHECK_OK(uname(&u));
	CHECK(!strcmp(u.nodename, "nsinner"), "nodename %s", u.nodename);
	CHECK(!strcmp(u.domainname, "nsdomain"), "domainname %s", u.domainname);
	CHECK(read_file("/proc/sys/kernel/hostname", buf, sizeof(buf)) > 0 &&
		      !strcmp(buf, "nsinner\n"),
	      "kernel.hostname %s", buf);
	/* setns back to the first one: its name again. */
	CHECK_ERR(setns(fd, CLONE_NEWIPC), EINVAL);
	CHECK_RET(setns(fd, CLONE_NEWUTS), 0);
	CHECK_OK(uname(&u));
	CHECK(!strcmp(u.nodename, before.nodename), "after setns: %s", u.nodename);
	CHECK(ns_ino("/proc/self/ns/uts") == outer, "after setns: another identity");
	close(fd);
}

static void uts_tests(void)
{
	struct utsname before, after;
	ino_t self = ns_ino("/proc/self/ns/uts");
	pid_t pid;
	int st, pfd[2];
	char c;

	CHECK(self != 0, "stat -L /proc/self/ns/uts");
	CHECK_OK(uname(&before));
	in_child(uts_child);
	CHECK_OK(uname(&after));
	CHECK(!strcmp(before.nodename, after.nodename), "the caller's name changed: %s",
	      after.nodename);

	/* A child made with clone(CLONE_NEWUTS) has its own; a fork shares the parent's. */
	CHECK_OK(pipe(pfd));
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		_exit(ns_ino("/proc/self/ns/uts") == self ? 0 : 1);
	}
	close(pfd[1]);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "a fork's ns/uts differs from its parent's");
	close(pfd[0]);
	pid = (pid_t)syscall(SYS_clone, CLONE_NEWUTS | SIGCHLD, NULL, NULL, NULL, 0);
	if (pid == 0)
		_exit(ns_ino("/proc/self/ns/uts") != self && sethostname("cloned", 6) == 0 ? 0 : 1);
	CHECK(pid > 0, "clone(CLONE_NEWUTS): %s", strerror(errno));
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "clone(CLONE_NEWUTS) child: %#x", st);
	CHECK_OK(uname(&after));
	CHECK(!strcmp(before.nodename, after.nodename), "clone child renamed us: %s",
	      after.nodename);

	/* setns through a pidfd of a process in another UTS namespace. */
	CHECK_OK(pipe(pfd));
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		if (unshare(CLONE_NEWUTS) == 0 && sethostname("viapidfd", 8) == 0)
			c = 'y';
		else
			c = 'n';
		if (write(pfd[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pfd[1]);
	c = 0;
	CHECK(read(pfd[0], &c, 1) == 1 && c == 'y', "pidfd target not ready");
	close(pfd[0]);
	{
		int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		pid_t k = fork();

		CHECK(pidfd >= 0, "pidfd_open: %s", strerror(errno));
		if (k == 0) {
			struct utsname u;

			if (syscall(SYS_setns, pidfd, CLONE_NEWUTS) != 0 || uname(&u) != 0)
				_exit(2);
			_exit(strcmp(u.nodename, "viapidfd") ? 3 : 0);
		}
		CHECK(waitpid(k, &st, 0) == k && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "setns(pidfd, CLONE_NEWUTS): %#x", st);
		close(pidfd);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}

/* --- IPC --- */

static int outer_q = -1;
static key_t outer_key;

static void ipc_child(void)
{
	struct msqid_ds ds;
	ino_t outer = ns_ino("/proc/self/ns/ipc");
	int q, fd = open("/proc/self/ns/ipc", O_RDONLY | O_CLOEXEC);

	CHECK_RET(unshare(CLONE_NEWIPC), 0);
	CHECK(ns_ino("/proc/self/ns/ipc") != outer, "same ipc identity after unshare");
	/* The parent's queue is unreachable by id and by key; the key is free here. */
	CHECK_ERR(msgctl(outer_q, IPC_STAT, &ds), EINVAL);
	CHECK_ERR(msgget(outer_key, 0), ENOENT);
	q = (int)CHECK_OK(msgget(outer_key, IPC_CREAT | IPC_EXCL | 0600));
	CHECK_RET(msgctl(q, IPC_STAT, &ds), 0);
	CHECK_RET(msgctl(q, IPC_RMID, NULL), 0);
	/* setns back to the first one: the parent's queue by its key again. */
	CHECK_RET(setns(fd, CLONE_NEWIPC), 0);
	CHECK_RET(msgget(outer_key, 0), outer_q);
	close(fd);
}

/*
 * The objects of an IPC namespace go with it: with kernel.msgmni at 3 (in a namespace of its
 * own on Linux, the sandbox's in husk), ten namespaces in turn each make a queue.
 */
static void ipc_exit_child(void)
{
	char old[32];
	int ok = 0;

	CHECK_RET(unshare(CLONE_NEWIPC), 0);
	CHECK(read_file("/proc/sys/kernel/msgmni", old, sizeof(old)) > 0, "read msgmni");
	CHECK_RET(write_file("/proc/sys/kernel/msgmni", "3"), 0);
	for (int i = 0; i < 10; i++) {
		pid_t pid = fork();
		int st;

		if (pid == 0)
			_exit(unshare(CLONE_NEWIPC) == 0 && msgget(IPC_PRIVATE, 0600) >= 0 ? 0 : 1);
		if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ok++;
	}
	CHECK(ok == 10, "%d of 10 namespaces made their queue", ok);
	CHECK_RET(write_file("/proc/sys/kernel/msgmni", old), 0);
}

static void ipc_tests(void)
{
	struct msqid_ds ds;

	outer_key = (key_t)(0x4e530000 | (getpid() & 0xffff));
	outer_q = (int)CHECK_OK(msgget(outer_key, IPC_CREAT | IPC_EXCL | 0600));
	in_child(ipc_child);
	in_child(ipc_exit_child);
	/* The parent's queue is still its own. */
	CHECK_RET(msgget(outer_key, 0), outer_q);
	CHECK_RET(msgctl(outer_q, IPC_STAT, &ds), 0);
	CHECK_RET(msgctl(outer_q, IPC_RMID, NULL), 0);
}

/* --- user --- */

static void *sleeper(void *arg)
{
	(void)arg;
	pause();
	return NULL;
}

/* Maps root of the new namespace to the caller's own ids, as an unprivileged user may. */
static int map_self(uid_t uid, gid_t gid)
{
	char s[64];
	int r;

	snprintf(s, sizeof(s), "0 %u 1", uid);
	r = write_file("/proc/self/uid_map", s);
	if (r < 0)
		return r;
	r = write_file("/proc/self/setgroups", "deny");
	if (r < 0)
		return r;
	snprintf(s, sizeof(s), "0 %u 1", gid);
	return write_file("/proc/self/gid_map", s);
}

static void user_root_child(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	ino_t outer = ns_ino("/proc/self/ns/user");
	char buf[256];
	struct stat st;

	CHECK_RET(unshare(CLONE_NEWUSER), 0);
	CHECK(ns_ino("/proc/self/ns/user") != outer, "same user identity after unshare");
	/* Nothing mapped yet: the overflow id. */
	CHECK_RET(getuid(), 65534);
	CHECK_RET(getegid(), 65534);
	CHECK(read_file("/proc/self/uid_map", buf, sizeof(buf)) == 0, "uid_map before: %s", buf);
	/* Every capability in the namespace. */
	CHECK_RET(syscall(SYS_capget, &h, d), 0);
	CHECK(d[0].effective == 0xffffffffu, "effective %#x", d[0].effective);
	/* gid_map before setgroups deny, as the owner mapping its own gid: EPERM. */
	CHECK(write_file("/proc/self/gid_map", "0 0 1") == -EPERM, "gid_map before deny");
	CHECK_RET(map_self(0, 0), 0);
	CHECK_RET(getuid(), 0);
	CHECK_RET(getgid(), 0);
	CHECK(read_file("/proc/self/uid_map", buf, sizeof(buf)) > 0 &&
		      !strcmp(buf, "         0          0          1\n"),
	      "uid_map %s", buf);
	CHECK(read_file("/proc/self/setgroups", buf, sizeof(buf)) > 0 && !strcmp(buf, "deny\n"),
	      "setgroups %s", buf);
	/* Written once. */
	CHECK(write_file("/proc/self/uid_map", "0 0 1") == -EPERM, "second uid_map write");
	/* A file of an unmapped owner shows the overflow ids; root's shows 0. */
	CHECK_RET(stat("/", &st), 0);
	CHECK(st.st_uid == 0, "/ owner %u", st.st_uid);
	CHECK_RET(stat("/tmp/ns-test-owned", &st), 0);
	CHECK(st.st_uid == 65534 && st.st_gid == 65534, "unmapped owner %u:%u", st.st_uid,
	      st.st_gid);
	/* chown takes the namespace's ids: root (0 here, 0 outside) is fine, 1234 is not
	 * mapped here (EINVAL). */
	CHECK_RET(chown("/tmp/ns-test-mine", 0, 0), 0);
	CHECK_ERR(chown("/tmp/ns-test-mine", 1234, -1), EINVAL);
	CHECK_RET(stat("/tmp/ns-test-mine", &st), 0);
	CHECK(st.st_uid == 0 && st.st_gid == 0, "owner %u:%u", st.st_uid, st.st_gid);
	/* No capability over the outer UTS namespace... */
	CHECK_ERR(sethostname("nope", 4), EPERM);
	/* ... but over a UTS namespace of its own. */
	CHECK_RET(unshare(CLONE_NEWUTS), 0);
	CHECK_RET(sethostname("mine", 4), 0);
	/* setns into the same user namespace: EINVAL. */
	{
		int fd = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC), o, uts;
		uid_t owner = 12345;

		CHECK_ERR(setns(fd, CLONE_NEWUSER), EINVAL);
		/* nsfs's ioctls: type, owner (the creator's euid, 0 as seen here), no parent seen
		 * from inside (outside the caller's namespace), a UTS namespace's owner. */
		CHECK_RET(ioctl(fd, NS_GET_NSTYPE), CLONE_NEWUSER);
		CHECK_RET(ioctl(fd, NS_GET_OWNER_UID, &owner), 0);
		CHECK(owner == 0, "owner uid %u", owner);
		CHECK_ERR(ioctl(fd, NS_GET_PARENT), EPERM);
		CHECK_ERR(ioctl(fd, NS_GET_USERNS), EPERM);
		uts = open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC);
		o = (int)CHECK_OK(ioctl(uts, NS_GET_USERNS));
		CHECK(o >= 0 && fstat(o, &st) == 0 && st.st_ino == ns_ino("/proc/self/ns/user"),
		      "uts owner ino %lu", (unsigned long)st.st_ino);
		CHECK_ERR(ioctl(uts, NS_GET_PARENT), EINVAL);
		close(o);
		close(uts);
		close(fd);
	}
}

static void user_nest_child(void)
{
	int depth = 0, err = 0;

	/* The sandbox (or the host) is level 0: 33 more levels (a parent up to level 32), then
	 * ENOSPC (Linux's create_user_ns). */
	for (int i = 0; i < 40; i++) {
		if (unshare(CLONE_NEWUSER) < 0) {
			err = errno;
			break;
		}
		depth++;
		if (map_self(0, 0) < 0) {
			err = -1;
			break;
		}
	}
	CHECK(err == ENOSPC && depth == 33, "nesting stopped at %d: %s", depth,
	      err > 0 ? strerror(err) : "map failed");
}

static void user_thread_child(void)
{
	pthread_t th;

	CHECK_RET(pthread_create(&th, NULL, sleeper, NULL), 0);
	CHECK_ERR(unshare(CLONE_NEWUSER), EINVAL);
}

static void user_nobody_child(void)
{
	char buf[256];

	CHECK(drop_to_nobody(), "drop to 65534: %s", strerror(errno));
	CHECK_ERR(unshare(CLONE_NEWUTS), EPERM);
	CHECK_ERR(unshare(CLONE_NEWIPC), EPERM);
	CHECK_ERR(sethostname("nope", 4), EPERM);
	CHECK_RET(unshare(CLONE_NEWUSER), 0);
	/* Someone else's uid: EPERM; one's own: fine. */
	CHECK(write_file("/proc/self/uid_map", "0 0 1") == -EPERM, "mapped uid 0 unprivileged");
	CHECK(write_file("/proc/self/uid_map", "0 65534 1") == 0, "own uid_map: %s",
	      strerror(errno));
	/* gid_map before setgroups deny: EPERM. */
	CHECK(write_file("/proc/self/gid_map", "0 65534 1") == -EPERM, "gid_map before deny");
	CHECK(write_file("/proc/self/setgroups", "deny") == 0, "setgroups deny");
	CHECK(write_file("/proc/self/gid_map", "0 65534 1") == 0, "gid_map after deny");
	CHECK_RET(getuid(), 0);
	CHECK_RET(getgid(), 0);
	CHECK(read_file("/proc/self/gid_map", buf, sizeof(buf)) > 0 &&
		      !strcmp(buf, "         0      65534          1\n"),
	      "gid_map %s", buf);
	/*
	 * A set-user-ID program of the outer root (kuid 0, unmapped here) runs with the caller's
	 * ids: id -u shows 0 (the caller's own uid, mapped to 0 here), not the overflow id that
	 * the outer root would show as.
	 */
	{
		int pfd[2], st;
		char out[32] = { 0 };
		pid_t pid;

		CHECK_OK(pipe(pfd));
		pid = fork();
		if (pid == 0) {
			dup2(pfd[1], 1);
			execl("/tmp/ns-test-suid-id", "id", "-u", (char *)NULL);
			_exit(127);
		}
		close(pfd[1]);
		CHECK(read(pfd[0], out, sizeof(out) - 1) > 0 && !strcmp(out, "0\n"),
		      "set-user-ID root id -u: %s", out);
		close(pfd[0]);
		CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "id: %#x", st);
	}
	/*
	 * Root of its own namespace has no CAP_SYS_ADMIN over the sandbox's files: no trusted.*
	 * attribute. (security.capability: Linux stores it with the namespace's root id, husk
	 * refuses it; not checked here.)
	 */
	{
		int fd =
			open("/tmp/ns-test-nobody", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);

		CHECK(fd >= 0, "create: %s", strerror(errno));
		CHECK_ERR(fsetxattr(fd, "trusted.x", "1", 1, 0), EPERM);
		if (fd >= 0)
			close(fd);
		unlink("/tmp/ns-test-nobody");
	}
	/* Root of its own namespace: a UTS namespace of its own and a name in it. */
	CHECK_RET(unshare(CLONE_NEWUTS | CLONE_NEWIPC), 0);
	CHECK_RET(sethostname("unpriv", 6), 0);
	/* Still nothing over the outer namespaces' objects: kill of a root process. */
	CHECK_ERR(kill(1, 0), EPERM);
}

/*
 * A privileged parent maps a range (man 7 user_namespaces: any ids of its namespace, many
 * lines); in it, root sets other mapped ids (CAP_SETUID in its own namespace) and groups
 * (setgroups allowed), and the caller's own uid 0, unmapped there, shows as 65534.
 */
static void user_range_child(void)
{
	int up[2], down[2], st;
	char c = 0, path[64];
	pid_t pid;

	CHECK_OK(pipe(up));
	CHECK_OK(pipe(down));
	pid = fork();
	if (pid == 0) {
		gid_t g = 5;
		int ok = 1;

		close(up[0]);
		close(down[1]);
		if (unshare(CLONE_NEWUSER) < 0)
			_exit(10);
		if (write(up[1], "u", 1) != 1 || read(down[0], &c, 1) != 1)
			_exit(11);
		/* kuid 0 is outside the map [100000, 102000). */
		ok &= getuid() == 65534;
		ok &= setgroups(1, &g) == 0;
		ok &= setresgid(1000, 1000, 1000) == 0 && setresuid(1000, 1000, 1000) == 0;
		ok &= getuid() == 1000 && getgid() == 1000;
		/* 3000 is not mapped: EINVAL before any permission check. */
		ok &= setuid(3000) == -1 && errno == EINVAL;
		_exit(ok ? 0 : 12);
	}
	close(up[1]);
	close(down[0]);
	CHECK(read(up[0], &c, 1) == 1 && c == 'u', "child did not unshare");
	/* From outside: the child's namespace's parent is ours; its owner is our euid. */
	{
		int fd, p;
		uid_t owner = 12345;
		struct stat sb;

		snprintf(path, sizeof(path), "/proc/%d/ns/user", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
		p = (int)CHECK_OK(ioctl(fd, NS_GET_PARENT));
		CHECK(p >= 0 && fstat(p, &sb) == 0 && sb.st_ino == ns_ino("/proc/self/ns/user"),
		      "parent ino %lu", (unsigned long)sb.st_ino);
		CHECK_RET(ioctl(fd, NS_GET_OWNER_UID, &owner), 0);
		CHECK(owner == geteuid(), "owner %u", owner);
		close(p);
		close(fd);
	}
	snprintf(path, sizeof(path), "/proc/%d/uid_map", pid);
	CHECK_RET(write_file(path, "0 100000 1000\n1000 101000 1000\n"), 0);
	snprintf(path, sizeof(path), "/proc/%d/gid_map", pid);
	CHECK_RET(write_file(path, "0 100000 2000\n"), 0);
	CHECK_RET(write_file(path, "0 100000 2000\n"), -EPERM);
	CHECK(write(down[1], "g", 1) == 1, "pipe");
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "mapped child: status %#x", st);
	close(up[0]);
	close(down[1]);
}

/*
 * A map's extent must lie in one extent of the parent namespace's map (Linux's
 * map_id_range_down): in a namespace whose map has ids 0-1, 2 and 3 in three extents (100-101
 * and 103 outside, 2 far away at 500), a child's "0 0 4" is EPERM, even though its ends are 3
 * apart outside as inside; "0 0 2" is fine.
 */
static void user_holes_child(void)
{
	int up[2], down[2], st;
	char c = 0, path[64];
	pid_t pid;

	CHECK_OK(pipe(up));
	CHECK_OK(pipe(down));
	pid = fork();
	if (pid == 0) {
		int b_up[2], b_down[2], ok = 1, bst;
		char bpath[64];
		pid_t b;

		close(up[0]);
		close(down[1]);
		if (unshare(CLONE_NEWUSER) < 0)
			_exit(10);
		if (write(up[1], "u", 1) != 1 || read(down[0], &c, 1) != 1)
			_exit(11);
		/* Root here (uid 100 outside), so that the child's creator is mapped here. */
		if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
			_exit(15);
		/* The id change made it non-dumpable: its child's /proc files would be root's. */
		if (prctl(PR_SET_DUMPABLE, 1) < 0)
			_exit(16);
		if (pipe(b_up) < 0 || pipe(b_down) < 0)
			_exit(12);
		b = fork();
		if (b == 0) {
			close(b_up[0]);
			close(b_down[1]);
			if (unshare(CLONE_NEWUSER) < 0)
				_exit(10);
			if (write(b_up[1], "u", 1) != 1 || read(b_down[0], &c, 1) != 1)
				_exit(11);
			_exit(0);
		}
		close(b_up[1]);
		close(b_down[0]);
		if (b < 0 || read(b_up[0], &c, 1) != 1)
			_exit(13);
		snprintf(bpath, sizeof(bpath), "/proc/%d/uid_map", b);
		ok &= write_file(bpath, "0 0 4\n") == -EPERM;
		ok &= write_file(bpath, "0 0 2\n") == 0;
		ok &= write(b_down[1], "g", 1) == 1;
		ok &= waitpid(b, &bst, 0) == b && WIFEXITED(bst) && WEXITSTATUS(bst) == 0;
		_exit(ok ? 0 : 14);
	}
	close(up[1]);
	close(down[0]);
	CHECK(read(up[0], &c, 1) == 1 && c == 'u', "child did not unshare");
	snprintf(path, sizeof(path), "/proc/%d/uid_map", pid);
	CHECK_RET(write_file(path, "0 100 2\n2 500 1\n3 103 1\n"), 0);
	snprintf(path, sizeof(path), "/proc/%d/gid_map", pid);
	CHECK_RET(write_file(path, "0 100 4\n"), 0);
	CHECK(write(down[1], "g", 1) == 1, "pipe");
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "a map across the parent's extents: status %#x", st);
	close(up[0]);
	close(down[1]);
}

static void user_tests(void)
{
	int fd = open("/tmp/ns-test-owned", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	CHECK(fd >= 0, "create /tmp/ns-test-owned: %s", strerror(errno));
	if (fd >= 0)
		close(fd);
	CHECK_RET(chown("/tmp/ns-test-owned", 1234, 1234), 0);
	fd = open("/tmp/ns-test-mine", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0, "create /tmp/ns-test-mine: %s", strerror(errno));
	if (fd >= 0)
		close(fd);
	in_child(user_root_child);
	in_child(user_nest_child);
	in_child(user_range_child);
	in_child(user_holes_child);
	in_child(user_thread_child);
	/* A set-user-ID-root copy of id(1) for user_nobody_child. */
	{
		char cmd[] = "cp /usr/bin/id /tmp/ns-test-suid-id";

		CHECK_RET(system(cmd), 0);
		CHECK_RET(chown("/tmp/ns-test-suid-id", 0, 0), 0);
		CHECK_RET(chmod("/tmp/ns-test-suid-id", 04755), 0);
	}
	in_child(user_nobody_child);
	unlink("/tmp/ns-test-suid-id");
	unlink("/tmp/ns-test-owned");
	unlink("/tmp/ns-test-mine");
}

int main(void)
{
	if (geteuid() != 0) {
		printf("skip: namespaces: needs root (the unprivileged part drops from it)\n");
		return 0;
	}
	uts_tests();
	ipc_tests();
	user_tests();
	return finish();
}
