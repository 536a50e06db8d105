/* SPDX-License-Identifier: Apache-2.0 */
/* Id mappings (idmap.h): pure functions. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/idmap.h"

/* True when [a, a + an) and [b, b + bn) share an id (counts >= 1, no overflow). */
static bool overlap(uint64_t a, uint64_t an, uint64_t b, uint64_t bn)
{
	return a < b + bn && b < a + an;
}

/* Parses one unsigned 32-bit decimal number at *s, moving *s past it. */
static int parse_u32(const char **s, uint32_t *out)
{
	char *end;
	unsigned long long v;

	if (**s < '0' || **s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(*s, &end, 10);
	if (errno || v > UINT32_MAX)
		return -EINVAL;
	*s = end;
	*out = (uint32_t)v;
	return 0;
}

int idmap_parse(const char *s, struct idmap *m)
{
	memset(m, 0, sizeof(*m));
	if (!s || !*s)
		return -EINVAL;
	for (;;) {
		struct idmap_extent x;

		if (m->n >= IDMAP_MAX_EXTENTS || parse_u32(&s, &x.inside) < 0 || *s++ != ':' ||
		    parse_u32(&s, &x.outside) < 0 || *s++ != ':' || parse_u32(&s, &x.count) < 0)
			goto bad;
		/* Linux's map_write: no empty extent, no range past the last id. */
		if (x.count == 0 || (uint64_t)x.inside + x.count > UINT32_MAX ||
		    (uint64_t)x.outside + x.count > UINT32_MAX)
			goto bad;
		for (uint32_t i = 0; i < m->n; i++) {
			if (overlap(x.inside, x.count, m->e[i].inside, m->e[i].count) ||
			    overlap(x.outside, x.count, m->e[i].outside, m->e[i].count))
				goto bad;
		}
		m->e[m->n++] = x;
		if (!*s)
			return 0;
		if (*s++ != ',')
			goto bad;
	}
bad:
	memset(m, 0, sizeof(*m));
	return -EINVAL;
}

int idmap_format(const struct idmap *m, char *buf, size_t len)
{
	size_t off = 0;

	if (!len)
		return -ENOSPC;
	buf[0] = '\0';
	for (uint32_t i = 0; i < m->n; i++) {
		int w = snprintf(buf + off, len - off, "%s%" PRIu32 ":%" PRIu32 ":%" PRIu32,
				 i ? "," : "", m->e[i].inside, m->e[i].outside, m->e[i].count);

		if (w < 0 || (size_t)w >= len - off)
			return -ENOSPC;
		off += (size_t)w;
	}
	return 0;
}

uint32_t idmap_to_inside_or_overflow(const struct idmap *m, uint32_t out)
{
	uint32_t in;

	return idmap_to_inside(m, out, &in) ? in : IDMAP_OVERFLOW_ID;
}
