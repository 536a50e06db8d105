/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk events [--stats] [--interval SECONDS] ID: with --stats prints one stats event; otherwise
 * prints a stats event every interval (default 5 s) until the container stops, as runc events
 * does ({"type":"stats","id":...,"data":{...}}, one JSON object per line), and an
 * {"type":"oom","id":...} event as soon as the sentry's OOM killer kills a process (runc's
 * comes from the cgroup's OOM eventfd; the sentry answers a CONTROL_OOM_WAIT instead), and a
 * {"type":"crash","id":...,"data":{"report":...}} event when the container stopped because its
 * sentry crashed (the report sentry/crash wrote to the state dir's crash.log).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/control.h"
#include "runtime/oci.h"
#include "runtime/runtime.h"

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
	ret = control_send(sock, &h, sizeof(h));
	if (ret < 0)
		return ret;
	ret = control_recv(sock, CONTROL_STATS_REPLY, st, sizeof(*st));
	return ret < 0 ? ret : st->err;
}

/* Prints event o (one JSON object, one line) and drops it; NULL prints nothing. */
static void print_event(json_t *o)
{
	char *s = o ? json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT) : NULL;

	if (s)
		printf("%s\n", s);
	fflush(stdout);
	free(s);
	json_decref(o);
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
	print_event(o);
}

/* Asks the sentry to answer once its OOM killer has killed more than seen. The socket, or -errno. */
static int oom_wait_send(const struct container *c, uint64_t seen)
{
	struct control_hdr h = { .magic = CONTROL_MAGIC,
				 .version = CONTROL_VERSION,
				 .op = CONTROL_OOM_WAIT,
				 .len = sizeof(struct control_oom) };
	struct control_oom req = { .kills = seen };
	_cleanup_free_ char *path = container_path(c, "control.sock");
	char msg[sizeof(h) + sizeof(req)];
	int sock = path ? control_dial(path) : -ENOMEM;
	int ret;

	if (sock < 0)
		return sock;
	memcpy(msg, &h, sizeof(h));
	memcpy(msg + sizeof(h), &req, sizeof(req));
	ret = control_send(sock, msg, sizeof(msg));
	if (ret < 0) {
		close(sock);
		return ret;
	}
	return sock;
}

static void print_oom(const struct container *c)
{
	print_event(json_pack("{s:s,s:s}", "type", "oom", "id", c->id));
}

/*
 * A crash event ({"type":"crash","id":...,"data":{"report":TEXT}}) when the sentry left a crash
 * report (sentry/crash) in the state dir. Returns whether there was one.
 */
static bool print_crash(const struct container *c)
{
	_cleanup_free_ char *path = container_path(c, CONTAINER_CRASH_LOG);
	_cleanup_close_ int fd = path ? open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
	char buf[256 * 1024];
	_cleanup_free_ char *text = NULL;
	size_t len = 0, text_len = 0;
	ssize_t n;
	json_t *o;

	if (fd < 0)
		return false;
	while (len < sizeof(buf) && (n = read(fd, buf + len, sizeof(buf) - len)) > 0)
		len += (size_t)n;
	if (!len)
		return false;
	/* The sentry wrote it raw (addresses): named here, outside the sandbox. */
	text = crash_symbolize(buf, len, &text_len);
	o = json_pack("{s:s,s:s,s:{s:s%}}", "type", "crash", "id", c->id, "data", "report",
		      text ? text : buf, text ? text_len : len);
	print_event(o);
	return true;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Waits interval seconds, printing an oom event for each OOM kill the sentry reports meanwhile
 * (*oom_fd: the pending CONTROL_OOM_WAIT, -1 none yet; -2 once the sentry cannot answer one).
 */
static void wait_interval(const struct container *c, int interval, int *oom_fd, uint64_t *seen)
{
	int64_t end = now_ms() + (int64_t)interval * 1000;

	for (int64_t left; (left = end - now_ms()) > 0;) {
		struct pollfd p = { .fd = -1, .events = POLLIN };
		struct control_oom r;

		if (*oom_fd == -1) {
			*oom_fd = oom_wait_send(c, *seen);
			if (*oom_fd < 0)
				*oom_fd = -2;
		}
		p.fd = *oom_fd >= 0 ? *oom_fd : -1;
		if (poll(&p, 1, (int)left) <= 0 || !p.revents)
			continue;
		if (control_recv(*oom_fd, CONTROL_OOM_REPLY, &r, sizeof(r)) == 0 && r.err == 0 &&
		    r.kills > *seen) {
			*seen = r.kills;
			print_oom(c);
			close(*oom_fd);
			*oom_fd = -1;
		} else {
			/* The sentry is gone (or does not know the request): stats only. */
			close(*oom_fd);
			*oom_fd = -2;
		}
	}
}

int cmd_events(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "stats", no_argument, NULL, 's' },
		{ "interval", required_argument, NULL, 'i' },
		{ NULL, 0, NULL, 0 },
	};
	bool stats = false;
	int interval = 5, opt, oom_fd = -1;
	struct control_stats ss;
	uint64_t seen = 0;
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
		/* A sentry that crashed left its report: that is the container's last event. */
		bool crashed = print_crash(&c);

		container_release(&c);
		return crashed ? 0 : oci_fail("container with id %s is not running", argv[optind]);
	}
	/* Do not hold the lock between events: other commands must get through. */
	close(c.lock_fd);
	c.lock_fd = -1;
	if (!stats && sentry_stats(&c, &ss) == 0)
		seen = ss.oom_kills;
	for (;;) {
		print_stats(&c);
		if (stats)
			break;
		wait_interval(&c, interval, &oom_fd, &seen);
		if (container_status(&c) == CONTAINER_STOPPED) {
			print_crash(&c);
			break;
		}
	}
	if (oom_fd >= 0)
		close(oom_fd);
	container_release(&c);
	return 0;
}
