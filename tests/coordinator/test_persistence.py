"""__consumer_offsets persistence: restart replay, record bytes, batching, append failures."""

from __future__ import annotations

import asyncio
import struct
import time
from types import SimpleNamespace

import pytest

from kafkette.broker.services.offsets_log import OFFSETS_TOPIC
from kafkette.broker.testing import ThreadedBroker
from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type
from kafkette.protocol.group_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from kafkette.protocol.records import decode_records
from tests.wire import WireClient, entity

from .env import COMMIT, DESCRIBE, FETCH, Env, Member
from .memory import commit, committed, loaded, memory_context, reloaded
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


# A partition context with an in-memory log -----------------------------------------------------

async def test_commits_share_one_append():
    ctx, log, _clock = await loaded()
    writes = []
    for i in range(50):
        errors, write = commit(ctx, f"g{i % 5}", ("t", i, i))
        assert errors == [0]
        writes.append(write)
    await asyncio.gather(*writes)
    assert log.batches == 1 and len(log.records) == 50


async def test_failed_append_reverts_offsets_and_fails_commit():
    ctx, log, _clock = await loaded()
    _e, w = commit(ctx, "g", ("t", 0, 5))
    await w
    log.fail_with = TimeoutError("disk stalled")
    _e, w = commit(ctx, "g", ("t", 0, 9))
    assert ctx.shard.fetch_offsets("g", [("t", [0])])[0][1][0][1] == 9  # replayed before the append
    with pytest.raises(TimeoutError):
        await w
    await reloaded(ctx)
    assert await committed(ctx, "g") == [("t", [(0, 5, -1, "", 0)])]  # reloaded from the log


async def test_load_replays_log_and_skips_unknown_types():
    ctx, log, _clock = memory_context()
    log.records = [
        (encode_key(OffsetCommitKey("g", "t", 0)), bytes.fromhex("0003000000000000002a0000000500000000018bcfe56800")),
        (bytes.fromhex("0010000167"), b"\x00\x00"),  # record type 16: skipped
        (encode_key(OffsetCommitKey("g", "t", 1)), bytes.fromhex("0003000000000000002a0000000500000000018bcfe56800")),
        (encode_key(OffsetCommitKey("g", "t", 1)), None),
    ]
    assert await ctx.load() == 4
    shard = ctx.shard
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
    key = encode_key
    ctx, _log, _clock = memory_context([
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
    ])
    assert await ctx.load() == 10
    assert ctx.shard.fetch_offsets("g", None) == [("t", [(1, 5, -1, "", 0)])]
    assert ctx.shard.groups["g"].state.value == "Empty"
    assert ctx.shard.fetch_offsets("h", [("t", [0])]) == [("t", [(0, -1, -1, "", 0)])]


@pytest.mark.parametrize("bad", [
    b"\x00\x09garbage",                      # unknown value version (fast path: prefix seen)
    b"\x00\x03\x00\x00\x00\x00\x00\x00",       # known version, truncated
])
async def test_load_keeps_the_previous_offset_over_an_undecodable_record(bad, caplog):
    """A CRC-valid record that does not decode must not reset the offset to -1."""
    key = encode_key
    ctx, _log, _clock = memory_context([
        (key(OffsetCommitKey("g", "t", 0)), _value(7)),
        (key(OffsetCommitKey("g", "t", 1)), _value(8)),
        (key(OffsetCommitKey("g", "t", 0)), bad),
        (key(OffsetCommitKey("h", "u", 0)), _value(1)),
        (key(OffsetCommitKey("h", "u", 0)), None),
        (key(OffsetCommitKey("h", "u", 0)), _value(2)),
        (key(OffsetCommitKey("h", "u", 0)), bad),       # slow path: prefix cache was cleared
    ])
    with caplog.at_level("WARNING", logger="kafkette.coordinator"):
        assert await ctx.load() == 7
    assert ctx.shard.fetch_offsets("g", None) == [("t", [(0, 7, -1, "", 0), (1, 8, -1, "", 0)])]
    assert ctx.shard.fetch_offsets("h", None) == [("u", [(0, 2, -1, "", 0)])]
    assert len([r for r in caplog.records if "undecodable" in r.getMessage()]) == 2


async def test_failed_first_commit_of_a_topic_is_reverted():
    ctx, log, _clock = await loaded()
    log.fail_with = TimeoutError("disk stalled")
    _e, w = commit(ctx, "g", *[("t", p, 7) for p in range(3)])
    with pytest.raises(TimeoutError):
        await w
    await reloaded(ctx)
    assert await committed(ctx, "g") == []
    log.fail_with = None
    _e, w = commit(ctx, "g", ("t", 1, 8))
    await w
    assert await committed(ctx, "g") == [("t", [(1, 8, -1, "", 0)])]


# Record bytes of commits and groups made on the wire, read back from the log after a restart ------
# A broker on the system clock: the commit and state timestamps are real wall-clock times. The
# expected bytes are built here with struct (the §4.4 layouts), not with protocol.group_records.

def _wall_ms() -> int:
    return int(time.time() * 1000)


def _string(s: str | None) -> bytes:
    """STRING / NULLABLE_STRING (length -1 = null)."""
    if s is None:
        return struct.pack(">h", -1)
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def _bytes(b: bytes) -> bytes:
    return struct.pack(">i", len(b)) + b


def _group_metadata_v3(protocol_type: str, generation: int, protocol: str | None,
                       leader: str | None, ts: int,
                       members: list[tuple[str, str | None, str, str, int, int, bytes, bytes]]
                       ) -> bytes:
    out = struct.pack(">h", 3) + _string(protocol_type) + struct.pack(">i", generation)
    out += _string(protocol) + _string(leader) + struct.pack(">qi", ts, len(members))
    for member_id, instance, client_id, host, rebalance, session, sub, assignment in members:
        out += _string(member_id) + _string(instance) + _string(client_id) + _string(host)
        out += struct.pack(">ii", rebalance, session) + _bytes(sub) + _bytes(assignment)
    return out


def test_group_metadata_builder_matches_the_reference_example():
    """The builder above reproduces §4.4's one-member GroupMetadataValue v3 byte for byte."""
    member = "c1-2f0f6a4e-0000-0000-0000-000000000000"
    got = _group_metadata_v3("consumer", 1, "range", member, 1_700_000_000_000, [
        (member, None, "c1", "/127.0.0.1", 300000, 45000, b"\x00\x01", b"\x00\x02")])
    assert got.hex() == (
        "00030008636f6e73756d657200000001000572616e6765002763312d32663066366134652d303030302d3030"
        "30302d303030302d3030303030303030303030300000018bcfe5680000000001002763312d32663066366134"
        "652d303030302d303030302d303030302d303030303030303030303030ffff00026331000a2f3132372e302e"
        "302e31000493e00000afc8000000020001000000020002")


def _raw_offsets_records(tb: ThreadedBroker) -> list[tuple[bytes, bytes | None]]:
    """Every raw (key, value) of __consumer_offsets, per partition in log order."""
    logs = tb.broker.logs
    out: list[tuple[bytes, bytes | None]] = []

    def read() -> None:
        for p in range(logs.topic(OFFSETS_TOPIC).partitions):
            for _h, data in logs.partition(OFFSETS_TOPIC, p).iter_batches(0):
                out.extend((bytes(r.key), None if r.value is None else bytes(r.value))
                           for r in decode_records(data))
    tb.run(read)
    return out


def test_wire_commit_record_bytes_after_restart(kafka_broker_factory):
    """OffsetCommit v9 (my-group, orders, 3, offset 42, leader epoch 5) is stored as §4.4's
    OffsetCommitKey v1 + OffsetCommitValue v3 with the broker's commit time."""
    tb = kafka_broker_factory(**{"offsets.topic.num.partitions": 3})
    tb.run(tb.broker.logs.create_topic("orders", 4))
    cls = request_type(COMMIT, 9)
    partition = entity(item_type(cls, "topics"), "partitions", partition_index=3,
                       committed_offset=42, committed_leader_epoch=5, committed_metadata="")
    before = _wall_ms()
    with WireClient(tb.bootstrap) as w:
        r = w.request(COMMIT, 9, group_id="my-group", generation_id_or_member_epoch=-1,
                      member_id="", group_instance_id=None,
                      topics=(entity(cls, "topics", name="orders", partitions=(partition,)),))
    after = _wall_ms()
    assert [p.error_code for t in r.topics for p in t.partitions] == [0]
    tb.restart()
    key_hex = "000100086d792d67726f757000066f726465727300000003"  # §4.4 OffsetCommitKey v1
    raw = [v for k, v in _raw_offsets_records(tb) if k.hex() == key_hex]
    assert len(raw) == 1 and raw[0] is not None
    value = raw[0]
    # §4.4 OffsetCommitValue v3: version 3, offset 42, leader epoch 5, metadata "", commit time
    # (§4.4's example 0003000000000000002a0000000500000000018bcfe56800 with ts 0x18bcfe56800)
    assert len(value) == 24 and value[:16].hex() == "0003000000000000002a000000050000"
    (ts,) = struct.unpack(">q", value[16:])
    assert before <= ts <= after, (before, ts, after)
    assert value.hex() == "0003000000000000002a000000050000" + struct.pack(">q", ts).hex()
    # and the restarted broker serves it, leader epoch included
    with WireClient(tb.bootstrap) as w:
        group = entity(request_type(FETCH, 9), "groups", group_id="my-group", member_id=None,
                       member_epoch=-1, topics=(make(item_type(item_type(
                           request_type(FETCH, 9), "groups"), "topics"), name="orders",
                           partition_indexes=(3,)),))
        r = w.request(FETCH, 9, groups=(group,), require_stable=True)
    (p,) = r.groups[0].topics[0].partitions
    assert (p.committed_offset, p.committed_leader_epoch, p.metadata) == (42, 5, "")


def test_wire_group_metadata_record_bytes_after_restart(kafka_broker_factory):
    """A one-member group formed with JoinGroup v9 + SyncGroup v5 is stored as §4.4's
    GroupMetadataValue v3 with this member's id, client id, host, timeouts and bytes."""
    tb = kafka_broker_factory(**{"offsets.topic.num.partitions": 3})
    gid, rebalance, session = "one-member", 12345, 6789
    sub = struct.pack(">hih", 0, 1, 6) + b"orders" + struct.pack(">i", -1)  # Subscription v0
    assignment = struct.pack(">hih", 0, 1, 6) + b"orders" + struct.pack(">iiii", 2, 0, 3, -1)
    before = _wall_ms()
    m = Member(SimpleNamespace(broker=tb), "c1")
    try:
        assert m.join(gid, member_id="", session=session, rebalance=rebalance,
                      protocols=(("range", sub),)).error_code == 79
        j = m.join(gid, session=session, rebalance=rebalance, protocols=(("range", sub),))
        assert (j.error_code, j.generation_id, j.leader, j.protocol_name) == (
            0, 1, m.member_id, "range")
        assert m.sync(gid, assignments={m.member_id: assignment}).error_code == 0
    finally:
        m.close()
    after = _wall_ms()
    tb.restart()
    key = struct.pack(">h", 2) + _string(gid)  # GroupMetadataKey v2
    values = [v for k, v in _raw_offsets_records(tb) if k == key]
    # §4.9: the first join wrote the new empty group, the leader's SyncGroup the full group
    assert len(values) == 2 and None not in values
    created, value = values
    (created_ts,) = struct.unpack_from(">q", created, 12)
    assert before <= created_ts <= after
    assert created.hex() == _group_metadata_v3("", 0, None, None, created_ts, []).hex()
    # currentStateTimestamp follows version, protocolType, generation, protocol and leader
    at = 2 + len(_string("consumer")) + 4 + len(_string("range")) + len(_string(m.member_id))
    (ts,) = struct.unpack_from(">q", value, at)
    assert before <= ts <= after, (before, ts, after)
    assert m.member_id.startswith("c1-")
    expected = _group_metadata_v3("consumer", 1, "range", m.member_id, ts, [
        (m.member_id, None, "c1", "/127.0.0.1", rebalance, session, sub, assignment)])
    assert value.hex() == expected.hex()
