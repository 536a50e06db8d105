# SPDX-License-Identifier: Apache-2.0
"""The husk serve client: Client (the server), Sandbox (one sandbox), ExecResult, Event."""

import base64
import json
import os
import urllib.parse

from ._transport import Transport
from .errors import HuskError

DEFAULT_SOCKET = "/run/husk/serve.sock"

# The fields of POST /v1/sandboxes, in the contract's order.
CREATE_FIELDS = ("rootfs", "bundle", "template", "env", "cwd", "limits", "volumes", "tmpfs",
                 "network", "secrets", "timeout_s", "labels", "idempotency_key", "idle")


def _q(part):
    return urllib.parse.quote(part, safe="")


class Client:
    """A connection to `husk serve`.

    Client() uses $HUSK_SOCKET or /run/husk/serve.sock; Client(socket=PATH) a unix socket;
    Client(url="http://host:port", token=...) TCP with a bearer token ($HUSK_TOKEN if not
    given). timeout: seconds for each socket operation (None: wait as long as it takes).
    """

    def __init__(self, socket=None, url=None, token=None, timeout=None):
        if url is None and socket is None:
            url = os.environ.get("HUSK_URL") or None
            if url is None:
                socket = os.environ.get("HUSK_SOCKET", DEFAULT_SOCKET)
        if url is not None and token is None:
            token = os.environ.get("HUSK_TOKEN")
        self.transport = Transport(socket_path=socket, url=url, token=token, timeout=timeout)

    def request(self, method, path, **kw):
        """A raw request (see Transport.request); returns the Response."""
        return self.transport.request(method, path, **kw)

    def _json(self, method, path, body=None, query=None, **kw):
        r = self.transport.request(method, path, query=query, json_body=body, **kw)
        return r.json() if r.body else None

    # --- sandboxes ---

    def create(self, **fields):
        """Creates a sandbox (see Sandbox.create for the fields)."""
        return Sandbox.create(self, **fields)

    def sandbox(self, id):
        """The sandbox with this id (GET); HuskError 404 if there is none."""
        return Sandbox(self, self._json("GET", "/v1/sandboxes/" + _q(id)))

    def sandboxes(self, labels=None):
        """Every sandbox, or those that carry every label given ({"k": "v"})."""
        query = [("label", "%s=%s" % kv) for kv in sorted((labels or {}).items())]
        data = self._json("GET", "/v1/sandboxes", query=query)
        return [Sandbox(self, s) for s in data["sandboxes"]]

    def health(self):
        """GET /v1/health: {"status": "ok", "version", "sandboxes"}."""
        return self._json("GET", "/v1/health")

    # --- templates ---

    def templates(self):
        """The snapshots kept by the server: [{"name", "created", "image_bytes", ...}]."""
        return self._json("GET", "/v1/templates")["templates"]

    def delete_template(self, name):
        self.transport.request("DELETE", "/v1/templates/" + _q(name))

    # --- logs of a sandbox, also after it was deleted ---

    def logs(self, id):
        """{"id", "deleted", "execs": [...]}: the kept log index of a sandbox."""
        return self._json("GET", "/v1/sandboxes/%s/logs" % _q(id))

    def exec_log(self, id, exec_id):
        """The whole output of one exec as a list of Events (stdout/stderr, then exit)."""
        r = self.transport.request("GET", "/v1/sandboxes/%s/logs/%s" % (_q(id), _q(exec_id)))
        return [Event(json.loads(line)) for line in r.body.splitlines() if line.strip()]

    def sandbox_log(self, id):
        """The sentry's own log of a sandbox (text)."""
        r = self.transport.request("GET", "/v1/sandboxes/%s/logs/sandbox" % _q(id))
        return r.body.decode("utf-8", "replace")

    # --- metrics ---

    def metrics(self):
        """GET /metrics, parsed: a Metrics object (its .text is the reply as sent)."""
        return Metrics(self.transport.request("GET", "/metrics").body.decode())


class Metrics:
    """Prometheus text: samples[(name, frozenset(labels.items()))] = value."""

    def __init__(self, text):
        self.text = text
        self.samples = {}
        self.types = {}
        for line in text.splitlines():
            line = line.strip()
            if not line:
                continue
            if line.startswith("#"):
                parts = line.split(None, 3)
                if len(parts) == 4 and parts[1] == "TYPE":
                    self.types[parts[2]] = parts[3]
                continue
            name, labels, value = _parse_sample(line)
            self.samples[(name, frozenset(labels.items()))] = value

    def get(self, name, default=None, **labels):
        """The sample of name with exactly these labels."""
        return self.samples.get((name, frozenset(labels.items())), default)

    def select(self, name, **labels):
        """{labels dict as a frozenset: value} of every sample of name that has these labels."""
        want = set(labels.items())
        return {k[1]: v for k, v in self.samples.items() if k[0] == name and want <= k[1]}

    def __str__(self):
        return self.text


def _parse_sample(line):
    """'name{a="b",c="d"} 1.5 [ts]' -> (name, {"a": "b", "c": "d"}, 1.5)."""
    labels = {}
    if "{" in line:
        name, rest = line.split("{", 1)
        i = 0
        while True:
            while i < len(rest) and rest[i] in " ,":
                i += 1
            if rest[i] == "}":
                i += 1
                break
            eq = rest.index("=", i)
            key = rest[i:eq].strip()
            if rest[eq + 1] != '"':
                raise ValueError("metrics: bad label in %r" % line)
            j = eq + 2
            val = []
            while rest[j] != '"':
                if rest[j] == "\\":
                    j += 1
                    val.append({"n": "\n", "\\": "\\", '"': '"'}.get(rest[j], rest[j]))
                else:
                    val.append(rest[j])
                j += 1
            labels[key] = "".join(val)
            i = j + 1
        value = rest[i:].split()[0]
    else:
        name, value = line.split()[:2]
    return name.strip(), labels, float(value)


class ExecResult:
    """The result of an exec: exit_code, signal, timed_out, duration_s, cpu_user_s, cpu_system_s,
    stdout, stderr (str), truncated, output (the guard's summary), exec_id; raw is the reply."""

    def __init__(self, raw):
        self.raw = raw
        self.exec_id = raw.get("exec_id")
        self.exit_code = raw.get("exit_code")
        self.signal = raw.get("signal")
        self.timed_out = raw.get("timed_out")
        self.duration_s = raw.get("duration_s")
        self.cpu_user_s = raw.get("cpu_user_s")
        self.cpu_system_s = raw.get("cpu_system_s")
        self.stdout = raw.get("stdout")
        self.stderr = raw.get("stderr")
        self.truncated = raw.get("truncated")
        self.output = raw.get("output")

    @property
    def ok(self):
        return self.exit_code == 0

    def check(self):
        """Returns self if the command exited 0, else raises RuntimeError with its stderr."""
        if not self.ok:
            raise RuntimeError("exit %s signal %s: %s" % (self.exit_code, self.signal,
                                                          (self.stderr or "")[-2000:]))
        return self

    def __repr__(self):
        return "ExecResult(exit_code=%r, signal=%r, timed_out=%r, stdout=%r, stderr=%r)" % (
            self.exit_code, self.signal, self.timed_out, (self.stdout or "")[:80],
            (self.stderr or "")[:80])


class Event:
    """One event of a streamed exec: type "stdout" | "stderr" (data) or "exit" (result)."""

    def __init__(self, raw):
        self.raw = raw
        self.type = raw.get("type")
        self.data = raw.get("data")
        self.result = ExecResult(raw) if self.type == "exit" else None

    def __repr__(self):
        return "Event(%r, %r)" % (self.type, self.data if self.type != "exit" else self.raw)


class Sandbox:
    """A sandbox of the server. Its attributes are the fields of the last reply about it
    (id, state, created, last_active, labels, usage, ...; see .data); refresh() reads them again.
    As a context manager it deletes the sandbox on exit."""

    def __init__(self, client, data):
        self.client = client
        self.data = data
        self.created_now = None  # True: 201 (new), False: 200 (idempotency key seen)

    @classmethod
    def create(cls, client=None, *, rootfs=None, bundle=None, template=None, env=None, cwd=None,
               limits=None, volumes=None, tmpfs=None, network=None, secrets=None, timeout_s=None,
               labels=None, idempotency_key=None, idle=None, extra=None):
        """POST /v1/sandboxes with the fields given (None: the server's default). extra: more
        fields sent as they are (the server rejects the ones it does not know)."""
        client = client or Client()
        args = dict(rootfs=rootfs, bundle=bundle, template=template, env=env, cwd=cwd,
                    limits=limits, volumes=volumes, tmpfs=tmpfs, network=network,
                    secrets=secrets, timeout_s=timeout_s, labels=labels,
                    idempotency_key=idempotency_key, idle=idle)
        body = {k: args[k] for k in CREATE_FIELDS if args[k] is not None}
        body.update(extra or {})
        r = client.request("POST", "/v1/sandboxes", json_body=body)
        sb = cls(client, r.json())
        sb.created_now = r.status == 201
        return sb

    def __getattr__(self, name):
        data = self.__dict__.get("data") or {}
        if name in data:
            return data[name]
        raise AttributeError(name)

    def __repr__(self):
        return "Sandbox(%s, %s)" % (self.data.get("id"), self.data.get("state"))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            self.delete()
        except HuskError as e:
            if e.status != 404:
                raise
        return False

    @property
    def id(self):
        return self.data["id"]

    @property
    def _path(self):
        return "/v1/sandboxes/" + _q(self.id)

    def _json(self, method, sub, body=None, query=None, **kw):
        return self.client._json(method, self._path + sub, body=body, query=query, **kw)

    def refresh(self):
        """Reads the sandbox again (GET); returns self."""
        self.data = self._json("GET", "")
        return self

    def delete(self):
        """DELETE: the sandbox is gone, its logs are kept."""
        self.client.request("DELETE", self._path)

    # --- exec ---

    @staticmethod
    def _exec_body(argv, cmd, env, cwd, stdin, timeout_s, max_output_bytes, stream):
        if isinstance(argv, str) and cmd is None:
            argv, cmd = None, argv
        if (argv is None) == (cmd is None):
            raise ValueError("exec: give exactly one of argv (a list) and cmd (a shell line)")
        body = {"argv": list(argv)} if argv is not None else {"cmd": cmd}
        if env is not None:
            body["env"] = env
        if cwd is not None:
            body["cwd"] = cwd
        if isinstance(stdin, str):
            body["stdin"] = stdin
        elif stdin is not None:
            body["stdin_b64"] = base64.b64encode(bytes(stdin)).decode()
        if timeout_s is not None:
            body["timeout_s"] = timeout_s
        if max_output_bytes is not None:
            body["max_output_bytes"] = max_output_bytes
        if stream:
            body["stream"] = True
        return body

    def exec(self, argv=None, cmd=None, *, env=None, cwd=None, stdin=None, timeout_s=None,
             max_output_bytes=None, stream=False, on_event=None):
        """Runs a command: argv (a list, or a str taken as cmd) or cmd (a shell line, /bin/sh -c).
        stdin: str or bytes. Returns an ExecResult. With stream, the server streams the output
        and on_event(Event) is called for each event as it comes; the result holds the whole
        output that was sent."""
        if not stream:
            body = self._exec_body(argv, cmd, env, cwd, stdin, timeout_s, max_output_bytes, False)
            return ExecResult(self._json("POST", "/exec", body))
        out, err = [], []
        result = None
        for ev in self.exec_stream(argv, cmd, env=env, cwd=cwd, stdin=stdin, timeout_s=timeout_s,
                                   max_output_bytes=max_output_bytes):
            if on_event is not None:
                on_event(ev)
            if ev.type == "stdout":
                out.append(ev.data)
            elif ev.type == "stderr":
                err.append(ev.data)
            elif ev.type == "exit":
                result = ev.raw
        if result is None:
            raise HuskError(502, "incomplete", "the exec stream ended without an exit event")
        raw = dict(result)
        raw.pop("type", None)
        raw["stdout"] = "".join(out)
        raw["stderr"] = "".join(err)
        return ExecResult(raw)

    def exec_stream(self, argv=None, cmd=None, *, env=None, cwd=None, stdin=None,
                    timeout_s=None, max_output_bytes=None):
        """Runs a command with streamed output: yields Events (stdout/stderr chunks, then exit)."""
        body = self._exec_body(argv, cmd, env, cwd, stdin, timeout_s, max_output_bytes, True)
        r = self.client.request("POST", self._path + "/exec", json_body=body, stream=True)
        for line in r.lines():
            if line.strip():
                yield Event(json.loads(line))

    # --- files ---

    def write(self, path, data, mode=None):
        """Writes a file (bytes, str as UTF-8, or a readable binary file); parents are made.
        mode: an int (0o644) or an octal string. Returns {"path", "size"}."""
        if isinstance(data, str):
            data = data.encode()
        if isinstance(mode, int):
            mode = "%04o" % mode
        return self.client.request("PUT", self._path + "/files",
                                   query=[("path", path), ("mode", mode)], data=data).json()

    def read(self, path):
        """A file's bytes."""
        return self.client.request("GET", self._path + "/files", query={"path": path}).body

    def stat(self, path):
        """{"path", "type", "size", "mode", "mtime", ["target"]}."""
        return self._json("GET", "/files/stat", query={"path": path})

    def list(self, path):
        """A directory's entries (stat objects with "name"), sorted by name."""
        return self._json("GET", "/files/list", query={"path": path})["entries"]

    def upload_tar(self, path, data):
        """Unpacks a tar stream (bytes or a readable binary file) into directory path.
        Returns {"path", "files"}."""
        return self.client.request("PUT", self._path + "/files/tar", query={"path": path},
                                   data=data, content_type="application/x-tar").json()

    def download_tar(self, path):
        """A tar stream of path (bytes)."""
        return self.client.request("GET", self._path + "/files/tar", query={"path": path}).body

    # --- lifecycle ---

    def pause(self):
        self.data = self._json("POST", "/pause")
        return self

    def resume(self):
        self.data = self._json("POST", "/resume")
        return self

    def snapshot(self, template):
        """Checkpoints the sandbox (it goes on running) into a template usable by create.
        Returns {"template", "image_bytes", "pages_bytes"}."""
        return self._json("POST", "/snapshot", {"template": template})

    def fork(self, count=1, labels=None):
        """count copies of the sandbox as it is now: a list of new Sandboxes."""
        body = {"count": count}
        if labels is not None:
            body["labels"] = labels
        return [Sandbox(self.client, s) for s in self._json("POST", "/fork", body)["sandboxes"]]

    # --- logs ---

    def logs(self):
        return self.client.logs(self.id)

    def exec_log(self, exec_id):
        return self.client.exec_log(self.id, exec_id)

    def sandbox_log(self):
        return self.client.sandbox_log(self.id)
