/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The husk-gofer binary, confined: run as `husk-gofer --fd N [--readonly] DIR` (found through
 * $HUSK_GOFER) and checked from outside through /proc and from inside through the protocol. A
 * system call missing from the seccomp allow-list kills the gofer: the client then gets -EIO,
 * and finish() sees it die of SIGSYS instead of exiting 0.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"
#include "sentry/fs/gofer/client.h"

#define CHILD_FD 100

static char dir[64];
static struct gofer_client *c;
static pid_t gofer;
static uint64_t root;

/* Starts the gofer binary on dir with extra arguments; returns its pid, *sock our end. */
static pid_t spawn_gofer(const char *const *args, int nargs, int *sock)
{
	const char *bin = getenv("HUSK_GOFER");
	char fdarg[16];
	int sv[2];
	pid_t pid;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	snprintf(fdarg, sizeof(fdarg), "%d", CHILD_FD);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		const char *argv[8] = { bin, "--fd", fdarg };

		for (int i = 0; i < nargs; i++)
			argv[3 + i] = args[i];
		argv[3 + nargs] = NULL;
		if (dup2(sv[1], CHILD_FD) < 0)
			_exit(126);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	close(sv[1]);
	*sock = sv[0];
	return pid;
}

static void need_root_and_binary(void)
{
	if (geteuid() != 0)
		cr_skip_test("the gofer confines itself with mount namespaces: needs root");
	if (!getenv("HUSK_GOFER"))
		cr_skip_test("HUSK_GOFER is not set (meson test sets it)");
}

/*
 * Starts a confined gofer serving a fresh tree, with a tmpfs mounted on its sub/ that must not
 * be served. The mount is made in a mount namespace of this test process only.
 */
static void start_gofer(bool readonly)
{
	const char *args[] = { "--readonly", dir };
	char path[128];
	int sock, fd;

	need_root_and_binary();
	cr_assert_eq(unshare(CLONE_NEWNS), 0, "unshare: %s", strerror(errno));
	cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	tree_create(dir);
	snprintf(path, sizeof(path), "%s/sub", dir);
	cr_assert_eq(mount("husk-test", path, "tmpfs", 0, "size=64k"), 0);
	snprintf(path, sizeof(path), "%s/sub/hidden", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	cr_assert_geq(fd, 0);
	close(fd);
	args[1] = dir;
	gofer = readonly ? spawn_gofer(args, 2, &sock) : spawn_gofer(args + 1, 1, &sock);
	cr_assert_eq(gofer_client_create(sock, &c), 0);
	/* The gofer answers only once it is confined. */
	cr_assert_eq(gofer_mount(c, &root, NULL), 0, "the confined gofer does not answer");
}

static void start(void)
{
	start_gofer(true);
}

static void start_rw(void)
{
	start_gofer(false);
}

static void finish(void)
{
	char path[128];

	if (!c)
		return;
	gofer_client_destroy(c);
	c = NULL;
	cr_assert_eq(child_wait(gofer), 0, "the gofer did not exit 0 when the socket closed");
	snprintf(path, sizeof(path), "%s/sub", dir);
	umount2(path, MNT_DETACH);
	tree_remove(dir);
}

/* The value of a "Name:\tvalue" line of /proc/<gofer>/status. */
static void status_field(const char *name, char *value, size_t size)
{
	char path[64], line[256];
	size_t len = strlen(name);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", gofer);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	value[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, name, len) && line[len] == ':') {
			snprintf(value, size, "%s", line + len + 1 + strspn(line + len + 1, " \t"));
			value[strcspn(value, "\n")] = '\0';
		}
	}
	fclose(f);
}

TestSuite(gofer_confined, .init = start, .fini = finish);
TestSuite(gofer_confined_rw, .init = start_rw, .fini = finish);

Test(gofer_confined, runs_under_seccomp_without_privileges)
{
	char v[64], path[64], comm[32] = { 0 };
	FILE *f;

	status_field("Seccomp", v, sizeof(v));
	cr_assert_str_eq(v, "2");
	status_field("NoNewPrivs", v, sizeof(v));
	cr_assert_str_eq(v, "1");
	/* CAP_DAC_OVERRIDE (1) and CAP_DAC_READ_SEARCH (2) only, bounding set included. */
	status_field("CapEff", v, sizeof(v));
	cr_assert_str_eq(v, "0000000000000006");
	status_field("CapBnd", v, sizeof(v));
	cr_assert_str_eq(v, "0000000000000006");
	snprintf(path, sizeof(path), "/proc/%d/comm", gofer);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(comm, sizeof(comm), f));
	fclose(f);
	cr_assert_str_eq(comm, "husk-gofer\n");
}

Test(gofer_confined, its_root_is_the_served_tree_alone)
{
	char path[64], line[512];
	bool seen_file = false, seen_a = false;
	struct dirent *e;
	int lines = 0;
	FILE *f;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/root", gofer);
	d = opendir(path);
	cr_assert_not_null(d, "opendir %s: %s", path, strerror(errno));
	while ((e = readdir(d))) {
		seen_file |= !strcmp(e->d_name, "file");
		seen_a |= !strcmp(e->d_name, "a");
	}
	closedir(d);
	cr_assert(seen_file && seen_a, "the gofer's root does not list the served tree");
	/* The tmpfs on sub/ is not part of the non-recursive bind. */
	snprintf(path, sizeof(path), "/proc/%d/root/sub/hidden", gofer);
	cr_assert_eq(access(path, F_OK), -1);
	/* One mount in its namespace: the read-only root. */
	snprintf(path, sizeof(path), "/proc/%d/mountinfo", gofer);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		char mnt[256], opts[256];

		lines++;
		/* id parent dev root mount-point options ... */
		cr_assert_eq(sscanf(line, "%*d %*d %*s %*s %255s %255s", mnt, opts), 2);
		cr_assert_str_eq(mnt, "/", "unexpected mount: %s", line);
		cr_assert_eq(strncmp(opts, "ro,", 3), 0, "root not read-only: %s", line);
	}
	fclose(f);
	cr_assert_eq(lines, 1);
}

Test(gofer_confined, serves_every_message)
{
	static const char *const abc[] = { "a", "b", "c" };
	static const char *const hidden[] = { "sub", "hidden" };
	static const char *const link[] = { "up_link" };
	uint64_t h[3];
	struct gofer_attr attr;
	struct gofer_statfs st;
	char buf[64] = { 0 };
	int fd;

	cr_assert_eq(gofer_walk(c, root, abc, 3, h, NULL), 3);
	cr_assert_eq(gofer_stat(c, h[2], &attr), 0);
	cr_assert_eq(attr.size, 5);
	fd = gofer_open(c, h[2], O_RDONLY);
	cr_assert_geq(fd, 0, "open: %d", fd);
	cr_assert_eq(read(fd, buf, sizeof(buf)), 5);
	cr_assert_str_eq(buf, "deep\n");
	close(fd);
	cr_assert_eq(gofer_open(c, h[2], O_RDWR), -EROFS);
	cr_assert_eq(gofer_open(c, h[2], O_RDONLY | O_TRUNC), -EROFS);
	cr_assert_eq(gofer_statfs(c, root, &st), 0);
	cr_assert_gt(st.bsize, 0);
	gofer_close(c, h, 3);
	cr_assert_eq(gofer_stat(c, h[2], &attr), -EBADF);
	cr_assert_eq(gofer_walk(c, root, hidden, 2, h, NULL), 1, "sub/hidden was served");
	cr_assert_eq(gofer_walk(c, root, link, 1, h, NULL), 1);
	cr_assert_eq(gofer_readlink(c, h[0], buf, sizeof(buf)), 8);
	/* A bad message does not kill it. */
	cr_assert_eq(gofer_stat(c, 12345, &attr), -EBADF);
	cr_assert_eq(gofer_stat(c, root, &attr), 0);
}

struct cookie_count {
	int n;
	int64_t next;
};

static int count_entries(void *arg, const struct gofer_dirent *d)
{
	struct cookie_count *cc = arg;

	cc->n++;
	cc->next = d->next;
	return 0;
}

Test(gofer_confined, lists_directories_across_small_calls)
{
	static const char *const many[] = { "many" };
	struct cookie_count cc = { 0 };
	uint64_t h;
	int n, calls = 0;

	cr_assert_eq(gofer_walk(c, root, many, 1, &h, NULL), 1);
	/* Three entries a reply: many GETDENTS, each seeking the directory FD to its cookie. */
	while ((n = gofer_getdents_max(c, h, cc.next, 3 * (uint32_t)gofer_dirent_size(3),
				       count_entries, &cc)) > 0)
		calls++;
	cr_assert_eq(n, 0);
	cr_assert_eq(cc.n, TREE_MANY);
	cr_assert_geq(calls, TREE_MANY / 3);
}

Test(gofer_confined_args, bad_usage_exits_2_and_a_non_socket_exits_1, .init = need_root_and_binary)
{
	const char *noroot[] = { "--readonly" };
	const char *extra[] = { "/", "/tmp" };
	const char *bin = getenv("HUSK_GOFER");
	int sock;
	pid_t pid;

	pid = spawn_gofer(noroot, 1, &sock);
	cr_assert_eq(child_wait(pid), 2);
	close(sock);
	pid = spawn_gofer(extra, 2, &sock);
	cr_assert_eq(child_wait(pid), 2);
	close(sock);
	/* fd 0 is not a SOCK_SEQPACKET socket. */
	pid = fork();
	if (pid == 0) {
		execl(bin, bin, "--fd", "0", "/", (char *)NULL);
		_exit(127);
	}
	cr_assert_eq(child_wait(pid), 1);
}

Test(gofer_confined_rw, keeps_only_the_capabilities_writes_need)
{
	char v[64], path[64], line[512];
	FILE *f;

	/* CHOWN (0), DAC_OVERRIDE (1), DAC_READ_SEARCH (2), FOWNER (3), FSETID (4); no MKNOD. */
	status_field("CapEff", v, sizeof(v));
	cr_assert_str_eq(v, "000000000000001f");
	status_field("CapBnd", v, sizeof(v));
	cr_assert_str_eq(v, "000000000000001f");
	status_field("Seccomp", v, sizeof(v));
	cr_assert_str_eq(v, "2");
	snprintf(path, sizeof(path), "/proc/%d/mountinfo", gofer);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(line, sizeof(line), f));
	fclose(f);
	cr_assert_not_null(strstr(line, " / rw,"), "root not read-write: %s", line);
}

Test(gofer_confined_rw, serves_every_write_message)
{
	static const char *const abc[] = { "a", "b", "c" };
	const struct gofer_setstat all = { .mask = GOFER_SETSTAT_ALL,
					   .mode = 02750,
					   .uid = 1000,
					   .gid = 1001,
					   .size = 2,
					   .atime_nsec = GOFER_UTIME_NOW,
					   .mtime_sec = 1000 };
	struct gofer_attr attr, attrs[3];
	char buf[64] = { 0 }, path[128];
	struct stat st;
	uint64_t f, d, h;
	int fd;

	cr_assert_eq(gofer_walk_stat(c, root, abc, 3, attrs), 3);
	fd = gofer_create(c, root, "new", O_RDWR, 0640, 1000, 1000, &f, &attr);
	cr_assert_geq(fd, 0, "create: %s", strerror(-fd));
	cr_assert_eq(write(fd, "data", 4), 4);
	close(fd);
	cr_assert_eq(gofer_setstat(c, f, &all, &attr), 0);
	cr_assert_eq(attr.mode, S_IFREG | 02750);
	cr_assert_eq(attr.size, 2);
	cr_assert_eq(attr.uid, 1000);
	cr_assert_eq(attr.mtime_sec, 1000);
	cr_assert_eq(gofer_mkdir(c, root, "d", 0700, 5, 6, &d, NULL), 0);
	cr_assert_eq(gofer_mknod(c, d, "p", S_IFIFO | 0600, 5, 6, NULL, NULL), 0);
	cr_assert_eq(gofer_mknod(c, d, "s", S_IFSOCK | 0600, 5, 6, NULL, NULL), 0);
	cr_assert_eq(gofer_mknod(c, d, "c", S_IFCHR | 0600, 5, 6, NULL, NULL), -EPERM);
	cr_assert_eq(gofer_symlink(c, d, "l", "../new", 5, 6, &h, NULL), 0);
	cr_assert_eq(gofer_readlink(c, h, buf, sizeof(buf)), 6);
	cr_assert_eq(gofer_link(c, root, "new", d, "hard", NULL, &attr), 0);
	cr_assert_eq(attr.nlink, 2);
	cr_assert_eq(gofer_rename(c, d, "hard", root, "hard2", 0), 0);
	cr_assert_eq(gofer_rename(c, root, "hard2", root, "file", GOFER_RENAME_NOREPLACE), -EEXIST);
	cr_assert_eq(gofer_rename(c, root, "hard2", root, "file", GOFER_RENAME_EXCHANGE), 0);
	cr_assert_eq(gofer_unlink(c, root, "hard2", 0), 0);
	cr_assert_eq(gofer_unlink(c, d, "p", 0), 0);
	cr_assert_eq(gofer_unlink(c, root, "a", GOFER_UNLINK_REMOVEDIR), -ENOTEMPTY);
	cr_assert_eq(gofer_mkdir(c, d, "e", 0700, 5, 6, NULL, NULL), 0);
	cr_assert_eq(gofer_unlink(c, d, "e", GOFER_UNLINK_REMOVEDIR), 0);
	cr_assert_eq(gofer_fsync(c, f, false), 0);
	cr_assert_eq(gofer_fsync(c, d, true), 0);
	cr_assert_eq(gofer_setxattr(c, f, "user.k", "v", 1, 0), 0);
	cr_assert_eq(gofer_getxattr(c, f, "user.k", buf, sizeof(buf)), 1);
	cr_assert_eq(gofer_listxattr(c, f, buf, sizeof(buf)), 7);
	cr_assert_eq(gofer_removexattr(c, f, "user.k"), 0);
	/* Still alive, and the host saw it all. */
	cr_assert_eq(gofer_stat(c, root, &attr), 0);
	snprintf(path, sizeof(path), "%s/file", dir);
	cr_assert_eq(lstat(path, &st), 0);
	cr_assert_eq(st.st_mode, S_IFREG | 02750);
	cr_assert_eq(st.st_nlink, 2);
	snprintf(path, sizeof(path), "%s/d/s", dir);
	cr_assert_eq(lstat(path, &st), 0);
	cr_assert(S_ISSOCK(st.st_mode));
	cr_assert_eq(st.st_uid, 5);
}

Test(gofer_confined, refuses_writes_with_erofs_and_survives)
{
	const struct gofer_setstat st = { .mask = GOFER_SETSTAT_SIZE };
	char buf[16];

	cr_assert_eq(gofer_mkdir(c, root, "x", 0755, 0, 0, NULL, NULL), -EROFS);
	cr_assert_eq(gofer_create(c, root, "x", O_RDWR, 0644, 0, 0, NULL, NULL), -EROFS);
	cr_assert_eq(gofer_unlink(c, root, "file", 0), -EROFS);
	cr_assert_eq(gofer_rename(c, root, "file", root, "x", 0), -EROFS);
	cr_assert_eq(gofer_setstat(c, root, &st, NULL), -EROFS);
	cr_assert_eq(gofer_setxattr(c, root, "user.x", "x", 1, 0), -EROFS);
	/* What reads is allowed by its filter. */
	cr_assert_eq(gofer_fsync(c, root, false), 0);
	cr_assert_eq(gofer_listxattr(c, root, buf, sizeof(buf)), 0);
	cr_assert_eq(gofer_getxattr(c, root, "user.x", buf, sizeof(buf)), -ENODATA);
}
