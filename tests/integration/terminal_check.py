#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Drives an interactive shell through a pty, as a person at a terminal would (terminal.sh).

    terminal_check.py SCENARIO -- CMD [ARGS...]

CMD is run on the slave side of a new pty (its controlling terminal), typed into through the
master. Each check prints "check NAME ok" or "check NAME FAIL what it saw". Scenarios:

  shell    CMD is an interactive bash: echo of a typed line (its count is printed, to compare
           with a native run), stty -echo, python3's REPL, ^C, ^Z and fg, a background read
           (SIGTTIN), a window size change, and the pty's termios after exit equal to before.
  kill9    CMD puts the terminal in raw mode without echo and waits: the sentry (the child of
           husk do named husk-sentry) is SIGKILLed; the pty's termios after exit equal to before.
  kill9-guest  The same, but the guest's processes are SIGKILLed by the shell command in
           $KILL_GUEST (husk kill --all ID KILL for a husk do --name ID).
  bg       CMD (husk do, which prints "up-now" once it runs) runs in the background of a
           native bash that turns ixany on meanwhile: it is still on after CMD ended (husk
           restores only from the foreground).
  suspend  CMD (husk do of a program that prints "up-now", reads a line, prints "again", then
           sleeps) in the foreground of a native bash: ^Z stops it and the shell takes the
           terminal back, fg continues it, ^C ends it (130).
  conformance  CMD is a tests/syscalls program (host_tty) that needs a terminal: it passes.
  term     The same, but husk do is sent SIGTERM: it ends, dies of SIGTERM, and the termios
           equal the ones before.

Waits poll the output with a deadline (no sleeps as synchronisation); the deadlines scale with
HUSK_TEST_TIMEOUT_SCALE (default 1).
"""
import os
import pty
import select
import signal
import struct
import sys
import termios
import fcntl
import time

SCALE = float(os.environ.get("HUSK_TEST_TIMEOUT_SCALE", "1"))


class Term:
    def __init__(self, argv, rows=24, cols=80):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            try:
                os.execvp(argv[0], argv)
            finally:
                os._exit(127)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.buf = b""
        self.status = None

    def read_until(self, pat, timeout=20.0):
        """Reads until pat (bytes) is in the buffer; returns whether it came."""
        end = time.monotonic() + timeout * SCALE
        while pat not in self.buf and time.monotonic() < end:
            r, _, _ = select.select([self.fd], [], [], 0.1)
            if not r:
                continue
            try:
                data = os.read(self.fd, 4096)
            except OSError:
                break
            if not data:
                break
            self.buf += data
        return pat in self.buf

    def send(self, data):
        os.write(self.fd, data)

    def take(self):
        """The output so far, and a fresh buffer."""
        out, self.buf = self.buf, b""
        return out

    def wait(self, timeout=30.0):
        end = time.monotonic() + timeout * SCALE
        while time.monotonic() < end:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = st
                return st
            # Keep draining: a child blocked writing to a full pty would never exit.
            r, _, _ = select.select([self.fd], [], [], 0.05)
            if r:
                try:
                    self.buf += os.read(self.fd, 4096)
                except OSError:
                    pass
        os.kill(self.pid, signal.SIGKILL)
        _, st = os.waitpid(self.pid, 0)
        self.status = st
        return None


def check(name, ok, saw=b""):
    if ok:
        print("check %s ok" % name, flush=True)
    else:
        print("check %s FAIL %r" % (name, saw[-600:]), flush=True)


PROMPT = b"P> "


def prompt_wait(t, timeout=20.0):
    return t.read_until(PROMPT, timeout)


def scenario_shell(argv):
    t = Term(argv)
    before = termios.tcgetattr(t.fd)
    t.send(b"PS1='P'\"> \"; bind 'set enable-bracketed-paste off' 2>/dev/null\n")
    check("prompt", prompt_wait(t), t.buf)
    t.take()

    # A typed line: the terminal echoes it once (bash's readline turns the tty's echo off).
    t.send(b"echo typed$((40+2))\n")
    ok = t.read_until(b"typed42\r\n" + PROMPT)
    out = t.take()
    print("echo-count %d" % out.count(b"echo typed$((40+2))"), flush=True)
    check("typed-line-runs", ok, out)

    # stty -echo: what a plain read (the line discipline, not readline) gets is not shown.
    t.send(b"stty -echo; echo ready-$((5+5)); read x; stty echo; echo got-$x\n")
    t.read_until(b"ready-10\r\n")
    t.send(b"hush3\n")
    ok = t.read_until(b"got-hush3\r\n") and prompt_wait(t)
    out = t.take()
    print("hidden-shown %d" % out.count(b"hush3\r\n"), flush=True)
    check("stty-echo-off", ok and out.count(b"hush3") == 1, out)

    # Python's REPL reads the terminal in raw mode (readline).
    t.send(b"python3 -q\n")
    ok = t.read_until(b">>> ")
    t.send(b"6*7\n")
    ok = ok and t.read_until(b"42\r\n>>> ")
    t.send(b"exit()\n")
    ok = ok and prompt_wait(t)
    out = t.take()
    print("python-echo-count %d" % out.count(b"6*7"), flush=True)
    check("python-repl", ok, out)

    # ^C interrupts a foreground sleep; the shell goes on.
    t.send(b"sleep 60\n")
    t.read_until(b"sleep 60\r\n")
    time.sleep(0.3)  # typing speed: let sleep start (the check below does not depend on it)
    start = time.monotonic()
    t.send(b"\x03")
    ok = prompt_wait(t, 30)
    t.send(b"echo after$((1+1)) $?\n")
    ok = ok and t.read_until(b"after2 130\r\n" + PROMPT)
    check("ctrl-c", ok and time.monotonic() - start < 50, t.take())

    # ^Z stops the foreground job, fg resumes it, ^C then ends it.
    t.send(b"sleep 60\n")
    t.read_until(b"sleep 60\r\n")
    time.sleep(0.3)
    t.send(b"\x1a")
    ok = t.read_until(b"Stopped") and prompt_wait(t)
    check("ctrl-z", ok, t.buf)
    t.take()
    t.send(b"fg\n")
    ok = t.read_until(b"sleep 60\r\n")
    time.sleep(0.3)
    t.send(b"\x03")
    ok = ok and prompt_wait(t)
    t.send(b"jobs; echo jobs-done\n")
    ok = ok and t.read_until(b"jobs-done\r\n" + PROMPT)
    out = t.take()
    check("fg", ok and b"Stopped" not in out.split(b"jobs; echo")[-1], out)

    # A background read stops its job with SIGTTIN.
    t.send(b"cat &\n")
    prompt_wait(t)
    t.send(b"while ! jobs -l | grep -q Stopped; do sleep 0.1; done; jobs -l; kill -9 %1\n")
    ok = t.read_until(b"Stopped (tty input)", 30)
    check("background-read-sigttin", ok, t.buf)
    prompt_wait(t)
    t.take()

    # /dev/tty is the caller's terminal.
    t.send(b"echo via$((1+1))tty >/dev/tty\n")
    check("dev-tty", t.read_until(b"via2tty\r\n"), t.buf)
    prompt_wait(t)
    t.take()

    # A window size change reaches the guest (SIGWINCH, then TIOCGWINSZ). On a loaded machine
    # the pty itself was seen back at 24x80 after the resize (1 run in ~20; nothing in husk
    # sets a size): when the pty no longer holds what was set, the guest's answer says nothing
    # and the resize is made again (3 times at most). A guest that answers another size than
    # the pty holds fails at once.
    for attempt in range(3):
        fcntl.ioctl(t.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 101, 0, 0))
        t.send(b"stty size\n")
        ok = t.read_until(b"33 101\r\n")
        # What the pty itself says, for the record when the guest saw another size.
        rows, cols = struct.unpack("HHHH", fcntl.ioctl(t.fd, termios.TIOCGWINSZ, b"\0" * 8))[:2]
        if ok or (rows, cols) == (33, 101):
            break
        prompt_wait(t)
        t.take()
    check("window-size", ok, t.buf + b" (the pty: %d %d; attempt %d)" % (rows, cols, attempt + 1))
    prompt_wait(t)
    t.take()

    # Raw mode left behind by the guest: the caller's settings come back at exit.
    t.send(b"stty raw -echo; exit 3\n")
    st = t.wait()
    check("exit-status", st is not None and os.WIFEXITED(st) and os.WEXITSTATUS(st) == 3,
          b"status %r" % (st,))
    after = termios.tcgetattr(t.fd)
    check("termios-restored", after == before, b"%r != %r" % (after, before))


def sentry_of(pid):
    """The husk-sentry child of husk do (pid), or None."""
    try:
        kids = open("/proc/%d/task/%d/children" % (pid, pid)).read().split()
    except OSError:
        return None
    for k in kids:
        try:
            if open("/proc/%s/comm" % k).read().strip() == "husk-sentry":
                return int(k)
        except OSError:
            pass
    return None


def scenario_end(argv, how):
    t = Term(argv)
    before = termios.tcgetattr(t.fd)
    ok = t.read_until(b"raw-now")
    check("raw-mode-set", ok and termios.tcgetattr(t.fd) != before, t.buf)
    if how == "kill9":
        sentry = sentry_of(t.pid)
        check("sentry-found", sentry is not None)
        if sentry:
            os.kill(sentry, signal.SIGKILL)
    elif how == "kill9-guest":
        # husk kill --all ID KILL: every guest process, pid 1 included, SIGKILLed.
        import subprocess
        r = subprocess.run(os.environ["KILL_GUEST"], shell=True)
        check("guest-killed", r.returncode == 0, b"husk kill: %d" % r.returncode)
    else:
        os.kill(t.pid, signal.SIGTERM)
    st = t.wait()
    if how == "term":
        check("died-of-sigterm",
              st is not None and os.WIFSIGNALED(st) and os.WTERMSIG(st) == signal.SIGTERM,
              b"status %r" % (st,))
    else:
        check("ended", st is not None, b"status %r" % (st,))
    after = termios.tcgetattr(t.fd)
    check("termios-restored", after == before, b"%r != %r" % (after, before))


def scenario_bg(argv):
    """argv is husk do's command line; a native bash runs it in the background while the
    foreground (bash itself, here) changes the terminal: husk must not undo that at exit."""
    t = Term(["bash", "--norc", "-i"])
    t.send(b"PS1='P'\"> \"\n")
    prompt_wait(t)
    t.take()
    cmd = " ".join("'%s'" % a.replace("'", "'\\''") for a in argv)
    # CMD says "up-now" once it runs: husk saved the settings before that.
    t.send(("%s &\n" % cmd).encode())
    ok = t.read_until(b"up-now\r\n")
    t.take()
    # ixany: a flag readline leaves alone (it turns echo off itself while it reads a line).
    t.send(b"stty ixany; wait; stty -a | tr ' ;' '\\n\\n' | grep -x -- '-\\?ixany' |"
           b" sed 's/^/flag/'\n")
    ok = ok and t.read_until(b"flag")
    ok = ok and prompt_wait(t)
    check("background-husk-keeps-foreground-settings", ok and b"flagixany" in t.buf, t.buf)
    t.send(b"stty -ixany; exit\n")
    t.wait()


def scenario_conformance(argv):
    """argv is a tests/syscalls program (maybe under husk do) run on the pty: it passes."""
    t = Term(argv)
    ok = t.read_until(b" failed\r\n", 60)
    st = t.wait()
    out = t.take()
    for line in out.decode(errors="replace").splitlines():
        print("  " + line, flush=True)
    check("conformance", ok and st is not None and os.WIFEXITED(st) and
          os.WEXITSTATUS(st) == 0 and b" 0 failed" in out and b"\n0 passed" not in out, out)


def scenario_suspend(argv):
    """argv (a command that prints "up-now", reads a line, prints "again" and sleeps) runs in
    the foreground of a native bash: ^Z stops it and the shell takes the terminal back, fg
    continues it (it reads the next line typed), ^C then ends it with 130."""
    t = Term(["bash", "--norc", "-i"])
    t.send(b"PS1='P'\"> \"\n")
    prompt_wait(t)
    t.take()
    cmd = " ".join("'%s'" % a.replace("'", "'\\''") for a in argv)
    t.send(cmd.encode() + b"\n")
    ok = t.read_until(b"up-now\r\n")
    t.take()
    t.send(b"\x1a")
    ok = ok and t.read_until(b"Stopped") and prompt_wait(t)
    check("ctrl-z-stops-the-command", ok, t.take())
    t.send(b"jobs; echo jobs-done\n")
    ok = t.read_until(b"jobs-done\r\n") and prompt_wait(t) and b"Stopped" in t.buf
    check("the-shell-has-the-terminal", ok, t.take())
    t.send(b"fg\n")
    ok = t.read_until(b"fg\r\n")
    t.send(b"line\n")
    ok = ok and t.read_until(b"again\r\n")
    check("fg-continues-it", ok, t.buf)
    t.take()
    t.send(b"\x03")
    ok = prompt_wait(t)
    t.send(b"echo st=$?\n")
    ok = ok and t.read_until(b"st=130\r\n")
    check("ctrl-c-after-fg", ok, t.take())
    t.send(b"exit\n")
    t.wait()


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit(__doc__)
    scenario, argv = sys.argv[1], sys.argv[3:]
    if scenario == "shell":
        scenario_shell(argv)
    elif scenario == "conformance":
        scenario_conformance(argv)
    elif scenario == "suspend":
        scenario_suspend(argv)
    elif scenario == "bg":
        scenario_bg(argv)
    elif scenario in ("kill9", "kill9-guest", "term"):
        scenario_end(argv, scenario)
    else:
        sys.exit("unknown scenario " + scenario)


if __name__ == "__main__":
    main()
