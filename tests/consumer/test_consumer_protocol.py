"""Embedded consumer protocol (ConsumerProtocolSubscription / ConsumerProtocolAssignment v0-3):
hand-built bytes from Kafka's JSON schemas, and the repo's existing partial parsers."""

from __future__ import annotations

import struct

import pytest

from kafkette.coordinator.group import parse_subscription_topics
from kafkette.protocol.consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)


def s(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def i32(*values: int) -> bytes:
    return struct.pack(f">{len(values)}i", *values)


SUB = Subscription(("foo", "bar"), b"ud", (("foo", (0, 2)),), 7, "rack-1")
V0 = b"\x00\x00" + i32(2) + s("foo") + s("bar") + i32(2) + b"ud"
OWNED = i32(1) + s("foo") + i32(2, 0, 2)
V1 = b"\x00\x01" + V0[2:] + OWNED
V2 = b"\x00\x02" + V1[2:] + i32(7)
V3 = b"\x00\x03" + V2[2:] + s("rack-1")


@pytest.mark.parametrize("version,expected,decoded", [
    (0, V0, Subscription(("foo", "bar"), b"ud")),
    (1, V1, Subscription(("foo", "bar"), b"ud", (("foo", (0, 2)),))),
    (2, V2, Subscription(("foo", "bar"), b"ud", (("foo", (0, 2)),), 7)),
    (3, V3, SUB),
])
def test_subscription_versions(version, expected, decoded):
    assert encode_subscription(SUB, version) == expected
    assert decode_subscription(expected) == (version, decoded)
    assert parse_subscription_topics(expected) == ["foo", "bar"]


def test_subscription_nulls_newer_versions_and_trailing_bytes():
    empty = Subscription(())
    assert encode_subscription(empty, 3) == b"\x00\x03" + i32(0, -1, 0, -1) + b"\xff\xff"
    assert decode_subscription(encode_subscription(empty, 3)) == (3, empty)
    # a v4 written by a newer client: read with the v3 format, extra fields ignored
    assert decode_subscription(b"\x00\x04" + V3[2:] + b"future") == (4, SUB)
    for bad in (b"\x00", b"\xff\xff" + V0[2:], b"\x00\x01" + i32(5)):
        with pytest.raises(ConsumerProtocolError):
            decode_subscription(bad)


def test_assignment():
    a = Assignment((("foo", (1, 3)), ("bar", ())), None)
    expected = b"\x00\x03" + i32(2) + s("foo") + i32(2, 1, 3) + s("bar") + i32(0) + b"\xff\xff\xff\xff"
    assert encode_assignment(a) == expected
    assert decode_assignment(expected) == (3, a)
    assert decode_assignment(encode_assignment(Assignment(user_data=b"x"), 0)) == (
        0, Assignment((), b"x"))
    with pytest.raises(ConsumerProtocolError):
        decode_assignment(b"\x00\x00" + i32(1))


def test_assignment_reads_with_the_cli_and_pipeline_parsers():
    from kafkette.broker.admin_cli import decode_assignment as cli_decode

    data = encode_assignment(Assignment((("foo", (1, 3)), ("bar", (0,)))), 1)
    assert cli_decode(data) == [("foo", 1), ("foo", 3), ("bar", 0)]
