/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The mqueue filesystem (/dev/mqueue): queues made by mq_open appear there by name (without the
 * slash), as regular files of their mode and owner; reading one gives its "QSIZE:..." line
 * (the bytes queued); unlink removes the queue as mq_unlink does; an open with O_CREAT makes a
 * queue; mkdir and mknod are refused. Natively
 * (as root, when /dev/mqueue is not an mqueue filesystem) it mounts one on a directory of its
 * own in a new mount namespace; without either it skips.
 */
#include <dirent.h>
#include <fcntl.h>
#include <mqueue.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "check.h"

#define MQUEUE_MAGIC 0x19800202

static char dir[64] = "/dev/mqueue";

/* An mqueue filesystem to look at: /dev/mqueue, or one mounted here. Returns 0 or -1 (skip). */
static int find_mqueue_fs(void)
{
	struct statfs sf;
	char tmpl[] = "/tmp/mqueue-fs.XXXXXX";

	if (statfs(dir, &sf) == 0 && (unsigned long)sf.f_type == MQUEUE_MAGIC)
		return 0;
	if (geteuid() != 0 || unshare(CLONE_NEWNS) < 0 ||
	    mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 || !mkdtemp(tmpl) ||
	    mount("mqueue", tmpl, "mqueue", 0, NULL) < 0) {
		printf("SKIP: no mqueue filesystem at /dev/mqueue and none can be mounted: %s\n",
		       strerror(errno));
		return -1;
	}
	snprintf(dir, sizeof(dir), "%s", tmpl);
	return 0;
}

static int listed(const char *name)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (!strcmp(e->d_name, name))
			found = e->d_type == DT_REG ? 1 : 2;
	closedir(d);
	return found;
}

int main(void)
{
	struct mq_attr a = { .mq_maxmsg = 4, .mq_msgsize = 32 };
	char name[64], path[160], buf[256], want[128];
	struct statfs sf;
	struct stat st;
	mqd_t q;
	ssize_t n;
	int fd;

	if (find_mqueue_fs() < 0)
		return finish();
	snprintf(name, sizeof(name), "husk-mqfs-%d", getpid());
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	CHECK(statfs(dir, &sf) == 0 && (unsigned long)sf.f_type == MQUEUE_MAGIC, "f_type %lx",
	      (unsigned long)sf.f_type);
	CHECK(stat(dir, &st) == 0 && st.st_mode == (S_IFDIR | 01777), "dir mode %o", st.st_mode);
	CHECK_RET(listed(name), 0);
	CHECK_ERR(stat(path, &st), ENOENT);

	snprintf(buf, sizeof(buf), "/%s", name);
	q = mq_open(buf, O_RDWR | O_CREAT | O_EXCL, 0640, &a);
	CHECK(q != (mqd_t)-1, "mq_open: %s", strerror(errno));
	CHECK_RET(listed(name), 1);
	CHECK(stat(path, &st) == 0 && st.st_mode == (S_IFREG | 0640) && st.st_uid == geteuid() &&
		      st.st_gid == getegid(),
	      "mode %o uid %u gid %u", st.st_mode, st.st_uid, st.st_gid);

	/* The QSIZE line: bytes queued, then the notification (none). */
	CHECK_RET(mq_send(q, "hello", 5, 1), 0);
	CHECK_RET(mq_send(q, "abc", 3, 2), 0);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
	n = read(fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	snprintf(want, sizeof(want), "QSIZE:%-10lu NOTIFY:%-5d SIGNO:%-5d NOTIFY_PID:%-6d\n", 8UL,
		 0, 0, 0);
	CHECK(n == (ssize_t)strlen(want) && !strcmp(buf, want), "read %zd: \"%s\"", n, buf);
	CHECK_RET(read(fd, buf, sizeof(buf)), 0);
	CHECK_RET(lseek(fd, 0, SEEK_SET), 0);
	CHECK_RET(read(fd, buf, 6), 6);
	CHECK(!strncmp(buf, "QSIZE:", 6), "partial read \"%.6s\"", buf);
	close(fd);
	/* A message taken: the line follows. */
	CHECK_RET(mq_receive(q, buf, sizeof(buf), NULL), 3);
	fd = open(path, O_RDONLY);
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	buf[n > 0 ? n : 0] = '\0';
	CHECK(!strncmp(buf, "QSIZE:5 ", 8), "after a receive: \"%s\"", buf);
	if (fd >= 0)
		close(fd);

	/* No directories in it; unlink is mq_unlink. */
	snprintf(buf, sizeof(buf), "%s/sub", dir);
	CHECK_ERR(mkdir(buf, 0755), EPERM);
	CHECK_RET(unlink(path), 0);
	CHECK_RET(listed(name), 0);
	CHECK_ERR(stat(path, &st), ENOENT);
	snprintf(buf, sizeof(buf), "/%s", name);
	CHECK_ERR(mq_open(buf, O_RDWR), ENOENT);
	/* The open queue lives on without its name. */
	CHECK_RET(mq_send(q, "z", 1, 0), 0);
	CHECK_RET(mq_close(q), 0);
	CHECK_ERR(unlink(path), ENOENT);

	/* An open with O_CREAT in the directory makes a queue of the default sizes. */
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0, "open O_CREAT: %s", strerror(errno));
	if (fd >= 0)
		close(fd);
	CHECK_RET(listed(name), 1);
	snprintf(buf, sizeof(buf), "/%s", name);
	q = mq_open(buf, O_RDWR);
	CHECK(q != (mqd_t)-1, "mq_open of the file's queue: %s", strerror(errno));
	CHECK_RET(mq_send(q, "x", 1, 0), 0);
	CHECK_RET(mq_close(q), 0);
	CHECK_ERR(open(path, O_RDWR | O_CREAT | O_EXCL, 0600), EEXIST);
	snprintf(buf, sizeof(buf), "%s/fifo", dir);
	CHECK_ERR(mknod(buf, S_IFIFO | 0600, 0), EPERM);
	CHECK_RET(unlink(path), 0);
	return finish();
}
