/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk pause ID / husk resume ID: the sentry stops its own tasks (CONTROL_PAUSE,
 * sentry/kernel/freeze.c) and lets them go again; no cgroup freezer is needed (rootless, hybrid
 * cgroup layouts). A paused sandbox runs no guest code; its "paused" mark in the state folder
 * is what husk state reports.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/control.h"
#include "runtime/oci.h"

static int control_simple(const struct container *c, uint16_t op)
{
	_cleanup_free_ char *path = container_path(c, "control.sock");
	struct control_hdr h = { .magic = CONTROL_MAGIC, .version = CONTROL_VERSION, .op = op };

	return path ? control_call(path, &h, sizeof(h)) : -ENOMEM;
}

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
	if (!ret) {
		_cleanup_free_ char *mark = container_path(&c, "paused");
		int r = control_simple(&c, frozen ? CONTROL_PAUSE : CONTROL_RESUME);

		if (r < 0) {
			ret = oci_fail("%s: %s", frozen ? "pause" : "resume", strerror(-r));
		} else if (frozen) {
			int fd = mark ? open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0600) : -1;

			if (fd >= 0)
				close(fd);
		} else if (mark) {
			unlink(mark);
		}
		/* A cgroup frozen by somebody else is thawed too on resume. */
		if (!frozen && c.cgroup && cgroup_frozen(c.cgroup))
			cgroup_freeze(c.cgroup, false);
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
