"""GROUP config resources (type 32) with confluent-kafka's AdminClient: a group's own
consumer.session.timeout.ms / consumer.heartbeat.interval.ms (and the share.* keys) are described
with their defaults for any group, set and checked against the broker's bounds as Kafka checks
them, kept across a restart, and applied: a KIP-848 member gets the group's heartbeat interval
and leaves after the group's session timeout (ManualClock)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclOperation,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from kafkette.coordinator.runtime.clock import ManualClock
from tests.wire import WireClient

GROUP_CONFIG, DEFAULT_CONFIG = 8, 5


def describe(admin: AdminClient, group: str) -> dict[str, tuple[str, int]]:
    resource = ConfigResource(ResourceType.GROUP, group)
    got = admin.describe_configs([resource])[resource].result(30)
    return {name: (entry.value, entry.source) for name, entry in got.items()}


def alter(admin: AdminClient, group: str, **values: str) -> None:
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(k.replace("_", "."), v, incremental_operation=AlterConfigOpType.SET)
        for k, v in values.items()])
    admin.incremental_alter_configs([resource])[resource].result(30)


def join(w: WireClient, group: str, member_id: str):
    return w.request(68, 1, group_id=group, member_id=member_id, member_epoch=0, instance_id=None,
                     rack_id=None, rebalance_timeout=timedelta(seconds=30),
                     subscribed_topic_names=("t",), subscribed_topic_regex=None,
                     server_assignor=None, topic_partitions=())


def members(w: WireClient, group: str) -> list[str]:
    r = w.request(69, 1, group_ids=(group,), include_authorized_operations=False)
    return [m.member_id for m in r.groups[0].members]


def test_group_configs_are_described_set_kept_and_applied(kafka_broker_factory):
    clock = ManualClock()
    # the broker's default heartbeat, pinned: a group's own must differ from it
    broker = kafka_broker_factory(clock=clock, **{"group.consumer.heartbeat.interval.ms": "500",
                                                  "group.share.heartbeat.interval.ms": "500",
                                                  "group.share.record.lock.duration.ms": "30000"})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    defaults = describe(admin, "quick")  # a group that does not exist
    assert defaults == {
        "consumer.session.timeout.ms": ("6000", DEFAULT_CONFIG),  # group.consumer.* (test config)
        "consumer.heartbeat.interval.ms": ("500", DEFAULT_CONFIG),
        "share.session.timeout.ms": ("6000", DEFAULT_CONFIG),  # group.share.* (test config)
        "share.heartbeat.interval.ms": ("500", DEFAULT_CONFIG),
        "share.record.lock.duration.ms": ("30000", DEFAULT_CONFIG),
        "share.auto.offset.reset": ("latest", DEFAULT_CONFIG),
        "share.isolation.level": ("read_uncommitted", DEFAULT_CONFIG),
        "share.delivery.count.limit": ("5", DEFAULT_CONFIG)}

    alter(admin, "quick", consumer_session_timeout_ms="2000", consumer_heartbeat_interval_ms="700")
    got = describe(admin, "quick")
    assert got["consumer.session.timeout.ms"] == ("2000", GROUP_CONFIG)
    assert got["consumer.heartbeat.interval.ms"] == ("700", GROUP_CONFIG)
    assert got["share.session.timeout.ms"] == ("6000", DEFAULT_CONFIG)
    assert describe(admin, "slow") == defaults

    broker.restart()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert describe(admin, "quick")["consumer.session.timeout.ms"] == ("2000", GROUP_CONFIG)
    admin.create_topics([NewTopic("t", 2, 1)])["t"].result(30)

    with WireClient(broker.bootstrap) as w:
        quick, slow = join(w, "quick", "q1"), join(w, "slow", "s1")
        assert (quick.error_code, quick.heartbeat_interval) == (0, timedelta(milliseconds=700))
        assert (slow.error_code, slow.heartbeat_interval) == (0, timedelta(milliseconds=500))
        broker.run(clock.advance, 2001)  # past the group's session timeout, not the default's
        assert members(w, "quick") == []
        assert members(w, "slow") == ["s1"]


@pytest.mark.parametrize(("values", "message"), [
    ({"consumer.session.timeout.ms": "500"},
     "consumer.session.timeout.ms must be greater than or equal to "
     "group.consumer.min.session.timeout.ms"),
    ({"consumer.heartbeat.interval.ms": "20000"},
     "consumer.heartbeat.interval.ms must be less than or equal to "
     "group.consumer.max.heartbeat.interval.ms"),
    ({"consumer.session.timeout.ms": "1000", "consumer.heartbeat.interval.ms": "1000"},
     "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"),
    ({"consumer.session.timeout.ms": "soon"},
     "Invalid value soon for configuration consumer.session.timeout.ms: "
     "Not a number of type INT"),
    ({"share.auto.offset.reset": "middle"},
     "Invalid value middle for configuration share.auto.offset.reset: "
     "String must be one of: latest, earliest"),
    ({"session.timeout.ms": "2000"}, "Unknown group config name: session.timeout.ms"),
])
def test_group_configs_are_checked_as_kafka_checks_them(kafka_broker, values, message):
    admin = kafka_broker.admin()
    resource = ConfigResource(ResourceType.GROUP, "g", incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in values.items()])
    with pytest.raises(KafkaException) as caught:
        admin.incremental_alter_configs([resource])[resource].result(30)
    assert caught.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert message in caught.value.args[0].str()
    assert all(source == DEFAULT_CONFIG for _, source in describe(admin, "g").values())


def test_a_group_reports_its_config_operations(kafka_broker):
    admin = kafka_broker.admin()
    described = admin.describe_consumer_groups(
        ["any"], include_authorized_operations=True)["any"].result(30)
    # READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS (Kafka 4.0)
    assert set(described.authorized_operations) == {
        AclOperation.READ, AclOperation.DELETE, AclOperation.DESCRIBE,
        AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
