/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk-agent: the in-guest helper of husk serve. The server runs every file operation inside a
 * sandbox by exec'ing this binary there (mounted read-only at /.husk/husk-agent), so that paths
 * resolve through the sandbox's own VFS and nothing can reach the host. It is a static binary
 * with no dependency on the sandbox's root.
 *
 *   husk-agent init              an idle pid 1: reaps children, exits 0 on SIGTERM/SIGINT
 *   husk-agent put PATH [MODE]   stdin to PATH (via PATH.husk-tmp.PID and rename)
 *   husk-agent get PATH          a regular file's bytes to stdout
 *   husk-agent stat PATH         one JSON object (lstat)
 *   husk-agent ls DIR            {"path", "entries": [...]} sorted by name
 *   husk-agent tar-x DIR         a tar stream on stdin extracted into DIR
 *   husk-agent tar-c PATH        a tar stream of PATH on stdout
 *
 * Exit codes (the server maps them onto HTTP statuses): 0 ok, 2 bad usage, bad path or bad
 * archive, 3 not found, 4 not a directory / is a directory, 5 no space, 6 permission denied
 * (EACCES, EPERM, EROFS), 1 anything else; a failure prints one line on stderr.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"

#define EXIT_OTHER 1
#define EXIT_USAGE 2
#define EXIT_NOT_FOUND 3
#define EXIT_NOT_DIR 4
#define EXIT_NO_SPACE 5
#define EXIT_DENIED 6

#define IO_CHUNK 65536
#define BLOCK 512
/* Largest pax header or GNU long name accepted: names are far shorter; this bounds memory. */
#define MAX_META (1 << 20)

static const char *verb = "husk-agent";

/*
 * The temporary file a failed put or tar-x member must not leave behind: set before it is
 * created, removed by die() and by the handler of the signals that end an interrupted upload.
 */
static int tmp_dirfd = AT_FDCWD;
static char tmp_name[PATH_MAX + 64];
static volatile sig_atomic_t tmp_active;

static void tmp_forget(void)
{
	tmp_active = 0;
}

static void tmp_remove(void)
{
	if (tmp_active) {
		unlinkat(tmp_dirfd, tmp_name, 0);
		tmp_active = 0;
	}
}

static void on_fatal_signal(int sig)
{
	/* unlinkat is async-signal-safe; the exit status says we were interrupted. */
	if (tmp_active)
		unlinkat(tmp_dirfd, tmp_name, 0);
	_exit(EXIT_OTHER);
}

static void __attribute__((noreturn, format(printf, 2, 3))) die(int code, const char *fmt, ...)
{
	va_list ap;

	tmp_remove();
	fflush(stdout);
	fprintf(stderr, "husk-agent: %s: ", verb);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

static int exit_code_of(int err)
{
	switch (err) {
	case ENOENT:
		return EXIT_NOT_FOUND;
	case ENOTDIR:
	case EISDIR:
		return EXIT_NOT_DIR;
	case ENOSPC:
	case EDQUOT:
	case EFBIG:
		return EXIT_NO_SPACE;
	case EACCES:
	case EPERM:
	case EROFS:
		return EXIT_DENIED;
	default:
		return EXIT_OTHER;
	}
}

/* Dies with the exit code of errno ERR: "WHAT PATH: strerror". */
static void __attribute__((noreturn)) die_errno(int err, const char *what, const char *path)
{
	die(exit_code_of(err), "%s %s: %s", what, path, strerror(err));
}

/* A path the caller may give: absolute, not empty, without a ".." component. */
static void check_path(const char *path)
{
	const char *p = path;

	if (!*path)
		die(EXIT_USAGE, "empty path");
	if (*path != '/')
		die(EXIT_USAGE, "%s: not an absolute path", path);
	while (*p) {
		const char *end;

		while (*p == '/')
			p++;
		end = strchrnul(p, '/');
		if (end - p == 2 && p[0] == '.' && p[1] == '.')
			die(EXIT_USAGE, "%s: a \"..\" component", path);
		p = end;
	}
}

/* ---- output ---- */

/*
 * Length of the valid UTF-8 sequence at P (1 to 4), or minus the length of its longest valid
 * start (its "maximal subpart", at least 1): what becomes one U+FFFD, as in Python's and the
 * WHATWG's decoders. The second byte's range excludes overlongs, surrogates and past U+10FFFF.
 */
static int utf8_sequence(const unsigned char *p)
{
	unsigned char lo = 0x80, hi = 0xbf;
	int n;

	if (*p < 0x80)
		return 1;
	if (*p >= 0xc2 && *p <= 0xdf)
		n = 2;
	else if (*p >= 0xe0 && *p <= 0xef)
		n = 3;
	else if (*p >= 0xf0 && *p <= 0xf4)
		n = 4;
	else
		return -1;
	if (*p == 0xe0)
		lo = 0xa0;
	else if (*p == 0xed)
		hi = 0x9f;
	else if (*p == 0xf0)
		lo = 0x90;
	else if (*p == 0xf4)
		hi = 0x8f;
	for (int i = 1; i < n; i++) {
		if (p[i] < lo || p[i] > hi)
			return -i;
		lo = 0x80, hi = 0xbf;
	}
	return n;
}

/*
 * Writes S as a JSON string: quotes, backslashes and control characters escaped, valid UTF-8
 * passed through, each invalid sequence replaced by U+FFFD.
 */
static void json_str(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', out);
	while (*p) {
		unsigned char c = *p;
		int n;

		if (c == '"' || c == '\\') {
			fputc('\\', out);
			fputc(c, out);
			p++;
			continue;
		}
		if (c < 0x20 || c == 0x7f) {
			switch (c) {
			case '\n':
				fputs("\\n", out);
				break;
			case '\t':
				fputs("\\t", out);
				break;
			case '\r':
				fputs("\\r", out);
				break;
			default:
				fprintf(out, "\\u%04x", c);
			}
			p++;
			continue;
		}
		n = utf8_sequence(p);
		if (n < 0) {
			fputs("\\ufffd", out);
			p += -n;
			continue;
		}
		fwrite(p, 1, n, out);
		p += n;
	}
	fputc('"', out);
}

static const char *type_name(mode_t mode)
{
	if (S_ISREG(mode))
		return "file";
	if (S_ISDIR(mode))
		return "dir";
	if (S_ISLNK(mode))
		return "symlink";
	return "other";
}

/* readlinkat(2) into a new string (NULL with errno set). */
static char *read_link(int dirfd, const char *name, size_t hint)
{
	size_t size = hint + 1 > 256 ? hint + 1 : 256;

	for (;;) {
		char *buf = malloc(size);
		ssize_t n;

		if (!buf)
			return NULL;
		n = readlinkat(dirfd, name, buf, size);
		if (n < 0) {
			free(buf);
			return NULL;
		}
		if ((size_t)n < size) {
			buf[n] = 0;
			return buf;
		}
		free(buf);
		size *= 2;
	}
}

/*
 * Writes the members of a stat object after KEY (path or name): type, size, mode, mtime and,
 * for a symlink, target (read from NAME in DIRFD).
 */
static void json_stat(FILE *out, const char *key, const char *value, int dirfd, const char *name,
		      const struct stat *st)
{
	struct tm tm;
	char when[32];
	time_t t = st->st_mtim.tv_sec;

	if (!gmtime_r(&t, &tm) || !strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm))
		strcpy(when, "1970-01-01T00:00:00Z");
	fprintf(out, "{\"%s\": ", key);
	json_str(out, value);
	fprintf(out, ", \"type\": \"%s\", \"size\": %lld, \"mode\": \"%04o\", \"mtime\": \"%s\"",
		type_name(st->st_mode), (long long)st->st_size, (unsigned)(st->st_mode & 07777),
		when);
	if (S_ISLNK(st->st_mode)) {
		_cleanup_free_ char *target = read_link(dirfd, name, st->st_size);

		if (!target)
			die_errno(errno, "readlink", value);
		fputs(", \"target\": ", out);
		json_str(out, target);
	}
	fputc('}', out);
}

static void finish_stdout(void)
{
	if (fflush(stdout) || ferror(stdout))
		die(EXIT_OTHER, "writing the result: %s", strerror(errno));
}

/* Writes N bytes to FD, retrying short writes. Returns 0 or -errno. */
static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= w;
	}
	return 0;
}

/* Reads up to N bytes from FD, stopping early only at EOF. Returns the count or -errno. */
static ssize_t read_full(int fd, void *buf, size_t n)
{
	char *p = buf;
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, p + got, n - got);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		got += r;
	}
	return got;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names)
{
	for (char **p = names; p && *p; p++)
		free(*p);
	free(names);
}

/* Sorted names of the entries of DIRFD but . and .. (*names is NULL-terminated). */
static int list_dir(int dirfd, char ***names, size_t *count)
{
	int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	char **v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		int err = errno;
		close(fd);
		return -err;
	}
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno) {
				int err = errno;
				closedir(d);
				return -err;
			}
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n + 2 > cap) {
			cap = cap ? cap * 2 : 64;
			v = realloc(v, cap * sizeof(*v));
			if (!v)
				die(EXIT_OTHER, "out of memory");
		}
		v[n] = strdup(de->d_name);
		if (!v[n])
			die(EXIT_OTHER, "out of memory");
		n++;
	}
	closedir(d);
	if (!v) {
		v = calloc(1, sizeof(*v));
		if (!v)
			die(EXIT_OTHER, "out of memory");
	}
	v[n] = NULL;
	qsort(v, n, sizeof(*v), cmp_names);
	*names = v;
	*count = n;
	return 0;
}

/* ---- init ---- */

static volatile sig_atomic_t got_child, got_stop;

static void on_init_signal(int sig)
{
	if (sig == SIGCHLD)
		got_child = 1;
	else
		got_stop = 1;
}

/*
 * An idle pid 1. The signals have handlers (a pid 1 ignores signals it left at SIG_DFL) and are
 * blocked but inside sigsuspend, so none is lost between a check and the wait.
 */
static int cmd_init(void)
{
	struct sigaction sa = { .sa_handler = on_init_signal };
	sigset_t block, wait_mask;

	/* Out of pid 1 (a native test), orphans below us come to us all the same. */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	sigemptyset(&block);
	sigaddset(&block, SIGCHLD);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &wait_mask);
	sigdelset(&wait_mask, SIGCHLD);
	sigdelset(&wait_mask, SIGTERM);
	sigdelset(&wait_mask, SIGINT);
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);
	sa.sa_flags = 0;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	/* Children we inherited from whoever exec'd us may already be zombies. */
	got_child = 1;
	for (;;) {
		if (got_stop)
			return 0;
		if (got_child) {
			got_child = 0;
			while (waitpid(-1, NULL, WNOHANG) > 0)
				;
		}
		if (!got_stop && !got_child)
			sigsuspend(&wait_mask);
	}
}

/* ---- put, get ---- */

/* mkdir -p of PATH's parent directories (0755). */
static void make_parents(const char *path)
{
	_cleanup_free_ char *dir = strdup(path);
	char *p;

	if (!dir)
		die(EXIT_OTHER, "out of memory");
	for (p = dir + 1; (p = strchr(p, '/')); p++) {
		struct stat st;

		*p = 0;
		if (mkdir(dir, 0755) && errno != EEXIST)
			die_errno(errno, "mkdir", dir);
		if (stat(dir, &st))
			die_errno(errno, "stat", dir);
		if (!S_ISDIR(st.st_mode))
			die_errno(ENOTDIR, "mkdir", dir);
		*p = '/';
	}
}

static mode_t parse_mode(const char *s)
{
	char *end;
	unsigned long m;

	errno = 0;
	m = strtoul(s, &end, 8);
	if (!*s || *end || errno || m > 07777 || *s == '-' || *s == '+' || *s == ' ')
		die(EXIT_USAGE, "%s: not an octal mode (0 to 7777)", s);
	return m;
}

static void catch_fatal_signals(void)
{
	struct sigaction sa = { .sa_handler = on_fatal_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGPIPE, &sa, NULL);
}

static int cmd_put(const char *path, const char *mode_s)
{
	mode_t mode = mode_s ? parse_mode(mode_s) : 0644;
	size_t len = strlen(path);
	char buf[IO_CHUNK];
	long long size = 0;
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (path[len - 1] == '/')
		die_errno(EISDIR, "put", path);
	make_parents(path);
	/* A directory in the way is "is a directory", whatever rename would have said. */
	if (!stat(path, &st) && S_ISDIR(st.st_mode))
		die_errno(EISDIR, "put", path);
	if (snprintf(tmp_name, sizeof(tmp_name), "%s.husk-tmp.%d", path, (int)getpid()) >=
	    (int)sizeof(tmp_name))
		die_errno(ENAMETOOLONG, "put", path);
	catch_fatal_signals();
	tmp_dirfd = AT_FDCWD;
	tmp_active = 1;
	fd = open(tmp_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		int err = errno;
		/* Not ours: an EEXIST must not remove someone else's file. */
		tmp_forget();
		die_errno(err, "create", tmp_name);
	}
	for (;;) {
		ssize_t n = read(0, buf, sizeof(buf));
		int err;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die_errno(errno, "reading stdin for", path);
		if (n == 0)
			break;
		err = write_all(fd, buf, n);
		if (err)
			die_errno(-err, "write", path);
		size += n;
	}
	/* The mode as given, whatever the umask. */
	if (fchmod(fd, mode))
		die_errno(errno, "chmod", path);
	if (close(steal_fd(&fd)))
		die_errno(errno, "write", path);
	if (rename(tmp_name, path))
		die_errno(errno, "rename onto", path);
	tmp_forget();
	fputs("{\"path\": ", stdout);
	json_str(stdout, path);
	printf(", \"size\": %lld}\n", size);
	finish_stdout();
	return 0;
}

static int cmd_get(const char *path)
{
	_cleanup_close_ int fd = -1;
	char buf[IO_CHUNK];
	struct stat st;

	signal(SIGPIPE, SIG_IGN);
	/* O_NONBLOCK: a FIFO must not hang us before we see it is not a regular file. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		die_errno(errno, "open", path);
	if (fstat(fd, &st))
		die_errno(errno, "stat", path);
	if (S_ISDIR(st.st_mode))
		die_errno(EISDIR, "read", path);
	if (!S_ISREG(st.st_mode))
		die(EXIT_USAGE, "get %s: not a regular file", path);
	fcntl(fd, F_SETFL, 0);
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		int err;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die_errno(errno, "read", path);
		if (n == 0)
			return 0;
		err = write_all(1, buf, n);
		if (err)
			die(EXIT_OTHER, "writing %s to stdout: %s", path, strerror(-err));
	}
}

/* ---- stat, ls ---- */

static int cmd_stat(const char *path)
{
	struct stat st;

	if (lstat(path, &st))
		die_errno(errno, "stat", path);
	json_stat(stdout, "path", path, AT_FDCWD, path, &st);
	fputc('\n', stdout);
	finish_stdout();
	return 0;
}

static int cmd_ls(const char *path)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char **names;
	size_t n;
	int err;
	bool first = true;

	if (fd < 0)
		die_errno(errno, "open", path);
	err = list_dir(fd, &names, &n);
	if (err)
		die_errno(-err, "read directory", path);
	fputs("{\"path\": ", stdout);
	json_str(stdout, path);
	fputs(", \"entries\": [", stdout);
	for (size_t i = 0; i < n; i++) {
		struct stat st;

		if (fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW)) {
			/* Removed since readdir: it is not there any more. */
			if (errno == ENOENT)
				continue;
			die_errno(errno, "stat an entry of", path);
		}
		if (!first)
			fputs(", ", stdout);
		first = false;
		json_stat(stdout, "name", names[i], fd, names[i], &st);
	}
	fputs("]}\n", stdout);
	free_names(names);
	finish_stdout();
	return 0;
}

/* ---- tar: the ustar header, and pax and GNU extensions ---- */

struct ustar {
	char name[100];
	char mode[8];
	char uid[8];
	char gid[8];
	char size[12];
	char mtime[12];
	char chksum[8];
	char typeflag;
	char linkname[100];
	char magic[6];
	char version[2];
	char uname[32];
	char gname[32];
	char devmajor[8];
	char devminor[8];
	char prefix[155];
	char pad[12];
};
_Static_assert(sizeof(struct ustar) == BLOCK, "a tar header is one block");

static unsigned header_sum(const struct ustar *h, int *signed_sum)
{
	const unsigned char *u = (const unsigned char *)h;
	const signed char *s = (const signed char *)h;
	unsigned sum = 0;
	int ssum = 0;

	for (size_t i = 0; i < BLOCK; i++) {
		bool in_chksum = i >= offsetof(struct ustar, chksum) &&
				 i < offsetof(struct ustar, chksum) + sizeof(h->chksum);

		sum += in_chksum ? ' ' : u[i];
		ssum += in_chksum ? ' ' : s[i];
	}
	if (signed_sum)
		*signed_sum = ssum;
	return sum;
}

/*
 * A numeric field: octal digits (leading spaces or NULs, ended by a space or NUL), or GNU's
 * base-256 (first byte 0x80) for values past what the digits hold. False if malformed or
 * negative.
 */
static bool parse_num(const char *f, size_t len, uint64_t *out)
{
	const unsigned char *u = (const unsigned char *)f;
	uint64_t v = 0;
	size_t i = 0;

	if (u[0] & 0x80) {
		if (u[0] != 0x80)
			return false;
		for (i = 1; i < len; i++) {
			if (v >> 56)
				return false;
			v = v << 8 | u[i];
		}
		*out = v;
		return true;
	}
	while (i < len && (f[i] == ' ' || f[i] == 0))
		i++;
	for (; i < len && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 61)
			return false;
		v = v << 3 | (f[i] - '0');
	}
	for (; i < len; i++)
		if (f[i] != ' ' && f[i] != 0)
			return false;
	*out = v;
	return true;
}

/* Writes V into a numeric field of LEN bytes: octal if it fits, else base-256. */
static void put_num(char *f, size_t len, uint64_t v)
{
	if (len - 1 >= 22 || v < (UINT64_C(1) << (3 * (len - 1)))) {
		for (size_t i = len - 1; i-- > 0; v >>= 3)
			f[i] = '0' + (v & 7);
		f[len - 1] = 0;
		return;
	}
	memset(f, 0, len);
	f[0] = (char)0x80;
	for (size_t i = len - 1; i > 0 && v; i--, v >>= 8)
		f[i] = (char)(v & 0xff);
}

/* ---- tar-x ---- */

/* What pax ('x') and GNU ('L', 'K') headers say of the next member. */
struct tar_meta {
	char *path;
	char *linkpath;
	bool has_size;
	uint64_t size;
	bool has_mtime;
	int64_t mtime;
};

static void meta_clear(struct tar_meta *m)
{
	free(m->path);
	free(m->linkpath);
	memset(m, 0, sizeof(*m));
}

/* A directory whose mode and mtime are set once everything below it is written. */
struct deferred_dir {
	char *rel;
	mode_t mode;
	int64_t mtime;
};

struct extract {
	int rootfd;
	const char *root;
	long files;
	unsigned tmp_seq;
	struct deferred_dir *dirs;
	size_t ndirs, cap_dirs;
};

/* Exactly N bytes of the archive, or a truncated-archive error. */
static void tar_read(void *buf, size_t n)
{
	ssize_t got = read_full(0, buf, n);

	if (got < 0)
		die_errno(-got, "reading the archive from", "stdin");
	if ((size_t)got < n)
		die(EXIT_USAGE, "the archive is truncated");
}

static void tar_skip(uint64_t n)
{
	char buf[IO_CHUNK];

	while (n) {
		size_t chunk = n < sizeof(buf) ? n : sizeof(buf);

		tar_read(buf, chunk);
		n -= chunk;
	}
}

static uint64_t padding(uint64_t size)
{
	return (BLOCK - size % BLOCK) % BLOCK;
}

/* A member's data (at most MAX_META bytes) as a NUL-terminated string, padding consumed. */
static char *tar_read_meta(uint64_t size, const char *what)
{
	char *data;

	if (size > MAX_META)
		die(EXIT_USAGE, "a %s of %" PRIu64 " bytes (at most %d)", what, size, MAX_META);
	data = malloc(size + 1);
	if (!data)
		die(EXIT_OTHER, "out of memory");
	tar_read(data, size);
	data[size] = 0;
	tar_skip(padding(size));
	return data;
}

/* Records "LEN key=value\n" of a pax extended header into M (only for a local header). */
static void pax_parse(const char *data, size_t n, struct tar_meta *m, bool local)
{
	size_t i = 0;

	while (i < n) {
		const char *rec = data + i, *key, *eq, *value, *end;
		size_t len = 0, klen, vlen;
		const char *p = rec;

		while (p < data + n && *p >= '0' && *p <= '9' && len < MAX_META)
			len = len * 10 + (*p++ - '0');
		if (p == rec || p >= data + n || *p != ' ' || len > n - i || len < 5 ||
		    rec[len - 1] != '\n')
			die(EXIT_USAGE, "a malformed pax header");
		key = p + 1;
		end = rec + len - 1;
		eq = memchr(key, '=', end - key);
		if (!eq)
			die(EXIT_USAGE, "a malformed pax header record");
		klen = eq - key;
		value = eq + 1;
		vlen = end - value;
		i += len;
		if (!local)
			continue;
		if ((klen == 4 && !memcmp(key, "path", 4)) ||
		    (klen == 8 && !memcmp(key, "linkpath", 8))) {
			char **slot = klen == 4 ? &m->path : &m->linkpath;

			if (memchr(value, 0, vlen))
				die(EXIT_USAGE, "a pax %.*s with a NUL byte", (int)klen, key);
			free(*slot);
			*slot = strndup(value, vlen);
			if (!*slot)
				die(EXIT_OTHER, "out of memory");
		} else if (klen == 4 && !memcmp(key, "size", 4)) {
			_cleanup_free_ char *v = strndup(value, vlen);
			char *e;

			if (!v)
				die(EXIT_OTHER, "out of memory");
			errno = 0;
			m->size = strtoull(v, &e, 10);
			if (!*v || *e || errno || *v == '-')
				die(EXIT_USAGE, "a malformed pax size");
			m->has_size = true;
		} else if (klen == 5 && !memcmp(key, "mtime", 5)) {
			_cleanup_free_ char *v = strndup(value, vlen);
			char *e;

			if (!v)
				die(EXIT_OTHER, "out of memory");
			errno = 0;
			m->mtime = strtoll(v, &e, 10);
			/* Fractions of a second are dropped. */
			if (!errno && e != v && (!*e || *e == '.')) {
				m->has_mtime = true;
			}
		}
	}
}

/*
 * NAME of a member, relative to the target directory, without empty or "." components: "" is
 * the directory itself. Dies on an absolute name or a ".." component.
 */
static char *member_path(const char *name, const char *what)
{
	char *out = malloc(strlen(name) + 1), *o = out;
	const char *p = name;

	if (!out)
		die(EXIT_OTHER, "out of memory");
	if (*name == '/')
		die(EXIT_USAGE, "%s %s: an absolute name", what, name);
	while (*p) {
		const char *end = strchrnul(p, '/');
		size_t len = end - p;

		if (len == 2 && p[0] == '.' && p[1] == '.')
			die(EXIT_USAGE, "%s %s: a \"..\" component", what, name);
		if (len && !(len == 1 && p[0] == '.')) {
			if (o != out)
				*o++ = '/';
			memcpy(o, p, len);
			o += len;
		}
		p = *end ? end + 1 : end;
	}
	*o = 0;
	return out;
}

/*
 * Opens the directory that holds REL's last component below ROOTFD, one component at a time
 * with O_NOFOLLOW, so that nothing is ever reached through a symlink; with CREATE, missing
 * directories are made (0755). REL is modified while walking and restored; WHAT and NAME
 * name the member in messages. Returns the fd;
 * *base points at the last component in REL.
 */
static int open_parent(int rootfd, char *rel, const char **base, bool create, const char *what,
		       const char *name)
{
	int fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 0);
	char *p = rel, *slash;

	if (fd < 0)
		die_errno(errno, "dup", "the target directory");
	while ((slash = strchr(p, '/'))) {
		int next;

		*slash = 0;
		if (create && mkdirat(fd, p, 0755) && errno != EEXIST)
			die_errno(errno, "mkdir for", name);
		next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			int err = errno;
			struct stat st;

			if (!fstatat(fd, p, &st, AT_SYMLINK_NOFOLLOW) && S_ISLNK(st.st_mode))
				die(EXIT_USAGE, "%s %s: goes through the symlink %s", what, name,
				    rel);
			die_errno(err, "open the directory of", name);
		}
		close(fd);
		fd = next;
		*slash = '/';
		p = slash + 1;
	}
	*base = p;
	return fd;
}

/* A name for a member being written, in its parent directory (renamed onto the member). */
static void tmp_start(struct extract *x, int dirfd)
{
	snprintf(tmp_name, sizeof(tmp_name), ".husk-tmp.%d.%u", (int)getpid(), x->tmp_seq++);
	tmp_dirfd = dirfd;
	tmp_active = 1;
}

/* Renames the member written at tmp_name onto BASE. */
static void tmp_commit(int dirfd, const char *base, const char *name)
{
	if (renameat(dirfd, tmp_name, dirfd, base)) {
		int err = errno;

		/* A directory in the way: rename says EISDIR, ENOTEMPTY or EEXIST. */
		if (err == ENOTEMPTY || err == EEXIST)
			err = EISDIR;
		die_errno(err, "rename onto", name);
	}
	/* A hard link renamed onto another link of its file leaves both names: drop ours. */
	unlinkat(dirfd, tmp_name, 0);
	tmp_forget();
}

static void extract_file(struct extract *x, int dirfd, const char *base, const char *name,
			 mode_t mode, uint64_t size, const struct timespec *times)
{
	_cleanup_close_ int fd = -1;
	char buf[IO_CHUNK];
	uint64_t left = size;

	tmp_start(x, dirfd);
	fd = openat(dirfd, tmp_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		int err = errno;

		tmp_forget();
		die_errno(err, "create", name);
	}
	while (left) {
		size_t chunk = left < sizeof(buf) ? left : sizeof(buf);
		int err;

		tar_read(buf, chunk);
		err = write_all(fd, buf, chunk);
		if (err)
			die_errno(-err, "write", name);
		left -= chunk;
	}
	tar_skip(padding(size));
	if (fchmod(fd, mode))
		die_errno(errno, "chmod", name);
	if (futimens(fd, times))
		die_errno(errno, "set the times of", name);
	if (close(steal_fd(&fd)))
		die_errno(errno, "write", name);
	tmp_commit(dirfd, base, name);
}

static void extract_dir(struct extract *x, int dirfd, const char *base, const char *rel,
			const char *name, mode_t mode, int64_t mtime)
{
	struct stat st;

	if (mkdirat(dirfd, base, 0755) && errno != EEXIST)
		die_errno(errno, "mkdir", name);
	if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW))
		die_errno(errno, "stat", name);
	if (S_ISLNK(st.st_mode))
		die(EXIT_USAGE, "member %s: a symlink is in the way of the directory", name);
	if (!S_ISDIR(st.st_mode))
		die_errno(ENOTDIR, "mkdir", name);
	if (x->ndirs == x->cap_dirs) {
		x->cap_dirs = x->cap_dirs ? x->cap_dirs * 2 : 32;
		x->dirs = realloc(x->dirs, x->cap_dirs * sizeof(*x->dirs));
		if (!x->dirs)
			die(EXIT_OTHER, "out of memory");
	}
	x->dirs[x->ndirs].rel = strdup(rel);
	if (!x->dirs[x->ndirs].rel)
		die(EXIT_OTHER, "out of memory");
	x->dirs[x->ndirs].mode = mode;
	x->dirs[x->ndirs].mtime = mtime;
	x->ndirs++;
}

/* Modes and times of the directories, deepest (latest) first: no mode locks us out early. */
static void finish_dirs(struct extract *x)
{
	for (size_t i = x->ndirs; i-- > 0;) {
		struct deferred_dir *d = &x->dirs[i];
		struct timespec times[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_sec = d->mtime } };
		_cleanup_close_ int parent = -1;
		_cleanup_close_ int fd = -1;
		const char *base;

		parent = open_parent(x->rootfd, d->rel, &base, false, "directory", d->rel);
		fd = openat(parent, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			die_errno(errno, "open", d->rel);
		if (fchmod(fd, d->mode))
			die_errno(errno, "chmod", d->rel);
		if (futimens(fd, times))
			die_errno(errno, "set the times of", d->rel);
		free(d->rel);
	}
	free(x->dirs);
}

/* Extracts the member of header H (with what M says of it). */
static void extract_member(struct extract *x, const struct ustar *h, struct tar_meta *m)
{
	_cleanup_free_ char *hname = NULL;
	_cleanup_free_ char *rel = NULL;
	_cleanup_close_ int dirfd = -1;
	const char *name, *base;
	uint64_t mode, size, mtime = 0;
	char type = h->typeflag;
	struct timespec times[2] = { { .tv_nsec = UTIME_OMIT }, { 0 } };

	if (m->path) {
		name = m->path;
	} else {
		/* ustar's prefix; GNU's magic ("ustar  ") puts other things there. */
		bool posix = !memcmp(h->magic, "ustar", 6);
		size_t plen = posix ? strnlen(h->prefix, sizeof(h->prefix)) : 0;
		size_t nlen = strnlen(h->name, sizeof(h->name));

		hname = malloc(plen + nlen + 2);
		if (!hname)
			die(EXIT_OTHER, "out of memory");
		if (plen)
			sprintf(hname, "%.*s/%.*s", (int)plen, h->prefix, (int)nlen, h->name);
		else
			sprintf(hname, "%.*s", (int)nlen, h->name);
		name = hname;
	}
	if (!parse_num(h->mode, sizeof(h->mode), &mode) ||
	    !parse_num(h->size, sizeof(h->size), &size))
		die(EXIT_USAGE, "member %s: a malformed header", name);
	if (m->has_size)
		size = m->size;
	if (m->has_mtime)
		times[1].tv_sec = m->mtime;
	else if (parse_num(h->mtime, sizeof(h->mtime), &mtime) && mtime <= INT64_MAX)
		times[1].tv_sec = (time_t)mtime;
	mode &= 07777;
	rel = member_path(name, "member");
	if (!*rel) {
		/* The target directory itself ("./"): it keeps its own mode. */
		if (type == '5')
			return;
		die(EXIT_USAGE, "member %s: names the target directory", name);
	}
	dirfd = open_parent(x->rootfd, rel, &base, true, "member", name);
	switch (type) {
	case '0':
	case '\0':
	case '7':
		extract_file(x, dirfd, base, name, mode, size, times);
		break;
	case '5':
		extract_dir(x, dirfd, base, rel, name, mode, times[1].tv_sec);
		break;
	case '2': {
		char linkbuf[sizeof(h->linkname) + 1];
		const char *target = m->linkpath;

		if (!target) {
			snprintf(linkbuf, sizeof(linkbuf), "%.*s", (int)sizeof(h->linkname),
				 h->linkname);
			target = linkbuf;
		}
		/* Any target may be stored: what is refused is writing through one. */
		tmp_start(x, dirfd);
		if (symlinkat(target, dirfd, tmp_name)) {
			int err = errno;

			tmp_forget();
			die_errno(err, "symlink", name);
		}
		if (utimensat(dirfd, tmp_name, times, AT_SYMLINK_NOFOLLOW) && errno != EOPNOTSUPP)
			die_errno(errno, "set the times of", name);
		tmp_commit(dirfd, base, name);
		break;
	}
	case '1': {
		char linkbuf[sizeof(h->linkname) + 1];
		_cleanup_free_ char *trel = NULL;
		_cleanup_close_ int tdirfd = -1;
		const char *target = m->linkpath, *tbase;

		if (!target) {
			snprintf(linkbuf, sizeof(linkbuf), "%.*s", (int)sizeof(h->linkname),
				 h->linkname);
			target = linkbuf;
		}
		trel = member_path(target, "hard link target");
		if (!*trel)
			die(EXIT_USAGE, "member %s: a hard link to the target directory", name);
		tdirfd = open_parent(x->rootfd, trel, &tbase, false, "hard link target", target);
		tmp_start(x, dirfd);
		/* Flags 0: a symlink target is linked itself, never followed. */
		if (linkat(tdirfd, tbase, dirfd, tmp_name, 0)) {
			int err = errno;

			tmp_forget();
			die_errno(err, "hard link", name);
		}
		tmp_commit(dirfd, base, name);
		break;
	}
	default:
		die(EXIT_USAGE,
		    "member %s: unsupported type '%c' (files, directories and links only)", name,
		    type >= 0x20 && type < 0x7f ? type : '?');
	}
	x->files++;
}

static void make_dirs(const char *path)
{
	_cleanup_free_ char *with_slash = malloc(strlen(path) + 2);

	if (!with_slash)
		die(EXIT_OTHER, "out of memory");
	sprintf(with_slash, "%s/", path);
	make_parents(with_slash);
}

static int cmd_tar_x(const char *dir)
{
	struct extract x = { .root = dir };
	struct tar_meta m = { 0 };
	char drain[IO_CHUNK];

	catch_fatal_signals();
	make_dirs(dir);
	x.rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (x.rootfd < 0)
		die_errno(errno, "open", dir);
	for (;;) {
		struct ustar h;
		ssize_t got = read_full(0, &h, BLOCK);
		static const char zero[BLOCK];
		uint64_t size;
		unsigned stored;
		int ssum;

		if (got < 0)
			die_errno(-got, "reading the archive from", "stdin");
		/* An archive may end without its two zero blocks (GNU tar accepts that too). */
		if (got == 0)
			break;
		if (got < BLOCK)
			die(EXIT_USAGE, "the archive is truncated");
		if (!memcmp(&h, zero, BLOCK))
			break;
		{
			uint64_t v;

			if (!parse_num(h.chksum, sizeof(h.chksum), &v))
				die(EXIT_USAGE, "not a tar archive (a malformed header checksum)");
			stored = (unsigned)v;
		}
		if (stored != header_sum(&h, &ssum) && (int)stored != ssum)
			die(EXIT_USAGE, "not a tar archive (a header checksum does not match)");
		if (!parse_num(h.size, sizeof(h.size), &size))
			die(EXIT_USAGE, "a malformed member size");
		switch (h.typeflag) {
		case 'x': {
			_cleanup_free_ char *data = tar_read_meta(size, "pax header");

			pax_parse(data, size, &m, true);
			break;
		}
		case 'g': {
			_cleanup_free_ char *data = tar_read_meta(size, "pax global header");

			pax_parse(data, size, &m, false);
			break;
		}
		case 'L':
		case 'K': {
			char **slot = h.typeflag == 'L' ? &m.path : &m.linkpath;

			free(*slot);
			/* The name ends at its first NUL. */
			*slot = tar_read_meta(size, "GNU long name");
			break;
		}
		default:
			extract_member(&x, &h, &m);
			meta_clear(&m);
		}
	}
	meta_clear(&m);
	finish_dirs(&x);
	/* The rest is padding (tar writes whole records); the writer must not see EPIPE. */
	for (;;) {
		ssize_t n = read(0, drain, sizeof(drain));

		if (n == 0 || (n < 0 && errno != EINTR))
			break;
	}
	close(x.rootfd);
	fputs("{\"path\": ", stdout);
	json_str(stdout, dir);
	printf(", \"files\": %ld}\n", x.files);
	finish_stdout();
	return 0;
}

/* ---- tar-c ---- */

static char out_buf[IO_CHUNK];
static size_t out_len;

static void out_flush(void)
{
	int err = write_all(1, out_buf, out_len);

	if (err)
		die(EXIT_OTHER, "writing the archive to stdout: %s", strerror(-err));
	out_len = 0;
}

static void out_write(const void *data, size_t n)
{
	const char *p = data;

	while (n) {
		size_t chunk = sizeof(out_buf) - out_len;

		if (chunk > n)
			chunk = n;
		memcpy(out_buf + out_len, p, chunk);
		out_len += chunk;
		p += chunk;
		n -= chunk;
		if (out_len == sizeof(out_buf))
			out_flush();
	}
}

static void out_zeros(size_t n)
{
	static const char zero[BLOCK];

	while (n) {
		size_t chunk = n < sizeof(zero) ? n : sizeof(zero);

		out_write(zero, chunk);
		n -= chunk;
	}
}

/* Appends the pax record "LEN KEY=VALUE\n" (LEN counting itself) to *buf. */
static void pax_add(char **buf, size_t *len, const char *key, const char *value)
{
	size_t body = strlen(key) + strlen(value) + 3, total = body + 1;
	char digits[32];

	/* LEN's own digits count: grow until the number of digits is stable. */
	while (total != body + (size_t)snprintf(digits, sizeof(digits), "%zu", total))
		total = body + strlen(digits);
	*buf = realloc(*buf, *len + total + 1);
	if (!*buf)
		die(EXIT_OTHER, "out of memory");
	snprintf(*buf + *len, total + 1, "%zu %s=%s\n", total, key, value);
	*len += total;
}

static void out_header(struct ustar *h)
{
	unsigned sum;

	memcpy(h->magic, "ustar", 6);
	memcpy(h->version, "00", 2);
	sum = header_sum(h, NULL);
	snprintf(h->chksum, sizeof(h->chksum), "%06o", sum & 0777777);
	h->chksum[7] = ' ';
	out_write(h, BLOCK);
}

/*
 * The header of member NAME: ustar's name (with prefix when it splits at a '/'), else a pax
 * header before it with the path; the same for a link target past 100 bytes.
 */
static void tar_header(const char *name, const struct stat *st, char type, const char *link,
		       uint64_t size)
{
	struct ustar h = { 0 };
	_cleanup_free_ char *pax = NULL;
	size_t nlen = strlen(name), pax_len = 0;
	uint64_t mtime = st->st_mtim.tv_sec > 0 ? (uint64_t)st->st_mtim.tv_sec : 0;

	if (nlen <= sizeof(h.name)) {
		memcpy(h.name, name, nlen);
	} else {
		/* The last '/' that leaves a name of at most 100 bytes and a prefix of 155. */
		const char *split = NULL;

		for (const char *p = name + nlen - 1; p > name; p--) {
			if (*p != '/' || p == name + nlen - 1)
				continue;
			if ((size_t)(name + nlen - p - 1) > sizeof(h.name))
				break;
			if ((size_t)(p - name) <= sizeof(h.prefix)) {
				split = p;
				break;
			}
		}
		if (split) {
			memcpy(h.prefix, name, split - name);
			memcpy(h.name, split + 1, name + nlen - split - 1);
		} else {
			pax_add(&pax, &pax_len, "path", name);
			memcpy(h.name, name, sizeof(h.name));
		}
	}
	if (link && strlen(link) > sizeof(h.linkname))
		pax_add(&pax, &pax_len, "linkpath", link);
	if (link)
		memcpy(h.linkname, link, strnlen(link, sizeof(h.linkname)));
	if (pax) {
		struct ustar x = { 0 };

		snprintf(x.name, sizeof(x.name), "././@PaxHeader");
		put_num(x.mode, sizeof(x.mode), 0644);
		put_num(x.uid, sizeof(x.uid), 0);
		put_num(x.gid, sizeof(x.gid), 0);
		put_num(x.size, sizeof(x.size), pax_len);
		put_num(x.mtime, sizeof(x.mtime), mtime);
		x.typeflag = 'x';
		out_header(&x);
		out_write(pax, pax_len);
		out_zeros(padding(pax_len));
	}
	put_num(h.mode, sizeof(h.mode), st->st_mode & 07777);
	put_num(h.uid, sizeof(h.uid), st->st_uid);
	put_num(h.gid, sizeof(h.gid), st->st_gid);
	put_num(h.size, sizeof(h.size), size);
	put_num(h.mtime, sizeof(h.mtime), mtime);
	h.typeflag = type;
	out_header(&h);
}

/* Copies SIZE bytes of FD (zeros past an early end: the file shrank) and the padding. */
static void tar_file_data(int fd, uint64_t size, const char *name)
{
	uint64_t left = size;

	while (left) {
		size_t room = sizeof(out_buf) - out_len;
		ssize_t n;

		if (room > left)
			room = left;
		n = read(fd, out_buf + out_len, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die_errno(errno, "read", name);
		if (n == 0) {
			out_zeros(left);
			break;
		}
		out_len += n;
		left -= n;
		if (out_len == sizeof(out_buf))
			out_flush();
	}
	out_zeros(padding(size));
}

/* Archives BASE (in PARENTFD) as NAME, and everything below it. TOP: PATH itself. */
static void tar_entry(int parentfd, const char *base, const char *name, bool top)
{
	struct stat st;

	if (fstatat(parentfd, base, &st, AT_SYMLINK_NOFOLLOW)) {
		/* Gone since its directory was read. */
		if (errno == ENOENT && !top)
			return;
		die_errno(errno, "stat", name);
	}
	if (S_ISREG(st.st_mode)) {
		_cleanup_close_ int fd =
			openat(parentfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

		if (fd < 0)
			die_errno(errno, "open", name);
		tar_header(name, &st, '0', NULL, st.st_size);
		tar_file_data(fd, st.st_size, name);
	} else if (S_ISLNK(st.st_mode)) {
		_cleanup_free_ char *target = read_link(parentfd, base, st.st_size);

		if (!target)
			die_errno(errno, "readlink", name);
		tar_header(name, &st, '2', target, 0);
	} else if (S_ISDIR(st.st_mode)) {
		_cleanup_close_ int fd =
			openat(parentfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		_cleanup_free_ char *dname = malloc(strlen(name) + 2);
		char **names;
		size_t n;
		int err;

		if (fd < 0)
			die_errno(errno, "open", name);
		if (!dname)
			die(EXIT_OTHER, "out of memory");
		sprintf(dname, "%s/", name);
		tar_header(dname, &st, '5', NULL, 0);
		err = list_dir(fd, &names, &n);
		if (err)
			die_errno(-err, "read directory", name);
		for (size_t i = 0; i < n; i++) {
			_cleanup_free_ char *child = malloc(strlen(name) + strlen(names[i]) + 2);

			if (!child)
				die(EXIT_OTHER, "out of memory");
			sprintf(child, "%s/%s", name, names[i]);
			tar_entry(fd, names[i], child, false);
		}
		free_names(names);
	} else {
		fprintf(stderr,
			"husk-agent: tar-c: %s: skipped (not a file, directory or symlink)\n",
			name);
	}
}

static int cmd_tar_c(const char *path)
{
	_cleanup_free_ char *copy = strdup(path);
	_cleanup_close_ int parentfd = -1;
	char *slash, *base;
	size_t len;

	if (!copy)
		die(EXIT_OTHER, "out of memory");
	signal(SIGPIPE, SIG_IGN);
	len = strlen(copy);
	while (len > 1 && copy[len - 1] == '/')
		copy[--len] = 0;
	if (!strcmp(copy, "/")) {
		/* Names relative to the root's parent: "./etc/...". */
		parentfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		base = ".";
	} else {
		slash = strrchr(copy, '/');
		*slash = 0;
		parentfd = open(slash == copy ? "/" : copy, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		base = slash + 1;
	}
	if (parentfd < 0)
		die_errno(errno, "open the directory of", path);
	tar_entry(parentfd, base, base, true);
	out_zeros(2 * BLOCK);
	out_flush();
	return 0;
}

/* ---- main ---- */

static void __attribute__((noreturn)) usage(void)
{
	fputs("usage: husk-agent init\n"
	      "       husk-agent put PATH [MODE]\n"
	      "       husk-agent get PATH\n"
	      "       husk-agent stat PATH\n"
	      "       husk-agent ls DIR\n"
	      "       husk-agent tar-x DIR\n"
	      "       husk-agent tar-c PATH\n"
	      "PATH and DIR are absolute, without \"..\" components.\n",
	      stderr);
	exit(EXIT_USAGE);
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";

	verb = *cmd ? cmd : verb;
	if (!strcmp(cmd, "init")) {
		if (argc != 2)
			usage();
		return cmd_init();
	}
	if (!strcmp(cmd, "put")) {
		if (argc != 3 && argc != 4)
			usage();
		check_path(argv[2]);
		return cmd_put(argv[2], argc == 4 ? argv[3] : NULL);
	}
	if (argc != 3)
		usage();
	check_path(argv[2]);
	if (!strcmp(cmd, "get"))
		return cmd_get(argv[2]);
	if (!strcmp(cmd, "stat"))
		return cmd_stat(argv[2]);
	if (!strcmp(cmd, "ls"))
		return cmd_ls(argv[2]);
	if (!strcmp(cmd, "tar-x"))
		return cmd_tar_x(argv[2]);
	if (!strcmp(cmd, "tar-c"))
		return cmd_tar_c(argv[2]);
	usage();
}
