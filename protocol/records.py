"""RecordBatch v2 (magic 2) codec: batch headers, CRC32C, records, compression. Pure, no I/O.

Layout (big-endian), offsets from the batch start::

    0 baseOffset i64 | 8 batchLength i32 | 12 partitionLeaderEpoch i32 | 16 magic i8 | 17 crc u32
    21 attributes i16 | 23 lastOffsetDelta i32 | 27 baseTimestamp i64 | 35 maxTimestamp i64
    43 producerId i64 | 51 producerEpoch i16 | 53 baseSequence i32 | 57 recordsCount i32 | 61 records

The CRC covers attributes..end. batchLength counts from partitionLeaderEpoch to the end.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import cast

import cramjam
import google_crc32c

from .record_errors import CorruptRecordError
from .varint import encode_varint, read_varint, write_varint

# Record bytes as read: slices of the caller's buffer (bytes, or views into it).
Buffer = bytes | bytearray | memoryview

HEADER_SIZE = 61
LOG_OVERHEAD = 12  # baseOffset + batchLength
CRC_START = 21
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MAX_TIMESTAMP_OFFSET = 35

NO_COMPRESSION, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
COMPRESSION_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
CREATE_TIME, LOG_APPEND_TIME = 0, 1

_TIMESTAMP_TYPE_BIT = 0x08
_TRANSACTIONAL_BIT = 0x10
_CONTROL_BIT = 0x20
_DELETE_HORIZON_BIT = 0x40  # KIP-534: the base timestamp is the batch's delete horizon

_HEADER = struct.Struct(">qiibIhiqqqhii")
_I64 = struct.Struct(">q")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")


@dataclass(slots=True)
class BatchHeader:
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def compression(self) -> int:
        return self.attributes & 0x07

    @property
    def timestamp_type(self) -> int:
        return LOG_APPEND_TIME if self.attributes & _TIMESTAMP_TYPE_BIT else CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & _CONTROL_BIT)

    @property
    def delete_horizon_ms(self) -> int | None:
        """When the cleaner may drop this batch's tombstones or marker (None: not set yet)."""
        return self.base_timestamp if self.attributes & _DELETE_HORIZON_BIT else None

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset_delta) % (2**31)


@dataclass(slots=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


# Batch headers ------------------------------------------------------------------------------

def parse_batch_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptRecordError(f"need {HEADER_SIZE} bytes for a batch header, have {len(buf) - pos}")
    return BatchHeader(*_HEADER.unpack_from(buf, pos))


def iter_batches(buf: bytes | bytearray | memoryview) -> Iterator[tuple[BatchHeader, memoryview]]:
    """Yield (header, batch bytes) for each complete batch; stops at an incomplete tail."""
    view = memoryview(buf)
    end = len(view)
    pos = 0
    while end - pos >= HEADER_SIZE:
        header = BatchHeader(*_HEADER.unpack_from(view, pos))
        size = header.batch_length + LOG_OVERHEAD
        if header.batch_length < HEADER_SIZE - LOG_OVERHEAD or end - pos < size:
            return
        yield header, view[pos : pos + size]
        pos += size


def batch_crc(batch: bytes | bytearray | memoryview) -> int:
    return google_crc32c.value(memoryview(batch)[CRC_START:].tobytes())


def verify_crc(batch: bytes | bytearray | memoryview) -> bool:
    view = memoryview(batch)
    if len(view) < HEADER_SIZE:
        return False
    (stored,) = _U32.unpack_from(view, CRC_OFFSET)
    # google_crc32c only takes bytes, so this copies (cheap next to the checksum itself).
    return google_crc32c.value(view[CRC_START:].tobytes()) == stored


def set_log_append_time(buf: bytearray | memoryview, pos: int, timestamp_ms: int) -> None:
    """Mark a batch LogAppendTime with max timestamp ``timestamp_ms`` and recompute its CRC."""
    view = memoryview(buf)
    (length,) = struct.unpack_from(">i", view, pos + 8)
    (attrs,) = _I16.unpack_from(view, pos + ATTRIBUTES_OFFSET)
    _I16.pack_into(view, pos + ATTRIBUTES_OFFSET, attrs | _TIMESTAMP_TYPE_BIT)
    _I64.pack_into(view, pos + MAX_TIMESTAMP_OFFSET, timestamp_ms)
    end = pos + length + LOG_OVERHEAD
    _U32.pack_into(view, pos + CRC_OFFSET, google_crc32c.value(bytes(view[pos + CRC_START : end])))


# Compression ---------------------------------------------------------------------------------

_XERIAL_MAGIC = b"\x82SNAPPY\x00"


def compress(data: bytes, codec: int) -> bytes:
    if codec == NO_COMPRESSION:
        return data
    if codec == GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == SNAPPY:
        # xerial framing, as the Java client writes it; every client reads it.
        out = bytearray(_XERIAL_MAGIC + b"\x00\x00\x00\x01\x00\x00\x00\x01")
        for i in range(0, len(data), 32768) or [0]:
            block = bytes(cramjam.snappy.compress_raw(data[i : i + 32768]))
            out += struct.pack(">i", len(block)) + block
        return bytes(out)
    if codec == LZ4:
        return bytes(cramjam.lz4.compress(data))
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise CorruptRecordError(f"unknown compression codec {codec}")


def decompress(data: bytes | memoryview, codec: int) -> bytes:
    try:
        if codec == NO_COMPRESSION:
            return bytes(data)
        if codec == GZIP:
            return bytes(cramjam.gzip.decompress(bytes(data)))
        if codec == SNAPPY:
            data = bytes(data)
            if data[:8] == _XERIAL_MAGIC:
                out = bytearray()
                pos = 16
                while pos + 4 <= len(data):
                    (n,) = struct.unpack_from(">i", data, pos)
                    pos += 4
                    out += bytes(cramjam.snappy.decompress_raw(data[pos : pos + n]))
                    pos += n
                return bytes(out)
            return bytes(cramjam.snappy.decompress_raw(data))
        if codec == LZ4:
            return bytes(cramjam.lz4.decompress(bytes(data)))
        if codec == ZSTD:
            return bytes(cramjam.zstd.decompress(bytes(data)))
    except CorruptRecordError:
        raise
    except Exception as exc:  # cramjam raises its own error types
        raise CorruptRecordError(f"{COMPRESSION_NAMES.get(codec, codec)} decompression failed: {exc}") from exc
    raise CorruptRecordError(f"unknown compression codec {codec}")


# Building -------------------------------------------------------------------------------------

def _encode_record(out: bytearray, offset_delta: int, ts_delta: int, key: bytes | None,
                   value: bytes | None, headers: Sequence[tuple[str, bytes | None]]) -> None:
    body = bytearray(b"\x00")  # record attributes (unused)
    write_varint(body, ts_delta)
    write_varint(body, offset_delta)
    _write_nullable(body, key)
    _write_nullable(body, value)
    write_varint(body, len(headers))
    for hkey, hvalue in headers:
        _write_nullable(body, hkey.encode())
        _write_nullable(body, hvalue)
    write_varint(out, len(body))
    out += body


def _write_nullable(out: bytearray, data: bytes | None) -> None:
    """Varint length (-1 for null) followed by the bytes."""
    if data is None:
        out.append(1)  # varint(-1)
    else:
        write_varint(out, len(data))
        out += data


def _key_value_records(records: Sequence[tuple[bytes | None, bytes | None]]) -> bytes:
    """Records section for (key, value) pairs: consecutive offsets, one timestamp, no headers."""
    out = []
    for i, (key, value) in enumerate(records):
        body = b"".join((
            b"\x00\x00",  # attributes, timestamp delta 0
            encode_varint(i),
            b"\x01" if key is None else encode_varint(len(key)) + key,
            b"\x01" if value is None else encode_varint(len(value)) + value,
            b"\x00",  # no headers
        ))
        out.append(encode_varint(len(body)))
        out.append(body)
    return b"".join(out)


def build_batch(records: Sequence[Record | tuple[bytes | None, bytes | None]], *,
                base_offset: int = 0, base_timestamp: int | None = None, compression: int = 0,
                producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                transactional: bool = False, control: bool = False, timestamp_type: int = 0,
                partition_leader_epoch: int = -1, delete_horizon_ms: int | None = None) -> bytes:
    """Encode one v2 batch. Tuples get consecutive offsets and ``base_timestamp``;
    ``Record`` offsets and timestamps are taken as absolute values. ``delete_horizon_ms``
    (Records only) becomes the base timestamp with the delete-horizon attribute (KIP-534),
    the records keeping their own timestamps."""
    if not records:
        raise ValueError("a record batch needs at least one record")
    if delete_horizon_ms is not None:
        batch = bytearray(build_batch(
            records, base_offset=base_offset, base_timestamp=delete_horizon_ms,
            compression=compression, producer_id=producer_id, producer_epoch=producer_epoch,
            base_sequence=base_sequence, transactional=transactional, control=control,
            timestamp_type=timestamp_type, partition_leader_epoch=partition_leader_epoch))
        (attrs,) = _I16.unpack_from(batch, ATTRIBUTES_OFFSET)
        _I16.pack_into(batch, ATTRIBUTES_OFFSET, attrs | _DELETE_HORIZON_BIT)
        _U32.pack_into(batch, CRC_OFFSET, google_crc32c.value(bytes(batch[CRC_START:])))
        return bytes(batch)
    now = int(time.time() * 1000) if base_timestamp is None else base_timestamp
    if not any(isinstance(r, Record) for r in records):
        return _frame_batch(
            # no Record among them: every item is a (key, value) pair
            _key_value_records(cast("Sequence[tuple[bytes | None, bytes | None]]", records)), len(records), base_offset=base_offset, first_ts=now,
            max_ts=now, compression=compression, producer_id=producer_id,
            producer_epoch=producer_epoch, base_sequence=base_sequence,
            transactional=transactional, control=control, timestamp_type=timestamp_type,
            partition_leader_epoch=partition_leader_epoch)
    normalized: list[Record] = []
    for i, rec in enumerate(records):
        if isinstance(rec, Record):
            normalized.append(rec)
        else:
            key, value = rec
            normalized.append(Record(base_offset + i, now, key, value, []))
    first_ts = normalized[0].timestamp if base_timestamp is None else base_timestamp
    if any(isinstance(r, Record) for r in records) and base_timestamp is None:
        first_ts = min(r.timestamp for r in normalized)
    max_ts = max(r.timestamp for r in normalized)
    body = bytearray()
    for rec in normalized:
        _encode_record(body, rec.offset - base_offset, rec.timestamp - first_ts, rec.key,
                       rec.value, rec.headers)
    return _frame_batch(
        bytes(body), len(normalized), base_offset=base_offset, first_ts=first_ts, max_ts=max_ts,
        compression=compression, producer_id=producer_id, producer_epoch=producer_epoch,
        base_sequence=base_sequence, transactional=transactional, control=control,
        timestamp_type=timestamp_type, partition_leader_epoch=partition_leader_epoch,
        last_delta=normalized[-1].offset - base_offset)


def _frame_batch(records: bytes, count: int, *, base_offset: int, first_ts: int, max_ts: int,
                 compression: int, producer_id: int, producer_epoch: int, base_sequence: int,
                 transactional: bool, control: bool, timestamp_type: int,
                 partition_leader_epoch: int, last_delta: int | None = None) -> bytes:
    """Header, (compressed) records section and CRC of one v2 batch."""
    payload = compress(records, compression)
    attributes = compression & 0x07
    if timestamp_type == LOG_APPEND_TIME:
        attributes |= _TIMESTAMP_TYPE_BIT
    if transactional:
        attributes |= _TRANSACTIONAL_BIT
    if control:
        attributes |= _CONTROL_BIT
    if last_delta is None:
        last_delta = count - 1
    batch_length = HEADER_SIZE - LOG_OVERHEAD + len(payload)
    out = bytearray(_HEADER.pack(base_offset, batch_length, partition_leader_epoch, 2, 0, attributes,
                                 last_delta, first_ts, max_ts, producer_id, producer_epoch,
                                 base_sequence, count))
    out += payload
    _U32.pack_into(out, CRC_OFFSET, google_crc32c.value(bytes(out[CRC_START:])))
    return bytes(out)


# Decoding -------------------------------------------------------------------------------------

def decode_records(batch: bytes | bytearray | memoryview) -> list[Record]:
    """All records of one v2 batch with absolute offsets and timestamps (any codec)."""
    view = memoryview(batch)
    header = parse_batch_header(view)
    if header.magic != 2:
        raise CorruptRecordError(f"unsupported record batch magic {header.magic}")
    end = header.size
    if len(view) < end:
        raise CorruptRecordError("truncated record batch")
    data = decompress(view[HEADER_SIZE:end], header.compression)
    log_append = header.timestamp_type == LOG_APPEND_TIME
    base_offset = header.base_offset
    base_ts = header.base_timestamp
    out: list[Record] = []
    pos = 0
    try:
        for _ in range(header.records_count):
            length, pos = read_varint(data, pos)
            rec_end = pos + length
            pos += 1  # attributes
            ts_delta, pos = read_varint(data, pos)
            off_delta, pos = read_varint(data, pos)
            klen, pos = read_varint(data, pos)
            key = None
            if klen >= 0:
                key = data[pos : pos + klen]
                pos += klen
            vlen, pos = read_varint(data, pos)
            value = None
            if vlen >= 0:
                value = data[pos : pos + vlen]
                pos += vlen
            nheaders, pos = read_varint(data, pos)
            headers: list[tuple[str, bytes | None]] = []
            for _h in range(nheaders):
                hklen, pos = read_varint(data, pos)
                hkey = data[pos : pos + hklen].decode()
                pos += hklen
                hvlen, pos = read_varint(data, pos)
                hval = None
                if hvlen >= 0:
                    hval = data[pos : pos + hvlen]
                    pos += hvlen
                headers.append((hkey, hval))
            if pos != rec_end:
                raise CorruptRecordError("record length does not match its fields")
            ts = header.max_timestamp if log_append else base_ts + ts_delta
            out.append(Record(base_offset + off_delta, ts, key, value, headers))
    except (IndexError, UnicodeDecodeError) as exc:
        raise CorruptRecordError(f"malformed record: {exc}") from exc
    return out


def plain_key_values(data: bytes | bytearray | memoryview, pos: int, count: int
                     ) -> tuple[list[tuple[Buffer | None, Buffer | None]], int] | None:
    """(key, value) of the ``count`` records at ``pos`` of uncompressed record bytes, and where
    they end; one-byte varints take a fast path. None if a record carries headers or its lengths
    do not add up: the caller decodes the batch fully (``decode_records``) or refuses it."""
    out: list[tuple[Buffer | None, Buffer | None]] = []
    append = out.append
    try:
        for _ in range(count):
            n = data[pos]
            if n < 0x80:
                if n & 1:  # a negative length
                    return None
                end = pos + 1 + (n >> 1)
                pos += 2  # the length and the attributes byte
            else:
                length, pos = read_varint(data, pos)
                if length < 0:
                    return None
                end = pos + length
                pos += 1
            while data[pos] & 0x80:  # timestamp delta
                pos += 1
            pos += 1
            while data[pos] & 0x80:  # offset delta
                pos += 1
            pos += 1
            n = data[pos]
            if n < 0x80:
                n = (n >> 1) ^ -(n & 1)
                pos += 1
            else:
                n, pos = read_varint(data, pos)
            key = None
            if n >= 0:
                key = data[pos:pos + n]
                pos += n
            n = data[pos]
            if n < 0x80:
                n = (n >> 1) ^ -(n & 1)
                pos += 1
            else:
                n, pos = read_varint(data, pos)
            value = None
            if n >= 0:
                value = data[pos:pos + n]
                pos += n
            if pos + 1 != end or data[pos] != 0:  # headers, or lengths that do not add up
                return None
            append((key, value))
            pos = end
    except (IndexError, CorruptRecordError):
        return None
    return out, pos


def key_values(batch: bytes | bytearray | memoryview) -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) of every record of one v2 batch, in order: ``decode_records`` without
    offsets, timestamps or headers, for replaying a log. A batch whose records carry headers,
    or a malformed one, goes through ``decode_records`` (which decodes or refuses it)."""
    header = parse_batch_header(batch)
    if header.magic != 2:
        raise CorruptRecordError(f"unsupported record batch magic {header.magic}")
    if len(batch) < header.size:
        raise CorruptRecordError("truncated record batch")
    data = decompress(memoryview(batch)[HEADER_SIZE:header.size], header.compression)
    walked = plain_key_values(data, 0, header.records_count)
    if walked is None:
        return [(r.key, r.value) for r in decode_records(batch)]
    # ``data`` is bytes (decompress copies): its slices are bytes
    return cast("list[tuple[bytes | None, bytes | None]]", walked[0])
