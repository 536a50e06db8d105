/* SPDX-License-Identifier: Apache-2.0 */
/* Errors carried in pointers, as in Linux: a pointer in the top 4095 values is -errno. */
#ifndef HUSK_COMMON_ERR_H
#define HUSK_COMMON_ERR_H

#include <stdbool.h>
#include <stdint.h>

#define MAX_ERRNO 4095

static inline void *ERR_PTR(long error)
{
	return (void *)error;
}

static inline long PTR_ERR(const void *ptr)
{
	return (long)ptr;
}

static inline bool IS_ERR(const void *ptr)
{
	return (uintptr_t)ptr >= (uintptr_t)-MAX_ERRNO;
}

static inline bool IS_ERR_OR_NULL(const void *ptr)
{
	return !ptr || IS_ERR(ptr);
}

#endif
