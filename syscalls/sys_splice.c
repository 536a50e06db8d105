/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Moving data between two files without the guest's memory: sendfile(2), splice(2), tee(2),
 * copy_file_range(2). All of them copy through a sentry buffer with the files' own read and
 * write operations, so that they work for every kind of file (regular files, pipes, sockets,
 * devices) with the files' own blocking, EOF and error rules.
 *
 * Linux moves pipe pages instead of copying; here a read that was not fully written is given
 * back by rewinding a seekable input. A stream input (pipe, socket) cannot take bytes back: it
 * is read at most once per call and what was read is then written out whole (waiting on a
 * blocking output); only an output error after that loses the rest, as a write(2) would.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "common/util.h"

#include "sentry/fs/pipe/pipe.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/fs.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/handlers.h"

/* Linux's MAX_RW_COUNT. */
#define MAX_RW_COUNT ((size_t)(INT_MAX & PAGE_MASK))
/* The bounce buffer: one allocation per call, at most this big. */
#define XFER_CHUNK ((size_t)128 * 1024)

#define SPLICE_F_MOVE 1
#define SPLICE_F_NONBLOCK 2
#define SPLICE_F_MORE 4
#define SPLICE_F_GIFT 8
#define SPLICE_F_ALL (SPLICE_F_MOVE | SPLICE_F_NONBLOCK | SPLICE_F_MORE | SPLICE_F_GIFT)

static int flags_of(struct file *f)
{
	return __atomic_load_n(&f->flags, __ATOMIC_RELAXED);
}

/* fdget(): O_PATH files do not count (-EBADF). */
static struct file *fd_get(struct task *t, int fd)
{
	struct file *f = fdtable_lookup(t->fdt, fd);

	if (f && (flags_of(f) & O_PATH)) {
		file_put(f);
		return NULL;
	}
	return f;
}

static bool readable(struct file *f)
{
	int acc = flags_of(f) & O_ACCMODE;

	return (acc == O_RDONLY || acc == O_RDWR) && f->ops && f->ops->read;
}

static bool writable(struct file *f)
{
	int acc = flags_of(f) & O_ACCMODE;

	return (acc == O_WRONLY || acc == O_RDWR) && f->ops && f->ops->write;
}

static bool seekable(struct file *f)
{
	return f->ops && f->ops->llseek;
}

static bool is_reg(struct file *f)
{
	return f->node && S_ISREG(f->node->type);
}

static bool is_dir(struct file *f)
{
	return f->node && S_ISDIR(f->node->type);
}

/* One end of a transfer: the file and where its position lives while the transfer runs. */
struct xfer_end {
	struct file *f;
	int64_t pos; /* the position used (a caller's offset or the file's) */
	int64_t *posp; /* &pos for seekable files, NULL for streams */
	bool own_pos; /* pos is f->pos: locked for the transfer and stored back */
};

/*
 * Sets end e up: an explicit offset (uoff, already copied in), or the file's position for a
 * seekable file without one, or none for a stream or a host file (host_offset).
 */
static void end_setup(struct xfer_end *e, struct file *f, const int64_t *uoff)
{
	e->f = f;
	e->posp = NULL;
	e->own_pos = false;
	if (uoff) {
		e->pos = *uoff;
		e->posp = &e->pos;
	} else if (seekable(f) && !f->host_offset) {
		e->own_pos = true;
		e->posp = &e->pos;
	}
	/* A host file without an offset moves the host FD's shared one (no position passed). */
}

/* Takes the file positions of both ends (one lock when both are the same file). */
static void ends_lock(struct xfer_end *in, struct xfer_end *out)
{
	if (in->own_pos) {
		pthread_mutex_lock(&in->f->pos_lock);
		in->pos = in->f->pos;
	}
	if (out->own_pos) {
		if (out->f != in->f || !in->own_pos)
			pthread_mutex_lock(&out->f->pos_lock);
		out->pos = out->f->pos;
	}
}

static void ends_unlock(struct xfer_end *in, struct xfer_end *out)
{
	if (out->own_pos) {
		out->f->pos = out->pos;
		if (out->f != in->f || !in->own_pos)
			pthread_mutex_unlock(&out->f->pos_lock);
	}
	if (in->own_pos) {
		/* Same file on both sides: the write position is the one that stays (Linux). */
		if (!(out->own_pos && out->f == in->f))
			in->f->pos = in->pos;
		pthread_mutex_unlock(&in->f->pos_lock);
	}
}

/*
 * Copies up to len bytes from in to out through a bounce buffer. Returns the bytes written
 * (a partial count before an error or a short write), 0 at the input's end, or -errno when
 * nothing moved. A seekable input loops until len, its end or a short write, and is rewound
 * over bytes that were read but not written; a stream input is read once.
 */
static ssize_t xfer(struct xfer_end *in, struct xfer_end *out, size_t len)
{
	size_t bufsz = MIN(len, XFER_CHUNK), total = 0;
	uint8_t *buf;
	ssize_t ret = 0;

	if (len == 0)
		return 0;
	buf = malloc(bufsz);
	if (!buf)
		return -ENOMEM;
	while (total < len) {
		struct iovec iov = { buf, MIN(bufsz, len - total) };
		size_t done = 0;
		ssize_t r = in->f->ops->read(in->f, &iov, 1, in->posp);

		if (r <= 0) {
			ret = r;
			break;
		}
		while (done < (size_t)r) {
			struct iovec wv = { buf + done, (size_t)r - done };
			ssize_t w = out->f->ops->write(out->f, &wv, 1, out->posp);

			if (w <= 0) {
				ret = w ? w : -EIO;
				break;
			}
			done += (size_t)w;
			/* A seekable input gives back what a short write left: stop here. */
			if (in->posp && done < (size_t)r)
				break;
		}
		total += done;
		if (done < (size_t)r) {
			if (in->posp)
				*in->posp -= (int64_t)((size_t)r - done);
			break;
		}
		/* A stream was read once; a short read of a file is its end. */
		if (!in->posp || (size_t)r < iov.iov_len)
			break;
	}
	free(buf);
	return total ? (ssize_t)total : ret;
}

/* Copies a guest loff_t in; a negative one is -EINVAL. */
static int get_off(struct task *t, uint64_t addr, int64_t *off)
{
	if (mm_copy_in(t->mm, off, addr, sizeof(*off)) != sizeof(*off))
		return -EFAULT;
	return *off < 0 ? -EINVAL : 0;
}

static int put_off(struct task *t, uint64_t addr, int64_t off)
{
	return mm_copy_out(t->mm, addr, &off, sizeof(off)) == sizeof(off) ? 0 : -EFAULT;
}

/* Runs one transfer with optional guest offsets and writes them back. */
static long run_xfer(struct task *t, struct file *in, uint64_t in_addr, const int64_t *in_off,
		     struct file *out, uint64_t out_addr, const int64_t *out_off, size_t len)
{
	struct xfer_end ie, oe;
	ssize_t r;
	int err;

	/*
	 * Into a pipe, at most its capacity: Linux fills only the room there is, and a caller that
	 * drains the pipe itself afterwards would otherwise wait on itself forever. (With data
	 * already queued this can still wait for room where Linux would return less.)
	 */
	if (file_is_pipe(out)) {
		long cap = pipe_fcntl(t, out, F_GETPIPE_SZ, 0);

		if (cap > 0)
			len = MIN(len, (size_t)cap);
	}
	end_setup(&ie, in, in_off);
	end_setup(&oe, out, out_off);
	ends_lock(&ie, &oe);
	r = xfer(&ie, &oe, len);
	ends_unlock(&ie, &oe);
	if (r < 0)
		return r;
	/* The offsets are written back even after a partial transfer, as Linux does. */
	if (in_off) {
		err = put_off(t, in_addr, ie.pos);
		if (err < 0)
			return err;
	}
	if (out_off) {
		err = put_off(t, out_addr, oe.pos);
		if (err < 0)
			return err;
	}
	return r;
}

/* sendfile(2) */
/* Any readable input, not only files that can be mapped (as Linux since 5.12). */
long sys_sendfile(struct task *t, const struct syscall_args *args)
{
	int out_fd = (int)args->a[0], in_fd = (int)args->a[1];
	uint64_t off_addr = args->a[2];
	size_t count = MIN(args->a[3], MAX_RW_COUNT);
	struct file *in, *out;
	int64_t off;
	long r;

	in = fd_get(t, in_fd);
	if (!in)
		return -EBADF;
	out = fd_get(t, out_fd);
	if (!out) {
		file_put(in);
		return -EBADF;
	}
	r = 0;
	if (!readable(in) || !writable(out))
		r = -EBADF;
	else if (off_addr && !seekable(in))
		r = -ESPIPE;
	else if (flags_of(out) & O_APPEND)
		r = -EINVAL;
	else if (off_addr)
		r = get_off(t, off_addr, &off);
	if (r == 0)
		r = run_xfer(t, in, off_addr, off_addr ? &off : NULL, out, 0, NULL, count);
	file_put(out);
	file_put(in);
	return r;
}

/* splice(2) */
/* Copies (no page moving); SPLICE_F_NONBLOCK is accepted and has no effect: O_NONBLOCK rules. */
long sys_splice(struct task *t, const struct syscall_args *args)
{
	int in_fd = (int)args->a[0], out_fd = (int)args->a[2];
	uint64_t in_addr = args->a[1], out_addr = args->a[3];
	size_t len = MIN(args->a[4], MAX_RW_COUNT);
	unsigned int flags = (unsigned int)args->a[5];
	struct file *in, *out;
	int64_t in_off = 0, out_off = 0;
	long r = 0;

	if (flags & ~SPLICE_F_ALL)
		return -EINVAL;
	in = fd_get(t, in_fd);
	if (!in)
		return -EBADF;
	out = fd_get(t, out_fd);
	if (!out) {
		file_put(in);
		return -EBADF;
	}
	/* Linux's do_splice order: modes, then the pipe rules, then the offsets. */
	if (!readable(in) || !writable(out))
		r = -EBADF;
	else if (!file_is_pipe(in) && !file_is_pipe(out))
		r = -EINVAL;
	else if (file_is_pipe(in) && file_is_pipe(out) && in->priv == out->priv)
		r = -EINVAL;
	else if ((in_addr && file_is_pipe(in)) || (out_addr && file_is_pipe(out)))
		r = -ESPIPE;
	else if ((in_addr && !seekable(in)) || (out_addr && !seekable(out)))
		r = -ESPIPE;
	else if (flags_of(out) & O_APPEND)
		r = -EINVAL;
	if (r == 0 && in_addr)
		r = get_off(t, in_addr, &in_off);
	if (r == 0 && out_addr)
		r = get_off(t, out_addr, &out_off);
	if (r == 0)
		r = run_xfer(t, in, in_addr, in_addr ? &in_off : NULL, out, out_addr,
			     out_addr ? &out_off : NULL, len);
	file_put(out);
	file_put(in);
	return r;
}

/* tee(2) */
/*
 * Copies the queued bytes instead of sharing pages: the input is read without consuming it
 * (pipe_peek), then as much as fits is appended to the output as stream data (O_DIRECT packet
 * boundaries of the input are not carried over).
 */
long sys_tee(struct task *t, const struct syscall_args *args)
{
	struct file *in, *out;
	size_t len = MIN(args->a[2], MAX_RW_COUNT);
	unsigned int flags = (unsigned int)args->a[3];
	long r = 0;

	if (flags & ~SPLICE_F_ALL)
		return -EINVAL;
	in = fd_get(t, (int)args->a[0]);
	if (!in)
		return -EBADF;
	out = fd_get(t, (int)args->a[1]);
	if (!out) {
		file_put(in);
		return -EBADF;
	}
	if (!readable(in) || !writable(out))
		r = -EBADF;
	else if (!file_is_pipe(in) || !file_is_pipe(out) || in->priv == out->priv)
		r = -EINVAL;
	if (r == 0 && len > 0) {
		/* As Linux's do_tee: O_NONBLOCK on either file means SPLICE_F_NONBLOCK. */
		bool nonblock = (flags & SPLICE_F_NONBLOCK) ||
				((flags_of(in) | flags_of(out)) & O_NONBLOCK);
		long cap_in = pipe_fcntl(t, in, F_GETPIPE_SZ, 0);
		long cap_out = pipe_fcntl(t, out, F_GETPIPE_SZ, 0);
		uint8_t *buf;

		/* More than either pipe holds can never be copied in one call. */
		if (cap_in > 0)
			len = MIN(len, (size_t)cap_in);
		if (cap_out > 0)
			len = MIN(len, (size_t)cap_out);
		buf = malloc(len);
		if (!buf) {
			r = -ENOMEM;
		} else {
			r = pipe_peek(in, buf, len, nonblock);
			/* Linux checks the output's readers even at the input's end: EPIPE there. */
			if (r >= 0)
				r = pipe_fill(out, buf, (size_t)r, nonblock);
			free(buf);
		}
	}
	file_put(out);
	file_put(in);
	return r;
}

/* copy_file_range(2) */
/* Always a copy through the sentry (no reflink); same-file overlapping ranges: EINVAL. */
long sys_copy_file_range(struct task *t, const struct syscall_args *args)
{
	int in_fd = (int)args->a[0], out_fd = (int)args->a[2];
	uint64_t in_addr = args->a[1], out_addr = args->a[3];
	size_t len = args->a[4];
	unsigned int flags = (unsigned int)args->a[5];
	struct file *in, *out;
	int64_t in_off = 0, out_off = 0;
	long r = 0;

	if (flags)
		return -EINVAL;
	in = fd_get(t, in_fd);
	if (!in)
		return -EBADF;
	out = fd_get(t, out_fd);
	if (!out) {
		file_put(in);
		return -EBADF;
	}
	/* Linux's generic_copy_file_checks order. */
	if (!readable(in) || !writable(out) || (flags_of(out) & O_APPEND))
		r = -EBADF;
	else if (is_dir(in) || is_dir(out))
		r = -EISDIR;
	else if (!is_reg(in) || !is_reg(out))
		r = -EINVAL;
	if (r == 0 && in_addr)
		r = get_off(t, in_addr, &in_off);
	if (r == 0 && out_addr)
		r = get_off(t, out_addr, &out_off);
	if (r == 0 && in->node == out->node && len > 0) {
		int64_t ip = in_off, op = out_off;

		if (!in_addr) {
			pthread_mutex_lock(&in->pos_lock);
			ip = in->pos;
			pthread_mutex_unlock(&in->pos_lock);
		}
		if (!out_addr) {
			pthread_mutex_lock(&out->pos_lock);
			op = out->pos;
			pthread_mutex_unlock(&out->pos_lock);
		}
		struct vfs_attr attr;

		/* Linux checks the range the copy can really have: up to the input's end. */
		len = MIN(len, MAX_RW_COUNT);
		if (file_getattr(in, &attr) == 0)
			len = ip >= attr.size ? 0 : MIN(len, (size_t)(attr.size - ip));
		if (len > 0 && ip + (int64_t)len > op && op + (int64_t)len > ip)
			r = -EINVAL;
	}
	if (r == 0)
		r = run_xfer(t, in, in_addr, in_addr ? &in_off : NULL, out, out_addr,
			     out_addr ? &out_off : NULL, MIN(len, MAX_RW_COUNT));
	file_put(out);
	file_put(in);
	return r;
}

/* Linux's UIO_MAXIOV. */
#define VMSPLICE_MAXIOV 1024

struct vmsplice_iov {
	uint64_t base;
	uint64_t len;
};

/*
 * vmsplice(2): copies between the guest's memory and the pipe (Linux may map the pages into the
 * pipe instead; SPLICE_F_GIFT changes nothing). Writing waits only for the first room, reading
 * for the first data, as Linux's.
 */
long sys_vmsplice(struct task *t, const struct syscall_args *args)
{
	unsigned long nr = args->a[2];
	unsigned int flags = (unsigned int)args->a[3];
	bool nonblock = flags & SPLICE_F_NONBLOCK;
	struct vmsplice_iov *iov = NULL;
	size_t total = 0, done = 0;
	uint8_t *buf = NULL;
	struct file *f;
	long r;

	if (flags & ~SPLICE_F_ALL)
		return -EINVAL;
	if (nr > VMSPLICE_MAXIOV)
		return -EINVAL;
	f = fd_get(t, (int)args->a[0]);
	if (!f)
		return -EBADF;
	r = -EBADF;
	if (!file_is_pipe(f))
		goto out;
	r = -ENOMEM;
	iov = calloc(nr ? nr : 1, sizeof(*iov));
	if (!iov)
		goto out;
	r = -EFAULT;
	if (nr &&
	    mm_copy_in(t->mm, iov, args->a[1], nr * sizeof(*iov)) != (ssize_t)(nr * sizeof(*iov)))
		goto out;
	for (unsigned long i = 0; i < nr; i++) {
		r = -EINVAL;
		if (iov[i].len > MAX_RW_COUNT - total)
			goto out;
		total += iov[i].len;
	}
	r = 0;
	if (!total)
		goto out;
	total = MIN(total, XFER_CHUNK);
	r = -ENOMEM;
	buf = malloc(total);
	if (!buf)
		goto out;
	if (writable(f)) {
		size_t len = 0;

		for (unsigned long i = 0; i < nr && len < total; i++) {
			size_t n = MIN(iov[i].len, total - len);
			ssize_t c = mm_copy_in(t->mm, buf + len, iov[i].base, n);

			len += c > 0 ? (size_t)c : 0;
			if (c != (ssize_t)n)
				break;
		}
		r = -EFAULT;
		if (!len)
			goto out;
		while (done < len) {
			r = pipe_fill(f, buf + done, len - done, nonblock || done > 0);
			if (r <= 0)
				break;
			done += (size_t)r;
		}
	} else if (readable(f)) {
		struct iovec kiov = { buf, total };
		size_t off = 0;

		r = pipe_peek(f, buf, 1, nonblock);
		if (r <= 0)
			goto out;
		r = f->ops->read(f, &kiov, 1, NULL);
		if (r <= 0)
			goto out;
		for (unsigned long i = 0; i < nr && off < (size_t)r; i++) {
			size_t n = MIN(iov[i].len, (size_t)r - off);
			ssize_t c = mm_copy_out(t->mm, iov[i].base, buf + off, n);

			off += c > 0 ? (size_t)c : 0;
			if (c != (ssize_t)n)
				break;
		}
		/* Bytes taken from the pipe that did not reach the guest are lost, as a readv's. */
		r = off ? (long)off : -EFAULT;
		goto out;
	} else {
		r = -EBADF;
		goto out;
	}
	if (done)
		r = (long)done;
out:
	free(buf);
	free(iov);
	file_put(f);
	return r;
}
