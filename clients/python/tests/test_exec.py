# SPDX-License-Identifier: Apache-2.0
"""POST /v1/sandboxes/{id}/exec: whole and streamed replies, env, cwd, stdin, timeouts,
signals, and the output guard."""

import hashlib
import os
import re
import signal

import pytest

import husk
from conftest import assert_gone, footprint, wait_for

MARKER = re.compile(r"\[husk: (\d+) bytes cut; the whole output is in (\S+)\]")


def test_exec_whole_reply(sandbox):
    r = sandbox.exec(["/bin/sh", "-c", "echo out; echo err >&2; exit 3"])
    assert r.exit_code == 3 and r.signal is None and r.timed_out is False
    assert r.stdout == "out\n" and r.stderr == "err\n"
    assert r.truncated is False
    assert re.match(r"^ex-[0-9a-f]{12}$", r.exec_id)
    assert r.duration_s >= 0 and r.cpu_user_s >= 0 and r.cpu_system_s >= 0
    o = r.output
    assert (o["stdout_bytes"], o["stderr_bytes"], o["stdout_lines"], o["stderr_lines"]) == \
        (4, 4, 1, 1)
    assert o["cut_bytes"] == 0 and o["full_output_path"] is None
    assert o["stderr_tail"] == ["err"]


def test_exec_cmd_runs_a_shell_line(sandbox):
    r = sandbox.exec(cmd="for i in 1 2 3; do echo $i; done | wc -l")
    assert r.exit_code == 0 and r.stdout.strip() == "3"
    # A str as the first argument is a shell line too.
    assert sandbox.exec("echo $((6 * 7))").stdout == "42\n"


def test_exec_argv_is_not_split_by_a_shell(sandbox):
    r = sandbox.exec(["printf", "[%s]", "a b", "$HOME", "*"])
    assert r.stdout == "[a b][$HOME][*]"


def test_exec_missing_program(sandbox):
    r = sandbox.exec(["/no/such/program"])
    assert r.exit_code == 127, r


def test_exec_env_cwd_stdin(sandbox):
    r = sandbox.exec(cmd='echo "$A-$B"; pwd; cat', env={"A": "1", "B": "two words"},
                     cwd="/usr/bin", stdin="line one\nline two\n")
    assert r.exit_code == 0, r
    assert r.stdout == "1-two words\n/usr/bin\nline one\nline two\n"


def test_exec_stdin_bytes(sandbox):
    data = bytes(range(256)) * 64
    r = sandbox.exec(["sha256sum"], stdin=data)
    assert r.exit_code == 0
    assert r.stdout.split()[0] == hashlib.sha256(data).hexdigest()


def test_exec_invalid_utf8_is_replaced(sandbox):
    r = sandbox.exec(["printf", "a\\377b"])
    assert r.stdout == "a\ufffdb"
    assert r.output["stdout_bytes"] == 3


def test_exec_timeout_kills_with_sigkill(sandbox):
    r = sandbox.exec(["sleep", "1000"], timeout_s=1)
    assert r.timed_out is True
    assert r.signal == 9 and r.exit_code is None
    assert r.duration_s < 100
    # The sandbox goes on.
    assert sandbox.exec(["true"]).exit_code == 0


def test_exec_killed_by_a_signal(sandbox):
    r = sandbox.exec(cmd="kill -TERM $$")
    assert r.signal == 15 and r.exit_code is None and r.timed_out is False


def test_exec_stream_events(sandbox):
    events = list(sandbox.exec_stream(
        cmd="echo one; echo two >&2; echo three; exit 4"))
    assert events, "no events"
    assert all(e.type in ("stdout", "stderr") for e in events[:-1]), events
    last = events[-1]
    assert last.type == "exit"
    out = "".join(e.data for e in events if e.type == "stdout")
    err = "".join(e.data for e in events if e.type == "stderr")
    assert out == "one\nthree\n" and err == "two\n"
    raw = last.raw
    for field in ("exec_id", "exit_code", "signal", "timed_out", "duration_s", "cpu_user_s",
                  "cpu_system_s", "truncated", "output"):
        assert field in raw, "the exit event lacks %s: %s" % (field, raw)
    assert "stdout" not in raw and "stderr" not in raw
    assert raw["exit_code"] == 4 and raw["output"]["stdout_lines"] == 2


def test_exec_stream_delivers_output_before_exit(sandbox):
    """The first chunk comes while the command still runs: it waits for a file that the test
    writes only after it saw that chunk."""
    it = sandbox.exec_stream(cmd="echo ready; while [ ! -e /tmp/go ]; do sleep 0.05; done; "
                                 "echo done", timeout_s=60)
    first = next(it)
    assert (first.type, first.data) == ("stdout", "ready\n")
    sandbox.exec(["touch", "/tmp/go"]).check()
    rest = list(it)
    assert rest[-1].type == "exit" and rest[-1].raw["exit_code"] == 0
    assert "".join(e.data for e in rest if e.type == "stdout") == "done\n"


def test_exec_stream_through_exec(sandbox):
    seen = []
    r = sandbox.exec(cmd="echo a; echo b >&2", stream=True, on_event=seen.append)
    assert r.exit_code == 0 and r.stdout == "a\n" and r.stderr == "b\n"
    assert seen[-1].type == "exit"


def _check_guard(stdout, limit, full):
    """stdout is full's first and last limit/2 bytes around the marker line (a newline may be
    added before the marker when the head ends inside a line). Returns the marker's path and
    count."""
    m = MARKER.search(stdout)
    assert m, "no marker in %r...%r" % (stdout[:100], stdout[-100:])
    half = limit // 2
    head, tail = stdout[:m.start()], stdout[m.end():]
    assert head[:half] == full[:half] and head[half:] in ("", "\n"), head[half - 20:]
    assert tail.startswith("\n"), "the marker is not a line of its own"
    assert tail[1:] == full[-half:], (len(tail), tail[:40])
    assert int(m.group(1)) == len(full) - 2 * half
    return m.group(2), int(m.group(1))


@pytest.mark.parametrize("stream", [False, True])
def test_output_guard_cuts_a_megabyte(sandbox, stream):
    line = "0123456789abcdef" * 4 + "\n"  # 65 bytes
    n = 16132  # ~1 MB
    total = len(line) * n
    limit = 65536
    r = sandbox.exec(cmd="yes %s | head -n %d; echo to-stderr >&2" % (line[:-1], n),
                     stream=stream)
    assert r.exit_code == 0
    assert r.truncated is True
    o = r.output
    assert o["stdout_bytes"] == total and o["stdout_lines"] == n
    assert o["stderr_bytes"] == len("to-stderr\n") and o["stderr_tail"] == ["to-stderr"]
    assert r.stderr == "to-stderr\n"
    path, cut = _check_guard(r.stdout, limit, line * n)
    assert o["cut_bytes"] == cut
    assert path == o["full_output_path"]
    assert path == "/tmp/husk-output/%s.log" % r.exec_id
    # The whole output is in the sandbox: every line of stdout, then stderr.
    r = sandbox.exec(["/bin/sh", "-c", 'grep -c -x "$1" "$2"; grep -n -x to-stderr "$2"; '
                      'grep -n -x -m 1 "$1" "$2"', "sh", line[:-1], path])
    count, err_at, first_at = r.stdout.split()
    assert int(count) == n
    assert int(first_at.split(":")[0]) < int(err_at.split(":")[0])


def test_output_guard_max_output_bytes(sandbox):
    full = "".join("%d\n" % i for i in range(1, 10001))
    r = sandbox.exec(cmd="seq 1 10000", max_output_bytes=1000)
    assert r.truncated is True
    assert r.output["stdout_bytes"] == len(full)
    _check_guard(r.stdout, 1000, full)
    # Under the limit nothing is cut and nothing is written.
    r = sandbox.exec(cmd="seq 1 10", max_output_bytes=1000)
    assert r.truncated is False and r.output["full_output_path"] is None
    assert r.stdout == "".join("%d\n" % i for i in range(1, 11))


def test_a_crashed_sentry_stops_its_sandbox_and_the_server_goes_on(server, client):
    sb = husk.Sandbox.create(client)
    before = footprint(server, sb.id)
    sentry = [pid for k, pid, start in before["procs"] if k == "pid"]
    assert sentry, "no sentry pid for %s in the state dir" % sb.id
    os.kill(sentry[0], signal.SIGKILL)
    wait_for(lambda: sb.refresh().state in ("stopped", "failed"), 20, "the sandbox to stop")
    with pytest.raises(husk.HuskError) as e:
        sb.exec(["true"])
    assert (e.value.status, e.value.code) == (409, "conflict")
    with husk.Sandbox.create(client) as other:
        assert other.exec(["true"]).exit_code == 0
    sb.delete()
    assert_gone(server, before, sb.id)
