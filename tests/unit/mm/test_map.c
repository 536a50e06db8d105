/* SPDX-License-Identifier: Apache-2.0 */
/* mmap, munmap, mprotect, brk, mremap, madvise and mm_put over a fake platform. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

#include "common/err.h"
#include "common/util.h"
#include "fake.h"

#define P PAGE_SIZE
#define BASE 0x7f0000000000ULL /* mmap_base of the tests */
#define X 0x10000000ULL /* a free area for MAP_FIXED */

static struct mm *mm;
static struct fake_as *as;
static uint64_t free_at_start;

static void setup(void)
{
	fake_setup();
	mm = mm_create(&fake_kernel);
	cr_assert(!IS_ERR(mm));
	as = fake_last_as;
	cr_assert_not_null(as);
	mm->mmap_base = BASE;
	free_at_start = memfile_free_bytes(&fake_kernel.mf);
}

static void teardown(void)
{
	if (mm)
		mm_put(mm);
	fake_teardown();
}

TestSuite(mm_map, .init = setup, .fini = teardown);

static long anon(uint64_t addr, uint64_t len, int prot, int flags)
{
	return mm_mmap(mm, addr, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | flags, NULL, 0);
}

static long anon_fixed(uint64_t addr, uint64_t len, int prot)
{
	return anon(addr, len, prot, MAP_FIXED);
}

/* Byte at guest address addr read through the VMA's pages, whatever its protection. */
static uint8_t peek(uint64_t addr)
{
	struct mm_vma_info v;
	cr_assert(vma_at(mm, addr, &v), "nothing mapped at %#lx", (unsigned long)addr);
	return *(uint8_t *)memfile_ptr(&fake_kernel.mf, v.mf_off + (addr - v.start));
}

static void fill(uint64_t addr, uint64_t len, uint8_t byte)
{
	static uint8_t buf[16 * 4096];
	cr_assert_leq(len, sizeof(buf));
	memset(buf, byte, len);
	cr_assert_eq(mm_poke(mm, addr, buf, len), (ssize_t)len);
}

static uint64_t used(void)
{
	return free_at_start - memfile_free_bytes(&fake_kernel.mf);
}

/* --- mmap --- */

Test(mm_map, mmap_without_hint_is_top_down_and_page_aligned)
{
	long a = anon(0, 5000, PROT_READ | PROT_WRITE, 0);
	cr_assert_eq(a, (long)(BASE - 2 * P));
	long b = anon(0, 1, PROT_READ, 0);
	cr_assert_eq(b, (long)(BASE - 3 * P));
	cr_assert_eq(as->ncalls, 2);
	cr_assert_eq(as->calls[0].op, FAKE_MAP);
	cr_assert_eq(as->calls[0].addr, (uint64_t)a);
	cr_assert_eq(as->calls[0].len, 2 * P);
	cr_assert_eq(as->calls[0].prot, PROT_READ | PROT_WRITE);
	cr_assert_eq(as->calls[1].len, P);
	cr_assert_eq(used(), 3 * P);
	cr_assert(fake_matches_mm(mm));
}

Test(mm_map, mmap_fills_the_highest_hole_below_mmap_base)
{
	long a = anon(0, 3 * P, PROT_READ, 0);
	cr_assert_eq(mm_munmap(mm, (uint64_t)a + P, P), 0);
	cr_assert_eq(anon(0, P, PROT_READ, 0), a + (long)P);
	cr_assert_eq(anon(0, P, PROT_READ, 0), a - (long)P);
}

Test(mm_map, mmap_honours_a_free_hint_and_ignores_a_taken_one)
{
	cr_assert_eq(anon(X, P, PROT_READ, 0), (long)X);
	/* Rounded down to its page, which is free. */
	cr_assert_eq(anon(X + P + 100, P, PROT_READ, 0), (long)(X + P));
	cr_assert_eq(anon(X, P, PROT_READ, 0), (long)(BASE - P)); /* taken: top-down */
	/* A hint below the lowest guest address is raised to it. */
	cr_assert_eq(anon(0x1000, P, PROT_READ, 0), (long)PLATFORM_GUEST_MIN);
	cr_assert(fake_matches_mm(mm));
}

Test(mm_map, mmap_32bit_lands_in_the_second_gib)
{
	long a = anon(0, P, PROT_READ, MAP_32BIT);
	cr_assert_eq(a, 0x80000000L - (long)P);
}

Test(mm_map, mmap_rejects_bad_arguments_with_linux_errnos)
{
	int rw = PROT_READ | PROT_WRITE;
	cr_assert_eq(anon(0, 0, rw, 0), -EINVAL);
	cr_assert_eq(anon(X + 1, P, rw, MAP_FIXED), -EINVAL);
	cr_assert_eq(anon(X + 1, P, rw, MAP_FIXED_NOREPLACE), -EINVAL);
	cr_assert_eq(mm_mmap(mm, 0, P, rw, MAP_PRIVATE | MAP_ANONYMOUS, NULL, 100), -EINVAL);
	cr_assert_eq(mm_mmap(mm, 0, P, rw, MAP_ANONYMOUS, NULL, 0), -EINVAL);
	cr_assert_eq(mm_mmap(mm, 0, P, rw, MAP_SHARED_VALIDATE | MAP_ANONYMOUS, NULL, 0), -EINVAL);
	cr_assert_eq(mm_mmap(mm, 0, P, rw, MAP_SHARED | MAP_ANONYMOUS | MAP_GROWSDOWN, NULL, 0),
		     -EINVAL);
	cr_assert_eq(anon(PLATFORM_GUEST_MAX - P, 2 * P, rw, MAP_FIXED), -ENOMEM);
	cr_assert_eq(anon(0x1000, P, rw, MAP_FIXED), -EPERM);
	cr_assert_eq(anon(0, UINT64_MAX - 10, rw, 0), -ENOMEM);
	cr_assert_eq(anon(0, P, rw, MAP_HUGETLB), -ENOMEM);
	cr_assert_eq(as->ncalls, 0);
	cr_assert_eq(used(), 0);
}

Test(mm_map, mmap_gives_enomem_when_the_address_space_is_full)
{
	/* 1 GiB + 1 page does not fit in the 1 GiB window of MAP_32BIT. */
	cr_assert_eq(anon(0, (1ULL << 30) + P, PROT_READ, MAP_32BIT), -ENOMEM);
	cr_assert_eq(used(), 0);
}

Test(mm_map, mmap_gives_enomem_when_the_memory_file_is_full)
{
	cr_assert_eq(anon(0, FAKE_MEMFILE_SIZE + P, PROT_READ, 0), -ENOMEM);
	cr_assert_eq(as->ncalls, 0);
}

Test(mm_map, shared_anonymous_memory_is_supported)
{
	long a = mm_mmap(mm, 0, P, PROT_READ, MAP_SHARED | MAP_ANONYMOUS, NULL, 0);
	cr_assert_eq(a, (long)(BASE - P));
	struct mm_vma_info v;
	cr_assert(vma_at(mm, (uint64_t)a, &v));
	cr_assert_eq(v.flags, MM_VMA_SHARED | MM_VMA_ANON);
}

Test(mm_map, map_fixed_over_the_middle_splits_the_mapping_in_three)
{
	cr_assert_eq(anon_fixed(X, 3 * P, PROT_READ | PROT_WRITE), (long)X);
	fill(X, P, 1);
	fill(X + P, P, 2);
	fill(X + 2 * P, P, 3);
	fake_clear_calls(as);

	cr_assert_eq(anon_fixed(X + P, P, PROT_READ), (long)(X + P));
	cr_assert_eq(vma_count(mm), 3);
	/* One call: the new map replaces the old pages in the platform. */
	cr_assert_eq(as->ncalls, 1);
	cr_assert_eq(as->calls[0].op, FAKE_MAP);
	cr_assert_eq(as->calls[0].addr, X + P);
	cr_assert_eq(as->calls[0].len, P);
	cr_assert_eq(as->calls[0].prot, PROT_READ);
	cr_assert(fake_matches_mm(mm));
	cr_assert_eq(peek(X), 1);
	cr_assert_eq(peek(X + P), 0);
	cr_assert_eq(peek(X + 2 * P), 3);
	/* The replaced page went back to the allocator. */
	cr_assert_eq(used(), 3 * P);
	struct mm_vma_info v;
	cr_assert(vma_at(mm, X + 2 * P, &v));
	cr_assert_eq(v.start, X + 2 * P);
	cr_assert_eq(v.end, X + 3 * P);
	cr_assert_eq(v.prot, PROT_READ | PROT_WRITE);
}

Test(mm_map, map_fixed_replaces_several_mappings_at_once)
{
	anon_fixed(X, P, PROT_READ);
	anon_fixed(X + P, P, PROT_WRITE);
	anon_fixed(X + 2 * P, P, PROT_EXEC);
	cr_assert_eq(vma_count(mm), 3);
	cr_assert_eq(anon_fixed(X, 3 * P, PROT_READ), (long)X);
	cr_assert_eq(vma_count(mm), 1);
	cr_assert_eq(used(), 3 * P);
	cr_assert(fake_matches_mm(mm));
}

Test(mm_map, map_fixed_noreplace_over_a_mapping_is_eexist)
{
	anon_fixed(X, 2 * P, PROT_READ);
	fake_clear_calls(as);
	cr_assert_eq(anon(X + P, 2 * P, PROT_READ, MAP_FIXED_NOREPLACE), -EEXIST);
	cr_assert_eq(anon(X + P, 2 * P, PROT_READ, MAP_FIXED_NOREPLACE | MAP_FIXED), -EEXIST);
	cr_assert_eq(as->ncalls, 0);
	cr_assert_eq(used(), 2 * P);
	cr_assert_eq(anon(X + 2 * P, P, PROT_READ, MAP_FIXED_NOREPLACE), (long)(X + 2 * P));
}

Test(mm_map, a_platform_failure_leaves_the_mm_unchanged)
{
	anon_fixed(X, 2 * P, PROT_READ);
	as->fail_next = -EIO;
	cr_assert_eq(anon_fixed(X + P, 2 * P, PROT_WRITE), -EIO);
	cr_assert_eq(used(), 2 * P);
	as->fail_next = -EIO;
	cr_assert_eq(mm_munmap(mm, X, P), -EIO);
	as->fail_next = -EIO;
	cr_assert_eq(mm_mprotect(mm, X, P, PROT_NONE), -EIO);
	struct mm_vma_info v;
	cr_assert(vma_at(mm, X, &v));
	cr_assert_eq(v.end, X + 2 * P);
	cr_assert_eq(v.prot, PROT_READ);
	cr_assert(fake_matches_mm(mm));
}

/* --- munmap --- */

Test(mm_map, munmap_of_a_middle_part_leaves_two_mappings)
{
	anon_fixed(X, 3 * P, PROT_READ);
	fake_clear_calls(as);
	cr_assert_eq(mm_munmap(mm, X + P, P), 0);
	cr_assert_eq(vma_count(mm), 2);
	cr_assert_eq(as->ncalls, 1);
	cr_assert_eq(as->calls[0].op, FAKE_UNMAP);
	cr_assert_eq(as->calls[0].addr, X + P);
	cr_assert_eq(as->calls[0].len, P);
	cr_assert_eq(used(), 2 * P);
	cr_assert(fake_matches_mm(mm));
	uint8_t b;
	cr_assert_eq(mm_copy_in(mm, &b, X + P, 1), -EFAULT);
}

Test(mm_map, munmap_across_mappings_and_holes_removes_all_of_them)
{
	anon_fixed(X, P, PROT_READ);
	anon_fixed(X + 2 * P, 2 * P, PROT_WRITE);
	cr_assert_eq(mm_munmap(mm, X, 3 * P + 1), 0); /* length rounds up */
	cr_assert_eq(vma_count(mm), 0);
	cr_assert_eq(used(), 0);
	cr_assert(fake_matches_mm(mm));
}

Test(mm_map, munmap_rejects_bad_arguments_and_ignores_unmapped_ranges)
{
	cr_assert_eq(mm_munmap(mm, X + 1, P), -EINVAL);
	cr_assert_eq(mm_munmap(mm, X, 0), -EINVAL);
	cr_assert_eq(mm_munmap(mm, PLATFORM_GUEST_MAX, P), -EINVAL);
	cr_assert_eq(mm_munmap(mm, X, UINT64_MAX), -EINVAL);
	cr_assert_eq(mm_munmap(mm, X, P), 0);
	cr_assert_eq(as->ncalls, 0);
}

/* --- mprotect --- */

Test(mm_map, mprotect_of_a_middle_part_splits_and_restoring_merges)
{
	anon_fixed(X, 3 * P, PROT_READ | PROT_WRITE);
	fake_clear_calls(as);
	cr_assert_eq(mm_mprotect(mm, X + P, P, PROT_READ), 0);
	cr_assert_eq(vma_count(mm), 3);
	cr_assert_eq(as->ncalls, 1);
	cr_assert_eq(as->calls[0].op, FAKE_PROTECT);
	cr_assert_eq(as->calls[0].addr, X + P);
	cr_assert_eq(as->calls[0].len, P);
	cr_assert_eq(as->calls[0].prot, PROT_READ);
	cr_assert(fake_matches_mm(mm));
	uint8_t b = 1;
	cr_assert_eq(mm_copy_out(mm, X + P, &b, 1), -EFAULT);
	cr_assert_eq(mm_copy_out(mm, X, &b, 1), 1);

	cr_assert_eq(mm_mprotect(mm, X + P, P, PROT_READ | PROT_WRITE), 0);
	cr_assert_eq(vma_count(mm), 1);
	cr_assert(fake_matches_mm(mm));
}

Test(mm_map, mprotect_over_a_hole_changes_up_to_it_and_fails_enomem)
{
	anon_fixed(X, P, PROT_READ);
	anon_fixed(X + 2 * P, P, PROT_READ);
	cr_assert_eq(mm_mprotect(mm, X, 3 * P, PROT_NONE), -ENOMEM);
	struct mm_vma_info v;
	cr_assert(vma_at(mm, X, &v));
	cr_assert_eq(v.prot, PROT_NONE);
	cr_assert(vma_at(mm, X + 2 * P, &v));
	cr_assert_eq(v.prot, PROT_READ);
	cr_assert_eq(mm_mprotect(mm, X + 5 * P, P, PROT_NONE), -ENOMEM);
	cr_assert(fake_matches_mm(mm));
}

Test(mm_map, mprotect_rejects_bad_arguments)
{
	anon_fixed(X, P, PROT_READ);
	cr_assert_eq(mm_mprotect(mm, X + 1, P, PROT_READ), -EINVAL);
	cr_assert_eq(mm_mprotect(mm, X, P, 0x100), -EINVAL);
	cr_assert_eq(mm_mprotect(mm, X, P, PROT_READ | PROT_GROWSDOWN | PROT_GROWSUP), -EINVAL);
	/* PROT_GROWSDOWN needs a grows-down mapping. */
	cr_assert_eq(mm_mprotect(mm, X, P, PROT_READ | PROT_GROWSDOWN), -EINVAL);
	cr_assert_eq(mm_mprotect(mm, X, 0, PROT_WRITE), 0);
	cr_assert_eq(mm_mprotect(mm, X, UINT64_MAX - P, PROT_WRITE), -ENOMEM);
}

Test(mm_map, mprotect_growsdown_extends_to_the_start_of_the_stack)
{
	cr_assert_eq(anon(X, 4 * P, PROT_READ, MAP_FIXED | MAP_GROWSDOWN), (long)X);
	cr_assert_eq(mm_mprotect(mm, X + 2 * P, P, PROT_READ | PROT_EXEC | PROT_GROWSDOWN), 0);
	struct mm_vma_info v;
	cr_assert(vma_at(mm, X, &v));
	cr_assert_eq(v.start, X);
	cr_assert_eq(v.end, X + 3 * P);
	cr_assert_eq(v.prot, PROT_READ | PROT_EXEC);
	cr_assert(v.flags & MM_VMA_GROWSDOWN);
	cr_assert(fake_matches_mm(mm));
}

/* --- brk --- */

#define HEAP 0x20000000ULL

/* Runs after the suite's setup (criterion runs both). */
static void heap_setup(void)
{
	mm->start_brk = mm->brk = HEAP;
}

Test(mm_map, brk_grows_and_shrinks_the_heap, .init = heap_setup)
{
	cr_assert_eq(mm_brk(mm, 0), HEAP);
	cr_assert_eq(mm_brk(mm, HEAP + 10000), HEAP + 10000);
	struct mm_vma_info v;
	cr_assert(vma_at(mm, HEAP, &v));
	cr_assert_eq(v.end, HEAP + 3 * P);
	cr_assert_eq(v.prot, PROT_READ | PROT_WRITE);
	cr_assert(v.flags & MM_VMA_HEAP);
	fill(HEAP, 3 * P, 9);
	/* Growing again extends the same VMA: its pages stay contiguous. */
	cr_assert_eq(mm_brk(mm, HEAP + 5 * P), HEAP + 5 * P);
	cr_assert_eq(vma_count(mm), 1);
	cr_assert_eq(peek(HEAP + 2 * P), 9);
	cr_assert_eq(peek(HEAP + 4 * P), 0);

	cr_assert_eq(mm_brk(mm, HEAP + 100), HEAP + 100);
	cr_assert(vma_at(mm, HEAP, &v));
	cr_assert_eq(v.end, HEAP + P);
	cr_assert_eq(used(), P);
	/* Within the same page, only the break moves. */
	cr_assert_eq(mm_brk(mm, HEAP + 200), HEAP + 200);
	cr_assert_eq(mm_brk(mm, HEAP), HEAP);
	cr_assert_eq(vma_count(mm), 0);
	cr_assert_eq(used(), 0);
	cr_assert(fake_matches_mm(mm));
}

Test(mm_map, brk_never_goes_below_start_brk, .init = heap_setup)
{
	cr_assert_eq(mm_brk(mm, HEAP + P), HEAP + P);
	cr_assert_eq(mm_brk(mm, HEAP - P), HEAP + P);
	cr_assert_eq(mm_brk(mm, PLATFORM_GUEST_MAX + P), HEAP + P);
	cr_assert_eq(used(), P);
}

Test(mm_map, brk_fails_when_it_would_collide_with_a_mapping, .init = heap_setup)
{
	anon_fixed(HEAP + 10 * P, P, PROT_READ);
	/* As Linux: a page must stay free between the heap and the next mapping. */
	cr_assert_eq(mm_brk(mm, HEAP + 9 * P + 1), HEAP);
	cr_assert_eq(mm_brk(mm, HEAP + 9 * P), HEAP + 9 * P);
	cr_assert_eq(mm_brk(mm, HEAP + 9 * P + 1), HEAP + 9 * P);
	cr_assert_eq(used(), 10 * P);
	cr_assert(fake_matches_mm(mm));
}

/* --- mremap --- */

Test(mm_map, mremap_grows_in_place_when_there_is_room)
{
	anon_fixed(X, 2 * P, PROT_READ | PROT_WRITE);
	fill(X, 2 * P, 5);
	cr_assert_eq(mm_mremap(mm, X, 2 * P, 4 * P, 0, 0), (long)X);
	cr_assert_eq(vma_count(mm), 1);
	cr_assert_eq(peek(X + P), 5);
	cr_assert_eq(peek(X + 3 * P), 0);
	cr_assert_eq(used(), 4 * P);
	cr_assert(fake_matches_mm(mm));
}

Test(mm_map, mremap_without_room_fails_unless_it_may_move)
{
	anon_fixed(X, 2 * P, PROT_READ | PROT_WRITE);
	anon_fixed(X + 2 * P, P, PROT_READ);
	fill(X, 2 * P, 6);
	cr_assert_eq(mm_mremap(mm, X, 2 * P, 4 * P, 0, 0), -ENOMEM);
	struct mm_vma_info old;
	cr_assert(vma_at(mm, X, &old));
	fake_clear_calls(as);

	long n = mm_mremap(mm, X, 2 * P, 4 * P, MREMAP_MAYMOVE, 0);
	cr_assert_eq(n, (long)(BASE - 4 * P));
	/* The pages moved, not their contents: the platform maps the same memory-file pages. */
	cr_assert_geq(as->ncalls, 2);
	cr_assert_eq(as->calls[0].op, FAKE_MAP);
	cr_assert_eq(as->calls[0].addr, (uint64_t)n);
	cr_assert_eq(as->calls[0].off, old.mf_off);
	cr_assert_eq(as->calls[1].op, FAKE_UNMAP);
	cr_assert_eq(as->calls[1].addr, X);
	cr_assert_eq(as->calls[1].len, 2 * P);
	cr_assert_eq(peek((uint64_t)n + P), 6);
	cr_assert_eq(peek((uint64_t)n + 3 * P), 0);
	uint8_t b;
	cr_assert_eq(mm_copy_in(mm, &b, X, 1), -EFAULT);
	cr_assert_eq(used(), 5 * P);
	cr_assert(fake_matches_mm(mm));
}

Test(mm_map, mremap_shrinks_in_place)
{
	anon_fixed(X, 4 * P, PROT_READ);
	cr_assert_eq(mm_mremap(mm, X, 4 * P, P + 1, 0, 0), (long)X);
	struct mm_vma_info v;
	cr_assert(vma_at(mm, X, &v));
	cr_assert_eq(v.end, X + 2 * P);
	cr_assert_eq(used(), 2 * P);
	cr_assert(fake_matches_mm(mm));
}

Test(mm_map, mremap_fixed_moves_to_the_address_and_replaces_what_was_there)
{
	anon_fixed(X, 2 * P, PROT_READ | PROT_WRITE);
	fill(X, 2 * P, 7);
	anon_fixed(X + 20 * P, 8 * P, PROT_READ);
	long n = mm_mremap(mm, X, 2 * P, 3 * P, MREMAP_MAYMOVE | MREMAP_FIXED, X + 22 * P);
	cr_assert_eq(n, (long)(X + 22 * P));
	cr_assert_eq(peek(X + 23 * P), 7);
	cr_assert_eq(peek(X + 24 * P), 0);
	struct mm_vma_info v;
	cr_assert(vma_at(mm, X + 22 * P, &v));
	cr_assert_eq(v.prot, PROT_READ | PROT_WRITE);
	cr_assert(vma_at(mm, X + 25 * P, &v));
	cr_assert_eq(v.prot, PROT_READ);
	cr_assert(!vma_at(mm, X, &v));
	cr_assert_eq(used(), 8 * P);
	cr_assert(fake_matches_mm(mm));
}

Test(mm_map, mremap_fixed_to_a_smaller_size_drops_the_tail)
{
	anon_fixed(X, 3 * P, PROT_READ);
	long n = mm_mremap(mm, X, 3 * P, P, MREMAP_MAYMOVE | MREMAP_FIXED, X + 10 * P);
	cr_assert_eq(n, (long)(X + 10 * P));
	cr_assert_eq(vma_count(mm), 1);
	cr_assert_eq(used(), P);
	cr_assert(fake_matches_mm(mm));
}

Test(mm_map, mremap_dontunmap_leaves_zeroed_pages_behind)
{
	anon_fixed(X, 2 * P, PROT_READ | PROT_WRITE);
	fill(X, 2 * P, 8);
	long n = mm_mremap(mm, X, 2 * P, 2 * P, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, 0);
	cr_assert_gt(n, 0);
	cr_assert_neq(n, (long)X);
	cr_assert_eq(peek((uint64_t)n), 8);
	cr_assert_eq(peek(X), 0);
	cr_assert_eq(used(), 4 * P);
	cr_assert(fake_matches_mm(mm));
	cr_assert_eq(mm_mremap(mm, X, 2 * P, 3 * P, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, 0), -EINVAL);
}

Test(mm_map, mremap_rejects_bad_arguments_with_linux_errnos)
{
	anon_fixed(X, 2 * P, PROT_READ);
	anon_fixed(X + 2 * P, P, PROT_WRITE);
	cr_assert_eq(mm_mremap(mm, X + 1, P, 2 * P, 0, 0), -EINVAL);
	cr_assert_eq(mm_mremap(mm, X, P, 0, 0, 0), -EINVAL);
	cr_assert_eq(mm_mremap(mm, X, P, 2 * P, 0x100, 0), -EINVAL);
	cr_assert_eq(mm_mremap(mm, X, P, 2 * P, MREMAP_FIXED, X + 10 * P), -EINVAL);
	cr_assert_eq(mm_mremap(mm, X, P, 2 * P, MREMAP_MAYMOVE | MREMAP_FIXED, X + 10 * P + 1),
		     -EINVAL);
	/* The new range may not overlap the old one. */
	cr_assert_eq(mm_mremap(mm, X, 2 * P, 2 * P, MREMAP_MAYMOVE | MREMAP_FIXED, X + P), -EINVAL);
	cr_assert_eq(mm_mremap(mm, X, 0, P, MREMAP_MAYMOVE, 0), -EINVAL);
	/* Unmapped, or spanning two mappings. */
	cr_assert_eq(mm_mremap(mm, X + 5 * P, P, 2 * P, MREMAP_MAYMOVE, 0), -EFAULT);
	cr_assert_eq(mm_mremap(mm, X, 3 * P, 4 * P, MREMAP_MAYMOVE, 0), -EFAULT);
	cr_assert_eq(used(), 3 * P);
	cr_assert(fake_matches_mm(mm));
}

/* --- madvise --- */

Test(mm_map, madvise_dontneed_zeroes_and_keeps_the_mapping)
{
	anon_fixed(X, 3 * P, PROT_READ | PROT_WRITE);
	fill(X, 3 * P, 4);
	fake_clear_calls(as);
	cr_assert_eq(mm_madvise(mm, X + P, P, MADV_DONTNEED), 0);
	cr_assert_eq(peek(X), 4);
	cr_assert_eq(peek(X + P), 0);
	cr_assert_eq(peek(X + 2 * P - 1), 0);
	cr_assert_eq(peek(X + 2 * P), 4);
	cr_assert_eq(vma_count(mm), 1);
	cr_assert_eq(as->ncalls, 0);
	cr_assert_eq(used(), 3 * P);
	fill(X + P, P, 5); /* still writable */
	cr_assert_eq(mm_madvise(mm, X, 3 * P, MADV_FREE), 0);
	cr_assert_eq(peek(X + P), 0);
	cr_assert_eq(peek(X + 2 * P), 0);
}

Test(mm_map, madvise_hints_change_nothing)
{
	anon_fixed(X, P, PROT_READ | PROT_WRITE);
	fill(X, P, 4);
	cr_assert_eq(mm_madvise(mm, X, P, MADV_WILLNEED), 0);
	cr_assert_eq(mm_madvise(mm, X, P, MADV_HUGEPAGE), 0);
	cr_assert_eq(peek(X), 4);
}

Test(mm_map, madvise_rejects_bad_arguments_and_reports_holes)
{
	anon_fixed(X, P, PROT_READ | PROT_WRITE);
	fill(X, P, 4);
	cr_assert_eq(mm_madvise(mm, X + 1, P, MADV_DONTNEED), -EINVAL);
	cr_assert_eq(mm_madvise(mm, X, P, 12345), -EINVAL);
	cr_assert_eq(mm_madvise(mm, X, UINT64_MAX, MADV_DONTNEED), -EINVAL);
	cr_assert_eq(mm_madvise(mm, X, 0, MADV_DONTNEED), 0);
	cr_assert_eq(peek(X), 4);
	/* The mapped part is dropped, and the hole after it is reported. */
	cr_assert_eq(mm_madvise(mm, X, 2 * P, MADV_DONTNEED), -ENOMEM);
	cr_assert_eq(peek(X), 0);
	cr_assert_eq(mm_madvise(mm, X + 4 * P, P, MADV_NORMAL), -ENOMEM);
}

/* --- file mappings --- */

static uint8_t file_data[3 * 4096 + 100];
/* Static: the mm (put at teardown) may still hold references on it after the test body. */
static struct buf_file bf;

/* Runs after the suite's setup (criterion runs both). */
static void file_setup(void)
{
	for (size_t i = 0; i < sizeof(file_data); i++)
		file_data[i] = (uint8_t)(i * 7 + 1);
}

Test(mm_map, file_mapping_holds_the_file_bytes_and_zero_past_eof, .init = file_setup)
{
	buf_file_init(&bf, file_data, sizeof(file_data), O_RDONLY);
	long a = mm_mmap(mm, 0, 6 * P, PROT_READ, MAP_PRIVATE, &bf.f, P);
	cr_assert_gt(a, 0);
	/*
	 * File bytes [P, 3P+100) at a, then zeroes to the end of the page; the pages beyond EOF
	 * are bad addresses for the sentry's copies too (a short copy).
	 */
	static uint8_t buf[6 * 4096];
	cr_assert_eq(mm_copy_in(mm, buf, (uint64_t)a, sizeof(buf)), (ssize_t)(3 * P));
	cr_assert_eq(mm_copy_in(mm, buf, (uint64_t)a + 3 * P, 1), -EFAULT);
	cr_assert_eq(memcmp(buf, file_data + P, 2 * P + 100), 0);
	for (size_t i = 2 * P + 100; i < 3 * P; i++)
		cr_assert_eq(buf[i], 0, "byte %zu is %#x", i, buf[i]);
	struct mm_vma_info v;
	cr_assert(vma_at(mm, (uint64_t)a, &v));
	cr_assert_eq(v.flags, MM_VMA_PRIVATE | MM_VMA_FILE);
	cr_assert_eq(v.file, &bf.f);
	cr_assert_eq(v.file_off, P);
	/*
	 * The mapping keeps a reference on the file, one per piece: the pages over the file, and
	 * those wholly past its end (4P on), whose touch is SIGBUS (-EIO).
	 */
	cr_assert_eq(refcount_read(&bf.f.ref), 3);
	cr_assert_eq(mm_handle_fault(mm, (uint64_t)a + 3 * P + 8, SEGV_ACCERR), -EIO);
	cr_assert_eq(mm_handle_fault(mm, (uint64_t)a + 2 * P + 8, SEGV_ACCERR), -EFAULT);
	cr_assert_eq(mm_munmap(mm, (uint64_t)a + P, P), 0);
	cr_assert_eq(refcount_read(&bf.f.ref), 4);
	cr_assert(vma_at(mm, (uint64_t)a + 2 * P, &v));
	cr_assert_eq(v.file_off, 3 * P);
	mm_put(mm);
	mm = NULL;
	cr_assert_eq(refcount_read(&bf.f.ref), 1);
}

Test(mm_map, private_file_mapping_after_dontneed_reads_the_file_again, .init = file_setup)
{
	buf_file_init(&bf, file_data, sizeof(file_data), O_RDWR);
	long a = mm_mmap(mm, 0, 2 * P, PROT_READ | PROT_WRITE, MAP_PRIVATE, &bf.f, 0);
	cr_assert_gt(a, 0);
	fill((uint64_t)a, 2 * P, 0xee);
	cr_assert_eq(mm_madvise(mm, (uint64_t)a + P, P, MADV_DONTNEED), 0);
	cr_assert_eq(peek((uint64_t)a + 5), 0xee);
	cr_assert_eq(peek((uint64_t)a + P + 5), file_data[P + 5]);
	/* MADV_FREE is for anonymous memory only. */
	cr_assert_eq(mm_madvise(mm, (uint64_t)a, P, MADV_FREE), -EINVAL);
}

Test(mm_map, file_mapping_errors, .init = file_setup)
{
	buf_file_init(&bf, file_data, sizeof(file_data), O_WRONLY);
	cr_assert_eq(mm_mmap(mm, 0, P, PROT_READ, MAP_PRIVATE, &bf.f, 0), -EACCES);
	buf_file_init(&bf, file_data, sizeof(file_data), O_RDONLY);
	cr_assert_eq(mm_mmap(mm, 0, P, PROT_READ, MAP_SHARED, &bf.f, 0), -ENODEV);
	cr_assert_eq(mm_mmap(mm, 0, P, PROT_READ, MAP_SHARED_VALIDATE | 0x800000, &bf.f, 0),
		     -EOPNOTSUPP);
	cr_assert_eq(mm_mmap(mm, 0, P, PROT_READ, MAP_PRIVATE, &bf.f, UINT64_MAX & PAGE_MASK),
		     -EOVERFLOW);
	cr_assert_eq(mm_mmap(mm, 0, P, PROT_READ, MAP_PRIVATE, NULL, 0), -EBADF);
	cr_assert_eq(bf.reads, 0);
	cr_assert_eq(used(), 0);
	cr_assert_eq(refcount_read(&bf.f.ref), 1);
}

Test(mm_map, mremap_growing_a_file_mapping_reads_more_of_the_file, .init = file_setup)
{
	buf_file_init(&bf, file_data, sizeof(file_data), O_RDONLY);
	cr_assert_eq(mm_mmap(mm, X, P, PROT_READ, MAP_PRIVATE | MAP_FIXED, &bf.f, 0), (long)X);
	cr_assert_eq(mm_mremap(mm, X, P, 3 * P, 0, 0), (long)X);
	cr_assert_eq(peek(X + 2 * P + 9), file_data[2 * P + 9]);
	cr_assert(fake_matches_mm(mm));
}

/* --- the end of an mm --- */

Test(mm_map, mm_put_frees_every_page_and_destroys_the_platform_space, .init = heap_setup)
{
	anon(0, 5 * P, PROT_READ, 0);
	anon_fixed(X, 8 * P, PROT_READ | PROT_WRITE);
	mm_mprotect(mm, X + 2 * P, P, PROT_NONE);
	mm_munmap(mm, X + 5 * P, P);
	mm_mremap(mm, X, 2 * P, 6 * P, MREMAP_MAYMOVE, 0);
	mm_brk(mm, HEAP + 3 * P);
	cr_assert_gt(used(), 0);
	mm_get(mm);
	mm_put(mm);
	cr_assert_eq(fake_as_destroyed, 0);
	mm_put(mm);
	mm = NULL;
	cr_assert_eq(fake_as_destroyed, 1);
	cr_assert(as->destroyed);
	cr_assert_eq(used(), 0);
	cr_assert_eq(memfile_free_extents(&fake_kernel.mf), 1);
}

Test(mm_map, rlimit_as_counts_every_mapping_once, .init = heap_setup)
{
	anon_fixed(X, 4 * P, PROT_NONE);
	mm_set_limits(mm, 6 * P, UINT64_MAX, UINT64_MAX);
	cr_assert_eq(anon(0, 3 * P, PROT_READ, 0), -ENOMEM);
	/* Replacing mapped pages adds nothing. */
	cr_assert_eq(anon_fixed(X, 4 * P, PROT_READ), (long)X);
	cr_assert_eq(anon_fixed(X + 4 * P, P, PROT_READ), (long)(X + 4 * P));
	cr_assert_eq(mm_mremap(mm, X, 5 * P, 7 * P, MREMAP_MAYMOVE, 0), -ENOMEM);
	cr_assert_eq(mm_brk(mm, HEAP + 2 * P), HEAP);
	cr_assert_eq(mm_brk(mm, HEAP + P), HEAP + P);
	mm_set_limits(mm, UINT64_MAX, UINT64_MAX, UINT64_MAX);
	cr_assert_eq(mm_mremap(mm, X, 5 * P, 7 * P, MREMAP_MAYMOVE, 0), (long)X);
}

Test(mm_map, rlimit_data_counts_private_writable_memory, .init = heap_setup)
{
	mm_set_limits(mm, UINT64_MAX, 2 * P, UINT64_MAX);
	cr_assert_eq(anon(0, 3 * P, PROT_READ | PROT_WRITE, 0), -ENOMEM);
	cr_assert_eq(anon(0, 3 * P, PROT_READ | PROT_WRITE, MAP_GROWSDOWN) > 0, true);
	long ro = anon(0, 3 * P, PROT_READ, 0);
	cr_assert_gt(ro, 0);
	cr_assert_eq(mm_mprotect(mm, (uint64_t)ro, 3 * P, PROT_READ | PROT_WRITE), -ENOMEM);
	cr_assert_eq(mm_mprotect(mm, (uint64_t)ro, 2 * P, PROT_READ | PROT_WRITE), 0);
	/* The heap counts too, and brk checks it before the mappings. */
	cr_assert_eq(mm_brk(mm, HEAP + P), HEAP);
	mm_set_limits(mm, UINT64_MAX, 0, 8 * P);
	cr_assert_eq(mm_brk(mm, HEAP + P), HEAP);
	cr_assert_eq(anon(0, 3 * P, PROT_READ | PROT_WRITE, 0) > 0, true);
}

Test(mm_map, locked_pages_are_dropped_only_by_dontneed_locked)
{
	anon_fixed(X, 4 * P, PROT_READ | PROT_WRITE);
	cr_assert_eq(mm_mlock(mm, X + P, X + 2 * P, true), 0);
	cr_assert_eq(mm_madvise(mm, X, 4 * P, MADV_DONTNEED), -EINVAL);
	cr_assert_eq(mm_madvise(mm, X + P, P, MADV_DONTNEED_LOCKED), 0);
	cr_assert_eq(mm_mlock(mm, X + 3 * P, X + 5 * P, true), -ENOMEM);
	cr_assert_eq(mm_mlock(mm, X, X, true), 0);
	mm_mlock_all(mm, false);
	cr_assert_eq(mm_madvise(mm, X, 4 * P, MADV_DONTNEED), 0);
	cr_assert_eq(vma_count(mm), 1);
	cr_assert(fake_matches_mm(mm));
}
