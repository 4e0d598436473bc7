"""The share-state machine on the coordinator runtime (MemoryLog, manual clock): merging
ShareUpdates into the snapshot, a new ShareSnapshot every N updates, fencing, deletion, and a
replay of the log rebuilding the same state."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kafkette.coordinator.runtime.clock import ManualClock
from kafkette.coordinator.runtime.coordinator_log import MemoryLog
from kafkette.coordinator.share.persister import (
    ACKNOWLEDGED,
    ARCHIVED,
    AVAILABLE,
    SharePartitionKey,
    ShareState,
    StateBatch,
)
from kafkette.coordinator.share.service import ShareCoordinatorService
from kafkette.coordinator.share.shard import FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH
from kafkette.coordinator.share.state_batches import combine, delivery_complete_count
from kafkette.protocol.share_state_records import (
    SHARE_SNAPSHOT,
    SHARE_UPDATE,
    PersistedBatch,
    decode_key,
    decode_snapshot_value,
    decode_update_value,
)

TOPIC = uuid.uuid4()
KEY = SharePartitionKey("workers", TOPIC, 0)


def B(first: int, last: int, state: int, count: int) -> PersistedBatch:
    return PersistedBatch(first, last, state, count)


def test_combine_overlays_newer_batches_and_cuts_at_start_offset() -> None:
    current = [B(0, 9, AVAILABLE, 1)]
    assert combine(current, [B(3, 4, ACKNOWLEDGED, 1)]) == [
        B(0, 2, AVAILABLE, 1), B(3, 4, ACKNOWLEDGED, 1), B(5, 9, AVAILABLE, 1)]
    # adjacent equal batches join; the newer one wins where they overlap
    assert combine([B(0, 4, ACKNOWLEDGED, 1), B(5, 9, AVAILABLE, 2)],
                   [B(5, 9, ACKNOWLEDGED, 1)]) == [B(0, 9, ACKNOWLEDGED, 1)]
    # below the start offset everything goes; a straddling batch is cut
    assert combine([B(0, 9, ARCHIVED, 1), B(10, 20, AVAILABLE, 1)], [], 15) == [
        B(15, 20, AVAILABLE, 1)]
    assert combine([], [B(5, 7, AVAILABLE, 1), B(6, 6, ARCHIVED, 2)]) == [
        B(5, 5, AVAILABLE, 1), B(6, 6, ARCHIVED, 2), B(7, 7, AVAILABLE, 1)]
    assert delivery_complete_count([B(0, 4, ACKNOWLEDGED, 1), B(5, 6, AVAILABLE, 1),
                                    B(7, 9, ARCHIVED, 5)], 2) == 6
    assert delivery_complete_count([], -1) == -1


@pytest.fixture
async def coord():
    clock = ManualClock()
    logs: dict[int, MemoryLog] = {}

    def log_for(p: int) -> MemoryLog:
        return logs.setdefault(p, MemoryLog())

    service = ShareCoordinatorService(1, 3, clock, log_for, updates_per_snapshot=3)
    await service.start()
    service.logs = logs  # type: ignore[attr-defined]
    yield service
    await service.stop()


def _records(service: ShareCoordinatorService, key: SharePartitionKey) -> list:
    log = service.logs[service.partition_for(key)]  # type: ignore[attr-defined]
    return [(decode_key(k), v) for k, v in log.records]


async def test_initialize_then_updates_then_snapshot(coord: ShareCoordinatorService) -> None:
    assert await coord.read(KEY, 0) == (0, None)  # never initialised
    assert await coord.initialize(KEY, 3, -1) == 0
    code, state = await coord.read(KEY, -1)
    assert code == 0 and state is not None
    assert (state.state_epoch, state.start_offset, state.state_batches) == (3, -1, [])

    # ack 0-4, release 5: ShareUpdates carrying only what changed
    assert await coord.write(KEY, ShareState(3, 1, 0, [StateBatch(0, 4, ACKNOWLEDGED, 1),
                                                       StateBatch(5, 5, AVAILABLE, 1)])) == 0
    assert await coord.write(KEY, ShareState(3, 1, 5, [StateBatch(5, 5, ARCHIVED, 2)])) == 0
    code, state = await coord.read(KEY, 1)
    assert state is not None
    assert state.start_offset == 5
    assert state.state_batches == [StateBatch(5, 5, ARCHIVED, 2)]
    code, summary = await coord.read_summary(KEY)
    assert summary is not None and (summary.start_offset, summary.delivery_complete_count) == (5, 1)

    kinds = [k.record_type for k, _v in _records(coord, KEY)]
    assert kinds == [SHARE_SNAPSHOT, SHARE_UPDATE, SHARE_UPDATE]
    update = decode_update_value(_records(coord, KEY)[1][1])
    assert update.state_batches == (B(0, 4, ACKNOWLEDGED, 1), B(5, 5, AVAILABLE, 1))
    assert update.snapshot_epoch == 0

    # after 3 updates the next write is a full snapshot of the merged state, epoch + 1
    assert await coord.write(KEY, ShareState(3, 1, -1, [StateBatch(6, 6, ACKNOWLEDGED, 1)])) == 0
    assert await coord.write(KEY, ShareState(3, 1, -1, [StateBatch(7, 7, ACKNOWLEDGED, 1)])) == 0
    assert await coord.write(KEY, ShareState(3, 1, -1, [StateBatch(8, 8, AVAILABLE, 1)])) == 0
    records = _records(coord, KEY)
    assert [k.record_type for k, _v in records] == [SHARE_SNAPSHOT] + [SHARE_UPDATE] * 3 + [
        SHARE_SNAPSHOT, SHARE_UPDATE]
    snap = decode_snapshot_value(records[4][1])
    assert (snap.snapshot_epoch, snap.state_epoch, snap.leader_epoch, snap.start_offset) == (
        1, 3, 1, 5)
    assert snap.state_batches == (B(5, 5, ARCHIVED, 2), B(6, 7, ACKNOWLEDGED, 1))
    assert snap.delivery_complete_count == 3
    assert decode_update_value(records[5][1]).snapshot_epoch == 1
    _code, state = await coord.read(KEY, 1)
    assert state is not None and state.state_batches[-1] == StateBatch(8, 8, AVAILABLE, 1)


async def test_fencing(coord: ShareCoordinatorService) -> None:
    assert await coord.initialize(KEY, 5, 0) == 0
    assert await coord.write(KEY, ShareState(5, 2, 0, [])) == 0
    assert await coord.write(KEY, ShareState(4, 2, 0, [])) == FENCED_STATE_EPOCH
    assert await coord.write(KEY, ShareState(5, 1, 0, [])) == FENCED_LEADER_EPOCH
    assert await coord.read(KEY, 1) == (FENCED_LEADER_EPOCH, None)
    assert await coord.initialize(KEY, 4, 0) == FENCED_STATE_EPOCH
    # a read by a newer leader records its epoch: the old leader's writes are fenced
    code, _state = await coord.read(KEY, 3)
    assert code == 0
    assert await coord.write(KEY, ShareState(5, 2, 0, [])) == FENCED_LEADER_EPOCH
    # re-initialising with a newer state epoch (AlterShareGroupOffsets) clears the batches
    assert await coord.write(KEY, ShareState(5, 3, 0, [StateBatch(0, 3, ACKNOWLEDGED, 1)])) == 0
    assert await coord.initialize(KEY, 6, 42) == 0
    _code, state = await coord.read(KEY, 3)
    assert state is not None and (state.state_epoch, state.start_offset, state.state_batches) == (
        6, 42, [])


async def test_delete_writes_a_tombstone(coord: ShareCoordinatorService) -> None:
    assert await coord.delete(KEY) == 0  # nothing to delete
    assert _records(coord, KEY) == []
    assert await coord.initialize(KEY, 1, 10) == 0
    assert await coord.delete(KEY) == 0
    key, value = _records(coord, KEY)[-1]
    assert key.record_type == SHARE_SNAPSHOT and value is None
    assert await coord.read(KEY, -1) == (0, None)
    assert await coord.read_summary(KEY) == (0, None)


async def test_replay_rebuilds_the_state(coord: ShareCoordinatorService) -> None:
    other = SharePartitionKey("workers", TOPIC, 1)
    await coord.initialize(KEY, 2, 0)
    await coord.initialize(other, 2, 7)
    for i in range(7):  # past one snapshot interval
        await coord.write(KEY, ShareState(2, 0, i, [StateBatch(i, i + 1, ACKNOWLEDGED if i % 2
                                                               else AVAILABLE, 1)]))
    await coord.delete(other)
    _code, before = await coord.read(KEY, 0)
    shard_before = coord.runtime.context(coord.partition_for(KEY)).shard
    counts_before = dict(shard_before.update_counts)

    fresh = ShareCoordinatorService(1, 3, ManualClock(), lambda p: coord.logs[p],  # type: ignore[attr-defined]
                                    updates_per_snapshot=3)
    await fresh.start()
    try:
        _code, after = await fresh.read(KEY, 0)
        assert after == before
        assert await fresh.read(other, -1) == (0, None)
        assert fresh.runtime.context(fresh.partition_for(KEY)).shard.update_counts == counts_before
    finally:
        await fresh.stop()


async def test_write_failure_answers_an_error_and_keeps_the_old_state(
        coord: ShareCoordinatorService) -> None:
    await coord.initialize(KEY, 1, 0)
    log = coord.logs[coord.partition_for(KEY)]  # type: ignore[attr-defined]
    log.fail_with = OSError("disk gone")
    code = await coord.write(KEY, ShareState(1, 0, 3, [StateBatch(0, 2, ACKNOWLEDGED, 1)]))
    assert code != 0
    log.fail_with = None
    code, state = await coord.read(KEY, -1)
    assert code == 14  # COORDINATOR_LOAD_IN_PROGRESS while the partition reloads from its log
    for _ in range(100):
        await asyncio.sleep(0)
        code, state = await coord.read(KEY, -1)
        if code == 0:
            break
    assert state is not None and (state.start_offset, state.state_batches) == (0, [])


def test_routing_is_kafkas_key_hash(coord: ShareCoordinatorService) -> None:
    from kafkette.coordinator.runtime.partitioning import java_string_hashcode, kafka_abs
    from kafkette.protocol.share_state_records import coordinator_key

    text = coordinator_key(KEY.group_id, KEY.topic_id, KEY.partition)
    assert coord.partition_for(KEY) == kafka_abs(java_string_hashcode(text)) % 3
    assert coord.find_coordinator(text) == 0


async def test_a_write_is_answered_only_once_durable(coord: ShareCoordinatorService) -> None:
    await coord.initialize(KEY, 1, 0)
    log = coord.logs[coord.partition_for(KEY)]  # type: ignore[attr-defined]
    log.gate = asyncio.Event()  # the append waits until the gate opens
    write = asyncio.ensure_future(coord.write(KEY, ShareState(1, 0, 2, [
        StateBatch(0, 1, ACKNOWLEDGED, 1)])))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not write.done()
    log.gate.set()
    assert await write == 0
    assert len(log.records) == 2
