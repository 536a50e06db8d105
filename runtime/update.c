/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk update [--memory BYTES] [--pids-limit N] [-r FILE|-] ID: changes the memory and pids
 * limits (-r reads linux.resources JSON, as runc update -r) of the running sentry, which enforces
 * them for the guest at once (CONTROL_UPDATE: a memory limit below the usage OOM-kills down to
 * it), and of the sandbox's host cgroup.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "common/cleanup.h"
#include "runtime/control.h"
#include "runtime/oci.h"

/* Sends the new limits to the sandbox's sentry (control.sock) and waits for its answer. */
static int sentry_update(struct container *c, int64_t memory, int64_t pids)
{
	_cleanup_free_ char *path = container_path(c, "control.sock");
	char msg[CONTROL_UPDATE_MSG_LEN];
	size_t len = control_encode_update(memory, pids, msg);

	return path ? control_call(path, msg, len) : -ENOMEM;
}

static int parse_bytes(const char *s, int64_t *out)
{
	char *end;
	long long v = strtoll(s, &end, 10);

	if (end == s)
		return -EINVAL;
	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		end++;
		break;
	case 'g':
	case 'G':
		v <<= 30;
		end++;
		break;
	default:
		break;
	}
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end)
		return -EINVAL;
	*out = v < 0 ? -1 : v;
	return 0;
}

int cmd_update(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "memory", required_argument, NULL, 'm' },
		{ "pids-limit", required_argument, NULL, 'p' },
		{ "resources", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	int64_t memory = -2, pids = -2;
	struct container c;
	int opt, ret = 0;

	optind = 1;
	while ((opt = getopt_long_only(argc, argv, "+r:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'm':
			if (parse_bytes(optarg, &memory) < 0)
				return oci_fail("invalid value for --memory: %s", optarg);
			break;
		case 'p':
			pids = strtoll(optarg, NULL, 10);
			if (pids <= 0)
				pids = -1;
			break;
		case 'r': {
			json_error_t jerr;
			json_t *r = !strcmp(optarg, "-") ? json_loadf(stdin, 0, &jerr) :
							   json_load_file(optarg, 0, &jerr);
			json_t *v;

			if (!r || !json_is_object(r))
				return oci_fail("resources %s: %s", optarg,
						r ? "expected an object" : jerr.text);
			v = json_object_get(json_object_get(r, "memory"), "limit");
			if (json_is_integer(v))
				memory = json_integer_value(v) < 0 ? -1 : json_integer_value(v);
			v = json_object_get(json_object_get(r, "pids"), "limit");
			if (json_is_integer(v))
				pids = json_integer_value(v) <= 0 ? -1 : json_integer_value(v);
			json_decref(r);
			break;
		}
		default:
			return 1;
		}
	}
	if (optind != argc - 1)
		return oci_fail("update: expected exactly one container id");
	if (oci_load_or_fail(argv[optind], &c))
		return 1;
	if (container_status(&c) == CONTAINER_STOPPED)
		ret = oci_fail("container not running");
	/* The sentry first: a lower memory limit kills down to it there before the host's. */
	if (!ret) {
		int r = sentry_update(&c, memory, pids);
		if (r < 0)
			ret = oci_fail("update: the sandbox's control socket: %s", strerror(-r));
	}
	/*
	 * As at create, the host cgroup gets no pids limit: it would count the sentry's own
	 * threads and stubs (a low one stops the sentry from serving its control socket).
	 */
	if (!ret && c.cgroup) {
		int r = cgroup_update(c.cgroup, memory, -2);
		if (r < 0)
			ret = oci_fail("update: %s", strerror(-r));
	}
	container_release(&c);
	return ret;
}
