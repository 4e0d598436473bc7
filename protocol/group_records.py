"""``__consumer_offsets`` record keys and values (classic groups), byte-exact with Kafka.

Key = int16 record type + key struct; value = int16 version + value struct, or None (tombstone).
Written: OffsetCommitKey v1, OffsetCommitValue v3 (v1 when an expire timestamp is set),
GroupMetadataKey v2, GroupMetadataValue v3. Read: every version, v4 values in flexible encoding.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from .varint import HeaderError, read_uvarint

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_TIMEOUTS = struct.Struct(">ii")


class RecordDecodeError(ValueError):
    """Bytes that do not decode as a known __consumer_offsets record."""


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class UnknownKey:
    version: int


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None = None


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[MemberMetadata, ...] = ()


RecordKey = OffsetCommitKey | GroupMetadataKey
RecordValue = OffsetCommitValue | GroupMetadataValue


# Encoding --------------------------------------------------------------------------------------

def _str(out: bytearray, s: str) -> None:
    data = s.encode()
    out += _I16.pack(len(data))
    out += data


def _nstr(out: bytearray, s: str | None) -> None:
    if s is None:
        out += b"\xff\xff"
    else:
        _str(out, s)


def _bytes(out: bytearray, b: bytes) -> None:
    out += _I32.pack(len(b))
    out += b


def encode_key(key: RecordKey) -> bytes:
    out = bytearray()
    if isinstance(key, OffsetCommitKey):
        out += _I16.pack(1)
        _str(out, key.group)
        _str(out, key.topic)
        out += _I32.pack(key.partition)
    elif isinstance(key, GroupMetadataKey):
        out += _I16.pack(2)
        _str(out, key.group)
    else:
        raise TypeError(f"cannot encode key {key!r}")
    return bytes(out)


def encode_value(value: RecordValue) -> bytes:
    out = bytearray()
    if isinstance(value, OffsetCommitValue):
        if value.expire_timestamp is not None:
            out += _I16.pack(1)
            out += _I64.pack(value.offset)
            _str(out, value.metadata)
            out += _I64.pack(value.commit_timestamp)
            out += _I64.pack(value.expire_timestamp)
        else:
            out += _I16.pack(3)
            out += _I64.pack(value.offset)
            out += _I32.pack(value.leader_epoch)
            _str(out, value.metadata)
            out += _I64.pack(value.commit_timestamp)
    elif isinstance(value, GroupMetadataValue):
        return encode_group_metadata_value(
            value.protocol_type, value.generation, value.protocol, value.leader,
            value.current_state_timestamp,
            [(encode_member_head(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                 m.rebalance_timeout, m.session_timeout, m.subscription),
              m.assignment) for m in value.members])
    else:
        raise TypeError(f"cannot encode value {value!r}")
    return bytes(out)


def encode_member_head(member_id: str, group_instance_id: str | None, client_id: str,
                       client_host: str, rebalance_timeout: int, session_timeout: int,
                       subscription: bytes) -> bytes:
    """A GroupMetadataValue v3 member up to (without) its assignment: what stays the same from
    one generation to the next, so a group can keep it per member (see
    ``encode_group_metadata_value``)."""
    out = bytearray()
    _str(out, member_id)
    _nstr(out, group_instance_id)
    _str(out, client_id)
    _str(out, client_host)
    out += _TIMEOUTS.pack(rebalance_timeout, session_timeout)
    _bytes(out, subscription)
    return bytes(out)


def encode_group_metadata_value(protocol_type: str, generation: int, protocol: str | None,
                                leader: str | None, current_state_timestamp: int,
                                members: Sequence[tuple[bytes, bytes]]) -> bytes:
    """GroupMetadataValue v3 from each member's ``encode_member_head`` bytes and assignment:
    ``encode_value(GroupMetadataValue(...))`` byte for byte, one join for the whole group."""
    out = bytearray(b"\x00\x03")
    _str(out, protocol_type)
    out += _I32.pack(generation)
    _nstr(out, protocol)
    _nstr(out, leader)
    out += _I64.pack(current_state_timestamp)
    out += _I32.pack(len(members))
    pack = _I32.pack
    parts: list[bytes] = [bytes(out)]
    append = parts.append
    for head, assignment in members:
        append(head)
        append(pack(len(assignment)))
        append(assignment)
    return b"".join(parts)


_V3_EMPTY = struct.Struct(">hqihq")  # v3 with empty metadata: one pack
_OFFSET_KEY_V1 = b"\x00\x01"


@lru_cache(maxsize=65536)
def offset_key_prefix(group: str, topic: str) -> bytes:
    """OffsetCommitKey v1 bytes without the trailing int32 partition."""
    g, t = group.encode(), topic.encode()
    return _OFFSET_KEY_V1 + _I16.pack(len(g)) + g + _I16.pack(len(t)) + t


def encode_offset_key(group: str, topic: str, partition: int) -> bytes:
    return offset_key_prefix(group, topic) + _I32.pack(partition)


def encode_offset_value(offset: int, leader_epoch: int, metadata: str, commit_timestamp: int,
                        expire_timestamp: int | None = None) -> bytes:
    """``encode_value(OffsetCommitValue(...))`` without building the value object."""
    if expire_timestamp is not None or metadata:
        return encode_value(OffsetCommitValue(offset, leader_epoch, metadata, commit_timestamp,
                                              expire_timestamp))
    return _V3_EMPTY.pack(3, offset, leader_epoch, 0, commit_timestamp)


# Decoding --------------------------------------------------------------------------------------

class RecordReader:
    __slots__ = ("buf", "pos", "flexible")

    def __init__(self, buf: bytes | memoryview, pos: int = 0, flexible: bool = False) -> None:
        self.buf = bytes(buf)
        self.pos = pos
        self.flexible = flexible

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise RecordDecodeError("record truncated")
        data = self.buf[self.pos:self.pos + n]
        self.pos += n
        return data

    def i16(self) -> int:
        return _I16.unpack(self._take(2))[0]

    def i32(self) -> int:
        return _I32.unpack(self._take(4))[0]

    def i64(self) -> int:
        return _I64.unpack(self._take(8))[0]

    def uvarint(self) -> int:
        try:
            value, self.pos = read_uvarint(self.buf, self.pos)
        except HeaderError as exc:
            raise RecordDecodeError(str(exc)) from None
        return value

    def _length(self, wide: bool) -> int:
        if self.flexible:
            return self.uvarint() - 1
        return self.i32() if wide else self.i16()

    def nstr(self) -> str | None:
        n = self._length(False)
        if n < 0:
            return None
        try:
            return self._take(n).decode()
        except UnicodeDecodeError as exc:
            raise RecordDecodeError(str(exc)) from exc

    def str(self) -> str:
        s = self.nstr()
        if s is None:
            raise RecordDecodeError("null in a non-nullable string")
        return s

    def bytes(self) -> bytes:
        n = self._length(True)
        return b"" if n < 0 else self._take(n)

    def array_len(self) -> int:
        n = self._length(True)
        return max(n, 0)

    def tags(self) -> None:
        if not self.flexible:
            return
        for _ in range(self.uvarint()):
            self.uvarint()
            self._take(self.uvarint())


_H = struct.Struct(">h")
_V3_TAIL = struct.Struct(">qih")


def decode_key(data: bytes | memoryview) -> RecordKey | UnknownKey:
    if data[:2] == b"\x00\x01":  # fast path: OffsetCommitKey v1, what Kafka writes
        try:
            n = _H.unpack_from(data, 2)[0]
            group = bytes(data[4:4 + n]).decode()
            pos = 4 + n
            m = _H.unpack_from(data, pos)[0]
            topic = bytes(data[pos + 2:pos + 2 + m]).decode()
            (partition,) = _I32.unpack_from(data, pos + 2 + m)
            if n >= 0 and m >= 0 and len(data) == pos + 6 + m:
                return OffsetCommitKey(group, topic, partition)
        except (struct.error, UnicodeDecodeError):
            pass
    r = RecordReader(data)
    version = r.i16()
    if version in (0, 1):
        return OffsetCommitKey(r.str(), r.str(), r.i32())
    if version == 2:
        return GroupMetadataKey(r.str())
    return UnknownKey(version)


def decode_value(key: RecordKey, data: bytes | memoryview | None) -> RecordValue | None:
    if data is None:
        return None
    if isinstance(key, OffsetCommitKey):
        return decode_offset_value(data)
    if isinstance(key, GroupMetadataKey):
        r = RecordReader(data)
        return _group_value(r, r.i16())
    raise RecordDecodeError(f"no value schema for key {key!r}")


def decode_offset_value(data: bytes | memoryview) -> OffsetCommitValue:
    if data[:2] == b"\x00\x03":
        try:  # fast path: OffsetCommitValue v3
            offset, epoch, n = _V3_TAIL.unpack_from(data, 2)
            if n >= 0 and len(data) == 16 + n + 8:
                metadata = bytes(data[16:16 + n]).decode()
                return OffsetCommitValue(offset, epoch, metadata, _I64.unpack_from(data, 16 + n)[0])
        except (struct.error, UnicodeDecodeError):
            pass
    r = RecordReader(data)
    return _offset_value(r, r.i16())


def _offset_value(r: RecordReader, version: int) -> OffsetCommitValue:
    if version not in range(5):
        raise RecordDecodeError(f"unknown OffsetCommitValue version {version}")
    r.flexible = version >= 4
    offset = r.i64()
    epoch = r.i32() if version >= 3 else -1
    metadata = r.str()
    commit_ts = r.i64()
    expire = r.i64() if version == 1 else None
    r.tags()
    return OffsetCommitValue(offset, epoch, metadata, commit_ts, expire)


def _group_value(r: RecordReader, version: int) -> GroupMetadataValue:
    if version not in range(5):
        raise RecordDecodeError(f"unknown GroupMetadataValue version {version}")
    r.flexible = version >= 4
    protocol_type = r.str()
    generation = r.i32()
    protocol = r.nstr()
    leader = r.nstr()
    state_ts = r.i64() if version >= 2 else -1
    members = []
    for _ in range(r.array_len()):
        member_id = r.str()
        instance = r.nstr() if version >= 3 else None
        client_id = r.str()
        client_host = r.str()
        rebalance = r.i32() if version >= 1 else -1
        session = r.i32()
        subscription = r.bytes()
        assignment = r.bytes()
        r.tags()
        members.append(MemberMetadata(member_id, instance, client_id, client_host,
                                      rebalance, session, subscription, assignment))
    r.tags()
    return GroupMetadataValue(protocol_type, generation, protocol, leader, state_ts, tuple(members))
