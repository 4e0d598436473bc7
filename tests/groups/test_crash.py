"""kill -9 of the broker process: acknowledged commits and groups survive the restart."""

from __future__ import annotations

import threading
import uuid

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from broker.testing import BrokerProcess
from broker.testing import test_config as broker_config
from protocol.build import item_type, make
from protocol.codec import request_type
from tests.wire import WireClient, entity

from .helpers import wait_until


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
