"""Reference §6 scenarios 1-33: JoinGroup, SyncGroup, Heartbeat, LeaveGroup on the wire.

Time is a ManualClock on the broker; ``is_parked`` reads whether the broker still holds a
request, so "no response yet" is asserted without sleeping.
"""

from __future__ import annotations

import re

import pytest

from kafkette.protocol.group_records import GroupMetadataKey, GroupMetadataValue

from .env import DESCRIBE, FIND, JOIN, LEAVE, RANGE, SYNC, Env, Member, subscription

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def settle(env: Env, members: list[Member], step: int = 3000) -> None:
    for _ in range(20):
        if not any(m.is_parked() for m in members):
            return
        env.advance(step)
    raise AssertionError("join phase never completed")


def form(env: Env, n: int = 2, protocols=RANGE, instances=None, version: int = 9,
         session: int = 10000, rebalance: int = 10000, sync: bool = True):
    """A group of n members in Stable (or CompletingRebalance with sync=False)."""
    gid = env.group_id()
    members = [env.member(f"c{i}") for i in range(n)]
    for i, m in enumerate(members):
        inst = instances[i] if instances else None
        if inst is None and version >= 4:
            assert m.join(gid, member_id="", version=version, protocols=protocols,
                          session=session, rebalance=rebalance).error_code == 79
        m.join_parked(gid, version=version, instance=inst, protocols=protocols,
                      session=session, rebalance=rebalance)
    settle(env, members)
    results = [m.join_result() for m in members]
    assert all(r.error_code == 0 for r in results), results
    leader = next(m for m, r in zip(members, results, strict=True) if r.leader == r.member_id)
    followers = [m for m in members if m is not leader]
    if sync:
        for f in followers:
            f.send_sync(gid)
            f.wait_parked()
        assignments = {m.member_id: f"a-{m.member_id}".encode() for m in members}
        assert leader.sync(gid, assignments=assignments).error_code == 0
        for f in followers:
            assert f.result().error_code == 0
        assert env.state(gid) == "Stable"
    return gid, members, leader, followers


# 1-4: join, MEMBER_ID_REQUIRED, initial delay ---------------------------------------------------

def test_01_member_id_required_then_initial_delay(env: Env):
    gid = env.group_id()
    m = env.member("c1")
    r = m.join(gid, member_id="")
    assert r.error_code == 79 and r.generation_id == -1
    assert re.fullmatch(f"c1-{UUID}", r.member_id)
    m.join_parked(gid)
    env.advance(2999)
    assert m.is_parked()
    env.advance(1)
    r = m.join_result()
    assert (r.error_code, r.generation_id, r.leader, r.protocol_name, r.protocol_type) == (
        0, 1, m.member_id, "range", "consumer")
    assert [x.member_id for x in r.members] == [m.member_id]
    # The group's creation wrote the empty GroupMetadata record (protocolType "", gen 0).
    records = [v for k, v in env.offsets_records() if k == GroupMetadataKey(gid)]
    assert records and isinstance(records[0], GroupMetadataValue)
    assert (records[0].protocol_type, records[0].generation, records[0].protocol,
            records[0].leader, records[0].members) == ("", 0, None, None, ())


def test_02_v3_join_waits_for_initial_delay(env: Env):
    gid = env.group_id()
    m = env.member()
    m.join_parked(gid, member_id="", version=3)
    env.advance(2999)
    assert m.is_parked()
    env.advance(1)
    r = m.join_result()
    assert r.error_code == 0 and r.generation_id == 1 and r.protocol_name == "range"


def test_03_new_member_extends_initial_delay(env: Env):
    gid = env.group_id()
    a, b = env.member("a"), env.member("b")
    a.join_parked(gid, member_id="", version=3, rebalance=9000)
    env.advance(2999)
    b.join_parked(gid, member_id="", version=3, rebalance=9000)
    env.advance(1)
    assert a.is_parked() and b.is_parked()
    env.advance(2999)
    assert a.is_parked() and b.is_parked()
    env.advance(1)
    assert a.join_result().generation_id == 1 and b.join_result().generation_id == 1


def test_04_initial_delay_capped_by_rebalance_timeout(env: Env):
    gid = env.group_id()
    a, b, c = env.member("a"), env.member("b"), env.member("c")
    a.join_parked(gid, member_id="", version=3, rebalance=6000)
    b.join_parked(gid, member_id="", version=3, rebalance=6000)
    env.advance(3001)
    c.join_parked(gid, member_id="", version=3, rebalance=6000)
    env.advance(2998)
    assert a.is_parked() and b.is_parked() and c.is_parked()
    env.advance(1)
    results = [m.join_result() for m in (a, b, c)]
    assert [r.error_code for r in results] == [0, 0, 0]
    assert {r.generation_id for r in results} == {1}


# 5-11: validation -------------------------------------------------------------------------------

@pytest.mark.parametrize("session", [5999, 1800001])
def test_05_invalid_session_timeout(env: Env, session: int):
    r = env.member().join(env.group_id(), member_id="", session=session)
    assert r.error_code == 26


def test_06_empty_group_id(env: Env):
    env.create_topic("t6")
    m = env.member()
    assert m.join("", member_id="").error_code == 24
    assert m.sync("", generation=1, member_id="x").error_code == 24
    assert m.heartbeat("", generation=1, member_id="x") == 24
    assert m.leave("", [("x", None)]).error_code == 24
    assert m.commit("", {("t6", 0): 5}) == {("t6", 0): 0}
    assert m.fetch("", [("t6", 0)])[("t6", 0)][0] == 5


@pytest.mark.parametrize("ptype,protocols", [("", RANGE), ("consumer", ())])
def test_07_empty_protocol_type_or_list(env: Env, ptype: str, protocols):
    r = env.member().join(env.group_id(), member_id="", version=3, protocol_type=ptype,
                          protocols=protocols)
    assert r.error_code == 23


def test_08_inconsistent_protocol_type_and_protocols(env: Env):
    gid, _members, _l, _f = form(env, 1)
    assert env.member().join(gid, member_id="", protocol_type="connect").error_code == 23
    other = (("roundrobin", subscription("t")),)
    assert env.member().join(gid, member_id="", protocols=other).error_code == 23


def test_09_unknown_member_new_group(env: Env):
    assert env.member().join(env.group_id(), member_id="nope").error_code == 25


def test_10_unknown_member_existing_group(env: Env):
    gid, _m, _l, _f = form(env, 1)
    assert env.member().join(gid, member_id="nope").error_code == 25


def test_11_old_member_rejoins_empty_group(env: Env):
    gid, (m,), _l, _f = form(env, 1)
    old = m.member_id
    assert m.leave(gid).members[0].error_code == 0
    assert env.state(gid) == "Empty"
    r = m.join(gid, member_id=old)
    assert r.error_code == 25 and r.generation_id == -1


# 12-15: rejoin, leader, protocol vote -----------------------------------------------------------

def test_12_unchanged_follower_rejoin_is_immediate(env: Env):
    gid, _m, leader, (f,) = form(env, 2)
    gen = f.generation
    r = f.join(gid)
    assert (r.error_code, r.generation_id, r.members, r.leader) == (0, gen, (), leader.member_id)
    assert env.state(gid) == "Stable"


def test_13_leader_rejoin_rebalances(env: Env):
    gid, _m, leader, (f,) = form(env, 2)
    gen = leader.generation
    leader.join_parked(gid)
    assert env.state(gid) == "PreparingRebalance"
    assert f.heartbeat(gid) == 27
    f.send_join(gid)
    r1, r2 = leader.join_result(), f.join_result()
    assert r1.generation_id == r2.generation_id == gen + 1


def test_14_only_leader_gets_members(env: Env):
    gid, members, leader, followers = form(env, 3, sync=False)
    results = {m.member_id: m.last_join for m in members}
    lr = results[leader.member_id]
    assert sorted(x.member_id for x in lr.members) == sorted(results)
    assert all(x.metadata == subscription("t") for x in lr.members)
    for f in followers:
        assert results[f.member_id].members == ()
    assert {(r.leader, r.protocol_name, r.protocol_type) for r in results.values()} == {
        (leader.member_id, "range", "consumer")}


def test_15_protocol_vote(env: Env):
    gid = env.group_id()
    prefs = [("range", "roundrobin"), ("roundrobin", "range"), ("roundrobin", "range")]
    members = []
    for i, names in enumerate(prefs):
        m = env.member(f"v{i}")
        protos = tuple((n, subscription("t")) for n in names)
        m.join_parked(gid, member_id="", version=3, protocols=protos)
        members.append(m)
    settle(env, members)
    assert {m.join_result().protocol_name for m in members} == {"roundrobin"}
    sticky = (("sticky", subscription("t")),)
    assert env.member().join(gid, member_id="", protocols=sticky).error_code == 23


# 16-19: heartbeat and sync validation ------------------------------------------------------------

def test_16_heartbeat_errors(env: Env):
    m = env.member()
    assert m.heartbeat(env.group_id(), generation=1, member_id="x") == 25
    gid, (a,), _l, _f = form(env, 1)
    assert a.heartbeat(gid, generation=a.generation + 1) == 22
    assert a.heartbeat(gid, member_id="unknown") == 25
    assert a.heartbeat(gid) == 0


def test_17_heartbeat_while_completing_rebalance(env: Env):
    gid, members, _l, _f = form(env, 2, sync=False)
    assert env.state(gid) == "CompletingRebalance"
    assert all(m.heartbeat(gid) == 0 for m in members)


def test_18_sync_errors(env: Env):
    m = env.member()
    assert m.sync(env.group_id(), generation=1, member_id="x").error_code == 25
    gid, (a, b), leader, (f,) = form(env, 2)
    assert a.sync(gid, generation=a.generation + 5).error_code == 22
    leader.join_parked(gid)  # leader rejoin: PreparingRebalance
    assert f.sync(gid).error_code == 27


def test_19_sync_protocol_checks(env: Env):
    gid, (a,), _l, _f = form(env, 1)
    assert a.sync(gid, protocol_type="connect").error_code == 23
    assert a.sync(gid, protocol_name="roundrobin").error_code == 23
    assert a.sync(gid, protocol_type=None, protocol_name=None).error_code == 23
    r = a.sync(gid, version=4, protocol_type=None, protocol_name=None)
    assert r.error_code == 0 and r.assignment == f"a-{a.member_id}".encode()


# 20-22: sync propagation ------------------------------------------------------------------------

def test_20_follower_waits_for_leader_assignment(env: Env):
    gid, members, leader, followers = form(env, 3, sync=False)
    f1, f2 = followers
    f1.send_sync(gid)
    f1.wait_parked()
    r = leader.sync(gid, assignments={leader.member_id: b"L", f1.member_id: b"F1"})
    assert (r.error_code, r.assignment, r.protocol_type, r.protocol_name) == (
        0, b"L", "consumer", "range")
    r1 = f1.result()
    assert (r1.error_code, r1.assignment, r1.protocol_type, r1.protocol_name) == (
        0, b"F1", "consumer", "range")
    r2 = f2.sync(gid)  # omitted by the leader: empty assignment, Stable answers at once
    assert (r2.error_code, r2.assignment) == (0, b"")


def test_21_new_member_fails_parked_sync(env: Env):
    gid, _m, _leader, (f,) = form(env, 2, sync=False)
    f.send_sync(gid)
    f.wait_parked()
    newcomer = env.member("n")
    assert newcomer.join(gid, member_id="").error_code == 79
    newcomer.join_parked(gid)
    r = f.result()
    # Kafka names the protocol only in successful SyncGroup answers (v5 fields).
    assert (r.error_code, r.assignment, r.protocol_type, r.protocol_name) == (27, b"", None, None)


def test_22_follower_missing_sync_is_removed(env: Env):
    gid, _m, leader, (f,) = form(env, 2, sync=False, rebalance=8000)
    leader.send_sync(gid, assignments={})
    assert leader.result().error_code == 0
    env.advance(8000)
    assert leader.heartbeat(gid) == 27
    assert f.heartbeat(gid) == 25


# 23-27: timeouts ----------------------------------------------------------------------------------

def test_23_session_expiry_removes_member(env: Env):
    gid, (a, b), _l, _f = form(env, 2, session=6000)
    env.advance(5000)
    assert a.heartbeat(gid) == 0
    env.advance(1001)  # b silent for 6001 ms
    assert b.heartbeat(gid) == 25
    assert a.heartbeat(gid) == 27
    gen = a.generation
    r = a.join(gid)
    assert r.error_code == 0 and r.generation_id == gen + 1 and len(r.members) == 1


def test_24_heartbeats_and_commits_keep_session(env: Env):
    env.create_topic("t")
    gid, (a, b), _l, _f = form(env, 2, session=6000)
    for _ in range(5):
        env.advance(4000)
        assert a.heartbeat(gid) == 0
        assert b.commit(gid, {("t", 0): 1}, generation=b.generation, member_id=b.member_id) == {
            ("t", 0): 0}
    assert env.state(gid) == "Stable"


def test_25_pending_member_expires(env: Env):
    gid, (a,), _l, _f = form(env, 1)
    pending = env.member("p")
    assert pending.join(gid, member_id="", session=6000).error_code == 79
    a.join_parked(gid)  # leader rejoins: rebalance waits for the pending member
    env.advance(5999)
    assert a.is_parked()
    env.advance(1)
    r = a.join_result()
    assert r.error_code == 0 and len(r.members) == 1
    assert pending.join(gid).error_code == 25


def test_26_members_not_rejoining_are_removed(env: Env):
    gid, (a, b), leader, (f,) = form(env, 2, rebalance=7000, session=30000)
    gen = leader.generation
    leader.join_parked(gid, rebalance=7000, session=30000)
    env.advance(6999)
    assert leader.is_parked()
    env.advance(1)
    r = leader.join_result()
    assert r.generation_id == gen + 1 and [x.member_id for x in r.members] == [leader.member_id]
    assert f.heartbeat(gid) == 25


def test_27_group_max_size(make_env):
    e = make_env(**{"group.max.size": 1})
    gid, _m, _l, _f = form(e, 1)
    r = e.member().join(gid, member_id="", version=3)
    assert (r.error_code, r.member_id) == (81, "")


# 28-31: static membership ------------------------------------------------------------------------

def test_28_static_member_replacement_keeps_generation(env: Env):
    gid, (a, b), leader, followers = form(env, 2, instances=["i0", "i1"])
    follower = followers[0]
    inst = "i0" if follower is a else "i1"
    old = follower.member_id
    gen = follower.generation
    again = env.member("again")
    r = again.join(gid, member_id="", instance=inst)
    assert r.error_code == 0 and r.generation_id == gen and r.member_id != old
    assert re.fullmatch(f"{inst}-{UUID}", r.member_id)
    assert env.state(gid) == "Stable"
    assert follower.heartbeat(gid, instance=inst) == 82
    sync = again.sync(gid, instance=inst)
    assert sync.error_code == 0 and sync.assignment == f"a-{old}".encode()


@pytest.mark.parametrize("version", [9, 5])
def test_29_static_leader_replacement(env: Env, version: int):
    gid, (a, b), leader, _f = form(env, 2, instances=["i0", "i1"])
    inst = "i0" if leader is a else "i1"
    old = leader.member_id
    r = env.member("new-leader").join(gid, member_id="", instance=inst, version=version)
    assert r.error_code == 0 and r.generation_id == leader.generation
    other = b if leader is a else a
    if version >= 9:
        assert r.skip_assignment and r.leader == r.member_id
        assert {m.member_id for m in r.members} == {r.member_id, other.member_id}
    else:
        assert r.leader == old and r.members == ()
    assert env.state(gid) == "Stable" and env.group(gid).generation == leader.generation


def test_static_follower_replaced_before_sync_still_rebalances(env: Env):
    # Kafka's replaceStaticMember leaves the pending-sync set alone: the old member id is
    # still "pending" when the pending-sync timer fires, so the group rebalances then.
    gid, (a, b), leader, (f,) = form(env, 2, instances=["i0", "i1"], sync=False,
                                     rebalance=8000)
    assert leader.sync(gid, assignments={}).error_code == 0
    inst = "i0" if f is a else "i1"
    again = env.member("again")
    r = again.join(gid, member_id="", instance=inst)
    assert r.error_code == 0 and r.generation_id == f.generation
    assert again.sync(gid, instance=inst).error_code == 0
    assert env.state(gid) == "Stable"
    env.advance(8000)
    assert env.state(gid) == "PreparingRebalance"
    assert leader.heartbeat(gid, instance="i1" if inst == "i0" else "i0") == 27


def test_30_static_member_identity_checks(env: Env):
    gid, (a, b), leader, (f,) = form(env, 2, instances=["i0", "i1"])
    leader_inst = "i0" if leader is a else "i1"
    assert f.join(gid, instance=leader_inst).error_code == 82
    assert f.join(gid, instance="unknown-instance").error_code == 25


def test_31_batch_leave_by_instance(env: Env):
    gid, (a, b), _l, _f = form(env, 2, instances=["i0", "i1"])
    r = a.leave(gid, [("", "i0"), ("", "nope")], version=3)
    assert [m.error_code for m in r.members] == [0, 25] and r.error_code == 0
    r = a.leave(gid, [("wrong-id", "i1")], version=3)
    assert [m.error_code for m in r.members] == [82]


def test_32_leave_absent_group(env: Env):
    m = env.member()
    r = m.leave(env.group_id(), [("x", None)], version=3)
    assert r.error_code == 0 and [x.error_code for x in r.members] == [25]
    m.member_id = "x"
    assert m.leave(env.group_id(), version=0).error_code == 25


def test_33_last_member_leaves(env: Env):
    gid, (a,), _l, _f = form(env, 1)
    gen = a.generation
    a.leave(gid)
    g = env.group(gid)
    assert g.state.value == "Empty" and g.generation == gen + 1
    d = a.request(DESCRIBE, 5, groups=(gid,), include_authorized_operations=False).groups[0]
    assert (d.error_code, d.group_state, d.members, d.protocol_type) == (0, "Empty", (), "consumer")
    # The Empty transition was persisted with protocolType kept and the new generation.
    last = [v for k, v in env.offsets_records() if k == GroupMetadataKey(gid)][-1]
    assert (last.protocol_type, last.generation, last.protocol, last.members) == (
        "consumer", gen + 1, None, ())


# misc -------------------------------------------------------------------------------------------

def test_join_versions_shape_protocol_name(env: Env):
    gid = env.group_id()
    m = env.member()
    r = m.join(gid, member_id="", version=6, protocol_type="")
    assert r.error_code == 23 and r.protocol_name == ""
    r = m.join(gid, member_id="", version=7, protocol_type="")
    assert r.error_code == 23 and r.protocol_name is None


@pytest.mark.parametrize("version", [0, 3, 4, 6])
def test_find_coordinator_versions(env: Env, version: int):
    m = env.member()
    host, port = env.broker.broker.advertised
    if version >= 4:
        r = m.request(FIND, version, key_type=0, coordinator_keys=("a", "b"))
        assert [(c.key, c.error_code, c.node_id, c.host, c.port) for c in r.coordinators] == [
            ("a", 0, 1, host, port), ("b", 0, 1, host, port)]
    else:
        r = m.request(FIND, version, key="a", key_type=0)
        assert (r.error_code, r.node_id, r.host, r.port) == (0, 1, host, port)


def test_api_versions_advertise_group_apis(env: Env):
    r = env.member().request(18, 3, client_software_name="t", client_software_version="1")
    ranges = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
    assert ranges[JOIN] == (0, 9) and ranges[SYNC] == (0, 5) and ranges[LEAVE] == (0, 5)
    assert ranges[8] == (2, 9) and ranges[9] == (1, 9) and ranges[47] == (0, 0)
    # KIP-848 APIs: advertised, answered UNSUPPORTED_VERSION (tests/groups/test_consumer_protocol.py)
    assert ranges[68] == (0, 1) and ranges[69] == (0, 1)
