/* SPDX-License-Identifier: Apache-2.0 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/util.h"
#include "fake.h"

struct kernel fake_kernel;
struct fake_as *fake_last_as;
int fake_as_destroyed;
static struct fake_as *all_as[64];
static int nall_as;

static struct fake_as *F(struct platform_as *as)
{
	return (struct fake_as *)as;
}

static void record(struct fake_as *as, enum fake_op op, uint64_t addr, uint64_t len, int prot,
		   uint64_t off)
{
	cr_assert_lt(as->ncalls, 256);
	as->calls[as->ncalls++] = (struct fake_call){ op, addr, len, prot, off };
}

/* Cuts the fake space's ranges so that none straddles addr. */
static void cut_at(struct fake_as *as, uint64_t addr)
{
	for (int i = 0; i < as->nranges; i++) {
		struct fake_range *r = &as->ranges[i];
		if (r->start < addr && addr < r->end) {
			cr_assert_lt(as->nranges, 256);
			struct fake_range hi = *r;
			hi.off += addr - r->start;
			hi.start = addr;
			r->end = addr;
			memmove(&as->ranges[i + 2], &as->ranges[i + 1],
				(as->nranges - i - 1) * sizeof(*r));
			as->ranges[i + 1] = hi;
			as->nranges++;
			return;
		}
	}
}

static void remove_span(struct fake_as *as, uint64_t start, uint64_t end)
{
	cut_at(as, start);
	cut_at(as, end);
	int j = 0;
	for (int i = 0; i < as->nranges; i++)
		if (as->ranges[i].end <= start || as->ranges[i].start >= end)
			as->ranges[j++] = as->ranges[i];
	as->nranges = j;
}

static int fake_as_create(struct platform *p, struct platform_as **out)
{
	struct fake_as *as = calloc(1, sizeof(*as));
	if (!as)
		return -ENOMEM;
	cr_assert_lt(nall_as, 64);
	all_as[nall_as++] = as;
	fake_last_as = as;
	*out = (struct platform_as *)as;
	return 0;
}

static void fake_as_destroy(struct platform_as *as)
{
	F(as)->destroyed = true;
	fake_as_destroyed++;
	/* Freed at teardown, so tests can still inspect it. */
}

static int fake_as_map(struct platform_as *pas, uint64_t addr, uint64_t len, int prot, uint64_t off)
{
	struct fake_as *as = F(pas);
	cr_assert(IS_PAGE_ALIGNED(addr) && IS_PAGE_ALIGNED(len) && IS_PAGE_ALIGNED(off));
	cr_assert(len > 0);
	cr_assert_geq(addr, PLATFORM_GUEST_MIN);
	cr_assert_leq(addr + len, PLATFORM_GUEST_MAX);
	if (as->fail_next) {
		int r = as->fail_next;
		as->fail_next = 0;
		return r;
	}
	record(as, FAKE_MAP, addr, len, prot, off);
	remove_span(as, addr, addr + len);
	int i = 0;
	while (i < as->nranges && as->ranges[i].start < addr)
		i++;
	memmove(&as->ranges[i + 1], &as->ranges[i], (as->nranges - i) * sizeof(as->ranges[0]));
	as->ranges[i] = (struct fake_range){ addr, addr + len, off, prot };
	as->nranges++;
	return 0;
}

static int fake_as_unmap(struct platform_as *pas, uint64_t addr, uint64_t len)
{
	struct fake_as *as = F(pas);
	if (as->fail_next) {
		int r = as->fail_next;
		as->fail_next = 0;
		return r;
	}
	record(as, FAKE_UNMAP, addr, len, 0, 0);
	remove_span(as, addr, addr + len);
	return 0;
}

static int fake_as_protect(struct platform_as *pas, uint64_t addr, uint64_t len, int prot)
{
	struct fake_as *as = F(pas);
	if (as->fail_next) {
		int r = as->fail_next;
		as->fail_next = 0;
		return r;
	}
	record(as, FAKE_PROTECT, addr, len, prot, 0);
	cut_at(as, addr);
	cut_at(as, addr + len);
	for (int i = 0; i < as->nranges; i++)
		if (as->ranges[i].start >= addr && as->ranges[i].end <= addr + len)
			as->ranges[i].prot = prot;
	return 0;
}

static const struct platform_ops fake_ops = {
	.name = "fake",
	.as_create = fake_as_create,
	.as_destroy = fake_as_destroy,
	.as_map = fake_as_map,
	.as_unmap = fake_as_unmap,
	.as_protect = fake_as_protect,
};

static struct platform fake_platform = { .ops = &fake_ops, .memfd = -1 };

void fake_setup(void)
{
	memset(&fake_kernel, 0, sizeof(fake_kernel));
	fake_kernel.platform = &fake_platform;
	cr_assert_eq(memfile_init(&fake_kernel.mf, FAKE_MEMFILE_SIZE), 0);
	fake_platform.memfd = fake_kernel.mf.fd;
	fake_last_as = NULL;
	fake_as_destroyed = 0;
}

void fake_teardown(void)
{
	memfile_destroy(&fake_kernel.mf);
	for (int i = 0; i < nall_as; i++)
		free(all_as[i]);
	nall_as = 0;
}

void fake_clear_calls(struct fake_as *as)
{
	as->ncalls = 0;
}

const struct fake_range *fake_range_at(struct fake_as *as, uint64_t addr)
{
	for (int i = 0; i < as->nranges; i++)
		if (as->ranges[i].start <= addr && addr < as->ranges[i].end)
			return &as->ranges[i];
	return NULL;
}

struct vma_list {
	struct mm_vma_info v[256];
	int n;
};

static int collect(const struct mm_vma_info *vma, void *arg)
{
	struct vma_list *l = arg;
	cr_assert_lt(l->n, 256);
	l->v[l->n++] = *vma;
	return 0;
}

/* Page-by-page comparison of the two views over every mapped page of either. */
bool fake_matches_mm(struct mm *mm)
{
	static struct vma_list l;
	struct fake_as *as = (struct fake_as *)mm->as;

	l.n = 0;
	mm_for_each_vma(mm, collect, &l);
	for (int i = 0; i < l.n; i++) {
		for (uint64_t a = l.v[i].start; a < l.v[i].end; a += PAGE_SIZE) {
			const struct fake_range *r = fake_range_at(as, a);
			int prot = l.v[i].cow ? l.v[i].prot & ~PROT_WRITE : l.v[i].prot;
			if (!r || r->prot != prot ||
			    r->off + (a - r->start) != l.v[i].mf_off + (a - l.v[i].start))
				return false;
		}
	}
	for (int i = 0; i < as->nranges; i++) {
		for (uint64_t a = as->ranges[i].start; a < as->ranges[i].end; a += PAGE_SIZE) {
			bool found = false;
			for (int j = 0; j < l.n && !found; j++)
				found = l.v[j].start <= a && a < l.v[j].end;
			if (!found)
				return false;
		}
	}
	return true;
}

static int count_one(const struct mm_vma_info *vma, void *arg)
{
	(*(int *)arg)++;
	return 0;
}

int vma_count(struct mm *mm)
{
	int n = 0;
	mm_for_each_vma(mm, count_one, &n);
	return n;
}

struct find_arg {
	uint64_t addr;
	struct mm_vma_info *out;
};

static int find_one(const struct mm_vma_info *vma, void *arg)
{
	struct find_arg *fa = arg;
	if (vma->start <= fa->addr && fa->addr < vma->end) {
		*fa->out = *vma;
		return 1;
	}
	return 0;
}

bool vma_at(struct mm *mm, uint64_t addr, struct mm_vma_info *out)
{
	struct find_arg fa = { addr, out };
	return mm_for_each_vma(mm, find_one, &fa) == 1;
}

/* --- a file over a buffer, and the vfs functions sentry/mm calls --- */

static ssize_t buf_read(struct file *f, const struct iovec *iov, int iovcnt, int64_t *pos)
{
	struct buf_file *bf = container_of(f, struct buf_file, f);
	ssize_t total = 0;

	bf->reads++;
	for (int i = 0; i < iovcnt; i++) {
		if (*pos >= (int64_t)bf->size)
			break;
		/* Short reads on purpose: at most 3000 bytes a call, to exercise the loop. */
		size_t n = MIN(MIN(iov[i].iov_len, bf->size - (size_t)*pos), 3000);
		memcpy(iov[i].iov_base, bf->data + *pos, n);
		*pos += (int64_t)n;
		total += (ssize_t)n;
		if (n < iov[i].iov_len)
			break;
	}
	return total;
}

static int buf_getattr(struct file *f, struct vfs_attr *attr)
{
	struct buf_file *bf = container_of(f, struct buf_file, f);
	memset(attr, 0, sizeof(*attr));
	attr->size = (int64_t)bf->size;
	attr->mode = 0100644;
	return 0;
}

static const struct file_ops buf_ops = {
	.read = buf_read,
	.getattr = buf_getattr,
	.map_private_by_read = true,
};

void buf_file_init(struct buf_file *bf, const void *data, size_t size, int flags)
{
	memset(bf, 0, sizeof(*bf));
	refcount_init(&bf->f.ref, 1);
	bf->f.ops = &buf_ops;
	bf->f.flags = flags;
	bf->data = data;
	bf->size = size;
}

void file_get(struct file *f)
{
	refcount_inc(&f->ref);
}

void file_put(struct file *f)
{
	/* Test files live on the stack of the test: the last reference is the test's own. */
	cr_assert(!refcount_dec(&f->ref), "file_put dropped the caller's reference");
}

int file_getattr(struct file *f, struct vfs_attr *attr)
{
	return f->ops->getattr ? f->ops->getattr(f, attr) : -ENOSYS;
}

ssize_t file_pread(struct file *f, void *buf, size_t len, int64_t off)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	int64_t pos = off;
	return f->ops->read(f, &iov, 1, &pos);
}
