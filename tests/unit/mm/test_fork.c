/* SPDX-License-Identifier: Apache-2.0 */
/* mm_fork, mm_activate, mm_handle_fault and copy-on-write, over the fake platform. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

#include "common/err.h"
#include "common/util.h"
#include "fake.h"

#define P PAGE_SIZE
#define BASE 0x7f0000000000ULL
#define X 0x10000000ULL
#define RW (PROT_READ | PROT_WRITE)

static struct mm *parent, *child;
static struct fake_as *pas, *cas;
static uint64_t free_at_start;

static void setup(void)
{
	fake_setup();
	parent = mm_create(&fake_kernel);
	cr_assert(!IS_ERR(parent));
	pas = fake_last_as;
	parent->mmap_base = BASE;
	child = NULL;
	cas = NULL;
	free_at_start = memfile_free_bytes(&fake_kernel.mf);
}

static void teardown(void)
{
	if (child)
		mm_put(child);
	if (parent)
		mm_put(parent);
	fake_teardown();
}

TestSuite(mm_fork, .init = setup, .fini = teardown);

static uint64_t allocated(void)
{
	return free_at_start - memfile_free_bytes(&fake_kernel.mf);
}

static void map_fixed(struct mm *mm, uint64_t addr, uint64_t len, int prot, int flags)
{
	cr_assert_eq(mm_mmap(mm, addr, len, prot, flags | MAP_ANONYMOUS | MAP_FIXED, NULL, 0),
		     (long)addr);
}

static void put_byte(struct mm *mm, uint64_t addr, uint8_t b)
{
	cr_assert_eq(mm_copy_out(mm, addr, &b, 1), 1);
}

static uint8_t get_byte(struct mm *mm, uint64_t addr)
{
	uint8_t b;
	cr_assert_eq(mm_copy_in(mm, &b, addr, 1), 1);
	return b;
}

static void do_fork(void)
{
	child = mm_fork(parent);
	cr_assert(!IS_ERR(child), "mm_fork: %ld", PTR_ERR(child));
	cr_assert_eq(mm_activate(child), 0);
	cas = fake_last_as;
	cr_assert_neq(cas, pas);
}

static const struct fake_range *range_at(struct fake_as *as, uint64_t addr)
{
	const struct fake_range *r = fake_range_at(as, addr);
	cr_assert_not_null(r, "nothing mapped at %#lx", (unsigned long)addr);
	return r;
}

/* Memory-file offset of the page at addr in the platform's view. */
static uint64_t mapped_off(struct fake_as *as, uint64_t addr)
{
	const struct fake_range *r = range_at(as, addr);
	return r->off + (PAGE_ALIGN_DOWN(addr) - r->start);
}

Test(mm_fork, forking_200_mib_of_touched_memory_copies_no_page)
{
	const uint64_t len = 200ULL << 20;

	map_fixed(parent, X, len, RW, MAP_PRIVATE);
	for (uint64_t a = X; a < X + len; a += P)
		put_byte(parent, a, (uint8_t)(a >> 12));
	uint64_t before = allocated();
	cr_assert_eq(before, len);

	do_fork();
	cr_assert_eq(allocated(), before, "fork allocated %lu bytes",
		     (unsigned long)(allocated() - before));
	cr_assert_eq(memfile_shared_pages(&fake_kernel.mf), len / P);
	cr_assert_eq(child->cow_copied, 0);
	cr_assert_eq(mapped_off(cas, X + 12345 * P), mapped_off(pas, X + 12345 * P));
	cr_assert_eq(get_byte(child, X + 777 * P), (uint8_t)((X + 777 * P) >> 12));
}

Test(mm_fork, both_sides_lose_write_access_to_private_pages)
{
	map_fixed(parent, X, 4 * P, RW, MAP_PRIVATE);
	map_fixed(parent, X + 8 * P, 2 * P, PROT_READ, MAP_PRIVATE);
	do_fork();
	cr_assert_eq(range_at(pas, X)->prot, PROT_READ);
	cr_assert_eq(range_at(cas, X)->prot, PROT_READ);
	cr_assert_eq(range_at(cas, X + 8 * P)->prot, PROT_READ);
	/* The VMAs still say what the guest asked for. */
	struct mm_vma_info v;
	cr_assert(vma_at(child, X, &v));
	cr_assert_eq(v.prot, RW);
	cr_assert(v.cow);
	cr_assert(fake_matches_mm(parent));
	cr_assert(fake_matches_mm(child));
}

Test(mm_fork, a_write_fault_in_the_child_copies_and_the_parent_keeps_its_byte)
{
	map_fixed(parent, X, 64 * P, RW, MAP_PRIVATE);
	put_byte(parent, X + 5 * P, 0x11);
	do_fork();
	uint64_t shared = mapped_off(cas, X + 5 * P);

	cr_assert_eq(mm_handle_fault(child, X + 5 * P + 8, SEGV_ACCERR), 0);
	cr_assert_eq(range_at(cas, X + 5 * P)->prot, RW);
	cr_assert_neq(mapped_off(cas, X + 5 * P), shared);
	cr_assert_eq(mapped_off(pas, X + 5 * P), shared);
	cr_assert_gt(child->cow_copied, 0);
	cr_assert_leq(child->cow_copied, 16, "one fault copied %lu pages",
		      (unsigned long)child->cow_copied);
	/* The copy has the parent's bytes; writes no longer reach the parent. */
	cr_assert_eq(get_byte(child, X + 5 * P), 0x11);
	put_byte(child, X + 5 * P, 0x22);
	cr_assert_eq(get_byte(parent, X + 5 * P), 0x11);
	cr_assert(fake_matches_mm(child));
	cr_assert(fake_matches_mm(parent));
}

Test(mm_fork, once_the_child_is_gone_the_parent_takes_its_pages_back_without_copying)
{
	map_fixed(parent, X, 64 * P, RW, MAP_PRIVATE);
	put_byte(parent, X + 3 * P, 0x33);
	do_fork();
	mm_put(child);
	child = NULL;
	cr_assert_eq(memfile_shared_pages(&fake_kernel.mf), 0);

	fake_clear_calls(pas);
	cr_assert_eq(mm_handle_fault(parent, X + 40 * P, SEGV_ACCERR), 0);
	cr_assert_eq(parent->cow_copied, 0);
	cr_assert_eq(parent->cow_reused, 64, "took over %lu pages",
		     (unsigned long)parent->cow_reused);
	/* One platform call made the whole VMA writable again. */
	cr_assert_eq(pas->ncalls, 1);
	cr_assert_eq(pas->calls[0].op, FAKE_PROTECT);
	cr_assert_eq(pas->calls[0].len, 64 * P);
	cr_assert_eq(range_at(pas, X)->prot, RW);
	cr_assert_eq(vma_count(parent), 1);
	cr_assert_eq(get_byte(parent, X + 3 * P), 0x33);
}

Test(mm_fork, the_sentry_writing_into_a_shared_page_unshares_it_first)
{
	map_fixed(parent, X, 4 * P, RW, MAP_PRIVATE);
	put_byte(parent, X + P, 0x44);
	do_fork();
	/* read(2) into the child's buffer, say. */
	put_byte(child, X + P, 0x55);
	cr_assert_eq(get_byte(parent, X + P), 0x44);
	cr_assert_eq(get_byte(child, X + P), 0x55);
	cr_assert_gt(child->cow_copied, 0);
	cr_assert(fake_matches_mm(child));

	/* Same through mm_translate for writing. */
	struct iovec iov[4];
	size_t covered;
	cr_assert_gt(mm_translate(parent, X + 2 * P, P, true, iov, 4, &covered), 0);
	cr_assert_eq(covered, P);
	memset(iov[0].iov_base, 0x66, iov[0].iov_len);
	cr_assert_eq(get_byte(child, X + 2 * P), 0);
	cr_assert_eq(get_byte(parent, X + 2 * P), 0x66);
}

Test(mm_fork, every_page_goes_back_when_the_last_user_goes)
{
	map_fixed(parent, X, 32 * P, RW, MAP_PRIVATE);
	map_fixed(parent, X + 64 * P, 8 * P, RW, MAP_SHARED);
	for (uint64_t a = X; a < X + 32 * P; a += P)
		put_byte(parent, a, 1);
	do_fork();
	cr_assert_eq(mm_handle_fault(child, X, SEGV_ACCERR), 0);
	cr_assert_eq(mm_handle_fault(parent, X + 20 * P, SEGV_ACCERR), 0);
	cr_assert_gt(allocated(), 40 * P);
	mm_put(parent);
	parent = NULL;
	cr_assert_gt(allocated(), 0);
	mm_put(child);
	child = NULL;
	cr_assert_eq(allocated(), 0, "%lu bytes left", (unsigned long)allocated());
	cr_assert_eq(memfile_shared_pages(&fake_kernel.mf), 0);
	cr_assert_eq(memfile_free_extents(&fake_kernel.mf), 1);
}

Test(mm_fork, shared_anonymous_memory_is_the_same_memory_in_both)
{
	map_fixed(parent, X, 2 * P, RW, MAP_SHARED);
	do_fork();
	cr_assert_eq(range_at(pas, X)->prot, RW);
	cr_assert_eq(range_at(cas, X)->prot, RW);
	cr_assert_eq(mapped_off(cas, X), mapped_off(pas, X));
	put_byte(parent, X + 10, 0x77);
	cr_assert_eq(get_byte(child, X + 10), 0x77);
	put_byte(child, X + P, 0x78);
	cr_assert_eq(get_byte(parent, X + P), 0x78);
	cr_assert_eq(child->cow_copied + parent->cow_copied, 0);
	/* A fault there is a real one. */
	cr_assert_eq(mm_handle_fault(child, X, SEGV_ACCERR), -EFAULT);
	/* MADV_DONTNEED drops nothing of shared memory; MADV_REMOVE clears it for both. */
	cr_assert_eq(mm_madvise(child, X, P, MADV_DONTNEED), 0);
	cr_assert_eq(get_byte(parent, X + 10), 0x77);
	cr_assert_eq(mm_madvise(child, X, P, MADV_REMOVE), 0);
	cr_assert_eq(get_byte(parent, X + 10), 0);
}

Test(mm_fork, faults_that_are_not_copy_on_write_are_refused)
{
	map_fixed(parent, X, P, PROT_READ, MAP_PRIVATE);
	map_fixed(parent, X + 2 * P, P, RW, MAP_PRIVATE);
	do_fork();
	cr_assert_eq(mm_handle_fault(child, X, SEGV_ACCERR), -EFAULT);
	cr_assert_eq(mm_handle_fault(child, X + 2 * P, SEGV_MAPERR), -EFAULT);
	cr_assert_eq(mm_handle_fault(child, X + P, SEGV_ACCERR), -EFAULT);
	cr_assert_eq(mm_handle_fault(child, PLATFORM_GUEST_MAX + P, SEGV_ACCERR), -EFAULT);
	/* Resolved once, the same address faulting again is a real fault (e.g. no PROT_EXEC). */
	cr_assert_eq(mm_handle_fault(child, X + 2 * P, SEGV_ACCERR), 0);
	cr_assert_eq(mm_handle_fault(child, X + 2 * P, SEGV_ACCERR), -EFAULT);
	cr_assert_eq(child->cow_copied, 1);
}

/* A fault handled on another host thread: another guest thread of the same process. */
struct fault_args {
	struct mm *mm;
	uint64_t addr;
	int ret;
};

static void *fault_on_other_thread(void *arg)
{
	struct fault_args *a = arg;

	a->ret = mm_handle_fault(a->mm, a->addr, SEGV_ACCERR);
	return NULL;
}

static int fault_elsewhere(struct mm *mm, uint64_t addr)
{
	struct fault_args a = { .mm = mm, .addr = addr, .ret = 1 };
	pthread_t th;

	cr_assert_eq(pthread_create(&th, NULL, fault_on_other_thread, &a), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	return a.ret;
}

Test(mm_fork, a_thread_that_resolved_a_page_before_a_fork_can_fault_there_again_after_it)
{
	map_fixed(parent, X, 4 * P, RW, MAP_PRIVATE);
	do_fork();
	/* This thread takes its copy of the page after the first fork. */
	cr_assert_eq(mm_handle_fault(parent, X + 8, SEGV_ACCERR), 0);
	mm_put(child);
	do_fork();
	/*
	 * After the second fork, this thread and another write the page at once; the other
	 * thread's fault is handled first and resolves it. This thread's fault, now at a
	 * writable page, is the stale view of that fork, not a real fault: it re-runs.
	 */
	cr_assert_eq(fault_elsewhere(parent, X + 16), 0);
	cr_assert_eq(mm_handle_fault(parent, X + 8, SEGV_ACCERR), 0);
	/* With nothing changed since, the same fault again is a real one. */
	cr_assert_eq(mm_handle_fault(parent, X + 8, SEGV_ACCERR), -EFAULT);
	/* A mapping change in between makes it worth one more try. */
	cr_assert_eq(mm_mprotect(parent, X + 2 * P, P, PROT_READ), 0);
	cr_assert_eq(mm_handle_fault(parent, X + 8, SEGV_ACCERR), 0);
	cr_assert_eq(mm_handle_fault(parent, X + 8, SEGV_ACCERR), -EFAULT);
	cr_assert(fake_matches_mm(parent));
}

Test(mm_fork, mprotect_never_makes_a_shared_page_writable)
{
	map_fixed(parent, X, 4 * P, RW, MAP_PRIVATE);
	put_byte(parent, X, 9);
	do_fork();
	cr_assert_eq(mm_mprotect(parent, X, 4 * P, PROT_READ), 0);
	cr_assert_eq(mm_mprotect(parent, X, 2 * P, RW), 0);
	cr_assert_eq(range_at(pas, X)->prot, PROT_READ);
	cr_assert(fake_matches_mm(parent));
	cr_assert_eq(mm_handle_fault(parent, X, SEGV_ACCERR), 0);
	cr_assert_eq(range_at(pas, X)->prot, RW);
	/* The half still read-only is not a copy-on-write fault. */
	cr_assert_eq(mm_handle_fault(parent, X + 3 * P, SEGV_ACCERR), -EFAULT);
	cr_assert(fake_matches_mm(parent));
	put_byte(parent, X, 10);
	cr_assert_eq(get_byte(child, X), 9);
}

Test(mm_fork, munmap_in_one_keeps_the_pages_of_the_other)
{
	map_fixed(parent, X, 4 * P, RW, MAP_PRIVATE);
	put_byte(parent, X + P, 0x5a);
	do_fork();
	uint64_t before = allocated();
	cr_assert_eq(mm_munmap(child, X, 4 * P), 0);
	cr_assert_eq(allocated(), before);
	cr_assert_eq(get_byte(parent, X + P), 0x5a);
	cr_assert_eq(memfile_shared_pages(&fake_kernel.mf), 0);
}

Test(mm_fork, madvise_dontneed_on_a_shared_page_leaves_the_other_side_alone)
{
	map_fixed(parent, X, 4 * P, RW, MAP_PRIVATE);
	put_byte(parent, X, 0x21);
	do_fork();
	cr_assert_eq(mm_madvise(child, X, 4 * P, MADV_DONTNEED), 0);
	cr_assert_eq(get_byte(child, X), 0);
	cr_assert_eq(get_byte(parent, X), 0x21);
	cr_assert(fake_matches_mm(child));
	cr_assert_eq(range_at(cas, X)->prot, RW);
}

Test(mm_fork, mremap_moves_copy_on_write_pages_still_protected)
{
	map_fixed(parent, X, 4 * P, RW, MAP_PRIVATE);
	put_byte(parent, X, 0x31);
	do_fork();
	long to = mm_mremap(child, X, 4 * P, 4 * P, MREMAP_MAYMOVE | MREMAP_FIXED, X + 64 * P);
	cr_assert_eq(to, (long)(X + 64 * P));
	cr_assert_eq(range_at(cas, X + 64 * P)->prot, PROT_READ);
	cr_assert(fake_matches_mm(child));
	cr_assert_eq(mm_handle_fault(child, X + 64 * P, SEGV_ACCERR), 0);
	put_byte(child, X + 64 * P, 0x32);
	cr_assert_eq(get_byte(parent, X), 0x31);
}

Test(mm_fork, dontfork_memory_is_not_in_the_child_and_wipeonfork_memory_is_zero)
{
	map_fixed(parent, X, 2 * P, RW, MAP_PRIVATE);
	map_fixed(parent, X + 4 * P, 2 * P, RW, MAP_PRIVATE);
	put_byte(parent, X, 1);
	put_byte(parent, X + 4 * P, 2);
	cr_assert_eq(mm_madvise(parent, X, 2 * P, MADV_DONTFORK), 0);
	cr_assert_eq(mm_madvise(parent, X + 4 * P, 2 * P, MADV_WIPEONFORK), 0);
	do_fork();
	struct mm_vma_info v;
	cr_assert_not(vma_at(child, X, &v));
	cr_assert(vma_at(child, X + 4 * P, &v));
	cr_assert(v.flags & MM_VMA_WIPEONFORK);
	cr_assert_eq(get_byte(child, X + 4 * P), 0);
	cr_assert_eq(get_byte(parent, X + 4 * P), 2);
	/* Neither is shared: the parent keeps writing straight into its pages. */
	cr_assert_eq(range_at(pas, X)->prot, RW);
	cr_assert_eq(range_at(pas, X + 4 * P)->prot, RW);
	/* Only private anonymous memory can be wiped; DOFORK undoes DONTFORK. */
	map_fixed(parent, X + 8 * P, P, RW, MAP_SHARED);
	cr_assert_eq(mm_madvise(parent, X + 8 * P, P, MADV_WIPEONFORK), -EINVAL);
	cr_assert_eq(mm_madvise(parent, X, 2 * P, MADV_DOFORK), 0);
	cr_assert(vma_at(parent, X, &v));
	cr_assert_eq(v.flags & MM_VMA_DONTFORK, 0);
}

Test(mm_fork, the_child_space_maps_everything_when_activated)
{
	map_fixed(parent, X, 4 * P, RW, MAP_PRIVATE);
	map_fixed(parent, X + 4 * P, 4 * P, PROT_READ, MAP_PRIVATE);
	map_fixed(parent, X + 16 * P, P, RW, MAP_SHARED);
	parent->brk = parent->start_brk = 0x1234000;
	child = mm_fork(parent);
	cr_assert(!IS_ERR(child));
	cr_assert_null(child->as);
	cr_assert_eq(child->brk, 0x1234000);
	/* Changes before activation are recorded in the VMAs only. */
	cr_assert_eq(mm_munmap(child, X + 6 * P, 2 * P), 0);
	cr_assert_eq(mm_activate(child), 0);
	cas = fake_last_as;
	cr_assert_not_null(child->as);
	cr_assert(fake_matches_mm(child));
	cr_assert_null(fake_range_at(cas, X + 6 * P));
	/* Again is a no-op. */
	struct platform_as *as = child->as;
	cr_assert_eq(mm_activate(child), 0);
	cr_assert_eq(child->as, as);
}

Test(mm_fork, a_fork_of_a_fork_shares_three_ways)
{
	map_fixed(parent, X, 2 * P, RW, MAP_PRIVATE);
	put_byte(parent, X, 1);
	do_fork();
	struct mm *grandchild = mm_fork(child);
	cr_assert(!IS_ERR(grandchild));
	cr_assert_eq(mm_activate(grandchild), 0);
	cr_assert_eq(memfile_page_refs(&fake_kernel.mf, mapped_off(pas, X)), 3);
	put_byte(child, X, 2);
	put_byte(grandchild, X, 3);
	cr_assert_eq(get_byte(parent, X), 1);
	cr_assert_eq(get_byte(child, X), 2);
	cr_assert_eq(get_byte(grandchild, X), 3);
	/* The parent is now alone with the original page: taken over, not copied. */
	uint64_t orig = mapped_off(pas, X);
	cr_assert_eq(memfile_page_refs(&fake_kernel.mf, orig), 1);
	cr_assert_eq(mm_handle_fault(parent, X, SEGV_ACCERR), 0);
	cr_assert_eq(mapped_off(pas, X), orig);
	cr_assert_geq(parent->cow_reused, 1);
	cr_assert_eq(range_at(pas, X)->prot, RW);
	mm_put(grandchild);
}
