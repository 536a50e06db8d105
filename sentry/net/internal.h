/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the files of sentry/net share: the socket object, its message queue and the one lock.
 * See README.md.
 */
#ifndef HUSK_SENTRY_NET_INTERNAL_H
#define HUSK_SENTRY_NET_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/list.h"
#include "common/refcount.h"
#include "sentry/kernel/nsproxy.h"
#include "sentry/kernel/waitq.h"
#include "sentry/net/net.h"
#include "sentry/vfs/fs.h"

/*
 * One lock for every socket's state (queues, peers, states, bind tables). Socket operations
 * are short memory copies; one lock makes pairs of sockets free of lock-order questions. Never
 * held across a wait, a VFS call or a host call; waitq_wake_all may be called under it.
 */
extern pthread_mutex_t net_lock;

#define NET_LIST(name) struct list_head name = LIST_HEAD_INIT(name)

/* An inet endpoint: the address in IPv6 form (IPv4 mapped) and a port in host order. */
struct inet_ep {
	uint8_t addr[16];
	uint16_t port;
	bool v4; /* given as sockaddr_in */
};

/* What a loopback datagram carries in its IP header, for the receiver's ancillary data. */
struct skb_meta {
	int ttl; /* TTL or hop limit */
	int tos; /* TOS or traffic class */
	uint8_t dst[16]; /* the destination address (IPv4 mapped) */
};

/* A queued message (a datagram, or a piece of a stream). */
struct skb {
	struct list_head link;
	size_t len, off; /* data[off..len) is unread */
	struct file **files; /* SCM_RIGHTS, referenced */
	int nfiles;
	bool has_cred;
	struct net_cred cred;
	struct sockaddr_storage from; /* source address of a datagram; the destination of an error */
	socklen_t fromlen;
	struct skb_meta meta; /* what the receiver's IP_RECV* / IPV6_RECV* options may ask for */
	int ee_errno; /* error queue entry: the error (ICMP port unreachable: ECONNREFUSED) */
	uint8_t data[];
};

enum sock_state {
	SOCK_UNCONNECTED,
	SOCK_LISTENING,
	SOCK_CONNECTED,
	SOCK_DISCONNECTED, /* was connected; the peer is gone or reset */
};

#define SOCK_KEPT_MAX 32

struct sock {
	struct vfs_node node; /* first: the file's anonymous S_IFSOCK node */
	struct refcount ref; /* the file, a peer's pointer, a listener's accept queue */
	int family, type, protocol;
	/* The network namespace it was made in (referenced; fixed): its creator's at socket(2),
	 * a listener's for an accepted socket, the initial one for a restored socket. */
	struct net_ns *net;
	struct waitq wq; /* woken on every change a reader, writer or poller may wait for */
	uint64_t ino;
	/* The inode's owner and permission bits (fchmod/fchown of the socket, as sockfs's):
	 * the creator's fsuid and fsgid and 0777 at first. Protected by attr_lock (sock.c). */
	uint32_t uid, gid, mode;

	/* The rest is protected by net_lock. */
	enum sock_state state;
	bool closed; /* its file is gone */
	struct list_head errq; /* inet: error queue (MSG_ERRQUEUE), of struct skb */
	int nerrq;
	/* TCP: FIN received (the peer shut down writing or closed), FIN sent, RST received: a
	 * socket that sent and received a FIN, or was reset, is closed (shutdown: ENOTCONN). */
	bool fin_rcvd, fin_sent, reset;
	bool userport; /* inet: bound to a port the caller chose (kept by a listener's shutdown) */
	bool useraddr; /* inet: bound to an address the caller chose (kept by a disconnect) */
	struct list_head rcvq; /* of struct skb */
	size_t rcv_bytes;
	int rcv_msgs;
	int rcvbuf, sndbuf;
	bool rcv_shut; /* SHUT_RD here or SHUT_WR/close by the peer: EOF after the queue */
	bool snd_shut; /* SHUT_WR here or SHUT_RD by the peer: EPIPE */
	struct sock *peer; /* referenced: stream/seqpacket peer, or unix dgram connected peer */

	struct list_head acceptq; /* listener: connected children (referenced) */
	int nacceptq, backlog;
	struct list_head acc_link;

	bool bound;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	struct inet_ep lep, pep; /* inet: local endpoint, peer (stream) or default destination */
	bool has_pep;
	struct list_head bind_link; /* in the family's bind table */

	/* AF_UNIX */
	bool passcred;
	bool has_peercred;
	struct net_cred peercred;
	uint64_t bind_dev, bind_ino; /* path binding: the S_IFSOCK node's identity */

	/* Options. */
	int so_error;
	bool reuseaddr, reuseport, keepalive, nodelay, v6only, broadcast, oobinline;
	bool no_check, tcp_inq;
	bool recverr, recverr6; /* IP_RECVERR, IPV6_RECVERR */
	/* Ancillary data asked for: IP_RECVTTL, IP_RECVTOS, IP_PKTINFO, IPV6_RECVHOPLIMIT,
	 * IPV6_RECVTCLASS, IPV6_RECVPKTINFO. */
	bool recvttl, recvtos, pktinfo, recvhoplimit, recvtclass, recvpktinfo6;
	int hops6; /* IPV6_UNICAST_HOPS: -1 for the default (64) */
	int pmtudisc; /* IP_MTU_DISCOVER (IP_PMTUDISC_WANT at first) */
	int mcast_ttl; /* IP_MULTICAST_TTL (1 at first) */
	bool udp_cork; /* UDP_CORK: kept, not applied (loopback datagrams go out whole) */
	/* UDP-Lite (RFC 3828): checksum coverage of sends (UDPLITE_SEND_CSCOV, pcslen) and the
	 * least a receive takes (UDPLITE_RECV_CSCOV, pcrlen), 0 or 8..65535; each applies once
	 * set (send_cc, recv_cc), as Linux's UDPLITE_SEND_CC/UDPLITE_RECV_CC. */
	uint16_t pcslen, pcrlen;
	bool send_cc, recv_cc;
	unsigned int drops; /* datagrams dropped at this receiver (/proc/net/udp*'s drops) */
	int kept_val[SOCK_KEPT_MAX]; /* optkeep.c: options stored, not applied */
	uint64_t kept_mask; /* which kept_val are set */
	int tclass; /* IPV6_TCLASS */
	int rcvlowat;
	uint64_t rcvtimeo_ns, sndtimeo_ns; /* 0: none */

	/* AF_NETLINK: the port id (the owner's pid), set on first use; 0 until then. */
	uint32_t nl_portid;
	uint32_t nl_groups; /* AF_NETLINK: the multicast groups bound (net_lock) */
	struct linger linger;
	int ttl, tos;
	uint32_t mark;
	bool nonblock_connect_pending; /* EINPROGRESS answered: next connect gives EISCONN */

	/* Host socket (host.c): >= 0 once the socket goes through the host. */
	int hostfd;
	struct hostpoll_watch *watch;
	/* A listener that listens on the host too (host_listen): host_cb on watch's queue wakes
	 * wq, and accept takes the host's connections (host_accept_pending). */
	bool host_listening;
	struct waitq_callback host_cb;
	bool host_connected;
	/* The host socket is the sentry's end of a gateway connection (gateway.c): a unix
	 * stream, on which only reads, writes, shutdown and poll are made. */
	bool gateway;
};

/*
 * A socket with no file yet (one reference): accept's children. NULL when out of memory. It is
 * in the initial network namespace until sock_set_net.
 */
struct sock *sock_new(int family, int type, int protocol);
/* Moves s (not yet bound or connected) to network namespace n. */
void sock_set_net(struct sock *s, struct net_ns *n);
/*
 * The stream/seqpacket send of a connected socket (sock.c): flags has MSG_DONTWAIT for a
 * non-blocking file.
 */
ssize_t sock_conn_send(struct task *t, struct sock *s, struct net_msg *m, int flags);
void sock_get(struct sock *s);
void sock_put(struct sock *s);
struct sock *file_sock(struct file *f);
/* Creates a socket and its file (flags: O_NONBLOCK). Returns 0 or -ENOMEM. */
int sock_create(struct task *t, int family, int type, int protocol, int flags, struct sock **sp,
		struct file **fp);

/* Connects a and b to each other (net_lock held): stream/seqpacket pairs. */
void sock_pair_locked(struct sock *a, struct sock *b);
/*
 * connect(AF_UNSPEC) of a loopback TCP socket, as Linux's tcp_disconnect: a listener stops, a
 * connection is reset (the peer gets ECONNRESET, and s too if it was established); s can
 * connect or listen again. Returns 0.
 */
int sock_tcp_disconnect(struct sock *s);
/* Linux's TCP state of stream socket s (TCP_ESTABLISHED...; net_lock held). */
int sock_tcp_state_locked(const struct sock *s);
/* Credentials of t for SO_PEERCRED/SCM_CREDENTIALS. */
void sock_task_cred(struct task *t, struct net_cred *c);
/* Frees a list of skbs, putting their files (net_lock NOT held). */
void skb_free_list(struct list_head *l);
/*
 * Queues a datagram copy of m's data on dst (net_lock held). Returns bytes queued, -EAGAIN when
 * dst's queue is full. from/fromlen: the source address to record.
 */
ssize_t sock_queue_dgram_locked(struct sock *dst, const struct net_msg *m, size_t len,
				const void *from, socklen_t fromlen, bool cred,
				const struct net_cred *c);
/* As sock_queue_dgram_locked, recording the IP header's values in the skb (inet). */
ssize_t sock_queue_inet_dgram_locked(struct sock *dst, const struct net_msg *m, size_t len,
				     const void *from, socklen_t fromlen,
				     const struct skb_meta *meta);
/*
 * Queues an ICMP port unreachable for s's datagram m to dst (net_lock held): an error queue
 * entry holding (the start of) the payload, when s asked for IP_RECVERR/IPV6_RECVERR, and
 * SO_ERROR ECONNREFUSED when it did or is connected, as Linux's __udp4_lib_err.
 */
void sock_port_unreachable_locked(struct sock *s, const struct net_msg *m, size_t len,
				  const struct inet_ep *dst);

/* --- checkpoint (sentry/state/net.c) --- */
/* A new file over s (flags: O_NONBLOCK), which takes its own reference on s; NULL: no memory. */
struct file *sock_file_new(struct sock *s, int flags);
/* An skb of len bytes (zeroed header, uninitialised data), or NULL. */
struct skb *sock_skb_new(size_t len);
/* Puts restored, bound s back in its family's bind table (net_lock held; no checks). */
void unix_bind_restore_locked(struct sock *s);
void inet_bind_restore_locked(struct sock *s);

/* --- optkeep.c --- */
/*
 * Options kept but not applied (IP multicast and path MTU, TCP timers, corking...): set stores
 * (after Linux's range checks), get gives the stored value or Linux's default (net_lock held).
 * Both return -ENOENT for an option they do not keep.
 */
int sock_kept_setopt_locked(struct sock *s, int level, int name, int v);
int sock_kept_getopt_locked(const struct sock *s, int level, int name, int *v);

/* --- inet_cmsg.c --- */
/* Appends a control message to m's ctl (dropped when it does not fit, with MSG_CTRUNC). */
void net_msg_put_cmsg(struct net_msg *m, int level, int type, const void *data, size_t len);
/* The ancillary data s asked for about datagram b (net_lock held). */
void inet_recv_cmsgs(const struct sock *s, const struct skb *b, struct net_msg *m);
/* The IP_RECVERR (IPV6_RECVERR) message of error queue entry b. */
void inet_errq_cmsg(const struct sock *s, const struct skb *b, struct net_msg *m);

/* Deadline for a socket timeout (0: none): fills ts and returns it, or NULL. */
struct timespec *sock_deadline(uint64_t ns, struct timespec *ts);

/* --- unix.c --- */
int unix_bind(struct task *t, struct sock *s, const void *addr, size_t len);
int unix_connect(struct task *t, struct sock *s, const void *addr, size_t len, bool nonblock);
/*
 * Finds the socket bound at addr (a new reference) or an ERR_PTR (-ECONNREFUSED, -ENOENT...):
 * an abstract name in namespace n, a path anywhere.
 */
struct sock *unix_find(struct task *t, struct net_ns *n, const void *addr, size_t len, int type);
/* Binds s to an autobind abstract name if it has no address (net_lock NOT held). */
int unix_autobind(struct sock *s);
void unix_unbind_locked(struct sock *s);
/* Calls fn for every bound unix socket of namespace n (net_lock held). */
void unix_for_each_locked(struct net_ns *n, void (*fn)(struct sock *s, void *arg), void *arg);

/* --- inet_loopback.c --- */

/* Parses a sockaddr_in/_in6 for socket family fam. Returns 0, -EINVAL, -EAFNOSUPPORT. */
int inet_parse(int fam, const void *addr, size_t len, struct inet_ep *ep);
/* Writes ep as the socket family's sockaddr; returns its length. */
socklen_t inet_format(int fam, const struct inet_ep *ep, struct sockaddr_storage *ss);
bool inet_is_loopback(const uint8_t addr[16]);
bool inet_is_any(const uint8_t addr[16]);
int inet_bind(struct sock *s, const void *addr, size_t len);
/* Binds s to an ephemeral port on local (net_lock held). */
int inet_autobind_locked(struct sock *s, const uint8_t local[16]);
/*
 * Finds a socket of protocol (IPPROTO_TCP, IPPROTO_UDP, IPPROTO_UDPLITE: each its own port
 * table) bound to ep that takes traffic for it (net_lock held, no reference).
 */
struct sock *inet_lookup_proto_locked(uint32_t ns, int protocol, const struct inet_ep *ep);
void inet_unbind_locked(struct sock *s);
int inet_connect(struct task *t, struct sock *s, const void *addr, size_t len, bool nonblock);
ssize_t inet_sendto(struct task *t, struct sock *s, struct net_msg *m, int flags);
/* Calls fn for every bound socket of protocol in namespace n (net_lock held). */
void inet_for_each_proto_locked(struct net_ns *n, int protocol,
				void (*fn)(struct sock *s, void *arg), void *arg);
/* Sock endpoint of s (its bound address). */
void inet_sock_ep(const struct sock *s, bool peer, struct inet_ep *ep);

/* --- host.c --- */
/* Connects s through a host socket to ep (policy already checked). */
int host_connect(struct task *t, struct sock *s, const struct inet_ep *ep, bool nonblock);
/* SO_ERROR of the host socket. */
int host_so_error(struct sock *s);
ssize_t host_sendmsg(struct task *t, struct sock *s, struct net_msg *m, int flags,
		     const struct inet_ep *dst);
ssize_t host_recvmsg(struct task *t, struct sock *s, struct net_msg *m, int flags);
unsigned int host_poll(struct sock *s);
int host_shutdown(struct sock *s, int how);
int host_getname(struct sock *s, bool peer, struct sockaddr_storage *ss, socklen_t *len);
void host_release(struct sock *s);
/*
 * After listen(2) of TCP listener s (net_inbound(), bound to the wildcard or a non-loopback
 * address): listens on the host too, at s's address and port, in the sentry's network
 * namespace. A failure (the host's port is taken) leaves s a loopback listener (logged).
 */
void host_listen(struct sock *s, int backlog);
/* Moves the connections s's host listener has accepted to s's accept queue (no lock held). */
void host_accept_pending(struct sock *s);
/* Whether s's host listener has a connection waiting. */
bool host_accept_ready(struct sock *s);
/* Checks ep against the egress policy and the mode; logs a refusal. 0, -EPERM, -ENETUNREACH. */
int egress_check(const struct inet_ep *ep, const char *what);

/* --- gateway.c --- */
/* Whether ep's address is the gateway's (NET_GATEWAY_ADDR, any port). */
bool gateway_addr(const struct inet_ep *ep);
/*
 * A new connection to the gateway: returns the sentry's end (a non-blocking unix stream
 * socket, close-on-exec) after passing the other end to the gateway, or -ECONNREFUSED (no
 * gateway, or it does not take the connection), -EMFILE, -ENFILE, -ENOMEM, -ENOBUFS.
 */
int gateway_open(void);

/* --- link.c: veth pairs (net_lock held for every *_locked call) --- */

#define LINK_MAX_ADDRS 8

/* One end of a veth pair, in the namespace whose id is ns_id. */
struct net_link {
	struct list_head link;
	uint32_t ns_id;
	int index; /* unique in the sandbox (lo is 1 in every namespace) */
	char name[16];
	bool up; /* IFF_UP */
	bool was_up; /* up once: its qdisc is noqueue (noop before) */
	uint8_t mac[6];
	struct net_link *peer;
	int naddr;
	struct {
		uint8_t a[4];
		uint8_t prefix;
	} addr[LINK_MAX_ADDRS]; /* IPv4 */
};

/* The link of namespace ns named name (or with index when name is NULL), or NULL. */
struct net_link *link_find_locked(uint32_t ns, const char *name, int index);
void link_for_each_locked(uint32_t ns, void (*fn)(struct net_link *l, void *arg), void *arg);
/* A veth pair in ns. 0, -EEXIST (a name is taken), -EINVAL, -ENOMEM. */
int link_veth_create_locked(uint32_t ns, const char *name, const char *peer_name);
/* Deletes l with its peer. */
void link_delete_locked(struct net_link *l);
/* Moves l to namespace ns (down, without addresses, as Linux). 0 or -EEXIST (name taken). */
int link_move_locked(struct net_link *l, uint32_t ns);
/* Whether l is up and its peer too (IFF_LOWER_UP, IFF_RUNNING). */
bool link_carrier(const struct net_link *l);
int link_addr_add_locked(struct net_link *l, const uint8_t a[4], int prefix);
int link_addr_del_locked(struct net_link *l, const uint8_t a[4]);
/* Whether IPv4 address a (IPv4-mapped) is a link's of ns (of an up link when up). */
bool link_addr_assigned_locked(uint32_t ns, const uint8_t a[16], bool up);
/*
 * Routes IPv4-mapped destination d from namespace ns over its links: 1 with *dst_ns (the
 * namespace that holds d on the peer) and src (the address of the link towards it); 0 when no
 * link's connected subnet has d; -EHOSTUNREACH when one has but nobody answers there (src and
 * *dst_ns set all the same: a datagram socket connects, its datagrams are lost).
 */
int link_route_locked(uint32_t ns, const uint8_t d[16], uint32_t *dst_ns, uint8_t src[16]);

/* --- netlink.c --- */
bool netlink_family(int family);
ssize_t netlink_sendmsg(struct sock *s, struct net_msg *m);
/*
 * bind(2) of netlink socket s to addr (a struct sockaddr_nl of len bytes): keeps its groups.
 * Returns 0 or -EINVAL.
 */
int netlink_bind(struct sock *s, const void *addr, size_t len);
/* The port id of netlink socket s (net_lock held): fixed at first use to the caller's pid. */
uint32_t netlink_portid_locked(struct sock *s);

/* --- ifioctl.c --- */
/*
 * The SIOCGIF* ioctls (SIOCGIFCONF, FLAGS, ADDR, NETMASK, BRDADDR, INDEX, NAME, MTU, HWADDR) and
 * SIOCSIFFLAGS (IFF_UP of lo; -EPERM without CAP_NET_ADMIN) on
 * any socket s, describing the sandbox's one interface, lo, as netlink.c does. arg is the
 * guest's struct ifreq (struct ifconf for SIOCGIFCONF). Returns 0, -ENODEV (no such
 * interface), -ENOTTY (an address query on a non-AF_INET socket, as Linux), -EFAULT, or
 * -ENOIOCTLCMD for another command.
 */
long net_if_ioctl(struct sock *s, struct task *t, unsigned int cmd, uint64_t arg);
/* Whether lo of namespace n is up (the initial one's starts up, a new one's down). */
bool net_lo_up(struct net_ns *n);
/* Whether lo of n has 127.0.0.1/8 (it had, once it was up: Linux's inetdev on NETDEV_UP). */
bool net_lo_v4(struct net_ns *n);
/*
 * Takes lo of n (the interface named name, or with index when name is NULL) up or down for t.
 * Returns 0, -EPERM (t lacks CAP_NET_ADMIN in n's owner) or -ENODEV.
 */
int net_lo_set_up(struct task *t, struct net_ns *n, const char *name, int index, bool up);
/* The network namespace of t (borrowed; t itself only). */
struct net_ns *task_net(struct task *t);

#endif
