/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gofer's confinement (DESIGN.md rule 4). Each step says why it is there and why it is safe.
 * It runs before the first message is read: until then the gofer trusts only its command line.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/userns.h"
#include "common/util.h"
#include "gofer/confine.h"

int gofer_close_fds_except(const int *keep, int nkeep)
{
	int sorted[16];
	unsigned int next = 0;

	if (nkeep < 0 || nkeep > (int)ARRAY_SIZE(sorted))
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
		    syscall(SYS_close_range, next, (unsigned int)sorted[i] - 1, 0) < 0)
			return -errno;
		next = (unsigned int)sorted[i] + 1;
	}
	if (syscall(SYS_close_range, next, ~0U, 0) < 0)
		return -errno;
	return 0;
}

#define STEP(what, call)                                                  \
	do {                                                              \
		if ((call) < 0) {                                         \
			int _e = errno;                                   \
			log_error("confine: %s: %s", what, strerror(_e)); \
			return -_e;                                       \
		}                                                         \
	} while (0)

/*
 * The flags of the mount that holds fd that a user namespace may not clear on a bind remount
 * (the kernel locks them on mounts it copies from a more privileged namespace): noexec, and the
 * atime ones (nosuid and nodev are always set by the callers).
 */
static unsigned long locked_flags(int fd)
{
	struct statvfs sv;
	unsigned long flags = 0;

	if (fstatvfs(fd, &sv) < 0)
		return 0;
	if (sv.f_flag & ST_NOEXEC)
		flags |= MS_NOEXEC;
	if (sv.f_flag & ST_NOATIME)
		flags |= MS_NOATIME;
	if (sv.f_flag & ST_NODIRATIME)
		flags |= MS_NODIRATIME;
	if (sv.f_flag & ST_RELATIME)
		flags |= MS_RELATIME;
	return flags;
}

/*
 * mount(NULL, target, NULL, flags) for a bind remount; in a user namespace (rootless), where
 * the kernel refuses to clear a locked flag of the bound mount (EPERM), again with those flags
 * kept. As root the flags are not kept: the sentry maps donated files executable.
 */
static int bind_remount(const char *target, unsigned long flags, int src_fd)
{
	if (mount(NULL, target, NULL, flags, NULL) == 0)
		return 0;
	if (errno != EPERM || src_fd < 0)
		return -1;
	return mount(NULL, target, NULL, flags | locked_flags(src_fd), NULL);
}

/*
 * Makes newroot (an empty directory of the scratch tmpfs) a root that holds one name, FILE, a
 * bind of the regular file root_path names, and nothing else: the file's directory and its
 * siblings are never mounted in the gofer's namespace, so no request can reach them.
 */
static int file_root_prepare(const char *newroot, const char *source, int src_fd, bool readonly)
{
	char file[80];
	int fd;

	/* pivot_root needs a mount point: newroot bound onto itself (the file bind goes inside
	 * this mount, so it comes with the pivot). */
	STEP("bind-mounting the file root's directory",
	     mount(newroot, newroot, NULL, MS_BIND, NULL));
	snprintf(file, sizeof(file), "%s/" GOFER_FILE_ROOT_NAME, newroot);
	fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		log_error("confine: making the file root's mount point: %s", strerror(errno));
		return -errno;
	}
	close(fd); /* open for writing, it would keep the directory from going read-only */
	STEP("bind-mounting the file", mount(source, file, NULL, MS_BIND, NULL));
	/* Read-only in the kernel with --readonly (DESIGN.md rule 4), never set-uid or a device. */
	STEP("remounting the file",
	     bind_remount(file,
			  MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | (readonly ? MS_RDONLY : 0),
			  src_fd));
	/* The directory around it is always read-only: nothing can be created beside the file. */
	STEP("remounting the file root's directory",
	     mount(NULL, newroot, NULL,
		   MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL));
	return 0;
}

/*
 * Binds source onto target, non-recursively; *recursive says whether it had to be recursive.
 * In a user namespace (rootless, or root of an engine's or a user's namespace) the kernel
 * refuses a non-recursive bind (EINVAL) when mounts below source are locked (every mount the
 * namespace inherited is): it would uncover what they hide. The bind is then recursive, and
 * cover_mounts_below hides those mounts again.
 */
static int bind_root(const char *source, const char *target, bool *recursive)
{
	*recursive = false;
	if (mount(source, target, NULL, MS_BIND, NULL) == 0)
		return 0;
	if (errno != EINVAL)
		return -1;
	*recursive = true;
	return mount(source, target, NULL, MS_BIND | MS_REC, NULL);
}

/* Decodes mountinfo's octal escapes (\040 for a blank, ...) in s, in place. */
static void mountinfo_unescape(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = 0;
}

/*
 * After a recursive bind (bind_root) the mounts below root are served; this detaches each of
 * them that is not locked (the outermost ones: what is below goes with them) and hides each
 * directory a locked one is mounted on under an empty read-only tmpfs, so the gofer serves
 * what a non-recursive bind serves: the root's own file system, its mount points empty. A mount on a regular file
 * stays (nothing can be mounted over it but a file; it is what the owner of the namespace
 * could read anyway). Returns 0 or -errno.
 */
static int cover_mounts_below(const char *root)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	size_t rlen = strlen(root), n = 0, cap = 0, len = 0;
	_cleanup_free_ char *line = NULL;
	char **points = NULL;
	int ret = 0;

	if (!f)
		return -errno;
	while (ret == 0 && getline(&line, &len, f) > 0) {
		char mp[4096];
		char **grown;

		/* id parent major:minor root MOUNT-POINT ... */
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1)
			continue;
		mountinfo_unescape(mp);
		if (strncmp(mp, root, rlen) != 0 || mp[rlen] != '/')
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			grown = realloc(points, cap * sizeof(*points));
			if (!grown) {
				ret = -ENOMEM;
				break;
			}
			points = grown;
		}
		points[n] = strdup(mp);
		if (points[n])
			n++;
		else
			ret = -ENOMEM;
	}
	for (size_t i = 0; i < n && ret == 0; i++) {
		struct stat st;
		bool beneath = false;

		/* Beneath another listed mount point: that one's cover hides it. */
		for (size_t j = 0; j < n && !beneath; j++) {
			size_t l = strlen(points[j]);

			beneath = j != i && strncmp(points[i], points[j], l) == 0 &&
				  points[i][l] == '/';
		}
		if (beneath)
			continue;
		/* A mount of our own namespace (the copy of the scratch tmpfs, when root holds
		 * it) is not locked: detached, it shows the directory below as root's bind does. */
		if (umount2(points[i], MNT_DETACH) == 0)
			continue;
		if (lstat(points[i], &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		/* An empty tmpfs in our own mount namespace, read-only: nothing can be made in it. */
		if (mount("husk-gofer-hidden", points[i], "tmpfs",
			  MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  "size=4k,nr_inodes=1,mode=0755") < 0) {
			ret = -errno;
			log_error("confine: covering the mount at %s: %s", points[i] + rlen,
				  strerror(errno));
		}
	}
	for (size_t i = 0; i < n; i++)
		free(points[i]);
	free(points);
	return ret;
}

int gofer_pivot_into(const char *root, bool readonly, int *root_fd, int *proc_fd)
{
	static const char *const scratch_candidates[] = { "/tmp", "/mnt", "/run", "/var/tmp" };
	_cleanup_close_ int proc = -1;
	_cleanup_close_ int old_root = -1;
	const char *scratch = NULL;
	char newroot[64], source[64];
	unsigned long flags;
	struct stat st;
	bool is_file, rootless, recursive;
	int fd, ret;

	/* Opened before the pivot, it is the gofer's way to reopen an O_PATH FD as a file. It
	 * reaches nothing by name but the gofer's own /proc entries: the processes outside are
	 * hidden behind ptrace access checks the gofer fails once its capabilities are gone. */
	proc = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (proc < 0) {
		log_error("confine: /proc/self/fd: %s", strerror(errno));
		return -errno;
	}
	/* Run by an unprivileged user: a user namespace of our own first, in which we are root
	 * (only the caller's uid and gid are mapped, to 0), so that the steps below apply as they
	 * do under root; its capabilities reach nothing the caller could not reach. */
	ret = userns_enter_unless_privileged(&rootless);
	if (ret < 0) {
		log_error("confine: user namespace: %s%s", strerror(-ret), userns_hint(ret));
		return ret;
	}
	if (rootless)
		log_info("rootless: root in a user namespace of our own");
	/* Our own mount namespace, private, so that nothing we mount is seen by the host. */
	STEP("unshare(CLONE_NEWNS)", unshare(CLONE_NEWNS));
	STEP("making / private", mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	/* Opened in the new namespace (a bind source must be in it), before the scratch tmpfs
	 * below can hide it (root may be under /tmp). The path is the runtime's (config.json's
	 * source), resolved as mount(8) would; what it names must be a directory or a regular
	 * file, and from here on only that inode is used (through /proc/self/fd). */
	old_root = open(root, O_PATH | O_CLOEXEC);
	if (old_root < 0) {
		log_error("confine: %s: %s", root, strerror(errno));
		return -errno;
	}
	if (fstat(old_root, &st) < 0) {
		log_error("confine: %s: %s", root, strerror(errno));
		return -errno;
	}
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
		log_error("confine: %s: neither a directory nor a regular file", root);
		return -ENOTDIR;
	}
	is_file = S_ISREG(st.st_mode);
	for (size_t i = 0; i < ARRAY_SIZE(scratch_candidates); i++) {
		if (stat(scratch_candidates[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			scratch = scratch_candidates[i];
			break;
		}
	}
	if (!scratch) {
		log_error("confine: no directory to mount a scratch tmpfs on (tried /tmp, /mnt, "
			  "/run, /var/tmp)");
		return -ENOENT;
	}
	/* A fresh directory to bind the root onto; this tmpfs only exists in our namespace and
	 * goes away with the old root below. */
	STEP("mounting a scratch tmpfs",
	     mount("husk-gofer-scratch", scratch, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		   "size=4k,nr_inodes=8,mode=0700"));
	snprintf(newroot, sizeof(newroot), "%s/root", scratch);
	STEP("mkdir in the scratch tmpfs", mkdir(newroot, 0700));
	snprintf(source, sizeof(source), "/proc/self/fd/%d", old_root);
	if (is_file) {
		ret = file_root_prepare(newroot, source, old_root, readonly);
		if (ret < 0)
			return ret;
	} else {
		/* Non-recursive: mounts under root (a host's /proc, /sys, /dev when root is /) are
		 * not part of the bind, so they are not served; their mount points show as empty
		 * dirs. */
		STEP("bind-mounting the root", bind_root(source, newroot, &recursive));
		/* Read-only in the kernel too (DESIGN.md rule 4); set-uid bits and device nodes of
		 * the served tree mean nothing to the gofer. */
		flags = MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | (readonly ? MS_RDONLY : 0);
		STEP("remounting the root", bind_remount(newroot, flags, old_root));
		/* A recursive bind: the mounts below get the same flags, read-only included, in
		 * the kernel too. */
		if (recursive) {
			struct mount_attr attr = {
				.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
					    (readonly ? MOUNT_ATTR_RDONLY : 0),
			};

			STEP("setting the flags of the mounts below the root",
			     mount_setattr(AT_FDCWD, newroot, AT_RECURSIVE, &attr, sizeof(attr)));
			ret = cover_mounts_below(newroot);
			if (ret < 0)
				return ret;
		}
	}
	STEP("chdir to the new root", chdir(newroot));
	/* pivot_root(".", ".") stacks the old root on top of the new one; detaching it leaves the
	 * bind mount alone in the namespace. */
	STEP("pivot_root", syscall(SYS_pivot_root, ".", "."));
	STEP("detaching the old root", umount2(".", MNT_DETACH));
	STEP("chdir /", chdir("/"));
	/* old_root still points into the detached tree: closed on return. A file root is served
	 * as the file itself: the server's root FD is the file's. */
	if (is_file)
		fd = open("/" GOFER_FILE_ROOT_NAME, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	else
		fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		log_error("confine: opening the new root: %s", strerror(errno));
		return -errno;
	}
	*root_fd = fd;
	*proc_fd = steal_fd(&proc);
	return 0;
}

int gofer_drop_capabilities(bool readonly)
{
	static const cap_value_t read_caps[] = { CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH };
	static const cap_value_t write_caps[] = { CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER,
						  CAP_CHOWN, CAP_FSETID };
	const cap_value_t *keep = readonly ? read_caps : write_caps;
	int nkeep = readonly ? (int)ARRAY_SIZE(read_caps) : (int)ARRAY_SIZE(write_caps);
	cap_t caps;
	int ret = 0;

	/* The bounding set first: dropping from it needs CAP_SETPCAP, which goes last. */
	for (int c = 0; c <= CAP_LAST_CAP || c < (int)cap_max_bits(); c++) {
		bool kept = false;

		for (int i = 0; i < nkeep; i++)
			kept |= keep[i] == c;
		if (!kept && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return -errno;
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	caps = cap_init();
	if (!caps)
		return -ENOMEM;
	if (cap_set_flag(caps, CAP_PERMITTED, nkeep, keep, CAP_SET) < 0 ||
	    cap_set_flag(caps, CAP_EFFECTIVE, nkeep, keep, CAP_SET) < 0 || cap_set_proc(caps) < 0)
		ret = -errno;
	cap_free(caps);
	return ret;
}

int gofer_lock_down(bool readonly)
{
	int ret;

	ret = gofer_drop_capabilities(readonly);
	if (ret < 0) {
		log_error("confine: dropping capabilities: %s", strerror(-ret));
		return ret;
	}
	/* No exec could ever gain privilege (and seccomp needs it without CAP_SYS_ADMIN). */
	STEP("no_new_privs", prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	/* No core dumps of served data, and no ptrace by processes of the same uid. */
	STEP("not dumpable", prctl(PR_SET_DUMPABLE, 0, 0, 0, 0));
	ret = gofer_install_filter(readonly);
	if (ret < 0) {
		log_error("confine: seccomp filter: %s", strerror(-ret));
		return ret;
	}
	return 0;
}
