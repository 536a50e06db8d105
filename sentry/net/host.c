/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host sockets (--network=host): an AF_INET/AF_INET6 guest socket whose destination is outside
 * the sandbox gets a host socket that the sentry creates (non-blocking, close-on-exec) and
 * keeps in struct sock; the guest never sees its FD. The caller has checked the egress policy
 * for every destination before this file is reached. Waits are hostpoll waits: interruptible.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/kernel/hostpoll.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "sentry/net/internal.h"

#pragma weak signal_send_task

#define LINUX_SIGPIPE 13

/* Creates s's host socket if it has none. Returns 0 or -errno. */
static int host_ensure(struct sock *s)
{
	int fd;

	if (s->hostfd >= 0)
		return 0;
	if (net_get_mode() != NET_MODE_HOST)
		return -ENETUNREACH;
	/* TCP and UDP only: UDP-Lite stays on the sandbox's loopback (inet_loopback.c). */
	if (s->protocol != IPPROTO_TCP && s->protocol != IPPROTO_UDP)
		return -ENETUNREACH;
	fd = socket(s->family, s->type | SOCK_NONBLOCK | SOCK_CLOEXEC, s->protocol);
	if (fd < 0)
		return -errno;
	if (s->family == AF_INET6 && s->v6only)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &(int){ 1 }, sizeof(int));
	if (s->nodelay && s->type == SOCK_STREAM)
		setsockopt(fd, IPPROTO_TCP, 1 /* TCP_NODELAY */, &(int){ 1 }, sizeof(int));
	s->watch = hostpoll_watch(fd);
	s->hostfd = fd;
	return 0;
}

static socklen_t host_addr(const struct sock *s, const struct inet_ep *ep,
			   struct sockaddr_storage *ss)
{
	return inet_format(s->family, ep, ss);
}

static long host_wait(struct task *t, struct sock *s, unsigned int events)
{
	if (!s->watch)
		return 0; /* cannot be watched: always ready */
	return hostpoll_wait(t, s->watch, events);
}

int host_connect(struct task *t, struct sock *s, const struct inet_ep *ep, bool nonblock)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int ret;

	ret = host_ensure(s);
	if (ret < 0)
		return ret;
	len = host_addr(s, ep, &ss);
	if (connect(s->hostfd, (struct sockaddr *)&ss, len) == 0) {
		s->host_connected = true;
		return 0;
	}
	ret = -errno;
	if (ret != -EINPROGRESS)
		return ret;
	s->host_connected = true;
	if (nonblock)
		return -EINPROGRESS;
	for (;;) {
		long r = host_wait(t, s, POLLOUT);

		if (r < 0)
			return (int)r; /* the connection goes on; a restart gives EALREADY */
		if (hostpoll_ready(s->hostfd, POLLOUT | POLLERR | POLLHUP))
			break;
	}
	ret = host_so_error(s);
	if (ret) {
		s->host_connected = false;
		return -ret;
	}
	return 0;
}

int host_so_error(struct sock *s)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (s->hostfd < 0)
		return 0;
	if (getsockopt(s->hostfd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		return errno;
	return err;
}

ssize_t host_sendmsg(struct task *t, struct sock *s, struct net_msg *m, int flags,
		     const struct inet_ep *dst)
{
	struct sockaddr_storage ss;
	struct msghdr mh = { 0 };
	int hflags = (flags & (MSG_MORE | MSG_EOR)) | MSG_DONTWAIT | MSG_NOSIGNAL;
	int ret;

	ret = host_ensure(s);
	if (ret < 0)
		return ret;
	if (dst) {
		mh.msg_name = &ss;
		mh.msg_namelen = host_addr(s, dst, &ss);
	}
	mh.msg_iov = (struct iovec *)m->iov;
	mh.msg_iovlen = (size_t)m->iovcnt;
	for (;;) {
		ssize_t n = sendmsg(s->hostfd, &mh, hflags);
		long r;

		if (n >= 0)
			return n;
		if (errno == EPIPE) {
			if (!(flags & MSG_NOSIGNAL) && t && signal_send_task)
				signal_send_task(t, LINUX_SIGPIPE, NULL);
			return -EPIPE;
		}
		if (errno != EAGAIN || (flags & MSG_DONTWAIT))
			return -errno;
		r = host_wait(t, s, POLLOUT);
		if (r < 0)
			return r;
	}
}

ssize_t host_recvmsg(struct task *t, struct sock *s, struct net_msg *m, int flags)
{
	struct sockaddr_storage ss;
	struct msghdr mh = { 0 };
	int hflags = (flags & (MSG_PEEK | MSG_TRUNC | MSG_WAITALL)) | MSG_DONTWAIT;
	size_t namecap = m->namelen;
	size_t done = 0, want = 0;

	for (int i = 0; i < m->iovcnt; i++)
		want += m->iov[i].iov_len;
	m->namelen = 0;
	if (s->hostfd < 0)
		return -ENOTCONN;
	for (;;) {
		ssize_t n;
		long r;

		mh.msg_name = &ss;
		mh.msg_namelen = sizeof(ss);
		mh.msg_iov = (struct iovec *)m->iov;
		mh.msg_iovlen = (size_t)m->iovcnt;
		mh.msg_flags = 0;
		n = recvmsg(s->hostfd, &mh, hflags & ~MSG_WAITALL);
		if (n >= 0) {
			if (mh.msg_namelen && m->name && s->type == SOCK_DGRAM) {
				memcpy(m->name, &ss, MIN((size_t)mh.msg_namelen, namecap));
				m->namelen = mh.msg_namelen;
			}
			m->out_flags = mh.msg_flags & MSG_TRUNC;
			/* MSG_WAITALL on a stream: keep reading until full, EOF or a signal. */
			if (!(flags & MSG_WAITALL) || s->type != SOCK_STREAM || n == 0 ||
			    done + (size_t)n >= want)
				return (ssize_t)(done + (size_t)n);
			done += (size_t)n;
			/* Continue after the bytes received. */
			{
				size_t skip = (size_t)n;

				while (m->iovcnt && skip >= m->iov->iov_len) {
					skip -= m->iov->iov_len;
					m->iov++;
					m->iovcnt--;
				}
				if (skip) {
					/* Partial iovec: finish it with a plain read of the rest. */
					ssize_t k = recv(s->hostfd, (char *)m->iov->iov_base + skip,
							 m->iov->iov_len - skip, MSG_DONTWAIT);
					if (k > 0)
						done += (size_t)k;
					if (k <= 0 || (size_t)k < m->iov->iov_len - skip)
						return (ssize_t)done;
					m->iov++;
					m->iovcnt--;
				}
			}
			continue;
		}
		if (errno != EAGAIN || (flags & MSG_DONTWAIT))
			return done ? (ssize_t)done : -errno;
		r = host_wait(t, s, POLLIN);
		if (r < 0)
			return done ? (ssize_t)done : r;
	}
}

unsigned int host_poll(struct sock *s)
{
	if (s->hostfd < 0)
		return 0;
	return hostpoll_ready(s->hostfd, POLLIN | POLLOUT | POLLRDHUP | POLLPRI);
}

int host_shutdown(struct sock *s, int how)
{
	return shutdown(s->hostfd, how) < 0 ? -errno : 0;
}

int host_getname(struct sock *s, bool peer, struct sockaddr_storage *ss, socklen_t *len)
{
	socklen_t n = sizeof(*ss);
	int r = peer ? getpeername(s->hostfd, (struct sockaddr *)ss, &n) :
		       getsockname(s->hostfd, (struct sockaddr *)ss, &n);

	if (r < 0)
		return -errno;
	*len = n;
	return 0;
}

static void host_listen_wake(struct waitq_callback *cb)
{
	struct sock *s = container_of(cb, struct sock, host_cb);

	waitq_wake_all(&s->wq);
}

void host_listen(struct sock *s, int backlog)
{
	struct sockaddr_storage ss;
	struct inet_ep ep;
	socklen_t len;

	pthread_mutex_lock(&net_lock);
	ep = s->lep;
	pthread_mutex_unlock(&net_lock);
	if (s->host_listening) {
		listen(s->hostfd, backlog); /* a new backlog */
		return;
	}
	if (s->hostfd >= 0 || host_ensure(s) < 0 || !s->watch)
		goto out_fail;
	setsockopt(s->hostfd, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 }, sizeof(int));
	len = host_addr(s, &ep, &ss);
	if (bind(s->hostfd, (struct sockaddr *)&ss, len) < 0 || listen(s->hostfd, backlog) < 0)
		goto out_fail;
	s->host_cb.fn = host_listen_wake;
	waitq_add_callback(&s->watch->wq, &s->host_cb);
	s->host_listening = true;
	return;
out_fail:
	log_warn("net: a listener on port %u takes no connection from outside the sandbox: %s",
		 (unsigned int)ep.port, strerror(errno));
	if (s->hostfd >= 0)
		host_release(s);
}

bool host_accept_ready(struct sock *s)
{
	return s->host_listening && hostpoll_ready(s->hostfd, POLLIN);
}

void host_accept_pending(struct sock *s)
{
	if (!s->host_listening)
		return;
	for (int i = 0; i < 64; i++) {
		int fd = accept4(s->hostfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct sock *c;
		bool queued = false;

		if (fd < 0)
			return; /* EAGAIN: none left; else the next accept tries again */
		c = sock_new(s->family, SOCK_STREAM, IPPROTO_TCP);
		if (!c) {
			close(fd);
			return;
		}
		sock_set_net(c, s->net);
		c->hostfd = fd;
		c->watch = hostpoll_watch(fd);
		c->host_connected = true;
		if (s->nodelay)
			setsockopt(fd, IPPROTO_TCP, 1 /* TCP_NODELAY */, &(int){ 1 }, sizeof(int));
		pthread_mutex_lock(&net_lock);
		if (s->state == SOCK_LISTENING && !s->closed) {
			c->state = SOCK_CONNECTED;
			c->lep = s->lep;
			c->bound = true;
			list_add_tail(&c->acc_link, &s->acceptq);
			s->nacceptq++;
			queued = true;
		}
		pthread_mutex_unlock(&net_lock);
		if (!queued) {
			sock_put(c); /* its release closes the host connection */
			return;
		}
	}
}

void host_release(struct sock *s)
{
	if (s->host_listening && s->watch)
		waitq_remove_callback(&s->watch->wq, &s->host_cb);
	s->host_listening = false;
	if (s->watch)
		hostpoll_unwatch(s->watch);
	s->watch = NULL;
	close(s->hostfd);
	s->hostfd = -1;
}
