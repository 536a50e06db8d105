/* SPDX-License-Identifier: Apache-2.0 */
#include "helpers.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void write_file(const char *dir, const char *name, const char *content)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0, "creating %s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
}

static void make_dir(const char *dir, const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_eq(mkdir(path, 0755), 0, "mkdir %s: %s", path, strerror(errno));
}

static void make_link(const char *dir, const char *name, const char *target)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_eq(symlink(target, path), 0, "symlink %s: %s", path, strerror(errno));
}

void tree_create(char *dir)
{
	char name[512];
	size_t len;

	snprintf(dir, 64, "/tmp/husk-gofer-test.XXXXXX");
	cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	write_file(dir, "file", "hello gofer\n");
	make_dir(dir, "a");
	make_dir(dir, "a/b");
	write_file(dir, "a/b/c", "deep\n");
	make_dir(dir, "sub");
	make_dir(dir, "many");
	for (int i = 0; i < TREE_MANY; i++) {
		snprintf(name, sizeof(name), "many/f%02d", i);
		write_file(dir, name, "x");
	}
	strcpy(name, "deep");
	make_dir(dir, name);
	for (int i = 0; i < TREE_DEEP; i++) {
		len = strlen(name);
		snprintf(name + len, sizeof(name) - len, "/d");
		make_dir(dir, name);
	}
	snprintf(name, sizeof(name), "%s/fifo", dir);
	cr_assert_eq(mkfifo(name, 0644), 0);
	make_link(dir, "passwd_link", "/etc/passwd");
	make_link(dir, "up_link", "../../..");
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

void tree_remove(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

pid_t server_start(const char *dir, const struct gofer_server_config *cfg, int *sock)
{
	int sv[2];
	pid_t pid;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct gofer_server *s;
		int root_fd, proc_fd, ret;

		close(sv[0]);
		root_fd = open(dir, O_PATH | O_CLOEXEC); /* a directory, or a file served alone */
		proc_fd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (gofer_server_create(root_fd, proc_fd, cfg, &s) < 0)
			_exit(1);
		ret = gofer_server_serve(s, sv[1]);
		gofer_server_destroy(s);
		_exit(ret == 0 ? 0 : 1);
	}
	close(sv[1]);
	*sock = sv[0];
	return pid;
}

int child_wait(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR)
			return -1;
	}
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WEXITSTATUS(st);
}

size_t raw_call(int sock, const void *msg, size_t len, void *rep, int *fd)
{
	union {
		char buf[CMSG_SPACE(8 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = rep, .iov_len = GOFER_MSG_MAX };
	struct msghdr m = { .msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = ctl.buf,
			    .msg_controllen = sizeof(ctl.buf) };
	ssize_t n;

	if (fd)
		*fd = -1;
	cr_assert_eq(send(sock, msg, len, MSG_NOSIGNAL), (ssize_t)len, "send: %s", strerror(errno));
	n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	cr_assert_gt(n, 0, "no reply (the server died?): %s", n < 0 ? strerror(errno) : "EOF");
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

		for (size_t i = 0; i < count; i++) {
			int f;

			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (fd && *fd < 0)
				*fd = f;
			else
				close(f);
		}
	}
	return (size_t)n;
}

int raw_req(int sock, const struct gofer_req *req, void *buf, struct gofer_rep *rep, int *fd)
{
	static uint8_t msg[GOFER_MSG_MAX];
	ssize_t len = gofer_req_encode(req, msg, sizeof(msg));
	size_t n;

	cr_assert_gt(len, 0, "encoding: %zd", len);
	n = raw_call(sock, msg, (size_t)len, buf, fd);
	cr_assert_eq(gofer_rep_decode(buf, n, rep), 0, "malformed reply");
	cr_assert_eq(rep->tag, req->tag);
	cr_assert_eq(rep->type, req->type);
	return (int)rep->error;
}
