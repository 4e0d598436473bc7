"""Two SASL/PLAIN users with different ACLs, and a super user who sets them, with
confluent-kafka clients: each user's principal (User:<name>) is what the authorizer decides on."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)


@pytest.fixture
def broker(plain_sasl_broker):
    return plain_sasl_broker("admin", "alice", "bob", login="admin", config={
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
    })


def as_user(broker, user: str, **extra) -> dict:
    return {"bootstrap.servers": broker.bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN", "sasl.username": user,
            "sasl.password": f"{user}-secret", **extra}


def allow(principal: str, rtype: ResourceType, name: str, op: AclOperation,
          pattern: ResourcePatternType = ResourcePatternType.LITERAL) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, "*", op, AclPermissionType.ALLOW)


def produce(broker, user: str, topic: str, value: bytes) -> KafkaError | None:
    producer = Producer(as_user(broker, user, retries=0))
    outcome: list[KafkaError | None] = []
    producer.produce(topic, value, callback=lambda err, _msg: outcome.append(err))
    producer.flush(30)
    assert outcome, "no delivery report"
    return outcome[0]


def test_each_user_gets_what_its_acls_allow(broker):
    admin = AdminClient(as_user(broker, "admin"))
    for topic in ("alice-data", "bob-data"):
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    acls = [allow("User:alice", ResourceType.TOPIC, "alice-", AclOperation.ALL,
                  ResourcePatternType.PREFIXED),
            allow("User:bob", ResourceType.TOPIC, "bob-data", AclOperation.WRITE),
            allow("User:bob", ResourceType.TOPIC, "alice-data", AclOperation.READ),
            allow("User:bob", ResourceType.GROUP, "bob-group", AclOperation.READ)]
    for future in admin.create_acls(acls).values():
        future.result(30)

    assert produce(broker, "alice", "alice-data", b"from alice") is None
    assert produce(broker, "alice", "bob-data", b"x").code() == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert produce(broker, "bob", "bob-data", b"from bob") is None
    assert produce(broker, "bob", "alice-data", b"x").code() == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED

    seen_by_alice = AdminClient(as_user(broker, "alice")).list_topics(timeout=20).topics
    assert "alice-data" in seen_by_alice and "bob-data" not in seen_by_alice
    seen_by_bob = AdminClient(as_user(broker, "bob")).list_topics(timeout=20).topics
    assert {"alice-data", "bob-data"} <= set(seen_by_bob)

    consumer = Consumer(as_user(broker, "bob", **{"group.id": "bob-group",
                                                  "auto.offset.reset": "earliest"}))
    try:
        consumer.subscribe(["alice-data"])
        deadline = time.monotonic() + 30
        got = None
        while got is None and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got = msg.value()
        assert got == b"from alice"
    finally:
        consumer.close()
    # alice may not use bob's group
    consumer = Consumer(as_user(broker, "alice", **{"group.id": "bob-group",
                                                    "auto.offset.reset": "earliest"}))
    try:
        consumer.subscribe(["alice-data"])
        deadline = time.monotonic() + 30
        error = None
        while error is None and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is not None:
                error = msg.error()
        assert error is not None and error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    finally:
        consumer.close()
