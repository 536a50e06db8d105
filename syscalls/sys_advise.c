/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Advice and residency: fadvise64, readahead, sync_file_range, mlock/mlock2/munlock,
 * mlockall/munlockall, mincore. The sentry keeps guest memory in its memory file, which the host
 * never swaps out from under the guest in a way the guest could observe, and file data in its
 * own caches or the gofer's host files: the hints change nothing, so these calls check their
 * arguments exactly as Linux does and succeed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "common/err.h"
#include "common/util.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/ptrace.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/handlers.h"

#define PAGE 4096ull
#define CAP_IPC_LOCK 14

/* The file at fd, or NULL; *mode gets its type (S_IFMT) when it has attributes, else 0. */
static struct file *file_and_type(struct task *t, long fd, uint32_t *mode)
{
	struct file *f = fd < 0 || fd > INT32_MAX ? NULL : fdtable_lookup(t->fdt, (int)fd);
	struct vfs_attr attr;

	*mode = 0;
	if (f && file_getattr(f, &attr) == 0)
		*mode = attr.mode & S_IFMT;
	return f;
}

/* fadvise64(2) */
long sys_fadvise64(struct task *t, const struct syscall_args *args)
{
	int64_t len = (int64_t)args->a[2];
	int advice = (int)args->a[3];
	uint32_t mode;
	struct file *f = file_and_type(t, (long)args->a[0], &mode);
	long r = 0;

	if (!f)
		return -EBADF;
	if (S_ISFIFO(mode))
		r = -ESPIPE; /* pipes and FIFOs */
	else if (len < 0 || advice < POSIX_FADV_NORMAL || advice > POSIX_FADV_NOREUSE)
		r = -EINVAL;
	file_put(f);
	return r;
}

/* readahead(2): a regular file open for reading. */
long sys_readahead(struct task *t, const struct syscall_args *args)
{
	uint32_t mode;
	struct file *f = file_and_type(t, (long)args->a[0], &mode);
	long r = 0;

	if (!f)
		return -EBADF;
	if ((f->flags & O_ACCMODE) == O_WRONLY || (f->flags & O_PATH))
		r = -EBADF;
	else if (!S_ISREG(mode) || (int64_t)args->a[1] < 0)
		r = -EINVAL;
	file_put(f);
	return r;
}

/* sync_file_range(2): data of memory filesystems is never written back; gofer writes are. */
long sys_sync_file_range(struct task *t, const struct syscall_args *args)
{
	int64_t off = (int64_t)args->a[1], n = (int64_t)args->a[2];
	unsigned int flags = (unsigned int)args->a[3];
	uint32_t mode;
	struct file *f;
	long r = 0;

	if (flags & ~7u) /* SYNC_FILE_RANGE_WAIT_BEFORE | WRITE | WAIT_AFTER */
		return -EINVAL;
	if (off < 0 || n < 0 || (uint64_t)off + (uint64_t)n > (uint64_t)INT64_MAX)
		return -EINVAL;
	f = file_and_type(t, (long)args->a[0], &mode);
	if (!f)
		return -EBADF;
	if (f->flags & O_PATH)
		r = -EBADF;
	else if (!S_ISREG(mode) && !S_ISDIR(mode) && !S_ISBLK(mode) && !S_ISLNK(mode))
		r = -ESPIPE;
	file_put(f);
	return r;
}

/* --- mlock family --- */

struct coverage {
	uint64_t next, end; /* the first byte not yet seen covered, and the range's end */
};

static int cover(const struct mm_vma_info *v, void *arg)
{
	struct coverage *c = arg;

	if (v->end <= c->next)
		return 0;
	if (v->start > c->next)
		return 1; /* a hole */
	c->next = v->end;
	return c->next >= c->end ? 2 : 0;
}

/* Whether [start, end) is wholly mapped (Linux's ENOMEM for a hole otherwise). */
static bool range_mapped(struct mm *mm, uint64_t start, uint64_t end)
{
	struct coverage c = { start, end };

	if (start >= end)
		return true;
	return mm_for_each_vma(mm, cover, &c) == 2;
}

static long memlock_limit(struct task *t)
{
	rlim_t cur;

	pthread_mutex_lock(&t->tg->lock);
	cur = t->tg->rlimits[RLIMIT_MEMLOCK].rlim_cur;
	pthread_mutex_unlock(&t->tg->lock);
	return cur > INT64_MAX ? INT64_MAX : (long)cur;
}

/* mlock(2)/mlock2(2)/munlock(2): the page-aligned range must be mapped. */
static long lock_range(struct task *t, uint64_t addr, uint64_t len, bool lock)
{
	uint64_t start = addr & ~(PAGE - 1), end;

	if (len > UINT64_MAX - (addr - start) - PAGE)
		return -ENOMEM;
	end = (addr + len + PAGE - 1) & ~(PAGE - 1);
	if (end > (1ull << 47))
		return -ENOMEM;
	if (lock && !cred_capable(&t->cred, CAP_IPC_LOCK)) {
		long limit = memlock_limit(t);

		if (limit == 0)
			return -EPERM;
		if ((int64_t)(end - start) > limit)
			return -ENOMEM;
	}
	if (!range_mapped(t->mm, start, end))
		return -ENOMEM;
	return mm_mlock(t->mm, start, end, lock);
}

long sys_mlock(struct task *t, const struct syscall_args *args)
{
	return lock_range(t, args->a[0], args->a[1], true);
}

long sys_mlock2(struct task *t, const struct syscall_args *args)
{
	if (args->a[2] & ~(uint64_t)1 /* MLOCK_ONFAULT */)
		return -EINVAL;
	return lock_range(t, args->a[0], args->a[1], true);
}

long sys_munlock(struct task *t, const struct syscall_args *args)
{
	return lock_range(t, args->a[0], args->a[1], false);
}

long sys_mlockall(struct task *t, const struct syscall_args *args)
{
	uint64_t flags = args->a[0];

	/* MCL_CURRENT 1, MCL_FUTURE 2, MCL_ONFAULT 4 (only with one of the others). */
	if (!flags || (flags & ~7ull) || flags == 4)
		return -EINVAL;
	if (!cred_capable(&t->cred, CAP_IPC_LOCK) && memlock_limit(t) == 0)
		return -EPERM;
	/* MCL_FUTURE is not remembered: later mappings are not marked locked. */
	if (flags & 1)
		mm_mlock_all(t->mm, true);
	return 0;
}

long sys_munlockall(struct task *t, const struct syscall_args *args)
{
	mm_mlock_all(t->mm, false);
	return 0;
}

/* mincore(2): every page of a mapped range reads as resident. */
long sys_mincore(struct task *t, const struct syscall_args *args)
{
	uint64_t addr = args->a[0], len = args->a[1], vec = args->a[2];
	uint64_t npages, end;
	uint8_t ones[256];

	if (addr & (PAGE - 1))
		return -EINVAL;
	if (len > (1ull << 47))
		return -ENOMEM;
	end = (addr + len + PAGE - 1) & ~(PAGE - 1);
	if (end > (1ull << 47) || !range_mapped(t->mm, addr, end))
		return -ENOMEM;
	npages = (end - addr) / PAGE;
	memset(ones, 1, sizeof(ones));
	for (uint64_t done = 0; done < npages;) {
		size_t n = npages - done < sizeof(ones) ? (size_t)(npages - done) : sizeof(ones);

		if (mm_copy_out(t->mm, vec + done, ones, n) != (ssize_t)n)
			return -EFAULT;
		done += n;
	}
	return 0;
}

#define PMADV_MAXIOV 1024
#define LINUX_MADV_COLLAPSE 25

struct pmadv_iov {
	uint64_t base;
	uint64_t len;
};

/* The mm of tg's leader (a new reference), or NULL when it has none left. */
static struct mm *tg_mm(struct task *t, struct thread_group *tg)
{
	struct task *l = kernel_find_task(t->k, tg->pid);
	struct mm *mm = NULL;

	if (l) {
		mm = task_get_mm(l);
		task_put(l);
	}
	return mm;
}

/*
 * process_madvise(2): on the caller's own process any madvise advice (Linux 6.13); on another
 * the reclaim hints COLD, PAGEOUT, WILLNEED, COLLAPSE, which change nothing here (checked
 * against its mappings), with CAP_SYS_NICE and ptrace access.
 */
long sys_process_madvise(struct task *t, const struct syscall_args *args)
{
	unsigned long nr = args->a[2];
	int advice = (int)args->a[3];
	struct pmadv_iov *iov;
	struct thread_group *tg;
	struct task *leader;
	struct mm *mm;
	size_t done = 0;
	long r;

	if ((unsigned int)args->a[4])
		return -EINVAL;
	if (nr > PMADV_MAXIOV)
		return -EINVAL;
	iov = calloc(nr ? nr : 1, sizeof(*iov));
	if (!iov)
		return -ENOMEM;
	if (nr &&
	    mm_copy_in(t->mm, iov, args->a[1], nr * sizeof(*iov)) != (ssize_t)(nr * sizeof(*iov))) {
		free(iov);
		return -EFAULT;
	}
	tg = pidfd_get_tg(t, (int)args->a[0]);
	if (IS_ERR(tg)) {
		free(iov);
		return PTR_ERR(tg);
	}
	r = -ESRCH;
	leader = kernel_find_task(t->k, tg->pid);
	mm = tg_mm(t, tg);
	if (!leader || !mm)
		goto out;
	if (tg != t->tg) {
		r = ptrace_may_access(t, leader);
		if (r)
			goto out;
		r = -EINVAL;
		if (advice != MADV_COLD && advice != MADV_PAGEOUT && advice != MADV_WILLNEED &&
		    advice != LINUX_MADV_COLLAPSE)
			goto out;
		r = -EPERM;
		if (!cred_capable(&t->cred, 23 /* CAP_SYS_NICE */))
			goto out;
	}
	r = 0;
	for (unsigned long i = 0; i < nr; i++) {
		r = mm_madvise(mm, iov[i].base, iov[i].len, advice);
		if (r < 0)
			break;
		done += iov[i].len;
	}
	if (done)
		r = (long)done;
out:
	if (mm)
		mm_put(mm);
	if (leader)
		task_put(leader);
	tg_put(tg);
	free(iov);
	return r;
}
