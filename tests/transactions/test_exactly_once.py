"""Consume-transform-produce with send_offsets_to_transaction copies every input exactly
once, although the broker is SIGKILLed while a transaction is open (confluent-kafka)."""

from __future__ import annotations

import asyncio
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from kafkette.broker.testing import BrokerProcess
from kafkette.broker.testing import test_config as broker_config

from .helpers import FAST, create_topic, read_all, txn_producer

INPUTS = 120
TID = "copier"


def _consumer(bootstrap: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": "copier-group",
                     "isolation.level": "read_committed", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "session.timeout.ms": 6000})


def _copy_batch(consumer: Consumer, producer: Producer, commit: bool = True) -> int:
    """One transaction: copy what one poll returns, commit the consumer's position with it."""
    msgs = [m for m in consumer.consume(10, 1.0) if not m.error()]
    if not msgs:
        return 0
    producer.begin_transaction()
    for m in msgs:
        producer.produce("out", m.value())
    producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                         consumer.consumer_group_metadata(), 20)
    if commit:
        producer.commit_transaction(20)
    else:
        producer.flush(10)
    return len(msgs)


def _committed(bootstrap: str) -> int:
    consumer = _consumer(bootstrap)
    try:
        return consumer.committed([TopicPartition("in", 0)], 10)[0].offset
    finally:
        consumer.close()


def test_exactly_once_copy_across_a_broker_sigkill(tmp_path) -> None:
    config = broker_config(str(tmp_path), **{"group.min.session.timeout.ms": "100"})
    config.update(FAST)
    with BrokerProcess(config) as proc:
        bootstrap = proc.bootstrap
        create_topic(bootstrap, "in")
        create_topic(bootstrap, "out")
        source = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
        for i in range(INPUTS):
            source.produce("in", f"record-{i}".encode())
        source.flush(10)

        consumer = _consumer(bootstrap)
        consumer.subscribe(["in"])
        first = txn_producer(bootstrap, TID)
        first.init_transactions(20)
        copied = 0
        while copied < INPUTS // 3:
            copied += _copy_batch(consumer, first)
        assert _copy_batch(consumer, first, commit=False) > 0  # left open
        consumer.close()
        proc.kill()
        proc.start()

        second = txn_producer(proc.bootstrap, TID)
        second.init_transactions(30)  # fences `first`; its open transaction is aborted
        with pytest.raises(KafkaException):
            first.commit_transaction(10)
        consumer = _consumer(proc.bootstrap)
        consumer.subscribe(["in"])
        deadline = time.monotonic() + 60
        while _committed(proc.bootstrap) < INPUTS and time.monotonic() < deadline:
            _copy_batch(consumer, second)
        consumer.close()

        assert _committed(proc.bootstrap) == INPUTS
        out = read_all(proc.bootstrap, "out", "read_committed", exactly=INPUTS, timeout=20)
        assert sorted(out) == sorted(f"record-{i}".encode() for i in range(INPUTS))
        uncommitted = read_all(proc.bootstrap, "out", "read_uncommitted")
        assert len(uncommitted) > INPUTS  # the aborted copies are in the log, not in the output


def test_aiokafka_exactly_once_copy_across_a_broker_sigkill(tmp_path) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka import TopicPartition as TP

    config = broker_config(str(tmp_path), **{"group.min.session.timeout.ms": "100"})
    config.update(FAST)
    tp = TP("ain", 0)

    async def copier(bootstrap: str) -> tuple[AIOKafkaConsumer, AIOKafkaProducer]:
        consumer = AIOKafkaConsumer("ain", bootstrap_servers=bootstrap, group_id="aio-copier",
                                    isolation_level="read_committed", enable_auto_commit=False,
                                    auto_offset_reset="earliest", session_timeout_ms=6000)
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="aio-copier")
        await producer.start()
        await consumer.start()
        return consumer, producer

    async def copy_batch(consumer: AIOKafkaConsumer, producer: AIOKafkaProducer,
                         commit: bool = True) -> int:
        msgs = (await consumer.getmany(tp, timeout_ms=1000, max_records=10)).get(tp, [])
        if not msgs:
            return 0
        await producer.begin_transaction()
        for m in msgs:
            await producer.send("aout", m.value)
        await producer.send_offsets_to_transaction({tp: msgs[-1].offset + 1}, "aio-copier")
        if commit:
            await producer.commit_transaction()
        return len(msgs)

    async def scenario(proc: BrokerProcess) -> None:
        consumer, first = await copier(proc.bootstrap)
        copied = 0
        while copied < INPUTS // 3:
            copied += await copy_batch(consumer, first)
        assert await copy_batch(consumer, first, commit=False) > 0  # left open
        await first.flush()
        await consumer.stop()
        proc.kill()
        proc.start()
        consumer, second = await copier(proc.bootstrap)  # fences `first`, aborts its txn
        with pytest.raises(Exception):  # noqa: B017,PT011 - aiokafka raises ProducerFenced
            await asyncio.wait_for(first.commit_transaction(), 20)
        await asyncio.wait_for(first.stop(), 20)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        while loop.time() < deadline:
            await copy_batch(consumer, second)
            if (await consumer.committed(tp)) == INPUTS:
                break
        assert await consumer.committed(tp) == INPUTS
        await consumer.stop()
        await second.stop()

    with BrokerProcess(config) as proc:
        create_topic(proc.bootstrap, "ain")
        create_topic(proc.bootstrap, "aout")
        source = Producer({"bootstrap.servers": proc.bootstrap})
        for i in range(INPUTS):
            source.produce("ain", f"record-{i}".encode())
        source.flush(10)
        asyncio.run(scenario(proc))
        out = read_all(proc.bootstrap, "aout", "read_committed", exactly=INPUTS, timeout=20)
        assert sorted(out) == sorted(f"record-{i}".encode() for i in range(INPUTS))
        assert len(read_all(proc.bootstrap, "aout", "read_uncommitted")) > INPUTS
