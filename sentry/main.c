/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk-sentry: the userspace kernel of one sandbox.
 *
 *   husk-sentry --gofer-fd N [--platform NAME] [--cwd DIR] [--env K=V]... [--hostname NAME]
 *               [--uid U] [--gid G] [--groups G1,G2...] [--umask OCT] [--domainname NAME]
 *               [--rlimit RES=SOFT:HARD]... [--strace] [--writable-root]
 *               [--readonly-root] [--detached] [--ready-fd N] [--start-fd N]
 *               [--control-fd N] [--log-fd N] [--tmpfs GUEST[:size=N][:mode=OCT][:FLAG]]...
 *               [--volume-fd N:GUEST[:ro][:FLAG]...]... [--caps BND:EFF:INH:PRM:AMB]
 *               [--no-new-privs]
 *               [--seccomp-fd N [--seccomp-log]] [--masked-path GUEST]...
 *               [--readonly-path GUEST]... [--pids-limit N] [--preserve-fds-fd N]
 *               [--memory-limit BYTES] [--sysctl KEY=VALUE]... [--gateway-fd N]
 *               -- PROGRAM ARGS...
 *
 * Mounts (--tmpfs, --volume-fd): FLAG is noexec, nosuid or nodev (a tmpfs is always nosuid and
 * nodev); a volume's gofer may serve one regular file (a file bind), mounted over a file. With
 * --readonly-root the root is the overlay all the same, so that missing mountpoints can be made
 * in its upper layer; it is made read-only once every mount is in place.
 *
 * Started by the husk runtime with the gofer's socket at fd N and the caller's stdio at 0-2.
 * Sets up the kernel (memory file, platform, root filesystem), confines itself, starts
 * PROGRAM as pid 1 and exits with its status: the exit code, or 128+N after signal N.
 * Exit statuses of its own: 125 when the sandbox cannot be set up, 126 when PROGRAM is not
 * executable, 127 when it does not exist (as a shell reports them).
 *
 * For the OCI runtime (husk create): --detached lets the sentry outlive the process that
 * started it; --ready-fd N gets one byte once PROGRAM is loaded and the sandbox is ready (EOF
 * without a byte means setup failed); --start-fd N is then read until one byte arrives (husk
 * start writes it to the container's exec.fifo) before PROGRAM runs; --control-fd N is a
 * listening unix socket served by sentry/control (husk exec, husk ps); --log-fd N takes the
 * sentry's log lines instead of stderr (husk --debug-log).
 *
 * For husk do: --caller-signals (sentry/kernel/hostsig.c: pid 1 dies of a signal from the
 * caller that it has no handler for) and --default-cwd DIR (pid 1 starts in DIR when the
 * guest's tree has it, else in --cwd).
 *
 * --gateway-fd N is a connection to the credential gateway of husk serve (a SOCK_SEQPACKET
 * socket the runtime connected and introduced): guest TCP connects to the gateway address are
 * passed to it (sentry/net/gateway.c, runtime/serve/GATEWAY.md).
 *
 * --platform NAME is seccomp, ptrace, kvm or auto (the default: the backend platform_auto_name()
 * picks on this host); the sentry logs the one it runs on at info level ("platform: ptrace").
 * `husk-sentry --print-platforms` prints which backends this binary has and which auto picks,
 * for `husk features` (see print_platforms()).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cpus.h"
#include "common/err.h"
#include "common/idmap.h"
#include "common/log.h"
#include "common/userns.h"
#include "runtime/control_pod.h"
#include "sentry/confine.h"
#include "sentry/crash/crash.h"
#include "sentry/control/control.h"
#include "sentry/filter.h"
#include "sentry/fs/gofer/client.h"
#include "sentry/fs/gofer/gofer_fs.h"
#include "sentry/fs/host/hostfile.h"
#include "sentry/fs/host/hosttty.h"
#include "sentry/fs/proc/proc.h"
#include "sentry/fs/sys/sys.h"
#include "sentry/fs/tmpfs/tmpfs.h"
#include "sentry/guestview.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/oom.h"
#include "sentry/kernel/stubwatch.h"
#include "sentry/kernel/seccomp.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/sysctl.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/timer.h"
#include "sentry/net/net.h"
#include "sentry/platform/platform.h"
#include "sentry/platform/seccomp/seccomp.h"
#include "sentry/state/state.h"
#include "sentry/time/vtime.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/syscalls.h"

#define EXIT_SETUP 125
#define EXIT_NOEXEC 126
#define EXIT_NOTFOUND 127

/* Size of the memory file's offset space: the most guest memory one sandbox can use. */
#define MEMFILE_SIZE (4ULL << 40)

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* getopt codes of long options without a letter. */
#define OPT_PRESERVE_FDS_FD 0x100
#define OPT_MEMORY_LIMIT 0x1e1
#define OPT_RESTORE 0x1e2
#define OPT_GATEWAY_FD 0x1e3
/* What the guest sees of config.json's mounts and devices (sentry/guestview.h). */
#define OPT_SPECIAL_MOUNT 0x1e4
#define OPT_MOUNT_LABEL 0x1e5
#define OPT_DEVICE 0x1e6
#define OPT_DEVICE_RULE 0x1e7
#define OPT_CONSOLE 0x1e8
#define MAX_ORDERED_MOUNTS 48
/* husk do: the caller's signals and directory. */
#define OPT_CALLER_SIGNALS 0x1e9
#define OPT_DEFAULT_CWD 0x1ea
/* Issue 18: the crash report's file (husk events reads it), sentry/crash. */
#define OPT_CRASH_FD 0x1eb
#define OPT_CRASH_FD_ONLY 0x1ec

struct sentry_opts {
	int gofer_fd;
	const char *platform;
	const char *cwd;
	const char *hostname;
	uint32_t uid, gid;
	bool strace;
	bool writable_root;
	bool readonly_root;
	int control_fd, log_fd;
	int ntmpfs;
	const char *tmpfs[16]; /* --tmpfs GUEST[:size=N][:mode=OCT][:noexec|nosuid|nodev] */
	int tmpfs_order[16]; /* place among the --tmpfs and --volume-fd options */
	int nvolumes;
	struct {
		int fd; /* a gofer's socket */
		char *path; /* where it is mounted (owned) */
		int flags; /* MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC */
		int order; /* place among the --tmpfs and --volume-fd options */
	} volumes[16]; /* --volume-fd N:GUEST[:ro][:noexec][:nosuid][:nodev] */
	bool detached;
	int ready_fd, start_fd;
	const char *domainname;
	bool has_umask;
	unsigned int umask;
	int ngroups;
	uint32_t groups[32];
	int nrlimits;
	struct {
		int resource;
		struct rlimit lim;
	} rlimits[LINUX_RLIM_NLIMITS];
	char **env;
	int nenv;
	char **argv;
	/* config.json's process.capabilities, noNewPrivileges, linux.seccomp (OCI). */
	struct control_guest_defaults guest;
	int seccomp_fd;
	bool seccomp_log;
	/* config.json maskedPaths, readonlyPaths (NULL-terminated), linux.resources.pids.limit. */
	const char **masked, **readonly_paths;
	int nmasked, nreadonly;
	int pids_limit;
	uint64_t memory_limit; /* linux.resources.memory.limit (--memory-limit); 0: none */
	/* config.json linux.sysctl: --sysctl KEY=VALUE, applied in order (NULL-terminated). */
	const char **sysctls;
	int nsysctls;
	int preserve_fd; /* --preserve-fds-fd: a socket holding the fds for guest fds 3.. */
	int gateway_fd; /* --gateway-fd: the credential gateway's connection, or -1 */
	int crash_fd; /* --crash-fd: also gets a crash report (sentry/crash), or -1 */
	bool crash_fd_only; /* --crash-fd-only: the log does not (husk do prints it) */
	bool caller_signals; /* --caller-signals: husk do's pid 1 dies of what it does not handle */
	const char *default_cwd; /* --default-cwd: the working directory if it exists, else / */
	const char *restore; /* --restore DIR: start from the checkpoint image in DIR */
	/*
	 * The mount options in their order (config.json's): kind 'T' (--tmpfs), 'V' (--volume-fd)
	 * or 'S' (--special-mount, arg), each with the --mount-label given after it or NULL.
	 */
	int nmounts;
	struct {
		char kind;
		const char *arg; /* --special-mount's */
		const char *label;
	} mounts[MAX_ORDERED_MOUNTS];
	bool special_dev, special_proc, special_sys; /* --special-mount dev, proc, sysfs given */
	const char **devices; /* --device (NULL-terminated) */
	int ndevices;
	bool console; /* --console: stdin is the container's console (/dev/console) */
	/* --uid-map, --gid-map (linux.uidMappings: what /proc/PID/uid_map shows; none: the
	 * identity) and --oom-score-adj (process.oomScoreAdj of pid 1 and of execs by default). */
	struct idmap uid_map, gid_map;
	int oom_score_adj;
	/* A pod member's options (sentry_member_setup): what is the sandbox's alone (network,
	 * egress, gateway, device rules) is ignored. */
	bool member;
	bool private_pids; /* --private-pids: a member's pid namespace of its own */
	bool oom_reporter; /* --oom-reporter: husk started a husk-oomwatch (control_oom_barrier) */
};

static void usage(void)
{
	fputs("usage: husk-sentry --gofer-fd N [--platform NAME] [--cwd DIR] [--env K=V]...\n"
	      "                   [--hostname NAME] [--uid U] [--gid G] [--strace] -- PROGRAM "
	      "ARGS...\n"
	      "husk-sentry is started by husk; see `husk do --help`.\n",
	      stderr);
}

/*
 * --print-platforms: two lines on stdout, "platforms NAME,NAME..." (the backends this binary has,
 * known or not to work on this host) and "auto NAME" (what --platform auto runs on here). A
 * backend is in the binary when platform_create() knows its name (anything but -ENOENT); the
 * platforms it creates are destroyed at once. kvm is listed only where it was created, i.e.
 * /dev/kvm exists and its self-test passed. Returns the exit status.
 */
static int print_platforms(void)
{
	static const char *const names[] = { "ptrace", "seccomp", "kvm" };
	const char *sep = "";
	int fd = memfd_create("husk-platforms", MFD_CLOEXEC);

	if (fd < 0) {
		perror("husk-sentry: memfd_create");
		return 1;
	}
	printf("platforms ");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct platform *p = NULL;
		int ret = platform_create(names[i], fd, &p);

		if (ret == -ENOENT || (ret < 0 && !strcmp(names[i], "kvm")))
			continue;
		if (ret == 0)
			platform_destroy(p);
		printf("%s%s", sep, names[i]);
		sep = ",";
	}
	printf("\nauto %s\n", platform_auto_name());
	close(fd);
	return fflush(stdout) == 0 ? 0 : 1;
}

/* "G1,G2,..." into o->groups. */
static int parse_groups(const char *arg, struct sentry_opts *o)
{
	char *end;

	o->ngroups = 0;
	while (*arg) {
		unsigned long g = strtoul(arg, &end, 10);

		if (end == arg || g > UINT32_MAX || o->ngroups >= 32)
			return -EINVAL;
		o->groups[o->ngroups++] = (uint32_t)g;
		if (*end == ',')
			end++;
		else if (*end)
			return -EINVAL;
		arg = end;
	}
	return 0;
}

/* "RES=SOFT:HARD" (RES an RLIMIT_* number, limits decimal; -1 means unlimited). */
static int parse_rlimit(const char *arg, struct sentry_opts *o)
{
	unsigned long long soft, hard;
	long res;
	char *end;

	res = strtol(arg, &end, 10);
	if (end == arg || *end != '=' || res < 0 || res >= LINUX_RLIM_NLIMITS ||
	    o->nrlimits >= LINUX_RLIM_NLIMITS)
		return -EINVAL;
	arg = end + 1;
	soft = strtoull(arg, &end, 10);
	if (end == arg || *end != ':')
		return -EINVAL;
	arg = end + 1;
	hard = strtoull(arg, &end, 10);
	if (end == arg || *end)
		return -EINVAL;
	o->rlimits[o->nrlimits].resource = (int)res;
	o->rlimits[o->nrlimits].lim.rlim_cur = soft;
	o->rlimits[o->nrlimits].lim.rlim_max = hard;
	o->nrlimits++;
	return 0;
}

/* A mount flag named by a --tmpfs or --volume-fd option (MS_*), or 0 for another word. */
static int mount_flag(const char *word, size_t len)
{
	static const struct {
		const char *name;
		int flag;
	} flags[] = { { "noexec", MS_NOEXEC }, { "nosuid", MS_NOSUID }, { "nodev", MS_NODEV } };

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		if (len == strlen(flags[i].name) && !strncmp(word, flags[i].name, len))
			return flags[i].flag;
	}
	return 0;
}

/*
 * Parses --tmpfs GUEST[:size=N][:mode=OCT][:noexec|nosuid|nodev]... into path (len bytes), *size,
 * *mode (-1: the default 01777) and *flags (MS_NOSUID|MS_NODEV and the flags named). Returns 0
 * or -EINVAL / -ENAMETOOLONG.
 */
static int parse_tmpfs(const char *arg, char *path, size_t len, uint64_t *size, long *mode,
		       int *flags)
{
	const char *colon = strchr(arg, ':');

	*size = 0;
	*mode = -1;
	*flags = MS_NOSUID | MS_NODEV;
	if (snprintf(path, len, "%.*s", colon ? (int)(colon - arg) : (int)strlen(arg), arg) >=
	    (int)len)
		return -ENAMETOOLONG;
	while (colon) {
		const char *opt = colon + 1;
		char buf[64], *end;

		colon = strchr(opt, ':');
		if (snprintf(buf, sizeof(buf), "%.*s",
			     colon ? (int)(colon - opt) : (int)strlen(opt),
			     opt) >= (int)sizeof(buf))
			return -EINVAL;
		if (!strncmp(buf, "size=", 5)) {
			if (tmpfs_parse_size(buf + 5, size) < 0)
				return -EINVAL;
		} else if (!strncmp(buf, "mode=", 5)) {
			*mode = strtol(buf + 5, &end, 8);
			if (end == buf + 5 || *end || *mode < 0 || *mode > 07777)
				return -EINVAL;
		} else if (mount_flag(buf, strlen(buf))) {
			*flags |= mount_flag(buf, strlen(buf));
		} else {
			return -EINVAL;
		}
	}
	return 0;
}

/* Mounts a tmpfs for --tmpfs GUEST[:size=N][:mode=OCT][:FLAG]. Returns 0 or -errno. */
static int sentry_mount_tmpfs(struct kernel *k, const char *arg)
{
	struct vfs_fs *fs;
	uint64_t size;
	char path[4096];
	long mode;
	int flags, ret = parse_tmpfs(arg, path, sizeof(path), &size, &mode, &flags);

	if (ret < 0)
		return ret;
	if (path[0] != '/')
		return -EINVAL;
	/*
	 * vfs_mount_tmpfs's filesystem, with the mount flags asked for (noexec) and the mode= asked
	 * for from the start: a chmod after all the mounts would reach whatever a later mount at the
	 * same place put there (containerd's pods bind the sandbox's shm read-only over /dev/shm).
	 */
	fs = tmpfs_create(&k->mf, size, mode >= 0 ? (uint32_t)mode : 01777, 0, 0);
	if (!fs)
		return -ENOMEM;
	ret = vfs_mount_at(k, path, fs, flags);
	vfs_fs_put(fs);
	return ret;
}

/*
 * --volume-fd N:GUEST[:ro][:noexec][:nosuid][:nodev] into o->volumes (the words at the end, in
 * any order). Returns 0 or -EINVAL.
 */
static int parse_volume(const char *arg, struct sentry_opts *o)
{
	const char *colon = strchr(arg, ':');
	size_t len;
	char *end;
	long fd;

	if (o->nvolumes >= (int)(sizeof(o->volumes) / sizeof(o->volumes[0])) || !colon)
		return -EINVAL;
	fd = strtol(arg, &end, 10);
	if (end != colon || fd < 3 || fd > INT32_MAX || colon[1] != '/')
		return -EINVAL;
	len = strlen(colon + 1);
	o->volumes[o->nvolumes].flags = 0;
	for (;;) {
		const char *word = memrchr(colon + 1, ':', len);
		size_t wlen;
		int flag;

		if (!word)
			break;
		wlen = len - (size_t)(word - colon - 1) - 1;
		if (wlen == 2 && !strncmp(word + 1, "ro", 2))
			flag = MS_RDONLY;
		else
			flag = mount_flag(word + 1, wlen);
		if (!flag)
			break;
		o->volumes[o->nvolumes].flags |= flag;
		len = (size_t)(word - colon - 1);
	}
	o->volumes[o->nvolumes].path = strndup(colon + 1, len);
	if (!o->volumes[o->nvolumes].path)
		return -EINVAL;
	o->volumes[o->nvolumes].fd = (int)fd;
	o->nvolumes++;
	return 0;
}

/* "BND:EFF:INH:PRM:AMB", each a hexadecimal capability set. */
static int parse_caps(const char *arg, struct control_guest_defaults *g)
{
	uint64_t *sets[] = { &g->cap_bounding, &g->cap_effective, &g->cap_inheritable,
			     &g->cap_permitted, &g->cap_ambient };
	char *end;

	for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
		*sets[i] = strtoull(arg, &end, 16);
		if (end == arg || *end != (i + 1 < sizeof(sets) / sizeof(sets[0]) ? ':' : 0))
			return -EINVAL;
		arg = end + 1;
	}
	g->has_caps = true;
	return 0;
}

/*
 * Reads the seccomp program at fd (from its start: a memfd the runtime wrote) and makes the
 * container's filter of it. Returns 0 or -errno (-EINVAL: not a program seccomp accepts).
 */
static int read_seccomp(int fd, bool log, struct seccomp_filter **out)
{
	static struct sock_filter prog[SECCOMP_MAX_INSNS + 1];
	size_t len = 0;
	ssize_t n;

	while (len < sizeof(prog)) {
		n = read(fd, (char *)prog + len, sizeof(prog) - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (len % sizeof(struct sock_filter))
		return -EINVAL;
	return seccomp_filter_create(prog, len / sizeof(struct sock_filter), NULL, log, out);
}

/*
 * Applies config.json's maskedPaths (an empty read-only tmpfs over directories, /dev/null over
 * files) and then readonlyPaths (a read-only bind onto itself), as runc does: a path missing
 * from the guest's tree is skipped. Returns 0 or -errno (logged).
 */
static int sentry_mask_paths(struct kernel *k, const struct sentry_opts *o)
{
	struct vfs_create_args file_args = { .mode = S_IFREG | 0444 };
	struct vfs_fs *empty = NULL, *files = NULL;
	struct vfs_node *empty_file = NULL;
	int ret = 0;

	if (o->nmasked) {
		/* Two tmpfs: one stays empty (shown over directories), one holds the empty file. */
		empty = tmpfs_create(&k->mf, 4096, 0555, 0, 0);
		files = tmpfs_create(&k->mf, 4096, 0555, 0, 0);
		ret = empty && files ? files->root->ops->create(files->root, "empty", &file_args,
								&empty_file) :
				       -ENOMEM;
		if (ret < 0)
			log_error("maskedPaths: %s", strerror(-ret));
	}
	for (int i = 0; i < o->nmasked && ret >= 0; i++) {
		ret = vfs_mount_mask(k, o->masked[i], empty, empty_file);
		if (ret == -ENOENT || ret == -ENOTDIR) {
			log_debug("maskedPaths: %s: %s, skipped", o->masked[i], strerror(-ret));
			ret = 0;
		} else if (ret < 0) {
			log_error("maskedPaths: %s: %s", o->masked[i], strerror(-ret));
		}
	}
	if (empty_file)
		vfs_node_put(empty_file);
	if (files)
		vfs_fs_put(files);
	if (empty)
		vfs_fs_put(empty);
	for (int i = 0; i < o->nreadonly && ret >= 0; i++) {
		ret = vfs_mount_readonly_path(k, o->readonly_paths[i]);
		if (ret == -ENOENT || ret == -ENOTDIR) {
			log_debug("readonlyPaths: %s: %s, skipped", o->readonly_paths[i],
				  strerror(-ret));
			ret = 0;
		} else if (ret < 0) {
			log_error("readonlyPaths: %s: %s", o->readonly_paths[i], strerror(-ret));
		}
	}
	return ret;
}

/*
 * Mounts the --tmpfs and --volume-fd mounts in the order they were given (config.json's order:
 * a later mount goes over an earlier one). Volumes: one gofer each; its client lives as long as
 * the sentry (as k->gofer). A mountpoint the sentry's /dev cannot have (devfs makes no names)
 * is skipped with a warning, as the runtime skips its own /dev mounts. Returns 0 or -errno
 * (printed).
 */
static int sentry_mount_all(struct kernel *k, const struct sentry_opts *o,
			    struct gofer_client **clients, int *nclients)
{
	int ti = 0, vi = 0, ret = 0;

	for (int mi = 0; ret == 0 && mi < o->nmounts; mi++) {
		const char *what, *path;
		struct gofer_client *vgc;
		char *special = NULL;

		if (o->mounts[mi].kind == 'S') {
			what = "--special-mount";
			ret = guestview_mount_special(k, o->mounts[mi].arg, &special);
			path = special ? special : o->mounts[mi].arg;
		} else if (o->mounts[mi].kind == 'T') {
			what = "--tmpfs";
			path = o->tmpfs[ti];
			ret = sentry_mount_tmpfs(k, o->tmpfs[ti++]);
		} else {
			what = "--volume";
			path = o->volumes[vi].path;
			ret = gofer_client_create(o->volumes[vi].fd, &vgc);
			if (ret == 0) {
				ret = vfs_mount_volume_flags(k, vgc, path, o->volumes[vi].flags);
				if (ret < 0)
					gofer_client_destroy(vgc);
				else if (clients)
					clients[(*nclients)++] = vgc;
			}
			vi++;
		}
		if (ret == 0 && o->mounts[mi].label) {
			/* What /proc/PID/mountinfo shows of it, and its flags (config.json's). */
			ret = guestview_label(k, o->mounts[mi].label);
			if (ret < 0)
				fprintf(stderr, "husk: --mount-label %s: %s\n", o->mounts[mi].label,
					strerror(-ret));
		} else if (ret == -EROFS && !strncmp(path, "/dev/", 5)) {
			log_warn("%s %s: no such name in the sentry's /dev, skipped", what, path);
			ret = 0;
		} else if (ret < 0) {
			fprintf(stderr, "husk: %s %s: %s\n", what, path, strerror(-ret));
		}
		free(special);
	}
	return ret;
}

/*
 * The guest's mount tree, in the order runc makes it: the root (an overlay over gc, or gc
 * itself with --writable-root), /dev, /dev/mqueue, /proc, /sys, the config's mounts, masked and
 * read-only paths, linux.devices, /dev/console and the device rules, then root.readonly. It is
 * built where vfs_kernel_root() points: k's tree, or a pod member's (sentry_member_setup, whose
 * console and device rules are the sandbox's). Volume gofer clients go to clients (may be
 * NULL). Returns 0 or -errno (logged).
 */
static void timing_stage(const char *stage);

static int sentry_mount_tree(struct kernel *k, const struct sentry_opts *o, struct gofer_client *gc,
			     struct gofer_client **clients, int *nclients)
{
	struct vfs_mount *root;
	int ret;

	/* The root is an overlay over the gofer unless writes are to reach the host. A read-only
	 * root too: mountpoints missing from the image are made in its upper layer, then it is
	 * made read-only (below, once every mount is in place), as runc does. */
	if (o->writable_root && !o->readonly_root)
		ret = vfs_mount_root(k, gc, false);
	else
		ret = vfs_mount_root_overlay(k, gc, 0);
	if (ret < 0) {
		log_error("mounting the root filesystem: %s", strerror(-ret));
		return ret;
	}
	timing_stage("gofer connection and root mount");
	/* The sentry's devfs is the guest's /dev (runc mounts a tmpfs there, making the directory
	 * when the image has none): in the overlay, /dev is made when missing. */
	if (!o->writable_root || o->readonly_root) {
		ret = vfs_make_mountpoint(k, "/dev", true);
		if (ret < 0)
			log_debug("making /dev: %s", strerror(-ret));
	}
	ret = o->special_dev ? 0 : vfs_mount_dev(k);
	if (ret < 0 && ret != -ENOENT) {
		log_error("mounting /dev: %s", strerror(-ret));
		return ret;
	}
	/* The default /dev's /dev/mqueue (a config mounts its own where it says). */
	if (!o->special_dev) {
		ret = guestview_default_mounts(k);
		if (ret < 0) {
			log_error("mounting /dev/mqueue: %s", strerror(-ret));
			return ret;
		}
	}
	ret = o->special_proc ? 0 : vfs_mount_proc(k);
	if (ret == 0 && !o->special_sys)
		ret = vfs_mount_sys(k);
	if (ret < 0) {
		log_error("mounting /proc and /sys: %s", strerror(-ret));
		return ret;
	}
	ret = sentry_mount_all(k, o, clients, nclients);
	if (ret < 0)
		return ret;
	ret = sentry_mask_paths(k, o);
	if (ret < 0)
		return ret;
	/* linux.devices (made as root: the rules below do not apply to them), then the rules. */
	for (int i = 0; i < o->ndevices; i++) {
		ret = guestview_make_device(k, o->devices[i]);
		/* As runc: a node already there (/dev/null listed again) stays as it is. */
		if (ret < 0 && ret != -EEXIST) {
			fprintf(stderr, "husk: --device %s: %s\n", o->devices[i], strerror(-ret));
			return ret;
		}
	}
	if (o->console && !o->member) {
		ret = guestview_console(k);
		if (ret < 0) {
			log_error("/dev/console: %s", strerror(-ret));
			return ret;
		}
	}
	if (!o->member && guestview_apply_rules() < 0)
		return -EINVAL;
	/* root.readonly: EROFS for the guest's writes to the root; mounts on it keep theirs. */
	root = vfs_kernel_root_mnt(k);
	if (o->readonly_root)
		vfs_mount_set_flags(root, root->flags | MS_RDONLY);
	return 0;
}

/* Options of the guest's ids and OOM score (/proc/PID/uid_map, gid_map, oom_score_adj). */
#define OPT_UID_MAP 0x2a0
#define OPT_GID_MAP 0x2a1
#define OPT_OOM_SCORE_ADJ 0x2a2
#define OPT_PRIVATE_PIDS 0x2b0
#define OPT_INBOUND 0x2c0
#define OPT_OOM_REPORTER 0x2d0

static int parse_args(int argc, char **argv, struct sentry_opts *o)
{
	static const struct option longopts[] = {
		{ "gofer-fd", required_argument, NULL, 'g' },
		{ "platform", required_argument, NULL, 'p' },
		{ "cwd", required_argument, NULL, 'c' },
		{ "env", required_argument, NULL, 'e' },
		{ "hostname", required_argument, NULL, 'h' },
		{ "uid", required_argument, NULL, 'u' },
		{ "gid", required_argument, NULL, 'G' },
		{ "strace", no_argument, NULL, 's' },
		{ "writable-root", no_argument, NULL, 'w' },
		{ "readonly-root", no_argument, NULL, 'r' },
		{ "control-fd", required_argument, NULL, 'C' },
		{ "log-fd", required_argument, NULL, 'l' },
		{ "tmpfs", required_argument, NULL, 'T' },
		{ "volume-fd", required_argument, NULL, 'V' },
		{ "detached", no_argument, NULL, 'D' },
		{ "ready-fd", required_argument, NULL, 'R' },
		{ "start-fd", required_argument, NULL, 'S' },
		{ "domainname", required_argument, NULL, 'd' },
		{ "umask", required_argument, NULL, 'm' },
		{ "groups", required_argument, NULL, 'X' },
		{ "rlimit", required_argument, NULL, 'L' },
		/* sentry/net: --network=none|host, egress rules, and the test-only switch. */
		{ "network", required_argument, NULL, 'N' },
		{ "egress-allow", required_argument, NULL, 'A' },
		{ "egress-deny", required_argument, NULL, 'Y' },
		{ "test-no-egress-check", no_argument, NULL, 'Z' },
		/* OCI: --caps=BND:EFF:INH:PRM:AMB (hex), --no-new-privs, --seccomp-fd=N (a cBPF
		 * program, read at start), --seccomp-log (SECCOMP_FILTER_FLAG_LOG). */
		{ "caps", required_argument, NULL, 'P' },
		{ "no-new-privs", no_argument, NULL, 'n' },
		{ "seccomp-fd", required_argument, NULL, 'F' },
		{ "seccomp-log", no_argument, NULL, 'O' },
		/* OCI: maskedPaths, readonlyPaths (one option each), linux.resources.pids.limit. */
		{ "masked-path", required_argument, NULL, 'M' },
		{ "readonly-path", required_argument, NULL, 'o' },
		{ "pids-limit", required_argument, NULL, 'I' },
		/* OCI: linux.resources.memory.limit, enforced by the sentry's OOM killer. */
		{ "memory-limit", required_argument, NULL, OPT_MEMORY_LIMIT },
		{ "restore", required_argument, NULL, OPT_RESTORE },
		{ "sysctl", required_argument, NULL, 1000 },
		/* OCI --preserve-fds: one message on this unix socket carries them (SCM_RIGHTS). */
		{ "preserve-fds-fd", required_argument, NULL, OPT_PRESERVE_FDS_FD },
		/* The credential gateway's connection (sentry/net/gateway.c). */
		{ "gateway-fd", required_argument, NULL, OPT_GATEWAY_FD },
		{ "crash-fd", required_argument, NULL, OPT_CRASH_FD },
		{ "crash-fd-only", no_argument, NULL, OPT_CRASH_FD_ONLY },
		/* config.json's mounts and devices as the guest sees them (sentry/guestview.h). */
		{ "special-mount", required_argument, NULL, OPT_SPECIAL_MOUNT },
		{ "mount-label", required_argument, NULL, OPT_MOUNT_LABEL },
		{ "device", required_argument, NULL, OPT_DEVICE },
		{ "device-rule", required_argument, NULL, OPT_DEVICE_RULE },
		{ "console", no_argument, NULL, OPT_CONSOLE },
		/* husk do: sentry/kernel/hostsig.c and the caller's directory. */
		{ "caller-signals", no_argument, NULL, OPT_CALLER_SIGNALS },
		{ "default-cwd", required_argument, NULL, OPT_DEFAULT_CWD },
		{ "uid-map", required_argument, NULL, OPT_UID_MAP },
		{ "gid-map", required_argument, NULL, OPT_GID_MAP },
		{ "oom-score-adj", required_argument, NULL, OPT_OOM_SCORE_ADJ },
		/* A pod member (runtime/pod.c) whose config has a pid namespace without a path. */
		{ "private-pids", no_argument, NULL, OPT_PRIVATE_PIDS },
		{ "oom-reporter", no_argument, NULL, OPT_OOM_REPORTER },
		{ "inbound", no_argument, NULL, OPT_INBOUND },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	o->gofer_fd = -1;
	o->ready_fd = -1;
	o->start_fd = -1;
	o->control_fd = -1;
	o->log_fd = -1;
	o->seccomp_fd = -1;
	o->preserve_fd = -1;
	o->gateway_fd = -1;
	o->crash_fd = -1;
	o->platform = "auto";
	o->cwd = "/";
	o->hostname = "husk";
	/* Without --uid/--gid the guest runs as the caller; an unprivileged caller's guest is
	 * root, as the caller is root in the sandbox's user namespace (sentry/confine.c). */
	o->uid = !o->member && userns_privileged() ? (uint32_t)getuid() : 0;
	o->gid = !o->member && userns_privileged() ? (uint32_t)getgid() : 0;
	o->env = calloc((size_t)argc + 1, sizeof(char *));
	o->masked = calloc((size_t)argc + 1, sizeof(char *));
	o->readonly_paths = calloc((size_t)argc + 1, sizeof(char *));
	o->sysctls = calloc((size_t)argc + 1, sizeof(char *));
	o->devices = calloc((size_t)argc + 1, sizeof(char *));
	if (!o->env || !o->masked || !o->readonly_paths || !o->sysctls || !o->devices)
		return -ENOMEM;
	while ((c = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
		switch (c) {
		case 'g':
			o->gofer_fd = atoi(optarg);
			break;
		case 'p':
			o->platform = optarg;
			break;
		case 'c':
			o->cwd = optarg;
			break;
		case 'e':
			o->env[o->nenv++] = optarg;
			break;
		case 'h':
			o->hostname = optarg;
			break;
		case 'u':
			o->uid = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'G':
			o->gid = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 's':
			o->strace = true;
			break;
		case 'w':
			o->writable_root = true;
			break;
		case 'r':
			o->readonly_root = true;
			break;
		case 'C':
			o->control_fd = atoi(optarg);
			break;
		case 'l':
			o->log_fd = atoi(optarg);
			break;
		case 'T':
			if (o->ntmpfs >= (int)(sizeof(o->tmpfs) / sizeof(o->tmpfs[0])))
				return -EINVAL;
			o->tmpfs_order[o->ntmpfs] = o->ntmpfs + o->nvolumes;
			o->tmpfs[o->ntmpfs++] = optarg;
			if (o->nmounts == MAX_ORDERED_MOUNTS)
				return -EINVAL;
			o->mounts[o->nmounts++].kind = 'T';
			break;
		case 'V':
			if (parse_volume(optarg, o) < 0)
				return -EINVAL;
			o->volumes[o->nvolumes - 1].order = o->ntmpfs + o->nvolumes - 1;
			if (o->nmounts == MAX_ORDERED_MOUNTS)
				return -EINVAL;
			o->mounts[o->nmounts++].kind = 'V';
			break;
		case OPT_SPECIAL_MOUNT:
			if (o->nmounts == MAX_ORDERED_MOUNTS)
				return -EINVAL;
			o->mounts[o->nmounts].kind = 'S';
			o->mounts[o->nmounts++].arg = optarg;
			o->special_dev |= guestview_special_is(optarg, "dev");
			o->special_proc |= guestview_special_is(optarg, "proc");
			o->special_sys |= guestview_special_is(optarg, "sysfs");
			break;
		case OPT_MOUNT_LABEL:
			if (!o->nmounts || o->mounts[o->nmounts - 1].label ||
			    guestview_check_label(optarg) < 0) {
				fprintf(stderr, "husk: --mount-label %s: malformed\n", optarg);
				return -EINVAL;
			}
			o->mounts[o->nmounts - 1].label = optarg;
			break;
		case OPT_DEVICE:
			if (guestview_check_device(optarg) < 0) {
				fprintf(stderr, "husk: --device %s: malformed\n", optarg);
				return -EINVAL;
			}
			o->devices[o->ndevices++] = optarg;
			break;
		case OPT_CONSOLE:
			o->console = true;
			break;
		case OPT_DEVICE_RULE:
			if (o->member)
				break;
			if (guestview_add_rule(optarg) < 0) {
				fprintf(stderr, "husk: --device-rule %s: malformed\n", optarg);
				return -EINVAL;
			}
			break;
		case 'D':
			o->detached = true;
			break;
		case 'R':
			o->ready_fd = atoi(optarg);
			break;
		case 'S':
			o->start_fd = atoi(optarg);
			break;
		case 'd':
			o->domainname = optarg;
			break;
		case 'm':
			o->has_umask = true;
			o->umask = (unsigned int)strtoul(optarg, NULL, 8) & 0777;
			break;
		case 'X':
			if (parse_groups(optarg, o) < 0)
				return -EINVAL;
			break;
		case 'L':
			if (parse_rlimit(optarg, o) < 0)
				return -EINVAL;
			break;
		case 'N':
			if (o->member)
				break;
			if (net_set_mode(optarg) < 0) {
				fprintf(stderr, "husk: --network %s: expected none or host\n",
					optarg);
				return -EINVAL;
			}
			break;
		case 'A':
		case 'Y':
			if (o->member)
				break;
			if (net_egress_add(optarg, c == 'A') < 0) {
				fprintf(stderr, "husk: --egress-%s %s: expected CIDR[:PORT]\n",
					c == 'A' ? "allow" : "deny", optarg);
				return -EINVAL;
			}
			break;
		case 'Z':
			if (o->member)
				break;
			net_egress_disable_check();
			break;
		case 'P':
			if (parse_caps(optarg, &o->guest) < 0)
				return -EINVAL;
			break;
		case 'n':
			o->guest.no_new_privs = true;
			break;
		case 'F':
			o->seccomp_fd = atoi(optarg);
			if (o->seccomp_fd < 3)
				return -EINVAL;
			break;
		case 'O':
			o->seccomp_log = true;
			break;
		case 'M':
			o->masked[o->nmasked++] = optarg;
			break;
		case 'o':
			o->readonly_paths[o->nreadonly++] = optarg;
			break;
		case 1000:
			o->sysctls[o->nsysctls++] = optarg;
			break;
		case 'I': {
			char *end;
			long n = strtol(optarg, &end, 10);

			if (end == optarg || *end || n < 0 || n > INT32_MAX)
				return -EINVAL;
			o->pids_limit = (int)n;
			break;
		}
		case OPT_MEMORY_LIMIT: {
			char *end;
			unsigned long long n = strtoull(optarg, &end, 10);

			if (end == optarg || *end || optarg[0] == '-' || n > INT64_MAX)
				return -EINVAL;
			o->memory_limit = n;
			break;
		}
		case OPT_RESTORE:
			o->restore = optarg;
			break;
		case OPT_PRESERVE_FDS_FD:
			o->preserve_fd = atoi(optarg);
			if (o->preserve_fd < 3)
				return -EINVAL;
			break;
		case OPT_GATEWAY_FD: {
			char *end;
			long n = strtol(optarg, &end, 10);

			if (end == optarg || *end || n < 3 || n > INT32_MAX)
				return -EINVAL;
			o->gateway_fd = (int)n;
			if (!o->member)
				net_set_gateway_fd(o->gateway_fd);
			break;
		}
		case OPT_CRASH_FD:
			o->crash_fd = atoi(optarg);
			if (o->crash_fd < 3)
				return -EINVAL;
			break;
		case OPT_CRASH_FD_ONLY:
			o->crash_fd_only = true;
			break;
		case OPT_CALLER_SIGNALS:
			o->caller_signals = true;
			break;
		case OPT_DEFAULT_CWD:
			o->default_cwd = optarg;
			break;
		case OPT_UID_MAP:
		case OPT_GID_MAP:
			if (idmap_parse(optarg, c == OPT_UID_MAP ? &o->uid_map : &o->gid_map) < 0) {
				fprintf(stderr,
					"husk: --%s %s: expected INSIDE:OUTSIDE:COUNT[,...]\n",
					c == OPT_UID_MAP ? "uid-map" : "gid-map", optarg);
				return -EINVAL;
			}
			break;
		case OPT_INBOUND:
			/* The sandbox's: its filter is made for it (a member's has no say). */
			if (!o->member)
				net_set_inbound(true);
			break;
		case OPT_PRIVATE_PIDS:
			o->private_pids = true;
			break;
		case OPT_OOM_REPORTER:
			o->oom_reporter = true;
			break;
		case OPT_OOM_SCORE_ADJ: {
			char *end;
			long n = strtol(optarg, &end, 10);

			if (end == optarg || *end || n < OOM_SCORE_ADJ_MIN || n > OOM_SCORE_ADJ_MAX)
				return -EINVAL;
			o->oom_score_adj = (int)n;
			break;
		}
		default:
			return -EINVAL;
		}
	}
	if (o->gofer_fd < 0 || optind >= argc)
		return -EINVAL;
	o->argv = argv + optind;
	return 0;
}

/* The value of name in a K=V environment array, or NULL. */
/* Opens dir/name read-only (before confinement). Returns the fd, or -1 with errno. */
static int open_in(const char *dir, const char *name)
{
	char path[PATH_MAX];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return open(path, O_RDONLY | O_CLOEXEC);
}

static const char *env_lookup(char *const *env, const char *name)
{
	size_t len = strlen(name);

	for (; *env; env++) {
		if (!strncmp(*env, name, len) && (*env)[len] == '=')
			return *env + len + 1;
	}
	return NULL;
}

/*
 * Starts the program as a shell would: a name with a slash is a path; otherwise each PATH entry
 * is tried in turn. Prints a shell's message and returns its exit status on failure, or 0.
 */
static int exec_init(struct task *t, char **argv, char **envp)
{
	const char *name = argv[0];
	const char *path;
	int saw_eacces = 0;
	int ret;

	if (strchr(name, '/')) {
		ret = task_exec(t, name, argv, envp);
	} else {
		path = env_lookup(envp, "PATH");
		if (!path)
			path = DEFAULT_PATH;
		ret = -ENOENT;
		while (*path) {
			const char *end = strchrnul(path, ':');
			char full[4096];
			int n;

			if (end == path)
				n = snprintf(full, sizeof(full), "%s", name);
			else
				n = snprintf(full, sizeof(full), "%.*s/%s", (int)(end - path), path,
					     name);
			path = *end ? end + 1 : end;
			if (n < 0 || (size_t)n >= sizeof(full))
				continue;
			ret = task_exec(t, full, argv, envp);
			if (ret == 0)
				break;
			if (ret == -EACCES)
				saw_eacces = 1;
			/* Like execvp: go on past missing files and unusable directories. */
			if (ret != -ENOENT && ret != -ENOTDIR && ret != -EACCES &&
			    ret != -ENAMETOOLONG && ret != -ELOOP)
				break;
		}
		if (ret < 0 && saw_eacces)
			ret = -EACCES;
		if (ret == -ENOENT || ret == -ENOTDIR) {
			fprintf(stderr, "husk: %s: command not found\n", name);
			return EXIT_NOTFOUND;
		}
	}
	if (ret == 0)
		return 0;
	fprintf(stderr, "husk: %s: %s\n", name, strerror(-ret));
	return (ret == -ENOENT || ret == -ENOTDIR) ? EXIT_NOTFOUND : EXIT_NOEXEC;
}

/* CLOCK_MONOTONIC when main() started, for the start-up timings logged at debug level. */
static uint64_t start_ns;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Logs (at debug level) how long after main() started a start-up stage ended. */
static void timing_stage(const char *stage)
{
	if (log_get_level() >= LOG_DEBUG)
		log_debug("timing: +%llu us %s", (unsigned long long)(now_ns() - start_ns) / 1000,
			  stage);
}

/* Builds the guest environment: the given variables, plus PATH if they lack one. */
static char **guest_env(struct sentry_opts *o)
{
	if (!env_lookup(o->env, "PATH"))
		o->env[o->nenv++] = "PATH=" DEFAULT_PATH;
	o->env[o->nenv] = NULL;
	return o->env;
}

/*
 * husk create with a terminal (runtime/sandbox.c sets HUSK_SETUP_STDERR_FD): until the sandbox
 * is ready, the sentry's own messages go to the caller's stderr, as runc's create prints its
 * errors, while the guest's stderr is the terminal. setup_stderr_swap makes the caller's fd
 * the sentry's fd 2 and keeps the terminal's in guest_stderr_fd; setup_stderr_release puts
 * the terminal back and closes the caller's, so that no husk process holds it once create
 * has returned (containerd's shim waits for its EOF).
 */
static int guest_stderr_fd = -1;

static void setup_stderr_swap(int fd)
{
	guest_stderr_fd = fcntl(2, F_DUPFD_CLOEXEC, 10);
	if (guest_stderr_fd >= 0 && dup2(fd, 2) < 0) {
		close(guest_stderr_fd);
		guest_stderr_fd = -1;
	}
	close(fd);
}

static void setup_stderr_release(void)
{
	if (guest_stderr_fd < 0)
		return;
	dup2(guest_stderr_fd, 2);
	close(guest_stderr_fd);
	guest_stderr_fd = -1;
}

/* Wraps the sentry's fd (a dup of the caller's stdio) as guest fd n. */
static int install_stdio(struct fdtable *fdt, int hostfd, int n)
{
	struct file *f;
	int fl, dupfd, ret;

	fl = fcntl(hostfd, F_GETFL);
	if (fl < 0)
		return -EBADF; /* the caller closed it: leave the guest's fd closed too */
	dupfd = fcntl(hostfd, F_DUPFD_CLOEXEC, 10);
	if (dupfd < 0)
		return -errno;
	f = hostfile_create(dupfd, fl & ~O_CLOEXEC);
	if (!f) {
		close(dupfd);
		return -ENOMEM;
	}
	/* A checkpoint records it as the sentry's fd n; a restore opens that one again. */
	hostfile_set_origin(f, n);
	ret = fdtable_install_at(fdt, f, n, false, 1024);
	file_put(f);
	return ret < 0 ? ret : 0;
}

/*
 * --preserve-fds: the fds that came in one message on sock become guest fds 3, 4, ... as host
 * files (given by the caller explicitly, like stdio). Closes sock. Returns 0 or -errno (logged).
 */
static int sentry_install_preserved(struct fdtable *fdt, int sock)
{
	int fds[HOSTFILE_MAX_PRESERVE];
	int n = hostfile_recv_fds(sock, fds, HOSTFILE_MAX_PRESERVE), ret = 0;

	close(sock);
	if (n < 0) {
		log_error("--preserve-fds-fd: %s", strerror(-n));
		return n;
	}
	for (int i = 0; i < n; i++) {
		if (ret == 0)
			ret = hostfile_install(fdt, fds[i], 3 + i);
		close(fds[i]);
	}
	if (ret < 0)
		log_error("--preserve-fds: %s", strerror(-ret));
	return ret;
}

/*
 * husk create's handshake: tell the runtime the sandbox is ready (one byte on ready_fd), then
 * wait for husk start (one byte on start_fd). Returns 0 to go on, or an exit status.
 */
static int wait_for_start(struct sentry_opts *o)
{
	char c = 1;
	ssize_t n;

	if (o->ready_fd >= 0) {
		while ((n = write(o->ready_fd, &c, 1)) < 0 && errno == EINTR)
			;
		close(o->ready_fd);
		setup_stderr_release();
		if (n != 1)
			return EXIT_SETUP;
	}
	if (o->start_fd < 0)
		return 0;
	while ((n = read(o->start_fd, &c, 1)) < 0 && errno == EINTR)
		;
	close(o->start_fd);
	return n == 1 ? 0 : EXIT_SETUP;
}

/* sentry_confine's last step before the sentry's filter: the seccomp platform's zygote. */
static int platform_before_filter(void *arg)
{
	int ret = seccomp_platform_prepare(arg);

	if (ret < 0)
		log_error("platform: cannot start the stub zygote: %s", strerror(-ret));
	return ret;
}

/* The platform's own pages of the memory file (struct platform's mem_alloc, mem_free). */
static int64_t platform_mem_alloc(void *arg, uint64_t len)
{
	return memfile_alloc_nocharge(arg, len);
}

static void platform_mem_free(void *arg, uint64_t off, uint64_t len)
{
	memfile_free(arg, off, len);
}

/* The host fd a member's argv names n by (slots[i] = n for fds[i]), or -1. */
static int member_fd(int n, const int *fds, const int32_t *slots, int nfds, bool *used)
{
	if (n < 0)
		return -1;
	for (int i = 0; i < nfds; i++) {
		if (slots[i] == n && !used[i]) {
			used[i] = true;
			return fds[i];
		}
	}
	return -1;
}

/*
 * control_member_setup_fn (sentry/control/container.c): a pod member's husk-sentry argv, as
 * husk create builds it for a new sentry, made into its mount tree and its init's set-up. Runs
 * on a control thread while the sandbox runs: the tree is built where vfs_setup_root_begin
 * points, never in k's.
 */
static int sentry_member_setup(struct kernel *k, int argc, char **argv, const int *fds,
			       const int32_t *slots, int nfds, struct control_member_setup *out,
			       char *why, size_t whylen)
{
	static pthread_mutex_t parse_lock = PTHREAD_MUTEX_INITIALIZER;
	struct sentry_opts o = { .member = true };
	bool used[CONTROL_CONTAINER_MAX_FDS] = { false };
	struct gofer_client *gc = NULL;
	int ret, gofer, root_fd, n;

	if (nfds > CONTROL_CONTAINER_MAX_FDS)
		return -EINVAL;
	/* getopt's state is global: one member's options at a time. */
	pthread_mutex_lock(&parse_lock);
	optind = 0;
	ret = parse_args(argc, argv, &o);
	pthread_mutex_unlock(&parse_lock);
	if (ret < 0) {
		snprintf(why, whylen, "malformed husk-sentry options");
		goto out_close;
	}
	gofer = root_fd = member_fd(o.gofer_fd, fds, slots, nfds, used);
	for (int i = 0; i < o.nvolumes; i++) {
		o.volumes[i].fd = member_fd(o.volumes[i].fd, fds, slots, nfds, used);
		if (o.volumes[i].fd < 0)
			gofer = -1;
	}
	if (gofer < 0) {
		snprintf(why, whylen, "a gofer socket is missing");
		ret = -EINVAL;
		goto out_close_gofers;
	}
	for (int i = 0; i < 3; i++)
		out->stdio[i] = member_fd(i, fds, slots, nfds, used);
	out->gate_fd = member_fd(o.start_fd, fds, slots, nfds, used);
	if (o.seccomp_fd >= 0) {
		int sfd = member_fd(o.seccomp_fd, fds, slots, nfds, used);

		ret = sfd < 0 ? -EBADF : read_seccomp(sfd, o.seccomp_log, &o.guest.seccomp);
		if (ret < 0) {
			snprintf(why, whylen, "--seccomp-fd: %s",
				 ret == -EINVAL ? "not a valid seccomp program" : strerror(-ret));
			goto out_close_gofers;
		}
	}
	out->guest = o.guest;
	if (o.preserve_fd >= 0) {
		int pfd = member_fd(o.preserve_fd, fds, slots, nfds, used);

		n = pfd < 0 ? -EBADF : hostfile_recv_fds(pfd, out->preserve, 64);
		if (pfd >= 0)
			close(pfd);
		out->npreserve = n > 0 ? n : 0;
	}
	ret = gofer_client_create(gofer, &gc);
	if (ret < 0) {
		snprintf(why, whylen, "gofer connection: %s", strerror(-ret));
		goto out_close_gofers;
	}
	out->gofers[out->ngofers++] = gc;
	vfs_setup_root_begin(&out->root);
	ret = sentry_mount_tree(k, &o, gc, out->gofers + 1, &out->ngofers);
	vfs_setup_root_end();
	if (ret < 0) {
		snprintf(why, whylen, "mounts: %s", strerror(-ret));
		goto out_free;
	}
	/* Its init's set-up: as pid 1's in main, from the same options. */
	out->argv = o.argv;
	out->envp = guest_env(&o);
	o.env = NULL;
	out->cwd = o.cwd;
	out->uid = o.uid;
	out->gid = o.gid;
	out->ngroups = o.ngroups;
	memcpy(out->groups, o.groups, sizeof(out->groups));
	out->umask = o.has_umask ? (int32_t)o.umask : -1;
	out->oom_score_adj = o.oom_score_adj;
	out->memory_limit = o.memory_limit;
	out->private_pids = o.private_pids;
	out->oom_reporter = o.oom_reporter;
	out->pids_limit = o.pids_limit;
	pthread_mutex_lock(&k->lock);
	if (k->init) {
		pthread_mutex_lock(&k->init->tg->lock);
		memcpy(out->rlimits, k->init->tg->rlimits, sizeof(out->rlimits));
		pthread_mutex_unlock(&k->init->tg->lock);
	}
	pthread_mutex_unlock(&k->lock);
	for (int i = 0; i < o.nrlimits; i++)
		out->rlimits[o.rlimits[i].resource] = o.rlimits[i].lim;
	ret = 0;
	goto out_free;

out_close_gofers:
	if (root_fd >= 0)
		close(root_fd);
	for (int i = 0; i < o.nvolumes; i++) {
		if (o.volumes[i].fd >= 0)
			close(o.volumes[i].fd);
	}
out_close:
	/* Nothing took them: every fd given is closed (a taken one was marked used). */
	for (int i = 0; i < nfds; i++) {
		if (!used[i])
			close(fds[i]);
	}
	for (int i = 0; i < 3; i++) {
		if (out->stdio[i] >= 0)
			close(out->stdio[i]);
		out->stdio[i] = -1;
	}
	if (out->gate_fd >= 0)
		close(out->gate_fd);
	out->gate_fd = -1;
	return ret;
out_free:
	/* The fds nobody asked for. */
	for (int i = 0; i < nfds; i++) {
		if (!used[i])
			close(fds[i]);
	}
	free(o.env);
	free(o.masked);
	free(o.readonly_paths);
	free(o.sysctls);
	free(o.devices);
	for (int i = 0; i < o.nvolumes; i++)
		free(o.volumes[i].path);
	return ret;
}

int main(int argc, char **argv)
{
	static struct kernel k;
	struct sentry_opts o = { 0 };
	struct fdtable *fdt;
	struct fs_context *fs;
	struct task *init;
	struct timespec now;
	int keep[13 + 16], nkeep = 0; /* the fds below, then up to 16 volumes */
	int setup_stderr = -1;
	int ret, status;

	start_ns = now_ns();
	/* The sandbox's CPUs, before any task thread pins itself to one (common/cpus.h). */
	husk_cpus_init();
	log_set_name("husk-sentry");
	log_init_from_env();
	prctl(PR_SET_NAME, "husk-sentry", 0, 0, 0);
	/* Rootless: the user namespace of sentry_confine, made now, while the sentry has one
	 * thread (unshare(CLONE_NEWUSER) needs that; the platform starts threads of its own). */
	{
		bool rootless;

		ret = userns_enter_unless_privileged(&rootless);
		if (ret < 0) {
			log_error("confine: user namespace: %s%s", strerror(-ret),
				  userns_hint(ret));
			return EXIT_SETUP;
		}
		if (rootless)
			log_info("rootless: root in a user namespace of our own");
	}
	if (argc == 2 && !strcmp(argv[1], "--print-syscalls")) {
		syscall_table_print();
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "--print-platforms"))
		return print_platforms();
	if (parse_args(argc, argv, &o) < 0) {
		usage();
		return EXIT_SETUP;
	}
	/* The sentry lives no longer than the husk process that started it, unless it was started
	 * by husk create: then it is the container's process, which engines wait on. */
	if (!o.detached)
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);

	/* Nothing the runtime did not mean to give the sandbox: stdio and the gofer socket. */
	keep[nkeep++] = 0;
	keep[nkeep++] = 1;
	keep[nkeep++] = 2;
	keep[nkeep++] = o.gofer_fd;
	keep[nkeep++] = o.ready_fd;
	keep[nkeep++] = o.start_fd;
	keep[nkeep++] = o.control_fd;
	keep[nkeep++] = o.log_fd;
	keep[nkeep++] = o.seccomp_fd;
	keep[nkeep++] = o.preserve_fd;
	keep[nkeep++] = o.gateway_fd;
	keep[nkeep++] = o.crash_fd;
	/* husk create with a terminal: the caller's stderr, for messages until ready. */
	if (getenv("HUSK_SETUP_STDERR_FD") && !o.restore)
		setup_stderr = atoi(getenv("HUSK_SETUP_STDERR_FD"));
	unsetenv("HUSK_SETUP_STDERR_FD");
	keep[nkeep++] = setup_stderr;
	for (int i = 0; i < o.nvolumes; i++)
		keep[nkeep++] = o.volumes[i].fd;
	ret = sentry_close_fds_except(keep, nkeep);
	if (ret < 0) {
		log_error("closing inherited FDs: %s", strerror(-ret));
		return EXIT_SETUP;
	}
	if (o.log_fd >= 0)
		log_set_fd(o.log_fd);
	/* Before confinement (it reads /proc/self/exe's link) and before any other thread. */
	ret = crash_init(syscall_name, o.crash_fd, o.crash_fd_only);
	if (ret < 0)
		log_warn("crash reports: %s: a crash will not be reported", strerror(-ret));
#ifdef HUSK_DEBUG_CRASH
	crash_debug_init(); /* HUSK_DEBUG_CRASH=NAME crashes the sentry on purpose (tests) */
#endif
	if (setup_stderr > 2)
		setup_stderr_swap(setup_stderr);
	/* The image's files: opened now, while the sentry may still open files. */
	int image_fd = -1, pages_fd = -1;
	struct state_restore *restore = NULL;

	if (o.restore) {
		image_fd = open_in(o.restore, STATE_IMAGE_FILE);
		pages_fd = image_fd < 0 ? -1 : open_in(o.restore, STATE_PAGES_FILE);
		if (image_fd < 0 || pages_fd < 0) {
			fprintf(stderr, "husk: restore from %s: %s: %s\n", o.restore,
				image_fd < 0 ? STATE_IMAGE_FILE : STATE_PAGES_FILE,
				strerror(errno));
			return EXIT_SETUP;
		}
	}
	if (o.seccomp_fd >= 0) {
		ret = read_seccomp(o.seccomp_fd, o.seccomp_log, &o.guest.seccomp);
		if (ret < 0) {
			log_error("--seccomp-fd: %s",
				  ret == -EINVAL ? "not a valid seccomp program" : strerror(-ret));
			return EXIT_SETUP;
		}
	}

	pthread_mutex_init(&k.lock, NULL);
	snprintf(k.hostname, sizeof(k.hostname), "%s", o.hostname);
	snprintf(k.domainname, sizeof(k.domainname), "%s", o.domainname ? o.domainname : "(none)");
	/* The sysctl table (/proc/sys): the UTS names are the kernel's; then --sysctl in order. */
	sysctl_bind_string(SYSCTL_KERNEL_HOSTNAME, k.hostname, sizeof(k.hostname), &k.lock);
	sysctl_bind_string(SYSCTL_KERNEL_DOMAINNAME, k.domainname, sizeof(k.domainname), &k.lock);
	for (int i = 0; i < o.nsysctls; i++) {
		char why[256];

		if (sysctl_apply(o.sysctls[i], why, sizeof(why)) < 0) {
			log_error("--sysctl: %s", why);
			return EXIT_SETUP;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	k.boot_ns = (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
	k.strace = o.strace;
	k.strace_fd = 2;

	ret = memfile_init(&k.mf, MEMFILE_SIZE);
	if (ret < 0) {
		log_error("cannot create the memory file: %s", strerror(-ret));
		return EXIT_SETUP;
	}
	/* Before anything else takes memory: the image's pages keep their offsets. */
	if (o.restore) {
		char why[256];

		restore = state_restore_load(&k, image_fd, pages_fd, why, sizeof(why));
		if (IS_ERR(restore)) {
			fprintf(stderr, "husk: restore from %s: %s\n", o.restore, why);
			return EXIT_SETUP;
		}
		close(image_fd);
		/* pages_fd stays open: the restored pages are read from it on first use. */
		timing_stage("restore: image read");
	}
	/* The OOM killer watches the memory file; a limit given now applies to every mapping. */
	oom_init(&k);
	memfile_set_limit(&k.mf, o.memory_limit);
	k.uid_map = o.uid_map;
	k.gid_map = o.gid_map;
	k.oom_score_adj = o.oom_score_adj;
	ret = platform_create(o.platform, k.mf.fd, &k.platform);
	if (ret < 0) {
		log_error("platform %s: %s", o.platform,
			  ret == -ENOENT ? "no such platform" : strerror(-ret));
		return EXIT_SETUP;
	}
	if (!strcmp(k.platform->ops->name, "kvm"))
		sentry_filter_allow_kvm();
	k.platform->mem_base = k.mf.base;
	k.platform->mem_alloc = platform_mem_alloc;
	k.platform->mem_free = platform_mem_free;
	k.platform->mem_arg = &k.mf;
	/*
	 * A restore's pages are mapped from the pages file (shared between restores of one image)
	 * until written; HUSK_RESTORE_COPY=1 copies them into the memory file instead (to compare).
	 */
	if (restore &&
	    !(getenv("HUSK_RESTORE_COPY") && strcmp(getenv("HUSK_RESTORE_COPY"), "1") == 0))
		k.platform->imagefd = pages_fd;
	log_info("platform: %s", k.platform->ops->name);
	timing_stage("memory file and platform");
	ret = gofer_client_create(o.gofer_fd, &k.gofer);
	if (ret < 0) {
		log_error("gofer connection: %s", strerror(-ret));
		return EXIT_SETUP;
	}
	/*
	 * Confinement before the mounts: they need no host path, and the gofer is still starting
	 * (its first reply is the root mount's), so this work overlaps its start-up.
	 * Before confinement: libc reads a file the first time a task thread's arena shrinks.
	 */
	task_host_prepare();
	/* Reads sysfs (the host's clocksource): before confinement. */
	vtime_probe();
	/* The filter allows accept4 on the control socket only. */
	control_set_listen_fd(o.control_fd);
	if (sentry_confine(platform_before_filter, k.platform) < 0)
		return EXIT_SETUP;
	timing_stage("confinement");
	/* Before any other thread: every later thread inherits the forwarded signals blocked. */
	hostsig_set_caller_signals(o.caller_signals);
	ret = hostsig_start(&k);
	if (ret < 0) {
		log_error("forwarding host signals: %s", strerror(-ret));
		return EXIT_SETUP;
	}
	timing_stage("host signal forwarding");
	/* After hostsig_start: its thread inherits the mask that leaves host signals to hostsig. */
	if (stubwatch_start() < 0)
		log_warn("stubs killed from the host will be noticed only at their next switch");
	/* The time page and the vDSO image; its calibration thread inherits the blocked signals. */
	ret = vtime_start(&k.mf);
	if (ret < 0)
		log_warn("no vDSO: %s", strerror(-ret));
	ret = sentry_mount_tree(&k, &o, k.gofer, NULL, NULL);
	if (ret < 0)
		return EXIT_SETUP;
	timing_stage("mounts");
	k.pids_limit = o.pids_limit;
	/* The caller's terminal (if stdio is one) is the controlling terminal of session 1. */
	hosttty_init(&k);

	if (restore) {
		char why[256];

		init = state_restore_build(restore, why, sizeof(why));
		if (IS_ERR(init)) {
			fprintf(stderr, "husk: restore from %s: %s\n", o.restore, why);
			return EXIT_SETUP;
		}
		state_restore_done(restore);
		timing_stage("restore: processes built");
		/* For the processes husk exec starts from now on. */
		ret = control_set_guest_defaults(&o.guest, NULL);
		seccomp_filter_put(o.guest.seccomp);
		if (ret < 0)
			return EXIT_SETUP;
		ret = task_activate_restored(init);
		if (ret < 0) {
			log_error("restore: starting pid 1: %s", strerror(-ret));
			return EXIT_SETUP;
		}
		goto start;
	}
	fdt = fdtable_create();
	fs = fs_context_create(&k);
	if (!fdt || !fs) {
		log_error("out of memory");
		return EXIT_SETUP;
	}
	for (int n = 0; n < 3; n++) {
		ret = install_stdio(fdt, n == 2 && guest_stderr_fd >= 0 ? guest_stderr_fd : n, n);
		if (ret < 0 && ret != -EBADF) {
			log_error("stdio %d: %s", n, strerror(-ret));
			return EXIT_SETUP;
		}
	}
	if (o.preserve_fd >= 0 && sentry_install_preserved(fdt, o.preserve_fd) < 0)
		return EXIT_SETUP;

	timing_stage("stdio");

	init = task_create_init(&k, fdt, fs, o.uid, o.gid);
	if (IS_ERR(init)) {
		log_error("creating pid 1: %s", strerror((int)-PTR_ERR(init)));
		return EXIT_SETUP;
	}
	if (o.has_umask)
		fs_context_set_umask(fs, o.umask);
	fdtable_put(fdt);
	fs_context_put(fs);
	if (o.ngroups) {
		init->cred.ngroups = o.ngroups;
		memcpy(init->cred.groups, o.groups, sizeof(uint32_t) * (size_t)o.ngroups);
	}
	/* The guest's rlimits are the sentry's to enforce: the host need not allow them. */
	for (int i = 0; i < o.nrlimits; i++)
		init->tg->rlimits[o.rlimits[i].resource] = o.rlimits[i].lim;
	/* As runc sets it for the container's process, with CAP_SYS_RESOURCE: also the floor. */
	init->tg->oom_score_adj = init->tg->oom_score_adj_min = o.oom_score_adj;
	timer_rlimit_cpu(init->tg); /* an RLIMIT_CPU given (or inherited) counts guest time */
	/* --default-cwd (husk do: the caller's directory) when the guest has it, else --cwd. */
	if (o.default_cwd && fs_context_chdir(init, o.default_cwd) == 0) {
		/* in it */
	} else if (strcmp(o.cwd, "/") != 0) {
		ret = fs_context_chdir(init, o.cwd);
		if (ret < 0) {
			fprintf(stderr, "husk: --cwd %s: %s\n", o.cwd, strerror(-ret));
			return EXIT_SETUP;
		}
	}

	timing_stage("pid 1 created");
	/* Capabilities, no_new_privs and the seccomp filter after the set-up above (which ran as
	 * root) and before the exec, as runc does: execve's capability rules apply to them. */
	ret = control_set_guest_defaults(&o.guest, init);
	seccomp_filter_put(o.guest.seccomp);
	if (ret < 0) {
		log_error("applying the process's capabilities and seccomp filter: %s",
			  strerror(-ret));
		task_release(init);
		return EXIT_SETUP;
	}
	ret = exec_init(init, o.argv, guest_env(&o));
	timing_stage("pid 1 loaded");
	if (ret != 0) {
		task_release(init);
		return ret;
	}
start:
	ret = wait_for_start(&o);
	if (ret != 0) {
		task_release(init);
		return ret;
	}
	/* husk exec and husk ps: served from now on, while pid 1 runs; pods' members too. */
	control_set_member_setup(sentry_member_setup);
	if (o.oom_reporter)
		control_oom_expect_reporter();
	if (o.control_fd >= 0) {
		ret = control_server_start(&k, o.control_fd);
		if (ret < 0)
			log_warn("control socket: %s: husk exec and ps will fail", strerror(-ret));
	}
	/* Runs pid 1; when it ends, every other task is killed and its stub reaped before this
	 * returns, so nothing outlives the sandbox. */
	timing_stage("pid 1 starts");
	status = task_run_init(init);
	timing_stage("pid 1 and every task ended");
	/* A checkpoint that ended the sandbox answers before the sentry goes. */
	control_checkpoint_barrier();
	/* An OOM kill (of pid 1, say) is reported in the host cgroup before the sentry goes. */
	control_oom_barrier(&k);
	/* husk do: pid 1 died of the caller's signal; the sentry does too (husk do's cue). */
	if (status & 0x7f)
		hostsig_exit_like_pid1(status & 0x7f);
	if (status & 0x7f)
		return 128 + (status & 0x7f);
	return (status >> 8) & 0xff;
}
