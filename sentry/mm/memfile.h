/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The memory file: one memfd per sandbox holding all guest memory (DESIGN.md rule 6).
 * The sentry maps the whole file once (MAP_SHARED|MAP_NORESERVE) and reaches guest memory
 * through that mapping; stubs map ranges of it at guest addresses.
 *
 * The allocator hands out page-aligned extents of file offsets. Freed extents are punched out
 * (FALLOC_FL_PUNCH_HOLE) so their memory returns to the host. Thread-safe.
 */
#ifndef HUSK_SENTRY_MM_MEMFILE_H
#define HUSK_SENTRY_MM_MEMFILE_H

#include <pthread.h>
#include <stdint.h>

struct memfile {
	int fd;
	uint8_t *base; /* sentry mapping of [0, size) */
	uint64_t size;
	pthread_mutex_t lock;
	void *alloc; /* allocator state, private to memfile.c; protected by lock */
};

/* Creates a memfd of size bytes (sparse) and maps it. Returns 0 or -errno. */
int memfile_init(struct memfile *mf, uint64_t size);
void memfile_destroy(struct memfile *mf);

/* Allocates len bytes (page multiple). Returns the offset (>= 0) or -ENOMEM. Contents are zero. */
int64_t memfile_alloc(struct memfile *mf, uint64_t len);
/* Returns [off, off+len) to the allocator and releases its memory to the host. */
void memfile_free(struct memfile *mf, uint64_t off, uint64_t len);

/* Sentry pointer to offset off. */
static inline void *memfile_ptr(struct memfile *mf, uint64_t off)
{
	return mf->base + off;
}

#endif
