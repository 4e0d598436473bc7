"""End to end across a broker SIGKILL (confluent-kafka ShareConsumer, real broker process):
records ACCEPTed before the kill (reply received) are never delivered again; records held at
the kill come back, to a new consumer, and the share-partition start offset moves on from the
persisted state. Needs ShareFetch/ShareAcknowledge (broker/share, branch share-fetch)."""

from __future__ import annotations

import time

import pytest

from kafkette.broker.cli.main import main
from kafkette.broker.routes import TABLE
from kafkette.broker.testing import BrokerProcess
from kafkette.broker.testing import test_config as broker_config

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import (  # noqa: E402
    AcknowledgeType,
    Producer,
    ShareConsumer,
)
from confluent_kafka.admin import (  # noqa: E402
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

pytestmark = pytest.mark.skipif(78 not in TABLE, reason="ShareFetch is not served (share-fetch)")
GROUP, TOPIC = "restart-workers", "restart-jobs"


def _setup(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
    resource = ConfigResource(ResourceType.GROUP, GROUP, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest",
                    incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(10):  # one record per batch: acquisition is batch-aligned
        producer.produce(TOPIC, value=f"job-{i}".encode())
        producer.flush(10)


def _consumer(bootstrap: str, name: str, max_poll: int) -> ShareConsumer:
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": name,
                       "share.acknowledgement.mode": "explicit",
                       "max.poll.records": max_poll})
    c.subscribe([TOPIC])
    return c


def _poll(c: ShareConsumer, deadline: float) -> list:
    while time.monotonic() < deadline:
        msgs = [m for m in c.poll(0.5) if not m.error()]
        if msgs:
            return msgs
    raise AssertionError("no records before the deadline")


def test_acknowledged_records_survive_a_broker_sigkill(tmp_path, capsys) -> None:
    config = broker_config(str(tmp_path), **{
        "share.coordinator.state.topic.num.partitions": 3, "offsets.topic.num.partitions": 2})
    with BrokerProcess(config) as proc:
        _setup(proc.bootstrap)
        first = _consumer(proc.bootstrap, "first", 5)
        accepted: list[int] = []
        deadline = time.monotonic() + 60
        while len(accepted) < 5:
            for m in _poll(first, deadline):
                first.acknowledge(m, AcknowledgeType.ACCEPT)
                accepted.append(m.offset())
            result = first.commit_sync(10.0) or {}
            assert all(v is None for v in result.values()), result
        assert sorted(accepted) == [0, 1, 2, 3, 4]
        held = [m.offset() for m in _poll(first, deadline)]  # acquired, never acknowledged
        assert held and min(held) == 5

        proc.kill()  # SIGKILL: no shutdown
        proc.start()
        second = _consumer(proc.bootstrap, "second", 10)
        seen: dict[int, int] = {}
        deadline = time.monotonic() + 60
        while len(seen) < 5:
            for m in _poll(second, deadline):
                seen[m.offset()] = m.delivery_count()
                second.acknowledge(m, AcknowledgeType.ACCEPT)
            second.commit_sync(10.0)
        # exactly the records not acknowledged before the kill; acquisition is not persisted,
        # so a record never acknowledged restarts at delivery count 1 (as Kafka)
        assert sorted(seen) == [5, 6, 7, 8, 9]
        assert all(count == 1 for count in seen.values())
        second.close()
        first.close()

        capsys.readouterr()
        assert main(["share-groups", "--bootstrap-server", proc.bootstrap, "--describe",
                     "--group", GROUP]) == 0
        rows = [line.split() for line in capsys.readouterr().out.splitlines() if line]
        assert rows == [["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"],
                        [GROUP, TOPIC, "0", "10", "0"]]
