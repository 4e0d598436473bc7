"""Parked JoinGroup/SyncGroup answers leave at the transition that completes them.

Kafka completes every awaiting member in one pass (``propagateAssignment``; the join completion
answers all members in one loop), so no request read afterwards is answered first. kafkette
writes a parked answer from inside the transition: these tests look at the members' sockets from
the broker's loop at the transition itself (a group event listener) and in the loop turn right
after it, before anything else is read, and send a later request from there.
"""

from __future__ import annotations

import select
import threading
from typing import Any

from kafkette.protocol.build import make
from kafkette.protocol.codec import request_type

from .env import HEARTBEAT, JOIN, RANGE, SYNC, Env, Member

# What a test listener records, by name.
Seen = dict[str, Any]

# The test thread reads no answer before the listener is done looking at the sockets.
CHECKED_WITHIN = 10  # seconds


def readable(member: Member) -> bool:
    """True once the broker has written an answer to the member's socket (loopback writes land
    in the peer's receive buffer at once)."""
    ready, _w, _x = select.select([member.client.sock], [], [], 0)
    return bool(ready)


def listen(env: Env, group_id: str, kind: str, on_event) -> None:
    """Call ``on_event()`` on the broker's loop when the group emits an event of ``kind``."""
    def listener(event: Any) -> None:
        if event.group_id == group_id and event.kind == kind:
            on_event()
    env.run(lambda: env.coordinator.shard_for(group_id).events.subscribe(listener))


def send_raw(member: Member, api: int, version: int, **fields: Any) -> None:
    """``member.send`` callable from the broker's thread (a blocking loopback send)."""
    member.send(api, version, **fields)


def joined_pair(env: Env) -> tuple[str, Member, Member]:
    """A group of two members in CompletingRebalance: (group, leader, follower)."""
    gid = env.group_id()
    a, b = env.member("a"), env.member("b")
    for m in (a, b):
        assert m.join(gid, member_id="", protocols=RANGE).error_code == 79
        m.join_parked(gid, protocols=RANGE)
    for _ in range(20):
        if not (a.is_parked() or b.is_parked()):
            break
        env.advance(3000)
    ra, rb = a.join_result(), b.join_result()
    assert (ra.error_code, rb.error_code) == (0, 0)
    return (gid, a, b) if ra.leader == ra.member_id else (gid, b, a)


def stable_pair(env: Env) -> tuple[str, Member, Member]:
    """A group of two members in Stable: (group, leader, follower)."""
    gid, leader, follower = joined_pair(env)
    follower.send_sync(gid)
    follower.wait_parked()
    assert leader.sync(gid, assignments={leader.member_id: b"L"}).error_code == 0
    assert follower.result().error_code == 0
    return gid, leader, follower


def test_parked_sync_answer_is_written_at_the_transition(env: Env):
    """The leader's parked SyncGroup answer is on the wire when the group turns Stable; a
    follower's SyncGroup read afterwards (sent from the transition) is answered after it."""
    gid, leader, follower = joined_pair(env)
    seen: Seen = {}
    checked = threading.Event()

    def on_stable() -> None:
        if "leader_written" in seen:
            return
        seen["leader_written"] = readable(leader)
        seen["follower_written"] = readable(follower)
        follower.send_sync(gid)  # read by the broker after the transition

        def next_turn() -> None:
            seen["next_turn"] = readable(leader)
            checked.set()
        env.broker.loop.call_soon(next_turn)
    listen(env, gid, "rebalance-completed", on_stable)

    leader.send_sync(gid, assignments={leader.member_id: b"L", follower.member_id: b"F"})
    assert checked.wait(CHECKED_WITHIN)
    r = leader.result()
    assert (r.error_code, r.assignment) == (0, b"L")
    rf = follower.result()
    assert (rf.error_code, rf.assignment) == (0, b"F")
    assert seen == {"leader_written": True, "follower_written": False, "next_turn": True}


def test_parked_join_answers_are_written_with_the_completing_one(env: Env):
    """Members parked in JoinGroup are answered inside the request that completes the join
    phase: in the loop turn after it, before anything else is read, every member's answer is
    on the wire; a later request (a heartbeat sent from the transition) is answered after."""
    gid, leader, follower = stable_pair(env)
    generation = leader.generation
    watcher = env.member("w")
    # leader and follower rejoin: the leader parks, the follower's rejoin completes the phase
    leader.join_parked(gid, protocols=RANGE)
    seen: Seen = {}
    checked = threading.Event()

    def on_generation() -> None:
        if "checked" in seen:
            return
        seen["checked"] = True
        send_raw(watcher, HEARTBEAT, 4, group_id=gid, generation_id=generation,
                 member_id=follower.member_id, group_instance_id=None)

        def next_turn() -> None:
            seen["leader_written"] = readable(leader)
            seen["follower_written"] = readable(follower)
            seen["watcher_written"] = readable(watcher)
            checked.set()
        env.broker.loop.call_soon(next_turn)
    listen(env, gid, "generation", on_generation)

    follower.send_join(gid, protocols=RANGE)
    assert checked.wait(CHECKED_WITHIN)
    rf = follower.join_result()
    rl = leader.join_result()
    assert (rf.error_code, rl.error_code) == (0, 0)
    assert rf.generation_id == rl.generation_id == generation + 1
    assert watcher.result().error_code == 22  # ILLEGAL_GENERATION: the old generation
    assert seen == {"checked": True, "leader_written": True, "follower_written": True,
                    "watcher_written": False}


def test_parked_answer_written_inside_another_request_defers_the_next_one(env: Env):
    """A connection whose parked answer is written from inside another connection's request
    handles its own next request afterwards, in order, not re-entrantly."""
    gid, leader, follower = stable_pair(env)
    leader.send_join(gid, protocols=RANGE)
    leader.wait_parked()
    # a second request in flight on the leader's connection, queued behind its parked JoinGroup
    leader.client.send(SYNC, 5, make(
        request_type(SYNC, 5), group_id=gid, generation_id=leader.generation + 1,
        member_id=leader.member_id, group_instance_id=None, protocol_type="consumer",
        protocol_name="range", assignments=()))
    rf = follower.join(gid, protocols=RANGE)
    assert rf.error_code == 0
    _corr, rj = leader.client.receive(JOIN, 9)
    assert rj.error_code == 0 and rj.generation_id == rf.generation_id
    _corr, rs = leader.client.receive(SYNC, 5)
    assert rs.error_code == 0
    leader.generation = rj.generation_id
    assert follower.sync(gid).error_code == 0
