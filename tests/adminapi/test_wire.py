"""The admin APIs on the wire, one node and several: DescribeCluster, DescribeTopicPartitions,
DescribeLogDirs, DescribeProducers, ElectLeaders."""

from __future__ import annotations

import shutil

import pytest
from kio.schema.errors import ErrorCode

from kafkette.broker.handlers.metadata import (
    CLUSTER_AUTHORIZED_OPERATIONS,
    TOPIC_AUTHORIZED_OPERATIONS,
)
from kafkette.protocol.codec import request_type
from tests.faults.test_wire import produce
from tests.wire import WireClient, entity

AUTH_OPS_OMITTED = -(2**31)


def address(cluster, node_id: int) -> str:
    node = next(n for n in cluster.nodes if n["id"] == node_id)
    return f"{node['host']}:{node['port']}"


def create(runner, name: str, partitions: int, replication: int = 1) -> None:
    async def go() -> None:
        await runner.broker.services.topics.create(name, partitions, replication, [], {},
                                                   validate_only=False)
    runner.run(go())


# DescribeCluster ---------------------------------------------------------------------------------

@pytest.mark.parametrize("version", [0, 1, 2])
def test_describe_cluster_one_node(kafka_broker, version) -> None:
    with WireClient(kafka_broker.bootstrap) as w:
        r = w.request(60, version, include_cluster_authorized_operations=True,
                      endpoint_type=1, include_fenced_brokers=False)
        plain = w.request(60, version, include_cluster_authorized_operations=False,
                          endpoint_type=1, include_fenced_brokers=False)
    host, port = kafka_broker.address
    assert r.error_code == ErrorCode.none and r.error_message is None
    assert r.cluster_id == kafka_broker.runner.broker.cluster_id
    assert r.controller_id == 1
    assert [(b.broker_id, b.host, b.port, b.rack) for b in r.brokers] == [(1, host, port, None)]
    assert r.cluster_authorized_operations == CLUSTER_AUTHORIZED_OPERATIONS
    assert plain.cluster_authorized_operations == AUTH_OPS_OMITTED


@pytest.mark.parametrize(("version", "endpoint", "code"), [
    (1, 2, ErrorCode.mismatched_endpoint_type), (1, 7, ErrorCode.unsupported_endpoint_type),
    (2, 2, ErrorCode.mismatched_endpoint_type)])
def test_describe_cluster_refuses_other_endpoint_types(kafka_broker, version, endpoint,
                                                      code) -> None:
    with WireClient(kafka_broker.bootstrap) as w:
        r = w.request(60, version, include_cluster_authorized_operations=False,
                      endpoint_type=endpoint, include_fenced_brokers=False)
    assert r.error_code == code and r.brokers == () and r.error_message


def test_describe_cluster_several_nodes_and_fenced_ones(kafka_cluster) -> None:
    kafka_cluster.stop_node(3)
    with WireClient(address(kafka_cluster, 2)) as w:
        live = w.request(60, 2, include_cluster_authorized_operations=False, endpoint_type=1,
                         include_fenced_brokers=False)
        every = w.request(60, 2, include_cluster_authorized_operations=False, endpoint_type=1,
                          include_fenced_brokers=True)
    assert [(b.broker_id, b.is_fenced) for b in live.brokers] == [(1, False), (2, False)]
    assert [(b.broker_id, b.is_fenced) for b in every.brokers] == [(1, False), (2, False),
                                                                   (3, True)]
    assert live.controller_id == 1


# DescribeTopicPartitions -------------------------------------------------------------------------

def describe_topic_partitions(bootstrap: str, names: list[str], limit: int = 2000,
                              cursor: tuple[str, int] | None = None):
    cls = request_type(75, 0)
    with WireClient(bootstrap) as w:
        return w.request(75, 0, topics=tuple(entity(cls, "topics", name=n) for n in names),
                         response_partition_limit=limit,
                         cursor=None if cursor is None else entity(
                             cls, "cursor", topic_name=cursor[0], partition_index=cursor[1]))


def test_describe_topic_partitions_pages_with_a_cursor(kafka_broker) -> None:
    runner = kafka_broker.runner
    create(runner, "b-topic", 3)
    create(runner, "a-topic", 2)
    r = describe_topic_partitions(kafka_broker.bootstrap, ["b-topic", "a-topic", "missing",
                                                           "a-topic"])
    assert [(t.name, t.error_code, len(t.partitions)) for t in r.topics] == [
        ("a-topic", 0, 2), ("b-topic", 0, 3), ("missing", ErrorCode.unknown_topic_or_partition, 0)]
    assert r.next_cursor is None
    a = r.topics[0]
    assert a.topic_id == runner.broker.logs.topic("a-topic").topic_id
    assert a.topic_authorized_operations == TOPIC_AUTHORIZED_OPERATIONS
    assert [(p.partition_index, p.leader_id, p.replica_nodes, p.isr_nodes) for p in a.partitions] \
        == [(0, 1, (1,), (1,)), (1, 1, (1,), (1,))]
    # A page of 3 partitions: a-topic 0-1, b-topic 0, then the cursor at b-topic 1.
    first = describe_topic_partitions(kafka_broker.bootstrap, ["a-topic", "b-topic"], limit=3)
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in first.topics] == [
        ("a-topic", [0, 1]), ("b-topic", [0])]
    assert (first.next_cursor.topic_name, first.next_cursor.partition_index) == ("b-topic", 1)
    second = describe_topic_partitions(kafka_broker.bootstrap, ["a-topic", "b-topic"], limit=3,
                                       cursor=("b-topic", 1))
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in second.topics] == [
        ("b-topic", [1, 2])]
    assert second.next_cursor is None
    # A page that ends with a topic: the cursor names the next topic at partition 0.
    exact = describe_topic_partitions(kafka_broker.bootstrap, ["a-topic", "b-topic"], limit=2)
    assert [t.name for t in exact.topics] == ["a-topic"]
    assert (exact.next_cursor.topic_name, exact.next_cursor.partition_index) == ("b-topic", 0)
    # Every topic (none named): unknown ones are not listed, internal ones are.
    everything = describe_topic_partitions(kafka_broker.bootstrap, [])
    names = [t.name for t in everything.topics]
    assert names == sorted(names) and {"a-topic", "b-topic", "__consumer_offsets"} <= set(names)
    assert next(t for t in everything.topics if t.name == "__consumer_offsets").is_internal


def test_describe_topic_partitions_refuses_a_cursor_outside_the_topics(kafka_broker) -> None:
    create(kafka_broker.runner, "c-topic", 1)
    r = describe_topic_partitions(kafka_broker.bootstrap, ["c-topic"], cursor=("zzz", 0))
    assert [(t.name, t.error_code, t.partitions) for t in r.topics] == [
        ("c-topic", ErrorCode.invalid_request, ())]
    r = describe_topic_partitions(kafka_broker.bootstrap, ["c-topic"], cursor=("c-topic", -1))
    assert r.topics[0].error_code == ErrorCode.invalid_request


def test_describe_topic_partitions_several_nodes(kafka_cluster) -> None:
    create(kafka_cluster.runner, "rep", 3, 3)
    kafka_cluster.stop_node(2)
    r = describe_topic_partitions(address(kafka_cluster, 1), ["rep"])
    for p in r.topics[0].partitions:
        assert p.error_code == 0
        assert 2 in p.replica_nodes and 2 not in p.isr_nodes and p.offline_replicas == (2,)
        assert p.leader_id == kafka_cluster.leader_of("rep", p.partition_index) != 2


# DescribeLogDirs ---------------------------------------------------------------------------------

def describe_log_dirs(bootstrap: str, version: int, topics: dict[str, list[int]] | None):
    cls = request_type(35, version)
    with WireClient(bootstrap) as w:
        return w.request(35, version, topics=None if topics is None else tuple(
            entity(cls, "topics", topic=t, partitions=tuple(ps)) for t, ps in topics.items()))


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_describe_log_dirs_reports_real_sizes(kafka_broker, version) -> None:
    runner = kafka_broker.runner
    create(runner, "sized", 2)
    with WireClient(kafka_broker.bootstrap) as w:
        produce(w, "sized", 0, b"x" * 1000)
    size = runner.broker.logs.partition("sized", 0).size_bytes
    assert size > 1000
    r = describe_log_dirs(kafka_broker.bootstrap, version, {"sized": [0, 1, 7], "nope": [0]})
    (result,) = r.results
    assert result.error_code == 0
    assert result.log_dir == str(runner.broker.logs.directory.absolute())
    assert [(t.name, [(p.partition_index, p.partition_size, p.offset_lag, p.is_future_key)
                      for p in t.partitions]) for t in result.topics] == [
        ("sized", [(0, size, 0, False), (1, 0, 0, False)])]
    if version >= 4:
        usage = shutil.disk_usage(result.log_dir)
        assert result.total_bytes == usage.total
        assert 0 < result.usable_bytes <= usage.total
    every = describe_log_dirs(kafka_broker.bootstrap, version, None).results[0]
    assert {"sized", "__consumer_offsets"} <= {t.name for t in every.topics}


def test_describe_log_dirs_several_nodes_lists_each_nodes_replicas(kafka_cluster) -> None:
    create(kafka_cluster.runner, "spread", 3, 2)
    replicas = {p: kafka_cluster.runner.run(
        lambda p=p: kafka_cluster.runner.broker.cluster_nodes.replicas("spread", p))
        for p in range(3)}
    for node in (1, 2, 3):
        (result,) = describe_log_dirs(address(kafka_cluster, node), 4, {"spread": [0, 1, 2]}).results
        held = [p.partition_index for t in result.topics for p in t.partitions]
        assert held == [p for p in range(3) if node in replicas[p]]


# DescribeProducers -------------------------------------------------------------------------------

def describe_producers(bootstrap: str, topics: dict[str, list[int]]):
    cls = request_type(61, 0)
    with WireClient(bootstrap) as w:
        return w.request(61, 0, topics=tuple(entity(cls, "topics", name=t, partition_indexes=tuple(ps))
                                             for t, ps in topics.items()))


def test_describe_producers_lists_idempotent_producers(kafka_broker) -> None:
    from confluent_kafka import Producer

    create(kafka_broker.runner, "idem", 2)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap, "enable.idempotence": True})
    for i in range(5):
        producer.produce("idem", b"v", partition=0, timestamp=1_700_000_000_000 + i)
    assert producer.flush(15) == 0
    r = describe_producers(kafka_broker.bootstrap, {"idem": [0, 1, 9], "nope": [0], "bad/": [0]})
    idem, nope, bad = r.topics
    p0, p1, p9 = idem.partitions
    assert p0.error_code == 0 and len(p0.active_producers) == 1
    state = p0.active_producers[0]
    assert state.producer_id >= 0 and state.producer_epoch == 0
    assert state.last_sequence == 4 and state.last_timestamp == 1_700_000_000_004
    assert (state.coordinator_epoch, state.current_txn_start_offset) == (-1, -1)
    assert (p1.error_code, p1.active_producers) == (0, ())
    assert (p9.error_code, p9.error_message) == (ErrorCode.unknown_topic_or_partition, None)
    assert nope.partitions[0].error_code == ErrorCode.unknown_topic_or_partition
    assert nope.partitions[0].error_message == "This server does not host this topic-partition."
    assert bad.partitions[0].error_code == ErrorCode.invalid_topic_exception
    assert bad.partitions[0].error_message == ("Topic name is invalid: 'bad/' contains one or "
                                               "more characters other than ASCII alphanumerics, "
                                               "'.', '_' and '-'")


def test_describe_producers_several_nodes(kafka_cluster) -> None:
    create(kafka_cluster.runner, "one-replica", 1, 2)
    replicas = kafka_cluster.runner.run(
        lambda: kafka_cluster.runner.broker.cluster_nodes.replicas("one-replica", 0))
    outside = next(n for n in (1, 2, 3) if n not in replicas)
    r = describe_producers(address(kafka_cluster, outside), {"one-replica": [0]})
    assert r.topics[0].partitions[0].error_code == ErrorCode.not_leader_or_follower
    follower = replicas[1]
    r = describe_producers(address(kafka_cluster, follower), {"one-replica": [0]})
    assert r.topics[0].partitions[0].error_code == ErrorCode.none


# ElectLeaders ------------------------------------------------------------------------------------

def elect(bootstrap: str, version: int, election: int, topics: dict[str, list[int]] | None):
    cls = request_type(43, version)
    with WireClient(bootstrap) as w:
        return w.request(43, version, election_type=election, timeout=60000,
                         topic_partitions=None if topics is None else tuple(
                             entity(cls, "topic_partitions", topic=t, partitions=tuple(ps))
                             for t, ps in topics.items()))


def results(r) -> dict[tuple[str, int], int]:
    return {(t.topic, p.partition_id): p.error_code for t in r.replica_election_results
            for p in t.partition_result}


@pytest.mark.parametrize("version", [0, 1, 2])
def test_elect_leaders_one_node_is_never_needed(kafka_broker, version) -> None:
    create(kafka_broker.runner, "solo", 2)
    r = elect(kafka_broker.bootstrap, version, 0, {"solo": [0, 1, 5], "nope": [0]})
    assert getattr(r, "error_code", 0) == 0  # v1+
    assert results(r) == {("solo", 0): ErrorCode.election_not_needed,
                          ("solo", 1): ErrorCode.election_not_needed,
                          ("solo", 5): ErrorCode.unknown_topic_or_partition,
                          ("nope", 0): ErrorCode.unknown_topic_or_partition}
    messages = {p.partition_id: p.error_message for p in r.replica_election_results[0].partition_result}
    assert messages[0] == "Leader election not needed for topic partition."
    assert messages[5] == "No such partition as solo-5"
    everything = elect(kafka_broker.bootstrap, version, 0, None)
    assert results(everything) == {}  # partitions that need no election are left out


def test_elect_leaders_moves_leaders_back_to_the_preferred_replica(kafka_cluster) -> None:
    create(kafka_cluster.runner, "pref", 2, 3)
    nodes = kafka_cluster.runner.broker.cluster_nodes
    preferred = kafka_cluster.runner.run(lambda: nodes.replicas("pref", 0))[0]
    other = next(n for n in (1, 2, 3) if n != preferred)
    kafka_cluster.move_leader("pref", 0, other)
    assert kafka_cluster.leader_of("pref", 0) == other
    bootstrap = address(kafka_cluster, 1)
    r = elect(bootstrap, 2, 1, {"pref": [0]})  # unclean: it has a leader
    assert results(r) == {("pref", 0): ErrorCode.election_not_needed}
    r = elect(bootstrap, 2, 0, {"pref": [0, 1]})
    assert results(r) == {("pref", 0): ErrorCode.none, ("pref", 1): ErrorCode.election_not_needed}
    assert kafka_cluster.leader_of("pref", 0) == preferred
    # The preferred replica stopped: not available; null partitions lists only that one.
    preferred1 = kafka_cluster.runner.run(lambda: nodes.replicas("pref", 1))[0]
    kafka_cluster.stop_node(preferred1)
    live = next(n for n in (1, 2, 3) if n != preferred1)
    r = elect(address(kafka_cluster, live), 2, 0, None)
    pref = {k: v for k, v in results(r).items() if k[0] == "pref"}
    assert pref[("pref", 1)] == ErrorCode.preferred_leader_not_available
    assert ("pref", 0) not in pref or preferred == preferred1
    assert {t.topic for t in r.replica_election_results} >= {"pref", "__consumer_offsets"}


def test_elect_leaders_refuses_an_unknown_election_type(kafka_broker) -> None:
    r = elect(kafka_broker.bootstrap, 2, 5, {"t": [0]})
    assert r.error_code == ErrorCode.invalid_request
    assert results(r) == {("t", 0): ErrorCode.invalid_request}


def test_describe_producers_shows_an_open_transaction(kafka_broker) -> None:
    from confluent_kafka import Producer

    create(kafka_broker.runner, "txn", 1)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap,
                         "transactional.id": "describe-me"})
    producer.init_transactions(15)
    producer.begin_transaction()
    producer.produce("txn", b"a", partition=0)
    assert producer.flush(15) == 0
    (state,) = describe_producers(kafka_broker.bootstrap, {"txn": [0]}).topics[0] \
        .partitions[0].active_producers
    assert state.current_txn_start_offset == 0 and state.last_sequence == 0
    producer.commit_transaction(15)
    (state,) = describe_producers(kafka_broker.bootstrap, {"txn": [0]}).topics[0] \
        .partitions[0].active_producers
    assert state.current_txn_start_offset == -1
