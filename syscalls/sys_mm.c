/* SPDX-License-Identifier: Apache-2.0 */
/* Memory system calls: thin wrappers over sentry/mm (mm.h), which holds the Linux rules. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <sys/mman.h>

#include "common/util.h"

#include "sentry/fs/dev/dev.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/handlers.h"

/* The caller's RLIMIT_AS and RLIMIT_DATA, for the mapping call it is about to make. */
static void set_limits(struct task *t)
{
	const struct rlimit *rl = t->tg->rlimits;

	mm_set_limits(t->mm, rl[RLIMIT_AS].rlim_cur, rl[RLIMIT_DATA].rlim_cur,
		      rl[RLIMIT_DATA].rlim_max);
}

/* mmap(2) */
/*
 * MAP_SHARED of a file maps the file's page cache (tmpfs, gofer files), of /dev/zero shared
 * anonymous memory; other files give -ENODEV. Pages wholly past the end of the file raise
 * SIGBUS (BUS_ADRERR), as Linux; the sentry's own accesses to them (a write(2) from such a
 * buffer) read zeros instead of -EFAULT.
 */
long sys_mmap(struct task *t, const struct syscall_args *args)
{
	uint64_t addr = args->a[0], len = args->a[1], off = args->a[5];
	int prot = (int)args->a[2], flags = (int)args->a[3], fd = (int)args->a[4];
	struct file *f = NULL;

	/* As Linux on x86-64: the offset is checked before the descriptor. */
	if (off & (PAGE_SIZE - 1))
		return -EINVAL;
	if (!(flags & MAP_ANONYMOUS)) {
		int seals;

		f = fdtable_lookup(t->fdt, fd);
		if (f && (f->flags & O_PATH)) {
			file_put(f);
			f = NULL;
		}
		if (!f)
			return -EBADF;
		/* Linux: PROT_EXEC of a file on a noexec mount is EPERM (do_mmap). */
		if ((prot & PROT_EXEC) && vfs_file_noexec(f)) {
			file_put(f);
			return -EPERM;
		}
		/* A writable shared mapping of a memfd sealed against writes: EPERM. */
		seals = (flags & MAP_TYPE) != MAP_PRIVATE && (prot & PROT_WRITE) ?
				tmpfs_file_seals(f) :
				0;
		if (seals > 0 && (seals & (LINUX_F_SEAL_WRITE | LINUX_F_SEAL_FUTURE_WRITE))) {
			file_put(f);
			return -EPERM;
		}
	}
	/* As Linux (shmem_zero_setup): a shared mapping of /dev/zero is shared anonymous memory. */
	if (f && devfs_file_is_zero(f) && (flags & MAP_TYPE) != MAP_PRIVATE &&
	    (f->flags & O_ACCMODE) != O_WRONLY) {
		file_put(f);
		f = NULL;
		flags = (flags & ~MAP_TYPE) | MAP_SHARED | MAP_ANONYMOUS;
	}
	set_limits(t);
	long r = mm_mmap(t->mm, addr, len, prot, flags, f, off);
	if (f)
		file_put(f);
	return r;
}

/* munmap(2) */
/* As Linux. */
long sys_munmap(struct task *t, const struct syscall_args *args)
{
	return mm_munmap(t->mm, args->a[0], args->a[1]);
}

/* mprotect(2) */
/* As Linux; PROT_SEM is accepted and ignored, no protection keys. */
long sys_mprotect(struct task *t, const struct syscall_args *args)
{
	set_limits(t);
	return mm_mprotect(t->mm, args->a[0], args->a[1], (int)args->a[2]);
}

/* brk(2) */
/* As Linux, RLIMIT_DATA and RLIMIT_AS included. */
long sys_brk(struct task *t, const struct syscall_args *args)
{
	set_limits(t);
	return (long)mm_brk(t->mm, args->a[0]);
}

/* mremap(2) */
/* Past the end of a duplicated shared mapping there are fresh pages, not SIGBUS. */
long sys_mremap(struct task *t, const struct syscall_args *args)
{
	set_limits(t);
	return mm_mremap(t->mm, args->a[0], args->a[1], args->a[2], (int)args->a[3], args->a[4]);
}

/* madvise(2) */
/* Hints are accepted and ignored; DONTNEED/FREE/REMOVE drop contents at once. */
long sys_madvise(struct task *t, const struct syscall_args *args)
{
	return mm_madvise(t->mm, args->a[0], args->a[1], (int)args->a[2]);
}

/* msync(2) */
/* MS_ASYNC writes back at once too (gofer files); MS_INVALIDATE has nothing to invalidate. */
long sys_msync(struct task *t, const struct syscall_args *args)
{
	return mm_msync(t->mm, args->a[0], args->a[1], (int)args->a[2]);
}
