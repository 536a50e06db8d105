/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proc_exec_race: one process looks at another while it replaces its memory, fd table and
 * working directory. A child execs itself EXECS times (each time after unsharing its fd table
 * with close_range(CLOSE_RANGE_UNSHARE) and changing directory); meanwhile the parent reads
 * /proc/CHILD/stat, status, statm, maps, cwd, root, exe and fd/, and reads the child's memory
 * with process_vm_readv, as `ps` and `top` do. Every read either works or fails with ESRCH or
 * ENOENT (the child has gone), the child ends normally after its last exec, and the reader sees
 * it run. In husk, a read that took the child's old memory map as the exec freed it killed the
 * sentry (a `husk exec ps` beside a starting container's shell hit it).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "check.h"

#define EXECS 150
#define ROUNDS 3000

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif

static char marker[64] = "proc_exec_race marker";

/* The child's part: one more exec, or the end. */
static int again(int left)
{
	char arg[16];

	if (left <= 0)
		return 0;
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_UNSHARE) < 0)
		return 10;
	if (chdir(left % 2 ? "/" : "/tmp") < 0 && chdir("/") < 0)
		return 11;
	snprintf(arg, sizeof(arg), "%d", left - 1);
	execl("/proc/self/exe", "proc_exec_race", "again", arg, (char *)NULL);
	return 12;
}

/* Reads /proc/PID/NAME whole; 0, or the errno of the open or read. */
static int read_proc(pid_t pid, const char *name)
{
	char path[64], buf[4096];
	ssize_t n;
	int fd, e = 0;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	if (n < 0)
		e = errno;
	close(fd);
	return e;
}

static int link_proc(pid_t pid, const char *name)
{
	char path[64], buf[4096];

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	return readlink(path, buf, sizeof(buf)) < 0 ? errno : 0;
}

static int list_fds(pid_t pid)
{
	char path[64];
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return errno;
	while (readdir(d))
		;
	closedir(d);
	return 0;
}

static int read_mem(pid_t pid)
{
	char buf[sizeof(marker)];
	struct iovec local = { buf, sizeof(buf) }, remote = { marker, sizeof(marker) };

	/* The same binary at the same address only when ASLR is off: any answer but a crash. */
	return process_vm_readv(pid, &local, 1, &remote, 1, 0) < 0 ? errno : 0;
}

int main(int argc, char **argv)
{
	static const char *const files[] = {
		"stat", "status", "statm", "maps", "cmdline", "environ"
	};
	static const char *const links[] = { "cwd", "root", "exe" };
	long reads = 0, bad = 0;
	int last_bad = 0, status = -1;
	bool done = false;
	pid_t pid;

	if (argc == 3 && !strcmp(argv[1], "again"))
		return again(atoi(argv[2]));

	pid = fork();
	if (pid == 0)
		_exit(again(EXECS));
	CHECK(pid > 0, "fork: %s", strerror(errno));
	if (pid <= 0)
		return finish();
	/*
	 * Reads until the child is gone, or for ROUNDS rounds (about a second natively): then a
	 * plain wait, so that the reads never starve the child on a busy machine; a child that
	 * never ends still fails the test (by its timeout).
	 */
	for (int round = 0; round < ROUNDS; round++) {
		int e[sizeof(files) / sizeof(files[0]) + sizeof(links) / sizeof(links[0]) + 2];
		int n = 0;

		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
			e[n++] = read_proc(pid, files[i]);
		for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++)
			e[n++] = link_proc(pid, links[i]);
		e[n++] = list_fds(pid);
		e[n++] = read_mem(pid);
		for (int i = 0; i < n; i++) {
			reads++;
			/* A zombie has no memory, files or directories: ENOENT, ESRCH (and EACCES
			 * for exe natively, depending on the kernel), never anything else. */
			if (e[i] && e[i] != ESRCH && e[i] != ENOENT && e[i] != EACCES &&
			    e[i] != EFAULT) {
				bad++;
				last_bad = e[i];
			}
		}
		if (waitpid(pid, &status, WNOHANG) == pid) {
			done = true;
			break;
		}
	}
	if (!done && waitpid(pid, &status, 0) != pid)
		status = -1;
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the child's %d execs ended with status 0x%x", EXECS, status);
	CHECK(bad == 0, "%ld of %ld reads failed, the last with %s", bad, reads,
	      strerror(last_bad));
	CHECK(reads > 0, "no reads");
	return finish();
}
