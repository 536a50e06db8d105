/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Conformance: execveat(2)'s corners. AT_EMPTY_PATH on a descriptor of a binary and of a `#!`
 * script (which the interpreter reads as /dev/fd/N), on an O_CLOEXEC descriptor (fine for a
 * binary; ENOENT for a script, whose interpreter could not open /dev/fd/N once it is closed),
 * AT_SYMLINK_NOFOLLOW on a symlink (ELOOP), relative paths against a directory descriptor.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "check.h"
#include "scratch.h"

#define SCRIPT "#!/bin/sh\n[ \"$0\" = \"$WANT\" ] || exit 9\nexit 5\n"

/*
 * Forks a child that runs execveat(dirfd, path, {argv0, "-c", cmd}, {WANT=want}, flags).
 * Returns the exit status of the program, or 100 + errno when execveat failed.
 */
static int run_cmd(int dirfd, const char *path, const char *argv0, const char *cmd,
		   const char *want, int flags)
{
	char env[256];
	int st;
	pid_t pid;

	snprintf(env, sizeof(env), "WANT=%s", want ? want : "");
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		char *argv[] = { (char *)argv0, "-c", (char *)cmd, NULL };
		char *envp[] = { env, "PATH=/usr/bin:/bin", NULL };

		syscall(SYS_execveat, dirfd, path, argv, envp, flags);
		_exit(100 + errno);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 200 + WTERMSIG(st);
}

/* run_cmd of `exit 7`. */
static int run(int dirfd, const char *path, const char *argv0, const char *want, int flags)
{
	return run_cmd(dirfd, path, argv0, "exit 7", want, flags);
}

static int write_file(const char *name, const char *text, mode_t mode)
{
	int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, mode);
	size_t len = strlen(text);

	if (fd < 0)
		return -1;
	if (write(fd, text, len) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	close(fd);
	return chmod(name, mode);
}

int main(void)
{
	char want[128];
	int fd, dir;

	scratch_make("execat");
	CHECK_OK(write_file("script", SCRIPT, 0755));
	CHECK_OK(symlink("/bin/sh", "link"));

	/* A binary through its descriptor, with and without O_CLOEXEC. */
	fd = CHECK_OK(open("/bin/sh", O_RDONLY));
	CHECK_RET(run(fd, "", "sh", NULL, AT_EMPTY_PATH), 7);
	/* The process is named after the file (the target of /bin/sh), not the descriptor. */
	char real[PATH_MAX], *base;
	if (realpath("/bin/sh", real)) {
		base = strrchr(real, '/') + 1;
		CHECK_RET(
			run_cmd(fd, "", "sh",
				"read c < /proc/$$/comm; [ \"$c\" = \"$WANT\" ] && exit 3; exit 4",
				base, AT_EMPTY_PATH),
			3);
	}
	close(fd);
	fd = CHECK_OK(open("/bin/sh", O_RDONLY | O_CLOEXEC));
	CHECK_RET(run(fd, "", "sh", NULL, AT_EMPTY_PATH), 7);
	/* Without AT_EMPTY_PATH an empty path is ENOENT. */
	CHECK_RET(run(fd, "", "sh", NULL, 0), 100 + ENOENT);
	close(fd);

	/* A script through its descriptor: the interpreter is given /dev/fd/N. */
	fd = CHECK_OK(open("script", O_RDONLY));
	snprintf(want, sizeof(want), "/dev/fd/%d", fd);
	CHECK_RET(run(fd, "", "script", want, AT_EMPTY_PATH), 5);
	close(fd);
	fd = CHECK_OK(open("script", O_RDONLY | O_CLOEXEC));
	CHECK_RET(run(fd, "", "script", want, AT_EMPTY_PATH), 100 + ENOENT);
	close(fd);

	/* A script relative to a directory descriptor: /dev/fd/N/name. */
	dir = CHECK_OK(open(".", O_RDONLY | O_DIRECTORY));
	snprintf(want, sizeof(want), "/dev/fd/%d/script", dir);
	CHECK_RET(run(dir, "script", "script", want, 0), 5);
	/* Absolute paths ignore the descriptor, and keep their name. */
	snprintf(want, sizeof(want), "%s/script", scratch);
	CHECK_RET(run(dir, want, "script", want, 0), 5);
	CHECK_RET(run(-1, want, "script", want, 0), 5);

	/* AT_SYMLINK_NOFOLLOW: a symlink is ELOOP, a regular file runs. */
	CHECK_RET(run(dir, "link", "sh", NULL, AT_SYMLINK_NOFOLLOW), 100 + ELOOP);
	CHECK_RET(run(dir, "link", "sh", NULL, 0), 7);
	CHECK_RET(run(dir, "script", "script", NULL, 0x1), 100 + EINVAL);
	close(dir);
	return finish();
}
