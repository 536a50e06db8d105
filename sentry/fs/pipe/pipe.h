/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pipes: an in-sentry ring buffer with a read end and a write end (two struct files).
 *
 * Capacity 64 KiB by default (F_SETPIPE_SZ: a power-of-two number of pages up to 1 MiB, more
 * for root); writes of at most PIPE_BUF bytes are atomic; writing with no reader gives SIGPIPE
 * and -EPIPE; O_DIRECT on the writing file makes each write a packet that one read returns
 * alone (the rest of a packet larger than the read is dropped). Blocking reads and writes wait
 * interruptibly on the pipe's wait queue (task_current(): -ERESTARTSYS on a signal).
 *
 * References: each end's file holds one reference on the pipe's anonymous node, which embeds
 * the pipe; the pipe goes with the last file.
 */
#ifndef HUSK_SENTRY_FS_PIPE_H
#define HUSK_SENTRY_FS_PIPE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct file;
struct vfs_node;
struct task;

#define PIPE_DEF_SIZE 65536
#define PIPE_MAX_SIZE 1048576 /* /proc/sys/fs/pipe-max-size */
#define LINUX_PIPE_BUF 4096

/*
 * Creates a pipe; ends[0] is the read end, ends[1] the write end (one reference each). flags
 * may hold O_NONBLOCK and O_DIRECT (both ends get them). uid/gid own the node (fstat). Returns 0
 * or -ENOMEM.
 */
int pipe_create(int flags, uint32_t uid, uint32_t gid, struct file *ends[2]);

/*
 * Opens FIFO node n (filesystems' open op for S_IFIFO nodes; the VFS then fills f->mnt and
 * f->node) as Linux's fifo_open: every open of one inode (st_dev, st_ino) shares one pipe while
 * any is open. O_RDONLY waits for a writer to open, O_WRONLY for a reader (interruptibly:
 * ERR_PTR(-ERESTARTSYS)), unless O_NONBLOCK: a reader then returns at once and a writer with
 * no reader gets ERR_PTR(-ENXIO); O_RDWR never waits. Access mode 3 is ERR_PTR(-EINVAL).
 */
struct file *pipe_fifo_open(struct vfs_node *n, int flags);

/* True if f is an end of a pipe or an open FIFO. */
bool file_is_pipe(struct file *f);

/*
 * F_GETPIPE_SZ / F_SETPIPE_SZ on f (either end). Returns the capacity, -EBADF if f is not a
 * pipe, -EINVAL (size too large to round), -EPERM (over PIPE_MAX_SIZE without
 * CAP_SYS_RESOURCE), -EBUSY (the data in the pipe would not fit).
 */
long pipe_fcntl(struct task *t, struct file *f, int cmd, uint64_t arg);

/*
 * Copies up to len bytes queued in the read end f into buf without consuming them (tee(2)).
 * With nothing queued: 0 when no writer is left, -EAGAIN if nonblock or f has O_NONBLOCK, else
 * waits interruptibly as a read does (-ERESTARTSYS). Packet boundaries are not reported. Returns
 * the bytes copied, or -EINVAL if f is not a pipe's read end.
 */
ssize_t pipe_peek(struct file *f, void *buf, size_t len, bool nonblock);

/*
 * Appends up to len bytes of buf to the write end f as stream data, only as much as fits now
 * (no PIPE_BUF atomicity; tee(2)). With no room: -EAGAIN if nonblock or f has O_NONBLOCK, else
 * waits interruptibly for some (-ERESTARTSYS). With no reader left: SIGPIPE and -EPIPE, even for
 * len 0. Returns the bytes appended (> 0 when len > 0), or -EINVAL if f is not a pipe's write end.
 */
ssize_t pipe_fill(struct file *f, const void *buf, size_t len, bool nonblock);

/*
 * read(2)/write(2) of a pipe end that never sleep, for callers whose iovecs point into guest
 * memory (sentry/mm/README.md: no translation is held across a sleep). They move what they can
 * now and return -EAGAIN instead of waiting; the caller then sleeps in pipe_wait_ready with no
 * translation held, and translates again. pipe_writev_nowait's total is the size of the whole
 * write(2) iov is the rest of: a write of at most PIPE_BUF bytes is all or nothing. A write with
 * no reader left sends SIGPIPE and gives -EPIPE, as pipe writes do. -EINVAL for the wrong end.
 */
ssize_t pipe_readv_nowait(struct file *f, const struct iovec *iov, int iovcnt);
ssize_t pipe_writev_nowait(struct file *f, const struct iovec *iov, int iovcnt, size_t total);
/*
 * Sleeps interruptibly until f (a read end, or a FIFO open for reading) has data or no writer
 * left, or, with write, until f (a write end or a FIFO open for writing) has room for the next
 * part of a write (left bytes of total still to write) or no reader left. Returns 0,
 * -ERESTARTSYS (a signal), -EAGAIN with no current task, -EINVAL if f cannot go that way.
 */
long pipe_wait_ready(struct file *f, bool write, size_t left, size_t total);

/* The bytes f's pipe holds now (FIONREAD's answer); 0 if f is not a pipe end. */
size_t pipe_nread(struct file *f);

/* --- checkpoint and restore (sentry/state/fs.c) --- */

/* A pipe's state and one file's view of it. */
struct pipe_state {
	const void *id; /* the pipe's identity: equal for every file of one pipe */
	bool fifo; /* a FIFO's pipe (files from pipe_fifo_open) */
	bool rd, wr; /* the file reads, writes (both: a FIFO open O_RDWR) */
	size_t cap;
	uint8_t *data; /* the bytes queued (malloc'd by pipe_save; the caller frees) */
	size_t len;
	struct pipe_state_seg {
		size_t len;
		bool packet;
	} * segs; /* packet boundaries (malloc'd, may be NULL); none for stream data only */
	size_t nsegs;
	uint32_t uid, gid, mode; /* mode: the permission bits of an anonymous pipe (fchmod) */
	unsigned int r_counter, w_counter, wseen; /* f->pipe_wseen */
};

/* Fills st for pipe end or FIFO file f (under the pipe's lock). 0, -EINVAL (not a pipe), -ENOMEM. */
int pipe_save(struct file *f, struct pipe_state *st);
/*
 * A new pipe with no end open, holding st's capacity, data and packets (checked: -EINVAL).
 * Returns its node (one reference, the caller's) or ERR_PTR(-errno).
 */
struct vfs_node *pipe_restore_new(const struct pipe_state *st);
/* A new file on the pipe of pipe_restore_new: its read end (rd) or write end, with flags. */
struct file *pipe_restore_end(struct vfs_node *pipe, bool rd, int flags);
/*
 * A new file of FIFO node n (the caller fills f->mnt and f->node) reading and/or writing as st
 * says, without waiting for the other end; fill: the pipe (which must have no file open yet)
 * takes st's capacity, data and counters. Returns the file or ERR_PTR(-errno).
 */
struct file *pipe_restore_fifo(struct vfs_node *n, const struct pipe_state *st, bool fill,
			       int flags);

#endif
