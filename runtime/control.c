/* SPDX-License-Identifier: Apache-2.0 */
/* The control protocol's codec (see control.h). Linked by husk and by the sentry. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/control.h"

void *control_encode_exec(const struct control_exec *e, const char *cwd, char *const *args,
			  char *const *env, size_t *len)
{
	size_t n = sizeof(struct control_hdr) + sizeof(*e) + strlen(cwd) + 1;
	struct control_hdr h = { .magic = CONTROL_MAGIC,
				 .version = CONTROL_VERSION,
				 .op = CONTROL_EXEC };
	struct control_exec ex = *e;
	char *buf, *p;

	ex.nargs = ex.nenv = 0;
	for (char *const *a = args; *a; a++, ex.nargs++)
		n += strlen(*a) + 1;
	for (char *const *a = env; *a; a++, ex.nenv++)
		n += strlen(*a) + 1;
	if (n > CONTROL_MAX_MSG) {
		errno = E2BIG;
		return NULL;
	}
	buf = malloc(n);
	if (!buf)
		return NULL;
	h.len = (uint32_t)(n - sizeof(h));
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), &ex, sizeof(ex));
	p = buf + sizeof(h) + sizeof(ex);
	p = stpcpy(p, cwd) + 1;
	for (char *const *a = args; *a; a++)
		p = stpcpy(p, *a) + 1;
	for (char *const *a = env; *a; a++)
		p = stpcpy(p, *a) + 1;
	*len = n;
	return buf;
}

/* The next NUL-terminated string at *p before end, or NULL. */
static const char *next_string(const char **p, const char *end)
{
	const char *s = *p;
	const char *nul = memchr(s, 0, (size_t)(end - s));

	if (!nul)
		return NULL;
	*p = nul + 1;
	return s;
}

int control_decode_exec(const void *msg, size_t len, struct control_exec_req *req)
{
	const struct control_hdr *h = msg;
	const char *p, *end;

	memset(req, 0, sizeof(*req));
	if (len < sizeof(*h) + sizeof(req->e) || len > CONTROL_MAX_MSG)
		return -EINVAL;
	if (h->magic != CONTROL_MAGIC || h->version != CONTROL_VERSION || h->op != CONTROL_EXEC ||
	    h->len != len - sizeof(*h))
		return -EINVAL;
	memcpy(&req->e, (const char *)msg + sizeof(*h), sizeof(req->e));
	if (req->e.nargs == 0 || req->e.nargs > len || req->e.nenv > len || req->e.ngroups > 32 ||
	    req->e.npreserve > CONTROL_MAX_PRESERVE)
		return -EINVAL;
	if ((req->e.flags & CONTROL_EXEC_OOM_SCORE_ADJ) &&
	    (req->e.oom_score_adj < -1000 || req->e.oom_score_adj > 1000))
		return -EINVAL;
	p = (const char *)msg + sizeof(*h) + sizeof(req->e);
	end = (const char *)msg + len;
	req->args = calloc(req->e.nargs + 1, sizeof(char *));
	req->env = calloc(req->e.nenv + 1, sizeof(char *));
	if (!req->args || !req->env)
		goto bad;
	req->cwd = next_string(&p, end);
	if (!req->cwd || req->cwd[0] != '/')
		goto bad;
	for (uint32_t i = 0; i < req->e.nargs; i++) {
		req->args[i] = next_string(&p, end);
		if (!req->args[i])
			goto bad;
	}
	for (uint32_t i = 0; i < req->e.nenv; i++) {
		req->env[i] = next_string(&p, end);
		if (!req->env[i])
			goto bad;
	}
	if (p != end)
		goto bad;
	return 0;
bad:
	free(req->args);
	free(req->env);
	req->args = req->env = NULL;
	return -EINVAL;
}

size_t control_encode_signal(int32_t pid, int sig, void *buf)
{
	struct control_hdr h = { .magic = CONTROL_MAGIC,
				 .version = CONTROL_VERSION,
				 .op = CONTROL_SIGNAL,
				 .len = sizeof(struct control_signal) };
	struct control_signal s = { .pid = pid, .sig = sig };

	memcpy(buf, &h, sizeof(h));
	memcpy((char *)buf + sizeof(h), &s, sizeof(s));
	return CONTROL_SIGNAL_MSG_LEN;
}

int control_decode_signal(const void *msg, size_t len, struct control_signal *out)
{
	struct control_hdr h;

	memset(out, 0, sizeof(*out));
	if (len != CONTROL_SIGNAL_MSG_LEN)
		return -EINVAL;
	memcpy(&h, msg, sizeof(h));
	if (h.magic != CONTROL_MAGIC || h.version != CONTROL_VERSION || h.op != CONTROL_SIGNAL ||
	    h.len != sizeof(*out))
		return -EINVAL;
	memcpy(out, (const char *)msg + sizeof(h), sizeof(*out));
	if (out->pid == 0 || out->pid < -1 || out->sig < 1 || out->sig > 64) {
		memset(out, 0, sizeof(*out));
		return -EINVAL;
	}
	return 0;
}

int control_listen_fds(void)
{
	const char *fds = getenv("LISTEN_FDS"), *pid = getenv("LISTEN_PID");
	char *end;
	long n;

	if (!fds || !*fds || !pid || !*pid || strtol(pid, &end, 10) != getpid() || *end)
		return 0;
	n = strtol(fds, &end, 10);
	return *end || n <= 0 || n > CONTROL_MAX_PRESERVE ? 0 : (int)n;
}

int control_check_preserved(int n, int *bad)
{
	for (int i = 0; i < n; i++) {
		if (fcntl(3 + i, F_GETFD) < 0) {
			*bad = i;
			return -EBADF;
		}
	}
	return 0;
}
