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

#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/net/net.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/handlers.h"

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
 * Translates guest iovecs (an array at giov_addr of n entries) into sentry iovecs in *out
 * (allocated). Returns the count, or -EFAULT/-EINVAL/-ENOMEM. A range that goes bad ends the
 * list there; a first byte that is bad gives -EFAULT.
 */
static long import_iov(struct task *t, uint64_t giov_addr, uint64_t n, bool write,
		       struct iovec **out)
{
	struct iovec *g = NULL, *iov = NULL;
	size_t total = 0;
	long cnt = 0, ret;

	*out = NULL;
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
	iov = malloc(SOCK_MAX_IOV * sizeof(*iov) + sizeof(*iov));
	if (!iov) {
		free(g);
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < n; i++) {
		size_t len = g[i].iov_len, covered = 0;
		int k;

		if ((ssize_t)len < 0) {
			ret = -EINVAL;
			goto fail;
		}
		len = MIN(len, SOCK_MAX_RW - total);
		if (len == 0)
			continue;
		if (cnt >= SOCK_MAX_IOV)
			break;
		k = mm_translate(t->mm, (uint64_t)(uintptr_t)g[i].iov_base, len, write, iov + cnt,
				 (int)(SOCK_MAX_IOV - cnt), &covered);
		if (k <= 0) {
			if (total == 0) {
				ret = -EFAULT;
				goto fail;
			}
			break;
		}
		cnt += k;
		total += covered;
		if (covered < len)
			break;
	}
	free(g);
	*out = iov;
	return cnt;
fail:
	free(g);
	free(iov);
	return ret;
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
			bool admin = t->cred.cap_effective & (1ULL << CAP_SYS_ADMIN);
			bool setuid = t->cred.cap_effective & (1ULL << CAP_SETUID);
			bool setgid = t->cred.cap_effective & (1ULL << CAP_SETGID);

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
	struct iovec *iov = NULL;
	struct file *f;
	long ret, n;

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
	n = import_iov(t, (uint64_t)(uintptr_t)mh.msg_iov, mh.msg_iovlen, false, &iov);
	if (n < 0) {
		ret = n;
		goto out;
	}
	m.iov = iov;
	m.iovcnt = (int)n;
	ret = net_sendmsg(t, f, &m, flags);
out:
	for (int i = 0; i < m.nfiles; i++)
		file_put(files[i]);
	free(iov);
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
	struct iovec *iov = NULL;
	struct file *f;
	long ret, n;

	if (mm_copy_in(t->mm, &mh, msg_addr, sizeof(mh)) != sizeof(mh))
		return -EFAULT;
	/* A negative length matters only with a buffer for the name (copy_msghdr_from_user). */
	if (mh.msg_name && (int)mh.msg_namelen < 0)
		return -EINVAL;
	f = sock_fd(t, fd, &ret);
	if (!f)
		return ret;
	n = import_iov(t, (uint64_t)(uintptr_t)mh.msg_iov, mh.msg_iovlen, true, &iov);
	if (n < 0) {
		file_put(f);
		return n;
	}
	m.iov = iov;
	m.iovcnt = (int)n;
	m.name = addr;
	m.namelen = sizeof(addr);
	m.files = files;
	ret = net_recvmsg(t, f, &m, flags & ~MSG_CMSG_CLOEXEC);
	file_put(f);
	free(iov);
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
	struct iovec *iov = NULL;
	struct iovec giov = { (void *)(uintptr_t)args->a[1], args->a[2] };
	struct file *f;
	long ret, n;

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
	/* import_iov reads the iovec array from the guest: build the one-entry list here. */
	iov = malloc(SOCK_MAX_IOV * sizeof(*iov));
	if (!iov) {
		ret = -ENOMEM;
		goto out;
	}
	n = 0;
	if (giov.iov_len) {
		size_t covered = 0;

		n = mm_translate(t->mm, args->a[1], MIN(giov.iov_len, (size_t)SOCK_MAX_RW), false,
				 iov, SOCK_MAX_IOV, &covered);
		if (n <= 0) {
			ret = -EFAULT;
			goto out;
		}
	}
	m.iov = iov;
	m.iovcnt = (int)n;
	ret = net_sendmsg(t, f, &m, (int)args->a[3]);
out:
	free(iov);
	file_put(f);
	return ret;
}

/* recvfrom(2) */
long sys_recvfrom(struct task *t, const struct syscall_args *args)
{
	uint8_t addr[SOCK_ADDR_MAX];
	struct file *files[NET_MAX_FDS];
	struct net_msg m = { 0 };
	struct iovec *iov = NULL;
	struct file *f;
	long ret, n = 0;

	f = sock_fd(t, (int)args->a[0], &ret);
	if (!f)
		return ret;
	iov = malloc(SOCK_MAX_IOV * sizeof(*iov));
	if (!iov) {
		file_put(f);
		return -ENOMEM;
	}
	if (args->a[2]) {
		size_t covered = 0;

		n = mm_translate(t->mm, args->a[1], MIN(args->a[2], (uint64_t)SOCK_MAX_RW), true,
				 iov, SOCK_MAX_IOV, &covered);
		if (n <= 0) {
			free(iov);
			file_put(f);
			return -EFAULT;
		}
	}
	m.iov = iov;
	m.iovcnt = (int)n;
	m.name = addr;
	m.namelen = sizeof(addr);
	m.files = files;
	ret = net_recvmsg(t, f, &m, (int)args->a[3]);
	for (int i = 0; i < m.nfiles; i++)
		file_put(files[i]);
	free(iov);
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

/* recvmmsg(2): the timeout is checked only between messages. */
long sys_recvmmsg(struct task *t, const struct syscall_args *args)
{
	uint64_t vec = args->a[1];
	unsigned int n = (unsigned int)MIN(args->a[2], 1024);
	int flags = (int)args->a[3];
	unsigned int i;
	long r = 0;

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
	}
	return i ? (long)i : r;
}
