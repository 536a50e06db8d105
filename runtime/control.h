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
 * slave when CONTROL_EXEC_TTY). All integers are host-endian (both ends are on one host).
 */
#ifndef HUSK_RUNTIME_CONTROL_H
#define HUSK_RUNTIME_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#define CONTROL_MAGIC 0x4b535548u /* "HUSK" */
#define CONTROL_VERSION 1
#define CONTROL_MAX_MSG (256u << 10)

enum control_op {
	CONTROL_EXEC = 1, /* start a process in the sandbox (husk exec) */
	CONTROL_REPLY = 2,
	CONTROL_EXITED = 3,
	CONTROL_PS = 4, /* the guest's process list (husk ps) */
	CONTROL_PS_REPLY = 5,
};

struct control_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t op;
	uint32_t len; /* payload bytes after the header */
};

#define CONTROL_EXEC_TTY 0x1u
#define CONTROL_EXEC_DETACH 0x2u

struct control_exec {
	uint32_t flags; /* CONTROL_EXEC_* */
	uint32_t uid, gid;
	uint32_t umask; /* 0xffffffff: inherit */
	uint32_t nargs, nenv;
	uint32_t ngroups;
	uint32_t groups[32];
};

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

#endif
