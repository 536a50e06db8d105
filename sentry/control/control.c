/* SPDX-License-Identifier: Apache-2.0 */
/* Control requests served by the sentry (see control.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/control.h"
#include "sentry/control/control.h"
#include "sentry/kernel/cred.h"
#include "sentry/kernel/task.h"

int control_serve(struct kernel *k, const void *msg, size_t len, int *fds, int nfds, void *reply,
		  struct thread_group **tg_out)
{
	return control_serve_member(k, NULL, msg, len, fds, nfds, reply, tg_out);
}

int control_serve_member(struct kernel *k, struct control_member *m, const void *msg, size_t len,
			 int *fds, int nfds, void *reply, struct thread_group **tg_out)
{
	struct control_hdr h = { .magic = CONTROL_MAGIC,
				 .version = CONTROL_VERSION,
				 .op = CONTROL_REPLY,
				 .len = sizeof(struct control_reply) };
	struct control_reply r = { 0 };
	struct control_exec_req req;
	int32_t pid = 0;
	int nstdio = 3;

	if (tg_out)
		*tg_out = NULL;
	r.err = control_decode_exec(msg, len, &req);
	if (!r.err && (req.e.flags & CONTROL_EXEC_TTY))
		nstdio = 1;
	/* stdio (3 fds, or one pty slave), then exactly the preserved fds the request counts. */
	if (!r.err && (nfds < 0 || (uint32_t)nfds != (uint32_t)nstdio + req.e.npreserve))
		r.err = -EINVAL;
	/* The process's ids must be in the sandbox's mappings (runc exec cannot set others). */
	if (!r.err) {
		struct task probe = { .k = k };

		if (!cred_id_valid(&probe, false, req.e.uid) ||
		    !cred_id_valid(&probe, true, req.e.gid))
			r.err = -EINVAL;
		for (uint32_t i = 0; !r.err && i < req.e.ngroups && i < 32; i++)
			if (!cred_id_valid(&probe, true, req.e.groups[i]))
				r.err = -EINVAL;
	}
	if (!r.err) {
		struct spawn_spec s = {
			.argv = req.args,
			.envp = req.env,
			.cwd = req.cwd,
			.uid = req.e.uid,
			.gid = req.e.gid,
			.ngroups = (int)req.e.ngroups,
			.groups = req.e.groups,
			.umask = req.e.umask == 0xffffffffu ? -1 : (int32_t)(req.e.umask & 0777),
			.has_oom_score_adj = (req.e.flags & CONTROL_EXEC_OOM_SCORE_ADJ) != 0,
			.oom_score_adj = req.e.oom_score_adj,
			.stdio = { fds[0], fds[nstdio > 1 ? 1 : 0], fds[nstdio > 2 ? 2 : 0] },
			.npreserve = (int)req.e.npreserve,
			.preserve = fds + nstdio,
			.pid_out = &pid,
			.tg_out = (req.e.flags & CONTROL_EXEC_DETACH) ? NULL : tg_out,
			.member = m,
		};

		r.err = kernel_spawn(k, &s);
		r.pid = pid;
	}
	free(req.args);
	free(req.env);
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	memcpy(reply, &h, sizeof(h));
	memcpy((char *)reply + sizeof(h), &r, sizeof(r));
	return (int)(sizeof(h) + sizeof(r));
}

int control_serve_signal(struct kernel *k, const void *msg, size_t len, void *reply)
{
	struct control_hdr h = { .magic = CONTROL_MAGIC,
				 .version = CONTROL_VERSION,
				 .op = CONTROL_REPLY,
				 .len = sizeof(struct control_reply) };
	struct control_reply r = { 0 };
	struct control_signal s;

	r.err = control_decode_signal(msg, len, &s);
	if (!r.err) {
		r.err = control_send_signal(k, s.pid, s.sig);
		r.pid = s.pid;
	}
	memcpy(reply, &h, sizeof(h));
	memcpy((char *)reply + sizeof(h), &r, sizeof(r));
	return (int)(sizeof(h) + sizeof(r));
}
