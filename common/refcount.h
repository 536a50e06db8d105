/* SPDX-License-Identifier: Apache-2.0 */
/* Atomic reference counts. refcount_dec() returns true when the count reached zero. */
#ifndef HUSK_COMMON_REFCOUNT_H
#define HUSK_COMMON_REFCOUNT_H

#include <assert.h>
#include <stdbool.h>

struct refcount {
	int count;
};

static inline void refcount_init(struct refcount *r, int v)
{
	__atomic_store_n(&r->count, v, __ATOMIC_RELAXED);
}

static inline void refcount_inc(struct refcount *r)
{
	int old = __atomic_fetch_add(&r->count, 1, __ATOMIC_RELAXED);
	assert(old > 0);
	(void)old;
}

/* Takes a reference unless the count already reached zero (the object is going); returns whether. */
static inline bool refcount_inc_not_zero(struct refcount *r)
{
	int c = __atomic_load_n(&r->count, __ATOMIC_RELAXED);

	while (c > 0)
		if (__atomic_compare_exchange_n(&r->count, &c, c + 1, false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return true;
	return false;
}

static inline bool refcount_dec(struct refcount *r)
{
	int old = __atomic_fetch_sub(&r->count, 1, __ATOMIC_ACQ_REL);
	assert(old > 0);
	return old == 1;
}

static inline int refcount_read(const struct refcount *r)
{
	return __atomic_load_n(&r->count, __ATOMIC_RELAXED);
}

#endif
