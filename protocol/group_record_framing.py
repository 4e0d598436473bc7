"""What the ``__consumer_offsets`` record codecs of consumer groups (consumer_group_records.py,
KIP-848) and share groups (share_group_records.py, KIP-932) share; each of them keeps only its
record schemas and their field order.

Key = int16 record type + the key's strings in non-flexible encoding (int16 length each); value
= int16 version (always 0) + the value struct in flexible encoding (compact strings and arrays,
uuids as 16 big-endian bytes, a tagged-field section after every struct). ``TopicPartitions``
(a topic id and its partitions) has the same schema in both.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from .group_records import RecordDecodeError, RecordReader
from .varint import encode_uvarint

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")

VALUE_VERSION = b"\x00\x00"  # every value of these record types is version 0


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    topic_id: uuid.UUID
    partitions: tuple[int, ...]


# Encoding ----------------------------------------------------------------------------------------

def encode_key_fields(record_type: int, fields: Iterable[str]) -> bytes:
    """A key: its record type, then each string field (the group id first)."""
    out = bytearray(_I16.pack(record_type))
    for field in fields:
        data = field.encode()
        out += _I16.pack(len(data))
        out += data
    return bytes(out)


def write_compact_str(out: bytearray, s: str | None) -> None:
    """Compact (nullable) string: uvarint(len + 1), 0 = null."""
    if s is None:
        out.append(0)
        return
    data = s.encode()
    out += encode_uvarint(len(data) + 1)
    out += data


def write_compact_strs(out: bytearray, items: tuple[str, ...]) -> None:
    out += encode_uvarint(len(items) + 1)
    for s in items:
        write_compact_str(out, s)


def write_int32s(out: bytearray, items: tuple[int, ...]) -> None:
    out += encode_uvarint(len(items) + 1)
    for p in items:
        out += _I32.pack(p)


def write_topic_partitions(out: bytearray, items: tuple[TopicPartitions, ...]) -> None:
    out += encode_uvarint(len(items) + 1)
    for tp in items:
        out += tp.topic_id.bytes
        write_int32s(out, tp.partitions)
        out.append(0)  # no tagged fields


# Decoding ----------------------------------------------------------------------------------------

class FlexibleReader(RecordReader):
    """A RecordReader with the flexible-encoding fields of these values."""

    __slots__ = ()

    def i8(self) -> int:
        return _I8.unpack(self._take(1))[0]

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=self._take(16))

    def count(self) -> int:
        """A compact array's length (a null array is an error)."""
        n = self.uvarint() - 1
        if n < 0:
            raise RecordDecodeError("null in a non-nullable array")
        return n

    def strs(self) -> tuple[str, ...]:
        return tuple(self.str() for _ in range(self.count()))

    def int32s(self) -> tuple[int, ...]:
        return tuple(self.i32() for _ in range(self.count()))

    def topic_partitions(self) -> tuple[TopicPartitions, ...]:
        items = []
        for _ in range(self.count()):
            topic_id = self.uuid()
            partitions = self.int32s()
            self.tags()
            items.append(TopicPartitions(topic_id, partitions))
        return tuple(items)

    def skip(self, n: int) -> None:
        self._take(n)


def key_record_type(data: bytes | memoryview) -> int:
    """The record type a key starts with; RecordDecodeError when it is too short."""
    if len(data) < 2:
        raise RecordDecodeError("record key truncated")
    return _I16.unpack_from(data)[0]


def decode_key_fields(data: bytes | memoryview, record_type: int, count: int) -> list[str]:
    """The ``count`` string fields of a key of ``record_type``, which must end after them."""
    r = RecordReader(data, 2)
    fields = [r.str() for _ in range(count)]
    expect_end(r, record_type, "key")
    return fields


def value_reader(data: bytes | memoryview, record_type: int) -> FlexibleReader:
    """A reader positioned after the version of a value of ``record_type`` (version 0 only)."""
    r = FlexibleReader(data, 0, flexible=True)
    version = r.i16()
    if version != 0:
        raise RecordDecodeError(f"unknown version {version} of a type {record_type} value")
    return r


def expect_end(r: RecordReader, record_type: int, what: str) -> None:
    """RecordDecodeError when bytes follow the ``what`` ("key", "value") just read."""
    if r.pos != len(r.buf):
        raise RecordDecodeError(f"{len(r.buf) - r.pos} trailing bytes after a type {record_type} "
                                f"{what}")
