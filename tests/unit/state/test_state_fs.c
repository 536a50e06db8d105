/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sentry/state/fs.c: a sandbox's in-memory filesystems and open files saved, packed into an
 * Image with protobuf-c, unpacked and restored into a second sandbox made the same way (a root
 * overlay over a lower tmpfs, a tmpfs on /tmp, each with its own memory file), then compared;
 * and malformed images refused with a message instead of a crash.
 *
 * The memory-file reservation the restore framework makes (every saved range at its offset,
 * with its contents) is faked here: the ranges are copied from the first memory file into the
 * second at the same offsets, and state_restore_range takes a reference on them.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/err.h"
#include "sentry/fs/host/hostfile.h"
#include "sentry/fs/overlay/overlay.h"
#include "sentry/fs/pipe/pipe.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/mm/memfile.h"
#include "sentry/state/state.h"
#include "sentry/vfs/fs.h"
#include "tests/unit/vfs/fsutil.h"

#define P 4096
#define MF_SIZE (1ULL << 28)

/* The reserved ranges of the restoring sandbox (the fake framework's). */
static struct state_ranges reserved;

/* The framework's (being written on main): one reference on a reserved range. */
__attribute__((weak)) int state_restore_range(struct state_restore *r, uint64_t off, uint64_t len)
{
	for (size_t i = 0; i < reserved.n; i++) {
		if (off >= reserved.v[i].off && len <= reserved.v[i].len &&
		    off - reserved.v[i].off <= reserved.v[i].len - len) {
			memfile_ref(&r->k->mf, off, len);
			return 0;
		}
	}
	return state_restore_fail(r, -EINVAL, "range %#llx+%#llx is not in the image's pages",
				  (unsigned long long)off, (unsigned long long)len);
}

/* A sandbox: the root overlay (lower: a tmpfs filled by fill_lower) and a tmpfs on /tmp. */
struct sandbox {
	struct harness h;
	struct vfs_fs *lower, *upper;
};

static void fill_lower(struct vfs_fs *lower)
{
	struct harness x;

	vfs_fs_get(lower);
	fsu_harness_init(&x, lower);
	cr_assert_eq(vfs_mkdirat(&x.t, AT_FDCWD, "/etc", 0755), 0);
	cr_assert_eq(fsu_write_file(&x, "/etc/passwd", 0644, "root:x:0:0\n"), 11);
	cr_assert_eq(vfs_mkdirat(&x.t, AT_FDCWD, "/dir", 0755), 0);
	cr_assert_eq(fsu_write_file(&x, "/dir/x", 0644, "x"), 1);
	cr_assert_eq(fsu_write_file(&x, "/dir/y", 0644, "y"), 1);
	cr_assert_eq(vfs_mkdirat(&x.t, AT_FDCWD, "/tmp", 01777), 0);
	harness_fini(&x);
}

static void sandbox_init(struct sandbox *sb)
{
	struct vfs_fs *ovl;

	sb->lower = tmpfs_create(NULL, 0, 0755, 0, 0);
	cr_assert_not_null(sb->lower);
	fill_lower(sb->lower);
	memset(&sb->h, 0, sizeof(sb->h));
	cr_assert_eq(memfile_init(&sb->h.k.mf, MF_SIZE), 0);
	sb->upper = tmpfs_create(&sb->h.k.mf, 0, 0755, 0, 0);
	cr_assert_not_null(sb->upper);
	ovl = overlay_create(sb->lower, sb->upper);
	cr_assert_not_null(ovl);
	{
		/* fsu_harness_init clears h (and the memory file in it): keep it. */
		struct memfile mf = sb->h.k.mf;

		fsu_harness_init(&sb->h, ovl);
		sb->h.k.mf = mf;
	}
	cr_assert_eq(vfs_mount_tmpfs(&sb->h.k, "/tmp", 1 << 20), 0);
	/* A start-up mountpoint in the upper layer, as the sentry makes /dev/shm's. */
	cr_assert_eq(vfs_mount_tmpfs(&sb->h.k, "/run/shm", 0), 0);
}

static void sandbox_fini(struct sandbox *sb)
{
	vfs_fs_put(sb->lower);
	vfs_fs_put(sb->upper);
	harness_fini(&sb->h);
}

/* --- the first sandbox, its open files and its image --- */

static struct sandbox a, b;
enum { F_GHOST, F_OVL_GHOST, F_MEMFD, F_PIPE_R, F_PIPE_W, F_FIFO, F_DIR, F_FILE, NFILES };
static struct file *fa[NFILES], *fb[NFILES];
static struct fsu_entry dir_rest[16];
static int dir_nrest;
static uint8_t *packed;
static size_t packed_len;
static struct state_ranges saved;

static struct file *open_a(const char *path, int flags)
{
	struct file *f;

	cr_assert_eq(vfs_open(&a.h.t, AT_FDCWD, path, flags, 0644, &f), 0, "open %s", path);
	return f;
}

static void fill_a(void)
{
	struct file *ends[2];
	struct fsu_entry e[3];
	struct timespec ts[2] = { { 1000, 5 }, { 2000, 7 } };
	struct vfs_path p;
	char big[P];

	cr_assert_eq(fsu_append(&a.h, "/etc/passwd", "me:x:1000:1000\n"), 15); /* copy-up */
	cr_assert_eq(vfs_unlinkat(&a.h.t, AT_FDCWD, "/dir/x", 0), 0); /* a whiteout */
	cr_assert_eq(vfs_unlinkat(&a.h.t, AT_FDCWD, "/dir/y", 0), 0);
	cr_assert_eq(vfs_unlinkat(&a.h.t, AT_FDCWD, "/dir", AT_REMOVEDIR), 0);
	cr_assert_eq(vfs_mkdirat(&a.h.t, AT_FDCWD, "/dir", 0700), 0); /* opaque */
	cr_assert_eq(fsu_write_file(&a.h, "/dir/new", 0600, "new"), 3);
	cr_assert_eq(fsu_write_file(&a.h, "/top", 0644, "upper only"), 10);

	cr_assert_eq(vfs_mkdirat(&a.h.t, AT_FDCWD, "/tmp/a", 0750), 0);
	cr_assert_eq(vfs_mkdirat(&a.h.t, AT_FDCWD, "/tmp/a/b", 0755), 0);
	fa[F_FILE] = open_a("/tmp/a/b/file", O_RDWR | O_CREAT);
	cr_assert_eq(fsu_fwrite(fa[F_FILE], "hello", 5), 5);
	fa[F_FILE]->pos = 3 * P; /* a hole of two pages */
	memset(big, 'w', sizeof(big));
	cr_assert_eq(fsu_fwrite(fa[F_FILE], big, sizeof(big)), P);
	cr_assert_eq(fsu_fwrite(fa[F_FILE], "world", 5), 5);
	cr_assert_eq(vfs_linkat(&a.h.t, AT_FDCWD, "/tmp/a/b/file", AT_FDCWD, "/tmp/a/link2", 0), 0);
	cr_assert_eq(vfs_symlinkat(&a.h.t, "a/b/file", AT_FDCWD, "/tmp/sym"), 0);
	cr_assert_eq(vfs_mknodat(&a.h.t, AT_FDCWD, "/tmp/fifo", S_IFIFO | 0640, 0), 0);
	cr_assert_eq(vfs_lookup_at(&a.h.t, AT_FDCWD, "/tmp/a/b/file", 0, &p), 0);
	cr_assert_eq(p.node->ops->setxattr(p.node, "user.k", "value", 5, 0), 0);
	cr_assert_eq(vfs_path_chown(&a.h.t, &p, 7, 8), 0);
	cr_assert_eq(vfs_path_utimens(&a.h.t, &p, ts), 0);
	vfs_path_put(&p);
	for (int i = 0; i < 5; i++) {
		char name[32];

		snprintf(name, sizeof(name), "/tmp/a/f%d", i);
		cr_assert_eq(fsu_write_file(&a.h, name, 0644, name), (ssize_t)strlen(name));
	}

	/* Open files with no name left. */
	fa[F_GHOST] = open_a("/tmp/ghost", O_RDWR | O_CREAT);
	cr_assert_eq(fsu_fwrite(fa[F_GHOST], "ghost", 5), 5);
	cr_assert_eq(vfs_unlinkat(&a.h.t, AT_FDCWD, "/tmp/ghost", 0), 0);
	fa[F_OVL_GHOST] = open_a("/ghost", O_RDWR | O_CREAT);
	cr_assert_eq(fsu_fwrite(fa[F_OVL_GHOST], "overlay ghost", 13), 13);
	cr_assert_eq(vfs_unlinkat(&a.h.t, AT_FDCWD, "/ghost", 0), 0);
	cr_assert_eq(tmpfs_memfd_create(&a.h.k.mf, "mfd", TMPFS_MEMFD_ALLOW_SEALING, &fa[F_MEMFD]),
		     0);
	cr_assert_eq(fsu_fwrite(fa[F_MEMFD], "memfd data", 10), 10);
	cr_assert_eq(tmpfs_file_add_seals(fa[F_MEMFD], LINUX_F_SEAL_GROW), 0);

	/* A pipe with data and a larger capacity; a FIFO open both ways with data. */
	cr_assert_eq(pipe_create(0, 0, 0, ends), 0);
	fa[F_PIPE_R] = ends[0];
	fa[F_PIPE_W] = ends[1];
	cr_assert_eq(pipe_fcntl(&a.h.t, ends[1], F_SETPIPE_SZ, 128 * 1024), 128 * 1024);
	cr_assert_eq(fsu_fwrite(ends[1], "piped", 5), 5);
	fa[F_FIFO] = open_a("/tmp/fifo", O_RDWR);
	cr_assert_eq(fsu_fwrite(fa[F_FIFO], "fifo!", 5), 5);

	/* A directory read part way: "." ".." and one entry. */
	fa[F_DIR] = open_a("/tmp/a", O_RDONLY | O_DIRECTORY);
	cr_assert_eq(fsu_readdir(fa[F_DIR], e, 3), 3);
}

/* Saves a's filesystems and files, packs the image into packed. */
static void save_a(void)
{
	struct state_save s = { .k = &a.h.k };
	Husk__State__Image img = HUSK__STATE__IMAGE__INIT;
	Husk__State__Kernel kern = HUSK__STATE__KERNEL__INIT;
	Husk__State__FsState fs = HUSK__STATE__FS_STATE__INIT;
	Husk__State__File files[NFILES], *pfiles[NFILES];
	int64_t dir_pos = fa[F_DIR]->pos;

	img.version = STATE_IMAGE_VERSION;
	img.kernel = &kern;
	img.fs = &fs;
	cr_assert_eq(state_fs_save(&s, &fs), 0, "%s", s.err);
	for (int i = 0; i < NFILES; i++) {
		husk__state__file__init(&files[i]);
		files[i].id = (uint32_t)i + 1;
		files[i].flags = fa[i]->flags;
		files[i].pos = fa[i]->pos;
		cr_assert_eq(state_file_save(&s, fa[i], &files[i]), 0, "file %d: %s", i, s.err);
		pfiles[i] = &files[i];
	}
	img.files = pfiles;
	img.n_files = NFILES;
	packed_len = husk__state__image__get_packed_size(&img);
	packed = malloc(packed_len);
	cr_assert_not_null(packed);
	cr_assert_eq(husk__state__image__pack(&img, packed), packed_len);
	saved = s.ranges;
	state_fs_save_end(&s);
	state_arena_free(&s);
	/* What a reads next in the directory, to compare after the restore. */
	dir_nrest = fsu_readdir(fa[F_DIR], dir_rest, 16);
	cr_assert_gt(dir_nrest, 0);
	fa[F_DIR]->pos = dir_pos;
}

/* b's memory file gets a's saved ranges at the same offsets (the framework's reservation). */
static void reserve_b(void)
{
	for (size_t i = 0; i < saved.n; i++) {
		cr_assert_eq(memfile_alloc_at_nocharge(&b.h.k.mf, saved.v[i].off, saved.v[i].len),
			     0);
		memcpy(memfile_ptr(&b.h.k.mf, saved.v[i].off),
		       memfile_ptr(&a.h.k.mf, saved.v[i].off), saved.v[i].len);
	}
	reserved = saved;
}

static void unreserve_b(void)
{
	for (size_t i = 0; i < reserved.n; i++)
		memfile_free(&b.h.k.mf, reserved.v[i].off, reserved.v[i].len);
	reserved = (struct state_ranges){ 0 };
}

static void setup(void)
{
	sandbox_init(&a);
	fill_a();
	save_a();
	sandbox_init(&b);
	reserve_b();
}

static void teardown(void)
{
	for (int i = 0; i < NFILES; i++) {
		if (fa[i])
			file_put(fa[i]);
		if (fb[i])
			file_put(fb[i]);
		fa[i] = fb[i] = NULL;
	}
	unreserve_b();
	free(saved.v);
	saved = (struct state_ranges){ 0 };
	free(packed);
	sandbox_fini(&a);
	sandbox_fini(&b);
	memfile_destroy(&a.h.k.mf);
	memfile_destroy(&b.h.k.mf);
}

/* Unpacks the image (after edit, if any) and restores it into b; returns the first error. */
static int restore_b(void (*edit)(Husk__State__Image *img), char *err, size_t errlen)
{
	Husk__State__Image *img = husk__state__image__unpack(NULL, packed_len, packed);
	struct state_restore r = { .k = &b.h.k };
	int ret;

	cr_assert_not_null(img);
	if (edit)
		edit(img);
	r.img = img;
	ret = state_fs_restore(&r, img->fs);
	for (size_t i = 0; ret == 0 && i < img->n_files; i++) {
		fb[i] = state_file_restore(&r, img->files[i]);
		if (!fb[i])
			ret = -EINVAL;
	}
	state_fs_restore_end(&r);
	snprintf(err, errlen, "%s", r.err);
	husk__state__image__free_unpacked(img, NULL);
	return ret;
}

TestSuite(state_fs, .init = setup, .fini = teardown);

static void same_stat(const char *path, bool nofollow)
{
	struct vfs_attr x, y;

	cr_assert_eq(fsu_stat(&a.h, path, nofollow, &x), 0, "%s in a", path);
	cr_assert_eq(fsu_stat(&b.h, path, nofollow, &y), 0, "%s in b", path);
	cr_expect_eq(x.ino, y.ino, "%s: st_ino %llu, restored %llu", path,
		     (unsigned long long)x.ino, (unsigned long long)y.ino);
	cr_expect_eq(x.mode, y.mode, "%s: mode", path);
	cr_expect_eq(x.uid, y.uid, "%s: uid", path);
	cr_expect_eq(x.gid, y.gid, "%s: gid", path);
	cr_expect_eq(x.nlink, y.nlink, "%s: nlink", path);
	cr_expect_eq(x.size, y.size, "%s: size", path);
	cr_expect_eq(x.blocks, y.blocks, "%s: blocks (holes)", path);
	cr_expect_eq(x.mtime.tv_sec, y.mtime.tv_sec, "%s: mtime", path);
	cr_expect_eq(x.mtime.tv_nsec, y.mtime.tv_nsec, "%s: mtime", path);
	cr_expect_eq(x.atime.tv_sec, y.atime.tv_sec, "%s: atime", path);
}

static void same_list(const char *path)
{
	char x[512], y[512];

	cr_assert_geq(fsu_list(&a.h, path, x, sizeof(x)), 0);
	cr_assert_geq(fsu_list(&b.h, path, y, sizeof(y)), 0);
	cr_expect_str_eq(x, y, "listing of %s", path);
}

static ssize_t read_at(struct file *f, void *buf, size_t len, int64_t off)
{
	return file_pread(f, buf, len, off);
}

Test(state_fs, trees_come_back_with_their_inode_numbers_and_attributes)
{
	char err[256];
	static const char *paths[] = { "/etc/passwd",  "/dir",	    "/dir/new", "/top",
				       "/tmp",	       "/tmp/a",    "/tmp/a/b", "/tmp/a/b/file",
				       "/tmp/a/link2", "/tmp/fifo", "/run/shm" };

	cr_assert_eq(restore_b(NULL, err, sizeof(err)), 0, "%s", err);
	for (size_t i = 0; i < ARRAY_SIZE(paths); i++)
		same_stat(paths[i], false);
	same_stat("/tmp/sym", true);
	same_list("/");
	same_list("/dir"); /* opaque: the lower y is not back */
	same_list("/etc");
	same_list("/tmp");
	same_list("/tmp/a");
}

Test(state_fs, data_holes_links_symlinks_and_xattrs_come_back)
{
	char err[256], buf[64], val[16];
	struct vfs_attr x;
	struct vfs_path p;
	uint8_t page[P];

	cr_assert_eq(restore_b(NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(fsu_read_file(&b.h, "/etc/passwd", buf, sizeof(buf)), 26);
	cr_expect_str_eq(buf, "root:x:0:0\nme:x:1000:1000\n");
	cr_assert_eq(fsu_read_file(&b.h, "/tmp/sym", buf, 6), 5);
	cr_expect_str_eq(buf, "hello");
	cr_assert_eq(fsu_stat(&b.h, "/tmp/a/link2", false, &x), 0);
	cr_expect_eq(x.nlink, 2);
	cr_expect_eq(x.size, 4 * P + 5);
	cr_expect_eq(x.blocks, 3 * (P / 512), "two pages are still a hole");
	cr_assert_eq(fsu_stat(&b.h, "/tmp/a/b/file", false, &x), 0);
	cr_assert_eq(vfs_lookup_at(&b.h.t, AT_FDCWD, "/tmp/a/link2", 0, &p), 0);
	cr_assert_eq(p.node->ops->getxattr(p.node, "user.k", val, sizeof(val)), 5);
	cr_expect_eq(memcmp(val, "value", 5), 0);
	vfs_path_put(&p);
	/* The restored pages are the saved ones, at the same memory-file offsets. */
	cr_assert_eq(read_at(fb[F_FILE], page, P, P), P);
	for (size_t i = 0; i < P; i++)
		cr_assert_eq(page[i], 0, "the hole reads zeros");
	cr_assert_eq(read_at(fb[F_FILE], page, P, 3 * P), P);
	cr_expect_eq(page[0], 'w');
	cr_expect_eq(fb[F_FILE]->pos, fa[F_FILE]->pos);
	/* A write through one name shows through the other (one inode). */
	cr_assert_eq(fsu_append(&b.h, "/tmp/a/b/file", "!"), 1);
	cr_assert_eq(fsu_stat(&b.h, "/tmp/a/link2", false, &x), 0);
	cr_expect_eq(x.size, 4 * P + 6);
}

Test(state_fs, files_with_no_name_pipes_and_directories_come_back)
{
	char err[256], buf[32] = { 0 };
	struct vfs_attr x, y;
	struct fsu_entry rest[16];
	struct iovec iov = { buf, sizeof(buf) };

	cr_assert_eq(restore_b(NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(read_at(fb[F_GHOST], buf, sizeof(buf), 0), 5);
	cr_expect_eq(memcmp(buf, "ghost", 5), 0);
	cr_assert_eq(file_getattr(fa[F_GHOST], &x), 0);
	cr_assert_eq(file_getattr(fb[F_GHOST], &y), 0);
	cr_expect_eq(x.ino, y.ino);
	cr_expect_eq(y.nlink, 0);
	cr_assert_eq(read_at(fb[F_OVL_GHOST], buf, sizeof(buf), 0), 13);
	cr_expect_eq(memcmp(buf, "overlay ghost", 13), 0);
	cr_assert_eq(file_getattr(fa[F_OVL_GHOST], &x), 0);
	cr_assert_eq(file_getattr(fb[F_OVL_GHOST], &y), 0);
	cr_expect_eq(x.ino, y.ino, "the overlay's inode number");
	cr_assert_eq(read_at(fb[F_MEMFD], buf, sizeof(buf), 0), 10);
	cr_expect_eq(memcmp(buf, "memfd data", 10), 0);
	cr_expect_eq(tmpfs_file_seals(fb[F_MEMFD]), LINUX_F_SEAL_GROW);
	cr_expect_eq(fb[F_MEMFD]->flags, fa[F_MEMFD]->flags);

	memset(buf, 0, sizeof(buf));
	cr_expect_eq(pipe_nread(fb[F_PIPE_R]), 5);
	cr_assert_eq(fb[F_PIPE_R]->ops->read(fb[F_PIPE_R], &iov, 1, NULL), 5);
	cr_expect_str_eq(buf, "piped");
	cr_expect_eq(pipe_fcntl(&b.h.t, fb[F_PIPE_R], F_GETPIPE_SZ, 0), 128 * 1024);
	/* Both ends are the restored files: closing the writer gives the reader EOF. */
	file_put(fb[F_PIPE_W]);
	fb[F_PIPE_W] = NULL;
	cr_expect_eq(fb[F_PIPE_R]->ops->read(fb[F_PIPE_R], &iov, 1, NULL), 0);

	memset(buf, 0, sizeof(buf));
	cr_assert_eq(fb[F_FIFO]->ops->read(fb[F_FIFO], &iov, 1, NULL), 5);
	cr_expect_str_eq(buf, "fifo!");

	cr_assert_eq(fsu_readdir(fb[F_DIR], rest, 16), dir_nrest);
	for (int i = 0; i < dir_nrest; i++) {
		cr_expect_str_eq(rest[i].name, dir_rest[i].name);
		cr_expect_eq(rest[i].ino, dir_rest[i].ino);
	}
}

/* --- malformed images --- */

static Husk__State__Tmpfs *tmpfs_at(Husk__State__Image *img, const char *mountpoint)
{
	for (size_t i = 0; i < img->fs->n_tmpfs; i++)
		if (img->fs->tmpfs[i]->mountpoint &&
		    !strcmp(img->fs->tmpfs[i]->mountpoint, mountpoint))
			return img->fs->tmpfs[i];
	cr_assert_fail("no tmpfs at %s", mountpoint);
	return NULL;
}

static Husk__State__TmpfsNode *node_id(Husk__State__Tmpfs *t, uint32_t id)
{
	for (size_t i = 0; i < t->n_nodes; i++)
		if (t->nodes[i]->id == id)
			return t->nodes[i];
	cr_assert_fail("no node %u", id);
	return NULL;
}

static void edit_bad_node_id(Husk__State__Image *img)
{
	Husk__State__Tmpfs *t = tmpfs_at(img, "/tmp");

	node_id(t, t->root)->entries[0]->node = 999999;
}

static void edit_cycle(Husk__State__Image *img)
{
	Husk__State__Tmpfs *t = tmpfs_at(img, "/tmp");
	Husk__State__TmpfsNode *root = node_id(t, t->root);

	/* /tmp/a names the root: the root directory would be its own descendant. */
	for (size_t i = 0; i < root->n_entries; i++) {
		Husk__State__TmpfsNode *n = node_id(t, root->entries[i]->node);

		if (S_ISDIR(n->mode) && n->n_entries) {
			n->entries[0]->node = t->root;
			return;
		}
	}
	cr_assert_fail("no subdirectory");
}

static void edit_other_tmpfs_node(Husk__State__Image *img)
{
	Husk__State__Tmpfs *t = tmpfs_at(img, "/tmp"), *u = tmpfs_at(img, "/");

	node_id(t, t->root)->entries[0]->node = u->root;
}

static void edit_range_outside(Husk__State__Image *img)
{
	Husk__State__Tmpfs *t = tmpfs_at(img, "/tmp");

	for (size_t i = 0; i < t->n_nodes; i++) {
		if (t->nodes[i]->n_pages) {
			t->nodes[i]->pages[0]->mem_off = MF_SIZE - P;
			return;
		}
	}
	cr_assert_fail("no file with pages");
}

static void edit_unaligned_range(Husk__State__Image *img)
{
	Husk__State__Tmpfs *t = tmpfs_at(img, "/tmp");

	for (size_t i = 0; i < t->n_nodes; i++) {
		if (t->nodes[i]->n_pages) {
			t->nodes[i]->pages[0]->mem_off += 1;
			return;
		}
	}
}

static void edit_huge_page_index(Husk__State__Image *img)
{
	Husk__State__Tmpfs *t = tmpfs_at(img, "/tmp");

	for (size_t i = 0; i < t->n_nodes; i++) {
		if (t->nodes[i]->n_pages) {
			t->nodes[i]->pages[0]->index = UINT64_MAX - 1;
			return;
		}
	}
}

static void edit_bad_name(Husk__State__Image *img)
{
	Husk__State__Tmpfs *t = tmpfs_at(img, "/tmp");

	node_id(t, t->root)->entries[0]->name[0] = '/';
}

static void edit_bad_mode(Husk__State__Image *img)
{
	Husk__State__Tmpfs *t = tmpfs_at(img, "/tmp");

	node_id(t, node_id(t, t->root)->entries[0]->node)->mode = 0170777;
}

static void edit_bad_mount(Husk__State__Image *img)
{
	tmpfs_at(img, "/tmp")->mount = 77;
}

static void edit_bad_file_kind(Husk__State__Image *img)
{
	img->files[F_FILE]->kind = 99;
}

static void edit_bad_pipe(Husk__State__Image *img)
{
	img->files[F_PIPE_R]->pipe = 42;
}

static void edit_pipe_data_over_cap(Husk__State__Image *img)
{
	img->fs->pipes[0]->cap = 4096;
	img->fs->pipes[0]->segs = NULL;
	img->fs->pipes[0]->n_segs = 0;
	img->fs->pipes[0]->data.len = 8192;
}

static void edit_file_node(Husk__State__Image *img)
{
	img->files[F_GHOST]->node = 0;
}

static void edit_file_path(Husk__State__Image *img)
{
	/* free_unpacked frees each string of the message. */
	free(img->files[F_FILE]->path);
	img->files[F_FILE]->path = strdup("a/../../etc");
}

/* A fresh second sandbox, for another restore. */
static void reset_b(void)
{
	for (int i = 0; i < NFILES; i++) {
		if (fb[i])
			file_put(fb[i]);
		fb[i] = NULL;
	}
	unreserve_b();
	sandbox_fini(&b);
	memfile_destroy(&b.h.k.mf);
	sandbox_init(&b);
	reserve_b();
}

static void expect_refused(void (*edit)(Husk__State__Image *img), const char *what)
{
	char err[256];

	reset_b();

	cr_expect_eq(restore_b(edit, err, sizeof(err)), -EINVAL, "%s: restored", what);
	cr_expect_neq(err[0], 0, "%s: a message", what);
	cr_log_info("%s: %s", what, err);
}

Test(state_fs, malformed_images_are_refused)
{
	expect_refused(edit_bad_node_id, "a bad node id");
}

Test(state_fs, a_cycle_is_refused)
{
	expect_refused(edit_cycle, "a cycle");
}

Test(state_fs, a_node_of_another_tmpfs_is_refused)
{
	expect_refused(edit_other_tmpfs_node, "a node of another tmpfs");
}

Test(state_fs, a_range_outside_the_pages_is_refused)
{
	expect_refused(edit_range_outside, "a range outside the pages");
}

Test(state_fs, bad_ranges_names_modes_and_mounts_are_refused)
{
	expect_refused(edit_unaligned_range, "an unaligned range");
	expect_refused(edit_huge_page_index, "a huge page index");
	expect_refused(edit_bad_name, "a name with a slash");
	expect_refused(edit_bad_mode, "a bad mode");
	expect_refused(edit_bad_mount, "a bad mount");
}

Test(state_fs, bad_files_are_refused)
{
	expect_refused(edit_bad_file_kind, "a bad file kind");
	expect_refused(edit_bad_pipe, "a bad pipe id");
	expect_refused(edit_pipe_data_over_cap, "pipe data over its capacity");
	expect_refused(edit_file_node, "a bad node id in a file");
	expect_refused(edit_file_path, "a path with ..");
}

/* --- host files and what cannot be saved --- */

static int save_one(struct file *f, Husk__State__File *out, char *err, size_t errlen)
{
	struct state_save s = { .k = &a.h.k };
	Husk__State__FsState fs = HUSK__STATE__FS_STATE__INIT;
	int ret;

	husk__state__file__init(out);
	out->id = 1;
	out->flags = f->flags;
	ret = state_fs_save(&s, &fs);
	if (ret == 0)
		ret = state_file_save(&s, f, out);
	snprintf(err, errlen, "%s", s.err);
	state_fs_save_end(&s);
	free(s.ranges.v);
	state_arena_free(&s);
	return ret;
}

Test(state_fs, stdio_host_files_come_back_over_the_same_fd)
{
	struct state_restore r = { .k = &b.h.k };
	Husk__State__FsState fs = HUSK__STATE__FS_STATE__INIT;
	Husk__State__File in;
	struct file *f = hostfile_create(dup(2), O_WRONLY), *g;
	char err[256];

	cr_assert_not_null(f);
	hostfile_set_origin(f, 2);
	cr_assert_eq(save_one(f, &in, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(in.kind, STATE_FILE_HOST);
	cr_expect_eq(in.host_fd, 2);
	cr_assert_eq(state_fs_restore(&r, &fs), 0, "%s", r.err);
	g = state_file_restore(&r, &in);
	cr_assert_not_null(g, "%s", r.err);
	cr_expect_eq(hostfile_origin(g), 2);
	cr_expect_eq(g->flags, in.flags);
	file_put(g);
	in.host_fd = 3;
	cr_expect_null(state_file_restore(&r, &in), "fd 3 is not stdio");
	state_fs_restore_end(&r);
	file_put(f);
}

Test(state_fs, files_that_cannot_be_saved_fail_with_a_message)
{
	Husk__State__File out;
	struct file *f = hostfile_create(dup(2), O_WRONLY);
	char err[256];

	cr_assert_not_null(f);
	cr_expect_eq(save_one(f, &out, err, sizeof(err)), -EOPNOTSUPP);
	cr_expect_str_eq(err, "cannot save host files other than stdio yet");
	file_put(f);
	/* A directory removed while open. */
	cr_assert_eq(vfs_mkdirat(&a.h.t, AT_FDCWD, "/tmp/gonedir", 0755), 0);
	f = open_a("/tmp/gonedir", O_RDONLY | O_DIRECTORY);
	cr_assert_eq(vfs_unlinkat(&a.h.t, AT_FDCWD, "/tmp/gonedir", AT_REMOVEDIR), 0);
	cr_expect_eq(save_one(f, &out, err, sizeof(err)), -EOPNOTSUPP);
	cr_expect_str_eq(err, "cannot save a tmpfs file deleted while open");
	file_put(f);
}
