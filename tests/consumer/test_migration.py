"""Classic -> consumer upgrade records and the SyncGroup assignment of classic members."""

from __future__ import annotations

import pytest

from kafkette.coordinator.assignor.spec import make_assignment
from kafkette.coordinator.consumer.group import ConsumerGroupState
from kafkette.coordinator.consumer.migration import (
    ClassicMemberView,
    classic_assignment_bytes,
    members_from_classic,
    upgrade_records,
    upgrade_refusal,
)
from kafkette.coordinator.errors import GROUP_ID_NOT_FOUND, CoordinatorError
from kafkette.protocol import consumer_protocol as cp

from .test_heartbeat import BAR, FOO, Shard, kinds

IDS = {"foo": FOO, "bar": BAR}
NAMES = {FOO: "foo", BAR: "bar"}


def view(member_id, topics, assigned, version=1, user_data=None, instance_id=None):
    sub = cp.encode_subscription(cp.Subscription(tuple(topics), rack_id="r1"), version)
    asg = cp.encode_assignment(cp.Assignment(tuple(assigned), user_data), version)
    return ClassicMemberView(member_id, instance_id, "kafka-python", "/127.0.0.1", 300000, 10000,
                             (("range", sub), ("roundrobin", sub)), asg)


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
    got_version, assignment = cp.decode_assignment(data)
    assert got_version == version
    assert sorted(assignment.assigned_partitions) == [("bar", (1,)), ("foo", (0, 2))]
