# SPDX-License-Identifier: Apache-2.0
"""Kept logs: the exec index, one exec's whole output and the sentry's log, also after the
sandbox is deleted."""

import pytest

import husk


def test_logs_are_kept_after_delete(client):
    sb = husk.Sandbox.create(client)
    a = sb.exec(["/bin/sh", "-c", "echo first; echo oops >&2; exit 2"])
    b = sb.exec(cmd="seq 1 20000", max_output_bytes=1000)
    assert b.truncated
    sb.delete()

    idx = client.logs(sb.id)
    assert idx["id"] == sb.id and idx["deleted"] is True
    execs = {e["exec_id"]: e for e in idx["execs"]}
    assert list(execs) == [a.exec_id, b.exec_id]
    ea, eb = execs[a.exec_id], execs[b.exec_id]
    assert ea["argv"] == ["/bin/sh", "-c", "echo first; echo oops >&2; exit 2"]
    assert ea["exit_code"] == 2 and ea["signal"] is None
    assert (ea["stdout_bytes"], ea["stderr_bytes"]) == (6, 5)
    assert eb["cmd"] == "seq 1 20000"
    whole = "".join("%d\n" % i for i in range(1, 20001))
    assert eb["stdout_bytes"] == len(whole)

    events = client.exec_log(sb.id, a.exec_id)
    assert events[-1].type == "exit" and events[-1].raw["exit_code"] == 2
    assert "".join(e.data for e in events if e.type == "stdout") == "first\n"
    assert "".join(e.data for e in events if e.type == "stderr") == "oops\n"
    # The kept log has the whole output, not what the guard let through.
    events = client.exec_log(sb.id, b.exec_id)
    assert "".join(e.data for e in events if e.type == "stdout") == whole

    text = client.sandbox_log(sb.id)
    assert isinstance(text, str)


def test_logs_of_a_live_sandbox(sandbox, client):
    r = sandbox.exec(["echo", "hi"])
    idx = sandbox.logs()
    assert idx["deleted"] is False
    assert [e["exec_id"] for e in idx["execs"]] == [r.exec_id]
    events = sandbox.exec_log(r.exec_id)
    assert [(e.type, e.data) for e in events[:-1]] == [("stdout", "hi\n")]


def test_logs_of_unknown_ids_are_404(sandbox, client):
    for call in (lambda: client.logs("sb-000000000000"),
                 lambda: client.sandbox_log("sb-000000000000"),
                 lambda: sandbox.exec_log("ex-000000000000")):
        with pytest.raises(husk.HuskError) as e:
            call()
        assert e.value.status == 404
