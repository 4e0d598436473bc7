"""kill -9 of the broker process: acknowledged commits and groups survive the restart."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from confluent_kafka import TopicPartition as CTopicPartition
from kafka import TopicPartition as KTopicPartition

from kafkette.broker.testing import BrokerProcess
from kafkette.broker.testing import test_config as broker_config
from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type
from tests.compat.kafka_python import produce
from tests.wire import WireClient, entity

from .helpers import (
    KP_POLL_MS,
    CkMember,
    describe_group,
    kp_consumer,
    kp_offset,
    list_groups,
    wait_until,
    wait_until_sync,
)


@pytest.fixture
def broker_process(tmp_path):
    proc = BrokerProcess(broker_config(str(tmp_path), **{"num.partitions": 4,
                                                         "offsets.topic.num.partitions": 5}))
    yield proc
    proc.kill()


def _commit(client: WireClient, group: str, topic: str, offsets: dict[int, int]) -> list[int]:
    cls = request_type(8, 8)
    topic_entity = entity(cls, "topics", name=topic, partitions=tuple(
        entity(item_type(cls, "topics"), "partitions", partition_index=p, committed_offset=o, committed_leader_epoch=-1,
               committed_metadata=None)
        for p, o in offsets.items()))
    r = client.request(8, 8, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                       group_instance_id=None, topics=(topic_entity,))
    return [p.error_code for t in r.topics for p in t.partitions]


def _fetch(client: WireClient, group: str, topic: str, partitions: list[int]) -> dict[int, int]:
    cls = request_type(9, 8)
    topics_cls = item_type(item_type(cls, "groups"), "topics")
    g = entity(cls, "groups", group_id=group, topics=(
        make(topics_cls, name=topic, partition_indexes=tuple(partitions)),))
    r = client.request(9, 8, groups=(g,), require_stable=True)
    return {p.partition_index: p.committed_offset for t in r.groups[0].topics for p in t.partitions}


def test_acknowledged_commits_survive_kill9(broker_process):
    boot = broker_process.bootstrap
    with WireClient(boot) as setup:
        setup.request(3, 12, topics=(entity(request_type(3, 12), "topics", name="crash",
                                            topic_id=uuid.UUID(int=0)),),
                      allow_auto_topic_creation=True, include_topic_authorized_operations=False)
    acked: dict[tuple[str, int], int] = {}
    stop = threading.Event()

    def writer(idx: int) -> None:
        group = f"crash-{idx}"
        with WireClient(boot) as c:
            n = 0
            while not stop.is_set():
                n += 1
                try:
                    errors = _commit(c, group, "crash", {p: n * 10 + p for p in range(4)})
                except (ConnectionError, OSError):
                    return
                if errors == [0, 0, 0, 0]:
                    acked[(group, 0)] = n  # every partition of this round was acknowledged

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    wait_until_rounds = 0
    while min((acked.get((f"crash-{i}", 0), 0) for i in range(4)), default=0) < 20:
        threading.Event().wait(0.02)
        wait_until_rounds += 1
        assert wait_until_rounds < 1000
    broker_process.kill()
    stop.set()
    for t in threads:
        t.join(10)
    broker_process.start()
    with WireClient(broker_process.bootstrap) as c:
        for i in range(4):
            n = acked[(f"crash-{i}", 0)]
            got = _fetch(c, f"crash-{i}", "crash", [0, 1, 2, 3])
            # the last acknowledged round (or a later unacknowledged one) is there
            assert all(got[p] >= n * 10 + p for p in range(4)), (n, got)
            assert all((got[p] - p) % 10 == 0 for p in range(4))


async def test_group_and_offsets_survive_kill9(broker_process):
    boot = broker_process.bootstrap
    c = AIOKafkaConsumer("kept", bootstrap_servers=boot, group_id="kept-group",
                         enable_auto_commit=False, session_timeout_ms=10000,
                         heartbeat_interval_ms=200)
    await c.start()
    try:
        await wait_until(lambda: len(c.assignment()) == 4)
        await c.commit({TopicPartition("kept", p): 7 + p for p in range(4)})
        member_id = c._coordinator.member_id
        broker_process.kill()
        broker_process.start()
        with WireClient(broker_process.bootstrap) as w:
            d = w.request(15, 5, groups=("kept-group",),
                          include_authorized_operations=False).groups[0]
            assert d.group_state == "Stable" and [m.member_id for m in d.members] == [member_id]
            assert _fetch(w, "kept-group", "kept", [0, 1, 2, 3]) == {p: 7 + p for p in range(4)}
    finally:
        await c.stop()
    # a consumer that does not subscribe reads the committed offsets without joining the group
    c2 = AIOKafkaConsumer(bootstrap_servers=broker_process.bootstrap,
                          group_id="kept-group", enable_auto_commit=False)
    await c2.start()
    try:
        for p in range(4):
            assert await c2.committed(TopicPartition("kept", p)) == 7 + p
    finally:
        await c2.stop()


# kill -9 of the broker under real kafka-python and confluent-kafka consumers ----------------------

class _KpMember:
    """kafka-python, polled from the test thread, with the interface of CkMember."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        self.topic = topic
        self.consumer = kp_consumer(bootstrap, topic, group, metadata_first=True)
        self.records: list[tuple[int, int]] = []

    def poll(self) -> None:
        batch = self.consumer.poll(timeout_ms=KP_POLL_MS)
        self.records.extend((r.partition, r.offset) for rs in batch.values() for r in rs)

    def assigned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def member_id(self) -> str:
        return self.consumer.group_metadata().member_id

    def commit(self, offsets: dict[int, int]) -> None:
        self.consumer.commit({KTopicPartition(self.topic, p): kp_offset(o)
                              for p, o in offsets.items()})

    def committed(self, partitions: list[int]) -> dict[int, int]:
        return {p: self.consumer.committed(KTopicPartition(self.topic, p)) for p in partitions}

    def close(self) -> None:
        self.consumer.close()


class _CkMember(CkMember):
    """confluent-kafka with (partition, offset) records and the calls of _KpMember."""

    def __init__(self, bootstrap: str, topic: str, group: str, strategy: str) -> None:
        super().__init__(bootstrap, topic, group, strategy, **{"session.timeout.ms": 6000})
        self.topic = topic

    def poll(self) -> None:
        msg = self.consumer.poll(0.02)
        if msg is not None and msg.error() is None:
            self.records.append((msg.partition(), msg.offset()))

    def member_id(self) -> str:
        return self.consumer.memberid()

    def commit(self, offsets: dict[int, int]) -> None:
        self.consumer.commit(offsets=[CTopicPartition(self.topic, p, o) for p, o in offsets.items()],
                             asynchronous=False)

    def committed(self, partitions: list[int]) -> dict[int, int]:
        got = self.consumer.committed([CTopicPartition(self.topic, p) for p in partitions],
                                      timeout=10)
        return {tp.partition: tp.offset for tp in got}


def _member(client: str, bootstrap: str, topic: str, group: str) -> Any:
    if client == "kafka-python":
        return _KpMember(bootstrap, topic, group)
    return _CkMember(bootstrap, topic, group, client.removeprefix("confluent-"))


def _poll_until(member: Any, pred, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, (member.assigned(), len(member.records))
        member.poll()


@pytest.mark.parametrize("client", ["kafka-python", "confluent-range",
                                    "confluent-cooperative-sticky"])
def test_real_client_group_and_offsets_survive_kill9(broker_process, client: str):
    """A member commits, the broker is SIGKILLed and restarted: the group (same member,
    protocol and assignment) and the offsets are back, the member carries on (fetches and
    commits in its generation), and a new consumer of the group resumes from the offsets."""
    boot = broker_process.bootstrap
    topic, group = f"k9-{client}", f"k9-group-{client}"
    produce(boot, topic, 40, partitions=4)
    committed = {p: 3 + p for p in range(4)}
    first = _member(client, boot, topic, group)
    try:
        _poll_until(first, lambda: first.assigned() == {0, 1, 2, 3} and len(first.records) == 40)
        first.commit(committed)
        member_id = first.member_id()
        before = describe_group(boot, group)
        assert before.group_state == "Stable"
        assert [m.member_id for m in before.members] == [member_id]

        broker_process.kill()
        broker_process.start()
        after = describe_group(boot, group)
        assert (after.group_state, after.protocol_type, after.protocol_data) == (
            "Stable", "consumer", before.protocol_data)
        assert [(m.member_id, m.member_assignment) for m in after.members] == [
            (member_id, before.members[0].member_assignment)]
        assert list_groups(boot)[group] == "Stable"
        with WireClient(boot) as w:
            assert _fetch(w, group, topic, [0, 1, 2, 3]) == committed

        # The member carries on in the reloaded group: it reads what is produced now.
        produce(boot, topic, 4, partitions=4)
        _poll_until(first, lambda: len(first.records) == 44)
        assert sorted(first.records[40:]) == [(p, 10) for p in range(4)]
        # and commits as the reloaded generation's member (the broker checks generation and id)
        first.commit(committed)
        assert first.member_id() == member_id
        assert [m.member_id for m in describe_group(boot, group).members] == [member_id]
    finally:
        first.close()
    # its LeaveGroup (librdkafka may return from close before the broker handled it)
    wait_until_sync(lambda: describe_group(boot, group).group_state == "Empty", timeout=4)

    second = _member(client, boot, topic, group)
    try:
        _poll_until(second, lambda: len(second.records) == 44 - sum(committed.values()))
        assert second.committed([0, 1, 2, 3]) == committed
        firsts: dict[int, int] = {}
        for p, o in second.records:
            firsts.setdefault(p, o)
        assert firsts == committed
        assert sorted(second.records) == [(p, o) for p in range(4) for o in range(3 + p, 11)]
    finally:
        second.close()
