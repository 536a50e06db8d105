/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Exhaustion probes (issue 18): run inside husk in sandbox A (tests/security/exhaust.sh, which
 * gives A a pids limit and a memory limit) while sandbox B keeps answering. Each drives one
 * resource to its limit and passes only when the limit answers as the sandbox's limit, with
 * Linux's error for it (never the host's resource running out):
 *
 *   exhaust fork|threads|memory|fds|inotify|disk PATH
 *
 * fork:    fork until it fails: EAGAIN (the sentry's pids limit counts tasks).
 * threads: pthread_create until it fails: EAGAIN (threads count as tasks too).
 * memory:  a child touches 1 MiB after 1 MiB: the sentry's OOM killer SIGKILLs it at the
 *          memory limit (a memory cgroup at memory.max without swap does the same).
 * fds:     open until EMFILE (RLIMIT_NOFILE, the sentry's FD table).
 * inotify: inotify_init1 until EMFILE (max_user_instances, 128) and watches on one instance
 *          until ENOSPC (max_user_watches).
 * disk:    writes 1 MiB blocks to PATH/fill until a write fails: ENOSPC (a volume over a full
 *          host tmpfs) or, in the in-memory overlay, ENOSPC or the writer killed at the memory
 *          limit (overlay data is counted as the sandbox's memory).
 *
 * Prints "ok - WHAT" or "not ok - WHAT" lines and "N passed, M failed". Everything made is
 * released before the probe ends (children killed and reaped, files removed).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe.h"

#define MAX_KIDS 100000

static void fork_bomb(void)
{
	static pid_t kids[MAX_KIDS];
	int n = 0, e = 0;

	while (n < MAX_KIDS) {
		pid_t p = fork();

		if (p == 0) {
			pause();
			_exit(0);
		}
		if (p < 0) {
			e = errno;
			break;
		}
		kids[n++] = p;
	}
	result(e == EAGAIN, "fork bomb: fork failed after %d children with %s", n,
	       e ? strerror(e) : "nothing (no limit)");
	for (int i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	for (int i = 0; i < n; i++)
		waitpid(kids[i], NULL, 0);
	/* The limit was the sandbox's: once the children are reaped it forks again. */
	pid_t p = fork();
	if (p == 0)
		_exit(0);
	if (p > 0)
		waitpid(p, NULL, 0);
	result(p > 0, "fork bomb: fork works again once the children are reaped");
}

static int stop_threads;

static void *idle_thread(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop_threads, __ATOMIC_RELAXED))
		pause();
	return NULL;
}

static void threads(void)
{
	static pthread_t t[MAX_KIDS];
	pthread_attr_t a;
	int n = 0, e = 0;

	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	while (n < MAX_KIDS) {
		e = pthread_create(&t[n], &a, idle_thread, NULL);
		if (e)
			break;
		n++;
	}
	result(e == EAGAIN, "threads: pthread_create failed after %d threads with %s", n,
	       e ? strerror(e) : "nothing (no limit)");
	__atomic_store_n(&stop_threads, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++)
		pthread_kill(t[i], SIGUSR1);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

static void memory(void)
{
	int p[2];
	pid_t c;
	int st;
	long mib = 0, v;

	if (pipe(p) < 0) {
		result(0, "memory: pipe: %s", strerror(errno));
		return;
	}
	c = fork();
	if (c == 0) {
		close(p[0]);
		for (long i = 0;; i++) {
			char *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (m == MAP_FAILED)
				_exit(10);
			memset(m, 1, 1 << 20);
			if (write(p[1], &i, sizeof(i)) < 0)
				_exit(11);
		}
	}
	close(p[1]);
	while (read(p[0], &v, sizeof(v)) == sizeof(v))
		mib = v + 1;
	close(p[0]);
	waitpid(c, &st, 0);
	result(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
	       "memory: the toucher was SIGKILLed at the limit after %ld MiB (status %#x)", mib,
	       st);
}

static void fds(void)
{
	int n = 0, e = 0, first = -1, last = -1;

	for (;;) {
		int fd = open("/", O_RDONLY | O_DIRECTORY);

		if (fd < 0) {
			e = errno;
			break;
		}
		if (first < 0)
			first = fd;
		last = fd;
		n++;
	}
	result(e == EMFILE, "fds: open failed after %d FDs with %s", n, strerror(e));
	for (int fd = first; fd >= 0 && fd <= last; fd++)
		close(fd);
	int fd = open("/", O_RDONLY | O_DIRECTORY);
	result(fd >= 0, "fds: open works again once they are closed");
	if (fd >= 0)
		close(fd);
}

static void inotify(void)
{
	static int ins[4096];
	char path[64];
	int n = 0, e = 0, k, total = 0, we = 0;

	while (n < 4096) {
		int fd = inotify_init1(IN_CLOEXEC);

		if (fd < 0) {
			e = errno;
			break;
		}
		ins[n++] = fd;
	}
	result(e == EMFILE, "inotify: inotify_init1 failed after %d instances with %s", n,
	       e ? strerror(e) : "nothing (no limit)");
	for (int i = 0; i < n; i++)
		close(ins[i]);
	/* Watches: one per (instance, node), on 2048 directories of the overlay's /tmp from as
	 * many instances as it takes to reach max_user_watches. */
	mkdir("/tmp/watch", 0755);
	for (int i = 0; i < 2048; i++) {
		snprintf(path, sizeof(path), "/tmp/watch/%d", i);
		mkdir(path, 0755);
	}
	for (k = 0; k < 120 && !we; k++) {
		ins[k] = inotify_init1(IN_CLOEXEC);
		if (ins[k] < 0) {
			we = errno;
			break;
		}
		for (int i = 0; i < 2048; i++) {
			snprintf(path, sizeof(path), "/tmp/watch/%d", i);
			if (inotify_add_watch(ins[k], path, IN_MODIFY) < 0) {
				we = errno;
				break;
			}
			total++;
		}
	}
	result(we == ENOSPC, "inotify: inotify_add_watch failed after %d watches with %s", total,
	       we ? strerror(we) : "nothing (no limit)");
	for (int i = 0; i < k && i < 120; i++)
		if (ins[i] >= 0)
			close(ins[i]);
	for (int i = 0; i < 2048; i++) {
		snprintf(path, sizeof(path), "/tmp/watch/%d", i);
		rmdir(path);
	}
	rmdir("/tmp/watch");
}

static void disk(const char *dir, int overlay)
{
	char path[4096];
	int p[2];
	pid_t c;
	int st;
	long mib = 0;
	int err = 0;

	snprintf(path, sizeof(path), "%s/fill", dir);
	if (pipe(p) < 0)
		return;
	c = fork();
	if (c == 0) {
		static char buf[1 << 20];
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		long i = 0;
		int e;

		close(p[0]);
		memset(buf, 'x', sizeof(buf));
		if (fd < 0)
			_exit(20);
		for (;;) {
			ssize_t w = write(fd, buf, sizeof(buf));

			if (w < (ssize_t)sizeof(buf)) {
				e = w < 0 ? errno : ENOSPC;
				if (w >= 0) {
					/* A short write: the next one says why. */
					w = write(fd, buf, sizeof(buf));
					e = w < 0 ? errno : 0;
				}
				break;
			}
			i++;
			if (write(p[1], &i, sizeof(i)) < 0)
				_exit(21);
		}
		i = -e;
		if (write(p[1], &i, sizeof(i)) < 0)
			_exit(21);
		_exit(0);
	}
	close(p[1]);
	long v;
	while (read(p[0], &v, sizeof(v)) == sizeof(v)) {
		if (v > 0)
			mib = v;
		else
			err = (int)-v;
	}
	close(p[0]);
	waitpid(c, &st, 0);
	unlink(path);
	if (WIFSIGNALED(st))
		result(overlay && WTERMSIG(st) == SIGKILL,
		       "disk (%s): the writer was SIGKILLed at the memory limit after %ld MiB", dir,
		       mib);
	else
		result(err == ENOSPC || (overlay && err == ENOMEM),
		       "disk (%s): write failed after %ld MiB with %s", dir, mib,
		       err ? strerror(err) : "nothing");
}

static void on_usr1(int sig)
{
	(void)sig;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: exhaust fork|threads|memory|fds|inotify|disk PATH\n");
		return 2;
	}
	signal(SIGUSR1, on_usr1);
	if (!strcmp(argv[1], "fork"))
		fork_bomb();
	else if (!strcmp(argv[1], "threads"))
		threads();
	else if (!strcmp(argv[1], "memory"))
		memory();
	else if (!strcmp(argv[1], "fds"))
		fds();
	else if (!strcmp(argv[1], "inotify"))
		inotify();
	else if (!strcmp(argv[1], "disk") && argc > 2)
		disk(argv[2], !strcmp(argv[2], "/tmp") || !strcmp(argv[2], "/"));
	else {
		fprintf(stderr, "exhaust: unknown mode %s\n", argv[1]);
		return 2;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
