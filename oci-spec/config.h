/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OCI runtime-spec config.json: parsing and validation (jansson), into a flat C structure.
 *
 * Every string in a struct oci_config points into the parsed JSON document, which the config
 * owns; oci_config_free() releases both. Unknown fields are ignored; a wrong type or value is
 * rejected with a message naming the field ("config.json: process.args[2]: expected a string").
 */
#ifndef HUSK_OCI_SPEC_CONFIG_H
#define HUSK_OCI_SPEC_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OCI_VERSION "1.0.2"
#define OCI_ERR_LEN 512

/* A caller-owned error message, filled when a function returns an error. */
struct oci_error {
	char msg[OCI_ERR_LEN];
};

struct oci_rlimit {
	int resource; /* RLIMIT_* */
	const char *name; /* "RLIMIT_NOFILE" */
	uint64_t soft, hard;
};

enum oci_mount_kind {
	OCI_MOUNT_BIND, /* bind or rbind: served by a gofer (issue 4) */
	OCI_MOUNT_TMPFS,
	OCI_MOUNT_PROC,
	OCI_MOUNT_SYSFS,
	OCI_MOUNT_DEVPTS,
	OCI_MOUNT_MQUEUE,
	OCI_MOUNT_CGROUP, /* cgroup or cgroup2 */
	OCI_MOUNT_SHM, /* type "shm" (Docker's /dev/shm) */
};

/* MS_* flags an OCI mount asks for, from its options. */
#define OCI_MNT_RDONLY 0x1u
#define OCI_MNT_NOSUID 0x2u
#define OCI_MNT_NODEV 0x4u
#define OCI_MNT_NOEXEC 0x8u
#define OCI_MNT_RECURSIVE 0x10u /* rbind */

struct oci_mount {
	enum oci_mount_kind kind;
	const char *destination; /* absolute */
	const char *type; /* as written, may be NULL for a bind */
	const char *source; /* may be NULL except for binds */
	unsigned int flags; /* OCI_MNT_* */
	uint64_t tmpfs_size; /* bytes, 0: default */
	uint32_t tmpfs_mode; /* 0: default (01777) */
	bool has_tmpfs_mode;
};

struct oci_hook {
	const char *path; /* absolute */
	const char **args; /* NULL-terminated; NULL if absent */
	const char **env; /* NULL-terminated; NULL if absent */
	int timeout; /* seconds, 0: none */
};

enum oci_hook_kind {
	OCI_HOOK_PRESTART,
	OCI_HOOK_CREATE_RUNTIME,
	OCI_HOOK_CREATE_CONTAINER,
	OCI_HOOK_START_CONTAINER,
	OCI_HOOK_POSTSTART,
	OCI_HOOK_POSTSTOP,
	OCI_HOOK_NKINDS,
};

struct oci_hook_list {
	struct oci_hook *hooks;
	size_t n;
};

struct oci_namespace {
	const char *type; /* pid, network, mount, ipc, uts, user, cgroup, time */
	const char *path; /* NULL: a new one */
};

/* One entry of linux.uidMappings or gidMappings. */
struct oci_id_mapping {
	uint32_t container_id, host_id, size; /* size >= 1 */
};

struct oci_kv {
	const char *key;
	const char *value;
};

/* Seccomp actions, as the runtime-spec names them. */
enum oci_seccomp_action {
	OCI_SECCOMP_KILL,
	OCI_SECCOMP_KILL_PROCESS,
	OCI_SECCOMP_KILL_THREAD,
	OCI_SECCOMP_TRAP,
	OCI_SECCOMP_ERRNO,
	OCI_SECCOMP_TRACE,
	OCI_SECCOMP_ALLOW,
	OCI_SECCOMP_LOG,
	OCI_SECCOMP_NOTIFY,
};

/* Argument comparisons, numbered as libseccomp's enum scmp_compare. */
enum oci_seccomp_op {
	OCI_SCMP_CMP_NE = 1,
	OCI_SCMP_CMP_LT = 2,
	OCI_SCMP_CMP_LE = 3,
	OCI_SCMP_CMP_EQ = 4,
	OCI_SCMP_CMP_GE = 5,
	OCI_SCMP_CMP_GT = 6,
	OCI_SCMP_CMP_MASKED_EQ = 7,
};

struct oci_seccomp_arg {
	unsigned int index; /* 0-5 */
	uint64_t value, value_two;
	enum oci_seccomp_op op;
};

struct oci_seccomp_rule {
	const char **names; /* NULL-terminated */
	enum oci_seccomp_action action;
	uint32_t errno_ret; /* for ERRNO; default EPERM */
	bool has_args; /* nargs > 0 */
	struct oci_seccomp_arg *args;
	size_t nargs;
};

/* linux.seccomp.flags */
#define OCI_SECCOMP_FLAG_TSYNC 0x1u
#define OCI_SECCOMP_FLAG_LOG 0x2u
#define OCI_SECCOMP_FLAG_SPEC_ALLOW 0x4u

struct oci_seccomp {
	enum oci_seccomp_action default_action;
	uint32_t default_errno;
	struct oci_seccomp_rule *rules;
	size_t nrules;
	const char **architectures; /* NULL-terminated ("SCMP_ARCH_X86_64"); NULL if absent */
	unsigned int flags; /* OCI_SECCOMP_FLAG_* */
};

/*
 * Compiles a profile with libseccomp into a classic BPF program for x86-64 guests (what
 * husk-sentry --seccomp-fd reads) and writes it to fd. Rules naming a system call libseccomp
 * does not know are skipped (as runc does); rules whose action and errno are the default's are
 * skipped. Returns 0, or -EINVAL/-ENOMEM/-errno of the write with err filled.
 */
int oci_seccomp_compile(const struct oci_seccomp *sc, int fd, struct oci_error *err);

/* linux.resources.blockIO.weightDevice[] / throttle*Device[] entry. */
struct oci_blkio_device {
	int64_t major, minor;
	uint64_t value; /* weight, or rate (bytes or operations per second) */
	uint64_t leaf_weight; /* weightDevice only; 0: unset */
	bool has_value;
};

/* linux.resources.hugepageLimits[] entry. */
struct oci_hugepage_limit {
	const char *page_size; /* "2MB", "1GB" */
	uint64_t limit; /* bytes */
};

/* linux.resources.network.priorities[] entry. */
struct oci_net_priority {
	const char *name; /* interface */
	uint32_t priority;
};

/* Bits of struct oci_resources.set: which scalar fields the document gave. */
enum {
	OCI_RES_MEMORY_LIMIT = 1u << 0,
	OCI_RES_MEMORY_RESERVATION = 1u << 1,
	OCI_RES_MEMORY_SWAP = 1u << 2,
	OCI_RES_MEMORY_SWAPPINESS = 1u << 3,
	OCI_RES_PIDS_LIMIT = 1u << 4,
	OCI_RES_CPU_SHARES = 1u << 5,
	OCI_RES_CPU_QUOTA = 1u << 6,
	OCI_RES_CPU_PERIOD = 1u << 7,
	OCI_RES_CPU_RT_RUNTIME = 1u << 8,
	OCI_RES_CPU_RT_PERIOD = 1u << 9,
	OCI_RES_BLKIO_WEIGHT = 1u << 10,
	OCI_RES_BLKIO_LEAF_WEIGHT = 1u << 11,
	OCI_RES_NET_CLASSID = 1u << 12,
	OCI_RES_MEMORY_KERNEL = 1u << 13,
	OCI_RES_MEMORY_KERNEL_TCP = 1u << 14,
};

enum oci_blkio_list {
	OCI_BLKIO_WEIGHT_DEVICE,
	OCI_BLKIO_READ_BPS,
	OCI_BLKIO_WRITE_BPS,
	OCI_BLKIO_READ_IOPS,
	OCI_BLKIO_WRITE_IOPS,
	OCI_BLKIO_NLISTS,
};

/*
 * linux.resources (also what `husk update -r` reads). A scalar counts only when its OCI_RES_*
 * bit is in set; strings and arrays are NULL/empty when absent. Strings point into the parsed
 * document (the config's, or doc below for oci_resources_parse).
 */
struct oci_resources {
	unsigned int set;
	int64_t memory_limit, memory_reservation, memory_swap; /* -1: unlimited */
	int64_t memory_kernel, memory_kernel_tcp;
	uint64_t memory_swappiness;
	int64_t pids_limit; /* -1: unlimited */
	uint64_t cpu_shares;
	int64_t cpu_quota; /* -1: unlimited */
	uint64_t cpu_period;
	int64_t cpu_rt_runtime;
	uint64_t cpu_rt_period;
	const char *cpuset_cpus, *cpuset_mems;
	uint16_t blkio_weight, blkio_leaf_weight;
	struct oci_blkio_device *blkio[OCI_BLKIO_NLISTS];
	size_t nblkio[OCI_BLKIO_NLISTS];
	struct oci_hugepage_limit *hugepages;
	size_t nhugepages;
	uint32_t net_classid;
	struct oci_net_priority *net_priorities;
	size_t nnet_priorities;
	void *doc; /* oci_resources_parse's document (json_t *), owned; NULL in a config */
};

/*
 * Parses a linux.resources object on its own (husk update -r), into *out; name is the source's
 * name for messages. Returns 0, or -EINVAL/-ENOMEM with err filled. Free with
 * oci_resources_free.
 */
int oci_resources_parse(const char *json, size_t len, const char *name, struct oci_resources *out,
			struct oci_error *err);

/* Frees what oci_resources_parse allocated (not res itself). */
void oci_resources_free(struct oci_resources *res);

#define OCI_CAP_SETS 5 /* bounding, effective, inheritable, permitted, ambient */

struct oci_config {
	const char *oci_version;

	/* process */
	bool terminal;
	uint32_t console_height, console_width;
	const char **args; /* NULL-terminated, at least one */
	const char **env; /* NULL-terminated, each K=V */
	const char *cwd; /* absolute */
	uint32_t uid, gid;
	uint32_t *additional_gids;
	size_t nadditional_gids;
	bool has_umask;
	uint32_t umask;
	struct oci_rlimit *rlimits;
	size_t nrlimits;
	uint64_t caps[OCI_CAP_SETS]; /* bit N: capability N */
	bool has_caps; /* process.capabilities given (else the sentry's defaults stay) */
	bool no_new_privileges;
	bool has_oom_score_adj;
	int oom_score_adj;

	/* root */
	const char *root_path; /* as written: relative paths are relative to the bundle */
	bool root_readonly;

	const char *hostname; /* may be NULL */
	const char *domainname; /* may be NULL */

	struct oci_mount *mounts;
	size_t nmounts;

	struct oci_hook_list hooks[OCI_HOOK_NKINDS];

	struct oci_kv *annotations;
	size_t nannotations;

	/* linux */
	struct oci_namespace *namespaces;
	size_t nnamespaces;
	const char *cgroups_path; /* may be NULL */
	int64_t memory_limit; /* bytes; -1: unlimited/unset */
	int64_t memory_reservation; /* -1: unset */
	int64_t memory_swap; /* -1: unset */
	int64_t pids_limit; /* -1: unlimited/unset */
	uint64_t cpu_shares; /* 0: unset */
	int64_t cpu_quota; /* 0: unset */
	uint64_t cpu_period; /* 0: unset */
	struct oci_resources resources; /* all of linux.resources (the fields above are a part) */
	struct oci_kv *sysctl;
	size_t nsysctl;
	struct oci_seccomp *seccomp; /* NULL: none */
	const char **masked_paths; /* NULL-terminated; NULL if absent */
	const char **readonly_paths; /* NULL-terminated; NULL if absent */
	/* linux.uidMappings, gidMappings (NULL, 0 if absent) */
	struct oci_id_mapping *uid_mappings, *gid_mappings;
	size_t nuid_mappings, ngid_mappings;

	void *doc; /* the parsed document (json_t *), owned */
};

/*
 * Parses and validates a config.json document of len bytes. On success stores a new config in
 * *out (free it with oci_config_free) and returns 0. On failure returns -EINVAL (bad JSON, wrong
 * type or value; err says which field) or -ENOMEM, and *out is untouched.
 */
int oci_config_parse(const char *json, size_t len, struct oci_config **out, struct oci_error *err);

/*
 * Reads and parses path (a bundle's config.json). Returns 0, -errno of the read (err says so),
 * or what oci_config_parse returns.
 */
int oci_config_load(const char *path, struct oci_config **out, struct oci_error *err);

/* Frees a config and its document. NULL is fine. */
void oci_config_free(struct oci_config *c);

/* The value of annotation key, or NULL. */
const char *oci_config_annotation(const struct oci_config *c, const char *key);

/* The namespace entry of the given type, or NULL when the config has none. */
const struct oci_namespace *oci_config_namespace(const struct oci_config *c, const char *type);

/* The RLIMIT_* number of a runtime-spec name ("RLIMIT_NOFILE"), or -1. */
int oci_rlimit_from_name(const char *name);

/* The capability number of a name ("CAP_CHOWN"), or -1. */
int oci_cap_from_name(const char *name);

/* The name of a capability number, or NULL. */
const char *oci_cap_name(int cap);

/* Number of capabilities oci_cap_name knows (CAP_LAST_CAP + 1 of this build). */
int oci_cap_count(void);

/* "an object", "an array", "a string", ... for a JSON value, as error messages name it. */
struct json_t;
const char *oci_json_kind(const struct json_t *v);

/* The runtime-spec name of a hook kind ("prestart", "createRuntime", ...). */
const char *oci_hook_kind_name(enum oci_hook_kind kind);

/*
 * Writes the config.json that `husk spec` prints: busybox-friendly defaults (args ["sh"],
 * root "rootfs", the usual mounts and namespaces), as runc spec writes them. With rootless,
 * adds a user namespace and drops the mounts an unprivileged user cannot make. Returns a
 * malloc'd string or NULL.
 */
char *oci_config_default_json(bool rootless);

#endif
