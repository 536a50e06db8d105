/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Guest memory that a blocked system call will write, across a fork or a mapping change made by
 * another thread while it sleeps.
 *
 * Part 1, repeated ITERS times: four threads block, in read(2) of a pipe, recvmsg(2) of a Unix
 * socket, FUTEX_WAIT and epoll_wait(2), each on its own page of one private anonymous mapping.
 * Once they sleep, the main thread forks; the parent then writes a marker into each page (so its
 * side is copied first), sends the data, wakes the futex and makes the event. The parent's
 * pages must hold what arrived; the child's copies must still hold the pre-fork bytes (it
 * checks once the parent is done and reports through a pipe). A kernel that translated the
 * buffers before sleeping writes into the page the child now has.
 *
 * Part 2: a read blocked on a pipe (or a receive on a Unix socket) into a page that another
 * thread munmaps, maps anew, or makes read-only meanwhile. Linux copies when the data arrives:
 * into the new mapping, or -EFAULT with the data left in the pipe or stream (a datagram is
 * taken and lost).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "child.h"

#define ITERS 200
#define PG 4096
#define DATA_LEN 2048
#define MARK_OFF 4000
#define EV_MAGIC 0x5eed5eed5eed5eedULL

enum { P_PIPE, P_SOCK, P_FUTEX, P_EPOLL, NPAGES };

static const char *const page_name[NPAGES] = { "read", "recvmsg", "futex", "epoll_wait" };

struct blocked {
	uint8_t *mem; /* NPAGES pages, private anonymous */
	int pipe_r, sock_r, epfd;
	pid_t tid[NPAGES];
	long ret[NPAGES];
	int err[NPAGES];
};

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static long futex(uint32_t *w, int op, uint32_t val)
{
	return syscall(SYS_futex, w, op, val, NULL, NULL, 0);
}

static void *t_read(void *arg)
{
	struct blocked *b = arg;

	__atomic_store_n(&b->tid[P_PIPE], gettid_(), __ATOMIC_RELEASE);
	b->ret[P_PIPE] = read(b->pipe_r, b->mem + P_PIPE * PG, DATA_LEN);
	b->err[P_PIPE] = errno;
	return NULL;
}

static void *t_recvmsg(void *arg)
{
	struct blocked *b = arg;
	struct iovec iov = { b->mem + P_SOCK * PG, DATA_LEN };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	__atomic_store_n(&b->tid[P_SOCK], gettid_(), __ATOMIC_RELEASE);
	b->ret[P_SOCK] = recvmsg(b->sock_r, &mh, MSG_WAITALL);
	b->err[P_SOCK] = errno;
	return NULL;
}

static void *t_futex(void *arg)
{
	struct blocked *b = arg;
	uint32_t *w = (uint32_t *)(b->mem + P_FUTEX * PG);
	long r = 0;

	__atomic_store_n(&b->tid[P_FUTEX], gettid_(), __ATOMIC_RELEASE);
	/* Woken for real only once the word is 1 (spurious wakes are allowed). */
	while (__atomic_load_n(w, __ATOMIC_ACQUIRE) == 0) {
		r = futex(w, FUTEX_WAIT_PRIVATE, 0);
		if (r < 0 && errno != EAGAIN && errno != EINTR)
			break;
		r = 0;
	}
	b->ret[P_FUTEX] = r;
	b->err[P_FUTEX] = errno;
	return NULL;
}

static void *t_epoll(void *arg)
{
	struct blocked *b = arg;

	__atomic_store_n(&b->tid[P_EPOLL], gettid_(), __ATOMIC_RELEASE);
	do {
		b->ret[P_EPOLL] =
			epoll_wait(b->epfd, (struct epoll_event *)(b->mem + P_EPOLL * PG), 4, -1);
	} while (b->ret[P_EPOLL] < 0 && errno == EINTR);
	b->err[P_EPOLL] = errno;
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Waits until the thread whose tid slot is *tidp has started and sleeps. Returns false after a
 * generous time without that (the iteration then tests less, but stays correct).
 */
static bool wait_sleeping(pid_t *tidp)
{
	double end = now() + 30;

	while (now() < end) {
		pid_t tid = __atomic_load_n(tidp, __ATOMIC_ACQUIRE);

		if (tid && thread_state(tid) == 'S')
			return true;
		/* A short sleep, not sched_yield: a spinning waiter starved the thread it waits for
		 * on a loaded machine (30 s stalls in CI). */
		nanosleep(&(struct timespec){ .tv_nsec = 200000 }, NULL);
	}
	return false;
}

static int page_is(const uint8_t *p, size_t from, size_t to, uint8_t v)
{
	for (size_t i = from; i < to; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

/* The child: once told, checks its copies still hold the pre-fork bytes; reports a bitmask. */
static void child_check(struct blocked *b, uint8_t pre, int go_r, int res_w)
{
	unsigned int bad = 0;
	char c;

	if (read(go_r, &c, 1) != 1)
		_exit(2);
	for (int i = 0; i < NPAGES; i++) {
		const uint8_t *p = b->mem + i * PG;
		size_t from = i == P_FUTEX ? sizeof(uint32_t) : 0;

		if (!page_is(p, from, PG, pre))
			bad |= 1u << i;
	}
	if (*(uint32_t *)(b->mem + P_FUTEX * PG) != 0)
		bad |= 1u << P_FUTEX;
	if (write(res_w, &bad, sizeof(bad)) != sizeof(bad))
		_exit(3);
	_exit(0);
}

struct tally {
	int parent_bad[NPAGES], child_bad[NPAGES], not_slept, errors;
};

static void one_iteration(int iter, struct tally *ty)
{
	static void *(*const fns[NPAGES])(void *) = { t_read, t_recvmsg, t_futex, t_epoll };
	struct blocked b = { 0 };
	int pp[2], sv[2], go[2], res[2], efd;
	uint8_t pre = (uint8_t)('a' + iter % 26), data[DATA_LEN];
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = EV_MAGIC };
	pthread_t th[NPAGES];
	unsigned int child_bad = ~0u;
	uint64_t one = 1;
	pid_t pid;

	b.mem = mmap(NULL, NPAGES * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b.mem == MAP_FAILED || pipe(pp) || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) ||
	    pipe(go) || pipe(res)) {
		ty->errors++;
		return;
	}
	efd = eventfd(0, 0);
	b.epfd = epoll_create1(0);
	if (efd < 0 || b.epfd < 0 || epoll_ctl(b.epfd, EPOLL_CTL_ADD, efd, &ev)) {
		ty->errors++;
		return;
	}
	memset(b.mem, pre, NPAGES * PG);
	*(uint32_t *)(b.mem + P_FUTEX * PG) = 0;
	b.pipe_r = pp[0];
	b.sock_r = sv[0];
	for (int i = 0; i < DATA_LEN; i++)
		data[i] = (uint8_t)('A' + (i + iter) % 26);

	for (int i = 0; i < NPAGES; i++)
		pthread_create(&th[i], NULL, fns[i], &b);
	for (int i = 0; i < NPAGES; i++)
		if (!wait_sleeping(&b.tid[i]))
			ty->not_slept++;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(go[1]);
		close(res[0]);
		child_check(&b, pre, go[0], res[1]);
	}
	close(go[0]);
	close(res[1]);
	if (pid < 0) {
		ty->errors++;
		return;
	}
	/* The parent writes each page first: its side gets its own copy before the data. */
	for (int i = 0; i < NPAGES; i++)
		b.mem[i * PG + MARK_OFF] = 'M';
	if (write(pp[1], data, DATA_LEN) != DATA_LEN || send(sv[1], data, DATA_LEN, 0) != DATA_LEN)
		ty->errors++;
	__atomic_store_n((uint32_t *)(b.mem + P_FUTEX * PG), 1, __ATOMIC_RELEASE);
	futex((uint32_t *)(b.mem + P_FUTEX * PG), FUTEX_WAKE_PRIVATE, 1);
	if (write(efd, &one, sizeof(one)) != sizeof(one))
		ty->errors++;
	for (int i = 0; i < NPAGES; i++)
		pthread_join(th[i], NULL);

	if (b.ret[P_PIPE] != DATA_LEN || memcmp(b.mem + P_PIPE * PG, data, DATA_LEN) ||
	    !page_is(b.mem + P_PIPE * PG, DATA_LEN, MARK_OFF, pre))
		ty->parent_bad[P_PIPE]++;
	if (b.ret[P_SOCK] != DATA_LEN || memcmp(b.mem + P_SOCK * PG, data, DATA_LEN) ||
	    !page_is(b.mem + P_SOCK * PG, DATA_LEN, MARK_OFF, pre))
		ty->parent_bad[P_SOCK]++;
	if (b.ret[P_FUTEX] != 0 || *(uint32_t *)(b.mem + P_FUTEX * PG) != 1)
		ty->parent_bad[P_FUTEX]++;
	{
		struct epoll_event *e = (struct epoll_event *)(b.mem + P_EPOLL * PG);

		if (b.ret[P_EPOLL] != 1 || e->data.u64 != EV_MAGIC || !(e->events & EPOLLIN) ||
		    !page_is(b.mem + P_EPOLL * PG, sizeof(*e), MARK_OFF, pre))
			ty->parent_bad[P_EPOLL]++;
	}
	for (int i = 0; i < NPAGES; i++)
		if (b.mem[i * PG + MARK_OFF] != 'M')
			ty->parent_bad[i]++;

	if (write(go[1], "g", 1) != 1 ||
	    read(res[0], &child_bad, sizeof(child_bad)) != sizeof(child_bad))
		ty->errors++;
	for (int i = 0; i < NPAGES; i++)
		if (child_bad & (1u << i))
			ty->child_bad[i]++;
	{
		int st = -1;

		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			ty->errors++;
	}
	close(pp[0]);
	close(pp[1]);
	close(sv[0]);
	close(sv[1]);
	close(go[1]);
	close(res[0]);
	close(efd);
	close(b.epfd);
	munmap(b.mem, NPAGES * PG);
}

static void test_fork_while_blocked(void)
{
	struct tally ty = { 0 };

	for (int i = 0; i < ITERS; i++)
		one_iteration(i, &ty);
	CHECK(ty.errors == 0, "%d set-up or reporting errors", ty.errors);
	CHECK(ty.not_slept < ITERS, "the threads were never seen sleeping (%d times not)",
	      ty.not_slept);
	for (int i = 0; i < NPAGES; i++) {
		CHECK(ty.parent_bad[i] == 0, "%s: the parent's buffer was wrong in %d of %d runs",
		      page_name[i], ty.parent_bad[i], ITERS);
		CHECK(ty.child_bad[i] == 0,
		      "%s: the child's copy changed after fork in %d of %d runs", page_name[i],
		      ty.child_bad[i], ITERS);
	}
}

/* --- part 2: the mapping of a blocked read's buffer changes --- */

struct mreader {
	int fd;
	bool sock;
	uint8_t *buf;
	pid_t tid;
	ssize_t ret;
	int err;
};

static void *t_mread(void *arg)
{
	struct mreader *m = arg;

	__atomic_store_n(&m->tid, gettid_(), __ATOMIC_RELEASE);
	m->ret = m->sock ? recv(m->fd, m->buf, 100, 0) : read(m->fd, m->buf, 100);
	m->err = errno;
	return NULL;
}

enum change { UNMAP, REMAP, READONLY };

/* type: 0 for a pipe, else the type of a Unix socket pair. */
static void test_mapping_changes(enum change how, int type, const char *what)
{
	struct mreader m = { .sock = type != 0 };
	uint8_t data[100], back[200];
	pthread_t th;
	int pp[2];

	memset(data, 'D', sizeof(data));
	m.buf = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m.buf == MAP_FAILED || (type ? socketpair(AF_UNIX, type, 0, pp) : pipe(pp))) {
		CHECK(0, "%s: set-up: %s", what, strerror(errno));
		return;
	}
	memset(m.buf, 'o', PG);
	m.fd = pp[0];
	pthread_create(&th, NULL, t_mread, &m);
	CHECK(wait_sleeping(&m.tid), "%s: the reader never slept", what);
	switch (how) {
	case UNMAP:
		munmap(m.buf, PG);
		break;
	case REMAP:
		CHECK(mmap(m.buf, PG, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == m.buf,
		      "%s: mmap MAP_FIXED: %s", what, strerror(errno));
		break;
	case READONLY:
		mprotect(m.buf, PG, PROT_READ);
		break;
	}
	CHECK(write(pp[1], data, sizeof(data)) == (ssize_t)sizeof(data), "%s: write: %s", what,
	      strerror(errno));
	pthread_join(th, NULL);
	switch (how) {
	case UNMAP:
	case READONLY:
		CHECK(m.ret == -1 && m.err == EFAULT, "%s: the read returned %zd (%s), not EFAULT",
		      what, m.ret, strerror(m.err));
		fcntl(pp[0], F_SETFL, O_NONBLOCK);
		if (type == SOCK_DGRAM) {
			/* Linux took the datagram and failed to copy it: it is gone. */
			CHECK(read(pp[0], back, sizeof(back)) == -1 && errno == EAGAIN,
			      "%s: the datagram was not dropped", what);
		} else {
			/* Nothing was taken: the data is still there. */
			CHECK(read(pp[0], back, sizeof(back)) == (ssize_t)sizeof(data) &&
				      !memcmp(back, data, sizeof(data)),
			      "%s: the data did not stay in the pipe or socket", what);
		}
		if (how == READONLY)
			CHECK(page_is(m.buf, 0, PG, 'o'), "%s: the read-only page changed", what);
		break;
	case REMAP:
		CHECK(m.ret == (ssize_t)sizeof(data), "%s: the read returned %zd (%s)", what, m.ret,
		      strerror(m.err));
		CHECK(!memcmp(m.buf, data, sizeof(data)) && page_is(m.buf, sizeof(data), PG, 0),
		      "%s: the data is not in the new mapping", what);
		break;
	}
	munmap(m.buf, PG);
	close(pp[0]);
	close(pp[1]);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_fork_while_blocked();
	test_mapping_changes(UNMAP, 0, "munmap while a read sleeps");
	test_mapping_changes(REMAP, 0, "mmap MAP_FIXED over a sleeping read's buffer");
	test_mapping_changes(READONLY, 0, "mprotect PROT_READ while a read sleeps");
	test_mapping_changes(UNMAP, SOCK_STREAM, "munmap while a stream recv sleeps");
	test_mapping_changes(REMAP, SOCK_STREAM, "mmap MAP_FIXED over a sleeping recv's buffer");
	test_mapping_changes(UNMAP, SOCK_DGRAM, "munmap while a datagram recv sleeps");
	test_mapping_changes(READONLY, SOCK_DGRAM,
			     "mprotect PROT_READ while a datagram recv sleeps");
	return finish();
}
