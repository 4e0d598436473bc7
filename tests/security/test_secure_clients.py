"""Real clients against secured listeners, through the plugin's secured broker: each produces,
consumes in a group and commits; a wrong password fails fast with an authentication error."""

from __future__ import annotations

import asyncio
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from kafka import KafkaConsumer

from .conftest import (
    connected_principals,
    kafka_python_round_trip,
    poll_for_errors,
    topic_and_group,
)


def confluent_round_trip(settings: dict) -> None:
    topic, group = topic_and_group()
    producer = Producer(settings)
    for i in range(5):
        producer.produce(topic, f"m{i}".encode())
    assert producer.flush(20) == 0
    consumer = Consumer({**settings, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < 5 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got.append(message.value())
    consumer.commit(asynchronous=False)
    committed = consumer.committed([CTopicPartition(topic, 0)], timeout=10)
    consumer.close()
    assert got == [f"m{i}".encode() for i in range(5)]
    assert committed[0].offset == 5


def test_confluent_sasl_ssl_scram_sha_512(kafka_secure_broker_factory):
    broker = kafka_secure_broker_factory("SASL_SSL", ("SCRAM-SHA-512",))
    confluent_round_trip(broker.confluent_config())


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_aiokafka_sasl_ssl(kafka_secure_broker_factory, mechanism):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.structs import TopicPartition

    broker = kafka_secure_broker_factory("SASL_SSL", (mechanism,))
    topic, group = topic_and_group()

    async def run() -> tuple[list[bytes], int | None]:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap,
                                    **broker.aiokafka_settings())
        await producer.start()
        try:
            for i in range(5):
                await producer.send_and_wait(topic, f"m{i}".encode())
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group,
                                    auto_offset_reset="earliest", enable_auto_commit=False,
                                    **broker.aiokafka_settings())
        await consumer.start()
        got: list[bytes] = []
        try:
            deadline = time.monotonic() + 30
            while len(got) < 5 and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                got += [r.value for records in batches.values() for r in records]
            await consumer.commit()
            committed = await consumer.committed(TopicPartition(topic, 0))
        finally:
            await consumer.stop()
        return got, committed

    got, committed = asyncio.run(run())
    assert got == [f"m{i}".encode() for i in range(5)]
    assert committed == 5


def test_kafka_python_sasl_plaintext_scram(kafka_secure_broker_factory):
    broker = kafka_secure_broker_factory("SASL_PLAINTEXT", ("SCRAM-SHA-256",))
    kafka_python_round_trip(broker.kafka_python_settings())


def test_confluent_wrong_scram_password_reports_authentication_error(kafka_secure_broker_factory):
    broker = kafka_secure_broker_factory("SASL_SSL", ("SCRAM-SHA-512",))
    errors: list = []
    producer = Producer(broker.confluent_config({"error_cb": errors.append},
                                                password="not-it"))
    producer.produce("t", b"x")
    poll_for_errors(producer, errors)
    assert errors, "no error reported within 10 s"
    assert errors[0].code() == KafkaError._AUTHENTICATION
    assert ("Authentication failed during authentication due to invalid credentials with SASL "
            "mechanism SCRAM-SHA-512") in errors[0].str()


def test_aiokafka_wrong_password_fails_fast_over_tls(kafka_secure_broker_factory):
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaConnectionError

    broker = kafka_secure_broker_factory("SASL_SSL", ("SCRAM-SHA-256",))

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap,
                                    **broker.aiokafka_settings(password="not-it"))
        try:
            with pytest.raises(KafkaConnectionError):
                await asyncio.wait_for(producer.start(), 10)
        finally:
            await producer.stop()

    started = time.monotonic()
    asyncio.run(run())
    assert time.monotonic() - started < 10


def test_mutual_tls_principal_is_the_certificate_subject(kafka_secure_broker_factory):
    broker = kafka_secure_broker_factory("SSL", (), users={}, client_auth="required")
    certificate = broker.client_certificate("alice", organizational_unit="dev")
    producer = Producer(broker.confluent_config(certificate=certificate))
    producer.produce("mtls", b"x")
    assert producer.flush(20) == 0
    principals = connected_principals(broker)
    assert principals == ["User:CN=alice,OU=dev,O=kafkette test"]
    assert certificate.subject == "CN=alice,OU=dev,O=kafkette test"


def test_principal_mapping_rules(kafka_secure_broker_factory):
    broker = kafka_secure_broker_factory(
        "SSL", (), users={}, client_auth="required",
        config={"ssl.principal.mapping.rules": "RULE:^CN=(.*?),OU=.*$/$1/U,DEFAULT"})
    certificate = broker.client_certificate("alice", organizational_unit="dev")
    consumer = KafkaConsumer(**broker.kafka_python_settings(certificate=certificate))
    consumer.topics()  # a request over the mutually authenticated connection
    principals = connected_principals(broker)
    consumer.close()
    assert principals == ["User:ALICE"]


def test_ssl_without_a_required_client_certificate_is_refused(kafka_secure_broker_factory, caplog):
    broker = kafka_secure_broker_factory("SSL", (), users={}, client_auth="required")
    errors: list = []
    producer = Producer(broker.confluent_config({"error_cb": errors.append}))
    producer.produce("t", b"x")
    poll_for_errors(producer, errors)
    assert errors
    assert producer.flush(1) == 1
    assert "Failed authentication with /127.0.0.1 (SSL handshake failed" in caplog.text
