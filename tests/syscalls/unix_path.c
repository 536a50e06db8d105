/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unix sockets bound to paths (unix.c covers the sockets themselves): for stream, seqpacket and
 * datagram sockets, the socket file (S_IFSOCK, umask applied), connects through the path from
 * another process, through a relative path from another cwd, a symlink, a hard link and after a
 * rename; EADDRINUSE, ECONNREFUSED (no listener, closed socket, a file that is no socket),
 * EPROTOTYPE, ENOENT after unlink, ENXIO from open(2), and a new socket bound where an old one was
 * unlinked (the old may still be open). Run in the scratch directory under /tmp (the overlay in
 * husk), under /var/tmp (the overlay outside /tmp), under /dev/shm (tmpfs) and in every directory
 * named on the command line (a gofer volume: tests/integration/filesystem.sh).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "check.h"
#include "child.h"
#include "scratch.h"

static const char *cur_dir;

static socklen_t sun_of(struct sockaddr_un *sun, const char *path)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	size_t n = strnlen(path, sizeof(sun->sun_path) - 1);

	memcpy(sun->sun_path, path, n);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
}

static int bind_path(int fd, const char *path)
{
	struct sockaddr_un sun;
	socklen_t len = sun_of(&sun, path);

	return bind(fd, (struct sockaddr *)&sun, len);
}

static int connect_path(int fd, const char *path)
{
	struct sockaddr_un sun;
	socklen_t len = sun_of(&sun, path);

	return connect(fd, (struct sockaddr *)&sun, len);
}

/* A new socket of type connected through path, or -1 (errno set). */
static int dial(int type, const char *path)
{
	int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (connect_path(fd, path) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

static const char *type_name(int type)
{
	return type == SOCK_STREAM ? "stream" : type == SOCK_SEQPACKET ? "seqpacket" : "dgram";
}

/*
 * In a child process: connect through path (with cwd first when not NULL) and send msg; a
 * datagram client given no cwd and a msg starting with "to" sends with sendto(2) instead.
 */
struct client_arg {
	int type;
	const char *cwd, *path, *msg;
};

/* A datagram sent to path by an unconnected socket. */
static void client_sendto(struct client_arg *a)
{
	struct sockaddr_un sun;
	socklen_t len = sun_of(&sun, a->path);
	int fd = CHECK_OK(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));

	CHECK_RET(sendto(fd, a->msg, strlen(a->msg), 0, (struct sockaddr *)&sun, len),
		  (long)strlen(a->msg));
	close(fd);
}

static void client(void *arg)
{
	struct client_arg *a = arg;
	struct timeval tv = { 60, 0 };
	char buf[16] = "";
	int fd;

	if (a->type == SOCK_DGRAM && !a->cwd && strncmp(a->msg, "to", 2) == 0) {
		client_sendto(a);
		return;
	}
	if (a->cwd)
		CHECK_OK(chdir(a->cwd));
	fd = CHECK_OK(dial(a->type, a->path));
	if (fd < 0) {
		printf("  (%s %s through %s)\n", cur_dir, type_name(a->type), a->path);
		return;
	}
	/* Should the wrong socket get the connection, the reply does not come: give up then. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	CHECK_RET(send(fd, a->msg, strlen(a->msg), 0), (long)strlen(a->msg));
	if (a->type != SOCK_DGRAM) {
		CHECK_RET(recv(fd, buf, sizeof(buf), 0), 2);
		CHECK(memcmp(buf, "ok", 2) == 0, "%s: reply %.2s", cur_dir, buf);
	}
	close(fd);
}

/* Runs a client through path; the server srv (listening or datagram) gets its message. */
static void serve_one(int srv, int type, const char *cwd, const char *path, const char *msg)
{
	struct client_arg a = { type, cwd, path, msg };
	char buf[16] = "";
	int cfd, c;
	pid_t pid;
	struct timeval tv = { 60, 0 };

	pid = child_spawn(client, &a, &cfd);
	if (pid < 0)
		return;
	/* The child may have failed to connect: then nothing comes, and the wait ends. */
	setsockopt(srv, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (type == SOCK_DGRAM) {
		CHECK_RET(recv(srv, buf, sizeof(buf), 0), (long)strlen(msg));
	} else {
		c = accept4(srv, NULL, NULL, SOCK_CLOEXEC);
		if (c >= 0) {
			CHECK_RET(recv(c, buf, sizeof(buf), 0), (long)strlen(msg));
			CHECK_RET(send(c, "ok", 2, MSG_NOSIGNAL), 2);
			close(c);
		} else {
			CHECK(0, "%s: accept through %s: %s", cur_dir, path, strerror(errno));
		}
	}
	CHECK(memcmp(buf, msg, strlen(msg)) == 0, "%s %s through %s: got %s", cur_dir,
	      type_name(type), path, buf);
	CHECK_RET(child_reap(pid, cfd), 0);
}

static void path_in(char *buf, size_t len, const char *dir, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

static void type_suite(const char *dir, int type)
{
	char path[200], sym[200], hard[200], moved[200], file[200], name[16];
	struct sockaddr_un got;
	socklen_t glen = sizeof(got);
	struct stat st;
	mode_t old;
	int srv, other, fd;

	snprintf(name, sizeof(name), "s-%s", type_name(type));
	path_in(path, sizeof(path), dir, name);
	srv = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	old = umask(022);
	CHECK_OK(bind_path(srv, path));
	umask(old);
	CHECK(lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 0777) == 0755,
	      "%s: socket file mode 0%o", cur_dir, st.st_mode);
	CHECK(getsockname(srv, (struct sockaddr *)&got, &glen) == 0 &&
		      strcmp(got.sun_path, path) == 0,
	      "%s: getsockname %s", cur_dir, got.sun_path);
	CHECK_ERR(open(path, O_RDONLY | O_CLOEXEC), ENXIO);
	CHECK_ERR(open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC), ENXIO);

	/* Bound, not listening. */
	if (type != SOCK_DGRAM) {
		CHECK_ERR(dial(type, path), ECONNREFUSED);
		CHECK_OK(listen(srv, 8));
	}
	other = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	CHECK_ERR(bind_path(other, path), EADDRINUSE);
	close(other);
	CHECK_ERR(dial(type == SOCK_DGRAM ? SOCK_STREAM : SOCK_DGRAM, path), EPROTOTYPE);

	serve_one(srv, type, NULL, path, "abs");
	if (type == SOCK_DGRAM)
		serve_one(srv, type, NULL, path, "to-path");
	serve_one(srv, type, dir, name, "rel");
	serve_one(srv, type, "/", path + 1, "root-rel");
	path_in(sym, sizeof(sym), dir, "sym");
	if (CHECK_OK(symlink(name, sym)) == 0) {
		serve_one(srv, type, NULL, sym, "sym");
		unlink(sym);
	}
	path_in(hard, sizeof(hard), dir, "hard");
	if (CHECK_OK(link(path, hard)) == 0) {
		serve_one(srv, type, NULL, hard, "hard");
		unlink(hard);
	}
	path_in(moved, sizeof(moved), dir, "moved");
	if (CHECK_OK(rename(path, moved)) == 0) {
		CHECK_ERR(dial(type, path), ENOENT);
		serve_one(srv, type, NULL, moved, "moved");
		CHECK_OK(rename(moved, path));
	}

	/* A new socket bound where the old one was unlinked: the path reaches the new one only. */
	CHECK_OK(unlink(path));
	CHECK_ERR(dial(type, path), ENOENT);
	other = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	CHECK_OK(bind_path(other, path));
	if (type != SOCK_DGRAM)
		CHECK_OK(listen(other, 8));
	serve_one(other, type, NULL, path, "new");

	/* The socket closed, its file stays: ECONNREFUSED. */
	close(other);
	CHECK(lstat(path, &st) == 0 && S_ISSOCK(st.st_mode), "%s: socket file after close", dir);
	CHECK_ERR(dial(type, path), ECONNREFUSED);
	CHECK_OK(unlink(path));
	close(srv);

	/* A file that is not a socket. */
	path_in(file, sizeof(file), dir, "plain");
	fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (CHECK_OK(fd) >= 0)
		close(fd);
	CHECK_ERR(dial(type, file), ECONNREFUSED);
	unlink(file);
}

static void path_suite(const char *dir)
{
	char path[200];

	cur_dir = dir;
	type_suite(dir, SOCK_STREAM);
	type_suite(dir, SOCK_SEQPACKET);
	type_suite(dir, SOCK_DGRAM);
	path_in(path, sizeof(path), dir, "no/such/dir");
	{
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

		CHECK_ERR(bind_path(fd, path), ENOENT);
		close(fd);
	}
}

int main(int argc, char **argv)
{
	const char *d;

	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	scratch_make("unix");
	path_suite(scratch);
	/* Both are writable in husk; a machine without them skips them. */
	scratch_suite_under("/var/tmp", "unix", path_suite, in_husk());
	scratch_suite_under("/dev/shm", "unix", path_suite, in_husk());
	for (int i = 1; i < argc; i++) {
		if ((d = scratch_extra(argv[i], "unix")))
			path_suite(d);
		else
			CHECK(0, "cannot make a directory in %s", argv[i]);
	}
	return finish();
}
