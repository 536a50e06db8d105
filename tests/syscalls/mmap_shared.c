/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Conformance: MAP_SHARED mappings of files (tmpfs: /dev/shm), checked without taking a fault:
 * writes through a mapping are seen by read(2) and by other mappings (also across fork), write(2)
 * and truncation are seen by mappings, permissions (EACCES), msync, mremap and munmap of shared
 * file mappings. A read-only shared mapping of a file of the image (/bin/sh) reads its bytes.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "check.h"

#define PG 4096L

static char *map(void *hint, long len, int prot, int flags, int fd, long off)
{
	return (char *)syscall(SYS_mmap, hint, len, prot, flags, fd, off);
}

/* A new file of len bytes (a hole) in /dev/shm, unlinked once open. Returns the fd. */
static int shm_file(long len)
{
	char path[64];

	snprintf(path, sizeof(path), "/dev/shm/husk-mmap-shared-%d", getpid());
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0) {
		printf("cannot create %s: %s\n", path, strerror(errno));
		exit(1);
	}
	unlink(path);
	if (ftruncate(fd, len) < 0) {
		printf("ftruncate: %s\n", strerror(errno));
		exit(1);
	}
	return fd;
}

static void writes_reach_read_and_back(void)
{
	int fd = shm_file(2 * PG);
	char *p = map(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	char buf[16] = { 0 };

	CHECK(p != MAP_FAILED, "mmap: %s", strerror(errno));
	CHECK(p[0] == 0 && p[2 * PG - 1] == 0, "a new file maps as zeros");
	memcpy(p + PG + 10, "mapped", 6);
	CHECK_RET(pread(fd, buf, 6, PG + 10), 6);
	CHECK(memcmp(buf, "mapped", 6) == 0, "read(2) sees the mapping's write: %.6s", buf);
	CHECK_RET(pwrite(fd, "written", 7, 100), 7);
	CHECK(memcmp(p + 100, "written", 7) == 0, "the mapping sees write(2): %.7s", p + 100);
	CHECK_RET(msync(p, 2 * PG, MS_SYNC), 0);
	CHECK_RET(msync(p, PG, MS_ASYNC), 0);
	CHECK_RET(msync(p, PG, MS_INVALIDATE), 0);
	CHECK_RET(munmap(p, 2 * PG), 0);
	CHECK_RET(pread(fd, buf, 6, PG + 10), 6);
	CHECK(memcmp(buf, "mapped", 6) == 0, "the data outlives the mapping: %.6s", buf);
	close(fd);
}

static void two_mappings_share(void)
{
	int fd = shm_file(PG);
	char *a = map(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	char *b = map(NULL, PG, PROT_READ, MAP_SHARED, fd, 0);
	char *priv = map(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);

	CHECK(a != MAP_FAILED && b != MAP_FAILED && priv != MAP_FAILED, "mmap: %s",
	      strerror(errno));
	CHECK(a != b, "two mappings at two addresses");
	a[5] = 'x';
	CHECK(b[5] == 'x', "the second mapping sees the first's write: %d", b[5]);
	priv[6] = 'p';
	CHECK(a[6] == 0, "a private mapping's write stays private: %d", a[6]);
	munmap(a, PG);
	munmap(b, PG);
	munmap(priv, PG);
	close(fd);
}

static void fork_keeps_sharing(void)
{
	int fd = shm_file(PG);
	char *p = map(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int st = -1;

	CHECK(p != MAP_FAILED, "mmap: %s", strerror(errno));
	p[0] = 'a';
	pid_t pid = fork();
	if (pid == 0) {
		int ok = p[0] == 'a';
		p[1] = 'c';
		ok = ok && pwrite(fd, "W", 1, 2) == 1;
		_exit(ok ? 0 : 1);
	}
	CHECK(pid > 0, "fork: %s", strerror(errno));
	CHECK_RET(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child saw the parent's bytes: %#x", st);
	CHECK(p[1] == 'c', "the parent sees the child's write through the mapping: %d", p[1]);
	CHECK(p[2] == 'W', "the parent's mapping sees the child's write(2): %d", p[2]);
	munmap(p, PG);
	close(fd);
}

static void permissions(void)
{
	char path[64];

	snprintf(path, sizeof(path), "/dev/shm/husk-mmap-ro-%d", getpid());
	int wfd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(wfd >= 0, "open: %s", strerror(errno));
	CHECK_RET(ftruncate(wfd, PG), 0);
	int rfd = open(path, O_RDONLY);
	int wonly = open(path, O_WRONLY);
	unlink(path);
	CHECK_ERR(map(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, rfd, 0), EACCES);
	CHECK_ERR(map(NULL, PG, PROT_READ, MAP_SHARED, wonly, 0), EACCES);
	char *p = map(NULL, PG, PROT_READ, MAP_SHARED, rfd, 0);
	CHECK(p != MAP_FAILED, "a read-only shared mapping of a read-only fd: %s", strerror(errno));
	CHECK_ERR(mprotect(p, PG, PROT_READ | PROT_WRITE), EACCES);
	CHECK_RET(pwrite(wfd, "z", 1, 9), 1);
	CHECK(p[9] == 'z', "a read-only shared mapping sees write(2): %d", p[9]);
	/*
	 * Nor can the file be changed through it by a debugger's forced write (/proc/self/mem:
	 * EIO, as Linux refuses FOLL_FORCE on a shared mapping without write) or MADV_REMOVE
	 * (EACCES: it needs a writable mapping).
	 */
	int mem = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	CHECK(mem >= 0, "/proc/self/mem: %s", strerror(errno));
	CHECK_ERR(pwrite(mem, "XY", 2, (off_t)(uintptr_t)p), EIO);
	close(mem);
	CHECK_ERR(madvise(p, PG, MADV_REMOVE), EACCES);
	char c = 0;
	CHECK_RET(pread(wfd, &c, 1, 9), 1);
	CHECK(c == 'z' && p[0] == 0, "the file changed through a read-only mapping: %d %d", c,
	      p[0]);
	/* A private mapping of the same fd may be made writable. */
	char *q = map(NULL, PG, PROT_READ, MAP_PRIVATE, rfd, 0);
	CHECK_RET(mprotect(q, PG, PROT_READ | PROT_WRITE), 0);
	munmap(p, PG);
	munmap(q, PG);
	close(rfd);
	close(wonly);
	close(wfd);
}

static void msync_errors(void)
{
	int fd = shm_file(2 * PG);
	char *p = map(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	CHECK_ERR(msync(p, PG, MS_SYNC | MS_ASYNC), EINVAL);
	CHECK_ERR(msync(p + 1, PG, MS_SYNC), EINVAL);
	CHECK_ERR(msync(p, PG, 0x100), EINVAL);
	CHECK_RET(msync(p, 0, MS_SYNC), 0);
	munmap(p + PG, PG);
	CHECK_ERR(msync(p, 2 * PG, MS_SYNC), ENOMEM);
	munmap(p, PG);
	close(fd);
}

static void truncation_and_growth(void)
{
	int fd = shm_file(PG);
	char *p = map(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	struct stat st;

	memset(p, 'a', PG);
	CHECK_RET(ftruncate(fd, 100), 0);
	CHECK(p[99] == 'a' && p[100] == 0 && p[PG - 1] == 0,
	      "truncation zeroes the rest of the last page in the mapping: %d %d", p[99], p[100]);
	CHECK_RET(ftruncate(fd, 3 * PG), 0);
	/* Grow the mapping with the file (in place or moved). */
	char *q = (char *)mremap(p, PG, 3 * PG, MREMAP_MAYMOVE);
	CHECK(q != MAP_FAILED, "mremap: %s", strerror(errno));
	if (q == MAP_FAILED)
		return;
	q[2 * PG + 1] = 'g';
	char c = 0;
	CHECK_RET(pread(fd, &c, 1, 2 * PG + 1), 1);
	CHECK(c == 'g', "the grown part of the mapping is the file's: %d", c);
	CHECK(q[99] == 'a', "the moved part keeps its bytes: %d", q[99]);
	/* Move it elsewhere by force: still the file's pages. */
	char *r = map(NULL, 3 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *m = (char *)mremap(q, 3 * PG, 3 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, r);
	CHECK(m == r, "mremap MREMAP_FIXED: %s", strerror(errno));
	if (m == r) {
		m[3] = 'm';
		CHECK_RET(pread(fd, &c, 1, 3), 1);
		CHECK(c == 'm', "a moved shared mapping still writes the file: %d", c);
	}
	CHECK_RET(fstat(fd, &st), 0);
	CHECK(st.st_size == 3 * PG, "writes through a mapping do not change the size: %ld",
	      (long)st.st_size);
	munmap(m == r ? m : q, 3 * PG);
	close(fd);
}

static void offsets(void)
{
	int fd = shm_file(4 * PG);
	char *whole = map(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	char *part = map(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 2 * PG);

	CHECK(whole != MAP_FAILED && part != MAP_FAILED, "mmap: %s", strerror(errno));
	part[7] = 'o';
	CHECK(whole[2 * PG + 7] == 'o', "a mapping at offset 2 pages is page 2: %d",
	      whole[2 * PG + 7]);
	/* Unmapping the middle of a shared mapping leaves the rest shared. */
	CHECK_RET(munmap(whole + PG, PG), 0);
	whole[3 * PG] = 't';
	char c = 0;
	CHECK_RET(pread(fd, &c, 1, 3 * PG), 1);
	CHECK(c == 't', "the tail piece still writes the file: %d", c);
	munmap(whole, 4 * PG);
	munmap(part, PG);
	close(fd);
}

static void image_file_read_only(void)
{
	int fd = open("/bin/sh", O_RDONLY);
	char *p;

	CHECK(fd >= 0, "open /bin/sh: %s", strerror(errno));
	p = map(NULL, PG, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(p != MAP_FAILED, "shared mapping of /bin/sh: %s", strerror(errno));
	if (p != MAP_FAILED) {
		CHECK(memcmp(p, "\177ELF", 4) == 0, "it reads the file's bytes");
		munmap(p, PG);
	}
	close(fd);
}

int main(void)
{
	writes_reach_read_and_back();
	two_mappings_share();
	fork_keeps_sharing();
	permissions();
	msync_errors();
	truncation_and_growth();
	offsets();
	image_file_read_only();
	return finish();
}
