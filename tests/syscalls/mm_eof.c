/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Conformance: the end of a mapping's object. Shared anonymous memory (MAP_SHARED|MAP_ANONYMOUS,
 * a shared mapping of /dev/zero) is an object of the size first mapped, a memfd a file: mremap
 * growth past the object's end raises SIGBUS (BUS_ADRERR) on a touch, in the process and in a
 * forked child, while the data of the object survives shrinking, moving and fork. A file
 * mapping grown by mremap past the end of the file raises SIGBUS there too, until the file
 * grows. The kernel's own accesses to such pages (write(2) from them, read(2) into them) fail
 * with EFAULT, or stop short after the good bytes.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>

#include "child.h"
#include "scratch.h"

#define PAGE 4096L

static sigjmp_buf jb;
static volatile sig_atomic_t got_sig, got_code;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	got_sig = sig;
	got_code = si->si_code;
	siglongjmp(jb, 1);
}

/* Reads (or writes, with write) the byte at p; returns the signal it raised, or 0. */
static int touch(volatile char *p, bool write)
{
	got_sig = got_code = 0;
	if (sigsetjmp(jb, 1) == 0) {
		if (write)
			*p = 'w';
		else
			(void)*p;
		return 0;
	}
	return got_sig;
}

static bool filled(const char *p, long len, char c)
{
	for (long i = 0; i < len; i++)
		if (p[i] != c)
			return false;
	return true;
}

/*
 * write(2) of 8 bytes from p to a regular file, of which only the first 4 are good: a short
 * count (a pipe would refuse it whole, EFAULT). Puts what reached the file in got.
 */
static bool partial_write(const char *p, char *got)
{
	int fd = open("w", O_CREAT | O_RDWR | O_TRUNC, 0600);
	ssize_t r;

	if (fd < 0)
		return false;
	r = write(fd, p, 8);
	if (r != 4)
		printf("partial write: %zd (%s)\n", r, r < 0 ? strerror(errno) : "");
	memset(got, 0, 8);
	if (r > 0 && pread(fd, got, 8, 0) != r)
		r = -1;
	close(fd);
	return r == 4;
}

/* The kinds of shared memory mapped here. */
enum kind { ANON, DEVZERO, MEMFD };
static const char *const kind_name[] = { "anonymous", "/dev/zero", "memfd" };

/* Two shared pages of the kind, 'A' and 'B'; *fd gets the memfd (or -1). */
static char *map_two(enum kind k, int *fd)
{
	char *m = MAP_FAILED;

	*fd = -1;
	if (k == ANON) {
		m = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	} else {
		int f = k == DEVZERO ? open("/dev/zero", O_RDWR) : memfd_create("mm_eof", 0);

		if (f < 0) {
			CHECK(0, "%s: open: %s", kind_name[k], strerror(errno));
			return NULL;
		}
		if (k == MEMFD && ftruncate(f, 2 * PAGE) < 0)
			CHECK(0, "memfd: ftruncate: %s", strerror(errno));
		m = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
		if (k == MEMFD)
			*fd = f;
		else
			close(f);
	}
	if (m == MAP_FAILED) {
		CHECK(0, "%s: mmap: %s", kind_name[k], strerror(errno));
		if (*fd >= 0)
			close(*fd);
		return NULL;
	}
	memset(m, 'A', PAGE);
	memset(m + PAGE, 'B', PAGE);
	return m;
}

struct grown {
	enum kind k;
	char *m;
};

/* In a forked child: the grown part still raises SIGBUS; a write to the object is shared. */
static void child_of_grown(void *arg)
{
	struct grown *g = arg;

	CHECK(filled(g->m, PAGE, 'A') && filled(g->m + PAGE, PAGE, 'B'),
	      "%s: the child sees the object's data", kind_name[g->k]);
	CHECK(touch(g->m + 2 * PAGE, false) == SIGBUS, "%s: child: grown part: signal %d",
	      kind_name[g->k], (int)got_sig);
	g->m[PAGE] = 'c';
}

static void check_shared_growth(enum kind k)
{
	const char *what = kind_name[k];
	int fd, p[2];
	char *m = map_two(k, &fd), *n, *q;
	char buf[16];

	if (!m)
		return;
	/* Grown to four pages (moved if need be): the two new pages lie past the object. */
	n = mremap(m, 2 * PAGE, 4 * PAGE, MREMAP_MAYMOVE);
	if (n == MAP_FAILED) {
		CHECK(0, "%s: mremap grow: %s", what, strerror(errno));
		munmap(m, 2 * PAGE);
		return;
	}
	CHECK(filled(n, PAGE, 'A') && filled(n + PAGE, PAGE, 'B'), "%s: grown: data kept", what);
	CHECK(touch(n + 2 * PAGE, false) == SIGBUS, "%s: grown part read: signal %d", what,
	      (int)got_sig);
	CHECK(got_code == BUS_ADRERR, "%s: si_code %d", what, (int)got_code);
	CHECK(touch(n + 4 * PAGE - 1, true) == SIGBUS, "%s: grown part write: signal %d", what,
	      (int)got_sig);
	/* The kernel's own accesses: EFAULT, or the bytes before the end. */
	CHECK_OK(pipe(p));
	CHECK_ERR(write(p[1], n + 2 * PAGE, 8), EFAULT);
	CHECK(partial_write(n + 2 * PAGE - 4, buf), "%s: write across the end", what);
	CHECK(memcmp(buf, "BBBB", 4) == 0, "%s: the bytes before the end", what);
	CHECK_RET(write(p[1], "12345678", 8), 8);
	CHECK_ERR(read(p[0], n + 3 * PAGE, 8), EFAULT);
	CHECK_RET(read(p[0], buf, sizeof(buf)), 8);
	/* A path in the pages past the end, or running into them: EFAULT. */
	CHECK_ERR(open(n + 2 * PAGE, O_RDONLY), EFAULT);
	CHECK_ERR(open(n + 2 * PAGE - 4, O_RDONLY), EFAULT);
	close(p[0]);
	close(p[1]);
	/* fork: the child shares the object and its end. */
	struct grown g = { k, n };
	in_child(child_of_grown, &g);
	CHECK(n[PAGE] == 'c', "%s: the child's write is seen", what);
	n[PAGE] = 'B';
	/* Moved elsewhere: the data and the end go with it. */
	q = mmap(NULL, 8 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (q != MAP_FAILED) {
		char *t =
			mremap(n, 4 * PAGE, 4 * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, q + 2 * PAGE);

		CHECK(t == q + 2 * PAGE, "%s: mremap fixed: %s", what, strerror(errno));
		if (t != MAP_FAILED) {
			n = t;
			CHECK(filled(n, PAGE, 'A') && filled(n + PAGE, PAGE, 'B'),
			      "%s: moved: data kept", what);
			CHECK(touch(n + 2 * PAGE, false) == SIGBUS, "%s: moved: signal %d", what,
			      (int)got_sig);
		}
		munmap(q, 2 * PAGE);
		munmap(q + 6 * PAGE, 2 * PAGE);
	}
	/* Shrunk to one page: that page keeps its data. */
	CHECK(mremap(n, 4 * PAGE, PAGE, 0) == n, "%s: mremap shrink: %s", what, strerror(errno));
	CHECK(filled(n, PAGE, 'A'), "%s: shrunk: data kept", what);
	if (k == MEMFD) {
		/* A memfd may grow: the pages then belong to the file. */
		char *r = mremap(n, PAGE, 3 * PAGE, MREMAP_MAYMOVE);

		CHECK(r != MAP_FAILED, "memfd: grow again: %s", strerror(errno));
		if (r != MAP_FAILED) {
			n = r;
			CHECK(filled(n + PAGE, PAGE, 'B'), "memfd: the file's second page");
			CHECK(touch(n + 2 * PAGE, false) == SIGBUS,
			      "memfd: past the end: signal %d", (int)got_sig);
			CHECK_OK(ftruncate(fd, 3 * PAGE));
			CHECK(touch(n + 2 * PAGE, true) == 0, "memfd: after ftruncate: signal %d",
			      (int)got_sig);
			CHECK_OK(pipe(p));
			CHECK_RET(write(p[1], n + 2 * PAGE, 8), 8);
			close(p[0]);
			close(p[1]);
			munmap(n, 3 * PAGE);
		}
	} else {
		munmap(n, PAGE);
	}
	if (fd >= 0)
		close(fd);
}

/* A private /dev/zero mapping is private anonymous memory: growth gives zeros. */
static void check_private_zero(void)
{
	int fd = CHECK_OK(open("/dev/zero", O_RDONLY));
	char *m = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0), *n;

	close(fd);
	if (m == MAP_FAILED) {
		CHECK(0, "/dev/zero private: %s", strerror(errno));
		return;
	}
	n = mremap(m, PAGE, 3 * PAGE, MREMAP_MAYMOVE);
	CHECK(n != MAP_FAILED, "/dev/zero private: mremap: %s", strerror(errno));
	if (n == MAP_FAILED) {
		munmap(m, PAGE);
		return;
	}
	CHECK(touch(n + 2 * PAGE, true) == 0, "/dev/zero private grown: signal %d", (int)got_sig);
	munmap(n, 3 * PAGE);
}

/* A file of 100 bytes mapped one page, grown to three by mremap: past its end, SIGBUS. */
static void check_file_growth(bool shared)
{
	const char *what = shared ? "file shared" : "file private";
	char buf[100], got[16];
	int fd = CHECK_OK(open("f", O_CREAT | O_RDWR | O_TRUNC, 0600)), p[2];
	char *m, *n;

	memset(buf, 'f', sizeof(buf));
	CHECK_RET(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	m = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, shared ? MAP_SHARED : MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED) {
		CHECK(0, "%s: mmap: %s", what, strerror(errno));
		close(fd);
		return;
	}
	n = mremap(m, PAGE, 3 * PAGE, MREMAP_MAYMOVE);
	if (n == MAP_FAILED) {
		CHECK(0, "%s: mremap: %s", what, strerror(errno));
		munmap(m, PAGE);
		close(fd);
		return;
	}
	CHECK(filled(n, 100, 'f') && touch(n + PAGE - 1, false) == 0, "%s: first page", what);
	CHECK(touch(n + PAGE, false) == SIGBUS, "%s: grown part: signal %d", what, (int)got_sig);
	CHECK(got_code == BUS_ADRERR, "%s: si_code %d", what, (int)got_code);
	CHECK(touch(n + 3 * PAGE - 1, true) == SIGBUS, "%s: grown part write: signal %d", what,
	      (int)got_sig);
	CHECK_OK(pipe(p));
	CHECK_ERR(write(p[1], n + PAGE, 8), EFAULT);
	CHECK(partial_write(n + PAGE - 4, got), "%s: write across the end", what);
	CHECK_RET(write(p[1], "12345678", 8), 8);
	CHECK_ERR(read(p[0], n + 2 * PAGE, 8), EFAULT);
	/* The file grows over the second page: it is there now, for the kernel too. */
	CHECK_OK(ftruncate(fd, 2 * PAGE));
	CHECK_RET(write(p[1], n + PAGE, 8), 8);
	CHECK_RET(read(p[0], got, sizeof(got)), 16);
	CHECK(memcmp(got + 8, "\0\0\0\0", 4) == 0, "%s: the grown page reads zeros", what);
	CHECK(touch(n + PAGE, false) == 0, "%s: after ftruncate: signal %d", what, (int)got_sig);
	CHECK(touch(n + 2 * PAGE, false) == SIGBUS, "%s: third page: signal %d", what,
	      (int)got_sig);
	close(p[0]);
	close(p[1]);
	munmap(n, 3 * PAGE);
	close(fd);
}

/* An mmap past the end of a file: write(2) from it is EFAULT, until the file grows. */
static void check_mmap_past_end(void)
{
	int fd = CHECK_OK(open("g", O_CREAT | O_RDWR | O_TRUNC, 0600)), p[2];
	char *m;

	CHECK_RET(write(fd, "g", 1), 1);
	m = mmap(NULL, 2 * PAGE, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED) {
		CHECK(0, "mmap past end: %s", strerror(errno));
		close(fd);
		return;
	}
	CHECK_OK(pipe(p));
	CHECK_ERR(write(p[1], m + PAGE, 1), EFAULT);
	CHECK_OK(ftruncate(fd, 2 * PAGE));
	CHECK_RET(write(p[1], m + PAGE, 1), 1);
	close(p[0]);
	close(p[1]);
	munmap(m, 2 * PAGE);
	close(fd);
}

int main(void)
{
	struct sigaction sa = { .sa_sigaction = on_fault, .sa_flags = SA_SIGINFO | SA_NODEFER };

	scratch_make("mm_eof");
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
	for (int k = ANON; k <= MEMFD; k++)
		check_shared_growth((enum kind)k);
	check_private_zero();
	check_file_growth(false);
	check_file_growth(true);
	check_mmap_past_end();
	return finish();
}
