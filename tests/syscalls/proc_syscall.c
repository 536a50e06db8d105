/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /proc/PID/syscall (proc(5)): the call a task is blocked in, with its six arguments, stack
 * pointer and pc; "running" for a task running user code; "-1 SP PC" for a stopped one (husk;
 * Linux may show the last call there). husk makes the file at open, so /proc/self/syscall names
 * openat where Linux, which makes it at the first read, names read. Tests
 * wait on it instead of sleeping (tests/integration/crash.sh waits for pid 1's wait4). Each wait
 * below is for a state the other process reaches by itself: a loop on the file, never a sleep.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "check.h"

/* Reads /proc/PID/syscall into buf (NUL-terminated). Returns its length or -1. */
static ssize_t read_syscall(pid_t pid, char *buf, size_t size)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* Waits until pid's syscall file starts with prefix; returns whether it did (within ~10^7 reads). */
static int wait_for(pid_t pid, const char *prefix, char *buf, size_t size)
{
	for (long i = 0; i < 10000000; i++) {
		if (read_syscall(pid, buf, size) > 0 && strncmp(buf, prefix, strlen(prefix)) == 0)
			return 1;
	}
	return 0;
}

int main(void)
{
	char buf[512];
	unsigned long long a[6], sp, pc;
	int nr, p[2];
	pid_t child;
	int status;

	/* Our own: the number of the call reading it (Linux: read; made at the first read) and
	 * then eight hex values. */
	CHECK(read_syscall(getpid(), buf, sizeof(buf)) > 0, "read /proc/self/syscall: %m");
	CHECK(sscanf(buf, "%d 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx", &nr, &a[0],
		     &a[1], &a[2], &a[3], &a[4], &a[5], &sp, &pc) == 9,
	      "own syscall line: %s", buf);
	CHECK(nr == SYS_read || nr == SYS_openat, "own call %d", nr);

	/* A child blocked in read(fd, buf, 77) of an empty pipe: "0 FD BUF 0x4d ...". */
	CHECK_OK(pipe(p));
	child = fork();
	if (child == 0) {
		char c[77];

		close(p[1]);
		_exit(read(p[0], c, sizeof(c)) == 1 ? 0 : 1);
	}
	close(p[0]);
	CHECK(wait_for(child, "0 ", buf, sizeof(buf)), "child never seen in read: %s", buf);
	CHECK(sscanf(buf, "%d 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx", &nr, &a[0],
		     &a[1], &a[2], &a[3], &a[4], &a[5], &sp, &pc) == 9,
	      "blocked child's line: %s", buf);
	CHECK(a[0] == (unsigned long long)p[0] && a[2] == 77, "read's arguments: %s", buf);
	CHECK(sp != 0 && pc != 0, "sp and pc: %s", buf);
	CHECK_RET(write(p[1], "x", 1), 1);
	CHECK_OK(waitpid(child, &status, 0));
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);
	close(p[1]);

	/* A child running user code: "running". */
	child = fork();
	if (child == 0) {
		for (volatile unsigned long i = 0;; i++)
			;
	}
	CHECK(wait_for(child, "running", buf, sizeof(buf)), "busy child: %s", buf);
	/* Stopped there, not running: a number and then hex (husk: "-1 SP PC"; Linux shows what
	 * its saved registers hold, "-1 SP PC" or the last call's line). */
	CHECK_OK(kill(child, SIGSTOP));
	CHECK_OK(waitpid(child, &status, WUNTRACED));
	CHECK(read_syscall(child, buf, sizeof(buf)) > 0 &&
		      sscanf(buf, "%d 0x%llx 0x%llx", &nr, &sp, &pc) == 3 && nr >= -1,
	      "stopped child: %s", buf);
	CHECK_OK(kill(child, SIGKILL));
	CHECK_OK(waitpid(child, &status, 0));

	/* Gone: ENOENT or ESRCH at the open. */
	CHECK(read_syscall(child, buf, sizeof(buf)) < 0 && (errno == ENOENT || errno == ESRCH),
	      "reaped child: %m");
	return finish();
}
