/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What husk-agent's files share (husk_agent.c: the command line, errors, JSON, init and the file
 * commands; agent_tar.c: tar-x and tar-c). A failing helper never returns: it prints one line on
 * stderr and exits with one of the codes below, which husk serve maps onto HTTP statuses.
 */
#ifndef HUSK_RUNTIME_SERVE_AGENT_H
#define HUSK_RUNTIME_SERVE_AGENT_H

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <sys/types.h>

#define EXIT_OTHER 1
#define EXIT_USAGE 2 /* bad usage, a bad path, a bad or hostile archive */
#define EXIT_NOT_FOUND 3 /* ENOENT */
#define EXIT_NOT_DIR 4 /* ENOTDIR, EISDIR */
#define EXIT_NO_SPACE 5 /* ENOSPC, EDQUOT, EFBIG */
#define EXIT_DENIED 6 /* EACCES, EPERM, EROFS */

#define IO_CHUNK 65536
#define AGENT_TMP_NAME_MAX (PATH_MAX + 64)

/*
 * The temporary file a failed put or tar-x member must not leave behind (a name in
 * agent_tmp_dirfd): set the name and dirfd, then agent_tmp_active, before creating it;
 * agent_tmp_forget() once it is renamed. agent_die() and the signals of
 * agent_catch_fatal_signals() remove it.
 */
extern int agent_tmp_dirfd;
extern char agent_tmp_name[AGENT_TMP_NAME_MAX];
extern volatile sig_atomic_t agent_tmp_active;
void agent_tmp_forget(void);

/* Removes the temporary file on SIGTERM, SIGINT, SIGHUP and SIGPIPE (then exits 1). */
void agent_catch_fatal_signals(void);

/* Prints "husk-agent: VERB: MESSAGE" on stderr and exits with CODE. */
void __attribute__((noreturn, format(printf, 2, 3))) agent_die(int code, const char *fmt, ...);

/* Dies with the exit code of errno ERR: "WHAT PATH: strerror(ERR)". */
void __attribute__((noreturn)) agent_die_errno(int err, const char *what, const char *path);

/* Writes S as a JSON string (escaped; invalid UTF-8 becomes U+FFFD). */
void agent_json_str(FILE *out, const char *s);

/* Flushes stdout, dying if the result could not be written. */
void agent_finish_stdout(void);

/* readlinkat(2) into a new string; NULL with errno set. HINT: lstat's size. */
char *agent_read_link(int dirfd, const char *name, size_t hint);

/* Writes all N bytes (retrying short writes and EINTR). Returns 0 or -errno. */
int agent_write_all(int fd, const void *buf, size_t n);

/* Reads N bytes, fewer only at EOF. Returns the count or -errno. */
ssize_t agent_read_full(int fd, void *buf, size_t n);

/*
 * The names of DIRFD's entries but . and .., sorted bytewise, in a new NULL-terminated array
 * (free it with agent_free_names). Returns 0 or -errno.
 */
int agent_list_dir(int dirfd, char ***names, size_t *count);
void agent_free_names(char **names);

/* mkdir -p (0755) of the directories in PATH before its last '/'. Dies on failure. */
void agent_make_parents(const char *path);

/* `husk-agent tar-x DIR` and `husk-agent tar-c PATH` (agent_tar.c). Return the exit code. */
int agent_tar_x(const char *dir);
int agent_tar_c(const char *path);

#endif
