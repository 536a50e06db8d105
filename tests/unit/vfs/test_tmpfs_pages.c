/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tmpfs's page cache (get_pages): file data lives in memory-file pages that MAP_SHARED maps, so
 * bytes written to the pages are read(2)'s and write(2)'s land in them.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "common/err.h"
#include "common/util.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/mm/memfile.h"
#include "sentry/vfs/fs.h"

#define P 4096

static struct memfile mf;
static struct vfs_fs *fs;
static struct vfs_node *node;
static struct file *f;

static struct file *open_file(struct memfile *m, uint64_t limit)
{
	struct vfs_create_args a = { .mode = S_IFREG | 0600 };

	fs = tmpfs_create(m, limit, 01777, 0, 0);
	cr_assert_not_null(fs);
	cr_assert_eq(fs->root->ops->create(fs->root, "f", &a, &node), 0);
	struct file *file = node->ops->open(node, O_RDWR);
	cr_assert(!IS_ERR(file));
	return file;
}

static void setup(void)
{
	cr_assert_eq(memfile_init(&mf, 1ULL << 30), 0);
	f = open_file(&mf, 16 * P);
}

static void teardown(void)
{
	file_put(f);
	vfs_node_put(node);
	vfs_fs_put(fs);
	cr_assert_eq(memfile_free_bytes(&mf), 1ULL << 30, "every page went back");
	memfile_destroy(&mf);
}

static ssize_t pwrite_str(struct file *file, const char *s, int64_t off)
{
	struct iovec iov = { .iov_base = (void *)s, .iov_len = strlen(s) };

	return file->ops->write(file, &iov, 1, &off);
}

TestSuite(tmpfs_pages, .init = setup, .fini = teardown);

Test(tmpfs_pages, write_lands_in_the_pages_get_pages_gives)
{
	uint64_t offs[2];

	cr_assert_eq(pwrite_str(f, "hello", 1), 5);
	cr_assert_eq(f->ops->get_pages(f, 0, 2, offs, true), 0);
	cr_assert_eq(memcmp((char *)memfile_ptr(&mf, offs[0]) + 1, "hello", 5), 0);
	cr_assert_eq(pwrite_str(f, "page1", P), 5);
	cr_assert_eq(memcmp((char *)memfile_ptr(&mf, offs[1]), "page1", 5), 0);
	cr_assert_eq(memfile_page_refs(&mf, offs[1]), 2, "the caller got its own reference");
	cr_assert_eq(offs[1], offs[0] + P, "a file's pages are contiguous when possible");
	memfile_free(&mf, offs[0], P);
	memfile_free(&mf, offs[1], P);
}

Test(tmpfs_pages, bytes_written_to_a_page_are_read)
{
	uint64_t off;
	char buf[4] = { 0 };

	cr_assert_eq(f->ops->get_pages(f, 0, 1, &off, true), 0);
	memcpy(memfile_ptr(&mf, off), "map", 3);
	cr_assert_eq(pwrite_str(f, "", 0), 0);
	struct vfs_setattr sa = { .valid = VFS_SETATTR_SIZE, .size = 3 };
	cr_assert_eq(node->ops->setattr(node, &sa), 0);
	cr_assert_eq(file_pread(f, buf, 3, 0), 3);
	cr_assert_str_eq(buf, "map");
	memfile_free(&mf, off, P);
}

Test(tmpfs_pages, truncation_zeroes_what_a_mapping_still_holds)
{
	uint64_t offs[2];

	struct vfs_setattr grow = { .valid = VFS_SETATTR_SIZE, .size = 2 * P };
	cr_assert_eq(node->ops->setattr(node, &grow), 0);
	cr_assert_eq(f->ops->get_pages(f, 0, 2, offs, true), 0);
	memset(memfile_ptr(&mf, offs[0]), 'a', 2 * P);
	struct vfs_setattr sa = { .valid = VFS_SETATTR_SIZE, .size = 10 };
	cr_assert_eq(node->ops->setattr(node, &sa), 0);
	const char *p = memfile_ptr(&mf, offs[0]);
	cr_assert_eq(p[9], 'a');
	cr_assert_eq(p[10], 0, "the tail of the last page reads zero");
	cr_assert_eq(p[P], 0, "a page past the end reads zero");
	cr_assert_eq(memfile_page_refs(&mf, offs[1]), 1, "the file dropped its reference");
	memfile_free(&mf, offs[0], P);
	memfile_free(&mf, offs[1], P);
}

Test(tmpfs_pages, pages_count_against_the_size_limit)
{
	uint64_t offs[17];

	cr_assert_eq(f->ops->get_pages(f, 0, 17, offs, false), -ENOSPC);
	cr_assert_eq(f->ops->get_pages(f, 0, 16, offs, false), 0);
	for (int i = 0; i < 16; i++)
		memfile_free(&mf, offs[i], P);
}

Test(tmpfs_pages, without_a_memory_file_there_is_no_page_cache)
{
	struct vfs_fs *fs2 = fs;
	struct vfs_node *node2 = node;
	struct file *f2 = f;
	uint64_t off;

	f = open_file(NULL, 0);
	cr_assert_eq(f->ops->get_pages(f, 0, 1, &off, false), -ENODEV);
	cr_assert_eq(pwrite_str(f, "heap", 0), 4);
	file_put(f);
	vfs_node_put(node);
	vfs_fs_put(fs);
	fs = fs2;
	node = node2;
	f = f2;
}
