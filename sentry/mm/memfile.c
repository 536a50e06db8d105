/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The memory file and its extent allocator.
 *
 * Free space is a sorted array of disjoint, non-adjacent free extents (adjacent ones are always
 * coalesced). Allocation is first fit from the lowest offset, so live memory packs at the start
 * of the file; freeing inserts by binary search and merges with both neighbours. The allocator
 * only knows free space: a caller may free any page-aligned sub-range of what it allocated
 * (sentry/mm frees the pages of a VMA piece by piece).
 *
 * Reference counts: extra_refs[page] counts the references beyond the first, so a page with
 * one owner reads 0 and the array (a private, sparse, MADV_DONTFORK mapping) stays untouched
 * until pages are shared. Counts change with atomics only: a reference is only ever added by a
 * holder, so a page whose extra count is 0 has exactly one holder, the caller, and nobody can
 * race with it on that page.
 */
#include <assert.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/util.h"
#include "sentry/mm/memfile.h"

struct free_extent {
	uint64_t off, len;
};

struct memfile_alloc_state {
	struct free_extent *v; /* sorted by off; disjoint and never adjacent */
	size_t n, cap;
	uint64_t free_bytes;
};

static struct memfile_alloc_state *state(struct memfile *mf)
{
	return mf->alloc;
}

/* Makes room for one more entry. Returns 0 or -ENOMEM. */
static int reserve_one(struct memfile_alloc_state *s)
{
	if (s->n < s->cap)
		return 0;
	size_t cap = s->cap ? s->cap * 2 : 64;
	struct free_extent *v = realloc(s->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	s->v = v;
	s->cap = cap;
	return 0;
}

/* Index of the first free extent whose off is > off. */
static size_t upper_bound(const struct memfile_alloc_state *s, uint64_t off)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->v[mid].off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void remove_at(struct memfile_alloc_state *s, size_t i)
{
	memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof(s->v[0]));
	s->n--;
}

static void alloc_state_freep(struct memfile_alloc_state **sp)
{
	if (*sp) {
		free((*sp)->v);
		free(*sp);
	}
}

int memfile_init(struct memfile *mf, uint64_t size)
{
	_cleanup_close_ int fd = -1;
	_cleanup_(alloc_state_freep) struct memfile_alloc_state *s = NULL;

	if (size == 0 || !IS_PAGE_ALIGNED(size) || size > INT64_MAX)
		return -EINVAL;

	s = calloc(1, sizeof(*s));
	if (!s || reserve_one(s) < 0)
		return -ENOMEM;
	s->v[0] = (struct free_extent){ .off = 0, .len = size };
	s->n = 1;
	s->free_bytes = size;

	fd = memfd_create("husk-memory", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0)
		return -errno;
	/*
	 * The size never changes: sealing it means no holder of the FD (a stub running guest code
	 * included) can shrink the file under the sentry's mapping and make the sentry fault.
	 */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		return -errno;
	void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
	if (base == MAP_FAILED)
		return -errno;
	size_t refs_len = PAGE_ALIGN_UP((size / PAGE_SIZE) * sizeof(uint32_t));
	void *refs = mmap(NULL, refs_len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (refs == MAP_FAILED) {
		int e = -errno;
		munmap(base, size);
		return e;
	}
	/* Stubs forked from the sentry need no copy of it (nor of its page tables). */
	madvise(refs, refs_len, MADV_DONTFORK);
	int r = pthread_mutex_init(&mf->lock, NULL);
	if (r) {
		munmap(refs, refs_len);
		munmap(base, size);
		return -r;
	}
	mf->fd = steal_fd(&fd);
	mf->base = base;
	mf->size = size;
	mf->extra_refs = refs;
	mf->shared_pages = 0;
	mf->ending = false;
	mf->limit = mf->peak = 0;
	mf->lazy = false;
	mf->charge_hook = NULL;
	mf->charge_arg = NULL;
	mf->events_max = mf->events_oom = mf->events_oom_kill = 0;
	mf->oom = NULL;
	mf->oom_arg = NULL;
	mf->image = NULL; /* a restore attaches one (image.c) */
	mf->alloc = steal_pointer(&s);
	return 0;
}

void memfile_destroy(struct memfile *mf)
{
	struct memfile_alloc_state *s = state(mf);

	if (!s)
		return;
	munmap(mf->base, mf->size);
	munmap(mf->extra_refs, PAGE_ALIGN_UP((mf->size / PAGE_SIZE) * sizeof(uint32_t)));
	mf->extra_refs = NULL;
	close(mf->fd);
	pthread_mutex_destroy(&mf->lock);
	free(s->v);
	free(s);
	mf->alloc = NULL;
	mf->base = NULL;
	mf->fd = -1;
}

int64_t memfile_alloc(struct memfile *mf, uint64_t len)
{
	if ((__atomic_load_n(&mf->limit, __ATOMIC_RELAXED) ||
	     __atomic_load_n(&mf->charge_hook, __ATOMIC_RELAXED)) &&
	    len && IS_PAGE_ALIGNED(len) && memfile_charge(mf, len) < 0)
		return -ENOMEM;
	return memfile_alloc_nocharge(mf, len);
}

int memfile_alloc_at(struct memfile *mf, uint64_t off, uint64_t len)
{
	if ((__atomic_load_n(&mf->limit, __ATOMIC_RELAXED) ||
	     __atomic_load_n(&mf->charge_hook, __ATOMIC_RELAXED)) &&
	    len && IS_PAGE_ALIGNED(len) && memfile_charge(mf, len) < 0)
		return -ENOMEM;
	return memfile_alloc_at_nocharge(mf, off, len);
}

int64_t memfile_alloc_nocharge(struct memfile *mf, uint64_t len)
{
	struct memfile_alloc_state *s = state(mf);
	int64_t off = -ENOMEM;

	if (len == 0 || !IS_PAGE_ALIGNED(len))
		return -EINVAL;

	pthread_mutex_lock(&mf->lock);
	for (size_t i = 0; i < s->n; i++) {
		struct free_extent *e = &s->v[i];
		if (e->len < len)
			continue;
		off = (int64_t)e->off;
		e->off += len;
		e->len -= len;
		if (e->len == 0)
			remove_at(s, i);
		s->free_bytes -= len;
		break;
	}
	pthread_mutex_unlock(&mf->lock);
	return off;
}

int memfile_alloc_at_nocharge(struct memfile *mf, uint64_t off, uint64_t len)
{
	struct memfile_alloc_state *s = state(mf);
	uint64_t end;
	int r = -ENOMEM;

	if (len == 0 || !IS_PAGE_ALIGNED(len) || !IS_PAGE_ALIGNED(off) ||
	    add_overflow(off, len, &end) || end > mf->size)
		return -EINVAL;

	pthread_mutex_lock(&mf->lock);
	size_t i = upper_bound(s, off);
	if (i == 0)
		goto out_unlock;
	struct free_extent *e = &s->v[i - 1];
	uint64_t e_end = e->off + e->len;
	if (e_end < end)
		goto out_unlock;
	if (e->off == off) {
		e->off += len;
		e->len -= len;
		if (e->len == 0)
			remove_at(s, i - 1);
	} else if (e_end == end) {
		e->len -= len;
	} else {
		/* Splitting a free extent in two needs one more slot. */
		if (reserve_one(s) < 0)
			goto out_unlock;
		e = &s->v[i - 1];
		memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof(s->v[0]));
		s->n++;
		s->v[i] = (struct free_extent){ .off = end, .len = e_end - end };
		e->len = off - e->off;
	}
	s->free_bytes -= len;
	r = 0;
out_unlock:
	pthread_mutex_unlock(&mf->lock);
	return r;
}

int memfile_zero(struct memfile *mf, uint64_t off, uint64_t len)
{
	if (len == 0)
		return 0;
	/* Not loaded yet from a restored image: never to be (the pages are zeros now). */
	memfile_image_forget(mf, off, len);
	/*
	 * Punching a hole in a memfd drops the pages from every mapping of the file (the sentry's
	 * and the stubs'): the next access of either sees fresh zero pages.
	 */
	if (fallocate(mf->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) <
	    0) {
		int r = -errno;
		/* Without the hole the pages still hold data: clear them by hand. */
		memset(memfile_ptr(mf, off), 0, len);
		return r;
	}
	return 0;
}

/* Returns [off, off+len), whose every page has no other reference, to the allocator. */
static void release_range(struct memfile *mf, uint64_t off, uint64_t len)
{
	struct memfile_alloc_state *s = state(mf);

	if (len == 0 || __atomic_load_n(&mf->ending, __ATOMIC_ACQUIRE))
		return;

	/* The range is still ours until it is on the free list: punch it outside the lock. */
	int r = memfile_zero(mf, off, len);
	if (r < 0)
		log_warn("memfile: punching [%#lx, +%#lx) failed: %d", (unsigned long)off,
			 (unsigned long)len, r);

	pthread_mutex_lock(&mf->lock);
	size_t i = upper_bound(s, off);
	struct free_extent *prev = i > 0 ? &s->v[i - 1] : NULL;
	struct free_extent *next = i < s->n ? &s->v[i] : NULL;

	/* A double free is a bug in sentry/mm, not guest input. */
	assert(!prev || prev->off + prev->len <= off);
	assert(!next || off + len <= next->off);

	bool join_prev = prev && prev->off + prev->len == off;
	bool join_next = next && off + len == next->off;
	if (join_prev && join_next) {
		prev->len += len + next->len;
		remove_at(s, i);
	} else if (join_prev) {
		prev->len += len;
	} else if (join_next) {
		next->off = off;
		next->len += len;
	} else {
		if (reserve_one(s) < 0) {
			/* Losing the range is better than corrupting the allocator. */
			log_error("memfile: out of memory freeing [%#lx, +%#lx): range leaked",
				  (unsigned long)off, (unsigned long)len);
			pthread_mutex_unlock(&mf->lock);
			return;
		}
		memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof(s->v[0]));
		s->n++;
		s->v[i] = (struct free_extent){ .off = off, .len = len };
	}
	s->free_bytes += len;
	pthread_mutex_unlock(&mf->lock);
}

/*
 * Drops one extra reference of the page at off if it has any. Returns true if it had (someone
 * else still holds the page), false if the caller held it alone.
 */
static bool drop_extra_ref(struct memfile *mf, uint64_t off)
{
	uint32_t *r = &mf->extra_refs[off / PAGE_SIZE];
	uint32_t c = __atomic_load_n(r, __ATOMIC_ACQUIRE);

	while (c != 0) {
		if (__atomic_compare_exchange_n(r, &c, c - 1, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			if (c == 1)
				__atomic_fetch_sub(&mf->shared_pages, 1, __ATOMIC_RELAXED);
			return true;
		}
	}
	return false;
}

void memfile_free(struct memfile *mf, uint64_t off, uint64_t len)
{
	if (len == 0)
		return;
	assert(IS_PAGE_ALIGNED(off) && IS_PAGE_ALIGNED(len) && off + len <= mf->size);

	/* Nothing is shared (no fork yet, or every sharer is gone): no page to look at. */
	if (__atomic_load_n(&mf->shared_pages, __ATOMIC_ACQUIRE) == 0) {
		release_range(mf, off, len);
		return;
	}
	/* Release the runs of pages this was the last reference of; keep the others. */
	uint64_t run = off, end = off + len;
	for (uint64_t p = off; p < end; p += PAGE_SIZE) {
		if (drop_extra_ref(mf, p)) {
			release_range(mf, run, p - run);
			run = p + PAGE_SIZE;
		}
	}
	release_range(mf, run, end - run);
}

void memfile_set_ending(struct memfile *mf)
{
	__atomic_store_n(&mf->ending, true, __ATOMIC_RELEASE);
}

void memfile_ref(struct memfile *mf, uint64_t off, uint64_t len)
{
	assert(IS_PAGE_ALIGNED(off) && IS_PAGE_ALIGNED(len) && off + len <= mf->size);
	/*
	 * The counter is raised before the page's count, so that memfile_free's fast path never
	 * sees it at 0 while some page is shared.
	 */
	for (uint64_t p = off; p < off + len; p += PAGE_SIZE) {
		__atomic_fetch_add(&mf->shared_pages, 1, __ATOMIC_ACQ_REL);
		if (__atomic_fetch_add(&mf->extra_refs[p / PAGE_SIZE], 1, __ATOMIC_ACQ_REL) != 0)
			__atomic_fetch_sub(&mf->shared_pages, 1, __ATOMIC_RELAXED);
	}
}

uint32_t memfile_page_refs(struct memfile *mf, uint64_t off)
{
	return 1 + __atomic_load_n(&mf->extra_refs[off / PAGE_SIZE], __ATOMIC_ACQUIRE);
}

uint64_t memfile_shared_pages(struct memfile *mf)
{
	return __atomic_load_n(&mf->shared_pages, __ATOMIC_RELAXED);
}

uint64_t memfile_free_bytes(struct memfile *mf)
{
	struct memfile_alloc_state *s = state(mf);

	pthread_mutex_lock(&mf->lock);
	uint64_t b = s->free_bytes;
	pthread_mutex_unlock(&mf->lock);
	return b;
}

size_t memfile_free_extents(struct memfile *mf)
{
	struct memfile_alloc_state *s = state(mf);

	pthread_mutex_lock(&mf->lock);
	size_t n = s->n;
	pthread_mutex_unlock(&mf->lock);
	return n;
}

/* --- accounting --- */

uint64_t memfile_usage(struct memfile *mf)
{
	struct stat st;

	if (fstat(mf->fd, &st) < 0)
		return __atomic_load_n(&mf->peak, __ATOMIC_RELAXED);
	uint64_t u = (uint64_t)st.st_blocks * 512;
	uint64_t p = __atomic_load_n(&mf->peak, __ATOMIC_RELAXED);

	while (u > p && !__atomic_compare_exchange_n(&mf->peak, &p, u, true, __ATOMIC_RELAXED,
						     __ATOMIC_RELAXED))
		;
	return u;
}

bool memfile_fits(struct memfile *mf, uint64_t len)
{
	uint64_t limit = __atomic_load_n(&mf->limit, __ATOMIC_RELAXED);

	return !limit || (len <= limit && memfile_usage(mf) <= limit - len);
}

void memfile_charge_hook(struct memfile *mf, uint64_t len)
{
	void (*hook)(struct memfile *, uint64_t, void *) =
		__atomic_load_n(&mf->charge_hook, __ATOMIC_ACQUIRE);

	if (len && hook)
		hook(mf, len, mf->charge_arg);
}

int memfile_charge(struct memfile *mf, uint64_t len)
{
	memfile_charge_hook(mf, len);
	/* Each round kills one process; a sandbox has at most a few thousand of them. */
	for (int round = 0; round < 4096; round++) {
		if (memfile_fits(mf, len))
			return 0;
		__atomic_fetch_add(&mf->events_max, 1, __ATOMIC_RELAXED);
		if (!mf->oom || mf->oom(mf, len, mf->oom_arg) < 0)
			return -ENOMEM;
	}
	return -ENOMEM;
}

void memfile_set_limit(struct memfile *mf, uint64_t limit)
{
	if (limit)
		__atomic_store_n(&mf->lazy, true, __ATOMIC_RELEASE);
	__atomic_store_n(&mf->limit, limit, __ATOMIC_RELEASE);
}

uint64_t memfile_resident(struct memfile *mf, uint64_t off, uint64_t len)
{
	uint64_t end = off + len, n = 0;

	/* lseek moves the fd's shared position: nothing reads or writes the memfd by position. */
	while (off < end) {
		off_t d = lseek(mf->fd, (off_t)off, SEEK_DATA);
		if (d < 0 || (uint64_t)d >= end)
			break;
		off_t h = lseek(mf->fd, d, SEEK_HOLE);
		if (h < 0)
			break;
		uint64_t stop = MIN((uint64_t)h, end);
		n += stop - (uint64_t)d;
		off = stop;
	}
	return n / PAGE_SIZE;
}
