/* SPDX-License-Identifier: Apache-2.0 */
/* Small helpers used everywhere: container_of, ARRAY_SIZE, min/max, alignment. */
#ifndef HUSK_COMMON_UTIL_H
#define HUSK_COMMON_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* <sys/user.h> defines these too (same values); keep whichever came first. */
#ifndef PAGE_SIZE
#define PAGE_SIZE 4096UL
#endif
#ifndef PAGE_MASK
#define PAGE_MASK (~(PAGE_SIZE - 1))
#endif
#define PAGE_ALIGN_DOWN(x) ((uint64_t)(x)&PAGE_MASK)
#define PAGE_ALIGN_UP(x) (((uint64_t)(x) + PAGE_SIZE - 1) & PAGE_MASK)
#define IS_PAGE_ALIGNED(x) (((uint64_t)(x) & (PAGE_SIZE - 1)) == 0)

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define UNUSED __attribute__((unused))

/* Adds a and b into *res; returns true on overflow. */
#define add_overflow(a, b, res) __builtin_add_overflow(a, b, res)

#endif
