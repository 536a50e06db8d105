/* SPDX-License-Identifier: Apache-2.0 */
/*
 * husk checkpoint [--image-path DIR] [--work-path DIR] [--leave-running] ID
 * husk restore [--image-path DIR] [--bundle DIR] [--detach] [--pid-file F]
 *              [--console-socket S] ID
 *
 * As runc's verbs, but the image is the sentry's own state (sentry/state/README.md), not host
 * processes' through CRIU: checkpoint asks the running sentry to write it (CONTROL_CHECKPOINT,
 * the files opened here and passed along); restore is husk run whose sentry starts from the
 * image instead of the config's process. CRIU's options that engines pass (--tcp-established,
 * --file-locks, --manage-cgroups-mode, ...) are accepted and need nothing: husk saves what it
 * can and refuses with a message what it cannot.
 *
 * What engines need of the image folder besides husk's two files:
 * - podman: CRIU's inventory.img (an empty one is written), `criu` on PATH and `husk checkpoint
 *   --help` succeeding (it never runs criu).
 * - containerd 1.6's runc shim (tests/integration/oci-containerd.sh): nothing. `ctr task
 *   checkpoint` / `ctr container checkpoint --task` make it run `husk pause ID`, then
 *   `husk checkpoint --image-path TMP --work-path W [--file-locks] [--leave-running] ID`, then
 *   `husk resume ID` (so a paused sandbox must checkpoint: sentry/kernel/freeze.c); containerd
 *   tars the whole folder into the content store. `ctr container restore --live` unpacks it and
 *   the shim runs `husk restore --image-path DIR --work-path W --detach --pid-file F
 *   -no-subreaper --bundle B ID` with the task's stdio as husk's own. The shim reads no file of
 *   the image and runs no criu; on a failure its error names W/dump.log (copied to
 *   B/criu-dump.log), where CRIU would have logged: husk writes its own message there.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/control.h"
#include "runtime/oci.h"
#include "sentry/state/names.h"

/* mkdir -p for the image folder (0700: an image holds the guest's memory). */
static int make_dir(const char *path)
{
	char buf[PATH_MAX];

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/*
 * The reason a checkpoint failed, in WORK/dump.log: where runc's CRIU logs, and the file the
 * containerd shim names in its error (it copies it into the bundle). Best effort.
 */
static void write_dump_log(const char *work, const char *why)
{
	char path[PATH_MAX + 16];
	FILE *f;

	if (make_dir(work) < 0 ||
	    snprintf(path, sizeof(path), "%s/dump.log", work) >= (int)sizeof(path))
		return;
	f = fopen(path, "we");
	if (!f)
		return;
	fprintf(f, "husk: checkpoint failed: %s\n", why);
	fclose(f);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The name an image file is written under before it is complete: DIR/.NAME.tmp */
static void tmp_name(char *buf, size_t size, const char *dir, const char *name)
{
	snprintf(buf, size, "%s/.%s.tmp", dir, name);
}

int cmd_checkpoint(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "image-path", required_argument, NULL, 'i' },
		{ "work-path", required_argument, NULL, 'w' },
		{ "leave-running", no_argument, NULL, 'l' },
		/* CRIU's, as engines pass them to runc: nothing to do for husk. */
		{ "tcp-established", no_argument, NULL, 'x' },
		{ "tcp-skip-in-flight", no_argument, NULL, 'x' },
		{ "link-remap", no_argument, NULL, 'x' },
		{ "ext-unix-sk", no_argument, NULL, 'x' },
		{ "shell-job", no_argument, NULL, 'x' },
		{ "file-locks", no_argument, NULL, 'x' },
		{ "pre-dump", no_argument, NULL, 'x' },
		{ "auto-dedup", no_argument, NULL, 'x' },
		{ "lazy-pages", no_argument, NULL, 'x' },
		{ "parent-path", required_argument, NULL, 'x' },
		{ "page-server", required_argument, NULL, 'x' },
		{ "status-fd", required_argument, NULL, 'x' },
		{ "manage-cgroups-mode", required_argument, NULL, 'x' },
		{ "empty-ns", required_argument, NULL, 'x' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *image = NULL, *work = NULL;
	bool leave = false;
	struct container c;
	enum container_status s;
	char dir[PATH_MAX], why[300];
	int opt, ret = 0, fds[2] = { -1, -1 };

	optind = 1;
	while ((opt = getopt_long_only(argc, argv, "+", longopts, NULL)) != -1) {
		switch (opt) {
		case 'i':
			image = optarg;
			break;
		case 'l':
			leave = true;
			break;
		case 'w':
			work = optarg;
			break;
		case 'x':
			break;
		case 'h':
			/* Engines (podman) ask this to learn whether the runtime can checkpoint. */
			puts("usage: husk checkpoint [--image-path DIR] [--work-path DIR] "
			     "[--leave-running] ID");
			return 0;
		default:
			return 1;
		}
	}
	if (optind != argc - 1)
		return oci_fail("checkpoint: expected exactly one container id");
	if (oci_load_or_fail(argv[optind], &c))
		return 1;
	s = container_status(&c);
	if (s != CONTAINER_RUNNING && s != CONTAINER_PAUSED) {
		ret = oci_fail("container %s is not running", c.id);
		goto out;
	}
	/* runc's default: ./checkpoint */
	if (!image)
		image = "checkpoint";
	ret = make_dir(image);
	if (ret == 0 && !realpath(image, dir))
		ret = -errno;
	if (ret < 0) {
		ret = oci_fail("image path %s: %s", image, strerror(-ret));
		goto out;
	}
	/*
	 * New files under temporary names, renamed over the old ones once complete: sandboxes
	 * restored from this folder earlier map its pages file and read from it (lazy restore),
	 * so the old file must stay as it is (a new inode replaces it; theirs lives on).
	 */
	for (int i = 0; i < 2; i++) {
		char path[PATH_MAX + 64];

		tmp_name(path, sizeof(path), dir, i ? STATE_PAGES_FILE : STATE_IMAGE_FILE);
		fds[i] = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fds[i] < 0) {
			ret = oci_fail("%s: %s", path, strerror(errno));
			goto out;
		}
	}
	{
		_cleanup_free_ char *sock_path = container_path(&c, "control.sock");
		_cleanup_close_ int sock = sock_path ? control_dial(sock_path) : -ENOMEM;
		struct control_hdr h = { .magic = CONTROL_MAGIC,
					 .version = CONTROL_VERSION,
					 .op = CONTROL_CHECKPOINT,
					 .len = sizeof(struct control_checkpoint) };
		struct control_checkpoint req = { .flags = leave ? CONTROL_CKPT_LEAVE_RUNNING : 0 };
		struct control_checkpoint_reply r;
		char msg[sizeof(h) + sizeof(req)];
		uint64_t t0 = mono_ns();

		memcpy(msg, &h, sizeof(h));
		memcpy(msg + sizeof(h), &req, sizeof(req));
		if (sock < 0) {
			ret = oci_fail("checkpoint: the sandbox's control socket: %s",
				       strerror(-sock));
			goto out;
		}
		ret = control_send_fds(sock, msg, sizeof(msg), fds, 2);
		if (ret == 0)
			ret = control_recv(sock, CONTROL_CHECKPOINT_REPLY, &r, sizeof(r));
		if (ret < 0) {
			ret = oci_fail("checkpoint: the sandbox did not answer: %s",
				       strerror(-ret));
			goto out;
		}
		if (r.err < 0) {
			r.msg[sizeof(r.msg) - 1] = 0;
			snprintf(why, sizeof(why), "%s", r.msg[0] ? r.msg : strerror(-r.err));
			ret = oci_fail("checkpoint failed: %s", why);
			if (work)
				write_dump_log(work, why);
			goto out;
		}
		if (getenv("HUSK_CHECKPOINT_STATS"))
			fprintf(stderr,
				"husk: checkpoint: image %llu bytes, pages %llu bytes, stop %llu us, "
				"save %llu us, total %llu us\n",
				(unsigned long long)r.image_bytes,
				(unsigned long long)r.pages_bytes,
				(unsigned long long)r.freeze_ns / 1000,
				(unsigned long long)r.save_ns / 1000,
				(unsigned long long)(mono_ns() - t0) / 1000);
	}
	for (int i = 0; i < 2 && ret == 0; i++) {
		char from[PATH_MAX + 64], to[PATH_MAX + 64];
		const char *name = i ? STATE_PAGES_FILE : STATE_IMAGE_FILE;

		tmp_name(from, sizeof(from), dir, name);
		snprintf(to, sizeof(to), "%s/%s", dir, name);
		if (rename(from, to) < 0)
			ret = oci_fail("checkpoint: %s: %s", to, strerror(errno));
	}
	if (ret)
		goto out;
	{
		/* Engines look for CRIU's inventory.img to call a checkpoint complete (podman's
		 * restore refuses a folder without it): an empty one says so, the image is husk's. */
		char path[PATH_MAX + 64];
		int fd;

		snprintf(path, sizeof(path), "%s/inventory.img", dir);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd >= 0)
			close(fd);
	}
	if (!leave) {
		_cleanup_free_ char *mark = container_path(&c, "checkpointed");
		int fd = mark ? open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0600) : -1;

		if (fd >= 0)
			close(fd);
		/* The sentry kills every process and exits: wait for it, as runc waits for CRIU. */
		int pfd = (int)syscall(SYS_pidfd_open, c.pid, 0);

		if (pfd >= 0) {
			struct pollfd p = { .fd = pfd, .events = POLLIN };

			if (process_alive(c.pid, c.pid_start))
				poll(&p, 1, 60000);
			close(pfd);
		}
	}
out:
	for (int i = 0; i < 2; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
	}
	if (ret && fds[0] >= 0) {
		/* No half image is left (the folder's earlier image, if any, is untouched). */
		char path[PATH_MAX + 64];

		for (int i = 0; i < 2; i++) {
			tmp_name(path, sizeof(path), dir, i ? STATE_PAGES_FILE : STATE_IMAGE_FILE);
			unlink(path);
		}
	}
	container_release(&c);
	return ret;
}

int cmd_restore(int argc, char **argv)
{
	return oci_run(argc, argv, true);
}

/*
 * husk fork [--image-path DIR] ID NEWID...: saves running container ID (it goes on running) and
 * restores the image as each NEWID, detached, with ID's bundle. Without --image-path the image
 * lives in a folder under the state root removed once every copy has started: each restored sentry
 * keeps the pages file open and reads its pages from it on first use.
 */
int cmd_fork(int argc, char **argv)
{
	char dir[PATH_MAX] = "", bundle[PATH_MAX];
	const char *image = NULL;
	struct container c;
	int i = 1, ret = 0;

	if (i + 1 < argc && !strcmp(argv[i], "--image-path")) {
		image = argv[i + 1];
		i += 2;
	} else if (i < argc && !strncmp(argv[i], "--image-path=", 13)) {
		image = argv[i] + 13;
		i++;
	}
	if (argc - i < 2)
		return oci_fail("fork: expected a container id and at least one new id");
	if (oci_load_or_fail(argv[i], &c))
		return 1;
	snprintf(bundle, sizeof(bundle), "%s", c.bundle);
	container_release(&c);
	if (!image) {
		/* Beside the containers' state (a tmpfs is no faster here: its pages cost as much
		 * to allocate as a disk file's page cache). */
		snprintf(dir, sizeof(dir), "%s/fork-XXXXXX", oci_g.root);
		if (!mkdtemp(dir))
			return oci_fail("fork: %s: %s", dir, strerror(errno));
		image = dir;
	}
	{
		char *cargv[] = { "checkpoint",	 "--leave-running", "--image-path",
				  (char *)image, argv[i],	    NULL };

		ret = cmd_checkpoint(5, cargv);
	}
	for (int j = i + 1; ret == 0 && j < argc; j++) {
		char *rargv[] = { "restore",  "--detach", "--image-path", (char *)image,
				  "--bundle", bundle,	  argv[j],	  NULL };

		ret = oci_run(7, rargv, true);
	}
	if (dir[0]) {
		char path[PATH_MAX + 64];

		snprintf(path, sizeof(path), "%s/%s", dir, STATE_IMAGE_FILE);
		unlink(path);
		snprintf(path, sizeof(path), "%s/%s", dir, STATE_PAGES_FILE);
		unlink(path);
		snprintf(path, sizeof(path), "%s/inventory.img", dir);
		unlink(path);
		rmdir(dir);
	}
	return ret;
}
