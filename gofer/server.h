/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gofer's request dispatcher, separate from its confinement (gofer/confine.c) so that tests
 * and the fuzzer can run it over a temporary directory. Single-threaded: one request at a time.
 */
#ifndef HUSK_GOFER_SERVER_H
#define HUSK_GOFER_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/idmap.h"
#include "gofer/proto.h"

/* Default limit of live handles; past it WALK and MOUNT fail with ENFILE. */
#define GOFER_MAX_HANDLES 65536u

struct gofer_server;

struct gofer_server_config {
	bool readonly; /* refuse write access and O_TRUNC (EROFS) */
	uint32_t max_handles; /* 0 means GOFER_MAX_HANDLES */
	/*
	 * Owner mappings (copied), NULL for the identity: requests name guest owners, which the
	 * host gets mapped (unmapped: EOVERFLOW for a new node, EINVAL for SETSTAT); replies
	 * show host owners mapped back (unmapped: IDMAP_OVERFLOW_ID).
	 */
	const struct idmap *uid_map, *gid_map;
};

/*
 * Creates a server for the directory root_fd (any FD of it, O_PATH is enough), reopening handles
 * through proc_fd, an FD of /proc/self/fd. root_fd may also be a regular file (a file bind
 * mount): MOUNT then gives a handle of that file, and no request can name anything else (WALK,
 * GETDENTS and the write messages that take a directory get ENOTDIR). Takes ownership of both
 * FDs, even on failure. Returns 0 and *out, or -errno (-ENOTDIR: root_fd is neither).
 */
int gofer_server_create(int root_fd, int proc_fd, const struct gofer_server_config *cfg,
			struct gofer_server **out);
/* Closes every handle and frees s. */
void gofer_server_destroy(struct gofer_server *s);

/*
 * Handles one request packet req[0..len) and writes the reply into rep, which must hold
 * GOFER_MSG_MAX bytes. Returns the reply's length. Sets *fd to an FD to donate with the reply
 * (the caller sends it, then closes it) or to -1. Never fails: a bad request gets an error
 * reply; one whose header cannot be parsed gets EINVAL with type 0 and tag 0.
 */
size_t gofer_server_handle(struct gofer_server *s, const void *req, size_t len, void *rep, int *fd);

/*
 * Serves requests from sock (SOCK_SEQPACKET) until the peer closes it. A request carrying FDs
 * gets EINVAL (the FDs are closed); one longer than GOFER_MSG_MAX gets EINVAL with tag 0.
 * A zero-length packet cannot be told from end-of-stream and ends the loop.
 * Returns 0 when the peer closed the socket, or -errno when it failed. sock stays the caller's.
 */
int gofer_server_serve(struct gofer_server *s, int sock);

/* Number of live handles (for tests). */
uint32_t gofer_server_live_handles(const struct gofer_server *s);

#endif
