/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk serve: the agent API server (docs/api.yaml is the contract). See runtime/serve/README.md.
 *
 * server.c   the command line, the listeners (libmicrohttpd), request bodies, routing, errors
 * json.c     request validation (unknown fields, types) and small JSON helpers
 * sandbox.c  the sandbox registry: create (a bundle + `husk run -d`), get, list, delete, restart
 * exec.c     exec over the sandbox's control socket, the output guard, streaming
 * files.c    the files endpoints, through husk-agent in the guest
 * logs.c     kept logs of every exec, their index and retention
 * policy.c   the timer thread: idle pause, delete_after_s, timeout_s, log expiry; metrics
 *
 * Locking: serve.lock protects the registry (the list of sandboxes and their ids and keys) and
 * the counters; each sandbox's own lock serializes its lifecycle (create, pause, resume, delete,
 * snapshot) and protects its state and record. Lock order: a sandbox's lock, then serve.lock.
 * Sandboxes are reference counted (sandbox_get/sandbox_put): a lookup returns a reference.
 */
#ifndef HUSK_RUNTIME_SERVE_H
#define HUSK_RUNTIME_SERVE_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct MHD_Connection;

/* Biggest JSON request body; files uploads are streamed and capped by --max-upload instead. */
#define SERVE_MAX_JSON_BODY (1u << 20)

enum sandbox_state {
	SB_CREATING,
	SB_RUNNING,
	SB_PAUSED,
	SB_STOPPED,
	SB_FAILED,
	SB_DELETED,
};

struct sandbox {
	char id[16]; /* "sb-" + 12 hex */
	int refs; /* under serve.lock */
	pthread_mutex_t lock;
	enum sandbox_state state; /* under lock */
	json_t *rec; /* sandbox.json's content, under lock */
	char *dir; /* STATE/sandboxes/ID */
	char *logdir; /* STATE/logs/ID */
	char *key; /* the idempotency key or NULL; set before it is listed, then constant */
	double created, last_active; /* unix time; last_active under lock */
	double active_since; /* when it last left the paused state (for wall_active_s) */
	double wall_active; /* seconds running before active_since */
	int busy; /* execs and files calls in flight, under lock */
	bool listed; /* in the registry, under serve.lock */
};

struct serve {
	char *state_dir;
	char *oci_root; /* STATE/oci */
	char *husk; /* the husk binary (/proc/self/exe resolved) */
	char *agent; /* husk-agent on the host, or NULL */
	uint64_t max_upload;
	/* Host paths no sandbox may read through its root (the state dir, the token file, the
	 * gateway's secret files): masked in each sandbox whose root holds them. */
	char **hidden;
	size_t nhidden;
	double keep_logs_s;
	/* The credential gateway (gateway.h), listening on gateway_sock; NULL without --secret. */
	struct gateway *gateway;
	char *gateway_sock;
	pthread_mutex_t lock;
	struct sandbox **sbs; /* under lock */
	size_t nsbs;
	/* Counters for /metrics, under lock. */
	uint64_t creations, execs;
	uint64_t exec_hist[12]; /* buckets of serve_hist_bounds, then +Inf */
	double exec_sum;
	volatile bool stopping;
};

extern struct serve serve;

/* The gateway secrets a sandbox's request names (its "secrets"), with the sandbox allowed to
 * use them; 0, or -errno. sandbox.c, also when a restarted server finds its sandboxes. */
int sandbox_gateway_allow(const char *id, json_t *req);

/* --- server.c: replies --- */

/* Queues a JSON reply (takes ownership of body). Returns MHD's result. */
int serve_reply_json(struct MHD_Connection *conn, unsigned status, json_t *body);
/* Queues {"error": {"code", "message"}} with status; the code word follows from status. */
int serve_reply_error(struct MHD_Connection *conn, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Queues an empty reply (204). */
int serve_reply_empty(struct MHD_Connection *conn, unsigned status);
/* Queues raw bytes (copied) with a content type. */
int serve_reply_bytes(struct MHD_Connection *conn, unsigned status, const char *type,
		      const void *data, size_t len);
/* The code word of an error status ("bad_request", "not_found"...). */
const char *serve_error_code(unsigned status);

/* --- json.c --- */

/* An error for a request: the status to reply with and a message. */
struct serve_err {
	unsigned status;
	char msg[512];
};

void serve_err_set(struct serve_err *e, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * Parses a request body as a JSON object (an empty body is {}). Returns a new reference or NULL
 * with e set (400).
 */
json_t *serve_parse_body(const char *body, size_t len, struct serve_err *e);
/*
 * Checks that obj (an object; where names it, e.g. "limits") has only the fields in allowed
 * (NULL-terminated). Returns 0, or -1 with e naming the first unknown field (400).
 */
int serve_check_fields(json_t *obj, const char *where, const char *const *allowed,
		       struct serve_err *e);
/* Typed getters: absent leaves *out unchanged and returns 0; a wrong type is -1 with e set. */
int serve_get_string(json_t *obj, const char *where, const char *key, const char **out,
		     struct serve_err *e);
int serve_get_int(json_t *obj, const char *where, const char *key, int64_t min, int64_t max,
		  int64_t *out, struct serve_err *e);
int serve_get_number(json_t *obj, const char *where, const char *key, double min, double max,
		     double *out, struct serve_err *e);
int serve_get_bool(json_t *obj, const char *where, const char *key, bool *out, struct serve_err *e);
/* An object whose values are all strings (env, labels); NULL if absent. */
int serve_get_strmap(json_t *obj, const char *where, const char *key, json_t **out,
		     struct serve_err *e);
/* An RFC 3339 UTC time for unix time t, in buf (at least 32 bytes). */
const char *serve_time(double t, char *buf, size_t size);
double serve_now(void);
/* Checks a guest path: absolute, no NUL (callers pass C strings), no ".." component. */
int serve_check_guest_path(const char *p, struct serve_err *e);
/* A random id: prefix + 12 hex digits, in buf (at least 16 bytes). */
void serve_new_id(const char *prefix, char *buf, size_t size);
/* Writes a JSON value to path atomically (path.tmp, then rename). Returns 0 or -errno. */
int serve_write_json(const char *path, json_t *v);
/* rm -rf. Returns 0 or -errno. */
int serve_rmtree(const char *path);

/* --- sandbox.c --- */

int sandbox_registry_load(void);
/* Looks up a sandbox by id. Returns a reference or NULL. */
struct sandbox *sandbox_lookup(const char *id);
void sandbox_get(struct sandbox *sb);
void sandbox_put(struct sandbox *sb);
const char *sandbox_state_name(enum sandbox_state s);
/* The sandbox object of the contract (a new reference); with usage from the sentry. */
json_t *sandbox_json(struct sandbox *sb);
/* The control socket of a sandbox, malloc'd. */
char *sandbox_control_path(const struct sandbox *sb);
/* Refreshes sb->state from `husk state` semantics (the sentry alive?); caller holds sb->lock. */
void sandbox_refresh_state(struct sandbox *sb);
/*
 * Makes a sandbox usable for an exec or files call: resumes it if paused and auto_resume,
 * marks it busy. Returns 0, or -1 with e set (409 if not running). Undo with sandbox_idle().
 */
int sandbox_enter(struct sandbox *sb, struct serve_err *e);
void sandbox_leave(struct sandbox *sb);
/* Runs the husk CLI with args (after --root); output to logfile (may be NULL). Returns the
 * exit status (0 ok) or -errno. */
int sandbox_husk(const char *logfile, const char *const *args);
/* Deletes a sandbox (husk delete --force, its files but the logs). Caller holds a reference. */
int sandbox_delete(struct sandbox *sb);
/* Pause or resume; caller holds a reference. Returns 0 or -1 with e set. */
int sandbox_set_paused(struct sandbox *sb, bool paused, struct serve_err *e);
/*
 * Hibernates a running sandbox (idle.hibernate): `husk checkpoint` into SBDIR/hibernate, its
 * sentry, stubs and gofer gone and their memory freed; it shows as paused with "hibernated"
 * true, and a resume (or auto_resume) restores it under its own id. 0, or -1 with e set.
 */
int sandbox_hibernate(struct sandbox *sb, struct serve_err *e);
/* Every sandbox (references), for the policy thread and metrics. Free with sandbox_put_all. */
struct sandbox **sandbox_all(size_t *n);
void sandbox_put_all(struct sandbox **v, size_t n);

/* Makes a sandbox restored from image with src's request and labels (NULL: src's). Returns a
 * reference or NULL with e set. */
struct sandbox *sandbox_fork_one(struct sandbox *src, const char *image, json_t *labels,
				 struct serve_err *e);

int route_sandboxes(struct MHD_Connection *conn, const char *method, char **seg, int nseg,
		    const char *body, size_t len);
int route_templates(struct MHD_Connection *conn, const char *method, char **seg, int nseg,
		    const char *body, size_t len);

/* --- snapshot.c --- */

/* The image folder of template name (malloc'd, in *path). Returns 0 or -1 with e set (404). */
int template_image(const char *name, char **path, struct serve_err *e);
/* The request a template's sandbox was made from (a new reference), or NULL. */
json_t *template_request(const char *name);
int route_snapshot(struct MHD_Connection *conn, struct sandbox *sb, const char *body, size_t len);
int route_fork(struct MHD_Connection *conn, struct sandbox *sb, const char *body, size_t len);

/* --- exec.c --- */

/* What to run in a sandbox: argv, env (K=V), cwd; stdin bytes; or an fd to feed stdin from. */
struct exec_spec {
	char **argv; /* NULL-terminated */
	char **env; /* NULL-terminated; may be NULL (the sandbox's defaults) */
	const char *cwd; /* may be NULL ("/") */
};

/*
 * Starts a process in sb with pipes for stdio. Returns 0 and the server's ends of the pipes
 * (*in, *out, *err; *in may be -1 when want_stdin is false: stdin is /dev/null), the control
 * connection (*sock, which gets CONTROL_EXITED) and the guest pid; or -errno.
 */
int exec_start(struct sandbox *sb, const struct exec_spec *s, bool want_stdin, int *in, int *out,
	       int *err, int *sock, int *pid);
/* Waits for CONTROL_EXITED on sock. Returns the wait status or -errno. */
int exec_wait(int sock);
/* Sends SIGKILL to a guest process. */
void exec_kill(struct sandbox *sb, int pid);
/* Runs argv with stdin from a buffer; collects stdout (malloc'd) and stderr (≤ 4 KiB). Returns
 * the wait status or -errno. */
int exec_simple(struct sandbox *sb, char *const *argv, const void *in, size_t inlen, char **out,
		size_t *outlen, char *errbuf, size_t errsize);
int route_exec(struct MHD_Connection *conn, struct sandbox *sb, const char *body, size_t len);

/* --- files.c --- */

/* A streamed upload (PUT files, files/tar): begun before the body comes. */
struct upload;
struct upload *upload_begin(struct MHD_Connection *conn, const char *id, const char *what,
			    struct serve_err *e);
/* Feeds body bytes. Returns 0, or -1 once it failed (the rest is discarded). */
int upload_feed(struct upload *u, const char *data, size_t len);
/* Finishes and queues the reply; frees u. */
int upload_finish(struct MHD_Connection *conn, struct upload *u);
void upload_abort(struct upload *u);
int route_files(struct MHD_Connection *conn, struct sandbox *sb, const char *what);

/* --- logs.c --- */

int route_logs(struct MHD_Connection *conn, const char *id, char **seg, int nseg);
/* Appends an exec's index entry to STATE/logs/ID/index.ndjson. */
void logs_index_append(const char *logdir, json_t *entry);
/* Marks a sandbox's logs deleted (their expiry starts). */
void logs_mark_deleted(const char *logdir);
/* Removes expired logs. */
void logs_expire(void);

/* --- policy.c --- */

void policy_start(void);
int route_metrics(struct MHD_Connection *conn);
void metrics_exec_done(double duration);
extern const double serve_hist_bounds[11];

#endif
