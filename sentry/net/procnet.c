/* SPDX-License-Identifier: Apache-2.0 */
/* /proc/net/{tcp,tcp6,udp,udp6,udplite,udplite6,unix,dev} as Linux formats them, for procfs. */
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "common/util.h"
#include "sentry/kernel/current.h"
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
	size_t start = w->o->len, n;
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
	out_printf(w->o, w->tcp ? "%4d: " : "%5d: ", w->o->n++);
	put_addr(w->o, &l, w->v6);
	out_printf(w->o, " ");
	put_addr(w->o, &p, w->v6);
	out_printf(w->o, " %02X %08zX:%08X 00:00000000 00000000 %5u %8d %lu ", st, (size_t)0,
		   (unsigned int)s->rcv_bytes, 0u, 0, (unsigned long)s->ino);
	if (w->tcp) {
		out_printf(w->o, "1 0000000000000000\n");
		return;
	}
	/* UDP and UDP-Lite: ref, pointer and drops; IPv4 lines are padded to 127 columns. */
	out_printf(w->o, "2 0000000000000000 %u", s->drops);
	n = w->o->len - start;
	out_printf(w->o, "%*s\n", w->v6 || n >= 127 ? 0 : (int)(127 - n), "");
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

/* The inet files: each lists one protocol's table, of one family. */
static const struct {
	const char *name;
	int protocol;
	bool v6;
} inet_files[] = {
	{ "tcp", IPPROTO_TCP, false },	       { "tcp6", IPPROTO_TCP, true },
	{ "udp", IPPROTO_UDP, false },	       { "udp6", IPPROTO_UDP, true },
	{ "udplite", IPPROTO_UDPLITE, false }, { "udplite6", IPPROTO_UDPLITE, true },
};

static void inet_header(struct out *o, bool v6, bool tcp)
{
	if (v6)
		out_printf(o,
			   "  sl  local_address                         "
			   "remote_address                        st tx_queue rx_queue "
			   "tr tm->when retrnsmt   uid  timeout inode%s\n",
			   tcp ? "" : " ref pointer drops");
	else if (tcp)
		out_printf(o, "  sl  local_address rem_address   st tx_queue rx_queue tr "
			      "tm->when retrnsmt   uid  timeout inode\n");
	else
		out_printf(o, "%-127s\n",
			   "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when "
			   "retrnsmt   uid  timeout inode ref pointer drops");
}

ssize_t net_proc_render(struct task *t, const char *name, char *buf, size_t size)
{
	struct out o = { buf, size, 0, 0 };
	struct nsproxy *ns;
	struct net_ns *n;
	size_t i;

	/* The task's network namespace (/proc/PID/net), else the reader's (/proc/net). */
	if (!t)
		t = task_current();
	ns = t ? task_get_nsproxy(t) : NULL;
	n = ns ? ns->net : &net_ns_initial;

	for (i = 0; i < ARRAY_SIZE(inet_files); i++) {
		if (!strcmp(name, inet_files[i].name))
			break;
	}
	if (i < ARRAY_SIZE(inet_files)) {
		struct inet_walk w = { &o, inet_files[i].v6,
				       inet_files[i].protocol == IPPROTO_TCP };

		inet_header(&o, w.v6, w.tcp);
		pthread_mutex_lock(&net_lock);
		inet_for_each_proto_locked(n, inet_files[i].protocol, inet_each, &w);
		pthread_mutex_unlock(&net_lock);
	} else if (!strcmp(name, "unix")) {
		out_printf(&o, "Num       RefCount Protocol Flags    Type St Inode Path\n");
		pthread_mutex_lock(&net_lock);
		unix_for_each_locked(n, unix_each, &o);
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
		if (ns)
			nsproxy_put(ns);
		return -ENOENT;
	}
	if (ns)
		nsproxy_put(ns);
	if (o.len < size)
		buf[o.len] = '\0';
	return (ssize_t)o.len;
}
