"""Replay of ``__consumer_offsets`` as whole record batches (one pass, no per-record objects for
offset commits): the bulk half of ``OffsetMetadataManager.replay_records``.

A log read yields ``RawBatches``: buffers of whole v2 batches. Control batches become TxnMarker
and transactional batches TxnRecordKey records, replayed one by one as before. A plain batch
of offset commits, as one OffsetCommit request writes them (one group and topic, the same value
but for partition, offset and leader epoch, consecutive offset deltas, timestamp delta 0, no
headers), is checked byte for byte against its first record with a few strided slice
comparisons and stored in bulk with ``struct.iter_unpack``: no key, value or tuple object per
record in Python. Any other batch (other layouts, several groups or topics, tombstones, group
records, open transactions on the topic, values that fail the plausibility check, compressed
or not) takes the per-record path, ``OffsetMetadataManager.replay_records``.
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from kafkette.protocol.control_records import COMMIT, control_type
from kafkette.protocol.group_records import OffsetCommitValue
from kafkette.protocol.records import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    CorruptRecordError,
    decompress,
    key_values,
    plain_key_values,
)
from kafkette.protocol.varint import read_varint

from ...runtime.coordinator_log import TxnMarker, TxnRecordKey
from .offset_store import MIN_LENGTH_BY_VERSION, NOT_AN_OFFSET, REST_START, TopicOffsets

# Where records the offset manager does not store go (the shard's dispatch by record type).
ReplayOther = Callable[[Any, "bytes | None"], None]


class OffsetMetadataManager(Protocol):
    """What bulk replay uses of the offset manager (offset_manager.py, which imports this
    module): its prefix cache and shared table entries, and its per-record replay."""

    parts_by_prefix: dict[bytes, TopicOffsets]

    def shared(self) -> dict[bytes, OffsetCommitValue]: ...

    def replay_records(self, records: Any, replay_other: ReplayOther) -> int: ...

_HEADER = struct.Struct(">qiibIhiqqqhii")
_TRANSACTIONAL = 0x10
_CONTROL = 0x20
_MIN_BULK = 8  # smaller batches: per record
_MAX_BULK = 8192  # offset deltas of two bytes at most
# Offset delta columns (zigzag varints) of records 0..63 (one byte) and 64..8191 (two bytes).
# (Built from ranges, not per-index generators: this is on a restart's import path.)
_DELTA1 = bytes(range(0, 128, 2))  # 2 * i
_DELTA2_LO = bytes(range(0x80, 0x100, 2)) * (_MAX_BULK // 64)  # ((2 * i) & 0x7F) | 0x80
_DELTA2_HI = b"".join(bytes((j,)) * 64 for j in range(_MAX_BULK // 64))  # (2 * i) >> 7
_SWAP = sys.byteorder == "little"  # record fields are big endian


class RawBatches:
    """One chunk of a log read: buffers of whole v2 batches. Iterating gives the records as
    ``CoordinatorLog.read`` defines them (TxnMarker/TxnRecordKey for transactions)."""

    __slots__ = ("buffers",)

    def __init__(self, buffers: list[bytes]) -> None:
        self.buffers = buffers

    def batches(self) -> Iterator[tuple[int, int, int, int, bytes]]:
        """(attributes, producer id, producer epoch, record count, batch bytes)."""
        for attrs, pid, epoch, count, buf, pos, end in self.spans():
            yield attrs, pid, epoch, count, buf[pos:end]

    def spans(self, consume: bool = False
              ) -> Iterator[tuple[int, int, int, int, bytes, int, int]]:
        """(attributes, producer id, producer epoch, record count, buffer, batch start, batch
        end): where each batch is, no copy of it. ``consume``: the buffers are released as
        they are walked (a log load holds one chunk per partition otherwise: its loop
        variable keeps the last one while the others load)."""
        unpack = _HEADER.unpack_from
        buffers = self.buffers
        if consume:
            self.buffers = []
        for buf in buffers:
            pos, end = 0, len(buf)
            while end - pos >= HEADER_SIZE:
                (_base, length, _ple, _magic, _crc, attrs, _delta, _ts, _max_ts, pid, epoch,
                 _seq, count) = unpack(buf, pos)
                size = length + LOG_OVERHEAD
                if length < HEADER_SIZE - LOG_OVERHEAD or end - pos < size:
                    return
                yield attrs, pid, epoch, count, buf, pos, pos + size
                pos += size

    def __iter__(self) -> Iterator[tuple[Any, bytes | None]]:
        for attrs, pid, epoch, _count, batch in self.batches():
            if attrs & _CONTROL:
                kind = control_type(batch)
                if kind >= 0:
                    yield TxnMarker(pid, epoch, kind == COMMIT), None
            elif attrs & _TRANSACTIONAL:
                for k, v in key_values(batch):
                    if k is not None:
                        yield TxnRecordKey(pid, epoch, k), v
            else:
                for kv in key_values(batch):
                    if kv[0] is not None:
                        yield kv

    def __len__(self) -> int:
        return sum(1 for _ in self)


def replay_batches(offsets: OffsetMetadataManager, chunk: RawBatches,
                   replay_other: ReplayOther) -> int:
    """Apply every batch of ``chunk`` in log order (consuming it); returns how many
    records."""
    count = 0
    replay_records = offsets.replay_records
    for attrs, pid, epoch, n, buf, start, end in chunk.spans(consume=True):
        if _MIN_BULK <= n <= _MAX_BULK and not attrs & (_CONTROL | _TRANSACTIONAL) and \
                _bulk(offsets, replay_other, buf, start, end, attrs & 0x07, n):
            count += n
            continue
        batch = buf[start:end]
        if attrs & _CONTROL:
            kind = control_type(batch)
            if kind >= 0:
                replay_other(TxnMarker(pid, epoch, kind == COMMIT), None)
                count += 1
        elif attrs & _TRANSACTIONAL:
            count += replay_records([(TxnRecordKey(pid, epoch, k), v)
                                     for k, v in key_values(batch) if k is not None],
                                    replay_other)
        else:
            records: list[tuple[bytes, bytes | None]] | None = (
                None if attrs & 0x07 else _plain_records(batch, n))
            if records is None:
                records = [(k, v) for k, v in key_values(batch) if k is not None]
            count += replay_records(records, replay_other)
    return count


def _plain_records(batch: bytes, n: int) -> list[tuple[bytes, bytes | None]] | None:
    """(key, value) of the ``n`` records of an uncompressed batch without headers (records
    with a null key left out, as ``key_values`` does), or None for anything else: a lean
    ``key_values`` for the small batches single commits write (no header object, no copy)."""
    walked = plain_key_values(batch, HEADER_SIZE, n)
    if walked is None or walked[1] != len(batch):
        return None
    return [kv for kv in walked[0] if kv[0] is not None]  # type: ignore[misc]  # plain_key_values slices bytes, so keys and values are bytes; null keys are dropped here


def _record(data: bytes, start: int, delta_bytes: int
            ) -> tuple[int, int, int, int, int, int] | None:
    """(size, offset-delta column, key start, key end, value start, value end) of the record
    at ``start`` if it has the layout bulk replay handles."""
    length, pos = read_varint(data, start)
    end = pos + length
    if data[pos + 1] != 0:  # timestamp delta 0
        return None
    delta_col = pos + 2 - start
    pos += 2 + delta_bytes
    klen, pos = read_varint(data, pos)
    if klen < 10:
        return None
    kstart, pos = pos, pos + klen
    vlen, pos = read_varint(data, pos)
    if vlen < 0:
        return None
    vstart, pos = pos, pos + vlen
    if pos + 1 != end or data[pos] != 0 or end > len(data):  # no headers
        return None
    return end - start, delta_col, kstart, kstart + klen, vstart, pos


# (first key, first value, value head length, first partition if consecutive, partitions,
# offsets, leader epochs)
_Run = tuple[bytes, bytes, int, int | None, array, array, array]


def _column(data: bytes, col: int, stop: int, width: int, size: int, typecode: str
            ) -> tuple[array, list[bytes]]:
    """The big-endian field of ``width`` bytes at ``col`` of every ``size``-byte record (the
    first record's field at ``col``, the last record ending at ``stop``), as an array, and its
    byte columns (gathered with strided slices: no object per record)."""
    cols = [data[c:stop:size] for c in range(col, col + width)]
    out = bytearray(len(cols[0]) * width)
    for j, c in enumerate(cols):
        out[j::width] = c
    values = array(typecode)
    values.frombytes(out)
    if _SWAP:
        values.byteswap()
    return values, cols


_CONSECUTIVE_MAX = 1 << 16
_consecutive_be: list[bytes] = []


_consecutive_cols: dict[tuple[int, int], list[bytes]] = {}


def _consecutive(p0: int, k: int) -> list[bytes]:
    """The 4 byte columns of big-endian int32 ``p0``, ``p0 + 1``, ... (``k`` of them; cached:
    commit requests of the same partitions recur)."""
    cols = _consecutive_cols.get((p0, k))
    if cols is None:
        if not _consecutive_be:
            values = array("i", range(_CONSECUTIVE_MAX))
            if _SWAP:
                values.byteswap()
            _consecutive_be.append(values.tobytes())
        run = _consecutive_be[0][4 * p0:4 * (p0 + k)]
        cols = [run[j::4] for j in range(4)]
        if len(_consecutive_cols) >= 256:
            _consecutive_cols.clear()
        _consecutive_cols[(p0, k)] = cols
    return cols


def _run(data: bytes, start: int, end: int, first: int, k: int, plan: list[_Run],
         rec: tuple[int, int, int, int, int, int]) -> int:
    """Check records ``first``..``first + k - 1`` (starting at byte ``start``, within the
    batch ending at ``end``) against the first of them (all bytes but partition, offset,
    leader epoch and offset delta equal); on success add the run to ``plan`` and return where
    it ends (-1: not a bulk run). ``rec``: ``_record`` of the first of them."""
    wide = first >= 64
    size, delta_col, kstart, kend, vstart, vend = rec
    key = data[kstart:kend]
    value = data[vstart:vend]
    version = value[:2]
    if key[:2] not in (b"\x00\x00", b"\x00\x01") or \
            len(value) < MIN_LENGTH_BY_VERSION.get(version, NOT_AN_OFFSET):
        return -1
    stop = start + size * k
    if stop > end:
        return -1
    # ``expected``: k copies of the first record with the other records' own partition,
    # offset, leader epoch and offset delta patched in; it must equal the records' bytes.
    # The columns are strided slices of ``data`` itself (no copy of the records).
    head = REST_START[version]
    pcol, ocol = kend - 4 - start, vstart + 2 - start
    expected = bytearray(data[start:start + size]) * k
    if wide:
        expected[delta_col::size] = _DELTA2_LO[first:first + k]
        expected[delta_col + 1::size] = _DELTA2_HI[first:first + k]
    else:
        expected[delta_col::size] = _DELTA1[first:first + k]
    offsets, cols = _column(data, start + ocol, stop, 8, size, "q")
    for c, col in enumerate(cols, ocol):
        expected[c::size] = col
    seg = memoryview(data)[start:stop]
    # The common case: consecutive partitions, one leader epoch (the first record's).
    p0 = int.from_bytes(key[-4:], "big", signed=True)
    epoch = int.from_bytes(value[10:14], "big", signed=True) if head == 14 else -1
    if p0 >= 0 and p0 + k <= _CONSECUTIVE_MAX:
        for c, col in enumerate(_consecutive(p0, k), pcol):
            expected[c::size] = col
        if expected == seg:
            plan.append((key, value, head, p0, array("i"), offsets, array("i", (epoch,)) * k))
            return stop
    parts, cols = _column(data, start + pcol, stop, 4, size, "i")
    for c, col in enumerate(cols, pcol):
        expected[c::size] = col
    if head == 14:
        epochs, cols = _column(data, start + ocol + 8, stop, 4, size, "i")
        for c, col in enumerate(cols, ocol + 8):
            expected[c::size] = col
    else:
        epochs = array("i", (-1,)) * k
    if expected != seg:
        return -1
    plan.append((key, value, head, None, parts, offsets, epochs))
    return stop


def _same_prefix(data: bytes, start: int, rec: tuple[int, int, int, int, int, int], limit: int,
                 linear: bool = False) -> int:
    """How many of the next ``limit`` records (from byte ``start``)
    seem to share the first one's size and key prefix (group and topic; ``rec``: ``_record``
    of the first). A guess that ``_run`` then checks byte by byte: by bisection (the records
    of one commit request are contiguous), or record by record when ``linear``."""
    size, _delta, kstart, kend, _vstart, _vend = rec
    lo, hi = kstart - start, kend - 4 - start
    prefix = data[kstart:kend - 4]
    if linear:
        k, pos = 1, start + size
        while k < limit and data[pos + lo:pos + hi] == prefix:
            k += 1
            pos += size
        return k
    good, bad = 1, limit + 1  # record good - 1 matches; record bad - 1 does not (or is past)
    while bad - good > 1:
        mid = (good + bad) // 2
        pos = start + (mid - 1) * size
        if data[pos + lo:pos + hi] == prefix:
            good = mid
        else:
            bad = mid
    return good


def _bulk(om: OffsetMetadataManager, replay_other: ReplayOther, buf: bytes, first_byte: int,
          last_byte: int, codec: int, n: int) -> bool:
    """Replay the plain batch of ``n`` records at ``buf[first_byte:last_byte]`` in bulk;
    False (nothing applied) if it does not have the layout."""
    if codec:
        try:
            data = decompress(memoryview(buf)[first_byte + HEADER_SIZE:last_byte], codec)
        except Exception:  # noqa: BLE001 - the per-record path reports it as it always did
            return False
        start, end = 0, len(data)
    else:
        data, start, end = buf, first_byte + HEADER_SIZE, last_byte
    # Runs of records of one (group, topic) and layout; one run never spans the record index
    # 64, where offset deltas grow to two bytes. A batch written by a group commit holds the
    # records of several commit requests one after the other.
    plan: list[_Run] = []
    pos, first = start, 0
    try:
        while first < n:
            limit = min(64 - first if first < 64 else n - first, n - first)
            rec = _record(data, pos, 2 if first >= 64 else 1)
            if rec is None:  # not the bulk layout
                return False
            k = _same_prefix(data, pos, rec, limit)
            stop = _run(data, pos, end, first, k, plan, rec)
            if stop < 0 and k > 1:  # the bisection's guess was wrong: record by record
                k = _same_prefix(data, pos, rec, limit, linear=True)
                stop = _run(data, pos, end, first, k, plan, rec)
            if stop < 0:
                return False
            pos = stop
            first += k
    except (IndexError, struct.error, CorruptRecordError):  # a varint too long
        return False
    if pos != end:
        return False
    cached = om.parts_by_prefix
    for key, value, head, p0, parts, offsets, epochs in plan:
        prefix = key[:-4]
        topic = cached.get(prefix) if p0 is not None else None
        if topic is not None and p0 is not None and topic.set_run(
                p0, offsets, epochs, topic.meta_index(value[:2] + value[head:], om.shared())):
            continue
        topic = cached.get(prefix)
        if topic is None:  # first sight of (group, topic): its first record sets it up
            om.replay_records(((key, value),), replay_other)
            topic = cached.get(prefix)
            if topic is None:  # open transactions, an undecodable key...: per record
                om.replay_records(_records(prefix, value[:2], value[head:], head == 14,
                                           _parts(p0, parts, len(offsets)), offsets,
                                           epochs)[1:], replay_other)
                continue
        meta = topic.meta_index(value[:2] + value[head:], om.shared())
        if p0 is not None and topic.set_run(p0, offsets, epochs, meta):
            continue
        for p, o, e in zip(_parts(p0, parts, len(offsets)), offsets, epochs, strict=True):
            topic.set(p, o, e, meta)
    return True


def _parts(p0: int | None, parts: array, k: int) -> array:
    """The partitions of a run (``p0``..``p0 + k - 1`` when consecutive)."""
    return parts if p0 is None else array("i", range(p0, p0 + k))


def _records(prefix: bytes, version: bytes, rest: bytes, has_epoch: bool, parts: array,
             offsets: array, epochs: array) -> list[tuple[bytes, bytes]]:
    """The records of a checked run again, as (key, value) bytes."""
    i32, i64 = struct.Struct(">i").pack, struct.Struct(">q").pack
    return [(prefix + i32(p), version + i64(o) + (i32(e) if has_epoch else b"") + rest)
            for p, o, e in zip(parts, offsets, epochs, strict=True)]
