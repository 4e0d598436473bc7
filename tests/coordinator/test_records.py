"""Unit tests: __consumer_offsets record bytes (reference §4.4), partitionFor (§3), ManualClock."""

from __future__ import annotations

import pytest

from kafkette.coordinator.runtime.clock import ManualClock
from kafkette.coordinator.runtime.partitioning import java_string_hashcode, partition_for
from kafkette.protocol.group_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    UnknownKey,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)

TS = 1700000000000
MEMBER_ID = "c1-2f0f6a4e-0000-0000-0000-000000000000"
GROUP_V3_ONE_MEMBER = (
    "00030008636f6e73756d657200000001000572616e6765002763312d32663066366134652d303030302d3030"
    "30302d303030302d3030303030303030303030300000018bcfe5680000000001002763312d3266306636613465"
    "2d303030302d303030302d303030302d303030303030303030303030ffff00026331000a2f3132372e302e302e"
    "31000493e00000afc8000000020001000000020002")
MEMBER = MemberMetadata(MEMBER_ID, None, "c1", "/127.0.0.1", 300000, 45000, b"\x00\x01", b"\x00\x02")


@pytest.mark.parametrize("obj,hexed", [
    (OffsetCommitKey("my-group", "orders", 3), "000100086d792d67726f757000066f726465727300000003"),
    (GroupMetadataKey("my-group"), "000200086d792d67726f7570"),
])
def test_keys(obj, hexed):
    assert encode_key(obj).hex() == hexed
    assert decode_key(bytes.fromhex(hexed)) == obj


@pytest.mark.parametrize("obj,hexed", [
    (OffsetCommitValue(42, 5, "", TS), "0003000000000000002a0000000500000000018bcfe56800"),
    (OffsetCommitValue(42, -1, "", TS, TS + 1234),
     "0001000000000000002a00000000018bcfe568000000018bcfe56cd2"),
    (GroupMetadataValue("", 0, None, None, TS, ()), "0003000000000000ffffffff0000018bcfe5680000000000"),
    (GroupMetadataValue("consumer", 1, "range", MEMBER_ID, TS, (MEMBER,)), GROUP_V3_ONE_MEMBER),
])
def test_values_written(obj, hexed):
    assert encode_value(obj).hex() == hexed
    key = OffsetCommitKey("g", "t", 0) if isinstance(obj, OffsetCommitValue) else GroupMetadataKey("g")
    assert decode_value(key, bytes.fromhex(hexed)) == obj


def test_values_read_only_versions():
    key = OffsetCommitKey("g", "t", 0)
    v4 = bytes.fromhex("0004000000000000002a00000005010000018bcfe5680000")
    assert decode_value(key, v4) == OffsetCommitValue(42, 5, "", TS)
    v0 = bytes.fromhex("0000000000000000002a0002686900000" "18bcfe56800")
    assert decode_value(key, v0) == OffsetCommitValue(42, -1, "hi", TS)
    assert decode_value(key, None) is None
    # GroupMetadataValue v0: no rebalance timeout, no state timestamp, no instance id
    v0g = bytes.fromhex("0000" "0001" "78" "00000002" "0001" "72" "0001" "6d" "00000001"
                        "0001" "6d" "0001" "63" "0001" "68" "00002710" "00000000" "00000000")
    got = decode_value(GroupMetadataKey("g"), v0g)
    assert got == GroupMetadataValue("x", 2, "r", "m", -1, (
        MemberMetadata("m", None, "c", "h", -1, 10000, b"", b""),))
    assert decode_key(bytes.fromhex("0003000167")) == UnknownKey(3)


@pytest.mark.parametrize("group,expected50,expected3", [
    ("my-group", 12, 0), ("console-consumer-12345", 6, 0), ("test-group", 12, 2),
    ("polygenelubricants", 0, 0), ("", 0, 0), ("grüppe-€", 23, 1), ("😀group", 32, 1),
])
def test_partition_for(group, expected50, expected3):
    assert partition_for(group, 50) == expected50
    assert partition_for(group, 3) == expected3


def test_hashcode_min_value():
    assert java_string_hashcode("polygenelubricants") == -(2**31)
    assert java_string_hashcode("my-group") == -1906497762


def test_manual_clock_orders_and_replaces_timers():
    clock = ManualClock(start_ms=0)
    fired = []
    clock.schedule("a", 10, lambda: fired.append(("a", clock.now_ms())))
    clock.schedule("b", 5, lambda: fired.append(("b", clock.now_ms())))
    clock.schedule("a", 20, lambda: fired.append(("a2", clock.now_ms())))
    clock.schedule("c", 7, lambda: clock.schedule("d", 1, lambda: fired.append(("d", clock.now_ms()))))
    clock.cancel("b")
    clock.advance(9)
    assert fired == [("d", 8)]
    clock.advance(11)
    assert fired == [("d", 8), ("a2", 20)] and clock.now_ms() == 20
