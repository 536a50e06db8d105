/* SPDX-License-Identifier: Apache-2.0 */
/*
 * File locks: POSIX record locks (F_SETLK/F_SETLKW/F_GETLK) between processes (conflicts,
 * splitting and merging, release on any close and on exit, blocking, EDEADLK), OFD locks
 * (owned by the open file description, conflicting with POSIX locks), and flock(2). Runs in a
 * scratch directory under /tmp; forks.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"

static char dir[64], path[128];

static int lk(int fd, int cmd, short type, off_t start, off_t len)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len };

	return fcntl(fd, cmd, &fl);
}

/* F_GETLK (or F_OFD_GETLK) for type over [start, start+len): the answer in *out. */
static int getlk(int fd, int cmd, short type, off_t start, off_t len, struct flock *out)
{
	*out = (struct flock){
		.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len
	};
	return fcntl(fd, cmd, out);
}

/* Runs fn(arg) in a child with its own checks; returns its exit status (0: all passed). */
static int in_child(void (*fn)(void *), void *arg)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		checks_passed = checks_failed = 0;
		fn(arg);
		fflush(stdout);
		_exit(checks_failed ? 1 : 0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

struct expect {
	short type; /* of the request */
	off_t start, len; /* of the request */
	short want_type; /* F_UNLCK: no conflict */
	off_t want_start, want_len;
	pid_t want_pid;
};

static void child_getlk(void *arg)
{
	const struct expect *e = arg;
	int fd = open(path, O_RDWR);
	struct flock fl;

	CHECK_OK(fd);
	CHECK_OK(getlk(fd, F_GETLK, e->type, e->start, e->len, &fl));
	CHECK(fl.l_type == e->want_type, "type %d, want %d", fl.l_type, e->want_type);
	if (e->want_type != F_UNLCK) {
		CHECK(fl.l_whence == SEEK_SET, "whence %d", fl.l_whence);
		CHECK(fl.l_start == e->want_start && fl.l_len == e->want_len,
		      "range %ld+%ld, want %ld+%ld", (long)fl.l_start, (long)fl.l_len,
		      (long)e->want_start, (long)e->want_len);
		CHECK(fl.l_pid == e->want_pid, "pid %d, want %d", fl.l_pid, e->want_pid);
		/* F_SETLK of the same range conflicts too. */
		CHECK_ERR(lk(fd, F_SETLK, e->type, e->start, e->len), EAGAIN);
	} else {
		CHECK_OK(lk(fd, F_SETLK, e->type, e->start, e->len));
	}
	close(fd);
}

/* What a child sees when it asks for type over [start, start+len). */
static void expect_conflict(short type, off_t start, off_t len, short want_type, off_t want_start,
			    off_t want_len, pid_t pid)
{
	struct expect e = { type, start, len, want_type, want_start, want_len, pid };

	CHECK(in_child(child_getlk, &e) == 0, "child saw something else (%d %ld+%ld)", type,
	      (long)start, (long)len);
}

static void test_posix(void)
{
	int fd = open(path, O_RDWR), fd2, wr, rd;
	pid_t me = getpid();
	struct flock fl;

	CHECK_OK(fd);
	CHECK_OK(lk(fd, F_SETLK, F_WRLCK, 0, 10));
	/* Own locks never conflict. */
	CHECK_OK(getlk(fd, F_GETLK, F_WRLCK, 0, 100, &fl));
	CHECK(fl.l_type == F_UNLCK, "own lock reported: %d", fl.l_type);
	expect_conflict(F_RDLCK, 5, 1, F_WRLCK, 0, 10, me);
	expect_conflict(F_WRLCK, 10, 10, F_UNLCK, 0, 0, 0);

	/* Unlocking the middle splits the lock. */
	CHECK_OK(lk(fd, F_SETLK, F_UNLCK, 3, 2));
	expect_conflict(F_WRLCK, 0, 100, F_WRLCK, 0, 3, me);
	expect_conflict(F_WRLCK, 3, 2, F_UNLCK, 0, 0, 0);
	expect_conflict(F_WRLCK, 4, 100, F_WRLCK, 5, 5, me);
	/* A read lock inside a write lock splits it in three; readers may share it. */
	CHECK_OK(lk(fd, F_SETLK, F_RDLCK, 6, 2));
	expect_conflict(F_RDLCK, 5, 5, F_WRLCK, 5, 1, me);
	expect_conflict(F_RDLCK, 6, 2, F_UNLCK, 0, 0, 0);
	expect_conflict(F_WRLCK, 6, 2, F_RDLCK, 6, 2, me);
	expect_conflict(F_RDLCK, 7, 10, F_WRLCK, 8, 2, me);

	/* Adjacent locks of one type merge: one lock over [0, 20). */
	CHECK_OK(lk(fd, F_SETLK, F_UNLCK, 0, 0));
	CHECK_OK(lk(fd, F_SETLK, F_WRLCK, 0, 5));
	CHECK_OK(lk(fd, F_SETLK, F_WRLCK, 10, 10));
	CHECK_OK(lk(fd, F_SETLK, F_WRLCK, 5, 5));
	expect_conflict(F_WRLCK, 0, 0, F_WRLCK, 0, 20, me);
	/* len 0: to the end of the file, and beyond; reported with len 0. */
	CHECK_OK(lk(fd, F_SETLK, F_WRLCK, 50, 0));
	expect_conflict(F_WRLCK, 1000000, 1, F_WRLCK, 50, 0, me);
	/* A negative len locks the bytes before start. */
	CHECK_OK(lk(fd, F_SETLK, F_UNLCK, 0, 0));
	CHECK_OK(lk(fd, F_SETLK, F_WRLCK, 30, -5));
	expect_conflict(F_WRLCK, 0, 0, F_WRLCK, 25, 5, me);
	/* SEEK_CUR and SEEK_END. */
	CHECK_OK(lk(fd, F_SETLK, F_UNLCK, 0, 0));
	CHECK_RET(lseek(fd, 40, SEEK_SET), 40);
	fl = (struct flock){ .l_type = F_WRLCK, .l_whence = SEEK_CUR, .l_start = 2, .l_len = 3 };
	CHECK_OK(fcntl(fd, F_SETLK, &fl));
	expect_conflict(F_WRLCK, 0, 0, F_WRLCK, 42, 3, me);
	fl = (struct flock){ .l_type = F_WRLCK, .l_whence = SEEK_END, .l_start = -10, .l_len = 0 };
	CHECK_OK(fcntl(fd, F_SETLK, &fl));
	expect_conflict(F_WRLCK, 60, 0, F_WRLCK, 90, 0, me);

	/* Errors. */
	CHECK_ERR(lk(fd, F_SETLK, 7, 0, 1), EINVAL);
	fl = (struct flock){ .l_type = F_WRLCK, .l_whence = 3 };
	CHECK_ERR(fcntl(fd, F_SETLK, &fl), EINVAL);
	CHECK_ERR(lk(fd, F_SETLK, F_WRLCK, -1, 1), EINVAL);
	CHECK_ERR(lk(fd, F_SETLK, F_WRLCK, 2, -5), EINVAL);
	CHECK_ERR(getlk(fd, F_GETLK, F_UNLCK, 0, 1, &fl), EINVAL);
	wr = open(path, O_WRONLY);
	rd = open(path, O_RDONLY);
	CHECK_ERR(lk(wr, F_SETLK, F_RDLCK, 0, 1), EBADF);
	CHECK_ERR(lk(rd, F_SETLK, F_WRLCK, 0, 1), EBADF);
	CHECK_OK(lk(rd, F_SETLK, F_UNLCK, 0, 1));
	close(wr);
	close(rd);

	/* Closing any fd of the file drops the process's locks on it (F_GETLK says so). */
	CHECK_OK(lk(fd, F_SETLK, F_WRLCK, 0, 10));
	expect_conflict(F_WRLCK, 0, 1, F_WRLCK, 0, 10, me);
	fd2 = CHECK_OK(open(path, O_RDONLY));
	close((int)fd2);
	expect_conflict(F_WRLCK, 0, 1, F_UNLCK, 0, 0, 0);
	close(fd);
}

static void child_lock_and_exit(void *arg)
{
	int fd = open(path, O_RDWR);

	CHECK_OK(lk(fd, F_SETLK, F_WRLCK, 0, 0));
	/* exits holding it */
}

static void test_release_on_exit(void)
{
	int fd = open(path, O_RDWR);

	CHECK(in_child(child_lock_and_exit, NULL) == 0, "child could not lock");
	CHECK_OK(lk(fd, F_SETLK, F_WRLCK, 0, 0));
	CHECK_OK(lk(fd, F_SETLK, F_UNLCK, 0, 0));
	close(fd);
}

static void test_blocking(void)
{
	int fd = open(path, O_RDWR), p[2], st;
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	pid_t pid;
	char c;

	CHECK_OK(pipe(p));
	CHECK_OK(lk(fd, F_SETLK, F_WRLCK, 0, 10));
	pid = fork();
	if (pid == 0) {
		int cfd = open(path, O_RDWR);

		close(p[0]);
		write(p[1], "x", 1);
		/* Blocks until the parent unlocks. */
		_exit(lk(cfd, F_SETLKW, F_WRLCK, 5, 1) == 0 ? 0 : 1);
	}
	close(p[1]);
	CHECK_RET(read(p[0], &c, 1), 1);
	nanosleep(&ts, NULL);
	CHECK_OK(lk(fd, F_SETLK, F_UNLCK, 0, 10));
	CHECK_RET(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "F_SETLKW in the child failed: %#x", st);
	close(p[0]);
	close(fd);
}

/*
 * Two processes each hold one byte and ask for the other's with F_SETLKW: whichever asks
 * second closes the cycle and gets EDEADLK; it then gives its byte up and the other gets it.
 */
static void test_deadlock(void)
{
	int fd = open(path, O_RDWR), p[2], q[2], st, r, e;
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	pid_t pid;
	char c;

	CHECK_OK(pipe(p));
	CHECK_OK(pipe(q));
	CHECK_OK(lk(fd, F_SETLK, F_WRLCK, 0, 1));
	pid = fork();
	if (pid == 0) {
		int cfd = open(path, O_RDWR), cr;

		if (lk(cfd, F_SETLK, F_WRLCK, 1, 1) < 0)
			_exit(10);
		write(p[1], "x", 1);
		cr = lk(cfd, F_SETLKW, F_WRLCK, 0, 1);
		if (cr < 0 && errno == EDEADLK) {
			lk(cfd, F_SETLK, F_UNLCK, 1, 1);
			_exit(2);
		}
		_exit(cr == 0 ? 0 : 11);
	}
	CHECK_RET(read(p[0], &c, 1), 1);
	nanosleep(&ts, NULL);
	r = lk(fd, F_SETLKW, F_WRLCK, 1, 1);
	e = errno;
	if (r < 0 && e == EDEADLK)
		lk(fd, F_SETLK, F_UNLCK, 0, 1);
	CHECK_RET(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st), "child died: %#x", st);
	/* Exactly one EDEADLK: the child's (status 2, parent got the lock) or the parent's. */
	if (r == 0)
		CHECK(WEXITSTATUS(st) == 2, "parent locked, child status %d", WEXITSTATUS(st));
	else
		CHECK(e == EDEADLK && WEXITSTATUS(st) == 0, "parent: %s, child status %d",
		      strerror(e), WEXITSTATUS(st));
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
	close(fd);
}

static void test_ofd(void)
{
	int a = open(path, O_RDWR), b = open(path, O_RDWR);
	struct flock fl;

	CHECK_OK(lk(a, F_OFD_SETLK, F_WRLCK, 0, 10));
	/* Another open file description of the same process conflicts. */
	CHECK_ERR(lk(b, F_OFD_SETLK, F_RDLCK, 5, 1), EAGAIN);
	CHECK_OK(getlk(b, F_OFD_GETLK, F_RDLCK, 0, 0, &fl));
	CHECK(fl.l_type == F_WRLCK && fl.l_start == 0 && fl.l_len == 10 && fl.l_pid == -1,
	      "OFD_GETLK: type %d %ld+%ld pid %d", fl.l_type, (long)fl.l_start, (long)fl.l_len,
	      fl.l_pid);
	/* POSIX locks of the process conflict with OFD locks too. */
	CHECK_ERR(lk(b, F_SETLK, F_WRLCK, 0, 1), EAGAIN);
	CHECK_OK(getlk(b, F_GETLK, F_WRLCK, 0, 1, &fl));
	CHECK(fl.l_type == F_WRLCK && fl.l_pid == -1, "GETLK: type %d pid %d", fl.l_type, fl.l_pid);
	/* l_pid must be 0. */
	fl = (struct flock){ .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_pid = 1 };
	CHECK_ERR(fcntl(b, F_OFD_SETLK, &fl), EINVAL);
	/* A dup shares the description, hence the lock. */
	{
		int d = dup(a);

		CHECK_OK(lk(d, F_OFD_SETLK, F_WRLCK, 0, 20));
		close(d);
	}
	/* Closing a dup does not drop it; the last close does. */
	CHECK_ERR(lk(b, F_OFD_SETLK, F_WRLCK, 15, 1), EAGAIN);
	close(a);
	CHECK_OK(lk(b, F_OFD_SETLK, F_WRLCK, 0, 20));
	close(b);
}

static void test_flock(void)
{
	int a = open(path, O_RDONLY), b = open(path, O_RDONLY), st;
	pid_t pid;

	CHECK_OK(flock(a, LOCK_EX));
	CHECK_ERR(flock(b, LOCK_EX | LOCK_NB), EWOULDBLOCK);
	CHECK_ERR(flock(b, LOCK_SH | LOCK_NB), EWOULDBLOCK);
	/* flock and POSIX locks are independent. */
	CHECK_OK(lk(b, F_SETLK, F_RDLCK, 0, 0));
	CHECK_OK(lk(b, F_SETLK, F_UNLCK, 0, 0));
	/* Converting to shared lets other readers in. */
	CHECK_OK(flock(a, LOCK_SH));
	CHECK_OK(flock(b, LOCK_SH | LOCK_NB));
	CHECK_ERR(flock(a, LOCK_EX | LOCK_NB), EWOULDBLOCK);
	CHECK_OK(flock(b, LOCK_UN));
	CHECK_OK(flock(a, LOCK_EX | LOCK_NB));
	/* A forked child shares the description: its lock is the parent's. */
	pid = fork();
	if (pid == 0)
		_exit(flock(a, LOCK_EX | LOCK_NB) == 0 ? 0 : 1);
	CHECK_RET(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child could not relock: %#x", st);
	CHECK_ERR(flock(a, 0), EINVAL);
	CHECK_ERR(flock(a, LOCK_SH | LOCK_EX), EINVAL);
	CHECK_ERR(flock(-1, LOCK_SH), EBADF);
	/* The last close drops it. */
	close(a);
	CHECK_OK(flock(b, LOCK_EX | LOCK_NB));
	close(b);
}

int main(void)
{
	int fd;

	strcpy(dir, "/tmp/husk-locks-XXXXXX");
	if (!mkdtemp(dir)) {
		printf("FAIL: mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	snprintf(path, sizeof(path), "%s/f", dir);
	fd = open(path, O_CREAT | O_RDWR, 0644);
	CHECK_RET(write(fd,
			"0123456789012345678901234567890123456789012345678901234567890123"
			"456789012345678901234567890123456789",
			100),
		  100);
	close(fd);

	test_posix();
	test_release_on_exit();
	test_blocking();
	test_deadlock();
	test_ofd();
	test_flock();

	unlink(path);
	rmdir(dir);
	return finish();
}
