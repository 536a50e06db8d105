/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inotify for changes made by the program itself in a scratch directory under /tmp: the events
 * of creations, opens, reads, writes, closes, attribute changes, renames (cookies), removals,
 * the watch flags (ONLYDIR, DONT_FOLLOW, MASK_ADD, MASK_CREATE, ONESHOT, EXCL_UNLINK), IN_IGNORED,
 * queue overflow, FIONREAD, poll and blocking reads.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "scratch.h"

#ifndef IN_MASK_CREATE
#define IN_MASK_CREATE 0x10000000
#endif

struct ev {
	int wd;
	uint32_t mask, cookie;
	char name[256];
};

static struct ev evs[64];
static int nevs;

/* Reads every queued event of nonblocking fd into evs. */
static void drain(int fd)
{
	static char buf[65536] __attribute__((aligned(8)));
	ssize_t n;

	nevs = 0;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *e = (struct inotify_event *)p;

			if (nevs < 64) {
				evs[nevs].wd = e->wd;
				evs[nevs].mask = e->mask;
				evs[nevs].cookie = e->cookie;
				snprintf(evs[nevs].name, sizeof(evs[nevs].name), "%s",
					 e->len ? e->name : "");
			}
			nevs++;
			p += sizeof(*e) + e->len;
		}
	}
}

/* Whether event i is (wd, mask, name). */
static int ev_is(int i, int wd, uint32_t mask, const char *name)
{
	return i < nevs && evs[i].wd == wd && evs[i].mask == mask && !strcmp(evs[i].name, name);
}

static void dump(const char *what)
{
	printf("  %s: %d events:", what, nevs);
	for (int i = 0; i < nevs && i < 64; i++)
		printf(" [%d %#x %u '%s']", evs[i].wd, evs[i].mask, evs[i].cookie, evs[i].name);
	printf("\n");
}

#define CHECK_EVENTS(what, cond)        \
	do {                            \
		int _ok = (cond);       \
		CHECK(_ok, "%s", what); \
		if (!_ok)               \
			dump(what);     \
	} while (0)

static void write_file(const char *path, const char *data)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd >= 0) {
		if (write(fd, data, strlen(data)) < 0)
			perror("write");
		close(fd);
	}
}

static void test_errors(void)
{
	int in = (int)CHECK_OK(inotify_init1(IN_NONBLOCK));
	int fd = (int)CHECK_OK(open(".", O_RDONLY | O_DIRECTORY));

	CHECK_ERR(inotify_init1(0x1), EINVAL);
	CHECK_ERR(inotify_add_watch(-1, ".", IN_ALL_EVENTS), EBADF);
	CHECK_ERR(inotify_add_watch(fd, ".", IN_ALL_EVENTS), EINVAL);
	CHECK_ERR(inotify_add_watch(in, ".", 0), EINVAL);
	CHECK_ERR(inotify_add_watch(in, ".", IN_MASK_ADD | IN_MASK_CREATE | IN_OPEN), EINVAL);
	CHECK_ERR(inotify_add_watch(in, "missing", IN_ALL_EVENTS), ENOENT);
	write_file("plain", "x");
	CHECK_ERR(inotify_add_watch(in, "plain", IN_ALL_EVENTS | IN_ONLYDIR), ENOTDIR);
	CHECK_ERR(inotify_rm_watch(in, 12345), EINVAL);
	CHECK_ERR(inotify_rm_watch(fd, 1), EINVAL);
	/* Empty queue: EAGAIN; a buffer too small for the first event: EINVAL. */
	char small[8];
	CHECK_ERR(read(in, small, sizeof(small)), EAGAIN);
	int wd = (int)CHECK_OK(inotify_add_watch(in, "plain", IN_ATTRIB));
	CHECK_OK(chmod("plain", 0600));
	CHECK_ERR(read(in, small, sizeof(small)), EINVAL);
	CHECK_RET(inotify_rm_watch(in, wd), 0);
	CHECK_ERR(inotify_rm_watch(in, wd), EINVAL);
	close(fd);
	close(in);
}

static void test_directory_events(void)
{
	int in = (int)CHECK_OK(inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
	char buf[16];
	int wd, fd;

	CHECK_OK(mkdir("d", 0755));
	wd = (int)CHECK_OK(inotify_add_watch(in, "d", IN_ALL_EVENTS));
	CHECK(wd > 0, "wd %d", wd);
	CHECK_RET(fcntl(in, F_GETFD), FD_CLOEXEC);

	fd = (int)CHECK_OK(open("d/a", O_WRONLY | O_CREAT | O_EXCL, 0644));
	CHECK_RET(write(fd, "abc", 3), 3);
	close(fd);
	drain(in);
	CHECK_EVENTS("create, open, modify, close_write",
		     nevs == 4 && ev_is(0, wd, IN_CREATE, "a") && ev_is(1, wd, IN_OPEN, "a") &&
			     ev_is(2, wd, IN_MODIFY, "a") && ev_is(3, wd, IN_CLOSE_WRITE, "a"));

	fd = (int)CHECK_OK(open("d/a", O_RDONLY));
	CHECK_RET(read(fd, buf, sizeof(buf)), 3);
	close(fd);
	drain(in);
	CHECK_EVENTS("open, access, close_nowrite", nevs == 3 && ev_is(0, wd, IN_OPEN, "a") &&
							    ev_is(1, wd, IN_ACCESS, "a") &&
							    ev_is(2, wd, IN_CLOSE_NOWRITE, "a"));

	CHECK_OK(chmod("d/a", 0600));
	CHECK_OK(truncate("d/a", 1));
	drain(in);
	CHECK_EVENTS("attrib, modify",
		     nevs == 2 && ev_is(0, wd, IN_ATTRIB, "a") && ev_is(1, wd, IN_MODIFY, "a"));

	CHECK_OK(mkdir("d/sub", 0755));
	CHECK_OK(rename("d/a", "d/b"));
	drain(in);
	CHECK_EVENTS("mkdir, rename", nevs == 3 && ev_is(0, wd, IN_CREATE | IN_ISDIR, "sub") &&
					      ev_is(1, wd, IN_MOVED_FROM, "a") &&
					      ev_is(2, wd, IN_MOVED_TO, "b") &&
					      evs[1].cookie != 0 && evs[1].cookie == evs[2].cookie);

	CHECK_OK(link("d/b", "d/c"));
	CHECK_OK(unlink("d/b"));
	CHECK_OK(unlink("d/c"));
	CHECK_OK(rmdir("d/sub"));
	drain(in);
	CHECK_EVENTS("link, unlink, rmdir", nevs == 4 && ev_is(0, wd, IN_CREATE, "c") &&
						    ev_is(1, wd, IN_DELETE, "b") &&
						    ev_is(2, wd, IN_DELETE, "c") &&
						    ev_is(3, wd, IN_DELETE | IN_ISDIR, "sub"));

	/* The directory itself goes: DELETE_SELF, then IGNORED. */
	CHECK_OK(rmdir("d"));
	drain(in);
	CHECK_EVENTS("delete_self of a directory",
		     nevs == 2 && ev_is(0, wd, IN_DELETE_SELF, "") && ev_is(1, wd, IN_IGNORED, ""));
	close(in);
}

static void test_file_events(void)
{
	int in = (int)CHECK_OK(inotify_init1(IN_NONBLOCK));
	int wd, wd2;

	write_file("f", "data");
	wd = (int)CHECK_OK(inotify_add_watch(in, "f", IN_ALL_EVENTS));
	/* The same inode again (another name too): the same watch. */
	CHECK_OK(link("f", "f.link"));
	CHECK_RET(inotify_add_watch(in, "f.link", IN_ALL_EVENTS), wd);
	CHECK_ERR(inotify_add_watch(in, "f", IN_ALL_EVENTS | IN_MASK_CREATE), EEXIST);
	drain(in);
	CHECK_EVENTS("link: attrib", nevs == 1 && ev_is(0, wd, IN_ATTRIB, ""));

	/* Renames: MOVE_SELF on the file's own watch. */
	CHECK_OK(rename("f", "g"));
	drain(in);
	CHECK_EVENTS("move_self", nevs == 1 && ev_is(0, wd, IN_MOVE_SELF, ""));

	/* Unlinking one name: ATTRIB (link count); the last: ATTRIB, DELETE_SELF, IGNORED. */
	CHECK_OK(unlink("f.link"));
	drain(in);
	CHECK_EVENTS("unlink of one name", nevs == 1 && ev_is(0, wd, IN_ATTRIB, ""));
	CHECK_OK(unlink("g"));
	drain(in);
	CHECK_EVENTS("unlink of the last name", nevs == 3 && ev_is(0, wd, IN_ATTRIB, "") &&
							ev_is(1, wd, IN_DELETE_SELF, "") &&
							ev_is(2, wd, IN_IGNORED, ""));

	/* rm_watch queues IGNORED; watch descriptors are not reused at once. */
	write_file("h", "x");
	wd2 = (int)CHECK_OK(inotify_add_watch(in, "h", IN_MODIFY));
	CHECK(wd2 != wd, "wd %d reused", wd2);
	CHECK_RET(inotify_rm_watch(in, wd2), 0);
	drain(in);
	CHECK_EVENTS("rm_watch: ignored", nevs == 1 && ev_is(0, wd2, IN_IGNORED, ""));

	/* MASK_ADD widens a watch; without it the mask is replaced. */
	wd = (int)CHECK_OK(inotify_add_watch(in, "h", IN_ATTRIB));
	CHECK_RET(inotify_add_watch(in, "h", IN_MODIFY | IN_MASK_ADD), wd);
	CHECK_OK(chmod("h", 0600));
	write_file("h", "y");
	drain(in);
	CHECK_EVENTS("mask_add",
		     nevs == 2 && ev_is(0, wd, IN_ATTRIB, "") && ev_is(1, wd, IN_MODIFY, ""));
	CHECK_RET(inotify_add_watch(in, "h", IN_ATTRIB), wd);
	write_file("h", "z");
	drain(in);
	CHECK_EVENTS("mask replaced", nevs == 0);

	/* ONESHOT: one event, then IGNORED. */
	CHECK_RET(inotify_rm_watch(in, wd), 0);
	drain(in);
	wd = (int)CHECK_OK(inotify_add_watch(in, "h", IN_ATTRIB | IN_ONESHOT));
	CHECK_OK(chmod("h", 0644));
	CHECK_OK(chmod("h", 0600));
	drain(in);
	CHECK_EVENTS("oneshot",
		     nevs == 2 && ev_is(0, wd, IN_ATTRIB, "") && ev_is(1, wd, IN_IGNORED, ""));

	/* utimensat with both times: ATTRIB. */
	wd = (int)CHECK_OK(inotify_add_watch(in, "h", IN_ALL_EVENTS));
	CHECK_OK(utimensat(AT_FDCWD, "h", NULL, 0));
	drain(in);
	CHECK_EVENTS("utimens", nevs == 1 && ev_is(0, wd, IN_ATTRIB, ""));
	close(in);
}

static void test_flags(void)
{
	int in = (int)CHECK_OK(inotify_init1(IN_NONBLOCK));
	int all = (int)CHECK_OK(inotify_init1(IN_NONBLOCK));
	int wd, wdl, wdall, fd;

	/* DONT_FOLLOW watches the link itself. */
	write_file("target", "t");
	CHECK_OK(symlink("target", "sl"));
	wdl = (int)CHECK_OK(inotify_add_watch(in, "sl", IN_ATTRIB | IN_DONT_FOLLOW));
	wd = (int)CHECK_OK(inotify_add_watch(in, "sl", IN_ATTRIB));
	CHECK(wd != wdl, "link and target share wd %d", wd);
	CHECK_OK(chmod("target", 0600));
	drain(in);
	CHECK_EVENTS("dont_follow", nevs == 1 && ev_is(0, wd, IN_ATTRIB, ""));

	/* EXCL_UNLINK: no events for a child once unlinked, though still open. */
	CHECK_OK(mkdir("e", 0755));
	wd = (int)CHECK_OK(inotify_add_watch(in, "e", IN_MODIFY | IN_EXCL_UNLINK));
	wdall = (int)CHECK_OK(inotify_add_watch(all, "e", IN_MODIFY));
	fd = (int)CHECK_OK(open("e/x", O_WRONLY | O_CREAT, 0644));
	CHECK_RET(write(fd, "1", 1), 1);
	CHECK_OK(unlink("e/x"));
	CHECK_RET(write(fd, "2", 1), 1);
	close(fd);
	drain(in);
	CHECK_EVENTS("excl_unlink", nevs == 1 && ev_is(0, wd, IN_MODIFY, "x"));
	drain(all);
	CHECK_EVENTS("without excl_unlink",
		     nevs == 1 && ev_is(0, wdall, IN_MODIFY, "x")); /* merged: identical events */
	close(all);
	close(in);
}

static void test_queue(void)
{
	int in = (int)CHECK_OK(inotify_init1(IN_NONBLOCK));
	int wd, avail = -1, max = 16384;
	char buf[4096];
	struct pollfd pfd = { .fd = in, .events = POLLIN };
	FILE *fp;

	write_file("q", "q");
	wd = (int)CHECK_OK(inotify_add_watch(in, "q", IN_ALL_EVENTS));
	CHECK_RET(poll(&pfd, 1, 0), 0);
	CHECK_OK(ioctl(in, FIONREAD, &avail));
	CHECK(avail == 0, "FIONREAD %d", avail);
	CHECK_OK(chmod("q", 0600));
	CHECK_RET(poll(&pfd, 1, 0), 1);
	CHECK(pfd.revents == POLLIN, "revents %#x", pfd.revents);
	CHECK_OK(ioctl(in, FIONREAD, &avail));
	CHECK(avail == (int)sizeof(struct inotify_event), "FIONREAD %d", avail);
	/* Identical consecutive events merge. */
	CHECK_OK(chmod("q", 0600));
	CHECK_RET(read(in, buf, sizeof(buf)), sizeof(struct inotify_event));

	/* Overflow: past max_queued_events, one IN_Q_OVERFLOW (wd -1) and nothing more. */
	fp = fopen("/proc/sys/fs/inotify/max_queued_events", "r");
	if (fp) {
		if (fscanf(fp, "%d", &max) != 1)
			max = 16384;
		fclose(fp);
	}
	for (int i = 0; i < max / 2 + 10; i++) {
		int fd = open("q", O_RDONLY);

		close(fd);
	}
	long total = 0, last_wd = 0, last_mask = 0, overflows = 0;
	ssize_t n;

	while ((n = read(in, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *e = (struct inotify_event *)p;

			total++;
			last_wd = e->wd;
			last_mask = e->mask;
			overflows += e->mask == IN_Q_OVERFLOW;
			p += sizeof(*e) + e->len;
		}
	}
	CHECK(total == max + 1 && overflows == 1 && last_wd == -1 && last_mask == IN_Q_OVERFLOW,
	      "overflow: %ld events, %ld overflows, last %ld %#lx", total, overflows, last_wd,
	      last_mask);
	/* Room again: events queue again. */
	CHECK_OK(chmod("q", 0644));
	drain(in);
	CHECK_EVENTS("after overflow", nevs == 1 && ev_is(0, wd, IN_ATTRIB, ""));
	close(in);
}

/* A blocking read waits for an event a child makes. */
static void test_blocking_read(void)
{
	int in = (int)CHECK_OK(inotify_init());
	char buf[512];
	pid_t pid;
	int wd, status;

	CHECK_OK(mkdir("b", 0755));
	wd = (int)CHECK_OK(inotify_add_watch(in, "b", IN_CREATE));
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		usleep(20000);
		write_file("b/new", "n");
		_exit(0);
	}
	ssize_t n = read(in, buf, sizeof(buf));
	struct inotify_event *e = (struct inotify_event *)buf;
	CHECK(n == (ssize_t)(sizeof(*e) + e->len) && e->wd == wd && e->mask == IN_CREATE &&
		      !strcmp(e->name, "new"),
	      "blocking read: %zd", n);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status), "child");
	close(in);
}

/*
 * More of what Linux reports (issue 11): ATTRIB on chown and link counts, MODIFY on ftruncate,
 * DELETE_SELF of an open file only when the last reference goes, nested watches and moving a
 * watched directory.
 */
static void test_more(void)
{
	int in = (int)CHECK_OK(inotify_init1(IN_NONBLOCK));
	int wd, wdd, wds, wdo, fd;

	write_file("m", "0123456789");
	wd = (int)CHECK_OK(inotify_add_watch(in, "m", IN_ALL_EVENTS));
	CHECK_OK(chown("m", 1000, 1000));
	CHECK_OK(chown("m", -1, -1));
	drain(in);
	CHECK_EVENTS("chown: attrib",
		     nevs >= 1 && ev_is(0, wd, IN_ATTRIB, "") &&
			     (nevs == 1 || (nevs == 2 && ev_is(1, wd, IN_ATTRIB, ""))));
	fd = (int)CHECK_OK(open("m", O_RDWR));
	drain(in);
	CHECK_OK(ftruncate(fd, 3));
	drain(in);
	CHECK_EVENTS("ftruncate: modify", nevs == 1 && ev_is(0, wd, IN_MODIFY, ""));
	/* The last name goes while the file is open: ATTRIB now, DELETE_SELF at the last close. */
	CHECK_OK(unlink("m"));
	drain(in);
	CHECK_EVENTS("unlink of an open file", nevs == 1 && ev_is(0, wd, IN_ATTRIB, ""));
	close(fd);
	drain(in);
	CHECK_EVENTS("its last close", nevs == 3 && ev_is(0, wd, IN_CLOSE_WRITE, "") &&
					       ev_is(1, wd, IN_DELETE_SELF, "") &&
					       ev_is(2, wd, IN_IGNORED, ""));

	/* Nested watches: a directory and its subdirectory each get their own events. */
	CHECK_OK(mkdir("n", 0755));
	CHECK_OK(mkdir("n/sub", 0755));
	CHECK_OK(mkdir("o", 0755));
	wdd = (int)CHECK_OK(inotify_add_watch(in, "n", IN_ALL_EVENTS));
	wds = (int)CHECK_OK(inotify_add_watch(in, "n/sub", IN_ALL_EVENTS));
	wdo = (int)CHECK_OK(inotify_add_watch(in, "o", IN_ALL_EVENTS));
	write_file("n/sub/x", "x");
	drain(in);
	CHECK_EVENTS("nested: create in the subdirectory",
		     nevs == 4 && ev_is(0, wds, IN_CREATE, "x") && ev_is(1, wds, IN_OPEN, "x") &&
			     ev_is(2, wds, IN_MODIFY, "x") && ev_is(3, wds, IN_CLOSE_WRITE, "x"));
	CHECK_OK(chmod("n/sub", 0700));
	drain(in);
	CHECK_EVENTS("nested: chmod of the subdirectory",
		     nevs == 2 && ev_is(0, wdd, IN_ATTRIB | IN_ISDIR, "sub") &&
			     ev_is(1, wds, IN_ATTRIB | IN_ISDIR, ""));
	/* Moving the watched subdirectory to another watched directory. */
	CHECK_OK(rename("n/sub", "o/sub"));
	drain(in);
	CHECK_EVENTS("nested: move of the subdirectory",
		     nevs == 3 && ev_is(0, wdd, IN_MOVED_FROM | IN_ISDIR, "sub") &&
			     ev_is(1, wdo, IN_MOVED_TO | IN_ISDIR, "sub") &&
			     ev_is(2, wds, IN_MOVE_SELF, "") && evs[0].cookie == evs[1].cookie &&
			     evs[0].cookie != 0);
	/* It keeps its watch under its new name. */
	CHECK_OK(unlink("o/sub/x"));
	CHECK_OK(rmdir("o/sub"));
	drain(in);
	CHECK_EVENTS("nested: removal after the move",
		     nevs == 4 && ev_is(0, wds, IN_DELETE, "x") &&
			     ev_is(1, wds, IN_DELETE_SELF, "") && ev_is(2, wds, IN_IGNORED, "") &&
			     ev_is(3, wdo, IN_DELETE | IN_ISDIR, "sub"));
	close(in);
}

int main(void)
{
	scratch_make("inotify");
	test_errors();
	test_directory_events();
	test_file_events();
	test_flags();
	test_queue();
	test_blocking_read();
	test_more();
	return finish();
}
