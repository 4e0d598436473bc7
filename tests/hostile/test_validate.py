"""protocol/validate.py: the bounds check accepts every valid request and stops what kio
would allocate from (no I/O; a wrong answer here aborts the test process)."""

from __future__ import annotations

import random
import struct

import pytest

from kafkette.protocol.codec import DecodeError, codec, encode_request
from kafkette.protocol.headers import HeaderParser
from kafkette.protocol.validate import MalformedRequest, check_body
from tests.hostile.fuzz import mutate, random_entity, valid_request


def _kio_versions() -> list[tuple[int, int]]:
    known = []
    for key in range(100):
        for version in range(20):
            try:
                codec(key, version)
            except KeyError:
                continue
            known.append((key, version))
    return known


def _body(frame: bytes) -> tuple[bytes, int, object]:
    payload = frame[4:]
    key, version = struct.unpack_from(">hh", payload)
    api = codec(key, version)
    _client_id, offset = HeaderParser().parse(payload, api.flexible)
    return payload, offset, api


@pytest.mark.parametrize(("key", "version"), _kio_versions())
def test_every_valid_request_passes_and_decodes(key, version):
    rng = random.Random(key * 100 + version)
    api = codec(key, version)
    for _ in range(20):
        body = random_entity(rng, api.request_type)
        payload, offset, _api = _body(encode_request(key, version, 1, "t", body))
        check_body(api.request_type, payload, offset, 10**6)
        decoded = api.decode(payload, offset)  # kio accepts it too
        assert type(decoded) is api.request_type


def test_mutated_requests_are_checked_before_kio_allocates():
    """Counts and lengths off the wire: kio aborts the process if one gets through."""
    rng = random.Random(7)
    versions = _kio_versions()
    rejected = 0
    for _ in range(10_000):
        frame = valid_request(rng, *rng.choice(versions))
        if frame is None:
            continue
        payload, offset, api = _body(frame)
        mutated = mutate(rng, frame)[4:]
        try:
            api.decode(mutated, offset)
        except DecodeError:
            rejected += 1
    assert rejected > 2_500


@pytest.mark.parametrize(("body", "reason"), [
    (b"\x00\xff\xff\xff\xff\x0f\x00", "needs at least"),            # 2^32-2 keys
    (b"\x00\x00\x00", "non-nullable array coordinator_keys"),     # null array
    (b"\x00\x02\x05ab\x00", "runs past"),                         # key of 4 bytes, 2 left
    (b"\x00\x80\x80\x80\x80\x80\x01\x00", "varint longer than 5 bytes"),
    (b"\x00\x01\x01\x01\x05\x00", "tagged field 1 runs past"),     # 5 bytes, 1 left
])
def test_malformed_bodies(body, reason):
    with pytest.raises(MalformedRequest, match=reason):
        check_body(codec(10, 4).request_type, body, 0, 10**6)


def test_strings_longer_than_32767_bytes_are_malformed_bytes_are_not():
    heartbeat = codec(12, 0).request_type  # legacy strings: group_id, member_id
    ok = struct.pack(">h", 0x7FFF) + b"g" * 0x7FFF + b"\x00\x00\x00\x01" + b"\x00\x01m"
    check_body(heartbeat, ok, 0, 10)
    compact = codec(10, 4).request_type
    over = b"\x00\x02" + bytes([0x81, 0x80, 0x02]) + b"g" * 0x8000 + b"\x00"
    with pytest.raises(MalformedRequest, match="string field coordinator_keys had invalid length"):
        check_body(compact, over, 0, 10)
    produce = codec(0, 3).request_type  # records (bytes) may be longer
    records = b"r" * 40000
    body = (b"\xff\xff" + b"\xff\xff" + b"\x00\x00\x75\x30" + b"\x00\x00\x00\x01" + b"\x00\x01t"
            + b"\x00\x00\x00\x01" + b"\x00\x00\x00\x00" + struct.pack(">i", len(records)) + records)
    check_body(produce, body, 0, 10)


def test_element_limit_counts_every_array_and_tagged_field():
    find = codec(10, 4).request_type
    three_keys = b"\x00\x04\x01\x01\x01\x00"
    check_body(find, three_keys, 0, 3)
    with pytest.raises(MalformedRequest, match="element limit"):
        check_body(find, three_keys, 0, 2)
