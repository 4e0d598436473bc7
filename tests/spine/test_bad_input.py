"""Bad input closes only the offending connection, with one log line; others keep being served."""

from __future__ import annotations

import logging
import os
import struct

import pytest

from kafkette.protocol.build import make
from kafkette.protocol.codec import encode_request, request_type
from tests.wire import WireClient

MAX_REQUEST = 4096


@pytest.fixture
def broker(kafka_broker_factory):
    return kafka_broker_factory(**{"socket.request.max.bytes": MAX_REQUEST})


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def metadata_request(version: int = 12) -> bytes:
    body = make(request_type(3, version), topics=(), allow_auto_topic_creation=False,
                include_topic_authorized_operations=False)
    return encode_request(3, version, 7, "bad-input-test", body)


def join_group_request() -> bytes:
    cls = request_type(11, 5)
    proto = make(cls.__dataclass_fields__["protocols"].type.__args__[0], name="range",
                 metadata=b"\x00\x01")
    body = make(cls, group_id="g", session_timeout=10000, rebalance_timeout=10000,
                member_id="", group_instance_id=None, protocol_type="consumer",
                protocols=(proto,))
    return encode_request(11, 5, 9, "bad-input-test", body)


BAD_INPUTS = {
    "garbage": frame(os.urandom(64)),
    "negative-size": struct.pack(">i", -5) + b"abc",
    "oversized": struct.pack(">i", MAX_REQUEST + 1) + b"\x00" * 16,
    "unknown-api-key": frame(struct.pack(">hhih", 9999, 0, 1, -1)),
    "unsupported-version": frame(struct.pack(">hhih", 3, 99, 1, -1)),
    "removed-produce-v2": frame(struct.pack(">hhih", 0, 2, 1, -1) + b"\x00" * 10),
    "truncated-body": frame(join_group_request()[4:-12]),
    "short-header": frame(b"\x00\x03"),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_closes_only_that_connection(broker, caplog, name):
    caplog.set_level(logging.WARNING, logger="kafkette.connection")
    with WireClient(broker.bootstrap) as good, WireClient(broker.bootstrap) as bad:
        assert good.request(18, 3, client_software_name="t", client_software_version="1").error_code == 0
        bad.send_raw(BAD_INPUTS[name])
        assert bad.is_closed_by_peer(), f"{name}: broker kept the connection open"
        response = good.request(3, 12, topics=(), allow_auto_topic_creation=False,
                                include_topic_authorized_operations=False)
        assert response.brokers[0].node_id == 1
    closing = [r for r in caplog.records if "closing connection" in r.getMessage()]
    assert len(closing) == 1, [r.getMessage() for r in caplog.records]


def test_client_disconnecting_mid_request(broker):
    with WireClient(broker.bootstrap) as half:
        half.send_raw(metadata_request()[:10])
    with WireClient(broker.bootstrap) as good:
        assert good.request(18, 0).error_code == 0


def test_trailing_bytes_after_body_are_tolerated(broker):
    """librdkafka sends Metadata v12 with 3 extra bytes (librdkafka #5049)."""
    with WireClient(broker.bootstrap) as client:
        raw = metadata_request()
        client.send_raw(struct.pack(">i", len(raw) - 4 + 3) + raw[4:] + b"\x00\x00\x00")
        frame_bytes = client.read_frame()
        assert struct.unpack_from(">i", frame_bytes)[0] == 7


def test_unsupported_api_versions_version_gets_v0_answer(broker):
    """KIP-511: answered as v0 with UNSUPPORTED_VERSION and, as Kafka's
    ApiVersionsRequest.getErrorResponse, only ApiVersions' own version range to downgrade to."""
    from kafkette.protocol.codec import decode_response

    with WireClient(broker.bootstrap) as client:
        client.send_raw(frame(struct.pack(">hhih", 18, 42, 5, -1) + b"\x00\x00\x00"))
        corr, response = decode_response(18, 0, client.read_frame())
    assert corr == 5
    assert response.error_code == 35
    keys = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert keys == {18: (0, 4)}


def test_api_versions_rejects_bad_software_name(broker):
    with WireClient(broker.bootstrap) as client:
        response = client.request(18, 3, client_software_name="bad name!",
                                  client_software_version="1.0")
    assert response.error_code == 42  # INVALID_REQUEST


def test_pipelined_requests_are_answered_in_order(broker):
    with WireClient(broker.bootstrap) as client:
        corrs = [client.send(18, 2, make(request_type(18, 2))) for _ in range(50)]
        corrs.append(client.send(3, 12, make(request_type(3, 12), topics=None,
                                             allow_auto_topic_creation=False,
                                             include_topic_authorized_operations=False)))
        got = [client.receive(18, 2)[0] for _ in range(50)]
        got.append(client.receive(3, 12)[0])
    assert got == corrs


def test_idle_connections_are_closed(kafka_broker_factory):
    broker = kafka_broker_factory(**{"connections.max.idle.ms": 200})
    with WireClient(broker.bootstrap) as client:
        assert client.request(18, 0).error_code == 0
        assert client.is_closed_by_peer(timeout=5)
