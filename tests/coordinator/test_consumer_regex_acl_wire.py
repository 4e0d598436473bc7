"""ConsumerGroupHeartbeat under an authorizer, over the wire on a ManualClock: a regex
subscription resolves only to the topics the member's principal may DESCRIBE (Kafka's
GroupMetadataManager.filterTopicDescribeAuthorizedTopics), and a member naming a topic it may
not DESCRIBE is refused with TOPIC_AUTHORIZATION_FAILED before it joins (KafkaApis)."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from kafkette.broker.security.acl import (
    AclBinding,
    AclOperation,
    PatternType,
    PermissionType,
    ResourceType,
)

from .test_consumer_group_wire import describe, hb, join

ME = "User:ANONYMOUS"  # the principal of a PLAINTEXT connection


@pytest.fixture
def env(make_env):
    # without an ACL on a resource everyone may use it: only the ACLs below refuse anything
    return make_env(**{"authorizer.class.name":
                       "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                       "allow.everyone.if.no.acl.found": "true"})


def set_acls(env, *acls: AclBinding) -> None:
    results = env.run(env.broker.broker.services.acls.create(list(acls)))
    assert all(code == ErrorCode.none for code, _message in results), results


def deny_describe(topic: str) -> AclBinding:
    return AclBinding(ResourceType.TOPIC, topic, PatternType.LITERAL, ME, "*",
                      AclOperation.DESCRIBE, PermissionType.DENY)


def consumer_group(env, group: str):
    return env.run(lambda: env.coordinator.shard_for(group).consumer_manager().groups.get(group))


def assigned_topics(m, group: str) -> set[str]:
    described = describe(m, group)
    assert described.error_code == ErrorCode.none, described
    return {tp.topic_name for member in described.members
            for tp in member.assignment.topic_partitions}


def test_regex_resolves_only_to_topics_the_member_may_describe(env):
    env.create_topic("orders-eu", 2)
    env.create_topic("orders-us", 3)
    env.create_topic("billing", 1)
    set_acls(env, deny_describe("orders-us"))
    g, m = env.group_id(), env.member()
    joined = join(m, g, "A", topics=None, regex="orders-.*")
    assert joined.error_code == ErrorCode.none, joined
    env.advance(0)  # the resolution runs once the join is durable
    resolved = consumer_group(env, g).resolved_regexes["orders-.*"].topics
    assert resolved == {"orders-eu"}
    got = hb(m, g, "A", joined.member_epoch, owned={})
    assert got.error_code == ErrorCode.none and got.member_epoch > joined.member_epoch
    assert sum(len(tp.partitions) for tp in got.assignment.topic_partitions) == 2
    assert assigned_topics(m, g) == {"orders-eu"}


def test_naming_a_topic_the_member_may_not_describe_is_refused_before_joining(env):
    env.create_topic("orders-eu", 2)
    env.create_topic("orders-us", 3)
    set_acls(env, deny_describe("orders-us"))
    g, m = env.group_id(), env.member()
    refused = join(m, g, "A", topics=("orders-eu", "orders-us"))
    assert refused.error_code == ErrorCode.topic_authorization_failed
    assert refused.error_message is None  # Kafka answers the code alone
    assert consumer_group(env, g) is None
    allowed = join(m, g, "A", topics=("orders-eu",))
    assert allowed.error_code == ErrorCode.none, allowed
