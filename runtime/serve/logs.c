/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk serve: kept logs. STATE/logs/ID holds, per sandbox: index.ndjson (one line per exec),
 * <exec_id>.ndjson (its events, the exit event last), ID.sentry.log (the sentry's own log,
 * through the dev.husk.debug-log annotation), husk.log (what the husk CLI said) and, once the
 * sandbox is deleted, "deleted" (its time): the folder goes --keep-logs later.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <microhttpd.h>

#include "common/cleanup.h"
#include "runtime/serve/serve.h"

static pthread_mutex_t index_lock = PTHREAD_MUTEX_INITIALIZER;

void logs_index_append(const char *logdir, json_t *entry)
{
	_cleanup_free_ char *path = NULL;
	char *line = json_dumps(entry, JSON_COMPACT);
	FILE *f;

	if (!line || asprintf(&path, "%s/index.ndjson", logdir) < 0) {
		free(line);
		return;
	}
	pthread_mutex_lock(&index_lock);
	f = fopen(path, "ae");
	if (f) {
		fprintf(f, "%s\n", line);
		fclose(f);
	}
	pthread_mutex_unlock(&index_lock);
	free(line);
}

void logs_mark_deleted(const char *logdir)
{
	_cleanup_free_ char *path = NULL;
	FILE *f;

	if (asprintf(&path, "%s/deleted", logdir) < 0)
		return;
	f = fopen(path, "we");
	if (f) {
		fprintf(f, "%.3f\n", serve_now());
		fclose(f);
	}
}

/* When the sandbox of logdir was deleted (unix time), or 0 if it was not. */
static double deleted_at(const char *logdir)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	double t = 0;

	if (asprintf(&path, "%s/deleted", logdir) < 0)
		return 0;
	f = fopen(path, "re");
	if (!f || fscanf(f, "%lf", &t) != 1)
		return 0;
	return t;
}

void logs_expire(void)
{
	_cleanup_free_ char *dir = NULL;
	DIR *d;
	struct dirent *de;
	double now = serve_now();

	if (asprintf(&dir, "%s/logs", serve.state_dir) < 0)
		return;
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		_cleanup_free_ char *p = NULL;
		double t;

		if (strncmp(de->d_name, "sb-", 3))
			continue;
		if (asprintf(&p, "%s/%s", dir, de->d_name) < 0)
			continue;
		t = deleted_at(p);
		if (t > 0 && now - t >= serve.keep_logs_s)
			serve_rmtree(p);
	}
	closedir(d);
}

static bool id_valid(const char *prefix, const char *id)
{
	size_t pl = strlen(prefix);

	return !strncmp(id, prefix, pl) && strlen(id) == pl + 12 &&
	       strspn(id + pl, "0123456789abcdef") == 12;
}

static int reply_file(struct MHD_Connection *conn, const char *path, const char *type)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	struct MHD_Response *r;
	int ret;

	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return serve_reply_error(conn, 404, "no such log");
	}
	r = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
	if (!r) {
		close(fd);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(conn, 200, r);
	MHD_destroy_response(r);
	return ret;
}

int route_logs(struct MHD_Connection *conn, const char *id, char **seg, int nseg)
{
	_cleanup_free_ char *logdir = NULL, *path = NULL;
	struct stat st;

	if (!id_valid("sb-", id))
		return serve_reply_error(conn, 404, "no such sandbox: %s", id);
	if (asprintf(&logdir, "%s/logs/%s", serve.state_dir, id) < 0)
		return MHD_NO;
	if (stat(logdir, &st) < 0)
		return serve_reply_error(conn, 404, "no logs for %s (never existed, or expired)",
					 id);
	if (nseg == 0) {
		_cleanup_free_ char *ip = NULL;
		_cleanup_fclose_ FILE *f = NULL;
		json_t *execs = json_array();
		char *line = NULL;
		size_t cap = 0;

		if (asprintf(&ip, "%s/index.ndjson", logdir) < 0)
			return MHD_NO;
		f = fopen(ip, "re");
		while (f && getline(&line, &cap, f) > 0) {
			json_t *e = json_loads(line, 0, NULL);

			if (json_is_object(e))
				json_array_append_new(execs, e);
			else
				json_decref(e);
		}
		free(line);
		return serve_reply_json(conn, 200,
					json_pack("{s:s,s:b,s:o}", "id", id, "deleted",
						  deleted_at(logdir) > 0, "execs", execs));
	}
	if (nseg != 1)
		return serve_reply_error(conn, 404, "no such endpoint");
	if (!strcmp(seg[0], "sandbox")) {
		if (asprintf(&path, "%s/%s.sentry.log", logdir, id) < 0)
			return MHD_NO;
		if (access(path, F_OK) < 0)
			return serve_reply_bytes(conn, 200, "text/plain; charset=utf-8", "", 0);
		return reply_file(conn, path, "text/plain; charset=utf-8");
	}
	if (!id_valid("ex-", seg[0]))
		return serve_reply_error(conn, 404, "no such exec: %s", seg[0]);
	if (asprintf(&path, "%s/%s.ndjson", logdir, seg[0]) < 0)
		return MHD_NO;
	return reply_file(conn, path, "application/x-ndjson");
}
