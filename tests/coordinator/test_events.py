"""The coordinator's own group events (coordinator/group/events.py): what a shard emits, when, and
how rebalances are timed — on the wire, with the broker on a ManualClock."""

from __future__ import annotations

from kafkette.coordinator.group.events import GroupEventLog
from kafkette.coordinator.runtime.clock import ManualClock

from .env import Env
from .test_join_sync import form


def events(env: Env, group_id: str) -> list[tuple[int, str, dict]]:
    """(ms since the clock's start, kind, details) of the group's events, oldest first."""
    start = 1_700_000_000_000
    return env.run(lambda: [(e.at_ms - start, e.kind, e.details) for e in
                            env.coordinator.shard_for(group_id).events.recent(group_id)])


def test_join_rebalance_expiry_and_leave_are_stamped_with_the_clock(make_env):
    env = make_env()
    gid, (a, b), leader, _followers = form(env, 2, session=6000)
    log = events(env, gid)
    kinds = [k for _, k, _ in log]
    assert kinds == ["member-joined", "rebalance-started", "member-joined", "generation",
                     "rebalance-completed"]
    joined = [d["member_id"] for _, k, d in log if k == "member-joined"]
    assert sorted(joined) == sorted([a.member_id, b.member_id])
    # the initial rebalance waited group.initial.rebalance.delay.ms (3000) on the manual clock
    started, completed = log[1][0], log[-1][0]
    assert log[3][2]["generation"] == 1 and log[3][2]["members"] == 2
    assert log[3][2]["leader"] == leader.member_id
    assert completed - started == log[-1][2]["duration_ms"] >= 3000

    env.advance(5000)
    assert a.heartbeat(gid) == 0
    env.advance(1001)  # b silent for 6001 ms: its session expires
    after = events(env, gid)[len(log):]
    assert [(k, d.get("member_id")) for _, k, d in after[:2]] == [
        ("session-expired", b.member_id), ("rebalance-started", None)]
    assert after[0][0] == log[-1][0] + 6000  # stamped when the timer fired
    assert a.heartbeat(gid) == 27
    assert a.join(gid).error_code == 0
    a.sync(gid, assignments={a.member_id: b"x"})
    later = events(env, gid)[len(log) + 2:]
    assert [k for _, k, _ in later] == ["generation", "rebalance-completed"]
    assert a.leave(gid).error_code == 0
    last = events(env, gid)[-3:]
    assert [(k, d.get("member_id")) for _, k, d in last] == [
        ("member-left", a.member_id), ("rebalance-started", None), ("generation", None)]
    assert last[-1][2]["members"] == 0  # an empty generation ends that rebalance too
    stats = env.run(lambda: env.coordinator.shard_for(gid).events.rebalances[gid])
    assert stats.count == 3 and stats.started_at_ms is None


def test_offset_commits_are_counted_per_group(make_env):
    env = make_env()
    env.create_topic("t", 3)
    m = env.member()
    m.commit("simple", {("t", 0): 5, ("t", 1): 6})
    m.commit("simple", {("t", 2): 7})
    assert env.run(lambda: env.coordinator.shard_for("simple").events.commits["simple"]) == 3


def test_ring_is_bounded_and_listeners_see_every_event():
    clock = ManualClock()
    log = GroupEventLog(clock, per_group=3)
    seen = []
    unsubscribe = log.subscribe(seen.append)
    for i in range(5):
        clock.advance(10)
        log.emit("g", "member-joined", member_id=f"m{i}")
    assert [e.details["member_id"] for e in log.recent("g")] == ["m2", "m3", "m4"]
    assert len(seen) == 5 and [e.at_ms - seen[0].at_ms for e in seen] == [0, 10, 20, 30, 40]
    assert log.recent("g", after_seq=seen[3].seq) == [seen[4]]
    unsubscribe()
    log.emit("g", "member-left", member_id="m4")
    assert len(seen) == 5


def test_only_the_most_recently_active_groups_are_kept():
    log = GroupEventLog(ManualClock(), max_groups=2)
    log.emit("a", "rebalance-started")
    log.emit("b", "rebalance-started")
    log.emit("a", "rebalance-completed")  # a is now the most recent
    log.emit("c", "member-joined")
    assert list(log.events) == ["a", "c"] and "b" not in log.rebalances
    assert log.rebalances["a"].count == 1


def test_a_failing_listener_is_dropped_and_the_rest_still_hear():
    log = GroupEventLog(ManualClock())
    heard = []

    def broken(event):
        raise ValueError("boom")

    log.subscribe(broken)
    log.subscribe(heard.append)
    log.emit("g", "rebalance-started")
    log.emit("g", "rebalance-completed")
    assert [e.kind for e in heard] == ["rebalance-started", "rebalance-completed"]
    assert log.listeners == [heard.append]
