"""The CRI checks of tests/integration/cri.sh for one runtime handler, as kubelet drives
containerd's CRI plugin: pods, their containers, exec, logs, stats, update, stop and remove,
then nothing left behind. Prints one TAP line per check ("ok - HANDLER: ..." or "not ok - ...",
followed by indented details); the shell counts them.

    cri_test.py SOCKET GEN-DIR HANDLER WORK RUNTIME-ROOT CGROUP-PARENT
    cri_test.py SOCKET GEN-DIR --probe       prints the runtime's name and version, or fails

WORK is the test's temporary directory (logs go under WORK/logs/HANDLER), RUNTIME-ROOT the
handler's state root (options.Root), CGROUP-PARENT the pods' cgroup parent (one per handler).
"""
import json
import os
import re
import socket
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cri_client import SCALE, Cri  # noqa: E402

MIB = 1024 * 1024


# Every check, in order: each handler reports each one (one that a failure before it kept from
# running is reported failed with that failure), so that runc's and husk's lists compare line by
# line.
CHECKS = [
    "RunPodSandbox lo: the pod is READY",
    "the pod has an address from the CNI bridge network",
    "two containers of a pod talk over localhost (wget 127.0.0.1:8080 from the other container)",
    "the server answers on the pod's address from the pod's network namespace",
    "without shareProcessNamespace, ps in a container shows its own process",
    "without shareProcessNamespace, ps does not show the other container's httpd",
    "ExecSync sleep 30 with timeout 2 returns a deadline error",
    "ExecSync sleep 30 with timeout 2 returns at about 2 s",
    "after the exec timeout no sleep 30 is left in the container (ps)",
    "a container allocating 64 MiB under a 32 MiB limit exits",
    "... and is reported with reason OOMKilled",
    "pod_annotations: the pod's dev.husk.* annotation is in the sandbox's and the container's "
    "OCI config",
    "ContainerStatus: RUNNING, started, with its log path",
    "the container's pid is the handler's (runc: the container's process; husk: a proxy of "
    "the pod's sentry)",
    "the container's host cgroup is CGROUP-PARENT/ID (memory hierarchy)",
    "the log file containerd writes holds the container's output",
    "ContainerStats: memory working set is non-zero",
    "the container reads its 64 MiB memory limit in /sys/fs/cgroup",
    "UpdateContainerResources: the container reads its new 48 MiB limit",
    "StopContainer: the container exits 0 on SIGTERM (CONTAINER_EXITED)",
    "RemoveContainer: the container is gone",
    "RunPodSandbox shared: the pod is READY",
    "shareProcessNamespace: ps in one container shows the other's sleep 1001",
    "RunPodSandbox host: the pod is READY",
    "hostNetwork: the container's hostname is the node's",
    "RunPodSandbox tty: the pod is READY",
    "a tty: true container reaches CONTAINER_RUNNING",
    "the tty container's shell has a /dev/pts/N terminal (tty)",
] + ["%s %s: the pod is %s" % (verb, pod, what) for pod in ("lo", "shared", "host", "tty")
     for verb, what in (("StopPodSandbox", "NOTREADY"), ("RemovePodSandbox", "gone"))] + [
    "nothing left: no process of the handler's root, pods or containers",
    "nothing left: no state under the handler's Root",
    "nothing left: no cgroup named after a pod or container",
    "nothing left: no mount under the test's directory",
    "nothing left: the pods' network namespaces are removed",
]


# What husk is known not to do yet: reported as TAP "# TODO" (cri.sh counts them apart), with
# the reason; one that passes says so, so that it is taken off this list.
KNOWN_GAPS = {}


class Checks:
    def __init__(self, handler):
        self.handler = handler
        self.done = set()
        self.blocked = []  # what failed and kept later checks from running

    def block(self, why):
        self.blocked.append(why)

    def not_reached(self):
        """Reports every check of CHECKS not reported yet as failed."""
        for name in CHECKS:
            if name not in self.done:
                self.report(False, name, "not reached; what failed before:",
                            *[w[:240] for w in self.blocked or ["?"]])

    def report(self, ok, name, *details):
        assert name in CHECKS, name
        self.done.add(name)
        gap = KNOWN_GAPS.get((self.handler, name))
        print(("ok - " if ok else "not ok - ") + self.handler + ": " + name +
              ("" if not gap else " # TODO " + (gap if not ok else "passes now: drop the gap")))
        if not ok:
            for d in details:
                for line in str(d).splitlines() or [""]:
                    print("    " + line)
        sys.stdout.flush()
        return ok


def err_text(e):
    """A gRPC error as CODE: details (what containerd answered), else the exception."""
    code = getattr(e, "code", None)
    if callable(code):
        text = "%s: %s" % (e.code().name, e.details())
        if e.details() == "Deadline Exceeded":  # gRPC's own words: containerd never answered
            text += " (the client's deadline: no answer)"
        return text
    return "%s: %s" % (type(e).__name__, e)


def poll(fn, budget):
    """Calls FN every 0.1 s until it returns a true value or BUDGET (scaled) seconds passed;
    returns its last value."""
    end = time.monotonic() + budget * SCALE
    while True:
        try:
            v = fn()
        except Exception as e:  # a call that fails (container not up yet) is retried
            v = None
            last = e
        else:
            last = None
        if v or time.monotonic() > end:
            if not v and last is not None:
                return ("error", err_text(last))
            return v
        time.sleep(0.1)


def main():
    sock, gen = sys.argv[1:3]
    cri = Cri(sock, gen)
    if sys.argv[3] == "--probe":
        v = cri.call("Version", cri.pb.VersionRequest(version="v1"), 20)
        print(v.runtime_name, v.runtime_version, v.runtime_api_version)
        return 0
    handler, work, rt_root, cg_parent = sys.argv[3:7]
    pb = cri.pb
    c = Checks(handler)
    log_dir = os.path.join(work, "logs", handler)
    os.makedirs(log_dir, exist_ok=True)
    pods, ctrs, netns = [], [], []

    def run_pod(name, **kw):
        try:
            pod = cri.run_pod(cri.pod_config(handler + "-" + name, os.path.join(log_dir, name),
                                             cg_parent, **kw), handler)
        except Exception as e:
            c.report(False, "RunPodSandbox %s: the pod is READY" % name, err_text(e))
            c.block("RunPodSandbox %s: %s" % (name, err_text(e)))
            return None
        pods.append((name, pod))
        st = cri.pod_status(pod, verbose=True)
        try:
            spec = json.loads(st.info.get("info", "{}")).get("runtimeSpec", {})
            for ns in spec.get("linux", {}).get("namespaces", []):
                if ns.get("type") == "network" and ns.get("path"):
                    netns.append(ns["path"])
        except ValueError:
            pass
        c.report(st.status.state == pb.SANDBOX_READY, "RunPodSandbox %s: the pod is READY" % name,
                 "state %s" % pb.PodSandboxState.Name(st.status.state))
        return pod

    def start(pod, name, command, timeout=30, **kw):
        """Creates and starts a container; reports only a failure; returns its id or None."""
        try:
            cid = cri.create(pod, name, command, **kw)
        except Exception as e:
            c.block("CreateContainer %s: %s" % (name, err_text(e)))
            return None
        ctrs.append(cid)
        try:
            cri.start(cid, timeout)
        except Exception as e:
            c.block("StartContainer %s: %s" % (name, err_text(e)))
            return None
        return cid

    def execs(cid, cmd, **kw):
        try:
            return cri.exec_sync(cid, cmd, **kw)
        except Exception as e:
            return (-1, "", err_text(e))

    def scenario():
        # --- a pod whose two containers talk over localhost; pids not shared ---
        # An allow rule that changes nothing (a CNI pod has 10/8 already); it shows
        # that containerd passes dev.husk.* annotations on (pod_annotations).
        pod = run_pod("lo", annotations={"dev.husk.egress-allow": "10.0.0.0/8"})
        ip = cri.pod_status(pod).status.network.ip if pod else ""
        if pod:
            c.report(ip.startswith("10."), "the pod has an address from the CNI bridge network",
                     "PodSandboxStatus network.ip: %r" % ip)
        server = client = None
        if pod:
            server = start(pod, "server", ["/bin/sh", "-c", "mkdir -p /tmp/www && "
                                           "echo pod-hello > /tmp/www/index.html && "
                                           "exec httpd -f -p 8080 -h /tmp/www"])
            client = start(pod, "client", ["/bin/sleep", "1000"])
        if server and client:
            got = poll(lambda: (lambda r: r if "pod-hello" in r[1] else None)(
                execs(client, ["wget", "-q", "-O", "-", "http://127.0.0.1:8080/"],
                      deadline=10)), 20)
            c.report(isinstance(got, tuple) and got[0] == 0 and "pod-hello" in got[1],
                     "two containers of a pod talk over localhost (wget 127.0.0.1:8080 from the "
                     "other container)", "last: %r" % (got,),
                     "last wget: %r" % (execs(client, ["wget", "-q", "-O", "-",
                                                       "http://127.0.0.1:8080/"], deadline=10),))
            # What a Service or another pod reaches: the pod's IP, here from a host process in
            # the pod's network namespace (the CNI bridge has no address on the node).
            last = []

            def by_pod_ip():
                # (no wget -T: Debian's static busybox 1.35 crashes with it)
                r = subprocess.run(["nsenter", "--net=" + netns[0], "/bin/busybox", "wget", "-q",
                                    "-O", "-", "http://%s:8080/" % ip],
                                   capture_output=True, text=True, timeout=10 * SCALE)
                last[:] = [(r.returncode, r.stdout, r.stderr)]
                return last[0] if "pod-hello" in r.stdout else None
            got = poll(by_pod_ip, 10) if netns and ip else None
            c.report(isinstance(got, tuple) and got[0] == 0,
                     "the server answers on the pod's address from the pod's network namespace",
                     "nsenter --net=%s wget http://%s:8080/: %r" % (
                         netns[0] if netns else "?", ip, got or last))
            st, out, err = execs(client, ["ps"])
            c.report(st == 0 and "sleep 1000" in out,
                     "without shareProcessNamespace, ps in a container shows its own process",
                     "status %s" % st, out, err)
            c.report(st == 0 and "sleep 1000" in out and "httpd" not in out,
                     "without shareProcessNamespace, ps does not show the other container's httpd",
                     "status %s" % st, out, err)

        # --- ExecSync with a 2 s timeout of sleep 30 ---
        if client:
            t0 = time.monotonic()
            try:
                # The client gives up well before sleep 30 would end by itself (25 s at most
                # whatever HUSK_TIMEOUT_SCALE), so that the check after it can fail.
                limit = min(2 + 20, 25 / SCALE)
                r = cri.exec_sync(client, ["sleep", "30"], timeout=2, deadline=limit)
                outcome, code = "answered: exit %d" % r[0], None
            except Exception as e:
                outcome, code = err_text(e), getattr(e, "code", lambda: None)()
            took = time.monotonic() - t0
            # containerd answers DeadlineExceeded itself once it has killed the exec; the
            # client's own deadline (err_text says so) is a failure to answer.
            c.report(code is not None and code.name == "DEADLINE_EXCEEDED" and
                     took < limit * SCALE - 0.5 and "(the client's deadline" not in outcome,
                     "ExecSync sleep 30 with timeout 2 returns a deadline error",
                     "after %.1f s: %s" % (took, outcome))
            c.report(1.9 <= took < 2 + 8 * SCALE,
                     "ExecSync sleep 30 with timeout 2 returns at about 2 s",
                     "after %.1f s: %s" % (took, outcome))

            def no_sleep30():
                st, out, err = execs(client, ["ps"], deadline=10)
                return (st, out) if st == 0 and "sleep 30" not in out else None
            got = poll(no_sleep30, 5) if took < 26 else None
            c.report(isinstance(got, tuple) and got[0] == 0,
                     "after the exec timeout no sleep 30 is left in the container (ps)",
                     "ps: %r" % (execs(client, ["ps"], deadline=10),))

        # --- over its memory limit: OOMKilled ---
        if pod:
            hog = start(pod, "hog", ["/bin/dd", "if=/dev/zero", "of=/dev/null", "bs=64M",
                                     "count=1"], memory=32 * MIB)
            if hog:
                st = cri.wait_state(hog, "CONTAINER_EXITED", 30)
                c.report(st.state == pb.CONTAINER_EXITED,
                         "a container allocating 64 MiB under a 32 MiB limit exits",
                         "state %s" % pb.ContainerState.Name(st.state))
                c.report(st.reason == "OOMKilled", "... and is reported with reason OOMKilled",
                         "state %s exit %d reason %r message %r" % (
                             pb.ContainerState.Name(st.state), st.exit_code, st.reason, st.message))

        # --- status, logs, stats, update, stop, remove ---
        life = start(pod, "life", ["/bin/sh", "-c", 'trap "exit 0" TERM; echo hello-from-life; '
                                   "while :; do sleep 0.2; done"], memory=64 * MIB) if pod else None
        if life:
            found = {}
            for what, i in (("sandbox", pod), ("container", life)):
                try:
                    spec = json.load(open(os.path.join(
                        work, "state/io.containerd.runtime.v2.task/k8s.io", i, "config.json")))
                    found[what] = spec.get("annotations", {}).get("dev.husk.egress-allow")
                except (OSError, ValueError) as e:
                    found[what] = str(e)
            c.report(found == {"sandbox": "10.0.0.0/8", "container": "10.0.0.0/8"},
                     "pod_annotations: the pod's dev.husk.* annotation is in the sandbox's and "
                     "the container's OCI config", "dev.husk.egress-allow: %r" % found)
            st = cri.wait_state(life, "CONTAINER_RUNNING", 20)
            c.report(st.state == pb.CONTAINER_RUNNING and st.started_at > 0 and
                     st.log_path.endswith("life.log"),
                     "ContainerStatus: RUNNING, started, with its log path",
                     "state %s started_at %d log_path %r" % (pb.ContainerState.Name(st.state),
                                                            st.started_at, st.log_path))
            path = st.log_path

            # The runtime is the one asked for: containerd's pid for the container is husk's
            # sentry (on HUSK_PLATFORM when set), or runc's container process (busybox's sh).
            def pid_args():
                try:
                    info = json.loads(cri.call("ContainerStatus", pb.ContainerStatusRequest(
                        container_id=life, verbose=True)).info.get("info", "{}"))
                    pid = info.get("pid", 0)
                    args = open("/proc/%d/cmdline" % pid, "rb").read().split(b"\0")
                    return pid, [a.decode(errors="replace") for a in args]
                except (OSError, ValueError, KeyError) as e:
                    return 0, [str(e)]
            pid, args = pid_args()
            if handler != "husk":
                # RUNNING once runc start returned; its init may not have exec'ed the command
                # yet (still runc init on a busy machine): wait for the exec.
                found = poll(lambda: (lambda pa: pa if pa[1][:2] == ["/bin/sh", "-c"] else None)(
                    pid_args()), 10)
                if found and found[0] != "error":
                    pid, args = found
            want_platform = os.environ.get("HUSK_PLATFORM", "")
            if handler == "husk":
                # A pod's container runs in the pod's sandbox (the pause container's sentry):
                # its pid is husk's container proxy (comm husk), and a sentry names the pod.
                try:
                    comm = open("/proc/%d/comm" % pid).read().strip()
                except OSError:
                    comm = ""
                sentries = []
                for d in os.listdir("/proc"):
                    try:
                        if d.isdigit() and open("/proc/%s/comm" % d).read().strip() == \
                                "husk-sentry":
                            sentries.append(open("/proc/%s/cmdline" % d, "rb").read().decode(
                                errors="replace").split("\0"))
                    except OSError:
                        pass
                ok = comm == "husk" and any(
                    any(pod in a for a in sa) and
                    (not want_platform or "--platform=" + want_platform in sa) for sa in sentries)
                args = ["comm " + comm] + args
            else:
                ok = args[:2] == ["/bin/sh", "-c"]
            c.report(ok, "the container's pid is the handler's (runc: the container's process; "
                     "husk: a proxy of the pod's sentry)", "pid %s: %s" % (pid, " ".join(args)[:300]))
            cg = "/sys/fs/cgroup/memory" + cg_parent + "/" + life
            if not os.path.isdir("/sys/fs/cgroup/memory"):
                cg = "/sys/fs/cgroup" + cg_parent + "/" + life
            c.report(os.path.isdir(cg),
                     "the container's host cgroup is CGROUP-PARENT/ID (memory hierarchy)",
                     "%s missing; %s holds %r" % (cg, os.path.dirname(cg), sorted(
                         os.listdir(os.path.dirname(cg))) if os.path.isdir(
                             os.path.dirname(cg)) else "nothing"))

            def logged():
                try:
                    text = open(path).read()
                except OSError as e:
                    return ("error", str(e))
                return text if re.search(r"^\S+ stdout [FP] hello-from-life$", text, re.M) else None
            text = poll(logged, 10)
            c.report(isinstance(text, str), "the log file containerd writes holds the container's "
                     "output", "%s: %r" % (path, text))

            def stats():
                s = cri.stats(life)
                return s if s.memory.working_set_bytes.value > 0 else None
            s = poll(stats, 20)
            c.report(s and not isinstance(s, tuple),
                     "ContainerStats: memory working set is non-zero",
                     "stats: %r" % (s,))

            read_limit = ["sh", "-c", "cat /sys/fs/cgroup/memory.max 2>/dev/null || "
                          "cat /sys/fs/cgroup/memory/memory.limit_in_bytes"]
            before = execs(life, read_limit)
            c.report(before[1].strip() == str(64 * MIB),
                     "the container reads its 64 MiB memory limit in /sys/fs/cgroup", before)
            try:
                cri.update_memory(life, 48 * MIB)
                upd = "ok"
            except Exception as e:
                upd = err_text(e)
            after = execs(life, read_limit)
            c.report(upd == "ok" and after[1].strip() == str(48 * MIB),
                     "UpdateContainerResources: the container reads its new 48 MiB limit",
                     "update: " + upd, "read: %r" % (after,))

            t0 = time.monotonic()
            try:
                cri.stop(life, 10)
                stop = "ok"
            except Exception as e:
                stop = err_text(e)
            st = cri.status(life)
            c.report(stop == "ok" and st.state == pb.CONTAINER_EXITED and st.exit_code == 0,
                     "StopContainer: the container exits 0 on SIGTERM (CONTAINER_EXITED)",
                     "stop: %s after %.1f s" % (stop, time.monotonic() - t0),
                     "state %s exit %d reason %r" % (pb.ContainerState.Name(st.state), st.exit_code,
                                                    st.reason))
            try:
                cri.remove(life)
                rm = "ok"
            except Exception as e:
                rm = err_text(e)
            try:
                cri.status(life)
                gone = "ContainerStatus still answers"
            except Exception as e:
                gone = "ok" if "NOT_FOUND" in err_text(e) else err_text(e)
            c.report(rm == "ok" and gone == "ok", "RemoveContainer: the container is gone",
                     "remove: " + rm, "status: " + gone)

        # --- shareProcessNamespace: one container sees the other's process ---
        shared = run_pod("shared", pid=pb.POD)
        if shared:
            a = start(shared, "a", ["/bin/sleep", "1001"], pid=pb.POD)
            b = start(shared, "b", ["/bin/sleep", "1002"], pid=pb.POD)
            if a and b:
                got = poll(lambda: (lambda r: r if "sleep 1001" in r[1] else None)(
                    execs(b, ["ps"], deadline=10)), 10)
                c.report(isinstance(got, tuple) and "sleep 1001" in got[1],
                         "shareProcessNamespace: ps in one container shows the other's sleep 1001",
                         "ps: %r" % (execs(b, ["ps"], deadline=10),))

        # --- a hostNetwork pod: the node's network and UTS namespaces ---
        hpod = run_pod("host", network=pb.NODE)
        if hpod:
            h = start(hpod, "h", ["/bin/sleep", "1000"])
            if h:
                got = execs(h, ["hostname"])
                c.report(got[0] == 0 and got[1].strip() == socket.gethostname(),
                         "hostNetwork: the container's hostname is the node's",
                         "node %r, container: %r" % (socket.gethostname(), got))

        # --- a tty: true container (stdin + tty), last: it may hang a runtime ---
        tpod = run_pod("tty")
        if tpod:
            t = start(tpod, "term", ["/bin/sh", "-c", "tty > /tmp/tty; exec sh"], tty=True,
                      stdin=True, timeout=20)
            if t:
                st = cri.wait_state(t, "CONTAINER_RUNNING", 10)
                c.report(st.state == pb.CONTAINER_RUNNING,
                         "a tty: true container reaches CONTAINER_RUNNING",
                         "state %s" % pb.ContainerState.Name(st.state))
                got = poll(lambda: (lambda r: r if r[0] == 0 and r[1].strip() else None)(
                    execs(t, ["cat", "/tmp/tty"], deadline=10)), 10)
                c.report(isinstance(got, tuple) and re.fullmatch(r"/dev/pts/\d+", got[1].strip()),
                         "the tty container's shell has a /dev/pts/N terminal (tty)",
                         "cat /tmp/tty: %r" % (got,))

    try:
        scenario()
    except Exception:  # a check that crashed: the teardown and the rest are still reported
        c.block("the checks stopped: " + traceback.format_exc())

    # --- stop and remove the pods ---
    for name, p in pods:
        try:
            cri.stop_pod(p)
            st = cri.pod_status(p).status.state
            res = "ok" if st == pb.SANDBOX_NOTREADY else pb.PodSandboxState.Name(st)
        except Exception as e:
            res = err_text(e)
        c.report(res == "ok", "StopPodSandbox %s: the pod is NOTREADY" % name, res)
        try:
            cri.remove_pod(p)
            try:
                cri.pod_status(p)
                res = "PodSandboxStatus still answers"
            except Exception as e:
                res = "ok" if "NOT_FOUND" in err_text(e) else err_text(e)
        except Exception as e:
            res = err_text(e)
        c.report(res == "ok", "RemovePodSandbox %s: the pod is gone" % name, res)

    # --- nothing left behind ---
    ids = [p for _, p in pods] + ctrs
    left = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) in (os.getpid(), os.getppid()):
            continue
        try:
            args = open("/proc/%s/cmdline" % pid, "rb").read().replace(b"\0", b" ").decode()
            cg = open("/proc/%s/cgroup" % pid).read()
        except OSError:
            continue
        if rt_root in args or cg_parent + "/" in cg or any(i in args for i in ids):
            left.append("%s: %s" % (pid, args[:200]))
    c.report(not left, "nothing left: no process of the handler's root, pods or containers",
             *left)
    states = []
    for dirpath, dirnames, filenames in os.walk(rt_root):
        states += [os.path.join(dirpath, n) for n in dirnames + filenames
                   if any(i in n for i in ids)]
    c.report(not states, "nothing left: no state under the handler's Root", *states)
    cgs = []
    for dirpath, dirnames, _ in os.walk("/sys/fs/cgroup"):
        cgs += [os.path.join(dirpath, n) for n in dirnames if any(i in n for i in ids)]
    c.report(not cgs, "nothing left: no cgroup named after a pod or container", *cgs)
    mounts = [line.split()[4] for line in open("/proc/self/mountinfo")
              if line.split()[4].startswith(work + "/") or any(i in line for i in ids)]
    c.report(not mounts, "nothing left: no mount under the test's directory", *mounts)
    ns_left = [n for n in netns if os.path.exists(n)]
    c.report(netns and not ns_left, "nothing left: the pods' network namespaces are removed",
             "recorded: %r" % netns, *ns_left)
    c.not_reached()
    return 0


if __name__ == "__main__":
    sys.exit(main())
