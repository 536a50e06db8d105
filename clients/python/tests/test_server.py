# SPDX-License-Identifier: Apache-2.0
"""The server process: a restart finds its sandboxes; TCP needs the bearer token."""

import signal
import socket
import uuid

import pytest

import husk
from conftest import Server, assert_gone, footprint, get, put


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["killed", "stopped"])
def test_a_restarted_server_finds_its_sandboxes(tmp_path, conformance, sig):
    s = Server(tmp_path / "state", conformance).start()
    try:
        c = s.client()
        key = "restart-" + uuid.uuid4().hex
        sb = husk.Sandbox.create(c, labels={"restart": "yes"}, idempotency_key=key)
        put(sb, "/tmp/survives", "still here")
        r0 = sb.exec(["echo", "before"])
        s.stop(sig)

        s.start()
        c = s.client()
        found = c.sandboxes(labels={"restart": "yes"})
        assert [f.id for f in found] == [sb.id]
        again = c.sandbox(sb.id)
        assert again.state == "running" and again.created == sb.created
        assert get(again, "/tmp/survives") == "still here"
        assert again.exec(["echo", "after"]).stdout == "after\n"
        same = husk.Sandbox.create(c, idempotency_key=key)
        assert (same.created_now, same.id) == (False, sb.id)
        assert r0.exec_id in [e["exec_id"] for e in again.logs()["execs"]]
        fp = footprint(s, sb.id)
        assert fp["procs"]
        again.delete()
        assert_gone(s, fp, sb.id)
        assert c.sandboxes() == []
    finally:
        s.stop()


def _free_port():
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


def test_tcp_needs_the_token(tmp_path, conformance):
    token = uuid.uuid4().hex
    tf = tmp_path / "token"
    tf.write_text(token + "\n")
    port = _free_port()
    s = Server(tmp_path / "state", conformance,
               extra=["--listen", "127.0.0.1:%d" % port, "--token-file", str(tf)]).start()
    try:
        url = "http://127.0.0.1:%d" % port
        for bad in (None, "wrong", token + "x"):
            c = husk.Client(url=url, token=bad)
            c.transport.hooks.append(conformance)
            with pytest.raises(husk.HuskError) as e:
                c.sandboxes()
            assert (e.value.status, e.value.code) == (401, "unauthorized"), bad
            with pytest.raises(husk.HuskError) as e:
                husk.Sandbox.create(c)
            assert e.value.status == 401
        assert s.client().sandboxes() == [], "a refused request made a sandbox"
        c = husk.Client(url=url, token=token)
        c.transport.hooks.append(conformance)
        with husk.Sandbox.create(c) as sb:
            assert sb.exec(["echo", "tcp"]).stdout == "tcp\n"
            assert c.sandbox(sb.id).id == sb.id
    finally:
        s.stop()
