/* SPDX-License-Identifier: Apache-2.0 */
/* mm_copy_in, mm_copy_out, mm_poke, mm_copy_in_string, mm_translate and its pinned form. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "common/err.h"
#include "common/util.h"
#include "fake.h"

#define P PAGE_SIZE
#define X 0x10000000ULL

static struct mm *mm;

static void setup(void)
{
	fake_setup();
	mm = mm_create(&fake_kernel);
	cr_assert(!IS_ERR(mm));
}

static void teardown(void)
{
	mm_put(mm);
	fake_teardown();
}

TestSuite(mm_io, .init = setup, .fini = teardown);

static void map(uint64_t addr, uint64_t len, int prot)
{
	cr_assert_eq(mm_mmap(mm, addr, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, NULL, 0),
		     (long)addr);
}

Test(mm_io, copies_cross_two_adjacent_mappings)
{
	map(X, P, PROT_READ | PROT_WRITE);
	map(X + P, P, PROT_READ | PROT_WRITE | PROT_EXEC);
	char out[100], in[100];
	for (int i = 0; i < 100; i++)
		out[i] = (char)(i + 1);
	cr_assert_eq(mm_copy_out(mm, X + P - 50, out, 100), 100);
	memset(in, 0, sizeof(in));
	cr_assert_eq(mm_copy_in(mm, in, X + P - 50, 100), 100);
	cr_assert_eq(memcmp(in, out, 100), 0);
	/* The bytes landed in each mapping's own pages. */
	struct mm_vma_info v;
	cr_assert(vma_at(mm, X + P, &v));
	cr_assert_eq(*(char *)memfile_ptr(&fake_kernel.mf, v.mf_off), out[50]);
}

Test(mm_io, a_copy_running_off_the_end_returns_the_partial_count)
{
	map(X, P, PROT_READ | PROT_WRITE);
	char buf[20] = "0123456789abcdefghi";
	cr_assert_eq(mm_copy_out(mm, X + P - 10, buf, 20), 10);
	char in[20];
	cr_assert_eq(mm_copy_in(mm, in, X + P - 10, 20), 10);
	cr_assert_eq(memcmp(in, buf, 10), 0);
	/* A PROT_NONE page stops a copy like a hole does. */
	map(X + P, P, PROT_NONE);
	cr_assert_eq(mm_copy_in(mm, in, X + P - 4, 20), 4);
}

Test(mm_io, bad_first_bytes_are_efault)
{
	map(X, P, PROT_NONE);
	map(X + P, P, PROT_EXEC);
	char b[8];
	cr_assert_eq(mm_copy_in(mm, b, X, 8), -EFAULT);
	cr_assert_eq(mm_copy_in(mm, b, X + P, 8), -EFAULT);
	cr_assert_eq(mm_copy_in(mm, b, X + 2 * P, 8), -EFAULT);
	cr_assert_eq(mm_copy_in(mm, b, 0, 8), -EFAULT);
	cr_assert_eq(mm_copy_in(mm, b, PLATFORM_GUEST_MAX, 8), -EFAULT);
	cr_assert_eq(mm_copy_in(mm, b, UINT64_MAX - 3, 8), -EFAULT);
	cr_assert_eq(mm_copy_out(mm, X + 2 * P, b, 8), -EFAULT);
	cr_assert_eq(mm_poke(mm, X + 2 * P, b, 8), -EFAULT);
	cr_assert_eq(mm_copy_in(mm, b, X, 0), 0);
}

Test(mm_io, a_wrapping_range_is_efault_even_from_a_mapped_address)
{
	map(X, P, PROT_READ | PROT_WRITE);
	char b[8];
	cr_assert_eq(mm_copy_in(mm, b, X, SIZE_MAX), -EFAULT);
}

Test(mm_io, writable_memory_is_readable_as_on_x86)
{
	map(X, P, PROT_WRITE);
	char b[4] = "abc", in[4];
	cr_assert_eq(mm_copy_out(mm, X, b, 4), 4);
	cr_assert_eq(mm_copy_in(mm, in, X, 4), 4);
	cr_assert_str_eq(in, "abc");
}

Test(mm_io, copy_out_to_read_only_memory_is_efault_and_poke_writes_it)
{
	map(X, P, PROT_READ);
	char b[4] = "xyz", in[4];
	cr_assert_eq(mm_copy_out(mm, X, b, 4), -EFAULT);
	cr_assert_eq(mm_poke(mm, X, b, 4), 4);
	cr_assert_eq(mm_copy_in(mm, in, X, 4), 4);
	cr_assert_str_eq(in, "xyz");
}

Test(mm_io, copy_in_string_stops_at_the_nul)
{
	map(X, P, PROT_READ | PROT_WRITE);
	map(X + P, P, PROT_READ);
	const char *s = "hello, world";
	/* The string straddles the two mappings. */
	cr_assert_eq(mm_poke(mm, X + P - 5, s, strlen(s) + 1), (ssize_t)strlen(s) + 1);
	char dst[64];
	memset(dst, 'z', sizeof(dst));
	cr_assert_eq(mm_copy_in_string(mm, dst, X + P - 5, sizeof(dst)), (ssize_t)strlen(s));
	cr_assert_str_eq(dst, s);
	/* max counts the NUL: exactly enough, one short. */
	cr_assert_eq(mm_copy_in_string(mm, dst, X + P - 5, strlen(s) + 1), (ssize_t)strlen(s));
	cr_assert_eq(mm_copy_in_string(mm, dst, X + P - 5, strlen(s)), -ENAMETOOLONG);
	cr_assert_eq(mm_copy_in_string(mm, dst, X + P - 5, 0), -ENAMETOOLONG);
	/* An empty string. */
	cr_assert_eq(mm_copy_in_string(mm, dst, X + 100, sizeof(dst)), 0);
	cr_assert_eq(dst[0], '\0');
}

Test(mm_io, copy_in_string_without_nul_before_a_bad_page_is_efault)
{
	map(X, P, PROT_READ | PROT_WRITE);
	char fill[16];
	memset(fill, 'a', sizeof(fill));
	cr_assert_eq(mm_copy_out(mm, X + P - 16, fill, 16), 16);
	char dst[64];
	cr_assert_eq(mm_copy_in_string(mm, dst, X + P - 16, sizeof(dst)), -EFAULT);
	cr_assert_eq(mm_copy_in_string(mm, dst, X + P - 16, 16), -ENAMETOOLONG);
	cr_assert_eq(mm_copy_in_string(mm, dst, X + 2 * P, 16), -EFAULT);
	cr_assert_eq(mm_copy_in_string(mm, dst, PLATFORM_GUEST_MAX, 16), -EFAULT);
}

Test(mm_io, translate_joins_adjacent_pages_and_stops_at_the_first_bad_one)
{
	/* Mapped first, the last page gets memory-file pages apart from the others'. */
	map(X + 2 * P, P, PROT_READ);
	map(X, 2 * P, PROT_READ | PROT_WRITE);
	/* Two VMAs over one contiguous run of memory-file pages make one iovec. */
	cr_assert_eq(mm_mprotect(mm, X + P, P, PROT_READ | PROT_WRITE | PROT_EXEC), 0);
	cr_assert_eq(vma_count(mm), 3);
	struct iovec iov[4];
	size_t covered;

	/* The range runs 10 bytes past the last mapping: those are not covered. */
	cr_assert_eq(mm_translate(mm, X + 10, 3 * P, false, iov, 4, &covered), 2);
	cr_assert_eq(covered, 3 * P - 10);
	cr_assert_eq(iov[0].iov_len, 2 * P - 10);
	cr_assert_eq(iov[1].iov_len, P);
	struct mm_vma_info v;
	cr_assert(vma_at(mm, X, &v));
	cr_assert_eq(iov[0].iov_base, memfile_ptr(&fake_kernel.mf, v.mf_off + 10));

	/* Writing stops at the read-only page. */
	cr_assert_eq(mm_translate(mm, X + 10, 3 * P, true, iov, 4, &covered), 1);
	cr_assert_eq(covered, 2 * P - 10);
	memcpy(iov[0].iov_base, "data", 4);
	char in[5] = { 0 };
	cr_assert_eq(mm_copy_in(mm, in, X + 10, 4), 4);
	cr_assert_str_eq(in, "data");

	/* maxiov bounds the answer. */
	cr_assert_eq(mm_translate(mm, X, 3 * P, false, iov, 1, &covered), 1);
	cr_assert_eq(covered, 2 * P);

	/* A bad first byte gives nothing. */
	cr_assert_eq(mm_translate(mm, X + 3 * P, P, false, iov, 4, &covered), 0);
	cr_assert_eq(covered, 0);
	cr_assert_eq(mm_translate(mm, UINT64_MAX - 1, P, false, iov, 4, &covered), 0);
	cr_assert_eq(covered, 0);
}

Test(mm_io, a_pinned_page_outlives_munmap_and_is_not_handed_out_again)
{
	map(X, 2 * P, PROT_READ | PROT_WRITE);
	struct iovec iov[2];
	size_t covered;
	cr_assert_eq(mm_translate_pin(mm, X + 100, P, true, iov, 2, &covered), 1);
	cr_assert_eq(covered, P);
	cr_assert_eq(mm->io_pins, 1);
	uint64_t off = (uint64_t)((uint8_t *)iov[0].iov_base - fake_kernel.mf.base);
	cr_assert_eq(memfile_page_refs(&fake_kernel.mf, PAGE_ALIGN_DOWN(off)), 2);

	cr_assert_eq(mm_munmap(mm, X, 2 * P), 0);
	/* New memory gets other pages while the copy may still write to these. */
	map(X + 16 * P, 4 * P, PROT_READ | PROT_WRITE);
	struct mm_vma_info v;
	cr_assert(vma_at(mm, X + 16 * P, &v));
	cr_assert(v.mf_off + 4 * P <= PAGE_ALIGN_DOWN(off) || v.mf_off >= PAGE_ALIGN_UP(off + P));
	memset(iov[0].iov_base, 'x', iov[0].iov_len);

	mm_translate_unpin(mm, iov, 1);
	cr_assert_eq(mm->io_pins, 0);
	cr_assert_eq(memfile_page_refs(&fake_kernel.mf, PAGE_ALIGN_DOWN(off)), 1);
}

Test(mm_io, unpinning_a_mapped_range_keeps_its_pages)
{
	map(X, 3 * P, PROT_READ | PROT_WRITE);
	struct iovec iov[4];
	size_t covered;
	int n = mm_translate_pin(mm, X + 10, 3 * P - 20, false, iov, 4, &covered);
	cr_assert_eq(n, 1);
	mm_translate_unpin(mm, iov, n);
	cr_assert_eq(mm_copy_out(mm, X + P, "still", 6), 6);
	char in[6];
	cr_assert_eq(mm_copy_in(mm, in, X + P, 6), 6);
	cr_assert_str_eq(in, "still");
	struct mm_vma_info v;
	cr_assert(vma_at(mm, X, &v));
	for (uint64_t p = 0; p < 3 * P; p += P)
		cr_assert_eq(memfile_page_refs(&fake_kernel.mf, v.mf_off + p), 1);
}
