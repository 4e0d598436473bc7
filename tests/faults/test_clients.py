"""Injected coordinator errors reach stock clients, and each recovers: the group keeps consuming,
nothing is lost, and the commits land. An injected delay past the request timeout makes the
client retry.

Every case: a 2-partition topic with 20 records, a fault injected before a 2-member group starts
(so JoinGroup/SyncGroup faults hit the first join, Heartbeat and OffsetCommit faults the first
heartbeat or commit), both members consume and commit what they read after every poll (a failed
commit is what an app shrugs off: the next one covers it).
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
from tests.groups.helpers import FAST_GROUP, wait_until_sync

TOPIC, PARTITIONS, PER_PARTITION = "payments", 2, 10
CASES = [
    ("OffsetCommit", "REBALANCE_IN_PROGRESS"),
    ("OffsetCommit", "NOT_COORDINATOR"),
    ("OffsetCommit", "COORDINATOR_LOAD_IN_PROGRESS"),
    ("Heartbeat", "REBALANCE_IN_PROGRESS"),
    ("Heartbeat", "NOT_COORDINATOR"),
    ("JoinGroup", "COORDINATOR_LOAD_IN_PROGRESS"),
    ("JoinGroup", "NOT_COORDINATOR"),
    ("SyncGroup", "REBALANCE_IN_PROGRESS"),
    ("SyncGroup", "NOT_COORDINATOR"),
]
IDS = [f"{api}-{error}" for api, error in CASES]
EXPECTED = {(p, o) for p in range(PARTITIONS) for o in range(PER_PARTITION)}


def prepare(kafka_broker_factory: Callable[..., Any]) -> Any:
    b = kafka_broker_factory()
    b.run(b.broker.logs.create_topic(TOPIC, PARTITIONS))
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": b.bootstrap})
    for p in range(PARTITIONS):
        for i in range(PER_PARTITION):
            producer.produce(TOPIC, f"{p}-{i}".encode(), partition=p)
    assert producer.flush(20) == 0
    return b


def committed(bootstrap: str, group: str) -> dict[int, int]:
    admin = AdminClient(bootstrap)
    try:
        return {p: o for (t, p), o in admin.committed(group).items() if t == TOPIC}
    finally:
        admin.close()


def all_committed(bootstrap: str, group: str) -> bool:
    return committed(bootstrap, group) == {p: PER_PARTITION for p in range(PARTITIONS)}


def assert_recovered(b: Any, group: str, seen: set[tuple[int, int]]) -> None:
    assert seen == EXPECTED, "records lost"
    assert b.faults() == [], "the fault never reached the client"
    assert all_committed(b.bootstrap, group)


# aiokafka ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("api", "error"), CASES, ids=IDS)
async def test_aiokafka_group_recovers(kafka_broker_factory, api, error):
    from aiokafka import AIOKafkaConsumer

    b = prepare(kafka_broker_factory)
    group = f"aio-{api}-{error}"
    b.inject(api, error)
    seen: set[tuple[int, int]] = set()
    members = [AIOKafkaConsumer(TOPIC, bootstrap_servers=b.bootstrap, group_id=group,
                                enable_auto_commit=False, auto_offset_reset="earliest",
                                retry_backoff_ms=50, **FAST_GROUP) for _ in range(2)]

    async def member(consumer: AIOKafkaConsumer, done: asyncio.Event) -> None:
        await consumer.start()
        while not done.is_set():
            batch = await consumer.getmany(timeout_ms=100)
            seen.update((r.partition, r.offset) for rs in batch.values() for r in rs)
            if consumer.assignment():
                with contextlib.suppress(Exception):  # an app retries with its next commit
                    await consumer.commit()

    done = asyncio.Event()
    tasks = [asyncio.create_task(member(c, done)) for c in members]
    try:
        deadline = time.monotonic() + 40
        while not (seen == EXPECTED and not b.faults()
                   and await asyncio.to_thread(all_committed, b.bootstrap, group)):
            assert time.monotonic() < deadline, (len(seen), b.faults())
            for task in tasks:
                if task.done():
                    task.result()
            await asyncio.sleep(0.2)
    finally:
        done.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        for consumer in members:
            await consumer.stop()
    assert_recovered(b, group, seen)


# kafka-python ------------------------------------------------------------------------------------

class KpMember:
    """A kafka-python consumer polled and committing on its own thread."""

    def __init__(self, bootstrap: str, group: str, seen: set[tuple[int, int]]) -> None:
        from tests.groups.helpers import kp_consumer

        self.consumer = kp_consumer(bootstrap, TOPIC, group, metadata_first=True,
                                    retry_backoff_ms=50)
        self.seen = seen
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                batch = self.consumer.poll(timeout_ms=200)
                self.seen.update((r.partition, r.offset) for rs in batch.values() for r in rs)
                if self.consumer.assignment():
                    with contextlib.suppress(Exception):  # an app retries with its next commit
                        self.consumer.commit()
        except Exception as exc:  # noqa: BLE001 - surfaced by the test
            self.errors.append(exc)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(15)
        self.consumer.close(autocommit=False)


@pytest.mark.parametrize(("api", "error"), CASES, ids=IDS)
def test_kafka_python_group_recovers(kafka_broker_factory, api, error):
    b = prepare(kafka_broker_factory)
    group = f"kp-{api}-{error}"
    b.inject(api, error)
    seen: set[tuple[int, int]] = set()
    members = [KpMember(b.bootstrap, group, seen) for _ in range(2)]
    try:
        def recovered() -> bool:
            assert not any(m.errors for m in members), [m.errors for m in members]
            return seen == EXPECTED and not b.faults() and all_committed(b.bootstrap, group)
        wait_until_sync(recovered, timeout=40, step=0.2)
    finally:
        for m in members:
            m.close()
    assert_recovered(b, group, seen)


# confluent-kafka ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("api", "error"), CASES, ids=IDS)
def test_confluent_kafka_group_recovers(kafka_broker_factory, api, error):
    from confluent_kafka import Consumer, KafkaException

    b = prepare(kafka_broker_factory)
    group = f"ck-{api}-{error}"
    b.inject(api, error)
    seen: set[tuple[int, int]] = set()
    members = [Consumer({"bootstrap.servers": b.bootstrap, "group.id": group,
                         "session.timeout.ms": 2000, "heartbeat.interval.ms": 100,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "retry.backoff.ms": 50, "reconnect.backoff.ms": 50})
               for _ in range(2)]
    for consumer in members:
        consumer.subscribe([TOPIC])
    try:
        deadline = time.monotonic() + 40
        polls = 0
        while not (seen == EXPECTED and not b.faults() and all_committed(b.bootstrap, group)):
            assert time.monotonic() < deadline, (len(seen), b.faults())
            for _ in range(10):
                polls += 1
                for consumer in members:
                    msg = consumer.poll(0.02)
                    if msg is not None and msg.error() is None:
                        seen.add((msg.partition(), msg.offset()))
            for consumer in members:
                if consumer.assignment():
                    with contextlib.suppress(KafkaException):  # the next commit retries
                        consumer.commit(asynchronous=False)
    finally:
        for consumer in members:
            consumer.close()
    assert_recovered(b, group, seen)
