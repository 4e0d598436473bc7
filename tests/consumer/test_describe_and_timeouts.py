"""ConsumerGroupDescribe view and the session / rebalance timeout ops."""

from __future__ import annotations

from kafkette.coordinator.group.assignor.spec import make_assignment
from kafkette.coordinator.group.consumer.consumer_group_state import ConsumerGroupState
from kafkette.coordinator.group.consumer.describe import MEMBER_TYPE_CONSUMER, describe_group
from kafkette.coordinator.group.consumer.heartbeat import (
    rebalance_timeout_expired,
    session_timeout_expired,
)
from kafkette.coordinator.group.described import DescribedTopicPartitions

from .test_heartbeat import BAR, FOO, Shard

NAMES = {FOO: "foo", BAR: "bar"}


def test_describe_shows_epochs_state_assignment_and_target():
    shard = Shard()
    shard.join("m1", ("foo",), client_id="rdkafka", client_host="/10.0.0.1", rack_id="r1")
    shard.join("m2", ("foo", "bar"), server_assignor="range", instance_id="i2")
    group = shard.groups["g"]
    view = describe_group(group, "uniform", NAMES.get)
    assert (view.group_id, view.group_state, view.group_epoch, view.assignment_epoch) == (
        "g", "Reconciling", 2, 2)
    assert view.assignor_name == "range"
    m1, m2 = view.members
    assert (m1.member_id, m1.client_id, m1.client_host, m1.rack_id, m1.member_epoch) == (
        "m1", "rdkafka", "/10.0.0.1", "r1", 1)
    assert m1.assignment == (DescribedTopicPartitions(FOO, "foo", tuple(range(6))),)
    assert m1.target_assignment != m1.assignment  # still to revoke towards its target
    assert m2.instance_id == "i2" and m2.subscribed_topic_names == ("bar", "foo")
    # bar is free at once, foo partitions wait for m1 to revoke them
    assert m2.member_type == MEMBER_TYPE_CONSUMER
    assert m2.assignment == (DescribedTopicPartitions(BAR, "bar", (0, 1, 2)),)
    # a topic that no longer exists is left out of the view
    assert all(tp.topic_id != BAR for tp in describe_group(group, "uniform", {FOO: "foo"}.get)
               .members[1].target_assignment)


def test_rebalance_timeout_fences_only_a_member_still_revoking_at_that_epoch():
    shard = Shard()
    shard.join("m1")
    shard.join("m2")
    group = shard.groups["g"]
    revoking = shard.hb("m1", 1, owned=make_assignment({FOO: range(6)}))
    assert revoking.arm_rebalance_timeout_ms == 300000
    assert rebalance_timeout_expired(group, "m1", 0, shard.lookup) == []  # other epoch
    assert rebalance_timeout_expired(group, "m2", 2, shard.lookup) == []  # not revoking
    shard.apply(rebalance_timeout_expired(group, "m1", 1, shard.lookup))
    assert set(group.members) == {"m2"} and group.group_epoch == 3
    assert rebalance_timeout_expired(group, "m1", 1, shard.lookup) == []  # gone already


def test_session_timeout_fences_and_tolerates_gone_groups_and_members():
    shard = Shard()
    shard.join("m1")
    group = shard.groups["g"]
    assert session_timeout_expired(None, "m1", shard.lookup) == []
    shard.apply(session_timeout_expired(group, "m1", shard.lookup))
    assert group.state == ConsumerGroupState.EMPTY
    assert session_timeout_expired(group, "m1", shard.lookup) == []
