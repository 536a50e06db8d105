/* SPDX-License-Identifier: Apache-2.0 */
/* The default cgroup path of a container (runtime/README.md, "cgroup.c"). */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/oci.h"

/* One byte into a CRC-32 of POSIX cksum (polynomial 0x04C11DB7, most significant bit first). */
static uint32_t cksum_byte(uint32_t crc, unsigned char b)
{
	crc ^= (uint32_t)b << 24;
	for (int i = 0; i < 8; i++)
		crc = crc & 0x80000000u ? (crc << 1) ^ 0x04C11DB7u : crc << 1;
	return crc;
}

uint32_t cgroup_cksum(const char *s, size_t n)
{
	uint32_t crc = 0;

	for (size_t i = 0; i < n; i++)
		crc = cksum_byte(crc, (unsigned char)s[i]);
	/* Then the length, least significant byte first, as cksum(1) does. */
	for (size_t len = n; len; len >>= 8)
		crc = cksum_byte(crc, (unsigned char)(len & 0xff));
	return ~crc;
}

char *cgroup_default_path(const char *root, const char *id)
{
	char canon[PATH_MAX], dflt[PATH_MAX];
	char *out = NULL;

	/* The same root however it is spelt (a relative --root, a symlink to it). */
	if (!realpath(root, canon))
		snprintf(canon, sizeof(canon), "%s", root);
	if (!realpath(HUSK_DEFAULT_ROOT, dflt))
		snprintf(dflt, sizeof(dflt), "%s", HUSK_DEFAULT_ROOT);
	if (!strcmp(canon, dflt)) {
		if (asprintf(&out, "/husk/%s", id) < 0)
			return NULL;
		return out;
	}
	/* '@' is in no container id (container_id_valid): no id of the default root's is one of
	 * another root's. */
	if (asprintf(&out, "/husk/%s@%08x", id, cgroup_cksum(canon, strlen(canon))) < 0)
		return NULL;
	return out;
}
