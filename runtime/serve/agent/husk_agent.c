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
 * (EACCES, EPERM, EROFS), 1 anything else; a failure prints one line on stderr. This file has
 * the command line, errors, JSON, init and the file commands; agent_tar.c the tar commands.
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
#include "runtime/serve/agent/agent.h"

static const char *verb = "husk-agent";

int agent_tmp_dirfd = AT_FDCWD;
char agent_tmp_name[AGENT_TMP_NAME_MAX];
volatile sig_atomic_t agent_tmp_active;

void agent_tmp_forget(void)
{
	agent_tmp_active = 0;
}

static void tmp_remove(void)
{
	if (agent_tmp_active) {
		unlinkat(agent_tmp_dirfd, agent_tmp_name, 0);
		agent_tmp_active = 0;
	}
}

static void on_fatal_signal(int sig)
{
	/* unlinkat is async-signal-safe; the exit status says we were interrupted. */
	if (agent_tmp_active)
		unlinkat(agent_tmp_dirfd, agent_tmp_name, 0);
	_exit(EXIT_OTHER);
}

void __attribute__((noreturn, format(printf, 2, 3))) agent_die(int code, const char *fmt, ...)
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
void __attribute__((noreturn)) agent_die_errno(int err, const char *what, const char *path)
{
	agent_die(exit_code_of(err), "%s %s: %s", what, path, strerror(err));
}

/* A path the caller may give: absolute, not empty, without a ".." component. */
static void check_path(const char *path)
{
	const char *p = path;

	if (!*path)
		agent_die(EXIT_USAGE, "empty path");
	if (*path != '/')
		agent_die(EXIT_USAGE, "%s: not an absolute path", path);
	while (*p) {
		const char *end;

		while (*p == '/')
			p++;
		end = strchrnul(p, '/');
		if (end - p == 2 && p[0] == '.' && p[1] == '.')
			agent_die(EXIT_USAGE, "%s: a \"..\" component", path);
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
void agent_json_str(FILE *out, const char *s)
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
char *agent_read_link(int dirfd, const char *name, size_t hint)
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
	agent_json_str(out, value);
	fprintf(out, ", \"type\": \"%s\", \"size\": %lld, \"mode\": \"%04o\", \"mtime\": \"%s\"",
		type_name(st->st_mode), (long long)st->st_size, (unsigned)(st->st_mode & 07777),
		when);
	if (S_ISLNK(st->st_mode)) {
		_cleanup_free_ char *target = agent_read_link(dirfd, name, st->st_size);

		if (!target)
			agent_die_errno(errno, "readlink", value);
		fputs(", \"target\": ", out);
		agent_json_str(out, target);
	}
	fputc('}', out);
}

void agent_finish_stdout(void)
{
	if (fflush(stdout) || ferror(stdout))
		agent_die(EXIT_OTHER, "writing the result: %s", strerror(errno));
}

/* Writes N bytes to FD, retrying short writes. Returns 0 or -errno. */
int agent_write_all(int fd, const void *buf, size_t n)
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
ssize_t agent_read_full(int fd, void *buf, size_t n)
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

void agent_free_names(char **names)
{
	for (char **p = names; p && *p; p++)
		free(*p);
	free(names);
}

/* Sorted names of the entries of DIRFD but . and .. (*names is NULL-terminated). */
int agent_list_dir(int dirfd, char ***names, size_t *count)
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
				agent_die(EXIT_OTHER, "out of memory");
		}
		v[n] = strdup(de->d_name);
		if (!v[n])
			agent_die(EXIT_OTHER, "out of memory");
		n++;
	}
	closedir(d);
	if (!v) {
		v = calloc(1, sizeof(*v));
		if (!v)
			agent_die(EXIT_OTHER, "out of memory");
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
void agent_make_parents(const char *path)
{
	_cleanup_free_ char *dir = strdup(path);
	char *p;

	if (!dir)
		agent_die(EXIT_OTHER, "out of memory");
	for (p = dir + 1; (p = strchr(p, '/')); p++) {
		struct stat st;

		*p = 0;
		if (mkdir(dir, 0755) && errno != EEXIST)
			agent_die_errno(errno, "mkdir", dir);
		if (stat(dir, &st))
			agent_die_errno(errno, "stat", dir);
		if (!S_ISDIR(st.st_mode))
			agent_die_errno(ENOTDIR, "mkdir", dir);
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
		agent_die(EXIT_USAGE, "%s: not an octal mode (0 to 7777)", s);
	return m;
}

void agent_catch_fatal_signals(void)
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
		agent_die_errno(EISDIR, "put", path);
	agent_make_parents(path);
	/* A directory in the way is "is a directory", whatever rename would have said. */
	if (!stat(path, &st) && S_ISDIR(st.st_mode))
		agent_die_errno(EISDIR, "put", path);
	if (snprintf(agent_tmp_name, sizeof(agent_tmp_name), "%s.husk-tmp.%d", path,
		     (int)getpid()) >= (int)sizeof(agent_tmp_name))
		agent_die_errno(ENAMETOOLONG, "put", path);
	agent_catch_fatal_signals();
	agent_tmp_dirfd = AT_FDCWD;
	agent_tmp_active = 1;
	fd = open(agent_tmp_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		int err = errno;
		/* Not ours: an EEXIST must not remove someone else's file. */
		agent_tmp_forget();
		agent_die_errno(err, "create", agent_tmp_name);
	}
	for (;;) {
		ssize_t n = read(0, buf, sizeof(buf));
		int err;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			agent_die_errno(errno, "reading stdin for", path);
		if (n == 0)
			break;
		err = agent_write_all(fd, buf, n);
		if (err)
			agent_die_errno(-err, "write", path);
		size += n;
	}
	/* The mode as given, whatever the umask. */
	if (fchmod(fd, mode))
		agent_die_errno(errno, "chmod", path);
	if (close(steal_fd(&fd)))
		agent_die_errno(errno, "write", path);
	if (rename(agent_tmp_name, path))
		agent_die_errno(errno, "rename onto", path);
	agent_tmp_forget();
	fputs("{\"path\": ", stdout);
	agent_json_str(stdout, path);
	printf(", \"size\": %lld}\n", size);
	agent_finish_stdout();
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
		agent_die_errno(errno, "open", path);
	if (fstat(fd, &st))
		agent_die_errno(errno, "stat", path);
	if (S_ISDIR(st.st_mode))
		agent_die_errno(EISDIR, "read", path);
	if (!S_ISREG(st.st_mode))
		agent_die(EXIT_USAGE, "get %s: not a regular file", path);
	fcntl(fd, F_SETFL, 0);
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		int err;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			agent_die_errno(errno, "read", path);
		if (n == 0)
			return 0;
		err = agent_write_all(1, buf, n);
		if (err)
			agent_die(EXIT_OTHER, "writing %s to stdout: %s", path, strerror(-err));
	}
}

/* ---- stat, ls ---- */

static int cmd_stat(const char *path)
{
	struct stat st;

	if (lstat(path, &st))
		agent_die_errno(errno, "stat", path);
	json_stat(stdout, "path", path, AT_FDCWD, path, &st);
	fputc('\n', stdout);
	agent_finish_stdout();
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
		agent_die_errno(errno, "open", path);
	err = agent_list_dir(fd, &names, &n);
	if (err)
		agent_die_errno(-err, "read directory", path);
	fputs("{\"path\": ", stdout);
	agent_json_str(stdout, path);
	fputs(", \"entries\": [", stdout);
	for (size_t i = 0; i < n; i++) {
		struct stat st;

		if (fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW)) {
			/* Removed since readdir: it is not there any more. */
			if (errno == ENOENT)
				continue;
			agent_die_errno(errno, "stat an entry of", path);
		}
		if (!first)
			fputs(", ", stdout);
		first = false;
		json_stat(stdout, "name", names[i], fd, names[i], &st);
	}
	fputs("]}\n", stdout);
	agent_free_names(names);
	agent_finish_stdout();
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
		return agent_tar_x(argv[2]);
	if (!strcmp(cmd, "tar-c"))
		return agent_tar_c(argv[2]);
	usage();
}
