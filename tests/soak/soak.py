#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Churn and load of husk sandboxes (issue 18), and what they leave behind.

    soak.py [--husk PATH] churn [--rounds N] [--seed S]
    soak.py [--husk PATH] load [--sandboxes N] [--seconds S] [--nice N]
    soak.py [--husk PATH] short          (40 churn rounds, then 8 sandboxes for 20 s)

churn: N sandboxes one after another, alternating `husk do` and the OCI lifecycle (create,
state, start, state, delete with a busybox bundle), a fifth of them SIGKILLed at a random point
(husk do itself, the sentry of husk do, the sentry between create and start, the sentry while it
runs, `husk create` itself, or `husk kill KILL`). Every round that was not killed must print its
own lines; every round must end with its sandbox gone.

load: N sandboxes at once, half `husk do` and half `husk run` (OCI, over the host's root), each
running tests/soak/load.py for S seconds: shell loops, Python threads and loopback TCP inside
the sandbox, each checking its own results. Every one must end with "load ok".

Before and after each, and once everything has ended (polled, up to 120 s: nothing is timed), the
leftovers are counted and must be 0: processes below this one (it is a child subreaper, so the
sentries and gofers that husk re-parents come here, as they would to an engine's shim), host
mounts naming husk or the work dir, cgroups of these sandboxes (husk/<id> in every hierarchy,
husk-do-PID of husk do --network=host), entries of the state root, processes anywhere holding
the memory file (memfd "husk-memory") of a sandbox of ours, and this process's own FDs.
Shmem of /proc/meminfo (where memfd pages are counted) is printed before and after, not
asserted (other work on the machine changes it).

Prints "ok - ..." / "not ok - ..." lines and ends with "N passed, M failed".
"""
import argparse
import ctypes
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PR_SET_CHILD_SUBREAPER = 36
HANG = 300  # seconds after which one step is taken as a hang (never a timing assert)

passed = 0
failed = 0


def result(ok, name, *lines):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok - {name}", flush=True)
    else:
        failed += 1
        print(f"not ok - {name}", flush=True)
        for line in lines:
            for part in str(line).splitlines()[:20]:
                print(f"    {part}", flush=True)


# --- processes ---------------------------------------------------------------------------------

def proc_table():
    """{pid: (ppid, comm)} of every process."""
    table = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        comm = s[s.index("(") + 1:s.rindex(")")]
        rest = s[s.rindex(")") + 2:].split()
        table[int(d)] = (int(rest[1]), comm, rest[0])
    return table


def descendants(root, table=None):
    table = table or proc_table()
    kids = {}
    for pid, (ppid, _, _) in table.items():
        kids.setdefault(ppid, []).append(pid)
    out, todo = [], list(kids.get(root, []))
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


class Reaper:
    """Reaps the orphans that come to this subreaper, leaving subprocess's own children alone."""

    def __init__(self):
        self.mine = set()

    def reap(self):
        me = os.getpid()
        for pid, (ppid, _, state) in proc_table().items():
            if ppid == me and state == "Z" and pid not in self.mine:
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass

    def popen(self, *args, **kw):
        p = subprocess.Popen(*args, **kw)
        self.mine.add(p.pid)
        return p

    def done(self, p):
        self.mine.discard(p.pid)


reaper = Reaper()


def finish(p, timeout=HANG):
    """Waits for p (its output if piped); a hang is killed and reported as status 'hang'."""
    try:
        out, err = p.communicate(timeout=timeout)
        st = p.returncode
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        st = "hang"
    reaper.done(p)
    return st, out, err


def run(args, timeout=HANG, **kw):
    """subprocess.run through the reaper."""
    p = reaper.popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    return finish(p, timeout)


def memfd_holders(pids):
    """Processes of pids that have the memory file open or mapped."""
    out = []
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if "husk-memory" in os.readlink(f"/proc/{pid}/fd/{fd}"):
                    out.append(pid)
                    break
        except OSError:
            continue
    return out


# --- what is left behind -----------------------------------------------------------------------

def mounts():
    out = set()
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            out.add((fields[4], fields[3], fields[sep + 2]))
    return out


def cgroup_dirs():
    """Every directory under a hierarchy's husk/ and every husk-do-* of husk's own cgroup v2."""
    out = set()
    base = "/sys/fs/cgroup"
    tops = [base] + [os.path.join(base, d) for d in os.listdir(base)]
    for top in tops:
        h = os.path.join(top, "husk")
        if os.path.isdir(h):
            for dirpath, dirnames, _ in os.walk(h):
                out.update(os.path.join(dirpath, d) for d in dirnames)
    own = "/"
    with open("/proc/self/cgroup") as f:
        for line in f:
            if line.startswith("0::"):
                own = line[3:].strip()
    for top in (base, os.path.join(base, "unified")):
        d = os.path.normpath(top + own)
        try:
            out.update(os.path.join(d, e) for e in os.listdir(d) if e.startswith("husk-do-"))
        except OSError:
            pass
    return out


def shmem_kib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("Shmem:"):
                return int(line.split()[1])
    return -1


class Leftovers:
    def __init__(self, work, state_root, prefix):
        self.work, self.root, self.prefix = work, state_root, prefix
        self.do_pids = set()  # pids of our husk do processes (their husk-do-PID cgroups)
        self.mounts = mounts()
        self.cgroups = cgroup_dirs()
        self.fds = len(os.listdir("/proc/self/fd"))
        self.shmem = shmem_kib()

    def ours_cgroup(self, d):
        name = os.path.basename(d)
        if self.prefix in d:
            return True
        return name.startswith("husk-do-") and name[8:].isdigit() and int(name[8:]) in self.do_pids

    def check(self, what):
        """Waits (up to 120 s) for everything to go, then asserts that nothing is left."""
        me = os.getpid()
        deadline = time.monotonic() + 120
        while True:
            reaper.reap()
            procs = descendants(me)
            new_mounts = [m for m in mounts() - self.mounts
                          if "husk" in " ".join(m) or self.work in " ".join(m)]
            cgs = [d for d in cgroup_dirs() - self.cgroups if self.ours_cgroup(d)]
            states = os.listdir(self.root) if os.path.isdir(self.root) else []
            if not (procs or new_mounts or cgs or states) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        table = proc_table()
        result(not procs, f"{what}: no process left ({len(procs)})",
               *[f"{p} {table.get(p, ('', '?'))[1]}" for p in procs])
        result(not memfd_holders(procs), f"{what}: no process holds a memory file of ours")
        result(not new_mounts, f"{what}: no mount left ({len(new_mounts)})", *new_mounts)
        result(not cgs, f"{what}: no cgroup left ({len(cgs)})", *cgs)
        result(not states, f"{what}: the state root is empty ({len(states)})", *states)
        fds = len(os.listdir("/proc/self/fd"))
        result(fds == self.fds, f"{what}: the driver's FDs are as before ({self.fds} -> {fds})")
        print(f"# {what}: Shmem {self.shmem} KiB before, {shmem_kib()} KiB after "
              "(machine-wide, not asserted)", flush=True)


# --- OCI ---------------------------------------------------------------------------------------

class Oci:
    def __init__(self, husk, work, state_root):
        self.husk, self.work, self.root = husk, work, state_root
        self.rootfs = os.path.join(work, "rootfs")
        if not os.path.isdir(self.rootfs):
            os.makedirs(os.path.join(self.rootfs, "bin"))
            os.makedirs(os.path.join(self.rootfs, "tmp"))
            shutil.copy("/bin/busybox", os.path.join(self.rootfs, "bin/busybox"))
            for a in ("sh", "echo", "sleep", "cat", "true"):
                os.symlink("busybox", os.path.join(self.rootfs, "bin", a))
        bundle = os.path.join(work, "spec")
        os.makedirs(bundle, exist_ok=True)
        st, out, err = 0, "", ""
        if not os.path.exists(os.path.join(bundle, "config.json")):
            st, out, err = run([husk, "spec"], cwd=bundle)
        if st != 0:
            raise SystemExit(f"husk spec: {st} {err}")
        with open(os.path.join(bundle, "config.json")) as f:
            self.spec = json.load(f)

    def H(self, *args):
        return [self.husk, "--root", self.root, *args]

    def bundle(self, name, args, host_root=False, cpu_shares=0):
        """A bundle of its own for name (its rootfs shared, by absolute path)."""
        b = os.path.join(self.work, "bundles", name)
        os.makedirs(b, exist_ok=True)
        c = json.loads(json.dumps(self.spec))
        c["process"]["args"] = args
        c["process"]["terminal"] = False
        c["process"]["env"] = ["PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=/"]
        c["root"] = {"path": "/" if host_root else self.rootfs, "readonly": False}
        if cpu_shares:
            c.setdefault("linux", {}).setdefault("resources", {})["cpu"] = {"shares": cpu_shares}
        with open(os.path.join(b, "config.json"), "w") as f:
            json.dump(c, f)
        return b

    def state(self, cid):
        st, out, _ = run(self.H("state", cid))
        if st != 0:
            return None
        return json.loads(out)

    def wait_stopped(self, cid):
        deadline = time.monotonic() + HANG
        while time.monotonic() < deadline:
            s = self.state(cid)
            if s is None or s.get("status") == "stopped":
                return s
            time.sleep(0.05)
        return "hang"


# --- churn -------------------------------------------------------------------------------------

def kill_later(pid, delay):
    time.sleep(delay)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def find_sentry(parent):
    """The husk-sentry below parent, polled until it is there or parent is gone."""
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline:
        table = proc_table()
        if parent not in table:
            return None
        for p in descendants(parent, table):
            if table[p][1] == "husk-sentry":
                return p
        time.sleep(0.01)
    return None


def churn_do(husk, i, kill, rng, lo):
    """One husk do round; kill is None, "do" or "sentry"."""
    tag = f"soak-{i}"
    net = ["--network=host"] if i % 4 == 0 else []
    script = (f"echo {tag}; echo $((6*7)) > /tmp/f; cat /tmp/f; i=0; "
              "while [ $i -lt 300 ]; do i=$((i+1)); done; echo $i" + ("; sleep 2" if kill else ""))
    p = reaper.popen([husk, "do", *net, "--", "sh", "-c", script], stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
    lo.do_pids.add(p.pid)
    what = f"churn {i}: husk do{' --network=host' if net else ''}"
    if kill == "do":
        kill_later(p.pid, rng.uniform(0, 0.6))
        what += ", husk do SIGKILLed"
    elif kill == "sentry":
        s = find_sentry(p.pid)
        if s:
            kill_later(s, rng.uniform(0, 0.3))
        what += ", its sentry SIGKILLed"
    st, out, err = finish(p)
    if kill:
        # Any end but a hang: it may have finished before the signal.
        result(st != "hang", what, f"status {st}")
    else:
        result(st == 0 and out == f"{tag}\n42\n300\n", what,
               f"status {st}, stdout {out!r}", f"stderr {err[-600:]}")


def churn_oci(oci, i, kill, rng, prefix):
    """One OCI lifecycle round; kill is None, "created", "running", "create" or "husk-kill"."""
    cid = f"{prefix}-{i}"
    tag = f"soak-{i}"
    long = kill in ("running", "husk-kill")
    args = ["sh", "-c", f"echo {tag}; echo $((6*7)); " + ("sleep 1000" if long else "true")]
    b = oci.bundle(cid, args)
    outp = os.path.join(b, "out")
    what = f"churn {i}: OCI {cid}" + (f", killed ({kill})" if kill else "")
    errs = []
    # The container's stdio is create's: files (a pipe would stay open as long as the sentry).
    with open(outp, "w") as out, open(outp + ".err", "w+") as errf:
        p = reaper.popen(oci.H("create", "--bundle", b, cid), stdout=out, stderr=errf,
                         stdin=subprocess.DEVNULL)
        if kill == "create":
            kill_later(p.pid, rng.uniform(0, 0.3))
        st = finish(p)[0]
        errf.seek(0)
        err = errf.read()
    ok = True
    if kill == "create":
        # Killed at some point of create: whatever it made, delete --force removes.
        dst, _, derr = run(oci.H("delete", "--force", cid))
        s = oci.state(cid)
        ok = st != "hang" and s is None
        result(ok, what, f"create status {st}", f"delete {dst} {derr[-300:]}",
               f"state after delete: {s}")
        shutil.rmtree(b, ignore_errors=True)
        return
    if st != 0:
        result(False, what, f"create status {st}: {err[-600:]}")
        run(oci.H("delete", "--force", cid))
        return
    s = oci.state(cid)
    if not s or s.get("status") != "created":
        ok = False
        errs.append(f"state after create: {s}")
    if kill == "created":
        try:
            os.kill(s["pid"], signal.SIGKILL)
        except (ProcessLookupError, TypeError, KeyError):
            pass
        s = oci.wait_stopped(cid)
        if s is None or s == "hang" or s.get("status") != "stopped":
            ok = False
            errs.append(f"state after the sentry's SIGKILL: {s}")
    else:
        st, _, err = run(oci.H("start", cid))
        if st != 0:
            ok = False
            errs.append(f"start {st}: {err[-300:]}")
        if kill == "running":
            s = oci.state(cid)
            if s and s.get("pid"):
                kill_later(s["pid"], rng.uniform(0, 0.3))
        elif kill == "husk-kill":
            time.sleep(rng.uniform(0, 0.3))
            st, _, err = run(oci.H("kill", cid, "KILL"))
            if st != 0:
                ok = False
                errs.append(f"kill {st}: {err[-300:]}")
        s = oci.wait_stopped(cid)
        if s is None or s == "hang" or s.get("status") != "stopped":
            ok = False
            errs.append(f"state at the end: {s}")
        with open(outp) as f:
            got = f.read()
        if not kill and got != f"{tag}\n42\n":
            ok = False
            errs.append(f"stdout {got!r}")
    st, _, err = run(oci.H("delete", cid))
    if st != 0:
        ok = False
        errs.append(f"delete {st}: {err[-300:]}")
    if oci.state(cid) is not None:
        ok = False
        errs.append("husk state still knows it after delete")
    result(ok, what, *errs)
    shutil.rmtree(b, ignore_errors=True)


def churn(husk, rounds, seed, work, kill_share=0.2):
    rng = random.Random(seed)
    prefix = f"soak{os.getpid()}"
    state_root = os.path.join(work, "state")
    os.makedirs(state_root, exist_ok=True)
    oci = Oci(husk, work, state_root)
    lo = Leftovers(work, state_root, prefix)
    print(f"# churn: {rounds} rounds, seed {seed}", flush=True)
    t0 = time.monotonic()
    kills = {"do": 0, "oci": 0}
    for i in range(rounds):
        killed = rng.random() < kill_share
        if i % 2 == 0:
            kill = rng.choice(["do", "sentry"]) if killed else None
            churn_do(husk, i, kill, rng, lo)
            kills["do"] += bool(kill)
        else:
            kill = rng.choice(["created", "running", "create", "husk-kill"]) if killed else None
            churn_oci(oci, i, kill, rng, prefix)
            kills["oci"] += bool(kill)
        reaper.reap()
    dt = time.monotonic() - t0
    print(f"# churn: {rounds} rounds in {dt:.0f} s ({rounds / dt:.1f}/s); killed: "
          f"{kills['do']} husk do, {kills['oci']} OCI", flush=True)
    lo.check("churn")


# --- load --------------------------------------------------------------------------------------

def load(husk, n, seconds, work, nice=0):
    prefix = f"soakload{os.getpid()}"
    state_root = os.path.join(work, "state")
    os.makedirs(state_root, exist_ok=True)
    oci = Oci(husk, work, state_root)
    lo = Leftovers(work, state_root, prefix)
    script = os.path.join(HERE, "load.py")
    print(f"# load: {n} sandboxes for {seconds} s each", flush=True)
    t0 = time.monotonic()
    procs = []
    for i in range(n):
        args = ["python3", script, str(seconds), str(i)]
        if i % 2 == 0:
            cmd = [husk, "do", "--", *args]
            kind = "husk do"
        else:
            cid = f"{prefix}-{i}"
            # An OCI sandbox is a cpu cgroup of its own (husk/ID, shares 1024 by default): it
            # competes with the root group's tasks as one task at nice 0 would, whatever the
            # niceness of its processes. Its shares are those of a task at the sandboxes' nice
            # (Linux's weights: 1024 / 1.25^nice), so that both kinds share the CPU alike.
            shares = max(2, round(1024 / 1.25 ** nice)) if nice else 0
            b = oci.bundle(cid, args, host_root=True, cpu_shares=shares)
            cmd = oci.H("run", "--bundle", b, cid)
            kind = f"husk run {cid}"
        out = open(os.path.join(work, f"load-{i}.out"), "w+")
        err = open(os.path.join(work, f"load-{i}.err"), "w+")
        # The sandboxes, not the driver, are niced: a driver at their priority starts them
        # one every few seconds on a busy machine (each started one competes with it).
        p = reaper.popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                         preexec_fn=(lambda: os.nice(nice)) if nice else None)
        if i % 2 == 0:
            lo.do_pids.add(p.pid)
        procs.append((i, kind, p, out, err))
    print(f"# load: {n} started in {time.monotonic() - t0:.0f} s", flush=True)
    totals = {}
    for i, kind, p, out, err in procs:
        try:
            st = p.wait(timeout=seconds + 1800)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            st = "hang"
        reaper.done(p)
        out.seek(0)
        err.seek(0)
        text, etext = out.read(), err.read()
        out.close()
        err.close()
        last = text.strip().splitlines()[-1:] or [""]
        ok = st == 0 and last[0].startswith("load ok")
        if ok:
            for kv in last[0].split()[2:]:
                k, v = kv.split("=")
                totals[k] = totals.get(k, 0) + int(v)
        result(ok, f"load {i} ({kind}): {last[0]}", f"status {st}", f"stdout {text[-600:]}",
               f"stderr {etext[-600:]}")
    for i in range(n):
        if i % 2:
            run(oci.H("delete", "--force", f"{prefix}-{i}"))
    dt = time.monotonic() - t0
    print(f"# load: {n} sandboxes done in {dt:.0f} s; totals: " +
          " ".join(f"{k}={v}" for k, v in sorted(totals.items())), flush=True)
    shutil.rmtree(os.path.join(work, "bundles"), ignore_errors=True)
    lo.check("load")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--husk", default=os.environ.get("HUSK", "husk"))
    sub = ap.add_subparsers(dest="what", required=True)
    c = sub.add_parser("churn")
    c.add_argument("--rounds", type=int, default=1000)
    c.add_argument("--seed", type=int, default=None)
    c.add_argument("--kill-share", type=float, default=0.2)
    lp = sub.add_parser("load")
    lp.add_argument("--sandboxes", type=int, default=100)
    lp.add_argument("--seconds", type=int, default=600)
    lp.add_argument("--nice", type=int, default=0, help="niceness of the sandboxes")
    sub.add_parser("short")
    a = ap.parse_args()
    husk = os.path.abspath(a.husk) if "/" in a.husk else shutil.which(a.husk)
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SystemExit("prctl(PR_SET_CHILD_SUBREAPER) failed")
    work = tempfile.mkdtemp(prefix="husk-soak.")
    try:
        if a.what == "churn":
            churn(husk, a.rounds, a.seed if a.seed is not None else random.randrange(1 << 30),
                  work, a.kill_share)
        elif a.what == "load":
            load(husk, a.sandboxes, a.seconds, work, a.nice)
        else:
            churn(husk, 40, random.randrange(1 << 30), work)
            load(husk, 8, 20, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{passed} passed, {failed} failed", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
