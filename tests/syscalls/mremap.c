/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Conformance: mremap's corners (duplicating shared memory with old_size 0, MREMAP_FIXED,
 * MREMAP_DONTUNMAP), shared anonymous memory keeping its contents across mremap and fork, and
 * madvise's argument checks.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>

#include "child.h"

#define PG 4096L

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif
#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

static char *map(void *hint, long len, int prot, int flags)
{
	return (char *)syscall(SYS_mmap, hint, len, prot, flags, -1, 0);
}

static char *remap(void *old, long old_len, long new_len, int flags, void *new_addr)
{
	return (char *)syscall(SYS_mremap, old, old_len, new_len, flags, new_addr);
}

/* True when [p, p+len) is free: a MAP_FIXED_NOREPLACE mapping lands exactly there. */
static int is_free(char *p, long len)
{
	char *q = map(p, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE);

	if (q == MAP_FAILED)
		return 0;
	munmap(q, len);
	return q == p;
}

/* A free area of len bytes (mapped and unmapped again). */
static char *free_area(long len)
{
	char *p = map(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS);

	munmap(p, len);
	return p;
}

static void check_duplicate(void)
{
	char *p = map(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS), *q, *r;

	CHECK(p != MAP_FAILED, "shared mapping: %s", strerror(errno));
	if (p == MAP_FAILED)
		return;
	p[0] = 'a';
	p[PG] = 'b';
	/* old_size 0: a second mapping of the same pages, the first one stays. */
	q = remap(p, 0, 2 * PG, MREMAP_MAYMOVE, NULL);
	CHECK(q != MAP_FAILED && q != p, "duplicate: %p %s", q, strerror(errno));
	if (q != MAP_FAILED && q != p) {
		CHECK(q[0] == 'a' && q[PG] == 'b', "the copy sees the data: %c%c", q[0], q[PG]);
		q[1] = 'c';
		p[PG + 1] = 'd';
		CHECK(p[1] == 'c' && q[PG + 1] == 'd', "writes are shared both ways");
		munmap(q, 2 * PG);
		CHECK(p[0] == 'a', "the original stays mapped");
	}
	/* With MREMAP_FIXED, at a chosen address; one page of the two. */
	r = free_area(PG);
	q = remap(p + PG, 0, PG, MREMAP_MAYMOVE | MREMAP_FIXED, r);
	CHECK(q == r && q[0] == 'b', "fixed duplicate: %p %s", q, strerror(errno));
	if (q == r)
		munmap(q, PG);
	/* Without MREMAP_MAYMOVE there is nowhere to put it. */
	CHECK(remap(p, 0, PG, 0, NULL) == MAP_FAILED && errno == ENOMEM, "in place: %s",
	      strerror(errno));
	munmap(p, 2 * PG);

	/* Private memory cannot be duplicated. */
	p = map(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
	CHECK(remap(p, 0, PG, MREMAP_MAYMOVE, NULL) == MAP_FAILED && errno == EINVAL,
	      "private duplicate: %s", strerror(errno));
	munmap(p, PG);
}

static void check_fixed_and_dontunmap(void)
{
	char *p = map(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS), *q, *r;

	p[0] = 'x';
	p[2 * PG] = 'y';
	r = free_area(4 * PG);
	/* MREMAP_FIXED over an existing mapping replaces it. */
	CHECK(map(r, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED) == r, "blocker");
	q = remap(p, 3 * PG, 4 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, r);
	CHECK(q == r, "fixed move: %p %s", q, strerror(errno));
	if (q == r) {
		CHECK(q[0] == 'x' && q[2 * PG] == 'y' && q[3 * PG] == 0, "moved contents");
		q[3 * PG] = 'z';
		CHECK(is_free(p, 3 * PG), "the old range is unmapped");
	}
	/* MREMAP_FIXED without MREMAP_MAYMOVE, and overlapping ranges: EINVAL. */
	CHECK(remap(r, PG, PG, MREMAP_FIXED, p) == MAP_FAILED && errno == EINVAL, "fixed alone");
	CHECK(remap(r, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, r + PG) == MAP_FAILED &&
		      errno == EINVAL,
	      "overlap: %s", strerror(errno));

	/* MREMAP_DONTUNMAP: the pages move, the old range stays mapped and reads zero. */
	q = remap(r, 4 * PG, 4 * PG, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL);
	CHECK(q != MAP_FAILED && q != r, "dontunmap: %p %s", q, strerror(errno));
	if (q != MAP_FAILED && q != r) {
		CHECK(q[0] == 'x' && q[3 * PG] == 'z', "dontunmap moved the contents");
		CHECK(r[0] == 0 && r[3 * PG] == 0, "the old range reads zero: %d", r[0]);
		r[0] = 1;
		CHECK(q[0] == 'x', "and is memory of its own");
		munmap(q, 4 * PG);
	}
	CHECK(remap(r, 4 * PG, 5 * PG, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL) == MAP_FAILED &&
		      errno == EINVAL,
	      "dontunmap resizing: %s", strerror(errno));
	CHECK(remap(r, PG, PG, MREMAP_DONTUNMAP, NULL) == MAP_FAILED && errno == EINVAL,
	      "dontunmap without maymove: %s", strerror(errno));
	munmap(r, 4 * PG);

	/* On a private file mapping, the old range shows the file again. */
	int fd = open("/proc/self/exe", O_RDONLY);
	char head[4];
	p = (char *)syscall(SYS_mmap, NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	CHECK(p != MAP_FAILED && !memcmp(p, "\177ELF", 4), "file mapping: %s", strerror(errno));
	if (p != MAP_FAILED) {
		memcpy(head, p, 4);
		p[0] = 'Z';
		q = remap(p, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL);
		CHECK(q != MAP_FAILED && q != p, "file dontunmap: %p %s", q, strerror(errno));
		if (q != MAP_FAILED && q != p) {
			CHECK(q[0] == 'Z' && !memcmp(q + 1, head + 1, 3), "the copy moved");
			CHECK(!memcmp(p, head, 4), "the old range reads the file: %c", p[0]);
			munmap(q, 2 * PG);
		}
		munmap(p, 2 * PG);
	}
	close(fd);

	/* On shared memory, both ranges keep mapping the same pages. */
	p = map(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS);
	p[0] = 's';
	q = remap(p, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL);
	CHECK(q != MAP_FAILED && q != p, "shared dontunmap: %p %s", q, strerror(errno));
	if (q != MAP_FAILED && q != p) {
		CHECK(q[0] == 's' && p[0] == 's', "both see the data: %d %d", q[0], p[0]);
		munmap(q, 2 * PG);
	}
	munmap(p, 2 * PG);
}

static void check_shared_across_fork(void)
{
	char *area = free_area(3 * PG), *q;
	char *p = map(area, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED);
	int to_child[2], to_parent[2];
	char c;
	pid_t pid;

	p[0] = 'p';
	p[PG] = 'P';
	if (pipe(to_child) < 0 || pipe(to_parent) < 0) {
		CHECK(0, "pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		/* The child moves its mapping and writes through the new address. */
		char *m =
			remap(p, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, free_area(2 * PG));
		if (m == MAP_FAILED || m[0] != 'p')
			_exit(1);
		m[1] = 'c';
		if (write(to_parent[1], "1", 1) != 1 || read(to_child[0], &c, 1) != 1)
			_exit(2);
		/* and shrinks it; what is left still shares. */
		if (remap(m, 2 * PG, PG, 0, NULL) != m || m[2] != 'g')
			_exit(3);
		m[3] = 'h';
		if (write(to_parent[1], "2", 1) != 1)
			_exit(4);
		_exit(0);
	}
	CHECK(read(to_parent[0], &c, 1) == 1, "child moved");
	CHECK(p[1] == 'c', "the parent sees the child's write through the moved mapping: %d", p[1]);
	/* The parent grows its mapping (moving it: a blocker after it). */
	CHECK(map(p + 2 * PG, PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE) ==
		      p + 2 * PG,
	      "blocker");
	q = remap(p, 2 * PG, 3 * PG, MREMAP_MAYMOVE, NULL);
	CHECK(q != MAP_FAILED && q != p, "grown: %p %s", q, strerror(errno));
	if (q == MAP_FAILED)
		q = p;
	munmap(p + 2 * PG, PG);
	CHECK(q[0] == 'p' && q[1] == 'c' && q[PG] == 'P', "grown keeps the data");
	q[2] = 'g';
	CHECK(write(to_child[1], "g", 1) == 1, "to child");
	CHECK(read(to_parent[0], &c, 1) == 1 && c == '2', "child shrank");
	CHECK(q[3] == 'h', "the child's write after its shrink: %d", q[3]);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "child status %#x", st);
	munmap(q, 3 * PG);
}

static void check_madvise(void)
{
	char *p = map(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
	char *s = map(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS);

	CHECK_ERR(madvise(p + 1, PG, MADV_NORMAL), EINVAL);
	CHECK_ERR(madvise(p, PG, 999), EINVAL);
	CHECK_ERR(madvise(p, PG, -1), EINVAL);
	CHECK_ERR(syscall(SYS_madvise, p, -PG, MADV_NORMAL), EINVAL);
	CHECK_ERR(syscall(SYS_madvise, p, -1L, MADV_DONTNEED), EINVAL);
	CHECK_RET(madvise(p, 0, MADV_DONTNEED), 0);
	CHECK_RET(madvise(p + 1, 0, 999), -1);
	CHECK_ERR(madvise(p, PG, MADV_REMOVE), EINVAL);
	CHECK_ERR(madvise(s, PG, MADV_WIPEONFORK), EINVAL);
	CHECK_ERR(madvise(s, PG, MADV_FREE), EINVAL);
	/* A range running past the mapping: ENOMEM, after advising the mapped part. */
	munmap(p + 3 * PG, PG);
	p[0] = 1;
	CHECK_ERR(madvise(p, 4 * PG, MADV_DONTNEED), ENOMEM);
	CHECK(p[0] == 0, "the mapped part was dropped");
	/* Locked pages: MADV_DONTNEED refuses them, MADV_DONTNEED_LOCKED drops them. */
	if (mlock(p, PG) == 0) {
		p[0] = 2;
		CHECK_ERR(madvise(p, PG, MADV_DONTNEED), EINVAL);
		CHECK(p[0] == 2, "locked page kept");
		/* Empty ranges lock and unlock nothing. */
		CHECK_RET(munlock(NULL, 0), 0);
		CHECK_ERR(madvise(p, PG, MADV_DONTNEED), EINVAL);
		CHECK_RET(mlock(NULL, 0), 0);
		CHECK_RET(madvise(p + PG, PG, MADV_DONTNEED), 0);
		CHECK_RET(madvise(p, PG, MADV_DONTNEED_LOCKED), 0);
		/* mlockall(MCL_CURRENT) locks every mapping, munlockall none. */
		CHECK_RET(munlockall(), 0);
		CHECK_RET(madvise(p, PG, MADV_DONTNEED), 0);
		CHECK_RET(mlockall(MCL_CURRENT), 0);
		CHECK_ERR(madvise(p + PG, PG, MADV_DONTNEED), EINVAL);
		CHECK_RET(munlockall(), 0);
		CHECK_RET(madvise(p + PG, PG, MADV_DONTNEED), 0);
		CHECK(p[0] == 0, "MADV_DONTNEED_LOCKED dropped it");
		munlock(p, PG);
	} else {
		CHECK(0, "mlock: %s", strerror(errno));
	}
	/* Shared memory keeps its data on DONTNEED; REMOVE zeroes it. */
	s[0] = 5;
	CHECK_RET(madvise(s, PG, MADV_DONTNEED), 0);
	CHECK(s[0] == 5, "shared DONTNEED keeps: %d", s[0]);
	CHECK_RET(madvise(s, PG, MADV_REMOVE), 0);
	CHECK(s[0] == 0, "shared REMOVE zeroes: %d", s[0]);
	munmap(p, 3 * PG);
	munmap(s, 2 * PG);
}

int main(void)
{
	check_duplicate();
	check_fixed_and_dontunmap();
	check_shared_across_fork();
	check_madvise();
	return finish();
}
