/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loader_build_stack() and the argument limits: the layout of argc, argv, envp and auxv in the
 * image, checked word by word, and against the stack the host kernel built for this very test
 * process.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/resource.h>

#include "common/util.h"
#include "include/abi/linux/auxv.h"
#include "sentry/loader/loader.h"

#define TOP 0x7ffe00000000ULL
#define SIZE (8ULL << 20)

static char *argv3[] = { "prog", "-a", "hello world", NULL };
static char *envp2[] = { "A=1", "PATH=/usr/bin:/bin", NULL };

static struct loader_stack_args default_args(void)
{
	struct loader_stack_args a = {
		.top = TOP,
		.size = SIZE,
		.limit = loader_arg_limit(8 << 20),
		.argv = argv3,
		.envp = envp2,
		.execfn = "/usr/bin/prog",
		.platform = "x86_64",
		.hwcap = 0x178bfbff,
		.hwcap2 = 2,
		.minsigstksz = 3632,
		.phdr = 0x555555554040,
		.phnum = 13,
		.base = 0x7ffff7fc3000,
		.entry = 0x5555555563d0,
		.uid = 1000,
		.euid = 1001,
		.gid = 100,
		.egid = 101,
	};

	for (int i = 0; i < 16; i++)
		a.random[i] = (uint8_t)(0xa0 + i);
	return a;
}

/* Guest addresses of the image, read back from the sentry buffer. */
static uint64_t word_at(const struct loader_stack *s, uint64_t addr)
{
	uint64_t v;

	cr_assert(addr >= s->sp && addr + 8 <= s->sp + s->len, "address %#lx outside the image",
		  (unsigned long)addr);
	memcpy(&v, s->image + (addr - s->sp), 8);
	return v;
}

static const char *str_at(const struct loader_stack *s, uint64_t addr)
{
	cr_assert(addr >= s->sp && addr < s->sp + s->len, "string %#lx outside the image",
		  (unsigned long)addr);
	cr_assert_not_null(memchr(s->image + (addr - s->sp), 0, s->sp + s->len - addr));
	return (const char *)s->image + (addr - s->sp);
}

static uint64_t aux_get(const struct loader_stack *s, uint64_t key)
{
	for (int i = 0; i + 1 < s->auxv_len; i += 2)
		if (s->auxv[i] == key)
			return s->auxv[i + 1];
	cr_assert_fail("auxv has no key %lu", (unsigned long)key);
	return 0;
}

/* Address of the first auxv word in the image. */
static uint64_t auxv_addr(const struct loader_stack *s)
{
	uint64_t argc = word_at(s, s->sp), p = s->sp + 8 + (argc + 1) * 8;

	while (word_at(s, p))
		p += 8;
	return p + 8;
}

Test(stack, argc_argv_envp_and_alignment)
{
	struct loader_stack_args a = default_args();
	struct loader_stack s;
	uint64_t p;

	cr_assert_eq(loader_build_stack(&a, &s), 0);
	cr_assert_eq(s.sp % 16, 0);
	cr_assert_eq(s.sp + s.len, TOP);
	cr_assert_eq(word_at(&s, s.sp), 3);
	p = s.sp + 8;
	for (int i = 0; i < 3; i++, p += 8)
		cr_assert_str_eq(str_at(&s, word_at(&s, p)), argv3[i]);
	cr_assert_eq(word_at(&s, p), 0);
	p += 8;
	for (int i = 0; i < 2; i++, p += 8)
		cr_assert_str_eq(str_at(&s, word_at(&s, p)), envp2[i]);
	cr_assert_eq(word_at(&s, p), 0);
	p += 8;
	/* auxv right after envp's NULL, identical to the copy returned for mm->auxv. */
	cr_assert_eq(auxv_addr(&s), p);
	/* Without a vDSO, AT_SYSINFO_EHDR is left out. */
	cr_assert_eq(s.auxv_len, LOADER_AUXV_WORDS - 2);
	cr_assert_eq(memcmp(s.image + (p - s.sp), s.auxv, (size_t)s.auxv_len * 8), 0);
	cr_assert_eq(s.auxv[s.auxv_len - 2], LINUX_AT_NULL);
	cr_assert_eq(s.auxv[s.auxv_len - 1], 0);
	loader_stack_free(&s);
}

Test(stack, strings_at_the_top_in_linux_order)
{
	struct loader_stack_args a = default_args();
	struct loader_stack s;
	uint64_t execfn;

	cr_assert_eq(loader_build_stack(&a, &s), 0);
	/* From the top: 8 zero bytes, execfn, envp strings, argv strings. */
	cr_assert_eq(word_at(&s, TOP - 8), 0);
	execfn = aux_get(&s, LINUX_AT_EXECFN);
	cr_assert_str_eq(str_at(&s, execfn), "/usr/bin/prog");
	cr_assert_eq(execfn + strlen("/usr/bin/prog") + 1, TOP - 8);
	cr_assert_eq(s.env_end, execfn);
	cr_assert_eq(s.env_start, s.env_end - (4 + 19));
	cr_assert_eq(s.arg_end, s.env_start);
	cr_assert_eq(s.arg_start, s.arg_end - (5 + 3 + 12));
	cr_assert_eq(word_at(&s, s.sp + 8), s.arg_start);
	cr_assert_eq(word_at(&s, s.sp + 8 + 4 * 8), s.env_start);
	loader_stack_free(&s);
}

Test(stack, sysinfo_ehdr_comes_first)
{
	struct loader_stack_args a = default_args();
	struct loader_stack s, without;

	cr_assert_eq(loader_build_stack(&a, &without), 0);
	a.sysinfo_ehdr = 0x7ffdf7fc9000;
	cr_assert_eq(loader_build_stack(&a, &s), 0);
	cr_assert_eq(s.auxv_len, LOADER_AUXV_WORDS);
	cr_assert_eq(s.auxv[0], LINUX_AT_SYSINFO_EHDR);
	cr_assert_eq(s.auxv[1], 0x7ffdf7fc9000);
	/* The rest is as without it. */
	cr_assert_eq(memcmp(s.auxv + 2, without.auxv, (size_t)without.auxv_len * 8), 0);
	loader_stack_free(&s);
	loader_stack_free(&without);
}

Test(stack, auxv_values_and_order)
{
	struct loader_stack_args a = default_args();
	struct loader_stack s;
	static const uint64_t order[] = {
		LINUX_AT_MINSIGSTKSZ, LINUX_AT_HWCAP,  LINUX_AT_PAGESZ,	  LINUX_AT_CLKTCK,
		LINUX_AT_PHDR,	      LINUX_AT_PHENT,  LINUX_AT_PHNUM,	  LINUX_AT_BASE,
		LINUX_AT_FLAGS,	      LINUX_AT_ENTRY,  LINUX_AT_UID,	  LINUX_AT_EUID,
		LINUX_AT_GID,	      LINUX_AT_EGID,   LINUX_AT_SECURE,	  LINUX_AT_RANDOM,
		LINUX_AT_HWCAP2,      LINUX_AT_EXECFN, LINUX_AT_PLATFORM, LINUX_AT_NULL,
	};
	uint64_t rnd, plat;

	cr_assert_eq(loader_build_stack(&a, &s), 0);
	for (size_t i = 0; i < ARRAY_SIZE(order); i++)
		cr_assert_eq(s.auxv[2 * i], order[i], "auxv entry %zu", i);
	cr_assert_eq(aux_get(&s, LINUX_AT_MINSIGSTKSZ), 3632);
	cr_assert_eq(aux_get(&s, LINUX_AT_HWCAP), 0x178bfbff);
	cr_assert_eq(aux_get(&s, LINUX_AT_PAGESZ), 4096);
	cr_assert_eq(aux_get(&s, LINUX_AT_CLKTCK), 100);
	cr_assert_eq(aux_get(&s, LINUX_AT_PHDR), 0x555555554040);
	cr_assert_eq(aux_get(&s, LINUX_AT_PHENT), 56);
	cr_assert_eq(aux_get(&s, LINUX_AT_PHNUM), 13);
	cr_assert_eq(aux_get(&s, LINUX_AT_BASE), 0x7ffff7fc3000);
	cr_assert_eq(aux_get(&s, LINUX_AT_FLAGS), 0);
	cr_assert_eq(aux_get(&s, LINUX_AT_ENTRY), 0x5555555563d0);
	cr_assert_eq(aux_get(&s, LINUX_AT_UID), 1000);
	cr_assert_eq(aux_get(&s, LINUX_AT_EUID), 1001);
	cr_assert_eq(aux_get(&s, LINUX_AT_GID), 100);
	cr_assert_eq(aux_get(&s, LINUX_AT_EGID), 101);
	cr_assert_eq(aux_get(&s, LINUX_AT_SECURE), 0);
	cr_assert_eq(aux_get(&s, LINUX_AT_HWCAP2), 2);
	rnd = aux_get(&s, LINUX_AT_RANDOM);
	plat = aux_get(&s, LINUX_AT_PLATFORM);
	cr_assert_eq(memcmp(s.image + (rnd - s.sp), a.random, 16), 0);
	cr_assert_str_eq(str_at(&s, plat), "x86_64");
	/* Platform string below the 16-aligned strings, random bytes right below it. */
	cr_assert_eq(plat + 7, s.arg_start & ~15ULL);
	cr_assert_eq(rnd + 16, plat);
	/* The tables end below the random bytes. */
	cr_assert_leq(auxv_addr(&s) + (uint64_t)s.auxv_len * 8, rnd);
	loader_stack_free(&s);
}

Test(stack, sp_is_aligned_for_every_count_of_arguments)
{
	char *argv[8] = { 0 }, *envp[8] = { 0 };
	const char *words[] = { "a", "bb", "ccc", "dddd", "eeeee", "ffffff", "ggggggg" };

	for (int na = 0; na < 7; na++) {
		for (int ne = 0; ne < 7; ne++) {
			struct loader_stack_args a = default_args();
			struct loader_stack s;

			for (int i = 0; i < 8; i++)
				argv[i] = envp[i] = NULL;
			for (int i = 0; i < na; i++)
				argv[i] = (char *)words[i];
			for (int i = 0; i < ne; i++)
				envp[i] = (char *)words[6 - i];
			a.argv = argv;
			a.envp = envp;
			cr_assert_eq(loader_build_stack(&a, &s), 0);
			cr_assert_eq(s.sp % 16, 0, "argc %d envc %d", na, ne);
			cr_assert_eq(word_at(&s, s.sp), (uint64_t)na);
			cr_assert_eq(word_at(&s, s.sp + 8 + (uint64_t)na * 8), 0);
			/* No more than 15 bytes of padding between the tables and the random bytes. */
			cr_assert_lt(aux_get(&s, LINUX_AT_RANDOM) -
					     (auxv_addr(&s) + (uint64_t)s.auxv_len * 8),
				     16);
			loader_stack_free(&s);
		}
	}
}

Test(stack, misaligned_top_is_einval)
{
	struct loader_stack_args a = default_args();
	struct loader_stack s;

	a.top = TOP - 8;
	cr_assert_eq(loader_build_stack(&a, &s), -EINVAL);
	cr_assert_null(s.image);
}

Test(stack, image_larger_than_the_stack_is_e2big)
{
	struct loader_stack_args a = default_args();
	struct loader_stack s;

	a.size = 256;
	cr_assert_eq(loader_build_stack(&a, &s), -E2BIG);
	cr_assert_null(s.image);
}

Test(stack, arg_limit_follows_linux)
{
	cr_assert_eq(loader_arg_limit(8 << 20), 2 << 20);
	cr_assert_eq(loader_arg_limit(1 << 20), 256 << 10);
	cr_assert_eq(loader_arg_limit(100 << 10), 128 << 10);
	cr_assert_eq(loader_arg_limit(RLIM_INFINITY), 6 << 20);
}

Test(stack, one_string_longer_than_max_arg_strlen_is_e2big)
{
	char *big = malloc(LOADER_MAX_ARG_STRLEN + 1);
	char *argv[] = { "x", big, NULL };
	char *envp[] = { big, NULL };
	char *none[] = { NULL };

	memset(big, 'z', LOADER_MAX_ARG_STRLEN);
	/* 131071 characters and the NUL fit exactly. */
	big[LOADER_MAX_ARG_STRLEN - 1] = '\0';
	cr_assert_eq(loader_check_args(argv, none, "/x", 6 << 20), 0);
	cr_assert_eq(loader_check_args(none, envp, "/x", 6 << 20), 0);
	big[LOADER_MAX_ARG_STRLEN - 1] = 'z';
	big[LOADER_MAX_ARG_STRLEN] = '\0';
	cr_assert_eq(loader_check_args(argv, none, "/x", 6 << 20), -E2BIG);
	cr_assert_eq(loader_check_args(none, envp, "/x", 6 << 20), -E2BIG);
	cr_assert_eq(loader_check_args(none, none, big, 6 << 20), -E2BIG);
	free(big);
}

Test(stack, total_above_the_limit_is_e2big)
{
	enum { N = 5 };
	char *envp[N + 1] = { 0 };
	char *argv[] = { "x", NULL };
	uint64_t limit = loader_arg_limit(1 << 20); /* 256 KiB */
	uint64_t used;

	for (int i = 0; i < N; i++) {
		envp[i] = malloc(60000);
		memset(envp[i], 'e', 59999);
		envp[i][59999] = '\0';
	}
	/* 5 * 60000 bytes of strings > 256 KiB. */
	cr_assert_eq(loader_check_args(argv, envp, "/x", limit), -E2BIG);
	free(envp[4]);
	envp[4] = NULL;
	/* 4 * 60000 + "x" + "/x" + 5 pointers (argv[0] and 4 envp) fit. */
	used = 4 * 60000 + 2 + 3 + 5 * 8;
	cr_assert_leq(used, limit);
	cr_assert_eq(loader_check_args(argv, envp, "/x", limit), 0);
	/* Exactly at the limit fits, one byte more does not. */
	cr_assert_eq(loader_check_args(argv, envp, "/x", used), 0);
	cr_assert_eq(loader_check_args(argv, envp, "/x", used - 1), -E2BIG);
	for (int i = 0; i < N - 1; i++)
		free(envp[i]);
}

Test(stack, build_refuses_what_check_refuses)
{
	struct loader_stack_args a = default_args();
	struct loader_stack s;

	a.limit = 40;
	cr_assert_eq(loader_build_stack(&a, &s), -E2BIG);
	cr_assert_null(s.image);
}

/*
 * The host kernel built this process's stack with the same rules: check that the relations
 * the builder follows hold there too (they do not depend on ASLR).
 */
static uint64_t host_stack_end(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long lo, hi;

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "[stack]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
			fclose(f);
			return hi;
		}
	}
	fclose(f);
	cr_assert_fail("no [stack] in /proc/self/maps");
	return 0;
}

Test(stack, same_relations_as_the_host_kernel)
{
	uint64_t end = host_stack_end();
	uint64_t h_execfn = getauxval(AT_EXECFN), h_random = getauxval(AT_RANDOM);
	uint64_t h_platform = getauxval(AT_PLATFORM);
	struct loader_stack_args a = default_args();
	struct loader_stack s;

	cr_assert_eq(h_execfn + strlen((char *)h_execfn) + 1, end - 8);
	cr_assert_eq(h_random + 16, h_platform);
	cr_assert_eq(loader_build_stack(&a, &s), 0);
	cr_assert_eq(aux_get(&s, LINUX_AT_EXECFN) + strlen(a.execfn) + 1, TOP - 8);
	cr_assert_eq(aux_get(&s, LINUX_AT_RANDOM) + 16, aux_get(&s, LINUX_AT_PLATFORM));
	loader_stack_free(&s);
}

Test(stack, auxv_keys_in_the_host_kernels_order)
{
	FILE *f = fopen("/proc/self/auxv", "rb");
	uint64_t host[128], ours[LOADER_AUXV_WORDS];
	size_t n, nh = 0, matched = 0;
	struct loader_stack_args a = default_args();
	struct loader_stack s;
	int j = 0;

	cr_assert_not_null(f);
	a.sysinfo_ehdr = 0x7ffdf7fc9000; /* the host has a vDSO */
	n = fread(host, 8, ARRAY_SIZE(host), f);
	fclose(f);
	cr_assert_eq(loader_build_stack(&a, &s), 0);
	memcpy(ours, s.auxv, sizeof(ours));
	/* Every key of ours appears in the host's vector, in the same relative order. */
	for (size_t i = 0; i + 1 < n; i += 2, nh++) {
		if (j < s.auxv_len && host[i] == ours[j]) {
			j += 2;
			matched++;
		}
		if (host[i] == LINUX_AT_NULL)
			break;
	}
	cr_assert_eq(j, s.auxv_len, "our key %lu is missing or out of the host's order",
		     (unsigned long)(j < s.auxv_len ? ours[j] : 0));
	cr_assert_eq(matched, LOADER_AUXV_WORDS / 2);
	cr_assert_gt(nh, 0);
	loader_stack_free(&s);
}
