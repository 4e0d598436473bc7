"""The classic state machine alone: requests and records in, records and responses out.

No sockets, no files, no running event loop: a fake context gives time (a ManualClock), keyed
timers whose ops' results are collected like the runtime would run them, and parked futures.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kafkette.coordinator.group.group_config import CoordinatorConfig
from kafkette.coordinator.group.group_shard import GroupCoordinatorShard
from kafkette.coordinator.group.offsets.offset_manager import CommitPartition
from kafkette.coordinator.group.requests import JoinRequest, OffsetCommitRequest, SyncRequest
from kafkette.coordinator.runtime.clock import ManualClock
from kafkette.coordinator.runtime.error_codes import (
    GROUP_ID_NOT_FOUND,
    ILLEGAL_GENERATION,
    NON_EMPTY_GROUP,
    NONE,
    OFFSET_METADATA_TOO_LARGE,
    UNKNOWN_MEMBER_ID,
)
from kafkette.coordinator.runtime.result import Result
from kafkette.protocol.group_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    decode_key,
    decode_offset_value,
    decode_value,
    encode_key,
    encode_value,
)

from .env import subscription

SESSION = 10_000


class FakeContext:
    """A PartitionContext stand-in: timer ops run when the clock says so, their results (and
    replays, as the runtime does) are collected in ``fired``."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.loop = asyncio.new_event_loop()  # futures only: never run
        self.shard: GroupCoordinatorShard | None = None
        self.fired: list[Result] = []

    def schedule(self, key: Any, delay_ms: int, op: Any) -> None:
        self.clock.schedule(key, delay_ms, lambda: self._fire(op))

    def _fire(self, op: Any) -> None:
        assert self.shard is not None
        result = op(self.shard)
        if result.replay and result.records:
            self.shard.replay_all(result.records)
        self.fired.append(result)

    writes_failing = False

    def touch(self, key: Any, delay_ms: int) -> bool:
        return self.clock.extend(key, delay_ms, None)

    def cancel(self, key: Any) -> None:
        self.clock.cancel(key)

    def now_ms(self) -> int:
        return self.clock.now_ms()

    def new_future(self) -> asyncio.Future:
        return self.loop.create_future()

    def close(self) -> None:
        self.loop.close()


@pytest.fixture
def shard():
    clock = ManualClock()
    ctx = FakeContext(clock)
    config = CoordinatorConfig(initial_rebalance_delay_ms=3000, retention_check_interval_ms=60_000,
                               offsets_retention_ms=600_000)
    ctx.shard = GroupCoordinatorShard(0, ctx, config)
    ctx.shard.on_loaded()
    yield ctx.shard
    ctx.close()


def _ctx(shard: GroupCoordinatorShard) -> FakeContext:
    return shard.context  # type: ignore[return-value]


def _decoded(result: Result) -> list[tuple[Any, Any]]:
    out = []
    for k, v in result.records:
        key = decode_key(k)
        out.append((key, None if v is None else decode_value(key, v)))
    return out


def _join(group: str = "g", member: str = "", version: int = 3) -> JoinRequest:
    return JoinRequest(group, member, None, SESSION, SESSION, "consumer",
                       (("range", subscription("t")),), "client", "/10.0.0.1", version)


def _apply(shard: GroupCoordinatorShard, result: Result) -> None:
    """What the runtime does with a write's records once they are durable."""
    if result.replay:
        shard.replay_all(result.records)
    if result.on_durable is not None:
        result.on_durable()


def _form(shard: GroupCoordinatorShard) -> tuple[str, int]:
    """One member joins a new group, the initial delay passes, it syncs as leader."""
    joined = shard.join_group(_join())
    _apply(shard, joined)
    _ctx(shard).clock.advance(3000)
    answer = joined.response.result()
    synced = shard.sync_group(SyncRequest("g", answer.member_id, None, answer.generation,
                                          "consumer", "range", {answer.member_id: b"a"}))
    _apply(shard, synced)
    return answer.member_id, answer.generation


def test_join_of_a_new_group_writes_an_empty_group_then_parks(shard):
    result = shard.join_group(_join())
    (key, value), = _decoded(result)
    assert key == GroupMetadataKey("g") and not result.replay
    assert (value.protocol_type, value.generation, value.protocol, value.members) == ("", 0, None, ())
    assert not result.response.done()  # parked for the initial rebalance delay
    assert shard.groups["g"].state.value == "PreparingRebalance"
    _ctx(shard).clock.advance(2999)
    assert not result.response.done()
    _ctx(shard).clock.advance(1)
    answer = result.response.result()
    assert (answer.error, answer.generation, answer.leader) == (NONE, 1, answer.member_id)
    assert [m for m, _i, _md in answer.members] == [answer.member_id]
    assert _ctx(shard).fired[-1].records == ()  # completing the join writes nothing yet


def test_leader_sync_persists_the_assignment_and_answers_once_durable(shard):
    joined = shard.join_group(_join())
    _ctx(shard).clock.advance(3000)
    member = joined.response.result().member_id
    synced = shard.sync_group(SyncRequest("g", member, None, 1, "consumer", "range",
                                          {member: b"assigned"}))
    (key, value), = _decoded(synced)
    assert key == GroupMetadataKey("g") and not synced.replay
    assert (value.generation, value.protocol, value.leader) == (1, "range", member)
    assert [(m.member_id, m.assignment, m.subscription) for m in value.members] == [
        (member, b"assigned", subscription("t"))]
    assert not synced.response.done()  # only once the record is durable
    synced.on_durable()
    answer = synced.response.result()
    assert (answer.error, answer.assignment, answer.protocol_name) == (NONE, b"assigned", "range")
    assert shard.groups["g"].state.value == "Stable"


def test_heartbeats_answer_without_records(shard):
    member, generation = _form(shard)
    for args, code in (
        (("nope", member, None, generation), UNKNOWN_MEMBER_ID),
        (("g", "stranger", None, generation), UNKNOWN_MEMBER_ID),
        (("g", member, None, generation + 1), ILLEGAL_GENERATION),
        (("g", member, None, generation), NONE),
    ):
        result = shard.heartbeat(args)
        assert (result.records, result.response) == ((), code)


def test_session_timeout_empties_the_group_and_writes_it(shard):
    member, _generation = _form(shard)
    clock = _ctx(shard).clock
    clock.advance(SESSION - 1)
    assert shard.heartbeat(("g", member, None, 1)).response == NONE  # re-arms the session
    clock.advance(SESSION - 1)
    assert shard.groups["g"].members
    clock.advance(1)
    (key, value), = _decoded(_ctx(shard).fired[-1])
    assert key == GroupMetadataKey("g")
    assert (value.generation, value.members, value.protocol) == (2, (), None)
    assert shard.groups["g"].state.value == "Empty"


def test_timer_of_a_member_that_left_does_nothing(shard):
    member, _generation = _form(shard)
    left = shard.leave_group("g", [(member, None)])
    assert left.response == (NONE, [(member, None, NONE)])
    (_key, value), = _decoded(left)  # the group is empty now: generation 2 written
    assert (value.generation, value.members) == (2, ())
    fired = len(_ctx(shard).fired)
    _ctx(shard).clock.advance(SESSION * 2)  # past its session, before the retention check
    assert [r.records for r in _ctx(shard).fired[fired:]] == []
    assert shard.groups["g"].generation == 2


def test_commit_stores_its_offset_records_as_their_replay_would(shard):
    parts = [CommitPartition("t", 0, 42, 3, "meta"), CommitPartition("t", 1, 7, -1, None),
             CommitPartition("t", 2, 1, -1, "x" * 5000)]
    result = shard.commit_offsets((OffsetCommitRequest("simple", -1, "", None, -1, 9), parts))
    assert result.response == [NONE, NONE, OFFSET_METADATA_TOO_LARGE]
    keys = [decode_key(k) for k, _v in result.records]
    assert keys == [OffsetCommitKey("simple", "t", 0), OffsetCommitKey("simple", "t", 1)]
    assert decode_offset_value(result.records[0][1]).metadata == "meta"
    assert not result.replay  # the op stored them: the simple group and its offsets exist
    expected = [("t", [(0, 42, 3, "meta", 0), (1, 7, -1, "", 0), (2, -1, -1, "", 0)])]
    assert shard.groups["simple"].state.value == "Empty"
    assert shard.fetch_offsets("simple", [("t", [0, 1, 2])]) == expected
    shard.replay_all(list(result.records))  # what a reload from the log does
    assert shard.fetch_offsets("simple", [("t", [0, 1, 2])]) == expected


def test_commit_validation_errors_write_nothing(shard):
    member, generation = _form(shard)
    part = [CommitPartition("t", 0, 1, -1, None)]
    for request, code in (
        (OffsetCommitRequest("unknown", 1, "m", None, -1, 9), GROUP_ID_NOT_FOUND),
        (OffsetCommitRequest("unknown", 1, "m", None, -1, 8), ILLEGAL_GENERATION),
        (OffsetCommitRequest("g", generation + 1, member, None, -1, 9), ILLEGAL_GENERATION),
        (OffsetCommitRequest("g", -1, "", None), UNKNOWN_MEMBER_ID),
    ):
        result = shard.commit_offsets((request, part))
        assert (result.records, result.response) == ((), [code])
    request = OffsetCommitRequest("g", generation, member, None, -1, 9)
    assert shard.commit_offsets((request, part)).response == [NONE]


def test_delete_groups_writes_offset_and_group_tombstones(shard):
    member, _generation = _form(shard)
    _apply(shard, shard.commit_offsets((OffsetCommitRequest("s", -1, "", None),
                                        [CommitPartition("t", p, 1, -1, None) for p in (0, 1)])))
    result = shard.delete_groups(["g", "s", "nope"])
    assert result.response == [("g", NON_EMPTY_GROUP), ("s", NONE),
                               ("nope", GROUP_ID_NOT_FOUND)]
    assert _decoded(result) == [(OffsetCommitKey("s", "t", 0), None),
                                (OffsetCommitKey("s", "t", 1), None), (GroupMetadataKey("s"), None)]
    _apply(shard, result)
    assert "s" not in shard.groups and shard.fetch_offsets("s", None) == []


def test_deleted_partitions_tombstone_every_groups_offsets(shard):
    for group in ("a", "b"):
        _apply(shard, shard.commit_offsets((OffsetCommitRequest(group, -1, "", None, -1, 9), [
            CommitPartition("gone", 0, 5, -1, None), CommitPartition("gone", 1, 6, -1, None),
            CommitPartition("kept", 0, 7, -1, None)])))
    result = shard.on_partitions_deleted([("gone", 0), ("gone", 1), ("never", 0)])
    assert sorted((k.group, k.topic, k.partition) for k, _v in _decoded(result)) == [
        ("a", "gone", 0), ("a", "gone", 1), ("b", "gone", 0), ("b", "gone", 1)]
    assert all(v is None for _k, v in _decoded(result))
    _apply(shard, result)
    for group in ("a", "b"):
        assert shard.fetch_offsets(group, None) == [("kept", [(0, 7, -1, "", 0)])]


def test_retention_timer_expires_offsets_of_empty_groups(shard):
    _apply(shard, shard.commit_offsets((OffsetCommitRequest("s", -1, "", None),
                                        [CommitPartition("t", 0, 1, -1, None)])))
    clock = _ctx(shard).clock
    clock.advance(600_000 - 60_000)  # checks so far: nothing old enough
    assert all(not r.records for r in _ctx(shard).fired)
    clock.advance(60_000)
    assert _decoded(_ctx(shard).fired[-1]) == [(OffsetCommitKey("s", "t", 0), None),
                                               (GroupMetadataKey("s"), None)]
    assert "s" not in shard.groups


def test_replayed_group_record_restores_members_and_timers(shard):
    value = GroupMetadataValue("consumer", 4, "range", "m1", 1_700_000_000_000, (
        MemberMetadata("m1", None, "c", "/h", SESSION, SESSION, subscription("t"), b"a1"),))
    shard.replay(encode_key(GroupMetadataKey("g")), encode_value(value))
    group = shard.groups["g"]
    assert (group.state.value, group.generation, group.leader_id) == ("Stable", 4, "m1")
    assert group.subscribed_topics == frozenset({"t"})
    shard.on_loaded()  # arms the session timer of every member
    _ctx(shard).clock.advance(SESSION)
    assert shard.groups["g"].state.value == "Empty"


def test_a_protocol_listed_twice_by_one_member_is_still_selected(shard):
    """Found by the fuzzer: [range, range] from the only member counted two votes for one
    member, no protocol had every member's vote and the join never completed."""
    twice = (("range", subscription("t")), ("range", subscription("t")))
    request = JoinRequest("g", "", None, SESSION, SESSION, "consumer", twice, "client",
                          "/10.0.0.1", 3)
    joined = shard.join_group(request)
    _ctx(shard).clock.advance(3000)
    answer = joined.response.result()
    assert (answer.error, answer.protocol_name, answer.generation) == (NONE, "range", 1)


def _rejoin_and_sync(shard: GroupCoordinatorShard, member: str, protocols: tuple,
                     rebalance_ms: int = SESSION, session_ms: int = SESSION) -> Result:
    """The (leader) member rejoins its Stable group and syncs: the sync's Result."""
    joined = shard.join_group(JoinRequest("g", member, None, session_ms, rebalance_ms, "consumer",
                                          protocols, "client", "/10.0.0.1", 3))
    _apply(shard, joined)
    answer = joined.response.result()
    assert answer.error == NONE
    synced = shard.sync_group(SyncRequest("g", member, None, answer.generation, "consumer",
                                          "range", {member: b"a%d" % answer.generation}))
    _apply(shard, synced)
    assert synced.response.result().error == NONE
    return synced


def test_group_record_and_subscribed_topics_follow_a_rejoin_with_new_protocols_or_timeouts(shard):
    # Kept per member across generations (Member.record_cache / topics_cache): a rejoin that
    # changes nothing writes the same member bytes, one that changes them writes the new ones.
    member, _ = _form(shard)
    group = shard.groups["g"]
    assert group.subscribed_topics == frozenset({"t"})
    same = _rejoin_and_sync(shard, member, (("range", subscription("t")),))
    (_key, value), = _decoded(same)
    assert same.records[0][1] == encode_value(value)  # byte-exact with the value's encoding
    assert [(m.subscription, m.rebalance_timeout, m.session_timeout, m.assignment)
            for m in value.members] == [(subscription("t"), SESSION, SESSION, b"a2")]
    changed = _rejoin_and_sync(shard, member, (("range", subscription("u", "v")),))
    (_key, value), = _decoded(changed)
    assert [m.subscription for m in value.members] == [subscription("u", "v")]
    assert group.subscribed_topics == frozenset({"u", "v"})
    slower = _rejoin_and_sync(shard, member, (("range", subscription("u", "v")),),
                              rebalance_ms=SESSION * 3, session_ms=SESSION * 2)
    (_key, value), = _decoded(slower)
    assert [(m.rebalance_timeout, m.session_timeout, m.assignment) for m in value.members] == [
        (SESSION * 3, SESSION * 2, b"a4")]
    assert slower.records[0][1] == encode_value(value)
