/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Conformance: memory mappings, checked through what a program sees without taking a fault:
 * contents, zero fill, where mappings land, errors, and read(2) into protected memory
 * (-EFAULT). mmap, munmap, mprotect, mremap, brk, madvise.
 */
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "check.h"

#define PG 4096L

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

static char *map(void *hint, long len, int prot, int flags, int fd, long off)
{
	return (char *)syscall(SYS_mmap, hint, len, prot, flags, fd, off);
}

static int all_zero(const char *p, long len)
{
	for (long i = 0; i < len; i++)
		if (p[i])
			return 0;
	return 1;
}

static void fill(char *p, long len, int seed)
{
	for (long i = 0; i < len; i++)
		p[i] = (char)(i * 7 + seed);
}

static int filled(const char *p, long len, int seed)
{
	for (long i = 0; i < len; i++)
		if (p[i] != (char)(i * 7 + seed))
			return 0;
	return 1;
}

/* True when [p, p+len) is free: a MAP_FIXED_NOREPLACE mapping lands exactly there. */
static int is_free(char *p, long len)
{
	char *q = map(p, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (q == MAP_FAILED)
		return 0;
	syscall(SYS_munmap, q, len);
	return q == p;
}

static void check_anonymous(void)
{
	char *p = map(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *q;
	int zero = open("/dev/zero", O_RDONLY);

	CHECK(p != MAP_FAILED && ((uintptr_t)p & (PG - 1)) == 0, "mmap %p", (void *)p);
	if (p == MAP_FAILED)
		return;
	CHECK(all_zero(p, 4 * PG), "fresh anonymous memory is not zero");
	fill(p, 4 * PG, 1);
	CHECK(filled(p, 4 * PG, 1), "contents did not stick");

	/* MAP_FIXED_NOREPLACE refuses to replace; MAP_FIXED replaces with fresh zero pages. */
	q = map(p + PG, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK(q == MAP_FAILED && errno == EEXIST, "FIXED_NOREPLACE over a mapping: %p", (void *)q);
	q = map(p + PG, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	CHECK(q == p + PG, "MAP_FIXED at %p gave %p", (void *)(p + PG), (void *)q);
	CHECK(all_zero(p + PG, PG), "MAP_FIXED page is not zero");
	/* (PG * 7 is a multiple of 256: every page of the pattern starts alike.) */
	CHECK(filled(p, PG, 1) && filled(p + 2 * PG, 2 * PG, 1), "neighbours changed");

	/* munmap a page in the middle: a hint for that place gets exactly it back. */
	CHECK_RET(syscall(SYS_munmap, p + 2 * PG, PG), 0);
	CHECK(is_free(p + 2 * PG, PG), "unmapped page is not free");
	q = map(p + 2 * PG, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(q == p + 2 * PG, "hint %p gave %p", (void *)(p + 2 * PG), (void *)q);
	CHECK(all_zero(q, PG), "remapped page is not zero");

	/* mprotect: read-only memory cannot be written by the kernel either (read(2) -EFAULT). */
	CHECK_RET(syscall(SYS_mprotect, p, PG, PROT_READ), 0);
	CHECK(p[0] == 1, "read-only page lost its contents");
	CHECK_ERR(syscall(SYS_read, zero, p, 16), EFAULT);
	CHECK_RET(syscall(SYS_mprotect, p, PG, PROT_NONE), 0);
	CHECK_ERR(syscall(SYS_read, zero, p, 16), EFAULT);
	CHECK_RET(syscall(SYS_mprotect, p, PG, PROT_READ | PROT_WRITE), 0);
	CHECK_RET(syscall(SYS_read, zero, p, 16), 16);
	CHECK(all_zero(p, 16) && p[16] == (char)(16 * 7 + 1), "read into re-enabled page");
	CHECK_ERR(syscall(SYS_mprotect, p + 1, PG, PROT_READ), EINVAL);
	CHECK_ERR(syscall(SYS_mprotect, p, PG, 0x100), EINVAL);

	/* madvise(MADV_DONTNEED) drops private anonymous pages: they read zero again. */
	CHECK_RET(syscall(SYS_madvise, p, 2 * PG, MADV_DONTNEED), 0);
	CHECK(all_zero(p, 2 * PG), "DONTNEED pages are not zero");
	CHECK(filled(p + 3 * PG, PG, 1), "DONTNEED went too far");
	CHECK_RET(syscall(SYS_madvise, p, PG, MADV_NORMAL), 0);
	CHECK_RET(syscall(SYS_madvise, p, PG, MADV_WILLNEED), 0);
	CHECK_RET(syscall(SYS_madvise, p, 0, MADV_NORMAL), 0);
	CHECK_ERR(syscall(SYS_madvise, p + 1, PG, MADV_NORMAL), EINVAL);
	CHECK_ERR(syscall(SYS_madvise, p, PG, 9999), EINVAL);

	/* munmap. */
	CHECK_ERR(syscall(SYS_munmap, p + 1, PG), EINVAL);
	CHECK_ERR(syscall(SYS_munmap, p, 0), EINVAL);
	CHECK_RET(syscall(SYS_munmap, p, 4 * PG), 0);
	CHECK_RET(syscall(SYS_munmap, p, 4 * PG), 0); /* nothing there: still fine */
	CHECK(is_free(p, 4 * PG), "munmapped range is not free");
	CHECK_ERR(syscall(SYS_mprotect, p, PG, PROT_READ), ENOMEM);
	CHECK_ERR(syscall(SYS_madvise, p, PG, MADV_NORMAL), ENOMEM);
	close(zero);

	/* PROT_NONE first, usable after mprotect. */
	p = map(NULL, PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED, "PROT_NONE mmap");
	CHECK_RET(syscall(SYS_mprotect, p, PG, PROT_READ | PROT_WRITE), 0);
	p[PG - 1] = 5;
	CHECK(p[PG - 1] == 5 && all_zero(p, PG - 1), "PROT_NONE then RW");
	syscall(SYS_munmap, p, PG);

	/* A large mapping is lazily backed: touch its ends. */
	p = map(NULL, 64L << 20, PROT_READ | PROT_WRITE,
		MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(p != MAP_FAILED, "64 MiB mmap");
	if (p != MAP_FAILED) {
		p[0] = 1;
		p[(64L << 20) - 1] = 2;
		CHECK(p[0] == 1 && p[(64L << 20) - 1] == 2 && p[32L << 20] == 0, "64 MiB contents");
		syscall(SYS_munmap, p, 64L << 20);
	}
}

static void check_errors(void)
{
	char *p;

	p = map(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p == MAP_FAILED && errno == EINVAL, "len 0");
	p = map(NULL, PG, PROT_READ, MAP_ANONYMOUS, -1, 0);
	CHECK(p == MAP_FAILED && errno == EINVAL, "neither shared nor private");
	p = map(NULL, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 1);
	CHECK(p == MAP_FAILED && errno == EINVAL, "unaligned offset");
	p = map((void *)0x10000001, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	CHECK(p == MAP_FAILED && errno == EINVAL, "unaligned MAP_FIXED");
	p = map(NULL, PG, PROT_READ, MAP_PRIVATE, 555, 0);
	CHECK(p == MAP_FAILED && errno == EBADF, "bad fd: %s", strerror(errno));
	p = map(NULL, PG, PROT_READ, MAP_PRIVATE, -1, 0);
	CHECK(p == MAP_FAILED && errno == EBADF, "fd -1 without MAP_ANONYMOUS");
}

static void check_file(void)
{
	int fd = open("/etc/passwd", O_RDONLY);
	struct stat st;
	char buf[8192];
	long n;
	char *p;

	CHECK(fd >= 0, "open");
	fstat(fd, &st);
	n = read(fd, buf, sizeof(buf));
	CHECK(n == st.st_size && n < PG, "passwd size %ld", n);
	p = map(NULL, PG, PROT_READ, MAP_PRIVATE, fd, 0);
	CHECK(p != MAP_FAILED, "file mmap: %s", strerror(errno));
	if (p == MAP_FAILED)
		return;
	CHECK(!memcmp(p, buf, (size_t)n), "mapped contents differ from read()");
	CHECK(all_zero(p + n, PG - n), "the page past EOF is not zero");
	syscall(SYS_munmap, p, PG);

	/* A private writable mapping of a read-only file: writes stay private. */
	p = map(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	CHECK(p != MAP_FAILED, "private writable file mmap: %s", strerror(errno));
	if (p != MAP_FAILED) {
		memcpy(p, "XXXX", 4);
		CHECK(!memcmp(p, "XXXX", 4) && !memcmp(p + 4, buf + 4, 10), "private write");
		CHECK_RET(pread(fd, buf, 4, 0), 4);
		CHECK(!memcmp(buf, "root", 4), "private write reached the file");
		syscall(SYS_munmap, p, PG);
	}
	close(fd);

	/* /dev/zero mapped privately is zero-filled, writable memory. */
	fd = open("/dev/zero", O_RDWR);
	p = map(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	CHECK(p != MAP_FAILED, "/dev/zero mmap: %s", strerror(errno));
	if (p != MAP_FAILED) {
		CHECK(all_zero(p, 2 * PG), "/dev/zero mapping not zero");
		p[100] = 3;
		CHECK(p[100] == 3, "/dev/zero mapping not writable");
		syscall(SYS_munmap, p, 2 * PG);
	}
	close(fd);
}

static void check_mremap(void)
{
	char *p = map(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *q, *dst;

	fill(p, 2 * PG, 3);
	q = (char *)syscall(SYS_mremap, p, 2 * PG, 64 * PG, MREMAP_MAYMOVE);
	CHECK(q != MAP_FAILED, "mremap grow: %s", strerror(errno));
	if (q == MAP_FAILED)
		return;
	CHECK(filled(q, 2 * PG, 3), "mremap lost contents");
	CHECK(all_zero(q + 2 * PG, 62 * PG), "grown part not zero");
	q[64 * PG - 1] = 9;

	/* Shrinking stays in place and frees the tail. */
	CHECK_RET(syscall(SYS_mremap, q, 64 * PG, PG, 0), (long)q);
	CHECK(is_free(q + PG, 63 * PG), "shrunk tail still mapped");
	CHECK(filled(q, PG, 3), "shrink lost contents");

	/* Growing in place is refused when the next page is taken, without MREMAP_MAYMOVE. */
	p = map(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK_ERR(syscall(SYS_mremap, p, PG, 2 * PG, 0), ENOMEM);

	/* MREMAP_FIXED moves to the given place; the old range becomes free. */
	dst = p + PG; /* replaces the second page of p */
	CHECK_RET(syscall(SYS_mremap, q, PG, PG, MREMAP_MAYMOVE | MREMAP_FIXED, dst), (long)dst);
	CHECK(filled(dst, PG, 3), "moved contents");
	CHECK(is_free(q, PG), "old range of a moved mapping is still mapped");

	CHECK_ERR(syscall(SYS_mremap, p, PG, 2 * PG, 0x100), EINVAL);
	CHECK_ERR(syscall(SYS_mremap, p + 1, PG, 2 * PG, MREMAP_MAYMOVE), EINVAL);
	CHECK_ERR(syscall(SYS_mremap, p, PG, PG, MREMAP_FIXED, q), EINVAL);
	CHECK_ERR(syscall(SYS_mremap, q, PG, 2 * PG, MREMAP_MAYMOVE), EFAULT);
	syscall(SYS_munmap, p, 3 * PG);
}

static void check_brk(void)
{
	char *cur = (char *)syscall(SYS_brk, 0), *grown;

	CHECK(cur != NULL && cur != (char *)-1, "brk(0) %p", (void *)cur);
	grown = (char *)syscall(SYS_brk, cur + 64 * 1024);
	CHECK(grown == cur + 64 * 1024, "brk grow gave %p", (void *)grown);
	if (grown == cur + 64 * 1024) {
		/* The part of the first page below cur may hold the program's data: check above. */
		char *page = (char *)(((uintptr_t)cur + PG - 1) & ~(uintptr_t)(PG - 1));

		CHECK(all_zero(page, grown - page), "new heap is not zero");
		memset(cur, 0x5a, (size_t)(grown - cur));
		CHECK(grown[-1] == 0x5a, "heap not writable");
	}
	/* A break below the start fails: the current break is returned unchanged. */
	CHECK_RET(syscall(SYS_brk, 1), (long)grown);
	CHECK_RET(syscall(SYS_brk, cur), (long)cur);
	CHECK_RET(syscall(SYS_brk, 0), (long)cur);
}

/*
 * Address-space reservations as V8 makes them (4 and 32 GiB PROT_NONE, in each of Chromium's
 * processes): untouched PROT_NONE memory costs nothing on Linux, so 4 x 32 GiB fit even past
 * the machine's RAM, and the pages of one made accessible work.
 */
static void check_reservations(void)
{
	const size_t len = (size_t)32 << 30;
	char *r[4];

	for (int i = 0; i < 4; i++) {
		r[i] = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(r[i] != MAP_FAILED, "32 GiB PROT_NONE reservation %d: %s", i,
		      strerror(errno));
	}
	if (r[3] != MAP_FAILED) {
		CHECK_RET(mprotect(r[3] + len / 2, 4096, PROT_READ | PROT_WRITE), 0);
		r[3][len / 2] = 42;
		CHECK(r[3][len / 2] == 42, "a page in the middle of a reservation");
	}
	for (int i = 0; i < 4; i++)
		if (r[i] != MAP_FAILED)
			CHECK_RET(munmap(r[i], len), 0);
}

int main(void)
{
	check_anonymous();
	check_errors();
	check_file();
	check_mremap();
	check_brk();
	check_reservations();
	return finish();
}
