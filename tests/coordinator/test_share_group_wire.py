"""KIP-932 share group membership over the wire: ShareGroupHeartbeat (76) and
ShareGroupDescribe (77) against a broker on a ManualClock — validation and error codes, epochs,
the simple assignor sharing partitions, leave and session-timeout fencing (with the member
listener), the other group APIs on a share group, records 10-15 in __consumer_offsets with
Kafka's layout, and the group surviving a restart."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kafkette.protocol import share_group_records as sgr

from .env import DELETE, DESCRIBE, LIST, Env, Member

SHARE_HEARTBEAT, SHARE_DESCRIBE, CONSUMER_HEARTBEAT, CONSUMER_DESCRIBE = 76, 77, 68, 69


def hb(m: Member, group: str, member_id: str, epoch: int, *,
       topics: tuple[str, ...] | None = None, rack: str | None = None) -> Any:
    return m.request(SHARE_HEARTBEAT, 1, group_id=group, member_id=member_id,
                     member_epoch=epoch, rack_id=rack, subscribed_topic_names=topics)


def join(m: Member, group: str, member_id: str, topics: tuple[str, ...] = ("t",)) -> Any:
    return hb(m, group, member_id, 0, topics=topics)


def assigned(response: Any) -> dict[uuid.UUID, set[int]]:
    assert response.assignment is not None, response
    return {tp.topic_id: set(tp.partitions) for tp in response.assignment.topic_partitions}


def describe(m: Member, *groups: str) -> Any:
    return m.request(SHARE_DESCRIBE, 1, group_ids=groups,
                     include_authorized_operations=False).groups


@pytest.fixture(scope="module")
def env932():
    e = Env()
    e.create_topic("t", 1)
    e.create_topic("u", 2)
    yield e
    e.close()


def test_members_share_a_single_partition(env932):
    env, g = env932, env932.group_id()
    a, b, c = env.member("a"), env.member("b"), env.member("c")
    ra = join(a, g, "A")
    assert (ra.error_code, ra.member_id, ra.member_epoch) == (ErrorCode.none, "A", 1)
    interval_ms = env.broker.broker.config.get_int("group.share.heartbeat.interval.ms")
    assert ra.heartbeat_interval == timedelta(milliseconds=interval_ms)
    assert assigned(ra) == {env.broker.broker.logs.topic("t").topic_id: {0}}
    rb, rc = join(b, g, "B"), join(c, g, "C")
    assert (rb.member_epoch, rc.member_epoch) == (2, 3)
    assert assigned(rb) == assigned(rc) == assigned(ra)
    # A catches up to the new epoch; no assignment change, so none is sent
    ra = hb(a, g, "A", 1)
    assert (ra.error_code, ra.member_epoch, ra.assignment) == (ErrorCode.none, 3, None)
    # the steady heartbeat
    ra = hb(a, g, "A", 3)
    assert (ra.error_code, ra.member_epoch, ra.assignment) == (ErrorCode.none, 3, None)
    [d] = describe(a, g)
    assert (d.error_code, d.group_state, d.group_epoch, d.assignment_epoch, d.assignor_name) == (
        ErrorCode.none, "Stable", 3, 3, "simple")
    assert sorted(m.member_id for m in d.members) == ["A", "B", "C"]
    for member in d.members:
        assert member.subscribed_topic_names == ("t",)
        assert [(tp.topic_name, tp.partitions) for tp in member.assignment.topic_partitions] \
            == [("t", (0,))]
    assert {m.client_id for m in d.members} == {"a", "b", "c"}


def test_partitions_spread_when_members_do_not_outnumber_them(env932):
    env, g = env932, env932.group_id()
    a, b = env.member(), env.member()
    ra = join(a, g, "A", ("u",))
    assert sum(len(p) for p in assigned(ra).values()) == 2
    rb = join(b, g, "B", ("u",))
    ra = hb(a, g, "A", 1)
    flat = [(t, p) for r in (ra, rb) for t, ps in assigned(r).items() for p in ps]
    assert len(flat) == len(set(flat)) == 2  # one each, no sharing


def test_validation_and_errors(make_env):
    env = make_env(**{"group.share.max.size": 1})
    env.create_topic("t", 1)
    g = env.group_id()
    m = env.member()
    code = lambda r: r.error_code  # noqa: E731
    assert code(hb(m, g, "", 0, topics=("t",))) == ErrorCode.invalid_request
    assert code(hb(m, "", "x", 0, topics=("t",))) == ErrorCode.invalid_request
    assert code(hb(m, g, "x", 0, topics=("t",), rack="")) == ErrorCode.invalid_request
    r = hb(m, g, "x", 0)
    assert (r.error_code, r.error_message) == (
        ErrorCode.invalid_request, "SubscribedTopicNames must be set in first request.")
    assert code(hb(m, g, "x", 0, topics=())) == ErrorCode.invalid_request
    assert code(hb(m, g, "x", -2)) == ErrorCode.invalid_request
    assert code(hb(m, g, "x", 3)) == ErrorCode.group_id_not_found
    assert code(hb(m, g, "x", -1)) == ErrorCode.group_id_not_found
    assert code(join(m, g, "x")) == ErrorCode.none
    assert code(join(env.member(), g, "y")) == ErrorCode.group_max_size_reached
    assert code(hb(m, g, "y", 1)) == ErrorCode.unknown_member_id
    assert code(hb(m, g, "x", 2)) == ErrorCode.fenced_member_epoch
    assert code(hb(m, g, "y", -1)) == ErrorCode.unknown_member_id
    # a rejoin with epoch 0 keeps the member
    r = join(m, g, "x")
    assert (r.error_code, r.member_epoch) == (ErrorCode.none, 1)


def test_share_version_zero_turns_share_groups_off(make_env):
    env = make_env(**{"share.version": 0})
    env.create_topic("t", 1)
    m = env.member()
    assert join(m, env.group_id(), "x").error_code == ErrorCode.unsupported_version
    [d] = describe(m, "g")
    assert d.error_code == ErrorCode.unsupported_version


def test_leave_and_session_timeout_fence_and_tell_the_listener(env932):
    env, g = env932, env932.group_id()
    seen: list[tuple[str, str]] = []
    env.run(env.coordinator.share_groups().add_member_listener,
            lambda group_id, member_id: seen.append((group_id, member_id)))
    a, b, c = env.member(), env.member(), env.member()
    join(a, g, "A")
    join(b, g, "B")
    join(c, g, "C")
    r = hb(c, g, "C", -1)
    assert (r.error_code, r.member_id, r.member_epoch) == (ErrorCode.none, "C", -1)
    env.advance(3000)
    assert hb(a, g, "A", 1).member_epoch == 4  # A alive, B silent
    env.advance(3500)  # past B's 6 s session timeout
    [d] = describe(a, g)
    assert [m.member_id for m in d.members] == ["A"]
    assert d.group_epoch == 5
    env.run(lambda: None)
    assert (g, "C") in seen and (g, "B") in seen
    assert hb(b, g, "B", 2).error_code == ErrorCode.unknown_member_id
    # B rejoins with epoch 0, same member id (what librdkafka does)
    rb = join(b, g, "B")
    assert rb.error_code == ErrorCode.none and rb.member_epoch == 6


def test_other_group_apis_on_a_share_group(env932):
    env, g = env932, env932.group_id()
    m = env.member()
    join(m, g, "A")
    listed = m.request(LIST, 5, states_filter=(), types_filter=("share",)).groups
    assert [(x.group_id, x.protocol_type, x.group_state, x.group_type) for x in listed
            if x.group_id == g] == [(g, "share", "Stable", "share")]
    assert all(x.group_type == "share" for x in listed)
    assert g not in [x.group_id for x in m.request(
        LIST, 5, states_filter=(), types_filter=("consumer",)).groups]
    dg = m.request(DESCRIBE, 6, groups=(g,), include_authorized_operations=False).groups[0]
    assert (dg.error_code, dg.group_state) == (ErrorCode.group_id_not_found, "Dead")
    cd = m.request(CONSUMER_DESCRIBE, 1, group_ids=(g,),
                   include_authorized_operations=False).groups[0]
    assert cd.error_code == ErrorCode.group_id_not_found
    ch = m.request(CONSUMER_HEARTBEAT, 1, group_id=g, member_id="Z", member_epoch=0,
                   instance_id=None, rack_id=None, rebalance_timeout=timedelta(seconds=30),
                   subscribed_topic_names=("t",), subscribed_topic_regex=None,
                   server_assignor=None, topic_partitions=())
    assert ch.error_code == ErrorCode.group_id_not_found
    assert m.join(g).error_code == ErrorCode.inconsistent_group_protocol
    assert m.commit(g, {("t", 0): 5}) == {("t", 0): ErrorCode.group_id_not_found}
    fetched = m.request(9, 7, group_id=g, topics=None, require_stable=False)
    assert (fetched.error_code, fetched.topics) == (ErrorCode.group_id_not_found, ())
    deleted = m.request(DELETE, 2, groups_names=(g,)).results[0]
    assert deleted.error_code == ErrorCode.non_empty_group
    hb(m, g, "A", -1)
    deleted = m.request(DELETE, 2, groups_names=(g,)).results[0]
    assert deleted.error_code == ErrorCode.none
    [d] = describe(m, g)
    assert d.error_code == ErrorCode.group_id_not_found
    # a consumer group's id is not a share group's
    other = env.group_id()
    m.request(CONSUMER_HEARTBEAT, 1, group_id=other, member_id="Z", member_epoch=0,
              instance_id=None, rack_id=None, rebalance_timeout=timedelta(seconds=30),
              subscribed_topic_names=("t",), subscribed_topic_regex=None,
              server_assignor=None, topic_partitions=())
    r = join(m, other, "A")
    assert (r.error_code, r.error_message) == (
        ErrorCode.group_id_not_found, f"Group {other} is not a share group.")
    [d] = describe(m, other)
    assert d.error_code == ErrorCode.group_id_not_found


def test_records_have_kafkas_layout_and_survive_a_restart(make_env):
    env = make_env()
    env.create_topic("t", 1)
    g = env.group_id()
    a, b = env.member(), env.member()
    join(a, g, "A")
    rb = join(b, g, "B")
    ra = hb(a, g, "A", 1)
    topic_id = env.broker.broker.logs.topic("t").topic_id
    ours = []
    for key, value in env.raw_offsets_records():
        if sgr.record_type(key) in sgr.SHARE_RECORD_TYPES:
            decoded = sgr.decode_key(key)
            if decoded.group == g:
                ours.append((decoded, sgr.decode_value(decoded, value), key, value))
    kinds = [sgr.RECORD_TYPES[type(k)] for k, _v, _kb, _vb in ours]
    # A joins: 10, 15, 11, 13, 12, 14; B joins: 10, 11, 13 (B's only: A's target is
    # unchanged, the partition is shared), 12, 14; A catches up to epoch 2: 14
    assert kinds == [10, 15, 11, 13, 12, 14, 10, 11, 13, 12, 14, 14]
    member_key, member_value, key_bytes, value_bytes = ours[0]
    # key: int16 type 10, int16-length group id and member id
    assert key_bytes == b"\x00\x0a" + len(g).to_bytes(2, "big") + g.encode() + b"\x00\x01A"
    # value: version 0, RackId null, ClientId, ClientHost, [SubscribedTopicNames], no tags
    assert value_bytes[:3] == b"\x00\x00\x00"
    assert member_value.subscribed_topic_names == ("t",)
    state = ours[1][1]
    assert state.initialized_topics == (sgr.TopicPartitionsInfo(topic_id, "t", (0,)),)
    assert ours[-1][1] == sgr.ShareGroupCurrentMemberAssignmentValue(
        2, 1, 0, (sgr.TopicPartitions(topic_id, (0,)),))
    assert ours[2][3][:6] == b"\x00\x00\x00\x00\x00\x01"  # epoch 1

    before = describe(a, g)
    env.broker.restart()
    for member in (a, b):
        member.reconnect()
    assert describe(a, g) == before
    assert hb(a, g, "A", ra.member_epoch).error_code == ErrorCode.none
    assert hb(b, g, "B", rb.member_epoch).error_code == ErrorCode.none
    # timers are re-armed on load: a member silent for the session timeout goes
    env.advance(3000)
    hb(a, g, "A", 2)
    env.advance(3500)
    assert [m.member_id for m in describe(a, g)[0].members] == ["A"]


def test_group_configs_set_the_interval_and_session_timeout(env932):
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    env, g = env932, env932.group_id()
    entries = [ConfigEntry("share.heartbeat.interval.ms", "2000",
                           incremental_operation=AlterConfigOpType.SET),
               ConfigEntry("share.session.timeout.ms", "20000",
                           incremental_operation=AlterConfigOpType.SET)]
    resource = ConfigResource(ResourceType.GROUP, g, incremental_configs=entries)
    admin = AdminClient({"bootstrap.servers": env.broker.bootstrap})
    admin.incremental_alter_configs([resource])[resource].result(10)
    m = env.member()
    r = join(m, g, "A")
    assert r.heartbeat_interval == timedelta(milliseconds=2000)
    env.advance(19_000)  # past the broker's 6 s, not the group's 20 s
    assert [x.member_id for x in describe(m, g)[0].members] == ["A"]
    env.advance(1_001)
    assert describe(m, g)[0].members == ()


def test_api_versions_advertise_share_version(make_env):
    for level in (1, 0):
        env = make_env(**{"share.version": level})
        r = env.member().request(18, 3, client_software_name="t", client_software_version="1")
        maxes = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
        assert maxes[SHARE_HEARTBEAT] == maxes[SHARE_DESCRIBE] == (1, 1)
        assert ("share.version", 0, 1) in [(f.name, f.min_version, f.max_version)
                                           for f in r.supported_features]
        finalized = [(f.name, f.min_version_level, f.max_version_level)
                     for f in r.finalized_features if f.name == "share.version"]
        assert finalized == ([("share.version", 1, 1)] if level else [])


def test_unknown_group_is_not_found_for_the_admin_query(env932):
    env = env932
    code, group = env.run(env.coordinator.share_groups().group("no-such-group"))
    assert (code, group) == (ErrorCode.group_id_not_found.value, None)
    g = env.group_id()
    join(env.member(), g, "A")
    code, group = env.run(env.coordinator.share_groups().group(g))
    assert code == 0 and group.group_state == "Stable"
    assert [m.member_id for m in group.members] == ["A"]



def test_the_admin_console_lists_share_groups(env932):
    from kafkette.broker.admin import groups_view

    env, g = env932, env932.group_id()
    join(env.member(), g, "A")
    rows = [s for s in env.run(groups_view.list_groups, env.broker.broker) if s.group_id == g]
    assert [(s.state, s.protocol_type, s.generation, s.members) for s in rows] == [
        ("Stable", "share", 1, 1)]
