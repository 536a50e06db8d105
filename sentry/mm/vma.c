/* SPDX-License-Identifier: Apache-2.0 */
/* The VMA set: a sorted array searched by binary search. See vma.h. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "sentry/mm/memfile.h"
#include "sentry/mm/vma.h"
#include "sentry/vfs/vfs.h"

size_t vma_lower_bound(const struct vma_set *s, uint64_t addr)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->v[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct vma *vma_find(const struct vma_set *s, uint64_t addr)
{
	size_t i = vma_lower_bound(s, addr);

	if (i < s->n && s->v[i].start <= addr)
		return &s->v[i];
	return NULL;
}

bool vma_range_free(const struct vma_set *s, uint64_t start, uint64_t end)
{
	size_t i = vma_lower_bound(s, start);

	return i == s->n || s->v[i].start >= end;
}

bool vma_range_mapped(const struct vma_set *s, uint64_t start, uint64_t end)
{
	size_t i = vma_lower_bound(s, start);
	uint64_t cur = start;

	for (; cur < end; i++) {
		if (i == s->n || s->v[i].start > cur)
			return false;
		cur = s->v[i].end;
	}
	return true;
}

int vma_set_reserve(struct vma_set *s, size_t extra)
{
	if (s->n + extra <= s->cap)
		return 0;
	size_t cap = s->cap ? s->cap : 16;
	while (cap < s->n + extra)
		cap *= 2;
	struct vma *v = realloc(s->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	s->v = v;
	s->cap = cap;
	return 0;
}

void vma_insert_at(struct vma_set *s, size_t i, const struct vma *v)
{
	assert(s->n < s->cap && i <= s->n);
	assert(i == 0 || s->v[i - 1].end <= v->start);
	assert(i == s->n || v->end <= s->v[i].start);
	memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof(*v));
	s->v[i] = *v;
	s->n++;
}

size_t vma_insert(struct vma_set *s, const struct vma *v)
{
	size_t i = vma_lower_bound(s, v->start);

	vma_insert_at(s, i, v);
	return i;
}

void vma_remove_at(struct vma_set *s, size_t i, size_t count)
{
	assert(i + count <= s->n);
	memmove(&s->v[i], &s->v[i + count], (s->n - i - count) * sizeof(s->v[0]));
	s->n -= count;
}

void vma_split(struct vma_set *s, size_t i, uint64_t addr)
{
	struct vma hi = s->v[i];
	struct vma *lo = &s->v[i];

	assert(lo->start < addr && addr < lo->end && IS_PAGE_ALIGNED(addr));
	uint64_t delta = addr - lo->start;
	hi.start = addr;
	hi.off += delta;
	hi.file_off += delta;
	if (hi.file)
		file_get(hi.file);
	lo->end = addr;
	vma_insert_at(s, i + 1, &hi);
}

size_t vma_isolate(struct vma_set *s, uint64_t start, uint64_t end)
{
	size_t i = vma_lower_bound(s, start);

	if (i < s->n && s->v[i].start < start) {
		vma_split(s, i, start);
		i++;
	}
	size_t j = vma_lower_bound(s, end);
	if (j < s->n && s->v[j].start < end && s->v[j].end > end)
		vma_split(s, j, end);
	return i;
}

void vma_release(struct memfile *mf, struct vma *v)
{
	memfile_free(mf, v->off, v->end - v->start);
	if (v->file) {
		file_put(v->file);
		v->file = NULL;
	}
}

static bool can_merge(const struct vma *a, const struct vma *b)
{
	uint64_t len = a->end - a->start;

	if (a->end != b->start || a->prot != b->prot || a->flags != b->flags ||
	    a->file != b->file || a->obj != b->obj || a->off + len != b->off)
		return false;
	return !(a->file || a->obj) || a->file_off + len == b->file_off;
}

void vma_merge_range(struct vma_set *s, size_t lo, size_t hi)
{
	if (s->n == 0)
		return;
	if (hi >= s->n)
		hi = s->n - 1;
	size_t i = lo;
	while (i < hi) {
		if (!can_merge(&s->v[i], &s->v[i + 1])) {
			i++;
			continue;
		}
		s->v[i].end = s->v[i + 1].end;
		if (s->v[i + 1].file)
			file_put(s->v[i + 1].file);
		vma_remove_at(s, i + 1, 1);
		hi--;
	}
}
