/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A test-only stand-in for sentry/mm's guest-memory functions: guest addresses are sentry
 * pointers, except one configurable range that faults. mm_translate gives one iovec per page
 * so that large transfers need several rounds of iovecs.
 */
#ifndef HUSK_TESTS_UNIT_VFS_FAKE_MM_H
#define HUSK_TESTS_UNIT_VFS_FAKE_MM_H

#include <stddef.h>
#include <stdint.h>

/* Makes [addr, addr + len) fault from now on (len 0: nothing faults). */
void fake_mm_set_bad(const void *addr, size_t len);
/* Number of mm_translate calls so far. */
extern int fake_mm_translate_calls;

#endif
