/* SPDX-License-Identifier: Apache-2.0 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "sentry/mm/memfile.h"

#define SMALL (16 * PAGE_SIZE)

static struct memfile mf;

static void setup_small(void)
{
	cr_assert_eq(memfile_init(&mf, SMALL), 0);
}

static void teardown(void)
{
	memfile_destroy(&mf);
}

/* 512-byte blocks the memfd really holds. */
static long blocks(void)
{
	struct stat st;
	cr_assert_eq(fstat(mf.fd, &st), 0);
	return (long)st.st_blocks;
}

TestSuite(memfile, .init = setup_small, .fini = teardown);

Test(memfile, init_rejects_unaligned_and_empty_sizes)
{
	struct memfile other;
	cr_assert_eq(memfile_init(&other, 0), -EINVAL);
	cr_assert_eq(memfile_init(&other, PAGE_SIZE + 1), -EINVAL);
}

Test(memfile, alloc_hands_out_disjoint_page_aligned_ranges_first_fit)
{
	cr_assert_eq(memfile_alloc(&mf, PAGE_SIZE), 0);
	cr_assert_eq(memfile_alloc(&mf, 2 * PAGE_SIZE), (int64_t)PAGE_SIZE);
	cr_assert_eq(memfile_alloc(&mf, PAGE_SIZE), (int64_t)(3 * PAGE_SIZE));
	cr_assert_eq(memfile_free_bytes(&mf), SMALL - 4 * PAGE_SIZE);
	/* A freed hole is reused by the next allocation that fits. */
	memfile_free(&mf, PAGE_SIZE, 2 * PAGE_SIZE);
	cr_assert_eq(memfile_alloc(&mf, PAGE_SIZE), (int64_t)PAGE_SIZE);
}

Test(memfile, alloc_rejects_unaligned_or_zero_length)
{
	cr_assert_eq(memfile_alloc(&mf, 0), -EINVAL);
	cr_assert_eq(memfile_alloc(&mf, 100), -EINVAL);
}

Test(memfile, exhaustion_gives_enomem_and_free_makes_room)
{
	cr_assert_eq(memfile_alloc(&mf, SMALL), 0);
	cr_assert_eq(memfile_alloc(&mf, PAGE_SIZE), -ENOMEM);
	memfile_free(&mf, 5 * PAGE_SIZE, PAGE_SIZE);
	cr_assert_eq(memfile_alloc(&mf, 2 * PAGE_SIZE), -ENOMEM);
	cr_assert_eq(memfile_alloc(&mf, PAGE_SIZE), (int64_t)(5 * PAGE_SIZE));
}

Test(memfile, too_fragmented_space_gives_enomem)
{
	cr_assert_eq(memfile_alloc(&mf, SMALL), 0);
	/* Every other page free: 8 pages free but no two adjacent. */
	for (uint64_t p = 0; p < 16; p += 2)
		memfile_free(&mf, p * PAGE_SIZE, PAGE_SIZE);
	cr_assert_eq(memfile_free_bytes(&mf), 8 * PAGE_SIZE);
	cr_assert_eq(memfile_free_extents(&mf), 8);
	cr_assert_eq(memfile_alloc(&mf, 2 * PAGE_SIZE), -ENOMEM);
}

Test(memfile, frees_in_any_order_coalesce_into_one_extent)
{
	int64_t a = memfile_alloc(&mf, 4 * PAGE_SIZE);
	int64_t b = memfile_alloc(&mf, 4 * PAGE_SIZE);
	int64_t c = memfile_alloc(&mf, 4 * PAGE_SIZE);
	cr_assert(a >= 0 && b >= 0 && c >= 0);
	memfile_free(&mf, (uint64_t)a, 4 * PAGE_SIZE);
	memfile_free(&mf, (uint64_t)c, 4 * PAGE_SIZE);
	cr_assert_eq(memfile_free_extents(&mf), 2); /* [a] and [c..end] */
	/* b's middle page, then its sides: sub-ranges of an allocation free on their own. */
	memfile_free(&mf, (uint64_t)b + PAGE_SIZE, PAGE_SIZE);
	memfile_free(&mf, (uint64_t)b + 2 * PAGE_SIZE, 2 * PAGE_SIZE);
	memfile_free(&mf, (uint64_t)b, PAGE_SIZE);
	cr_assert_eq(memfile_free_extents(&mf), 1);
	cr_assert_eq(memfile_free_bytes(&mf), SMALL);
	cr_assert_eq(memfile_alloc(&mf, SMALL), 0);
}

Test(memfile, freed_memory_reads_zero_when_reused)
{
	int64_t off = memfile_alloc(&mf, 2 * PAGE_SIZE);
	cr_assert_eq(off, 0);
	memset(memfile_ptr(&mf, 0), 0xab, 2 * PAGE_SIZE);
	memfile_free(&mf, 0, 2 * PAGE_SIZE);
	cr_assert_eq(memfile_alloc(&mf, 2 * PAGE_SIZE), 0);
	const uint8_t *p = memfile_ptr(&mf, 0);
	for (size_t i = 0; i < 2 * PAGE_SIZE; i++)
		cr_assert_eq(p[i], 0, "byte %zu is %#x", i, p[i]);
}

Test(memfile, free_returns_memory_to_the_host)
{
	cr_assert_eq(blocks(), 0);
	int64_t off = memfile_alloc(&mf, 4 * PAGE_SIZE);
	memset(memfile_ptr(&mf, (uint64_t)off), 1, 4 * PAGE_SIZE);
	cr_assert_geq(blocks(), (long)(4 * PAGE_SIZE / 512));
	memfile_free(&mf, (uint64_t)off, 4 * PAGE_SIZE);
	cr_assert_eq(blocks(), 0);
}

Test(memfile, a_shared_page_stays_until_its_last_reference_is_dropped)
{
	int64_t off = memfile_alloc(&mf, 4 * PAGE_SIZE);
	cr_assert_eq(off, 0);
	memset(memfile_ptr(&mf, 0), 7, 4 * PAGE_SIZE);
	cr_assert_eq(memfile_page_refs(&mf, PAGE_SIZE), 1);
	/* Two more holders of the middle two pages (fork, then fork again). */
	memfile_ref(&mf, PAGE_SIZE, 2 * PAGE_SIZE);
	memfile_ref(&mf, PAGE_SIZE, 2 * PAGE_SIZE);
	cr_assert_eq(memfile_page_refs(&mf, PAGE_SIZE), 3);
	cr_assert_eq(memfile_shared_pages(&mf), 2);
	uint64_t free0 = memfile_free_bytes(&mf);

	/* The first owner lets go of all four: only the two unshared pages come back. */
	memfile_free(&mf, 0, 4 * PAGE_SIZE);
	cr_assert_eq(memfile_free_bytes(&mf), free0 + 2 * PAGE_SIZE);
	cr_assert_eq(memfile_page_refs(&mf, 2 * PAGE_SIZE), 2);
	cr_assert_eq(*(uint8_t *)memfile_ptr(&mf, 2 * PAGE_SIZE), 7);
	memfile_free(&mf, PAGE_SIZE, 2 * PAGE_SIZE);
	cr_assert_eq(memfile_free_bytes(&mf), free0 + 2 * PAGE_SIZE);
	cr_assert_eq(memfile_shared_pages(&mf), 0);
	memfile_free(&mf, PAGE_SIZE, PAGE_SIZE);
	memfile_free(&mf, 2 * PAGE_SIZE, PAGE_SIZE);
	cr_assert_eq(memfile_free_bytes(&mf), SMALL);
	cr_assert_eq(memfile_free_extents(&mf), 1);
	cr_assert_eq(blocks(), 0);
}

struct ref_worker {
	uint64_t off;
	int rounds;
};

static void *ref_and_free(void *arg)
{
	struct ref_worker *w = arg;
	for (int i = 0; i < w->rounds; i++) {
		memfile_ref(&mf, w->off, PAGE_SIZE);
		memfile_free(&mf, w->off, PAGE_SIZE);
	}
	return NULL;
}

Test(memfile, concurrent_references_never_free_a_page_early)
{
	int64_t off = memfile_alloc(&mf, PAGE_SIZE);
	uint64_t free0 = memfile_free_bytes(&mf);
	struct ref_worker w = { (uint64_t)off, 20000 };
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, ref_and_free, &w), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	cr_assert_eq(memfile_free_bytes(&mf), free0);
	cr_assert_eq(memfile_page_refs(&mf, (uint64_t)off), 1);
	memfile_free(&mf, (uint64_t)off, PAGE_SIZE);
	cr_assert_eq(memfile_free_bytes(&mf), SMALL);
}

Test(memfile, zero_clears_pages_but_keeps_them_allocated)
{
	int64_t off = memfile_alloc(&mf, PAGE_SIZE);
	memset(memfile_ptr(&mf, (uint64_t)off), 7, PAGE_SIZE);
	cr_assert_eq(memfile_zero(&mf, (uint64_t)off, PAGE_SIZE), 0);
	cr_assert_eq(((uint8_t *)memfile_ptr(&mf, (uint64_t)off))[100], 0);
	cr_assert_eq(memfile_free_bytes(&mf), SMALL - PAGE_SIZE);
}

Test(memfile, alloc_at_takes_exactly_a_free_range)
{
	cr_assert_eq(memfile_alloc_at(&mf, 4 * PAGE_SIZE, 2 * PAGE_SIZE), 0);
	/* Now [0,4) and [6,16) are free: two extents. */
	cr_assert_eq(memfile_free_extents(&mf), 2);
	cr_assert_eq(memfile_alloc_at(&mf, 5 * PAGE_SIZE, PAGE_SIZE), -ENOMEM);
	cr_assert_eq(memfile_alloc_at(&mf, 3 * PAGE_SIZE, 2 * PAGE_SIZE), -ENOMEM);
	cr_assert_eq(memfile_alloc_at(&mf, 0, 4 * PAGE_SIZE), 0);
	cr_assert_eq(memfile_alloc_at(&mf, 15 * PAGE_SIZE, PAGE_SIZE), 0);
	cr_assert_eq(memfile_alloc_at(&mf, 16 * PAGE_SIZE, PAGE_SIZE), -EINVAL);
	cr_assert_eq(memfile_alloc_at(&mf, 100, PAGE_SIZE), -EINVAL);
	cr_assert_eq(memfile_free_bytes(&mf), 9 * PAGE_SIZE);
	/* First fit sees only [6, 15). */
	cr_assert_eq(memfile_alloc(&mf, 9 * PAGE_SIZE), (int64_t)(6 * PAGE_SIZE));
	cr_assert_eq(memfile_free_extents(&mf), 0);
}

Test(memfile, the_size_is_sealed)
{
	cr_assert_eq(ftruncate(mf.fd, PAGE_SIZE), -1);
	cr_assert_eq(errno, EPERM);
}

struct worker_arg {
	struct memfile *mf;
	uint8_t tag;
	int overlaps;
};

/* Allocates, tags, checks and frees ranges; a tag changed by another thread means overlap. */
static void *worker(void *p)
{
	struct worker_arg *w = p;
	int64_t offs[8];
	uint64_t lens[8];

	for (int round = 0; round < 4000; round++) {
		for (int i = 0; i < 8; i++) {
			lens[i] = (uint64_t)((round + i) % 4 + 1) * PAGE_SIZE;
			offs[i] = memfile_alloc(w->mf, lens[i]);
			cr_assert_geq(offs[i], 0);
			uint8_t *b = memfile_ptr(w->mf, (uint64_t)offs[i]);
			b[0] = b[lens[i] - 1] = w->tag;
		}
		for (int i = 0; i < 8; i++) {
			const uint8_t *b = memfile_ptr(w->mf, (uint64_t)offs[i]);
			if (b[0] != w->tag || b[lens[i] - 1] != w->tag)
				w->overlaps++;
			memfile_free(w->mf, (uint64_t)offs[i], lens[i]);
		}
	}
	return NULL;
}

Test(memfile, concurrent_allocations_never_overlap_and_all_come_back)
{
	struct memfile big;
	cr_assert_eq(memfile_init(&big, 1ULL << 30), 0);
	pthread_t th[4];
	struct worker_arg args[4];
	for (int i = 0; i < 4; i++) {
		args[i] = (struct worker_arg){ .mf = &big, .tag = (uint8_t)(i + 1) };
		cr_assert_eq(pthread_create(&th[i], NULL, worker, &args[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(args[i].overlaps, 0);
	}
	cr_assert_eq(memfile_free_bytes(&big), 1ULL << 30);
	cr_assert_eq(memfile_free_extents(&big), 1);
	memfile_destroy(&big);
}

Test(memfile, a_64_gib_file_costs_nothing_until_touched)
{
	struct memfile big;
	cr_assert_eq(memfile_init(&big, 64ULL << 30), 0);
	int64_t off = memfile_alloc(&big, 32ULL << 30);
	cr_assert_eq(off, 0);
	/* Touch the last page of the allocation: only that page becomes real. */
	((uint8_t *)memfile_ptr(&big, (32ULL << 30) - PAGE_SIZE))[0] = 1;
	struct stat st;
	cr_assert_eq(fstat(big.fd, &st), 0);
	cr_assert_eq(st.st_size, 64LL << 30);
	cr_assert_eq(st.st_blocks, PAGE_SIZE / 512);
	memfile_free(&big, 0, 32ULL << 30);
	memfile_destroy(&big);
}
