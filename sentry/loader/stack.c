/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The initial stack of a new program, laid out as Linux's fs/exec.c (strings) and
 * fs/binfmt_elf.c create_elf_tables() (argc, argv, envp, auxv) lay it out with randomisation
 * off. The image is built in a sentry buffer so that it can be tested without an mm and copied
 * to the guest in one go.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "include/abi/linux/auxv.h"
#include "sentry/loader/loader.h"

/* Linux: _STK_LIM / 4 * 3 and ARG_MAX. */
#define ARG_LIMIT_MAX (6ULL << 20)
#define ARG_LIMIT_MIN (128ULL << 10)

uint64_t loader_arg_limit(uint64_t rlim_cur)
{
	uint64_t limit = MIN(ARG_LIMIT_MAX, rlim_cur / 4);

	return MAX(limit, ARG_LIMIT_MIN);
}

static size_t count_strings(char *const v[])
{
	size_t n = 0;

	if (v)
		while (v[n])
			n++;
	return n;
}

/* Adds the sizes (NUL included) of the strings of v to *total; -E2BIG past limit. */
static int add_strings(char *const v[], uint64_t limit, uint64_t *total)
{
	for (size_t i = 0; v && v[i]; i++) {
		size_t n = strnlen(v[i], LOADER_MAX_ARG_STRLEN) + 1;

		if (n > LOADER_MAX_ARG_STRLEN)
			return -E2BIG;
		*total += n;
		if (*total > limit)
			return -E2BIG;
	}
	return 0;
}

int loader_check_args(char *const argv[], char *const envp[], const char *execfn, uint64_t limit)
{
	size_t argc = count_strings(argv), envc = count_strings(envp);
	uint64_t ptrs, total = 0;
	size_t n;

	/* Linux reserves the pointers first, counting argv as at least one entry. */
	if (argc > limit / 8 || envc > limit / 8)
		return -E2BIG;
	ptrs = (MAX(argc, 1) + envc) * sizeof(uint64_t);
	if (limit <= ptrs)
		return -E2BIG;
	limit -= ptrs;

	n = strnlen(execfn, LOADER_MAX_ARG_STRLEN) + 1;
	if (n > LOADER_MAX_ARG_STRLEN)
		return -E2BIG;
	total = n;
	if (total > limit)
		return -E2BIG;
	if (add_strings(envp, limit, &total))
		return -E2BIG;
	return add_strings(argv, limit, &total);
}

/* The image under construction: the guest range [sp, top) in a sentry buffer. */
struct image {
	uint8_t *buf;
	uint64_t sp;
};

static void put_word(struct image *im, uint64_t addr, uint64_t v)
{
	memcpy(im->buf + (addr - im->sp), &v, sizeof(v));
}

static void put_bytes(struct image *im, uint64_t addr, const void *p, size_t n)
{
	memcpy(im->buf + (addr - im->sp), p, n);
}

/* Sum of the string sizes of v, NUL included; already bounded by loader_check_args(). */
static uint64_t strings_size(char *const v[])
{
	uint64_t total = 0;

	for (size_t i = 0; v && v[i]; i++)
		total += strlen(v[i]) + 1;
	return total;
}

/* Writes the strings of v upwards from addr and their addresses from ptrs; returns the end. */
static uint64_t put_strings(struct image *im, char *const v[], uint64_t addr, uint64_t ptrs)
{
	for (size_t i = 0; v && v[i]; i++) {
		size_t n = strlen(v[i]) + 1;

		put_bytes(im, addr, v[i], n);
		put_word(im, ptrs + i * 8, addr);
		addr += n;
	}
	return addr;
}

int loader_build_stack(const struct loader_stack_args *a, struct loader_stack *out)
{
	size_t argc = count_strings(a->argv), envc = count_strings(a->envp);
	size_t execfn_n, platform_n, items;
	uint64_t p, execfn_addr, platform_addr, random_addr, sp, argv_ptrs, envp_ptrs, auxv_addr;
	uint64_t aux[LOADER_AUXV_WORDS];
	struct image im;
	int n = 0, ret;

	memset(out, 0, sizeof(*out));
	ret = loader_check_args(a->argv, a->envp, a->execfn, a->limit);
	if (ret)
		return ret;
	if ((a->top & 15) || a->size > a->top)
		return -EINVAL;

	execfn_n = strlen(a->execfn) + 1;
	platform_n = strlen(a->platform) + 1;

	/* Strings: bprm->p starts one pointer below the top, then filename, envp, argv. */
	p = a->top - sizeof(uint64_t);
	execfn_addr = p - execfn_n;
	out->env_end = execfn_addr;
	out->env_start = out->env_end - strings_size(a->envp);
	out->arg_end = out->env_start;
	out->arg_start = out->arg_end - strings_size(a->argv);

	/* create_elf_tables(): arch_align_stack(), platform, random bytes, then the tables. */
	p = out->arg_start & ~15ULL;
	platform_addr = p - platform_n;
	random_addr = platform_addr - 16;
	p = random_addr;

#define AUX(key, val)             \
	do {                      \
		aux[n++] = (key); \
		aux[n++] = (val); \
	} while (0)
	/* Linux's order: AT_SYSINFO_EHDR first when there is a vDSO. */
	if (a->sysinfo_ehdr)
		AUX(LINUX_AT_SYSINFO_EHDR, a->sysinfo_ehdr);
	AUX(LINUX_AT_MINSIGSTKSZ, a->minsigstksz);
	AUX(LINUX_AT_HWCAP, a->hwcap);
	AUX(LINUX_AT_PAGESZ, PAGE_SIZE);
	AUX(LINUX_AT_CLKTCK, 100);
	AUX(LINUX_AT_PHDR, a->phdr);
	AUX(LINUX_AT_PHENT, sizeof(Elf64_Phdr));
	AUX(LINUX_AT_PHNUM, a->phnum);
	AUX(LINUX_AT_BASE, a->base);
	AUX(LINUX_AT_FLAGS, 0);
	AUX(LINUX_AT_ENTRY, a->entry);
	AUX(LINUX_AT_UID, a->uid);
	AUX(LINUX_AT_EUID, a->euid);
	AUX(LINUX_AT_GID, a->gid);
	AUX(LINUX_AT_EGID, a->egid);
	AUX(LINUX_AT_SECURE, a->secure ? 1 : 0);
	AUX(LINUX_AT_RANDOM, random_addr);
	AUX(LINUX_AT_HWCAP2, a->hwcap2);
	AUX(LINUX_AT_EXECFN, execfn_addr);
	AUX(LINUX_AT_PLATFORM, platform_addr);
	AUX(LINUX_AT_NULL, 0);
#undef AUX
	_Static_assert(LOADER_AUXV_WORDS == 42, "auxv entries and LOADER_AUXV_WORDS disagree");

	/* STACK_ADD then STACK_ROUND: sp lands 16-byte aligned on argc. */
	items = (argc + 1) + (envc + 1) + 1;
	sp = (p - (uint64_t)n * 8 - items * 8) & ~15ULL;
	if (a->top - sp > a->size)
		return -E2BIG;

	im.sp = sp;
	im.buf = calloc(1, a->top - sp);
	if (!im.buf)
		return -ENOMEM;

	put_bytes(&im, execfn_addr, a->execfn, execfn_n);
	argv_ptrs = sp + 8;
	envp_ptrs = argv_ptrs + (argc + 1) * 8;
	auxv_addr = envp_ptrs + (envc + 1) * 8;
	put_word(&im, sp, argc);
	put_strings(&im, a->argv, out->arg_start, argv_ptrs);
	put_strings(&im, a->envp, out->env_start, envp_ptrs);
	/* The NULLs after argv and envp are already zero (calloc). */
	put_bytes(&im, platform_addr, a->platform, platform_n);
	put_bytes(&im, random_addr, a->random, sizeof(a->random));
	put_bytes(&im, auxv_addr, aux, (size_t)n * 8);

	memcpy(out->auxv, aux, (size_t)n * 8);
	out->auxv_len = n;
	out->image = im.buf;
	out->len = a->top - sp;
	out->sp = sp;
	return 0;
}

void loader_stack_free(struct loader_stack *s)
{
	free(s->image);
	s->image = NULL;
	s->len = 0;
}
