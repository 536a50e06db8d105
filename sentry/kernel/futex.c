/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Futexes; see futex.h. One sandbox-wide hash table of buckets, each a mutex and a list of
 * waiters. A waiter lives on its task's stack for the duration of futex_wait().
 *
 * The futex word is read and modified through the sentry's mapping of the memory file (the
 * pointer mm_translate_pin gives, its page pinned for the duration of the operation and never
 * across a sleep), with atomic operations: the guest's own atomics on the same page, through the
 * stub's mapping, see the same memory. Operations that only need a key (wakes, REQUEUE, WAKE_OP's
 * first word) translate nothing: a private futex's key needs no page at all, as in Linux.
 */
#include "sentry/kernel/futex.h"

#include <linux/futex.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "common/list.h"
#include "include/abi/linux/errno.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/pidns.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/waitq.h"
#include "sentry/mm/mm.h"

#define FUTEX_BUCKETS 256
#define ROBUST_LIST_LIMIT 2048

struct futex_key {
	uintptr_t space; /* the mm (| 1 when not FUTEX_PRIVATE_FLAG), 0 for memory-file offsets */
	uint64_t addr; /* guest address, or memory-file offset */
};

struct futex_bucket {
	pthread_mutex_t lock;
	struct list_head waiters; /* of struct futex_waiter */
};

struct futex_waiter {
	struct list_head link; /* in bucket->waiters while queued */
	struct futex_key key;
	uint32_t bitset;
	struct task *t;
	struct futex_bucket *bucket; /* atomic: changes on requeue */
	bool woken; /* atomic: set when a waker dequeued it */
	/* Priority inheritance (bucket lock): */
	bool pi; /* waits for the PI lock at key; woken to take it or to retry */
	bool requeue_pi; /* FUTEX_WAIT_REQUEUE_PI on a condition word, bound for pi_key */
	bool acquired; /* the PI lock was handed to it (set before woken) */
	struct futex_key pi_key;
	int32_t owner; /* pi: the lock owner's tid (its exit wakes this waiter to retry) */
};

/* PI waiters queued anywhere (atomic): thread exit looks for its own only if some are. */
static int pi_waiters;

static struct futex_bucket buckets[FUTEX_BUCKETS];
static pthread_once_t buckets_once = PTHREAD_ONCE_INIT;

static void buckets_init(void)
{
	for (int i = 0; i < FUTEX_BUCKETS; i++) {
		pthread_mutex_init(&buckets[i].lock, NULL);
		list_init(&buckets[i].waiters);
	}
}

static struct futex_bucket *bucket_of(const struct futex_key *key)
{
	uint64_t h = (key->addr >> 2) ^ ((uint64_t)key->space * 0x9e3779b97f4a7c15ULL);

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 32;
	pthread_once(&buckets_once, buckets_init);
	return &buckets[h % FUTEX_BUCKETS];
}

static bool key_eq(const struct futex_key *a, const struct futex_key *b)
{
	return a->space == b->space && a->addr == b->addr;
}

struct vma_find {
	uint64_t addr;
	bool found, shared, anon;
	int prot;
	uint64_t mf_off; /* memory-file offset of addr */
};

static int find_vma(const struct mm_vma_info *v, void *arg)
{
	struct vma_find *f = arg;

	if (f->addr < v->start)
		return 1; /* in address order: past it */
	if (f->addr >= v->end)
		return 0;
	f->found = true;
	f->shared = (v->flags & MM_VMA_SHARED) != 0;
	f->anon = (v->flags & MM_VMA_ANON) != 0;
	f->prot = v->prot;
	f->mf_off = v->mf_off + (f->addr - v->start);
	return 1;
}

/*
 * Computes the key of the futex word at uaddr, as Linux's get_futex_key: a private futex is
 * (mm, address) and needs no page, only an aligned user address; any other needs the page mapped
 * readable (write: writable), and a private mapping's must not be read-only anonymous memory
 * (that never changes, so Linux refuses it). Returns 0, -EINVAL (unaligned) or -EFAULT.
 */
static int futex_key(struct task *t, uint64_t uaddr, bool private, bool write,
		     struct futex_key *key)
{
	struct vma_find f = { .addr = uaddr };

	if (uaddr & 3)
		return -EINVAL;
	if (uaddr > TASK_SIZE_MAX - sizeof(uint32_t))
		return -EFAULT;
	key->space = (uintptr_t)t->mm;
	key->addr = uaddr;
	if (private)
		return 0;
	mm_for_each_vma(t->mm, find_vma, &f);
	if (!f.found || !(f.prot & PROT_READ) || (write && !(f.prot & PROT_WRITE)))
		return -EFAULT;
	if (f.shared) {
		key->space = 0;
		key->addr = f.mf_off;
	} else {
		/* A private mapping keys by (mm, address) without FUTEX_PRIVATE_FLAG too, but apart
		 * from the private key (Linux's FUT_OFF_MMSHARED). */
		if (f.anon && !(f.prot & PROT_WRITE))
			return -EFAULT;
		key->space |= 1;
	}
	return 0;
}

/*
 * A futex word in use: its page pinned (mm_translate_pin) so that a munmap or madvise by another
 * thread meanwhile cannot free it to other memory before the operation on it is done. Held only
 * while the operation runs, never across a sleep.
 */
struct futex_word {
	uint32_t *p; /* the sentry's pointer to the word */
	struct iovec iov;
};

/* Pins the word at uaddr (aligned), readable or writable. Returns 0 or -EFAULT. */
static int word_get(struct task *t, uint64_t uaddr, bool write, struct futex_word *w)
{
	size_t covered = 0;
	int n = mm_translate_pin(t->mm, uaddr, sizeof(uint32_t), write, &w->iov, 1, &covered);

	if (n == 1 && covered >= sizeof(uint32_t)) {
		w->p = w->iov.iov_base;
		return 0;
	}
	mm_translate_unpin(t->mm, &w->iov, n);
	w->p = NULL;
	return -EFAULT;
}

static void word_put(struct task *t, struct futex_word *w)
{
	if (w->p)
		mm_translate_unpin(t->mm, &w->iov, 1);
	w->p = NULL;
}

/* The key of the word at uaddr and the word itself, pinned (word_put after use). */
static int futex_lookup(struct task *t, uint64_t uaddr, bool private, bool write,
			struct futex_key *key, struct futex_word *w)
{
	int ret = futex_key(t, uaddr, private, write, key);

	return ret < 0 ? ret : word_get(t, uaddr, write, w);
}

static bool waiter_woken(void *arg)
{
	struct futex_waiter *w = arg;

	return __atomic_load_n(&w->woken, __ATOMIC_ACQUIRE);
}

/* Dequeues w and wakes its task. Called with w's bucket locked. */
static void wake_waiter(struct futex_waiter *w)
{
	struct task *t = w->t;

	list_del(&w->link);
	/* After this store the waiter may return and its stack frame go: touch w no more. */
	__atomic_store_n(&w->woken, true, __ATOMIC_RELEASE);
	task_wake(t);
}

/* Locks the bucket w is queued on (it may move under requeue until locked). */
static struct futex_bucket *lock_waiter_bucket(struct futex_waiter *w)
{
	for (;;) {
		struct futex_bucket *b = __atomic_load_n(&w->bucket, __ATOMIC_ACQUIRE);

		pthread_mutex_lock(&b->lock);
		if (__atomic_load_n(&w->bucket, __ATOMIC_ACQUIRE) == b)
			return b;
		pthread_mutex_unlock(&b->lock);
	}
}

/*
 * Queues w on the bucket of its key if the word still holds val, checked under the bucket's
 * lock (so that no wake between the check and the sleep is lost). Drops the word either way.
 * Returns 0, or -EAGAIN when the word changed.
 */
static long waiter_enqueue(struct task *t, struct futex_waiter *w, struct futex_word *word,
			   uint32_t val)
{
	struct futex_bucket *b = bucket_of(&w->key);

	w->bucket = b;
	pthread_mutex_lock(&b->lock);
	if (__atomic_load_n(word->p, __ATOMIC_SEQ_CST) != val) {
		pthread_mutex_unlock(&b->lock);
		word_put(t, word);
		return -EAGAIN;
	}
	list_add_tail(&w->link, &b->waiters);
	pthread_mutex_unlock(&b->lock);
	word_put(t, word);
	return 0;
}

long futex_wait(struct task *t, uint64_t uaddr, bool private, uint32_t val, uint32_t bitset,
		const struct timespec *deadline)
{
	struct futex_waiter w = { .bitset = bitset, .t = t };
	struct futex_bucket *b;
	struct futex_word word;
	long ret;

	if (bitset == 0)
		return -EINVAL;
	ret = futex_lookup(t, uaddr, private, false, &w.key, &word);
	if (ret < 0)
		return ret;
	ret = waiter_enqueue(t, &w, &word, val);
	if (ret < 0)
		return ret;

	ret = task_wait(t, NULL, 0, waiter_woken, &w, deadline, true);
	if (ret == 0)
		return 0;
	b = lock_waiter_bucket(&w);
	if (__atomic_load_n(&w.woken, __ATOMIC_ACQUIRE)) {
		/* A wake raced with the timeout or signal: it counted us, so report it. */
		ret = 0;
	} else {
		list_del(&w.link);
	}
	pthread_mutex_unlock(&b->lock);
	return ret;
}

/*
 * Wakes up to n waiters with key in b (locked). Returns the number woken, or -EINVAL on meeting
 * a PI waiter (a plain wake of a PI futex, as Linux).
 */
static int wake_keyed(struct futex_bucket *b, const struct futex_key *key, int n, uint32_t bitset)
{
	struct futex_waiter *w, *tmp;
	int woken = 0;

	list_for_each_entry_safe(w, tmp, &b->waiters, link) {
		if (woken >= n)
			break;
		if (!key_eq(&w->key, key) || !(w->bitset & bitset))
			continue;
		if (w->pi || w->requeue_pi)
			return -EINVAL;
		wake_waiter(w);
		woken++;
	}
	return woken;
}

long futex_wake_bitset(struct task *t, uint64_t uaddr, bool private, int n, uint32_t bitset)
{
	struct futex_key key;
	struct futex_bucket *b;
	long ret;

	if (bitset == 0)
		return -EINVAL;
	/* A wake reads no word: a private one needs no page at all (Linux). */
	ret = futex_key(t, uaddr, private, false, &key);
	if (ret < 0)
		return ret;
	if (n <= 0)
		return 0;
	b = bucket_of(&key);
	pthread_mutex_lock(&b->lock);
	ret = wake_keyed(b, &key, n, bitset);
	pthread_mutex_unlock(&b->lock);
	return ret;
}

int futex_wake(struct task *t, uint64_t uaddr, int n)
{
	return (int)futex_wake_bitset(t, uaddr, false, n, FUTEX_BITSET_ANY);
}

/* Locks two buckets in address order (once if they are the same). */
static void lock_two(struct futex_bucket *a, struct futex_bucket *b)
{
	if (a == b) {
		pthread_mutex_lock(&a->lock);
	} else if (a < b) {
		pthread_mutex_lock(&a->lock);
		pthread_mutex_lock(&b->lock);
	} else {
		pthread_mutex_lock(&b->lock);
		pthread_mutex_lock(&a->lock);
	}
}

static void unlock_two(struct futex_bucket *a, struct futex_bucket *b)
{
	pthread_mutex_unlock(&a->lock);
	if (a != b)
		pthread_mutex_unlock(&b->lock);
}

long futex_requeue(struct task *t, uint64_t uaddr, uint64_t uaddr2, bool private, int nr_wake,
		   int nr_requeue, bool cmp, uint32_t val3)
{
	struct futex_key k1, k2;
	struct futex_bucket *b1, *b2;
	struct futex_waiter *w, *tmp;
	struct futex_word word1 = { 0 };
	long ret;
	int woken = 0, moved = 0;

	if (nr_wake < 0 || nr_requeue < 0)
		return -EINVAL;
	/* Only CMP_REQUEUE reads a word, the first; private keys need no page. */
	ret = futex_key(t, uaddr, private, false, &k1);
	if (ret == 0)
		ret = futex_key(t, uaddr2, private, false, &k2);
	if (ret == 0 && cmp)
		ret = word_get(t, uaddr, false, &word1);
	if (ret < 0)
		return ret;
	b1 = bucket_of(&k1);
	b2 = bucket_of(&k2);
	lock_two(b1, b2);
	if (cmp && __atomic_load_n(word1.p, __ATOMIC_SEQ_CST) != val3) {
		ret = -EAGAIN;
		goto out;
	}
	list_for_each_entry_safe(w, tmp, &b1->waiters, link) {
		if (!key_eq(&w->key, &k1))
			continue;
		if (w->pi || w->requeue_pi) {
			ret = -EINVAL;
			goto out;
		}
		if (woken < nr_wake) {
			wake_waiter(w);
			woken++;
			continue;
		}
		if (moved >= nr_requeue)
			break;
		moved++;
		/* Onto the same word: Linux counts it and leaves it where it is. */
		if (key_eq(&k1, &k2))
			continue;
		list_del(&w->link);
		w->key = k2;
		list_add_tail(&w->link, &b2->waiters);
		__atomic_store_n(&w->bucket, b2, __ATOMIC_RELEASE);
	}
	ret = woken + moved;
out:
	unlock_two(b1, b2);
	word_put(t, &word1);
	return ret;
}

/* Applies FUTEX_OP's operation to *word atomically; returns the old value in *old. */
static int futex_atomic_op(uint32_t *word, int op, uint32_t oparg, uint32_t *old)
{
	uint32_t cur = __atomic_load_n(word, __ATOMIC_RELAXED), next;

	do {
		switch (op) {
		case FUTEX_OP_SET:
			next = oparg;
			break;
		case FUTEX_OP_ADD:
			next = cur + oparg;
			break;
		case FUTEX_OP_OR:
			next = cur | oparg;
			break;
		case FUTEX_OP_ANDN:
			next = cur & ~oparg;
			break;
		case FUTEX_OP_XOR:
			next = cur ^ oparg;
			break;
		default:
			return -ENOSYS;
		}
	} while (!__atomic_compare_exchange_n(word, &cur, next, false, __ATOMIC_SEQ_CST,
					      __ATOMIC_RELAXED));
	*old = cur;
	return 0;
}

static int futex_op_cmp(int cmp, uint32_t old, uint32_t cmparg, bool *res)
{
	int32_t o = (int32_t)old, a = (int32_t)cmparg;

	switch (cmp) {
	case FUTEX_OP_CMP_EQ:
		*res = o == a;
		break;
	case FUTEX_OP_CMP_NE:
		*res = o != a;
		break;
	case FUTEX_OP_CMP_LT:
		*res = o < a;
		break;
	case FUTEX_OP_CMP_LE:
		*res = o <= a;
		break;
	case FUTEX_OP_CMP_GT:
		*res = o > a;
		break;
	case FUTEX_OP_CMP_GE:
		*res = o >= a;
		break;
	default:
		return -ENOSYS;
	}
	return 0;
}

long futex_wake_op(struct task *t, uint64_t uaddr, uint64_t uaddr2, bool private, int nr_wake,
		   int nr_wake2, uint32_t val3)
{
	int op = (val3 >> 28) & 7, cmp = (val3 >> 24) & 15;
	uint32_t oparg = (val3 >> 12) & 0xfff, cmparg = val3 & 0xfff, old;
	struct futex_key k1, k2;
	struct futex_bucket *b1, *b2;
	struct futex_word word2;
	bool hit = false;
	long ret;
	int woken;

	/* oparg and cmparg are sign-extended 12-bit fields, as in Linux. */
	oparg = (uint32_t)((int32_t)(oparg << 20) >> 20);
	cmparg = (uint32_t)((int32_t)(cmparg << 20) >> 20);
	if ((val3 >> 28) & FUTEX_OP_OPARG_SHIFT) {
		if (oparg > 31)
			oparg &= 31; /* Linux warns and masks */
		oparg = 1u << oparg;
	}
	/* The first word is only a key; the second is written. An unknown operation is refused
	 * before the word is touched, as Linux. */
	ret = futex_key(t, uaddr, private, false, &k1);
	if (ret == 0)
		ret = futex_key(t, uaddr2, private, true, &k2);
	if (ret == 0 && op > FUTEX_OP_XOR)
		ret = -ENOSYS;
	if (ret == 0)
		ret = word_get(t, uaddr2, true, &word2);
	if (ret < 0)
		return ret;
	b1 = bucket_of(&k1);
	b2 = bucket_of(&k2);
	lock_two(b1, b2);
	ret = futex_atomic_op(word2.p, op, oparg, &old);
	if (ret == 0)
		ret = futex_op_cmp(cmp, old, cmparg, &hit);
	if (ret < 0) {
		unlock_two(b1, b2);
		word_put(t, &word2);
		return ret;
	}
	woken = wake_keyed(b1, &k1, nr_wake, FUTEX_BITSET_ANY);
	if (hit && woken >= 0) {
		ret = wake_keyed(b2, &k2, nr_wake2, FUTEX_BITSET_ANY);
		woken = ret < 0 ? (int)ret : woken + (int)ret;
	}
	unlock_two(b1, b2);
	word_put(t, &word2);
	return woken;
}

struct waitv_arg {
	struct futex_waiter *ws;
	int n;
};

/* futex_waitv's wait condition: any of its waiters woken. */
static bool waitv_woken(void *arg)
{
	const struct waitv_arg *a = arg;

	for (int i = 0; i < a->n; i++)
		if (__atomic_load_n(&a->ws[i].woken, __ATOMIC_ACQUIRE))
			return true;
	return false;
}

long futex_waitv(struct task *t, const struct futex_waitv_req *reqs, int n,
		 const struct timespec *deadline)
{
	struct futex_waiter *ws;
	long ret = 0;
	int queued, woken = -1;

	ws = calloc((size_t)n, sizeof(*ws));
	if (!ws)
		return -ENOMEM;
	/* Queue on each word in turn, its value checked under its bucket's lock. */
	for (queued = 0; queued < n; queued++) {
		struct futex_waiter *w = &ws[queued];
		struct futex_bucket *b;
		struct futex_word word;

		w->bitset = FUTEX_BITSET_ANY;
		w->t = t;
		ret = futex_lookup(t, reqs[queued].uaddr, reqs[queued].private, false, &w->key,
				   &word);
		if (ret < 0)
			break;
		b = bucket_of(&w->key);
		w->bucket = b;
		pthread_mutex_lock(&b->lock);
		if (__atomic_load_n(word.p, __ATOMIC_SEQ_CST) != reqs[queued].val) {
			pthread_mutex_unlock(&b->lock);
			word_put(t, &word);
			ret = -EAGAIN;
			break;
		}
		list_add_tail(&w->link, &b->waiters);
		pthread_mutex_unlock(&b->lock);
		word_put(t, &word);
	}
	if (ret == 0)
		ret = task_wait(t, NULL, 0, waitv_woken, &(struct waitv_arg){ ws, n }, deadline,
				true);
	/* Leave every queue; a wake that came meanwhile wins over an error (Linux gives the
	 * index of the last one woken). */
	for (int i = 0; i < queued; i++) {
		struct futex_bucket *b = lock_waiter_bucket(&ws[i]);

		if (__atomic_load_n(&ws[i].woken, __ATOMIC_ACQUIRE))
			woken = i;
		else
			list_del(&ws[i].link);
		pthread_mutex_unlock(&b->lock);
	}
	free(ws);
	return woken >= 0 ? woken : ret;
}

/*
 * Priority inheritance. The word holds the owner's tid, FUTEX_WAITERS when the owner must unlock
 * through the kernel, and FUTEX_OWNER_DIED. Waiters queue in the bucket of the word's key with
 * pi set and sleep until UNLOCK_PI (or CMP_REQUEUE_PI) hands them the lock (acquired), or until
 * the owner's exit wakes them to retry (a robust owner left the word free with
 * FUTEX_OWNER_DIED; another left it naming a dead tid, which a waiter then takes over). The
 * sentry does not boost priorities: guest threads all run at the host's normal priority, so
 * handing over in FIFO order is what Linux's order by priority comes to.
 */

/* pidns.c (weak: the futex unit test links this file alone; its tasks are all in the
 * sandbox's pid namespace). */
#pragma weak pid_ns_lookup

/* Whether the task with tid is alive as far as PI futexes go (tree_lock taken). */
static bool pi_owner_alive(struct task *t, int32_t tid)
{
	struct task *o;
	bool alive;

	pthread_mutex_lock(&t->k->tree_lock);
	/* The tid is the caller's pid namespace's (Linux's find_task_by_vpid). */
	o = t->tg->pidns ? pid_ns_lookup(t->k, t->tg->pidns, tid) : pid_lookup(t->k, tid);
	alive = o && !__atomic_load_n(&o->futex_exited, __ATOMIC_ACQUIRE);
	pthread_mutex_unlock(&t->k->tree_lock);
	return alive;
}

/* Whether a PI waiter other than skip is queued on key in b (locked). */
static bool pi_has_waiters(struct futex_bucket *b, const struct futex_key *key,
			   const struct futex_waiter *skip)
{
	struct futex_waiter *w;

	list_for_each_entry(w, &b->waiters, link)
		if (w != skip && w->pi && key_eq(&w->key, key))
			return true;
	return false;
}

/* Records tid as the owner the PI waiters on key in b (locked) wait for. */
static void pi_set_owner(struct futex_bucket *b, const struct futex_key *key, int32_t tid)
{
	struct futex_waiter *w;

	list_for_each_entry(w, &b->waiters, link)
		if (w->pi && key_eq(&w->key, key))
			w->owner = tid;
}

/* Dequeues a woken-or-not waiter after its sleep; returns whether a waker had dequeued it. */
static bool waiter_leave(struct futex_waiter *w)
{
	struct futex_bucket *b = lock_waiter_bucket(w);
	bool woken = __atomic_load_n(&w->woken, __ATOMIC_ACQUIRE);

	if (!woken)
		list_del(&w->link);
	if (w->pi)
		__atomic_sub_fetch(&pi_waiters, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&b->lock);
	return woken;
}

/*
 * The LOCK_PI loop. retrying: t was queued before and woken by the owner's exit, so a word
 * still naming a dead owner is taken over (a first caller gets -ESRCH, as Linux).
 */
static long pi_lock(struct task *t, uint64_t uaddr, bool private, const struct timespec *deadline,
		    bool trylock, bool retrying)
{
	for (;;) {
		struct futex_waiter w = { .bitset = FUTEX_BITSET_ANY, .t = t, .pi = true };
		struct futex_bucket *b;
		struct futex_word word;
		uint32_t cur, next;
		int32_t owner;
		long ret;

		ret = futex_lookup(t, uaddr, private, true, &w.key, &word);
		if (ret < 0)
			return ret;
		b = bucket_of(&w.key);
		pthread_mutex_lock(&b->lock);
		cur = __atomic_load_n(word.p, __ATOMIC_SEQ_CST);
		owner = (int32_t)(cur & FUTEX_TID_MASK);
		if (owner == task_own_tid(t)) {
			ret = -EDEADLK;
		} else if (owner == 0 || (retrying && !pi_owner_alive(t, owner))) {
			next = (uint32_t)task_own_tid(t) | (cur & FUTEX_OWNER_DIED) |
			       (pi_has_waiters(b, &w.key, NULL) ? FUTEX_WAITERS : 0);
			/* Taken over from an owner that exited: FUTEX_WAITERS and FUTEX_OWNER_DIED,
			 * as Linux's fixup of an owner-less lock leaves the word. */
			if (retrying)
				next |= FUTEX_WAITERS | FUTEX_OWNER_DIED;
			if (!__atomic_compare_exchange_n(word.p, &cur, next, false,
							 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
				ret = 1; /* changed meanwhile: again */
			} else {
				pi_set_owner(b, &w.key, task_own_tid(t));
				ret = 0;
			}
		} else if (!(cur & FUTEX_WAITERS) &&
			   !__atomic_compare_exchange_n(word.p, &cur, cur | FUTEX_WAITERS, false,
							__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
			/* Linux sets FUTEX_WAITERS before it looks for the owner, trylock or not. */
			ret = 1;
		} else if (!pi_owner_alive(t, owner)) {
			/* Checked under the bucket lock: an owner exiting after this finds us
			 * queued. */
			ret = -ESRCH;
		} else if (trylock) {
			ret = -EAGAIN;
		} else {
			w.owner = owner;
			w.bucket = b;
			list_add_tail(&w.link, &b->waiters);
			__atomic_add_fetch(&pi_waiters, 1, __ATOMIC_RELAXED);
			ret = 2; /* queued: sleep */
		}
		pthread_mutex_unlock(&b->lock);
		word_put(t, &word);
		if (ret == 1)
			continue;
		if (ret != 2)
			return ret;

		ret = task_wait(t, NULL, 0, waiter_woken, &w, deadline, true);
		if (waiter_leave(&w)) {
			if (w.acquired)
				return 0;
			retrying = true;
			continue;
		}
		/* A signal: LOCK_PI restarts (its timeout is absolute). */
		return ret == -ERESTARTSYS ? -ERESTARTNOINTR : ret;
	}
}

long futex_lock_pi(struct task *t, uint64_t uaddr, bool private, const struct timespec *deadline,
		   bool trylock)
{
	return pi_lock(t, uaddr, private, deadline, trylock, false);
}

long futex_unlock_pi(struct task *t, uint64_t uaddr, bool private)
{
	for (;;) {
		struct futex_waiter *w, *next_owner = NULL;
		struct futex_key key;
		struct futex_bucket *b;
		struct futex_word word;
		uint32_t cur, next;
		long ret;

		ret = futex_lookup(t, uaddr, private, true, &key, &word);
		if (ret < 0)
			return ret;
		b = bucket_of(&key);
		pthread_mutex_lock(&b->lock);
		cur = __atomic_load_n(word.p, __ATOMIC_SEQ_CST);
		if ((int32_t)(cur & FUTEX_TID_MASK) != task_own_tid(t)) {
			pthread_mutex_unlock(&b->lock);
			word_put(t, &word);
			return -EPERM;
		}
		list_for_each_entry(w, &b->waiters, link) {
			if (w->pi && key_eq(&w->key, &key)) {
				next_owner = w;
				break;
			}
		}
		/* Handed over, the word keeps FUTEX_WAITERS (as Linux) and loses OWNER_DIED. */
		next = next_owner ? (uint32_t)task_own_tid(next_owner->t) | FUTEX_WAITERS : 0;
		if (!__atomic_compare_exchange_n(word.p, &cur, next, false, __ATOMIC_SEQ_CST,
						 __ATOMIC_SEQ_CST)) {
			pthread_mutex_unlock(&b->lock);
			word_put(t, &word);
			continue;
		}
		if (next_owner) {
			pi_set_owner(b, &key, task_own_tid(next_owner->t));
			next_owner->acquired = true;
			wake_waiter(next_owner);
		}
		pthread_mutex_unlock(&b->lock);
		word_put(t, &word);
		return 0;
	}
}

long futex_wait_requeue_pi(struct task *t, uint64_t uaddr, uint64_t uaddr2, bool private,
			   uint32_t val, const struct timespec *deadline)
{
	struct futex_waiter w = { .bitset = FUTEX_BITSET_ANY, .t = t, .requeue_pi = true };
	struct futex_word word;
	long ret;

	if (uaddr == uaddr2)
		return -EINVAL;
	/* The PI word is only a key until a requeue moves us there. */
	ret = futex_key(t, uaddr2, private, true, &w.pi_key);
	if (ret < 0)
		return ret;
	ret = futex_lookup(t, uaddr, private, false, &w.key, &word);
	if (ret < 0)
		return ret;
	if (key_eq(&w.key, &w.pi_key)) {
		word_put(t, &word);
		return -EINVAL;
	}
	ret = waiter_enqueue(t, &w, &word, val);
	if (ret < 0)
		return ret;

	ret = task_wait(t, NULL, 0, waiter_woken, &w, deadline, true);
	if (waiter_leave(&w)) {
		if (w.acquired)
			return 0;
		/* Requeued, then woken by the owner's exit: take the lock the usual way. */
		return pi_lock(t, uaddr2, private, deadline, false, true);
	}
	if (w.pi) /* requeued onto the PI futex, not yet its owner */
		return ret == -ERESTARTSYS ? -EWOULDBLOCK : ret;
	return ret == -ERESTARTSYS ? -ERESTARTNOINTR : ret;
}

long futex_cmp_requeue_pi(struct task *t, uint64_t uaddr, uint64_t uaddr2, bool private,
			  int nr_wake, int nr_requeue, uint32_t val3)
{
	struct futex_key k1, k2;
	struct futex_bucket *b1, *b2;
	struct futex_waiter *w, *tmp;
	struct futex_word word1 = { 0 }, word2 = { 0 };
	bool first = true;
	int woken = 0, moved = 0;
	long ret;

	if (nr_wake != 1 || nr_requeue < 0)
		return -EINVAL;
	ret = futex_key(t, uaddr, private, false, &k1);
	if (ret == 0)
		ret = futex_key(t, uaddr2, private, true, &k2);
	if (ret == 0 && key_eq(&k1, &k2))
		ret = -EINVAL;
	if (ret == 0)
		ret = word_get(t, uaddr, false, &word1);
	if (ret == 0)
		ret = word_get(t, uaddr2, true, &word2);
	if (ret < 0) {
		word_put(t, &word1);
		return ret;
	}
	b1 = bucket_of(&k1);
	b2 = bucket_of(&k2);
	lock_two(b1, b2);
	if (__atomic_load_n(word1.p, __ATOMIC_SEQ_CST) != val3) {
		ret = -EAGAIN;
		goto out_unlock;
	}
	ret = 0;
	list_for_each_entry_safe(w, tmp, &b1->waiters, link) {
		uint32_t cur, next;
		int32_t owner;

		if (!key_eq(&w->key, &k1))
			continue;
		if (!w->requeue_pi || !key_eq(&w->pi_key, &k2)) {
			ret = -EINVAL;
			break;
		}
		cur = __atomic_load_n(word2.p, __ATOMIC_SEQ_CST);
		owner = (int32_t)(cur & FUTEX_TID_MASK);
		if (first) {
			first = false;
			/* The first waiter takes the lock at once if it is free. */
			if (owner == 0) {
				next = (uint32_t)task_own_tid(w->t) | (cur & FUTEX_OWNER_DIED) |
				       (nr_requeue || pi_has_waiters(b2, &k2, NULL) ?
						FUTEX_WAITERS :
						0);
				if (!__atomic_compare_exchange_n(word2.p, &cur, next, false,
								 __ATOMIC_SEQ_CST,
								 __ATOMIC_SEQ_CST)) {
					ret = -EAGAIN;
					break;
				}
				pi_set_owner(b2, &k2, task_own_tid(w->t));
				w->acquired = true;
				wake_waiter(w);
				woken++;
				continue;
			}
			if (owner == task_own_tid(w->t)) {
				ret = -EDEADLK;
				break;
			}
			if (!pi_owner_alive(t, owner)) {
				ret = -ESRCH;
				break;
			}
		}
		if (moved >= nr_requeue)
			break;
		while (!(cur & FUTEX_WAITERS) &&
		       !__atomic_compare_exchange_n(word2.p, &cur, cur | FUTEX_WAITERS, false,
						    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			;
		list_del(&w->link);
		w->key = k2;
		w->requeue_pi = false;
		w->pi = true;
		w->owner = (int32_t)(cur & FUTEX_TID_MASK);
		list_add_tail(&w->link, &b2->waiters);
		__atomic_add_fetch(&pi_waiters, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&w->bucket, b2, __ATOMIC_RELEASE);
		moved++;
	}
	if (ret == 0 || woken + moved > 0)
		ret = woken + moved;
out_unlock:
	unlock_two(b1, b2);
	word_put(t, &word2);
	word_put(t, &word1);
	return ret;
}

/*
 * At t's exit (exiting) or exec: PI waiters waiting for t retry (take the lock it left free, or,
 * after its exit, take it over).
 */
static void pi_owner_wake(struct task *t, bool exiting)
{
	if (exiting)
		__atomic_store_n(&t->futex_exited, true, __ATOMIC_RELEASE);
	if (!__atomic_load_n(&pi_waiters, __ATOMIC_RELAXED))
		return;
	pthread_once(&buckets_once, buckets_init);
	for (int i = 0; i < FUTEX_BUCKETS; i++) {
		struct futex_waiter *w, *tmp;

		pthread_mutex_lock(&buckets[i].lock);
		list_for_each_entry_safe(w, tmp, &buckets[i].waiters, link)
			if (w->pi && w->owner == task_own_tid(t))
				wake_waiter(w);
		pthread_mutex_unlock(&buckets[i].lock);
	}
}

/*
 * Releases one robust futex at guest address uaddr if t owns it, as Linux's handle_futex_death:
 * a plain one wakes a waiter (a shared wake, as Linux's); a PI one's waiters are woken by
 * pi_owner_wake. The pending entry of a plain futex left free (no owner) wakes a waiter too: its
 * owner may have died between the unlock and the wake. Returns -1 when the word is unaligned or
 * cannot be read and written (the walk stops there, as Linux's), else 0.
 */
static int robust_release(struct task *t, uint64_t uaddr, bool pi, bool pending)
{
	struct futex_word word;
	uint32_t cur, next;

	if ((uaddr & 3) || uaddr > TASK_SIZE_MAX - sizeof(uint32_t) ||
	    word_get(t, uaddr, true, &word) < 0)
		return -1;
	cur = __atomic_load_n(word.p, __ATOMIC_RELAXED);
	do {
		if (pending && !pi && !(cur & FUTEX_TID_MASK)) {
			word_put(t, &word);
			futex_wake(t, uaddr, 1);
			return 0;
		}
		if ((cur & FUTEX_TID_MASK) != (uint32_t)task_own_tid(t)) {
			word_put(t, &word);
			return 0;
		}
		next = (cur & FUTEX_WAITERS) | FUTEX_OWNER_DIED;
	} while (!__atomic_compare_exchange_n(word.p, &cur, next, false, __ATOMIC_SEQ_CST,
					      __ATOMIC_RELAXED));
	word_put(t, &word);
	if (!pi && (cur & FUTEX_WAITERS))
		futex_wake(t, uaddr, 1);
	return 0;
}

/* Walks t's robust list (Linux's exit_robust_list), in t's mm of now. */
static void robust_list_walk(struct task *t)
{
	struct {
		uint64_t next;
		int64_t futex_offset;
		uint64_t pending;
	} head;
	uint64_t entry, pending;

	if (!t->mm || !t->robust_list || t->robust_len != sizeof(head) ||
	    mm_copy_in(t->mm, &head, t->robust_list, sizeof(head)) != sizeof(head))
		return;
	pending = head.pending & ~1ULL;
	entry = head.next;
	for (int i = 0; i < ROBUST_LIST_LIMIT && (entry & ~1ULL) != t->robust_list; i++) {
		uint64_t cur = entry & ~1ULL, next;
		bool fetched = mm_copy_in(t->mm, &next, cur, sizeof(next)) == sizeof(next);

		/* The pending entry is handled last, as Linux does. */
		if (cur != pending &&
		    robust_release(t, cur + (uint64_t)head.futex_offset, entry & 1, false) < 0)
			return;
		if (!fetched)
			return;
		entry = next;
	}
	if (pending)
		robust_release(t, pending + (uint64_t)head.futex_offset, head.pending & 1, true);
}

void futex_exit_cleanup(struct task *t)
{
	robust_list_walk(t);
	pi_owner_wake(t, true);
}

void futex_exec_cleanup(struct task *t)
{
	robust_list_walk(t);
	t->robust_list = t->robust_len = 0;
	pi_owner_wake(t, false);
}
