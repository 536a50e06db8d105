/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk delete [--force] ID: removes a stopped (or created) container: kills what is left of the
 * sandbox, removes its cgroups, runs poststop hooks and removes its state. A running or paused
 * container needs --force (then it is killed first), as with runc.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "runtime/oci.h"

int cmd_delete(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "force", no_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	struct container c;
	enum container_status s;
	bool force = false;
	int opt, ret;

	optind = 1;
	while ((opt = getopt_long_only(argc, argv, "+f", longopts, NULL)) != -1) {
		if (opt != 'f')
			return 1;
		force = true;
	}
	if (optind != argc - 1)
		return oci_fail("delete: expected exactly one container id");
	ret = container_load(argv[optind], &c);
	if (ret == -ENOENT) {
		container_release(&c);
		if (force)
			return 0; /* runc: --force on a missing container is not an error */
		return oci_fail("container %s does not exist", argv[optind]);
	}
	if (ret < 0 && c.lock_fd < 0) {
		container_release(&c);
		return oci_fail("container %s: %s", argv[optind], strerror(-ret));
	}
	/* A half-written record (create interrupted): delete what is there. */
	s = ret < 0 ? CONTAINER_STOPPED : container_status(&c);
	if ((s == CONTAINER_RUNNING || s == CONTAINER_PAUSED) && !force) {
		ret = oci_fail("cannot delete container %s that is not stopped: %s", c.id,
			       container_status_name(s));
		container_release(&c);
		return ret;
	}
	ret = container_destroy(&c);
	if (ret < 0)
		ret = oci_fail("delete %s: %s", c.id, strerror(-ret));
	container_release(&c);
	return ret;
}
