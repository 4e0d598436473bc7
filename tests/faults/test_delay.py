"""An injected delay longer than the client's request timeout: the client gives up on the
request and retries it (on a new connection), and the record is delivered before the delayed
answer would have come."""

from __future__ import annotations

import time

from tests.wire import WireClient

from .test_wire import end_offset

TOPIC, DELAY_MS, TIMEOUT_MS = "slow", 4000, 1000


def prepare(kafka_broker_factory):
    b = kafka_broker_factory()
    b.run(b.broker.logs.create_topic(TOPIC, 1))
    return b


def assert_retried(b, elapsed: float) -> None:
    assert b.faults() == [], "the delayed request was never sent"
    # Delivered before the delayed answer: by a retry of the timed-out request.
    assert elapsed < DELAY_MS / 1000, elapsed
    with WireClient(b.bootstrap) as w:
        assert end_offset(w, TOPIC, 0) >= 1


async def test_aiokafka_producer_retries_a_request_past_its_timeout(kafka_broker_factory):
    from aiokafka import AIOKafkaProducer

    b = prepare(kafka_broker_factory)
    # aiokafka retries a timed-out Produce only when idempotent (a retry cannot duplicate).
    producer = AIOKafkaProducer(bootstrap_servers=b.bootstrap, request_timeout_ms=TIMEOUT_MS,
                                retry_backoff_ms=50, enable_idempotence=True)
    await producer.start()
    try:
        await producer.partitions_for(TOPIC)
        b.inject("Produce", delay_ms=DELAY_MS)
        started = time.monotonic()
        meta = await producer.send_and_wait(TOPIC, b"late", partition=0)
        elapsed = time.monotonic() - started
    finally:
        await producer.stop()
    assert meta.offset >= 0
    assert_retried(b, elapsed)


def test_kafka_python_producer_retries_a_request_past_its_timeout(kafka_broker_factory):
    from kafka import KafkaProducer

    b = prepare(kafka_broker_factory)
    producer = KafkaProducer(bootstrap_servers=b.bootstrap, request_timeout_ms=TIMEOUT_MS,
                             retries=5, retry_backoff_ms=50)
    try:
        producer.partitions_for(TOPIC)
        b.inject("Produce", delay_ms=DELAY_MS)
        started = time.monotonic()
        meta = producer.send(TOPIC, b"late", partition=0).get(timeout=DELAY_MS / 1000 * 3)
        elapsed = time.monotonic() - started
    finally:
        producer.close(timeout=5)
    assert meta.offset >= 0
    assert_retried(b, elapsed)


def test_confluent_producer_retries_a_request_past_its_timeout(kafka_broker_factory):
    from confluent_kafka import Producer

    b = prepare(kafka_broker_factory)
    # socket.timeout.ms: librdkafka drops the connection of a timed-out request, so the retry is
    # not queued behind the delayed answer (Kafka too answers a connection's requests in order).
    producer = Producer({"bootstrap.servers": b.bootstrap, "request.timeout.ms": TIMEOUT_MS,
                         "socket.timeout.ms": TIMEOUT_MS,
                         "message.timeout.ms": 30000, "retry.backoff.ms": 50,
                         "reconnect.backoff.ms": 50})
    producer.list_topics(TOPIC, timeout=10)
    b.inject("Produce", delay_ms=DELAY_MS)
    delivered: list = []
    started = time.monotonic()
    producer.produce(TOPIC, b"late", partition=0, on_delivery=lambda err, msg: delivered.append(err))
    assert producer.flush(DELAY_MS / 1000 * 3) == 0
    elapsed = time.monotonic() - started
    assert delivered == [None]
    assert_retried(b, elapsed)
