/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pseudo-terminals: allocation through /dev/ptmx, locking, the line discipline (canonical
 * mode, echo, ICRNL/ONLCR, VEOF, raw mode), window size, and a session's controlling terminal
 * with the signals the ISIG characters and window changes send to its foreground group.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <termios.h>

#include "check.h"

/* Reads what the master has now (after a poll), NUL-terminated. */
static ssize_t master_drain(int m, char *buf, size_t size)
{
	struct pollfd pfd = { .fd = m, .events = POLLIN };
	ssize_t n;

	if (poll(&pfd, 1, 2000) != 1)
		return -1;
	n = read(m, buf, size - 1);
	buf[n > 0 ? n : 0] = '\0';
	return n;
}

static void check_alloc(void)
{
	char name[64];
	struct stat st;
	int m, s, n = -1, lock = 0;

	m = CHECK_OK(posix_openpt(O_RDWR | O_NOCTTY));
	CHECK_OK(ioctl(m, TIOCGPTN, &n));
	CHECK(n >= 0, "TIOCGPTN %d", n);
	snprintf(name, sizeof(name), "/dev/pts/%d", n);
	CHECK(!strcmp(ptsname(m), name), "ptsname %s", ptsname(m));
	CHECK_OK(ioctl(m, TIOCGPTLCK, &lock));
	CHECK(lock == 1, "a new pair is locked");
	CHECK_ERR(open(name, O_RDWR | O_NOCTTY), EIO);
	CHECK_OK(grantpt(m));
	CHECK_OK(unlockpt(m));
	s = CHECK_OK(open(name, O_RDWR | O_NOCTTY));
	CHECK(fstat(s, &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 136 &&
		      minor(st.st_rdev) == (unsigned int)n,
	      "slave is 136:%d", n);
	CHECK(isatty(s) && isatty(m), "both ends are terminals");
	CHECK(ttyname(s) && !strcmp(ttyname(s), name), "ttyname %s", ttyname(s));
	CHECK_ERR(ioctl(s, TIOCGPTN, &n), ENOTTY);
	close(s);
	close(m);
}

static void check_ldisc(void)
{
	char buf[256];
	struct termios tio;
	int m, s;

	m = CHECK_OK(posix_openpt(O_RDWR | O_NOCTTY));
	unlockpt(m);
	s = CHECK_OK(open(ptsname(m), O_RDWR | O_NOCTTY));
	CHECK_OK(tcgetattr(s, &tio));
	CHECK((tio.c_lflag & (ICANON | ECHO | ISIG)) == (ICANON | ECHO | ISIG), "lflag %o",
	      tio.c_lflag);
	CHECK((tio.c_iflag & ICRNL) && (tio.c_oflag & (OPOST | ONLCR)) == (OPOST | ONLCR),
	      "iflag %o oflag %o", tio.c_iflag, tio.c_oflag);

	/* Canonical: CR becomes NL, a line at a time; echo with ONLCR. */
	CHECK_RET(write(m,
			"ab\x7f"
			"c\r",
			5),
		  5);
	CHECK_RET(read(s, buf, sizeof(buf)), 3);
	CHECK(!memcmp(buf, "ac\n", 3), "erase and ICRNL: %.3s", buf);
	CHECK(master_drain(m, buf, sizeof(buf)) > 0 && !strcmp(buf, "ab\b \bc\r\n"), "echo %s",
	      buf);
	/* Output processing: NL becomes CR NL. */
	CHECK_RET(write(s, "x\n", 2), 2);
	CHECK(master_drain(m, buf, sizeof(buf)) == 3 && !strcmp(buf, "x\r\n"), "ONLCR %s", buf);
	/* VEOF on an empty line: a read of 0. */
	CHECK_RET(write(m, "\x04", 1), 1);
	CHECK_RET(read(s, buf, sizeof(buf)), 0);
	/* Two lines come one per read. */
	CHECK_RET(write(m, "one\ntwo\n", 8), 8);
	CHECK_RET(read(s, buf, sizeof(buf)), 4);
	CHECK_RET(read(s, buf, sizeof(buf)), 4);
	CHECK(!memcmp(buf, "two\n", 4), "second line %.4s", buf);
	master_drain(m, buf, sizeof(buf));

	/* Raw: bytes as they come, no echo, no translation. */
	cfmakeraw(&tio);
	CHECK_OK(tcsetattr(s, TCSANOW, &tio));
	CHECK_RET(write(m, "q\r", 2), 2);
	CHECK_RET(read(s, buf, sizeof(buf)), 2);
	CHECK(!memcmp(buf, "q\r", 2), "raw %.2s", buf);
	CHECK_RET(write(s, "z\n", 2), 2);
	CHECK(master_drain(m, buf, sizeof(buf)) == 2 && !strcmp(buf, "z\n"), "raw out %s", buf);
	{
		int avail = -1;

		struct pollfd pfd = { .fd = s, .events = POLLIN };

		CHECK_RET(write(m, "abc", 3), 3);
		/* Linux moves the bytes to the slave asynchronously: wait until they are there. */
		CHECK_RET(poll(&pfd, 1, 5000), 1);
		CHECK_OK(ioctl(s, FIONREAD, &avail));
		CHECK(avail == 3, "FIONREAD %d", avail);
		CHECK_OK(tcflush(s, TCIFLUSH));
		CHECK_OK(ioctl(s, FIONREAD, &avail));
		CHECK(avail == 0, "after TCIFLUSH %d", avail);
	}

	/* Window size. */
	{
		struct winsize ws = { .ws_row = 33, .ws_col = 111 }, got = { 0 };

		CHECK_OK(ioctl(m, TIOCSWINSZ, &ws));
		CHECK_OK(ioctl(s, TIOCGWINSZ, &got));
		CHECK(got.ws_row == 33 && got.ws_col == 111, "winsize %ux%u", got.ws_row,
		      got.ws_col);
	}

	/* The master hangs up: the slave reads end of file and cannot write. */
	close(m);
	CHECK_RET(read(s, buf, sizeof(buf)), 0);
	CHECK_ERR(write(s, "x", 1), EIO);
	close(s);
}

static volatile sig_atomic_t got_sig;

static void on_sig(int sig)
{
	got_sig = sig;
}

/*
 * A child makes a session with the slave as its controlling terminal; the master sends ^C and
 * changes the window size: the child sees SIGINT and SIGWINCH. Exit code: a bit per failure.
 */
static int ctty_child(const char *name, int ready)
{
	struct sigaction sa = { .sa_handler = on_sig };
	int fails = 0, s, v = 0;
	sigset_t none;

	sigemptyset(&none);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGWINCH, &sa, NULL);
	if (setsid() < 0)
		return 100;
	/* A session leader opening a terminal without O_NOCTTY acquires it. */
	s = open(name, O_RDWR);
	if (s < 0)
		return 101;
	fails |= (ioctl(s, TIOCGSID, &v) != 0 || v != getpid()) << 0;
	fails |= (tcgetpgrp(s) != getpid()) << 1;
	fails |= (open("/dev/tty", O_RDWR) < 0) << 2;
	write(ready, "r", 1);
	while (got_sig != SIGINT)
		pause();
	got_sig = 0;
	write(ready, "i", 1);
	while (got_sig != SIGWINCH)
		pause();
	/* The leader detaching sends SIGHUP and SIGCONT to the foreground group: itself. */
	signal(SIGHUP, SIG_IGN);
	fails |= (ioctl(s, TIOCNOTTY) != 0) << 3;
	fails |= (open("/dev/tty", O_RDWR) >= 0 || errno != ENXIO) << 4;
	return fails;
}

static void check_ctty(void)
{
	struct winsize ws = { .ws_row = 10, .ws_col = 20 };
	int m, p[2], status = -1;
	char c = 0, name[64];
	pid_t pid;

	CHECK_ERR(open("/dev/tty", O_RDWR), ENXIO);
	m = CHECK_OK(posix_openpt(O_RDWR | O_NOCTTY));
	unlockpt(m);
	snprintf(name, sizeof(name), "%s", ptsname(m));
	CHECK_OK(pipe(p));
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		_exit(ctty_child(name, p[1]));
	}
	close(p[1]);
	CHECK(read(p[0], &c, 1) == 1 && c == 'r', "child ready");
	CHECK_RET(write(m, "\x03", 1), 1);
	CHECK(read(p[0], &c, 1) == 1 && c == 'i', "child saw SIGINT");
	CHECK_OK(ioctl(m, TIOCSWINSZ, &ws));
	CHECK_RET(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	close(p[0]);
	close(m);
}

int main(void)
{
	/* Outside any terminal: the checks of /dev/tty expect no controlling terminal. */
	if (setsid() < 0 && getpgrp() != getpid())
		return 1;
	check_alloc();
	check_ldisc();
	check_ctty();
	return finish();
}
