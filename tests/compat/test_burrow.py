"""Burrow reads kafkette's ``__consumer_offsets`` and log-end offsets and reports a group's lag."""

from __future__ import annotations

import time

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from tests.compat.burrow import Burrow, accepts_list_offsets_v0
from tests.compat.kafka_python import join, produce
from tests.tools import ensure_burrow, ensure_zookeeper

TOPIC, GROUP = "burrow-topic", "burrow-group"


def burrow_tools() -> tuple[str, str]:
    burrow, reason = ensure_burrow()
    if burrow is None:
        pytest.skip(f"burrow unavailable: {reason}")
    zookeeper, reason = ensure_zookeeper()
    if zookeeper is None:
        pytest.skip(f"burrow unavailable: {reason}")
    return burrow, zookeeper


@pytest.mark.parametrize("tool", ["burrow"])
def test_lag(tool: str, kafka_broker_factory) -> None:
    broker = kafka_broker_factory(**{"num.partitions": 3})
    if not accepts_list_offsets_v0(broker.bootstrap):
        pytest.skip("Burrow 1.2.1 reads log-end offsets with ListOffsets v0, which kafkette, like "
                    "Apache Kafka 4.0 (KIP-896), no longer serves (linkedin/Burrow#843)")
    tools = burrow_tools()  # installs only when the scenario can run
    broker.run(broker.broker.logs.create_topic(TOPIC, 3))
    produce(broker.bootstrap, TOPIC, 30)
    # A real consumer group (protocol type "consumer") commits 10, 7 and 4 of 10 records each.
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=GROUP,
                             enable_auto_commit=False, session_timeout_ms=6000)
    join(consumer, TOPIC)
    committed = {0: 10, 1: 7, 2: 4}
    consumer.commit({TopicPartition(TOPIC, p): OffsetAndMetadata(o, "", -1)
                     for p, o in committed.items()})
    consumer.close()
    produce(broker.bootstrap, TOPIC, 6)  # log-end offsets move to 12 each
    expected = {p: 12 - o for p, o in committed.items()}

    monitor = Burrow(*tools, broker.bootstrap)
    try:
        deadline = time.monotonic() + 45
        status: dict = {}
        while time.monotonic() < deadline:
            status = monitor.get(f"/consumer/{GROUP}/lag").get("status") or {}
            parts = {p["partition"]: p for p in status.get("partitions") or []}
            if status.get("totallag") == sum(expected.values()) and len(parts) == 3:
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"Burrow never reported the lag: {status}\n{monitor.output()}")
        assert status["group"] == GROUP
        for p, lag in expected.items():
            assert parts[p]["topic"] == TOPIC
            assert parts[p]["current_lag"] == lag, parts[p]
            assert parts[p]["end"]["offset"] == committed[p], parts[p]
        consumers = monitor.get("")  # the cluster's entry lists the topic Burrow saw
        assert consumers.get("error") is False
        topics = monitor.get("/topic")["topics"]
        assert TOPIC in topics and "__consumer_offsets" in topics
    finally:
        monitor.close()
