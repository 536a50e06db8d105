/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pages of a checkpoint image loaded on first use (memfile.h, "Lazy restore"). A restore reserves
 * the image's ranges at their memory-file offsets without reading them; each is filled from the
 * pages file the first time anything needs its bytes: a guest's first touch (its VMAs are
 * VMA_LAZY: the platform maps them inaccessible until then), the sentry's own access (io.c), a
 * copy-on-write copy (fault.c), or a filesystem that owns them (loaded at once by the restore).
 * A page that is freed or zeroed before it was loaded is forgotten, so a later owner of its
 * offset never gets the image's bytes.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "sentry/mm/memfile.h"

#define PAGE 4096ULL

struct image_range {
	uint64_t off, len, file_off; /* file_off UINT64_MAX: zeros (nothing to load) */
	uint64_t *unloaded; /* one bit per page; NULL for zeros */
};

struct memfile_image {
	pthread_mutex_t lock;
	int fd;
	struct image_range *r; /* sorted by off, disjoint */
	size_t n;
	uint64_t left; /* atomic: pages not loaded yet; 0 means nothing to do anywhere */
};

int memfile_image_attach(struct memfile *mf, int fd, const uint64_t *off, const uint64_t *len,
			 const uint64_t *file_off, size_t n)
{
	struct memfile_image *im = calloc(1, sizeof(*im));

	if (!im || !(im->r = calloc(n ? n : 1, sizeof(*im->r)))) {
		free(im);
		return -ENOMEM;
	}
	pthread_mutex_init(&im->lock, NULL);
	im->fd = fd;
	im->n = n;
	for (size_t i = 0; i < n; i++) {
		struct image_range *r = &im->r[i];
		uint64_t pages = len[i] / PAGE;

		r->off = off[i];
		r->len = len[i];
		r->file_off = file_off[i];
		if (r->file_off == UINT64_MAX)
			continue;
		r->unloaded = malloc((pages + 63) / 64 * sizeof(uint64_t));
		if (!r->unloaded)
			return -ENOMEM; /* the restore fails: the sentry exits */
		memset(r->unloaded, 0xff, (pages + 63) / 64 * sizeof(uint64_t));
		if (pages % 64)
			r->unloaded[pages / 64] = (1ULL << (pages % 64)) - 1;
		im->left += pages;
	}
	__atomic_store_n(&mf->image, im, __ATOMIC_RELEASE);
	return 0;
}

static bool test_bit(const uint64_t *b, uint64_t i)
{
	return (b[i / 64] >> (i % 64)) & 1;
}

static void clear_bit(uint64_t *b, uint64_t i)
{
	b[i / 64] &= ~(1ULL << (i % 64));
}

/* The first range whose end is above off (im->n if none). */
static size_t first_range(const struct memfile_image *im, uint64_t off)
{
	size_t lo = 0, hi = im->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (im->r[mid].off + im->r[mid].len <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Loads (load) or forgets (!load) the unloaded pages of [off, off+len). im->lock held. */
static int walk_locked(struct memfile *mf, struct memfile_image *im, uint64_t off, uint64_t len,
		       bool load)
{
	uint64_t end = off + len;
	int ret = 0;

	for (size_t i = first_range(im, off); i < im->n && im->r[i].off < end; i++) {
		struct image_range *r = &im->r[i];
		uint64_t a = off > r->off ? off : r->off;
		uint64_t b = end < r->off + r->len ? end : r->off + r->len;

		if (!r->unloaded)
			continue;
		for (uint64_t p = (a - r->off) / PAGE; p < (b - r->off + PAGE - 1) / PAGE;) {
			uint64_t q = p;

			if (!test_bit(r->unloaded, p)) {
				p++;
				continue;
			}
			while (q < (b - r->off + PAGE - 1) / PAGE && test_bit(r->unloaded, q))
				q++;
			if (load) {
				uint64_t n = (q - p) * PAGE, done = 0;

				while (done < n) {
					ssize_t got = pread(im->fd,
							    mf->base + r->off + p * PAGE + done,
							    n - done,
							    (off_t)(r->file_off + p * PAGE + done));

					if (got < 0 && errno == EINTR)
						continue;
					if (got <= 0) {
						ret = got < 0 ? -errno : -EIO;
						log_error("restore: reading the pages file: %s",
							  strerror(-ret));
						break;
					}
					done += (uint64_t)got;
				}
			}
			for (uint64_t x = p; x < q; x++)
				clear_bit(r->unloaded, x);
			__atomic_sub_fetch(&im->left, q - p, __ATOMIC_RELEASE);
			p = q;
		}
	}
	return ret;
}

int memfile_image_load(struct memfile *mf, uint64_t off, uint64_t len)
{
	struct memfile_image *im = __atomic_load_n(&mf->image, __ATOMIC_ACQUIRE);
	int ret;

	if (!im || !__atomic_load_n(&im->left, __ATOMIC_ACQUIRE) || !len)
		return 0;
	pthread_mutex_lock(&im->lock);
	ret = walk_locked(mf, im, off & ~(PAGE - 1),
			  ((off + len + PAGE - 1) & ~(PAGE - 1)) - (off & ~(PAGE - 1)), true);
	pthread_mutex_unlock(&im->lock);
	return ret;
}

void memfile_image_forget(struct memfile *mf, uint64_t off, uint64_t len)
{
	struct memfile_image *im = __atomic_load_n(&mf->image, __ATOMIC_ACQUIRE);

	if (!im || !__atomic_load_n(&im->left, __ATOMIC_ACQUIRE) || !len)
		return;
	pthread_mutex_lock(&im->lock);
	walk_locked(mf, im, off, len, false);
	pthread_mutex_unlock(&im->lock);
}

bool memfile_image_pending(struct memfile *mf, uint64_t off, uint64_t len)
{
	struct memfile_image *im = __atomic_load_n(&mf->image, __ATOMIC_ACQUIRE);
	bool any = false;

	if (!im || !__atomic_load_n(&im->left, __ATOMIC_ACQUIRE))
		return false;
	pthread_mutex_lock(&im->lock);
	for (size_t i = first_range(im, off); i < im->n && im->r[i].off < off + len && !any; i++) {
		struct image_range *r = &im->r[i];
		uint64_t a = off > r->off ? off : r->off;
		uint64_t b = off + len < r->off + r->len ? off + len : r->off + r->len;

		for (uint64_t p = (a - r->off) / PAGE; r->unloaded && p < (b - r->off) / PAGE; p++)
			if (test_bit(r->unloaded, p)) {
				any = true;
				break;
			}
	}
	pthread_mutex_unlock(&im->lock);
	return any;
}

int memfile_image_fd(struct memfile *mf)
{
	struct memfile_image *im = __atomic_load_n(&mf->image, __ATOMIC_ACQUIRE);

	return im ? im->fd : -1;
}

bool memfile_image_mappable(struct memfile *mf, uint64_t off, uint64_t len, uint64_t *file_off)
{
	struct memfile_image *im = __atomic_load_n(&mf->image, __ATOMIC_ACQUIRE);
	bool all = false;

	if (!im || !len || !__atomic_load_n(&im->left, __ATOMIC_ACQUIRE))
		return false;
	pthread_mutex_lock(&im->lock);
	size_t i = first_range(im, off);
	if (i < im->n) {
		const struct image_range *r = &im->r[i];

		if (r->unloaded && r->off <= off && off + len <= r->off + r->len) {
			all = true;
			for (uint64_t p = (off - r->off) / PAGE; p < (off + len - r->off) / PAGE;
			     p++)
				if (!test_bit(r->unloaded, p)) {
					all = false;
					break;
				}
			*file_off = r->file_off + (off - r->off);
		}
	}
	pthread_mutex_unlock(&im->lock);
	return all;
}

bool memfile_image_translate(struct memfile *mf, uint64_t off, uint64_t len, uint64_t *file_off,
			     uint64_t *run)
{
	struct memfile_image *im = __atomic_load_n(&mf->image, __ATOMIC_ACQUIRE);

	*run = len;
	if (!im)
		return false;
	/* The ranges never change after attach: no lock needed to read them. */
	size_t i = first_range(im, off);
	if (i == im->n)
		return false;
	const struct image_range *r = &im->r[i];
	if (r->off > off) {
		*run = r->off - off < len ? r->off - off : len;
		return false;
	}
	*run = r->off + r->len - off < len ? r->off + r->len - off : len;
	if (r->file_off == UINT64_MAX)
		return false;
	*file_off = r->file_off + (off - r->off);
	return true;
}

bool memfile_image_next_pending(struct memfile *mf, uint64_t off, uint64_t end, uint64_t *start,
				uint64_t *stop, uint64_t *file_off)
{
	struct memfile_image *im = __atomic_load_n(&mf->image, __ATOMIC_ACQUIRE);
	bool found = false;

	if (!im || off >= end || !__atomic_load_n(&im->left, __ATOMIC_ACQUIRE))
		return false;
	pthread_mutex_lock(&im->lock);
	for (size_t i = first_range(im, off); i < im->n && im->r[i].off < end && !found; i++) {
		const struct image_range *r = &im->r[i];
		uint64_t a = off > r->off ? off : r->off;
		uint64_t b = end < r->off + r->len ? end : r->off + r->len;

		if (!r->unloaded)
			continue;
		for (uint64_t p = (a - r->off) / PAGE; p < (b - r->off) / PAGE; p++) {
			if (!test_bit(r->unloaded, p))
				continue;
			uint64_t q = p + 1;

			while (q < (b - r->off) / PAGE && test_bit(r->unloaded, q))
				q++;
			*start = r->off + p * PAGE;
			*stop = r->off + q * PAGE;
			*file_off = r->file_off + p * PAGE;
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&im->lock);
	return found;
}
