/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the gofer unit tests: a served temporary tree and a gofer server in a child. */
#ifndef HUSK_TESTS_UNIT_GOFER_HELPERS_H
#define HUSK_TESTS_UNIT_GOFER_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "gofer/proto.h"
#include "gofer/server.h"

/* Number of files in many/ and of nested directories in deep/. */
#define TREE_MANY 40
#define TREE_DEEP 70

/*
 * Creates a temporary directory (its path in dir, 64 bytes) holding:
 *   file ("hello gofer\n"), a/b/c ("deep\n"), sub/ (empty), many/f00..f39,
 *   deep/d/d/.../d (TREE_DEEP levels), fifo (a FIFO),
 *   passwd_link -> /etc/passwd, up_link -> ../../..
 * Aborts the test on failure.
 */
void tree_create(char *dir);
/* Removes the tree (rm -rf). */
void tree_remove(const char *dir);

/*
 * Forks a child running gofer_server_serve over dir (or over a regular file: a file bind's
 * gofer) with cfg, without confinement. Returns its
 * pid; *sock is the other end of the SOCK_SEQPACKET socketpair. The child exits 0 when the
 * socket is closed, 1 when serving failed.
 */
pid_t server_start(const char *dir, const struct gofer_server_config *cfg, int *sock);
/* Waits for pid; returns its exit code, or 128 + signal when it was killed. */
int child_wait(pid_t pid);

/*
 * Sends msg[0..len) and receives one reply into rep (GOFER_MSG_MAX bytes). Returns its length.
 * FDs that came with it are stored in *fd (first one; others closed) or closed when fd is NULL;
 * *fd is -1 when none came. Aborts the test when the socket fails or is closed.
 */
size_t raw_call(int sock, const void *msg, size_t len, void *rep, int *fd);

/* Encodes req (tag set by the caller), sends it, and decodes the reply into *rep. Returns the
 * reply's error (0 or a positive errno); asserts the reply is well-formed and matches. */
int raw_req(int sock, const struct gofer_req *req, void *buf, struct gofer_rep *rep, int *fd);

#endif
