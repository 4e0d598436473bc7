"""Transactions seen by consumers: aborted records are invisible to read_committed consumers
and visible to read_uncommitted ones; read_committed stops at the last stable offset
(confluent-kafka, aiokafka, the raw wire client)."""

from __future__ import annotations

import asyncio

from tests.wire import WireClient

from .helpers import FAST, create_topic, read_all, txn_producer

LIST_OFFSETS = 2


def _abort_then_commit(bootstrap: str, topic: str) -> None:
    producer = txn_producer(bootstrap, "iso-1")
    producer.init_transactions(20)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, f"aborted-{i}".encode())
    producer.flush(10)
    producer.abort_transaction(20)
    producer.begin_transaction()
    for i in range(2):
        producer.produce(topic, f"committed-{i}".encode())
    producer.commit_transaction(20)


def test_confluent_aborted_invisible_to_read_committed(kafka_broker_factory) -> None:
    broker = kafka_broker_factory(FAST)
    create_topic(broker.bootstrap, "iso")
    _abort_then_commit(broker.bootstrap, "iso")
    assert read_all(broker.bootstrap, "iso", "read_committed") == [b"committed-0", b"committed-1"]
    assert read_all(broker.bootstrap, "iso", "read_uncommitted") == [
        b"aborted-0", b"aborted-1", b"aborted-2", b"committed-0", b"committed-1"]


def test_aborted_transaction_survives_restart(kafka_broker_factory) -> None:
    """The aborted-transaction index is rebuilt from the log: read_committed still drops the
    aborted records after a restart."""
    broker = kafka_broker_factory(FAST)
    create_topic(broker.bootstrap, "iso")
    _abort_then_commit(broker.bootstrap, "iso")
    broker.restart()
    assert read_all(broker.bootstrap, "iso", "read_committed") == [b"committed-0", b"committed-1"]


def test_aiokafka_transactions_and_read_committed(kafka_broker_factory) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    broker = kafka_broker_factory(FAST)
    create_topic(broker.bootstrap, "aio")

    async def scenario() -> tuple[list[bytes], list[bytes]]:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="aio-1")
        await producer.start()
        try:
            await producer.begin_transaction()
            await producer.send_and_wait("aio", b"aborted")
            await producer.abort_transaction()
            async with producer.transaction():
                await producer.send_and_wait("aio", b"committed")
        finally:
            await producer.stop()
        seen = []
        for isolation in ("read_committed", "read_uncommitted"):
            consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap,
                                        isolation_level=isolation, enable_auto_commit=False,
                                        auto_offset_reset="earliest")
            await consumer.start()
            try:
                tp = TopicPartition("aio", 0)
                consumer.assign([tp])
                consumer.seek(tp, 0)
                values: list[bytes] = []
                for _ in range(10):
                    batch = await consumer.getmany(timeout_ms=300)
                    values += [m.value for msgs in batch.values() for m in msgs]
                    if values and not batch:
                        break
                seen.append(values)
            finally:
                await consumer.stop()
        return seen[0], seen[1]

    committed, uncommitted = asyncio.run(scenario())
    assert committed == [b"committed"]
    assert uncommitted == [b"aborted", b"committed"]


def _list_offset(bootstrap: str, topic: str, isolation: int, partition: int = 0) -> int:
    with WireClient(bootstrap) as w:
        from kafkette.protocol.build import item_type, make
        from kafkette.protocol.codec import request_type

        req_cls = request_type(LIST_OFFSETS, 5)
        topic_cls = item_type(req_cls, "topics")
        part_cls = item_type(topic_cls, "partitions")
        response = w.request(LIST_OFFSETS, 5, replica_id=-1, isolation_level=isolation,
                             topics=(make(topic_cls, name=topic, partitions=(
                                 make(part_cls, partition_index=partition, current_leader_epoch=-1,
                                      timestamp=-1),)),))
        part = response.topics[0].partitions[0]
        assert part.error_code == 0
        return part.offset


def test_read_committed_stops_at_the_last_stable_offset(kafka_broker_factory) -> None:
    broker = kafka_broker_factory(FAST)
    create_topic(broker.bootstrap, "lso")
    plain = __import__("confluent_kafka").Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(4):
        plain.produce("lso", f"plain-{i}".encode())
    plain.flush(10)
    producer = txn_producer(broker.bootstrap, "lso-1")
    producer.init_transactions(20)
    producer.begin_transaction()
    producer.produce("lso", b"open-0")
    producer.produce("lso", b"open-1")
    producer.flush(10)
    assert _list_offset(broker.bootstrap, "lso", 1) == 4  # the open transaction's first offset
    assert _list_offset(broker.bootstrap, "lso", 0) == 6
    assert read_all(broker.bootstrap, "lso", "read_committed", expect=6, timeout=3) == [
        f"plain-{i}".encode() for i in range(4)]
    producer.commit_transaction(20)
    assert _list_offset(broker.bootstrap, "lso", 1) == 7  # past the COMMIT marker
    assert read_all(broker.bootstrap, "lso", "read_committed")[-2:] == [b"open-0", b"open-1"]
