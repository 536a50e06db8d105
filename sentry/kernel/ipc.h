/* SPDX-License-Identifier: Apache-2.0 */
/*
 * System V IPC: shared memory segments, semaphore sets and message queues, as Linux builds them
 * (ipc/{util,shm,sem,msg}.c). One table per family for the sandbox, each object tagged with its
 * IPC namespace (ipc_priv.h's ipc_visible, sentry/kernel/nsproxy.h): limits come from
 * sysctl_get (kernel.shm*, kernel.sem, kernel.msg*) and are the sandbox's, so /proc/sys and
 * config.json's linux.sysctl govern them.
 *
 * Every entry point takes the calling task (its credentials, its mm for guest pointers, its pid
 * as the guest sees it) and returns a value >= 0 or -errno, as the system call returns it. The
 * head comments of ipc_shm.c, ipc_sem.c and ipc_msg.c give each family's model, who holds
 * references on what, and the lock order.
 */
#ifndef HUSK_SENTRY_IPC_H
#define HUSK_SENTRY_IPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

struct file;
struct task;
struct thread_group;

/* --- the Linux ABI (x86-64) --- */

#define LINUX_IPC_PRIVATE 0
#define LINUX_IPC_CREAT 00001000
#define LINUX_IPC_EXCL 00002000
#define LINUX_IPC_NOWAIT 00004000

#define LINUX_IPC_RMID 0
#define LINUX_IPC_SET 1
#define LINUX_IPC_STAT 2
#define LINUX_IPC_INFO 3

#define LINUX_SHM_RDONLY 010000
#define LINUX_SHM_RND 020000
#define LINUX_SHM_REMAP 040000
#define LINUX_SHM_EXEC 0100000
#define LINUX_SHM_HUGETLB 04000
#define LINUX_SHM_NORESERVE 010000
#define LINUX_SHM_DEST 01000 /* in shm_perm.mode: removed, lives until the last detach */
#define LINUX_SHM_LOCKED 02000 /* in shm_perm.mode: SHM_LOCK */
#define LINUX_SHM_LOCK 11
#define LINUX_SHM_UNLOCK 12
#define LINUX_SHM_STAT 13
#define LINUX_SHM_INFO 14
#define LINUX_SHM_STAT_ANY 15

#define LINUX_SEM_UNDO 0x1000
#define LINUX_GETPID 11
#define LINUX_GETVAL 12
#define LINUX_GETALL 13
#define LINUX_GETNCNT 14
#define LINUX_GETZCNT 15
#define LINUX_SETVAL 16
#define LINUX_SETALL 17
#define LINUX_SEM_STAT 18
#define LINUX_SEM_INFO 19
#define LINUX_SEM_STAT_ANY 20
#define LINUX_SEMVMX 32767
#define LINUX_SEMAEM LINUX_SEMVMX

#define LINUX_MSG_NOERROR 010000
#define LINUX_MSG_EXCEPT 020000
#define LINUX_MSG_COPY 040000
#define LINUX_MSG_STAT 11
#define LINUX_MSG_INFO 12
#define LINUX_MSG_STAT_ANY 13

/* Ids are index + seq * IPC_ID_MULT (Linux's IPCMNI_SHIFT 15). */
#define IPC_ID_SHIFT 15
#define IPC_ID_MULT (1 << IPC_ID_SHIFT)
#define IPC_MNI IPC_ID_MULT
#define IPC_SEQ_MAX (INT32_MAX >> IPC_ID_SHIFT)

struct linux_ipc64_perm {
	int32_t key;
	uint32_t uid, gid, cuid, cgid;
	uint32_t mode;
	uint16_t seq;
	uint16_t pad2;
	uint64_t unused1, unused2;
};

struct linux_shmid64_ds {
	struct linux_ipc64_perm shm_perm;
	uint64_t shm_segsz;
	int64_t shm_atime, shm_dtime, shm_ctime;
	int32_t shm_cpid, shm_lpid;
	uint64_t shm_nattch;
	uint64_t unused4, unused5;
};

struct linux_shminfo64 {
	uint64_t shmmax, shmmin, shmmni, shmseg, shmall;
	uint64_t unused1, unused2, unused3, unused4;
};

struct linux_shm_info {
	int32_t used_ids;
	uint64_t shm_tot, shm_rss, shm_swp, swap_attempts, swap_successes;
};

struct linux_semid64_ds {
	struct linux_ipc64_perm sem_perm;
	int64_t sem_otime;
	uint64_t unused1;
	int64_t sem_ctime;
	uint64_t unused2;
	uint64_t sem_nsems;
	uint64_t unused3, unused4;
};

struct linux_seminfo {
	int32_t semmap, semmni, semmns, semmnu, semmsl, semopm, semume, semusz, semvmx, semaem;
};

struct linux_sembuf {
	uint16_t sem_num;
	int16_t sem_op;
	int16_t sem_flg;
};

struct linux_msqid64_ds {
	struct linux_ipc64_perm msg_perm;
	int64_t msg_stime, msg_rtime, msg_ctime;
	uint64_t msg_cbytes, msg_qnum, msg_qbytes;
	int32_t msg_lspid, msg_lrpid;
	uint64_t unused4, unused5;
};

struct linux_msginfo {
	int32_t msgpool, msgmap, msgmax, msgmnb, msgmni, msgssz, msgtql;
	uint16_t msgseg;
};

/* --- shared memory (ipc_shm.c) --- */

/* shmget(2). A new segment is an anonymous tmpfs file of the sandbox's memory file. */
long ipc_shmget(struct task *t, int32_t key, uint64_t size, int flags);
/*
 * shmat(2): maps the segment MAP_SHARED into t's mm through a new "attach" file (one per
 * shmat); returns the address or -errno.
 */
long ipc_shmat(struct task *t, int id, uint64_t addr, int flags);
/* shmdt(2): unmaps the attach whose first page is at addr in t's mm (fork's copies too). */
long ipc_shmdt(struct task *t, uint64_t addr);
/* shmctl(2); buf is the guest pointer argument. */
long ipc_shmctl(struct task *t, int id, int cmd, uint64_t buf);

/* --- semaphores (ipc_sem.c) --- */

/* semget(2). */
long ipc_semget(struct task *t, int32_t key, int nsems, int flags);
/*
 * semop(2)/semtimedop(2): nsops operations at guest address sops, applied all or none, blocking
 * until they can be (timeout: relative, NULL for none; -EAGAIN when it passes). Interrupted by a
 * signal: -EINTR (never restarted, as Linux); by a freeze alone (pause, checkpoint): restarted.
 */
long ipc_semtimedop(struct task *t, int id, uint64_t sops, uint64_t nsops,
		    const struct timespec *timeout);
/* semctl(2); arg is the fourth register (union semun by value: an int or a guest pointer). */
long ipc_semctl(struct task *t, int id, int num, int cmd, uint64_t arg);
/*
 * Applies and frees the SEM_UNDO adjustments of process tg (its last thread is exiting; pid is
 * its pid, recorded as the semaphores' sempid). Call before the parent can see the process dead.
 */
void ipc_sem_exit(struct thread_group *tg, int32_t pid);

/* --- message queues (ipc_msg.c) --- */

/* msgget(2). */
long ipc_msgget(struct task *t, int32_t key, int flags);
/* msgsnd(2): msgp is the guest's struct msgbuf (long mtype, then msgsz bytes). */
long ipc_msgsnd(struct task *t, int id, uint64_t msgp, uint64_t msgsz, int flags);
/* msgrcv(2): returns the number of bytes of text copied. */
long ipc_msgrcv(struct task *t, int id, uint64_t msgp, uint64_t msgsz, int64_t msgtyp, int flags);
/* msgctl(2). */
long ipc_msgctl(struct task *t, int id, int cmd, uint64_t buf);

/* --- /proc/sysvipc/{shm,sem,msg}: Linux's text, every object of the namespace --- */

int ipc_proc_shm(FILE *out);
int ipc_proc_sem(FILE *out);
int ipc_proc_msg(FILE *out);

/*
 * The IPC namespace with identity ns (nsproxy.h) has ended: its queues and semaphore sets are
 * removed, its segments too (an attached one with its last detach), as Linux's free_ipc_ns.
 */
void ipc_msg_ns_exit(uint32_t ns);
void ipc_sem_ns_exit(uint32_t ns);
void ipc_shm_ns_exit(uint32_t ns);

/* How many objects of each family exist. */
int ipc_msg_count(void);
int ipc_sem_count(void);
int ipc_shm_count(void);

/*
 * --- checkpoint and restore (sentry/state/ipc.c) ---
 * Saving runs with every task parked; the visitors are called with the family's lock held and
 * must take no IPC lock (they only copy). Restoring runs before any task does. A blocked semop,
 * msgsnd or msgrcv is not saved: the freeze made it return to be restarted after the thaw.
 */

enum ipc_family { IPC_FAMILY_SHM, IPC_FAMILY_SEM, IPC_FAMILY_MSG };

/* An object's ipc_perm and id (index + seq * IPC_ID_MULT). */
struct ipc_perm_state {
	int32_t key;
	uint32_t uid, gid, cuid, cgid, mode;
	int32_t id;
};

/* A family's id allocation: new objects' sequence number, the index allocated last (-1). */
struct ipc_ids_state {
	uint32_t seq;
	int32_t last_idx;
};

struct ipc_shm_state {
	struct ipc_perm_state perm;
	uint64_t size;
	int64_t atime, dtime, ctime;
	int32_t cpid, lpid;
	struct file *memfd; /* the segment's pages (borrowed) */
};

struct ipc_sem_state {
	struct ipc_perm_state perm;
	int64_t otime, ctime;
	int nsems;
	const int32_t *vals; /* nsems of each */
	const int32_t *pids;
};

struct ipc_msg_state {
	struct ipc_perm_state perm;
	int64_t stime, rtime, ctime;
	uint64_t qbytes;
	int32_t lspid, lrpid;
};

/* The allocation state of a family, and setting it again (-EINVAL: out of range). */
void ipc_ids_save(enum ipc_family fam, struct ipc_ids_state *out);
int ipc_ids_restore(enum ipc_family fam, const struct ipc_ids_state *in);

/* Calls fn on every segment (shm_ids.lock held); stops at and returns fn's first error. */
int ipc_shm_save(int (*fn)(const struct ipc_shm_state *st, void *arg), void *arg);
/*
 * Makes the segment st describes with its saved id over st->memfd (a new reference on it).
 * Returns 0, -EEXIST (the id's slot is taken), -EINVAL (bad id or size), -ENOMEM.
 */
int ipc_shm_restore(const struct ipc_shm_state *st);
/* Whether f is the attach file of a shmat (its VMAs' file); the segment's id. */
bool ipc_shm_is_attach(struct file *f);
int32_t ipc_shm_attach_id(struct file *f);
/* A new attach file (one reference) on segment id, mapped already: ERR_PTR(-EINVAL) if none. */
struct file *ipc_shm_attach_restore(int32_t id, int oflags);
/* Ends a restore: a removed segment (SHM_DEST) no restored attach holds goes. */
void ipc_shm_restore_end(void);

int ipc_sem_save(int (*fn)(const struct ipc_sem_state *st, void *arg), void *arg);
/* The SEM_UNDO adjustments of every process, per set (sem_ids.lock held). */
int ipc_sem_undo_save(int (*fn)(struct thread_group *tg, int32_t semid, int nsems,
				const int16_t *adj, void *arg),
		      void *arg);
/* The most semaphores a restored set may have (Linux's largest SEMMSL). */
#define IPC_SEM_RESTORE_MAX 32000
/* As ipc_shm_restore; -ERANGE: a value above SEMVMX; -EINVAL: nsems out of range. */
int ipc_sem_restore(const struct ipc_sem_state *st);
/* Process tg's adjustments for set semid (which must exist with nsems semaphores). */
int ipc_sem_undo_restore(struct thread_group *tg, int32_t semid, int nsems, const int16_t *adj);

/* Calls queue on every message queue, then msg on each of its messages, oldest first. */
int ipc_msg_save(int (*queue)(const struct ipc_msg_state *st, void *arg),
		 int (*msg)(int64_t mtype, const void *text, size_t len, void *arg), void *arg);
int ipc_msg_restore(const struct ipc_msg_state *st);
/* Appends a message to queue id (restored); -EINVAL: no such queue or mtype < 1. */
int ipc_msg_restore_msg(int32_t id, int64_t mtype, const void *text, size_t len);

#endif
