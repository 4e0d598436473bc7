"""A KIP-848 consumer (confluent-kafka, ``group.protocol=consumer``) subscribing to a regex over
SASL_PLAINTEXT with ACLs: the broker resolves the regex only to the topics the consumer's
principal may DESCRIBE, so it is assigned and reads those alone (Kafka 4.x:
GroupMetadataManager.filterTopicDescribeAuthorizedTopics); naming a topic it may not DESCRIBE
is TOPIC_AUTHORIZATION_FAILED."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, ConsumerGroupType, KafkaError, Producer
from confluent_kafka.admin import (
    AclOperation,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from kafkette.broker.testing import KafkaBroker

from .conftest import plain_jaas
from .test_acl_sasl import allow, as_user

TOPICS = {"orders-eu": 2, "orders-us": 1, "orders-secret": 2, "billing": 1}


@pytest.fixture
def broker(kafka_broker_factory) -> KafkaBroker:
    return kafka_broker_factory({
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            plain_jaas("admin", "alice", "bob", login="admin"),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        "group.consumer.min.session.timeout.ms": 1000,
        "group.consumer.session.timeout.ms": 3000,
        "group.consumer.min.heartbeat.interval.ms": 100,
        "group.consumer.heartbeat.interval.ms": 250,
    })


def set_up(broker: KafkaBroker) -> None:
    """The topics, one record per partition, and alice's ACLs: her group, and READ (which
    implies DESCRIBE) on the orders topics but orders-secret."""
    admin = AdminClient(as_user(broker, "admin"))
    for topic, partitions in TOPICS.items():
        admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    producer = Producer(as_user(broker, "admin"))
    for topic, partitions in TOPICS.items():
        for partition in range(partitions):
            producer.produce(topic, f"{topic}/{partition}".encode(), partition=partition)
    assert producer.flush(30) == 0
    acls = [allow("User:alice", ResourceType.GROUP, "alice-", AclOperation.READ,
                  ResourcePatternType.PREFIXED),
            allow("User:alice", ResourceType.TOPIC, "orders-eu", AclOperation.READ),
            allow("User:alice", ResourceType.TOPIC, "orders-us", AclOperation.READ),
            allow("User:alice", ResourceType.TOPIC, "billing", AclOperation.READ)]
    for future in admin.create_acls(acls).values():
        future.result(30)


def alices_consumer(broker: KafkaBroker, group: str) -> Consumer:
    return Consumer(as_user(broker, "alice", **{
        "group.id": group, "group.protocol": "consumer", "auto.offset.reset": "earliest",
        "enable.auto.commit": False, "topic.metadata.refresh.interval.ms": 500}))


def test_regex_subscription_gets_only_the_topics_alice_may_describe(broker):
    set_up(broker)
    consumer = alices_consumer(broker, "alice-regex")
    try:
        consumer.subscribe(["^orders-.*"])
        want = {"orders-eu/0", "orders-eu/1", "orders-us/0"}
        seen: set[str] = set()
        errors: list[KafkaError] = []
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and not (seen >= want and assigned(consumer)):
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error() is not None:
                errors.append(msg.error())
            else:
                seen.add(msg.value().decode())
        assert seen == want, (seen, errors)
        assert assigned(consumer) == {("orders-eu", 0), ("orders-eu", 1), ("orders-us", 0)}
        # what the broker assigned (a client cannot even name a topic it may not DESCRIBE,
        # so the group's own view is the proof), asked by the super user
        admin = AdminClient(as_user(broker, "admin"))
        group = admin.describe_consumer_groups(["alice-regex"])["alice-regex"].result(30)
        assert group.type == ConsumerGroupType.CONSUMER
        assert {(tp.topic, tp.partition) for m in group.members
                for tp in m.assignment.topic_partitions} == assigned(consumer)
        # polling on: nothing of orders-secret (nor of billing) ever comes
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                seen.add(msg.value().decode())
        assert seen == want
        assert not [e for e in errors if e.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED]
    finally:
        consumer.close()


def test_naming_a_topic_alice_may_not_describe_is_refused(broker):
    set_up(broker)
    consumer = alices_consumer(broker, "alice-names")
    try:
        consumer.subscribe(["orders-eu", "orders-secret"])
        error = None
        deadline = time.monotonic() + 30
        while error is None and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is not None \
                    and msg.error().code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                error = msg.error()
        assert error is not None, "no TOPIC_AUTHORIZATION_FAILED"
        assert assigned(consumer) == set()
    finally:
        consumer.close()


def assigned(consumer: Consumer) -> set[tuple[str, int]]:
    return {(tp.topic, tp.partition) for tp in consumer.assignment()}
