"""KIP-848 over the wire: ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69) against a
broker on a ManualClock — validation and error codes in Kafka's order, epochs and revocation
before assignment, leave/static leave/rejoin, session timeout, the other group APIs on a
consumer group, and persistence of records 3-8/16 across a restart."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kafkette.protocol import consumer_group_records as cgr
from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type

from .env import COMMIT, DELETE, DESCRIBE, LIST, Env, Member

HEARTBEAT_848, DESCRIBE_848 = 68, 69


def hb(m: Member, group: str, member_id: str, epoch: int, *, version: int = 1,
       topics: tuple[str, ...] | None = None, regex: str | None = None,
       owned: dict[uuid.UUID, list[int]] | None = None, rebalance_ms: int = -1,
       instance: str | None = None, assignor: str | None = None, rack: str | None = None) -> Any:
    cls = request_type(HEARTBEAT_848, version)
    tps = None if owned is None else tuple(
        make(item_type(cls, "topic_partitions"), topic_id=t, partitions=tuple(ps))
        for t, ps in owned.items())
    fields = dict(group_id=group, member_id=member_id, member_epoch=epoch, instance_id=instance,
                  rack_id=rack, rebalance_timeout=timedelta(milliseconds=rebalance_ms),
                  subscribed_topic_names=topics, server_assignor=assignor,
                  topic_partitions=tps)
    if version >= 1:
        fields["subscribed_topic_regex"] = regex
    return m.request(HEARTBEAT_848, version, **fields)


def join(m: Member, group: str, member_id: str, **kw: Any) -> Any:
    kw.setdefault("topics", ("t",))
    return hb(m, group, member_id, 0, owned={}, rebalance_ms=30_000, **kw)


def assigned(response: Any) -> dict[uuid.UUID, set[int]]:
    assert response.assignment is not None, response
    return {tp.topic_id: set(tp.partitions) for tp in response.assignment.topic_partitions}


def as_owned(assignment: dict[uuid.UUID, set[int]]) -> dict[uuid.UUID, list[int]]:
    return {t: sorted(ps) for t, ps in assignment.items()}


def describe(m: Member, group: str, version: int = 1) -> Any:
    r = m.request(DESCRIBE_848, version, group_ids=(group,), include_authorized_operations=False)
    return r.groups[0]


@pytest.fixture(scope="module")
def env848():
    e = Env()
    e.create_topic("t", 4)
    e.create_topic("u", 2)
    yield e
    e.close()


def test_two_members_split_with_revocation_before_assignment(env848):
    env, g = env848, env848.group_id()
    a, b = env.member("a"), env.member("b")
    ra = join(a, g, "A")
    assert (ra.error_code, ra.member_id, ra.member_epoch) == (ErrorCode.none, "A", 1)
    assert ra.heartbeat_interval == timedelta(milliseconds=100)  # the development preset's
    a_parts = assigned(ra)
    assert sum(len(p) for p in a_parts.values()) == 4
    rb = join(b, g, "B")
    assert rb.member_epoch == 2
    assert assigned(rb) == {}  # everything still owned by A
    # A is told to give two partitions back: keeps the epoch until it confirms
    ra = hb(a, g, "A", 1, owned=as_owned(a_parts))
    kept = assigned(ra)
    assert ra.member_epoch == 1 and sum(len(p) for p in kept.values()) == 2
    ra = hb(a, g, "A", 1, owned=as_owned(kept))
    assert ra.member_epoch == 2
    rb = hb(b, g, "B", 2, owned={})
    b_parts = assigned(rb)
    flat = [(t, p) for side in (kept, b_parts) for t, ps in side.items() for p in ps]
    assert len(flat) == len(set(flat)) == 4
    d = describe(a, g)
    assert (d.error_code, d.group_state, d.group_epoch, d.assignment_epoch) == (
        ErrorCode.none, "Stable", 2, 2)
    assert d.assignor_name == "uniform"
    assert sorted(m.member_id for m in d.members) == ["A", "B"]
    assert all(m.member_type == 1 and m.client_id in ("a", "b") for m in d.members)
    assert {tp.topic_name for m in d.members for tp in m.assignment.topic_partitions} == {"t"}


def test_errors_in_kafkas_order(make_env):
    env = make_env(**{"group.consumer.max.size": 1})
    env.create_topic("t", 2)
    g = env.group_id()
    m = env.member()
    code = lambda r: r.error_code  # noqa: E731
    assert code(hb(m, g, "", 0, owned={}, rebalance_ms=1000, topics=("t",))) == \
        ErrorCode.invalid_request  # v1: member id required
    assert code(hb(m, "", "x", 0, owned={}, rebalance_ms=1000, topics=("t",))) == \
        ErrorCode.invalid_request
    assert code(hb(m, g, "x", 0, owned={}, topics=("t",))) == ErrorCode.invalid_request
    assert code(hb(m, g, "x", 0, rebalance_ms=1000, topics=("t",))) == ErrorCode.invalid_request
    assert code(hb(m, g, "x", 0, owned={}, rebalance_ms=1000)) == ErrorCode.invalid_request
    assert code(hb(m, g, "x", -3)) == ErrorCode.invalid_request
    assert code(hb(m, g, "x", -2)) == ErrorCode.invalid_request  # static leave without instance
    r = join(m, g, "x", assignor="sticky")
    assert (r.error_code, r.error_message) == (
        ErrorCode.unsupported_assignor,
        "ServerAssignor sticky is not supported. Supported assignors: uniform, range.")
    assert code(hb(m, g, "x", 3, owned={})) == ErrorCode.group_id_not_found
    assert code(join(m, g, "x")) == ErrorCode.none
    assert code(join(env.member(), g, "y")) == ErrorCode.group_max_size_reached
    # Kafka checks the size before looking the member up
    assert code(hb(m, g, "y", 1, owned={})) == ErrorCode.group_max_size_reached
    assert code(hb(m, g, "x", 7, owned={})) == ErrorCode.fenced_member_epoch
    assert code(hb(m, g, "x", 1, owned={})) == ErrorCode.none


def test_heartbeat_v0_gets_a_member_id_from_the_coordinator(env848):
    g = env848.group_id()
    m = env848.member()
    r = join(m, g, "", version=0)
    assert r.error_code == ErrorCode.none and r.member_epoch == 1
    uuid.UUID(r.member_id)
    assert hb(m, g, r.member_id, 1, version=0).error_code == ErrorCode.none


def test_static_member_leaves_for_now_and_comes_back_without_a_bump(env848):
    env, g = env848, env848.group_id()
    a, b = env.member(), env.member()
    ra = join(a, g, "A1", instance="i-1")
    parts = assigned(ra)
    assert join(b, g, "A2", instance="i-1").error_code == ErrorCode.unreleased_instance_id
    r = hb(a, g, "A1", -2, instance="i-1")
    assert (r.error_code, r.member_id, r.member_epoch) == (ErrorCode.none, "A1", -2)
    before = describe(a, g)
    r = join(b, g, "A2", instance="i-1")
    assert (r.error_code, r.member_epoch) == (ErrorCode.none, 1)
    assert assigned(r) == parts
    after = describe(a, g)
    assert after.group_epoch == before.group_epoch == 1
    assert [(m.member_id, m.instance_id) for m in after.members] == [("A2", "i-1")]
    assert hb(a, g, "A1", 1, instance="i-1").error_code == ErrorCode.fenced_instance_id


def test_leave_and_rejoin_with_epoch_zero(env848):
    env, g = env848, env848.group_id()
    a, b = env.member(), env.member()
    ra = join(a, g, "A")
    rb = join(b, g, "B")
    hb(a, g, "A", 1, owned=as_owned(assigned(ra)))
    r = hb(b, g, "B", -1)
    assert (r.error_code, r.member_id, r.member_epoch) == (ErrorCode.none, "B", -1)
    d = describe(a, g)
    assert [m.member_id for m in d.members] == ["A"] and d.group_epoch == 3
    assert hb(b, g, "B", 2).error_code == ErrorCode.unknown_member_id
    # A known member may rejoin with epoch 0 (KAFKA-19233) and gets a full assignment
    r = join(a, g, "A")
    assert r.error_code == ErrorCode.none and r.member_epoch == 3
    # what it was revoking is released once its own record says so
    r = hb(a, g, "A", 3, owned=as_owned(assigned(r)))
    assert sum(len(p) for p in assigned(r).values()) == 4
    assert rb.member_epoch == 2


def test_session_timeout_fences_the_member(env848):
    env, g = env848, env848.group_id()
    a, b = env.member(), env.member()
    join(a, g, "A")
    join(b, g, "B")
    env.advance(3000)
    hb(a, g, "A", 1, owned=None)  # A stays alive, B stays silent
    env.advance(3500)
    d = describe(a, g)
    assert [m.member_id for m in d.members] == ["A"]
    assert d.group_epoch == 3
    assert hb(b, g, "B", 2, owned={}).error_code == ErrorCode.unknown_member_id


def test_describe_v0_v1_and_errors(env848):
    env, g = env848, env848.group_id()
    m = env.member()
    join(m, g, "A", topics=("t", "u"), rack="r1")
    for version in (0, 1):
        d = describe(m, g, version)
        assert d.error_code == ErrorCode.none and d.group_epoch == 1
        member = d.members[0]
        assert (member.member_id, member.rack_id, member.subscribed_topic_names) == (
            "A", "r1", ("t", "u"))
        assert member.client_host.startswith("/127.0.0.1")
        assert {tp.topic_name for tp in member.target_assignment.topic_partitions} == {"t", "u"}
        if version >= 1:
            assert member.member_type == 1
    r = m.request(DESCRIBE_848, 1, group_ids=("nope", ""), include_authorized_operations=True)
    assert [(x.group_id, x.error_code) for x in r.groups] == [
        ("nope", ErrorCode.group_id_not_found), ("", ErrorCode.invalid_group_id)]
    classic = env.group_id("classic")
    m.join(classic)
    x = describe(m, classic)
    assert (x.error_code, x.error_message) == (
        ErrorCode.group_id_not_found, f"Group {classic} is not a consumer group.")


def test_other_group_apis_on_a_consumer_group(env848):
    env, g = env848, env848.group_id()
    m = env.member()
    r = join(m, g, "A")
    assert m.commit(g, {("t", 0): 5}, generation=r.member_epoch + 1, member_id="A") == {
        ("t", 0): ErrorCode.stale_member_epoch}
    assert m.commit(g, {("t", 0): 5}, generation=1, member_id="B") == {
        ("t", 0): ErrorCode.unknown_member_id}
    assert m.commit(g, {("t", 0): 5}, generation=1, member_id="A") == {("t", 0): ErrorCode.none}
    assert m.fetch(g, [("t", 0)])[("t", 0)][0] == 5
    listed = m.request(LIST, 5, states_filter=(), types_filter=("consumer",))
    rows = {x.group_id: (x.protocol_type, x.group_state, x.group_type) for x in listed.groups}
    assert rows[g] == ("consumer", "Stable", "consumer")
    classic_only = m.request(LIST, 5, states_filter=(), types_filter=("classic",))
    assert g not in {x.group_id for x in classic_only.groups}
    d = m.request(DESCRIBE, 5, groups=(g,), include_authorized_operations=False).groups[0]
    assert (d.error_code, d.group_state) == (ErrorCode.none, "Dead")
    d = m.request(DESCRIBE, 6, groups=(g,), include_authorized_operations=False).groups[0]
    assert (d.error_code, d.group_state) == (ErrorCode.group_id_not_found, "Dead")
    deleted = m.request(DELETE, 2, groups_names=(g,))
    assert deleted.results[0].error_code == ErrorCode.non_empty_group
    # a classic member of another protocol type cannot join a consumer group
    joined = m.join(g, protocol_type="connect")
    assert joined.error_code == ErrorCode.inconsistent_group_protocol
    hb(m, g, "A", -1)
    deleted = m.request(DELETE, 2, groups_names=(g,))
    assert deleted.results[0].error_code == ErrorCode.none
    assert describe(m, g).error_code == ErrorCode.group_id_not_found
    assert m.fetch(g, [("t", 0)])[("t", 0)][0] == -1
    records = [(cgr.decode_key(k), v) for k, v in env.raw_offsets_records()]
    mine = [(type(k), v is None) for k, v in records if getattr(k, "group", None) == g]
    # the deletion wrote the group's tombstones in Kafka's order, the type-3 one last
    assert mine[-1] == (cgr.ConsumerGroupMetadataKey, True)
    assert (cgr.ConsumerGroupPartitionMetadataKey, True) in mine


def test_offset_commit_below_v9_is_refused_for_consumer_members(env848):
    g = env848.group_id()
    m = env848.member()
    join(m, g, "A")
    assert m.commit(g, {("t", 1): 3}, generation=1, member_id="A", version=8) == {
        ("t", 1): ErrorCode.unsupported_version}
    assert COMMIT == 8


def test_regex_subscription_picks_up_a_topic_created_later(env848):
    env, g = env848, env848.group_id()
    m = env.member()
    r = join(m, g, "A", topics=None, regex="orders-.*")
    assert r.error_code == ErrorCode.none and assigned(r) == {}
    env.advance(0)  # the first resolution runs right after the join is durable
    create = m.request(19, 7, topics=(make(item_type(request_type(19, 7), "topics"),
                                           name="orders-eu", num_partitions=2,
                                           replication_factor=1, assignments=(), configs=()),),
                       timeout=timedelta(seconds=5), validate_only=False)
    assert create.topics[0].error_code == ErrorCode.none
    epoch = r.member_epoch
    for _ in range(5):  # the refresh is throttled to once per 10 s
        r = hb(m, g, "A", epoch, owned={})
        assert r.error_code == ErrorCode.none, r
        epoch = r.member_epoch
        if r.assignment is not None and r.assignment.topic_partitions:
            break
        env.advance(3000)
    assert sum(len(p) for p in assigned(r).values()) == 2
    d = describe(m, g)
    assert d.members[0].subscribed_topic_regex == "orders-.*"
    assert {tp.topic_name for tp in d.members[0].assignment.topic_partitions} == {"orders-eu"}
    assert hb(m, g, "B", 0, owned={}, rebalance_ms=1000, regex="(").error_code == \
        ErrorCode.invalid_regular_expression


def test_group_members_epochs_and_assignment_survive_a_restart(make_env):
    env = make_env()
    env.create_topic("t", 4)
    g = env.group_id()
    a, b = env.member(), env.member()
    ra = join(a, g, "A")
    join(b, g, "B", assignor="range")
    ra = hb(a, g, "A", 1, owned=as_owned(assigned(ra)))
    ra = hb(a, g, "A", 1, owned=as_owned(assigned(ra)))
    rb = hb(b, g, "B", 2, owned={})
    before = describe(a, g)
    env.broker.restart()
    for member in (a, b):
        member.reconnect()
    after = describe(a, g)
    assert after == before
    assert after.assignor_name == "range" and after.group_epoch == 2
    # members carry on at their epochs: no FENCED_MEMBER_EPOCH, no new assignment
    assert hb(a, g, "A", ra.member_epoch).error_code == ErrorCode.none
    assert hb(b, g, "B", rb.member_epoch).error_code == ErrorCode.none
    # timers are re-armed on load: a member silent for the session timeout goes
    env.advance(3000)
    hb(a, g, "A", 2)
    env.advance(3500)
    assert [m.member_id for m in describe(a, g).members] == ["A"]


def test_an_empty_classic_group_becomes_a_consumer_group(env848):
    env, g = env848, env848.group_id()
    m = env.member()
    assert m.commit(g, {("t", 2): 9}) == {("t", 2): ErrorCode.none}  # simple classic group
    r = join(m, g, "A")
    assert r.error_code == ErrorCode.none
    assert m.fetch(g, [("t", 2)])[("t", 2)][0] == 9
    busy = env.group_id()
    classic = env.member()
    assert classic.join(busy, protocol_type="connect").error_code == \
        ErrorCode.member_id_required
    classic.join_parked(busy, protocol_type="connect")
    env.advance(3000)  # group.initial.rebalance.delay.ms
    assert classic.join_result().error_code == ErrorCode.none  # a live classic member
    r = hb(m, busy, "A", 3, owned={})
    assert (r.error_code, r.error_message) == (
        ErrorCode.group_id_not_found, f"Group {busy} is not a consumer group.")
    r = join(m, busy, "A")  # not the consumer embedded protocol: no online upgrade
    assert (r.error_code, r.error_message) == (
        ErrorCode.group_id_not_found, f"Cannot upgrade classic group {busy} to consumer group "
        "because the group does not use the consumer embedded protocol.")


def test_protocol_disabled_answers_unsupported_version(make_env):
    env = make_env(**{"group.coordinator.rebalance.protocols": "classic"})
    m = env.member()
    assert join(m, "g", "A").error_code == ErrorCode.unsupported_version
    assert describe(m, "g").error_code == ErrorCode.unsupported_version


def test_offset_fetch_checks_the_member_epoch(env848):
    env, g = env848, env848.group_id()
    m = env.member()
    join(m, g, "A")
    assert m.commit(g, {("t", 3): 11}, generation=1, member_id="A") == {("t", 3): 0}
    cls = request_type(9, 9)

    def fetch(member_id: str | None, epoch: int) -> Any:
        topic = make(item_type(item_type(cls, "groups"), "topics"), name="t",
                     partition_indexes=(3,))
        group = make(item_type(cls, "groups"), group_id=g, member_id=member_id,
                     member_epoch=epoch, topics=(topic,))
        return m.request(9, 9, groups=(group,), require_stable=False).groups[0]
    assert fetch("A", 2).error_code == ErrorCode.stale_member_epoch
    assert fetch("B", 1).error_code == ErrorCode.unknown_member_id
    ok = fetch("A", 1)
    assert ok.error_code == ErrorCode.none
    assert ok.topics[0].partitions[0].committed_offset == 11
    assert fetch(None, -1).topics[0].partitions[0].committed_offset == 11


def test_offsets_of_an_empty_consumer_group_expire_and_the_group_goes(make_env):
    env = make_env(**{"offsets.retention.minutes": 1,
                      "offsets.retention.check.interval.ms": 1000})
    env.create_topic("t", 2)
    g = env.group_id()
    m = env.member()
    join(m, g, "A")
    assert m.commit(g, {("t", 0): 4}, generation=1, member_id="A") == {("t", 0): 0}
    env.advance(30_000 - 1)  # session timeout fences A long before; the group is then empty
    assert describe(m, g).members == ()
    assert m.fetch(g, [("t", 0)])[("t", 0)][0] == 4  # not yet expired
    env.advance(32_000)
    assert m.fetch(g, [("t", 0)])[("t", 0)][0] == -1
    assert describe(m, g).error_code == ErrorCode.group_id_not_found


@pytest.mark.parametrize("overrides", [
    {"group.consumer.session.timeout.ms": "10"},
    {"group.consumer.heartbeat.interval.ms": "7000", "group.consumer.session.timeout.ms": "6000"},
    {"group.consumer.migration.policy": "sideways"},
    {"group.coordinator.rebalance.protocols": "consumer"},
    {"group.consumer.assignors": "sticky"},
])
def test_bad_consumer_group_configs_stop_the_broker_at_start(tmp_path, overrides):
    from kafkette.broker.config_def import ConfigError
    from kafkette.broker.testing import ThreadedBroker, test_config

    with pytest.raises(ConfigError):
        ThreadedBroker(test_config(str(tmp_path), **overrides))


# Mixed groups: classic members in a consumer group (rolling upgrade) ---------------------------

def _classic_member_joins_alone(env: Env, g: str) -> Member:
    from kafkette.protocol.consumer_protocol import encode_assignment

    c = env.member("classic")
    assert c.join(g).error_code == ErrorCode.member_id_required
    c.join_parked(g)
    env.advance(3000)  # group.initial.rebalance.delay.ms
    assert c.join_result().error_code == ErrorCode.none
    everything = encode_assignment([("t", [0, 1, 2, 3])], 0)
    assert c.sync(g, assignments={c.member_id: everything}).error_code == ErrorCode.none
    return c


def test_online_upgrade_and_a_classic_member_in_a_consumer_group(env848):
    from kafkette.protocol.consumer_protocol import assignment_partitions

    env, g = env848, env848.group_id()
    c = _classic_member_joins_alone(env, g)
    generation = c.generation
    m = env.member()
    r = join(m, g, "A")  # the first consumer-protocol member upgrades the group online
    assert (r.error_code, r.member_epoch) == (ErrorCode.none, generation + 1)
    assert assigned(r) == {}  # the classic member still owns everything
    d = describe(m, g)
    assert d.group_epoch == generation + 1
    assert {(x.member_id, x.member_type) for x in d.members} == {(c.member_id, 0), ("A", 1)}
    # the classic member is told to rejoin, gives back half and syncs its new assignment
    assert c.heartbeat(g) == ErrorCode.rebalance_in_progress
    joined = c.join(g)
    assert (joined.error_code, joined.generation_id, joined.protocol_type) == (
        ErrorCode.none, generation + 1, "consumer")
    synced = c.sync(g)
    assert synced.error_code == ErrorCode.none
    mine = {p for _t, p in assignment_partitions(synced.assignment)}
    assert len(mine) == 2
    assert c.heartbeat(g) == ErrorCode.none
    r = hb(m, g, "A", r.member_epoch, owned={})
    theirs = {p for ps in assigned(r).values() for p in ps}
    assert mine | theirs == {0, 1, 2, 3} and not mine & theirs
    # offsets: the classic member commits with its generation (= member epoch)
    assert m.commit(g, {("t", 0): 1}, generation=c.generation + 5, member_id=c.member_id) == {
        ("t", 0): ErrorCode.illegal_generation}
    assert m.commit(g, {("t", 0): 1}, generation=c.generation, member_id=c.member_id) == {
        ("t", 0): ErrorCode.none}
    # LeaveGroup removes the classic member like a fence
    left = c.leave(g)
    assert left.error_code == ErrorCode.none and left.members[0].error_code == ErrorCode.none
    d = describe(m, g)
    assert [x.member_id for x in d.members] == ["A"]


def test_a_classic_member_joins_a_live_consumer_group(env848):
    env, g = env848, env848.group_id()
    m = env.member()
    r = join(m, g, "A")
    c = env.member("classic")
    first = c.join(g)
    assert first.error_code == ErrorCode.member_id_required
    joined = c.join(g)
    assert joined.error_code == ErrorCode.none and joined.generation_id == 2
    assert joined.leader == "" and joined.members == ()
    # A must revoke first: the classic member gets its half once A confirms
    r = hb(m, g, "A", 1, owned=as_owned(assigned(r)))
    r = hb(m, g, "A", 1, owned=as_owned(assigned(r)))
    assert r.member_epoch == 2
    assert c.heartbeat(g) == ErrorCode.rebalance_in_progress  # its partitions are free now
    assert c.join(g).error_code == ErrorCode.none
    assert len(c.sync(g).assignment) > 10
    bad = env.member("other")
    other = bad.join(g, protocols=(("roundrobin", b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff"),),
                     member_id="")
    assert other.error_code == ErrorCode.inconsistent_group_protocol
    # a classic member silent past its session timeout (10 s) is fenced
    env.advance(5000)
    assert hb(m, g, "A", 2).error_code == ErrorCode.none
    env.advance(5500)
    assert [x.member_id for x in describe(m, g).members] == ["A"]


def test_the_last_consumer_member_leaving_downgrades_to_a_classic_group(env848):
    env, g = env848, env848.group_id()
    m = env.member()
    r = join(m, g, "A")
    c = env.member("classic")
    assert c.join(g).error_code == ErrorCode.member_id_required
    joined = c.join(g)
    assert joined.error_code == ErrorCode.none
    epoch = joined.generation_id
    r = hb(m, g, "A", 1, owned=as_owned(assigned(r)))
    hb(m, g, "A", 1, owned=as_owned(assigned(r)))
    assert hb(m, g, "A", -1).error_code == ErrorCode.none
    env.advance(0)  # the classic group's rebalance starts right after
    gone = describe(m, g)
    assert (gone.error_code, gone.error_message) == (
        ErrorCode.group_id_not_found, f"Group {g} is not a consumer group.")
    d = m.request(DESCRIBE, 5, groups=(g,), include_authorized_operations=False).groups[0]
    assert (d.group_state, d.protocol_type) == ("PreparingRebalance", "consumer")
    assert [x.member_id for x in d.members] == [c.member_id]
    assert c.heartbeat(g, generation=epoch) == ErrorCode.rebalance_in_progress
    again = c.join(g)
    assert again.error_code == ErrorCode.none and again.leader == c.member_id
    assert again.generation_id == epoch + 1
    listed = m.request(LIST, 5, states_filter=(), types_filter=())
    assert {x.group_id: x.group_type for x in listed.groups}[g] == "classic"


def test_a_classic_static_member_replacing_the_last_consumer_member_downgrades(env848):
    env, g = env848, env848.group_id()
    m = env.member()
    join(m, g, "A", instance="i-1")
    c = env.member("classic")
    assert c.join(g).error_code == ErrorCode.member_id_required
    assert c.join(g).error_code == ErrorCode.none
    assert hb(m, g, "A", -2, instance="i-1").error_code == ErrorCode.none  # away for now
    s = env.member("static-classic")
    joined = s.join(g, instance="i-1", member_id="")
    assert joined.error_code == ErrorCode.none
    env.advance(0)
    assert describe(m, g).error_code == ErrorCode.group_id_not_found
    d = m.request(DESCRIBE, 5, groups=(g,), include_authorized_operations=False).groups[0]
    assert d.group_state == "PreparingRebalance"
    assert sorted(x.member_id for x in d.members) == sorted([c.member_id, joined.member_id])
    assert {x.group_instance_id for x in d.members} == {None, "i-1"}
