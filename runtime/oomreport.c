/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host side of the sentry's OOM kills. The sentry enforces a container's memory limit
 * itself (sentry/kernel/oom.c) and kills a guest process before the host cgroup, whose limit
 * has a margin for the sentry's and gofer's own memory (cgroup.c), ever fills. Engines learn of
 * an OOM from that cgroup only: containerd's runc shim on cgroup v1 by an eventfd registered on
 * memory.oom_control (cgroup.event_control), on v2 by memory.events' oom_kill. So each sentry
 * OOM kill is made a real one in the container's memory cgroup:
 *
 *   husk create ──fork──> (exits) ──fork──> husk-oomwatch: waits on the control socket
 *                                            (CONTROL_OOM_WAIT) for the sentry's next OOM kill
 *                                   ──fork──> husk-oom-victim: oom_score_adj 1000, joins the
 *                                             container's memory cgroup, touches memory until
 *                                             the kernel's memcg OOM killer kills it
 *
 * The kernel (mm/memcontrol.c) charges the victim's pages to the container's memcg; at its
 * limit, reclaim fails (the victim's pages are anonymous, the sentry's memory file is shmem, and
 * there is no swap or the memsw limit holds) and mem_cgroup_out_of_memory picks the task with
 * the most points in that memcg: v1 signals every eventfd on its memory.oom_control first (and
 * counts oom_kill there), v2 counts oom and oom_kill in its memory.events and its ancestors'.
 * Points are resident pages plus page tables plus oom_score_adj thousandths of the limit. The
 * victim has adj 1000 and, before it joins the cgroup, touches a head start of memory that is
 * resident but charged to the watcher's cgroup: enough to outweigh any other process's file
 * pages and adj (report_one), so that whenever the cgroup fills the kernel's choice is the
 * victim, never the sentry, the gofer or a stub (containerd's shim gives them its own adj,
 * containerd's plus one; the seccomp platform's stubs, at 1000 for the host's OOM killer, get
 * their sentry's for the time of a report: stubs_adj). The limit is never changed: the victim only fills what is left of it,
 * and once it is gone everything is as before. A v1 cgroup with oom_kill_disable set is left
 * alone (the victim would hang there, and the sentry with it), and so is a v2 one with
 * memory.oom.group set (the kernel would kill every process of the cgroup with the victim).
 *
 * No report (the sentry's kill still happens, husk events still says "oom"): without a cgroup
 * (rootless with nothing delegated), without the memory controller, without a memory limit in
 * config.json at create, or when a process of the cgroup has so high an oom_score_adj that the
 * head start would pass HEAD_MAX (256 MiB: adj 1000 with a host limit near 240 MiB), or when
 * the host has swap the cgroup may use (reclaim would swap the sandbox out before any OOM).
 * The watcher lives outside the container's cgroup (husk's caller's), with /dev/null for stdio
 * and no other fd of husk's, and exits when the sentry's control connection ends. The sentry
 * is told that a watcher will come (--oom-reporter, oom_report_wanted): its end (or a pod
 * member's) then waits for every OOM kill to be reported, even one before the watcher's first
 * wait, so that a container killed right after start is still reported before its exit (the
 * engine removes the cgroup then). A report
 * holds the container's lock (<root>/<id>), as a husk command does: husk update must not write
 * the host limit while the victim fills the cgroup (EBUSY), nor delete remove it meanwhile. It
 * costs the time to touch the limit's worth of memory (about 1 s per GiB here), once per batch
 * of kills.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/control.h"
#include "runtime/oci.h"

/*
 * The victim's head start (report_one): page tables and file pages another process may map
 * beyond what it has resident now; and the most it may be (else no report).
 */
#define HEAD_SLACK (16ULL << 20)
#define HEAD_MAX (256ULL << 20)

/*
 * What the victim touches past the limit: never reached (the cgroup holds no more than its
 * limit, so the victim is killed before), unless the limit was raised meanwhile. Reclaimable
 * page cache counts in the usage, so the room left under the limit is no bound.
 */
#define VICTIM_SLACK (64ULL << 20)

/*
 * How long the first report waits for an engine's OOM listener (listener_wait) when none has
 * registered yet: an engine registers only after `husk start` returns, and a container that
 * allocates at once may be killed before that. Past it the report is made anyway (nobody may
 * listen: `husk run` without an engine).
 */
#define LISTENER_WAIT_MS 5000

struct reporter {
	char sock[PATH_MAX];
	char dir[PATH_MAX]; /* the container's memory cgroup */
	char state[PATH_MAX]; /* <root>/<id>, whose flock every husk command on it holds */
	bool v2;
	int log; /* --debug-log's DIR/<id>.oom.log, or -1 */
	int listen; /* v1: inotify on the cgroup's cgroup.event_control (IN_MODIFY), or -1 */
	bool listened; /* a listener registered (or the wait for one is over) */
};

static void __attribute__((format(printf, 2, 3)))
rlog(const struct reporter *r, const char *fmt, ...)
{
	char buf[512], ts[64];
	struct timespec now;
	va_list ap;
	int n;

	if (r->log < 0)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	snprintf(ts, sizeof(ts), "%lld.%03ld", (long long)now.tv_sec, now.tv_nsec / 1000000);
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	dprintf(r->log, "%s husk-oomwatch: %s\n", ts, buf);
}

/* A file of the cgroup as a number ("max": INT64_MAX), or -1. */
static int64_t read_num(const char *dir, const char *file)
{
	char path[PATH_MAX + 64], buf[64];
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (!strncmp(buf, "max", 3))
		return INT64_MAX;
	return strtoll(buf, NULL, 10);
}

/* The value of "key N" in a flat keyed file (memory.oom_control, memory.events), or -1. */
static int64_t read_key(const char *dir, const char *file, const char *key)
{
	char path[PATH_MAX + 64], line[128];
	size_t klen = strlen(key);
	int64_t v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, klen) && line[klen] == ' ') {
			v = strtoll(line + klen + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

/* What the victim must outweigh in the cgroup: the others' largest oom_score_adj and file RSS. */
struct others {
	int max_adj; /* clamped at 0 */
	uint64_t max_file; /* bytes of file pages resident (maybe charged elsewhere) */
	pid_t who; /* the process with max_adj */
};

/* A "Key:  N kB" line of /proc/PID/status, in bytes, or 0. */
static uint64_t status_kb(int pid, const char *key)
{
	char path[64], line[128];
	size_t klen = strlen(key);
	uint64_t v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			v = strtoull(line + klen + 1, NULL, 10) * 1024;
			break;
		}
	}
	fclose(f);
	return v;
}

/* Fills *o from every process of the cgroup. Returns 0, or -errno (no cgroup.procs). */
static int others_in(const char *dir, struct others *o)
{
	char path[PATH_MAX + 64];
	int pid;
	FILE *f;

	memset(o, 0, sizeof(*o));
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fscanf(f, "%d", &pid) == 1) {
		char p[64], buf[16];
		_cleanup_close_ int fd = -1;
		uint64_t file;
		ssize_t n;

		snprintf(p, sizeof(p), "/proc/%d/oom_score_adj", pid);
		fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue; /* gone meanwhile */
		n = read(fd, buf, sizeof(buf) - 1);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		if (atoi(buf) > o->max_adj) {
			o->max_adj = atoi(buf);
			o->who = pid;
		}
		file = status_kb(pid, "RssFile");
		if (file > o->max_file)
			o->max_file = file;
	}
	fclose(f);
	return 0;
}

/* pid's oom_score_adj, or INT_MIN (gone). */
static int adj_of(int pid)
{
	char p[64], buf[16];
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/%d/oom_score_adj", pid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return INT_MIN;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return INT_MIN;
	buf[n] = '\0';
	return atoi(buf);
}

static void set_adj(int pid, int adj)
{
	char p[64], buf[16];
	_cleanup_close_ int fd = -1;
	int n;

	snprintf(p, sizeof(p), "/proc/%d/oom_score_adj", pid);
	n = snprintf(buf, sizeof(buf), "%d", adj);
	fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd >= 0 && write(fd, buf, (size_t)n) < 0)
		return; /* gone meanwhile, or below its floor: it keeps its own */
}

/* Whether pid is a stub (comm husk-stub); its parent (the sentry) in *ppid. */
static bool is_stub(int pid, int *ppid)
{
	char p[64], line[256];
	bool stub = false;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/stat", pid);
	f = fopen(p, "re");
	if (!f)
		return false;
	if (fgets(line, sizeof(line), f) && strstr(line, " (husk-stub) ")) {
		const char *rp = strrchr(line, ')');

		stub = rp && sscanf(rp + 2, "%*c %d", ppid) == 1;
	}
	fclose(f);
	return stub;
}

/*
 * The seccomp platform's stubs carry oom_score_adj 1000, so that the host's OOM killer takes a
 * guest process before the sentry (sentry/platform/seccomp/README.md); the victim could not
 * outweigh them. For the time of a report (lower) they get their sentry's adj, which they may
 * go back to (it is at or above their floor, which they inherited from it), and then (!lower)
 * 1000 again, stubs forked meanwhile too. Returns whether any stub had 1000 (with lower).
 */
static bool stubs_adj(const char *dir, bool lower)
{
	char path[PATH_MAX + 64];
	bool any = false;
	int pid, ppid;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fscanf(f, "%d", &pid) == 1) {
		int adj, padj;

		if (!is_stub(pid, &ppid))
			continue;
		adj = adj_of(pid);
		if (lower && adj == 1000) {
			padj = adj_of(ppid);
			any = true;
			if (padj != INT_MIN && padj < 1000)
				set_adj(pid, padj);
		} else if (!lower && adj != 1000 && adj != INT_MIN) {
			set_adj(pid, 1000);
		}
	}
	fclose(f);
	return any;
}

/* Touches len bytes of new anonymous memory, or exits 2. */
static void touch(size_t len)
{
	volatile char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		_exit(2);
	for (size_t off = 0; off < len; off += 4096)
		p[off] = 1;
}

/*
 * The sacrificial process: touches head bytes where it is (its head start: resident, charged to
 * the watcher's cgroup), joins the container's, and touches up to max bytes there. Never
 * returns. Exit 2: could not join; 3: never killed.
 */
static void __attribute__((noreturn)) victim_main(const struct reporter *r, size_t head, size_t max)
{
	char path[PATH_MAX + 64], pid[32];
	int fd;

	prctl(PR_SET_NAME, "husk-oom-victim");
	/* The kernel's first choice before it is in the cgroup at all. */
	fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "1000", 4) != 4)
		_exit(2);
	close(fd);
	touch(head);
	snprintf(path, sizeof(path), "%s/cgroup.procs", r->dir);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, pid, strlen(pid)) < 0)
		_exit(2);
	close(fd);
	touch(max);
	_exit(3);
}

/* One OOM in the host cgroup. Returns 0 once the kernel killed the victim, or -errno. */
static int report_one(const struct reporter *r)
{
	int64_t limit = read_num(r->dir, r->v2 ? "memory.max" : "memory.limit_in_bytes");
	int64_t usage = read_num(r->dir, r->v2 ? "memory.current" : "memory.usage_in_bytes");
	int64_t before =
		read_key(r->dir, r->v2 ? "memory.events" : "memory.oom_control", "oom_kill");
	struct sysinfo si;
	int64_t memsw; /* v2: swap.max (swap alone); v1: memsw (memory plus swap); -1: none */
	bool stubs_lowered;
	struct others o;
	uint64_t head;
	pid_t pid;
	int st, ret;

	if (limit < 0 || usage < 0)
		return -ENOENT;
	if (sysinfo(&si) == 0 && (uint64_t)limit >= (uint64_t)si.totalram * si.mem_unit) {
		rlog(r, "no report: the cgroup's memory limit is %" PRId64 " (none)", limit);
		return -ERANGE;
	}
	/*
	 * With swap the cgroup may use, reclaim would swap the sandbox's memory out to make room
	 * for the victim before any OOM: only where swap is off or the cgroup has none.
	 */
	memsw = read_num(r->dir, r->v2 ? "memory.swap.max" : "memory.memsw.limit_in_bytes");
	if (sysinfo(&si) == 0 && si.totalswap > 0 &&
	    (r->v2 ? memsw != 0 : memsw < 0 || memsw > limit)) {
		rlog(r, "no report: the cgroup may swap (the victim would push the sandbox out)");
		return -EPERM;
	}
	if (!r->v2 && read_key(r->dir, "memory.oom_control", "oom_kill_disable") != 0) {
		rlog(r, "no report: oom_kill_disable is set (or unreadable)");
		return -EPERM;
	}
	/* v2's memory.oom.group would have the kernel kill the whole cgroup with the victim. */
	if (r->v2 && read_num(r->dir, "memory.oom.group") > 0) {
		rlog(r, "no report: memory.oom.group is set");
		return -EPERM;
	}
	stubs_lowered = stubs_adj(r->dir, true);
	if (others_in(r->dir, &o) < 0) {
		if (stubs_lowered)
			stubs_adj(r->dir, false);
		return -ENOENT;
	}
	/*
	 * The kernel kills the task with the most points: resident pages plus page tables plus
	 * oom_score_adj thousandths of the limit T. Another process's anonymous and shmem pages
	 * are charged here, so they and the victim's charge c stay under T: its points are at
	 * most T - c + file + tables + adj T/1000, the victim's (adj 1000) head + c + T. So the
	 * victim wins, whenever the cgroup fills, with a head start of resident memory charged
	 * elsewhere (touched before it joins) above file + tables + adj T/1000.
	 */
	head = o.max_file + HEAD_SLACK + (uint64_t)o.max_adj * ((uint64_t)limit / 1000);
	if (head > HEAD_MAX) {
		rlog(r,
		     "no report: pid %d's oom_score_adj %d asks a head start of %" PRIu64 " bytes",
		     (int)o.who, o.max_adj, head);
		ret = -EBUSY;
		goto out_stubs;
	}
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		goto out_stubs;
	}
	if (pid == 0)
		victim_main(r, (size_t)head, (size_t)limit + VICTIM_SLACK);
	ret = 0;
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			ret = -errno;
			break;
		}
	}
out_stubs:
	if (stubs_lowered)
		stubs_adj(r->dir, false);
	if (ret < 0)
		return ret;
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL) {
		rlog(r, "the victim was not OOM-killed (status 0x%x)", st);
		return -EAGAIN;
	}
	rlog(r,
	     "reported: oom_kill %" PRId64 " -> %" PRId64 " (limit %" PRId64 ", usage %" PRId64
	     ") in %s",
	     before, read_key(r->dir, r->v2 ? "memory.events" : "memory.oom_control", "oom_kill"),
	     limit, usage, r->dir);
	return 0;
}

/*
 * Waits for the sentry's next OOM kill past seen: returns the new total with *sock the
 * connection (the caller closes it once the kill is reported: the sandbox's end waits for
 * that), or -errno (the sandbox is gone).
 */
static int64_t wait_oom(const struct reporter *r, uint64_t seen, int *sock)
{
	struct control_hdr h = { .magic = CONTROL_MAGIC,
				 .version = CONTROL_VERSION,
				 .op = CONTROL_OOM_WAIT,
				 .len = sizeof(struct control_oom) };
	struct control_oom req = { .flags = CONTROL_OOM_REPORTER, .kills = seen }, rep;
	char msg[sizeof(h) + sizeof(req)];
	int ret;

	*sock = control_dial(r->sock);
	if (*sock < 0)
		return *sock;
	memcpy(msg, &h, sizeof(h));
	memcpy(msg + sizeof(h), &req, sizeof(req));
	ret = control_send(*sock, msg, sizeof(msg));
	if (ret == 0)
		ret = control_recv(*sock, CONTROL_OOM_REPLY, &rep, sizeof(rep));
	if (ret == 0 && rep.err < 0)
		ret = rep.err;
	if (ret < 0) {
		close(*sock);
		*sock = -1;
		return ret;
	}
	return (int64_t)rep.kills;
}

/* The sentry's OOM kills so far (a restored sandbox may count some already), or 0. */
static uint64_t kills_so_far(const struct reporter *r)
{
	struct control_hdr h = { .magic = CONTROL_MAGIC,
				 .version = CONTROL_VERSION,
				 .op = CONTROL_STATS };
	_cleanup_close_ int sock = control_dial(r->sock);
	struct control_stats st;

	if (sock < 0 || control_send(sock, &h, sizeof(h)) < 0 ||
	    control_recv(sock, CONTROL_STATS_REPLY, &st, sizeof(st)) < 0 || st.err < 0)
		return 0;
	return st.oom_kills;
}

/*
 * Before the first report on v1: an engine learns of OOMs through an eventfd it registers on
 * memory.oom_control by a write to cgroup.event_control (containerd's shim, conmon), which the
 * kernel signals only for OOMs after it (or while the cgroup is under OOM); the shim does it
 * once `husk start` returned. So the first report waits, at most LISTENER_WAIT_MS, for a write
 * to cgroup.event_control (inotify's IN_MODIFY, watched since create, before any start): one
 * made before the kill is already queued. A report after a missed registration would be lost
 * to the engine (CRI's reason "Error", not "OOMKilled", found under load).
 */
static void listener_wait(struct reporter *r)
{
	struct pollfd p = { .fd = r->listen, .events = POLLIN };
	struct timespec t0, t1;
	int left = LISTENER_WAIT_MS, n;

	if (r->listened || r->listen < 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((n = poll(&p, 1, left)) < 0 && errno == EINTR) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		left = LISTENER_WAIT_MS -
		       (int)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0) {
			n = 0;
			break;
		}
	}
	rlog(r,
	     n > 0 ? "an OOM listener registered" :
		     "no OOM listener registered within %d ms: reporting anyway",
	     LISTENER_WAIT_MS);
	r->listened = true;
	close(r->listen);
	r->listen = -1;
}

static void __attribute__((noreturn)) reporter_main(struct reporter *r)
{
	uint64_t seen = 0;
	int lock;

	prctl(PR_SET_NAME, "husk-oomwatch");
	seen = kills_so_far(r);
	rlog(r, "watching for the sentry's OOM kills (cgroup %s)", r->dir);
	for (;;) {
		int sock;
		int64_t n = wait_oom(r, seen, &sock);

		if (n < 0) {
			rlog(r, "the sandbox is gone (%s)", strerror((int)-n));
			_exit(0);
		}
		seen = (uint64_t)n;
		rlog(r, "the sentry's OOM killer killed (%" PRIu64 " in all)", seen);
		/*
		 * Under the container's lock, as a husk command: the victim fills the cgroup for
		 * a moment, and husk update (whose lower limit may be what made the sentry kill)
		 * must not write the host limit meanwhile (EBUSY), nor delete remove the cgroup.
		 */
		lock = open(r->state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (lock < 0) {
			rlog(r, "the container is gone (%s)", strerror(errno));
			_exit(0);
		}
		listener_wait(r);
		while (flock(lock, LOCK_EX) < 0 && errno == EINTR)
			;
		report_one(r);
		close(lock);
		/* The sentry, if pid 1 was the one killed, may end now. */
		close(sock);
	}
}

bool oom_report_wanted(const struct container *c)
{
	char dir[PATH_MAX];
	bool v2;

	return c->cgroup && c->config && c->config->memory_limit > 0 &&
	       cgroup_memory_dir(c->cgroup, dir, sizeof(dir), &v2) >= 0;
}

int oom_report_start(const struct container *c)
{
	_cleanup_free_ char *sock = NULL;
	struct reporter r = { .log = -1, .listen = -1 };
	pid_t pid;
	int st;

	if (!oom_report_wanted(c) || cgroup_memory_dir(c->cgroup, r.dir, sizeof(r.dir), &r.v2) < 0)
		return 0;
	sock = container_path(c, "control.sock");
	if (!sock || strlen(sock) >= sizeof(r.sock))
		return -ENOMEM;
	strcpy(r.sock, sock);
	if (!c->dir || strlen(c->dir) >= sizeof(r.state))
		return -ENAMETOOLONG;
	strcpy(r.state, c->dir);
	pid = fork();
	if (pid < 0) {
		oci_warn("the OOM reporter: fork: %s", strerror(errno));
		return -errno;
	}
	if (pid == 0) {
		/* Re-parented to init or the engine's subreaper, as the sentry is. */
		char ec[PATH_MAX + 32];
		int devnull;

		/* Watched before create returns, so before any listener can register (listener_wait). */
		if (!r.v2) {
			snprintf(ec, sizeof(ec), "%s/cgroup.event_control", r.dir);
			r.listen = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
			if (r.listen >= 0 && inotify_add_watch(r.listen, ec, IN_MODIFY) < 0) {
				close(r.listen);
				r.listen = -1;
			}
		}
		setsid();
		if (fork() != 0)
			_exit(0);
		if (chdir("/") < 0)
			_exit(1);
		devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (devnull < 0)
			_exit(1);
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		/* Nothing of husk's: not the container's lock, not the caller's pipes. */
		if (r.listen >= 0) {
			int keep = fcntl(r.listen, F_DUPFD_CLOEXEC, 64);

			close(r.listen);
			r.listen = keep;
		}
		if (r.listen >= 3) {
			if (r.listen > 3)
				syscall(SYS_close_range, 3, (unsigned)r.listen - 1, 0);
			syscall(SYS_close_range, (unsigned)r.listen + 1, ~0U, 0);
		} else {
			syscall(SYS_close_range, 3, ~0U, 0);
		}
		if (oci_g.debug_log) {
			char path[PATH_MAX];

			snprintf(path, sizeof(path), "%s/%s.oom.log", oci_g.debug_log, c->id);
			r.log = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		}
		signal(SIGPIPE, SIG_IGN);
		reporter_main(&r);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return 0;
}
