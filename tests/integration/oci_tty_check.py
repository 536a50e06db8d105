#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A console-socket client for oci-tty.sh, run against husk and runc on the same bundle.

    oci_tty_check.py eof RUNTIME ROOT BUNDLE ID SOCKET
        RUNTIME create --console-socket SOCKET with its stdout and stderr on one pipe, as
        containerd's shim runs it; prints "eof" once create has returned and the pipe reads
        end of file (no process of the runtime holds it), "open" when it is still open after
        the deadline, then deletes the container.

    oci_tty_check.py fail RUNTIME ROOT BUNDLE ID SOCKET
        RUNTIME create --console-socket SOCKET of a bundle whose program (/nope) is missing:
        prints whether create failed, whether its stderr names /nope (the sentry's message, as
        runc's create prints it), and what reached the terminal (nothing, under runc).

    oci_tty_check.py probe RUNTIME ROOT BUNDLE ID SOCKET
        create, a first window size of 24x80, start of the bundle (a shell script that prints
        what it sees of its terminal, then "ready" and waits for SIGWINCH); once "ready" is read from the pty master, the master
        is resized as the shim does on ResizePty (TIOCSWINSZ); prints the container's lines up to
        its "done" line (it prints the new size from its SIGWINCH trap), without CRs.

Waits are polls with deadlines that scale with HUSK_TEST_TIMEOUT_SCALE (default 1).
"""
import fcntl
import os
import select
import socket
import struct
import subprocess
import sys
import termios
import time

SCALE = float(os.environ.get("HUSK_TEST_TIMEOUT_SCALE", "1"))


def create(runtime, root, bundle, cid, path, **kw):
    """Starts RUNTIME create; returns (the Popen, the pty master)."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.path.exists(path):
        os.unlink(path)
    srv.bind(path)
    srv.listen(1)
    srv.settimeout(60 * SCALE)
    p = subprocess.Popen([runtime, "--root", root, "create", "--bundle", bundle,
                          "--console-socket", path, cid], **kw)
    conn, _ = srv.accept()
    _, fds, _, _ = socket.recv_fds(conn, 4096, 1)
    conn.close()
    srv.close()
    os.unlink(path)
    if len(fds) != 1:
        print("no pty master received")
        sys.exit(1)
    return p, fds[0]


def delete(runtime, root, cid):
    subprocess.run([runtime, "--root", root, "delete", "--force", cid],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def eof(runtime, root, bundle, cid, path):
    r, w = os.pipe()
    p, master = create(runtime, root, bundle, cid, path, stdout=w, stderr=w,
                       stdin=subprocess.DEVNULL)
    os.close(w)
    st = p.wait(timeout=60 * SCALE)
    out = b""
    verdict = "open"
    end = time.monotonic() + 30 * SCALE
    while time.monotonic() < end:
        ready, _, _ = select.select([r], [], [], 0.2)
        if not ready:
            continue
        d = os.read(r, 4096)
        if not d:
            verdict = "eof"
            break
        out += d
    print(verdict if st == 0 else "create failed (%d): %r" % (st, out))
    delete(runtime, root, cid)
    os.close(master)


def probe(runtime, root, bundle, cid, path):
    p, master = create(runtime, root, bundle, cid, path)
    if p.wait(timeout=60 * SCALE) != 0:
        print("create failed")
        sys.exit(1)
    # The first size, set before start as the shim does from the engine's request.
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    subprocess.run([runtime, "--root", root, "start", cid], check=True)
    buf = b""
    resized = False
    end = time.monotonic() + 60 * SCALE
    while b"done" not in buf and time.monotonic() < end:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                d = os.read(master, 4096)
            except OSError:
                break
            if not d:
                break
            buf += d
        if not resized and b"ready\r\n" in buf:
            # What the shim does on ResizePty: the master's window size changes.
            fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 101, 0, 0))
            resized = True
    text = buf.decode(errors="replace").replace("\r", "")
    print(text.split("done")[0].rstrip("\n"))
    delete(runtime, root, cid)
    os.close(master)


def fail(runtime, root, bundle, cid, path):
    r, w = os.pipe()
    p, master = create(runtime, root, bundle, cid, path, stdout=w, stderr=w,
                       stdin=subprocess.DEVNULL)
    os.close(w)
    err = b""
    while True:
        d = os.read(r, 4096)
        if not d:
            break
        err += d
    st = p.wait(timeout=60 * SCALE)
    # What reached the terminal before it was hung up.
    out = b""
    end = time.monotonic() + 10 * SCALE
    while time.monotonic() < end:
        ready, _, _ = select.select([master], [], [], 0.2)
        if not ready:
            continue
        try:
            d = os.read(master, 4096)
        except OSError:
            break
        if not d:
            break
        out += d
    print("create failed" if st != 0 else "create succeeded")
    print("stderr names it" if b"/nope" in err else "stderr: %r" % err)
    print("console: %r" % out)
    delete(runtime, root, cid)
    os.close(master)


if __name__ == "__main__":
    {"eof": eof, "probe": probe, "fail": fail}[sys.argv[1]](*sys.argv[2:7])
