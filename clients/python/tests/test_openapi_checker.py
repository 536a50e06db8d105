# SPDX-License-Identifier: Apache-2.0
"""The checker of replies against docs/api.yaml catches what it should, and the document has
every operation of the contract (/work/wt/api-contract.md, issue 14)."""

import husk

# Every operation the contract names.
CONTRACT = {
    ("POST", "/v1/sandboxes"), ("GET", "/v1/sandboxes"),
    ("GET", "/v1/sandboxes/{id}"), ("DELETE", "/v1/sandboxes/{id}"),
    ("POST", "/v1/sandboxes/{id}/exec"),
    ("PUT", "/v1/sandboxes/{id}/files"), ("GET", "/v1/sandboxes/{id}/files"),
    ("GET", "/v1/sandboxes/{id}/files/stat"), ("GET", "/v1/sandboxes/{id}/files/list"),
    ("PUT", "/v1/sandboxes/{id}/files/tar"), ("GET", "/v1/sandboxes/{id}/files/tar"),
    ("POST", "/v1/sandboxes/{id}/pause"), ("POST", "/v1/sandboxes/{id}/resume"),
    ("POST", "/v1/sandboxes/{id}/snapshot"), ("POST", "/v1/sandboxes/{id}/fork"),
    ("GET", "/v1/templates"), ("DELETE", "/v1/templates/{name}"),
    ("GET", "/v1/sandboxes/{id}/logs"), ("GET", "/v1/sandboxes/{id}/logs/{exec_id}"),
    ("GET", "/v1/sandboxes/{id}/logs/sandbox"),
    ("GET", "/metrics"),
}


def test_document_has_every_operation_of_the_contract(spec):
    missing = CONTRACT - spec.operations()
    assert not missing, "docs/api.yaml lacks %s" % sorted(missing)


def test_routes_prefer_literal_segments(spec):
    assert spec.route("/v1/sandboxes/sb-0123456789ab/logs/sandbox")[0] == \
        "/v1/sandboxes/{id}/logs/sandbox"
    assert spec.route("/v1/sandboxes/sb-0123456789ab/logs/ex-0123456789ab")[0] == \
        "/v1/sandboxes/{id}/logs/{exec_id}"
    assert spec.route("/v1/sandboxes/sb-0123456789ab/files/tar")[0] == \
        "/v1/sandboxes/{id}/files/tar"
    assert spec.route("/v2/nothing") == (None, None)


GOOD_SANDBOX = {
    "id": "sb-0123456789ab", "state": "running", "created": "2026-01-02T03:04:05Z",
    "last_active": "2026-01-02T03:04:05.5Z", "labels": {"a": "b"}, "idempotency_key": None,
    "rootfs": "/", "timeout_s": None,
    "idle": {"pause_after_idle_s": None, "auto_resume": True, "delete_after_s": None},
    "usage": {"cpu_user_s": 0.0, "cpu_system_s": 0.1, "wall_active_s": 1, "memory_bytes": 1,
              "memory_peak_bytes": 2, "pids": 1, "syscalls": 10, "faults": 0},
}


def _sandbox_schema(spec):
    return spec.response_schema("GET", "/v1/sandboxes/sb-0123456789ab", 200,
                                "application/json")[1]


def test_a_conforming_sandbox_passes(spec):
    assert spec.validate(GOOD_SANDBOX, _sandbox_schema(spec)) == []


def test_checker_catches_a_missing_required_field(spec):
    bad = dict(GOOD_SANDBOX)
    del bad["usage"]
    errs = spec.validate(bad, _sandbox_schema(spec))
    assert any("usage" in e and "missing" in e for e in errs), errs


def test_checker_catches_wrong_types_nulls_and_enums(spec):
    schema = _sandbox_schema(spec)
    for field, value, word in (("labels", [], "list"), ("state", "sleeping", "not one of"),
                               ("created", "yesterday", "RFC 3339"), ("rootfs", None, "null"),
                               ("id", "sb-XYZ", "does not match")):
        bad = dict(GOOD_SANDBOX, **{field: value})
        errs = spec.validate(bad, schema)
        assert any(word in e and field in e for e in errs), (field, errs)
    bad = dict(GOOD_SANDBOX, usage=dict(GOOD_SANDBOX["usage"], pids=1.5))
    assert any("usage.pids" in e for e in spec.validate(bad, schema))
    bad = dict(GOOD_SANDBOX, labels={"a": 1})
    assert any("labels.a" in e for e in spec.validate(bad, schema))


def test_checker_finds_error_replies_and_their_codes(spec):
    _, schema = spec.response_schema("GET", "/v1/sandboxes/sb-0123456789ab", 404,
                                     "application/json")
    assert spec.validate({"error": {"code": "not_found", "message": "no such"}}, schema) == []
    assert spec.validate({"error": {"code": "nope", "message": "x"}}, schema) != []
    assert spec.validate({"message": "x"}, schema) != []


def test_metrics_parser():
    m = husk.Metrics('# TYPE husk_exec_total counter\nhusk_exec_total 3\n'
                     'husk_sandboxes{state="running"} 2\n'
                     'husk_x{a="q\\"uote",b="2"} 1.5e3\n')
    assert m.get("husk_exec_total") == 3
    assert m.get("husk_sandboxes", state="running") == 2
    assert m.get("husk_x", a='q"uote', b="2") == 1500
    assert m.types["husk_exec_total"] == "counter"
