"""Golden bytes of the consumer-group records (types 3-8, 16), built by hand from Kafka's JSON
schemas (group-coordinator/src/main/resources/common/message/ConsumerGroup*.json)."""

from __future__ import annotations

import contextlib
import random
import struct
import uuid

import pytest

from kafkette.protocol import consumer_group_records as cgr
from kafkette.protocol.group_records import (
    GroupMetadataKey,
    OffsetCommitKey,
    OffsetCommitValue,
    RecordDecodeError,
    UnknownKey,
)

T1 = uuid.UUID("0123456789abcdef0123456789abcdef")
T2 = uuid.UUID("fedcba98-7654-3210-fedc-ba9876543210")


def legacy(s: str) -> bytes:
    return struct.pack(">h", len(s.encode())) + s.encode()


def compact(s: str | None) -> bytes:
    # lengths below 127 only, so one varint byte
    return b"\x00" if s is None else bytes([len(s.encode()) + 1]) + s.encode()


KEYS = [
    (cgr.ConsumerGroupMetadataKey("grp"), "0003" "0003" + b"grp".hex()),
    (cgr.ConsumerGroupPartitionMetadataKey("grp"), "0004" "0003" + b"grp".hex()),
    (cgr.ConsumerGroupMemberMetadataKey("grp", "m1"), "0005" "0003" + b"grp".hex() + "0002" + b"m1".hex()),
    (cgr.ConsumerGroupTargetAssignmentMetadataKey("grp"), "0006" "0003" + b"grp".hex()),
    (cgr.ConsumerGroupTargetAssignmentMemberKey("grp", "m1"), "0007" "0003" + b"grp".hex() + "0002" + b"m1".hex()),
    (cgr.ConsumerGroupCurrentMemberAssignmentKey("grp", "m1"), "0008" "0003" + b"grp".hex() + "0002" + b"m1".hex()),
    (cgr.ConsumerGroupRegularExpressionKey("grp", "t.*"), "0010" "0003" + b"grp".hex() + "0003" + b"t.*".hex()),
]


@pytest.mark.parametrize("key,hexed", KEYS)
def test_keys(key, hexed):
    assert cgr.encode_key(key).hex() == hexed
    assert cgr.decode_key(bytes.fromhex(hexed)) == key


def test_classic_keys_and_unknown_types_pass_through():
    for key in (OffsetCommitKey("g", "t", 3), GroupMetadataKey("g")):
        assert cgr.decode_key(cgr.encode_key(key)) == key
    assert cgr.decode_key(b"\x00\x09" + legacy("g")) == UnknownKey(9)  # share group record
    value = OffsetCommitValue(1, 2, "", 3)
    encoded = cgr.encode_value(value)
    assert cgr.decode_value(OffsetCommitKey("g", "t", 0), encoded) == value


def test_group_epoch_and_assignment_epoch():
    # version 0, int32 epoch, empty tagged fields
    for cls, key in ((cgr.ConsumerGroupMetadataValue, cgr.ConsumerGroupMetadataKey("g")),
                     (cgr.ConsumerGroupTargetAssignmentMetadataValue,
                      cgr.ConsumerGroupTargetAssignmentMetadataKey("g"))):
        expected = bytes.fromhex("0000" "0000002a" "00")
        assert cgr.encode_value(cls(42)) == expected
        assert cgr.decode_value(key, expected) == cls(42)


def test_partition_metadata():
    value = cgr.ConsumerGroupPartitionMetadataValue((
        cgr.TopicMetadata(T1, "foo", 3),
        cgr.TopicMetadata(T2, "bar", 1, (cgr.PartitionRacks(0, ("r1", "r2")),)),
    ))
    expected = (
        b"\x00\x00" + b"\x03"  # version, 2 topics
        + T1.bytes + compact("foo") + struct.pack(">i", 3) + b"\x01" + b"\x00"
        + T2.bytes + compact("bar") + struct.pack(">i", 1)
        + b"\x02" + struct.pack(">i", 0) + b"\x03" + compact("r1") + compact("r2") + b"\x00"
        + b"\x00"  # topic tags
        + b"\x00"  # value tags
    )
    assert cgr.encode_value(value) == expected
    assert cgr.decode_value(cgr.ConsumerGroupPartitionMetadataKey("g"), expected) == value


def test_member_metadata_consumer_protocol_member():
    value = cgr.ConsumerGroupMemberMetadataValue(
        instance_id=None, rack_id="rack-a", client_id="rdkafka", client_host="/127.0.0.1",
        subscribed_topic_names=("bar", "foo"), subscribed_topic_regex=None,
        rebalance_timeout_ms=300000, server_assignor="range")
    expected = (
        b"\x00\x00" + b"\x00" + compact("rack-a") + compact("rdkafka") + compact("/127.0.0.1")
        + b"\x03" + compact("bar") + compact("foo") + b"\x00"
        + struct.pack(">i", 300000) + compact("range") + b"\x00"
    )
    assert cgr.encode_value(value) == expected
    assert cgr.decode_value(cgr.ConsumerGroupMemberMetadataKey("g", "m"), expected) == value


def test_member_metadata_with_classic_member_metadata_tag():
    classic = cgr.ClassicMemberMetadata(45000, (cgr.ClassicProtocol("range", b"\x00\x01\x02"),))
    value = cgr.ConsumerGroupMemberMetadataValue("inst", None, "c", "h", (), ".*", -1, None, classic)
    struct_bytes = (struct.pack(">i", 45000) + b"\x02" + compact("range") + b"\x04\x00\x01\x02"
                    + b"\x00" + b"\x00")
    expected = (
        b"\x00\x00" + compact("inst") + b"\x00" + compact("c") + compact("h") + b"\x01"
        + compact(".*") + b"\xff\xff\xff\xff" + b"\x00"
        # 1 tagged field: tag 0, size = 1 (non-null marker) + struct, marker 0x01, struct
        + b"\x01" + b"\x00" + bytes([len(struct_bytes) + 1]) + b"\x01" + struct_bytes
    )
    assert cgr.encode_value(value) == expected
    assert cgr.decode_value(cgr.ConsumerGroupMemberMetadataKey("g", "m"), expected) == value


def test_unknown_tagged_fields_are_read_past():
    # ConsumerGroupMetadataValue with KIP-1101 MetadataHash (tag 0, int64) written by Kafka 4.1
    data = bytes.fromhex("0000" "00000007" "01" "00" "08" "0102030405060708")
    assert cgr.decode_value(cgr.ConsumerGroupMetadataKey("g"), data) == cgr.ConsumerGroupMetadataValue(7)
    # member metadata with an unknown tag 5 next to no classic metadata
    base = cgr.encode_value(cgr.ConsumerGroupMemberMetadataValue(None, None, "c", "h", (), None))
    data = base[:-1] + b"\x01\x05\x02\xab\xcd"
    got = cgr.decode_value(cgr.ConsumerGroupMemberMetadataKey("g", "m"), data)
    assert got == cgr.ConsumerGroupMemberMetadataValue(None, None, "c", "h", (), None)


def test_target_assignment_member():
    value = cgr.ConsumerGroupTargetAssignmentMemberValue((
        cgr.TopicPartitions(T1, (0, 2)), cgr.TopicPartitions(T2, ())))
    expected = (b"\x00\x00" + b"\x03" + T1.bytes + b"\x03" + struct.pack(">ii", 0, 2) + b"\x00"
                + T2.bytes + b"\x01" + b"\x00" + b"\x00")
    assert cgr.encode_value(value) == expected
    assert cgr.decode_value(cgr.ConsumerGroupTargetAssignmentMemberKey("g", "m"), expected) == value


def test_current_member_assignment():
    value = cgr.ConsumerGroupCurrentMemberAssignmentValue(
        member_epoch=11, previous_member_epoch=10, state=1,
        assigned_partitions=(cgr.TopicPartitions(T1, (1,)),),
        partitions_pending_revocation=(cgr.TopicPartitions(T2, (4, 5)),))
    expected = (b"\x00\x00" + struct.pack(">iib", 11, 10, 1)
                + b"\x02" + T1.bytes + b"\x02" + struct.pack(">i", 1) + b"\x00"
                + b"\x02" + T2.bytes + b"\x03" + struct.pack(">ii", 4, 5) + b"\x00"
                + b"\x00")
    assert cgr.encode_value(value) == expected
    key = cgr.ConsumerGroupCurrentMemberAssignmentKey("g", "m")
    assert cgr.decode_value(key, expected) == value
    # the member at epoch -2 (static member left temporarily), state UNKNOWN (127)
    leaving = cgr.ConsumerGroupCurrentMemberAssignmentValue(-2, 3, 127)
    assert cgr.encode_value(leaving) == bytes.fromhex("0000" "fffffffe" "00000003" "7f" "01" "01" "00")
    assert cgr.decode_value(key, cgr.encode_value(leaving)) == leaving


def test_regular_expression():
    value = cgr.ConsumerGroupRegularExpressionValue(("t1", "t2"), 12, 1700000000000)
    expected = (b"\x00\x00" + b"\x03" + compact("t1") + compact("t2")
                + struct.pack(">qq", 12, 1700000000000) + b"\x00")
    assert cgr.encode_value(value) == expected
    assert cgr.decode_value(cgr.ConsumerGroupRegularExpressionKey("g", "t.*"), expected) == value


def test_long_strings_use_multi_byte_varints():
    name = "x" * 200  # length + 1 = 201 = 0xc9 0x01 as an unsigned varint
    value = cgr.ConsumerGroupRegularExpressionValue((name,), 0, 0)
    encoded = cgr.encode_value(value)
    assert encoded[:5] == b"\x00\x00\x02\xc9\x01"
    assert cgr.decode_value(cgr.ConsumerGroupRegularExpressionKey("g", "x"), encoded) == value


def test_tombstones_and_bad_bytes():
    key = cgr.ConsumerGroupMetadataKey("g")
    assert cgr.decode_value(key, None) is None
    with pytest.raises(RecordDecodeError):
        cgr.decode_value(key, b"\x00\x01\x00\x00\x00\x01\x00")  # unknown value version
    with pytest.raises(RecordDecodeError):
        cgr.decode_value(key, b"\x00\x00\x00\x00")  # truncated
    with pytest.raises(RecordDecodeError):
        cgr.decode_value(key, b"\x00\x00\x00\x00\x00\x01\x00\xff")  # trailing byte
    with pytest.raises(RecordDecodeError):
        cgr.decode_key(b"\x00\x05\x00\x01g")  # member key without member id
    with pytest.raises(RecordDecodeError):
        cgr.decode_key(b"\x00")


@pytest.mark.parametrize("seed", range(5))
def test_mutated_bytes_decode_or_raise_record_decode_error(seed):
    rng = random.Random(seed)
    samples = [
        (cgr.ConsumerGroupMemberMetadataKey("g", "m"), cgr.ConsumerGroupMemberMetadataValue(
            "i", "r", "c", "h", ("a", "b"), ".*", 5, "range",
            cgr.ClassicMemberMetadata(1, (cgr.ClassicProtocol("range", b"xyz"),)))),
        (cgr.ConsumerGroupCurrentMemberAssignmentKey("g", "m"),
         cgr.ConsumerGroupCurrentMemberAssignmentValue(1, 0, 0, (cgr.TopicPartitions(T1, (1, 2)),))),
        (cgr.ConsumerGroupPartitionMetadataKey("g"), cgr.ConsumerGroupPartitionMetadataValue(
            (cgr.TopicMetadata(T1, "t", 3, (cgr.PartitionRacks(0, ("r",)),)),))),
        (cgr.ConsumerGroupRegularExpressionKey("g", "x"),
         cgr.ConsumerGroupRegularExpressionValue(("t",), 1, 2)),
    ]
    for key, value in samples:
        for blob, decode in ((cgr.encode_key(key), cgr.decode_key),
                             (cgr.encode_value(value), lambda b, k=key: cgr.decode_value(k, b))):
            for _ in range(300):
                data = bytearray(blob)
                for _ in range(rng.randint(1, 3)):
                    action = rng.random()
                    if action < 0.5 and data:
                        data[rng.randrange(len(data))] = rng.randrange(256)
                    elif action < 0.75 and data:
                        del data[rng.randrange(len(data)):]
                    else:
                        data.insert(rng.randrange(len(data) + 1), rng.randrange(256))
                with contextlib.suppress(RecordDecodeError):  # anything else fails the test
                    decode(bytes(data))
