/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gofer's owner mappings (linux.uidMappings, husk-gofer --uid-map): new nodes and SETSTAT
 * give host files the mapped owners of the guest ids the sentry names; attributes show host
 * owners mapped back, and the overflow id for owners outside the mapping; guest ids outside it
 * reach nothing on the host. Needs root (chown to other users); skips otherwise.
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

	cr_assert_eq(gofer_walk(c, root, &name, 1, &h, &attr), 1);
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
