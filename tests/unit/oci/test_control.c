/* SPDX-License-Identifier: Apache-2.0 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/control.h"
#include "sentry/control/control.h"

static char *args[] = { "sh", "-c", "echo hi", NULL };
static char *env[] = { "A=1", NULL };

Test(control, exec_request_round_trips)
{
	struct control_exec e = { .uid = 5, .gid = 6, .umask = 022 };
	struct control_exec_req req;
	size_t len;
	void *msg = control_encode_exec(&e, "/tmp", args, env, &len);

	cr_assert_not_null(msg);
	cr_assert_eq(control_decode_exec(msg, len, &req), 0);
	cr_expect_eq(req.e.uid, 5);
	cr_expect_eq(req.e.nargs, 3);
	cr_expect_str_eq(req.cwd, "/tmp");
	cr_expect_str_eq(req.args[2], "echo hi");
	cr_expect_null(req.args[3]);
	cr_expect_str_eq(req.env[0], "A=1");
	free(req.args);
	free(req.env);
	free(msg);
}

Test(control, every_truncated_or_extended_request_is_rejected)
{
	struct control_exec e = { 0 };
	struct control_exec_req req;
	size_t len;
	char *msg = control_encode_exec(&e, "/", args, env, &len);
	char *longer = calloc(1, len + 1);

	for (size_t n = 0; n < len; n++)
		cr_expect_eq(control_decode_exec(msg, n, &req), -EINVAL, "%zu bytes", n);
	memcpy(longer, msg, len);
	cr_expect_eq(control_decode_exec(longer, len + 1, &req), -EINVAL);
	msg[0] ^= 1; /* bad magic */
	cr_expect_eq(control_decode_exec(msg, len, &req), -EINVAL);
	free(msg);
	free(longer);
}

Test(control, exec_is_enosys_until_process_creation_and_closes_the_fds)
{
	struct control_exec e = { 0 };
	size_t len;
	void *msg = control_encode_exec(&e, "/", args, env, &len);
	char reply[64];
	int fds[3];
	struct control_hdr h;
	struct control_reply r;

	for (int i = 0; i < 3; i++)
		fds[i] = open("/dev/null", O_RDONLY);
	cr_assert_eq(control_serve(NULL, msg, len, fds, 3, reply), sizeof(h) + sizeof(r));
	memcpy(&h, reply, sizeof(h));
	memcpy(&r, reply + sizeof(h), sizeof(r));
	cr_expect_eq(h.op, CONTROL_REPLY);
	cr_expect_eq(r.err, -ENOSYS);
	cr_expect_eq(fcntl(fds[0], F_GETFD), -1);
	cr_expect_eq(errno, EBADF);
	free(msg);
}
