/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elf_parse() on real binaries of this machine and on a corpus of corrupt images derived from
 * /bin/true in memory. Every corrupt image gives exactly -ENOEXEC, and the unmodified image
 * parses, so each case fails only because of its one change.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/util.h"
#include "sentry/loader/loader.h"
#include "sentry/platform/platform.h"

#define TRUE_PATH "/bin/true"
#define LDSO_PATH "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"

struct image {
	uint8_t *buf;
	size_t len;
};

static struct image read_file(const char *path)
{
	struct image im = { 0 };
	FILE *f = fopen(path, "rb");
	long n;

	cr_assert_not_null(f, "cannot open %s", path);
	cr_assert_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	cr_assert_gt(n, 0);
	rewind(f);
	im.buf = malloc((size_t)n);
	cr_assert_not_null(im.buf);
	cr_assert_eq(fread(im.buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	im.len = (size_t)n;
	return im;
}

static Elf64_Ehdr *ehdr(struct image *im)
{
	return (Elf64_Ehdr *)im->buf;
}

static Elf64_Phdr *phdr(struct image *im, int i)
{
	return (Elf64_Phdr *)(im->buf + ehdr(im)->e_phoff) + i;
}

/* Index of the n-th (0-based) program header of type type, or -1. */
static int find_ph(struct image *im, uint32_t type, int n)
{
	for (int i = 0; i < ehdr(im)->e_phnum; i++)
		if (phdr(im, i)->p_type == type && n-- == 0)
			return i;
	return -1;
}

/* What elf_parse() should find, computed independently from the raw headers. */
static void check_against_headers(struct image *im, const struct elf_info *info)
{
	uint64_t lo = UINT64_MAX, hi = 0;

	cr_assert_eq(info->type, ehdr(im)->e_type);
	cr_assert_eq(info->entry, ehdr(im)->e_entry);
	cr_assert_eq(info->phoff, ehdr(im)->e_phoff);
	cr_assert_eq(info->phnum, ehdr(im)->e_phnum);
	cr_assert_eq(info->interp_index, find_ph(im, PT_INTERP, 0));
	for (int i = 0; i < ehdr(im)->e_phnum; i++) {
		Elf64_Phdr *ph = phdr(im, i);

		cr_assert_eq(memcmp(&info->phdrs[i], ph, sizeof(*ph)), 0, "phdr %d differs", i);
		if (ph->p_type != PT_LOAD)
			continue;
		lo = MIN(lo, ph->p_vaddr & ~0xfffULL);
		hi = MAX(hi, (ph->p_vaddr + ph->p_memsz + 0xfff) & ~0xfffULL);
	}
	cr_assert_eq(info->min_vaddr, lo);
	cr_assert_eq(info->max_vaddr, hi);
}

Test(elf_parse, bin_true_is_a_pie_with_interpreter)
{
	struct image im = read_file(TRUE_PATH);
	struct elf_info info;

	cr_assert_eq(elf_parse(im.buf, im.len, im.len, &info), 0);
	check_against_headers(&im, &info);
	cr_assert_eq(info.type, ET_DYN);
	cr_assert_geq(info.interp_index, 0);
	cr_assert_str_eq((char *)im.buf + info.phdrs[info.interp_index].p_offset,
			 "/lib64/ld-linux-x86-64.so.2");
	cr_assert_eq(info.stack_prot, PROT_READ | PROT_WRITE);
	free(im.buf);
}

Test(elf_parse, first_page_of_bin_true_is_enough)
{
	struct image im = read_file(TRUE_PATH);
	struct elf_info info;

	cr_assert_eq(elf_parse(im.buf, 4096, im.len, &info), 0);
	check_against_headers(&im, &info);
	free(im.buf);
}

Test(elf_parse, ld_so_is_et_dyn_without_interpreter)
{
	struct image im = read_file(LDSO_PATH);
	struct elf_info info;

	cr_assert_eq(elf_parse(im.buf, im.len, im.len, &info), 0);
	check_against_headers(&im, &info);
	cr_assert_eq(info.type, ET_DYN);
	cr_assert_eq(info.interp_index, -1);
	cr_assert_eq(info.min_vaddr, 0);
	free(im.buf);
}

Test(elf_parse, static_binary_is_et_exec)
{
	const char *path = getenv("HUSK_TEST_STATIC");
	struct image im;
	struct elf_info info;

	if (!path || !*path)
		cr_skip_test("no static binary: libc.a is not installed (libc6-dev)");
	im = read_file(path);
	cr_assert_eq(elf_parse(im.buf, im.len, im.len, &info), 0);
	check_against_headers(&im, &info);
	cr_assert_eq(info.type, ET_EXEC);
	cr_assert_eq(info.interp_index, -1);
	cr_assert_geq(info.min_vaddr, 0x400000);
	free(im.buf);
}

Test(elf_parse, static_pie_is_et_dyn_without_interpreter)
{
	const char *path = getenv("HUSK_TEST_STATIC_PIE");
	struct image im;
	struct elf_info info;

	if (!path || !*path)
		cr_skip_test("no static PIE: libc.a is not installed (libc6-dev)");
	im = read_file(path);
	cr_assert_eq(elf_parse(im.buf, im.len, im.len, &info), 0);
	check_against_headers(&im, &info);
	cr_assert_eq(info.type, ET_DYN);
	cr_assert_eq(info.interp_index, -1);
	free(im.buf);
}

Test(elf_parse, gnu_stack_with_pf_x_asks_for_an_executable_stack)
{
	struct image im = read_file(TRUE_PATH);
	struct elf_info info;
	int s = find_ph(&im, PT_GNU_STACK, 0);

	cr_assert_geq(s, 0);
	phdr(&im, s)->p_flags |= PF_X;
	cr_assert_eq(elf_parse(im.buf, im.len, im.len, &info), 0);
	cr_assert_eq(info.stack_prot, PROT_READ | PROT_WRITE | PROT_EXEC);
	free(im.buf);
}

Test(elf_parse, missing_gnu_stack_gives_a_read_write_stack)
{
	struct image im = read_file(TRUE_PATH);
	struct elf_info info;
	int s = find_ph(&im, PT_GNU_STACK, 0);

	cr_assert_geq(s, 0);
	phdr(&im, s)->p_type = PT_NULL;
	cr_assert_eq(elf_parse(im.buf, im.len, im.len, &info), 0);
	cr_assert_eq(info.stack_prot, PROT_READ | PROT_WRITE);
	free(im.buf);
}

Test(elf_parse, phdr_table_beyond_the_buffer_is_refused_even_if_in_the_file)
{
	struct image im = read_file(TRUE_PATH);
	struct elf_info info;

	cr_assert_eq(elf_parse(im.buf, 64 + 56 * 2, im.len, &info), -ENOEXEC);
	free(im.buf);
}

/* --- the corrupt corpus --- */

/* Runs elf_parse on a copy of exactly len bytes (so ASan sees any over-read). */
static int parse_copy(const uint8_t *buf, size_t len, uint64_t file_size)
{
	uint8_t *copy = malloc(len ? len : 1);
	struct elf_info info;
	int ret;

	cr_assert_not_null(copy);
	memcpy(copy, buf, len);
	ret = elf_parse(copy, len, file_size, &info);
	free(copy);
	return ret;
}

static struct image base;

static void load_base(void)
{
	base = read_file(TRUE_PATH);
	/* The corpus is meaningful only if the unmodified image parses. */
	cr_assert_eq(parse_copy(base.buf, base.len, base.len), 0);
}

static void free_base(void)
{
	free(base.buf);
}

TestSuite(elf_corrupt, .init = load_base, .fini = free_base);

#define EXPECT_REJECTED(im) cr_assert_eq(parse_copy((im)->buf, (im)->len, (im)->len), -ENOEXEC)

static int nth_load(int n)
{
	int i = find_ph(&base, PT_LOAD, n);

	cr_assert_geq(i, 0, "/bin/true has fewer than %d PT_LOADs", n + 1);
	return i;
}

Test(elf_corrupt, truncated_images)
{
	size_t cuts[] = { 0, 10, 63, 64, 64 + 56 * 3 + 20 };

	for (size_t i = 0; i < ARRAY_SIZE(cuts); i++)
		cr_assert_eq(parse_copy(base.buf, cuts[i], cuts[i]), -ENOEXEC, "cut at %zu",
			     cuts[i]);
}

Test(elf_corrupt, buffer_longer_than_the_file_counts_only_the_file)
{
	cr_assert_eq(parse_copy(base.buf, base.len, 63), -ENOEXEC);
}

Test(elf_corrupt, bad_magic)
{
	base.buf[1] = 'X';
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, elfclass32)
{
	base.buf[EI_CLASS] = ELFCLASS32;
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, big_endian)
{
	base.buf[EI_DATA] = ELFDATA2MSB;
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, ident_version_not_current)
{
	base.buf[EI_VERSION] = EV_NONE;
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, em_aarch64)
{
	ehdr(&base)->e_machine = EM_AARCH64;
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, et_rel)
{
	ehdr(&base)->e_type = ET_REL;
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, et_core)
{
	ehdr(&base)->e_type = ET_CORE;
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, phentsize_32)
{
	ehdr(&base)->e_phentsize = 32;
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, phnum_0)
{
	ehdr(&base)->e_phnum = 0;
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, phnum_65535)
{
	ehdr(&base)->e_phnum = 65535;
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, phnum_65_even_if_the_table_is_in_the_file)
{
	ehdr(&base)->e_phnum = 65;
	cr_assert_leq(64 + 65 * 56, base.len);
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, phoff_past_the_end)
{
	ehdr(&base)->e_phoff = base.len;
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, phoff_near_uint64_max)
{
	ehdr(&base)->e_phoff = UINT64_MAX - 100;
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, load_filesz_above_memsz)
{
	Elf64_Phdr *ph = phdr(&base, nth_load(0));

	ph->p_memsz = ph->p_filesz - 1;
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, load_bytes_beyond_the_file)
{
	Elf64_Phdr *ph = phdr(&base, nth_load(3));

	ph->p_filesz = base.len - ph->p_offset + 1;
	ph->p_memsz = MAX(ph->p_memsz, ph->p_filesz);
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, load_offset_near_uint64_max)
{
	Elf64_Phdr *ph = phdr(&base, nth_load(1));

	/* Keep vaddr and offset congruent so that only the overflow is wrong. */
	ph->p_offset = (UINT64_MAX & ~0xfffULL) + (ph->p_vaddr & 0xfff);
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, load_vaddr_misaligned_with_offset)
{
	phdr(&base, nth_load(1))->p_vaddr += 8;
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, load_align_not_a_power_of_two)
{
	phdr(&base, nth_load(1))->p_align = 0x3000;
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, overlapping_loads)
{
	Elf64_Phdr *a = phdr(&base, nth_load(0)), *b = phdr(&base, nth_load(1));

	b->p_vaddr = a->p_vaddr + (b->p_offset & 0xfff);
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, loads_sharing_a_page)
{
	Elf64_Phdr *a = phdr(&base, nth_load(0)), *b = phdr(&base, nth_load(1));

	/* b starts on the page where a ends, without overlapping a's bytes. */
	b->p_offset = a->p_offset + a->p_memsz;
	b->p_vaddr = a->p_vaddr + a->p_memsz;
	cr_assert_neq(b->p_vaddr & 0xfff, 0);
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, descending_loads)
{
	Elf64_Phdr tmp, *a = phdr(&base, nth_load(1)), *b = phdr(&base, nth_load(2));

	tmp = *a;
	*a = *b;
	*b = tmp;
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, load_vaddr_near_uint64_max)
{
	Elf64_Phdr *ph = phdr(&base, nth_load(3));

	ph->p_vaddr = (UINT64_MAX & ~0xfffULL) + (ph->p_offset & 0xfff);
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, load_end_rounds_past_uint64_max)
{
	Elf64_Phdr *ph = phdr(&base, nth_load(3));

	ph->p_vaddr = (UINT64_MAX & ~0xfffULL) - 0x1000 + (ph->p_offset & 0xfff);
	ph->p_memsz = UINT64_MAX - ph->p_vaddr;
	ph->p_filesz = MIN(ph->p_filesz, ph->p_memsz);
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, load_memsz_huge)
{
	phdr(&base, nth_load(3))->p_memsz = 1ULL << 62;
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, span_just_at_the_guest_limit)
{
	Elf64_Phdr *ph = phdr(&base, nth_load(3));

	/* min_vaddr is 0 for /bin/true: the span is then exactly PLATFORM_GUEST_MAX. */
	cr_assert_eq(phdr(&base, nth_load(0))->p_vaddr, 0);
	ph->p_memsz = PLATFORM_GUEST_MAX - ph->p_vaddr;
	EXPECT_REJECTED(&base);
	ph->p_memsz -= PAGE_SIZE;
	cr_assert_eq(parse_copy(base.buf, base.len, base.len), 0);
}

Test(elf_corrupt, et_exec_above_the_guest_limit)
{
	ehdr(&base)->e_type = ET_EXEC;
	cr_assert_eq(parse_copy(base.buf, base.len, base.len), 0);
	for (int i = 0; i < ehdr(&base)->e_phnum; i++)
		phdr(&base, i)->p_vaddr += PLATFORM_GUEST_MAX - 0x4000;
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, two_interps)
{
	int i = find_ph(&base, PT_INTERP, 0), n = find_ph(&base, PT_NOTE, 0);

	cr_assert_geq(n, 0);
	*phdr(&base, n) = *phdr(&base, i);
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, interp_not_nul_terminated)
{
	Elf64_Phdr *ph = phdr(&base, find_ph(&base, PT_INTERP, 0));

	base.buf[ph->p_offset + ph->p_filesz - 1] = 'x';
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, interp_beyond_the_file)
{
	phdr(&base, find_ph(&base, PT_INTERP, 0))->p_offset = base.len - 4;
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, interp_offset_overflows)
{
	phdr(&base, find_ph(&base, PT_INTERP, 0))->p_offset = UINT64_MAX - 4;
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, interp_longer_than_path_max)
{
	Elf64_Phdr *ph = phdr(&base, find_ph(&base, PT_INTERP, 0));

	/* Ends on a NUL inside the file: only the length is wrong. */
	ph->p_filesz = PATH_MAX + 1;
	base.buf[ph->p_offset + ph->p_filesz - 1] = '\0';
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, interp_of_one_byte)
{
	Elf64_Phdr *ph = phdr(&base, find_ph(&base, PT_INTERP, 0));

	ph->p_filesz = 1;
	base.buf[ph->p_offset] = '\0';
	EXPECT_REJECTED(&base);
}

Test(elf_corrupt, no_pt_load)
{
	for (int i = 0; i < ehdr(&base)->e_phnum; i++)
		if (phdr(&base, i)->p_type == PT_LOAD)
			phdr(&base, i)->p_type = PT_NOTE;
	EXPECT_REJECTED(&base);
}

/* --- random mutations: only 0 or -ENOEXEC, never a crash or an over-read --- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
	/* xorshift64*: deterministic, so a failure reproduces. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

Test(elf_corrupt, random_mutations_never_crash)
{
	const size_t len = 4096;
	size_t hot = ehdr(&base)->e_phoff + ehdr(&base)->e_phnum * sizeof(Elf64_Phdr);
	int accepted = 0, rejected = 0;

	for (int iter = 0; iter < 20000; iter++) {
		uint8_t *m = malloc(len);
		size_t mlen = len;
		uint64_t fsize = base.len;
		struct elf_info info;
		int ret, flips = 1 + (int)(rng() % 8);

		memcpy(m, base.buf, len);
		for (int k = 0; k < flips; k++) {
			/* Mostly the header and program headers, where the parser looks. */
			size_t pos = (rng() % 4) ? rng() % hot : rng() % len;

			switch (rng() % 3) {
			case 0:
				m[pos] ^= (uint8_t)(1u << (rng() % 8));
				break;
			case 1:
				m[pos] = (uint8_t)rng();
				break;
			default:
				m[pos] = (rng() & 1) ? 0xff : 0x00;
				break;
			}
		}
		if (rng() % 16 == 0)
			mlen = rng() % len;
		if (rng() % 16 == 0)
			fsize = rng() % (2 * base.len);
		/* A copy of exactly mlen bytes: an over-read is an ASan error. */
		uint8_t *exact = malloc(mlen ? mlen : 1);
		memcpy(exact, m, mlen);
		ret = elf_parse(exact, mlen, fsize, &info);
		cr_assert(ret == 0 || ret == -ENOEXEC, "iteration %d returned %d", iter, ret);
		if (ret == 0) {
			accepted++;
			cr_assert(info.phnum > 0 && info.phnum <= 64);
			cr_assert(info.interp_index >= -1 && info.interp_index < info.phnum);
			cr_assert_lt(info.max_vaddr - info.min_vaddr, PLATFORM_GUEST_MAX);
			cr_assert_leq(info.min_vaddr, info.max_vaddr);
		} else {
			rejected++;
		}
		free(exact);
		free(m);
	}
	/* Both outcomes happen, or the loop tested nothing. */
	cr_assert_gt(accepted, 0);
	cr_assert_gt(rejected, 0);
}
