"""Regex subscriptions under an authorizer: the topics a regex resolves to are filtered through
the TopicFilter of the heartbeat that asked for the resolution (Kafka's
filterTopicDescribeAuthorizedTopics): each matched topic is asked about once, and a refused one
leaves every regex, the subscription metadata and the assignment."""

from __future__ import annotations

import uuid

from kafkette.broker.handlers.consumer_group import DescribableTopics
from kafkette.broker.security.acl import (
    AclBinding,
    AclOperation,
    PatternType,
    PermissionType,
    ResourceType,
)
from kafkette.broker.security.authorizer import StandardAuthorizer
from kafkette.coordinator.group.assignor.spec import make_assignment
from kafkette.coordinator.group.consumer import regex
from kafkette.coordinator.group.consumer.heartbeat import HeartbeatRequest, refresh_regexes

from .test_heartbeat import Shard

EU, US, PAY = uuid.UUID(int=0xE0), uuid.UUID(int=0x05), uuid.UUID(int=0xFA)
TOPICS = ["orders-eu", "orders-us", "payments", "orders"]


class RecordingFilter:
    """Lets through the names not in ``denied``; remembers what it was asked."""

    def __init__(self, *denied: str) -> None:
        self.denied = frozenset(denied)
        self.asked: list[frozenset[str]] = []

    def __call__(self, names: frozenset[str]) -> frozenset[str]:
        self.asked.append(names)
        return names - self.denied


def test_without_a_filter_every_match_stays():
    assert regex.resolve_regexes(["orders-.*", "pay.*"], TOPICS) == {
        "orders-.*": {"orders-eu", "orders-us"}, "pay.*": {"payments"}}


def test_a_refused_topic_leaves_every_regex_and_each_match_is_asked_once():
    topic_filter = RecordingFilter("orders-us")
    resolved = regex.resolve_regexes(["orders-.*", "orders.*", "pay.*"], TOPICS, topic_filter)
    assert resolved == {"orders-.*": {"orders-eu"}, "orders.*": {"orders", "orders-eu"},
                        "pay.*": {"payments"}}
    assert topic_filter.asked == [frozenset({"orders-eu", "orders-us", "orders", "payments"})]


def test_the_filter_is_not_asked_when_nothing_matches():
    topic_filter = RecordingFilter()
    assert regex.resolve_regexes(["nothing.*"], TOPICS, topic_filter) == {"nothing.*": set()}
    assert topic_filter.asked == []


def test_a_pattern_that_does_not_compile_resolves_to_nothing():
    assert regex.resolve_regexes(["orders(", "pay.*"], TOPICS) == {
        "orders(": set(), "pay.*": {"payments"}}


def test_the_topic_filter_is_not_part_of_the_requests_equality():
    plain = HeartbeatRequest("g", "m", 1)
    filtered = HeartbeatRequest("g", "m", 1, topic_filter=RecordingFilter("x"))
    assert plain == filtered


def test_refresh_leaves_refused_topics_out_of_the_resolution_and_the_assignment():
    shard = Shard(topics={"orders-eu": (EU, 2), "orders-us": (US, 3), "payments": (PAY, 1)})
    joined = shard.hb("m1", 0, rebalance_timeout_ms=5000, owned={},
                      subscribed_topic_regex="orders-.*")
    assert joined.regex_refresh_needed
    group = shard.groups["g"]
    shard.apply(refresh_regexes(group, shard.lookup, shard.topics, shard.version, 1000,
                                RecordingFilter("orders-us")))
    assert group.resolved_regexes["orders-.*"].topics == {"orders-eu"}
    assert set(group.subscription_metadata) == {"orders-eu"}
    got = shard.hb("m1", 1, owned={})
    assert got.assignment == make_assignment({EU: [0, 1]})
    # the refusal lifted, a later refresh (here: a new topic) brings the topic in
    shard.topics["orders-fr"] = (uuid.UUID(int=0xF2), 1)
    shard.version = 2
    assert shard.hb("m1", got.member_epoch).regex_refresh_needed
    shard.apply(refresh_regexes(group, shard.lookup, shard.topics, shard.version, 2000,
                                RecordingFilter()))
    assert group.resolved_regexes["orders-.*"].topics == {"orders-eu", "orders-us", "orders-fr"}


def _acl(name: str, permission: PermissionType, principal: str = "User:alice",
         pattern: PatternType = PatternType.LITERAL) -> AclBinding:
    return AclBinding(ResourceType.TOPIC, name, pattern, principal, "*", AclOperation.DESCRIBE,
                      permission)


class _Acls:
    """What DescribableTopics reads of the broker's AclStore: its current authorizer."""

    def __init__(self, authorizer: StandardAuthorizer) -> None:
        self.authorizer = authorizer


def test_describable_topics_asks_the_authorizer_when_called():
    authorizer = StandardAuthorizer(
        acls=[_acl("orders-", PermissionType.ALLOW, pattern=PatternType.PREFIXED),
              _acl("orders-us", PermissionType.DENY)])
    acls = _Acls(authorizer)
    alice = DescribableTopics(acls, "User:alice", "127.0.0.1")  # type: ignore[arg-type]
    bob = DescribableTopics(acls, "User:bob", "127.0.0.1")  # type: ignore[arg-type]
    names = frozenset({"orders-eu", "orders-us", "payments"})
    assert alice(names) == {"orders-eu"}
    assert bob(names) == frozenset()
    # ACLs changed after the heartbeat count when the coordinator resolves
    authorizer.replace([_acl("orders-", PermissionType.ALLOW, pattern=PatternType.PREFIXED)])
    assert alice(names) == {"orders-eu", "orders-us"}
    acls.authorizer = StandardAuthorizer(super_users=["User:bob"])
    assert bob(names) == names
