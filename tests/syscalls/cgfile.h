/* SPDX-License-Identifier: Apache-2.0 */
/* For the cgroup programs (cgroupfs.c, cgroupns.c, bpf_cgroup_dev.c): whole-file reads and
 * one-write(2) writes of interface files. */
#ifndef HUSK_TESTS_SYSCALLS_CGFILE_H
#define HUSK_TESTS_SYSCALLS_CGFILE_H

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* The contents of path into buf (NUL-terminated); the length or -1 (errno). */
static inline ssize_t readf(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = '\0';
	return n;
}

/* One write(2) of s to path: 0 or -1 (errno). */
static inline int writef(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;
	int e;

	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	e = errno;
	close(fd);
	errno = e;
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

#endif
