/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the control socket protocol (runtime/control.h), both directions, over real
 * SOCK_SEQPACKET sockets. The first byte of an input picks the direction; the rest is one
 * message.
 *   - byte0 bit 0 clear: a request to the sentry. The message is sent with (byte0 >> 1) & 3
 *     descriptors (of /dev/null) to control_recv_request (sentry/control/server.c), then
 *     dispatched as conn_main does for the requests that need no running kernel: exec
 *     (control_serve: control_decode_exec, the fd count check, the id checks against an empty
 *     kernel's identity mapping, then kernel_spawn, a stand-in here that reads every string
 *     and descriptor of the spec), signal (control_serve_signal: control_decode_signal, then a
 *     stand-in control_send_signal), update (control_decode_update) and any other op (exec's
 *     path, as conn_main sends it). Ops that need a kernel (ps, stats, pause, checkpoint, pod
 *     members, OOM waits) stop after their header.
 *   - bit 0 set: a reply to husk. (byte0 >> 1) % 6 picks the husk call that reads it:
 *     control_recv for a CONTROL_REPLY, CONTROL_EXITED, CONTROL_STATS_REPLY,
 *     CONTROL_CHECKPOINT_REPLY or CONTROL_OOM_REPLY (runtime/exec.c, events.c, checkpoint.c,
 *     oomreport.c), or control_fetch_ps (husk ps) against a socket whose server thread answers
 *     with the message.
 * Oracles besides the sanitizers: no descriptor is left open after an input (every received
 * one is closed or handed over exactly once); a request decoded as valid holds what the
 * decoder promises (nargs strings, a cwd starting with '/', a signal in 1..64); a ps list has
 * at most CONTROL_PS_MAX entries and its zeroed entry after the last.
 *
 * With CONTROL_FUZZ_SEEDS=DIR set, one message of each kind is written to DIR first, made by
 * the protocol's own encoders (control_encode_exec, _signal, _update) and by hand for the
 * replies. Build and run: tests/fuzz/control/run.sh SECONDS.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "runtime/control.h"
#include "sentry/control/control.h"
#include "sentry/fs/gofer/client.h"
#include "sentry/kernel/cputime.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/oom.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/timer.h"
#include "sentry/state/state.h"
#include "sentry/time/vtime.h"
#include "syscalls/handlers.h"
#include "tests/fuzz/fuzz_fds.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct kernel kern; /* empty: no identity mapping, every id is valid but -1 */
static int base_fds; /* fuzz_count_fds() between inputs */
static char sock_dir[64], sock_path[108], sentry_path[108];
static int listen_sock = -1;
static pthread_mutex_t reply_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reply_cond = PTHREAD_COND_INITIALIZER;
static const uint8_t *reply_msg; /* reply_lock */
static size_t reply_len; /* reply_lock */
static unsigned long answered; /* reply_lock: connections answered and closed */

static void die(const char *what)
{
	fprintf(stderr, "fuzz_control: %s: %s\n", what, strerror(errno));
	abort();
}

/* --- the kernel's side, stood in for --- */

static volatile size_t sink;
static int dummy_tg; /* the process kernel_spawn "starts" when asked for a reference */

int kernel_spawn(struct kernel *k, const struct spawn_spec *s)
{
	size_t n = strlen(s->cwd);

	if (s->cwd[0] != '/' || !s->argv[0])
		abort();
	for (int i = 0; s->argv[i]; i++)
		n += strlen(s->argv[i]);
	for (int i = 0; s->envp[i]; i++)
		n += strlen(s->envp[i]);
	for (int i = 0; i < s->ngroups; i++)
		n += s->groups[i];
	for (int i = 0; i < 3; i++)
		if (fcntl(s->stdio[i], F_GETFD) < 0)
			die("kernel_spawn: a stdio descriptor");
	for (int i = 0; i < s->npreserve; i++)
		if (fcntl(s->preserve[i], F_GETFD) < 0)
			die("kernel_spawn: a preserved descriptor");
	sink = n;
	*s->pid_out = 2;
	if (s->tg_out)
		*s->tg_out = (struct thread_group *)&dummy_tg;
	return 0;
}

int control_send_signal(struct kernel *k, int32_t pid, int sig)
{
	if (pid == 0 || pid < -1 || sig < 1 || sig > 64)
		abort();
	return pid == 1 ? 0 : -ESRCH;
}

/* What server.c calls besides: an empty sandbox that does nothing. */

int control_wait_exit(struct kernel *k, struct thread_group *tg)
{
	if (tg != (struct thread_group *)&dummy_tg)
		abort();
	return 0;
}

void tg_put(struct thread_group *tg)
{
	if (tg != (struct thread_group *)&dummy_tg)
		abort();
}

void control_kill_process(struct thread_group *tg)
{
}

int control_list_processes(struct kernel *k, struct control_ps_entry *out, int max)
{
	if (max < 2)
		return 0;
	memset(out, 0, 2 * sizeof(*out));
	out[0] = (struct control_ps_entry){ .pid = 1, .state = 'S', .comm = "init" };
	out[1] = (struct control_ps_entry){ .pid = 2, .ppid = 1, .state = 'R', .comm = "sh" };
	return 2;
}

/* Pods: a member needs a running kernel; their requests close what they were given. */
int control_container_count(void)
{
	return 0;
}

void control_container_create(struct kernel *k, int fd, const void *msg, size_t len, int *fds,
			      int nfds)
{
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
}

void control_container_target(struct kernel *k, int fd, const void *msg, size_t len)
{
}

struct cputime cputime_kernel(struct kernel *k)
{
	return (struct cputime){ 0 };
}

uint64_t gofer_client_bytes(void)
{
	return 0;
}

uint64_t gofer_client_msgs(int type)
{
	return 0;
}

int kernel_freeze(struct kernel *k, bool clean, int timeout_ms, int32_t *busy_tid)
{
	return 0;
}

void kernel_thaw(struct kernel *k)
{
}

void oom_stats(struct kernel *k, struct oom_stats *out)
{
	memset(out, 0, sizeof(*out));
}

int oom_update_limits(struct kernel *k, int64_t memory, int64_t pids)
{
	if (memory < -2 || pids < -2 || pids > INT32_MAX)
		abort(); /* control_decode_update refuses these */
	return 0;
}

uint64_t oom_wait_kills(struct kernel *k, uint64_t seen, const bool *cancel)
{
	return seen + 1;
}

void oom_wake_waiters(void)
{
}

int pid_for_each_tg(struct kernel *k, int (*fn)(struct thread_group *tg, void *arg), void *arg)
{
	return 0;
}

void restart_deadline_shift(struct task *t, int64_t ns)
{
}

int state_checkpoint(struct kernel *k, int image_fd, int pages_fd, bool leave_running,
		     struct state_stats *st, char *err, size_t errlen)
{
	if (fcntl(image_fd, F_GETFD) < 0 || fcntl(pages_fd, F_GETFD) < 0)
		abort();
	snprintf(err, errlen, "no checkpoint in the fuzzer");
	return -ENOSYS;
}

uint64_t task_monotonic_ns(void)
{
	return 0;
}

void timers_hold(void)
{
}

void timers_release(void)
{
}

void vtime_offset_add(int64_t ns)
{
}

/* --- helpers --- */

/* Sends buf with nfds descriptors of /dev/null; false when the socket cannot take it. */
static bool send_msg(int sock, const void *buf, size_t len, int nfds)
{
	int fds[3];
	ssize_t ret;

	for (int i = 0; i < nfds; i++) {
		fds[i] = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (fds[i] < 0)
			die("/dev/null");
	}
	ret = fuzz_send_fds(sock, buf, len, fds, nfds);
	if (ret < 0 && errno != EMSGSIZE && errno != ENOBUFS)
		die("sendmsg");
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	return ret >= 0;
}

/* --- the sentry's side: one request --- */

/*
 * Sends msg with nfds descriptors on a new connection to the sentry's control server (its
 * accept thread and conn_main, running in this process), shuts the connection's write side
 * (as a husk that went away: a request that waits for the peer ends), and reads the replies
 * until the server closes the connection, checking each one.
 */
static void serve_request(const uint8_t *msg, size_t len, int nfds)
{
	static uint8_t buf[CONTROL_MAX_MSG + 1];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	ssize_t n;

	memcpy(sa.sun_path, sentry_path, strlen(sentry_path) + 1);
	if (sock < 0)
		die("socket");
	while (connect(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		if (errno != EINTR)
			die("connect");
	if (!send_msg(sock, msg, len, nfds)) {
		close(sock);
		return;
	}
	shutdown(sock, SHUT_WR);
	while ((n = recv(sock, buf, sizeof(buf), 0)) > 0 || (n < 0 && errno == EINTR)) {
		struct control_hdr h;

		if (n < 0)
			continue;
		if ((size_t)n < sizeof(h))
			abort(); /* every reply has a header */
		memcpy(&h, buf, sizeof(h));
		if (h.magic != CONTROL_MAGIC || h.version != CONTROL_VERSION ||
		    h.len != (size_t)n - sizeof(h))
			abort(); /* and says its own length */
		if (h.op == CONTROL_REPLY) {
			struct control_reply r;

			if (h.len != sizeof(r))
				abort();
			memcpy(&r, buf + sizeof(h), sizeof(r));
			if (r.err > 0 || r.err < -4095)
				abort();
		}
	}
	if (n < 0 && errno != ECONNRESET)
		die("recv");
	close(sock);
}

/* --- husk's side: one reply --- */

/* Answers each connection to sock_path with the current reply_msg, then hangs up. */
static void *answer_main(void *arg)
{
	static char req[CONTROL_MAX_MSG];

	for (;;) {
		int c = accept4(listen_sock, NULL, NULL, SOCK_CLOEXEC);
		ssize_t n;

		if (c < 0)
			continue;
		pthread_mutex_lock(&reply_lock);
		do
			n = recv(c, req, sizeof(req), 0);
		while (n < 0 && errno == EINTR);
		if (n > 0)
			send(c, reply_msg, reply_len, MSG_NOSIGNAL);
		close(c);
		answered++;
		pthread_cond_broadcast(&reply_cond);
		pthread_mutex_unlock(&reply_lock);
	}
	return NULL;
}

static void read_reply(const uint8_t *msg, size_t len, int which)
{
	static const struct {
		uint16_t op;
		size_t len;
	} calls[] = {
		{ CONTROL_REPLY, sizeof(struct control_reply) },
		{ CONTROL_EXITED, sizeof(struct control_exited) },
		{ CONTROL_STATS_REPLY, sizeof(struct control_stats) },
		{ CONTROL_CHECKPOINT_REPLY, sizeof(struct control_checkpoint_reply) },
		{ CONTROL_OOM_REPLY, sizeof(struct control_oom) },
	};
	uint8_t payload[512];

	if (which < 5) {
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
			die("socketpair");
		send_msg(sv[1], msg, len, 0);
		close(sv[1]);
		control_recv(sv[0], calls[which].op, payload, calls[which].len);
		close(sv[0]);
	} else {
		struct control_ps_entry *ps = NULL;
		unsigned long before;
		int n;

		pthread_mutex_lock(&reply_lock);
		reply_msg = msg;
		reply_len = len;
		before = answered;
		pthread_mutex_unlock(&reply_lock);
		n = control_fetch_ps(sock_path, &ps);
		/* Its connection was answered and closed before the next input. */
		pthread_mutex_lock(&reply_lock);
		while (answered == before)
			pthread_cond_wait(&reply_cond, &reply_lock);
		reply_msg = NULL;
		pthread_mutex_unlock(&reply_lock);
		if (n >= 0) {
			static const struct control_ps_entry zero;

			if (n > CONTROL_PS_MAX || memcmp(&ps[n], &zero, sizeof(zero)) != 0)
				abort();
			for (int i = 0; i < n; i++)
				sink += ps[i].comm[15];
			free(ps);
		} else if (ps) {
			abort();
		}
	}
}

static void remove_socket(void)
{
	unlink(sock_path);
	unlink(sentry_path);
	rmdir(sock_dir);
}

/* --- seeds --- */

static void write_seed(const char *dir, const char *name, uint8_t kind, const void *buf, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fputc(kind, f) == EOF || fwrite(buf, 1, len, f) != len)
		abort();
	fclose(f);
}

/* A reply of op with payload p (len bytes), as the sentry sends it. */
static void write_reply_seed(const char *dir, const char *name, int which, uint16_t op,
			     const void *p, size_t len)
{
	uint8_t buf[1024];
	struct control_hdr h = {
		.magic = CONTROL_MAGIC, .version = CONTROL_VERSION, .op = op, .len = (uint32_t)len
	};

	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), p, len);
	write_seed(dir, name, (uint8_t)(1 | (which << 1)), buf, sizeof(h) + len);
}

static void write_seeds(const char *dir)
{
	struct control_exec e = { .uid = 0, .gid = 0, .umask = 0xffffffffu };
	char *args[] = { "sh", "-c", "echo hi", NULL },
	     *env[] = { "PATH=/bin", "TERM=xterm", NULL };
	uint8_t buf[256];
	size_t len;
	void *m = control_encode_exec(&e, "/", args, env, &len);
	struct control_reply r = { 0, 7 };
	struct control_exited ex = { 256 };
	struct control_stats st = { .memory_usage = 1 << 20, .pids_current = 3 };
	struct control_checkpoint_reply cr = { .image_bytes = 4096, .msg = "saved" };
	struct control_oom oom = { .kills = 2 };
	struct {
		struct control_hdr h;
		struct control_ps_reply r;
		struct control_ps_entry e[2];
	} ps = { { CONTROL_MAGIC, CONTROL_VERSION, CONTROL_PS_REPLY,
		   sizeof(ps) - sizeof(struct control_hdr) },
		 { 0, 2 },
		 { { .pid = 1, .state = 'S', .comm = "sh" },
		   { .pid = 2, .ppid = 1, .state = 'R' } } };
	struct control_hdr ps_req = { CONTROL_MAGIC, CONTROL_VERSION, CONTROL_PS, 0 };

	if (!m)
		abort();
	write_seed(dir, "exec-3fds", 3 << 1, m, len);
	e.flags = CONTROL_EXEC_TTY | CONTROL_EXEC_OOM_SCORE_ADJ;
	e.oom_score_adj = 500;
	free(m);
	m = control_encode_exec(&e, "/tmp", args, env, &len);
	if (!m)
		abort();
	write_seed(dir, "exec-tty", 1 << 1, m, len);
	free(m);
	len = control_encode_signal(1, SIGTERM, buf);
	write_seed(dir, "signal", 0, buf, len);
	len = control_encode_update(64 << 20, -2, buf);
	write_seed(dir, "update", 0, buf, len);
	write_seed(dir, "ps-request", 0, &ps_req, sizeof(ps_req));
	write_reply_seed(dir, "reply", 0, CONTROL_REPLY, &r, sizeof(r));
	write_reply_seed(dir, "exited", 1, CONTROL_EXITED, &ex, sizeof(ex));
	write_reply_seed(dir, "stats", 2, CONTROL_STATS_REPLY, &st, sizeof(st));
	write_reply_seed(dir, "checkpoint", 3, CONTROL_CHECKPOINT_REPLY, &cr, sizeof(cr));
	write_reply_seed(dir, "oom", 4, CONTROL_OOM_REPLY, &oom, sizeof(oom));
	write_seed(dir, "ps", 1 | 5 << 1, &ps, sizeof(ps));
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("CONTROL_FUZZ_SEEDS");
	const char *tmp = getenv("TMPDIR");
	char dir[64];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	pthread_t t;
	int fd;

	signal(SIGPIPE, SIG_IGN);
	if (seeds)
		write_seeds(seeds);
	snprintf(dir, sizeof(dir), "%s/fuzz-control.XXXXXX",
		 tmp && strlen(tmp) < 24 ? tmp : "/tmp");
	if (!mkdtemp(dir))
		die("mkdtemp");
	snprintf(sock_path, sizeof(sock_path), "%s/control.sock", dir);
	memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
	listen_sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (listen_sock < 0 || bind(listen_sock, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(listen_sock, 8) < 0)
		die("control socket");
	snprintf(sock_dir, sizeof(sock_dir), "%s", dir);
	atexit(remove_socket);
	if (pthread_create(&t, NULL, answer_main, NULL) != 0)
		die("pthread_create");
	pthread_detach(t);
	/* The sentry's control server, as husk-sentry --control-fd starts it. */
	snprintf(sentry_path, sizeof(sentry_path), "%s/sentry.sock", dir);
	memcpy(sa.sun_path, sentry_path, strlen(sentry_path) + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 8) < 0)
		die("sentry control socket");
	if (control_server_start(&kern, fd) < 0)
		die("control_server_start");
	base_fds = fuzz_count_fds(false);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int n;

	if (size < 1)
		return 0;
	if (data[0] & 1)
		read_reply(data + 1, size - 1, (data[0] >> 1) % 6);
	else
		serve_request(data + 1, size - 1, (data[0] >> 1) & 3);
	/* The server's threads are detached and may close the connection a little after the peer
	 * saw its end (the hang-up watch closes it last): a leak is a descriptor still open after
	 * 5 s. */
	for (int i = 0; (n = fuzz_count_fds(false)) > base_fds && i < 5000; i++)
		usleep(1000);
	if (n > base_fds) {
		fprintf(stderr, "fuzz_control: %d descriptor(s) left open\n", n - base_fds);
		fuzz_count_fds(true);
		abort();
	}
	return 0;
}
