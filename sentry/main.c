/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk-sentry: the userspace kernel of one sandbox.
 *
 *   husk-sentry --gofer-fd N [--platform NAME] [--cwd DIR] [--env K=V]... [--hostname NAME]
 *               [--uid U] [--gid G] [--strace] [--writable-root] -- PROGRAM ARGS...
 *
 * Started by the husk runtime with the gofer's socket at fd N and the caller's stdio at 0-2.
 * Sets up the kernel (memory file, platform, root filesystem), confines itself, starts
 * PROGRAM as pid 1 and exits with its status: the exit code, or 128+N after signal N.
 * Exit statuses of its own: 125 when the sandbox cannot be set up, 126 when PROGRAM is not
 * executable, 127 when it does not exist (as a shell reports them).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "common/err.h"
#include "common/log.h"
#include "sentry/confine.h"
#include "sentry/fs/gofer/client.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/platform/platform.h"
#include "sentry/vfs/vfs.h"
#include "syscalls/syscalls.h"

#define EXIT_SETUP 125
#define EXIT_NOEXEC 126
#define EXIT_NOTFOUND 127

/* Size of the memory file's offset space: the most guest memory one sandbox can use. */
#define MEMFILE_SIZE (64ULL << 30)

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

struct sentry_opts {
	int gofer_fd;
	const char *platform;
	const char *cwd;
	const char *hostname;
	uint32_t uid, gid;
	bool strace;
	bool writable_root;
	char **env;
	int nenv;
	char **argv;
};

static void usage(void)
{
	fputs("usage: husk-sentry --gofer-fd N [--platform NAME] [--cwd DIR] [--env K=V]...\n"
	      "                   [--hostname NAME] [--uid U] [--gid G] [--strace] -- PROGRAM "
	      "ARGS...\n"
	      "husk-sentry is started by husk; see `husk do --help`.\n",
	      stderr);
}

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
		{ NULL, 0, NULL, 0 },
	};
	int c;

	o->gofer_fd = -1;
	o->platform = "ptrace";
	o->cwd = "/";
	o->hostname = "husk";
	o->uid = (uint32_t)getuid();
	o->gid = (uint32_t)getgid();
	o->env = calloc((size_t)argc + 1, sizeof(char *));
	if (!o->env)
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

/* Builds the guest environment: the given variables, plus PATH if they lack one. */
static char **guest_env(struct sentry_opts *o)
{
	if (!env_lookup(o->env, "PATH"))
		o->env[o->nenv++] = "PATH=" DEFAULT_PATH;
	o->env[o->nenv] = NULL;
	return o->env;
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
	ret = fdtable_install_at(fdt, f, n, false, 1024);
	file_put(f);
	return ret < 0 ? ret : 0;
}

int main(int argc, char **argv)
{
	static struct kernel k;
	struct sentry_opts o = { 0 };
	struct fdtable *fdt;
	struct fs_context *fs;
	struct task *init;
	struct timespec now;
	int keep[4], nkeep = 0;
	int ret, status;

	log_set_name("husk-sentry");
	log_init_from_env();
	prctl(PR_SET_NAME, "husk-sentry", 0, 0, 0);
	/* The sentry lives no longer than the husk process that started it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);

	if (argc == 2 && !strcmp(argv[1], "--print-syscalls")) {
		syscall_table_print();
		return 0;
	}
	if (parse_args(argc, argv, &o) < 0) {
		usage();
		return EXIT_SETUP;
	}

	/* Nothing the runtime did not mean to give the sandbox: stdio and the gofer socket. */
	keep[nkeep++] = 0;
	keep[nkeep++] = 1;
	keep[nkeep++] = 2;
	keep[nkeep++] = o.gofer_fd;
	ret = sentry_close_fds_except(keep, nkeep);
	if (ret < 0) {
		log_error("closing inherited FDs: %s", strerror(-ret));
		return EXIT_SETUP;
	}

	pthread_mutex_init(&k.lock, NULL);
	snprintf(k.hostname, sizeof(k.hostname), "%s", o.hostname);
	snprintf(k.domainname, sizeof(k.domainname), "(none)");
	clock_gettime(CLOCK_MONOTONIC, &now);
	k.boot_ns = (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
	k.strace = o.strace;
	k.strace_fd = 2;

	ret = memfile_init(&k.mf, MEMFILE_SIZE);
	if (ret < 0) {
		log_error("cannot create the memory file: %s", strerror(-ret));
		return EXIT_SETUP;
	}
	ret = platform_create(o.platform, k.mf.fd, &k.platform);
	if (ret < 0) {
		log_error("platform %s: %s", o.platform,
			  ret == -ENOENT ? "no such platform" : strerror(-ret));
		return EXIT_SETUP;
	}
	ret = gofer_client_create(o.gofer_fd, &k.gofer);
	if (ret < 0) {
		log_error("gofer connection: %s", strerror(-ret));
		return EXIT_SETUP;
	}
	ret = vfs_mount_root(&k, k.gofer, !o.writable_root);
	if (ret < 0) {
		log_error("mounting the root filesystem: %s", strerror(-ret));
		return EXIT_SETUP;
	}
	ret = vfs_mount_dev(&k);
	if (ret < 0 && ret != -ENOENT) {
		log_error("mounting /dev: %s", strerror(-ret));
		return EXIT_SETUP;
	}

	fdt = fdtable_create();
	fs = fs_context_create(&k);
	if (!fdt || !fs) {
		log_error("out of memory");
		return EXIT_SETUP;
	}
	for (int n = 0; n < 3; n++) {
		ret = install_stdio(fdt, n, n);
		if (ret < 0 && ret != -EBADF) {
			log_error("stdio %d: %s", n, strerror(-ret));
			return EXIT_SETUP;
		}
	}

	if (sentry_confine() < 0)
		return EXIT_SETUP;

	init = task_create_init(&k, fdt, fs, o.uid, o.gid);
	if (IS_ERR(init)) {
		log_error("creating pid 1: %s", strerror((int)-PTR_ERR(init)));
		return EXIT_SETUP;
	}
	fdtable_put(fdt);
	fs_context_put(fs);
	if (strcmp(o.cwd, "/") != 0) {
		ret = fs_context_chdir(init, o.cwd);
		if (ret < 0) {
			fprintf(stderr, "husk: --cwd %s: %s\n", o.cwd, strerror(-ret));
			return EXIT_SETUP;
		}
	}

	ret = exec_init(init, o.argv, guest_env(&o));
	if (ret != 0) {
		task_release(init);
		return ret;
	}
	status = task_run(init);
	/* Kill and reap the stub before the sentry goes, so nothing outlives the sandbox. */
	task_release(init);
	if (status & 0x7f)
		return 128 + (status & 0x7f);
	return (status >> 8) & 0xff;
}
