"""``__consumer_offsets`` records of share groups (KIP-932), byte-exact with Kafka 4.x.

Record types 10-15 (type 9, ShareGroupPartitionMetadata, existed in 4.0 only: decoded as an
unknown key and skipped). Key = int16 record type + key struct in non-flexible encoding (int16
length strings); value = int16 version (always 0) + value struct in flexible encoding (compact
strings and arrays, uuids as 16 big-endian bytes, a tagged-field section after every struct).
Tombstone = None value. Schemas: group-coordinator/src/main/resources/common/message/
ShareGroup*{Key,Value}.json in Apache Kafka.

Type 15's TopicPartitionsInfo gained a ``CreateTimestamp int64`` in some Kafka revisions: it is
written without it and read either way.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from .group_records import RecordDecodeError, RecordReader
from .varint import encode_uvarint

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")

SHARE_RECORD_TYPES = frozenset(range(10, 16))
LEGACY_PARTITION_METADATA_TYPE = 9  # 4.0 only; skipped on load


# Keys --------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ShareGroupMemberMetadataKey:  # 10
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ShareGroupMetadataKey:  # 11
    group: str


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMetadataKey:  # 12
    group: str


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMemberKey:  # 13
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ShareGroupCurrentMemberAssignmentKey:  # 14
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ShareGroupStatePartitionMetadataKey:  # 15
    group: str


# Values ------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ShareGroupMemberMetadataValue:
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ShareGroupMetadataValue:
    epoch: int
    metadata_hash: int = 0


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMetadataValue:
    assignment_epoch: int


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    topic_id: uuid.UUID
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMemberValue:
    topic_partitions: tuple[TopicPartitions, ...] = ()


@dataclass(frozen=True, slots=True)
class ShareGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: tuple[TopicPartitions, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicPartitionsInfo:
    topic_id: uuid.UUID
    topic_name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicInfo:
    topic_id: uuid.UUID
    topic_name: str


@dataclass(frozen=True, slots=True)
class ShareGroupStatePartitionMetadataValue:
    initializing_topics: tuple[TopicPartitionsInfo, ...] = ()
    initialized_topics: tuple[TopicPartitionsInfo, ...] = ()
    deleting_topics: tuple[TopicInfo, ...] = ()


ShareGroupKey = (
    ShareGroupMemberMetadataKey | ShareGroupMetadataKey | ShareGroupTargetAssignmentMetadataKey
    | ShareGroupTargetAssignmentMemberKey | ShareGroupCurrentMemberAssignmentKey
    | ShareGroupStatePartitionMetadataKey
)
ShareGroupValue = (
    ShareGroupMemberMetadataValue | ShareGroupMetadataValue
    | ShareGroupTargetAssignmentMetadataValue | ShareGroupTargetAssignmentMemberValue
    | ShareGroupCurrentMemberAssignmentValue | ShareGroupStatePartitionMetadataValue
)

# record type (= key version) -> key class, whether the key has a member id
_KEY_TYPES: dict[int, tuple[type, bool]] = {
    10: (ShareGroupMemberMetadataKey, True),
    11: (ShareGroupMetadataKey, False),
    12: (ShareGroupTargetAssignmentMetadataKey, False),
    13: (ShareGroupTargetAssignmentMemberKey, True),
    14: (ShareGroupCurrentMemberAssignmentKey, True),
    15: (ShareGroupStatePartitionMetadataKey, False),
}
RECORD_TYPES: dict[type, int] = {cls: t for t, (cls, _) in _KEY_TYPES.items()}


def record_type(key: bytes) -> int:
    """The record type of an encoded ``__consumer_offsets`` key (-1 when too short)."""
    return _I16.unpack_from(key)[0] if len(key) >= 2 else -1


# Encoding ----------------------------------------------------------------------------------------

def _legacy_str(out: bytearray, s: str) -> None:
    data = s.encode()
    out += _I16.pack(len(data))
    out += data


def _cstr(out: bytearray, s: str | None) -> None:
    if s is None:
        out.append(0)
        return
    data = s.encode()
    out += encode_uvarint(len(data) + 1)
    out += data


def _int32s(out: bytearray, items: tuple[int, ...]) -> None:
    out += encode_uvarint(len(items) + 1)
    for p in items:
        out += _I32.pack(p)


def _topic_partitions(out: bytearray, items: tuple[TopicPartitions, ...]) -> None:
    out += encode_uvarint(len(items) + 1)
    for tp in items:
        out += tp.topic_id.bytes
        _int32s(out, tp.partitions)
        out.append(0)


def _infos(out: bytearray, items: tuple[TopicPartitionsInfo, ...]) -> None:
    out += encode_uvarint(len(items) + 1)
    for info in items:
        out += info.topic_id.bytes
        _cstr(out, info.topic_name)
        _int32s(out, info.partitions)
        out.append(0)


def encode_key(key: ShareGroupKey) -> bytes:
    record_type_ = RECORD_TYPES[type(key)]
    out = bytearray(_I16.pack(record_type_))
    _legacy_str(out, key.group)
    if _KEY_TYPES[record_type_][1]:
        _legacy_str(out, key.member_id)  # type: ignore[union-attr]  # the key types with a member id
    return bytes(out)


def encode_value(value: ShareGroupValue) -> bytes:
    out = bytearray(_I16.pack(0))
    match value:
        case ShareGroupMemberMetadataValue():
            _cstr(out, value.rack_id)
            _cstr(out, value.client_id)
            _cstr(out, value.client_host)
            out += encode_uvarint(len(value.subscribed_topic_names) + 1)
            for name in value.subscribed_topic_names:
                _cstr(out, name)
        case ShareGroupMetadataValue():
            out += _I32.pack(value.epoch)
            out += _I64.pack(value.metadata_hash)
        case ShareGroupTargetAssignmentMetadataValue():
            out += _I32.pack(value.assignment_epoch)
        case ShareGroupTargetAssignmentMemberValue():
            _topic_partitions(out, value.topic_partitions)
        case ShareGroupCurrentMemberAssignmentValue():
            out += _I32.pack(value.member_epoch)
            out += _I32.pack(value.previous_member_epoch)
            out += _I8.pack(value.state)
            _topic_partitions(out, value.assigned_partitions)
        case ShareGroupStatePartitionMetadataValue():
            _infos(out, value.initializing_topics)
            _infos(out, value.initialized_topics)
            out += encode_uvarint(len(value.deleting_topics) + 1)
            for topic in value.deleting_topics:
                out += topic.topic_id.bytes
                _cstr(out, topic.topic_name)
                out.append(0)
        case _:
            raise TypeError(f"not a share group record value: {value!r}")
    out.append(0)  # no tagged fields
    return bytes(out)


# Decoding ----------------------------------------------------------------------------------------

class _Reader(RecordReader):
    __slots__ = ()

    def i8(self) -> int:
        return _I8.unpack(self._take(1))[0]

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=self._take(16))

    def count(self) -> int:
        n = self.uvarint() - 1
        if n < 0:
            raise RecordDecodeError("null in a non-nullable array")
        return n

    def int32s(self) -> tuple[int, ...]:
        return tuple(self.i32() for _ in range(self.count()))


def decode_key(data: bytes | memoryview) -> ShareGroupKey:
    """A share group key (types 10-15); RecordDecodeError for anything else."""
    if len(data) < 2:
        raise RecordDecodeError("record key truncated")
    record_type_ = _I16.unpack_from(data)[0]
    entry = _KEY_TYPES.get(record_type_)
    if entry is None:
        raise RecordDecodeError(f"type {record_type_} is not a share group record")
    r = _Reader(data, 2)
    fields = [r.str() for _ in range(2 if entry[1] else 1)]
    if r.pos != len(r.buf):
        raise RecordDecodeError(f"{len(r.buf) - r.pos} trailing bytes after a type "
                                f"{record_type_} key")
    return entry[0](*fields)


def decode_value(key: ShareGroupKey, data: bytes | memoryview | None) -> ShareGroupValue | None:
    if data is None:
        return None
    record_type_ = RECORD_TYPES[type(key)]
    r = _Reader(data, 0, flexible=True)
    version = r.i16()
    if version != 0:
        raise RecordDecodeError(f"unknown version {version} of a type {record_type_} value")
    start = r.pos
    try:
        value = _VALUE_READERS[record_type_](r, False)
    except RecordDecodeError:
        if record_type_ != 15:
            raise
        value = None
    if value is None or r.pos != len(r.buf):
        if record_type_ != 15:
            raise RecordDecodeError(f"{len(r.buf) - r.pos} trailing bytes after a type "
                                    f"{record_type_} value")
        r.pos = start  # the revision with CreateTimestamp in TopicPartitionsInfo
        value = _read_state_partitions(r, True)
        if r.pos != len(r.buf):
            raise RecordDecodeError("trailing bytes after a type 15 value")
    return value


def _tps(r: _Reader) -> tuple[TopicPartitions, ...]:
    items = []
    for _ in range(r.count()):
        topic_id = r.uuid()
        partitions = r.int32s()
        r.tags()
        items.append(TopicPartitions(topic_id, partitions))
    return tuple(items)


def _read_member(r: _Reader, _ts: bool) -> ShareGroupMemberMetadataValue:
    rack = r.nstr()
    client_id = r.str()
    client_host = r.str()
    topics = tuple(r.str() for _ in range(r.count()))
    r.tags()
    return ShareGroupMemberMetadataValue(rack, client_id, client_host, topics)


def _read_metadata(r: _Reader, _ts: bool) -> ShareGroupMetadataValue:
    epoch = r.i32()
    metadata_hash = r.i64()
    r.tags()
    return ShareGroupMetadataValue(epoch, metadata_hash)


def _read_target_metadata(r: _Reader, _ts: bool) -> ShareGroupTargetAssignmentMetadataValue:
    epoch = r.i32()
    r.tags()
    return ShareGroupTargetAssignmentMetadataValue(epoch)


def _read_target_member(r: _Reader, _ts: bool) -> ShareGroupTargetAssignmentMemberValue:
    tps = _tps(r)
    r.tags()
    return ShareGroupTargetAssignmentMemberValue(tps)


def _read_current(r: _Reader, _ts: bool) -> ShareGroupCurrentMemberAssignmentValue:
    epoch = r.i32()
    previous = r.i32()
    state = r.i8()
    assigned = _tps(r)
    r.tags()
    return ShareGroupCurrentMemberAssignmentValue(epoch, previous, state, assigned)


def _read_infos(r: _Reader, with_timestamp: bool) -> tuple[TopicPartitionsInfo, ...]:
    items = []
    for _ in range(r.count()):
        topic_id = r.uuid()
        name = r.str()
        partitions = r.int32s()
        if with_timestamp:
            r.i64()
        r.tags()
        items.append(TopicPartitionsInfo(topic_id, name, partitions))
    return tuple(items)


def _read_state_partitions(r: _Reader, with_timestamp: bool
                           ) -> ShareGroupStatePartitionMetadataValue:
    initializing = _read_infos(r, with_timestamp)
    initialized = _read_infos(r, with_timestamp)
    deleting = []
    for _ in range(r.count()):
        topic_id = r.uuid()
        name = r.str()
        r.tags()
        deleting.append(TopicInfo(topic_id, name))
    r.tags()
    return ShareGroupStatePartitionMetadataValue(initializing, initialized, tuple(deleting))


_VALUE_READERS: dict[int, Callable[[_Reader, bool], ShareGroupValue]] = {
    10: _read_member,
    11: _read_metadata,
    12: _read_target_metadata,
    13: _read_target_member,
    14: _read_current,
    15: _read_state_partitions,
}
