/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Checks run in a forked child and counted in the parent (check.h's counters come back through a
 * pipe), and whether the program runs in husk. For programs whose checks need a process of their
 * own: a blocked waiter, dropped credentials, a new namespace.
 */
#ifndef HUSK_TESTS_SYSCALLS_CHILD_H
#define HUSK_TESTS_SYSCALLS_CHILD_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

/* Forks a child that runs fn(arg) with fresh counters; *pipe_out gets their pipe. Returns its pid
 * or -1. The parent collects the counts with child_reap. */
static inline pid_t child_spawn(void (*fn)(void *), void *arg, int *pipe_out)
{
	int p[2], counts[2];
	pid_t pid;

	fflush(stdout);
	if (pipe(p) < 0) {
		CHECK(0, "pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		checks_passed = checks_failed = 0;
		fn(arg);
		counts[0] = checks_passed;
		counts[1] = checks_failed;
		fflush(stdout);
		if (write(p[1], counts, sizeof(counts)) < 0)
			_exit(99);
		_exit(0);
	}
	close(p[1]);
	if (pid < 0)
		close(p[0]);
	*pipe_out = p[0];
	return pid;
}

/* Adds the child's counts to this process's and reaps it. Returns its wait status. */
static inline int child_reap(pid_t pid, int fd)
{
	int counts[2], st = -1;

	if (read(fd, counts, sizeof(counts)) == sizeof(counts)) {
		checks_passed += counts[0];
		checks_failed += counts[1];
	}
	close(fd);
	waitpid(pid, &st, 0);
	return st;
}

/* Runs fn(arg) in a child (child_spawn, then child_reap). Returns its wait status, or -1. */
static inline int in_child(void (*fn)(void *), void *arg)
{
	int fd;
	pid_t pid = child_spawn(fn, arg, &fd);

	return pid < 0 ? -1 : child_reap(pid, fd);
}

/* Whether this runs in husk (its uname version says so): where native and husk must differ. */
static inline bool in_husk(void)
{
	struct utsname u;

	return uname(&u) == 0 && strstr(u.version, "husk") != NULL;
}

/*
 * The state letter of thread tid of this process in /proc ('S' once it sleeps in a call), or
 * '?' when it cannot be read: how a test waits for a thread to block without sleeping itself.
 */
static inline char thread_state(int32_t tid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return '?';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

#endif
