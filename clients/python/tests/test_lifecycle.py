# SPDX-License-Identifier: Apache-2.0
"""Pause and resume, idle policies (pause after idle, auto-resume, delete after idle),
snapshots to templates, forks."""

import os
import uuid

import pytest

import husk
from conftest import _start_time, footprint, get, not_in_server, put, wait_deleted, wait_for

PAUSE = ("POST", "/v1/sandboxes/{id}/pause")
RESUME = ("POST", "/v1/sandboxes/{id}/resume")
SNAPSHOT = ("POST", "/v1/sandboxes/{id}/snapshot")
FORK = ("POST", "/v1/sandboxes/{id}/fork")
TEMPLATES = ("GET", "/v1/templates")
DELETE_TEMPLATE = ("DELETE", "/v1/templates/{name}")


@not_in_server(PAUSE, RESUME)
def test_pause_and_resume(client):
    with husk.Sandbox.create(client, idle={"auto_resume": False}) as sb:
        put(sb, "/tmp/kept", "state")
        assert sb.pause().state == "paused"
        assert sb.refresh().state == "paused"
        # Without auto_resume an exec on a paused sandbox is refused.
        with pytest.raises(husk.HuskError) as e:
            sb.exec(["true"])
        assert (e.value.status, e.value.code) == (409, "conflict")
        assert sb.refresh().state == "paused"
        assert sb.resume().state == "running"
        r = sb.exec(["cat", "/tmp/kept"])
        assert r.stdout == "state"


def test_idle_pause_and_auto_resume(client):
    with husk.Sandbox.create(client, idle={"pause_after_idle_s": 1, "auto_resume": True}) as sb:
        assert sb.idle["pause_after_idle_s"] == 1 and sb.idle["auto_resume"] is True
        put(sb, "/tmp/before", "written before the pause")
        wait_for(lambda: sb.refresh().state == "paused", 20, "the idle sandbox to be paused")
        paused_at = sb.last_active
        # An exec resumes it transparently (and counts as activity).
        r = sb.exec(["cat", "/tmp/before"])
        assert r.exit_code == 0 and r.stdout == "written before the pause"
        assert sb.refresh().last_active > paused_at
        # It pauses again once idle, and resumes again.
        wait_for(lambda: sb.refresh().state == "paused", 20, "the sandbox to pause again")
        assert get(sb, "/tmp/before") == "written before the pause"


def test_idle_pause_and_auto_resume_by_a_files_call(client, files):
    with husk.Sandbox.create(client, idle={"pause_after_idle_s": 1}) as sb:
        sb.write("/tmp/f", b"file")
        wait_for(lambda: sb.refresh().state == "paused", 20, "the idle sandbox to be paused")
        assert sb.read("/tmp/f") == b"file"
        assert sb.stat("/tmp/f")["size"] == 4


def test_idle_delete_after(client):
    sb = husk.Sandbox.create(client, idle={"delete_after_s": 1})

    wait_deleted(client, sb.id, 20, "the idle sandbox to be deleted")


@not_in_server(SNAPSHOT, TEMPLATES, DELETE_TEMPLATE)
def test_snapshot_templates_and_create_from_template(client):
    name = "t-" + uuid.uuid4().hex[:10]
    with husk.Sandbox.create(client) as sb:
        put(sb, "/tmp/in-template", "saved")
        snap = sb.snapshot(name)
        assert snap["template"] == name
        assert snap["image_bytes"] > 0 and snap["pages_bytes"] >= 0
        # The original goes on running.
        assert sb.refresh().state == "running"
        assert sb.exec(["true"]).exit_code == 0
    try:
        t = [t for t in client.templates() if t["name"] == name]
        assert len(t) == 1 and t[0]["image_bytes"] == snap["image_bytes"]
        with husk.Sandbox.create(client, template=name) as child:
            assert get(child, "/tmp/in-template") == "saved"
    finally:
        client.delete_template(name)
    assert name not in [t["name"] for t in client.templates()]
    with pytest.raises(husk.HuskError) as e:
        client.delete_template(name)
    assert e.value.status == 404
    with pytest.raises(husk.HuskError) as e:
        husk.Sandbox.create(client, template=name)
    assert e.value.status in (400, 404)


@not_in_server(SNAPSHOT)
def test_snapshot_bad_names_are_400(sandbox):
    for name in ("", "../up", "a/b", "x" * 100):
        with pytest.raises(husk.HuskError) as e:
            sandbox.snapshot(name)
        assert e.value.status == 400, name


@not_in_server(FORK)
def test_fork(client):
    tag = uuid.uuid4().hex[:8]
    with husk.Sandbox.create(client, labels={"tag": tag}) as sb:
        put(sb, "/tmp/parent", "from the parent")
        kids = sb.fork(count=2, labels={"tag": tag, "kid": "yes"})
        try:
            assert len(kids) == 2
            assert len({k.id for k in kids} | {sb.id}) == 3
            for k in kids:
                assert k.state == "running" and k.labels["kid"] == "yes"
                assert get(k, "/tmp/parent") == "from the parent"
                # Each is its own sandbox: a write in one is not seen in the others.
                put(k, "/tmp/mine", k.id)
            for k in kids:
                assert get(k, "/tmp/mine") == k.id
            assert sb.exec(cmd="test -e /tmp/mine").exit_code == 1
            listed = {s.id for s in client.sandboxes(labels={"tag": tag, "kid": "yes"})}
            assert listed == {k.id for k in kids}
        finally:
            for k in kids:
                k.delete()


def test_idle_hibernate_frees_the_sandbox_and_auto_resume_restores_it(server, client):
    with husk.Sandbox.create(client, idle={"pause_after_idle_s": 1, "hibernate": True}) as sb:
        assert sb.idle["hibernate"] is True and sb.hibernated is False
        put(sb, "/tmp/before", "written before the hibernation")
        # A process with state in memory: a shell counting in a variable, saved and restored.
        sb.exec(cmd="(i=0; while :; do i=$((i+1)); echo $i > /tmp/count; sleep 0.05; done) "
                "</dev/null >/dev/null 2>&1 &").check()
        fp = footprint(server, sb.id)
        assert fp["procs"], "no sentry found for %s" % sb.id
        wait_for(lambda: sb.refresh().state == "paused" and sb.hibernated, 30,
                 "the idle sandbox to hibernate")
        # Its sentry and gofer are gone: nothing of it runs, its memory is freed. The gofer
        # exits once it sees the sentry's socket close, a moment after the checkpoint.
        def alive():
            return [(k, pid) for k, pid, start in fp["procs"]
                    if start is not None and _start_time(pid) == start]
        wait_for(lambda: alive() == [], 10, "the sandbox's processes to end: %s" % alive())
        image = os.path.join(server.state_dir, "sandboxes", sb.id, "hibernate")
        assert os.path.getsize(os.path.join(image, "husk-image.pb")) > 0
        # An exec restores it transparently: files and the counting process are back.
        r = sb.exec(["cat", "/tmp/before"])
        assert r.exit_code == 0 and r.stdout == "written before the hibernation", r
        assert sb.refresh().state == "running" and sb.hibernated is False
        first = int(get(sb, "/tmp/count"))
        wait_for(lambda: int(get(sb, "/tmp/count")) > first, 20,
                 "the counter to go on after the restore")
        assert not os.path.exists(image)
