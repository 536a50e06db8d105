/* SPDX-License-Identifier: Apache-2.0 */
/*
 * poll and epoll on /proc/self/mountinfo and /proc/self/mounts (Linux's mounts_poll), as
 * libmount's monitor and so systemd use them to notice mounts: always readable; POLLERR|POLLPRI
 * once after each change of the mount table (a mount, an umount, a remount), taken by the poll
 * that reports it; epoll_ctl accepts the file (EPERM for a proc file without poll, such as
 * status), and EPOLLIN|EPOLLET reports once after the add and then once per change, also to a
 * waiter blocked before the change (made by a child in the same namespace), and to poll(2)
 * blocked for POLLPRI. Runs in a mount
 * namespace of its own, all mounts under a tmpfs on the scratch directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "mountns.h"
#include "scratch.h"

/* revents of one poll of fd for events, without waiting (-1 when poll fails). */
static int poll_now(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };
	int n = poll(&p, 1, 0);

	return n < 0 ? -1 : n == 0 ? 0 : p.revents;
}

static void polls(const char *file)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	CHECK(fd >= 0, "open %s: %s", file, strerror(errno));
	if (fd < 0)
		return;
	/* No change since the open: readable only. */
	CHECK_RET(poll_now(fd, POLLIN | POLLPRI), POLLIN);
	CHECK_RET(poll_now(fd, POLLPRI), 0);
	CHECK_RET(mount("m", at("a"), "tmpfs", 0, NULL), 0);
	/* The change, once: the poll that reported it took it. POLLERR comes unasked. */
	CHECK_RET(poll_now(fd, POLLIN | POLLPRI), POLLIN | POLLPRI | POLLERR);
	CHECK_RET(poll_now(fd, POLLIN | POLLPRI), POLLIN);
	CHECK_RET(mount(NULL, at("a"), NULL, MS_REMOUNT | MS_RDONLY, NULL), 0);
	CHECK_RET(poll_now(fd, POLLPRI), POLLPRI | POLLERR);
	CHECK_RET(poll_now(fd, POLLPRI), 0);
	CHECK_RET(umount(at("a")), 0);
	/* Two changes before a poll: one report. */
	CHECK_RET(mount("m", at("a"), "tmpfs", 0, NULL), 0);
	CHECK_RET(umount(at("a")), 0);
	CHECK_RET(poll_now(fd, POLLPRI), POLLPRI | POLLERR);
	CHECK_RET(poll_now(fd, POLLPRI), 0);
	close(fd);
}

/* epoll_wait of ep without waiting (timeout_ms 0) or for up to timeout_ms: events or -1. */
static int ep_wait(int ep, int timeout_ms, uint32_t *events)
{
	struct epoll_event ev = { 0 };
	int n = epoll_wait(ep, &ev, 1, timeout_ms);

	*events = n == 1 ? ev.events : 0;
	return n;
}

static void epolls(void)
{
	int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	int status = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
	uint32_t got;
	int go[2], st;
	pid_t pid;

	CHECK(fd >= 0 && status >= 0 && ep >= 0, "open: %s", strerror(errno));
	/* A proc file without poll cannot be watched. */
	CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_ADD, status, &ev), EPERM);
	/* libmount's kernel monitor: EPOLLIN|EPOLLET, one event to drain after the add. */
	CHECK_RET(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
	CHECK_RET(ep_wait(ep, 0, &got), 1);
	CHECK(got == EPOLLIN, "first event %#x", got);
	CHECK_RET(ep_wait(ep, 0, &got), 0);
	CHECK_RET(mount("m", at("b"), "tmpfs", 0, NULL), 0);
	CHECK_RET(ep_wait(ep, 0, &got), 1);
	CHECK(got == (EPOLLIN | EPOLLERR), "event after a mount %#x", got);
	CHECK_RET(ep_wait(ep, 0, &got), 0);

	/* A waiter blocked before the change wakes: the child umounts once the parent said it
	 * is about to wait (the wait then sees the change, whether it began before or after). */
	CHECK_RET(pipe(go), 0);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		char c;

		if (read(go[0], &c, 1) != 1 || umount(at("b")) < 0)
			_exit(1);
		_exit(0);
	}
	CHECK_RET(write(go[1], "x", 1), 1);
	CHECK_RET(ep_wait(ep, 30000, &got), 1);
	CHECK(got & EPOLLIN, "event after the child's umount %#x", got);
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "the child's umount failed");
	CHECK_RET(ep_wait(ep, 0, &got), 0);

	/* The same with poll(2) blocked for POLLPRI: it returns the change it was woken for. */
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		char c;

		if (read(go[0], &c, 1) != 1 || mount("m", at("b"), "tmpfs", 0, NULL) < 0)
			_exit(1);
		_exit(0);
	}
	CHECK_RET(write(go[1], "x", 1), 1);
	{
		struct pollfd p = { .fd = fd, .events = POLLPRI };

		CHECK_RET(poll(&p, 1, 30000), 1);
		CHECK(p.revents == (POLLPRI | POLLERR), "revents after the child's mount %#x",
		      p.revents);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "the child's mount failed");
	CHECK_RET(umount(at("b")), 0);
	close(go[0]);
	close(go[1]);
	close(ep);
	close(status);
	close(fd);
}

static void body(void)
{
	if (!mountns_enter(T, sizeof(T)))
		return;
	CHECK_RET(mkdir(at("a"), 0755), 0);
	CHECK_RET(mkdir(at("b"), 0755), 0);
	polls("/proc/self/mountinfo");
	polls("/proc/self/mounts");
	epolls();
}

int main(void)
{
	if (mountns_main("mountinfo_poll", body))
		return 1;
	return checks_failed ? 1 : 0;
}
