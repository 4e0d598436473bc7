"""``__transaction_state`` records, byte-exact with Kafka's TransactionLogKey (version 0) and
TransactionLogValue (version 0, written for transaction version 0/1; version 1, flexible with
the tagged PreviousProducerId / NextProducerId / ClientTransactionVersion, written for a
transaction of transaction version 2 (KIP-890), as Kafka does)."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from .varint import HeaderError, encode_uvarint, read_uvarint

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_HEAD = struct.Struct(">qhib")  # producer id, epoch, timeout, status
_TIMES = struct.Struct(">qq")

EMPTY, ONGOING, PREPARE_COMMIT, PREPARE_ABORT, COMPLETE_COMMIT, COMPLETE_ABORT, DEAD, \
    PREPARE_EPOCH_FENCE = range(8)
STATE_NAMES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
               "CompleteAbort", "Dead", "PrepareEpochFence")


class TransactionRecordDecodeError(ValueError):
    pass


@dataclass(slots=True)
class TransactionLogValue:
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: int
    partitions: dict[str, set[int]] = field(default_factory=dict)
    last_update_ms: int = -1
    start_ms: int = -1
    previous_producer_id: int = -1
    next_producer_id: int = -1
    client_transaction_version: int = 0


def encode_key(transactional_id: str) -> bytes:
    raw = transactional_id.encode()
    return _I16.pack(0) + _I16.pack(len(raw)) + raw


def decode_key(key: bytes) -> str:
    try:
        (version,) = _I16.unpack_from(key, 0)
        if version != 0:
            raise TransactionRecordDecodeError(f"unknown transaction log key version {version}")
        (n,) = _I16.unpack_from(key, 2)
        if n < 0 or 4 + n > len(key):
            raise TransactionRecordDecodeError("bad transactional id length")
        return key[4:4 + n].decode()
    except (struct.error, UnicodeDecodeError) as exc:
        raise TransactionRecordDecodeError(str(exc)) from None


def encode_value(v: TransactionLogValue) -> bytes:
    if v.client_transaction_version >= 2:
        return _encode_value_v1(v)
    out = bytearray(_I16.pack(0))
    out += _HEAD.pack(v.producer_id, v.producer_epoch, v.timeout_ms, v.state)
    if v.state == EMPTY:
        out += _I32.pack(-1)  # Kafka writes no partitions (null) for Empty
    else:
        out += _I32.pack(len(v.partitions))
        for topic in sorted(v.partitions):
            raw = topic.encode()
            parts = sorted(v.partitions[topic])
            out += _I16.pack(len(raw)) + raw + _I32.pack(len(parts))
            out += struct.pack(f">{len(parts)}i", *parts)
    out += _TIMES.pack(v.last_update_ms, v.start_ms)
    return bytes(out)


def _encode_value_v1(v: TransactionLogValue) -> bytes:
    out = bytearray(_I16.pack(1))
    out += _HEAD.pack(v.producer_id, v.producer_epoch, v.timeout_ms, v.state)
    if v.state == EMPTY:
        out += b"\x00"  # null
    else:
        out += encode_uvarint(len(v.partitions) + 1)
        for topic in sorted(v.partitions):
            raw = topic.encode()
            parts = sorted(v.partitions[topic])
            out += encode_uvarint(len(raw) + 1) + raw + encode_uvarint(len(parts) + 1)
            out += struct.pack(f">{len(parts)}i", *parts) + b"\x00"
    out += _TIMES.pack(v.last_update_ms, v.start_ms)
    tags = []
    if v.previous_producer_id != -1:
        tags.append((0, struct.pack(">q", v.previous_producer_id)))
    if v.next_producer_id != -1:
        tags.append((1, struct.pack(">q", v.next_producer_id)))
    if v.client_transaction_version != 0:
        tags.append((2, _I16.pack(v.client_transaction_version)))
    out += encode_uvarint(len(tags))
    for tag, raw in tags:
        out += encode_uvarint(tag) + encode_uvarint(len(raw)) + raw
    return bytes(out)


def decode_value(data: bytes) -> TransactionLogValue:
    try:
        (version,) = _I16.unpack_from(data, 0)
        if version not in (0, 1):
            raise TransactionRecordDecodeError(f"unknown transaction log value version {version}")
        flexible = version >= 1
        pid, epoch, timeout, state = _HEAD.unpack_from(data, 2)
        pos = 2 + _HEAD.size
        count, pos = _length(data, pos, flexible, array=True)
        partitions: dict[str, set[int]] = {}
        for _ in range(max(count, 0)):
            n, pos = _length(data, pos, flexible, array=False)
            topic = data[pos:pos + n].decode()
            pos += n
            m, pos = _length(data, pos, flexible, array=True)
            partitions[topic] = set(struct.unpack_from(f">{m}i", data, pos))
            pos += 4 * m
            if flexible:
                pos = _skip_tags(data, pos)
        last_update, start = _TIMES.unpack_from(data, pos)
        value = TransactionLogValue(pid, epoch, timeout, state, partitions, last_update, start)
        if flexible:
            pos = _skip_tags(data, pos + _TIMES.size, value)
        return value
    except (struct.error, UnicodeDecodeError, IndexError, HeaderError) as exc:
        raise TransactionRecordDecodeError(str(exc)) from None


def _length(data: bytes, pos: int, flexible: bool, array: bool) -> tuple[int, int]:
    if flexible:
        n, pos = read_uvarint(data, pos)
        return n - 1, pos
    if array:
        return _I32.unpack_from(data, pos)[0], pos + 4
    return _I16.unpack_from(data, pos)[0], pos + 2


def _skip_tags(data: bytes, pos: int, value: TransactionLogValue | None = None) -> int:
    count, pos = read_uvarint(data, pos)
    for _ in range(count):
        tag, pos = read_uvarint(data, pos)
        size, pos = read_uvarint(data, pos)
        if value is not None and tag == 0 and size == 8:
            value.previous_producer_id = struct.unpack_from(">q", data, pos)[0]
        elif value is not None and tag == 1 and size == 8:
            value.next_producer_id = struct.unpack_from(">q", data, pos)[0]
        elif value is not None and tag == 2 and size == 2:
            value.client_transaction_version = _I16.unpack_from(data, pos)[0]
        pos += size
    return pos
