/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <string.h>

#include "common/util.h"
#include "sentry/mm/mm.h"
#include "tests/unit/vfs/fake_mm.h"

static uintptr_t bad_start, bad_end;
int fake_mm_translate_calls;

void fake_mm_set_bad(const void *addr, size_t len)
{
	bad_start = (uintptr_t)addr;
	bad_end = bad_start + len;
}

/* Bytes of [addr, addr + len) before the first bad byte. */
static size_t good_prefix(uint64_t addr, size_t len)
{
	/* The first page is never mapped, as in a real address space. */
	if (addr < 4096)
		return 0;
	if (bad_end <= addr || bad_start >= addr + len)
		return len;
	return bad_start > addr ? bad_start - addr : 0;
}

ssize_t mm_copy_in(struct mm *mm, void *dst, uint64_t addr, size_t len)
{
	size_t n = good_prefix(addr, len);

	if (len && !n)
		return -EFAULT;
	memcpy(dst, (const void *)addr, n);
	return (ssize_t)n;
}

ssize_t mm_copy_out(struct mm *mm, uint64_t addr, const void *src, size_t len)
{
	size_t n = good_prefix(addr, len);

	if (len && !n)
		return -EFAULT;
	memcpy((void *)addr, src, n);
	return (ssize_t)n;
}

/* Protections are not modelled here: a poke is a copy out. */
ssize_t mm_poke(struct mm *mm, uint64_t addr, const void *src, size_t len)
{
	return mm_copy_out(mm, addr, src, len);
}

ssize_t mm_copy_in_string(struct mm *mm, char *dst, uint64_t addr, size_t max)
{
	for (size_t i = 0; i < max; i++) {
		if (good_prefix(addr + i, 1) == 0)
			return -EFAULT;
		dst[i] = ((const char *)addr)[i];
		if (!dst[i])
			return (ssize_t)i;
	}
	return -ENAMETOOLONG;
}

int mm_translate(struct mm *mm, uint64_t addr, size_t len, bool write, struct iovec *iov,
		 int maxiov, size_t *covered)
{
	size_t good = good_prefix(addr, len), done = 0;
	int n = 0;

	fake_mm_translate_calls++;
	while (done < good && n < maxiov) {
		uint64_t a = addr + done;
		size_t piece = MIN(good - done, PAGE_SIZE - (a & (PAGE_SIZE - 1)));

		iov[n].iov_base = (void *)a;
		iov[n].iov_len = piece;
		n++;
		done += piece;
	}
	*covered = done;
	return n;
}

/* Pinning is the real mm's business (page references): here a pin is a translation. */
int mm_translate_pin(struct mm *mm, uint64_t addr, size_t len, bool write, struct iovec *iov,
		     int maxiov, size_t *covered)
{
	return mm_translate(mm, addr, len, write, iov, maxiov, covered);
}

void mm_translate_unpin(struct mm *mm, const struct iovec *iov, int n)
{
	(void)mm;
	(void)iov;
	(void)n;
}

size_t mm_access_len(struct mm *mm, uint64_t addr, size_t len, bool write)
{
	(void)mm;
	(void)write;
	return good_prefix(addr, len);
}
