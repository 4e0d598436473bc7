"""What Kafka checks in a producer's record batch before it is appended. Pure, no I/O.

Mirrors ``ProduceRequest.validateRecords``, ``UnifiedLog.analyzeAndValidateRecords`` and
``LogValidator`` (validateBatch, and the record iteration of assignOffsetsNonCompressed /
validateMessagesAndAssignOffsetsCompressed) for magic v2 batches from clients:

- CORRUPT_MESSAGE (``CorruptRecordError``): a length below the minimum, a magic outside 0..2, a
  CRC mismatch, a compressed payload that does not decompress.
- INVALID_RECORD (``InvalidRecordError``): no complete batch, magic other than 2, more than one
  batch, a base offset other than 0, an offset range that is empty or disagrees with the record
  count, a producer id without a base sequence, and records that do not parse or whose number
  differs from the declared count (Kafka reads every record, compressed or not).

Trailing bytes too short to be a second batch are dropped, as Kafka trims them before appending.
A compressed batch whose records do not carry offset deltas 0..n-1 is rebuilt with consecutive
ones (Kafka rewrites such batches instead of rejecting them); an uncompressed one is kept as is.
``check_produced_batch`` also tells whether a record has no key (refused by compacted topics)
and, given the partition's ``TimestampWindow``, checks every record's timestamp
(protocol/timestamp_validation.py: INVALID_TIMESTAMP with per-record errors).

Every record's structure is checked (``_walk``): one record at a time in general, and a byte
column at a time over the records that share one layout (what producers mostly send), so that
validating a batch of small records costs a few nanoseconds per record instead of a microsecond.
"""

from __future__ import annotations

import struct
from functools import cache

from .record_errors import CorruptRecordError, InvalidRecordError
from .records import (
    CREATE_TIME,
    HEADER_SIZE,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    NO_COMPRESSION,
    BatchHeader,
    Record,
    build_batch,
    decode_records,
    decompress,
    parse_batch_header,
    verify_crc,
)
from .timestamp_validation import TimestampWindow, check_timestamps, create_time_batch
from .varint import read_varint

_I32 = struct.Struct(">i")
_MIN_RECORD_SIZE_V0 = 14  # LegacyRecord.RECORD_OVERHEAD_V0: Kafka's floor for any batch length
_MIN_RECORD_BYTES = 7  # length, attributes, timestamp delta, offset delta, key, value, headers


def validate_produced_batch(records: bytes) -> tuple[bytes, BatchHeader]:
    """The batch to append and its header, or ``CorruptRecordError`` / ``InvalidRecordError``
    (their ``code`` is Kafka's error code) for the partition's data of a Produce v3+ request."""
    batch, header, _null_key = check_produced_batch(records)
    return batch, header


def check_produced_batch(records: bytes, window: TimestampWindow | None = None,
                         compacted: str | None = None) -> tuple[bytes, BatchHeader, bool]:
    """``validate_produced_batch`` plus whether a record has no key; with ``window``, every
    record's timestamp is checked too (LogValidator.validateTimestamp), and with ``compacted``
    (the topic-partition's name, when its topic is compacted) every record's key
    (validateKey): ``InvalidTimestampRecordsError`` / ``InvalidRecordsError``, with the
    index of every refused record."""
    batch = _single_batch(records)
    view = memoryview(batch)
    header = parse_batch_header(view)
    if header.batch_length + LOG_OVERHEAD < HEADER_SIZE:
        raise CorruptRecordError(f"Record batch is corrupt (the size {header.size} is smaller than "
                                 f"the minimum allowed overhead {HEADER_SIZE})")
    if not verify_crc(view):
        raise CorruptRecordError(f"Record is corrupt (stored crc = {header.crc})")
    if header.base_offset != 0:
        raise InvalidRecordError("The baseOffset of the record batch in the append should be 0, "
                                 f"but it is {header.base_offset}")
    _check_offsets_and_count(header)
    if header.is_control:
        raise InvalidRecordError("Clients are not allowed to write control records")
    if header.producer_id >= 0 and header.base_sequence < 0:
        raise InvalidRecordError(f"Invalid sequence number {header.base_sequence} in record batch "
                                 f"with producerId {header.producer_id}")
    if header.compression == NO_COMPRESSION:
        _sequential, null_key, ts_width = _walk(batch, HEADER_SIZE, header.records_count, False)
        check_timestamps(batch, header, ts_width, window, None,
                         compacted if null_key else None)
        if window is not None and header.timestamp_type == LOG_APPEND_TIME:
            batch = create_time_batch(batch)
            header = parse_batch_header(batch)
        return batch, header, null_key
    data = decompress(view[HEADER_SIZE:], header.compression)
    sequential, null_key, ts_width = _walk(data, 0, header.records_count, True)
    check_timestamps(batch, header, ts_width, window, data, compacted if null_key else None)
    if not sequential:
        batch = _renumbered(batch, header, CREATE_TIME if window is not None else None)
        header = parse_batch_header(batch)
    elif window is not None and header.timestamp_type == LOG_APPEND_TIME:
        batch = create_time_batch(batch)
        header = parse_batch_header(batch)
    return batch, header, null_key


def _single_batch(records: bytes) -> bytes:
    """The one complete batch of a Produce v3+ partition (ProduceRequest.validateRecords)."""
    if len(records) < LOG_OVERHEAD:
        raise InvalidRecordError("Produce requests must have at least one record batch per partition")
    size = _I32.unpack_from(records, 8)[0]
    if size < _MIN_RECORD_SIZE_V0:
        raise CorruptRecordError(f"Record size {size} is less than the minimum record overhead "
                                 f"({_MIN_RECORD_SIZE_V0})")
    end = size + LOG_OVERHEAD
    if end > len(records):
        raise InvalidRecordError("Produce requests must have at least one record batch per partition")
    magic = records[16]
    if magic > 2:
        raise CorruptRecordError(f"Invalid magic found in record: {magic}")
    if magic != 2:
        raise InvalidRecordError("Produce requests are only allowed to contain record batches "
                                 "with magic version 2")
    rest = len(records) - end
    if rest >= LOG_OVERHEAD:
        next_size = _I32.unpack_from(records, end + 8)[0]
        if next_size < _MIN_RECORD_SIZE_V0:
            raise CorruptRecordError(f"Record size {next_size} is less than the minimum record "
                                     f"overhead ({_MIN_RECORD_SIZE_V0})")
        if next_size + LOG_OVERHEAD <= rest:
            raise InvalidRecordError("Produce requests are only allowed to contain exactly one "
                                     "record batch per partition")
    return records if rest == 0 else records[:end]


def _check_offsets_and_count(header: BatchHeader) -> None:
    """LogValidator.validateBatch for a client's v2 batch."""
    count_from_offsets = header.last_offset_delta + 1
    if count_from_offsets <= 0:
        raise InvalidRecordError(f"Batch has an invalid offset range: [{header.base_offset}, "
                                 f"{header.last_offset}]")
    if header.records_count <= 0:
        raise InvalidRecordError(f"Invalid reported count for record batch: {header.records_count}")
    if count_from_offsets != header.records_count:
        raise InvalidRecordError(f"Inconsistent batch offset range [{header.base_offset}, "
                                 f"{header.last_offset}] and count of records {header.records_count}")


def walk_records(data: bytes | memoryview, count: int) -> bool:
    """Parse the structure of ``count`` v2 records filling ``data`` exactly (DefaultRecord.readFrom
    for each); True when their offset deltas are 0..count-1. Raises ``InvalidRecordError``."""
    return _walk(data, 0, count, True)[0]


def _walk(data: bytes | memoryview, pos: int, count: int, offsets: bool
          ) -> tuple[bool, bool, int]:
    """``walk_records`` of the records from ``pos`` to the end of ``data``: (offset deltas are
    0..count-1 — only looked at when ``offsets``, else True —, some record has no key, the
    widest timestamp delta in bytes: it bounds the records' timestamps).

    The hot path of every produce. Records are walked one by one with varints of one and two
    bytes read inline and the key and value bytes skipped, never copied; when the next record
    starts like the one just walked (same length), the records that follow with the very same
    layout — the same length, key, value and header lengths and varint widths — are checked
    together a byte column at a time (``_same_layout``), which costs nanoseconds per record."""
    end = len(data)
    if count * _MIN_RECORD_BYTES > end - pos:
        raise InvalidRecordError("Incorrect declared batch size, premature EOF reached")
    sequential = True
    null_key = False
    ts_width = 1
    index = 0
    retry = 0  # records to walk one by one before trying a run again
    try:
        while index < count:
            start = pos
            b = data[pos]  # record length (zigzag: even = positive)
            if b < 0x80:
                pos += 1
            elif (c := data[pos + 1]) < 0x80:
                b = (b & 0x7F) | (c << 7)
                pos += 2
            else:
                size, pos = read_varint(data, pos)
                b = size << 1 if size >= 0 else 1
            record_end = pos + (b >> 1)
            if b & 1 or record_end > end:
                raise InvalidRecordError(f"Invalid record size in record {index}: it does not fit "
                                         "the bytes of the batch")
            pos += 2  # attributes, timestamp delta (a varlong)
            if data[pos - 1] > 0x7F:
                pos += 1
                if data[pos - 1] > 0x7F:  # three bytes or more
                    b = pos - 2
                    while data[pos] > 0x7F:
                        pos += 1
                    pos += 1
                    if pos - b > ts_width:
                        ts_width = pos - b
                elif ts_width == 1:
                    ts_width = 2
            b = data[pos]  # offset delta
            if b < 0x80:
                pos += 1
                if b != index << 1:
                    sequential = False
            elif (c := data[pos + 1]) < 0x80:
                if (b & 0x7F) | (c << 7) != index << 1:
                    sequential = False
                pos += 2
            else:
                delta, pos = read_varint(data, pos)
                if delta != index:
                    sequential = False
            b = data[pos]  # key: length (-1 = null) and bytes
            if b < 0x80:
                if b & 1:
                    pos += 1
                    null_key = True
                else:
                    pos += 1 + (b >> 1)
            else:
                n, pos = read_varint(data, pos)
                if n > 0:
                    pos += n
                elif n < 0:
                    null_key = True
            b = data[pos]  # value
            if b < 0x80:
                pos += 1 if b & 1 else 1 + (b >> 1)
            elif (c := data[pos + 1]) < 0x80:
                b = (b & 0x7F) | (c << 7)
                pos += 2 if b & 1 else 2 + (b >> 1)
            else:
                pos = _skip_bytes(data, pos)
            if pos + 1 == record_end and data[pos] == 0:  # no headers
                pos = record_end
            else:
                pos = _walk_headers(data, pos)
                if pos != record_end:
                    raise InvalidRecordError(f"Invalid record size in record {index}: its fields "
                                             "do not add up to its length")
            index += 1
            if retry:
                retry -= 1
            elif (index < count and data[pos] == data[start]
                  and data[pos + 1] == data[start + 1]):
                size = pos - start
                checks: list[tuple[int, int]] = []
                if min(count - index, (end - pos) // size) >= _RUN_MIN:
                    if type(data) is not bytes:  # strided slices of bytes are the cheap ones
                        data = bytes(data)
                    checks, delta_at, delta_width, run_ts_width = _layout(data, start)
                if 0 < len(checks) <= _MAX_CHECKS:  # (many headers: walked one by one)
                    assert type(data) is bytes  # made so above: checks exist only then
                    # Slots are checked a window at a time, the window growing while every slot
                    # matches: an attempt that fails early costs no more than its window.
                    window = _WINDOW
                    first = index
                    while True:
                        slots = min(count - index, (end - pos) // size, window)
                        run = _same_layout(data, pos, size, slots, checks)
                        if run and run_ts_width > ts_width:
                            ts_width = run_ts_width
                        if run and offsets and sequential:
                            sequential = _deltas_follow(data, pos + delta_at, size,
                                                        delta_width, index, run)
                        index += run
                        pos += run * size
                        if run < window:
                            break
                        window *= 16
                    if index - first < 4 * _RUN_MIN:
                        retry = _RETRY
                else:
                    retry = _RETRY
    except IndexError:
        raise InvalidRecordError("Incorrect declared batch size, premature EOF reached") from None
    except InvalidRecordError:
        raise
    except CorruptRecordError as exc:  # a varint longer than 10 bytes
        raise InvalidRecordError(f"Found invalid record structure: {exc}") from None
    if pos != end:
        raise InvalidRecordError("Incorrect declared batch size, records still remaining in file")
    return sequential or not offsets, null_key, ts_width


# Runs of records with one layout -------------------------------------------------------------
# A record's layout: the offsets of its structural bytes and what each must be. The bytes of a
# length (record, key, value, header count, header key and value) must equal the walked
# record's; the bytes of the timestamp and offset deltas (values free) must have the same
# continuation bits. A record matching every check at the position where the walked record's
# successor of the same size would start parses exactly like the walked one: same length,
# fields adding up to it. Attributes, deltas' values and key/value/header bytes are free.

_RUN_MIN = 4  # a run is tried only with at least this many records left
_RETRY = 16  # after a short run, records walked one by one before the next try
_MAX_CHECKS = 64  # records with more structural bytes (headers) are not checked in runs
_WINDOW = 64  # slots checked by the first column pass of a run (then x16 while all match)
_MORE, _LAST = -1, -2  # a delta's byte: continuation bit set / clear
_BYTES = [bytes((i,)) for i in range(256)]
_HIGH = bytes(0 if i > 0x7F else 1 for i in range(256))  # translate: 0 where bit 7 is set
_LOW = bytes(0 if i < 0x80 else 1 for i in range(256))


def _layout(data: bytes | memoryview, start: int
            ) -> tuple[list[tuple[int, int]], int, int, int]:
    """(checks, offset and width of the offset delta, width of the timestamp delta) of the
    (valid) record at ``start``;
    a check is (offset in the record, byte value or _MORE / _LAST). Length bytes come first."""
    checks: list[tuple[int, int]] = []
    _, pos = _exact(data, start, start, checks)  # record length
    pos += 1  # attributes
    ts_at = pos
    for _delta in (0, 1):  # timestamp delta, offset delta
        delta_at = pos
        while data[pos] > 0x7F:
            checks.append((pos - start, _MORE))
            pos += 1
        checks.append((pos - start, _LAST))
        pos += 1
    delta_width = pos - delta_at
    ts_width = delta_at - ts_at
    for _field in (0, 1):  # key, value
        n, pos = _exact(data, start, pos, checks)
        if n > 0:
            pos += n
    headers, pos = _exact(data, start, pos, checks)
    for _ in range(headers):
        for _part in (0, 1):  # header key, header value
            n, pos = _exact(data, start, pos, checks)
            if n > 0:
                pos += n
    return checks, delta_at - start, delta_width, ts_width


def _exact(data: bytes | memoryview, start: int, pos: int, checks: list[tuple[int, int]]
           ) -> tuple[int, int]:
    """Check every byte of the (valid) varint at ``pos`` for equality: (its value, the
    position after it)."""
    value = shift = 0
    while True:
        b = data[pos]
        checks.append((pos - start, b))
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7


def _same_layout(data: bytes, pos: int, size: int, run: int,
                 checks: list[tuple[int, int]]) -> int:
    """How many of the ``run`` slots of ``size`` bytes from ``pos`` hold, one after the other,
    a record of the layout ``checks``. A slot counts only if every earlier one did, so that it
    is where a record starts: the length checks come first and cut ``run`` before the rest are
    read; each later column is read only up to the first slot that failed so far."""
    for offset, want in checks:
        start = pos + offset
        col = data[start : start + (run - 1) * size + 1 : size]
        if want >= 0:
            if col == _BYTES[want] * run:
                continue
            bad = col.translate(_other_than(want)).find(1)
        elif want == _LAST:
            if col.isascii():
                continue
            bad = col.translate(_LOW).find(1)
        else:
            bad = col.translate(_HIGH).find(1)
            if bad < 0:
                continue
        if not bad:
            return 0
        run = bad
    return run


@cache
def _other_than(value: int) -> bytes:
    """A translate table: 0 for ``value``, 1 for every other byte."""
    return bytes(0 if i == value else 1 for i in range(256))


def _deltas_follow(data: bytes, pos: int, size: int, width: int, first: int,
                   run: int) -> bool:
    """Whether the offset deltas at pos, pos + size, ... (``run`` of them, ``width`` bytes) are
    first, first + 1, ...; compared as canonical varints a column at a time when they can be."""
    col = data[pos : pos + (run - 1) * size + 1 : size]
    if width == 1 and first + run <= 64:
        if col == bytes(range(2 * first, 2 * (first + run), 2)):
            return True
    elif width == 2 and first >= 64 and first + run <= 8192:
        low, high = _two_byte_deltas()
        if (col == low[first : first + run]
                and data[pos + 1 : pos + run * size : size] == high[first : first + run]):
            return True
    # Non-canonical or wider varints: decode them.
    return all(read_varint(data, pos + i * size)[0] == first + i for i in range(run))


@cache
def _two_byte_deltas() -> tuple[bytes, bytes]:
    """The first and second bytes of the varints 64..8191 (zigzag), indexed by value."""
    return (bytes(((i << 1) & 0x7F) | 0x80 for i in range(8192)),
            bytes((i << 1) >> 7 for i in range(8192)))


def _skip_bytes(data: bytes | memoryview, pos: int) -> int:
    """Past a nullable byte string (varint length, -1 = null)."""
    n, pos = read_varint(data, pos)
    return pos + n if n > 0 else pos


def _walk_headers(data: bytes | memoryview, pos: int) -> int:
    count, pos = read_varint(data, pos)
    if count < 0:
        raise InvalidRecordError(f"Found invalid number of record headers {count}")
    for _ in range(count):
        n, pos = read_varint(data, pos)
        if n < 0:
            raise InvalidRecordError(f"Invalid negative header key size {n}")
        pos = _skip_bytes(data, pos + n)
    return pos


def _renumbered(batch: bytes, header: BatchHeader, timestamp_type: int | None = None) -> bytes:
    """The batch rebuilt with consecutive record offsets (Kafka's buildRecordsAndAssignOffsets,
    which writes the topic's timestamp type: ``timestamp_type``, else the batch's)."""
    try:
        records = decode_records(batch)
    except CorruptRecordError as exc:
        raise InvalidRecordError(str(exc)) from None
    renumbered = [Record(i, r.timestamp, r.key, r.value, r.headers) for i, r in enumerate(records)]
    return build_batch(renumbered, base_offset=0, compression=header.compression,
                       producer_id=header.producer_id, producer_epoch=header.producer_epoch,
                       base_sequence=header.base_sequence, transactional=header.is_transactional,
                       timestamp_type=header.timestamp_type if timestamp_type is None
                       else timestamp_type,
                       partition_leader_epoch=header.partition_leader_epoch)
