/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: each input is one message to the gofer's dispatcher (gofer_server_handle),
 * served by a fresh read-only server over a temporary tree, with a few handles already made
 * (the root is handle 0x100000001, then a, a/b, many, up_link, file: 0x100000002...).
 *
 * Oracles besides the sanitizers: the dispatcher's reply always decodes; a request or reply that
 * decodes re-encodes to the same bytes (the encoding is canonical).
 *
 * With GOFER_FUZZ_SEEDS=DIR set, one valid message of each type is written to DIR first.
 * Build and run: tests/fuzz/gofer/run.sh SECONDS.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gofer/proto.h"
#include "gofer/server.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char tree[64];
static uint8_t rep_buf[GOFER_MSG_MAX];
static uint8_t enc_buf[GOFER_MSG_MAX];
static struct gofer_req req;
static struct gofer_rep rep;

static void die(const char *what)
{
	fprintf(stderr, "fuzz_gofer: %s: %s\n", what, strerror(errno));
	abort();
}

static void put_file(const char *name, const char *content)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", tree, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, content, strlen(content)) < 0)
		die(path);
	close(fd);
}

static void put(const char *name, int kind)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", tree, name);
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

static void remove_tree(void)
{
	nftw(tree, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
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

static void walk1(struct gofer_server *s, uint64_t dir, const char *name)
{
	req = (struct gofer_req){ .type = GOFER_MSG_WALK, .tag = 1 };
	req.walk.dir = dir;
	req.walk.n = 1;
	req.walk.names[0] = (struct gofer_name){ name, (uint16_t)strlen(name) };
	if (call(s) != 0 || rep.walk.n != 1)
		abort();
}

static struct gofer_server *make_server(void)
{
	struct gofer_server_config cfg = { .readonly = true, .max_handles = 64 };
	struct gofer_server *s;
	uint64_t root;

	if (gofer_server_create(open(tree, O_PATH | O_DIRECTORY | O_CLOEXEC),
				open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC), &cfg,
				&s) < 0)
		die("gofer_server_create");
	req = (struct gofer_req){ .type = GOFER_MSG_MOUNT, .tag = 1 };
	req.mount.version = GOFER_PROTO_VERSION;
	if (call(s) != 0)
		abort();
	root = rep.mount.root;
	walk1(s, root, "a");
	walk1(s, rep.walk.entries[0].handle, "b");
	walk1(s, root, "many");
	walk1(s, root, "up_link");
	walk1(s, root, "file");
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
	struct gofer_req seeds[GOFER_MSG_TYPE_END];
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
	seeds[n].type = GOFER_MSG_STATFS;
	seeds[n++].node.handle = root;
	seeds[n].type = GOFER_MSG_CLOSE;
	seeds[n].close.n = 2;
	seeds[n].close.handles[0] = file;
	seeds[n++].close.handles[1] = 77;
	seeds[n++].type = GOFER_MSG_MKDIR;
	for (int i = 0; i < n; i++) {
		ssize_t len;

		seeds[i].tag = (uint32_t)i + 1;
		len = gofer_req_encode(&seeds[i], enc_buf, sizeof(enc_buf));
		if (len < 0)
			abort();
		write_seed(dir, i, enc_buf, (size_t)len);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("GOFER_FUZZ_SEEDS");
	const char *tmp = getenv("TMPDIR");
	char name[32];

	snprintf(tree, sizeof(tree), "%s/husk-gofer-fuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(tree))
		die("mkdtemp");
	atexit(remove_tree);
	put_file("file", "hello gofer\n");
	put("a", 'd');
	put("a/b", 'd');
	put_file("a/b/c", "deep\n");
	put("many", 'd');
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "many/f%02d", i);
		put_file(name, "x");
	}
	put("up_link", 'l');
	put("fifo", 'p');
	if (seeds && *seeds)
		write_seeds(seeds);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gofer_server *s = make_server();
	size_t len;
	ssize_t n;
	int fd;

	len = gofer_server_handle(s, data, size, rep_buf, &fd);
	if (fd >= 0)
		close(fd);
	if (gofer_rep_decode(rep_buf, len, &rep) < 0)
		abort(); /* the dispatcher sent something its own client would reject */
	gofer_server_destroy(s);

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
