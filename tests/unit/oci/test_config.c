/* SPDX-License-Identifier: Apache-2.0 */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "oci-spec/config.h"
#include "oci-spec/state.h"

#define PROC_OK "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\"}"
#define ROOT_OK "\"root\":{\"path\":\"rootfs\"}"
#define HEAD "{\"ociVersion\":\"1.0.2\","

static struct oci_config *parse_ok(const char *json)
{
	struct oci_config *c = NULL;
	struct oci_error err = { 0 };
	int ret = oci_config_parse(json, strlen(json), &c, &err);

	cr_assert_eq(ret, 0, "parse failed: %s", err.msg);
	return c;
}

/* A broken config and the exact message it must produce. */
static const struct {
	const char *json;
	const char *msg;
} corpus[] = {
	{ "", "config.json: line 1, column 0: '[' or '{' expected near end of file" },
	{ "{\"ociVersion\":\"1.0.2\",", "config.json: line 1, column 22: string or '}' expected "
					"near end of file" },
	{ "[1,2]", "config.json: expected an object at the top level, got an array" },
	{ "{}", "config.json: ociVersion: required" },
	{ "{\"ociVersion\":2}", "config.json: ociVersion: expected a string, got an integer" },
	{ "{\"ociVersion\":\"2.0.0\"}",
	  "config.json: ociVersion: unsupported version \"2.0.0\" (husk supports 1.x)" },
	{ HEAD ROOT_OK "}", "config.json: process: required" },
	{ HEAD PROC_OK "}", "config.json: root: required" },
	{ HEAD "\"process\":{\"args\":[\"a\",\"b\",3],\"cwd\":\"/\"}," ROOT_OK "}",
	  "config.json: process.args[2]: expected a string, got an integer" },
	{ HEAD "\"process\":{\"args\":\"sh\",\"cwd\":\"/\"}," ROOT_OK "}",
	  "config.json: process.args: expected an array, got a string" },
	{ HEAD "\"process\":{\"args\":[],\"cwd\":\"/\"}," ROOT_OK "}",
	  "config.json: process.args: expected at least one argument" },
	{ HEAD "\"process\":{\"args\":[\"sh\"],\"cwd\":\"rel\"}," ROOT_OK "}",
	  "config.json: process.cwd: expected an absolute path, got \"rel\"" },
	{ HEAD "\"process\":{\"args\":[\"sh\"]}," ROOT_OK "}",
	  "config.json: process.cwd: required" },
	{ HEAD "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\",\"env\":[\"NOEQUALS\"]}," ROOT_OK "}",
	  "config.json: process.env[0]: expected KEY=VALUE, got \"NOEQUALS\"" },
	{ HEAD "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\",\"terminal\":\"yes\"}," ROOT_OK "}",
	  "config.json: process.terminal: expected a boolean, got a string" },
	{ HEAD "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\",\"user\":{\"uid\":-1}}," ROOT_OK "}",
	  "config.json: process.user.uid: -1 is out of range [0, 4294967295]" },
	{ HEAD
	  "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\",\"user\":{\"additionalGids\":[1,\"x\"]}}," ROOT_OK
	  "}",
	  "config.json: process.user.additionalGids[1]: expected a group id (0 to 4294967295), got "
	  "a string" },
	{ HEAD "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\",\"user\":{\"umask\":4096}}," ROOT_OK
	       "}",
	  "config.json: process.user.umask: 4096 is out of range [0, 4095]" },
	{ HEAD "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\",\"rlimits\":[{\"type\":\"RLIMIT_FOO\","
	       "\"soft\":1,\"hard\":1}]}," ROOT_OK "}",
	  "config.json: process.rlimits[0].type: unknown rlimit \"RLIMIT_FOO\"" },
	{ HEAD
	  "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\",\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\","
	  "\"soft\":10,\"hard\":1}]}," ROOT_OK "}",
	  "config.json: process.rlimits[0].soft: 10 is above the hard limit 1" },
	{ HEAD
	  "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\",\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\","
	  "\"soft\":1}]}," ROOT_OK "}",
	  "config.json: process.rlimits[0].hard: required" },
	{ HEAD "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\",\"oomScoreAdj\":2000}," ROOT_OK "}",
	  "config.json: process.oomScoreAdj: 2000 is out of range [-1000, 1000]" },
	{ HEAD
	  "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\",\"capabilities\":{\"bounding\":[1]}}," ROOT_OK
	  "}",
	  "config.json: process.capabilities.bounding[0]: expected a string, got an integer" },
	{ HEAD PROC_OK ",\"root\":{\"path\":\"\"}}", "config.json: root.path: must not be empty" },
	{ HEAD PROC_OK ",\"root\":{\"path\":\"r\",\"readonly\":1}}",
	  "config.json: root.readonly: expected a boolean, got an integer" },
	{ HEAD PROC_OK "," ROOT_OK ",\"mounts\":[{\"destination\":\"/x\",\"type\":\"nfs\"}]}",
	  "config.json: mounts[0].type: unsupported mount type \"nfs\"" },
	{ HEAD PROC_OK "," ROOT_OK ",\"mounts\":[{\"destination\":\"x\",\"type\":\"tmpfs\"}]}",
	  "config.json: mounts[0].destination: expected an absolute path, got \"x\"" },
	{ HEAD PROC_OK "," ROOT_OK ",\"mounts\":[{\"destination\":\"/x\",\"options\":[\"bind\"]}]}",
	  "config.json: mounts[0].source: required for a bind mount" },
	{ HEAD PROC_OK "," ROOT_OK ",\"mounts\":[{\"destination\":\"/x\",\"type\":\"tmpfs\","
		       "\"options\":[\"size=lots\"]}]}",
	  "config.json: mounts[0].options: bad size \"size=lots\"" },
	{ HEAD PROC_OK "," ROOT_OK ",\"mounts\":[{\"destination\":\"/x\",\"type\":\"tmpfs\","
		       "\"options\":[\"mode=999\"]}]}",
	  "config.json: mounts[0].options: bad mode \"mode=999\"" },
	{ HEAD PROC_OK "," ROOT_OK ",\"mounts\":{}}",
	  "config.json: mounts: expected an array, got an object" },
	{ HEAD PROC_OK "," ROOT_OK ",\"hooks\":{\"prestart\":[{\"path\":\"rel\"}]}}",
	  "config.json: hooks.prestart[0].path: expected an absolute path, got \"rel\"" },
	{ HEAD PROC_OK "," ROOT_OK ",\"hooks\":{\"poststop\":[{\"path\":\"/h\",\"timeout\":0}]}}",
	  "config.json: hooks.poststop[0].timeout: 0 is out of range [1, 2147483647]" },
	{ HEAD PROC_OK "," ROOT_OK ",\"annotations\":{\"a\":1}}",
	  "config.json: annotations.a: expected a string, got an integer" },
	{ HEAD PROC_OK "," ROOT_OK
		       ",\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"pid\"}]}}",
	  "config.json: linux.namespaces[1].type: namespace \"pid\" given twice" },
	{ HEAD PROC_OK "," ROOT_OK ",\"linux\":{\"namespaces\":[{\"type\":\"bogus\"}]}}",
	  "config.json: linux.namespaces[0].type: unknown namespace type \"bogus\"" },
	{ HEAD PROC_OK "," ROOT_OK ",\"linux\":{\"resources\":{\"memory\":{\"limit\":\"1g\"}}}}",
	  "config.json: linux.resources.memory.limit: expected an integer, got a string" },
	{ HEAD PROC_OK "," ROOT_OK
		       ",\"linux\":{\"seccomp\":{\"defaultAction\":\"SCMP_ACT_NOPE\"}}}",
	  "config.json: linux.seccomp.defaultAction: unknown seccomp action \"SCMP_ACT_NOPE\"" },
	{ HEAD PROC_OK "," ROOT_OK ",\"linux\":{\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ALLOW\","
		       "\"syscalls\":[{\"action\":\"SCMP_ACT_ERRNO\"}]}}}",
	  "config.json: linux.seccomp.syscalls[0].names: required" },
	{ HEAD PROC_OK "," ROOT_OK ",\"linux\":{\"sysctl\":{\"net.ipv4.ip_forward\":1}}}",
	  "config.json: linux.sysctl.net.ipv4.ip_forward: expected a string, got an integer" },
	{ HEAD PROC_OK "," ROOT_OK ",\"linux\":{\"maskedPaths\":[\"proc/kcore\"]}}",
	  "config.json: linux.maskedPaths: expected absolute paths, got \"proc/kcore\"" },
	{ HEAD PROC_OK "," ROOT_OK ",\"hostname\":[]}",
	  "config.json: hostname: expected a string, got an array" },
	{ HEAD PROC_OK "," ROOT_OK ",\"linux\":{\"resources\":{\"blockIO\":{\"weight\":5}}}}",
	  "config.json: linux.resources.blockIO.weight: 5 is out of range [10, 1000]" },
	{ HEAD PROC_OK "," ROOT_OK
		       ",\"linux\":{\"resources\":{\"blockIO\":{\"throttleReadBpsDevice\":"
		       "[{\"major\":8,\"minor\":0}]}}}}",
	  "config.json: linux.resources.blockIO.throttleReadBpsDevice[0].rate: required" },
	{ HEAD PROC_OK "," ROOT_OK
		       ",\"linux\":{\"resources\":{\"hugepageLimits\":[{\"pageSize\":\"../x\","
		       "\"limit\":1}]}}}",
	  "config.json: linux.resources.hugepageLimits[0].pageSize: \"../x\" is not a page size" },
	{ HEAD PROC_OK "," ROOT_OK
		       ",\"linux\":{\"resources\":{\"network\":{\"priorities\":[{\"name\":\"a b\","
		       "\"priority\":1}]}}}}",
	  "config.json: linux.resources.network.priorities[0].name: \"a b\" is not an interface "
	  "name" },
	{ "{\"ociVersion\":\"1.0.2\",\"ociVersion\":\"1.0.2\"}",
	  "config.json: line 1, column 34: duplicate object key near '\"ociVersion\"'" },
};

Test(oci_config, broken_configs_are_rejected_with_a_message_naming_the_field)
{
	for (size_t i = 0; i < sizeof(corpus) / sizeof(corpus[0]); i++) {
		struct oci_config *c = NULL;
		struct oci_error err = { 0 };
		int ret = oci_config_parse(corpus[i].json, strlen(corpus[i].json), &c, &err);

		cr_expect_eq(ret, -EINVAL, "corpus[%zu]: returned %d", i, ret);
		cr_expect_null(c, "corpus[%zu]: got a config", i);
		cr_expect_str_eq(err.msg, corpus[i].msg, "corpus[%zu]", i);
	}
}

Test(oci_config, every_truncation_of_a_valid_config_is_an_error_not_a_crash)
{
	char *json = oci_config_default_json(false);
	size_t len = strlen(json);

	for (size_t n = 0; n < len - 1; n++) {
		struct oci_config *c = NULL;
		struct oci_error err = { 0 };

		cr_assert_eq(oci_config_parse(json, n, &c, &err), -EINVAL, "prefix of %zu bytes",
			     n);
		cr_assert_null(c);
		cr_assert_neq(err.msg[0], 0);
	}
	free(json);
}

Test(oci_config, default_spec_parses_with_runc_values)
{
	char *json = oci_config_default_json(false);
	struct oci_config *c = parse_ok(json);

	cr_expect_str_eq(c->args[0], "sh");
	cr_expect_null(c->args[1]);
	cr_expect(c->terminal);
	cr_expect_str_eq(c->cwd, "/");
	cr_expect_str_eq(c->root_path, "rootfs");
	cr_expect(c->root_readonly);
	cr_expect_str_eq(c->hostname, "husk");
	cr_expect_eq(c->nmounts, 7);
	cr_expect_eq(c->mounts[0].kind, OCI_MOUNT_PROC);
	cr_expect_eq(c->mounts[1].kind, OCI_MOUNT_TMPFS);
	cr_expect_eq(c->mounts[1].tmpfs_size, 65536ULL << 10);
	cr_expect_eq(c->mounts[1].tmpfs_mode, 0755);
	cr_expect_eq(c->mounts[5].flags,
		     OCI_MNT_NOSUID | OCI_MNT_NOEXEC | OCI_MNT_NODEV | OCI_MNT_RDONLY);
	cr_expect_eq(c->nrlimits, 1);
	cr_expect_eq(c->rlimits[0].resource, RLIMIT_NOFILE);
	cr_expect_eq(c->rlimits[0].soft, 1024);
	cr_expect_eq(c->caps[0], (1ULL << 29) | (1ULL << 5) | (1ULL << 10));
	cr_expect(c->no_new_privileges);
	cr_expect_not_null(oci_config_namespace(c, "network"));
	cr_expect_null(oci_config_namespace(c, "user"));
	cr_expect_str_eq(c->masked_paths[0], "/proc/acpi");
	oci_config_free(c);
	free(json);
}

Test(oci_config, rootless_spec_has_a_user_namespace_and_no_network_one)
{
	char *json = oci_config_default_json(true);
	struct oci_config *c = parse_ok(json);

	cr_expect_not_null(oci_config_namespace(c, "user"));
	cr_expect_null(oci_config_namespace(c, "network"));
	for (size_t i = 0; i < c->nmounts; i++) {
		cr_expect_str_neq(c->mounts[i].destination, "/sys/fs/cgroup");
		if (!strcmp(c->mounts[i].destination, "/sys"))
			cr_expect_eq(c->mounts[i].kind, OCI_MOUNT_BIND);
	}
	oci_config_free(c);
	free(json);
}

Test(oci_config, honoured_fields_are_parsed)
{
	struct oci_config *c = parse_ok(
		HEAD
		"\"process\":{\"args\":[\"a\"],\"cwd\":\"/w\",\"env\":[\"A=1\"],"
		"\"user\":{\"uid\":1000,\"gid\":100,\"additionalGids\":[5,6],\"umask\":18},"
		"\"consoleSize\":{\"height\":24,\"width\":80},\"unknownField\":{}},"
		"\"root\":{\"path\":\"/r\"},\"domainname\":\"d\","
		"\"mounts\":[{\"destination\":\"/b\",\"source\":\"/h\",\"options\":[\"rbind\",\"ro\"]}],"
		"\"hooks\":{\"poststop\":[{\"path\":\"/bin/h\",\"args\":[\"h\",\"x\"],\"timeout\":5}]},"
		"\"annotations\":{\"dev.husk.strace\":\"true\"},"
		"\"linux\":{\"cgroupsPath\":\"/x/y\",\"resources\":{\"memory\":{\"limit\":1048576},"
		"\"pids\":{\"limit\":0},\"cpu\":{\"shares\":512,\"quota\":50000,\"period\":100000}},"
		"\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":38,"
		"\"syscalls\":[{\"names\":[\"read\",\"write\"],\"action\":\"SCMP_ACT_ALLOW\"}]},"
		"\"sysctl\":{\"kernel.msgmax\":\"8192\"}}}");

	cr_expect_eq(c->uid, 1000);
	cr_expect_eq(c->gid, 100);
	cr_expect_eq(c->nadditional_gids, 2);
	cr_expect_eq(c->additional_gids[1], 6);
	cr_expect(c->has_umask);
	cr_expect_eq(c->umask, 022);
	cr_expect_eq(c->console_height, 24);
	cr_expect_eq(c->console_width, 80);
	cr_expect_str_eq(c->env[0], "A=1");
	cr_expect_str_eq(c->domainname, "d");
	cr_expect_null(c->hostname);
	cr_expect_eq(c->mounts[0].kind, OCI_MOUNT_BIND);
	cr_expect_eq(c->mounts[0].flags, OCI_MNT_RECURSIVE | OCI_MNT_RDONLY);
	cr_expect_eq(c->hooks[OCI_HOOK_POSTSTOP].n, 1);
	cr_expect_str_eq(c->hooks[OCI_HOOK_POSTSTOP].hooks[0].args[1], "x");
	cr_expect_eq(c->hooks[OCI_HOOK_POSTSTOP].hooks[0].timeout, 5);
	cr_expect_str_eq(oci_config_annotation(c, "dev.husk.strace"), "true");
	cr_expect_null(oci_config_annotation(c, "nope"));
	cr_expect_str_eq(c->cgroups_path, "/x/y");
	cr_expect_eq(c->memory_limit, 1048576);
	cr_expect_eq(c->pids_limit, -1); /* 0 or less: unlimited */
	cr_expect_eq(c->cpu_shares, 512);
	cr_expect_eq(c->cpu_quota, 50000);
	cr_expect_eq(c->cpu_period, 100000);
	cr_expect_eq(c->seccomp->default_action, OCI_SECCOMP_ERRNO);
	cr_expect_eq(c->seccomp->default_errno, 38);
	cr_expect_eq(c->seccomp->nrules, 1);
	cr_expect_str_eq(c->seccomp->rules[0].names[1], "write");
	cr_expect_eq(c->nsysctl, 1);
	cr_expect_str_eq(c->sysctl[0].value, "8192");
	oci_config_free(c);
}

Test(oci_config, every_resource_of_linux_resources_is_parsed)
{
	struct oci_config *c = parse_ok(
		HEAD PROC_OK
		"," ROOT_OK ",\"linux\":{\"resources\":{"
		"\"memory\":{\"limit\":-1,\"reservation\":1024,\"swap\":4096,\"swappiness\":10},"
		"\"cpu\":{\"cpus\":\"0-1\",\"mems\":\"0\",\"realtimeRuntime\":950,"
		"\"realtimePeriod\":1000},"
		"\"blockIO\":{\"weight\":300,\"leafWeight\":20,"
		"\"weightDevice\":[{\"major\":8,\"minor\":0,\"weight\":400}],"
		"\"throttleWriteIOPSDevice\":[{\"major\":254,\"minor\":0,\"rate\":100}]},"
		"\"hugepageLimits\":[{\"pageSize\":\"2MB\",\"limit\":4194304}],"
		"\"network\":{\"classID\":1048577,\"priorities\":[{\"name\":\"lo\",\"priority\":5}]}"
		"}}}");
	const struct oci_resources *r = &c->resources;

	cr_expect_eq(r->set & OCI_RES_MEMORY_LIMIT, OCI_RES_MEMORY_LIMIT);
	cr_expect_eq(r->memory_limit, -1);
	cr_expect_eq(c->memory_limit, -1);
	cr_expect_eq(r->memory_reservation, 1024);
	cr_expect_eq(r->memory_swap, 4096);
	cr_expect_eq(r->memory_swappiness, 10);
	cr_expect_eq(r->set & OCI_RES_CPU_SHARES, 0);
	cr_expect_str_eq(r->cpuset_cpus, "0-1");
	cr_expect_str_eq(r->cpuset_mems, "0");
	cr_expect_eq(r->cpu_rt_runtime, 950);
	cr_expect_eq(r->cpu_rt_period, 1000);
	cr_expect_eq(r->blkio_weight, 300);
	cr_expect_eq(r->blkio_leaf_weight, 20);
	cr_expect_eq(r->nblkio[OCI_BLKIO_WEIGHT_DEVICE], 1);
	cr_expect_eq(r->blkio[OCI_BLKIO_WEIGHT_DEVICE][0].major, 8);
	cr_expect_eq(r->blkio[OCI_BLKIO_WEIGHT_DEVICE][0].value, 400);
	cr_expect_eq(r->nblkio[OCI_BLKIO_READ_BPS], 0);
	cr_expect_eq(r->nblkio[OCI_BLKIO_WRITE_IOPS], 1);
	cr_expect_eq(r->blkio[OCI_BLKIO_WRITE_IOPS][0].minor, 0);
	cr_expect_eq(r->blkio[OCI_BLKIO_WRITE_IOPS][0].value, 100);
	cr_expect_eq(r->nhugepages, 1);
	cr_expect_str_eq(r->hugepages[0].page_size, "2MB");
	cr_expect_eq(r->hugepages[0].limit, 4194304);
	cr_expect_eq(r->net_classid, 1048577);
	cr_expect_eq(r->nnet_priorities, 1);
	cr_expect_str_eq(r->net_priorities[0].name, "lo");
	cr_expect_eq(r->net_priorities[0].priority, 5);
	oci_config_free(c);
}

Test(oci_config, update_resources_parse_alone_and_name_their_source)
{
	const char *ok = "{\"pids\":{\"limit\":-1},\"cpu\":{\"quota\":20000}}";
	const char *bad = "{\"cpu\":{\"quota\":\"x\"}}";
	struct oci_resources r;
	struct oci_error err = { 0 };

	cr_assert_eq(oci_resources_parse(ok, strlen(ok), "r.json", &r, &err), 0, "%s", err.msg);
	cr_expect_eq(r.set, OCI_RES_PIDS_LIMIT | OCI_RES_CPU_QUOTA);
	cr_expect_eq(r.pids_limit, -1);
	cr_expect_eq(r.cpu_quota, 20000);
	oci_resources_free(&r);
	cr_expect_eq(oci_resources_parse(bad, strlen(bad), "r.json", &r, &err), -EINVAL);
	cr_expect_str_eq(err.msg, "r.json: cpu.quota: expected an integer, got a string");
	cr_expect_eq(oci_resources_parse("[]", 2, "-", &r, &err), -EINVAL);
	cr_expect_str_eq(err.msg, "-: expected an object, got an array");
}

Test(oci_state, runc_state_has_runc_fields_in_order)
{
	struct oci_kv ann[] = { { "k", "v" } };
	struct oci_state s = { .id = "c1",
			       .status = "running",
			       .pid = 42,
			       .bundle = "/b",
			       .rootfs = "/b/rootfs",
			       .created = "2026-01-01T00:00:00Z",
			       .owner = "",
			       .annotations = ann,
			       .nannotations = 1 };
	char *j = oci_state_json(&s, OCI_STATE_RUNC);

	cr_expect_str_eq(j,
			 "{\n  \"ociVersion\": \"1.0.2\",\n  \"id\": \"c1\",\n  \"pid\": 42,\n"
			 "  \"status\": \"running\",\n  \"bundle\": \"/b\",\n"
			 "  \"rootfs\": \"/b/rootfs\",\n  \"created\": \"2026-01-01T00:00:00Z\",\n"
			 "  \"annotations\": {\n    \"k\": \"v\"\n  },\n  \"owner\": \"\"\n}");
	free(j);
	j = oci_state_json(&s, OCI_STATE_HOOK);
	cr_expect_str_eq(j, "{\"ociVersion\":\"1.0.2\",\"id\":\"c1\",\"status\":\"running\","
			    "\"pid\":42,\"bundle\":\"/b\",\"annotations\":{\"k\":\"v\"}}");
	free(j);
}

Test(oci_state, features_lists_every_hook_and_x86_64)
{
	char *j = oci_features_json("ptrace", "ptrace");
	json_t *o = json_loads(j, 0, NULL);

	cr_assert_not_null(o);
	cr_expect_eq(json_array_size(json_object_get(o, "hooks")), OCI_HOOK_NKINDS);
	cr_expect_str_eq(
		json_string_value(json_array_get(
			json_object_get(json_object_get(json_object_get(o, "linux"), "seccomp"),
					"archs"),
			0)),
		"SCMP_ARCH_X86_64");
	json_decref(o);
	free(j);
}

Test(oci_state, features_name_the_platforms_and_what_auto_picks)
{
	char *j = oci_features_json("ptrace,seccomp", "seccomp");
	json_t *o = json_loads(j, 0, NULL), *ann;

	cr_assert_not_null(o);
	ann = json_object_get(o, "annotations");
	cr_expect_str_eq(json_string_value(json_object_get(ann, "dev.husk.platforms")),
			 "ptrace,seccomp");
	cr_expect_str_eq(json_string_value(json_object_get(ann, "dev.husk.platform.auto")),
			 "seccomp");
	cr_expect_str_eq(json_string_value(json_object_get(ann, "dev.husk.userspace-kernel")),
			 "true");
	json_decref(o);
	free(j);
}

Test(oci_state, features_without_platforms_leave_their_annotations_out)
{
	char *j = oci_features_json(NULL, NULL);
	json_t *o = json_loads(j, 0, NULL), *ann;

	cr_assert_not_null(o);
	ann = json_object_get(o, "annotations");
	cr_expect_null(json_object_get(ann, "dev.husk.platforms"));
	cr_expect_null(json_object_get(ann, "dev.husk.platform.auto"));
	cr_expect_not_null(json_object_get(ann, "dev.husk.userspace-kernel"));
	json_decref(o);
	free(j);
}

Test(oci_state, timestamp_is_rfc3339_utc)
{
	char ts[64];

	oci_timestamp_now(ts, sizeof(ts));
	cr_expect_eq(ts[4], '-');
	cr_expect_eq(ts[10], 'T');
	cr_expect_eq(ts[strlen(ts) - 1], 'Z');
}

Test(oci_config, id_mappings_are_parsed_and_checked)
{
	struct oci_config *c =
		parse_ok(HEAD PROC_OK
			 "," ROOT_OK ",\"linux\":{\"uidMappings\":[{\"containerID\":0,"
			 "\"hostID\":100000,\"size\":65536}],\"gidMappings\":[{\"containerID\":0,"
			 "\"hostID\":200000,\"size\":1},{\"containerID\":1,\"hostID\":300000,"
			 "\"size\":10}]}}");
	static const struct {
		const char *json;
		const char *msg;
	} bad[] = {
		{ HEAD PROC_OK "," ROOT_OK ",\"linux\":{\"uidMappings\":{}}}",
		  "config.json: linux.uidMappings: expected an array, got an object" },
		{ HEAD PROC_OK "," ROOT_OK
			       ",\"linux\":{\"uidMappings\":[{\"hostID\":1,\"size\":1}]}}",
		  "config.json: linux.uidMappings[0]: containerID and hostID are required" },
		{ HEAD PROC_OK "," ROOT_OK
			       ",\"linux\":{\"gidMappings\":[{\"containerID\":0,\"hostID\":1}]}}",
		  "config.json: linux.gidMappings[0].size: required" },
		{ HEAD PROC_OK "," ROOT_OK ",\"linux\":{\"gidMappings\":[{\"containerID\":0,"
			       "\"hostID\":-1,\"size\":1}]}}",
		  "config.json: linux.gidMappings[0].hostID: -1 is out of range [0, 4294967295]" },
	};

	cr_assert_eq(c->nuid_mappings, 1);
	cr_assert_eq(c->uid_mappings[0].host_id, 100000);
	cr_assert_eq(c->uid_mappings[0].size, 65536);
	cr_assert_eq(c->ngid_mappings, 2);
	cr_assert_eq(c->gid_mappings[1].container_id, 1);
	cr_assert_eq(c->gid_mappings[1].host_id, 300000);
	cr_assert_eq(c->gid_mappings[1].size, 10);
	oci_config_free(c);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct oci_error err = { 0 };

		c = NULL;
		cr_expect_eq(oci_config_parse(bad[i].json, strlen(bad[i].json), &c, &err), -EINVAL,
			     "bad[%zu]", i);
		cr_expect_null(c);
		cr_expect_str_eq(err.msg, bad[i].msg, "bad[%zu]", i);
	}
}
