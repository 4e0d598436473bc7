"""The share-partition state machine: acquisition, acknowledgement, locks, counts, the SPSO."""

from __future__ import annotations

import pytest

from kafkette.broker.share.memory_persister import InMemoryPersister
from kafkette.broker.share.share_partition import (
    ACCEPT,
    GAP,
    INVALID_RECORD_STATE,
    INVALID_REQUEST,
    REJECT,
    RELEASE,
    AcquiredRange,
    LogBatch,
    SharePartition,
)
from kafkette.coordinator.runtime.clock import ManualClock
from kafkette.coordinator.share.persister import (
    ACKNOWLEDGED,
    ACQUIRED,
    ARCHIVED,
    AVAILABLE,
    SharePartitionKey,
    ShareState,
    StateBatch,
)

LOCK_MS = 1000


def one_per_batch(first: int, last: int) -> list[LogBatch]:
    return [LogBatch(o, o, (o - first) * 10, (o - first + 1) * 10) for o in range(first, last + 1)]


def make(start: int = 0, **kw) -> tuple[SharePartition, ManualClock, list]:
    clock = ManualClock()
    changed: list = []
    sp = SharePartition("k", clock, start_offset=start,
                        on_change=lambda p, changes: changed.append(changes), **kw)
    return sp, clock, changed


def acquire(sp: SharePartition, member: str, batches: list[LogBatch], max_records: int = 500,
            batch_size: int = 500):
    return sp.acquire(member, batches, max_records=max_records, batch_size=batch_size,
                      lock_ms=LOCK_MS)


def ack(sp: SharePartition, member: str, batches):
    """Acknowledge and, when accepted, commit as a durable write does."""
    code, outcome = sp.acknowledge(member, batches)
    if outcome is not None:
        sp.commit()
    return code, outcome


def test_acquire_hands_out_available_records_once():
    sp, _, _ = make()
    got = acquire(sp, "a", one_per_batch(0, 9), max_records=4)
    assert got.ranges == [AcquiredRange(0, 3, 1)]
    assert (got.byte_start, got.byte_end) == (0, 40)
    assert sp.next_fetch_offset() == 4
    got_b = acquire(sp, "b", one_per_batch(4, 9), max_records=4)
    assert got_b.ranges == [AcquiredRange(4, 7, 1)]
    # records 0-7 are ACQUIRED: a read from 0 acquires only 8-9
    got_c = acquire(sp, "c", one_per_batch(0, 9))
    assert got_c.ranges == [AcquiredRange(8, 9, 1)]
    assert acquire(sp, "d", one_per_batch(0, 9)).ranges == []
    assert sp.owner(5) == "b" and sp.state_of(5) == ACQUIRED


def test_acquisition_takes_whole_log_batches_past_max_records():
    sp, _, _ = make()
    batches = [LogBatch(0, 9, 0, 100), LogBatch(10, 19, 100, 200)]
    got = acquire(sp, "a", batches, max_records=3)
    assert got.ranges == [AcquiredRange(0, 9, 1)]  # MaxRecords is a soft limit
    assert (got.byte_start, got.byte_end) == (0, 100)
    assert sp.state_of(10) == AVAILABLE


def test_batch_size_splits_ranges_at_log_batch_boundaries():
    sp, _, _ = make()
    batches = [LogBatch(0, 2, 0, 30), LogBatch(3, 5, 30, 60), LogBatch(6, 8, 60, 90)]
    got = acquire(sp, "a", batches, batch_size=4)
    assert got.ranges == [AcquiredRange(0, 5, 1), AcquiredRange(6, 8, 1)]


def test_accept_acknowledges_and_moves_the_start_offset():
    sp, _, _ = make()
    acquire(sp, "a", one_per_batch(0, 9))
    code, outcome = ack(sp, "a", [(0, 4, [ACCEPT])])
    assert code == 0 and outcome is not None
    assert sp.start_offset == 5
    assert outcome.changes == [StateBatch(0, 4, ACKNOWLEDGED, 1)]
    assert outcome.start_offset == 5


def test_start_offset_waits_for_the_head_record():
    sp, _, _ = make()
    acquire(sp, "a", one_per_batch(0, 1), max_records=1)
    acquire(sp, "b", one_per_batch(1, 5))
    assert ack(sp, "b", [(1, 5, [ACCEPT])])[0] == 0
    assert sp.start_offset == 0
    assert ack(sp, "a", [(0, 0, [REJECT])])[0] == 0
    assert sp.start_offset == 6 and sp.end_offset == 6


def test_release_makes_records_available_with_their_count():
    sp, _, _ = make()
    acquire(sp, "a", one_per_batch(0, 2))
    code, outcome = ack(sp, "a", [(0, 2, [ACCEPT, RELEASE, REJECT])])
    assert code == 0
    assert [sp.state_of(o) for o in range(3)] == [ARCHIVED, AVAILABLE, ARCHIVED] or \
        sp.start_offset == 1
    assert sp.state_of(1) == AVAILABLE and sp.delivery_count(1) == 1
    assert sp.next_fetch_offset() == 1
    again = acquire(sp, "b", one_per_batch(0, 2))
    assert again.ranges == [AcquiredRange(1, 1, 2)]
    assert sp.state_of(2) == ARCHIVED  # REJECT: never again


def test_released_until_the_limit_then_archived():
    sp, _, _ = make(delivery_limit=3)
    for delivery in (1, 2, 3):
        got = acquire(sp, "a", one_per_batch(0, 0))
        assert got.ranges == [AcquiredRange(0, 0, delivery)]
        assert ack(sp, "a", [(0, 0, [RELEASE])])[0] == 0
    assert sp.state_of(0) == ARCHIVED
    assert acquire(sp, "a", one_per_batch(0, 0)).ranges == []
    assert sp.start_offset == 1


def test_lock_expiry_releases_and_persists():
    sp, clock, changed = make()
    acquire(sp, "a", one_per_batch(0, 3))
    clock.advance(LOCK_MS - 1)
    assert sp.state_of(0) == ACQUIRED
    clock.advance(1)
    assert sp.state_of(0) == AVAILABLE and sp.owner(0) is None
    assert changed == [[StateBatch(0, 3, AVAILABLE, 1)]]
    # a late acknowledgement of the expired lock fails and changes nothing
    assert ack(sp, "a", [(0, 3, [ACCEPT])])[0] == INVALID_RECORD_STATE
    assert sp.state_of(0) == AVAILABLE
    assert acquire(sp, "b", one_per_batch(0, 3)).ranges == [AcquiredRange(0, 3, 2)]


def test_lock_expiry_at_the_limit_archives():
    sp, clock, _ = make(delivery_limit=2)
    acquire(sp, "a", one_per_batch(0, 0))
    clock.advance(LOCK_MS)
    acquire(sp, "a", one_per_batch(0, 0))
    clock.advance(LOCK_MS)
    assert sp.state_of(0) == ARCHIVED and sp.start_offset == 1


def test_acknowledged_records_do_not_expire():
    sp, clock, changed = make()
    acquire(sp, "a", one_per_batch(0, 3))
    ack(sp, "a", [(0, 3, [ACCEPT])])
    clock.advance(LOCK_MS * 2)
    assert changed == [] and sp.start_offset == 4
    assert clock.pending() == 0


def test_release_member_frees_its_records_only():
    sp, _, _ = make()
    acquire(sp, "a", one_per_batch(0, 3), max_records=2)
    acquire(sp, "b", one_per_batch(2, 3))
    changes = sp.release_member("a")
    assert changes == [StateBatch(0, 1, AVAILABLE, 1)]
    assert sp.owner(2) == "b"
    assert sp.delivery_count(0) == 1  # kept (KAFKA-19972)


@pytest.mark.parametrize("batches", [
    [(3, 2, [ACCEPT])],  # reversed
    [(0, 2, [ACCEPT]), (2, 3, [ACCEPT])],  # overlapping
    [(2, 3, [ACCEPT]), (0, 1, [ACCEPT])],  # not ascending
    [(0, 3, [])],  # no type
    [(0, 3, [ACCEPT, ACCEPT])],  # neither one type nor one per offset
    [(0, 0, [7])],  # unknown type
    [(0, 12, [ACCEPT])],  # past the last record in flight
])
def test_malformed_acknowledgements_are_invalid_request_and_change_nothing(batches):
    sp, _, _ = make()
    acquire(sp, "a", one_per_batch(0, 9))
    assert ack(sp, "a", batches)[0] == INVALID_REQUEST
    assert all(sp.state_of(o) == ACQUIRED for o in range(10))


@pytest.mark.parametrize("member, batches", [
    ("b", [(0, 1, [ACCEPT])]),  # held by another member
    ("a", [(0, 1, [ACCEPT]), (5, 5, [ACCEPT])]),  # 5 was never acquired: all or nothing
    ("a", [(20, 21, [ACCEPT])]),  # never in flight
])
def test_acknowledging_records_not_held_is_invalid_record_state(member, batches):
    sp, _, _ = make()
    acquire(sp, "a", one_per_batch(0, 9), max_records=4)
    assert ack(sp, member, batches)[0] == INVALID_RECORD_STATE
    assert all(sp.state_of(o) == ACQUIRED for o in range(4))
    assert sp.start_offset == 0


def test_acknowledging_twice_is_invalid_record_state():
    sp, _, _ = make()
    acquire(sp, "a", one_per_batch(0, 3))
    assert ack(sp, "a", [(2, 3, [ACCEPT])])[0] == 0
    assert ack(sp, "a", [(2, 3, [ACCEPT])])[0] == INVALID_RECORD_STATE


def test_gap_archives_and_ranges_below_the_start_are_ignored():
    sp, _, _ = make()
    acquire(sp, "a", [LogBatch(0, 4, 0, 50)])
    assert ack(sp, "a", [(0, 2, [ACCEPT]), (3, 4, [GAP])])[0] == 0
    assert sp.start_offset == 5
    assert ack(sp, "a", [(0, 4, [ACCEPT])])[0] == 0  # all below the SPSO


def test_rollback_restores_the_acquired_records():
    sp, _, _ = make()
    acquire(sp, "a", one_per_batch(0, 3))
    code, outcome = sp.acknowledge("a", [(0, 3, [ACCEPT])])
    assert outcome is not None
    assert outcome.start_offset == 4 and sp.start_offset == 0  # moves once durable
    sp.rollback(outcome)
    assert sp.start_offset == 0
    assert all(sp.state_of(o) == ACQUIRED and sp.owner(o) == "a" for o in range(4))


def test_in_flight_window_is_capped():
    sp, _, _ = make(max_in_flight=5)
    got = acquire(sp, "a", one_per_batch(0, 9))
    assert got.ranges == [AcquiredRange(0, 4, 1)]
    assert sp.next_fetch_offset() is None
    assert ack(sp, "a", [(0, 0, [RELEASE])])[0] == 0
    assert sp.next_fetch_offset() == 0  # AVAILABLE inside the window is still acquired


def test_aborted_batches_are_archived_not_handed_out():
    sp, _, _ = make()
    batches = [LogBatch(0, 2, 0, 30, aborted=True), LogBatch(3, 3, 30, 40),
               LogBatch(4, 5, 40, 60)]
    got = acquire(sp, "a", batches)
    assert got.ranges == [AcquiredRange(3, 5, 1)]
    assert got.changes == [StateBatch(0, 2, ARCHIVED, 0)]
    assert sp.start_offset == 3
    assert (got.byte_start, got.byte_end) == (30, 60)


def test_offsets_without_records_are_archived():
    sp, _, _ = make()
    # offsets 0-1 and 4 hold no record (compacted away): the read skips them
    got = sp.acquire("a", [LogBatch(2, 3, 0, 20), LogBatch(5, 5, 20, 30)], max_records=10,
                     batch_size=10, lock_ms=LOCK_MS, read_from=0)
    assert got.ranges == [AcquiredRange(2, 3, 1), AcquiredRange(5, 5, 1)]
    assert got.changes == [StateBatch(0, 1, ARCHIVED, 0), StateBatch(4, 4, ARCHIVED, 0)]
    assert ack(sp, "a", [(2, 3, [ACCEPT]), (5, 5, [ACCEPT])])[0] == 0
    assert sp.start_offset == 6
    # a restored hole the log no longer has is archived when the read passes it
    sp2, _, _ = make(start=0, state_batches=[StateBatch(3, 3, ACKNOWLEDGED, 1)])
    got = sp2.acquire("a", [LogBatch(4, 6, 0, 30)], max_records=10, batch_size=10,
                      lock_ms=LOCK_MS, read_from=0)
    assert got.changes == [StateBatch(0, 2, ARCHIVED, 0)]
    assert sp2.start_offset == 4 and got.ranges == [AcquiredRange(4, 6, 1)]


def test_restore_from_persisted_state():
    batches = [StateBatch(10, 11, ACKNOWLEDGED, 1), StateBatch(12, 12, AVAILABLE, 2),
               StateBatch(15, 16, ARCHIVED, 5)]
    sp, _, _ = make(start=8, state_batches=batches)
    assert sp.start_offset == 8 and sp.end_offset == 17
    assert sp.next_fetch_offset() == 8  # the hole before the first stored range
    got = acquire(sp, "a", one_per_batch(8, 20))
    assert got.ranges == [AcquiredRange(8, 9, 1), AcquiredRange(12, 12, 3),
                          AcquiredRange(13, 14, 1), AcquiredRange(17, 20, 1)]


def test_skip_to_a_new_log_start():
    sp, _, _ = make()
    acquire(sp, "a", one_per_batch(0, 1))
    sp.release_member("a")
    changes = sp.skip_to(50)
    assert changes == [StateBatch(0, 1, ARCHIVED, 1)]
    assert sp.start_offset == 50 and sp.next_fetch_offset() == 50


async def test_in_memory_persister_merges_updates():
    persister = InMemoryPersister()
    key = SharePartitionKey("g", __import__("uuid").uuid4(), 0)
    await persister.initialize(key, 1, 0)
    await persister.write(key, ShareState(1, 0, -1, [StateBatch(0, 4, ACKNOWLEDGED, 1)]))
    await persister.write(key, ShareState(1, 0, 3, [StateBatch(4, 6, ARCHIVED, 2)]))
    _, state = await persister.read(key, 0)
    assert state is not None
    assert state.start_offset == 3
    assert state.state_batches == [StateBatch(3, 3, ACKNOWLEDGED, 1),
                                   StateBatch(4, 6, ARCHIVED, 2)]
    assert await persister.write(key, ShareState(0, 0, -1, [])) == 124
