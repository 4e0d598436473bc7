"""AlterPartitionReassignments and ListPartitionReassignments on the wire, against three nodes and
one: a move completes at once when its new replicas are live (Metadata shows them, the ISR and
the leader), waits listed (adding/removing) while one is on a stopped node, completes when that
node starts or is cancelled; Kafka's error codes for bad requests; the new replicas survive a
restart; the cluster ACLs (ALTER for Alter, DESCRIBE for List)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type
from tests.cluster.test_wire import find_coordinator, metadata
from tests.security.test_acl_wire import ADMIN, DENY, RT, STANDARD, Op, add, binding
from tests.wire import WireClient

ALTER, LIST, CREATE = 45, 46, 19
TOPIC = "moving"


def alter(bootstrap: str, moves: dict[tuple[str, int], list[int] | None], version: int = 1,
          **fields: Any) -> Any:
    cls = request_type(ALTER, version)
    topic_cls = item_type(cls, "topics")
    part_cls = item_type(topic_cls, "partitions")
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), replicas in moves.items():
        by_topic.setdefault(topic, []).append(make(
            part_cls, partition_index=partition,
            replicas=None if replicas is None else tuple(replicas)))
    with WireClient(bootstrap) as w:
        return w.request(ALTER, version, timeout=timedelta(seconds=5), **fields, topics=tuple(
            make(topic_cls, name=t, partitions=tuple(ps)) for t, ps in by_topic.items()))


def errors(response: Any) -> dict[tuple[str, int], tuple[ErrorCode, str | None]]:
    return {(t.name, p.partition_index): (p.error_code, p.error_message)
            for t in response.responses for p in t.partitions}


def ongoing(bootstrap: str, topics: dict[str, list[int]] | None = None) -> dict:
    cls = request_type(LIST, 0)
    with WireClient(bootstrap) as w:
        resp = w.request(LIST, 0, timeout=timedelta(seconds=5), topics=None if topics is None
                         else tuple(make(item_type(cls, "topics"), name=t, partition_indexes=ps)
                                    for t, ps in topics.items()))
    assert resp.error_code == ErrorCode.none
    return {(t.name, p.partition_index): (list(p.replicas), list(p.adding_replicas),
                                          list(p.removing_replicas))
            for t in resp.topics for p in t.partitions}


def placement(bootstrap: str, topic: str = TOPIC) -> list[tuple[int, list[int], list[int]]]:
    """(leader, replicas, isr) of each partition, from Metadata."""
    parts = sorted(metadata(bootstrap, topic).topics[0].partitions,
                   key=lambda p: p.partition_index)
    return [(p.leader_id, list(p.replica_nodes), list(p.isr_nodes)) for p in parts]


def create(bootstrap: str, assignment: list[list[int]], topic: str = TOPIC) -> None:
    cls = request_type(CREATE, 7)
    topic_cls = item_type(cls, "topics")
    with WireClient(bootstrap) as w:
        resp = w.request(CREATE, 7, timeout=timedelta(seconds=10), validate_only=False,
                         topics=(make(topic_cls, name=topic, num_partitions=-1,
                                      replication_factor=-1, configs=(), assignments=tuple(
                                          make(item_type(topic_cls, "assignments"),
                                               partition_index=i, broker_ids=tuple(r))
                                          for i, r in enumerate(assignment))),))
    assert resp.topics[0].error_code == ErrorCode.none, resp.topics[0].error_message


def test_moves_complete_wait_for_a_stopped_node_and_cancel(kafka_cluster):
    bootstrap = kafka_cluster.bootstrap.split(",")[0]  # node 1, never stopped here
    create(bootstrap, [[1, 2], [2, 3]])
    done = alter(bootstrap, {(TOPIC, 0): [2, 3], (TOPIC, 1): [3, 2]})
    assert (done.error_code, done.allow_replication_factor_change) == (ErrorCode.none, True)
    assert set(errors(done).values()) == {(ErrorCode.none, None)}
    # 1 left: its first live new replica leads; a reorder keeps the leader (Kafka's election)
    assert placement(bootstrap) == [(2, [2, 3], [2, 3]), (2, [3, 2], [3, 2])]
    assert ongoing(bootstrap) == {}

    kafka_cluster.stop_node(3)
    assert errors(alter(bootstrap, {(TOPIC, 0): [1, 3]})) == {(TOPIC, 0): (ErrorCode.none, None)}
    waiting = {(TOPIC, 0): ([1, 3, 2], [1], [2])}  # 3 is down: it cannot catch up
    assert ongoing(bootstrap) == waiting
    assert ongoing(bootstrap, {TOPIC: [0, 1], "no-such-topic": [0]}) == waiting
    assert ongoing(bootstrap, {TOPIC: [1]}) == {}
    assert placement(bootstrap)[0] == (2, [1, 3, 2], [1, 2])  # the leader stays meanwhile

    assert errors(alter(bootstrap, {(TOPIC, 0): None, (TOPIC, 1): None})) == {
        (TOPIC, 0): (ErrorCode.none, None),
        (TOPIC, 1): (ErrorCode.no_reassignment_in_progress,
                     "No partition reassignment is in progress.")}
    assert ongoing(bootstrap) == {}
    assert placement(bootstrap)[0] == (2, [3, 2], [2])  # the original replicas, 3 still down

    alter(bootstrap, {(TOPIC, 0): [1, 3]})
    assert list(ongoing(bootstrap)) == [(TOPIC, 0)]
    kafka_cluster.start_node(3)  # 3 catches up: the move completes
    assert ongoing(bootstrap) == {}
    assert placement(bootstrap)[0] == (1, [1, 3], [1, 3])

    kafka_cluster.runner.restart()  # the new replicas are stored with the topic's
    assert placement(kafka_cluster.bootstrap.split(",")[0]) == [(1, [1, 3], [1, 3]), (3, [3, 2], [3, 2])]


def test_bad_reassignments_get_kafkas_errors(kafka_cluster):
    bootstrap = kafka_cluster.bootstrap.split(",")[0]  # node 1, never stopped here
    create(bootstrap, [[1, 2]])
    got = errors(alter(bootstrap, {
        (TOPIC, 0): [1, 1], (TOPIC, 5): [1], ("no-such-topic", 0): [1]}))
    assert got == {
        (TOPIC, 0): (ErrorCode.invalid_replica_assignment,
                     "The manual partition assignment includes the broker 1 more than once."),
        (TOPIC, 5): (ErrorCode.unknown_topic_or_partition, f"Unable to find partition {TOPIC}:5."),
        ("no-such-topic", 0): (ErrorCode.unknown_topic_or_partition,
                               "Unable to find a topic named no-such-topic.")}
    assert errors(alter(bootstrap, {(TOPIC, 0): [7]}))[(TOPIC, 0)] == (
        ErrorCode.invalid_replica_assignment,
        "The manual partition assignment includes broker 7, but no such broker is registered.")
    assert errors(alter(bootstrap, {(TOPIC, 0): []}))[(TOPIC, 0)] == (
        ErrorCode.invalid_replica_assignment,
        "The manual partition assignment includes an empty replica list.")
    refused = alter(bootstrap, {(TOPIC, 0): [1, 2, 3]}, allow_replication_factor_change=False)
    assert refused.allow_replication_factor_change is False
    assert errors(refused)[(TOPIC, 0)] == (ErrorCode.invalid_replication_factor,
                                           "The replication factor is changed from 2 to 3")
    assert errors(alter(bootstrap, {(TOPIC, 0): [3, 2]}, allow_replication_factor_change=False)) \
        == {(TOPIC, 0): (ErrorCode.none, None)}
    assert errors(alter(bootstrap, {(TOPIC, 0): [1, 2, 3]}, version=0)) == {
        (TOPIC, 0): (ErrorCode.none, None)}
    assert placement(bootstrap) == [(3, [1, 2, 3], [1, 2, 3])]  # 3 led since [3, 2]


def test_one_node_has_one_valid_target(kafka_broker_factory):
    runner = kafka_broker_factory()
    with WireClient(runner.bootstrap) as w:
        advertised = {int(k.api_key): (int(k.min_version), int(k.max_version))
                      for k in w.request(18, 3, client_software_name="t",
                                         client_software_version="1").api_keys}
    assert (advertised[ALTER], advertised[LIST]) == ((0, 1), (0, 0))
    runner.run(runner.broker.logs.create_topic(TOPIC, 1))
    assert errors(alter(runner.bootstrap, {(TOPIC, 0): [1]})) == {(TOPIC, 0): (ErrorCode.none, None)}
    assert errors(alter(runner.bootstrap, {(TOPIC, 0): [2]}))[(TOPIC, 0)][0] \
        == ErrorCode.invalid_replica_assignment
    assert errors(alter(runner.bootstrap, {(TOPIC, 0): None}))[(TOPIC, 0)][0] \
        == ErrorCode.no_reassignment_in_progress
    assert ongoing(runner.bootstrap) == {}
    assert placement(runner.bootstrap) == [(1, [1], [1])]


@pytest.fixture
def secured(kafka_broker_factory, tmp_path: Path):
    """A broker with the StandardAuthorizer; this client may manage ACLs and the cluster."""
    (tmp_path / "kafkette-acls.json").write_text(json.dumps(
        {"version": 1, "acls": [acl.to_json() for acl in ADMIN]}))
    runner = kafka_broker_factory({"log.dirs": str(tmp_path), "authorizer.class.name": STANDARD})
    runner.run(runner.broker.logs.create_topic(TOPIC, 1))
    return runner


def test_alter_needs_cluster_alter_and_list_cluster_describe(secured) -> None:
    bootstrap = secured.bootstrap
    assert errors(alter(bootstrap, {(TOPIC, 0): [1]})) == {(TOPIC, 0): (ErrorCode.none, None)}
    with WireClient(bootstrap) as w:
        add(w, binding(RT.CLUSTER, "kafka-cluster", Op.ALTER, DENY),
            binding(RT.CLUSTER, "kafka-cluster", Op.DESCRIBE, DENY))
    refused = alter(bootstrap, {(TOPIC, 0): [1]})
    denied = (ErrorCode.cluster_authorization_failed, "Cluster authorization failed.")
    assert (refused.error_code, refused.error_message) == denied
    assert errors(refused) == {(TOPIC, 0): denied}
    with WireClient(bootstrap) as w:
        listed = w.request(LIST, 0, timeout=timedelta(seconds=5), topics=None)
    assert (listed.error_code, listed.topics) == (ErrorCode.cluster_authorization_failed, ())


def test_moving_an_offsets_partition_moves_its_groups_coordinator(kafka_cluster):
    bootstrap = kafka_cluster.bootstrap.split(",")[0]
    broker = kafka_cluster.runner.broker
    group = "follows-its-partition"
    home = kafka_cluster.coordinator_of(group)
    partition = kafka_cluster.runner.run(lambda: broker.coordinator.partition_for(group))
    target = next(n for n in (1, 2, 3) if n != home)
    moved = alter(bootstrap, {("__consumer_offsets", partition): [target]})
    assert errors(moved) == {("__consumer_offsets", partition): (ErrorCode.none, None)}
    assert kafka_cluster.coordinator_of(group) == target
    assert find_coordinator(bootstrap, group).node_id == target


def test_a_moved_or_elected_offsets_leader_takes_its_groups_coordinator(kafka_cluster):
    from tests.adminapi.test_wire import elect

    bootstrap = kafka_cluster.bootstrap.split(",")[0]
    broker = kafka_cluster.runner.broker
    group = "follows-its-leader"
    home = kafka_cluster.coordinator_of(group)
    partition = kafka_cluster.runner.run(lambda: broker.coordinator.partition_for(group))
    target = next(n for n in (1, 2, 3) if n != home)
    # a second replica, where the leader can move (the leader stays: it is still a replica)
    alter(bootstrap, {("__consumer_offsets", partition): [home, target]})
    assert kafka_cluster.coordinator_of(group) == home
    kafka_cluster.move_leader("__consumer_offsets", partition, target)
    assert kafka_cluster.coordinator_of(group) == target
    assert find_coordinator(bootstrap, group).node_id == target
    elected = elect(bootstrap, 2, 0, {"__consumer_offsets": [partition]})  # preferred
    assert [(p.partition_id, p.error_code) for r in elected.replica_election_results
            for p in r.partition_result] == [(partition, ErrorCode.none)]
    assert kafka_cluster.coordinator_of(group) == home
    assert find_coordinator(bootstrap, group).node_id == home
