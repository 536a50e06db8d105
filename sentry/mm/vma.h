/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to sentry/mm: the VMA set of an mm.
 *
 * A sorted array of disjoint VMAs (binary search by address; inserts and removals move the
 * tail). Every page of a VMA holds one reference on one memory-file page: page start + i*4K is
 * backed by file offset off + i*4K. Splitting a VMA just computes the offsets of the pieces,
 * and removing a piece drops exactly its pages' references, so each reference is dropped once.
 * Pages are shared between mms after fork (VMA_COW, MM_VMA_SHARED) through memfile_ref.
 *
 * All functions expect mm->lock held. Functions that add entries need capacity reserved with
 * vma_set_reserve() first, so that an operation can fail only before it changes anything.
 */
#ifndef HUSK_SENTRY_MM_VMA_H
#define HUSK_SENTRY_MM_VMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct file;
struct memfile;

/*
 * Internal VMA flag (never in struct mm_vma_info): the VMA's private pages may be shared with
 * another mm since a fork. The platform maps them without PROT_WRITE; the first write faults and
 * mm_handle_fault copies the page (or takes it over if the other sharers are gone).
 */
#define VMA_COW 0x10000u
/*
 * Internal VMA flag: a MAP_SHARED file mapping of a file not open for writing; mprotect may not
 * add PROT_WRITE to it (Linux's missing VM_MAYWRITE).
 */
#define VMA_NOWRITE 0x20000u
/*
 * Internal VMA flag: anonymous memory not populated yet (with a memory limit only). The platform
 * maps the pages PROT_NONE; the first access faults and mm_handle_fault checks the limit, then
 * gives a window of pages the VMA's protection (fault.c). Never set without mf->lazy.
 */
#define VMA_LAZY 0x40000u
/*
 * Internal VMA flag: pages of a file mapping wholly past the end of the file (as it was when
 * last looked at). The platform maps them PROT_NONE; an access faults and mm_handle_fault
 * gives SIGBUS (BUS_ADRERR), as Linux, unless the file has grown over the page since: then the
 * page gets the VMA's protection.
 */
#define VMA_EOF 0x80000u
/*
 * Internal VMA flag: pages of a restore's image not written since (sentry/mm/image.c), which
 * the platform maps from the pages file itself (as_map_image: private, never writable), so that
 * every restore of one image shares them in the host's page cache. Like VMA_COW, the first
 * write faults: the page is read into the memory file (at the VMA's offset, where it belongs)
 * and the platform maps that instead (image_resolve in fault.c). The memory-file page holds the
 * image's bytes or is still to load, and nothing writes it in place while any mm maps it so:
 * every writer of a private page resolves first. Never on shared (MM_VMA_SHARED) memory.
 */
#define VMA_IMAGE 0x100000u

struct vma {
	uint64_t start, end;
	uint64_t off; /* memory-file offset of start */
	int prot; /* PROT_READ|PROT_WRITE|PROT_EXEC */
	unsigned int flags; /* MM_VMA_* */
	struct file *file; /* referenced; file mappings only */
	uint64_t file_off; /* offset in file of start; shared anonymous memory: in its object */
	/*
	 * Shared anonymous memory (MAP_SHARED|MAP_ANONYMOUS, /dev/zero): the object it maps (a
	 * number unique in the sandbox, 0 for other VMAs) and the object's size, fixed at mmap as
	 * Linux's shmem file. Pages of the mapping past that size (mremap growth) are VMA_EOF.
	 */
	uint64_t obj, obj_size;
};

struct vma_set {
	struct vma *v; /* sorted by start, disjoint */
	size_t n, cap;
};

/* Index of the first VMA whose end is above addr (n if none). */
size_t vma_lower_bound(const struct vma_set *s, uint64_t addr);
/* The VMA containing addr, or NULL. */
struct vma *vma_find(const struct vma_set *s, uint64_t addr);
/* True when no VMA intersects [start, end). */
bool vma_range_free(const struct vma_set *s, uint64_t start, uint64_t end);
/* True when [start, end) is covered by VMAs with no hole. */
bool vma_range_mapped(const struct vma_set *s, uint64_t start, uint64_t end);

/* Makes room for extra more entries. Returns 0 or -ENOMEM. */
int vma_set_reserve(struct vma_set *s, size_t extra);
/* Inserts v at index i (sorted position; capacity reserved). Takes over v's file reference. */
void vma_insert_at(struct vma_set *s, size_t i, const struct vma *v);
/* Inserts v at its sorted position (capacity reserved). Returns its index. */
size_t vma_insert(struct vma_set *s, const struct vma *v);
/* Removes entries [i, i+count) without freeing anything. */
void vma_remove_at(struct vma_set *s, size_t i, size_t count);
/*
 * Splits entry i at addr (start < addr < end, page aligned) into i and i+1 (capacity
 * reserved); the second piece takes a new reference on the file.
 */
void vma_split(struct vma_set *s, size_t i, uint64_t addr);
/*
 * Splits at start and end so that [start, end) is made of whole entries. Returns the index of
 * the first entry at or above start. Needs 2 reserved entries.
 */
size_t vma_isolate(struct vma_set *s, uint64_t start, uint64_t end);
/*
 * Drops entry v's reference on its pages (freeing those nobody else holds) and its file
 * reference. Does not remove it from the set.
 */
void vma_release(struct memfile *mf, struct vma *v);
/* Merges compatible neighbours among entries [lo, hi] (clamped to the set). */
void vma_merge_range(struct vma_set *s, size_t lo, size_t hi);

#endif
