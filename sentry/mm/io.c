/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Guest memory access from the sentry (DESIGN.md rule 6): every access walks the VMAs under
 * mm->lock, checks protections, and copies through the sentry's mapping of the memory file.
 * One binary search per call, then one step per VMA crossed; no allocation.
 *
 * "Readable" means PROT_READ or PROT_WRITE: on x86-64 a writable page is readable, so a guest
 * may write(2) from a PROT_WRITE-only buffer, as on Linux. PROT_EXEC alone is not readable
 * (execute-only, as Linux makes it with protection keys).
 *
 * Writes never go into a page another mm still shares (copy-on-write after fork) or the platform
 * maps from a restore's image (VMA_IMAGE): the range is unshared first (cow_resolve_locked), and
 * a write stops at any VMA still VMA_COW or VMA_IMAGE after that.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "common/util.h"
#include "sentry/kernel/kernel.h"
#include "sentry/mm/internal.h"
#include "sentry/mm/memfile.h"
#include "sentry/mm/mm.h"
#include "sentry/mm/vma.h"
#include "sentry/platform/platform.h"

enum io_mode {
	IO_READ, /* guest -> sentry; needs a readable page */
	IO_WRITE, /* sentry -> guest; needs PROT_WRITE */
	IO_POKE, /* sentry -> guest; private pages whatever their protection, writable shared ones */
};

static bool access_ok(const struct vma *v, enum io_mode mode)
{
	switch (mode) {
	case IO_READ:
		return v->prot & (PROT_READ | PROT_WRITE);
	case IO_WRITE:
		return v->prot & PROT_WRITE;
	case IO_POKE:
		/*
		 * As Linux's FOLL_FORCE: a private mapping takes the write whatever its protection
		 * (copy-on-write), a shared one only if writable: not a file opened read-only, nor
		 * the time page every mm shares.
		 */
		return !(v->flags & MM_VMA_SHARED) || (v->prot & PROT_WRITE);
	}
	return false;
}

/*
 * Clamps the guest range [addr, addr+len) to the guest address space. Returns false when its
 * first byte is not a guest address or the range wraps around.
 */
static bool guest_range(uint64_t addr, size_t len, uint64_t *end)
{
	if (addr >= PLATFORM_GUEST_MAX || add_overflow(addr, (uint64_t)len, end))
		return false;
	*end = MIN(*end, PLATFORM_GUEST_MAX);
	return true;
}

static ssize_t copy_locked(struct mm *mm, uint64_t addr, void *buf, size_t len, enum io_mode mode)
{
	const struct vma_set *s = mm->vmas;
	struct memfile *mf = &mm->k->mf;
	uint64_t end, cur = addr;

	if (len == 0)
		return 0;
	if (!guest_range(addr, len, &end))
		return -EFAULT;
	for (size_t i = vma_lower_bound(s, addr); cur < end && i < s->n; i++) {
		const struct vma *v = &s->v[i];
		if (v->start > cur || !access_ok(v, mode))
			break;
		if (v->flags & VMA_EOF) {
			/* Past the end of the file: a bad address, unless the file has grown. */
			if (!eof_revalidate_locked(mm, cur))
				break;
			i = vma_lower_bound(s, cur) - 1; /* the set changed; wraps to 0 after i++ */
			continue;
		}
		if (mode != IO_READ && (v->flags & (VMA_COW | VMA_IMAGE)))
			break;
		size_t n = MIN(end, v->end) - cur;
		/* A restored page's bytes before anyone reads or writes it (image.c). */
		memfile_image_load(mf, v->off + (cur - v->start), n);
		uint8_t *p = memfile_ptr(mf, v->off + (cur - v->start));
		uint8_t *b = (uint8_t *)buf + (cur - addr);
		if (mode == IO_READ)
			memcpy(b, p, n);
		else
			memcpy(p, b, n);
		cur += n;
	}
	return cur > addr ? (ssize_t)(cur - addr) : -EFAULT;
}

/*
 * Before the sentry writes [addr, addr+len): gives this mm its own copy of every shared page of
 * the part it may write (up to the first hole or page without the access). A failure only
 * shortens the write (the copy stops at the first VMA still copy-on-write).
 */
static void unshare_for_write_locked(struct mm *mm, uint64_t addr, size_t len, enum io_mode mode)
{
	const struct vma_set *s = mm->vmas;
	uint64_t end, cur = addr;
	bool cow = false;

	if (len == 0 || !guest_range(addr, len, &end))
		return;
	for (size_t i = vma_lower_bound(s, addr); cur < end && i < s->n; i++) {
		const struct vma *v = &s->v[i];
		if (v->start > cur || !access_ok(v, mode) || (v->flags & VMA_EOF))
			break;
		cow |= (v->flags & (VMA_COW | VMA_IMAGE)) != 0;
		cur = MIN(end, v->end);
	}
	if (cow)
		cow_resolve_locked(mm, PAGE_ALIGN_DOWN(addr), PAGE_ALIGN_UP(cur));
}

/*
 * Under a memory limit, before the sentry writes [addr, addr+len): the part of it in pages not
 * populated yet (VMA_LAZY) is new memory, as a guest touch would be; when it does not fit under
 * the limit, the OOM killer makes room first (mm->lock is dropped meanwhile, as in a fault).
 * The write happens either way: if the caller's own process was chosen, it dies after the call.
 */
static void charge_for_write_locked(struct mm *mm, uint64_t addr, size_t len)
{
	const struct vma_set *s = mm->vmas;
	struct memfile *mf = &mm->k->mf;
	uint64_t end, need = 0;

	if ((!__atomic_load_n(&mf->limit, __ATOMIC_RELAXED) &&
	     !__atomic_load_n(&mf->charge_hook, __ATOMIC_RELAXED)) ||
	    len == 0 || !guest_range(addr, len, &end))
		return;
	for (size_t i = vma_lower_bound(s, addr); i < s->n && s->v[i].start < end; i++)
		if (s->v[i].flags & VMA_LAZY)
			need += MIN(end, s->v[i].end) - MAX(addr, s->v[i].start);
	if (need && __atomic_load_n(&mf->charge_hook, __ATOMIC_RELAXED)) {
		/* A pod member's limit: measured without mm->lock (it looks at every mm). */
		pthread_mutex_unlock(&mm->lock);
		memfile_charge_hook(mf, need);
		pthread_mutex_lock(&mm->lock);
	}
	if (need == 0 || memfile_fits(mf, need))
		return;
	pthread_mutex_unlock(&mm->lock);
	memfile_charge(mf, need);
	pthread_mutex_lock(&mm->lock);
}

static ssize_t copy(struct mm *mm, uint64_t addr, void *buf, size_t len, enum io_mode mode)
{
	pthread_mutex_lock(&mm->lock);
	if (mode != IO_READ) {
		charge_for_write_locked(mm, addr, len);
		unshare_for_write_locked(mm, addr, len, mode);
	}
	ssize_t r = copy_locked(mm, addr, buf, len, mode);
	pthread_mutex_unlock(&mm->lock);
	return r;
}

ssize_t mm_copy_in(struct mm *mm, void *dst, uint64_t addr, size_t len)
{
	return copy(mm, addr, dst, len, IO_READ);
}

ssize_t mm_copy_out(struct mm *mm, uint64_t addr, const void *src, size_t len)
{
	return copy(mm, addr, (void *)src, len, IO_WRITE);
}

ssize_t mm_poke(struct mm *mm, uint64_t addr, const void *src, size_t len)
{
	return copy(mm, addr, (void *)src, len, IO_POKE);
}

ssize_t mm_copy_in_string(struct mm *mm, char *dst, uint64_t addr, size_t max)
{
	uint64_t end, cur = addr;
	ssize_t r = -EFAULT;

	if (max == 0)
		return -ENAMETOOLONG;
	if (!guest_range(addr, max, &end)) {
		/* A wrapping max only bounds the search: clamp it to the guest space. */
		if (addr >= PLATFORM_GUEST_MAX)
			return -EFAULT;
		end = PLATFORM_GUEST_MAX;
	}

	pthread_mutex_lock(&mm->lock);
	const struct vma_set *s = mm->vmas;
	struct memfile *mf = &mm->k->mf;
	for (size_t i = vma_lower_bound(s, addr); cur < end && i < s->n; i++) {
		const struct vma *v = &s->v[i];
		if (v->start > cur || !access_ok(v, IO_READ))
			break;
		if (v->flags & VMA_EOF) {
			if (!eof_revalidate_locked(mm, cur))
				break;
			i = vma_lower_bound(s, cur) - 1;
			continue;
		}
		size_t n = MIN(end, v->end) - cur;
		memfile_image_load(mf, v->off + (cur - v->start), n);
		const uint8_t *p = memfile_ptr(mf, v->off + (cur - v->start));
		const uint8_t *nul = memchr(p, 0, n);
		if (nul)
			n = (size_t)(nul - p) + 1;
		memcpy(dst + (cur - addr), p, n);
		cur += n;
		if (nul) {
			r = (ssize_t)(cur - addr - 1);
			goto out_unlock;
		}
	}
	/* Every byte up to max was readable and none was NUL. */
	if (cur - addr == max)
		r = -ENAMETOOLONG;
out_unlock:
	pthread_mutex_unlock(&mm->lock);
	return r;
}

/* The memory-file pages under the sentry pointer range [p, p+n). */
static void iov_pages(struct memfile *mf, const void *p, size_t n, uint64_t *off, uint64_t *len)
{
	uint64_t a = (uint64_t)((const uint8_t *)p - mf->base);

	*off = PAGE_ALIGN_DOWN(a);
	*len = PAGE_ALIGN_UP(a + n) - *off;
}

static int translate(struct mm *mm, uint64_t addr, size_t len, bool write, struct iovec *iov,
		     int maxiov, size_t *covered, bool pin)
{
	enum io_mode mode = write ? IO_WRITE : IO_READ;
	uint64_t end, cur = addr;
	int n_iov = 0;

	*covered = 0;
	if (len == 0 || maxiov <= 0 || !guest_range(addr, len, &end))
		return 0;

	pthread_mutex_lock(&mm->lock);
	if (write) {
		charge_for_write_locked(mm, addr, len);
		unshare_for_write_locked(mm, addr, len, mode);
	}
	const struct vma_set *s = mm->vmas;
	struct memfile *mf = &mm->k->mf;
	for (size_t i = vma_lower_bound(s, addr); cur < end && i < s->n; i++) {
		const struct vma *v = &s->v[i];
		if (v->start > cur || !access_ok(v, mode))
			break;
		if (v->flags & VMA_EOF) {
			if (!eof_revalidate_locked(mm, cur))
				break;
			i = vma_lower_bound(s, cur) - 1;
			continue;
		}
		if (write && (v->flags & (VMA_COW | VMA_IMAGE)))
			break;
		size_t n = MIN(end, v->end) - cur;
		memfile_image_load(mf, v->off + (cur - v->start), n);
		uint8_t *p = memfile_ptr(mf, v->off + (cur - v->start));
		/* Adjacent VMAs over adjacent pages make one iovec. */
		if (n_iov > 0 && (uint8_t *)iov[n_iov - 1].iov_base + iov[n_iov - 1].iov_len == p) {
			iov[n_iov - 1].iov_len += n;
		} else {
			if (n_iov == maxiov)
				break;
			iov[n_iov++] = (struct iovec){ .iov_base = p, .iov_len = n };
		}
		if (pin) {
			/* VMAs start and end on page boundaries: pieces never share a page. */
			uint64_t off, plen;

			iov_pages(mf, p, n, &off, &plen);
			memfile_ref(mf, off, plen);
		}
		cur += n;
	}
	if (pin)
		mm->io_pins += (unsigned int)n_iov;
	pthread_mutex_unlock(&mm->lock);
	*covered = cur - addr;
	return n_iov;
}

int mm_translate(struct mm *mm, uint64_t addr, size_t len, bool write, struct iovec *iov,
		 int maxiov, size_t *covered)
{
	return translate(mm, addr, len, write, iov, maxiov, covered, false);
}

int mm_translate_pin(struct mm *mm, uint64_t addr, size_t len, bool write, struct iovec *iov,
		     int maxiov, size_t *covered)
{
	return translate(mm, addr, len, write, iov, maxiov, covered, true);
}

void mm_translate_unpin(struct mm *mm, const struct iovec *iov, int n)
{
	struct memfile *mf = &mm->k->mf;

	if (n <= 0)
		return;
	for (int i = 0; i < n; i++) {
		uint64_t off, len;

		iov_pages(mf, iov[i].iov_base, iov[i].iov_len, &off, &len);
		memfile_free(mf, off, len);
	}
	pthread_mutex_lock(&mm->lock);
	assert(mm->io_pins >= (unsigned int)n);
	mm->io_pins -= (unsigned int)n;
	if (mm->io_pins == 0)
		pthread_cond_broadcast(&mm->io_idle);
	pthread_mutex_unlock(&mm->lock);
}

size_t mm_access_len(struct mm *mm, uint64_t addr, size_t len, bool write)
{
	enum io_mode mode = write ? IO_WRITE : IO_READ;
	uint64_t end, cur = addr;

	if (len == 0 || !guest_range(addr, len, &end))
		return 0;
	pthread_mutex_lock(&mm->lock);
	const struct vma_set *s = mm->vmas;
	for (size_t i = vma_lower_bound(s, addr); cur < end && i < s->n; i++) {
		const struct vma *v = &s->v[i];
		if (v->start > cur || !access_ok(v, mode))
			break;
		cur = MIN(end, v->end);
	}
	pthread_mutex_unlock(&mm->lock);
	return cur - addr;
}
