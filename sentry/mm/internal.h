/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to sentry/mm: helpers shared by mm.c (mapping calls), fault.c (fork and
 * copy-on-write) and io.c (guest memory access).
 */
#ifndef HUSK_SENTRY_MM_INTERNAL_H
#define HUSK_SENTRY_MM_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>

#include "sentry/kernel/kernel.h"
#include "sentry/mm/memfile.h"
#include "sentry/mm/mm.h"
#include "sentry/mm/vma.h"
#include "sentry/platform/platform.h"

/* Room any single operation may add to the VMA set, reserved before it changes anything. */
#define VMA_RESERVE 8

static inline struct vma_set *vset(struct mm *mm)
{
	return mm->vmas;
}

static inline struct memfile *mfile(struct mm *mm)
{
	return &mm->k->mf;
}

/*
 * The platform calls. An mm made by mm_fork has no platform space until mm_activate, which
 * maps every VMA as it then is: until then a change is only recorded in the VMAs.
 */
static inline int plat_map(struct mm *mm, uint64_t addr, uint64_t len, int prot, uint64_t off)
{
	mm->plat_changes++;
	return mm->as ? mm->k->platform->ops->as_map(mm->as, addr, len, prot, off) : 0;
}

static inline int plat_unmap(struct mm *mm, uint64_t addr, uint64_t len)
{
	mm->plat_changes++;
	return mm->as ? mm->k->platform->ops->as_unmap(mm->as, addr, len) : 0;
}

static inline int plat_protect(struct mm *mm, uint64_t addr, uint64_t len, int prot)
{
	mm->plat_changes++;
	return mm->as ? mm->k->platform->ops->as_protect(mm->as, addr, len, prot) : 0;
}

/*
 * The first value of a new mm's plat_changes: 2^32 apart from every other mm's, so that a
 * count remembered for one mm never matches another's.
 */
uint64_t mm_plat_changes_base(void);

/*
 * The protection the platform gives a VMA's pages: copy-on-write pages are not writable, pages
 * not populated yet (VMA_LAZY) are not accessible.
 */
static inline int vma_platform_prot(const struct vma *v)
{
	if (v->flags & (VMA_LAZY | VMA_EOF))
		return PROT_NONE;
	return (v->flags & (VMA_COW | VMA_IMAGE)) ? v->prot & ~PROT_WRITE : v->prot;
}

/*
 * Maps [addr, addr+len) of VMA v in the platform as v says: its pages in the memory file, or
 * (VMA_IMAGE) the image's pages file, with protection prot (vma_platform_prot, or PROT_NONE).
 * mm->lock held. Returns 0 or -errno.
 */
int plat_map_vma(struct mm *mm, const struct vma *v, uint64_t addr, uint64_t len, int prot);

/*
 * Ends VMA_IMAGE for [start, end) (page aligned): the pages are read into the memory file
 * (load) and the platform maps them from there. Pages outside any VMA_IMAGE VMA are skipped.
 * mm->lock held; reserves itself. Returns 0 or -errno.
 */
int image_resolve_locked(struct mm *mm, uint64_t start, uint64_t end, bool load);

/* True when new anonymous memory of mm is to be populated lazily (a memory limit was set). */
static inline bool mm_lazy(struct mm *mm)
{
	return __atomic_load_n(&mfile(mm)->lazy, __ATOMIC_ACQUIRE);
}

/*
 * Resolves copy-on-write for the pages [start, end) (page aligned) of mm: each VMA_COW piece
 * becomes a VMA whose pages this mm owns alone, copied when someone else still holds them and
 * taken over (made writable) otherwise; VMA_IMAGE pieces are resolved (image_resolve_locked)
 * first. Pages outside any VMA are skipped. mm->lock held; needs
 * no reservation (it reserves). Returns 0 or -errno (the pages resolved so far stay resolved).
 */
int cow_resolve_locked(struct mm *mm, uint64_t start, uint64_t end);

/*
 * For the sentry's own accesses: true when addr lies in a VMA_EOF page that the file has grown
 * over since it was marked (the page, and the VMA's pages before the end of the file, are made
 * accessible: the VMA set may have changed). False when addr is a good page already, or a bad
 * address (past the end of the file or object: Linux's EFAULT).
 */
bool eof_revalidate_locked(struct mm *mm, uint64_t addr);

/* patch.c: the child's copy of the parent's patch state (parent->patch_lock held), freeing. */
int mm_patch_fork(struct mm *parent, struct mm *child);
void mm_patch_free(struct mm *mm);

#endif
