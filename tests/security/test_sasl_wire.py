"""SASL on the wire, frame by frame, as Kafka's SaslServerAuthenticator answers."""

from __future__ import annotations

import logging
import struct
import time
from datetime import timedelta
from uuid import UUID

import pytest

from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type
from kafkette.protocol.records import build_batch
from tests.wire import WireClient, entity

from .conftest import metadata, plain_token, sasl_handshake


@pytest.fixture
def broker(plain_sasl_broker):
    return plain_sasl_broker("alice", login="admin")


def test_plain_login_then_requests_are_served(broker):
    with WireClient(broker.bootstrap) as client:
        assert client.request(18, 3, client_software_name="t",
                              client_software_version="1").error_code == 0
        answer = sasl_handshake(client)
        assert answer.error_code == 0 and answer.mechanisms == ("PLAIN",)
        auth = client.request(36, 2, auth_bytes=plain_token("alice", "alice-secret"))
        assert auth.error_code == 0 and auth.auth_bytes == b""
        assert auth.session_lifetime.total_seconds() == 0
        assert metadata(client).brokers
        # after success: both SASL APIs are answered ILLEGAL_SASL_STATE (34)
        again = client.request(36, 2, auth_bytes=plain_token("alice", "alice-secret"))
        assert again.error_code == 34
        assert again.error_message == ("SaslAuthenticate request received after successful "
                                       "authentication")
        assert sasl_handshake(client).error_code == 34


def test_wrong_password_is_answered_58_after_the_delay_then_closed(broker, caplog):
    caplog.set_level(logging.INFO, "kafkette.security")
    with WireClient(broker.bootstrap) as client:
        assert sasl_handshake(client).error_code == 0
        started = time.monotonic()
        auth = client.request(36, 1, auth_bytes=plain_token("alice", "not-her-password"))
        assert time.monotonic() - started >= 0.09  # connection.failed.authentication.delay.ms
        assert auth.error_code == 58
        assert auth.error_message == "Authentication failed: Invalid username or password"
        assert client.is_closed_by_peer()
    lines = [r.getMessage() for r in caplog.records if "Failed authentication" in r.getMessage()]
    assert lines == ["Failed authentication with /127.0.0.1 (Authentication failed: Invalid "
                     "username or password)"]
    assert "not-her-password" not in caplog.text


@pytest.mark.parametrize("token, message", [
    (plain_token("", "x"), "Authentication failed: username not specified"),
    (plain_token("alice", ""), "Authentication failed: password not specified"),
    (b"alice\0alice-secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
    (plain_token("alice", "alice-secret", authzid="bob"),
     "Authentication failed: Client requested an authorization id that is different from "
     "username"),
    (plain_token("mallory", "alice-secret"), "Authentication failed: Invalid username or password"),
])
def test_plain_messages(broker, token, message):
    with WireClient(broker.bootstrap) as client:
        sasl_handshake(client)
        auth = client.request(36, 0, auth_bytes=token)
        assert (auth.error_code, auth.error_message) == (58, message)


def test_metadata_before_handshake_closes_without_an_answer(broker):
    with WireClient(broker.bootstrap) as client:
        client.send_raw(client.encode(3, 12, 5, topics=(), allow_auto_topic_creation=False,
                                      include_topic_authorized_operations=False))
        assert client.is_closed_by_peer()


def test_sasl_authenticate_before_handshake_closes(broker):
    with WireClient(broker.bootstrap) as client:
        client.send_raw(client.encode(36, 1, 5, auth_bytes=plain_token("alice", "alice-secret")))
        assert client.is_closed_by_peer()


def test_second_api_versions_closes(broker):
    with WireClient(broker.bootstrap) as client:
        assert client.request(18, 0).error_code == 0
        client.send_raw(client.encode(18, 0, 9))
        assert client.is_closed_by_peer()


def test_unknown_mechanism_answers_33_with_the_enabled_list_then_closes(broker):
    with WireClient(broker.bootstrap) as client:
        started = time.monotonic()
        answer = sasl_handshake(client, "SCRAM-SHA-512")
        assert time.monotonic() - started >= 0.09
        assert (answer.error_code, answer.mechanisms) == (33, ("PLAIN",))
        assert client.is_closed_by_peer()


def test_metadata_during_authenticate_gets_illegal_sasl_state_then_close(broker):
    with WireClient(broker.bootstrap) as client:
        sasl_handshake(client)
        topic = entity(request_type(3, 12), "topics", name="orders", topic_id=UUID(int=0))
        answer = client.request(3, 12, topics=(topic,), allow_auto_topic_creation=False,
                                include_topic_authorized_operations=False)
        assert [(t.name, t.error_code) for t in answer.topics] == [("orders", 34)]
        assert client.is_closed_by_peer()


def test_legacy_v0_handshake_then_raw_tokens(broker):
    with WireClient(broker.bootstrap) as client:
        assert sasl_handshake(client, version=0).error_code == 0
        token = plain_token("alice", "alice-secret")
        client.send_raw(struct.pack(">i", len(token)) + token)
        assert client.read_frame() == b""  # PLAIN's empty success token
        assert client.request(18, 3, client_software_name="t",
                              client_software_version="1").error_code == 0


def test_legacy_wrong_password_just_closes(broker):
    with WireClient(broker.bootstrap) as client:
        sasl_handshake(client, version=0)
        token = plain_token("alice", "nope")
        client.send_raw(struct.pack(">i", len(token)) + token)
        assert client.is_closed_by_peer()


def test_a_plaintext_broker_answers_the_sasl_apis_illegal_sasl_state(kafka_broker):
    with WireClient(kafka_broker.bootstrap) as client:
        assert sasl_handshake(client).error_code == 34
        assert client.request(36, 2, auth_bytes=b"").error_code == 34


def test_failed_client_leaves_others_served(broker):
    with WireClient(broker.bootstrap) as bad, WireClient(broker.bootstrap) as good:
        bad.send_raw(struct.pack(">i", 12) + b"\x16\x03\x01" + b"\x00" * 9)  # TLS-ish garbage
        assert bad.is_closed_by_peer()
        sasl_handshake(good)
        assert good.request(36, 2, auth_bytes=plain_token("alice", "alice-secret")).error_code == 0


def test_frames_before_authentication_are_limited_to_sasl_server_max_receive_size(broker):
    with WireClient(broker.bootstrap) as client:
        client.send_raw(struct.pack(">i", 524289) + b"\x00" * 64)
        assert client.is_closed_by_peer()
    with WireClient(broker.bootstrap) as client:  # after login, socket.request.max.bytes
        sasl_handshake(client)
        auth = client.request(36, 2, auth_bytes=plain_token("alice", "alice-secret"))
        assert auth.error_code == 0
        batch = build_batch([(None, b"x" * 600_000)], base_timestamp=0)
        cls = request_type(0, 9)
        topic_cls = item_type(cls, "topic_data")
        partition = make(item_type(topic_cls, "partition_data"), index=0, records=batch)
        answer = client.request(0, 9, make(cls, transactional_id=None, acks=1,
                                           timeout=timedelta(seconds=10),
                                           topic_data=(make(topic_cls, name="big",
                                                            partition_data=(partition,)),)))
        # the 600 kB frame was read and answered (the topic does not exist: not auto-created)
        assert answer.responses[0].partition_responses[0].error_code == 3
