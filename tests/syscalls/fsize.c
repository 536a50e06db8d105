/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RLIMIT_FSIZE: a write that reaches the limit is short, one at or past it fails with EFBIG
 * and sends SIGXFSZ (whose default action kills), truncation past it too; shrinking and
 * writes of other files (pipes) are not limited. Runs in children (the limit is theirs) on a
 * scratch directory under /tmp and on /dev/shm.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "check.h"
#include "child.h"
#include "scratch.h"

#define LIMIT 10000

static volatile sig_atomic_t xfsz;

static void on_xfsz(int sig)
{
	xfsz++;
}

static void limited(void *arg)
{
	const char *path = arg;
	struct rlimit rl = { LIMIT, RLIM_INFINITY };
	static char buf[8192];
	struct stat st;
	int fd, p[2];

	signal(SIGXFSZ, on_xfsz);
	CHECK_RET(setrlimit(RLIMIT_FSIZE, &rl), 0);
	fd = CHECK_OK(open(path, O_CREAT | O_RDWR | O_TRUNC, 0644));
	CHECK_RET(write(fd, buf, 8000), 8000);
	/* Straddling the limit: short, no signal. */
	CHECK_RET(write(fd, buf, 4000), LIMIT - 8000);
	CHECK(xfsz == 0, "SIGXFSZ %d times", (int)xfsz);
	/* At the limit: EFBIG and SIGXFSZ. */
	CHECK_ERR(write(fd, buf, 1), EFBIG);
	CHECK(xfsz == 1, "SIGXFSZ %d times", (int)xfsz);
	/* An empty write at the limit is not refused. */
	CHECK_RET(write(fd, buf, 0), 0);
	CHECK_ERR(pwrite(fd, buf, 10, 20000), EFBIG);
	CHECK(xfsz == 2, "SIGXFSZ %d times", (int)xfsz);
	/* Below the limit, a pwrite is cut at it. */
	CHECK_RET(pwrite(fd, buf, 100, LIMIT - 10), 10);
	CHECK_RET(fstat(fd, &st), 0);
	CHECK(st.st_size == LIMIT, "size %ld", (long)st.st_size);
	/* Truncation: growing past the limit fails, shrinking works. */
	CHECK_ERR(ftruncate(fd, LIMIT + 1), EFBIG);
	CHECK(xfsz == 3, "SIGXFSZ %d times", (int)xfsz);
	CHECK_ERR(truncate(path, 50000), EFBIG);
	CHECK(xfsz == 4, "SIGXFSZ %d times", (int)xfsz);
	CHECK_RET(ftruncate(fd, 100), 0);
	CHECK_RET(ftruncate(fd, LIMIT), 0);
	/* O_APPEND at the limit. */
	close(fd);
	fd = CHECK_OK(open(path, O_WRONLY | O_APPEND));
	CHECK_ERR(write(fd, buf, 1), EFBIG);
	CHECK(xfsz == 5, "SIGXFSZ %d times", (int)xfsz);
	close(fd);
	/* Pipes are not files with a size. */
	CHECK_OK(pipe(p));
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	CHECK_RET(write(p[1], buf, 8192), 8192);
	CHECK_RET(write(p[1], buf, 8192), 8192);
	CHECK(xfsz == 5, "SIGXFSZ %d times", (int)xfsz);
	close(p[0]);
	close(p[1]);
	CHECK_RET(unlink(path), 0);
}

/* SIGXFSZ's default action kills the writer. */
static void killed(const char *path)
{
	int st = 0;
	pid_t pid = fork();

	if (pid == 0) {
		struct rlimit rl = { 100, RLIM_INFINITY };
		char buf[200] = { 0 };
		int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);

		signal(SIGXFSZ, SIG_DFL);
		if (fd < 0 || setrlimit(RLIMIT_FSIZE, &rl) < 0)
			_exit(2);
		if (write(fd, buf, 200) != 100)
			_exit(3);
		write(fd, buf, 1);
		_exit(4);
	}
	CHECK(pid > 0, "fork");
	CHECK_RET(waitpid(pid, &st, 0), pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGXFSZ, "status %#x", st);
	unlink(path);
}

int main(void)
{
	char shm[64];

	scratch_make("fsize");
	in_child(limited, "f");
	snprintf(shm, sizeof(shm), "/dev/shm/husk-fsize-%d", (int)getpid());
	in_child(limited, shm);
	killed("k");
	return finish();
}
