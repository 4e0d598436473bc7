"""What the security tests share: a broker whose SASL_PLAINTEXT listener takes PLAIN (users from
a JAAS line), a Java client's SCRAM properties file, a PLAIN login on the wire, a kafka-python
round trip, and what a test reads back from a broker or a client (its connections' principals,
the errors a producer reports)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from tests.wire import WireClient

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"


def plain_jaas(*users: str, login: str | None = None) -> str:
    """A PlainLoginModule JAAS line: each of ``users`` with the password "<user>-secret";
    ``login``, the username (password "<login>-secret") the broker itself logs in with."""
    options = [f'username="{login}" password="{login}-secret"'] if login else []
    options += [f'user_{user}="{user}-secret"' for user in users]
    return f"{PLAIN_LOGIN_MODULE} required {' '.join(options)};"


@pytest.fixture
def plain_sasl_broker(kafka_broker_factory: Callable[..., Any]) -> Callable[..., Any]:
    """Start a broker with one SASL_PLAINTEXT listener taking PLAIN:
    ``plain_sasl_broker("alice", "bob", login="admin", config={...})``; ``config`` adds to (or
    replaces) the listener's settings."""
    def start(*users: str, login: str | None = None,
              config: Mapping[str, str] | None = None) -> Any:
        return kafka_broker_factory({
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(*users, login=login),
            **(config or {}),
        })
    return start


def scram_properties(path: Path, broker: Any, user: str, password: str) -> str:
    """Write a Java client's properties file (what ``--command-config`` reads) that logs ``user``
    in to the SASL_SSL ``broker`` with SCRAM-SHA-512, trusting its CA; returns its path."""
    path.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{user}" password="{password}";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={broker.ca_file}\n")
    return str(path)


# On the wire -------------------------------------------------------------------------------------

def plain_token(user: str, password: str, authzid: str = "") -> bytes:
    """A PLAIN client message (RFC 4616)."""
    return f"{authzid}\0{user}\0{password}".encode()


def sasl_handshake(client: WireClient, mechanism: str = "PLAIN", version: int = 1) -> Any:
    return client.request(17, version, mechanism=mechanism)


def plain_login(client: WireClient, user: str, password: str) -> Any:
    """SaslHandshake v1 for PLAIN (asserted accepted), then the SaslAuthenticate v2 answer."""
    assert sasl_handshake(client).error_code == 0
    return client.request(36, 2, auth_bytes=plain_token(user, password))


def metadata(client: WireClient) -> Any:
    """A Metadata v12 answer for no topics (a request only a logged-in connection gets)."""
    return client.request(3, 12, topics=(), allow_auto_topic_creation=False,
                          include_topic_authorized_operations=False)


# Clients -----------------------------------------------------------------------------------------

def topic_and_group() -> tuple[str, str]:
    tag = uuid.uuid4().hex[:8]
    return f"t-{tag}", f"g-{tag}"


def kafka_python_round_trip(settings: Mapping[str, Any]) -> None:
    """kafka-python with ``settings`` (bootstrap_servers and security) produces five records,
    consumes them in a new group and commits: all five come back, the commit is offset 5."""
    topic, group = topic_and_group()
    producer = KafkaProducer(**settings)
    for i in range(5):
        producer.send(topic, f"m{i}".encode())
    producer.flush(10)
    producer.close()
    consumer = KafkaConsumer(topic, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, **settings)
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < 5 and time.monotonic() < deadline:
        for records in consumer.poll(500).values():
            got += [r.value for r in records]
    consumer.commit()
    assert consumer.committed(TopicPartition(topic, 0)) == 5
    consumer.close()
    assert got == [f"m{i}".encode() for i in range(5)]


def poll_for_errors(producer: Any, errors: list, seconds: float = 10) -> None:
    """Serve a confluent-kafka producer's callbacks until its error_cb appended to ``errors``,
    at most ``seconds``."""
    deadline = time.monotonic() + seconds
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)


def connected_principals(broker: Any) -> list[str]:
    """The principals of the in-process broker's open connections, sorted, each once."""
    return broker.runner.run(
        lambda: sorted({c.principal for c in broker.runner.broker.connections}))
