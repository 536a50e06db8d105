/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memtouch MIB [child|hold]: maps MIB mebibytes of private anonymous memory, writes every page,
 * reads each back, and prints "touched MIB MiB". With "child", a forked child does the touching
 * and the parent prints how it ended ("child exited N" or "child killed by signal N") and exits
 * 0, so the parent outlives whatever happens to the child (a memory limit's OOM killer, in husk's
 * tests). With "hold", it keeps the memory and waits for a signal after printing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static int touch(long mib)
{
	size_t len = (size_t)mib << 20;
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *p =
		mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		fprintf(stderr, "memtouch: mmap of %ld MiB: %s\n", mib, strerror(errno));
		return 1;
	}
	for (size_t off = 0; off < len; off += (size_t)page)
		p[off] = (unsigned char)(off / (size_t)page);
	for (size_t off = 0; off < len; off += (size_t)page) {
		if (p[off] != (unsigned char)(off / (size_t)page)) {
			fprintf(stderr, "memtouch: page at %zu lost its byte\n", off);
			return 1;
		}
	}
	printf("touched %ld MiB\n", mib);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	long mib = argc > 1 ? strtol(argv[1], NULL, 10) : 0;
	int status;
	pid_t pid;

	if (mib <= 0 ||
	    (argc > 2 && strcmp(argv[2], "child") != 0 && strcmp(argv[2], "hold") != 0)) {
		fprintf(stderr, "usage: memtouch MIB [child|hold]\n");
		return 2;
	}
	if (argc == 2)
		return touch(mib);
	if (strcmp(argv[2], "hold") == 0) {
		if (touch(mib) != 0)
			return 1;
		for (;;)
			pause();
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "memtouch: fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0)
		_exit(touch(mib));
	if (waitpid(pid, &status, 0) != pid) {
		fprintf(stderr, "memtouch: waitpid: %s\n", strerror(errno));
		return 1;
	}
	if (WIFSIGNALED(status))
		printf("child killed by signal %d\n", WTERMSIG(status));
	else
		printf("child exited %d\n", WEXITSTATUS(status));
	return 0;
}
