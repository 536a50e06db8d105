/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Address spaces: mm_create/mm_put and the mapping calls (mmap, munmap, mprotect, brk, mremap,
 * madvise). See README.md for the model and vma.h for the VMA set.
 *
 * Every change follows one order so that a failure leaves the mm as it was: reserve room in
 * the VMA set and allocate (and fill) pages first, then tell the platform, then update the
 * VMA set, which can no longer fail. Pages are freed only after the platform has dropped its
 * mapping of them, so a stub never keeps a path to pages the allocator may hand out again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/err.h"
#include "common/log.h"
#include "common/util.h"
#include "sentry/kernel/kernel.h"
#include "sentry/mm/internal.h"
#include "sentry/mm/memfile.h"
#include "sentry/mm/mm.h"
#include "sentry/mm/vma.h"
#include "sentry/platform/platform.h"
#include "sentry/vfs/vfs.h"

/* Linux UAPI values that glibc's <sys/mman.h> lacks. */
#ifndef PROT_SEM
#define PROT_SEM 0x8
#endif
#ifndef MAP_UNINITIALIZED
#define MAP_UNINITIALIZED 0x4000000
#endif
#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB (21 << MAP_HUGE_SHIFT)
#define MAP_HUGE_1GB (30 << MAP_HUGE_SHIFT)
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#ifndef MADV_SOFT_OFFLINE
#define MADV_SOFT_OFFLINE 101
#endif
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif
#ifndef MADV_GUARD_REMOVE
#define MADV_GUARD_REMOVE 103
#endif

#define PROT_RWX (PROT_READ | PROT_WRITE | PROT_EXEC)
/* Where MAP_32BIT mappings go on x86-64 (as Linux: the second GiB). */
#define MAP_32BIT_BASE 0x40000000ULL
#define MAP_32BIT_END 0x80000000ULL

struct mm *mm_create_empty(struct kernel *k)
{
	_cleanup_free_ struct mm *mm = calloc(1, sizeof(*mm));
	_cleanup_free_ struct vma_set *s = calloc(1, sizeof(*s));

	if (!mm || !s)
		return ERR_PTR(-ENOMEM);
	pthread_mutex_init(&mm->lock, NULL);
	pthread_cond_init(&mm->io_idle, NULL);
	pthread_mutex_init(&mm->patch_lock, NULL);
	refcount_init(&mm->ref, 1);
	mm->k = k;
	mm->vmas = steal_pointer(&s);
	mm->mmap_base = PLATFORM_GUEST_MAX;
	mm->limit_as = mm->limit_data = mm->limit_data_max = UINT64_MAX;
	mm->plat_changes = mm_plat_changes_base();
	return steal_pointer(&mm);
}

struct mm *mm_create(struct kernel *k)
{
	struct mm *mm = mm_create_empty(k);
	int r;

	if (IS_ERR(mm))
		return mm;
	r = k->platform->ops->as_create(k->platform, &mm->as);
	if (r < 0) {
		pthread_mutex_destroy(&mm->patch_lock);
		pthread_cond_destroy(&mm->io_idle);
		pthread_mutex_destroy(&mm->lock);
		free(mm->vmas);
		free(mm);
		return ERR_PTR(r);
	}
	void (*hook)(struct mm *) = __atomic_load_n(&mm_as_hook, __ATOMIC_ACQUIRE);
	if (hook)
		hook(mm);
	return mm;
}

void mm_set_limits(struct mm *mm, uint64_t as, uint64_t data, uint64_t data_max)
{
	__atomic_store_n(&mm->limit_as, as, __ATOMIC_RELAXED);
	__atomic_store_n(&mm->limit_data, data, __ATOMIC_RELAXED);
	__atomic_store_n(&mm->limit_data_max, data_max, __ATOMIC_RELAXED);
}

/* Linux's is_data_mapping: private, writable, not a stack (VM_GROWSDOWN). */
static bool is_data(int prot, unsigned int flags)
{
	return (prot & PROT_WRITE) && !(flags & (MM_VMA_SHARED | MM_VMA_GROWSDOWN));
}

/* Bytes of mm's mappings in [start, end) (all of them for 0, UINT64_MAX), or the data ones. */
static uint64_t mapped_in(const struct vma_set *s, uint64_t start, uint64_t end, bool data_only)
{
	uint64_t n = 0;

	for (size_t i = vma_lower_bound(s, start); i < s->n && s->v[i].start < end; i++) {
		const struct vma *v = &s->v[i];

		if (!data_only || is_data(v->prot, v->flags))
			n += MIN(v->end, end) - MAX(v->start, start);
	}
	return n;
}

/* Whether mm's data mappings may grow by add bytes under its RLIMIT_DATA. mm->lock held. */
static bool may_expand_data_locked(struct mm *mm, uint64_t add)
{
	uint64_t data = __atomic_load_n(&mm->limit_data, __ATOMIC_RELAXED);
	uint64_t data_max = __atomic_load_n(&mm->limit_data_max, __ATOMIC_RELAXED);
	uint64_t now;

	if (data == UINT64_MAX)
		return true;
	now = mapped_in(vset(mm), 0, UINT64_MAX, true);
	if (now + add <= PAGE_ALIGN_DOWN(data))
		return true;
	/* As Linux: a soft limit of 0 under a higher hard one is let through (Valgrind). */
	return data == 0 && now + add <= PAGE_ALIGN_DOWN(data_max);
}

/*
 * Linux's may_expand_vm: whether mm may get add more bytes of mappings of protection prot and
 * kind flags, of which replace replace existing mappings (MAP_FIXED over them), under the
 * limits of mm_set_limits. mm->lock held.
 */
static bool may_expand_locked(struct mm *mm, int prot, unsigned int flags, uint64_t add,
			      uint64_t replace)
{
	uint64_t as = __atomic_load_n(&mm->limit_as, __ATOMIC_RELAXED);

	add = add > replace ? add - replace : 0;
	if (as != UINT64_MAX &&
	    mapped_in(vset(mm), 0, UINT64_MAX, false) + add > PAGE_ALIGN_DOWN(as))
		return false;
	return !is_data(prot, flags) || may_expand_data_locked(mm, add);
}

void mm_get(struct mm *mm)
{
	refcount_inc(&mm->ref);
}

void (*mm_release_hook)(struct mm *mm);
void (*mm_as_hook)(struct mm *mm);
void (*mm_as_release_hook)(struct mm *mm);

void mm_put(struct mm *mm)
{
	void (*hook)(struct mm *);

	if (!mm || !refcount_dec(&mm->ref))
		return;
	hook = __atomic_load_n(&mm_release_hook, __ATOMIC_ACQUIRE);
	if (hook)
		hook(mm);
	struct vma_set *s = vset(mm);

	/* The stub goes first: no mapping of the pages survives their return to the allocator. */
	if (mm->as) {
		hook = __atomic_load_n(&mm_as_release_hook, __ATOMIC_ACQUIRE);
		if (hook)
			hook(mm);
		mm->k->platform->ops->as_destroy(mm->as);
	}
	for (size_t i = 0; i < s->n; i++)
		vma_release(mfile(mm), &s->v[i]);
	free(s->v);
	free(s);
	mm_patch_free(mm);
	pthread_mutex_destroy(&mm->patch_lock);
	pthread_cond_destroy(&mm->io_idle);
	pthread_mutex_destroy(&mm->lock);
	free(mm);
}

/* Copies file bytes [file_off, file_off+len) into pages at off; bytes past EOF stay zero. */
static int fill_from_file(struct mm *mm, uint64_t off, uint64_t len, struct file *file,
			  uint64_t file_off)
{
	uint8_t *p = memfile_ptr(mfile(mm), off);
	uint64_t done = 0;

	while (done < len) {
		ssize_t r = file_pread(file, p + done, len - done, (int64_t)(file_off + done));
		if (r < 0)
			return (int)r;
		if (r == 0)
			break;
		done += (uint64_t)r;
	}
	return 0;
}

/*
 * Allocates pages for a new anonymous VMA [start, end), right after (or before) a neighbour's
 * pages when that is free, so that the two can merge into one VMA.
 */
static int64_t alloc_pages(struct mm *mm, uint64_t start, uint64_t end)
{
	struct vma_set *s = vset(mm);
	uint64_t len = end - start;
	size_t i = vma_lower_bound(s, start);

	if (i > 0 && s->v[i - 1].end == start && !s->v[i - 1].file) {
		const struct vma *prev = &s->v[i - 1];
		uint64_t want = prev->off + (prev->end - prev->start);
		if (memfile_alloc_at_nocharge(mfile(mm), want, len) == 0)
			return (int64_t)want;
	}
	if (i < s->n && s->v[i].start == end && !s->v[i].file && s->v[i].off >= len) {
		uint64_t want = s->v[i].off - len;
		if (memfile_alloc_at_nocharge(mfile(mm), want, len) == 0)
			return (int64_t)want;
	}
	/* Not charged: pages count when touched (and are checked when populated, fault.c). */
	return memfile_alloc_nocharge(mfile(mm), len);
}

/*
 * Allocates len bytes of pages and, when file is given, fills them from file_off. Needs no
 * lock. Returns the memory-file offset or -errno.
 */
static int64_t alloc_filled(struct mm *mm, uint64_t len, struct file *file, uint64_t file_off)
{
	int64_t off = memfile_alloc_nocharge(mfile(mm), len);

	if (off < 0 || !file)
		return off;
	int r = fill_from_file(mm, (uint64_t)off, len, file, file_off);
	if (r < 0) {
		memfile_free(mfile(mm), (uint64_t)off, len);
		return r;
	}
	return off;
}

/* Removes the VMAs in [start, end) and frees their pages. The platform must not map them. */
static void remove_range(struct mm *mm, uint64_t start, uint64_t end)
{
	struct vma_set *s = vset(mm);
	size_t i = vma_isolate(s, start, end);
	size_t j = i;

	for (; j < s->n && s->v[j].start < end; j++)
		vma_release(mfile(mm), &s->v[j]);
	vma_remove_at(s, i, j - i);
}

/* Unmaps [start, end) from the platform, then removes and frees its VMAs. */
static int unmap_locked(struct mm *mm, uint64_t start, uint64_t end)
{
	if (vma_range_free(vset(mm), start, end))
		return 0;
	int r = plat_unmap(mm, start, end - start);
	if (r < 0)
		return r;
	remove_range(mm, start, end);
	return 0;
}

/* The object of shared anonymous memory (struct vma's obj and obj_size). */
struct shm_obj {
	uint64_t id, size;
};

/* Numbers of shared anonymous memory objects (struct vma's obj). */
static uint64_t next_shm_obj = 1;

void mm_shm_obj_seen(uint64_t obj)
{
	uint64_t cur = __atomic_load_n(&next_shm_obj, __ATOMIC_RELAXED);

	while (cur <= obj && !__atomic_compare_exchange_n(&next_shm_obj, &cur, obj + 1, false,
							  __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/*
 * Makes [start, end) a new VMA over pages at off (already allocated and filled; taken over,
 * and freed on failure), replacing whatever VMAs were in the range; obj: the shared anonymous
 * object it maps (NULL for others). Needs VMA_RESERVE entries.
 */
static int install_locked(struct mm *mm, uint64_t start, uint64_t end, int prot, unsigned int flags,
			  struct file *file, uint64_t file_off, uint64_t off,
			  const struct shm_obj *obj)
{
	struct vma_set *s = vset(mm);

	/* Anonymous memory under a memory limit is populated on first touch (fault.c). */
	flags &= ~(VMA_COW | VMA_LAZY | VMA_IMAGE);
	if (!file && mm_lazy(mm))
		flags |= VMA_LAZY;
	/* as_map replaces any mapping of the range: the old VMAs' pages are unreachable after. */
	int r = plat_map(mm, start, end - start, (flags & VMA_LAZY) ? PROT_NONE : prot, off);
	if (r < 0) {
		memfile_free(mfile(mm), off, end - start);
		return r;
	}
	remove_range(mm, start, end);
	/* Fresh pages are this mm's alone, whatever the flags were copied from. */
	struct vma v = {
		.start = start,
		.end = end,
		.off = off,
		.prot = prot,
		.flags = flags,
		.file = file,
		.file_off = file_off,
		.obj = obj ? obj->id : 0,
		.obj_size = obj ? obj->size : 0,
	};
	if (file)
		file_get(file);
	size_t i = vma_insert(s, &v);
	vma_merge_range(s, i ? i - 1 : 0, i + 1);
	return 0;
}

/* Allocates, fills and installs [start, end) in one go (brk, mremap growth). */
static int map_new_locked(struct mm *mm, uint64_t start, uint64_t end, int prot, unsigned int flags,
			  struct file *file, uint64_t file_off, const struct shm_obj *obj)
{
	int64_t off = file ? alloc_filled(mm, end - start, file, file_off) :
			     alloc_pages(mm, start, end);

	if (off < 0)
		return (int)off;
	return install_locked(mm, start, end, prot, flags, file, file_off, (uint64_t)off, obj);
}

/* Number of pages from offs[i] on (at most n - i) that are contiguous in the memory file. */
static size_t run_pages(const uint64_t *offs, size_t i, size_t n)
{
	size_t j = i + 1;

	while (j < n && offs[j] == offs[j - 1] + PAGE_SIZE)
		j++;
	return j - i;
}

/* Drops the references get_pages gave on offs[0..n), one call per contiguous run. */
static void put_file_pages(struct mm *mm, const uint64_t *offs, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t k = run_pages(offs, i, n);
		memfile_free(mfile(mm), offs[i], k * PAGE_SIZE);
		i += k;
	}
}

/*
 * The file's own pages for a MAP_SHARED mapping of [file_off, file_off + len), from its page
 * cache (file op get_pages). Returns an array (free it) with one referenced memory-file offset
 * per page, or ERR_PTR(-errno).
 */
static uint64_t *get_file_pages(struct file *file, uint64_t file_off, uint64_t len, bool write)
{
	size_t n = len / PAGE_SIZE;
	uint64_t *offs = calloc(n, sizeof(*offs));

	if (!offs)
		return ERR_PTR(-ENOMEM);
	int r = file->ops->get_pages(file, file_off / PAGE_SIZE, n, offs, write);
	if (r < 0) {
		free(offs);
		return ERR_PTR(r);
	}
	return offs;
}

/*
 * Makes [start, start + n pages) a file mapping over the file's pages offs (each referenced;
 * taken over, and dropped on failure), replacing whatever VMAs were in the range: one VMA per
 * run of pages contiguous in the memory file. A MAP_SHARED mapping writes the file's pages; a
 * MAP_PRIVATE one is VMA_COW over them (the platform maps them without PROT_WRITE and the first
 * write copies: see fault.c). If the platform fails half-way, the whole range ends up unmapped
 * (its old VMAs are gone, as with a failed MAP_FIXED on Linux).
 */
static int install_file_pages_locked(struct mm *mm, uint64_t start, const uint64_t *offs, size_t n,
				     int prot, unsigned int flags, struct file *file,
				     uint64_t file_off)
{
	struct vma_set *s = vset(mm);
	uint64_t end = start + n * PAGE_SIZE;
	size_t runs = 0;
	int r;

	flags = (flags & MM_VMA_SHARED) ? flags & ~VMA_COW : flags | VMA_COW;
	int pprot = (flags & VMA_COW) ? prot & ~PROT_WRITE : prot;
	for (size_t i = 0; i < n; i += run_pages(offs, i, n))
		runs++;
	r = vma_set_reserve(s, VMA_RESERVE + runs);
	if (r < 0)
		goto out_put_pages;
	for (size_t i = 0; i < n;) {
		size_t k = run_pages(offs, i, n);
		r = plat_map(mm, start + i * PAGE_SIZE, k * PAGE_SIZE, pprot, offs[i]);
		if (r < 0) {
			if (i > 0) {
				int u = plat_unmap(mm, start, i * PAGE_SIZE);
				if (u < 0)
					log_error(
						"mm: platform kept [%#lx, +%#lx) of a failed mapping",
						(unsigned long)start,
						(unsigned long)(i * PAGE_SIZE));
				remove_range(mm, start, start + i * PAGE_SIZE);
			}
			goto out_put_pages;
		}
		i += k;
	}
	remove_range(mm, start, end);
	size_t first = vma_lower_bound(s, start), last = first;
	for (size_t i = 0; i < n;) {
		size_t k = run_pages(offs, i, n);
		struct vma v = {
			.start = start + i * PAGE_SIZE,
			.end = start + (i + k) * PAGE_SIZE,
			.off = offs[i],
			.prot = prot,
			.flags = flags,
			.file = file,
			.file_off = file_off + i * PAGE_SIZE,
		};
		file_get(file);
		last = vma_insert(s, &v);
		i += k;
	}
	vma_merge_range(s, first ? first - 1 : 0, last + 1);
	return 0;

out_put_pages:
	put_file_pages(mm, offs, n);
	return r;
}

/*
 * How many of the n pages of a MAP_PRIVATE mapping of file from off may start as the file's own
 * pages (its page cache) instead of a copy: 0 if the file has no page cache, else the number of
 * leading pages that hold some of the file's bytes (found with one-byte reads: the last page
 * first, then a binary search), so that no page past the end of the file is allocated for the
 * file on the mapping's behalf. Linux too shows a private mapping the file's bytes until the
 * first write to each page.
 */
static size_t private_cache_pages(struct file *file, uint64_t off, size_t n)
{
	size_t lo = 0, hi = n; /* pages [0, lo) hold file bytes, pages [hi, n) do not */
	char byte;

	if (!file->ops || !file->ops->get_pages || n == 0)
		return 0;
	if (file_pread(file, &byte, 1, (int64_t)(off + (n - 1) * PAGE_SIZE)) == 1)
		return n;
	hi = n - 1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (file_pread(file, &byte, 1, (int64_t)(off + mid * PAGE_SIZE)) == 1)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The highest page-aligned address a with [a, a+len) free and lo <= a, a+len <= hi; 0 if there
 * is none (0 is never a valid answer: lo >= PLATFORM_GUEST_MIN).
 */
static uint64_t find_free_topdown(const struct vma_set *s, uint64_t lo, uint64_t hi, uint64_t len)
{
	if (hi <= lo || hi - lo < len)
		return 0;
	size_t i = vma_lower_bound(s, hi); /* entries [0, i) end at or below hi */
	uint64_t top = hi;

	if (i < s->n && s->v[i].start < top)
		top = s->v[i].start;
	for (;;) {
		uint64_t bottom = i > 0 ? MAX(s->v[i - 1].end, lo) : lo;
		if (top >= bottom && top - bottom >= len)
			return top - len;
		if (i == 0 || s->v[i - 1].end <= lo)
			return 0;
		top = s->v[i - 1].start;
		i--;
	}
}

/* Picks the address of a mapping without MAP_FIXED. Returns 0 when there is no room. */
static uint64_t choose_addr(struct mm *mm, uint64_t hint, uint64_t len, int flags)
{
	const struct vma_set *s = vset(mm);

	if (hint) {
		hint = PAGE_ALIGN_UP(hint);
		if (hint >= PLATFORM_GUEST_MIN && hint <= PLATFORM_GUEST_MAX - len &&
		    vma_range_free(s, hint, hint + len))
			return hint;
	}
	if (flags & MAP_32BIT)
		return find_free_topdown(s, MAP_32BIT_BASE, MAP_32BIT_END, len);
	uint64_t base = MIN(mm->mmap_base, PLATFORM_GUEST_MAX);
	uint64_t a = find_free_topdown(s, PLATFORM_GUEST_MIN, base, len);
	if (!a)
		a = find_free_topdown(s, PLATFORM_GUEST_MIN, PLATFORM_GUEST_MAX, len);
	return a;
}

/* Flags MAP_SHARED_VALIDATE accepts: Linux's LEGACY_MAP_MASK. */
#define MAP_LEGACY_FLAGS                                                                         \
	(MAP_SHARED | MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS | MAP_DENYWRITE | MAP_EXECUTABLE | \
	 MAP_UNINITIALIZED | MAP_GROWSDOWN | MAP_LOCKED | MAP_NORESERVE | MAP_POPULATE |         \
	 MAP_NONBLOCK | MAP_STACK | MAP_HUGETLB | MAP_32BIT | MAP_HUGE_2MB | MAP_HUGE_1GB)

/*
 * Marks the pages of the new file mapping [addr, end) (file offset off at addr) that lie wholly
 * past size, the file's size, VMA_EOF: inaccessible, SIGBUS on access (fault.c). size < 0: the
 * file has no end (devices). Failing to mark leaves the pages readable zeros, as before.
 */
static void mark_eof_locked(struct mm *mm, uint64_t addr, uint64_t end, uint64_t off, int64_t size)
{
	struct vma_set *s = vset(mm);
	uint64_t covered;

	if (size < 0)
		return;
	covered = PAGE_ALIGN_UP((uint64_t)size);
	if (covered >= off + (end - addr))
		return;
	if (covered > off)
		addr += covered - off;
	if (vma_set_reserve(s, VMA_RESERVE) < 0)
		return;
	for (size_t i = vma_isolate(s, addr, end); i < s->n && s->v[i].start < end; i++)
		s->v[i].flags |= VMA_EOF;
	plat_protect(mm, addr, end - addr, PROT_NONE);
}

long mm_mmap(struct mm *mm, uint64_t addr, uint64_t len, int prot, int flags, struct file *file,
	     uint64_t off)
{
	bool anon = flags & MAP_ANONYMOUS;
	bool fixed = flags & (MAP_FIXED | MAP_FIXED_NOREPLACE);
	unsigned int vflags;
	uint64_t end;

	if ((flags & MAP_FIXED) && !(flags & MAP_FIXED_NOREPLACE))
		mm_patch_guard(mm, addr, len);
	if (!IS_PAGE_ALIGNED(off) || len == 0)
		return -EINVAL;
	switch (flags & MAP_TYPE) {
	case MAP_PRIVATE:
		vflags = MM_VMA_PRIVATE;
		break;
	case MAP_SHARED_VALIDATE:
		/* As Linux: only file mappings take MAP_SHARED_VALIDATE. */
		if (anon)
			return -EINVAL;
		if ((unsigned int)flags & ~MAP_LEGACY_FLAGS)
			return -EOPNOTSUPP;
		/* fallthrough */
	case MAP_SHARED:
		vflags = MM_VMA_SHARED;
		break;
	default:
		return -EINVAL;
	}
	if (anon)
		file = NULL;
	else if (!file)
		return -EBADF;
	vflags |= anon ? MM_VMA_ANON : MM_VMA_FILE;
	if (flags & MAP_GROWSDOWN) {
		/* As Linux: shared anonymous memory cannot grow down. */
		if ((vflags & MM_VMA_SHARED) && anon)
			return -EINVAL;
		vflags |= MM_VMA_GROWSDOWN;
	}

	if (!fixed) {
		addr = PAGE_ALIGN_DOWN(addr);
		if (addr && addr < PLATFORM_GUEST_MIN)
			addr = PLATFORM_GUEST_MIN;
	}
	if (len > PLATFORM_GUEST_MAX - PLATFORM_GUEST_MIN)
		return -ENOMEM;
	len = PAGE_ALIGN_UP(len);
	if (!anon && (add_overflow(off, len, &end) || end > INT64_MAX))
		return -EOVERFLOW;
	if (fixed) {
		if (!IS_PAGE_ALIGNED(addr))
			return -EINVAL;
		if (add_overflow(addr, len, &end) || end > PLATFORM_GUEST_MAX)
			return -ENOMEM;
		if (addr < PLATFORM_GUEST_MIN)
			return -EPERM;
	}
	/* No huge pages are reserved, as on a host whose nr_hugepages is 0. */
	if (flags & MAP_HUGETLB)
		return -ENOMEM;
	bool shared_file = file && (vflags & MM_VMA_SHARED);
	if (file) {
		int acc = file->flags & O_ACCMODE;
		if (acc != O_RDONLY && acc != O_RDWR)
			return -EACCES;
		if (shared_file) {
			if (!file->ops || !file->ops->get_pages)
				return -ENODEV;
			/* As Linux: a shared writable mapping needs a file open for writing. */
			if ((prot & PROT_WRITE) && acc != O_RDWR)
				return -EACCES;
			if (acc != O_RDWR)
				vflags |= VMA_NOWRITE;
		} else if (!file->ops || !file->ops->read ||
			   !(file->ops->get_pages || file->ops->map_private_by_read)) {
			return -ENODEV;
		}
	}
	prot &= PROT_RWX;
	/* The end of a regular file: pages wholly past it raise SIGBUS (mark_eof_locked). */
	int64_t eof = -1;
	if (file) {
		struct vfs_attr attr;
		if (file_getattr(file, &attr) == 0 && S_ISREG(attr.mode))
			eof = attr.size;
	}

	/* File contents are read before the lock: the read may be slow (gofer I/O). */
	int64_t pages = -1;
	_cleanup_free_ uint64_t *offs = NULL;
	/*
	 * Pages from the page cache: all of a shared mapping; the leading pages of a private one
	 * that hold file bytes (copy-on-write; the rest, past the end of the file, are fresh).
	 */
	uint64_t clen = shared_file ? len :
			file	    ? private_cache_pages(file, off, len / PAGE_SIZE) * PAGE_SIZE :
				      0;
	if (clen) {
		offs = get_file_pages(file, off, clen, shared_file && !(vflags & VMA_NOWRITE));
		if (IS_ERR(offs)) {
			long e = PTR_ERR(offs);
			offs = NULL;
			return e;
		}
	}
	if (file && clen < len) {
		pages = alloc_filled(mm, len - clen, file, off + clen);
		if (pages < 0) {
			if (offs)
				put_file_pages(mm, offs, clen / PAGE_SIZE);
			return pages;
		}
	}

	pthread_mutex_lock(&mm->lock);
	struct vma_set *s = vset(mm);
	long r = vma_set_reserve(s, VMA_RESERVE);
	if (r < 0)
		goto out_free_pages;
	if (fixed) {
		if ((flags & MAP_FIXED_NOREPLACE) && !vma_range_free(s, addr, addr + len)) {
			r = -EEXIST;
			goto out_free_pages;
		}
	} else {
		addr = choose_addr(mm, addr, len, flags);
		if (!addr) {
			r = -ENOMEM;
			goto out_free_pages;
		}
	}
	if (!may_expand_locked(mm, prot, vflags, len,
			       fixed ? mapped_in(s, addr, addr + len, false) : 0)) {
		r = -ENOMEM;
		goto out_free_pages;
	}
	if (clen) {
		/* install_file_pages_locked owns the page references from here. */
		r = install_file_pages_locked(mm, addr, offs, clen / PAGE_SIZE, prot, vflags, file,
					      off);
		free(steal_pointer(&offs));
		if (r < 0 || clen == len) {
			if (r < 0 && pages >= 0)
				memfile_free(mfile(mm), (uint64_t)pages, len - clen);
			if (r >= 0)
				mark_eof_locked(mm, addr, addr + len, off, eof);
			pthread_mutex_unlock(&mm->lock);
			return r < 0 ? r : (long)addr;
		}
		/* A private mapping past the end of the file: fresh pages for the rest. */
		r = vma_set_reserve(s, VMA_RESERVE);
		if (r < 0)
			memfile_free(mfile(mm), (uint64_t)pages, len - clen);
		else
			r = install_locked(mm, addr + clen, addr + len, prot, vflags, file,
					   off + clen, (uint64_t)pages, NULL);
		if (r < 0 && plat_unmap(mm, addr, clen) == 0)
			remove_range(mm, addr, addr + clen);
		if (r >= 0)
			mark_eof_locked(mm, addr, addr + len, off, eof);
		pthread_mutex_unlock(&mm->lock);
		return r < 0 ? r : (long)addr;
	}
	if (pages < 0) {
		pages = alloc_pages(mm, addr, addr + len);
		if (pages < 0) {
			r = pages;
			goto out_unlock;
		}
	}
	/*
	 * install_locked owns the pages from here, and frees them on failure. Shared anonymous
	 * memory is a new object of len bytes, mapped from its start (Linux ignores the offset).
	 */
	struct shm_obj obj = { 0, len };
	if (anon && (vflags & MM_VMA_SHARED)) {
		obj.id = __atomic_fetch_add(&next_shm_obj, 1, __ATOMIC_RELAXED);
		off = 0;
	}
	r = install_locked(mm, addr, addr + len, prot, vflags, file, off, (uint64_t)pages,
			   obj.id ? &obj : NULL);
	if (r >= 0 && file)
		mark_eof_locked(mm, addr, addr + len, off, eof);
	pthread_mutex_unlock(&mm->lock);
	return r < 0 ? r : (long)addr;

out_free_pages:
	if (pages >= 0)
		memfile_free(mfile(mm), (uint64_t)pages, len - clen);
	if (offs)
		put_file_pages(mm, offs, clen / PAGE_SIZE);
out_unlock:
	pthread_mutex_unlock(&mm->lock);
	return r;
}

int mm_munmap(struct mm *mm, uint64_t addr, uint64_t len)
{
	mm_patch_guard(mm, addr, len);
	if (!IS_PAGE_ALIGNED(addr) || len == 0)
		return -EINVAL;
	if (len > PLATFORM_GUEST_MAX || addr > PLATFORM_GUEST_MAX - PAGE_ALIGN_UP(len))
		return -EINVAL;
	len = PAGE_ALIGN_UP(len);

	pthread_mutex_lock(&mm->lock);
	int r = vma_set_reserve(vset(mm), VMA_RESERVE);
	if (r == 0)
		r = unmap_locked(mm, addr, addr + len);
	pthread_mutex_unlock(&mm->lock);
	return r;
}

/*
 * Gives the platform's mapping of [start, end) (covered by VMAs) protection prot, except that
 * copy-on-write VMAs stay without PROT_WRITE: one call per run of equal platform protection.
 */
static int protect_platform_locked(struct mm *mm, uint64_t start, uint64_t end, int prot)
{
	const struct vma_set *s = vset(mm);
	uint64_t run = start;
	int run_prot = -1;

	for (size_t i = vma_lower_bound(s, start); i < s->n && s->v[i].start < end; i++) {
		int p = (s->v[i].flags & (VMA_COW | VMA_IMAGE)) ? prot & ~PROT_WRITE : prot;
		if (s->v[i].flags & (VMA_LAZY | VMA_EOF))
			p = PROT_NONE;
		uint64_t a = MAX(s->v[i].start, start);
		if (p != run_prot) {
			if (run_prot >= 0) {
				int r = plat_protect(mm, run, a - run, run_prot);
				if (r < 0)
					return r;
			}
			run = a;
			run_prot = p;
		}
	}
	return run_prot >= 0 && end > run ? plat_protect(mm, run, end - run, run_prot) : 0;
}

int mm_mprotect(struct mm *mm, uint64_t addr, uint64_t len, int prot)
{
	int grows = prot & (PROT_GROWSDOWN | PROT_GROWSUP);
	uint64_t start = addr, end;

	prot &= ~grows;
	mm_patch_guard(mm, addr, len);
	if (grows == (PROT_GROWSDOWN | PROT_GROWSUP) || !IS_PAGE_ALIGNED(addr))
		return -EINVAL;
	if (len == 0)
		return 0;
	if (len > UINT64_MAX - PAGE_SIZE + 1 || add_overflow(addr, PAGE_ALIGN_UP(len), &end))
		return -ENOMEM;
	if (prot & ~(PROT_RWX | PROT_SEM))
		return -EINVAL;
	prot &= PROT_RWX;

	pthread_mutex_lock(&mm->lock);
	struct vma_set *s = vset(mm);
	int r = -ENOMEM;
	const struct vma *first = vma_find(s, start);
	if (!first)
		goto out_unlock;
	if (grows) {
		/* PROT_GROWSDOWN extends the change down to the start of a grows-down VMA. */
		r = -EINVAL;
		if (grows & PROT_GROWSUP || !(first->flags & MM_VMA_GROWSDOWN))
			goto out_unlock;
		start = first->start;
	}
	/* As Linux: the change applies up to the first hole, and the call then fails. */
	uint64_t stop = start;
	for (size_t i = vma_lower_bound(s, start); i < s->n && s->v[i].start <= stop && stop < end;
	     i++)
		stop = MIN(s->v[i].end, end);
	/* As Linux: a shared mapping of a file not open for writing never becomes writable. */
	r = -EACCES;
	for (size_t i = vma_lower_bound(s, start); i < s->n && s->v[i].start < stop; i++)
		if ((prot & PROT_WRITE) && (s->v[i].flags & VMA_NOWRITE))
			goto out_unlock;
	/* As Linux: pages that become private writable memory count against RLIMIT_DATA. */
	uint64_t newly = 0;
	for (size_t i = vma_lower_bound(s, start); i < s->n && s->v[i].start < stop; i++)
		if (is_data(prot, s->v[i].flags) && !is_data(s->v[i].prot, s->v[i].flags))
			newly += MIN(s->v[i].end, stop) - MAX(s->v[i].start, start);
	r = -ENOMEM;
	if (newly && !may_expand_data_locked(mm, newly))
		goto out_unlock;
	r = vma_set_reserve(s, VMA_RESERVE);
	if (r < 0)
		goto out_unlock;
	r = protect_platform_locked(mm, start, stop, prot);
	if (r < 0)
		goto out_unlock;
	size_t i = vma_isolate(s, start, stop);
	size_t j = i;
	for (; j < s->n && s->v[j].start < stop; j++)
		s->v[j].prot = prot;
	vma_merge_range(s, i ? i - 1 : 0, j);
	r = stop == end ? 0 : -ENOMEM;
out_unlock:
	pthread_mutex_unlock(&mm->lock);
	return r;
}

uint64_t mm_brk(struct mm *mm, uint64_t brk)
{
	pthread_mutex_lock(&mm->lock);
	struct vma_set *s = vset(mm);
	uint64_t newbrk = PAGE_ALIGN_UP(brk), oldbrk = PAGE_ALIGN_UP(mm->brk);

	if (brk < mm->start_brk || brk > PLATFORM_GUEST_MAX)
		goto out_unlock;
	/* As Linux's check_data_rlimit: the heap and the data segment within RLIMIT_DATA. */
	uint64_t data = __atomic_load_n(&mm->limit_data, __ATOMIC_RELAXED);
	if (data != UINT64_MAX && (brk - mm->start_brk) + (mm->end_data - mm->start_data) > data)
		goto out_unlock;
	if (newbrk == oldbrk) {
		mm->brk = brk;
		goto out_unlock;
	}
	if (vma_set_reserve(s, VMA_RESERVE) < 0)
		goto out_unlock;
	if (brk < mm->brk) {
		if (unmap_locked(mm, newbrk, oldbrk) < 0)
			goto out_unlock;
	} else {
		/* As Linux: keep a page between the heap and the next mapping. */
		if (!vma_range_free(s, oldbrk, MIN(newbrk + PAGE_SIZE, PLATFORM_GUEST_MAX)) ||
		    !may_expand_locked(mm, PROT_READ | PROT_WRITE, MM_VMA_PRIVATE, newbrk - oldbrk,
				       0) ||
		    map_new_locked(mm, oldbrk, newbrk, PROT_READ | PROT_WRITE,
				   MM_VMA_PRIVATE | MM_VMA_ANON | MM_VMA_HEAP, NULL, 0, NULL) < 0)
			goto out_unlock;
	}
	mm->brk = brk;
out_unlock:;
	uint64_t ret = mm->brk;
	pthread_mutex_unlock(&mm->lock);
	return ret;
}

long mm_map_vdso(struct mm *mm, uint64_t vvar_off, uint64_t image_off, uint64_t image_len)
{
	uint64_t addr;
	long r;

	pthread_mutex_lock(&mm->lock);
	struct vma_set *s = vset(mm);
	r = vma_set_reserve(s, VMA_RESERVE);
	if (r < 0)
		goto out_unlock;
	r = -ENOMEM;
	addr = choose_addr(mm, 0, PAGE_SIZE + image_len, 0);
	if (!addr)
		goto out_unlock;
	r = plat_map(mm, addr, PAGE_SIZE, PROT_READ, vvar_off);
	if (r < 0)
		goto out_unlock;
	/* Copy-on-write: the platform maps the image without write whatever mprotect says. */
	r = plat_map(mm, addr + PAGE_SIZE, image_len, PROT_READ | PROT_EXEC, image_off);
	if (r < 0) {
		plat_unmap(mm, addr, PAGE_SIZE);
		goto out_unlock;
	}
	memfile_ref(mfile(mm), vvar_off, PAGE_SIZE);
	memfile_ref(mfile(mm), image_off, image_len);
	struct vma vvar = {
		.start = addr,
		.end = addr + PAGE_SIZE,
		.off = vvar_off,
		.prot = PROT_READ,
		.flags = MM_VMA_SHARED | MM_VMA_ANON | MM_VMA_VVAR | VMA_NOWRITE,
	};
	struct vma image = {
		.start = addr + PAGE_SIZE,
		.end = addr + PAGE_SIZE + image_len,
		.off = image_off,
		.prot = PROT_READ | PROT_EXEC,
		.flags = MM_VMA_PRIVATE | MM_VMA_ANON | MM_VMA_VDSO | VMA_COW,
	};
	vma_insert(s, &vvar);
	vma_insert(s, &image);
	r = (long)(addr + PAGE_SIZE);
out_unlock:
	pthread_mutex_unlock(&mm->lock);
	return r;
}

/*
 * True when b continues a as one mapping would on Linux (one Linux VMA may be several pieces
 * here: pages not contiguous in the memory file, copy-on-write windows): adjacent, same
 * protection and kind, same file at the following offset.
 */
static bool same_mapping(const struct vma *a, const struct vma *b)
{
	if (a->end != b->start || a->prot != b->prot ||
	    (a->flags & ~(VMA_COW | VMA_LAZY | VMA_EOF | VMA_IMAGE)) !=
		    (b->flags & ~(VMA_COW | VMA_LAZY | VMA_EOF | VMA_IMAGE)) ||
	    a->file != b->file || a->obj != b->obj)
		return false;
	return !(a->file || a->obj) || a->file_off + (a->end - a->start) == b->file_off;
}

/* The end of the mapping (run of same_mapping pieces) that contains the VMA at index i. */
static uint64_t mapping_end(const struct vma_set *s, size_t i)
{
	while (i + 1 < s->n && same_mapping(&s->v[i], &s->v[i + 1]))
		i++;
	return s->v[i].end;
}

/*
 * New pages for [start, end) of the mapping v (growing it by mremap; v is copied first, the set
 * may move) whose file offset at start is file_off, installed: a shared file mapping's are the
 * file's own pages (get_pages, under mm->lock: lock order mm->lock then the filesystem's),
 * others are fresh or filled. As Linux, the pages past the end of a regular file, or of the
 * object of shared anonymous memory, are VMA_EOF (SIGBUS on touch).
 */
static int grow_locked(struct mm *mm, uint64_t start, uint64_t end, const struct vma *v,
		       uint64_t file_off)
{
	int prot = v->prot;
	unsigned int flags = v->flags & ~VMA_EOF;
	struct file *file = v->file;
	struct shm_obj obj = { v->obj, v->obj_size };
	int64_t eof = obj.id ? (int64_t)obj.size : -1;
	struct vfs_attr attr;
	int r;

	if (file && file_getattr(file, &attr) == 0 && S_ISREG(attr.mode))
		eof = attr.size;
	if (file && (flags & MM_VMA_SHARED)) {
		uint64_t *offs =
			get_file_pages(file, file_off, end - start, !(flags & VMA_NOWRITE));
		if (IS_ERR(offs))
			return (int)PTR_ERR(offs);
		r = install_file_pages_locked(mm, start, offs, (end - start) / PAGE_SIZE, prot,
					      flags, file, file_off);
		free(offs);
	} else {
		r = map_new_locked(mm, start, end, prot, flags, file, file_off,
				   obj.id ? &obj : NULL);
	}
	if (r == 0)
		mark_eof_locked(mm, start, end, file_off, eof);
	return r;
}

/*
 * Moves [old, old+old_len) (inside one mapping: see same_mapping) to new_addr, which must be
 * free for new_len >= old_len bytes; the pages move with it (no copy) and the rest of
 * [new_addr, +new_len) gets new pages (grow_locked). With dontunmap, the old range stays
 * mapped to fresh zero pages.
 */
static long move_locked(struct mm *mm, uint64_t old, uint64_t old_len, uint64_t new_addr,
			uint64_t new_len, bool dontunmap)
{
	struct vma_set *s = vset(mm);
	const struct vma *src = vma_find(s, old);
	const struct vma like = *src;
	int prot = src->prot;
	unsigned int flags = src->flags;
	struct file *file = src->file;
	uint64_t file_off = src->file_off + (old - src->start);
	uint64_t old_end = old + old_len;
	int64_t refill = -1;
	size_t count = 0;

	/* Everything that can fail for lack of memory happens before anything moves. */
	for (size_t k = vma_lower_bound(s, old); k < s->n && s->v[k].start < old_end; k++)
		count++;
	_cleanup_free_ struct vma *pieces = calloc(count + 2, sizeof(*pieces));
	if (!pieces)
		return -ENOMEM;
	/* What the old range holds after MREMAP_DONTUNMAP: zeros, or a private file's bytes. */
	if (dontunmap) {
		refill = alloc_filled(mm, old_len, file, file_off);
		if (refill < 0)
			return refill;
	}

	size_t i = vma_isolate(s, old, old_end);
	count = 0;
	for (size_t k = i; k < s->n && s->v[k].start < old_end; k++)
		pieces[count++] = s->v[k];
	int r = 0;
	size_t mapped = 0;
	for (; mapped < count && r == 0; mapped++) {
		struct vma p = pieces[mapped];

		p.start = new_addr + (p.start - old);
		p.end = new_addr + (p.end - old);
		r = plat_map_vma(mm, &p, p.start, p.end - p.start, vma_platform_prot(&p));
	}
	if (r < 0) {
		if (mapped > 1)
			plat_unmap(mm, new_addr, pieces[mapped - 2].end - old);
		vma_merge_range(s, i ? i - 1 : 0, i + count);
		if (refill >= 0)
			memfile_free(mfile(mm), (uint64_t)refill, old_len);
		return r;
	}
	if (dontunmap) {
		r = plat_map(mm, old, old_len, prot, (uint64_t)refill);
	} else {
		r = plat_unmap(mm, old, old_len);
	}
	if (r < 0)
		log_error("mm: platform kept [%#lx, +%#lx) after mremap moved it: %d",
			  (unsigned long)old, (unsigned long)old_len, r);
	vma_remove_at(s, i, count);
	size_t j = 0;
	for (size_t k = 0; k < count; k++) {
		pieces[k].start = new_addr + (pieces[k].start - old);
		pieces[k].end = new_addr + (pieces[k].end - old);
		j = vma_insert(s, &pieces[k]);
	}
	size_t lo = vma_lower_bound(s, new_addr);
	vma_merge_range(s, lo ? lo - 1 : 0, j + 1);

	if (dontunmap) {
		struct vma fresh = { .start = old,
				     .end = old + old_len,
				     .off = (uint64_t)refill,
				     .prot = prot,
				     .flags = flags & ~(VMA_COW | VMA_LAZY | VMA_IMAGE),
				     .file = file,
				     .file_off = file_off };

		if (file)
			file_get(file);
		j = vma_insert(s, &fresh);
		vma_merge_range(s, j ? j - 1 : 0, j + 1);
	}
	if (new_len > old_len) {
		r = grow_locked(mm, new_addr + old_len, new_addr + new_len, &like,
				file_off + old_len);
		if (r < 0) {
			log_warn("mm: mremap moved [%#lx, +%#lx) but could not grow it: %d",
				 (unsigned long)old, (unsigned long)old_len, r);
			return r;
		}
	}
	return (long)new_addr;
}

/*
 * Maps the pages of [old, old+old_len) (shared memory, inside one mapping) a second time at
 * new_addr, which must be free for new_len >= old_len bytes; the rest of [new_addr, +new_len)
 * gets new pages (grow_locked). Both mappings then share the pages, as after fork.
 */
static long dup_locked(struct mm *mm, uint64_t old, uint64_t old_len, uint64_t new_addr,
		       uint64_t new_len)
{
	struct vma_set *s = vset(mm);
	uint64_t old_end = old + old_len;
	size_t count = 0;

	for (size_t k = vma_lower_bound(s, old); k < s->n && s->v[k].start < old_end; k++)
		count++;
	int r = vma_set_reserve(s, count + VMA_RESERVE);
	if (r < 0)
		return r;
	_cleanup_free_ struct vma *pieces = calloc(count + 2, sizeof(*pieces));
	if (!pieces)
		return -ENOMEM;
	const struct vma *src = vma_find(s, old);
	/* A MREMAP_FIXED target may have overlapped the source and unmapped part of it. */
	if (!src || !vma_range_mapped(s, old, old_end))
		return -EFAULT;
	struct vma like = *src;
	uint64_t file_off = src->file_off + (old - src->start);

	like.flags &= ~MM_VMA_LOCKED;
	count = 0;
	for (size_t k = vma_lower_bound(s, old); k < s->n && s->v[k].start < old_end; k++) {
		struct vma p = s->v[k];
		uint64_t a = MAX(p.start, old), b = MIN(p.end, old_end);

		p.off += a - p.start;
		p.file_off += a - p.start;
		p.start = new_addr + (a - old);
		p.end = new_addr + (b - old);
		p.flags &= ~MM_VMA_LOCKED;
		pieces[count++] = p;
	}
	for (size_t k = 0; k < count; k++) {
		r = plat_map_vma(mm, &pieces[k], pieces[k].start, pieces[k].end - pieces[k].start,
				 vma_platform_prot(&pieces[k]));
		if (r < 0) {
			if (k > 0)
				plat_unmap(mm, new_addr, pieces[k - 1].end - new_addr);
			return r;
		}
	}
	size_t j = 0;
	for (size_t k = 0; k < count; k++) {
		memfile_ref(mfile(mm), pieces[k].off, pieces[k].end - pieces[k].start);
		if (pieces[k].file)
			file_get(pieces[k].file);
		j = vma_insert(s, &pieces[k]);
	}
	size_t lo = vma_lower_bound(s, new_addr);
	vma_merge_range(s, lo ? lo - 1 : 0, j + 1);
	if (new_len > old_len) {
		r = grow_locked(mm, new_addr + old_len, new_addr + new_len, &like,
				file_off + old_len);
		if (r < 0)
			return r;
	}
	return (long)new_addr;
}

long mm_mremap(struct mm *mm, uint64_t old_addr, uint64_t old_len, uint64_t new_len, int flags,
	       uint64_t new_addr)
{
	bool maymove = flags & MREMAP_MAYMOVE, fixed = flags & MREMAP_FIXED;
	bool dontunmap = flags & MREMAP_DONTUNMAP;

	mm_patch_guard(mm, old_addr, old_len ? old_len : 1);
	if (fixed)
		mm_patch_guard(mm, new_addr, new_len);

	if (flags & ~(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP))
		return -EINVAL;
	if ((fixed || dontunmap) && !maymove)
		return -EINVAL;
	if (dontunmap && old_len != new_len)
		return -EINVAL;
	if (!IS_PAGE_ALIGNED(old_addr))
		return -EINVAL;
	/* As Linux: a length that rounds up past the top wraps to 0. */
	old_len = PAGE_ALIGN_UP(old_len);
	new_len = PAGE_ALIGN_UP(new_len);
	if (new_len == 0)
		return -EINVAL;
	if (fixed) {
		if (!IS_PAGE_ALIGNED(new_addr))
			return -EINVAL;
		if (new_len > PLATFORM_GUEST_MAX || new_addr > PLATFORM_GUEST_MAX - new_len)
			return -EINVAL;
		/* The ranges may not overlap. */
		if (new_addr < old_addr + old_len && old_addr < new_addr + new_len)
			return -EINVAL;
		if (new_addr < PLATFORM_GUEST_MIN)
			return -EPERM;
	}

	pthread_mutex_lock(&mm->lock);
	struct vma_set *s = vset(mm);
	/* Reserve first: it may move the set, and v points into it. */
	long r = vma_set_reserve(s, VMA_RESERVE);
	if (r < 0)
		goto out_unlock;
	r = -EFAULT;
	const struct vma *v = vma_find(s, old_addr);
	if (!v)
		goto out_unlock;
	/* As Linux's special mappings (VM_DONTEXPAND): [vdso] and [vvar] move, never grow. */
	if ((v->flags & (MM_VMA_VDSO | MM_VMA_VVAR)) && (new_len > old_len || dontunmap)) {
		r = dontunmap ? -EINVAL : -EFAULT;
		goto out_unlock;
	}
	r = -EFAULT;
	/* As Linux: old_len 0 duplicates shared memory only; in place there is no room for it. */
	if (old_len == 0) {
		r = -EINVAL;
		if (!(v->flags & MM_VMA_SHARED))
			goto out_unlock;
		r = -ENOMEM;
		if (!maymove)
			goto out_unlock;
	}
	/*
	 * A shrink in place only unmaps the tail, wherever the VMA boundaries are (Linux does
	 * this before checking that the old range lies in one VMA).
	 */
	if (!fixed && !dontunmap && new_len <= old_len && old_len) {
		r = unmap_locked(mm, old_addr + new_len, old_addr + old_len);
		if (r == 0)
			r = (long)old_addr;
		goto out_unlock;
	}
	r = -EFAULT;
	size_t vi = (size_t)(v - s->v);
	uint64_t map_end = mapping_end(s, vi);
	if (old_len > map_end - old_addr)
		goto out_unlock;
	/* Shared memory left mapped where it was is mapped twice: a duplicate. */
	bool dup = old_len == 0 || (dontunmap && (v->flags & MM_VMA_SHARED));
	/* As Linux: growth, and the copy MREMAP_DONTUNMAP leaves, count against the limits. */
	int vprot = v->prot;
	unsigned int vflags = v->flags;
	uint64_t growth = (new_len > old_len ? new_len - old_len : 0) + (dontunmap ? old_len : 0);
	if (dup) {
		/* The pages mapped again are those of the old range up to the mapping's end. */
		old_len = MIN(new_len, map_end - old_addr);
		growth = new_len;
	}

	if (fixed) {
		r = unmap_locked(mm, new_addr, new_addr + new_len);
		if (r < 0)
			goto out_unlock;
		if (old_len > new_len && !dup) {
			r = unmap_locked(mm, old_addr + new_len, old_addr + old_len);
			if (r < 0)
				goto out_unlock;
			old_len = new_len;
		}
		r = -ENOMEM;
		if (!may_expand_locked(mm, vprot, vflags, growth, 0))
			goto out_unlock;
		r = dup ? dup_locked(mm, old_addr, old_len, new_addr, new_len) :
			  move_locked(mm, old_addr, old_len, new_addr, new_len, dontunmap);
		goto out_unlock;
	}
	r = -ENOMEM;
	if (!may_expand_locked(mm, vprot, vflags, growth, 0))
		goto out_unlock;
	uint64_t old_end = old_addr + old_len, new_end;
	if (!dontunmap && !dup && old_end == map_end &&
	    !add_overflow(old_addr, new_len, &new_end) && new_end <= PLATFORM_GUEST_MAX &&
	    vma_range_free(s, old_end, new_end)) {
		const struct vma last = *vma_find(s, old_end - 1);
		r = grow_locked(mm, old_end, new_end, &last,
				last.file_off + (old_end - last.start));
		if (r == 0)
			r = (long)old_addr;
		goto out_unlock;
	}
	r = -ENOMEM;
	if (!maymove)
		goto out_unlock;
	new_addr = choose_addr(mm, 0, new_len, 0);
	if (!new_addr)
		goto out_unlock;
	r = dup ? dup_locked(mm, old_addr, old_len, new_addr, new_len) :
		  move_locked(mm, old_addr, old_len, new_addr, new_len, dontunmap);
out_unlock:
	pthread_mutex_unlock(&mm->lock);
	return r;
}

/*
 * Kinds of advice: 0 unknown, 1 accepted and ignored, 2 drops the pages' contents, 3 sets or
 * clears a fork flag.
 */
static int advice_kind(int advice)
{
	switch (advice) {
	case MADV_DONTFORK:
	case MADV_DOFORK:
	case MADV_WIPEONFORK:
	case MADV_KEEPONFORK:
		return 3;
	case MADV_NORMAL:
	case MADV_RANDOM:
	case MADV_SEQUENTIAL:
	case MADV_WILLNEED:
	case MADV_MERGEABLE:
	case MADV_UNMERGEABLE:
	case MADV_HUGEPAGE:
	case MADV_NOHUGEPAGE:
	case MADV_DONTDUMP:
	case MADV_DODUMP:
	case MADV_COLD:
	case MADV_PAGEOUT:
	case MADV_POPULATE_READ:
	case MADV_POPULATE_WRITE:
	case MADV_COLLAPSE:
		return 1;
	case MADV_DONTNEED:
	case MADV_DONTNEED_LOCKED:
	case MADV_FREE:
	case MADV_REMOVE:
		return 2;
	default:
		return 0;
	}
}

/* MADV_(DONT|DO)FORK, MADV_(WIPE|KEEP)ONFORK on [a, b), inside one VMA. */
static int fork_advice_locked(struct mm *mm, uint64_t a, uint64_t b, int advice)
{
	struct vma_set *s = vset(mm);
	unsigned int set = 0, clear = 0;
	const struct vma *v = vma_find(s, a);

	switch (advice) {
	case MADV_DONTFORK:
		set = MM_VMA_DONTFORK;
		break;
	case MADV_DOFORK:
		clear = MM_VMA_DONTFORK;
		break;
	case MADV_WIPEONFORK:
		/* As Linux: only private anonymous memory can be wiped. */
		if ((v->flags & (MM_VMA_PRIVATE | MM_VMA_ANON)) != (MM_VMA_PRIVATE | MM_VMA_ANON))
			return -EINVAL;
		set = MM_VMA_WIPEONFORK;
		break;
	default:
		clear = MM_VMA_WIPEONFORK;
		break;
	}
	if ((v->flags & ~clear) == v->flags && (v->flags | set) == v->flags)
		return 0;
	int r = vma_set_reserve(s, VMA_RESERVE);
	if (r < 0)
		return r;
	size_t i = vma_isolate(s, a, b);
	s->v[i].flags = (s->v[i].flags | set) & ~clear;
	vma_merge_range(s, i ? i - 1 : 0, i + 1);
	return 0;
}

/*
 * MADV_DONTNEED, MADV_FREE, MADV_REMOVE on [a, b), inside one VMA: private memory reads zero (or
 * the file's bytes) again; shared anonymous memory keeps its contents, which belong to every mm
 * sharing it, except with MADV_REMOVE, which zeroes them for all (as punching a hole in shmem).
 */
static int drop_pages_locked(struct mm *mm, uint64_t a, uint64_t b, int advice)
{
	struct vma_set *s = vset(mm);
	const struct vma *v = vma_find(s, a);
	uint64_t off = v->off + (a - v->start);
	uint64_t foff = v->file_off + (a - v->start);

	if ((advice == MADV_FREE &&
	     (v->flags & (MM_VMA_ANON | MM_VMA_PRIVATE)) != (MM_VMA_ANON | MM_VMA_PRIVATE)) ||
	    (advice == MADV_REMOVE && !(v->flags & MM_VMA_SHARED)))
		return -EINVAL;
	/* As Linux: MADV_REMOVE punches the object's pages only through a writable mapping. */
	if (advice == MADV_REMOVE && !(v->flags & MM_VMA_VVAR) && !(v->prot & PROT_WRITE))
		return -EACCES;
	/* As Linux: only MADV_DONTNEED_LOCKED drops locked pages. */
	if ((v->flags & MM_VMA_LOCKED) && advice != MADV_DONTNEED_LOCKED)
		return -EINVAL;
	/* The time page is the sentry's (Linux: no VM_WRITE); the image stays the image. */
	if (v->flags & MM_VMA_VVAR)
		return advice == MADV_REMOVE ? -EINVAL : 0;
	if (v->flags & MM_VMA_VDSO)
		return advice == MADV_REMOVE ? -EINVAL : 0;
	if (v->flags & MM_VMA_SHARED) {
		if (advice == MADV_REMOVE)
			memfile_zero(mfile(mm), off, b - a);
		return 0;
	}
	if (!(v->flags & VMA_COW)) {
		struct file *vfile = v->file;
		bool vlazy = (v->flags & VMA_LAZY) != 0;

		/* The image's pages: the platform maps the memory file's (zeroed below) instead. */
		if (v->flags & VMA_IMAGE) {
			int r = image_resolve_locked(mm, a, b, false);
			if (r < 0)
				return r;
		}
		memfile_zero(mfile(mm), off, b - a);
		/* A private file mapping drops its changes: it reads the file's bytes again. */
		if (vfile)
			return fill_from_file(mm, off, b - a, vfile, foff);
		/* Under a memory limit, the next touch is checked against it again. */
		if (!mm_lazy(mm) || vlazy)
			return 0;
		int r = vma_set_reserve(s, VMA_RESERVE);
		if (r == 0)
			r = plat_protect(mm, a, b - a, PROT_NONE);
		if (r < 0)
			return 0; /* the pages are zero either way; they stay populated */
		size_t i = vma_isolate(s, a, b);
		s->v[i].flags |= VMA_LAZY;
		vma_merge_range(s, i ? i - 1 : 0, i + 1);
		return 0;
	}
	/* Pages perhaps shared with another mm: give this mm fresh ones instead of zeroing. */
	struct file *file = v->file;
	int prot = v->prot;
	/* Reserving may move the VMA array: v is not used past this point. */
	int r = vma_set_reserve(s, VMA_RESERVE);
	if (r < 0)
		return r;
	int64_t fresh = alloc_filled(mm, b - a, file, foff);
	if (fresh < 0)
		return (int)fresh;
	bool lazy = !file && mm_lazy(mm);
	r = plat_map(mm, a, b - a, lazy ? PROT_NONE : prot, (uint64_t)fresh);
	if (r < 0) {
		memfile_free(mfile(mm), (uint64_t)fresh, b - a);
		return r;
	}
	size_t i = vma_isolate(s, a, b);
	memfile_free(mfile(mm), s->v[i].off, b - a);
	s->v[i].off = (uint64_t)fresh;
	s->v[i].flags &= ~(VMA_COW | VMA_LAZY | VMA_IMAGE);
	if (lazy)
		s->v[i].flags |= VMA_LAZY;
	vma_merge_range(s, i ? i - 1 : 0, i + 1);
	return 0;
}

int mm_madvise(struct mm *mm, uint64_t addr, uint64_t len, int advice)
{
	uint64_t end;

	mm_patch_guard(mm, addr, len);

	if (!IS_PAGE_ALIGNED(addr))
		return -EINVAL;
	if (advice == MADV_HWPOISON || advice == MADV_SOFT_OFFLINE)
		return -EPERM; /* CAP_SYS_ADMIN on the host, which a guest never has */
	int kind = advice_kind(advice);
	if (!kind)
		return -EINVAL;
	if (len > UINT64_MAX - PAGE_SIZE + 1 || add_overflow(addr, PAGE_ALIGN_UP(len), &end))
		return -EINVAL;
	if (end == addr)
		return 0;

	pthread_mutex_lock(&mm->lock);
	struct vma_set *s = vset(mm);
	int r = 0;
	bool hole = false;
	uint64_t cur = addr;
	while (cur < end) {
		size_t i = vma_lower_bound(s, cur);
		if (i == s->n || s->v[i].start >= end) {
			hole = true;
			break;
		}
		if (s->v[i].start > cur)
			hole = true;
		uint64_t a = MAX(cur, s->v[i].start), b = MIN(end, s->v[i].end);
		cur = b;
		if (kind == 1)
			continue;
		if (kind == 3) {
			r = fork_advice_locked(mm, a, b, advice);
		} else {
			r = drop_pages_locked(mm, a, b, advice);
		}
		if (r < 0)
			break;
	}
	pthread_mutex_unlock(&mm->lock);
	if (r == 0 && hole)
		r = -ENOMEM;
	return r;
}

/* Marks or unmarks [start, end) MM_VMA_LOCKED; *hole when part of it is unmapped. */
static int mlock_locked(struct mm *mm, uint64_t start, uint64_t end, bool lock, bool *hole)
{
	struct vma_set *s = vset(mm);
	uint64_t cur = start;
	int r = 0;

	*hole = false;
	for (size_t i = vma_lower_bound(s, start); cur < end; i++) {
		if (i >= s->n || s->v[i].start >= end) {
			*hole = true;
			break;
		}
		if (s->v[i].start > cur)
			*hole = true;
		uint64_t a = MAX(cur, s->v[i].start), b = MIN(end, s->v[i].end);
		cur = b;
		if (!(s->v[i].flags & MM_VMA_LOCKED) == !lock)
			continue;
		r = vma_set_reserve(s, VMA_RESERVE);
		if (r < 0)
			break;
		i = vma_isolate(s, a, b);
		if (lock)
			s->v[i].flags |= MM_VMA_LOCKED;
		else
			s->v[i].flags &= ~MM_VMA_LOCKED;
	}
	if (s->n)
		vma_merge_range(s, 0, s->n - 1);
	return r;
}

int mm_mlock(struct mm *mm, uint64_t start, uint64_t end, bool lock)
{
	bool hole;
	int r;

	if (start >= end)
		return 0;
	pthread_mutex_lock(&mm->lock);
	r = mlock_locked(mm, start, end, lock, &hole);
	pthread_mutex_unlock(&mm->lock);
	return r < 0 ? r : hole ? -ENOMEM : 0;
}

void mm_mlock_all(struct mm *mm, bool lock)
{
	bool hole;

	pthread_mutex_lock(&mm->lock);
	struct vma_set *s = vset(mm);
	if (s->n && mlock_locked(mm, s->v[0].start, s->v[s->n - 1].end, lock, &hole) < 0)
		log_warn("mm: mlockall could not mark every mapping");
	pthread_mutex_unlock(&mm->lock);
}

uint64_t mm_rss_pages(struct mm *mm)
{
	uint64_t n = 0;
	int tries = 0;

	/*
	 * The OOM killer may run with a filesystem lock held (a tmpfs write), which comes after
	 * mm->lock in the lock order: wait for the lock a little, never for good.
	 */
	while (pthread_mutex_trylock(&mm->lock) != 0) {
		struct timespec ts = { 0, 1000 * 1000 };

		if (++tries > 200)
			return 0;
		nanosleep(&ts, NULL);
	}
	const struct vma_set *s = vset(mm);
	for (size_t i = 0; i < s->n; i++)
		n += memfile_resident(mfile(mm), s->v[i].off, s->v[i].end - s->v[i].start);
	pthread_mutex_unlock(&mm->lock);
	return n;
}

/* What mm_for_each_vma and mm_for_each_mapping tell of one VMA (the internal flags hidden). */
static struct mm_vma_info vma_info_of(const struct vma *v)
{
	return (struct mm_vma_info){
		.start = v->start,
		.end = v->end,
		.prot = v->prot,
		.flags = v->flags & ~(VMA_COW | VMA_NOWRITE | VMA_LAZY | VMA_EOF | VMA_IMAGE),
		.file = v->file,
		.file_off = v->file_off,
		.mf_off = v->off,
		.cow = (v->flags & VMA_COW) != 0,
		.obj = v->obj,
	};
}

int mm_for_each_vma(struct mm *mm, int (*fn)(const struct mm_vma_info *vma, void *arg), void *arg)
{
	int r = 0;

	pthread_mutex_lock(&mm->lock);
	const struct vma_set *s = vset(mm);
	for (size_t i = 0; i < s->n && r == 0; i++) {
		struct mm_vma_info info = vma_info_of(&s->v[i]);

		r = fn(&info, arg);
	}
	pthread_mutex_unlock(&mm->lock);
	return r;
}

int mm_for_each_mapping(struct mm *mm, bool resident,
			int (*fn)(const struct mm_vma_info *vma, void *arg), void *arg)
{
	int r = 0;

	pthread_mutex_lock(&mm->lock);
	const struct vma_set *s = vset(mm);
	for (size_t i = 0; i < s->n && r == 0; i++) {
		/* .cow is or-ed over the pieces below, the first included. */
		struct mm_vma_info info = vma_info_of(&s->v[i]);

		for (;; i++) {
			const struct vma *p = &s->v[i];
			info.end = p->end;
			info.cow |= (p->flags & VMA_COW) != 0;
			if (resident) {
				uint64_t n = memfile_resident(mfile(mm), p->off, p->end - p->start);
				info.resident += n;
				if (p->flags & VMA_COW)
					info.resident_cow += n;
			}
			if (i + 1 >= s->n || !same_mapping(p, &s->v[i + 1]))
				break;
		}
		r = fn(&info, arg);
	}
	pthread_mutex_unlock(&mm->lock);
	return r;
}

/* A range of a shared file mapping to write back, taken under mm->lock and synced after. */
struct sync_range {
	struct file *file; /* referenced */
	uint64_t pgoff, npages;
};

int mm_msync(struct mm *mm, uint64_t addr, uint64_t len, int flags)
{
	uint64_t end;

	if (flags & ~(MS_ASYNC | MS_INVALIDATE | MS_SYNC))
		return -EINVAL;
	if ((flags & MS_ASYNC) && (flags & MS_SYNC))
		return -EINVAL;
	if (!IS_PAGE_ALIGNED(addr))
		return -EINVAL;
	if (len > UINT64_MAX - PAGE_SIZE + 1 || add_overflow(addr, PAGE_ALIGN_UP(len), &end))
		return -ENOMEM;
	if (end == addr)
		return 0;

	pthread_mutex_lock(&mm->lock);
	const struct vma_set *s = vset(mm);
	bool hole = false;
	size_t n = 0, cap = 0;
	struct sync_range *ranges = NULL;
	int r = 0;
	uint64_t cur = addr;
	for (size_t i = vma_lower_bound(s, addr); cur < end; i++) {
		if (i == s->n || s->v[i].start >= end) {
			hole = true;
			break;
		}
		const struct vma *v = &s->v[i];
		if (v->start > cur)
			hole = true;
		uint64_t a = MAX(cur, v->start), b = MIN(end, v->end);
		cur = b;
		if (!(v->flags & MM_VMA_SHARED) || !v->file || !v->file->ops->sync_pages ||
		    (v->flags & VMA_NOWRITE))
			continue;
		uint64_t pgoff = (v->file_off + (a - v->start)) / PAGE_SIZE;
		/* Pieces of one mapping (pages not contiguous in the memory file) sync as one. */
		if (n > 0 && ranges[n - 1].file == v->file &&
		    ranges[n - 1].pgoff + ranges[n - 1].npages == pgoff) {
			ranges[n - 1].npages += (b - a) / PAGE_SIZE;
			continue;
		}
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			struct sync_range *nr = realloc(ranges, ncap * sizeof(*nr));
			if (!nr) {
				r = -ENOMEM;
				break;
			}
			ranges = nr;
			cap = ncap;
		}
		file_get(v->file);
		ranges[n++] = (struct sync_range){
			.file = v->file,
			.pgoff = pgoff,
			.npages = (b - a) / PAGE_SIZE,
		};
	}
	pthread_mutex_unlock(&mm->lock);

	/* The writes may be slow (gofer I/O): they happen without the lock. */
	for (size_t i = 0; i < n; i++) {
		struct file *f = ranges[i].file;
		int e = f->ops->sync_pages(f, ranges[i].pgoff, ranges[i].npages, flags & MS_SYNC);
		if (e < 0 && r == 0)
			r = e;
		file_put(f);
	}
	free(ranges);
	if (r == 0 && hole)
		r = -ENOMEM;
	return r;
}
