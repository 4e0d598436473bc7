"""ACLs with real clients against ``kafkette serve`` in its own process, on PLAINTEXT (principal
User:ANONYMOUS): confluent-kafka's AdminClient manages them, consumers and producers meet them,
and they survive a SIGKILL."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from kafkette.broker.testing import BrokerProcess
from kafkette.broker.testing import test_config as broker_config

ME = "User:ANONYMOUS"
STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
EVERYTHING = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                              AclOperation.ANY, AclPermissionType.ANY)


def acl(rtype: ResourceType, name: str, op: AclOperation,
        permission: AclPermissionType = AclPermissionType.ALLOW, *,
        pattern: ResourcePatternType = ResourcePatternType.LITERAL,
        principal: str = ME) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, "*", op, permission)


@pytest.fixture
def secured(tmp_path: Path):
    """An authorizing broker process; without any ACL on a resource everyone may use it
    (allow.everyone.if.no.acl.found), so the client can set ACLs up."""
    config = broker_config(str(tmp_path), **{"authorizer.class.name": STANDARD,
                                             "allow.everyone.if.no.acl.found": "true"})
    with BrokerProcess(config) as proc:
        yield proc


def admin_of(proc: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": proc.bootstrap})


def create(admin: AdminClient, *acls: AclBinding) -> None:
    for future in admin.create_acls(list(acls)).values():
        assert future.result(30) is None


def test_admin_client_creates_describes_and_deletes(secured):
    admin = admin_of(secured)
    orders = acl(ResourceType.TOPIC, "orders", AclOperation.READ)
    prefixed = acl(ResourceType.TOPIC, "ord", AclOperation.WRITE, pattern=ResourcePatternType.PREFIXED)
    group = acl(ResourceType.GROUP, "billing", AclOperation.READ, AclPermissionType.DENY)
    create(admin, orders, prefixed, group)
    assert set(admin.describe_acls(EVERYTHING).result(30)) == {orders, prefixed, group}
    match = AclBindingFilter(ResourceType.TOPIC, "orders", ResourcePatternType.MATCH, None, None,
                             AclOperation.ANY, AclPermissionType.ANY)
    assert set(admin.describe_acls(match).result(30)) == {orders, prefixed}
    deny_only = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, ME, None,
                                 AclOperation.ANY, AclPermissionType.DENY)
    deleted = admin.delete_acls([deny_only])[deny_only].result(30)
    assert deleted == [group]
    assert set(admin.describe_acls(EVERYTHING).result(30)) == {orders, prefixed}


def _poll_until(consumer: Consumer, want_error: bool, timeout: float = 20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error() is not None:
            if want_error:
                return msg.error()
            continue
        if not want_error:
            return msg
    raise AssertionError("timed out")


def test_consumer_without_read_on_its_group_until_the_acl_is_added(secured):
    admin = admin_of(secured)
    admin.create_topics([NewTopic("orders", 1, 1)])["orders"].result(30)
    producer = Producer({"bootstrap.servers": secured.bootstrap})
    producer.produce("orders", b"first")
    assert producer.flush(20) == 0
    # READ on the topic, but the group is someone else's: closed to this client
    create(admin, acl(ResourceType.TOPIC, "orders", AclOperation.READ),
           acl(ResourceType.GROUP, "billing", AclOperation.READ, principal="User:bob"))
    consumer = Consumer({"bootstrap.servers": secured.bootstrap, "group.id": "billing",
                         "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
    try:
        consumer.subscribe(["orders"])
        error = _poll_until(consumer, want_error=True)
        assert error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
        create(admin, acl(ResourceType.GROUP, "billing", AclOperation.READ))
        assert _poll_until(consumer, want_error=False).value() == b"first"
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()


def test_deny_beats_allow_for_a_producer(secured):
    admin = admin_of(secured)
    for topic in ("t-ok", "t-denied"):
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    create(admin, acl(ResourceType.TOPIC, "t-", AclOperation.ALL,
                      pattern=ResourcePatternType.PREFIXED),
           acl(ResourceType.TOPIC, "t-denied", AclOperation.WRITE, AclPermissionType.DENY))
    producer = Producer({"bootstrap.servers": secured.bootstrap, "retries": 0})
    outcomes: dict[str, KafkaError | None] = {}

    def delivered(err, msg) -> None:
        outcomes[msg.topic()] = err

    producer.produce("t-ok", b"v", callback=delivered)
    producer.produce("t-denied", b"v", callback=delivered)
    producer.flush(30)
    assert outcomes["t-ok"] is None
    assert outcomes["t-denied"].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_metadata_hides_a_denied_topic(secured):
    admin = admin_of(secured)
    for topic in ("visible", "hidden"):
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    create(admin, acl(ResourceType.TOPIC, "hidden", AclOperation.DESCRIBE,
                      AclPermissionType.DENY))
    listed = admin.list_topics(timeout=20).topics
    assert "visible" in listed and "hidden" not in listed
    named = admin.list_topics(topic="hidden", timeout=20).topics["hidden"]
    assert named.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_acls_survive_a_sigkill(secured):
    admin = admin_of(secured)
    kept = [acl(ResourceType.TOPIC, "durable", AclOperation.WRITE, AclPermissionType.DENY),
            acl(ResourceType.TRANSACTIONAL_ID, "tx-", AclOperation.WRITE,
                pattern=ResourcePatternType.PREFIXED),
            acl(ResourceType.GROUP, "g", AclOperation.DELETE)]
    create(admin, *kept)  # answered once durable
    secured.kill()
    secured.start()
    admin = admin_of(secured)
    assert set(admin.describe_acls(EVERYTHING).result(30)) == set(kept)
    producer = Producer({"bootstrap.servers": secured.bootstrap, "retries": 0,
                         "allow.auto.create.topics": True})
    outcome: list[KafkaError | None] = []
    producer.produce("durable", b"v", callback=lambda err, _msg: outcome.append(err))
    producer.flush(30)
    assert outcome and outcome[0] is not None
    assert outcome[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
