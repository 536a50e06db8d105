/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk serve [--socket PATH] [--listen ADDR:PORT --token-file F] [--state-dir DIR]
 *            [--keep-logs DURATION] [--max-upload BYTES] [--secret SPEC]...
 *            [--gateway-ca FILE] [--gateway-resolve HOST:IP]...
 *
 * The agent API server (docs/api.yaml). libmicrohttpd runs a thread per connection, so a handler
 * may block (an exec waits for its process); request bodies are gathered up to
 * SERVE_MAX_JSON_BODY, except file uploads, which stream to the guest as they come.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include <microhttpd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "runtime/runtime.h"
#include "runtime/serve/gateway.h"
#include "common/fsutil.h"
#include "runtime/serve/serve.h"

#ifndef HUSK_VERSION
#define HUSK_VERSION "0.0.0"
#endif

struct serve serve;

/* One listener: the unix socket (no token) or TCP (a bearer token on every request). */
struct listener {
	bool tcp;
	char *token; /* TCP only */
	size_t token_len;
};

/* One request's state across libmicrohttpd's calls of the handler. */
struct request {
	char *body;
	size_t len, cap;
	bool too_large;
	struct upload *upload; /* a streamed PUT of files */
	bool failed; /* a reply was queued already (e.g. 401 before the body) */
};

const char *serve_error_code(unsigned status)
{
	switch (status) {
	case 400:
		return "bad_request";
	case 401:
		return "unauthorized";
	case 403:
		return "forbidden";
	case 404:
		return "not_found";
	case 405:
		return "method_not_allowed";
	case 409:
		return "conflict";
	case 413:
		return "payload_too_large";
	case 507:
		return "insufficient_storage";
	default:
		return status >= 500 ? "internal" : "bad_request";
	}
}

int serve_reply_bytes(struct MHD_Connection *conn, unsigned status, const char *type,
		      const void *data, size_t len)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	if (type)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

int serve_reply_json(struct MHD_Connection *conn, unsigned status, json_t *body)
{
	char *text = json_dumps(body, JSON_COMPACT);
	struct MHD_Response *r;
	enum MHD_Result ret;

	json_decref(body);
	if (!text)
		return MHD_NO;
	r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

int serve_reply_error(struct MHD_Connection *conn, unsigned status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return serve_reply_json(conn, status,
				json_pack("{s:{s:s,s:s}}", "error", "code",
					  serve_error_code(status), "message", msg));
}

int serve_reply_empty(struct MHD_Connection *conn, unsigned status)
{
	return serve_reply_bytes(conn, status, NULL, "", 0);
}

/* Splits a path into its components (in a copy); returns how many (at most max). */
static int split_path(char *p, char **seg, int max)
{
	int n = 0;

	for (char *s = strtok(p, "/"); s; s = strtok(NULL, "/")) {
		if (n == max)
			return max + 1;
		seg[n++] = s;
	}
	return n;
}

static int route_health(struct MHD_Connection *conn)
{
	size_t n;

	pthread_mutex_lock(&serve.lock);
	n = serve.nsbs;
	pthread_mutex_unlock(&serve.lock);
	return serve_reply_json(conn, 200,
				json_pack("{s:s,s:s,s:I}", "status", "ok", "version", HUSK_VERSION,
					  "sandboxes", (json_int_t)n));
}

static int route(struct MHD_Connection *conn, const char *url, const char *method,
		 struct request *r)
{
	_cleanup_free_ char *copy = strdup(url);
	char *seg[8];
	int n;

	if (!copy)
		return MHD_NO;
	n = split_path(copy, seg, 7);
	if (n == 1 && !strcmp(seg[0], "metrics")) {
		if (strcmp(method, "GET"))
			return serve_reply_error(conn, 405, "%s /metrics: use GET", method);
		return route_metrics(conn);
	}
	if (n < 2 || strcmp(seg[0], "v1"))
		return serve_reply_error(conn, 404, "no such endpoint: %s", url);
	if (n == 2 && !strcmp(seg[1], "health")) {
		if (strcmp(method, "GET"))
			return serve_reply_error(conn, 405, "%s /v1/health: use GET", method);
		return route_health(conn);
	}
	if (!strcmp(seg[1], "sandboxes"))
		return route_sandboxes(conn, method, seg + 2, n - 2, r->body, r->len);
	if (!strcmp(seg[1], "templates"))
		return route_templates(conn, method, seg + 2, n - 2, r->body, r->len);
	return serve_reply_error(conn, 404, "no such endpoint: %s", url);
}

/* Constant-time comparison of the Authorization header with "Bearer TOKEN". */
static bool token_ok(const struct listener *l, struct MHD_Connection *conn)
{
	const char *h =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	unsigned char diff = 0;
	size_t len;

	if (!h || strncasecmp(h, "Bearer ", 7))
		return false;
	h += 7;
	len = strlen(h);
	/* Compare every byte of the expected token whatever the given one is. */
	for (size_t i = 0; i < l->token_len; i++)
		diff |= (unsigned char)(l->token[i] ^ (i < len ? h[i] : 0));
	return diff == 0 && len == l->token_len;
}

/* Is this request a streamed upload (PUT /v1/sandboxes/ID/files or .../files/tar)? */
static bool upload_route(const char *url, const char *method, char *id, size_t idsize,
			 const char **what)
{
	_cleanup_free_ char *copy = NULL;
	char *seg[8];
	int n;

	if (strcmp(method, "PUT"))
		return false;
	copy = strdup(url);
	if (!copy)
		return false;
	n = split_path(copy, seg, 7);
	if (n < 4 || strcmp(seg[0], "v1") || strcmp(seg[1], "sandboxes") || strcmp(seg[3], "files"))
		return false;
	if (n == 4)
		*what = "put";
	else if (n == 5 && !strcmp(seg[4], "tar"))
		*what = "tar-x";
	else
		return false;
	snprintf(id, idsize, "%s", seg[2]);
	return true;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **con_cls)
{
	struct listener *l = cls;
	struct request *r = *con_cls;

	if (!r) {
		char id[64];
		const char *what;

		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		*con_cls = r;
		if (l->tcp && !token_ok(l, conn)) {
			r->failed = true;
			return (enum MHD_Result)serve_reply_error(
				conn, 401,
				"a bearer token is required (Authorization: Bearer ...)");
		}
		if (upload_route(url, method, id, sizeof(id), &what)) {
			struct serve_err e = { 0 };

			r->upload = upload_begin(conn, id, what, &e);
			if (!r->upload) {
				r->failed = true;
				return (enum MHD_Result)serve_reply_error(conn, e.status, "%s",
									  e.msg);
			}
		}
		return MHD_YES;
	}
	if (r->failed) {
		/* Discard the body of a request answered already. */
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (*upload_data_size) {
		if (r->upload) {
			upload_feed(r->upload, upload_data, *upload_data_size);
		} else if (r->too_large || r->len + *upload_data_size > SERVE_MAX_JSON_BODY) {
			r->too_large = true;
		} else {
			if (r->len + *upload_data_size > r->cap) {
				size_t cap = (r->len + *upload_data_size) * 2;
				char *b = realloc(r->body, cap);

				if (!b)
					return MHD_NO;
				r->body = b;
				r->cap = cap;
			}
			memcpy(r->body + r->len, upload_data, *upload_data_size);
			r->len += *upload_data_size;
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (r->upload) {
		struct upload *u = r->upload;

		r->upload = NULL;
		return (enum MHD_Result)upload_finish(conn, u);
	}
	if (r->too_large)
		return (enum MHD_Result)serve_reply_error(
			conn, 413, "the request body is larger than %u bytes", SERVE_MAX_JSON_BODY);
	return (enum MHD_Result)route(conn, url, method, r);
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct request *r = *con_cls;

	if (!r)
		return;
	if (r->upload)
		upload_abort(r->upload);
	free(r->body);
	free(r);
	*con_cls = NULL;
}

static int listen_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, err;
	_cleanup_free_ char *dir = strdup(path);
	char *slash;

	if (!dir)
		return -ENOMEM;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		husk_mkdir_p(dir, 0755);
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A socket left by a server that died: nobody answers on it. */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		close(fd);
		return -EADDRINUSE;
	}
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0600) < 0 ||
	    listen(fd, 128) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static int listen_tcp(const char *spec)
{
	_cleanup_free_ char *host = strdup(spec);
	char *colon;
	struct sockaddr_storage ss = { 0 };
	socklen_t sl;
	long port;
	int fd, one = 1, err;

	if (!host)
		return -ENOMEM;
	colon = strrchr(host, ':');
	if (!colon)
		return -EINVAL;
	*colon = 0;
	port = strtol(colon + 1, NULL, 10);
	if (port <= 0 || port > 65535)
		return -EINVAL;
	if (host[0] == '[' && colon[-1] == ']') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		colon[-1] = 0;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host + 1, &s6->sin6_addr) != 1)
			return -EINVAL;
		sl = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
			return -EINVAL;
		sl = sizeof(*s4);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 128) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static struct MHD_Daemon *start_daemon(int fd, struct listener *l)
{
	/* poll, not select: a busy server's descriptors go past FD_SETSIZE. */
	return MHD_start_daemon(
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0,
		NULL, NULL, handle, l, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_NOTIFY_COMPLETED,
		completed, NULL, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)0, MHD_OPTION_END);
}

/* "72h", "30m", "90s", "2d" or plain seconds. Returns seconds or -1. */
static double parse_duration(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v < 0)
		return -1;
	if (!*end || !strcmp(end, "s"))
		return v;
	if (!strcmp(end, "m"))
		return v * 60;
	if (!strcmp(end, "h"))
		return v * 3600;
	if (!strcmp(end, "d"))
		return v * 86400;
	return -1;
}

static char *read_token(const char *file)
{
	_cleanup_fclose_ FILE *f = fopen(file, "re");
	char buf[4096];
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		buf[--n] = 0;
	if (!n)
		return NULL;
	return strdup(buf);
}

/* husk-agent: $HUSK_AGENT, beside husk (or where husk finds its helpers), or in the build tree. */
static char *find_agent(const char *exe)
{
	const char *env = getenv("HUSK_AGENT");
	char *p = NULL, *slash;

	if (env && *env)
		return realpath(env, NULL);
	p = runtime_find_helper("husk-agent");
	if (p)
		return p;
	if (asprintf(&p, "%s", exe) < 0)
		return NULL;
	slash = strrchr(p, '/');
	if (slash) {
		char *q = NULL;

		*slash = 0;
		if (asprintf(&q, "%s/runtime/serve/agent/husk-agent", p) >= 0 &&
		    access(q, X_OK) == 0) {
			free(p);
			return q;
		}
		free(q);
	}
	free(p);
	return NULL;
}

static void usage(FILE *out)
{
	fputs("usage: husk serve [--socket PATH] [--listen ADDR:PORT --token-file FILE]\n"
	      "                  [--state-dir DIR] [--keep-logs DURATION] [--max-upload BYTES]\n"
	      "                  [--secret NAME=@FILE,host=HOST,header=HEADER[,prefix=P]]...\n"
	      "                  [--gateway-ca FILE] [--gateway-resolve HOST:IP]...\n"
	      "\n"
	      "Serves the agent API (docs/api.yaml) on a unix socket (default /run/husk/serve.sock,\n"
	      "no token) and optionally on TCP (every request needs Authorization: Bearer TOKEN).\n"
	      "Sandboxes, their logs and templates live in the state directory (default\n"
	      "/var/lib/husk/serve); logs are kept DURATION (default 72h) after a sandbox is\n"
	      "deleted.\n",
	      out);
}

/* Adds a host path (made absolute) to the paths sandboxes must not see. */
static void hide_path(const char *path)
{
	char *abs = realpath(path, NULL);
	char **v;

	if (!abs)
		return;
	v = realloc(serve.hidden, (serve.nhidden + 1) * sizeof(*v));
	if (!v) {
		free(abs);
		return;
	}
	serve.hidden = v;
	serve.hidden[serve.nhidden++] = abs;
}

/* The FILE of a --secret NAME=@FILE,host=...: hidden from sandboxes. */
static void hide_secret_file(const char *spec)
{
	const char *at = strstr(spec, "=@");
	char *file;

	if (!at)
		return;
	file = strndup(at + 2, strcspn(at + 2, ","));
	if (file)
		hide_path(file);
	free(file);
}

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

int cmd_serve(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "listen", required_argument, NULL, 'l' },
		{ "token-file", required_argument, NULL, 't' },
		{ "state-dir", required_argument, NULL, 'd' },
		{ "keep-logs", required_argument, NULL, 'k' },
		{ "max-upload", required_argument, NULL, 'u' },
		{ "secret", required_argument, NULL, 'S' },
		{ "gateway-ca", required_argument, NULL, 'C' },
		{ "gateway-resolve", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock_path = "/run/husk/serve.sock", *listen_spec = NULL, *token_file = NULL;
	const char *state_dir = "/var/lib/husk/serve";
	static struct listener unix_l = { .tcp = false }, tcp_l = { .tcp = true };
	struct MHD_Daemon *ud, *td = NULL;
	char exe[PATH_MAX];
	ssize_t n;
	int c, ufd, tfd = -1, ret;
	struct sigaction sa = { .sa_handler = on_signal };
	struct gateway_secret *secrets = NULL;
	struct gateway_config gw = { 0 };
	const char **resolve = NULL;
	int nsecrets = 0;

	serve.keep_logs_s = 72 * 3600;
	serve.max_upload = 1ull << 30;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			sock_path = optarg;
			break;
		case 'l':
			listen_spec = optarg;
			break;
		case 't':
			token_file = optarg;
			break;
		case 'd':
			state_dir = optarg;
			break;
		case 'k':
			serve.keep_logs_s = parse_duration(optarg);
			if (serve.keep_logs_s < 0) {
				fprintf(stderr,
					"husk serve: --keep-logs %s: expected a duration "
					"(72h, 30m, 90s, 2d)\n",
					optarg);
				return 2;
			}
			break;
		case 'u': {
			char *end;

			serve.max_upload = strtoull(optarg, &end, 10);
			if (*end || !serve.max_upload) {
				fprintf(stderr, "husk serve: --max-upload %s: expected bytes\n",
					optarg);
				return 2;
			}
			break;
		}
		case 'S': {
			struct gateway_secret *v;
			char why[256] = "";

			hide_secret_file(optarg);
			v = realloc(secrets, (size_t)(nsecrets + 1) * sizeof(*v));
			if (!v)
				return 1;
			secrets = v;
			if (gateway_parse_secret(optarg, &secrets[nsecrets], why, sizeof(why)) <
			    0) {
				fprintf(stderr, "husk serve: --secret: %s\n", why);
				return 2;
			}
			nsecrets++;
			break;
		}
		case 'C':
			gw.ca_file = optarg;
			break;
		case 'R': {
			const char **v = realloc(resolve, (size_t)(gw.nresolve + 1) * sizeof(*v));

			if (!v)
				return 1;
			resolve = v;
			resolve[gw.nresolve++] = optarg;
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (listen_spec && !token_file) {
		fprintf(stderr, "husk serve: --listen needs --token-file\n");
		return 2;
	}
	if (token_file) {
		tcp_l.token = read_token(token_file);
		if (!tcp_l.token) {
			fprintf(stderr, "husk serve: --token-file %s: cannot read a token\n",
				token_file);
			return 2;
		}
		tcp_l.token_len = strlen(tcp_l.token);
		hide_path(token_file);
	}

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		fprintf(stderr, "husk serve: /proc/self/exe: %s\n", strerror(errno));
		return 1;
	}
	exe[n] = 0;
	serve.husk = strdup(exe);
	serve.agent = find_agent(exe);
	pthread_mutex_init(&serve.lock, NULL);
	serve.state_dir = realpath(state_dir, NULL);
	if (!serve.state_dir) {
		ret = husk_mkdir_p(state_dir, 0700);
		serve.state_dir = realpath(state_dir, NULL);
		if (!serve.state_dir) {
			fprintf(stderr, "husk serve: --state-dir %s: %s\n", state_dir,
				strerror(ret < 0 ? -ret : errno));
			return 1;
		}
	}
	if (asprintf(&serve.oci_root, "%s/oci", serve.state_dir) < 0)
		return 1;
	hide_path(serve.state_dir);
	/* The credential gateway, when there are secrets: on STATE/gateway.sock (GATEWAY.md). */
	if (nsecrets > 0) {
		char why[256] = "";

		gw.secrets = secrets;
		gw.nsecrets = nsecrets;
		gw.resolve = resolve;
		serve.gateway = gateway_new(&gw, why, sizeof(why));
		for (int i = 0; i < nsecrets; i++)
			gateway_secret_clear(&secrets[i]); /* gateway_new copied them */
		free(secrets);
		if (!serve.gateway) {
			fprintf(stderr, "husk serve: the credential gateway: %s\n", why);
			return 2;
		}
		if (asprintf(&serve.gateway_sock, "%s/gateway.sock", serve.state_dir) < 0)
			return 1;
		if (gateway_listen(serve.gateway, serve.gateway_sock, why, sizeof(why)) < 0) {
			fprintf(stderr, "husk serve: the credential gateway: %s\n", why);
			return 1;
		}
	} else if (gw.ca_file || gw.nresolve) {
		fprintf(stderr, "husk serve: --gateway-ca and --gateway-resolve need --secret\n");
		return 2;
	}
	ret = sandbox_registry_load();
	if (ret < 0) {
		fprintf(stderr, "husk serve: %s: %s\n", serve.state_dir, strerror(-ret));
		return 1;
	}

	signal(SIGPIPE, SIG_IGN);
	ufd = listen_unix(sock_path);
	if (ufd < 0) {
		fprintf(stderr, "husk serve: --socket %s: %s\n", sock_path, strerror(-ufd));
		return 1;
	}
	if (listen_spec) {
		tfd = listen_tcp(listen_spec);
		if (tfd < 0) {
			fprintf(stderr, "husk serve: --listen %s: %s\n", listen_spec,
				strerror(-tfd));
			return 1;
		}
	}
	ud = start_daemon(ufd, &unix_l);
	if (!ud) {
		fprintf(stderr, "husk serve: cannot start the HTTP server on %s\n", sock_path);
		return 1;
	}
	if (tfd >= 0) {
		td = start_daemon(tfd, &tcp_l);
		if (!td) {
			fprintf(stderr, "husk serve: cannot start the HTTP server on %s\n",
				listen_spec);
			return 1;
		}
	}
	policy_start();
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	fprintf(stderr, "husk serve: listening on %s%s%s (state %s)\n", sock_path,
		listen_spec ? " and " : "", listen_spec ? listen_spec : "", serve.state_dir);
	while (!got_signal)
		pause();
	serve.stopping = true;
	/*
	 * Sandboxes keep running: a restarted server finds them again. Requests in flight (an
	 * exec waiting for its process) are not waited for: stopping the daemons would.
	 */
	unlink(sock_path);
	fprintf(stderr, "husk serve: stopping on signal %d\n", (int)got_signal);
	(void)ud;
	(void)td;
	fflush(NULL);
	_exit(0);
	return 0;
}
