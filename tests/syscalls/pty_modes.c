/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pseudo-terminals, the rest of what Linux does: the exact default termios of a new pair (and
 * the master's termios calls acting on the slave's), /dev/ptmx instances and their indexes,
 * TIOCSPTLCK/TIOCGPTPEER, packet mode (TIOCPKT), hang-ups from either side (EIO, POLLHUP,
 * SIGHUP to the foreground group of the session it controls), and an interactive shell on a
 * pair echoing each line once.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <termios.h>

#include "check.h"

/* The kernel's struct termios2 (TCGETS2): glibc's <termios.h> cannot be mixed with it. */
struct ktermios2 {
	uint32_t c_iflag, c_oflag, c_cflag, c_lflag;
	uint8_t c_line;
	uint8_t c_cc[19];
	uint32_t c_ispeed, c_ospeed;
};
#define K_TCGETS2 _IOR('T', 0x2A, struct ktermios2)

/* Opens a new unlocked pair; *s gets the slave (O_NOCTTY). Returns the master or -1. */
static int open_pair(int *s)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY);

	if (m < 0 || unlockpt(m) < 0)
		return -1;
	*s = open(ptsname(m), O_RDWR | O_NOCTTY);
	return *s < 0 ? -1 : m;
}

/* Reads what fd has within a generous timeout, NUL-terminated; -1 if nothing came. */
static ssize_t read_wait(int fd, char *buf, size_t size)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (poll(&pfd, 1, 10000) != 1)
		return -1;
	n = read(fd, buf, size - 1);
	buf[n > 0 ? n : 0] = '\0';
	return n;
}

static int ptn(int m)
{
	int n = -1;

	return ioctl(m, TIOCGPTN, &n) < 0 ? -1 : n;
}

static void check_defaults(void)
{
	static const uint8_t cc[19] = { 3,   034, 0177, 025, 4,	  0,   1,   0, 021,
					023, 032, 0,	022, 017, 027, 026, 0 };
	struct ktermios2 k;
	struct termios tio;
	int m, s;

	m = CHECK_OK(open_pair(&s));
	if (m < 0)
		return;
	for (int side = 0; side < 2; side++) {
		int fd = side ? m : s;

		CHECK_OK(ioctl(fd, K_TCGETS2, &k));
		CHECK(k.c_iflag == (ICRNL | IXON), "side %d iflag %o", side, k.c_iflag);
		CHECK(k.c_oflag == (OPOST | ONLCR), "side %d oflag %o", side, k.c_oflag);
		CHECK(k.c_cflag == (B38400 | CS8 | CREAD), "side %d cflag %o", side, k.c_cflag);
		CHECK(k.c_lflag ==
			      (ISIG | ICANON | ECHO | ECHOE | ECHOK | ECHOCTL | ECHOKE | IEXTEN),
		      "side %d lflag %o", side, k.c_lflag);
		CHECK(k.c_line == 0 && !memcmp(k.c_cc, cc, sizeof(cc)), "side %d c_cc", side);
		CHECK(k.c_ispeed == 38400 && k.c_ospeed == 38400, "side %d speed %u %u", side,
		      k.c_ispeed, k.c_ospeed);
	}
	CHECK_OK(tcgetattr(s, &tio));
	CHECK(cfgetospeed(&tio) == B38400 && cfgetispeed(&tio) == B38400, "speed");
	/* The master's termios calls are the slave's. */
	tio.c_lflag &= ~(tcflag_t)ECHO;
	CHECK_OK(tcsetattr(m, TCSANOW, &tio));
	CHECK_OK(tcgetattr(s, &tio));
	CHECK(!(tio.c_lflag & ECHO), "master's tcsetattr reached the slave: %o", tio.c_lflag);
	close(s);
	close(m);
}

static void check_ptmx(void)
{
	int a, b, c, lock = 1, s, p;
	struct stat sa, sb, st;
	char name[64];

	a = CHECK_OK(open("/dev/ptmx", O_RDWR | O_NOCTTY));
	b = CHECK_OK(open("/dev/ptmx", O_RDWR | O_NOCTTY));
	CHECK(ptn(a) >= 0 && ptn(b) > ptn(a), "indexes %d %d", ptn(a), ptn(b));
	CHECK(fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && major(sa.st_rdev) == 5 &&
		      minor(sa.st_rdev) == 2 && sa.st_rdev == sb.st_rdev,
	      "ptmx rdev");
	/* The lowest free index is used again. */
	int na = ptn(a);
	close(a);
	c = CHECK_OK(open("/dev/ptmx", O_RDWR | O_NOCTTY));
	CHECK(ptn(c) == na, "index %d again, got %d", na, ptn(c));

	/* Locked: the slave cannot be opened, TIOCGPTPEER neither... */
	snprintf(name, sizeof(name), "/dev/pts/%d", ptn(c));
	CHECK_ERR(open(name, O_RDWR | O_NOCTTY), EIO);
	CHECK_ERR(ioctl(c, TIOCGPTPEER, O_RDWR | O_NOCTTY), EIO);
	lock = 0;
	CHECK_OK(ioctl(c, TIOCSPTLCK, &lock));
	p = CHECK_OK(ioctl(c, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC));
	CHECK(fstat(p, &st) == 0 && major(st.st_rdev) == 136 && (int)minor(st.st_rdev) == ptn(c),
	      "peer rdev %u:%u", major(st.st_rdev), minor(st.st_rdev));
	CHECK(fcntl(p, F_GETFD) == FD_CLOEXEC, "peer O_CLOEXEC");
	/* Each call opens another slave file. */
	s = CHECK_OK(ioctl(c, TIOCGPTPEER, O_RDONLY | O_NOCTTY));
	CHECK(s != p && (fcntl(s, F_GETFL) & O_ACCMODE) == O_RDONLY, "second peer");
	close(s);
	lock = 1;
	CHECK_OK(ioctl(c, TIOCSPTLCK, &lock));
	CHECK_ERR(open(name, O_RDWR | O_NOCTTY), EIO);
	lock = 0;
	CHECK_OK(ioctl(c, TIOCSPTLCK, &lock));
	s = CHECK_OK(open(name, O_RDWR | O_NOCTTY));
	close(s);
	close(p);
	close(b);
	close(c);
}

static void check_packet(void)
{
	int m, s, one = 1, mode = -1;
	struct pollfd pfd;
	struct termios tio;
	char buf[64];

	m = CHECK_OK(open_pair(&s));
	if (m < 0)
		return;
	CHECK_OK(ioctl(m, TIOCPKT, &one));
	CHECK(ioctl(m, TIOCGPKT, &mode) == 0 && mode == 1, "TIOCGPKT %d", mode);
	CHECK_ERR(ioctl(s, TIOCGPKT, &mode), ENOTTY);
	/* Data comes after a TIOCPKT_DATA byte. */
	CHECK_RET(write(s, "ab", 2), 2);
	CHECK(read_wait(m, buf, sizeof(buf)) == 3 && !memcmp(buf, "\0ab", 3), "data %02x", buf[0]);
	/* Flushes, stops and starts: one status byte, with POLLPRI. */
	CHECK_OK(tcflush(s, TCIFLUSH));
	pfd = (struct pollfd){ .fd = m, .events = POLLIN | POLLPRI };
	CHECK(poll(&pfd, 1, 10000) == 1 && (pfd.revents & POLLPRI), "POLLPRI %#x", pfd.revents);
	CHECK(read_wait(m, buf, sizeof(buf)) == 1 && buf[0] == TIOCPKT_FLUSHREAD, "FLUSHREAD %02x",
	      buf[0]);
	CHECK_OK(tcflush(s, TCOFLUSH));
	CHECK(read_wait(m, buf, sizeof(buf)) == 1 && buf[0] == TIOCPKT_FLUSHWRITE,
	      "FLUSHWRITE %02x", buf[0]);
	CHECK_OK(tcflow(s, TCOOFF));
	CHECK(read_wait(m, buf, sizeof(buf)) == 1 && buf[0] == TIOCPKT_STOP, "STOP %02x", buf[0]);
	CHECK_OK(tcflow(s, TCOON));
	CHECK(read_wait(m, buf, sizeof(buf)) == 1 && buf[0] == TIOCPKT_START, "START %02x", buf[0]);
	/* Turning IXON off and on. */
	CHECK_OK(tcgetattr(s, &tio));
	tio.c_iflag &= ~(tcflag_t)IXON;
	CHECK_OK(tcsetattr(s, TCSANOW, &tio));
	CHECK(read_wait(m, buf, sizeof(buf)) == 1 && buf[0] == TIOCPKT_NOSTOP, "NOSTOP %02x",
	      buf[0]);
	tio.c_iflag |= IXON;
	CHECK_OK(tcsetattr(s, TCSANOW, &tio));
	CHECK(read_wait(m, buf, sizeof(buf)) == 1 && buf[0] == TIOCPKT_DOSTOP, "DOSTOP %02x",
	      buf[0]);
	/* Nothing pending: a non-blocking read says so. */
	fcntl(m, F_SETFL, O_NONBLOCK);
	CHECK_ERR(read(m, buf, sizeof(buf)), EAGAIN);
	fcntl(m, F_SETFL, 0);
	/* Off again: plain data. */
	one = 0;
	CHECK_OK(ioctl(m, TIOCPKT, &one));
	CHECK_RET(write(s, "c", 1), 1);
	CHECK(read_wait(m, buf, sizeof(buf)) == 1 && buf[0] == 'c', "plain %02x", buf[0]);
	close(s);
	close(m);
}

static void check_slave_hangup(void)
{
	struct pollfd pfd;
	char buf[64];
	int m, s;

	m = CHECK_OK(open_pair(&s));
	if (m < 0)
		return;
	CHECK_RET(write(s, "x\n", 2), 2);
	close(s);
	/* What the slave wrote comes first, then EIO and POLLHUP. */
	CHECK(read_wait(m, buf, sizeof(buf)) == 3 && !strcmp(buf, "x\r\n"), "before hangup %s",
	      buf);
	pfd = (struct pollfd){ .fd = m, .events = POLLIN };
	CHECK(poll(&pfd, 1, 10000) == 1 && (pfd.revents & POLLHUP), "POLLHUP %#x", pfd.revents);
	CHECK_ERR(read(m, buf, sizeof(buf)), EIO);
	/* Opening the slave again ends the hang-up. */
	s = CHECK_OK(open(ptsname(m), O_RDWR | O_NOCTTY));
	pfd = (struct pollfd){ .fd = m, .events = POLLIN };
	CHECK(poll(&pfd, 1, 0) == 0, "no POLLHUP with a slave: %#x", pfd.revents);
	close(s);
	close(m);
}

static volatile sig_atomic_t got_hup;

static void on_hup(int sig)
{
	got_hup = 1;
}

/* The child of check_master_hangup: a session on the slave; exit code: a bit per failure. */
static int hangup_child(const char *name, int ready)
{
	struct sigaction sa = { .sa_handler = on_hup, .sa_flags = SA_RESTART };
	struct pollfd pfd;
	int fails = 0, s;
	char c;

	sigaction(SIGHUP, &sa, NULL);
	if (setsid() < 0)
		return 100;
	s = open(name, O_RDWR);
	if (s < 0)
		return 101;
	if (write(ready, "r", 1) != 1)
		return 102;
	/* A read blocked when the master goes away ends (EIO or end of file); once the hang-up
	 * is done (SIGHUP), reads give end of file. */
	ssize_t r = read(s, &c, 1);
	fails |= (r != 0 && (r != -1 || errno != EIO)) << 0;
	while (!got_hup)
		pause();
	fails |= (read(s, &c, 1) != 0) << 3;
	fails |= (write(s, "x", 1) != -1 || errno != EIO) << 1;
	pfd = (struct pollfd){ .fd = s, .events = POLLIN | POLLOUT };
	fails |= (poll(&pfd, 1, 0) != 1 || !(pfd.revents & POLLHUP)) << 2;
	return fails;
}

static void check_master_hangup(void)
{
	int m, p[2], status = -1;
	char c = 0, name[64];
	pid_t pid;

	m = CHECK_OK(posix_openpt(O_RDWR | O_NOCTTY));
	unlockpt(m);
	snprintf(name, sizeof(name), "%s", ptsname(m));
	CHECK_OK(pipe(p));
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		close(m);
		_exit(hangup_child(name, p[1]));
	}
	close(p[1]);
	CHECK(read(p[0], &c, 1) == 1 && c == 'r', "child ready");
	close(m);
	CHECK_RET(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	close(p[0]);
}

/* How many times needle occurs in hay. */
static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/*
 * Reads from m into out (holding len bytes) until needle occurs want times (NULL: until end of
 * file or an error). Returns the new length.
 */
static size_t read_until(int m, char *out, size_t size, size_t len, const char *needle, int want)
{
	while (len < size - 1 && (!needle || count(out, needle) < want)) {
		ssize_t n = read_wait(m, out + len, size - len);

		if (n <= 0)
			break;
		len += (size_t)n;
	}
	return len;
}

/* An interactive shell (path, with argv) on a pair: the line it is given comes back once. */
static void check_shell(const char *path, char *const argv[])
{
	static char out[8192];
	size_t len = 0;
	int m, status = -1;
	char name[64];
	pid_t pid;

	memset(out, 0, sizeof(out));
	m = CHECK_OK(posix_openpt(O_RDWR | O_NOCTTY));
	unlockpt(m);
	snprintf(name, sizeof(name), "%s", ptsname(m));
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		char *envp[] = { "PS1=$ ", "PATH=/usr/bin:/bin", "TERM=dumb", NULL };
		int s;

		setsid();
		s = open(name, O_RDWR);
		if (s < 0)
			_exit(100);
		dup2(s, 0);
		dup2(s, 1);
		dup2(s, 2);
		close(m);
		if (s > 2)
			close(s);
		execve(path, argv, envp);
		_exit(101);
	}
	/* Typed-ahead input would be echoed twice by bash (the terminal, then readline): each line
	 * is written once the prompt is there. */
	len = read_until(m, out, sizeof(out), 0, "$ ", 1);
	CHECK_RET(write(m, "echo hi\n", 8), 8);
	len = read_until(m, out, sizeof(out), len, "hi\r\n", 2);
	len = read_until(m, out, sizeof(out), len, "$ ", 2);
	CHECK_RET(write(m, "exit\n", 5), 5);
	len = read_until(m, out, sizeof(out), len, NULL, 0);
	CHECK_RET(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s status %#x", path, status);
	CHECK(count(out, "echo hi") == 1, "%s: the line echoed once: %s", path, out);
	CHECK(count(out, "hi\r\n") == 2, "%s: the line and its output once each: %s", path, out);
	close(m);
}

int main(void)
{
	/* Outside any terminal, in a session of its own. */
	if (setsid() < 0 && getpgrp() != getpid())
		return 1;
	check_defaults();
	check_ptmx();
	check_packet();
	check_slave_hangup();
	check_master_hangup();
	check_shell("/bin/sh", (char *[]){ "sh", "-i", NULL });
	/* bash edits the line itself (readline, the terminal's echo off). */
	if (access("/bin/bash", X_OK) == 0)
		check_shell("/bin/bash", (char *[]){ "bash", "--norc", "--noprofile", "-i", NULL });
	return finish();
}
