/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The container's id mappings as the sentry and the gofers take them (--uid-map, --gid-map):
 * linux.uidMappings / gidMappings, which apply when the config asks for a user namespace (as
 * runc). The sentry shows them in /proc/PID/uid_map and gid_map; a gofer gives the files the
 * guest creates their mapped (host) owners and shows host owners mapped back (sandbox.c).
 */
#include <errno.h>
#include <stdio.h>

#include "common/idmap.h"
#include "runtime/oci.h"

int sandbox_id_map(const struct oci_config *cfg, bool gid, char *buf, size_t len)
{
	const struct oci_id_mapping *m = gid ? cfg->gid_mappings : cfg->uid_mappings;
	size_t n = gid ? cfg->ngid_mappings : cfg->nuid_mappings;
	struct idmap check;
	size_t off = 0;

	if (!n || !oci_config_namespace(cfg, "user"))
		return 0;
	for (size_t i = 0; i < n; i++) {
		int w = snprintf(buf + off, len - off, "%s%u:%u:%u", i ? "," : "",
				 m[i].container_id, m[i].host_id, m[i].size);

		if (w < 0 || (size_t)w >= len - off)
			return -EINVAL;
		off += (size_t)w;
	}
	/* Linux's rules on a uid_map write: no overlap, nothing past the last id. */
	return idmap_parse(buf, &check) < 0 ? -EINVAL : 1;
}

const char *sandbox_ids_unmapped(const struct oci_config *cfg)
{
	char m[2048];
	struct idmap um, gm;
	uint32_t out;

	if (sandbox_id_map(cfg, false, m, sizeof(m)) <= 0 || idmap_parse(m, &um) < 0)
		um.n = 0;
	if (sandbox_id_map(cfg, true, m, sizeof(m)) <= 0 || idmap_parse(m, &gm) < 0)
		gm.n = 0;
	/* runc's wording (libcontainer's setupUser). */
	if (um.n && !idmap_to_outside(&um, cfg->uid, &out))
		return "cannot set uid to unmapped user in user namespace";
	if (gm.n && !idmap_to_outside(&gm, cfg->gid, &out))
		return "cannot set gid to unmapped user in user namespace";
	for (size_t i = 0; gm.n && i < cfg->nadditional_gids; i++)
		if (!idmap_to_outside(&gm, cfg->additional_gids[i], &out))
			return "cannot set gid to unmapped user in user namespace";
	return NULL;
}
