/* SPDX-License-Identifier: Apache-2.0 */
/*
 * procfs, the top level: /proc/{self, thread-self, PID/, cpuinfo, meminfo, stat, uptime,
 * loadavg, version, filesystems, mounts, cmdline, sys/...}. Per-process files are in
 * proc_pid.c.
 */
#include <cpuid.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <time.h>

#include "common/cpus.h"
#include "common/err.h"
#include "common/util.h"
#include "include/abi/linux/errno.h"
#include "sentry/fs/anon/anon.h"
#include "sentry/fs/pipe/pipe.h"
#include "sentry/fs/proc/proc.h"
#include "sentry/fs/proc/proc_ids.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/kernel/current.h"
#include "sentry/kernel/ipc.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/nsproxy.h"
#include "sentry/kernel/pidns.h"
#include "sentry/kernel/sysctl.h"
#include "sentry/kernel/task.h"
#include "sentry/net/net.h"
#include "sentry/time/vtime.h"
#include "sentry/vfs/internal.h"

long proc_parse_num(const char *name)
{
	long v = 0;

	if (!*name || (name[0] == '0' && name[1]) || strlen(name) > 9)
		return -1;
	for (const char *p = name; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (*p - '0');
	}
	return v;
}

unsigned int proc_ncpus(void)
{
	cpu_set_t set;
	int n;

	if (husk_cpus_get(&set))
		return 1;
	n = CPU_COUNT(&set);
	return n > 0 ? (unsigned int)n : 1;
}

static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * The sandbox's uptime: the guest's MONOTONIC since the sentry started, so without its pauses
 * (k->boot_ns is the host's, converted with the offset of then: sentry/time/vtime.h).
 */
static uint64_t uptime_ns(struct kernel *k)
{
	uint64_t now = vtime_host_to_guest_mono(now_ns(CLOCK_MONOTONIC)), boot;

	if (!k)
		return 0;
	boot = vtime_host_to_guest_mono(k->boot_ns);
	return now > boot ? now - boot : 0;
}

/* --- self and thread-self --- */

/* t's pid and tid in the pid namespace of the proc instance of n (0: not visible there). */
static void nrs_in(struct pseudo_node *n, struct task *t, int32_t *pid, int32_t *tid)
{
	struct pid_ns *ns = pseudo_fs_of(n)->pidns;

	if (!ns) {
		*pid = task_pid(t);
		*tid = t->tid;
		return;
	}
	pthread_mutex_lock(&t->k->tree_lock);
	*pid = pid_ns_tg_nr(t->tg, ns);
	*tid = pid_ns_task_nr(t, ns);
	pthread_mutex_unlock(&t->k->tree_lock);
}

static ssize_t self_readlink(struct pseudo_node *n, char *buf, size_t len)
{
	struct task *t = task_current();
	int32_t pid, tid;
	char s[32];

	if (!t)
		return -ENOENT;
	nrs_in(n, t, &pid, &tid);
	if (!pid)
		return -ENOENT; /* a reader outside the namespace of this proc */
	snprintf(s, sizeof(s), "%d", (int)pid);
	return pseudo_copy_link(s, buf, len);
}

static ssize_t thread_self_readlink(struct pseudo_node *n, char *buf, size_t len)
{
	struct task *t = task_current();
	int32_t pid, tid;
	char s[48];

	if (!t)
		return -ENOENT;
	nrs_in(n, t, &pid, &tid);
	if (!pid)
		return -ENOENT;
	snprintf(s, sizeof(s), "%d/task/%d", (int)pid, (int)tid);
	return pseudo_copy_link(s, buf, len);
}

static ssize_t mounts_readlink(struct pseudo_node *n, char *buf, size_t len)
{
	return pseudo_copy_link("self/mounts", buf, len);
}

/* --- system-wide files --- */

struct cpu_flag {
	int reg; /* 0 ecx of leaf 1, 1 edx of leaf 1, 2 ebx of leaf 7, 3 ecx of leaf 7 */
	int bit;
	const char *name;
};

/* The common flags, in Linux's order of words (edx of leaf 1 first). */
static const struct cpu_flag cpu_flags[] = {
	{ 1, 0, "fpu" },       { 1, 1, "vme" },		{ 1, 2, "de" },
	{ 1, 3, "pse" },       { 1, 4, "tsc" },		{ 1, 5, "msr" },
	{ 1, 6, "pae" },       { 1, 7, "mce" },		{ 1, 8, "cx8" },
	{ 1, 9, "apic" },      { 1, 11, "sep" },	{ 1, 12, "mtrr" },
	{ 1, 13, "pge" },      { 1, 14, "mca" },	{ 1, 15, "cmov" },
	{ 1, 16, "pat" },      { 1, 17, "pse36" },	{ 1, 19, "clflush" },
	{ 1, 23, "mmx" },      { 1, 24, "fxsr" },	{ 1, 25, "sse" },
	{ 1, 26, "sse2" },     { 1, 28, "ht" },		{ 0, 0, "pni" },
	{ 0, 1, "pclmulqdq" }, { 0, 9, "ssse3" },	{ 0, 12, "fma" },
	{ 0, 13, "cx16" },     { 0, 19, "sse4_1" },	{ 0, 20, "sse4_2" },
	{ 0, 22, "movbe" },    { 0, 23, "popcnt" },	{ 0, 25, "aes" },
	{ 0, 26, "xsave" },    { 0, 28, "avx" },	{ 0, 29, "f16c" },
	{ 0, 30, "rdrand" },   { 2, 0, "fsgsbase" },	{ 2, 3, "bmi1" },
	{ 2, 5, "avx2" },      { 2, 8, "bmi2" },	{ 2, 9, "erms" },
	{ 2, 16, "avx512f" },  { 2, 17, "avx512dq" },	{ 2, 18, "rdseed" },
	{ 2, 19, "adx" },      { 2, 29, "sha_ni" },	{ 2, 30, "avx512bw" },
	{ 2, 31, "avx512vl" }, { 3, 1, "avx512vbmi" },	{ 3, 8, "gfni" },
	{ 3, 9, "vaes" },      { 3, 10, "vpclmulqdq" },
};

static int gen_cpuinfo(struct pseudo_node *n, FILE *out)
{
	unsigned int a, b, c, d, regs[4] = { 0 }, family, model, stepping, ncpu = proc_ncpus();
	char vendor[13] = { 0 }, brand[49] = { 0 };

	__cpuid(0, a, b, c, d);
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &d, 4);
	memcpy(vendor + 8, &c, 4);
	__cpuid(1, a, b, regs[0], regs[1]);
	family = (a >> 8) & 0xf;
	model = (a >> 4) & 0xf;
	stepping = a & 0xf;
	if (family == 0xf)
		family += (a >> 20) & 0xff;
	if (family >= 6)
		model += ((a >> 16) & 0xf) << 4;
	if (__get_cpuid_max(0, NULL) >= 7)
		__cpuid_count(7, 0, a, regs[2], regs[3], d);
	if (__get_cpuid_max(0x80000000, NULL) >= 0x80000004) {
		for (unsigned int i = 0; i < 3; i++) {
			__cpuid(0x80000002 + i, a, b, c, d);
			memcpy(brand + i * 16, &a, 4);
			memcpy(brand + i * 16 + 4, &b, 4);
			memcpy(brand + i * 16 + 8, &c, 4);
			memcpy(brand + i * 16 + 12, &d, 4);
		}
	}
	for (unsigned int cpu = 0; cpu < ncpu; cpu++) {
		fprintf(out,
			"processor\t: %u\nvendor_id\t: %s\ncpu family\t: %u\nmodel\t\t: %u\n"
			"model name\t: %s\nstepping\t: %u\nmicrocode\t: 0x0\ncpu MHz\t\t: 0.000\n"
			"cache size\t: 0 KB\nphysical id\t: 0\nsiblings\t: %u\ncore id\t\t: %u\n"
			"cpu cores\t: %u\napicid\t\t: %u\ninitial apicid\t: %u\nfpu\t\t: yes\n"
			"fpu_exception\t: yes\ncpuid level\t: %u\nwp\t\t: yes\nflags\t\t:",
			cpu, vendor, family, model, brand[0] ? brand : "unknown", stepping, ncpu,
			cpu, ncpu, cpu, cpu, __get_cpuid_max(0, NULL));
		for (size_t i = 0; i < ARRAY_SIZE(cpu_flags); i++)
			if (regs[cpu_flags[i].reg] & (1u << cpu_flags[i].bit))
				fprintf(out, " %s", cpu_flags[i].name);
		fprintf(out,
			"\nbogomips\t: 0.00\nclflush size\t: 64\ncache_alignment\t: 64\n"
			"address sizes\t: 46 bits physical, 48 bits virtual\npower management:\n\n");
	}
	return 0;
}

static int gen_meminfo(struct pseudo_node *n, FILE *out)
{
	struct kernel *k = pseudo_fs_of(n)->k;
	struct sysinfo si;
	uint64_t total, free_;

	if (sysinfo(&si))
		return -errno;
	total = (uint64_t)si.totalram * si.mem_unit;
	free_ = (uint64_t)si.freeram * si.mem_unit;
	/* As sysinfo(2): the host's figures, capped by the memory file. */
	if (k && k->mf.size && total > k->mf.size)
		total = k->mf.size;
	if (free_ > total)
		free_ = total;
	total >>= 10;
	free_ >>= 10;
	fprintf(out,
		"MemTotal:       %8" PRIu64 " kB\nMemFree:        %8" PRIu64 " kB\n"
		"MemAvailable:   %8" PRIu64 " kB\nBuffers:        %8d kB\nCached:         %8d kB\n"
		"SwapCached:     %8d kB\nActive:         %8d kB\nInactive:       %8d kB\n"
		"SwapTotal:      %8d kB\nSwapFree:       %8d kB\nDirty:          %8d kB\n"
		"Writeback:      %8d kB\nAnonPages:      %8d kB\nMapped:         %8d kB\n"
		"Shmem:          %8d kB\nCommitLimit:    %8" PRIu64 " kB\n"
		"Committed_AS:   %8" PRIu64 " kB\nVmallocTotal:   34359738367 kB\n"
		"VmallocUsed:    %8d kB\nVmallocChunk:   %8d kB\nHugePages_Total:   %5d\n"
		"HugePages_Free:    %5d\nHugePages_Rsvd:    %5d\nHugePages_Surp:    %5d\n"
		"Hugepagesize:   %8d kB\n",
		total, free_, free_, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, total / 2, total - free_,
		0, 0, 0, 0, 0, 0, 2048);
	return 0;
}

static int gen_stat(struct pseudo_node *n, FILE *out)
{
	struct kernel *k = pseudo_fs_of(n)->k;
	unsigned int ncpu = proc_ncpus();
	uint64_t up = uptime_ns(k), boot = (now_ns(CLOCK_REALTIME) - up) / 1000000000ULL;
	/* The sandbox's guest time as user and system, the rest of its uptime on every CPU idle. */
	struct cputime busy = k ? cputime_kernel(k) : (struct cputime){ 0, 0 };
	unsigned long long user = proc_ticks(busy.utime), sys = proc_ticks(busy.stime);
	unsigned long long all = proc_ticks(up) * ncpu;
	unsigned long long idle = all > user + sys ? all - user - sys : 0;

	fprintf(out, "cpu  %llu 0 %llu %llu 0 0 0 0 0 0\n", user, sys, idle);
	for (unsigned int i = 0; i < ncpu; i++)
		fprintf(out, "cpu%u %llu 0 %llu %llu 0 0 0 0 0 0\n", i, user / ncpu, sys / ncpu,
			idle / ncpu);
	fprintf(out,
		"intr 0\nctxt 0\nbtime %" PRIu64 "\nprocesses %d\nprocs_running 1\n"
		"procs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n",
		boot, k ? k->next_tid : 1);
	return 0;
}

static int gen_uptime(struct pseudo_node *n, FILE *out)
{
	struct kernel *k = pseudo_fs_of(n)->k;
	uint64_t up = uptime_ns(k);
	struct cputime busy = k ? cputime_kernel(k) : (struct cputime){ 0, 0 };
	unsigned long long cs = up / 10000000ULL, all = cs * proc_ncpus();
	unsigned long long used = (busy.utime + busy.stime) / 10000000ULL;
	unsigned long long idle = all > used ? all - used : 0; /* CPU time not spent by the guest */

	fprintf(out, "%llu.%02llu %llu.%02llu\n", cs / 100, cs % 100, idle / 100, idle % 100);
	return 0;
}

static int count_tg(struct thread_group *tg, void *arg)
{
	*(int *)arg += tg->nr_threads;
	return 0;
}

static int gen_loadavg(struct pseudo_node *n, FILE *out)
{
	struct kernel *k = pseudo_fs_of(n)->k;
	int threads = 0, last = 0;

	if (k && k->pids) {
		pthread_mutex_lock(&k->tree_lock);
		pid_for_each_tg(k, count_tg, &threads);
		pthread_mutex_unlock(&k->tree_lock);
		pthread_mutex_lock(&k->lock);
		last = k->next_tid - 1;
		pthread_mutex_unlock(&k->lock);
	}
	fprintf(out, "0.00 0.00 0.00 1/%d %d\n", threads ? threads : 1, last > 0 ? last : 0);
	return 0;
}

static int gen_version(struct pseudo_node *n, FILE *out)
{
	fprintf(out, "Linux version %s (husk@husk) (husk sentry) %s\n", HUSK_UTS_RELEASE,
		HUSK_UTS_VERSION);
	return 0;
}

static int gen_filesystems(struct pseudo_node *n, FILE *out)
{
	/* What a guest can mount (sys_mount.c) and what mountinfo shows, in Linux's order. */
	fputs("nodev\tsysfs\nnodev\ttmpfs\nnodev\tproc\nnodev\tcgroup2\nnodev\tpipefs\n"
	      "nodev\tdevpts\nnodev\tmqueue\nnodev\t9p\nnodev\toverlay\nnodev\tanon_inodefs\n",
	      out);
	return 0;
}

static int gen_cmdline(struct pseudo_node *n, FILE *out)
{
	fputs("BOOT_IMAGE=/husk quiet\n", out);
	return 0;
}

/* --- sys/: the sysctl table (sentry/kernel/sysctl.c) and the generated files --- */

/* Entry ids of sysctl files: SYSCTL_ENT_BASE + enum sysctl_id (below pseudo_ino's 4096). */
#define SYSCTL_ENT_BASE 600

static int gen_sysctl(struct pseudo_node *n, FILE *out)
{
	char buf[256];
	ssize_t len = sysctl_read((enum sysctl_id)(n->ent->id - SYSCTL_ENT_BASE), buf, sizeof(buf));

	if (len < 0)
		return (int)len;
	fwrite(buf, 1, (size_t)len, out);
	return 0;
}

/*
 * As Linux (proc_sys_permission, net_ctl_permissions): a sysctl file is writable by euid 0, and
 * a net.* one by CAP_NET_ADMIN too; some handlers want CAP_NET_ADMIN even from root
 * (net.ipv4.ip_forward: EPERM). The value is parsed and checked by the table (EINVAL).
 */
static ssize_t write_sysctl(struct pseudo_node *n, const char *buf, size_t len)
{
	enum sysctl_id id = (enum sysctl_id)(n->ent->id - SYSCTL_ENT_BASE);
	const struct sysctl_def *d = sysctl_def(id);
	struct task *t = task_current();

	if (!d || (d->flags & SYSCTL_F_RO))
		return -EACCES;
	if (t) {
		bool net_admin = cred_capable(&t->cred, CAP_NET_ADMIN);

		if (t->cred.euid != 0 && !((d->flags & SYSCTL_F_NET) && net_admin))
			return -EACCES;
		if ((d->flags & SYSCTL_F_NET_ADMIN) && !net_admin)
			return -EPERM;
	}
	return sysctl_write(id, buf, len);
}

static int gen_osrelease(struct pseudo_node *n, FILE *out)
{
	fprintf(out, "%s\n", HUSK_UTS_RELEASE);
	return 0;
}

static int gen_ostype(struct pseudo_node *n, FILE *out)
{
	fputs("Linux\n", out);
	return 0;
}

static int gen_kversion(struct pseudo_node *n, FILE *out)
{
	fprintf(out, "%s\n", HUSK_UTS_VERSION);
	return 0;
}

static void print_uuid(FILE *out, const uint8_t u[16])
{
	fprintf(out, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n", u[0],
		u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
		u[14], u[15]);
}

/* A random version-4 UUID. */
static int make_uuid(uint8_t u[16])
{
	if (getrandom(u, 16, 0) != 16)
		return -EIO;
	u[6] = (u[6] & 0x0f) | 0x40;
	u[8] = (u[8] & 0x3f) | 0x80;
	return 0;
}

static int gen_uuid(struct pseudo_node *n, FILE *out)
{
	uint8_t u[16];
	int err = make_uuid(u);

	if (err < 0)
		return err;
	print_uuid(out, u);
	return 0;
}

static uint8_t boot_id[16];
static pthread_once_t boot_id_once = PTHREAD_ONCE_INIT;

static void boot_id_init(void)
{
	if (make_uuid(boot_id) < 0)
		memset(boot_id, 0x42, sizeof(boot_id));
}

/* One per sentry (the sandbox's "boot"), as Linux's is one per boot. */
static int gen_boot_id(struct pseudo_node *n, FILE *out)
{
	pthread_once(&boot_id_once, boot_id_init);
	print_uuid(out, boot_id);
	return 0;
}

static int gen_pipe_max_size(struct pseudo_node *n, FILE *out)
{
	fprintf(out, "%d\n", PIPE_MAX_SIZE);
	return 0;
}

#define REG(nm, id_, fn) PSEUDO_REG(nm, id_, fn)
#define DIR(nm, id_, ch) PSEUDO_DIR(nm, id_, ch, 0555)

/* A sysctl file: 0644, or 0444 for one the sandbox may not change (SYSCTL_F_RO). */
#define SYSCTL_RW(nm, sid)                                                                    \
	{                                                                                     \
		.name = nm, .mode = S_IFREG | 0644, .gen = gen_sysctl, .write = write_sysctl, \
		.id = SYSCTL_ENT_BASE + (sid)                                                 \
	}
#define SYSCTL_RO(nm, sid) REG(nm, SYSCTL_ENT_BASE + (sid), gen_sysctl)

static const struct pseudo_ent sys_kernel_random_ents[] = {
	REG("boot_id", 40, gen_boot_id),
	REG("uuid", 41, gen_uuid),
	{ 0 },
};

static const struct pseudo_ent sys_kernel_ents[] = {
	SYSCTL_RO("cap_last_cap", SYSCTL_KERNEL_CAP_LAST_CAP),
	SYSCTL_RW("domainname", SYSCTL_KERNEL_DOMAINNAME),
	SYSCTL_RW("hostname", SYSCTL_KERNEL_HOSTNAME),
	SYSCTL_RW("msgmax", SYSCTL_KERNEL_MSGMAX),
	SYSCTL_RW("msgmnb", SYSCTL_KERNEL_MSGMNB),
	SYSCTL_RW("msgmni", SYSCTL_KERNEL_MSGMNI),
	SYSCTL_RO("ngroups_max", SYSCTL_KERNEL_NGROUPS_MAX),
	REG("osrelease", 53, gen_osrelease),
	REG("ostype", 54, gen_ostype),
	SYSCTL_RO("pid_max", SYSCTL_KERNEL_PID_MAX),
	DIR("random", 56, sys_kernel_random_ents),
	SYSCTL_RW("sem", SYSCTL_KERNEL_SEM),
	SYSCTL_RW("shm_rmid_forced", SYSCTL_KERNEL_SHM_RMID_FORCED),
	SYSCTL_RW("shmall", SYSCTL_KERNEL_SHMALL),
	SYSCTL_RW("shmmax", SYSCTL_KERNEL_SHMMAX),
	SYSCTL_RW("shmmni", SYSCTL_KERNEL_SHMMNI),
	REG("version", 57, gen_kversion),
	{ 0 },
};

static const struct pseudo_ent sys_fs_mqueue_ents[] = {
	SYSCTL_RW("msg_default", SYSCTL_FS_MQUEUE_MSG_DEFAULT),
	SYSCTL_RW("msg_max", SYSCTL_FS_MQUEUE_MSG_MAX),
	SYSCTL_RW("msgsize_default", SYSCTL_FS_MQUEUE_MSGSIZE_DEFAULT),
	SYSCTL_RW("msgsize_max", SYSCTL_FS_MQUEUE_MSGSIZE_MAX),
	SYSCTL_RW("queues_max", SYSCTL_FS_MQUEUE_QUEUES_MAX),
	{ 0 },
};

static const struct pseudo_ent sys_fs_ents[] = {
	SYSCTL_RO("file-max", SYSCTL_FS_FILE_MAX),
	DIR("mqueue", 560, sys_fs_mqueue_ents),
	SYSCTL_RO("nr_open", SYSCTL_FS_NR_OPEN),
	REG("pipe-max-size", 62, gen_pipe_max_size),
	{ 0 },
};

static const struct pseudo_ent sys_vm_ents[] = {
	SYSCTL_RO("max_map_count", SYSCTL_VM_MAX_MAP_COUNT),
	SYSCTL_RO("overcommit_memory", SYSCTL_VM_OVERCOMMIT_MEMORY),
	{ 0 },
};

static const struct pseudo_ent sys_net_core_ents[] = {
	SYSCTL_RW("somaxconn", SYSCTL_NET_CORE_SOMAXCONN),
	{ 0 },
};

static const struct pseudo_ent sys_net_ipv4_ents[] = {
	SYSCTL_RW("ip_forward", SYSCTL_NET_IPV4_IP_FORWARD),
	SYSCTL_RW("ip_local_port_range", SYSCTL_NET_IPV4_IP_LOCAL_PORT_RANGE),
	SYSCTL_RW("ip_unprivileged_port_start", SYSCTL_NET_IPV4_IP_UNPRIVILEGED_PORT_START),
	SYSCTL_RW("ping_group_range", SYSCTL_NET_IPV4_PING_GROUP_RANGE),
	SYSCTL_RW("tcp_fin_timeout", SYSCTL_NET_IPV4_TCP_FIN_TIMEOUT),
	SYSCTL_RW("tcp_keepalive_intvl", SYSCTL_NET_IPV4_TCP_KEEPALIVE_INTVL),
	SYSCTL_RW("tcp_keepalive_probes", SYSCTL_NET_IPV4_TCP_KEEPALIVE_PROBES),
	SYSCTL_RW("tcp_keepalive_time", SYSCTL_NET_IPV4_TCP_KEEPALIVE_TIME),
	SYSCTL_RW("tcp_syncookies", SYSCTL_NET_IPV4_TCP_SYNCOOKIES),
	{ 0 },
};

static const struct pseudo_ent sys_net_ipv6_all_ents[] = {
	SYSCTL_RW("disable_ipv6", SYSCTL_NET_IPV6_CONF_ALL_DISABLE_IPV6),
	{ 0 },
};

static const struct pseudo_ent sys_net_ipv6_default_ents[] = {
	SYSCTL_RW("disable_ipv6", SYSCTL_NET_IPV6_CONF_DEFAULT_DISABLE_IPV6),
	{ 0 },
};

static const struct pseudo_ent sys_net_ipv6_lo_ents[] = {
	SYSCTL_RW("disable_ipv6", SYSCTL_NET_IPV6_CONF_LO_DISABLE_IPV6),
	{ 0 },
};

static const struct pseudo_ent sys_net_ipv6_conf_ents[] = {
	DIR("all", 561, sys_net_ipv6_all_ents),
	DIR("default", 562, sys_net_ipv6_default_ents),
	DIR("lo", 563, sys_net_ipv6_lo_ents),
	{ 0 },
};

static const struct pseudo_ent sys_net_ipv6_ents[] = {
	DIR("conf", 564, sys_net_ipv6_conf_ents),
	{ 0 },
};

static const struct pseudo_ent sys_net_ents[] = {
	DIR("core", 565, sys_net_core_ents),
	DIR("ipv4", 566, sys_net_ipv4_ents),
	DIR("ipv6", 567, sys_net_ipv6_ents),
	{ 0 },
};

/*
 * /proc/net/NAME: the sockets' texts of sentry/net, named by the entry. Weak: procfs's unit
 * tests link no sentry/net (the sentry does: sentry/net/sock.c refers to it strongly).
 */
ssize_t net_proc_render(struct task *t, const char *name, char *buf, size_t size)
	__attribute__((weak));

/* /proc/net (the reader's network namespace) and /proc/PID/net (the task's). */
static int gen_net(struct pseudo_node *n, FILE *out)
{
	struct task *t = NULL;
	char small[4096];
	ssize_t len;
	char *big;

	if (!net_proc_render)
		return -ENOENT;
	if (n->pid) {
		t = pseudo_node_task(n);
		if (!t)
			return -ESRCH;
	}
	len = net_proc_render(t, n->ent->name, small, sizeof(small));
	if (len < 0 || (size_t)len < sizeof(small)) {
		if (len >= 0)
			fwrite(small, 1, (size_t)len, out);
		task_put(t);
		return len < 0 ? (int)len : 0;
	}
	/* More sockets than fit: render again into a buffer of the full size (plus growth). */
	for (size_t size = (size_t)len + 4096;; size = (size_t)len + 4096) {
		big = malloc(size);
		if (!big) {
			task_put(t);
			return -ENOMEM;
		}
		len = net_proc_render(t, n->ent->name, big, size);
		if (len >= 0 && (size_t)len < size)
			break;
		free(big);
		if (len < 0) {
			task_put(t);
			return (int)len;
		}
	}
	task_put(t);
	fwrite(big, 1, (size_t)len, out);
	free(big);
	return 0;
}

const struct pseudo_ent proc_net_ents[] = {
	REG("dev", 90, gen_net),
	REG("tcp", 91, gen_net),
	REG("tcp6", 92, gen_net),
	REG("udp", 93, gen_net),
	REG("udp6", 94, gen_net),
	REG("unix", 95, gen_net),
	/* UDP-Lite's table, as udp and udp6 that of UDP. */
	REG("udplite", 96, gen_net),
	REG("udplite6", 97, gen_net),
	{ 0 },
};

/* /proc/sysvipc: the sandbox's System V IPC objects (sentry/kernel/ipc*.c). */
static int gen_sysvipc(struct pseudo_node *n, FILE *out)
{
	switch (n->ent->id) {
	case 571:
		return ipc_proc_msg(out);
	case 572:
		return ipc_proc_sem(out);
	default:
		return ipc_proc_shm(out);
	}
}

static const struct pseudo_ent sysvipc_ents[] = {
	REG("msg", 571, gen_sysvipc),
	REG("sem", 572, gen_sysvipc),
	REG("shm", 573, gen_sysvipc),
	{ 0 },
};

static const struct pseudo_ent sys_ents[] = {
	DIR("fs", 80, sys_fs_ents),
	DIR("kernel", 81, sys_kernel_ents),
	DIR("net", 83, sys_net_ents),
	DIR("vm", 82, sys_vm_ents),
	{ 0 },
};

/* --- /proc/PID directories --- */

struct tg_list {
	int32_t *pids;
	size_t n, cap;
	struct thread_group *viewer; /* the reader's process, or NULL */
	struct pid_ns *ns; /* the proc instance's pid namespace (NULL: the sandbox's) */
};

static int collect_tg(struct thread_group *tg, void *arg)
{
	struct tg_list *l = arg;
	int32_t nr;

	if (tg->state == TG_DEAD || tg->reaped)
		return 0;
	/* A pod member with a pid namespace of its own lists its own processes only. */
	if (!pid_visible(l->viewer, tg))
		return 0;
	/* A proc mounted in a nested pid namespace lists that namespace's, by its numbers. */
	nr = l->ns ? pid_ns_tg_nr(tg, l->ns) : tg->pid;
	if (!nr)
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		int32_t *p = realloc(l->pids, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		l->pids = p;
		l->cap = cap;
	}
	l->pids[l->n++] = nr;
	return 0;
}

static int cmp_pid(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

static struct vfs_node *root_dyn_lookup(struct pseudo_node *dir, const char *name)
{
	struct kernel *k = pseudo_fs_of(dir)->k;
	long id = proc_parse_num(name);
	struct task *t;
	int32_t pid;

	if (id <= 0 || !k)
		return ERR_PTR(-ENOENT);
	/* /proc/TID of any thread works, as in Linux (listed are processes only). */
	if (pseudo_fs_of(dir)->pidns) {
		pthread_mutex_lock(&k->tree_lock);
		t = pid_ns_lookup(k, pseudo_fs_of(dir)->pidns, (int32_t)id);
		id = t ? t->tid : 0;
		pthread_mutex_unlock(&k->tree_lock);
		if (!id)
			return ERR_PTR(-ENOENT);
	}
	t = kernel_find_task(k, (int32_t)id);
	if (!t)
		return ERR_PTR(-ENOENT);
	if (task_current() && !pid_visible(task_current()->tg, t->tg)) {
		task_put(t);
		return ERR_PTR(-ENOENT);
	}
	pid = task_pid(t);
	id = t->tid; /* nodes keep the sandbox's numbers */
	task_put(t);
	return pseudo_node_new_at(dir, &proc_pid_dir_ent, name, pid, (int32_t)id, -1);
}

static int root_dyn_iterate(struct pseudo_node *dir, int64_t *idx, struct dir_emitter *e,
			    int64_t base)
{
	struct kernel *k = pseudo_fs_of(dir)->k;
	struct tg_list l = { .viewer = task_current() ? task_current()->tg : NULL,
			     .ns = pseudo_fs_of(dir)->pidns };
	int err;

	if (!k || !k->pids)
		return 0;
	pthread_mutex_lock(&k->tree_lock);
	err = pid_for_each_tg(k, collect_tg, &l);
	pthread_mutex_unlock(&k->tree_lock);
	if (err < 0) {
		free(l.pids);
		return err;
	}
	if (l.n)
		qsort(l.pids, l.n, sizeof(*l.pids), cmp_pid);
	for (size_t i = 0; i < l.n; i++) {
		char name[16];
		int len;

		if (l.pids[i] < *idx)
			continue;
		len = snprintf(name, sizeof(name), "%d", (int)l.pids[i]);
		if (!e->emit(e, name, (size_t)len,
			     pseudo_ino(&proc_pid_dir_ent, l.pids[i], l.pids[i], -1), DT_DIR,
			     base + l.pids[i] + 1))
			break;
		*idx = l.pids[i] + 1;
	}
	free(l.pids);
	return 0;
}

static const struct pseudo_dyn root_dyn = {
	.lookup = root_dyn_lookup,
	.iterate = root_dyn_iterate,
};

static const struct pseudo_ent root_ents[] = {
	REG("cmdline", 2, gen_cmdline),
	REG("cpuinfo", 3, gen_cpuinfo),
	REG("filesystems", 4, gen_filesystems),
	REG("loadavg", 5, gen_loadavg),
	REG("meminfo", 6, gen_meminfo),
	{ .name = "mounts", .mode = S_IFLNK | 0777, .readlink = mounts_readlink, .id = 7 },
	DIR("net", 14, proc_net_ents),
	{ .name = "self", .mode = S_IFLNK | 0777, .readlink = self_readlink, .id = 8 },
	REG("stat", 9, gen_stat),
	/* sysctls are not seq_files: lseek as on files of size 0. */
	{ .name = "sys",
	  .mode = S_IFDIR | 0555,
	  .children = sys_ents,
	  .id = 10,
	  .plain_seek = true },
	DIR("sysvipc", 570, sysvipc_ents),
	{ .name = "thread-self",
	  .mode = S_IFLNK | 0777,
	  .readlink = thread_self_readlink,
	  .id = 11 },
	REG("uptime", 12, gen_uptime),
	REG("version", 13, gen_version),
	{ 0 },
};

static const struct pseudo_ent root_ent = {
	.name = "",
	.mode = S_IFDIR | 0555,
	.children = root_ents,
	.dyn = &root_dyn,
	.id = 1,
};

struct vfs_fs *procfs_create(struct kernel *k)
{
	struct pseudo_fs *fs = calloc(1, sizeof(*fs));

	if (!fs)
		return NULL;
	/* kernel.hostname and kernel.domainname are the kernel's fields (uname, sethostname). */
	if (k) {
		sysctl_bind_string(SYSCTL_KERNEL_HOSTNAME, k->hostname, sizeof(k->hostname),
				   &k->lock);
		sysctl_bind_string(SYSCTL_KERNEL_DOMAINNAME, k->domainname, sizeof(k->domainname),
				   &k->lock);
	}
	if (pseudo_fs_init(fs, k, "proc", PROC_SUPER_MAGIC, &root_ent) < 0) {
		free(fs);
		return NULL;
	}
	/* The mounter's pid namespace (Linux's proc_fill_super: the active one). */
	if (k && task_current() && task_active_pid_ns(task_current())->level) {
		fs->pidns = task_active_pid_ns(task_current());
		pid_ns_get(fs->pidns);
	}
	return &fs->base;
}

int vfs_mount_proc(struct kernel *k)
{
	struct vfs_fs *fs = procfs_create(k);
	int err;

	if (!fs)
		return -ENOMEM;
	err = pseudo_fs_mount(k, (struct pseudo_fs *)fs, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC);
	return err == -ENOENT || err == -ENOTDIR || err == -EROFS ? 0 : err;
}

/* --- names of open files and the mount table --- */

int proc_file_name(struct task *viewer, struct file *f, char *buf, size_t len)
{
	struct vfs_attr attr;
	struct vfs_path root, p;
	int n;

	if (!f->node || !f->mnt)
		return snprintf(buf, len, "anon_inode:[pidfd]") < (int)len ? (int)strlen(buf) :
									     -ERANGE;
	n = proc_ns_file_name(f, buf, len); /* an opened /proc/PID/ns link: "net:[N]" */
	if (n != -ENOENT)
		return n;
	if (tmpfs_memfd_name(f->node)) {
		n = snprintf(buf, len, "/memfd:%s (deleted)", tmpfs_memfd_name(f->node));
		return n < (int)len ? n : -ERANGE;
	}
	if (f->mnt == vfs_anon_mount()) {
		const char *what;

		if (file_getattr(f, &attr) < 0)
			attr.ino = 0, attr.mode = 0;
		if (file_is_pipe(f) || S_ISFIFO(attr.mode))
			n = snprintf(buf, len, "pipe:[%" PRIu64 "]", attr.ino);
		else if (S_ISSOCK(attr.mode))
			n = snprintf(buf, len, "socket:[%" PRIu64 "]", attr.ino);
		else {
			/* eventfds show as empty 0600 anon inodes; the rest are host stdio files. */
			bool efd = attr.mode == (S_IFREG | 0600) && attr.size == 0;

			what = file_is_epoll(f) ? "eventpoll" : efd ? "eventfd" : "host";
			n = snprintf(buf, len, "anon_inode:[%s]", what);
		}
		return n < (int)len ? n : -ERANGE;
	}
	if (viewer) {
		vfs_task_root(viewer, &root);
	} else {
		root.mnt = NULL;
		root.node = NULL;
	}
	p.mnt = f->mnt;
	p.node = f->node;
	n = vfs_path_to_string(root.node ? &root : &p, &p, buf, len);
	if (root.node)
		vfs_path_put(&root);
	return n;
}

struct mounts_ctx {
	FILE *out;
	struct vfs_path root;
	bool mountinfo;
	struct vfs_mount **v; /* referenced, sorted by id before printing */
	size_t n, cap;
};

static const char *mount_fstype(const struct vfs_mount *m)
{
	const char *t = m->fs->type;

	if (m->label && m->label->fstype)
		return m->label->fstype;
	if (!strcmp(t, "gofer"))
		return "9p";
	if (!strcmp(t, "devfs"))
		return "tmpfs";
	return t;
}

static const char *mount_source(const struct vfs_mount *m, const char *type)
{
	if (m->label && m->label->source)
		return m->label->source;
	return !strcmp(type, "9p") ? "none" : type;
}

/* A field of the mount table, with space, tab, newline and backslash as \ooo (Linux's mangle). */
static void put_mangled(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\\')
			fprintf(out, "\\%03o", (unsigned char)*s);
		else
			fputc(*s, out);
	}
}

static void mount_print(struct mounts_ctx *c, struct vfs_mount *m)
{
	const struct vfs_mount_label *l = m->label;
	struct vfs_path p = { .mnt = m, .node = m->root };
	const char *type = mount_fstype(m);
	const char *source = mount_source(m, type);
	const char *atime = l && l->atime ? l->atime : "relatime";
	const char *sopts = l && l->super_opts ? l->super_opts : "";
	bool sro = l ? l->super_ro : (m->flags & MS_RDONLY);
	char path[VFS_PATH_MAX];
	char opts[96];
	int n;

	n = vfs_path_to_string(&c->root, &p, path, sizeof(path));
	if (n < 0 || !strncmp(path, "(unreachable)", 13))
		return;
	/* Linux's show_mnt_opts order: nosuid, nodev, noexec, then the atime word. */
	snprintf(opts, sizeof(opts), "%s%s%s%s%s%s", (m->flags & MS_RDONLY) ? "ro" : "rw",
		 (m->flags & MS_NOSUID) ? ",nosuid" : "", (m->flags & MS_NODEV) ? ",nodev" : "",
		 (m->flags & MS_NOEXEC) ? ",noexec" : "", *atime ? "," : "", atime);
	if (!c->mountinfo) {
		put_mangled(c->out, source);
		fputc(' ', c->out);
		put_mangled(c->out, path);
		fprintf(c->out, " %s %s%s%s 0 0\n", type, opts, *sopts ? "," : "", sopts);
		return;
	}
	{
		uint64_t dev = m->fs->dev;
		unsigned int major = (unsigned int)((dev >> 8) & 0xfff);
		unsigned int minor = (unsigned int)((dev & 0xff) | ((dev >> 12) & ~0xffULL));
		uint64_t parent = m->parent ? m->parent->id : m->id;

		fprintf(c->out, "%" PRIu64 " %" PRIu64 " %u:%u ", m->id, parent, major, minor);
		put_mangled(c->out, l && l->root ? l->root : "/");
		fputc(' ', c->out);
		put_mangled(c->out, path);
		fprintf(c->out, " %s", opts);
		/* Linux's optional fields: shared:N, master:N, unbindable. */
		if (m->propagation == MS_SHARED)
			fprintf(c->out, " shared:%" PRIu64, m->peer_group);
		/* A shared mount may be a slave too: "shared:N master:M", as Linux. */
		if ((m->propagation == MS_SHARED || m->propagation == MS_SLAVE) && m->master)
			fprintf(c->out, " master:%" PRIu64, m->master);
		if (m->propagation == MS_UNBINDABLE)
			fprintf(c->out, " unbindable");
		fprintf(c->out, " - %s ", type);
		put_mangled(c->out, source);
		fprintf(c->out, " %s%s%s\n", sro ? "ro" : "rw", *sopts ? "," : "", sopts);
	}
}

/* Collects the mounts (the tree's order is depth first; Linux lists them as they were made). */
static int mounts_one(struct vfs_mount *m, void *arg)
{
	struct mounts_ctx *c = arg;

	if (c->n == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 32;
		struct vfs_mount **nv = realloc(c->v, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		c->v = nv;
		c->cap = ncap;
	}
	vfs_mount_get(m);
	c->v[c->n++] = m;
	return 0;
}

static int mount_id_cmp(const void *a, const void *b)
{
	const struct vfs_mount *x = *(struct vfs_mount *const *)a;
	const struct vfs_mount *y = *(struct vfs_mount *const *)b;

	return x->id < y->id ? -1 : x->id > y->id;
}

int proc_gen_mounts(struct kernel *k, struct task *t, FILE *out, bool mountinfo)
{
	struct mounts_ctx c = { .out = out, .mountinfo = mountinfo };
	int err;

	if (t) {
		vfs_task_root(t, &c.root);
	} else {
		if (!k || !k->root_mnt)
			return 0;
		c.root.mnt = k->root_mnt;
		c.root.node = k->root_node;
		vfs_path_copy(&c.root, &c.root);
	}
	if (!c.root.mnt)
		return 0;
	err = vfs_mount_for_each(c.root.mnt, mounts_one, &c);
	/* The root of the view first, then the rest in the order they were mounted. */
	if (c.n > 1)
		qsort(c.v + 1, c.n - 1, sizeof(*c.v), mount_id_cmp);
	for (size_t i = 0; i < c.n; i++) {
		if (err == 0)
			mount_print(&c, c.v[i]);
		vfs_mount_put(c.v[i]);
	}
	free(c.v);
	vfs_path_put(&c.root);
	return err;
}
