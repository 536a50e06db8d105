/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Nested pid namespaces (man 7 pid_namespaces): clone and unshare with CLONE_NEWPID and their
 * errors, the numbering (the first process is 1, its parent outside is 0, the creator sees the
 * outer pid), three levels with the NSpid lines of /proc/self/status in a proc mounted inside,
 * kill and waitpid across the boundary (si_pid 0 from outside, ESRCH for an outer pid), init's
 * signal rules, init's death killing the rest, orphans re-parented to the namespace's init and
 * reaped by it, a proc mount listing only the namespace's pids, the ns/pid identities,
 * setns(CLONE_NEWPID), and an unprivileged unshare(CLONE_NEWUSER | CLONE_NEWPID).
 *
 * Every scenario runs in a child, and proc is mounted only in a private mount namespace on a
 * directory of its own, so that a native run never changes the host's /proc.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static char procdir[64]; /* a private directory for the proc mounts */

/* fork(2) with extra clone flags (the child runs on a copy of the stack, as fork). */
static pid_t fork_flags(unsigned long flags)
{
	return (pid_t)syscall(SYS_clone, flags | SIGCHLD, 0, NULL, NULL, 0);
}

/* Waits for pid; returns its wait status, or -1. */
static int wait_status(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return st;
}

static int counts_fd = -1; /* a scenario's child writes its pass and fail counts here */

/*
 * Runs fn in a child made with clone flags (as pid 1 of a new pid namespace with
 * CLONE_NEWPID) and adds its checks to ours.
 */
static void run_child(int (*fn)(void), unsigned long flags, const char *what)
{
	int p[2], c[2] = { 0, 0 };
	pid_t pid;
	int st;

	if (pipe(p) < 0)
		return;
	fflush(stdout);
	pid = fork_flags(flags);
	if (pid == 0) {
		close(p[0]);
		counts_fd = p[1];
		fn();
		c[0] = checks_passed;
		c[1] = checks_failed;
		fflush(stdout);
		_exit(write(p[1], c, sizeof(c)) == sizeof(c) ? 0 : 1);
	}
	close(p[1]);
	CHECK(pid > 0, "%s: clone: %s", what, strerror(errno));
	if (read(p[0], c, sizeof(c)) == sizeof(c)) {
		checks_passed = c[0];
		checks_failed = c[1];
	} else {
		CHECK(0, "%s: the child reported nothing", what);
	}
	close(p[0]);
	st = wait_status(pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: child status %#x", what, st);
}

#define in_child(fn, what) run_child(fn, 0, what)
#define in_new_ns(fn, what) run_child(fn, CLONE_NEWPID | CLONE_NEWNS, what)

/* A child's own checks: it prints its failures; its exit code is whether any failed. */
static int child_result(void)
{
	fflush(stdout);
	return checks_failed;
}

/* The Name: value line of /proc/self/status under proc mount dir (NUL-terminated value). */
static int status_line(const char *dir, const char *pid, const char *name, char *out, size_t len)
{
	char path[128], buf[4096], *p, *e;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s/status", dir, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = '\0';
	p = buf;
	while (p && *p) {
		size_t l = strlen(name);

		if (!strncmp(p, name, l) && p[l] == ':') {
			p += l + 1;
			while (*p == '\t' || *p == ' ')
				p++;
			e = strchr(p, '\n');
			if (e)
				*e = '\0';
			snprintf(out, len, "%s", p);
			return 0;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -ENOENT;
}

/* Makes the mount tree private and mounts a proc of the caller's pid namespace on procdir. */
static int mount_proc(void)
{
	if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	if (mount("proc", procdir, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return -errno;
	return 0;
}

/* The numeric entries of procdir, sorted, in out (at most max); returns their count. */
static int list_pids(int *out, int max)
{
	DIR *d = opendir(procdir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char *end;
		long v = strtol(de->d_name, &end, 10);

		if (*end || v <= 0 || n >= max)
			continue;
		out[n++] = (int)v;
	}
	closedir(d);
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && out[j - 1] > out[j]; j--) {
			int x = out[j];

			out[j] = out[j - 1];
			out[j - 1] = x;
		}
	return n;
}

/* --- numbering, errors --- */

static int numbering(void)
{
	int p[2];
	pid_t pid, seen = 0;
	int st;

	CHECK_OK(pipe(p));
	pid = fork_flags(CLONE_NEWPID);
	if (pid == 0) {
		pid_t me = getpid();

		/* The child reports what it sees: pid, tid, ppid. */
		int v[3] = { (int)me, (int)syscall(SYS_gettid), (int)getppid() };

		if (write(p[1], v, sizeof(v)) != sizeof(v))
			_exit(2);
		_exit(me == 1 ? 0 : 3);
	}
	CHECK(pid > 1, "clone(CLONE_NEWPID): %d (%s)", (int)pid, strerror(errno));
	if (pid > 0) {
		int v[3] = { 0 };

		CHECK_RET(read(p[0], v, sizeof(v)), sizeof(v));
		CHECK(v[0] == 1 && v[1] == 1, "child's getpid %d gettid %d, want 1", v[0], v[1]);
		CHECK(v[2] == 0, "child's getppid %d, want 0 (its parent is outside)", v[2]);
		/* The parent sees the outer pid, in waitpid too. */
		seen = waitpid(pid, &st, 0);
		CHECK(seen == pid, "waitpid %d, want %d", (int)seen, (int)pid);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	}
	close(p[0]);
	close(p[1]);
	/* Linux's copy_process: no new pid namespace for a thread. */
	CHECK_ERR(syscall(SYS_clone, CLONE_NEWPID | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM, 0,
			  NULL, NULL, 0),
		  EINVAL);
	return child_result();
}

static int unshare_pid(void)
{
	pid_t me = getpid(), pid, pid2;
	int st;

	CHECK_OK(unshare(CLONE_NEWPID));
	/* The caller stays where it is. */
	CHECK_RET(getpid(), me);
	/* A second one before entering the first: EINVAL (Linux's copy_pid_ns). */
	CHECK_ERR(unshare(CLONE_NEWPID), EINVAL);
	/* Threads stay in their process's namespace: none may be made now. */
	CHECK_ERR(syscall(SYS_clone, CLONE_THREAD | CLONE_SIGHAND | CLONE_VM, 0, NULL, NULL, 0),
		  EINVAL);
	pid = fork();
	if (pid == 0)
		_exit(getpid() == 1 && getppid() == 0 ? 0 : 1);
	CHECK(pid > 0 && pid != 1, "fork after unshare: %d", (int)pid);
	st = wait_status(pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the first fork is 1: status %#x", st);
	/* Its pid 1 is gone: nothing enters the namespace any more (Linux: ENOMEM). */
	errno = 0;
	pid2 = fork();
	if (pid2 == 0)
		_exit(0);
	CHECK(pid2 == -1 && errno == ENOMEM, "fork after pid 1 died: %d (%s)", (int)pid2,
	      strerror(errno));
	if (pid2 > 0)
		wait_status(pid2);
	return child_result();
}

/* --- three levels, NSpid --- */

static int level3(void)
{
	char v[128];

	if (getpid() != 1)
		return 1;
	/* The proc of level 1 (mounted by its init), seen from level 3. */
	if (status_line(procdir, "self", "NSpid", v, sizeof(v)) < 0 || strcmp(v, "3\t2\t1"))
		return printf("FAIL level 3 NSpid '%s', want '3\\t2\\t1'\n", v), 1;
	if (status_line(procdir, "self", "NStgid", v, sizeof(v)) < 0 || strcmp(v, "3\t2\t1"))
		return printf("FAIL level 3 NStgid '%s'\n", v), 1;
	if (status_line(procdir, "self", "PPid", v, sizeof(v)) < 0 || strcmp(v, "2"))
		return printf("FAIL level 3 PPid '%s', want 2\n", v), 1;
	return 0;
}

static int level2(void)
{
	char v[128];
	pid_t c;
	int st;

	if (getpid() != 1)
		return 1;
	if (status_line(procdir, "self", "NSpid", v, sizeof(v)) < 0 || strcmp(v, "2\t1"))
		return printf("FAIL level 2 NSpid '%s', want '2\\t1'\n", v), 1;
	fflush(stdout);
	c = fork_flags(CLONE_NEWPID);
	if (c == 0)
		_exit(level3());
	if (c != 2)
		return printf("FAIL level 2 sees its child as %d, want 2\n", (int)c), 1;
	st = wait_status(c);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

static int nested(void)
{
	char v[128];
	pid_t c;
	int st, err;

	err = mount_proc();
	CHECK(err == 0, "mount proc in level 1: %s", strerror(-err));
	CHECK_RET(getpid(), 1);
	CHECK(status_line(procdir, "self", "NSpid", v, sizeof(v)) == 0 && !strcmp(v, "1"),
	      "level 1 NSpid '%s', want '1'", v);
	CHECK(status_line(procdir, "1", "Pid", v, sizeof(v)) == 0 && !strcmp(v, "1"),
	      "level 1 /proc/1/status Pid '%s'", v);
	fflush(stdout);
	c = fork_flags(CLONE_NEWPID);
	if (c == 0)
		_exit(level2());
	CHECK(c == 2, "level 1 sees its child as %d, want 2", (int)c);
	st = wait_status(c);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "levels 2 and 3: status %#x", st);
	umount(procdir);
	return child_result();
}

/* --- a proc mount inside, identities --- */

static int proc_inside(void)
{
	int p[2], pids[16], n, err;
	char buf[160], self[160];
	struct stat a, b;
	pid_t c;
	ssize_t l;

	err = mount_proc();
	CHECK(err == 0, "mount proc: %s", strerror(-err));
	CHECK_OK(pipe(p));
	c = fork();
	if (c == 0) {
		close(p[1]);
		(void)read(p[0], buf, 1); /* until the parent is done */
		_exit(0);
	}
	close(p[0]);
	n = list_pids(pids, 16);
	CHECK(n == 2 && pids[0] == 1 && pids[1] == 2, "pids listed: %d (%d %d)", n,
	      n > 0 ? pids[0] : -1, n > 1 ? pids[1] : -1);
	snprintf(self, sizeof(self), "%s/self", procdir);
	l = readlink(self, buf, sizeof(buf) - 1);
	CHECK(l == 1 && buf[0] == '1', "readlink self: %zd '%.*s'", l, (int)(l > 0 ? l : 0), buf);
	snprintf(self, sizeof(self), "%s/2/stat", procdir);
	{
		int fd = open(self, O_RDONLY), pid = 0, ppid = -1;
		char comm[64], state;

		CHECK(fd >= 0, "open %s: %s", self, strerror(errno));
		if (fd >= 0) {
			l = read(fd, buf, sizeof(buf) - 1);
			close(fd);
			buf[l > 0 ? l : 0] = '\0';
			CHECK(sscanf(buf, "%d %63s %c %d", &pid, comm, &state, &ppid) == 4 &&
				      pid == 2 && ppid == 1,
			      "/proc/2/stat: '%s'", buf);
		}
	}
	/* An outer pid names nothing here (the caller's parent is outside). */
	snprintf(self, sizeof(self), "%s/%d", procdir, (int)getppid() + 1000);
	CHECK_ERR(stat(self, &a), ENOENT);
	/* ns/pid: the same for the two processes of the namespace, another than the parent's. */
	snprintf(self, sizeof(self), "%s/1/ns/pid", procdir);
	snprintf(buf, sizeof(buf), "%s/2/ns/pid", procdir);
	CHECK(stat(self, &a) == 0 && stat(buf, &b) == 0 && a.st_ino == b.st_ino,
	      "ns/pid of 1 and 2 differ");
	close(p[1]);
	wait_status(c);
	umount(procdir);
	return child_result();
}

/* --- signals and waits across the boundary --- */

static volatile sig_atomic_t got_usr1;
static void on_usr1(int sig)
{
	(void)sig;
	got_usr1 = 1;
}

/* The init of across(): reports what it sees of signals. */
static int across_init(pid_t outer_parent, int rfd, int wfd)
{
	sigset_t set;
	siginfo_t si;
	struct timespec zero = { 0, 0 };
	pid_t c;
	int st, r = 0;
	char x;

	signal(SIGUSR1, on_usr1);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	/* An outer pid is not visible here (only 1 is ours yet). */
	if (outer_parent > 1 && !(kill(outer_parent, 0) == -1 && errno == ESRCH))
		r |= 1;
	/* Nor to the other calls that take a pid. */
	if (outer_parent > 1) {
		struct sched_param sp;

		if (!(sched_getparam(outer_parent, &sp) == -1 && errno == ESRCH) ||
		    !(getpgid(outer_parent) == -1 && errno == ESRCH) ||
		    !(syscall(SYS_pidfd_open, outer_parent, 0) == -1 && errno == ESRCH))
			r |= 1;
	}
	/* Its own numbers work with them. */
	if (getpgid(1) < 0 || syscall(SYS_tgkill, 1, 1, 0) != 0)
		r |= 1;
	/* A child inside: SIGTERM and SIGKILL to init without a handler are dropped; SIGUSR1
	 * (handled) arrives with the child's pid. */
	c = fork();
	if (c == 0) {
		kill(1, SIGTERM);
		kill(1, SIGKILL);
		kill(1, SIGUSR1);
		_exit(getppid() == 1 ? 0 : 1);
	}
	if (c != 2)
		r |= 2;
	/* Its exit, with its number here in SIGCHLD's siginfo (waitid). */
	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, c, &si, WEXITED) < 0 || si.si_pid != 2 || si.si_code != CLD_EXITED ||
	    si.si_status != 0)
		r |= 4;
	memset(&si, 0, sizeof(si));
	if (sigtimedwait(&set, &si, &zero) != SIGUSR1 || si.si_pid != 2)
		r |= 8;
	/* Now the outside sends SIGUSR1 (si_pid 0: from an ancestor namespace). */
	if (write(wfd, "r", 1) != 1)
		r |= 16;
	if (sigwaitinfo(&set, &si) != SIGUSR1 || si.si_pid != 0)
		r |= 32;
	if (write(wfd, "k", 1) != 1)
		r |= 16;
	/* Then SIGKILL from outside, which init cannot refuse: wait for it. */
	(void)read(rfd, &x, 1);
	(void)st;
	return r | 64; /* reached only if SIGKILL did not kill */
}

static int across(void)
{
	int down[2], up[2], st;
	pid_t c, me = getpid();
	char x;

	CHECK_OK(pipe(down));
	CHECK_OK(pipe(up));
	fflush(stdout);
	c = fork_flags(CLONE_NEWPID);
	if (c == 0) {
		close(down[1]);
		close(up[0]);
		_exit(across_init(me, down[0], up[1]));
	}
	close(down[0]);
	close(up[1]);
	/* Init's checks inside are done when it says "ready". */
	CHECK(read(up[0], &x, 1) == 1 && x == 'r', "init ready: %c", x);
	CHECK_OK(kill(c, SIGUSR1));
	CHECK(read(up[0], &x, 1) == 1 && x == 'k', "init got SIGUSR1: %c", x);
	CHECK_OK(kill(c, SIGKILL));
	st = wait_status(c);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
	      "init killed from outside: status %#x (exit bits: 1 outer pid visible, 2 child "
	      "not 2, 4 waitid, 8 SIGUSR1 from inside, 32 SIGUSR1 from outside)",
	      st);
	close(down[1]);
	close(up[0]);
	return child_result();
}

/* --- init's death, orphans --- */

static int death(void)
{
	int alive[2], st;
	pid_t c;
	char x;

	CHECK_OK(pipe(alive));
	fflush(stdout);
	c = fork_flags(CLONE_NEWPID);
	if (c == 0) {
		pid_t g = fork();

		if (g == 0) {
			/* Holds alive[1] until killed. */
			close(alive[0]);
			for (;;)
				pause();
		}
		close(alive[1]);
		_exit(g == 2 ? 0 : 1);
	}
	close(alive[1]);
	st = wait_status(c);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "init: status %#x", st);
	/* Once its parent saw init die, the namespace's other processes are gone. */
	fcntl(alive[0], F_SETFL, O_NONBLOCK);
	errno = 0;
	CHECK(read(alive[0], &x, 1) == 0, "the grandchild still holds the pipe (%s)",
	      strerror(errno));
	close(alive[0]);
	return child_result();
}

static int orphan_init(void)
{
	int go[2], r = 0;
	pid_t a, reaped;
	int st;
	char x;

	if (pipe(go) < 0)
		return 1;
	a = fork();
	if (a == 0) {
		pid_t b = fork();

		if (b == 0) {
			close(go[1]);
			if (read(go[0], &x, 1) != 1)
				_exit(5);
			/* Re-parented to the namespace's init (1), not outside. */
			_exit(getppid() == 1 ? 0 : 6);
		}
		_exit(b == 3 ? 0 : 7);
	}
	close(go[0]);
	st = wait_status(a);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		r |= 1;
	if (write(go[1], "g", 1) != 1)
		r |= 2;
	/* init reaps the orphan. */
	reaped = waitpid(-1, &st, 0);
	if (reaped != 3 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		r |= 4;
	return r;
}

static int orphans(void)
{
	pid_t c;
	int st;

	fflush(stdout);
	c = fork_flags(CLONE_NEWPID);
	if (c == 0)
		_exit(orphan_init());
	st = wait_status(c);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "orphans: status %#x (1: middle child, 2: pipe, 4: init did not reap 3)", st);
	return child_result();
}

/* --- setns, unprivileged --- */

static int setns_pid(void)
{
	int p[2], fd, st;
	char path[64], x = 0;
	pid_t c, g;

	CHECK_OK(pipe(p));
	fflush(stdout);
	c = fork_flags(CLONE_NEWPID);
	if (c == 0) {
		close(p[1]);
		(void)read(p[0], &x, 1);
		_exit(0);
	}
	close(p[0]);
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)c);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
	CHECK_OK(setns(fd, CLONE_NEWPID));
	/* The caller stays; its next child enters the child's namespace as 2. */
	g = fork();
	if (g == 0)
		_exit(getpid() == 2 && getppid() == 0 ? 0 : 1);
	st = wait_status(g);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child after setns: status %#x", st);
	/* Back to its own: allowed; the next child is in it again. */
	close(fd);
	fd = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
	CHECK_OK(setns(fd, CLONE_NEWPID));
	close(fd);
	g = fork();
	if (g == 0)
		_exit(getppid() != 0 && getpid() != 1 ? 0 : 1);
	st = wait_status(g);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child after setns back: status %#x", st);
	/* A file of another type: EINVAL. */
	fd = open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC);
	CHECK_ERR(setns(fd, CLONE_NEWPID), EINVAL);
	close(fd);
	close(p[1]);
	wait_status(c);
	return child_result();
}

static int unprivileged(void)
{
	pid_t c;
	int st;

	if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
	    setresuid(65534, 65534, 65534) < 0) {
		printf("FAIL drop to 65534: %s\n", strerror(errno));
		return 1;
	}
	CHECK_ERR(unshare(CLONE_NEWPID), EPERM);
	CHECK_OK(unshare(CLONE_NEWUSER | CLONE_NEWPID));
	c = fork();
	if (c == 0)
		_exit(getpid() == 1 ? 0 : 1);
	st = wait_status(c);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "pid 1 in the user's namespace: %#x", st);
	return child_result();
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		printf("SKIP: pid namespaces need root (CAP_SYS_ADMIN)\n");
		return finish();
	}
	snprintf(procdir, sizeof(procdir), "/tmp/pidns-proc-XXXXXX");
	if (!mkdtemp(procdir)) {
		printf("FAIL mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	in_child(numbering, "numbering");
	in_child(unshare_pid, "unshare");
	in_new_ns(nested, "three levels");
	in_new_ns(proc_inside, "proc inside");
	in_child(across, "signals across");
	in_child(death, "init's death");
	in_child(orphans, "orphans");
	in_child(setns_pid, "setns");
	in_child(unprivileged, "unprivileged");
	rmdir(procdir);
	return finish();
}
