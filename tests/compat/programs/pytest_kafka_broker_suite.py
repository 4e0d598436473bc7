"""A test module written for pytest-kafka-broker (nasa-gcn/pytest-kafka-broker 1.0.0), unchanged.

tests/compat/test_pytest_plugin.py copies it into a fresh directory as ``test_ported.py`` with
a pytest.ini using pytest-kafka-broker's ``kafka_broker_extra_config`` and runs ``pytest --kafka``
on it with only kafkette installed.
"""

import uuid

import pytest
from confluent_kafka.admin import NewTopic
from pytest_kafka_broker import KafkaBrokerContext


def test_the_fixture_is_a_kafka_broker_context(kafka_broker: KafkaBrokerContext):
    assert isinstance(kafka_broker, KafkaBrokerContext)


def test_bootstrap_server(kafka_broker):
    host, port = kafka_broker.bootstrap_server.split(":")
    assert host == "127.0.0.1" and int(port) > 0
    config = kafka_broker.config({"client.id": "ported"})
    assert config == {"client.id": "ported", "bootstrap.servers": kafka_broker.bootstrap_server,
                      "security.protocol": "PLAINTEXT"}


def test_admin_producer_consumer(kafka_broker):
    topic = f"t-{uuid.uuid4().hex[:8]}"
    admin = kafka_broker.admin()
    for future in admin.create_topics([NewTopic(topic, num_partitions=2)]).values():
        future.result(timeout=30)
    assert len(admin.list_topics(timeout=30).topics[topic].partitions) == 2
    producer = kafka_broker.producer()
    for i in range(5):
        producer.produce(topic, key=b"k", value=f"v{i}".encode())
    assert producer.flush(30) == 0
    consumer = kafka_broker.consumer({"group.id": "ported", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    values = []
    try:
        while len(values) < 5:
            msg = consumer.poll(30)
            assert msg is not None and msg.error() is None, msg and msg.error()
            values.append(msg.value())
    finally:
        consumer.close()
    assert values == [f"v{i}".encode() for i in range(5)]


def test_num_partitions_from_extra_config(kafka_broker):
    # pytest.ini sets num.partitions=3 through kafka_broker_extra_config: auto-created topics get 3.
    producer = kafka_broker.producer()
    producer.produce("auto-created", value=b"x")
    assert producer.flush(30) == 0
    metadata = kafka_broker.admin().list_topics("auto-created", timeout=30)
    assert len(metadata.topics["auto-created"].partitions) == 3


@pytest.mark.asyncio
async def test_aio_producer_and_consumer(kafka_broker):
    topic = f"aio-{uuid.uuid4().hex[:8]}"
    producer = kafka_broker.aio_producer()
    delivered = await (await producer.produce(topic, value=b"hello"))
    assert delivered.error() is None
    await producer.flush()
    await producer.close()
    consumer = kafka_broker.aio_consumer({"group.id": "aio", "auto.offset.reset": "earliest"})
    await consumer.subscribe([topic])
    try:
        msg = None
        for _ in range(60):
            msg = await consumer.poll(0.5)
            if msg is not None:
                break
        assert msg is not None and msg.error() is None and msg.value() == b"hello"
    finally:
        await consumer.close()


def test_find_unused_tcp_port(find_unused_tcp_port):
    first, second = find_unused_tcp_port(), find_unused_tcp_port()
    assert first != second
