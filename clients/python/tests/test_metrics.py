# SPDX-License-Identifier: Apache-2.0
"""GET /metrics: counters that move, sandboxes by state, per-sandbox series."""

import husk
from conftest import not_in_server


def test_exec_total_and_creations_move(client):
    m0 = client.metrics()
    execs0 = m0.get("husk_exec_total")
    made0 = m0.get("husk_sandbox_creations_total")
    assert execs0 is not None, "no husk_exec_total in:\n" + m0.text[:2000]
    assert made0 is not None
    with husk.Sandbox.create(client) as sb:
        for _ in range(3):
            sb.exec(["true"])
        m1 = client.metrics()
        assert m1.get("husk_exec_total") == execs0 + 3
        assert m1.get("husk_sandbox_creations_total") == made0 + 1
        assert m1.types.get("husk_exec_total") == "counter"
        # The latency histogram counted them.
        assert m1.get("husk_exec_duration_seconds_count") - \
            (m0.get("husk_exec_duration_seconds_count") or 0) == 3
        assert m1.types.get("husk_exec_duration_seconds") == "histogram"
        buckets = m1.select("husk_exec_duration_seconds_bucket")
        inf = [v for k, v in buckets.items() if ("le", "+Inf") in k]
        assert inf == [m1.get("husk_exec_duration_seconds_count")]
        # Per-sandbox series carry its id.
        assert m1.get("husk_sandbox_syscalls_total", sandbox=sb.id) > 0
        assert m1.get("husk_sandbox_memory_bytes", sandbox=sb.id) > 0
        cpu = m1.select("husk_sandbox_cpu_seconds_total", sandbox=sb.id)
        assert {dict(k)["mode"] for k in cpu} == {"user", "system"}
        assert m1.select("husk_sandbox_faults_total", sandbox=sb.id)
        running = m1.get("husk_sandboxes", state="running")
        assert running is not None and running >= 1
    m2 = client.metrics()
    assert not m2.select("husk_sandbox_syscalls_total", sandbox=sb.id)


@not_in_server(("metric", "husk_sandbox_gofer_ops_total"),
               ("metric", "husk_sandbox_gofer_bytes_total"),
               ("metric", "husk_sandbox_egress_connections_total"))
def test_per_sandbox_gofer_and_egress_series(client):
    with husk.Sandbox.create(client) as sb:
        sb.exec(["cat", "/etc/os-release"]).check()
        m = client.metrics()
        assert m.get("husk_sandbox_gofer_ops_total", sandbox=sb.id) > 0
        assert m.get("husk_sandbox_gofer_bytes_total", sandbox=sb.id) > 0
        eg = m.select("husk_sandbox_egress_connections_total", sandbox=sb.id)
        assert {dict(k)["verdict"] for k in eg} == {"allowed", "denied"}
        denied = m.get("husk_sandbox_egress_connections_total", sandbox=sb.id, verdict="denied")
        # A connect off the loopback (network mode none): refused, and counted.
        r = sb.exec(["python3", "-c", "import socket; print(socket.socket().connect_ex("
                     "('10.255.255.1', 80)))"])
        assert r.exit_code == 0 and r.stdout.strip() != "0", r
        m2 = client.metrics()
        assert m2.get("husk_sandbox_egress_connections_total", sandbox=sb.id,
                      verdict="denied") == denied + 1
        assert sb.refresh().usage["egress_denied"] == denied + 1
