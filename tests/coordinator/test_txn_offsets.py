"""Transactional offsets in the group shard's replay (Kafka's replayEndTransactionMarker): COMMIT
materialises, ABORT drops, a later plain commit wins over an earlier pending one, a tombstone
clears the pending ones, and the shard answers require_stable while any is open."""

from __future__ import annotations

from kafkette.coordinator.group.record_builders import (
    group_tombstone,
    offset_commit,
    offset_tombstone,
)
from kafkette.coordinator.runtime.coordinator_log import TxnMarker, TxnRecordKey
from kafkette.coordinator.runtime.error_codes import NONE, UNSTABLE_OFFSET_COMMIT

from .test_shard_unit import shard  # noqa: F401 - the fixture


def _commit(offset: int, partition: int = 0) -> tuple[bytes, bytes]:
    return offset_commit("g", "t", partition, offset, -1, "", 1, None)


def _txn(pid: int, offset: int, partition: int = 0) -> tuple[TxnRecordKey, bytes]:
    key, value = _commit(offset, partition)
    return TxnRecordKey(pid, 0, key), value


def _offsets(shard, stable: bool = False) -> dict[int, tuple[int, int]]:  # noqa: F811
    rows = (shard.fetch_stable_offsets if stable else shard.fetch_offsets)("g", [("t", [0, 1])])
    return {p: (offset, error) for p, offset, _e, _m, error in rows[0][1]}


def test_commit_materialises_and_abort_drops(shard) -> None:  # noqa: F811
    shard.replay_all([_commit(3), _txn(7, 10), _txn(8, 20, partition=1)])
    assert _offsets(shard) == {0: (3, NONE), 1: (-1, NONE)}
    assert _offsets(shard, stable=True) == {0: (-1, UNSTABLE_OFFSET_COMMIT),
                                            1: (-1, UNSTABLE_OFFSET_COMMIT)}
    shard.replay_all([(TxnMarker(7, 0, True), None), (TxnMarker(8, 0, False), None)])
    assert _offsets(shard, stable=True) == {0: (10, NONE), 1: (-1, NONE)}


def test_a_later_plain_commit_wins_and_fast_path_is_left(shard) -> None:  # noqa: F811
    shard.replay_all([_commit(1), _commit(2)])  # the prefix is now on replay's fast path
    shard.replay_all([_txn(7, 10), _commit(15), (TxnMarker(7, 0, True), None)])
    assert _offsets(shard) == {0: (15, NONE), 1: (-1, NONE)}
    # a pending commit after the plain one does win
    shard.replay_all([_commit(16), _txn(7, 30), (TxnMarker(7, 0, True), None)])
    assert _offsets(shard)[0] == (30, NONE)
    # another transaction's commit does not supersede a pending one written after it
    shard.replay_all([_txn(7, 40), _txn(8, 50), (TxnMarker(7, 0, True), None)])
    assert _offsets(shard, stable=True)[0] == (-1, UNSTABLE_OFFSET_COMMIT)
    shard.replay_all([(TxnMarker(8, 0, True), None)])
    assert _offsets(shard, stable=True)[0] == (50, NONE)


def test_tombstone_clears_pending_offsets(shard) -> None:  # noqa: F811
    key, _value = _commit(0)
    shard.replay_all([_commit(5), _txn(7, 10), (key, None)])
    assert _offsets(shard, stable=True)[0] == (-1, NONE)
    shard.replay_all([(TxnMarker(7, 0, True), None)])
    assert _offsets(shard)[0] == (-1, NONE)


def test_delete_groups_tombstones_pending_offsets(shard) -> None:  # noqa: F811
    """Kafka's deleteAllOffsets: a tombstone for every committed offset and for every pending
    transactional one without a committed offset (never two for one partition); a COMMIT
    marker replayed afterwards materialises nothing."""
    shard.replay_all([_commit(5), _txn(7, 10), _txn(7, 20, partition=1)])
    result = shard.delete_groups(["g"])
    assert list(result.response) == [("g", NONE)]
    tombstones = [key for key, value in result.records if value is None]
    assert sorted(tombstones) == sorted([offset_tombstone("g", "t", 0)[0],
                                         offset_tombstone("g", "t", 1)[0],
                                         group_tombstone("g")[0]])
    shard.replay_all(list(result.records))
    assert _offsets(shard, stable=True) == {0: (-1, NONE), 1: (-1, NONE)}
    shard.replay_all([(TxnMarker(7, 0, True), None)])
    assert _offsets(shard) == {0: (-1, NONE), 1: (-1, NONE)}


def test_group_with_only_pending_offsets_exists_and_is_kept(shard) -> None:  # noqa: F811
    """Kafka's replay creates the simple group for a transactional offset record, and
    cleanupGroupMetadata keeps a group while it has an open transaction."""
    shard.replay_all([_txn(7, 10)])
    assert "g" in shard.groups
    assert not shard.cleanup_group_metadata().records
    assert "g" in shard.groups
    shard.replay_all([(TxnMarker(7, 0, False), None)])  # aborted: nothing left
    assert [v for _k, v in shard.cleanup_group_metadata().records] == [None]  # group tombstone
