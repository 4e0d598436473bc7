"""``__share_group_state`` records (KIP-932), byte-exact with Kafka's share coordinator.

Key: int16 record type (0 ShareSnapshot, 1 ShareUpdate), then GroupId (int16-length string),
TopicId (16 bytes), Partition (int32); keys are not flexible. Value: int16 version 0, then a
flexible struct (compact arrays, a tag buffer per struct):

- ShareSnapshotValue: SnapshotEpoch int32, StateEpoch int32, LeaderEpoch int32, StartOffset
  int64, CreateTimestamp int64, WriteTimestamp int64, StateBatches[FirstOffset int64,
  LastOffset int64, DeliveryState int8, DeliveryCount int16]; tagged field 0
  DeliveryCompleteCount int32 (Kafka 4.2, KIP-1226; default -1, then not written).
- ShareUpdateValue: SnapshotEpoch int32, LeaderEpoch int32, StartOffset int64 (-1: unchanged),
  StateBatches[same]; tagged field 0 DeliveryCompleteCount.

A ShareSnapshot key with no value (a tombstone) deletes the share-partition's state.
"""

from __future__ import annotations

import base64
import struct
import uuid
from dataclasses import dataclass
from typing import NamedTuple

from .varint import HeaderError, encode_uvarint, read_uvarint

SHARE_SNAPSHOT = 0
SHARE_UPDATE = 1
UNKNOWN_DELIVERY_COMPLETE_COUNT = -1

_I16 = struct.Struct(">h")
_KEY_TAIL = struct.Struct(">16si")
_BATCH = struct.Struct(">qqbh")
_SNAPSHOT_HEAD = struct.Struct(">hiiiqqq")  # version, snapshot/state/leader epoch, start, times
_UPDATE_HEAD = struct.Struct(">hiiq")  # version, snapshot epoch, leader epoch, start offset
_I32 = struct.Struct(">i")
_TAG_COUNT_ONE_DCC = b"\x01\x00\x04"  # one tagged field: tag 0, size 4


class ShareStateRecordError(ValueError):
    """Bytes that do not decode as a ``__share_group_state`` record."""


class PersistedBatch(NamedTuple):
    """Offsets first_offset..last_offset (inclusive) in one delivery state with one count."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ShareStateKey:
    record_type: int  # SHARE_SNAPSHOT or SHARE_UPDATE
    group_id: str
    topic_id: uuid.UUID
    partition: int


@dataclass(frozen=True, slots=True)
class ShareSnapshotValue:
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    create_timestamp: int
    write_timestamp: int
    state_batches: tuple[PersistedBatch, ...] = ()
    delivery_complete_count: int = UNKNOWN_DELIVERY_COMPLETE_COUNT


@dataclass(frozen=True, slots=True)
class ShareUpdateValue:
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[PersistedBatch, ...] = ()
    delivery_complete_count: int = UNKNOWN_DELIVERY_COMPLETE_COUNT


# Keys --------------------------------------------------------------------------------------------

def kafka_uuid(value: uuid.UUID) -> str:
    """Kafka's Uuid.toString(): URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def coordinator_key(group_id: str, topic_id: uuid.UUID, partition: int) -> str:
    """The string Kafka routes a share-partition's state by (SharePartitionKey
    .asCoordinatorKey): ``"<group>:<topic id>:<partition>"``; its Java hash picks the
    ``__share_group_state`` partition, and FindCoordinator key type 2 carries it."""
    return f"{group_id}:{kafka_uuid(topic_id)}:{partition}"


def encode_key(key: ShareStateKey) -> bytes:
    group = key.group_id.encode()
    return (_I16.pack(key.record_type) + _I16.pack(len(group)) + group
            + _KEY_TAIL.pack(key.topic_id.bytes, key.partition))


def decode_key(data: bytes) -> ShareStateKey:
    try:
        (record_type,) = _I16.unpack_from(data, 0)
        if record_type not in (SHARE_SNAPSHOT, SHARE_UPDATE):
            raise ShareStateRecordError(f"unknown share state record type {record_type}")
        (n,) = _I16.unpack_from(data, 2)
        if n < 0 or 4 + n + _KEY_TAIL.size > len(data):
            raise ShareStateRecordError("bad group id length")
        group = data[4:4 + n].decode()
        topic_id, partition = _KEY_TAIL.unpack_from(data, 4 + n)
        return ShareStateKey(record_type, group, uuid.UUID(bytes=topic_id), partition)
    except (struct.error, UnicodeDecodeError) as exc:
        raise ShareStateRecordError(str(exc)) from None


# Values ------------------------------------------------------------------------------------------

def _batches(out: bytearray, batches: tuple[PersistedBatch, ...] | list[PersistedBatch]) -> None:
    out += encode_uvarint(len(batches) + 1)
    pack = _BATCH.pack
    for b in batches:
        out += pack(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
        out += b"\x00"  # the batch's tag buffer


def _tags(out: bytearray, delivery_complete_count: int) -> None:
    if delivery_complete_count == UNKNOWN_DELIVERY_COMPLETE_COUNT:
        out += b"\x00"
    else:
        out += _TAG_COUNT_ONE_DCC + _I32.pack(delivery_complete_count)


def encode_snapshot_value(v: ShareSnapshotValue) -> bytes:
    out = bytearray(_SNAPSHOT_HEAD.pack(0, v.snapshot_epoch, v.state_epoch, v.leader_epoch,
                                        v.start_offset, v.create_timestamp, v.write_timestamp))
    _batches(out, v.state_batches)
    _tags(out, v.delivery_complete_count)
    return bytes(out)


def encode_update_value(v: ShareUpdateValue) -> bytes:
    out = bytearray(_UPDATE_HEAD.pack(0, v.snapshot_epoch, v.leader_epoch, v.start_offset))
    _batches(out, v.state_batches)
    _tags(out, v.delivery_complete_count)
    return bytes(out)


def _read_batches(data: bytes, pos: int) -> tuple[tuple[PersistedBatch, ...], int]:
    n, pos = read_uvarint(data, pos)
    out = []
    unpack = _BATCH.unpack_from
    for _ in range(max(n - 1, 0)):
        out.append(PersistedBatch(*unpack(data, pos)))
        pos = _skip_tags(data, pos + _BATCH.size)
    return tuple(out), pos


def _skip_tags(data: bytes, pos: int) -> int:
    count, pos = read_uvarint(data, pos)
    for _ in range(count):
        _tag, pos = read_uvarint(data, pos)
        size, pos = read_uvarint(data, pos)
        pos += size
    return pos


def _read_dcc(data: bytes, pos: int) -> int:
    """DeliveryCompleteCount from the top-level tag buffer at ``pos`` (-1 when absent)."""
    count, pos = read_uvarint(data, pos)
    found = UNKNOWN_DELIVERY_COMPLETE_COUNT
    for _ in range(count):
        tag, pos = read_uvarint(data, pos)
        size, pos = read_uvarint(data, pos)
        if tag == 0 and size == 4:
            (found,) = _I32.unpack_from(data, pos)
        pos += size
    return found


def _version(data: bytes) -> None:
    (version,) = _I16.unpack_from(data, 0)
    if version != 0:
        raise ShareStateRecordError(f"unknown share state value version {version}")


def decode_snapshot_value(data: bytes) -> ShareSnapshotValue:
    try:
        _version(data)
        _v, snap, state, leader, start, created, written = _SNAPSHOT_HEAD.unpack_from(data, 0)
        batches, pos = _read_batches(data, _SNAPSHOT_HEAD.size)
        return ShareSnapshotValue(snap, state, leader, start, created, written, batches,
                                  _read_dcc(data, pos))
    except (struct.error, IndexError, HeaderError) as exc:
        raise ShareStateRecordError(str(exc)) from None


def decode_update_value(data: bytes) -> ShareUpdateValue:
    try:
        _version(data)
        _v, snap, leader, start = _UPDATE_HEAD.unpack_from(data, 0)
        batches, pos = _read_batches(data, _UPDATE_HEAD.size)
        return ShareUpdateValue(snap, leader, start, batches, _read_dcc(data, pos))
    except (struct.error, IndexError, HeaderError) as exc:
        raise ShareStateRecordError(str(exc)) from None
