/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk-agent tar-x and tar-c. tar-x reads ustar with the pax ('x', 'g') and GNU ('L', 'K')
 * long-name forms; regular files, directories, symlinks and hard links. It resolves every
 * member below the target directory one component at a time with O_NOFOLLOW (open_parent), so
 * that nothing is written through a symlink, and refuses absolute names and ".." components
 * (exit 2, nothing past the bad member written). Files and links are made under a temporary
 * name and renamed onto the member; directories get their mode and mtime last. tar-c writes
 * ustar, with a pax header for a name or link target that does not fit.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/serve/agent/agent.h"

#define BLOCK 512
/* Largest pax header or GNU long name accepted: names are far shorter; this bounds memory. */
#define MAX_META (1 << 20)

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
	ssize_t got = agent_read_full(0, buf, n);

	if (got < 0)
		agent_die_errno(-got, "reading the archive from", "stdin");
	if ((size_t)got < n)
		agent_die(EXIT_USAGE, "the archive is truncated");
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
		agent_die(EXIT_USAGE, "a %s of %" PRIu64 " bytes (at most %d)", what, size,
			  MAX_META);
	data = malloc(size + 1);
	if (!data)
		agent_die(EXIT_OTHER, "out of memory");
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
			agent_die(EXIT_USAGE, "a malformed pax header");
		key = p + 1;
		end = rec + len - 1;
		eq = memchr(key, '=', end - key);
		if (!eq)
			agent_die(EXIT_USAGE, "a malformed pax header record");
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
				agent_die(EXIT_USAGE, "a pax %.*s with a NUL byte", (int)klen, key);
			free(*slot);
			*slot = strndup(value, vlen);
			if (!*slot)
				agent_die(EXIT_OTHER, "out of memory");
		} else if (klen == 4 && !memcmp(key, "size", 4)) {
			_cleanup_free_ char *v = strndup(value, vlen);
			char *e;

			if (!v)
				agent_die(EXIT_OTHER, "out of memory");
			errno = 0;
			m->size = strtoull(v, &e, 10);
			if (!*v || *e || errno || *v == '-')
				agent_die(EXIT_USAGE, "a malformed pax size");
			m->has_size = true;
		} else if (klen == 5 && !memcmp(key, "mtime", 5)) {
			_cleanup_free_ char *v = strndup(value, vlen);
			char *e;

			if (!v)
				agent_die(EXIT_OTHER, "out of memory");
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
		agent_die(EXIT_OTHER, "out of memory");
	if (*name == '/')
		agent_die(EXIT_USAGE, "%s %s: an absolute name", what, name);
	while (*p) {
		const char *end = strchrnul(p, '/');
		size_t len = end - p;

		if (len == 2 && p[0] == '.' && p[1] == '.')
			agent_die(EXIT_USAGE, "%s %s: a \"..\" component", what, name);
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
		agent_die_errno(errno, "dup", "the target directory");
	while ((slash = strchr(p, '/'))) {
		int next;

		*slash = 0;
		if (create && mkdirat(fd, p, 0755) && errno != EEXIST)
			agent_die_errno(errno, "mkdir for", name);
		next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			int err = errno;
			struct stat st;

			if (!fstatat(fd, p, &st, AT_SYMLINK_NOFOLLOW) && S_ISLNK(st.st_mode))
				agent_die(EXIT_USAGE, "%s %s: goes through the symlink %s", what,
					  name, rel);
			agent_die_errno(err, "open the directory of", name);
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
	snprintf(agent_tmp_name, sizeof(agent_tmp_name), ".husk-tmp.%d.%u", (int)getpid(),
		 x->tmp_seq++);
	agent_tmp_dirfd = dirfd;
	agent_tmp_active = 1;
}

/* Renames the member written at agent_tmp_name onto BASE. */
static void tmp_commit(int dirfd, const char *base, const char *name)
{
	if (renameat(dirfd, agent_tmp_name, dirfd, base)) {
		int err = errno;

		/* A directory in the way: rename says EISDIR, ENOTEMPTY or EEXIST. */
		if (err == ENOTEMPTY || err == EEXIST)
			err = EISDIR;
		agent_die_errno(err, "rename onto", name);
	}
	/* A hard link renamed onto another link of its file leaves both names: drop ours. */
	unlinkat(dirfd, agent_tmp_name, 0);
	agent_tmp_forget();
}

static void extract_file(struct extract *x, int dirfd, const char *base, const char *name,
			 mode_t mode, uint64_t size, const struct timespec *times)
{
	_cleanup_close_ int fd = -1;
	char buf[IO_CHUNK];
	uint64_t left = size;

	tmp_start(x, dirfd);
	fd = openat(dirfd, agent_tmp_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		    0600);
	if (fd < 0) {
		int err = errno;

		agent_tmp_forget();
		agent_die_errno(err, "create", name);
	}
	while (left) {
		size_t chunk = left < sizeof(buf) ? left : sizeof(buf);
		int err;

		tar_read(buf, chunk);
		err = agent_write_all(fd, buf, chunk);
		if (err)
			agent_die_errno(-err, "write", name);
		left -= chunk;
	}
	tar_skip(padding(size));
	if (fchmod(fd, mode))
		agent_die_errno(errno, "chmod", name);
	if (futimens(fd, times))
		agent_die_errno(errno, "set the times of", name);
	if (close(steal_fd(&fd)))
		agent_die_errno(errno, "write", name);
	tmp_commit(dirfd, base, name);
}

static void extract_dir(struct extract *x, int dirfd, const char *base, const char *rel,
			const char *name, mode_t mode, int64_t mtime)
{
	struct stat st;

	if (mkdirat(dirfd, base, 0755) && errno != EEXIST)
		agent_die_errno(errno, "mkdir", name);
	if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW))
		agent_die_errno(errno, "stat", name);
	if (S_ISLNK(st.st_mode))
		agent_die(EXIT_USAGE, "member %s: a symlink is in the way of the directory", name);
	if (!S_ISDIR(st.st_mode))
		agent_die_errno(ENOTDIR, "mkdir", name);
	if (x->ndirs == x->cap_dirs) {
		x->cap_dirs = x->cap_dirs ? x->cap_dirs * 2 : 32;
		x->dirs = realloc(x->dirs, x->cap_dirs * sizeof(*x->dirs));
		if (!x->dirs)
			agent_die(EXIT_OTHER, "out of memory");
	}
	x->dirs[x->ndirs].rel = strdup(rel);
	if (!x->dirs[x->ndirs].rel)
		agent_die(EXIT_OTHER, "out of memory");
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
			agent_die_errno(errno, "open", d->rel);
		if (fchmod(fd, d->mode))
			agent_die_errno(errno, "chmod", d->rel);
		if (futimens(fd, times))
			agent_die_errno(errno, "set the times of", d->rel);
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
			agent_die(EXIT_OTHER, "out of memory");
		if (plen)
			sprintf(hname, "%.*s/%.*s", (int)plen, h->prefix, (int)nlen, h->name);
		else
			sprintf(hname, "%.*s", (int)nlen, h->name);
		name = hname;
	}
	if (!parse_num(h->mode, sizeof(h->mode), &mode) ||
	    !parse_num(h->size, sizeof(h->size), &size))
		agent_die(EXIT_USAGE, "member %s: a malformed header", name);
	if (m->has_size)
		size = m->size;
	if (m->has_mtime)
		times[1].tv_sec = m->mtime;
	else if (parse_num(h->mtime, sizeof(h->mtime), &mtime) && mtime <= INT64_MAX)
		times[1].tv_sec = (time_t)mtime;
	mode &= 07777;
	/* Old (V7) archives mark a directory by a trailing '/' on a plain file ('\0'). */
	if (type == '\0' && *name && name[strlen(name) - 1] == '/')
		type = '5';
	rel = member_path(name, "member");
	if (!*rel) {
		/* The target directory itself ("./"): it keeps its own mode. */
		if (type == '5')
			return;
		agent_die(EXIT_USAGE, "member %s: names the target directory", name);
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
		if (symlinkat(target, dirfd, agent_tmp_name)) {
			int err = errno;

			agent_tmp_forget();
			agent_die_errno(err, "symlink", name);
		}
		if (utimensat(dirfd, agent_tmp_name, times, AT_SYMLINK_NOFOLLOW) &&
		    errno != EOPNOTSUPP)
			agent_die_errno(errno, "set the times of", name);
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
			agent_die(EXIT_USAGE, "member %s: a hard link to the target directory",
				  name);
		tdirfd = open_parent(x->rootfd, trel, &tbase, false, "hard link target", target);
		tmp_start(x, dirfd);
		/* Flags 0: a symlink target is linked itself, never followed. */
		if (linkat(tdirfd, tbase, dirfd, agent_tmp_name, 0)) {
			int err = errno;

			agent_tmp_forget();
			agent_die_errno(err, "hard link", name);
		}
		tmp_commit(dirfd, base, name);
		break;
	}
	default:
		agent_die(EXIT_USAGE,
			  "member %s: unsupported type '%c' (files, directories and links only)",
			  name, type >= 0x20 && type < 0x7f ? type : '?');
	}
	x->files++;
}

static void make_dirs(const char *path)
{
	_cleanup_free_ char *with_slash = malloc(strlen(path) + 2);

	if (!with_slash)
		agent_die(EXIT_OTHER, "out of memory");
	sprintf(with_slash, "%s/", path);
	agent_make_parents(with_slash);
}

int agent_tar_x(const char *dir)
{
	struct extract x = { .root = dir };
	struct tar_meta m = { 0 };
	char drain[IO_CHUNK];

	agent_catch_fatal_signals();
	make_dirs(dir);
	x.rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (x.rootfd < 0)
		agent_die_errno(errno, "open", dir);
	for (;;) {
		struct ustar h;
		ssize_t got = agent_read_full(0, &h, BLOCK);
		static const char zero[BLOCK];
		uint64_t size;
		unsigned stored;
		int ssum;

		if (got < 0)
			agent_die_errno(-got, "reading the archive from", "stdin");
		/* An archive may end without its two zero blocks (GNU tar accepts that too). */
		if (got == 0)
			break;
		if (got < BLOCK)
			agent_die(EXIT_USAGE, "the archive is truncated");
		if (!memcmp(&h, zero, BLOCK))
			break;
		{
			uint64_t v;

			if (!parse_num(h.chksum, sizeof(h.chksum), &v))
				agent_die(EXIT_USAGE,
					  "not a tar archive (a malformed header checksum)");
			stored = (unsigned)v;
		}
		if (stored != header_sum(&h, &ssum) && (int)stored != ssum)
			agent_die(EXIT_USAGE,
				  "not a tar archive (a header checksum does not match)");
		if (!parse_num(h.size, sizeof(h.size), &size))
			agent_die(EXIT_USAGE, "a malformed member size");
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
	agent_json_str(stdout, dir);
	printf(", \"files\": %ld}\n", x.files);
	agent_finish_stdout();
	return 0;
}

/* ---- tar-c ---- */

static char out_buf[IO_CHUNK];
static size_t out_len;

static void out_flush(void)
{
	int err = agent_write_all(1, out_buf, out_len);

	if (err)
		agent_die(EXIT_OTHER, "writing the archive to stdout: %s", strerror(-err));
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
		agent_die(EXIT_OTHER, "out of memory");
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
			agent_die_errno(errno, "read", name);
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
		agent_die_errno(errno, "stat", name);
	}
	if (S_ISREG(st.st_mode)) {
		_cleanup_close_ int fd =
			openat(parentfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

		if (fd < 0)
			agent_die_errno(errno, "open", name);
		tar_header(name, &st, '0', NULL, st.st_size);
		tar_file_data(fd, st.st_size, name);
	} else if (S_ISLNK(st.st_mode)) {
		_cleanup_free_ char *target = agent_read_link(parentfd, base, st.st_size);

		if (!target)
			agent_die_errno(errno, "readlink", name);
		tar_header(name, &st, '2', target, 0);
	} else if (S_ISDIR(st.st_mode)) {
		_cleanup_close_ int fd =
			openat(parentfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		_cleanup_free_ char *dname = malloc(strlen(name) + 2);
		char **names;
		size_t n;
		int err;

		if (fd < 0)
			agent_die_errno(errno, "open", name);
		if (!dname)
			agent_die(EXIT_OTHER, "out of memory");
		sprintf(dname, "%s/", name);
		tar_header(dname, &st, '5', NULL, 0);
		err = agent_list_dir(fd, &names, &n);
		if (err)
			agent_die_errno(-err, "read directory", name);
		for (size_t i = 0; i < n; i++) {
			_cleanup_free_ char *child = malloc(strlen(name) + strlen(names[i]) + 2);

			if (!child)
				agent_die(EXIT_OTHER, "out of memory");
			sprintf(child, "%s/%s", name, names[i]);
			tar_entry(fd, names[i], child, false);
		}
		agent_free_names(names);
	} else {
		fprintf(stderr,
			"husk-agent: tar-c: %s: skipped (not a file, directory or symlink)\n",
			name);
	}
}

int agent_tar_c(const char *path)
{
	_cleanup_free_ char *copy = strdup(path);
	_cleanup_close_ int parentfd = -1;
	char *slash, *base;
	size_t len;

	if (!copy)
		agent_die(EXIT_OTHER, "out of memory");
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
		agent_die_errno(errno, "open the directory of", path);
	tar_entry(parentfd, base, base, true);
	out_zeros(2 * BLOCK);
	out_flush();
	return 0;
}
