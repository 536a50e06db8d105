/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Memory accounting under a limit (memfile_usage, memfile_charge, lazy population of anonymous
 * memory in mm_handle_fault), over the fake platform and a real memory file: usage is what the
 * host holds for the file, so pages are made resident by writing them through the sentry.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

#include "common/err.h"
#include "common/util.h"
#include "fake.h"
#include "sentry/mm/memfile.h"

#define P PAGE_SIZE
#define BASE 0x7f0000000000ULL
#define A 0x10000000ULL
#define RW (PROT_READ | PROT_WRITE)

static struct mm *mm;
static struct memfile *mf;

/* The OOM hook's record: calls, the need it was given, and what it returns. */
static int oom_calls;
static uint64_t oom_need;
static int oom_ret;
static struct mm *oom_victim; /* when set, the hook "kills" it (mm_put) */

static int fake_oom(struct memfile *m, uint64_t need, void *arg)
{
	oom_calls++;
	oom_need = need;
	if (oom_victim) {
		mm_put(oom_victim);
		oom_victim = NULL;
		return 0;
	}
	return oom_ret;
}

static void setup(void)
{
	fake_setup();
	mf = &fake_kernel.mf;
	mm = mm_create(&fake_kernel);
	cr_assert(!IS_ERR(mm));
	mm->mmap_base = BASE;
	oom_calls = 0;
	oom_need = 0;
	oom_ret = -ENOMEM;
	oom_victim = NULL;
	mf->oom = fake_oom;
	mf->oom_arg = NULL;
}

static void teardown(void)
{
	if (oom_victim)
		mm_put(oom_victim);
	if (mm)
		mm_put(mm);
	fake_teardown();
}

TestSuite(mm_limits, .init = setup, .fini = teardown);

static void map_anon(struct mm *m, uint64_t addr, uint64_t len)
{
	cr_assert_eq(mm_mmap(m, addr, len, RW, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, NULL, 0),
		     (long)addr);
}

/* Writes one byte in each page of [addr, addr+len) through the sentry: the pages are resident. */
static void touch(struct mm *m, uint64_t addr, uint64_t len)
{
	for (uint64_t a = addr; a < addr + len; a += P) {
		uint8_t b = 0x5a;
		cr_assert_eq(mm_copy_out(m, a, &b, 1), 1);
	}
}

Test(mm_limits, touched_pages_count_and_untouched_ones_do_not)
{
	uint64_t base = memfile_usage(mf);

	map_anon(mm, A, 64 * P);
	cr_assert_eq(memfile_usage(mf), base, "a mapping alone is not charged");
	touch(mm, A, 8 * P);
	cr_assert_eq(memfile_usage(mf), base + 8 * P);
}

Test(mm_limits, munmap_uncharges)
{
	uint64_t base = memfile_usage(mf);

	map_anon(mm, A, 16 * P);
	touch(mm, A, 16 * P);
	cr_assert_eq(memfile_usage(mf), base + 16 * P);
	cr_assert_eq(mm_munmap(mm, A + 4 * P, 8 * P), 0);
	cr_assert_eq(memfile_usage(mf), base + 8 * P);
}

Test(mm_limits, fork_shares_pages_copy_on_write_and_counts_them_once)
{
	uint64_t base = memfile_usage(mf);

	map_anon(mm, A, 16 * P);
	touch(mm, A, 16 * P);
	struct mm *child = mm_fork(mm);
	cr_assert(!IS_ERR(child));
	cr_assert_eq(mm_activate(child), 0);
	cr_assert_eq(memfile_usage(mf), base + 16 * P, "shared pages count once");
	/* The parent's copy of one page is new memory; the child keeps the original. */
	touch(mm, A, P);
	cr_assert_eq(memfile_usage(mf), base + 17 * P);
	/* The parent lets go of its pages: the child's are still there. */
	cr_assert_eq(mm_munmap(mm, A, 16 * P), 0);
	cr_assert_eq(memfile_usage(mf), base + 16 * P);
	mm_put(child);
	cr_assert_eq(memfile_usage(mf), base);
}

Test(mm_limits, pages_of_a_dying_process_are_uncharged)
{
	struct mm *other = mm_create(&fake_kernel);
	cr_assert(!IS_ERR(other));
	uint64_t base = memfile_usage(mf);

	map_anon(other, A, 32 * P);
	touch(other, A, 32 * P);
	cr_assert_eq(memfile_usage(mf), base + 32 * P);
	mm_put(other);
	cr_assert_eq(memfile_usage(mf), base);
}

Test(mm_limits, peak_keeps_the_highest_usage)
{
	uint64_t base = memfile_usage(mf);

	map_anon(mm, A, 16 * P);
	touch(mm, A, 16 * P);
	memfile_usage(mf);
	cr_assert_eq(mm_munmap(mm, A, 16 * P), 0);
	cr_assert_eq(memfile_usage(mf), base);
	cr_assert_geq(mf->peak, base + 16 * P);
}

Test(mm_limits, without_a_limit_anonymous_memory_is_mapped_accessible)
{
	map_anon(mm, A, 8 * P);
	const struct fake_range *r = fake_range_at(fake_last_as, A);
	cr_assert_not_null(r);
	cr_assert_eq(r->prot, RW);
	cr_assert_eq(r->end - r->start, 8 * P);
}

Test(mm_limits, under_a_limit_anonymous_memory_is_populated_on_first_touch)
{
	memfile_set_limit(mf, 1ULL << 30);
	map_anon(mm, A, 256 * P);
	cr_assert_eq(fake_range_at(fake_last_as, A)->prot, PROT_NONE);
	cr_assert_eq(mm_handle_fault(mm, A + 40 * P + 5, SEGV_ACCERR), 0);
	/* The aligned window of 32 pages around the touched one. */
	cr_assert_eq(fake_range_at(fake_last_as, A + 32 * P)->prot, RW);
	cr_assert_eq(fake_range_at(fake_last_as, A + 63 * P)->prot, RW);
	cr_assert_eq(fake_range_at(fake_last_as, A + 31 * P)->prot, PROT_NONE);
	cr_assert_eq(fake_range_at(fake_last_as, A + 64 * P)->prot, PROT_NONE);
	cr_assert_eq(oom_calls, 0);
	/* The guest's view is the same before and after: read-write memory. */
	struct mm_vma_info info;
	cr_assert(vma_at(mm, A + 40 * P, &info));
	cr_assert_eq(info.prot, RW);
}

Test(mm_limits, a_touch_of_prot_none_memory_under_a_limit_is_still_a_fault)
{
	memfile_set_limit(mf, 1ULL << 30);
	cr_assert_eq(mm_mmap(mm, A, 8 * P, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, NULL,
			     0),
		     (long)A);
	cr_assert_eq(mm_handle_fault(mm, A, SEGV_ACCERR), -EFAULT);
	cr_assert_eq(mm_handle_fault(mm, A, SEGV_MAPERR), -EFAULT);
}

Test(mm_limits, mprotect_keeps_unpopulated_pages_inaccessible)
{
	memfile_set_limit(mf, 1ULL << 30);
	map_anon(mm, A, 8 * P);
	cr_assert_eq(mm_mprotect(mm, A, 8 * P, PROT_READ), 0);
	cr_assert_eq(fake_range_at(fake_last_as, A)->prot, PROT_NONE);
	cr_assert_eq(mm_handle_fault(mm, A, SEGV_ACCERR), 0);
	cr_assert_eq(fake_range_at(fake_last_as, A)->prot, PROT_READ);
}

Test(mm_limits, a_touch_past_the_limit_calls_the_oom_killer_first)
{
	map_anon(mm, A, 64 * P);
	touch(mm, A, 16 * P);
	memfile_set_limit(mf, memfile_usage(mf) + 2 * P);
	map_anon(mm, A + 64 * P, 64 * P); /* lazy: made under the limit */
	/* Two pages still fit: the window shrinks to the touched page, no kill. */
	cr_assert_eq(mm_handle_fault(mm, A + 64 * P, SEGV_ACCERR), 0);
	cr_assert_eq(oom_calls, 0);
	cr_assert_eq(fake_range_at(fake_last_as, A + 64 * P)->prot, RW);
	cr_assert_eq(fake_range_at(fake_last_as, A + 65 * P)->prot, PROT_NONE);
	touch(mm, A + 64 * P, 2 * P);
	/* Full: the OOM hook is asked for a page; when it gives up, the page is given anyway. */
	cr_assert_eq(mm_handle_fault(mm, A + 100 * P, SEGV_ACCERR), 0);
	cr_assert_eq(oom_calls, 1);
	cr_assert_eq(oom_need, P);
	cr_assert_eq(fake_range_at(fake_last_as, A + 100 * P)->prot, RW);
	cr_assert_eq(mf->events_max, 1);
}

Test(mm_limits, the_oom_killer_makes_room_and_the_touch_is_retried)
{
	struct mm *big = mm_create(&fake_kernel);
	cr_assert(!IS_ERR(big));
	map_anon(big, A, 32 * P);
	touch(big, A, 32 * P);
	memfile_set_limit(mf, memfile_usage(mf));
	map_anon(mm, A, 64 * P);
	oom_victim = big;
	cr_assert_eq(mm_handle_fault(mm, A, SEGV_ACCERR), 0);
	cr_assert_eq(oom_calls, 1);
	cr_assert_null(oom_victim, "the victim was killed");
	/* Room was made: the whole window fits again. */
	cr_assert_eq(fake_range_at(fake_last_as, A + 31 * P)->prot, RW);
}

Test(mm_limits, a_charged_allocation_past_the_limit_fails_when_nothing_can_be_killed)
{
	memfile_set_limit(mf, memfile_usage(mf) + 4 * P);
	int64_t off = memfile_alloc(mf, 4 * P);
	cr_assert_geq(off, 0);
	memset(memfile_ptr(mf, (uint64_t)off), 1, 4 * P);
	cr_assert_eq(memfile_alloc(mf, P), -ENOMEM);
	cr_assert_eq(oom_calls, 1);
	cr_assert_eq(memfile_alloc_at(mf, (uint64_t)off + 4 * P, P), -ENOMEM);
	/* Without the charge (memory populated later), the allocation itself succeeds. */
	int64_t lazy = memfile_alloc_nocharge(mf, 16 * P);
	cr_assert_geq(lazy, 0);
	memfile_free(mf, (uint64_t)lazy, 16 * P);
	memfile_free(mf, (uint64_t)off, 4 * P);
	cr_assert_geq(memfile_alloc(mf, P), 0);
}

Test(mm_limits, the_sentrys_write_into_unpopulated_memory_is_charged)
{
	map_anon(mm, A, 16 * P);
	memfile_set_limit(mf, memfile_usage(mf) + P);
	map_anon(mm, A + 16 * P, 16 * P); /* lazy */
	uint8_t buf[2 * P];
	memset(buf, 7, sizeof(buf));
	cr_assert_eq(mm_copy_out(mm, A + 16 * P, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	cr_assert_eq(oom_calls, 1);
	cr_assert_eq(oom_need, 2 * P);
	/* Populated memory is not asked about again. */
	cr_assert_eq(mm_copy_out(mm, A, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	cr_assert_eq(oom_calls, 1);
}

Test(mm_limits, lowering_the_limit_below_the_usage_asks_for_room)
{
	map_anon(mm, A, 16 * P);
	touch(mm, A, 16 * P);
	memfile_set_limit(mf, P);
	cr_assert_eq(memfile_charge(mf, 0), -ENOMEM);
	cr_assert_eq(oom_calls, 1);
	cr_assert_eq(oom_need, 0);
	memfile_set_limit(mf, 0);
	cr_assert_eq(memfile_charge(mf, 1ULL << 40), 0, "no limit: everything fits");
}
