/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sentry's side of the gofer protocol (gofer/proto.h): one function per message, each a
 * synchronous request and reply over the SOCK_SEQPACKET socket. Thread-safe (one request in
 * flight at a time). Handles are the gofer's numbers for nodes the sentry walked to; the sentry
 * owns each handle it receives until it closes it with gofer_close().
 *
 * Every reply is validated before it is used: a malformed reply gives -EIO, never a crash.
 */
#ifndef HUSK_SENTRY_FS_GOFER_CLIENT_H
#define HUSK_SENTRY_FS_GOFER_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* struct gofer_attr, struct gofer_statfs and struct gofer_dirent are the protocol's. */
#include "gofer/proto.h"

struct gofer_client;

/* Takes ownership of sock. Returns 0 and *out or -errno. */
int gofer_client_create(int sock, struct gofer_client **out);
void gofer_client_destroy(struct gofer_client *c);

/* Attaches to the served root. Returns 0 with its handle and attributes, or -errno. */
int gofer_mount(struct gofer_client *c, uint64_t *root, struct gofer_attr *attr);

/*
 * Walks names[0..n) from dir, one component at a time, stopping after a symlink or at the
 * first missing component. Fills handles[i] and attrs[i] for each component reached. Returns
 * the number of components reached (0..n; fewer than n means the next was missing: the
 * caller knows why from that), or -errno for a failure of the walk itself (-ENOTDIR, -EACCES).
 * A walk that reached a symlink stops after it (attrs[i] says S_IFLNK) even when names remain;
 * otherwise fewer than n means names[return value] does not exist. Names must be single
 * components: -EINVAL for "", ".", "..", or one holding '/' or NUL; -ENAMETOOLONG past 255
 * bytes. n may exceed GOFER_WALK_MAX (several messages are sent). On failure no handle is left
 * to close. attrs may be NULL.
 */
int gofer_walk(struct gofer_client *c, uint64_t dir, const char *const *names, int n,
	       uint64_t *handles, struct gofer_attr *attrs);
int gofer_stat(struct gofer_client *c, uint64_t h, struct gofer_attr *attr);
/* Opens h with flags (O_RDONLY/O_WRONLY/O_RDWR, O_TRUNC, O_APPEND, O_DIRECTORY; never O_CREAT)
 * and receives a host FD for it. Returns the FD or -errno. */
int gofer_open(struct gofer_client *c, uint64_t h, int flags);
/* Reads the target of symlink h into buf (not NUL-terminated). Returns its length or -errno. */
ssize_t gofer_readlink(struct gofer_client *c, uint64_t h, char *buf, size_t len);

/*
 * Reads entries of directory h starting at cookie off (0 for the start), calling fn for each
 * until fn returns non-zero or the reply's entries are used up. Returns the number of entries
 * passed to fn (0 at the end of the directory) or -errno. The entry for which fn returned
 * non-zero counts as passed; fn runs without the client's lock held. "." and ".." are never
 * listed.
 */
int gofer_getdents(struct gofer_client *c, uint64_t h, int64_t off,
		   int (*fn)(void *arg, const struct gofer_dirent *d), void *arg);
/*
 * As gofer_getdents, asking for at most max bytes of encoded entries (gofer_dirent_size() of
 * each; 1..GOFER_GETDENTS_MAX). -EINVAL when the next entry does not fit in max.
 */
int gofer_getdents_max(struct gofer_client *c, uint64_t h, int64_t off, uint32_t max,
		       int (*fn)(void *arg, const struct gofer_dirent *d), void *arg);
int gofer_statfs(struct gofer_client *c, uint64_t h, struct gofer_statfs *st);
/* Releases handles; batched in one message (GOFER_CLOSE_MAX handles each). Errors are logged,
 * not returned. */
void gofer_close(struct gofer_client *c, const uint64_t *handles, int n);

#endif
