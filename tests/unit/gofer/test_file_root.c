/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A gofer serving one regular file (a config.json bind mount of a file: podman's /etc/hosts):
 * the server over a file root, unconfined in a child (helpers.c), through the real client; and
 * the confined husk-gofer binary on a file (needs root and $HUSK_GOFER), whose namespace must
 * hold that file and nothing else of its directory.
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

#include "gofer/confine.h"
#include "helpers.h"
#include "sentry/fs/gofer/client.h"

#define CHILD_FD 100
#define CONTENT "127.0.0.1 localhost\n"

static char dir[64];
static char file[128]; /* dir/hosts: the served file; dir/sibling must stay out of reach */
static pid_t server;
static struct gofer_client *c;
static uint64_t root;
static struct gofer_attr root_attr;

static void write_host(const char *path, const char *data)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(data, f);
	fclose(f);
}

static void read_host(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	cr_assert_geq(fd, 0);
	n = read(fd, buf, len - 1);
	cr_assert_geq(n, 0);
	buf[n] = '\0';
	close(fd);
}

static void make_files(void)
{
	char sibling[128];

	tree_create(dir);
	snprintf(file, sizeof(file), "%s/hosts", dir);
	snprintf(sibling, sizeof(sibling), "%s/sibling", dir);
	write_host(file, CONTENT);
	write_host(sibling, "secret sibling\n");
}

static void start(bool readonly)
{
	struct gofer_server_config cfg = { .readonly = readonly };
	int sock;

	make_files();
	server = server_start(file, &cfg, &sock);
	cr_assert_eq(gofer_client_create(sock, &c), 0);
	cr_assert_eq(gofer_mount(c, &root, &root_attr), 0);
}

static void start_rw(void)
{
	start(false);
}

static void start_ro(void)
{
	start(true);
}

static void finish(void)
{
	if (!c)
		return; /* skipped */
	gofer_client_destroy(c);
	c = NULL;
	cr_assert_eq(child_wait(server), 0, "the gofer did not exit 0 when the socket closed");
	tree_remove(dir);
}

static void read_fd(int fd, char *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len - 1, 0);

	cr_assert_geq(n, 0);
	buf[n] = '\0';
}

Test(gofer_file_root, mount_gives_the_file_itself, .init = start_rw, .fini = finish)
{
	struct stat st;

	cr_assert_eq(stat(file, &st), 0);
	cr_assert(S_ISREG(root_attr.mode), "mode %o", root_attr.mode);
	cr_assert_eq(root_attr.ino, st.st_ino);
	cr_assert_eq(root_attr.size, (int64_t)strlen(CONTENT));
}

Test(gofer_file_root, open_reads_the_host_file, .init = start_rw, .fini = finish)
{
	char buf[64];
	int fd = gofer_open(c, root, O_RDONLY);

	cr_assert_geq(fd, 0, "open: %s", strerror(-fd));
	read_fd(fd, buf, sizeof(buf));
	cr_assert_str_eq(buf, CONTENT);
	close(fd);
}

Test(gofer_file_root, writes_reach_the_host_file, .init = start_rw, .fini = finish)
{
	char buf[64];
	int fd = gofer_open(c, root, O_WRONLY | O_TRUNC);

	cr_assert_geq(fd, 0, "open: %s", strerror(-fd));
	cr_assert_eq(write(fd, "10.0.0.1 db\n", 12), 12);
	close(fd);
	read_host(file, buf, sizeof(buf));
	cr_assert_str_eq(buf, "10.0.0.1 db\n");
}

static int count_entry(void *arg, const struct gofer_dirent *d)
{
	(*(int *)arg)++;
	return 0;
}

Test(gofer_file_root, nothing_beside_the_file_can_be_named, .init = start_rw, .fini = finish)
{
	const char *sibling[] = { "sibling" };
	uint64_t h, hs[1];
	int count = 0;

	/* The root is no directory: no walk, listing or creation from it. */
	cr_assert_eq(gofer_walk(c, root, sibling, 1, hs, NULL), -ENOTDIR);
	cr_assert_eq(gofer_getdents(c, root, 0, count_entry, &count), -ENOTDIR);
	cr_assert_eq(count, 0);
	cr_assert_eq(gofer_mkdir(c, root, "d", 0755, 0, 0, &h, NULL), -ENOTDIR);
	cr_assert_eq(gofer_create(c, root, "f", O_RDWR, 0644, 0, 0, &h, NULL), -ENOTDIR);
	cr_assert_eq(gofer_unlink(c, root, "sibling", 0), -ENOTDIR);
	cr_assert_eq(gofer_open(c, root, O_RDONLY | O_DIRECTORY), -ENOTDIR);
	cr_assert_eq(access(file, F_OK), 0);
}

Test(gofer_file_root, readonly_refuses_writes_and_keeps_the_file, .init = start_ro, .fini = finish)
{
	struct gofer_setstat st = { .mask = GOFER_SETSTAT_SIZE, .size = 0 };
	char buf[64];
	int fd;

	cr_assert_eq(gofer_open(c, root, O_WRONLY), -EROFS);
	cr_assert_eq(gofer_open(c, root, O_RDONLY | O_TRUNC), -EROFS);
	cr_assert_eq(gofer_setstat(c, root, &st, NULL), -EROFS);
	fd = gofer_open(c, root, O_RDONLY);
	cr_assert_geq(fd, 0);
	read_fd(fd, buf, sizeof(buf));
	cr_assert_str_eq(buf, CONTENT);
	close(fd);
	read_host(file, buf, sizeof(buf));
	cr_assert_str_eq(buf, CONTENT);
}

Test(gofer_file_root, a_fifo_root_is_refused)
{
	struct gofer_server *s;
	char fifo[128];
	int root_fd, proc_fd;

	tree_create(dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir); /* tree_create made it */
	root_fd = open(fifo, O_PATH | O_CLOEXEC);
	proc_fd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(root_fd, 0);
	cr_assert_eq(gofer_server_create(root_fd, proc_fd, NULL, &s), -ENOTDIR);
	tree_remove(dir);
}

/* --- the confined binary --- */

/* Starts husk-gofer on path with extra arguments; returns its pid, *sock our end. */
static pid_t spawn_gofer(const char *path, bool readonly, int *sock)
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
		const char *argv[] = {
			bin, "--fd", fdarg, readonly ? "--readonly" : path, readonly ? path : NULL,
			NULL
		};

		if (dup2(sv[1], CHILD_FD) < 0)
			_exit(126);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	close(sv[1]);
	*sock = sv[0];
	return pid;
}

static void start_confined(bool readonly)
{
	int sock;

	if (geteuid() != 0)
		cr_skip_test("the gofer confines itself with mount namespaces: needs root");
	if (!getenv("HUSK_GOFER"))
		cr_skip_test("HUSK_GOFER is not set (meson test sets it)");
	make_files();
	server = spawn_gofer(file, readonly, &sock);
	cr_assert_eq(gofer_client_create(sock, &c), 0);
	cr_assert_eq(gofer_mount(c, &root, &root_attr), 0);
}

/* The names in the confined gofer's root directory, sorted, space-separated. */
static void gofer_root_names(char *buf, size_t len)
{
	char path[64], names[8][256];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/root", server);
	d = opendir(path);
	cr_assert_not_null(d, "%s: %s", path, strerror(errno));
	while ((de = readdir(d)) && n < 8) {
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			snprintf(names[n++], sizeof(names[0]), "%s", de->d_name);
	}
	closedir(d);
	buf[0] = '\0';
	for (int i = 0; i < n; i++)
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? " " : "", names[i]);
}

Test(gofer_file_root_confined, serves_the_file_and_nothing_beside_it, .fini = finish)
{
	char names[256], buf[64], path[128];
	int fd;

	start_confined(false);
	cr_assert(S_ISREG(root_attr.mode), "mode %o", root_attr.mode);
	gofer_root_names(names, sizeof(names));
	cr_assert_str_eq(names, GOFER_FILE_ROOT_NAME);
	/* The gofer's root directory is read-only: nothing can be put beside the file. */
	snprintf(path, sizeof(path), "/proc/%d/root/new", server);
	cr_assert_eq(mkdir(path, 0755), -1);
	cr_assert_eq(errno, EROFS);
	fd = gofer_open(c, root, O_RDWR | O_APPEND);
	cr_assert_geq(fd, 0, "open: %s", strerror(-fd));
	read_fd(fd, buf, sizeof(buf));
	cr_assert_str_eq(buf, CONTENT);
	cr_assert_eq(write(fd, "::1 localhost\n", 14), 14);
	close(fd);
	read_host(file, buf, sizeof(buf));
	cr_assert_str_eq(buf, CONTENT "::1 localhost\n");
}

Test(gofer_file_root_confined, readonly_is_read_only_in_the_kernel_too, .fini = finish)
{
	char path[128];
	int fd;

	start_confined(true);
	cr_assert_eq(gofer_open(c, root, O_WRONLY), -EROFS);
	/* Past the gofer's own check: its mount of the file refuses writes. */
	snprintf(path, sizeof(path), "/proc/%d/root/" GOFER_FILE_ROOT_NAME, server);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	cr_assert_eq(fd, -1);
	cr_assert_eq(errno, EROFS);
}

Test(gofer_file_root_confined, a_fifo_is_refused_at_start)
{
	char fifo[128];
	int sock, st;

	if (geteuid() != 0 || !getenv("HUSK_GOFER"))
		cr_skip_test("needs root and $HUSK_GOFER");
	tree_create(dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	server = spawn_gofer(fifo, false, &sock);
	st = child_wait(server);
	close(sock);
	tree_remove(dir);
	cr_assert_eq(st, 1, "the gofer exited %d", st);
}
