/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk serve: the files endpoints. Every one runs /.husk/husk-agent in the sandbox (so paths
 * resolve inside it, through its mounts and symlinks) and maps the agent's exit code to HTTP:
 * 0 ok, 2 bad usage or path (400), 3 not found (404), 4 not a directory / is a directory (400),
 * 5 no space (507), 6 permission (403), anything else 500. Uploads stream into the agent's
 * stdin as they arrive; downloads stream from its stdout.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <microhttpd.h>

#include "common/cleanup.h"
#include "runtime/serve/serve.h"

#define AGENT "/.husk/husk-agent"

static unsigned agent_status(int code)
{
	switch (code) {
	case 0:
		return 200;
	case 2:
	case 4:
		return 400;
	case 3:
		return 404;
	case 5:
		return 507;
	case 6:
		return 403;
	default:
		return 500;
	}
}

/* The agent's error for a reply: its stderr's first line, or a default. */
static int agent_error(struct MHD_Connection *conn, int status, const char *what, const char *path,
		       const char *err)
{
	int code = status & 0x7f ? -1 : (status >> 8) & 0xff;
	char msg[512];
	size_t l;

	snprintf(msg, sizeof(msg), "%s", err ? err : "");
	l = strcspn(msg, "\n");
	msg[l] = 0;
	if (!*msg)
		snprintf(msg, sizeof(msg), "husk-agent %s %s: exit status %d", what, path, code);
	return serve_reply_error(conn, agent_status(code), "%s", msg);
}

static int need_agent(struct MHD_Connection *conn)
{
	return serve_reply_error(
		conn, 500, "husk-agent was not found next to husk: the files endpoints need it");
}

static int check_path(struct MHD_Connection *conn, const char **path, struct serve_err *e)
{
	*path = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "path");
	return serve_check_guest_path(*path, e);
}

/* A download: the agent's stdout, streamed. */
struct download {
	struct sandbox *sb;
	int out, err, sock, pid;
};

static ssize_t download_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct download *d = cls;
	ssize_t n;

	do
		n = read(d->out, buf, max);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		return n;
	return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void download_free(void *cls)
{
	struct download *d = cls;

	close(d->out);
	close(d->err);
	/* A client that left early: the agent stops on EPIPE, or here. */
	exec_kill(d->sb, d->pid);
	exec_wait(d->sock);
	close(d->sock);
	sandbox_leave(d->sb);
	sandbox_put(d->sb);
	free(d);
}

static int stream_agent(struct MHD_Connection *conn, struct sandbox *sb, const char *what,
			const char *path, const char *type)
{
	char *argv[] = { AGENT, (char *)what, (char *)path, NULL };
	struct exec_spec s = { .argv = argv, .cwd = "/" };
	struct download *d = calloc(1, sizeof(*d));
	struct MHD_Response *r;
	int in = -1, ret;

	if (!d)
		return MHD_NO;
	ret = exec_start(sb, &s, false, &in, &d->out, &d->err, &d->sock, &d->pid);
	if (ret < 0) {
		free(d);
		sandbox_leave(sb);
		return serve_reply_error(conn, 500, "cannot run husk-agent in %s: %s", sb->id,
					 strerror(-ret));
	}
	d->sb = sb;
	sandbox_get(sb);
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 65536, download_read, d,
					      download_free);
	if (!r) {
		download_free(d);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(conn, 200, r);
	MHD_destroy_response(r);
	return ret;
}

int route_files(struct MHD_Connection *conn, struct sandbox *sb, const char *what)
{
	struct serve_err e = { 0 };
	const char *path;
	char *argv[] = { AGENT, "stat", NULL, NULL };
	char err[1024];
	_cleanup_free_ char *out = NULL;
	size_t outlen = 0;
	int status, ret;
	json_t *st;

	if (check_path(conn, &path, &e) < 0)
		return serve_reply_error(conn, e.status, "%s", e.msg);
	if (!serve.agent)
		return need_agent(conn);
	if (sandbox_enter(sb, &e) < 0)
		return serve_reply_error(conn, e.status, "%s", e.msg);
	argv[1] = !strcmp(what, "ls") ? "ls" : "stat";
	argv[2] = (char *)path;
	status = exec_simple(sb, argv, NULL, 0, &out, &outlen, err, sizeof(err));
	if (status < 0) {
		sandbox_leave(sb);
		return serve_reply_error(conn, 500, "cannot run husk-agent in %s: %s", sb->id,
					 strerror(-status));
	}
	if (status != 0) {
		sandbox_leave(sb);
		return agent_error(conn, status, argv[1], path, err);
	}
	st = json_loadb(out ? out : "", outlen, 0, NULL);
	if (!json_is_object(st)) {
		json_decref(st);
		sandbox_leave(sb);
		return serve_reply_error(conn, 500, "husk-agent %s %s: unreadable answer", argv[1],
					 path);
	}
	if (!strcmp(what, "stat") || !strcmp(what, "ls")) {
		sandbox_leave(sb);
		return serve_reply_json(conn, 200, st);
	}
	if (!strcmp(what, "get")) {
		const char *type = json_string_value(json_object_get(st, "type"));

		if (type && !strcmp(type, "dir")) {
			json_decref(st);
			sandbox_leave(sb);
			return serve_reply_error(conn, 400, "%s is a directory", path);
		}
		json_decref(st);
		/* stream_agent leaves the sandbox when the download ends. */
		return stream_agent(conn, sb, "get", path, "application/octet-stream");
	}
	json_decref(st);
	ret = stream_agent(conn, sb, "tar-c", path, "application/x-tar");
	return ret;
}

/* --- uploads --- */

struct upload {
	struct sandbox *sb;
	const char *what; /* "put" or "tar-x" */
	char *path;
	int in, out, err, sock, pid;
	uint64_t size;
	bool too_large, broken;
};

struct upload *upload_begin(struct MHD_Connection *conn, const char *id, const char *what,
			    struct serve_err *e)
{
	const char *path, *mode, *clen;
	struct sandbox *sb;
	struct upload *u;
	char *argv[5] = { AGENT, (char *)what, NULL, NULL, NULL };
	struct exec_spec s = { .argv = argv, .cwd = "/" };
	int ret;

	sb = sandbox_lookup(id);
	if (!sb) {
		serve_err_set(e, 404, "no such sandbox: %s", id);
		return NULL;
	}
	if (check_path(conn, &path, e) < 0) {
		sandbox_put(sb);
		return NULL;
	}
	mode = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "mode");
	if (mode && (!strcmp(what, "tar-x") || strspn(mode, "01234567") != strlen(mode) ||
		     strlen(mode) < 3 || strlen(mode) > 4)) {
		serve_err_set(e, 400, "mode %s: expected an octal mode such as 0644", mode);
		sandbox_put(sb);
		return NULL;
	}
	clen = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (clen && strtoull(clen, NULL, 10) > serve.max_upload) {
		serve_err_set(e, 413, "the body is larger than --max-upload (%llu bytes)",
			      (unsigned long long)serve.max_upload);
		sandbox_put(sb);
		return NULL;
	}
	if (!serve.agent) {
		serve_err_set(e, 500, "husk-agent was not found next to husk");
		sandbox_put(sb);
		return NULL;
	}
	if (sandbox_enter(sb, e) < 0) {
		sandbox_put(sb);
		return NULL;
	}
	argv[2] = (char *)path;
	argv[3] = (char *)mode;
	u = calloc(1, sizeof(*u));
	if (!u)
		abort();
	u->sb = sb;
	u->what = what;
	u->path = strdup(path);
	ret = exec_start(sb, &s, true, &u->in, &u->out, &u->err, &u->sock, &u->pid);
	if (ret < 0) {
		serve_err_set(e, 500, "cannot run husk-agent in %s: %s", sb->id, strerror(-ret));
		sandbox_leave(sb);
		sandbox_put(sb);
		free(u->path);
		free(u);
		return NULL;
	}
	return u;
}

int upload_feed(struct upload *u, const char *data, size_t len)
{
	if (u->broken || u->too_large)
		return -1;
	u->size += len;
	if (u->size > serve.max_upload) {
		u->too_large = true;
		exec_kill(u->sb, u->pid);
		return -1;
	}
	while (len) {
		ssize_t n = write(u->in, data, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* The agent stopped reading (an error it will tell at the end). */
			u->broken = true;
			return -1;
		}
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads the agent's stdout and stderr to EOF, then its status. */
static int upload_collect(struct upload *u, char *out, size_t outsize, char *err, size_t errsize)
{
	size_t ol = 0, el = 0;
	int fds[2] = { u->out, u->err };

	out[0] = err[0] = 0;
	while (fds[0] >= 0 || fds[1] >= 0) {
		struct pollfd p[2];
		int n = 0;

		for (int i = 0; i < 2; i++)
			if (fds[i] >= 0)
				p[n++] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
		if (poll(p, (nfds_t)n, -1) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++) {
			char tmp[4096];
			ssize_t r;
			int which = p[i].fd == fds[0] ? 0 : 1;

			if (!p[i].revents)
				continue;
			r = read(p[i].fd, tmp, sizeof(tmp));
			if (r <= 0) {
				close(p[i].fd);
				fds[which] = -1;
				continue;
			}
			if (which == 0 && ol + (size_t)r < outsize) {
				memcpy(out + ol, tmp, (size_t)r);
				out[ol += (size_t)r] = 0;
			} else if (which == 1 && el + (size_t)r < errsize) {
				memcpy(err + el, tmp, (size_t)r);
				err[el += (size_t)r] = 0;
			}
		}
	}
	u->out = u->err = -1;
	return exec_wait(u->sock);
}

static void upload_free(struct upload *u)
{
	if (u->in >= 0)
		close(u->in);
	if (u->out >= 0)
		close(u->out);
	if (u->err >= 0)
		close(u->err);
	close(u->sock);
	sandbox_leave(u->sb);
	sandbox_put(u->sb);
	free(u->path);
	free(u);
}

int upload_finish(struct MHD_Connection *conn, struct upload *u)
{
	char out[4096], err[1024];
	int status, ret;

	close(u->in);
	u->in = -1;
	status = upload_collect(u, out, sizeof(out), err, sizeof(err));
	if (u->too_large)
		ret = serve_reply_error(conn, 413,
					"the body is larger than --max-upload (%llu bytes)",
					(unsigned long long)serve.max_upload);
	else if (status < 0)
		ret = serve_reply_error(conn, 409, "the sandbox stopped during the upload");
	else if (status != 0)
		ret = agent_error(conn, status, u->what, u->path, err);
	else if (!strcmp(u->what, "put"))
		ret = serve_reply_json(conn, 201,
				       json_pack("{s:s,s:I}", "path", u->path, "size",
						 (json_int_t)u->size));
	else {
		json_t *o = json_loads(out, 0, NULL);
		json_t *files = json_object_get(o, "files");

		ret = serve_reply_json(conn, 200,
				       json_pack("{s:s,s:I}", "path", u->path, "files",
						 (json_int_t)(json_is_integer(files) ?
								      json_integer_value(files) :
								      0)));
		json_decref(o);
	}
	upload_free(u);
	return ret;
}

void upload_abort(struct upload *u)
{
	char out[64], err[64];

	exec_kill(u->sb, u->pid);
	close(u->in);
	u->in = -1;
	upload_collect(u, out, sizeof(out), err, sizeof(err));
	upload_free(u);
}
