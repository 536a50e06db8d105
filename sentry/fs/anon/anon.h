/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Anonymous-inode files of the waiting family: eventfd, epoll, timerfd and signalfd. Each lives
 * on the anonymous mount with a node of its own (fstat shows a regular anon inode, mode 0600).
 * README.md in this folder describes the model, references and locks.
 */
#ifndef HUSK_SENTRY_FS_ANON_H
#define HUSK_SENTRY_FS_ANON_H

#include <stdbool.h>
#include <stdint.h>

struct file;
struct file_ops;
struct task;
struct timer_spec;
struct vfs_node;
struct waitq;

/*
 * The file of an anonymous-inode object: node (made with vfs_anon_node_init, embedded in the
 * object, whose release frees it) on the anonymous mount, with ops, open flags and priv as
 * file_alloc takes them. Takes the node's first reference: it moves to the file, or is put
 * (the object released) when out of memory. Returns the file (one reference) or NULL.
 */
struct file *anon_file_create(struct vfs_node *node, const struct file_ops *ops, int flags,
			      void *priv);

/*
 * An eventfd with initial count initval; flags are EFD_SEMAPHORE | EFD_NONBLOCK (O_NONBLOCK).
 * Returns the file (one reference) or NULL when out of memory.
 */
struct file *eventfd_create(uint64_t initval, int flags);
/* True if f is an eventfd (AIO's IOCB_FLAG_RESFD takes only those). */
bool file_is_eventfd(const struct file *f);

/* An epoll instance (flags: O_NONBLOCK never applies). NULL when out of memory. */
struct file *epoll_create_file(void);
bool file_is_epoll(struct file *f);

/*
 * EPOLL_CTL_ADD/MOD/DEL of target (registered as fd) with ev (events, data). Takes its own
 * reference on target for ADD. Returns 0, -EEXIST, -ENOENT, -EINVAL (epoll on itself, bad
 * EPOLLEXCLUSIVE use), -EPERM (target has no poll op: a regular file), -ELOOP (nesting).
 */
int epoll_ctl_file(struct file *ep, int op, int fd, struct file *target, uint32_t events,
		   uint64_t data);

/*
 * Waits for events on ep: copies at most maxevents struct epoll_event (12 bytes, packed) to
 * guest address out. deadline: absolute CLOCK_MONOTONIC, NULL for none; nowait: timeout 0.
 * Items whose fd no longer names their file in t's table are dropped (Linux removes an item
 * when its file is closed). Returns the count, or -EFAULT, -ERESTARTSYS (signal).
 */
long epoll_wait_file(struct task *t, struct file *ep, uint64_t out, int maxevents,
		     const struct timespec *deadline, bool nowait);

/*
 * The wait queues a task must sleep on to learn of any change in the readiness of a set of
 * files: for most files the one their poll op gives; for an epoll file its own (ctl changes) and,
 * recursively through nested epolls, those of every item's file. files[] holds a reference on
 * each file whose queue was added, so that the queues outlive a concurrent close.
 */
struct poll_queues {
	struct waitq **wqs;
	int n, cap;
	struct file **files; /* referenced */
	int nfiles, files_cap;
};

/*
 * Adds the queue(s) behind f (see above) to q, skipping duplicates. Returns 0 or -ENOMEM (q
 * keeps what it had).
 */
int poll_queues_add_file(struct poll_queues *q, struct file *f);
/* Drops q's file references and empties it (q can be reused). */
void poll_queues_reset(struct poll_queues *q);
/* Frees q's arrays after poll_queues_reset. */
void poll_queues_free(struct poll_queues *q);

/*
 * A timerfd on host clock host_clock (the guest's clockid is kept for the record); flags may
 * hold O_NONBLOCK. Returns the file (one reference) or NULL when out of memory.
 */
struct file *timerfd_create_file(int clockid, int host_clock, int flags);
bool file_is_timerfd(struct file *f);
/* timerfd_settime/gettime on a timerfd f (see timer_cb_settime in sentry/kernel/timer.h). */
int timerfd_settime_file(struct file *f, bool abs, const struct timer_spec *new,
			 struct timer_spec *old);
void timerfd_gettime_file(struct file *f, struct timer_spec *cur);

/*
 * A signalfd reading the signals in mask (bit signo - 1; SIGKILL and SIGSTOP are dropped from
 * it); flags may hold O_NONBLOCK. Returns the file (one reference) or NULL when out of memory.
 */
struct file *signalfd_create_file(uint64_t mask, int flags);
bool file_is_signalfd(struct file *f);
/* Replaces the mask of signalfd f (signalfd(2) with an existing fd). */
void signalfd_set_mask(struct file *f, uint64_t mask);

/* --- checkpoint (sentry/state/anon.c) --- */

/* eventfd f's count and mode. */
void eventfd_save(struct file *f, uint64_t *count, bool *semaphore);
/*
 * timerfd f's guest clock id, host clock, deadline on the host's CLOCK_MONOTONIC (0: disarmed),
 * interval and untaken expirations; timerfd_restore arms a new timerfd so (0 or -errno).
 */
void timerfd_save(struct file *f, int *clockid, int *host_clock, uint64_t *expiry,
		  uint64_t *interval, uint64_t *ticks);
int timerfd_restore(struct file *f, uint64_t expiry, uint64_t interval, uint64_t ticks);
/* signalfd f's mask. */
uint64_t signalfd_mask(struct file *f);

/* An epoll item as a checkpoint sees it. */
struct epoll_item_state {
	int fd;
	struct file *f; /* referenced when given by epoll_items_save */
	uint32_t events;
	uint64_t data;
	bool disabled; /* EPOLLONESHOT fired */
};
/*
 * The items of epoll ep in order: *out (malloc'd, each file referenced: the caller puts them
 * and frees the array) and *n. Returns 0 or -ENOMEM.
 */
int epoll_items_save(struct file *ep, struct epoll_item_state **out, int *n);
/*
 * Adds item it to epoll ep as it was saved (as EPOLL_CTL_ADD, then its disabled mark; readiness
 * is asked again at the next wait). Returns epoll_ctl_file's result.
 */
int epoll_item_restore(struct file *ep, const struct epoll_item_state *it);

/*
 * An inotify instance (inotify_init1(2)); flags may hold O_NONBLOCK. Returns 0 and *out (one
 * reference), -EMFILE past NOTIFY_MAX_GROUPS instances in the sandbox, or -ENOMEM.
 */
struct vfs_node;
int inotify_create_file(int flags, struct file **out);
bool file_is_inotify(struct file *f);
/* notify_add_watch / notify_rm_watch (sentry/vfs/notify.h) on inotify file f; -EINVAL if not one. */
int inotify_add_watch_file(struct file *f, struct vfs_node *n, uint32_t mask);
int inotify_rm_watch_file(struct file *f, int wd);

#endif
