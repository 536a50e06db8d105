/* SPDX-License-Identifier: Apache-2.0 */
/*
 * For the mount programs (mounts.c, mount_ns.c, mount_api.c): their checks run in a child with
 * a mount namespace of its own whose / is private, natively as in husk, so that nothing they
 * mount reaches the tree they started in, under a tmpfs at SCRATCH/t.
 */
#ifndef HUSK_TESTS_SYSCALLS_MOUNTNS_H
#define HUSK_TESTS_SYSCALLS_MOUNTNS_H

#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "scratch.h"

static char T[128]; /* the tmpfs every mount of the program goes under (mountns_enter) */

/* T/rel, in one of 8 rotating buffers. */
static inline char *at(const char *rel)
{
	static char bufs[8][256];
	static int i;
	char *b = bufs[i++ % 8];

	if (strlen(T) + strlen(rel) + 2 > 256)
		abort();
	strcpy(b, T);
	strcat(b, "/");
	strcat(b, rel);
	return b;
}

/* The mountinfo line whose mount point is path (the last one), in buf; false if none. */
static inline bool mountinfo_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[1024], mp[512];
	bool found = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*s %*s %*s %*s %511s", mp) == 1 && !strcmp(mp, path)) {
			snprintf(buf, len, "%s", line);
			found = true;
		}
	}
	fclose(f);
	return found;
}

/* Enters the namespace and mounts the tmpfs at t (len bytes: SCRATCH/t). Whether it could. */
static inline bool mountns_enter(char *t, size_t len)
{
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		CHECK(0, "namespace: %s", strerror(errno));
		return false;
	}
	snprintf(t, len, "%s/t", scratch);
	CHECK_RET(mkdir(t, 0755), 0);
	CHECK_RET(mount("top", t, "tmpfs", 0, NULL), 0);
	return true;
}

/* A child's side of a lock-step: writes a byte on out (if >= 0), then waits for one on in (if
 * >= 0); a broken pipe ends the child with status 3. */
static inline void mountns_step(int in, int out)
{
	char c;

	if (out >= 0 && write(out, "x", 1) != 1)
		_exit(3);
	if (in >= 0 && read(in, &c, 1) != 1)
		_exit(3);
}

/* Runs fn in a forked child with counters of its own (it prints its failures) and checks that
 * none of its checks failed. */
static inline void mountns_child(void (*fn)(void), const char *what)
{
	pid_t pid;
	int st;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		checks_passed = checks_failed = 0;
		fn();
		fflush(stdout);
		_exit(checks_failed ? 1 : 0);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "%s failed", what);
}

/* main's part: the scratch directory, then body in a child that prints the summary. Returns
 * 0, or 1 (and says so) when the child failed. */
static inline int mountns_main(const char *name, void (*body)(void))
{
	pid_t pid;
	int st;

	scratch_make(name);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		body();
		_exit(finish());
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		printf("FAIL: the namespace child failed\n");
		return 1;
	}
	return 0;
}

#endif
