/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sockets in a checkpoint image (sentry/state/README.md, "Sockets"). A socket file is a File of
 * kind STATE_FILE_SOCKET naming a Socket (net.proto) by id; Sockets are shared by their file, a
 * peer's pointer and a listener's accept queue, and are saved as they are reached from files
 * (a peer, an unaccepted child, a closed peer still referenced). Queued messages keep their
 * unread bytes, sources, credentials and the files in flight (by File id).
 *
 * The restore builds every Socket of the image at the first socket file: the objects and their
 * scalar state, then the links (peers, accept queues, bind tables), then the queues (whose files
 * in flight may be socket files themselves: those only wrap an object already made). Host
 * sockets (--network=host) do not survive: they come back reset (reads give ECONNRESET).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "sentry/net/internal.h"
#include "sentry/state/state.h"
#include "sentry/vfs/fs.h"

struct state_net_save {
	Husk__State__NetState *out;
	size_t out_cap;
	struct state_ptrmap socks; /* struct sock * -> Socket.id */
};

struct state_net_restore {
	struct sock **socks; /* by Socket.id - 1, one reference each */
	bool *has_file;
	size_t n;
	bool built;
};

/* ------------------------------------------------------------------------------------------ */
/* Saving                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static struct state_net_save *net_save(struct state_save *s)
{
	if (s->net)
		return s->net;
	s->net = calloc(1, sizeof(*s->net));
	if (!s->net)
		return NULL;
	s->net->out = state_alloc(s, sizeof(*s->net->out));
	if (!s->net->out)
		return NULL;
	husk__state__net_state__init(s->net->out);
	s->img->net = s->net->out;
	return s->net;
}

static int push_sock(struct state_save *s, struct state_net_save *ns, Husk__State__Socket *m)
{
	Husk__State__NetState *o = ns->out;

	if (o->n_sockets == ns->out_cap) {
		size_t nc = ns->out_cap ? 2 * ns->out_cap : 8;
		Husk__State__Socket **v = state_alloc(s, nc * sizeof(*v));

		if (!v)
			return -ENOMEM;
		if (o->n_sockets)
			memcpy(v, o->sockets, o->n_sockets * sizeof(*v));
		o->sockets = v;
		ns->out_cap = nc;
	}
	o->sockets[o->n_sockets++] = m;
	return 0;
}

static bool bytes_dup(struct state_save *s, ProtobufCBinaryData *b, const void *p, size_t n)
{
	b->len = n;
	b->data = NULL;
	if (!n)
		return true;
	b->data = state_alloc(s, n);
	if (!b->data)
		return false;
	memcpy(b->data, p, n);
	return true;
}

static Husk__State__InetEp *ep_msg(struct state_save *s, const struct inet_ep *ep)
{
	Husk__State__InetEp *m = state_alloc(s, sizeof(*m));

	if (!m)
		return NULL;
	husk__state__inet_ep__init(m);
	if (!bytes_dup(s, &m->addr, ep->addr, 16))
		return NULL;
	m->port = ep->port;
	m->v4 = ep->v4;
	return m;
}

/* Files in flight found under net_lock, saved (by id) once it is dropped. */
struct inflight {
	Husk__State__SockBuf *buf;
	struct file **files; /* referenced */
	int n;
};

struct sock_links {
	struct sock *peer; /* referenced */
	struct sock **children; /* referenced */
	int nchildren;
	struct inflight *fl;
	int nfl;
};

/* A SockBuf of skb b (net_lock held). Files in flight are added to l. */
static Husk__State__SockBuf *skb_msg(struct state_save *s, const struct skb *b,
				     struct sock_links *l)
{
	Husk__State__SockBuf *m = state_alloc(s, sizeof(*m));

	if (!m)
		return NULL;
	husk__state__sock_buf__init(m);
	if (!bytes_dup(s, &m->data, b->data + b->off, b->len - b->off))
		return NULL;
	if (b->has_cred) {
		m->has_has_cred = m->has_cred_pid = m->has_cred_uid = m->has_cred_gid = true;
		m->has_cred = true;
		m->cred_pid = b->cred.pid;
		m->cred_uid = b->cred.uid;
		m->cred_gid = b->cred.gid;
	}
	if (b->fromlen) {
		m->has_from = true;
		if (!bytes_dup(s, &m->from, &b->from, b->fromlen))
			return NULL;
	}
	m->has_ttl = m->has_tos = m->has_dst = m->has_ee_errno = true;
	m->ttl = b->meta.ttl;
	m->tos = b->meta.tos;
	if (!bytes_dup(s, &m->dst, b->meta.dst, 16))
		return NULL;
	m->ee_errno = b->ee_errno;
	if (b->nfiles) {
		struct inflight *v = realloc(l->fl, (size_t)(l->nfl + 1) * sizeof(*v));

		if (!v)
			return NULL;
		l->fl = v;
		v[l->nfl].buf = m;
		v[l->nfl].files = calloc((size_t)b->nfiles, sizeof(struct file *));
		v[l->nfl].n = 0;
		if (!v[l->nfl].files)
			return NULL;
		m->files = state_alloc(s, (size_t)b->nfiles * sizeof(*m->files));
		if (!m->files) {
			free(v[l->nfl].files);
			return NULL;
		}
		for (int i = 0; i < b->nfiles; i++) {
			file_get(b->files[i]);
			v[l->nfl].files[v[l->nfl].n++] = b->files[i];
		}
		l->nfl++;
	}
	return m;
}

static int save_queue(struct state_save *s, struct list_head *q, Husk__State__SockBuf ***out,
		      size_t *n, struct sock_links *l)
{
	struct skb *b;
	size_t cnt = 0;

	list_for_each_entry(b, q, link)
		cnt++;
	*n = 0;
	if (!cnt)
		return 0;
	*out = state_alloc(s, cnt * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	list_for_each_entry(b, q, link) {
		Husk__State__SockBuf *m = skb_msg(s, b, l);

		if (!m)
			return -ENOMEM;
		(*out)[(*n)++] = m;
	}
	return 0;
}

/* Fills m from sk (net_lock held); the links to follow go to l. */
static int fill_sock_locked(struct state_save *s, struct sock *sk, Husk__State__Socket *m,
			    struct sock_links *l)
{
	struct sock *c;
	int i = 0;

	m->family = sk->family;
	m->type = sk->type;
	m->protocol = sk->protocol;
	m->state = sk->state;
	m->host = sk->hostfd >= 0;
	m->closed = sk->closed;
	m->fin_rcvd = sk->fin_rcvd;
	m->fin_sent = sk->fin_sent;
	m->reset = sk->reset;
	m->userport = sk->userport;
	m->useraddr = sk->useraddr;
	m->rcvbuf = sk->rcvbuf;
	m->sndbuf = sk->sndbuf;
	m->rcv_shut = sk->rcv_shut;
	m->snd_shut = sk->snd_shut;
	m->backlog = sk->backlog;
	m->bound = sk->bound;
	m->in_bind_table = sk->bound && !list_empty(&sk->bind_link);
	if (!bytes_dup(s, &m->addr, &sk->addr, sk->addrlen))
		return -ENOMEM;
	m->lep = ep_msg(s, &sk->lep);
	m->pep = ep_msg(s, &sk->pep);
	if (!m->lep || !m->pep)
		return -ENOMEM;
	m->has_pep = sk->has_pep;
	m->passcred = sk->passcred;
	m->has_peercred = sk->has_peercred;
	m->peercred_pid = sk->peercred.pid;
	m->peercred_uid = sk->peercred.uid;
	m->peercred_gid = sk->peercred.gid;
	m->bind_dev = sk->bind_dev;
	m->bind_ino = sk->bind_ino;

	m->so_error = sk->so_error;
	m->reuseaddr = sk->reuseaddr;
	m->reuseport = sk->reuseport;
	m->keepalive = sk->keepalive;
	m->nodelay = sk->nodelay;
	m->v6only = sk->v6only;
	m->broadcast = sk->broadcast;
	m->oobinline = sk->oobinline;
	m->no_check = sk->no_check;
	m->tcp_inq = sk->tcp_inq;
	m->recverr = sk->recverr;
	m->recverr6 = sk->recverr6;
	m->recvttl = sk->recvttl;
	m->recvtos = sk->recvtos;
	m->pktinfo = sk->pktinfo;
	m->recvhoplimit = sk->recvhoplimit;
	m->recvtclass = sk->recvtclass;
	m->recvpktinfo6 = sk->recvpktinfo6;
	m->hops6 = sk->hops6;
	m->pmtudisc = sk->pmtudisc;
	m->mcast_ttl = sk->mcast_ttl;
	m->udp_cork = sk->udp_cork;
	m->pcslen = sk->pcslen;
	m->pcrlen = sk->pcrlen;
	m->send_cc = sk->send_cc;
	m->recv_cc = sk->recv_cc;
	m->drops = sk->drops;
	m->kept_val = state_alloc(s, SOCK_KEPT_MAX * sizeof(*m->kept_val));
	if (!m->kept_val)
		return -ENOMEM;
	m->n_kept_val = SOCK_KEPT_MAX;
	memcpy(m->kept_val, sk->kept_val, sizeof(sk->kept_val));
	m->kept_mask = sk->kept_mask;
	m->tclass = sk->tclass;
	m->rcvlowat = sk->rcvlowat;
	m->rcvtimeo_ns = sk->rcvtimeo_ns;
	m->sndtimeo_ns = sk->sndtimeo_ns;
	m->nl_portid = sk->nl_portid;
	m->linger_onoff = sk->linger.l_onoff;
	m->linger_secs = sk->linger.l_linger;
	m->ttl = sk->ttl;
	m->tos = sk->tos;
	m->mark = sk->mark;
	m->nonblock_connect_pending = sk->nonblock_connect_pending;

	if (m->host)
		return 0; /* its state is the host's: restored reset */
	if (sk->peer) {
		sock_get(sk->peer);
		l->peer = sk->peer;
	}
	if (sk->nacceptq) {
		l->children = calloc((size_t)sk->nacceptq, sizeof(*l->children));
		if (!l->children)
			return -ENOMEM;
		list_for_each_entry(c, &sk->acceptq, acc_link) {
			if (i == sk->nacceptq)
				break;
			sock_get(c);
			l->children[i++] = c;
		}
		l->nchildren = i;
	}
	if (save_queue(s, &sk->rcvq, &m->rcvq, &m->n_rcvq, l) < 0 ||
	    save_queue(s, &sk->errq, &m->errq, &m->n_errq, l) < 0)
		return -ENOMEM;
	return 0;
}

static uint32_t save_sock(struct state_save *s, struct sock *sk);

/* Saves what l names (peers, children, files in flight) and drops l's references. */
static int save_links(struct state_save *s, Husk__State__Socket *m, struct sock_links *l, int err)
{
	if (l->peer) {
		if (err == 0) {
			m->has_peer = true;
			m->peer = save_sock(s, l->peer);
			if (!m->peer)
				err = -EINVAL;
		}
		sock_put(l->peer);
	}
	if (l->nchildren && err == 0) {
		m->acceptq = state_alloc(s, (size_t)l->nchildren * sizeof(*m->acceptq));
		if (!m->acceptq)
			err = state_save_fail(s, -ENOMEM, "out of memory");
	}
	for (int i = 0; i < l->nchildren; i++) {
		if (err == 0) {
			uint32_t id = save_sock(s, l->children[i]);

			if (!id)
				err = -EINVAL;
			else
				m->acceptq[m->n_acceptq++] = id;
		}
		sock_put(l->children[i]);
	}
	free(l->children);
	for (int i = 0; i < l->nfl; i++) {
		for (int j = 0; j < l->fl[i].n; j++) {
			if (err == 0) {
				uint32_t id = state_save_file_id(s, l->fl[i].files[j]);

				if (!id)
					err = -EINVAL;
				else
					l->fl[i].buf->files[l->fl[i].buf->n_files++] = id;
			}
			file_put(l->fl[i].files[j]);
		}
		free(l->fl[i].files);
	}
	free(l->fl);
	return err;
}

/* The id of socket sk in the image, saving it (and what it links to) the first time; 0: failed. */
static uint32_t save_sock(struct state_save *s, struct sock *sk)
{
	struct state_net_save *ns = net_save(s);
	struct sock_links l = { 0 };
	Husk__State__Socket *m;
	uint32_t id;
	int err;

	if (!ns) {
		state_save_fail(s, -ENOMEM, "out of memory");
		return 0;
	}
	id = state_ptrmap_find(&ns->socks, sk);
	if (id)
		return id;
	if (sk->family != AF_UNIX && sk->family != AF_INET && sk->family != AF_INET6 &&
	    sk->family != AF_NETLINK) {
		state_save_fail(s, -EOPNOTSUPP, "cannot save sockets of family %d", sk->family);
		return 0;
	}
	m = state_alloc(s, sizeof(*m));
	id = m ? state_ptrmap_add(&ns->socks, sk) : 0;
	if (!id || push_sock(s, ns, m) < 0) {
		state_save_fail(s, -ENOMEM, "out of memory");
		return 0;
	}
	husk__state__socket__init(m);
	m->id = id;
	pthread_mutex_lock(&net_lock);
	err = fill_sock_locked(s, sk, m, &l);
	pthread_mutex_unlock(&net_lock);
	if (err < 0)
		state_save_fail(s, err, "out of memory");
	err = save_links(s, m, &l, err);
	return err < 0 ? 0 : id;
}

int state_sock_file_save(struct state_save *s, struct file *f, Husk__State__File *out)
{
	struct sock *sk = file_sock(f);
	uint32_t id;

	if (!sk)
		return state_save_fail(s, -EOPNOTSUPP, "cannot save this socket file");
	id = save_sock(s, sk);
	if (!id)
		return -EINVAL;
	out->kind = STATE_FILE_SOCKET;
	out->has_sock = true;
	out->sock = id;
	return 0;
}

void state_net_save_end(struct state_save *s)
{
	if (!s->net)
		return;
	state_ptrmap_free(&s->net->socks);
	free(s->net);
	s->net = NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Restoring                                                                                  */
/* ------------------------------------------------------------------------------------------ */

static int check_sock(struct state_restore *r, const Husk__State__Socket *m, size_t n)
{
	const char *bad = NULL;

	if (m->family != AF_UNIX && m->family != AF_INET && m->family != AF_INET6 &&
	    m->family != AF_NETLINK)
		bad = "family";
	else if (m->type != SOCK_STREAM && m->type != SOCK_DGRAM && m->type != SOCK_SEQPACKET &&
		 m->type != SOCK_RAW)
		bad = "type";
	else if (m->state > SOCK_DISCONNECTED)
		bad = "state";
	else if (m->addr.len > sizeof(struct sockaddr_storage))
		bad = "address";
	else if (!m->lep || !m->pep || m->lep->addr.len != 16 || m->pep->addr.len != 16 ||
		 m->lep->port > 65535 || m->pep->port > 65535)
		bad = "endpoint";
	else if (m->has_peer && (m->peer == 0 || m->peer > n || m->peer == m->id))
		bad = "peer";
	else if (m->n_kept_val > SOCK_KEPT_MAX)
		bad = "kept options";
	else if (m->rcvbuf < 0 || m->sndbuf < 0 || m->backlog < -1 || m->so_error < 0 ||
		 m->so_error > 4095)
		bad = "sizes";
	else if (m->in_bind_table && !m->bound)
		bad = "binding";
	for (size_t i = 0; !bad && i < m->n_acceptq; i++) {
		if (m->acceptq[i] == 0 || m->acceptq[i] > n || m->acceptq[i] == m->id)
			bad = "accept queue";
	}
	for (size_t i = 0; !bad && i < m->n_rcvq + m->n_errq; i++) {
		const Husk__State__SockBuf *b = i < m->n_rcvq ? m->rcvq[i] : m->errq[i - m->n_rcvq];

		if ((b->has_from && b->from.len > sizeof(struct sockaddr_storage)) ||
		    (b->has_dst && b->dst.len != 16) || b->n_files > NET_MAX_FDS)
			bad = "queued message";
	}
	if (bad)
		return state_restore_fail(r, -EINVAL, "socket %u: bad %s", m->id, bad);
	return 0;
}

/* The scalar state of m into new socket sk. */
static void fill_sock(struct sock *sk, const Husk__State__Socket *m)
{
	sk->state = m->state;
	sk->closed = m->closed;
	sk->fin_rcvd = m->fin_rcvd;
	sk->fin_sent = m->fin_sent;
	sk->reset = m->reset;
	sk->userport = m->userport;
	sk->useraddr = m->useraddr;
	sk->rcvbuf = m->rcvbuf;
	sk->sndbuf = m->sndbuf;
	sk->rcv_shut = m->rcv_shut;
	sk->snd_shut = m->snd_shut;
	sk->backlog = m->backlog;
	sk->bound = m->bound;
	memcpy(&sk->addr, m->addr.data, m->addr.len);
	sk->addrlen = (socklen_t)m->addr.len;
	memcpy(sk->lep.addr, m->lep->addr.data, 16);
	sk->lep.port = (uint16_t)m->lep->port;
	sk->lep.v4 = m->lep->v4;
	memcpy(sk->pep.addr, m->pep->addr.data, 16);
	sk->pep.port = (uint16_t)m->pep->port;
	sk->pep.v4 = m->pep->v4;
	sk->has_pep = m->has_pep;
	sk->passcred = m->passcred;
	sk->has_peercred = m->has_peercred;
	sk->peercred = (struct net_cred){ m->peercred_pid, m->peercred_uid, m->peercred_gid };
	sk->bind_dev = m->bind_dev;
	sk->bind_ino = m->bind_ino;

	sk->so_error = m->so_error;
	sk->reuseaddr = m->reuseaddr;
	sk->reuseport = m->reuseport;
	sk->keepalive = m->keepalive;
	sk->nodelay = m->nodelay;
	sk->v6only = m->v6only;
	sk->broadcast = m->broadcast;
	sk->oobinline = m->oobinline;
	sk->no_check = m->no_check;
	sk->tcp_inq = m->tcp_inq;
	sk->recverr = m->recverr;
	sk->recverr6 = m->recverr6;
	sk->recvttl = m->recvttl;
	sk->recvtos = m->recvtos;
	sk->pktinfo = m->pktinfo;
	sk->recvhoplimit = m->recvhoplimit;
	sk->recvtclass = m->recvtclass;
	sk->recvpktinfo6 = m->recvpktinfo6;
	sk->hops6 = m->hops6;
	sk->pmtudisc = m->pmtudisc;
	sk->mcast_ttl = m->mcast_ttl;
	sk->udp_cork = m->udp_cork;
	sk->pcslen = (uint16_t)m->pcslen;
	sk->pcrlen = (uint16_t)m->pcrlen;
	sk->send_cc = m->send_cc;
	sk->recv_cc = m->recv_cc;
	sk->drops = m->drops;
	for (size_t i = 0; i < m->n_kept_val; i++)
		sk->kept_val[i] = m->kept_val[i];
	sk->kept_mask = m->kept_mask;
	sk->tclass = m->tclass;
	sk->rcvlowat = m->rcvlowat;
	sk->rcvtimeo_ns = m->rcvtimeo_ns;
	sk->sndtimeo_ns = m->sndtimeo_ns;
	sk->nl_portid = m->nl_portid;
	sk->linger.l_onoff = m->linger_onoff;
	sk->linger.l_linger = m->linger_secs;
	sk->ttl = m->ttl;
	sk->tos = m->tos;
	sk->mark = m->mark;
	sk->nonblock_connect_pending = m->nonblock_connect_pending;
	if (m->host) {
		/* The host's connection is gone: the socket reads ECONNRESET, as after a RST. */
		sk->state = m->state == SOCK_UNCONNECTED ? SOCK_UNCONNECTED : SOCK_DISCONNECTED;
		sk->reset = true;
		sk->so_error = ECONNRESET;
		sk->rcv_shut = sk->snd_shut = true;
		sk->bound = false;
	}
}

/* Queues the messages of q on list (rcvq or errq) of sk; files in flight by id. */
static int restore_queue(struct state_restore *r, struct sock *sk, uint32_t id,
			 Husk__State__SockBuf *const *q, size_t n, bool errq)
{
	for (size_t i = 0; i < n; i++) {
		const Husk__State__SockBuf *m = q[i];
		struct skb *b = sock_skb_new(m->data.len);

		if (!b)
			return state_restore_fail(r, -ENOMEM, "out of memory");
		if (m->data.len)
			memcpy(b->data, m->data.data, m->data.len);
		if (m->has_cred && m->has_has_cred) {
			b->has_cred = true;
			b->cred = (struct net_cred){ m->cred_pid, m->cred_uid, m->cred_gid };
		}
		if (m->has_from && m->from.len) {
			memcpy(&b->from, m->from.data, m->from.len);
			b->fromlen = (socklen_t)m->from.len;
		}
		b->meta.ttl = m->ttl;
		b->meta.tos = m->tos;
		if (m->has_dst)
			memcpy(b->meta.dst, m->dst.data, 16);
		b->ee_errno = m->ee_errno;
		if (m->n_files) {
			b->files = calloc(m->n_files, sizeof(*b->files));
			if (!b->files) {
				free(b);
				return state_restore_fail(r, -ENOMEM, "out of memory");
			}
		}
		for (size_t j = 0; j < m->n_files; j++) {
			struct file *f = state_restore_file_id(r, m->files[j]);

			if (!f) {
				for (int k = 0; k < b->nfiles; k++)
					file_put(b->files[k]);
				free(b->files);
				free(b);
				return state_restore_fail(r, -EINVAL, "socket %u: a file in flight",
							  id);
			}
			file_get(f);
			b->files[b->nfiles++] = f;
		}
		pthread_mutex_lock(&net_lock);
		if (errq) {
			list_add_tail(&b->link, &sk->errq);
			sk->nerrq++;
		} else {
			list_add_tail(&b->link, &sk->rcvq);
			sk->rcv_bytes += b->len;
			sk->rcv_msgs++;
		}
		pthread_mutex_unlock(&net_lock);
	}
	return 0;
}

static bool is_inet(int family)
{
	return family == AF_INET || family == AF_INET6;
}

static bool same_family(const struct sock *a, const struct sock *b)
{
	return a->family == b->family || (is_inet(a->family) && is_inet(b->family));
}

/* Builds every Socket of the image (once). */
static int net_build(struct state_restore *r)
{
	const Husk__State__NetState *in = r->img->net;
	struct state_net_restore *nr;
	size_t n;
	int err;

	if (r->net)
		return r->net->built ? 0 : state_restore_fail(r, -EINVAL, "sockets half built");
	if (!in)
		return state_restore_fail(r, -EINVAL, "a socket file but no sockets in the image");
	n = in->n_sockets;
	nr = calloc(1, sizeof(*nr));
	if (!nr)
		return state_restore_fail(r, -ENOMEM, "out of memory");
	r->net = nr;
	nr->socks = calloc(n + 1, sizeof(*nr->socks));
	nr->has_file = calloc(n + 1, sizeof(*nr->has_file));
	if (!nr->socks || !nr->has_file)
		return state_restore_fail(r, -ENOMEM, "out of memory");
	nr->n = n;
	for (size_t i = 0; i < n; i++) {
		const Husk__State__Socket *m = in->sockets[i];

		if (m->id == 0 || m->id > n || nr->socks[m->id - 1])
			return state_restore_fail(r, -EINVAL, "socket id %u is invalid or repeated",
						  m->id);
		err = check_sock(r, m, n);
		if (err < 0)
			return err;
		nr->socks[m->id - 1] = sock_new(m->family, m->type, m->protocol);
		if (!nr->socks[m->id - 1])
			return state_restore_fail(r, -ENOMEM, "out of memory");
		fill_sock(nr->socks[m->id - 1], m);
	}
	/* Links: peers, accept queues (a child in one queue at most), bind tables. */
	pthread_mutex_lock(&net_lock);
	err = 0;
	for (size_t i = 0; i < n && err == 0; i++) {
		const Husk__State__Socket *m = in->sockets[i];
		struct sock *sk = nr->socks[m->id - 1];

		if (m->host)
			continue;
		if (m->has_peer) {
			struct sock *p = nr->socks[m->peer - 1];

			/* sock.c's transfers assume a peer of the same type and family (an IPv4 and
			 * an IPv6 socket may be the two ends of a loopback TCP connection). */
			if (!same_family(p, sk) || p->type != sk->type) {
				err = -EINVAL;
				break;
			}
			sk->peer = p;
			sock_get(p);
		}
		for (size_t j = 0; j < m->n_acceptq; j++) {
			struct sock *c = nr->socks[m->acceptq[j] - 1];

			if (!list_empty(&c->acc_link) || !same_family(c, sk) ||
			    c->type != sk->type) {
				err = -EINVAL;
				break;
			}
			sock_get(c);
			list_add_tail(&c->acc_link, &sk->acceptq);
			sk->nacceptq++;
		}
		if (m->in_bind_table && !m->closed) {
			if (sk->family == AF_UNIX)
				unix_bind_restore_locked(sk);
			else if (sk->family == AF_INET || sk->family == AF_INET6)
				inet_bind_restore_locked(sk);
		}
	}
	pthread_mutex_unlock(&net_lock);
	if (err < 0)
		return state_restore_fail(r, err,
					  "a socket's peer or accept queue is of another family or "
					  "type, or in two accept queues");
	nr->built = true;
	/* Queues last: their files in flight may be socket files, which need the objects. */
	for (size_t i = 0; i < n; i++) {
		const Husk__State__Socket *m = in->sockets[i];
		struct sock *sk = nr->socks[m->id - 1];

		if (m->host)
			continue;
		err = restore_queue(r, sk, m->id, m->rcvq, m->n_rcvq, false);
		if (err == 0)
			err = restore_queue(r, sk, m->id, m->errq, m->n_errq, true);
		if (err < 0)
			return err;
	}
	return 0;
}

struct file *state_sock_file_restore(struct state_restore *r, const Husk__State__File *in)
{
	struct state_net_restore *nr;
	struct file *f;

	if (!in->has_sock) {
		state_restore_fail(r, -EINVAL, "file %u: a socket file with no socket", in->id);
		return NULL;
	}
	if (net_build(r) < 0)
		return NULL;
	nr = r->net;
	if (in->sock == 0 || in->sock > nr->n || nr->has_file[in->sock - 1]) {
		state_restore_fail(r, -EINVAL, "file %u: bad socket id %u", in->id, in->sock);
		return NULL;
	}
	f = sock_file_new(nr->socks[in->sock - 1], in->flags);
	if (!f) {
		state_restore_fail(r, -ENOMEM, "out of memory");
		return NULL;
	}
	nr->has_file[in->sock - 1] = true;
	f->flags = (f->flags & O_ACCMODE) | (in->flags & (O_NONBLOCK | O_ASYNC));
	return f;
}

void state_net_restore_end(struct state_restore *r)
{
	struct state_net_restore *nr = r->net;

	if (!nr)
		return;
	for (size_t i = 0; i < nr->n; i++)
		if (nr->socks && nr->socks[i])
			sock_put(nr->socks[i]);
	free(nr->socks);
	free(nr->has_file);
	free(nr);
	r->net = NULL;
}
