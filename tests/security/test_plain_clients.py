"""Real clients over SASL_PLAINTEXT with PLAIN: produce, consume in a group, commit; a wrong
password fails fast with the client's authentication error."""

from __future__ import annotations

import asyncio
import time

import pytest
from kafka import KafkaProducer
from kafka.errors import KafkaError

from .conftest import kafka_python_round_trip


@pytest.fixture
def broker(plain_sasl_broker):
    return plain_sasl_broker("alice", login="admin")


def kp_settings(password: str = "alice-secret") -> dict:
    return {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
            "sasl_plain_username": "alice", "sasl_plain_password": password}


def test_kafka_python_produce_consume_commit(broker):
    kafka_python_round_trip({"bootstrap_servers": broker.bootstrap, **kp_settings()})


def test_kafka_python_wrong_password_fails_fast(broker, caplog):
    started = time.monotonic()
    with pytest.raises(KafkaError):
        KafkaProducer(bootstrap_servers=broker.bootstrap, bootstrap_timeout_ms=3000,
                      **kp_settings("wrong"))
    assert time.monotonic() - started < 10
    # the client saw error 58 with Kafka's message (not a bare disconnect)
    assert any("SaslAuthenticationFailed" in r.getMessage()
               and "Invalid username or password" in r.getMessage()
               for r in caplog.records if r.name.startswith("kafka."))


def test_aiokafka_wrong_password_fails_fast(broker):
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaConnectionError

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap,
                                    security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                                    sasl_plain_username="alice", sasl_plain_password="wrong")
        try:
            with pytest.raises(KafkaConnectionError):
                await asyncio.wait_for(producer.start(), 10)
        finally:
            await producer.stop()

    asyncio.run(run())
