"""Committed offsets of one shard (Kafka's OffsetMetadataManager): commit, fetch, delete,
expire, and the replay of offset records.

Offsets are held per (group, topic) in a compact TopicOffsets (offset_store.py). How they are
laid out is this module's business alone: the shard hands every record to ``replay_records``,
which stores offset records whose key prefix (version, group, topic) was seen before without
decoding a name (``parts_by_prefix``), replays whole record batches in bulk (offset_replay.py)
and gives every other record back to the shard's dispatch. A commit stores its own records as
it builds them (its Result says so: nothing to replay).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from kafkette.protocol import group_records
from kafkette.protocol.group_records import (
    OffsetCommitKey,
    OffsetCommitValue,
    encode_offset_value,
    offset_key_prefix,
)

from ...runtime.coordinator_log import RawRecord
from ...runtime.error_codes import (
    GROUP_ID_NOT_FOUND,
    GROUP_SUBSCRIBED_TO_TOPIC,
    ILLEGAL_GENERATION,
    NONE,
    OFFSET_METADATA_TOO_LARGE,
    CoordinatorError,
)
from ...runtime.result import Result
from ..record_builders import offset_tombstone
from ..requests import CommitPartition, OffsetCommitRequest
from .offset_replay import RawBatches, replay_batches
from .offset_store import (
    MIN_LENGTH_BY_VERSION,
    NOT_AN_OFFSET,
    TopicOffsets,
    built_entry,
    plausible_offset_value,
)
from .txn_offsets import PendingTxnOffsets

log = logging.getLogger("kafkette.coordinator")
_I32 = struct.Struct(">i")


class Group(Protocol):
    """What offsets need of a group (Kafka's Group interface, its offset half): a classic
    group (classic/classic_group.py ClassicGroup) and a consumer group
    (consumer/consumer_group_state.py ConsumerGroup) both are one."""

    group_id: str

    def validate_offset_commit(self, member_id: str, instance_id: str | None,
                               generation: int, is_transactional: bool,
                               api_version: int) -> None:
        """CoordinatorError if the member may not commit (``generation``: the classic
        generation id or the consumer member epoch)."""

    def is_subscribed_to(self, topic: str) -> bool:
        """Offsets of a subscribed topic are neither deleted (OffsetDelete) nor expired."""

    def offset_expiration_base(self) -> Callable[[OffsetCommitValue], int] | None:
        """From when an offset's retention counts; None while offsets cannot expire."""


# What a record the offset manager does not store goes to: the shard's dispatch by type.
ReplayOther = Callable[[Any, "bytes | None"], None]


# (topic, [(partition, offset, leader_epoch, metadata, error)])
FetchedTopic = tuple[str, list[tuple[int, int, int, str, int]]]


def java_length(s: str) -> int:
    """Java String.length(): UTF-16 code units."""
    return len(s.encode("utf-16-le")) // 2


__all__ = ["MIN_LENGTH_BY_VERSION", "NOT_AN_OFFSET", "CommitPartition", "FetchedTopic", "Group",
           "OffsetMetadataManager", "plausible_offset_value"]


class OffsetMetadataManager:
    def __init__(self, partition: int, metadata_max_bytes: int) -> None:
        self.partition = partition
        self.metadata_max_bytes = metadata_max_bytes
        # group -> topic -> committed offsets
        self.offsets: dict[str, dict[str, TopicOffsets]] = {}
        # OffsetCommitKey bytes without the partition -> the TopicOffsets those keys fill
        # (valid while it and its group exist: cleared whenever one is removed)
        self.parts_by_prefix: dict[bytes, TopicOffsets] = {}
        # rest bytes -> table entry, shared by the topics of one commit (cleared when large)
        self.shared_entries: dict[bytes, OffsetCommitValue] = {}
        self.txn = PendingTxnOffsets()  # TxnOffsetCommit records waiting for their marker
        # The table entry of the values built last: the same object for the commits of one
        # millisecond with the same metadata (a partition whose stored entry it is keeps it:
        # see TopicOffsets.put).
        self._last_entry: OffsetCommitValue | None = None

    # Replay ----------------------------------------------------------------------------------
    def replay_records(self, records: Iterable[RawRecord] | RawBatches,
                       replay_other: ReplayOther) -> int:
        """Apply records in log order (load and live writes alike); returns how many.

        An offset record whose key prefix (version, group, topic) was seen before only stores
        its value: loading a large log decodes each group and topic name once. A log read's
        RawBatches go to offset_replay.py (whole batches of commits in bulk). Every other
        record goes to ``replay_other(key, value)``, the shard's dispatch by record type,
        which gives offset records back to ``replay_commit``/``replay_tombstone``."""
        if type(records) is RawBatches:
            return replay_batches(self, records, replay_other)
        cached = self.parts_by_prefix
        shared = self.shared()
        count = 0
        for key, value in records:
            count += 1
            if value is not None and type(key) is bytes:
                parts = cached.get(key[:-4])
                if parts is not None:
                    if not parts.put(int.from_bytes(key[-4:], "big", signed=True), value,
                                     shared):
                        self.skip_undecodable(key)
                    continue
            replay_other(key, value)
        return count

    def _store_built(self, records: list[tuple[bytes, bytes]],
                     entries: list[OffsetCommitValue]) -> None:
        """Store the offset records a commit built (``entries``: the table entry of each
        value, same order: no value is decoded)."""
        cached = self.parts_by_prefix
        for (key, value), entry in zip(records, entries, strict=True):
            parts = cached.get(key[:-4])
            if parts is not None:
                parts.put(int.from_bytes(key[-4:], "big", signed=True), value, None, entry)
                continue
            # First sight of the (group, topic), or a transaction open under it: stored as
            # replay stores it (an OffsetCommitKey, v0/v1: decoded without the KIP-848 module).
            offset_key = group_records.decode_key(key)
            assert isinstance(offset_key, OffsetCommitKey)
            self.replay_commit(offset_key, key, value)

    def replay_txn_offset(self, producer_id: int, producer_epoch: int, key: OffsetCommitKey,
                          key_bytes: bytes, value: bytes | None) -> None:
        """A transactional offset record: pending until its transaction's marker; its
        (group, topic) leaves the replay fast path meanwhile."""
        prefix = self.txn.add(producer_id, producer_epoch, key, key_bytes, value)
        if prefix is not None:
            self.parts_by_prefix.pop(prefix, None)

    def end_transaction(self, producer_id: int, producer_epoch: int, commit: bool) -> list[str]:
        """A transaction's marker: COMMIT materialises its pending offsets as plain commits,
        ABORT drops them (Kafka's replayEndTransactionMarker). Returns the groups committed
        into (the shard creates a simple group for each that has none)."""
        groups: list[str] = []
        for okey, key_bytes, data in self.txn.end(producer_id, producer_epoch):
            if commit:
                groups.append(okey.group)
                self.replay_commit(okey, key_bytes, data, materialised=True)
        return groups

    def replay_commit(self, key: OffsetCommitKey, key_bytes: bytes, value: bytes,
                      materialised: bool = False) -> None:
        """A plain offset record, or (``materialised``) a transactional one its COMMIT marker
        applies: that one supersedes no other pending commit, which came later in the log."""
        if not plausible_offset_value(value):
            self.skip_undecodable(key_bytes)
            return
        topics = self.offsets.setdefault(key.group, {})
        parts = topics.get(key.topic)
        if parts is None:
            parts = topics[key.topic] = TopicOffsets()
        parts.put(key.partition, value, self.shared())
        prefix = key_bytes[:-4]
        if self.txn and self.txn.is_open_prefix(prefix):
            if not materialised:
                self.txn.supersede(key, key_bytes)
            return  # kept off replay's fast path while a transaction has offsets under it
        self.parts_by_prefix[prefix] = parts

    def replay_tombstone(self, key: OffsetCommitKey, key_bytes: bytes = b"") -> None:
        if self.txn and key_bytes:
            self.txn.supersede(key, key_bytes, drop=True)
        topics = self.offsets.get(key.group)
        parts = topics.get(key.topic) if topics is not None else None
        if parts is not None and parts.pop(key.partition) and not parts:
            del topics[key.topic]  # type: ignore[union-attr]  # parts is not None only when topics is not None
            if not topics:
                del self.offsets[key.group]
            self.parts_by_prefix.clear()

    def skip_undecodable(self, key_bytes: bytes) -> None:
        log.warning("__consumer_offsets-%d: undecodable offset value for key %s (keeping the "
                    "previous one)", self.partition, key_bytes.hex())

    def forget_prefixes(self) -> None:
        self.parts_by_prefix.clear()

    def shared(self) -> dict[bytes, OffsetCommitValue]:
        """Table entries shared between topics (bounded: cleared when it grows large)."""
        if len(self.shared_entries) > 4096:
            self.shared_entries.clear()
        return self.shared_entries

    # Reads -----------------------------------------------------------------------------------
    def value(self, group_id: str, topic: str, partition: int) -> OffsetCommitValue | None:
        """The stored offset of ``partition`` (None if none or undecodable)."""
        parts = self.offsets.get(group_id, {}).get(topic)
        return None if parts is None else parts.value(partition)

    def fetch(self, group_id: str, topics: list[tuple[str, list[int]]] | None,
              group_exists: bool) -> list[FetchedTopic]:
        """All offsets of the group if ``topics`` is None, else the asked ones (-1 if none)."""
        stored = self.offsets.get(group_id) if group_exists else None
        if topics is None:
            if not stored:
                return []
            topics = [(topic, sorted(parts)) for topic, parts in stored.items()]
            missing = None
        else:
            missing = (-1, -1, "", NONE)
        out = []
        for topic, partitions in topics:
            parts = stored.get(topic) if stored else None
            rows = []
            for p in partitions:
                got = parts.get(p) if parts else None
                if got is not None:
                    rows.append((p, got[0], got[1], got[2].metadata, NONE))
                elif missing is not None:
                    rows.append((p, *missing))
            out.append((topic, rows))
        return out

    # Writes ----------------------------------------------------------------------------------
    def commit(self, group: Group | None, request: OffsetCommitRequest,
               partitions: list[CommitPartition], now_ms: int, validate: bool = True,
               store: bool = True, undoable: bool = False) -> Result:
        """Offset records and the per-partition errors. A group is validated by the group
        itself (``validate`` False: a transactional commit of an old client, without member
        and generation); no group: a simple group the caller creates once records are written.
        ``store``: the records are stored now (the Result says replay=False); a transactional
        commit's are not (they wait for their marker). ``undoable``: the Result can undo what
        it stored (while appends fail: capturing the previous offsets costs on every commit)."""
        try:
            if not validate:
                pass
            elif group is None:
                if request.generation >= 0:
                    raise CoordinatorError(
                        GROUP_ID_NOT_FOUND if request.version >= 9 else ILLEGAL_GENERATION)
            else:
                group.validate_offset_commit(request.member_id, request.instance_id,
                                             request.generation, request.is_transactional,
                                             request.version)
        except CoordinatorError as exc:
            return Result((), [exc.code] * len(partitions))
        group_id = request.group_id
        retention_ms = request.retention_ms
        expire = None if retention_ms == -1 else now_ms + retention_ms
        limit = self.metadata_max_bytes
        errors: list[int] = []
        records: list[tuple[bytes, bytes]] = []
        entries: list[OffsetCommitValue] = []
        topic: str | None = None
        prefix = b""
        entry_md: str | None = None
        entry = None
        for p in partitions:
            md = p.metadata
            if md is None:
                md = ""
            # java_length(md) is between len(md) and 2 * len(md): computed only in between.
            elif len(md) > limit or (2 * len(md) > limit and java_length(md) > limit):
                errors.append(OFFSET_METADATA_TOO_LARGE)
                continue
            errors.append(NONE)
            if p.topic is not topic:
                topic = p.topic
                prefix = offset_key_prefix(group_id, topic)
            records.append((prefix + _I32.pack(p.partition),
                            encode_offset_value(p.offset, p.leader_epoch, md, now_ms, expire)))
            if md is not entry_md:
                entry_md, entry = md, self._last_entry
                if entry is None or entry.commit_timestamp != now_ms \
                        or entry.expire_timestamp != expire or entry.metadata != md:
                    entry = self._last_entry = built_entry(md, now_ms, expire)
            # set on the first partition: entry_md starts as None, never a partition's metadata
            entries.append(entry)  # type: ignore[arg-type]  # set on the first partition (see the comment above)
        if not records:
            return Result((), errors)
        if group is None:
            log.info("creating simple group %s via manual offset commit", group_id)
        if store:
            undo = self._undo_of(records) if undoable else None
            self._store_built(records, entries)
            return Result(records, errors, replay=False, undo=undo)
        return Result(records, errors)

    def _undo_of(self, records: list[tuple[bytes, bytes]]) -> Callable[[], None]:
        """What puts the offsets ``records`` overwrite back (a failed append: the commit
        fails, the partition stays loaded). On the commit path: the previous values are read
        from the arrays directly, one prefix lookup per topic."""
        cached = self.parts_by_prefix
        saved: list[tuple[TopicOffsets | None, bytes, int, int, int, Any]] = []
        last = b""
        parts: TopicOffsets | None = None
        for key, _value in records:
            prefix = key[:-4]
            if prefix != last:
                last = prefix
                parts = cached.get(prefix)
                if parts is None:  # first sight of (group, topic), or off the fast path
                    okey = group_records.decode_key(key)
                    assert isinstance(okey, OffsetCommitKey)
                    parts = self.offsets.get(okey.group, {}).get(okey.topic)
            p = int.from_bytes(key[-4:], "big", signed=True)
            if parts is None:  # the group had no offset for the topic
                saved.append((None, key, p, 0, 0, None))
                continue
            metas = parts.metas
            if 0 <= p < len(metas):
                m = metas[p]
                saved.append((parts, key, p, parts.offsets[p], parts.epochs[p],
                              parts.table[m] if m else None))
            else:
                previous = parts.get(p)
                saved.append((parts, key, p, *(previous or (0, 0, None))))

        def undo() -> None:
            for topic_offsets, key, p, offset, epoch, entry in reversed(saved):
                if topic_offsets is not None and entry is not None:
                    topic_offsets.restore(p, offset, epoch, entry)
                    continue
                okey = group_records.decode_key(key)  # the partition had no offset
                assert isinstance(okey, OffsetCommitKey)
                self.replay_tombstone(okey)
        return undo

    def delete(self, group: Group, topics: list[tuple[str, list[int]]]
               ) -> tuple[list[RawRecord], list[tuple[str, list[tuple[int, int]]]]]:
        """OffsetDelete: tombstones and per-partition errors (group already validated)."""
        stored = self.offsets.get(group.group_id, {})
        records: list[RawRecord] = []
        out = []
        for topic, partitions in topics:
            if group.is_subscribed_to(topic):
                out.append((topic, [(p, GROUP_SUBSCRIBED_TO_TOPIC) for p in partitions]))
                continue
            parts = stored.get(topic)
            if parts:
                records.extend(offset_tombstone(group.group_id, topic, p)
                               for p in partitions if p in parts)
            out.append((topic, [(p, NONE) for p in partitions]))
        return records, out

    def delete_all(self, group_id: str, records: list[RawRecord]) -> None:
        """Tombstones for every offset of the group (DeleteGroups), pending transactional ones
        included: one tombstone per partition, as Kafka's deleteAllOffsets writes."""
        stored = self.offsets.get(group_id, {})
        for topic, parts in stored.items():
            records.extend(offset_tombstone(group_id, topic, p) for p in parts)
        if self.txn:
            for topic, p in sorted(self.txn.unstable(group_id)):
                committed = stored.get(topic)
                if committed is None or p not in committed:
                    records.append(offset_tombstone(group_id, topic, p))

    def delete_partitions(self, topic_partitions: Iterable[tuple[str, int]],
                          records: list[RawRecord]) -> None:
        """Tombstones for every group's offset of the given (deleted) partitions."""
        wanted: dict[str, set[int]] = {}
        for topic, partition in topic_partitions:
            wanted.setdefault(topic, set()).add(partition)
        for group_id, topics in self.offsets.items():
            for topic, gone in wanted.items():
                parts = topics.get(topic)
                if parts:
                    records.extend(offset_tombstone(group_id, topic, p)
                                   for p in parts if p in gone)

    def expire(self, group: Group, now_ms: int, retention_ms: int,
               records: list[RawRecord]) -> bool:
        """Tombstones for the group's expired offsets; True if none is left afterwards and no
        transactional commit of the group is pending (Kafka keeps a group with open
        transactions)."""
        group_id = group.group_id
        stored = self.offsets.get(group_id)
        if not stored:
            return not (self.txn and self.txn.unstable(group_id))
        base: Callable[[OffsetCommitValue], int] | None = group.offset_expiration_base()
        if base is None:
            return False
        all_expired = True
        unstable = self.txn.unstable(group_id) if self.txn else ()
        for topic, parts in stored.items():
            if group.is_subscribed_to(topic):
                all_expired = False
                continue
            for p, _offset, _epoch, value in parts.items():
                if (topic, p) in unstable:  # a transactional commit is pending: kept (Kafka)
                    all_expired = False
                    continue
                if value is None:
                    expired = True
                elif value.expire_timestamp is not None:
                    expired = now_ms >= value.expire_timestamp
                else:
                    expired = now_ms - base(value) >= retention_ms
                if expired:
                    records.append(offset_tombstone(group_id, topic, p))
                else:
                    all_expired = False
        return all_expired and not unstable
