/* SPDX-License-Identifier: Apache-2.0 */
/* The save and restore contexts' common parts: arena, failures, ranges, id maps (state.h). */
#include "sentry/state/state.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sentry/vfs/vfs.h"

struct state_arena {
	struct state_arena *next;
	size_t used, size;
	_Alignas(16) unsigned char mem[];
};

void *state_alloc(struct state_save *s, size_t n)
{
	struct state_arena *a = s->arena;

	n = (n + 15) & ~(size_t)15;
	if (!a || a->size - a->used < n) {
		size_t size = n > 65536 ? n : 65536;

		a = malloc(sizeof(*a) + size);
		if (!a)
			return NULL;
		a->next = s->arena;
		a->used = 0;
		a->size = size;
		s->arena = a;
	}
	void *p = a->mem + a->used;

	a->used += n;
	memset(p, 0, n);
	return p;
}

char *state_strdup(struct state_save *s, const char *str)
{
	size_t n = strlen(str) + 1;
	char *p = state_alloc(s, n);

	if (p)
		memcpy(p, str, n);
	return p;
}

void state_arena_free(struct state_save *s)
{
	while (s->arena) {
		struct state_arena *next = s->arena->next;

		free(s->arena);
		s->arena = next;
	}
}

static void vfail(char *buf, size_t len, const char *fmt, va_list ap)
{
	if (buf[0])
		return; /* the first failure is the one worth reporting */
	vsnprintf(buf, len, fmt, ap);
}

int state_save_fail(struct state_save *s, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(s->err, sizeof(s->err), fmt, ap);
	va_end(ap);
	return err ? err : -EINVAL;
}

int state_restore_fail(struct state_restore *r, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	return err ? err : -EINVAL;
}

void state_save_range(struct state_save *s, uint64_t off, uint64_t len)
{
	struct state_ranges *rs = &s->ranges;

	if (!len)
		return;
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 256;
		struct state_range *v = realloc(rs->v, cap * sizeof(*v));

		if (!v) {
			state_save_fail(s, -ENOMEM, "out of memory");
			return;
		}
		rs->v = v;
		rs->cap = cap;
	}
	rs->v[rs->n++] = (struct state_range){ off, len };
}

/* --- pointer -> id maps --- */

static size_t ptr_hash(const void *p, size_t cap)
{
	uint64_t x = (uint64_t)(uintptr_t)p;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (size_t)x & (cap - 1);
}

uint32_t state_ptrmap_find(const struct state_ptrmap *m, const void *p)
{
	if (!m->cap)
		return 0;
	for (size_t i = ptr_hash(p, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (!m->v[i].ptr)
			return 0;
		if (m->v[i].ptr == p)
			return m->v[i].id;
	}
}

/* Adds p with the next id (p must not be in m). Returns the id, or 0 when out of memory. */
uint32_t state_ptrmap_add(struct state_ptrmap *m, const void *p)
{
	if ((m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		struct state_ptrmap_ent *v = calloc(cap, sizeof(*v));

		if (!v)
			return 0;
		for (size_t j = 0; j < m->cap; j++) {
			if (!m->v[j].ptr)
				continue;
			size_t i = ptr_hash(m->v[j].ptr, cap);

			while (v[i].ptr)
				i = (i + 1) & (cap - 1);
			v[i] = m->v[j];
		}
		free(m->v);
		m->v = v;
		m->cap = cap;
	}
	size_t i = ptr_hash(p, m->cap);

	while (m->v[i].ptr)
		i = (i + 1) & (m->cap - 1);
	m->v[i].ptr = p;
	m->v[i].id = ++m->next;
	m->n++;
	return m->v[i].id;
}

void state_ptrmap_free(struct state_ptrmap *m)
{
	free(m->v);
	memset(m, 0, sizeof(*m));
}
