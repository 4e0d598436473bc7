"""Re-authentication (KIP-368), session expiry, and the SCRAM credential APIs on the wire;
SCRAM users survive a SIGKILL."""

from __future__ import annotations

import socket
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from kafkette.broker import testing as broker_testing
from kafkette.broker.security.scram import salted_password
from kafkette.protocol.codec import request_type
from tests.wire import WireClient, entity

from .conftest import metadata, plain_login, poll_for_errors


@pytest.fixture
def broker(plain_sasl_broker):
    return plain_sasl_broker("alice", "bob", config={
        "listener.name.sasl_plaintext.plain.connections.max.reauth.ms": "1500"})


def test_session_lifetime_and_reauthentication(broker):
    with WireClient(broker.bootstrap) as client:
        first = plain_login(client, "alice", "alice-secret")
        assert first.error_code == 0
        assert first.session_lifetime.total_seconds() == 1.5
        assert metadata(client).brokers
        # re-authentication on the live connection
        again = plain_login(client, "alice", "alice-secret")
        assert (again.error_code, again.session_lifetime.total_seconds()) == (0, 1.5)
        # a second one within a second is not a re-authentication: the handler answers 34
        assert client.request(17, 1, mechanism="PLAIN").error_code == 34
        assert metadata(client).brokers


def test_reauthentication_cannot_change_the_principal(broker):
    with WireClient(broker.bootstrap) as client:
        assert plain_login(client, "alice", "alice-secret").error_code == 0
        answer = plain_login(client, "bob", "bob-secret")
        assert answer.error_code == 58
        assert answer.error_message == ("Cannot change principals during re-authentication "
                                        "from User.alice: User.bob")
        assert client.is_closed_by_peer()


def test_an_expired_session_is_closed_at_its_next_request(broker):
    with WireClient(broker.bootstrap) as client:
        assert plain_login(client, "alice", "alice-secret").error_code == 0
        assert metadata(client).brokers
        time.sleep(1.6)
        client.send_raw(client.encode(3, 12, 99, topics=(), allow_auto_topic_creation=False,
                                      include_topic_authorized_operations=False))
        assert client.is_closed_by_peer()


def upsertion(name: str, mechanism: int = 2, iterations: int = 4096, password: str = "pw"):
    salt = b"somesalt"
    name_of = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
    salted = salted_password(name_of.get(mechanism, "SCRAM-SHA-512"), password, salt, iterations)
    return entity(request_type(51, 0), "upsertions", name=name, mechanism=mechanism,
                  iterations=iterations, salt=salt, salted_password=salted)


def deletion(name: str, mechanism: int = 2):
    return entity(request_type(51, 0), "deletions", name=name, mechanism=mechanism)


def user(name: str):
    return entity(request_type(50, 0), "users", name=name)


def test_alter_and_describe_user_scram_credentials_as_kafka(kafka_broker):
    with WireClient(kafka_broker.bootstrap) as client:
        answer = client.request(51, 0, deletions=(deletion("ghost"),), upsertions=(
            upsertion("alice"), upsertion("bob", mechanism=1, iterations=8192),
            upsertion("carol", iterations=100), upsertion("dave", iterations=20000),
            upsertion("", iterations=4096), upsertion("erin", mechanism=7),
            upsertion("frank"), upsertion("frank", mechanism=1)))
        results = {r.user: (r.error_code, r.error_message) for r in answer.results}
        assert results == {
            "alice": (0, None), "bob": (0, None),
            "ghost": (91, "Attempt to delete a user credential that does not exist"),
            "carol": (93, "Too few iterations"), "dave": (93, "Too many iterations"),
            "": (93, "Username must not be empty"), "erin": (33, "Unknown SCRAM mechanism"),
            "frank": (92, "A user credential cannot be altered twice in the same request")}
        described = client.request(50, 0, users=(user("alice"), user("bob"), user("nobody"),
                                                 user("bob")))
        by_user = {r.user: r for r in described.results}
        assert [(c.mechanism, c.iterations) for c in by_user["alice"].credential_infos] == [(2, 4096)]
        assert (by_user["bob"].error_code, by_user["bob"].error_message) == (
            92, "Cannot describe SCRAM credentials for the same user twice in a single request: bob")
        assert (by_user["nobody"].error_code, by_user["nobody"].error_message) == (
            91, "Attempt to describe a user credential that does not exist: nobody")
        everyone = client.request(50, 0, users=None)
        assert sorted(r.user for r in everyone.results) == ["alice", "bob"]
        gone = client.request(51, 0, deletions=(deletion("alice"),), upsertions=())
        assert [(r.user, r.error_code) for r in gone.results] == [("alice", 0)]
        assert client.request(50, 0, users=(user("alice"),)).results[0].error_code == 91


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_scram_users_survive_sigkill(tmp_path):
    sasl_port = free_port()
    config = broker_testing.test_config(str(tmp_path), **{
        "listeners": f"PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512"})
    with broker_testing.BrokerProcess(config) as proc:
        admin = AdminClient({"bootstrap.servers": proc.bootstrap})
        futures = admin.alter_user_scram_credentials([
            UserScramCredentialUpsertion("alice", ScramCredentialInfo(
                ScramMechanism.SCRAM_SHA_512, 8192), b"alice-secret"),
            UserScramCredentialUpsertion("bob", ScramCredentialInfo(
                ScramMechanism.SCRAM_SHA_512, 4096), b"bob-secret")])
        for future in futures.values():
            future.result(10)
        deleted = admin.alter_user_scram_credentials([
            UserScramCredentialDeletion("bob", ScramMechanism.SCRAM_SHA_512)])
        for future in deleted.values():
            future.result(10)
        proc.kill()
        proc.start()
        settings = {"bootstrap.servers": f"127.0.0.1:{sasl_port}",
                    "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "SCRAM-SHA-512",
                    "sasl.username": "alice", "sasl.password": "alice-secret"}
        producer = Producer(settings)
        producer.produce("after-kill", b"x")
        assert producer.flush(20) == 0
        admin = AdminClient({"bootstrap.servers": proc.bootstrap})
        described = admin.describe_user_scram_credentials(["alice"])
        info = described["alice"].result(10).scram_credential_infos
        assert [(i.mechanism, i.iterations) for i in info] == [(ScramMechanism.SCRAM_SHA_512,
                                                                8192)]
        errors: list = []
        bob = Producer({**settings, "sasl.username": "bob", "sasl.password": "bob-secret",
                        "error_cb": errors.append})
        bob.produce("after-kill", b"x")
        poll_for_errors(bob, errors)
        assert errors and "SCRAM-SHA-512" in errors[0].str()


def test_clients_reauthenticate_on_their_connection(kafka_secure_broker_factory, caplog):
    """kafka-python and librdkafka re-authenticate (KIP-368) before connections.max.reauth.ms
    ends: their connections are never closed as expired and keep producing."""
    import logging

    from kafka import KafkaProducer

    caplog.set_level(logging.DEBUG, "kafkette.security")
    broker = kafka_secure_broker_factory("SASL_PLAINTEXT", ("SCRAM-SHA-512",),
                                         config={"connections.max.reauth.ms": "2000"})
    kp = KafkaProducer(**broker.kafka_python_settings())
    ck = Producer(broker.confluent_config())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        kp.send("reauth", b"k").get(10)
        ck.produce("reauth", b"c")
        assert ck.flush(10) == 0
        time.sleep(0.25)
    kp.close()
    assert "Disconnecting expired channel" not in caplog.text  # logged by the connection
    messages = [r.getMessage() for r in caplog.records if r.name == "kafkette.security"]
    assert sum(m.startswith("Re-authenticated") for m in messages) >= 2
