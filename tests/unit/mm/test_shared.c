/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MAP_SHARED file mappings over the fake platform: a test file whose page cache is a set of
 * memory-file pages (page_file), so the tests see exactly which pages mm maps, references and
 * writes back.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>

#include "common/err.h"
#include "common/util.h"
#include "fake.h"

#define P PAGE_SIZE
#define BASE 0x7f0000000000ULL
#define RW (PROT_READ | PROT_WRITE)
#define NPAGES 8

/* A file whose page i is the memory-file page offs[i] (the file holds one reference). */
struct page_file {
	struct file f;
	uint64_t offs[NPAGES];
	int get_calls;
	bool last_write;
	int sync_calls;
	uint64_t sync_pgoff, sync_npages;
};

static struct mm *mm;
static struct page_file pf;

static struct page_file *PF(struct file *f)
{
	return container_of(f, struct page_file, f);
}

static int pf_get_pages(struct file *f, uint64_t pgoff, size_t npages, uint64_t *offs, bool write)
{
	struct page_file *p = PF(f);

	p->get_calls++;
	p->last_write = write;
	if (pgoff + npages > NPAGES)
		return -ENOSPC;
	for (size_t i = 0; i < npages; i++) {
		offs[i] = p->offs[pgoff + i];
		memfile_ref(&fake_kernel.mf, offs[i], P);
	}
	return 0;
}

static int pf_sync_pages(struct file *f, uint64_t pgoff, uint64_t npages, bool wait)
{
	struct page_file *p = PF(f);

	p->sync_calls++;
	p->sync_pgoff = pgoff;
	p->sync_npages = npages;
	return 0;
}

static ssize_t pf_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	return 0;
}

static const struct file_ops pf_ops = {
	.read = pf_read,
	.get_pages = pf_get_pages,
	.sync_pages = pf_sync_pages,
};

/* Pages 0-3 contiguous in the memory file, pages 4-7 another contiguous run elsewhere. */
static void setup(void)
{
	fake_setup();
	mm = mm_create(&fake_kernel);
	cr_assert(!IS_ERR(mm));
	mm->mmap_base = BASE;
	memset(&pf, 0, sizeof(pf));
	refcount_init(&pf.f.ref, 1);
	pf.f.ops = &pf_ops;
	pf.f.flags = O_RDWR;
	int64_t a = memfile_alloc(&fake_kernel.mf, 4 * P);
	int64_t gap = memfile_alloc(&fake_kernel.mf, P);
	int64_t b = memfile_alloc(&fake_kernel.mf, 4 * P);
	cr_assert(a >= 0 && gap >= 0 && b >= 0);
	for (int i = 0; i < 4; i++) {
		pf.offs[i] = (uint64_t)a + i * P;
		pf.offs[4 + i] = (uint64_t)b + i * P;
	}
}

static void teardown(void)
{
	if (mm)
		mm_put(mm);
	mm = NULL;
	cr_assert_eq(refcount_read(&pf.f.ref), 1, "every VMA dropped its file reference");
	fake_teardown();
}

TestSuite(mm_shared, .init = setup, .fini = teardown);

Test(mm_shared, maps_the_files_own_pages)
{
	long addr = mm_mmap(mm, 0, 2 * P, RW, MAP_SHARED, &pf.f, P);
	struct mm_vma_info v;

	cr_assert_gt(addr, 0);
	cr_assert(vma_at(mm, (uint64_t)addr, &v));
	cr_assert_eq(v.mf_off, pf.offs[1]);
	cr_assert_eq(v.flags, MM_VMA_SHARED | MM_VMA_FILE);
	cr_assert_eq(v.file_off, P);
	cr_assert(pf.last_write, "a writable file's pages are asked for writing");
	cr_assert_eq(memfile_page_refs(&fake_kernel.mf, pf.offs[1]), 2);
	cr_assert(fake_matches_mm(mm));
	/* The sentry writing guest memory writes the file's page. */
	cr_assert_eq(mm_copy_out(mm, (uint64_t)addr + P + 3, "abc", 3), 3);
	cr_assert_eq(memcmp((char *)memfile_ptr(&fake_kernel.mf, pf.offs[2]) + 3, "abc", 3), 0);
}

Test(mm_shared, one_vma_per_run_of_contiguous_pages)
{
	long addr = mm_mmap(mm, 0, NPAGES * P, PROT_READ, MAP_SHARED, &pf.f, 0);
	struct mm_vma_info v;

	cr_assert_gt(addr, 0);
	cr_assert_eq(vma_count(mm), 2);
	cr_assert(vma_at(mm, (uint64_t)addr + 4 * P, &v));
	cr_assert_eq(v.start, (uint64_t)addr + 4 * P);
	cr_assert_eq(v.mf_off, pf.offs[4]);
	cr_assert_eq(v.file_off, 4 * P);
	cr_assert(fake_matches_mm(mm));
}

Test(mm_shared, munmap_drops_only_the_mappings_references)
{
	long addr = mm_mmap(mm, 0, NPAGES * P, RW, MAP_SHARED, &pf.f, 0);

	cr_assert_gt(addr, 0);
	cr_assert_eq(mm_munmap(mm, (uint64_t)addr + 2 * P, 4 * P), 0);
	cr_assert_eq(memfile_page_refs(&fake_kernel.mf, pf.offs[2]), 1);
	cr_assert_eq(memfile_page_refs(&fake_kernel.mf, pf.offs[1]), 2);
	cr_assert_eq(memfile_page_refs(&fake_kernel.mf, pf.offs[6]), 2);
	cr_assert_eq(mm_munmap(mm, (uint64_t)addr, NPAGES * P), 0);
	for (int i = 0; i < NPAGES; i++)
		cr_assert_eq(memfile_page_refs(&fake_kernel.mf, pf.offs[i]), 1);
}

Test(mm_shared, writable_mapping_of_a_read_only_file_is_eacces)
{
	pf.f.flags = O_RDONLY;
	cr_assert_eq(mm_mmap(mm, 0, P, RW, MAP_SHARED, &pf.f, 0), -EACCES);
	long addr = mm_mmap(mm, 0, P, PROT_READ, MAP_SHARED, &pf.f, 0);
	cr_assert_gt(addr, 0);
	cr_assert_not(pf.last_write);
	cr_assert_eq(mm_mprotect(mm, (uint64_t)addr, P, RW), -EACCES);
	cr_assert_eq(mm_mprotect(mm, (uint64_t)addr, P, PROT_NONE), 0);
	pf.f.flags = O_WRONLY;
	cr_assert_eq(mm_mmap(mm, 0, P, PROT_READ, MAP_SHARED, &pf.f, 0), -EACCES);
}

Test(mm_shared, file_without_page_cache_is_enodev)
{
	struct buf_file bf;
	static const char data[16];

	buf_file_init(&bf, data, sizeof(data), O_RDWR);
	cr_assert_eq(mm_mmap(mm, 0, P, PROT_READ, MAP_SHARED, &bf.f, 0), -ENODEV);
	long addr = mm_mmap(mm, 0, P, PROT_READ, MAP_PRIVATE, &bf.f, 0);
	cr_assert_gt(addr, 0);
	cr_assert_eq(mm_munmap(mm, (uint64_t)addr, P), 0);
}

Test(mm_shared, get_pages_error_leaves_nothing_mapped)
{
	cr_assert_eq(mm_mmap(mm, 0, 2 * P, RW, MAP_SHARED, &pf.f, 7 * P), -ENOSPC);
	cr_assert_eq(vma_count(mm), 0);
}

Test(mm_shared, fork_shares_the_pages_without_copy_on_write)
{
	long addr = mm_mmap(mm, 0, 4 * P, RW, MAP_SHARED, &pf.f, 0);
	struct mm_vma_info v;

	cr_assert_gt(addr, 0);
	struct mm *child = mm_fork(mm);
	cr_assert(!IS_ERR(child));
	cr_assert(vma_at(child, (uint64_t)addr, &v));
	cr_assert_eq(v.mf_off, pf.offs[0]);
	cr_assert_not(v.cow);
	cr_assert(vma_at(mm, (uint64_t)addr, &v));
	cr_assert_not(v.cow);
	cr_assert_eq(memfile_page_refs(&fake_kernel.mf, pf.offs[0]), 3);
	mm_put(child);
	cr_assert_eq(memfile_page_refs(&fake_kernel.mf, pf.offs[0]), 2);
}

Test(mm_shared, msync_writes_back_the_file_range_of_writable_mappings)
{
	long addr = mm_mmap(mm, 0, 4 * P, RW, MAP_SHARED, &pf.f, 2 * P);

	cr_assert_gt(addr, 0);
	cr_assert_eq(mm_msync(mm, (uint64_t)addr + P, 2 * P, MS_SYNC), 0);
	cr_assert_eq(pf.sync_calls, 1);
	cr_assert_eq(pf.sync_pgoff, 3);
	cr_assert_eq(pf.sync_npages, 2);
	cr_assert_eq(mm_msync(mm, (uint64_t)addr, P, MS_SYNC | MS_ASYNC), -EINVAL);
	cr_assert_eq(mm_msync(mm, (uint64_t)addr + 1, P, MS_SYNC), -EINVAL);
	cr_assert_eq(mm_msync(mm, (uint64_t)addr, 8 * P, MS_ASYNC), -ENOMEM);
	cr_assert_eq(pf.sync_calls, 2, "the mapped part is synced before -ENOMEM");
}

Test(mm_shared, msync_skips_read_only_files)
{
	pf.f.flags = O_RDONLY;
	long addr = mm_mmap(mm, 0, P, PROT_READ, MAP_SHARED, &pf.f, 0);

	cr_assert_gt(addr, 0);
	cr_assert_eq(mm_msync(mm, (uint64_t)addr, P, MS_SYNC), 0);
	cr_assert_eq(pf.sync_calls, 0);
}

Test(mm_shared, mremap_grows_with_the_files_pages)
{
	long addr = mm_mmap(mm, 0, 2 * P, RW, MAP_SHARED, &pf.f, 0);

	cr_assert_gt(addr, 0);
	/* Block in-place growth so that the mapping moves. */
	cr_assert_eq(mm_mmap(mm, (uint64_t)addr + 2 * P, P, PROT_READ,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, NULL, 0),
		     (long)addr + 2 * P);
	long moved = mm_mremap(mm, (uint64_t)addr, 2 * P, 6 * P, MREMAP_MAYMOVE, 0);
	struct mm_vma_info v;

	cr_assert_gt(moved, 0);
	cr_assert_neq(moved, addr);
	cr_assert(vma_at(mm, (uint64_t)moved, &v));
	cr_assert_eq(v.mf_off, pf.offs[0]);
	cr_assert(vma_at(mm, (uint64_t)moved + 5 * P, &v));
	cr_assert_eq(v.mf_off + (moved + 5 * P - v.start), pf.offs[5]);
	cr_assert_eq(v.flags, MM_VMA_SHARED | MM_VMA_FILE);
	cr_assert(fake_matches_mm(mm));
	/* A mapping made of two runs moves as one. */
	long again = mm_mremap(mm, (uint64_t)moved, 6 * P, 6 * P, MREMAP_MAYMOVE | MREMAP_FIXED,
			       BASE - 64 * P);
	cr_assert_eq(again, (long)(BASE - 64 * P));
	cr_assert(vma_at(mm, (uint64_t)again + 4 * P, &v));
	cr_assert_eq(v.mf_off, pf.offs[4]);
	cr_assert(fake_matches_mm(mm));
}
