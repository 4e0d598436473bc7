"""Committed offsets of one shard (Kafka's OffsetMetadataManager): commit, fetch, delete,
expire, and the replay of offset records.

Offsets are held per (group, topic) in a compact TopicOffsets (offset_store.py). Offset keys
whose prefix (version, group, topic) was seen before take a fast path that decodes no name
(``parts_by_prefix``); replay of whole record batches is in offset_replay.py.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kafkette.protocol.group_records import (
    OffsetCommitKey,
    OffsetCommitValue,
    encode_offset_value,
    offset_key_prefix,
)

from . import errors as E
from . import records as R
from .errors import CoordinatorError
from .group import ClassicGroup, GroupState
from .log import RawRecord
from .offset_store import (
    MIN_LENGTH_BY_VERSION,
    NOT_AN_OFFSET,
    TopicOffsets,
    built_entry,
    plausible_offset_value,
)
from .result import Result
from .txn_offsets import PendingTxnOffsets

log = logging.getLogger("kafkette.coordinator")
S = GroupState
_I32 = struct.Struct(">i")


@dataclass(slots=True)
class CommitPartition:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None


# (topic, [(partition, offset, leader_epoch, metadata, error)])
FetchedTopic = tuple[str, list[tuple[int, int, int, str, int]]]


class BuiltOffsetRecords(list):
    """The offset records (key, value) a commit built, with the table entry of each value
    (``entries``, same order): replaying them (shard.replay_all) decodes no value."""

    __slots__ = ("entries",)

    entries: list[OffsetCommitValue]  # set by whoever builds one (no Python __init__ per commit)


def java_length(s: str) -> int:
    """Java String.length(): UTF-16 code units."""
    return len(s.encode("utf-16-le")) // 2


__all__ = ["MIN_LENGTH_BY_VERSION", "NOT_AN_OFFSET", "CommitPartition", "FetchedTopic",
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
            del topics[key.topic]  # type: ignore[union-attr]
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
            missing = (-1, -1, "", E.NONE)
        out = []
        for topic, partitions in topics:
            parts = stored.get(topic) if stored else None
            rows = []
            for p in partitions:
                got = parts.get(p) if parts else None
                if got is not None:
                    rows.append((p, got[0], got[1], got[2].metadata, E.NONE))
                elif missing is not None:
                    rows.append((p, *missing))
            out.append((topic, rows))
        return out

    # Writes ----------------------------------------------------------------------------------
    def commit(self, group: ClassicGroup | None, group_id: str, generation: int, member_id: str,
               instance_id: str | None, retention_ms: int, partitions: list[CommitPartition],
               version: int, now_ms: int, validate: bool = True) -> Result:
        """Offset records (replayed by the runtime: that creates a simple group) and the
        per-partition errors. A group is validated by the group itself (``validate`` False:
        a transactional commit of an old client, without member and generation)."""
        try:
            if not validate:
                pass
            elif group is None:
                if generation >= 0:
                    raise CoordinatorError(
                        E.GROUP_ID_NOT_FOUND if version >= 9 else E.ILLEGAL_GENERATION)
            else:
                group.validate_offset_commit(member_id, instance_id, generation)
        except CoordinatorError as exc:
            return Result((), [exc.code] * len(partitions))
        expire = None if retention_ms == -1 else now_ms + retention_ms
        limit = self.metadata_max_bytes
        errors: list[int] = []
        records = BuiltOffsetRecords()
        records.entries = entries = []
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
                errors.append(E.OFFSET_METADATA_TOO_LARGE)
                continue
            errors.append(E.NONE)
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
            entries.append(entry)
        if records and group is None:
            log.info("creating simple group %s via manual offset commit", group_id)
        return Result(records, errors)

    def delete(self, group: ClassicGroup, topics: list[tuple[str, list[int]]]
               ) -> tuple[list[RawRecord], list[tuple[str, list[tuple[int, int]]]]]:
        """OffsetDelete: tombstones and per-partition errors (group already validated)."""
        stored = self.offsets.get(group.group_id, {})
        records: list[RawRecord] = []
        out = []
        for topic, partitions in topics:
            if group.is_subscribed_to(topic):
                out.append((topic, [(p, E.GROUP_SUBSCRIBED_TO_TOPIC) for p in partitions]))
                continue
            parts = stored.get(topic)
            if parts:
                records.extend(R.offset_tombstone(group.group_id, topic, p)
                               for p in partitions if p in parts)
            out.append((topic, [(p, E.NONE) for p in partitions]))
        return records, out

    def delete_all(self, group_id: str, records: list[RawRecord]) -> None:
        """Tombstones for every offset of the group (DeleteGroups), pending transactional ones
        included: one tombstone per partition, as Kafka's deleteAllOffsets writes."""
        stored = self.offsets.get(group_id, {})
        for topic, parts in stored.items():
            records.extend(R.offset_tombstone(group_id, topic, p) for p in parts)
        if self.txn:
            for topic, p in sorted(self.txn.unstable(group_id)):
                parts = stored.get(topic)
                if parts is None or p not in parts:
                    records.append(R.offset_tombstone(group_id, topic, p))

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
                    records.extend(R.offset_tombstone(group_id, topic, p)
                                   for p in parts if p in gone)

    def expire(self, group: ClassicGroup, now_ms: int, retention_ms: int,
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
                    records.append(R.offset_tombstone(group_id, topic, p))
                else:
                    all_expired = False
        return all_expired and not unstable
