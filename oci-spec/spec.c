/* SPDX-License-Identifier: Apache-2.0 */
/* The config.json that `husk spec` writes: runc's template, with husk's host name. */
#include <jansson.h>
#include <string.h>
#include <unistd.h>

#include "oci-spec/config.h"

static const char default_config[] =
	"{\n"
	"	\"ociVersion\": \"1.0.2\",\n"
	"	\"process\": {\n"
	"		\"terminal\": true,\n"
	"		\"user\": {\n"
	"			\"uid\": 0,\n"
	"			\"gid\": 0\n"
	"		},\n"
	"		\"args\": [\n"
	"			\"sh\"\n"
	"		],\n"
	"		\"env\": [\n"
	"			\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\",\n"
	"			\"TERM=xterm\"\n"
	"		],\n"
	"		\"cwd\": \"/\",\n"
	"		\"capabilities\": {\n"
	"			\"bounding\": [\n"
	"				\"CAP_AUDIT_WRITE\",\n"
	"				\"CAP_KILL\",\n"
	"				\"CAP_NET_BIND_SERVICE\"\n"
	"			],\n"
	"			\"effective\": [\n"
	"				\"CAP_AUDIT_WRITE\",\n"
	"				\"CAP_KILL\",\n"
	"				\"CAP_NET_BIND_SERVICE\"\n"
	"			],\n"
	"			\"permitted\": [\n"
	"				\"CAP_AUDIT_WRITE\",\n"
	"				\"CAP_KILL\",\n"
	"				\"CAP_NET_BIND_SERVICE\"\n"
	"			],\n"
	"			\"ambient\": [\n"
	"				\"CAP_AUDIT_WRITE\",\n"
	"				\"CAP_KILL\",\n"
	"				\"CAP_NET_BIND_SERVICE\"\n"
	"			]\n"
	"		},\n"
	"		\"rlimits\": [\n"
	"			{\n"
	"				\"type\": \"RLIMIT_NOFILE\",\n"
	"				\"hard\": 1024,\n"
	"				\"soft\": 1024\n"
	"			}\n"
	"		],\n"
	"		\"noNewPrivileges\": true\n"
	"	},\n"
	"	\"root\": {\n"
	"		\"path\": \"rootfs\",\n"
	"		\"readonly\": true\n"
	"	},\n"
	"	\"hostname\": \"husk\",\n"
	"	\"mounts\": [\n"
	"		{\n"
	"			\"destination\": \"/proc\",\n"
	"			\"type\": \"proc\",\n"
	"			\"source\": \"proc\"\n"
	"		},\n"
	"		{\n"
	"			\"destination\": \"/dev\",\n"
	"			\"type\": \"tmpfs\",\n"
	"			\"source\": \"tmpfs\",\n"
	"			\"options\": [\n"
	"				\"nosuid\",\n"
	"				\"strictatime\",\n"
	"				\"mode=755\",\n"
	"				\"size=65536k\"\n"
	"			]\n"
	"		},\n"
	"		{\n"
	"			\"destination\": \"/dev/pts\",\n"
	"			\"type\": \"devpts\",\n"
	"			\"source\": \"devpts\",\n"
	"			\"options\": [\n"
	"				\"nosuid\",\n"
	"				\"noexec\",\n"
	"				\"newinstance\",\n"
	"				\"ptmxmode=0666\",\n"
	"				\"mode=0620\",\n"
	"				\"gid=5\"\n"
	"			]\n"
	"		},\n"
	"		{\n"
	"			\"destination\": \"/dev/shm\",\n"
	"			\"type\": \"tmpfs\",\n"
	"			\"source\": \"shm\",\n"
	"			\"options\": [\n"
	"				\"nosuid\",\n"
	"				\"noexec\",\n"
	"				\"nodev\",\n"
	"				\"mode=1777\",\n"
	"				\"size=65536k\"\n"
	"			]\n"
	"		},\n"
	"		{\n"
	"			\"destination\": \"/dev/mqueue\",\n"
	"			\"type\": \"mqueue\",\n"
	"			\"source\": \"mqueue\",\n"
	"			\"options\": [\n"
	"				\"nosuid\",\n"
	"				\"noexec\",\n"
	"				\"nodev\"\n"
	"			]\n"
	"		},\n"
	"		{\n"
	"			\"destination\": \"/sys\",\n"
	"			\"type\": \"sysfs\",\n"
	"			\"source\": \"sysfs\",\n"
	"			\"options\": [\n"
	"				\"nosuid\",\n"
	"				\"noexec\",\n"
	"				\"nodev\",\n"
	"				\"ro\"\n"
	"			]\n"
	"		},\n"
	"		{\n"
	"			\"destination\": \"/sys/fs/cgroup\",\n"
	"			\"type\": \"cgroup\",\n"
	"			\"source\": \"cgroup\",\n"
	"			\"options\": [\n"
	"				\"nosuid\",\n"
	"				\"noexec\",\n"
	"				\"nodev\",\n"
	"				\"relatime\",\n"
	"				\"ro\"\n"
	"			]\n"
	"		}\n"
	"	],\n"
	"	\"linux\": {\n"
	"		\"resources\": {\n"
	"			\"devices\": [\n"
	"				{\n"
	"					\"allow\": false,\n"
	"					\"access\": \"rwm\"\n"
	"				}\n"
	"			]\n"
	"		},\n"
	"		\"namespaces\": [\n"
	"			{\n"
	"				\"type\": \"pid\"\n"
	"			},\n"
	"			{\n"
	"				\"type\": \"network\"\n"
	"			},\n"
	"			{\n"
	"				\"type\": \"ipc\"\n"
	"			},\n"
	"			{\n"
	"				\"type\": \"uts\"\n"
	"			},\n"
	"			{\n"
	"				\"type\": \"mount\"\n"
	"			}\n"
	"		],\n"
	"		\"maskedPaths\": [\n"
	"			\"/proc/acpi\",\n"
	"			\"/proc/asound\",\n"
	"			\"/proc/kcore\",\n"
	"			\"/proc/keys\",\n"
	"			\"/proc/latency_stats\",\n"
	"			\"/proc/timer_list\",\n"
	"			\"/proc/timer_stats\",\n"
	"			\"/proc/sched_debug\",\n"
	"			\"/sys/firmware\",\n"
	"			\"/proc/scsi\"\n"
	"		],\n"
	"		\"readonlyPaths\": [\n"
	"			\"/proc/bus\",\n"
	"			\"/proc/fs\",\n"
	"			\"/proc/irq\",\n"
	"			\"/proc/sys\",\n"
	"			\"/proc/sysrq-trigger\"\n"
	"		]\n"
	"	}\n"
	"}\n";

/* Removes the members of array arr whose key field equals value. */
static void remove_where(json_t *arr, const char *key, const char *value)
{
	for (size_t i = json_array_size(arr); i-- > 0;) {
		json_t *v = json_object_get(json_array_get(arr, i), key);

		if (json_is_string(v) && !strcmp(json_string_value(v), value))
			json_array_remove(arr, i);
	}
}

/* runc spec --rootless: a user namespace mapping the caller, no network namespace (it needs
 * privilege to set up), /sys bound from the host, no cgroup mount, no gid=5 on devpts. */
static void make_rootless(json_t *doc)
{
	json_t *linux_ = json_object_get(doc, "linux");
	json_t *ns = json_object_get(linux_, "namespaces");
	json_t *mounts = json_object_get(doc, "mounts");
	json_t *m;
	size_t i;

	remove_where(ns, "type", "network");
	json_array_append_new(ns, json_pack("{s:s}", "type", "user"));
	json_object_set_new(linux_, "uidMappings",
			    json_pack("[{s:I,s:I,s:I}]", "containerID", (json_int_t)0, "hostID",
				      (json_int_t)geteuid(), "size", (json_int_t)1));
	json_object_set_new(linux_, "gidMappings",
			    json_pack("[{s:I,s:I,s:I}]", "containerID", (json_int_t)0, "hostID",
				      (json_int_t)getegid(), "size", (json_int_t)1));
	json_object_del(json_object_get(linux_, "resources"), "devices");
	remove_where(mounts, "destination", "/sys/fs/cgroup");
	json_array_foreach(mounts, i, m)
	{
		const char *dest = json_string_value(json_object_get(m, "destination"));

		if (dest && !strcmp(dest, "/sys")) {
			json_object_set_new(m, "type", json_string("none"));
			json_object_set_new(m, "source", json_string("/sys"));
			json_object_set_new(m, "options",
					    json_pack("[s,s,s,s,s]", "rbind", "nosuid", "noexec",
						      "nodev", "ro"));
		} else if (dest && !strcmp(dest, "/dev/pts")) {
			for (size_t j = json_array_size(json_object_get(m, "options")); j-- > 0;) {
				json_t *o = json_array_get(json_object_get(m, "options"), j);
				if (json_is_string(o) && !strcmp(json_string_value(o), "gid=5"))
					json_array_remove(json_object_get(m, "options"), j);
			}
		}
	}
}

char *oci_config_default_json(bool rootless)
{
	json_t *doc;
	char *out;

	if (!rootless)
		return strdup(default_config);
	doc = json_loads(default_config, JSON_DISABLE_EOF_CHECK, NULL);
	if (!doc)
		return NULL;
	make_rootless(doc);
	out = json_dumps(doc, JSON_PRESERVE_ORDER | JSON_INDENT(1));
	json_decref(doc);
	return out;
}
