/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fcntl(F_NOTIFY) (dnotify) in a scratch directory on tmpfs (/dev/shm) and on the root
 * filesystem (/var/tmp, husk's overlay): each DN_* event, one-shot and DN_MULTISHOT watches,
 * cumulative masks, removal by 0 and by closing a descriptor, SIGIO and the F_SETSIG signal with
 * its siginfo, the owner F_NOTIFY sets or keeps, ENOTDIR.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define RTSIG (SIGRTMIN + 1)

static char scratch[64];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void scratch_remove(void)
{
	if (scratch[0])
		nftw(scratch, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	scratch[0] = 0;
}

/* Waits (10 s at most) for blocked signal sig; returns it (and *si) or -1. */
static int wait_sig(int sig, siginfo_t *si)
{
	struct timespec ts = { 10, 0 };
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, sig);
	return sigtimedwait(&set, si, &ts);
}

/* How many instances of sig are pending now (taken). */
static int take_sigs(int sig)
{
	struct timespec zero = { 0, 0 };
	sigset_t set;
	siginfo_t si;
	int n = 0;

	sigemptyset(&set);
	sigaddset(&set, sig);
	while (sigtimedwait(&set, &si, &zero) == sig)
		n++;
	return n;
}

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd >= 0)
		close(fd);
}

/* Opens the scratch directory d afresh (no watch, no owner, no signal). */
static int opendir_fd(const char *d)
{
	return open(d, O_RDONLY | O_DIRECTORY);
}

static void test_errors(const char *d)
{
	char path[128];
	int fd, dfd;

	snprintf(path, sizeof(path), "%s/plain", d);
	touch(path);
	fd = open(path, O_RDONLY);
	CHECK_ERR(fcntl(fd, F_NOTIFY, DN_CREATE), ENOTDIR);
	/* 0 only removes: no directory needed. */
	CHECK_RET(fcntl(fd, F_NOTIFY, 0), 0);
	CHECK_RET(fcntl(fd, F_NOTIFY, DN_MULTISHOT), 0);
	close(fd);
	unlink(path);
	dfd = opendir_fd(d);
	CHECK_RET(fcntl(dfd, F_NOTIFY, 0), 0);
	CHECK_ERR(fcntl(-1, F_NOTIFY, DN_CREATE), EBADF);
	close(dfd);
	fd = open(d, O_PATH);
	CHECK_ERR(fcntl(fd, F_NOTIFY, DN_CREATE), EBADF);
	close(fd);
}

/* One-shot DN_CREATE with plain SIGIO: one signal (SI_KERNEL), then nothing. */
static void test_oneshot_sigio(const char *d)
{
	char path[128];
	siginfo_t si;
	int dfd = opendir_fd(d);

	CHECK_RET(fcntl(dfd, F_GETOWN), 0);
	CHECK_RET(fcntl(dfd, F_NOTIFY, DN_CREATE), 0);
	/* F_NOTIFY makes the caller the owner when there was none. */
	CHECK_RET(fcntl(dfd, F_GETOWN), getpid());
	CHECK_RET(take_sigs(SIGIO), 0);
	snprintf(path, sizeof(path), "%s/a", d);
	touch(path);
	memset(&si, 0, sizeof(si));
	CHECK_RET(wait_sig(SIGIO, &si), SIGIO);
	CHECK(si.si_code == SI_KERNEL, "si_code %d", si.si_code);
	snprintf(path, sizeof(path), "%s/b", d);
	touch(path);
	CHECK_RET(take_sigs(SIGIO), 0);
	close(dfd);
}

struct op {
	const char *what;
	unsigned long mask; /* DN_* wanted */
	int (*fn)(const char *d);
	int signals; /* RT signals with a multishot watch of exactly mask */
};

static int op_create(const char *d)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/x", d);
	return mknod(p, S_IFREG | 0644, 0);
}

static int op_mkdir(const char *d)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/sub", d);
	return mkdir(p, 0755);
}

static int op_modify(const char *d)
{
	char p[128];
	int fd, r;

	snprintf(p, sizeof(p), "%s/x", d);
	fd = open(p, O_WRONLY);
	if (fd < 0)
		return -1;
	r = write(fd, "abc", 3) == 3 ? 0 : -1;
	close(fd);
	return r;
}

static int op_truncate(const char *d)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/x", d);
	return truncate(p, 1);
}

static int op_access(const char *d)
{
	char p[128], buf[8];
	int fd, r;

	snprintf(p, sizeof(p), "%s/x", d);
	fd = open(p, O_RDONLY);
	if (fd < 0)
		return -1;
	r = read(fd, buf, sizeof(buf)) == 1 ? 0 : -1;
	close(fd);
	return r;
}

static int op_chmod(const char *d)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/x", d);
	return chmod(p, 0600);
}

static int op_getdents(const char *d)
{
	char buf[4096];
	int fd = open(d, O_RDONLY | O_DIRECTORY), r;

	if (fd < 0)
		return -1;
	r = syscall(SYS_getdents64, fd, buf, sizeof(buf)) > 0 ? 0 : -1;
	close(fd);
	return r;
}

static int op_chmod_dir(const char *d)
{
	return chmod(d, 0700);
}

static int op_rename(const char *d)
{
	char p[128], q[128];

	snprintf(p, sizeof(p), "%s/x", d);
	snprintf(q, sizeof(q), "%s/y", d);
	return rename(p, q);
}

static int op_unlink(const char *d)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/y", d);
	return unlink(p);
}

static int op_rmdir(const char *d)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/sub", d);
	return rmdir(p);
}

/* Events in the subdirectory are not the watched directory's. */
static int op_in_subdir(const char *d)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/sub/deep", d);
	touch(p);
	return unlink(p);
}

/*
 * A sequence of operations, each run under a multishot watch of each DN_* event on its own: an
 * operation signals exactly the watches of its events.
 */
static void test_each_event(const char *d)
{
	static const struct op ops[] = {
		{ "create", DN_CREATE, op_create, 1 },
		{ "mkdir", DN_CREATE, op_mkdir, 1 },
		{ "write", DN_MODIFY, op_modify, 1 },
		{ "truncate", DN_MODIFY, op_truncate, 1 },
		{ "read", DN_ACCESS, op_access, 1 },
		{ "chmod", DN_ATTRIB, op_chmod, 1 },
		{ "chmod of the directory", DN_ATTRIB, op_chmod_dir, 1 },
		{ "getdents of the directory", DN_ACCESS, op_getdents, 1 },
		{ "in a subdirectory", 0, op_in_subdir, 0 },
		{ "rename", DN_RENAME | DN_DELETE | DN_CREATE, op_rename, 1 },
		{ "unlink", DN_DELETE, op_unlink, 1 },
		{ "rmdir", DN_DELETE, op_rmdir, 1 },
	};
	static const unsigned long events[] = { DN_ACCESS, DN_MODIFY, DN_CREATE,
						DN_DELETE, DN_RENAME, DN_ATTRIB };
	int fds[6];

	/* One descriptor per event, each with the RT signal (si_fd tells them apart). */
	for (int i = 0; i < 6; i++) {
		fds[i] = opendir_fd(d);
		CHECK_RET(fcntl(fds[i], F_SETSIG, RTSIG), 0);
		CHECK_RET(fcntl(fds[i], F_NOTIFY, events[i] | DN_MULTISHOT), 0);
	}
	CHECK_RET(take_sigs(RTSIG), 0);
	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		int got[6] = { 0 }, n = 0, bad = 0;
		struct timespec zero = { 0, 0 };
		sigset_t set;
		siginfo_t si;

		CHECK(ops[k].fn(d) == 0, "%s: %s", ops[k].what, strerror(errno));
		sigemptyset(&set);
		sigaddset(&set, RTSIG);
		while (sigtimedwait(&set, &si, &zero) == RTSIG) {
			int j;

			for (j = 0; j < 6 && fds[j] != si.si_fd; j++)
				;
			if (j == 6 || si.si_code != POLL_MSG ||
			    si.si_band != (POLLIN | POLLRDNORM | POLLMSG))
				bad++;
			else
				got[j]++;
			n++;
		}
		CHECK(bad == 0, "%s: %d signals with a wrong siginfo", ops[k].what, bad);
		for (int i = 0; i < 6; i++) {
			int want = (ops[k].mask & events[i]) ? ops[k].signals : 0;

			CHECK(got[i] == want, "%s: %d signals for event %#lx, expected %d",
			      ops[k].what, got[i], events[i], want);
		}
	}
	for (int i = 0; i < 6; i++)
		close(fds[i]);
	CHECK_RET(chmod(d, 0755), 0);
	CHECK_RET(take_sigs(RTSIG), 0);
}

/* One-shot, cumulative masks, DN_MULTISHOT kept, 0 removes, a close removes. */
static void test_lifetime(const char *d)
{
	char p[128];
	siginfo_t si;
	int dfd = opendir_fd(d), dup_fd;

	snprintf(p, sizeof(p), "%s/f", d);
	CHECK_RET(fcntl(dfd, F_SETSIG, RTSIG), 0);
	/* Cumulative: DN_CREATE then DN_DELETE, one watch with both, gone after one event. */
	CHECK_RET(fcntl(dfd, F_NOTIFY, DN_CREATE), 0);
	CHECK_RET(fcntl(dfd, F_NOTIFY, DN_DELETE), 0);
	touch(p);
	CHECK_RET(wait_sig(RTSIG, &si), RTSIG);
	CHECK_RET(si.si_fd, dfd);
	CHECK_RET(unlink(p), 0);
	CHECK_RET(take_sigs(RTSIG), 0);

	/* Multishot, then 0: nothing more. */
	CHECK_RET(fcntl(dfd, F_NOTIFY, DN_CREATE | DN_DELETE | DN_MULTISHOT), 0);
	touch(p);
	CHECK_RET(unlink(p), 0);
	CHECK_RET(take_sigs(RTSIG), 2);
	CHECK_RET(fcntl(dfd, F_NOTIFY, 0), 0);
	touch(p);
	CHECK_RET(unlink(p), 0);
	CHECK_RET(take_sigs(RTSIG), 0);

	/* Set through a duplicate: si_fd is that descriptor; closing any descriptor of the file
	 * removes the watch. */
	dup_fd = dup(dfd);
	CHECK_RET(fcntl(dup_fd, F_NOTIFY, DN_CREATE | DN_MULTISHOT), 0);
	touch(p);
	memset(&si, 0, sizeof(si));
	CHECK_RET(wait_sig(RTSIG, &si), RTSIG);
	CHECK_RET(si.si_fd, dup_fd);
	CHECK_RET(unlink(p), 0);
	CHECK_RET(close(dfd), 0);
	touch(p);
	CHECK_RET(take_sigs(RTSIG), 0);
	CHECK_RET(unlink(p), 0);
	close(dup_fd);

	/* Closing the descriptor it was set through removes it too. */
	dfd = opendir_fd(d);
	CHECK_RET(fcntl(dfd, F_SETSIG, RTSIG), 0);
	CHECK_RET(fcntl(dfd, F_NOTIFY, DN_CREATE | DN_MULTISHOT), 0);
	CHECK_RET(close(dfd), 0);
	touch(p);
	CHECK_RET(take_sigs(RTSIG), 0);
	CHECK_RET(unlink(p), 0);
}

/* Another process's descriptor table: the child's close does not remove the parent's watch. */
static void test_fork_close(const char *d)
{
	char p[128];
	siginfo_t si;
	int dfd = opendir_fd(d), status = -1;
	pid_t pid;

	snprintf(p, sizeof(p), "%s/g", d);
	CHECK_RET(fcntl(dfd, F_SETSIG, RTSIG), 0);
	CHECK_RET(fcntl(dfd, F_NOTIFY, DN_CREATE), 0);
	pid = fork();
	if (pid == 0)
		_exit(close(dfd) == 0 ? 0 : 1);
	CHECK_RET(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
	touch(p);
	memset(&si, 0, sizeof(si));
	CHECK_RET(wait_sig(RTSIG, &si), RTSIG);
	CHECK_RET(si.si_fd, dfd);
	CHECK_RET(unlink(p), 0);
	close(dfd);
}

/* The signal goes to the owner F_SETOWN set before (F_NOTIFY keeps it). */
static void test_owner(const char *d)
{
	char p[128];
	int dfd = opendir_fd(d), status = -1;
	pid_t pid;

	snprintf(p, sizeof(p), "%s/h", d);
	pid = fork();
	if (pid == 0) {
		siginfo_t si;

		/* The signal is blocked since before the fork: it waits for sigtimedwait. */
		if (wait_sig(RTSIG, &si) != RTSIG)
			_exit(1);
		_exit(si.si_fd == dfd && si.si_code == POLL_MSG ? 0 : 2);
	}
	CHECK_RET(fcntl(dfd, F_SETOWN, pid), 0);
	CHECK_RET(fcntl(dfd, F_SETSIG, RTSIG), 0);
	CHECK_RET(fcntl(dfd, F_NOTIFY, DN_CREATE), 0);
	CHECK_RET(fcntl(dfd, F_GETOWN), pid);
	touch(p);
	CHECK_RET(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	CHECK_RET(take_sigs(RTSIG), 0);
	CHECK_RET(unlink(p), 0);
	close(dfd);
}

/*
 * A rename to another directory: DN_DELETE for the old one, DN_CREATE for the new one, DN_RENAME
 * for neither (Linux keeps it for renames within one directory).
 */
static void test_rename_across(const char *d)
{
	static const unsigned long masks[4] = { DN_RENAME, DN_DELETE, DN_RENAME, DN_CREATE };
	static const int want[4] = { 0, 1, 0, 1 };
	char a[128], b[128], sub[128];
	int fds[4], got[4] = { 0 }, other = 0;
	struct timespec zero = { 0, 0 };
	sigset_t set;
	siginfo_t si;

	snprintf(sub, sizeof(sub), "%s/to", d);
	snprintf(a, sizeof(a), "%s/m", d);
	snprintf(b, sizeof(b), "%s/to/m", d);
	CHECK_RET(mkdir(sub, 0755), 0);
	touch(a);
	for (int i = 0; i < 4; i++) {
		fds[i] = opendir_fd(i < 2 ? d : sub);
		CHECK_RET(fcntl(fds[i], F_SETSIG, RTSIG), 0);
		CHECK_RET(fcntl(fds[i], F_NOTIFY, masks[i] | DN_MULTISHOT), 0);
	}
	CHECK_RET(take_sigs(RTSIG), 0);
	CHECK_RET(rename(a, b), 0);
	sigemptyset(&set);
	sigaddset(&set, RTSIG);
	while (sigtimedwait(&set, &si, &zero) == RTSIG) {
		int j;

		for (j = 0; j < 4 && fds[j] != si.si_fd; j++)
			;
		if (j < 4)
			got[j]++;
		else
			other++;
	}
	CHECK(other == 0, "%d signals with another si_fd", other);
	for (int i = 0; i < 4; i++)
		CHECK(got[i] == want[i], "watch %d (%#lx): %d signals, expected %d", i, masks[i],
		      got[i], want[i]);
	CHECK_RET(unlink(b), 0);
	CHECK_RET(rmdir(sub), 0);
	for (int i = 0; i < 4; i++)
		close(fds[i]);
	CHECK_RET(take_sigs(RTSIG), 1); /* rmdir: d's DN_DELETE watch */
}

static void run_in(const char *base)
{
	char tmpl[64];

	snprintf(tmpl, sizeof(tmpl), "%s/husk-dnotify-XXXXXX", base);
	if (!mkdtemp(tmpl)) {
		printf("skip %s: mkdtemp: %s\n", base, strerror(errno));
		return;
	}
	snprintf(scratch, sizeof(scratch), "%s", tmpl);
	chmod(scratch, 0755);
	test_errors(scratch);
	test_oneshot_sigio(scratch);
	test_each_event(scratch);
	test_lifetime(scratch);
	test_fork_close(scratch);
	test_owner(scratch);
	test_rename_across(scratch);
	scratch_remove();
}

int main(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGIO);
	sigaddset(&set, RTSIG);
	sigprocmask(SIG_BLOCK, &set, NULL);
	atexit(scratch_remove);
	run_in("/dev/shm");
	run_in("/var/tmp");
	return finish();
}
