"""ConsumerGroup aggregate: replay of records 3-8/16 (also through their bytes), derived state,
partition epochs, static index, epoch and offset validation."""

from __future__ import annotations

import uuid

import pytest

from kafkette.coordinator.group.assignor import UniformAssignor
from kafkette.coordinator.group.assignor.spec import SubscriptionType, make_assignment
from kafkette.coordinator.group.consumer import consumer_record_builders as records
from kafkette.coordinator.group.consumer.consumer_group_state import (
    ConsumerGroup,
    ConsumerGroupState,
    GroupStateError,
    check_member_epoch,
)
from kafkette.coordinator.group.consumer.member import ConsumerGroupMember, MemberState
from kafkette.coordinator.group.consumer.reconcile import reconcile
from kafkette.coordinator.group.consumer.target import build_target_assignment
from kafkette.coordinator.runtime.error_codes import (
    FENCED_MEMBER_EPOCH,
    ILLEGAL_GENERATION,
    NON_EMPTY_GROUP,
    STALE_MEMBER_EPOCH,
    UNKNOWN_MEMBER_ID,
    UNSUPPORTED_VERSION,
    CoordinatorError,
)
from kafkette.protocol import consumer_group_records as cgr

FOO = uuid.UUID(int=0xF00)
BAR = uuid.UUID(int=0xBA2)
TOPICS = {"foo": (FOO, 4), "bar": (BAR, 2)}
G = "grp"


def lookup(name):
    return TOPICS.get(name)


def through_bytes(recs):
    """Encode and decode every record, as a reload from the log would see them."""
    out = []
    for key_bytes, value_bytes in records.encode_records(recs):
        k = cgr.decode_key(key_bytes)
        out.append((k, cgr.decode_value(k, value_bytes)))
    return out


def join(group, member_id, topics, **fields):
    """The records of §4.5 for a member joining (epoch 0), replayed into ``group``."""
    member = ConsumerGroupMember(member_id).with_request(
        subscribed_topic_names=topics, rebalance_timeout_ms=300000, client_id="c",
        client_host="/127.0.0.1", **fields)
    recs = [records.member_subscription(G, member)]
    metadata = group.compute_subscription_metadata(lookup, updated=member)
    if group.subscription_metadata_changed(metadata) or not group.members:
        recs.append(records.subscription_metadata(G, metadata))
    epoch = group.group_epoch + 1
    recs.append(records.group_epoch(G, epoch))
    target = build_target_assignment(
        group_id=G, group_epoch=epoch, assignor=UniformAssignor(), members=group.members,
        target=group.target, topics=metadata, updated={member_id: member},
        static_members=group.static_members)
    recs += target.records
    reconciled = reconcile(member, epoch, target.assignment[member_id], group.partition_epoch, {})
    recs.append(records.current_assignment(G, reconciled))
    group.replay_all(through_bytes(recs))
    return recs


def test_member_joins_empty_group_emits_kafkas_records_and_is_stable():
    group = ConsumerGroup(G)
    recs = join(group, "m1", ["foo"])
    assert [type(k).__name__ for k, _ in recs] == [
        "ConsumerGroupMemberMetadataKey", "ConsumerGroupPartitionMetadataKey",
        "ConsumerGroupMetadataKey", "ConsumerGroupTargetAssignmentMemberKey",
        "ConsumerGroupTargetAssignmentMetadataKey", "ConsumerGroupCurrentMemberAssignmentKey"]
    assert group.group_epoch == 1 and group.assignment_epoch == 1
    m1 = group.members["m1"]
    assert m1.member_epoch == 1 and m1.state == MemberState.STABLE
    assert m1.assigned_partitions == make_assignment({FOO: range(4)})
    assert group.state == ConsumerGroupState.STABLE
    assert all(group.partition_epoch(FOO, p) == 1 for p in range(4))
    assert group.inverted_target[FOO] == dict.fromkeys(range(4), "m1")
    assert group.subscription_metadata == {"foo": cgr.TopicMetadata(FOO, "foo", 4)}


def test_second_member_waits_for_revocation_then_gets_partitions():
    group = ConsumerGroup(G)
    join(group, "m1", ["foo"])
    join(group, "m2", ["foo"])
    assert group.group_epoch == 2 and group.assignment_epoch == 2
    m2 = group.members["m2"]
    # m1 still owns everything at epoch 1: m2 is at epoch 2 with nothing yet
    assert m2.state == MemberState.UNRELEASED_PARTITIONS and m2.assigned_partitions == {}
    assert group.state == ConsumerGroupState.RECONCILING
    # m1 heartbeats: must revoke two partitions first
    m1 = reconcile(group.members["m1"], 2, group.target["m1"], group.partition_epoch,
                   group.members["m1"].assigned_partitions)
    assert m1.state == MemberState.UNREVOKED_PARTITIONS and m1.member_epoch == 1
    group.replay_all(through_bytes([records.current_assignment(G, m1)]))
    assert sum(len(ps) for ps in m1.partitions_pending_revocation.values()) == 2
    # m1 reports the revoked ones gone: STABLE at epoch 2; then m2 picks them up
    m1 = reconcile(m1, 2, group.target["m1"], group.partition_epoch, m1.assigned_partitions)
    group.replay(*records.current_assignment(G, m1))
    assert m1.state == MemberState.STABLE and m1.member_epoch == 2
    m2 = reconcile(m2, 2, group.target["m2"], group.partition_epoch, {})
    group.replay(*records.current_assignment(G, m2))
    assert m2.state == MemberState.STABLE and m2.assigned_partitions == group.target["m2"]
    assert group.state == ConsumerGroupState.STABLE
    owners = [group.partition_epoch(FOO, p) for p in range(4)]
    assert owners == [2, 2, 2, 2]


def test_leave_removes_member_and_group_can_then_be_deleted():
    group = ConsumerGroup(G)
    join(group, "m1", ["foo"], instance_id="i1", server_assignor="range")
    assert group.static_members == {"i1": "m1"} and group.preferred_assignor("uniform") == "range"
    with pytest.raises(CoordinatorError) as err:
        group.validate_delete()
    assert err.value.code == NON_EMPTY_GROUP
    group.replay_all(through_bytes(records.member_removal(G, "m1")
                                   + [records.group_epoch(G, 2)]))
    assert group.members == {} and group.static_members == {} and group.partition_epochs == {}
    assert group.target == {} and group.inverted_target == {}
    assert group.state == ConsumerGroupState.EMPTY and group.preferred_assignor("uniform") == "uniform"
    group.validate_delete()
    tombstones = group.tombstones()
    assert [type(k).__name__ for k, _ in tombstones] == [
        "ConsumerGroupTargetAssignmentMetadataKey", "ConsumerGroupPartitionMetadataKey",
        "ConsumerGroupMetadataKey"]
    group.replay_all(through_bytes(tombstones))  # the type-3 tombstone checks, does not raise
    assert group.assignment_epoch == -1 and group.subscription_metadata == {}


def test_tombstones_in_kafkas_order_and_deleting_a_live_group_is_refused():
    group = ConsumerGroup(G)
    join(group, "m2", ["foo"])
    join(group, "m1", ["foo"])
    group.replay(*records.resolved_regex(G, "f.*", ["foo"], 1, 5))
    names = [(type(k).__name__[13:], getattr(k, "member_id", getattr(k, "regular_expression", "")))
             for k, _ in group.tombstones()]
    assert names == [("CurrentMemberAssignmentKey", "m1"), ("CurrentMemberAssignmentKey", "m2"),
                     ("TargetAssignmentMemberKey", "m1"), ("TargetAssignmentMemberKey", "m2"),
                     ("TargetAssignmentMetadataKey", ""),
                     ("MemberMetadataKey", "m1"), ("MemberMetadataKey", "m2"),
                     ("RegularExpressionKey", "f.*"),
                     ("PartitionMetadataKey", ""), ("MetadataKey", "")]
    with pytest.raises(GroupStateError):
        group.replay(cgr.ConsumerGroupMetadataKey(G), None)
    group.replay_all(group.tombstones())
    assert group.members == {} and group.resolved_regexes == {}


def test_partition_owned_twice_is_a_replay_error():
    group = ConsumerGroup(G)
    join(group, "m1", ["foo"])
    thief = ConsumerGroupMember("m2", member_epoch=1, assigned_partitions=make_assignment({FOO: [0]}))
    with pytest.raises(GroupStateError):
        group.replay(*records.current_assignment(G, thief))


def test_replay_tolerates_tombstones_of_unknown_members_and_compacted_order():
    group = ConsumerGroup(G)
    group.replay_all(records.member_removal(G, "ghost"))
    assert group.members == {}
    # compacted log: the assignment arrives before the subscription of the member
    m = ConsumerGroupMember("m1", member_epoch=3, previous_member_epoch=2,
                            assigned_partitions=make_assignment({BAR: [0, 1]}))
    group.replay(*records.current_assignment(G, m))
    group.replay(*records.member_subscription(G, m.with_request(subscribed_topic_names=["bar"])))
    assert group.members["m1"].member_epoch == 3
    assert group.members["m1"].subscribed_topic_names == {"bar"}
    assert group.partition_epoch(BAR, 1) == 3


def test_states_assigning_and_reconciling():
    group = ConsumerGroup(G)
    join(group, "m1", ["foo"])
    group.replay(*records.group_epoch(G, 2))
    assert group.state == ConsumerGroupState.ASSIGNING
    group.replay(*records.target_epoch(G, 2))
    assert group.state == ConsumerGroupState.RECONCILING


def test_static_member_replacement_moves_the_index():
    group = ConsumerGroup(G)
    join(group, "m1", ["foo"], instance_id="i1")
    old = group.members["m1"]
    left = old.with_epoch(-2)
    group.replay(*records.current_assignment(G, left))
    assert group.partition_epoch(FOO, 0) == -2  # still owned while the instance is away
    new = left.with_member_id("m1-b").with_epoch(0)
    group.replay_all(records.member_removal(G, "m1") + [
        records.member_subscription(G, new),
        records.target_member(G, "m1-b", group.target["m1"]),
        records.current_assignment(G, new)])
    assert group.static_members == {"i1": "m1-b"} and set(group.members) == {"m1-b"}
    assert group.static_member("i1").assigned_partitions == old.assigned_partitions


def test_subscription_metadata_type_and_regex_union():
    group = ConsumerGroup(G)
    join(group, "m1", ["foo"])
    join(group, "m2", [], subscribed_topic_regex="b.*")
    assert group.subscription_type() == SubscriptionType.HETEROGENEOUS
    # the regex is not resolved yet: only foo is subscribed
    assert group.subscribed_topic_names() == {"foo": 1}
    group.replay(*records.resolved_regex(G, "b.*", ["bar"], 1, 10))
    assert group.subscribed_topic_names() == {"foo": 1, "bar": 1}
    assert group.is_subscribed_to_topic("bar") and not group.is_subscribed_to_topic("baz")
    metadata = group.compute_subscription_metadata(lookup)
    assert metadata == {"bar": cgr.TopicMetadata(BAR, "bar", 2), "foo": cgr.TopicMetadata(FOO, "foo", 4)}
    assert group.subscription_metadata_changed(metadata)
    assert group.regex_subscribers() == {"b.*": 1}
    assert group.compute_subscription_metadata(lookup, removed="m2") == {
        "foo": cgr.TopicMetadata(FOO, "foo", 4)}


def test_member_epoch_check():
    m = ConsumerGroupMember("m", member_epoch=5, previous_member_epoch=4,
                            assigned_partitions=make_assignment({FOO: [0, 1]}))
    check_member_epoch(m, 5, None)
    check_member_epoch(m, 4, make_assignment({FOO: [1]}))  # lost response of the bump
    for received, owned in [(6, None), (4, None), (4, make_assignment({FOO: [2]})), (3, {})]:
        with pytest.raises(CoordinatorError) as err:
            check_member_epoch(m, received, owned)
        assert err.value.code == FENCED_MEMBER_EPOCH


def test_offset_commit_and_fetch_validation():
    group = ConsumerGroup(G)
    group.validate_offset_commit("", None, -1, False, 9)  # admin commit into an empty group
    join(group, "m1", ["foo"])
    group.validate_offset_commit("m1", None, 1, False, 9)
    group.validate_offset_fetch(None, -1)
    group.validate_offset_fetch("m1", 1)
    cases = [
        (lambda: group.validate_offset_commit("nobody", None, 1, False, 9), UNKNOWN_MEMBER_ID),
        (lambda: group.validate_offset_commit("", None, -1, False, 9), UNKNOWN_MEMBER_ID),
        (lambda: group.validate_offset_commit("m1", None, 1, False, 8), UNSUPPORTED_VERSION),
        (lambda: group.validate_offset_commit("m1", None, 0, False, 9), STALE_MEMBER_EPOCH),
        (lambda: group.validate_offset_fetch("m1", 2), STALE_MEMBER_EPOCH),
        (lambda: group.validate_offset_fetch("nobody", 1), UNKNOWN_MEMBER_ID),
    ]
    for call, code in cases:
        with pytest.raises(CoordinatorError) as err:
            call()
        assert err.value.code == code
    group.validate_offset_commit("m1", None, 1, True, 8)
    classic = cgr.ClassicMemberMetadata(45000, (cgr.ClassicProtocol("range", b""),))
    group.replay(*records.member_subscription(G, ConsumerGroupMember(
        "c1", classic_member_metadata=classic)))
    with pytest.raises(CoordinatorError) as err:
        group.validate_offset_commit("c1", None, 3, False, 2)
    assert err.value.code == ILLEGAL_GENERATION
