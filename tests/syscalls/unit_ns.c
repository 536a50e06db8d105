/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The calls systemd (252, src/core/namespace.c and src/shared/mount-util.c) makes to give a
 * unit ProtectHome=, ProtectSystem=, PrivateTmp=: a recursive bind of the root onto a
 * directory, binds over parts of it (an inaccessible directory over /home), then the
 * read-only remount of each part, which reads /proc/self/mountinfo again and again through one
 * fd (lseek to 0) until the part it made a mount of by binding it onto itself shows up (with
 * 32 tries, then EBUSY: systemd-logind failed so in husk, whose mountinfo kept its contents of
 * the open), and the move of the tree onto / with a chroot.
 *
 * A generated /proc file is made again by a read that does not go on where the last one ended
 * (Linux's seq_file: lseek, pread), and not by a read that goes on.
 */
#include <fcntl.h>
#include <sys/prctl.h>

#include "mountns.h"

/* All of fd from offset 0 (pread) or from its position (read) into buf, NUL-terminated. */
static ssize_t read_all(int fd, char *buf, size_t len, bool positional)
{
	size_t done = 0;

	while (done + 1 < len) {
		/* Small reads, as libmount's stdio: a sequence of them sees one snapshot. */
		size_t want = len - 1 - done < 100 ? len - 1 - done : 100;
		ssize_t n = positional ? pread(fd, buf + done, want, (off_t)done) :
					 read(fd, buf + done, want);

		if (n < 0)
			return -1;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	buf[done] = '\0';
	return (ssize_t)done;
}

/* The line of text whose fifth field (mountinfo's mount point) is path, in out; false if none. */
static bool find_mount(const char *text, const char *path, char *out, size_t len)
{
	const char *l = text;
	bool found = false;

	while (*l) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);
		char line[1024], mp[512];

		if (n < sizeof(line)) {
			memcpy(line, l, n);
			line[n] = '\0';
			if (sscanf(line, "%*s %*s %*s %*s %511s", mp) == 1 && !strcmp(mp, path)) {
				snprintf(out, len, "%s", line);
				found = true;
			}
		}
		l += n + (e ? 1 : 0);
	}
	return found;
}

/* mount(2) on the directory fd opens, through /proc/self/fd (systemd's mount_nofollow). */
static int mount_fd(const char *src, const char *target, unsigned long flags)
{
	char p[64];
	int fd = open(target, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	int r;

	if (fd < 0)
		return -1;
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	r = mount(src, p, NULL, flags, NULL);
	close(fd);
	return r;
}

static char text[65536];

static void remount_loop(void)
{
	char line[1024];
	int mi;

	/* The tree a unit gets: its "root" (here a tmpfs with the dirs it needs) bound recursively. */
	CHECK_RET(mkdir(at("src"), 0755), 0);
	CHECK_RET(mount("src", at("src"), "tmpfs", 0, NULL), 0);
	CHECK_RET(mkdir(at("src/home"), 0755), 0);
	CHECK_RET(mkdir(at("src/etc"), 0755), 0);
	CHECK_RET(mkdir(at("src/usr"), 0755), 0);
	CHECK_RET(mkdir(at("inaccessible"), 0), 0);
	CHECK_RET(mkdir(at("root"), 0755), 0);
	CHECK_RET(mount_fd(at("src"), at("root"), MS_BIND | MS_REC), 0);
	/* ProtectHome=yes: the inaccessible directory over /home. */
	CHECK_RET(mount_fd(at("inaccessible"), at("root/home"), MS_BIND | MS_REC), 0);

	mi = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	CHECK(mi >= 0, "open mountinfo: %s", strerror(errno));
	if (mi < 0)
		return;
	CHECK(read_all(mi, text, sizeof(text), false) > 0, "read: %s", strerror(errno));
	CHECK(find_mount(text, at("root/home"), line, sizeof(line)), "no %s in:\n%s",
	      at("root/home"), text);
	CHECK(!find_mount(text, at("root/etc"), line, sizeof(line)), "%s", line);
	/* Read-only /etc: not a mount yet, so made one by a bind onto itself. */
	CHECK_RET(mount_fd(at("root/etc"), at("root/etc"), MS_BIND | MS_REC), 0);
	CHECK_RET(lseek(mi, 0, SEEK_SET), 0);
	CHECK(read_all(mi, text, sizeof(text), false) > 0, "read: %s", strerror(errno));
	CHECK(find_mount(text, at("root/etc"), line, sizeof(line)), "after lseek(0): no %s in:\n%s",
	      at("root/etc"), text);
	CHECK_RET(mount_fd(NULL, at("root/etc"), MS_BIND | MS_REMOUNT | MS_RDONLY), 0);
	CHECK_RET(lseek(mi, 0, SEEK_SET), 0);
	CHECK(read_all(mi, text, sizeof(text), false) > 0, "read: %s", strerror(errno));
	CHECK(find_mount(text, at("root/etc"), line, sizeof(line)) && strstr(line, " ro,"),
	      "after the remount: %s", line);
	/* pread from 0 makes the contents again too. */
	CHECK_RET(umount2(at("root/etc"), MNT_DETACH), 0);
	CHECK(read_all(mi, text, sizeof(text), true) > 0, "pread: %s", strerror(errno));
	CHECK(!find_mount(text, at("root/etc"), line, sizeof(line)), "after umount: %s", line);
	CHECK(find_mount(text, at("root/home"), line, sizeof(line)), "home gone:\n%s", text);
	close(mi);
}

/* The unit's tree moved onto / and made the root (systemd's mount_move_root). */
static void move_root(void)
{
	struct stat st;

	CHECK_RET(chdir(at("root")), 0);
	CHECK_RET(mount(at("root"), "/", NULL, MS_MOVE, NULL), 0);
	CHECK_RET(chroot("."), 0);
	CHECK_RET(chdir("/"), 0);
	CHECK(stat("/home", &st) == 0 && (st.st_mode & 07777) == 0, "/home: %s mode %o",
	      strerror(errno), st.st_mode & 07777);
	CHECK(stat("/usr", &st) == 0 && S_ISDIR(st.st_mode), "/usr: %s", strerror(errno));
	CHECK_ERR(stat("/proc/self", &st), ENOENT);
}

/* /proc/self/comm (a seq_file of one record): a read that goes on keeps the old contents. */
static void comm_reread(void)
{
	char buf[64];
	int fd;

	CHECK_RET(prctl(PR_SET_NAME, "before-name"), 0);
	fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0, "open comm: %s", strerror(errno));
	if (fd < 0)
		return;
	CHECK_RET(read(fd, buf, 3), 3);
	CHECK_RET(prctl(PR_SET_NAME, "after-name"), 0);
	CHECK(read_all(fd, buf, sizeof(buf), false) == 9 && !strcmp(buf, "ore-name\n"),
	      "the rest: '%s'", buf);
	CHECK_RET(lseek(fd, 0, SEEK_SET), 0);
	CHECK(read_all(fd, buf, sizeof(buf), false) == 11 && !strcmp(buf, "after-name\n"),
	      "after lseek(0): '%s'", buf);
	CHECK_RET(prctl(PR_SET_NAME, "third-name"), 0);
	CHECK(read_all(fd, buf, sizeof(buf), true) == 11 && !strcmp(buf, "third-name\n"),
	      "pread(0): '%s'", buf);
	close(fd);
}

static void body(void)
{
	if (!mountns_enter(T, sizeof(T)))
		return;
	comm_reread();
	remount_loop();
	mountns_child(move_root, "move_root");
	CHECK_RET(umount2(T, MNT_DETACH), 0);
}

int main(void)
{
	return mountns_main("unit_ns", body);
}
