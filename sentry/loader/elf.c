/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elf_parse(): validation and decoding of an ELF64 x86-64 header and its program headers.
 *
 * Everything here is pure: no I/O, no allocation, and no read outside buf. The image comes from
 * the guest's filesystem, so every field is hostile until checked, and every sum of two fields
 * is computed with overflow checks.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/mman.h>

#include "common/util.h"
#include "sentry/loader/loader.h"
#include "sentry/platform/platform.h"

static bool is_pow2_or_zero(uint64_t x)
{
	return (x & (x - 1)) == 0;
}

/* Checks one PT_LOAD and that it starts at or after *prev_end (a page-aligned address). */
static int check_load(const Elf64_Phdr *ph, uint64_t file_size, bool first, uint64_t *prev_end)
{
	uint64_t file_end, mem_end, start, end;

	if (ph->p_filesz > ph->p_memsz)
		return -ENOEXEC;
	if (add_overflow(ph->p_offset, ph->p_filesz, &file_end))
		return -ENOEXEC;
	/* The offset of an all-bss segment is never used; only a segment with bytes needs them. */
	if (ph->p_filesz && file_end > file_size)
		return -ENOEXEC;
	if (!is_pow2_or_zero(ph->p_align))
		return -ENOEXEC;
	/* mmap needs file offset and address congruent modulo the page size. */
	if ((ph->p_vaddr - ph->p_offset) & (PAGE_SIZE - 1))
		return -ENOEXEC;
	if (add_overflow(ph->p_vaddr, ph->p_memsz, &mem_end))
		return -ENOEXEC;
	if (mem_end > UINT64_MAX - (PAGE_SIZE - 1))
		return -ENOEXEC;
	start = PAGE_ALIGN_DOWN(ph->p_vaddr);
	end = PAGE_ALIGN_UP(mem_end);
	if (!first && start < *prev_end)
		return -ENOEXEC; /* descending, or sharing a page with the previous segment */
	*prev_end = end;
	return 0;
}

static int check_interp(const Elf64_Phdr *ph, const uint8_t *buf, size_t len, uint64_t file_size)
{
	uint64_t end;

	/* At least one character and the NUL; PATH_MAX counts the NUL, as in Linux. */
	if (ph->p_filesz < 2 || ph->p_filesz > PATH_MAX)
		return -ENOEXEC;
	if (add_overflow(ph->p_offset, ph->p_filesz, &end) || end > file_size)
		return -ENOEXEC;
	/* The caller (loader_load) checks the NUL itself when the path lies beyond buf. */
	if (end <= len && buf[end - 1] != '\0')
		return -ENOEXEC;
	return 0;
}

int elf_parse(const void *buf, size_t len, uint64_t file_size, struct elf_info *out)
{
	const uint8_t *b = buf;
	Elf64_Ehdr eh;
	uint64_t table_end, prev_end = 0;
	bool have_load = false;
	int n_interp = 0;

	if (!buf || !out)
		return -ENOEXEC;
	/* Only the bytes that belong to the file count. */
	if (len > file_size)
		len = file_size;
	if (len < sizeof(eh))
		return -ENOEXEC;
	memcpy(&eh, b, sizeof(eh));

	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
		return -ENOEXEC;
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_ident[EI_VERSION] != EV_CURRENT || eh.e_version != EV_CURRENT)
		return -ENOEXEC;
	if (eh.e_machine != EM_X86_64)
		return -ENOEXEC;
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		return -ENOEXEC;
	if (eh.e_phentsize != sizeof(Elf64_Phdr))
		return -ENOEXEC;
	if (eh.e_phnum == 0 || eh.e_phnum > ARRAY_SIZE(out->phdrs))
		return -ENOEXEC;
	/* phnum <= 64, so the product cannot overflow; the sum can. */
	if (add_overflow(eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr), &table_end))
		return -ENOEXEC;
	if (table_end > len)
		return -ENOEXEC;

	memset(out, 0, sizeof(*out));
	out->type = eh.e_type;
	out->entry = eh.e_entry;
	out->phoff = eh.e_phoff;
	out->phnum = eh.e_phnum;
	out->interp_index = -1;
	out->stack_prot = PROT_READ | PROT_WRITE;
	memcpy(out->phdrs, b + eh.e_phoff, (size_t)eh.e_phnum * sizeof(Elf64_Phdr));

	for (int i = 0; i < eh.e_phnum; i++) {
		const Elf64_Phdr *ph = &out->phdrs[i];

		switch (ph->p_type) {
		case PT_LOAD:
			if (check_load(ph, file_size, !have_load, &prev_end))
				return -ENOEXEC;
			if (!have_load)
				out->min_vaddr = PAGE_ALIGN_DOWN(ph->p_vaddr);
			out->max_vaddr = prev_end;
			have_load = true;
			break;
		case PT_INTERP:
			if (++n_interp > 1)
				return -ENOEXEC;
			if (check_interp(ph, b, len, file_size))
				return -ENOEXEC;
			out->interp_index = i;
			break;
		case PT_GNU_STACK:
			out->stack_prot = PROT_READ | PROT_WRITE;
			if (ph->p_flags & PF_X)
				out->stack_prot |= PROT_EXEC;
			break;
		default:
			break;
		}
	}

	if (!have_load)
		return -ENOEXEC;
	if (out->max_vaddr - out->min_vaddr >= PLATFORM_GUEST_MAX)
		return -ENOEXEC;
	/* A fixed-address program must fit where guest memory can be. */
	if (out->type == ET_EXEC && out->max_vaddr > PLATFORM_GUEST_MAX)
		return -ENOEXEC;
	return 0;
}
