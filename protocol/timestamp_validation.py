"""LogValidator.validateTimestamp for a producer's v2 batch. Pure, no I/O.

Kafka checks every record (validateRecord -> validateTimestamp):

- a CreateTime topic refuses a record whose timestamp (other than NO_TIMESTAMP, -1) lies
  outside ``[now - message.timestamp.before.max.ms, now + message.timestamp.after.max.ms]``;
- a batch the producer marked LogAppendTime is refused by a LogAppendTime topic, and by a
  CreateTime topic when its max timestamp (every record's timestamp then) is NO_TIMESTAMP;

each refused record gets a RecordError (its index in the batch) and the partition answers
INVALID_TIMESTAMP (``InvalidTimestampRecordsError``). The comparisons are Java's, in 64-bit
arithmetic that wraps.

The cheap part rides on the structural walk of batch_validation: a record's timestamp is the
batch's first timestamp plus a delta whose varint width bounds it (``|delta| <= 2**(7w-1)``), so
knowing the widest delta of the batch is enough to clear it in one comparison. Only a batch
that this bound does not clear is walked again, record by record, for the exact answer.
"""

from __future__ import annotations

from typing import NamedTuple

from .record_errors import CorruptRecordError, InvalidRecordError
from .records import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    HEADER_SIZE,
    LOG_APPEND_TIME,
    NO_COMPRESSION,
    BatchHeader,
    batch_crc,
    decompress,
)
from .varint import read_varint

NO_TIMESTAMP = -1
_LONG_MAX = (1 << 63) - 1
_LONG_MIN = -(1 << 63)
TOP_MESSAGE = "One or more records have been rejected due to invalid timestamp"


class TimestampWindow(NamedTuple):
    """What a partition's config and the broker's clock say about produced timestamps."""

    now: int  # ms
    before_max_ms: int
    after_max_ms: int
    log_append_time: bool  # message.timestamp.type=LogAppendTime


class InvalidTimestampRecordsError(CorruptRecordError):
    """INVALID_TIMESTAMP with Kafka's RecordErrors: (batch index, message) per refused record."""

    code = 32

    def __init__(self, record_errors: list[tuple[int, str]]) -> None:
        super().__init__(TOP_MESSAGE)
        self.record_errors = record_errors


class InvalidRecordsError(InvalidRecordError):
    """INVALID_RECORD with Kafka's RecordErrors (LogValidator.processRecordErrors' wording)."""

    def __init__(self, record_errors: list[tuple[int, str]]) -> None:
        shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')"
                          for i, m in record_errors[:3])
        super().__init__(f"One or more records have been rejected due to {len(record_errors)} "
                         "record errors in total, and only showing the first three errors at "
                         f"most: [{shown}]")
        self.record_errors = record_errors


def _long(value: int) -> int:
    """``value`` as a Java long (two's complement wrap)."""
    return ((value + (1 << 63)) & 0xFFFFFFFFFFFFFFFF) - (1 << 63)


def check_timestamps(batch: bytes, header: BatchHeader, ts_width: int,
                     window: TimestampWindow | None, data: bytes | None = None,
                     compacted: str | None = None) -> None:
    """Raise ``InvalidTimestampRecordsError`` when Kafka refuses a record's timestamp, or
    ``InvalidRecordsError`` a record without key (``compacted``: the topic-partition's name
    when its topic is compacted and some record has no key; validateKey comes first).
    ``ts_width``: the widest timestamp delta varint of the (walked, well-formed) records;
    ``data``: the decompressed records of a compressed batch, if at hand."""
    if compacted is None:
        if window is None or (header.timestamp_type != LOG_APPEND_TIME
                              and window.log_append_time):
            return  # no record is looked at (the broker stamps the batch)
        if header.timestamp_type != LOG_APPEND_TIME:
            first = header.base_timestamp
            bound = 1 << (7 * ts_width - 1)
            low, high = first - bound, first + bound
            if (window.now - window.before_max_ms <= low
                    and high <= window.now + window.after_max_ms
                    and low >= _LONG_MIN and high <= _LONG_MAX):
                return
    errors = record_errors(batch, header, window, data, compacted)
    if any(timestamp for _, _, timestamp in errors):
        raise InvalidTimestampRecordsError([(i, m) for i, m, _ in errors])
    if errors:
        raise InvalidRecordsError([(i, m) for i, m, _ in errors])


def record_errors(batch: bytes, header: BatchHeader, window: TimestampWindow | None,
                  data: bytes | memoryview | None = None, compacted: str | None = None
                  ) -> list[tuple[int, str, bool]]:
    """Every record's RecordError as validateKey / validateTimestamp word it, exact, record
    by record: (batch index, message, whether it is about the timestamp)."""
    if data is None:
        if header.compression == NO_COMPRESSION:
            data = memoryview(batch)[HEADER_SIZE:]
        else:
            data = decompress(memoryview(batch)[HEADER_SIZE:], header.compression)
    log_append = header.timestamp_type == LOG_APPEND_TIME
    errors: list[tuple[int, str, bool]] = []
    for index, (offset, ts, key_size, value_size) in enumerate(_records(data, header)):
        if compacted is not None and key_size < 0:
            errors.append((index, "Compacted topic cannot accept message without key in topic "
                           f"partition {compacted}.", False))
        elif window is None:
            continue
        elif not window.log_append_time and ts != NO_TIMESTAMP:
            now, before, after = window.now, window.before_max_ms, window.after_max_ms
            diff = _long(now - ts)
            if diff > before or _long(-diff) > after:
                errors.append((index, f"Timestamp {ts} of message with offset {offset} is out of "
                               f"range. The timestamp should be within [{_long(now - before)}, "
                               f"{_long(now + after)}]", True))
        elif log_append:
            errors.append((index, f"Invalid timestamp type in message DefaultRecord(offset="
                           f"{offset}, timestamp={ts}, key={max(key_size, 0)} bytes, value="
                           f"{max(value_size, 0)} bytes). Producer should not set timestamp "
                           "type to LogAppendTime.", True))
    return errors


def create_time_batch(batch: bytes) -> bytes:
    """A producer's LogAppendTime batch accepted by a CreateTime topic, as Kafka stores it
    (setMaxTimestamp(CREATE_TIME, max of its records' timestamps, which is its max timestamp):
    the timestamp-type bit cleared, the CRC recomputed."""
    out = bytearray(batch)
    out[ATTRIBUTES_OFFSET + 1] &= ~0x08 & 0xFF
    out[CRC_OFFSET : CRC_OFFSET + 4] = batch_crc(out).to_bytes(4, "big")
    return bytes(out)


def _records(data: bytes | memoryview, header: BatchHeader) -> list[tuple[int, int, int, int]]:
    """(offset, timestamp, key size, value size; -1: null) of the batch's records, as Kafka reads them
    (DefaultRecord.readFrom: a LogAppendTime batch's records all carry its max timestamp)."""
    out = []
    pos = 0
    first = header.base_timestamp
    append_time = header.max_timestamp if header.timestamp_type == LOG_APPEND_TIME else None
    for _ in range(header.records_count):
        size, pos = read_varint(data, pos)
        end = pos + size
        ts_delta, pos = read_varint(data, pos + 1)
        offset_delta, pos = read_varint(data, pos)
        key_size, pos = read_varint(data, pos)
        pos += max(key_size, 0)
        value_size, pos = read_varint(data, pos)
        ts = _long(first + ts_delta) if append_time is None else append_time
        out.append((header.base_offset + offset_delta, ts, key_size, value_size))
        pos = end
    return out
