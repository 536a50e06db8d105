/* SPDX-License-Identifier: Apache-2.0 */
/* Choosing a platform backend by name, and what is common to all of them. */
#include <cpuid.h>
#include <errno.h>
#include <string.h>

#include "sentry/platform/platform.h"
#include "sentry/platform/ptrace/ptrace.h"

int platform_create(const char *name, int memfd, struct platform **out)
{
	if (!name)
		return -ENOENT;
	if (strcmp(name, "ptrace") == 0)
		return ptrace_platform_create(memfd, out);
	return -ENOENT;
}

void platform_destroy(struct platform *p)
{
	if (p)
		p->ops->destroy(p);
}

size_t platform_fpstate_size(void)
{
	static size_t size;
	unsigned int eax, ebx, ecx, edx;

	if (__atomic_load_n(&size, __ATOMIC_RELAXED))
		return size;
	/* Every x86-64 CPU a 6.x kernel runs on has XSAVE; 512 + 64 is the bare minimum. */
	if (!__get_cpuid_count(0xd, 0, &eax, &ebx, &ecx, &edx) || ebx < 576)
		ebx = 576;
	__atomic_store_n(&size, (size_t)ebx, __ATOMIC_RELAXED);
	return size;
}
