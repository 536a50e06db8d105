/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The program loader: ELF64 x86-64 executables (static, dynamic with PT_INTERP, PIE and
 * non-PIE) and `#!` scripts, and the initial stack (argv, envp, auxv).
 */
#ifndef HUSK_SENTRY_LOADER_H
#define HUSK_SENTRY_LOADER_H

#include <stddef.h>
#include <stdint.h>
#include <elf.h>

struct task;
struct mm;

/* What elf_parse() learned from an ELF header and its program headers. */
struct elf_info {
	uint16_t type; /* ET_EXEC or ET_DYN */
	uint64_t entry;
	uint64_t phoff;
	uint16_t phnum;
	uint64_t min_vaddr, max_vaddr; /* page-aligned span of the PT_LOAD segments */
	int interp_index; /* index of PT_INTERP in phdrs, or -1 */
	uint64_t stack_prot; /* PROT_* from PT_GNU_STACK */
	Elf64_Phdr phdrs[64];
};

/*
 * Validates and decodes an ELF64 x86-64 image from its first len bytes (header and program
 * headers must lie within them) and the file's total size. Rejects truncated headers, wrong
 * class/machine/type, absurd phnum, overlapping, misaligned or huge segments, segments beyond the
 * file, more than one PT_INTERP. Returns 0 or -ENOEXEC. Pure function: no I/O.
 */
int elf_parse(const void *buf, size_t len, uint64_t file_size, struct elf_info *out);

struct loader_result {
	uint64_t entry; /* where the guest starts (the interpreter's entry if there is one) */
	uint64_t sp; /* initial stack pointer: argc */
};

/*
 * Loads the program at path for t into mm (a fresh, empty mm): resolves path in t's fs
 * context, follows `#!` (up to 4 levels; the script path becomes an argument), maps the
 * segments and interpreter, sets mm's brk and layout, builds the stack with argv, envp and
 * auxv. t->cred supplies AT_UID etc.; argv/envp are sentry strings. Returns 0 or -errno
 * (-ENOENT, -EACCES, -ENOEXEC, -E2BIG, -ENOMEM, -ELOOP).
 */
int loader_load(struct task *t, struct mm *mm, const char *path, char *const argv[],
		char *const envp[], struct loader_result *res);

#endif
