/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The memory file: one memfd per sandbox holding all guest memory (DESIGN.md rule 6).
 * The sentry maps the whole file once (MAP_SHARED|MAP_NORESERVE) and reaches guest memory
 * through that mapping; stubs map ranges of it at guest addresses.
 *
 * The allocator hands out page-aligned extents of file offsets. Freed extents are punched out
 * (FALLOC_FL_PUNCH_HOLE) so their memory returns to the host. Thread-safe.
 *
 * Pages are reference counted (copy-on-write after fork, MAP_SHARED|MAP_ANONYMOUS memory shared
 * by several address spaces): an allocated page has one reference; memfile_ref adds one;
 * memfile_free drops one and returns the page only when it dropped the last. The counts live in
 * a sparse array of "extra" references (0 for a page with a single owner), so memory nobody
 * shares costs nothing there.
 */
#ifndef HUSK_SENTRY_MM_MEMFILE_H
#define HUSK_SENTRY_MM_MEMFILE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct memfile {
	int fd;
	uint8_t *base; /* sentry mapping of [0, size) */
	uint64_t size;
	pthread_mutex_t lock;
	void *alloc; /* allocator state, private to memfile.c; protected by lock */
	uint32_t *extra_refs; /* per page: references beyond the first (atomics; sparse mapping) */
	uint64_t shared_pages; /* atomic: pages whose extra_refs is non-zero */
	bool ending; /* atomic: the sandbox ends (memfile_set_ending): frees are no-ops */

	/*
	 * Memory accounting (memory cgroup semantics; see README.md "Accounting"). Usage is what
	 * the host holds for the file (its allocated blocks): every page counts once however
	 * many mappings share it, and a freed (punched) page stops counting. All atomics.
	 */
	uint64_t limit; /* bytes; 0: no limit */
	bool lazy; /* anonymous memory is populated on first touch (set with the first limit) */
	uint64_t peak; /* highest usage seen */
	uint64_t events_max, events_oom, events_oom_kill; /* memory.events counters */
	/*
	 * Called (without memfile locks) when need more bytes would take usage past the limit:
	 * frees memory (kills a process) and returns 0 when the caller should check again, or
	 * -ENOMEM when nothing more can be done (or the caller itself was chosen). NULL: none.
	 */
	int (*oom)(struct memfile *mf, uint64_t need, void *arg);
	void *oom_arg;
	/*
	 * A pod member's memory limit (sentry/control/container.c): told of len > 0 more bytes
	 * the calling task's process is about to use (memfile_charge_hook: first touches of lazy
	 * anonymous memory, the sentry's writes into it, memfile_charge), with no mm or memfile
	 * lock held; it may kill a process of the caller's container. NULL: none. Once set
	 * (atomically, after charge_arg and lazy), allocations are reported even without a limit.
	 */
	void (*charge_hook)(struct memfile *mf, uint64_t len, void *arg);
	void *charge_arg;

	/* A restored checkpoint's pages not loaded yet (image.c); NULL otherwise. Atomic. */
	struct memfile_image *image;
};

/*
 * Lazy restore (image.c): the ranges [off[i], off[i]+len[i]) hold the pages file fd's bytes at
 * file_off[i] (UINT64_MAX: zeros), loaded the first time memfile_image_load covers them; fd
 * stays open. memfile_image_forget: the pages of the range no longer want the image's bytes
 * (freed or zeroed). memfile_image_pending: whether any page of the range is still to load.
 * All thread-safe; without an image each is one atomic load.
 */
struct memfile_image;
int memfile_image_attach(struct memfile *mf, int fd, const uint64_t *off, const uint64_t *len,
			 const uint64_t *file_off, size_t n);
int memfile_image_load(struct memfile *mf, uint64_t off, uint64_t len);
void memfile_image_forget(struct memfile *mf, uint64_t off, uint64_t len);
bool memfile_image_pending(struct memfile *mf, uint64_t off, uint64_t len);
/* The pages file's fd (to map it: sentry/mm's VMA_IMAGE), or -1 without an image. */
int memfile_image_fd(struct memfile *mf);
/*
 * True when every page of [off, off+len) is still to load and the range lies in one range of
 * the image: *file_off is then its offset in the pages file (the pages may be mapped from it).
 */
bool memfile_image_mappable(struct memfile *mf, uint64_t off, uint64_t len, uint64_t *file_off);
/*
 * The first run of pages still to load in [off, end) (page aligned) that is contiguous in the
 * pages file: true with [*start, *stop) and its *file_off there; false if none. A checkpoint of a
 * restored sandbox copies such runs from the old pages file without loading them.
 */
bool memfile_image_next_pending(struct memfile *mf, uint64_t off, uint64_t end, uint64_t *start,
				uint64_t *stop, uint64_t *file_off);
/*
 * Where the image holds the bytes of off: true with *file_off when off lies in a range of the
 * image's pages, false otherwise (not in the image, or zeros). Either way *run is how many bytes
 * from off (at most len) the answer holds for, contiguously.
 */
bool memfile_image_translate(struct memfile *mf, uint64_t off, uint64_t len, uint64_t *file_off,
			     uint64_t *run);

/* Creates a memfd of size bytes (sparse) and maps it. Returns 0 or -errno. */
int memfile_init(struct memfile *mf, uint64_t size);
void memfile_destroy(struct memfile *mf);

/*
 * Allocates len bytes (page multiple). Returns the offset (>= 0) or -ENOMEM. Contents are zero.
 * The caller is about to fill the pages (tmpfs data, page caches): with a limit, the allocation
 * is charged first (memfile_charge) and fails with -ENOMEM if it cannot be.
 */
int64_t memfile_alloc(struct memfile *mf, uint64_t len);
/*
 * memfile_alloc and memfile_alloc_at without the charge: for memory that is populated (and
 * checked against the limit) later, page by page (sentry/mm's anonymous memory).
 */
int64_t memfile_alloc_nocharge(struct memfile *mf, uint64_t len);
int memfile_alloc_at_nocharge(struct memfile *mf, uint64_t off, uint64_t len);

/*
 * Bytes of memory the file holds on the host now (its allocated blocks: pages that were
 * touched and not freed since). Updates the peak. One fstat(2).
 */
uint64_t memfile_usage(struct memfile *mf);
/* True when len more bytes fit under the limit (always true without one). */
bool memfile_fits(struct memfile *mf, uint64_t len);
/*
 * Makes room for len more bytes under the limit: while they do not fit, counts a memory.events
 * "max" event and calls mf->oom (which kills a process). Returns 0 when they fit (or there is no
 * limit), -ENOMEM when the oom hook gave up (or there is none). May block while a victim exits.
 */
int memfile_charge(struct memfile *mf, uint64_t len);
/* Calls mf->charge_hook (when set) for len more bytes. No mm or memfile lock may be held. */
void memfile_charge_hook(struct memfile *mf, uint64_t len);
/*
 * Sets the limit (0: none). A limit also turns on lazy population of anonymous memory for the
 * mappings made from now on (mf->lazy). Does not reclaim: see oom_set_memory_limit.
 */
void memfile_set_limit(struct memfile *mf, uint64_t limit);
/* Pages of [off, off+len) that the host holds (resident), found with SEEK_DATA/SEEK_HOLE. */
uint64_t memfile_resident(struct memfile *mf, uint64_t off, uint64_t len);
/*
 * Drops one reference on each page of [off, off+len). Pages whose last reference this was go
 * back to the allocator and their memory to the host; pages still referenced by someone else
 * (memfile_ref) stay as they are. Any page-aligned sub-range of allocated space may be freed on
 * its own; each reference must be dropped exactly once. Thread-safe without the caller's locks.
 */
void memfile_free(struct memfile *mf, uint64_t off, uint64_t len);

/*
 * The sandbox is ending (pid 1's process exits): from now on memfile_free returns nothing to the
 * allocator or the host (the memfd goes with the sentry; punching every freed range was most
 * of the sentry's exit). Freed pages are never reused, so no one sees another's stale data.
 * Thread-safe.
 */
void memfile_set_ending(struct memfile *mf);

/*
 * Adds one reference to each page of [off, off+len), which must be allocated (fork sharing a
 * VMA's pages). Each reference is dropped by its own memfile_free. Thread-safe.
 */
void memfile_ref(struct memfile *mf, uint64_t off, uint64_t len);

/* Number of references on the allocated page at off (1 when one owner has it alone). */
uint32_t memfile_page_refs(struct memfile *mf, uint64_t off);

/* Number of allocated pages that currently have more than one reference. */
uint64_t memfile_shared_pages(struct memfile *mf);

/*
 * Allocates exactly [off, off+len) if all of it is free (sentry/mm uses it to keep a growing
 * mapping's pages contiguous). Returns 0, -ENOMEM if any of it is in use, -EINVAL if the range
 * is unaligned, empty or past the end of the file. Contents are zero. Charged as memfile_alloc.
 */
int memfile_alloc_at(struct memfile *mf, uint64_t off, uint64_t len);
/*
 * Zeroes allocated pages [off, off+len) by punching a hole (their memory returns to the host;
 * every mapping of them reads zero). Returns 0, or -errno if the hole could not be punched (the
 * range is then cleared with memset, so it reads zero either way).
 */
int memfile_zero(struct memfile *mf, uint64_t off, uint64_t len);
/* Bytes currently free in the allocator. */
uint64_t memfile_free_bytes(struct memfile *mf);
/* Number of disjoint free extents (1 when nothing is allocated: frees coalesce). */
size_t memfile_free_extents(struct memfile *mf);

/* Sentry pointer to offset off. */
static inline void *memfile_ptr(struct memfile *mf, uint64_t off)
{
	return mf->base + off;
}

#endif
