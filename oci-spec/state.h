/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The OCI state of a container as JSON (what `husk state`, `husk list --format json` and hooks
 * print or read), and the features document (`husk features`).
 */
#ifndef HUSK_OCI_SPEC_STATE_H
#define HUSK_OCI_SPEC_STATE_H

#include <stddef.h>
#include <sys/types.h>

#include "oci-spec/config.h"

struct oci_state {
	const char *id;
	const char *status; /* "creating", "created", "running", "paused", "stopped" */
	pid_t pid; /* 0 when stopped */
	const char *bundle; /* absolute */
	const char *rootfs; /* absolute; may be NULL */
	const char *created; /* RFC 3339 with nanoseconds, UTC; may be NULL */
	const char *owner; /* "" for root, as runc */
	const struct oci_kv *annotations;
	size_t nannotations;
};

/* Output shapes of oci_state_json. */
enum oci_state_format {
	OCI_STATE_RUNC, /* runc state: the runc fields, 2-space indentation */
	OCI_STATE_HOOK, /* OCI runtime-spec state, compact: what hooks get on stdin */
};

/* The state as JSON (malloc'd, no trailing newline), or NULL on allocation failure. */
char *oci_state_json(const struct oci_state *s, enum oci_state_format format);

/*
 * The states of a list of containers as `runc list --format json` prints them: one compact JSON
 * array. Returns a malloc'd string or NULL.
 */
char *oci_state_list_json(const struct oci_state *states, size_t n);

/*
 * The features document (runtime-spec features.md) of this build, indented; malloc'd or NULL.
 * platforms ("ptrace,seccomp": the backends the sentry has) and platform_auto (the one auto
 * picks on this host) become the annotations dev.husk.platforms and dev.husk.platform.auto;
 * NULL leaves the annotation out.
 */
char *oci_features_json(const char *platforms, const char *platform_auto);

/* Formats now (CLOCK_REALTIME) as RFC 3339 UTC with nanoseconds into buf (at least 40 bytes). */
void oci_timestamp_now(char *buf, size_t len);

#endif
