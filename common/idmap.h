/* SPDX-License-Identifier: Apache-2.0 */
/*
 * User and group id mappings (a user namespace's uid_map / gid_map, OCI's linux.uidMappings and
 * gidMappings): extents of (inside, outside, count). The guest's ids are the inside ids; the
 * host's (what the gofer gives files) the outside ones. An empty map is the identity (the
 * host's initial user namespace, "0 0 4294967295"). Shared by the runtime (which writes the
 * option), the sentry (which shows it in /proc/PID/uid_map) and the gofer (which maps owners).
 */
#ifndef HUSK_COMMON_IDMAP_H
#define HUSK_COMMON_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Linux's limit on the lines of a map (UID_GID_MAP_MAX_EXTENTS is 340; OCI configs use few). */
#define IDMAP_MAX_EXTENTS 32

/* The id unmapped ids show as (Linux's overflowuid / overflowgid default). */
#define IDMAP_OVERFLOW_ID 65534u

struct idmap_extent {
	uint32_t inside, outside, count;
};

struct idmap {
	uint32_t n; /* 0: identity */
	struct idmap_extent e[IDMAP_MAX_EXTENTS];
};

/*
 * Parses "INSIDE:OUTSIDE:COUNT[,INSIDE:OUTSIDE:COUNT...]" into *m, with Linux's checks on a
 * uid_map write: count >= 1, no range past 2^32 - 1, no two extents overlapping inside or
 * outside. Returns 0, or -EINVAL (*m is then empty).
 */
int idmap_parse(const char *s, struct idmap *m);

/* Writes m in idmap_parse's syntax into buf (len bytes, NUL-terminated). Returns 0 or -ENOSPC. */
int idmap_format(const struct idmap *m, char *buf, size_t len);

/* The outside id of inside id `in`: true with *out set, false when it is not mapped. */
static inline bool idmap_to_outside(const struct idmap *m, uint32_t in, uint32_t *out)
{
	if (!m->n) {
		*out = in;
		return true;
	}
	for (uint32_t i = 0; i < m->n; i++) {
		if (in >= m->e[i].inside && in - m->e[i].inside < m->e[i].count) {
			*out = m->e[i].outside + (in - m->e[i].inside);
			return true;
		}
	}
	return false;
}

/*
 * The outside id of inside ids in .. in + count - 1 when all of them lie in one extent (Linux's
 * map_id_range_down): true with *out set, false otherwise. count is at least 1.
 */
static inline bool idmap_range_to_outside(const struct idmap *m, uint32_t in, uint32_t count,
					  uint32_t *out)
{
	if (!m->n) {
		*out = in;
		return true;
	}
	for (uint32_t i = 0; i < m->n; i++) {
		if (in >= m->e[i].inside && in - m->e[i].inside < m->e[i].count &&
		    count - 1 <= m->e[i].count - 1 - (in - m->e[i].inside)) {
			*out = m->e[i].outside + (in - m->e[i].inside);
			return true;
		}
	}
	return false;
}

/* The inside id of outside id `out`: true with *in set, false when it is not mapped. */
static inline bool idmap_to_inside(const struct idmap *m, uint32_t out, uint32_t *in)
{
	if (!m->n) {
		*in = out;
		return true;
	}
	for (uint32_t i = 0; i < m->n; i++) {
		if (out >= m->e[i].outside && out - m->e[i].outside < m->e[i].count) {
			*in = m->e[i].inside + (out - m->e[i].outside);
			return true;
		}
	}
	return false;
}

/* The inside id of `out`, or IDMAP_OVERFLOW_ID when it is not mapped (as stat(2) shows it). */
uint32_t idmap_to_inside_or_overflow(const struct idmap *m, uint32_t out);

#endif
