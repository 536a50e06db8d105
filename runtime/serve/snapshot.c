/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk serve: snapshots, templates and forks (sentry/state/README.md). A snapshot is
 * `husk checkpoint --leave-running` into STATE/templates/NAME (plus template.json: its
 * creation time and the request its sandbox was made from); a sandbox made from a template is
 * `husk restore` of it with a bundle made from that request. A fork is a snapshot into a
 * temporary folder restored count times, then removed (restored sandboxes hold their pages
 * file open).
 */
#include <errno.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <microhttpd.h>

#include "common/cleanup.h"
#include "common/fsutil.h"
#include "runtime/serve/serve.h"
#include "sentry/state/names.h"

static bool name_valid(const char *name)
{
	size_t n = strlen(name);

	return n > 0 && n <= 64 && name[0] != '.' && name[0] != '-' &&
	       strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") ==
		       n;
}

static char *template_dir(const char *name)
{
	char *p;

	if (asprintf(&p, "%s/templates/%s", serve.state_dir, name) < 0)
		return NULL;
	return p;
}

int template_image(const char *name, char **path, struct serve_err *e)
{
	_cleanup_free_ char *dir = NULL, *img = NULL;

	if (!name_valid(name)) {
		serve_err_set(e, 400, "template \"%s\": a name is [A-Za-z0-9_.-], at most 64",
			      name);
		return -1;
	}
	dir = template_dir(name);
	if (!dir || asprintf(&img, "%s/%s", dir, STATE_IMAGE_FILE) < 0) {
		serve_err_set(e, 500, "out of memory");
		return -1;
	}
	if (access(img, F_OK) < 0) {
		serve_err_set(e, 404, "no such template: %s", name);
		return -1;
	}
	*path = steal_pointer(&dir);
	return 0;
}

static uint64_t file_size(const char *dir, const char *name)
{
	_cleanup_free_ char *p = NULL;
	struct stat st;

	if (asprintf(&p, "%s/%s", dir, name) < 0 || stat(p, &st) < 0)
		return 0;
	return (uint64_t)st.st_size;
}

/* Checkpoints sb into dir (left running). Returns 0 or -1 with e set. */
static int checkpoint_into(struct sandbox *sb, const char *dir, struct serve_err *e)
{
	_cleanup_free_ char *logfile = NULL;
	int ret;

	if (husk_mkdir_p(dir, 0700) < 0) {
		serve_err_set(e, 500, "%s: cannot make it", dir);
		return -1;
	}
	if (sandbox_enter(sb, e) < 0)
		return -1;
	if (asprintf(&logfile, "%s/husk.log", sb->logdir) < 0)
		abort();
	ret = sandbox_husk(logfile, (const char *const[]){ "checkpoint", "--leave-running",
							   "--image-path", dir, sb->id, NULL });
	sandbox_leave(sb);
	if (ret != 0) {
		serve_err_set(e, 500, "the checkpoint of %s failed (its log: GET logs/sandbox)",
			      sb->id);
		return -1;
	}
	return 0;
}

int route_snapshot(struct MHD_Connection *conn, struct sandbox *sb, const char *body, size_t len)
{
	static const char *const fields[] = { "template", NULL };
	struct serve_err e = { 0 };
	json_auto_t *req = serve_parse_body(body, len, &e);
	const char *name = NULL;
	_cleanup_free_ char *dir = NULL, *tmp = NULL, *meta = NULL;
	json_t *rec;
	char created[40];
	double now = serve_now();

	if (!req || serve_check_fields(req, "", fields, &e) < 0 ||
	    serve_get_string(req, "", "template", &name, &e) < 0)
		return serve_reply_error(conn, e.status, "%s", e.msg);
	if (!name || !name_valid(name))
		return serve_reply_error(conn, 400,
					 "field \"template\": a name [A-Za-z0-9_.-] is required");
	dir = template_dir(name);
	if (!dir || asprintf(&tmp, "%s.tmp-%s", dir, sb->id) < 0)
		return MHD_NO;
	serve_rmtree(tmp);
	if (checkpoint_into(sb, tmp, &e) < 0) {
		serve_rmtree(tmp);
		return serve_reply_error(conn, e.status, "%s", e.msg);
	}
	pthread_mutex_lock(&sb->lock);
	rec = json_pack("{s:s,s:f,s:s,s:O}", "name", name, "created", now, "source", sb->id,
			"request", json_object_get(sb->rec, "request"));
	pthread_mutex_unlock(&sb->lock);
	if (asprintf(&meta, "%s/template.json", tmp) < 0 || serve_write_json(meta, rec) < 0) {
		json_decref(rec);
		serve_rmtree(tmp);
		return serve_reply_error(conn, 500, "cannot write the template's record");
	}
	json_decref(rec);
	/* Sandboxes restored from an older one hold its files open: replacing is safe. */
	serve_rmtree(dir);
	if (rename(tmp, dir) < 0) {
		serve_rmtree(tmp);
		return serve_reply_error(conn, 500, "%s: %s", dir, strerror(errno));
	}
	serve_time(now, created, sizeof(created));
	return serve_reply_json(conn, 201,
				json_pack("{s:s,s:I,s:I}", "template", name, "image_bytes",
					  (json_int_t)file_size(dir, STATE_IMAGE_FILE),
					  "pages_bytes",
					  (json_int_t)file_size(dir, STATE_PAGES_FILE)));
}

/* The request a template's sandbox was made from (a new reference), or NULL. */
json_t *template_request(const char *name)
{
	_cleanup_free_ char *dir = template_dir(name), *meta = NULL;
	json_t *rec, *req;

	if (!dir || asprintf(&meta, "%s/template.json", dir) < 0)
		return NULL;
	rec = json_load_file(meta, 0, NULL);
	req = json_incref(json_object_get(rec, "request"));
	json_decref(rec);
	return req;
}

int route_fork(struct MHD_Connection *conn, struct sandbox *sb, const char *body, size_t len)
{
	static const char *const fields[] = { "count", "labels", NULL };
	struct serve_err e = { 0 };
	json_auto_t *req = serve_parse_body(body, len, &e);
	json_t *labels = NULL, *out;
	int64_t count = 1;
	_cleanup_free_ char *dir = NULL;
	char tag[16];

	if (!req || serve_check_fields(req, "", fields, &e) < 0 ||
	    serve_get_int(req, "", "count", 1, 64, &count, &e) < 0 ||
	    serve_get_strmap(req, "", "labels", &labels, &e) < 0)
		return serve_reply_error(conn, e.status, "%s", e.msg);
	serve_new_id("fk-", tag, sizeof(tag));
	if (asprintf(&dir, "%s/forks/%s", serve.state_dir, tag) < 0)
		return MHD_NO;
	if (checkpoint_into(sb, dir, &e) < 0) {
		serve_rmtree(dir);
		return serve_reply_error(conn, e.status, "%s", e.msg);
	}
	out = json_array();
	for (int64_t i = 0; i < count; i++) {
		struct sandbox *n = sandbox_fork_one(sb, dir, labels, &e);

		if (!n) {
			/* The ones made so far stay; the caller learns of the failure. */
			size_t j;
			json_t *x;

			json_array_foreach(out, j, x)
			{
				struct sandbox *m =
					sandbox_lookup(json_string_value(json_object_get(x, "id")));

				if (m) {
					sandbox_delete(m);
					sandbox_put(m);
				}
			}
			json_decref(out);
			serve_rmtree(dir);
			return serve_reply_error(conn, e.status, "fork %lld of %lld: %s",
						 (long long)i + 1, (long long)count, e.msg);
		}
		json_array_append_new(out, sandbox_json(n));
		sandbox_put(n);
	}
	serve_rmtree(dir);
	return serve_reply_json(conn, 201, json_pack("{s:o}", "sandboxes", out));
}

int route_templates(struct MHD_Connection *conn, const char *method, char **seg, int nseg,
		    const char *body, size_t len)
{
	_cleanup_free_ char *root = NULL;

	if (asprintf(&root, "%s/templates", serve.state_dir) < 0)
		return MHD_NO;
	if (nseg == 0) {
		json_t *a = json_array();
		DIR *d;
		struct dirent *de;

		if (strcmp(method, "GET")) {
			json_decref(a);
			return serve_reply_error(conn, 405, "%s /v1/templates: use GET", method);
		}
		d = opendir(root);
		while (d && (de = readdir(d))) {
			_cleanup_free_ char *dir = NULL, *meta = NULL;
			json_t *rec;
			char created[40];

			if (!name_valid(de->d_name) || strstr(de->d_name, ".tmp-"))
				continue;
			if (asprintf(&dir, "%s/%s", root, de->d_name) < 0 ||
			    asprintf(&meta, "%s/template.json", dir) < 0)
				continue;
			rec = json_load_file(meta, 0, NULL);
			if (!rec)
				continue;
			json_array_append_new(
				a, json_pack("{s:s,s:s,s:I,s:I}", "name", de->d_name, "created",
					     serve_time(json_number_value(
								json_object_get(rec, "created")),
							created, sizeof(created)),
					     "image_bytes",
					     (json_int_t)file_size(dir, STATE_IMAGE_FILE),
					     "pages_bytes",
					     (json_int_t)file_size(dir, STATE_PAGES_FILE)));
			json_decref(rec);
		}
		if (d)
			closedir(d);
		return serve_reply_json(conn, 200, json_pack("{s:o}", "templates", a));
	}
	if (nseg == 1) {
		_cleanup_free_ char *img = NULL;
		struct serve_err e = { 0 };

		if (strcmp(method, "DELETE"))
			return serve_reply_error(conn, 405, "%s /v1/templates/NAME: use DELETE",
						 method);
		if (template_image(seg[0], &img, &e) < 0)
			return serve_reply_error(conn, e.status, "%s", e.msg);
		serve_rmtree(img);
		return serve_reply_empty(conn, 204);
	}
	return serve_reply_error(conn, 404, "no such endpoint");
}
