/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sendfile(2), splice(2), tee(2) and copy_file_range(2) between regular files, pipes and
 * sockets: data, offsets and file positions, and Linux's errors. Works in a scratch directory
 * under /tmp.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "scratch.h"

#define DATA_LEN 200000 /* more than one bounce buffer and than a pipe */

static char data[DATA_LEN];

static int make_file(const char *name, const void *buf, size_t len)
{
	int fd = CHECK_OK(open(name, O_RDWR | O_CREAT | O_TRUNC, 0644));

	CHECK_RET(write(fd, buf, len), (long)len);
	CHECK_RET(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

/* Reads exactly len bytes (or to EOF) from fd into buf; returns how many. */
static size_t read_all(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t r = read(fd, (char *)buf + got, len - got);

		if (r <= 0)
			break;
		got += (size_t)r;
	}
	return got;
}

static void test_sendfile_file_to_socket(void)
{
	int fd = make_file("src", data, DATA_LEN), sv[2];
	static char back[DATA_LEN];
	size_t moved = 0;

	CHECK_RET(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	/* Without an offset: the file position moves. Another thread is not needed: the unix
	 * socket takes 208 KiB before a reader must drain it. */
	while (moved < DATA_LEN) {
		ssize_t r = sendfile(sv[0], fd, NULL, DATA_LEN - moved);

		if (r <= 0)
			break;
		moved += (size_t)r;
	}
	CHECK(moved == DATA_LEN, "sendfile moved %zu", moved);
	CHECK_RET(lseek(fd, 0, SEEK_CUR), DATA_LEN);
	CHECK_RET(sendfile(sv[0], fd, NULL, 100), 0); /* at the end */
	shutdown(sv[0], SHUT_WR);
	CHECK(read_all(sv[1], back, DATA_LEN) == DATA_LEN && !memcmp(back, data, DATA_LEN),
	      "socket got other bytes");
	close(sv[0]);
	close(sv[1]);
	close(fd);
}

static void test_sendfile_offset(void)
{
	int fd = make_file("src", data, 1000), p[2];
	off_t off = 100;
	char buf[64];

	CHECK_RET(pipe(p), 0);
	CHECK_RET(sendfile(p[1], fd, &off, 50), 50);
	CHECK(off == 150, "offset %lld", (long long)off);
	CHECK_RET(lseek(fd, 0, SEEK_CUR), 0); /* the file position stays */
	CHECK_RET(read(p[0], buf, sizeof(buf)), 50);
	CHECK(!memcmp(buf, data + 100, 50), "pipe got other bytes");
	/* Past the end: nothing, and the offset stays. */
	off = 5000;
	CHECK_RET(sendfile(p[1], fd, &off, 10), 0);
	CHECK(off == 5000, "offset %lld", (long long)off);
	off = -1;
	CHECK_ERR(sendfile(p[1], fd, &off, 10), EINVAL);
	/* An offset on a stream input, a non-readable input, an O_APPEND output. */
	off = 0;
	CHECK_ERR(sendfile(p[1], p[0], &off, 10), ESPIPE);
	CHECK_ERR(sendfile(p[1], p[1], NULL, 10), EBADF);
	CHECK_ERR(sendfile(p[1], 999, NULL, 10), EBADF);
	{
		int app = CHECK_OK(open("app", O_WRONLY | O_CREAT | O_APPEND, 0644));

		CHECK_ERR(sendfile(app, fd, NULL, 10), EINVAL);
		close(app);
	}
	CHECK_ERR(sendfile(p[1], fd, (off_t *)8, 10), EFAULT);
	close(p[0]);
	close(p[1]);
	close(fd);
}

static void test_splice_pipe_file(void)
{
	int in = make_file("src", data, 1000), out = make_file("dst", "", 0), p[2];
	loff_t off_in = 10, off_out = 5;
	char buf[64];

	CHECK_RET(pipe(p), 0);
	/* file -> pipe with an offset: the position stays, the offset moves. */
	CHECK_RET(splice(in, &off_in, p[1], NULL, 40, 0), 40);
	CHECK(off_in == 50, "off_in %lld", (long long)off_in);
	CHECK_RET(lseek(in, 0, SEEK_CUR), 0);
	/* file -> pipe without one: the position moves. */
	CHECK_RET(splice(in, NULL, p[1], NULL, 20, SPLICE_F_MORE), 20);
	CHECK_RET(lseek(in, 0, SEEK_CUR), 20);
	/* pipe -> file at an offset: 60 bytes queued, 100 asked. */
	CHECK_RET(splice(p[0], NULL, out, &off_out, 100, 0), 60);
	CHECK(off_out == 65, "off_out %lld", (long long)off_out);
	CHECK_RET(pread(out, buf, 60, 5), 60);
	CHECK(!memcmp(buf, data + 10, 40) && !memcmp(buf + 40, data, 20), "file got other bytes");
	/* Into an empty pipe: no more than it holds, without waiting for a reader. */
	{
		int big = make_file("big", data, DATA_LEN);
		long cap = CHECK_OK(fcntl(p[1], F_GETPIPE_SZ));
		static char back[DATA_LEN];

		CHECK_RET(splice(big, NULL, p[1], NULL, DATA_LEN, 0), cap);
		CHECK_RET(read_all(p[0], back, (size_t)cap), cap);
		CHECK(!memcmp(back, data, (size_t)cap), "pipe got other bytes");
		CHECK_RET(sendfile(p[1], big, NULL, DATA_LEN), cap);
		CHECK_RET(read_all(p[0], back, (size_t)cap), cap);
		CHECK(!memcmp(back, data + cap, (size_t)cap), "pipe got other bytes");
		close(big);
	}
	/* An empty pipe with no writer: end of file. */
	close(p[1]);
	CHECK_RET(splice(p[0], NULL, out, NULL, 10, 0), 0);
	close(p[0]);
	close(in);
	close(out);
}

static void test_splice_socket_pipe(void)
{
	int sv[2], p[2];
	char buf[16];

	CHECK_RET(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CHECK_RET(pipe(p), 0);
	CHECK_RET(write(sv[1], "through", 7), 7);
	/* socket -> pipe takes what is there; pipe -> socket. */
	CHECK_RET(splice(sv[0], NULL, p[1], NULL, 100, 0), 7);
	CHECK_RET(splice(p[0], NULL, sv[0], NULL, 100, 0), 7);
	CHECK_RET(read(sv[1], buf, sizeof(buf)), 7);
	CHECK(!memcmp(buf, "through", 7), "socket got other bytes");
	/* Non-blocking socket, nothing queued. */
	CHECK_RET(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
	CHECK_ERR(splice(sv[0], NULL, p[1], NULL, 100, 0), EAGAIN);
	close(sv[0]);
	close(sv[1]);
	close(p[0]);
	close(p[1]);
}

static void test_splice_errors(void)
{
	int a = make_file("src", data, 100), b = make_file("dst", "", 0), p[2], q[2];
	loff_t off = 0;

	CHECK_RET(pipe(p), 0);
	CHECK_RET(pipe(q), 0);
	CHECK_ERR(splice(a, NULL, b, NULL, 10, 0), EINVAL); /* no pipe */
	CHECK_ERR(splice(p[0], NULL, p[1], NULL, 10, 0), EINVAL); /* one pipe both sides */
	CHECK_ERR(splice(a, NULL, p[1], &off, 10, 0), ESPIPE); /* an offset on a pipe */
	CHECK_ERR(splice(a, NULL, p[1], NULL, 10, 0x100), EINVAL); /* unknown flag */
	CHECK_ERR(splice(p[1], NULL, b, NULL, 10, 0), EBADF); /* write end as input */
	CHECK_ERR(splice(999, NULL, p[1], NULL, 10, 0), EBADF);
	off = -5;
	CHECK_ERR(splice(a, &off, p[1], NULL, 10, 0), EINVAL);
	CHECK_RET(splice(a, NULL, p[1], NULL, 0, 0), 0);
	/* pipe -> pipe */
	CHECK_RET(write(p[1], "xy", 2), 2);
	CHECK_RET(splice(p[0], NULL, q[1], NULL, 10, 0), 2);
	/* tee's checks */
	CHECK_ERR(tee(a, p[1], 10, 0), EINVAL);
	CHECK_ERR(tee(p[0], p[1], 10, 0), EINVAL);
	CHECK_ERR(tee(p[1], q[1], 10, 0), EBADF);
	CHECK_ERR(tee(p[0], q[1], 10, 0x100), EINVAL);
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
	close(a);
	close(b);
}

static void test_tee(void)
{
	int p[2], q[2];
	char buf[64];
	pid_t pid;
	int status;
	void (*old)(int);

	CHECK_RET(pipe(p), 0);
	CHECK_RET(pipe(q), 0);
	/* Copies without consuming: both pipes then hold the bytes. */
	CHECK_RET(write(p[1], "hello", 5), 5);
	CHECK_RET(tee(p[0], q[1], 100, 0), 5);
	CHECK_RET(tee(p[0], q[1], 3, 0), 3); /* at most len */
	CHECK_RET(read(q[0], buf, sizeof(buf)), 8);
	CHECK(!memcmp(buf, "hellohel", 8), "tee output got other bytes");
	CHECK_RET(read(p[0], buf, sizeof(buf)), 5);
	CHECK(!memcmp(buf, "hello", 5), "tee input lost its bytes");
	CHECK_RET(tee(p[0], q[1], 0, 0), 0);
	/* Empty input: EAGAIN with SPLICE_F_NONBLOCK or O_NONBLOCK on either end. */
	CHECK_ERR(tee(p[0], q[1], 10, SPLICE_F_NONBLOCK), EAGAIN);
	CHECK_RET(fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
	CHECK_ERR(tee(p[0], q[1], 10, 0), EAGAIN);
	CHECK_RET(fcntl(p[0], F_SETFL, 0), 0);
	CHECK_RET(fcntl(q[1], F_SETFL, O_NONBLOCK), 0);
	CHECK_ERR(tee(p[0], q[1], 10, 0), EAGAIN);
	CHECK_RET(fcntl(q[1], F_SETFL, 0), 0);
	/* A full output: EAGAIN without waiting. */
	{
		long cap = CHECK_OK(fcntl(q[1], F_GETPIPE_SZ));
		static char back[DATA_LEN];

		CHECK_RET(write(p[1], "x", 1), 1);
		CHECK_RET(write(q[1], data, (size_t)cap), cap);
		CHECK_ERR(tee(p[0], q[1], 10, SPLICE_F_NONBLOCK), EAGAIN);
		CHECK_RET(read_all(q[0], back, (size_t)cap), cap);
		CHECK_RET(read(p[0], buf, sizeof(buf)), 1);
	}
	/* Blocking: waits for a writer's data. */
	pid = fork();
	if (pid == 0) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };

		nanosleep(&ts, NULL);
		_exit(write(p[1], "late", 4) == 4 ? 0 : 1);
	}
	CHECK(pid > 0, "fork failed");
	if (pid > 0) {
		CHECK_RET(tee(p[0], q[1], 100, 0), 4);
		CHECK_RET(waitpid(pid, &status, 0), pid);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
		CHECK_RET(read(q[0], buf, sizeof(buf)), 4);
		CHECK(!memcmp(buf, "late", 4), "tee output got other bytes");
		CHECK_RET(read(p[0], buf, sizeof(buf)), 4);
	}
	/* No reader on the output: EPIPE (and SIGPIPE, ignored here). */
	old = signal(SIGPIPE, SIG_IGN);
	CHECK_RET(write(p[1], "z", 1), 1);
	close(q[0]);
	CHECK_ERR(tee(p[0], q[1], 10, 0), EPIPE);
	CHECK_RET(read(p[0], buf, sizeof(buf)), 1);
	close(p[1]);
	CHECK_ERR(tee(p[0], q[1], 10, 0), EPIPE); /* the output is checked even at the end */
	signal(SIGPIPE, old);
	close(q[1]);
	/* Empty input without a writer: 0. */
	CHECK_RET(pipe(q), 0);
	CHECK_RET(tee(p[0], q[1], 10, 0), 0);
	close(p[0]);
	close(q[0]);
	close(q[1]);
}

static void test_copy_file_range(void)
{
	int in = make_file("src", data, DATA_LEN), out = make_file("dst", "", 0), p[2];
	static char back[DATA_LEN];
	loff_t off_in = 1000, off_out = 0;
	size_t moved = 0;

	/* Without offsets: both positions move. */
	while (moved < DATA_LEN) {
		ssize_t r = copy_file_range(in, NULL, out, NULL, DATA_LEN - moved, 0);

		if (r <= 0)
			break;
		moved += (size_t)r;
	}
	CHECK(moved == DATA_LEN, "copied %zu", moved);
	CHECK_RET(lseek(in, 0, SEEK_CUR), DATA_LEN);
	CHECK_RET(lseek(out, 0, SEEK_CUR), DATA_LEN);
	CHECK_RET(pread(out, back, DATA_LEN, 0), DATA_LEN);
	CHECK(!memcmp(back, data, DATA_LEN), "copy differs");
	CHECK_RET(copy_file_range(in, NULL, out, NULL, 10, 0), 0); /* at the input's end */
	/* With offsets: positions stay. */
	CHECK_RET(copy_file_range(in, &off_in, out, &off_out, 30, 0), 30);
	CHECK(off_in == 1030 && off_out == 30, "offsets %lld %lld", (long long)off_in,
	      (long long)off_out);
	CHECK_RET(pread(out, back, 30, 0), 30);
	CHECK(!memcmp(back, data + 1000, 30), "copy at offsets differs");
	/* Same file: overlapping ranges refused, apart ones copied. */
	off_in = 0;
	off_out = 10;
	CHECK_ERR(copy_file_range(in, &off_in, in, &off_out, 100, 0), EINVAL);
	off_out = DATA_LEN;
	CHECK_RET(copy_file_range(in, &off_in, in, &off_out, 100, 0), 100);
	/* Errors. */
	CHECK_RET(pipe(p), 0);
	CHECK_ERR(copy_file_range(in, NULL, out, NULL, 10, 1), EINVAL);
	CHECK_ERR(copy_file_range(p[0], NULL, out, NULL, 10, 0), EINVAL);
	CHECK_ERR(copy_file_range(in, NULL, p[1], NULL, 10, 0), EINVAL);
	{
		int dir = CHECK_OK(open(".", O_RDONLY | O_DIRECTORY));
		int app = CHECK_OK(open("app", O_WRONLY | O_CREAT | O_APPEND, 0644));
		int ro = CHECK_OK(open("dst", O_RDONLY));

		CHECK_ERR(copy_file_range(dir, NULL, out, NULL, 10, 0), EISDIR);
		CHECK_ERR(copy_file_range(in, NULL, app, NULL, 10, 0), EBADF);
		CHECK_ERR(copy_file_range(in, NULL, ro, NULL, 10, 0), EBADF);
		close(dir);
		close(app);
		close(ro);
	}
	close(p[0]);
	close(p[1]);
	close(in);
	close(out);
}

int main(void)
{
	for (size_t i = 0; i < DATA_LEN; i++)
		data[i] = (char)(i * 7 + i / 251);
	scratch_make("splice");
	test_sendfile_file_to_socket();
	test_sendfile_offset();
	test_splice_pipe_file();
	test_splice_socket_pipe();
	test_splice_errors();
	test_tee();
	test_copy_file_range();
	scratch_remove();
	return finish();
}
