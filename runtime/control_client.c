/* SPDX-License-Identifier: Apache-2.0 */
/* The husk side of the control socket: one request, one reply (runtime/control.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/control.h"
#include "runtime/control_pod.h"

int control_send(int sock, const void *msg, size_t len)
{
	ssize_t n;

	/* A signal (SIGCHLD of a hook, an engine's SIGTERM that husk handles) may interrupt a
	 * send that waits for room: it is sent whole or not at all (SOCK_SEQPACKET). */
	do
		n = send(sock, msg, len, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EPROTO;
}

int control_sockaddr(const char *path, struct sockaddr_un *sa, int *dirfd)
{
	_cleanup_free_ char *dir = NULL;
	const char *slash = strrchr(path, '/');
	int fd;

	*dirfd = -1;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) < sizeof(sa->sun_path)) {
		strcpy(sa->sun_path, path);
		return 0;
	}
	if (!slash || slash == path)
		return -ENAMETOOLONG;
	dir = strndup(path, (size_t)(slash - path));
	if (!dir)
		return -ENOMEM;
	fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if ((size_t)snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/%s", fd,
			     slash + 1) >= sizeof(sa->sun_path)) {
		close(fd);
		return -ENAMETOOLONG;
	}
	*dirfd = fd;
	return 0;
}

/*
 * Pods (runtime/pod.c): a member container's <state>/control.sock is a symlink to its sandbox's
 * socket, and the connection first names the member (CONTROL_CONTAINER_TARGET: the directory's
 * name, its id), so that every verb's request acts on that member only. Returns 0 or -errno.
 */
static int control_target_member(int sock, const char *path)
{
	struct control_hdr h = { .magic = CONTROL_MAGIC,
				 .version = CONTROL_VERSION,
				 .op = CONTROL_CONTAINER_TARGET,
				 .len = sizeof(struct control_container_target) };
	struct control_container_target t = { { 0 } };
	char msg[sizeof(h) + sizeof(t)];
	const char *end = strrchr(path, '/'), *start;
	struct stat st;

	if (lstat(path, &st) < 0 || !S_ISLNK(st.st_mode) || !end)
		return 0;
	for (start = end; start > path && start[-1] != '/'; start--)
		;
	if (end == start || (size_t)(end - start) >= sizeof(t.id))
		return -ENAMETOOLONG;
	memcpy(t.id, start, (size_t)(end - start));
	memcpy(msg, &h, sizeof(h));
	memcpy(msg + sizeof(h), &t, sizeof(t));
	return control_send(sock, msg, sizeof(msg));
}

int control_dial(const char *path)
{
	struct sockaddr_un sa;
	_cleanup_close_ int dirfd = -1;
	int sock, ret;

	ret = control_sockaddr(path, &sa, &dirfd);
	if (ret < 0)
		return ret;
	sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return -errno;
	/* A unix socket's connect interrupted while it waited for the listener's backlog made no
	 * connection: it is made again. */
	do
		ret = connect(sock, (struct sockaddr *)&sa, sizeof(sa));
	while (ret < 0 && errno == EINTR);
	if (ret < 0) {
		int err = -errno;

		close(sock);
		return err;
	}
	ret = control_target_member(sock, path);
	if (ret < 0) {
		close(sock);
		return ret;
	}
	return sock;
}

int control_recv(int sock, uint16_t op, void *payload, size_t len)
{
	char buf[512];
	struct control_hdr h;
	ssize_t n;

	if (len > sizeof(buf) - sizeof(h))
		return -EINVAL;
	do
		n = recv(sock, buf, sizeof(buf), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -EPIPE;
	if ((size_t)n != sizeof(h) + len)
		return -EPROTO;
	memcpy(&h, buf, sizeof(h));
	if (h.magic != CONTROL_MAGIC || h.op != op || h.len != len)
		return -EPROTO;
	if (len)
		memcpy(payload, buf + sizeof(h), len);
	return 0;
}

int control_call(const char *path, const void *msg, size_t len)
{
	_cleanup_close_ int sock = control_dial(path);
	struct control_reply r;
	int ret;

	if (sock < 0)
		return sock;
	ret = control_send(sock, msg, len);
	if (ret < 0)
		return ret;
	ret = control_recv(sock, CONTROL_REPLY, &r, sizeof(r));
	return ret < 0 ? ret : r.err;
}

int control_send_fds(int sock, const void *msg, size_t len, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * CONTROL_MAX_FDS)];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { .iov_base = (void *)msg, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;
	ssize_t n;

	if (nfds < 1 || nfds > CONTROL_MAX_FDS)
		return -EINVAL;
	memset(&cbuf, 0, sizeof(cbuf));
	mh.msg_control = cbuf.buf;
	mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : 0;
}

int control_fetch_ps(const char *path, struct control_ps_entry **out)
{
	struct control_hdr h = { .magic = CONTROL_MAGIC,
				 .version = CONTROL_VERSION,
				 .op = CONTROL_PS };
	struct control_ps_reply r;
	size_t max = sizeof(h) + sizeof(r) + CONTROL_PS_MAX * sizeof(struct control_ps_entry);
	_cleanup_free_ char *buf = malloc(max);
	_cleanup_close_ int sock = -1;
	ssize_t n;
	int ret;

	if (!buf)
		return -ENOMEM;
	sock = control_dial(path);
	if (sock < 0)
		return sock;
	ret = control_send(sock, &h, sizeof(h));
	if (ret < 0)
		return ret;
	do
		n = recv(sock, buf, max, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n < sizeof(h) + sizeof(r))
		return -EPROTO;
	memcpy(&h, buf, sizeof(h));
	memcpy(&r, buf + sizeof(h), sizeof(r));
	if (h.magic != CONTROL_MAGIC || h.op != CONTROL_PS_REPLY || r.n > CONTROL_PS_MAX ||
	    (size_t)n != sizeof(h) + sizeof(r) + r.n * sizeof(struct control_ps_entry))
		return -EPROTO;
	if (r.err < 0)
		return r.err;
	*out = calloc(r.n + 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	memcpy(*out, buf + sizeof(h) + sizeof(r), r.n * sizeof(struct control_ps_entry));
	return (int)r.n;
}
