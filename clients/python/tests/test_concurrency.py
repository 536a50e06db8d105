# SPDX-License-Identifier: Apache-2.0
"""Sandboxes created, used and deleted concurrently, with nothing left behind."""

import os
import threading
import uuid

import husk
from conftest import assert_gone, footprint

# The issue asks for 100; HUSK_SERVE_CONCURRENT changes it.
N = int(os.environ.get("HUSK_SERVE_CONCURRENT", "100"))


def test_concurrent_create_exec_delete(server, client):
    tag = uuid.uuid4().hex[:8]
    errors = []
    done = []
    lock = threading.Lock()
    start = threading.Barrier(N)

    def one(i):
        try:
            c = server.client()
            start.wait()
            sb = husk.Sandbox.create(c, labels={"tag": tag, "i": str(i)})
            fp = footprint(server, sb.id)
            r = sb.exec(["echo", str(i)])
            assert r.stdout == "%d\n" % i, r
            sb.delete()
            with lock:
                done.append((sb.id, fp))
        except BaseException as e:  # noqa: B902 (reported below)
            with lock:
                errors.append("%d: %r" % (i, e))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(N)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [], errors
    assert len({sid for sid, _ in done}) == N
    assert client.sandboxes(labels={"tag": tag}) == []
    for sid, fp in done:
        assert fp["procs"], "no sentry found for %s" % sid
        assert_gone(server, fp, sid)
