/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk ps [--format table|json] ID [PS-ARGS...]: the guest's processes, asked of the sentry over
 * the control socket (CONTROL_PS). runc prints host pids; a guest process has no host pid of
 * its own (the sentry runs them all), so husk prints the guest's pids, as `ps` inside the
 * container would see them. The table has ps -ef's columns (UID PID PPID C STIME TTY TIME CMD);
 * PS-ARGS are accepted and ignored. --format json prints the pid array, as runc does.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/control.h"
#include "runtime/oci.h"

int cmd_ps(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	_cleanup_free_ char *sock_path = NULL;
	struct control_ps_entry *ps = NULL;
	struct container c;
	bool json = false;
	time_t started;
	int n, opt;

	optind = 1;
	while ((opt = getopt_long_only(argc, argv, "+f:", longopts, NULL)) != -1) {
		if (opt != 'f')
			return 1;
		if (strcmp(optarg, "json") && strcmp(optarg, "table"))
			return oci_fail("invalid format option");
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
	sock_path = container_path(&c, "control.sock");
	/* The sandbox's start, for STIME: the sentry's host start is close enough. */
	started = time(NULL);
	{
		struct timespec now;
		long hz = sysconf(_SC_CLK_TCK);
		_cleanup_fclose_ FILE *f = fopen("/proc/uptime", "re");
		double up;

		clock_gettime(CLOCK_REALTIME, &now);
		if (f && fscanf(f, "%lf", &up) == 1 && hz > 0 && c.pid_start)
			started = now.tv_sec - (time_t)up + (time_t)(c.pid_start / (uint64_t)hz);
	}
	container_release(&c);
	n = sock_path ? control_fetch_ps(sock_path, &ps) : -ENOMEM;
	if (n < 0)
		return oci_fail("ps: asking the sandbox: %s", strerror(-n));
	if (json) {
		printf("[");
		for (int i = 0; i < n; i++)
			printf("%s%d", i ? "," : "", (int)ps[i].pid);
		printf("]\n");
		free(ps);
		return 0;
	}
	printf("%-8s %7s %7s %2s %5s %-8s %8s %s\n", "UID", "PID", "PPID", "C", "STIME", "TTY",
	       "TIME", "CMD");
	for (int i = 0; i < n; i++) {
		time_t st = started + (time_t)(ps[i].start_ns / 1000000000ULL);
		uint64_t cpu = ps[i].cpu_ns / 1000000000ULL;
		char stime[16];
		struct tm tm;

		localtime_r(&st, &tm);
		strftime(stime, sizeof(stime), "%H:%M", &tm);
		ps[i].comm[sizeof(ps[i].comm) - 1] = 0;
		printf("%-8u %7d %7d %2d %5s %-8s %02llu:%02llu:%02llu %s%s\n", ps[i].uid,
		       (int)ps[i].pid, (int)ps[i].ppid, 0, stime, "?",
		       (unsigned long long)(cpu / 3600), (unsigned long long)(cpu / 60 % 60),
		       (unsigned long long)(cpu % 60), ps[i].comm,
		       ps[i].state == 'Z' ? " <defunct>" : "");
	}
	free(ps);
	return 0;
}
