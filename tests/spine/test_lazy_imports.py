"""Start-up imports only what the first requests need (spawn -> first ApiVersions answer).

Handler modules load when their API is first requested, the coordinators when they start (after
the listener is up), the admin server's libraries only when it is configured. These run in a
fresh interpreter each: what one test imported must not hide what another would import.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kafkette.broker.registry import ROUTES, load_all
from kafkette.broker.routes import REGISTERED, TABLE

# Never imported by ``kafkette serve`` before the broker listens.
HEAVY = ("aiohttp", "prometheus_client", "kafkette.broker.admin.http_server", "kafkette.broker.handlers.",
         "kafkette.coordinator.group.group_service", "kafkette.coordinator.transaction",
         "kafkette.coordinator.group.classic", "kafkette.coordinator.group.consumer.heartbeat",
         "kafkette.protocol.consumer_protocol", "kafkette.protocol.consumer_group_records",
         "kafkette.pipeline", "kafkette.broker.cli.groups_command",
         "kafkette.broker.cli.cluster_command", "kafkette.broker.cli.admin_client",
         "kafkette.broker.cli.transactions_command", "kafkette.broker.cli.topics_command",
         "kafkette.broker.cli.console_producer", "kafkette.broker.cli.console_consumer",
         "kafkette.broker.cli.group_admin", "confluent_kafka",
         "kio.schema.metadata", "kio.schema.join_group",
         "kio.schema.consumer_protocol", "pyspark", "re2")


def modules_after(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", f"{code}\nimport sys, json\n"
                          "print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h if h.endswith(".") else h + ".")
                                      for h in HEAVY)]


def test_what_serve_imports_before_listening_is_light():
    assert heavy(modules_after("import kafkette.broker.cli.main, kafkette.broker.server")) == []


# Not imported by ``kafkette serve`` until its listeners are up and answer ApiVersions
# (broker/boot.py): the broker itself loads in a thread after.
AFTER_LISTENING = ("kafkette.broker.server", "kafkette.broker.connection", "kafkette.storage.topics",
                   "kafkette.storage.log", "kafkette.protocol.codec", "kafkette.coordinator.runtime",
                   "kio.schema", "kio.serial", "kafkette.broker.cli.transactions_command")


def test_serve_answers_api_versions_before_importing_the_broker(tmp_path):
    code = f"""
import asyncio, json, sys
from kafkette.broker.cli import main as cli_main

listen_early = cli_main.listen_early

async def bound_then_asked(config):
    early = await listen_early(config)
    host, port = early["PLAINTEXT"].server.sockets[0].getsockname()[:2]
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(bytes.fromhex("0000000f0012000000000007000562656e6368"))  # ApiVersions v0
    head = await reader.readexactly(8)
    assert head[4:] == bytes.fromhex("00000007"), head
    print(json.dumps(sorted(sys.modules)))
    sys.exit(0)

cli_main.listen_early = bound_then_asked
cli_main.main(["serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
          "--override", "log.dirs={tmp_path}"])
"""
    modules = modules_after(code)
    assert "kafkette.broker.boot" in modules
    assert heavy(modules) == []
    assert [m for m in modules if any(m == a or m.startswith(a + ".")
                                      for a in AFTER_LISTENING)] == []
    assert [m for m in modules if m == "kio" or m.startswith("kio.")] == []


def test_the_broker_boot_loads_kio_without_hypothesis():
    # broker/cli/main.py hides hypothesis (~170 ms) while kio's primitive types load.
    pytest.importorskip("hypothesis")
    modules = modules_after("from kafkette.broker.cli.main import _import_broker\n_import_broker()")
    assert "kafkette.broker.server" in modules and "hypothesis" not in modules
    assert "hypothesis" in modules_after("import kio.schema.errors")  # what it saves


def test_importing_the_protocol_package_changes_no_import_machinery():
    code = ("import sys\nbefore = list(sys.meta_path)\nimport kafkette.protocol.codec\n"
            "assert sys.meta_path == before, sys.meta_path")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_broker_started_in_process_loads_no_handler_until_asked(tmp_path):
    code = f"""
import asyncio, socket
from kafkette.broker.server import Broker
from kafkette.protocol.codec import encode_request, request_type
from kafkette.protocol.build import make

async def main():
    broker = Broker({{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": {str(tmp_path)!r}}})
    await broker.start()
    host, port = broker.bound
    def ask():
        with socket.create_connection((host, port)) as s:
            s.sendall(encode_request(18, 3, 1, "t", make(request_type(18, 3),
                      client_software_name="t", client_software_version="1")))
            size = int.from_bytes(s.recv(4), "big")
            while size > 0:
                size -= len(s.recv(size))
    await asyncio.to_thread(ask)
    await broker.stop()

asyncio.run(main())
"""
    modules = modules_after(code)
    assert "kafkette.broker.api_versions" in modules
    assert [m for m in modules if m.startswith("kafkette.broker.handlers.")] == []
    assert "aiohttp" not in modules and "prometheus_client" not in modules


def test_the_pytest_plugin_is_cheap_to_import():
    # Loaded (entry point pytest11) in every project that installs kafkette, used or not.
    modules = modules_after("import kafkette.broker.testing")
    assert heavy(modules) == []
    assert "kafkette.storage.log" not in modules and "kio.serial" not in modules


def test_the_route_table_matches_every_handler():
    load_all()
    for key, route in ROUTES.items():
        assert route.loaded, key
        handler = REGISTERED[key]
        assert route.handler is handler and handler.__module__ == TABLE[key][3]
        assert (route.min_version, route.max_version, route.min_accepted) == TABLE[key][:3]


def test_the_small_varint_table_is_the_varint_encoding():
    # protocol/varint.py builds it by formula (it was a noticeable part of import time).
    from kafkette.protocol.varint import SMALL_VARINTS, varint_bytes

    assert tuple(varint_bytes(n) for n in range(8192)) == SMALL_VARINTS


KIP848 = ("kafkette.coordinator.group.consumer.consumer_manager",
          "kafkette.coordinator.group.consumer.heartbeat",
          "kafkette.coordinator.group.consumer.consumer_group_state",
          "kafkette.coordinator.group.consumer.member",
          "kafkette.protocol.consumer_group_records", "kafkette.protocol.consumer_protocol",
          "kio.schema.consumer_protocol_subscription")


def test_simple_groups_load_no_consumer_group_machinery():
    # a restart replaying simple groups' offsets never needs KIP-848 consumer groups
    # nor the consumer-protocol codecs; the first consumer-group record brings them in.
    code = """
import sys
from kafkette.coordinator.group.group_config import CoordinatorConfig
from kafkette.coordinator.group.group_shard import GroupCoordinatorShard
from kafkette.coordinator.group.offsets.offset_manager import CommitPartition
from kafkette.coordinator.group.requests import OffsetCommitRequest
from kafkette.protocol.group_records import encode_offset_key, encode_offset_value

KIP848 = KIP848_MODULES

class Context:
    writes_failing = False
    def now_ms(self): return 1000
    def schedule(self, key, delay_ms, op): pass
    def cancel(self, key): pass

def loaded():
    return [m for m in sys.modules if any(m == k or m.startswith(k + ".") for k in KIP848)]

shard = GroupCoordinatorShard(0, Context(), CoordinatorConfig())
shard.replay_all([(encode_offset_key("g", "t", p), encode_offset_value(p, -1, "", 1, None))
                  for p in range(3)] + [(b"\\x00\\x02\\x00\\x01h", None)])
shard.on_loaded()
result = shard.commit_offsets((OffsetCommitRequest("g", -1, "", None, -1, 8),
                               [CommitPartition("t", 0, 7, -1, "")]))
shard.replay_all(result.records)
assert shard.fetch_offsets("g", [("t", [0, 1])])[0][1][0][1] == 7
assert shard.list_groups(set(), set()) == [("g", "", "Empty", "classic")]
assert shard.consumer_groups == {} and shard.describe_group("g", 5).group_id == "g"
shard.cleanup_group_metadata()
assert loaded() == [], loaded()
from kafkette.protocol import consumer_group_records as cgr
shard.replay(cgr.encode_key(cgr.ConsumerGroupMetadataKey("c")),
             cgr.encode_value(cgr.ConsumerGroupMetadataValue(3)))
assert list(shard.consumer_groups) == ["c"], shard.consumer_groups
assert "kafkette.coordinator.group.consumer.consumer_manager" in sys.modules
"""
    subprocess.run([sys.executable, "-c", f"KIP848_MODULES = {KIP848!r}\n{code}"], check=True, timeout=60)
