/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk events [--stats] [--interval SECONDS] ID: with --stats prints one stats event; otherwise
 * prints a stats event every interval (default 5 s) until the container stops, as runc events
 * does ({"type":"stats","id":...,"data":{...}}, one JSON object per line).
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/control.h"
#include "runtime/oci.h"

/*
 * The sandbox's own usage and limits, asked of its sentry (CONTROL_STATS): what the guest sees in
 * /sys/fs/cgroup. Returns 0 or -errno (the sentry is gone, or too old to answer).
 */
static int sentry_stats(const struct container *c, struct control_stats *st)
{
	struct control_hdr h = { .magic = CONTROL_MAGIC,
				 .version = CONTROL_VERSION,
				 .op = CONTROL_STATS };
	_cleanup_free_ char *path = container_path(c, "control.sock");
	_cleanup_close_ int sock = path ? control_dial(path) : -ENOMEM;
	int ret;

	if (sock < 0)
		return sock;
	if (send(sock, &h, sizeof(h), MSG_NOSIGNAL) != sizeof(h))
		return -errno;
	ret = control_recv(sock, CONTROL_STATS_REPLY, st, sizeof(*st));
	return ret < 0 ? ret : st->err;
}

/*
 * One stats event: cpu, memory and pids from the sentry when it answers (the guest's own CPU
 * time, split into user and kernel as runc does, and the guest's usage and limits; the host
 * cgroup also counts the sentry and gofer, and its memory limit has a margin), else from the
 * host cgroup (cpu total only).
 */
static void print_stats(const struct container *c)
{
	struct cgroup_stats st;
	struct control_stats ss;
	json_t *o, *usage;
	bool split = false;
	char *s;

	cgroup_stats(c->cgroup ? c->cgroup : "/", &st);
	if (sentry_stats(c, &ss) == 0) {
		st.memory_usage = (int64_t)ss.memory_usage;
		st.memory_limit = (int64_t)ss.memory_limit;
		st.pids_current = ss.pids_current;
		st.pids_limit = ss.pids_limit;
		st.cpu_usage_ns = (int64_t)(ss.cpu_user + ss.cpu_kernel);
		split = true;
	}
	usage = json_pack("{s:I}", "total",
			  (json_int_t)(st.cpu_usage_ns < 0 ? 0 : st.cpu_usage_ns));
	if (usage && split) {
		json_object_set_new(usage, "kernel", json_integer((json_int_t)ss.cpu_kernel));
		json_object_set_new(usage, "user", json_integer((json_int_t)ss.cpu_user));
	}
	o = json_pack("{s:s,s:s,s:{s:{s:o},s:{s:{s:I,s:I}},s:{s:I,s:I}}}", "type", "stats", "id",
		      c->id, "data", "cpu", "usage", usage, "memory", "usage", "usage",
		      (json_int_t)(st.memory_usage < 0 ? 0 : st.memory_usage), "limit",
		      (json_int_t)(st.memory_limit < 0 ? 0 : st.memory_limit), "pids", "current",
		      (json_int_t)(st.pids_current < 0 ? 0 : st.pids_current), "limit",
		      (json_int_t)(st.pids_limit < 0 ? 0 : st.pids_limit));
	s = o ? json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT) : NULL;
	if (s)
		printf("%s\n", s);
	fflush(stdout);
	free(s);
	json_decref(o);
}

int cmd_events(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "stats", no_argument, NULL, 's' },
		{ "interval", required_argument, NULL, 'i' },
		{ NULL, 0, NULL, 0 },
	};
	bool stats = false;
	int interval = 5, opt;
	struct container c;

	optind = 1;
	while ((opt = getopt_long_only(argc, argv, "+", longopts, NULL)) != -1) {
		if (opt == 's')
			stats = true;
		else if (opt == 'i')
			interval = atoi(optarg) > 0 ? atoi(optarg) : 1; /* "5s" parses as 5 */
		else
			return 1;
	}
	if (optind != argc - 1)
		return oci_fail("events: expected exactly one container id");
	if (oci_load_or_fail(argv[optind], &c))
		return 1;
	if (container_status(&c) == CONTAINER_STOPPED) {
		container_release(&c);
		return oci_fail("container with id %s is not running", argv[optind]);
	}
	/* Do not hold the lock between events: other commands must get through. */
	close(c.lock_fd);
	c.lock_fd = -1;
	for (;;) {
		print_stats(&c);
		if (stats)
			break;
		sleep((unsigned int)interval);
		if (container_status(&c) == CONTAINER_STOPPED)
			break;
	}
	container_release(&c);
	return 0;
}
