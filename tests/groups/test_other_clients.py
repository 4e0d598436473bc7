"""kafka-python and confluent-kafka (librdkafka) consumer groups against kafkette."""

from __future__ import annotations

import threading

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KTopicPartition

from .helpers import covers_exactly


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

def _kp_consumer(bootstrap: str, topic: str, group: str) -> KafkaConsumer:
    return KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                         enable_auto_commit=False, auto_offset_reset="earliest",
                         session_timeout_ms=6000, heartbeat_interval_ms=100,
                         fetch_max_wait_ms=100)


def _poll_all(consumers: list[KafkaConsumer], records: list, until, rounds: int = 200) -> None:
    """Poll every consumer in turn from this thread (kafka-python consumers are not
    thread-safe) until ``until()`` holds."""
    for _ in range(rounds):
        for c in consumers:
            records.extend(r for rs in c.poll(timeout_ms=50).values() for r in rs)
        if until():
            return
    raise AssertionError(f"condition not reached: {[c.assignment() for c in consumers]}, "
                         f"{len(records)} records")


def test_kafka_python_split_commit_resume(kafka_broker_factory):
    b = kafka_broker_factory(**{"num.partitions": 4})
    topic, group = "kp4", "kp-group"
    producer = KafkaProducer(bootstrap_servers=b.bootstrap)
    for i in range(40):
        producer.send(topic, f"v{i}".encode(), partition=i % 4)
    producer.flush()
    producer.close()

    consumers = [_kp_consumer(b.bootstrap, topic, group) for _ in range(2)]
    records: list = []

    def assigned(i: int) -> set[int]:
        return {tp.partition for tp in consumers[i].assignment()}
    try:
        _poll_all(consumers, records, lambda: covers_exactly([assigned(0), assigned(1)], 4)
                  and len(assigned(0)) == 2 and len(records) == 40)
        for i, c in enumerate(consumers):
            c.commit({KTopicPartition(topic, p): _offset(5 + p) for p in assigned(i)})
        # one leaves: the other takes all four partitions
        consumers.pop().close()
        _poll_all(consumers, records, lambda: assigned(0) == {0, 1, 2, 3})
    finally:
        for c in consumers:
            c.close()
    c = _kp_consumer(b.bootstrap, topic, group)
    try:
        got: list = []
        _poll_all([c], got, lambda: len(got) == 40 - sum(5 + p for p in range(4)))
        for p in range(4):
            assert c.committed(KTopicPartition(topic, p)) == 5 + p
        firsts: dict[int, int] = {}
        for r in got:
            firsts.setdefault(r.partition, r.offset)
        assert firsts == {p: 5 + p for p in range(4)}
    finally:
        c.close()


def _offset(n: int):
    from kafka.structs import OffsetAndMetadata

    try:
        return OffsetAndMetadata(n, "", -1)
    except TypeError:
        return OffsetAndMetadata(n, "")


# confluent-kafka ---------------------------------------------------------------------------------

def _ck_consumer(bootstrap: str, group: str, strategy: str) -> Consumer:
    return Consumer({
        "bootstrap.servers": bootstrap, "group.id": group,
        "partition.assignment.strategy": strategy, "session.timeout.ms": 2000,
        "heartbeat.interval.ms": 100, "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 1000,
    })


class CkMember:
    """Polled from the test thread: librdkafka runs rebalance callbacks inside poll()."""

    def __init__(self, bootstrap: str, topic: str, group: str, strategy: str) -> None:
        self.consumer = _ck_consumer(bootstrap, group, strategy)
        self.consumer.subscribe([topic])
        self.records: list = []

    def poll(self) -> None:
        msg = self.consumer.poll(0.02)
        if msg is not None and msg.error() is None:
            self.records.append(msg)

    def assigned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def close(self) -> None:
        self.consumer.close()


def _poll_members(members: list[CkMember], until, rounds: int = 500) -> None:
    for _ in range(rounds):
        for m in members:
            m.poll()
        if until():
            return
    raise AssertionError("condition not reached")


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
        _poll_members(members, lambda: covers_exactly([m.assigned() for m in members], 6)
                      and all(len(m.assigned()) == 3 for m in members))
        members.append(CkMember(b.bootstrap, topic, group, strategy))
        _poll_members(members, lambda: covers_exactly([m.assigned() for m in members], 6)
                      and all(len(m.assigned()) == 2 for m in members))
        _poll_members(members, lambda: sum(len(m.records) for m in members) >= 30)
        owned = sorted(members[0].assigned())
        members[0].consumer.commit(offsets=[CTopicPartition(topic, p, 3) for p in owned],
                                   asynchronous=False)
        members.pop(0).close()
        _poll_members(members, lambda: covers_exactly([m.assigned() for m in members], 6))
        committed = members[0].consumer.committed(
            [CTopicPartition(topic, p) for p in owned], timeout=10)
        assert {tp.partition: tp.offset for tp in committed} == {p: 3 for p in owned}
    finally:
        for m in members:
            m.close()
