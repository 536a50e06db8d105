/* SPDX-License-Identifier: Apache-2.0 */
/*
 * procfs, per process: uid_map, gid_map, setgroups, oom_score_adj, oom_adj, oom_score and ns/
 * (proc_ids.c). proc_pid.c puts PROC_PID_IDS_ENTS in the tables of /proc/PID and
 * /proc/PID/task/TID.
 */
#ifndef HUSK_SENTRY_FS_PROC_IDS_H
#define HUSK_SENTRY_FS_PROC_IDS_H

#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "sentry/fs/proc/pseudo.h"

struct kernel;

/* The first entry id of these files (ids are unique in procfs and below 4096). */
#define PROC_IDS_ENT_ID 1400

/* Namespace types (inode number = the sandbox's base + type): cgroup ipc mnt net pid time user uts. */
#define PROC_NS_NTYPES 8

/* The inode number of the sandbox's namespace of the given type (0..PROC_NS_NTYPES - 1). */
uint32_t proc_ns_ino(struct kernel *k, int type);

/*
 * What readlink of /proc/PID/fd/N shows for f when it is an opened namespace ("net:[N]", as
 * Linux): writes it and a NUL into buf and returns its length, -ERANGE when len is too small,
 * or -ENOENT when f is no namespace.
 */
struct file;
int proc_ns_file_name(struct file *f, char *buf, size_t len);

/*
 * For setns(2): when f is an opened namespace (/proc/PID/ns/X), its type's CLONE_NEW* flag
 * (> 0) and in *ns a new reference on the namespaces of the task it was opened from; -EINVAL
 * for any other file.
 */
struct nsproxy;
int proc_ns_file_get(struct file *f, struct nsproxy **ns);
/*
 * The process an opened /proc/PID/ns/X names (a new reference), or NULL when it is gone or f is
 * no namespace: setns(CLONE_NEWNS) joins the mount namespace it is in at the time of the call.
 */
struct task;
struct task *proc_ns_file_task(struct file *f);

/* The links of /proc/PID/ns, Linux's names and order. */
extern const struct pseudo_ent proc_ns_ents[];

int proc_gen_uid_map(struct pseudo_node *n, FILE *out);
int proc_gen_gid_map(struct pseudo_node *n, FILE *out);
int proc_gen_setgroups(struct pseudo_node *n, FILE *out);
/*
 * Writes to uid_map, gid_map and setgroups: a namespace the guest made, by Linux's rules
 * (nsproxy.h); -EPERM for the sandbox's (written already).
 */
ssize_t proc_write_id_map(struct pseudo_node *n, const char *buf, size_t len);
int proc_gen_oom_score_adj(struct pseudo_node *n, FILE *out);
int proc_gen_oom_adj(struct pseudo_node *n, FILE *out);
int proc_gen_oom_score(struct pseudo_node *n, FILE *out);
/* Linux's rules: see oom_set_score_adj. Returns len, -EINVAL, -EACCES or -ESRCH. */
ssize_t proc_write_oom_score_adj(struct pseudo_node *n, const char *buf, size_t len);
ssize_t proc_write_oom_adj(struct pseudo_node *n, const char *buf, size_t len);

/* /proc/net's files (proc.c): under /proc/PID they show the task's network namespace. */
extern const struct pseudo_ent proc_net_ents[];

/* The entries, with ids o..o + 7, as Linux's modes. */
#define PROC_IDS_RW(nm, id_, g, w)                                                    \
	{                                                                             \
		.name = nm, .mode = S_IFREG | 0644, .gen = g, .write = w, .id = (id_) \
	}
#define PROC_PID_IDS_ENTS(o)                                                              \
	{ .name = "ns", .mode = S_IFDIR | 0511, .children = proc_ns_ents, .id = (o) },    \
		PROC_IDS_RW("uid_map", (o) + 1, proc_gen_uid_map, proc_write_id_map),     \
		PROC_IDS_RW("gid_map", (o) + 2, proc_gen_gid_map, proc_write_id_map),     \
		PROC_IDS_RW("setgroups", (o) + 3, proc_gen_setgroups, proc_write_id_map), \
		PROC_IDS_RW("oom_score_adj", (o) + 4, proc_gen_oom_score_adj,             \
			    proc_write_oom_score_adj),                                    \
		PROC_IDS_RW("oom_adj", (o) + 5, proc_gen_oom_adj, proc_write_oom_adj),    \
		PSEUDO_REG("oom_score", (o) + 6, proc_gen_oom_score),                     \
		PSEUDO_DIR("net", (o) + 7, proc_net_ents, 0555)

#endif
