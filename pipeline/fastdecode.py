"""Columnar decoding of RecordBatch v2 bytes into Arrow arrays (the data source's fast path).

Why a second decoder next to ``protocol.records.decode_records``: that one builds a Python
``Record`` per record (~5 µs each), which caps a core at ~200 k records/s. Here only the walk from
one record's length prefix to the next is a Python loop; every field after the length is decoded
with numpy for all records of a chunk at once, and key/value/header bytes are cut out of the
decompressed buffer by Arrow's ``take`` (C++ memcpy), never as Python ``bytes`` objects.

Batch framing, decompression and CRC checks are ``protocol.records``'s. Whenever the fast path
finds something it does not expect, the affected chunk is decoded again by
``protocol.records.decode_records``, which is the authority (and raises ``CorruptRecordError``).
tests/pipeline/test_fastdecode.py checks both agree on every codec, nulls, headers and
LogAppendTime.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from kafkette.protocol.records import (
    HEADER_SIZE,
    LOG_APPEND_TIME,
    NO_COMPRESSION,
    CorruptRecordError,
    decode_records,
    decompress,
    iter_batches,
    verify_crc,
)

HEADER_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
_PAD = bytes(16)  # lets vectorised varint reads run past the last record without bounds checks
# Arrow binary arrays use int32 offsets; flush well below 2 GiB of decompressed records.
_MAX_CHUNK = 256 * 1024 * 1024


class _FastPathMiss(Exception):
    """The records did not look as expected; decode them with the reference decoder instead."""


@dataclass(slots=True)
class Columns:
    """Decoded records of a chunk; timestamps in ms since the epoch."""

    offset: np.ndarray  # int64
    timestamp: np.ndarray  # int64
    key: pa.Array | None = None  # binary
    value: pa.Array | None = None  # binary
    headers: pa.Array | None = None  # list<struct<key string, value binary>>
    # Per record, from its batch: written in a transaction, a transaction marker, part of an
    # aborted transaction (never seen by read_committed consumers). Set by decode_batches.
    transactional: np.ndarray | None = None  # bool
    control: np.ndarray | None = None  # bool
    aborted: np.ndarray | None = None  # bool

    def __len__(self) -> int:
        return len(self.offset)


def _varint(arr: np.ndarray, pos: np.ndarray, signed: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Zigzag varints starting at each of ``pos``: (values int64, encoded lengths)."""
    b = arr[pos]
    val = (b & 0x7F).astype(np.uint64)
    size = np.ones(len(pos), dtype=np.int64)
    more = np.flatnonzero(b & 0x80)
    shift = 7
    while more.size:
        if shift > 63:
            raise _FastPathMiss("varint too long")
        b = arr[pos[more] + size[more]]
        val[more] |= (b & 0x7F).astype(np.uint64) << np.uint64(shift)
        size[more] += 1
        more = more[(b & 0x80) != 0]
        shift += 7
    if not signed:
        return val.astype(np.int64), size
    return (val >> np.uint64(1)).astype(np.int64) ^ -(val & np.uint64(1)).astype(np.int64), size


def _walk(data: bytes, count: int) -> list[int]:
    """Start of each record (its length prefix). The only per-record Python loop."""
    heads: list[int] = []
    append = heads.append
    pos = 0
    for _ in range(count):
        append(pos)
        b = data[pos]
        if b < 0x80:
            pos += 1 + (b >> 1)
            continue
        b2 = data[pos + 1]
        if b2 < 0x80:
            pos += 2 + ((((b & 0x7F) | (b2 << 7))) >> 1)
            continue
        shift, value, i = 0, 0, pos
        while True:
            b = data[i]
            value |= (b & 0x7F) << shift
            i += 1
            if b < 0x80:
                break
            shift += 7
            if shift > 63:
                raise _FastPathMiss("varint too long")
        if value & 1:
            raise _FastPathMiss("negative record length")
        pos = i + (value >> 1)
    return heads


def _spans_take(buf: pa.Buffer, bounds: np.ndarray, n: int, null: np.ndarray | None,
                which: int, stride: int) -> pa.Array:
    """Cut ``n`` byte ranges out of ``buf`` with one Arrow ``take``.

    ``bounds`` holds ``stride`` monotonic positions per item (start/end pairs and the gaps between
    them); element ``which`` of each group is the wanted range.
    """
    offsets = np.empty(len(bounds) + 1, dtype=np.int32)
    offsets[:-1] = bounds
    offsets[-1] = bounds[-1] if len(bounds) else 0
    spans = pa.BinaryArray.from_buffers(pa.binary(), len(bounds), [None, pa.py_buffer(offsets), buf])
    indices = pa.array(np.arange(which, stride * n, stride, dtype=np.int64), mask=null)
    return spans.take(indices)


def _decode_fast(data: bytes, counts: np.ndarray, base_offsets: np.ndarray,
                 timestamps: tuple[np.ndarray, np.ndarray, np.ndarray],
                 region_starts: np.ndarray, payload: bool) -> Columns:
    """``data`` = the batches' record regions back to back, then ``_PAD``."""
    total = int(counts.sum())
    end = len(data) - len(_PAD)
    heads_list = _walk(data, total)
    arr = np.frombuffer(data, dtype=np.uint8)
    heads = np.array(heads_list, dtype=np.int64)
    length, size = _varint(arr, heads)
    body = heads + size
    rec_end = body + length
    first = np.cumsum(counts) - counts
    if total and (rec_end[-1] != end or not np.array_equal(heads[first], region_starts)
                  or (length < 1).any()):
        raise _FastPathMiss("records do not tile their batches")
    batch_of = np.repeat(np.arange(len(counts)), counts)
    base_ts, max_ts, log_append = timestamps
    p = body + 1  # record attributes: unused
    ts_delta, n = _varint(arr, p)
    p = p + n
    off_delta, n = _varint(arr, p)
    p = p + n
    offset = base_offsets[batch_of] + off_delta
    timestamp = np.where(log_append[batch_of], max_ts[batch_of], base_ts[batch_of] + ts_delta)
    if not payload:
        return Columns(offset, timestamp)

    klen, n = _varint(arr, p)
    kstart = p + n
    kend = kstart + np.maximum(klen, 0)
    vlen, n = _varint(arr, kend)
    vstart = kend + n
    vend = vstart + np.maximum(vlen, 0)
    hcount, n = _varint(arr, vend)
    p = vend + n
    if (klen < -1).any() or (vlen < -1).any() or (hcount < 0).any() or (p > rec_end).any():
        raise _FastPathMiss("bad field lengths")
    buf = pa.py_buffer(data)
    bounds = np.empty((total, 4), dtype=np.int64)
    bounds[:, 0], bounds[:, 1], bounds[:, 2], bounds[:, 3] = kstart, kend, vstart, vend
    flat = bounds.reshape(-1)
    key = _spans_take(buf, flat, total, klen < 0, 0, 4)
    value = _spans_take(buf, flat, total, vlen < 0, 2, 4)
    headers = _headers(arr, buf, p, hcount, rec_end)
    return Columns(offset, timestamp, key, value, headers)


def _headers(arr: np.ndarray, buf: pa.Buffer, p: np.ndarray, hcount: np.ndarray,
             rec_end: np.ndarray) -> pa.Array:
    """Parse the k-th header of every record that has one, for k = 0, 1, ... (vectorised)."""
    list_offsets = np.zeros(len(hcount) + 1, dtype=np.int32)
    np.cumsum(hcount, out=list_offsets[1:])
    entries = int(list_offsets[-1])
    if entries == 0:
        if (p != rec_end).any():
            raise _FastPathMiss("trailing bytes in a record")
        empty = pa.array([], type=HEADER_TYPE.value_type)
        return pa.ListArray.from_arrays(pa.array(list_offsets), empty, type=HEADER_TYPE)
    bounds = np.empty((entries, 4), dtype=np.int64)
    vnull = np.zeros(entries, dtype=bool)
    p = p.copy()
    for k in range(int(hcount.max())):
        rows = np.flatnonzero(hcount > k)
        out = list_offsets[rows] + k
        hklen, n = _varint(arr, p[rows])
        hks = p[rows] + n
        hke = hks + hklen
        hvlen, n = _varint(arr, hke)
        hvs = hke + n
        hve = hvs + np.maximum(hvlen, 0)
        if (hklen < 0).any() or (hvlen < -1).any():
            raise _FastPathMiss("bad header lengths")
        bounds[out, 0], bounds[out, 1], bounds[out, 2], bounds[out, 3] = hks, hke, hvs, hve
        vnull[out] = hvlen < 0
        p[rows] = hve
    if (p != rec_end).any():
        raise _FastPathMiss("trailing bytes in a record")
    flat = bounds.reshape(-1)
    hkey = _spans_take(buf, flat, entries, None, 0, 4).cast(pa.string())
    hval = _spans_take(buf, flat, entries, vnull, 2, 4)
    values = pa.StructArray.from_arrays([hkey, hval], fields=list(HEADER_TYPE.value_type))
    return pa.ListArray.from_arrays(pa.array(list_offsets), values, type=HEADER_TYPE)


def _decode_reference(batches: list[memoryview], payload: bool) -> Columns:
    records = [r for batch in batches for r in decode_records(batch)]
    offset = np.array([r.offset for r in records], dtype=np.int64)
    timestamp = np.array([r.timestamp for r in records], dtype=np.int64)
    if not payload:
        return Columns(offset, timestamp)
    return Columns(
        offset, timestamp,
        pa.array([r.key for r in records], type=pa.binary()),
        pa.array([r.value for r in records], type=pa.binary()),
        pa.array([[{"key": k, "value": v} for k, v in r.headers] for r in records], type=HEADER_TYPE),
    )


class _Chunk:
    def __init__(self) -> None:
        self.batches: list[memoryview] = []
        self.pieces: list[bytes] = []
        self.counts: list[int] = []
        self.base_offsets: list[int] = []
        self.base_ts: list[int] = []
        self.max_ts: list[int] = []
        self.log_append: list[bool] = []
        self.flags: list[tuple[bool, bool, bool]] = []  # transactional, control, aborted
        self.size = 0

    def decode(self, payload: bool, reference: bool = False) -> Columns:
        cols = self._decode(payload, reference)
        flags = np.array(self.flags, dtype=bool).reshape(-1, 3)
        per_record = np.repeat(flags, self.counts, axis=0)
        if len(per_record) != len(cols):  # a batch whose count differs from its records
            per_record = np.repeat(flags, [len(decode_records(b)) for b in self.batches], axis=0)
        cols.transactional, cols.control, cols.aborted = per_record.T.copy()
        return cols

    def _decode(self, payload: bool, reference: bool) -> Columns:
        if reference:
            return _decode_reference(self.batches, payload)
        data = b"".join([*self.pieces, _PAD])
        region_starts = np.cumsum([0] + [len(p) for p in self.pieces[:-1]], dtype=np.int64)
        try:
            return _decode_fast(
                data, np.array(self.counts, dtype=np.int64),
                np.array(self.base_offsets, dtype=np.int64),
                (np.array(self.base_ts, dtype=np.int64), np.array(self.max_ts, dtype=np.int64),
                 np.array(self.log_append, dtype=bool)),
                region_starts, payload)
        except (_FastPathMiss, IndexError):
            return _decode_reference(self.batches, payload)


AbortedRanges = dict[int, list[tuple[int, int]]]  # producer id -> [(first offset, marker offset)]


def is_aborted(aborted: AbortedRanges, producer_id: int, offset: int) -> bool:
    """A transactional batch at ``offset`` belongs to one of the producer's aborted transactions
    (the partition's .txnindex entries)."""
    return any(first <= offset < last for first, last in aborted.get(producer_id, ()))


def decode_batches(buf: bytes | bytearray | memoryview, *, payload: bool = True,
                   check_crc: bool = True, include_control: bool = False,
                   max_chunk: int = _MAX_CHUNK, reference: bool = False,
                   aborted: AbortedRanges | None = None) -> Iterator[Columns]:
    """Decode every whole batch in ``buf`` (a torn tail is ignored), a chunk at a time.

    Control batches (transaction markers) are skipped unless ``include_control``.
    ``reference`` decodes with protocol.records only (the benchmark's baseline).
    ``aborted``: the partition's aborted transactions, which set the ``aborted`` column.
    """
    chunk = _Chunk()
    for header, batch in iter_batches(buf):
        if header.magic != 2:
            raise CorruptRecordError(f"unsupported record batch magic {header.magic}")
        if check_crc and not verify_crc(batch):
            raise CorruptRecordError(f"CRC mismatch in the batch at offset {header.base_offset}")
        if header.is_control and not include_control or header.records_count <= 0:
            continue
        region = batch[HEADER_SIZE:]
        piece = bytes(region) if header.compression == NO_COMPRESSION else decompress(
            region, header.compression)
        chunk.batches.append(batch)
        chunk.pieces.append(piece)
        chunk.counts.append(header.records_count)
        chunk.base_offsets.append(header.base_offset)
        chunk.base_ts.append(header.base_timestamp)
        chunk.max_ts.append(header.max_timestamp)
        chunk.log_append.append(header.timestamp_type == LOG_APPEND_TIME)
        transactional = header.is_transactional
        chunk.flags.append((transactional, header.is_control,
                            aborted is not None and bool(aborted) and transactional
                            and not header.is_control
                            and is_aborted(aborted, header.producer_id, header.base_offset)))
        chunk.size += len(piece)
        if chunk.size >= max_chunk:
            yield chunk.decode(payload, reference)
            chunk = _Chunk()
    if chunk.counts:
        yield chunk.decode(payload, reference)
