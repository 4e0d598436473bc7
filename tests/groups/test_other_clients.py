"""kafka-python and confluent-kafka (librdkafka) consumer groups against kafkette."""

from __future__ import annotations

import queue
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka import TopicPartition as CTopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KTopicPartition

from .helpers import (
    KP_POLL_MS,
    CkMember,
    child_assignment,
    covers_exactly,
    describe_group,
    kp_consumer,
    kp_offset,
    poll_members,
    reap_child,
    spawn_ck_consumer,
    wait_until_sync,
)


class Poller:
    """Runs a consumer's poll loop in a thread (group protocol work happens inside poll)."""

    def __init__(self, poll) -> None:
        self._poll = poll
        self.records: list = []
        self.errors: list[BaseException] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                self.records.extend(self._poll())
            except Exception as exc:  # noqa: BLE001 - surfaced by the test
                self.errors.append(exc)
                raise

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)


# kafka-python ------------------------------------------------------------------------------------

def test_kafka_python_split_commit_resume(kafka_broker_factory):
    b = kafka_broker_factory(**{"num.partitions": 4})
    topic, group = "kp4", "kp-group"
    producer = KafkaProducer(bootstrap_servers=b.bootstrap)
    for i in range(40):
        producer.send(topic, f"v{i}".encode(), partition=i % 4)
    producer.flush()
    producer.close()

    members = [_KpThread(b.bootstrap, topic, group) for _ in range(2)]
    try:
        def split() -> bool:
            assert not any(m.errors for m in members), [m.errors for m in members]
            got = [m.assigned for m in members]
            # a member alone at first reads every partition, and its partitions are read
            # again by their new owner (nothing is committed yet): count distinct records
            return (covers_exactly(got, 4) and all(len(a) == 2 for a in got)
                    and len({r for m in members for r in m.records}) == 40)
        wait_until_sync(split, timeout=20)
        for m in members:
            owned = sorted(m.assigned)
            m.call(lambda c, owned=owned: c.commit(
                {KTopicPartition(topic, p): kp_offset(5 + p) for p in owned}))
        # one leaves: the other takes all four partitions
        members.pop().close()
        wait_until_sync(lambda: members[0].assigned == {0, 1, 2, 3}, timeout=20)
    finally:
        for m in members:
            m.close()
    resumed = _KpThread(b.bootstrap, topic, group)
    try:
        wait_until_sync(lambda: len(resumed.records) == 40 - sum(5 + p for p in range(4)),
                        timeout=20)
        committed = resumed.call(
            lambda c: {p: c.committed(KTopicPartition(topic, p)) for p in range(4)})
        assert committed == {p: 5 + p for p in range(4)}
        firsts: dict[int, int] = {}
        for partition, offset in resumed.records:
            firsts.setdefault(partition, offset)
        assert firsts == {p: 5 + p for p in range(4)}
    finally:
        resumed.close()


class _KpThread:
    """One kafka-python consumer polled by its own thread with long polls (KP_POLL_MS), so
    that no poll times out in the middle of a join; records and assignment are kept here."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        self.consumer = kp_consumer(bootstrap, topic, group, metadata_first=True)
        self.records: list[tuple[int, int]] = []
        self.assigned: set[int] = set()
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self._calls: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                batch = self.consumer.poll(timeout_ms=KP_POLL_MS)
                self.records.extend((r.partition, r.offset) for rs in batch.values() for r in rs)
                self.assigned = {tp.partition for tp in self.consumer.assignment()}
                while not self._calls.empty():
                    fn, done = self._calls.get()
                    try:
                        done.set_result(fn(self.consumer))
                    except Exception as exc:  # noqa: BLE001 - raised in the caller
                        done.set_exception(exc)
        except Exception as exc:  # noqa: BLE001 - surfaced by the test
            self.errors.append(exc)

    def call(self, fn: Callable[[KafkaConsumer], Any], timeout: float = 20) -> Any:
        """Run ``fn(consumer)`` on the polling thread (kafka-python is not thread-safe)."""
        done: Future = Future()
        self._calls.put((fn, done))
        return done.result(timeout)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        self.consumer.close()


def test_kafka_python_three_consumers_split_six_partitions(kafka_broker_factory):
    """Three kafka-python members split six partitions: two each, no overlap, full coverage;
    then each reads exactly the records of its own partitions."""
    b = kafka_broker_factory(**{"num.partitions": 6})
    topic, group = "kp6", "kp-three"
    b.run(b.broker.logs.create_topic(topic, 6))
    members: list[_KpThread] = []
    try:
        members.extend(_KpThread(b.bootstrap, topic, group) for _ in range(3))

        def split() -> bool:
            assert not any(m.errors for m in members), [m.errors for m in members]
            got = [m.assigned for m in members]
            return covers_exactly(got, 6) and all(len(a) == 2 for a in got)
        wait_until_sync(split, timeout=20)
        mine = [m.assigned for m in members]
        described = describe_group(b.bootstrap, group)
        assert described.group_state == "Stable" and len(described.members) == 3
        producer = KafkaProducer(bootstrap_servers=b.bootstrap)
        for i in range(60):
            producer.send(topic, f"v{i}".encode(), partition=i % 6)
        producer.flush()
        producer.close()
        wait_until_sync(lambda: sum(len(m.records) for m in members) >= 60, timeout=20)
        assert [m.assigned for m in members] == mine
        for m, parts in zip(members, mine, strict=True):
            assert sorted(m.records) == [(p, o) for p in sorted(parts) for o in range(10)]
    finally:
        for m in members:
            m.close()


# confluent-kafka ---------------------------------------------------------------------------------

@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_confluent_kafka_group(kafka_broker_factory, strategy: str):
    b = kafka_broker_factory(**{"num.partitions": 6})
    topic, group = f"ck-{strategy}", f"ck-group-{strategy}"
    producer = Producer({"bootstrap.servers": b.bootstrap})
    for i in range(30):
        producer.produce(topic, f"v{i}".encode(), partition=i % 6)
    producer.flush(10)
    members = [CkMember(b.bootstrap, topic, group, strategy) for _ in range(2)]
    try:
        poll_members(members, lambda: covers_exactly([m.assigned() for m in members], 6)
                      and all(len(m.assigned()) == 3 for m in members))
        members.append(CkMember(b.bootstrap, topic, group, strategy))
        poll_members(members, lambda: covers_exactly([m.assigned() for m in members], 6)
                      and all(len(m.assigned()) == 2 for m in members))
        poll_members(members, lambda: sum(len(m.records) for m in members) >= 30)
        owned = sorted(members[0].assigned())
        members[0].consumer.commit(offsets=[CTopicPartition(topic, p, 3) for p in owned],
                                   asynchronous=False)
        members.pop(0).close()
        poll_members(members, lambda: covers_exactly([m.assigned() for m in members], 6))
        committed = members[0].consumer.committed(
            [CTopicPartition(topic, p) for p in owned], timeout=10)
        assert {tp.partition: tp.offset for tp in committed} == {p: 3 for p in owned}
    finally:
        for m in members:
            m.close()


def test_confluent_cooperative_sticky_member_killed_then_commit_resume(kafka_broker_factory):
    """cooperative-sticky: a member SIGKILLed (no LeaveGroup) loses its partitions to the others
    after its session timeout, not before; offsets they commit are where a new member starts."""
    b = kafka_broker_factory(**{"num.partitions": 6})
    topic, group, strategy = "ck-coop-kill", "ck-coop-kill-group", "cooperative-sticky"
    producer = Producer({"bootstrap.servers": b.bootstrap})
    for i in range(60):
        producer.produce(topic, f"v{i}".encode(), partition=i % 6)
    producer.flush(10)
    members = [CkMember(b.bootstrap, topic, group, strategy) for _ in range(2)]
    child = spawn_ck_consumer(b.bootstrap, topic, group, strategy, session_ms=2000)
    try:
        def three_way_split() -> bool:
            ours = [m.assigned() for m in members]
            theirs = child_assignment(child) or set()
            return covers_exactly([*ours, theirs], 6) and all(len(a) == 2 for a in [*ours, theirs])
        poll_members(members, three_way_split, rounds=1000)
        kept = [m.assigned() for m in members]
        before = describe_group(b.bootstrap, group)
        assert before.group_state == "Stable" and before.protocol_data == strategy
        (dead,) = [m.member_id for m in before.members if m.client_id == "ck-child"]

        child.send_signal(signal.SIGKILL)
        child.wait(5)
        killed = time.monotonic()
        poll_members(members, lambda: covers_exactly([m.assigned() for m in members], 6),
                     rounds=1000)
        # expiry needs the 2 s session timeout (the child heartbeated every 100 ms until killed)
        assert time.monotonic() - killed > 1.5
        # cooperative and sticky: each survivor kept what it had and took one more
        assert all(k < m.assigned() for k, m in zip(kept, members, strict=True))
        after = describe_group(b.bootstrap, group)
        assert after.group_state == "Stable"
        assert sorted(m.member_id for m in after.members) == sorted(
            m.member_id for m in before.members if m.member_id != dead)

        everything = {(p, o) for p in range(6) for o in range(10)}
        poll_members(members, lambda: {(r.partition(), r.offset()) for m in members
                                       for r in m.records} >= everything)
        committed = {p: 2 + p for p in range(6)}
        for m in members:
            m.consumer.commit(offsets=[CTopicPartition(topic, p, committed[p])
                                       for p in sorted(m.assigned())], asynchronous=False)
    finally:
        reap_child(child)
        for m in members:
            m.close()
    resumed = CkMember(b.bootstrap, topic, group, strategy)
    try:
        poll_members([resumed], lambda: len(resumed.records) == 60 - sum(committed.values()),
                     rounds=1000)
        got = resumed.consumer.committed([CTopicPartition(topic, p) for p in range(6)], timeout=10)
        assert {tp.partition: tp.offset for tp in got} == committed
        assert sorted((r.partition(), r.offset()) for r in resumed.records) == [
            (p, o) for p in range(6) for o in range(committed[p], 10)]
    finally:
        resumed.close()
