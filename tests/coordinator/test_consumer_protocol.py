"""protocol.consumer_protocol: the one codec for ConsumerProtocolSubscription/Assignment bytes,
tolerant like Kafka's ConsumerProtocol (newer versions, trailing bytes)."""

from __future__ import annotations

import struct

import pytest

from kafkette.coordinator.group.classic.classic_group import ClassicGroup, GroupState, Member
from kafkette.protocol.consumer_protocol import (
    ConsumerProtocolError,
    assignment_partitions,
    decode_subscription,
    subscription_topics,
)


def _str(s: str) -> bytes:
    return struct.pack(">h", len(s)) + s.encode()


def _subscription(version: int, topics: list[str], owned: list[tuple[str, list[int]]] | None = None,
                  generation: int = -1, rack: str | None = None) -> bytes:
    out = struct.pack(">hi", version, len(topics)) + b"".join(_str(t) for t in topics)
    out += struct.pack(">i", -1)  # user data: null
    if version >= 1:
        out += struct.pack(">i", len(owned or []))
        for topic, parts in owned or []:
            out += _str(topic) + struct.pack(f">i{len(parts)}i", len(parts), *parts)
    if version >= 2:
        out += struct.pack(">i", generation)
    if version >= 3:
        out += struct.pack(">h", -1) if rack is None else _str(rack)
    return out


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_of_every_version(version):
    data = _subscription(version, ["a", "b"], [("a", [0, 2])], generation=7, rack="r1")
    decoded = decode_subscription(data)
    assert list(decoded.topics) == ["a", "b"]
    if version >= 1:
        assert [(tp.topic, list(tp.partitions)) for tp in decoded.owned_partitions] == [("a", [0, 2])]
    if version >= 2:
        assert decoded.generation_id == 7
    if version >= 3:
        assert decoded.rack_id == "r1"


def test_newer_versions_and_trailing_bytes_are_read_with_the_newest_schema():
    future = _subscription(3, ["x"], [], rack=None)
    future = struct.pack(">h", 9) + future[2:] + b"\x00\x00\x00\x05more!"
    assert subscription_topics(future) == ["x"]
    assignment = (struct.pack(">hi", 1, 1) + _str("t") + struct.pack(">iii", 2, 4, 5)
                  + struct.pack(">i", 3) + b"abc" + b"trailing")
    assert assignment_partitions(assignment) == [("t", 4), ("t", 5)]


@pytest.mark.parametrize("data", [
    b"", b"\x00", b"\xff\xff\x00\x00\x00\x00",             # short; negative version
    b"\x00\x00\x00\x00\x00\x02\x00\x01", b"\x00\x00\x00\x00\x00\x05",  # truncated arrays
    struct.pack(">hih", 0, 1, -1) + struct.pack(">i", -1),  # null topic name
    struct.pack(">hih", 0, 1, 2) + b"\xff\xfe" + struct.pack(">i", -1),  # not UTF-8
    struct.pack(">hi", 0, 2**31 - 1),                       # absurd count
])
def test_malformed_bytes_raise_one_error_type(data):
    with pytest.raises(ConsumerProtocolError):
        subscription_topics(data)
    with pytest.raises(ConsumerProtocolError):
        assignment_partitions(data)


def test_classic_group_subscribed_topics_use_the_codec():
    group = ClassicGroup("g", 0, protocol_type="consumer", protocol_name="range")
    for i, data in enumerate((_subscription(3, ["a"], [("a", [0])]), _subscription(0, ["b"]))):
        group.add(Member(f"m{i}", None, "c", "h", 1, 1, "consumer", (("range", data),)))
    group.state = GroupState.STABLE
    assert group.compute_subscribed_topics() == frozenset({"a", "b"})
    group.add(Member("bad", None, "c", "h", 1, 1, "consumer", (("range", b"\x00"),)))
    assert group.compute_subscribed_topics() is None  # unknown: offsets never expire by topic
