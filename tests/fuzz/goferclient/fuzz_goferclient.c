/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the gofer protocol from the client side. The sentry's gofer client
 * (sentry/fs/gofer/client.c, with its own copy of the codec) talks over a real SOCK_SEQPACKET
 * socket to a hostile gofer: a thread of this process that answers each request with the next
 * reply of the input, wrong lengths, tags, types, counts and descriptors included. A hostile
 * answer must give the caller an error (-EIO, or the errno the gofer claims), never a crash, a
 * hang, a leaked descriptor or a result outside what client.h promises.
 *
 * Input: byte 0 is the number of calls N (at most 48), then N call records of 4 bytes (call,
 * a, b, c: which client function, and its arguments, see run_call), then the replies, each
 *	u8 flags, u16 len (little-endian), len bytes (fewer if the input ends)
 * flags: bit 0 sets the reply's tag to the request's, bit 1 its type to the request's (with
 * GOFER_REPLY), bit 2 its length field to the packet's; bits 3-4 are the number of descriptors
 * (of /dev/null) sent with it; bit 5 closes the connection instead of answering. The gofer
 * closes the connection when the replies run out. Calls take handles from the table of handles
 * earlier replies gave (argument a indexes it; past its end, a made-up handle).
 *
 * Oracles besides the sanitizers: every call returns a count within what it asked or -errno in
 * 1..4095; a descriptor returned by gofer_open/gofer_create is open (then closed here); after
 * the client is destroyed no socket or /dev/null descriptor is left open.
 *
 * With GOFERCLIENT_FUZZ_VERBOSE set, the client's warnings and the descriptors open after each
 * call are printed. With GOFERCLIENT_FUZZ_SEEDS=DIR set, seeds are made first by running call scripts against the
 * real gofer (gofer/server.c's dispatcher over a temporary tree) and recording its replies.
 * Build and run: tests/fuzz/goferclient/run.sh SECONDS.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "gofer/server.h"
#include "sentry/fs/gofer/client.h"
#include "tests/fuzz/fuzz_fds.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_CALLS 48
#define MAX_HANDLES 64

static int base_fds;
static bool verbose; /* GOFERCLIENT_FUZZ_VERBOSE set: the descriptors open after each call */

static void die(const char *what)
{
	fprintf(stderr, "fuzz_goferclient: %s: %s\n", what, strerror(errno));
	abort();
}

/* --- the gofer's side --- */

struct gofer_side {
	int sock;
	const uint8_t *replies; /* fuzz mode: the input's replies */
	size_t len;
	struct gofer_server *server; /* record mode: the real dispatcher */
	FILE *record; /* record mode: where its replies go, as reply records */
};

static void *gofer_main(void *arg)
{
	static uint8_t req[GOFER_MSG_MAX], rep[GOFER_MSG_MAX];
	struct gofer_side *g = arg;
	size_t off = 0;

	for (;;) {
		ssize_t n;
		int fds[3], nfds = 0;
		uint8_t flags;
		size_t len;

		do
			n = recv(g->sock, req, sizeof(req), 0);
		while (n < 0 && errno == EINTR);
		if (n <= 0)
			break;
		if (g->server) {
			int fd;

			len = gofer_server_handle(g->server, req, (size_t)n, rep, &fd);
			flags = fd >= 0 ? 1 << 3 : 0;
			if (fd >= 0)
				fds[nfds++] = fd;
			fputc(flags, g->record);
			fputc((int)(len & 0xff), g->record);
			fputc((int)(len >> 8), g->record);
			fwrite(rep, 1, len, g->record);
		} else {
			if (off + 3 > g->len)
				break;
			flags = g->replies[off];
			len = (size_t)g->replies[off + 1] | (size_t)g->replies[off + 2] << 8;
			off += 3;
			len = len < g->len - off ? len : g->len - off;
			memcpy(rep, g->replies + off, len);
			off += len;
			if (flags & 0x20)
				break;
			if ((flags & 1) && len >= 12 && n >= 12)
				memcpy(rep + 8, req + 8, 4);
			if ((flags & 2) && len >= 6 && n >= 6) {
				uint16_t type;

				memcpy(&type, req + 4, 2);
				type |= GOFER_REPLY;
				memcpy(rep + 4, &type, 2);
			}
			if ((flags & 4) && len >= 4) {
				uint32_t l = (uint32_t)len;

				memcpy(rep, &l, 4);
			}
			for (nfds = 0; nfds < ((flags >> 3) & 3); nfds++) {
				fds[nfds] = open("/dev/null", O_RDWR | O_CLOEXEC);
				if (fds[nfds] < 0)
					die("/dev/null");
			}
		}
		fuzz_send_fds(g->sock, rep, len, fds, nfds);
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
	}
	close(g->sock);
	return NULL;
}

/* --- the client's side --- */

static const char *const names[] = { "a", "b", "f", "l", "new", "d2", "fifo", "sym", "x", "" };
#define NNAMES (sizeof(names) / sizeof(names[0]))

struct calls {
	struct gofer_client *c;
	uint64_t handles[MAX_HANDLES];
	int nh;
	int stop_after; /* getdents callbacks: entries to take before asking to stop */
};

static volatile size_t sink;

static void add_handle(struct calls *s, uint64_t h)
{
	if (h == 0)
		abort(); /* 0 is never a handle */
	if (s->nh < MAX_HANDLES)
		s->handles[s->nh++] = h;
	else
		gofer_close(s->c, &h, 1);
}

static uint64_t handle(struct calls *s, uint8_t a)
{
	return a < s->nh ? s->handles[a] : 0x100000000ULL + a;
}

static void check_ret(long r, long max)
{
	if (r > max || (r < 0 && r < -4095)) {
		fprintf(stderr, "fuzz_goferclient: a call returned %ld (at most %ld)\n", r, max);
		abort();
	}
}

static void check_fd(int fd)
{
	check_ret(fd, INT32_MAX);
	if (fd >= 0) {
		if (fcntl(fd, F_GETFD) < 0)
			die("a returned descriptor");
		close(fd);
	}
}

static int dent_fn(void *arg, const struct gofer_dirent *d)
{
	struct calls *s = arg;

	if (d->namelen == 0 || d->namelen > GOFER_NAME_MAX || memchr(d->name, '/', d->namelen))
		abort(); /* the codec lets no such name through */
	sink += (size_t)d->name[d->namelen - 1];
	return --s->stop_after == 0;
}

static int dent_plus_fn(void *arg, const struct gofer_dirent_plus *e)
{
	struct calls *s = arg;
	int stop = dent_fn(arg, &e->d);

	if (e->handle)
		add_handle(s, e->handle);
	return stop;
}

static void run_call(struct calls *s, const uint8_t *r)
{
	static const int open_flags[] = { O_RDONLY, O_WRONLY, O_RDWR | O_APPEND,
					  O_RDONLY | O_DIRECTORY };
	struct gofer_client *c = s->c;
	uint8_t a = r[1], b = r[2], k = r[3];
	struct gofer_attr attrs[80], attr;
	uint64_t hs[80], h = 0;
	const char *wn[80];
	char buf[512];
	int n;
	long ret;

	switch (r[0] % 23) {
	case 0:
		ret = gofer_mount(c, &h, &attr);
		check_ret(ret, 0);
		if (ret == 0)
			add_handle(s, h);
		break;
	case 1: /* a walk of up to 70 names (more than GOFER_WALK_MAX: several messages) */
	case 9:
		n = k % 71;
		for (int i = 0; i < n; i++)
			wn[i] = names[(b + i) % (NNAMES - 1)];
		if (r[0] % 23 == 9) {
			ret = gofer_walk_stat(c, handle(s, a), wn, n % 65, attrs);
			check_ret(ret, n % 65);
			break;
		}
		ret = gofer_walk(c, handle(s, a), wn, n, hs, (b & 1) ? attrs : NULL);
		check_ret(ret, n);
		for (int i = 0; i < ret; i++)
			add_handle(s, hs[i]);
		break;
	case 2:
		check_ret(gofer_stat(c, handle(s, a), &attr), 0);
		break;
	case 3:
		check_fd(gofer_open(c, handle(s, a), open_flags[b % 4]));
		break;
	case 4:
		check_ret(gofer_readlink(c, handle(s, a), buf, (size_t)b + 1), b + 1);
		break;
	case 5:
		s->stop_after = k % 8;
		check_ret(gofer_getdents_max(c, handle(s, a), (int64_t)b, (k & 8) ? 64 : 4096,
					     dent_fn, s),
			  INT32_MAX);
		break;
	case 6: {
		bool eof;

		s->stop_after = k % 8;
		check_ret(gofer_getdents_plus(c, handle(s, a), (int64_t)b, (k & 8) ? 512 : 16384,
					      (k & 16) ? GOFER_GETDENTS_DIR_HANDLES : 0,
					      dent_plus_fn, s, &eof),
			  INT32_MAX);
		break;
	}
	case 7: {
		struct gofer_statfs st;

		check_ret(gofer_statfs(c, handle(s, a), &st), 0);
		break;
	}
	case 8:
		if (a < s->nh) {
			n = 1 + b % (s->nh - a);
			gofer_close(c, s->handles + a, n);
			memmove(s->handles + a, s->handles + a + n,
				(size_t)(s->nh - a - n) * sizeof(uint64_t));
			s->nh -= n;
		}
		break;
	case 10: {
		struct gofer_setstat st = { .mask = b & GOFER_SETSTAT_ALL,
					    .mode = 0644,
					    .size = k,
					    .atime_nsec = GOFER_UTIME_NOW,
					    .mtime_nsec = GOFER_UTIME_OMIT };

		check_ret(gofer_setstat(c, handle(s, a), &st, (k & 1) ? &attr : NULL), 0);
		break;
	}
	case 11:
		check_fd(gofer_create(c, handle(s, a), names[b % NNAMES], O_RDWR, 0644, 0, 0,
				      (k & 1) ? &h : NULL, (k & 2) ? &attr : NULL));
		if ((k & 1) && h)
			add_handle(s, h);
		break;
	case 12:
	case 13:
	case 14:
		h = 0;
		if (r[0] % 23 == 12)
			ret = gofer_mkdir(c, handle(s, a), names[b % NNAMES], 0755, 0, 0,
					  (k & 1) ? &h : NULL, &attr);
		else if (r[0] % 23 == 13)
			ret = gofer_mknod(c, handle(s, a), names[b % NNAMES], S_IFIFO | 0644, 0, 0,
					  (k & 1) ? &h : NULL, &attr);
		else
			ret = gofer_symlink(c, handle(s, a), names[b % NNAMES], "f", 0, 0,
					    (k & 1) ? &h : NULL, &attr);
		check_ret(ret, 0);
		if (ret == 0 && h)
			add_handle(s, h);
		break;
	case 15:
		h = 0;
		ret = gofer_link(c, handle(s, a), names[b % NNAMES], handle(s, k),
				 names[k % NNAMES], (b & 1) ? &h : NULL, &attr);
		check_ret(ret, 0);
		if (ret == 0 && h)
			add_handle(s, h);
		break;
	case 16:
		check_ret(gofer_unlink(c, handle(s, a), names[b % NNAMES],
				       (k & 1) ? GOFER_UNLINK_REMOVEDIR : 0),
			  0);
		break;
	case 17:
		check_ret(gofer_rename(c, handle(s, a), names[b % NNAMES], handle(s, k >> 4),
				       names[k % NNAMES], k & 3),
			  0);
		break;
	case 18:
		check_ret(gofer_fsync(c, handle(s, a), b & 1), 0);
		break;
	case 19:
		check_ret(gofer_getxattr(c, handle(s, a),
					 (b & 1) ? "user.x" : "security.capability", buf,
					 (k & 1) ? 0 : (size_t)k),
			  (k & 1) ? GOFER_XATTR_SIZE_MAX : k);
		break;
	case 20:
		check_ret(gofer_setxattr(c, handle(s, a), "user.x", "value", (size_t)(b % 6),
					 k & 3),
			  0);
		break;
	case 21:
		check_ret(gofer_listxattr(c, handle(s, a), buf, (k & 1) ? 0 : (size_t)k),
			  (k & 1) ? GOFER_XATTR_SIZE_MAX : k);
		break;
	case 22:
		check_ret(gofer_removexattr(c, handle(s, a), "user.x"), 0);
		break;
	}
}

/* Runs the calls of input against a gofer side; returns when both sides are done. */
static void run(const uint8_t *calls, int ncalls, struct gofer_side *g)
{
	struct calls s = { 0 };
	pthread_t t;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		die("socketpair");
	g->sock = sv[1];
	if (gofer_client_create(sv[0], &s.c) != 0)
		die("gofer_client_create");
	if (pthread_create(&t, NULL, gofer_main, g) != 0)
		die("pthread_create");
	for (int i = 0; i < ncalls; i++) {
		run_call(&s, calls + 4 * i);
		if (verbose)
			fprintf(stderr, "fuzz_goferclient: call %d (%u): %d descriptor(s) open\n",
				i, calls[4 * i] % 23, fuzz_count_fds(false));
	}
	gofer_client_destroy(s.c);
	pthread_join(t, NULL);
}

/* --- seeds: scripts against the real gofer --- */

static char tree[96];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void make_tree(void)
{
	char p[160];
	int fd;

	nftw(tree, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	if (mkdir(tree, 0755) < 0)
		die(tree);
	snprintf(p, sizeof(p), "%s/a", tree);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/a/b", tree);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/f", tree);
	fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, "hello\n", 6) != 6)
		die(p);
	close(fd);
	snprintf(p, sizeof(p), "%s/l", tree);
	if (symlink("f", p) < 0)
		die(p);
}

static void record(const char *dir, const char *name, const uint8_t *calls, int n)
{
	struct gofer_side g = { 0 };
	char path[4096];
	int root, proc;

	make_tree();
	root = open(tree, O_PATH | O_DIRECTORY | O_CLOEXEC);
	proc = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0 || proc < 0 ||
	    gofer_server_create(root, proc, &(struct gofer_server_config){ 0 }, &g.server) < 0)
		die("gofer_server_create");
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	g.record = fopen(path, "wb");
	if (!g.record)
		die(path);
	fputc(n, g.record);
	fwrite(calls, 4, (size_t)n, g.record);
	run(calls, n, &g);
	fclose(g.record);
	gofer_server_destroy(g.server);
	nftw(tree, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void write_seeds(const char *dir)
{
	/* call, a, b, c (see run_call); handle 0 is the root after the mount. */
	static const uint8_t read_calls[][4] = {
		{ 0, 0, 0, 0 }, /* mount: handle 0 */
		{ 1, 0, 0, 1 }, /* walk a: handle 1 */
		{ 1, 1, 1, 1 }, /* walk a/b: handle 2 */
		{ 1, 0, 2, 1 }, /* walk f: handle 3 */
		{ 1, 0, 3, 1 }, /* walk l: handle 4 */
		{ 2, 3, 0, 0 }, /* stat f */
		{ 3, 3, 0, 0 }, /* open f */
		{ 3, 0, 3, 0 }, /* open / O_DIRECTORY */
		{ 4, 4, 100, 0 }, /* readlink l */
		{ 5, 0, 0, 0 }, /* getdents / */
		{ 6, 0, 0, 16 }, /* getdentsplus / with handles */
		{ 7, 0, 0, 0 }, /* statfs */
		{ 9, 0, 0, 3 }, /* walkstat a, b, f */
		{ 1, 0, 0, 70 }, /* a walk of 70 names: two messages, stops at the first missing */
		{ 19, 3, 0, 1 }, /* getxattr security.capability size 0 */
		{ 21, 3, 0, 64 }, /* listxattr */
		{ 8, 1, 2, 0 }, /* close a and a/b */
	};
	static const uint8_t write_calls[][4] = {
		{ 0, 0, 0, 0 }, /* mount */
		{ 11, 0, 4, 3 }, /* create new, with a handle */
		{ 12, 0, 5, 1 }, /* mkdir d2, with a handle */
		{ 13, 0, 6, 0 }, /* mknod fifo */
		{ 14, 0, 7, 1 }, /* symlink sym -> f */
		{ 15, 0, 2, 0 }, /* link f -> a (exists: EEXIST) */
		{ 15, 0, 2, 9 }, /* link f -> x */
		{ 10, 1, 0x3f, 1 }, /* setstat new */
		{ 20, 1, 5, 0 }, /* setxattr user.x */
		{ 19, 1, 1, 64 }, /* getxattr user.x */
		{ 21, 1, 0, 64 }, /* listxattr */
		{ 22, 1, 0, 0 }, /* removexattr */
		{ 18, 1, 0, 0 }, /* fsync */
		{ 17, 0, 4, 0x08 }, /* rename new -> x (replaces it) */
		{ 16, 0, 8, 0 }, /* unlink x */
		{ 16, 0, 5, 1 }, /* rmdir d2 */
		{ 5, 0, 0, 8 }, /* getdents, small */
	};

	record(dir, "read-calls", &read_calls[0][0], (int)(sizeof(read_calls) / 4));
	record(dir, "write-calls", &write_calls[0][0], (int)(sizeof(write_calls) / 4));
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("GOFERCLIENT_FUZZ_SEEDS");
	const char *tmp = getenv("TMPDIR");
	char dir[64];

	signal(SIGPIPE, SIG_IGN);
	verbose = getenv("GOFERCLIENT_FUZZ_VERBOSE") != NULL;
	/* Every hostile reply makes the client warn: only with verbose. */
	if (!verbose)
		log_set_level(LOG_ERROR);
	if (seeds && *seeds) {
		snprintf(dir, sizeof(dir), "%s/fuzz-goferclient.XXXXXX",
			 tmp && strlen(tmp) < 24 ? tmp : "/tmp");
		if (!mkdtemp(dir))
			die("mkdtemp");
		snprintf(tree, sizeof(tree), "%s/tree", dir);
		write_seeds(seeds);
		rmdir(dir);
	}
	base_fds = fuzz_count_fds(false);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gofer_side g = { 0 };
	int ncalls, n;

	if (size < 1)
		return 0;
	ncalls = data[0] % (MAX_CALLS + 1);
	if (size < 1 + 4 * (size_t)ncalls)
		ncalls = (int)((size - 1) / 4);
	g.replies = data + 1 + 4 * ncalls;
	g.len = size - 1 - 4 * (size_t)ncalls;
	run(data + 1, ncalls, &g);
	n = fuzz_count_fds(false);
	if (n > base_fds) {
		fprintf(stderr, "fuzz_goferclient: %d descriptor(s) left open\n", n - base_fds);
		fuzz_count_fds(true);
		abort();
	}
	return 0;
}
