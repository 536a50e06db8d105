/* SPDX-License-Identifier: Apache-2.0 */
/*
 * In-memory stand-ins for the VFS and mm functions that loader_load() calls (vfs_open,
 * file_getattr, file_pread, file_put, mm_mmap, mm_poke, mm_copy_out), so that the loader can be
 * tested without a gofer, a memory file or a platform. Only the loader's test links them.
 *
 * Files: a table of guest paths, each either bytes given by the test or a copy of a host file.
 * Memory: a page table of the fake address space; each mmap call is logged.
 */
#ifndef HUSK_TESTS_LOADER_FAKE_ENV_H
#define HUSK_TESTS_LOADER_FAKE_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mm;

/* Forgets every file, page and logged call. */
void fake_reset(void);

/* Forgets the pages and logged calls only (a fresh address space; the files stay). */
void fake_reset_memory(void);

/* Adds a file at path with a copy of data. */
void fake_add_file(const char *path, const void *data, size_t len, uint32_t mode, uint32_t uid,
		   uint32_t gid);
/* Adds a file at path with the contents and mode of the host file host_path. */
void fake_add_host_file(const char *path, const char *host_path);
/* Number of files opened and not yet put. */
int fake_open_files(void);

struct fake_mmap_call {
	uint64_t addr, len;
	int prot, flags;
	bool file;
	uint64_t off;
	long ret;
};
/* The mmap calls so far, in order. */
const struct fake_mmap_call *fake_mmap_calls(int *n);

/* Reads guest memory ignoring protections; false if a page is not mapped. */
bool fake_peek(uint64_t addr, void *buf, size_t len);
/* Protection of the page holding addr, or -1 if unmapped. */
int fake_prot(uint64_t addr);

#endif
