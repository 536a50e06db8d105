/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A task's namespaces (Linux's nsproxy plus the user namespace of its credentials): UTS, IPC and
 * user namespace objects, reference-counted, each with an identity (the inode number
 * /proc/PID/ns/X shows). fork and clone share the parent's set; unshare(2), clone(2) with
 * CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWUSER, CLONE_NEWPID or CLONE_NEWCGROUP and
 * setns(2) give the task a new set. Every object
 * lives in the sentry: no host namespace is made for a guest request.
 *
 * A task's t->ns is NULL until it first changes namespaces: it then uses the sandbox's initial
 * set (nsproxy_initial), made on first use. The initial UTS namespace's names are struct
 * kernel's hostname and domainname (k->lock), so that checkpoint, pod members and --hostname
 * keep working on them; the initial user namespace is the sandbox's (its ids are the ids the
 * credentials hold, and kernel.uid_map its mapping to the host).
 *
 * Credentials keep the sandbox's ids (Linux's kuid): a nested user namespace's uid_map is kept
 * composed down to them, and the id calls translate at the boundary (nsproxy_uid_to_ns,
 * nsproxy_uid_from_ns). cred.userns_level is the depth of the task's user namespace: the
 * capabilities of a cred count for the sandbox (cred_capable) only at depth 0; in a nested one
 * they count for the namespaces it owns (nsproxy_ns_capable).
 */
#ifndef HUSK_SENTRY_KERNEL_NSPROXY_H
#define HUSK_SENTRY_KERNEL_NSPROXY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/idmap.h"
#include "common/refcount.h"

struct kernel;
struct task;
struct cred;

/* Linux's limit on nested user namespaces: a parent up to this level may have children. */
#define USER_NS_MAX_LEVEL 32

struct user_ns {
	struct refcount ref;
	uint32_t id; /* 0 for the initial one, else unique in the sandbox (proc_ids.c numbers it) */
	struct user_ns *parent; /* referenced; NULL for the initial one */
	int level; /* 0 for the initial one */
	uint32_t owner; /* the creator's euid (a sandbox id) */
	uint32_t owner_gid;
	pthread_mutex_t lock; /* protects the maps and flags below */
	/* inside -> sandbox id; valid once *_set (the initial one: the identity, always set) */
	struct idmap uid_map, gid_map;
	bool uid_map_set, gid_map_set;
	bool setgroups_deny; /* "deny" written to setgroups (inherited by children) */
};

struct uts_ns {
	struct refcount ref;
	uint32_t id; /* 0 for the initial one, else unique in the sandbox (proc_ids.c numbers it) */
	struct user_ns *owner; /* referenced */
	pthread_mutex_t own_lock;
	char own_host[65], own_dom[65];
	/* The names and their lock: own_* and own_lock, or the kernel's for the initial one. */
	char *hostname, *domainname;
	pthread_mutex_t *lock;
};

/*
 * The SysV objects stay in one table per family (ipc*.c), each tagged with its namespace's id:
 * lookups and /proc/sysvipc see the caller's only. POSIX message queues are still one set per
 * sandbox (mqueue.c, /dev/mqueue).
 */
struct ipc_ns {
	struct refcount ref;
	uint32_t id; /* 0 for the initial one, else unique in the sandbox (proc_ids.c numbers it) */
	struct user_ns *owner; /* referenced */
};

/*
 * A network namespace: the sentry's network stack (sentry/net) keeps one loopback per namespace
 * (bind tables and abstract unix names are tagged with it, as the SysV objects are with their
 * IPC namespace). Sockets hold a reference on the namespace they were made in; veth links
 * (sentry/net/link.c) carry its id. Only the initial one (id 0, lo up) reaches the host
 * network; a new one's lo starts down with no address.
 */
struct net_ns {
	struct refcount ref;
	uint32_t id; /* 0 for the initial one, else unique in the sandbox (proc_ids.c numbers it) */
	struct user_ns *owner; /* referenced */
	/* sentry/net's state of lo (atomic): up, and 127.0.0.1 assigned (lo was up once). */
	bool lo_up, lo_v4;
};

/* The sandbox's initial network namespace (never freed; its owner is set by nsproxy_initial). */
extern struct net_ns net_ns_initial;

/* Linux's MAX_PID_NS_LEVEL: pid namespaces nest at most this deep (the initial one is 0). */
#define PID_NS_MAX_LEVEL 32

struct thread_group;

/*
 * A pid namespace (man 7 pid_namespaces; numbering and lookups in pidns.c). A process is in
 * one (thread_group.pidns, its active namespace) and has a number in it and in each ancestor:
 * the sandbox's initial one (level 0) numbers it by task.tid, a nested one of level L by
 * task.ns_nr[L].
 */
struct pid_ns {
	struct refcount ref;
	uint32_t id; /* 0 for the initial one, else unique in the sandbox (proc_ids.c numbers it) */
	struct pid_ns *parent; /* referenced; NULL for the initial one */
	int level; /* 0 for the initial one */
	struct user_ns *owner; /* referenced */
	/* k->tree_lock: */
	int32_t last_nr; /* the last number given (0: none yet, the first is 1) */
	struct thread_group *reaper; /* its pid 1 while that lives (not referenced) */
	bool dead; /* its pid 1 ended: no process may enter any more (fork: ENOMEM) */
	/* reboot(2) in it: the signal its pid 1 is reported killed by (SIGHUP for a restart,
	 * SIGINT for a halt or power-off; Linux's pid_namespace.reboot), else 0. */
	int reboot;
};

struct cgroup;

/*
 * A cgroup namespace (man 7 cgroup_namespaces): its root is the cgroup its creator was in at
 * unshare/clone time. /proc/PID/cgroup shows paths relative to the reader's root, and a cgroup2
 * mount made in it shows the hierarchy from its root (sentry/fs/cgroup). Membership is not
 * changed by entering one.
 */
struct cgroup_ns {
	struct refcount ref;
	uint32_t id; /* 0 for the initial one, else unique in the sandbox (proc_ids.c numbers it) */
	struct user_ns *owner; /* referenced */
	struct cgroup *root; /* referenced (cgroup_get); NULL: the hierarchy's root */
};

struct nsproxy {
	struct refcount ref;
	struct cgroup_ns *cgroup;
	struct uts_ns *uts; /* each referenced */
	struct ipc_ns *ipc;
	struct user_ns *user;
	struct net_ns *net;
	struct pid_ns *pid; /* pid_for_children: where the task's new processes go */
};

/* The sandbox's initial set (made on first call; lives as long as the kernel). Borrowed. */
struct nsproxy *nsproxy_initial(struct kernel *k);

/*
 * t's namespaces, a new reference (nsproxy_put). Any thread: another task's are read under its
 * res_lock.
 */
struct nsproxy *task_get_nsproxy(struct task *t);
/* t's namespaces, borrowed: t itself only (its own system call), as only t replaces them. */
struct nsproxy *task_nsproxy(struct task *t);

/* A new set: base's UTS and IPC namespaces with user namespace u (a file of u, proc_ids.c). */
struct nsproxy *nsproxy_with_user(struct nsproxy *base, struct user_ns *u);

void nsproxy_get(struct nsproxy *ns);
void nsproxy_put(struct nsproxy *ns);
void user_ns_get(struct user_ns *u);
void user_ns_put(struct user_ns *u);
void uts_ns_get(struct uts_ns *u);
void uts_ns_put(struct uts_ns *u);
void ipc_ns_get(struct ipc_ns *i);
void ipc_ns_put(struct ipc_ns *i);
void net_ns_get(struct net_ns *n);
void net_ns_put(struct net_ns *n);
/* sentry/net/link.c: namespace id is gone (its links go with it). Any lock may be held. */
void net_ns_exit(uint32_t id);
void cgroup_ns_get(struct cgroup_ns *c);
void cgroup_ns_put(struct cgroup_ns *c);
void pid_ns_get(struct pid_ns *p);
void pid_ns_put(struct pid_ns *p);

/* The pid namespace t's process is in (its active one), borrowed: the initial one's if none. */
struct pid_ns *task_active_pid_ns(struct task *t);
/*
 * t's namespaces with its active pid namespace as the pid member (what /proc/PID/ns/pid and a
 * pidfd give setns), a new reference, or NULL (no memory).
 */
struct nsproxy *task_get_nsproxy_active(struct task *t);

/* The CLONE_NEW* flags this file handles. */
#define NSPROXY_CLONE_FLAGS                                                    \
	(0x04000000 /* UTS */ | 0x08000000 /* IPC */ | 0x10000000 /* USER */ | \
	 0x20000000 /* PID */ | 0x40000000 /* NET */ | 0x02000000 /* CGROUP */)

/*
 * The set a child made by clone(2) with flags gets from p (new namespaces for the CLONE_NEW*
 * flags of NSPROXY_CLONE_FLAGS, else p's shared; a new cgroup namespace is rooted at p's
 * cgroup), and in *cred the child's credentials (a new
 * user namespace: the full capability set in it). Returns a new reference, or NULL for p's own
 * set unchanged (no flag), or an ERR_PTR: -EPERM (no CAP_SYS_ADMIN for a UTS/IPC namespace),
 * (or a net namespace), -ENOSPC (user or pid namespaces nested too deep), -EPERM (the creator's
 * ids unmapped), -EINVAL (CLONE_NEWPID after an unshare(CLONE_NEWPID) not yet entered), -ENOMEM.
 * CLONE_NEWPID makes a child of p's active pid namespace the new set's pid_for_children.
 */
struct nsproxy *nsproxy_copy(struct task *p, uint64_t flags, struct cred *cred);

/*
 * unshare(2) of flags & NSPROXY_CLONE_FLAGS for t (its own call): the checks (CLONE_NEWUSER:
 * single-threaded, else -EINVAL), then t gets the new set and credentials. Returns 0 or -errno.
 */
int nsproxy_unshare(struct task *t, uint64_t flags);

/*
 * setns(2) of t into the namespace of type nstype (a CLONE_NEW* flag) that the namespace file
 * or pidfd designates: target is the task whose namespaces are taken (a pidfd: flags is the
 * set of CLONE_NEW* to take). Returns 0 or -errno (-EINVAL for unsupported types).
 */
int nsproxy_setns(struct task *t, struct nsproxy *target, uint64_t flags);

/* Whether cred (of a task whose user namespace is cur) has cap in user namespace ns. */
bool nsproxy_ns_capable(const struct cred *c, struct user_ns *cur, struct user_ns *ns, int cap);
/* t's own capable check against ns (its own call). */
bool task_ns_capable(struct task *t, struct user_ns *ns, int cap);

/*
 * A sandbox id (kid) as namespace u sees it: IDMAP_OVERFLOW_ID when unmapped (Linux's
 * from_kuid_munged). Inline, so that the id calls' unit tests need no namespace code.
 */
static inline uint32_t user_ns_id_to(struct user_ns *u, bool gid, uint32_t kid)
{
	uint32_t out = IDMAP_OVERFLOW_ID;

	if (!u || !u->level)
		return kid;
	pthread_mutex_lock(&u->lock);
	if ((gid ? u->gid_map_set : u->uid_map_set) &&
	    !idmap_to_inside(gid ? &u->gid_map : &u->uid_map, kid, &out))
		out = IDMAP_OVERFLOW_ID;
	pthread_mutex_unlock(&u->lock);
	return out;
}

/* The sandbox id of u's id id: false when unmapped (Linux's make_kuid invalid). */
static inline bool user_ns_id_from(struct user_ns *u, bool gid, uint32_t id, uint32_t *kid)
{
	bool ok = false;

	if (!u || !u->level) {
		*kid = id;
		return true;
	}
	pthread_mutex_lock(&u->lock);
	if (gid ? u->gid_map_set : u->uid_map_set)
		ok = idmap_to_outside(gid ? &u->gid_map : &u->uid_map, id, kid);
	pthread_mutex_unlock(&u->lock);
	return ok;
}

/* user_ns_id_from for ids id .. id + count - 1 in one extent of u's map (count >= 1). */
static inline bool user_ns_range_from(struct user_ns *u, bool gid, uint32_t id, uint32_t count,
				      uint32_t *kid)
{
	bool ok = false;

	if (!u || !u->level) {
		*kid = id;
		return true;
	}
	pthread_mutex_lock(&u->lock);
	if (gid ? u->gid_map_set : u->uid_map_set)
		ok = idmap_range_to_outside(gid ? &u->gid_map : &u->uid_map, id, count, kid);
	pthread_mutex_unlock(&u->lock);
	return ok;
}

/* Whether sandbox id kid has an id in u (NULL: the sandbox's, where every id has). */
static inline bool user_ns_kid_mapped(struct user_ns *u, bool gid, uint32_t kid)
{
	uint32_t in;
	bool ok;

	if (!u || !u->level)
		return true;
	pthread_mutex_lock(&u->lock);
	ok = (gid ? u->gid_map_set : u->uid_map_set) &&
	     idmap_to_inside(gid ? &u->gid_map : &u->uid_map, kid, &in);
	pthread_mutex_unlock(&u->lock);
	return ok;
}

static inline uint32_t user_ns_uid_to(struct user_ns *u, uint32_t kid)
{
	return user_ns_id_to(u, false, kid);
}

static inline uint32_t user_ns_gid_to(struct user_ns *u, uint32_t kid)
{
	return user_ns_id_to(u, true, kid);
}

/*
 * The caller's user namespace, borrowed (t itself only), or NULL for the sandbox's initial one:
 * for the inline id translations of the id and stat calls.
 */
/* The sandbox uid that is root in u (-1: none mapped). */
static inline uint32_t user_ns_root_uid(struct user_ns *u)
{
	uint32_t k;

	return user_ns_id_from(u, false, 0, &k) ? k : (uint32_t)-1;
}

/* Sets t->cred.root_uid from t's user namespace (t itself, before a rule that uses it). */
#define task_cred_sync_root(t) ((t)->cred.root_uid = user_ns_root_uid(task_user_ns(t)))

#define task_user_ns(t) ((t)->ns ? (t)->ns->user : NULL)

/* t's view of sandbox uid (gid) kid, and the sandbox id of t's id (false: unmapped). */
#define task_uid_to(t, kid) user_ns_id_to(task_user_ns(t), false, (kid))
#define task_gid_to(t, kid) user_ns_id_to(task_user_ns(t), true, (kid))
#define task_uid_from(t, id, kidp) user_ns_id_from(task_user_ns(t), false, (id), (kidp))
#define task_gid_from(t, id, kidp) user_ns_id_from(task_user_ns(t), true, (id), (kidp))

/*
 * A write to /proc/PID/{uid,gid}_map of task target's user namespace by writer (man 7
 * user_namespaces): once; the writer in that namespace or its parent; lines "inside outside
 * count" whose outside ids are the writer's namespace's (composed down to sandbox ids). A
 * writer with CAP_SETUID (CAP_SETGID) in the parent namespace may map any ids of the parent;
 * otherwise one line mapping the namespace creator's euid (egid, and only after setgroups
 * "deny"). Returns len or -EPERM/-EINVAL.
 */
ssize_t user_ns_write_map(struct task *writer, struct user_ns *u, bool gid, const char *buf,
			  size_t len);
/* A write to setgroups: "allow" or "deny", before gid_map is written. Returns len or -errno. */
ssize_t user_ns_write_setgroups(struct task *writer, struct user_ns *u, const char *buf,
				size_t len);

/*
 * The sysctl resolver of kernel.hostname and kernel.domainname (sysctl.c): the names of the
 * calling task's UTS namespace. Installed by nsproxy_initial.
 */
void nsproxy_install_sysctl(void);

#endif
