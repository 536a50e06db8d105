/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Capabilities and identities across execve(2) (capabilities(7), "Transformation of
 * capabilities during execve()"): each case sets up a child (uids, capability sets, ambient set,
 * bounding set, securebits, no_new_privs), which re-executes this program (or a set-user-ID or
 * file-capability copy of it) as a reporter; the reporter prints what it runs with (capget,
 * PR_CAP_AMBIENT_IS_SET, PR_CAPBSET_READ, getresuid, AT_SECURE) and the parent compares that
 * with what Linux gives. Runs as root.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "check.h"
#include "scratch.h"

#define BIT(c) (1ULL << (c))

/* What a reporter runs with. */
struct state {
	uint64_t eff, prm, inh, amb, bnd;
	unsigned long secure;
	uid_t ruid, euid, suid;
};

static char self[4096];
static char suid_copy[4200], fcaps_copy[4200], fcaps_kill_copy[4200], fcaps_raw_copy[4200];
static int last_cap;

static int capget3(uint64_t *eff, uint64_t *prm, uint64_t *inh)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d) < 0)
		return -1;
	*eff = (uint64_t)d[1].effective << 32 | d[0].effective;
	*prm = (uint64_t)d[1].permitted << 32 | d[0].permitted;
	*inh = (uint64_t)d[1].inheritable << 32 | d[0].inheritable;
	return 0;
}

static int capset3(uint64_t eff, uint64_t prm, uint64_t inh)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = {
		{ (uint32_t)eff, (uint32_t)prm, (uint32_t)inh },
		{ (uint32_t)(eff >> 32), (uint32_t)(prm >> 32), (uint32_t)(inh >> 32) },
	};

	return (int)syscall(SYS_capset, &h, d);
}

/* The bounding set, read one capability at a time. */
static uint64_t bounding(void)
{
	uint64_t b = 0;

	for (int c = 0; c <= last_cap; c++) {
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1)
			b |= BIT(c);
	}
	return b;
}

/* The reporter: one line with the state, then exit. */
static int report(void)
{
	struct state s = { 0 };

	if (capget3(&s.eff, &s.prm, &s.inh) < 0)
		return 3;
	for (int c = 0; c <= last_cap; c++) {
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, c, 0, 0) == 1)
			s.amb |= BIT(c);
	}
	s.bnd = bounding();
	s.secure = getauxval(AT_SECURE);
	getresuid(&s.ruid, &s.euid, &s.suid);
	printf("%" PRIx64 " %" PRIx64 " %" PRIx64 " %" PRIx64 " %" PRIx64 " %lu %u %u %u\n", s.eff,
	       s.prm, s.inh, s.amb, s.bnd, s.secure, s.ruid, s.euid, s.suid);
	return 0;
}

/*
 * Forks a child that runs setup() and then execs prog as a reporter; reads its report into *s.
 * Returns 0, or the errno of a failed exec (reported by the child), or -1 on a setup failure.
 */
static int run_case(const char *name, int (*setup)(void), const char *prog, struct state *s)
{
	int fds[2];
	char buf[512] = "";
	ssize_t n, len = 0;
	pid_t pid;
	int st;

	if (pipe(fds) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char *argv[] = { (char *)prog, "report", NULL };
		char *envp[] = { NULL };

		close(fds[0]);
		dup2(fds[1], 1);
		if (setup() < 0) {
			printf("setup %s\n", strerror(errno));
			fflush(stdout);
			_exit(2);
		}
		execve(prog, argv, envp);
		printf("exec %d\n", errno);
		fflush(stdout);
		_exit(1);
	}
	close(fds[1]);
	while ((n = read(fds[0], buf + len, sizeof(buf) - 1 - (size_t)len)) > 0)
		len += n;
	close(fds[0]);
	waitpid(pid, &st, 0);
	buf[len] = 0;
	if (!strncmp(buf, "exec ", 5))
		return atoi(buf + 5);
	memset(s, 0, sizeof(*s));
	if (sscanf(buf, "%" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64 " %lu %u %u %u",
		   &s->eff, &s->prm, &s->inh, &s->amb, &s->bnd, &s->secure, &s->ruid, &s->euid,
		   &s->suid) != 9) {
		check_fail(__FILE__, __LINE__, name, "no report: %s", buf);
		return -1;
	}
	return 0;
}

static uint64_t b0; /* the bounding set this program starts with */

#define EXPECT(name, s, field, want)                                                      \
	CHECK((s).field == (want), "%s: " #field " %" PRIx64 ", expected %" PRIx64, name, \
	      (uint64_t)(s).field, (uint64_t)(want))

/* --- setups --- */

/* Root with only CAP_CHOWN left in its permitted and effective sets. */
static int root_one_cap(void)
{
	return capset3(BIT(CAP_CHOWN), BIT(CAP_CHOWN), 0);
}

static int root_no_net_raw(void)
{
	return prctl(PR_CAPBSET_DROP, CAP_NET_RAW, 0, 0, 0);
}

/* uid 1000 keeping NET_BIND_SERVICE, CHOWN and KILL permitted; NBS and CHOWN inheritable. */
static int user_with_caps(void)
{
	uint64_t prm = BIT(CAP_NET_BIND_SERVICE) | BIT(CAP_CHOWN) | BIT(CAP_KILL);

	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0 || setresgid(1000, 1000, 1000) < 0 ||
	    setresuid(1000, 1000, 1000) < 0)
		return -1;
	return capset3(prm, prm, BIT(CAP_NET_BIND_SERVICE) | BIT(CAP_CHOWN));
}

static int user_with_ambient(void)
{
	if (user_with_caps() < 0)
		return -1;
	return prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_BIND_SERVICE, 0, 0);
}

/* ruid 1000, euid 0, with NBS ambient first. */
static int ruid_user_euid_root(void)
{
	uint64_t eff, prm, inh;

	if (capget3(&eff, &prm, &inh) < 0 ||
	    capset3(eff, prm, inh | BIT(CAP_NET_BIND_SERVICE)) < 0 ||
	    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_BIND_SERVICE, 0, 0) < 0)
		return -1;
	return setresuid(1000, 0, 0);
}

static int ruid_user_euid_root_nnp(void)
{
	if (ruid_user_euid_root() < 0)
		return -1;
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

static int ruid_root_euid_user(void)
{
	return setresuid(0, 1000, 1000);
}

static int noroot(void)
{
	return prctl(PR_SET_SECUREBITS, SECBIT_NOROOT, 0, 0, 0);
}

static int plain_user(void)
{
	return setresgid(1000, 1000, 1000) < 0 ? -1 : setresuid(1000, 1000, 1000);
}

static int plain_user_nnp(void)
{
	if (plain_user() < 0)
		return -1;
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

static int user_no_net_raw(void)
{
	if (prctl(PR_CAPBSET_DROP, CAP_NET_RAW, 0, 0, 0) < 0)
		return -1;
	return plain_user();
}

/*
 * uid 1000 sharing its filesystem context (clone(CLONE_FS)) with another process, which waits
 * for the exec'd reporter to end (Linux's LSM_UNSAFE_SHARE): for the end of file of a pipe
 * whose write end the reporter holds.
 */
static int user_fs_shared(void)
{
	int alive[2];
	long pid;
	char c;

	if (plain_user() < 0 || pipe(alive) < 0)
		return -1;
	pid = syscall(SYS_clone, CLONE_FS | SIGCHLD, 0, 0, 0, 0);
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(alive[1]);
		close(1); /* the report pipe: its reader waits for every writer */
		while (read(alive[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(alive[0]);
	return 0;
}

static void *pause_thread(void *arg)
{
	for (;;)
		pause();
	return arg;
}

/* uid 1000 with a second thread, which shares the fs context: that is no reason to refuse. */
static int user_threaded(void)
{
	pthread_t th;

	if (plain_user() < 0)
		return -1;
	errno = pthread_create(&th, NULL, pause_thread, NULL);
	return errno ? -1 : 0;
}

/*
 * uid 1000 traced by another uid-1000 process without capabilities (Linux's LSM_UNSAFE_PTRACE):
 * the tracer seizes this process, lets it go on at every stop and exits when it does.
 */
static int user_traced(void)
{
	int fds[2];
	pid_t me = getpid(), pid;
	char c;

	if (plain_user() < 0 || prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0 || pipe(fds) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int st;

		close(fds[0]);
		if (ptrace(PTRACE_SEIZE, me, 0, 0) < 0)
			_exit(1);
		if (write(fds[1], "s", 1) != 1)
			_exit(1);
		close(fds[1]);
		while (waitpid(me, &st, __WALL) == me && WIFSTOPPED(st)) {
			int sig = WSTOPSIG(st) == SIGTRAP ? 0 : WSTOPSIG(st);

			ptrace(PTRACE_CONT, me, 0, sig);
		}
		_exit(0);
	}
	prctl(PR_SET_PTRACER, pid, 0, 0, 0);
	close(fds[1]);
	if (read(fds[0], &c, 1) != 1) {
		errno = EPERM;
		return -1;
	}
	close(fds[0]);
	return 0;
}

/* --- the copies of this program --- */

static int copy_file(const char *from, const char *to, mode_t mode)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC);
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
	ssize_t n;
	int ret = -1;

	if (in < 0 || out < 0)
		goto out;
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		if (write(out, buf, (size_t)n) != n)
			goto out;
	}
	if (n == 0 && fchown(out, 0, 0) == 0 && fchmod(out, mode) == 0)
		ret = 0;
out:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return ret;
}

/* A copy of this program with file capabilities (revision 2, little-endian). */
static int fcaps_file(const char *to, uint64_t permitted, uint64_t inheritable, bool effective)
{
	uint32_t v[5] = {
		VFS_CAP_REVISION_2 | (effective ? VFS_CAP_FLAGS_EFFECTIVE : 0),
		(uint32_t)permitted,
		(uint32_t)inheritable,
		(uint32_t)(permitted >> 32),
		(uint32_t)(inheritable >> 32),
	};

	if (copy_file(self, to, 0755) < 0)
		return -1;
	return setxattr(to, "security.capability", v, sizeof(v), 0);
}

int main(int argc, char **argv)
{
	const uint64_t nbs = BIT(CAP_NET_BIND_SERVICE);
	struct state s;
	ssize_t n;
	int ret;
	FILE *f;

	f = fopen("/proc/sys/kernel/cap_last_cap", "re");
	if (!f || fscanf(f, "%d", &last_cap) != 1)
		last_cap = CAP_LAST_CAP;
	if (f)
		fclose(f);
	if (last_cap > CAP_LAST_CAP)
		last_cap = CAP_LAST_CAP;
	if (argc == 2 && !strcmp(argv[1], "report"))
		return report();

	setvbuf(stdout, NULL, _IONBF, 0);
	if (getuid() != 0 || geteuid() != 0) {
		printf("SKIP: caps_exec runs as root\n");
		return finish();
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		printf("FAIL: readlink /proc/self/exe\n");
		return 1;
	}
	self[n] = 0;
	b0 = bounding();

	/* Root: the file's sets count as all-ones, so permitted and effective become the
	 * bounding set, whatever was left of them before. */
	CHECK_RET(run_case("root", root_one_cap, self, &s), 0);
	EXPECT("root keeps its bounding set", s, prm, b0);
	EXPECT("root keeps its bounding set", s, eff, b0);
	EXPECT("root keeps its bounding set", s, amb, 0);
	EXPECT("root keeps its bounding set", s, secure, 0);
	CHECK_RET(run_case("root, smaller bounding set", root_no_net_raw, self, &s), 0);
	EXPECT("root, smaller bounding set", s, prm, b0 & ~BIT(CAP_NET_RAW));
	EXPECT("root, smaller bounding set", s, eff, b0 & ~BIT(CAP_NET_RAW));
	EXPECT("root, smaller bounding set", s, bnd, b0 & ~BIT(CAP_NET_RAW));

	/* uid 1000: only the ambient set survives, and becomes permitted and effective. */
	CHECK_RET(run_case("user with ambient", user_with_ambient, self, &s), 0);
	EXPECT("user with ambient", s, amb, nbs);
	EXPECT("user with ambient", s, prm, nbs);
	EXPECT("user with ambient", s, eff, nbs);
	EXPECT("user with ambient", s, inh, nbs | BIT(CAP_CHOWN));
	EXPECT("user with ambient", s, secure, 0);
	EXPECT("user with ambient", s, euid, 1000);
	CHECK_RET(run_case("user without ambient", user_with_caps, self, &s), 0);
	EXPECT("user without ambient", s, prm, 0);
	EXPECT("user without ambient", s, eff, 0);
	EXPECT("user without ambient", s, amb, 0);
	EXPECT("user without ambient", s, inh, nbs | BIT(CAP_CHOWN));

	/* Mixed real/effective root: AT_SECURE; the exec itself changes no id, so the ambient
	 * set stays (Linux 6.15+) and no_new_privs takes nothing away. */
	CHECK_RET(run_case("ruid 1000 euid 0", ruid_user_euid_root, self, &s), 0);
	EXPECT("ruid 1000 euid 0", s, prm, b0);
	EXPECT("ruid 1000 euid 0", s, eff, b0);
	EXPECT("ruid 1000 euid 0", s, amb, nbs);
	EXPECT("ruid 1000 euid 0", s, secure, 1);
	EXPECT("ruid 1000 euid 0", s, ruid, 1000);
	EXPECT("ruid 1000 euid 0", s, suid, 0);
	CHECK_RET(run_case("ruid 1000 euid 0, no_new_privs", ruid_user_euid_root_nnp, self, &s), 0);
	EXPECT("ruid 1000 euid 0, no_new_privs", s, euid, 0);
	EXPECT("ruid 1000 euid 0, no_new_privs", s, prm, b0);
	CHECK_RET(run_case("ruid 0 euid 1000", ruid_root_euid_user, self, &s), 0);
	EXPECT("ruid 0 euid 1000", s, prm, b0);
	EXPECT("ruid 0 euid 1000", s, eff, 0);
	EXPECT("ruid 0 euid 1000", s, secure, 1);
	EXPECT("ruid 0 euid 1000", s, suid, 1000);

	/* SECBIT_NOROOT: root is an ordinary user for exec. */
	CHECK_RET(run_case("SECBIT_NOROOT", noroot, self, &s), 0);
	EXPECT("SECBIT_NOROOT", s, prm, 0);
	EXPECT("SECBIT_NOROOT", s, eff, 0);
	EXPECT("SECBIT_NOROOT", s, secure, 0);

	scratch_make("caps_exec");
	/* A set-user-ID-root copy run by uid 1000, with and without no_new_privs. */
	snprintf(suid_copy, sizeof(suid_copy), "%s/suid", scratch);
	if (CHECK_OK(copy_file(self, suid_copy, 04755)) == 0) {
		CHECK_RET(run_case("set-user-ID root", plain_user, suid_copy, &s), 0);
		EXPECT("set-user-ID root", s, euid, 0);
		EXPECT("set-user-ID root", s, suid, 0);
		EXPECT("set-user-ID root", s, ruid, 1000);
		EXPECT("set-user-ID root", s, prm, b0);
		EXPECT("set-user-ID root", s, eff, b0);
		EXPECT("set-user-ID root", s, secure, 1);
		CHECK_RET(run_case("set-user-ID root, no_new_privs", plain_user_nnp, suid_copy, &s),
			  0);
		EXPECT("set-user-ID root, no_new_privs", s, euid, 1000);
		EXPECT("set-user-ID root, no_new_privs", s, prm, 0);
		EXPECT("set-user-ID root, no_new_privs", s, eff, 0);
		EXPECT("set-user-ID root, no_new_privs", s, secure, 0);
		CHECK_RET(run_case("set-user-ID root, threaded", user_threaded, suid_copy, &s), 0);
		EXPECT("set-user-ID root, threaded", s, euid, 0);
		EXPECT("set-user-ID root, threaded", s, prm, b0);
		/* Not honoured while another process shares the fs context, or under a tracer. */
		CHECK_RET(run_case("set-user-ID root, CLONE_FS", user_fs_shared, suid_copy, &s), 0);
		EXPECT("set-user-ID root, CLONE_FS", s, euid, 1000);
		EXPECT("set-user-ID root, CLONE_FS", s, suid, 1000);
		EXPECT("set-user-ID root, CLONE_FS", s, prm, 0);
		EXPECT("set-user-ID root, CLONE_FS", s, eff, 0);
		CHECK_RET(run_case("set-user-ID root, traced", user_traced, suid_copy, &s), 0);
		EXPECT("set-user-ID root, traced", s, euid, 1000);
		EXPECT("set-user-ID root, traced", s, suid, 1000);
		EXPECT("set-user-ID root, traced", s, prm, 0);
		EXPECT("set-user-ID root, traced", s, eff, 0);
	}

	/* File capabilities (security.capability). */
	snprintf(fcaps_copy, sizeof(fcaps_copy), "%s/fcaps", scratch);
	snprintf(fcaps_kill_copy, sizeof(fcaps_kill_copy), "%s/fcaps-kill", scratch);
	snprintf(fcaps_raw_copy, sizeof(fcaps_raw_copy), "%s/fcaps-raw", scratch);
	ret = fcaps_file(fcaps_copy, nbs, 0, true);
	if (ret < 0 && (errno == EOPNOTSUPP || errno == ENOTSUP)) {
		printf("SKIP: file capabilities: %s does not take security.capability\n", scratch);
		return finish();
	}
	CHECK_RET(ret, 0);
	CHECK_RET(fcaps_file(fcaps_kill_copy, BIT(CAP_KILL), 0, false), 0);
	CHECK_RET(fcaps_file(fcaps_raw_copy, BIT(CAP_NET_RAW), 0, true), 0);
	CHECK_RET(run_case("file caps", plain_user, fcaps_copy, &s), 0);
	EXPECT("file caps", s, prm, nbs);
	EXPECT("file caps", s, eff, nbs);
	EXPECT("file caps", s, amb, 0);
	EXPECT("file caps", s, secure, 1);
	EXPECT("file caps", s, euid, 1000);
	/* File caps cancel the ambient set; without the effective bit nothing is effective. */
	CHECK_RET(run_case("file caps over ambient", user_with_ambient, fcaps_kill_copy, &s), 0);
	EXPECT("file caps over ambient", s, prm, BIT(CAP_KILL));
	EXPECT("file caps over ambient", s, eff, 0);
	EXPECT("file caps over ambient", s, amb, 0);
	EXPECT("file caps over ambient", s, secure, 1);
	/* No new privileges: the file's capabilities are not granted. */
	CHECK_RET(run_case("file caps, no_new_privs", plain_user_nnp, fcaps_copy, &s), 0);
	EXPECT("file caps, no_new_privs", s, prm, 0);
	EXPECT("file caps, no_new_privs", s, eff, 0);
	/* An effective file capability outside the bounding set: the exec is refused. */
	CHECK_RET(run_case("file caps outside bounding", user_no_net_raw, fcaps_raw_copy, &s),
		  EPERM);
	return finish();
}
