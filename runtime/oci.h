/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The OCI verbs of the husk CLI (runc-compatible): shared state-directory handling, cgroups,
 * hooks, console socket and the detached sandbox launcher. See runtime/README.md.
 */
#ifndef HUSK_RUNTIME_OCI_H
#define HUSK_RUNTIME_OCI_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "oci-spec/config.h"

#define HUSK_DEFAULT_ROOT "/run/husk"

/* Global options (before the verb), as runc has them. */
struct oci_globals {
	const char *root; /* state directory */
	const char *log; /* --log FILE, or NULL */
	bool log_json; /* --log-format json */
	bool debug;
	bool systemd_cgroup;
	const char *platform; /* husk's own: --platform, or NULL ($HUSK_PLATFORM, else auto) */
	bool strace;
	const char *network; /* --network none|host, or NULL (none) */
	const char *overlay; /* --overlay memory|none, or NULL (memory) */
	const char *debug_log; /* --debug-log DIR, or NULL */
};

extern struct oci_globals oci_g;

/* Prints "husk: <msg>" to stderr and to the --log file (text or JSON, as runc); returns 1. */
int oci_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Logs a warning the same way; does not change the exit status. */
void oci_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Container record kept in <root>/<id>/state.json (husk's own format). */
struct container {
	char *id;
	char *dir; /* <root>/<id> */
	char *bundle; /* absolute */
	char *rootfs; /* absolute */
	char *created; /* RFC 3339 */
	pid_t pid; /* the sentry: the container's process */
	uint64_t pid_start; /* its start time (/proc/PID/stat field 22), against pid reuse */
	pid_t gofer_pid;
	uint64_t gofer_start;
	char *cgroup; /* cgroup path below each hierarchy's root, or NULL */
	/* A pod member's sandbox container (runtime/pod.c): its processes run in that sentry, and
	 * pid is the member's container proxy. NULL: a sandbox of its own. */
	char *sandbox;
	struct oci_config *config; /* the bundle's config.json at create time */
	int lock_fd; /* flock on dir, held while the record is in use */
};

/* The status of a container, computed from its processes. */
enum container_status {
	CONTAINER_CREATING,
	CONTAINER_CREATED,
	CONTAINER_RUNNING,
	CONTAINER_PAUSED,
	CONTAINER_STOPPED,
};

const char *container_status_name(enum container_status s);

/* Checks an id as runc does: [A-Za-z0-9_+.-]+, not "." or "..". Returns 0 or -EINVAL. */
int container_id_valid(const char *id);

/*
 * Creates the state directory for id (and oci_g.root if needed) and locks it. Returns 0,
 * -EEXIST when a container with that id exists, or -errno.
 */
int container_create_dir(const char *id, struct container *c);

/*
 * Loads container id and takes its lock (exclusive: commands on one container are serialized).
 * Returns 0, -ENOENT if it does not exist, or -errno.
 */
int container_load(const char *id, struct container *c);

/* Writes c's record atomically (state.json.tmp + rename). Returns 0 or -errno. */
int container_save(const struct container *c);

/* Releases c's memory and its lock. */
void container_release(struct container *c);

/* The current status: stopped once the sentry is gone (or a zombie); created until started. */
enum container_status container_status(const struct container *c);

/* Whether pid is alive and still the process that started at start (not a zombie). */
bool process_alive(pid_t pid, uint64_t start);

/* Start time of pid (field 22 of /proc/PID/stat), or 0 if it does not exist. */
uint64_t process_start_time(pid_t pid);

/*
 * Kills the sandbox (SIGKILL to the sentry and gofer), waits until they are gone, removes the
 * cgroups, runs the poststop hooks and removes the state directory. Returns 0 or -errno.
 */
int container_destroy(struct container *c);

/* Fills an oci_state from c (strings point into c). */
struct oci_state;
void container_oci_state(const struct container *c, enum container_status s, struct oci_state *out);

/* The sentry's crash report (sentry/crash), in the state dir; husk events prints it. */
#define CONTAINER_CRASH_LOG "crash.log"
/* Path of a file in c's state directory, malloc'd. */
char *container_path(const struct container *c, const char *name);

/* ---- cgroups (host side) ---------------------------------------------------------------- */

/*
 * The cgroup path of container id under the state directory root when config.json names none:
 * /husk/<id> under the default root (HUSK_DEFAULT_ROOT), else /husk/<id>@<crc>, crc the POSIX
 * cksum (CRC-32, 8 hex digits) of root's canonical path, so that containers of one id under two
 * roots (two test runs, two users' --root) never share a cgroup. malloc'd, or NULL.
 */
char *cgroup_default_path(const char *root, const char *id);
/* The CRC-32 of POSIX cksum(1) over s (n bytes) and its length: what `cksum` prints first. */
uint32_t cgroup_cksum(const char *s, size_t n);
/*
 * Creates the cgroup path in every mounted hierarchy (each v1 controller's, as runc does, and
 * the v2 one, whether unified or hybrid) and applies the config's linux.resources. Returns 0, 1
 * when no cgroup is delegated to this (rootless) user and none was made (after a warning), or
 * -errno (printed; the partially created groups are removed).
 */
int cgroup_create(const char *path, const struct oci_config *cfg);
/* Moves pid into the cgroup path of every hierarchy. Returns 0 or -errno. */
int cgroup_enter(const char *path, pid_t pid);
/* Kills what is left in the cgroups, waits for them to empty, and removes them. */
int cgroup_destroy(const char *path);
/* Freezes (true) or thaws the cgroup. Returns 0, -ENOTSUP without a freezer, or -errno. */
int cgroup_freeze(const char *path, bool frozen);
/* Whether the cgroup is frozen. */
bool cgroup_frozen(const char *path);
/*
 * Applies the resources whose fields are set (husk update) to the container's cgroups; the pids
 * limit stays the sentry's. Returns 0 or the first write's -errno (printed, naming the file).
 */
int cgroup_update(const char *path, const struct oci_resources *res);
/* Host pids in the cgroup (malloc'd array in *pids). Returns the count or -errno. */
int cgroup_pids(const char *path, pid_t **pids);
/*
 * The directory of path in the hierarchy that holds the memory controller (v1's memory one, or
 * the v2 one on a pure v2 host; *v2 says which), in buf. Returns 0, or -ENOENT without one.
 */
int cgroup_memory_dir(const char *path, char *buf, size_t len, bool *v2);
/* Usage figures for events --stats: -1 when unknown. */
struct cgroup_stats {
	int64_t memory_usage, memory_limit, pids_current, pids_limit, cpu_usage_ns;
};
void cgroup_stats(const char *path, struct cgroup_stats *st);

/* ---- the host side of the sentry's OOM kills (oomreport.c) ------------------------------ */

/*
 * Starts c's OOM reporter: a detached host process that, each time the sentry's OOM killer
 * kills a guest process, makes the kernel OOM-kill a sacrificial process of its own in the
 * container's memory cgroup, so that engines watching the cgroup (memory.oom_control's eventfd,
 * memory.events) see the OOM. Nothing when c has no cgroup, no memory controller or no memory
 * limit. Never fails create: returns 0, or -errno after a warning.
 */
/* Whether create leaves a husk-oomwatch for c (a memory limit and a memory cgroup). */
bool oom_report_wanted(const struct container *c);
int oom_report_start(const struct container *c);

/* ---- namespaces (namespaces.c) ---------------------------------------------------------- */

/*
 * Checks each linux.namespaces entry with a path: it exists and is a namespace of its type.
 * Returns 0, or -errno after printing runc's message (naming the path and the type).
 */
int oci_namespaces_check(const struct oci_config *cfg);
/* Opens the path of the config's namespace of type (type-checked). Returns an fd (close-on-exec),
 * -ENOENT when the entry is missing or has no path, or -errno (printed). */
int oci_namespace_open(const struct oci_config *cfg, const char *type);
/*
 * The sandbox's network mode: the dev.husk.network annotation, else "host" when the network
 * namespace is not listed (shared with the host, as the spec says) or names a path (the
 * engine's), else "none".
 */
const char *oci_network_mode(const struct oci_config *cfg);
/*
 * Whether the guest's TCP listeners also take connections from outside (the sentry's
 * --inbound): in host mode in the engine's network namespace (a pod's, named by path), whose
 * address is the pod's own, as a runc container's listeners take them there.
 */
bool oci_network_inbound(const struct oci_config *cfg);
/* The egress allow rules: the annotation's, after the pod's private ranges when the network
 * namespace has a path (buf holds them then). */
const char *oci_network_egress_allow(const struct oci_config *cfg, char *buf, size_t len);
/* The hostname the guest gets when the config gives none: that of the UTS namespace runc's
 * container would have (the host's, or the path's namespace's). Returns 0 or -errno. */
int oci_uts_hostname(const struct oci_config *cfg, char *buf, size_t len);

/* ---- hooks ------------------------------------------------------------------------------ */

/*
 * Runs the hooks of one kind in order, each with the state JSON on stdin and its timeout.
 * Returns 0, or -errno / -ETIMEDOUT / -ECHILD (a hook failed) after printing which.
 */
int hooks_run(const struct container *c, enum oci_hook_kind kind, enum container_status s);

/* ---- console ---------------------------------------------------------------------------- */

/*
 * Opens a pseudo-terminal, sends its master to the unix socket at path (SCM_RIGHTS, as runc
 * does) and returns the slave fd (sized as the config asks), or -errno.
 */
int console_send_master(const char *socket_path, const struct oci_config *cfg);

/* ---- sandbox ---------------------------------------------------------------------------- */

/* How husk create starts a sandbox. */
struct sandbox_opts {
	int stdio_fd; /* >= 0: the guest's 0-2 (a pty slave); else the caller's stdio */
	int preserve_fds; /* --preserve-fds: fds 3..3+N-1 also go to the sentry (recorded) */
	bool foreground; /* husk run without --detach: the sentry is husk's child */
	const char *restore_dir; /* husk restore: the sentry starts from this image */
};

/*
 * Starts gofer and sentry for c (c->config, c->rootfs, c->cgroup) detached from the caller, waits
 * until the sentry says it is ready and blocked on the start gate (exec.fifo in c->dir), and
 * stores their pids in c. Returns 0 or -errno after printing why.
 */
int sandbox_start(struct container *c, const struct sandbox_opts *o);

/*
 * The platform c's sandbox runs on: the dev.husk.platform annotation, else the global
 * --platform, else $HUSK_PLATFORM, else "auto". *source (if not NULL) gets what named it, ready
 * to prefix the name in a message: "dev.husk.platform=", "--platform ", "HUSK_PLATFORM=" or
 * "platform ". Not checked (runtime_platform_check()).
 */
const char *sandbox_platform(const struct oci_config *cfg, const char **source);

/*
 * (ids.c) The --uid-map (gid: --gid-map) value of cfg into buf: linux.uidMappings (gidMappings)
 * as INSIDE:OUTSIDE:COUNT[,...] when the config has a user namespace and mappings. Returns 1,
 * 0 when there is none, or -EINVAL when they overlap or reach past the last id (or buf is too
 * small).
 */
int sandbox_id_map(const struct oci_config *cfg, bool gid, char *buf, size_t len);

/*
 * (ids.c) Why cfg's process cannot run under its mappings (process.user.uid, gid or an
 * additionalGids entry that sandbox_id_map's mappings do not cover: runc's message), or NULL.
 */
const char *sandbox_ids_unmapped(const struct oci_config *cfg);

/*
 * Makes <state>/control.sock (0600), bound and listening, for the sentry's --control-fd (husk
 * exec, ps, checkpoint...). Returns the fd (close-on-exec) or -errno.
 */
int sandbox_control_listen(const struct container *c);

/* Releases the start gate of c: returns 0, -ENXIO if the sentry is gone, or -errno. */
int sandbox_release_gate(const struct container *c);

/* ---- pods (pod.c) ----------------------------------------------------------------------- */

/* What a member container of a pod needs started (sandbox.c, sandbox_member_plan). */
struct sandbox_member_plan {
	char **sentry_argv; /* NULL-terminated, nargs strings */
	int nargs;
	char **gofer_argv[17]; /* the root's, then one per bind */
	int ngofers;
	int seccomp_fd, preserve_fd; /* or -1 */
	/* The fd numbers the argv names them by. */
	int gofer_slot, volume_slot, start_slot, seccomp_slot, preserve_slot;
};
int sandbox_member_plan(const struct container *c, int preserve_fds, struct sandbox_member_plan *p);
void sandbox_member_plan_free(struct sandbox_member_plan *p);

/*
 * The pod sandbox a container joins, from its annotations: containerd's
 * io.kubernetes.cri.container-type "container" with io.kubernetes.cri.sandbox-id, or CRI-O's
 * io.kubernetes.cri-o.ContainerType / io.kubernetes.cri-o.SandboxID. NULL: a sandbox of its own.
 */
const char *pod_sandbox_id(const struct oci_config *cfg);
/*
 * For engines that say it with namespaces only (podman's pods): the id of the running husk
 * sandbox under --root (not self) whose pid is N of cfg's ipc, uts and network namespace
 * paths, all three /proc/N/ns/... of the same N. Returns it malloc'd, or NULL.
 */
char *pod_sandbox_by_namespaces(const struct oci_config *cfg, const char *self);

/*
 * Starts member c (its record made, c->sandbox set) in its sandbox's sentry: its gofers, the
 * CONTROL_CONTAINER_CREATE request, and the container proxy whose pid becomes c->pid. Returns 0
 * or -errno after printing why.
 */
int pod_member_start(struct container *c, const struct sandbox_opts *o);

/* Verbs. */
int cmd_spec(int argc, char **argv);
int cmd_create(int argc, char **argv);
int cmd_start(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_state(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_kill(int argc, char **argv);
int cmd_delete(int argc, char **argv);
int cmd_exec(int argc, char **argv);
int cmd_ps(int argc, char **argv);
int cmd_pause(int argc, char **argv);
int cmd_resume(int argc, char **argv);
int cmd_events(int argc, char **argv);
int cmd_features(int argc, char **argv);
int cmd_update(int argc, char **argv);
int cmd_checkpoint(int argc, char **argv);
int cmd_restore(int argc, char **argv);
int cmd_fork(int argc, char **argv);

/* Shared by create and run: creates container id from bundle. Returns 0 or an exit status. */
struct create_args {
	const char *id;
	const char *bundle;
	const char *console_socket;
	const char *pid_file;
	int preserve_fds;
	bool foreground;
	const char *restore_dir; /* husk restore: the checkpoint image's folder (absolute) */
};
int oci_create_container(const struct create_args *a, struct container *c);
/* husk run, or husk restore (restore: the sentry starts from --image-path). */
int oci_run(int argc, char **argv, bool restore);

/* Loads id, printing runc's "container ID does not exist" when it does not. Returns 0 or 1. */
int oci_load_or_fail(const char *id, struct container *c);

/* Freezes (pause) or thaws (resume) container id, with runc's checks and messages. */
int oci_set_frozen(const char *id, bool frozen);

/* Writes pid to path atomically (as runc's --pid-file). Returns 0 or -errno. */
int write_pid_file(const char *path, pid_t pid);

/* Parses a signal name ("KILL", "SIGKILL") or number. Returns it, or -EINVAL. */
int parse_signal(const char *s);

#endif
