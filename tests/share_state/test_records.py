"""``__share_group_state`` record codecs, byte for byte as Kafka's ShareSnapshotKey/Value and
ShareUpdateKey/Value (coordinator-key int16 type, non-flexible key; int16 version 0, flexible
value with the tagged DeliveryCompleteCount)."""

from __future__ import annotations

import struct
import uuid

import pytest

from kafkette.protocol.share_state_records import (
    SHARE_SNAPSHOT,
    SHARE_UPDATE,
    PersistedBatch,
    ShareSnapshotValue,
    ShareStateKey,
    ShareStateRecordError,
    ShareUpdateValue,
    coordinator_key,
    decode_key,
    decode_snapshot_value,
    decode_update_value,
    encode_key,
    encode_snapshot_value,
    encode_update_value,
)

TOPIC = uuid.UUID("0123456789abcdef0123456789abcdef")


def test_keys_are_type_group_uuid_partition() -> None:
    for record_type in (SHARE_SNAPSHOT, SHARE_UPDATE):
        key = ShareStateKey(record_type, "workers", TOPIC, 7)
        raw = encode_key(key)
        assert raw == (struct.pack(">hh", record_type, 7) + b"workers" + TOPIC.bytes
                       + struct.pack(">i", 7))
        assert decode_key(raw) == key
    with pytest.raises(ShareStateRecordError):
        decode_key(struct.pack(">hh", 5, 0) + TOPIC.bytes + b"\x00\x00\x00\x00")
    with pytest.raises(ShareStateRecordError):
        decode_key(b"\x00\x00\x00\x09ab")


def test_snapshot_value_layout() -> None:
    value = ShareSnapshotValue(3, 4, 5, 100, 1_000, 2_000,
                               (PersistedBatch(100, 104, 2, 1), PersistedBatch(105, 105, 0, 3)))
    raw = encode_snapshot_value(value)
    expected = (struct.pack(">hiiiqqq", 0, 3, 4, 5, 100, 1_000, 2_000) + b"\x03"
                + struct.pack(">qqbh", 100, 104, 2, 1) + b"\x00"
                + struct.pack(">qqbh", 105, 105, 0, 3) + b"\x00"
                + b"\x00")  # no tagged fields: DeliveryCompleteCount at its default -1
    assert raw == expected
    assert decode_snapshot_value(raw) == value
    tagged = ShareSnapshotValue(0, 1, -1, 10, 5, 5, (), 6)
    raw = encode_snapshot_value(tagged)
    assert raw.endswith(b"\x01" + b"\x00\x04" + struct.pack(">i", 6))
    assert raw[len(raw) - 8] == 1  # empty compact array right before the tag buffer
    assert decode_snapshot_value(raw) == tagged


def test_update_value_layout() -> None:
    value = ShareUpdateValue(2, 7, -1, (PersistedBatch(0, 9, 4, 5),), 10)
    raw = encode_update_value(value)
    assert raw == (struct.pack(">hiiq", 0, 2, 7, -1) + b"\x02"
                   + struct.pack(">qqbh", 0, 9, 4, 5) + b"\x00"
                   + b"\x01\x00\x04" + struct.pack(">i", 10))
    assert decode_update_value(raw) == value
    with pytest.raises(ShareStateRecordError):
        decode_update_value(b"\x00\x01" + raw[2:])  # unknown version
    with pytest.raises(ShareStateRecordError):
        decode_update_value(raw[:12])


def test_unknown_tags_are_skipped() -> None:
    raw = (struct.pack(">hiiq", 0, 1, 1, 4) + b"\x01"
           + b"\x02" + b"\x05\x01\xff" + b"\x00\x04" + struct.pack(">i", 3))
    assert decode_update_value(raw) == ShareUpdateValue(1, 1, 4, (), 3)


def test_coordinator_key_uses_kafka_base64_topic_id() -> None:
    # Kafka's Uuid.toString(): URL-safe base64 of the 16 bytes, no padding
    assert coordinator_key("g", TOPIC, 3) == "g:ASNFZ4mrze8BI0VniavN7w:3"
