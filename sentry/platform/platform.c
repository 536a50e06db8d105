/* SPDX-License-Identifier: Apache-2.0 */
/* Choosing a platform backend by name, and what is common to all of them. */
#include <cpuid.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "sentry/platform/platform.h"
#include "sentry/platform/kvm/kvm.h"
#include "sentry/platform/ptrace/ptrace.h"
#include "sentry/platform/seccomp/seccomp.h"

int platform_create(const char *name, int memfd, struct platform **out)
{
	if (!name)
		return -ENOENT;
	int ret = -ENOENT;

	if (strcmp(name, "auto") == 0)
		name = platform_auto_name();
	if (strcmp(name, "ptrace") == 0)
		ret = ptrace_platform_create(memfd, out);
	else if (strcmp(name, "seccomp") == 0)
		ret = seccomp_platform_create(memfd, out);
	else if (strcmp(name, "kvm") == 0)
		ret = kvm_platform_create(memfd, out);
	if (ret == 0)
		(*out)->imagefd = -1;
	return ret;
}

const char *platform_auto_name(void)
{
	if (kvm_platform_usable())
		return "kvm";
	return seccomp_platform_available() ? "seccomp" : "ptrace";
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

uint64_t platform_user_xfeatures(void)
{
	static uint64_t mask;
	unsigned int eax, ebx, ecx, edx, lo, hi;
	uint64_t m;

	m = __atomic_load_n(&mask, __ATOMIC_RELAXED);
	if (m)
		return m;
	m = 0x3; /* x87 and SSE: always there on x86-64 */
	/* XCR0 holds the user state components the kernel enabled; XGETBV needs OSXSAVE. */
	if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_OSXSAVE)) {
		__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
		m = ((uint64_t)hi << 32) | lo;
		/* AMX tile data is enabled per process on request (arch_prctl): not by default. */
		m &= ~PLATFORM_XFEATURE_XTILEDATA;
		m |= 0x3;
	}
	__atomic_store_n(&mask, m, __ATOMIC_RELAXED);
	return m;
}

void *platform_reserve_fixed(uint64_t start, uint64_t step, uint64_t limit, size_t len)
{
	for (uint64_t addr = start; addr < limit; addr += step) {
		void *m = mmap((void *)addr, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

		if (m == MAP_FAILED) {
			if (errno == EEXIST)
				continue;
			return MAP_FAILED;
		}
		if ((uint64_t)m == addr)
			return m;
		munmap(m, len); /* a kernel without MAP_FIXED_NOREPLACE took it as a hint */
	}
	errno = EEXIST;
	return MAP_FAILED;
}
