"""Requests whose counts or lengths lie close their connection; the broker lives on.

Each frame below made kio's native reader allocate from a count off the wire (kafkette
before protocol/validate.py aborted with SIGABRT "memory allocation of N bytes failed").
"""

from __future__ import annotations

import logging
import struct
import uuid

import pytest
from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import encode_request, request_type
from kafkette.protocol.varint import encode_uvarint
from tests.hostile.healthy import HealthyClient
from tests.wire import WireClient

ABORTING_FRAMES = {
    "metadata-v12": "000000130003000c00000001ffff00ffffffff0f000000",
    "find-coordinator-v4": "00000012000a000400000001ffff0000ffffffff0f00",
    "offset-commit-v8": "000000190008000800000001ffff000267ffffffff0100ffffffff0f00",
    "find-coordinator-v6": "00000019000a0006000000010002667a0000fffffffe2d67726f757000",
    "offset-fetch-v1": "000000110009000100000001ffff0001677fffffff",
    "join-group-v0": "00000021000b000000000001ffff0001670000271000000008636f6e73756d6572"
                     "7fffffff",
    "produce-v3": "000000160000000300000001ffffffffffff0000138840000000",
}


def _find_coordinator_v4(key: str) -> bytes:
    return encode_request(10, 4, 5, "hostile", make(request_type(10, 4), key_type=0,
                                                  coordinator_keys=(key,)))


def _null_protocols_join_v5() -> bytes:
    """JoinGroup v5 whose non-nullable protocols array is null (count -1)."""
    frame = encode_request(11, 5, 6, "hostile", make(
        request_type(11, 5), group_id="g", session_timeout=10000, rebalance_timeout=10000,
        member_id="", group_instance_id=None, protocol_type="consumer", protocols=()))
    assert frame.endswith(b"\x00\x00\x00\x00")  # the empty protocols array, last field
    return frame[:-4] + struct.pack(">i", -1)


def _join_v5_with_longest_client_id() -> bytes:
    """Legal, but the member id Kafka derives from it (client id + "-" + uuid) is too long for
    the response's string: the connection closes with one line, no traceback."""
    return encode_request(11, 5, 7, "c" * 0x7FFF, make(
        request_type(11, 5), group_id="g", session_timeout=10000, rebalance_timeout=10000,
        member_id="", group_instance_id=None, protocol_type="consumer",
        protocols=(make(item_type(request_type(11, 5), "protocols"), name="range",
                        metadata=b""),)))


def _header_tags(count: int, payload: bytes) -> bytes:
    """ApiVersions v3 whose flexible request header announces ``count`` tagged fields."""
    body = struct.pack(">hhih", 18, 3, 1, -1) + encode_uvarint(count) + payload
    return struct.pack(">i", len(body)) + body


MALFORMED_FRAMES = {
    **{name: bytes.fromhex(hex_frame) for name, hex_frame in ABORTING_FRAMES.items()},
    "null-required-array": _null_protocols_join_v5(),
    "group-id-over-32767-bytes": _find_coordinator_v4("g" * 40000),
    "member-id-over-32767-bytes": _join_v5_with_longest_client_id(),
    "header-tag-count-2^32": _header_tags(0xFFFFFFFF, b""),
    "header-of-20000-empty-tags": _header_tags(20000, b"\x00\x00" * 20000),
}


@pytest.mark.parametrize("name", sorted(MALFORMED_FRAMES))
def test_malformed_request_closes_only_its_connection(kafka_broker_factory, caplog, name):
    broker = kafka_broker_factory()
    caplog.set_level(logging.INFO, logger="kafkette")
    with HealthyClient(broker.bootstrap) as healthy:
        healthy.start()
        with WireClient(broker.bootstrap) as hostile:
            hostile.send_raw(MALFORMED_FRAMES[name])
            assert hostile.is_closed_by_peer(), f"{name}: the connection stayed open"
        healthy.wait_rounds()
    assert healthy.errors == []
    assert healthy.max_wait < 2, f"healthy client waited {healthy.max_wait:.2f} s"
    connection_lines = [r for r in caplog.records if r.name == "kafkette.connection"]
    assert len(connection_lines) == 1, [r.getMessage() for r in connection_lines]
    assert "closing connection" in connection_lines[0].getMessage()
    assert connection_lines[0].exc_info is None  # one line, no traceback


def test_string_of_32767_bytes_is_still_served(kafka_broker):
    """The limit is Kafka's: 0x7fff bytes is the longest string a request may hold."""
    with WireClient(kafka_broker) as client:
        client.send_raw(_find_coordinator_v4("g" * 0x7FFF))
        _corr, response = client.receive(10, 4)
        assert response.coordinators[0].key == "g" * 0x7FFF


def test_metadata_v11_topic_by_id_is_an_invalid_request(kafka_broker):
    """v10-11 carry topic ids but may not use them; the response has no null names."""
    metadata = request_type(3, 11)
    with WireClient(kafka_broker) as client:
        response = client.request(3, 11, topics=(
            make(item_type(metadata, "topics"), name=None, topic_id=uuid.uuid4()),
            make(item_type(metadata, "topics"), name="named", topic_id=uuid.UUID(int=0))),
            allow_auto_topic_creation=True, include_cluster_authorized_operations=False,
            include_topic_authorized_operations=False)
        assert [(t.name, t.error_code) for t in response.topics] == [
            ("", ErrorCode.invalid_request), ("named", ErrorCode.invalid_request)]
        assert client.request(18, 0).error_code == 0  # the connection stays open
