/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Conformance: memory across fork(2). Private memory is copied (on write): neither side sees
 * the other's writes; MAP_SHARED|MAP_ANONYMOUS memory is the same memory in both; MADV_DONTFORK
 * memory is absent from the child and MADV_WIPEONFORK memory is zero there; munmap, mprotect,
 * mremap, madvise and read(2) into memory in one process leave the other's alone; threads
 * writing while another thread forks lose no write and see no SIGSEGV.
 * Each child reports the number of its failed checks as its exit status.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "check.h"

#define PAGE 4096UL
#define BIG (64UL << 20)

/* Checks made in a child: counted there, reported through its exit status. */
static int child_failures;
#define CHILD_CHECK(cond)                                                              \
	do {                                                                           \
		if (!(cond)) {                                                         \
			printf("FAIL (child) %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			fflush(stdout);                                                \
			child_failures++;                                              \
		}                                                                      \
	} while (0)

static void *map(size_t len, int flags)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	return p;
}

/* Waits for pid; returns its wait status. */
static int reap(pid_t pid)
{
	int status = 0;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

#define CHECK_CHILD_OK(status) \
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status)

static void check_private_memory_is_copied(void)
{
	uint8_t *big = map(BIG, MAP_PRIVATE);
	int to_child[2], status;

	for (size_t i = 0; i < BIG; i += PAGE)
		big[i] = (uint8_t)(i / PAGE);
	CHECK_OK(pipe(to_child));
	pid_t pid = fork();
	if (pid == 0) {
		char c;
		/* The parent writes page 1 before letting the child look. */
		CHILD_CHECK(read(to_child[0], &c, 1) == 1);
		CHILD_CHECK(big[PAGE] == 1);
		CHILD_CHECK(big[BIG - PAGE] == (uint8_t)(BIG / PAGE - 1));
		for (size_t i = 0; i < BIG; i += PAGE)
			big[i] = 0xee;
		CHILD_CHECK(big[12345 * PAGE] == 0xee);
		_exit(child_failures);
	}
	CHECK(pid > 0, "fork: %s", strerror(errno));
	big[PAGE] = 0x77;
	CHECK_RET(write(to_child[1], "x", 1), 1);
	status = reap(pid);
	CHECK_CHILD_OK(status);
	CHECK(big[0] == 0, "page 0 holds %#x", big[0]);
	CHECK(big[PAGE] == 0x77, "page 1 holds %#x", big[PAGE]);
	CHECK(big[12345 * PAGE] == (uint8_t)12345, "page 12345 holds %#x", big[12345 * PAGE]);
	/* After the child is gone the parent writes on as before. */
	big[2 * PAGE] = 0x55;
	CHECK(big[2 * PAGE] == 0x55, "write after the child exited");
	close(to_child[0]);
	close(to_child[1]);
	munmap(big, BIG);
}

static void check_shared_memory_is_shared(void)
{
	volatile uint32_t *shared = map(2 * PAGE, MAP_SHARED);
	int status;

	shared[0] = 1;
	pid_t pid = fork();
	if (pid == 0) {
		CHILD_CHECK(shared[0] == 1);
		shared[0] = 2;
		shared[PAGE / 4] = 3;
		_exit(child_failures);
	}
	status = reap(pid);
	CHECK_CHILD_OK(status);
	CHECK(shared[0] == 2, "shared word is %u", shared[0]);
	CHECK(shared[PAGE / 4] == 3, "second page word is %u", shared[PAGE / 4]);
	munmap((void *)shared, 2 * PAGE);
}

static void check_fork_advice(void)
{
	uint8_t *gone = map(2 * PAGE, MAP_PRIVATE);
	uint8_t *wiped = map(2 * PAGE, MAP_PRIVATE);
	uint8_t *shared = map(PAGE, MAP_SHARED);
	int status;

	gone[0] = 1;
	wiped[0] = 2;
	wiped[PAGE] = 3;
	CHECK_OK(madvise(gone, 2 * PAGE, MADV_DONTFORK));
	CHECK_OK(madvise(wiped, 2 * PAGE, MADV_WIPEONFORK));
	CHECK_ERR(madvise(shared, PAGE, MADV_WIPEONFORK), EINVAL);

	pid_t pid = fork();
	if (pid == 0) {
		CHILD_CHECK(wiped[0] == 0 && wiped[PAGE] == 0);
		fflush(stdout);
		/* Not mapped here: this read is the child's end. */
		_exit(*(volatile uint8_t *)gone + 100);
	}
	status = reap(pid);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV,
	      "child reading MADV_DONTFORK memory: status %#x", status);
	CHECK(gone[0] == 1 && wiped[0] == 2 && wiped[PAGE] == 3, "parent's own bytes kept");
	munmap(gone, 2 * PAGE);
	munmap(wiped, 2 * PAGE);
	munmap(shared, PAGE);
}

static void check_mapping_calls_stay_on_their_side(void)
{
	uint8_t *a = map(8 * PAGE, MAP_PRIVATE);
	int fds[2], status;

	memset(a, 0x11, 8 * PAGE);
	CHECK_OK(pipe(fds));
	CHECK_RET(write(fds[1], "fresh", 5), 5);
	pid_t pid = fork();
	if (pid == 0) {
		/* read(2) into copy-on-write memory: the kernel writes, not the CPU. */
		CHILD_CHECK(read(fds[0], a, 5) == 5);
		CHILD_CHECK(memcmp(a, "fresh", 5) == 0);
		CHILD_CHECK(munmap(a + PAGE, PAGE) == 0);
		CHILD_CHECK(mprotect(a + 2 * PAGE, PAGE, PROT_READ) == 0);
		CHILD_CHECK(madvise(a + 3 * PAGE, PAGE, MADV_DONTNEED) == 0);
		CHILD_CHECK(a[3 * PAGE] == 0);
		uint8_t *m = mremap(a + 4 * PAGE, 4 * PAGE, 8 * PAGE, MREMAP_MAYMOVE);
		CHILD_CHECK(m != MAP_FAILED);
		if (m != MAP_FAILED) {
			CHILD_CHECK(m[0] == 0x11 && m[4 * PAGE] == 0);
			m[0] = 0x22;
		}
		_exit(child_failures);
	}
	status = reap(pid);
	CHECK_CHILD_OK(status);
	CHECK(a[0] == 0x11, "read(2) in the child reached the parent: %#x", a[0]);
	CHECK(a[PAGE] == 0x11 && a[3 * PAGE] == 0x11 && a[4 * PAGE] == 0x11,
	      "the child's munmap/madvise/mremap reached the parent");
	a[2 * PAGE] = 0x33; /* still writable here */
	CHECK(a[2 * PAGE] == 0x33, "write after the child's mprotect");
	close(fds[0]);
	close(fds[1]);
	munmap(a, 8 * PAGE);
}

static void check_nested_forks(void)
{
	uint64_t *v = map(PAGE, MAP_PRIVATE);
	int status;

	*v = 1;
	pid_t pid = fork();
	if (pid == 0) {
		*v = 2;
		pid_t g = fork();
		if (g == 0) {
			CHILD_CHECK(*v == 2);
			*v = 3;
			_exit(child_failures);
		}
		int s = reap(g);
		CHILD_CHECK(WIFEXITED(s) && WEXITSTATUS(s) == 0);
		CHILD_CHECK(*v == 2);
		_exit(child_failures);
	}
	status = reap(pid);
	CHECK_CHILD_OK(status);
	CHECK(*v == 1, "value is %lu", (unsigned long)*v);
	munmap(v, PAGE);
}

/*
 * Threads writing private memory while another thread forks: a write racing with fork faults
 * (copy-on-write) and must simply land in the parent's page, fork after fork. Each thread owns
 * every fourth word of eight shared pages and counts its writes; the words must add up.
 */
#define WRITERS 4
#define RACE_WORDS (8 * PAGE / sizeof(unsigned long))
static volatile unsigned long race_words[RACE_WORDS] __attribute__((aligned(4096)));
static volatile int race_stop, race_segvs;
static unsigned long race_counts[WRITERS];

static void race_on_segv(int sig)
{
	(void)sig;
	race_segvs++;
}

static void *race_writer(void *arg)
{
	unsigned long id = (unsigned long)arg, n = 0;

	while (!race_stop) {
		race_words[(id + WRITERS * n) % RACE_WORDS]++;
		n++;
	}
	race_counts[id] = n;
	return NULL;
}

static void check_threads_write_while_another_forks(void)
{
	struct sigaction sa = { .sa_handler = race_on_segv }, old;
	pthread_t th[WRITERS];
	int bad = 0;

	sigaction(SIGSEGV, &sa, &old);
	for (unsigned long i = 0; i < WRITERS; i++)
		if (pthread_create(&th[i], NULL, race_writer, (void *)i)) {
			perror("pthread_create");
			exit(2);
		}
	for (int i = 0; i < 100; i++) {
		pid_t pid = fork();
		if (pid == 0)
			_exit(0);
		int status = reap(pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			bad++;
	}
	race_stop = 1;
	for (int i = 0; i < WRITERS; i++)
		pthread_join(th[i], NULL);
	sigaction(SIGSEGV, &old, NULL);
	CHECK(race_segvs == 0, "%d SIGSEGVs in threads writing their own memory", race_segvs);
	CHECK(bad == 0, "%d of 100 children did not exit 0", bad);
	for (unsigned long id = 0; id < WRITERS; id++) {
		unsigned long sum = 0;

		for (unsigned long w = id; w < RACE_WORDS; w += WRITERS)
			sum += race_words[w];
		CHECK(sum == race_counts[id], "thread %lu made %lu writes, its words add up to %lu",
		      id, race_counts[id], sum);
	}
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	check_private_memory_is_copied();
	check_shared_memory_is_shared();
	check_fork_advice();
	check_mapping_calls_stay_on_their_side();
	check_nested_forks();
	check_threads_write_while_another_forks();
	return finish();
}
