"""Classic -> consumer upgrade records and the SyncGroup assignment of classic members."""

from __future__ import annotations

import struct

import pytest

from kafkette.coordinator.group.assignor.spec import make_assignment
from kafkette.coordinator.group.consumer.consumer_group_state import ConsumerGroupState
from kafkette.coordinator.group.consumer.member import ConsumerGroupMember
from kafkette.coordinator.group.consumer.migration import (
    ClassicMemberView,
    ConsumerProtocolError,
    classic_assignment_bytes,
    downgrade_records,
    members_from_classic,
    read_assignment,
    read_subscription,
    select_classic_protocol,
    upgrade_records,
    upgrade_refusal,
    write_assignment,
)
from kafkette.coordinator.runtime.error_codes import GROUP_ID_NOT_FOUND, CoordinatorError
from kafkette.protocol.consumer_group_records import ClassicMemberMetadata, ClassicProtocol
from kafkette.protocol.group_records import GroupMetadataKey, GroupMetadataValue

from .test_heartbeat import BAR, FOO, Shard, kinds

IDS = {"foo": FOO, "bar": BAR}
NAMES = {FOO: "foo", BAR: "bar"}


def s16(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def i32s(*values: int) -> bytes:
    return struct.pack(f">{len(values)}i", *values)


def subscription_bytes(topics, version, rack="r1") -> bytes:
    """ConsumerProtocolSubscription built by hand from Kafka's JSON schema (no owned partitions,
    no user data)."""
    out = struct.pack(">h", version) + i32s(len(topics)) + b"".join(map(s16, topics)) + i32s(-1)
    if version >= 1:
        out += i32s(0)
    if version >= 2:
        out += i32s(-1)
    if version >= 3:
        out += s16(rack)
    return out


def assignment_bytes(assigned, version, user_data=None) -> bytes:
    out = struct.pack(">h", version) + i32s(len(assigned))
    for topic, partitions in assigned:
        out += s16(topic) + i32s(len(partitions), *partitions)
    return out + (i32s(-1) if user_data is None else i32s(len(user_data)) + user_data)


def view(member_id, topics, assigned, version=1, user_data=None, instance_id=None):
    sub = subscription_bytes(topics, version)
    asg = assignment_bytes(assigned, version, user_data)
    return ClassicMemberView(member_id, instance_id, "kafka-python", "/127.0.0.1", 300000, 10000,
                             (("range", sub), ("roundrobin", sub)), asg)


def plain(assignment):
    return tuple((tp.topic, tuple(tp.partitions)) for tp in assignment.assigned_partitions)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_consumer_protocol_codec(version):
    data = subscription_bytes(["foo", "bar"], version)
    got_version, sub = read_subscription(data + b"trailing")
    assert got_version == version and tuple(sub.topics) == ("foo", "bar")
    assert getattr(sub, "rack_id", None) == ("r1" if version == 3 else None)
    expected = assignment_bytes([("foo", (1, 3)), ("bar", ())], version)
    assert write_assignment([("foo", (1, 3)), ("bar", ())], version) == expected
    assert plain(read_assignment(expected)[1]) == (("foo", (1, 3)), ("bar", ()))


def test_consumer_protocol_newer_and_malformed():
    v3 = subscription_bytes(["foo"], 3)
    version, sub = read_subscription(b"\x00\x07" + v3[2:] + b"new fields")
    assert version == 7 and sub.rack_id == "r1"  # read with the v3 schema, as Kafka does
    for bad in (b"\x00", b"\xff\xff" + v3[2:], b"\x00\x01" + i32s(5)):
        with pytest.raises(ConsumerProtocolError):
            read_subscription(bad)
    with pytest.raises(ConsumerProtocolError):
        read_assignment(b"\x00\x00" + i32s(1))


def test_upgrade_records_make_a_stable_group_at_the_generation():
    classic = [view("b", ["foo"], [("foo", (3, 4, 5))]),
               view("a", ["foo", "gone"], [("foo", (0, 1, 2)), ("gone", (0,))], version=3,
                    instance_id="i")]
    members = members_from_classic("g", 7, "range", classic, IDS.get)
    recs = upgrade_records("g", 7, members)
    assert kinds(type("R", (), {"records": recs})) == [
        "MemberMetadata", "MemberMetadata", "Metadata", "TargetAssignmentMember",
        "TargetAssignmentMember", "TargetAssignmentMetadata", "CurrentMemberAssignment",
        "CurrentMemberAssignment"]
    shard = Shard()
    shard.apply(recs)
    group = shard.groups["g"]
    assert group.state == ConsumerGroupState.STABLE and group.group_epoch == 7
    a = group.members["a"]
    assert a.member_epoch == 7 and a.assigned_partitions == make_assignment({FOO: [0, 1, 2]})
    assert a.subscribed_topic_names == {"foo", "gone"} and a.rack_id == "r1"
    assert a.uses_classic_protocol and a.classic_member_metadata.session_timeout_ms == 10000
    assert group.static_members == {"i": "a"}
    assert group.target["b"] == make_assignment({FOO: [3, 4, 5]})
    # a consumer-protocol member joins: the group rebalances from there
    joined = shard.join("c", ("foo",))
    assert joined.member_epoch == 8


def test_upgrade_refused_for_malformed_protocol_or_user_data():
    bad = ClassicMemberView("a", None, "c", "h", 1, 1, (("range", b"\x00"),), b"")
    overlapping = [view("a", ["foo"], [("foo", (0, 1))]), view("b", ["foo"], [("foo", (1,))])]
    for members in ([bad], [view("a", ["foo"], [("foo", (0,))], user_data=b"sticky")],
                    overlapping):
        with pytest.raises(CoordinatorError) as err:
            members_from_classic("g", 1, "range", members, IDS.get)
        assert err.value.code == GROUP_ID_NOT_FOUND
    assert upgrade_refusal(policy_allows=True, protocol_type="consumer", size=3, max_size=3) is None
    assert "disabled" in upgrade_refusal(policy_allows=False, protocol_type="consumer", size=1,
                                         max_size=3)
    assert "embedded" in upgrade_refusal(policy_allows=True, protocol_type="connect", size=1,
                                         max_size=3)
    assert "size" in upgrade_refusal(policy_allows=True, protocol_type="consumer", size=4,
                                     max_size=3)


@pytest.mark.parametrize("version", [0, 1, 3])
def test_classic_member_gets_its_assigned_partitions_in_its_protocol_version(version):
    member = members_from_classic("g", 2, "range", [
        view("a", ["foo", "bar"], [("bar", (1,)), ("foo", (0, 2))], version=version)], IDS.get)[0]
    data = classic_assignment_bytes(member, NAMES.get)
    got_version, assignment = read_assignment(data)
    assert got_version == version
    assert plain(assignment) == (("bar", (1,)), ("foo", (0, 2)))


def test_downgrade_when_the_last_consumer_member_leaves():
    shard = Shard()
    classic = [view("a", ["foo"], [("foo", (0, 1, 2))]), view("b", ["foo"], [("foo", (3, 4, 5))])]
    shard.apply(upgrade_records("g", 4, members_from_classic("g", 4, "range", classic, IDS.get)))
    shard.join("c", ("foo",))
    group = shard.groups["g"]
    assert select_classic_protocol(group.members.values()) == "range"
    recs = downgrade_records(group, "c", NAMES.get, 1234)
    key, value = recs[-1]
    assert key == GroupMetadataKey("g") and isinstance(value, GroupMetadataValue)
    assert (value.protocol_type, value.generation, value.protocol, value.leader) == (
        "consumer", 5, "range", "a")
    assert [m.member_id for m in value.members] == ["a", "b"]
    for m in value.members:
        version, asg = read_assignment(m.assignment)
        assert version == 1  # the version of the member's subscription metadata
        target = group.target_of(m.member_id)
        assert plain(asg) == (("foo", tuple(sorted(target[FOO]))),)
        assert m.session_timeout == 10000 and m.subscription == dict(classic[0].protocols)["range"]
    assert kinds(type("R", (), {"records": recs[:-1]}))[-2:] == ["PartitionMetadata-", "Metadata-"]
    shard.apply(recs[:-1])  # the consumer group is gone after its tombstones
    assert "g" not in shard.groups


def test_protocol_selection_votes_among_common_protocols():
    def member(*names):
        return ConsumerGroupMember("m", classic_member_metadata=ClassicMemberMetadata(
            1, tuple(ClassicProtocol(n, b"") for n in names)))

    assert select_classic_protocol([member("range", "sticky"), member("sticky", "range"),
                                    member("sticky")]) == "sticky"
    assert select_classic_protocol([member("range"), member("sticky")]) is None
    assert select_classic_protocol([]) is None
