/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Container records under --root: <root>/<id>/{state.json,config.json,exec.fifo}. Every
 * command on a container holds an exclusive flock on <root>/<id> while it works, so concurrent
 * commands on one container are serialized; the status is computed from the processes, never
 * trusted from the file, so a sentry killed behind husk's back shows as stopped.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fsutil.h"
#include "oci-spec/state.h"
#include "runtime/oci.h"

struct oci_globals oci_g = { .root = HUSK_DEFAULT_ROOT, .platform = NULL };

static void log_line(const char *level, const char *msg)
{
	FILE *f;

	if (!oci_g.log)
		return;
	f = fopen(oci_g.log, "ae");
	if (!f)
		return;
	if (oci_g.log_json) {
		char ts[64];
		json_t *o;
		char *line;

		oci_timestamp_now(ts, sizeof(ts));
		o = json_pack("{s:s,s:s,s:s}", "level", level, "msg", msg, "time", ts);
		line = o ? json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT) : NULL;
		if (line)
			fprintf(f, "%s\n", line);
		free(line);
		json_decref(o);
	} else {
		fprintf(f, "husk: %s: %s\n", level, msg);
	}
	fclose(f);
}

int oci_fail(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "husk: %s\n", msg);
	log_line("error", msg);
	return 1;
}

void oci_warn(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "husk: warning: %s\n", msg);
	log_line("warning", msg);
}

const char *container_status_name(enum container_status s)
{
	static const char *const names[] = { "creating", "created", "running", "paused",
					     "stopped" };
	return names[s];
}

int container_id_valid(const char *id)
{
	if (!*id || !strcmp(id, ".") || !strcmp(id, "..") || strlen(id) > 1024)
		return -EINVAL;
	for (const char *p = id; *p; p++) {
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') &&
		    !(*p >= '0' && *p <= '9') && !strchr("_+.-", *p))
			return -EINVAL;
	}
	return 0;
}

char *container_path(const struct container *c, const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", c->dir, name) < 0)
		return NULL;
	return p;
}

uint64_t process_start_time(pid_t pid)
{
	char path[64], buf[1024];
	_cleanup_close_ int fd = -1;
	char *p;
	ssize_t n;
	unsigned long long start = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* comm may hold spaces and parentheses: fields start after the last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	/* p+2 is field 3 (state); start time is field 22. */
	if (sscanf(p + 2,
		   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d "
		   "%*d %llu",
		   &start) != 1)
		return 0;
	return start;
}

static char process_state(pid_t pid)
{
	char path[64], buf[512];
	_cleanup_close_ int fd = -1;
	ssize_t n;
	char *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] ? p[2] : 0;
}

bool process_alive(pid_t pid, uint64_t start)
{
	char st;

	if (pid <= 0)
		return false;
	if (process_start_time(pid) != start)
		return false;
	st = process_state(pid);
	return st && st != 'Z' && st != 'X';
}

static int lock_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			int e = -errno;
			close(fd);
			return e;
		}
	}
	return fd;
}

int container_create_dir(const char *id, struct container *c)
{
	int ret;

	memset(c, 0, sizeof(*c));
	c->lock_fd = -1;
	ret = husk_mkdir_p(oci_g.root, 0711);
	if (ret < 0)
		return ret;
	if (asprintf(&c->dir, "%s/%s", oci_g.root, id) < 0)
		return -ENOMEM;
	c->id = strdup(id);
	if (!c->id)
		return -ENOMEM;
	if (mkdir(c->dir, 0711) < 0)
		return -errno;
	ret = lock_dir(c->dir);
	if (ret < 0) {
		rmdir(c->dir);
		return ret;
	}
	c->lock_fd = ret;
	return 0;
}

static char *dup_member(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? strdup(s) : NULL;
}

int container_load(const char *id, struct container *c)
{
	_cleanup_free_ char *state = NULL;
	_cleanup_free_ char *config = NULL;
	struct oci_error err;
	json_error_t jerr;
	json_t *o;
	int ret;

	memset(c, 0, sizeof(*c));
	c->lock_fd = -1;
	if (container_id_valid(id) < 0)
		return -ENOENT;
	if (asprintf(&c->dir, "%s/%s", oci_g.root, id) < 0)
		return -ENOMEM;
	c->id = strdup(id);
	ret = lock_dir(c->dir);
	if (ret < 0)
		return ret == -ENOTDIR ? -ENOENT : ret;
	c->lock_fd = ret;
	state = container_path(c, "state.json");
	config = container_path(c, "config.json");
	if (!state || !config)
		return -ENOMEM;
	o = json_load_file(state, 0, &jerr);
	if (!o)
		return access(c->dir, F_OK) < 0 ? -ENOENT : -EIO;
	c->bundle = dup_member(o, "bundle");
	c->rootfs = dup_member(o, "rootfs");
	c->created = dup_member(o, "created");
	c->cgroup = dup_member(o, "cgroup");
	c->sandbox = dup_member(o, "sandbox");
	c->pid = (pid_t)json_integer_value(json_object_get(o, "pid"));
	c->pid_start = (uint64_t)json_integer_value(json_object_get(o, "pid_start"));
	c->gofer_pid = (pid_t)json_integer_value(json_object_get(o, "gofer_pid"));
	c->gofer_start = (uint64_t)json_integer_value(json_object_get(o, "gofer_start"));
	json_decref(o);
	if (!c->bundle)
		return -EIO;
	ret = oci_config_load(config, &c->config, &err);
	if (ret < 0)
		return -EIO;
	return 0;
}

int container_save(const struct container *c)
{
	_cleanup_free_ char *tmp = container_path(c, "state.json.tmp");
	_cleanup_free_ char *path = container_path(c, "state.json");
	json_t *o;
	int ret;

	if (!tmp || !path)
		return -ENOMEM;
	o = json_pack("{s:s,s:s?,s:s?,s:s?,s:I,s:I,s:I,s:I,s:s?}", "id", c->id, "bundle", c->bundle,
		      "rootfs", c->rootfs, "created", c->created, "pid", (json_int_t)c->pid,
		      "pid_start", (json_int_t)c->pid_start, "gofer_pid", (json_int_t)c->gofer_pid,
		      "gofer_start", (json_int_t)c->gofer_start, "cgroup", c->cgroup);
	if (!o)
		return -ENOMEM;
	/* A pod member's sandbox (runtime/pod.c). */
	if (c->sandbox && json_object_set_new(o, "sandbox", json_string(c->sandbox)) < 0) {
		json_decref(o);
		return -ENOMEM;
	}
	ret = json_dump_file(o, tmp, JSON_PRESERVE_ORDER | JSON_INDENT(1));
	json_decref(o);
	if (ret < 0)
		return -EIO;
	if (rename(tmp, path) < 0)
		return -errno;
	return 0;
}

void container_release(struct container *c)
{
	free(c->id);
	free(c->dir);
	free(c->bundle);
	free(c->rootfs);
	free(c->created);
	free(c->cgroup);
	free(c->sandbox);
	oci_config_free(c->config);
	if (c->lock_fd >= 0)
		close(c->lock_fd);
	memset(c, 0, sizeof(*c));
	c->lock_fd = -1;
}

enum container_status container_status(const struct container *c)
{
	_cleanup_free_ char *fifo = container_path(c, "exec.fifo");
	_cleanup_free_ char *paused = container_path(c, "paused");

	if (c->pid <= 0)
		return CONTAINER_CREATING;
	if (!process_alive(c->pid, c->pid_start))
		return CONTAINER_STOPPED;
	if (fifo && access(fifo, F_OK) == 0)
		return CONTAINER_CREATED;
	/* husk pause stops the sentry's tasks (and marks it); a frozen cgroup counts too. */
	if ((paused && access(paused, F_OK) == 0) || (c->cgroup && cgroup_frozen(c->cgroup)))
		return CONTAINER_PAUSED;
	return CONTAINER_RUNNING;
}

void container_oci_state(const struct container *c, enum container_status s, struct oci_state *out)
{
	memset(out, 0, sizeof(*out));
	out->id = c->id;
	out->status = container_status_name(s);
	/* As runc: a container that husk checkpoint stopped says so. */
	if (s == CONTAINER_STOPPED) {
		_cleanup_free_ char *ckpt = container_path(c, "checkpointed");

		if (ckpt && access(ckpt, F_OK) == 0)
			out->status = "checkpointed";
	}
	out->pid = s == CONTAINER_STOPPED ? 0 : c->pid;
	out->bundle = c->bundle;
	out->rootfs = c->rootfs;
	out->created = c->created;
	out->owner = "";
	if (c->config) {
		out->annotations = c->config->annotations;
		out->nannotations = c->config->nannotations;
	}
}

/* Waits up to ms for pid (not our child) to exit. Returns true if it is gone. */
static bool wait_gone(pid_t pid, uint64_t start, int ms)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	bool gone;

	if (pfd >= 0) {
		/* The pid may have been reused between the check and pidfd_open. */
		if (process_start_time(pid) == start) {
			struct pollfd p = { .fd = pfd, .events = POLLIN };
			while (poll(&p, 1, ms) < 0 && errno == EINTR)
				;
		}
		close(pfd);
	}
	gone = !process_alive(pid, start);
	for (int i = 0; !gone && i < ms / 10; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		gone = !process_alive(pid, start);
	}
	return gone;
}

static void kill_checked(pid_t pid, uint64_t start)
{
	/* Signal through a pidfd so that a reused pid is never hit. */
	int pfd;

	if (pid <= 0 || process_start_time(pid) != start)
		return;
	pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd < 0)
		return;
	if (process_start_time(pid) == start)
		syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
	close(pfd);
}

int container_destroy(struct container *c)
{
	_cleanup_free_ char *fifo = container_path(c, "exec.fifo");
	DIR *d;
	struct dirent *de;
	int ret = 0;

	kill_checked(c->pid, c->pid_start);
	if (c->pid > 0 && !wait_gone(c->pid, c->pid_start, 10000))
		ret = -EBUSY;
	/* The gofer exits when the sentry's socket closes; make sure. */
	if (c->gofer_pid > 0 && !wait_gone(c->gofer_pid, c->gofer_start, 2000)) {
		kill_checked(c->gofer_pid, c->gofer_start);
		wait_gone(c->gofer_pid, c->gofer_start, 2000);
	}
	if (c->cgroup) {
		int r = cgroup_destroy(c->cgroup);
		if (r < 0 && !ret)
			ret = r;
	}
	if (c->config && c->pid > 0)
		hooks_run(c, OCI_HOOK_POSTSTOP, CONTAINER_STOPPED);
	if (ret < 0)
		return ret;
	d = opendir(c->dir);
	if (d) {
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.' &&
			    (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
				continue;
			unlinkat(dirfd(d), de->d_name, 0);
		}
		closedir(d);
	}
	if (rmdir(c->dir) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int write_pid_file(const char *path, pid_t pid)
{
	_cleanup_free_ char *tmp = NULL;
	FILE *f;

	if (asprintf(&tmp, "%s.husk-tmp", path) < 0)
		return -ENOMEM;
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fprintf(f, "%d", (int)pid);
	if (fclose(f) != 0) {
		unlink(tmp);
		return -EIO;
	}
	if (rename(tmp, path) < 0) {
		int e = -errno;
		unlink(tmp);
		return e;
	}
	return 0;
}

int parse_signal(const char *s)
{
	char *end;
	long n;

	n = strtol(s, &end, 10);
	if (end != s && !*end)
		return n > 0 && n < 65 ? (int)n : -EINVAL;
	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	for (int sig = 1; sig < 32; sig++) {
		const char *name = sigabbrev_np(sig);
		if (name && !strcasecmp(name, s))
			return sig;
	}
	if (!strncasecmp(s, "RTMIN", 5)) {
		n = s[5] == '+' ? strtol(s + 6, &end, 10) : 0;
		if (SIGRTMIN + n <= SIGRTMAX)
			return SIGRTMIN + (int)n;
	}
	return -EINVAL;
}
