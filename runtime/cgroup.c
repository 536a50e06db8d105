/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host cgroups of a sandbox. The sentry, its stubs and the gofer all live in one cgroup path,
 * created in each hierarchy husk uses, as runc places a container:
 *   - pure v2 (/sys/fs/cgroup is cgroup2): that hierarchy, controllers enabled top-down;
 *   - v1 or hybrid: every v1 hierarchy mounted at /sys/fs/cgroup/<controller> (cpuset, cpu,
 *     cpuacct, blkio, memory, devices, freezer, net_cls, net_prio, perf_event, hugetlb, pids,
 *     rdma, misc and the name=systemd one; co-mounted controllers such as cpu,cpuacct count
 *     once), plus the v2 hierarchy at /sys/fs/cgroup/unified if there is one.
 * linux.resources go to whichever hierarchy has the controller (cgroup_apply); a hierarchy that
 * cannot be used (not mounted, read-only) is skipped, so husk runs on v1, v2 and hybrid hosts
 * alike. The devices controller places the container but gets no rules: the sentry, not the
 * guest, opens host devices, and linux.resources.devices is enforced by the sentry itself.
 *
 * With the annotation dev.husk.network=host, the BPF egress programs (sentry/net/bpf/netbpf.h)
 * are attached to the v2 cgroup before any process is in it, with the policy of the
 * dev.husk.egress-* annotations: the host kernel enforces it too. They go with the cgroup.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
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
#define CGROUP_SUPER_MAGIC 0x27e0eb
#define MAX_HIERS 20

/* The v1 hierarchies a container is placed in, by their directory under /sys/fs/cgroup. */
static const char *const v1_dirs[] = {
	"cpuset",   "cpu",	  "cpuacct", "blkio", "memory", "devices", "freezer", "net_cls",
	"net_prio", "perf_event", "hugetlb", "pids",  "rdma",	"misc",	   "systemd",
};

static bool is_pure_v2(void)
{
	struct statfs sfs;

	return statfs(CGROUP_ROOT, &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC;
}

/*
 * Mount point of the v1 hierarchy holding controller ctl ("memory", ...), or with "unified" of
 * the v2 hierarchy (/sys/fs/cgroup itself on a pure v2 host), in buf; NULL if it is not mounted
 * or not writable.
 */
static const char *ctl_mount(const char *ctl, char *buf, size_t len)
{
	struct statfs sfs;
	char probe[300];
	bool v2 = !strcmp(ctl, "unified");

	if (is_pure_v2()) {
		if (!v2)
			return NULL;
		snprintf(buf, len, CGROUP_ROOT);
	} else {
		snprintf(buf, len, CGROUP_ROOT "/%s", ctl);
	}
	if (statfs(buf, &sfs) < 0 ||
	    sfs.f_type != (typeof(sfs.f_type))(v2 ? CGROUP2_SUPER_MAGIC : CGROUP_SUPER_MAGIC))
		return NULL;
	snprintf(probe, sizeof(probe), "%s/cgroup.procs", buf);
	if (access(probe, W_OK) < 0)
		return NULL;
	return buf;
}

/* Directory of path in the hierarchy of controller ctl, or NULL if there is none. */
static const char *ctl_path(const char *ctl, const char *path, char *buf, size_t len)
{
	char mbuf[256];

	if (!ctl_mount(ctl, mbuf, sizeof(mbuf)))
		return NULL;
	snprintf(buf, len, "%s%s%s", mbuf, path[0] == '/' ? "" : "/", path);
	return buf;
}

int cgroup_memory_dir(const char *path, char *buf, size_t len, bool *v2)
{
	*v2 = is_pure_v2();
	return ctl_path(*v2 ? "unified" : "memory", path, buf, len) ? 0 : -ENOENT;
}

/* A hierarchy husk uses: its mount point, and whether it is the v2 one. */
struct hier {
	char mnt[128];
	bool v2;
};

/* path's directory in hierarchy h, in buf. Returns 0, or -ENAMETOOLONG. */
static int hier_dir(const struct hier *h, const char *path, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s%s%s", h->mnt, path[0] == '/' ? "" : "/", path);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/*
 * The hierarchies husk uses here, into h (at most max). Co-mounted v1 controllers (one
 * superblock) are listed once. Returns the count.
 */
static int hierarchies(struct hier *h, int max)
{
	dev_t seen[MAX_HIERS];
	int n = 0;

	if (is_pure_v2()) {
		snprintf(h[0].mnt, sizeof(h[0].mnt), CGROUP_ROOT);
		h[0].v2 = true;
		return 1;
	}
	for (size_t i = 0; i < sizeof(v1_dirs) / sizeof(v1_dirs[0]) && n < max - 1; i++) {
		struct stat st;
		bool dup = false;

		if (!ctl_mount(v1_dirs[i], h[n].mnt, sizeof(h[n].mnt)) || stat(h[n].mnt, &st) < 0)
			continue;
		for (int j = 0; j < n; j++)
			dup |= seen[j] == st.st_dev;
		if (dup)
			continue;
		seen[n] = st.st_dev;
		h[n++].v2 = false;
	}
	if (ctl_mount("unified", h[n].mnt, sizeof(h[n].mnt)))
		h[n++].v2 = true;
	return n;
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

/* A cpuset cgroup's cpus and mems start empty (no task may join): copies the parent's. */
static void cpuset_inherit(const char *dir)
{
	_cleanup_free_ char *parent = strdup(dir);
	static const char *const files[] = { "cpuset.cpus", "cpuset.mems" };
	char buf[4096];

	if (!parent || !strrchr(parent, '/'))
		return;
	*strrchr(parent, '/') = 0;
	for (int i = 0; i < 2; i++) {
		if (read_file(dir, files[i], buf, sizeof(buf)) < 0 || (buf[0] && buf[0] != '\n'))
			continue;
		if (read_file(parent, files[i], buf, sizeof(buf)) > 0)
			write_file(dir, files[i], buf);
	}
}

/* Makes path and its parents under mnt; in a v1 cpuset hierarchy each gets its parent's cpus
 * and mems. */
static int mkdir_p(const char *mnt, const char *path, bool cpuset)
{
	_cleanup_free_ char *p = strdup(path);
	int retries = 0;

	if (!p)
		return -ENOMEM;
	for (char *s = p + strlen(mnt) + 1;; s++) {
		if (*s && *s != '/')
			continue;
		char c = *s;

		*s = 0;
		if (mkdir(p, 0755) < 0 && errno != EEXIST) {
			/* Another container's destroy removed the shared default parent (/husk)
			 * between its mkdir here and this one: make it again. */
			if (errno == ENOENT && retries++ < 100) {
				strcpy(p, path);
				s = p + strlen(mnt);
				continue;
			}
			return -errno;
		}
		if (cpuset)
			cpuset_inherit(p);
		*s = c;
		if (!c)
			break;
	}
	return 0;
}

/*
 * Enables controllers (NULL-terminated "+name" list) in the subtree_control of dir's every
 * ancestor below the v2 mount mnt, best effort.
 */
static void v2_enable(const char *mnt, const char *dir, const char *const *ctls)
{
	_cleanup_free_ char *p = strdup(dir);

	if (!p)
		return;
	for (char *s = p + strlen(mnt); s; s = strchr(s + 1, '/')) {
		char c = *s;

		*s = 0;
		for (size_t i = 0; ctls[i]; i++)
			write_file(*p ? p : "/", "cgroup.subtree_control", ctls[i]);
		*s = c;
	}
}

/*
 * In pure v2, enables memory, pids and cpu in every ancestor's subtree_control (best effort), and
 * cpuset, io and hugetlb too when the resources ask for them (only then: a controller enabled
 * stays enabled in the shared ancestors).
 */
static void v2_enable_controllers(const char *dir, const struct oci_resources *r)
{
	const char *ctls[7] = { "+memory", "+pids", "+cpu" };
	int n = 3;
	bool blkio = r->set & (OCI_RES_BLKIO_WEIGHT | OCI_RES_BLKIO_LEAF_WEIGHT);

	for (int k = 0; k < OCI_BLKIO_NLISTS; k++)
		blkio |= r->nblkio[k] > 0;
	if ((r->cpuset_cpus && *r->cpuset_cpus) || (r->cpuset_mems && *r->cpuset_mems))
		ctls[n++] = "+cpuset";
	if (blkio)
		ctls[n++] = "+io";
	if (r->nhugepages)
		ctls[n++] = "+hugetlb";
	ctls[n] = NULL;
	v2_enable(CGROUP_ROOT, dir, ctls);
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

/* Where cgroup_apply writes: the container's path, the layout, and the first hard error. */
struct apply {
	const char *path;
	bool v2; /* pure v2: every file is in the one hierarchy */
	bool best_effort; /* a failed write is a warning */
	int err;
};

/*
 * Writes val to file in the container's cgroup of controller ctl (v1) or in its v2 cgroup.
 * A controller or file the host lacks is a warning (the limit is not applied on the host); any
 * other failure is an error naming the file and the value, and the first one is kept in a->err.
 */
static int __attribute__((format(printf, 4, 5)))
apply(struct apply *a, const char *ctl, const char *file, const char *fmt, ...)
{
	char dir[600], val[256];
	va_list ap;
	int ret;

	va_start(ap, fmt);
	vsnprintf(val, sizeof(val), fmt, ap);
	va_end(ap);
	if (!ctl_path(a->v2 ? "unified" : ctl, a->path, dir, sizeof(dir))) {
		oci_warn("no %s cgroup controller: %s=%s is not applied on the host", ctl, file,
			 val);
		return -ENOENT;
	}
	ret = write_file(dir, file, val);
	if (ret == -ENOENT) {
		oci_warn("cgroup %s has no %s: %s is not applied on the host", dir, file, val);
	} else if (ret < 0 && a->best_effort) {
		oci_warn("cgroup %s/%s: writing \"%s\": %s (not applied)", dir, file, val,
			 strerror(-ret));
	} else if (ret < 0) {
		oci_fail("cgroup %s/%s: writing \"%s\": %s", dir, file, val, strerror(-ret));
		if (!a->err)
			a->err = ret;
	}
	return ret;
}

/* Whether file exists in the container's cgroup of ctl. */
static bool has_file(const struct apply *a, const char *ctl, const char *file)
{
	char dir[600], p[700];

	if (!ctl_path(a->v2 ? "unified" : ctl, a->path, dir, sizeof(dir)))
		return false;
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	return access(p, F_OK) == 0;
}

/* v1 blkio weights (10-1000) to v2 io.weight (1-10000), as runc converts them. */
static uint64_t io_weight(uint64_t w)
{
	return w ? 1 + (w - 10) * 9999 / 990 : 0;
}

static void apply_memory(struct apply *a, const struct oci_resources *r)
{
	int64_t limit = host_memory_limit(r->memory_limit);
	bool has_limit = r->set & OCI_RES_MEMORY_LIMIT;
	bool has_swap = r->set & OCI_RES_MEMORY_SWAP;

	if (a->v2) {
		if (has_limit) {
			if (limit < 0)
				apply(a, "memory", "memory.max", "max");
			else
				apply(a, "memory", "memory.max", "%lld", (long long)limit);
		}
		/* v1's swap is memory plus swap; v2's swap.max is the swap alone. */
		if (has_swap && has_limit && r->memory_swap >= 0 && r->memory_limit >= 0 &&
		    r->memory_swap >= r->memory_limit)
			apply(a, "memory", "memory.swap.max", "%lld",
			      (long long)(r->memory_swap - r->memory_limit));
		else if (has_swap && r->memory_swap < 0)
			apply(a, "memory", "memory.swap.max", "max");
		if (r->set & OCI_RES_MEMORY_RESERVATION)
			apply(a, "memory", "memory.low", "%lld",
			      (long long)(r->memory_reservation < 0 ? 0 : r->memory_reservation));
		return;
	}
	if (has_limit || has_swap) {
		/* memsw (memory plus swap) must stay at or above the limit: with a swap figure it is
		 * lifted first, then set after the limit (the host's margin applies to both). */
		int64_t memsw = has_swap ? host_memory_limit(r->memory_swap) : 0;
		bool memsw_ok = has_file(a, "memory", "memory.memsw.limit_in_bytes");
		char dir[600];

		if (has_swap && memsw_ok && ctl_path("memory", a->path, dir, sizeof(dir)))
			write_file(dir, "memory.memsw.limit_in_bytes", "-1");
		if (has_limit)
			apply(a, "memory", "memory.limit_in_bytes", "%lld",
			      (long long)(limit < 0 ? -1 : limit));
		if (has_swap && memsw_ok)
			apply(a, "memory", "memory.memsw.limit_in_bytes", "%lld",
			      (long long)(memsw < 0 ? -1 : memsw));
		else if (has_swap && r->memory_swap >= 0 &&
			 !(has_limit && r->memory_swap == r->memory_limit))
			/* (swap equal to the limit, Kubernetes' "no swap", needs nothing) */
			oci_warn("no swap accounting (memory.memsw.limit_in_bytes): "
				 "memory.swap is not applied on the host");
	}
	if (r->set & OCI_RES_MEMORY_RESERVATION)
		apply(a, "memory", "memory.soft_limit_in_bytes", "%lld",
		      (long long)r->memory_reservation);
	if (r->set & OCI_RES_MEMORY_SWAPPINESS)
		apply(a, "memory", "memory.swappiness", "%llu",
		      (unsigned long long)r->memory_swappiness);
	/* Kernel memory limits are deprecated (newer kernels refuse them, runc ignores
	 * kernel): best effort, a warning when the host will not take them. */
	if (r->set & (OCI_RES_MEMORY_KERNEL | OCI_RES_MEMORY_KERNEL_TCP)) {
		struct apply k = { .path = a->path, .v2 = a->v2, .best_effort = true };

		if (r->set & OCI_RES_MEMORY_KERNEL)
			apply(&k, "memory", "memory.kmem.limit_in_bytes", "%lld",
			      (long long)r->memory_kernel);
		if (r->set & OCI_RES_MEMORY_KERNEL_TCP)
			apply(&k, "memory", "memory.kmem.tcp.limit_in_bytes", "%lld",
			      (long long)r->memory_kernel_tcp);
	}
}

static void apply_cpu(struct apply *a, const struct oci_resources *r)
{
	if (r->cpuset_cpus && *r->cpuset_cpus)
		apply(a, "cpuset", "cpuset.cpus", "%s", r->cpuset_cpus);
	if (r->cpuset_mems && *r->cpuset_mems)
		apply(a, "cpuset", "cpuset.mems", "%s", r->cpuset_mems);
	if (a->v2) {
		if ((r->set & OCI_RES_CPU_SHARES) && r->cpu_shares) {
			uint64_t sh = r->cpu_shares < 2 ? 2 : r->cpu_shares;

			apply(a, "cpu", "cpu.weight", "%llu",
			      (unsigned long long)(1 + (sh - 2) * 9999 / 262142));
		}
		if (r->set & (OCI_RES_CPU_QUOTA | OCI_RES_CPU_PERIOD)) {
			unsigned long long period = r->cpu_period ? r->cpu_period : 100000;

			if ((r->set & OCI_RES_CPU_QUOTA) && r->cpu_quota > 0)
				apply(a, "cpu", "cpu.max", "%lld %llu", (long long)r->cpu_quota,
				      period);
			else
				apply(a, "cpu", "cpu.max", "max %llu", period);
		}
		return;
	}
	if ((r->set & OCI_RES_CPU_SHARES) && r->cpu_shares)
		apply(a, "cpu", "cpu.shares", "%llu", (unsigned long long)r->cpu_shares);
	if ((r->set & OCI_RES_CPU_PERIOD) && r->cpu_period)
		apply(a, "cpu", "cpu.cfs_period_us", "%llu", (unsigned long long)r->cpu_period);
	if (r->set & OCI_RES_CPU_QUOTA)
		apply(a, "cpu", "cpu.cfs_quota_us", "%lld", (long long)r->cpu_quota);
	if ((r->set & OCI_RES_CPU_RT_PERIOD) && r->cpu_rt_period)
		apply(a, "cpu", "cpu.rt_period_us", "%llu", (unsigned long long)r->cpu_rt_period);
	if (r->set & OCI_RES_CPU_RT_RUNTIME)
		apply(a, "cpu", "cpu.rt_runtime_us", "%lld", (long long)r->cpu_rt_runtime);
}

static void apply_blkio(struct apply *a, const struct oci_resources *r)
{
	static const char *const v1_files[OCI_BLKIO_NLISTS] = {
		[OCI_BLKIO_WEIGHT_DEVICE] = "blkio.weight_device",
		[OCI_BLKIO_READ_BPS] = "blkio.throttle.read_bps_device",
		[OCI_BLKIO_WRITE_BPS] = "blkio.throttle.write_bps_device",
		[OCI_BLKIO_READ_IOPS] = "blkio.throttle.read_iops_device",
		[OCI_BLKIO_WRITE_IOPS] = "blkio.throttle.write_iops_device",
	};
	static const char *const v2_keys[OCI_BLKIO_NLISTS] = {
		[OCI_BLKIO_READ_BPS] = "rbps",
		[OCI_BLKIO_WRITE_BPS] = "wbps",
		[OCI_BLKIO_READ_IOPS] = "riops",
		[OCI_BLKIO_WRITE_IOPS] = "wiops",
	};
	/* Kernels with the BFQ scheduler name the weights blkio.bfq.* (io.bfq.* in v2). */
	bool bfq = has_file(a, "blkio", a->v2 ? "io.bfq.weight" : "blkio.bfq.weight");
	const char *weight = a->v2 ? (bfq ? "io.bfq.weight" : "io.weight") :
				     (bfq ? "blkio.bfq.weight" : "blkio.weight");

	if (r->set & OCI_RES_BLKIO_WEIGHT) {
		if (a->v2)
			apply(a, "blkio", weight, "default %llu",
			      (unsigned long long)(bfq ? r->blkio_weight :
							 io_weight(r->blkio_weight)));
		else
			apply(a, "blkio", weight, "%u", r->blkio_weight);
	}
	if ((r->set & OCI_RES_BLKIO_LEAF_WEIGHT) && !a->v2)
		apply(a, "blkio", "blkio.leaf_weight", "%u", r->blkio_leaf_weight);
	for (size_t i = 0; i < r->nblkio[OCI_BLKIO_WEIGHT_DEVICE]; i++) {
		const struct oci_blkio_device *d = &r->blkio[OCI_BLKIO_WEIGHT_DEVICE][i];

		if (!d->has_value)
			continue;
		if (a->v2)
			apply(a, "blkio", weight, "%lld:%lld %llu", (long long)d->major,
			      (long long)d->minor,
			      (unsigned long long)(bfq ? d->value : io_weight(d->value)));
		else
			apply(a, "blkio", bfq ? "blkio.bfq.weight_device" : "blkio.weight_device",
			      "%lld:%lld %llu", (long long)d->major, (long long)d->minor,
			      (unsigned long long)d->value);
		if (d->leaf_weight && !a->v2)
			apply(a, "blkio", "blkio.leaf_weight_device", "%lld:%lld %llu",
			      (long long)d->major, (long long)d->minor,
			      (unsigned long long)d->leaf_weight);
	}
	for (int k = OCI_BLKIO_READ_BPS; k < OCI_BLKIO_NLISTS; k++) {
		for (size_t i = 0; i < r->nblkio[k]; i++) {
			const struct oci_blkio_device *d = &r->blkio[k][i];

			if (a->v2)
				apply(a, "blkio", "io.max", "%lld:%lld %s=%llu",
				      (long long)d->major, (long long)d->minor, v2_keys[k],
				      (unsigned long long)d->value);
			else
				apply(a, "blkio", v1_files[k], "%lld:%lld %llu",
				      (long long)d->major, (long long)d->minor,
				      (unsigned long long)d->value);
		}
	}
}

static void apply_other(struct apply *a, const struct oci_resources *r)
{
	char file[128];

	char dir[600], mnt[256];
	/* Hybrid hosts often leave hugetlb to the v2 hierarchy (no v1 hugetlb mount): then the
	 * limits go to the container's unified cgroup, the controller enabled above it. */
	bool unified = r->nhugepages && !a->v2 && !ctl_path("hugetlb", a->path, dir, sizeof(dir)) &&
		       ctl_mount("unified", mnt, sizeof(mnt)) &&
		       ctl_path("unified", a->path, dir, sizeof(dir));

	if (unified) {
		static const char *const ctls[] = { "+hugetlb", NULL };

		v2_enable(mnt, dir, ctls);
	}
	for (size_t i = 0; i < r->nhugepages; i++) {
		snprintf(file, sizeof(file), "hugetlb.%s.%s", r->hugepages[i].page_size,
			 a->v2 || unified ? "max" : "limit_in_bytes");
		if (unified) {
			struct apply u = { .path = a->path, .v2 = true };

			apply(&u, "hugetlb", file, "%llu",
			      (unsigned long long)r->hugepages[i].limit);
			if (u.err && !a->err)
				a->err = u.err;
		} else {
			apply(a, "hugetlb", file, "%llu",
			      (unsigned long long)r->hugepages[i].limit);
		}
	}
	/* net_cls and net_prio have no v2 counterpart. */
	if ((r->set & OCI_RES_NET_CLASSID) && !a->v2)
		apply(a, "net_cls", "net_cls.classid", "%u", r->net_classid);
	else if (r->set & OCI_RES_NET_CLASSID)
		oci_warn("no net_cls controller in cgroup v2: network.classID is not applied");
	for (size_t i = 0; i < r->nnet_priorities; i++) {
		if (a->v2) {
			oci_warn("no net_prio controller in cgroup v2: network.priorities are not "
				 "applied");
			break;
		}
		apply(a, "net_prio", "net_prio.ifpriomap", "%s %u", r->net_priorities[i].name,
		      r->net_priorities[i].priority);
	}
}

/*
 * Applies linux.resources to the container's cgroups. The pids limit is left to the sentry
 * (--pids-limit counts guest tasks; the host cgroup would count the sentry's own threads and
 * stubs, so it gets none). Returns 0, or the first write's -errno (printed, naming the file).
 */
static int cgroup_apply(const char *path, const struct oci_resources *r)
{
	struct apply a = { .path = path, .v2 = is_pure_v2() };
	char dir[600];

	/* An update may name a controller create did not need. */
	if (a.v2 && ctl_path("unified", path, dir, sizeof(dir)))
		v2_enable_controllers(dir, r);
	apply_memory(&a, r);
	apply_cpu(&a, r);
	apply_blkio(&a, r);
	apply_other(&a, r);
	return a.err;
}

/*
 * Attaches the BPF egress programs to path's v2 cgroup when the annotations ask for host
 * networking. Returns 0 (also when BPF is unavailable: a warning says so), or -EINVAL for a
 * malformed dev.husk.network/egress-* annotation.
 */
static int attach_egress(const char *path, const struct oci_config *cfg)
{
	char **args = NULL;
	char dir[600], why[700], allow[512];
	bool host;
	int ret;

	ret = netbpf_annotation_args(oci_network_mode(cfg),
				     oci_network_egress_allow(cfg, allow, sizeof(allow)),
				     oci_config_annotation(cfg, "dev.husk.egress-deny"), &args, why,
				     sizeof(why));
	if (ret < 0) {
		oci_fail("%s", ret == -EINVAL ? why : strerror(-ret));
		return ret;
	}
	host = args && args[0] && !strcmp(args[0], "--network=host");
	if (host && (!path || !ctl_path("unified", path, dir, sizeof(dir)))) {
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
	struct hier h[MAX_HIERS];
	int n = hierarchies(h, MAX_HIERS);
	char dir[600];

	for (int i = 0; i < n; i++) {
		if (hier_dir(&h[i], path, dir, sizeof(dir)) < 0)
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
	struct hier h[MAX_HIERS];
	int n = hierarchies(h, MAX_HIERS);
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

	for (int i = 0; i < n; i++) {
		if (hier_dir(&h[i], path, dir, sizeof(dir)) < 0)
			continue;
		ret = mkdir_p(h[i].mnt, dir, !h[i].v2 && !strcmp(h[i].mnt, CGROUP_ROOT "/cpuset"));
		if (ret < 0) {
			/* A v2 hierarchy beside v1 ones is optional; a needed one is not. */
			if (h[i].v2 && !is_pure_v2())
				continue;
			cgroup_destroy(path);
			return ret;
		}
		if (h[i].v2 && is_pure_v2())
			v2_enable_controllers(dir, &cfg->resources);
	}
	ret = cgroup_apply(path, &cfg->resources);
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
	struct hier h[MAX_HIERS];
	int n = hierarchies(h, MAX_HIERS);
	char dir[600], val[32];
	int ret;

	snprintf(val, sizeof(val), "%d", (int)pid);
	for (int i = 0; i < n; i++) {
		if (hier_dir(&h[i], path, dir, sizeof(dir)) < 0)
			continue;
		ret = write_file(dir, "cgroup.procs", val);
		if (ret < 0 && !(h[i].v2 && !is_pure_v2()))
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
	struct hier h[MAX_HIERS];
	int n = hierarchies(h, MAX_HIERS);
	char dir[600];
	int ret = 0;

	cgroup_freeze(path, false); /* frozen processes cannot die */
	for (int i = 0; i < n; i++) {
		bool removed = false;

		if (hier_dir(&h[i], path, dir, sizeof(dir)) < 0)
			continue;
		if (access(dir, F_OK) < 0)
			continue;
		/* Stubs and the gofer die with the sentry; anything else left is killed. */
		for (int tries = 0; tries < 500 && !removed; tries++) {
			struct timespec ts = { 0, 10 * 1000 * 1000 };
			pid_t pids[256];
			int np = pids_in(dir, pids, 256);

			if (tries >= 50)
				for (int j = 0; j < np; j++)
					kill(pids[j], SIGKILL);
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

	if (ctl_path("freezer", path, dir, sizeof(dir)) && access(dir, F_OK) == 0) {
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
	if (ctl_path("unified", path, dir, sizeof(dir)) && access(dir, F_OK) == 0) {
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

	if (ctl_path("freezer", path, dir, sizeof(dir)) &&
	    read_file(dir, "freezer.state", buf, sizeof(buf)) > 0)
		return !strncmp(buf, "FROZEN", 6) || !strncmp(buf, "FREEZING", 8);
	if (ctl_path("unified", path, dir, sizeof(dir)) &&
	    read_file(dir, "cgroup.freeze", buf, sizeof(buf)) > 0)
		return buf[0] == '1';
	return false;
}

int cgroup_update(const char *path, const struct oci_resources *res)
{
	return cgroup_apply(path, res);
}

int cgroup_pids(const char *path, pid_t **pids)
{
	static const char *const ctls[] = { "memory", "pids", "cpu", "freezer", "unified" };
	char dir[600];
	pid_t *out;
	int n = 0;

	out = calloc(4096, sizeof(pid_t));
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < sizeof(ctls) / sizeof(ctls[0]) && n == 0; i++) {
		if (ctl_path(ctls[i], path, dir, sizeof(dir)))
			n = pids_in(dir, out, 4096);
	}
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

	st->memory_usage = st->memory_limit = st->pids_current = st->pids_limit = -1;
	st->cpu_usage_ns = -1;
	if (is_pure_v2() && ctl_path("unified", path, dir, sizeof(dir))) {
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
	if (ctl_path("memory", path, dir, sizeof(dir))) {
		st->memory_usage = read_i64(dir, "memory.usage_in_bytes");
		st->memory_limit = read_i64(dir, "memory.limit_in_bytes");
	}
	if (ctl_path("pids", path, dir, sizeof(dir))) {
		st->pids_current = read_i64(dir, "pids.current");
		st->pids_limit = read_i64(dir, "pids.max");
	}
	if (ctl_path("cpu", path, dir, sizeof(dir)))
		st->cpu_usage_ns = read_i64(dir, "cpuacct.usage");
	if (st->cpu_usage_ns < 0 && ctl_path("cpuacct", path, dir, sizeof(dir)))
		st->cpu_usage_ns = read_i64(dir, "cpuacct.usage");
}
