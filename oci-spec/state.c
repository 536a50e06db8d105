/* SPDX-License-Identifier: Apache-2.0 */
/* State JSON as runc prints it, and the features document. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "oci-spec/state.h"

void oci_timestamp_now(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	char frac[16];
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	/* Go's RFC3339Nano, which runc uses: the fraction without trailing zeros. */
	snprintf(frac, sizeof(frac), ".%09ld", ts.tv_nsec);
	n = strlen(frac);
	while (n > 1 && frac[n - 1] == '0')
		frac[--n] = 0;
	if (n == 1)
		frac[0] = 0;
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d%sZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

static json_t *annotations_object(const struct oci_state *s)
{
	json_t *a = json_object();

	for (size_t i = 0; a && i < s->nannotations; i++)
		json_object_set_new(a, s->annotations[i].key, json_string(s->annotations[i].value));
	return a;
}

static json_t *state_object(const struct oci_state *s, enum oci_state_format format)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "ociVersion", json_string(OCI_VERSION));
	json_object_set_new(o, "id", json_string(s->id));
	if (format == OCI_STATE_HOOK) {
		json_object_set_new(o, "status", json_string(s->status));
		if (s->pid > 0)
			json_object_set_new(o, "pid", json_integer(s->pid));
		json_object_set_new(o, "bundle", json_string(s->bundle));
		json_object_set_new(o, "annotations", annotations_object(s));
		return o;
	}
	/* runc's containerState, in its field order. */
	json_object_set_new(o, "pid", json_integer(s->pid));
	json_object_set_new(o, "status", json_string(s->status));
	json_object_set_new(o, "bundle", json_string(s->bundle));
	json_object_set_new(o, "rootfs", json_string(s->rootfs ? s->rootfs : ""));
	json_object_set_new(o, "created", json_string(s->created ? s->created : ""));
	if (s->nannotations)
		json_object_set_new(o, "annotations", annotations_object(s));
	json_object_set_new(o, "owner", json_string(s->owner ? s->owner : ""));
	return o;
}

char *oci_state_json(const struct oci_state *s, enum oci_state_format format)
{
	json_t *o = state_object(s, format);
	char *out;

	if (!o)
		return NULL;
	out = json_dumps(o, JSON_PRESERVE_ORDER |
				    (format == OCI_STATE_RUNC ? JSON_INDENT(2) : JSON_COMPACT));
	json_decref(o);
	return out;
}

char *oci_state_list_json(const struct oci_state *states, size_t n)
{
	json_t *arr = json_array();
	char *out;

	if (!arr)
		return NULL;
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, state_object(&states[i], OCI_STATE_RUNC));
	out = json_dumps(arr, JSON_PRESERVE_ORDER | JSON_COMPACT);
	json_decref(arr);
	return out;
}

static json_t *string_array(const char *const *names, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_string(names[i]));
	return a;
}

char *oci_features_json(const char *platforms, const char *platform_auto)
{
	static const char *const mount_options[] = {
		"bind",	 "dev",	     "exec", "mode", "nodev", "noexec", "nosuid",
		"rbind", "relatime", "ro",   "rw",   "size",  "suid",
	};
	static const char *const namespaces[] = { "cgroup", "ipc",  "mount", "network",
						  "pid",    "user", "uts" };
	static const char *const actions[] = {
		"SCMP_ACT_ALLOW",	"SCMP_ACT_ERRNO", "SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS",
		"SCMP_ACT_KILL_THREAD", "SCMP_ACT_LOG",	  "SCMP_ACT_TRAP",
	};
	static const char *const archs[] = { "SCMP_ARCH_X86_64" };
	json_t *o = json_object(), *linux_ = json_object(), *caps = json_array();
	json_t *hooks = json_array(), *cg, *sc, *ann;
	char *out;

	if (!o || !linux_ || !caps || !hooks) {
		json_decref(o);
		json_decref(linux_);
		json_decref(caps);
		json_decref(hooks);
		return NULL;
	}
	for (int k = 0; k < OCI_HOOK_NKINDS; k++)
		json_array_append_new(hooks, json_string(oci_hook_kind_name(k)));
	for (int c = 0; c < oci_cap_count(); c++)
		json_array_append_new(caps, json_string(oci_cap_name(c)));
	json_object_set_new(o, "ociVersionMin", json_string("1.0.0"));
	json_object_set_new(o, "ociVersionMax", json_string(OCI_VERSION));
	json_object_set_new(o, "hooks", hooks);
	json_object_set_new(o, "mountOptions",
			    string_array(mount_options,
					 sizeof(mount_options) / sizeof(mount_options[0])));
	json_object_set_new(linux_, "namespaces",
			    string_array(namespaces, sizeof(namespaces) / sizeof(namespaces[0])));
	json_object_set_new(linux_, "capabilities", caps);
	cg = json_pack("{s:b,s:b,s:b,s:b}", "v1", 1, "v2", 1, "systemd", 0, "systemdUser", 0);
	json_object_set_new(linux_, "cgroup", cg);
	sc = json_pack("{s:b,s:o,s:[],s:o}", "enabled", 1, "actions",
		       string_array(actions, sizeof(actions) / sizeof(actions[0])), "operators",
		       "archs", string_array(archs, 1));
	json_object_set_new(linux_, "seccomp", sc);
	json_object_set_new(linux_, "apparmor", json_pack("{s:b}", "enabled", 0));
	json_object_set_new(linux_, "selinux", json_pack("{s:b}", "enabled", 0));
	json_object_set_new(o, "linux", linux_);
	ann = json_object();
	if (ann && platforms)
		json_object_set_new(ann, "dev.husk.platforms", json_string(platforms));
	if (ann && platform_auto)
		json_object_set_new(ann, "dev.husk.platform.auto", json_string(platform_auto));
	if (ann)
		json_object_set_new(ann, "dev.husk.userspace-kernel", json_string("true"));
	json_object_set_new(o, "annotations", ann);
	out = json_dumps(o, JSON_PRESERVE_ORDER | JSON_INDENT(4));
	json_decref(o);
	return out;
}
