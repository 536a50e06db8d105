/* SPDX-License-Identifier: Apache-2.0 */
/*
 * procfs, sysfs and the /dev links: what programs read about themselves and the system, checked
 * against the calls that give the same facts (getpid, uname, the fds the program opened).
 */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"

/* Reads a whole small file into buf (NUL-terminated); returns its length or -1. */
static ssize_t slurp(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	ssize_t n;

	if (fd < 0)
		return -1;
	while (len + 1 < size && (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	return (ssize_t)len;
}

static void check_self(const char *argv0)
{
	char buf[8192], want[64], link[PATH_MAX];
	ssize_t n;

	n = readlink("/proc/self", link, sizeof(link) - 1);
	CHECK(n > 0, "readlink /proc/self: %zd", n);
	link[n > 0 ? n : 0] = '\0';
	snprintf(want, sizeof(want), "%d", getpid());
	CHECK(!strcmp(link, want), "/proc/self -> %s, pid %s", link, want);

	n = readlink("/proc/thread-self", link, sizeof(link) - 1);
	link[n > 0 ? n : 0] = '\0';
	snprintf(want, sizeof(want), "%d/task/%d", getpid(), (int)syscall(SYS_gettid));
	CHECK(!strcmp(link, want), "/proc/thread-self -> %s, want %s", link, want);

	/* exe: the path of this program, and it opens as this program. */
	n = readlink("/proc/self/exe", link, sizeof(link) - 1);
	link[n > 0 ? n : 0] = '\0';
	CHECK(n > 0 && link[0] == '/' && strstr(link, "syscalls-proc") != NULL, "exe -> %s", link);
	{
		struct stat a, b;

		CHECK(stat("/proc/self/exe", &a) == 0 && stat(link, &b) == 0 &&
			      a.st_ino == b.st_ino && a.st_dev == b.st_dev,
		      "stat through the exe link is the program");
	}

	/* stat: "pid (comm) state ppid ..." */
	CHECK(slurp("/proc/self/stat", buf, sizeof(buf)) > 0, "read stat");
	{
		int pid = 0, ppid = 0;
		char comm[64] = "", state = 0;

		CHECK(sscanf(buf, "%d (%63[^)]) %c %d", &pid, comm, &state, &ppid) == 4, "stat: %s",
		      buf);
		CHECK(pid == getpid() && ppid == getppid(), "stat pid %d ppid %d", pid, ppid);
		CHECK(!strcmp(comm, "syscalls-proc"), "stat comm %s", comm);
		CHECK(state == 'R', "stat state %c (the reader runs)", state);
	}

	CHECK(slurp("/proc/self/status", buf, sizeof(buf)) > 0, "read status");
	snprintf(want, sizeof(want), "\nPid:\t%d\n", getpid());
	CHECK(strstr(buf, want) != NULL, "status has %s", want);
	CHECK(!strncmp(buf, "Name:\tsyscalls-proc\n", 20), "status starts with Name");
	CHECK(strstr(buf, "\nUmask:\t0022\n") || strstr(buf, "\nUmask:\t"), "status has Umask");

	CHECK(slurp("/proc/self/comm", buf, sizeof(buf)) > 0 && !strcmp(buf, "syscalls-proc\n"),
	      "comm %s", buf);

	n = slurp("/proc/self/cmdline", buf, sizeof(buf));
	CHECK(n == (ssize_t)strlen(argv0) + 1 && !strcmp(buf, argv0), "cmdline %s (%zd)", buf, n);

	n = slurp("/proc/self/environ", buf, sizeof(buf));
	CHECK(n >= 0, "environ readable");

	CHECK(slurp("/proc/self/maps", buf, sizeof(buf)) > 0, "read maps");
	CHECK(strstr(buf, "[stack]") != NULL, "maps names the stack");
	CHECK(strstr(buf, "syscalls-proc") != NULL, "maps names the program");

	CHECK(slurp("/proc/self/limits", buf, sizeof(buf)) > 0 &&
		      !strncmp(buf, "Limit                     Soft Limit           Hard Limit",
			       56),
	      "limits header: %.60s", buf);
	CHECK(strstr(buf, "\nMax open files            ") != NULL, "limits has open files");

	CHECK(slurp("/proc/self/mounts", buf, sizeof(buf)) > 0 && strstr(buf, " /proc proc "),
	      "mounts shows /proc");
	CHECK(slurp("/proc/mounts", buf, sizeof(buf)) > 0 && strstr(buf, " / "),
	      "/proc/mounts shows /");
	CHECK(slurp("/proc/self/mountinfo", buf, sizeof(buf)) > 0 && strstr(buf, " - proc proc "),
	      "mountinfo shows proc");
	CHECK(slurp("/proc/self/cgroup", buf, sizeof(buf)) > 0 && strstr(buf, "0::/"),
	      "cgroup v2 line");
}

static void check_fds(void)
{
	char path[64], link[PATH_MAX], buf[256];
	int p[2], fd, fd2;
	ssize_t n;

	fd = CHECK_OK(open("/proc/self/status", O_RDONLY));
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	link[n > 0 ? n : 0] = '\0';
	snprintf(buf, sizeof(buf), "/proc/%d/status", getpid());
	CHECK(!strcmp(link, buf), "fd link -> %s, want %s", link, buf);

	/* fdinfo: position and flags of the open file. */
	CHECK(read(fd, buf, 10) == 10, "read 10");
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	CHECK(slurp(path, buf, sizeof(buf)) > 0 && !strncmp(buf, "pos:\t10\nflags:\t0", 16),
	      "fdinfo %s", buf);
	close(fd);
	CHECK_ERR(readlink(path, link, sizeof(link)), ENOENT);

	/* A pipe: "pipe:[ino]" with the pipe's inode, and reopening the write end writes to it. */
	CHECK_OK(pipe(p));
	{
		struct stat st;

		fstat(p[0], &st);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", p[1]);
		n = readlink(path, link, sizeof(link) - 1);
		link[n > 0 ? n : 0] = '\0';
		snprintf(buf, sizeof(buf), "pipe:[%lu]", (unsigned long)st.st_ino);
		CHECK(!strcmp(link, buf), "pipe link %s, want %s", link, buf);
	}
	fd2 = CHECK_OK(open(path, O_WRONLY));
	CHECK_RET(write(fd2, "via-proc", 8), 8);
	CHECK_RET(read(p[0], buf, sizeof(buf)), 8);
	CHECK(!memcmp(buf, "via-proc", 8), "data through the reopened pipe");
	close(fd2);

	/* /dev/stdout is /proc/self/fd/1. */
	n = readlink("/dev/stdout", link, sizeof(link) - 1);
	link[n > 0 ? n : 0] = '\0';
	CHECK(!strcmp(link, "/proc/self/fd/1"), "/dev/stdout -> %s", link);
	n = readlink("/dev/fd", link, sizeof(link) - 1);
	link[n > 0 ? n : 0] = '\0';
	CHECK(!strcmp(link, "/proc/self/fd"), "/dev/fd -> %s", link);
	snprintf(path, sizeof(path), "/dev/fd/%d", p[0]);
	CHECK(access(path, F_OK) == 0, "/dev/fd/N exists");
	close(p[0]);
	close(p[1]);

	/* The fd directory lists what is open. */
	{
		struct stat st;

		CHECK(lstat("/proc/self/fd/0", &st) == 0 && S_ISLNK(st.st_mode), "fd/0 is a link");
	}
}

static void check_system(void)
{
	char buf[8192], b2[128];
	struct utsname u;

	uname(&u);
	CHECK(slurp("/proc/sys/kernel/osrelease", buf, sizeof(buf)) > 0, "osrelease");
	snprintf(b2, sizeof(b2), "%s\n", u.release);
	CHECK(!strcmp(buf, b2), "osrelease %s, uname %s", buf, u.release);
	CHECK(slurp("/proc/sys/kernel/ostype", buf, sizeof(buf)) > 0 && !strcmp(buf, "Linux\n"),
	      "ostype");
	snprintf(b2, sizeof(b2), "%s\n", u.nodename);
	CHECK(slurp("/proc/sys/kernel/hostname", buf, sizeof(buf)) > 0 && !strcmp(buf, b2),
	      "hostname %s vs %s", buf, u.nodename);
	CHECK(slurp("/proc/version", buf, sizeof(buf)) > 0 && !strncmp(buf, "Linux version ", 14) &&
		      strstr(buf, u.release),
	      "version %s", buf);
	CHECK(slurp("/proc/sys/kernel/random/boot_id", buf, sizeof(buf)) == 37, "boot_id");
	CHECK(slurp("/proc/sys/kernel/random/boot_id", b2, sizeof(b2)) == 37 && !strcmp(buf, b2),
	      "boot_id is stable");
	CHECK(slurp("/proc/sys/kernel/random/uuid", buf, sizeof(buf)) == 37 &&
		      slurp("/proc/sys/kernel/random/uuid", b2, sizeof(b2)) == 37 &&
		      strcmp(buf, b2),
	      "uuid changes");
	CHECK(buf[14] == '4', "uuid is version 4: %s", buf);
	CHECK(slurp("/proc/sys/kernel/pid_max", buf, sizeof(buf)) > 0 && atoi(buf) >= 32768,
	      "pid_max");
	CHECK(slurp("/proc/sys/fs/pipe-max-size", buf, sizeof(buf)) > 0 && atoi(buf) >= 4096,
	      "pipe-max-size");
	CHECK(slurp("/proc/sys/vm/overcommit_memory", buf, sizeof(buf)) == 2, "overcommit");
	CHECK(slurp("/proc/meminfo", buf, sizeof(buf)) > 0 && !strncmp(buf, "MemTotal:", 9),
	      "meminfo");
	CHECK(slurp("/proc/cpuinfo", buf, sizeof(buf)) > 0 && !strncmp(buf, "processor\t: 0\n", 14),
	      "cpuinfo");
	CHECK(slurp("/proc/stat", buf, sizeof(buf)) > 0 && !strncmp(buf, "cpu  ", 5) &&
		      strstr(buf, "\nbtime "),
	      "stat");
	{
		/* A sandbox's uptime counts from its start: 0.00 in its first 10 ms. */
		double up = -1, idle = -1;

		CHECK(slurp("/proc/uptime", buf, sizeof(buf)) > 0 &&
			      sscanf(buf, "%lf %lf", &up, &idle) == 2 && up >= 0 && idle >= 0,
		      "uptime %s", buf);
	}
	CHECK(slurp("/proc/loadavg", buf, sizeof(buf)) > 0 && strchr(buf, '/'), "loadavg");
	/* The types a guest mounts: util-linux and systemd read the list. */
	CHECK(slurp("/proc/filesystems", buf, sizeof(buf)) > 0 && strstr(buf, "\tproc\n") &&
		      strstr(buf, "nodev\ttmpfs\n") && strstr(buf, "nodev\tcgroup2\n") &&
		      strstr(buf, "nodev\tdevpts\n") && strstr(buf, "nodev\tmqueue\n") &&
		      strstr(buf, "nodev\toverlay\n"),
	      "filesystems: %s", buf);
	{
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		CHECK(slurp("/sys/devices/system/cpu/online", buf, sizeof(buf)) > 0 &&
			      buf[0] == '0',
		      "cpu/online %s", buf);
		if (ncpu > 1)
			snprintf(b2, sizeof(b2), "0-%ld\n", ncpu - 1);
		else
			snprintf(b2, sizeof(b2), "0\n");
		CHECK(!strcmp(buf, b2), "online %s for %ld cpus", buf, ncpu);
		CHECK(access("/sys/devices/system/cpu/cpu0", F_OK) == 0, "cpu0");
	}
}

/* A child's /proc entry, and the task directory of a process. */
static void check_other(void)
{
	char path[64], buf[4096];
	int p[2];
	pid_t pid;

	CHECK_OK(pipe(p));
	pid = fork();
	if (pid == 0) {
		char c;

		close(p[1]);
		read(p[0], &c, 1);
		_exit(0);
	}
	close(p[0]);
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	CHECK(slurp(path, buf, sizeof(buf)) > 0, "child stat");
	{
		int cpid = 0, cppid = 0;
		char state = 0;

		CHECK(sscanf(buf, "%d (%*[^)]) %c %d", &cpid, &state, &cppid) == 3 && cpid == pid &&
			      cppid == getpid() && state != 0,
		      "child stat %s", buf);
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, pid);
	CHECK(slurp(path, buf, sizeof(buf)) > 0 && !strcmp(buf, "syscalls-proc\n"), "task comm");
	close(p[1]);
	waitpid(pid, NULL, 0);
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	CHECK_ERR(open(path, O_RDONLY), ENOENT);
	CHECK_ERR(open("/proc/999999999/stat", O_RDONLY), ENOENT);
}

/* Whether text has a line containing every one of the strings a and b. */
static bool has_line_with(const char *text, const char *a, const char *b)
{
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char one[512];

		snprintf(one, sizeof(one), "%.*s", (int)(len < sizeof(one) ? len : sizeof(one) - 1),
			 line);
		if (strstr(one, a) && strstr(one, b))
			return true;
		line = end ? end + 1 : NULL;
	}
	return false;
}

/* /proc/net: a listening TCP socket, a bound UDP socket and a named unix socket appear. */
static void check_net(void)
{
	static char buf[1 << 18];
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr_un u = { .sun_family = AF_UNIX };
	socklen_t len = sizeof(a);
	int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int d = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int t6 = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int x = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	char want[64], name[64];
	int tport, dport, t6port;

	CHECK(t >= 0 && d >= 0 && t6 >= 0 && x >= 0, "sockets");
	CHECK_OK(bind(t, (struct sockaddr *)&a, sizeof(a)));
	CHECK_OK(listen(t, 4));
	CHECK_OK(getsockname(t, (struct sockaddr *)&a, &len));
	tport = ntohs(a.sin_port);
	a.sin_port = 0;
	CHECK_OK(bind(d, (struct sockaddr *)&a, sizeof(a)));
	len = sizeof(a);
	CHECK_OK(getsockname(d, (struct sockaddr *)&a, &len));
	dport = ntohs(a.sin_port);
	CHECK_OK(bind(t6, (struct sockaddr *)&a6, sizeof(a6)));
	CHECK_OK(listen(t6, 4));
	len = sizeof(a6);
	CHECK_OK(getsockname(t6, (struct sockaddr *)&a6, &len));
	t6port = ntohs(a6.sin6_port);
	snprintf(name, sizeof(name), "husk-proc-net-%d", getpid());
	memcpy(u.sun_path + 1, name, strlen(name));
	CHECK_OK(bind(x, (struct sockaddr *)&u,
		      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name))));
	CHECK_OK(listen(x, 4));

	CHECK(slurp("/proc/net/tcp", buf, sizeof(buf)) > 0, "read /proc/net/tcp");
	CHECK(!strncmp(buf, "  sl  local_address rem_address   st", 36), "tcp header: %.60s", buf);
	snprintf(want, sizeof(want), " 0100007F:%04X 00000000:0000 0A ", tport);
	CHECK(strstr(buf, want) != NULL, "tcp has the listener %s", want);
	CHECK(slurp("/proc/net/udp", buf, sizeof(buf)) > 0, "read /proc/net/udp");
	snprintf(want, sizeof(want), " 0100007F:%04X 00000000:0000 07 ", dport);
	CHECK(strstr(buf, want) != NULL, "udp has the bound socket %s", want);
	CHECK(slurp("/proc/net/tcp6", buf, sizeof(buf)) > 0, "read /proc/net/tcp6");
	snprintf(want, sizeof(want), " 00000000000000000000000001000000:%04X ", t6port);
	CHECK(has_line_with(buf, want, " 0A "), "tcp6 has the listener %s", want);
	CHECK(slurp("/proc/net/udp6", buf, sizeof(buf)) > 0, "read /proc/net/udp6");
	CHECK(slurp("/proc/net/unix", buf, sizeof(buf)) > 0, "read /proc/net/unix");
	CHECK(!strncmp(buf, "Num       RefCount Protocol Flags    Type St Inode Path", 54),
	      "unix header: %.60s", buf);
	snprintf(want, sizeof(want), " @%s", name);
	CHECK(has_line_with(buf, want, " 00010000 0001 01 "), "unix has the listener %s", want);
	CHECK(slurp("/proc/net/dev", buf, sizeof(buf)) > 0, "read /proc/net/dev");
	CHECK(strstr(buf, "Inter-|   Receive") == buf && strstr(buf, "    lo: ") != NULL,
	      "dev has lo: %.200s", buf);
	CHECK_ERR(open("/proc/net/nope", O_RDONLY), ENOENT);
	close(t);
	close(d);
	close(t6);
	close(x);
}

/* /proc/PID/mem: reads and writes of the process's memory at the offset (its address). */
static void check_mem(void)
{
	static char buf[64] = "memory seen through /proc/self/mem";
	char got[64] = { 0 };
	char *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *gone = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int fd = open("/proc/self/mem", O_RDWR);
	int st;
	pid_t pid;

	CHECK(fd >= 0, "open /proc/self/mem: %s", strerror(errno));
	CHECK(ro != MAP_FAILED && gone != MAP_FAILED, "mmap: %s", strerror(errno));
	if (fd < 0 || ro == MAP_FAILED || gone == MAP_FAILED)
		return;
	munmap(gone, 4096);
	CHECK_RET(pread(fd, got, 34, (off_t)(uintptr_t)buf), 34);
	CHECK(!memcmp(got, buf, 34), "pread: %s", got);
	CHECK_RET(pwrite(fd, "MEMORY", 6, (off_t)(uintptr_t)buf), 6);
	CHECK(!memcmp(buf, "MEMORY seen", 11), "after pwrite: %s", buf);
	/* A debugger's write goes through a read-only page (the private copy). */
	CHECK_RET(pwrite(fd, "x", 1, (off_t)(uintptr_t)ro), 1);
	CHECK(ro[0] == 'x', "a read-only page after pwrite: %#x", ro[0]);
	CHECK_ERR(pread(fd, got, 16, (off_t)(uintptr_t)gone), EIO);
	CHECK_RET(lseek(fd, (off_t)(uintptr_t)buf, SEEK_SET), (off_t)(uintptr_t)buf);
	CHECK_RET(read(fd, got, 6), 6);
	CHECK(!memcmp(got, "MEMORY", 6), "read at the offset: %.6s", got);
	CHECK_ERR(lseek(fd, 0, SEEK_END), EINVAL);
	close(fd);
	/* The parent reads its child's memory (the child is stopped; same uid, dumpable). */
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		strcpy(buf, "the child's copy");
		raise(SIGSTOP);
		_exit(0);
	}
	if (pid > 0 && waitpid(pid, &st, WUNTRACED) == pid) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
		fd = open(path, O_RDONLY);
		memset(got, 0, sizeof(got));
		CHECK(fd >= 0 && pread(fd, got, 16, (off_t)(uintptr_t)buf) == 16 &&
			      !memcmp(got, "the child's copy", 16),
		      "%s: %s", path, fd < 0 ? strerror(errno) : got);
		if (fd >= 0)
			close(fd);
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	munmap(ro, 4096);
}

/* The lines of /proc/self/maps that intersect [a, b): their count; the first one in *line. */
static int maps_lines(unsigned long a, unsigned long b, char *line, size_t size)
{
	static char buf[1 << 16];
	int n = 0;

	if (slurp("/proc/self/maps", buf, sizeof(buf)) <= 0)
		return -1;
	for (char *l = buf, *nl; *l; l = nl + 1) {
		unsigned long s, e;

		nl = strchr(l, '\n');
		if (!nl)
			break;
		if (sscanf(l, "%lx-%lx", &s, &e) == 2 && s < b && a < e && n++ == 0)
			snprintf(line, size, "%.*s", (int)(nl - l), l);
	}
	return n;
}

/* A field of /proc/self/status in kB, or -1. */
static long status_kb(const char *name)
{
	static char buf[4096];
	char key[32];
	const char *p;

	snprintf(key, sizeof(key), "\n%s:", name);
	if (slurp("/proc/self/status", buf, sizeof(buf)) <= 0 || !(p = strstr(buf, key)))
		return -1;
	return strtol(p + strlen(key), NULL, 10);
}

static int initialized_data = 42;

/*
 * Memory as Linux shows it: one maps line per mapping however copy-on-write split it, [stack]
 * on the whole stack, the data segment in stat, resident sizes in status.
 */
static void check_layout(void)
{
	const long pg = 4096, len = 64 * pg;
	char line[512], buf[4096], *p, *f;
	unsigned long a, b;
	int sync[2], st;
	long rss, hwm, size;
	pid_t pid;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED, "mmap: %s", strerror(errno));
	if (p == MAP_FAILED)
		return;
	memset(p, 1, len);
	/* A child keeps the pages shared while the parent writes some of them (copies). */
	CHECK_OK(pipe(sync));
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		char c;

		close(sync[1]);
		if (read(sync[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(sync[0]);
	for (long i = 0; i < len; i += 24 * pg)
		p[i] = 2;
	CHECK(maps_lines((unsigned long)p, (unsigned long)(p + len), line, sizeof(line)) == 1,
	      "a mapping written after fork is one line: %d",
	      maps_lines((unsigned long)p, (unsigned long)(p + len), line, sizeof(line)));
	CHECK(sscanf(line, "%lx-%lx", &a, &b) == 2 && a <= (unsigned long)p &&
		      b >= (unsigned long)(p + len),
	      "the mapping's line: %s", line);
	/* The stack: one line, named, holding this frame; nothing unnamed just below it. */
	CHECK(maps_lines((unsigned long)line, (unsigned long)line + 1, line, sizeof(line)) == 1 &&
		      strstr(line, "[stack]"),
	      "the stack's line: %s", line);
	if (sscanf(line, "%lx-%lx", &a, &b) == 2)
		CHECK(maps_lines(a - 1, a, line, sizeof(line)) == 0 || strchr(line, '[') ||
			      strchr(line, '/') || strstr(line, "rw-p") == NULL,
		      "a piece of the stack below [stack]: %s", line);
	close(sync[1]);
	waitpid(pid, &st, 0);
	munmap(p, len);

	/* Shared anonymous memory: Linux's shmem object, named after /dev/zero. */
	p = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED) {
		CHECK(maps_lines((unsigned long)p, (unsigned long)p + 1, line, sizeof(line)) == 1 &&
			      strstr(line, " rw-s 00000000 00:01 ") &&
			      strstr(line, "/dev/zero (deleted)"),
		      "shared anonymous memory: %s", line);
		munmap(p, 2 * pg);
	}

	/* stat: start_data and end_data (fields 45, 46) hold the initialized data. */
	CHECK(slurp("/proc/self/stat", buf, sizeof(buf)) > 0 && (f = strrchr(buf, ')')),
	      "read stat");
	if (f) {
		unsigned long v[64] = { 0 };
		int n = 0;

		/* Field 3 (the state) follows ") "; fields from 4 on are numbers. */
		for (char *t = strtok(f + 4, " "); t && n < 64; t = strtok(NULL, " "))
			v[n++] = strtoul(t, NULL, 10);
		/* v[i] is field i + 4. */
		CHECK(n >= 44, "stat fields: %d", n + 3);
		CHECK(v[41] && v[41] <= (unsigned long)&initialized_data &&
			      (unsigned long)&initialized_data < v[42],
		      "start_data %#lx end_data %#lx, data at %p", v[41], v[42],
		      (void *)&initialized_data);
		CHECK(v[20] > 0 && v[20] < v[19] / 4096, "rss %lu pages of vsize %lu", v[20],
		      v[19]);
	}

	/* status: VmRSS follows the pages touched, VmHWM keeps the peak. */
	size = status_kb("VmSize");
	rss = status_kb("VmRSS");
	CHECK(rss > 0 && rss < size, "VmRSS %ld kB, VmSize %ld kB", rss, size);
	p = mmap(NULL, 16L << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED) {
		long before = status_kb("VmRSS"), after;

		memset(p, 3, 16L << 20);
		after = status_kb("VmRSS");
		CHECK(after >= before + 15 * 1024, "VmRSS %ld kB, then %ld kB after 16 MiB", before,
		      after);
		munmap(p, 16L << 20);
		rss = status_kb("VmRSS");
		hwm = status_kb("VmHWM");
		CHECK(rss <= after - 15 * 1024, "VmRSS after munmap: %ld kB, was %ld kB", rss,
		      after);
		/* Linux's counters lag by a few pages (per-thread caches): 1 MiB of slack. */
		CHECK(hwm >= after - 1024, "VmHWM %ld kB, the peak was %ld kB", hwm, after);
		CHECK(status_kb("RssAnon") + status_kb("RssFile") + status_kb("RssShmem") == rss,
		      "RssAnon + RssFile + RssShmem != VmRSS");
	}
}

static void *park(void *arg)
{
	char c;

	/* Until main closes the pipe's write end. */
	(void)!read(*(int *)arg, &c, 1);
	return NULL;
}

/*
 * /proc/self/task's link count: 2 plus one per thread, as Linux's (Chromium's zygote checks 3,
 * "single-threaded", before it forks, and aborts on anything else).
 */
static void check_task_links(void)
{
	pthread_t th[3];
	struct stat st;
	int p[2];

	CHECK_RET(stat("/proc/self/task", &st), 0);
	CHECK(st.st_nlink == 3, "/proc/self/task nlink %lu with one thread",
	      (unsigned long)st.st_nlink);
	CHECK_RET(pipe(p), 0);
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, park, &p[0]);
	CHECK_RET(stat("/proc/self/task", &st), 0);
	CHECK(st.st_nlink == 6, "/proc/self/task nlink %lu with 4 threads",
	      (unsigned long)st.st_nlink);
	close(p[1]);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	close(p[0]);
	/* A joined thread may still be on its way out of the thread group (its tid is cleared
	 * before it is released, on Linux too): wait for the count to come back down. */
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		CHECK_RET(stat("/proc/self/task", &st), 0);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (st.st_nlink == 3 || now.tv_sec - t0.tv_sec > 60)
			break;
		sched_yield();
	} while (1);
	CHECK(st.st_nlink == 3, "/proc/self/task nlink %lu after the joins",
	      (unsigned long)st.st_nlink);
}

int main(int argc, char **argv)
{
	check_self(argv[0]);
	check_fds();
	check_system();
	check_other();
	check_net();
	check_mem();
	check_layout();
	check_task_links();
	return finish();
}
