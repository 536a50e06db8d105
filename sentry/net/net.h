/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sockets of the sentry (DESIGN.md section 4, "Network"): AF_UNIX and loopback TCP/UDP live in
 * sentry memory as in-memory streams and datagram queues; other AF_INET/AF_INET6 destinations
 * go through host sockets that the sentry creates and holds (--network=host), after the egress
 * policy (egress.c) allowed them. The guest only ever holds a sentry file. README.md describes
 * the model, the references and the lock.
 *
 * Addresses and option values are sentry copies in the x86-64 Linux layouts (struct sockaddr_*,
 * int, struct timeval, struct linger, struct ucred); syscalls/sys_socket.c copies them in and
 * out. Every function returns >= 0 or -errno; blocking ones wait interruptibly on the calling
 * task (-ERESTARTSYS on a signal, -EAGAIN when a SO_RCVTIMEO/SO_SNDTIMEO passes).
 */
#ifndef HUSK_SENTRY_NET_H
#define HUSK_SENTRY_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct file;
struct task;

/* --- configuration (the sentry's command line; call before the first guest instruction) --- */

enum net_mode {
	NET_MODE_NONE, /* loopback only: other destinations are unreachable (-ENETUNREACH) */
	NET_MODE_HOST, /* other destinations through host sockets, under the egress policy */
};

/* Sets the mode from "none" or "host". Returns 0 or -EINVAL. */
int net_set_mode(const char *name);
enum net_mode net_get_mode(void);
/*
 * --inbound (with host mode; a pod's network namespace): a guest TCP listener on the wildcard
 * or a non-loopback address listens on the host too, in the sentry's network namespace, and
 * the connections it accepts there are the guest's (host.c, host_listen). Off by default.
 */
void net_set_inbound(bool on);
bool net_inbound(void);
/*
 * Adds an egress rule from "CIDR[:PORT]" (IPv4 "a.b.c.d/n[:port]", IPv6 "[x::y]/n[:port]" or
 * "x::y/n" without a port; a bare address means a host route). Later rules win over earlier
 * ones and every added rule wins over the defaults. Returns 0 or -EINVAL.
 */
int net_egress_add(const char *spec, bool allow);
/*
 * The connection to the credential gateway (--gateway-fd; sentry/net/gateway.c), or -1 (the
 * default): guest TCP connects to the gateway address are then refused.
 */
void net_set_gateway_fd(int fd);
int net_gateway_fd(void);
/* Test-only: switches the sentry's own egress check off (the BPF program must then refuse). */
void net_egress_disable_check(void);
/* How many guest connects and unconnected sends off the loopback the egress policy allowed and
 * refused so far (husk serve's metrics, through CONTROL_STATS). */
void net_egress_counts(uint64_t *allowed, uint64_t *denied);

/* --- egress policy (egress.c), exposed for tests and for the runtime's BPF maps --- */

/* Verdict for an IPv6 (or IPv4-mapped) address and port. */
struct net_egress_verdict {
	bool allow;
	bool user_rule; /* decided by a rule given with --egress-allow/--egress-deny */
	char rule[80]; /* the rule that decided, as text ("default deny 169.254.0.0/16") */
};

/*
 * Checks addr (16 bytes, IPv4 as ::ffff:a.b.c.d) and port against the policy. Fills *v when
 * non-NULL. Returns true if the destination is allowed.
 */
bool net_egress_allowed(const uint8_t addr[16], uint16_t port, struct net_egress_verdict *v);
/* Drops every added rule (unit tests). */
void net_egress_reset(void);

/* One rule of the policy in the order it is checked (for the BPF program's map). */
struct net_egress_rule {
	uint8_t addr[16]; /* the network, IPv4 as ::ffff:a.b.c.d, host bits clear */
	int prefix; /* bits over the 128-bit form */
	uint16_t port; /* 0: every port */
	bool allow;
};

/*
 * The whole policy as the ordered list net_egress_allowed() walks: the added rules, newest
 * first, then the default denials; the first matching rule decides and no match allows.
 * Addresses in 64:ff9b::/96 are to be checked as the IPv4 address they embed. Writes at most
 * max rules to out and returns how many there are (more than max: nothing written, -ENOSPC).
 */
int net_egress_rules(struct net_egress_rule *out, int max);

/* --- sockets --- */

/* True if f is a socket of the sentry. */
bool file_is_socket(struct file *f);
/*
 * Queues len bytes as one datagram on the netlink socket open as f (mq_notify's SIGEV_THREAD
 * cookies, which glibc's helper thread receives). len 0 only checks f. Returns 0, -ENOTSOCK (f
 * is not a socket), -EINVAL (not a netlink one), -EAGAIN (its queue is full).
 */
int netlink_file_deliver(struct file *f, const void *data, size_t len);
/* The family of socket f (AF_UNIX...), or -1 when f is not one. */
int net_sock_family(struct file *f);
/* The type of socket f (SOCK_STREAM...), or -1 when f is not one. */
int net_sock_type(struct file *f);

/*
 * socket(2): family AF_UNIX, AF_INET, AF_INET6 or AF_NETLINK; type with SOCK_NONBLOCK and
 * SOCK_CLOEXEC masked off by the caller (flags gets SOCK_NONBLOCK as O_NONBLOCK). Returns 0
 * and *out (one reference), -EAFNOSUPPORT, -ESOCKTNOSUPPORT, -EPROTONOSUPPORT, -EINVAL.
 */
int net_socket(struct task *t, int family, int type, int protocol, int flags, struct file **out);
/* socketpair(2): AF_UNIX only (-EOPNOTSUPP for others, as Linux). */
int net_socketpair(struct task *t, int family, int type, int protocol, int flags,
		   struct file *out[2]);
int net_bind(struct task *t, struct file *f, const void *addr, size_t len);
int net_listen(struct task *t, struct file *f, int backlog);
/*
 * accept4(2): waits for a connection (unless O_NONBLOCK), returns 0 and *out (one reference,
 * with O_NONBLOCK when flags has it) and the peer's address in addr (at most *len bytes
 * written; *len gets the full length).
 */
int net_accept(struct task *t, struct file *f, int flags, struct file **out, void *addr,
	       size_t *len);
/* connect(2); non-blocking loopback TCP connects answer -EINPROGRESS as Linux. */
int net_connect(struct task *t, struct file *f, const void *addr, size_t len);
/* getsockname(2) (peer false) and getpeername(2): as net_accept's addr/len. */
int net_getname(struct file *f, bool peer, void *addr, size_t *len);
int net_shutdown(struct file *f, int how);
int net_setsockopt(struct task *t, struct file *f, int level, int name, const void *val,
		   size_t len);
/* *len is the caller's buffer size on entry and the value's length on return. */
int net_getsockopt(struct task *t, struct file *f, int level, int name, void *val, size_t *len);

/* Credentials carried by SCM_CREDENTIALS and SO_PEERCRED (struct ucred). */
struct net_cred {
	int32_t pid;
	uint32_t uid, gid;
};

#define NET_MAX_FDS 253 /* SCM_MAX_FD */

/*
 * A message to send or the place to receive one. Sending: iov/iovcnt (sentry pointers), name
 * (a destination, or NULL), files (references stay the caller's: the message takes its own)
 * and creds (has_cred: explicit SCM_CREDENTIALS, checked by the caller). Receiving: the core
 * fills name/namelen (source address, namelen 0 when none), files (an array of NET_MAX_FDS
 * the caller provides; it gets every file of the message as new references, and installs
 * what fits or puts them), cred and has_cred (when SO_PASSCRED is on), and out_flags
 * (MSG_TRUNC, MSG_EOR).
 */
#define NET_CTL_MAX 512 /* control messages the core makes for a receive, other than cred/files */

struct net_msg {
	const struct iovec *iov;
	int iovcnt;
	void *name;
	size_t namelen; /* send: the name's length; receive: buffer size in, full length out */
	struct file **files;
	int nfiles;
	bool has_cred;
	struct net_cred cred;
	int out_flags;
	/* Send: IP_TTL/IP_TOS/IPV6_HOPLIMIT/IPV6_TCLASS control messages (when has_*).
	 * Receive: other control messages (struct cmsghdr, each CMSG_SPACE long), ctl_len bytes. */
	bool has_ttl, has_tos;
	int ttl, tos;
	uint8_t ctl[NET_CTL_MAX];
	size_t ctl_len;
};

/* sendmsg(2) core: returns bytes sent (partial counts before an error or a signal). */
ssize_t net_sendmsg(struct task *t, struct file *f, struct net_msg *m, int flags);
/* recvmsg(2) core: returns bytes received (the full datagram length under MSG_TRUNC). */
ssize_t net_recvmsg(struct task *t, struct file *f, struct net_msg *m, int flags);

/* --- /proc/net (procfs calls these; each writes text into buf and returns its length) --- */

/*
 * Renders /proc/net/tcp, tcp6, udp, udp6, udplite, udplite6, unix or dev (name without the
 * directory) into buf as Linux formats it, at most size bytes (truncated there), for the network
 * namespace of task t (/proc/PID/net), or of the reader when t is NULL (/proc/net). Returns the
 * full length the text would have (like snprintf), or -ENOENT for another name.
 */
ssize_t net_proc_render(struct task *t, const char *name, char *buf, size_t size);

#endif
