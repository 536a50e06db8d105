/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Round trips saved by the gofer filesystem's caches, counted on the wire: the real gofer
 * server (in a child, over a temporary tree: tests/unit/gofer/helpers.c) and the real client,
 * whose gofer_client_msgs() counts every message sent. A cached stat or open of an unchanged
 * file must send nothing.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sentry/fs/gofer/client.h"
#include "sentry/fs/gofer/gofer_fs.h"
#include "sentry/mm/memfile.h"
#include "tests/unit/gofer/helpers.h"
#include "tests/unit/vfs/testfs.h"

static char dir[64];
static pid_t server;
static struct gofer_client *gc;
static struct harness h;

static void start(bool overlay)
{
	struct gofer_server_config cfg = { .readonly = true };
	int sock;

	tree_create(dir);
	server = server_start(dir, &cfg, &sock);
	cr_assert_eq(gofer_client_create(sock, &gc), 0);
	memset(&h, 0, sizeof(h));
	cr_assert_eq(memfile_init(&h.k.mf, 1ULL << 28), 0);
	if (overlay)
		cr_assert_eq(vfs_mount_root_overlay(&h.k, gc, 0), 0);
	else
		cr_assert_eq(vfs_mount_root(&h.k, gc, true), 0);
	harness_init_task(&h);
}

static void start_gofer(void)
{
	start(false);
}

static void start_overlay(void)
{
	start(true);
}

static void finish(void)
{
	harness_fini(&h);
	gofer_client_destroy(gc);
	cr_assert_eq(child_wait(server), 0);
	tree_remove(dir);
}

static void stat_ok(const char *path, struct vfs_attr *a)
{
	struct vfs_path p;

	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, path, 0, &p), 0, "lookup %s", path);
	cr_assert_eq(vfs_path_getattr(&p, a), 0);
	vfs_path_put(&p);
}

/* Opens path read-only, reads its first bytes into buf (NUL-terminated) and closes it. */
static void cat_ok(const char *path, char *buf, size_t len)
{
	struct file *f;
	ssize_t n;

	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, path, O_RDONLY, 0, &f), 0, "open %s", path);
	n = file_pread(f, buf, len - 1, 0);
	cr_assert_geq(n, 0);
	buf[n] = '\0';
	file_put(f);
}

static void stat_twice_sends_nothing_the_second_time(void)
{
	struct vfs_attr a1, a2;
	uint64_t before;

	stat_ok("/a/b/c", &a1);
	cr_assert_gt(gofer_client_msgs(-1), 0, "the first stat walks");
	before = gofer_client_msgs(-1);
	stat_ok("/a/b/c", &a2);
	cr_assert_eq(gofer_client_msgs(-1), before, "no round trip for a cached stat");
	cr_assert_eq(a1.ino, a2.ino);
	cr_assert_eq(a2.size, 5);
}

static void open_twice_sends_nothing_the_second_time(void)
{
	char buf[32];
	uint64_t before, opens;

	cat_ok("/file", buf, sizeof(buf));
	cr_assert_str_eq(buf, "hello gofer\n");
	before = gofer_client_msgs(-1);
	opens = gofer_client_msgs(GOFER_MSG_OPEN);
	cr_assert_geq(opens, 1);
	cat_ok("/file", buf, sizeof(buf));
	cr_assert_str_eq(buf, "hello gofer\n", "the cached FD reads the file");
	cr_assert_eq(gofer_client_msgs(GOFER_MSG_OPEN), opens, "no OPEN for a cached open");
	cr_assert_eq(gofer_client_msgs(-1), before, "no round trip at all");
}

static void missing_name_twice_sends_nothing_the_second_time(void)
{
	struct vfs_path p;
	uint64_t before;

	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/a/nope", 0, &p), -ENOENT);
	before = gofer_client_msgs(-1);
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/a/nope", 0, &p), -ENOENT);
	cr_assert_eq(gofer_client_msgs(-1), before, "negative entries are cached");
}

TestSuite(gofer_cache, .init = start_gofer, .fini = finish);
TestSuite(gofer_cache_overlay, .init = start_overlay, .fini = finish);

Test(gofer_cache, stat_of_an_unchanged_file_needs_no_round_trip)
{
	stat_twice_sends_nothing_the_second_time();
}

Test(gofer_cache, open_of_an_unchanged_file_needs_no_round_trip)
{
	open_twice_sends_nothing_the_second_time();
}

Test(gofer_cache, missing_name_needs_no_second_round_trip)
{
	missing_name_twice_sends_nothing_the_second_time();
}

Test(gofer_cache_overlay, stat_of_an_unchanged_lower_file_needs_no_round_trip)
{
	stat_twice_sends_nothing_the_second_time();
}

Test(gofer_cache_overlay, open_of_an_unchanged_lower_file_needs_no_round_trip)
{
	open_twice_sends_nothing_the_second_time();
}

Test(gofer_cache_overlay, missing_lower_name_needs_no_second_round_trip)
{
	missing_name_twice_sends_nothing_the_second_time();
}

Test(gofer_cache, cached_fds_are_bounded_least_recently_used_first)
{
	struct vfs_fs *fs = h.k.root_mnt->fs;
	char buf[16], path[32];
	uint64_t opens;

	gofer_fs_set_fd_cache(fs, 2);
	cat_ok("/many/f00", buf, sizeof(buf));
	cat_ok("/many/f01", buf, sizeof(buf));
	cat_ok("/many/f00", buf, sizeof(buf)); /* f00 is now the most recent */
	cr_assert_eq(gofer_fs_fd_cache_count(fs), 2);
	cat_ok("/many/f02", buf, sizeof(buf)); /* evicts f01 */
	cr_assert_eq(gofer_fs_fd_cache_count(fs), 2, "never more than the bound");
	opens = gofer_client_msgs(GOFER_MSG_OPEN);
	cat_ok("/many/f00", buf, sizeof(buf));
	cat_ok("/many/f02", buf, sizeof(buf));
	cr_assert_eq(gofer_client_msgs(GOFER_MSG_OPEN), opens, "the two most recent stay cached");
	cat_ok("/many/f01", buf, sizeof(buf));
	cr_assert_eq(gofer_client_msgs(GOFER_MSG_OPEN), opens + 1, "the evicted one asks again");
	for (int i = 0; i < 10; i++) {
		snprintf(path, sizeof(path), "/many/f%02d", i);
		cat_ok(path, buf, sizeof(buf));
	}
	cr_assert_eq(gofer_fs_fd_cache_count(fs), 2);
	gofer_fs_set_fd_cache(fs, 0);
	cr_assert_eq(gofer_fs_fd_cache_count(fs), 0, "a bound of 0 empties the cache");
	opens = gofer_client_msgs(GOFER_MSG_OPEN);
	cat_ok("/many/f09", buf, sizeof(buf));
	cat_ok("/many/f09", buf, sizeof(buf));
	cr_assert_eq(gofer_client_msgs(GOFER_MSG_OPEN), opens + 2, "no cache: every open asks");
}

Test(gofer_cache, cached_fd_sees_host_changes_to_the_same_file)
{
	char buf[32], path[96];
	FILE *f;

	cat_ok("/file", buf, sizeof(buf));
	snprintf(path, sizeof(path), "%s/file", dir);
	f = fopen(path, "r+");
	cr_assert_not_null(f);
	fputs("HELLO", f);
	fclose(f);
	cat_ok("/file", buf, sizeof(buf));
	cr_assert_str_eq(buf, "HELLO gofer\n", "the same host inode as a new OPEN would give");
}
