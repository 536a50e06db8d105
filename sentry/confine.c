/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sentry confinement (DESIGN.md rule 3). Each step says why it is there and why it is safe.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"
#include "common/userns.h"
#include "sentry/confine.h"

int sentry_close_fds_except(const int *keep, int nkeep)
{
	int sorted[64];
	unsigned int next = 0;

	/* main keeps stdio, the gofer, log, control, seccomp and preserve fds and one per volume. */
	if (nkeep < 0 || nkeep > (int)(sizeof(sorted) / sizeof(sorted[0])))
		return -EINVAL;
	memcpy(sorted, keep, sizeof(int) * (size_t)nkeep);
	for (int i = 1; i < nkeep; i++) {
		for (int j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
			int tmp = sorted[j];
			sorted[j] = sorted[j - 1];
			sorted[j - 1] = tmp;
		}
	}
	for (int i = 0; i < nkeep; i++) {
		if (sorted[i] < 0 || (unsigned int)sorted[i] < next)
			continue;
		if ((unsigned int)sorted[i] > next &&
		    syscall(SYS_close_range, next, sorted[i] - 1, 0) < 0)
			return -errno;
		next = (unsigned int)sorted[i] + 1;
	}
	if (syscall(SYS_close_range, next, ~0U, 0) < 0)
		return -errno;
	return 0;
}

/*
 * The sentry's root becomes an empty, read-only tmpfs: after this no host path can be named, so
 * a subverted sentry can open nothing by path (DESIGN.md rule 2 is then enforced by the kernel,
 * and the seccomp filter also refuses open/openat).
 */
static int pivot_to_empty_root(void)
{
	static const char *const candidates[] = { "/tmp", "/mnt", "/run", "/var/tmp" };
	const char *dir = NULL;
	struct stat st;

	/* Our mounts must not propagate back to the host's namespace. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
		if (stat(candidates[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			dir = candidates[i];
			break;
		}
	}
	if (!dir)
		return -ENOENT;
	/* This tmpfs exists only in the sentry's private mount namespace. */
	if (mount("husk-sentry-root", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "size=4k,nr_inodes=4,mode=0555") < 0)
		return -errno;
	if (chdir(dir) < 0)
		return -errno;
	/* pivot_root(".", ".") stacks the old root on top of the new one; detaching it leaves
	 * only the empty tmpfs. */
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return -errno;
	if (umount2(".", MNT_DETACH) < 0)
		return -errno;
	if (chdir("/") < 0)
		return -errno;
	if (mount(NULL, "/", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL) < 0)
		return -errno;
	return 0;
}

/* Drops every capability from all sets, the bounding set included: the sentry needs none once it
 * is confined (it traces only its own children, which have the same credentials). */
static int drop_capabilities(void)
{
	cap_t empty;
	int ret = 0;

	for (int c = 0; c <= CAP_LAST_CAP; c++) {
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return -errno;
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	empty = cap_init();
	if (!empty)
		return -ENOMEM;
	if (cap_set_proc(empty) < 0)
		ret = -errno;
	cap_free(empty);
	return ret;
}

int sentry_confine(int (*before_filter)(void *arg), void *arg)
{
	bool rootless;
	int ret;

	/* Run by an unprivileged user: a user namespace of our own first, in which we are root
	 * (the caller's uid and nothing else is mapped), so that every step below applies as it
	 * does under root; its capabilities reach nothing the caller could not reach. main()
	 * makes it before any thread exists; here it is a no-op then (we hold CAP_SYS_ADMIN). */
	ret = userns_enter_unless_privileged(&rootless);
	if (ret < 0) {
		log_error("confine: user namespace: %s%s", strerror(-ret), userns_hint(ret));
		return ret;
	}
	if (rootless)
		log_info("confine: rootless: root in a user namespace of our own");
	/* New mount namespace for the pivot; new IPC and UTS namespaces so that nothing the
	 * sentry could do there touches the host's. */
	if (unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS) < 0) {
		ret = -errno;
		log_error("confine: unshare: %s", strerror(-ret));
		return ret;
	}
	ret = pivot_to_empty_root();
	if (ret < 0) {
		log_error("confine: pivot to an empty root: %s", strerror(-ret));
		return ret;
	}
	ret = drop_capabilities();
	if (ret < 0) {
		log_error("confine: dropping capabilities: %s", strerror(-ret));
		return ret;
	}
	/* Required for an unprivileged seccomp filter, and no exec could ever gain privilege. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		ret = -errno;
		log_error("confine: no_new_privs: %s", strerror(-ret));
		return ret;
	}
	/* Processes forked now (the seccomp platform's zygote) carry only their own filter. */
	if (before_filter) {
		ret = before_filter(arg);
		if (ret < 0)
			return ret;
	}
	ret = sentry_install_filter();
	if (ret < 0) {
		log_error("confine: seccomp filter: %s", strerror(-ret));
		return ret;
	}
	return 0;
}
