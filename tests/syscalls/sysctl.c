/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /proc/sys: the namespaced sysctls a container may set, their defaults in a fresh namespace,
 * their modes, Linux's parsing (base 0, blanks, normalised read back, EINVAL, short writes),
 * who may write (euid 0; CAP_NET_ADMIN for net.ipv4.ip_forward: EPERM), and the values that
 * drive behaviour: net.core.somaxconn caps a listen backlog, ip_local_port_range is where
 * ephemeral ports come from, ip_unprivileged_port_start is where binding stops needing
 * CAP_NET_BIND_SERVICE, kernel.hostname is uname's nodename.
 *
 * Natively the program first moves into new network, IPC and UTS namespaces (as root), so its
 * writes never reach the host's values; in husk the values are the sandbox's own. Elsewhere
 * (no unshare, not in husk) it only reads.
 */
#include <fcntl.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "check.h"

#define SYS "/proc/sys/"

/* Reads a sysctl file into buf (NUL-terminated); returns its length or -1. */
static ssize_t rd(const char *name, char *buf, size_t size)
{
	char path[256];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), SYS "%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* One write(2) of s to a sysctl file: its result, or -1 with errno (open's or write's). */
static ssize_t wr(const char *name, const char *s)
{
	char path[256];
	ssize_t n;
	int fd, e;

	snprintf(path, sizeof(path), SYS "%s", name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	e = errno;
	close(fd);
	errno = e;
	return n;
}

/* Does the file read exactly want? */
static bool is(const char *name, const char *want)
{
	char buf[256];

	return rd(name, buf, sizeof(buf)) >= 0 && !strcmp(buf, want);
}

struct caps {
	uint64_t eff, perm, inh;
};

static int get_caps(struct caps *c)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d) < 0)
		return -1;
	c->eff = (uint64_t)d[1].effective << 32 | d[0].effective;
	c->perm = (uint64_t)d[1].permitted << 32 | d[0].permitted;
	c->inh = (uint64_t)d[1].inheritable << 32 | d[0].inheritable;
	return 0;
}

static long set_caps(const struct caps *c)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = {
		{ (uint32_t)c->eff, (uint32_t)c->perm, (uint32_t)c->inh },
		{ (uint32_t)(c->eff >> 32), (uint32_t)(c->perm >> 32), (uint32_t)(c->inh >> 32) },
	};

	return syscall(SYS_capset, &h, d);
}

/* Drops cap from the effective set (kept in the permitted set, to come back). */
static int drop_effective(int cap, struct caps *saved)
{
	struct caps c;

	if (get_caps(saved) < 0)
		return -1;
	c = *saved;
	c.eff &= ~(1ULL << cap);
	return (int)set_caps(&c);
}

/* Where the values may be written: a private namespace, or the sandbox. */
static bool private_values(void)
{
	char buf[512];
	int fd;
	ssize_t n;

	if (unshare(CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) == 0)
		return true;
	fd = open("/proc/version", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return strstr(buf, "husk") != NULL;
}

static void test_defaults(void)
{
	static const struct {
		const char *name, *value;
	} defaults[] = {
		{ "net/core/somaxconn", "4096\n" },
		/* net/ipv4/ip_forward: a new network namespace copies the host's value. */
		{ "net/ipv4/ip_local_port_range", "32768\t60999\n" },
		{ "net/ipv4/ip_unprivileged_port_start", "1024\n" },
		{ "net/ipv4/ping_group_range", "1\t0\n" },
		{ "net/ipv4/tcp_syncookies", "1\n" },
		{ "net/ipv4/tcp_keepalive_time", "7200\n" },
		{ "net/ipv4/tcp_keepalive_intvl", "75\n" },
		{ "net/ipv4/tcp_keepalive_probes", "9\n" },
		{ "net/ipv4/tcp_fin_timeout", "60\n" },
		{ "net/ipv6/conf/all/disable_ipv6", "0\n" },
		{ "net/ipv6/conf/default/disable_ipv6", "0\n" },
		{ "net/ipv6/conf/lo/disable_ipv6", "0\n" },
		{ "kernel/shmmax", "18446744073692774399\n" },
		{ "kernel/shmall", "18446744073692774399\n" },
		{ "kernel/shmmni", "4096\n" },
		{ "kernel/shm_rmid_forced", "0\n" },
		{ "kernel/msgmax", "8192\n" },
		{ "kernel/msgmnb", "16384\n" },
		{ "kernel/msgmni", "32000\n" },
		{ "kernel/sem", "32000\t1024000000\t500\t32000\n" },
		{ "fs/mqueue/msg_max", "10\n" },
		{ "fs/mqueue/msgsize_max", "8192\n" },
		{ "fs/mqueue/queues_max", "256\n" },
		{ "kernel/cap_last_cap", "40\n" },
	};
	char buf[256];

	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
		ssize_t n = rd(defaults[i].name, buf, sizeof(buf));

		CHECK(n >= 0 && !strcmp(buf, defaults[i].value), "%s: %s", defaults[i].name,
		      n < 0 ? strerror(errno) : buf);
	}
}

static void test_modes(void)
{
	static const struct {
		const char *name;
		mode_t mode;
	} modes[] = {
		{ "net/core/somaxconn", S_IFREG | 0644 },
		{ "net/ipv4/ip_local_port_range", S_IFREG | 0644 },
		{ "net/ipv6/conf/lo/disable_ipv6", S_IFREG | 0644 },
		{ "kernel/shmmax", S_IFREG | 0644 },
		{ "kernel/hostname", S_IFREG | 0644 },
		{ "fs/mqueue/queues_max", S_IFREG | 0644 },
		{ "kernel/cap_last_cap", S_IFREG | 0444 },
		{ "kernel/ngroups_max", S_IFREG | 0444 },
		{ "kernel/osrelease", S_IFREG | 0444 },
		{ "net/ipv6/conf/all", S_IFDIR | 0555 },
		{ "fs/mqueue", S_IFDIR | 0555 },
	};
	char path[256];

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct stat st;
		int r;

		snprintf(path, sizeof(path), SYS "%s", modes[i].name);
		r = stat(path, &st);
		CHECK(r == 0 && st.st_mode == modes[i].mode, "%s: %o", path,
		      r == 0 ? (unsigned int)st.st_mode : 0);
	}
}

static void test_parsing(void)
{
	CHECK_RET(wr("net/ipv4/ip_local_port_range", "  1024    2000"), 14);
	CHECK(is("net/ipv4/ip_local_port_range", "1024\t2000\n"), "port range not normalised");
	CHECK_RET(wr("net/core/somaxconn", "0x10\n"), 5);
	CHECK(is("net/core/somaxconn", "16\n"), "0x10 is 16");
	CHECK_RET(wr("net/core/somaxconn", "010"), 3);
	CHECK(is("net/core/somaxconn", "8\n"), "010 is 8");
	CHECK_ERR(wr("net/core/somaxconn", "12abc"), EINVAL);
	CHECK_ERR(wr("net/core/somaxconn", "-1"), EINVAL);
	CHECK_ERR(wr("net/core/somaxconn", "+5"), EINVAL);
	CHECK_ERR(wr("net/core/somaxconn", "\n"), EINVAL);
	CHECK(is("net/core/somaxconn", "8\n"), "a refused write changed the value");
	/* Values past the vector are not consumed: a short write. */
	CHECK_RET(wr("net/core/somaxconn", "5 6"), 2);
	CHECK(is("net/core/somaxconn", "5\n"), "5 6 is 5");
	CHECK_RET(wr("kernel/sem", "-1 2 3"), 6);
	CHECK(is("kernel/sem", "-1\t2\t3\t32000\n"), "a partial vector keeps the rest");
	CHECK_ERR(wr("kernel/sem", "1 2 3 32769"), ERANGE);
	CHECK(is("kernel/sem", "1\t2\t3\t32000\n"), "SEMMNI out of range: the rest is kept");
	CHECK_ERR(wr("kernel/sem", "1 2 x 4"), EINVAL);
	CHECK_ERR(wr("kernel/shmmni", "32769"), EINVAL);
	CHECK_ERR(wr("kernel/shm_rmid_forced", "2"), EINVAL);
	CHECK_RET(wr("kernel/shmmax", "123456"), 6);
	CHECK(is("kernel/shmmax", "123456\n"), "shmmax");
	CHECK_ERR(wr("kernel/shmmax", "-1"), EINVAL);
	CHECK_ERR(wr("fs/mqueue/msg_max", "0"), EINVAL);
	CHECK_ERR(wr("net/ipv4/ip_local_port_range", "2000 1000"), EINVAL);
	CHECK_ERR(wr("net/ipv4/ip_local_port_range", "500 1000"), EINVAL);
	CHECK_ERR(wr("net/ipv4/tcp_syncookies", "256"), EINVAL);
	CHECK_RET(wr("net/ipv4/ping_group_range", "10 5"), 4);
	CHECK(is("net/ipv4/ping_group_range", "1\t0\n"), "an empty gid range is 1 0");
	CHECK_RET(wr("net/core/somaxconn", "4096"), 4);
}

static void test_hostname(void)
{
	struct utsname u;

	CHECK_RET(wr("kernel/hostname", "sysctl-test\n"), 12);
	CHECK(uname(&u) == 0 && !strcmp(u.nodename, "sysctl-test"), "nodename %s", u.nodename);
	CHECK(is("kernel/hostname", "sysctl-test\n"), "hostname read back");
}

/* The port a socket of type got bound to by bind(INADDR_ANY:0), or -1. */
static int ephemeral_port(int type)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0), port = -1;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static void test_port_range(void)
{
	CHECK_RET(wr("net/ipv4/ip_local_port_range", "40000 40009"), 11);
	for (int i = 0; i < 4; i++) {
		int tcp = ephemeral_port(SOCK_STREAM), udp = ephemeral_port(SOCK_DGRAM);

		CHECK(tcp >= 40000 && tcp <= 40009, "tcp ephemeral port %d", tcp);
		CHECK(udp >= 40000 && udp <= 40009, "udp ephemeral port %d", udp);
	}
	CHECK_RET(wr("net/ipv4/ip_local_port_range", "32768 60999"), 11);
}

/* bind(INADDR_ANY:port) of a new TCP socket: 0 or -1 with errno. */
static int bind_port(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), r, e;

	if (fd < 0)
		return -1;
	r = bind(fd, (struct sockaddr *)&a, sizeof(a));
	e = errno;
	close(fd);
	errno = e;
	return r;
}

static void test_privileged_ports(void)
{
	struct caps saved;

	if (CHECK_OK(drop_effective(CAP_NET_BIND_SERVICE, &saved)) < 0)
		return;
	CHECK_ERR(bind_port(80), EACCES);
	CHECK_RET(bind_port(1024), 0);
	/* root may write net.* sysctls without CAP_NET_ADMIN (the file's owner bits) */
	CHECK_RET(wr("net/ipv4/ip_unprivileged_port_start", "80"), 2);
	CHECK_RET(bind_port(80), 0);
	CHECK_ERR(bind_port(79), EACCES);
	CHECK_RET(wr("net/ipv4/ip_unprivileged_port_start", "1024"), 4);
	CHECK_RET(set_caps(&saved), 0);
	CHECK_RET(bind_port(80), 0);
}

static void test_permissions(void)
{
	struct caps saved;
	pid_t pid;
	int status;

	/* ip_forward's handler wants CAP_NET_ADMIN even from root. */
	if (CHECK_OK(drop_effective(CAP_NET_ADMIN, &saved)) < 0)
		return;
	CHECK_ERR(wr("net/ipv4/ip_forward", "1"), EPERM);
	CHECK_RET(wr("net/core/somaxconn", "4096"), 4);
	CHECK_RET(set_caps(&saved), 0);
	CHECK_RET(wr("net/ipv4/ip_forward", "1"), 1);
	CHECK(is("net/ipv4/ip_forward", "1\n"), "ip_forward");
	CHECK_RET(wr("net/ipv4/ip_forward", "0"), 1);

	/* Anyone else: the files are root's, 0644. */
	pid = fork();
	if (pid == 0) {
		int bad = 0;

		if (setresuid(1000, 1000, 1000) < 0)
			_exit(2);
		errno = 0;
		if (wr("net/core/somaxconn", "7") != -1 || errno != EACCES)
			bad |= 4;
		if (wr("kernel/shmmax", "7") != -1 || errno != EACCES)
			bad |= 8;
		if (!is("net/core/somaxconn", "4096\n"))
			bad |= 16;
		_exit(bad);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		      WEXITSTATUS(status) == 0,
	      "uid 1000 child: status %#x", status);
}

/* A non-blocking connect to the abstract unix name: 0, or -1 with errno. */
static int try_connect(const struct sockaddr_un *a, socklen_t len, int *out)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	*out = fd;
	return fd < 0 ? -1 : connect(fd, (const struct sockaddr *)a, len);
}

static void test_somaxconn_caps_backlog(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	socklen_t len = offsetof(struct sockaddr_un, sun_path) + 1 +
			(socklen_t)snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1,
					    "husk-sysctl-%d", (int)getpid());
	int l, c[8], n = 0;

	CHECK_RET(wr("net/core/somaxconn", "2"), 1);
	l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK_RET(bind(l, (struct sockaddr *)&a, len), 0);
	CHECK_RET(listen(l, 100), 0);
	/* Linux queues backlog + 1 connections; the backlog is min(100, somaxconn) = 2. */
	for (int i = 0; i < 3; i++, n++)
		CHECK_RET(try_connect(&a, len, &c[n]), 0);
	CHECK_ERR(try_connect(&a, len, &c[n]), EAGAIN);
	n++;
	for (int i = 0; i < n; i++)
		if (c[i] >= 0)
			close(c[i]);
	close(l);
	CHECK_RET(wr("net/core/somaxconn", "4096"), 4);
}

int main(void)
{
	bool writable = geteuid() == 0 && private_values();

	test_modes();
	if (!writable) {
		printf("skip: the values can be written only as root in a private namespace or in "
		       "husk\n");
		return finish();
	}
	test_defaults();
	test_parsing();
	test_hostname();
	test_port_range();
	test_privileged_ports();
	test_permissions();
	test_somaxconn_caps_backlog();
	return finish();
}
