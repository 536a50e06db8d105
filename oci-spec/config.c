/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.json parsing and validation. A walk over the jansson tree that keeps the path of the
 * field it is in ("process.args[2]"), so that every error can name it.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "oci-spec/config.h"

#define MAX_CONFIG_SIZE (16u << 20)

struct walk {
	struct oci_error *err;
	char path[256];
	size_t len;
	int ret; /* 0, or the first error */
};

static void push_key(struct walk *w, const char *key, size_t *saved)
{
	*saved = w->len;
	snprintf(w->path + w->len, sizeof(w->path) - w->len, "%s%s", w->len ? "." : "", key);
	w->len = strlen(w->path);
}

static void push_index(struct walk *w, size_t i, size_t *saved)
{
	*saved = w->len;
	snprintf(w->path + w->len, sizeof(w->path) - w->len, "[%zu]", i);
	w->len = strlen(w->path);
}

static void pop(struct walk *w, size_t saved)
{
	w->len = saved;
	w->path[saved] = 0;
}

const char *oci_json_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

/* Records an error about the current field (or sub, a key below it); returns -EINVAL. */
static int __attribute__((format(printf, 3, 4)))
bad(struct walk *w, const char *sub, const char *fmt, ...)
{
	char msg[200];
	va_list ap;
	int n;

	if (w->ret)
		return w->ret;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!w->len && !sub)
		n = snprintf(w->err->msg, sizeof(w->err->msg), "config.json: ");
	else
		n = snprintf(w->err->msg, sizeof(w->err->msg),
			     "config.json: %.200s%s%.40s: ", w->len ? w->path : "",
			     sub && w->len ? "." : "", sub ? sub : "");
	if (n > 0 && (size_t)n < sizeof(w->err->msg))
		memcpy(w->err->msg + n, msg, strnlen(msg, sizeof(w->err->msg) - (size_t)n - 1) + 1);
	w->err->msg[sizeof(w->err->msg) - 1] = 0;
	w->ret = -EINVAL;
	return w->ret;
}

static int oom(struct walk *w)
{
	if (!w->ret) {
		snprintf(w->err->msg, sizeof(w->err->msg), "config.json: out of memory");
		w->ret = -ENOMEM;
	}
	return w->ret;
}

/* The member key of obj if present and not null; checks its type against want. */
static json_t *member(struct walk *w, json_t *obj, const char *key, json_type want)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v))
		return NULL;
	if (json_typeof(v) == want || (want == JSON_TRUE && json_is_boolean(v)) ||
	    (want == JSON_REAL && json_is_number(v)))
		return v;
	{
		static const char *const names[] = {
			[JSON_OBJECT] = "an object", [JSON_ARRAY] = "an array",
			[JSON_STRING] = "a string",  [JSON_INTEGER] = "an integer",
			[JSON_REAL] = "a number",    [JSON_TRUE] = "a boolean",
		};
		bad(w, key, "expected %s, got %s", names[want], oci_json_kind(v));
	}
	return NULL;
}

static int get_string(struct walk *w, json_t *obj, const char *key, bool required, const char **out)
{
	json_t *v = member(w, obj, key, JSON_STRING);

	if (w->ret)
		return w->ret;
	if (!v) {
		if (required)
			return bad(w, key, "required");
		return 0;
	}
	*out = json_string_value(v);
	return 0;
}

static int get_bool(struct walk *w, json_t *obj, const char *key, bool *out)
{
	json_t *v = member(w, obj, key, JSON_TRUE);

	if (v)
		*out = json_is_true(v);
	return w->ret;
}

/* An integer member in [min, max]; *present says whether it was there. */
static int get_int(struct walk *w, json_t *obj, const char *key, long long min, long long max,
		   long long *out, bool *present)
{
	json_t *v = member(w, obj, key, JSON_INTEGER);

	if (present)
		*present = false;
	if (w->ret || !v)
		return w->ret;
	if (json_integer_value(v) < min || json_integer_value(v) > max)
		return bad(w, key, "%lld is out of range [%lld, %lld]", json_integer_value(v), min,
			   max);
	*out = json_integer_value(v);
	if (present)
		*present = true;
	return 0;
}

/*
 * A uint64 member. jansson stores integers as signed 64 bits and fails on larger ones, so values
 * past INT64_MAX (a spec writer's "unlimited") only parse if written as -1... accept
 * non-negative values.
 */
static int get_u64(struct walk *w, json_t *obj, const char *key, uint64_t *out, bool *present)
{
	long long v = 0;
	int ret = get_int(w, obj, key, 0, LLONG_MAX, &v, present);

	if (!ret && (!present || *present))
		*out = (uint64_t)v;
	return ret;
}

static int get_u32(struct walk *w, json_t *obj, const char *key, uint32_t *out)
{
	long long v = 0;
	bool present;
	int ret = get_int(w, obj, key, 0, UINT32_MAX, &v, &present);

	if (!ret && present)
		*out = (uint32_t)v;
	return ret;
}

/* An array of strings (NULL-terminated in *out); NULL if absent. */
static int get_strings(struct walk *w, json_t *obj, const char *key, const char ***out,
		       size_t *count)
{
	json_t *arr = member(w, obj, key, JSON_ARRAY);
	const char **list;
	size_t saved, saved2, i;
	json_t *v;

	if (count)
		*count = 0;
	if (w->ret || !arr)
		return w->ret;
	list = calloc(json_array_size(arr) + 1, sizeof(*list));
	if (!list)
		return oom(w);
	push_key(w, key, &saved);
	json_array_foreach(arr, i, v)
	{
		if (!json_is_string(v)) {
			push_index(w, i, &saved2);
			bad(w, NULL, "expected a string, got %s", oci_json_kind(v));
			pop(w, saved2);
			break;
		}
		list[i] = json_string_value(v);
	}
	pop(w, saved);
	if (w->ret) {
		free(list);
		return w->ret;
	}
	free(*out);
	*out = list;
	if (count)
		*count = json_array_size(arr);
	return 0;
}

static int check_absolute(struct walk *w, const char *key, const char *p)
{
	if (p && p[0] != '/')
		return bad(w, key, "expected an absolute path, got \"%s\"", p);
	return w->ret;
}

/* ---- tables ------------------------------------------------------------------------------ */

static const struct {
	const char *name;
	int resource;
} rlimit_names[] = {
	{ "RLIMIT_AS", RLIMIT_AS },
	{ "RLIMIT_CORE", RLIMIT_CORE },
	{ "RLIMIT_CPU", RLIMIT_CPU },
	{ "RLIMIT_DATA", RLIMIT_DATA },
	{ "RLIMIT_FSIZE", RLIMIT_FSIZE },
	{ "RLIMIT_LOCKS", RLIMIT_LOCKS },
	{ "RLIMIT_MEMLOCK", RLIMIT_MEMLOCK },
	{ "RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE },
	{ "RLIMIT_NICE", RLIMIT_NICE },
	{ "RLIMIT_NOFILE", RLIMIT_NOFILE },
	{ "RLIMIT_NPROC", RLIMIT_NPROC },
	{ "RLIMIT_RSS", RLIMIT_RSS },
	{ "RLIMIT_RTPRIO", RLIMIT_RTPRIO },
	{ "RLIMIT_RTTIME", RLIMIT_RTTIME },
	{ "RLIMIT_SIGPENDING", RLIMIT_SIGPENDING },
	{ "RLIMIT_STACK", RLIMIT_STACK },
};

int oci_rlimit_from_name(const char *name)
{
	for (size_t i = 0; i < sizeof(rlimit_names) / sizeof(rlimit_names[0]); i++) {
		if (!strcmp(rlimit_names[i].name, name))
			return rlimit_names[i].resource;
	}
	return -1;
}

static const char *const cap_names[] = {
	"CAP_CHOWN",
	"CAP_DAC_OVERRIDE",
	"CAP_DAC_READ_SEARCH",
	"CAP_FOWNER",
	"CAP_FSETID",
	"CAP_KILL",
	"CAP_SETGID",
	"CAP_SETUID",
	"CAP_SETPCAP",
	"CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE",
	"CAP_NET_BROADCAST",
	"CAP_NET_ADMIN",
	"CAP_NET_RAW",
	"CAP_IPC_LOCK",
	"CAP_IPC_OWNER",
	"CAP_SYS_MODULE",
	"CAP_SYS_RAWIO",
	"CAP_SYS_CHROOT",
	"CAP_SYS_PTRACE",
	"CAP_SYS_PACCT",
	"CAP_SYS_ADMIN",
	"CAP_SYS_BOOT",
	"CAP_SYS_NICE",
	"CAP_SYS_RESOURCE",
	"CAP_SYS_TIME",
	"CAP_SYS_TTY_CONFIG",
	"CAP_MKNOD",
	"CAP_LEASE",
	"CAP_AUDIT_WRITE",
	"CAP_AUDIT_CONTROL",
	"CAP_SETFCAP",
	"CAP_MAC_OVERRIDE",
	"CAP_MAC_ADMIN",
	"CAP_SYSLOG",
	"CAP_WAKE_ALARM",
	"CAP_BLOCK_SUSPEND",
	"CAP_AUDIT_READ",
	"CAP_PERFMON",
	"CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
};

int oci_cap_count(void)
{
	return (int)(sizeof(cap_names) / sizeof(cap_names[0]));
}

int oci_cap_from_name(const char *name)
{
	for (int i = 0; i < oci_cap_count(); i++) {
		if (!strcmp(cap_names[i], name))
			return i;
	}
	return -1;
}

const char *oci_cap_name(int cap)
{
	return cap >= 0 && cap < oci_cap_count() ? cap_names[cap] : NULL;
}

static const char *const hook_names[OCI_HOOK_NKINDS] = {
	[OCI_HOOK_PRESTART] = "prestart",
	[OCI_HOOK_CREATE_RUNTIME] = "createRuntime",
	[OCI_HOOK_CREATE_CONTAINER] = "createContainer",
	[OCI_HOOK_START_CONTAINER] = "startContainer",
	[OCI_HOOK_POSTSTART] = "poststart",
	[OCI_HOOK_POSTSTOP] = "poststop",
};

const char *oci_hook_kind_name(enum oci_hook_kind kind)
{
	return kind < OCI_HOOK_NKINDS ? hook_names[kind] : NULL;
}

static const char *const seccomp_actions[] = {
	[OCI_SECCOMP_KILL] = "SCMP_ACT_KILL",
	[OCI_SECCOMP_KILL_PROCESS] = "SCMP_ACT_KILL_PROCESS",
	[OCI_SECCOMP_KILL_THREAD] = "SCMP_ACT_KILL_THREAD",
	[OCI_SECCOMP_TRAP] = "SCMP_ACT_TRAP",
	[OCI_SECCOMP_ERRNO] = "SCMP_ACT_ERRNO",
	[OCI_SECCOMP_TRACE] = "SCMP_ACT_TRACE",
	[OCI_SECCOMP_ALLOW] = "SCMP_ACT_ALLOW",
	[OCI_SECCOMP_LOG] = "SCMP_ACT_LOG",
	[OCI_SECCOMP_NOTIFY] = "SCMP_ACT_NOTIFY",
};

static int seccomp_action(struct walk *w, json_t *obj, const char *key, bool required,
			  enum oci_seccomp_action *out)
{
	const char *s = NULL;

	if (get_string(w, obj, key, required, &s) || !s)
		return w->ret;
	for (size_t i = 0; i < sizeof(seccomp_actions) / sizeof(seccomp_actions[0]); i++) {
		if (!strcmp(seccomp_actions[i], s)) {
			*out = (enum oci_seccomp_action)i;
			return 0;
		}
	}
	return bad(w, key, "unknown seccomp action \"%s\"", s);
}

/* ---- sections ---------------------------------------------------------------------------- */

static int parse_user(struct walk *w, json_t *user, struct oci_config *c)
{
	json_t *gids, *v;
	size_t saved, saved2, i;
	long long umask;
	bool present;

	if (get_u32(w, user, "uid", &c->uid) || get_u32(w, user, "gid", &c->gid))
		return w->ret;
	if (get_int(w, user, "umask", 0, 07777, &umask, &present))
		return w->ret;
	if (present) {
		c->has_umask = true;
		c->umask = (uint32_t)umask;
	}
	gids = member(w, user, "additionalGids", JSON_ARRAY);
	if (w->ret || !gids)
		return w->ret;
	c->additional_gids = calloc(json_array_size(gids) + 1, sizeof(uint32_t));
	if (!c->additional_gids)
		return oom(w);
	push_key(w, "additionalGids", &saved);
	json_array_foreach(gids, i, v)
	{
		push_index(w, i, &saved2);
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > UINT32_MAX)
			bad(w, NULL, "expected a group id (0 to 4294967295), got %s",
			    json_is_integer(v) ? "an out-of-range integer" : oci_json_kind(v));
		pop(w, saved2);
		if (w->ret)
			break;
		c->additional_gids[i] = (uint32_t)json_integer_value(v);
	}
	pop(w, saved);
	c->nadditional_gids = json_array_size(gids);
	return w->ret;
}

static int parse_rlimits(struct walk *w, json_t *arr, struct oci_config *c)
{
	size_t saved, i;
	json_t *v;

	c->rlimits = calloc(json_array_size(arr) + 1, sizeof(*c->rlimits));
	if (!c->rlimits)
		return oom(w);
	json_array_foreach(arr, i, v)
	{
		struct oci_rlimit *r = &c->rlimits[i];
		bool has_soft, has_hard;

		push_index(w, i, &saved);
		if (!json_is_object(v)) {
			bad(w, NULL, "expected an object, got %s", oci_json_kind(v));
		} else if (!get_string(w, v, "type", true, &r->name)) {
			r->resource = oci_rlimit_from_name(r->name);
			if (r->resource < 0)
				bad(w, "type", "unknown rlimit \"%s\"", r->name);
			for (size_t j = 0; !w->ret && j < i; j++) {
				if (c->rlimits[j].resource == r->resource)
					bad(w, "type", "%s given twice", r->name);
			}
		}
		if (!w->ret && !get_u64(w, v, "soft", &r->soft, &has_soft) &&
		    !get_u64(w, v, "hard", &r->hard, &has_hard)) {
			if (!has_soft)
				bad(w, "soft", "required");
			else if (!has_hard)
				bad(w, "hard", "required");
			else if (r->soft > r->hard)
				bad(w, "soft", "%llu is above the hard limit %llu",
				    (unsigned long long)r->soft, (unsigned long long)r->hard);
		}
		pop(w, saved);
		if (w->ret)
			return w->ret;
		c->nrlimits++;
	}
	return 0;
}

static int parse_caps(struct walk *w, json_t *caps, struct oci_config *c)
{
	static const char *const sets[OCI_CAP_SETS] = { "bounding", "effective", "inheritable",
							"permitted", "ambient" };
	size_t saved;

	push_key(w, "capabilities", &saved);
	for (int s = 0; s < OCI_CAP_SETS && !w->ret; s++) {
		_cleanup_free_ const char **names = NULL;

		if (get_strings(w, caps, sets[s], &names, NULL) || !names)
			continue;
		/* Unknown names are ignored, as runc does: a newer engine may know newer ones. */
		for (size_t i = 0; names[i]; i++) {
			int cap = oci_cap_from_name(names[i]);
			if (cap >= 0)
				c->caps[s] |= 1ULL << cap;
		}
	}
	pop(w, saved);
	return w->ret;
}

static int parse_process(struct walk *w, json_t *p, struct oci_config *c)
{
	json_t *v;
	size_t nargs, saved;
	long long oom_adj;

	if (get_strings(w, p, "args", &c->args, &nargs))
		return w->ret;
	if (!c->args || nargs == 0)
		return bad(w, "args", "expected at least one argument");
	if (get_strings(w, p, "env", &c->env, NULL))
		return w->ret;
	if (!c->env) {
		c->env = calloc(1, sizeof(*c->env));
		if (!c->env)
			return oom(w);
	}
	for (size_t i = 0; c->env[i]; i++) {
		if (!strchr(c->env[i], '=') || c->env[i][0] == '=') {
			char sub[32];

			snprintf(sub, sizeof(sub), "env[%zu]", i);
			return bad(w, sub, "expected KEY=VALUE, got \"%s\"", c->env[i]);
		}
	}
	if (get_string(w, p, "cwd", true, &c->cwd) || check_absolute(w, "cwd", c->cwd))
		return w->ret;
	if (get_bool(w, p, "terminal", &c->terminal) ||
	    get_bool(w, p, "noNewPrivileges", &c->no_new_privileges))
		return w->ret;
	v = member(w, p, "consoleSize", JSON_OBJECT);
	if (v) {
		push_key(w, "consoleSize", &saved);
		get_u32(w, v, "height", &c->console_height);
		get_u32(w, v, "width", &c->console_width);
		pop(w, saved);
	}
	if (w->ret)
		return w->ret;
	v = member(w, p, "user", JSON_OBJECT);
	if (v) {
		push_key(w, "user", &saved);
		parse_user(w, v, c);
		pop(w, saved);
	}
	if (w->ret)
		return w->ret;
	v = member(w, p, "rlimits", JSON_ARRAY);
	if (v) {
		push_key(w, "rlimits", &saved);
		parse_rlimits(w, v, c);
		pop(w, saved);
	}
	if (w->ret)
		return w->ret;
	v = member(w, p, "capabilities", JSON_OBJECT);
	c->has_caps = v != NULL;
	if (v && parse_caps(w, v, c))
		return w->ret;
	if (w->ret || get_int(w, p, "oomScoreAdj", -1000, 1000, &oom_adj, &c->has_oom_score_adj))
		return w->ret;
	c->oom_score_adj = (int)oom_adj;
	return 0;
}

/* "64m", "1g", "4096", "50%" (kept as 0: a share of memory the sentry decides). */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 0:
		break;
	case 'k':
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		end++;
		break;
	case 'g':
	case 'G':
		v <<= 30;
		end++;
		break;
	case '%':
		v = 0;
		end++;
		break;
	default:
		return -EINVAL;
	}
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

static const struct {
	const char *type;
	enum oci_mount_kind kind;
} mount_types[] = {
	{ "bind", OCI_MOUNT_BIND },	 { "rbind", OCI_MOUNT_BIND },
	{ "tmpfs", OCI_MOUNT_TMPFS },	 { "proc", OCI_MOUNT_PROC },
	{ "sysfs", OCI_MOUNT_SYSFS },	 { "devpts", OCI_MOUNT_DEVPTS },
	{ "mqueue", OCI_MOUNT_MQUEUE },	 { "cgroup", OCI_MOUNT_CGROUP },
	{ "cgroup2", OCI_MOUNT_CGROUP }, { "shm", OCI_MOUNT_SHM },
};

static int parse_mount(struct walk *w, json_t *m, struct oci_mount *out)
{
	_cleanup_free_ const char **opts = NULL;
	bool is_bind = false, known = false;

	if (!json_is_object(m))
		return bad(w, NULL, "expected an object, got %s", oci_json_kind(m));
	if (get_string(w, m, "destination", true, &out->destination) ||
	    check_absolute(w, "destination", out->destination) ||
	    get_string(w, m, "type", false, &out->type) ||
	    get_string(w, m, "source", false, &out->source) ||
	    get_strings(w, m, "options", &opts, NULL))
		return w->ret;
	for (size_t i = 0; opts && opts[i]; i++) {
		const char *o = opts[i];

		if (!strcmp(o, "bind") || !strcmp(o, "rbind")) {
			is_bind = true;
			if (o[0] == 'r')
				out->flags |= OCI_MNT_RECURSIVE;
		} else if (!strcmp(o, "ro")) {
			out->flags |= OCI_MNT_RDONLY;
		} else if (!strcmp(o, "rw")) {
			out->flags &= ~OCI_MNT_RDONLY;
		} else if (!strcmp(o, "nosuid")) {
			out->flags |= OCI_MNT_NOSUID;
		} else if (!strcmp(o, "suid")) {
			out->flags &= ~OCI_MNT_NOSUID;
		} else if (!strcmp(o, "nodev")) {
			out->flags |= OCI_MNT_NODEV;
		} else if (!strcmp(o, "dev")) {
			out->flags &= ~OCI_MNT_NODEV;
		} else if (!strcmp(o, "noexec")) {
			out->flags |= OCI_MNT_NOEXEC;
		} else if (!strcmp(o, "exec")) {
			out->flags &= ~OCI_MNT_NOEXEC;
		} else if (!strncmp(o, "size=", 5)) {
			if (parse_size(o + 5, &out->tmpfs_size) < 0)
				return bad(w, "options", "bad size \"%s\"", o);
		} else if (!strncmp(o, "mode=", 5)) {
			char *end;
			unsigned long mode = strtoul(o + 5, &end, 8);

			if (end == o + 5 || *end || mode > 07777)
				return bad(w, "options", "bad mode \"%s\"", o);
			out->tmpfs_mode = (uint32_t)mode;
			out->has_tmpfs_mode = true;
		}
		/* Other options (relatime, private, newinstance, ptmxmode=...) are accepted. */
	}
	if (is_bind || (out->type && (!strcmp(out->type, "bind") || !strcmp(out->type, "rbind")))) {
		out->kind = OCI_MOUNT_BIND;
		known = true;
		if (out->type && !strcmp(out->type, "rbind"))
			out->flags |= OCI_MNT_RECURSIVE;
		if (!out->source)
			return bad(w, "source", "required for a bind mount");
	} else if (out->type) {
		for (size_t i = 0; i < sizeof(mount_types) / sizeof(mount_types[0]); i++) {
			if (!strcmp(mount_types[i].type, out->type)) {
				out->kind = mount_types[i].kind;
				known = true;
				break;
			}
		}
		if (!known)
			return bad(w, "type", "unsupported mount type \"%s\"", out->type);
	} else {
		return bad(w, "type", "required unless the options say bind or rbind");
	}
	return 0;
}

static int parse_hooks(struct walk *w, json_t *hooks, struct oci_config *c)
{
	size_t saved, saved2, i;
	json_t *arr, *h;

	for (int k = 0; k < OCI_HOOK_NKINDS; k++) {
		arr = member(w, hooks, hook_names[k], JSON_ARRAY);
		if (w->ret)
			return w->ret;
		if (!arr)
			continue;
		c->hooks[k].hooks = calloc(json_array_size(arr) + 1, sizeof(struct oci_hook));
		if (!c->hooks[k].hooks)
			return oom(w);
		push_key(w, hook_names[k], &saved);
		json_array_foreach(arr, i, h)
		{
			struct oci_hook *hk = &c->hooks[k].hooks[i];
			long long timeout = 0;

			push_index(w, i, &saved2);
			if (!json_is_object(h))
				bad(w, NULL, "expected an object, got %s", oci_json_kind(h));
			else if (!get_string(w, h, "path", true, &hk->path) &&
				 !check_absolute(w, "path", hk->path) &&
				 !get_strings(w, h, "args", &hk->args, NULL) &&
				 !get_strings(w, h, "env", &hk->env, NULL) &&
				 !get_int(w, h, "timeout", 1, INT_MAX, &timeout, NULL))
				hk->timeout = (int)timeout;
			pop(w, saved2);
			if (w->ret)
				break;
			c->hooks[k].n++;
		}
		pop(w, saved);
		if (w->ret)
			return w->ret;
	}
	return 0;
}

/* An object whose values are all strings, into a key/value array. */
static int get_string_map(struct walk *w, json_t *obj, const char *key, struct oci_kv **out,
			  size_t *n)
{
	json_t *map = member(w, obj, key, JSON_OBJECT);
	const char *k;
	json_t *v;
	size_t saved;

	if (w->ret || !map)
		return w->ret;
	*out = calloc(json_object_size(map) + 1, sizeof(**out));
	if (!*out)
		return oom(w);
	push_key(w, key, &saved);
	json_object_foreach(map, k, v)
	{
		if (!json_is_string(v)) {
			bad(w, k, "expected a string, got %s", oci_json_kind(v));
			break;
		}
		(*out)[*n].key = k;
		(*out)[*n].value = json_string_value(v);
		(*n)++;
	}
	pop(w, saved);
	return w->ret;
}

/* blockIO's device lists: [{major, minor, weight|rate[, leafWeight]}]. */
static int parse_blkio_devices(struct walk *w, json_t *bio, const char *key, bool weights,
			       struct oci_blkio_device **out, size_t *n)
{
	json_t *arr = member(w, bio, key, JSON_ARRAY);
	size_t saved, saved2, i;
	json_t *d;

	if (w->ret || !arr)
		return w->ret;
	*out = calloc(json_array_size(arr) + 1, sizeof(**out));
	if (!*out)
		return oom(w);
	push_key(w, key, &saved);
	json_array_foreach(arr, i, d)
	{
		struct oci_blkio_device *dev = &(*out)[*n];
		long long v;
		bool present;

		push_index(w, i, &saved2);
		if (!json_is_object(d)) {
			bad(w, NULL, "expected an object, got %s", oci_json_kind(d));
		} else if (!get_int(w, d, "major", 0, UINT32_MAX, &v, &present)) {
			if (!present)
				bad(w, "major", "required");
			dev->major = v;
			if (!w->ret && !get_int(w, d, "minor", 0, UINT32_MAX, &v, &present)) {
				if (!present)
					bad(w, "minor", "required");
				dev->minor = v;
			}
			if (weights) {
				if (!w->ret && !get_int(w, d, "weight", 10, 1000, &v, &present) &&
				    present) {
					dev->value = (uint64_t)v;
					dev->has_value = true;
				}
				if (!w->ret &&
				    !get_int(w, d, "leafWeight", 10, 1000, &v, &present) && present)
					dev->leaf_weight = (uint64_t)v;
			} else if (!w->ret) {
				get_u64(w, d, "rate", &dev->value, &dev->has_value);
				if (!w->ret && !dev->has_value)
					bad(w, "rate", "required");
			}
		}
		pop(w, saved2);
		if (w->ret)
			break;
		(*n)++;
	}
	pop(w, saved);
	return w->ret;
}

static int parse_resources_into(struct walk *w, json_t *r, struct oci_resources *res)
{
	static const char *const blkio_keys[OCI_BLKIO_NLISTS] = {
		[OCI_BLKIO_WEIGHT_DEVICE] = "weightDevice",
		[OCI_BLKIO_READ_BPS] = "throttleReadBpsDevice",
		[OCI_BLKIO_WRITE_BPS] = "throttleWriteBpsDevice",
		[OCI_BLKIO_READ_IOPS] = "throttleReadIOPSDevice",
		[OCI_BLKIO_WRITE_IOPS] = "throttleWriteIOPSDevice",
	};
	json_t *mem, *pids, *cpu, *bio, *hp, *net, *e;
	long long v;
	bool present;
	size_t saved, saved2, i;

#define RES_INT(obj, key, min, field, bit)                                            \
	do {                                                                          \
		if (!get_int(w, obj, key, min, LLONG_MAX, &v, &present) && present) { \
			res->field = v;                                               \
			res->set |= bit;                                              \
		}                                                                     \
	} while (0)
	mem = member(w, r, "memory", JSON_OBJECT);
	if (mem) {
		push_key(w, "memory", &saved);
		RES_INT(mem, "limit", -1, memory_limit, OCI_RES_MEMORY_LIMIT);
		RES_INT(mem, "reservation", -1, memory_reservation, OCI_RES_MEMORY_RESERVATION);
		RES_INT(mem, "swap", -1, memory_swap, OCI_RES_MEMORY_SWAP);
		RES_INT(mem, "kernel", -1, memory_kernel, OCI_RES_MEMORY_KERNEL);
		RES_INT(mem, "kernelTCP", -1, memory_kernel_tcp, OCI_RES_MEMORY_KERNEL_TCP);
		if (!get_int(w, mem, "swappiness", 0, 100, &v, &present) && present) {
			res->memory_swappiness = (uint64_t)v;
			res->set |= OCI_RES_MEMORY_SWAPPINESS;
		}
		pop(w, saved);
	}
	pids = member(w, r, "pids", JSON_OBJECT);
	if (pids) {
		push_key(w, "pids", &saved);
		if (!get_int(w, pids, "limit", LLONG_MIN, LLONG_MAX, &v, &present) && present) {
			res->pids_limit = v <= 0 ? -1 : v;
			res->set |= OCI_RES_PIDS_LIMIT;
		}
		pop(w, saved);
	}
	cpu = member(w, r, "cpu", JSON_OBJECT);
	if (cpu) {
		push_key(w, "cpu", &saved);
		RES_INT(cpu, "shares", 0, cpu_shares, OCI_RES_CPU_SHARES);
		RES_INT(cpu, "quota", -1, cpu_quota, OCI_RES_CPU_QUOTA);
		RES_INT(cpu, "period", 0, cpu_period, OCI_RES_CPU_PERIOD);
		RES_INT(cpu, "realtimeRuntime", -1, cpu_rt_runtime, OCI_RES_CPU_RT_RUNTIME);
		RES_INT(cpu, "realtimePeriod", 0, cpu_rt_period, OCI_RES_CPU_RT_PERIOD);
		get_string(w, cpu, "cpus", false, &res->cpuset_cpus);
		get_string(w, cpu, "mems", false, &res->cpuset_mems);
		pop(w, saved);
	}
	bio = member(w, r, "blockIO", JSON_OBJECT);
	if (bio) {
		push_key(w, "blockIO", &saved);
		if (!get_int(w, bio, "weight", 10, 1000, &v, &present) && present) {
			res->blkio_weight = (uint16_t)v;
			res->set |= OCI_RES_BLKIO_WEIGHT;
		}
		if (!get_int(w, bio, "leafWeight", 10, 1000, &v, &present) && present) {
			res->blkio_leaf_weight = (uint16_t)v;
			res->set |= OCI_RES_BLKIO_LEAF_WEIGHT;
		}
		for (int k = 0; k < OCI_BLKIO_NLISTS && !w->ret; k++)
			parse_blkio_devices(w, bio, blkio_keys[k], k == OCI_BLKIO_WEIGHT_DEVICE,
					    &res->blkio[k], &res->nblkio[k]);
		pop(w, saved);
	}
	hp = member(w, r, "hugepageLimits", JSON_ARRAY);
	if (hp) {
		push_key(w, "hugepageLimits", &saved);
		res->hugepages = calloc(json_array_size(hp) + 1, sizeof(*res->hugepages));
		if (!res->hugepages)
			return oom(w);
		json_array_foreach(hp, i, e)
		{
			struct oci_hugepage_limit *l = &res->hugepages[res->nhugepages];

			push_index(w, i, &saved2);
			if (!json_is_object(e))
				bad(w, NULL, "expected an object, got %s", oci_json_kind(e));
			else if (!get_string(w, e, "pageSize", true, &l->page_size) &&
				 !get_u64(w, e, "limit", &l->limit, &present) && !present)
				bad(w, "limit", "required");
			if (!w->ret && (!*l->page_size || strchr(l->page_size, '/')))
				bad(w, "pageSize", "\"%s\" is not a page size", l->page_size);
			pop(w, saved2);
			if (w->ret)
				break;
			res->nhugepages++;
		}
		pop(w, saved);
	}
	net = member(w, r, "network", JSON_OBJECT);
	if (net) {
		json_t *prio;

		push_key(w, "network", &saved);
		if (!get_int(w, net, "classID", 0, UINT32_MAX, &v, &present) && present) {
			res->net_classid = (uint32_t)v;
			res->set |= OCI_RES_NET_CLASSID;
		}
		prio = member(w, net, "priorities", JSON_ARRAY);
		if (prio) {
			push_key(w, "priorities", &saved2);
			res->net_priorities =
				calloc(json_array_size(prio) + 1, sizeof(*res->net_priorities));
			if (!res->net_priorities)
				return oom(w);
			json_array_foreach(prio, i, e)
			{
				struct oci_net_priority *np = &res->net_priorities[i];
				size_t saved3;

				push_index(w, i, &saved3);
				if (!json_is_object(e))
					bad(w, NULL, "expected an object, got %s",
					    oci_json_kind(e));
				else if (!get_string(w, e, "name", true, &np->name))
					get_u32(w, e, "priority", &np->priority);
				if (!w->ret && (!*np->name || strpbrk(np->name, " \n/")))
					bad(w, "name", "\"%s\" is not an interface name", np->name);
				pop(w, saved3);
				if (w->ret)
					break;
				res->nnet_priorities++;
			}
			pop(w, saved2);
		}
		pop(w, saved);
	}
#undef RES_INT
	return w->ret;
}

static int parse_resources(struct walk *w, json_t *r, struct oci_config *c)
{
	struct oci_resources *res = &c->resources;

	if (parse_resources_into(w, r, res) < 0)
		return w->ret;
	if (res->set & OCI_RES_MEMORY_LIMIT)
		c->memory_limit = res->memory_limit;
	if (res->set & OCI_RES_MEMORY_RESERVATION)
		c->memory_reservation = res->memory_reservation;
	if (res->set & OCI_RES_MEMORY_SWAP)
		c->memory_swap = res->memory_swap;
	if (res->set & OCI_RES_PIDS_LIMIT)
		c->pids_limit = res->pids_limit;
	if (res->set & OCI_RES_CPU_SHARES)
		c->cpu_shares = res->cpu_shares;
	if (res->set & OCI_RES_CPU_QUOTA)
		c->cpu_quota = res->cpu_quota;
	if (res->set & OCI_RES_CPU_PERIOD)
		c->cpu_period = res->cpu_period;
	return 0;
}

void oci_resources_free(struct oci_resources *res)
{
	for (int k = 0; k < OCI_BLKIO_NLISTS; k++)
		free(res->blkio[k]);
	free(res->hugepages);
	free(res->net_priorities);
	if (res->doc)
		json_decref(res->doc);
	memset(res, 0, sizeof(*res));
}

int oci_resources_parse(const char *json, size_t len, const char *name, struct oci_resources *out,
			struct oci_error *err)
{
	struct walk w = { .err = err };
	json_error_t jerr;
	json_t *doc;

	memset(out, 0, sizeof(*out));
	doc = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc) {
		snprintf(err->msg, sizeof(err->msg), "%s: line %d, column %d: %s", name, jerr.line,
			 jerr.column, jerr.text);
		return -EINVAL;
	}
	out->doc = doc;
	if (!json_is_object(doc)) {
		snprintf(err->msg, sizeof(err->msg), "%s: expected an object, got %s", name,
			 oci_json_kind(doc));
		oci_resources_free(out);
		return -EINVAL;
	}
	if (parse_resources_into(&w, doc, out) < 0) {
		int ret = w.ret;
		const char *prefix = "config.json: ";

		/* bad() names config.json; here the document is the caller's. */
		if (!strncmp(err->msg, prefix, strlen(prefix))) {
			char rest[OCI_ERR_LEN];
			int n;

			snprintf(rest, sizeof(rest), "%s", err->msg + strlen(prefix));
			n = snprintf(err->msg, sizeof(err->msg), "%.100s: %.400s", name, rest);
			(void)n;
		}
		oci_resources_free(out);
		return ret;
	}
	return 0;
}

static const char *const seccomp_ops[] = {
	[OCI_SCMP_CMP_NE] = "SCMP_CMP_NE",
	[OCI_SCMP_CMP_LT] = "SCMP_CMP_LT",
	[OCI_SCMP_CMP_LE] = "SCMP_CMP_LE",
	[OCI_SCMP_CMP_EQ] = "SCMP_CMP_EQ",
	[OCI_SCMP_CMP_GE] = "SCMP_CMP_GE",
	[OCI_SCMP_CMP_GT] = "SCMP_CMP_GT",
	[OCI_SCMP_CMP_MASKED_EQ] = "SCMP_CMP_MASKED_EQ",
};

/* linux.seccomp.syscalls[i].args: [{index, value, valueTwo, op}]. */
static int parse_seccomp_args(struct walk *w, json_t *arr, struct oci_seccomp_rule *rule)
{
	size_t saved, i;
	json_t *a;

	rule->args = calloc(json_array_size(arr) + 1, sizeof(*rule->args));
	if (!rule->args)
		return oom(w);
	json_array_foreach(arr, i, a)
	{
		struct oci_seccomp_arg *arg = &rule->args[i];
		const char *op = NULL;
		long long idx = 0;
		bool present;

		push_index(w, i, &saved);
		if (!json_is_object(a)) {
			bad(w, NULL, "expected an object, got %s", oci_json_kind(a));
		} else if (!get_int(w, a, "index", 0, 5, &idx, &present) &&
			   !get_u64(w, a, "value", &arg->value, NULL) &&
			   !get_u64(w, a, "valueTwo", &arg->value_two, NULL) &&
			   !get_string(w, a, "op", true, &op)) {
			if (!present)
				bad(w, "index", "required");
			arg->index = (unsigned int)idx;
			arg->op = 0;
			for (size_t k = 1; k < sizeof(seccomp_ops) / sizeof(seccomp_ops[0]); k++)
				if (!strcmp(seccomp_ops[k], op))
					arg->op = (enum oci_seccomp_op)k;
			if (!arg->op)
				bad(w, "op", "unknown comparison \"%s\"", op);
		}
		pop(w, saved);
		if (w->ret)
			return w->ret;
		rule->nargs++;
	}
	return 0;
}

/* linux.seccomp.flags: the names runc knows. */
static int parse_seccomp_flags(struct walk *w, json_t *s, struct oci_seccomp *sc)
{
	_cleanup_free_ const char **flags = NULL;

	if (get_strings(w, s, "flags", &flags, NULL) || !flags)
		return w->ret;
	for (size_t i = 0; flags[i]; i++) {
		if (!strcmp(flags[i], "SECCOMP_FILTER_FLAG_TSYNC"))
			sc->flags |= OCI_SECCOMP_FLAG_TSYNC;
		else if (!strcmp(flags[i], "SECCOMP_FILTER_FLAG_LOG"))
			sc->flags |= OCI_SECCOMP_FLAG_LOG;
		else if (!strcmp(flags[i], "SECCOMP_FILTER_FLAG_SPEC_ALLOW"))
			sc->flags |= OCI_SECCOMP_FLAG_SPEC_ALLOW;
		else
			return bad(w, "flags", "unknown seccomp flag \"%s\"", flags[i]);
	}
	return 0;
}

static int parse_seccomp(struct walk *w, json_t *s, struct oci_config *c)
{
	struct oci_seccomp *sc;
	json_t *rules, *r;
	size_t saved, saved2, i;
	long long e;
	bool present;

	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return oom(w);
	c->seccomp = sc;
	sc->default_errno = EPERM;
	if (seccomp_action(w, s, "defaultAction", true, &sc->default_action))
		return w->ret;
	if (!get_int(w, s, "defaultErrnoRet", 1, 4095, &e, &present) && present)
		sc->default_errno = (uint32_t)e;
	if (get_strings(w, s, "architectures", &sc->architectures, NULL))
		return w->ret;
	if (parse_seccomp_flags(w, s, sc))
		return w->ret;
	rules = member(w, s, "syscalls", JSON_ARRAY);
	if (w->ret || !rules)
		return w->ret;
	sc->rules = calloc(json_array_size(rules) + 1, sizeof(*sc->rules));
	if (!sc->rules)
		return oom(w);
	push_key(w, "syscalls", &saved);
	json_array_foreach(rules, i, r)
	{
		struct oci_seccomp_rule *rule = &sc->rules[i];
		json_t *args;

		push_index(w, i, &saved2);
		rule->errno_ret = EPERM;
		if (!json_is_object(r)) {
			bad(w, NULL, "expected an object, got %s", oci_json_kind(r));
		} else if (!get_strings(w, r, "names", &rule->names, NULL) &&
			   !seccomp_action(w, r, "action", true, &rule->action)) {
			if (!rule->names)
				bad(w, "names", "required");
			else if (!get_int(w, r, "errnoRet", 0, 4095, &e, &present) && present)
				rule->errno_ret = (uint32_t)e;
			args = member(w, r, "args", JSON_ARRAY);
			if (args && !w->ret) {
				size_t saved3;

				push_key(w, "args", &saved3);
				parse_seccomp_args(w, args, rule);
				pop(w, saved3);
			}
			rule->has_args = rule->nargs > 0;
		}
		pop(w, saved2);
		if (w->ret)
			break;
		sc->nrules++;
	}
	pop(w, saved);
	return w->ret;
}

/* linux.uidMappings or gidMappings: [{containerID, hostID, size}, ...], each size >= 1. */
static int parse_id_mappings(struct walk *w, json_t *l, const char *key,
			     struct oci_id_mapping **out, size_t *n)
{
	json_t *arr = member(w, l, key, JSON_ARRAY), *v;
	size_t saved, saved2, i;

	if (w->ret || !arr)
		return w->ret;
	*out = calloc(json_array_size(arr) + 1, sizeof(**out));
	if (!*out)
		return oom(w);
	push_key(w, key, &saved);
	json_array_foreach(arr, i, v)
	{
		struct oci_id_mapping *m = &(*out)[i];
		long long size = 0;

		push_index(w, i, &saved2);
		if (!json_is_object(v))
			bad(w, NULL, "expected an object, got %s", oci_json_kind(v));
		else if (!json_object_get(v, "containerID") || !json_object_get(v, "hostID"))
			bad(w, NULL, "containerID and hostID are required");
		else if (!get_u32(w, v, "containerID", &m->container_id) &&
			 !get_u32(w, v, "hostID", &m->host_id) &&
			 !get_int(w, v, "size", 1, UINT32_MAX, &size, NULL)) {
			if (!size)
				bad(w, "size", "required");
			m->size = (uint32_t)size;
		}
		pop(w, saved2);
		if (w->ret)
			break;
		(*n)++;
	}
	pop(w, saved);
	return w->ret;
}

static int parse_namespaces(struct walk *w, json_t *arr, struct oci_config *c)
{
	static const char *const types[] = { "pid", "network", "mount",	 "ipc",
					     "uts", "user",    "cgroup", "time" };
	size_t saved, i;
	json_t *v;

	c->namespaces = calloc(json_array_size(arr) + 1, sizeof(*c->namespaces));
	if (!c->namespaces)
		return oom(w);
	json_array_foreach(arr, i, v)
	{
		struct oci_namespace *ns = &c->namespaces[i];
		bool known = false;

		push_index(w, i, &saved);
		if (!json_is_object(v)) {
			bad(w, NULL, "expected an object, got %s", oci_json_kind(v));
		} else if (!get_string(w, v, "type", true, &ns->type) &&
			   !get_string(w, v, "path", false, &ns->path) &&
			   !check_absolute(w, "path", ns->path)) {
			for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++)
				known |= !strcmp(types[t], ns->type);
			if (!known)
				bad(w, "type", "unknown namespace type \"%s\"", ns->type);
			for (size_t j = 0; !w->ret && j < i; j++) {
				if (!strcmp(c->namespaces[j].type, ns->type))
					bad(w, "type", "namespace \"%s\" given twice", ns->type);
			}
		}
		pop(w, saved);
		if (w->ret)
			return w->ret;
		c->nnamespaces++;
	}
	return 0;
}

static int parse_linux(struct walk *w, json_t *l, struct oci_config *c)
{
	json_t *v;
	size_t saved;

	v = member(w, l, "namespaces", JSON_ARRAY);
	if (v) {
		push_key(w, "namespaces", &saved);
		parse_namespaces(w, v, c);
		pop(w, saved);
	}
	if (w->ret || get_string(w, l, "cgroupsPath", false, &c->cgroups_path))
		return w->ret;
	v = member(w, l, "resources", JSON_OBJECT);
	if (v) {
		push_key(w, "resources", &saved);
		parse_resources(w, v, c);
		pop(w, saved);
	}
	if (w->ret || get_string_map(w, l, "sysctl", &c->sysctl, &c->nsysctl))
		return w->ret;
	v = member(w, l, "seccomp", JSON_OBJECT);
	if (v) {
		push_key(w, "seccomp", &saved);
		parse_seccomp(w, v, c);
		pop(w, saved);
	}
	if (w->ret || get_strings(w, l, "maskedPaths", &c->masked_paths, NULL) ||
	    get_strings(w, l, "readonlyPaths", &c->readonly_paths, NULL))
		return w->ret;
	for (size_t i = 0; c->masked_paths && c->masked_paths[i]; i++) {
		if (c->masked_paths[i][0] != '/')
			return bad(w, "maskedPaths", "expected absolute paths, got \"%s\"",
				   c->masked_paths[i]);
	}
	for (size_t i = 0; c->readonly_paths && c->readonly_paths[i]; i++) {
		if (c->readonly_paths[i][0] != '/')
			return bad(w, "readonlyPaths", "expected absolute paths, got \"%s\"",
				   c->readonly_paths[i]);
	}
	if (parse_id_mappings(w, l, "uidMappings", &c->uid_mappings, &c->nuid_mappings) ||
	    parse_id_mappings(w, l, "gidMappings", &c->gid_mappings, &c->ngid_mappings))
		return w->ret;
	/* devices, intelRdt, personality...: accepted, not used. */
	return 0;
}

static int parse_document(struct walk *w, json_t *doc, struct oci_config *c)
{
	json_t *v;
	size_t saved;

	if (!json_is_object(doc))
		return bad(w, NULL, "expected an object at the top level, got %s",
			   oci_json_kind(doc));
	if (get_string(w, doc, "ociVersion", true, &c->oci_version))
		return w->ret;
	if (strncmp(c->oci_version, "1.", 2) != 0)
		return bad(w, "ociVersion", "unsupported version \"%s\" (husk supports 1.x)",
			   c->oci_version);

	v = member(w, doc, "process", JSON_OBJECT);
	if (w->ret)
		return w->ret;
	if (!v)
		return bad(w, "process", "required");
	push_key(w, "process", &saved);
	parse_process(w, v, c);
	pop(w, saved);
	if (w->ret)
		return w->ret;

	v = member(w, doc, "root", JSON_OBJECT);
	if (w->ret)
		return w->ret;
	if (!v)
		return bad(w, "root", "required");
	push_key(w, "root", &saved);
	if (!get_string(w, v, "path", true, &c->root_path) && !c->root_path[0])
		bad(w, "path", "must not be empty");
	get_bool(w, v, "readonly", &c->root_readonly);
	pop(w, saved);
	if (w->ret)
		return w->ret;

	if (get_string(w, doc, "hostname", false, &c->hostname) ||
	    get_string(w, doc, "domainname", false, &c->domainname))
		return w->ret;
	if (c->hostname && strlen(c->hostname) > 64)
		return bad(w, "hostname", "longer than 64 bytes");
	if (c->domainname && strlen(c->domainname) > 64)
		return bad(w, "domainname", "longer than 64 bytes");

	v = member(w, doc, "mounts", JSON_ARRAY);
	if (w->ret)
		return w->ret;
	if (v) {
		json_t *m;
		size_t i;

		c->mounts = calloc(json_array_size(v) + 1, sizeof(*c->mounts));
		if (!c->mounts)
			return oom(w);
		push_key(w, "mounts", &saved);
		json_array_foreach(v, i, m)
		{
			size_t saved2;

			push_index(w, i, &saved2);
			parse_mount(w, m, &c->mounts[i]);
			pop(w, saved2);
			if (w->ret)
				break;
			c->nmounts++;
		}
		pop(w, saved);
		if (w->ret)
			return w->ret;
	}

	v = member(w, doc, "hooks", JSON_OBJECT);
	if (v) {
		push_key(w, "hooks", &saved);
		parse_hooks(w, v, c);
		pop(w, saved);
	}
	if (w->ret || get_string_map(w, doc, "annotations", &c->annotations, &c->nannotations))
		return w->ret;

	v = member(w, doc, "linux", JSON_OBJECT);
	if (v) {
		push_key(w, "linux", &saved);
		parse_linux(w, v, c);
		pop(w, saved);
	}
	return w->ret;
}

void oci_config_free(struct oci_config *c)
{
	if (!c)
		return;
	free(c->args);
	free(c->env);
	free(c->additional_gids);
	free(c->rlimits);
	free(c->mounts);
	for (int k = 0; k < OCI_HOOK_NKINDS; k++) {
		for (size_t i = 0; c->hooks[k].hooks && c->hooks[k].hooks[i].path; i++) {
			free(c->hooks[k].hooks[i].args);
			free(c->hooks[k].hooks[i].env);
		}
		free(c->hooks[k].hooks);
	}
	free(c->annotations);
	free(c->namespaces);
	free(c->uid_mappings);
	free(c->gid_mappings);
	free(c->sysctl);
	if (c->seccomp) {
		for (size_t i = 0; c->seccomp->rules && i < c->seccomp->nrules + 1; i++) {
			free(c->seccomp->rules[i].names);
			free(c->seccomp->rules[i].args);
		}
		free(c->seccomp->architectures);
		free(c->seccomp->rules);
		free(c->seccomp);
	}
	free(c->masked_paths);
	free(c->readonly_paths);
	oci_resources_free(&c->resources);
	json_decref(c->doc);
	free(c);
}

int oci_config_parse(const char *json, size_t len, struct oci_config **out, struct oci_error *err)
{
	struct walk w = { .err = err };
	struct oci_config *c;
	json_error_t jerr;
	json_t *doc;
	int ret;

	doc = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc) {
		snprintf(err->msg, sizeof(err->msg), "config.json: line %d, column %d: %s",
			 jerr.line, jerr.column, jerr.text);
		return -EINVAL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		json_decref(doc);
		snprintf(err->msg, sizeof(err->msg), "config.json: out of memory");
		return -ENOMEM;
	}
	c->doc = doc;
	c->memory_limit = c->memory_reservation = c->memory_swap = -1;
	c->pids_limit = -1;
	ret = parse_document(&w, doc, c);
	if (ret < 0) {
		oci_config_free(c);
		return ret;
	}
	*out = c;
	return 0;
}

int oci_config_load(const char *path, struct oci_config **out, struct oci_error *err)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	size_t off = 0;
	ssize_t n;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		snprintf(err->msg, sizeof(err->msg), "%s: %s", path, strerror(e));
		return -e;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > MAX_CONFIG_SIZE) {
		snprintf(err->msg, sizeof(err->msg), "%s: not a regular file of at most 16 MiB",
			 path);
		return -EINVAL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	while (off < (size_t)st.st_size) {
		n = read(fd, buf + off, (size_t)st.st_size - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			snprintf(err->msg, sizeof(err->msg), "%s: %s", path, strerror(e));
			return -e;
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	return oci_config_parse(buf, off, out, err);
}

const char *oci_config_annotation(const struct oci_config *c, const char *key)
{
	for (size_t i = 0; i < c->nannotations; i++) {
		if (!strcmp(c->annotations[i].key, key))
			return c->annotations[i].value;
	}
	return NULL;
}

const struct oci_namespace *oci_config_namespace(const struct oci_config *c, const char *type)
{
	for (size_t i = 0; i < c->nnamespaces; i++) {
		if (!strcmp(c->namespaces[i].type, type))
			return &c->namespaces[i];
	}
	return NULL;
}
