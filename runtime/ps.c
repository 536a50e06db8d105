/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk ps [--format table|json] ID [PS-ARGS...]: the host processes of the sandbox (sentry,
 * stubs, gofer), from its cgroup, as runc ps lists a container's processes. The guest's own
 * processes live in the sentry and are not host processes.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/oci.h"

int cmd_ps(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	struct container c;
	bool json = false;
	pid_t *pids = NULL;
	int n, opt;

	optind = 1;
	while ((opt = getopt_long_only(argc, argv, "+f:", longopts, NULL)) != -1) {
		if (opt != 'f')
			return 1;
		json = !strcmp(optarg, "json");
	}
	if (optind >= argc)
		return oci_fail("ps: expected a container id");
	if (oci_load_or_fail(argv[optind], &c))
		return 1;
	if (container_status(&c) == CONTAINER_STOPPED) {
		container_release(&c);
		return oci_fail("container not running");
	}
	n = c.cgroup ? cgroup_pids(c.cgroup, &pids) : 0;
	if (n <= 0) {
		free(pids);
		pids = calloc(1, sizeof(pid_t));
		if (!pids)
			return oci_fail("out of memory");
		pids[0] = c.pid;
		n = 1;
	}
	container_release(&c);
	if (json) {
		printf("[");
		for (int i = 0; i < n; i++)
			printf("%s%d", i ? "," : "", (int)pids[i]);
		printf("]\n");
		free(pids);
		return 0;
	}
	{
		/* ps -ef (or the given ps arguments) for those pids only. */
		char **pargv = calloc((size_t)(argc - optind) + 4, sizeof(char *));
		char *list = calloc((size_t)n, 12);
		size_t len = 0;
		int k = 0;

		if (!pargv || !list)
			return oci_fail("out of memory");
		for (int i = 0; i < n; i++)
			len += (size_t)sprintf(list + len, "%s%d", i ? "," : "", (int)pids[i]);
		pargv[k++] = "ps";
		if (optind + 1 < argc) {
			for (int i = optind + 1; i < argc; i++)
				pargv[k++] = argv[i];
		} else {
			pargv[k++] = "-f";
		}
		pargv[k++] = "-p";
		pargv[k++] = list;
		pargv[k] = NULL;
		fflush(stdout);
		execvp("ps", pargv);
		return oci_fail("ps: cannot run ps");
	}
}
