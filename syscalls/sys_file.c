/* SPDX-License-Identifier: Apache-2.0 */
/*
 * File system calls: I/O, descriptors, directories, cwd. The rules live in sentry/vfs; these
 * handlers move arguments between guest memory and the VFS, in Linux's order of checks.
 *
 * Data of read/write goes straight between the file and guest memory where the file cannot
 * sleep: mm_translate_pin turns the guest buffer into sentry pointers (the memory file's
 * mapping) that become the file's iovecs. No translation is held across a sleep: pipes move
 * data in attempts that never sleep and sleep with nothing translated; other files that may
 * sleep move it through a sentry buffer (rw_guest).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/util.h"

#include "include/abi/linux/errno.h"
#include "include/abi/linux/stat.h"
#include "sentry/fs/pipe/pipe.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/fs.h"
#include "sentry/vfs/notify.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/handlers.h"

/* Linux's MAX_RW_COUNT: one call moves at most this many bytes. */
#define MAX_RW_COUNT ((size_t)(INT_MAX & PAGE_MASK))
/* Linux's UIO_MAXIOV, and the most iovecs one file operation gets. */
#define MAX_IOV 1024
/* The size of a pipe buffer in Linux (a page). */
#define PIPE_PAGE 4096
/* getdents64 fills at most this much per call (a record is at most 280 bytes). */
#define GETDENTS_MAX (64 * 1024)

struct guest_iovec {
	uint64_t base;
	uint64_t len;
};

static int file_flags(struct file *f)
{
	return __atomic_load_n(&f->flags, __ATOMIC_RELAXED);
}

/* fdget(): O_PATH files do not count for I/O calls (-EBADF). */
static struct file *fd_get(struct task *t, int fd)
{
	struct file *f = fdtable_lookup(t->fdt, fd);

	if (f && (file_flags(f) & O_PATH)) {
		file_put(f);
		return NULL;
	}
	return f;
}

static bool file_readable(struct file *f)
{
	int acc = file_flags(f) & O_ACCMODE;

	return acc == O_RDONLY || acc == O_RDWR;
}

static bool file_writable(struct file *f)
{
	int acc = file_flags(f) & O_ACCMODE;

	return acc == O_WRONLY || acc == O_RDWR;
}

/* Files with a position (and pread/pwrite) have llseek; stream files do not. */
static bool file_seekable(struct file *f)
{
	return f->ops && f->ops->llseek;
}

static ssize_t file_rw(struct file *f, bool is_read, const struct iovec *iov, int n, int64_t *pos)
{
	return is_read ? f->ops->read(f, iov, n, pos) : f->ops->write(f, iov, n, pos);
}

/*
 * Whether a read or write of f may sleep (sentry/mm/README.md, "Sleeping with guest memory"):
 * files with readiness (a poll op) unless O_NONBLOCK, which each of their ops honours.
 */
static bool file_may_sleep(struct file *f)
{
	return f->ops->poll != NULL && !(file_flags(f) & O_NONBLOCK);
}

/*
 * Translates guest ranges from the cursor (*gi, *goff) on into iov (at most MAX_IOV pieces) and
 * advances the cursor past them. Sets *want to the bytes covered and *fault when a bad page
 * ended the list (rather than running out of iovecs or ranges). Returns the iovecs filled,
 * pinned: the caller unpins them (mm_translate_unpin) once the file is done with them.
 */
static int translate_round(struct task *t, bool is_read, const struct guest_iovec *giov, int gcnt,
			   int *gi, size_t *goff, struct iovec *iov, size_t *want, bool *fault)
{
	int n = 0;

	*want = 0;
	*fault = false;
	while (*gi < gcnt && n < MAX_IOV) {
		size_t len = giov[*gi].len - *goff, covered = 0;
		int k;

		if (len == 0) {
			(*gi)++;
			*goff = 0;
			continue;
		}
		k = mm_translate_pin(t->mm, giov[*gi].base + *goff, len, is_read, iov + n,
				     MAX_IOV - n, &covered);
		if (k < 0)
			k = 0;
		n += k;
		*want += covered;
		*goff += covered;
		if (covered < len) {
			/* Out of iovecs (go on next round), or a bad page (stop there). */
			*fault = n < MAX_IOV;
			break;
		}
		(*gi)++;
		*goff = 0;
	}
	return n;
}

/* Moves the cursor (*gi, *goff) back to n bytes after (gi0, goff0). */
static void cursor_seek(const struct guest_iovec *giov, int gcnt, int gi0, size_t goff0, size_t n,
			int *gi, size_t *goff)
{
	*gi = gi0;
	*goff = goff0;
	while (*gi < gcnt && n >= giov[*gi].len - *goff) {
		n -= giov[*gi].len - *goff;
		(*gi)++;
		*goff = 0;
	}
	*goff += n;
}

/*
 * Files that never sleep in read/write (regular files, proc, devices): straight between the
 * file and guest memory, in rounds of at most MAX_IOV pieces. A guest range that is bad from its
 * first byte gives -EFAULT; one that goes bad later ends the transfer there with the bytes moved
 * so far.
 */
static ssize_t rw_direct(struct task *t, struct file *f, bool is_read,
			 const struct guest_iovec *giov, int gcnt, int64_t *pos, struct iovec *iov)
{
	size_t total = 0, goff = 0;
	ssize_t ret = 0;
	int gi = 0;

	while (gi < gcnt) {
		size_t want;
		bool fault;
		ssize_t r;
		int n = translate_round(t, is_read, giov, gcnt, &gi, &goff, iov, &want, &fault);

		if (n == 0)
			return total ? (ssize_t)total : -EFAULT;
		r = file_rw(f, is_read, iov, n, pos);
		mm_translate_unpin(t->mm, iov, n);
		if (r < 0)
			return total ? (ssize_t)total : r;
		total += (size_t)r;
		ret = (ssize_t)total;
		/* A short transfer, a bad page or a stream: this round was the last. */
		if ((size_t)r < want || fault || !pos)
			break;
	}
	return ret;
}

/*
 * Pipes: straight into guest memory too, but never asleep with a translation. Each attempt
 * translates, moves what the pipe can take or give now, and drops the translation; when nothing
 * could move, it sleeps on the pipe with nothing translated and translates again when woken
 * (after a fork, munmap or mprotect by another thread meanwhile, the new mapping is what gets
 * written, or -EFAULT with the data left in the pipe, as Linux). A read returns what one attempt
 * got; a blocking write goes on until all is written (a signal then ends it with the count).
 */
static ssize_t rw_pipe(struct task *t, struct file *f, bool is_read, const struct guest_iovec *giov,
		       int gcnt, struct iovec *iov)
{
	size_t all = 0, done = 0, goff = 0;
	int gi = 0;

	for (int i = 0; i < gcnt; i++)
		all += giov[i].len;
	for (;;) {
		int gi0 = gi;
		size_t goff0 = goff, want;
		bool fault;
		ssize_t r;
		long w;
		int n = translate_round(t, is_read, giov, gcnt, &gi, &goff, iov, &want, &fault);
		int nmove = n, cut = -1;
		size_t cut_len = 0;

		if (n == 0)
			return done ? (ssize_t)done : -EFAULT;
		/*
		 * A bad page ahead: Linux moves a pipe's data in whole buffers (pages, counted from
		 * the start of the write), and a buffer the bad page cuts moves not at all: a write
		 * stops before it, a read leaves it in the pipe (unless all the pipe holds comes
		 * before the bad page). Buffers are taken to be whole pages here: a read after a
		 * partial read of a buffer may stop earlier than Linux's.
		 */
		if (fault && (!is_read || pipe_nread(f) > want)) {
			size_t keep = (done + want) & ~(size_t)(PIPE_PAGE - 1), left;

			keep = keep > done ? keep - done : 0;
			if (keep == 0) {
				mm_translate_unpin(t->mm, iov, n);
				return done ? (ssize_t)done : -EFAULT;
			}
			want = keep;
			for (left = keep, nmove = 0; left > iov[nmove].iov_len; nmove++)
				left -= iov[nmove].iov_len;
			cut = nmove++;
			cut_len = iov[cut].iov_len;
			iov[cut].iov_len = left;
		}
		r = is_read ? pipe_readv_nowait(f, iov, nmove) :
			      pipe_writev_nowait(f, iov, nmove, all);
		if (cut >= 0)
			iov[cut].iov_len = cut_len; /* unpin the pages as pinned */
		mm_translate_unpin(t->mm, iov, n);
		if (r > 0) {
			done += (size_t)r;
			if (is_read || done == all || ((size_t)r == want && fault))
				return (ssize_t)done;
			cursor_seek(giov, gcnt, gi0, goff0, (size_t)r, &gi, &goff);
			if ((size_t)r == want)
				continue; /* more pieces than one round holds */
		} else if (r == 0 || r != -EAGAIN || (file_flags(f) & O_NONBLOCK)) {
			return done ? (ssize_t)done : r;
		} else {
			gi = gi0;
			goff = goff0;
		}
		if (file_flags(f) & O_NONBLOCK)
			return (ssize_t)done;
		w = pipe_wait_ready(f, !is_read, all - done, all);
		if (w < 0)
			return done ? (ssize_t)done : w;
	}
}

/* The most a sleeping read or write of other files moves through a sentry buffer at once. */
#define BOUNCE_MAX ((size_t)16 << 20)

/* Copies len bytes between buf and the guest ranges from byte skip on. Returns bytes copied. */
static size_t giov_copy(struct task *t, const struct guest_iovec *giov, int gcnt, size_t skip,
			uint8_t *buf, size_t len, bool out)
{
	size_t done = 0;

	for (int i = 0; i < gcnt && done < len; i++) {
		size_t n;
		ssize_t k;

		if (skip >= giov[i].len) {
			skip -= giov[i].len;
			continue;
		}
		n = MIN(giov[i].len - skip, len - done);
		k = out ? mm_copy_out(t->mm, giov[i].base + skip, buf + done, n) :
			  mm_copy_in(t->mm, buf + done, giov[i].base + skip, n);
		done += k > 0 ? (size_t)k : 0;
		if (k < (ssize_t)n)
			break;
		skip = 0;
	}
	return done;
}

/*
 * Other files that may sleep (sockets, terminals, eventfd, host stdio...): through a sentry
 * buffer, so that the file sleeps holding no translation; guest memory is read before the
 * call, and written after it under mm->lock (mm_copy_out). A read asks for no more than the
 * guest can take from the first byte on (the data is not lost to a bad page) and at most
 * BOUNCE_MAX; a write goes on in rounds of BOUNCE_MAX while the file takes whole rounds.
 */
static ssize_t rw_bounce(struct task *t, struct file *f, bool is_read,
			 const struct guest_iovec *giov, int gcnt, int64_t *pos)
{
	size_t len = 0, done = 0;
	ssize_t r = 0;
	uint8_t *buf;

	for (int i = 0; i < gcnt; i++) {
		size_t ok = giov[i].len ? mm_access_len(t->mm, giov[i].base, giov[i].len, is_read) :
					  0;

		len += ok;
		if (ok < giov[i].len || (is_read && len >= BOUNCE_MAX))
			break;
	}
	if (len == 0)
		return -EFAULT;
	buf = malloc(MIN(len, BOUNCE_MAX));
	if (!buf)
		return -ENOMEM;
	if (is_read) {
		len = MIN(len, BOUNCE_MAX);
		r = file_rw(f, true, &(struct iovec){ buf, len }, 1, pos);
		if (r > 0) {
			size_t got = giov_copy(t, giov, gcnt, 0, buf, (size_t)r, true);

			if (got < (size_t)r)
				r = got ? (ssize_t)got : -EFAULT;
		}
		free(buf);
		return r;
	}
	while (done < len) {
		size_t chunk =
			giov_copy(t, giov, gcnt, done, buf, MIN(len - done, BOUNCE_MAX), false);

		if (chunk == 0) {
			r = done ? 0 : -EFAULT;
			break;
		}
		r = file_rw(f, false, &(struct iovec){ buf, chunk }, 1, pos);
		if (r <= 0)
			break;
		done += (size_t)r;
		if ((size_t)r < chunk)
			break;
	}
	free(buf);
	return done ? (ssize_t)done : r;
}

/*
 * Moves data between f and the guest ranges giov[0..gcnt) (total bytes at most MAX_RW_COUNT),
 * by the way that suits the file: see rw_direct, rw_pipe and rw_bounce.
 */
static ssize_t rw_guest(struct task *t, struct file *f, bool is_read,
			const struct guest_iovec *giov, int gcnt, int64_t *pos)
{
	struct iovec *iov;
	ssize_t ret;
	int gi = 0;

	while (gi < gcnt && giov[gi].len == 0)
		gi++;
	if (gi == gcnt) {
		/* Nothing to move: the call still reaches the file (read of a directory). */
		ret = is_read ? file_rw(f, true, NULL, 0, pos) : 0;
		return ret < 0 ? ret : 0;
	}
	if (file_may_sleep(f) && !file_is_pipe(f))
		return rw_bounce(t, f, is_read, giov + gi, gcnt - gi, pos);
	iov = malloc(MAX_IOV * sizeof(*iov));
	if (!iov)
		return -ENOMEM;
	if (file_is_pipe(f))
		ret = rw_pipe(t, f, is_read, giov + gi, gcnt - gi, iov);
	else
		ret = rw_direct(t, f, is_read, giov + gi, gcnt - gi, pos, iov);
	free(iov);
	return ret;
}

/*
 * The position handling of read/write/readv/writev: seekable files use and advance f->pos
 * under pos_lock; pread/pwrite pass their own offset; stream files have none.
 */
static ssize_t do_rw(struct task *t, struct file *f, bool is_read, const struct guest_iovec *giov,
		     int gcnt, int64_t *explicit_pos)
{
	ssize_t r;

	if (explicit_pos || !file_seekable(f) || f->host_offset) {
		r = rw_guest(t, f, is_read, giov, gcnt, explicit_pos);
	} else {
		pthread_mutex_lock(&f->pos_lock);
		int64_t pos = f->pos;

		r = rw_guest(t, f, is_read, giov, gcnt, &pos);
		f->pos = pos;
		pthread_mutex_unlock(&f->pos_lock);
	}
	/* inotify: IN_ACCESS / IN_MODIFY when data moved (Linux's fsnotify_access/modify). */
	if (r > 0)
		vfs_notify_file(f, is_read ? VFS_IN_ACCESS : VFS_IN_MODIFY);
	return r;
}

/* vfs_read/vfs_write's checks on the file. */
static int check_rw_file(struct file *f, bool is_read)
{
	if (is_read ? !file_readable(f) : !file_writable(f))
		return -EBADF;
	if (!f->ops || !(is_read ? f->ops->read : f->ops->write))
		return -EINVAL;
	return 0;
}

/* Linux's rw_verify_area for an explicit offset: the range may not pass 2^63 - 1. */
static int check_rw_range(int64_t pos, uint64_t count)
{
	if (pos < 0 || count > (uint64_t)INT64_MAX - (uint64_t)pos)
		return -EINVAL;
	return 0;
}

/* check_rw_range at f's own position, for read/write/readv/writev of seekable files. */
static int check_file_range(struct file *f, uint64_t count)
{
	int64_t pos;

	if (!file_seekable(f) || f->host_offset)
		return 0;
	pthread_mutex_lock(&f->pos_lock);
	pos = f->pos;
	pthread_mutex_unlock(&f->pos_lock);
	return check_rw_range(pos, count);
}

static long do_read_write(struct task *t, bool is_read, int fd, uint64_t buf, uint64_t count,
			  int64_t *pos)
{
	struct guest_iovec g = { .base = buf, .len = MIN(count, MAX_RW_COUNT) };
	struct file *f = fd_get(t, fd);
	long r;

	if (!f)
		return -EBADF;
	if (pos && !file_seekable(f)) {
		file_put(f);
		return -ESPIPE;
	}
	r = check_rw_file(f, is_read);
	if (r == 0)
		r = pos ? check_rw_range(*pos, count) : check_file_range(f, count);
	if (r == 0)
		r = do_rw(t, f, is_read, &g, 1, pos);
	file_put(f);
	return r;
}

/* read(2) */
long sys_read(struct task *t, const struct syscall_args *args)
{
	return do_read_write(t, true, (int)args->a[0], args->a[1], args->a[2], NULL);
}

/* write(2) */
long sys_write(struct task *t, const struct syscall_args *args)
{
	return do_read_write(t, false, (int)args->a[0], args->a[1], args->a[2], NULL);
}

/* pread64(2) */
long sys_pread64(struct task *t, const struct syscall_args *args)
{
	int64_t pos = (int64_t)args->a[3];

	if (pos < 0)
		return -EINVAL;
	return do_read_write(t, true, (int)args->a[0], args->a[1], args->a[2], &pos);
}

/* pwrite64(2) */
long sys_pwrite64(struct task *t, const struct syscall_args *args)
{
	int64_t pos = (int64_t)args->a[3];

	if (pos < 0)
		return -EINVAL;
	return do_read_write(t, false, (int)args->a[0], args->a[1], args->a[2], &pos);
}

/* Copies in and checks a guest iovec array (Linux's import_iovec). Sets *total. */
static int import_iovec(struct task *t, uint64_t addr, long iovcnt, struct guest_iovec **out,
			size_t *total)
{
	struct guest_iovec *giov;
	size_t sum = 0;

	*out = NULL;
	*total = 0;
	if (iovcnt < 0 || iovcnt > MAX_IOV)
		return -EINVAL;
	if (iovcnt == 0)
		return 0;
	giov = malloc((size_t)iovcnt * sizeof(*giov));
	if (!giov)
		return -ENOMEM;
	if (mm_copy_in(t->mm, giov, addr, (size_t)iovcnt * sizeof(*giov)) !=
	    (ssize_t)((size_t)iovcnt * sizeof(*giov))) {
		free(giov);
		return -EFAULT;
	}
	for (long i = 0; i < iovcnt; i++) {
		if ((int64_t)giov[i].len < 0) {
			free(giov);
			return -EINVAL;
		}
		/* Linux truncates the total to MAX_RW_COUNT rather than failing. */
		if (giov[i].len > MAX_RW_COUNT - sum)
			giov[i].len = MAX_RW_COUNT - sum;
		sum += giov[i].len;
	}
	*out = giov;
	*total = sum;
	return 0;
}

/* readv/writev, and their positioned forms when pos is not NULL. */
static long do_readv_writev(struct task *t, bool is_read, const struct syscall_args *args,
			    int64_t *pos)
{
	struct guest_iovec *giov;
	struct file *f = fd_get(t, (int)args->a[0]);
	size_t total;
	long r;

	if (!f)
		return -EBADF;
	/* preadv(2) and pwritev(2) say -ESPIPE before looking at the access mode. */
	r = pos && !file_seekable(f) ? -ESPIPE : check_rw_file(f, is_read);
	if (r == 0)
		r = import_iovec(t, args->a[1], (long)(int)args->a[2], &giov, &total);
	if (r == 0) {
		if (total)
			r = pos ? check_rw_range(*pos, total) : check_file_range(f, total);
		/* Unlike read(2), an empty vector does not reach the file. */
		if (total && r == 0)
			r = do_rw(t, f, is_read, giov, (int)args->a[2], pos);
		free(giov);
	}
	file_put(f);
	return r;
}

/* readv(2) */
long sys_readv(struct task *t, const struct syscall_args *args)
{
	return do_readv_writev(t, true, args, NULL);
}

/* writev(2) */
long sys_writev(struct task *t, const struct syscall_args *args)
{
	return do_readv_writev(t, false, args, NULL);
}

/* The RWF_* flags preadv2/pwritev2 accept; husk honours none but RWF_APPEND's absence. */
#define RWF_KNOWN 0x1fU /* HIPRI | DSYNC | SYNC | NOWAIT | APPEND */

/* On x86-64 the whole offset is in pos_l (pos_h shifts out, as Linux's pos_from_hilo). */
static long do_preadv_pwritev(struct task *t, bool is_read, const struct syscall_args *args,
			      bool v2)
{
	int64_t pos = (int64_t)args->a[3];

	if (v2) {
		if ((uint32_t)args->a[5] & ~RWF_KNOWN)
			return -EOPNOTSUPP;
		/* -1: use and advance the file position, as readv/writev. */
		if (pos == -1)
			return do_readv_writev(t, is_read, args, NULL);
	}
	if (pos < 0)
		return -EINVAL;
	return do_readv_writev(t, is_read, args, &pos);
}

/* preadv(2) */
long sys_preadv(struct task *t, const struct syscall_args *args)
{
	return do_preadv_pwritev(t, true, args, false);
}

/* pwritev(2) */
long sys_pwritev(struct task *t, const struct syscall_args *args)
{
	return do_preadv_pwritev(t, false, args, false);
}

/* preadv2(2): RWF_* flags are accepted and have no effect (HIPRI, DSYNC, SYNC, NOWAIT). */
long sys_preadv2(struct task *t, const struct syscall_args *args)
{
	return do_preadv_pwritev(t, true, args, true);
}

/* pwritev2(2): RWF_* flags are accepted; RWF_APPEND is not honoured yet. */
long sys_pwritev2(struct task *t, const struct syscall_args *args)
{
	return do_preadv_pwritev(t, false, args, true);
}

/* Copies in a path (PATH_MAX with its NUL). Returns its length or -EFAULT/-ENAMETOOLONG. */
static long copy_path(struct task *t, uint64_t addr, char *buf)
{
	return mm_copy_in_string(t->mm, buf, addr, VFS_PATH_MAX);
}

static long do_openat(struct task *t, int dirfd, uint64_t path_addr, int flags, unsigned int mode)
{
	char *path = malloc(VFS_PATH_MAX);
	struct file *f;
	long r;

	if (!path)
		return -ENOMEM;
	r = copy_path(t, path_addr, path);
	if (r >= 0)
		r = vfs_open(t, dirfd, path, flags, mode, &f);
	free(path);
	if (r < 0)
		return r;
	r = fdtable_install(t->fdt, f, 0, flags & O_CLOEXEC, task_nofile_limit(t));
	file_put(f);
	return r;
}

/* open(2) */
/* Creating files is not supported yet: O_CREAT of a missing name gives -EROFS. */
long sys_open(struct task *t, const struct syscall_args *args)
{
	return do_openat(t, AT_FDCWD, args->a[0], (int)args->a[1], (unsigned int)args->a[2]);
}

/* openat(2) */
/* Creating files is not supported yet: O_CREAT of a missing name gives -EROFS. */
long sys_openat(struct task *t, const struct syscall_args *args)
{
	return do_openat(t, (int)args->a[0], args->a[1], (int)args->a[2], (unsigned int)args->a[3]);
}

/* close(2) */
long sys_close(struct task *t, const struct syscall_args *args)
{
	return fdtable_close(t->fdt, (int)args->a[0]);
}

#define LINUX_CLOSE_RANGE_UNSHARE 2u
#define LINUX_CLOSE_RANGE_CLOEXEC 4u

/*
 * close_range(2): closes (or marks close-on-exec) every open fd in [first, last]. With
 * CLOSE_RANGE_UNSHARE the files table is first made the task's own (as unshare(CLONE_FILES)).
 */
long sys_close_range(struct task *t, const struct syscall_args *args)
{
	uint64_t first = (uint32_t)args->a[0], last = (uint32_t)args->a[1];
	unsigned int flags = (unsigned int)args->a[2];
	struct file *f = NULL;
	int fd;

	if (flags & ~(LINUX_CLOSE_RANGE_UNSHARE | LINUX_CLOSE_RANGE_CLOEXEC))
		return -EINVAL;
	if (first > last)
		return -EINVAL;
	if (flags & LINUX_CLOSE_RANGE_UNSHARE) {
		struct fdtable *own = fdtable_dup(t->fdt);

		if (!own)
			return -ENOMEM;
		fdtable_put(task_set_fdt(t, own));
	}
	if (first > INT_MAX)
		return 0;
	for (fd = (int)first; (fd = fdtable_next(t->fdt, fd, &f)) >= 0 && (uint64_t)fd <= last;
	     fd++) {
		file_put(f);
		if (flags & LINUX_CLOSE_RANGE_CLOEXEC)
			fdtable_set_cloexec(t->fdt, fd, true);
		else
			fdtable_close(t->fdt, fd);
		if (fd == INT_MAX)
			break;
	}
	if (fd >= 0 && f && (uint64_t)fd > last)
		file_put(f);
	return 0;
}

/* lseek(2) */
long sys_lseek(struct task *t, const struct syscall_args *args)
{
	int64_t off = (int64_t)args->a[1];
	unsigned int whence = (unsigned int)args->a[2];
	struct file *f = fd_get(t, (int)args->a[0]);
	int64_t r;

	if (!f)
		return -EBADF;
	/* Linux checks whence before the file's llseek (-ESPIPE) runs. */
	if (whence > SEEK_HOLE) {
		r = -EINVAL;
	} else if (!file_seekable(f)) {
		r = -ESPIPE;
	} else {
		pthread_mutex_lock(&f->pos_lock);
		r = f->ops->llseek(f, off, (int)whence);
		if (r >= 0)
			f->pos = r;
		pthread_mutex_unlock(&f->pos_lock);
	}
	file_put(f);
	return (long)r;
}

struct getdents_buf {
	struct dir_emitter e;
	uint8_t *buf;
	size_t size, used;
	bool refused;
};

static bool getdents_emit(struct dir_emitter *e, const char *name, size_t namelen, uint64_t ino,
			  unsigned int dtype, int64_t next_off)
{
	struct getdents_buf *gb = container_of(e, struct getdents_buf, e);
	size_t reclen = (offsetof(struct linux_dirent64, d_name) + namelen + 1 + 7) & ~(size_t)7;
	struct linux_dirent64 d;

	if (gb->used + reclen > gb->size) {
		gb->refused = true;
		return false;
	}
	d.d_ino = ino;
	d.d_off = next_off;
	d.d_reclen = (uint16_t)reclen;
	d.d_type = (uint8_t)dtype;
	memset(gb->buf + gb->used, 0, reclen);
	memcpy(gb->buf + gb->used, &d, offsetof(struct linux_dirent64, d_name));
	memcpy(gb->buf + gb->used + offsetof(struct linux_dirent64, d_name), name, namelen);
	gb->used += reclen;
	return true;
}

/* struct linux_dirent of the old getdents(2): d_type is the record's last byte. */
struct linux_dirent_old {
	uint64_t d_ino;
	uint64_t d_off;
	uint16_t d_reclen;
} __attribute__((packed));

static bool getdents_old_emit(struct dir_emitter *e, const char *name, size_t namelen, uint64_t ino,
			      unsigned int dtype, int64_t next_off)
{
	struct getdents_buf *gb = container_of(e, struct getdents_buf, e);
	size_t reclen = (sizeof(struct linux_dirent_old) + namelen + 2 + 7) & ~(size_t)7;
	struct linux_dirent_old d;

	if (gb->used + reclen > gb->size) {
		gb->refused = true;
		return false;
	}
	d.d_ino = ino;
	d.d_off = (uint64_t)next_off;
	d.d_reclen = (uint16_t)reclen;
	memset(gb->buf + gb->used, 0, reclen);
	memcpy(gb->buf + gb->used, &d, sizeof(d));
	memcpy(gb->buf + gb->used + sizeof(d), name, namelen);
	gb->buf[gb->used + reclen - 1] = (uint8_t)dtype;
	gb->used += reclen;
	return true;
}

static long do_getdents(struct task *t, const struct syscall_args *args,
			bool (*emit)(struct dir_emitter *, const char *, size_t, uint64_t,
				     unsigned int, int64_t))
{
	struct getdents_buf gb = { .e.emit = emit };
	uint64_t addr = args->a[1];
	struct file *f = fd_get(t, (int)args->a[0]);
	int64_t saved_pos;
	long r;

	if (!f)
		return -EBADF;
	if (!f->ops || !f->ops->iterate) {
		file_put(f);
		return -ENOTDIR;
	}
	gb.size = MIN((size_t)(unsigned int)args->a[2], (size_t)GETDENTS_MAX);
	gb.buf = malloc(gb.size ? gb.size : 1);
	if (!gb.buf) {
		file_put(f);
		return -ENOMEM;
	}
	pthread_mutex_lock(&f->pos_lock);
	saved_pos = f->pos;
	r = f->ops->iterate(f, &gb.e);
	if (gb.used) {
		if (mm_copy_out(t->mm, addr, gb.buf, gb.used) == (ssize_t)gb.used) {
			r = (long)gb.used;
		} else {
			f->pos = saved_pos; /* nothing reached the guest: give the entries again */
			r = -EFAULT;
		}
	} else if (r == 0 && gb.refused) {
		r = -EINVAL; /* the buffer cannot hold even one entry */
	}
	pthread_mutex_unlock(&f->pos_lock);
	free(gb.buf);
	/* Linux's iterate_dir: each listing is an access of the directory (IN_ACCESS, DN_ACCESS). */
	vfs_notify_file(f, VFS_IN_ACCESS);
	file_put(f);
	return r;
}

/* getdents64(2) */
/* Entries are built in a sentry buffer of at most 64 KiB, then copied out. */
long sys_getdents64(struct task *t, const struct syscall_args *args)
{
	return do_getdents(t, args, getdents_emit);
}

/* getdents(2): the old struct linux_dirent; as getdents64. */
long sys_getdents(struct task *t, const struct syscall_args *args)
{
	return do_getdents(t, args, getdents_old_emit);
}

static long do_readlinkat(struct task *t, int dirfd, uint64_t path_addr, uint64_t buf, int bufsiz)
{
	char *path, *target;
	struct vfs_path p;
	long r;

	if (bufsiz <= 0)
		return -EINVAL;
	path = malloc(VFS_PATH_MAX);
	target = malloc(VFS_PATH_MAX);
	if (!path || !target) {
		free(path);
		free(target);
		return -ENOMEM;
	}
	r = copy_path(t, path_addr, path);
	if (r >= 0)
		r = vfs_lookup_at(t, dirfd, path, AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH, &p);
	if (r >= 0) {
		r = vfs_path_readlink(&p, target, MIN((size_t)bufsiz, (size_t)VFS_PATH_MAX));
		/* An empty path names dirfd itself: Linux says -ENOENT when that is no link. */
		if (r == -EINVAL && !path[0])
			r = -ENOENT;
		vfs_path_put(&p);
	}
	if (r > 0 && mm_copy_out(t->mm, buf, target, (size_t)r) != r)
		r = -EFAULT;
	free(path);
	free(target);
	return r;
}

/* readlink(2) */
long sys_readlink(struct task *t, const struct syscall_args *args)
{
	return do_readlinkat(t, AT_FDCWD, args->a[0], args->a[1], (int)args->a[2]);
}

/* readlinkat(2) */
long sys_readlinkat(struct task *t, const struct syscall_args *args)
{
	return do_readlinkat(t, (int)args->a[0], args->a[1], args->a[2], (int)args->a[3]);
}

static long do_faccessat(struct task *t, int dirfd, uint64_t path_addr, int mode, int flags)
{
	char *path;
	long r;

	/* Linux checks mode and flags before reading the path. */
	if (mode & ~(R_OK | W_OK | X_OK))
		return -EINVAL;
	if (flags & ~(AT_EACCESS | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
		return -EINVAL;
	path = malloc(VFS_PATH_MAX);
	if (!path)
		return -ENOMEM;
	r = copy_path(t, path_addr, path);
	if (r >= 0)
		r = vfs_access(t, dirfd, path, mode, flags);
	free(path);
	return r;
}

/* access(2) */
long sys_access(struct task *t, const struct syscall_args *args)
{
	return do_faccessat(t, AT_FDCWD, args->a[0], (int)args->a[1], 0);
}

/* faccessat(2) */
long sys_faccessat(struct task *t, const struct syscall_args *args)
{
	return do_faccessat(t, (int)args->a[0], args->a[1], (int)args->a[2], 0);
}

/* faccessat2(2) */
long sys_faccessat2(struct task *t, const struct syscall_args *args)
{
	return do_faccessat(t, (int)args->a[0], args->a[1], (int)args->a[2], (int)args->a[3]);
}

/* getcwd(2) */
long sys_getcwd(struct task *t, const struct syscall_args *args)
{
	uint64_t size = args->a[1];
	char *buf = malloc(VFS_PATH_MAX);
	long r;

	if (!buf)
		return -ENOMEM;
	r = vfs_getcwd(t, buf, VFS_PATH_MAX);
	if (r >= 0 && (uint64_t)r > size)
		r = -ERANGE;
	if (r >= 0 && mm_copy_out(t->mm, args->a[0], buf, (size_t)r) != r)
		r = -EFAULT;
	free(buf);
	return r;
}

/* chdir(2) */
long sys_chdir(struct task *t, const struct syscall_args *args)
{
	char *path = malloc(VFS_PATH_MAX);
	long r;

	if (!path)
		return -ENOMEM;
	r = copy_path(t, args->a[0], path);
	if (r >= 0)
		r = fs_context_chdir(t, path);
	free(path);
	return r;
}

/* fchdir(2) */
long sys_fchdir(struct task *t, const struct syscall_args *args)
{
	struct file *f = fdtable_lookup(t->fdt, (int)args->a[0]);
	long r;

	if (!f)
		return -EBADF;
	r = fs_context_fchdir(t, f);
	file_put(f);
	return r;
}

/* The status flags F_SETFL may change. */
#define SETFL_MASK (O_APPEND | O_NONBLOCK | O_ASYNC | O_DIRECT | O_NOATIME)

static long fcntl_setfl(struct task *t, struct file *f, int fd, int arg)
{
	int old, new;

	if ((arg & O_NOATIME) && !(file_flags(f) & O_NOATIME) &&
	    !cred_capable(&t->cred, 3 /* CAP_FOWNER */)) {
		struct vfs_attr attr;
		int err = file_getattr(f, &attr);

		if (err < 0)
			return err;
		if (attr.uid != t->cred.fsuid)
			return -EPERM;
	}
	old = file_flags(f);
	/* Linux's fasync before the flags change: O_ASYNC starts or stops the notifications. */
	if ((arg ^ old) & O_ASYNC) {
		int err = vfs_fasync_enable(t, f, fd, arg & O_ASYNC);

		if (err < 0)
			return err;
	}
	do {
		new = (old & ~SETFL_MASK) | (arg & SETFL_MASK);
	} while (!__atomic_compare_exchange_n(&f->flags, &old, new, false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return 0;
}

/* F_SETOWN, F_GETOWN, F_SETSIG, F_GETSIG, F_SETOWN_EX, F_GETOWN_EX (Linux's do_fcntl). */
static long fcntl_owner(struct task *t, struct file *f, int cmd, uint64_t arg)
{
	struct f_owner_ex ex;
	int type, who = (int)arg;
	int32_t id;

	switch (cmd) {
	case F_SETOWN:
		/* Negative: a process group. */
		if (who == INT_MIN)
			return -EINVAL;
		return vfs_fasync_setown(t, f, who < 0 ? VFS_OWNER_PGRP : VFS_OWNER_PID,
					 who < 0 ? -who : who);
	case F_GETOWN:
		vfs_fasync_getown(f, &type, &id);
		return type == VFS_OWNER_PGRP ? -(long)id : id;
	case F_SETSIG:
		return vfs_fasync_setsig(f, arg > 64 ? -1 : (int)arg);
	case F_GETSIG:
		return vfs_fasync_getsig(f);
	case F_SETOWN_EX:
		if (mm_copy_in(t->mm, &ex, arg, sizeof(ex)) != sizeof(ex))
			return -EFAULT;
		if (ex.pid < 0)
			return ex.type > F_OWNER_PGRP || ex.type < 0 ? -EINVAL : -ESRCH;
		return vfs_fasync_setown(t, f, ex.type, ex.pid);
	default: /* F_GETOWN_EX */
		vfs_fasync_getown(f, &type, &id);
		ex.type = type;
		ex.pid = id;
		if (mm_copy_out(t->mm, arg, &ex, sizeof(ex)) != sizeof(ex))
			return -EFAULT;
		return 0;
	}
}

/* fcntl(2) */
/*
 * Leases are -EINVAL; O_ASYNC notifies of readiness changes, not of each write; F_NOTIFY sees
 * only the changes made through the sentry.
 */
long sys_fcntl(struct task *t, const struct syscall_args *args)
{
	int fd = (int)args->a[0], cmd = (int)args->a[1];
	uint64_t arg = args->a[2];
	struct file *f = fdtable_lookup(t->fdt, fd);
	int limit;
	long r;

	if (!f)
		return -EBADF;
	if ((file_flags(f) & O_PATH) && cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC &&
	    cmd != F_GETFD && cmd != F_SETFD && cmd != F_GETFL) {
		file_put(f);
		return -EBADF;
	}
	switch (cmd) {
	case F_DUPFD:
	case F_DUPFD_CLOEXEC:
		limit = task_nofile_limit(t);
		if (arg >= (uint64_t)limit)
			r = -EINVAL;
		else
			r = fdtable_install(t->fdt, f, (int)arg, cmd == F_DUPFD_CLOEXEC, limit);
		break;
	case F_GETFD:
		r = fdtable_get_cloexec(t->fdt, fd);
		if (r > 0)
			r = FD_CLOEXEC;
		break;
	case F_SETFD:
		r = fdtable_set_cloexec(t->fdt, fd, arg & FD_CLOEXEC);
		break;
	case F_GETFL:
		r = file_flags(f);
		break;
	case F_SETFL:
		r = fcntl_setfl(t, f, fd, (int)arg);
		break;
	case F_SETOWN:
	case F_GETOWN:
	case F_SETSIG:
	case F_GETSIG:
	case F_SETOWN_EX:
	case F_GETOWN_EX:
		r = fcntl_owner(t, f, cmd, arg);
		break;
	case F_GETLK:
	case F_SETLK:
	case F_SETLKW:
	case 36: /* F_OFD_GETLK */
	case 37: /* F_OFD_SETLK */
	case 38: /* F_OFD_SETLKW */
		r = fcntl_lock(t, f, cmd, arg); /* sys_fs.c */
		break;
	case F_NOTIFY:
		r = vfs_fasync_dirnotify(t, f, fd, arg);
		break;
	case F_GETPIPE_SZ:
	case F_SETPIPE_SZ:
		r = pipe_fcntl(t, f, cmd, arg);
		break;
	case 1033: /* F_ADD_SEALS */
		r = tmpfs_file_add_seals(f, (unsigned int)arg);
		break;
	case 1034: /* F_GET_SEALS */
		r = tmpfs_file_seals(f);
		break;
	default:
		r = -EINVAL;
		break;
	}
	file_put(f);
	return r;
}

#define LINUX_MFD_CLOEXEC 0x1u
#define LINUX_MFD_ALLOW_SEALING 0x2u
#define LINUX_MFD_HUGETLB 0x4u
#define LINUX_MFD_NOEXEC_SEAL 0x8u
#define LINUX_MFD_EXEC 0x10u

/*
 * memfd_create(2): an anonymous tmpfs file of the sandbox's memory, opened read-write, shown as
 * "/memfd:NAME (deleted)" in /proc/PID/fd. MFD_HUGETLB is refused (no huge pages).
 */
long sys_memfd_create(struct task *t, const struct syscall_args *args)
{
	unsigned int flags = (unsigned int)args->a[1], tflags = 0;
	char name[TMPFS_MEMFD_NAME_MAX + 1];
	struct file *f;
	ssize_t len;
	long r;

	if (flags & ~(LINUX_MFD_CLOEXEC | LINUX_MFD_ALLOW_SEALING | LINUX_MFD_HUGETLB |
		      LINUX_MFD_NOEXEC_SEAL | LINUX_MFD_EXEC))
		return -EINVAL;
	if ((flags & LINUX_MFD_EXEC) && (flags & LINUX_MFD_NOEXEC_SEAL))
		return -EINVAL;
	if (flags & LINUX_MFD_HUGETLB)
		return -EINVAL;
	len = mm_copy_in_string(t->mm, name, args->a[0], sizeof(name));
	if (len == -ENAMETOOLONG)
		return -EINVAL;
	if (len < 0)
		return len;
	if (flags & LINUX_MFD_ALLOW_SEALING)
		tflags |= TMPFS_MEMFD_ALLOW_SEALING;
	if (flags & LINUX_MFD_NOEXEC_SEAL)
		tflags |= TMPFS_MEMFD_NOEXEC;
	r = tmpfs_memfd_create(&t->k->mf, name, tflags, &f);
	if (r < 0)
		return r;
	r = fdtable_install(t->fdt, f, 0, flags & LINUX_MFD_CLOEXEC, task_nofile_limit(t));
	file_put(f);
	return r;
}

/* dup(2) */
long sys_dup(struct task *t, const struct syscall_args *args)
{
	struct file *f = fdtable_lookup(t->fdt, (int)args->a[0]);
	long r;

	if (!f)
		return -EBADF;
	r = fdtable_install(t->fdt, f, 0, false, task_nofile_limit(t));
	file_put(f);
	return r;
}

static long do_dup3(struct task *t, unsigned int oldfd, unsigned int newfd, int flags)
{
	int limit = task_nofile_limit(t);
	struct file *f;
	long r;

	if (flags & ~O_CLOEXEC)
		return -EINVAL;
	if (oldfd == newfd)
		return -EINVAL;
	if (newfd >= (unsigned int)limit)
		return -EBADF;
	f = fdtable_lookup(t->fdt, (int)oldfd);
	if (!f || oldfd > INT_MAX) {
		file_put(f);
		return -EBADF;
	}
	r = fdtable_install_at(t->fdt, f, (int)newfd, flags & O_CLOEXEC, limit);
	file_put(f);
	return r;
}

/* dup2(2) */
long sys_dup2(struct task *t, const struct syscall_args *args)
{
	unsigned int oldfd = (unsigned int)args->a[0], newfd = (unsigned int)args->a[1];

	if (oldfd == newfd) {
		struct file *f = oldfd > INT_MAX ? NULL : fdtable_lookup(t->fdt, (int)oldfd);

		if (!f)
			return -EBADF;
		file_put(f);
		return newfd;
	}
	return do_dup3(t, oldfd, newfd, 0);
}

/* dup3(2) */
long sys_dup3(struct task *t, const struct syscall_args *args)
{
	return do_dup3(t, (unsigned int)args->a[0], (unsigned int)args->a[1], (int)args->a[2]);
}

/* Sets or clears a status flag from an int in guest memory (FIONBIO, FIOASYNC). */
static long ioctl_flag(struct task *t, struct file *f, uint64_t arg, int flag)
{
	int on, old, new;

	if (mm_copy_in(t->mm, &on, arg, sizeof(on)) != sizeof(on))
		return -EFAULT;
	old = file_flags(f);
	do {
		new = on ? (old | flag) : (old & ~flag);
	} while (!__atomic_compare_exchange_n(&f->flags, &old, new, false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return 0;
}

/* FIONREAD of a regular file: bytes from the position to the end (Linux's do_vfs_ioctl). */
static long ioctl_fionread_reg(struct task *t, struct file *f, uint64_t arg)
{
	struct vfs_attr attr;
	int64_t pos;
	int val;
	int err = file_getattr(f, &attr);

	if (err < 0)
		return err;
	pthread_mutex_lock(&f->pos_lock);
	pos = f->pos;
	pthread_mutex_unlock(&f->pos_lock);
	val = (int)(attr.size - pos);
	if (mm_copy_out(t->mm, arg, &val, sizeof(val)) != sizeof(val))
		return -EFAULT;
	return 0;
}

/* ioctl(2) */
/* The generic FIO* commands, then the file's own (terminal queries of host files). */
long sys_ioctl(struct task *t, const struct syscall_args *args)
{
	int fd = (int)args->a[0];
	unsigned int cmd = (unsigned int)args->a[1];
	uint64_t arg = args->a[2];
	struct file *f = fd_get(t, fd);
	long r;

	if (!f)
		return -EBADF;
	switch (cmd) {
	case FIOCLEX:
		r = fdtable_set_cloexec(t->fdt, fd, true);
		break;
	case FIONCLEX:
		r = fdtable_set_cloexec(t->fdt, fd, false);
		break;
	case FIONBIO:
		r = ioctl_flag(t, f, arg, O_NONBLOCK);
		break;
	case FIOASYNC:
		r = ioctl_flag(t, f, arg, O_ASYNC);
		if (r == 0)
			r = vfs_fasync_enable(t, f, fd, file_flags(f) & O_ASYNC);
		break;
	default:
		r = -ENOIOCTLCMD;
		/* A file's own FIONREAD first: anon files (inotify) have regular-file nodes. */
		if (f->ops && f->ops->ioctl)
			r = f->ops->ioctl(f, t, cmd, arg);
		if ((r == -ENOIOCTLCMD || r == -ENOTTY) && cmd == FIONREAD && f->node &&
		    S_ISREG(f->node->type)) {
			r = ioctl_fionread_reg(t, f, arg);
			break;
		}
		if (r == -ENOIOCTLCMD)
			r = -ENOTTY;
		break;
	}
	file_put(f);
	return r;
}

/* umask(2) */
long sys_umask(struct task *t, const struct syscall_args *args)
{
	return fs_context_set_umask(t->fs, (unsigned int)args->a[0]);
}
