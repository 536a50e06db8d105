#!/usr/bin/env python3
"""Checks for agent.sh (husk-agent), in few python runs (python starts slowly on a busy machine).

  setup WORK NATIVE-ROOT HUSK-ROOT   WORK/src/tree (long names, symlinks, odd modes and names),
                                     WORK/archives/{gnu,posix,py-pax,py-gnu}.tar of it,
                                     WORK/archives/truncated.tar (cut in a member's data), and
                                     hostile archives in WORK/hostile-{native,husk} whose
                                     symlinks point at ROOT/outside
  batch FILE                         runs the checks of FILE, one a line: NAME, CHECK and its
                                     arguments separated by tabs; prints "ok - NAME" or
                                     "not ok - NAME" and what differs (indented)
  init AGENT                         run as the process that execs `AGENT init`: see cmd_init

Checks (each raises Mismatch with what differs):
  tree SRC DST             DST is a copy of SRC: types, modes, contents, symlink targets
  stat JSON HOST GUEST     JSON (husk-agent stat GUEST) describes the host file HOST
  ls JSON HOST GUEST       JSON (husk-agent ls GUEST) lists the host directory HOST
  put JSON GUEST SIZE      JSON is put's reply for GUEST and SIZE bytes
  tar-x JSON GUEST N       JSON is tar-x's reply for GUEST and N members
  tarfile TAR SRC          python's tarfile reads TAR, a copy of the tree SRC (by tar-c)
"""
import io
import json
import os
import stat
import subprocess
import sys
import tarfile
import time


class Mismatch(Exception):
    pass


def fail(*lines):
    raise Mismatch("\n".join(lines))


def kind(mode):
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


def describe(path):
    """What husk-agent says of PATH (bytes), computed from lstat."""
    st = os.lstat(path)
    d = {
        "type": kind(st.st_mode),
        "size": st.st_size,
        "mode": "%04o" % stat.S_IMODE(st.st_mode),
        "mtime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(st.st_mtime))),
    }
    if stat.S_ISLNK(st.st_mode):
        d["target"] = os.readlink(path).decode("utf-8", "replace")
    return d


def walk(root):
    """{relative path: (type, mode, content or target)} of the tree ROOT (bytes)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            rel = os.path.relpath(p, root)
            if stat.S_ISLNK(st.st_mode):
                what = os.readlink(p)
            elif stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    what = f.read()
            else:
                what = None
            out[rel] = (kind(st.st_mode), stat.S_IMODE(st.st_mode), what)
    return out


def cmp_trees(a, b):
    wa, wb = walk(a), walk(b)
    diffs = []
    for k in sorted(set(wa) | set(wb)):
        if wa.get(k) != wb.get(k):
            fmt = lambda v: v if v is None else (v[0], oct(v[1]), (v[2] or b"")[:40])
            diffs.append("%r: %r vs %r" % (k, fmt(wa.get(k)), fmt(wb.get(k))))
    if not wa:
        diffs.append("the source tree is empty")
    return diffs


def cmd_tree(src, dst):
    diffs = cmp_trees(os.fsencode(src), os.fsencode(dst))
    if diffs:
        fail(*diffs[:10])


def load(path):
    with open(path) as f:
        text = f.read()
    try:
        return json.loads(text)
    except ValueError as e:
        fail("not JSON (%s): %r" % (e, text[:300]))
    return None


def cmd_stat(js, host, guest):
    got = load(js)
    want = dict(describe(os.fsencode(host)), path=guest)
    if got != want:
        fail("got  %r" % got, "want %r" % want)


def cmd_ls(js, host, guest):
    got = load(js)
    hostb = os.fsencode(host)
    entries = []
    for name in sorted(os.listdir(hostb)):
        entries.append(dict(describe(os.path.join(hostb, name)),
                            name=name.decode("utf-8", "replace")))
    want = {"path": guest, "entries": entries}
    if got != want:
        fail("got  %r" % got, "want %r" % want)


def cmd_put(js, guest, size):
    got = load(js)
    if got != {"path": guest, "size": int(size)}:
        fail("got %r" % got)


def cmd_tar_x(js, guest, n):
    got = load(js)
    if got != {"path": guest, "files": int(n)}:
        fail("got %r" % got)


def cmd_tarfile(tar, src):
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(tar) as t:
            names = t.getnames()
            # The archive is of SRC, named relative to SRC's parent.
            base = os.path.basename(src.rstrip("/"))
            bad = [n for n in names if n != base and not n.startswith(base + "/")]
            if bad:
                fail("names outside %s: %r" % (base, bad[:5]))
            if hasattr(tarfile, "fully_trusted_filter"):
                t.extractall(tmp, filter="fully_trusted")
            else:
                t.extractall(tmp)
        diffs = cmp_trees(os.fsencode(src), os.fsencode(os.path.join(tmp, base)))
        if diffs:
            fail(*diffs[:10])


def cmd_make_tree(d):
    n = "n" * 120
    os.makedirs(os.path.join(d, "sub", "private"))
    os.makedirs(os.path.join(d, n, n, n))
    with open(os.path.join(d, n, n, n, n + ".txt"), "w") as f:
        f.write("deep\n")
    with open(os.path.join(d, "bytes"), "wb") as f:
        f.write(bytes(range(256)) * 300)
    with open(os.path.join(d, "script"), "w") as f:
        f.write("#!/bin/sh\necho hi\n")
    os.chmod(os.path.join(d, "script"), 0o750)
    with open(os.path.join(d, "sub", "private", "key"), "w") as f:
        f.write("k\n")
    os.chmod(os.path.join(d, "sub", "private", "key"), 0o600)
    os.chmod(os.path.join(d, "sub", "private"), 0o700)
    open(os.path.join(d, "empty"), "w").close()
    os.chmod(os.path.join(d, "empty"), 0o444)
    os.symlink("bytes", os.path.join(d, "rel-link"))
    os.symlink("/etc/passwd", os.path.join(d, "abs-link"))
    os.symlink("/".join([n, n, n, n + ".txt"]), os.path.join(d, "long-link"))
    os.symlink("dangling", os.path.join(d, "dangling-link"))
    with open(os.path.join(d, "sp ace \"quoted\" é"), "w") as f:
        f.write("odd name\n")


def cmd_make_archives(src, out):
    parent, base = os.path.split(os.path.abspath(src))
    for fmt in ("gnu", "posix"):
        subprocess.run(["tar", "--format=" + fmt, "-C", parent, "-cf",
                        os.path.join(out, fmt + ".tar"), base], check=True)
    for name, fmt in (("py-pax", tarfile.PAX_FORMAT), ("py-gnu", tarfile.GNU_FORMAT)):
        with tarfile.open(os.path.join(out, name + ".tar"), "w", format=fmt) as t:
            t.add(os.path.join(parent, base), arcname=base)


def add(t, name, kind_, data=b"", link=""):
    ti = tarfile.TarInfo(name)
    ti.mode = 0o644
    if kind_ == "file":
        ti.size = len(data)
        t.addfile(ti, io.BytesIO(data))
        return
    ti.type = {"symlink": tarfile.SYMTYPE, "hard": tarfile.LNKTYPE, "dir": tarfile.DIRTYPE}[kind_]
    ti.linkname = link
    t.addfile(ti)


def cmd_make_hostile(out, root):
    """Each archive has a good member, the bad one, then a member that must not appear."""
    cases = {
        "dotdot": [("../escaped", "file", b"x")],
        "dotdot-deep": [("a/../../escaped", "file", b"x")],
        "absolute": [(root + "/escaped", "file", b"x")],
        "symlink-abs": [("esc", "symlink", b"", root), ("esc/escaped", "file", b"x")],
        "symlink-rel": [("esc", "symlink", b"", "../outside"), ("esc/escaped", "file", b"x")],
        "symlink-dir": [("esc", "symlink", b"", root), ("esc", "dir", b""),
                        ("esc/escaped", "file", b"x")],
        "hardlink-out": [("h", "hard", b"", "../outside/secret")],
        "hardlink-via-symlink": [("esc", "symlink", b"", root), ("h", "hard", b"", "esc/secret")],
    }
    for name, members in cases.items():
        for fmt_name, fmt in (("pax", tarfile.PAX_FORMAT), ("gnu", tarfile.GNU_FORMAT)):
            with tarfile.open(os.path.join(out, "%s-%s.tar" % (name, fmt_name)), "w",
                              format=fmt) as t:
                add(t, "good1", "file", b"1")
                for m in members:
                    add(t, m[0], m[1], m[2], m[3] if len(m) > 3 else "")
                add(t, "good2", "file", b"2")


def wait_for(what, cond, timeout=20.0):
    """Polls COND with growing pauses until it holds or TIMEOUT seconds pass."""
    deadline = time.monotonic() + timeout
    pause = 0.001
    while not cond():
        if time.monotonic() > deadline:
            print("not ok - init: %s (timed out)" % what, flush=True)
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.1)
    return True


def gone(pid):
    return lambda: not os.path.exists("/proc/%d" % pid)


def ppid_of(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def observer(init_pid, zombie_pid):
    """Runs beside `husk-agent init` (its orphan): checks that it reaps, then stops it."""
    ok = True

    def is_init():
        try:
            with open("/proc/%d/cmdline" % init_pid, "rb") as f:
                return f.read().split(b"\0")[1:2] == [b"init"]
        except OSError:
            return False

    ok &= wait_for("runs", is_init)
    # B exited before init started: a zombie init must reap when it starts.
    ok &= wait_for("reaps the zombie it inherited", gone(zombie_pid))
    r, w = os.pipe()
    p = os.fork()
    if p == 0:
        q = os.fork()
        if q == 0:
            os.close(w)
            os.read(r, 1)
            os._exit(0)
        os._exit(0)
    os.close(r)
    os.waitpid(p, 0)
    # P's child Q is an orphan now: it must be init's.
    child = None
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open("/proc/%s/stat" % pid) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == init_pid and int(pid) != os.getpid():
                    child = int(pid)
            except OSError:
                pass
    if child is None:
        print("not ok - init: the orphan was not re-parented to init", flush=True)
        ok = False
    else:
        os.close(w)  # Q exits: a zombie child of init, whose parent (P) exited
        ok &= wait_for("reaps an orphan that exited", gone(child))
    if ok:
        print("ok - init reaps", flush=True)
    os.kill(init_pid, 15)


def cmd_init(agent):
    """This process becomes `AGENT init` with a zombie child (B) already there and an orphan
    observer (O, B's child) that checks the reaping and sends SIGTERM."""
    try:
        import ctypes
        ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER, for a native run
    except (OSError, AttributeError):
        pass
    me = os.getpid()
    if os.fork() == 0:
        b = os.getpid()
        if os.fork() == 0:
            try:
                observer(me, b)
            finally:
                os._exit(0)
        os._exit(0)
    os.execv(agent, [agent, "init"])


def cmd_setup(work, native_root, husk_root):
    os.makedirs(os.path.join(work, "src"))
    os.makedirs(os.path.join(work, "archives"))
    cmd_make_tree(os.path.join(work, "src", "tree"))
    cmd_make_archives(os.path.join(work, "src", "tree"), os.path.join(work, "archives"))
    # A member cut in the middle of its data.
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        add(t, "first", "file", b"1")
        add(t, "cut", "file", b"c" * 100000)
    with open(os.path.join(work, "archives", "truncated.tar"), "wb") as f:
        f.write(buf.getvalue()[:3 * 512 + 50000])
    for mode, root in (("native", native_root), ("husk", husk_root)):
        out = os.path.join(work, "hostile-" + mode)
        os.makedirs(out)
        cmd_make_hostile(out, root + "/outside")


CHECKS = {"tree": cmd_tree, "stat": cmd_stat, "ls": cmd_ls, "put": cmd_put, "tar-x": cmd_tar_x,
          "tarfile": cmd_tarfile}


def cmd_batch(path):
    with open(path) as f:
        lines = f.read().splitlines()
    for line in lines:
        name, check, *args = line.split("\t")
        try:
            CHECKS[check](*args)
            print("ok - " + name)
        except Exception as e:  # a crash of a check is a failure of it, with its message
            print("not ok - " + name)
            for m in (str(e) or repr(e)).splitlines():
                print("    " + m)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    {"setup": cmd_setup, "batch": cmd_batch, "init": cmd_init}[cmd](*args)


if __name__ == "__main__":
    main()
