/* SPDX-License-Identifier: Apache-2.0 */
/* The gofer filesystem over a fake in-process gofer client serving a temporary directory. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "include/abi/linux/stat.h"
#include "sentry/fs/gofer/client.h"
#include "tests/unit/vfs/fake_gofer.h"
#include "tests/unit/vfs/testfs.h"

#define NMANY 9

static char dir[64];
static struct gofer_client *gc;
static struct harness h;

static void put_file(const char *name, const char *data)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(data, f);
	fclose(f);
}

static void setup_mount(bool readonly)
{
	char path[128];

	strcpy(dir, "/tmp/husk-vfs-gofer-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	put_file("a.txt", "hello gofer\n");
	snprintf(path, sizeof(path), "%s/sub", dir);
	cr_assert_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/dev", dir);
	cr_assert_eq(mkdir(path, 0755), 0);
	put_file("sub/b", "bee");
	snprintf(path, sizeof(path), "%s/link", dir);
	cr_assert_eq(symlink("a.txt", path), 0);
	snprintf(path, sizeof(path), "%s/sub/abs", dir);
	cr_assert_eq(symlink("/a.txt", path), 0);
	for (int i = 0; i < NMANY; i++) {
		snprintf(path, sizeof(path), "sub/m%d", i);
		put_file(path, "m");
	}
	fake_gofer_walks = fake_gofer_handles = fake_gofer_getdents_calls = 0;
	gc = fake_gofer_create(dir);
	memset(&h, 0, sizeof(h));
	cr_assert_eq(vfs_mount_root(&h.k, gc, readonly), 0);
	harness_init_task(&h);
}

static void setup(void)
{
	setup_mount(true);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(gofer_fs, .init = setup, .fini = teardown);

static struct file *open_ok(const char *path, int flags)
{
	struct file *f;
	int err = vfs_open(&h.t, AT_FDCWD, path, flags, 0, &f);

	cr_assert_eq(err, 0, "open %s: %d", path, err);
	return f;
}

Test(gofer_fs, reads_files_through_the_donated_fd)
{
	struct file *f = open_ok("/a.txt", O_RDONLY);
	char buf[32] = { 0 };

	cr_assert_eq(file_pread(f, buf, sizeof(buf), 6), 6);
	cr_assert_str_eq(buf, "gofer\n");
	cr_assert_eq(f->ops->llseek(f, -3, SEEK_END), 9);
	file_put(f);
	f = open_ok("/link", O_RDONLY);
	cr_assert_eq(file_pread(f, buf, 5, 0), 5);
	cr_assert_eq(memcmp(buf, "hello", 5), 0);
	file_put(f);
	f = open_ok("/sub/abs", O_RDONLY);
	file_put(f);
}

Test(gofer_fs, attributes_come_from_the_gofer_with_the_sentry_device)
{
	struct vfs_path p;
	struct vfs_attr a;
	struct stat st;
	char path[128];

	snprintf(path, sizeof(path), "%s/a.txt", dir);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/a.txt", 0, &p), 0);
	cr_assert_eq(vfs_path_getattr(&p, &a), 0);
	cr_assert_eq(a.size, 12);
	cr_assert_eq(a.ino, st.st_ino);
	cr_assert_eq(a.mode, st.st_mode);
	cr_assert_eq(major(a.dev), 0, "an anonymous device, not the host's");
	vfs_path_put(&p);
}

Test(gofer_fs, lookups_are_cached_positive_and_negative)
{
	struct vfs_path p;
	int walks;

	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/sub/b", 0, &p), 0);
	vfs_path_put(&p);
	walks = fake_gofer_walks;
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/sub/b", 0, &p), 0);
	vfs_path_put(&p);
	cr_assert_eq(fake_gofer_walks, walks);
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/nope", 0, &p), -ENOENT);
	walks = fake_gofer_walks;
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/nope", 0, &p), -ENOENT);
	cr_assert_eq(fake_gofer_walks, walks);
}

Test(gofer_fs, mount_is_read_only)
{
	struct file *f;

	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/a.txt", O_WRONLY, 0, &f), -EROFS);
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/a.txt", O_RDONLY | O_TRUNC, 0, &f), -EROFS);
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/new", O_WRONLY | O_CREAT, 0644, &f), -EROFS);
	f = open_ok("/a.txt", O_RDONLY | O_CREAT);
	file_put(f);
}

struct names {
	struct dir_emitter e;
	char seen[32][16];
	int n, budget;
};

static bool names_emit(struct dir_emitter *e, const char *name, size_t len, uint64_t ino,
		       unsigned int type, int64_t next)
{
	struct names *nm = (struct names *)e;

	if (nm->budget-- <= 0 || nm->n >= 32)
		return false;
	memcpy(nm->seen[nm->n], name, len);
	nm->seen[nm->n][len] = '\0';
	nm->n++;
	return true;
}

static int count_name(struct names *nm, const char *name)
{
	int c = 0;

	for (int i = 0; i < nm->n; i++)
		c += strcmp(nm->seen[i], name) == 0;
	return c;
}

Test(gofer_fs, directory_listing_makes_up_dots_and_resumes)
{
	struct names nm = { .e.emit = names_emit };
	struct file *f = open_ok("/sub", O_RDONLY | O_DIRECTORY);
	char name[8];

	/* Three entries at a time: every call stops mid-way and the next resumes. */
	for (int round = 0; round < 10; round++) {
		nm.budget = 3;
		cr_assert_eq(f->ops->iterate(f, &nm.e), 0);
	}
	cr_assert_eq(nm.n, 2 + 2 + NMANY, "., .., b, abs and the m files");
	cr_assert_eq(count_name(&nm, "."), 1);
	cr_assert_eq(count_name(&nm, ".."), 1);
	cr_assert_eq(count_name(&nm, "b"), 1);
	cr_assert_eq(count_name(&nm, "abs"), 1);
	for (int i = 0; i < NMANY; i++) {
		snprintf(name, sizeof(name), "m%d", i);
		cr_assert_eq(count_name(&nm, name), 1, "%s", name);
	}
	cr_assert_gt(fake_gofer_getdents_calls, 3);
	file_put(f);
}

Test(gofer_fs, readlink_gives_the_target)
{
	struct vfs_path p;
	char buf[16] = { 0 };

	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/sub/abs", AT_SYMLINK_NOFOLLOW, &p), 0);
	cr_assert_eq(vfs_path_readlink(&p, buf, sizeof(buf)), 6);
	cr_assert_str_eq(buf, "/a.txt");
	vfs_path_put(&p);
}

Test(gofer_fs, statfs_asks_the_gofer)
{
	struct linux_statfs st;
	struct statfs host;
	struct vfs_path p;

	cr_assert_eq(statfs(dir, &host), 0);
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/", 0, &p), 0);
	cr_assert_eq(vfs_path_statfs(&p, &st), 0);
	cr_assert_eq(st.f_type, host.f_type);
	cr_assert_eq(st.f_flags & 1, 1, "ST_RDONLY");
	vfs_path_put(&p);
}

Test(gofer_fs, dev_mounts_on_the_gofer_root)
{
	struct file *f;

	cr_assert_eq(vfs_mount_dev(&h.k), 0);
	f = open_ok("/dev/zero", O_RDWR);
	cr_assert_not_null(f->ops->write);
	file_put(f);
}

Test(gofer_fs, device_nodes_of_the_image_open_sentry_devices)
{
	char path[128], c = 'x';
	struct file *f;

	snprintf(path, sizeof(path), "%s/sub/zero", dir);
	if (mknod(path, S_IFCHR | 0666, makedev(1, 5)) < 0)
		cr_skip_test("mknod of a character device needs CAP_MKNOD");
	f = open_ok("/sub/zero", O_RDONLY);
	cr_assert_eq(file_pread(f, &c, 1, 0), 1);
	cr_assert_eq(c, 0);
	file_put(f);
}

Test(gofer_fs, teardown_closes_every_handle)
{
	struct file *f = open_ok("/sub/b", O_RDONLY);
	struct vfs_path p;

	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/link", 0, &p), 0);
	vfs_path_put(&p);
	cr_assert_gt(fake_gofer_handles, 3);
	file_put(f);
	harness_fini(&h);
	cr_assert_eq(fake_gofer_handles, 0, "%d handles left open", fake_gofer_handles);
	gofer_client_destroy(gc);
}

/* --- a writable mount (--overlay=none, volumes) --- */

static void setup_rw(void)
{
	setup_mount(false);
}

TestSuite(gofer_rw, .init = setup_rw, .fini = teardown);

static void host_stat(const char *name, struct stat *st)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_eq(lstat(path, st), 0, "host %s: %s", name, strerror(errno));
}

static bool host_exists(const char *name)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return lstat(path, &st) == 0;
}

static struct vfs_attr attr_of(const char *path)
{
	struct vfs_path p;
	struct vfs_attr a;

	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, &p), 0, "%s", path);
	cr_assert_eq(vfs_path_getattr(&p, &a), 0);
	vfs_path_put(&p);
	return a;
}

static ssize_t write_str(struct file *f, const char *s)
{
	struct iovec iov = { .iov_base = (void *)s, .iov_len = strlen(s) };
	int64_t pos = 0;

	return f->ops->write(f, &iov, 1, &pos);
}

Test(gofer_rw, created_file_is_written_even_with_mode_0)
{
	struct stat st;
	struct file *f;

	/* O_CREAT opens the file it made for writing whatever its mode, as Linux does. */
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/new", O_WRONLY | O_CREAT | O_EXCL, 0, &f), 0);
	cr_assert_eq(write_str(f, "data"), 4);
	file_put(f);
	host_stat("new", &st);
	cr_assert_eq(st.st_mode, S_IFREG | 0);
	cr_assert_eq(st.st_size, 4);
	cr_assert_eq(vfs_open(&h.t, AT_FDCWD, "/new", O_WRONLY | O_CREAT | O_EXCL, 0, &f), -EEXIST);
}

Test(gofer_rw, namespace_changes_reach_the_host)
{
	struct vfs_path p;
	struct stat st;

	cr_assert_eq(vfs_mkdirat(&h.t, AT_FDCWD, "/d", 0750), 0);
	host_stat("d", &st);
	cr_assert_eq(st.st_mode, S_IFDIR | 0750);
	cr_assert_eq(vfs_symlinkat(&h.t, "a.txt", AT_FDCWD, "/d/s"), 0);
	cr_assert_eq(vfs_mknodat(&h.t, AT_FDCWD, "/d/fifo", S_IFIFO | 0600, 0), 0);
	host_stat("d/fifo", &st);
	cr_assert(S_ISFIFO(st.st_mode));
	cr_assert_eq(vfs_mknodat(&h.t, AT_FDCWD, "/d/null", S_IFCHR | 0600, vfs_mkdev(1, 3)),
		     -EPERM);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/d/s", AT_FDCWD, "/s2", 0), 0);
	cr_assert(!host_exists("d/s"));
	cr_assert(host_exists("s2"));
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/d/s", AT_SYMLINK_NOFOLLOW, &p), -ENOENT);
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/d", AT_REMOVEDIR), -ENOTEMPTY);
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/d/fifo", 0), 0);
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/d", AT_REMOVEDIR), 0);
	cr_assert(!host_exists("d"));
	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/d", 0, &p), -ENOENT);
}

Test(gofer_rw, rename_exchange_swaps_names_and_nodes)
{
	struct file *f;
	char buf[8] = { 0 };

	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/a.txt", AT_FDCWD, "/sub/b",
				   VFS_RENAME_EXCHANGE),
		     0);
	f = open_ok("/a.txt", O_RDONLY);
	cr_assert_eq(file_pread(f, buf, 3, 0), 3);
	cr_assert_str_eq(buf, "bee");
	file_put(f);
	cr_assert_eq(attr_of("/sub/b").size, 12);
	cr_assert_eq(vfs_renameat2(&h.t, AT_FDCWD, "/a.txt", AT_FDCWD, "/sub/b",
				   VFS_RENAME_NOREPLACE),
		     -EEXIST);
}

Test(gofer_rw, attributes_are_cached_until_the_sandbox_changes_something)
{
	struct file *f;
	int stats;

	(void)attr_of("/a.txt");
	stats = fake_gofer_stats;
	cr_assert_eq(attr_of("/a.txt").size, 12);
	cr_assert_eq(fake_gofer_stats, stats, "an unchanged file is not asked for again");
	f = open_ok("/a.txt", O_WRONLY);
	cr_assert_eq(write_str(f, "0123456789abcdef"), 16);
	file_put(f);
	cr_assert_eq(attr_of("/a.txt").size, 16, "a write through a donated FD invalidates");
	cr_assert_gt(fake_gofer_stats, stats);
}

Test(gofer_rw, link_counts_stay_right_across_names)
{
	cr_assert_eq(vfs_linkat(&h.t, AT_FDCWD, "/a.txt", AT_FDCWD, "/sub/hard", 0), 0);
	cr_assert_eq(attr_of("/a.txt").nlink, 2);
	cr_assert_eq(attr_of("/sub/hard").nlink, 2);
	cr_assert_eq(attr_of("/sub/hard").ino, attr_of("/a.txt").ino);
	/* Removing one name changes the other's count: the cached attributes must go. */
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/sub/hard", 0), 0);
	cr_assert_eq(attr_of("/a.txt").nlink, 1);
}

Test(gofer_rw, an_unlinked_file_cannot_be_linked_again)
{
	struct file *f = open_ok("/a.txt", O_RDONLY);
	int fd;

	fd = fdtable_install(h.t.fdt, f, 0, false, 1024);
	cr_assert_geq(fd, 0);
	file_put(f);
	cr_assert_eq(vfs_unlinkat(&h.t, AT_FDCWD, "/a.txt", 0), 0);
	/* The name is gone on the host: linking by name must not find something else there. */
	put_file("a.txt", "other");
	cr_assert_eq(vfs_linkat(&h.t, fd, "", AT_FDCWD, "/again", AT_EMPTY_PATH), -ENOENT);
	cr_assert(!host_exists("again"));
}

Test(gofer_rw, setattr_changes_the_host_file)
{
	struct vfs_path p;
	struct timespec times[2] = { { 1000, 5 }, { 2000, 7 } };
	struct stat st;

	cr_assert_eq(vfs_lookup_at(&h.t, AT_FDCWD, "/a.txt", 0, &p), 0);
	cr_assert_eq(vfs_path_chmod(&h.t, &p, 0600), 0);
	cr_assert_eq(vfs_path_truncate(&h.t, &p, 3), 0);
	cr_assert_eq(vfs_path_utimens(&h.t, &p, times), 0);
	vfs_path_put(&p);
	host_stat("a.txt", &st);
	cr_assert_eq(st.st_mode & 07777, 0600);
	cr_assert_eq(st.st_size, 3);
	cr_assert_eq(st.st_mtim.tv_sec, 2000);
	cr_assert_eq(st.st_mtim.tv_nsec, 7);
	cr_assert_eq(attr_of("/a.txt").size, 3);
	cr_assert_eq(attr_of("/a.txt").mode & 07777, 0600);
}
