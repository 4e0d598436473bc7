"""Stock clients against produce-time timestamp rules: a record stamped beyond
message.timestamp.after.max.ms fails with INVALID_TIMESTAMP in the producer (confluent-kafka
and kafka-python, plain and compressed) while its neighbours in time are stored; a
LogAppendTime topic hands consumers the broker's append time, marked LogAppendTime."""

from __future__ import annotations

import time

import pytest

HOUR_MS = 3_600_000


@pytest.fixture
def broker(kafka_broker_factory):
    return kafka_broker_factory()


def create(bootstrap: str, name: str, config: dict[str, str] | None = None) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1, config=config or {})])[name].result(10)


def consume(bootstrap: str, topic: str, expect: int) -> list:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"ts-{time.monotonic()}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list = []
    deadline = time.monotonic() + 20
    try:
        while len(got) < expect and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg)
    finally:
        consumer.close()
    return got


@pytest.mark.parametrize("compression", ["none", "lz4"])
def test_confluent_producer_sees_invalid_timestamp(broker, compression: str) -> None:
    from confluent_kafka import KafkaError, Producer

    create(broker.bootstrap, "future")
    outcomes: dict[bytes, object] = {}
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0,
                         "compression.type": compression, "enable.idempotence": False})
    now = int(time.time() * 1000)
    producer.produce("future", b"late", timestamp=now + 2 * HOUR_MS,
                     on_delivery=lambda err, msg: outcomes.__setitem__(b"late", err))
    producer.flush(15)
    producer.produce("future", b"fine", timestamp=now + 60_000,
                     on_delivery=lambda err, msg: outcomes.__setitem__(b"fine", err))
    producer.flush(15)
    assert outcomes[b"late"] is not None
    assert outcomes[b"late"].code() == KafkaError.INVALID_TIMESTAMP
    assert outcomes[b"fine"] is None
    [msg] = consume(broker.bootstrap, "future", 1)
    assert msg.value() == b"fine" and msg.offset() == 0
    assert msg.timestamp() == (1, now + 60_000)  # TIMESTAMP_CREATE_TIME


def test_kafka_python_producer_sees_invalid_timestamp(broker) -> None:
    from kafka import KafkaProducer
    from kafka.errors import InvalidTimestampError

    create(broker.bootstrap, "past", {"message.timestamp.before.max.ms": "86400000"})
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, compression_type="gzip",
                             retries=0)
    try:
        now = int(time.time() * 1000)
        with pytest.raises(InvalidTimestampError):
            producer.send("past", b"old", timestamp_ms=now - 2 * 86_400_000).get(timeout=15)
        meta = producer.send("past", b"new", timestamp_ms=now - 3_600_000).get(timeout=15)
        assert meta.offset == 0
    finally:
        producer.close(5)


def test_log_append_time_topic_stamps_records(broker) -> None:
    from confluent_kafka import Producer
    from kafka import KafkaConsumer, TopicPartition

    create(broker.bootstrap, "stamped", {"message.timestamp.type": "LogAppendTime"})
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5,
                         "compression.type": "zstd"})
    before = int(time.time() * 1000)
    for i in range(5):  # CreateTime stamps the window would refuse on a CreateTime topic
        producer.produce("stamped", b"v%d" % i, timestamp=[5, before + 3 * HOUR_MS][i % 2])
    assert producer.flush(15) == 0
    after = int(time.time() * 1000)
    msgs = consume(broker.bootstrap, "stamped", 5)
    assert [m.value() for m in msgs] == [b"v%d" % i for i in range(5)]
    for m in msgs:
        kind, ts = m.timestamp()
        assert kind == 2 and before <= ts <= after + 1  # TIMESTAMP_LOG_APPEND_TIME

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=10_000)
    try:
        consumer.assign([TopicPartition("stamped", 0)])
        consumer.seek_to_beginning()
        records = [r for _, r in zip(range(5), consumer, strict=False)]
    finally:
        consumer.close()
    assert len(records) == 5
    assert {(r.timestamp_type, r.timestamp) for r in records} == \
        {(1, ts) for ts in {m.timestamp()[1] for m in msgs}}
