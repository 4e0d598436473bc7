"""The coordinator runtime seen from the wire: a commit stuck behind a slow __consumer_offsets
write times out with Kafka's code, OffsetFetch during a failing write never returns the lost
offset, and the offsets of a deleted topic are gone when it is re-created (also after a restart),
with stock clients."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from kafkette.coordinator.runtime.error_codes import COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
from kafkette.storage.errors import KafkaStorageError

from .env import COMMIT, FETCH, Env, entity


class HeldLog:
    """Wraps a partition's coordinator log: appends wait for ``release`` and then fail with
    ``fail_with`` if set (nothing reaches the disk) or go to the real log."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.gate = asyncio.Event()
        self.fail_with: Exception | None = None

    def append(self, records: Sequence[tuple[bytes, bytes | None]]) -> asyncio.Future:
        return asyncio.ensure_future(self._append(records))

    def append_inline(self, records: Sequence[tuple[bytes, bytes | None]]) -> asyncio.Future:
        return self.append(records)

    async def _append(self, records: Sequence[tuple[bytes, bytes | None]]) -> None:
        await self.gate.wait()
        if self.fail_with is not None:
            raise self.fail_with
        await self.inner.append(records)

    def read(self) -> Any:
        return self.inner.read()


def _hold(e: Env, group: str) -> HeldLog:
    ctx = e.coordinator.runtime.contexts[e.coordinator.partition_for(group)]
    held = e.run(lambda: HeldLog(ctx.log))
    e.run(lambda: setattr(ctx, "log", held))
    return held


def _release(e: Env, held: HeldLog, fail_with: Exception | None = None) -> None:
    def go() -> None:
        held.fail_with = fail_with
        held.gate.set()
    e.run(go)


def _send_commit(m: Any, group: str, offset: int) -> None:
    from datetime import timedelta

    from kafkette.protocol.build import item_type
    from kafkette.protocol.codec import request_type

    cls = request_type(COMMIT, 9)
    part = entity(item_type(cls, "topics"), "partitions", partition_index=0,
                  committed_offset=offset, committed_leader_epoch=-1, committed_metadata="")
    m.send(COMMIT, 9, group_id=group, generation_id_or_member_epoch=-1, member_id="",
           group_instance_id=None, retention_time=timedelta(milliseconds=-1),
           topics=(entity(cls, "topics", name="t", partitions=(part,)),))


def _codes(response: Any) -> list[int]:
    return [p.error_code for t in response.topics for p in t.partitions]


def _send_fetch(m: Any, group: str) -> None:
    from kafkette.protocol.build import item_type, make
    from kafkette.protocol.codec import request_type

    cls = request_type(FETCH, 9)
    topics = (make(item_type(item_type(cls, "groups"), "topics"), name="t", partition_indexes=(0,)),)
    m.send(FETCH, 9, groups=(entity(cls, "groups", group_id=group, member_id=None,
                                    member_epoch=-1, topics=topics),), require_stable=False)


def test_commit_stuck_behind_a_slow_write_times_out_like_kafka(make_env):
    e = make_env(**{"offsets.commit.timeout.ms": 5000})
    e.create_topic("t", 1)
    gid = e.group_id()
    a, b = e.member(), e.member()
    assert a.commit(gid, {("t", 0): 1}) == {("t", 0): 0}
    held = _hold(e, gid)
    _send_commit(a, gid, 2)  # its append is held
    a.wait_parked()
    _send_commit(b, gid, 3)  # lingers behind it
    b.wait_parked()
    e.advance(4999)
    assert a.is_parked() and b.is_parked()
    e.advance(1)
    # Kafka's runtime fails the write with a TimeoutException (REQUEST_TIMED_OUT) and
    # GroupCoordinatorService answers it as COORDINATOR_NOT_AVAILABLE.
    assert _codes(a.result()) == [COORDINATOR_NOT_AVAILABLE]
    assert _codes(b.result()) == [COORDINATOR_NOT_AVAILABLE]
    _release(e, held)  # the writes land after all (Kafka does not take them back)
    assert a.fetch(gid, [("t", 0)]) == {("t", 0): (3, -1, "", 0)}


def test_offset_fetch_during_a_failing_write_never_returns_the_lost_offset(make_env):
    e = make_env()
    e.create_topic("t", 1)
    gid = e.group_id()
    a, b = e.member(), e.member()
    assert a.commit(gid, {("t", 0): 5}) == {("t", 0): 0}
    held = _hold(e, gid)
    _send_commit(a, gid, 9)
    a.wait_parked()
    _send_fetch(b, gid)  # committed read: waits behind the pending write
    b.wait_parked()
    _release(e, held, KafkaStorageError("disk failed"))
    assert _codes(a.result()) == [NOT_COORDINATOR]
    fetched = b.result()
    assert fetched.groups[0].error_code == 0
    assert [(p.committed_offset, p.error_code) for p in fetched.groups[0].topics[0].partitions] \
        == [(5, 0)]
    assert a.fetch(gid, [("t", 0)]) == {("t", 0): (5, -1, "", 0)}  # after the reload too


def test_offsets_of_a_deleted_topic_are_gone_when_it_is_recreated(kafka_broker_factory):
    from kafka import KafkaConsumer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.structs import OffsetAndMetadata

    broker = kafka_broker_factory()
    boot = broker.bootstrap
    admin = KafkaAdminClient(bootstrap_servers=boot)
    try:
        admin.create_topics([NewTopic("doomed", 2, 1), NewTopic("kept", 1, 1)])
        consumer = KafkaConsumer(bootstrap_servers=boot, group_id="g-doomed",
                                 enable_auto_commit=False)
        try:
            consumer.commit({TopicPartition("doomed", 0): OffsetAndMetadata(11, "", -1),
                             TopicPartition("doomed", 1): OffsetAndMetadata(12, "", -1),
                             TopicPartition("kept", 0): OffsetAndMetadata(13, "", -1)})
            assert consumer.committed(TopicPartition("doomed", 1)) == 12
        finally:
            consumer.close()
        admin.delete_topics(["doomed"])
        admin.create_topics([NewTopic("doomed", 2, 1)])
        expected = {TopicPartition("kept", 0): 13}
        assert _committed(admin, "g-doomed") == expected
    finally:
        admin.close()
    broker.restart()
    admin = KafkaAdminClient(bootstrap_servers=boot)
    try:
        assert _committed(admin, "g-doomed") == expected
        consumer = KafkaConsumer(bootstrap_servers=boot, group_id="g-doomed",
                                 enable_auto_commit=False)
        try:
            assert consumer.committed(TopicPartition("doomed", 0)) is None  # OffsetFetch: -1
        finally:
            consumer.close()
    finally:
        admin.close()


def _committed(admin: Any, group: str) -> dict:
    return {tp: om.offset for tp, om in admin.list_group_offsets(group)[group].items()}
