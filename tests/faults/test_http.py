"""Fault injection over the admin server's HTTP API and the ``kafkette cluster faults`` CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from tests.wire import WireClient

from .test_wire import heartbeat


def call(url: str, method: str, body: Any = None, raw: bytes | None = None) -> tuple[int, Any]:
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture
def admin_broker(kafka_broker_factory):
    b = kafka_broker_factory(**{"admin.listener": "127.0.0.1:0"})
    return b, b.broker.admin.url


def test_post_list_use_and_clear_faults(admin_broker):
    b, url = admin_broker
    status, fault = call(f"{url}/v1/faults", "POST",
                         {"api": "Heartbeat", "error": "REBALANCE_IN_PROGRESS", "count": 2})
    assert status == 201
    assert (fault["api"], fault["error"], fault["error_code"], fault["count"], fault["node"]) == (
        "Heartbeat", "REBALANCE_IN_PROGRESS", 27, 2, None)
    with WireClient(b.bootstrap) as w:
        assert heartbeat(w) == ErrorCode.rebalance_in_progress
        assert call(f"{url}/v1/faults", "GET") == (200, {"faults": [{**fault, "count": 1}]})
        assert call(f"{url}/v1/faults", "DELETE") == (200, {"cleared": 1})
        assert heartbeat(w) != ErrorCode.rebalance_in_progress
    assert call(f"{url}/v1/faults", "GET") == (200, {"faults": []})


@pytest.mark.parametrize(("body", "reason"), [
    (b"{not json", "body is not valid JSON"),
    (b"[1, 2]", "body must be a JSON object"),
    (b'{"error": "NOT_COORDINATOR"}', "field 'api' is required"),
    (b'{"api": "OffsetComit", "error": "NOT_COORDINATOR"}', "unknown api 'OffsetComit'"),
    (b'{"api": "OffsetCommit", "error": "NOT_A_THING"}', "unknown error 'NOT_A_THING'"),
    (b'{"api": "OffsetCommit", "error": "NOT_COORDINATOR", "cout": 2}', "unknown field(s) cout"),
    (b'{"api": "OffsetCommit", "error": "NOT_COORDINATOR", "count": "2"}', "count must be"),
    (b'{"api": "OffsetCommit"}', "a fault needs"),
])
def test_bad_fault_requests_get_400_with_one_line_reason(admin_broker, body, reason):
    b, url = admin_broker
    status, text = call(f"{url}/v1/faults", "POST", raw=body)
    assert status == 400
    assert reason in json.loads(text)["error"] and "\n" not in text.strip()
    assert b.faults() == []


@pytest.mark.parametrize(("method", "path", "body", "status", "reason"), [
    ("POST", "/v1/faults", b"{not json", 400, "body is not valid JSON"),
    ("GET", "/v1/groups/no-such-group", None, 404, "no group 'no-such-group'"),
    ("GET", "/v1/topics/t/partitions/x/records", None, 400, "partition must be an integer"),
    ("GET", "/v1/no-such-thing", None, 404, "Not Found"),
    ("PUT", "/v1/faults", b"{}", 405, "Method Not Allowed"),
])
def test_json_api_errors_are_json(admin_broker, method, path, body, status, reason):
    _, url = admin_broker
    request = urllib.request.Request(f"{url}{path}", data=body, method=method,
                                     headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as failed:
        urllib.request.urlopen(request, timeout=10)
    assert failed.value.code == status
    assert failed.value.headers.get_content_type() == "application/json"
    answer = json.loads(failed.value.read())
    assert list(answer) == ["error"] and reason in answer["error"]


def kafkette(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkette.broker", *args], capture_output=True,
                          text=True, timeout=60)


def test_cli_adds_lists_and_clears_faults(admin_broker):
    b, url = admin_broker
    added = kafkette("cluster", "faults", "add", "OffsetCommit", "NOT_COORDINATOR", "--count", "3",
                     "--admin", url)
    assert added.returncode == 0, added.stderr
    assert "OffsetCommit" in added.stdout and "NOT_COORDINATOR" in added.stdout
    kafkette("cluster", "faults", "add", "Fetch", "--delay-ms", "50", "--admin", url)
    assert [(f["api"], f["count"]) for f in b.faults()] == [("OffsetCommit", 3), ("Fetch", 1)]
    listed = kafkette("cluster", "faults", "list", "--admin", url)
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == 2
    assert "delay 50 ms" in listed.stdout
    cleared = kafkette("cluster", "faults", "clear", "--admin", url)
    assert cleared.stdout.strip() == "cleared 2 fault(s)"
    assert b.faults() == []


def test_cli_reports_a_bad_name_and_an_unreachable_server_in_one_line(admin_broker):
    _, url = admin_broker
    bad = kafkette("cluster", "faults", "add", "Nope", "NOT_COORDINATOR", "--admin", url)
    assert bad.returncode == 1 and "unknown api 'Nope'" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    down = kafkette("cluster", "faults", "list", "--admin", "127.0.0.1:1")
    assert down.returncode == 1 and "cannot reach the admin server" in down.stderr


@pytest.mark.parametrize(("body", "reason"), [
    (b"\xff\xfe{}", "body is not UTF-8"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (b'{"api": "Fetch", "delay_ms": 2147483648}', "delay_ms must be an integer from 0 to"),
    (b'{"api": "Fetch", "delay_ms": -1}', "delay_ms must be an integer from 0 to"),
    (b'{"api": "Fetch", "throttle_ms": 99999999999999}', "throttle_ms must be an integer from"),
    (b'{"api": "Fetch", "throttle_ms": -5}', "throttle_ms must be an integer from 0 to"),
])
def test_malformed_bodies_and_out_of_range_values_get_a_json_400(admin_broker, body, reason):
    b, url = admin_broker
    status, text = call(f"{url}/v1/faults", "POST", raw=body)
    assert status == 400, text
    assert reason in json.loads(text)["error"]
    assert b.faults() == []
    assert call(f"{url}/v1/faults", "GET") == (200, {"faults": []})  # still serving


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8080", "127.0.0.1.evil.example",
                                  "localhost.evil.example"])
def test_foreign_host_headers_are_refused(admin_broker, host):
    _, url = admin_broker
    for path, method in (("/v1/faults", "POST"), ("/v1/groups", "GET"), ("/metrics", "GET"),
                         ("/", "GET")):
        request = urllib.request.Request(f"{url}{path}", method=method, headers={"Host": host},
                                         data=b'{"api": "Fetch", "delay_ms": 1}'
                                         if method == "POST" else None)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 403
        assert "is not allowed" in json.loads(refused.value.read())["error"]


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::1]", "localhost:1234",
                                  "127.0.0.1:9"])
def test_local_host_headers_are_served(admin_broker, host):
    _, url = admin_broker
    request = urllib.request.Request(f"{url}/v1/faults", headers={"Host": host})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def _refusal(request: urllib.request.Request) -> tuple[int, str]:
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    return refused.value.code, json.loads(refused.value.read())["error"]


def test_state_changes_from_other_origins_or_without_json_are_refused(admin_broker):
    """A web page elsewhere cannot inject faults or stop nodes: a cross-origin state change is
    refused whatever its body, and a body must be declared JSON (which a page of another origin
    cannot send without the browser asking first); the console's origin and curl still work."""
    _, url = admin_broker
    fault = b'{"api": "Fetch", "delay_ms": 1}'
    for origin in ("http://evil.example", "http://localhost:1", "null"):
        for ctype in ("text/plain", "application/json"):
            code, reason = _refusal(urllib.request.Request(
                f"{url}/v1/faults", data=fault, method="POST",
                headers={"Origin": origin, "Content-Type": ctype}))
            assert code == 403 and "cross-origin" in reason
    code, reason = _refusal(urllib.request.Request(
        f"{url}/v1/faults", data=fault, method="POST", headers={"Content-Type": "text/plain"}))
    assert code == 415 and "application/json" in reason
    assert call(f"{url}/v1/faults", "GET")[1]["faults"] == []
    same_origin = urllib.request.Request(f"{url}/v1/faults", data=fault, method="POST",
                                         headers={"Origin": url, "Content-Type": "application/json"})
    with urllib.request.urlopen(same_origin, timeout=10) as response:
        assert response.status == 201
    assert len(call(f"{url}/v1/faults", "GET")[1]["faults"]) == 1
    assert call(f"{url}/v1/faults", "DELETE")[0] == 200


def test_admin_token_is_asked_of_every_request(kafka_broker_factory):
    import base64

    broker = kafka_broker_factory(**{"admin.listener": "127.0.0.1:0", "admin.auth.token": "s3cret"})
    url = broker.broker.admin.url
    code, reason = _refusal(urllib.request.Request(f"{url}/v1/faults"))
    assert code == 401 and "admin.auth.token" in reason
    code, _ = _refusal(urllib.request.Request(f"{url}/metrics",
                                              headers={"Authorization": "Bearer wrong"}))
    assert code == 401
    with urllib.request.urlopen(urllib.request.Request(
            f"{url}/v1/faults", headers={"Authorization": "Bearer s3cret"}), timeout=10) as ok:
        assert json.loads(ok.read()) == {"faults": []}
    basic = base64.b64encode(b"anyone:s3cret").decode()
    with urllib.request.urlopen(urllib.request.Request(
            f"{url}/", headers={"Authorization": f"Basic {basic}"}), timeout=10) as page:
        assert page.status == 200  # the console, after the browser asked for the token once
