/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memfile_set_ending (the sandbox's end): frees then neither punch the memfd nor hand the pages
 * out again, so that no allocation made during the teardown sees a freed page's old bytes.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "sentry/mm/memfile.h"

static struct memfile mf;

static void setup(void)
{
	cr_assert_eq(memfile_init(&mf, 64 * PAGE_SIZE), 0);
}

static void teardown(void)
{
	memfile_destroy(&mf);
}

static long blocks(void)
{
	struct stat st;

	cr_assert_eq(fstat(mf.fd, &st), 0);
	return (long)st.st_blocks;
}

TestSuite(memfile_ending, .init = setup, .fini = teardown);

Test(memfile_ending, free_before_the_end_punches_and_reuses)
{
	int64_t a = memfile_alloc(&mf, PAGE_SIZE), b;

	cr_assert_geq(a, 0);
	memset(memfile_ptr(&mf, (uint64_t)a), 0xaa, PAGE_SIZE);
	memfile_free(&mf, (uint64_t)a, PAGE_SIZE);
	cr_assert_eq(blocks(), 0);
	b = memfile_alloc(&mf, PAGE_SIZE);
	cr_assert_eq(b, a, "first fit gives the freed page again");
	cr_assert_eq(((uint8_t *)memfile_ptr(&mf, (uint64_t)b))[0], 0);
}

Test(memfile_ending, free_after_the_end_neither_punches_nor_reuses)
{
	int64_t a = memfile_alloc(&mf, PAGE_SIZE), b;
	long held;

	cr_assert_geq(a, 0);
	memset(memfile_ptr(&mf, (uint64_t)a), 0xaa, PAGE_SIZE);
	held = blocks();
	cr_assert_gt(held, 0);
	memfile_set_ending(&mf);
	memfile_free(&mf, (uint64_t)a, PAGE_SIZE);
	cr_assert_eq(blocks(), held, "no punch: the memfd goes with the sentry");
	b = memfile_alloc(&mf, PAGE_SIZE);
	cr_assert_geq(b, 0);
	cr_assert_neq(b, a, "a page freed at the end is never handed out again");
	cr_assert_eq(((uint8_t *)memfile_ptr(&mf, (uint64_t)b))[0], 0);
}
