/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Network namespaces (issue 17; man 7 network_namespaces): unshare(2) and clone(2) with
 * CLONE_NEWNET, setns(2) on /proc/self/ns/net. A new namespace's lo is down with no address
 * (SIOCGIFFLAGS, SIOCGIFADDR, SIOCGIFCONF, the RTM_GETADDR dump); with lo down IPv4 loopback is
 * unreachable, ::1 is not an address, other destinations are unreachable; once lo is up the
 * namespace has a loopback of its own: the same port bound in both namespaces, a listener of
 * one unreachable from the other, abstract unix names apart while path names are shared,
 * /proc/self/net/tcp showing the namespace's sockets only. A socket keeps the namespace it was
 * made in after setns; setns back and forth with fds kept. The unprivileged rules run in a child
 * dropped to uid 65534: CLONE_NEWNET alone is EPERM, with CLONE_NEWUSER it is allowed and the
 * new namespace's owner may take lo up.
 *
 * The process itself moves between namespaces (it is single-threaded); children check clone and
 * the unprivileged rules.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sched.h>
#include <stddef.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static ino_t ns_ino(void)
{
	struct stat st;

	if (stat("/proc/self/ns/net", &st) < 0)
		return 0;
	return st.st_ino;
}

/* lo's flags (SIOCGIFFLAGS on a new socket), or -errno. */
static int lo_flags(void)
{
	struct ifreq r;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), ret;

	if (s < 0)
		return -errno;
	memset(&r, 0, sizeof(r));
	strcpy(r.ifr_name, "lo");
	ret = ioctl(s, SIOCGIFFLAGS, &r) < 0 ? -errno : r.ifr_flags;
	close(s);
	return ret;
}

static int lo_set_up(void)
{
	struct ifreq r;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), ret;

	if (s < 0)
		return -errno;
	memset(&r, 0, sizeof(r));
	strcpy(r.ifr_name, "lo");
	ret = ioctl(s, SIOCGIFFLAGS, &r);
	if (ret == 0) {
		r.ifr_flags |= IFF_UP;
		ret = ioctl(s, SIOCSIFFLAGS, &r);
	}
	ret = ret < 0 ? -errno : 0;
	close(s);
	return ret;
}

/* How many addresses the RTM_GETADDR dump lists (-1: the dump failed). */
static int addr_count(void)
{
	struct {
		struct nlmsghdr h;
		struct ifaddrmsg a;
	} req = { { sizeof(req), RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP, 1, 0 }, { AF_UNSPEC } };
	char buf[8192];
	int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE), n = 0;

	if (s < 0 || send(s, &req, sizeof(req), 0) < 0)
		return -1;
	for (;;) {
		ssize_t len = recv(s, buf, sizeof(buf), 0);

		if (len <= 0) {
			n = -1;
			break;
		}
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)len);
		     h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR)
				goto out;
			if (h->nlmsg_type == RTM_NEWADDR)
				n++;
		}
	}
out:
	close(s);
	return n;
}

static struct sockaddr_in sin4(const char *a, uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, a, &sin.sin_addr);
	return sin;
}

/* A TCP listener on 127.0.0.1:port (0: the kernel's choice, written back). -1: failed. */
static int listener(uint16_t *port)
{
	struct sockaddr_in sin = sin4("127.0.0.1", *port);
	socklen_t len = sizeof(sin);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (s < 0)
		return -1;
	if (bind(s, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(s, 8) < 0 ||
	    getsockname(s, (struct sockaddr *)&sin, &len) < 0) {
		close(s);
		return -1;
	}
	*port = ntohs(sin.sin_port);
	return s;
}

/* connect(2) of TCP socket s (made now when s < 0) to 127.0.0.1:port: 0 or -errno. */
static int tcp_connect(int s, uint16_t port)
{
	struct sockaddr_in sin = sin4("127.0.0.1", port);
	int own = s < 0, ret;

	if (own)
		s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	ret = connect(s, (struct sockaddr *)&sin, sizeof(sin)) < 0 ? -errno : 0;
	if (own)
		close(s);
	return ret;
}

static int connect_to(int type, const char *addr, int family, uint16_t port)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	int s = socket(family, type | SOCK_CLOEXEC, 0), ret;

	if (s < 0)
		return -errno;
	if (family == AF_INET) {
		struct sockaddr_in sin = sin4(addr, port);

		memcpy(&ss, &sin, sizeof(sin));
		len = sizeof(sin);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		inet_pton(AF_INET6, addr, &s6->sin6_addr);
		len = sizeof(*s6);
	}
	ret = connect(s, (struct sockaddr *)&ss, len) < 0 ? -errno : 0;
	close(s);
	return ret;
}

static int bind_to(int family, const char *addr, uint16_t port)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	int s = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0), ret;

	if (s < 0)
		return -errno;
	if (family == AF_INET) {
		struct sockaddr_in sin = sin4(addr, port);

		memcpy(&ss, &sin, sizeof(sin));
		len = sizeof(sin);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		inet_pton(AF_INET6, addr, &s6->sin6_addr);
		len = sizeof(*s6);
	}
	ret = bind(s, (struct sockaddr *)&ss, len) < 0 ? -errno : 0;
	close(s);
	return ret;
}

static socklen_t abstract_name(struct sockaddr_un *sun, const char *name)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	strcpy(sun->sun_path + 1, name);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
}

/* A unix stream listener at sun (len): the fd or -errno. */
static int unix_listener(const struct sockaddr_un *sun, socklen_t len)
{
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		return -errno;
	if (bind(s, (const struct sockaddr *)sun, len) < 0 || listen(s, 8) < 0) {
		int e = -errno;

		close(s);
		return e;
	}
	return s;
}

static int unix_connect(const struct sockaddr_un *sun, socklen_t len)
{
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), ret;

	if (s < 0)
		return -errno;
	ret = connect(s, (const struct sockaddr *)sun, len) < 0 ? -errno : 0;
	close(s);
	return ret;
}

/*
 * Lines of /proc/self/net/tcp (path) whose local port is port and state st (-1: any state);
 * port 0: every socket line. -1 when unreadable.
 */
static int tcp_lines(const char *path, uint16_t port, int st)
{
	FILE *f = fopen(path, "re");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned int lp, state;

		if (sscanf(line, " %*d: %*x:%x %*x:%*x %x", &lp, &state) != 2)
			continue;
		if ((!port || lp == port) && (st < 0 || (int)state == st))
			n++;
	}
	fclose(f);
	return n;
}

/* The fresh namespace: lo down, no address; what connect and bind give. */
static void check_fresh(uint16_t port)
{
	struct ifreq r;
	struct ifconf ifc;
	char buf[512];
	int s, fl = lo_flags();

	CHECK(fl >= 0 && (fl & IFF_LOOPBACK) && !(fl & IFF_UP), "new lo flags %#x", fl);
	CHECK_RET(addr_count(), 0);
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	memset(&r, 0, sizeof(r));
	strcpy(r.ifr_name, "lo");
	CHECK_ERR(ioctl(s, SIOCGIFADDR, &r), EADDRNOTAVAIL);
	ifc.ifc_len = sizeof(buf);
	ifc.ifc_buf = buf;
	CHECK_RET(ioctl(s, SIOCGIFCONF, &ifc), 0);
	CHECK(ifc.ifc_len == 0, "SIOCGIFCONF of a new namespace: %d bytes", ifc.ifc_len);
	close(s);
	/* lo down and never up: nothing is reachable. */
	CHECK_RET(tcp_connect(-1, port), -ENETUNREACH);
	CHECK_RET(connect_to(SOCK_DGRAM, "127.0.0.1", AF_INET, 9), -ENETUNREACH);
	CHECK_RET(connect_to(SOCK_STREAM, "::1", AF_INET6, port), -EADDRNOTAVAIL);
	CHECK_RET(connect_to(SOCK_STREAM, "192.0.2.1", AF_INET, 80), -ENETUNREACH);
	CHECK_RET(connect_to(SOCK_DGRAM, "192.0.2.1", AF_INET, 53), -ENETUNREACH);
	CHECK_RET(bind_to(AF_INET, "127.0.0.1", 0), 0);
	CHECK_RET(bind_to(AF_INET, "0.0.0.0", 0), 0);
	CHECK_RET(bind_to(AF_INET6, "::1", 0), -EADDRNOTAVAIL);
	CHECK_RET(tcp_lines("/proc/self/net/tcp", 0, -1), 0);
}

/* clone(CLONE_NEWNET) child: its own namespace with lo down. */
static int clone_child(ino_t parent_ino)
{
	int fl = lo_flags();

	if (ns_ino() == parent_ino || fl < 0 || (fl & IFF_UP))
		return 1;
	return addr_count() == 0 ? 0 : 2;
}

static void check_clone(void)
{
	ino_t mine = ns_ino();
	int status = -1;
	long pid = syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0);

	if (pid == 0)
		_exit(clone_child(mine));
	CHECK(pid > 0, "clone(CLONE_NEWNET): %s", strerror(errno));
	if (pid > 0)
		waitpid((pid_t)pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "clone child status %#x", status);
	CHECK(lo_flags() & IFF_UP, "the parent's lo after the child's namespace");
}

/* As uid 65534: CLONE_NEWNET needs CAP_SYS_ADMIN in the caller's user namespace. */
static void check_unprivileged(int init_fd)
{
	int status = -1;
	pid_t pid = fork();

	if (pid == 0) {
		int bad = 0;
		uint16_t port = 80;
		int l;

		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			_exit(100);
		if (syscall(SYS_unshare, CLONE_NEWNET) != -1 || errno != EPERM)
			bad |= 1;
		if (syscall(SYS_unshare, CLONE_NEWUSER | CLONE_NEWNET) != 0)
			_exit(101);
		/* Its owner (the new user namespace's root) administers it. */
		if (lo_set_up() != 0 || !(lo_flags() & IFF_UP))
			bad |= 2;
		/* Privileged ports are the namespace owner's. */
		l = listener(&port);
		if (l < 0)
			bad |= 4;
		if (tcp_connect(-1, 80) != 0)
			bad |= 8;
		/* Not CAP_SYS_ADMIN over the initial namespace's owner. */
		if (setns(init_fd, CLONE_NEWNET) != -1 || errno != EPERM)
			bad |= 16;
		_exit(bad);
	}
	CHECK(pid > 0, "fork: %s", strerror(errno));
	if (pid > 0)
		waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "unprivileged child status %#x (1: NEWNET alone allowed, 2: lo up, 4: bind 80, "
	      "8: connect, 16: setns to the initial)",
	      status);
}

int main(void)
{
	char upath[108];
	struct sockaddr_un abs, pth;
	socklen_t abslen, pthlen;
	uint16_t port = 0, port_new;
	int init_fd, new_fd, l0, l1, a0, u0, p0, u1, c1, c2;
	ino_t ino0, ino1;

	if (geteuid() != 0) {
		printf("skip: needs root (CAP_SYS_ADMIN)\n");
		return finish();
	}
	init_fd = CHECK_OK(open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
	ino0 = ns_ino();
	CHECK(lo_flags() & IFF_UP, "the initial lo is up");

	/* In the initial namespace: a listener, an abstract and a path unix listener. */
	l0 = listener(&port);
	CHECK(l0 >= 0, "initial listener: %s", strerror(errno));
	snprintf(upath, sizeof(upath), "husk-netns-%d", getpid());
	abslen = abstract_name(&abs, upath);
	snprintf(upath, sizeof(upath), "/tmp/husk-netns-%d.sock", getpid());
	unlink(upath);
	memset(&pth, 0, sizeof(pth));
	pth.sun_family = AF_UNIX;
	strcpy(pth.sun_path, upath);
	pthlen = sizeof(pth);
	u0 = unix_listener(&abs, abslen);
	CHECK(u0 >= 0, "abstract listener: %s", strerror(-u0));
	p0 = unix_listener(&pth, pthlen);
	CHECK(p0 >= 0, "path listener: %s", strerror(-p0));

	check_clone();
	check_unprivileged(init_fd);

	/* A new namespace. */
	CHECK_RET(unshare(CLONE_NEWNET), 0);
	ino1 = ns_ino();
	CHECK(ino1 && ino1 != ino0, "new namespace inode %lu (initial %lu)", (unsigned long)ino1,
	      (unsigned long)ino0);
	new_fd = CHECK_OK(open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
	check_fresh(port);

	/* lo up: a loopback of its own. */
	CHECK_RET(lo_set_up(), 0);
	CHECK(lo_flags() & IFF_UP, "lo up");
	CHECK_RET(addr_count(), 2);
	CHECK_RET(tcp_connect(-1, port), -ECONNREFUSED); /* the initial listener is not here */
	CHECK_RET(connect_to(SOCK_STREAM, "192.0.2.1", AF_INET, 80), -ENETUNREACH);
	port_new = port;
	l1 = listener(&port_new); /* the same port, bound again here */
	CHECK(l1 >= 0 && port_new == port, "same port in the new namespace: %s", strerror(errno));
	CHECK_RET(tcp_lines("/proc/self/net/tcp", 0, -1), 1);
	CHECK_RET(tcp_lines("/proc/self/net/tcp", port, 0x0A), 1);
	CHECK_RET(tcp_lines("/proc/net/tcp", port, 0x0A), 1);
	CHECK_RET(tcp_connect(-1, port), 0);
	a0 = accept4(l1, NULL, NULL, SOCK_CLOEXEC);
	CHECK(a0 >= 0, "accept in the new namespace: %s", strerror(errno));
	if (a0 >= 0)
		close(a0);
	CHECK_ERR(accept4(l0, NULL, NULL, SOCK_CLOEXEC), EAGAIN);

	/* Abstract names are per namespace; path names are the filesystem's. */
	CHECK_RET(unix_connect(&abs, abslen), -ECONNREFUSED);
	u1 = unix_listener(&abs, abslen);
	CHECK(u1 >= 0, "the same abstract name in the new namespace: %s", strerror(-u1));
	CHECK_RET(unix_connect(&abs, abslen), 0);
	CHECK_RET(unix_connect(&pth, pthlen), 0);
	a0 = accept4(p0, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	CHECK(a0 >= 0, "path connection from the new namespace: %s", strerror(errno));
	if (a0 >= 0)
		close(a0);

	/* Sockets made here stay here after setns. */
	c1 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK_RET(setns(init_fd, CLONE_NEWNET), 0);
	CHECK(ns_ino() == ino0, "back in the initial namespace");
	CHECK(lo_flags() & IFF_UP, "the initial lo still up");
	CHECK_RET(tcp_connect(c1, port), 0);
	a0 = accept4(l1, NULL, NULL, SOCK_CLOEXEC);
	CHECK(a0 >= 0, "the kept socket reached the new namespace's listener: %s", strerror(errno));
	if (a0 >= 0)
		close(a0);
	CHECK_ERR(accept4(l0, NULL, NULL, SOCK_CLOEXEC), EAGAIN);
	/* And a socket made now is the initial namespace's. */
	c2 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK_RET(tcp_connect(c2, port), 0);
	a0 = accept4(l0, NULL, NULL, SOCK_CLOEXEC);
	CHECK(a0 >= 0, "the initial listener: %s", strerror(errno));
	if (a0 >= 0)
		close(a0);
	CHECK_RET(tcp_lines("/proc/self/net/tcp", port, 0x0A), 1);
	CHECK_RET(unix_connect(&abs, abslen), 0);
	a0 = accept4(u0, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	CHECK(a0 >= 0, "the initial abstract listener: %s", strerror(errno));
	if (a0 >= 0)
		close(a0);

	/* Forth again with the fd kept: lo is still up there, the listener still there. */
	CHECK_RET(setns(new_fd, CLONE_NEWNET), 0);
	CHECK(ns_ino() == ino1, "setns to the kept fd");
	CHECK(lo_flags() & IFF_UP, "lo of the new namespace still up");
	CHECK_RET(tcp_lines("/proc/self/net/tcp", port, 0x0A), 1);
	CHECK_RET(setns(new_fd, 0), 0);
	CHECK_ERR(setns(new_fd, CLONE_NEWUTS), EINVAL);
	CHECK_RET(setns(init_fd, CLONE_NEWNET), 0);
	CHECK(ns_ino() == ino0, "back again");

	close(c1);
	close(c2);
	close(l1);
	close(u1);
	close(l0);
	close(u0);
	close(p0);
	close(new_fd);
	close(init_fd);
	unlink(upath);
	return finish();
}
