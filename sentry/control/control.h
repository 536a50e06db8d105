/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sentry side of the control socket (runtime/control.h has the wire format): requests from
 * husk to a running sandbox: exec (a new process) and ps (the process list).
 *
 * Threads: control_server_start() starts one host thread that accepts connections on the
 * listening socket husk passed; each connection is served by a thread of its own, which for a
 * non-detached exec stays until the process exits to send its status. A waiting exec or OOM
 * wait also has a hang-up watch thread polling its connection: a peer gone before the exec'd
 * process ended kills that process (as runc's dies with the pid the engine holds). These
 * threads are not tasks: they never run guest code, and reach the kernel only through the
 * functions below.
 */
#ifndef HUSK_SENTRY_CONTROL_H
#define HUSK_SENTRY_CONTROL_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

struct kernel;
struct thread_group;
struct control_ps_entry;
struct control_member;

/* A process to start in a running sandbox (husk exec). */
struct spawn_spec {
	const char *const *argv; /* NULL-terminated; argv[0] is resolved against PATH in env */
	const char *const *envp; /* NULL-terminated */
	const char *cwd; /* absolute, in the sandbox */
	uint32_t uid, gid;
	int ngroups;
	const uint32_t *groups;
	int32_t umask; /* -1: the default (022) */
	bool has_oom_score_adj; /* else the sandbox's (process.oomScoreAdj, --oom-score-adj) */
	int oom_score_adj; /* -1000..1000 */
	int stdio[3]; /* host fds for guest fds 0-2 (duplicated: the caller keeps its own) */
	int npreserve; /* host fds for guest fds 3, 4, ... (--preserve-fds; duplicated too) */
	const int *preserve;
	int32_t *pid_out; /* set to the new process's pid */
	/* If not NULL, set to a new reference on the new process (control_wait_exit, tg_put). */
	struct thread_group **tg_out;
	/* A pod member (container.c): the process starts in its root with its defaults, limits and
	 * number; NULL: the sandbox's own container. */
	struct control_member *member;
	/* With gate: once linked, the process waits for one byte on gate_fd (a member's exec.fifo:
	 * husk start) before it runs, or until it is killed. */
	bool gate;
	int gate_fd;
};

/*
 * Starts a new process in kernel k, as runc exec does: a process of its own session and group
 * whose parent is outside the sandbox (ppid 0; it is reaped by the sentry itself when it ends,
 * its children go to pid 1), with s's credentials, cwd, umask and stdio, pid 1's rlimits, and
 * argv[0] looked up in envp's PATH as execvp would. The program is loaded before the process
 * exists: a failed exec leaves nothing behind. Any thread (not a task's). Returns 0, -ENOENT /
 * -EACCES / -ENOEXEC / -ENOTDIR from the exec or chdir, -ESRCH when the sandbox is ending, or
 * -ENOMEM.
 */
int kernel_spawn(struct kernel *k, const struct spawn_spec *s);

/*
 * Sends sig to the sandbox's process pid as kill(2) from outside the sandbox would (SI_USER
 * from pid 0): a process other than pid 1 gets the default actions; pid 1 only what it handles
 * or blocks (SIGKILL and SIGSTOP always). pid -1: every process, pid 1 included. Any thread.
 * Returns 0, -ESRCH (no such process, or a zombie) or -EINVAL (sig outside 1..64).
 */
int control_send_signal(struct kernel *k, int32_t pid, int sig);

/*
 * As control_send_signal, for the processes of one container only (num: the sandbox's own 0,
 * or a member's number): pid -1 is every process of it, another pid must be one of its.
 */
int control_send_signal_container(struct kernel *k, int32_t num, int32_t pid, int sig);

/* As control_list_processes, for the processes of container num only. */
int control_list_container_processes(struct kernel *k, int32_t num, struct control_ps_entry *out,
				     int max);

/*
 * Receives one control message into buf (len bytes at most) and up to CONTROL_MAX_FDS fds
 * (SCM_RIGHTS, close-on-exec; more are closed) into fds, *nfds of them. Returns its length,
 * -EMSGSIZE when the message or its fds were truncated (none kept), or -errno.
 */
ssize_t control_recv_request(int fd, void *buf, size_t len, int *fds, int *nfds);

/* Sends one message of len bytes on control connection fd (sendmsg, no SIGPIPE; a closed peer
 * loses it: the connection's end is noticed by its reader). */
void control_send_msg(int fd, const void *buf, size_t len);

/*
 * SIGKILLs process tg as kill(2) from outside the sandbox would (its children live on, as
 * runc's when the engine kills an exec'd process). Any thread; tg ended already: nothing.
 */
void control_kill_process(struct thread_group *tg);

/*
 * Serves one CONTROL_SIGNAL request of len bytes: decodes it, calls control_send_signal and
 * writes the reply (struct control_hdr + struct control_reply, err and the pid) into reply (at
 * least 64 bytes). Returns the reply's length. A malformed request gets -EINVAL.
 */
int control_serve_signal(struct kernel *k, const void *msg, size_t len, void *reply);

/*
 * Waits (any non-task thread) until process tg has ended, and returns its wait status (exit
 * code << 8, or the killing signal). Does not drop the caller's reference.
 */
int control_wait_exit(struct kernel *k, struct thread_group *tg);

/*
 * Fills out[0..max) with the sandbox's processes, in pid order of the pid table's walk.
 * Returns how many, or -errno.
 */
int control_list_processes(struct kernel *k, struct control_ps_entry *out, int max);

/*
 * Serves one CONTROL_EXEC request of len bytes with its nfds received fds: decodes it, calls
 * kernel_spawn, and writes the reply (struct control_hdr + struct control_reply) into reply
 * (at least 64 bytes). Returns the reply's length. Closes fds. When tg_out is not NULL and the
 * process started without CONTROL_EXEC_DETACH, *tg_out gets a reference on it (else NULL).
 */
int control_serve(struct kernel *k, const void *msg, size_t len, int *fds, int nfds, void *reply,
		  struct thread_group **tg_out);
/* control_serve for a process of pod member m (NULL: the sandbox's own container). */
int control_serve_member(struct kernel *k, struct control_member *m, const void *msg, size_t len,
			 int *fds, int nfds, void *reply, struct thread_group **tg_out);

/*
 * Starts the control server on listen_fd (a listening SOCK_SEQPACKET unix socket, owned from
 * now on). Call after the sentry confined itself and started forwarding host signals (its
 * threads inherit the blocked mask). Returns 0 or -errno.
 */
int control_server_start(struct kernel *k, int listen_fd);

/*
 * Waits until no checkpoint is being written or answered. main calls it when pid 1 has ended:
 * a checkpoint that ends the sandbox kills pid 1 before it replies, and the sentry must not exit
 * before the reply is sent.
 */
void control_checkpoint_barrier(void);

/*
 * Waits (at most a minute) until every CONTROL_OOM_WAIT answered with an OOM kill has been hung
 * up by its peer: husk-oomwatch hangs up once the kill is an OOM of the host cgroup too, and an
 * engine removes that cgroup as soon as the sentry is gone. main calls it when pid 1 has ended.
 */
void control_oom_barrier(struct kernel *k);
/* husk started a husk-oomwatch for the sandbox (--oom-reporter): control_oom_barrier waits for
 * every kill to be reported. */
void control_oom_expect_reporter(void);

/* The listening control socket's fd, or -1: sentry/filter.c allows accept4 on it only. */
int control_listen_fd(void);

/* Records the listening fd before the filter is built (main, from --control-fd). */
void control_set_listen_fd(int fd);

struct seccomp_filter;
struct task;

/*
 * What config.json's process gives every process of the container, pid 1 and those husk exec
 * starts: capability sets (when has_caps), no_new_privs, and the seccomp filter (linux.seccomp,
 * or NULL).
 */
struct control_guest_defaults {
	bool has_caps;
	uint64_t cap_bounding, cap_effective, cap_inheritable, cap_permitted, cap_ambient;
	bool no_new_privs;
	struct seccomp_filter *seccomp;
};

/*
 * Records the defaults (main, before the control server starts; a reference is taken on the
 * filter) that kernel_spawn applies to each process it starts. Also applies them to t (pid 1)
 * when t is non-NULL. Returns 0 or -errno of seccomp_attach.
 */
int control_set_guest_defaults(const struct control_guest_defaults *d, struct task *t);

/*
 * Pods (container.c, runtime/control_pod.h): member containers started in this sandbox. A
 * member has its own mount tree (its gofers' root overlay and mounts, built by main.c's set-up
 * hook on the control thread with vfs_setup_root_begin), its own init process, and its
 * processes carry its number (thread_group.container, inherited by fork). They share the
 * sandbox's pid namespace, network stack, IPC and memory accounting.
 */
#include <sys/resource.h>

#include "sentry/vfs/vfs.h"

struct gofer_client;

#define CONTROL_MEMBER_MAX_GOFERS 17

/* What main.c's set-up hook makes of a member's husk-sentry argv. */
struct control_member_setup {
	struct vfs_path root; /* its mount tree (one reference each on mnt and node) */
	struct control_guest_defaults guest; /* caps, no_new_privs, seccomp (a reference) */
	char **argv; /* PROGRAM ARGS: pointers into the argv given to the hook */
	char **envp; /* malloc'd array of pointers into that argv */
	const char *cwd;
	uint32_t uid, gid;
	int ngroups;
	uint32_t groups[32];
	int32_t umask; /* -1: 022 */
	int oom_score_adj;
	struct rlimit rlimits[16]; /* LINUX_RLIM_NLIMITS */
	int stdio[3]; /* host fds or -1 (owned) */
	int gate_fd; /* its exec.fifo (owned) */
	int npreserve;
	int preserve[64]; /* --preserve-fds (owned) */
	int ngofers;
	struct gofer_client *gofers[CONTROL_MEMBER_MAX_GOFERS]; /* root first, then volumes */
	uint64_t memory_limit; /* linux.resources.memory.limit (--memory-limit); 0: none */
	bool private_pids; /* --private-pids: hidden from the others and they from it */
	bool oom_reporter; /* --oom-reporter: husk started a husk-oomwatch for it */
	int pids_limit; /* linux.resources.pids.limit (--pids-limit); 0: none */
};

struct control_member {
	int32_t num; /* thread_group.container of its processes, from 1 */
	char id[256];
	struct control_member_setup s;
	int refs; /* members_lock (container.c) */
	/* Its memory limit (atomics): 0 none; its OOM kills; bytes charged since the last check. */
	uint64_t memory_limit, oom_kills, charged;
	/* oom_lock (container.c): the kills its husk-oomwatch reported (s.oom_reporter). */
	uint64_t oom_reported;
	bool ending; /* atomic: its init ended, its processes are being killed */
};

/*
 * The set-up hook (main.c): parses argv (argc strings) as a member's husk-sentry options and
 * builds its tree. fds[i] is the host fd the argv names slots[i]; the hook takes every one of
 * them (keeps or closes). Returns 0 or -errno with why set.
 */
typedef int (*control_member_setup_fn)(struct kernel *k, int argc, char **argv, const int *fds,
				       const int32_t *slots, int nfds,
				       struct control_member_setup *out, char *why, size_t whylen);
void control_set_member_setup(control_member_setup_fn fn);

/*
 * Serves CONTROL_CONTAINER_CREATE (msg, len bytes, with nfds fds, all taken) on fd: starts the
 * member, replies, and stays until its init ends (CONTROL_EXITED) and its connection closes;
 * then the member is gone. Called on the connection's thread.
 */
void control_container_create(struct kernel *k, int fd, const void *msg, size_t len, int *fds,
			      int nfds);

/*
 * Serves CONTROL_CONTAINER_TARGET (msg, len bytes) on fd: reads the request that follows and
 * serves it for that member. Called on the connection's thread.
 */
void control_container_target(struct kernel *k, int fd, const void *msg, size_t len);

/*
 * A pod member's memory, as its /sys/fs/cgroup shows it (sentry/fs/sys): the resident memory
 * of its processes, its limit (0: none) and its OOM kills. Returns 0, or -ESRCH when num is no
 * member's.
 */
int control_member_memory(struct kernel *k, int32_t num, uint64_t *usage, uint64_t *limit,
			  uint64_t *oom_kills);

/*
 * Waits until member m's OOM kills pass kills, or fd's peer hangs up (-EPIPE); *total gets its
 * count. For an OOM report request aimed at a member (CONTROL_CONTAINER_TARGET). Returns 0 or
 * -EPIPE.
 */
int control_member_oom_wait(struct control_member *m, int fd, uint64_t kills, uint64_t *total);

/* How many pod members the sandbox has now. */
int control_container_count(void);

/* Makes k's memory file charge every allocation to the members' limits (idempotent). */
void control_members_init(struct kernel *k);

/* server.c's CONTROL_STATS answer (the sandbox's figures), for container.c. */
void control_serve_stats(struct kernel *k, int fd, size_t len);

#endif
