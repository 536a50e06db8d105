/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk serve: exec. A process is started with CONTROL_EXEC on the sandbox's control socket (as
 * husk exec does, without its proxy): its stdin, stdout and stderr are pipes the server holds,
 * read with poll; its status comes as CONTROL_EXITED on the same connection; a timeout sends
 * SIGKILL with CONTROL_SIGNAL.
 *
 * The output guard: each stream keeps its first max/2 bytes (the head, streamed as it comes)
 * and its last max/2 bytes (the tail, held back); past max bytes the caller gets head, the
 * marker line and tail, and the whole output is written into the sandbox at
 * /tmp/husk-output/<exec_id>.log by a second exec. Every event also goes to the kept log,
 * STATE/logs/ID/<exec_id>.ndjson, and the exec to the log index.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "common/cleanup.h"
#include "runtime/control.h"
#include "runtime/serve/serve.h"

#define OUTPUT_DIR "/tmp/husk-output"
#define STDERR_TAIL_LINES 20

static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --- UTF-8 --- */

/* Length of the valid UTF-8 sequence at p (n bytes available): 1-4, 0 if invalid, -1 if it
 * may be valid but is cut short. */
static int utf8_seq(const unsigned char *p, size_t n)
{
	int len;
	unsigned min;
	unsigned cp;

	if (p[0] < 0x80)
		return 1;
	if ((p[0] & 0xe0) == 0xc0) {
		len = 2;
		cp = p[0] & 0x1f;
		min = 0x80;
	} else if ((p[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = p[0] & 0x0f;
		min = 0x800;
	} else if ((p[0] & 0xf8) == 0xf0) {
		len = 4;
		cp = p[0] & 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	for (int i = 1; i < len; i++) {
		if ((size_t)i >= n)
			return -1;
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/*
 * Appends p (n bytes) to out as valid UTF-8, invalid bytes as U+FFFD. Unless final, an
 * incomplete sequence at the end is not consumed. Returns the bytes consumed.
 */
static size_t utf8_clean(const char *p, size_t n, bool final, FILE *out)
{
	const unsigned char *u = (const unsigned char *)p;
	size_t i = 0;

	while (i < n) {
		int l = utf8_seq(u + i, n - i);

		if (l < 0 && !final)
			break;
		if (l <= 0) {
			fputs("\xef\xbf\xbd", out);
			i++;
			continue;
		}
		fwrite(u + i, 1, (size_t)l, out);
		i += (size_t)l;
	}
	return i;
}

/* A malloc'd valid UTF-8 copy of p (n bytes). */
static char *utf8_dup(const char *p, size_t n, size_t *outlen)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	if (!f)
		abort();
	utf8_clean(p, n, true, f);
	fclose(f);
	*outlen = len;
	return s;
}

/* --- the output guard --- */

struct stream {
	const char *name; /* "stdout" or "stderr" */
	int fd; /* the pipe, -1 at EOF */
	uint64_t total, lines;
	bool last_nl;
	size_t half;
	char *head;
	size_t head_len;
	char *tail; /* up to 2*half bytes; the last half of them are the tail */
	size_t tail_len;
	int full_fd; /* every byte (an unlinked file in the logs folder) */
	/* Bytes of the head not yet sent (streaming), and the UTF-8 carry of the log. */
	size_t head_sent;
	char log_carry[4];
	size_t log_carry_len;
};

struct exec_run {
	struct sandbox *sb;
	char exec_id[16];
	json_t *what; /* {"argv": [...]} or {"cmd": "..."} for the index */
	bool stream;
	int in_fd; /* stdin pipe, -1 when done */
	const char *in_data;
	size_t in_len, in_off;
	char *in_buf; /* owns in_data */
	int sock; /* the control connection, -1 after CONTROL_EXITED */
	int pid;
	int status; /* wait status, -1 unknown */
	bool lost; /* the sandbox went away */
	bool timed_out, killed;
	int client_fd; /* the HTTP connection, watched for the client going away; -1 after */
	double timeout, start, start_wall, end;
	struct control_stats st0;
	struct stream out, err;
	FILE *log; /* the kept NDJSON log */
	size_t max;
	/* Streaming: bytes ready to go to the client. */
	char *pending;
	size_t pending_len, pending_off;
	bool finished, sent_exit;
	json_t *result; /* the exit event */
};

static void stream_init(struct stream *s, const char *name, int fd, size_t max, const char *dir)
{
	s->name = name;
	s->fd = fd;
	s->half = max / 2;
	s->head = malloc(s->half + 1);
	s->tail = malloc(2 * s->half + 1);
	s->full_fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (!s->head || !s->tail)
		abort();
}

static void stream_free(struct stream *s)
{
	free(s->head);
	free(s->tail);
	if (s->full_fd >= 0)
		close(s->full_fd);
	if (s->fd >= 0)
		close(s->fd);
}

/* Writes one event line to the kept log. */
static void log_event(struct exec_run *r, struct stream *s, const char *p, size_t n, bool final)
{
	char buf[65536 + 8];
	size_t len = 0, used;
	char *clean = NULL;
	size_t cl = 0;
	FILE *f;
	json_t *ev;

	if (!r->log)
		return;
	/* The carry (a sequence cut by the last read), then the new bytes. */
	if (s->log_carry_len + n > sizeof(buf)) {
		/* Long reads are split first. */
		size_t part = sizeof(buf) - s->log_carry_len - 8;

		log_event(r, s, p, part, false);
		log_event(r, s, p + part, n - part, final);
		return;
	}
	memcpy(buf, s->log_carry, s->log_carry_len);
	memcpy(buf + s->log_carry_len, p, n);
	len = s->log_carry_len + n;
	f = open_memstream(&clean, &cl);
	if (!f)
		return;
	used = utf8_clean(buf, len, final, f);
	fclose(f);
	s->log_carry_len = len - used;
	memcpy(s->log_carry, buf + used, s->log_carry_len);
	if (cl) {
		ev = json_pack("{s:s,s:s%}", "type", s->name, "data", clean, cl);
		if (ev) {
			json_dumpf(ev, r->log, JSON_COMPACT);
			fputc('\n', r->log);
			json_decref(ev);
		}
	}
	free(clean);
}

/* Queues text for the client (streaming). */
static void pending_add(struct exec_run *r, const char *p, size_t n)
{
	char *b = realloc(r->pending, r->pending_len + n);

	if (!b)
		abort();
	r->pending = b;
	memcpy(r->pending + r->pending_len, p, n);
	r->pending_len += n;
}

static void pending_event(struct exec_run *r, const char *type, const char *data, size_t n)
{
	json_t *ev = json_pack("{s:s,s:s%}", "type", type, "data", data, n);
	char *line;

	if (!ev)
		return;
	line = json_dumps(ev, JSON_COMPACT);
	json_decref(ev);
	if (!line)
		return;
	pending_add(r, line, strlen(line));
	pending_add(r, "\n", 1);
	free(line);
}

/* Streams the head bytes not sent yet (all of them when final; else whole sequences). */
static void stream_send_head(struct exec_run *r, struct stream *s, bool final)
{
	char *clean = NULL;
	size_t cl = 0, used;
	FILE *f;

	if (s->head_sent == s->head_len)
		return;
	f = open_memstream(&clean, &cl);
	if (!f)
		return;
	used = utf8_clean(s->head + s->head_sent, s->head_len - s->head_sent, final, f);
	fclose(f);
	s->head_sent += used;
	if (cl)
		pending_event(r, s->name, clean, cl);
	free(clean);
}

static void stream_feed(struct exec_run *r, struct stream *s, const char *p, size_t n)
{
	size_t h;

	s->total += n;
	for (size_t i = 0; i < n; i++)
		if (p[i] == '\n')
			s->lines++;
	s->last_nl = p[n - 1] == '\n';
	if (s->full_fd >= 0 && write(s->full_fd, p, n) != (ssize_t)n) {
		close(s->full_fd);
		s->full_fd = -1;
	}
	log_event(r, s, p, n, false);
	h = s->head_len < s->half ? s->half - s->head_len : 0;
	if (h > n)
		h = n;
	memcpy(s->head + s->head_len, p, h);
	s->head_len += h;
	p += h;
	n -= h;
	if (r->stream && h)
		stream_send_head(r, s, false);
	if (!n)
		return;
	if (n >= s->half) {
		memcpy(s->tail, p + n - s->half, s->half);
		s->tail_len = s->half;
		/* Remember that bytes were dropped: a total past head + tail says so. */
		return;
	}
	if (s->tail_len + n > 2 * s->half) {
		memmove(s->tail, s->tail + s->tail_len - (s->half - n), s->half - n);
		s->tail_len = s->half - n;
	}
	memcpy(s->tail + s->tail_len, p, n);
	s->tail_len += n;
}

static bool stream_cut(const struct stream *s)
{
	return s->total > 2 * s->half;
}

static uint64_t stream_lines(const struct stream *s)
{
	return s->lines + (s->total && !s->last_nl ? 1 : 0);
}

/* The part after the head that the caller gets: all of it, or the last half. */
static void stream_rest(const struct stream *s, const char **p, size_t *n)
{
	if (stream_cut(s) && s->tail_len > s->half) {
		*p = s->tail + s->tail_len - s->half;
		*n = s->half;
	} else {
		*p = s->tail;
		*n = s->tail_len;
	}
}

static char *marker(struct exec_run *r, const struct stream *s)
{
	char *m;

	if (asprintf(&m, "%s[husk: %llu bytes cut; the whole output is in %s/%s.log]\n",
		     s->head_len && s->head[s->head_len - 1] != '\n' ? "\n" : "",
		     (unsigned long long)(s->total - 2 * s->half), OUTPUT_DIR, r->exec_id) < 0)
		abort();
	return m;
}

/* The text the caller gets for a stream (whole replies). */
static char *stream_text(struct exec_run *r, const struct stream *s, size_t *len)
{
	char *buf = NULL, *out;
	size_t blen = 0, rn;
	const char *rp;
	FILE *f = open_memstream(&buf, &blen);

	if (!f)
		abort();
	stream_rest(s, &rp, &rn);
	if (stream_cut(s)) {
		char *m = marker(r, s);

		utf8_clean(s->head, s->head_len, true, f);
		fputs(m, f);
		utf8_clean(rp, rn, true, f);
		free(m);
		fclose(f);
		*len = blen;
		return buf;
	}
	fclose(f);
	free(buf);
	/* Head and rest are one text: clean them together (no sequence split at the seam). */
	buf = malloc(s->head_len + rn + 1);
	if (!buf)
		abort();
	memcpy(buf, s->head, s->head_len);
	memcpy(buf + s->head_len, rp, rn);
	out = utf8_dup(buf, s->head_len + rn, len);
	free(buf);
	return out;
}

/* The last lines of stderr the caller got. */
static json_t *stderr_tail(struct exec_run *r)
{
	size_t len;
	_cleanup_free_ char *text = stream_text(r, &r->err, &len);
	json_t *a = json_array();
	const char *lines[STDERR_TAIL_LINES];
	size_t lens[STDERR_TAIL_LINES];
	int n = 0;
	char *p = text, *end = text + len;

	if (len && end[-1] == '\n')
		end--;
	while (len && p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (n == STDERR_TAIL_LINES) {
			memmove(lines, lines + 1, sizeof(lines[0]) * (STDERR_TAIL_LINES - 1));
			memmove(lens, lens + 1, sizeof(lens[0]) * (STDERR_TAIL_LINES - 1));
			n--;
		}
		lines[n] = p;
		lens[n++] = l;
		p += l + 1;
	}
	for (int i = 0; i < n; i++)
		json_array_append_new(a, json_stringn(lines[i], lens[i]));
	return a;
}

/* --- talking to the sentry --- */

/* The sandbox's default environment, with env (an object, may be NULL) over it. */
static char **build_env(struct sandbox *sb, json_t *env)
{
	json_t *base, *v;
	size_t n = 0, i;
	char **out;
	const char *k;

	pthread_mutex_lock(&sb->lock);
	base = json_deep_copy(json_object_get(sb->rec, "env"));
	pthread_mutex_unlock(&sb->lock);
	if (!json_is_array(base)) {
		json_decref(base);
		base = json_pack("[s]", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
					"/sbin:/bin");
	}
	out = calloc(json_array_size(base) + (env ? json_object_size(env) : 0) + 1, sizeof(*out));
	if (!out)
		abort();
	json_array_foreach(base, i, v) out[n++] = strdup(json_string_value(v));
	if (env)
		json_object_foreach(env, k, v)
		{
			size_t kl = strlen(k), j;
			char *kv;

			if (asprintf(&kv, "%s=%s", k, json_string_value(v)) < 0)
				abort();
			for (j = 0; j < n; j++)
				if (!strncmp(out[j], k, kl) && out[j][kl] == '=')
					break;
			if (j < n)
				free(out[j]);
			out[j] = kv;
			if (j == n)
				n++;
		}
	json_decref(base);
	return out;
}

static void strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

int exec_start(struct sandbox *sb, const struct exec_spec *s, bool want_stdin, int *in, int *out,
	       int *err, int *sock, int *pid)
{
	_cleanup_free_ char *path = sandbox_control_path(sb);
	struct control_exec e = { .uid = 0, .gid = 0, .umask = 022 };
	int pin[2] = { -1, -1 }, pout[2] = { -1, -1 }, perr[2] = { -1, -1 };
	int fds[3], ret, c = -1;
	size_t len;
	_cleanup_free_ void *msg = NULL;
	static char *const default_env[] = {
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL
	};
	char *const *env = s->env ? s->env : default_env;
	struct control_reply rep;

	for (e.nargs = 0; s->argv[e.nargs]; e.nargs++)
		;
	for (e.nenv = 0; env && env[e.nenv]; e.nenv++)
		;
	msg = control_encode_exec(&e, s->cwd ? s->cwd : "/", s->argv, env, &len);
	if (!msg)
		return -E2BIG;
	if (!path)
		return -ENOMEM;
	if (want_stdin) {
		if (pipe2(pin, O_CLOEXEC) < 0)
			return -errno;
	} else {
		pin[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (pin[0] < 0)
			return -errno;
	}
	if (pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0) {
		ret = -errno;
		goto out_close;
	}
	c = control_dial(path);
	if (c < 0) {
		ret = c;
		goto out_close;
	}
	fds[0] = pin[0];
	fds[1] = pout[1];
	fds[2] = perr[1];
	ret = control_send_fds(c, msg, len, fds, 3);
	if (ret < 0)
		goto out_close;
	ret = control_recv(c, CONTROL_REPLY, &rep, sizeof(rep));
	if (ret < 0)
		goto out_close;
	if (rep.err < 0) {
		ret = rep.err;
		goto out_close;
	}
	close(pin[0]);
	close(pout[1]);
	close(perr[1]);
	*in = pin[1];
	*out = pout[0];
	*err = perr[0];
	*sock = c;
	*pid = rep.pid;
	return 0;
out_close:
	for (int i = 0; i < 2; i++) {
		if (pin[i] >= 0)
			close(pin[i]);
		if (pout[i] >= 0)
			close(pout[i]);
		if (perr[i] >= 0)
			close(perr[i]);
	}
	if (c >= 0)
		close(c);
	return ret;
}

int exec_wait(int sock)
{
	struct control_exited ex;
	int ret = control_recv(sock, CONTROL_EXITED, &ex, sizeof(ex));

	return ret < 0 ? ret : ex.status;
}

void exec_kill(struct sandbox *sb, int pid)
{
	_cleanup_free_ char *path = sandbox_control_path(sb);
	_cleanup_free_ struct control_ps_entry *ps = NULL;
	char msg[CONTROL_SIGNAL_MSG_LEN];
	int n, *tree, ntree = 0;

	if (!path)
		return;
	/*
	 * The process and its descendants (a shell's children would live on, holding the
	 * pipes): found through their parents while the process still stands, then killed, it first.
	 */
	n = control_fetch_ps(path, &ps);
	tree = malloc(sizeof(int) * (size_t)(n > 0 ? n + 1 : 1));
	if (tree) {
		tree[ntree++] = pid;
		for (int i = 0; i < ntree; i++)
			for (int j = 0; j < n; j++)
				if (ps[j].ppid == tree[i] && ps[j].pid != pid && ntree <= n)
					tree[ntree++] = ps[j].pid;
		/* The process first: a shell whose child died first would carry on. */
		for (int i = 0; i < ntree; i++) {
			control_encode_signal(tree[i], SIGKILL, msg);
			control_call(path, msg, sizeof(msg));
		}
		free(tree);
		return;
	}
	control_encode_signal(pid, SIGKILL, msg);
	control_call(path, msg, sizeof(msg));
}

static int stats(struct sandbox *sb, struct control_stats *st)
{
	_cleanup_free_ char *path = sandbox_control_path(sb);
	_cleanup_close_ int sock = -1;
	struct control_hdr h = {
		.magic = CONTROL_MAGIC, .version = CONTROL_VERSION, .op = CONTROL_STATS, .len = 0
	};

	memset(st, 0, sizeof(*st));
	if (!path)
		return -ENOMEM;
	sock = control_dial(path);
	if (sock < 0)
		return sock;
	if (send(sock, &h, sizeof(h), MSG_NOSIGNAL) != sizeof(h))
		return -errno;
	return control_recv(sock, CONTROL_STATS_REPLY, st, sizeof(*st));
}

/* Reads what is ready on a stream. */
static void read_stream(struct exec_run *r, struct stream *s)
{
	char buf[65536];
	ssize_t n = read(s->fd, buf, sizeof(buf));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		close(s->fd);
		s->fd = -1;
		return;
	}
	stream_feed(r, s, buf, (size_t)n);
}

/*
 * Moves the exec along: waits up to timeout_ms for output, stdin room, the exit, or the
 * deadline. Returns true once everything is over (pipes at EOF and the status known).
 */
static bool exec_pump(struct exec_run *r, int timeout_ms)
{
	struct pollfd p[5];
	int n = 0, iin = -1, iout = -1, ierr = -1, isock = -1, icl = -1;
	double now;

	if (r->out.fd < 0 && r->err.fd < 0 && r->sock < 0)
		return true;
	now = mono_now();
	if (r->timeout > 0 && !r->killed && now >= r->start + r->timeout) {
		r->timed_out = r->killed = true;
		exec_kill(r->sb, r->pid);
	}
	if (r->timeout > 0 && !r->killed) {
		int left = (int)((r->start + r->timeout - now) * 1000) + 1;

		if (timeout_ms < 0 || left < timeout_ms)
			timeout_ms = left;
	}
	if (r->in_fd >= 0) {
		iin = n;
		p[n++] = (struct pollfd){ .fd = r->in_fd, .events = POLLOUT };
	}
	if (r->out.fd >= 0) {
		iout = n;
		p[n++] = (struct pollfd){ .fd = r->out.fd, .events = POLLIN };
	}
	if (r->err.fd >= 0) {
		ierr = n;
		p[n++] = (struct pollfd){ .fd = r->err.fd, .events = POLLIN };
	}
	/* The status comes after the output (the process closed its pipes first, or its
	 * children hold them: then the exit ends the wait for them a little later). */
	if (r->sock >= 0) {
		isock = n;
		p[n++] = (struct pollfd){ .fd = r->sock, .events = POLLIN };
	}
	/* The process is gone but something it started holds the pipes: read a little more. */
	if (r->sock < 0) {
		int left = (int)((r->end + 0.2 - now) * 1000) + 1;

		if (left < 0)
			left = 0;
		if (timeout_ms < 0 || left < timeout_ms)
			timeout_ms = left;
	}
	/* A client that hung up does not wait for the process: it is killed. */
	if (r->client_fd >= 0 && !r->killed) {
		icl = n;
		p[n++] = (struct pollfd){ .fd = r->client_fd, .events = POLLRDHUP };
	}
	if (poll(p, (nfds_t)n, timeout_ms) < 0)
		return false;
	if (icl >= 0 && (p[icl].revents & (POLLRDHUP | POLLHUP | POLLERR))) {
		r->client_fd = -1;
		r->killed = true;
		if (r->sock >= 0)
			exec_kill(r->sb, r->pid);
	}
	if (iin >= 0 && p[iin].revents) {
		if (p[iin].revents & (POLLERR | POLLHUP)) {
			close(r->in_fd);
			r->in_fd = -1;
		} else {
			ssize_t w = write(r->in_fd, r->in_data + r->in_off, r->in_len - r->in_off);

			if (w > 0)
				r->in_off += (size_t)w;
			if ((w < 0 && errno != EAGAIN && errno != EINTR) ||
			    r->in_off == r->in_len) {
				close(r->in_fd);
				r->in_fd = -1;
			}
		}
	}
	if (iout >= 0 && p[iout].revents)
		read_stream(r, &r->out);
	if (ierr >= 0 && p[ierr].revents)
		read_stream(r, &r->err);
	if (isock >= 0 && p[isock].revents) {
		int st = exec_wait(r->sock);

		if (st < 0)
			r->lost = true;
		else
			r->status = st;
		close(r->sock);
		r->sock = -1;
		r->end = mono_now();
		/* Grandchildren may hold the pipes: give them a moment, then stop reading. */
	}
	if (r->sock < 0 && (r->out.fd >= 0 || r->err.fd >= 0) && mono_now() > r->end + 0.2) {
		if (r->out.fd >= 0) {
			close(r->out.fd);
			r->out.fd = -1;
		}
		if (r->err.fd >= 0) {
			close(r->err.fd);
			r->err.fd = -1;
		}
	}
	return r->out.fd < 0 && r->err.fd < 0 && r->sock < 0;
}

/* Copies an unlinked file's bytes to fd. */
static int copy_fd(int from, int to)
{
	char buf[65536];
	off_t off = 0;
	ssize_t n;

	while ((n = pread(from, buf, sizeof(buf), off)) > 0) {
		for (ssize_t done = 0; done < n;) {
			ssize_t w = write(to, buf + done, (size_t)(n - done));

			if (w < 0) {
				if (errno == EINTR)
					continue;
				return -errno;
			}
			done += w;
		}
		off += n;
	}
	return n < 0 ? -errno : 0;
}

/* Writes the whole output into the sandbox (stdout, then stderr, each with a header). */
static int write_full_output(struct exec_run *r)
{
	char path[128], hdr[128];
	char *argv_agent[] = { "/.husk/husk-agent", "put", path, NULL };
	char *argv_sh[] = { "/bin/sh", "-c", NULL, NULL };
	_cleanup_free_ char *script = NULL;
	struct exec_spec s = { .cwd = "/" };
	int in = -1, out = -1, err = -1, sock = -1, pid, ret;

	snprintf(path, sizeof(path), "%s/%s.log", OUTPUT_DIR, r->exec_id);
	if (serve.agent) {
		s.argv = argv_agent;
	} else {
		if (asprintf(&script, "mkdir -p %s && cat > %s", OUTPUT_DIR, path) < 0)
			return -ENOMEM;
		argv_sh[2] = script;
		s.argv = argv_sh;
	}
	ret = exec_start(r->sb, &s, true, &in, &out, &err, &sock, &pid);
	if (ret < 0)
		return ret;
	close(out);
	close(err);
	snprintf(hdr, sizeof(hdr), "=== stdout (%llu bytes) ===\n",
		 (unsigned long long)r->out.total);
	ret = write(in, hdr, strlen(hdr)) < 0 ? -errno : 0;
	if (!ret && r->out.full_fd >= 0)
		ret = copy_fd(r->out.full_fd, in);
	snprintf(hdr, sizeof(hdr), "%s=== stderr (%llu bytes) ===\n",
		 r->out.total && !r->out.last_nl ? "\n" : "", (unsigned long long)r->err.total);
	if (!ret)
		ret = write(in, hdr, strlen(hdr)) < 0 ? -errno : 0;
	if (!ret && r->err.full_fd >= 0)
		ret = copy_fd(r->err.full_fd, in);
	close(in);
	exec_wait(sock);
	close(sock);
	return ret;
}

static json_t *exit_event(struct exec_run *r)
{
	struct control_stats st1;
	bool cut = stream_cut(&r->out) || stream_cut(&r->err);
	char full[128];
	uint64_t cutb = 0;
	json_t *o;

	if (stream_cut(&r->out))
		cutb += r->out.total - 2 * r->out.half;
	if (stream_cut(&r->err))
		cutb += r->err.total - 2 * r->err.half;
	snprintf(full, sizeof(full), "%s/%s.log", OUTPUT_DIR, r->exec_id);
	if (stats(r->sb, &st1) < 0)
		st1 = r->st0;
	o = json_pack("{s:s,s:s,s:b,s:f,s:f,s:f,s:b}", "type", "exit", "exec_id", r->exec_id,
		      "timed_out", r->timed_out, "duration_s", r->end - r->start, "cpu_user_s",
		      (double)(st1.cpu_user - r->st0.cpu_user) / 1e9, "cpu_system_s",
		      (double)(st1.cpu_kernel - r->st0.cpu_kernel) / 1e9, "truncated", cut);
	if (r->status >= 0 && !(r->status & 0x7f)) {
		json_object_set_new(o, "exit_code", json_integer((r->status >> 8) & 0xff));
		json_object_set_new(o, "signal", json_null());
	} else if (r->status >= 0) {
		json_object_set_new(o, "exit_code", json_null());
		json_object_set_new(o, "signal", json_integer(r->status & 0x7f));
	} else {
		json_object_set_new(o, "exit_code", json_null());
		json_object_set_new(o, "signal", json_null());
	}
	json_object_set_new(
		o, "output",
		json_pack("{s:I,s:I,s:I,s:I,s:I,s:o,s:o}", "stdout_bytes", (json_int_t)r->out.total,
			  "stderr_bytes", (json_int_t)r->err.total, "stdout_lines",
			  (json_int_t)stream_lines(&r->out), "stderr_lines",
			  (json_int_t)stream_lines(&r->err), "cut_bytes", (json_int_t)cutb,
			  "full_output_path", cut ? json_string(full) : json_null(), "stderr_tail",
			  stderr_tail(r)));
	return o;
}

/* After the process: full output, logs, index, metrics. Sets r->result. */
static void exec_finish(struct exec_run *r)
{
	json_t *entry;
	char started[40];

	if (r->end == 0)
		r->end = mono_now();
	log_event(r, &r->out, "", 0, true);
	log_event(r, &r->err, "", 0, true);
	if (stream_cut(&r->out) || stream_cut(&r->err))
		write_full_output(r);
	r->result = exit_event(r);
	if (r->lost)
		json_object_set_new(r->result, "error", json_string("the sandbox stopped"));
	if (r->log) {
		json_dumpf(r->result, r->log, JSON_COMPACT);
		fputc('\n', r->log);
		fclose(r->log);
		r->log = NULL;
	}
	entry = json_pack("{s:s,s:s,s:O,s:O,s:O,s:O,s:O}", "exec_id", r->exec_id, "started",
			  serve_time(r->start_wall, started, sizeof(started)), "duration_s",
			  json_object_get(r->result, "duration_s"), "exit_code",
			  json_object_get(r->result, "exit_code"), "signal",
			  json_object_get(r->result, "signal"), "stdout_bytes",
			  json_object_get(json_object_get(r->result, "output"), "stdout_bytes"),
			  "stderr_bytes",
			  json_object_get(json_object_get(r->result, "output"), "stderr_bytes"));
	json_object_update(entry, r->what);
	logs_index_append(r->sb->logdir, entry);
	json_decref(entry);
	metrics_exec_done(r->end - r->start);
	sandbox_leave(r->sb);
	r->finished = true;
}

static void exec_run_free(struct exec_run *r)
{
	if (!r)
		return;
	if (r->in_fd >= 0)
		close(r->in_fd);
	if (r->sock >= 0)
		close(r->sock);
	stream_free(&r->out);
	stream_free(&r->err);
	if (r->log)
		fclose(r->log);
	json_decref(r->what);
	json_decref(r->result);
	free(r->in_buf);
	free(r->pending);
	sandbox_put(r->sb);
	free(r);
}

static int b64_val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

/* Decodes base64 (padding optional, blanks ignored). Returns a malloc'd buffer or NULL. */
static char *b64_decode(const char *s, size_t *outlen)
{
	size_t n = strlen(s), o = 0;
	char *out = malloc(n / 4 * 3 + 4);
	uint32_t acc = 0;
	int bits = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		int v;

		if (s[i] == '=' || s[i] == '\n' || s[i] == '\r' || s[i] == ' ')
			continue;
		v = b64_val(s[i]);
		if (v < 0) {
			free(out);
			return NULL;
		}
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	*outlen = o;
	return out;
}

/* libmicrohttpd asks for the next part of a streamed reply. */
static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct exec_run *r = cls;
	size_t n;

	while (r->pending_off == r->pending_len) {
		r->pending_off = r->pending_len = 0;
		if (r->sent_exit)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (r->finished || exec_pump(r, 1000)) {
			if (!r->finished) {
				struct stream *ss[2] = { &r->out, &r->err };

				for (int i = 0; i < 2; i++) {
					const char *rp;
					size_t rn;

					stream_send_head(r, ss[i], true);
					stream_rest(ss[i], &rp, &rn);
					if (stream_cut(ss[i])) {
						_cleanup_free_ char *m = marker(r, ss[i]);

						pending_event(r, ss[i]->name, m, strlen(m));
					}
					if (rn) {
						size_t cl;
						_cleanup_free_ char *c = utf8_dup(rp, rn, &cl);

						pending_event(r, ss[i]->name, c, cl);
					}
				}
				exec_finish(r);
			}
			{
				char *line = json_dumps(r->result, JSON_COMPACT);

				if (line) {
					pending_add(r, line, strlen(line));
					pending_add(r, "\n", 1);
					free(line);
				}
			}
			r->sent_exit = true;
		}
	}
	n = r->pending_len - r->pending_off;
	if (n > max)
		n = max;
	memcpy(buf, r->pending + r->pending_off, n);
	r->pending_off += n;
	return (ssize_t)n;
}

static void stream_free_cb(void *cls)
{
	struct exec_run *r = cls;

	if (!r->finished) {
		/* The client went away: the process goes too. */
		if (!r->killed) {
			r->killed = true;
			exec_kill(r->sb, r->pid);
		}
		while (!exec_pump(r, 1000))
			;
		exec_finish(r);
	}
	exec_run_free(r);
}

/* A program that could not start: the reply a shell would give (127/126). */
static void start_failed(struct exec_run *r, const char *arg0, int err)
{
	char msg[512];
	int code = err == -ENOENT ? 127 : 126;

	snprintf(msg, sizeof(msg), "husk: exec %s: %s\n", arg0, strerror(-err));
	stream_feed(r, &r->err, msg, strlen(msg));
	r->status = code << 8;
	r->end = mono_now();
}

int route_exec(struct MHD_Connection *conn, struct sandbox *sb, const char *body, size_t len)
{
	static const char *const fields[] = { "argv",	   "cmd",    "env",
					      "cwd",	   "stdin",  "stdin_b64",
					      "timeout_s", "stream", "max_output_bytes",
					      NULL };
	struct serve_err e = { 0 };
	_cleanup_(json_decrefp) json_t *req = serve_parse_body(body, len, &e);
	const char *cmd = NULL, *cwd = NULL, *in = NULL, *in64 = NULL;
	json_t *argv = NULL, *env = NULL;
	int64_t max = 65536;
	double timeout = 0;
	bool stream = false;
	char **av = NULL, **envv = NULL;
	struct exec_run *r;
	struct exec_spec s;
	int ret, out_fd = -1, err_fd = -1;
	_cleanup_free_ char *logpath = NULL;
	size_t i;

	if (!req || serve_check_fields(req, "", fields, &e) < 0 ||
	    serve_get_string(req, "", "cmd", &cmd, &e) < 0 ||
	    serve_get_string(req, "", "cwd", &cwd, &e) < 0 ||
	    serve_get_string(req, "", "stdin", &in, &e) < 0 ||
	    serve_get_string(req, "", "stdin_b64", &in64, &e) < 0 ||
	    serve_get_strmap(req, "", "env", &env, &e) < 0 ||
	    serve_get_number(req, "", "timeout_s", 0, 1e7, &timeout, &e) < 0 ||
	    serve_get_bool(req, "", "stream", &stream, &e) < 0 ||
	    serve_get_int(req, "", "max_output_bytes", 64, 1 << 30, &max, &e) < 0)
		return serve_reply_error(conn, e.status, "%s", e.msg);
	argv = json_object_get(req, "argv");
	if (!!argv == !!cmd)
		return serve_reply_error(conn, 400, "give exactly one of argv and cmd");
	if (in && in64)
		return serve_reply_error(conn, 400, "give at most one of stdin and stdin_b64");
	if (cwd && cwd[0] != '/')
		return serve_reply_error(conn, 400, "field \"cwd\": must be an absolute path");
	if (argv) {
		json_t *a;

		if (!json_is_array(argv) || !json_array_size(argv))
			return serve_reply_error(conn, 400,
						 "field \"argv\": expected a non-empty array of "
						 "strings");
		json_array_foreach(argv, i, a) if (
			!json_is_string(a) ||
			strlen(json_string_value(a)) !=
				json_string_length(
					a)) return serve_reply_error(conn, 400,
								     "field \"argv[%zu]\": expected a string",
								     i);
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return MHD_NO;
	r->sb = sb;
	sandbox_get(sb);
	r->in_fd = r->sock = -1;
	r->status = -1;
	{
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);

		r->client_fd = ci ? ci->connect_fd : -1;
	}
	r->out.fd = r->err.fd = -1;
	r->out.full_fd = r->err.full_fd = -1;
	r->stream = stream;
	r->timeout = timeout;
	r->max = (size_t)max;
	serve_new_id("ex-", r->exec_id, sizeof(r->exec_id));
	if (in64) {
		r->in_buf = b64_decode(in64, &r->in_len);
		if (!r->in_buf) {
			exec_run_free(r);
			return serve_reply_error(conn, 400, "field \"stdin_b64\": not base64");
		}
	} else if (in) {
		r->in_buf = strdup(in);
		r->in_len = strlen(in);
	}
	r->in_data = r->in_buf;
	if (argv) {
		av = calloc(json_array_size(argv) + 1, sizeof(*av));
		json_array_foreach(argv, i, env) av[i] = strdup(json_string_value(env));
		env = json_object_get(req, "env");
		r->what = json_pack("{s:O}", "argv", argv);
	} else {
		av = calloc(4, sizeof(*av));
		av[0] = strdup("/bin/sh");
		av[1] = strdup("-c");
		av[2] = strdup(cmd);
		r->what = json_pack("{s:s}", "cmd", cmd);
	}
	if (sandbox_enter(sb, &e) < 0) {
		strv_free(av);
		exec_run_free(r);
		return serve_reply_error(conn, e.status, "%s", e.msg);
	}
	envv = build_env(sb, env);
	stream_init(&r->out, "stdout", -1, r->max, sb->logdir);
	stream_init(&r->err, "stderr", -1, r->max, sb->logdir);
	if (asprintf(&logpath, "%s/%s.ndjson", sb->logdir, r->exec_id) >= 0)
		r->log = fopen(logpath, "we");
	stats(sb, &r->st0);
	s = (struct exec_spec){ .argv = av, .env = envv, .cwd = cwd };
	if (!cwd) {
		pthread_mutex_lock(&sb->lock);
		cwd = json_string_value(json_object_get(sb->rec, "cwd"));
		s.cwd = cwd ? strdup(cwd) : NULL;
		pthread_mutex_unlock(&sb->lock);
		cwd = NULL;
	}
	r->start = mono_now();
	r->start_wall = serve_now();
	ret = exec_start(sb, &s, r->in_len > 0, &r->in_fd, &out_fd, &err_fd, &r->sock, &r->pid);
	if (!cwd)
		free((char *)s.cwd);
	if (ret == -ENOENT || ret == -EACCES || ret == -ENOEXEC || ret == -EISDIR) {
		start_failed(r, av[0], ret);
	} else if (ret < 0) {
		strv_free(av);
		strv_free(envv);
		r->end = mono_now();
		exec_finish(r);
		exec_run_free(r);
		return serve_reply_error(conn, 409, "cannot start the process in %s: %s", sb->id,
					 strerror(-ret));
	} else {
		r->out.fd = out_fd;
		r->err.fd = err_fd;
	}
	strv_free(av);
	strv_free(envv);
	if (r->in_fd >= 0)
		fcntl(r->in_fd, F_SETFL, O_NONBLOCK);

	if (stream) {
		struct MHD_Response *resp = MHD_create_response_from_callback(
			MHD_SIZE_UNKNOWN, 65536, stream_reader, r, stream_free_cb);

		if (!resp) {
			stream_free_cb(r);
			return MHD_NO;
		}
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/x-ndjson");
		ret = MHD_queue_response(conn, 200, resp);
		MHD_destroy_response(resp);
		return ret;
	}
	while (!exec_pump(r, -1))
		;
	exec_finish(r);
	{
		json_t *o = json_deep_copy(r->result);
		size_t ol, el;
		char *so = stream_text(r, &r->out, &ol), *se = stream_text(r, &r->err, &el);

		json_object_del(o, "type");
		json_object_set_new(o, "stdout", json_stringn(so, ol));
		json_object_set_new(o, "stderr", json_stringn(se, el));
		free(so);
		free(se);
		exec_run_free(r);
		return serve_reply_json(conn, 200, o);
	}
}

int exec_simple(struct sandbox *sb, char *const *argv, const void *in, size_t inlen, char **out,
		size_t *outlen, char *errbuf, size_t errsize)
{
	struct exec_spec s = { .argv = (char **)argv, .cwd = "/" };
	int fin = -1, fout = -1, ferr = -1, sock = -1, pid, ret, status;
	char *buf = NULL;
	size_t len = 0, elen = 0;
	FILE *f = open_memstream(&buf, &len);
	size_t off = 0;

	if (!f)
		return -ENOMEM;
	if (errsize)
		errbuf[0] = 0;
	ret = exec_start(sb, &s, inlen > 0, &fin, &fout, &ferr, &sock, &pid);
	if (ret < 0) {
		fclose(f);
		free(buf);
		return ret;
	}
	if (fin >= 0)
		fcntl(fin, F_SETFL, O_NONBLOCK);
	while (fout >= 0 || ferr >= 0) {
		struct pollfd p[3];
		int n = 0, a = -1, b = -1, c = -1;
		char tmp[65536];
		ssize_t r;

		if (fin >= 0) {
			a = n;
			p[n++] = (struct pollfd){ .fd = fin, .events = POLLOUT };
		}
		if (fout >= 0) {
			b = n;
			p[n++] = (struct pollfd){ .fd = fout, .events = POLLIN };
		}
		if (ferr >= 0) {
			c = n;
			p[n++] = (struct pollfd){ .fd = ferr, .events = POLLIN };
		}
		if (poll(p, (nfds_t)n, -1) < 0 && errno != EINTR)
			break;
		if (a >= 0 && p[a].revents) {
			r = (p[a].revents & POLLOUT) ?
				    write(fin, (const char *)in + off, inlen - off) :
				    -1;
			if (r > 0)
				off += (size_t)r;
			if ((r < 0 && errno != EAGAIN) || off == inlen) {
				close(fin);
				fin = -1;
			}
		}
		if (b >= 0 && p[b].revents) {
			r = read(fout, tmp, sizeof(tmp));
			if (r > 0 && out)
				fwrite(tmp, 1, (size_t)r, f);
			if (r <= 0 && !(r < 0 && errno == EINTR)) {
				close(fout);
				fout = -1;
			}
		}
		if (c >= 0 && p[c].revents) {
			r = read(ferr, tmp, sizeof(tmp));
			if (r > 0 && elen + 1 < errsize) {
				size_t k = (size_t)r < errsize - elen - 1 ? (size_t)r :
									    errsize - elen - 1;

				memcpy(errbuf + elen, tmp, k);
				elen += k;
				errbuf[elen] = 0;
			}
			if (r <= 0 && !(r < 0 && errno == EINTR)) {
				close(ferr);
				ferr = -1;
			}
		}
	}
	if (fin >= 0)
		close(fin);
	fclose(f);
	status = exec_wait(sock);
	close(sock);
	if (out) {
		*out = buf;
		*outlen = len;
	} else {
		free(buf);
	}
	return status;
}
