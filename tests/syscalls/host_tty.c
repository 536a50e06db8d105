/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The terminal calls on the caller's terminal: termios, window size, flushes, the foreground
 * process group and job control's SIGTTIN/SIGTTOU for background groups. It needs stdin to be
 * its controlling terminal, as a shell's command has it (tests/integration/terminal.sh runs it
 * through a pty, natively and in husk); without one it skips (the meson runs have none).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>

#include "check.h"

static volatile sig_atomic_t got;

static void on_sig(int sig)
{
	got = sig;
}

/* In a child moved to a group of its own (the background): runs what, exits with its code. */
static int in_background(int (*what)(void))
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		setpgid(0, 0);
		_exit(what());
	}
	setpgid(pid, pid);
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

/* A background read with a SIGTTIN handler (no SA_RESTART): the handler runs, read EINTR. */
static int bg_read_handled(void)
{
	struct sigaction sa = { .sa_handler = on_sig };
	char c;

	sigaction(SIGTTIN, &sa, NULL);
	if (read(0, &c, 1) != -1 || errno != EINTR)
		return 1;
	return got == SIGTTIN ? 0 : 2;
}

/* A background read with SIGTTIN ignored: EIO. */
static int bg_read_ignored(void)
{
	char c;

	signal(SIGTTIN, SIG_IGN);
	return read(0, &c, 1) == -1 && errno == EIO ? 0 : 1;
}

/* A background tcsetattr with a SIGTTOU handler: the handler runs, EINTR. */
static int bg_set_handled(void)
{
	struct sigaction sa = { .sa_handler = on_sig };
	struct termios tm;

	sigaction(SIGTTOU, &sa, NULL);
	if (tcgetattr(0, &tm) < 0)
		return 3;
	if (tcsetattr(0, TCSANOW, &tm) != -1 || errno != EINTR)
		return 1;
	return got == SIGTTOU ? 0 : 2;
}

/* A background tcsetattr with SIGTTOU ignored: allowed. */
static int bg_set_ignored(void)
{
	struct termios tm;

	signal(SIGTTOU, SIG_IGN);
	return tcgetattr(0, &tm) == 0 && tcsetattr(0, TCSANOW, &tm) == 0 ? 0 : 1;
}

/* A background write without TOSTOP: it goes through. */
static int bg_write(void)
{
	return write(1, "", 0) == 0 ? 0 : 1;
}

int main(void)
{
	struct termios orig, tm;
	struct winsize ws0, ws;
	pid_t child;
	int st;

	if (!isatty(0) || tcgetpgrp(0) != getpgrp()) {
		printf("skip: stdin is not this process's controlling terminal in the foreground\n");
		printf("0 passed, 0 failed\n");
		return 0;
	}
	/* termios round trip */
	CHECK(tcgetattr(0, &orig) == 0, "tcgetattr: %s", strerror(errno));
	tm = orig;
	tm.c_lflag &= ~(tcflag_t)(ECHO | ICANON);
	tm.c_cc[VMIN] = 3;
	CHECK(tcsetattr(0, TCSADRAIN, &tm) == 0, "tcsetattr: %s", strerror(errno));
	memset(&tm, 0, sizeof(tm));
	CHECK(tcgetattr(0, &tm) == 0 && !(tm.c_lflag & (ECHO | ICANON)) && tm.c_cc[VMIN] == 3,
	      "the change is read back (lflag %#x, VMIN %d)", tm.c_lflag, tm.c_cc[VMIN]);
	CHECK(tcsetattr(0, TCSAFLUSH, &orig) == 0, "restore: %s", strerror(errno));
	CHECK(tcgetattr(0, &tm) == 0 && tm.c_lflag == orig.c_lflag, "restored");
	/* window size */
	CHECK(ioctl(0, TIOCGWINSZ, &ws0) == 0, "TIOCGWINSZ: %s", strerror(errno));
	ws = ws0;
	ws.ws_row = 21;
	ws.ws_col = 71;
	CHECK(ioctl(0, TIOCSWINSZ, &ws) == 0, "TIOCSWINSZ: %s", strerror(errno));
	memset(&ws, 0, sizeof(ws));
	CHECK(ioctl(0, TIOCGWINSZ, &ws) == 0 && ws.ws_row == 21 && ws.ws_col == 71,
	      "the size is read back (%dx%d)", ws.ws_row, ws.ws_col);
	ioctl(0, TIOCSWINSZ, &ws0);
	/* flushes and flow control */
	CHECK_ERR(ioctl(0, TCFLSH, 5), EINVAL);
	CHECK(ioctl(0, TCFLSH, TCIFLUSH) == 0, "TCFLSH: %s", strerror(errno));
	CHECK_ERR(ioctl(0, TCXONC, 9), EINVAL);
	CHECK(tcdrain(0) == 0, "tcdrain: %s", strerror(errno));
	/* sessions and groups */
	CHECK(tcgetsid(0) == getsid(0), "tcgetsid %d, getsid %d", tcgetsid(0), getsid(0));
	CHECK(ioctl(0, TIOCSCTTY, 0) == 0, "TIOCSCTTY on its own terminal: %s", strerror(errno));
	CHECK_ERR(tcsetpgrp(0, 999999), ESRCH);
	/* job control: background readers and writers */
	CHECK(in_background(bg_read_handled) == 0, "background read with a SIGTTIN handler");
	CHECK(in_background(bg_read_ignored) == 0, "background read with SIGTTIN ignored: EIO");
	CHECK(in_background(bg_set_handled) == 0, "background tcsetattr with a SIGTTOU handler");
	CHECK(in_background(bg_set_ignored) == 0, "background tcsetattr with SIGTTOU ignored");
	CHECK(in_background(bg_write) == 0, "background write without TOSTOP");
	/* The foreground moves to a child's group and back. */
	child = fork();
	if (child == 0) {
		setpgid(0, 0);
		/* Stopped until the parent made its group the foreground one. */
		raise(SIGSTOP);
		_exit(tcgetpgrp(0) == getpgrp() ? 0 : 1);
	}
	setpgid(child, child);
	waitpid(child, &st, WUNTRACED);
	CHECK(tcsetpgrp(0, child) == 0, "tcsetpgrp to the child's group: %s", strerror(errno));
	CHECK(tcgetpgrp(0) == child, "tcgetpgrp %d, child %d", tcgetpgrp(0), child);
	kill(child, SIGCONT);
	waitpid(child, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child saw itself in the foreground");
	/* Back: the parent is now in the background, so it ignores SIGTTOU for this. */
	signal(SIGTTOU, SIG_IGN);
	CHECK(tcsetpgrp(0, getpgrp()) == 0, "tcsetpgrp back: %s", strerror(errno));
	signal(SIGTTOU, SIG_DFL);
	CHECK(tcgetpgrp(0) == getpgrp(), "foreground again");
	return finish();
}
