/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the three System V IPC families share (ipc.c): the id tables, keys, ipc_perm and its
 * permission rules. Private to sentry/kernel/ipc*.c.
 */
#ifndef HUSK_SENTRY_IPC_PRIV_H
#define HUSK_SENTRY_IPC_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "sentry/kernel/ipc.h"

struct cred;

/* The kernel's kern_ipc_perm: the first member of every IPC object. */
struct ipc_kperm {
	int32_t key; /* IPC_PRIVATE once removed (shm with SHM_DEST) */
	uint32_t uid, gid, cuid, cgid;
	uint32_t mode; /* permission bits | SHM_DEST | SHM_LOCKED */
	uint32_t seq;
	int id;
	bool deleted; /* out of the table: waiters see EIDRM */
	uint32_t ns; /* the IPC namespace's identity (nsproxy.h; 0: the sandbox's) */
};

/*
 * The IPC namespace of the calling task (its identity; 0 without a task: restore). The families
 * share one table each; lookups by key, id and index (ipc_find_key, ipc_lookup, ipc_at) see only
 * the caller's namespace's objects, and /proc/sysvipc lists only them (ipc_visible).
 */
uint32_t ipc_cur_ns(void);
static inline bool ipc_visible(const struct ipc_kperm *p)
{
	return p && p->ns == ipc_cur_ns();
}

/* One family's ids (Linux's struct ipc_ids): a table of objects by index. */
struct ipc_ids {
	pthread_mutex_t lock; /* protects the table and every object of the family */
	struct ipc_kperm **slots; /* index -> object, NULL when free; cap entries */
	int cap;
	int in_use;
	int max_idx; /* the highest index in use, -1 if none */
	int last_idx; /* the index allocated last, -1 at first */
	uint32_t seq; /* the sequence number of new objects */
};

#define IPC_IDS_INIT                                                              \
	{                                                                         \
		.lock = PTHREAD_MUTEX_INITIALIZER, .max_idx = -1, .last_idx = -1, \
	}

/* The object with key (not IPC_PRIVATE), or NULL. ids->lock held. */
struct ipc_kperm *ipc_find_key(struct ipc_ids *ids, int32_t key);
/*
 * Adds p with a new id (index allocated cyclically as Linux's idr_alloc_cyclic, seq bumped on
 * wrap-around) unless limit objects exist already (-ENOSPC); -ENOMEM. Sets p->id and p->seq.
 * ids->lock held.
 */
int ipc_add(struct ipc_ids *ids, struct ipc_kperm *p, int limit);
/*
 * Puts p in the table at its saved id's index (a restore): sets p->id and p->seq. -EINVAL for an
 * id out of range, -EEXIST when the index is taken, -ENOMEM. ids->lock held.
 */
int ipc_insert_at(struct ipc_ids *ids, struct ipc_kperm *p, int32_t id);
/* A restored object's perm from st (p->id and p->seq are ipc_insert_at's). */
void ipc_perm_from_state(struct ipc_kperm *p, const struct ipc_perm_state *st);
void ipc_perm_to_state(struct ipc_perm_state *st, const struct ipc_kperm *p);
/* Each family's table (ipc_shm.c, ipc_sem.c, ipc_msg.c), for ipc_ids_save/restore. */
struct ipc_ids *ipc_shm_ids(void);
struct ipc_ids *ipc_sem_ids(void);
struct ipc_ids *ipc_msg_ids(void);
/* A family's allocation state (lock taken inside). */
void ipc_ids_get_state(struct ipc_ids *ids, struct ipc_ids_state *out);
int ipc_ids_set_state(struct ipc_ids *ids, const struct ipc_ids_state *in);
/* Takes p out of the table and marks it deleted. ids->lock held. */
void ipc_remove(struct ipc_ids *ids, struct ipc_kperm *p);
/* The object with id, or NULL (-EINVAL for the caller): bad index or stale seq. Lock held. */
struct ipc_kperm *ipc_lookup(struct ipc_ids *ids, int id);
/* The object at index idx (the *_STAT commands), or NULL. Lock held. */
struct ipc_kperm *ipc_at(struct ipc_ids *ids, int idx);
/* The object a *ctl command names: by index for the *_STAT commands (by_index), else by id. */
struct ipc_kperm *ipc_ctl_lookup(struct ipc_ids *ids, int id, bool by_index);
/* The read check of IPC_STAT and *_STAT (none for *_STAT_ANY: any). Returns 0 or -EACCES. */
int ipc_stat_perms(const struct cred *c, const struct ipc_kperm *p, bool any);
/* What *_INFO returns: the highest index in use, or 0 when none. Lock held. */
int ipc_info_ret(struct ipc_ids *ids);

/* Fills a new object's perm: key, owner and creator from c's effective ids, mode & 0777. */
void ipc_init_perm(struct ipc_kperm *p, const struct cred *c, int32_t key, int flags);
/*
 * Linux's ipcperms: flag is the access wanted as mode bits (0444 read, 0222 write, 0666...);
 * owner or creator, then group, then other; CAP_IPC_OWNER bypasses. Returns 0 or -EACCES.
 */
int ipc_perms(const struct cred *c, const struct ipc_kperm *p, int flag);
/* IPC_SET/IPC_RMID: owner or creator, or CAP_SYS_ADMIN. Returns 0 or -EPERM. */
int ipc_check_owner(const struct cred *c, const struct ipc_kperm *p);
/* IPC_SET: new owner, group and permission bits (the other mode bits are kept). */
void ipc_set_perm(struct ipc_kperm *p, const struct linux_ipc64_perm *in);
/* The guest's view of p. */
void ipc_fill_perm64(struct linux_ipc64_perm *out, const struct ipc_kperm *p);

/*
 * The get(2) logic shared by the families (Linux's ipcget): IPC_PRIVATE always creates; a
 * found key gives EEXIST under IPC_CREAT|IPC_EXCL, else more_checks (may be NULL), else the
 * permission check of flags & 0777; a missing key gives ENOENT without IPC_CREAT, else create.
 * create and more_checks are called with ids->lock held. Returns the id or -errno.
 */
struct ipc_get_ops {
	int (*create)(struct task *t, struct ipc_ids *ids, void *arg);
	int (*more_checks)(struct ipc_kperm *p, void *arg);
};
long ipc_get(struct task *t, struct ipc_ids *ids, int32_t key, int flags,
	     const struct ipc_get_ops *ops, void *arg);

/* A one-value ULONG sysctl in full (sysctl_get saturates at INT64_MAX): kernel.shmmax/shmall. */
uint64_t ipc_sysctl_u64(int id);

/* Seconds of CLOCK_REALTIME (the *_time fields). */
int64_t ipc_now(void);

#endif
