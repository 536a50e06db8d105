/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test doubles for sentry/mm: a fake platform that records every call and keeps its own view of
 * the guest address space, a kernel with a real (sparse) memory file, and a file over a buffer.
 */
#ifndef HUSK_TESTS_UNIT_MM_FAKE_H
#define HUSK_TESTS_UNIT_MM_FAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sentry/kernel/kernel.h"
#include "sentry/mm/mm.h"
#include "sentry/platform/platform.h"
#include "sentry/vfs/vfs.h"

#define FAKE_MEMFILE_SIZE (1ULL << 30)

enum fake_op { FAKE_MAP, FAKE_UNMAP, FAKE_PROTECT };

struct fake_call {
	enum fake_op op;
	uint64_t addr, len;
	int prot;
	uint64_t off;
};

/* One range of the fake address space: [start, end) -> memory file at off. */
struct fake_range {
	uint64_t start, end, off;
	int prot;
};

struct fake_as {
	struct fake_call calls[256];
	int ncalls;
	struct fake_range ranges[256];
	int nranges;
	bool destroyed;
	int fail_next; /* when non-zero, the next map/unmap/protect returns it */
};

/* The kernel every test uses; set up by fake_setup(), torn down by fake_teardown(). */
extern struct kernel fake_kernel;
/* The last address space fake as_create made (NULL before). */
extern struct fake_as *fake_last_as;
extern int fake_as_destroyed;

void fake_setup(void);
void fake_teardown(void);
/* Forgets the calls recorded so far. */
void fake_clear_calls(struct fake_as *as);
/* True when the fake platform's view of the address space equals mm's VMAs. */
bool fake_matches_mm(struct mm *mm);
/* The range of the fake space containing addr, or NULL. */
const struct fake_range *fake_range_at(struct fake_as *as, uint64_t addr);

/* Number of VMAs of mm, and the VMA containing addr (false if none). */
int vma_count(struct mm *mm);
bool vma_at(struct mm *mm, uint64_t addr, struct mm_vma_info *out);

/* A read-only file over a buffer (not copied). reads counts calls of its read op. */
struct buf_file {
	struct file f;
	const uint8_t *data;
	size_t size;
	int reads;
};
void buf_file_init(struct buf_file *bf, const void *data, size_t size, int flags);

#endif
