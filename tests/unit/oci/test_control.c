/* SPDX-License-Identifier: Apache-2.0 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
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

/* A fake kernel_spawn: control_serve's job is to decode and hand over, which is tested here. */
static struct {
	int calls;
	int ret;
	char arg2[64], cwd[64], env0[16];
	uint32_t uid, gid;
	int32_t umask;
	int stdio_ok; /* the three fds were open when kernel_spawn ran */
	bool wants_tg;
} fake;

int kernel_spawn(struct kernel *k, const struct spawn_spec *s)
{
	fake.calls++;
	snprintf(fake.arg2, sizeof(fake.arg2), "%s", s->argv[2]);
	snprintf(fake.cwd, sizeof(fake.cwd), "%s", s->cwd);
	snprintf(fake.env0, sizeof(fake.env0), "%s", s->envp[0]);
	fake.uid = s->uid;
	fake.gid = s->gid;
	fake.umask = s->umask;
	fake.stdio_ok = 0;
	for (int i = 0; i < 3; i++)
		fake.stdio_ok += fcntl(s->stdio[i], F_GETFD) >= 0;
	fake.wants_tg = s->tg_out != NULL;
	if (fake.ret == 0) {
		*s->pid_out = 42;
		if (s->tg_out)
			*s->tg_out = (struct thread_group *)&fake;
	}
	return fake.ret;
}

static struct control_reply serve(const struct control_exec *e, int nfds, int *fds,
				  struct thread_group **tg)
{
	size_t len;
	void *msg = control_encode_exec(e, "/work", args, env, &len);
	char reply[64];
	struct control_hdr h;
	struct control_reply r;

	cr_assert_eq(control_serve(NULL, msg, len, fds, nfds, reply, tg), sizeof(h) + sizeof(r));
	memcpy(&h, reply, sizeof(h));
	memcpy(&r, reply + sizeof(h), sizeof(r));
	cr_expect_eq(h.op, CONTROL_REPLY);
	cr_expect_eq(h.magic, CONTROL_MAGIC);
	free(msg);
	return r;
}

static void open_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		fds[i] = open("/dev/null", O_RDONLY);
}

Test(control, exec_hands_the_decoded_request_to_kernel_spawn_and_closes_the_fds)
{
	struct control_exec e = { .uid = 7, .gid = 8, .umask = 027 };
	struct thread_group *tg = NULL;
	struct control_reply r;
	int fds[3];

	memset(&fake, 0, sizeof(fake));
	open_fds(fds, 3);
	r = serve(&e, 3, fds, &tg);
	cr_expect_eq(r.err, 0);
	cr_expect_eq(r.pid, 42);
	cr_expect_eq(fake.calls, 1);
	cr_expect_str_eq(fake.arg2, "echo hi");
	cr_expect_str_eq(fake.cwd, "/work");
	cr_expect_str_eq(fake.env0, "A=1");
	cr_expect_eq(fake.uid, 7);
	cr_expect_eq(fake.gid, 8);
	cr_expect_eq(fake.umask, 027);
	cr_expect_eq(fake.stdio_ok, 3);
	cr_expect(fake.wants_tg);
	cr_expect_eq((void *)tg, (void *)&fake);
	for (int i = 0; i < 3; i++) {
		errno = 0;
		cr_expect_eq(fcntl(fds[i], F_GETFD), -1);
		cr_expect_eq(errno, EBADF);
	}
}

Test(control, detached_exec_gets_no_process_to_wait_for)
{
	struct control_exec e = { .flags = CONTROL_EXEC_DETACH, .umask = 0xffffffffu };
	struct thread_group *tg = (struct thread_group *)&e;
	int fds[3];

	memset(&fake, 0, sizeof(fake));
	open_fds(fds, 3);
	cr_expect_eq(serve(&e, 3, fds, &tg).err, 0);
	cr_expect_not(fake.wants_tg);
	cr_expect_null(tg);
	cr_expect_eq(fake.umask, -1);
}

Test(control, spawn_errors_are_returned_and_the_fds_closed)
{
	struct control_exec e = { 0 };
	struct thread_group *tg = NULL;
	int fds[3];

	memset(&fake, 0, sizeof(fake));
	fake.ret = -ENOENT;
	open_fds(fds, 3);
	cr_expect_eq(serve(&e, 3, fds, &tg).err, -ENOENT);
	cr_expect_null(tg);
	errno = 0;
	cr_expect_eq(fcntl(fds[2], F_GETFD), -1);
	cr_expect_eq(errno, EBADF);
}

Test(control, a_tty_exec_takes_one_fd_and_a_plain_one_three)
{
	struct control_exec tty = { .flags = CONTROL_EXEC_TTY };
	struct control_exec plain = { 0 };
	int fds[3];

	memset(&fake, 0, sizeof(fake));
	open_fds(fds, 1);
	cr_expect_eq(serve(&tty, 1, fds, NULL).err, 0);
	cr_expect_eq(fake.calls, 1);
	cr_expect_eq(fake.stdio_ok, 3);
	open_fds(fds, 1);
	cr_expect_eq(serve(&plain, 1, fds, NULL).err, -EINVAL);
	cr_expect_eq(fake.calls, 1);
	open_fds(fds, 2);
	cr_expect_eq(serve(&tty, 2, fds, NULL).err, -EINVAL);
	cr_expect_eq(fake.calls, 1);
}
