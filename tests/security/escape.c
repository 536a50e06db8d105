/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Escape probes (issue 18): run inside husk as the sandbox's pid 1 over a small root filesystem,
 * each tries to reach something of the host that the sandbox must never reach, and passes only
 * when it fails to. tests/security/escape.sh prepares the host side and gives the probe:
 *
 *   escape MODE TOKEN SECRET_DIR HOST_PID
 *
 * MODE is "files" (a volume of the host's at /vol; SECRET_DIR, outside the root filesystem and
 * the volume, holds "secret" whose content is TOKEN), "net-none" or "net-host" (the network mode
 * the sandbox was given) or "net-dns" (--network=host, with a nameserver in /etc/resolv.conf that
 * answers every name with the metadata address). HOST_PID is a host process that must live on. Every probe prints
 * "ok - WHAT" or "not ok - WHAT: what it saw"; the last line is "N passed, M failed".
 *
 * Why each must fail is said beside it: the guest's paths are the sentry's (DESIGN.md section
 * 2), its processes are the sentry's tasks, its system calls never reach the host kernel.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

static const char *token, *secret_dir;
static char secret_path[4096];

/* Whether the file at path (from dirfd) holds the token: the one outcome that is an escape. */
static int leaks_at(int dirfd, const char *path, int *err)
{
	char buf[256];
	ssize_t n;
	int fd = openat(dirfd, path, O_RDONLY);

	*err = fd < 0 ? errno : 0;
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strstr(buf, token) != NULL;
}

static void no_leak(const char *what, int dirfd, const char *path)
{
	int err;
	int leak = leaks_at(dirfd, path, &err);

	result(!leak, "%s (%s): %s", what, path, leak ? "READ THE HOST'S SECRET" : strerror(err));
}

/* --- files --- */

/* The host path of the secret, as the guest would name it: the guest's root is not the host's,
 * so it names nothing (or something of the sandbox's own). */
static void files_direct(void)
{
	char p[8192];

	no_leak("the host's path of the secret", AT_FDCWD, secret_path);
	snprintf(p, sizeof(p), "/proc/1/root%s", secret_path);
	no_leak("through /proc/1/root", AT_FDCWD, p);
	snprintf(p, sizeof(p), "/proc/self/root%s", secret_path);
	no_leak("through /proc/self/root", AT_FDCWD, p);
	snprintf(p, sizeof(p), "/proc/self/cwd/");
	for (int i = 0; i < 40; i++)
		strcat(p, "../");
	strcat(p, secret_path + 1);
	no_leak("through /proc/self/cwd and 40 ..", AT_FDCWD, p);
	/* .. at the root is the root: the walk stops at the sandbox's root, never above it. */
	snprintf(p, sizeof(p), "/vol/");
	for (int i = 0; i < 40; i++)
		strcat(p, "../");
	strcat(p, secret_path + 1);
	no_leak("from the volume up 40 ..", AT_FDCWD, p);
}

/* chdir("..") past the root, and the classic chroot escape (a new chroot below the cwd, then
 * .. walks): Linux lets a chroot'ed root leave its chroot this way, but the most it reaches is
 * the sandbox's own root. */
static void files_chroot(void)
{
	char rel[4200];
	int outside;

	snprintf(rel, sizeof(rel), ".%s", secret_path);
	if (chdir("/") == 0) {
		for (int i = 0; i < 64; i++)
			(void)!chdir("..");
		no_leak("64 chdir .. from /", AT_FDCWD, rel);
	}
	(void)mkdir("/tmp", 0755);
	(void)mkdir("/tmp/jail", 0755);
	outside = open("/", O_RDONLY | O_DIRECTORY);
	if (chroot("/tmp/jail") != 0) {
		result(0, "chroot into /tmp/jail: %s", strerror(errno));
		return;
	}
	if (fchdir(outside) == 0) {
		for (int i = 0; i < 64; i++)
			(void)!chdir("..");
		no_leak("chroot escape through a directory fd kept outside", AT_FDCWD, rel);
		if (chroot(".") == 0)
			no_leak("chroot(.) after the escape", AT_FDCWD, secret_path);
	}
	close(outside);
	(void)!chdir("/");
}

/* Symlinks the host planted in the volume (absolute and relative, to the secret and its
 * directory) and ones the guest makes: every symlink is resolved by the sentry in the guest's
 * view, never by the host. */
static void files_symlinks(void)
{
	char target[4096];

	no_leak("a host-planted absolute symlink to the secret", AT_FDCWD, "/vol/abs");
	no_leak("a host-planted relative symlink to the secret", AT_FDCWD, "/vol/rel");
	no_leak("through a host-planted symlink to the secret's directory", AT_FDCWD,
		"/vol/dirlink/secret");
	(void)unlink("/vol/mine");
	if (symlink(secret_path, "/vol/mine") == 0)
		no_leak("a guest-made absolute symlink to the secret", AT_FDCWD, "/vol/mine");
	(void)unlink("/vol/mine");
	(void)unlink("/vol/mine2");
	snprintf(target, sizeof(target), "../%s/secret", strrchr(secret_dir, '/') + 1);
	if (symlink(target, "/vol/mine2") == 0)
		no_leak("a guest-made relative symlink beside the volume", AT_FDCWD, "/vol/mine2");
	(void)unlink("/vol/mine2");
	/* O_PATH of the symlink itself, then through /proc/self/fd: still the guest's view. */
	int fd = open("/vol/dirlink", O_PATH | O_NOFOLLOW);
	if (fd >= 0) {
		char p[64];

		snprintf(p, sizeof(p), "/proc/self/fd/%d/secret", fd);
		no_leak("an O_PATH symlink fd through /proc/self/fd", AT_FDCWD, p);
		close(fd);
	}
}

/*
 * The swap race: a thread exchanges a real directory of the volume with a symlink to the host
 * directory of the secret (renameat2 RENAME_EXCHANGE, as fast as it can), while the main thread
 * opens DIR/secret through it. A server that walked host paths component by component and
 * followed what it found there would, in some window, follow the symlink on the host.
 */
static atomic_int race_stop, race_swaps;

static void *swapper(void *arg)
{
	(void)arg;
	while (!atomic_load(&race_stop))
		if (syscall(SYS_renameat2, AT_FDCWD, "/vol/race/d", AT_FDCWD, "/vol/race/s",
			    2 /* RENAME_EXCHANGE */) == 0)
			atomic_fetch_add(&race_swaps, 1);
	return NULL;
}

static void files_race(void)
{
	pthread_t th;
	int leaks = 0, opened = 0, tries = 20000;
	int err;

	(void)mkdir("/vol/race", 0755);
	(void)mkdir("/vol/race/d", 0755);
	(void)unlink("/vol/race/s");
	if (symlink(secret_dir, "/vol/race/s") != 0) {
		result(0, "the race's symlink: %s", strerror(errno));
		return;
	}
	atomic_store(&race_stop, 0);
	pthread_create(&th, NULL, swapper, NULL);
	for (int i = 0; i < tries; i++) {
		if (leaks_at(AT_FDCWD, "/vol/race/d/secret", &err))
			leaks++;
		else if (err == 0)
			opened++;
	}
	atomic_store(&race_stop, 1);
	pthread_join(th, NULL);
	/* The race must have run: swaps made, and opens that met the directory (ENOENT) and the
	 * symlink alike. */
	result(leaks == 0 && atomic_load(&race_swaps) > 0,
	       "%d opens through a directory swapped %d times with a symlink to the host: %d read "
	       "the secret",
	       tries, atomic_load(&race_swaps), leaks);
}

/* File handles: the volume's handle and its neighbours' (the secret was made right before the
 * volume's files, so its inode number is close): open_by_handle_at must never open a host file
 * the guest cannot name. */
static void files_handles(void)
{
	struct {
		unsigned int bytes;
		int type;
		unsigned char f[128];
	} h;
	int mount_id, fd, leaks = 0, opens = 0;

	h.bytes = sizeof(h.f);
	if (syscall(SYS_name_to_handle_at, AT_FDCWD, "/vol/plain", &h, &mount_id, 0) != 0) {
		result(1, "name_to_handle_at on the volume: %s (no handles to forge)",
		       strerror(errno));
		return;
	}
	int mfd = open("/vol", O_RDONLY | O_DIRECTORY);
	for (int d = -64; d <= 64; d++) {
		unsigned char saved[8];

		memcpy(saved, h.f, 8);
		/* The first 4 or 8 bytes are the inode number in the common handle formats. */
		uint32_t ino;
		memcpy(&ino, h.f, 4);
		ino += (uint32_t)d;
		memcpy(h.f, &ino, 4);
		fd = (int)syscall(SYS_open_by_handle_at, mfd, &h, O_RDONLY);
		memcpy(h.f, saved, 8);
		if (fd < 0)
			continue;
		opens++;
		char buf[256];
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		if (n > 0) {
			buf[n] = '\0';
			if (strstr(buf, token))
				leaks++;
		}
		close(fd);
	}
	close(mfd);
	result(leaks == 0, "open_by_handle_at over 129 forged handles: %d opened, %d the secret",
	       opens, leaks);
}

/* --- processes --- */

/* The host's processes are not the guest's: no pid of the guest names them, and /proc lists
 * only the guest's. */
static void procs(pid_t host_pid)
{
	char p[300], buf[64];
	struct iovec local = { buf, sizeof(buf) }, remote = { (void *)0x400000, sizeof(buf) };
	DIR *d;
	struct dirent *e;
	int foreign = 0;

	long r;

	r = kill(host_pid, 0) == 0 ? 0 : -errno;
	result(r != 0, "kill(host pid %d, 0): %s", (int)host_pid,
	       r ? strerror((int)-r) : "ALLOWED");
	r = ptrace(PTRACE_ATTACH, host_pid, 0, 0) == 0 ? 0 : -errno;
	result(r != 0, "ptrace attach to the host pid: %s", r ? strerror((int)-r) : "ALLOWED");
	r = syscall(SYS_process_vm_readv, host_pid, &local, 1, &remote, 1, 0) >= 0 ? 0 : -errno;
	result(r != 0, "process_vm_readv of the host pid: %s", r ? strerror((int)-r) : "READ");
	r = syscall(SYS_pidfd_open, host_pid, 0);
	r = r >= 0 ? 0 : -errno;
	result(r != 0, "pidfd_open of the host pid: %s", r ? strerror((int)-r) : "OPENED");
	snprintf(p, sizeof(p), "/proc/%d/environ", (int)host_pid);
	no_leak("/proc of the host pid", AT_FDCWD, p);
	/* Every process /proc lists is a guest process (husk's own processes have these names). */
	d = opendir("/proc");
	while (d && (e = readdir(d))) {
		char comm[64] = "";
		int fd;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(p, sizeof(p), "/proc/%s/comm", e->d_name);
		fd = open(p, O_RDONLY);
		if (fd >= 0) {
			ssize_t n = read(fd, comm, sizeof(comm) - 1);
			comm[n > 0 ? n : 0] = '\0';
			close(fd);
		}
		if (strstr(comm, "husk-") || strstr(comm, "sleep"))
			foreign++;
	}
	if (d)
		closedir(d);
	result(foreign == 0, "/proc lists no husk process and not the host's sleep (%d seen)",
	       foreign);
	/* kill(-1) from the sandbox's pid 1 reaches every guest process but none of the host's:
	 * escape.sh checks that its host process lives on. */
	r = kill(-1, SIGKILL) == 0 ? 0 : -errno;
	result(1, "kill(-1, SIGKILL) from the sandbox's pid 1: %s", r ? strerror((int)-r) : "sent");
}

/* --- host system calls from guest code --- */

/* In a child: run fn and report its value (or the signal that ended it) through a pipe. */
static int in_child(long (*fn)(void), long *value, int *sig)
{
	int p[2], st;
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		long v = fn();

		(void)!write(p[1], &v, sizeof(v));
		_exit(0);
	}
	close(p[1]);
	*sig = 0;
	if (read(p[0], value, sizeof(*value)) != sizeof(*value))
		*value = LONG_MIN;
	close(p[0]);
	waitpid(pid, &st, 0);
	if (WIFSIGNALED(st))
		*sig = WTERMSIG(st);
	return 0;
}

static long int80_getpid(void)
{
	long ret;

	/* i386 getpid is 20: the host would answer with the stub's host pid. */
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory");
	return ret;
}

static long sysenter_getpid(void)
{
	long ret;

	__asm__ volatile("mov %%rsp, %%rbp\n\tsysenter"
			 : "=a"(ret)
			 : "a"(20L)
			 : "rbp", "rcx", "r11", "memory");
	return ret;
}

static long jit_getpid(void)
{
	/* mov eax, 39 (getpid); syscall; ret: from a page the guest wrote and made executable. */
	static const unsigned char code[] = { 0xb8, 39, 0, 0, 0, 0x0f, 0x05, 0xc3 };
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (page == MAP_FAILED)
		return LONG_MIN;
	memcpy(page, code, sizeof(code));
	if (mprotect(page, 4096, PROT_READ | PROT_EXEC))
		return LONG_MIN;
	return ((long (*)(void))page)();
}

static long vsyscall_time(void)
{
	/* The vsyscall page's time(): emulated by Linux, through seccomp; husk must keep it. */
	return ((long (*)(long *))0xffffffffff600400UL)(NULL);
}

static void host_calls(void)
{
	static const struct {
		const char *name;
		long (*fn)(void);
	} probes[] = {
		{ "int $0x80 getpid", int80_getpid },
		{ "sysenter getpid", sysenter_getpid },
		{ "syscall from a JIT page: getpid", jit_getpid },
	};

	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		long v;
		int sig;

		if (in_child(probes[i].fn, &v, &sig)) {
			result(0, "%s: fork failed", probes[i].name);
			continue;
		}
		/* The child's pid in the guest is small; the host's pid of its stub is not the guest's.
		 * An error, a signal, or the guest's own pid are all answers of the sentry. */
		int ok = sig || v < 0 || v == LONG_MIN || v < 1000;
		if (sig)
			result(ok, "%s: the child died of signal %d", probes[i].name, sig);
		else
			result(ok, "%s: returned %ld (the guest's answer, not a host pid)",
			       probes[i].name, v);
	}
	long v;
	int sig;
	if (in_child(vsyscall_time, &v, &sig) == 0) {
		long now = (long)time(NULL);
		int ok = sig || (v >= now - 5 && v <= now + 5);

		result(ok, "the vsyscall page's time(): %s %ld", sig ? "signal" : "returned",
		       sig ? (long)sig : v);
	}
}

/* --- network --- */

static int try_connect(int family, const char *addr, int port, int type, int fastopen)
{
	union {
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} sa;
	socklen_t len;
	int fd = socket(family, type | SOCK_NONBLOCK, 0), r, e;

	memset(&sa, 0, sizeof(sa));
	if (family == AF_INET) {
		sa.in.sin_family = AF_INET;
		sa.in.sin_port = htons((uint16_t)port);
		if (inet_aton(addr, &sa.in.sin_addr) == 0)
			return -EINVAL;
		len = sizeof(sa.in);
	} else {
		sa.in6.sin6_family = AF_INET6;
		sa.in6.sin6_port = htons((uint16_t)port);
		inet_pton(AF_INET6, addr, &sa.in6.sin6_addr);
		len = sizeof(sa.in6);
	}
	if (fd < 0)
		return -errno;
	if (type == SOCK_DGRAM)
		r = (int)sendto(fd, "x", 1, 0, (struct sockaddr *)&sa, len);
	else if (fastopen)
		r = (int)sendto(fd, "GET / HTTP/1.0\r\n\r\n", 18, MSG_FASTOPEN,
				(struct sockaddr *)&sa, len);
	else
		r = connect(fd, (struct sockaddr *)&sa, len);
	e = errno;
	close(fd);
	return r < 0 ? -e : 0;
}

static void net(int host_mode)
{
	static const struct {
		int family;
		const char *addr;
		const char *form;
	} metadata[] = {
		{ AF_INET, "169.254.169.254", "dotted" },
		{ AF_INET, "2852039166", "decimal" },
		{ AF_INET, "0251.0376.0251.0376", "octal" },
		{ AF_INET, "0xa9.0xfe.0xa9.0xfe", "hex" },
		{ AF_INET, "169.254.43518", "a.b.c with a 16-bit c" },
		{ AF_INET6, "::ffff:169.254.169.254", "IPv4-mapped IPv6" },
		{ AF_INET6, "64:ff9b::a9fe:a9fe", "NAT64" },
		{ AF_INET6, "fd00:ec2::254", "EC2's IPv6 metadata" },
		{ AF_INET, "10.0.0.1", "a private range" },
		{ AF_INET, "192.168.1.1", "a private range" },
	};

	for (size_t i = 0; i < sizeof(metadata) / sizeof(metadata[0]); i++) {
		static const int types[][2] = { { SOCK_STREAM, 0 },
						{ SOCK_DGRAM, 0 },
						{ SOCK_STREAM, 1 } };
		static const char *const tn[] = { "TCP connect", "UDP sendto", "TCP Fast Open" };

		for (int k = 0; k < 3; k++) {
			int r = try_connect(metadata[i].family, metadata[i].addr, 80, types[k][0],
					    types[k][1]);
			/* Refused before any packet: EPERM, the egress policy's answer, under
			 * --network=host (escape.sh runs that sandbox in a host network namespace of
			 * its own with no route: a packet that got out would give ENETUNREACH there);
			 * ENETUNREACH (no network at all) or EPERM under --network=none. */
			int ok = host_mode ? r == -EPERM : (r == -ENETUNREACH || r == -EPERM);
			result(ok, "%s to %s (%s): %s", tn[k], metadata[i].addr, metadata[i].form,
			       r ? strerror(-r) : "SENT");
		}
	}
}

/*
 * A DNS answer that points at the metadata address: the name is resolved by a query of the
 * guest's own to the nameserver of its /etc/resolv.conf (escape.sh runs one on the host that
 * answers every name with 169.254.169.254), and the address it gives is connected to. The egress
 * policy checks the address at connect and sendto, whatever name led there: EPERM.
 */
static int dns_resolve(const char *name, struct in_addr *out, char *why, size_t why_len)
{
	unsigned char q[512], a[512];
	char line[256], ns[64] = "";
	size_t n = 12;
	FILE *f = fopen("/etc/resolv.conf", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "nameserver %63s", ns) == 1)
			break;
	if (f)
		fclose(f);
	if (!ns[0]) {
		snprintf(why, why_len, "no nameserver in /etc/resolv.conf");
		return -1;
	}
	memset(q, 0, 12);
	q[0] = 0x4b, q[1] = 0x1d; /* id */
	q[2] = 0x01; /* recursion desired */
	q[5] = 1; /* one question */
	for (const char *p = name; *p;) {
		size_t l = strcspn(p, ".");

		q[n++] = (unsigned char)l;
		memcpy(q + n, p, l);
		n += l;
		p += l + (p[l] == '.');
	}
	q[n++] = 0;
	q[n++] = 0, q[n++] = 1; /* A */
	q[n++] = 0, q[n++] = 1; /* IN */

	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(53) };
	struct timeval tv = { 120, 0 }; /* only a hang */
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	ssize_t r;

	inet_aton(ns, &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (sendto(fd, q, n, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		snprintf(why, why_len, "the query to %s: %s", ns, strerror(errno));
		close(fd);
		return -1;
	}
	r = recv(fd, a, sizeof(a), 0);
	close(fd);
	if (r < (ssize_t)n + 16 || a[0] != q[0] || a[1] != q[1] || (a[7] | a[6]) == 0) {
		snprintf(why, why_len, "no answer from %s (%zd bytes%s%s)", ns, r,
			 r < 0 ? ": " : "", r < 0 ? strerror(errno) : "");
		return -1;
	}
	/* The first answer after the question: a name pointer, type, class, TTL, length, data. */
	size_t off = n;
	off += (a[off] & 0xc0) ? 2 : 0;
	if (a[off + 1] != 1 || a[off + 8] != 0 || a[off + 9] != 4 || off + 14 > (size_t)r) {
		snprintf(why, why_len, "the answer is not one A record");
		return -1;
	}
	memcpy(&out->s_addr, a + off + 10, 4);
	return 0;
}

static void net_dns(void)
{
	struct in_addr addr;
	char why[160], ip[INET_ADDRSTRLEN];

	if (dns_resolve("metadata.husk-escape.test", &addr, why, sizeof(why))) {
		result(0, "the DNS probe's name resolves: %s", why);
		return;
	}
	inet_ntop(AF_INET, &addr, ip, sizeof(ip));
	result(!strcmp(ip, "169.254.169.254"),
	       "metadata.husk-escape.test resolves through the test's DNS server to %s", ip);
	static const struct {
		int type, fastopen;
		const char *what;
	} ways[] = { { SOCK_STREAM, 0, "TCP connect" },
		     { SOCK_DGRAM, 0, "UDP sendto" },
		     { SOCK_STREAM, 1, "TCP Fast Open" } };
	for (size_t k = 0; k < sizeof(ways) / sizeof(ways[0]); k++) {
		int r = try_connect(AF_INET, ip, 80, ways[k].type, ways[k].fastopen);

		result(r == -EPERM, "%s to the resolved %s: %s", ways[k].what, ip,
		       r ? strerror(-r) : "SENT");
	}
}

/* --- the caller's terminal --- */

static void terminal(void)
{
	char c = 'x';
	int r;

	/* TIOCSTI pushes bytes into a terminal's input queue: on the caller's terminal that is
	 * typing commands into the caller's shell. husk never passes it to the host. */
	errno = 0;
	r = ioctl(0, TIOCSTI, &c);
	result(r != 0, "TIOCSTI on stdin: %s", r ? strerror(errno) : "ACCEPTED");
	errno = 0;
	r = ioctl(0, TIOCLINUX, &c);
	result(r != 0, "TIOCLINUX on stdin: %s", r ? strerror(errno) : "ACCEPTED");
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: escape MODE TOKEN SECRET_DIR HOST_PID\n");
		return 2;
	}
	token = argv[2];
	secret_dir = argv[3];
	snprintf(secret_path, sizeof(secret_path), "%s/secret", secret_dir);
	if (!strcmp(argv[1], "files")) {
		files_direct();
		files_symlinks();
		files_race();
		files_handles();
		files_chroot();
		host_calls();
		terminal();
		procs((pid_t)atoi(argv[4]));
	} else if (!strcmp(argv[1], "net-none")) {
		net(0);
	} else if (!strcmp(argv[1], "net-host")) {
		net(1);
	} else if (!strcmp(argv[1], "net-dns")) {
		net_dns();
	} else {
		fprintf(stderr, "escape: unknown mode %s\n", argv[1]);
		return 2;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
