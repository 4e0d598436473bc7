"""The admin server's lifecycle and its answers to bad requests."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from kafkette.broker.config_def import ConfigError
from kafkette.broker.server import Broker

from .conftest import GROUP, TOPIC, LiveGroup, get, get_json


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_serve_with_admin_prints_its_url_and_serves(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "kafkette.broker", "serve", "--admin", "127.0.0.1:0",
         "--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", f"log.dirs={tmp_path}"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("kafkette listening on 127.0.0.1:")
        line = proc.stdout.readline().strip()
        assert line.startswith("kafkette admin on http://127.0.0.1:")
        url = line.rsplit(" ", 1)[1]
        assert b"kafkette_active_connections" in get(f"{url}/metrics")
        assert b"Consumer groups" in get(f"{url}/")
    finally:
        proc.terminate()
        assert proc.wait(20) == 0


async def test_admin_is_off_by_default(tmp_path):
    async with Broker({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path)}) as b:
        assert b.admin is None
        assert not b.stats.per_request  # and the request path does not time requests


@pytest.mark.parametrize("address", ["nonsense", "127.0.0.1:http", "127.0.0.1"])
async def test_a_bad_admin_listener_is_a_clear_config_error(tmp_path, address):
    with pytest.raises(ConfigError, match="admin.listener"):
        Broker({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path),
                "admin.listener": address})


async def test_unknown_and_malformed_requests_get_http_errors(live_group: LiveGroup):
    url = live_group.url
    checks = {
        f"{url}/v1/groups/no-such-group": 404,
        f"{url}/v1/topics/no-such-topic/partitions/0/records": 404,
        f"{url}/v1/topics/{TOPIC}/partitions/9/records": 404,
        f"{url}/v1/topics/{TOPIC}/partitions/x/records": 400,
        f"{url}/v1/topics/{TOPIC}/partitions/0/records?limit=lots": 400,
        f"{url}/v1/groups/{GROUP}/events?after=-x": 400,
        f"{url}/topics/no-such-topic": 404,
        f"{url}/nowhere": 404,
    }
    got = {u: await asyncio.to_thread(status, u) for u in checks}
    assert got == checks
    # the server keeps serving everyone else
    assert get_json(f"{url}/v1/groups")[0]["group_id"] == GROUP
    page = get(f"{url}/groups/no-such-group").decode()
    assert "No group no-such-group" in page


async def test_records_endpoint_limits_and_encodes(live_group: LiveGroup):
    url = live_group.url
    body = get_json(f"{url}/v1/topics/{TOPIC}/partitions/0/records?limit=2")
    end = live_group.end_offsets[0]
    assert [r["offset"] for r in body["records"]] == [end - 2, end - 1]
    newest = body["records"][-1]
    assert newest["value"]["text"] == live_group.produced_value.decode()
    assert newest["value"]["hex"] == live_group.produced_value.hex()
    assert {h["key"]: (h["value"]["text"], h["value"]["hex"]) for h in newest["headers"]} == {
        "source": ("checkout", b"checkout".hex()), "raw": (None, "00ff")}
    everything = get_json(f"{url}/v1/topics/{TOPIC}/partitions/0/records?limit=100000")
    assert [r["offset"] for r in everything["records"]] == list(range(end))


def test_serve_with_a_bad_admin_address_exits_with_a_clear_error(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "kafkette.broker", "serve", "--admin", "localhost",
         "--override", f"log.dirs={tmp_path}"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "admin.listener 'localhost' must look like HOST:PORT" in done.stderr


USER_TEST = '''
import urllib.request

def test_a_user_test(kafka_broker, kafka_broker_factory):
    broker = kafka_broker_factory()
    with urllib.request.urlopen(broker.broker.admin.url + "/metrics") as response:
        assert b"kafkette_active_connections" in response.read()
'''


def test_pytest_option_gives_fixture_brokers_a_console(tmp_path):
    (tmp_path / "test_user.py").write_text(USER_TEST)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--kafkette-admin", "test_user.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:]
    # both fixture brokers (kafka_broker and the factory's) announced their console
    assert done.stdout.count("kafkette console for 127.0.0.1:") == 2
