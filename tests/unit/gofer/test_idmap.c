/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gofer's owner mappings (linux.uidMappings, husk-gofer --uid-map): new nodes and SETSTAT
 * give host files the mapped owners of the guest ids the sentry names; attributes show host
 * owners mapped back, and the overflow id for owners outside the mapping; guest ids outside it
 * reach nothing on the host; and on nodes whose owner or group is outside the mapping, the
 * gofer does no more than the container's root could in its user namespace (permission bits
 * only, no capability). Needs root (chown to other users); skips otherwise.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/idmap.h"
#include "helpers.h"
#include "sentry/fs/gofer/client.h"

static char dir[64];
static pid_t server;
static struct gofer_client *c;
static uint64_t root;

static void start(void)
{
	static struct idmap umap, gmap;
	struct gofer_server_config cfg = { .uid_map = &umap, .gid_map = &gmap };
	int sock;

	if (geteuid() != 0)
		cr_skip_test("needs root to give files other owners");
	cr_assert_eq(idmap_parse("0:100000:1000", &umap), 0);
	cr_assert_eq(idmap_parse("0:200000:1000,1000:4242:1", &gmap), 0);
	tree_create(dir);
	/* The served root is the container's root's, as a volume it may write. */
	cr_assert_eq(chown(dir, 100000, 200000), 0);
	server = server_start(dir, &cfg, &sock);
	cr_assert_eq(gofer_client_create(sock, &c), 0);
	cr_assert_eq(gofer_mount(c, &root, NULL), 0);
}

static void finish(void)
{
	if (!c)
		return;
	gofer_client_destroy(c);
	c = NULL;
	cr_assert_eq(child_wait(server), 0);
	tree_remove(dir);
}

static int host_lstat(const char *rel, struct stat *st)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	return lstat(path, st) < 0 ? -errno : 0;
}

TestSuite(gofer_idmap, .init = start, .fini = finish);

Test(gofer_idmap, new_nodes_get_the_mapped_owner_on_the_host)
{
	struct gofer_attr attr;
	struct stat st;
	uint64_t h;
	int fd;

	fd = gofer_create(c, root, "made", O_RDWR, 0644, 0, 1000, &h, &attr);
	cr_assert_geq(fd, 0, "create: %s", strerror(-fd));
	close(fd);
	cr_assert_eq(host_lstat("made", &st), 0);
	cr_assert_eq(st.st_uid, 100000);
	cr_assert_eq(st.st_gid, 4242);
	cr_assert_eq(attr.uid, 0, "the reply shows the guest's owner, got %u", attr.uid);
	cr_assert_eq(attr.gid, 1000);

	int r = gofer_mkdir(c, root, "newdir", 0755, 7, 8, &h, &attr);

	cr_assert_eq(r, 0, "mkdir: %s", strerror(-r));
	cr_assert_eq(host_lstat("newdir", &st), 0);
	cr_assert_eq(st.st_uid, 100007);
	cr_assert_eq(st.st_gid, 200008);
	cr_assert_eq(attr.uid, 7);
}

Test(gofer_idmap, an_unmapped_owner_makes_nothing)
{
	struct gofer_attr attr;
	struct stat st;
	uint64_t h;

	cr_assert_eq(gofer_create(c, root, "no", O_RDWR, 0644, 1000, 0, &h, &attr), -EOVERFLOW);
	cr_assert_eq(host_lstat("no", &st), -ENOENT);
	cr_assert_eq(gofer_mkdir(c, root, "nodir", 0755, 0, 5000, &h, &attr), -EOVERFLOW);
	cr_assert_eq(host_lstat("nodir", &st), -ENOENT);
}

Test(gofer_idmap, setstat_maps_owners_and_refuses_unmapped_ones)
{
	struct gofer_setstat ss = { .mask = GOFER_SETSTAT_UID | GOFER_SETSTAT_GID,
				    .uid = 5,
				    .gid = 6 };
	const char *name = "file";
	struct gofer_attr attr;
	struct stat st;
	uint64_t h;

	char path[256];

	cr_assert_eq(gofer_walk(c, root, &name, 1, &h, &attr), 1);
	/* The host root's file: no guest id owns it, no capability counts on it. */
	cr_assert_eq(gofer_setstat(c, h, &ss, &attr), -EPERM);
	snprintf(path, sizeof(path), "%s/file", dir);
	cr_assert_eq(lchown(path, 100001, 200001), 0);
	cr_assert_eq(gofer_setstat(c, h, &ss, &attr), 0);
	cr_assert_eq(host_lstat("file", &st), 0);
	cr_assert_eq(st.st_uid, 100005);
	cr_assert_eq(st.st_gid, 200006);
	cr_assert_eq(attr.uid, 5);
	cr_assert_eq(attr.gid, 6);
	ss = (struct gofer_setstat){ .mask = GOFER_SETSTAT_UID, .uid = 1000 };
	cr_assert_eq(gofer_setstat(c, h, &ss, NULL), -EINVAL);
	cr_assert_eq(host_lstat("file", &st), 0);
	cr_assert_eq(st.st_uid, 100005, "a refused owner changed the file");
}

Test(gofer_idmap, host_owners_show_mapped_back_or_as_the_overflow_id)
{
	char path[256];
	const char *name = "file";
	struct gofer_attr attr;
	uint64_t h;

	snprintf(path, sizeof(path), "%s/file", dir);
	/* Made by the test (root): outside the mapping. */
	cr_assert_eq(lchown(path, 0, 0), 0);
	cr_assert_eq(gofer_walk(c, root, &name, 1, &h, &attr), 1);
	cr_assert_eq(attr.uid, IDMAP_OVERFLOW_ID);
	cr_assert_eq(attr.gid, IDMAP_OVERFLOW_ID);
	cr_assert_eq(lchown(path, 100999, 4242), 0);
	cr_assert_eq(gofer_stat(c, h, &attr), 0);
	cr_assert_eq(attr.uid, 999);
	cr_assert_eq(attr.gid, 1000);
}

Test(gofer_idmap, unmapped_nodes_get_permission_bits_only)
{
	char path[256];
	const char *name = "file";
	struct gofer_attr attr;
	struct gofer_setstat ss = { .mask = GOFER_SETSTAT_MODE, .mode = 0666 };
	uint64_t h, d, nh;
	int fd;

	/* A host root's file, 0644: readable by others, nothing more. */
	snprintf(path, sizeof(path), "%s/file", dir);
	cr_assert_eq(lchown(path, 0, 0), 0);
	cr_assert_eq(chmod(path, 0644), 0);
	cr_assert_eq(gofer_walk(c, root, &name, 1, &h, &attr), 1);
	fd = gofer_open(c, h, O_RDONLY);
	cr_assert_geq(fd, 0, "read: %s", strerror(-fd));
	close(fd);
	cr_assert_eq(gofer_open(c, h, O_RDWR), -EACCES);
	cr_assert_eq(gofer_open(c, h, O_RDONLY | O_TRUNC), -EACCES);
	cr_assert_eq(gofer_setstat(c, h, &ss, NULL), -EPERM, "chmod of another's file");
	ss = (struct gofer_setstat){ .mask = GOFER_SETSTAT_SIZE, .size = 0 };
	cr_assert_eq(gofer_setstat(c, h, &ss, NULL), -EACCES, "truncate without write access");
	/* World-writable: writable. */
	cr_assert_eq(chmod(path, 0666), 0);
	fd = gofer_open(c, h, O_RDWR);
	cr_assert_geq(fd, 0, "rw of a 0666 file: %s", strerror(-fd));
	close(fd);

	/* A host root's directory, 0755: searchable, nothing can be made in it. */
	snprintf(path, sizeof(path), "%s/a", dir);
	cr_assert_eq(lchown(path, 0, 0), 0);
	cr_assert_eq(chmod(path, 0755), 0);
	name = "a";
	cr_assert_eq(gofer_walk(c, root, &name, 1, &d, &attr), 1);
	name = "b";
	cr_assert_eq(gofer_walk(c, d, &name, 1, &nh, &attr), 1);
	cr_assert_lt(gofer_create(c, d, "new", O_RDWR, 0644, 0, 0, &nh, &attr), 0);
	cr_assert_eq(gofer_mkdir(c, d, "nd", 0755, 0, 0, &nh, &attr), -EACCES);
	cr_assert_eq(gofer_unlink(c, d, "b", AT_REMOVEDIR), -EACCES);
	/* 0700: not even searchable. */
	cr_assert_eq(chmod(path, 0700), 0);
	name = "b";
	cr_assert_eq(gofer_walk(c, d, &name, 1, &nh, &attr), -EACCES);
	/* Its group mapped: the group bits count. */
	cr_assert_eq(lchown(path, 0, 200000), 0);
	cr_assert_eq(chmod(path, 0750), 0);
	cr_assert_eq(gofer_walk(c, d, &name, 1, &nh, &attr), 1);
	/* Owner and group mapped: the container's root may do anything. */
	cr_assert_eq(lchown(path, 100000, 200000), 0);
	cr_assert_eq(chmod(path, 0500), 0);
	cr_assert_eq(gofer_mkdir(c, d, "nd", 0755, 0, 0, &nh, &attr), 0);
}

struct plus_seen {
	int n, with_attr, with_handle;
};

static int count_plus(void *arg, const struct gofer_dirent_plus *e)
{
	struct plus_seen *p = arg;

	p->n++;
	p->with_attr += (e->flags & GOFER_DIRENT_ATTR) != 0;
	p->with_handle += e->handle != 0;
	return 0;
}

Test(gofer_idmap, getdentsplus_gives_names_only_without_search_permission)
{
	char path[256];
	const char *name = "a";
	struct gofer_attr attr;
	struct plus_seen seen = { 0 };
	uint64_t d;
	int r;

	/* a/ holds b/: readable by others, not searchable. */
	snprintf(path, sizeof(path), "%s/a", dir);
	cr_assert_eq(lchown(path, 0, 0), 0);
	cr_assert_eq(chmod(path, 0744), 0);
	cr_assert_eq(gofer_walk(c, root, &name, 1, &d, &attr), 1);
	r = gofer_getdents_plus(c, d, 0, GOFER_GETDENTS_MAX, GOFER_GETDENTS_DIR_HANDLES, count_plus,
				&seen, NULL);
	cr_assert_geq(r, 0, "getdentsplus: %s", strerror(-r));
	cr_assert_eq(seen.n, 1, "b is listed");
	cr_assert_eq(seen.with_attr, 0, "no attributes without search permission");
	cr_assert_eq(seen.with_handle, 0, "no handles without search permission");
	/* Searchable: attributes and a handle of b. */
	cr_assert_eq(chmod(path, 0755), 0);
	seen = (struct plus_seen){ 0 };
	r = gofer_getdents_plus(c, d, 0, GOFER_GETDENTS_MAX, GOFER_GETDENTS_DIR_HANDLES, count_plus,
				&seen, NULL);
	cr_assert_geq(r, 0);
	cr_assert_eq(seen.with_attr, 1);
	cr_assert_eq(seen.with_handle, 1);
}

Test(gofer_idmap, a_sticky_directory_keeps_the_files_of_unmapped_owners)
{
	char path[256], f[300];
	const char *name = "many";
	struct gofer_attr attr;
	uint64_t d;

	/* A host root's /tmp-like directory (1777) with a root's file and a mapped user's. */
	snprintf(path, sizeof(path), "%s/many", dir);
	cr_assert_eq(lchown(path, 0, 0), 0);
	cr_assert_eq(chmod(path, 01777), 0);
	snprintf(f, sizeof(f), "%s/f01", path);
	cr_assert_eq(lchown(f, 0, 0), 0);
	snprintf(f, sizeof(f), "%s/f02", path);
	cr_assert_eq(lchown(f, 100005, 200005), 0);
	cr_assert_eq(gofer_walk(c, root, &name, 1, &d, &attr), 1);
	cr_assert_eq(gofer_unlink(c, d, "f01", 0), -EPERM);
	cr_assert_eq(gofer_rename(c, d, "f01", d, "moved", 0), -EPERM);
	cr_assert_eq(gofer_rename(c, d, "f02", d, "f01", 0), -EPERM, "replacing the root's file");
	cr_assert_eq(gofer_unlink(c, d, "f02", 0), 0);
	cr_assert_eq(access(f, F_OK), -1, "f02 is gone");
	/* Not sticky: write and search permission are enough. */
	cr_assert_eq(chmod(path, 0777), 0);
	cr_assert_eq(gofer_unlink(c, d, "f01", 0), 0);
}
