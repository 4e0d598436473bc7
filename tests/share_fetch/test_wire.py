"""ShareFetch / ShareAcknowledge v1 over the wire with the project codec: sessions and their
epochs, acquisition, acknowledgements and their error codes, long polls, releases."""

from __future__ import annotations

import threading
import time
import uuid
from datetime import timedelta

import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)
from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type
from kafkette.protocol.records import build_batch, decode_records, iter_batches
from tests.dataplane.test_wire import create_topic, produce
from tests.wire import WireClient

SHARE_FETCH, SHARE_ACK = 78, 79
ACCEPT, RELEASE, REJECT = 1, 2, 3
GROUP = "workers"
LOCK_MS = 1000


def set_group_config(bootstrap: str, group: str, **values: str) -> None:
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(k.replace("_", "."), v, incremental_operation=AlterConfigOpType.SET)
        for k, v in values.items()])
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.incremental_alter_configs([resource])[resource].result(30)


def share_fetch(w: WireClient, member: str, epoch: int, topic_id: uuid.UUID,
                partitions: dict[int, list] | None = None, *, max_wait_ms: int = 0,
                max_records: int = 500, group: str = GROUP, forgotten=()):
    cls = request_type(SHARE_FETCH, 1)
    topic_cls = item_type(cls, "topics")
    part_cls = item_type(topic_cls, "partitions")
    batch_cls = item_type(part_cls, "acknowledgement_batches")
    parts = tuple(make(part_cls, partition_index=p, acknowledgement_batches=tuple(
        make(batch_cls, first_offset=f, last_offset=la, acknowledge_types=tuple(types))
        for f, la, types in acks)) for p, acks in (partitions or {0: []}).items())
    forgotten_cls = item_type(cls, "forgotten_topics_data")
    return w.request(SHARE_FETCH, 1, group_id=group, member_id=member, share_session_epoch=epoch,
                     max_wait=timedelta(milliseconds=max_wait_ms), min_bytes=1,
                     max_bytes=1 << 20, max_records=max_records, batch_size=max_records,
                     topics=(make(topic_cls, topic_id=topic_id, partitions=parts),),
                     forgotten_topics_data=tuple(make(forgotten_cls, topic_id=t, partitions=ps)
                                                 for t, ps in forgotten))


def share_ack(w: WireClient, member: str, epoch: int, topic_id: uuid.UUID,
              acks: dict[int, list], group: str = GROUP):
    cls = request_type(SHARE_ACK, 1)
    topic_cls = item_type(cls, "topics")
    part_cls = item_type(topic_cls, "partitions")
    batch_cls = item_type(part_cls, "acknowledgement_batches")
    parts = tuple(make(part_cls, partition_index=p, acknowledgement_batches=tuple(
        make(batch_cls, first_offset=f, last_offset=la, acknowledge_types=tuple(types))
        for f, la, types in batches)) for p, batches in acks.items())
    return w.request(SHARE_ACK, 1, group_id=group, member_id=member, share_session_epoch=epoch,
                     topics=(make(topic_cls, topic_id=topic_id, partitions=parts),))


def acquired(resp) -> list[tuple[int, int, int]]:
    return [(r.first_offset, r.last_offset, r.delivery_count)
            for t in resp.responses for p in t.partitions for r in p.acquired_records]


def part_of(resp):
    return resp.responses[0].partitions[0]


@pytest.fixture
def broker(kafka_broker_factory):
    b = kafka_broker_factory(**{"group.share.min.record.lock.duration.ms": "1000"})
    set_group_config(b.bootstrap, GROUP, share_auto_offset_reset="earliest",
                     share_record_lock_duration_ms=str(LOCK_MS))
    return b


@pytest.fixture
def jobs(broker):
    """Topic ``jobs``, 1 partition, 10 records one per batch; its topic id."""
    with WireClient(broker.bootstrap) as w:
        info = create_topic(w, "jobs", 1)
        for i in range(10):
            produce(w, "jobs", 0, build_batch([(None, b"job-%d" % i)]))
    return info.topic_id


def test_session_epochs(broker, jobs) -> None:
    with WireClient(broker.bootstrap) as w:
        assert share_fetch(w, "m1", 1, jobs).error_code == ErrorCode.share_session_not_found
        resp = share_fetch(w, "m1", 0, jobs, {0: [(0, 0, [ACCEPT])]})
        assert resp.error_code == ErrorCode.invalid_request  # acks in the opening fetch
        resp = share_fetch(w, "m1", 0, jobs, max_records=1)
        assert resp.error_code == ErrorCode.none
        assert resp.acquisition_lock_timeout == timedelta(milliseconds=LOCK_MS)
        assert share_fetch(w, "m1", 5, jobs).error_code == ErrorCode.invalid_share_session_epoch
        assert share_ack(w, "m1", 0, jobs, {0: []}).error_code == \
            ErrorCode.invalid_share_session_epoch
        assert share_fetch(w, "m1", 1, jobs, max_records=1).error_code == ErrorCode.none
        assert share_ack(w, "m1", 2, jobs, {0: [(0, 1, [ACCEPT])]}).error_code == ErrorCode.none
        assert share_ack(w, "m1", 3, jobs, {0: []}).error_code == ErrorCode.none
        assert share_fetch(w, "m1", -1, jobs).error_code == ErrorCode.none  # closes
        assert share_fetch(w, "m1", 4, jobs).error_code == ErrorCode.share_session_not_found
        assert share_ack(w, "m1", -1, jobs, {0: []}).error_code == \
            ErrorCode.share_session_not_found


def test_records_are_shared_and_acknowledged(broker, jobs) -> None:
    with WireClient(broker.bootstrap) as a, WireClient(broker.bootstrap) as b:
        resp = share_fetch(a, "a", 0, jobs, max_records=4)
        assert acquired(resp) == [(0, 3, 1)]
        recs = [r for _, v in iter_batches(part_of(resp).records) for r in decode_records(v)]
        assert [(r.offset, r.value) for r in recs] == [(i, b"job-%d" % i) for i in range(4)]
        assert acquired(share_fetch(b, "b", 0, jobs, max_records=4)) == [(4, 7, 1)]
        # b cannot acknowledge a's records; a's ack is answered
        resp = share_ack(b, "b", 1, jobs, {0: [(0, 0, [ACCEPT])]})
        assert part_of(resp).error_code == ErrorCode.invalid_record_state
        resp = share_ack(a, "a", 1, jobs, {0: [(1, 2, [ACCEPT])]})
        assert part_of(resp).error_code == ErrorCode.none
        resp = share_ack(a, "a", 2, jobs, {0: [(2, 3, [ACCEPT])]})  # 2 is acknowledged already
        assert part_of(resp).error_code == ErrorCode.invalid_record_state
        resp = share_ack(a, "a", 3, jobs, {0: [(0, 0, [ACCEPT]), (3, 3, [ACCEPT])]})
        assert part_of(resp).error_code == ErrorCode.none
        resp = share_ack(a, "a", 4, jobs, {0: [(0, 3, [ACCEPT])]})  # below the SPSO: ignored
        assert part_of(resp).error_code == ErrorCode.none
        # piggy-backed acks: RELEASE 4, REJECT 5, ACCEPT 6-7; the fetch gets the rest
        resp = share_fetch(b, "b", 2, jobs, {0: [(4, 4, [RELEASE]), (5, 5, [REJECT]),
                                               (6, 7, [ACCEPT])]})
        assert part_of(resp).acknowledge_error_code == 0
        assert acquired(resp) == [(4, 4, 2), (8, 9, 1)]
        resp = share_fetch(b, "b", 3, jobs, {0: [(4, 4, [ACCEPT]), (8, 9, [ACCEPT])]},
                           max_wait_ms=100)
        assert part_of(resp).acknowledge_error_code == 0 and acquired(resp) == []


def test_bad_acknowledgements(broker, jobs) -> None:
    with WireClient(broker.bootstrap) as w:
        share_fetch(w, "m", 0, jobs, max_records=4)
        cases = [
            ([(3, 2, [ACCEPT])], ErrorCode.invalid_request),  # reversed
            ([(0, 2, [ACCEPT]), (2, 3, [ACCEPT])], ErrorCode.invalid_request),  # overlap
            ([(0, 1, [ACCEPT, ACCEPT, ACCEPT])], ErrorCode.invalid_request),  # types
            ([(0, 0, [9])], ErrorCode.invalid_request),
            ([(8, 9, [ACCEPT])], ErrorCode.invalid_record_state),  # never acquired
        ]
        epoch = 1
        for batches, code in cases:
            resp = share_ack(w, "m", epoch, jobs, {0: batches})
            epoch += 1
            assert part_of(resp).error_code == code, batches
        # nothing changed: the records are still held and acknowledgeable
        resp = share_ack(w, "m", epoch, jobs, {0: [(0, 3, [ACCEPT])]})
        assert part_of(resp).error_code == ErrorCode.none
        resp = share_ack(w, "m", epoch + 1, uuid.uuid4(), {0: [(0, 0, [ACCEPT])]})
        assert part_of(resp).error_code == ErrorCode.unknown_topic_id
        resp = share_fetch(w, "m", epoch + 2, uuid.uuid4())
        unknown = [p for t in resp.responses for p in t.partitions
                   if p.error_code == ErrorCode.unknown_topic_id]
        assert len(unknown) == 1 and unknown[0].records == b""


def test_nothing_available_waits_max_wait(broker, jobs) -> None:
    with WireClient(broker.bootstrap) as w:
        assert acquired(share_fetch(w, "m", 0, jobs)) == [(0, 9, 1)]
        t0 = time.monotonic()
        resp = share_fetch(w, "m", 1, jobs, max_wait_ms=400)
        assert time.monotonic() - t0 >= 0.35
        assert acquired(resp) == [] and part_of(resp).records == b""  # empty, never null


def test_long_poll_woken_by_append_and_by_release(broker, jobs) -> None:
    with WireClient(broker.bootstrap) as a, WireClient(broker.bootstrap) as b, \
            WireClient(broker.bootstrap) as p:
        assert acquired(share_fetch(a, "a", 0, jobs)) == [(0, 9, 1)]
        share_fetch(b, "b", 0, jobs, max_wait_ms=10)
        timer = threading.Timer(0.3, lambda: produce(p, "jobs", 0, build_batch([(None, b"x")])))
        timer.start()
        t0 = time.monotonic()
        resp = share_fetch(b, "b", 1, jobs, max_wait_ms=10_000)
        timer.join()
        assert 0.2 < time.monotonic() - t0 < 5 and acquired(resp) == [(10, 10, 1)]
        timer = threading.Timer(0.3, lambda: share_ack(a, "a", 1, jobs, {0: [(0, 0, [RELEASE])]}))
        timer.start()
        t0 = time.monotonic()
        resp = share_fetch(b, "b", 2, jobs, max_wait_ms=10_000)
        timer.join()
        assert 0.2 < time.monotonic() - t0 < 5 and acquired(resp) == [(0, 0, 2)]


def test_closed_connection_releases_at_once(broker, jobs) -> None:
    with WireClient(broker.bootstrap) as b:
        a = WireClient(broker.bootstrap)
        assert acquired(share_fetch(a, "a", 0, jobs, max_records=4)) == [(0, 3, 1)]
        share_fetch(b, "b", 0, jobs, max_records=6)
        threading.Timer(0.3, a.close).start()
        t0 = time.monotonic()
        resp = share_fetch(b, "b", 1, jobs, max_wait_ms=10_000)
        assert time.monotonic() - t0 < LOCK_MS / 1000  # before the lock would expire
        assert acquired(resp) == [(0, 3, 2)]  # the delivery count is kept


def test_lock_expiry_redelivers_and_late_ack_fails(broker, jobs) -> None:
    with WireClient(broker.bootstrap) as a, WireClient(broker.bootstrap) as b:
        assert acquired(share_fetch(a, "a", 0, jobs, max_records=2)) == [(0, 1, 1)]
        assert acquired(share_fetch(b, "b", 0, jobs, max_records=8)) == [(2, 9, 1)]
        t0 = time.monotonic()
        resp = share_fetch(b, "b", 1, jobs, {0: [(2, 9, [ACCEPT])]}, max_wait_ms=5000)
        assert 0.5 < time.monotonic() - t0 < 4
        assert acquired(resp) == [(0, 1, 2)]
        resp = share_ack(a, "a", 1, jobs, {0: [(0, 1, [ACCEPT])]})
        assert part_of(resp).error_code == ErrorCode.invalid_record_state


def test_not_leader_names_the_leader(kafka_broker_factory) -> None:
    cluster = kafka_broker_factory(nodes=3)
    with WireClient(cluster.bootstrap) as w:
        info = create_topic(w, "spread", 3)
        resp = share_fetch(w, "m", 0, info.topic_id, {0: [], 1: [], 2: []}, max_wait_ms=0)
        parts = resp.responses[0].partitions
        led_elsewhere = [p for p in parts if p.error_code == ErrorCode.not_leader_or_follower]
        assert led_elsewhere, "with 3 nodes some partition is led by another node"
        endpoints = {e.node_id: (e.host, e.port) for e in resp.node_endpoints}
        for p in led_elsewhere:
            assert p.current_leader.leader_id in endpoints
            assert p.records == b""


def test_state_survives_unloading(broker, jobs) -> None:
    a = WireClient(broker.bootstrap)
    assert acquired(share_fetch(a, "a", 0, jobs)) == [(0, 9, 1)]
    assert part_of(share_ack(a, "a", 1, jobs, {0: [(0, 4, [ACCEPT])]})).error_code == 0
    a.close()  # releases 5-9; with no session left the share-partition is unloaded
    time.sleep(0.3)
    with WireClient(broker.bootstrap) as b:
        # reloaded from the persister: 0-4 done, 5-9 delivered once already
        assert acquired(share_fetch(b, "b", 0, jobs, max_wait_ms=2000)) == [(5, 9, 2)]


def test_read_committed_skips_aborted_transactions(broker) -> None:
    from confluent_kafka import Producer

    with WireClient(broker.bootstrap) as w:
        topic_id = create_topic(w, "txn", 1).topic_id
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "t1"})
    producer.init_transactions(30)
    for values, commit in (([b"c0", b"c1", b"c2"], True), ([b"a0", b"a1"], False),
                           ([b"c3"], True)):
        producer.begin_transaction()
        for v in values:
            producer.produce("txn", value=v)
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    # data 0-2, COMMIT 3, aborted data 4-5, ABORT 6, data 7, COMMIT 8
    set_group_config(broker.bootstrap, "committed", share_auto_offset_reset="earliest",
                     share_isolation_level="read_committed")
    set_group_config(broker.bootstrap, "everything", share_auto_offset_reset="earliest")
    with WireClient(broker.bootstrap) as w:
        resp = share_fetch(w, "m", 0, topic_id, group="committed")
        assert acquired(resp) == [(0, 3, 1), (6, 8, 1)]  # markers in ranges, acked as GAP
        values = {r.offset: r.value for _, v in iter_batches(part_of(resp).records)
                  for r in decode_records(v) if r.value is not None}
        assert {values[o] for o in (0, 1, 2, 7)} == {b"c0", b"c1", b"c2", b"c3"}
        resp = share_fetch(w, "m", 1, topic_id, {0: [(0, 2, [ACCEPT]), (3, 3, [0]),
                                                     (6, 6, [0]), (7, 7, [ACCEPT]),
                                                     (8, 8, [0])]}, group="committed",
                           max_wait_ms=100)
        assert part_of(resp).acknowledge_error_code == 0 and acquired(resp) == []
        resp = share_fetch(w, "m", 0, topic_id, group="everything")
        assert acquired(resp) == [(0, 8, 1)]


def test_acknowledged_records_survive_a_restart(broker, jobs) -> None:
    with WireClient(broker.bootstrap) as a:
        assert acquired(share_fetch(a, "a", 0, jobs)) == [(0, 9, 1)]
        assert part_of(share_ack(a, "a", 1, jobs, {0: [(0, 4, [ACCEPT])]})).error_code == 0
        broker.restart()  # 5-9 held: released as the connection closes, written before stop
    with WireClient(broker.bootstrap) as b:
        resp = share_fetch(b, "b", 0, jobs, max_wait_ms=2000)
        assert acquired(resp) == [(5, 9, 2)]  # never 0-4: their acknowledgement was durable


def test_offsets_reset_of_an_empty_group_is_seen(broker, jobs) -> None:
    from tests.share_state.test_offsets_wire import alter, describe, heartbeat, rows

    with WireClient(broker.bootstrap) as w:
        assert heartbeat(w, GROUP, "m", 0).error_code == ErrorCode.none
        assert acquired(share_fetch(w, "m", 0, jobs)) == [(0, 9, 1)]
        resp = share_fetch(w, "m", -1, jobs, {0: [(0, 9, [ACCEPT])]})  # acks, closes
        assert part_of(resp).acknowledge_error_code == 0
        assert rows(describe(w, GROUP)) == {("jobs", 0): (10, 0)}  # the SPSO, durable
        assert heartbeat(w, GROUP, "m", -1).error_code == ErrorCode.none  # the group is Empty
        resp = alter(w, GROUP, [("jobs", [(0, 3)])])
        assert resp.error_code == ErrorCode.none
        # the share-partition was unloaded with the last session: the new state is read
        assert acquired(share_fetch(w, "n", 0, jobs)) == [(3, 9, 1)]


def test_member_leaving_frees_records_held_outside_its_session(broker, jobs) -> None:
    from tests.share_state.test_offsets_wire import heartbeat

    group = "leavers"  # locks of 15 s: what is freed here is not freed by a lock expiry
    set_group_config(broker.bootstrap, group, share_auto_offset_reset="earliest",
                     share_record_lock_duration_ms="15000")
    with WireClient(broker.bootstrap) as w, WireClient(broker.bootstrap) as other:
        other_id = create_topic(other, "other", 1).topic_id
        assert heartbeat(w, group, "m", 0).error_code == ErrorCode.none
        got = acquired(share_fetch(w, "m", 0, jobs, max_records=4, group=group))
        assert got == [(0, 3, 1)]
        share_fetch(w, "m", 0, other_id, group=group)  # a new session without jobs-0
        got = acquired(share_fetch(other, "n", 0, jobs, max_records=4, group=group))
        assert got == [(4, 7, 1)]  # 0-3 are still held by m
        assert heartbeat(w, group, "m", -1).error_code == ErrorCode.none  # m leaves
        t0 = time.monotonic()
        got = acquired(share_fetch(other, "n", 1, jobs, max_wait_ms=5000, group=group))
        assert got[0] == (0, 3, 2) and time.monotonic() - t0 < 4


class FailingWrites:
    """The broker's persister, but for its writes while ``code`` is set."""

    def __init__(self, persister) -> None:
        self.persister = persister
        self.code = 0

    async def initialize(self, key, state_epoch, start_offset):
        return await self.persister.initialize(key, state_epoch, start_offset)

    async def read(self, key, leader_epoch):
        return await self.persister.read(key, leader_epoch)

    async def write(self, key, state):
        return self.code or await self.persister.write(key, state)

    async def delete(self, key):
        return await self.persister.delete(key)

    async def read_summary(self, key):
        return await self.persister.read_summary(key)


def test_a_failed_state_write_answers_its_error_and_changes_nothing(broker, jobs) -> None:
    partitions = broker.broker.services.shares.partitions
    failing = FailingWrites(partitions.persister)
    broker.run(lambda: setattr(partitions, "persister", failing))
    with WireClient(broker.bootstrap) as w:
        assert acquired(share_fetch(w, "m", 0, jobs, max_records=4)) == [(0, 3, 1)]
        failing.code = ErrorCode.coordinator_not_available.value
        resp = share_ack(w, "m", 1, jobs, {0: [(0, 3, [ACCEPT])]})
        assert part_of(resp).error_code == ErrorCode.coordinator_not_available
        failing.code = 0
        # rolled back: still held by m, so acknowledgeable once the write goes through
        resp = share_ack(w, "m", 2, jobs, {0: [(0, 3, [ACCEPT])]})
        assert part_of(resp).error_code == ErrorCode.none
        assert acquired(share_fetch(w, "m", 3, jobs)) == [(4, 9, 1)]
