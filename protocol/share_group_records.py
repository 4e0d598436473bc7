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

from .group_record_framing import (
    VALUE_VERSION,
    FlexibleReader,
    TopicPartitions,
    decode_key_fields,
    encode_key_fields,
    expect_end,
    key_record_type,
    value_reader,
    write_compact_str,
    write_compact_strs,
    write_int32s,
    write_topic_partitions,
)
from .group_records import RecordDecodeError
from .varint import encode_uvarint

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")

SHARE_RECORD_TYPES = frozenset(range(10, 16))
LEGACY_PARTITION_METADATA_TYPE = 9  # 4.0 only; skipped on load
_STATE_PARTITION_METADATA_TYPE = 15  # read with or without CreateTimestamp


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

def _infos(out: bytearray, items: tuple[TopicPartitionsInfo, ...]) -> None:
    out += encode_uvarint(len(items) + 1)
    for info in items:
        out += info.topic_id.bytes
        write_compact_str(out, info.topic_name)
        write_int32s(out, info.partitions)
        out.append(0)


def encode_key(key: ShareGroupKey) -> bytes:
    record_type_ = RECORD_TYPES[type(key)]
    if _KEY_TYPES[record_type_][1]:
        return encode_key_fields(record_type_, (key.group, key.member_id))  # type: ignore[union-attr]  # the key types with a member id
    return encode_key_fields(record_type_, (key.group,))


def encode_value(value: ShareGroupValue) -> bytes:
    out = bytearray(VALUE_VERSION)
    match value:
        case ShareGroupMemberMetadataValue():
            write_compact_str(out, value.rack_id)
            write_compact_str(out, value.client_id)
            write_compact_str(out, value.client_host)
            write_compact_strs(out, value.subscribed_topic_names)
        case ShareGroupMetadataValue():
            out += _I32.pack(value.epoch)
            out += _I64.pack(value.metadata_hash)
        case ShareGroupTargetAssignmentMetadataValue():
            out += _I32.pack(value.assignment_epoch)
        case ShareGroupTargetAssignmentMemberValue():
            write_topic_partitions(out, value.topic_partitions)
        case ShareGroupCurrentMemberAssignmentValue():
            out += _I32.pack(value.member_epoch)
            out += _I32.pack(value.previous_member_epoch)
            out += _I8.pack(value.state)
            write_topic_partitions(out, value.assigned_partitions)
        case ShareGroupStatePartitionMetadataValue():
            _infos(out, value.initializing_topics)
            _infos(out, value.initialized_topics)
            out += encode_uvarint(len(value.deleting_topics) + 1)
            for topic in value.deleting_topics:
                out += topic.topic_id.bytes
                write_compact_str(out, topic.topic_name)
                out.append(0)
        case _:
            raise TypeError(f"not a share group record value: {value!r}")
    out.append(0)  # no tagged fields
    return bytes(out)


# Decoding ----------------------------------------------------------------------------------------

def decode_key(data: bytes | memoryview) -> ShareGroupKey:
    """A share group key (types 10-15); RecordDecodeError for anything else."""
    record_type_ = key_record_type(data)
    entry = _KEY_TYPES.get(record_type_)
    if entry is None:
        raise RecordDecodeError(f"type {record_type_} is not a share group record")
    return entry[0](*decode_key_fields(data, record_type_, 2 if entry[1] else 1))


def decode_value(key: ShareGroupKey, data: bytes | memoryview | None) -> ShareGroupValue | None:
    if data is None:
        return None
    record_type_ = RECORD_TYPES[type(key)]
    r = value_reader(data, record_type_)
    if record_type_ != _STATE_PARTITION_METADATA_TYPE:
        value = _VALUE_READERS[record_type_](r)
        expect_end(r, record_type_, "value")
        return value
    start = r.pos
    try:
        state = _read_state_partitions(r, False)
        if r.pos == len(r.buf):
            return state
    except RecordDecodeError:
        pass
    r.pos = start  # the revision with CreateTimestamp in TopicPartitionsInfo
    state = _read_state_partitions(r, True)
    if r.pos != len(r.buf):
        raise RecordDecodeError("trailing bytes after a type 15 value")
    return state


def _read_member(r: FlexibleReader) -> ShareGroupMemberMetadataValue:
    rack = r.nstr()
    client_id = r.str()
    client_host = r.str()
    topics = r.strs()
    r.tags()
    return ShareGroupMemberMetadataValue(rack, client_id, client_host, topics)


def _read_metadata(r: FlexibleReader) -> ShareGroupMetadataValue:
    epoch = r.i32()
    metadata_hash = r.i64()
    r.tags()
    return ShareGroupMetadataValue(epoch, metadata_hash)


def _read_target_metadata(r: FlexibleReader) -> ShareGroupTargetAssignmentMetadataValue:
    epoch = r.i32()
    r.tags()
    return ShareGroupTargetAssignmentMetadataValue(epoch)


def _read_target_member(r: FlexibleReader) -> ShareGroupTargetAssignmentMemberValue:
    tps = r.topic_partitions()
    r.tags()
    return ShareGroupTargetAssignmentMemberValue(tps)


def _read_current(r: FlexibleReader) -> ShareGroupCurrentMemberAssignmentValue:
    epoch = r.i32()
    previous = r.i32()
    state = r.i8()
    assigned = r.topic_partitions()
    r.tags()
    return ShareGroupCurrentMemberAssignmentValue(epoch, previous, state, assigned)


def _read_infos(r: FlexibleReader, with_timestamp: bool) -> tuple[TopicPartitionsInfo, ...]:
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


def _read_state_partitions(r: FlexibleReader, with_timestamp: bool
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


# type 15 is read by decode_value (with or without CreateTimestamp)
_VALUE_READERS: dict[int, Callable[[FlexibleReader], ShareGroupValue]] = {
    10: _read_member,
    11: _read_metadata,
    12: _read_target_metadata,
    13: _read_target_member,
    14: _read_current,
}
