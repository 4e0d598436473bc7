"""aiokafka consumer groups against kafkette: split, rebalance on close/kill, commit/resume,
static membership."""

from __future__ import annotations

import asyncio
import signal
import time

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from .helpers import (
    FAST_GROUP,
    child_assignment,
    covers_exactly,
    describe_group,
    parts,
    reap_child,
    spawn_consumer,
    wait_until,
)


def mine(cs: list[AIOKafkaConsumer]) -> set[int]:
    return set().union(*(parts(c.assignment()) for c in cs))


def consumer(bootstrap: str, topic: str, group: str, **kw) -> AIOKafkaConsumer:
    opts = {"enable_auto_commit": False, "auto_offset_reset": "earliest", **FAST_GROUP, **kw}
    return AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, **opts)


async def test_three_consumers_split_then_close_and_kill(kafka_broker_factory):
    b = kafka_broker_factory(**{"num.partitions": 6})
    topic, group = "split6", "aio-split"
    cs = [consumer(b.bootstrap, topic, group) for _ in range(2)]
    for c in cs:
        await c.start()
    child = spawn_consumer(b.bootstrap, topic, group)
    try:
        # three members (two here, one in a child process) share the six partitions
        await wait_until(lambda: all(len(c.assignment()) == 2 for c in cs)
                         and not parts(cs[0].assignment()) & parts(cs[1].assignment())
                         and child_assignment(child) == set(range(6)) - mine(cs))
        # kill -9 the third: no LeaveGroup; the others take over after its session timeout
        child.send_signal(signal.SIGKILL)
        child.wait(5)
        await wait_until(lambda: covers_exactly([parts(c.assignment()) for c in cs], 6))
        # close one cleanly (LeaveGroup): the last one gets everything
        await cs[1].stop()
        await wait_until(lambda: parts(cs[0].assignment()) == set(range(6)))
    finally:
        child.kill()
        for c in cs:
            await c.stop()


async def test_killed_member_stays_until_its_session_timeout(kafka_broker_factory):
    """A member SIGKILLed (no LeaveGroup) with a 6 s session stays in the group, and keeps its
    partitions, until the session times out; then it is removed and the survivor takes over."""
    b = kafka_broker_factory(**{"num.partitions": 4})
    topic, group = "expiry4", "aio-expiry"
    live = consumer(b.bootstrap, topic, group)
    await live.start()
    child = spawn_consumer(b.bootstrap, topic, group, session_ms=6000)
    try:
        await wait_until(lambda: len(live.assignment()) == 2
                         and child_assignment(child) == set(range(4)) - parts(live.assignment()))
        kept = parts(live.assignment())
        live_id = live._coordinator.member_id
        (dead,) = {m.member_id for m in describe_group(b.bootstrap, group).members} - {live_id}
        child.send_signal(signal.SIGKILL)
        child.wait(5)
        killed = time.monotonic()
        # the child heartbeated every 100 ms until killed: it cannot expire before ~5.9 s
        while time.monotonic() - killed < 5:
            d = describe_group(b.bootstrap, group)
            assert d.group_state == "Stable", (time.monotonic() - killed, d.group_state)
            assert sorted(m.member_id for m in d.members) == sorted([live_id, dead])
            assert parts(live.assignment()) == kept
            await asyncio.sleep(0.25)
        await wait_until(lambda: parts(live.assignment()) == set(range(4)), timeout=10)
        assert 5.5 < time.monotonic() - killed < 9
        d = describe_group(b.bootstrap, group)
        assert d.group_state == "Stable" and [m.member_id for m in d.members] == [live_id]
    finally:
        reap_child(child)
        await live.stop()


async def test_three_in_process_consumers_no_overlap(kafka_broker_factory):
    b = kafka_broker_factory(**{"num.partitions": 6})
    cs = [consumer(b.bootstrap, "t3", "aio-three") for _ in range(3)]
    try:
        for c in cs:
            await c.start()
        await wait_until(lambda: covers_exactly([parts(c.assignment()) for c in cs], 6)
                         and all(len(c.assignment()) == 2 for c in cs))
        await cs[2].stop()
        await wait_until(lambda: covers_exactly([parts(c.assignment()) for c in cs[:2]], 6))
    finally:
        for c in cs:
            await c.stop()


async def test_commit_then_resume(kafka_broker_factory):
    b = kafka_broker_factory(**{"num.partitions": 2})
    topic, group = "resume", "aio-resume"
    producer = AIOKafkaProducer(bootstrap_servers=b.bootstrap)
    await producer.start()
    try:
        for i in range(20):
            await producer.send_and_wait(topic, f"m{i}".encode(), partition=i % 2)
    finally:
        await producer.stop()
    c1 = consumer(b.bootstrap, topic, group)
    await c1.start()
    try:
        seen = []
        while len(seen) < 8:
            batch = await c1.getmany(timeout_ms=500, max_records=8 - len(seen))
            for _tp, msgs in batch.items():
                seen.extend(msgs)
        committed = {}
        for m in seen:
            tp = TopicPartition(m.topic, m.partition)
            committed[tp] = max(committed.get(tp, 0), m.offset + 1)
        await c1.commit(committed)
    finally:
        await c1.stop()
    c2 = consumer(b.bootstrap, topic, group)
    await c2.start()
    try:
        for tp, off in committed.items():
            assert await c2.committed(tp) == off
        first: dict[int, int] = {}
        rest = []
        while sum(1 for _ in rest) < 20 - len(seen):
            batch = await c2.getmany(timeout_ms=500)
            for tp, msgs in batch.items():
                first.setdefault(tp.partition, msgs[0].offset)
                rest.extend(msgs)
        for tp, off in committed.items():
            assert first[tp.partition] == off
        assert len(rest) == 20 - len(seen)
    finally:
        await c2.stop()


async def test_static_membership_restart_without_rebalance(kafka_broker_factory):
    b = kafka_broker_factory(**{"num.partitions": 4})
    topic, group = "static4", "aio-static"
    kw = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 200}
    a = consumer(b.bootstrap, topic, group, group_instance_id="inst-a", **kw)
    c = consumer(b.bootstrap, topic, group, group_instance_id="inst-b", **kw)
    for x in (a, c):
        await x.start()
    try:
        await wait_until(lambda: covers_exactly([parts(a.assignment()), parts(c.assignment())], 4)
                         and len(a.assignment()) == 2)
        coord = b.broker.coordinator
        generation = b.run(lambda: coord.shard_for(group).groups[group].generation)
        before = parts(c.assignment())
        await c.stop()  # static members send no LeaveGroup
        c2 = consumer(b.bootstrap, topic, group, group_instance_id="inst-b", **kw)
        await c2.start()
        try:
            await wait_until(lambda: parts(c2.assignment()) == before)
            await asyncio.sleep(0.5)
            group_obj = b.run(lambda: coord.shard_for(group).groups[group])
            assert group_obj.generation == generation
            assert group_obj.state.value == "Stable"
            assert parts(a.assignment()) | parts(c2.assignment()) == set(range(4))
        finally:
            await c2.stop()
    finally:
        await a.stop()
