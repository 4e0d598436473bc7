"""__consumer_offsets persistence: restart replay, record bytes, batching, append failures."""

from __future__ import annotations

import asyncio

import pytest

from coordinator.clock import ManualClock
from coordinator.log import MemoryLog
from coordinator.shard import CommitPartition, CoordinatorConfig, Shard
from protocol.group_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)

from .env import DESCRIBE, Env
from .test_join_sync import form


def test_restart_replays_groups_and_offsets(make_env):
    e: Env = make_env()
    e.create_topic("t", 3)
    gid, (a, b), leader, _f = form(e, 2, session=60_000)
    gen = a.generation
    for m, p in ((a, 0), (b, 1)):
        assert m.commit(gid, {("t", p): (100 + p, f"m{p}")}, generation=gen,
                        member_id=m.member_id) == {("t", p): 0}
    e.broker.restart()
    for m in (a, b):
        m.reconnect()
    d = a.request(DESCRIBE, 5, groups=(gid,), include_authorized_operations=False).groups[0]
    assert (d.group_state, d.protocol_data) == ("Stable", "range")
    assert sorted(x.member_id for x in d.members) == sorted([a.member_id, b.member_id])
    assert {x.member_id: x.member_assignment for x in d.members} == {
        m.member_id: f"a-{m.member_id}".encode() for m in (a, b)}
    assert e.group(gid).generation == gen and e.group(gid).leader_id == leader.member_id
    assert a.heartbeat(gid) == 0 and b.heartbeat(gid) == 0
    assert a.fetch(gid, [("t", 0), ("t", 1)]) == {("t", 0): (100, -1, "m0", 0),
                                                   ("t", 1): (101, -1, "m1", 0)}
    # A member that does not come back is expired after its session timeout and the group
    # rebalances (timers are re-armed on load).
    e.advance(59_000)
    assert a.heartbeat(gid) == 0
    e.advance(2_000)
    assert a.heartbeat(gid) == 27


def test_record_bytes_after_restart(make_env):
    e: Env = make_env()
    e.create_topic("orders", 4)
    gid = "my-group"
    m = e.member()
    assert m.commit(gid, {("orders", 3): 42}) == {("orders", 3): 0}
    e.broker.restart()
    raw = [(k, v) for k, v in e.raw_offsets_records() if decode_key(k) == OffsetCommitKey(gid, "orders", 3)]
    assert len(raw) == 1
    key, value = raw[0]
    assert key.hex() == "000100086d792d67726f757000066f726465727300000003"  # §4.4 key v1
    ts = e.clock.now_ms().to_bytes(8, "big").hex()
    assert value.hex() == "0003000000000000002a" + "ffffffff" + "0000" + ts  # value v3, epoch -1
    assert decode_value(decode_key(key), value) == OffsetCommitValue(42, -1, "", e.clock.now_ms())


def test_empty_group_record_bytes(make_env):
    e: Env = make_env()
    gid = e.group_id()
    assert e.member().join(gid, member_id="").error_code == 79
    raw = [(k, v) for k, v in e.raw_offsets_records() if k == encode_key(GroupMetadataKey(gid))]
    ts = e.clock.now_ms().to_bytes(8, "big").hex()
    assert [v.hex() for _k, v in raw] == ["0003000000000000ffffffff" + ts + "00000000"]


# Shard with an in-memory log ---------------------------------------------------------------------

def _shard(linger: int = 5) -> tuple[Shard, MemoryLog, ManualClock]:
    log, clock = MemoryLog(), ManualClock()
    shard = Shard(0, log, clock, CoordinatorConfig(append_linger_ms=linger))
    return shard, log, clock


async def test_commits_share_one_append():
    shard, log, _clock = _shard()
    await shard.load()
    writes = []
    for i in range(50):
        errors, write = shard.commit_offsets(f"g{i % 5}", -1, "", None, -1,
                                             [CommitPartition("t", i, i, -1, None)], 9)
        assert errors == [0]
        writes.append(write)
    await asyncio.gather(*writes)
    assert log.batches == 1 and len(log.records) == 50


async def test_failed_append_reverts_offsets_and_fails_commit():
    shard, log, _clock = _shard()
    await shard.load()
    _e, w = shard.commit_offsets("g", -1, "", None, -1, [CommitPartition("t", 0, 5, -1, None)], 9)
    await w
    log.fail_with = TimeoutError("disk stalled")
    _e, w = shard.commit_offsets("g", -1, "", None, -1, [CommitPartition("t", 0, 9, -1, None)], 9)
    assert shard.fetch_offsets("g", [("t", [0])])[0][1][0][1] == 9  # applied optimistically
    with pytest.raises(TimeoutError):
        await w
    await asyncio.sleep(0)
    assert shard.fetch_offsets("g", [("t", [0])])[0][1][0][1] == 5


async def test_load_replays_log_and_skips_unknown_types():
    shard, log, clock = _shard()
    log.records = [
        (encode_key(OffsetCommitKey("g", "t", 0)), bytes.fromhex("0003000000000000002a0000000500000000018bcfe56800")),
        (bytes.fromhex("0010000167"), b"\x00\x00"),  # record type 16: skipped
        (encode_key(OffsetCommitKey("g", "t", 1)), bytes.fromhex("0003000000000000002a0000000500000000018bcfe56800")),
        (encode_key(OffsetCommitKey("g", "t", 1)), None),
    ]
    assert await shard.load() == 4
    assert shard.fetch_offsets("g", None) == [("t", [(0, 42, 5, "", 0)])]
    assert shard.groups["g"].state.value == "Empty" and shard.groups["g"].protocol_type is None
    shard.replay(encode_key(GroupMetadataKey("g")),
                 encode_value(GroupMetadataValue("consumer", 3, "range", "m", 1, ())))
    assert shard.groups["g"].generation == 3


def _value(offset: int) -> bytes:
    return encode_value(OffsetCommitValue(offset, -1, "", 1_700_000_000_000))


def _v0_key(group: str, topic: str, partition: int) -> bytes:
    return b"\x00\x00" + encode_key(OffsetCommitKey(group, topic, partition))[2:]


async def test_load_follows_tombstones_and_group_deletion():
    """Keys whose prefix was seen take replay's fast path: removals must not leave it stale."""
    shard, log, _clock = _shard()
    key = encode_key
    log.records = [
        (key(OffsetCommitKey("g", "t", 0)), _value(1)),
        (key(OffsetCommitKey("g", "t", 1)), _value(2)),
        (_v0_key("g", "t", 2), _value(3)),  # key v0: same group, topic and partition map
        (key(OffsetCommitKey("g", "t", 0)), _value(4)),
        (key(OffsetCommitKey("g", "t", 0)), None),
        (key(OffsetCommitKey("g", "t", 1)), None),
        (key(OffsetCommitKey("g", "t", 2)), None),
        (key(GroupMetadataKey("g")), None),  # DeleteGroups wrote these
        (key(OffsetCommitKey("g", "t", 1)), _value(5)),  # the group is used again
        (key(OffsetCommitKey("h", "t", 0)), b"\x00\x09garbage"),  # undecodable value
    ]
    assert await shard.load() == 10
    assert shard.fetch_offsets("g", None) == [("t", [(1, 5, -1, "", 0)])]
    assert shard.groups["g"].state.value == "Empty"
    assert shard.fetch_offsets("h", [("t", [0])]) == [("t", [(0, -1, -1, "", 0)])]


async def test_failed_first_commit_of_a_topic_is_reverted():
    shard, log, _clock = _shard()
    await shard.load()
    log.fail_with = TimeoutError("disk stalled")
    _e, w = shard.commit_offsets("g", -1, "", None, -1,
                                 [CommitPartition("t", p, 7, -1, None) for p in range(3)], 9)
    with pytest.raises(TimeoutError):
        await w
    await asyncio.sleep(0)
    assert shard.fetch_offsets("g", None) == []
    log.fail_with = None
    _e, w = shard.commit_offsets("g", -1, "", None, -1, [CommitPartition("t", 1, 8, -1, None)], 9)
    await w
    assert shard.fetch_offsets("g", None) == [("t", [(1, 8, -1, "", 0)])]
