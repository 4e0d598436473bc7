"""ConsumerGroupHeartbeat as a pure op, driven like the runtime will: every result's records go
through their bytes and are replayed into the shard's groups. Scenarios of Kafka's
GroupMetadataManagerTest (consumer part) and a randomized simulation of clients."""

from __future__ import annotations

import random
import uuid
from dataclasses import replace

import pytest

from kafkette.coordinator.group.assignor import RangeAssignor, UniformAssignor
from kafkette.coordinator.group.assignor.spec import make_assignment
from kafkette.coordinator.group.consumer.consumer_group_state import (
    ConsumerGroup,
    ConsumerGroupState,
    replay_record,
)
from kafkette.coordinator.group.consumer.heartbeat import (
    HeartbeatRequest,
    HeartbeatSettings,
    fence_member,
    heartbeat,
    refresh_regexes,
)
from kafkette.coordinator.group.consumer.member import MemberState
from kafkette.coordinator.runtime.error_codes import (
    FENCED_INSTANCE_ID,
    FENCED_MEMBER_EPOCH,
    GROUP_ID_NOT_FOUND,
    GROUP_MAX_SIZE_REACHED,
    INVALID_REGULAR_EXPRESSION,
    INVALID_REQUEST,
    UNKNOWN_MEMBER_ID,
    UNRELEASED_INSTANCE_ID,
    UNSUPPORTED_ASSIGNOR,
    CoordinatorError,
)
from kafkette.protocol import consumer_group_records as cgr

FOO, BAR = uuid.UUID(int=0xF00), uuid.UUID(int=0xBA2)
SETTINGS = HeartbeatSettings([UniformAssignor(), RangeAssignor()], heartbeat_interval_ms=250)


class Shard:
    """What the runtime does around the op: replay the records (via their bytes)."""

    def __init__(self, topics=None, settings=SETTINGS):
        self.topics = dict(topics or {"foo": (FOO, 6), "bar": (BAR, 3)})
        self.groups: dict[str, ConsumerGroup] = {}
        self.settings = settings
        self.version = 1
        self.refreshed: dict[str, tuple[dict, int]] = {}  # group -> (topics, group epoch)

    def lookup(self, name):
        return self.topics.get(name)

    def apply(self, recs):
        for key, value in recs:
            key = cgr.decode_key(cgr.encode_key(key))
            value = cgr.decode_value(key, None if value is None else cgr.encode_value(value))
            replay_record(self.groups, key, value)

    def hb(self, member_id, epoch, group="g", **fields):
        """As ConsumerGroupManager: the subscription metadata is trusted (metadata_changed
        False) until the topics change or the group epoch goes below the one it was computed
        at; then the answer must equal the one recomputing everything (None)."""
        request = HeartbeatRequest(group, member_id, epoch, **fields)
        current = self.groups.get(group)
        seen = self.refreshed.get(group)
        expired = (current is None or seen is None or seen[0] != self.topics
                   or current.group_epoch < seen[1])
        result = heartbeat(current, request, self.settings, self.lookup,
                           metadata_version=self.version, metadata_changed=expired)
        if not expired:
            full = heartbeat(current, request, self.settings, self.lookup,
                             metadata_version=self.version)
            assert replace(result, metadata_refreshed_epoch=None) == replace(
                full, metadata_refreshed_epoch=None)
        if result.metadata_refreshed_epoch is not None:
            self.refreshed[group] = (dict(self.topics), result.metadata_refreshed_epoch)
        self.apply(result.records)
        return result

    def join(self, member_id, topics=("foo",), **fields):
        fields.setdefault("rebalance_timeout_ms", 300000)
        return self.hb(member_id, 0, subscribed_topic_names=tuple(topics), owned={}, **fields)


def kinds(result):
    return [type(k).__name__.removeprefix("ConsumerGroup").removesuffix("Key") + ("-" if v is None else "")
            for k, v in result.records]


def error(call):
    with pytest.raises(CoordinatorError) as err:
        call()
    return err.value.code, err.value.message


JOIN = dict(rebalance_timeout_ms=5000, subscribed_topic_names=("foo",), owned={})


@pytest.mark.parametrize("request_fields,expected", [
    (dict(member_id="", member_epoch=0, api_version=1), "MemberId can't be empty."),
    (dict(member_id="  ", member_epoch=5, api_version=0), "MemberId can't be empty."),
    (dict(member_id="m", member_epoch=1, group_id="   "), "GroupId can't be empty."),
    (dict(member_id="m", member_epoch=0), "RebalanceTimeoutMs must be provided in first request."),
    (dict(member_id="m", member_epoch=0, rebalance_timeout_ms=5000),
     "TopicPartitions must be empty when (re-)joining."),
    (dict(member_id="m", member_epoch=0, rebalance_timeout_ms=5000,
          owned=make_assignment({FOO: [1]})), "TopicPartitions must be empty when (re-)joining."),
    (dict(member_id="m", member_epoch=0, rebalance_timeout_ms=5000, owned={}),
     "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."),
    (dict(member_id="m", member_epoch=1, instance_id=""), "InstanceId can't be empty."),
    (dict(member_id="m", member_epoch=1, rack_id=""), "RackId can't be empty."),
    (dict(member_id="m", member_epoch=-2), "InstanceId can't be null."),
    (dict(member_id="m", member_epoch=-3), "MemberEpoch is invalid."),
])
def test_request_validation(request_fields, expected):
    request = HeartbeatRequest(**{"group_id": "g", **request_fields})
    code, message = error(lambda: heartbeat(None, request, SETTINGS, lambda n: None))
    assert (code, message) == (INVALID_REQUEST, expected)


def test_unsupported_assignor_and_v0_generated_member_id():
    shard = Shard()
    code, message = error(lambda: shard.hb("m", 1, server_assignor="sticky"))
    assert code == UNSUPPORTED_ASSIGNOR
    assert message == "ServerAssignor sticky is not supported. Supported assignors: uniform, range."
    result = shard.hb("", 0, api_version=0, **JOIN)
    assert str(uuid.UUID(result.member_id)) == result.member_id and result.member_epoch == 1


def test_member_joins_empty_group():
    shard = Shard()
    result = shard.join("m1", ("foo", "bar"))
    assert kinds(result) == ["MemberMetadata", "PartitionMetadata", "Metadata",
                             "TargetAssignmentMember", "TargetAssignmentMetadata",
                             "CurrentMemberAssignment"]
    assert (result.member_id, result.member_epoch, result.heartbeat_interval_ms) == ("m1", 1, 250)
    assert result.assignment == make_assignment({FOO: range(6), BAR: range(3)})
    assert result.arm_session_timeout and result.cancel_rebalance_timeout
    group = shard.groups["g"]
    assert group.state == ConsumerGroupState.STABLE and group.group_epoch == 1
    # a plain heartbeat changes nothing and carries no assignment
    again = shard.hb("m1", 1)
    assert again.records == [] and again.assignment is None and again.member_epoch == 1


def test_unknown_group_member_and_epochs():
    shard = Shard()
    assert error(lambda: shard.hb("m1", 1))[0] == GROUP_ID_NOT_FOUND
    shard.join("m1")
    assert error(lambda: shard.hb("ghost", 1))[0] == UNKNOWN_MEMBER_ID
    assert error(lambda: shard.hb("m1", 2))[0] == FENCED_MEMBER_EPOCH
    assert error(lambda: shard.hb("m1", -1, group="other"))[0] == GROUP_ID_NOT_FOUND
    # rejoin of a known member with epoch 0 is accepted (KAFKA-19233)
    assert shard.join("m1").member_epoch == 1


def test_revocation_before_assignment_between_two_members():
    shard = Shard()
    shard.join("m1")
    joined = shard.join("m2")
    assert joined.member_epoch == 2 and joined.assignment == {}
    assert shard.groups["g"].members["m2"].state == MemberState.UNRELEASED_PARTITIONS
    owned = make_assignment({FOO: range(6)})
    first = shard.hb("m1", 1, owned=owned)
    assert first.member_epoch == 1 and first.arm_rebalance_timeout_ms == 300000
    kept = first.assignment
    assert sum(map(len, kept.values())) == 3
    # m1 still reports everything: stays UNREVOKED; m2 gets nothing meanwhile
    assert shard.hb("m1", 1, owned=owned).records == []
    assert shard.hb("m2", 2, owned={}).assignment is None
    done = shard.hb("m1", 1, owned=kept)
    assert done.member_epoch == 2 and done.cancel_rebalance_timeout
    got = shard.hb("m2", 2, owned={})
    assert got.member_epoch == 2 and sum(map(len, got.assignment.values())) == 3
    assert not set(got.assignment[FOO]) & set(kept[FOO])
    assert shard.groups["g"].state == ConsumerGroupState.STABLE
    # a heartbeat at the previous epoch with a subset of the assignment is accepted
    assert shard.hb("m1", 1, owned=kept).member_epoch == 2
    assert error(lambda: shard.hb("m1", 1, owned=make_assignment({FOO: range(6)})))[0] == \
        FENCED_MEMBER_EPOCH


def test_leave_bumps_the_epoch_and_the_other_member_takes_over():
    shard = Shard()
    shard.join("m1")
    shard.join("m2")
    m1 = shard.hb("m1", 1, owned=make_assignment({FOO: range(6)}))
    shard.hb("m1", 1, owned=m1.assignment)
    shard.hb("m2", 2, owned={})
    left = shard.hb("m2", -1)
    assert (left.member_id, left.member_epoch, left.cancel_timers) == ("m2", -1, True)
    assert kinds(left) == ["CurrentMemberAssignment-", "TargetAssignmentMember-",
                           "MemberMetadata-", "Metadata"]
    assert shard.groups["g"].group_epoch == 3
    back = shard.hb("m1", 2)
    assert back.member_epoch == 3 and back.assignment == make_assignment({FOO: range(6)})


def test_static_member_leaves_temporarily_and_is_replaced_without_rebalance():
    shard = Shard()
    shard.join("a", instance_id="i1")
    shard.join("b", instance_id="i2")
    a = shard.hb("a", 1, owned=make_assignment({FOO: range(6)}))
    shard.hb("a", 1, owned=a.assignment)
    b = shard.hb("b", 2, owned={})
    group = shard.groups["g"]
    epoch = group.group_epoch
    away = shard.hb("b", -2, instance_id="i2")
    assert (away.member_epoch, kinds(away), away.arm_session_timeout) == (
        -2, ["CurrentMemberAssignment"], False)
    assert group.group_epoch == epoch
    # the instance comes back with a new member id: it gets its partitions back at once
    back = shard.join("b2", instance_id="i2")
    assert back.replaced_member_id == "b" and back.assignment == b.assignment
    assert back.member_epoch == epoch and group.group_epoch == epoch
    assert set(group.members) == {"a", "b2"} and group.static_members["i2"] == "b2"
    # a live instance id cannot be taken; a stale member id is fenced; unknown instance
    assert error(lambda: shard.join("b3", instance_id="i2"))[0] == UNRELEASED_INSTANCE_ID
    assert error(lambda: shard.hb("b", epoch, instance_id="i2"))[0] == FENCED_INSTANCE_ID
    assert error(lambda: shard.hb("x", 1, instance_id="i9"))[0] == UNKNOWN_MEMBER_ID
    # leaving for good (-1 with the instance id) fences it
    gone = shard.hb("b2", -1, instance_id="i2")
    assert gone.cancel_timers and group.static_members == {"i1": "a"}


def test_group_max_size():
    shard = Shard(settings=HeartbeatSettings([UniformAssignor()], max_size=1))
    shard.join("m1")
    assert error(lambda: shard.join("m2"))[0] == GROUP_MAX_SIZE_REACHED
    assert shard.join("m1").member_epoch == 1  # a member already in the group may rejoin


def test_preferred_server_assignor_is_used():
    shard = Shard(topics={"foo": (FOO, 4), "bar": (BAR, 4)})
    shard.join("a", ("foo", "bar"), server_assignor="range")
    shard.join("b", ("foo", "bar"), server_assignor="range")
    target = shard.groups["g"].target
    # range co-partitions: each member gets the same partitions of both topics
    assert target["a"] == make_assignment({FOO: [0, 1], BAR: [0, 1]})
    assert target["b"] == make_assignment({FOO: [2, 3], BAR: [2, 3]})


def test_regex_subscription_resolves_and_follows_new_topics():
    shard = Shard()
    code, message = error(lambda: shard.hb("m1", 0, rebalance_timeout_ms=5000, owned={},
                                           subscribed_topic_regex="[", ))
    assert code == INVALID_REGULAR_EXPRESSION and message.startswith("SubscribedTopicRegex `[`")
    joined = shard.hb("m1", 0, rebalance_timeout_ms=5000, owned={}, subscribed_topic_regex="f.*")
    assert joined.regex_refresh_needed and joined.assignment == {}
    group = shard.groups["g"]
    shard.apply(refresh_regexes(group, shard.lookup, shard.topics, shard.version, 1000))
    assert group.resolved_regexes["f.*"].topics == {"foo"} and group.group_epoch == 2
    got = shard.hb("m1", 1, owned={})
    assert got.member_epoch == 2 and got.assignment == make_assignment({FOO: range(6)})
    # a topic created later: the next heartbeat asks for a refresh, which adds it
    shard.topics["fresh"] = (uuid.UUID(int=7), 2)
    shard.version = 2
    assert shard.hb("m1", 2).regex_refresh_needed
    shard.apply(refresh_regexes(group, shard.lookup, shard.topics, shard.version, 2000))
    got = shard.hb("m1", 2, owned=got.assignment)
    assert got.assignment == make_assignment({FOO: range(6), uuid.UUID(int=7): [0, 1]})
    # the last subscriber leaves: the regex record is tombstoned
    assert group.has_regex_subscribers
    left = shard.hb("m1", -1)
    assert "RegularExpression-" in kinds(left) and group.resolved_regexes == {}
    assert not group.has_regex_subscribers and group.regex_subscribers() == {}


def test_fence_member_of_a_gone_member_is_empty():
    shard = Shard()
    shard.join("m1")
    assert fence_member(shard.groups["g"], "ghost", shard.lookup) == []
    shard.apply(fence_member(shard.groups["g"], "m1", shard.lookup))
    assert shard.groups["g"].state == ConsumerGroupState.EMPTY


@pytest.mark.parametrize("seed", range(15))
def test_random_clients_never_own_a_partition_twice_and_converge(seed):
    rng = random.Random(seed)
    shard = Shard(topics={"foo": (FOO, rng.randint(1, 8)), "bar": (BAR, rng.randint(1, 5))})
    # member id -> epoch, owned (the assignment it uses), revoking (given up in the last
    # response: still held until its next heartbeat, as a client commits before revoking)
    clients: dict[str, dict] = {}
    next_id = 0

    def step(member_id):
        c = clients[member_id]
        c["revoking"] = {}  # revocation finished before this heartbeat
        result = shard.hb(member_id, c["epoch"], owned=c["owned"])
        c["epoch"] = result.member_epoch
        if result.assignment is not None:
            c["revoking"] = {t: ps - result.assignment.get(t, frozenset())
                             for t, ps in c["owned"].items()}
            c["owned"] = result.assignment
        owners = {}
        for m, other in clients.items():
            for held in (other["owned"], other["revoking"]):
                for t, ps in held.items():
                    for p in ps:
                        assert (t, p) not in owners, f"{t}/{p} held by {owners[(t, p)]} and {m}"
                        owners[(t, p)] = m

    for _ in range(40):
        action = rng.random()
        if action < 0.25 or not clients:
            member_id = f"c{next_id}"
            next_id += 1
            joined = shard.join(member_id, rng.choice([("foo",), ("foo", "bar")]))
            clients[member_id] = {"epoch": joined.member_epoch, "owned": joined.assignment,
                                  "revoking": {}}
        elif action < 0.35 and len(clients) > 1:
            member_id = rng.choice(sorted(clients))
            shard.hb(member_id, -1)
            del clients[member_id]
        else:
            step(rng.choice(sorted(clients)))
    for _ in range(10):  # quiet period: everyone heartbeats until stable
        for member_id in sorted(clients):
            step(member_id)
    group = shard.groups["g"]
    assert group.state == ConsumerGroupState.STABLE
    owned = [(t, p) for c in clients.values() for t, ps in c["owned"].items() for p in ps]
    subscribed = {t for c in group.members.values() for t in c.subscribed_topic_names}
    expected = sum(shard.topics[t][1] for t in subscribed)
    assert len(owned) == len(set(owned)) == expected


def test_group_deletion_through_tombstones_removes_it_from_the_shard():
    shard = Shard()
    shard.join("m1")
    shard.hb("m1", -1)
    group = shard.groups["g"]
    group.validate_delete()
    shard.apply(group.tombstones())
    assert "g" not in shard.groups
    shard.apply(group.tombstones())  # replaying tombstones of a gone group is harmless
    assert "g" not in shard.groups


def test_subscription_change_triggers_a_new_target_with_kafkas_records():
    shard = Shard()
    shard.join("m1", ("foo",))
    result = shard.hb("m1", 1, subscribed_topic_names=("foo", "bar"))
    assert kinds(result) == ["MemberMetadata", "PartitionMetadata", "Metadata",
                             "TargetAssignmentMember", "TargetAssignmentMetadata",
                             "CurrentMemberAssignment"]
    assert result.member_epoch == 2
    assert result.assignment == make_assignment({FOO: range(6), BAR: range(3)})


def test_rack_or_client_change_writes_the_member_only():
    shard = Shard()
    shard.join("m1", client_id="a")
    result = shard.hb("m1", 1, rack_id="r2", rebalance_timeout_ms=1000, server_assignor="range")
    assert kinds(result) == ["MemberMetadata"] and shard.groups["g"].group_epoch == 1
    member = shard.groups["g"].members["m1"]
    assert (member.rack_id, member.rebalance_timeout_ms, member.server_assignor) == ("r2", 1000, "range")


def test_member_without_topics_joins_without_a_rebalance():
    shard = Shard()
    shard.join("m1")
    joined = shard.join("m2", ())
    assert kinds(joined) == ["MemberMetadata", "CurrentMemberAssignment"]
    assert joined.member_epoch == 1 and joined.assignment == {}
    assert shard.groups["g"].group_epoch == 1


def test_new_static_member_bumps_and_rejoin_with_new_topics_bumps_once():
    shard = Shard()
    shard.join("a", ("foo",), instance_id="i1")
    joined = shard.join("b", ("foo",), instance_id="i2")
    assert joined.member_epoch == 2
    shard.hb("b", 2, instance_id="i2", owned={})
    shard.hb("b", -2, instance_id="i2")
    back = shard.join("b2", ("foo", "bar"), instance_id="i2")
    assert kinds(back)[:6] == ["CurrentMemberAssignment-", "TargetAssignmentMember-",
                               "MemberMetadata-", "MemberMetadata", "TargetAssignmentMember",
                               "CurrentMemberAssignment"]
    assert back.member_epoch == 3 and shard.groups["g"].group_epoch == 3
    assert BAR in shard.groups["g"].target["b2"]


def test_unknown_static_member_leaving():
    shard = Shard()
    shard.join("a", instance_id="i1")
    assert error(lambda: shard.hb("a", -2, instance_id="nope"))[0] == UNKNOWN_MEMBER_ID
    assert error(lambda: shard.hb("x", -1, instance_id="i1"))[0] == FENCED_INSTANCE_ID
    assert error(lambda: shard.hb("x", -1))[0] == UNKNOWN_MEMBER_ID


def test_member_record_of_a_names_only_member_is_byte_exact():
    # Kafka's member builder defaults SubscribedTopicRegex to "" (not null), so every member
    # record of a names-only member carries an empty compact string there.
    shard = Shard()
    result = shard.join("m1", ("foo",), client_id="c", client_host="/h")
    key, value = result.records[0]
    expected = (b"\x00\x00" + b"\x00" + b"\x00" + b"\x02c" + b"\x03/h" + b"\x02" + b"\x04foo"
                + b"\x01" + (300000).to_bytes(4, "big") + b"\x00" + b"\x00")
    assert cgr.encode_value(value) == expected
    assert cgr.encode_key(key) == b"\x00\x05" + b"\x00\x01g" + b"\x00\x02m1"


def test_topic_changes_reach_the_group_on_the_next_heartbeat():
    shard = Shard()
    shard.join("m1", ("foo", "later"))
    shard.topics["foo"] = (FOO, 8)  # partitions added
    grown = shard.hb("m1", 1)
    assert kinds(grown)[:2] == ["PartitionMetadata", "Metadata"] and grown.member_epoch == 2
    assert grown.assignment == make_assignment({FOO: range(8)})
    shard.topics["later"] = (BAR, 2)  # a subscribed topic is created
    created = shard.hb("m1", 2)
    assert created.member_epoch == 3 and BAR in created.assignment
    del shard.topics["foo"]  # and one is deleted
    # the member first gives up the deleted topic's partitions, then moves to the new epoch
    deleted = shard.hb("m1", 3)
    assert deleted.member_epoch == 3 and deleted.assignment == make_assignment({BAR: [0, 1]})
    done = shard.hb("m1", 3, owned=deleted.assignment)
    assert done.member_epoch == 4
    assert shard.hb("m1", 4).records == []  # nothing changed since


def test_owned_from_request_topic_partitions():
    assert HeartbeatRequest.owned_from(None) is None
    assert HeartbeatRequest.owned_from([(FOO, [1]), (FOO, [2]), (BAR, [])]) == make_assignment(
        {FOO: [1, 2]})


@pytest.mark.parametrize("change", [{"client_id": "other"}, {"client_host": "/10.0.0.9"},
                                    {"rack_id": "r2"}, {"rebalance_timeout_ms": 1000}])
def test_a_steady_member_changing_one_field_is_not_a_regular_heartbeat(change):
    # The regular heartbeat's shortcut (every field null/-1, same client) must not swallow a
    # field that changed: the member record is written and the member shows the new value.
    shard = Shard()
    shard.join("m1", client_id="c", client_host="/h")
    shard.hb("m1", 1, owned=make_assignment({FOO: range(6)}), client_id="c", client_host="/h")
    steady = shard.hb("m1", 1, client_id="c", client_host="/h")
    assert steady.records == [] and steady.member_epoch == 1
    fields = {"client_id": "c", "client_host": "/h", **change}
    changed = shard.hb("m1", 1, **fields)
    assert kinds(changed) == ["MemberMetadata"]
    member = shard.groups["g"].members["m1"]
    for name, value in change.items():
        assert getattr(member, name) == value
