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
"""

from __future__ import annotations

import struct

from .records import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    NO_COMPRESSION,
    BatchHeader,
    CorruptRecordError,
    InvalidRecordError,
    Record,
    _read_varint,
    build_batch,
    decode_records,
    decompress,
    parse_batch_header,
    verify_crc,
)

_I32 = struct.Struct(">i")
_MIN_RECORD_SIZE_V0 = 14  # LegacyRecord.RECORD_OVERHEAD_V0: Kafka's floor for any batch length
_MIN_RECORD_BYTES = 7  # length, attributes, timestamp delta, offset delta, key, value, headers


def validate_produced_batch(records: bytes) -> tuple[bytes, BatchHeader]:
    """The batch to append and its header, or ``CorruptRecordError`` / ``InvalidRecordError``
    (their ``code`` is Kafka's error code) for the partition's data of a Produce v3+ request."""
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
        walk_records(view[HEADER_SIZE:], header.records_count)
        return batch, header
    data = decompress(view[HEADER_SIZE:], header.compression)
    if not walk_records(data, header.records_count):
        batch = _renumbered(batch, header)
        header = parse_batch_header(batch)
    return batch, header


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
    for each); True when their offset deltas are 0..count-1. Raises ``InvalidRecordError``.

    The hot path of every produce: varints of one and two bytes (lengths up to 8191) are read
    inline, the key and value bytes are skipped, never copied."""
    end = len(data)
    if count * _MIN_RECORD_BYTES > end:
        raise InvalidRecordError("Incorrect declared batch size, premature EOF reached")
    sequential = True
    pos = 0
    index = 0
    try:
        while index < count:
            b = data[pos]  # record length (zigzag: even = positive)
            if b < 0x80:
                pos += 1
            elif data[pos + 1] < 0x80:
                b = (b & 0x7F) | (data[pos + 1] << 7)
                pos += 2
            else:
                size, pos = _read_varint(data, pos)
                b = size << 1 if size >= 0 else 1
            record_end = pos + (b >> 1)
            if b & 1 or record_end > end:
                raise InvalidRecordError(f"Invalid record size in record {index}: it does not fit "
                                         f"the {end} bytes of records")
            pos += 1  # attributes
            while data[pos] > 0x7F:  # timestamp delta
                pos += 1
            b = data[pos + 1]  # offset delta
            if b == index << 1 and b < 0x80:
                pos += 2
            else:
                delta, pos = _read_varint(data, pos + 1)
                sequential = sequential and delta == index
            for _field in (0, 1):  # key, value: length (-1 = null) and bytes
                b = data[pos]
                if b < 0x80:
                    pos += 1 if b & 1 else 1 + (b >> 1)
                elif data[pos + 1] < 0x80:
                    b = (b & 0x7F) | (data[pos + 1] << 7)
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
    except IndexError:
        raise InvalidRecordError("Incorrect declared batch size, premature EOF reached") from None
    except InvalidRecordError:
        raise
    except CorruptRecordError as exc:  # a varint longer than 10 bytes
        raise InvalidRecordError(f"Found invalid record structure: {exc}") from None
    if pos != end:
        raise InvalidRecordError("Incorrect declared batch size, records still remaining in file")
    return sequential


def _skip_bytes(data: bytes | memoryview, pos: int) -> int:
    """Past a nullable byte string (varint length, -1 = null)."""
    n, pos = _read_varint(data, pos)
    return pos + n if n > 0 else pos


def _walk_headers(data: bytes | memoryview, pos: int) -> int:
    count, pos = _read_varint(data, pos)
    if count < 0:
        raise InvalidRecordError(f"Found invalid number of record headers {count}")
    for _ in range(count):
        n, pos = _read_varint(data, pos)
        if n < 0:
            raise InvalidRecordError(f"Invalid negative header key size {n}")
        pos = _skip_bytes(data, pos + n)
    return pos


def _renumbered(batch: bytes, header: BatchHeader) -> bytes:
    """The batch rebuilt with consecutive record offsets (Kafka's buildRecordsAndAssignOffsets)."""
    try:
        records = decode_records(batch)
    except CorruptRecordError as exc:
        raise InvalidRecordError(str(exc)) from None
    renumbered = [Record(i, r.timestamp, r.key, r.value, r.headers) for i, r in enumerate(records)]
    return build_batch(renumbered, base_offset=0, compression=header.compression,
                       producer_id=header.producer_id, producer_epoch=header.producer_epoch,
                       base_sequence=header.base_sequence, transactional=header.is_transactional,
                       timestamp_type=header.timestamp_type,
                       partition_leader_epoch=header.partition_leader_epoch)
