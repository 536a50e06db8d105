/* SPDX-License-Identifier: Apache-2.0 */
/* What cgroup.c and cgroupfs.c share: struct cgroup and the hierarchy's lock. */
#ifndef HUSK_SENTRY_FS_CGROUP_INTERNAL_H
#define HUSK_SENTRY_FS_CGROUP_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "common/list.h"
#include "common/refcount.h"
#include "sentry/fs/cgroup/cgroup.h"

/* Controllers, in Linux's order of cgroup.controllers. */
enum { CG_CPUSET, CG_CPU, CG_IO, CG_MEMORY, CG_PIDS, CG_NR };
#define CG_ALL ((1u << CG_NR) - 1)
extern const char *const cgroup_ctrl_names[CG_NR];

/* Linux's BPF_CGROUP_MAX_PROGS: programs of one type attached to one cgroup. */
#define CG_BPF_MAX_PROGS 64

/* Room for the interface files' owners (cgroupfs.c checks that its table fits). */
#define CG_FILES_MAX 48

/* The tree of cgroups and every value below; after k->tree_lock. */
extern pthread_mutex_t cgroup_lock;

struct cgroup {
	struct refcount ref; /* the parent's children list, thread groups, nodes, children */
	struct cgroup *parent; /* referenced; NULL for the root */
	char *name; /* owned; fixed */
	uint64_t ino; /* fixed */
	uint32_t uid, gid; /* the creator's; fixed */
	struct timespec ctime;
	/* cgroup_lock: */
	struct list_head children; /* of cgroup.sibling */
	struct list_head sibling;
	bool removed; /* rmdir'ed: out of the tree */
	unsigned int subtree_control; /* 1 << CG_* */
	int64_t max_depth, max_descendants; /* -1: max */
	int64_t pids_max; /* -1: max; enforced at fork (cgroup_can_fork) */
	uint64_t pids_events_max;
	uint64_t mem_max, mem_high, mem_low, mem_min, swap_max; /* kept; UINT64_MAX: max */
	char cpu_max[48];
	unsigned int cpu_weight, io_weight;
	char io_max[256], cpuset_cpus[64], cpuset_mems[64];
	int freeze; /* kept, not enforced */
	int oom_group; /* memory.oom.group: kept, not enforced */
	/* BPF_CGROUP_DEVICE programs attached here (bpf.c), each referenced, in attach order. */
	struct bpf_prog *dev_progs[CG_BPF_MAX_PROGS];
	int dev_nprogs;
	uint32_t dev_flags; /* the attach flags (BPF_F_ALLOW_OVERRIDE, BPF_F_ALLOW_MULTI) */
	/*
	 * Owners and modes changed by chown/chmod (delegation): [0] the directory, [1 + i] the
	 * i-th interface file of cgroupfs.c's table; unset entries are the creator's defaults.
	 */
	struct cgroup_owner {
		bool set;
		uint32_t uid, gid, mode; /* mode: permission bits */
	} owner[1 + CG_FILES_MAX];
};

/* Initialises a new cgroup's reference, lists and default values. */
void cgroup_defaults(struct cgroup *cg);
/* A new cgroup's inode number. cgroup_lock held. */
uint64_t cgroup_alloc_ino_locked(void);
/* tg's cgroup (never NULL). k->tree_lock held. */
struct cgroup *cgroup_of_tg(struct thread_group *tg);
/* Whether cg is of or below it. Parents are fixed: no lock needed. */
bool cgroup_is_descendant(struct cgroup *cg, struct cgroup *of);
/* cg's path ("/a/b") into buf; takes cgroup_lock. Returns its length or -ENAMETOOLONG. */
int cgroup_path(struct cgroup *cg, char *buf, size_t len);
/* Live processes and tasks of cg's subtree. k->tree_lock held. */
void cgroup_count_locked(struct kernel *k, struct cgroup *cg, int *procs, int *tasks);
/*
 * Moves process tg into dst (takes k->tree_lock, then cgroup_lock). Returns 0, -ESRCH (it
 * has exited), -ENODEV (dst removed) or -EBUSY (dst has controllers on for its children).
 */
int cgroup_move(struct kernel *k, struct thread_group *tg, struct cgroup *dst);

/* Puts cg's attached programs (its last reference is going). bpf.c. */
void cgroup_bpf_release(struct cgroup *cg);

/* --- interface files (files.c; cgroupfs.c shows them) --- */

struct kernel;
struct task;
struct vfs_attr;

#define CGF_ROOT 0x1 /* shown in the root cgroup */
#define CGF_CHILD 0x2 /* shown in the others */
#define CGF_BOTH (CGF_ROOT | CGF_CHILD)
/*
 * Also in the root, read-only there, with the sandbox's own figures: what a container's
 * /sys/fs/cgroup shows of its cgroup on a cgroup v2 host (the view sentry/fs/sys had).
 */
#define CGF_SANDBOX_ONLY 0x4
#define CGF_SANDBOX (CGF_BOTH | CGF_SANDBOX_ONLY)

/* One write(2) of buf (NUL-terminated, len bytes) to a file of cg by t. Returns 0 or -errno. */
typedef int (*cgroup_write_fn)(struct kernel *k, struct cgroup *cg, struct task *t, char *buf,
			       size_t len);

struct cg_file {
	const char *name;
	int ctrl; /* CG_*, or -1 for the core files */
	uint32_t mode; /* permission bits */
	unsigned int where; /* CGF_* */
	/* Writes the contents to out; NULL: reads are EINVAL (cgroup.kill). 0 or -errno. */
	int (*gen)(struct kernel *k, struct cgroup *cg, FILE *out);
	cgroup_write_fn write; /* NULL: writes are EINVAL */
};

/* Linux's files, sorted by name as a listing shows them. */
extern const struct cg_file cgroup_files[];
extern const size_t cgroup_nfiles;

/* cgroup.procs's entry. */
const struct cg_file *cgroup_procs_file(void);
/* f's write method in cg: none for the sandbox's figures in the root. */
cgroup_write_fn cgroup_file_writer(struct cgroup *cg, const struct cg_file *f);
/* Whether cg shows f: the root its CGF_ROOT files, the others theirs when enabled. */
bool cgroup_file_shown(struct cgroup *cg, const struct cg_file *f);
/* Whether cg was removed (takes cgroup_lock). */
bool cgroup_removed(struct cgroup *cg);
/* The number of cgroups below cg. cgroup_lock held. */
int cgroup_count_descendants(struct cgroup *cg);
/*
 * Whether t may move tg into dst: write access to dst's cgroup.procs and to the common
 * ancestor's (CAP_SYS_ADMIN may). 0 or -EACCES.
 */
int cgroup_may_move(struct task *t, struct thread_group *tg, struct cgroup *dst);
/*
 * The mode, uid and gid of cg's directory (f NULL) or file f: chown/chmod's, else the
 * defaults (cgroupfs.c). Takes cgroup_lock.
 */
void cgroup_file_owner(struct cgroup *cg, const struct cg_file *f, struct vfs_attr *attr);

#endif
