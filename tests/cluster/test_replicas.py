"""Replicas under several nodes, as clients see them: an RF-3 topic has 3 replicas and 3 in sync;
a stopped node leaves the ISR (and the lead) and comes back when started; acks=all answers
NOT_ENOUGH_REPLICAS while the ISR is below min.insync.replicas, acks=1 keeps working; a
replication factor above the registered brokers is refused."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import NewPartitions, NewTopic
from kio.schema.errors import ErrorCode

from kafkette.broker.cluster.node_control import ClusterError
from tests.cluster.test_wire import metadata

TOPIC = "replicated"


def partitions(admin, topic: str = TOPIC) -> list[tuple[int, list[int], list[int]]]:
    """(leader, replicas, isr) of each partition, as confluent-kafka's describe_topics sees them."""
    described = admin.describe_topics(TopicCollection([topic]))[topic].result(30)
    return [(p.leader.id, [n.id for n in p.replicas], [n.id for n in p.isr])
            for p in described.partitions]


def produce(cluster, acks: str) -> KafkaError | None:
    from confluent_kafka import Producer

    outcome: list[KafkaError | None] = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": acks, "retries": 0,
                         "enable.idempotence": False, "message.timeout.ms": 10000})
    producer.produce(TOPIC, b"v", partition=0, on_delivery=lambda err, _m: outcome.append(err))
    producer.flush(30)
    return outcome[0]


def wait_for(check, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_replicas_isr_and_not_enough_replicas(kafka_cluster):
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 3, 3, config={"min.insync.replicas": "3"})])[TOPIC] \
        .result(30)
    seen = partitions(admin)
    assert [sorted(replicas) for _, replicas, _ in seen] == [[1, 2, 3]] * 3
    assert all(isr == replicas and leader == replicas[0] for leader, replicas, isr in seen)
    assert {leader for leader, _, _ in seen} == {1, 2, 3}  # preferred leaders spread
    assert produce(kafka_cluster, "all") is None

    kafka_cluster.stop_node(2)
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
    wait_for(lambda: all(2 not in isr for _, _, isr in partitions(admin)))
    for leader, replicas, isr in partitions(admin):
        assert sorted(replicas) == [1, 2, 3] and isr == [n for n in replicas if n != 2]
        assert leader == isr[0]
    on_wire = metadata(kafka_cluster.bootstrap.split(",")[0], TOPIC).topics[0].partitions
    assert all(list(p.offline_replicas) == [2] for p in on_wire)
    err = produce(kafka_cluster, "all")
    assert err is not None and err.code() == KafkaError.NOT_ENOUGH_REPLICAS
    assert produce(kafka_cluster, "1") is None  # acks=1 does not wait for the ISR

    kafka_cluster.start_node(2)
    wait_for(lambda: all(isr == replicas for _, replicas, isr in partitions(admin)))
    assert produce(kafka_cluster, "all") is None


def test_replication_factor_and_assignments_are_checked(kafka_cluster):
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
    with pytest.raises(KafkaException) as caught:
        admin.create_topics([NewTopic("too-many", 1, 4)])["too-many"].result(30)
    error = caught.value.args[0]
    assert error.code() == KafkaError.INVALID_REPLICATION_FACTOR
    assert "only 3 broker(s) are registered" in error.str()

    # A stopped node is still registered: RF 3 is accepted, its replica out of sync.
    kafka_cluster.stop_node(3)
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
    admin.create_topics([NewTopic("while-down", 2, 3)])["while-down"].result(30)
    for leader, replicas, isr in partitions(admin, "while-down"):
        assert sorted(replicas) == [1, 2, 3] and 3 not in isr and leader in (1, 2)
    kafka_cluster.start_node(3)

    admin.create_topics([NewTopic("manual", 2, replica_assignment=[[2, 3], [3, 1]])])["manual"] \
        .result(30)
    assert partitions(admin, "manual") == [(2, [2, 3], [2, 3]), (3, [3, 1], [3, 1])]
    admin.create_partitions([NewPartitions("manual", 3, replica_assignment=[[1, 2]])])["manual"] \
        .result(30)
    assert partitions(admin, "manual")[2] == (1, [1, 2], [1, 2])
    with pytest.raises(KafkaException) as caught:
        admin.create_topics([NewTopic("bad", 1, replica_assignment=[[1, 7]])])["bad"].result(30)
    assert caught.value.args[0].code() == KafkaError.INVALID_REPLICA_ASSIGNMENT

    # A leader can move only to one of the partition's replicas.
    with pytest.raises(ClusterError, match="not a replica"):
        kafka_cluster.move_leader("manual", 0, 1)
    kafka_cluster.move_leader("manual", 0, 3)
    assert partitions(admin, "manual")[0] == (3, [2, 3], [2, 3])
    kafka_cluster.move_leader("manual", 0, 2)

    # The replicas are kept with the logs: a restarted cluster shows the same.
    before = {t: partitions(admin, t) for t in ("manual", "while-down")}
    kafka_cluster.runner.restart()
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
    assert {t: partitions(admin, t) for t in ("manual", "while-down")} == before


def test_a_partition_with_no_live_replica_has_no_leader(kafka_cluster):
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
    admin.create_topics([NewTopic("pair", 1, replica_assignment=[[2, 3]])])["pair"].result(30)
    kafka_cluster.stop_node(2)
    kafka_cluster.stop_node(3)
    part = metadata(kafka_cluster.bootstrap, "pair").topics[0].partitions[0]
    assert (part.error_code, part.leader_id, list(part.isr_nodes), list(part.offline_replicas)) \
        == (ErrorCode.leader_not_available, -1, [], [2, 3])
    kafka_cluster.start_node(3)
    part = metadata(kafka_cluster.bootstrap.split(",")[0], "pair").topics[0].partitions[0]
    assert (part.error_code, part.leader_id, list(part.isr_nodes)) == (ErrorCode.none, 3, [3])
