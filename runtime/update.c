/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk update [runc's flags: --memory, --memory-reservation, --memory-swap, --kernel-memory,
 *             --kernel-memory-tcp, --pids-limit, --cpu-share, --cpu-quota, --cpu-period,
 *             --cpu-rt-runtime, --cpu-rt-period, --cpuset-cpus, --cpuset-mems, --blkio-weight]
 *             [-r FILE|-] ID
 * changes the container's resources (-r reads linux.resources JSON, as runc update -r, and then
 * the other flags are ignored, as runc does). The memory and pids limits go to the running
 * sentry, which enforces them for the guest at once (CONTROL_UPDATE: a memory limit below the
 * usage OOM-kills down to it); everything else, and the memory limit, to the sandbox's host
 * cgroups (cgroup.c).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
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

/* Reads a whole file (or stdin for "-") for -r. Returns a malloc'd buffer or NULL (errno). */
static char *read_all(const char *name, size_t *len)
{
	FILE *f = !strcmp(name, "-") ? stdin : fopen(name, "re");
	char *buf = NULL;
	size_t cap = 0, n = 0;

	if (!f)
		return NULL;
	for (;;) {
		if (n + 4096 > cap) {
			char *nb = realloc(buf, cap = cap ? cap * 2 : 8192);

			if (!nb || cap > (16u << 20)) {
				free(nb ? nb : buf);
				buf = NULL;
				errno = nb ? EFBIG : ENOMEM;
				break;
			}
			buf = nb;
		}
		size_t got = fread(buf + n, 1, cap - n, f);

		n += got;
		if (got == 0)
			break;
	}
	if (f != stdin)
		fclose(f);
	*len = n;
	return buf;
}

/* runc update's flags, in longopts' order (F_x - 256 is the index there). */
enum {
	F_MEMORY = 256,
	F_MEMORY_RESERVATION,
	F_MEMORY_SWAP,
	F_KERNEL_MEMORY,
	F_KERNEL_MEMORY_TCP,
	F_PIDS,
	F_CPU_SHARES,
	F_CPU_QUOTA,
	F_CPU_PERIOD,
	F_CPU_RT_RUNTIME,
	F_CPU_RT_PERIOD,
	F_CPUSET_CPUS,
	F_CPUSET_MEMS,
	F_BLKIO_WEIGHT,
	F_L3,
	F_MEMBW,
};

/* A flag's integer value (runc's: an integer; -1 where it means unlimited). */
static int parse_int_flag(const char *name, const char *s, long long min, long long *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || *end || errno || v < min)
		return oci_fail("invalid value for --%s: %s", name, s);
	*out = v;
	return 0;
}

int cmd_update(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "memory", required_argument, NULL, F_MEMORY },
		{ "memory-reservation", required_argument, NULL, F_MEMORY_RESERVATION },
		{ "memory-swap", required_argument, NULL, F_MEMORY_SWAP },
		{ "kernel-memory", required_argument, NULL, F_KERNEL_MEMORY },
		{ "kernel-memory-tcp", required_argument, NULL, F_KERNEL_MEMORY_TCP },
		{ "pids-limit", required_argument, NULL, F_PIDS },
		{ "cpu-share", required_argument, NULL, F_CPU_SHARES },
		{ "cpu-quota", required_argument, NULL, F_CPU_QUOTA },
		{ "cpu-period", required_argument, NULL, F_CPU_PERIOD },
		{ "cpu-rt-runtime", required_argument, NULL, F_CPU_RT_RUNTIME },
		{ "cpu-rt-period", required_argument, NULL, F_CPU_RT_PERIOD },
		{ "cpuset-cpus", required_argument, NULL, F_CPUSET_CPUS },
		{ "cpuset-mems", required_argument, NULL, F_CPUSET_MEMS },
		{ "blkio-weight", required_argument, NULL, F_BLKIO_WEIGHT },
		{ "l3-cache-schema", required_argument, NULL, F_L3 },
		{ "mem-bw-schema", required_argument, NULL, F_MEMBW },
		{ "resources", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	struct oci_resources res = { 0 }, flags = { 0 };
	struct oci_error err;
	struct container c;
	int64_t memory = -2, pids = -2;
	const char *res_file = NULL;
	long long v;
	int opt, ret = 0;

	optind = 1;
	while ((opt = getopt_long_only(argc, argv, "+r:", longopts, NULL)) != -1) {
		const char *name = opt >= 256 ? longopts[opt - 256].name : NULL;
		int64_t bytes;

		switch (opt) {
		case F_MEMORY:
		case F_MEMORY_RESERVATION:
		case F_MEMORY_SWAP:
		case F_KERNEL_MEMORY:
		case F_KERNEL_MEMORY_TCP:
			if (parse_bytes(optarg, &bytes) < 0)
				return oci_fail("invalid value for --%s: %s", name, optarg);
			if (opt == F_MEMORY) {
				flags.memory_limit = bytes;
				flags.set |= OCI_RES_MEMORY_LIMIT;
			} else if (opt == F_MEMORY_RESERVATION) {
				flags.memory_reservation = bytes;
				flags.set |= OCI_RES_MEMORY_RESERVATION;
			} else if (opt == F_MEMORY_SWAP) {
				flags.memory_swap = bytes;
				flags.set |= OCI_RES_MEMORY_SWAP;
			} else if (opt == F_KERNEL_MEMORY) {
				flags.memory_kernel = bytes;
				flags.set |= OCI_RES_MEMORY_KERNEL;
			} else {
				flags.memory_kernel_tcp = bytes;
				flags.set |= OCI_RES_MEMORY_KERNEL_TCP;
			}
			break;
		case F_PIDS:
			if (parse_int_flag(name, optarg, LLONG_MIN, &v))
				return 1;
			flags.pids_limit = v <= 0 ? -1 : v;
			flags.set |= OCI_RES_PIDS_LIMIT;
			break;
		case F_CPU_SHARES:
		case F_CPU_PERIOD:
		case F_CPU_RT_PERIOD:
			if (parse_int_flag(name, optarg, 0, &v))
				return 1;
			if (opt == F_CPU_SHARES)
				flags.cpu_shares = (uint64_t)v;
			else if (opt == F_CPU_PERIOD)
				flags.cpu_period = (uint64_t)v;
			else
				flags.cpu_rt_period = (uint64_t)v;
			flags.set |= opt == F_CPU_SHARES ? OCI_RES_CPU_SHARES :
				     opt == F_CPU_PERIOD ? OCI_RES_CPU_PERIOD :
							   OCI_RES_CPU_RT_PERIOD;
			break;
		case F_CPU_QUOTA:
		case F_CPU_RT_RUNTIME:
			if (parse_int_flag(name, optarg, -1, &v))
				return 1;
			if (opt == F_CPU_QUOTA) {
				flags.cpu_quota = v;
				flags.set |= OCI_RES_CPU_QUOTA;
			} else {
				flags.cpu_rt_runtime = v;
				flags.set |= OCI_RES_CPU_RT_RUNTIME;
			}
			break;
		case F_CPUSET_CPUS:
			flags.cpuset_cpus = optarg;
			break;
		case F_CPUSET_MEMS:
			flags.cpuset_mems = optarg;
			break;
		case F_BLKIO_WEIGHT:
			if (parse_int_flag(name, optarg, 0, &v))
				return 1;
			/* runc: 0 leaves the weight alone; otherwise 10 to 1000. */
			if (v && (v < 10 || v > 1000))
				return oci_fail("invalid value for --blkio-weight: %s (expected 10 "
						"to 1000)",
						optarg);
			if (v) {
				flags.blkio_weight = (uint16_t)v;
				flags.set |= OCI_RES_BLKIO_WEIGHT;
			}
			break;
		case F_L3:
		case F_MEMBW:
			return oci_fail("--%s: Intel RDT is not supported by husk", name);
		case 'r':
			res_file = optarg;
			break;
		default:
			return 1;
		}
	}
	if (optind != argc - 1)
		return oci_fail("update: expected exactly one container id");
	/* As runc: with -r the file's resources are applied and the other flags ignored. */
	if (res_file) {
		size_t len = 0;
		_cleanup_free_ char *buf = read_all(res_file, &len);

		if (!buf)
			return oci_fail("resources %s: %s", res_file, strerror(errno));
		if (oci_resources_parse(buf, len, res_file, &res, &err) < 0)
			return oci_fail("%s", err.msg);
	} else {
		res = flags;
	}
	if (res.set & OCI_RES_MEMORY_LIMIT)
		memory = res.memory_limit < 0 ? -1 : res.memory_limit;
	if (res.set & OCI_RES_PIDS_LIMIT)
		pids = res.pids_limit;
	if (oci_load_or_fail(argv[optind], &c)) {
		oci_resources_free(&res);
		return 1;
	}
	if (container_status(&c) == CONTAINER_STOPPED)
		ret = oci_fail("container not running");
	/* The sentry first: a lower memory limit kills down to it there before the host's. */
	if (!ret && (memory != -2 || pids != -2)) {
		int r = sentry_update(&c, memory, pids);
		if (r < 0)
			ret = oci_fail("update: the sandbox's control socket: %s", strerror(-r));
	}
	/*
	 * As at create, the host cgroup gets no pids limit: it would count the sentry's own
	 * threads and stubs (a low one stops the sentry from serving its control socket).
	 */
	if (!ret && c.cgroup && cgroup_update(c.cgroup, &res) < 0)
		ret = 1;
	container_release(&c);
	if (res_file)
		oci_resources_free(&res);
	return ret;
}
