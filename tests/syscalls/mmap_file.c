/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mmap(2) of files that cannot be mapped, with Linux's errnos (ENODEV for pipes, sockets,
 * directories, most character devices, procfs, sysfs and anonymous files; EACCES for the
 * access modes; EBADF for O_PATH), and SIGBUS (BUS_ADRERR) on a touch past the end of a mapped
 * file, whose partial last page reads zeros beyond the end: on tmpfs (/dev/shm, memfd), on a
 * scratch file under /tmp (the overlay's upper layer in husk) and on a file of the image
 * (/etc/passwd: the overlay's lower layer, served by the gofer in husk).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "check.h"
#include "scratch.h"

#define PAGE 4096L

static void check_refused(void)
{
	static const struct {
		const char *path;
		int shared_err, private_err; /* 0: maps */
	} devs[] = {
		{ "/dev/null", ENODEV, ENODEV },
		{ "/dev/full", ENODEV, ENODEV },
		{ "/dev/random", ENODEV, ENODEV },
		{ "/dev/urandom", ENODEV, ENODEV },
		{ "/dev/zero", -1, 0 }, /* shared /dev/zero: not checked here */
		{ "/dev/ptmx", ENODEV, ENODEV },
		{ "/proc/self/status", ENODEV, ENODEV },
		{ "/proc/self/maps", ENODEV, ENODEV },
		{ "/sys/kernel/mm/transparent_hugepage/enabled", ENODEV, ENODEV },
	};
	int p[2], s, e, d, w, r, o;
	void *a;

	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++) {
		int fd = open(devs[i].path, O_RDWR);

		if (fd < 0)
			fd = open(devs[i].path, O_RDONLY);
		if (fd < 0) {
			CHECK(0, "open %s: %s", devs[i].path, strerror(errno));
			continue;
		}
		for (int shared = 0; shared < 2; shared++) {
			int want = shared ? devs[i].shared_err : devs[i].private_err, got = 0;

			if (want < 0)
				continue;
			a = mmap(NULL, PAGE, PROT_READ, shared ? MAP_SHARED : MAP_PRIVATE, fd, 0);
			if (a == MAP_FAILED)
				got = errno;
			else
				munmap(a, PAGE);
			CHECK(got == want, "mmap %s %s: %s, want %s", devs[i].path,
			      shared ? "shared" : "private", strerror(got), strerror(want));
		}
		close(fd);
	}
	CHECK_OK(pipe(p));
	CHECK_ERR(mmap(NULL, PAGE, PROT_READ, MAP_SHARED, p[0], 0), ENODEV);
	CHECK_ERR(mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, p[0], 0), ENODEV);
	/* The write end is not open for reading: EACCES comes first. */
	CHECK_ERR(mmap(NULL, PAGE, PROT_WRITE, MAP_SHARED, p[1], 0), EACCES);
	close(p[0]);
	close(p[1]);
	s = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	CHECK_ERR(mmap(NULL, PAGE, PROT_READ, MAP_SHARED, s, 0), ENODEV);
	CHECK_ERR(mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, s, 0), ENODEV);
	close(s);
	e = CHECK_OK(eventfd(0, 0));
	CHECK_ERR(mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, e, 0), ENODEV);
	close(e);
	d = CHECK_OK(open("/", O_RDONLY | O_DIRECTORY));
	CHECK_ERR(mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, d, 0), ENODEV);
	CHECK_ERR(mmap(NULL, PAGE, PROT_READ, MAP_SHARED, d, 0), ENODEV);
	close(d);
	/* Regular files: the access mode. */
	w = CHECK_OK(open("m", O_CREAT | O_WRONLY | O_TRUNC, 0644));
	CHECK_RET(write(w, "x", 1), 1);
	CHECK_ERR(mmap(NULL, PAGE, PROT_READ, MAP_SHARED, w, 0), EACCES);
	CHECK_ERR(mmap(NULL, PAGE, PROT_WRITE, MAP_PRIVATE, w, 0), EACCES);
	r = CHECK_OK(open("m", O_RDONLY));
	CHECK_ERR(mmap(NULL, PAGE, PROT_WRITE, MAP_SHARED, r, 0), EACCES);
	a = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, r, 0);
	CHECK(a != MAP_FAILED, "private writable mapping of a read-only file: %s", strerror(errno));
	if (a != MAP_FAILED)
		munmap(a, PAGE);
	o = CHECK_OK(open("m", O_PATH));
	CHECK_ERR(mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, o, 0), EBADF);
	close(o);
	close(r);
	close(w);
}

static sigjmp_buf jb;
static volatile sig_atomic_t got_sig, got_code;
static void *volatile got_addr;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	got_sig = sig;
	got_code = si->si_code;
	got_addr = si->si_addr;
	siglongjmp(jb, 1);
}

/* Touches p (a read); returns the signal it raised, or 0. */
static int touch(volatile char *p)
{
	got_sig = got_code = 0;
	got_addr = NULL;
	if (sigsetjmp(jb, 1) == 0) {
		(void)*p;
		return 0;
	}
	return got_sig;
}

/*
 * Maps one page more than the file fd (size bytes) covers, privately and shared: the bytes of
 * the last partial page past the end read zero, the page past it raises SIGBUS.
 */
static void check_past_end(const char *what, int fd, long size, bool shared_too)
{
	long pages = (size + PAGE - 1) / PAGE;

	for (int shared = 0; shared < 2; shared++) {
		char *m;

		if (shared && !shared_too)
			continue;
		m = mmap(NULL, (pages + 1) * PAGE, PROT_READ, shared ? MAP_SHARED : MAP_PRIVATE, fd,
			 0);
		if (m == MAP_FAILED) {
			CHECK(0, "%s: mmap: %s", what, strerror(errno));
			continue;
		}
		CHECK(touch(m) == 0, "%s: first byte: signal %d", what, (int)got_sig);
		if (size % PAGE) {
			bool zero = true;

			for (long i = size; i < pages * PAGE; i++)
				zero &= m[i] == 0;
			CHECK(zero, "%s %s: the tail of the last page is not zero", what,
			      shared ? "shared" : "private");
		}
		CHECK(touch(m + pages * PAGE + 10) == SIGBUS, "%s %s: past the end: signal %d",
		      what, shared ? "shared" : "private", (int)got_sig);
		CHECK(got_code == BUS_ADRERR, "%s: si_code %d", what, (int)got_code);
		CHECK(got_addr == m + pages * PAGE + 10, "%s: si_addr %p, want %p", what,
		      (void *)got_addr, (void *)(m + pages * PAGE + 10));
		munmap(m, (pages + 1) * PAGE);
	}
}

static void check_sigbus(void)
{
	struct sigaction sa = { .sa_sigaction = on_fault, .sa_flags = SA_SIGINFO | SA_NODEFER };
	char shm[64], buf[100];
	struct stat st;
	int fd;

	memset(buf, 'a', sizeof(buf));
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
	/* tmpfs */
	snprintf(shm, sizeof(shm), "/dev/shm/husk-mmap-%d", (int)getpid());
	fd = CHECK_OK(open(shm, O_CREAT | O_RDWR | O_TRUNC, 0600));
	CHECK_RET(write(fd, buf, 100), 100);
	check_past_end("tmpfs", fd, 100, true);
	/* The file grows: the page is there. */
	CHECK_RET(ftruncate(fd, 2 * PAGE), 0);
	{
		char *m = mmap(NULL, 2 * PAGE, PROT_READ, MAP_SHARED, fd, 0);

		CHECK(m != MAP_FAILED && touch(m + PAGE) == 0, "grown file: signal %d",
		      (int)got_sig);
		if (m != MAP_FAILED)
			munmap(m, 2 * PAGE);
	}
	close(fd);
	unlink(shm);
	/* memfd */
	fd = CHECK_OK(memfd_create("husk-mmap", 0));
	CHECK_RET(write(fd, buf, 100), 100);
	check_past_end("memfd", fd, 100, true);
	close(fd);
	/* a scratch file (overlay upper in husk) */
	fd = CHECK_OK(open("f", O_CREAT | O_RDWR | O_TRUNC, 0600));
	CHECK_RET(write(fd, buf, 100), 100);
	check_past_end("scratch", fd, 100, true);
	close(fd);
	/* a file of the image (gofer-backed lower layer in husk), read-only */
	fd = CHECK_OK(open("/etc/passwd", O_RDONLY));
	CHECK_RET(fstat(fd, &st), 0);
	check_past_end("/etc/passwd", fd, (long)st.st_size, true);
	close(fd);
	signal(SIGBUS, SIG_DFL);
	signal(SIGSEGV, SIG_DFL);
}

int main(void)
{
	scratch_make("mmap_file");
	check_refused();
	check_sigbus();
	return finish();
}
