/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /proc/PID/{uid_map,gid_map,setgroups}, oom_score_adj / oom_adj / oom_score and ns/: their
 * formats, what fork and exec keep, the rules of writing oom_score_adj (range, the floor a
 * writer without CAP_SYS_RESOURCE cannot go below, the legacy oom_adj scale), and the namespace
 * links (readlink "type:[inode]", stat -L giving that inode on one device, equal across
 * processes, distinct per type).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "check.h"

/* Reads path into buf (NUL-terminated). Returns the length or -errno. */
static int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	close(fd);
	buf[n] = '\0';
	return (int)n;
}

/* Writes s to path in one write(2). Returns 0 or -errno. */
static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	if (n < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -EIO;
}

static long read_long(const char *path)
{
	char buf[64];

	if (read_file(path, buf, sizeof(buf)) <= 0)
		return -99999;
	return strtol(buf, NULL, 10);
}

static bool has_cap(int cap)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d) < 0)
		return false;
	return (d[cap / 32].effective >> (cap % 32)) & 1;
}

/* Each line three numbers in columns of width 10; id must be in one line's first range. */
static void check_map(const char *path, unsigned int id)
{
	char buf[4096], *line, *save;
	int n = read_file(path, buf, sizeof(buf)), lines = 0;
	bool covered = false;

	CHECK(n > 0, "%s: %s", path, n < 0 ? strerror(-n) : "empty");
	if (n <= 0)
		return;
	CHECK(buf[n - 1] == '\n', "%s does not end with a newline", path);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long in, out, count;
		char extra;

		lines++;
		CHECK(strlen(line) == 32, "%s: line \"%s\" is not 3 columns of 10", path, line);
		CHECK(sscanf(line, "%llu %llu %llu %c", &in, &out, &count, &extra) == 3,
		      "%s: line \"%s\"", path, line);
		CHECK(count >= 1 && in + count - 1 <= 0xffffffffull, "%s: line \"%s\"", path, line);
		if (id >= in && id - in < count)
			covered = true;
	}
	CHECK(lines >= 1, "%s: no line", path);
	CHECK(covered, "%s: id %u is not mapped", path, id);
}

static void test_maps(void)
{
	char buf[64];
	int n;

	check_map("/proc/self/uid_map", getuid());
	check_map("/proc/self/gid_map", getgid());
	n = read_file("/proc/self/setgroups", buf, sizeof(buf));
	CHECK(n > 0 && (!strcmp(buf, "allow\n") || !strcmp(buf, "deny\n")), "setgroups: \"%s\"",
	      n > 0 ? buf : strerror(-n));
	/* The thread's own view and another process's agree. */
	char a[4096], b[4096];
	pid_t pid = getpid();
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/uid_map", pid, pid);
	CHECK(read_file("/proc/self/uid_map", a, sizeof(a)) > 0 &&
		      read_file(path, b, sizeof(b)) > 0 && !strcmp(a, b),
	      "%s differs from /proc/self/uid_map", path);
	/* A map is written once, when its namespace is made: this one is. */
	CHECK_RET(write_file("/proc/self/uid_map", "0 0 1\n"), -EPERM);
	CHECK_RET(write_file("/proc/self/gid_map", "0 0 1\n"), -EPERM);
}

static void test_oom_ranges(void)
{
	long orig = read_long("/proc/self/oom_score_adj");
	char buf[64];

	CHECK(orig >= -1000 && orig <= 1000, "oom_score_adj %ld", orig);
	CHECK_RET(write_file("/proc/self/oom_score_adj", "1001"), -EINVAL);
	CHECK_RET(write_file("/proc/self/oom_score_adj", "-1001"), -EINVAL);
	CHECK_RET(write_file("/proc/self/oom_score_adj", "abc"), -EINVAL);
	CHECK_RET(write_file("/proc/self/oom_score_adj", "\n"), -EINVAL);
	CHECK_RET(write_file("/proc/self/oom_score_adj", "12x"), -EINVAL);
	CHECK_RET(write_file("/proc/self/oom_adj", "16"), -EINVAL);
	CHECK_RET(write_file("/proc/self/oom_adj", "-18"), -EINVAL);
	CHECK_RET(read_long("/proc/self/oom_score_adj"), orig);

	/* Raising is always allowed; a newline and spaces around the number are fine. */
	CHECK_RET(write_file("/proc/self/oom_score_adj", " 1000\n"), 0);
	CHECK_RET(read_long("/proc/self/oom_score_adj"), 1000);
	CHECK_RET(read_long("/proc/self/oom_adj"), 15);
	CHECK(read_file("/proc/self/oom_score_adj", buf, sizeof(buf)) > 0 && !strcmp(buf, "1000\n"),
	      "oom_score_adj reads \"%s\"", buf);
	long high = read_long("/proc/self/oom_score");
	CHECK(high > 0 && high <= 1333, "oom_score at 1000: %ld", high);
}

/* In a child: the floor a writer without CAP_SYS_RESOURCE may not go below. */
static int child_floor(void)
{
	/* The privileged writer sets the floor (oom_score_adj_min) to 100. */
	if (write_file("/proc/self/oom_score_adj", "100") < 0)
		return 10;
	if (setresgid(1000, 1000, 1000) < 0 || setresuid(1000, 1000, 1000) < 0)
		return 11;
	/* The files stay the process's own (a set*id change made it undumpable). */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	if (has_cap(CAP_SYS_RESOURCE))
		return 12;
	if (write_file("/proc/self/oom_score_adj", "99") != -EACCES)
		return 13;
	if (write_file("/proc/self/oom_score_adj", "300") < 0)
		return 14;
	if (write_file("/proc/self/oom_score_adj", "100") < 0) /* back to the floor */
		return 15;
	/* oom_adj: 1 is 1000 / 17 = 58 on oom_score_adj's scale, below the floor. */
	if (write_file("/proc/self/oom_adj", "1") != -EACCES)
		return 16;
	if (write_file("/proc/self/oom_adj", "15") < 0 ||
	    read_long("/proc/self/oom_score_adj") != 1000)
		return 17;
	return 0;
}

/*
 * Without CAP_SYS_RESOURCE (dropped here if held): raising is allowed, going below the floor is
 * not. The floor is the value a privileged writer set last: never -1000 for a process whose
 * own value is above it, natively (where nothing lowered it) and in husk (the config's).
 */
static void test_oom_unprivileged(void)
{
	long orig = read_long("/proc/self/oom_score_adj");
	int status;
	pid_t pid;

	if (orig == -1000) {
		printf("skip: the floor of oom_score_adj may be -1000 here\n");
		return;
	}
	pid = fork();
	if (pid == 0) {
		struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
		struct __user_cap_data_struct d[2];

		if (syscall(SYS_capget, &h, d) < 0)
			_exit(20);
		d[CAP_SYS_RESOURCE / 32].effective &= ~(1u << (CAP_SYS_RESOURCE % 32));
		if (syscall(SYS_capset, &h, d) < 0 || has_cap(CAP_SYS_RESOURCE))
			_exit(21);
		if (write_file("/proc/self/oom_score_adj", "1000") < 0)
			_exit(22);
		if (write_file("/proc/self/oom_score_adj", "-1000") != -EACCES)
			_exit(23);
		if (write_file("/proc/self/oom_adj", "-17") != -EACCES)
			_exit(24);
		if (read_long("/proc/self/oom_score_adj") != 1000)
			_exit(25);
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "unprivileged child: status %#x", status);
}

static void test_oom_privileged(void)
{
	int status;
	pid_t pid;

	if (!has_cap(CAP_SYS_RESOURCE) || !has_cap(CAP_SETUID) || !has_cap(CAP_SETGID)) {
		printf("skip: lowering oom_score_adj: no CAP_SYS_RESOURCE, CAP_SETUID, CAP_SETGID\n");
		return;
	}
	CHECK_RET(write_file("/proc/self/oom_score_adj", "-1000"), 0);
	CHECK_RET(read_long("/proc/self/oom_score_adj"), -1000);
	CHECK_RET(read_long("/proc/self/oom_adj"), -17);
	CHECK_RET(read_long("/proc/self/oom_score"), 0);
	CHECK_RET(write_file("/proc/self/oom_adj", "-8"), 0);
	/* -8 * 1000 / 17 */
	CHECK_RET(read_long("/proc/self/oom_score_adj"), -470);
	CHECK_RET(read_long("/proc/self/oom_adj"), -7);
	CHECK_RET(write_file("/proc/self/oom_score_adj", "500"), 0);
	CHECK_RET(read_long("/proc/self/oom_adj"), 8);

	pid = fork();
	if (pid == 0)
		_exit(child_floor());
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "floor child: status %#x", status);
}

/* fork copies oom_score_adj; exec keeps it. */
static void test_oom_inherit(const char *self)
{
	int status, p[2];
	char buf[64] = "";
	pid_t pid;

	CHECK_RET(write_file("/proc/self/oom_score_adj", "777"), 0);
	pid = fork();
	if (pid == 0)
		_exit(read_long("/proc/self/oom_score_adj") == 777 ? 0 : 1);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "forked child's oom_score_adj differs: status %#x", status);
	/* Another process's file shows the same. */
	pid = fork();
	if (pid == 0) {
		pause();
		_exit(0);
	}
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", pid);
	CHECK_RET(read_long(path), 777);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);

	CHECK_OK(pipe(p));
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		execl(self, self, "--print-oom", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	CHECK(read(p[0], buf, sizeof(buf) - 1) > 0, "reading the exec'd child");
	close(p[0]);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "exec'd child: status %#x", status);
	CHECK(!strcmp(buf, "777\n"), "after exec oom_score_adj is \"%s\"", buf);
}

static const char *const ns_names[] = {
	"cgroup", "ipc", "mnt", "net", "pid", "pid_for_children", "time", "time_for_children",
	"user",	  "uts",
};
#define NNS (sizeof(ns_names) / sizeof(ns_names[0]))

/* readlink of /proc/PID/ns/NAME: "type:[N]" with the type NAME up to "_for_children". */
static unsigned long long ns_link(const char *pid, const char *name)
{
	char path[128], buf[128], type[32];
	unsigned long long ino = 0;
	char close_br = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%s/ns/%s", pid, name);
	n = readlink(path, buf, sizeof(buf) - 1);
	CHECK(n > 0, "readlink %s: %s", path, strerror(errno));
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	snprintf(type, sizeof(type), "%.*s", (int)strcspn(name, "_"), name);
	size_t tl = strlen(type);
	CHECK(!strncmp(buf, type, tl) && buf[tl] == ':' && buf[tl + 1] == '[' &&
		      sscanf(buf + tl + 2, "%llu%c", &ino, &close_br) == 2 && close_br == ']' &&
		      buf[n - 1] == ']',
	      "%s reads \"%s\"", path, buf);
	return ino;
}

static void test_ns(void)
{
	unsigned long long ino[NNS];
	struct stat st, first = { 0 };
	char path[128], child_pid[32];
	int status;
	pid_t pid;

	for (size_t i = 0; i < NNS; i++) {
		ino[i] = ns_link("self", ns_names[i]);
		snprintf(path, sizeof(path), "/proc/self/ns/%s", ns_names[i]);
		CHECK(lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && (st.st_mode & 0777) == 0777,
		      "lstat %s: mode %o", path, st.st_mode);
		CHECK(stat(path, &st) == 0, "stat %s: %s", path, strerror(errno));
		CHECK(st.st_ino == ino[i], "stat %s: st_ino %llu, the link names %llu", path,
		      (unsigned long long)st.st_ino, ino[i]);
		CHECK(S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0444 && st.st_size == 0,
		      "stat %s: mode %o size %lld", path, st.st_mode, (long long)st.st_size);
		if (i == 0)
			first = st;
		CHECK(st.st_dev == first.st_dev, "stat %s: st_dev %#llx, cgroup's %#llx", path,
		      (unsigned long long)st.st_dev, (unsigned long long)first.st_dev);
	}
	/* Different types, different namespaces (pid and time are their children's here). */
	for (size_t i = 0; i < NNS; i++) {
		for (size_t j = i + 1; j < NNS; j++) {
			bool same_type = (!strcmp(ns_names[i], "pid") &&
					  !strcmp(ns_names[j], "pid_for_children")) ||
					 (!strcmp(ns_names[i], "time") &&
					  !strcmp(ns_names[j], "time_for_children"));
			if (same_type)
				CHECK(ino[i] == ino[j], "%s %llu, %s %llu", ns_names[i], ino[i],
				      ns_names[j], ino[j]);
			else
				CHECK(ino[i] != ino[j], "%s and %s are both %llu", ns_names[i],
				      ns_names[j], ino[i]);
		}
	}
	/* The directory: dr-x--x--x, listing every link. */
	CHECK(stat("/proc/self/ns", &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0511,
	      "/proc/self/ns mode %o", st.st_mode);
	/* An opened link is the namespace (fstat), and cannot be read. */
	int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0, "open /proc/self/ns/net: %s", strerror(errno));
	if (fd >= 0) {
		char c;

		CHECK(fstat(fd, &st) == 0 && st.st_ino == ino[3] && st.st_dev == first.st_dev,
		      "fstat of the opened net namespace: ino %llu", (unsigned long long)st.st_ino);
		CHECK_ERR(read(fd, &c, 1), EINVAL);
		char fdpath[64], name[64];
		ssize_t nl;

		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
		nl = readlink(fdpath, name, sizeof(name) - 1);
		CHECK(nl > 0, "readlink %s: %s", fdpath, strerror(errno));
		if (nl > 0) {
			char want[64];

			name[nl] = '\0';
			snprintf(want, sizeof(want), "net:[%llu]", ino[3]);
			CHECK(!strcmp(name, want), "%s reads \"%s\", not \"%s\"", fdpath, name,
			      want);
		}
		/* nsfs's ioctls, as lsns uses them. */
		CHECK_RET(ioctl(fd, NS_GET_NSTYPE), CLONE_NEWNET);
		int u = ioctl(fd, NS_GET_USERNS);
		CHECK(u >= 0, "NS_GET_USERNS: %s", strerror(errno));
		if (u >= 0) {
			uid_t owner = 12345;

			CHECK(fstat(u, &st) == 0 && st.st_ino == ino[8] &&
				      st.st_dev == first.st_dev,
			      "NS_GET_USERNS gives ino %llu, user is %llu",
			      (unsigned long long)st.st_ino, ino[8]);
			CHECK(fcntl(u, F_GETFD) == FD_CLOEXEC,
			      "NS_GET_USERNS's fd is close-on-exec");
			CHECK_RET(ioctl(u, NS_GET_NSTYPE), CLONE_NEWUSER);
			CHECK_RET(ioctl(u, NS_GET_OWNER_UID, &owner), 0);
			CHECK(owner == 0, "the user namespace's owner: %u", owner);
			close(u);
		}
		CHECK_ERR(ioctl(fd, NS_GET_OWNER_UID, &c), EINVAL);
		CHECK_ERR(ioctl(fd, NS_GET_PARENT), EINVAL);
		CHECK_ERR(ioctl(fd, TCGETS, &c), ENOTTY);
		close(fd);
	}
	fd = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0, "open /proc/self/ns/pid: %s", strerror(errno));
	if (fd >= 0) {
		/* The first pid namespace the process can see has no parent it may have. */
		CHECK_ERR(ioctl(fd, NS_GET_PARENT), EPERM);
		CHECK_RET(ioctl(fd, NS_GET_NSTYPE), CLONE_NEWPID);
		close(fd);
	}
	/* Another process of the sandbox is in the same namespaces. */
	pid = fork();
	if (pid == 0) {
		pause();
		_exit(0);
	}
	snprintf(child_pid, sizeof(child_pid), "%d", pid);
	for (size_t i = 0; i < NNS; i++)
		CHECK(ns_link(child_pid, ns_names[i]) == ino[i], "the child's %s differs",
		      ns_names[i]);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

/* Another user's namespace links are not readable (ptrace read access, as Linux). */
static void test_ns_access(void)
{
	char path[64], buf[64];
	int status;
	pid_t pid;

	if (!has_cap(CAP_SETUID) || !has_cap(CAP_SETGID) || getuid() != 0) {
		printf("skip: ns links of another user: not root with CAP_SETUID, CAP_SETGID\n");
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/ns/net", getpid());
	pid = fork();
	if (pid == 0) {
		if (setresgid(1000, 1000, 1000) < 0 || setresuid(1000, 1000, 1000) < 0)
			_exit(30);
		prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
		if (readlink(path, buf, sizeof(buf)) >= 0 || errno != EACCES)
			_exit(31);
		struct stat st;
		if (stat(path, &st) == 0 || errno != EACCES)
			_exit(32);
		if (readlink("/proc/self/ns/net", buf, sizeof(buf)) <= 0)
			_exit(33);
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "uid 1000 reading root's ns links: status %#x", status);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--print-oom")) {
		printf("%ld\n", read_long("/proc/self/oom_score_adj"));
		return 0;
	}
	/* Everything below runs in a child: the writes must not outlive the test. */
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		test_maps();
		test_oom_unprivileged();
		test_oom_ranges();
		test_oom_privileged();
		test_oom_inherit("/proc/self/exe");
		test_ns();
		test_ns_access();
		return finish();
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	return WEXITSTATUS(status);
}
