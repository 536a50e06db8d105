/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The credential gateway of husk serve (gateway.h, GATEWAY.md). Two kinds of connections:
 *
 * - channels: one per sandbox, a SOCK_SEQPACKET connection the runtime made to the gateway's
 *   socket and introduced with the hello of sentry/net/gateway.h ("HUSK-GATEWAY 1 ID\n") before
 *   it gave it to the sentry. The id is fixed at the hello: what the sentry sends later cannot
 *   change it. Each later message carries one fd, a guest connection.
 * - guest connections: the gateway's end of a unix stream socketpair the sentry made for a
 *   guest connect to the gateway address. One HTTP/1.1 request is read from it, checked against
 *   the secrets of the channel's sandbox, forwarded over TLS with the secret's header, and the
 *   answer relayed back; then it is closed.
 *
 * The loop thread polls the listening socket and the channels; a thread per guest connection
 * does the blocking work under timeouts. References: the loop thread and each request thread
 * hold one on the gateway (refs); the last put frees it. lock protects the sandbox table and
 * the counters; secrets, the TLS context and the pins are fixed after gateway_new.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "runtime/serve/gateway.h"
#include "sentry/net/gateway.h"

#define SECRET_FILE_MAX 65536
#define HEAD_MAX 65536 /* a request's line and headers */
#define MAX_CHANNELS 4096
#define MAX_ACTIVE 256 /* guest connections served at once, all sandboxes together */
#define DEFAULT_TIMEOUT_MS 30000

struct gw_sandbox {
	char *id;
	char **names; /* the secrets it may use */
	int nnames;
	struct gateway_stats stats;
	struct gw_sandbox *next;
};

struct gw_pin {
	char *host;
	struct sockaddr_storage addr; /* port 443 */
	socklen_t len;
};

struct gw_channel {
	int fd;
	bool hello; /* introduced: id is set */
	char id[NET_GATEWAY_ID_MAX + 1];
};

struct gateway {
	struct gateway_secret *secrets;
	int nsecrets;
	struct gw_pin *pins;
	int npins;
	int timeout_ms;
	SSL_CTX *ssl;

	int listen_fd;
	char *path;
	int wake[2]; /* a byte on wake[1] stops the loop thread */
	pthread_t loop;
	bool looping;

	pthread_mutex_t lock;
	int refs; /* lock */
	int active; /* lock: request threads running */
	struct gw_sandbox *sandboxes; /* lock */
};

/* --- secrets --- */

static bool name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-';
}

/* RFC 9110 tchar. */
static bool token_char(char c)
{
	return isalnum((unsigned char)c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool is_token(const char *s, size_t len)
{
	if (!len)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (!token_char(s[i]))
			return false;
	}
	return true;
}

/* Lower-cases host in place and drops one trailing dot; false if it is not a DNS name. */
static bool host_normalize(char *h)
{
	size_t len = strlen(h);

	if (len && h[len - 1] == '.')
		h[--len] = 0;
	if (!len || len > 253 || h[0] == '.' || h[0] == '-')
		return false;
	for (size_t i = 0; i < len; i++) {
		h[i] = (char)tolower((unsigned char)h[i]);
		if (!isalnum((unsigned char)h[i]) && h[i] != '.' && h[i] != '-')
			return false;
	}
	return true;
}

static void wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

void gateway_secret_clear(struct gateway_secret *s)
{
	free(s->name);
	wipe_free(s->value);
	for (int i = 0; i < s->nhosts; i++)
		free(s->hosts[i]);
	free(s->hosts);
	free(s->header);
	free(s->prefix);
	memset(s, 0, sizeof(*s));
}

/* Reads the secret's value from path into *out. */
static int read_secret_file(const char *path, char **out, char *why, size_t why_len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	char *buf;
	size_t len = 0;
	int ret;

	if (fd < 0) {
		ret = -errno;
		snprintf(why, why_len, "%s: %s", path, strerror(errno));
		return ret;
	}
	buf = malloc(SECRET_FILE_MAX + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n = read(fd, buf + len, SECRET_FILE_MAX + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			snprintf(why, why_len, "%s: %s", path, strerror(errno));
			goto out_wipe;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > SECRET_FILE_MAX) {
			snprintf(why, why_len, "%s: longer than %d bytes", path, SECRET_FILE_MAX);
			ret = -EFBIG;
			goto out_wipe;
		}
	}
	if (len && buf[len - 1] == '\n')
		len--;
	if (len && buf[len - 1] == '\r')
		len--;
	buf[len] = 0;
	if (!len) {
		snprintf(why, why_len, "%s: the secret is empty", path);
		ret = -EINVAL;
		goto out_wipe;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f) {
			/* It goes in a header line: a newline there would add headers. */
			snprintf(why, why_len, "%s: the secret holds a control character", path);
			ret = -EINVAL;
			goto out_wipe;
		}
	}
	*out = buf;
	return 0;
out_wipe:
	explicit_bzero(buf, SECRET_FILE_MAX + 1);
	free(buf);
	return ret;
}

int gateway_parse_secret(const char *spec, struct gateway_secret *out, char *why, size_t why_len)
{
	_cleanup_free_ char *copy = strdup(spec);
	char *eq, *opts, *tok, *save = NULL, *file;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!copy)
		return -ENOMEM;
	eq = strchr(copy, '=');
	if (!eq || eq == copy || eq[1] != '@') {
		snprintf(why, why_len,
			 "--secret %s: expected NAME=@FILE,host=HOST[,host=HOST2],header=HEADER"
			 "[,prefix=PREFIX]",
			 spec);
		return -EINVAL;
	}
	*eq = 0;
	for (char *c = copy; *c; c++) {
		if (!name_char(*c)) {
			snprintf(why, why_len, "--secret %s: a name is letters, digits, _ . -",
				 copy);
			return -EINVAL;
		}
	}
	file = eq + 2;
	opts = strchr(file, ',');
	if (opts)
		*opts++ = 0;
	if (!*file) {
		snprintf(why, why_len, "--secret %s: no file after @", copy);
		return -EINVAL;
	}
	out->name = strdup(copy);
	out->hosts = calloc(strlen(spec) + 1, sizeof(char *));
	if (!out->name || !out->hosts)
		goto out_nomem;
	for (tok = opts ? strtok_r(opts, ",", &save) : NULL; tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strncmp(tok, "host=", 5)) {
			char *h = strdup(tok + 5);

			if (!h)
				goto out_nomem;
			out->hosts[out->nhosts++] = h;
			if (!host_normalize(h)) {
				snprintf(why, why_len, "--secret %s: host %s: not a DNS name", copy,
					 tok + 5);
				ret = -EINVAL;
				goto out_clear;
			}
		} else if (!strncmp(tok, "header=", 7)) {
			const char *hdr = tok + 7;

			if (!is_token(hdr, strlen(hdr)) || !strcasecmp(hdr, "host") ||
			    !strcasecmp(hdr, "connection") || !strcasecmp(hdr, "content-length") ||
			    !strcasecmp(hdr, "transfer-encoding") || out->header) {
				snprintf(why, why_len,
					 "--secret %s: header %s: one header name, not Host, "
					 "Connection, Content-Length or Transfer-Encoding",
					 copy, hdr);
				ret = -EINVAL;
				goto out_clear;
			}
			out->header = strdup(hdr);
			if (!out->header)
				goto out_nomem;
		} else if (!strncmp(tok, "prefix=", 7)) {
			for (const char *c = tok + 7; *c; c++) {
				if ((unsigned char)*c < 0x20 || *c == 0x7f) {
					snprintf(
						why, why_len,
						"--secret %s: the prefix holds a control character",
						copy);
					ret = -EINVAL;
					goto out_clear;
				}
			}
			free(out->prefix);
			out->prefix = strdup(tok + 7);
			if (!out->prefix)
				goto out_nomem;
		} else {
			snprintf(
				why, why_len,
				"--secret %s: unknown option %s (expected host=, header=, prefix=)",
				copy, tok);
			ret = -EINVAL;
			goto out_clear;
		}
	}
	if (!out->nhosts || !out->header) {
		snprintf(why, why_len, "--secret %s: needs at least one host= and a header=", copy);
		ret = -EINVAL;
		goto out_clear;
	}
	if (!out->prefix && !(out->prefix = strdup("")))
		goto out_nomem;
	ret = read_secret_file(file, &out->value, why, why_len);
	if (ret < 0)
		goto out_clear;
	return 0;
out_nomem:
	snprintf(why, why_len, "--secret: out of memory");
	ret = -ENOMEM;
out_clear:
	gateway_secret_clear(out);
	return ret;
}

static int secret_copy(const struct gateway_secret *s, struct gateway_secret *d)
{
	memset(d, 0, sizeof(*d));
	d->name = strdup(s->name);
	d->value = strdup(s->value);
	d->header = strdup(s->header);
	d->prefix = strdup(s->prefix ? s->prefix : "");
	d->hosts = calloc((size_t)s->nhosts + 1, sizeof(char *));
	if (!d->name || !d->value || !d->header || !d->prefix || !d->hosts)
		goto out_clear;
	for (int i = 0; i < s->nhosts; i++) {
		d->hosts[i] = strdup(s->hosts[i]);
		if (!d->hosts[i])
			goto out_clear;
		d->nhosts++;
	}
	return 0;
out_clear:
	gateway_secret_clear(d);
	return -ENOMEM;
}

static const struct gateway_secret *find_secret(const struct gateway *g, const char *name)
{
	for (int i = 0; i < g->nsecrets; i++) {
		if (!strcmp(g->secrets[i].name, name))
			return &g->secrets[i];
	}
	return NULL;
}

bool gateway_has_secret(const struct gateway *g, const char *name)
{
	return find_secret(g, name) != NULL;
}

/* --- the gateway object --- */

static int parse_pin(const char *spec, struct gw_pin *p, char *why, size_t why_len)
{
	_cleanup_free_ char *copy = strdup(spec);
	char *colon, *ip;
	struct sockaddr_in *a4 = (struct sockaddr_in *)&p->addr;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&p->addr;

	if (!copy)
		return -ENOMEM;
	colon = strchr(copy, ':');
	if (!colon) {
		snprintf(why, why_len, "--gateway-resolve %s: expected HOST:IP", spec);
		return -EINVAL;
	}
	*colon = 0;
	ip = colon + 1;
	if (*ip == '[' && ip[strlen(ip) - 1] == ']') {
		ip[strlen(ip) - 1] = 0;
		ip++;
	}
	memset(&p->addr, 0, sizeof(p->addr));
	if (inet_pton(AF_INET, ip, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons(443);
		p->len = sizeof(*a4);
	} else if (inet_pton(AF_INET6, ip, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(443);
		p->len = sizeof(*a6);
	} else {
		snprintf(why, why_len, "--gateway-resolve %s: %s is not an IP address", spec, ip);
		return -EINVAL;
	}
	if (!host_normalize(copy)) {
		snprintf(why, why_len, "--gateway-resolve %s: %s is not a DNS name", spec, copy);
		return -EINVAL;
	}
	p->host = steal_pointer(&copy);
	return 0;
}

static void sandbox_free(struct gw_sandbox *sb)
{
	for (int i = 0; i < sb->nnames; i++)
		free(sb->names[i]);
	free(sb->names);
	free(sb->id);
	free(sb);
}

static void gateway_destroy(struct gateway *g)
{
	for (int i = 0; i < g->nsecrets; i++)
		gateway_secret_clear(&g->secrets[i]);
	free(g->secrets);
	for (int i = 0; i < g->npins; i++)
		free(g->pins[i].host);
	free(g->pins);
	if (g->ssl)
		SSL_CTX_free(g->ssl);
	while (g->sandboxes) {
		struct gw_sandbox *sb = g->sandboxes;

		g->sandboxes = sb->next;
		sandbox_free(sb);
	}
	free(g->path);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

static void gateway_put(struct gateway *g)
{
	bool last;

	pthread_mutex_lock(&g->lock);
	last = --g->refs == 0;
	pthread_mutex_unlock(&g->lock);
	if (last)
		gateway_destroy(g);
}

struct gateway *gateway_new(const struct gateway_config *cfg, char *why, size_t why_len)
{
	struct gateway *g = calloc(1, sizeof(*g));

	if (!g) {
		snprintf(why, why_len, "gateway: out of memory");
		return NULL;
	}
	pthread_mutex_init(&g->lock, NULL);
	g->refs = 1;
	g->listen_fd = -1;
	g->wake[0] = g->wake[1] = -1;
	g->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : DEFAULT_TIMEOUT_MS;
	g->secrets = calloc((size_t)cfg->nsecrets + 1, sizeof(*g->secrets));
	g->pins = calloc((size_t)cfg->nresolve + 1, sizeof(*g->pins));
	if (!g->secrets || !g->pins)
		goto out_nomem;
	for (int i = 0; i < cfg->nsecrets; i++) {
		if (find_secret(g, cfg->secrets[i].name)) {
			snprintf(why, why_len, "--secret %s: given twice", cfg->secrets[i].name);
			goto out_destroy;
		}
		if (secret_copy(&cfg->secrets[i], &g->secrets[i]) < 0)
			goto out_nomem;
		g->nsecrets++;
	}
	for (int i = 0; i < cfg->nresolve; i++) {
		if (parse_pin(cfg->resolve[i], &g->pins[i], why, why_len) < 0)
			goto out_destroy;
		g->npins++;
	}
	g->ssl = SSL_CTX_new(TLS_client_method());
	if (!g->ssl)
		goto out_nomem;
	SSL_CTX_set_min_proto_version(g->ssl, TLS1_2_VERSION);
	/* Upstreams close after the answer (Connection: close); some skip close_notify. */
	SSL_CTX_set_options(g->ssl, SSL_OP_IGNORE_UNEXPECTED_EOF);
	SSL_CTX_set_verify(g->ssl, SSL_VERIFY_PEER, NULL);
	if (SSL_CTX_set_default_verify_paths(g->ssl) != 1)
		log_msg(LOG_WARN, "gateway: the system's CA certificates could not be loaded");
	if (cfg->ca_file && SSL_CTX_load_verify_locations(g->ssl, cfg->ca_file, NULL) != 1) {
		snprintf(why, why_len, "--gateway-ca %s: not a readable PEM certificate file",
			 cfg->ca_file);
		goto out_destroy;
	}
	return g;
out_nomem:
	snprintf(why, why_len, "gateway: out of memory");
out_destroy:
	gateway_destroy(g);
	return NULL;
}

static struct gw_sandbox *sandbox_find_locked(struct gateway *g, const char *id)
{
	for (struct gw_sandbox *sb = g->sandboxes; sb; sb = sb->next) {
		if (!strcmp(sb->id, id))
			return sb;
	}
	return NULL;
}

/* The sandbox's entry, made when missing (lock held). NULL: no memory. */
static struct gw_sandbox *sandbox_get_locked(struct gateway *g, const char *id)
{
	struct gw_sandbox *sb = sandbox_find_locked(g, id);

	if (sb)
		return sb;
	sb = calloc(1, sizeof(*sb));
	if (!sb || !(sb->id = strdup(id))) {
		free(sb);
		return NULL;
	}
	sb->next = g->sandboxes;
	g->sandboxes = sb;
	return sb;
}

int gateway_allow(struct gateway *g, const char *sandbox_id, const char *const *names, int n)
{
	struct gw_sandbox *sb;
	char **copy;

	for (int i = 0; i < n; i++) {
		if (!find_secret(g, names[i]))
			return -ENOENT;
	}
	copy = calloc((size_t)n + 1, sizeof(char *));
	if (!copy)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		copy[i] = strdup(names[i]);
		if (!copy[i]) {
			while (i--)
				free(copy[i]);
			free(copy);
			return -ENOMEM;
		}
	}
	pthread_mutex_lock(&g->lock);
	sb = sandbox_get_locked(g, sandbox_id);
	if (sb) {
		for (int i = 0; i < sb->nnames; i++)
			free(sb->names[i]);
		free(sb->names);
		sb->names = copy;
		sb->nnames = n;
	}
	pthread_mutex_unlock(&g->lock);
	if (!sb) {
		for (int i = 0; i < n; i++)
			free(copy[i]);
		free(copy);
		return -ENOMEM;
	}
	return 0;
}

void gateway_forget(struct gateway *g, const char *sandbox_id)
{
	struct gw_sandbox **pp, *sb = NULL;

	pthread_mutex_lock(&g->lock);
	for (pp = &g->sandboxes; *pp; pp = &(*pp)->next) {
		if (!strcmp((*pp)->id, sandbox_id)) {
			sb = *pp;
			*pp = sb->next;
			break;
		}
	}
	pthread_mutex_unlock(&g->lock);
	if (sb)
		sandbox_free(sb);
}

int gateway_get_stats(struct gateway *g, const char *sandbox_id, struct gateway_stats *out)
{
	struct gw_sandbox *sb;

	pthread_mutex_lock(&g->lock);
	sb = sandbox_find_locked(g, sandbox_id);
	if (sb)
		*out = sb->stats;
	pthread_mutex_unlock(&g->lock);
	return sb ? 0 : -ENOENT;
}

enum gw_outcome { GW_FORWARDED, GW_REFUSED, GW_FAILED };

static void count(struct gateway *g, const char *id, enum gw_outcome o)
{
	struct gw_sandbox *sb;

	pthread_mutex_lock(&g->lock);
	sb = sandbox_find_locked(g, id);
	if (sb) {
		if (o == GW_FORWARDED)
			sb->stats.forwarded++;
		else if (o == GW_REFUSED)
			sb->stats.refused++;
		else
			sb->stats.failed++;
	}
	pthread_mutex_unlock(&g->lock);
}

/* --- one request --- */

struct gw_request {
	struct gateway *g;
	int fd; /* the guest connection (owned) */
	char id[NET_GATEWAY_ID_MAX + 1];
};

/* Writes all of buf to fd (blocking, under SO_SNDTIMEO). */
static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The gateway's own answer (an error): status, reason, one line of text. */
static void reply(int fd, int status, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void reply(int fd, int status, const char *reason, const char *fmt, ...)
{
	char body[512], head[256];
	va_list ap;
	int blen, hlen;

	va_start(ap, fmt);
	blen = vsnprintf(body, sizeof(body) - 1, fmt, ap);
	va_end(ap);
	if (blen < 0)
		blen = 0;
	if (blen > (int)sizeof(body) - 2)
		blen = (int)sizeof(body) - 2;
	body[blen++] = '\n';
	hlen = snprintf(head, sizeof(head),
			"HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
			"Content-Length: %d\r\nConnection: close\r\nX-Husk-Gateway: %s\r\n\r\n",
			status, reason, blen, status == 403 ? "refused" : "error");
	if (write_all(fd, head, (size_t)hlen) == 0)
		write_all(fd, body, (size_t)blen);
}

/* A parsed request head: pointers into the head buffer (NUL-terminated in place). */
struct http_head {
	char *method, *target, *version;
	int nhdrs;
	struct {
		char *name, *value;
	} hdrs[128];
};

/*
 * Splits the head (len bytes, the blank line excluded) into its request line and headers.
 * Returns 0, or -EINVAL with why set.
 */
static int head_parse(char *buf, struct http_head *h, const char **why)
{
	char *line = buf, *next, *sp;
	bool first = true;

	memset(h, 0, sizeof(*h));
	for (; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (*line && line[strlen(line) - 1] == '\r')
			line[strlen(line) - 1] = 0;
		for (char *c = line; *c; c++) {
			if (((unsigned char)*c < 0x20 && *c != '\t') || *c == 0x7f) {
				*why = "a control character in the request head";
				return -EINVAL;
			}
		}
		if (first) {
			first = false;
			h->method = line;
			sp = strchr(line, ' ');
			if (!sp)
				goto bad_line;
			*sp = 0;
			h->target = sp + 1;
			sp = strchr(h->target, ' ');
			if (!sp)
				goto bad_line;
			*sp = 0;
			h->version = sp + 1;
			if (!is_token(h->method, strlen(h->method)) || !*h->target ||
			    (strcmp(h->version, "HTTP/1.1") && strcmp(h->version, "HTTP/1.0")))
				goto bad_line;
			continue;
		}
		if (!*line)
			continue;
		if (*line == ' ' || *line == '\t') {
			*why = "folded header lines are not accepted";
			return -EINVAL;
		}
		sp = strchr(line, ':');
		if (!sp || !is_token(line, (size_t)(sp - line))) {
			*why = "a malformed header line";
			return -EINVAL;
		}
		*sp++ = 0;
		while (*sp == ' ' || *sp == '\t')
			sp++;
		for (char *e = sp + strlen(sp); e > sp && (e[-1] == ' ' || e[-1] == '\t');)
			*--e = 0;
		if (h->nhdrs == (int)(sizeof(h->hdrs) / sizeof(h->hdrs[0]))) {
			*why = "too many header lines";
			return -EINVAL;
		}
		h->hdrs[h->nhdrs].name = line;
		h->hdrs[h->nhdrs].value = sp;
		h->nhdrs++;
	}
	return 0;
bad_line:
	*why = "a malformed request line (expected METHOD TARGET HTTP/1.1)";
	return -EINVAL;
}

/* The value of header name, or NULL; *count gets how many there are. */
static const char *head_get(const struct http_head *h, const char *name, int *count)
{
	const char *v = NULL;
	int n = 0;

	for (int i = 0; i < h->nhdrs; i++) {
		if (!strcasecmp(h->hdrs[i].name, name)) {
			if (!v)
				v = h->hdrs[i].value;
			n++;
		}
	}
	if (count)
		*count = n;
	return v;
}

/*
 * The upstream host of h into host (normalized; port 443 only) and the origin-form target into
 * *path. Returns 0, or -EINVAL with why set.
 */
static int upstream_of(struct http_head *h, char *host, size_t host_len, const char **path,
		       const char **why)
{
	const char *auth = NULL, *end;
	size_t alen;
	int nhost;
	const char *hosthdr = head_get(h, "host", &nhost);
	char *colon;

	if (!strncasecmp(h->target, "https://", 8) || !strncasecmp(h->target, "http://", 7)) {
		auth = h->target + (h->target[4] == ':' ? 7 : 8);
		end = auth + strcspn(auth, "/?#");
		alen = (size_t)(end - auth);
		if (*end && *end != '/') {
			*why = "an absolute URL needs a path before its query (https://HOST/?...)";
			return -EINVAL;
		}
		*path = *end ? end : "/";
	} else if (h->target[0] == '/') {
		if (nhost != 1 || !hosthdr) {
			*why = "a request needs one Host header naming the upstream (or an "
			       "absolute https:// URL)";
			return -EINVAL;
		}
		auth = hosthdr;
		alen = strlen(auth);
		*path = h->target;
	} else {
		*why = "the request target is neither /path nor an absolute URL";
		return -EINVAL;
	}
	if (!alen || alen >= host_len || memchr(auth, '@', alen)) {
		*why = "no usable host in the request";
		return -EINVAL;
	}
	memcpy(host, auth, alen);
	host[alen] = 0;
	colon = strchr(host, ':');
	if (colon) {
		if (strcmp(colon, ":443") != 0) {
			*why = "the gateway forwards to port 443 only";
			return -EINVAL;
		}
		*colon = 0;
	}
	if (!host_normalize(host)) {
		*why = "the host is not a DNS name";
		return -EINVAL;
	}
	return 0;
}

/* Whether secret s may be sent to host. */
static bool secret_allows(const struct gateway_secret *s, const char *host)
{
	for (int i = 0; i < s->nhosts; i++) {
		if (!strcmp(s->hosts[i], host))
			return true;
	}
	return false;
}

/* A TCP connection to host:443 (a pin, else DNS), under the timeout. Returns the fd or -errno. */
static int upstream_connect(struct gateway *g, const char *host)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL, *ai;
	struct sockaddr_storage ss;
	socklen_t len = 0;
	int fd = -1, ret = -EHOSTUNREACH;

	for (int i = 0; i < g->npins; i++) {
		if (!strcmp(g->pins[i].host, host)) {
			ss = g->pins[i].addr;
			len = g->pins[i].len;
			break;
		}
	}
	if (!len) {
		if (getaddrinfo(host, "443", &hints, &res) != 0 || !res)
			return -EHOSTUNREACH;
	}
	for (ai = res; len || ai; ai = ai ? ai->ai_next : NULL) {
		const struct sockaddr *sa = len ? (struct sockaddr *)&ss : ai->ai_addr;
		socklen_t salen = len ? len : ai->ai_addrlen;
		struct pollfd pfd;
		int err = 0;
		socklen_t elen = sizeof(err);

		fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			ret = -errno;
			goto next;
		}
		if (connect(fd, sa, salen) < 0 && errno != EINPROGRESS) {
			ret = -errno;
			goto next;
		}
		pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
		if (poll(&pfd, 1, g->timeout_ms) <= 0) {
			ret = -ETIMEDOUT;
			goto next;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0 || err) {
			ret = -(err ? err : errno);
			goto next;
		}
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		if (res)
			freeaddrinfo(res);
		return fd;
next:
		if (fd >= 0)
			close(fd);
		fd = -1;
		if (len)
			break;
	}
	if (res)
		freeaddrinfo(res);
	return ret;
}

static void set_timeouts(int fd, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int ssl_write_all(SSL *ssl, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		int n = SSL_write(ssl, p, (int)(len > INT_MAX ? INT_MAX : len));

		if (n <= 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads up to len bytes of the guest's request; 0 at EOF, -errno. */
static ssize_t guest_read(int fd, void *buf, size_t len)
{
	for (;;) {
		ssize_t n = recv(fd, buf, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 ? -errno : n;
	}
}

/*
 * The request body after the head: have bytes of it are already in buf. A Content-Length body
 * is copied as it is; a chunked one chunk by chunk (sizes, data, trailers), so that the
 * gateway knows where it ends. Returns 0 or -errno.
 */
struct body_src {
	int fd;
	char *buf;
	size_t have, off;
};

static ssize_t body_read(struct body_src *b, char *out, size_t len)
{
	if (b->off < b->have) {
		size_t n = b->have - b->off < len ? b->have - b->off : len;

		memcpy(out, b->buf + b->off, n);
		b->off += n;
		return (ssize_t)n;
	}
	return guest_read(b->fd, out, len);
}

static int body_copy(struct body_src *b, SSL *ssl, unsigned long long n)
{
	char buf[16384];

	while (n) {
		ssize_t r = body_read(b, buf, n < sizeof(buf) ? (size_t)n : sizeof(buf));

		if (r <= 0)
			return r < 0 ? (int)r : -EPIPE;
		if (ssl_write_all(ssl, buf, (size_t)r) < 0)
			return -EIO;
		n -= (unsigned long long)r;
	}
	return 0;
}

/* One line (CRLF or LF ended, at most size-1 bytes) of a chunked body, forwarded as read. */
static int body_line(struct body_src *b, SSL *ssl, char *line, size_t size)
{
	size_t len = 0;

	for (;;) {
		char c;
		ssize_t r = body_read(b, &c, 1);

		if (r <= 0)
			return r < 0 ? (int)r : -EPIPE;
		if (len + 1 >= size)
			return -EINVAL;
		line[len++] = c;
		if (c == '\n')
			break;
	}
	line[len] = 0;
	return ssl_write_all(ssl, line, len);
}

static int body_chunked(struct body_src *b, SSL *ssl)
{
	char line[1024];
	int ret;

	for (;;) {
		unsigned long long size;
		char *end;

		ret = body_line(b, ssl, line, sizeof(line));
		if (ret < 0)
			return ret;
		errno = 0;
		size = strtoull(line, &end, 16);
		if (end == line || errno || (*end != ';' && *end != '\r' && *end != '\n'))
			return -EINVAL;
		if (size == 0)
			break;
		ret = body_copy(b, ssl, size);
		if (ret < 0)
			return ret;
		ret = body_line(b, ssl, line, sizeof(line)); /* the chunk's CRLF */
		if (ret < 0)
			return ret;
		if (strcmp(line, "\r\n") && strcmp(line, "\n"))
			return -EINVAL;
	}
	/* Trailers, up to the blank line. */
	for (;;) {
		ret = body_line(b, ssl, line, sizeof(line));
		if (ret < 0)
			return ret;
		if (!strcmp(line, "\r\n") || !strcmp(line, "\n"))
			return 0;
	}
}

/* Headers of the guest's request that are not passed on: hop-by-hop ones and Host. */
static bool header_dropped(const char *name)
{
	static const char *const drop[] = {
		"host", "connection", "proxy-connection",    "keep-alive",
		"te",	"upgrade",    "proxy-authorization", "expect"
	};

	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++) {
		if (!strcasecmp(name, drop[i]))
			return true;
	}
	return false;
}

/* Appends to a growing buffer; false when out of room. */
static bool put(char *buf, size_t size, size_t *len, const char *s)
{
	size_t n = strlen(s);

	if (*len + n >= size)
		return false;
	memcpy(buf + *len, s, n);
	*len += n;
	buf[*len] = 0;
	return true;
}

/*
 * Relays the upstream's answer to the guest, replacing any copy of an injected secret's value
 * by as many '*' (an upstream that echoes request headers would otherwise hand it in).
 */
static int relay_answer(SSL *ssl, int fd, const struct gateway_secret *const *used, int nused)
{
	size_t keep = 0, have = 0;
	char *buf;
	int ret = 0;

	for (int i = 0; i < nused; i++) {
		size_t l = strlen(used[i]->value);

		if (l - 1 > keep)
			keep = l - 1;
	}
	buf = malloc(16384 + keep);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		int n = SSL_read(ssl, buf + have, 16384);
		size_t out;

		if (n <= 0)
			break;
		have += (size_t)n;
		for (int i = 0; i < nused; i++) {
			const char *v = used[i]->value;
			size_t l = strlen(v);
			char *p = buf;

			while ((p = memmem(p, have - (size_t)(p - buf), v, l))) {
				memset(p, '*', l);
				p += l;
			}
		}
		/* The last keep bytes may be the start of a copy split across reads. */
		out = have > keep ? have - keep : 0;
		if (out && write_all(fd, buf, out) < 0) {
			ret = -EPIPE;
			goto out_free;
		}
		memmove(buf, buf + out, have - out);
		have -= out;
	}
	if (have && write_all(fd, buf, have) < 0)
		ret = -EPIPE;
out_free:
	explicit_bzero(buf, 16384 + keep);
	free(buf);
	return ret;
}

static void serve_request(struct gw_request *r)
{
	struct gateway *g = r->g;
	const struct gateway_secret *used[16];
	char *head = malloc(HEAD_MAX + 1), *out = NULL;
	char host[256];
	struct http_head *h = malloc(sizeof(*h));
	const char *why = NULL, *path, *te, *cl;
	size_t len = 0, hend = 0, outlen = 0, outsize;
	int nused = 0, ncl, nte, up = -1;
	unsigned long long clen = 0;
	struct body_src body;
	SSL *ssl = NULL;

	if (!head || !h) {
		reply(r->fd, 503, "Service Unavailable", "husk gateway: out of memory");
		count(g, r->id, GW_FAILED);
		goto out;
	}
	set_timeouts(r->fd, g->timeout_ms);
	/* The head: up to the blank line. */
	for (;;) {
		ssize_t n;
		char *e;

		if (len == HEAD_MAX) {
			reply(r->fd, 431, "Request Header Fields Too Large",
			      "husk gateway: the request head is longer than %d bytes", HEAD_MAX);
			count(g, r->id, GW_FAILED);
			goto out;
		}
		n = guest_read(r->fd, head + len, HEAD_MAX - len);
		if (n <= 0) {
			count(g, r->id, GW_FAILED);
			goto out; /* the guest went away (or timed out) before a whole head */
		}
		len += (size_t)n;
		head[len] = 0;
		/* The first blank line, CRLF or LF ended. */
		e = memmem(head, len, "\r\n\r\n", 4);
		if (e)
			hend = (size_t)(e - head) + 4;
		e = memmem(head, len, "\n\n", 2);
		if (e && (!hend || (size_t)(e - head) + 2 < hend))
			hend = (size_t)(e - head) + 2;
		if (hend)
			break;
	}
	head[hend - 1] = 0; /* the body's first bytes stay after it */
	if (head_parse(head, h, &why) < 0) {
		reply(r->fd, 400, "Bad Request", "husk gateway: %s", why);
		count(g, r->id, GW_FAILED);
		goto out;
	}
	if (!strcasecmp(h->method, "CONNECT")) {
		/* A tunnel is end-to-end TLS: there would be no place for the header. */
		reply(r->fd, 405, "Method Not Allowed", "husk gateway: no tunnels (CONNECT)");
		count(g, r->id, GW_FAILED);
		goto out;
	}
	if (upstream_of(h, host, sizeof(host), &path, &why) < 0) {
		reply(r->fd, 400, "Bad Request", "husk gateway: %s", why);
		count(g, r->id, GW_FAILED);
		goto out;
	}
	/* The secrets this sandbox may use for this host: decided by the server. */
	pthread_mutex_lock(&g->lock);
	{
		struct gw_sandbox *sb = sandbox_find_locked(g, r->id);

		for (int i = 0; sb && i < sb->nnames && nused < 16; i++) {
			const struct gateway_secret *s = find_secret(g, sb->names[i]);

			if (s && secret_allows(s, host))
				used[nused++] = s;
		}
	}
	pthread_mutex_unlock(&g->lock);
	if (!nused) {
		reply(r->fd, 403, "Forbidden",
		      "husk gateway: no secret of this sandbox may be sent to %s", host);
		count(g, r->id, GW_REFUSED);
		log_msg(LOG_INFO, "gateway: sandbox %s: request for %s refused", r->id, host);
		goto out;
	}
	te = head_get(h, "transfer-encoding", &nte);
	cl = head_get(h, "content-length", &ncl);
	if ((te && (cl || nte > 1 || strcasecmp(te, "chunked"))) || ncl > 1) {
		reply(r->fd, 400, "Bad Request",
		      "husk gateway: one Content-Length or Transfer-Encoding: chunked, not both");
		count(g, r->id, GW_FAILED);
		goto out;
	}
	if (cl) {
		char *end;

		errno = 0;
		clen = strtoull(cl, &end, 10);
		if (!*cl || *end || errno || !isdigit((unsigned char)*cl)) {
			reply(r->fd, 400, "Bad Request", "husk gateway: a bad Content-Length");
			count(g, r->id, GW_FAILED);
			goto out;
		}
	}
	/* The request as it goes upstream. */
	outsize = hend + 1024;
	for (int i = 0; i < nused; i++)
		outsize += strlen(used[i]->header) + strlen(used[i]->prefix) +
			   strlen(used[i]->value) + 8;
	out = malloc(outsize);
	if (!out) {
		reply(r->fd, 503, "Service Unavailable", "husk gateway: out of memory");
		count(g, r->id, GW_FAILED);
		goto out;
	}
	out[0] = 0;
	put(out, outsize, &outlen, h->method);
	put(out, outsize, &outlen, " ");
	put(out, outsize, &outlen, path);
	put(out, outsize, &outlen, " HTTP/1.1\r\nHost: ");
	put(out, outsize, &outlen, host);
	put(out, outsize, &outlen, "\r\n");
	for (int i = 0; i < h->nhdrs; i++) {
		bool injected = false;

		for (int j = 0; j < nused; j++)
			injected |= !strcasecmp(h->hdrs[i].name, used[j]->header);
		/* A header of the secret's name from the guest is dropped, never passed on. */
		if (injected || header_dropped(h->hdrs[i].name))
			continue;
		put(out, outsize, &outlen, h->hdrs[i].name);
		put(out, outsize, &outlen, ": ");
		put(out, outsize, &outlen, h->hdrs[i].value);
		put(out, outsize, &outlen, "\r\n");
	}
	put(out, outsize, &outlen, "Connection: close\r\n");
	for (int j = 0; j < nused; j++) {
		put(out, outsize, &outlen, used[j]->header);
		put(out, outsize, &outlen, ": ");
		put(out, outsize, &outlen, used[j]->prefix);
		put(out, outsize, &outlen, used[j]->value);
		put(out, outsize, &outlen, "\r\n");
	}
	if (!put(out, outsize, &outlen, "\r\n")) {
		reply(r->fd, 431, "Request Header Fields Too Large", "husk gateway: head too long");
		count(g, r->id, GW_FAILED);
		goto out;
	}
	/* Upstream over verified TLS, with the host's name for SNI and for the check. */
	up = upstream_connect(g, host);
	if (up < 0) {
		reply(r->fd, 502, "Bad Gateway", "husk gateway: cannot connect to %s:443: %s", host,
		      strerror(-up));
		count(g, r->id, GW_FAILED);
		goto out;
	}
	set_timeouts(up, g->timeout_ms);
	ssl = SSL_new(g->ssl);
	if (!ssl || SSL_set_fd(ssl, up) != 1 || SSL_set_tlsext_host_name(ssl, host) != 1 ||
	    SSL_set1_host(ssl, host) != 1 || SSL_connect(ssl) != 1) {
		long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;

		reply(r->fd, 502, "Bad Gateway", "husk gateway: TLS with %s failed: %s", host,
		      v != X509_V_OK ? X509_verify_cert_error_string(v) : "handshake error");
		count(g, r->id, GW_FAILED);
		ERR_clear_error();
		goto out;
	}
	body = (struct body_src){ .fd = r->fd, .buf = head + hend, .have = len - hend };
	if (ssl_write_all(ssl, out, outlen) < 0 ||
	    (te ? body_chunked(&body, ssl) : body_copy(&body, ssl, clen)) < 0) {
		reply(r->fd, 502, "Bad Gateway", "husk gateway: sending the request to %s failed",
		      host);
		count(g, r->id, GW_FAILED);
		goto out;
	}
	count(g, r->id, GW_FORWARDED);
	relay_answer(ssl, r->fd, used, nused);
	SSL_shutdown(ssl);
out:
	if (ssl)
		SSL_free(ssl);
	ERR_clear_error();
	if (up >= 0)
		close(up);
	if (out) {
		explicit_bzero(out, outsize);
		free(out);
	}
	free(head);
	free(h);
	shutdown(r->fd, SHUT_RDWR);
	close(r->fd);
}

static void *request_thread(void *arg)
{
	struct gw_request *r = arg;
	struct gateway *g = r->g;

	serve_request(r);
	free(r);
	pthread_mutex_lock(&g->lock);
	g->active--;
	pthread_mutex_unlock(&g->lock);
	gateway_put(g);
	return NULL;
}

/* Starts serving guest connection fd of channel c (takes fd). */
static void request_start(struct gateway *g, struct gw_channel *c, int fd)
{
	struct gw_request *r;
	pthread_attr_t attr;
	pthread_t t;
	bool full;

	pthread_mutex_lock(&g->lock);
	full = g->active >= MAX_ACTIVE;
	if (!full) {
		g->active++;
		g->refs++;
	}
	pthread_mutex_unlock(&g->lock);
	if (full) {
		/* Non-blocking: the loop thread must not wait on a guest. */
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		reply(fd, 503, "Service Unavailable", "husk gateway: too many requests at once");
		close(fd);
		return;
	}
	r = calloc(1, sizeof(*r));
	if (r) {
		r->g = g;
		r->fd = fd;
		memcpy(r->id, c->id, sizeof(r->id));
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, 256 * 1024);
		if (pthread_create(&t, &attr, request_thread, r) == 0) {
			pthread_attr_destroy(&attr);
			return;
		}
		pthread_attr_destroy(&attr);
		free(r);
	}
	close(fd);
	pthread_mutex_lock(&g->lock);
	g->active--;
	pthread_mutex_unlock(&g->lock);
	gateway_put(g);
}

/* --- channels --- */

/* The hello of a new channel. Returns 0, or -1 when the channel is to be closed. */
static int channel_hello(struct gw_channel *c)
{
	char buf[sizeof(NET_GATEWAY_HELLO) + NET_GATEWAY_ID_MAX + 2];
	size_t plen = strlen(NET_GATEWAY_HELLO), idlen;
	ssize_t n = recv(c->fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
	const char *bad = NULL;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0)
		return -1;
	buf[n] = 0;
	if ((size_t)n <= plen + 1 || strncmp(buf, NET_GATEWAY_HELLO, plen) || buf[n - 1] != '\n') {
		bad = "malformed hello";
	} else {
		idlen = (size_t)n - plen - 1;
		buf[n - 1] = 0;
		for (size_t i = 0; i < idlen; i++) {
			if (buf[plen + i] <= ' ' || buf[plen + i] >= 0x7f)
				bad = "malformed sandbox id";
		}
		if (idlen > NET_GATEWAY_ID_MAX)
			bad = "sandbox id too long";
	}
	if (bad) {
		char msg[64];
		int len = snprintf(msg, sizeof(msg), "ERR %s\n", bad);

		send(c->fd, msg, (size_t)len, MSG_DONTWAIT | MSG_NOSIGNAL);
		return -1;
	}
	memcpy(c->id, buf + plen, idlen + 1);
	c->hello = true;
	send(c->fd, "OK\n", 3, MSG_DONTWAIT | MSG_NOSIGNAL);
	return 0;
}

/* A message on an introduced channel: one guest connection. -1: the channel is done. */
static int channel_message(struct gateway *g, struct gw_channel *c)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(8 * sizeof(int))];
	} ctl;
	char byte;
	struct iovec iov = { &byte, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int conn = -1;
	ssize_t n;

	mh.msg_control = ctl.buf;
	mh.msg_controllen = sizeof(ctl.buf);
	n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0)
		return -1;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (conn < 0)
				conn = fd;
			else
				close(fd); /* one connection per message */
		}
	}
	if (conn >= 0) {
		int type = 0, dom = 0;
		socklen_t l1 = sizeof(type), l2 = sizeof(dom);

		/* What the sentry sends is not trusted: only a unix stream socket is served. */
		if (getsockopt(conn, SOL_SOCKET, SO_TYPE, &type, &l1) < 0 || type != SOCK_STREAM ||
		    getsockopt(conn, SOL_SOCKET, SO_DOMAIN, &dom, &l2) < 0 || dom != AF_UNIX) {
			close(conn);
			return 0;
		}
		fcntl(conn, F_SETFL, fcntl(conn, F_GETFL) & ~O_NONBLOCK);
		request_start(g, c, conn);
	}
	return 0;
}

static void *loop_thread(void *arg)
{
	struct gateway *g = arg;
	struct gw_channel *ch = calloc(MAX_CHANNELS, sizeof(*ch));
	struct pollfd *pfd = calloc(MAX_CHANNELS + 2, sizeof(*pfd));
	int nch = 0;

	if (!ch || !pfd) {
		log_msg(LOG_ERROR, "gateway: out of memory: not serving");
		goto out;
	}
	for (;;) {
		pfd[0] = (struct pollfd){ .fd = g->wake[0], .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = nch < MAX_CHANNELS ? g->listen_fd : -1,
					  .events = POLLIN };
		for (int i = 0; i < nch; i++)
			pfd[2 + i] = (struct pollfd){ .fd = ch[i].fd, .events = POLLIN };
		if (poll(pfd, (nfds_t)(2 + nch), -1) < 0) {
			if (errno == EINTR)
				continue;
			log_msg(LOG_ERROR, "gateway: poll: %s", strerror(errno));
			break;
		}
		if (pfd[0].revents)
			break;
		for (int i = nch - 1; i >= 0; i--) {
			int ret;

			if (!pfd[2 + i].revents)
				continue;
			ret = ch[i].hello ? channel_message(g, &ch[i]) : channel_hello(&ch[i]);
			if (ret < 0) {
				close(ch[i].fd);
				ch[i] = ch[--nch];
			}
		}
		if (pfd[1].revents & POLLIN) {
			int fd = accept4(g->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

			if (fd >= 0) {
				memset(&ch[nch], 0, sizeof(ch[nch]));
				ch[nch++].fd = fd;
			}
		}
	}
out:
	for (int i = 0; i < nch; i++)
		close(ch[i].fd);
	free(ch);
	free(pfd);
	return NULL;
}

int gateway_listen(struct gateway *g, const char *path, char *why, size_t why_len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int ret;

	if (g->looping) {
		snprintf(why, why_len, "gateway: already listening");
		return -EBUSY;
	}
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(why, why_len, "gateway socket %s: path too long", path);
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	/* A socket left by a server that died; anything else there is not ours to remove. */
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(path);
	g->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (g->listen_fd < 0)
		goto out_errno;
	/* Bound 0600 from the start: only the server's user may introduce sandboxes. */
	{
		mode_t old = umask(0177);

		ret = bind(g->listen_fd, (struct sockaddr *)&sa, sizeof(sa));
		umask(old);
	}
	if (ret < 0 || listen(g->listen_fd, 128) < 0)
		goto out_errno;
	g->path = strdup(path);
	if (!g->path || pipe2(g->wake, O_CLOEXEC) < 0)
		goto out_errno;
	pthread_mutex_lock(&g->lock);
	g->refs++; /* the loop thread's */
	pthread_mutex_unlock(&g->lock);
	ret = pthread_create(&g->loop, NULL, loop_thread, g);
	if (ret) {
		gateway_put(g);
		errno = ret;
		goto out_errno;
	}
	g->looping = true;
	return 0;
out_errno:
	ret = -errno;
	snprintf(why, why_len, "gateway socket %s: %s", path, strerror(errno));
	if (g->listen_fd >= 0) {
		close(g->listen_fd);
		g->listen_fd = -1;
		unlink(path);
	}
	for (int i = 0; i < 2; i++) {
		if (g->wake[i] >= 0)
			close(g->wake[i]);
		g->wake[i] = -1;
	}
	return ret;
}

void gateway_free(struct gateway *g)
{
	if (!g)
		return;
	if (g->looping) {
		char b = 0;

		if (write(g->wake[1], &b, 1) != 1)
			log_msg(LOG_WARN, "gateway: cannot stop the loop thread");
		pthread_join(g->loop, NULL);
		gateway_put(g); /* the loop thread's reference */
		g->looping = false;
	}
	if (g->listen_fd >= 0) {
		close(g->listen_fd);
		g->listen_fd = -1;
		if (g->path)
			unlink(g->path);
	}
	for (int i = 0; i < 2; i++) {
		if (g->wake[i] >= 0)
			close(g->wake[i]);
		g->wake[i] = -1;
	}
	gateway_put(g);
}
