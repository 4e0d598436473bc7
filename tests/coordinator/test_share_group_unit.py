"""Share groups without I/O: the simple assignor, records 10-15 (bytes and round trips), and the
heartbeat as a pure operation replayed into a ShareGroup."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest

from kafkette.coordinator.group.share import simple_assignor
from kafkette.coordinator.group.share.share_group import ShareGroup, replay_record
from kafkette.coordinator.group.share.share_heartbeat import (
    ShareHeartbeatRequest,
    ShareHeartbeatSettings,
    fence_member,
    heartbeat,
)
from kafkette.coordinator.runtime.error_codes import (
    FENCED_MEMBER_EPOCH,
    GROUP_ID_NOT_FOUND,
    GROUP_MAX_SIZE_REACHED,
    INVALID_REQUEST,
    UNKNOWN_MEMBER_ID,
    CoordinatorError,
)
from kafkette.protocol import share_group_records as sgr

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def counts(assignment: dict) -> dict[str, int]:
    return {m: sum(len(ps) for ps in a.values()) for m, a in assignment.items()}


def sharing(assignment: dict) -> Counter:
    return Counter((t, p) for a in assignment.values() for t, ps in a.items() for p in ps)


# The simple assignor ---------------------------------------------------------------------------

def test_three_members_share_one_partition():
    subs = {m: frozenset({T1}) for m in "abc"}
    out = simple_assignor.assign(subs, {T1: (0,)}, {})
    assert out == {m: {T1: frozenset({0})} for m in "abc"}


def test_three_members_two_partitions_each_partition_shared_by_two():
    subs = {m: frozenset({T1}) for m in "abc"}
    out = simple_assignor.assign(subs, {T1: (0, 1)}, {})
    assert sorted(counts(out).values()) == [1, 1, 2]
    assert sharing(out) == {(T1, 0): 2, (T1, 1): 2}


def test_fewer_members_than_partitions_no_sharing():
    subs = {m: frozenset({T1}) for m in "ab"}
    out = simple_assignor.assign(subs, {T1: (0, 1, 2, 3)}, {})
    assert counts(out) == {"a": 2, "b": 2}
    assert set(sharing(out).values()) == {1}


def test_sticky_when_a_member_joins():
    subs = {m: frozenset({T1}) for m in "ab"}
    first = simple_assignor.assign(subs, {T1: (0, 1, 2, 3)}, {})
    subs["c"] = frozenset({T1})
    second = simple_assignor.assign(subs, {T1: (0, 1, 2, 3)}, first)
    for m in "ab":
        assert second[m][T1] <= first[m][T1]  # kept partitions stay put
    assert sorted(counts(second).values()) == [1, 1, 2]
    assert set(sharing(second).values()) == {1} and len(sharing(second)) == 4


def test_unsubscribed_topics_and_missing_partitions_are_dropped():
    subs = {"a": frozenset({T1})}
    out = simple_assignor.assign(subs, {T1: (0,), T2: (0,)}, {"a": {T2: frozenset({0})}})
    assert out == {"a": {T1: frozenset({0})}}
    assert simple_assignor.assign({"a": frozenset({T1})}, {}, {}) == {"a": {}}
    assert simple_assignor.assign({}, {T1: (0,)}, {}) == {}


def test_heterogeneous_subscriptions_cover_every_subscribed_partition():
    subs = {"a": frozenset({T1}), "b": frozenset({T1, T2}), "c": frozenset({T2})}
    out = simple_assignor.assign(subs, {T1: (0,), T2: (0, 1)}, {})
    assert set(out["a"]) == {T1} and set(out["c"]) <= {T2}
    assert set(sharing(out)) == {(T1, 0), (T2, 0), (T2, 1)}
    assert sharing(out)[(T1, 0)] == 2  # a and b share T1's one partition


def test_deterministic():
    subs = {f"m{i}": frozenset({T1, T2}) for i in range(7)}
    parts = {T1: (0, 1, 2), T2: (0, 1)}
    assert simple_assignor.assign(subs, parts, {}) == simple_assignor.assign(subs, parts, {})


# Records ---------------------------------------------------------------------------------------

RECORDS = [
    (sgr.ShareGroupMemberMetadataKey("g", "m"),
     sgr.ShareGroupMemberMetadataValue(None, "client", "/127.0.0.1", ("a", "b"))),
    (sgr.ShareGroupMetadataKey("g"), sgr.ShareGroupMetadataValue(3, -42)),
    (sgr.ShareGroupTargetAssignmentMetadataKey("g"),
     sgr.ShareGroupTargetAssignmentMetadataValue(3)),
    (sgr.ShareGroupTargetAssignmentMemberKey("g", "m"),
     sgr.ShareGroupTargetAssignmentMemberValue((sgr.TopicPartitions(T1, (0, 2)),))),
    (sgr.ShareGroupCurrentMemberAssignmentKey("g", "m"),
     sgr.ShareGroupCurrentMemberAssignmentValue(3, 2, 0, (sgr.TopicPartitions(T1, (1,)),))),
    (sgr.ShareGroupStatePartitionMetadataKey("g"),
     sgr.ShareGroupStatePartitionMetadataValue(
         (), (sgr.TopicPartitionsInfo(T1, "a", (0, 1)),), (sgr.TopicInfo(T2, "b"),))),
]


@pytest.mark.parametrize(("key", "value"), RECORDS)
def test_records_round_trip(key, value):
    key_bytes, value_bytes = sgr.encode_key(key), sgr.encode_value(value)
    assert sgr.record_type(key_bytes) == sgr.RECORD_TYPES[type(key)]
    decoded = sgr.decode_key(key_bytes)
    assert decoded == key
    assert sgr.decode_value(decoded, value_bytes) == value
    assert sgr.decode_value(decoded, None) is None


def test_record_bytes_are_kafkas():
    key, value = RECORDS[1]
    assert sgr.encode_key(key) == b"\x00\x0b\x00\x01g"
    # version 0, Epoch int32, MetadataHash int64, empty tagged fields
    assert sgr.encode_value(value) == (b"\x00\x00" + (3).to_bytes(4, "big")
                                       + (-42).to_bytes(8, "big", signed=True) + b"\x00")
    key, value = RECORDS[4]
    assert sgr.encode_key(key) == b"\x00\x0e\x00\x01g\x00\x01m"
    assert sgr.encode_value(value) == (
        b"\x00\x00" + b"\x00\x00\x00\x03" + b"\x00\x00\x00\x02" + b"\x00"
        + b"\x02" + T1.bytes + b"\x02\x00\x00\x00\x01" + b"\x00" + b"\x00")
    key, value = RECORDS[0]
    assert sgr.encode_value(value) == (b"\x00\x00" + b"\x00" + b"\x07client"
                                       + b"\x0b/127.0.0.1" + b"\x03\x02a\x02b" + b"\x00")


def test_state_partition_metadata_with_create_timestamp_is_read():
    # the Kafka revision whose TopicPartitionsInfo carries CreateTimestamp int64
    body = (b"\x00\x00" + b"\x01"  # no initializing topics
            + b"\x02" + T1.bytes + b"\x02a" + b"\x02\x00\x00\x00\x00"
            + (1234).to_bytes(8, "big") + b"\x00"
            + b"\x01" + b"\x00")
    value = sgr.decode_value(sgr.ShareGroupStatePartitionMetadataKey("g"), body)
    assert value == sgr.ShareGroupStatePartitionMetadataValue(
        (), (sgr.TopicPartitionsInfo(T1, "a", (0,)),), ())


# The heartbeat, replayed -----------------------------------------------------------------------

TOPICS = {"t": (T1, 1), "u": (T2, 2)}
SETTINGS = ShareHeartbeatSettings(heartbeat_interval_ms=500, max_size=3)


def lookup(name: str):
    return TOPICS.get(name)


class Groups:
    def __init__(self) -> None:
        self.groups: dict[str, ShareGroup] = {}

    def beat(self, member_id: str, epoch: int, topics: tuple[str, ...] | None = None,
             group: str = "g"):
        result = heartbeat(self.groups.get(group),
                           ShareHeartbeatRequest(group, member_id, epoch,
                                                 subscribed_topic_names=topics),
                           SETTINGS, lookup)
        self.apply(result.records)
        return result

    def apply(self, records) -> None:
        for key, value in records:  # as the runtime does, through the bytes
            decoded = sgr.decode_key(sgr.encode_key(key))
            replay_record(self.groups, decoded,
                          None if value is None else sgr.decode_value(decoded,
                                                                      sgr.encode_value(value)))

    def code(self, *args, **kw) -> int:
        with pytest.raises(CoordinatorError) as caught:
            self.beat(*args, **kw)
        return caught.value.code


def test_join_assign_catch_up_and_steady():
    gs = Groups()
    a = gs.beat("a", 0, ("t",))
    assert (a.member_epoch, a.assignment) == (1, {T1: frozenset({0})})
    b = gs.beat("b", 0, ("t",))
    assert (b.member_epoch, b.assignment) == (2, {T1: frozenset({0})})
    a = gs.beat("a", 1)
    assert (a.member_epoch, a.assignment, a.records) == (2, None, [
        (sgr.ShareGroupCurrentMemberAssignmentKey("g", "a"),
         sgr.ShareGroupCurrentMemberAssignmentValue(2, 1, 0, (sgr.TopicPartitions(T1, (0,)),)))])
    steady = gs.beat("a", 2)
    assert (steady.member_epoch, steady.assignment, steady.records) == (2, None, [])
    # the same subscription again: nothing changes, no assignment (Kafka sends it on epoch 0
    # and when it changed)
    again = gs.beat("a", 2, ("t",))
    assert (again.member_epoch, again.assignment, again.records) == (2, None, [])
    group = gs.groups["g"]
    assert (group.state, group.group_epoch, group.assignment_epoch) == ("Stable", 2, 2)
    assert group.initialized == {T1: ("t", frozenset({0}))}


def test_subscription_change_reassigns():
    gs = Groups()
    gs.beat("a", 0, ("t",))
    r = gs.beat("a", 1, ("t", "u"))
    assert r.member_epoch == 2
    assert r.assignment == {T1: frozenset({0}), T2: frozenset({0, 1})}
    assert set(gs.groups["g"].initialized) == {T1, T2}


def test_errors():
    gs = Groups()
    assert gs.code("", 0, ("t",)) == INVALID_REQUEST
    assert gs.code("a", 0) == INVALID_REQUEST
    assert gs.code("a", -2) == INVALID_REQUEST
    assert gs.code("a", 1) == GROUP_ID_NOT_FOUND
    assert gs.code("a", -1) == GROUP_ID_NOT_FOUND
    gs.beat("a", 0, ("t",))
    assert gs.code("x", 1) == UNKNOWN_MEMBER_ID
    assert gs.code("x", -1) == UNKNOWN_MEMBER_ID
    assert gs.code("a", 5) == FENCED_MEMBER_EPOCH
    gs.beat("b", 0, ("t",))
    gs.beat("c", 0, ("t",))
    assert gs.code("d", 0, ("t",)) == GROUP_MAX_SIZE_REACHED
    gs.beat("a", 1)  # a moves to epoch 3; its previous epoch (1) is still accepted
    assert gs.beat("a", 1).member_epoch == 3
    assert gs.code("a", 2) == FENCED_MEMBER_EPOCH


def test_leave_and_fence_write_tombstones_and_bump_the_epoch():
    gs = Groups()
    gs.beat("a", 0, ("t",))
    gs.beat("b", 0, ("t",))
    left = gs.beat("b", -1)
    assert (left.member_epoch, left.left) == (-1, True)
    assert [sgr.RECORD_TYPES[type(k)] for k, v in left.records] == [14, 13, 10, 11]
    assert all(v is None for _k, v in left.records[:3])
    group = gs.groups["g"]
    assert list(group.members) == ["a"] and group.group_epoch == 3
    fenced = fence_member(group, "a", lookup)
    gs.apply(fenced)
    assert group.state == "Empty" and group.group_epoch == 4
    assert fence_member(group, "a", lookup) == []
    # the remaining target is recomputed at the next join
    r = gs.beat("c", 0, ("t",))
    assert (r.member_epoch, r.assignment) == (5, {T1: frozenset({0})})


def test_group_tombstones_delete_it():
    gs = Groups()
    gs.beat("a", 0, ("t",))
    gs.beat("a", -1)
    gs.apply(gs.groups["g"].tombstones())
    assert "g" not in gs.groups


# ApiVersions' features, both encodings -------------------------------------------------------

@pytest.mark.parametrize("share_version", [0, 1])
@pytest.mark.parametrize("version", [3, 4])
def test_hand_encoded_api_versions_carry_share_version(version, share_version):
    from kio.schema.errors import ErrorCode

    from kafkette.broker.api_versions import _response, response_body
    from kafkette.protocol.codec import codec

    expected = codec(18, version).encode_body(_response(version, ErrorCode.none, 2,
                                                        share_version))
    assert response_body(version, 0, 2, share_version) == expected
    finalized = {f.name for f in _response(version, ErrorCode.none, 2,
                                           share_version).finalized_features}
    assert ("share.version" in finalized) == bool(share_version)
