"""Stock clients against several nodes in one process.

- A 2-member group keeps consuming while the node hosting its coordinator is stopped and started:
  nothing is lost, and records are re-read only from the last commit (never before it).
- A producer with acks=all keeps producing through a leader move (and a node stop): nothing lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from kafkette.broker.cli.admin_client import AdminClient
from tests.groups.helpers import wait_until_sync

TOPIC, PARTITIONS, BATCH = "events", 4, 40


def address(cluster: Any, node_id: int) -> str:
    node = next(n for n in cluster.nodes if n["id"] == node_id)
    return f"{node['host']}:{node['port']}"


def produce(bootstrap: str, start: int, n: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "topic.metadata.refresh.interval.ms": 500, "retry.backoff.ms": 50})
    for i in range(start, start + n):
        producer.produce(TOPIC, str(i).encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0


def committed(cluster: Any, group: str) -> dict[int, int]:
    admin = AdminClient(address(cluster, cluster.coordinator_of(group)))
    try:
        return {p: o for (t, p), o in admin.committed(group).items() if t == TOPIC}
    finally:
        admin.close()


class Member:
    """One consumer polled and committing (after every poll) on its own thread."""

    def __init__(self, make: Callable[[], Any], poll: Callable[[Any], list[tuple[int, int, bytes]]],
                 commit: Callable[[Any], None], close: Callable[[Any], None]) -> None:
        self.records: list[tuple[int, int, bytes]] = []
        self.errors: list[BaseException] = []
        self.stop = threading.Event()
        self._make, self._poll, self._commit, self._close = make, poll, commit, close
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            consumer = self._make()
            try:
                while not self.stop.is_set():
                    got = self._poll(consumer)
                    self.records.extend(got)
                    with contextlib.suppress(Exception):  # an app retries with its next commit
                        self._commit(consumer)
            finally:
                self._close(consumer)
        except Exception as exc:  # noqa: BLE001 - surfaced by the test
            self.errors.append(exc)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)


def kafka_python_member(bootstrap: str, group: str) -> Member:
    from kafka import KafkaConsumer

    def make() -> Any:
        consumer = KafkaConsumer(bootstrap_servers=bootstrap.split(","), group_id=group,
                                 enable_auto_commit=False, auto_offset_reset="earliest",
                                 session_timeout_ms=6000, heartbeat_interval_ms=100,
                                 fetch_max_wait_ms=100, retry_backoff_ms=50,
                                 metadata_max_age_ms=1000)
        consumer.partitions_for_topic(TOPIC)
        consumer.subscribe([TOPIC])
        return consumer

    def poll(c: Any) -> list[tuple[int, int, bytes]]:
        batch = c.poll(timeout_ms=500)
        return [(r.partition, r.offset, r.value) for rs in batch.values() for r in rs]

    def commit(c: Any) -> None:
        if c.assignment():
            c.commit()

    return Member(make, poll, commit, lambda c: c.close(autocommit=False))


def confluent_member(bootstrap: str, group: str) -> Member:
    from confluent_kafka import Consumer

    def make() -> Any:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                             "session.timeout.ms": 6000, "heartbeat.interval.ms": 100,
                             "enable.auto.commit": False, "auto.offset.reset": "earliest",
                             "topic.metadata.refresh.interval.ms": 500,
                             "retry.backoff.ms": 50, "reconnect.backoff.ms": 50})
        consumer.subscribe([TOPIC])
        return consumer

    def poll(c: Any) -> list[tuple[int, int, bytes]]:
        out = []
        for msg in c.consume(50, 0.1):
            if msg.error() is None:
                out.append((msg.partition(), msg.offset(), msg.value()))
        return out

    def commit(c: Any) -> None:
        if c.assignment():
            c.commit(asynchronous=False)

    return Member(make, poll, commit, lambda c: c.close())


def aiokafka_member(bootstrap: str, group: str) -> Member:
    """An aiokafka consumer on its own event loop in the member's thread."""
    from aiokafka import AIOKafkaConsumer

    loop = asyncio.new_event_loop()

    async def start() -> Any:
        consumer = AIOKafkaConsumer(TOPIC, bootstrap_servers=bootstrap.split(","),
                                    group_id=group, enable_auto_commit=False,
                                    auto_offset_reset="earliest", session_timeout_ms=6000,
                                    heartbeat_interval_ms=100, retry_backoff_ms=50,
                                    metadata_max_age_ms=1000)
        await consumer.start()
        return consumer

    def make() -> Any:
        asyncio.set_event_loop(loop)
        return loop.run_until_complete(start())

    def poll(c: Any) -> list[tuple[int, int, bytes]]:
        batch = loop.run_until_complete(c.getmany(timeout_ms=200))
        # run_until_complete returns between polls; the consumer's own tasks run inside it
        return [(r.partition, r.offset, r.value) for rs in batch.values() for r in rs]

    def commit(c: Any) -> None:
        if c.assignment():
            loop.run_until_complete(c.commit())

    def close(c: Any) -> None:
        loop.run_until_complete(c.stop())
        loop.close()

    return Member(make, poll, commit, close)


MEMBERS = {"aiokafka": aiokafka_member, "kafka-python": kafka_python_member,
           "confluent-kafka": confluent_member}


@pytest.mark.parametrize("client", list(MEMBERS))
def test_group_keeps_consuming_while_its_coordinator_node_stops_and_starts(kafka_cluster, client):
    cluster = kafka_cluster
    cluster.runner.run(cluster.runner.broker.logs.create_topic(TOPIC, PARTITIONS))
    group = f"{client}-survivors"
    bootstrap = cluster.bootstrap
    produce(bootstrap, 0, BATCH)
    members = [MEMBERS[client](bootstrap, group) for _ in range(2)]

    def distinct() -> set[bytes]:
        assert not any(m.errors for m in members), [m.errors for m in members]
        return {value for m in members for _, _, value in m.records}

    try:
        wait_until_sync(lambda: len(distinct()) == BATCH, timeout=40, step=0.1)
        wait_until_sync(lambda: sum(committed(cluster, group).values()) == BATCH, timeout=20)
        before = committed(cluster, group)
        home = cluster.coordinator_of(group)
        seen_before = [len(m.records) for m in members]
        cluster.stop_node(home)
        assert cluster.coordinator_of(group) != home
        produce(cluster.bootstrap, BATCH, BATCH)
        wait_until_sync(lambda: len(distinct()) == 2 * BATCH, timeout=60, step=0.1)
        cluster.start_node(home)
        assert cluster.coordinator_of(group) == home
        produce(cluster.bootstrap, 2 * BATCH, BATCH)
        wait_until_sync(lambda: len(distinct()) == 3 * BATCH, timeout=60, step=0.1)
        wait_until_sync(lambda: committed(cluster, group) == {
            p: 3 * BATCH // PARTITIONS for p in range(PARTITIONS)}, timeout=30, step=0.2)
    finally:
        for m in members:
            m.close()
    assert distinct() == {str(i).encode() for i in range(3 * BATCH)}, "records lost"
    # Re-read only from the last commit: nothing before what was committed when the node stopped.
    later = [r for m, n in zip(members, seen_before, strict=True) for r in m.records[n:]]
    assert all(o >= before[p] for p, o, _ in later), "a member re-read before the last commit"


@pytest.mark.parametrize("client", ["aiokafka", "kafka-python", "confluent-kafka"])
def test_acks_all_producer_keeps_producing_through_a_leader_move(kafka_cluster, client):
    cluster = kafka_cluster
    cluster.runner.run(cluster.runner.broker.logs.create_topic(TOPIC, 1))
    first = cluster.leader_of(TOPIC, 0)
    target = next(n["id"] for n in cluster.nodes if n["id"] != first)
    send, close = PRODUCERS[client](cluster.bootstrap)
    sent = 0
    try:
        for i in range(30):
            send(str(i).encode())
            sent += 1
            if i == 10:
                cluster.move_leader(TOPIC, 0, target)
            if i == 20:
                cluster.stop_node(target)  # and the leader moves on again
    finally:
        close()
    assert cluster.leader_of(TOPIC, 0) != target
    from tests.faults.test_wire import end_offset
    from tests.wire import WireClient

    with WireClient(address(cluster, cluster.leader_of(TOPIC, 0))) as w:
        assert end_offset(w, TOPIC, 0) >= sent == 30
    values = read_all(cluster.bootstrap)
    assert set(values) == {str(i).encode() for i in range(30)}, "an acknowledged record was lost"


def read_all(bootstrap: str) -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            values.append(msg.value())
        elif msg is None and len(set(values)) >= 30:
            break
    consumer.close()
    return values


def _aiokafka_producer(bootstrap: str) -> tuple[Callable[[bytes], None], Callable[[], None]]:
    from aiokafka import AIOKafkaProducer

    loop = asyncio.new_event_loop()

    async def start() -> Any:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap.split(","), acks="all",
                             retry_backoff_ms=50, metadata_max_age_ms=1000)
        await p.start()
        return p
    producer = loop.run_until_complete(start())

    def send(value: bytes) -> None:
        loop.run_until_complete(producer.send_and_wait(TOPIC, value, partition=0))

    def close() -> None:
        loop.run_until_complete(producer.stop())
        loop.close()

    return send, close


def _kafka_python_producer(bootstrap: str) -> tuple[Callable[[bytes], None], Callable[[], None]]:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap.split(","), acks="all", retries=10,
                             retry_backoff_ms=50, metadata_max_age_ms=1000)
    return (lambda value: producer.send(TOPIC, value, partition=0).get(timeout=30),
            lambda: producer.close(timeout=5))


def _confluent_producer(bootstrap: str) -> tuple[Callable[[bytes], None], Callable[[], None]]:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "retry.backoff.ms": 50,
                         "topic.metadata.refresh.interval.ms": 500})

    def send(value: bytes) -> None:
        errors: list = []
        producer.produce(TOPIC, value, partition=0, on_delivery=lambda err, _m: errors.append(err))
        assert producer.flush(30) == 0 and errors == [None], errors

    return send, lambda: producer.flush(10)


PRODUCERS = {"aiokafka": _aiokafka_producer, "kafka-python": _kafka_python_producer,
             "confluent-kafka": _confluent_producer}
