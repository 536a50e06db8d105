/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gofer server (gofer/server.c) and the sentry's client (sentry/fs/gofer/client.c), end to
 * end over a socketpair, without confinement: the server runs in a child over a temporary tree.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "helpers.h"
#include "sentry/fs/gofer/client.h"

static char dir[64];
static pid_t server;
static int raw = -1; /* raw tests talk to the server directly */
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
	server = server_start(dir, &cfg, &sock);
	cr_assert_eq(gofer_client_create(sock, &c), 0);
	cr_assert_eq(gofer_mount(c, &root, NULL), 0);
}

static void start_raw(bool readonly)
{
	struct gofer_server_config cfg = { .readonly = readonly };

	tree_create(dir);
	server = server_start(dir, &cfg, &raw);
	req = (struct gofer_req){ .type = GOFER_MSG_MOUNT, .tag = 1 };
	req.mount.version = GOFER_PROTO_VERSION;
	cr_assert_eq(raw_req(raw, &req, rbuf, &rep, NULL), 0);
	root = rep.mount.root;
}

/* Closes the connection; the server must then exit 0. */
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
}

static void start_ro(void)
{
	start(true, 0);
}

static void start_rw(void)
{
	start(false, 0);
}

static void start_raw_ro(void)
{
	start_raw(true);
}

static void host_lstat(const char *rel, struct stat *st)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	cr_assert_eq(lstat(path, st), 0, "lstat %s", path);
}

/* Walks a '/'-separated relative path from the root; returns the last handle. */
static uint64_t walk_path(const char *path, struct gofer_attr *attr)
{
	char copy[256], *save = NULL;
	const char *names[16];
	uint64_t handles[16];
	struct gofer_attr attrs[16];
	int n = 0;

	snprintf(copy, sizeof(copy), "%s", path);
	for (char *t = strtok_r(copy, "/", &save); t; t = strtok_r(NULL, "/", &save))
		names[n++] = t;
	cr_assert_eq(gofer_walk(c, root, names, n, handles, attrs), n, "walking %s", path);
	if (attr)
		*attr = attrs[n - 1];
	return handles[n - 1];
}

TestSuite(gofer_server, .init = start_ro, .fini = finish);
TestSuite(gofer_server_rw, .init = start_rw, .fini = finish);
TestSuite(gofer_server_raw, .init = start_raw_ro, .fini = finish);

Test(gofer_server, mount_returns_the_root_directory)
{
	struct gofer_attr attr;
	struct stat st;
	uint64_t again;

	cr_assert_eq(gofer_mount(c, &again, &attr), 0);
	cr_assert_neq(again, root, "each MOUNT gives a new handle");
	cr_assert(S_ISDIR(attr.mode));
	host_lstat(".", &st);
	cr_assert_eq(attr.ino, st.st_ino);
	cr_assert_eq(attr.dev, st.st_dev);
}

Test(gofer_server, walk_reaches_every_component)
{
	static const char *const names[] = { "a", "b", "c" };
	uint64_t h[3];
	struct gofer_attr attrs[3];
	struct stat st;

	cr_assert_eq(gofer_walk(c, root, names, 3, h, attrs), 3);
	host_lstat("a", &st);
	cr_assert_eq(attrs[0].ino, st.st_ino);
	cr_assert(S_ISDIR(attrs[0].mode));
	host_lstat("a/b", &st);
	cr_assert_eq(attrs[1].ino, st.st_ino);
	host_lstat("a/b/c", &st);
	cr_assert_eq(attrs[2].ino, st.st_ino);
	cr_assert(S_ISREG(attrs[2].mode));
	cr_assert_eq(attrs[2].size, 5);
	cr_assert(h[0] != h[1] && h[1] != h[2] && h[0] != root);
}

Test(gofer_server, walk_stops_after_a_symlink)
{
	static const char *const names[] = { "up_link", "etc", "passwd" };
	uint64_t h[3];
	struct gofer_attr attrs[3];
	struct stat st;

	cr_assert_eq(gofer_walk(c, root, names, 3, h, attrs), 1);
	cr_assert(S_ISLNK(attrs[0].mode));
	host_lstat("up_link", &st);
	cr_assert_eq(attrs[0].ino, st.st_ino);
}

Test(gofer_server, walk_of_a_missing_name_returns_the_components_reached)
{
	static const char *const names[] = { "a", "nope", "x" };
	static const char *const first[] = { "nope" };
	uint64_t h[3];
	struct gofer_attr attrs[3];

	cr_assert_eq(gofer_walk(c, root, names, 3, h, attrs), 1);
	cr_assert(S_ISDIR(attrs[0].mode));
	cr_assert_eq(gofer_walk(c, root, first, 1, h, attrs), 0);
}

Test(gofer_server, walk_through_a_file_is_enotdir)
{
	static const char *const names[] = { "file", "x" };
	static const char *const file[] = { "file" };
	static const char *const x[] = { "x" };
	uint64_t h[2];

	cr_assert_eq(gofer_walk(c, root, names, 2, h, NULL), -ENOTDIR);
	cr_assert_eq(gofer_walk(c, root, file, 1, h, NULL), 1);
	cr_assert_eq(gofer_walk(c, h[0], x, 1, h + 1, NULL), -ENOTDIR);
}

Test(gofer_server, walk_longer_than_one_message_is_split)
{
	const char *names[TREE_DEEP + 1];
	uint64_t h[TREE_DEEP + 1];
	struct gofer_attr attrs[TREE_DEEP + 1];
	struct stat st;
	char path[512] = "deep";

	cr_assert_gt(TREE_DEEP + 1, GOFER_WALK_MAX);
	names[0] = "deep";
	for (int i = 1; i <= TREE_DEEP; i++) {
		names[i] = "d";
		strcat(path, "/d");
	}
	cr_assert_eq(gofer_walk(c, root, names, TREE_DEEP + 1, h, attrs), TREE_DEEP + 1);
	host_lstat(path, &st);
	cr_assert_eq(attrs[TREE_DEEP].ino, st.st_ino);
	/* Missing past the first message: the count covers both. */
	names[GOFER_WALK_MAX + 2] = "missing";
	cr_assert_eq(gofer_walk(c, root, names, TREE_DEEP + 1, h, attrs), GOFER_WALK_MAX + 2);
}

Test(gofer_server, hostile_names_are_rejected)
{
	static const char *const dotdot[] = { "a", ".." };
	static const char *const slash[] = { "a/b" };
	static const char *const dot[] = { "." };
	static const char *const empty[] = { "" };
	char toolong[GOFER_NAME_MAX + 2];
	const char *longname[] = { toolong };
	uint64_t h[2];

	memset(toolong, 'n', sizeof(toolong) - 1);
	toolong[sizeof(toolong) - 1] = '\0';
	cr_assert_eq(gofer_walk(c, root, dotdot, 2, h, NULL), -EINVAL);
	cr_assert_eq(gofer_walk(c, root, slash, 1, h, NULL), -EINVAL);
	cr_assert_eq(gofer_walk(c, root, dot, 1, h, NULL), -EINVAL);
	cr_assert_eq(gofer_walk(c, root, empty, 1, h, NULL), -EINVAL);
	cr_assert_eq(gofer_walk(c, root, longname, 1, h, NULL), -ENAMETOOLONG);
}

Test(gofer_server, stat_matches_the_host)
{
	struct gofer_attr attr;
	struct stat st;
	uint64_t h = walk_path("a/b/c", NULL);

	cr_assert_eq(gofer_stat(c, h, &attr), 0);
	host_lstat("a/b/c", &st);
	cr_assert_eq(attr.ino, st.st_ino);
	cr_assert_eq(attr.mode, st.st_mode);
	cr_assert_eq(attr.size, st.st_size);
	cr_assert_eq(attr.nlink, st.st_nlink);
	cr_assert_eq(attr.uid, st.st_uid);
	cr_assert_eq(attr.mtime_sec, st.st_mtim.tv_sec);
	cr_assert_eq(attr.mtime_nsec, (uint32_t)st.st_mtim.tv_nsec);
}

Test(gofer_server, open_donates_a_readable_fd)
{
	uint64_t h = walk_path("file", NULL);
	char data[64] = { 0 };
	int fd = gofer_open(c, h, O_RDONLY);

	cr_assert_geq(fd, 0, "open: %d", fd);
	cr_assert_eq(read(fd, data, sizeof(data) - 1), 12);
	cr_assert_str_eq(data, "hello gofer\n");
	cr_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	cr_assert_eq(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
	close(fd);
}

Test(gofer_server, open_for_write_on_a_readonly_server_is_erofs)
{
	uint64_t h = walk_path("file", NULL);
	struct stat st;

	cr_assert_eq(gofer_open(c, h, O_WRONLY), -EROFS);
	cr_assert_eq(gofer_open(c, h, O_RDWR), -EROFS);
	cr_assert_eq(gofer_open(c, h, O_RDONLY | O_TRUNC), -EROFS);
	host_lstat("file", &st);
	cr_assert_eq(st.st_size, 12, "the file was truncated");
}

Test(gofer_server_rw, open_for_write_on_a_writable_server_writes)
{
	uint64_t h = walk_path("file", NULL);
	char path[128], data[16] = { 0 };
	int fd = gofer_open(c, h, O_WRONLY | O_TRUNC);
	int hostfd;

	cr_assert_geq(fd, 0, "open: %d", fd);
	cr_assert_eq(write(fd, "new", 3), 3);
	close(fd);
	snprintf(path, sizeof(path), "%s/file", dir);
	hostfd = open(path, O_RDONLY);
	cr_assert_eq(read(hostfd, data, sizeof(data)), 3);
	cr_assert_str_eq(data, "new");
	close(hostfd);
}

Test(gofer_server, open_of_what_cannot_be_served_fails)
{
	uint64_t link = walk_path("up_link", NULL);
	uint64_t fifo = walk_path("fifo", NULL);
	uint64_t sub = walk_path("sub", NULL);
	uint64_t file = walk_path("file", NULL);

	cr_assert_eq(gofer_open(c, link, O_RDONLY), -ELOOP);
	cr_assert_eq(gofer_open(c, fifo, O_RDONLY), -EPERM);
	cr_assert_eq(gofer_open(c, sub, O_WRONLY), -EISDIR);
	cr_assert_eq(gofer_open(c, file, O_RDONLY | O_DIRECTORY), -ENOTDIR);
	cr_assert_eq(gofer_open(c, file, O_RDONLY | O_CREAT), -EINVAL);
}

Test(gofer_server, open_of_a_directory_gives_a_directory_fd)
{
	uint64_t h = walk_path("a", NULL);
	int fd = gofer_open(c, h, O_RDONLY | O_DIRECTORY);
	DIR *d;
	struct dirent *e;
	bool seen = false;

	cr_assert_geq(fd, 0);
	d = fdopendir(fd);
	cr_assert_not_null(d);
	while ((e = readdir(d)))
		seen |= !strcmp(e->d_name, "b");
	closedir(d);
	cr_assert(seen);
}

Test(gofer_server, readlink_returns_the_target)
{
	uint64_t up = walk_path("up_link", NULL);
	uint64_t pw = walk_path("passwd_link", NULL);
	uint64_t file = walk_path("file", NULL);
	char buf[64];

	cr_assert_eq(gofer_readlink(c, up, buf, sizeof(buf)), 8);
	cr_assert_eq(memcmp(buf, "../../..", 8), 0);
	cr_assert_eq(gofer_readlink(c, pw, buf, sizeof(buf)), 11);
	cr_assert_eq(memcmp(buf, "/etc/passwd", 11), 0);
	cr_assert_eq(gofer_readlink(c, pw, buf, 4), 4, "cut to the buffer like readlink(2)");
	cr_assert_eq(memcmp(buf, "/etc", 4), 0);
	cr_assert_eq(gofer_readlink(c, file, buf, sizeof(buf)), -EINVAL);
}

struct listing {
	char names[TREE_MANY + 8][32];
	int n;
	int64_t next;
	int limit; /* stop after this many entries per call (0: no limit) */
	int seen_this_call;
};

static int collect(void *arg, const struct gofer_dirent *d)
{
	struct listing *l = arg;

	cr_assert_lt(l->n, TREE_MANY + 8, "more entries than files");
	cr_assert_lt(d->namelen, 32);
	memcpy(l->names[l->n], d->name, d->namelen);
	l->names[l->n][d->namelen] = '\0';
	l->n++;
	l->next = d->next;
	return l->limit && ++l->seen_this_call >= l->limit;
}

static void check_many_listing(const struct listing *l)
{
	bool seen[TREE_MANY] = { false };

	cr_assert_eq(l->n, TREE_MANY, "listed %d entries", l->n);
	for (int i = 0; i < l->n; i++) {
		int k;

		cr_assert_eq(sscanf(l->names[i], "f%d", &k), 1, "unexpected entry %s", l->names[i]);
		cr_assert(k >= 0 && k < TREE_MANY && !seen[k], "duplicate or stray %s",
			  l->names[i]);
		seen[k] = true;
	}
}

Test(gofer_server, getdents_lists_everything_across_small_calls)
{
	uint64_t h = walk_path("many", NULL);
	static struct listing l;
	int calls = 0, ret;

	/* Room for about two entries per reply: the cookies must carry the listing on. */
	while ((ret = gofer_getdents_max(c, h, l.next, 2 * (uint32_t)gofer_dirent_size(3), collect,
					 &l)) > 0) {
		cr_assert_leq(ret, 2);
		calls++;
		cr_assert_lt(calls, 1000);
	}
	cr_assert_eq(ret, 0);
	cr_assert_geq(calls, TREE_MANY / 2);
	check_many_listing(&l);
}

Test(gofer_server, getdents_resumes_where_the_callback_stopped)
{
	uint64_t h = walk_path("many", NULL);
	static struct listing l = { .limit = 3 };
	int ret;

	while ((l.seen_this_call = 0, ret = gofer_getdents(c, h, l.next, collect, &l)) > 0)
		cr_assert_leq(ret, 3);
	cr_assert_eq(ret, 0);
	check_many_listing(&l);
}

Test(gofer_server, getdents_with_too_small_a_buffer_is_einval)
{
	uint64_t h = walk_path("many", NULL);
	static struct listing l;

	cr_assert_eq(gofer_getdents_max(c, h, 0, (uint32_t)gofer_dirent_size(3) - 1, collect, &l),
		     -EINVAL);
	cr_assert_eq(l.n, 0);
}

Test(gofer_server, getdents_of_a_file_is_enotdir)
{
	uint64_t h = walk_path("file", NULL);
	static struct listing l;

	cr_assert_eq(gofer_getdents(c, h, 0, collect, &l), -ENOTDIR);
}

Test(gofer_server, getdents_skips_dot_and_dotdot)
{
	uint64_t h = walk_path("a", NULL);
	static struct listing l;

	cr_assert_eq(gofer_getdents(c, h, 0, collect, &l), 1);
	cr_assert_str_eq(l.names[0], "b");
	cr_assert_eq(gofer_getdents(c, h, l.next, collect, &l), 0);
}

Test(gofer_server, statfs_matches_the_host)
{
	struct gofer_statfs st;
	struct statfs host;

	cr_assert_eq(gofer_statfs(c, root, &st), 0);
	cr_assert_eq(statfs(dir, &host), 0);
	cr_assert_eq(st.type, (uint64_t)host.f_type);
	cr_assert_eq(st.bsize, (uint64_t)host.f_bsize);
	cr_assert_eq(st.blocks, host.f_blocks);
	cr_assert_eq(st.namelen, (uint64_t)host.f_namelen);
}

Test(gofer_server, closed_handle_is_ebadf)
{
	struct gofer_attr attr;
	uint64_t h = walk_path("a/b/c", NULL);
	uint64_t other;

	cr_assert_eq(gofer_stat(c, h, &attr), 0);
	gofer_close(c, &h, 1);
	cr_assert_eq(gofer_stat(c, h, &attr), -EBADF);
	cr_assert_eq(gofer_open(c, h, O_RDONLY), -EBADF);
	/* The slot is reused by the next walk; the stale handle still names nothing. */
	other = walk_path("file", NULL);
	cr_assert_eq((uint32_t)other, (uint32_t)h, "expected the slot to be reused");
	cr_assert_neq(other, h);
	cr_assert_eq(gofer_stat(c, h, &attr), -EBADF);
	cr_assert_eq(gofer_stat(c, other, &attr), 0);
}

Test(gofer_server, unknown_handles_are_ebadf)
{
	static const char *const names[] = { "a" };
	struct gofer_attr attr;
	uint64_t h;

	cr_assert_eq(gofer_stat(c, 0, &attr), -EBADF);
	cr_assert_eq(gofer_stat(c, root + 1000, &attr), -EBADF);
	cr_assert_eq(gofer_stat(c, root ^ (1ULL << 40), &attr), -EBADF);
	cr_assert_eq(gofer_walk(c, 0xffffffffffffffffULL, names, 1, &h, NULL), -EBADF);
}

Test(gofer_server, escaping_symlinks_are_handed_back_as_symlinks)
{
	static const char *const beyond[] = { "etc" };
	struct gofer_attr attr;
	struct stat st, target;
	uint64_t up = walk_path("up_link", &attr);
	uint64_t pw, h;

	host_lstat("up_link", &st);
	cr_assert(S_ISLNK(attr.mode));
	cr_assert_eq(attr.ino, st.st_ino);
	cr_assert_eq(gofer_walk(c, up, beyond, 1, &h, NULL), -ENOTDIR);
	cr_assert_eq(gofer_open(c, up, O_RDONLY), -ELOOP);
	cr_assert_eq(gofer_getdents(c, up, 0, collect, NULL), -ENOTDIR);

	pw = walk_path("passwd_link", &attr);
	host_lstat("passwd_link", &st);
	cr_assert(S_ISLNK(attr.mode));
	cr_assert_eq(attr.ino, st.st_ino);
	cr_assert_eq(gofer_stat(c, pw, &attr), 0);
	cr_assert(S_ISLNK(attr.mode));
	if (stat("/etc/passwd", &target) == 0)
		cr_assert(attr.ino != target.st_ino || attr.dev != target.st_dev);
	cr_assert_eq(gofer_open(c, pw, O_RDONLY), -ELOOP);
}

static void start_limited(void)
{
	start(true, 4);
}

Test(gofer_server_limit, handles_past_the_limit_are_enfile, .init = start_limited, .fini = finish)
{
	static const char *const abc[] = { "a", "b", "c" };
	static const char *const file[] = { "file" };
	uint64_t h[3], extra;

	/* The root is one handle: three more reach the limit of 4. */
	cr_assert_eq(gofer_walk(c, root, abc, 3, h, NULL), 3);
	cr_assert_eq(gofer_walk(c, root, file, 1, &extra, NULL), -ENFILE);
	cr_assert_eq(gofer_mount(c, &extra, NULL), -ENFILE);
	gofer_close(c, h, 3);
	cr_assert_eq(gofer_walk(c, root, abc, 3, h, NULL), 3);
}

Test(gofer_server_limit, failed_walk_gives_back_its_handles, .init = start_limited, .fini = finish)
{
	static const char *const abc[] = { "a", "b", "c" };
	static const char *const bad[] = { "a", "b", "c", "x" };
	uint64_t h[4];

	/* Fails at the 4th name after taking 3 handles: all must come back, or the next walk
	 * would hit the limit. */
	cr_assert_eq(gofer_walk(c, root, bad, 4, h, NULL), -ENOTDIR);
	cr_assert_eq(gofer_walk(c, root, abc, 3, h, NULL), 3);
}

/* Sends a header-only message of type t and returns the decoded reply in rep. */
static void send_header(uint16_t t, uint32_t tag)
{
	uint8_t msg[GOFER_HDR_SIZE];
	struct gofer_hdr h = { .len = GOFER_HDR_SIZE, .type = t, .tag = tag };
	size_t n;

	gofer_hdr_encode(msg, &h);
	n = raw_call(raw, msg, sizeof(msg), rbuf, NULL);
	cr_assert_eq(gofer_rep_decode(rbuf, n, &rep), 0);
}

Test(gofer_server_raw, unknown_types_get_einval)
{
	static const uint16_t types[] = { 0, GOFER_MSG_TYPE_END, 0x7fff, GOFER_REPLY | 1 };

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		send_header(types[i], 42);
		cr_assert_eq(rep.error, EINVAL);
		cr_assert_eq(rep.tag, 42);
	}
}

Test(gofer_server_raw, unparsable_messages_get_einval_with_tag_0)
{
	uint8_t msg[32] = { 0 };
	struct gofer_hdr h = { .len = 24, .type = GOFER_MSG_STAT, .tag = 55 };
	static uint8_t big[GOFER_MSG_MAX + 100];
	size_t n;

	/* A short header. */
	n = raw_call(raw, msg, 5, rbuf, NULL);
	cr_assert_eq(gofer_rep_decode(rbuf, n, &rep), 0);
	cr_assert_eq(rep.error, EINVAL);
	cr_assert_eq(rep.tag, 0);
	/* A length that disagrees with the packet. */
	gofer_hdr_encode(msg, &h);
	n = raw_call(raw, msg, 32, rbuf, NULL);
	cr_assert_eq(gofer_rep_decode(rbuf, n, &rep), 0);
	cr_assert_eq(rep.error, EINVAL);
	cr_assert_eq(rep.tag, 0);
	/* Longer than any message. */
	h.len = sizeof(big);
	gofer_hdr_encode(big, &h);
	n = raw_call(raw, big, sizeof(big), rbuf, NULL);
	cr_assert_eq(gofer_rep_decode(rbuf, n, &rep), 0);
	cr_assert_eq(rep.error, EINVAL);
	cr_assert_eq(rep.tag, 0);
}

Test(gofer_server_raw, hostile_walk_names_get_einval)
{
	static const char *const bad[] = { "..", "a/b", ".", "" };
	uint8_t msg[64];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len = strlen(bad[i]);
		size_t total = GOFER_HDR_SIZE + 14 + len;
		struct gofer_hdr h = { .len = (uint32_t)total, .type = GOFER_MSG_WALK, .tag = 7 };
		size_t n;

		gofer_hdr_encode(msg, &h);
		gofer_put_u64(msg + GOFER_HDR_SIZE, root);
		gofer_put_u32(msg + GOFER_HDR_SIZE + 8, 1);
		gofer_put_u16(msg + GOFER_HDR_SIZE + 12, (uint16_t)len);
		memcpy(msg + GOFER_HDR_SIZE + 14, bad[i], len);
		n = raw_call(raw, msg, total, rbuf, NULL);
		cr_assert_eq(gofer_rep_decode(rbuf, n, &rep), 0);
		cr_assert_eq(rep.error, EINVAL, "name \"%s\"", bad[i]);
		cr_assert_eq(rep.tag, 7);
	}
}

Test(gofer_server_raw, open_with_o_creat_gets_einval)
{
	uint8_t msg[GOFER_HDR_SIZE + 16];
	struct gofer_hdr h = { .len = sizeof(msg), .type = GOFER_MSG_OPEN, .tag = 8 };
	size_t n;
	int fd;

	gofer_hdr_encode(msg, &h);
	gofer_put_u64(msg + GOFER_HDR_SIZE, root);
	gofer_put_u32(msg + GOFER_HDR_SIZE + 8, O_RDONLY | O_CREAT);
	gofer_put_u32(msg + GOFER_HDR_SIZE + 12, 0);
	n = raw_call(raw, msg, sizeof(msg), rbuf, &fd);
	cr_assert_eq(gofer_rep_decode(rbuf, n, &rep), 0);
	cr_assert_eq(rep.error, EINVAL);
	cr_assert_eq(fd, -1);
}

Test(gofer_server_raw, request_carrying_an_fd_gets_einval)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	uint8_t msg[GOFER_MSG_MAX];
	struct iovec iov;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;
	ssize_t len;
	int fd = 0;

	req = (struct gofer_req){ .type = GOFER_MSG_STAT, .tag = 9 };
	req.node.handle = root;
	len = gofer_req_encode(&req, msg, sizeof(msg));
	iov = (struct iovec){ .iov_base = msg, .iov_len = (size_t)len };
	memset(&ctl, 0, sizeof(ctl));
	m.msg_control = ctl.buf;
	m.msg_controllen = sizeof(ctl.buf);
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	cr_assert_eq(sendmsg(raw, &m, 0), len);
	len = recv(raw, rbuf, GOFER_MSG_MAX, 0);
	cr_assert_eq(gofer_rep_decode(rbuf, (size_t)len, &rep), 0);
	cr_assert_eq(rep.error, EINVAL);
	cr_assert_eq(rep.tag, 9);
}

Test(gofer_server_raw, mount_of_another_version_is_eprotonosupport)
{
	req = (struct gofer_req){ .type = GOFER_MSG_MOUNT, .tag = 3 };
	req.mount.version = GOFER_PROTO_VERSION + 1;
	cr_assert_eq(raw_req(raw, &req, rbuf, &rep, NULL), EPROTONOSUPPORT);
}

Test(gofer_server_raw, getdents_never_returns_more_than_asked)
{
	static const char *const many[] = { "many" };
	uint64_t dirh;
	uint32_t total = 0;

	req = (struct gofer_req){ .type = GOFER_MSG_WALK, .tag = 4 };
	req.walk.dir = root;
	req.walk.n = 1;
	req.walk.names[0] = (struct gofer_name){ many[0], 4 };
	cr_assert_eq(raw_req(raw, &req, rbuf, &rep, NULL), 0);
	dirh = rep.walk.entries[0].handle;
	for (uint32_t max = (uint32_t)gofer_dirent_size(3); max < 400; max += 7) {
		req = (struct gofer_req){ .type = GOFER_MSG_GETDENTS, .tag = 5 };
		req.getdents.handle = dirh;
		req.getdents.max = max;
		cr_assert_eq(raw_req(raw, &req, rbuf, &rep, NULL), 0);
		cr_assert_leq(rep.getdents.size, max);
		cr_assert_eq(rep.getdents.n, max / gofer_dirent_size(3) < TREE_MANY ?
						     max / gofer_dirent_size(3) :
						     TREE_MANY);
		total += rep.getdents.n;
	}
	cr_assert_gt(total, 0);
}

Test(gofer_server_raw, close_reports_ebadf_for_unknown_handles_and_closes_the_rest)
{
	req = (struct gofer_req){ .type = GOFER_MSG_CLOSE, .tag = 6 };
	req.close.n = 2;
	req.close.handles[0] = root;
	req.close.handles[1] = 12345;
	cr_assert_eq(raw_req(raw, &req, rbuf, &rep, NULL), EBADF);
	req = (struct gofer_req){ .type = GOFER_MSG_STAT, .tag = 7 };
	req.node.handle = root;
	cr_assert_eq(raw_req(raw, &req, rbuf, &rep, NULL), EBADF, "the valid one was closed");
}

/* --- the end mark and GETDENTSPLUS --- */

Test(gofer_server, getdents_of_a_directory_that_fits_ends_in_one_reply)
{
	uint64_t h = walk_path("many", NULL);
	static struct listing l;
	bool eof = false;

	cr_assert_eq(gofer_getdents_eof(c, h, 0, GOFER_GETDENTS_MAX, collect, &l, &eof), TREE_MANY);
	cr_assert(eof, "the whole directory fitted: the reply says it ended");
	check_many_listing(&l);
}

Test(gofer_server, getdents_that_stops_early_does_not_claim_the_end)
{
	uint64_t h = walk_path("many", NULL);
	static struct listing l;
	int calls = 0, ret;
	bool eof = true;

	/* Two entries a reply: only the reply that reaches the end may say so. */
	while ((ret = gofer_getdents_eof(c, h, l.next, 2 * (uint32_t)gofer_dirent_size(3), collect,
					 &l, &eof)) > 0 &&
	       !eof) {
		calls++;
		cr_assert_lt(calls, 1000);
	}
	cr_assert_geq(ret, 0);
	cr_assert(eof);
	cr_assert_geq(calls, TREE_MANY / 2 - 1, "an end claimed after %d replies", calls);
	check_many_listing(&l);
	/* The callback stopping before the reply's last entry is not the end either. */
	static struct listing l2 = { .limit = 3 };
	cr_assert_eq(gofer_getdents_eof(c, h, 0, GOFER_GETDENTS_MAX, collect, &l2, &eof), 3);
	cr_assert(!eof);
}

struct plus_listing {
	char names[16][32];
	struct gofer_attr attrs[16];
	uint64_t handles[16];
	uint32_t flags[16];
	int n;
};

static int collect_plus(void *arg, const struct gofer_dirent_plus *e)
{
	struct plus_listing *l = arg;

	cr_assert_lt(l->n, 16);
	cr_assert_lt(e->d.namelen, 32);
	memcpy(l->names[l->n], e->d.name, e->d.namelen);
	l->names[l->n][e->d.namelen] = '\0';
	l->attrs[l->n] = e->attr;
	l->handles[l->n] = e->handle;
	l->flags[l->n] = e->flags;
	l->n++;
	return 0;
}

static int plus_find(const struct plus_listing *l, const char *name)
{
	for (int i = 0; i < l->n; i++) {
		if (!strcmp(l->names[i], name))
			return i;
	}
	cr_assert_fail("%s was not listed", name);
	return -1;
}

Test(gofer_server, getdentsplus_gives_each_name_its_own_attributes)
{
	static const char *const names[] = { "file", "a",    "sub",	    "many",
					     "deep", "fifo", "passwd_link", "up_link" };
	static struct plus_listing l;
	bool eof = false;

	cr_assert_eq(gofer_getdents_plus(c, root, 0, GOFER_GETDENTS_MAX, 0, collect_plus, &l, &eof),
		     8);
	cr_assert(eof);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int k = plus_find(&l, names[i]);
		struct stat st;

		host_lstat(names[i], &st);
		cr_assert_eq(l.flags[k], GOFER_DIRENT_ATTR, "%s has attributes", names[i]);
		/* Never followed: a symlink's own attributes, even one pointing outside. */
		cr_assert_eq(l.attrs[k].mode, st.st_mode, "mode of %s", names[i]);
		cr_assert_eq(l.attrs[k].ino, st.st_ino, "inode of %s", names[i]);
		cr_assert_eq(l.attrs[k].size, st.st_size, "size of %s", names[i]);
		cr_assert_eq(l.handles[k], 0, "no handle asked for, none made");
	}
}

Test(gofer_server, getdentsplus_makes_usable_handles_of_directories_only)
{
	static struct plus_listing l;
	static const char *const b[] = { "b" };
	uint64_t hb;
	bool eof = false;

	cr_assert_eq(gofer_getdents_plus(c, root, 0, GOFER_GETDENTS_MAX, GOFER_GETDENTS_DIR_HANDLES,
					 collect_plus, &l, &eof),
		     8);
	for (int i = 0; i < l.n; i++) {
		bool isdir = S_ISDIR(l.attrs[i].mode);

		cr_assert_eq(l.handles[i] != 0, isdir, "%s: a handle iff a directory", l.names[i]);
	}
	/* The handle of a/ is a/: b is found in it. */
	cr_assert_eq(gofer_walk(c, l.handles[plus_find(&l, "a")], b, 1, &hb, NULL), 1);
	for (int i = 0; i < l.n; i++) {
		if (l.handles[i])
			gofer_close(c, &l.handles[i], 1);
	}
	struct gofer_attr attr;
	cr_assert_eq(gofer_stat(c, l.handles[plus_find(&l, "sub")], &attr), -EBADF, "closed");
}

Test(gofer_server, getdentsplus_of_a_file_is_enotdir_and_of_a_bad_handle_ebadf)
{
	static struct plus_listing l;
	uint64_t h = walk_path("file", NULL);

	cr_assert_eq(gofer_getdents_plus(c, h, 0, GOFER_GETDENTS_MAX, 0, collect_plus, &l, NULL),
		     -ENOTDIR);
	cr_assert_eq(gofer_getdents_plus(c, 12345, 0, GOFER_GETDENTS_MAX, 0, collect_plus, &l,
					 NULL),
		     -EBADF);
	cr_assert_eq(gofer_getdents_plus(c, root, 0, (uint32_t)gofer_dirent_plus_size(1) - 1, 0,
					 collect_plus, &l, NULL),
		     -EINVAL, "too small for any entry");
	cr_assert_eq(l.n, 0);
}
