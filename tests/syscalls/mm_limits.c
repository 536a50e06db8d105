/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Conformance: RLIMIT_DATA and RLIMIT_AS as Linux enforces them. RLIMIT_AS bounds the total
 * size of the mappings (total_vm) for mmap, mremap and brk; RLIMIT_DATA bounds the private
 * writable mappings that are not stacks (data_vm) for mmap, mprotect and mremap, and the heap
 * plus the data segment for brk. A brk past a limit leaves the break where it was. Sizes are
 * measured from /proc/self/maps, each check in a child of its own.
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "child.h"

#define PG 4096L
#define MB (1024L * 1024L)

static char *map(void *hint, long len, int prot, int flags)
{
	return (char *)syscall(SYS_mmap, hint, len, prot, flags, -1, 0);
}

static unsigned long brk_at(unsigned long addr)
{
	return (unsigned long)syscall(SYS_brk, addr);
}

/*
 * Bytes of the mappings /proc/self/maps lists: all of them (Linux's total_vm; the vsyscall page
 * is not in the mm) or the private writable ones that are not the stack (data_vm).
 */
static long mapped_bytes(int data_only)
{
	char line[512];
	long total = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s", &a, &b, perms) != 3 || strstr(line, "[vsyscall]"))
			continue;
		if (data_only && (perms[1] != 'w' || perms[3] != 'p' || strstr(line, "[stack]")))
			continue;
		total += (long)(b - a);
	}
	fclose(f);
	return total;
}

static int set_limit(int res, rlim_t cur)
{
	struct rlimit rl = { cur, RLIM_INFINITY };

	return setrlimit(res, &rl);
}

static void data_limit(void *arg)
{
	long data = mapped_bytes(1);
	char *p, *q;

	(void)arg;
	CHECK(data > 0, "data_vm %ld", data);
	CHECK_OK(set_limit(RLIMIT_DATA, (rlim_t)(data + MB)));
	CHECK(map(NULL, 2 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS) ==
			      MAP_FAILED &&
		      errno == ENOMEM,
	      "a private writable mapping past RLIMIT_DATA: %s", strerror(errno));
	/* Not data: read-only, shared, or a stack. */
	p = map(NULL, 2 * MB, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS);
	CHECK(p != MAP_FAILED, "a read-only mapping: %s", strerror(errno));
	if (p != MAP_FAILED) {
		CHECK_ERR(mprotect(p, 2 * MB, PROT_READ | PROT_WRITE), ENOMEM);
		CHECK_OK(mprotect(p, PG, PROT_READ | PROT_WRITE));
		CHECK_OK(munmap(p, 2 * MB));
	}
	p = map(NULL, 2 * MB, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS);
	CHECK(p != MAP_FAILED, "a shared mapping: %s", strerror(errno));
	if (p != MAP_FAILED)
		munmap(p, 2 * MB);
	p = map(NULL, 2 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_GROWSDOWN);
	CHECK(p != MAP_FAILED, "a grows-down mapping: %s", strerror(errno));
	if (p != MAP_FAILED)
		munmap(p, 2 * MB);

	p = map(NULL, 256 * 1024, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
	CHECK(p != MAP_FAILED, "a mapping within RLIMIT_DATA: %s", strerror(errno));
	if (p != MAP_FAILED) {
		p[0] = 1;
		q = (char *)syscall(SYS_mremap, p, 256 * 1024, 2 * MB, MREMAP_MAYMOVE, 0);
		CHECK(q == MAP_FAILED && errno == ENOMEM, "mremap past RLIMIT_DATA: %p %s", q,
		      strerror(errno));
		q = (char *)syscall(SYS_mremap, p, 256 * 1024, 512 * 1024, MREMAP_MAYMOVE, 0);
		CHECK(q != MAP_FAILED && q[0] == 1, "mremap within RLIMIT_DATA: %s",
		      strerror(errno));
		if (q != MAP_FAILED)
			munmap(q, 512 * 1024);
	}

	unsigned long cur = brk_at(0);
	CHECK_RET(brk_at(cur + 2 * MB), cur);
	CHECK_RET(brk_at(cur + 128 * 1024), cur + 128 * 1024);
	CHECK_RET(brk_at(cur), cur);

	/* RLIMIT_DATA 0 with an infinite hard limit is let through (Linux's Valgrind rule). */
	CHECK_OK(set_limit(RLIMIT_DATA, 0));
	p = map(NULL, 2 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
	CHECK(p != MAP_FAILED, "RLIMIT_DATA 0: %s", strerror(errno));
}

static void as_limit(void *arg)
{
	long total = mapped_bytes(0);
	char *p, *q;

	(void)arg;
	CHECK(total > 0, "total_vm %ld", total);
	CHECK_OK(set_limit(RLIMIT_AS, (rlim_t)(total + MB)));
	CHECK(map(NULL, 2 * MB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS) == MAP_FAILED &&
		      errno == ENOMEM,
	      "a mapping past RLIMIT_AS: %s", strerror(errno));
	CHECK(map(NULL, 2 * MB, PROT_READ, MAP_SHARED | MAP_ANONYMOUS) == MAP_FAILED &&
		      errno == ENOMEM,
	      "a shared mapping past RLIMIT_AS: %s", strerror(errno));
	p = map(NULL, 512 * 1024, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS);
	CHECK(p != MAP_FAILED, "a mapping within RLIMIT_AS: %s", strerror(errno));
	if (p != MAP_FAILED) {
		/* Replacing mapped pages adds nothing. */
		q = map(p, 512 * 1024, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED);
		CHECK(q == p, "MAP_FIXED over the mapping: %s", strerror(errno));
		q = (char *)syscall(SYS_mremap, p, 512 * 1024, 2 * MB, MREMAP_MAYMOVE, 0);
		CHECK(q == MAP_FAILED && errno == ENOMEM, "mremap past RLIMIT_AS: %p %s", q,
		      strerror(errno));
		q = (char *)syscall(SYS_mremap, p, 512 * 1024, 256 * 1024, 0, 0);
		CHECK(q == p, "mremap shrinking: %s", strerror(errno));
		munmap(p, 256 * 1024);
	}
	unsigned long cur = brk_at(0);
	CHECK_RET(brk_at(cur + 2 * MB), cur);
	CHECK_RET(brk_at(cur + 128 * 1024), cur + 128 * 1024);
	CHECK_RET(brk_at(cur), cur);
	/* Unlimited again: the same mapping succeeds. */
	CHECK_OK(set_limit(RLIMIT_AS, RLIM_INFINITY));
	p = map(NULL, 2 * MB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS);
	CHECK(p != MAP_FAILED, "without RLIMIT_AS: %s", strerror(errno));
}

int main(void)
{
	/* No stdio buffer to allocate once the limits are low. */
	setvbuf(stdout, NULL, _IONBF, 0);
	in_child(data_limit, NULL);
	in_child(as_limit, NULL);
	return finish();
}
