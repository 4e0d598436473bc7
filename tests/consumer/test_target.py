"""Target assignment (KIP-848 §4.7): the scenarios of Kafka's TargetAssignmentBuilderTest, with
an assignor that returns prepared assignments and records what it was asked."""

from __future__ import annotations

import uuid

import pytest

from kafkette.coordinator.group.assignor import UniformAssignor
from kafkette.coordinator.group.assignor.spec import (
    GroupSpec,
    PartitionAssignorError,
    SubscriptionType,
    make_assignment,
)
from kafkette.coordinator.group.consumer import consumer_record_builders as records
from kafkette.coordinator.group.consumer.member import ConsumerGroupMember
from kafkette.coordinator.group.consumer.target import build_target_assignment, subscription_type
from kafkette.protocol.consumer_group_records import TopicMetadata

FOO, BAR, ZAR = uuid.UUID(int=0xF00), uuid.UUID(int=0xBA2), uuid.UUID(int=0x2A2)
TOPICS = {"foo": TopicMetadata(FOO, "foo", 6), "bar": TopicMetadata(BAR, "bar", 6)}


class PreparedAssignor:
    name = "prepared"

    def __init__(self, prepared):
        self.prepared = prepared
        self.spec: GroupSpec | None = None

    def assign(self, spec, topics):
        self.spec = spec
        self.partitions = {t: topics.num_partitions(t) for t in (FOO, BAR, ZAR)}
        return dict(self.prepared)


def a(foo=(), bar=()):
    return make_assignment({FOO: foo, BAR: bar})


def member(member_id, topics=("foo", "bar", "zar"), instance_id=None, regex=None):
    return ConsumerGroupMember(member_id, instance_id=instance_id,
                               subscribed_topic_names=frozenset(topics),
                               subscribed_topic_regex=regex)


def build(members, target, prepared, **kwargs):
    assignor = PreparedAssignor(prepared)
    result = build_target_assignment(group_id="my-group", group_epoch=20, assignor=assignor,
                                     members=members, target=target, topics=TOPICS, **kwargs)
    return assignor, result


def test_empty_group_writes_only_the_epoch():
    assignor, result = build({}, {}, {})
    assert result.records == [records.target_epoch("my-group", 20)]
    assert result.assignment == {} and assignor.spec.members == {}


def test_unchanged_assignment_writes_only_the_epoch():
    members = {"m1": member("m1"), "m2": member("m2")}
    target = {"m1": a((1, 2, 3), (1, 2, 3)), "m2": a((4, 5, 6), (4, 5, 6))}
    assignor, result = build(members, target, target)
    assert result.records == [records.target_epoch("my-group", 20)]
    assert result.assignment == target
    # the assignor saw subscribed topic *ids* (zar does not exist) and the current target
    assert assignor.spec.members["m1"].subscribed_topic_ids == {FOO, BAR}
    assert assignor.spec.current == target
    assert assignor.partitions == {FOO: 6, BAR: 6, ZAR: -1}


def test_swapped_assignment_writes_both_members():
    members = {"m1": member("m1"), "m2": member("m2")}
    target = {"m1": a((1, 2, 3), (1, 2, 3)), "m2": a((4, 5, 6), (4, 5, 6))}
    swapped = {"m1": target["m2"], "m2": target["m1"]}
    _, result = build(members, target, swapped)
    assert result.records == [records.target_member("my-group", "m1", target["m2"]),
                              records.target_member("my-group", "m2", target["m1"]),
                              records.target_epoch("my-group", 20)]


def test_new_member_gets_a_record_even_with_an_empty_assignment():
    members = {"m1": member("m1")}
    target = {"m1": a((1, 2, 3), (1, 2, 3))}
    _, result = build(members, target, target, updated={"m2": member("m2")})
    assert result.records == [records.target_member("my-group", "m2", {}),
                              records.target_epoch("my-group", 20)]
    assert result.assignment == {"m1": target["m1"], "m2": {}}


def test_updated_member_subscription_reaches_the_assignor_and_partial_update():
    members = {"m1": member("m1"), "m2": member("m2"), "m3": member("m3")}
    target = {"m1": a((1, 2), (1, 2)), "m2": a((3, 4), (3, 4)), "m3": a((5, 6), (5, 6))}
    prepared = {"m1": target["m1"], "m2": a((3, 4, 5, 6), (3, 4)), "m3": a((), (5, 6))}
    assignor, result = build(members, target, prepared, updated={"m3": member("m3", ("bar",))})
    assert assignor.spec.members["m3"].subscribed_topic_ids == {BAR}
    assert assignor.spec.subscription_type == SubscriptionType.HETEROGENEOUS
    assert result.records == [records.target_member("my-group", "m2", prepared["m2"]),
                              records.target_member("my-group", "m3", prepared["m3"]),
                              records.target_epoch("my-group", 20)]


def test_deleted_member_is_left_out():
    members = {"m1": member("m1"), "m2": member("m2"), "m3": member("m3")}
    target = {"m1": a((1, 2), (1, 2)), "m2": a((3, 4), (3, 4)), "m3": a((5, 6), (5, 6))}
    prepared = {"m1": a((1, 2, 3), (1, 2, 3)), "m2": a((4, 5, 6), (4, 5, 6))}
    assignor, result = build(members, target, prepared, updated={"m3": None})
    assert set(assignor.spec.members) == {"m1", "m2"}
    assert result.assignment == prepared
    assert [k.member_id for k, _ in result.records[:-1]] == ["m1", "m2"]


def test_static_member_replacing_a_departed_one_inherits_its_target():
    members = {"m1": member("m1", instance_id="i1"), "m2": member("m2", instance_id="i2"),
               "m3": member("m3", instance_id="i3")}
    target = {"m1": a((1, 2), (1, 2)), "m2": a((3, 4), (3, 4)), "m3": a((5, 6), (5, 6))}
    prepared = {"m1": target["m1"], "m2": target["m2"], "m3-a": target["m3"]}
    assignor, result = build(members, target, prepared,
                             updated={"m3": None, "m3-a": member("m3-a", instance_id="i3")},
                             static_members={"i1": "m1", "i2": "m2", "i3": "m3"})
    assert assignor.spec.current["m3-a"] == target["m3"]
    assert result.records == [records.target_member("my-group", "m3-a", target["m3"]),
                              records.target_epoch("my-group", 20)]


def test_regex_subscription_is_the_union_with_resolved_topics():
    members = {"m1": member("m1", ("foo",), regex="b.*"), "m2": member("m2", (), regex="f.*")}
    assignor, _ = build(members, {}, {}, resolved_regexes={"b.*": frozenset({"bar"})})
    assert assignor.spec.members["m1"].subscribed_topic_ids == {FOO, BAR}
    assert assignor.spec.members["m2"].subscribed_topic_ids == frozenset()  # not resolved yet


def test_subscription_type():
    H, X = SubscriptionType.HOMOGENEOUS, SubscriptionType.HETEROGENEOUS
    assert subscription_type({}) == H
    assert subscription_type({"a": member("a", ("x", "y")), "b": member("b", ("y", "x"))}) == H
    assert subscription_type({"a": member("a", ("x",)), "b": member("b", ("y",))}) == X
    assert subscription_type({"a": member("a", (), regex="r"), "b": member("b", (), regex="r")}) == H
    assert subscription_type({"a": member("a", (), regex="r"), "b": member("b", (), regex="s")}) == X
    assert subscription_type({"a": member("a", ("x",), regex="r")}) == X


def test_with_the_uniform_assignor_end_to_end():
    members = {f"m{i}": member(f"m{i}", ("foo", "bar")) for i in range(3)}
    result = build_target_assignment(group_id="g", group_epoch=1, assignor=UniformAssignor(),
                                     members=members, target={}, topics=TOPICS)
    assert len(result.records) == 4
    assert sorted(sum(len(ps) for ps in x.values()) for x in result.assignment.values()) == [4, 4, 4]
    # a subscribed name missing from the metadata is simply not assigned (Kafka's TopicIds)
    members = {"m1": member("m1", ("foo",)), "m2": member("m2", ("zar",))}
    result = build_target_assignment(group_id="g", group_epoch=1, assignor=UniformAssignor(),
                                     members=members, target={}, topics=TOPICS)
    assert result.assignment == {"m1": a(range(6)), "m2": {}}


def test_assignor_errors_propagate():
    class Failing:
        name = "failing"

        def assign(self, spec, topics):
            raise PartitionAssignorError("boom")

    with pytest.raises(PartitionAssignorError):
        build_target_assignment(group_id="g", group_epoch=1, assignor=Failing(),
                                members={"m1": member("m1")}, target={}, topics=TOPICS)
