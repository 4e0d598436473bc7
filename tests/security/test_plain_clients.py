"""Real clients over SASL_PLAINTEXT with PLAIN: produce, consume in a group, commit; a wrong
password fails fast with the client's authentication error."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="admin-secret" user_alice="alice-secret";')


@pytest.fixture
def broker(kafka_broker_factory):
    return kafka_broker_factory({
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    })


def kp_settings(password: str = "alice-secret") -> dict:
    return {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
            "sasl_plain_username": "alice", "sasl_plain_password": password}


def test_kafka_python_produce_consume_commit(broker):
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, **kp_settings())
    for i in range(5):
        producer.send(topic, f"m{i}".encode())
    producer.flush(10)
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             **kp_settings())
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < 5 and time.monotonic() < deadline:
        for records in consumer.poll(500).values():
            got += [r.value for r in records]
    consumer.commit()
    from kafka import TopicPartition

    assert consumer.committed(TopicPartition(topic, 0)) == 5
    consumer.close()
    assert got == [f"m{i}".encode() for i in range(5)]


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
