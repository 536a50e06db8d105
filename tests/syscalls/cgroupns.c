/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cgroup namespaces (issue 17; man 7 cgroup_namespaces): unshare(CLONE_NEWCGROUP) roots the
 * namespace at the caller's cgroup; /proc/PID/cgroup shows paths relative to the reader's
 * namespace root ("/.." above it); a cgroup2 mount made inside shows the hierarchy from that
 * root; clone(CLONE_NEWCGROUP), setns(2) on /proc/PID/ns/cgroup and the namespace's identity;
 * EPERM without CAP_SYS_ADMIN. Natively (as root) the cgroups are made in the host's v2
 * hierarchy when it is writable (else skipped, said so) and removed at the end.
 */

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include "cgfile.h"
#include "mountns.h"

static char CG[256], C[400], CG2[300], NAME[64];

/* The v2 line of /proc/PID/cgroup (pid 0: self) into buf. */
static void proc_cgroup(pid_t pid, char *buf, size_t len)
{
	char p[64];

	if (pid)
		snprintf(p, sizeof(p), "/proc/%d/cgroup", (int)pid);
	else
		snprintf(p, sizeof(p), "/proc/self/cgroup");
	if (readf(p, buf, len) < 0) {
		snprintf(buf, len, "(%s)", strerror(errno));
		return;
	}
	/* The v2 line only (a hybrid host lists its v1 hierarchies first). */
	char *v2 = strncmp(buf, "0::", 3) ? strstr(buf, "\n0::") : buf - 1;

	if (v2)
		memmove(buf, v2 + 1, strlen(v2 + 1) + 1);
}

static ino_t ns_ino(pid_t pid)
{
	char p[64];
	struct stat st;

	if (pid)
		snprintf(p, sizeof(p), "/proc/%d/ns/cgroup", (int)pid);
	else
		snprintf(p, sizeof(p), "/proc/self/ns/cgroup");
	return stat(p, &st) == 0 ? st.st_ino : 0;
}

static char *sub(const char *dir, const char *rel)
{
	static char bufs[4][512];
	static int i;
	char *b = bufs[i++ % 4];

	snprintf(b, 512, "%s/%s", dir, rel);
	return b;
}

static int to_parent[2], to_child[2]; /* the lock-step between body and the child */
static pid_t top; /* body's pid */
static ino_t child_ns; /* the child's new namespace, as it saw it */

/* clone(CLONE_NEWCGROUP) as fork: the child's /proc/self/cgroup must read "0::/". */
static void check_clone(void)
{
	int st;
	pid_t p;

	fflush(stdout);
	p = (pid_t)syscall(SYS_clone, CLONE_NEWCGROUP | SIGCHLD, 0, NULL, NULL, 0);
	if (p == 0) {
		char buf[256];

		proc_cgroup(0, buf, sizeof(buf));
		_exit(!strcmp(buf, "0::/\n") && ns_ino(0) != ns_ino(getppid()) ? 0 : 1);
	}
	CHECK(p > 0 && waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "clone(CLONE_NEWCGROUP) child: %s", p < 0 ? strerror(errno) : "status");
}

static void child(void)
{
	char buf[512], want[256], line[1024], root[512];
	struct stat a, b;
	ino_t before;

	CHECK_RET(writef(sub(C, "cgroup.procs"), "0"), 0);
	snprintf(want, sizeof(want), "0::/%s\n", NAME);
	proc_cgroup(0, buf, sizeof(buf));
	CHECK(!strcmp(buf, want), "before unshare: %s", buf);
	check_clone();
	before = ns_ino(0);
	CHECK_RET(unshare(CLONE_NEWCGROUP), 0);
	child_ns = ns_ino(0);
	CHECK(child_ns && child_ns != before, "ns inode %lu -> %lu", (unsigned long)before,
	      (unsigned long)child_ns);
	CHECK(readlink("/proc/self/ns/cgroup", buf, sizeof(buf)) > 0 &&
		      !strncmp(buf, "cgroup:[", 8),
	      "readlink %s", buf);
	proc_cgroup(0, buf, sizeof(buf));
	CHECK(!strcmp(buf, "0::/\n"), "after unshare: %s", buf);
	/* The parent is in the hierarchy's root, above this namespace's. */
	proc_cgroup(getppid(), buf, sizeof(buf));
	CHECK(!strcmp(buf, "0::/..\n"), "the parent seen from the namespace: %s", buf);
	/* Below the namespace root. */
	CHECK_RET(mkdir(sub(C, "sub"), 0755), 0);
	CHECK_RET(writef(sub(C, "sub/cgroup.procs"), "0"), 0);
	proc_cgroup(0, buf, sizeof(buf));
	CHECK(!strcmp(buf, "0::/sub\n"), "in sub: %s", buf);
	/* A cgroup2 mount made inside shows the hierarchy from the namespace's root. */
	CHECK_RET(mount("none", CG2, "cgroup2", 0, NULL), 0);
	CHECK(stat(CG2, &a) == 0 && stat(C, &b) == 0 && a.st_ino == b.st_ino &&
		      a.st_dev == b.st_dev,
	      "the mount's root is not the namespace's root cgroup");
	CHECK_RET(access(sub(CG2, "sub/cgroup.procs"), F_OK), 0);
	CHECK_ERR(access(sub(CG2, NAME), F_OK), ENOENT);
	CHECK(readf(sub(CG2, "sub/cgroup.procs"), buf, sizeof(buf)) > 0 &&
		      atoi(buf) == (int)getpid(),
	      "sub's cgroup.procs: %s", buf);
	CHECK(mountinfo_line(CG2, line, sizeof(line)) &&
		      sscanf(line, "%*s %*s %*s %511s", root) == 1 && !strcmp(root, "/"),
	      "mountinfo: %s", line);
	CHECK_RET(umount(CG2), 0);
	if (write(to_parent[1], &child_ns, sizeof(child_ns)) != sizeof(child_ns))
		_exit(3);
	/* Stay (in sub) until body has looked: its end of the pipe closes. */
	while (read(to_child[0], buf, 1) > 0)
		;
}

/* setns(2) into the child's namespace, from a process in the hierarchy's root. */
static void check_setns(pid_t c)
{
	char p[64], buf[256];
	int fd;

	snprintf(p, sizeof(p), "/proc/%d/ns/cgroup", (int)c);
	fd = open(p, O_RDONLY);
	CHECK(fd >= 0, "open %s: %s", p, strerror(errno));
	CHECK_ERR(setns(fd, CLONE_NEWUTS), EINVAL);
	CHECK_RET(setns(fd, CLONE_NEWCGROUP), 0);
	CHECK(ns_ino(0) == child_ns, "after setns: %lu, want %lu", (unsigned long)ns_ino(0),
	      (unsigned long)child_ns);
	/* Membership is unchanged: this process is above the namespace's root. */
	proc_cgroup(0, buf, sizeof(buf));
	CHECK(!strcmp(buf, "0::/..\n"), "after setns: %s", buf);
	proc_cgroup(c, buf, sizeof(buf));
	CHECK(!strcmp(buf, "0::/sub\n"), "the child after setns: %s", buf);
	close(fd);
}

static pid_t setns_target;

static void check_setns_child(void)
{
	check_setns(setns_target);
}

/* Without CAP_SYS_ADMIN: EPERM. */
static void check_unprivileged(void)
{
	CHECK_RET(setresgid(65534, 65534, 65534), 0);
	CHECK_RET(setresuid(65534, 65534, 65534), 0);
	CHECK_ERR(unshare(CLONE_NEWCGROUP), EPERM);
}

static void body(void)
{
	char buf[512], want[256];
	pid_t c;
	int st;

	top = getpid();
	if (!mountns_enter(T, sizeof(T)))
		return;
	snprintf(CG, sizeof(CG), "%s/cg", T);
	snprintf(CG2, sizeof(CG2), "%s/cg2", T);
	CHECK_RET(mkdir(CG, 0755), 0);
	CHECK_RET(mkdir(CG2, 0755), 0);
	CHECK_RET(mount("none", CG, "cgroup2", 0, NULL), 0);
	proc_cgroup(0, buf, sizeof(buf));
	if (strcmp(buf, "0::/\n")) {
		printf("skip: this process is not in the v2 root (%s): paths would differ\n", buf);
		return;
	}
	snprintf(NAME, sizeof(NAME), "husk-cgns-%d", (int)getpid());
	snprintf(C, sizeof(C), "%s/%s", CG, NAME);
	if (mkdir(C, 0755) < 0) {
		printf("skip: the v2 hierarchy is not writable here (%s): no cgroup namespace "
		       "checks\n",
		       strerror(errno));
		return;
	}
	if (pipe(to_parent) < 0 || pipe(to_child) < 0)
		abort();
	fflush(stdout);
	c = fork();
	if (c == 0) {
		checks_passed = checks_failed = 0;
		close(to_child[1]);
		close(to_parent[0]);
		child();
		fflush(stdout);
		_exit(checks_failed ? 1 : 0);
	}
	CHECK(c > 0, "fork: %s", strerror(errno));
	if (c < 0)
		return;
	close(to_child[0]);
	close(to_parent[1]);
	if (read(to_parent[0], &child_ns, sizeof(child_ns)) == sizeof(child_ns)) {
		/* From the initial namespace: the full path. */
		snprintf(want, sizeof(want), "0::/%s/sub\n", NAME);
		proc_cgroup(c, buf, sizeof(buf));
		CHECK(!strcmp(buf, want), "the child from outside: %s", buf);
		CHECK(ns_ino(c) == child_ns, "/proc/%d/ns/cgroup: %lu, want %lu", (int)c,
		      (unsigned long)ns_ino(c), (unsigned long)child_ns);
		CHECK(ns_ino(0) != child_ns, "the parent's namespace changed");
		setns_target = c;
		mountns_child(check_setns_child, "setns");
	} else {
		CHECK(0, "the child stopped early");
	}
	close(to_child[1]);
	CHECK(waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed");
	mountns_child(check_unprivileged, "unprivileged");
	CHECK_RET(rmdir(sub(C, "sub")), 0);
	CHECK_RET(rmdir(C), 0);
}

int main(void)
{
	return mountns_main("cgroupns", body);
}
