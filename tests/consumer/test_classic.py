"""Classic members of a consumer group (mixed groups) as pure ops: JoinGroup, SyncGroup,
Heartbeat, LeaveGroup against a consumer group, records replayed through their bytes."""

from __future__ import annotations

import struct

from kafkette.coordinator.group.consumer.classic_members import (
    ClassicJoin,
    classic_heartbeat,
    classic_join,
    classic_leave,
    classic_sync,
)
from kafkette.coordinator.group.consumer.member import MemberState
from kafkette.coordinator.runtime.error_codes import (
    FENCED_INSTANCE_ID,
    ILLEGAL_GENERATION,
    INCONSISTENT_GROUP_PROTOCOL,
    MEMBER_ID_REQUIRED,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
)
from kafkette.protocol.consumer_protocol import assignment_partitions

from .test_heartbeat import FOO, Shard, error


def subscription(*topics: str, owned: dict[str, list[int]] | None = None) -> bytes:
    """ConsumerProtocolSubscription v1 (topics, no user data, owned partitions)."""
    out = struct.pack(">hi", 1, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    out += struct.pack(">i", -1) + struct.pack(">i", len(owned or {}))
    for t, ps in (owned or {}).items():
        out += struct.pack(">h", len(t)) + t.encode() + struct.pack(f">i{len(ps)}i", len(ps), *ps)
    return out


def cjoin(shard: Shard, member_id: str, *, instance: str | None = None, version: int = 9,
          protocols=None, owned=None, protocol_type: str = "consumer"):
    request = ClassicJoin("g", member_id, instance, 10000, 20000, protocol_type,
                          protocols or (("range", subscription("foo", owned=owned)),),
                          "client", "/127.0.0.1", version)
    joined = classic_join(shard.groups["g"], request, shard.settings, shard.lookup)
    shard.apply(joined.records)
    return joined


def test_a_classic_member_joins_syncs_and_heartbeats():
    shard = Shard()
    shard.join("A")
    code, new_id = error(lambda: cjoin(shard, ""))
    assert code == MEMBER_ID_REQUIRED and new_id
    joined = cjoin(shard, new_id)
    assert (joined.member_id, joined.generation, joined.protocol_name) == (new_id, 2, "range")
    group = shard.groups["g"]
    member = group.members[new_id]
    assert member.uses_classic_protocol
    assert member.classic_member_metadata.session_timeout_ms == 10000
    # A still owns everything: the classic member waits (UNRELEASED_PARTITIONS)
    assert member.state == MemberState.UNRELEASED_PARTITIONS
    _m, payload = classic_sync(group, new_id, None, 2, "consumer", "range", lambda t: "foo")
    assert assignment_partitions(payload) == []
    assert classic_heartbeat(group, new_id, None, 2)[1] == 0  # still waiting on A
    assert error(lambda: classic_heartbeat(group, new_id, None, 1))[0] == ILLEGAL_GENERATION
    assert error(lambda: classic_sync(group, new_id, None, 2, "consumer", "roundrobin",
                                      lambda t: "foo"))[0] == INCONSISTENT_GROUP_PROTOCOL
    assert error(lambda: classic_heartbeat(group, "A", None, 1))[0] == UNKNOWN_MEMBER_ID
    # A revokes; now the classic member's partitions are free: it must rejoin
    a = shard.hb("A", 1, owned={FOO: frozenset(range(6))})
    shard.hb("A", 1, owned=a.assignment)
    assert classic_heartbeat(shard.groups["g"], new_id, None, 2)[1] == REBALANCE_IN_PROGRESS
    cjoin(shard, new_id)
    _m, payload = classic_sync(shard.groups["g"], new_id, None, 2, None, None, lambda t: "foo")
    assert sorted(p for _t, p in assignment_partitions(payload)) == [3, 4, 5]


def test_owned_partitions_of_the_subscription_are_revoked_through_a_rejoin():
    shard = Shard()
    shard.join("A")
    c = cjoin(shard, "C")
    group = shard.groups["g"]
    a = shard.hb("A", 1, owned={FOO: frozenset(range(6))})
    shard.hb("A", 1, owned=a.assignment)
    cjoin(shard, "C")
    mine = set(group.members["C"].assigned_partitions.get(FOO, ()))
    assert len(mine) == 3 and c.generation == 2
    # a new member bumps the epoch: C rejoins still reporting what it owns
    shard.join("B")
    group = shard.groups["g"]
    assert classic_heartbeat(group, "C", None, 2)[1] == REBALANCE_IN_PROGRESS
    cjoin(shard, "C", owned={"foo": sorted(mine)})
    member = shard.groups["g"].members["C"]
    assert member.state == MemberState.UNREVOKED_PARTITIONS
    # the sync hands out what it keeps; what it must give up is revoked before it rejoins
    _m, payload = classic_sync(shard.groups["g"], "C", None, member.member_epoch, None, None,
                               lambda t: "foo")
    kept = {p for _t, p in assignment_partitions(payload)}
    assert kept < mine and len(kept) == 2
    assert classic_heartbeat(shard.groups["g"], "C", None, member.member_epoch)[1] == \
        REBALANCE_IN_PROGRESS
    cjoin(shard, "C", owned={"foo": sorted(kept)})
    assert shard.groups["g"].members["C"].state != MemberState.UNREVOKED_PARTITIONS


def test_protocols_and_static_members():
    shard = Shard()
    shard.join("A")
    assert error(lambda: cjoin(shard, "C", protocol_type="connect"))[0] == \
        INCONSISTENT_GROUP_PROTOCOL
    cjoin(shard, "C", protocols=(("range", subscription("foo")),))
    other = (("roundrobin", subscription("foo")),)
    assert error(lambda: cjoin(shard, "D", protocols=other))[0] == INCONSISTENT_GROUP_PROTOCOL
    cjoin(shard, "S", instance="i-1")
    group = shard.groups["g"]
    assert error(lambda: classic_heartbeat(group, "X", "i-1", 3))[0] == FENCED_INSTANCE_ID
    assert error(lambda: classic_heartbeat(group, "S", "i-2", 3))[0] == UNKNOWN_MEMBER_ID


def test_leave_removes_members_one_epoch_each():
    shard = Shard()
    shard.join("A")
    cjoin(shard, "C")
    cjoin(shard, "S", instance="i-1")
    epoch = shard.groups["g"].group_epoch
    records, results, removed = classic_leave(
        shard.groups["g"], [("C", None), ("", "i-1"), ("nobody", None), ("Z", "i-1")],
        shard.lookup)
    assert [code for _m, _i, code in results] == [0, 0, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID]
    assert removed == ["C", "S"]
    shard.apply(records)
    group = shard.groups["g"]
    assert sorted(group.members) == ["A"] and group.group_epoch == epoch + 2
