"""``__consumer_offsets`` records of consumer groups (KIP-848), byte-exact with Kafka 4.0.

Record types 3-8 and 16. Key = int16 record type + key struct in non-flexible encoding (int16
length strings); value = int16 version (always 0) + value struct in flexible encoding (compact
strings and arrays, uuids as 16 big-endian bytes, a tagged-field section after every struct).
Tombstone = None value. Schemas: group-coordinator/src/main/resources/common/message/
ConsumerGroup*{Key,Value}.json in Apache Kafka.

``decode_key``/``decode_value`` here are a superset of :mod:`group_records`: they hand types 0-2
to it and decode 3-8 and 16 themselves, so a reader of the whole topic can switch to this module.
Tagged fields added after 4.0 (KIP-1101 MetadataHash, KIP-1251 AssignmentEpochs, ...) are read
past; the one 4.0 tagged field (ClassicMemberMetadata, tag 0 of type 5) is modelled.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from . import group_records
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
    write_topic_partitions,
)
from .group_records import RecordDecodeError, UnknownKey
from .varint import encode_uvarint

_I8 = struct.Struct(">b")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


# Keys --------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataKey:
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberKey:
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentKey:
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionKey:
    group: str
    regular_expression: str


# Values ------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataValue:
    epoch: int


@dataclass(frozen=True, slots=True)
class PartitionRacks:
    """Deprecated after 4.0 (Kafka writes an empty list); kept so older logs decode."""
    partition: int
    racks: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    topic_id: uuid.UUID
    topic_name: str
    num_partitions: int
    partition_metadata: tuple[PartitionRacks, ...] = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadataValue:
    topics: tuple[TopicMetadata, ...] = ()


@dataclass(frozen=True, slots=True)
class ClassicProtocol:
    name: str
    metadata: bytes


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    session_timeout_ms: int
    supported_protocols: tuple[ClassicProtocol, ...] = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    classic_member_metadata: ClassicMemberMetadata | None = None


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberValue:
    topic_partitions: tuple[TopicPartitions, ...] = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: tuple[TopicPartitions, ...] = ()
    partitions_pending_revocation: tuple[TopicPartitions, ...] = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionValue:
    topics: tuple[str, ...]
    version: int
    timestamp: int


ConsumerGroupKey = (
    ConsumerGroupMetadataKey | ConsumerGroupPartitionMetadataKey | ConsumerGroupMemberMetadataKey
    | ConsumerGroupTargetAssignmentMetadataKey | ConsumerGroupTargetAssignmentMemberKey
    | ConsumerGroupCurrentMemberAssignmentKey | ConsumerGroupRegularExpressionKey
)
ConsumerGroupValue = (
    ConsumerGroupMetadataValue | ConsumerGroupPartitionMetadataValue
    | ConsumerGroupMemberMetadataValue | ConsumerGroupTargetAssignmentMetadataValue
    | ConsumerGroupTargetAssignmentMemberValue | ConsumerGroupCurrentMemberAssignmentValue
    | ConsumerGroupRegularExpressionValue
)
AnyKey = group_records.RecordKey | ConsumerGroupKey
AnyValue = group_records.RecordValue | ConsumerGroupValue

# record type (= key version) -> key class, key field names after the group id, value class
_KEY_TYPES: dict[int, tuple[type, tuple[str, ...]]] = {
    3: (ConsumerGroupMetadataKey, ()),
    4: (ConsumerGroupPartitionMetadataKey, ()),
    5: (ConsumerGroupMemberMetadataKey, ("member_id",)),
    6: (ConsumerGroupTargetAssignmentMetadataKey, ()),
    7: (ConsumerGroupTargetAssignmentMemberKey, ("member_id",)),
    8: (ConsumerGroupCurrentMemberAssignmentKey, ("member_id",)),
    16: (ConsumerGroupRegularExpressionKey, ("regular_expression",)),
}
RECORD_TYPES: dict[type, int] = {cls: t for t, (cls, _) in _KEY_TYPES.items()}


# Encoding ----------------------------------------------------------------------------------------

def _cbytes(out: bytearray, b: bytes) -> None:
    out += encode_uvarint(len(b) + 1)
    out += b


def _no_tags(out: bytearray) -> None:
    out.append(0)


def _classic_member(meta: ClassicMemberMetadata) -> bytes:
    out = bytearray(_I32.pack(meta.session_timeout_ms))
    out += encode_uvarint(len(meta.supported_protocols) + 1)
    for proto in meta.supported_protocols:
        write_compact_str(out, proto.name)
        _cbytes(out, proto.metadata)
        _no_tags(out)
    _no_tags(out)
    return bytes(out)


def encode_key(key: AnyKey) -> bytes:
    record_type = RECORD_TYPES.get(type(key))
    if record_type is None:
        return group_records.encode_key(key)  # type: ignore[arg-type]  # keys outside RECORD_TYPES are the offset-commit and group-metadata keys group_records takes
    extra = _KEY_TYPES[record_type][1]
    return encode_key_fields(record_type, (key.group, *(getattr(key, name) for name in extra)))


def encode_value(value: AnyValue) -> bytes:
    out = bytearray(VALUE_VERSION)
    match value:
        case ConsumerGroupMetadataValue(epoch=epoch):
            out += _I32.pack(epoch)
        case ConsumerGroupPartitionMetadataValue(topics=topics):
            out += encode_uvarint(len(topics) + 1)
            for t in topics:
                out += t.topic_id.bytes
                write_compact_str(out, t.topic_name)
                out += _I32.pack(t.num_partitions)
                out += encode_uvarint(len(t.partition_metadata) + 1)
                for pm in t.partition_metadata:
                    out += _I32.pack(pm.partition)
                    write_compact_strs(out, pm.racks)
                    _no_tags(out)
                _no_tags(out)
        case ConsumerGroupMemberMetadataValue():
            write_compact_str(out, value.instance_id)
            write_compact_str(out, value.rack_id)
            write_compact_str(out, value.client_id)
            write_compact_str(out, value.client_host)
            write_compact_strs(out, value.subscribed_topic_names)
            write_compact_str(out, value.subscribed_topic_regex)
            out += _I32.pack(value.rebalance_timeout_ms)
            write_compact_str(out, value.server_assignor)
            if value.classic_member_metadata is None:
                _no_tags(out)
                return bytes(out)
            # one tagged field: tag 0, size, then the nullable struct (marker 1 + struct)
            body = _classic_member(value.classic_member_metadata)
            out.append(1)
            out.append(0)
            out += encode_uvarint(len(body) + 1)
            out.append(1)
            out += body
            return bytes(out)
        case ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=epoch):
            out += _I32.pack(epoch)
        case ConsumerGroupTargetAssignmentMemberValue(topic_partitions=tps):
            write_topic_partitions(out, tps)
        case ConsumerGroupCurrentMemberAssignmentValue():
            out += _I32.pack(value.member_epoch)
            out += _I32.pack(value.previous_member_epoch)
            out += _I8.pack(value.state)
            write_topic_partitions(out, value.assigned_partitions)
            write_topic_partitions(out, value.partitions_pending_revocation)
        case ConsumerGroupRegularExpressionValue():
            write_compact_strs(out, value.topics)
            out += _I64.pack(value.version)
            out += _I64.pack(value.timestamp)
        case _:
            return group_records.encode_value(value)
    _no_tags(out)
    return bytes(out)


# Decoding ----------------------------------------------------------------------------------------

def decode_key(data: bytes | memoryview) -> AnyKey | UnknownKey:
    """Any ``__consumer_offsets`` key; unknown record types come back as ``UnknownKey``."""
    record_type = key_record_type(data)
    entry = _KEY_TYPES.get(record_type)
    if entry is None:
        return group_records.decode_key(data)
    return entry[0](*decode_key_fields(data, record_type, 1 + len(entry[1])))


def decode_value(key: AnyKey, data: bytes | memoryview | None) -> AnyValue | None:
    if data is None:
        return None
    record_type = RECORD_TYPES.get(type(key))
    if record_type is None:
        return group_records.decode_value(key, data)  # type: ignore[arg-type]  # keys outside RECORD_TYPES are the offset-commit and group-metadata keys group_records takes
    r = value_reader(data, record_type)
    value = _VALUE_READERS[record_type](r)
    expect_end(r, record_type, "value")
    return value


def _read_metadata(r: FlexibleReader) -> ConsumerGroupMetadataValue:
    epoch = r.i32()
    r.tags()
    return ConsumerGroupMetadataValue(epoch)


def _read_partition_metadata(r: FlexibleReader) -> ConsumerGroupPartitionMetadataValue:
    topics = []
    for _ in range(r.count()):
        topic_id = r.uuid()
        name = r.str()
        num_partitions = r.i32()
        racks = []
        for _ in range(r.count()):
            partition = r.i32()
            racks.append(PartitionRacks(partition, r.strs()))
            r.tags()
        r.tags()
        topics.append(TopicMetadata(topic_id, name, num_partitions, tuple(racks)))
    r.tags()
    return ConsumerGroupPartitionMetadataValue(tuple(topics))


def _read_classic_member(r: FlexibleReader) -> ClassicMemberMetadata | None:
    if r.i8() < 0:
        return None
    session_timeout = r.i32()
    protocols = []
    for _ in range(r.count()):
        name = r.str()
        metadata = r.bytes()
        r.tags()
        protocols.append(ClassicProtocol(name, metadata))
    r.tags()
    return ClassicMemberMetadata(session_timeout, tuple(protocols))


def _read_member_metadata(r: FlexibleReader) -> ConsumerGroupMemberMetadataValue:
    instance_id = r.nstr()
    rack_id = r.nstr()
    client_id = r.str()
    client_host = r.str()
    topics = r.strs()
    regex = r.nstr()
    rebalance_timeout = r.i32()
    assignor = r.nstr()
    classic = None
    for _ in range(r.uvarint()):
        tag, size = r.uvarint(), r.uvarint()
        end = r.pos + size
        if tag == 0:
            classic = _read_classic_member(r)
            if r.pos != end:
                raise RecordDecodeError("ClassicMemberMetadata size mismatch")
        else:
            r.skip(size)
    return ConsumerGroupMemberMetadataValue(instance_id, rack_id, client_id, client_host, topics,
                                            regex, rebalance_timeout, assignor, classic)


def _read_target_metadata(r: FlexibleReader) -> ConsumerGroupTargetAssignmentMetadataValue:
    epoch = r.i32()
    r.tags()
    return ConsumerGroupTargetAssignmentMetadataValue(epoch)


def _read_target_member(r: FlexibleReader) -> ConsumerGroupTargetAssignmentMemberValue:
    tps = r.topic_partitions()
    r.tags()
    return ConsumerGroupTargetAssignmentMemberValue(tps)


def _read_current_assignment(r: FlexibleReader) -> ConsumerGroupCurrentMemberAssignmentValue:
    epoch = r.i32()
    previous = r.i32()
    state = r.i8()
    assigned = r.topic_partitions()
    pending = r.topic_partitions()
    r.tags()
    return ConsumerGroupCurrentMemberAssignmentValue(epoch, previous, state, assigned, pending)


def _read_regex(r: FlexibleReader) -> ConsumerGroupRegularExpressionValue:
    topics = r.strs()
    version = r.i64()
    timestamp = r.i64()
    r.tags()
    return ConsumerGroupRegularExpressionValue(topics, version, timestamp)


_VALUE_READERS: dict[int, Callable[[FlexibleReader], AnyValue]] = {
    3: _read_metadata,
    4: _read_partition_metadata,
    5: _read_member_metadata,
    6: _read_target_metadata,
    7: _read_target_member,
    8: _read_current_assignment,
    16: _read_regex,
}
