/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host cgroups of a sandbox. The sentry, its stubs and the gofer all live in one cgroup path,
 * created in each hierarchy husk uses:
 *   - pure v2 (/sys/fs/cgroup is cgroup2): that hierarchy, controllers enabled top-down;
 *   - v1 or hybrid: the v1 memory, pids, cpu and freezer hierarchies that are mounted, plus the
 *     v2 hierarchy at /sys/fs/cgroup/unified if there is one (for its accounting and freezer).
 * Limits go to whichever hierarchy has the controller; a hierarchy that cannot be used (not
 * mounted, read-only) is skipped, so husk runs on v1, v2 and hybrid hosts alike.
 *
 * With the annotation dev.husk.network=host, the BPF egress programs (sentry/net/bpf/netbpf.h)
 * are attached to the v2 cgroup before any process is in it, with the policy of the
 * dev.husk.egress-* annotations: the host kernel enforces it too. They go with the cgroup.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/userns.h"
#include "runtime/oci.h"
#include "sentry/net/bpf/netbpf.h"

#define CGROUP_ROOT "/sys/fs/cgroup"
#define CGROUP2_SUPER_MAGIC 0x63677270

enum hier { H_V2, H_MEMORY, H_PIDS, H_CPU, H_FREEZER, H_COUNT };

static const char *const hier_dir[H_COUNT] = {
	[H_V2] = NULL,	 [H_MEMORY] = "memory",	  [H_PIDS] = "pids",
	[H_CPU] = "cpu", [H_FREEZER] = "freezer",
};

/* Mount point of hierarchy h, or NULL if it is not usable here. */
static const char *hier_mount(enum hier h, char *buf, size_t len)
{
	struct statfs sfs;
	char probe[300];

	if (statfs(CGROUP_ROOT, &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC)
		return h == H_V2 ? CGROUP_ROOT : NULL; /* pure v2 */
	if (h == H_V2)
		snprintf(buf, len, CGROUP_ROOT "/unified");
	else
		snprintf(buf, len, CGROUP_ROOT "/%s", hier_dir[h]);
	snprintf(probe, sizeof(probe), "%s/cgroup.procs", buf);
	if (access(probe, W_OK) < 0)
		return NULL;
	return buf;
}

static bool is_pure_v2(void)
{
	struct statfs sfs;

	return statfs(CGROUP_ROOT, &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC;
}

static int write_file(const char *dir, const char *file, const char *val)
{
	char path[600];
	_cleanup_close_ int fd = -1;
	size_t len = strlen(val);

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, val, len) != (ssize_t)len)
		return -errno;
	return 0;
}

static int read_file(const char *dir, const char *file, char *buf, size_t len)
{
	char path[600];
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return (int)n;
}

/* Directory of path in hierarchy h, or NULL if h is not usable. */
static const char *hier_path(enum hier h, const char *path, char *buf, size_t len)
{
	char mbuf[256];
	const char *mnt = hier_mount(h, mbuf, sizeof(mbuf)); /* mbuf, or a constant */

	if (!mnt)
		return NULL;
	snprintf(buf, len, "%s%s%s", mnt, path[0] == '/' ? "" : "/", path);
	return buf;
}

static int mkdir_p(const char *path)
{
	_cleanup_free_ char *p = strdup(path);

	if (!p)
		return -ENOMEM;
	for (char *s = p + strlen(CGROUP_ROOT) + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* In pure v2, enables the controllers in every ancestor's subtree_control (best effort). */
static void v2_enable_controllers(const char *dir)
{
	_cleanup_free_ char *p = strdup(dir);

	if (!p)
		return;
	for (char *s = p + strlen(CGROUP_ROOT); s; s = strchr(s + 1, '/')) {
		char c = *s;

		*s = 0;
		write_file(*p ? p : "/", "cgroup.subtree_control", "+memory");
		write_file(*p ? p : "/", "cgroup.subtree_control", "+pids");
		write_file(*p ? p : "/", "cgroup.subtree_control", "+cpu");
		*s = c;
	}
}

/*
 * The host cgroup's memory limit for a guest limit: the sentry enforces the guest's own limit on
 * the memory file (its OOM killer picks the process to kill); the host cgroup also holds the
 * sentry's and gofer's own memory and page cache, so it gets a margin above it (a quarter, at
 * least 64 MiB) and stays a backstop, reached only if the sentry fails to keep the limit.
 */
static int64_t host_memory_limit(int64_t memory)
{
	int64_t margin = memory / 4 > (64LL << 20) ? memory / 4 : (64LL << 20);

	if (memory < 0 || memory > INT64_MAX - margin)
		return memory;
	return memory + margin;
}

static int set_limits(const char *path, int64_t memory, int64_t pids, uint64_t shares,
		      int64_t quota, uint64_t period)
{
	char dir[600], val[64];
	bool v2 = is_pure_v2();
	int ret = 0, r;

	if (memory != -2) {
		memory = host_memory_limit(memory);
		if (v2 && hier_path(H_V2, path, dir, sizeof(dir))) {
			if (memory < 0)
				snprintf(val, sizeof(val), "max");
			else
				snprintf(val, sizeof(val), "%lld", (long long)memory);
			ret = write_file(dir, "memory.max", val);
			/* No memory.max: the controller is not available to this hierarchy (it is
			 * bound to v1, or not delegated); the sentry's own limit still holds. */
			if (ret == -ENOENT) {
				if (memory >= 0)
					oci_warn("no memory controller in the cgroup v2 hierarchy: "
						 "the memory limit is not applied on the host");
				ret = 0;
			}
		} else if (hier_path(H_MEMORY, path, dir, sizeof(dir))) {
			snprintf(val, sizeof(val), "%lld", (long long)(memory < 0 ? -1 : memory));
			ret = write_file(dir, "memory.limit_in_bytes", val);
		} else if (memory >= 0) {
			oci_warn("no memory cgroup controller: the memory limit is not applied on "
				 "the host");
		}
		if (ret < 0)
			return ret;
	}
	if (pids != -2) {
		enum hier h = v2 ? H_V2 : H_PIDS;

		if (pids < 0)
			snprintf(val, sizeof(val), "max");
		else
			snprintf(val, sizeof(val), "%lld", (long long)pids);
		ret = hier_path(h, path, dir, sizeof(dir)) ? write_file(dir, "pids.max", val) :
							     -ENOENT;
		/* No hierarchy, or no pids.max in it: the sentry's own limit still holds. */
		if (ret == -ENOENT) {
			if (pids >= 0)
				oci_warn("no pids cgroup controller: the pids limit is not applied "
					 "on the host");
			ret = 0;
		}
		if (ret < 0)
			return ret;
	}
	if (shares && (v2 ? hier_path(H_V2, path, dir, sizeof(dir)) :
			    hier_path(H_CPU, path, dir, sizeof(dir)))) {
		if (v2)
			snprintf(val, sizeof(val), "%llu",
				 1 + ((unsigned long long)(shares < 2 ? 2 : shares) - 2) * 9999 /
						 262142);
		else
			snprintf(val, sizeof(val), "%llu", (unsigned long long)shares);
		r = write_file(dir, v2 ? "cpu.weight" : "cpu.shares", val);
		if (r < 0)
			oci_warn("cpu shares: %s", strerror(-r));
	}
	if ((quota || period) && (v2 ? hier_path(H_V2, path, dir, sizeof(dir)) :
				       hier_path(H_CPU, path, dir, sizeof(dir)))) {
		if (v2) {
			if (quota > 0)
				snprintf(val, sizeof(val), "%lld %llu", (long long)quota,
					 (unsigned long long)(period ? period : 100000));
			else
				snprintf(val, sizeof(val), "max %llu",
					 (unsigned long long)(period ? period : 100000));
			r = write_file(dir, "cpu.max", val);
		} else {
			r = 0;
			if (period) {
				snprintf(val, sizeof(val), "%llu", (unsigned long long)period);
				r = write_file(dir, "cpu.cfs_period_us", val);
			}
			if (!r && quota) {
				snprintf(val, sizeof(val), "%lld", (long long)quota);
				r = write_file(dir, "cpu.cfs_quota_us", val);
			}
		}
		if (r < 0)
			oci_warn("cpu quota: %s", strerror(-r));
	}
	return 0;
}

/*
 * Attaches the BPF egress programs to path's v2 cgroup when the annotations ask for host
 * networking. Returns 0 (also when BPF is unavailable: a warning says so), or -EINVAL for a
 * malformed dev.husk.network/egress-* annotation.
 */
static int attach_egress(const char *path, const struct oci_config *cfg)
{
	char **args = NULL;
	char dir[600], why[700];
	bool host;
	int ret;

	ret = netbpf_annotation_args(oci_config_annotation(cfg, "dev.husk.network"),
				     oci_config_annotation(cfg, "dev.husk.egress-allow"),
				     oci_config_annotation(cfg, "dev.husk.egress-deny"), &args, why,
				     sizeof(why));
	if (ret < 0) {
		oci_fail("%s", ret == -EINVAL ? why : strerror(-ret));
		return ret;
	}
	host = args && args[0] && !strcmp(args[0], "--network=host");
	if (host && (!path || !hier_path(H_V2, path, dir, sizeof(dir)))) {
		oci_warn("no cgroup v2 hierarchy: no BPF egress filter; the sentry's own check "
			 "applies alone");
	} else if (host) {
		_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		ret = fd < 0 ?
			      -errno :
			      netbpf_attach_egress(fd, (const char *const *)args, why, sizeof(why));
		if (fd < 0)
			snprintf(why, sizeof(why), "%s: %s", dir, strerror(-ret));
		if (ret < 0)
			oci_warn(
				"BPF egress filter unavailable (%s); the sentry's own check applies "
				"alone",
				why);
	}
	netbpf_free_args(args);
	return 0;
}

/*
 * Whether this user may make path in some hierarchy husk uses: the deepest existing ancestor of
 * it there is writable (root; or a cgroup delegated to a rootless user, as systemd's
 * user@UID.service is). A hierarchy whose root husk cannot write is unusable (hier_mount).
 */
static bool cgroup_delegated(const char *path)
{
	char dir[600];

	for (int h = 0; h < H_COUNT; h++) {
		if (!hier_path(h, path, dir, sizeof(dir)))
			continue;
		for (char *slash; access(dir, F_OK) < 0 && (slash = strrchr(dir, '/'));)
			*slash = 0;
		if (dir[0] && access(dir, W_OK) == 0)
			return true;
	}
	return false;
}

int cgroup_create(const char *path, const struct oci_config *cfg)
{
	char dir[600];
	int ret;

	/* Rootless without delegation: no cgroup at all, said once (a warning for a user who runs
	 * husk; under an engine's user namespace, as root there, only with --debug: the engine
	 * says so itself, and husk's stderr is the container's). The sentry enforces the memory
	 * and pids limits itself (--memory-limit, --pids-limit) and pauses its own tasks; the
	 * dev.husk.* network annotations are still checked. */
	if (!cgroup_delegated(path)) {
		if (geteuid() != 0 || !userns_nested())
			oci_warn(
				"cgroup %s: no cgroup is delegated to this user: skipped (limits and "
				"pause are the sentry's own)",
				path);
		else
			log_info("cgroup %s: none delegated to this user namespace: skipped", path);
		ret = attach_egress(NULL, cfg);
		return ret < 0 ? ret : 1;
	}

	for (int h = 0; h < H_COUNT; h++) {
		if (!hier_path(h, path, dir, sizeof(dir)))
			continue;
		ret = mkdir_p(dir);
		if (ret < 0) {
			/* A v2 hierarchy beside v1 ones is optional; a needed one is not. */
			if (h == H_V2 && !is_pure_v2())
				continue;
			cgroup_destroy(path);
			return ret;
		}
		if (h == H_V2 && is_pure_v2())
			v2_enable_controllers(dir);
	}
	/* The pids limit is the sentry's (--pids-limit: guest tasks); the host cgroup would count
	 * the sentry's own threads and stubs, so it gets none from config.json. */
	ret = set_limits(path, cfg->memory_limit >= 0 ? cfg->memory_limit : -2, -2, cfg->cpu_shares,
			 cfg->cpu_quota, cfg->cpu_period);
	if (ret == 0)
		ret = attach_egress(path, cfg);
	if (ret < 0) {
		cgroup_destroy(path);
		return ret;
	}
	return 0;
}

int cgroup_enter(const char *path, pid_t pid)
{
	char dir[600], val[32];
	int ret;

	snprintf(val, sizeof(val), "%d", (int)pid);
	for (int h = 0; h < H_COUNT; h++) {
		if (!hier_path(h, path, dir, sizeof(dir)))
			continue;
		ret = write_file(dir, "cgroup.procs", val);
		if (ret < 0 && !(h == H_V2 && !is_pure_v2()))
			return ret;
	}
	return 0;
}

static int pids_in(const char *dir, pid_t *out, int max)
{
	char buf[8192];
	char *p, *end;
	int n = 0;

	if (read_file(dir, "cgroup.procs", buf, sizeof(buf)) < 0)
		return 0;
	for (p = buf; *p && n < max; p = end) {
		long v = strtol(p, &end, 10);
		if (end == p)
			break;
		out[n++] = (pid_t)v;
		while (*end == '\n')
			end++;
	}
	return n;
}

int cgroup_destroy(const char *path)
{
	char dir[600];
	int ret = 0;

	cgroup_freeze(path, false); /* frozen processes cannot die */
	for (int h = 0; h < H_COUNT; h++) {
		bool removed = false;

		if (!hier_path(h, path, dir, sizeof(dir)) || access(dir, F_OK) < 0)
			continue;
		/* Stubs and the gofer die with the sentry; anything else left is killed. */
		for (int tries = 0; tries < 500 && !removed; tries++) {
			struct timespec ts = { 0, 10 * 1000 * 1000 };
			pid_t pids[256];
			int n = pids_in(dir, pids, 256);

			if (tries >= 50)
				for (int i = 0; i < n; i++)
					kill(pids[i], SIGKILL);
			if (rmdir(dir) == 0 || errno == ENOENT)
				removed = true;
			else
				nanosleep(&ts, NULL);
		}
		if (!removed && !ret)
			ret = -EBUSY;
		/* The default parent (/husk) goes too once no container uses it. */
		if (removed && !strncmp(path, "/husk/", 6) && !strchr(path + 6, '/')) {
			char *slash = strrchr(dir, '/');
			*slash = 0;
			rmdir(dir);
		}
	}
	return ret;
}

int cgroup_freeze(const char *path, bool frozen)
{
	char dir[600], buf[700];

	if (hier_path(H_FREEZER, path, dir, sizeof(dir)) && access(dir, F_OK) == 0) {
		int ret = write_file(dir, "freezer.state", frozen ? "FROZEN" : "THAWED");
		if (ret < 0)
			return ret;
		/* FREEZING becomes FROZEN once every task stopped. */
		for (int i = 0; frozen && i < 1000; i++) {
			struct timespec ts = { 0, 1000 * 1000 };
			if (read_file(dir, "freezer.state", buf, sizeof(buf)) < 0 ||
			    !strncmp(buf, "FROZEN", 6))
				break;
			nanosleep(&ts, NULL);
		}
		return 0;
	}
	if (hier_path(H_V2, path, dir, sizeof(dir)) && access(dir, F_OK) == 0) {
		snprintf(buf, sizeof(buf), "%s/cgroup.freeze", dir);
		if (access(buf, F_OK) == 0) {
			int ret = write_file(dir, "cgroup.freeze", frozen ? "1" : "0");

			/* cgroup.events says "frozen 1" once every task stopped. */
			for (int i = 0; !ret && frozen && i < 1000; i++) {
				struct timespec ts = { 0, 1000 * 1000 };

				if (read_file(dir, "cgroup.events", buf, sizeof(buf)) < 0 ||
				    strstr(buf, "frozen 1"))
					break;
				nanosleep(&ts, NULL);
			}
			return ret;
		}
	}
	return -ENOTSUP;
}

bool cgroup_frozen(const char *path)
{
	char dir[600], buf[64];

	if (hier_path(H_FREEZER, path, dir, sizeof(dir)) &&
	    read_file(dir, "freezer.state", buf, sizeof(buf)) > 0)
		return !strncmp(buf, "FROZEN", 6) || !strncmp(buf, "FREEZING", 8);
	if (hier_path(H_V2, path, dir, sizeof(dir)) &&
	    read_file(dir, "cgroup.freeze", buf, sizeof(buf)) > 0)
		return buf[0] == '1';
	return false;
}

int cgroup_update(const char *path, int64_t memory, int64_t pids)
{
	return set_limits(path, memory, pids, 0, 0, 0);
}

int cgroup_pids(const char *path, pid_t **pids)
{
	char dir[600];
	pid_t *out;
	int n = 0;

	out = calloc(4096, sizeof(pid_t));
	if (!out)
		return -ENOMEM;
	for (int h = H_MEMORY; h < H_COUNT && n == 0; h++) {
		if (hier_path(h, path, dir, sizeof(dir)))
			n = pids_in(dir, out, 4096);
	}
	if (n == 0 && hier_path(H_V2, path, dir, sizeof(dir)))
		n = pids_in(dir, out, 4096);
	*pids = out;
	return n;
}

static int64_t read_i64(const char *dir, const char *file)
{
	char buf[64];

	if (read_file(dir, file, buf, sizeof(buf)) <= 0)
		return -1;
	if (!strncmp(buf, "max", 3))
		return -1;
	return strtoll(buf, NULL, 10);
}

void cgroup_stats(const char *path, struct cgroup_stats *st)
{
	char dir[600];
	bool v2 = is_pure_v2();

	st->memory_usage = st->memory_limit = st->pids_current = st->pids_limit = -1;
	st->cpu_usage_ns = -1;
	if (v2 && hier_path(H_V2, path, dir, sizeof(dir))) {
		char buf[512];

		st->memory_usage = read_i64(dir, "memory.current");
		st->memory_limit = read_i64(dir, "memory.max");
		st->pids_current = read_i64(dir, "pids.current");
		st->pids_limit = read_i64(dir, "pids.max");
		if (read_file(dir, "cpu.stat", buf, sizeof(buf)) > 0 &&
		    !strncmp(buf, "usage_usec ", 11))
			st->cpu_usage_ns = strtoll(buf + 11, NULL, 10) * 1000;
		return;
	}
	if (hier_path(H_MEMORY, path, dir, sizeof(dir))) {
		st->memory_usage = read_i64(dir, "memory.usage_in_bytes");
		st->memory_limit = read_i64(dir, "memory.limit_in_bytes");
	}
	if (hier_path(H_PIDS, path, dir, sizeof(dir))) {
		st->pids_current = read_i64(dir, "pids.current");
		st->pids_limit = read_i64(dir, "pids.max");
	}
	if (hier_path(H_CPU, path, dir, sizeof(dir)))
		st->cpu_usage_ns = read_i64(dir, "cpuacct.usage");
	if (st->cpu_usage_ns < 0) {
		char mnt[256];
		snprintf(mnt, sizeof(mnt), CGROUP_ROOT "/cpuacct%s%s", path[0] == '/' ? "" : "/",
			 path);
		st->cpu_usage_ns = read_i64(mnt, "cpuacct.usage");
	}
}
