/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control protocol between husk (runtime) and a running sentry: a simple framed format over
 * a SOCK_SEQPACKET unix socket, one request per message, host fds in SCM_RIGHTS.
 *
 * The socket: husk create binds <state>/control.sock, listens, and passes the listening fd to
 * the sentry (--control-fd N); a sentry thread accepts on it (the seccomp filter allows accept4
 * on that fd only) and serves each connection on a thread of its own. Each connection carries
 * one request:
 *
 *   request  = struct control_hdr, then the payload (len bytes), with 0-3 fds attached
 *   reply    = struct control_hdr { op = CONTROL_REPLY }, payload struct control_reply
 *   later    = struct control_hdr { op = CONTROL_EXITED }, payload struct control_exited
 *              (for CONTROL_EXEC without detach: when the process exits)
 *
 * CONTROL_PS has no payload and no fds; its reply is struct control_hdr { op = CONTROL_PS_REPLY },
 * struct control_ps_reply, then n struct control_ps_entry.
 *
 * CONTROL_EXEC payload: struct control_exec, then its strings, each NUL-terminated, in order:
 * cwd, the nargs arguments, the nenv environment entries. fds: stdin, stdout, stderr (or one pty
 * slave when CONTROL_EXEC_TTY), then npreserve more (--preserve-fds, $LISTEN_FDS) that become
 * the process's fds 3, 4, ... All integers are host-endian (both ends are on one host).
 *
 * CONTROL_SIGNAL payload: struct control_signal, no fds, on a connection of its own (the exec
 * connection's thread is busy waiting for the process). Its reply is a CONTROL_REPLY whose err is
 * 0, -ESRCH (no such process) or -EINVAL (a bad signal number or request).
 *
 * CONTROL_UPDATE payload: struct control_update, no fds. Its reply is a CONTROL_REPLY whose err is
 * 0 or -EINVAL (a malformed request). A memory limit below the usage OOM-kills down to it before
 * the reply, as a write to Linux's memory.max.
 */
#ifndef HUSK_RUNTIME_CONTROL_H
#define HUSK_RUNTIME_CONTROL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CONTROL_MAGIC 0x4b535548u /* "HUSK" */
#define CONTROL_VERSION 1
#define CONTROL_MAX_MSG (256u << 10)

enum control_op {
	CONTROL_EXEC = 1, /* start a process in the sandbox (husk exec) */
	CONTROL_REPLY = 2,
	CONTROL_EXITED = 3,
	CONTROL_PS = 4, /* the guest's process list (husk ps) */
	CONTROL_PS_REPLY = 5,
	CONTROL_UPDATE = 6, /* new memory and pids limits (husk update) */
	CONTROL_SIGNAL = 7, /* a signal to a guest process (husk exec's proxy forwards its own) */
	CONTROL_STATS = 8, /* the sandbox's memory and pids usage and limits (husk events) */
	CONTROL_STATS_REPLY = 9,
	CONTROL_PAUSE = 10, /* stop every guest task (husk pause); reply: CONTROL_REPLY */
	CONTROL_RESUME = 11, /* let them run again (husk resume); reply: CONTROL_REPLY */
	CONTROL_CHECKPOINT =
		12, /* save the sandbox (husk checkpoint); see struct control_checkpoint */
	CONTROL_CHECKPOINT_REPLY = 13,
	/* Pods (runtime/control_pod.h): start a member container in this sandbox, and name the
	 * member the request that follows on the connection acts on. */
	CONTROL_CONTAINER_CREATE = 14,
	CONTROL_CONTAINER_TARGET = 15,
	/* Numbered apart from the others: issue 16's helpers add ops at once. */
	CONTROL_OOM_WAIT = 40, /* wait for the sentry's next OOM kill; see struct control_oom */
	CONTROL_OOM_REPLY = 41,
};

struct control_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t op;
	uint32_t len; /* payload bytes after the header */
};

#define CONTROL_EXEC_TTY 0x1u
#define CONTROL_EXEC_DETACH 0x2u
#define CONTROL_EXEC_OOM_SCORE_ADJ 0x4u /* oom_score_adj is given (else the container's) */

struct control_exec {
	uint32_t flags; /* CONTROL_EXEC_* */
	uint32_t uid, gid;
	uint32_t umask; /* 0xffffffff: inherit */
	uint32_t nargs, nenv;
	uint32_t ngroups;
	uint32_t groups[32];
	uint32_t npreserve; /* fds after stdio that become the process's fds 3.. */
	int32_t oom_score_adj; /* process.oomScoreAdj, -1000..1000, with CONTROL_EXEC_OOM_SCORE_ADJ */
};

/* Most fds a CONTROL_EXEC request carries: stdio and the preserved ones. */
#define CONTROL_MAX_PRESERVE 250
#define CONTROL_MAX_FDS (3 + CONTROL_MAX_PRESERVE)

struct control_reply {
	int32_t err; /* 0 or -errno */
	int32_t pid; /* the new process's pid inside the sandbox */
};

struct control_exited {
	int32_t status; /* wait status */
};

/* Most processes a CONTROL_PS reply lists (it must fit CONTROL_MAX_MSG). */
#define CONTROL_PS_MAX 4096

struct control_ps_reply {
	int32_t err; /* 0 or -errno */
	uint32_t n; /* entries that follow */
};

/* One guest process, as husk ps prints it. */
struct control_ps_entry {
	int32_t pid, ppid; /* guest pids (0: no parent in the sandbox, e.g. an exec'd process) */
	uint32_t uid;
	char state; /* 'R', 'S', 'T' (stopped), 'Z' (zombie) */
	char pad[3];
	uint64_t start_ns; /* since the sandbox started */
	uint64_t cpu_ns; /* user + system time */
	char comm[16];
};

/*
 * A signal for a guest process, sent as kill(2) from outside the sandbox would: to a process that
 * is not pid 1 the default actions apply; pid 1 gets it only if it handles or blocks it (SIGKILL
 * and SIGSTOP always). pid -1: every process of the sandbox, pid 1 included.
 */
struct control_signal {
	int32_t pid;
	int32_t sig; /* 1..64 */
};

/* New limits for the sandbox (husk update). Each: -1 no limit, -2 unchanged, else the limit. */
struct control_update {
	int64_t memory; /* bytes */
	int64_t pids; /* tasks; a limit below the current count only stops new forks */
};

/*
 * CONTROL_STATS has no payload and no fds; its reply is struct control_hdr
 * { op = CONTROL_STATS_REPLY } and struct control_stats, as the guest's /sys/fs/cgroup shows them.
 */
struct control_stats {
	int32_t err; /* 0 or -errno */
	uint32_t pad;
	uint64_t memory_usage, memory_limit, memory_peak, oom_kills; /* limit 0: none */
	int64_t pids_current, pids_limit; /* limit 0: none */
	/* Guest CPU time of every process the sandbox ran (sentry/kernel/cputime.h), ns. */
	uint64_t cpu_user, cpu_kernel;
	/* System calls the guest made and page faults the sentry handled for it (husk serve). */
	uint64_t syscalls, faults;
	/* Gofer messages the sentry sent and the bytes of those messages and their replies. */
	uint64_t gofer_ops, gofer_bytes;
	/* The guest's connects and unconnected sends to addresses off the sandbox's loopback that
	 * the egress policy allowed and refused (with --network=none: all refused). */
	uint64_t egress_allowed, egress_denied;
};

/*
 * CONTROL_CHECKPOINT payload: struct control_checkpoint, with two fds: the image file and the
 * pages file, both open for writing (sentry/state/README.md). The sentry stops every task, writes
 * both, and replies with struct control_hdr { op = CONTROL_CHECKPOINT_REPLY } and struct
 * control_checkpoint_reply. Without CONTROL_CKPT_LEAVE_RUNNING the sandbox then ends (the sentry
 * exits with status 0 after the reply).
 */
#define CONTROL_CKPT_LEAVE_RUNNING 0x1u
struct control_checkpoint {
	uint32_t flags;
	uint32_t pad;
};
struct control_checkpoint_reply {
	int32_t err; /* 0 or -errno */
	uint32_t pad;
	uint64_t image_bytes, pages_bytes;
	uint64_t freeze_ns, save_ns; /* time to stop every task, and to write the image */
	char msg[256]; /* why it failed, for the user */
};

/*
 * CONTROL_OOM_WAIT payload and CONTROL_OOM_REPLY payload: the request waits until the sentry's
 * OOM killer has killed more than kills processes in all (husk's host OOM reporter, husk
 * events), then the reply gives the new total (err 0). The connection then ends. A request
 * whose peer hangs up is dropped.
 */
struct control_oom {
	int32_t err; /* reply: 0 or -errno */
	uint32_t flags; /* request: CONTROL_OOM_REPORTER or 0 */
	uint64_t kills;
};

/*
 * The request is husk-oomwatch's, which reports each kill to the host cgroup and then hangs up:
 * the kills up to its count are reported (the sentry's end, or a pod member's, waits for the
 * others when the sentry was started with --oom-reporter).
 */
#define CONTROL_OOM_REPORTER 1u

#define CONTROL_UPDATE_MSG_LEN (sizeof(struct control_hdr) + sizeof(struct control_update))

/* Encodes an update request into buf (at least CONTROL_UPDATE_MSG_LEN bytes). Returns its size. */
static inline size_t control_encode_update(int64_t memory, int64_t pids, void *buf)
{
	struct control_hdr h = { .magic = CONTROL_MAGIC,
				 .version = CONTROL_VERSION,
				 .op = CONTROL_UPDATE,
				 .len = sizeof(struct control_update) };
	struct control_update u = { .memory = memory, .pids = pids };

	memcpy(buf, &h, sizeof(h));
	memcpy((char *)buf + sizeof(h), &u, sizeof(u));
	return CONTROL_UPDATE_MSG_LEN;
}

/*
 * Decodes a message of len bytes holding an update request into *out. Returns 0, or -EINVAL
 * for anything malformed (bad magic, version, op or length; a limit below -2; pids past 2^31-1).
 */
static inline int control_decode_update(const void *msg, size_t len, struct control_update *out)
{
	struct control_hdr h;
	struct control_update u;

	if (!msg || len != CONTROL_UPDATE_MSG_LEN)
		return -EINVAL;
	memcpy(&h, msg, sizeof(h));
	if (h.magic != CONTROL_MAGIC || h.version != CONTROL_VERSION || h.op != CONTROL_UPDATE ||
	    h.len != sizeof(u))
		return -EINVAL;
	memcpy(&u, (const char *)msg + sizeof(h), sizeof(u));
	if (u.memory < -2 || u.pids < -2 || u.pids > INT32_MAX)
		return -EINVAL;
	*out = u;
	return 0;
}

/* A decoded CONTROL_EXEC request; strings point into the message buffer. */
struct control_exec_req {
	struct control_exec e;
	const char *cwd;
	const char **args; /* nargs + NULL, malloc'd */
	const char **env; /* nenv + NULL, malloc'd */
};

/*
 * Encodes an exec request (header + payload) into a malloc'd buffer; *len gets its size.
 * Returns the buffer or NULL (ENOMEM, or E2BIG past CONTROL_MAX_MSG).
 */
void *control_encode_exec(const struct control_exec *e, const char *cwd, char *const *args,
			  char *const *env, size_t *len);

/*
 * Decodes a message of len bytes holding an exec request. Returns 0 and fills req (free
 * req->args and req->env), or -EINVAL for anything malformed (bad magic, version, counts,
 * missing NUL terminators, trailing bytes).
 */
int control_decode_exec(const void *msg, size_t len, struct control_exec_req *req);

/* Encodes a signal request into buf (at least CONTROL_SIGNAL_MSG_LEN bytes). Returns its size. */
#define CONTROL_SIGNAL_MSG_LEN (sizeof(struct control_hdr) + sizeof(struct control_signal))
size_t control_encode_signal(int32_t pid, int sig, void *buf);

/*
 * Decodes a message of len bytes holding a signal request into *out. Returns 0, or -EINVAL for
 * anything malformed (bad magic, version, op or length; pid 0 or below -1; sig outside 1..64).
 */
int control_decode_signal(const void *msg, size_t len, struct control_signal *out);

/*
 * runc's $LISTEN_FDS (go-systemd's activation.Files): when LISTEN_FDS is set and LISTEN_PID is
 * the caller's pid, fds 3..3+LISTEN_FDS-1 are socket-activation fds that go to the container's
 * process before the --preserve-fds ones. Returns how many (at most CONTROL_MAX_PRESERVE), or 0.
 */
int control_listen_fds(void);

/*
 * Checks that fds 3..3+n-1 are open (husk create, run and exec, before opening anything that
 * could take a missing one's number). Returns 0, or -EBADF with *bad set to the first missing
 * one's index.
 */
int control_check_preserved(int n, int *bad);

/* --- husk's side (runtime/control_client.c, not linked into the sentry) --- */

/* Connects to the control socket at path. Returns the connected socket or -errno. */
int control_dial(const char *path);

struct sockaddr_un;
/*
 * Fills sa with the address of the unix socket at path. A path longer than sun_path (a rootless
 * state directory under a long $XDG_RUNTIME_DIR, an engine's 64-character ids) is reached
 * through its directory: *dirfd gets an O_PATH fd of it, and sa names
 * /proc/self/fd/N/BASENAME; the caller closes *dirfd (-1 otherwise) after bind or connect.
 * Returns 0 or -errno.
 */
int control_sockaddr(const char *path, struct sockaddr_un *sa, int *dirfd);
/*
 * Receives one message of type op whose payload is exactly len bytes (at most 112) into payload.
 * Returns 0, -EPIPE (closed), -EPROTO (another message) or -errno.
 */
int control_recv(int sock, uint16_t op, void *payload, size_t len);
/*
 * Sends one request without fds (msg, len bytes) on a new connection to path and waits for its
 * CONTROL_REPLY (connect, send and recv are made again when a signal interrupts them). Returns
 * the reply's err (0 or -errno from the sentry) or -errno.
 */
int control_call(const char *path, const void *msg, size_t len);
/*
 * Sends one message without fds (msg, len bytes) on sock, again when a signal interrupts it.
 * Returns 0, -EPROTO (sent short) or -errno.
 */
int control_send(int sock, const void *msg, size_t len);
/* Sends msg with nfds (at most CONTROL_MAX_FDS) fds over sock. Returns 0 or -errno. */
int control_send_fds(int sock, const void *msg, size_t len, const int *fds, int nfds);
/*
 * Asks the sentry at path for its process list (CONTROL_PS). Returns the count and *out
 * (malloc'd, one zeroed entry past the end) or -errno.
 */
int control_fetch_ps(const char *path, struct control_ps_entry **out);

#endif
