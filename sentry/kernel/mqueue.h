/* SPDX-License-Identifier: Apache-2.0 */
/*
 * POSIX message queues (mq_overview(7)), as Linux's ipc/mqueue.c: a namespace of named queues
 * per sentry (one sandbox, one IPC namespace), limits from the fs.mqueue.* sysctls and
 * RLIMIT_MSGQUEUE. A queue descriptor is a file: read(2) describes the queue, poll/select/epoll
 * see POLLIN (a message is queued) and POLLOUT (there is room).
 *
 * Every entry point takes the calling task and returns a value >= 0 or -errno as the system call
 * returns it; guest pointers are the caller's to copy, except the message buffers.
 */
#ifndef HUSK_SENTRY_MQUEUE_H
#define HUSK_SENTRY_MQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct task;

/* struct mq_attr of x86-64. */
struct linux_mq_attr {
	int64_t mq_flags;
	int64_t mq_maxmsg;
	int64_t mq_msgsize;
	int64_t mq_curmsgs;
	int64_t reserved[4];
};

/* struct sigevent of x86-64 (64 bytes). */
struct linux_sigevent {
	uint64_t sigev_value;
	int32_t sigev_signo;
	int32_t sigev_notify;
	int32_t sigev_tid;
	uint8_t pad[44];
};

#define MQ_NAME_MAX 255
/* SIGEV_THREAD: the cookie sent to the netlink socket, its last byte saying why. */
#define MQ_COOKIE_LEN 32
#define MQ_NOTIFY_WOKENUP 1
#define MQ_NOTIFY_REMOVED 2

/* mq_open(2) with the name (no leading slash, as the kernel gets it) in sentry memory; attr NULL
 * for the defaults. Returns the new descriptor (close-on-exec) or -errno. */
long mqueue_open(struct task *t, const char *name, int oflag, uint32_t mode,
		 const struct linux_mq_attr *attr);
/* mq_unlink(2). */
long mqueue_unlink(struct task *t, const char *name);
/*
 * mq_timedsend(2) of len bytes at guest address msg; abs is the CLOCK_REALTIME deadline or
 * NULL (wait without one).
 */
long mqueue_send(struct task *t, int fd, uint64_t msg, size_t len, uint32_t prio,
		 const struct timespec *abs);
/* mq_timedreceive(2): the message to guest msg (len bytes of room), its priority to prio_addr
 * unless 0. Returns the message's length. */
long mqueue_receive(struct task *t, int fd, uint64_t msg, size_t len, uint64_t prio_addr,
		    const struct timespec *abs);
/*
 * mq_notify(2): ev NULL removes the caller's registration. For SIGEV_THREAD, cookie holds the
 * MQ_COOKIE_LEN bytes at sigev_value, which go to the netlink socket sigev_signo.
 */
long mqueue_notify(struct task *t, int fd, const struct linux_sigevent *ev,
		   const uint8_t cookie[MQ_COOKIE_LEN]);
/* mq_getsetattr(2): nattr (NULL: none) sets O_NONBLOCK; oattr (NULL: none) gets the attributes
 * as they were. */
long mqueue_getsetattr(struct task *t, int fd, const struct linux_mq_attr *nattr,
		       struct linux_mq_attr *oattr);

/* How many named queues exist. */
int mqueue_count_linked(void);

/*
 * --- checkpoint and restore (sentry/state/ipc.c) ---
 * Every live queue: named ones and unlinked ones still open. A blocked send or receive is not
 * saved (the freeze made it return to be restarted after the thaw).
 */
struct file;
struct mqueue;

struct mqueue_state {
	const char *name;
	bool linked; /* the name is in the namespace */
	uint32_t uid, gid, mode;
	struct timespec ctime;
	int64_t maxmsg, msgsize;
};

#define MQ_RESTORE_MAXMSG 65536 /* HARD_MSGMAX */
#define MQ_RESTORE_MSGSIZE (16 * 1024 * 1024) /* HARD_MSGSIZEMAX */
#define MQ_RESTORE_PRIO_MAX 32768 /* MQ_PRIO_MAX */

/*
 * Calls queue on every queue (q: for the caller's map of files to queues), then msg on each of
 * its messages in receive order (highest priority first). -EOPNOTSUPP (before any call) when
 * a queue has an mq_notify registration: not saved yet. Stops at the callbacks' first error.
 */
int mqueue_save(int (*queue)(struct mqueue *q, const struct mqueue_state *st, void *arg),
		int (*msg)(uint32_t prio, const void *data, size_t len, void *arg), void *arg);
/* The queue of an mq_open file, or NULL if f is not one. */
struct mqueue *mqueue_of_file(struct file *f);
/*
 * A queue as st says (a named one goes in the namespace: -EEXIST if its name is there). Returns
 * it with one reference for the caller (mqueue_put), or ERR_PTR (-EINVAL: bad name or sizes).
 */
struct mqueue *mqueue_restore(const struct mqueue_state *st);
/* Queues a message behind those of its priority and above (-EMSGSIZE, -EAGAIN when full). */
int mqueue_restore_msg(struct mqueue *q, uint32_t prio, const void *data, size_t len);
/* A new file (one reference) on q with the open flags (O_ACCMODE, O_NONBLOCK), or NULL. */
struct file *mqueue_file_restore(struct mqueue *q, int flags);
void mqueue_put(struct mqueue *q);

/*
 * --- the mqueue filesystem (/dev/mqueue, sentry/fs/mqueue) ---
 * The queue named name, with a reference (mqueue_put), or NULL.
 */
struct mqueue *mqueue_lookup(const char *name);
/*
 * An open(O_CREAT) in /dev/mqueue: a queue named name with the default sizes, t's owner and
 * mode (permission bits, the umask already applied). Returns it with a reference for the caller
 * or ERR_PTR (-EEXIST, -ENOSPC, -EMFILE, -EACCES for a bad name...).
 */
struct mqueue *mqueue_create_named(struct task *t, const char *name, uint32_t mode);
/* Copies the name of the index-th named queue (0 first) to name; 0 or -ENOENT past the last. */
int mqueue_name_at(int64_t index, char *name, size_t len);
struct vfs_attr;
/* q's attributes (size: its message count, as Linux's mqueue inodes). Returns 0. */
int mqueue_stat(struct mqueue *q, struct vfs_attr *attr);
/*
 * A new file on q for an open of its /dev/mqueue name: no path (the VFS fills it; the node holds
 * q), reading gives the QSIZE line. Returns the file or ERR_PTR(-ENOMEM).
 */
struct file *mqueue_file_open(struct mqueue *q, int flags);

#endif
