/* SPDX-License-Identifier: Apache-2.0 */
/* The handlers of syscalls/sys_mm.c: argument order, fd lookup and file references. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>

#include "common/err.h"
#include "common/util.h"
#include "fake.h"
#include "sentry/fs/dev/dev.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/kernel/task.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/handlers.h"

#define P PAGE_SIZE
#define X 0x10000000ULL

/* A test-local fd table: sys_mm.c only looks files up. */
struct fdtable {
	struct file *files[4];
};

struct file *fdtable_lookup(struct fdtable *t, int fd)
{
	if (fd < 0 || fd >= 4 || !t->files[fd])
		return NULL;
	file_get(t->files[fd]);
	return t->files[fd];
}

/* What sys_mmap asks of the VFS and tmpfs: the test's files are on an exec mount, unsealed. */
bool vfs_file_noexec(const struct file *f)
{
	return false;
}

int tmpfs_file_seals(struct file *f)
{
	return -EINVAL;
}

/* ... and of devfs: none of the test's files is /dev/zero. */
bool devfs_file_is_zero(const struct file *f)
{
	return false;
}

static struct fdtable fdt;
static struct task task;
static struct thread_group tg; /* unlimited: the handlers read RLIMIT_AS and RLIMIT_DATA */
static struct buf_file bf;
static uint8_t data[100] = "file contents";

static void setup(void)
{
	fake_setup();
	task.mm = mm_create(&fake_kernel);
	cr_assert(!IS_ERR(task.mm));
	task.fdt = &fdt;
	for (int i = 0; i < LINUX_RLIM_NLIMITS; i++)
		tg.rlimits[i].rlim_cur = tg.rlimits[i].rlim_max = RLIM_INFINITY;
	task.tg = &tg;
	buf_file_init(&bf, data, sizeof(data), O_RDONLY);
	fdt.files[3] = &bf.f;
}

static void teardown(void)
{
	mm_put(task.mm);
	fake_teardown();
}

TestSuite(sys_mm, .init = setup, .fini = teardown);

static long call(long (*fn)(struct task *, const struct syscall_args *), uint64_t a0, uint64_t a1,
		 uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5)
{
	struct syscall_args args = { { a0, a1, a2, a3, a4, a5 } };
	return fn(&task, &args);
}

Test(sys_mm, mmap_checks_the_offset_before_the_descriptor)
{
	cr_assert_eq(call(sys_mmap, 0, P, PROT_READ, MAP_PRIVATE, 9, 1), -EINVAL);
	cr_assert_eq(call(sys_mmap, 0, P, PROT_READ, MAP_PRIVATE, 9, 0), -EBADF);
	cr_assert_eq(call(sys_mmap, 0, P, PROT_READ, MAP_PRIVATE, (uint64_t)-1, 0), -EBADF);
}

Test(sys_mm, mmap_of_a_file_keeps_one_reference_for_the_mapping)
{
	long a = call(sys_mmap, X, P, PROT_READ, MAP_PRIVATE | MAP_FIXED, 3, 0);
	cr_assert_eq(a, (long)X);
	cr_assert_eq(refcount_read(&bf.f.ref), 2);
	char buf[14];
	cr_assert_eq(mm_copy_in(task.mm, buf, X, sizeof(buf)), (ssize_t)sizeof(buf));
	cr_assert_str_eq(buf, "file contents");
	/* A failed mmap drops the lookup's reference too. */
	cr_assert_eq(call(sys_mmap, X, P, PROT_READ, MAP_SHARED, 3, 0), -ENODEV);
	cr_assert_eq(refcount_read(&bf.f.ref), 2);
	cr_assert_eq(call(sys_munmap, X, P, 0, 0, 0, 0), 0);
	cr_assert_eq(refcount_read(&bf.f.ref), 1);
}

Test(sys_mm, anonymous_mmap_ignores_the_descriptor)
{
	long a = call(sys_mmap, X, P, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		      (uint64_t)-1, 0);
	cr_assert_eq(a, (long)X);
}

Test(sys_mm, handlers_pass_their_arguments_in_order)
{
	int rw = PROT_READ | PROT_WRITE;
	cr_assert_eq(call(sys_mmap, X, 2 * P, rw, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, 0, 0),
		     (long)X);
	cr_assert_eq(call(sys_mprotect, X + P, P, PROT_READ, 0, 0, 0), 0);
	struct mm_vma_info v;
	cr_assert(vma_at(task.mm, X + P, &v));
	cr_assert_eq(v.prot, PROT_READ);
	cr_assert_eq(call(sys_madvise, X, P, 12345, 0, 0, 0), -EINVAL);
	cr_assert_eq(call(sys_madvise, X, P, MADV_DONTNEED, 0, 0, 0), 0);
	long n = call(sys_mremap, X, P, 2 * P, MREMAP_MAYMOVE | MREMAP_FIXED, X + 10 * P, 0);
	cr_assert_eq(n, (long)(X + 10 * P));
	cr_assert_eq(call(sys_munmap, X + 10 * P, 2 * P, 0, 0, 0, 0), 0);
	cr_assert_eq(vma_count(task.mm), 1);

	task.mm->start_brk = task.mm->brk = 0x20000000;
	cr_assert_eq(call(sys_brk, 0, 0, 0, 0, 0, 0), 0x20000000);
	cr_assert_eq(call(sys_brk, 0x20000000 + P, 0, 0, 0, 0, 0), 0x20000000 + (long)P);
}
