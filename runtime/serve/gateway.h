/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The credential gateway of husk serve (GATEWAY.md beside this file): secrets live in the
 * server process only; a sandbox's sentry passes each guest connection to the gateway address
 * over a unix socket, and the gateway adds the secret's header to the guest's HTTP request and
 * forwards it over verified TLS to a host the secret allows, relaying the answer.
 *
 * Threads: gateway_listen starts one thread that accepts the runtime's connections and receives
 * the guest connections; each guest connection is served by a thread of its own. Every
 * function here may be called from any thread.
 */
#ifndef HUSK_RUNTIME_SERVE_GATEWAY_H
#define HUSK_RUNTIME_SERVE_GATEWAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One --secret NAME=@FILE,host=HOST[,host=HOST2...],header=HEADER[,prefix=PREFIX]. */
struct gateway_secret {
	char *name;
	char *value; /* read from FILE, trailing newline dropped: never logged nor written */
	char **hosts; /* lower case, without a trailing dot; nhosts of them */
	int nhosts;
	char *header; /* the header's name as given */
	char *prefix; /* put before the value ("Bearer "); "" when none */
};

/*
 * Parses spec (without "--secret ") into *out and reads the secret's file. Names are
 * [A-Za-z0-9_.-]; hosts are DNS names ([a-z0-9.-], any case); the header is an HTTP token other
 * than Host, Connection, Content-Length and Transfer-Encoding; the value may not be empty nor
 * hold control characters (it goes in a header). Returns 0, or -errno with a message naming
 * the problem in why (never the value). *out is the caller's to free with gateway_secret_clear.
 */
int gateway_parse_secret(const char *spec, struct gateway_secret *out, char *why, size_t why_len);
/* Frees what *s holds, wiping the value first; *s is zeroed. */
void gateway_secret_clear(struct gateway_secret *s);

struct gateway_config {
	const struct gateway_secret *secrets; /* copied by gateway_new */
	int nsecrets;
	const char *ca_file; /* --gateway-ca: a PEM CA trusted beside the system's, or NULL */
	/* --gateway-resolve HOST:IP (IPv4 or IPv6): HOST is reached at IP, not through DNS.
	 * nresolve of them. */
	const char *const *resolve;
	int nresolve;
	int timeout_ms; /* per read, write or connect; 0: 30 s */
};

struct gateway;

/*
 * A gateway for cfg: loads the CAs (the system's, then ca_file) and copies the secrets.
 * Returns it, or NULL with the reason in why (a bad CA file, a bad --gateway-resolve, two
 * secrets of one name, no memory).
 */
struct gateway *gateway_new(const struct gateway_config *cfg, char *why, size_t why_len);
/*
 * Listens on the unix socket path (SOCK_SEQPACKET, mode 0600; a stale socket there is
 * replaced) and starts serving it on a thread of its own. Returns 0, or -errno with why set.
 * Once only per gateway.
 */
int gateway_listen(struct gateway *g, const char *path, char *why, size_t why_len);
/* Whether g has a secret of that name. */
bool gateway_has_secret(const struct gateway *g, const char *name);
/*
 * Lets sandbox_id use the secrets names[0..n) (replacing what it was allowed before; n 0:
 * none). Decided by the server, never by the sandbox. Returns 0, -ENOENT when a name is not a
 * secret of g (nothing changed), -ENOMEM.
 */
int gateway_allow(struct gateway *g, const char *sandbox_id, const char *const *names, int n);
/* Forgets sandbox_id: its allowance and its statistics. */
void gateway_forget(struct gateway *g, const char *sandbox_id);

/* Requests of one sandbox through the gateway since gateway_allow. */
struct gateway_stats {
	uint64_t forwarded; /* sent upstream, whatever the answer */
	uint64_t refused; /* 403: no secret of the sandbox allows the host */
	uint64_t failed; /* malformed requests, upstream connect or TLS failures, timeouts */
};

/* Fills *out for sandbox_id. Returns 0, or -ENOENT for a sandbox the gateway does not know. */
int gateway_get_stats(struct gateway *g, const char *sandbox_id, struct gateway_stats *out);

/*
 * Stops listening (removes the socket), closes the runtime's connections and frees g once
 * the requests in flight have ended (each within its timeouts).
 */
void gateway_free(struct gateway *g);

#endif
