/* SPDX-License-Identifier: Apache-2.0 */
/* --console-socket: the pty master goes to the engine over a unix socket, as runc sends it. */
#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/oci.h"

/* Sends fd over sock with SCM_RIGHTS; the message is the pty's name, as runc's utils.SendFd. */
static int send_fd(int sock, int fd, const char *name)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = (void *)name, .iov_len = strlen(name) };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf,
		.msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	if (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0)
		return -errno;
	return 0;
}

int console_send_master(const char *socket_path, const struct oci_config *cfg)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int sock = -1;
	_cleanup_close_ int master = -1;
	int slave = -1;
	char name[128];
	struct winsize ws = { 0 };
	int ret;

	if (strlen(socket_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, socket_path);
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return -errno;
	if (connect(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	if (cfg->console_height && cfg->console_width) {
		ws.ws_row = (unsigned short)cfg->console_height;
		ws.ws_col = (unsigned short)cfg->console_width;
	}
	if (openpty(&master, &slave, name, NULL, ws.ws_row ? &ws : NULL) < 0)
		return -errno;
	fcntl(master, F_SETFD, FD_CLOEXEC);
	fcntl(slave, F_SETFD, FD_CLOEXEC);
	ret = send_fd(sock, master, name);
	if (ret < 0) {
		close(slave);
		return ret;
	}
	return slave;
}
