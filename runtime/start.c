/* SPDX-License-Identifier: Apache-2.0 */
/* husk start ID: releases the start gate of a created container and runs poststart hooks. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "runtime/oci.h"

int oci_load_or_fail(const char *id, struct container *c)
{
	int ret = container_load(id, c);

	if (ret == -ENOENT) {
		container_release(c);
		return oci_fail("container %s does not exist", id);
	}
	if (ret < 0) {
		container_release(c);
		return oci_fail("container %s: %s", id, strerror(-ret));
	}
	return 0;
}

int cmd_start(int argc, char **argv)
{
	struct container c;
	enum container_status s;
	int ret;

	if (argc != 2)
		return oci_fail("start: expected exactly one container id");
	if (oci_load_or_fail(argv[1], &c))
		return 1;
	s = container_status(&c);
	if (s != CONTAINER_CREATED) {
		ret = oci_fail(s == CONTAINER_STOPPED ?
				       "cannot start a container that has stopped" :
				       "cannot start an already running container");
		container_release(&c);
		return ret;
	}
	if (hooks_run(&c, OCI_HOOK_START_CONTAINER, CONTAINER_CREATED) < 0) {
		container_release(&c);
		return 1;
	}
	ret = sandbox_release_gate(&c);
	if (ret < 0) {
		if (ret == -ENXIO)
			ret = oci_fail("cannot start a container that has stopped");
		else
			ret = oci_fail("start: %s", strerror(-ret));
		container_release(&c);
		return ret;
	}
	/* poststart failures are logged, not fatal (runtime-spec). */
	if (hooks_run(&c, OCI_HOOK_POSTSTART, CONTAINER_RUNNING) < 0)
		oci_warn("poststart hook failed");
	container_release(&c);
	return 0;
}
