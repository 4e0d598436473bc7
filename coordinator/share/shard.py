"""The share-state machine of one ``__share_group_state`` partition (Kafka's
ShareCoordinatorShard): per share-partition (group, topic id, partition) its state epoch,
leader epoch, start offset and merged state batches.

Ops compute records; the runtime replays them (the same code that loads the partition) before
appending, and answers once they are durable. A write becomes a ShareUpdate carrying only the
batches it changes, merged into the state on replay; the first write of a share-partition, and
every write once ``snapshot_update_records_per_snapshot`` updates followed the last snapshot,
becomes a full ShareSnapshot instead (SnapshotEpoch + 1); ``snapshot_all`` snapshots every
share-partition at once, so the log before it can be pruned. Initialising writes a fresh snapshot;
deleting writes a ShareSnapshot tombstone. A write or read with an older leader epoch than
recorded answers FENCED_LEADER_EPOCH; a write or initialise with an older state epoch,
FENCED_STATE_EPOCH.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kafkette.protocol.share_state_records import (
    SHARE_SNAPSHOT,
    SHARE_UPDATE,
    PersistedBatch,
    ShareSnapshotValue,
    ShareStateKey,
    ShareStateRecordError,
    ShareUpdateValue,
    decode_key,
    decode_snapshot_value,
    decode_update_value,
    encode_key,
    encode_snapshot_value,
    encode_update_value,
)

from ..runtime.coordinator_log import RawRecord
from ..runtime.coordinator_runtime import ShardContext
from ..runtime.result import Result
from .persister import (
    UNINITIALIZED_START_OFFSET,
    SharePartitionKey,
    ShareState,
    StateBatch,
    StateSummary,
)
from .state_batches import combine, delivery_complete_count

log = logging.getLogger("kafkette.share")

NONE = 0
INVALID_REQUEST = 42
FENCED_LEADER_EPOCH = 74
FENCED_STATE_EPOCH = 124

DEFAULT_UPDATES_PER_SNAPSHOT = 500  # share.coordinator.snapshot.update.records.per.snapshot


@dataclass(slots=True)
class ShareGroupOffset:
    """One share-partition's state as its records build it (Kafka's ShareGroupOffset)."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: list[PersistedBatch] = field(default_factory=list)
    create_timestamp: int = 0
    write_timestamp: int = 0

    def share_state(self) -> ShareState:
        return ShareState(self.state_epoch, self.leader_epoch, self.start_offset,
                          [StateBatch(*b) for b in self.batches])

    def summary(self) -> StateSummary:
        return StateSummary(self.state_epoch, self.leader_epoch, self.start_offset,
                            delivery_complete_count(self.batches, self.start_offset))


def _persisted(batches: Iterable[StateBatch]) -> list[PersistedBatch]:
    return [PersistedBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
            for b in batches]


class ShareCoordinatorShard:
    def __init__(self, partition: int, context: ShardContext,
                 updates_per_snapshot: int = DEFAULT_UPDATES_PER_SNAPSHOT) -> None:
        self.partition = partition
        self.context = context
        self.updates_per_snapshot = updates_per_snapshot
        self.states: dict[SharePartitionKey, ShareGroupOffset] = {}
        # ShareUpdates replayed since the key's last snapshot
        self.update_counts: dict[SharePartitionKey, int] = {}

    # Lifecycle / replay ----------------------------------------------------------------------
    def on_loaded(self) -> None:
        pass

    def on_unloaded(self, error: int) -> None:
        pass

    def replay_all(self, records: Iterable[Any]) -> int:
        count = 0
        for key, value in records:
            count += 1
            if not isinstance(key, bytes):  # transaction markers: never written here
                continue
            try:
                self._replay(decode_key(key), value)
            except ShareStateRecordError as exc:
                log.warning("skipping undecodable __share_group_state-%d record: %s",
                            self.partition, exc)
        return count

    def _replay(self, key: ShareStateKey, value: bytes | None) -> None:
        spk = SharePartitionKey(key.group_id, key.topic_id, key.partition)
        if key.record_type == SHARE_SNAPSHOT:
            if value is None:  # tombstone: the state is deleted
                self.states.pop(spk, None)
                self.update_counts.pop(spk, None)
                return
            snap = decode_snapshot_value(value)
            self.states[spk] = ShareGroupOffset(
                snap.snapshot_epoch, snap.state_epoch, snap.leader_epoch, snap.start_offset,
                list(snap.state_batches), snap.create_timestamp, snap.write_timestamp)
            self.update_counts[spk] = 0
            return
        if value is None:
            return
        update = decode_update_value(value)
        current = self.states.get(spk)
        if current is None:  # an update without a snapshot before it: the update is all
            current = self.states[spk] = ShareGroupOffset(
                update.snapshot_epoch, -1, update.leader_epoch, update.start_offset,
                list(update.state_batches))
            self.update_counts[spk] = 0
            return
        if update.start_offset != UNINITIALIZED_START_OFFSET:
            current.start_offset = max(current.start_offset, update.start_offset)
        if update.leader_epoch != -1:
            current.leader_epoch = max(current.leader_epoch, update.leader_epoch)
        current.batches = combine(current.batches, update.state_batches, current.start_offset)
        self.update_counts[spk] = self.update_counts.get(spk, 0) + 1

    # Reads -----------------------------------------------------------------------------------
    def summary(self, key: SharePartitionKey) -> StateSummary | None:
        state = self.states.get(key)
        return None if state is None else state.summary()

    def keys_of_group(self, group_id: str) -> list[SharePartitionKey]:
        return [k for k in self.states if k.group_id == group_id]

    # Write ops (called through the runtime) --------------------------------------------------
    def initialize(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> Result:
        """A fresh snapshot: the state epoch and start offset given, no batches (Kafka's
        initializeState, also what AlterShareGroupOffsets does to every partition)."""
        current = self.states.get(key)
        if current is not None and current.state_epoch > state_epoch:
            return Result((), FENCED_STATE_EPOCH)
        now = self.context.now_ms()
        value = ShareSnapshotValue(
            0 if current is None else current.snapshot_epoch + 1, state_epoch,
            -1 if current is None else current.leader_epoch, start_offset, now, now, (),
            delivery_complete_count((), start_offset))
        return Result([_snapshot_record(key, value)], NONE)

    def write(self, key: SharePartitionKey, state: ShareState) -> Result:
        """One WriteShareGroupState: the changed batches and the start offset (-1 unchanged)."""
        current = self.states.get(key)
        if current is not None:
            if state.leader_epoch != -1 and current.leader_epoch > state.leader_epoch:
                return Result((), FENCED_LEADER_EPOCH)
            if state.state_epoch != -1 and current.state_epoch > state.state_epoch:
                return Result((), FENCED_STATE_EPOCH)
        return Result([self._state_record(key, current, state.leader_epoch, state.state_epoch,
                                          state.start_offset, _persisted(state.state_batches))],
                      NONE)

    def read(self, key: SharePartitionKey, leader_epoch: int) -> Result:
        """Response (error, ShareState | None). A newer leader epoch is recorded (Kafka's
        readStateAndMaybeUpdateLeaderEpoch), so a later write of the old leader is fenced."""
        current = self.states.get(key)
        if current is None:
            return Result((), (NONE, None))
        if leader_epoch != -1 and current.leader_epoch > leader_epoch:
            return Result((), (FENCED_LEADER_EPOCH, None))
        answer = (NONE, current.share_state())
        if leader_epoch == -1 or leader_epoch == current.leader_epoch:
            return Result((), answer)
        return Result([self._state_record(key, current, leader_epoch, current.state_epoch,
                                          current.start_offset, [])], answer)

    def delete(self, key: SharePartitionKey) -> Result:
        """The ShareSnapshot tombstone of the key (nothing when it has no state)."""
        if key not in self.states:
            return Result((), NONE)
        return Result([(_key_bytes(SHARE_SNAPSHOT, key), None)], NONE)

    def snapshot_all(self) -> Result:
        """A fresh ShareSnapshot of every share-partition (Kafka's cold-partition snapshots):
        once durable, every record before them is redundant and may be pruned. Response: how
        many were written."""
        now = self.context.now_ms()
        records = [_snapshot_record(key, ShareSnapshotValue(
            state.snapshot_epoch + 1, state.state_epoch, state.leader_epoch, state.start_offset,
            state.create_timestamp, now, tuple(state.batches),
            delivery_complete_count(state.batches, state.start_offset)))
            for key, state in self.states.items()]
        return Result(records, len(records))

    # Record building -------------------------------------------------------------------------
    def _state_record(self, key: SharePartitionKey, current: ShareGroupOffset | None,
                      leader_epoch: int, state_epoch: int, start_offset: int,
                      batches: list[PersistedBatch]) -> RawRecord:
        """A ShareSnapshot (no state yet, or enough updates since the last one) or a
        ShareUpdate (Kafka's generateShareStateRecord)."""
        now = self.context.now_ms()
        if current is None:
            merged = combine((), batches, start_offset)
            return _snapshot_record(key, ShareSnapshotValue(
                0, state_epoch, leader_epoch, start_offset, now, now, tuple(merged),
                delivery_complete_count(merged, start_offset)))
        new_start = current.start_offset if start_offset == UNINITIALIZED_START_OFFSET \
            else max(current.start_offset, start_offset)
        if self.update_counts.get(key, 0) >= self.updates_per_snapshot:
            merged = combine(current.batches, batches, new_start)
            return _snapshot_record(key, ShareSnapshotValue(
                current.snapshot_epoch + 1,
                current.state_epoch if state_epoch == -1 else state_epoch,
                current.leader_epoch if leader_epoch == -1 else leader_epoch,
                new_start, now, now, tuple(merged), delivery_complete_count(merged, new_start)))
        merged = combine(current.batches, batches, new_start)
        return (_key_bytes(SHARE_UPDATE, key), encode_update_value(ShareUpdateValue(
            current.snapshot_epoch, leader_epoch, start_offset,
            tuple(combine((), batches, start_offset)),
            delivery_complete_count(merged, new_start))))


def _key_bytes(record_type: int, key: SharePartitionKey) -> bytes:
    return encode_key(ShareStateKey(record_type, key.group_id, key.topic_id, key.partition))


def _snapshot_record(key: SharePartitionKey, value: ShareSnapshotValue) -> RawRecord:
    return (_key_bytes(SHARE_SNAPSHOT, key), encode_snapshot_value(value))
