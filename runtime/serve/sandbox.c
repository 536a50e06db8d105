/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk serve: the sandbox registry. A sandbox is an OCI container under STATE/oci, made from
 * a bundle the server writes (STATE/sandboxes/ID/bundle/config.json) and started with
 * `husk --root STATE/oci run -d` as an engine would; its pid 1 is an idle init. The server's
 * own record is STATE/sandboxes/ID/sandbox.json; a restarted server reads them back and
 * checks which sentries still run. Logs live apart, in STATE/logs/ID, and outlive the sandbox.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <microhttpd.h>

#include "common/cleanup.h"
#include "oci-spec/config.h"
#include "runtime/control.h"
#include "runtime/oci.h"
#include "runtime/serve/gateway.h"
#include "common/fsutil.h"
#include "runtime/serve/serve.h"
#include "sentry/net/bpf/netbpf.h"
#include "sentry/net/gateway.h"

/* Where the in-guest helper is mounted (read-only) in every sandbox. */
#define AGENT_GUEST_PATH "/.husk/husk-agent"

const char *sandbox_state_name(enum sandbox_state s)
{
	switch (s) {
	case SB_CREATING:
		return "creating";
	case SB_RUNNING:
		return "running";
	case SB_PAUSED:
		return "paused";
	case SB_STOPPED:
		return "stopped";
	case SB_FAILED:
		return "failed";
	default:
		return "deleted";
	}
}

void sandbox_get(struct sandbox *sb)
{
	pthread_mutex_lock(&serve.lock);
	sb->refs++;
	pthread_mutex_unlock(&serve.lock);
}

static void sandbox_free(struct sandbox *sb)
{
	json_decref(sb->rec);
	free(sb->key);
	free(sb->dir);
	free(sb->logdir);
	pthread_mutex_destroy(&sb->lock);
	free(sb);
}

void sandbox_put(struct sandbox *sb)
{
	bool last;

	if (!sb)
		return;
	pthread_mutex_lock(&serve.lock);
	last = --sb->refs == 0;
	pthread_mutex_unlock(&serve.lock);
	if (last)
		sandbox_free(sb);
}

/* Adds sb to the registry (which holds a reference). Caller holds serve.lock. */
static void registry_add_locked(struct sandbox *sb)
{
	struct sandbox **v = realloc(serve.sbs, (serve.nsbs + 1) * sizeof(*v));

	if (!v)
		abort();
	serve.sbs = v;
	serve.sbs[serve.nsbs++] = sb;
	sb->refs++;
	sb->listed = true;
}

/* Removes sb from the registry and drops its reference. */
static void registry_remove(struct sandbox *sb)
{
	bool found = false;

	pthread_mutex_lock(&serve.lock);
	for (size_t i = 0; i < serve.nsbs; i++)
		if (serve.sbs[i] == sb) {
			serve.sbs[i] = serve.sbs[--serve.nsbs];
			found = true;
			break;
		}
	sb->listed = false;
	pthread_mutex_unlock(&serve.lock);
	if (found)
		sandbox_put(sb);
}

struct sandbox *sandbox_lookup(const char *id)
{
	struct sandbox *sb = NULL;

	pthread_mutex_lock(&serve.lock);
	for (size_t i = 0; i < serve.nsbs; i++)
		if (!strcmp(serve.sbs[i]->id, id)) {
			sb = serve.sbs[i];
			sb->refs++;
			break;
		}
	pthread_mutex_unlock(&serve.lock);
	return sb;
}

struct sandbox **sandbox_all(size_t *n)
{
	struct sandbox **v;

	pthread_mutex_lock(&serve.lock);
	v = calloc(serve.nsbs + 1, sizeof(*v));
	*n = 0;
	if (v) {
		for (size_t i = 0; i < serve.nsbs; i++) {
			v[i] = serve.sbs[i];
			v[i]->refs++;
		}
		*n = serve.nsbs;
	}
	pthread_mutex_unlock(&serve.lock);
	return v;
}

void sandbox_put_all(struct sandbox **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sandbox_put(v[i]);
	free(v);
}

static struct sandbox *sandbox_new(const char *id)
{
	struct sandbox *sb = calloc(1, sizeof(*sb));

	if (!sb)
		return NULL;
	snprintf(sb->id, sizeof(sb->id), "%s", id);
	pthread_mutex_init(&sb->lock, NULL);
	sb->refs = 1;
	if (asprintf(&sb->dir, "%s/sandboxes/%s", serve.state_dir, id) < 0 ||
	    asprintf(&sb->logdir, "%s/logs/%s", serve.state_dir, id) < 0) {
		free(sb);
		return NULL;
	}
	return sb;
}

char *sandbox_control_path(const struct sandbox *sb)
{
	char *p;

	if (asprintf(&p, "%s/%s/control.sock", serve.oci_root, sb->id) < 0)
		return NULL;
	return p;
}

/* Saves sb->rec as sandbox.json. Caller holds sb->lock. */
static int sandbox_save(struct sandbox *sb)
{
	_cleanup_free_ char *path = NULL;

	json_object_set_new(sb->rec, "paused", json_boolean(sb->state == SB_PAUSED));
	json_object_set_new(sb->rec, "last_active", json_real(sb->last_active));
	json_object_set_new(sb->rec, "wall_active", json_real(sb->wall_active));
	if (asprintf(&path, "%s/sandbox.json", sb->dir) < 0)
		return -ENOMEM;
	return serve_write_json(path, sb->rec);
}

void sandbox_refresh_state(struct sandbox *sb)
{
	json_t *rec = sb->rec;
	pid_t pid = (pid_t)json_integer_value(json_object_get(rec, "sentry_pid"));
	uint64_t start = (uint64_t)json_integer_value(json_object_get(rec, "sentry_start"));

	if (sb->state != SB_RUNNING && sb->state != SB_PAUSED)
		return;
	/* A hibernated sandbox has no sentry: its image is in SBDIR/hibernate. */
	if (sb->state == SB_PAUSED && json_is_true(json_object_get(rec, "hibernated")))
		return;
	if (!process_alive(pid, start)) {
		if (sb->state == SB_RUNNING)
			sb->wall_active += serve_now() - sb->active_since;
		sb->state = SB_FAILED;
	}
}

int sandbox_husk(const char *logfile, const char *const *args)
{
	const char *argv[32];
	int n = 0, status;
	pid_t pid;

	argv[n++] = "husk";
	argv[n++] = "--root";
	argv[n++] = serve.oci_root;
	for (; *args && n < 31; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* Only async-signal-safe calls: the server has threads. */
		int in = open("/dev/null", O_RDONLY);
		int out = logfile ? open(logfile, O_WRONLY | O_CREAT | O_APPEND, 0600) :
				    open("/dev/null", O_WRONLY);
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (in < 0 || out < 0)
			_exit(127);
		dup2(in, 0);
		dup2(out, 1);
		dup2(out, 2);
		syscall(SYS_close_range, 3u, ~0u, 0u);
		setsid();
		execv(serve.husk, (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* The last line of a log file (husk's error), in buf. */
static const char *last_error(const char *logfile, char *buf, size_t size)
{
	_cleanup_fclose_ FILE *f = fopen(logfile, "re");
	char line[1024];

	snprintf(buf, size, "(no message)");
	if (!f)
		return buf;
	while (fgets(line, sizeof(line), f)) {
		size_t l = strlen(line);

		while (l && (line[l - 1] == '\n' || line[l - 1] == '\r'))
			line[--l] = 0;
		if (l)
			snprintf(buf, size, "%s", line);
	}
	return buf;
}

/* --- the bundle --- */

/* The idle init's argv: husk-agent when the server has it, else a shell loop. */
static json_t *init_args(void)
{
	if (serve.agent)
		return json_pack("[ss]", AGENT_GUEST_PATH, "init");
	return json_pack("[sss]", "/bin/sh", "-c",
			 "trap 'exit 0' TERM; while :; do sleep 3600 & wait; done");
}

static json_t *caps_all(void)
{
	static const char *const caps[] = {
		"CAP_CHOWN",   "CAP_DAC_OVERRIDE", "CAP_FSETID",	   "CAP_FOWNER",
		"CAP_MKNOD",   "CAP_NET_RAW",	   "CAP_SETGID",	   "CAP_SETUID",
		"CAP_SETFCAP", "CAP_SETPCAP",	   "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT",
		"CAP_KILL",    "CAP_AUDIT_WRITE",
	};
	json_t *a = json_array();

	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
		json_array_append_new(a, json_string(caps[i]));
	return a;
}

/* Joins the strings of an array with commas (NULL if absent or empty). */
static char *join_rules(json_t *a)
{
	size_t i;
	json_t *v;
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	if (!a || !json_array_size(a))
		return NULL;
	f = open_memstream(&out, &len);
	if (!f)
		return NULL;
	json_array_foreach(a, i, v) fprintf(f, "%s%s", i ? "," : "", json_string_value(v));
	fclose(f);
	return out;
}

/*
 * Validates a create request and builds its config.json (a new reference). Returns NULL with
 * e set on bad input. *rootfs_out gets the root's path (pointing into req or a literal).
 */
static json_t *build_config(json_t *req, const char *id, const char *logdir,
			    const char **rootfs_out, struct serve_err *e)
{
	static const char *const top[] = {
		"rootfs",    "bundle",	"template",	   "env",     "cwd",
		"limits",    "volumes", "tmpfs",	   "network", "secrets",
		"timeout_s", "labels",	"idempotency_key", "idle",    NULL,
	};
	static const char *const limits_f[] = { "memory_bytes", "pids", "cpus", NULL };
	static const char *const vol_f[] = { "host", "guest", "readonly", NULL };
	static const char *const tmpfs_f[] = { "guest", "size_bytes", NULL };
	static const char *const net_f[] = { "mode", "allow", "deny", NULL };
	static const char *const idle_f[] = { "pause_after_idle_s", "auto_resume", "delete_after_s",
					      "hibernate", NULL };
	const char *rootfs = NULL, *bundle = NULL, *tmpl = NULL, *cwd = "/", *s = NULL;
	json_t *env = NULL, *labels = NULL, *v, *limits, *cfg, *process, *mounts, *ann, *envv;
	int64_t i64 = 0;
	double d = 0;
	bool b = false;
	const char *k;
	size_t i;
	char *json;
	struct stat st;

	if (serve_check_fields(req, "", top, e) < 0 ||
	    serve_get_string(req, "", "rootfs", &rootfs, e) < 0 ||
	    serve_get_string(req, "", "bundle", &bundle, e) < 0 ||
	    serve_get_string(req, "", "template", &tmpl, e) < 0 ||
	    serve_get_string(req, "", "cwd", &cwd, e) < 0 ||
	    serve_get_strmap(req, "", "env", &env, e) < 0 ||
	    serve_get_strmap(req, "", "labels", &labels, e) < 0 ||
	    serve_get_number(req, "", "timeout_s", 0, 1e9, &d, e) < 0 ||
	    serve_get_string(req, "", "idempotency_key", &s, e) < 0)
		return NULL;
	if (!!rootfs + !!bundle + !!tmpl > 1) {
		serve_err_set(e, 400, "give at most one of rootfs, bundle and template");
		return NULL;
	}
	if (cwd[0] != '/') {
		serve_err_set(e, 400, "field \"cwd\": must be an absolute path");
		return NULL;
	}
	if ((v = json_object_get(req, "limits"))) {
		if (!json_is_object(v)) {
			serve_err_set(e, 400, "field \"limits\": expected an object");
			return NULL;
		}
		if (serve_check_fields(v, "limits", limits_f, e) < 0 ||
		    serve_get_int(v, "limits", "memory_bytes", 1 << 20, INT64_MAX / 2, &i64, e) <
			    0 ||
		    serve_get_int(v, "limits", "pids", 1, INT32_MAX, &i64, e) < 0 ||
		    serve_get_number(v, "limits", "cpus", 0.01, 4096, &d, e) < 0)
			return NULL;
	}
	if ((v = json_object_get(req, "idle"))) {
		if (!json_is_object(v)) {
			serve_err_set(e, 400, "field \"idle\": expected an object");
			return NULL;
		}
		if (serve_check_fields(v, "idle", idle_f, e) < 0)
			return NULL;
		if (!json_is_null(json_object_get(v, "pause_after_idle_s")) &&
		    serve_get_number(v, "idle", "pause_after_idle_s", 0, 1e9, &d, e) < 0)
			return NULL;
		if (!json_is_null(json_object_get(v, "delete_after_s")) &&
		    serve_get_number(v, "idle", "delete_after_s", 0, 1e9, &d, e) < 0)
			return NULL;
		if (serve_get_bool(v, "idle", "auto_resume", &b, e) < 0 ||
		    serve_get_bool(v, "idle", "hibernate", &b, e) < 0)
			return NULL;
	}
	if ((v = json_object_get(req, "secrets"))) {
		json_t *x;

		if (!json_is_array(v)) {
			serve_err_set(e, 400, "field \"secrets\": expected an array of strings");
			return NULL;
		}
		json_array_foreach(v, i, x) if (!json_is_string(x))
		{
			serve_err_set(e, 400, "field \"secrets[%zu]\": expected a string", i);
			return NULL;
		}
		json_array_foreach(v, i,
				   x) if (!serve.gateway ||
					  !gateway_has_secret(serve.gateway, json_string_value(x)))
		{
			serve_err_set(e, 400,
				      "field \"secrets[%zu]\": no secret %s on this server (husk "
				      "serve --secret)",
				      i, json_string_value(x));
			return NULL;
		}
	}

	if (bundle) {
		_cleanup_free_ char *p = NULL;
		json_error_t jerr;

		if (bundle[0] != '/' || asprintf(&p, "%s/config.json", bundle) < 0) {
			serve_err_set(e, 400, "field \"bundle\": must be an absolute path");
			return NULL;
		}
		cfg = json_load_file(p, 0, &jerr);
		if (!cfg || !json_is_object(json_object_get(cfg, "process"))) {
			json_decref(cfg);
			serve_err_set(e, 400, "field \"bundle\": %s: %s", p,
				      cfg ? "no process" : jerr.text);
			return NULL;
		}
		/* The bundle's root is relative to the bundle. */
		v = json_object_get(json_object_get(cfg, "root"), "path");
		if (json_is_string(v) && json_string_value(v)[0] != '/') {
			_cleanup_free_ char *abs = NULL;

			if (asprintf(&abs, "%s/%s", bundle, json_string_value(v)) < 0)
				abort();
			json_object_set_new(json_object_get(cfg, "root"), "path", json_string(abs));
		}
		rootfs = json_string_value(json_object_get(json_object_get(cfg, "root"), "path"));
		if (!rootfs) {
			json_decref(cfg);
			serve_err_set(e, 400, "field \"bundle\": its config.json has no root.path");
			return NULL;
		}
		json_object_set_new(json_object_get(cfg, "root"), "readonly", json_false());
	} else {
		if (!rootfs)
			rootfs = "/";
		if (rootfs[0] != '/' || stat(rootfs, &st) < 0 || !S_ISDIR(st.st_mode)) {
			serve_err_set(e, 400,
				      "field \"rootfs\": %s: not an absolute path to a directory",
				      rootfs);
			return NULL;
		}
		json = oci_config_default_json(false);
		cfg = json ? json_loads(json, 0, NULL) : NULL;
		free(json);
		if (!cfg) {
			serve_err_set(e, 500, "out of memory");
			return NULL;
		}
		json_object_set_new(cfg, "root",
				    json_pack("{s:s,s:b}", "path", rootfs, "readonly", 0));
	}
	*rootfs_out = rootfs;
	process = json_object_get(cfg, "process");
	json_object_set_new(process, "terminal", json_false());
	json_object_set_new(process, "args", init_args());
	json_object_set_new(process, "cwd", json_string(cwd));
	if (!bundle) {
		json_t *caps = json_object_get(process, "capabilities");

		json_object_set_new(caps, "bounding", caps_all());
		json_object_set_new(caps, "effective", caps_all());
		json_object_set_new(caps, "permitted", caps_all());
		json_object_del(caps, "ambient");
		json_object_del(caps, "inheritable");
		json_object_set_new(cfg, "hostname", json_string(id));
	}
	envv = json_object_get(process, "env");
	if (!json_is_array(envv)) {
		envv = json_array();
		json_object_set_new(process, "env", envv);
	}
	if (env)
		json_object_foreach(env, k, v)
		{
			char *kv;

			if (asprintf(&kv, "%s=%s", k, json_string_value(v)) < 0)
				abort();
			/* A later entry wins: drop an earlier one of that name. */
			for (i = json_array_size(envv); i-- > 0;) {
				const char *old = json_string_value(json_array_get(envv, i));

				if (old && !strncmp(old, k, strlen(k)) && old[strlen(k)] == '=')
					json_array_remove(envv, i);
			}
			json_array_append_new(envv, json_string(kv));
			free(kv);
		}

	mounts = json_object_get(cfg, "mounts");
	if (!json_is_array(mounts)) {
		mounts = json_array();
		json_object_set_new(cfg, "mounts", mounts);
	}
	if ((v = json_object_get(req, "tmpfs"))) {
		json_t *t;

		if (!json_is_array(v)) {
			serve_err_set(e, 400, "field \"tmpfs\": expected an array");
			goto bad;
		}
		json_array_foreach(v, i, t)
		{
			const char *guest = NULL;
			int64_t size = 64 << 20;
			char where[32], opt[64];

			snprintf(where, sizeof(where), "tmpfs[%zu]", i);
			if (!json_is_object(t)) {
				serve_err_set(e, 400, "field \"%s\": expected an object", where);
				goto bad;
			}
			if (serve_check_fields(t, where, tmpfs_f, e) < 0 ||
			    serve_get_string(t, where, "guest", &guest, e) < 0 ||
			    serve_get_int(t, where, "size_bytes", 4096, INT64_MAX / 2, &size, e) <
				    0)
				goto bad;
			if (!guest || guest[0] != '/') {
				serve_err_set(e, 400,
					      "field \"%s.guest\": an absolute path is required",
					      where);
				goto bad;
			}
			snprintf(opt, sizeof(opt), "size=%lld", (long long)size);
			json_array_append_new(mounts,
					      json_pack("{s:s,s:s,s:s,s:[ss]}", "destination",
							guest, "type", "tmpfs", "source", "tmpfs",
							"options", opt, "mode=1777"));
		}
	}
	if ((v = json_object_get(req, "volumes"))) {
		json_t *t;

		if (!json_is_array(v)) {
			serve_err_set(e, 400, "field \"volumes\": expected an array");
			goto bad;
		}
		json_array_foreach(v, i, t)
		{
			const char *host = NULL, *guest = NULL;
			bool ro = false;
			char where[32];

			snprintf(where, sizeof(where), "volumes[%zu]", i);
			if (!json_is_object(t)) {
				serve_err_set(e, 400, "field \"%s\": expected an object", where);
				goto bad;
			}
			if (serve_check_fields(t, where, vol_f, e) < 0 ||
			    serve_get_string(t, where, "host", &host, e) < 0 ||
			    serve_get_string(t, where, "guest", &guest, e) < 0 ||
			    serve_get_bool(t, where, "readonly", &ro, e) < 0)
				goto bad;
			if (!host || host[0] != '/' || stat(host, &st) < 0) {
				serve_err_set(e, 400,
					      "field \"%s.host\": an existing absolute path is "
					      "required",
					      where);
				goto bad;
			}
			if (!guest || guest[0] != '/') {
				serve_err_set(e, 400,
					      "field \"%s.guest\": an absolute path is required",
					      where);
				goto bad;
			}
			json_array_append_new(mounts,
					      json_pack("{s:s,s:s,s:s,s:[ss]}", "destination",
							guest, "type", "bind", "source", host,
							"options", "rbind", ro ? "ro" : "rw"));
		}
	}
	if (serve.agent)
		json_array_append_new(mounts, json_pack("{s:s,s:s,s:s,s:[ss]}", "destination",
							AGENT_GUEST_PATH, "type", "bind", "source",
							serve.agent, "options", "bind", "ro"));

	/*
	 * What the server keeps from sandboxes (its state, its token, the gateway's secrets) is
	 * masked in a root that holds it: the default root is the host's.
	 */
	for (i = 0; i < serve.nhidden; i++) {
		const char *h = serve.hidden[i];
		size_t rl = strlen(rootfs);
		json_t *linux_ = json_object_get(cfg, "linux"), *masked;

		while (rl > 1 && rootfs[rl - 1] == '/')
			rl--;
		if (!(rl == 1 && rootfs[0] == '/') &&
		    (strncmp(h, rootfs, rl) || (h[rl] != '/' && h[rl] != 0)))
			continue;
		if (!linux_) {
			linux_ = json_object();
			json_object_set_new(cfg, "linux", linux_);
		}
		masked = json_object_get(linux_, "maskedPaths");
		if (!json_is_array(masked)) {
			masked = json_array();
			json_object_set_new(linux_, "maskedPaths", masked);
		}
		json_array_append_new(masked, json_string(rl == 1 ? h : h[rl] ? h + rl : "/"));
	}

	if ((limits = json_object_get(req, "limits"))) {
		json_t *linux_ = json_object_get(cfg, "linux"), *res;

		if (!linux_) {
			linux_ = json_object();
			json_object_set_new(cfg, "linux", linux_);
		}
		res = json_object_get(linux_, "resources");
		if (!res) {
			res = json_object();
			json_object_set_new(linux_, "resources", res);
		}
		if ((v = json_object_get(limits, "memory_bytes")))
			json_object_set_new(res, "memory", json_pack("{s:O}", "limit", v));
		if ((v = json_object_get(limits, "pids")))
			json_object_set_new(res, "pids", json_pack("{s:O}", "limit", v));
		if ((v = json_object_get(limits, "cpus")))
			json_object_set_new(res, "cpu",
					    json_pack("{s:I,s:I}", "quota",
						      (json_int_t)(json_number_value(v) * 100000),
						      "period", (json_int_t)100000));
	}

	ann = json_object_get(cfg, "annotations");
	if (!ann) {
		ann = json_object();
		json_object_set_new(cfg, "annotations", ann);
	}
	json_object_set_new(ann, "dev.husk.debug-log", json_string(logdir));
	/* The credential gateway: husk create connects the sentry to it, introducing id. */
	if (json_array_size(json_object_get(req, "secrets")) > 0 && serve.gateway_sock) {
		json_object_set_new(ann, "dev.husk.gateway", json_string(serve.gateway_sock));
		json_object_set_new(ann, "dev.husk.gateway-id", json_string(id));
		/* As husk create gives pid 1, for every exec too. */
		json_array_append_new(json_object_get(json_object_get(cfg, "process"), "env"),
				      json_string("HUSK_GATEWAY=" NET_GATEWAY_URL));
	}
	if ((v = json_object_get(req, "network"))) {
		const char *mode = "none";
		_cleanup_free_ char *allow = NULL, *deny = NULL;
		char **args = NULL, why[256] = "";
		json_t *x;
		size_t j;

		if (!json_is_object(v)) {
			serve_err_set(e, 400, "field \"network\": expected an object");
			goto bad;
		}
		if (serve_check_fields(v, "network", net_f, e) < 0 ||
		    serve_get_string(v, "network", "mode", &mode, e) < 0)
			goto bad;
		if (strcmp(mode, "none") && strcmp(mode, "egress")) {
			serve_err_set(e, 400, "field \"network.mode\": expected none or egress");
			goto bad;
		}
		for (const char *const *w = (const char *const[]){ "allow", "deny", NULL }; *w;
		     w++) {
			x = json_object_get(v, *w);
			if (!x)
				continue;
			if (!json_is_array(x)) {
				serve_err_set(e, 400, "field \"network.%s\": expected an array",
					      *w);
				goto bad;
			}
			for (j = 0; j < json_array_size(x); j++)
				if (!json_is_string(json_array_get(x, j))) {
					serve_err_set(e, 400,
						      "field \"network.%s[%zu]\": expected a "
						      "string",
						      *w, j);
					goto bad;
				}
		}
		allow = join_rules(json_object_get(v, "allow"));
		deny = join_rules(json_object_get(v, "deny"));
		if (netbpf_annotation_args(!strcmp(mode, "egress") ? "host" : "none", allow, deny,
					   &args, why, sizeof(why)) < 0) {
			serve_err_set(e, 400, "field \"network\": %s", why);
			goto bad;
		}
		netbpf_free_args(args);
		json_object_set_new(ann, "dev.husk.network",
				    json_string(!strcmp(mode, "egress") ? "host" : "none"));
		if (allow)
			json_object_set_new(ann, "dev.husk.egress-allow", json_string(allow));
		if (deny)
			json_object_set_new(ann, "dev.husk.egress-deny", json_string(deny));
	}
	return cfg;
bad:
	json_decref(cfg);
	return NULL;
}

/* The record's idle policy with defaults filled in. */
static json_t *idle_with_defaults(json_t *idle)
{
	json_t *o = json_pack("{s:n,s:b,s:n,s:b}", "pause_after_idle_s", "auto_resume", 1,
			      "delete_after_s", "hibernate", 0);
	const char *k;
	json_t *v;

	if (idle)
		json_object_foreach(idle, k, v) json_object_set(o, k, v);
	return o;
}

/* Reads the sentry's pid and start time from the OCI record. */
static int read_oci_state(const char *id, json_t *rec)
{
	_cleanup_free_ char *p = NULL;
	json_t *st;

	if (asprintf(&p, "%s/%s/state.json", serve.oci_root, id) < 0)
		return -ENOMEM;
	st = json_load_file(p, 0, NULL);
	if (!st)
		return -ENOENT;
	json_object_set(rec, "sentry_pid", json_object_get(st, "pid"));
	json_object_set(rec, "sentry_start", json_object_get(st, "pid_start"));
	json_decref(st);
	return 0;
}

/*
 * Starts a sandbox from its bundle (or a checkpoint image when restore is set). Caller holds
 * sb->lock. Returns 0 or -1 with e set; on failure nothing is left but the logs.
 */
static int sandbox_launch(struct sandbox *sb, const char *restore, struct serve_err *e)
{
	_cleanup_free_ char *bundle = NULL, *logfile = NULL;
	char msg[512];
	int ret;

	if (asprintf(&bundle, "%s/bundle", sb->dir) < 0 ||
	    asprintf(&logfile, "%s/husk.log", sb->logdir) < 0)
		abort();
	if (restore)
		ret = sandbox_husk(logfile, (const char *const[]){
						    "restore", "--detach", "--image-path", restore,
						    "--bundle", bundle, sb->id, NULL });
	else
		ret = sandbox_husk(logfile, (const char *const[]){ "run", "--detach", "--bundle",
								   bundle, sb->id, NULL });
	if (ret != 0 || read_oci_state(sb->id, sb->rec) < 0) {
		last_error(logfile, msg, sizeof(msg));
		sandbox_husk(NULL, (const char *const[]){ "delete", "--force", sb->id, NULL });
		serve_err_set(e, strstr(msg, "dev.husk.") ? 400 : 500,
			      "the sandbox did not start: %s", msg);
		return -1;
	}
	sb->state = SB_RUNNING;
	sb->active_since = serve_now();
	return 0;
}

int sandbox_gateway_allow(const char *id, json_t *req)
{
	json_t *names = json_object_get(req, "secrets");
	const char *v[64];
	size_t n = json_array_size(names);

	if (!n || !serve.gateway)
		return 0;
	if (n > sizeof(v) / sizeof(v[0]))
		return -E2BIG;
	for (size_t i = 0; i < n; i++)
		v[i] = json_string_value(json_array_get(names, i));
	return gateway_allow(serve.gateway, id, v, (int)n);
}

/* Cleans up a sandbox that never started or was deleted: its dir, its registry entry. */
static void sandbox_discard(struct sandbox *sb)
{
	if (serve.gateway)
		gateway_forget(serve.gateway, sb->id);
	serve_rmtree(sb->dir);
	logs_mark_deleted(sb->logdir);
	sb->state = SB_DELETED;
	registry_remove(sb);
}

/* Creates a sandbox. Returns a reference (*created: new) or NULL with e set. */
static struct sandbox *sandbox_create(json_t *req, json_t *labels_override, const char *restore,
				      bool *created, struct serve_err *e)
{
	const char *key = NULL, *rootfs = NULL;
	_cleanup_free_ char *cfgpath = NULL;
	struct sandbox *sb;
	char id[16];
	json_t *cfg, *v, *labels;
	double now = serve_now();

	*created = false;
	key = json_string_value(json_object_get(req, "idempotency_key"));
	if (key && !*key)
		key = NULL;
	serve_new_id("sb-", id, sizeof(id));
	cfg = build_config(req, id, "", &rootfs, e);
	if (!cfg)
		return NULL;
	sb = sandbox_new(id);
	if (!sb) {
		json_decref(cfg);
		serve_err_set(e, 500, "out of memory");
		return NULL;
	}
	json_object_set_new(json_object_get(cfg, "annotations"), "dev.husk.debug-log",
			    json_string(sb->logdir));
	labels = labels_override ? labels_override : json_object_get(req, "labels");
	sb->rec = json_pack("{s:s,s:f,s:o,s:s,s:O,s:o}", "id", id, "created", now, "labels",
			    labels ? json_deep_copy(labels) : json_object(), "rootfs", rootfs,
			    "request", req, "idle",
			    idle_with_defaults(json_object_get(req, "idle")));
	json_object_set_new(sb->rec, "idempotency_key", key ? json_string(key) : json_null());
	v = json_object_get(req, "timeout_s");
	json_object_set_new(sb->rec, "timeout_s",
			    v && json_number_value(v) > 0 ? json_real(json_number_value(v)) :
							    json_null());
	if ((v = json_object_get(req, "template")))
		json_object_set(sb->rec, "template", v);
	json_object_set(sb->rec, "env", json_object_get(json_object_get(cfg, "process"), "env"));
	json_object_set(sb->rec, "cwd", json_object_get(json_object_get(cfg, "process"), "cwd"));
	sb->created = sb->last_active = now;
	sb->state = SB_CREATING;
	sb->key = key ? strdup(key) : NULL;
	pthread_mutex_lock(&sb->lock);

	/* Idempotency: a key seen already names its sandbox; registering ours is atomic. */
	pthread_mutex_lock(&serve.lock);
	if (key)
		for (size_t i = 0; i < serve.nsbs; i++) {
			const char *k = serve.sbs[i]->key;
			struct sandbox *old = serve.sbs[i];

			if (!k || strcmp(k, key))
				continue;
			old->refs++;
			pthread_mutex_unlock(&serve.lock);
			pthread_mutex_unlock(&sb->lock);
			sandbox_put(sb);
			json_decref(cfg);
			/* Wait for its creation to finish. */
			pthread_mutex_lock(&old->lock);
			pthread_mutex_unlock(&old->lock);
			if (old->state == SB_DELETED) {
				sandbox_put(old);
				serve_err_set(e, 409,
					      "the sandbox of this idempotency_key failed to "
					      "start; retry");
				return NULL;
			}
			return old;
		}
	registry_add_locked(sb);
	serve.creations++;
	pthread_mutex_unlock(&serve.lock);

	if (husk_mkdir_p(sb->logdir, 0700) < 0 || husk_mkdir_p(sb->dir, 0700) < 0 ||
	    asprintf(&cfgpath, "%s/bundle", sb->dir) < 0 || husk_mkdir_p(cfgpath, 0700) < 0) {
		serve_err_set(e, 500, "%s: cannot make the sandbox's folders", sb->dir);
		goto fail;
	}
	free(cfgpath);
	if (asprintf(&cfgpath, "%s/bundle/config.json", sb->dir) < 0 ||
	    serve_write_json(cfgpath, cfg) < 0) {
		serve_err_set(e, 500, "%s: cannot write the bundle", sb->dir);
		goto fail;
	}
	if (sandbox_save(sb) < 0) {
		serve_err_set(e, 500, "%s: cannot write sandbox.json", sb->dir);
		goto fail;
	}
	if (sandbox_gateway_allow(id, req) < 0) {
		serve_err_set(e, 400, "field \"secrets\": too many, or not secrets of this server");
		goto fail;
	}
	if (sandbox_launch(sb, restore, e) < 0)
		goto fail;
	sandbox_save(sb);
	json_decref(cfg);
	pthread_mutex_unlock(&sb->lock);
	*created = true;
	return sb;
fail:
	json_decref(cfg);
	sandbox_discard(sb);
	pthread_mutex_unlock(&sb->lock);
	sandbox_put(sb);
	return NULL;
}

/* CONTROL_STATS of a running sandbox. Returns 0 or -errno. */
static int sandbox_stats(struct sandbox *sb, struct control_stats *st)
{
	_cleanup_free_ char *path = sandbox_control_path(sb);
	_cleanup_close_ int sock = -1;
	struct control_hdr h = {
		.magic = CONTROL_MAGIC, .version = CONTROL_VERSION, .op = CONTROL_STATS, .len = 0
	};
	int ret;

	if (!path)
		return -ENOMEM;
	sock = control_dial(path);
	if (sock < 0)
		return sock;
	if (send(sock, &h, sizeof(h), MSG_NOSIGNAL) != sizeof(h))
		return -errno;
	ret = control_recv(sock, CONTROL_STATS_REPLY, st, sizeof(*st));
	if (ret < 0)
		return ret;
	return st->err;
}

json_t *sandbox_json(struct sandbox *sb)
{
	struct control_stats st = { 0 };
	char created[40], active[40];
	json_t *o, *rec;
	double wall;
	enum sandbox_state state;

	pthread_mutex_lock(&sb->lock);
	sandbox_refresh_state(sb);
	state = sb->state;
	rec = json_deep_copy(sb->rec);
	wall = sb->wall_active + (state == SB_RUNNING ? serve_now() - sb->active_since : 0);
	serve_time(sb->created, created, sizeof(created));
	serve_time(sb->last_active, active, sizeof(active));
	pthread_mutex_unlock(&sb->lock);
	if (state == SB_RUNNING || state == SB_PAUSED)
		sandbox_stats(sb, &st);
	o = json_pack("{s:s,s:s,s:s,s:s,s:O,s:O,s:O,s:O,s:O}", "id", sb->id, "state",
		      sandbox_state_name(state), "created", created, "last_active", active,
		      "labels", json_object_get(rec, "labels"), "idempotency_key",
		      json_object_get(rec, "idempotency_key"), "rootfs",
		      json_object_get(rec, "rootfs"), "timeout_s",
		      json_object_get(rec, "timeout_s"), "idle", json_object_get(rec, "idle"));
	json_object_set(o, "template",
			json_object_get(rec, "template") ? json_object_get(rec, "template") :
							   json_null());
	json_object_set_new(o, "hibernated",
			    json_boolean(json_is_true(json_object_get(rec, "hibernated"))));
	json_object_set_new(
		o, "usage",
		json_pack("{s:f,s:f,s:f,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "cpu_user_s",
			  (double)st.cpu_user / 1e9, "cpu_system_s", (double)st.cpu_kernel / 1e9,
			  "wall_active_s", wall, "memory_bytes", (json_int_t)st.memory_usage,
			  "memory_peak_bytes", (json_int_t)st.memory_peak, "pids",
			  (json_int_t)st.pids_current, "syscalls", (json_int_t)st.syscalls,
			  "faults", (json_int_t)st.faults, "gofer_ops", (json_int_t)st.gofer_ops,
			  "gofer_bytes", (json_int_t)st.gofer_bytes, "egress_allowed",
			  (json_int_t)st.egress_allowed, "egress_denied",
			  (json_int_t)st.egress_denied));
	json_decref(rec);
	return o;
}

int sandbox_delete(struct sandbox *sb)
{
	_cleanup_free_ char *logfile = NULL;
	int ret;

	pthread_mutex_lock(&sb->lock);
	if (sb->state == SB_DELETED) {
		pthread_mutex_unlock(&sb->lock);
		return -ENOENT;
	}
	if (asprintf(&logfile, "%s/husk.log", sb->logdir) < 0)
		abort();
	ret = sandbox_husk(logfile, (const char *const[]){ "delete", "--force", sb->id, NULL });
	if (sb->state == SB_RUNNING)
		sb->wall_active += serve_now() - sb->active_since;
	sandbox_discard(sb);
	pthread_mutex_unlock(&sb->lock);
	return ret == 0 ? 0 : -EIO;
}

int sandbox_set_paused(struct sandbox *sb, bool paused, struct serve_err *e)
{
	int ret = 0;

	pthread_mutex_lock(&sb->lock);
	sandbox_refresh_state(sb);
	if (sb->state != SB_RUNNING && sb->state != SB_PAUSED) {
		serve_err_set(e, 409, "sandbox %s is %s", sb->id, sandbox_state_name(sb->state));
		ret = -1;
	} else if (paused && sb->state == SB_RUNNING) {
		if (sandbox_husk(NULL, (const char *const[]){ "pause", sb->id, NULL }) != 0) {
			serve_err_set(e, 500, "husk pause %s failed", sb->id);
			ret = -1;
		} else {
			sb->wall_active += serve_now() - sb->active_since;
			sb->state = SB_PAUSED;
		}
	} else if (!paused && sb->state == SB_PAUSED &&
		   json_is_true(json_object_get(sb->rec, "hibernated"))) {
		/* Back from its image: a restore under its own id (sandbox_launch), then the image
		 * goes. */
		_cleanup_free_ char *image = NULL;

		if (asprintf(&image, "%s/hibernate", sb->dir) < 0)
			abort();
		if (sandbox_launch(sb, image, e) < 0) {
			ret = -1;
			sb->state = SB_FAILED;
		} else {
			serve_rmtree(image);
			json_object_set_new(sb->rec, "hibernated", json_false());
			sb->last_active = sb->active_since;
		}
	} else if (!paused && sb->state == SB_PAUSED) {
		if (sandbox_husk(NULL, (const char *const[]){ "resume", sb->id, NULL }) != 0) {
			serve_err_set(e, 500, "husk resume %s failed", sb->id);
			ret = -1;
		} else {
			sb->active_since = serve_now();
			sb->last_active = sb->active_since;
			sb->state = SB_RUNNING;
		}
	}
	if (ret == 0)
		sandbox_save(sb);
	pthread_mutex_unlock(&sb->lock);
	return ret;
}

int sandbox_hibernate(struct sandbox *sb, struct serve_err *e)
{
	_cleanup_free_ char *image = NULL;
	int ret = 0;

	if (asprintf(&image, "%s/hibernate", sb->dir) < 0)
		abort();
	pthread_mutex_lock(&sb->lock);
	sandbox_refresh_state(sb);
	if (sb->state != SB_RUNNING) {
		serve_err_set(e, 409, "sandbox %s is %s", sb->id, sandbox_state_name(sb->state));
		ret = -1;
	} else if (sandbox_husk(NULL, (const char *const[]){ "checkpoint", "--image-path", image,
							     sb->id, NULL }) != 0) {
		/* Still running (a checkpoint that fails leaves the sandbox as it was). */
		serve_rmtree(image);
		serve_err_set(e, 500, "husk checkpoint %s failed", sb->id);
		ret = -1;
	} else {
		sb->wall_active += serve_now() - sb->active_since;
		sb->state = SB_PAUSED;
		json_object_set_new(sb->rec, "hibernated", json_true());
		sandbox_save(sb);
	}
	pthread_mutex_unlock(&sb->lock);
	return ret;
}

int sandbox_enter(struct sandbox *sb, struct serve_err *e)
{
	pthread_mutex_lock(&sb->lock);
	sandbox_refresh_state(sb);
	if (sb->state == SB_PAUSED &&
	    json_is_true(json_object_get(json_object_get(sb->rec, "idle"), "auto_resume"))) {
		pthread_mutex_unlock(&sb->lock);
		if (sandbox_set_paused(sb, false, e) < 0)
			return -1;
		pthread_mutex_lock(&sb->lock);
	}
	if (sb->state != SB_RUNNING) {
		serve_err_set(e, 409, "sandbox %s is %s", sb->id, sandbox_state_name(sb->state));
		pthread_mutex_unlock(&sb->lock);
		return -1;
	}
	sb->busy++;
	sb->last_active = serve_now();
	pthread_mutex_unlock(&sb->lock);
	return 0;
}

void sandbox_leave(struct sandbox *sb)
{
	pthread_mutex_lock(&sb->lock);
	sb->busy--;
	sb->last_active = serve_now();
	pthread_mutex_unlock(&sb->lock);
}

int sandbox_registry_load(void)
{
	_cleanup_free_ char *dir = NULL;
	DIR *d;
	struct dirent *de;

	if (asprintf(&dir, "%s/sandboxes", serve.state_dir) < 0)
		return -ENOMEM;
	husk_mkdir_p(dir, 0700);
	husk_mkdir_p(serve.oci_root, 0700);
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		_cleanup_free_ char *p = NULL;
		struct sandbox *sb;
		json_t *rec;

		if (strncmp(de->d_name, "sb-", 3) || strlen(de->d_name) != 15)
			continue;
		if (asprintf(&p, "%s/%s/sandbox.json", dir, de->d_name) < 0)
			continue;
		rec = json_load_file(p, 0, NULL);
		if (!rec || !json_object_get(rec, "sentry_pid")) {
			/* A creation the previous server did not finish. */
			json_decref(rec);
			sandbox_husk(NULL, (const char *const[]){ "delete", "--force", de->d_name,
								  NULL });
			free(p);
			if (asprintf(&p, "%s/%s", dir, de->d_name) >= 0)
				serve_rmtree(p);
			continue;
		}
		sb = sandbox_new(de->d_name);
		if (!sb) {
			json_decref(rec);
			continue;
		}
		sb->rec = rec;
		if (json_is_string(json_object_get(rec, "idempotency_key")))
			sb->key =
				strdup(json_string_value(json_object_get(rec, "idempotency_key")));
		sb->created = json_number_value(json_object_get(rec, "created"));
		sb->last_active = json_number_value(json_object_get(rec, "last_active"));
		sb->wall_active = json_number_value(json_object_get(rec, "wall_active"));
		sb->active_since = serve_now();
		sb->state = json_is_true(json_object_get(rec, "paused")) ? SB_PAUSED : SB_RUNNING;
		sandbox_refresh_state(sb);
		/* Its secrets again (its sentry's gateway connection went with the old server:
		 * GATEWAY.md). */
		sandbox_gateway_allow(sb->id, json_object_get(rec, "request"));
		pthread_mutex_lock(&serve.lock);
		registry_add_locked(sb);
		pthread_mutex_unlock(&serve.lock);
		sandbox_put(sb);
	}
	closedir(d);
	return 0;
}

/* Does sb have every label=value in want (a NULL-terminated list)? */
static bool labels_match(struct sandbox *sb, char **want, int n)
{
	bool ok = true;

	pthread_mutex_lock(&sb->lock);
	for (int i = 0; i < n && ok; i++) {
		char *eq = strchr(want[i], '=');
		const char *have;

		*eq = 0;
		have = json_string_value(
			json_object_get(json_object_get(sb->rec, "labels"), want[i]));
		ok = have && !strcmp(have, eq + 1);
		*eq = '=';
	}
	pthread_mutex_unlock(&sb->lock);
	return ok;
}

struct label_filter {
	char *want[32];
	int n;
	bool bad;
};

static enum MHD_Result collect_label(void *cls, enum MHD_ValueKind kind, const char *key,
				     const char *value)
{
	struct label_filter *f = cls;

	if (strcmp(key, "label"))
		return MHD_YES;
	if (!value || !strchr(value, '=') || f->n == 32) {
		f->bad = true;
		return MHD_YES;
	}
	f->want[f->n++] = strdup(value);
	return MHD_YES;
}

static int list_sandboxes(struct MHD_Connection *conn)
{
	struct label_filter f = { .n = 0 };
	struct sandbox **v;
	size_t n;
	json_t *a = json_array();

	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_label, &f);
	if (f.bad) {
		for (int i = 0; i < f.n; i++)
			free(f.want[i]);
		json_decref(a);
		return serve_reply_error(conn, 400, "label filters are k=v (at most 32)");
	}
	v = sandbox_all(&n);
	for (size_t i = 0; i < n; i++) {
		json_t *o;

		if (!labels_match(v[i], f.want, f.n))
			continue;
		o = sandbox_json(v[i]);
		/* One deleted (or whose creation failed) while we looked. */
		if (!strcmp(json_string_value(json_object_get(o, "state")), "deleted"))
			json_decref(o);
		else
			json_array_append_new(a, o);
	}
	sandbox_put_all(v, n);
	for (int i = 0; i < f.n; i++)
		free(f.want[i]);
	return serve_reply_json(conn, 200, json_pack("{s:o}", "sandboxes", a));
}

static int create_sandbox(struct MHD_Connection *conn, const char *body, size_t len)
{
	struct serve_err e = { 0 };
	json_t *req = serve_parse_body(body, len, &e);
	struct sandbox *sb;
	bool created;
	const char *tmpl;
	_cleanup_free_ char *image = NULL;
	int ret;

	if (!req)
		return serve_reply_error(conn, e.status, "%s", e.msg);
	tmpl = json_string_value(json_object_get(req, "template"));
	if (tmpl && template_image(tmpl, &image, &e) < 0) {
		json_decref(req);
		return serve_reply_error(conn, e.status, "%s", e.msg);
	}
	if (tmpl) {
		/* The template's sandbox's request (its root and mounts), with this one's own
		 * fields over it. */
		json_t *base = template_request(tmpl);
		const char *k;
		json_t *v;

		if (!base) {
			json_decref(req);
			return serve_reply_error(conn, 500, "template %s: its record is unreadable",
						 tmpl);
		}
		if (json_object_get(req, "rootfs") || json_object_get(req, "bundle")) {
			json_decref(base);
			json_decref(req);
			return serve_reply_error(conn, 400,
						 "give at most one of rootfs, bundle and "
						 "template");
		}
		for (const char *const *d = (const char *const[]){ "labels", "idempotency_key",
								   "idle", "timeout_s", NULL };
		     *d; d++)
			json_object_del(base, *d);
		json_object_foreach(req, k, v) json_object_set(base, k, v);
		json_decref(req);
		req = base;
	}
	sb = sandbox_create(req, NULL, image, &created, &e);
	json_decref(req);
	if (!sb)
		return serve_reply_error(conn, e.status, "%s", e.msg);
	ret = serve_reply_json(conn, created ? 201 : 200, sandbox_json(sb));
	sandbox_put(sb);
	return ret;
}

struct sandbox *sandbox_fork_one(struct sandbox *src, const char *image, json_t *labels,
				 struct serve_err *e)
{
	json_t *req;
	struct sandbox *sb;
	bool created;

	pthread_mutex_lock(&src->lock);
	req = json_deep_copy(json_object_get(src->rec, "request"));
	pthread_mutex_unlock(&src->lock);
	json_object_del(req, "idempotency_key");
	json_object_del(req, "template");
	sb = sandbox_create(req, labels, image, &created, e);
	json_decref(req);
	return sb;
}

int route_sandboxes(struct MHD_Connection *conn, const char *method, char **seg, int nseg,
		    const char *body, size_t len)
{
	struct sandbox *sb;
	int ret;

	if (nseg == 0) {
		if (!strcmp(method, "POST"))
			return create_sandbox(conn, body, len);
		if (!strcmp(method, "GET"))
			return list_sandboxes(conn);
		return serve_reply_error(conn, 405, "%s /v1/sandboxes: use GET or POST", method);
	}
	if (nseg >= 2 && !strcmp(seg[1], "logs")) {
		if (strcmp(method, "GET"))
			return serve_reply_error(conn, 405, "%s .../logs: use GET", method);
		return route_logs(conn, seg[0], seg + 2, nseg - 2);
	}
	sb = sandbox_lookup(seg[0]);
	if (!sb)
		return serve_reply_error(conn, 404, "no such sandbox: %s", seg[0]);
	if (nseg == 1) {
		if (!strcmp(method, "GET")) {
			json_t *o = sandbox_json(sb);

			if (!strcmp(json_string_value(json_object_get(o, "state")), "deleted")) {
				json_decref(o);
				ret = serve_reply_error(conn, 404, "no such sandbox: %s", sb->id);
			} else {
				ret = serve_reply_json(conn, 200, o);
			}
		} else if (!strcmp(method, "DELETE")) {
			ret = sandbox_delete(sb);
			ret = ret == -ENOENT ?
				      serve_reply_error(conn, 404, "no such sandbox: %s", sb->id) :
				      serve_reply_empty(conn, 204);
		} else {
			ret = serve_reply_error(conn, 405, "%s /v1/sandboxes/ID: use GET or DELETE",
						method);
		}
	} else if (!strcmp(seg[1], "files")) {
		if (strcmp(method, "GET"))
			ret = serve_reply_error(conn, 405, "%s %s: use GET or PUT", method, seg[1]);
		else if (nseg == 2)
			ret = route_files(conn, sb, "get");
		else if (nseg == 3 && !strcmp(seg[2], "stat"))
			ret = route_files(conn, sb, "stat");
		else if (nseg == 3 && !strcmp(seg[2], "list"))
			ret = route_files(conn, sb, "ls");
		else if (nseg == 3 && !strcmp(seg[2], "tar"))
			ret = route_files(conn, sb, "tar-c");
		else
			ret = serve_reply_error(conn, 404, "no such endpoint");
	} else if (nseg != 2) {
		ret = serve_reply_error(conn, 404, "no such endpoint");
	} else if (strcmp(method, "POST")) {
		ret = serve_reply_error(conn, 405, "%s .../%s: use POST", method, seg[1]);
	} else if (!strcmp(seg[1], "exec")) {
		ret = route_exec(conn, sb, body, len);
	} else if (!strcmp(seg[1], "pause") || !strcmp(seg[1], "resume")) {
		struct serve_err e = { 0 };
		json_t *req = serve_parse_body(body, len, &e);
		static const char *const none[] = { NULL };

		if (!req || serve_check_fields(req, "", none, &e) < 0 ||
		    sandbox_set_paused(sb, !strcmp(seg[1], "pause"), &e) < 0)
			ret = serve_reply_error(conn, e.status, "%s", e.msg);
		else
			ret = serve_reply_json(conn, 200, sandbox_json(sb));
		json_decref(req);
	} else if (!strcmp(seg[1], "snapshot")) {
		ret = route_snapshot(conn, sb, body, len);
	} else if (!strcmp(seg[1], "fork")) {
		ret = route_fork(conn, sb, body, len);
	} else {
		ret = serve_reply_error(conn, 404, "no such endpoint: %s", seg[1]);
	}
	sandbox_put(sb);
	return ret;
}
