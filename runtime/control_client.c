/* SPDX-License-Identifier: Apache-2.0 */
/* The husk side of the control socket: one request, one reply (runtime/control.h). */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/control.h"

int control_dial(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int sock;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return -errno;
	if (connect(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = -errno;

		close(sock);
		return err;
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
	if (send(sock, msg, len, MSG_NOSIGNAL) != (ssize_t)len)
		return -errno;
	ret = control_recv(sock, CONTROL_REPLY, &r, sizeof(r));
	return ret < 0 ? ret : r.err;
}
