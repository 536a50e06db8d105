/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fork(2) for address spaces, and the copy-on-write that makes it cheap.
 *
 * mm_fork shares every page with the child (memfile_ref) instead of copying it. Private VMAs
 * of both mms become VMA_COW: the platform maps their pages without PROT_WRITE, so the first
 * write of either side faults, and mm_handle_fault gives that side a page of its own, by copy
 * if another mm still holds the page, by taking it over (just making it writable) if not.
 * MAP_SHARED|MAP_ANONYMOUS VMAs share the same pages with no copy ever. The sentry's own writes
 * into guest memory (mm_copy_out and friends) resolve copy-on-write first, the same way.
 *
 * A VMA stays a range of contiguous memory-file pages: a copy replaces a run of pages at once
 * by a fresh contiguous run (a new VMA piece), and a fault copies a window of up to
 * COW_WINDOW pages around the faulting one, so that writing through a buffer costs one fault
 * per window and adds few VMAs. A take-over extends to every neighbouring page this mm holds
 * alone: once the other side has exited or exec'd, one fault per VMA makes it all writable.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/err.h"
#include "common/log.h"
#include "common/util.h"
#include "sentry/mm/internal.h"
#include "sentry/vfs/vfs.h"

/* Pages a copy-on-write fault copies at most: the aligned window around the faulting page. */
#define COW_WINDOW 16

/*
 * Pages the first touch of lazily populated memory (VMA_LAZY) makes accessible at most: the
 * aligned window around the touched page. Under a memory limit the usage can pass it by at most
 * this much per faulting thread (pages are counted when touched, not when made accessible).
 */
#define LAZY_WINDOW 32

/* True if this mm holds the memory-file page at off alone. */
static bool page_exclusive(struct mm *mm, uint64_t off)
{
	return memfile_page_refs(mfile(mm), off) == 1;
}

/*
 * Makes [a, b) of a VMA_COW VMA (one VMA, pages held alone) an ordinary VMA: the pages become
 * writable in the platform if the VMA is.
 */
static int cow_take_over(struct mm *mm, uint64_t a, uint64_t b)
{
	struct vma_set *s = vset(mm);
	const struct vma *v = vma_find(s, a);

	/* Pages not populated yet stay inaccessible: their first touch populates them. */
	if ((v->prot & PROT_WRITE) && !(v->flags & (VMA_LAZY | VMA_EOF))) {
		int r = plat_protect(mm, a, b - a, v->prot);
		if (r < 0)
			return r;
	}
	size_t i = vma_isolate(s, a, b);
	s->v[i].flags &= ~VMA_COW;
	vma_merge_range(s, i ? i - 1 : 0, i + 1);
	mm->cow_reused += (b - a) / PAGE_SIZE;
	return 0;
}

/* Replaces the pages of [a, b) of a VMA_COW VMA (one VMA) with copies this mm holds alone. */
static int cow_copy(struct mm *mm, uint64_t a, uint64_t b)
{
	struct vma_set *s = vset(mm);
	size_t idx = vma_lower_bound(s, a);
	const struct vma *v = &s->v[idx];
	uint64_t len = b - a, old = v->off + (a - v->start);
	int64_t fresh = -ENOMEM;

	/* Right after the previous piece's pages if free, so that the two merge again. */
	if (idx > 0 && s->v[idx - 1].end == a && !(s->v[idx - 1].flags & VMA_COW)) {
		const struct vma *prev = &s->v[idx - 1];
		uint64_t want = prev->off + (prev->end - prev->start);
		if (memfile_alloc_at_nocharge(mfile(mm), want, len) == 0)
			fresh = (int64_t)want;
	}
	/* Not charged here: mm_handle_fault checked the limit before taking mm->lock. */
	if (fresh < 0)
		fresh = memfile_alloc_nocharge(mfile(mm), len);
	if (fresh < 0)
		return (int)fresh;
	/* Stable: every holder maps these pages read-only and the sentry never writes them. */
	memfile_image_load(mfile(mm), old, len);
	memcpy(memfile_ptr(mfile(mm), (uint64_t)fresh), memfile_ptr(mfile(mm), old), len);
	int r = plat_map(mm, a, len, v->prot, (uint64_t)fresh);
	if (r < 0) {
		memfile_free(mfile(mm), (uint64_t)fresh, len);
		return r;
	}
	size_t i = vma_isolate(s, a, b);
	s->v[i].off = (uint64_t)fresh;
	s->v[i].flags &= ~(VMA_COW | VMA_LAZY);
	memfile_free(mfile(mm), old, len);
	vma_merge_range(s, i ? i - 1 : 0, i + 1);
	mm->cow_copied += len / PAGE_SIZE;
	return 0;
}

/* plat_map_vma's work, in space as (mm's, or the one mm_activate is making). */
static int map_vma_in(struct mm *mm, struct platform_as *as, const struct vma *v, uint64_t addr,
		      uint64_t len, int prot)
{
	const struct platform_ops *ops = mm->k->platform->ops;
	uint64_t off = v->off + (addr - v->start), done = 0;

	if (!(v->flags & VMA_IMAGE))
		return ops->as_map(as, addr, len, prot, off);
	while (done < len) {
		uint64_t foff, run;
		int r;

		if (memfile_image_translate(mfile(mm), off + done, len - done, &foff, &run)) {
			r = ops->as_map_image(as, addr + done, run, prot & ~PROT_WRITE, foff);
		} else {
			/* Not the image's (cannot happen: VMA_IMAGE is set over its pages only). */
			r = memfile_image_load(mfile(mm), off + done, run);
			if (r == 0)
				r = ops->as_map(as, addr + done, run, prot & ~PROT_WRITE,
						off + done);
		}
		if (r < 0)
			return r;
		done += run;
	}
	return 0;
}

int plat_map_vma(struct mm *mm, const struct vma *v, uint64_t addr, uint64_t len, int prot)
{
	mm->plat_changes++;
	return mm->as ? map_vma_in(mm, mm->as, v, addr, len, prot) : 0;
}

int image_resolve_locked(struct mm *mm, uint64_t start, uint64_t end, bool load)
{
	struct vma_set *s = vset(mm);
	uint64_t cur = start;

	while (cur < end) {
		size_t i = vma_lower_bound(s, cur);
		if (i == s->n || s->v[i].start >= end)
			return 0;
		cur = MAX(cur, s->v[i].start);
		if (!(s->v[i].flags & VMA_IMAGE)) {
			cur = s->v[i].end;
			continue;
		}
		int r = vma_set_reserve(s, VMA_RESERVE);
		if (r < 0)
			return r;
		uint64_t stop = MIN(end, s->v[i].end);
		if (load) {
			r = memfile_image_load(mfile(mm), s->v[i].off + (cur - s->v[i].start),
					       stop - cur);
			if (r < 0)
				return r;
		}
		i = vma_isolate(s, cur, stop);
		s->v[i].flags &= ~VMA_IMAGE;
		r = plat_map(mm, cur, stop - cur, vma_platform_prot(&s->v[i]), s->v[i].off);
		if (r < 0) {
			s->v[i].flags |= VMA_IMAGE;
			vma_merge_range(s, i ? i - 1 : 0, i + 1);
			return r;
		}
		vma_merge_range(s, i ? i - 1 : 0, i + 1);
		cur = stop;
	}
	return 0;
}

int cow_resolve_locked(struct mm *mm, uint64_t start, uint64_t end)
{
	int r0 = image_resolve_locked(mm, start, end, true);

	if (r0 < 0)
		return r0;

	struct vma_set *s = vset(mm);
	uint64_t cur = start;

	while (cur < end) {
		size_t i = vma_lower_bound(s, cur);
		if (i == s->n || s->v[i].start >= end)
			return 0;
		const struct vma *v = &s->v[i];
		cur = MAX(cur, v->start);
		if (!(v->flags & VMA_COW)) {
			cur = v->end;
			continue;
		}
		int r = vma_set_reserve(s, VMA_RESERVE);
		if (r < 0)
			return r;
		v = &s->v[i];
		uint64_t stop = MIN(end, v->end), hi = cur + PAGE_SIZE;
		if (page_exclusive(mm, v->off + (cur - v->start))) {
			/* The whole run of pages held alone around cur, even beyond [start, end). */
			uint64_t lo = cur;
			while (lo > v->start &&
			       page_exclusive(mm, v->off + (lo - PAGE_SIZE - v->start)))
				lo -= PAGE_SIZE;
			while (hi < v->end && page_exclusive(mm, v->off + (hi - v->start)))
				hi += PAGE_SIZE;
			r = cow_take_over(mm, lo, hi);
		} else {
			while (hi < stop && !page_exclusive(mm, v->off + (hi - v->start)))
				hi += PAGE_SIZE;
			r = cow_copy(mm, cur, hi);
		}
		if (r < 0)
			return r;
		cur = hi;
	}
	return 0;
}

/*
 * True when the pages of v (one populate window) can be mapped from the image: private memory,
 * every page still to load, the platform able to map the pages file.
 */
static bool image_mappable(struct mm *mm, const struct vma *v, uint64_t *file_off)
{
	const struct platform *p = mm->k->platform;

	if (!p->ops->as_map_image || p->imagefd < 0 || !(v->flags & MM_VMA_PRIVATE) ||
	    (v->flags & (MM_VMA_VDSO | MM_VMA_VVAR)))
		return false;
	return memfile_image_mappable(mfile(mm), v->off, v->end - v->start, file_off);
}

/*
 * Populates the window of lazy VMA pages around page (in a VMA_LAZY VMA): gives them the VMA's
 * protection in the platform. The whole window if it fits under the memory limit, else the page
 * alone if it does, else nothing (-ENOMEM) unless force. mm->lock held. Returns 0 or -errno.
 */
static int populate_locked(struct mm *mm, uint64_t page, bool force)
{
	struct vma_set *s = vset(mm);
	const struct vma *v = vma_find(s, page);
	uint64_t lo = MAX(v->start, page & ~(LAZY_WINDOW * PAGE_SIZE - 1));
	uint64_t hi = MIN(v->end, lo + LAZY_WINDOW * PAGE_SIZE);

	if (!memfile_fits(mfile(mm), hi - lo)) {
		lo = page;
		hi = page + PAGE_SIZE;
		if (!force && !memfile_fits(mfile(mm), PAGE_SIZE))
			return -ENOMEM;
	}
	int r = vma_set_reserve(s, VMA_RESERVE);
	if (r < 0)
		return r;
	size_t i = vma_isolate(s, lo, hi);
	uint64_t file_off;
	if (image_mappable(mm, &s->v[i], &file_off)) {
		/* A restored page not loaded yet: the guest maps the image's (shared) page. */
		mm->lazy_ro = true;
		s->v[i].flags = (s->v[i].flags & ~VMA_LAZY) | VMA_IMAGE;
		r = plat_map_vma(mm, &s->v[i], lo, hi - lo, vma_platform_prot(&s->v[i]));
		if (r < 0)
			s->v[i].flags = (s->v[i].flags & ~VMA_IMAGE) | VMA_LAZY;
		vma_merge_range(s, i ? i - 1 : 0, i + 1);
		return r;
	}
	/* A restored page's bytes before the guest can see it (image.c). */
	r = memfile_image_load(mfile(mm), s->v[i].off, hi - lo);
	if (r < 0)
		return r;
	if (!(s->v[i].prot & PROT_WRITE) || (s->v[i].flags & VMA_COW))
		mm->lazy_ro = true;
	s->v[i].flags &= ~VMA_LAZY;
	r = plat_protect(mm, lo, hi - lo, vma_platform_prot(&s->v[i]));
	if (r < 0)
		s->v[i].flags |= VMA_LAZY;
	vma_merge_range(s, i ? i - 1 : 0, i + 1);
	return r;
}

/*
 * A touch of a VMA_EOF page (mm->lock held): -EFAULT for a PROT_NONE mapping (SIGSEGV); the
 * page, and the VMA's pages before the end of the file, made accessible when the file has grown
 * over it since the mmap (0: re-run); else -EIO (SIGBUS, BUS_ADRERR).
 */
static int eof_fault_locked(struct mm *mm, uint64_t addr)
{
	struct vma_set *s = vset(mm);
	const struct vma *v = vma_find(s, addr);
	uint64_t page = PAGE_ALIGN_DOWN(addr), end;
	struct vfs_attr attr;

	if (!(v->prot & (PROT_READ | PROT_WRITE | PROT_EXEC)))
		return -EFAULT;
	if (!v->file || file_getattr(v->file, &attr) < 0 || attr.size < 0 ||
	    v->file_off + (page - v->start) >= (uint64_t)attr.size)
		return -EIO;
	if (vma_set_reserve(s, VMA_RESERVE) < 0)
		return -ENOMEM;
	end = v->start + (PAGE_ALIGN_UP((uint64_t)attr.size) - v->file_off);
	end = MIN(end, v->end);
	size_t i = vma_isolate(s, v->start, end);
	s->v[i].flags &= ~VMA_EOF;
	int r = plat_protect(mm, s->v[i].start, s->v[i].end - s->v[i].start,
			     vma_platform_prot(&s->v[i]));
	vma_merge_range(s, i ? i - 1 : 0, i + 1);
	return r;
}

bool eof_revalidate_locked(struct mm *mm, uint64_t addr)
{
	const struct vma *v = vma_find(vset(mm), addr);

	if (!v || !(v->flags & VMA_EOF))
		return false;
	eof_fault_locked(mm, addr);
	v = vma_find(vset(mm), addr);
	return v && !(v->flags & VMA_EOF);
}

uint64_t mm_plat_changes_base(void)
{
	static uint64_t next;

	return __atomic_add_fetch(&next, 1ULL << 32, __ATOMIC_RELAXED);
}

/*
 * The page this host thread (one per guest thread) last made writable in mm_handle_fault, and
 * its mm's plat_changes just after: a new fault at that page with the count unchanged is a real
 * one (an execute of a non-executable page), not a copy-on-write to resolve again. If the count
 * moved (another thread forked, or resolved the page itself after a fork), the fault may be
 * spurious again and is re-run.
 */
static __thread uint64_t fault_last_page = UINT64_MAX, fault_last_changes;

static void fault_remember(struct mm *mm, uint64_t page)
{
	fault_last_page = page;
	fault_last_changes = mm->plat_changes;
}

static bool fault_seen_before(struct mm *mm, uint64_t page)
{
	return page == fault_last_page && mm->plat_changes == fault_last_changes;
}

int mm_handle_fault(struct mm *mm, uint64_t addr, int code)
{
	/* A write to a present, read-only page is SEGV_ACCERR; copy-on-write is nothing else. */
	if (code != SEGV_ACCERR || addr >= PLATFORM_GUEST_MAX)
		return -EFAULT;

	bool force = false, reported = false;
retry:
	pthread_mutex_lock(&mm->lock);
	int r = -EFAULT;
	const struct vma *v = vma_find(vset(mm), addr);
	if (v && (v->flags & VMA_EOF)) {
		r = eof_fault_locked(mm, addr);
		goto out_unlock;
	}
	if (v && (v->flags & VMA_LAZY)) {
		/* A PROT_NONE mapping is really inaccessible; anything else is populated now. */
		if (!(v->prot & (PROT_READ | PROT_WRITE | PROT_EXEC)))
			goto out_unlock;
		if (!reported && __atomic_load_n(&mfile(mm)->charge_hook, __ATOMIC_RELAXED)) {
			/* A pod member's limit: told without mm->lock (it looks at every mm). */
			pthread_mutex_unlock(&mm->lock);
			memfile_charge_hook(mfile(mm), LAZY_WINDOW * PAGE_SIZE);
			reported = true;
			goto retry;
		}
		r = populate_locked(mm, PAGE_ALIGN_DOWN(addr), force);
		if (r == -ENOMEM && !force) {
			/*
			 * Over the memory limit: the OOM killer makes room (without mm->lock: it
			 * looks at every mm), then populate again. If it cannot (or chose this
			 * process, which dies before it runs again), the page is given anyway.
			 */
			pthread_mutex_unlock(&mm->lock);
			force = memfile_charge(mfile(mm), PAGE_SIZE) < 0;
			goto retry;
		}
		if (r < 0) {
			log_warn("mm: populating %#lx failed: %s", (unsigned long)addr,
				 strerror(-r));
			r = -EFAULT;
		}
		goto out_unlock;
	}
	if (v &&
	    (((v->flags & MM_VMA_PRIVATE) && !(v->flags & (VMA_COW | VMA_IMAGE)) &&
	      (v->prot & PROT_WRITE)) ||
	     /* Lazily populated pages that are not plainly writable (a restore's): the same
	      * race, with any access. */
	     (mm->lazy_ro && (v->prot & (PROT_READ | PROT_WRITE | PROT_EXEC)) &&
	      !((v->flags & (VMA_COW | VMA_IMAGE)) && (v->prot & PROT_WRITE)))) &&
	    !fault_seen_before(mm, PAGE_ALIGN_DOWN(addr))) {
		/*
		 * Another thread of this space resolved the page between this thread's fault and
		 * now. Re-apply the VMA's protection to the page (a no-op when the platform has it
		 * already) and retry once; a second fault at the same page with no mapping change
		 * in between is a real one (an execute of a non-executable page looks the same: no
		 * error code tells them apart).
		 */
		r = plat_protect(mm, PAGE_ALIGN_DOWN(addr), PAGE_SIZE, vma_platform_prot(v));
		fault_remember(mm, PAGE_ALIGN_DOWN(addr));
		goto out_unlock;
	}
	/* Not copy-on-write (or the image's), or not writable: the access was really not allowed. */
	if (!v || !(v->flags & (VMA_COW | VMA_IMAGE)) || !(v->prot & PROT_WRITE))
		goto out_unlock;
	/* A copy takes new memory: as for a first touch, the OOM killer makes room first. */
	if (!force && !memfile_fits(mfile(mm), PAGE_SIZE)) {
		pthread_mutex_unlock(&mm->lock);
		force = memfile_charge(mfile(mm), PAGE_SIZE) < 0;
		goto retry;
	}
	uint64_t page = PAGE_ALIGN_DOWN(addr);
	uint64_t lo = MAX(v->start, page & ~(COW_WINDOW * PAGE_SIZE - 1));
	uint64_t hi = MIN(v->end, lo + COW_WINDOW * PAGE_SIZE);
	/* The window's pages before the faulting one only if they are shared like it. */
	while (lo < page && page_exclusive(mm, v->off + (lo - v->start)))
		lo += PAGE_SIZE;
	r = cow_resolve_locked(mm, lo, hi);
	if (r == 0)
		fault_remember(mm, page);
	if (r < 0) {
		log_warn("mm: copy-on-write at %#lx failed: %s", (unsigned long)addr, strerror(-r));
		r = -EFAULT;
	}
out_unlock:
	pthread_mutex_unlock(&mm->lock);
	return r;
}

int mm_unshare(struct mm *mm, uint64_t addr, uint64_t len)
{
	uint64_t end;

	if (len == 0)
		return 0;
	if (add_overflow(addr, len, &end))
		end = UINT64_MAX;
	pthread_mutex_lock(&mm->lock);
	end = MIN(end, PLATFORM_GUEST_MAX);
	int r = cow_resolve_locked(mm, PAGE_ALIGN_DOWN(addr), PAGE_ALIGN_UP(end));
	pthread_mutex_unlock(&mm->lock);
	return r;
}

/*
 * Write-protects parent's private writable VMAs that are not copy-on-write yet, in runs of
 * equal protection, and marks every private VMA copy-on-write. A VMA is marked only once the
 * platform has protected it, so that a failure leaves no writable VMA_COW behind.
 */
static int protect_for_fork_locked(struct mm *parent)
{
	struct vma_set *s = vset(parent);
	size_t i = 0;

	while (i < s->n) {
		struct vma *v = &s->v[i];
		if (!(v->flags & MM_VMA_PRIVATE) || (v->flags & (VMA_COW | MM_VMA_DONTFORK))) {
			i++;
			continue;
		}
		/*
		 * WIPEONFORK pages are not shared: the child gets zero pages. Pages not populated
		 * yet (VMA_LAZY) are inaccessible in the platform already.
		 */
		if (!(v->prot & PROT_WRITE) ||
		    (v->flags & (MM_VMA_WIPEONFORK | VMA_LAZY | VMA_EOF))) {
			if (!(v->flags & MM_VMA_WIPEONFORK))
				v->flags |= VMA_COW;
			i++;
			continue;
		}
		size_t j = i + 1;
		while (j < s->n && s->v[j].start == s->v[j - 1].end && s->v[j].prot == v->prot &&
		       (s->v[j].flags & MM_VMA_PRIVATE) &&
		       !(s->v[j].flags &
			 (VMA_COW | MM_VMA_DONTFORK | MM_VMA_WIPEONFORK | VMA_LAZY | VMA_EOF)))
			j++;
		int r = plat_protect(parent, v->start, s->v[j - 1].end - v->start,
				     v->prot & ~PROT_WRITE);
		if (r < 0)
			return r;
		for (size_t k = i; k < j; k++)
			s->v[k].flags |= VMA_COW;
		i = j;
	}
	return 0;
}

/*
 * Lets copies into the parent's pages that other threads started (pinned translations: a
 * read(2) of a file, a pipe with data) finish before its pages become copy-on-write, so that
 * their data is the parent's alone. They never sleep, so this is short; after FORK_IO_WAIT_MS
 * fork goes on anyway (a copy that slow, a host file's, may then also reach the child's page).
 * New pins can start while mm->lock is dropped here, but not once fork holds it again.
 */
#define FORK_IO_WAIT_MS 500
static void wait_io_idle_locked(struct mm *mm)
{
	struct timespec dl;

	if (mm->io_pins == 0)
		return;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += FORK_IO_WAIT_MS / 1000;
	dl.tv_nsec += (FORK_IO_WAIT_MS % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	while (mm->io_pins && pthread_cond_timedwait(&mm->io_idle, &mm->lock, &dl) == 0)
		;
}

struct mm *mm_fork(struct mm *parent)
{
	struct mm *child = calloc(1, sizeof(*child));
	struct vma_set *cs = calloc(1, sizeof(*cs));
	int r;

	if (!child || !cs) {
		free(child);
		free(cs);
		return ERR_PTR(-ENOMEM);
	}
	r = pthread_mutex_init(&child->lock, NULL);
	if (r == 0)
		pthread_mutex_init(&child->patch_lock, NULL);
	if (r == 0) {
		r = pthread_cond_init(&child->io_idle, NULL);
		if (r)
			pthread_mutex_destroy(&child->lock);
	}
	if (r) {
		free(child);
		free(cs);
		return ERR_PTR(-r);
	}
	refcount_init(&child->ref, 1);
	child->k = parent->k;
	child->vmas = cs;
	child->plat_changes = mm_plat_changes_base();

	/* Before lock (patch.c's order): no site is half-recorded while the memory is copied. */
	pthread_mutex_lock(&parent->patch_lock);
	r = mm_patch_fork(parent, child);
	if (r < 0) {
		pthread_mutex_unlock(&parent->patch_lock);
		mm_put(child);
		return ERR_PTR(r);
	}
	pthread_mutex_lock(&parent->lock);
	wait_io_idle_locked(parent);
	struct vma_set *ps = vset(parent);
	r = vma_set_reserve(cs, ps->n + VMA_RESERVE);
	if (r < 0)
		goto out_unlock;
	/*
	 * Protect first: once it returns no thread of the parent can write a private page, so
	 * what is shared below is what the parent had when fork was called.
	 */
	r = protect_for_fork_locked(parent);
	if (r < 0)
		goto out_unlock;
	for (size_t i = 0; i < ps->n; i++) {
		struct vma v = ps->v[i];
		uint64_t len = v.end - v.start;
		if (v.flags & MM_VMA_DONTFORK)
			continue;
		/* As Linux: memory locks are not inherited. */
		v.flags &= ~MM_VMA_LOCKED;
		if (v.flags & MM_VMA_WIPEONFORK) {
			int64_t fresh = memfile_alloc_nocharge(mfile(parent), len);
			if (fresh < 0) {
				r = (int)fresh;
				goto out_unlock;
			}
			v.off = (uint64_t)fresh;
			v.flags &= ~VMA_IMAGE;
			/* Fresh pages: populated on first touch under a memory limit. */
			if (mm_lazy(parent))
				v.flags |= VMA_LAZY;
		} else {
			memfile_ref(mfile(parent), v.off, len);
		}
		if (v.file)
			file_get(v.file);
		vma_insert_at(cs, cs->n, &v);
	}
	child->start_brk = parent->start_brk;
	child->brk = parent->brk;
	child->start_data = parent->start_data;
	child->end_data = parent->end_data;
	child->limit_as = parent->limit_as;
	child->limit_data = parent->limit_data;
	child->limit_data_max = parent->limit_data_max;
	child->mmap_base = parent->mmap_base;
	child->stack_top = parent->stack_top;
	child->arg_start = parent->arg_start;
	child->arg_end = parent->arg_end;
	child->env_start = parent->env_start;
	child->env_end = parent->env_end;
	memcpy(child->auxv, parent->auxv, sizeof(child->auxv));
	child->auxv_len = parent->auxv_len;
	pthread_mutex_unlock(&parent->lock);
	pthread_mutex_unlock(&parent->patch_lock);
	return child;

out_unlock:
	pthread_mutex_unlock(&parent->lock);
	pthread_mutex_unlock(&parent->patch_lock);
	mm_put(child); /* drops the VMAs copied so far, and their page references */
	return ERR_PTR(r);
}

/* Microseconds from a to b, for the debug timings. */
static long long ts_us(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) * 1000000LL + (b->tv_nsec - a->tv_nsec) / 1000;
}

int mm_activate(struct mm *mm)
{
	const struct platform_ops *ops = mm->k->platform->ops;
	struct platform_as *as;
	struct timespec t0, t1, t2;
	size_t calls = 0;
	int r = 0;

	pthread_mutex_lock(&mm->lock);
	if (mm->as)
		goto out_unlock;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = ops->as_create(mm->k->platform, &as);
	if (r < 0)
		goto out_unlock;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* One call per run of VMAs that are contiguous in both address and memory file. */
	const struct vma_set *s = vset(mm);
	for (size_t i = 0; i < s->n && r == 0;) {
		const struct vma *v = &s->v[i];
		int prot = vma_platform_prot(v);
		size_t j = i + 1;
		if (v->flags & VMA_IMAGE) {
			r = map_vma_in(mm, as, v, v->start, v->end - v->start, prot);
			calls++;
			i = j;
			continue;
		}
		while (j < s->n && !(s->v[j].flags & VMA_IMAGE) &&
		       s->v[j].start == s->v[j - 1].end &&
		       s->v[j].off == s->v[j - 1].off + (s->v[j - 1].end - s->v[j - 1].start) &&
		       vma_platform_prot(&s->v[j]) == prot)
			j++;
		r = ops->as_map(as, v->start, s->v[j - 1].end - v->start, prot, v->off);
		calls++;
		i = j;
	}
	if (r < 0) {
		ops->as_destroy(as);
		goto out_unlock;
	}
	mm->as = as;
	void (*hook)(struct mm *) = __atomic_load_n(&mm_as_hook, __ATOMIC_ACQUIRE);
	if (hook)
		hook(mm);
	clock_gettime(CLOCK_MONOTONIC, &t2);
	log_debug("timing: mm_activate: as_create %lld us, replay of %zu VMAs in %zu calls %lld us",
		  ts_us(&t0, &t1), s->n, calls, ts_us(&t1, &t2));
out_unlock:
	pthread_mutex_unlock(&mm->lock);
	return r;
}
