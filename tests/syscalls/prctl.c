/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prctl: names, the parent-death signal (set, read, and delivered when the parent dies),
 * no_new_privs, dumpable, child subreaper, keepcaps, the bounding set, unknown options.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <linux/capability.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static void test_name(void)
{
	char name[32];

	CHECK_RET(prctl(PR_SET_NAME, "husk-test", 0, 0, 0), 0);
	memset(name, 'x', sizeof(name));
	CHECK_RET(prctl(PR_GET_NAME, name, 0, 0, 0), 0);
	CHECK(!strcmp(name, "husk-test"), "name '%s'", name);
	/* Longer names are cut to 15 bytes. */
	CHECK_RET(prctl(PR_SET_NAME, "0123456789abcdefghij", 0, 0, 0), 0);
	CHECK_RET(prctl(PR_GET_NAME, name, 0, 0, 0), 0);
	CHECK(!strcmp(name, "0123456789abcde"), "name '%s'", name);
	CHECK_ERR(prctl(PR_SET_NAME, (char *)8, 0, 0, 0), EFAULT);
	CHECK_ERR(prctl(PR_GET_NAME, (char *)8, 0, 0, 0), EFAULT);
}

static void test_flags(void)
{
	int v = -1;

	CHECK_RET(prctl(PR_SET_PDEATHSIG, SIGUSR1, 0, 0, 0), 0);
	CHECK_RET(prctl(PR_GET_PDEATHSIG, &v, 0, 0, 0), 0);
	CHECK(v == SIGUSR1, "pdeathsig %d", v);
	CHECK_ERR(prctl(PR_SET_PDEATHSIG, 65, 0, 0, 0), EINVAL);
	CHECK_RET(prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0), 0);

	CHECK_RET(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), 0);
	CHECK_ERR(prctl(PR_SET_NO_NEW_PRIVS, 2, 0, 0, 0), EINVAL);
	CHECK_ERR(prctl(PR_SET_NO_NEW_PRIVS, 1, 1, 0, 0), EINVAL);
	CHECK_ERR(prctl(PR_GET_NO_NEW_PRIVS, 1, 0, 0, 0), EINVAL);
	CHECK_RET(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	CHECK_RET(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), 1);

	CHECK_RET(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 1);
	CHECK_ERR(prctl(PR_SET_DUMPABLE, 2, 0, 0, 0), EINVAL);
	CHECK_RET(prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), 0);
	CHECK_RET(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 0);
	CHECK_RET(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), 0);

	CHECK_RET(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
	CHECK_RET(prctl(PR_GET_CHILD_SUBREAPER, &v, 0, 0, 0), 0);
	CHECK(v == 1, "subreaper %d", v);
	CHECK_RET(prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0), 0);
	CHECK_RET(prctl(PR_GET_CHILD_SUBREAPER, &v, 0, 0, 0), 0);
	CHECK(v == 0, "subreaper %d", v);

	CHECK_RET(prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0), 0);
	CHECK_ERR(prctl(PR_SET_KEEPCAPS, 2, 0, 0, 0), EINVAL);
	CHECK_RET(prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0), 0);
	CHECK_RET(prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0), 1);

	CHECK_RET(prctl(PR_CAPBSET_READ, CAP_CHOWN, 0, 0, 0), 1);
	CHECK_ERR(prctl(PR_CAPBSET_READ, 200, 0, 0, 0), EINVAL);
	CHECK_ERR(prctl(0x7fff1234, 0, 0, 0, 0), EINVAL);
}

/* The parent-death signal reaches a grandchild when its parent exits. */
static void test_pdeath_delivery(void)
{
	int p[2], ready[2], st;
	char c = 0;
	pid_t pid;

	if (pipe(p) < 0 || pipe(ready) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		pid_t g = fork();

		if (g == 0) {
			sigset_t m;
			struct timespec ts = { 5, 0 };
			siginfo_t si;

			sigemptyset(&m);
			sigaddset(&m, SIGUSR2);
			sigprocmask(SIG_BLOCK, &m, NULL);
			prctl(PR_SET_PDEATHSIG, SIGUSR2, 0, 0, 0);
			write(ready[1], "r", 1);
			c = sigtimedwait(&m, &si, &ts) == SIGUSR2 ? 'y' : 'n';
			write(p[1], &c, 1);
			_exit(0);
		}
		/* Exit once the grandchild is ready. */
		read(ready[0], &c, 1);
		_exit(0);
	}
	close(p[1]);
	close(ready[0]);
	close(ready[1]);
	CHECK_RET(waitpid(pid, &st, 0), pid);
	CHECK_RET(read(p[0], &c, 1), 1);
	CHECK(c == 'y', "the grandchild got no SIGUSR2 when its parent died (%c)", c);
	close(p[0]);
}

/* Runs fn in a child (irreversible flags stay there) and adds its counts to ours. */
static void in_child(void (*fn)(void))
{
	int counts[2] = { 0, 0 }, p[2], st;
	pid_t pid;

	if (pipe(p) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		checks_passed = checks_failed = 0;
		fn();
		counts[0] = checks_passed;
		counts[1] = checks_failed;
		write(p[1], counts, sizeof(counts));
		_exit(0);
	}
	close(p[1]);
	if (read(p[0], counts, sizeof(counts)) == sizeof(counts)) {
		checks_passed += counts[0];
		checks_failed += counts[1];
	}
	close(p[0]);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "a child failed (status %#x)", st);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	test_name();
	test_pdeath_delivery();
	in_child(test_flags);
	return finish();
}
