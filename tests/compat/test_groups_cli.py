"""``kafkette groups``: list, describe, delete and reset-offsets against a real broker."""

from __future__ import annotations

import subprocess
import sys

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from kafkette.broker.admin_cli import AdminClient, decode_assignment
from kafkette.broker.cli import main
from tests.compat.kafka_python import join, produce
from tests.tools import ROOT

TOPIC, GROUP = "cli-topic", "cli-group"


@pytest.fixture
def broker(kafka_broker_factory):
    broker = kafka_broker_factory(**{"num.partitions": 3})
    broker.run(broker.broker.logs.create_topic(TOPIC, 3))
    produce(broker.bootstrap, TOPIC, 30)
    return broker


@pytest.fixture
def member(broker):
    """A live member of GROUP owning all 3 partitions, with commits 10, 5 and none."""
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=GROUP,
                             client_id="cli-client", enable_auto_commit=False,
                             session_timeout_ms=6000, heartbeat_interval_ms=500)
    join(consumer, TOPIC)
    assert len(consumer.assignment()) == 3
    consumer.commit({TopicPartition(TOPIC, 0): OffsetAndMetadata(10, "", -1),
                     TopicPartition(TOPIC, 1): OffsetAndMetadata(5, "", -1)})
    yield consumer
    consumer.close()


def groups(capsys, bootstrap: str, *args: str) -> tuple[int, list[list[str]]]:
    code = main(["groups", "--bootstrap-server", bootstrap, *args])
    out = capsys.readouterr().out
    return code, [line.split() for line in out.splitlines() if line.strip()]


def test_describe_live_group_shows_lag_and_owner(capsys, broker, member) -> None:
    code, lines = groups(capsys, broker.bootstrap, "describe", GROUP)
    assert code == 0
    assert lines[0] == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                        "CONSUMER-ID", "HOST", "CLIENT-ID"]
    rows = {int(r[2]): r for r in lines[1:]}
    assert sorted(rows) == [0, 1, 2]
    assert rows[0][:6] == [GROUP, TOPIC, "0", "10", "10", "0"]
    assert rows[1][:6] == [GROUP, TOPIC, "1", "5", "10", "5"]
    assert rows[2][:6] == [GROUP, TOPIC, "2", "-", "10", "-"]
    for r in rows.values():
        assert r[6].startswith("cli-client-") and r[7] == "/127.0.0.1" and r[8] == "cli-client"


def test_list_and_state(capsys, broker, member) -> None:
    code, lines = groups(capsys, broker.bootstrap, "list")
    assert code == 0 and [GROUP] in lines
    code, lines = groups(capsys, broker.bootstrap, "list", "--state")
    assert code == 0 and [GROUP, "Stable"] in lines


def test_reset_offsets_needs_an_inactive_group(capsys, broker, member) -> None:
    code, lines = groups(capsys, broker.bootstrap, "reset-offsets", GROUP, "--all-topics",
                         "--to-earliest", "--execute")
    assert code == 1
    assert "inactive" in " ".join(lines[0]) and "Stable" in " ".join(lines[0])


def test_delete_refuses_a_live_group_then_deletes(capsys, broker, member) -> None:
    code, lines = groups(capsys, broker.bootstrap, "delete", GROUP)
    assert code == 1 and "NON_EMPTY_GROUP" in " ".join(lines[-1])
    member.close()
    code, lines = groups(capsys, broker.bootstrap, "describe", GROUP)
    assert code == 0 and " ".join(lines[0]) == f"Consumer group '{GROUP}' has no active members."
    code, lines = groups(capsys, broker.bootstrap, "delete", GROUP)
    assert code == 0 and "successful" in " ".join(lines[0])
    code, lines = groups(capsys, broker.bootstrap, "list")
    assert [GROUP] not in lines


def test_reset_offsets(capsys, broker, member) -> None:
    member.close()
    with AdminClient(broker.bootstrap) as admin:
        before = admin.committed(GROUP)
    # Dry run by default: prints the plan, commits nothing.
    code, lines = groups(capsys, broker.bootstrap, "reset-offsets", GROUP, "--topic", TOPIC,
                         "--to-earliest")
    assert code == 0 and lines[1:4] == [[GROUP, TOPIC, str(p), "0"] for p in range(3)]
    with AdminClient(broker.bootstrap) as admin:
        assert admin.committed(GROUP) == before
    cases = [
        (["--topic", f"{TOPIC}:0,1", "--shift-by", "-3"], {0: 7, 1: 2}),
        (["--topic", f"{TOPIC}:2", "--to-offset", "4"], {0: 7, 1: 2, 2: 4}),
        (["--topic", f"{TOPIC}:1", "--to-offset", "99"], {0: 7, 1: 10, 2: 4}),  # clamped
        (["--all-topics", "--to-latest"], {0: 10, 1: 10, 2: 10}),
        (["--topic", TOPIC, "--to-datetime", "2000-01-01T00:00:00"], {0: 0, 1: 0, 2: 0}),
    ]
    for args, expected in cases:
        code, _lines = groups(capsys, broker.bootstrap, "reset-offsets", GROUP, *args, "--execute")
        assert code == 0, args
        with AdminClient(broker.bootstrap) as admin:
            assert admin.committed(GROUP) == {(TOPIC, p): o for p, o in expected.items()}, args
    # A consumer of the group starts where the reset put it.
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=GROUP,
                             enable_auto_commit=False)
    consumer.partitions_for_topic(TOPIC)
    consumer.subscribe([TOPIC])
    try:
        seen: list = []
        for _ in range(20):
            for records in consumer.poll(timeout_ms=1000).values():
                seen += records
            if len(seen) >= 30:
                break
        assert len(seen) == 30
    finally:
        consumer.close()


def test_unknown_group_and_unreachable_broker(capsys, broker) -> None:
    code, lines = groups(capsys, broker.bootstrap, "describe", "no-such-group")
    assert code == 1 and "does not exist" in " ".join(lines[0])
    code = main(["groups", "--bootstrap-server", "127.0.0.1:1", "list"])
    assert code == 1 and "cannot connect" in capsys.readouterr().err


def test_console_script_entry_point(broker, member) -> None:
    proc = subprocess.run([sys.executable, "-m", "kafkette.broker", "groups", "--bootstrap-server",
                           broker.bootstrap, "describe", GROUP], capture_output=True, text=True,
                          timeout=30, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "CURRENT-OFFSET" in proc.stdout and TOPIC in proc.stdout


def test_decode_assignment() -> None:
    data = (b"\x00\x01" + b"\x00\x00\x00\x02"
            + b"\x00\x01a" + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x03"
            + b"\x00\x01b" + b"\x00\x00\x00\x00" + b"\xff\xff\xff\xff")
    assert decode_assignment(data) == [("a", 0), ("a", 3)]
    assert decode_assignment(b"") == [] and decode_assignment(b"\x00\x01\x00\x00\x00\x05") == []
