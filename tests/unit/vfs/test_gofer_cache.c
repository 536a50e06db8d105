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

/* --- listings: one GETDENTSPLUS fills the directory's cache --- */

/* Names emitted by a directory file, at most budget per iterate call (0: no limit). */
struct names {
	struct dir_emitter e;
	char seen[TREE_MANY + 8][16];
	int n, budget, this_call;
};

static bool names_emit(struct dir_emitter *e, const char *name, size_t namelen, uint64_t ino,
		       unsigned int dtype, int64_t next_off)
{
	struct names *nm = container_of(e, struct names, e);

	if (nm->budget && nm->this_call == nm->budget)
		return false;
	cr_assert_lt(nm->n, TREE_MANY + 8, "more entries than the directory has");
	cr_assert_lt(namelen, 16);
	memcpy(nm->seen[nm->n], name, namelen);
	nm->seen[nm->n][namelen] = '\0';
	nm->n++;
	nm->this_call++;
	return true;
}

/* Lists /many to its end (budget entries per call); checks each name shows exactly once. */
static void list_many(int budget)
{
	struct names nm = { .e.emit = names_emit, .budget = budget };
	struct file *f;
	char name[8];

	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/many", O_RDONLY | O_DIRECTORY, 0, &f), 0);
	for (int round = 0; round < 100; round++) {
		int had = nm.n;

		nm.this_call = 0;
		cr_assert_eq(f->ops->iterate(f, &nm.e), 0);
		if (nm.n == had)
			break;
	}
	file_put(f);
	cr_assert_eq(nm.n, 2 + TREE_MANY, "., .. and the files, listed %d", nm.n);
	for (int i = 0; i < TREE_MANY; i++) {
		int count = 0;

		snprintf(name, sizeof(name), "f%02d", i);
		for (int k = 0; k < nm.n; k++)
			count += !strcmp(nm.seen[k], name);
		cr_assert_eq(count, 1, "%s listed %d times", name, count);
	}
}

static void listing_takes_one_round_trip_and_answers_lookups(int budget)
{
	struct vfs_attr a;
	struct vfs_path p;
	uint64_t before, plus;

	stat_ok("/many", &a); /* the walk to the directory itself */
	before = gofer_client_msgs(-1);
	plus = gofer_client_msgs(GOFER_MSG_GETDENTSPLUS);
	list_many(budget);
	cr_assert_eq(gofer_client_msgs(GOFER_MSG_GETDENTSPLUS), plus + 1);
	cr_assert_eq(gofer_client_msgs(-1), before + 1, "one round trip for the whole listing");
	/* Every child is known with its attributes, and what is not listed does not exist. */
	stat_ok("/many/f07", &a);
	cr_assert_eq(a.size, 1);
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/many/nope", 0, &p), -ENOENT);
	list_many(0);
	cr_assert_eq(gofer_client_msgs(-1), before + 1, "lookups and a second listing: cached");
}

Test(gofer_cache, listing_takes_one_round_trip_and_answers_lookups)
{
	listing_takes_one_round_trip_and_answers_lookups(0);
}

Test(gofer_cache, listing_resumes_from_the_cache_between_calls)
{
	listing_takes_one_round_trip_and_answers_lookups(3);
}

Test(gofer_cache_overlay, listing_takes_one_round_trip_and_answers_lookups)
{
	listing_takes_one_round_trip_and_answers_lookups(0);
}

Test(gofer_cache, second_missed_name_lists_the_directory)
{
	struct vfs_attr a;
	char path[32];
	uint64_t before;

	stat_ok("/many/f00", &a);
	before = gofer_client_msgs(-1);
	stat_ok("/many/f01", &a); /* the second miss lists many/ */
	cr_assert_eq(gofer_client_msgs(GOFER_MSG_GETDENTSPLUS), 1);
	cr_assert_eq(gofer_client_msgs(-1), before + 1);
	for (int i = 2; i < TREE_MANY; i++) {
		snprintf(path, sizeof(path), "/many/f%02d", i);
		stat_ok(path, &a);
		cr_assert_eq(a.size, 1, "%s", path);
	}
	cr_assert_eq(gofer_client_msgs(-1), before + 1, "the other files came with the listing");
}

Test(gofer_cache, nodes_from_a_listing_open_and_read_link_on_demand)
{
	char buf[32];
	ssize_t n;
	struct vfs_attr a;
	uint64_t walks;

	stat_ok("/a", &a);
	stat_ok("/sub", &a); /* lists the root: file, passwd_link come without handles */
	walks = gofer_client_msgs(GOFER_MSG_WALK);
	cat_ok("/file", buf, sizeof(buf));
	cr_assert_str_eq(buf, "hello gofer\n");
	cr_assert_eq(gofer_client_msgs(GOFER_MSG_WALK), walks + 1, "walked to on first open");
	struct vfs_path p;
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/passwd_link", AT_SYMLINK_NOFOLLOW, &p), 0);
	n = p.node->ops->readlink(p.node, buf, sizeof(buf));
	vfs_path_put(&p);
	cr_assert_eq(n, 11);
	cr_assert_eq(memcmp(buf, "/etc/passwd", 11), 0);
	/* a/ came with a handle: looking into it walks from there, nothing more. */
	walks = gofer_client_msgs(GOFER_MSG_WALK);
	stat_ok("/a/b", &a);
	cr_assert_eq(gofer_client_msgs(GOFER_MSG_WALK), walks + 1);
}
