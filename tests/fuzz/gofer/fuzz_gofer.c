/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: each input is one message to the gofer's dispatcher (gofer_server_handle),
 * served by a fresh server over a temporary tree, with a few handles already made (the root is
 * handle 0x100000001, then a, a/b, many, up_link, file: 0x100000002...). An input whose tag
 * (bytes 8..11) is even goes to a read-only server over a fixed tree; an odd tag to a writable
 * server over a scratch tree, which the write messages change from one input to the next (it
 * is made again when it no longer has the names above, and every 512 writable inputs). A tag
 * with bit 1 set gives the server owner mappings (--uid-map/--gid-map 0:0:1000).
 *
 * Oracles besides the sanitizers: the dispatcher's reply always decodes; a GETDENTSPLUS reply
 * made exactly as many new handles as it carries (none when it failed); a request or reply that
 * decodes re-encodes to the same bytes (the encoding is canonical); nothing outside the scratch
 * tree changes: the directory holding both trees keeps exactly its three entries, and a
 * sentinel file beside them keeps its inode, mode, owner, size, times and link count.
 *
 * With GOFER_FUZZ_SEEDS=DIR set, one valid message of each type is written to DIR first.
 * Build and run: tests/fuzz/gofer/run.sh SECONDS.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/idmap.h"
#include "gofer/proto.h"
#include "gofer/server.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char jail[64]; /* holds tree/, wtree/ and sentinel */
static char tree[96]; /* read-only tree */
static char wtree[96]; /* writable scratch tree */
static char sentinel[96];
static struct stat sentinel_st;
static unsigned writable_runs;
static uint8_t rep_buf[GOFER_MSG_MAX];
static uint8_t enc_buf[GOFER_MSG_MAX];
static struct gofer_req req;
static struct gofer_rep rep;

static void die(const char *what)
{
	fprintf(stderr, "fuzz_gofer: %s: %s\n", what, strerror(errno));
	abort();
}

static void put_file(const char *root, const char *name, const char *content)
{
	char path[160];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, content, strlen(content)) < 0)
		die(path);
	close(fd);
}

static void put(const char *root, const char *name, int kind)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/%s", root, name);
	if ((kind == 'd' && mkdir(path, 0755) < 0) || (kind == 'l' && symlink("../..", path) < 0) ||
	    (kind == 'p' && mkfifo(path, 0644) < 0))
		die(path);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

static void remove_all(void)
{
	nftw(jail, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Makes the tree the handles of make_server name, at root. */
static void fill_tree(const char *root)
{
	char name[32];

	if (mkdir(root, 0755) < 0)
		die(root);
	put_file(root, "file", "hello gofer\n");
	put(root, "a", 'd');
	put(root, "a/b", 'd');
	put_file(root, "a/b/c", "deep\n");
	put(root, "many", 'd');
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "many/f%02d", i);
		put_file(root, name, "x");
	}
	put(root, "up_link", 'l');
	put(root, "fifo", 'p');
}

static void reset_wtree(void)
{
	nftw(wtree, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	fill_tree(wtree);
}

/* Aborts when anything outside the scratch tree changed. */
static void check_jail(void)
{
	struct stat st;
	struct dirent *e;
	int n = 0;
	DIR *d;

	if (lstat(sentinel, &st) < 0 || st.st_ino != sentinel_st.st_ino ||
	    st.st_mode != sentinel_st.st_mode || st.st_uid != sentinel_st.st_uid ||
	    st.st_gid != sentinel_st.st_gid || st.st_size != sentinel_st.st_size ||
	    st.st_nlink != sentinel_st.st_nlink ||
	    st.st_mtim.tv_sec != sentinel_st.st_mtim.tv_sec ||
	    st.st_mtim.tv_nsec != sentinel_st.st_mtim.tv_nsec ||
	    st.st_ctim.tv_nsec != sentinel_st.st_ctim.tv_nsec)
		abort(); /* the sentinel beside the scratch tree was changed */
	d = opendir(jail);
	if (!d)
		die(jail);
	while ((e = readdir(d)))
		n++;
	closedir(d);
	if (n != 5) /* ., .., tree, wtree, sentinel */
		abort();
}

/* Encodes req and runs it through s; returns the decoded reply's error. */
static int call(struct gofer_server *s)
{
	ssize_t n = gofer_req_encode(&req, enc_buf, sizeof(enc_buf));
	size_t len;
	int fd;

	if (n < 0)
		abort();
	len = gofer_server_handle(s, enc_buf, (size_t)n, rep_buf, &fd);
	if (fd >= 0)
		close(fd);
	if (gofer_rep_decode(rep_buf, len, &rep) < 0)
		abort();
	return (int)rep.error;
}

/* Walks one name; returns false when it is not there (the scratch tree changed). */
static bool walk1(struct gofer_server *s, uint64_t dir, const char *name)
{
	req = (struct gofer_req){ .type = GOFER_MSG_WALK, .tag = 1 };
	req.walk.dir = dir;
	req.walk.n = 1;
	req.walk.names[0] = (struct gofer_name){ name, (uint16_t)strlen(name) };
	return call(s) == 0 && rep.walk.n == 1;
}

static struct gofer_server *try_make_server(bool writable, bool mapped)
{
	struct gofer_server_config cfg = { .readonly = !writable, .max_handles = 64 };
	static struct idmap map; /* 0:0:1000: the trees' owner is mapped, ids past 999 are not */
	struct gofer_server *s;
	uint64_t root;

	if (mapped) {
		if (!map.n && idmap_parse("0:0:1000", &map) < 0)
			abort();
		cfg.uid_map = cfg.gid_map = &map;
	}

	if (gofer_server_create(open(writable ? wtree : tree, O_PATH | O_DIRECTORY | O_CLOEXEC),
				open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC), &cfg,
				&s) < 0)
		die("gofer_server_create");
	req = (struct gofer_req){ .type = GOFER_MSG_MOUNT, .tag = 1 };
	req.mount.version = GOFER_PROTO_VERSION;
	if (call(s) != 0)
		abort();
	root = rep.mount.root;
	if (walk1(s, root, "a") && walk1(s, rep.walk.entries[0].handle, "b") &&
	    walk1(s, root, "many") && walk1(s, root, "up_link") && walk1(s, root, "file"))
		return s;
	gofer_server_destroy(s);
	return NULL;
}

static struct gofer_server *make_server(bool writable, bool mapped)
{
	struct gofer_server *s;

	if (writable && ++writable_runs % 512 == 0)
		reset_wtree();
	s = try_make_server(writable, mapped);
	if (!s && writable) {
		reset_wtree();
		s = try_make_server(writable, mapped);
	}
	if (!s)
		abort(); /* the read-only tree changed */
	return s;
}

static void write_seed(const char *dir, int i, const void *buf, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/seed-%02d", dir, i);
	f = fopen(path, "wbx");
	if (!f)
		return; /* already there */
	fwrite(buf, 1, len, f);
	fclose(f);
}

static void write_seeds(const char *dir)
{
	static const char *const names[] = { "a", "b", "c" };
	const uint64_t root = (1ULL << 32) | 1, a = root + 1, many = root + 3, link = root + 4,
		       file = root + 5;
	static struct gofer_req seeds[GOFER_MSG_TYPE_END + 4];
	int n = 0;

	memset(seeds, 0, sizeof(seeds));
	seeds[n].type = GOFER_MSG_MOUNT;
	seeds[n++].mount.version = GOFER_PROTO_VERSION;
	seeds[n].type = GOFER_MSG_WALK;
	seeds[n].walk.dir = a;
	seeds[n].walk.n = 3;
	for (int i = 0; i < 3; i++)
		seeds[n].walk.names[i] = (struct gofer_name){ names[i], 1 };
	n++;
	seeds[n].type = GOFER_MSG_STAT;
	seeds[n++].node.handle = file;
	seeds[n].type = GOFER_MSG_OPEN;
	seeds[n++].open.handle = file;
	seeds[n].type = GOFER_MSG_READLINK;
	seeds[n++].node.handle = link;
	seeds[n].type = GOFER_MSG_GETDENTS;
	seeds[n].getdents.handle = many;
	seeds[n++].getdents.max = 100;
	seeds[n] = seeds[n - 1];
	seeds[n++].type = GOFER_MSG_GETDENTSPLUS;
	seeds[n].type = GOFER_MSG_GETDENTSPLUS;
	seeds[n].getdents.handle = root;
	seeds[n].getdents.max = 4000;
	seeds[n++].getdents.flags = GOFER_GETDENTS_DIR_HANDLES;
	seeds[n].type = GOFER_MSG_STATFS;
	seeds[n++].node.handle = root;
	seeds[n].type = GOFER_MSG_CLOSE;
	seeds[n].close.n = 2;
	seeds[n].close.handles[0] = file;
	seeds[n++].close.handles[1] = 77;
	seeds[n] = seeds[1];
	seeds[n++].type = GOFER_MSG_WALKSTAT;
	seeds[n].type = GOFER_MSG_SETSTAT;
	seeds[n].setstat.handle = file;
	seeds[n++].setstat.st = (struct gofer_setstat){ .mask = GOFER_SETSTAT_ALL,
							.mode = 0600,
							.uid = 1,
							.gid = 2,
							.size = 3,
							.atime_nsec = GOFER_UTIME_NOW,
							.mtime_nsec = GOFER_UTIME_OMIT };
	for (uint16_t t = GOFER_MSG_CREATE; t <= GOFER_MSG_SYMLINK; t++) {
		seeds[n].type = t;
		seeds[n].mk.dir = a;
		seeds[n].mk.name = (struct gofer_name){ "new", 3 };
		seeds[n].mk.uid = 1000;
		seeds[n].mk.gid = 1000;
		seeds[n].mk.flags = t == GOFER_MSG_CREATE ? 2 /* O_RDWR */ : 0;
		seeds[n].mk.mode = t == GOFER_MSG_MKNOD ? S_IFIFO | 0644 : 0644;
		if (t == GOFER_MSG_SYMLINK) {
			seeds[n].mk.mode = 0;
			seeds[n].mk.target = (struct gofer_name){ "../file", 7 };
		}
		n++;
	}
	seeds[n].type = GOFER_MSG_LINK;
	seeds[n].link.olddir = root;
	seeds[n].link.newdir = a;
	seeds[n].link.oldname = (struct gofer_name){ "file", 4 };
	seeds[n++].link.newname = (struct gofer_name){ "hard", 4 };
	seeds[n].type = GOFER_MSG_UNLINK;
	seeds[n].unlink.dir = root;
	seeds[n++].unlink.name = (struct gofer_name){ "up_link", 7 };
	seeds[n] = seeds[n - 2];
	seeds[n].type = GOFER_MSG_RENAME;
	seeds[n++].link.flags = GOFER_RENAME_NOREPLACE;
	seeds[n].type = GOFER_MSG_FSYNC;
	seeds[n++].fsync.handle = file;
	for (uint16_t t = GOFER_MSG_GETXATTR; t <= GOFER_MSG_REMOVEXATTR; t++) {
		seeds[n].type = t;
		seeds[n].xattr.handle = file;
		if (t != GOFER_MSG_LISTXATTR)
			seeds[n].xattr.name = (struct gofer_name){ "user.k", 6 };
		if (t == GOFER_MSG_GETXATTR || t == GOFER_MSG_LISTXATTR)
			seeds[n].xattr.size = 100;
		if (t == GOFER_MSG_SETXATTR) {
			seeds[n].xattr.value = (const uint8_t *)"value";
			seeds[n].xattr.size = 5;
		}
		n++;
	}
	(void)link;
	for (int i = 0; i < n; i++) {
		ssize_t len;

		/* Each seed twice: an even tag for the read-only server, an odd one for the
		 * writable one. */
		for (uint32_t parity = 0; parity < 2; parity++) {
			seeds[i].tag = 2 * ((uint32_t)i + 1) + parity;
			len = gofer_req_encode(&seeds[i], enc_buf, sizeof(enc_buf));
			if (len < 0)
				abort();
			write_seed(dir, 2 * i + (int)parity, enc_buf, (size_t)len);
		}
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("GOFER_FUZZ_SEEDS");
	const char *tmp = getenv("TMPDIR");
	int fd;

	snprintf(jail, sizeof(jail), "%s/husk-gofer-fuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(jail))
		die("mkdtemp");
	atexit(remove_all);
	snprintf(tree, sizeof(tree), "%s/tree", jail);
	snprintf(wtree, sizeof(wtree), "%s/wtree", jail);
	snprintf(sentinel, sizeof(sentinel), "%s/sentinel", jail);
	fill_tree(tree);
	fill_tree(wtree);
	fd = open(sentinel, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, "keep", 4) != 4 || fstat(fd, &sentinel_st) < 0)
		die(sentinel);
	close(fd);
	if (seeds && *seeds)
		write_seeds(seeds);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bool writable = size >= 12 && (data[8] & 1);
	/* Owner mappings (husk-gofer --uid-map) in half the runs. */
	bool mapped = size >= 12 && (data[8] & 2);
	struct gofer_server *s = make_server(writable, mapped);
	size_t len;
	ssize_t n;
	int fd;

	uint32_t live = gofer_server_live_handles(s);

	len = gofer_server_handle(s, data, size, rep_buf, &fd);
	if (fd >= 0)
		close(fd);
	if (gofer_rep_decode(rep_buf, len, &rep) < 0)
		abort(); /* the dispatcher sent something its own client would reject */
	if (rep.type == GOFER_MSG_GETDENTSPLUS) {
		uint32_t made = 0;
		size_t off = 0;

		for (uint32_t i = 0; !rep.error && i < rep.getdents.n; i++) {
			struct gofer_dirent_plus e;
			int used = gofer_dirent_plus_decode(rep.getdents.raw + off,
							    rep.getdents.size - off, &e);

			if (used < 0)
				abort();
			off += (size_t)used;
			made += e.handle != 0;
		}
		if (gofer_server_live_handles(s) != live + made)
			abort(); /* a handle leaked, or one the sentry does not know of was made */
	}
	gofer_server_destroy(s);
	if (writable)
		check_jail();

	/* Canonical encodings: what decodes re-encodes to the same bytes. */
	if (gofer_req_decode(data, size, &req) == 0) {
		n = gofer_req_encode(&req, enc_buf, sizeof(enc_buf));
		if (n != (ssize_t)size || memcmp(enc_buf, data, size))
			abort();
	}
	if (gofer_rep_decode(data, size, &rep) == 0) {
		n = gofer_rep_encode(&rep, enc_buf, sizeof(enc_buf));
		if (n != (ssize_t)size || memcmp(enc_buf, data, size))
			abort();
	}
	return 0;
}
