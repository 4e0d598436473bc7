"""Legal-size requests asking for millions of elements cannot freeze the broker.

A 5 MiB FindCoordinator v4 of 5.2 M empty keys and a 20 MiB OffsetFetch v6 of 7 M empty topics
each stalled the event loop for ~46 s at 2.2 GB. ``request.max.elements`` bounds the work one
request may cause: over it, the request is malformed and its connection closes; under it, it
is answered while everyone else keeps being served.
"""

from __future__ import annotations

import logging
import struct

from kafkette.protocol.varint import encode_uvarint
from tests.hostile.healthy import HealthyClient
from tests.wire import WireClient


def _flexible_frame(api_key: int, version: int, body: bytes) -> bytes:
    payload = struct.pack(">hhih", api_key, version, 1, -1) + b"\x00" + body
    return struct.pack(">i", len(payload)) + payload


def find_coordinator_v4(keys: int) -> bytes:
    """key_type 0, ``keys`` empty coordinator keys."""
    return _flexible_frame(10, 4, b"\x00" + encode_uvarint(keys + 1) + b"\x01" * keys + b"\x00")


def offset_fetch_v6(topics: int) -> bytes:
    """Group "g", ``topics`` topics with an empty name and no partitions."""
    return _flexible_frame(9, 6, b"\x02g" + encode_uvarint(topics + 1) + b"\x01\x01\x00" * topics
                           + b"\x00\x00")


def _send_beside_healthy(broker, frame: bytes) -> tuple[HealthyClient, WireClient]:
    healthy = HealthyClient(broker.bootstrap)
    healthy.start()
    hostile = WireClient(broker.bootstrap, timeout=60)
    hostile.send_raw(frame)
    return healthy, hostile


def test_millions_of_elements_close_the_connection(kafka_broker_factory, caplog):
    broker = kafka_broker_factory()
    caplog.set_level(logging.WARNING, logger="kafkette.connection")
    for frame in (find_coordinator_v4(5_200_000), offset_fetch_v6(6_900_000)):
        assert len(frame) > 5_000_000
        healthy, hostile = _send_beside_healthy(broker, frame)
        with healthy, hostile:
            assert hostile.is_closed_by_peer(30)
            healthy.wait_rounds(5)
        assert healthy.errors == []
        assert healthy.max_wait < 2, f"healthy client waited {healthy.max_wait:.2f} s"
    lines = [r.getMessage() for r in caplog.records if r.name == "kafkette.connection"]
    assert len(lines) == 2 and all("exceeds the element limit" in line for line in lines), lines


def test_request_under_the_element_limit_is_answered_without_stalling_others(
        kafka_broker_factory):
    broker = kafka_broker_factory()
    limit = int(broker.broker.config["request.max.elements"])
    healthy, hostile = _send_beside_healthy(broker, offset_fetch_v6(limit - 1))
    with healthy, hostile:
        _corr, response = hostile.receive(9, 6)
        assert len(response.topics) == limit - 1
        healthy.wait_rounds(5)
    assert healthy.errors == []
    assert healthy.max_wait < 2, f"healthy client waited {healthy.max_wait:.2f} s"
