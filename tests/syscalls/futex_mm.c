/* SPDX-License-Identifier: Apache-2.0 */
/*
 * futex_mm: futexes on memory that is not (or no longer) mapped. A private futex's key is the
 * process and the address, so FUTEX_WAKE_PRIVATE, FUTEX_REQUEUE_PRIVATE and WAKE_OP's first word
 * need no page: a waiter whose page another thread unmapped is still woken (or requeued). What
 * reads or writes the word (waits, CMP_REQUEUE's first word, WAKE_OP's second, PI operations),
 * and every futex without FUTEX_PRIVATE_FLAG (its key comes from the page), fails with EFAULT.
 * A waiter without FUTEX_PRIVATE_FLAG on a private mapping is keyed by (process, address) too:
 * a new mapping at the same address reaches it; on shared memory, another mapping of the same
 * page does. Then operations racing with munmap and madvise by another thread never write into
 * the page that the memory went on to back.
 *
 * Waiters are known to be queued by counting them (requeue_count), never by sleeping.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <linux/futex.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include "check.h"

#define PAGE 4096

static long futex(uint32_t *uaddr, int op, uint32_t val, const void *timeout, uint32_t *uaddr2,
		  uint32_t val3)
{
	return syscall(SYS_futex, uaddr, op, val, timeout, uaddr2, val3);
}

static uint32_t scratch;

/* The number of waiters queued on w (requeued to scratch and back). */
static long requeue_count(uint32_t *w, int flags)
{
	long n = futex(w, FUTEX_REQUEUE | flags, 0, (void *)(long)INT_MAX, &scratch, 0);

	if (n > 0)
		futex(&scratch, FUTEX_REQUEUE | flags, 0, (void *)(long)INT_MAX, w, 0);
	return n;
}

/* Waits (polling, 60 s at most) until n waiters are queued on w. */
static bool await_waiters(uint32_t *w, int flags, long n)
{
	struct timespec ms = { 0, 1000000 };

	for (int i = 0; i < 60000; i++) {
		if (requeue_count(w, flags) >= n)
			return true;
		nanosleep(&ms, NULL);
	}
	CHECK(0, "%ld waiters never queued on %p (flags %d)", n, (void *)w, flags);
	return false;
}

struct waiter {
	pthread_t th;
	uint32_t *addr;
	int op;
	long ret;
	int err;
};

static void *wait_fn(void *arg)
{
	struct waiter *w = arg;

	w->ret = futex(w->addr, w->op, 0, NULL, NULL, FUTEX_BITSET_MATCH_ANY);
	w->err = errno;
	return NULL;
}

/* Starts a thread waiting on addr (value 0) with op, and waits until it is queued. */
static bool start_waiter(struct waiter *w, uint32_t *addr, int op)
{
	*w = (struct waiter){ .addr = addr, .op = op, .ret = -2 };
	if (pthread_create(&w->th, NULL, wait_fn, w) != 0) {
		CHECK(0, "pthread_create failed");
		return false;
	}
	return await_waiters(addr, op & FUTEX_PRIVATE_FLAG, 1);
}

/* Joins a waiter that must have been woken (its wait returned 0). */
static void join_woken(struct waiter *w, const char *what)
{
	pthread_join(w->th, NULL);
	CHECK(w->ret == 0, "%s: the waiter's wait returned %ld (%s)", what, w->ret,
	      w->ret < 0 ? strerror(w->err) : "-");
}

static uint32_t *map_page(int flags, int prot)
{
	void *p = mmap(NULL, PAGE, prot, flags | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		CHECK(0, "mmap: %s", strerror(errno));
		exit(1);
	}
	return p;
}

/*
 * An address with nothing mapped: low in the address space, where neither Linux's nor husk's
 * mmap places anything by itself (checked with mincore). n picks one of several.
 */
static uint32_t *hole(int n)
{
	void *p = (void *)(0x20000000UL + (unsigned long)n * 2 * PAGE);
	unsigned char vec;

	CHECK(mincore(p, PAGE, &vec) == -1 && errno == ENOMEM, "%p is mapped", p);
	return p;
}

/* A private waiter whose page another thread unmaps is still woken, requeued, WAKE_OP'ed. */
static void check_private_waiter_unmapped(void)
{
	struct waiter w;
	uint32_t *p, *q = map_page(MAP_PRIVATE, PROT_READ | PROT_WRITE);

	/* FUTEX_WAKE_PRIVATE on a private mapping and on a shared one. */
	int kinds[] = { MAP_PRIVATE, MAP_SHARED };
	for (int i = 0; i < 2; i++) {
		p = map_page(kinds[i], PROT_READ | PROT_WRITE);
		if (!start_waiter(&w, p, FUTEX_WAIT_PRIVATE))
			return;
		CHECK_RET(munmap(p, PAGE), 0);
		CHECK_RET(futex(p, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0), 1);
		join_woken(&w, kinds[i] == MAP_PRIVATE ? "WAKE_PRIVATE after munmap (private)" :
							 "WAKE_PRIVATE after munmap (shared)");
	}

	/* FUTEX_WAKE_BITSET_PRIVATE. */
	p = map_page(MAP_PRIVATE, PROT_READ | PROT_WRITE);
	if (!start_waiter(&w, p, FUTEX_WAIT_BITSET_PRIVATE))
		return;
	munmap(p, PAGE);
	CHECK_RET(futex(p, FUTEX_WAKE_BITSET_PRIVATE, 1, NULL, NULL, FUTEX_BITSET_MATCH_ANY), 1);
	join_woken(&w, "WAKE_BITSET_PRIVATE after munmap");

	/* FUTEX_REQUEUE_PRIVATE from the unmapped word to a mapped one, then woken there. */
	p = map_page(MAP_PRIVATE, PROT_READ | PROT_WRITE);
	if (!start_waiter(&w, p, FUTEX_WAIT_PRIVATE))
		return;
	munmap(p, PAGE);
	CHECK_RET(futex(p, FUTEX_REQUEUE_PRIVATE, 0, (void *)1L, q, 0), 1);
	CHECK_RET(futex(p, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0), 0);
	CHECK_RET(futex(q, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0), 1);
	join_woken(&w, "REQUEUE_PRIVATE from an unmapped word");

	/* And requeued onto an unmapped word, woken from there. */
	p = map_page(MAP_PRIVATE, PROT_READ | PROT_WRITE);
	uint32_t *h = hole(0);
	if (!start_waiter(&w, q, FUTEX_WAIT_PRIVATE))
		return;
	CHECK_RET(futex(q, FUTEX_CMP_REQUEUE_PRIVATE, 0, (void *)1L, h, 0), 1);
	CHECK_RET(futex(h, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0), 1);
	join_woken(&w, "CMP_REQUEUE_PRIVATE onto an unmapped word");
	munmap(p, PAGE);

	/* FUTEX_WAKE_OP_PRIVATE: the first word unmapped, the second mapped (and changed). */
	p = map_page(MAP_PRIVATE, PROT_READ | PROT_WRITE);
	if (!start_waiter(&w, p, FUTEX_WAIT_PRIVATE))
		return;
	munmap(p, PAGE);
	*q = 5;
	CHECK_RET(futex(p, FUTEX_WAKE_OP_PRIVATE, 1, NULL, q,
			FUTEX_OP(FUTEX_OP_ADD, 2, FUTEX_OP_CMP_EQ, 0)),
		  1);
	CHECK(*q == 7, "WAKE_OP's second word: %u, expected 7", *q);
	join_woken(&w, "WAKE_OP_PRIVATE on an unmapped first word");
	munmap(q, PAGE);
}

/*
 * Without FUTEX_PRIVATE_FLAG the key comes from the page: EFAULT once it is unmapped. On a
 * private mapping the key is still (process, address), so a new mapping there reaches the waiter;
 * on shared memory another mapping of the same page does.
 */
static void check_shared_waiter_unmapped(void)
{
	struct waiter w;
	uint32_t *p = map_page(MAP_PRIVATE, PROT_READ | PROT_WRITE);

	if (!start_waiter(&w, p, FUTEX_WAIT))
		return;
	munmap(p, PAGE);
	CHECK_ERR(futex(p, FUTEX_WAKE, 1, NULL, NULL, 0), EFAULT);
	CHECK_RET(futex(p, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0), 0);
	CHECK(mmap(p, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
		   0) == p,
	      "mmap MAP_FIXED: %s", strerror(errno));
	CHECK_RET(futex(p, FUTEX_WAKE, 1, NULL, NULL, 0), 1);
	join_woken(&w, "WAKE at a new private mapping of the address");
	munmap(p, PAGE);

	/* A memfd mapped twice: the waiter on one mapping, woken through the other. */
	int fd = (int)syscall(SYS_memfd_create, "futex_mm", 0);
	if (CHECK_OK(fd) < 0 || CHECK_OK(ftruncate(fd, PAGE)) < 0)
		return;
	uint32_t *a = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	uint32_t *b = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (a == MAP_FAILED || b == MAP_FAILED) {
		CHECK(0, "mmap of a memfd: %s", strerror(errno));
		return;
	}
	a[1] = 0;
	if (!start_waiter(&w, &a[1], FUTEX_WAIT))
		return;
	CHECK_RET(requeue_count(&b[1], 0), 1);
	munmap(a, PAGE);
	CHECK_ERR(futex(&a[1], FUTEX_WAKE, 1, NULL, NULL, 0), EFAULT);
	CHECK_RET(futex(&a[1], FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0), 0);
	CHECK_RET(futex(&b[1], FUTEX_WAKE, 1, NULL, NULL, 0), 1);
	join_woken(&w, "WAKE through another mapping of a memfd");
	munmap(b, PAGE);
}

static long futex_waitv1(uint32_t *addr, unsigned int flags)
{
	struct {
		uint64_t val, uaddr;
		uint32_t flags, reserved;
	} v = { 0, (uint64_t)(uintptr_t)addr, flags, 0 };
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += 60;
	return syscall(SYS_futex_waitv, &v, 1, 0, &ts, CLOCK_MONOTONIC);
}

/* Every operation on an unmapped, PROT_NONE or read-only word, as Linux answers it. */
static void check_errors(void)
{
	uint32_t *h = hole(1), *m = map_page(MAP_PRIVATE, PROT_READ | PROT_WRITE);
	uint32_t *none = map_page(MAP_PRIVATE, PROT_NONE);
	uint32_t *ro = map_page(MAP_PRIVATE, PROT_READ);
	uint32_t *kernel = (uint32_t *)0xffff888000000000UL;
	uint32_t op = FUTEX_OP(FUTEX_OP_SET, 1, FUTEX_OP_CMP_EQ, 0);

	/* Waits read the word. */
	CHECK_ERR(futex(h, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0), EFAULT);
	CHECK_ERR(futex(h, FUTEX_WAIT, 0, NULL, NULL, 0), EFAULT);
	CHECK_ERR(futex(h, FUTEX_WAIT_BITSET_PRIVATE, 0, NULL, NULL, FUTEX_BITSET_MATCH_ANY),
		  EFAULT);
	CHECK_ERR(futex(none, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0), EFAULT);
	CHECK_ERR(futex_waitv1(h, 128 /* FUTEX2_PRIVATE */ | 2 /* FUTEX2_SIZE_U32 */), EFAULT);
	CHECK_ERR(futex_waitv1(h, 2), EFAULT);
	/* A wake of a private futex needs no page; of a shared one it does. */
	CHECK_RET(futex(h, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0), 0);
	CHECK_RET(futex(h, FUTEX_WAKE_BITSET_PRIVATE, 1, NULL, NULL, 1), 0);
	CHECK_RET(futex(none, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0), 0);
	CHECK_ERR(futex(h, FUTEX_WAKE, 1, NULL, NULL, 0), EFAULT);
	CHECK_ERR(futex(none, FUTEX_WAKE, 1, NULL, NULL, 0), EFAULT);
	CHECK_RET(futex(ro, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0), 0);
	CHECK_ERR(futex(ro, FUTEX_WAIT_PRIVATE, 1, NULL, NULL, 0), EAGAIN);
	/* A read-only private anonymous page never changes: no shared futex there (Linux). */
	CHECK_ERR(futex(ro, FUTEX_WAKE, 1, NULL, NULL, 0), EFAULT);
	CHECK_ERR(futex(ro, FUTEX_WAIT, 1, NULL, NULL, 0), EFAULT);
	/* Alignment first, then the address range (kernel addresses are never user memory). */
	CHECK_ERR(futex((uint32_t *)((char *)h + 1), FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0), EINVAL);
	CHECK_ERR(futex((uint32_t *)((char *)h + 2), FUTEX_WAKE, 1, NULL, NULL, 0), EINVAL);
	CHECK_ERR(futex(kernel, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0), EFAULT);
	CHECK_ERR(futex(kernel, FUTEX_WAKE, 1, NULL, NULL, 0), EFAULT);
	/* REQUEUE reads no word; CMP_REQUEUE reads the first. */
	CHECK_RET(futex(h, FUTEX_REQUEUE_PRIVATE, 1, (void *)1L, h + 1, 0), 0);
	CHECK_ERR(futex(h, FUTEX_REQUEUE, 1, (void *)1L, m, 0), EFAULT);
	CHECK_ERR(futex(m, FUTEX_REQUEUE, 1, (void *)1L, h, 0), EFAULT);
	CHECK_ERR(futex(kernel, FUTEX_REQUEUE_PRIVATE, 1, (void *)1L, m, 0), EFAULT);
	CHECK_ERR(futex(m, FUTEX_REQUEUE_PRIVATE, 1, (void *)1L, kernel, 0), EFAULT);
	CHECK_ERR(futex(h, FUTEX_CMP_REQUEUE_PRIVATE, 1, (void *)1L, m, 0), EFAULT);
	CHECK_RET(futex(m, FUTEX_CMP_REQUEUE_PRIVATE, 1, (void *)1L, h, 0), 0);
	CHECK_ERR(futex(m, FUTEX_CMP_REQUEUE_PRIVATE, 1, (void *)1L, h, 1), EAGAIN);
	CHECK_ERR(futex(m, FUTEX_CMP_REQUEUE, 1, (void *)1L, h, 0), EFAULT);
	/* WAKE_OP writes the second word; a bad operation is refused before it is touched. */
	*m = 0;
	CHECK_RET(futex(h, FUTEX_WAKE_OP_PRIVATE, 1, (void *)1L, m, op), 0);
	CHECK(*m == 1, "WAKE_OP_PRIVATE with an unmapped first word left %u, expected 1", *m);
	CHECK_ERR(futex(m, FUTEX_WAKE_OP_PRIVATE, 1, (void *)1L, h, op), EFAULT);
	CHECK_ERR(futex(m, FUTEX_WAKE_OP_PRIVATE, 1, (void *)1L, ro, op), EFAULT);
	CHECK_ERR(futex(m, FUTEX_WAKE_OP_PRIVATE, 1, (void *)1L, none, op), EFAULT);
	CHECK_ERR(futex(h, FUTEX_WAKE_OP, 1, (void *)1L, m, op), EFAULT);
	CHECK_ERR(futex(m, FUTEX_WAKE_OP_PRIVATE, 1, (void *)1L, h, 6u << 28), ENOSYS);
	CHECK_ERR(futex(m, FUTEX_WAKE_OP_PRIVATE, 1, (void *)1L, kernel, op), EFAULT);
	/* PI operations read and write the word. */
	CHECK_ERR(futex(h, FUTEX_LOCK_PI_PRIVATE, 0, NULL, NULL, 0), EFAULT);
	CHECK_ERR(futex(h, FUTEX_TRYLOCK_PI_PRIVATE, 0, NULL, NULL, 0), EFAULT);
	CHECK_ERR(futex(h, FUTEX_UNLOCK_PI_PRIVATE, 0, NULL, NULL, 0), EFAULT);
	CHECK_ERR(futex(h, FUTEX_LOCK_PI, 0, NULL, NULL, 0), EFAULT);
	CHECK_ERR(futex(ro, FUTEX_LOCK_PI_PRIVATE, 0, NULL, NULL, 0), EFAULT);
	CHECK_ERR(futex(ro, FUTEX_TRYLOCK_PI_PRIVATE, 0, NULL, NULL, 0), EFAULT);
	munmap(m, PAGE);
	munmap(none, PAGE);
	munmap(ro, PAGE);
}

/*
 * Operations racing with munmap and madvise(MADV_DONTNEED) by another thread: the freed page,
 * once it backs another mapping (filled with a pattern here), is never written by an operation
 * on the old word. Natively the operations land in the old page or fail with EFAULT. A smoke
 * test: the window it aims at (between the translation of the word and the operation on it) is
 * narrow, so it rarely catches a word that is not pinned; it checks the process survives.
 */
static atomic_int race_stop;
static char *race_area; /* two pages: the futex page, then the pattern page */

static void *race_ops(void *arg)
{
	uint32_t *w = (uint32_t *)race_area + 1;
	uint32_t add = FUTEX_OP(FUTEX_OP_ADD, 1, FUTEX_OP_CMP_EQ, 0);

	(void)arg;
	while (!atomic_load(&race_stop)) {
		futex(&scratch, FUTEX_WAKE_OP_PRIVATE, 1, (void *)1L, w, add);
		futex(w, FUTEX_CMP_REQUEUE_PRIVATE, 1, (void *)1L, &scratch, 0);
		futex(w, FUTEX_TRYLOCK_PI_PRIVATE, 0, NULL, NULL, 0);
		futex(w, FUTEX_UNLOCK_PI_PRIVATE, 0, NULL, NULL, 0);
		futex(w, FUTEX_WAKE_OP, 1, (void *)1L, w, add);
	}
	return NULL;
}

static void check_race(void)
{
	const uint32_t pattern = 0x5a5a5a5a;
	int bad = 0, rounds = 0;
	struct timespec t0, t1;
	pthread_t th;

	race_area =
		mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (race_area == MAP_FAILED) {
		CHECK(0, "mmap: %s", strerror(errno));
		return;
	}
	pthread_create(&th, NULL, race_ops, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		char *pat = race_area + PAGE;

		/* Free the futex page (alternately by munmap and madvise), then back the other
		 * page with fresh memory and fill it. */
		if (rounds & 1) {
			munmap(race_area, PAGE);
		} else {
			madvise(race_area, PAGE, MADV_DONTNEED);
		}
		munmap(pat, PAGE);
		if (mmap(pat, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
			 -1, 0) != pat) {
			CHECK(0, "mmap MAP_FIXED: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < PAGE / 4; i++)
			((uint32_t *)pat)[i] = pattern;
		for (int i = 0; i < 20; i++)
			sched_yield();
		for (int i = 0; i < PAGE / 4; i++)
			if (((uint32_t *)pat)[i] != pattern && bad++ < 3)
				CHECK(0, "round %d: word %d of a fresh page became %#x", rounds, i,
				      ((uint32_t *)pat)[i]);
		if (rounds & 1)
			mmap(race_area, PAGE, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		rounds++;
		clock_gettime(CLOCK_MONOTONIC, &t1);
	} while (rounds < 20000 && t1.tv_sec - t0.tv_sec < 2);
	atomic_store(&race_stop, 1);
	pthread_join(th, NULL);
	CHECK(bad == 0, "%d words of fresh pages changed in %d rounds", bad, rounds);
	munmap(race_area, 2 * PAGE);
}

int main(void)
{
	check_errors();
	check_private_waiter_unmapped();
	check_shared_waiter_unmapped();
	check_race();
	return finish();
}
