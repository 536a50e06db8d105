# SPDX-License-Identifier: Apache-2.0
"""Fixtures: a real `husk serve` (the build's husk, $HUSK) on a unix socket in a temporary state
dir, a client whose every reply is checked against docs/api.yaml, and helpers to poll and to
check that a deleted sandbox left nothing behind."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT_DIR = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(CLIENT_DIR))
sys.path.insert(0, CLIENT_DIR)
sys.path.insert(0, HERE)

import husk  # noqa: E402
from openapi import Spec  # noqa: E402

# Multiplies every polling deadline (a slow or loaded machine).
SCALE = float(os.environ.get("HUSK_TEST_TIMEOUT_SCALE", "1"))

# Operations of docs/api.yaml the server does not have yet: their tests are xfail with this
# reason and test_zz_coverage does not ask for a 2xx reply from them. Keep it empty when the
# server has everything.
NOT_IN_SERVER = {}


def not_in_server(*ops):
    """An xfail marker for a test of operations (METHOD, template) the server lacks, or no
    marker when it has them all."""
    missing = [NOT_IN_SERVER[op] for op in ops if op in NOT_IN_SERVER]
    if not missing:
        return lambda f: f
    return pytest.mark.xfail(reason="; ".join(missing), strict=True)


def wait_for(pred, timeout=10.0, what="the condition"):
    """Polls pred() (backing off from 10 ms to 200 ms) until it returns a true value, which it
    returns; fails the test after timeout * HUSK_TEST_TIMEOUT_SCALE seconds."""
    deadline = time.monotonic() + timeout * SCALE
    delay = 0.01
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            pytest.fail("timed out after %.1f s waiting for %s" % (timeout * SCALE, what))
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


def wait_deleted(client, sb_id, timeout, what):
    """Waits until the server answers 404 for sandbox sb_id (any other error fails the test)."""

    def gone():
        try:
            client.sandbox(sb_id)
            return False
        except husk.HuskError as e:
            assert e.status == 404
            return True

    wait_for(gone, timeout, what)


# --- checking replies against docs/api.yaml ---


class Conformance:
    """Checks every reply a client gets against the document, and records which operations
    answered 2xx (for test_zz_coverage)."""

    def __init__(self, spec):
        self.spec = spec
        self.problems = []
        self.seen = {}  # (METHOD, template) -> set of statuses

    def __call__(self, resp):
        path = resp.path.split("?", 1)[0]
        template, _ = self.spec.route(path)
        if template is not None:
            self.seen.setdefault((resp.method, template), set()).add(resp.status)
        ctype = resp.content_type
        try:
            template, schema = self.spec.response_schema(resp.method, path, resp.status, ctype)
        except LookupError as e:
            self.problems.append("%s %s -> %d: %s" % (resp.method, path, resp.status, e))
            return
        if schema is None:
            if resp.body:
                self.problems.append("%s %s -> %d: a body where api.yaml has none" %
                                     (resp.method, path, resp.status))
            return
        if ctype == "application/x-ndjson":
            # A whole NDJSON reply (or one line of a streamed one): each line is one value.
            lines = [ln for ln in resp.body.splitlines() if ln.strip()]
        elif ctype == "application/json":
            lines = [resp.body]
        else:
            lines = None
        if lines is not None:
            for ln in lines:
                try:
                    value = json.loads(ln)
                except ValueError as e:
                    self.problems.append("%s %s -> %d: not JSON (%s): %r" %
                                         (resp.method, path, resp.status, e, ln[:200]))
                    continue
                for p in self.spec.validate(value, schema):
                    self.problems.append("%s %s -> %d: %s" % (resp.method, path, resp.status, p))
            return
        if ctype.startswith("text/"):
            value = resp.body.decode("utf-8", "replace")
        else:
            return  # bytes: nothing to check
        for p in self.spec.validate(value, schema):
            self.problems.append("%s %s -> %d: %s" % (resp.method, path, resp.status, p))


@pytest.fixture(scope="session")
def spec():
    path = os.path.join(REPO, "docs", "api.yaml")
    if not os.path.exists(path):
        pytest.fail("%s is missing: the tests check the server against it" % path)
    return Spec(path)


@pytest.fixture(scope="session")
def conformance(spec):
    return Conformance(spec)


@pytest.fixture(autouse=True)
def _conforms(request, conformance):
    """Every reply a test got conforms to api.yaml (else the test fails, listing how)."""
    before = len(conformance.problems)
    yield
    new = conformance.problems[before:]
    if new:
        pytest.fail("replies that do not conform to docs/api.yaml:\n  " + "\n  ".join(new[:20]))


# --- the server ---


def husk_binary():
    path = os.environ.get("HUSK") or os.path.join(REPO, "build", "husk")
    if not os.access(path, os.X_OK):
        pytest.fail("no husk binary at %s: set HUSK to the build's husk" % path)
    return path


class Server:
    """A `husk serve` process on STATE/serve.sock with state dir STATE."""

    def __init__(self, state_dir, conformance, extra=()):
        self.state_dir = str(state_dir)
        self.socket = os.path.join(self.state_dir, "serve.sock")
        self.conformance = conformance
        self.extra = list(extra)
        self.proc = None
        self.log_path = os.path.join(os.path.dirname(self.state_dir),
                                     os.path.basename(self.state_dir) + ".serve.log")

    def start(self):
        os.makedirs(self.state_dir, exist_ok=True)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [husk_binary(), "serve", "--socket", self.socket, "--state-dir", self.state_dir,
             "--keep-logs", "1h"] + self.extra,
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        c = self.client()

        def up():
            if self.proc.poll() is not None:
                pytest.fail("husk serve exited with %s:\n%s" % (self.proc.returncode,
                                                               self.log_tail()))
            try:
                return c.health()["status"] == "ok"
            except (OSError, husk.HuskError):
                return False

        wait_for(up, 20, "husk serve to answer on %s" % self.socket)
        return self

    def client(self, timeout=60):
        c = husk.Client(socket=self.socket, timeout=timeout * SCALE)
        c.transport.hooks.append(self.conformance)
        return c

    def stop(self, sig=signal.SIGTERM):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(20 * SCALE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def log_tail(self, n=40):
        try:
            with open(self.log_path, "rb") as f:
                return b"".join(f.readlines()[-n:]).decode("utf-8", "replace")
        except OSError:
            return "(no log)"


@pytest.fixture(scope="session")
def server(tmp_path_factory, conformance):
    s = Server(tmp_path_factory.mktemp("serve") / "state", conformance).start()
    yield s
    # Whatever the tests made and did not delete is deleted here (a leak is the test's failure).
    c = s.client()
    try:
        for sb in c.sandboxes():
            try:
                sb.delete()
            except husk.HuskError:
                pass
    except (OSError, husk.HuskError):
        pass
    finally:
        s.stop()


@pytest.fixture
def client(server):
    return server.client()


@pytest.fixture
def sandbox(client):
    """A sandbox over the host's root, deleted after the test."""
    with husk.Sandbox.create(client, labels={"test": "fixture"}) as sb:
        yield sb


@pytest.fixture(scope="session")
def agent_missing(server):
    """Why the files endpoints cannot work (the server found no husk-agent), or None."""
    c = server.client()
    with husk.Sandbox.create(c, labels={"test": "agent-probe"}) as sb:
        try:
            sb.stat("/")
        except husk.HuskError as e:
            if e.status == 500 and "husk-agent" in e.message:
                return e.message
    return None


@pytest.fixture
def files(agent_missing):
    """For tests of the files endpoints: an expected failure, said so, when the server has no
    husk-agent (it is built from another branch, serve-agent)."""
    if agent_missing:
        pytest.xfail("the server has no husk-agent: " + agent_missing)


def put(sb, path, data):
    """Writes a file in the guest through an exec (tests of other things than the files API)."""
    sb.exec(["/bin/sh", "-c", 'mkdir -p "${1%/*}" && cat > "$1"', "sh", path],
            stdin=data).check()


def get(sb, path):
    """A file's text in the guest, through an exec."""
    return sb.exec(["cat", path]).check().stdout


# --- what a sandbox leaves on the host ---


def _start_time(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] == "Z":
        return None  # a zombie holds nothing
    return int(fields[19])


def footprint(server, sb_id):
    """What a sandbox holds on the host: its paths under the state dir (the kept logs aside),
    its sentry and gofer (pid and start time, from the OCI state the server keeps) and its
    cgroup directories."""
    paths = []
    procs = []
    cgroups = []
    for root, dirs, files in os.walk(server.state_dir):
        rel = os.path.relpath(root, server.state_dir)
        if rel.split(os.sep)[0] == "logs":
            continue
        for name in dirs + files:
            if sb_id in name:
                paths.append(os.path.join(root, name))
        if "state.json" in files:
            try:
                with open(os.path.join(root, "state.json")) as f:
                    st = json.load(f)
            except (OSError, ValueError):
                continue
            if isinstance(st, dict) and st.get("id") == sb_id:
                for k, start in (("pid", "pid_start"), ("gofer_pid", "gofer_start")):
                    if st.get(k):
                        procs.append((k, st[k], st.get(start)))
                if st.get("cgroup"):
                    cgroups.append(st["cgroup"])
    cgdirs = []
    for cg in cgroups:
        for base in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/memory",
                     "/sys/fs/cgroup/pids", "/sys/fs/cgroup/cpu", "/sys/fs/cgroup/freezer"):
            d = base + cg
            if os.path.isdir(d):
                cgdirs.append(d)
    return {"paths": paths, "procs": procs, "cgroups": cgdirs}


def assert_gone(server, before, sb_id):
    """After a delete: no path of sb_id under the state dir but its logs, its sentry and gofer
    dead (or zombies), its cgroups removed. before: footprint() taken while it ran."""
    now = footprint(server, sb_id)
    assert now["paths"] == [], "left in the state dir: %s" % now["paths"]
    alive = [(k, pid) for k, pid, start in before["procs"]
             if start is not None and _start_time(pid) == start]
    assert alive == [], "processes of %s still running: %s" % (sb_id, alive)
    left = [d for d in before["cgroups"] if os.path.isdir(d)]
    assert left == [], "cgroups left: %s" % left


@pytest.fixture(scope="session")
def not_in_server_ops():
    return NOT_IN_SERVER


def pytest_collection_modifyitems(session, config, items):
    config._husk_deselected = getattr(config, "_husk_deselected", 0)


def pytest_deselected(items):
    cfg = items[0].config if items else None
    if cfg is not None:
        cfg._husk_deselected = getattr(cfg, "_husk_deselected", 0) + len(items)
