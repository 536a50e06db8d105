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

#endif
