/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sentry's gofer client (sentry/fs/gofer/client.h): synchronous requests over the
 * SOCK_SEQPACKET socket, one at a time under c->lock.
 *
 * The gofer is a separate process and the sentry does not trust its replies more than it must:
 * each reply is decoded and validated by gofer_rep_decode (lengths, counts, names, attributes),
 * then checked against the request (tag, type, counts); FDs are accepted only in a successful
 * OPEN reply, exactly one, and any other FD is closed at once. A malformed reply is -EIO. A reply
 * with the wrong tag or type means the two sides no longer agree on what answers what: the
 * client is then broken and every later call is -EIO, as it is once the gofer is gone.
 *
 * Lock: c->lock protects everything in struct gofer_client but sock (constant) and is held from
 * sending a request to decoding its reply. Callbacks (gofer_getdents) run without it.
 */

/*
 * This file is compiled alone into the sentry's VFS library (sentry/fs/meson.build lists only
 * client.c), so it carries its own copy of the protocol codec, with internal linkage: no binary
 * can then get two definitions of the gofer_* codec functions, whatever else it links.
 */
#define GOFER_PROTO_API static __attribute__((unused))
#include "sentry/fs/gofer/client.h"
#include "gofer/proto.c"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

/*
 * Messages sent, by type, by every client of the process (atomics; GOFER_MSG_TYPE_END counts
 * unknown types). Read by gofer_client_msgs() and reported at exit (client_report_stats).
 */
static uint64_t msg_counts[GOFER_MSG_TYPE_END + 1];
static uint64_t msg_bytes; /* requests and replies, relaxed atomic */
static pid_t msg_counts_pid; /* the process that counted: a forked child reports nothing */

/* Room for more FDs than a reply may carry, so that extra ones are received and closed. */
#define CLIENT_MAX_FDS 8
/* Errors the gofer may report: real errnos, not the kernel-internal restart codes (512+). */
#define GOFER_ERRNO_MAX 511

struct gofer_client {
	int sock;
	pthread_mutex_t lock;
	uint32_t next_tag; /* never 0: tag 0 answers an unparsable message */
	bool broken;
	uint8_t *sbuf; /* encoded request */
	uint8_t *rbuf; /* received reply (not GETDENTS) */
	uint8_t *dents_keep; /* the last GETDENTS reply: its names stay valid until the next */
	struct gofer_req req;
	struct gofer_rep rep;
};

int gofer_client_create(int sock, struct gofer_client **out)
{
	struct gofer_client *c;

	if (sock < 0)
		return -EBADF;
	c = calloc(1, sizeof(*c));
	if (c) {
		c->sbuf = malloc(GOFER_MSG_MAX);
		c->rbuf = malloc(GOFER_MSG_MAX);
	}
	if (!c || !c->sbuf || !c->rbuf) {
		if (c) {
			free(c->sbuf);
			free(c->rbuf);
			free(c);
		}
		close(sock);
		return -ENOMEM;
	}
	c->sock = sock;
	c->next_tag = 1;
	pthread_mutex_init(&c->lock, NULL);
	*out = c;
	return 0;
}

void gofer_client_destroy(struct gofer_client *c)
{
	if (!c)
		return;
	close(c->sock);
	pthread_mutex_destroy(&c->lock);
	free(c->sbuf);
	free(c->rbuf);
	free(c->dents_keep);
	free(c);
}

void gofer_client_disconnect(struct gofer_client *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->broken = true;
	if (c->sock >= 0)
		close(c->sock);
	c->sock = -1;
	pthread_mutex_unlock(&c->lock);
}

static void close_fds(const int *fds, int n)
{
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

/* Collects the FDs of the SCM_RIGHTS messages in msg (closing any past max). */
static int collect_fds(struct msghdr *msg, int *fds, int max)
{
	int n = 0;

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
		size_t count;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < count; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (n < max)
				fds[n++] = fd;
			else
				close(fd);
		}
	}
	return n;
}

static void count_msg(uint16_t type)
{
	if (!__atomic_load_n(&msg_counts_pid, __ATOMIC_RELAXED))
		__atomic_store_n(&msg_counts_pid, getpid(), __ATOMIC_RELAXED);
	__atomic_add_fetch(&msg_counts[MIN(type, (uint16_t)GOFER_MSG_TYPE_END)], 1,
			   __ATOMIC_RELAXED);
}

uint64_t gofer_client_msgs(int type)
{
	uint64_t sum = 0;

	if (type >= 0)
		return __atomic_load_n(&msg_counts[MIN(type, (int)GOFER_MSG_TYPE_END)],
				       __ATOMIC_RELAXED);
	for (int i = 0; i <= (int)GOFER_MSG_TYPE_END; i++)
		sum += __atomic_load_n(&msg_counts[i], __ATOMIC_RELAXED);
	return sum;
}

uint64_t gofer_client_bytes(void)
{
	return __atomic_load_n(&msg_bytes, __ATOMIC_RELAXED);
}

/*
 * At exit, with HUSK_GOFER_STATS set in the sentry's environment or HUSK_LOG=debug: one line
 * on stderr with the number of gofer messages sent, in all and by type (for profiling the
 * VFS: round trips are what a cache saves).
 */
__attribute__((destructor)) static void client_report_stats(void)
{
	static const char *const names[GOFER_MSG_TYPE_END] = {
		[GOFER_MSG_MOUNT] = "mount",
		[GOFER_MSG_WALK] = "walk",
		[GOFER_MSG_STAT] = "stat",
		[GOFER_MSG_OPEN] = "open",
		[GOFER_MSG_READLINK] = "readlink",
		[GOFER_MSG_GETDENTS] = "getdents",
		[GOFER_MSG_STATFS] = "statfs",
		[GOFER_MSG_CLOSE] = "close",
		[GOFER_MSG_WALKSTAT] = "walkstat",
		[GOFER_MSG_SETSTAT] = "setstat",
		[GOFER_MSG_CREATE] = "create",
		[GOFER_MSG_MKDIR] = "mkdir",
		[GOFER_MSG_MKNOD] = "mknod",
		[GOFER_MSG_SYMLINK] = "symlink",
		[GOFER_MSG_LINK] = "link",
		[GOFER_MSG_UNLINK] = "unlink",
		[GOFER_MSG_RENAME] = "rename",
		[GOFER_MSG_FSYNC] = "fsync",
		[GOFER_MSG_GETXATTR] = "getxattr",
		[GOFER_MSG_SETXATTR] = "setxattr",
		[GOFER_MSG_LISTXATTR] = "listxattr",
		[GOFER_MSG_REMOVEXATTR] = "removexattr",
		[GOFER_MSG_GETDENTSPLUS] = "getdentsplus",
	};
	char line[1024];
	size_t len;

	if (!msg_counts_pid || msg_counts_pid != getpid())
		return;
	if (!getenv("HUSK_GOFER_STATS") && log_get_level() < LOG_DEBUG)
		return;
	len = (size_t)snprintf(line, sizeof(line), "gofer messages: %llu",
			       (unsigned long long)gofer_client_msgs(-1));
	for (int i = 0; i <= (int)GOFER_MSG_TYPE_END && len < sizeof(line); i++) {
		const char *name = i < (int)GOFER_MSG_TYPE_END && names[i] ? names[i] : "other";
		uint64_t n = gofer_client_msgs(i);

		if (n)
			len += (size_t)snprintf(line + len, sizeof(line) - len, " %s=%llu", name,
						(unsigned long long)n);
	}
	if (log_get_level() >= LOG_DEBUG)
		log_msg(LOG_DEBUG, "%s", line);
	else
		fprintf(stderr, "husk-sentry: %s\n", line);
}

/*
 * Sends c->req (its tag is set here) and receives the reply into rbuf (GOFER_MSG_MAX bytes),
 * decoded into c->rep. With fd_out, a successful reply must carry exactly one FD, stored there;
 * otherwise any FD is unexpected. Returns 0, the gofer's -errno, -EINVAL when the request
 * cannot be encoded (bad arguments), or -EIO. Called with c->lock held.
 */
static int rpc(struct gofer_client *c, uint8_t *rbuf, int *fd_out)
{
	union {
		char buf[CMSG_SPACE(CLIENT_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov;
	struct msghdr msg;
	int fds[CLIENT_MAX_FDS];
	int nfds = 0;
	const char *why;
	ssize_t n;

	if (c->broken)
		return -EIO;
	c->req.tag = c->next_tag++;
	if (c->next_tag == 0)
		c->next_tag = 1;
	n = gofer_req_encode(&c->req, c->sbuf, GOFER_MSG_MAX);
	if (n < 0)
		return n == -EMSGSIZE ? -EINVAL : (int)n;
	count_msg(c->req.type);

	iov = (struct iovec){ .iov_base = c->sbuf, .iov_len = (size_t)n };
	msg = (struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1 };
	while (sendmsg(c->sock, &msg, MSG_NOSIGNAL) < 0) {
		if (errno != EINTR) {
			log_warn("gofer: sending a request: %s", strerror(errno));
			c->broken = true;
			return -EIO;
		}
	}
	__atomic_add_fetch(&msg_bytes, (uint64_t)iov.iov_len, __ATOMIC_RELAXED);

	iov = (struct iovec){ .iov_base = rbuf, .iov_len = GOFER_MSG_MAX };
	msg = (struct msghdr){ .msg_iov = &iov,
			       .msg_iovlen = 1,
			       .msg_control = ctl.buf,
			       .msg_controllen = sizeof(ctl.buf) };
	while ((n = recvmsg(c->sock, &msg, MSG_CMSG_CLOEXEC)) < 0) {
		if (errno != EINTR)
			break;
	}
	if (n <= 0) {
		/* A zero-length packet reads as the end, but may carry FDs: they are ours now. */
		if (n == 0)
			close_fds(fds, collect_fds(&msg, fds, CLIENT_MAX_FDS));
		log_warn("gofer: no reply: %s", n == 0 ? "connection closed" : strerror(errno));
		c->broken = true;
		return -EIO;
	}
	__atomic_add_fetch(&msg_bytes, (uint64_t)n, __ATOMIC_RELAXED);
	nfds = collect_fds(&msg, fds, CLIENT_MAX_FDS);
	if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		why = "truncated";
		goto bad;
	}
	if (gofer_rep_decode(rbuf, (size_t)n, &c->rep) < 0) {
		why = "malformed";
		goto bad;
	}
	if (c->rep.tag != c->req.tag || c->rep.type != c->req.type) {
		c->broken = true;
		why = "for another request";
		goto bad;
	}
	if (c->rep.error) {
		if (nfds || c->rep.error > GOFER_ERRNO_MAX) {
			why = "an error with FDs or a bad errno";
			goto bad;
		}
		return -(int)c->rep.error;
	}
	if (fd_out) {
		if (nfds != 1) {
			why = "without exactly one FD";
			goto bad;
		}
		*fd_out = fds[0];
		return 0;
	}
	if (nfds) {
		why = "with unexpected FDs";
		goto bad;
	}
	return 0;

bad:
	close_fds(fds, nfds);
	log_warn("gofer: reply to message type %u %s", c->req.type, why);
	return -EIO;
}

int gofer_mount(struct gofer_client *c, uint64_t *root, struct gofer_attr *attr)
{
	int ret;

	pthread_mutex_lock(&c->lock);
	c->req.type = GOFER_MSG_MOUNT;
	c->req.mount.version = GOFER_PROTO_VERSION;
	ret = rpc(c, c->rbuf, NULL);
	/* A directory, or a regular file served alone (a file bind mount). */
	if (ret == 0 && !S_ISDIR(c->rep.mount.attr.mode) && !S_ISREG(c->rep.mount.attr.mode))
		ret = -EIO;
	if (ret == 0) {
		*root = c->rep.mount.root;
		if (attr)
			*attr = c->rep.mount.attr;
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/* Sends CLOSE for handles[0..n) in batches. Returns 0 or the first error. c->lock held. */
static int close_locked(struct gofer_client *c, const uint64_t *handles, int n)
{
	int ret = 0;

	for (int done = 0; done < n;) {
		uint32_t chunk = (uint32_t)MIN(n - done, (int)GOFER_CLOSE_MAX);
		int r;

		c->req.type = GOFER_MSG_CLOSE;
		c->req.close.n = chunk;
		memcpy(c->req.close.handles, handles + done, chunk * sizeof(uint64_t));
		r = rpc(c, c->rbuf, NULL);
		if (r < 0 && ret == 0)
			ret = r;
		done += (int)chunk;
	}
	return ret;
}

/* Checks a WALK reply against a request for want names. */
static bool walk_reply_matches(const struct gofer_rep *rep, uint32_t want)
{
	uint32_t n = rep->walk.n;

	if (n > want)
		return false;
	if (rep->walk.flags & GOFER_WALK_ENOENT)
		return n < want;
	/* Short without a missing name: only a symlink stops a walk. */
	return n == want || (n > 0 && S_ISLNK(rep->walk.entries[n - 1].attr.mode));
}

int gofer_walk(struct gofer_client *c, uint64_t dir, const char *const *names, int n,
	       uint64_t *handles, struct gofer_attr *attrs)
{
	uint64_t cur = dir;
	int done = 0, ret = 0;

	if (n < 0 || (n > 0 && (!names || !handles)))
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		size_t len;

		if (!names[i])
			return -EINVAL;
		len = strlen(names[i]);
		if (len > GOFER_NAME_MAX)
			return -ENAMETOOLONG;
		if (gofer_name_check(names[i], len) < 0)
			return -EINVAL;
	}

	pthread_mutex_lock(&c->lock);
	while (done < n) {
		uint32_t chunk = (uint32_t)MIN(n - done, (int)GOFER_WALK_MAX);
		const struct gofer_walk_entry *last;
		uint32_t got;

		c->req.type = GOFER_MSG_WALK;
		c->req.walk.dir = cur;
		c->req.walk.n = chunk;
		for (uint32_t i = 0; i < chunk; i++) {
			c->req.walk.names[i].name = names[done + (int)i];
			c->req.walk.names[i].len = (uint16_t)strlen(names[done + (int)i]);
		}
		ret = rpc(c, c->rbuf, NULL);
		if (ret < 0)
			goto fail;
		got = c->rep.walk.n;
		if (!walk_reply_matches(&c->rep, chunk)) {
			log_warn("gofer: WALK reply does not match its request");
			for (uint32_t i = 0; i < got; i++)
				handles[done + (int)i] = c->rep.walk.entries[i].handle;
			done += (int)got;
			ret = -EIO;
			goto fail;
		}
		for (uint32_t i = 0; i < got; i++) {
			handles[done + (int)i] = c->rep.walk.entries[i].handle;
			if (attrs)
				attrs[done + (int)i] = c->rep.walk.entries[i].attr;
		}
		done += (int)got;
		if (got < chunk)
			break;
		last = &c->rep.walk.entries[got - 1];
		if (S_ISLNK(last->attr.mode))
			break;
		/* Past a non-directory the gofer's next WALK fails with ENOTDIR, as it should. */
		cur = last->handle;
	}
	pthread_mutex_unlock(&c->lock);
	return done;

fail:
	/* On failure the caller owns no handle: give back those of earlier messages. */
	if (done > 0)
		close_locked(c, handles, done);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int gofer_stat(struct gofer_client *c, uint64_t h, struct gofer_attr *attr)
{
	int ret;

	pthread_mutex_lock(&c->lock);
	c->req.type = GOFER_MSG_STAT;
	c->req.node.handle = h;
	ret = rpc(c, c->rbuf, NULL);
	if (ret == 0)
		*attr = c->rep.stat;
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int gofer_open(struct gofer_client *c, uint64_t h, int flags)
{
	int fd = -1, ret;

	pthread_mutex_lock(&c->lock);
	c->req.type = GOFER_MSG_OPEN;
	c->req.open.handle = h;
	c->req.open.flags = (uint32_t)flags;
	ret = rpc(c, c->rbuf, &fd);
	pthread_mutex_unlock(&c->lock);
	return ret < 0 ? ret : fd;
}

ssize_t gofer_readlink(struct gofer_client *c, uint64_t h, char *buf, size_t len)
{
	ssize_t ret;

	if (!buf || len == 0)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	c->req.type = GOFER_MSG_READLINK;
	c->req.node.handle = h;
	ret = rpc(c, c->rbuf, NULL);
	if (ret == 0) {
		/* As readlink(2): the target is cut to the buffer. */
		size_t n = MIN(len, (size_t)c->rep.readlink.len);

		memcpy(buf, c->rep.readlink.target, n);
		ret = (ssize_t)n;
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/*
 * Sends a GETDENTS or GETDENTSPLUS request and receives its reply into a buffer of the call's
 * own (*bufp, to free), so that the caller's callback can run unlocked. Returns 0 with the
 * reply's count, raw entries, size and flags, or -errno.
 */
static int getdents_rpc(struct gofer_client *c, uint16_t type, uint64_t h, int64_t off,
			uint32_t max, uint32_t flags, uint8_t **bufp, struct gofer_rep *out)
{
	uint8_t *buf;
	int ret;

	if (max < 1 || max > GOFER_GETDENTS_MAX)
		return -EINVAL;
	buf = malloc(GOFER_MSG_MAX);
	if (!buf)
		return -ENOMEM;
	pthread_mutex_lock(&c->lock);
	c->req.type = type;
	c->req.getdents.handle = h;
	c->req.getdents.cookie = off;
	c->req.getdents.max = max;
	c->req.getdents.flags = flags;
	ret = rpc(c, buf, NULL);
	if (ret == 0 && c->rep.getdents.size > max) {
		log_warn("gofer: GETDENTS reply larger than asked");
		ret = -EIO;
	}
	if (ret == 0) {
		*out = c->rep;
		/* An empty reply is the end, whatever it says: anything else would loop. */
		if (out->getdents.n == 0)
			out->getdents.flags |= GOFER_GETDENTS_EOF;
	}
	pthread_mutex_unlock(&c->lock);
	if (ret < 0) {
		free(buf);
		return ret;
	}
	*bufp = buf;
	return 0;
}

/* Keeps buf as the last GETDENTS reply (its names stay valid until the next). */
static void getdents_keep(struct gofer_client *c, uint8_t *buf)
{
	pthread_mutex_lock(&c->lock);
	free(c->dents_keep);
	c->dents_keep = buf;
	pthread_mutex_unlock(&c->lock);
}

int gofer_getdents_eof(struct gofer_client *c, uint64_t h, int64_t off, uint32_t max,
		       int (*fn)(void *arg, const struct gofer_dirent *d), void *arg, bool *eof)
{
	struct gofer_rep rep;
	uint8_t *buf;
	size_t pos = 0;
	int count = 0, ret;

	if (!fn)
		return -EINVAL;
	ret = getdents_rpc(c, GOFER_MSG_GETDENTS, h, off, max, 0, &buf, &rep);
	if (ret < 0)
		return ret;
	for (uint32_t i = 0; i < rep.getdents.n; i++) {
		struct gofer_dirent d;
		/* Decoded once already by gofer_rep_decode: cannot fail here. */
		int used = gofer_dirent_decode(rep.getdents.raw + pos, rep.getdents.size - pos, &d);

		if (used < 0)
			break;
		pos += (size_t)used;
		count++;
		if (fn(arg, &d))
			break;
	}
	if (eof)
		*eof = count == (int)rep.getdents.n && (rep.getdents.flags & GOFER_GETDENTS_EOF);
	getdents_keep(c, buf);
	return count;
}

int gofer_getdents_max(struct gofer_client *c, uint64_t h, int64_t off, uint32_t max,
		       int (*fn)(void *arg, const struct gofer_dirent *d), void *arg)
{
	return gofer_getdents_eof(c, h, off, max, fn, arg, NULL);
}

int gofer_getdents(struct gofer_client *c, uint64_t h, int64_t off,
		   int (*fn)(void *arg, const struct gofer_dirent *d), void *arg)
{
	return gofer_getdents_max(c, h, off, GOFER_GETDENTS_MAX, fn, arg);
}

int gofer_getdents_plus(struct gofer_client *c, uint64_t h, int64_t off, uint32_t max,
			uint32_t flags, int (*fn)(void *arg, const struct gofer_dirent_plus *e),
			void *arg, bool *eof)
{
	uint64_t unused[GOFER_CLOSE_MAX];
	struct gofer_rep rep;
	int nunused = 0;
	bool stopped = false;
	uint8_t *buf;
	size_t pos = 0;
	int count = 0, ret;

	if (!fn || (flags & ~GOFER_GETDENTS_DIR_HANDLES))
		return -EINVAL;
	ret = getdents_rpc(c, GOFER_MSG_GETDENTSPLUS, h, off, max, flags, &buf, &rep);
	if (ret < 0)
		return ret;
	for (uint32_t i = 0; i < rep.getdents.n; i++) {
		struct gofer_dirent_plus e;
		int used = gofer_dirent_plus_decode(rep.getdents.raw + pos, rep.getdents.size - pos,
						    &e);

		if (used < 0)
			break;
		pos += (size_t)used;
		if (stopped || (e.handle && !(flags & GOFER_GETDENTS_DIR_HANDLES))) {
			/* Not passed on (or not asked for): the handle is closed here. */
			if (e.handle) {
				unused[nunused++] = e.handle;
				if (nunused == GOFER_CLOSE_MAX) {
					gofer_close(c, unused, nunused);
					nunused = 0;
				}
			}
			continue;
		}
		count++;
		if (fn(arg, &e))
			stopped = true;
	}
	if (nunused)
		gofer_close(c, unused, nunused);
	if (eof)
		*eof = !stopped && (rep.getdents.flags & GOFER_GETDENTS_EOF);
	getdents_keep(c, buf);
	return count;
}

int gofer_statfs(struct gofer_client *c, uint64_t h, struct gofer_statfs *st)
{
	int ret;

	pthread_mutex_lock(&c->lock);
	c->req.type = GOFER_MSG_STATFS;
	c->req.node.handle = h;
	ret = rpc(c, c->rbuf, NULL);
	if (ret == 0)
		*st = c->rep.statfs;
	pthread_mutex_unlock(&c->lock);
	return ret;
}

void gofer_close(struct gofer_client *c, const uint64_t *handles, int n)
{
	int ret;

	if (n <= 0 || !handles)
		return;
	pthread_mutex_lock(&c->lock);
	ret = close_locked(c, handles, n);
	pthread_mutex_unlock(&c->lock);
	if (ret < 0)
		log_warn("gofer: closing %d handles: %s", n, strerror(-ret));
}

/* Checks a name argument as gofer_walk does. Returns its length or -errno. */
static int name_arg(const char *name)
{
	size_t len;

	if (!name)
		return -EINVAL;
	len = strnlen(name, GOFER_NAME_MAX + 1);
	if (len > GOFER_NAME_MAX)
		return -ENAMETOOLONG;
	if (gofer_name_check(name, len) < 0)
		return -EINVAL;
	return (int)len;
}

static int set_name(struct gofer_name *nm, const char *name)
{
	int len = name_arg(name);

	if (len < 0)
		return len;
	nm->name = name;
	nm->len = (uint16_t)len;
	return 0;
}

/* Checks an xattr name argument as Linux does (-ERANGE if empty or too long). */
static int set_xattr_name(struct gofer_name *nm, const char *name)
{
	size_t len;

	if (!name)
		return -EINVAL;
	len = strnlen(name, GOFER_XATTR_NAME_MAX + 1);
	if (len == 0 || len > GOFER_XATTR_NAME_MAX)
		return -ERANGE;
	nm->name = name;
	nm->len = (uint16_t)len;
	return 0;
}

int gofer_walk_stat(struct gofer_client *c, uint64_t dir, const char *const *names, int n,
		    struct gofer_attr *attrs)
{
	int ret;

	if (n < 0 || n > (int)GOFER_WALK_MAX || (n > 0 && (!names || !attrs)))
		return -EINVAL;
	if (n == 0)
		return 0;
	for (int i = 0; i < n; i++) {
		ret = name_arg(names[i]);
		if (ret < 0)
			return ret;
	}
	pthread_mutex_lock(&c->lock);
	for (int i = 0; i < n; i++)
		set_name(&c->req.walk.names[i], names[i]);
	c->req.type = GOFER_MSG_WALKSTAT;
	c->req.walk.dir = dir;
	c->req.walk.n = (uint32_t)n;
	ret = rpc(c, c->rbuf, NULL);
	if (ret == 0) {
		uint32_t got = c->rep.walkstat.n;
		bool ok = got <= (uint32_t)n;

		/* As walk_reply_matches: short only before a missing name or after a symlink. */
		if (ok && !(c->rep.walkstat.flags & GOFER_WALK_ENOENT))
			ok = got == (uint32_t)n ||
			     (got > 0 && S_ISLNK(c->rep.walkstat.attrs[got - 1].mode));
		else if (ok)
			ok = got < (uint32_t)n;
		if (!ok) {
			log_warn("gofer: WALKSTAT reply does not match its request");
			ret = -EIO;
		} else {
			memcpy(attrs, c->rep.walkstat.attrs, got * sizeof(*attrs));
			ret = (int)got;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int gofer_setstat(struct gofer_client *c, uint64_t h, const struct gofer_setstat *st,
		  struct gofer_attr *attr)
{
	int ret;

	if (!st)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	c->req.type = GOFER_MSG_SETSTAT;
	c->req.setstat.handle = h;
	c->req.setstat.st = *st;
	ret = rpc(c, c->rbuf, NULL);
	if (ret == 0 && attr)
		*attr = c->rep.stat;
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/*
 * Hands the node of a successful CREATE, MKDIR, MKNOD, SYMLINK or LINK reply to the caller:
 * its handle to *h, or closed when h is NULL. c->lock held.
 */
static void take_node(struct gofer_client *c, uint64_t *h, struct gofer_attr *attr)
{
	uint64_t handle = c->rep.node.handle;

	if (attr)
		*attr = c->rep.node.attr;
	if (h)
		*h = handle;
	else
		close_locked(c, &handle, 1);
}

/* CREATE, MKDIR, MKNOD, SYMLINK with c->req.mk filled but for its name. c->lock held. */
static int mk_locked(struct gofer_client *c, uint16_t type, uint64_t dir, const char *name,
		     uint64_t *h, struct gofer_attr *attr, int *fd)
{
	int ret;

	c->req.type = type;
	c->req.mk.dir = dir;
	ret = set_name(&c->req.mk.name, name);
	if (ret < 0)
		return ret;
	ret = rpc(c, c->rbuf, fd);
	if (ret == 0)
		take_node(c, h, attr);
	return ret;
}

int gofer_create(struct gofer_client *c, uint64_t dir, const char *name, int flags, uint32_t mode,
		 uint32_t uid, uint32_t gid, uint64_t *h, struct gofer_attr *attr)
{
	int fd = -1, ret;

	pthread_mutex_lock(&c->lock);
	memset(&c->req.mk, 0, sizeof(c->req.mk));
	/* O_CREAT and O_EXCL are what CREATE is. */
	c->req.mk.flags = (uint32_t)flags & ~(uint32_t)(O_CREAT | O_EXCL);
	c->req.mk.mode = mode;
	c->req.mk.uid = uid;
	c->req.mk.gid = gid;
	ret = mk_locked(c, GOFER_MSG_CREATE, dir, name, h, attr, &fd);
	pthread_mutex_unlock(&c->lock);
	return ret < 0 ? ret : fd;
}

int gofer_mkdir(struct gofer_client *c, uint64_t dir, const char *name, uint32_t mode, uint32_t uid,
		uint32_t gid, uint64_t *h, struct gofer_attr *attr)
{
	int ret;

	pthread_mutex_lock(&c->lock);
	memset(&c->req.mk, 0, sizeof(c->req.mk));
	c->req.mk.mode = mode;
	c->req.mk.uid = uid;
	c->req.mk.gid = gid;
	ret = mk_locked(c, GOFER_MSG_MKDIR, dir, name, h, attr, NULL);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int gofer_mknod(struct gofer_client *c, uint64_t dir, const char *name, uint32_t mode, uint32_t uid,
		uint32_t gid, uint64_t *h, struct gofer_attr *attr)
{
	int ret;

	/* Refused here too, so that a sentry bug cannot even ask. */
	if ((mode & S_IFMT) != S_IFIFO && (mode & S_IFMT) != S_IFSOCK)
		return -EPERM;
	pthread_mutex_lock(&c->lock);
	memset(&c->req.mk, 0, sizeof(c->req.mk));
	c->req.mk.mode = mode;
	c->req.mk.uid = uid;
	c->req.mk.gid = gid;
	ret = mk_locked(c, GOFER_MSG_MKNOD, dir, name, h, attr, NULL);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int gofer_symlink(struct gofer_client *c, uint64_t dir, const char *name, const char *target,
		  uint32_t uid, uint32_t gid, uint64_t *h, struct gofer_attr *attr)
{
	size_t len;
	int ret;

	if (!target)
		return -EINVAL;
	len = strnlen(target, GOFER_PATH_MAX + 1);
	if (len == 0)
		return -ENOENT; /* as symlink(2) with an empty target */
	if (len > GOFER_PATH_MAX)
		return -ENAMETOOLONG;
	pthread_mutex_lock(&c->lock);
	memset(&c->req.mk, 0, sizeof(c->req.mk));
	c->req.mk.uid = uid;
	c->req.mk.gid = gid;
	c->req.mk.target.name = target;
	c->req.mk.target.len = (uint16_t)len;
	ret = mk_locked(c, GOFER_MSG_SYMLINK, dir, name, h, attr, NULL);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/* LINK and RENAME. c->lock held. */
static int link_locked(struct gofer_client *c, uint16_t type, uint64_t olddir, const char *oldname,
		       uint64_t newdir, const char *newname, uint32_t flags)
{
	int ret;

	c->req.type = type;
	c->req.link.olddir = olddir;
	c->req.link.newdir = newdir;
	c->req.link.flags = flags;
	ret = set_name(&c->req.link.oldname, oldname);
	if (ret == 0)
		ret = set_name(&c->req.link.newname, newname);
	if (ret == 0)
		ret = rpc(c, c->rbuf, NULL);
	return ret;
}

int gofer_link(struct gofer_client *c, uint64_t olddir, const char *oldname, uint64_t newdir,
	       const char *newname, uint64_t *h, struct gofer_attr *attr)
{
	int ret;

	pthread_mutex_lock(&c->lock);
	ret = link_locked(c, GOFER_MSG_LINK, olddir, oldname, newdir, newname, 0);
	if (ret == 0)
		take_node(c, h, attr);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int gofer_rename(struct gofer_client *c, uint64_t olddir, const char *oldname, uint64_t newdir,
		 const char *newname, uint32_t flags)
{
	int ret;

	pthread_mutex_lock(&c->lock);
	ret = link_locked(c, GOFER_MSG_RENAME, olddir, oldname, newdir, newname, flags);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int gofer_unlink(struct gofer_client *c, uint64_t dir, const char *name, uint32_t flags)
{
	int ret;

	pthread_mutex_lock(&c->lock);
	c->req.type = GOFER_MSG_UNLINK;
	c->req.unlink.dir = dir;
	c->req.unlink.flags = flags;
	ret = set_name(&c->req.unlink.name, name);
	if (ret == 0)
		ret = rpc(c, c->rbuf, NULL);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int gofer_fsync(struct gofer_client *c, uint64_t h, bool datasync)
{
	int ret;

	pthread_mutex_lock(&c->lock);
	c->req.type = GOFER_MSG_FSYNC;
	c->req.fsync.handle = h;
	c->req.fsync.flags = datasync ? GOFER_FSYNC_DATASYNC : 0;
	ret = rpc(c, c->rbuf, NULL);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/*
 * GETXATTR and LISTXATTR, c->req.xattr filled but for size: copies the reply's value or list to
 * buf (size bytes; 0 asks for the length). Returns its length or -errno. c->lock held.
 */
static ssize_t xattr_read_locked(struct gofer_client *c, void *buf, size_t size)
{
	uint32_t len;
	int ret;

	c->req.xattr.size = (uint32_t)MIN(size, (size_t)GOFER_XATTR_SIZE_MAX);
	ret = rpc(c, c->rbuf, NULL);
	if (ret < 0)
		return ret;
	len = c->rep.xattr.len;
	if (size == 0)
		return c->rep.xattr.data ? -EIO : (ssize_t)len;
	/* The gofer answers ERANGE rather than send more than asked. */
	if (len > c->req.xattr.size || (len && !c->rep.xattr.data)) {
		log_warn("gofer: xattr reply larger than asked, or without its bytes");
		return -EIO;
	}
	if (len)
		memcpy(buf, c->rep.xattr.data, len);
	return (ssize_t)len;
}

ssize_t gofer_getxattr(struct gofer_client *c, uint64_t h, const char *name, void *buf, size_t size)
{
	ssize_t ret;

	if (size && !buf)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	memset(&c->req.xattr, 0, sizeof(c->req.xattr));
	c->req.type = GOFER_MSG_GETXATTR;
	c->req.xattr.handle = h;
	ret = set_xattr_name(&c->req.xattr.name, name);
	if (ret == 0)
		ret = xattr_read_locked(c, buf, size);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

ssize_t gofer_listxattr(struct gofer_client *c, uint64_t h, char *buf, size_t size)
{
	ssize_t ret;

	if (size && !buf)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	memset(&c->req.xattr, 0, sizeof(c->req.xattr));
	c->req.type = GOFER_MSG_LISTXATTR;
	c->req.xattr.handle = h;
	ret = xattr_read_locked(c, buf, size);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int gofer_setxattr(struct gofer_client *c, uint64_t h, const char *name, const void *value,
		   size_t size, uint32_t flags)
{
	int ret;

	if (size > GOFER_XATTR_SIZE_MAX)
		return -E2BIG;
	if (size && !value)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	memset(&c->req.xattr, 0, sizeof(c->req.xattr));
	c->req.type = GOFER_MSG_SETXATTR;
	c->req.xattr.handle = h;
	c->req.xattr.flags = flags;
	c->req.xattr.size = (uint32_t)size;
	c->req.xattr.value = value;
	ret = set_xattr_name(&c->req.xattr.name, name);
	if (ret == 0)
		ret = rpc(c, c->rbuf, NULL);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int gofer_removexattr(struct gofer_client *c, uint64_t h, const char *name)
{
	int ret;

	pthread_mutex_lock(&c->lock);
	memset(&c->req.xattr, 0, sizeof(c->req.xattr));
	c->req.type = GOFER_MSG_REMOVEXATTR;
	c->req.xattr.handle = h;
	ret = set_xattr_name(&c->req.xattr.name, name);
	if (ret == 0)
		ret = rpc(c, c->rbuf, NULL);
	pthread_mutex_unlock(&c->lock);
	return ret;
}
