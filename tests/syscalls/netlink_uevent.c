/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NETLINK_KOBJECT_UEVENT sockets as sd-device's monitor makes them (systemd-logind stopped at
 * "Failed to create udev watchers: Protocol not supported"): socket, SO_RCVBUF(FORCE),
 * SO_ATTACH_FILTER, SO_PASSCRED, bind to a group, getsockname; a socket of no group receives
 * nothing (EAGAIN). Natively the host's devices may send to the groups, so what a socket of a
 * group receives is not checked.
 */
#include <linux/filter.h>
#include <linux/netlink.h>
#include <sys/socket.h>

#include "check.h"

static int uevent_socket(void)
{
	return socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);
}

int main(void)
{
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK, .nl_groups = 1 };
	struct sockaddr_nl got;
	socklen_t len = sizeof(got);
	struct sock_filter accept_all[] = { BPF_STMT(BPF_RET | BPF_K, 0xffffffff) };
	struct sock_fprog prog = { .len = 1, .filter = accept_all };
	int one = 1, size = 128 * 1024 * 1024;
	char buf[256];
	int a, b;

	a = uevent_socket();
	CHECK(a >= 0, "socket(NETLINK_KOBJECT_UEVENT): %s", strerror(errno));
	if (a < 0)
		return finish();
	CHECK_RET(setsockopt(a, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)), 0);
	CHECK_RET(setsockopt(a, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)), 0);
	CHECK_RET(setsockopt(a, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)), 0);
	CHECK_RET(setsockopt(a, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)), 0);
	CHECK_ERR(bind(a, (struct sockaddr *)&nl, sizeof(nl) - 1), EINVAL);
	nl.nl_family = AF_INET;
	CHECK_ERR(bind(a, (struct sockaddr *)&nl, sizeof(nl)), EINVAL);
	nl.nl_family = AF_NETLINK;
	/* The kernel's group, as udevadm monitor --kernel (sd-device binds so, with len 12). */
	CHECK_RET(bind(a, (struct sockaddr *)&nl, sizeof(nl)), 0);
	memset(&got, 0xff, sizeof(got));
	CHECK_RET(getsockname(a, (struct sockaddr *)&got, &len), 0);
	CHECK(len == sizeof(got) && got.nl_family == AF_NETLINK, "len %u family %u", len,
	      got.nl_family);
	/* The first netlink socket of a process gets its pid as port id (netlink_autobind). */
	CHECK(got.nl_pid == (uint32_t)getpid(), "nl_pid %u, pid %d", got.nl_pid, getpid());
	CHECK(got.nl_groups == 1, "nl_groups %u", got.nl_groups);

	/* Of no group: nothing is sent to it. */
	b = uevent_socket();
	CHECK(b >= 0, "second socket: %s", strerror(errno));
	nl.nl_groups = 0;
	CHECK_RET(bind(b, (struct sockaddr *)&nl, sizeof(nl)), 0);
	CHECK_ERR(recv(b, buf, sizeof(buf), 0), EAGAIN);
	CHECK_ERR(recv(b, buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);
	close(b);
	close(a);

	/* Protocols past MAX_LINKS (32), and types other than raw and datagram. */
	CHECK_ERR(socket(AF_NETLINK, SOCK_RAW, 32), EPROTONOSUPPORT);
	CHECK_ERR(socket(AF_NETLINK, SOCK_STREAM, NETLINK_KOBJECT_UEVENT), ESOCKTNOSUPPORT);
	b = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT);
	CHECK(b >= 0, "SOCK_DGRAM: %s", strerror(errno));
	close(b);
	return finish();
}
