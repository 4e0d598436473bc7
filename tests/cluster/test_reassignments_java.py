"""The Java Admin's alterPartitionReassignments and listPartitionReassignments against three
nodes (tests/compat/java/KafketteReassign.java, in its own process): a move that completes, one
waiting for a stopped node (listed with its adding and removing replicas, then cancelled), and
the exceptions Kafka's errors become."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.cluster.test_reassignments_wire import create, placement
from tests.tools import ensure_java_client

TOPIC = "java-moves"


def test_java_admin_reassigns_lists_and_cancels(kafka_cluster) -> None:
    classpath, reason = ensure_java_client()
    if classpath is None:
        pytest.skip(reason)
    bootstrap = kafka_cluster.bootstrap.split(",")[0]  # node 1, the controller
    create(bootstrap, [[1, 2], [1, 2]], TOPIC)
    kafka_cluster.stop_node(3)
    proc = subprocess.run(["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", classpath,
                           "KafketteReassign", bootstrap, TOPIC],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    altered = {(e["step"], e["partition"]): e["error"] for e in events if e["event"] == "altered"}
    assert altered == {
        ("move", 0): "NONE", ("move", 1): "NONE", ("cancel", 1): "NONE",
        ("bad", 0): "InvalidReplicaAssignmentException",
        ("bad", 1): "NoReassignmentInProgressException",
        ("bad", 9): "UnknownTopicOrPartitionException",
        ("unknown-broker", 0): "InvalidReplicaAssignmentException"}
    listed = {e["step"]: e["ongoing"] for e in events if e["event"] == "listed"}
    assert listed == {"moving": [[f"{TOPIC}-1", [3, 2, 1], [3], [1]]], "cancelled": []}
    described = {(e["step"], e["partition"]): (e["leader"], e["replicas"], e["isr"])
                 for e in events if e["event"] == "partition"}
    assert described == {
        ("moving", 0): (2, [2], [2]),  # 1 removed: 2 leads
        ("moving", 1): (1, [3, 2, 1], [2, 1]),  # waits for 3; the leader stays
        ("cancelled", 0): (2, [2], [2]),
        ("cancelled", 1): (1, [2, 1], [2, 1])}
    kafka_cluster.start_node(3)
    assert placement(bootstrap, TOPIC) == [(2, [2], [2]), (1, [2, 1], [2, 1])]
