/* SPDX-License-Identifier: Apache-2.0 */
/* config.json's mounts and devices as the guest sees them: see guestview.h. */
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "oci-spec/config.h"
#include "runtime/guestview.h"
#include "runtime/oci.h"

/* A growable string. */
struct gv_buf {
	char *s;
	size_t n, cap;
	bool oom;
};

static void buf_add(struct gv_buf *b, const char *s, size_t len)
{
	if (b->oom)
		return;
	if (b->n + len + 1 > b->cap) {
		size_t cap = (b->n + len + 1) * 2;
		char *ns = realloc(b->s, cap);

		if (!ns) {
			b->oom = true;
			return;
		}
		b->s = ns;
		b->cap = cap;
	}
	memcpy(b->s + b->n, s, len);
	b->n += len;
	b->s[b->n] = '\0';
}

static void buf_str(struct gv_buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

/* A field of a sentry argument: ':' and '%' %-escaped, then the separator sep (0: none). */
static void buf_field(struct gv_buf *b, const char *s, char sep)
{
	for (; *s; s++) {
		if (*s == ':')
			buf_str(b, "%3a");
		else if (*s == '%')
			buf_str(b, "%25");
		else
			buf_add(b, s, 1);
	}
	if (sep)
		buf_add(b, &sep, 1);
}

static char *buf_done(struct gv_buf *b)
{
	if (b->oom || !b->s) {
		free(b->s);
		return NULL;
	}
	return b->s;
}

/* The config's mounts[i].options (a JSON array, or NULL). */
static json_t *mount_options(const struct oci_config *cfg, size_t i)
{
	json_t *mounts = json_object_get((json_t *)cfg->doc, "mounts");
	json_t *m = json_array_get(mounts, i);
	json_t *o = json_object_get(m, "options");

	return json_is_array(o) ? o : NULL;
}

/* The value of option NAME=... in the mount's options (the last one), or NULL. */
static const char *option_value(json_t *opts, const char *name)
{
	const char *found = NULL;
	size_t len = strlen(name), i;
	json_t *v;

	json_array_foreach(opts, i, v)
	{
		const char *s = json_string_value(v);

		if (s && !strncmp(s, name, len) && s[len] == '=')
			found = s + len + 1;
	}
	return found;
}

char *guestview_special_arg(const struct oci_config *cfg, size_t i)
{
	const struct oci_mount *m = &cfg->mounts[i];
	struct gv_buf b = { 0 };
	const char *type;

	switch (m->kind) {
	case OCI_MOUNT_PROC:
		type = "proc";
		break;
	case OCI_MOUNT_SYSFS:
		type = "sysfs";
		break;
	case OCI_MOUNT_DEVPTS:
		type = "devpts";
		break;
	case OCI_MOUNT_MQUEUE:
		type = "mqueue";
		break;
	case OCI_MOUNT_CGROUP:
		type = "cgroup";
		break;
	case OCI_MOUNT_TMPFS:
	case OCI_MOUNT_SHM:
		if (strcmp(m->destination, "/dev"))
			return NULL;
		type = "dev";
		break;
	default:
		return NULL;
	}
	buf_str(&b, type);
	buf_str(&b, ":");
	buf_field(&b, m->destination, 0);
	if (!strcmp(type, "dev")) {
		char extra[64];

		if (m->tmpfs_size) {
			snprintf(extra, sizeof(extra), ":size=%llu",
				 (unsigned long long)m->tmpfs_size);
			buf_str(&b, extra);
		}
		if (m->has_tmpfs_mode) {
			snprintf(extra, sizeof(extra), ":mode=%o", m->tmpfs_mode);
			buf_str(&b, extra);
		}
	}
	return buf_done(&b);
}

/* --- what Linux shows --- */

/* The per-mount options as Linux prints them: rw/ro, nosuid, nodev, noexec, the atime word. */
static void mount_opts(struct gv_buf *b, const struct oci_mount *m, json_t *opts)
{
	const char *atime = ",relatime";
	size_t i;
	json_t *v;

	buf_str(b, (m->flags & OCI_MNT_RDONLY) ? "ro" : "rw");
	if (m->flags & OCI_MNT_NOSUID)
		buf_str(b, ",nosuid");
	if (m->flags & OCI_MNT_NODEV)
		buf_str(b, ",nodev");
	if (m->flags & OCI_MNT_NOEXEC)
		buf_str(b, ",noexec");
	json_array_foreach(opts, i, v)
	{
		const char *s = json_string_value(v);

		if (!s)
			continue;
		if (!strcmp(s, "strictatime"))
			atime = "";
		else if (!strcmp(s, "noatime"))
			atime = ",noatime";
		else if (!strcmp(s, "relatime"))
			atime = ",relatime";
	}
	buf_str(b, atime);
}

/* An octal option value as the kernel prints it (%o, or %03o for devpts's). */
static bool octal(const char *s, unsigned long *out)
{
	char *end;

	if (!s || !*s)
		return false;
	*out = strtoul(s, &end, 8);
	return !*end;
}

/* tmpfs's show_options: size in KiB (whole pages), mode unless 1777, uid, gid. */
static void tmpfs_super(struct gv_buf *b, const struct oci_mount *m, json_t *opts)
{
	char s[64];
	unsigned long v;

	if (m->tmpfs_size) {
		unsigned long long pages = (m->tmpfs_size + 4095) / 4096;

		snprintf(s, sizeof(s), ",size=%lluk", pages * 4);
		buf_str(b, s);
	}
	if (option_value(opts, "nr_inodes")) {
		buf_str(b, ",nr_inodes=");
		buf_str(b, option_value(opts, "nr_inodes"));
	}
	if (m->has_tmpfs_mode && m->tmpfs_mode != 01777) {
		snprintf(s, sizeof(s), ",mode=%o", m->tmpfs_mode);
		buf_str(b, s);
	}
	if (option_value(opts, "uid")) {
		v = strtoul(option_value(opts, "uid"), NULL, 10);
		if (v) {
			snprintf(s, sizeof(s), ",uid=%lu", v);
			buf_str(b, s);
		}
	}
	if (option_value(opts, "gid")) {
		v = strtoul(option_value(opts, "gid"), NULL, 10);
		if (v) {
			snprintf(s, sizeof(s), ",gid=%lu", v);
			buf_str(b, s);
		}
	}
}

/* devpts's show_options: uid, gid when given, mode unless 600, ptmxmode always. */
static void devpts_super(struct gv_buf *b, json_t *opts)
{
	unsigned long mode = 0600, ptmx = 0;
	char s[64];

	if (option_value(opts, "uid")) {
		snprintf(s, sizeof(s), ",uid=%lu", strtoul(option_value(opts, "uid"), NULL, 10));
		buf_str(b, s);
	}
	if (option_value(opts, "gid")) {
		snprintf(s, sizeof(s), ",gid=%lu", strtoul(option_value(opts, "gid"), NULL, 10));
		buf_str(b, s);
	}
	if (octal(option_value(opts, "mode"), &mode) && mode != 0600) {
		snprintf(s, sizeof(s), ",mode=%03lo", mode);
		buf_str(b, s);
	}
	octal(option_value(opts, "ptmxmode"), &ptmx);
	snprintf(s, sizeof(s), ",ptmxmode=%03lo", ptmx);
	buf_str(b, s);
}

/* Undoes mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* The host mount holding path: its root, fstype, source and super options. */
struct host_mount {
	char root[PATH_MAX], point[PATH_MAX], fstype[256], source[PATH_MAX], super[1024];
};

static bool host_mount_of(const char *path, struct host_mount *out)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	_cleanup_free_ char *line = NULL;
	size_t cap = 0, best = 0;
	bool found = false;
	struct host_mount *hm = calloc(1, sizeof(*hm));

	if (!f || !hm) {
		free(hm);
		return false;
	}
	while (getline(&line, &cap, f) > 0) {
		char *sep = strstr(line, " - ");
		size_t pl;

		if (!sep)
			continue;
		if (sscanf(line, "%*s %*s %*s %4095s %4095s", hm->root, hm->point) != 2 ||
		    sscanf(sep + 3, "%255s %4095s %1023s", hm->fstype, hm->source, hm->super) != 3)
			continue;
		unescape(hm->root);
		unescape(hm->point);
		pl = strlen(hm->point);
		/* The longest mountpoint above path; of equal ones the last (the top) wins. */
		if (strncmp(path, hm->point, pl) || (pl > 1 && path[pl] != '/' && path[pl] != '\0'))
			continue;
		if (pl >= best) {
			best = pl;
			*out = *hm;
			found = true;
		}
	}
	free(hm);
	return found;
}

/* A bind mount: Linux shows the host filesystem's type, source and options, and root field. */
static void bind_label(struct gv_buf *b, const struct oci_mount *m)
{
	char real[PATH_MAX];
	struct host_mount *hm = calloc(1, sizeof(*hm));
	const char *rest;

	if (!hm || !realpath(m->source, real) || !host_mount_of(real, hm)) {
		buf_field(b, "none", ':');
		buf_field(b, m->source, ':');
		buf_field(b, (m->flags & OCI_MNT_RDONLY) ? "ro" : "rw", ':');
		buf_field(b, "/", 0);
		free(hm);
		return;
	}
	buf_field(b, hm->fstype, ':');
	buf_field(b, hm->source, ':');
	buf_field(b, hm->super, ':');
	/* The root field: the host mount's root joined with the path below its mountpoint. */
	rest = strlen(hm->point) > 1 ? real + strlen(hm->point) : real;
	if (!strcmp(hm->root, "/")) {
		buf_field(b, *rest ? rest : "/", 0);
	} else {
		buf_field(b, hm->root, 0);
		if (*rest && strcmp(rest, "/"))
			buf_field(b, rest, 0);
	}
	free(hm);
}

char *guestview_label_arg(const struct oci_config *cfg, size_t i)
{
	const struct oci_mount *m = &cfg->mounts[i];
	json_t *opts = mount_options(cfg, i);
	struct gv_buf b = { 0 }, o = { 0 }, sup = { 0 };
	const char *fstype = m->type;
	const char *source = m->source && *m->source ? m->source : "none";
	char *s;

	buf_field(&b, m->destination, ':');
	mount_opts(&o, m, opts);
	s = buf_done(&o);
	if (!s)
		return NULL;
	buf_field(&b, s, ':');
	free(s);
	if (m->kind == OCI_MOUNT_BIND) {
		bind_label(&b, m);
		return buf_done(&b);
	}
	buf_str(&sup, (m->flags & OCI_MNT_RDONLY) ? "ro" : "rw");
	switch (m->kind) {
	case OCI_MOUNT_TMPFS:
	case OCI_MOUNT_SHM:
		fstype = "tmpfs";
		tmpfs_super(&sup, m, opts);
		break;
	case OCI_MOUNT_DEVPTS:
		devpts_super(&sup, opts);
		break;
	case OCI_MOUNT_CGROUP:
		/* The sentry's /sys/fs/cgroup is a cgroup v2 hierarchy (sentry/fs/sys). */
		fstype = "cgroup2";
		break;
	default:
		break;
	}
	buf_field(&b, fstype ? fstype : "none", ':');
	buf_field(&b, source, ':');
	s = buf_done(&sup);
	if (!s) {
		free(buf_done(&b));
		return NULL;
	}
	buf_field(&b, s, ':');
	free(s);
	buf_field(&b, "/", 0);
	return buf_done(&b);
}

/* --- devices --- */

static bool json_uint(json_t *o, const char *key, unsigned long long max, unsigned long long dflt,
		      unsigned long long *out)
{
	json_t *v = json_object_get(o, key);

	if (!v) {
		*out = dflt;
		return true;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (unsigned long long)json_integer_value(v) > max)
		return false;
	*out = (unsigned long long)json_integer_value(v);
	return true;
}

/* runc's default rules (libcontainer's AllowedDevices), appended after the config's. */
static const char *const default_rules[] = {
	"allow:c:*:*:m",
	"allow:b:*:*:m",
	"allow:c:1:3:rwm",
	"allow:c:1:8:rwm",
	"allow:c:1:7:rwm",
	"allow:c:5:0:rwm",
	"allow:c:1:5:rwm",
	"allow:c:1:9:rwm",
	"allow:c:136:*:rwm",
	"allow:c:5:2:rwm",
	"allow:c:10:200:rwm",
	/* husk's /dev/console is 5:1 (runc binds the console's pty slave, 136:N, there). */
	"allow:c:5:1:rwm",
};

void guestview_device_args(const struct oci_config *cfg, guestview_add_fn add, void *ctx)
{
	json_t *lnx = json_object_get((json_t *)cfg->doc, "linux");
	json_t *devs = json_object_get(lnx, "devices");
	json_t *res = json_object_get(lnx, "resources");
	json_t *rules = json_object_get(res, "devices");
	size_t i;
	json_t *d;

	/* process.terminal: the sentry's stdin is the console; /dev/console opens it. */
	if (cfg->terminal)
		add(ctx, "--console");
	json_array_foreach(devs, i, d)
	{
		const char *path = json_string_value(json_object_get(d, "path"));
		const char *type = json_string_value(json_object_get(d, "type"));
		unsigned long long major, minor, mode, uid, gid;
		struct gv_buf b = { 0 };
		char nums[128];
		char *arg;

		if (!path || path[0] != '/' || !type || strlen(type) != 1 ||
		    !strchr("cubp", type[0]) || !json_uint(d, "major", 0xfff, 0, &major) ||
		    !json_uint(d, "minor", 0xfffff, 0, &minor) ||
		    !json_uint(d, "fileMode", 0xffffffffULL, 0666, &mode) ||
		    !json_uint(d, "uid", 0xffffffffULL, 0, &uid) ||
		    !json_uint(d, "gid", 0xffffffffULL, 0, &gid)) {
			oci_warn("linux.devices[%zu]: expected path, type (c, u, b or p), major, "
				 "minor, fileMode, uid, gid; skipped",
				 i);
			continue;
		}
		buf_str(&b, "--device=");
		buf_field(&b, path, ':');
		snprintf(nums, sizeof(nums), "%c:%llu:%llu:%llo:%llu:%llu", type[0], major, minor,
			 mode & 07777, uid, gid);
		buf_str(&b, nums);
		arg = buf_done(&b);
		if (arg)
			add(ctx, arg);
		free(arg);
	}
	json_array_foreach(rules, i, d)
	{
		json_t *allow = json_object_get(d, "allow");
		const char *type = json_string_value(json_object_get(d, "type"));
		const char *access = json_string_value(json_object_get(d, "access"));
		json_t *jmaj = json_object_get(d, "major"), *jmin = json_object_get(d, "minor");
		char arg[128], maj[24] = "*", min[24] = "*";

		if (!json_is_boolean(allow) ||
		    (type && (strlen(type) != 1 || !strchr("acb", *type))) ||
		    (access && strspn(access, "rwm") != strlen(access)) ||
		    (jmaj && !json_is_null(jmaj) && !json_is_integer(jmaj)) ||
		    (jmin && !json_is_null(jmin) && !json_is_integer(jmin))) {
			oci_warn("linux.resources.devices[%zu]: expected allow, type (a, c or b), "
				 "major, minor, access (of rwm); skipped",
				 i);
			continue;
		}
		/* A negative number is the wildcard, as runc reads it. */
		if (json_is_integer(jmaj) && json_integer_value(jmaj) >= 0)
			snprintf(maj, sizeof(maj), "%lld", (long long)json_integer_value(jmaj));
		if (json_is_integer(jmin) && json_integer_value(jmin) >= 0)
			snprintf(min, sizeof(min), "%lld", (long long)json_integer_value(jmin));
		snprintf(arg, sizeof(arg), "--device-rule=%s:%s:%s:%s:%s",
			 json_is_true(allow) ? "allow" : "deny", type ? type : "a", maj, min,
			 access && *access ? access : "rwm");
		add(ctx, arg);
	}
	/* runc appends its defaults to any config (so they cannot be denied); a config without
	 * rules gets them too, after runc's implicit deny of everything else. */
	if (!json_array_size(rules))
		add(ctx, "--device-rule=deny:a:*:*:rwm");
	for (i = 0; i < sizeof(default_rules) / sizeof(default_rules[0]); i++) {
		char arg[64];

		snprintf(arg, sizeof(arg), "--device-rule=%s", default_rules[i]);
		add(ctx, arg);
	}
}
