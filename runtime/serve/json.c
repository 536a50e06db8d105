/* SPDX-License-Identifier: Apache-2.0 */
/* husk serve: request validation and small helpers (runtime/serve/serve.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "oci-spec/config.h"
#include "runtime/serve/serve.h"

void serve_err_set(struct serve_err *e, unsigned status, const char *fmt, ...)
{
	va_list ap;

	e->status = status;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
}

json_t *serve_parse_body(const char *body, size_t len, struct serve_err *e)
{
	json_error_t jerr;
	json_t *v;

	if (!body || len == 0)
		return json_object();
	v = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!v) {
		serve_err_set(e, 400, "the body is not valid JSON: %s (line %d, column %d)",
			      jerr.text, jerr.line, jerr.column);
		return NULL;
	}
	if (!json_is_object(v)) {
		json_decref(v);
		serve_err_set(e, 400, "the body must be a JSON object");
		return NULL;
	}
	return v;
}

static void field_name(char *buf, size_t size, const char *where, const char *key)
{
	if (where && *where)
		snprintf(buf, size, "%s.%s", where, key);
	else
		snprintf(buf, size, "%s", key);
}

int serve_check_fields(json_t *obj, const char *where, const char *const *allowed,
		       struct serve_err *e)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v)
	{
		bool ok = false;
		char name[256];

		for (const char *const *a = allowed; *a; a++)
			if (!strcmp(*a, key)) {
				ok = true;
				break;
			}
		if (!ok) {
			field_name(name, sizeof(name), where, key);
			serve_err_set(e, 400, "unknown field \"%s\"", name);
			return -1;
		}
	}
	return 0;
}

static int type_error(json_t *v, const char *where, const char *key, const char *want,
		      struct serve_err *e)
{
	char name[256];

	field_name(name, sizeof(name), where, key);
	serve_err_set(e, 400, "field \"%s\": expected %s, got %s", name, want, oci_json_kind(v));
	return -1;
}

int serve_get_string(json_t *obj, const char *where, const char *key, const char **out,
		     struct serve_err *e)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return 0;
	if (!json_is_string(v))
		return type_error(v, where, key, "a string", e);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return type_error(v, where, key, "a string without NUL", e);
	*out = json_string_value(v);
	return 0;
}

int serve_get_int(json_t *obj, const char *where, const char *key, int64_t min, int64_t max,
		  int64_t *out, struct serve_err *e)
{
	json_t *v = json_object_get(obj, key);
	char name[256];
	int64_t i;

	if (!v)
		return 0;
	if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) &&
	    fabs(json_real_value(v)) < 9e15)
		i = (int64_t)json_real_value(v);
	else if (json_is_integer(v))
		i = json_integer_value(v);
	else
		return type_error(v, where, key, "an integer", e);
	if (i < min || i > max) {
		field_name(name, sizeof(name), where, key);
		serve_err_set(e, 400, "field \"%s\": %lld is out of range (%lld to %lld)", name,
			      (long long)i, (long long)min, (long long)max);
		return -1;
	}
	*out = i;
	return 0;
}

int serve_get_number(json_t *obj, const char *where, const char *key, double min, double max,
		     double *out, struct serve_err *e)
{
	json_t *v = json_object_get(obj, key);
	char name[256];
	double d;

	if (!v)
		return 0;
	if (!json_is_number(v))
		return type_error(v, where, key, "a number", e);
	d = json_number_value(v);
	if (!(d >= min && d <= max)) {
		field_name(name, sizeof(name), where, key);
		serve_err_set(e, 400, "field \"%s\": %g is out of range (%g to %g)", name, d, min,
			      max);
		return -1;
	}
	*out = d;
	return 0;
}

int serve_get_bool(json_t *obj, const char *where, const char *key, bool *out, struct serve_err *e)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return type_error(v, where, key, "a boolean", e);
	*out = json_is_true(v);
	return 0;
}

int serve_get_strmap(json_t *obj, const char *where, const char *key, json_t **out,
		     struct serve_err *e)
{
	json_t *v = json_object_get(obj, key), *s;
	const char *k;
	char name[256];

	if (!v)
		return 0;
	if (!json_is_object(v))
		return type_error(v, where, key, "an object of strings", e);
	json_object_foreach(v, k, s)
	{
		if (!json_is_string(s) || strlen(json_string_value(s)) != json_string_length(s)) {
			field_name(name, sizeof(name), where, key);
			return type_error(s, name, k, "a string", e);
		}
		if (!*k || strchr(k, '=')) {
			field_name(name, sizeof(name), where, key);
			serve_err_set(e, 400, "field \"%s\": bad key \"%s\"", name, k);
			return -1;
		}
	}
	*out = v;
	return 0;
}

double serve_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

const char *serve_time(double t, char *buf, size_t size)
{
	time_t s = (time_t)t;
	struct tm tm;
	char base[32];

	gmtime_r(&s, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, size, "%s.%03dZ", base, (int)((t - (double)s) * 1000) % 1000);
	return buf;
}

int serve_check_guest_path(const char *p, struct serve_err *e)
{
	const char *c;

	if (!p || !*p) {
		serve_err_set(e, 400, "a path is required (?path=/abs/path)");
		return -1;
	}
	if (p[0] != '/') {
		serve_err_set(e, 400, "path \"%s\": must be absolute", p);
		return -1;
	}
	if (strlen(p) > 4095) {
		serve_err_set(e, 400, "path: too long");
		return -1;
	}
	for (c = p; *c;) {
		const char *end;

		while (*c == '/')
			c++;
		end = strchrnul(c, '/');
		if (end - c == 2 && c[0] == '.' && c[1] == '.') {
			serve_err_set(e, 400, "path \"%s\": a \"..\" component is not allowed", p);
			return -1;
		}
		c = end;
	}
	return 0;
}

void serve_new_id(const char *prefix, char *buf, size_t size)
{
	unsigned char r[6];

	if (getrandom(r, sizeof(r), 0) != sizeof(r)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		for (size_t i = 0; i < sizeof(r); i++)
			r[i] = (unsigned char)((uint64_t)ts.tv_nsec >> (i * 5)) ^
			       (unsigned char)rand();
	}
	snprintf(buf, size, "%s%02x%02x%02x%02x%02x%02x", prefix, r[0], r[1], r[2], r[3], r[4],
		 r[5]);
}

int serve_write_json(const char *path, json_t *v)
{
	_cleanup_free_ char *tmp = NULL;

	if (asprintf(&tmp, "%s.tmp", path) < 0)
		return -ENOMEM;
	if (json_dump_file(v, tmp, JSON_INDENT(1) | JSON_SORT_KEYS) < 0)
		return -EIO;
	if (rename(tmp, path) < 0)
		return -errno;
	return 0;
}

static int rmtree_at(int parent, const char *name)
{
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;
	struct dirent *de;

	if (fd < 0) {
		if (errno == ENOTDIR || errno == ELOOP)
			return unlinkat(parent, name, 0) < 0 && errno != ENOENT ? -errno : 0;
		return errno == ENOENT ? 0 : -errno;
	}
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		rmtree_at(dirfd(d), de->d_name);
	}
	closedir(d);
	return unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? -errno : 0;
}

int serve_rmtree(const char *path)
{
	return rmtree_at(AT_FDCWD, path);
}
