/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The socket calls: guest memory in and out (addresses, options, iovecs, control messages) around
 * the sentry's sockets (sentry/net/net.h). sendfile(2) is here too: a copy through the sentry
 * between any readable and writable files, sockets included.
 */
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/net/net.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/handlers.h"
#include "syscalls/sys_poll.h"

#define SOCK_MAX_IOV 1024 /* UIO_MAXIOV */
#define SOCK_ADDR_MAX 128 /* sizeof(struct sockaddr_storage) */
#define SOCK_OPT_MAX 256
#define SOCK_CTL_MAX 65536
#define SOCK_MAX_RW 0x7ffff000 /* MAX_RW_COUNT */

/* The socket at fd (a new reference) or NULL with *err -EBADF / -ENOTSOCK. */
static struct file *sock_fd(struct task *t, int fd, long *err)
{
	struct file *f = fdtable_lookup(t->fdt, fd);

	if (!f) {
		*err = -EBADF;
		return NULL;
	}
	if (!file_is_socket(f)) {
		file_put(f);
		*err = -ENOTSOCK;
		return NULL;
	}
	return f;
}

static long copy_addr_in(struct task *t, uint64_t addr, uint64_t len, uint8_t *buf)
{
	if (len > SOCK_ADDR_MAX)
		return -EINVAL;
	if (len && mm_copy_in(t->mm, buf, addr, len) != (ssize_t)len)
		return -EFAULT;
	return 0;
}

/*
 * Writes name (full length n) to the guest's addr/addrlen pair as Linux's move_addr_to_user:
 * truncated to the guest's buffer, the full length written back.
 */
static long copy_addr_out(struct task *t, const void *name, size_t n, uint64_t addr, uint64_t lenp)
{
	int glen;

	if (!lenp)
		return 0;
	if (mm_copy_in(t->mm, &glen, lenp, sizeof(glen)) != sizeof(glen))
		return -EFAULT;
	if (glen < 0)
		return -EINVAL;
	if (n && glen && addr &&
	    mm_copy_out(t->mm, addr, name, MIN((size_t)glen, n)) != (ssize_t)MIN((size_t)glen, n))
		return -EFAULT;
	glen = (int)n;
	if (mm_copy_out(t->mm, lenp, &glen, sizeof(glen)) != sizeof(glen))
		return -EFAULT;
	return 0;
}

static long install(struct task *t, struct file *f, bool cloexec)
{
	return fdtable_install(t->fdt, f, 0, cloexec, task_nofile_limit(t));
}

/* socket(2) */
long sys_socket(struct task *t, const struct syscall_args *args)
{
	int type = (int)args->a[1];
	struct file *f;
	long ret;

	if (type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC | 0xf))
		return -EINVAL;
	ret = net_socket(t, (int)args->a[0], type & 0xf, (int)args->a[2],
			 (type & SOCK_NONBLOCK) ? O_NONBLOCK : 0, &f);
	if (ret < 0)
		return ret;
	ret = install(t, f, type & SOCK_CLOEXEC);
	file_put(f);
	return ret;
}

/* socketpair(2): AF_UNIX only, as Linux. */
long sys_socketpair(struct task *t, const struct syscall_args *args)
{
	int type = (int)args->a[1];
	struct file *f[2];
	int fds[2];
	long ret;

	if (type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC | 0xf))
		return -EINVAL;
	ret = net_socketpair(t, (int)args->a[0], type & 0xf, (int)args->a[2],
			     (type & SOCK_NONBLOCK) ? O_NONBLOCK : 0, f);
	if (ret < 0)
		return ret;
	fds[0] = (int)install(t, f[0], type & SOCK_CLOEXEC);
	if (fds[0] < 0) {
		ret = fds[0];
		goto out;
	}
	fds[1] = (int)install(t, f[1], type & SOCK_CLOEXEC);
	if (fds[1] < 0) {
		ret = fds[1];
		fdtable_close(t->fdt, fds[0]);
		goto out;
	}
	if (mm_copy_out(t->mm, args->a[3], fds, sizeof(fds)) != sizeof(fds)) {
		fdtable_close(t->fdt, fds[0]);
		fdtable_close(t->fdt, fds[1]);
		ret = -EFAULT;
		goto out;
	}
	ret = 0;
out:
	file_put(f[0]);
	file_put(f[1]);
	return ret;
}

/* bind(2) */
long sys_bind(struct task *t, const struct syscall_args *args)
{
	uint8_t addr[SOCK_ADDR_MAX];
	struct file *f;
	long ret;

	f = sock_fd(t, (int)args->a[0], &ret);
	if (!f)
		return ret;
	ret = copy_addr_in(t, args->a[1], (uint32_t)args->a[2], addr);
	if (ret == 0)
		ret = net_bind(t, f, addr, (uint32_t)args->a[2]);
	file_put(f);
	return ret;
}

/* listen(2) */
long sys_listen(struct task *t, const struct syscall_args *args)
{
	struct file *f;
	long ret;

	f = sock_fd(t, (int)args->a[0], &ret);
	if (!f)
		return ret;
	ret = net_listen(t, f, (int)args->a[1]);
	file_put(f);
	return ret;
}

static long do_accept4(struct task *t, const struct syscall_args *args, int flags)
{
	uint8_t addr[SOCK_ADDR_MAX];
	size_t len = sizeof(addr);
	struct file *f, *nf;
	long ret, fd;

	if (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC))
		return -EINVAL;
	f = sock_fd(t, (int)args->a[0], &ret);
	if (!f)
		return ret;
	if (args->a[2]) {
		int glen;

		if (mm_copy_in(t->mm, &glen, args->a[2], sizeof(glen)) != sizeof(glen)) {
			file_put(f);
			return -EFAULT;
		}
		if (glen < 0) {
			file_put(f);
			return -EINVAL;
		}
	}
	ret = net_accept(t, f, (flags & SOCK_NONBLOCK) ? O_NONBLOCK : 0, &nf, addr, &len);
	file_put(f);
	if (ret < 0)
		return ret;
	fd = install(t, nf, flags & SOCK_CLOEXEC);
	file_put(nf);
	if (fd < 0)
		return fd;
	if (args->a[1] || args->a[2]) {
		ret = copy_addr_out(t, addr, len, args->a[1], args->a[2]);
		if (ret < 0) {
			fdtable_close(t->fdt, (int)fd);
			return ret;
		}
	}
	return fd;
}

/* accept(2) */
long sys_accept(struct task *t, const struct syscall_args *args)
{
	return do_accept4(t, args, 0);
}

/* accept4(2) */
long sys_accept4(struct task *t, const struct syscall_args *args)
{
	return do_accept4(t, args, (int)args->a[3]);
}

/* connect(2) */
long sys_connect(struct task *t, const struct syscall_args *args)
{
	uint8_t addr[SOCK_ADDR_MAX];
	struct file *f;
	long ret;

	f = sock_fd(t, (int)args->a[0], &ret);
	if (!f)
		return ret;
	ret = copy_addr_in(t, args->a[1], (uint32_t)args->a[2], addr);
	if (ret == 0)
		ret = net_connect(t, f, addr, (uint32_t)args->a[2]);
	file_put(f);
	return ret;
}

static long do_getname(struct task *t, const struct syscall_args *args, bool peer)
{
	uint8_t addr[SOCK_ADDR_MAX];
	size_t len = sizeof(addr);
	struct file *f;
	long ret;

	f = sock_fd(t, (int)args->a[0], &ret);
	if (!f)
		return ret;
	ret = net_getname(f, peer, addr, &len);
	file_put(f);
	if (ret < 0)
		return ret;
	if (!args->a[2])
		return -EFAULT;
	return copy_addr_out(t, addr, len, args->a[1], args->a[2]);
}

/* getsockname(2) */
long sys_getsockname(struct task *t, const struct syscall_args *args)
{
	return do_getname(t, args, false);
}

/* getpeername(2) */
long sys_getpeername(struct task *t, const struct syscall_args *args)
{
	return do_getname(t, args, true);
}

/* shutdown(2) */
long sys_shutdown(struct task *t, const struct syscall_args *args)
{
	struct file *f;
	long ret;

	f = sock_fd(t, (int)args->a[0], &ret);
	if (!f)
		return ret;
	ret = net_shutdown(f, (int)args->a[1]);
	file_put(f);
	return ret;
}

/* setsockopt(2) */
long sys_setsockopt(struct task *t, const struct syscall_args *args)
{
	uint8_t val[SOCK_OPT_MAX];
	int len = (int)args->a[4];
	struct file *f;
	long ret;

	if (len < 0)
		return -EINVAL;
	f = sock_fd(t, (int)args->a[0], &ret);
	if (!f)
		return ret;
	memset(val, 0, sizeof(val));
	len = MIN(len, (int)sizeof(val));
	if (len && mm_copy_in(t->mm, val, args->a[3], (size_t)len) != len)
		ret = -EFAULT;
	else
		ret = net_setsockopt(t, f, (int)args->a[1], (int)args->a[2], val, (size_t)len);
	file_put(f);
	return ret;
}

/* getsockopt(2) */
long sys_getsockopt(struct task *t, const struct syscall_args *args)
{
	uint8_t val[SOCK_OPT_MAX];
	int glen;
	size_t len;
	struct file *f;
	long ret;

	if (mm_copy_in(t->mm, &glen, args->a[4], sizeof(glen)) != sizeof(glen))
		return -EFAULT;
	if (glen < 0)
		return -EINVAL;
	f = sock_fd(t, (int)args->a[0], &ret);
	if (!f)
		return ret;
	len = MIN((size_t)glen, sizeof(val));
	ret = net_getsockopt(t, f, (int)args->a[1], (int)args->a[2], val, &len);
	file_put(f);
	if (ret < 0)
		return ret;
	if (len && mm_copy_out(t->mm, args->a[3], val, len) != (ssize_t)len)
		return -EFAULT;
	glen = (int)len;
	if (mm_copy_out(t->mm, args->a[4], &glen, sizeof(glen)) != sizeof(glen))
		return -EFAULT;
	return 0;
}

/* --- data --- */

/*
 * The guest ranges of a send or receive (guest addresses in iov_base), lengths clamped so that
 * they add up to at most SOCK_MAX_RW. They are translated only when data can move without
 * sleeping (sock_send, sock_recv; sentry/mm/README.md, "Sleeping with guest memory").
 */
struct sock_gbuf {
	struct iovec *g; /* owned */
	int n;
	size_t total;
};

/*
 * Copies in the guest iovec array at giov_addr (n entries) into *gb. Returns 0, -EMSGSIZE,
 * -EINVAL (a negative length), -EFAULT (the array, or the first byte of data, is bad), -ENOMEM.
 */
static long import_iov(struct task *t, uint64_t giov_addr, uint64_t n, bool write,
		       struct sock_gbuf *gb)
{
	struct iovec *g = NULL;
	size_t total = 0;

	*gb = (struct sock_gbuf){ 0 };
	if (n > SOCK_MAX_IOV)
		return -EMSGSIZE;
	if (n) {
		g = malloc(n * sizeof(*g));
		if (!g)
			return -ENOMEM;
		if (mm_copy_in(t->mm, g, giov_addr, n * sizeof(*g)) != (ssize_t)(n * sizeof(*g))) {
			free(g);
			return -EFAULT;
		}
	}
	for (uint64_t i = 0; i < n; i++) {
		if ((ssize_t)g[i].iov_len < 0) {
			free(g);
			return -EINVAL;
		}
		g[i].iov_len = MIN(g[i].iov_len, SOCK_MAX_RW - total);
		total += g[i].iov_len;
	}
	*gb = (struct sock_gbuf){ g, (int)n, total };
	for (int i = 0; i < gb->n; i++) {
		if (!gb->g[i].iov_len)
			continue;
		if (mm_access_len(t->mm, (uint64_t)(uintptr_t)gb->g[i].iov_base, 1, write) == 0) {
			free(g);
			*gb = (struct sock_gbuf){ 0 };
			return -EFAULT;
		}
		break;
	}
	return 0;
}

/* A guest buffer of one range (send, sendto, recv, recvfrom). */
static long import_one(struct task *t, uint64_t addr, uint64_t len, bool write,
		       struct sock_gbuf *gb)
{
	*gb = (struct sock_gbuf){ 0 };
	if (len == 0)
		return 0;
	gb->g = malloc(sizeof(*gb->g));
	if (!gb->g)
		return -ENOMEM;
	gb->g[0] = (struct iovec){ (void *)(uintptr_t)addr, MIN(len, (uint64_t)SOCK_MAX_RW) };
	gb->n = 1;
	gb->total = gb->g[0].iov_len;
	if (mm_access_len(t->mm, addr, 1, write) == 0) {
		free(gb->g);
		*gb = (struct sock_gbuf){ 0 };
		return -EFAULT;
	}
	return 0;
}

/*
 * Translates gb from byte skip on into iov (SOCK_MAX_IOV entries); stops at a bad page.
 * Returns the iovecs filled, pinned (mm_translate_unpin them after the call that uses them);
 * *covered gets the bytes they hold.
 */
static int translate_gbuf(struct task *t, const struct sock_gbuf *gb, size_t skip, bool write,
			  struct iovec *iov, size_t *covered)
{
	int cnt = 0;

	*covered = 0;
	for (int i = 0; i < gb->n && cnt < SOCK_MAX_IOV; i++) {
		size_t len = gb->g[i].iov_len, c = 0;
		int k;

		if (skip >= len) {
			skip -= len;
			continue;
		}
		k = mm_translate_pin(t->mm, (uint64_t)(uintptr_t)gb->g[i].iov_base + skip,
				     len - skip, write, iov + cnt, SOCK_MAX_IOV - cnt, &c);
		cnt += k > 0 ? k : 0;
		*covered += c;
		if (c < len - skip)
			break;
		skip = 0;
	}
	return cnt;
}

/* Copies len bytes between buf and gb from byte skip on. Returns the bytes copied. */
static size_t gbuf_copy(struct task *t, const struct sock_gbuf *gb, size_t skip, void *buf,
			size_t len, bool out)
{
	size_t done = 0;

	for (int i = 0; i < gb->n && done < len; i++) {
		size_t glen = gb->g[i].iov_len, n;
		uint64_t a = (uint64_t)(uintptr_t)gb->g[i].iov_base;
		ssize_t k;

		if (skip >= glen) {
			skip -= glen;
			continue;
		}
		n = MIN(glen - skip, len - done);
		k = out ? mm_copy_out(t->mm, a + skip, (uint8_t *)buf + done, n) :
			  mm_copy_in(t->mm, (uint8_t *)buf + done, a + skip, n);
		done += k > 0 ? (size_t)k : 0;
		if (k < (ssize_t)n)
			break;
		skip = 0;
	}
	return done;
}

/* A call that does not sleep: the socket or the flags say so. */
static bool sock_nowait(struct file *f, int flags)
{
	return (flags & (MSG_DONTWAIT | MSG_OOB | MSG_ERRQUEUE)) ||
	       (__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & O_NONBLOCK);
}

/*
 * Sleeps until f has something to receive (data, a message, the end, an error), with the
 * socket's own rules (SO_RCVTIMEO, signals): a receive of one byte with MSG_PEEK, into the
 * sentry. Returns 0 or what that receive failed with.
 */
static long sock_wait_readable(struct task *t, struct file *f, int flags)
{
	uint8_t byte, name[SOCK_ADDR_MAX];
	struct iovec iov = { &byte, 1 };
	struct file *files[NET_MAX_FDS];
	struct net_msg pm = {
		.iov = &iov, .iovcnt = 1, .name = name, .namelen = sizeof(name), .files = files
	};
	long r = net_recvmsg(t, f, &pm,
			     (flags & ~(MSG_WAITALL | MSG_TRUNC | MSG_DONTWAIT)) | MSG_PEEK);

	for (int i = 0; i < pm.nfiles; i++)
		file_put(files[i]);
	return r < 0 ? r : 0;
}

static bool sock_is_stream(struct task *t, struct file *f)
{
	int type = 0;
	size_t len = sizeof(type);

	return net_getsockopt(t, f, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM;
}

/* Takes one waiting message of a datagram socket and drops it (its files too). */
static void sock_drop_one(struct task *t, struct file *f, struct net_msg *m)
{
	struct net_msg d = { .files = m->files };

	net_recvmsg(t, f, &d, MSG_DONTWAIT);
	for (int i = 0; i < d.nfiles; i++)
		file_put(d.files[i]);
}

/* The receive, blocking, through a sentry buffer (when waiting and retrying makes no progress). */
static long sock_recv_bounce(struct task *t, struct file *f, const struct sock_gbuf *gb,
			     size_t skip, struct net_msg *m, int flags)
{
	size_t len = 0;
	uint8_t *buf;
	long r;

	for (int i = 0; i < gb->n; i++)
		len += mm_access_len(t->mm, (uint64_t)(uintptr_t)gb->g[i].iov_base,
				     gb->g[i].iov_len, true);
	len = len > skip ? len - skip : 0;
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	m->iov = &(struct iovec){ buf, len };
	m->iovcnt = 1;
	r = net_recvmsg(t, f, m, flags);
	if (r > 0) {
		size_t n = MIN((size_t)r, len);
		size_t got = gbuf_copy(t, gb, skip, buf, n, true);

		if (got < n)
			r = got ? (long)got : -EFAULT;
	}
	free(buf);
	return r;
}

/*
 * recvmsg(2) into the guest ranges gb. The data goes straight into guest memory when it can be
 * taken without sleeping; otherwise the call sleeps with nothing translated
 * (sock_wait_readable) and translates again when woken. MSG_WAITALL on a stream goes on
 * until the buffer is full, the end, an error or a signal.
 */
static long sock_recv(struct task *t, struct file *f, const struct sock_gbuf *gb, struct net_msg *m,
		      int flags)
{
	struct iovec *iov = malloc(SOCK_MAX_IOV * sizeof(*iov));
	bool nowait = sock_nowait(f, flags);
	size_t done = 0, namecap = m->namelen;
	int spins = 0;
	long r;

	if (!iov)
		return -ENOMEM;
	for (;;) {
		size_t covered;
		int n = translate_gbuf(t, gb, done, true, iov, &covered);

		if (n == 0 && gb->total > done) {
			r = done ? (long)done : -EFAULT;
			/*
			 * The buffer went bad while the call slept (munmap, mprotect): Linux takes the
			 * message and then fails to copy it, so a datagram is lost (stream data stays).
			 */
			if (!done && spins && !(flags & MSG_PEEK) && !sock_is_stream(t, f))
				sock_drop_one(t, f, m);
			break;
		}
		m->iov = iov;
		m->iovcnt = n;
		m->namelen = namecap;
		r = net_recvmsg(t, f, m, flags | (nowait ? 0 : MSG_DONTWAIT));
		mm_translate_unpin(t->mm, iov, n);
		if (nowait)
			break;
		if (r >= 0) {
			bool more = (flags & MSG_WAITALL) && !(flags & (MSG_PEEK | MSG_TRUNC)) &&
				    r > 0 && done + (size_t)r < gb->total &&
				    covered == gb->total - done && !m->nfiles && !m->has_cred &&
				    sock_is_stream(t, f);

			done += (size_t)r;
			r = (long)done;
			if (!more)
				break;
			spins = 0;
		} else if (r != -EAGAIN) {
			r = done ? (long)done : r;
			break;
		}
		if (++spins > 64) {
			/* Readable by a peek but not by a receive: take the slow road. */
			r = sock_recv_bounce(t, f, gb, done, m, flags);
			r = r < 0 ? (done ? (long)done : r) : (long)(done + (size_t)r);
			break;
		}
		r = sock_wait_readable(t, f, flags);
		if (r < 0) {
			r = done ? (long)done : r;
			break;
		}
	}
	free(iov);
	return r;
}

/*
 * sendmsg(2) from the guest ranges gb: straight from guest memory when the socket takes it
 * without sleeping; what it cannot take now is copied into a sentry buffer and sent from there
 * by a call that may sleep.
 */
static long sock_send(struct task *t, struct file *f, const struct sock_gbuf *gb, struct net_msg *m,
		      int flags)
{
	struct iovec *iov = malloc(SOCK_MAX_IOV * sizeof(*iov));
	size_t covered, done = 0, len;
	struct net_msg rest;
	uint8_t *buf;
	long r;
	int n;

	if (!iov)
		return -ENOMEM;
	n = translate_gbuf(t, gb, 0, false, iov, &covered);
	if (n == 0 && gb->total) {
		free(iov);
		return -EFAULT;
	}
	m->iov = iov;
	m->iovcnt = n;
	if (sock_nowait(f, flags)) {
		r = net_sendmsg(t, f, m, flags);
		mm_translate_unpin(t->mm, iov, n);
		free(iov);
		return r;
	}
	r = net_sendmsg(t, f, m, flags | MSG_DONTWAIT);
	mm_translate_unpin(t->mm, iov, n);
	free(iov);
	m->iov = NULL;
	m->iovcnt = 0;
	if (r != -EAGAIN && (r < 0 || (size_t)r >= covered))
		return r;
	done = r > 0 ? (size_t)r : 0;
	len = covered - done;
	buf = malloc(len ? len : 1);
	if (!buf)
		return done ? (long)done : -ENOMEM;
	len = gbuf_copy(t, gb, done, buf, len, false);
	rest = *m;
	rest.iov = &(struct iovec){ buf, len };
	rest.iovcnt = 1;
	if (done) {
		/* The control data went with the first part. */
		rest.nfiles = 0;
		rest.has_cred = false;
	}
	r = net_sendmsg(t, f, &rest, flags);
	free(buf);
	if (r < 0)
		return done ? (long)done : r;
	return (long)(done + (size_t)r);
}

/* Whether Linux's UDP knows IP-level (SOL_IP or SOL_IPV6) control message type at level. */
static bool ip_cmsg_known(int level, int type)
{
	static const int v4[] = { IP_RETOPTS, IP_PKTINFO, IP_TTL, IP_TOS, 52 /* IP_PROTOCOL */ };
	static const int v6[] = { IPV6_PKTINFO,	     11 /* IPV6_FLOWINFO */, IPV6_2292HOPOPTS,
				  IPV6_HOPOPTS,	     IPV6_2292DSTOPTS,	     IPV6_DSTOPTS,
				  IPV6_RTHDRDSTOPTS, IPV6_2292RTHDR,	     IPV6_RTHDR,
				  IPV6_2292HOPLIMIT, IPV6_HOPLIMIT,	     IPV6_TCLASS,
				  IPV6_DONTFRAG };
	const int *k = level == SOL_IP ? v4 : v6;
	size_t n = level == SOL_IP ? ARRAY_SIZE(v4) : ARRAY_SIZE(v6);

	for (size_t i = 0; i < n; i++)
		if (k[i] == type)
			return true;
	return false;
}

/*
 * An IP-level control message of a UDP send (ip_cmsg_send, ip6_datagram_send_ctl): IPv4
 * sockets read SOL_IP, IPv6 ones SOL_IPV6, and refuse a type they do not know with EINVAL.
 * IP_TTL (1..255), IP_TOS (an int or a byte, 0..255), IPV6_HOPLIMIT and IPV6_TCLASS (-1..255,
 * -1 the default) are applied; the other known ones are accepted and not applied. TCP reads
 * none of them.
 */
static long parse_ip_cmsg(struct file *f, const struct cmsghdr *c, struct net_msg *m)
{
	size_t dlen = c->cmsg_len - CMSG_LEN(0);
	int family = net_sock_family(f);
	int v;

	if (net_sock_type(f) != SOCK_DGRAM)
		return 0;
	if (c->cmsg_level != (family == AF_INET ? SOL_IP : SOL_IPV6))
		return 0;
	if (!ip_cmsg_known(c->cmsg_level, c->cmsg_type))
		return -EINVAL;
	if (c->cmsg_level == SOL_IP && c->cmsg_type == IP_TOS && dlen == 1) {
		m->tos = *(const uint8_t *)CMSG_DATA(c);
		m->has_tos = true;
		return 0;
	}
	if (!((c->cmsg_level == SOL_IP && (c->cmsg_type == IP_TTL || c->cmsg_type == IP_TOS)) ||
	      (c->cmsg_level == SOL_IPV6 &&
	       (c->cmsg_type == IPV6_HOPLIMIT || c->cmsg_type == IPV6_TCLASS))))
		return 0;
	if (dlen != sizeof(int))
		return -EINVAL;
	memcpy(&v, CMSG_DATA(c), sizeof(v));
	if (c->cmsg_level == SOL_IP) {
		if (c->cmsg_type == IP_TTL ? (v < 1 || v > 255) : (v < 0 || v > 255))
			return -EINVAL;
	} else if (v < -1 || v > 255) {
		return -EINVAL;
	}
	if (c->cmsg_type == IP_TTL || c->cmsg_type == IPV6_HOPLIMIT) {
		m->has_ttl = v != -1;
		m->ttl = v;
	} else {
		m->has_tos = true;
		m->tos = v == -1 ? 0 : v;
	}
	return 0;
}

/* Parses the control messages of a send into m (files referenced: put them after). */
static long parse_cmsgs(struct task *t, struct file *f, const uint8_t *ctl, size_t len,
			struct net_msg *m)
{
	struct msghdr mh = { .msg_control = (void *)ctl, .msg_controllen = len };
	bool unix_sock = net_sock_family(f) == AF_UNIX;
	bool inet_sock = net_sock_family(f) == AF_INET || net_sock_family(f) == AF_INET6;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_len < sizeof(*c) || c->cmsg_len > len)
			return -EINVAL;
		if (c->cmsg_level != SOL_SOCKET) {
			long r = inet_sock ? parse_ip_cmsg(f, c, m) : 0;

			if (r < 0)
				return r;
			continue;
		}
		/* Other families take no descriptors nor credentials and ignore them without
		 * looking (__sock_cmsg_send), nor apply SO_MARK, SO_PRIORITY, timestamping or
		 * SCM_TXTIME here. */
		if (!unix_sock &&
		    (c->cmsg_type == SCM_RIGHTS || c->cmsg_type == SCM_CREDENTIALS ||
		     c->cmsg_type == SO_MARK || c->cmsg_type == SO_PRIORITY ||
		     c->cmsg_type == SO_TIMESTAMPING_OLD || c->cmsg_type == SCM_TXTIME))
			continue;
		if (c->cmsg_type == SCM_RIGHTS) {
			int n = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			const int *fds = (const int *)CMSG_DATA(c);

			if (m->nfiles + n > NET_MAX_FDS)
				return -EINVAL;
			for (int i = 0; i < n; i++) {
				struct file *x = fdtable_lookup(t->fdt, fds[i]);

				if (!x)
					return -EBADF;
				m->files[m->nfiles++] = x;
			}
		} else if (c->cmsg_type == SCM_CREDENTIALS) {
			struct ucred uc;
			bool admin = cred_capable(&t->cred, CAP_SYS_ADMIN);
			bool setuid = cred_capable(&t->cred, CAP_SETUID);
			bool setgid = cred_capable(&t->cred, CAP_SETGID);

			if (c->cmsg_len != CMSG_LEN(sizeof(uc)))
				return -EINVAL;
			memcpy(&uc, CMSG_DATA(c), sizeof(uc));
			if (uc.pid != task_pid(t) && !admin)
				return -EPERM;
			if (uc.uid != t->cred.uid && uc.uid != t->cred.euid &&
			    uc.uid != t->cred.suid && !setuid)
				return -EPERM;
			if (uc.gid != t->cred.gid && uc.gid != t->cred.egid &&
			    uc.gid != t->cred.sgid && !setgid)
				return -EPERM;
			m->has_cred = true;
			m->cred = (struct net_cred){ uc.pid, uc.uid, uc.gid };
		} else {
			return -EINVAL;
		}
	}
	return 0;
}

static long do_sendmsg(struct task *t, int fd, uint64_t msg_addr, int flags)
{
	struct msghdr mh;
	uint8_t addr[SOCK_ADDR_MAX];
	uint8_t *ctl = NULL;
	struct file *files[NET_MAX_FDS];
	struct net_msg m = { 0 };
	struct sock_gbuf gb = { 0 };
	struct file *f;
	long ret;

	if (mm_copy_in(t->mm, &mh, msg_addr, sizeof(mh)) != sizeof(mh))
		return -EFAULT;
	f = sock_fd(t, fd, &ret);
	if (!f)
		return ret;
	m.files = files;
	if (mh.msg_name && mh.msg_namelen) {
		/* __copy_msghdr: negative is EINVAL, longer than a sockaddr_storage is cut. */
		socklen_t nl = MIN(mh.msg_namelen, (socklen_t)SOCK_ADDR_MAX);

		ret = (int)mh.msg_namelen < 0 ?
			      -EINVAL :
			      copy_addr_in(t, (uint64_t)(uintptr_t)mh.msg_name, nl, addr);
		if (ret < 0)
			goto out;
		m.name = addr;
		m.namelen = nl;
	}
	if (mh.msg_controllen) {
		if (mh.msg_controllen > SOCK_CTL_MAX) {
			ret = -ENOBUFS;
			goto out;
		}
		ctl = malloc(mh.msg_controllen);
		if (!ctl) {
			ret = -ENOMEM;
			goto out;
		}
		if (mm_copy_in(t->mm, ctl, (uint64_t)(uintptr_t)mh.msg_control,
			       mh.msg_controllen) != (ssize_t)mh.msg_controllen) {
			ret = -EFAULT;
			goto out;
		}
		ret = parse_cmsgs(t, f, ctl, mh.msg_controllen, &m);
		if (ret < 0)
			goto out;
	}
	ret = import_iov(t, (uint64_t)(uintptr_t)mh.msg_iov, mh.msg_iovlen, false, &gb);
	if (ret < 0)
		goto out;
	ret = sock_send(t, f, &gb, &m, flags);
out:
	for (int i = 0; i < m.nfiles; i++)
		file_put(files[i]);
	free(gb.g);
	free(ctl);
	file_put(f);
	return ret;
}

/* Writes the received control data (credentials, then files) into the guest's buffer. */
static void put_cmsgs(struct task *t, struct msghdr *mh, struct net_msg *m, int flags)
{
	uint8_t *ctl = NULL;
	size_t cap = mh->msg_controllen, used = 0;
	int installed = 0;

	if (cap > SOCK_CTL_MAX)
		cap = SOCK_CTL_MAX;
	if ((m->has_cred || m->nfiles || m->ctl_len) && cap)
		ctl = calloc(1, cap);
	if (m->ctl_len && !ctl)
		mh->msg_flags |= MSG_CTRUNC;
	/* The core's messages (IP ancillary data, errors, TCP_CM_INQ): each whole while it fits,
	 * then one cut short as put_cmsg cuts it. */
	for (size_t off = 0; ctl && off < m->ctl_len;) {
		const struct cmsghdr *c = (const struct cmsghdr *)(m->ctl + off);
		size_t clen = c->cmsg_len, room = cap - used;

		if (room < sizeof(struct cmsghdr)) {
			mh->msg_flags |= MSG_CTRUNC;
			break;
		}
		if (room < clen) {
			struct cmsghdr *d = (struct cmsghdr *)(ctl + used);

			memcpy(d, c, room);
			d->cmsg_len = room;
			used = cap;
			mh->msg_flags |= MSG_CTRUNC;
			break;
		}
		memcpy(ctl + used, c, clen);
		used += MIN(CMSG_ALIGN(clen), room);
		off += CMSG_ALIGN(clen);
	}
	if (m->has_cred) {
		struct ucred uc = { m->cred.pid, m->cred.uid, m->cred.gid };

		if (ctl && cap - used >= CMSG_LEN(sizeof(uc))) {
			struct cmsghdr *c = (struct cmsghdr *)(ctl + used);

			c->cmsg_len = CMSG_LEN(sizeof(uc));
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_CREDENTIALS;
			memcpy(CMSG_DATA(c), &uc, sizeof(uc));
			used += MIN(CMSG_SPACE(sizeof(uc)), cap - used);
		} else {
			mh->msg_flags |= MSG_CTRUNC;
		}
	}
	if (m->nfiles) {
		size_t room = ctl && cap - used > CMSG_LEN(0) ?
				      (cap - used - CMSG_LEN(0)) / sizeof(int) :
				      0;
		int fds[NET_MAX_FDS];

		for (int i = 0; i < m->nfiles && (size_t)installed < room; i++) {
			long fd = install(t, m->files[i], flags & MSG_CMSG_CLOEXEC);

			if (fd < 0)
				break;
			fds[installed++] = (int)fd;
		}
		if (installed < m->nfiles)
			mh->msg_flags |= MSG_CTRUNC;
		if (installed) {
			struct cmsghdr *c = (struct cmsghdr *)(ctl + used);

			c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)installed);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)installed);
			used += MIN(CMSG_SPACE(sizeof(int) * (size_t)installed), cap - used);
		}
		for (int i = 0; i < m->nfiles; i++)
			file_put(m->files[i]);
	}
	if (used &&
	    mm_copy_out(t->mm, (uint64_t)(uintptr_t)mh->msg_control, ctl, used) != (ssize_t)used)
		mh->msg_flags |= MSG_CTRUNC;
	mh->msg_controllen = used;
	free(ctl);
}

static long do_recvmsg(struct task *t, int fd, uint64_t msg_addr, int flags)
{
	struct msghdr mh;
	uint8_t addr[SOCK_ADDR_MAX];
	struct file *files[NET_MAX_FDS];
	struct net_msg m = { 0 };
	struct sock_gbuf gb;
	struct file *f;
	long ret;

	if (mm_copy_in(t->mm, &mh, msg_addr, sizeof(mh)) != sizeof(mh))
		return -EFAULT;
	/* A negative length matters only with a buffer for the name (copy_msghdr_from_user). */
	if (mh.msg_name && (int)mh.msg_namelen < 0)
		return -EINVAL;
	f = sock_fd(t, fd, &ret);
	if (!f)
		return ret;
	ret = import_iov(t, (uint64_t)(uintptr_t)mh.msg_iov, mh.msg_iovlen, true, &gb);
	if (ret < 0) {
		file_put(f);
		return ret;
	}
	m.name = addr;
	m.namelen = sizeof(addr);
	m.files = files;
	ret = sock_recv(t, f, &gb, &m, flags & ~MSG_CMSG_CLOEXEC);
	file_put(f);
	free(gb.g);
	if (ret < 0)
		return ret;
	mh.msg_flags = m.out_flags;
	put_cmsgs(t, &mh, &m, flags);
	if (mh.msg_name && m.namelen) {
		size_t k = MIN((size_t)mh.msg_namelen, m.namelen);

		if (k &&
		    mm_copy_out(t->mm, (uint64_t)(uintptr_t)mh.msg_name, addr, k) != (ssize_t)k)
			return -EFAULT;
	}
	/* Without a name buffer Linux leaves msg_namelen as it was. */
	if (mh.msg_name)
		mh.msg_namelen = (socklen_t)m.namelen;
	if (mm_copy_out(t->mm, msg_addr, &mh, sizeof(mh)) != sizeof(mh))
		return -EFAULT;
	return ret;
}

/* sendmsg(2) */
long sys_sendmsg(struct task *t, const struct syscall_args *args)
{
	return do_sendmsg(t, (int)args->a[0], args->a[1], (int)args->a[2]);
}

/* recvmsg(2) */
long sys_recvmsg(struct task *t, const struct syscall_args *args)
{
	return do_recvmsg(t, (int)args->a[0], args->a[1], (int)args->a[2]);
}

/* sendto(2) */
long sys_sendto(struct task *t, const struct syscall_args *args)
{
	uint8_t addr[SOCK_ADDR_MAX];
	struct net_msg m = { 0 };
	struct sock_gbuf gb = { 0 };
	struct file *f;
	long ret;

	f = sock_fd(t, (int)args->a[0], &ret);
	if (!f)
		return ret;
	if (args->a[4] && args->a[5]) {
		ret = copy_addr_in(t, args->a[4], (uint32_t)args->a[5], addr);
		if (ret < 0)
			goto out;
		m.name = addr;
		m.namelen = (uint32_t)args->a[5];
	}
	ret = import_one(t, args->a[1], args->a[2], false, &gb);
	if (ret == 0)
		ret = sock_send(t, f, &gb, &m, (int)args->a[3]);
out:
	free(gb.g);
	file_put(f);
	return ret;
}

/* recvfrom(2) */
long sys_recvfrom(struct task *t, const struct syscall_args *args)
{
	uint8_t addr[SOCK_ADDR_MAX];
	struct file *files[NET_MAX_FDS];
	struct net_msg m = { 0 };
	struct sock_gbuf gb;
	struct file *f;
	long ret;

	f = sock_fd(t, (int)args->a[0], &ret);
	if (!f)
		return ret;
	ret = import_one(t, args->a[1], args->a[2], true, &gb);
	if (ret < 0) {
		file_put(f);
		return ret;
	}
	m.name = addr;
	m.namelen = sizeof(addr);
	m.files = files;
	ret = sock_recv(t, f, &gb, &m, (int)args->a[3]);
	for (int i = 0; i < m.nfiles; i++)
		file_put(files[i]);
	free(gb.g);
	file_put(f);
	/* move_addr_to_user, also with no name: a negative length is EINVAL (the data is gone,
	 * as in Linux), the length written back. */
	if (ret >= 0 && args->a[4]) {
		long r = copy_addr_out(t, addr, m.namelen, args->a[4], args->a[5]);

		if (r < 0)
			return r;
	}
	return ret;
}

/* sendmmsg(2) */
long sys_sendmmsg(struct task *t, const struct syscall_args *args)
{
	uint64_t vec = args->a[1];
	unsigned int n = (unsigned int)MIN(args->a[2], 1024);
	unsigned int i;
	long r = 0;

	for (i = 0; i < n; i++) {
		uint64_t ent = vec + i * sizeof(struct mmsghdr);
		unsigned int len;

		r = do_sendmsg(t, (int)args->a[0], ent, (int)args->a[3]);
		if (r < 0)
			break;
		len = (unsigned int)r;
		if (mm_copy_out(t->mm, ent + offsetof(struct mmsghdr, msg_len), &len,
				sizeof(len)) != sizeof(len)) {
			r = -EFAULT;
			break;
		}
	}
	return i ? (long)i : r;
}

/*
 * recvmmsg(2): as Linux, the timeout (relative) is checked only after each datagram: a wait for
 * one is not cut short by it. The time left is written back when datagrams were received.
 */
long sys_recvmmsg(struct task *t, const struct syscall_args *args)
{
	uint64_t vec = args->a[1], uts = args->a[4];
	unsigned int n = (unsigned int)MIN(args->a[2], 1024);
	int flags = (int)args->a[3];
	struct timespec end = { 0, 0 }, left = { 0, 0 };
	unsigned int i;
	long r = 0;

	if (uts) {
		struct {
			int64_t sec, nsec;
		} ts;

		if (mm_copy_in(t->mm, &ts, uts, sizeof(ts)) != sizeof(ts))
			return -EFAULT;
		if (ts.sec < 0 || ts.nsec < 0 || ts.nsec >= 1000000000)
			return -EINVAL;
		/* A zero timeout ends after the first datagram, as an expired one. */
		if (ts.sec || ts.nsec)
			end = poll_deadline_after((struct timespec){ ts.sec, ts.nsec });
	}
	for (i = 0; i < n; i++) {
		uint64_t ent = vec + i * sizeof(struct mmsghdr);
		unsigned int len;

		r = do_recvmsg(t, (int)args->a[0], ent, flags & ~MSG_WAITFORONE);
		if (r < 0)
			break;
		len = (unsigned int)r;
		if (mm_copy_out(t->mm, ent + offsetof(struct mmsghdr, msg_len), &len,
				sizeof(len)) != sizeof(len)) {
			r = -EFAULT;
			break;
		}
		if (flags & MSG_WAITFORONE)
			flags |= MSG_DONTWAIT;
		if (uts) {
			struct timespec now;

			clock_gettime(CLOCK_MONOTONIC, &now);
			left.tv_sec = end.tv_sec - now.tv_sec;
			left.tv_nsec = end.tv_nsec - now.tv_nsec;
			if (left.tv_nsec < 0) {
				left.tv_sec--;
				left.tv_nsec += 1000000000;
			}
			if (left.tv_sec < 0 || (left.tv_sec == 0 && left.tv_nsec == 0)) {
				left.tv_sec = left.tv_nsec = 0;
				i++;
				break;
			}
		}
	}
	if (i && uts) {
		int64_t out[2] = { left.tv_sec, left.tv_nsec };

		if (mm_copy_out(t->mm, uts, out, sizeof(out)) != sizeof(out))
			return -EFAULT;
	}
	return i ? (long)i : r;
}
