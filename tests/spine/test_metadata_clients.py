"""Stock clients get topic metadata from a real kafkette on a loopback port."""

from __future__ import annotations

import asyncio
import subprocess

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer

from tests.tools import ensure_debian_tool

PARTITIONS = 3


@pytest.fixture
def broker(kafka_broker_factory):
    return kafka_broker_factory(**{"num.partitions": PARTITIONS})


def test_kafka_python_sees_auto_created_topic(broker):
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    try:
        consumer.subscribe(["kp-topic"])
        consumer.poll(timeout_ms=200)  # triggers a metadata request with auto-creation
        deadline = 50
        while not consumer.partitions_for_topic("kp-topic") and deadline:
            consumer.poll(timeout_ms=100)
            deadline -= 1
        assert consumer.partitions_for_topic("kp-topic") == set(range(PARTITIONS))
        assert "kp-topic" in consumer.topics()
    finally:
        consumer.close()


async def test_aiokafka_sees_topics(broker):
    await asyncio.to_thread(broker.run, broker.broker.logs.create_topic("aio-topic", 4))
    consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap)
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
    await consumer.start()
    await producer.start()
    try:
        assert "aio-topic" in await consumer.topics()
        assert await producer.partitions_for("aio-topic") == {0, 1, 2, 3}
        assert await producer.partitions_for("aio-auto") == set(range(PARTITIONS))
    finally:
        await consumer.stop()
        await producer.stop()


def test_confluent_kafka_metadata(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    md = admin.list_topics("cf-topic", timeout=10)  # Metadata v12 with trailing bytes
    topic = md.topics["cf-topic"]
    assert topic.error is None
    assert sorted(topic.partitions) == list(range(PARTITIONS))
    host, port = broker.address
    assert {b.id: (b.host, b.port) for b in md.brokers.values()} == {1: (host, port)}
    assert md.controller_id == 1
    for p in topic.partitions.values():
        assert p.leader == 1 and p.replicas == [1] and p.isrs == [1]


def test_unknown_topic_without_auto_create(kafka_broker_factory):
    broker = kafka_broker_factory(**{"auto.create.topics.enable": "false"})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    md = admin.list_topics("nope", timeout=10)
    assert md.topics["nope"].error is not None
    assert md.topics["nope"].error.code() == 3  # UNKNOWN_TOPIC_OR_PARTITION


def test_internal_topics_listed_as_internal(broker):
    logs = broker.broker.logs
    if logs.topic("__consumer_offsets") is None:  # the coordinator creates it when present
        broker.run(logs.create_topic("__consumer_offsets", 2, internal=True))
    expected = logs.topic("__consumer_offsets").partitions
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        topics = {t["name"]: t for t in admin.describe_topics()}
    finally:
        admin.close()
    assert topics["__consumer_offsets"]["is_internal"] is True
    assert len(topics["__consumer_offsets"]["partitions"]) == expected


def test_kcat_lists_metadata(broker):
    kcat, reason = ensure_debian_tool("kcat", "kcat")
    if kcat is None:
        pytest.skip(reason)
    broker.run(broker.broker.logs.create_topic("kcat-topic", 2))
    out = subprocess.run([kcat, "-b", broker.bootstrap, "-L", "-J"], capture_output=True,
                         text=True, timeout=30, check=True).stdout
    import json

    md = json.loads(out)
    names = {t["topic"]: t for t in md["topics"]}
    assert len(names["kcat-topic"]["partitions"]) == 2
    assert md["brokers"][0]["id"] == 1
