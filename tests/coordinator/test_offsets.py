"""Reference §6 scenarios 34-44: offsets, admin APIs, coordinator availability, retention."""

from __future__ import annotations

import pytest

from kafkette.coordinator.runtime.coordinator_runtime import State
from kafkette.protocol.group_records import OffsetCommitKey, OffsetCommitValue

from .env import DELETE, DESCRIBE, JOIN, LIST, OFFSET_DELETE, Env, subscription
from .test_join_sync import form


@pytest.fixture(scope="module", autouse=True)
def topics(env: Env):
    env.create_topic("t", 3)
    env.create_topic("u", 2)


def test_34_simple_group_commit_fetch_list(env: Env):
    gid = env.group_id("simple")
    m = env.member()
    assert m.commit(gid, {("t", 0): (42, "meta"), ("t", 1): 7}) == {("t", 0): 0, ("t", 1): 0}
    got = m.fetch(gid, [("t", 0), ("t", 1), ("t", 2)])
    assert got == {("t", 0): (42, -1, "meta", 0), ("t", 1): (7, -1, "", 0),
                   ("t", 2): (-1, -1, "", 0)}
    listed = {g.group_id: g for g in m.request(LIST, 5, states_filter=(), types_filter=()).groups}
    assert (listed[gid].protocol_type, listed[gid].group_state, listed[gid].group_type) == (
        "", "Empty", "classic")
    # v4 filter is case-insensitive; v3 has no state field
    assert gid in {g.group_id for g in m.request(LIST, 4, states_filter=(" EMPTY",)).groups}
    assert gid not in {g.group_id for g in m.request(LIST, 4, states_filter=("stable",)).groups}
    assert gid not in {g.group_id for g in m.request(LIST, 5, types_filter=("consumer",)).groups}
    # all-topics fetch (topics = null)
    assert set(m.fetch(gid, None)) == {("t", 0), ("t", 1)}


@pytest.mark.parametrize("version,error", [(2, 22), (8, 22), (9, 69)])
def test_35_commit_with_generation_to_absent_group(env: Env, version: int, error: int):
    r = env.member().commit(env.group_id(), {("t", 0): 1}, generation=10, member_id="member",
                            version=version)
    assert r == {("t", 0): error}


def test_36_commit_validation_against_group(env: Env):
    gid, (a, b), leader, _f = form(env, 2, sync=False, instances=["i0", "i1"])
    args = {"generation": a.generation, "member_id": a.member_id}
    inst = "i0" if env.group(gid).static_members["i0"] == a.member_id else "i1"
    assert a.commit(gid, {("t", 0): 1}, **args) == {("t", 0): 27}
    assert a.commit(gid, {("t", 0): 1}, generation=a.generation - 1, member_id=a.member_id) == {
        ("t", 0): 22}
    assert a.commit(gid, {("t", 0): 1}, generation=a.generation, member_id="who") == {("t", 0): 25}
    other = "i1" if inst == "i0" else "i0"
    assert a.commit(gid, {("t", 0): 1}, instance=other, **args) == {("t", 0): 82}
    # PreparingRebalance accepts commits from the current generation
    env.member("newcomer").join_parked(gid, member_id="", version=3)
    assert env.state(gid) == "PreparingRebalance"
    assert a.commit(gid, {("t", 0): 3}, **args) == {("t", 0): 0}


def test_37_commit_without_member_to_nonempty_group(env: Env):
    gid, (a,), _l, _f = form(env, 1)
    assert a.commit(gid, {("t", 0): 1}) == {("t", 0): 25}


def test_38_metadata_too_large_and_unknown_topic(env: Env):
    gid = env.group_id()
    m = env.member()
    r = m.commit(gid, {("t", 0): (1, "x" * 4097), ("t", 1): (2, "x" * 4096),
                       ("nope", 0): 3, ("t", 9): 4})
    assert r == {("t", 0): 12, ("t", 1): 0, ("nope", 0): 3, ("t", 9): 3}
    # 4096 UTF-16 units: a character outside the BMP counts twice
    r = m.commit(gid, {("t", 2): (1, "\U0001F600" * 2049)})
    assert r == {("t", 2): 12}


@pytest.mark.parametrize("version", [1, 5, 7, 8, 9])
def test_39_fetch_absent_group(env: Env, version: int):
    got = env.member().fetch(env.group_id(), [("t", 0), ("zzz", 1)], version=version,
                             require_stable=version >= 7)
    assert got == {("t", 0): (-1, -1, "", 0), ("zzz", 1): (-1, -1, "", 0)}


def test_40_delete_groups(env: Env):
    m = env.member()
    stable, (a,), _l, _f = form(env, 1)
    empty = env.group_id("e")
    absent = env.group_id("absent")
    assert m.commit(empty, {("t", 0): 5, ("u", 1): 6}) == {("t", 0): 0, ("u", 1): 0}
    r = m.request(DELETE, 2, groups_names=(stable, absent, empty))
    assert [(x.group_id, x.error_code) for x in r.results] == [(stable, 68), (absent, 69), (empty, 0)]
    assert m.fetch(empty, [("t", 0), ("u", 1)]) == {("t", 0): (-1, -1, "", 0), ("u", 1): (-1, -1, "", 0)}
    assert env.group(empty) is None
    tombstones = [k for k, v in env.offsets_records() if v is None and getattr(k, "group", None) == empty]
    assert len(tombstones) == 3  # two offsets and the group


def test_41_offset_delete(env: Env):
    m = env.member()
    gid, (a,), _l, _f = form(env, 1)  # subscribed to "t"
    args = {"generation": a.generation, "member_id": a.member_id}
    assert a.commit(gid, {("t", 0): 1, ("u", 0): 2}, **args) == {("t", 0): 0, ("u", 0): 0}
    r = m.request(OFFSET_DELETE, 0, group_id=gid, topics=_od_topics({"t": [0], "u": [0, 1]}))
    assert r.error_code == 0
    assert {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions} == {
        ("t", 0): 86, ("u", 0): 0, ("u", 1): 0}
    assert m.fetch(gid, [("u", 0), ("t", 0)]) == {("u", 0): (-1, -1, "", 0), ("t", 0): (1, -1, "", 0)}
    # non-consumer protocol type, not empty -> NON_EMPTY_GROUP
    gid2 = env.group_id()
    c = env.member()
    c.join_parked(gid2, member_id="", version=3, protocol_type="connect",
                  protocols=(("default", b"x"),))
    env.advance(3000)
    assert c.join_result().error_code == 0
    assert c.sync(gid2, assignments={c.member_id: b"a"}, protocol_type="connect",
                  protocol_name="default").error_code == 0
    assert env.state(gid2) == "Stable"
    r = m.request(OFFSET_DELETE, 0, group_id=gid2, topics=_od_topics({"u": [0]}))
    assert r.error_code == 68
    r = m.request(OFFSET_DELETE, 0, group_id=env.group_id(), topics=_od_topics({"u": [0]}))
    assert r.error_code == 69


def _od_topics(spec: dict[str, list[int]]):
    from kafkette.protocol.build import item_type, make
    from kafkette.protocol.codec import request_type

    cls = request_type(OFFSET_DELETE, 0)
    tcls = item_type(cls, "topics")
    pcls = item_type(tcls, "partitions")
    return tuple(make(tcls, name=t, partitions=tuple(make(pcls, partition_index=p) for p in ps))
                 for t, ps in spec.items())


@pytest.mark.parametrize("version", [0, 5, 6])
def test_42_describe_absent_and_stable(env: Env, version: int):
    m = env.member()
    gid, (a, b), _l, _f = form(env, 2)
    absent = env.group_id()
    r = m.request(DESCRIBE, version, groups=(absent, gid), include_authorized_operations=True)
    d_absent, d = r.groups
    if version >= 6:
        assert d_absent.error_code == 69 and d_absent.error_message
    else:
        assert d_absent.error_code == 0
    assert d_absent.group_state == "Dead"
    assert (d.error_code, d.group_state, d.protocol_type, d.protocol_data) == (
        0, "Stable", "consumer", "range")
    assert sorted(x.member_id for x in d.members) == sorted([a.member_id, b.member_id])
    for x in d.members:
        assert x.member_metadata == subscription("t")
        assert x.member_assignment == f"a-{x.member_id}".encode()
        assert x.client_host == "/127.0.0.1"


def test_43_not_coordinator_and_loading(make_env):
    e = make_env()
    e.create_topic("t")
    gid = e.group_id()
    p = e.coordinator.partition_for(gid)
    m = e.member()
    context = e.coordinator.runtime.contexts[p]
    e.run(lambda: setattr(context, "state", State.LOADING))
    assert m.join(gid, member_id="").error_code == 14
    assert m.heartbeat(gid, generation=1, member_id="x") == 0
    assert m.sync(gid, generation=1, member_id="x").error_code == 14
    assert m.commit(gid, {("t", 0): 1}) == {("t", 0): 14}
    r = m.request(9, 9, groups=(_fetch_group(gid),), require_stable=False)
    assert r.groups[0].error_code == 14
    _assert_group_admin_errors(m, gid, 14)
    assert m.request(LIST, 5, states_filter=(), types_filter=()).error_code == 14
    e.run(lambda: setattr(context, "state", State.ACTIVE))
    assert m.commit(gid, {("t", 0): 1}) == {("t", 0): 0}
    e.run(e.coordinator.resign, p)
    assert m.join(gid, member_id="").error_code == 16
    assert m.heartbeat(gid, generation=1, member_id="x") == 16
    assert m.sync(gid, generation=1, member_id="x").error_code == 16
    assert m.commit(gid, {("t", 0): 2}) == {("t", 0): 16}
    r = m.request(9, 9, groups=(_fetch_group(gid),), require_stable=False)
    assert r.groups[0].error_code == 16
    _assert_group_admin_errors(m, gid, 16)
    # ListGroups skips partitions this broker does not lead
    r = m.request(LIST, 5, states_filter=(), types_filter=())
    assert r.error_code == 0 and gid not in {g.group_id for g in r.groups}
    r = m.request(10, 3, key=gid, key_type=0)
    assert r.error_code == 15  # no live leader for that partition
    e.broker.run(e.coordinator.elect(p))
    assert m.join(gid, member_id="").error_code == 79


def _assert_group_admin_errors(m, gid: str, code: int) -> None:
    """LeaveGroup, DescribeGroups, DeleteGroups and OffsetDelete all answer ``code``."""
    assert m.leave(gid, [("x", None)]).error_code == code
    r = m.request(DESCRIBE, 5, groups=(gid,), include_authorized_operations=False)
    assert r.groups[0].error_code == code
    r = m.request(DELETE, 2, groups_names=(gid,))
    assert [x.error_code for x in r.results] == [code]
    r = m.request(OFFSET_DELETE, 0, group_id=gid, topics=_od_topics({"t": [0]}))
    assert r.error_code == code


def test_43_parked_join_gets_not_coordinator_on_unload(make_env):
    e = make_env()
    gid = e.group_id()
    m = e.member()
    m.join_parked(gid, member_id="", version=3)
    e.run(e.coordinator.resign, e.coordinator.partition_for(gid))
    assert m.join_result().error_code == 16


def test_44_retention_expires_empty_group(make_env):
    e = make_env(**{"offsets.retention.minutes": 1, "offsets.retention.check.interval.ms": 1000})
    e.create_topic("t", 3)
    gid, (a,), _l, _f = form(e, 1, session=120_000)
    simple = e.group_id("simple")
    assert a.commit(gid, {("t", 0): 9}, generation=a.generation, member_id=a.member_id) == {("t", 0): 0}
    assert a.commit(simple, {("t", 1): 3}) == {("t", 1): 0}
    e.advance(30_000)
    assert a.commit(simple, {("t", 2): 4}) == {("t", 2): 0}
    a.leave(gid)  # the group becomes Empty now: retention of its offsets counts from here
    e.advance(31_000)
    # simple group: t-1 expired (61 s after its commit), t-2 not yet (31 s)
    assert a.fetch(simple, [("t", 1), ("t", 2)]) == {("t", 1): (-1, -1, "", 0), ("t", 2): (4, -1, "", 0)}
    # consumer group: 61 s after the commit, but only 31 s Empty
    assert a.fetch(gid, [("t", 0)]) == {("t", 0): (9, -1, "", 0)}
    listed = {g.group_id for g in a.request(LIST, 3).groups}
    assert gid in listed and simple in listed
    e.advance(30_000)
    assert a.fetch(gid, [("t", 0)]) == {("t", 0): (-1, -1, "", 0)}
    listed = {g.group_id for g in a.request(LIST, 3).groups}
    assert gid not in listed and simple not in listed


def test_commit_with_retention_writes_v1_value(env: Env):
    gid = env.group_id()
    m = env.member()
    assert m.commit(gid, {("t", 0): 11}, version=2, retention=5000) == {("t", 0): 0}
    assert m.commit(gid, {("t", 1): 12}, version=8) == {("t", 1): 0}
    values = {k: v for k, v in env.offsets_records() if isinstance(k, OffsetCommitKey) and k.group == gid}
    v0 = values[OffsetCommitKey(gid, "t", 0)]
    v1 = values[OffsetCommitKey(gid, "t", 1)]
    assert isinstance(v0, OffsetCommitValue) and v0.expire_timestamp == v0.commit_timestamp + 5000
    assert v1.expire_timestamp is None and v1.commit_timestamp == env.clock.now_ms()


def test_join_v0_uses_session_as_rebalance_timeout(env: Env):
    gid = env.group_id()
    m = env.member()
    m.send(JOIN, 0, group_id=gid, session_timeout=__import__("datetime").timedelta(milliseconds=7000),
           member_id="", protocol_type="consumer",
           protocols=(_proto(0),))
    m.wait_parked()
    env.advance(3000)
    r = m.result()
    assert r.error_code == 0
    assert next(iter(env.group(gid).members.values())).rebalance_timeout_ms == 7000


def _proto(version: int):
    from kafkette.protocol.codec import request_type
    from tests.wire import entity

    return entity(request_type(JOIN, version), "protocols", name="range", metadata=subscription("t"))


def _fetch_group(gid: str):
    from kafkette.protocol.codec import request_type
    from tests.wire import entity

    return entity(request_type(9, 9), "groups", group_id=gid, member_id=None, member_epoch=-1,
                  topics=None)
