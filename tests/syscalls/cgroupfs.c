/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cgroup v2 (issue 17): a cgroup2 mount in a private mount namespace; mkdir and rmdir of a
 * child cgroup, its interface files, cgroup.subtree_control's rules, moving a forked process
 * (cgroup.procs, /proc/PID/cgroup, cgroup.events), EBUSY rmdir, cgroup.kill, clone3's
 * CLONE_INTO_CGROUP, and, where the root offers the pids controller, pids.max at fork and the
 * "no internal processes" rule. Natively (as root) the child cgroup is made in the host's v2
 * hierarchy only when it is writable, and removed at the end; on a hybrid host whose v2 root
 * has no pids controller, the pids checks are skipped (said so).
 */

#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include "cgfile.h"
#include "mountns.h"

#define CGROUP2_SUPER_MAGIC 0x63677270

static char CG[256], C[300]; /* the mount, the child cgroup */

static char *cpath(const char *dir, const char *file)
{
	static char bufs[4][512];
	static int i;
	char *b = bufs[i++ % 4];

	snprintf(b, 512, "%s/%s", dir, file);
	return b;
}

static bool has_word(const char *list, const char *w)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", list);
	for (char *t = strtok_r(buf, " \n", &save); t; t = strtok_r(NULL, " \n", &save))
		if (!strcmp(t, w))
			return true;
	return false;
}

/* A child that waits: each byte read from cmd is a command ('f': fork once and report errno
 * (0 on success) on rep; EOF: exit). */
struct waiter {
	pid_t pid;
	int cmd, rep;
};

static void waiter_start(struct waiter *w)
{
	int a[2], b[2];

	if (pipe(a) < 0 || pipe(b) < 0)
		abort();
	fflush(stdout);
	w->pid = fork();
	if (w->pid == 0) {
		char c;

		close(a[1]);
		close(b[0]);
		while (read(a[0], &c, 1) == 1) {
			pid_t p = fork();
			int e = p < 0 ? errno : 0;

			if (p == 0)
				_exit(0);
			if (p > 0)
				waitpid(p, NULL, 0);
			if (write(b[1], &e, sizeof(e)) != sizeof(e))
				_exit(1);
		}
		_exit(0);
	}
	close(a[0]);
	close(b[1]);
	w->cmd = a[1];
	w->rep = b[0];
}

/* The waiter's fork: 0 or the errno its fork failed with. */
static int waiter_fork(struct waiter *w)
{
	int e = -1;

	if (write(w->cmd, "f", 1) != 1 || read(w->rep, &e, sizeof(e)) != sizeof(e))
		return -1;
	return e;
}

static void waiter_stop(struct waiter *w)
{
	close(w->cmd);
	close(w->rep);
	waitpid(w->pid, NULL, 0);
}

static void check_mount(void)
{
	char line[1024], f[64];
	struct statfs st;

	CHECK_RET(mount("none", CG, "cgroup2", 0, NULL), 0);
	CHECK(mountinfo_line(CG, line, sizeof(line)) && strstr(line, " - cgroup2 "),
	      "mountinfo: %s", line);
	CHECK(statfs(CG, &st) == 0 && st.f_type == CGROUP2_SUPER_MAGIC, "f_type %lx",
	      (long)st.f_type);
	/* One hierarchy: a second mount is the same filesystem (st_dev, inode numbers). */
	char cg2[300];
	struct stat s1, s2;
	snprintf(cg2, sizeof(cg2), "%s2", CG);
	CHECK_RET(mkdir(cg2, 0755), 0);
	CHECK_RET(mount("none", cg2, "cgroup2", 0, NULL), 0);
	CHECK(stat(cpath(CG, "cgroup.procs"), &s1) == 0 &&
		      stat(cpath(cg2, "cgroup.procs"), &s2) == 0 && s1.st_dev == s2.st_dev &&
		      s1.st_ino == s2.st_ino,
	      "two mounts: %lx/%lu and %lx/%lu", (long)s1.st_dev, (unsigned long)s1.st_ino,
	      (long)s2.st_dev, (unsigned long)s2.st_ino);
	CHECK_RET(umount(cg2), 0);
	const char *root_files[] = { "cgroup.controllers",     "cgroup.procs",
				     "cgroup.subtree_control", "cgroup.stat",
				     "cgroup.max.depth",       "cgroup.max.descendants",
				     "cgroup.threads",	       "cpu.stat" };
	for (size_t i = 0; i < sizeof(root_files) / sizeof(root_files[0]); i++)
		CHECK(access(cpath(CG, root_files[i]), F_OK) == 0, "root lacks %s", root_files[i]);
	/* Not on the root. */
	CHECK_ERR(access(cpath(CG, "cgroup.type"), F_OK), ENOENT);
	CHECK_ERR(access(cpath(CG, "cgroup.events"), F_OK), ENOENT);
	CHECK_ERR(access(cpath(CG, "cgroup.kill"), F_OK), ENOENT);
	char p[256];
	CHECK(readf(cpath(CG, "cpu.pressure"), p, sizeof(p)) > 0 && !strncmp(p, "some avg10=", 11),
	      "cpu.pressure %s", p);
	/* The root's cgroup.procs holds this process (natively, among every other). */
	char *procs = malloc(1 << 20);
	snprintf(f, sizeof(f), "%d\n", getpid());
	CHECK(procs && readf(cpath(CG, "cgroup.procs"), procs, 1 << 20) > 0 &&
		      (strstr(procs, f) == procs || strstr(procs, f + 0)),
	      "root cgroup.procs lacks %d", getpid());
	free(procs);
	/* Files cannot be made, nor interface files removed. */
	CHECK(open(cpath(CG, "newfile"), O_CREAT | O_WRONLY, 0644) == -1, "created a file");
	CHECK_ERR(unlink(cpath(CG, "cgroup.procs")), EPERM);
	CHECK_ERR(rmdir(cpath(CG, "cgroup.procs")), ENOTDIR);
}

static void check_child_files(void)
{
	char buf[512], sub[256];

	CHECK(readf(cpath(C, "cgroup.type"), buf, sizeof(buf)) > 0 && !strcmp(buf, "domain\n"),
	      "cgroup.type %s", buf);
	CHECK(readf(cpath(C, "cgroup.events"), buf, sizeof(buf)) > 0 &&
		      !strncmp(buf, "populated 0\nfrozen 0\n", 21),
	      "cgroup.events %s", buf);
	CHECK(readf(cpath(C, "cgroup.freeze"), buf, sizeof(buf)) > 0 && !strcmp(buf, "0\n"),
	      "cgroup.freeze %s", buf);
	CHECK(readf(cpath(C, "cgroup.max.depth"), buf, sizeof(buf)) > 0 && !strcmp(buf, "max\n"),
	      "cgroup.max.depth %s", buf);
	CHECK(readf(cpath(C, "cgroup.stat"), buf, sizeof(buf)) > 0 &&
		      !strncmp(buf, "nr_descendants 0\n", 17),
	      "cgroup.stat %s", buf);
	CHECK(readf(cpath(C, "cgroup.procs"), buf, sizeof(buf)) == 0, "cgroup.procs %s", buf);
	CHECK(access(cpath(C, "cgroup.kill"), F_OK) == 0, "no cgroup.kill");
	/* Writing a read-only file (root may open it): EINVAL; reading cgroup.kill too. */
	CHECK_ERR(writef(cpath(C, "cgroup.controllers"), "x"), EINVAL);
	int kfd = open(cpath(C, "cgroup.kill"), O_RDONLY);
	CHECK(kfd >= 0, "open cgroup.kill: %s", strerror(errno));
	CHECK_ERR(read(kfd, buf, sizeof(buf)), EINVAL);
	close(kfd);
	/* A child's controllers are its parent's subtree_control. */
	CHECK(readf(cpath(CG, "cgroup.subtree_control"), sub, sizeof(sub)) >= 0 &&
		      readf(cpath(C, "cgroup.controllers"), buf, sizeof(buf)) >= 0 &&
		      !strcmp(sub, buf),
	      "controllers '%s' vs parent subtree_control '%s'", buf, sub);
	/* An unknown controller: EINVAL; one not in cgroup.controllers: ENOENT. */
	CHECK_ERR(writef(cpath(C, "cgroup.subtree_control"), "+nosuch"), EINVAL);
	CHECK_ERR(writef(cpath(C, "cgroup.subtree_control"), "memory"), EINVAL);
	if (!has_word(buf, "pids"))
		CHECK_ERR(writef(cpath(C, "cgroup.subtree_control"), "+pids"), ENOENT);
	CHECK_RET(writef(cpath(C, "cgroup.max.descendants"), "0"), 0);
	CHECK_ERR(mkdir(cpath(C, "sub"), 0755), EAGAIN);
	CHECK_RET(writef(cpath(C, "cgroup.max.descendants"), "max"), 0);
	CHECK_RET(mkdir(cpath(C, "sub"), 0755), 0);
	CHECK(readf(cpath(C, "cgroup.stat"), buf, sizeof(buf)) > 0 &&
		      !strncmp(buf, "nr_descendants 1\n", 17),
	      "cgroup.stat %s", buf);
	CHECK_ERR(rmdir(C), EBUSY); /* a child cgroup */
	CHECK_ERR(mkdir(cpath(C, "sub"), 0755), EEXIST);
	CHECK_ERR(mkdir(cpath(C, "cgroup.procs"), 0755), EEXIST);
	CHECK_RET(rmdir(cpath(C, "sub")), 0);
	CHECK_ERR(rmdir(cpath(C, "sub")), ENOENT);
}

static void check_move(void)
{
	char buf[512], want[64], path[64];
	struct waiter w;
	int st;

	waiter_start(&w);
	snprintf(want, sizeof(want), "%d", w.pid);
	CHECK_RET(writef(cpath(C, "cgroup.procs"), want), 0);
	strcat(want, "\n");
	CHECK(readf(cpath(C, "cgroup.procs"), buf, sizeof(buf)) > 0 && !strcmp(buf, want),
	      "cgroup.procs '%s'", buf);
	CHECK(readf(cpath(C, "cgroup.threads"), buf, sizeof(buf)) > 0 && !strcmp(buf, want),
	      "cgroup.threads '%s'", buf);
	snprintf(path, sizeof(path), "/proc/%d/cgroup", w.pid);
	CHECK(readf(path, buf, sizeof(buf)) > 0 && strstr(buf, "0::/") &&
		      strstr(buf, strrchr(C, '/')) &&
		      strstr(buf, strrchr(C, '/'))[strlen(strrchr(C, '/'))] == '\n',
	      "%s: %s", path, buf);
	CHECK(readf(cpath(C, "cgroup.events"), buf, sizeof(buf)) > 0 &&
		      !strncmp(buf, "populated 1\n", 12),
	      "cgroup.events %s", buf);
	CHECK_ERR(rmdir(C), EBUSY); /* a process */
	/* Its fork stays in the cgroup: the waiter's forks work (no limit). */
	CHECK_RET(waiter_fork(&w), 0);
	/* Back to the root, then into C again; a bad pid is ESRCH, garbage EINVAL. */
	CHECK_RET(writef(cpath(CG, "cgroup.procs"), want), 0);
	CHECK(readf(cpath(C, "cgroup.procs"), buf, sizeof(buf)) == 0, "cgroup.procs '%s'", buf);
	CHECK_ERR(writef(cpath(C, "cgroup.procs"), "abc"), EINVAL);
	CHECK_ERR(writef(cpath(C, "cgroup.procs"), "99999999"), ESRCH);
	CHECK_RET(writef(cpath(C, "cgroup.procs"), want), 0);
	/* cgroup.kill: SIGKILL for every process below. */
	CHECK_ERR(writef(cpath(C, "cgroup.kill"), "2"), ERANGE);
	CHECK_RET(writef(cpath(C, "cgroup.kill"), "1"), 0);
	CHECK(waitpid(w.pid, &st, 0) == w.pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
	      "status %x", st);
	close(w.cmd);
	close(w.rep);
	CHECK(readf(cpath(C, "cgroup.procs"), buf, sizeof(buf)) == 0, "cgroup.procs '%s'", buf);
}

/* clone3 with CLONE_INTO_CGROUP: the child starts in C. */
static void check_clone_into(void)
{
	struct clone_args ca = { 0 };
	int fd = open(C, O_RDONLY | O_DIRECTORY);
	char buf[512];
	int st;
	long pid;

	CHECK(fd >= 0, "open %s: %s", C, strerror(errno));
	ca.flags = CLONE_INTO_CGROUP;
	ca.exit_signal = SIGCHLD;
	ca.cgroup = (uint64_t)fd;
	fflush(stdout);
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0) {
		const char *name = strrchr(C, '/');
		char *p;

		if (readf("/proc/self/cgroup", buf, sizeof(buf)) <= 0)
			_exit(2);
		p = strstr(buf, name);
		_exit(p && p[strlen(name)] == '\n' ? 0 : 3);
	}
	CHECK(pid > 0 && waitpid((pid_t)pid, &st, 0) == pid && WIFEXITED(st) &&
		      WEXITSTATUS(st) == 0,
	      "clone3 into cgroup: %ld %x", pid, st);
	/* A regular file's fd is EBADF. */
	int ffd = open(cpath(C, "cgroup.procs"), O_RDONLY);
	ca.cgroup = (uint64_t)ffd;
	CHECK_ERR(syscall(SYS_clone3, &ca, sizeof(ca)), EBADF);
	close(ffd);
	close(fd);
}

/* As uid 1000 in a forked child: writes s to path; 0 or the errno. */
static int write_as_user(const char *path, const char *s)
{
	pid_t pid;
	int st;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		if (setresgid(1000, 1000, 1000) < 0 || setresuid(1000, 1000, 1000) < 0)
			_exit(100);
		_exit(writef(path, s) < 0 ? errno : 0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/*
 * Delegation: a user given (chown) the cgroup.procs of C, C/a and C/b moves a process between
 * C/a and C/b, but not into C from the root (the common ancestor's cgroup.procs is root's).
 */
static void check_delegation(void)
{
	char a[320], b[320], want[32], buf[64];
	struct waiter w;
	struct stat st;

	snprintf(a, sizeof(a), "%s/a", C);
	snprintf(b, sizeof(b), "%s/b", C);
	CHECK_RET(mkdir(a, 0755), 0);
	CHECK_RET(mkdir(b, 0755), 0);
	CHECK_RET(chown(cpath(C, "cgroup.procs"), 1000, 1000), 0);
	CHECK_RET(chown(cpath(a, "cgroup.procs"), 1000, 1000), 0);
	CHECK_RET(chown(cpath(b, "cgroup.procs"), 1000, 1000), 0);
	CHECK(stat(cpath(a, "cgroup.procs"), &st) == 0 && st.st_uid == 1000 && st.st_gid == 1000 &&
		      (st.st_mode & 07777) == 0644,
	      "chown: %u:%u %o", st.st_uid, st.st_gid, st.st_mode);
	CHECK(stat(cpath(a, "cgroup.type"), &st) == 0 && st.st_uid == 0, "cgroup.type's owner %u",
	      st.st_uid);
	CHECK_RET(chmod(cpath(a, "cgroup.type"), 0600), 0);
	CHECK(stat(cpath(a, "cgroup.type"), &st) == 0 && (st.st_mode & 07777) == 0600, "chmod: %o",
	      st.st_mode);
	waiter_start(&w);
	snprintf(want, sizeof(want), "%d", w.pid);
	CHECK_RET(write_as_user(cpath(C, "cgroup.procs"), want), EACCES);
	CHECK_RET(writef(cpath(a, "cgroup.procs"), want), 0);
	CHECK_RET(write_as_user(cpath(b, "cgroup.procs"), want), 0);
	strcat(want, "\n");
	CHECK(readf(cpath(b, "cgroup.procs"), buf, sizeof(buf)) > 0 && !strcmp(buf, want),
	      "b's cgroup.procs '%s'", buf);
	/* Not given a's: the move back is refused. */
	CHECK_RET(chown(cpath(a, "cgroup.procs"), 0, 0), 0);
	CHECK_RET(write_as_user(cpath(a, "cgroup.procs"), want), EACCES);
	waiter_stop(&w);
	CHECK_RET(rmdir(a), 0);
	CHECK_RET(rmdir(b), 0);
}

/* With the pids controller offered by the root: the "no internal processes" rule, pids.max. */
static void check_pids(void)
{
	char buf[512], sub[256], want[32];
	bool enabled_here = false;
	struct waiter w;

	if (readf(cpath(CG, "cgroup.controllers"), buf, sizeof(buf)) < 0 ||
	    !has_word(buf, "pids")) {
		printf("skip: the v2 root offers no pids controller (a hybrid host): no pids.max checks\n");
		return;
	}
	readf(cpath(CG, "cgroup.subtree_control"), sub, sizeof(sub));
	if (!has_word(sub, "pids")) {
		CHECK_RET(writef(cpath(CG, "cgroup.subtree_control"), "+pids"), 0);
		enabled_here = true;
	}
	CHECK(readf(cpath(C, "cgroup.controllers"), buf, sizeof(buf)) > 0 && has_word(buf, "pids"),
	      "controllers %s", buf);
	CHECK(readf(cpath(C, "pids.max"), buf, sizeof(buf)) > 0 && !strcmp(buf, "max\n"),
	      "pids.max %s", buf);
	waiter_start(&w);
	snprintf(want, sizeof(want), "%d", w.pid);
	CHECK_RET(writef(cpath(C, "cgroup.procs"), want), 0);
	CHECK(readf(cpath(C, "pids.current"), buf, sizeof(buf)) > 0 && !strcmp(buf, "1\n"),
	      "pids.current %s", buf);
	/* No internal processes: C has one, so no controller for its children. */
	CHECK_ERR(writef(cpath(C, "cgroup.subtree_control"), "+pids"), EBUSY);
	CHECK_RET(writef(cpath(C, "pids.max"), "1"), 0);
	CHECK(readf(cpath(C, "pids.max"), buf, sizeof(buf)) > 0 && !strcmp(buf, "1\n"),
	      "pids.max %s", buf);
	CHECK_RET(waiter_fork(&w), EAGAIN);
	CHECK_RET(writef(cpath(C, "pids.max"), "2"), 0);
	CHECK_RET(waiter_fork(&w), 0);
	CHECK_RET(writef(cpath(C, "pids.max"), "max"), 0);
	CHECK_ERR(writef(cpath(C, "pids.max"), "-1"), EINVAL);
	waiter_stop(&w);
	if (enabled_here)
		CHECK_RET(writef(cpath(CG, "cgroup.subtree_control"), "-pids"), 0);
}

static void body(void)
{
	if (!mountns_enter(T, sizeof(T)))
		return;
	snprintf(CG, sizeof(CG), "%s/cg", T);
	CHECK_RET(mkdir(CG, 0755), 0);
	check_mount();
	snprintf(C, sizeof(C), "%s/husk-cgfs-%d", CG, getpid());
	if (mkdir(C, 0755) < 0) {
		printf("skip: the v2 hierarchy is not writable here (%s): no child cgroup\n",
		       strerror(errno));
		return;
	}
	check_child_files();
	check_clone_into();
	check_move();
	check_pids();
	check_delegation();
	int dfd = open(C, O_RDONLY | O_DIRECTORY);
	CHECK(dfd >= 0 && faccessat(dfd, "cgroup.procs", F_OK, 0) == 0, "open %s", C);
	CHECK_RET(rmdir(C), 0);
	CHECK_ERR(access(C, F_OK), ENOENT);
	/* A removed cgroup's open directory has no files left. */
	CHECK_ERR(faccessat(dfd, "cgroup.procs", F_OK, 0), ENOENT);
	CHECK_ERR(mkdirat(dfd, "x", 0755), ENOENT);
	close(dfd);
}

int main(void)
{
	return mountns_main("cgroupfs", body);
}
