/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The credential gateway's guest side (runtime/serve/GATEWAY.md). A guest TCP connect to
 * NET_GATEWAY_ADDR (sentry/net/gateway.h) never leaves the sentry as a host connect: on port
 * NET_GATEWAY_PORT, when the runtime gave the sentry a gateway connection (--gateway-fd), the
 * sentry makes a unix stream socketpair, sends one end to the gateway (one SCM_RIGHTS message
 * per connection) and backs the guest's socket with the other, as host.c backs it with a host
 * socket. Otherwise the connect is refused. The gateway, in the husk serve process, reads the
 * guest's HTTP request from its end, adds the secret and forwards it; nothing of the secret
 * passes through the sentry.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "sentry/net/gateway.h"
#include "sentry/net/internal.h"

/* The connection to the gateway (a SOCK_SEQPACKET socket), or -1; set before the first guest
 * instruction and never changed. */
static int gateway_fd = -1;

void net_set_gateway_fd(int fd)
{
	gateway_fd = fd;
}

int net_gateway_fd(void)
{
	return gateway_fd;
}

bool gateway_addr(const struct inet_ep *ep)
{
	static const uint8_t gw[16] = { [10] = 0xff, [11] = 0xff, NET_GATEWAY_ADDR_BYTES };

	return memcmp(ep->addr, gw, sizeof(gw)) == 0;
}

int gateway_open(void)
{
	static bool warned;
	char byte = 'c';
	struct iovec iov = { &byte, 1 };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct msghdr mh = { 0 };
	struct cmsghdr *c;
	int sv[2];

	if (gateway_fd < 0)
		return -ECONNREFUSED;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		return errno == EMFILE || errno == ENFILE || errno == ENOMEM ? -errno : -ENOBUFS;
	memset(&ctl, 0, sizeof(ctl));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = ctl.buf;
	mh.msg_controllen = sizeof(ctl.buf);
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &sv[1], sizeof(int));
	/* Never blocks a task thread: a gateway that does not keep up refuses the connection. */
	if (sendmsg(gateway_fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) != 1) {
		if (!__atomic_exchange_n(&warned, true, __ATOMIC_RELAXED))
			log_warn("gateway: cannot pass a connection to the gateway: %s",
				 strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return -ECONNREFUSED;
	}
	close(sv[1]);
	return sv[0];
}
