"""The admin APIs through stock admin clients, against one node and three: confluent-kafka's
AdminClient (describe_cluster, describe_topics, list_offsets) and the Java Admin
(describeCluster, describeTopics — DescribeTopicPartitions —, describeLogDirs, describeProducers,
electLeaders), each in its own process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.tools import ROOT, ensure_java_client

TOPIC = "admin-apis"

# confluent-kafka's AdminClient in a child process; prints one JSON object.
CONFLUENT = textwrap.dedent("""
    import json, sys
    from confluent_kafka import Producer, TopicCollection, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
    bootstrap, topic, nodes = sys.argv[1], sys.argv[2], int(sys.argv[3])
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, 3, nodes)]).values():
        f.result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in range(12):
        producer.produce(topic, b"v%d" % i, partition=i % 3)
    assert producer.flush(30) == 0
    cluster = admin.describe_cluster(include_authorized_operations=True).result(30)
    described = admin.describe_topics(TopicCollection([topic]),
                                      include_authorized_operations=True)[topic].result(30)
    try:
        admin.describe_topics(TopicCollection(["no-such-topic"]))["no-such-topic"].result(30)
        missing = "NONE"
    except Exception as exc:
        missing = exc.args[0].name()
    offsets = admin.list_offsets({TopicPartition(topic, p): spec for p in range(3)
                                  for spec in [OffsetSpec.latest()]})
    earliest = admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.earliest()})
    print(json.dumps({
        "cluster_id": cluster.cluster_id, "controller": cluster.controller.id,
        "nodes": sorted((n.id, n.port) for n in cluster.nodes),
        "cluster_ops": sorted(op.name for op in cluster.authorized_operations),
        "topic_id": str(described.topic_id), "internal": described.is_internal,
        "topic_ops": sorted(op.name for op in described.authorized_operations),
        "partitions": [(p.id, p.leader.id, [n.id for n in p.replicas], [n.id for n in p.isr])
                       for p in described.partitions],
        "missing": missing,
        "latest": sorted((tp.partition, f.result(30).offset) for tp, f in offsets.items()),
        "earliest": [f.result(30).offset for f in earliest.values()],
    }))
""")


def run_confluent(bootstrap: str, nodes: int) -> dict:
    proc = subprocess.run([sys.executable, "-c", CONFLUENT, bootstrap, TOPIC, str(nodes)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("nodes", [1, 3])
def test_confluent_admin_client(kafka_cluster_factory, kafka_broker_factory, nodes) -> None:
    runner = kafka_broker_factory() if nodes == 1 else kafka_cluster_factory(nodes).runner
    got = run_confluent(runner.bootstrap, nodes)
    assert got["cluster_id"] == runner.broker.cluster_id
    assert got["controller"] == 1
    assert [n for n, _port in got["nodes"]] == list(range(1, nodes + 1))
    assert got["cluster_ops"] == ["ALTER", "ALTER_CONFIGS", "CLUSTER_ACTION", "CREATE",
                                  "DESCRIBE", "DESCRIBE_CONFIGS", "IDEMPOTENT_WRITE"]
    assert got["topic_ops"] == ["ALTER", "ALTER_CONFIGS", "CREATE", "DELETE", "DESCRIBE",
                                "DESCRIBE_CONFIGS", "READ", "WRITE"]
    info = runner.broker.logs.topic(TOPIC)
    assert info is not None and got["internal"] is False
    nodes_view = runner.broker.cluster_nodes
    for p, leader, replicas, isr in got["partitions"]:
        if nodes_view is None:
            assert (leader, replicas, isr) == (1, [1], [1])
        else:
            expected = runner.run(lambda p=p: nodes_view.replicas(TOPIC, p))
            assert replicas == expected and isr == expected and leader == expected[0]
    assert got["missing"] == "UNKNOWN_TOPIC_OR_PART"
    assert got["latest"] == [[0, 4], [1, 4], [2, 4]]
    assert got["earliest"] == [0]


def run_java(classpath: str, bootstrap: str) -> list[dict]:
    proc = subprocess.run(["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", classpath,
                           "KafketteClient", "admin", bootstrap, TOPIC],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("nodes", [1, 3])
def test_java_admin_client(kafka_cluster_factory, kafka_broker_factory, nodes) -> None:
    classpath, reason = ensure_java_client()
    if classpath is None:
        pytest.skip(reason)
    runner = kafka_broker_factory() if nodes == 1 else kafka_cluster_factory(nodes).runner
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": runner.bootstrap})
    for f in admin.create_topics([NewTopic(TOPIC, 2, nodes)]).values():
        f.result(30)
    producer = Producer({"bootstrap.servers": runner.bootstrap, "enable.idempotence": True})
    for _ in range(6):
        producer.produce(TOPIC, b"x" * 100, partition=0)
    assert producer.flush(30) == 0
    moved_from = None
    if nodes > 1:  # a leader away from its preferred replica: the election moves it back
        replicas = runner.run(lambda: runner.broker.cluster_nodes.replicas(TOPIC, 1))
        runner.move_leader(TOPIC, 1, replicas[1])
        moved_from = replicas[1]
    events = run_java(classpath, runner.bootstrap)
    by_kind: dict[str, list[dict]] = {}
    for e in events:
        by_kind.setdefault(e["event"], []).append(e)
    (cluster,) = by_kind["cluster"]
    assert cluster["id"] == runner.broker.cluster_id
    assert sorted(cluster["nodes"]) == list(range(1, nodes + 1))
    assert cluster["controller"] == 1 and cluster["operations"] == 7
    partitions = {e["partition"]: e for e in by_kind["partition"]}
    assert sorted(partitions) == [0, 1]
    size = runner.broker.logs.partition(TOPIC, 0).size_bytes
    logdirs = by_kind["logdir"]
    assert [d["broker"] for d in logdirs] == list(range(1, nodes + 1))
    for d in logdirs:
        assert d["dir"] == str(runner.broker.logs.directory.absolute()) and d["total"] > 0
        if d["broker"] in partitions[0]["replicas"]:
            assert f"0={size}" in d["sizes"]
    producers = {e["partition"]: e["states"] for e in by_kind["producers"]}
    assert len(producers[0]) == 1 and producers[0][0][1:] == [0, 5]  # epoch 0, last sequence 5
    assert producers[1] == []
    elected = {e["partition"]: e["error"] for e in by_kind["elected"]}
    if nodes == 1:
        assert elected == {0: "ElectionNotNeededException", 1: "ElectionNotNeededException"}
    else:
        assert partitions[1]["leader"] == moved_from  # as described before the election
        assert elected == {0: "ElectionNotNeededException", 1: "NONE"}
        preferred = runner.run(lambda: runner.broker.cluster_nodes.replicas(TOPIC, 1))[0]
        assert runner.run(lambda: runner.broker.cluster_nodes.leader(TOPIC, 1)) == preferred
