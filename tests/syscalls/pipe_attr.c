/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Attributes of an anonymous pipe's inode, as buildah changes them before it runs a build step
 * (it chowns the stdin pipe it hands runc to the container's user): fchown, fchmod and futimens
 * of either end, seen by fstat of both ends (one inode) and through /proc/self/fd/N (chown of the
 * magic link reaches the pipe); Linux's rules for a caller without CAP_CHOWN/CAP_FOWNER (a
 * forked child as uid 65534): EPERM for another's pipe or another owner, its own pipe's mode and
 * group changeable; the mode enforced when the pipe is opened again through /proc/self/fd/N.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static void fd_link(int fd, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
}

/* Root (with CAP_CHOWN and CAP_FOWNER): every change is kept on the one inode of both ends. */
static void as_root(void)
{
	struct timespec ts[2] = { { 1000000000, 5 }, { 1200000000, 7 } };
	struct stat r, w;
	char link[64];
	int p[2];

	if (CHECK_OK(pipe(p)) < 0)
		return;
	CHECK_OK(fstat(p[0], &r));
	CHECK(S_ISFIFO(r.st_mode) && (r.st_mode & 07777) == 0600, "new pipe's mode %o", r.st_mode);
	CHECK(r.st_uid == getuid() && r.st_gid == getgid(), "new pipe owned by %u:%u", r.st_uid,
	      r.st_gid);

	CHECK_RET(fchown(p[0], 1000, 1001), 0);
	CHECK_OK(fstat(p[1], &w));
	CHECK(w.st_uid == 1000 && w.st_gid == 1001, "other end owned by %u:%u after fchown",
	      w.st_uid, w.st_gid);
	CHECK_RET(fchown(p[1], (uid_t)-1, 1002), 0);
	CHECK_OK(fstat(p[0], &r));
	CHECK(r.st_uid == 1000 && r.st_gid == 1002, "fchown(-1, 1002) gave %u:%u", r.st_uid,
	      r.st_gid);

	CHECK_RET(fchmod(p[1], 0640), 0);
	CHECK_OK(fstat(p[0], &r));
	CHECK(r.st_mode == (S_IFIFO | 0640), "mode %o after fchmod 0640", r.st_mode);
	CHECK_RET(fchmod(p[0], 04755), 0);
	CHECK_OK(fstat(p[1], &w));
	CHECK(w.st_mode == (S_IFIFO | 04755), "mode %o after fchmod 04755", w.st_mode);
	/* chown drops set-user-ID of a non-directory (root's too). */
	CHECK_RET(fchown(p[0], 1000, 1002), 0);
	CHECK_OK(fstat(p[0], &r));
	CHECK(r.st_mode == (S_IFIFO | 0755), "mode %o after chown of a set-uid pipe", r.st_mode);

	fd_link(p[0], link, sizeof(link));
	CHECK_RET(chown(link, 2000, 2001), 0);
	CHECK_OK(fstat(p[1], &w));
	CHECK(w.st_uid == 2000 && w.st_gid == 2001, "chown of %s gave %u:%u", link, w.st_uid,
	      w.st_gid);
	CHECK_RET(chmod(link, 0600), 0);
	CHECK_OK(fstat(p[1], &w));
	CHECK(w.st_mode == (S_IFIFO | 0600), "chmod of %s gave %o", link, w.st_mode);

	CHECK_RET(futimens(p[1], ts), 0);
	CHECK_OK(fstat(p[0], &r));
	CHECK(r.st_atim.tv_sec == ts[0].tv_sec && r.st_atim.tv_nsec == ts[0].tv_nsec &&
		      r.st_mtim.tv_sec == ts[1].tv_sec && r.st_mtim.tv_nsec == ts[1].tv_nsec,
	      "times %lld.%ld %lld.%ld after futimens", (long long)r.st_atim.tv_sec,
	      r.st_atim.tv_nsec, (long long)r.st_mtim.tv_sec, r.st_mtim.tv_nsec);
	/* Both ends still carry data. */
	CHECK_RET(write(p[1], "x", 1), 1);
	char c = 0;
	CHECK_RET(read(p[0], &c, 1), 1);
	CHECK(c == 'x', "read %c", c);
	close(p[0]);
	close(p[1]);
}

/* A child as uid/gid 65534 without capabilities: Linux's owner rules. */
static int as_nobody(void)
{
	char link[64];
	struct stat st;
	int mine[2], roots[2];

	if (pipe(roots) < 0)
		return 2;
	if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
	    setresuid(65534, 65534, 65534) < 0) {
		printf("FAIL cannot become uid 65534: %s\n", strerror(errno));
		return 2;
	}
	/* root's pipe: neither owner nor capable. */
	CHECK_ERR(fchown(roots[0], 65534, 65534), EPERM);
	CHECK_ERR(fchmod(roots[1], 0666), EPERM);
	/* root's pipe at 0600 cannot be opened again through its link. */
	fd_link(roots[0], link, sizeof(link));
	CHECK_ERR(open(link, O_RDONLY), EACCES);

	if (CHECK_OK(pipe(mine)) < 0)
		return 1;
	CHECK_OK(fstat(mine[0], &st));
	CHECK(st.st_uid == 65534 && st.st_gid == 65534, "own pipe owned by %u:%u", st.st_uid,
	      st.st_gid);
	CHECK_ERR(fchown(mine[0], 0, (gid_t)-1), EPERM);
	CHECK_ERR(fchown(mine[0], (uid_t)-1, 0), EPERM);
	/* Its own uid and group: allowed (no change). */
	CHECK_RET(fchown(mine[1], 65534, 65534), 0);
	CHECK_RET(fchmod(mine[1], 0200), 0);
	CHECK_OK(fstat(mine[0], &st));
	CHECK(st.st_mode == (S_IFIFO | 0200), "own pipe's mode %o after fchmod 0200", st.st_mode);
	/* The mode is checked when the pipe is opened through a link: write only. */
	fd_link(mine[0], link, sizeof(link));
	CHECK_ERR(open(link, O_RDONLY), EACCES);
	fd_link(mine[1], link, sizeof(link));
	CHECK_ERR(open(link, O_RDWR), EACCES);
	int fd = CHECK_OK(open(link, O_WRONLY));
	if (fd >= 0) {
		CHECK_RET(write(fd, "y", 1), 1);
		char c = 0;
		CHECK_RET(read(mine[0], &c, 1), 1);
		CHECK(c == 'y', "read %c through the reopened pipe", c);
		close(fd);
	}
	return 0;
}

int main(void)
{
	pid_t pid;
	int status = 0;

	as_root();
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		checks_passed = checks_failed = 0;
		int r = as_nobody();

		fflush(stdout);
		_exit(r ? r : (checks_failed ? 100 + checks_failed : 50 + checks_passed));
	}
	CHECK(pid > 0, "fork: %s", strerror(errno));
	if (pid > 0) {
		CHECK_RET(waitpid(pid, &status, 0), pid);
		/* The child reports its counts in its exit status. */
		if (WIFEXITED(status) && WEXITSTATUS(status) >= 100)
			checks_failed += WEXITSTATUS(status) - 100;
		else if (WIFEXITED(status) && WEXITSTATUS(status) >= 50)
			checks_passed += WEXITSTATUS(status) - 50;
		else
			CHECK(0, "child status %#x", status);
	}
	return finish();
}
