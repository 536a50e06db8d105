/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gofer filesystem's caches. security.capability (read by every exec): a read-only
 * mount answers a second getxattr without a GETXATTR message and with the same answer as the
 * gofer (value, absence, size query, -ERANGE); a writable mount asks every time, so that a
 * change made on the host is seen. The page cache's fill (get_pages): the memory-file pages hold
 * the file's bytes, zeros past its end. The real gofer server runs in a child over a temporary
 * tree (helpers.c); gofer_client_msgs() counts the messages sent.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>
#include <stdlib.h>
#include <unistd.h>

#include "sentry/fs/gofer/client.h"
#include "sentry/fs/gofer/gofer_fs.h"
#include "sentry/mm/memfile.h"
#include "sentry/vfs/xattr.h"
#include "tests/unit/gofer/helpers.h"
#include "tests/unit/vfs/testfs.h"

#define CAPS "security.capability"

static char dir[64];
static pid_t server;
static struct gofer_client *gc;
static struct harness h;

/* A VFS_CAP_REVISION_2 value granting the permitted set bit `bit`. */
static void caps_value(uint8_t v[20], unsigned int bit)
{
	uint32_t words[5] = { 0x02000000u, 1u << bit, 0, 0, 0 };

	memcpy(v, words, sizeof(words));
}

static void host_set_caps(const char *name, unsigned int bit)
{
	char path[128];
	uint8_t v[20];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	caps_value(v, bit);
	cr_assert_eq(setxattr(path, CAPS, v, sizeof(v), 0), 0, "setxattr %s: %s", path,
		     strerror(errno));
}

static void start(bool readonly)
{
	struct gofer_server_config cfg = { .readonly = readonly };
	int sock;

	tree_create(dir);
	host_set_caps("file", 10);
	server = server_start(dir, &cfg, &sock);
	cr_assert_eq(gofer_client_create(sock, &gc), 0);
	memset(&h, 0, sizeof(h));
	cr_assert_eq(memfile_init(&h.k.mf, 1ULL << 28), 0);
	cr_assert_eq(vfs_mount_root(&h.k, gc, readonly), 0);
	harness_init_task(&h);
}

static void start_ro(void)
{
	start(true);
}

static void start_rw(void)
{
	start(false);
}

static void finish(void)
{
	harness_fini(&h);
	gofer_client_destroy(gc);
	cr_assert_eq(child_wait(server), 0);
	tree_remove(dir);
}

static ssize_t get_caps(const char *path, void *buf, size_t size)
{
	struct vfs_path p;
	ssize_t n;

	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, path, 0, &p), 0, "lookup %s", path);
	n = vfs_getxattr(&h.t, &p, CAPS, buf, size);
	vfs_path_put(&p);
	return n;
}

Test(caps_cache, read_only_mount_answers_the_second_read_without_a_message, .init = start_ro,
     .fini = finish)
{
	uint8_t want[20], got[32];
	uint64_t before;

	caps_value(want, 10);
	memset(got, 0, sizeof(got));
	cr_assert_eq(get_caps("/file", got, sizeof(got)), 20);
	cr_assert_eq(memcmp(got, want, 20), 0);
	before = gofer_client_msgs(GOFER_MSG_GETXATTR);
	cr_assert_geq(before, 1);
	memset(got, 0, sizeof(got));
	cr_assert_eq(get_caps("/file", got, sizeof(got)), 20);
	cr_assert_eq(memcmp(got, want, 20), 0, "the cached value is the file's");
	cr_assert_eq(gofer_client_msgs(GOFER_MSG_GETXATTR), before, "no GETXATTR the second time");
}

Test(caps_cache, cached_value_answers_size_queries_and_short_buffers, .init = start_ro,
     .fini = finish)
{
	uint8_t got[32];
	uint64_t before;

	cr_assert_eq(get_caps("/file", got, sizeof(got)), 20);
	before = gofer_client_msgs(GOFER_MSG_GETXATTR);
	cr_assert_eq(get_caps("/file", NULL, 0), 20, "size 0 gives the length");
	cr_assert_eq(get_caps("/file", got, 19), -ERANGE);
	cr_assert_eq(gofer_client_msgs(GOFER_MSG_GETXATTR), before);
}

Test(caps_cache, read_only_mount_caches_a_file_without_capabilities, .init = start_ro,
     .fini = finish)
{
	uint8_t got[32];
	uint64_t before;

	cr_assert_eq(get_caps("/a/b/c", got, sizeof(got)), -ENODATA);
	before = gofer_client_msgs(GOFER_MSG_GETXATTR);
	cr_assert_eq(get_caps("/a/b/c", got, sizeof(got)), -ENODATA);
	cr_assert_eq(gofer_client_msgs(GOFER_MSG_GETXATTR), before, "absence is cached too");
}

Test(caps_cache, size_query_first_is_not_taken_for_the_value, .init = start_ro, .fini = finish)
{
	uint8_t want[20], got[32];

	caps_value(want, 10);
	cr_assert_eq(get_caps("/file", NULL, 0), 20);
	memset(got, 0, sizeof(got));
	cr_assert_eq(get_caps("/file", got, sizeof(got)), 20);
	cr_assert_eq(memcmp(got, want, 20), 0);
}

Test(caps_cache, writable_mount_sees_a_host_change, .init = start_rw, .fini = finish)
{
	uint8_t want[20], got[32];
	uint64_t before;

	cr_assert_eq(get_caps("/file", got, sizeof(got)), 20);
	host_set_caps("file", 21);
	before = gofer_client_msgs(GOFER_MSG_GETXATTR);
	caps_value(want, 21);
	memset(got, 0, sizeof(got));
	cr_assert_eq(get_caps("/file", got, sizeof(got)), 20);
	cr_assert_eq(memcmp(got, want, 20), 0, "the new value, not a cached one");
	cr_assert_gt(gofer_client_msgs(GOFER_MSG_GETXATTR), before);
}

/* Byte i of the test's big file. */
static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 7 + i / 4096);
}

Test(pcache, fill_gives_the_file_bytes_and_zeros_past_its_end, .init = start_ro, .fini = finish)
{
	/* Past a run of PCACHE_RUN_MAX (64) pages and the 64 KiB bounce buffer, tail unaligned. */
	const size_t size = 300 * 1024 + 123, npages = (size + 4095) / 4096;
	uint64_t offs[80];
	char path[128];
	uint8_t *data = malloc(size);
	struct file *f;
	FILE *out;

	cr_assert_not_null(data);
	for (size_t i = 0; i < size; i++)
		data[i] = pattern(i);
	snprintf(path, sizeof(path), "%s/big", dir);
	out = fopen(path, "w");
	cr_assert_not_null(out);
	cr_assert_eq(fwrite(data, 1, size, out), size);
	cr_assert_eq(fclose(out), 0);
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/big", O_RDONLY, 0, &f), 0);
	cr_assert_not_null(f->ops->get_pages);
	/* Page 3 first, so that the whole range is filled around a cached page. */
	cr_assert_eq(f->ops->get_pages(f, 3, 1, offs, false), 0);
	memfile_free(&h.k.mf, offs[0], 4096);
	cr_assert_eq(f->ops->get_pages(f, 0, npages, offs, false), 0);
	for (size_t p = 0; p < npages; p++) {
		const uint8_t *pg = memfile_ptr(&h.k.mf, offs[p]);

		for (size_t b = 0; b < 4096; b++) {
			size_t i = p * 4096 + b;
			uint8_t want = i < size ? data[i] : 0;

			if (pg[b] != want)
				cr_assert_fail("byte %zu: %u, not %u", i, pg[b], want);
		}
	}
	for (size_t p = 0; p < npages; p++)
		memfile_free(&h.k.mf, offs[p], 4096); /* get_pages's references */
	file_put(f);
	free(data);
}
