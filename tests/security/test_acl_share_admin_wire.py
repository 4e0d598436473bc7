"""Authorization of the share group APIs (ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch,
ShareAcknowledge, the share-group offsets APIs) and of the newer admin APIs (DescribeLogDirs,
ElectLeaders, DescribeCluster, DescribeProducers, DescribeTopicPartitions) over the wire, as
User:ANONYMOUS on PLAINTEXT: each refused with Kafka's error code without an ACL and answered
once CreateAcls has added it."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type
from kafkette.protocol.records import build_batch
from tests.dataplane.test_wire import produce
from tests.share_fetch.test_wire import share_ack, share_fetch
from tests.share_state.test_offsets_wire import alter, delete, describe, heartbeat
from tests.wire import WireClient

from .test_acl_wire import ADMIN, DENY, RT, STANDARD, Op, add, binding

SHARE_DESCRIBE, LOG_DIRS, ELECT, DESCRIBE_CLUSTER, PRODUCERS, TOPIC_PARTITIONS = \
    77, 35, 43, 60, 61, 75
ALL_TOPIC_OPS = 3576  # what Kafka reports for a topic without an authorizer


class Secured:
    def __init__(self, runner: Any, wire: WireClient) -> None:
        self.runner, self.w = runner, wire

    def create_topic(self, name: str, partitions: int = 1) -> uuid.UUID:
        b = self.runner.broker
        self.runner.run(b.logs.create_topic(name, partitions))
        return b.logs.topic(name).topic_id


@pytest.fixture
def secured(kafka_broker_factory, tmp_path: Path):
    """A broker with the StandardAuthorizer; this client may manage ACLs and nothing else."""
    (tmp_path / "kafkette-acls.json").write_text(json.dumps(
        {"version": 1, "acls": [acl.to_json() for acl in ADMIN]}))
    runner = kafka_broker_factory({"log.dirs": str(tmp_path), "authorizer.class.name": STANDARD,
                                   "group.share.min.record.lock.duration.ms": "1000"})
    with WireClient(runner.bootstrap) as w:
        yield Secured(runner, w)


def allow(s: Secured, rtype: RT, name: str, *ops: Op) -> None:
    results = add(s.w, *(binding(rtype, name, op) for op in ops))
    assert [r.error_code for r in results] == [ErrorCode.none] * len(ops)


def test_share_group_heartbeat_needs_group_read_and_topic_describe(secured) -> None:
    s = secured
    s.create_topic("jobs")
    assert heartbeat(s.w, "g", "m1", 0).error_code == ErrorCode.group_authorization_failed
    allow(s, RT.GROUP, "g", Op.READ)
    assert heartbeat(s.w, "g", "m1", 0).error_code == ErrorCode.topic_authorization_failed
    allow(s, RT.TOPIC, "jobs", Op.DESCRIBE)
    joined = heartbeat(s.w, "g", "m1", 0)
    assert (joined.error_code, joined.member_epoch > 0) == (ErrorCode.none, True)


def share_describe(w: WireClient, *groups: str) -> list[Any]:
    return list(w.request(SHARE_DESCRIBE, 1, group_ids=tuple(groups),
                          include_authorized_operations=True).groups)


def test_share_group_describe_checks_group_and_topics(secured) -> None:
    s = secured
    s.create_topic("jobs")
    allow(s, RT.GROUP, "g", Op.READ)
    allow(s, RT.TOPIC, "jobs", Op.DESCRIBE)
    assert heartbeat(s.w, "g", "m1", 0).error_code == ErrorCode.none
    # no DESCRIBE on a group: refused, and answered after the described groups (READ on "g"
    # implies DESCRIBE, as in Kafka)
    g, refused = share_describe(s.w, "hidden", "g")
    assert (g.group_id, g.error_code) == ("g", ErrorCode.none)
    assert (refused.group_id, refused.error_code, refused.members) == (
        "hidden", ErrorCode.group_authorization_failed, ())
    assert [m.member_id for m in g.members] == ["m1"]
    assert g.authorized_operations == (1 << Op.READ) | (1 << Op.DESCRIBE)
    # a DENY on the subscribed topic withholds the group
    assert [r.error_code for r in add(s.w, binding(RT.TOPIC, "jobs", Op.DESCRIBE, DENY))] == [
        ErrorCode.none]
    (g,) = share_describe(s.w, "g")
    assert (g.error_code, g.members) == (ErrorCode.topic_authorization_failed, ())
    assert g.error_message == ("The group has described topic(s) that the client is not "
                               "authorized to describe.")


def test_share_fetch_and_acknowledge_need_group_and_topic_read(secured) -> None:
    s = secured
    jobs = s.create_topic("jobs")
    hidden = s.create_topic("hidden")
    allow(s, RT.TOPIC, "jobs", Op.WRITE)
    member = str(uuid.uuid4())
    refused = share_fetch(s.w, member, 0, jobs)
    assert (refused.error_code, refused.responses) == (ErrorCode.group_authorization_failed, ())
    assert share_ack(s.w, member, 1, jobs, {0: [(0, 0, [1])]}).error_code == \
        ErrorCode.group_authorization_failed
    allow(s, RT.GROUP, "workers", Op.READ)
    # READ on the group but not the topic: the partition is refused, nothing acquired
    resp = share_fetch(s.w, member, 0, jobs)
    assert resp.error_code == ErrorCode.none
    assert [(p.partition_index, p.error_code, p.acquired_records)
            for t in resp.responses for p in t.partitions] == [
        (0, ErrorCode.topic_authorization_failed, ())]
    allow(s, RT.TOPIC, "jobs", Op.READ)
    assert share_fetch(s.w, member, 1, jobs).error_code == ErrorCode.none  # starts at the end
    assert produce(s.w, "jobs", 0, build_batch([(None, b"a"), (None, b"b")])).error_code == 0
    resp = share_fetch(s.w, member, 2, jobs, max_wait_ms=3000)
    got = {(t.topic_id, p.partition_index): (p.error_code, [
        (r.first_offset, r.last_offset) for r in p.acquired_records])
        for t in resp.responses for p in t.partitions}
    assert got == {(jobs, 0): (ErrorCode.none, [(0, 1)])}
    # an acknowledgement of a topic not readable: its ack is refused, the readable one applies
    acked = share_ack(s.w, member, 3, jobs, {0: [(0, 1, [1])]})
    assert acked.error_code == ErrorCode.none
    assert [p.error_code for t in acked.responses for p in t.partitions] == [ErrorCode.none]
    refused_ack = share_ack(s.w, member, 4, hidden, {0: [(0, 0, [1])]})
    assert [(t.topic_id, p.error_code) for t in refused_ack.responses for p in t.partitions] == [
        (hidden, ErrorCode.topic_authorization_failed)]
    # READ denied later: the session's partition answers TOPIC_AUTHORIZATION_FAILED, once
    assert produce(s.w, "jobs", 0, build_batch([(None, b"c")])).error_code == 0
    add(s.w, binding(RT.TOPIC, "jobs", Op.READ, DENY))
    resp = share_fetch(s.w, member, 5, jobs, max_wait_ms=3000)
    assert [(t.topic_id, p.partition_index, p.error_code, p.acquired_records)
            for t in resp.responses for p in t.partitions] == [
        (jobs, 0, ErrorCode.topic_authorization_failed, ())]


def test_share_group_offsets_apis(secured) -> None:
    s = secured
    s.create_topic("jobs")
    s.create_topic("secret")
    s.create_topic("other")
    g = describe(s.w, "g", [("jobs", [0])])
    assert (g.error_code, g.topics) == (ErrorCode.group_authorization_failed, ())
    assert alter(s.w, "g", [("jobs", [(0, 0)])]).error_code == \
        ErrorCode.group_authorization_failed
    assert delete(s.w, "g", ["jobs"]).error_code == ErrorCode.group_authorization_failed

    allow(s, RT.GROUP, "g", Op.READ, Op.DELETE)
    allow(s, RT.TOPIC, "other", Op.DESCRIBE)
    # the group exists and is empty (a member joined and left)
    assert heartbeat(s.w, "g", "m1", 0, ("other",)).error_code == ErrorCode.none
    assert heartbeat(s.w, "g", "m1", -1).error_code == ErrorCode.none
    g = describe(s.w, "g", [("jobs", [0]), ("secret", [0])])
    assert g.error_code == ErrorCode.none
    assert {t.topic_name: [p.error_code for p in t.partitions] for t in g.topics} == {
        "jobs": [ErrorCode.topic_authorization_failed],
        "secret": [ErrorCode.topic_authorization_failed]}
    allow(s, RT.TOPIC, "jobs", Op.DESCRIBE)
    g = describe(s.w, "g", [("jobs", [0]), ("secret", [0])])
    assert {t.topic_name: [p.error_code for p in t.partitions] for t in g.topics} == {
        "jobs": [ErrorCode.none], "secret": [ErrorCode.topic_authorization_failed]}

    altered = alter(s.w, "g", [("jobs", [(0, 0)])])
    assert altered.error_code == ErrorCode.none
    assert [(t.topic_name, [p.error_code for p in t.partitions]) for t in altered.responses] == [
        ("jobs", [ErrorCode.topic_authorization_failed])]
    deleted = delete(s.w, "g", ["jobs"])
    assert [(t.topic_name, t.error_code) for t in deleted.responses] == [
        ("jobs", ErrorCode.topic_authorization_failed)]
    allow(s, RT.TOPIC, "jobs", Op.READ)
    altered = alter(s.w, "g", [("jobs", [(0, 0)])])
    assert [(t.topic_name, [p.error_code for p in t.partitions]) for t in altered.responses] == [
        ("jobs", [ErrorCode.none])]
    deleted = delete(s.w, "g", ["jobs"])
    assert [(t.topic_name, t.error_code) for t in deleted.responses] == [
        ("jobs", ErrorCode.none)]
    altered = alter(s.w, "g", [("jobs", [(0, 0)])])  # state for the all-topics describe
    assert [p.error_code for t in altered.responses for p in t.partitions] == [ErrorCode.none]
    # every topic asked: one the client may not describe is left out
    assert sorted(t.topic_name for t in describe(s.w, "g", None).topics) == ["jobs", "other"]
    add(s.w, binding(RT.TOPIC, "jobs", Op.DESCRIBE, DENY))
    every = describe(s.w, "g", None)
    assert (every.error_code, [t.topic_name for t in every.topics]) == (ErrorCode.none, ["other"])


def test_describe_log_dirs_needs_cluster_describe(secured) -> None:
    s = secured
    s.create_topic("jobs")
    resp = s.w.request(LOG_DIRS, 4, topics=None)  # ADMIN holds DESCRIBE on the cluster
    assert resp.error_code == ErrorCode.none
    assert "jobs" in [t.name for r in resp.results for t in r.topics]
    add(s.w, binding(RT.CLUSTER, "kafka-cluster", Op.DESCRIBE, DENY))
    refused = s.w.request(LOG_DIRS, 4, topics=None)
    assert (refused.error_code, refused.results) == (ErrorCode.cluster_authorization_failed, ())


def elect(w: WireClient, topic: str) -> Any:
    cls = request_type(ELECT, 2)
    return w.request(ELECT, 2, election_type=0, timeout=timedelta(seconds=5),
                     topic_partitions=(make(item_type(cls, "topic_partitions"), topic=topic,
                                            partitions=(0,)),))


def test_elect_leaders_needs_cluster_alter(secured) -> None:
    s = secured
    s.create_topic("jobs")
    allowed = elect(s.w, "jobs")  # ADMIN holds ALTER on the cluster
    assert allowed.error_code == ErrorCode.none
    assert [p.error_code for r in allowed.replica_election_results
            for p in r.partition_result] == [ErrorCode.election_not_needed]
    add(s.w, binding(RT.CLUSTER, "kafka-cluster", Op.ALTER, DENY))
    refused = elect(s.w, "jobs")
    assert refused.error_code == ErrorCode.cluster_authorization_failed
    assert [(r.topic, p.partition_id, p.error_code) for r in refused.replica_election_results
            for p in r.partition_result] == [
        ("jobs", 0, ErrorCode.cluster_authorization_failed)]


def test_describe_cluster_reports_the_cluster_operations(secured) -> None:
    s = secured

    def operations() -> int:
        resp = s.w.request(DESCRIBE_CLUSTER, 1, include_cluster_authorized_operations=True,
                           endpoint_type=1)
        assert resp.error_code == ErrorCode.none and resp.brokers  # never refused
        return resp.cluster_authorized_operations
    assert operations() == (1 << Op.ALTER) | (1 << Op.DESCRIBE)
    add(s.w, binding(RT.CLUSTER, "kafka-cluster", Op.DESCRIBE, DENY))
    assert operations() == 0  # Kafka: 0 without DESCRIBE on the cluster


def test_describe_producers_needs_topic_read(secured) -> None:
    s = secured
    s.create_topic("jobs")
    cls = request_type(PRODUCERS, 0)

    def codes() -> list[tuple[int, str | None]]:
        resp = s.w.request(PRODUCERS, 0, topics=(
            make(item_type(cls, "topics"), name="jobs", partition_indexes=(0,)),
            make(item_type(cls, "topics"), name="missing", partition_indexes=(0,))))
        return [(p.error_code, p.error_message) for t in resp.topics for p in t.partitions]
    denied = (ErrorCode.topic_authorization_failed, "Topic authorization failed.")
    assert codes() == [denied, denied]  # an unknown topic is not disclosed either
    allow(s, RT.TOPIC, "jobs", Op.READ)
    assert codes()[0] == (ErrorCode.none, None)


def test_describe_topic_partitions_hides_and_refuses_topics(secured) -> None:
    s = secured
    jobs = s.create_topic("jobs", 2)
    s.create_topic("secret")
    cls = request_type(TOPIC_PARTITIONS, 0)

    def topics(*names: str) -> list[Any]:
        return list(s.w.request(TOPIC_PARTITIONS, 0, response_partition_limit=100, cursor=None,
                                topics=tuple(make(item_type(cls, "topics"), name=n)
                                             for n in names)).topics)
    assert topics() == []  # every topic asked: the ones not describable are not listed
    (refused,) = topics("jobs")
    assert (refused.error_code, refused.partitions) == (ErrorCode.topic_authorization_failed, ())
    assert refused.topic_id in (None, uuid.UUID(int=0))  # the zero id: nothing disclosed
    allow(s, RT.TOPIC, "jobs", Op.DESCRIBE, Op.READ)
    assert [t.name for t in topics()] == ["jobs"]
    shown, hidden = topics("secret", "jobs")
    assert (shown.name, shown.error_code, shown.topic_id, len(shown.partitions)) == (
        "jobs", ErrorCode.none, jobs, 2)
    assert shown.topic_authorized_operations == (1 << Op.READ) | (1 << Op.DESCRIBE)
    assert (hidden.name, hidden.error_code) == ("secret", ErrorCode.topic_authorization_failed)


def test_without_an_authorizer_every_operation_is_reported(kafka_broker_factory) -> None:
    runner = kafka_broker_factory()
    runner.run(runner.broker.logs.create_topic("jobs", 1))
    cls = request_type(TOPIC_PARTITIONS, 0)
    with WireClient(runner.bootstrap) as w:
        (t,) = w.request(TOPIC_PARTITIONS, 0, response_partition_limit=10, cursor=None,
                         topics=(make(item_type(cls, "topics"), name="jobs"),)).topics
        assert t.topic_authorized_operations == ALL_TOPIC_OPS
        assert w.request(LOG_DIRS, 4, topics=None).error_code == ErrorCode.none
