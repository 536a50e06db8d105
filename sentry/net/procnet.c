/* SPDX-License-Identifier: Apache-2.0 */
/* /proc/net/{tcp,tcp6,udp,udp6,unix,dev} as Linux formats them, for procfs. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "common/util.h"
#include "sentry/net/internal.h"

struct out {
	char *buf;
	size_t size, len;
	int n;
};

static void __attribute__((format(printf, 2, 3))) out_printf(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(o->len < o->size ? o->buf + o->len : NULL,
		      o->len < o->size ? o->size - o->len : 0, fmt, ap);
	va_end(ap);
	if (k > 0)
		o->len += (size_t)k;
}

struct inet_walk {
	struct out *o;
	bool v6;
	bool tcp;
};

static void put_addr(struct out *o, const struct inet_ep *ep, bool v6)
{
	if (!v6) {
		uint32_t a;

		memcpy(&a, ep->addr + 12, 4);
		out_printf(o, "%08X:%04X", a, ep->port);
		return;
	}
	for (int i = 0; i < 16; i += 4) {
		uint32_t w;

		memcpy(&w, ep->addr + i, 4);
		out_printf(o, "%08X", w);
	}
	out_printf(o, ":%04X", ep->port);
}

static void inet_row(struct sock *s, struct inet_walk *w)
{
	struct inet_ep l, p = { 0 };
	int st;

	if ((s->family == AF_INET6) != w->v6)
		return;
	inet_sock_ep(s, false, &l);
	if (s->has_pep)
		p = s->pep;
	if (w->tcp)
		st = sock_tcp_state_locked(s);
	else
		st = s->has_pep ? 0x01 : 0x07;
	out_printf(w->o, "%4d: ", w->o->n++);
	put_addr(w->o, &l, w->v6);
	out_printf(w->o, " ");
	put_addr(w->o, &p, w->v6);
	out_printf(w->o, " %02X %08zX:%08X 00:00000000 00000000 %5u %8d %lu 1 0000000000000000\n",
		   st, (size_t)0, (unsigned int)s->rcv_bytes, 0u, 0, (unsigned long)s->ino);
}

static void inet_each(struct sock *s, void *arg)
{
	inet_row(s, arg);
}

static void unix_each(struct sock *s, void *arg)
{
	struct out *o = arg;
	const struct sockaddr_un *sun = (const struct sockaddr_un *)&s->addr;
	int st = s->state == SOCK_CONNECTED ? 3 : 1;

	out_printf(o, "0000000000000000: 00000002 00000000 %08X %04X %02X %5lu",
		   s->state == SOCK_LISTENING ? 0x10000 : 0, s->type, st, (unsigned long)s->ino);
	if (s->addrlen > offsetof(struct sockaddr_un, sun_path)) {
		size_t n = s->addrlen - offsetof(struct sockaddr_un, sun_path);

		out_printf(o, " %s", sun->sun_path[0] ? "" : "@");
		for (size_t i = sun->sun_path[0] ? 0 : 1; i < n && sun->sun_path[i]; i++)
			out_printf(o, "%c", sun->sun_path[i]);
	}
	out_printf(o, "\n");
}

ssize_t net_proc_render(const char *name, char *buf, size_t size)
{
	struct out o = { buf, size, 0, 0 };

	if (!strcmp(name, "tcp") || !strcmp(name, "udp") || !strcmp(name, "tcp6") ||
	    !strcmp(name, "udp6")) {
		struct inet_walk w = { &o, strchr(name, '6') != NULL, name[0] == 't' };

		if (w.v6)
			out_printf(&o, "  sl  local_address                         "
				       "remote_address                        st tx_queue rx_queue "
				       "tr tm->when retrnsmt   uid  timeout inode\n");
		else
			out_printf(&o, "  sl  local_address rem_address   st tx_queue rx_queue tr "
				       "tm->when retrnsmt   uid  timeout inode\n");
		pthread_mutex_lock(&net_lock);
		inet_for_each_locked(w.tcp ? SOCK_STREAM : SOCK_DGRAM, inet_each, &w);
		pthread_mutex_unlock(&net_lock);
	} else if (!strcmp(name, "unix")) {
		out_printf(&o, "Num       RefCount Protocol Flags    Type St Inode Path\n");
		pthread_mutex_lock(&net_lock);
		unix_for_each_locked(unix_each, &o);
		pthread_mutex_unlock(&net_lock);
	} else if (!strcmp(name, "dev")) {
		out_printf(&o,
			   "Inter-|   Receive                                                |  "
			   "Transmit\n"
			   " face |bytes    packets errs drop fifo frame compressed multicast|"
			   "bytes    packets errs drop fifo colls carrier compressed\n"
			   "    lo:       0       0    0    0    0     0          0         0 "
			   "       0       0    0    0    0     0       0          0\n");
	} else {
		return -ENOENT;
	}
	if (o.len < size)
		buf[o.len] = '\0';
	return (ssize_t)o.len;
}
