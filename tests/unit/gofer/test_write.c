/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gofer's write messages (gofer/server.c) through the sentry's client
 * (sentry/fs/gofer/client.c), end to end over a temporary tree, without confinement: each
 * message's effect on the host, hostile names, escapes through symlinks and renames, and EROFS
 * on a read-only server.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "sentry/fs/gofer/client.h"

static char dir[64];
static char outside[64]; /* a directory beside the tree, which nothing may reach */
static pid_t server;
static int raw = -1;
static struct gofer_client *c;
static uint64_t root;
static uint8_t rbuf[GOFER_MSG_MAX];
static struct gofer_rep rep;
static struct gofer_req req;

static void start(bool readonly, uint32_t max_handles)
{
	struct gofer_server_config cfg = { .readonly = readonly, .max_handles = max_handles };
	int sock;

	tree_create(dir);
	snprintf(outside, sizeof(outside), "/tmp/husk-gofer-out.XXXXXX");
	cr_assert_not_null(mkdtemp(outside));
	server = server_start(dir, &cfg, &sock);
	cr_assert_eq(gofer_client_create(sock, &c), 0);
	cr_assert_eq(gofer_mount(c, &root, NULL), 0);
}

static void start_rw(void)
{
	start(false, 0);
}

static void start_ro(void)
{
	start(true, 0);
}

/* Two handles: the root and one more. */
static void start_rw_limited(void)
{
	start(false, 2);
}

/* The server inherits this umask: it must play no part in new nodes' modes. */
static void start_rw_umask(void)
{
	mode_t old = umask(077);

	start(false, 0);
	umask(old);
}

static void finish(void)
{
	if (c)
		gofer_client_destroy(c);
	if (raw >= 0)
		close(raw);
	c = NULL;
	raw = -1;
	cr_assert_eq(child_wait(server), 0, "the server did not exit 0 when the peer closed");
	tree_remove(dir);
	tree_remove(outside);
}

/* Raw tests talk to a server of their own, without a client. */
static void start_raw(bool readonly)
{
	struct gofer_server_config cfg = { .readonly = readonly };

	tree_create(dir);
	snprintf(outside, sizeof(outside), "/tmp/husk-gofer-out.XXXXXX");
	cr_assert_not_null(mkdtemp(outside));
	server = server_start(dir, &cfg, &raw);
	req = (struct gofer_req){ .type = GOFER_MSG_MOUNT, .tag = 1 };
	req.mount.version = GOFER_PROTO_VERSION;
	cr_assert_eq(raw_req(raw, &req, rbuf, &rep, NULL), 0);
	root = rep.mount.root;
}

static void start_raw_rw(void)
{
	start_raw(false);
}

static void start_raw_ro(void)
{
	start_raw(true);
}

static int host_lstat(const char *rel, struct stat *st)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	return lstat(path, st) < 0 ? -errno : 0;
}

static void host_path(char *buf, size_t len, const char *rel)
{
	snprintf(buf, len, "%s/%s", dir, rel);
}

static uint64_t walk1(uint64_t from, const char *name, struct gofer_attr *attr)
{
	uint64_t h;

	cr_assert_eq(gofer_walk(c, from, &name, 1, &h, attr), 1, "walking %s", name);
	return h;
}

static int entries_in(const char *path)
{
	char cmd[128];
	int n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "ls -A %s | wc -l", path);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	cr_assert_eq(fscanf(f, "%d", &n), 1);
	pclose(f);
	return n;
}

TestSuite(gofer_write, .init = start_rw, .fini = finish);
TestSuite(gofer_write_ro, .init = start_ro, .fini = finish);
TestSuite(gofer_write_raw, .init = start_raw_rw, .fini = finish);
TestSuite(gofer_write_raw_ro, .init = start_raw_ro, .fini = finish);

Test(gofer_write, create_makes_a_file_with_the_asked_owner_and_mode_and_donates_an_fd)
{
	struct gofer_attr attr, again;
	struct stat st;
	uint64_t h;
	int fd;

	fd = gofer_create(c, root, "new", O_RDWR, 0640, 1234, 5678, &h, &attr);
	cr_assert_geq(fd, 0, "create: %s", strerror(-fd));
	cr_assert_eq(write(fd, "data", 4), 4);
	cr_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	cr_assert_eq(host_lstat("new", &st), 0);
	cr_assert_eq(st.st_mode, S_IFREG | 0640);
	cr_assert_eq(st.st_uid, 1234);
	cr_assert_eq(st.st_gid, 5678);
	cr_assert_eq(st.st_size, 4);
	cr_assert_eq(attr.ino, st.st_ino);
	cr_assert_eq(attr.mode, S_IFREG | 0640);
	cr_assert_eq(attr.uid, 1234);
	cr_assert_eq(gofer_stat(c, h, &again), 0);
	cr_assert_eq(again.size, 4);
}

Test(gofer_write, create_with_mode_0_still_opens_for_writing)
{
	struct stat st;
	int fd;

	fd = gofer_create(c, root, "locked", O_WRONLY | O_CREAT | O_EXCL, 0, 1000, 1000, NULL,
			  NULL);
	cr_assert_geq(fd, 0, "create: %s", strerror(-fd));
	cr_assert_eq(write(fd, "x", 1), 1);
	close(fd);
	cr_assert_eq(host_lstat("locked", &st), 0);
	cr_assert_eq(st.st_mode, S_IFREG);
	cr_assert_eq(st.st_size, 1);
}

Test(gofer_write, create_is_exclusive_and_never_follows_a_symlink)
{
	char path[256], target[128];
	struct stat st;

	cr_assert_eq(gofer_create(c, root, "file", O_RDWR, 0644, 0, 0, NULL, NULL), -EEXIST);
	cr_assert_eq(gofer_create(c, root, "sub", O_RDWR, 0644, 0, 0, NULL, NULL), -EEXIST);
	/* A dangling symlink pointing out of the tree: creating over it must not create its
	 * target. */
	snprintf(target, sizeof(target), "%s/escaped", outside);
	host_path(path, sizeof(path), "dangling");
	cr_assert_eq(symlink(target, path), 0);
	cr_assert_eq(gofer_create(c, root, "dangling", O_RDWR, 0644, 0, 0, NULL, NULL), -EEXIST);
	cr_assert_eq(stat(target, &st), -1);
	cr_assert_eq(entries_in(outside), 0);
}

Test(gofer_write, create_in_a_non_directory_is_enotdir)
{
	uint64_t file = walk1(root, "file", NULL);

	cr_assert_eq(gofer_create(c, file, "x", O_RDWR, 0644, 0, 0, NULL, NULL), -ENOTDIR);
	cr_assert_eq(gofer_mkdir(c, file, "x", 0755, 0, 0, NULL, NULL), -ENOTDIR);
	cr_assert_eq(gofer_create(c, 0x7777, "x", O_RDWR, 0644, 0, 0, NULL, NULL), -EBADF);
}

Test(gofer_write, create_rejects_flags_it_does_not_know)
{
	cr_assert_eq(gofer_create(c, root, "x", O_RDWR | O_DIRECTORY, 0644, 0, 0, NULL, NULL),
		     -EINVAL);
	cr_assert_eq(gofer_create(c, root, "x", O_RDWR | O_PATH, 0644, 0, 0, NULL, NULL), -EINVAL);
	cr_assert_eq(gofer_create(c, root, "x", O_ACCMODE, 0644, 0, 0, NULL, NULL), -EINVAL);
	cr_assert_eq(gofer_create(c, root, "x", O_RDWR, 010644, 0, 0, NULL, NULL), -EINVAL);
	cr_assert_eq(gofer_create(c, root, "x", O_RDWR, 0644, UINT32_MAX, 0, NULL, NULL), -EINVAL);
}

Test(gofer_write_umask, new_nodes_ignore_the_gofer_umask_and_a_setgid_parent,
     .init = start_rw_umask, .fini = finish)
{
	char path[256];
	struct stat st;
	uint64_t sub = walk1(root, "sub", NULL);
	int fd;

	host_path(path, sizeof(path), "sub");
	cr_assert_eq(chmod(path, 02775), 0);
	fd = gofer_create(c, sub, "f", O_RDONLY, 0666, 10, 20, NULL, NULL);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(host_lstat("sub/f", &st), 0);
	cr_assert_eq(st.st_mode, S_IFREG | 0666);
	cr_assert_eq(st.st_gid, 20);
	/* The host would make it 02755 in a setgid directory: the sentry decides that. */
	cr_assert_eq(gofer_mkdir(c, sub, "d", 0755, 10, 20, NULL, NULL), 0);
	cr_assert_eq(host_lstat("sub/d", &st), 0);
	cr_assert_eq(st.st_mode, S_IFDIR | 0755);
	cr_assert_eq(gofer_mkdir(c, sub, "s", 02775, 10, 20, NULL, NULL), 0);
	cr_assert_eq(host_lstat("sub/s", &st), 0);
	cr_assert_eq(st.st_mode, S_IFDIR | 02775);
}

Test(gofer_write, mkdir_makes_a_directory_with_owner_and_mode)
{
	struct gofer_attr attr;
	struct stat st;
	uint64_t h, inner;

	cr_assert_eq(gofer_mkdir(c, root, "d", 0700, 42, 43, &h, &attr), 0);
	cr_assert(S_ISDIR(attr.mode));
	cr_assert_eq(host_lstat("d", &st), 0);
	cr_assert_eq(st.st_mode, S_IFDIR | 0700);
	cr_assert_eq(st.st_uid, 42);
	cr_assert_eq(st.st_gid, 43);
	cr_assert_eq(st.st_ino, attr.ino);
	/* The new handle is a usable directory. */
	cr_assert_eq(gofer_mkdir(c, h, "e", 0755, 0, 0, &inner, NULL), 0);
	cr_assert_eq(host_lstat("d/e", &st), 0);
	cr_assert_eq(gofer_mkdir(c, root, "d", 0700, 0, 0, NULL, NULL), -EEXIST);
}

Test(gofer_write, mknod_makes_fifos_and_sockets_and_nothing_else)
{
	struct gofer_attr attr;
	struct stat st;

	cr_assert_eq(gofer_mknod(c, root, "p", S_IFIFO | 0620, 7, 8, NULL, &attr), 0);
	cr_assert(S_ISFIFO(attr.mode));
	cr_assert_eq(host_lstat("p", &st), 0);
	cr_assert_eq(st.st_mode, S_IFIFO | 0620);
	cr_assert_eq(st.st_uid, 7);
	cr_assert_eq(gofer_mknod(c, root, "s", S_IFSOCK | 0755, 7, 8, NULL, NULL), 0);
	cr_assert_eq(host_lstat("s", &st), 0);
	cr_assert(S_ISSOCK(st.st_mode));
	cr_assert_eq(gofer_mknod(c, root, "chr", S_IFCHR | 0666, 0, 0, NULL, NULL), -EPERM);
	cr_assert_eq(gofer_mknod(c, root, "blk", S_IFBLK | 0666, 0, 0, NULL, NULL), -EPERM);
	cr_assert_eq(gofer_mknod(c, root, "reg", S_IFREG | 0666, 0, 0, NULL, NULL), -EPERM);
	cr_assert_eq(host_lstat("chr", &st), -ENOENT);
	cr_assert_eq(host_lstat("blk", &st), -ENOENT);
	cr_assert_eq(host_lstat("reg", &st), -ENOENT);
}

Test(gofer_write, symlink_stores_the_target_as_given)
{
	struct gofer_attr attr;
	char buf[64], path[256];
	struct stat st;
	uint64_t h;
	ssize_t n;

	cr_assert_eq(gofer_symlink(c, root, "l", "../../etc/shadow", 3, 4, &h, &attr), 0);
	cr_assert(S_ISLNK(attr.mode));
	host_path(path, sizeof(path), "l");
	n = readlink(path, buf, sizeof(buf));
	cr_assert_eq(n, 16);
	cr_assert_eq(memcmp(buf, "../../etc/shadow", 16), 0);
	cr_assert_eq(lstat(path, &st), 0);
	cr_assert_eq(st.st_uid, 3);
	cr_assert_eq(st.st_gid, 4);
	cr_assert_eq(gofer_readlink(c, h, buf, sizeof(buf)), 16);
	cr_assert_eq(gofer_symlink(c, root, "l", "x", 0, 0, NULL, NULL), -EEXIST);
	cr_assert_eq(gofer_symlink(c, root, "m", "", 0, 0, NULL, NULL), -ENOENT);
}

Test(gofer_write, link_makes_a_hard_link_and_links_a_symlink_itself)
{
	struct gofer_attr attr;
	struct stat st, orig;

	cr_assert_eq(gofer_link(c, root, "file", root, "file2", NULL, &attr), 0);
	cr_assert_eq(host_lstat("file", &orig), 0);
	cr_assert_eq(host_lstat("file2", &st), 0);
	cr_assert_eq(st.st_ino, orig.st_ino);
	cr_assert_eq(st.st_nlink, 2);
	cr_assert_eq(attr.nlink, 2);
	/* passwd_link -> /etc/passwd: the new name is another link to the symlink. */
	cr_assert_eq(gofer_link(c, root, "passwd_link", root, "pl2", NULL, &attr), 0);
	cr_assert(S_ISLNK(attr.mode));
	cr_assert_eq(host_lstat("pl2", &st), 0);
	cr_assert(S_ISLNK(st.st_mode));
	cr_assert_eq(gofer_link(c, root, "sub", root, "sub2", NULL, NULL), -EPERM);
	cr_assert_eq(gofer_link(c, root, "nope", root, "x", NULL, NULL), -ENOENT);
	cr_assert_eq(gofer_link(c, root, "file", root, "many", NULL, NULL), -EEXIST);
}

Test(gofer_write, unlink_removes_names_and_handles_stay_valid)
{
	struct gofer_attr attr;
	struct stat st;
	uint64_t file = walk1(root, "file", NULL);
	char buf[16];
	int fd;

	cr_assert_eq(gofer_unlink(c, root, "file", 0), 0);
	cr_assert_eq(host_lstat("file", &st), -ENOENT);
	cr_assert_eq(gofer_stat(c, file, &attr), 0);
	cr_assert_eq(attr.nlink, 0);
	fd = gofer_open(c, file, O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(read(fd, buf, 5), 5);
	close(fd);

	cr_assert_eq(gofer_unlink(c, root, "sub", 0), -EISDIR);
	cr_assert_eq(gofer_unlink(c, root, "a", GOFER_UNLINK_REMOVEDIR), -ENOTEMPTY);
	cr_assert_eq(gofer_unlink(c, root, "passwd_link", GOFER_UNLINK_REMOVEDIR), -ENOTDIR);
	cr_assert_eq(gofer_unlink(c, root, "sub", GOFER_UNLINK_REMOVEDIR), 0);
	cr_assert_eq(host_lstat("sub", &st), -ENOENT);
	cr_assert_eq(gofer_unlink(c, root, "sub", 0), -ENOENT);
	cr_assert_eq(gofer_unlink(c, root, "x", 0x100), -EINVAL);
}

Test(gofer_write, unlink_of_a_symlink_leaves_its_target)
{
	char path[256], target[128];
	struct stat st;

	snprintf(target, sizeof(target), "%s/victim", outside);
	cr_assert_eq(close(open(target, O_CREAT | O_WRONLY, 0644)), 0);
	host_path(path, sizeof(path), "out");
	cr_assert_eq(symlink(target, path), 0);
	cr_assert_eq(gofer_unlink(c, root, "out", 0), 0);
	cr_assert_eq(stat(target, &st), 0);
	cr_assert_eq(host_lstat("out", &st), -ENOENT);
}

Test(gofer_write, rename_moves_a_node_and_its_handle_follows)
{
	struct gofer_attr attr;
	struct stat st;
	uint64_t file = walk1(root, "file", NULL), sub = walk1(root, "sub", NULL);
	char buf[16] = { 0 };
	int fd;

	cr_assert_eq(gofer_rename(c, root, "file", sub, "moved", 0), 0);
	cr_assert_eq(host_lstat("file", &st), -ENOENT);
	cr_assert_eq(host_lstat("sub/moved", &st), 0);
	cr_assert_eq(gofer_stat(c, file, &attr), 0);
	cr_assert_eq(attr.ino, st.st_ino);
	fd = gofer_open(c, file, O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(read(fd, buf, 11), 11);
	cr_assert_str_eq(buf, "hello gofer");
	close(fd);
	/* A file over a directory, a directory over a non-empty one: as rename(2). */
	cr_assert_eq(gofer_rename(c, sub, "moved", root, "many", 0), -EISDIR);
	cr_assert_eq(gofer_rename(c, root, "a", root, "sub", 0), -ENOTEMPTY);
}

Test(gofer_write, rename_noreplace_and_exchange)
{
	struct stat f, abc, st;
	uint64_t a = walk1(root, "a", NULL);
	uint64_t b = walk1(a, "b", NULL);

	cr_assert_eq(host_lstat("file", &f), 0);
	cr_assert_eq(host_lstat("a/b/c", &abc), 0);
	cr_assert_eq(gofer_rename(c, root, "file", b, "c", GOFER_RENAME_NOREPLACE), -EEXIST);
	cr_assert_eq(gofer_rename(c, root, "file", b, "c", GOFER_RENAME_EXCHANGE), 0);
	cr_assert_eq(host_lstat("file", &st), 0);
	cr_assert_eq(st.st_ino, abc.st_ino);
	cr_assert_eq(host_lstat("a/b/c", &st), 0);
	cr_assert_eq(st.st_ino, f.st_ino);
	cr_assert_eq(gofer_rename(c, root, "file", root, "nope", GOFER_RENAME_EXCHANGE), -ENOENT);
	cr_assert_eq(gofer_rename(c, root, "file", root, "nope", 4 /* RENAME_WHITEOUT */), -EINVAL);
	cr_assert_eq(gofer_rename(c, root, "file", root, "nope",
				  GOFER_RENAME_NOREPLACE | GOFER_RENAME_EXCHANGE),
		     -EINVAL);
	cr_assert_eq(host_lstat("nope", &st), -ENOENT);
}

Test(gofer_write, rename_cannot_put_a_directory_inside_itself)
{
	uint64_t a = walk1(root, "a", NULL);
	uint64_t b = walk1(a, "b", NULL);
	struct stat st;

	cr_assert_eq(gofer_rename(c, root, "a", b, "x", 0), -EINVAL);
	cr_assert_eq(host_lstat("a/b/c", &st), 0);
}

Test(gofer_write, a_handle_of_a_symlink_to_outside_is_no_directory)
{
	char path[256];
	uint64_t esc;

	host_path(path, sizeof(path), "esc");
	cr_assert_eq(symlink(outside, path), 0);
	esc = walk1(root, "esc", NULL);
	cr_assert_eq(gofer_mkdir(c, esc, "x", 0755, 0, 0, NULL, NULL), -ENOTDIR);
	cr_assert_eq(gofer_create(c, esc, "x", O_RDWR, 0644, 0, 0, NULL, NULL), -ENOTDIR);
	cr_assert_eq(gofer_symlink(c, esc, "x", "y", 0, 0, NULL, NULL), -ENOTDIR);
	cr_assert_eq(gofer_mknod(c, esc, "x", S_IFIFO | 0644, 0, 0, NULL, NULL), -ENOTDIR);
	cr_assert_eq(gofer_link(c, root, "file", esc, "x", NULL, NULL), -ENOTDIR);
	cr_assert_eq(gofer_rename(c, root, "file", esc, "x", 0), -ENOTDIR);
	cr_assert_eq(gofer_unlink(c, esc, "x", 0), -ENOTDIR);
	/* Renaming the symlink moves the link, never what it points to. */
	cr_assert_eq(gofer_rename(c, root, "esc", root, "esc2", 0), 0);
	cr_assert_eq(entries_in(outside), 0);
}

Test(gofer_write, hostile_names_are_refused_before_anything_is_sent)
{
	static const char *const bad[] = { "..", ".", "", "a/b", "/etc" };
	char longname[300];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(gofer_create(c, root, bad[i], O_RDWR, 0644, 0, 0, NULL, NULL), -EINVAL,
			     "%s", bad[i]);
		cr_assert_eq(gofer_mkdir(c, root, bad[i], 0755, 0, 0, NULL, NULL), -EINVAL);
		cr_assert_eq(gofer_symlink(c, root, bad[i], "x", 0, 0, NULL, NULL), -EINVAL);
		cr_assert_eq(gofer_unlink(c, root, bad[i], 0), -EINVAL);
		cr_assert_eq(gofer_rename(c, root, "file", root, bad[i], 0), -EINVAL);
		cr_assert_eq(gofer_rename(c, root, bad[i], root, "x", 0), -EINVAL);
		cr_assert_eq(gofer_link(c, root, bad[i], root, "x", NULL, NULL), -EINVAL);
	}
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	cr_assert_eq(gofer_mkdir(c, root, longname, 0755, 0, 0, NULL, NULL), -ENAMETOOLONG);
	cr_assert_eq(entries_in(outside), 0);
}

Test(gofer_write, setstat_changes_owner_then_mode_so_set_id_bits_stay)
{
	struct gofer_setstat st = { .mask = GOFER_SETSTAT_MODE | GOFER_SETSTAT_UID |
					    GOFER_SETSTAT_GID,
				    .mode = 06755,
				    .uid = 500,
				    .gid = 600 };
	uint64_t file = walk1(root, "file", NULL);
	struct gofer_attr attr;
	struct stat hst;

	cr_assert_eq(gofer_setstat(c, file, &st, &attr), 0);
	cr_assert_eq(host_lstat("file", &hst), 0);
	cr_assert_eq(hst.st_mode, S_IFREG | 06755);
	cr_assert_eq(hst.st_uid, 500);
	cr_assert_eq(hst.st_gid, 600);
	cr_assert_eq(attr.mode, S_IFREG | 06755);
	/* Only the gid: the uid stays. */
	st = (struct gofer_setstat){ .mask = GOFER_SETSTAT_GID, .gid = 700 };
	cr_assert_eq(gofer_setstat(c, file, &st, NULL), 0);
	cr_assert_eq(host_lstat("file", &hst), 0);
	cr_assert_eq(hst.st_uid, 500);
	cr_assert_eq(hst.st_gid, 700);
}

Test(gofer_write, setstat_truncates_regular_files_only)
{
	struct gofer_setstat st = { .mask = GOFER_SETSTAT_SIZE, .size = 3 };
	uint64_t file = walk1(root, "file", NULL);
	uint64_t fifo = walk1(root, "fifo", NULL);
	uint64_t sub = walk1(root, "sub", NULL);
	struct gofer_attr attr;
	struct stat hst;

	cr_assert_eq(gofer_setstat(c, file, &st, &attr), 0);
	cr_assert_eq(attr.size, 3);
	cr_assert_eq(host_lstat("file", &hst), 0);
	cr_assert_eq(hst.st_size, 3);
	st.size = 1 << 20;
	cr_assert_eq(gofer_setstat(c, file, &st, &attr), 0);
	cr_assert_eq(attr.size, 1 << 20);
	cr_assert_eq(gofer_setstat(c, sub, &st, NULL), -EISDIR);
	/* A FIFO would block the gofer if it were opened: refused before. */
	cr_assert_eq(gofer_setstat(c, fifo, &st, NULL), -EINVAL);
}

Test(gofer_write, setstat_sets_times_with_utime_now_and_omit)
{
	struct gofer_setstat st = { .mask = GOFER_SETSTAT_ATIME | GOFER_SETSTAT_MTIME,
				    .atime_sec = 100,
				    .atime_nsec = 5,
				    .mtime_sec = 200,
				    .mtime_nsec = 7 };
	uint64_t file = walk1(root, "file", NULL);
	struct stat hst;
	time_t before;

	cr_assert_eq(gofer_setstat(c, file, &st, NULL), 0);
	cr_assert_eq(host_lstat("file", &hst), 0);
	cr_assert_eq(hst.st_atim.tv_sec, 100);
	cr_assert_eq(hst.st_atim.tv_nsec, 5);
	cr_assert_eq(hst.st_mtim.tv_sec, 200);
	cr_assert_eq(hst.st_mtim.tv_nsec, 7);
	/* mtime now, atime omitted (either way). */
	before = time(NULL);
	st = (struct gofer_setstat){ .mask = GOFER_SETSTAT_ATIME | GOFER_SETSTAT_MTIME,
				     .atime_sec = 999,
				     .atime_nsec = GOFER_UTIME_OMIT,
				     .mtime_nsec = GOFER_UTIME_NOW };
	cr_assert_eq(gofer_setstat(c, file, &st, NULL), 0);
	cr_assert_eq(host_lstat("file", &hst), 0);
	cr_assert_eq(hst.st_atim.tv_sec, 100);
	cr_assert_geq(hst.st_mtim.tv_sec, before);
	st = (struct gofer_setstat){ .mask = GOFER_SETSTAT_MTIME, .atime_sec = 1, .mtime_sec = 3 };
	cr_assert_eq(gofer_setstat(c, file, &st, NULL), 0);
	cr_assert_eq(host_lstat("file", &hst), 0);
	cr_assert_eq(hst.st_atim.tv_sec, 100);
	cr_assert_eq(hst.st_mtim.tv_sec, 3);
}

Test(gofer_write, setstat_of_a_symlink_changes_the_link_itself)
{
	struct gofer_setstat st = { .mask = GOFER_SETSTAT_UID | GOFER_SETSTAT_MTIME,
				    .uid = 77,
				    .mtime_sec = 1234 };
	char path[256], target[128];
	struct stat hst, tst;
	uint64_t l;

	snprintf(target, sizeof(target), "%s/victim", outside);
	cr_assert_eq(close(open(target, O_CREAT | O_WRONLY, 0644)), 0);
	host_path(path, sizeof(path), "out");
	cr_assert_eq(symlink(target, path), 0);
	l = walk1(root, "out", NULL);
	cr_assert_eq(gofer_setstat(c, l, &st, NULL), 0);
	cr_assert_eq(lstat(path, &hst), 0);
	cr_assert_eq(hst.st_uid, 77);
	cr_assert_eq(hst.st_mtim.tv_sec, 1234);
	cr_assert_eq(stat(target, &tst), 0);
	cr_assert_eq(tst.st_uid, 0);
	cr_assert_neq(tst.st_mtim.tv_sec, 1234);
	st = (struct gofer_setstat){ .mask = GOFER_SETSTAT_MODE, .mode = 0777 };
	cr_assert_eq(gofer_setstat(c, l, &st, NULL), -EOPNOTSUPP);
	st.mask = GOFER_SETSTAT_SIZE;
	cr_assert_eq(gofer_setstat(c, l, &st, NULL), -EINVAL);
	cr_assert_eq(stat(target, &tst), 0);
	cr_assert_eq(tst.st_mode, S_IFREG | 0644);
}

Test(gofer_write, setstat_refuses_invalid_fields)
{
	uint64_t file = walk1(root, "file", NULL);
	const struct gofer_setstat bad[] = {
		{ .mask = 0x40 },
		{ .mask = GOFER_SETSTAT_MODE, .mode = 010000 },
		{ .mask = GOFER_SETSTAT_UID, .uid = UINT32_MAX },
		{ .mask = GOFER_SETSTAT_GID, .gid = UINT32_MAX },
		{ .mask = GOFER_SETSTAT_SIZE, .size = -1 },
		{ .mask = GOFER_SETSTAT_ATIME, .atime_nsec = 1000000000 },
	};
	struct stat before, after;

	cr_assert_eq(host_lstat("file", &before), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(gofer_setstat(c, file, &bad[i], NULL), -EINVAL, "case %zu", i);
	cr_assert_eq(host_lstat("file", &after), 0);
	cr_assert_eq(after.st_ctim.tv_nsec, before.st_ctim.tv_nsec);
	cr_assert_eq(after.st_ctim.tv_sec, before.st_ctim.tv_sec);
}

Test(gofer_write_limited, walk_stat_gives_attributes_without_handles, .init = start_rw_limited,
     .fini = finish)
{
	static const char *const abc[] = { "a", "b", "c" };
	static const char *const missing[] = { "a", "nope", "x" };
	static const char *const through_file[] = { "file", "x" };
	static const char *const link[] = { "up_link", "x" };
	struct gofer_attr attrs[3];
	struct stat st;
	uint64_t h[3];

	/* The limit (2) leaves one handle: walking 3 names is ENFILE, WALKSTAT is fine. */
	cr_assert_eq(gofer_walk(c, root, abc, 3, h, NULL), -ENFILE);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(gofer_walk_stat(c, root, abc, 3, attrs), 3);
	cr_assert_eq(host_lstat("a/b/c", &st), 0);
	cr_assert_eq(attrs[2].ino, st.st_ino);
	cr_assert_eq(attrs[2].size, 5);
	cr_assert(S_ISDIR(attrs[0].mode));
	cr_assert_eq(gofer_walk_stat(c, root, missing, 3, attrs), 1);
	cr_assert_eq(gofer_walk_stat(c, root, through_file, 2, attrs), -ENOTDIR);
	cr_assert_eq(gofer_walk_stat(c, root, link, 2, attrs), 1);
	cr_assert(S_ISLNK(attrs[0].mode));
	cr_assert_eq(gofer_walk_stat(c, root, abc, 65, attrs), -EINVAL);
}

Test(gofer_write_limited, new_handles_can_be_declined, .init = start_rw_limited, .fini = finish)
{
	char name[8];
	uint64_t h;
	int fd;

	/* With room for one handle besides the root, each node made without keeping its
	 * handle must give it back. */
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		fd = gofer_create(c, root, name, O_RDONLY, 0644, 0, 0, NULL, NULL);
		cr_assert_geq(fd, 0, "create %d: %s", i, strerror(-fd));
		close(fd);
		snprintf(name, sizeof(name), "d%d", i);
		cr_assert_eq(gofer_mkdir(c, root, name, 0755, 0, 0, NULL, NULL), 0);
	}
	cr_assert_eq(gofer_mkdir(c, root, "kept", 0755, 0, 0, &h, NULL), 0);
	/* Now full: the next node cannot get a handle, and is then not left behind. */
	cr_assert_eq(gofer_mkdir(c, root, "over", 0755, 0, 0, NULL, NULL), -ENFILE);
	cr_assert_eq(gofer_create(c, root, "overf", O_RDWR, 0644, 0, 0, NULL, NULL), -ENFILE);
	cr_assert_eq(gofer_symlink(c, root, "overl", "x", 0, 0, NULL, NULL), -ENFILE);
	{
		struct stat st;

		cr_assert_eq(host_lstat("over", &st), -ENOENT);
		cr_assert_eq(host_lstat("overf", &st), -ENOENT);
		cr_assert_eq(host_lstat("overl", &st), -ENOENT);
	}
}

Test(gofer_write, fsync_flushes_files_and_directories)
{
	uint64_t file = walk1(root, "file", NULL);
	uint64_t fifo = walk1(root, "fifo", NULL);
	uint64_t link = walk1(root, "up_link", NULL);

	cr_assert_eq(gofer_fsync(c, file, false), 0);
	cr_assert_eq(gofer_fsync(c, file, true), 0);
	cr_assert_eq(gofer_fsync(c, root, false), 0);
	cr_assert_eq(gofer_fsync(c, fifo, false), -EINVAL);
	cr_assert_eq(gofer_fsync(c, link, false), -EINVAL);
	cr_assert_eq(gofer_fsync(c, 0x9999, false), -EBADF);
}

Test(gofer_write, user_xattrs_are_set_read_listed_and_removed)
{
	uint64_t file = walk1(root, "file", NULL);
	char path[256], buf[64];
	ssize_t n;

	cr_assert_eq(gofer_setxattr(c, file, "user.test", "value", 5, 0), 0);
	host_path(path, sizeof(path), "file");
	cr_assert_eq(getxattr(path, "user.test", buf, sizeof(buf)), 5);
	cr_assert_eq(memcmp(buf, "value", 5), 0);
	cr_assert_eq(gofer_getxattr(c, file, "user.test", NULL, 0), 5);
	cr_assert_eq(gofer_getxattr(c, file, "user.test", buf, sizeof(buf)), 5);
	cr_assert_eq(memcmp(buf, "value", 5), 0);
	cr_assert_eq(gofer_getxattr(c, file, "user.test", buf, 2), -ERANGE);
	cr_assert_eq(gofer_setxattr(c, file, "user.test", "v", 1, GOFER_XATTR_CREATE), -EEXIST);
	cr_assert_eq(gofer_setxattr(c, file, "user.new", "v", 1, GOFER_XATTR_REPLACE), -ENODATA);
	cr_assert_eq(gofer_setxattr(c, file, "user.empty", "", 0, 0), 0);
	cr_assert_eq(gofer_getxattr(c, file, "user.empty", buf, sizeof(buf)), 0);
	n = gofer_listxattr(c, file, buf, sizeof(buf));
	cr_assert_eq(n, (ssize_t)sizeof("user.test") + (ssize_t)sizeof("user.empty"));
	cr_assert_eq(gofer_listxattr(c, file, NULL, 0), n);
	cr_assert_eq(gofer_listxattr(c, file, buf, 3), -ERANGE);
	cr_assert_eq(gofer_removexattr(c, file, "user.test"), 0);
	cr_assert_eq(gofer_getxattr(c, file, "user.test", buf, sizeof(buf)), -ENODATA);
	cr_assert_eq(gofer_removexattr(c, file, "user.test"), -ENODATA);
	cr_assert_eq(getxattr(path, "user.test", buf, sizeof(buf)), -1);
	/* Directories too. */
	cr_assert_eq(gofer_setxattr(c, root, "user.d", "1", 1, 0), 0);
	cr_assert_eq(gofer_getxattr(c, root, "user.d", buf, sizeof(buf)), 1);
}

Test(gofer_write, xattrs_outside_user_are_hidden_or_refused)
{
	uint64_t file = walk1(root, "file", NULL);
	uint64_t link = walk1(root, "passwd_link", NULL);
	uint64_t fifo = walk1(root, "fifo", NULL);
	char path[256], buf[256];
	char longname[300];

	host_path(path, sizeof(path), "file");
	/* The test runs as root: a trusted.* name the gofer must not show. */
	if (setxattr(path, "trusted.secret", "s", 1, 0) == 0) {
		cr_assert_eq(gofer_getxattr(c, file, "trusted.secret", buf, sizeof(buf)), -ENODATA);
		cr_assert_eq(gofer_listxattr(c, file, buf, sizeof(buf)), 0);
		cr_assert_eq(gofer_removexattr(c, file, "trusted.secret"), -EPERM);
		cr_assert_eq(getxattr(path, "trusted.secret", buf, sizeof(buf)), 1);
	}
	cr_assert_eq(gofer_setxattr(c, file, "trusted.overlay.opaque", "y", 1, 0), -EPERM);
	cr_assert_eq(gofer_setxattr(c, file, "security.capability", "x", 1, 0), -EPERM);
	cr_assert_eq(gofer_setxattr(c, file, "system.posix_acl_access", "x", 1, 0), -EPERM);
	cr_assert_eq(gofer_getxattr(c, file, "security.selinux", buf, sizeof(buf)), -ENODATA);
	cr_assert_eq(gofer_getxattr(c, file, "security.capability", buf, sizeof(buf)), -ENODATA);
	cr_assert_eq(gofer_setxattr(c, file, "other.x", "x", 1, 0), -EOPNOTSUPP);
	cr_assert_eq(gofer_getxattr(c, file, "nonamespace", buf, sizeof(buf)), -EOPNOTSUPP);
	cr_assert_eq(gofer_setxattr(c, file, "user.", "x", 1, 0), -EINVAL);
	cr_assert_eq(gofer_setxattr(c, file, "", "x", 1, 0), -ERANGE);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	memcpy(longname, "user.", 5);
	cr_assert_eq(gofer_setxattr(c, file, longname, "x", 1, 0), -ERANGE);
	cr_assert_eq(gofer_setxattr(c, file, "user.big", buf, GOFER_XATTR_SIZE_MAX + 1, 0), -E2BIG);
	/* Only regular files and directories carry user.* (as Linux). */
	cr_assert_eq(gofer_setxattr(c, link, "user.x", "x", 1, 0), -EPERM);
	cr_assert_eq(gofer_getxattr(c, link, "user.x", buf, sizeof(buf)), -ENODATA);
	cr_assert_eq(gofer_setxattr(c, fifo, "user.x", "x", 1, 0), -EPERM);
	cr_assert_eq(gofer_listxattr(c, fifo, buf, sizeof(buf)), 0);
}

Test(gofer_write_ro, every_write_is_erofs_and_the_tree_is_unchanged)
{
	const struct gofer_setstat st = { .mask = GOFER_SETSTAT_MODE, .mode = 0777 };
	uint64_t file = walk1(root, "file", NULL);
	struct stat before, after;
	char buf[16];

	cr_assert_eq(host_lstat("file", &before), 0);
	cr_assert_eq(gofer_create(c, root, "x", O_RDWR, 0644, 0, 0, NULL, NULL), -EROFS);
	cr_assert_eq(gofer_mkdir(c, root, "x", 0755, 0, 0, NULL, NULL), -EROFS);
	cr_assert_eq(gofer_mknod(c, root, "x", S_IFIFO | 0644, 0, 0, NULL, NULL), -EROFS);
	cr_assert_eq(gofer_symlink(c, root, "x", "y", 0, 0, NULL, NULL), -EROFS);
	cr_assert_eq(gofer_link(c, root, "file", root, "x", NULL, NULL), -EROFS);
	cr_assert_eq(gofer_unlink(c, root, "file", 0), -EROFS);
	cr_assert_eq(gofer_rename(c, root, "file", root, "x", 0), -EROFS);
	cr_assert_eq(gofer_setstat(c, file, &st, NULL), -EROFS);
	cr_assert_eq(gofer_setxattr(c, file, "user.x", "x", 1, 0), -EROFS);
	cr_assert_eq(gofer_removexattr(c, file, "user.x"), -EROFS);
	/* Before looking at the handle, even. */
	cr_assert_eq(gofer_unlink(c, 0xdead, "file", 0), -EROFS);
	cr_assert_eq(gofer_setstat(c, 0xdead, &st, NULL), -EROFS);
	/* Reading is still fine. */
	cr_assert_eq(gofer_fsync(c, file, false), 0);
	cr_assert_eq(gofer_listxattr(c, file, buf, sizeof(buf)), 0);
	cr_assert_eq(host_lstat("file", &after), 0);
	cr_assert_eq(after.st_mode, before.st_mode);
	cr_assert_eq(after.st_ctim.tv_sec, before.st_ctim.tv_sec);
	cr_assert_eq(after.st_ctim.tv_nsec, before.st_ctim.tv_nsec);
	cr_assert_eq(host_lstat("x", &after), -ENOENT);
}

/* Sends a hand-made MKDIR (name as given, unchecked) and returns the reply's error. */
static int raw_mkdir(const char *name, size_t len)
{
	uint8_t msg[GOFER_HDR_SIZE + 26 + 300];
	size_t total = GOFER_HDR_SIZE + 26 + len;
	struct gofer_hdr h = { .len = (uint32_t)total, .type = GOFER_MSG_MKDIR, .tag = 11 };
	size_t n;

	gofer_hdr_encode(msg, &h);
	gofer_put_u64(msg + GOFER_HDR_SIZE, root);
	gofer_put_u32(msg + GOFER_HDR_SIZE + 8, 0755);
	gofer_put_u32(msg + GOFER_HDR_SIZE + 12, 0);
	gofer_put_u32(msg + GOFER_HDR_SIZE + 16, 0);
	gofer_put_u32(msg + GOFER_HDR_SIZE + 20, 0);
	gofer_put_u16(msg + GOFER_HDR_SIZE + 24, (uint16_t)len);
	memcpy(msg + GOFER_HDR_SIZE + 26, name, len);
	n = raw_call(raw, msg, total, rbuf, NULL);
	cr_assert_eq(gofer_rep_decode(rbuf, n, &rep), 0);
	cr_assert_eq(rep.tag, 11);
	return (int)rep.error;
}

Test(gofer_write_raw, hostile_names_on_the_wire_are_einval)
{
	static const char *const bad[] = { "..", ".", "a/b", "../x", "x\0y" };
	char longname[256];
	struct stat st;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len = i == 4 ? 3 : strlen(bad[i]);

		cr_assert_eq(raw_mkdir(bad[i], len), EINVAL, "name %zu", i);
	}
	cr_assert_eq(raw_mkdir("", 0), EINVAL);
	memset(longname, 'n', sizeof(longname));
	cr_assert_eq(raw_mkdir(longname, 256), EINVAL);
	cr_assert_eq(raw_mkdir(longname, 255), 0);
	cr_assert_eq(raw_mkdir("ok", 2), 0);
	cr_assert_eq(host_lstat("ok", &st), 0);
	cr_assert_eq(host_lstat("x", &st), -ENOENT);
	cr_assert_eq(entries_in(outside), 0);
}

Test(gofer_write_raw, mknod_of_a_device_on_the_wire_is_eperm)
{
	struct stat st;

	req = (struct gofer_req){ .type = GOFER_MSG_MKNOD, .tag = 12 };
	req.mk.dir = root;
	req.mk.name = (struct gofer_name){ "null", 4 };
	req.mk.mode = S_IFCHR | 0666;
	cr_assert_eq(raw_req(raw, &req, rbuf, &rep, NULL), EPERM);
	req.mk.mode = S_IFBLK | 0666;
	cr_assert_eq(raw_req(raw, &req, rbuf, &rep, NULL), EPERM);
	req.mk.mode = S_IFDIR | 0755;
	cr_assert_eq(raw_req(raw, &req, rbuf, &rep, NULL), EPERM);
	cr_assert_eq(host_lstat("null", &st), -ENOENT);
}

Test(gofer_write_raw, create_reply_carries_exactly_one_fd)
{
	int fd = -1;

	req = (struct gofer_req){ .type = GOFER_MSG_CREATE, .tag = 13 };
	req.mk.dir = root;
	req.mk.name = (struct gofer_name){ "n", 1 };
	req.mk.flags = O_RDWR;
	req.mk.mode = 0600;
	cr_assert_eq(raw_req(raw, &req, rbuf, &rep, &fd), 0);
	cr_assert_geq(fd, 0);
	cr_assert(S_ISREG(rep.node.attr.mode));
	cr_assert_neq(rep.node.handle, 0);
	close(fd);
	/* A failed CREATE carries none. */
	cr_assert_eq(raw_req(raw, &req, rbuf, &rep, &fd), EEXIST);
	cr_assert_eq(fd, -1);
}

Test(gofer_write_raw_ro, write_messages_are_erofs_even_with_bad_handles)
{
	static const uint16_t types[] = { GOFER_MSG_SETSTAT,  GOFER_MSG_CREATE,
					  GOFER_MSG_MKDIR,    GOFER_MSG_MKNOD,
					  GOFER_MSG_SYMLINK,  GOFER_MSG_LINK,
					  GOFER_MSG_UNLINK,   GOFER_MSG_RENAME,
					  GOFER_MSG_SETXATTR, GOFER_MSG_REMOVEXATTR };

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		memset(&req, 0, sizeof(req));
		req.type = types[i];
		req.tag = 20 + (uint32_t)i;
		switch (types[i]) {
		case GOFER_MSG_SETSTAT:
			req.setstat.handle = 0xbad;
			break;
		case GOFER_MSG_LINK:
		case GOFER_MSG_RENAME:
			req.link.olddir = 0xbad;
			req.link.newdir = 0xbad;
			req.link.oldname = (struct gofer_name){ "a", 1 };
			req.link.newname = (struct gofer_name){ "b", 1 };
			break;
		case GOFER_MSG_UNLINK:
			req.unlink.dir = 0xbad;
			req.unlink.name = (struct gofer_name){ "a", 1 };
			break;
		case GOFER_MSG_SETXATTR:
		case GOFER_MSG_REMOVEXATTR:
			req.xattr.handle = 0xbad;
			req.xattr.name = (struct gofer_name){ "user.a", 6 };
			break;
		default:
			req.mk.dir = 0xbad;
			req.mk.name = (struct gofer_name){ "a", 1 };
			req.mk.mode = types[i] == GOFER_MSG_MKNOD ? S_IFIFO | 0644 : 0;
			req.mk.target = (struct gofer_name){ "t", 1 };
			break;
		}
		cr_assert_eq(raw_req(raw, &req, rbuf, &rep, NULL), EROFS, "type %u", types[i]);
	}
}
