/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prlimit64(2) on another process (issue 17: runc sets its container init's limits so): read and
 * set a child's RLIMIT_NOFILE, the child sees the new value; an unknown pid is ESRCH; a caller
 * with other ids and no CAP_SYS_RESOURCE gets EPERM.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

int main(void)
{
	struct rlimit r, old;
	int to_child[2];
	pid_t c;
	char x;
	int st;

	if (pipe(to_child) < 0)
		return 2;
	fflush(stdout);
	c = fork();
	if (c == 0) {
		/* Wait until the parent changed the limit, then report the soft value. */
		if (read(to_child[0], &x, 1) != 1)
			_exit(3);
		getrlimit(RLIMIT_NOFILE, &r);
		_exit(r.rlim_cur == 77 ? 0 : 1);
	}
	CHECK(c > 0, "fork");
	CHECK_RET(prlimit(c, RLIMIT_NOFILE, NULL, &old), 0);
	r.rlim_cur = 77;
	r.rlim_max = old.rlim_max;
	CHECK_RET(prlimit(c, RLIMIT_NOFILE, &r, &old), 0);
	CHECK_RET(prlimit(c, RLIMIT_NOFILE, NULL, &r), 0);
	CHECK(r.rlim_cur == 77, "read back %llu", (unsigned long long)r.rlim_cur);
	CHECK(write(to_child[1], "x", 1) == 1, "write");
	CHECK(waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "the child saw another limit (status %d)", st);
	CHECK_ERR(prlimit(c, RLIMIT_NOFILE, NULL, &r), ESRCH);
	CHECK_ERR(prlimit(-5, RLIMIT_NOFILE, NULL, &r), ESRCH);

	/* Another uid without CAP_SYS_RESOURCE: EPERM on root's process. */
	fflush(stdout);
	c = fork();
	if (c == 0) {
		pid_t parent = getppid();

		if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
			_exit(3);
		_exit(prlimit(parent, RLIMIT_NOFILE, NULL, &r) < 0 && errno == EPERM ? 0 : 1);
	}
	CHECK(c > 0 && waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "unprivileged prlimit of root's process: status %d", st);
	return finish();
}
