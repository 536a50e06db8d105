/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Named pipes (FIFOs) in the filesystem: open's blocking rules, one pipe per inode shared by
 * every opener (other paths, hard links, renames, other processes), EOF and EPIPE, poll, select
 * and epoll, fstat, and no data kept once the last opener is gone. Run in several directories:
 * the scratch directory under /tmp (the overlay in husk), one under /var/tmp (the overlay again,
 * outside /tmp), one under /dev/shm (tmpfs), and every directory named on the command line (a
 * gofer volume: tests/integration/filesystem.sh). `-e PATH` names a FIFO made beforehand that the
 * program must not create (one in the overlay's read-only lower layer) and checks opens of it.
 *
 * No sleeps synchronise the processes: a blocked opener reports only after its open returned,
 * and the other side opens afterwards or polls a state (ENXIO of a non-blocking writer).
 */
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"
#include "child.h"
#include "scratch.h"

static const char *cur_dir; /* the directory of the current suite, for messages */

static void path_in(char *buf, size_t len, const char *dir, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

/* Opens path with flags through the raw system call (the kernel's errno). */
static int fifo_open(const char *path, int flags)
{
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC, 0);
}

/* Waits (30 s at most, a generous bound for a busy machine) until a reader of path is open. */
static int open_writer_when_reader(const char *path)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		int fd = fifo_open(path, O_WRONLY | O_NONBLOCK);

		if (fd >= 0 || errno != ENXIO)
			return fd;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec > 30)
			return -1;
		/* A short sleep, not sched_yield: a spinning writer starved the reader it waits for
		 * on a loaded machine (a 30 s stall in CI). */
		nanosleep(&(struct timespec){ .tv_nsec = 200000 }, NULL);
	}
}

static unsigned int poll_now(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };

	return poll(&p, 1, 0) == 1 ? (unsigned int)p.revents : 0;
}

/* Non-blocking opens, O_RDWR, data through two openers, EOF, POLLHUP, EPIPE, ESPIPE. */
static void check_nonblocking(const char *path)
{
	struct stat st, fst;
	char buf[16];
	int r, w, rw, n;

	CHECK_ERR(fifo_open(path, O_WRONLY | O_NONBLOCK), ENXIO);
	r = CHECK_OK(fifo_open(path, O_RDONLY | O_NONBLOCK));
	if (r < 0)
		return;
	CHECK_OK(stat(path, &st));
	CHECK_OK(fstat(r, &fst));
	CHECK(S_ISFIFO(fst.st_mode), "%s: fstat mode 0%o", cur_dir, fst.st_mode);
	CHECK(fst.st_ino == st.st_ino && fst.st_dev == st.st_dev, "%s: fstat is the path's inode",
	      cur_dir);
	CHECK(fst.st_size == 0, "%s: st_size %lld", cur_dir, (long long)fst.st_size);
	/* No writer ever: EOF, yet no POLLHUP until one came. */
	CHECK_RET(read(r, buf, sizeof(buf)), 0);
	CHECK_RET(poll_now(r, POLLIN), 0);
	CHECK_ERR(lseek(r, 0, SEEK_SET), ESPIPE);
	CHECK(fcntl(r, F_GETPIPE_SZ) >= 4096, "%s: F_GETPIPE_SZ", cur_dir);

	w = CHECK_OK(fifo_open(path, O_WRONLY | O_NONBLOCK));
	CHECK_RET(poll_now(w, POLLOUT), POLLOUT);
	CHECK_ERR(read(r, buf, sizeof(buf)), EAGAIN);
	CHECK_RET(write(w, "abc", 3), 3);
	CHECK_RET(poll_now(r, POLLIN), POLLIN);
	n = -1;
	CHECK(ioctl(r, FIONREAD, &n) == 0 && n == 3, "%s: FIONREAD %d", cur_dir, n);
	CHECK_RET(read(r, buf, sizeof(buf)), 3);
	CHECK(memcmp(buf, "abc", 3) == 0, "%s: read back %.3s", cur_dir, buf);

	/* O_RDWR never blocks and joins the same pipe. */
	rw = CHECK_OK(fifo_open(path, O_RDWR));
	CHECK_RET(write(rw, "xy", 2), 2);
	CHECK_RET(read(r, buf, sizeof(buf)), 2);
	CHECK_RET(write(w, "z", 1), 1);
	CHECK_RET(read(rw, buf, sizeof(buf)), 1);
	CHECK(buf[0] == 'z', "%s: O_RDWR read %c", cur_dir, buf[0]);
	CHECK_RET(poll_now(rw, POLLIN | POLLOUT), POLLOUT);
	close(rw);

	/* The last writer gone: EOF and POLLHUP. */
	CHECK_RET(write(w, "q", 1), 1);
	close(w);
	CHECK_RET(read(r, buf, sizeof(buf)), 1);
	CHECK_RET(read(r, buf, sizeof(buf)), 0);
	CHECK_RET(poll_now(r, POLLIN), POLLHUP);

	/* The last reader gone: EPIPE (SIGPIPE is ignored here). */
	w = CHECK_OK(fifo_open(path, O_WRONLY | O_NONBLOCK));
	close(r);
	CHECK_ERR(write(w, "x", 1), EPIPE);
	CHECK(poll_now(w, POLLOUT) & POLLERR, "%s: POLLERR without reader", cur_dir);
	close(w);

	/* Access mode 3 names neither end. */
	CHECK_ERR(fifo_open(path, O_ACCMODE | O_NONBLOCK), EINVAL);
}

/* Data written and left unread is gone with the last opener; the inode keeps none. */
static void check_no_data_kept(const char *path)
{
	struct stat st;
	char buf[8];
	int rw, n = -1;

	rw = CHECK_OK(fifo_open(path, O_RDWR | O_NONBLOCK));
	CHECK_RET(write(rw, "left", 4), 4);
	CHECK(stat(path, &st) == 0 && st.st_size == 0, "%s: st_size of an open FIFO", cur_dir);
	close(rw);
	rw = CHECK_OK(fifo_open(path, O_RDWR | O_NONBLOCK));
	CHECK(ioctl(rw, FIONREAD, &n) == 0 && n == 0, "%s: FIONREAD after reopen %d", cur_dir, n);
	CHECK_ERR(read(rw, buf, sizeof(buf)), EAGAIN);
	close(rw);
}

/* Hard links and renames keep the inode's pipe; a relative path from the directory too. */
static void check_links(const char *dir, const char *path)
{
	char lnk[256], moved[256], buf[8];
	int r, w, w2;

	path_in(lnk, sizeof(lnk), dir, "link");
	path_in(moved, sizeof(moved), dir, "moved");
	if (CHECK_OK(link(path, lnk)) < 0)
		return;
	r = CHECK_OK(fifo_open(lnk, O_RDONLY | O_NONBLOCK));
	w = CHECK_OK(fifo_open(path, O_WRONLY | O_NONBLOCK));
	CHECK_RET(write(w, "L", 1), 1);
	CHECK_RET(read(r, buf, sizeof(buf)), 1);
	CHECK_OK(rename(lnk, moved));
	w2 = CHECK_OK(fifo_open(moved, O_WRONLY | O_NONBLOCK));
	CHECK_RET(write(w2, "M", 1), 1);
	CHECK_RET(read(r, buf, sizeof(buf)), 1);
	CHECK(buf[0] == 'M', "%s: read %c through the renamed link", cur_dir, buf[0]);
	close(w2);
	close(w);
	close(r);
	CHECK_OK(unlink(moved));
}

/*
 * A FIFO removed while open and made again at the same path is another pipe (a host directory
 * may give the new FIFO the old one's inode number).
 */
static void check_remade(const char *path)
{
	struct stat before, after;
	int old, new;
	char buf[8];

	old = CHECK_OK(fifo_open(path, O_RDWR | O_NONBLOCK));
	if (old < 0)
		return;
	CHECK_RET(write(old, "old", 3), 3);
	CHECK_OK(fstat(old, &before));
	CHECK_OK(unlink(path));
	CHECK_OK(mkfifo(path, 0644));
	new = CHECK_OK(fifo_open(path, O_RDWR | O_NONBLOCK));
	CHECK_OK(fstat(new, &after));
	CHECK_ERR(read(new, buf, sizeof(buf)), EAGAIN);
	CHECK_RET(write(new, "n", 1), 1);
	CHECK_RET(read(old, buf, sizeof(buf)), 3);
	CHECK_ERR(read(old, buf, sizeof(buf)), EAGAIN);
	CHECK_RET(read(new, buf, sizeof(buf)), 1);
	close(new);
	close(old);
	if (before.st_ino == after.st_ino)
		printf("  (%s: the new FIFO has the old inode number)\n", cur_dir);
}

/* poll, select and epoll wait for a writer in another process. */
struct waiter_arg {
	const char *path;
	int how; /* 0 poll, 1 select, 2 epoll */
	int ready; /* the child writes a byte here once its open returned */
};

static void waiter_child(void *arg)
{
	struct waiter_arg *a = arg;
	char c;
	int fd, ok = 0;

	fd = CHECK_OK(fifo_open(a->path, O_RDONLY | O_NONBLOCK));
	if (fd < 0)
		return;
	CHECK_RET(write(a->ready, "o", 1), 1);
	if (a->how == 0) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		ok = poll(&p, 1, 60000) == 1 && (p.revents & POLLIN);
	} else if (a->how == 1) {
		fd_set rs;
		struct timeval tv = { 60, 0 };

		FD_ZERO(&rs);
		FD_SET(fd, &rs);
		ok = select(fd + 1, &rs, NULL, NULL, &tv) == 1 && FD_ISSET(fd, &rs);
	} else {
		struct epoll_event ev = { .events = EPOLLIN }, got;
		int ep = epoll_create1(EPOLL_CLOEXEC);

		ev.data.fd = fd;
		ok = epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0 &&
		     epoll_wait(ep, &got, 1, 60000) == 1 && (got.events & EPOLLIN);
		close(ep);
	}
	CHECK(ok, "%s: wait %d for data", cur_dir, a->how);
	CHECK_RET(read(fd, &c, 1), 1);
	CHECK(c == 'p', "%s: waited-for byte %c", cur_dir, c);
	close(fd);
}

static void check_waits(const char *path)
{
	for (int how = 0; how < 3; how++) {
		struct waiter_arg a = { path, how, -1 };
		int sync[2], cfd, w;
		pid_t pid;
		char c;

		if (pipe2(sync, O_CLOEXEC) < 0)
			return;
		a.ready = sync[1];
		pid = child_spawn(waiter_child, &a, &cfd);
		close(sync[1]);
		/* The child's reader is open once it said so; the writer opens afterwards. */
		if (read(sync[0], &c, 1) == 1) {
			w = CHECK_OK(fifo_open(path, O_WRONLY | O_NONBLOCK));
			CHECK_RET(write(w, "p", 1), 1);
			close(w);
		}
		close(sync[0]);
		if (pid > 0)
			CHECK_RET(child_reap(pid, cfd), 0);
	}
}

/* A blocking O_RDONLY returns when a writer opens; the write end here is the parent's. */
struct opener_arg {
	const char *path;
	int ready;
};

static void blocked_reader(void *arg)
{
	struct opener_arg *a = arg;
	char buf[8];
	int fd;

	fd = CHECK_OK(fifo_open(a->path, O_RDONLY));
	if (fd < 0)
		return;
	CHECK_RET(write(a->ready, "r", 1), 1);
	/* Had the open not waited for the writer, this would be EOF. */
	CHECK_RET(read(fd, buf, sizeof(buf)), 5);
	CHECK(memcmp(buf, "hello", 5) == 0, "%s: blocked reader read %.5s", cur_dir, buf);
	CHECK_RET(read(fd, buf, sizeof(buf)), 0);
	close(fd);
}

static void blocked_writer(void *arg)
{
	struct opener_arg *a = arg;
	int fd;

	CHECK_RET(write(a->ready, "b", 1), 1); /* about to open */
	fd = CHECK_OK(fifo_open(a->path, O_WRONLY));
	if (fd < 0)
		return;
	/* Had the open not waited for the reader, this would be EPIPE. */
	CHECK_RET(write(fd, "world", 5), 5);
	close(fd);
}

static void check_blocking_opens(const char *path)
{
	struct opener_arg a = { path, -1 };
	int sync[2], cfd, fd;
	char c, buf[8];
	pid_t pid;

	/* Reader first: a non-blocking writer succeeds once the blocked reader counts. */
	if (pipe2(sync, O_CLOEXEC) < 0)
		return;
	a.ready = sync[1];
	pid = child_spawn(blocked_reader, &a, &cfd);
	close(sync[1]);
	fd = CHECK_OK(open_writer_when_reader(path));
	CHECK_RET(read(sync[0], &c, 1), 1);
	CHECK_RET(write(fd, "hello", 5), 5);
	close(fd);
	close(sync[0]);
	if (pid > 0)
		CHECK_RET(child_reap(pid, cfd), 0);

	/* Writer first: the parent's blocking reader opens after the writer said it would. */
	if (pipe2(sync, O_CLOEXEC) < 0)
		return;
	a.ready = sync[1];
	pid = child_spawn(blocked_writer, &a, &cfd);
	close(sync[1]);
	CHECK_RET(read(sync[0], &c, 1), 1);
	fd = CHECK_OK(fifo_open(path, O_RDONLY));
	CHECK_RET(read(fd, buf, sizeof(buf)), 5);
	CHECK(memcmp(buf, "world", 5) == 0, "%s: reader read %.5s", cur_dir, buf);
	CHECK_RET(read(fd, buf, sizeof(buf)), 0);
	close(fd);
	close(sync[0]);
	if (pid > 0)
		CHECK_RET(child_reap(pid, cfd), 0);
}

/* Signals during a blocked open: EINTR without SA_RESTART, a restarted open with it. */
static volatile sig_atomic_t alarms;
static int alarm_fd = -1;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
	if (alarm_fd >= 0 && write(alarm_fd, "a", 1) < 0)
		alarm_fd = -1;
}

static void arm_timer(long usec)
{
	struct itimerval it = { { 0, usec }, { 0, usec } };

	setitimer(ITIMER_REAL, &it, NULL);
}

static void eintr_child(void *arg)
{
	struct opener_arg *a = arg;
	struct sigaction sa = { .sa_handler = on_alarm };

	sigaction(SIGALRM, &sa, NULL);
	/* A timer that repeats: one of its signals comes while the open waits, however late. */
	arm_timer(20000);
	CHECK_ERR(fifo_open(a->path, O_RDONLY), EINTR);
	arm_timer(0);
	CHECK_ERR(fifo_open(a->path, O_WRONLY | O_NONBLOCK), ENXIO); /* the reader went away */
}

static void restart_child(void *arg)
{
	struct opener_arg *a = arg;
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	int fd;

	alarm_fd = a->ready;
	sigaction(SIGALRM, &sa, NULL);
	arm_timer(20000);
	fd = CHECK_OK(fifo_open(a->path, O_RDONLY));
	arm_timer(0);
	alarm_fd = -1;
	CHECK(alarms >= 2, "%s: %d signals during the restarted open", cur_dir, (int)alarms);
	if (fd >= 0)
		close(fd);
}

static void check_signals(const char *path)
{
	struct opener_arg a = { path, -1 };
	int sync[2], cfd, fd;
	char c[2];
	pid_t pid;

	CHECK_RET(in_child(eintr_child, &a), 0);

	if (pipe2(sync, O_CLOEXEC) < 0)
		return;
	a.ready = sync[1];
	pid = child_spawn(restart_child, &a, &cfd);
	close(sync[1]);
	/* Two handlers ran: the child is in (or entering) its open, which restarts. */
	CHECK_RET(read(sync[0], c, 1) + read(sync[0], c + 1, 1), 2);
	fd = CHECK_OK(open_writer_when_reader(path));
	if (fd >= 0)
		close(fd);
	close(sync[0]);
	if (pid > 0)
		CHECK_RET(child_reap(pid, cfd), 0);
}

/* Every check in directory dir (made by the caller). */
static void fifo_suite(const char *dir)
{
	char path[256];
	struct stat st;

	cur_dir = dir;
	path_in(path, sizeof(path), dir, "f");
	if (CHECK_OK(mkfifo(path, 0644)) < 0)
		return;
	CHECK(lstat(path, &st) == 0 && S_ISFIFO(st.st_mode), "%s: mkfifo made a FIFO", dir);
	check_nonblocking(path);
	check_no_data_kept(path);
	check_links(dir, path);
	check_waits(path);
	check_blocking_opens(path);
	check_signals(path);
	check_remade(path);
	/* mknod S_IFIFO makes one too. */
	path_in(path, sizeof(path), dir, "n");
	if (CHECK_OK(mknod(path, S_IFIFO | 0600, 0)) == 0) {
		int r = CHECK_OK(fifo_open(path, O_RDONLY | O_NONBLOCK));
		int w = CHECK_OK(fifo_open(path, O_WRONLY | O_NONBLOCK));

		CHECK_RET(write(w, "n", 1), 1);
		CHECK_RET(read(r, path, 1), 1);
		close(w);
		close(r);
	}
}

/* A FIFO that exists already (the overlay's lower layer): opens, data, blocking, EOF. */
static void existing_suite(const char *path)
{
	struct stat st;

	cur_dir = path;
	CHECK(stat(path, &st) == 0 && S_ISFIFO(st.st_mode), "%s is not a FIFO", path);
	check_nonblocking(path);
	check_no_data_kept(path);
	check_waits(path);
	check_blocking_opens(path);
}

int main(int argc, char **argv)
{
	const char *d;

	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	scratch_make("fifo");
	fifo_suite(scratch);
	/* Both are writable in husk; a machine without them skips them. */
	scratch_suite_under("/var/tmp", "fifo", fifo_suite, in_husk());
	scratch_suite_under("/dev/shm", "fifo", fifo_suite, in_husk());
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-e") == 0 && i + 1 < argc) {
			existing_suite(argv[++i]);
		} else if ((d = scratch_extra(argv[i], "fifo"))) {
			fifo_suite(d);
		} else {
			CHECK(0, "cannot make a directory in %s", argv[i]);
		}
	}
	return finish();
}
