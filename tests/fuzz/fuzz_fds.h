/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Descriptor helpers the socket fuzzers share (control/, goferclient/): sending a message with
 * descriptors, and counting the descriptors the code under test handles, for their leak check.
 * Header-only (static functions): each fuzzer is one program built by its run.sh.
 */
#ifndef HUSK_TESTS_FUZZ_FDS_H
#define HUSK_TESTS_FUZZ_FDS_H

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/*
 * Sends buf (len bytes) with fds[0..nfds) (at most 4) over sock. Returns sendmsg's result
 * (EINTR retried: LeakSanitizer stops every thread with signals to look for leaks).
 */
static ssize_t fuzz_send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (nfds > 0) {
		struct cmsghdr *cm;

		memset(&ctl, 0, sizeof(ctl));
		m.msg_control = ctl.buf;
		m.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, (size_t)nfds * sizeof(int));
	}
	do
		n = sendmsg(sock, &m, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n;
}

/*
 * The sockets and /dev/null descriptors open now (what the fuzzed code and the fuzzers' fake
 * peers handle; libFuzzer's files and the sanitizers' symbolizer pipes come and go and are not
 * counted); with show, each is printed. Returns -1 when /proc/self/fd cannot be read.
 */
static int fuzz_count_fds(bool show)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char link[300], target[64];
		ssize_t len;

		if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d))
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
		len = readlink(link, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = 0;
		if (strncmp(target, "socket:", 7) == 0 || strcmp(target, "/dev/null") == 0) {
			n++;
			if (show)
				fprintf(stderr, "fuzz: open: %s -> %s\n", e->d_name, target);
		}
	}
	closedir(d);
	return n;
}

#endif
