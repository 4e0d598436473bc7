"""Transaction markers: the COMMIT/ABORT control batches of Kafka's WriteTxnMarkers
(MemoryRecords.withEndTransactionMarker): one record, key ControlRecordType (version 0, type),
value EndTransactionMarker (version 0, coordinator epoch), transactional + control attributes,
no sequence, uncompressed."""

from __future__ import annotations

import struct

from .records import HEADER_SIZE, build_batch
from .varint import read_varint

ABORT, COMMIT = 0, 1
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


def marker_batch(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                 timestamp_ms: int) -> bytes:
    key = _KEY.pack(0, COMMIT if commit else ABORT)
    return build_batch([(key, _VALUE.pack(0, coordinator_epoch))], base_timestamp=timestamp_ms,
                       producer_id=producer_id, producer_epoch=producer_epoch,
                       transactional=True, control=True)


def control_type(batch: bytes | memoryview) -> int:
    """ABORT (0) or COMMIT (1) of a control batch; -1 when its first record has no such key."""
    try:
        pos = HEADER_SIZE
        _length, pos = read_varint(batch, pos)
        pos += 1  # attributes
        _ts, pos = read_varint(batch, pos)
        _delta, pos = read_varint(batch, pos)
        key_len, pos = read_varint(batch, pos)
        if key_len < 4:
            return -1
        _version, kind = _KEY.unpack_from(batch, pos)
    except (IndexError, struct.error, ValueError):
        return -1
    return kind if kind in (ABORT, COMMIT) else -1
