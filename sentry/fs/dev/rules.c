/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device rules (config.json linux.resources.devices), as the device cgroup applies them:
 * every open and mknod of a device node passes devfs_check (dev.h). Kept apart from the devices
 * so that what checks them links without them. The device programs a guest attached to its
 * cgroup with bpf(2) (sentry/fs/cgroup/bpf.c) are run after them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sentry/fs/cgroup/cgroup.h"
#include "sentry/fs/dev/dev.h"
#include "sentry/kernel/current.h"

#pragma weak cgroup_bpf_dev_check

static struct devfs_rule *dev_rules; /* owned; set once before the guest runs */
static size_t dev_nrules;

int devfs_set_rules(const struct devfs_rule *rules, size_t n)
{
	struct devfs_rule *v = n ? calloc(n, sizeof(*v)) : NULL;

	if (n && !v)
		return -ENOMEM;
	if (n)
		memcpy(v, rules, n * sizeof(*v));
	free(dev_rules);
	dev_rules = v;
	dev_nrules = n;
	return 0;
}

static bool rule_matches(const struct devfs_rule *r, char type, uint32_t major, uint32_t minor)
{
	return (r->type == 'a' || r->type == type) &&
	       (r->major < 0 || (uint32_t)r->major == major) &&
	       (r->minor < 0 || (uint32_t)r->minor == minor);
}

int devfs_check(char type, uint32_t major, uint32_t minor, unsigned int access)
{
	/* As the device cgroup: each access bit asked for is decided by the last rule that
	 * matches the device and names the bit; with no such rule, the access is allowed. */
	for (unsigned int bit = DEVFS_ACC_READ; bit <= DEVFS_ACC_MKNOD; bit <<= 1) {
		bool allow = true;

		if (!(access & bit))
			continue;
		for (size_t i = 0; i < dev_nrules; i++) {
			if ((dev_rules[i].access & bit) &&
			    rule_matches(&dev_rules[i], type, major, minor))
				allow = dev_rules[i].allow;
		}
		if (!allow)
			return -EPERM;
	}
	/* The calling task's cgroup's programs (weak: unit tests link this without them). */
	if (cgroup_bpf_dev_check)
		return cgroup_bpf_dev_check(task_current(), type, major, minor, access);
	return 0;
}
