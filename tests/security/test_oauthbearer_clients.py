"""OAUTHBEARER with unsecured JWTs: librdkafka's built-in token logs in (principal from the
token's sub); an expired token is refused with Kafka's JSON error; kafka-python's provider."""

from __future__ import annotations

import base64
import json
import time

from confluent_kafka import KafkaError, Producer

from .conftest import connected_principals, poll_for_errors


def unsecured_jwt(sub: str, exp: float) -> str:
    def part(data: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()
    return f"{part({'alg': 'none'})}.{part({'sub': sub, 'exp': exp, 'iat': exp - 3600})}."


def test_confluent_unsecured_token_logs_in_as_its_subject(kafka_secure_broker_factory):
    broker = kafka_secure_broker_factory("SASL_PLAINTEXT", ("OAUTHBEARER",), users={"alice": ""})
    producer = Producer(broker.confluent_config())
    producer.produce("oauth", b"x")
    assert producer.flush(20) == 0
    principals = connected_principals(broker)
    assert principals == ["User:alice"]


def test_confluent_expired_token_is_refused_with_the_json_error(kafka_secure_broker_factory):
    broker = kafka_secure_broker_factory("SASL_PLAINTEXT", ("OAUTHBEARER",), users={})
    errors: list = []
    producer = Producer({
        "bootstrap.servers": broker.bootstrap, "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "OAUTHBEARER", "error_cb": errors.append,
        "oauth_cb": lambda _config: (unsecured_jwt("alice", time.time() - 60),
                                     time.time() + 3600)})
    producer.produce("oauth", b"x")
    poll_for_errors(producer, errors)
    assert errors, "no error within 10 s"
    assert errors[0].code() == KafkaError._AUTHENTICATION
    assert '{"status":"invalid_token"}' in errors[0].str()
    assert producer.flush(0.5) == 1


def test_kafka_python_token_provider(kafka_secure_broker_factory):
    from kafka import KafkaProducer
    from kafka.net.sasl.oauth import AbstractTokenProvider

    class Provider(AbstractTokenProvider):
        def token(self) -> str:
            return unsecured_jwt("bob", time.time() + 600)

    broker = kafka_secure_broker_factory("SASL_PLAINTEXT", ("OAUTHBEARER",), users={})
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap,
                             security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
                             sasl_oauth_token_provider=Provider())
    producer.send("oauth", b"x").get(10)
    principals = connected_principals(broker)
    producer.close()
    assert "User:bob" in principals


def test_aiokafka_expired_token_gets_no_session(kafka_secure_broker_factory, caplog):
    """aiokafka ignores the JSON error challenge and goes on with Metadata: as Kafka, the broker
    answers it with Metadata's error form (ILLEGAL_SASL_STATE, for an all-topics request an
    empty answer) and closes, so the client never gets to produce."""
    import asyncio

    from aiokafka import AIOKafkaProducer
    from aiokafka.abc import AbstractTokenProvider
    from aiokafka.errors import KafkaError as AIOKafkaError

    class Expired(AbstractTokenProvider):
        async def token(self) -> str:
            return unsecured_jwt("alice", time.time() - 60)

    broker = kafka_secure_broker_factory("SASL_PLAINTEXT", ("OAUTHBEARER",), users={})

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap,
                                    security_protocol="SASL_PLAINTEXT",
                                    sasl_mechanism="OAUTHBEARER",
                                    sasl_oauth_token_provider=Expired())
        try:
            await asyncio.wait_for(producer.start(), 15)
            await asyncio.wait_for(producer.send_and_wait("oauth", b"x"), 5)
        finally:
            await producer.stop()

    import pytest

    with pytest.raises((AIOKafkaError, asyncio.TimeoutError)):
        asyncio.run(run())
    assert ("Unexpected Kafka request of type METADATA during SASL authentication."
            in caplog.text)
