/* SPDX-License-Identifier: Apache-2.0 */
/* husk pause ID: freezes the sandbox's cgroup (sentry, stubs and gofer together). */
#include <errno.h>
#include <string.h>

#include "runtime/oci.h"

int oci_set_frozen(const char *id, bool frozen)
{
	struct container c;
	enum container_status s;
	int ret = 0;

	if (oci_load_or_fail(id, &c))
		return 1;
	s = container_status(&c);
	if (frozen && s != CONTAINER_RUNNING)
		ret = oci_fail("container not running");
	else if (!frozen && s != CONTAINER_PAUSED)
		ret = oci_fail("container not paused");
	else if (!c.cgroup)
		ret = oci_fail("container %s has no cgroup to freeze", id);
	if (!ret) {
		int r = cgroup_freeze(c.cgroup, frozen);
		if (r == -ENOTSUP)
			ret = oci_fail("pause needs a freezer cgroup (v1 freezer or v2 "
				       "cgroup.freeze), and this host has none");
		else if (r < 0)
			ret = oci_fail("%s: %s", frozen ? "pause" : "resume", strerror(-r));
	}
	container_release(&c);
	return ret;
}

int cmd_pause(int argc, char **argv)
{
	if (argc != 2)
		return oci_fail("pause: expected exactly one container id");
	return oci_set_frozen(argv[1], true);
}
