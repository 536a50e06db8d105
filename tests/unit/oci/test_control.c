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
	int npreserve, preserve_ok; /* the preserved fds: how many, and how many open */
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
	fake.npreserve = s->npreserve;
	fake.preserve_ok = 0;
	for (int i = 0; i < s->npreserve; i++)
		fake.preserve_ok += fcntl(s->preserve[i], F_GETFD) >= 0;
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

Test(control, a_request_counts_its_preserved_fds_after_stdio)
{
	struct control_exec e = { .npreserve = 2 };
	struct control_exec tty = { .flags = CONTROL_EXEC_TTY, .npreserve = 1 };
	int fds[5];

	memset(&fake, 0, sizeof(fake));
	open_fds(fds, 5);
	cr_expect_eq(serve(&e, 5, fds, NULL).err, 0);
	cr_expect_eq(fake.calls, 1);
	cr_expect_eq(fake.npreserve, 2);
	cr_expect_eq(fake.preserve_ok, 2);
	open_fds(fds, 2);
	cr_expect_eq(serve(&tty, 2, fds, NULL).err, 0);
	cr_expect_eq(fake.npreserve, 1);
	cr_expect_eq(fake.stdio_ok, 3);
	/* One fd short, or one too many: refused before kernel_spawn. */
	open_fds(fds, 4);
	cr_expect_eq(serve(&e, 4, fds, NULL).err, -EINVAL);
	open_fds(fds, 3);
	cr_expect_eq(serve(&tty, 3, fds, NULL).err, -EINVAL);
	cr_expect_eq(fake.calls, 2);
	/* More than the protocol carries. */
	e.npreserve = CONTROL_MAX_PRESERVE + 1;
	open_fds(fds, 3);
	cr_expect_eq(serve(&e, 3, fds, NULL).err, -EINVAL);
	cr_expect_eq(fake.calls, 2);
}

/* A fake control_send_signal: control_serve_signal decodes and hands over. */
static struct {
	int calls;
	int32_t pid;
	int sig;
	int ret;
} fake_sig;

int control_send_signal(struct kernel *k, int32_t pid, int sig)
{
	fake_sig.calls++;
	fake_sig.pid = pid;
	fake_sig.sig = sig;
	return fake_sig.ret;
}

static struct control_reply serve_signal(const void *msg, size_t len)
{
	char reply[64];
	struct control_hdr h;
	struct control_reply r;

	cr_assert_eq(control_serve_signal(NULL, msg, len, reply), sizeof(h) + sizeof(r));
	memcpy(&h, reply, sizeof(h));
	memcpy(&r, reply + sizeof(h), sizeof(r));
	cr_expect_eq(h.op, CONTROL_REPLY);
	cr_expect_eq(h.len, sizeof(r));
	return r;
}

Test(control, signal_request_round_trips_and_reaches_the_process)
{
	char msg[CONTROL_SIGNAL_MSG_LEN];
	struct control_signal s;
	size_t len = control_encode_signal(12, 15, msg);

	cr_assert_eq(len, CONTROL_SIGNAL_MSG_LEN);
	cr_assert_eq(control_decode_signal(msg, len, &s), 0);
	cr_expect_eq(s.pid, 12);
	cr_expect_eq(s.sig, 15);
	memset(&fake_sig, 0, sizeof(fake_sig));
	cr_expect_eq(serve_signal(msg, len).err, 0);
	cr_expect_eq(fake_sig.calls, 1);
	cr_expect_eq(fake_sig.pid, 12);
	cr_expect_eq(fake_sig.sig, 15);
	fake_sig.ret = -ESRCH;
	cr_expect_eq(serve_signal(msg, len).err, -ESRCH);
	/* pid -1 is every process. */
	len = control_encode_signal(-1, 9, msg);
	cr_expect_eq(serve_signal(msg, len).err, -ESRCH);
	cr_expect_eq(fake_sig.pid, -1);
}

Test(control, truncated_or_garbage_signal_requests_are_rejected)
{
	char msg[CONTROL_SIGNAL_MSG_LEN + 8];
	char garbage[CONTROL_SIGNAL_MSG_LEN];
	struct control_signal s;
	size_t len = control_encode_signal(3, 2, msg);

	memset(&fake_sig, 0, sizeof(fake_sig));
	for (size_t n = 0; n < len; n++) {
		cr_expect_eq(control_decode_signal(msg, n, &s), -EINVAL, "%zu bytes", n);
		cr_expect_eq(serve_signal(msg, n).err, -EINVAL, "%zu bytes", n);
	}
	cr_expect_eq(control_decode_signal(msg, len + 1, &s), -EINVAL);
	for (size_t i = 0; i < sizeof(garbage); i++)
		garbage[i] = (char)(i * 37 + 11);
	cr_expect_eq(serve_signal(garbage, sizeof(garbage)).err, -EINVAL);
	/* A well-framed exec header is not a signal request. */
	{
		struct control_hdr h;

		memcpy(&h, msg, sizeof(h));
		h.op = CONTROL_EXEC;
		memcpy(msg, &h, sizeof(h));
		cr_expect_eq(control_decode_signal(msg, len, &s), -EINVAL);
	}
	/* Out-of-range pids and signals. */
	len = control_encode_signal(0, 15, msg);
	cr_expect_eq(control_decode_signal(msg, len, &s), -EINVAL);
	len = control_encode_signal(-2, 15, msg);
	cr_expect_eq(control_decode_signal(msg, len, &s), -EINVAL);
	len = control_encode_signal(5, 0, msg);
	cr_expect_eq(control_decode_signal(msg, len, &s), -EINVAL);
	len = control_encode_signal(5, 65, msg);
	cr_expect_eq(control_decode_signal(msg, len, &s), -EINVAL);
	cr_expect_eq(fake_sig.calls, 0);
}
