"""Stock clients end to end: 10 000 messages per client spread over every compression codec
and four partitions, consumed back by assigned partitions with exact offsets, keys, values,
headers and timestamps; then a broker restart, the same check, and offsets that continue."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict

import pytest

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
PARTITIONS = 4
PER_CODEC = 2000
TS0 = int(time.time() * 1000) - 86_400_000

Row = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes]], int]  # offset, key, value, headers, ts


def messages(client: str, codec: str):
    for i in range(PER_CODEC):
        key = None if i % 89 == 1 else f"{client}-{codec}-{i}".encode()
        value = None if i % 97 == 0 else (f"{codec}:{i}:".encode() * (1 + i % 7))
        headers = [("i", str(i).encode()), ("codec", codec.encode())] if i % 3 else []
        yield i % PARTITIONS, key, value, headers, TS0 + i


class _Collected:
    """Records of polls ({TopicPartition: [record]}, aiokafka and kafka-python alike) by partition,
    until ``expected`` of them arrived or 60 s went by."""

    def __init__(self, expected: int) -> None:
        self.got: dict[int, list[Row]] = defaultdict(list)
        self.count, self.expected = 0, expected
        self.deadline = time.monotonic() + 60

    def wanting(self) -> bool:
        return self.count < self.expected and time.monotonic() < self.deadline

    def add(self, partition: int, row: Row) -> None:
        self.got[partition].append(row)
        self.count += 1

    def take(self, batch: dict) -> None:
        for tp, msgs in batch.items():
            for m in msgs:
                self.add(tp.partition, (m.offset, m.key, m.value, list(m.headers), m.timestamp))


def create(bootstrap: str, topic: str) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        admin.close()


# aiokafka ------------------------------------------------------------------------------------------

async def _aio_produce(bootstrap: str, topic: str) -> dict[int, list[Row]]:
    from aiokafka import AIOKafkaProducer

    out: dict[int, list[Row]] = defaultdict(list)
    for n, codec in enumerate(CODECS):
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5,
                                    max_batch_size=256 * 1024, enable_idempotence=n % 2 == 0,
                                    compression_type=None if codec == "none" else codec)
        await producer.start()
        try:
            pending = []
            for part, key, value, headers, ts in messages("aio", codec):
                fut = await producer.send(topic, value, key=key, partition=part, timestamp_ms=ts,
                                          headers=headers)
                pending.append((fut, key, value, headers, ts))
            for fut, key, value, headers, ts in pending:
                md = await fut
                out[md.partition].append((md.offset, key, value, headers, ts))
        finally:
            await producer.stop()
    return out


async def _aio_consume(bootstrap: str, topic: str, expected: int) -> dict[int, list[Row]]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                auto_offset_reset="earliest", max_partition_fetch_bytes=256 * 1024)
    await consumer.start()
    seen = _Collected(expected)
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        while seen.wanting():
            seen.take(await consumer.getmany(timeout_ms=1000, max_records=5000))
    finally:
        await consumer.stop()
    return seen.got


def aio_produce(bootstrap: str, topic: str):
    return asyncio.run(_aio_produce(bootstrap, topic))


def aio_consume(bootstrap: str, topic: str, expected: int):
    return asyncio.run(_aio_consume(bootstrap, topic, expected))


# kafka-python -------------------------------------------------------------------------------------

def kp_produce(bootstrap: str, topic: str) -> dict[int, list[Row]]:
    from kafka import KafkaProducer

    out: dict[int, list[Row]] = defaultdict(list)
    for codec in CODECS:
        producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, batch_size=256 * 1024,
                                 compression_type=None if codec == "none" else codec, acks="all")
        try:
            pending = [(producer.send(topic, value=value, key=key, partition=part, timestamp_ms=ts,
                                      headers=headers), key, value, headers, ts)
                       for part, key, value, headers, ts in messages("kp", codec)]
            producer.flush()
            for fut, key, value, headers, ts in pending:
                md = fut.get(timeout=30)
                out[md.partition].append((md.offset, key, value, headers, ts))
        finally:
            producer.close()
    return out


def kp_consume(bootstrap: str, topic: str, expected: int) -> dict[int, list[Row]]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             auto_offset_reset="earliest", group_id=None,
                             max_partition_fetch_bytes=256 * 1024)
    seen = _Collected(expected)
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        while seen.wanting():
            seen.take(consumer.poll(timeout_ms=1000, max_records=5000))
    finally:
        consumer.close()
    return seen.got


# confluent-kafka ---------------------------------------------------------------------------------

def ck_produce(bootstrap: str, topic: str) -> dict[int, list[Row]]:
    from confluent_kafka import Producer

    out: dict[int, list[Row]] = defaultdict(list)
    for n, codec in enumerate(CODECS):
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                             "compression.type": codec, "enable.idempotence": n % 2 == 0,
                             "batch.size": 256 * 1024})
        errors: list[str] = []

        def report(err, msg, headers, errors=errors):
            if err is not None:
                errors.append(str(err))
                return
            # Delivery reports carry no headers: record the ones sent.
            out[msg.partition()].append((msg.offset(), msg.key(), msg.value(), headers,
                                         msg.timestamp()[1]))

        for part, key, value, headers, ts in messages("ck", codec):
            producer.produce(topic, value=value, key=key, partition=part, timestamp=ts,
                             headers=headers,
                             on_delivery=lambda err, msg, h=headers: report(err, msg, h))
            producer.poll(0)
        assert producer.flush(30) == 0
        assert not errors, errors[:3]
    for rows in out.values():
        rows.sort()
    return out


def ck_consume(bootstrap: str, topic: str, expected: int) -> dict[int, list[Row]]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "dataplane-assign",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    seen = _Collected(expected)
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        while seen.wanting():
            for m in consumer.consume(num_messages=5000, timeout=1):
                assert m.error() is None, m.error()
                seen.add(m.partition(), (m.offset(), m.key(), m.value(), list(m.headers() or []),
                                         m.timestamp()[1]))
    finally:
        consumer.close()
    return seen.got


CLIENTS = {
    "aiokafka": (aio_produce, aio_consume),
    "kafka-python": (kp_produce, kp_consume),
    "confluent-kafka": (ck_produce, ck_consume),
}


def _normalize(rows: dict[int, list[Row]]) -> dict[int, list[Row]]:
    return {p: sorted((o, k, v, [(hk, bytes(hv)) for hk, hv in h], ts) for o, k, v, h, ts in r)
            for p, r in rows.items()}


@pytest.mark.parametrize("client", list(CLIENTS))
def test_round_trip_all_codecs_and_restart(client: str, kafka_broker_factory) -> None:
    produce, consume = CLIENTS[client]
    broker = kafka_broker_factory()
    topic = f"rt-{client}"
    create(broker.bootstrap, topic)
    sent = _normalize(produce(broker.bootstrap, topic))
    total = sum(len(r) for r in sent.values())
    assert total == PER_CODEC * len(CODECS)
    for part, rows in sent.items():  # offsets are dense 0..n-1 per partition
        assert [r[0] for r in rows] == list(range(len(rows))), part
    assert _normalize(consume(broker.bootstrap, topic, total)) == sent

    broker.restart()
    assert _normalize(consume(broker.bootstrap, topic, total)) == sent
    more = _normalize(produce(broker.bootstrap, topic))
    for part, rows in more.items():
        assert rows[0][0] == len(sent[part])  # offsets continue after the restart


def test_java_client_idempotent_produce_and_assigned_consume(kafka_broker_factory) -> None:
    """The Java client: idempotent producer (its default) with acks=all, then a consumer on
    assigned partitions (Fetch v17 by topic id, ListOffsets, OffsetForLeaderEpoch)."""
    import json
    import subprocess

    from tests.tools import ensure_java_client

    classpath, reason = ensure_java_client()
    if classpath is None:
        pytest.skip(reason)
    broker = kafka_broker_factory(**{"num.partitions": 3})

    def run(*args: str) -> list[dict]:
        proc = subprocess.run(["java", "-cp", classpath, "KafketteClient", *args],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]

    produced = [e for e in run("produce", broker.bootstrap, "java-dp", "300", "j", "3")
                if e["event"] == "produced"]
    assert sorted((e["partition"], e["offset"]) for e in produced) == [
        (p, o) for p in range(3) for o in range(100)]
    records = [e for e in run("consume", broker.bootstrap, "java-dp", "300") if e["event"] == "record"]
    got = sorted((r["partition"], r["offset"], r["key"], r["value"]) for r in records)
    expected = sorted((i % 3, i // 3, f"j-{i}", f"j-{i}") for i in range(300))
    assert got == expected
