"""Consume-transform-produce with aiokafka (transaction APIs v0) and a transactional
kafka-python producer (InitProducerId v4): offsets committed in the transaction, outputs
visible to read_committed readers only once committed."""

from __future__ import annotations

import asyncio

from .helpers import FAST, create_topic, read_all

INPUTS = 30


def test_aiokafka_send_offsets_to_transaction(kafka_broker_factory) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    broker = kafka_broker_factory(FAST)
    create_topic(broker.bootstrap, "in")
    create_topic(broker.bootstrap, "out")

    async def scenario() -> int:
        source = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
        await source.start()
        for i in range(INPUTS):
            await source.send("in", f"r{i}".encode())
        await source.flush()
        await source.stop()
        consumer = AIOKafkaConsumer("in", bootstrap_servers=broker.bootstrap, group_id="aio-eos",
                                    isolation_level="read_committed", enable_auto_commit=False,
                                    auto_offset_reset="earliest")
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap,
                                    transactional_id="aio-eos-app")
        await consumer.start()
        await producer.start()
        tp = TopicPartition("in", 0)
        copied = 0
        aborted_once = False
        try:
            while copied < INPUTS:
                batch = await consumer.getmany(tp, timeout_ms=500, max_records=7)
                msgs = batch.get(tp, [])
                if not msgs:
                    continue
                await producer.begin_transaction()
                for m in msgs:
                    await producer.send("out", m.value)
                await producer.send_offsets_to_transaction({tp: msgs[-1].offset + 1}, "aio-eos")
                if not aborted_once:  # the first attempt aborts: its copies never show
                    aborted_once = True
                    await producer.abort_transaction()
                    consumer.seek(tp, msgs[0].offset)
                    continue
                await producer.commit_transaction()
                copied += len(msgs)
        finally:
            await producer.stop()
            await consumer.stop()
        check = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, group_id="aio-eos",
                                 enable_auto_commit=False)
        await check.start()
        try:
            return await check.committed(tp)
        finally:
            await check.stop()

    committed = asyncio.run(scenario())
    assert committed == INPUTS
    out = read_all(broker.bootstrap, "out", "read_committed", exactly=INPUTS, timeout=20)
    assert out == [f"r{i}".encode() for i in range(INPUTS)]


def test_kafka_python_transactional_producer(kafka_broker_factory) -> None:
    from kafka import KafkaProducer

    broker = kafka_broker_factory(FAST)
    create_topic(broker.bootstrap, "kp")
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="kp-app")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("kp", b"aborted")
        producer.flush()
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send("kp", b"committed")
        producer.commit_transaction()
    finally:
        producer.close(timeout=5)
    assert read_all(broker.bootstrap, "kp", "read_committed") == [b"committed"]
    assert read_all(broker.bootstrap, "kp", "read_uncommitted") == [b"aborted", b"committed"]


def test_java_consume_transform_produce(kafka_broker_factory) -> None:
    """kafka-clients 3.9.1 (InitProducerId v5, AddPartitionsToTxn v3, EndTxn v4,
    TxnOffsetCommit v4 with the group's member and generation): one aborted and then committed
    transactions copy every input exactly once."""
    import json
    import subprocess

    import pytest
    from confluent_kafka import Consumer, Producer, TopicPartition

    from tests.tools import ensure_java_client

    classpath, reason = ensure_java_client()
    if classpath is None:
        pytest.skip(reason)
    broker = kafka_broker_factory(FAST)
    create_topic(broker.bootstrap, "jin")
    create_topic(broker.bootstrap, "jout")
    source = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(INPUTS):
        source.produce("jin", f"r{i}".encode(), key=f"k{i}".encode())
    source.flush(10)
    proc = subprocess.run(["java", "-cp", classpath, "KafketteClient", "txcopy", broker.bootstrap,
                           "jin", "jout", "java-eos", "java-eos-app", str(INPUTS)],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert [e["event"] for e in events][0] == "aborted"
    assert sum(e["records"] for e in events if e["event"] == "committed") == INPUTS
    out = read_all(broker.bootstrap, "jout", "read_committed", exactly=INPUTS, timeout=20)
    assert out == [f"r{i}".encode() for i in range(INPUTS)]
    check = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "java-eos"})
    try:
        assert check.committed([TopicPartition("jin", 0)], 10)[0].offset == INPUTS
    finally:
        check.close()
