"""The cluster over HTTP (admin server) and ``kafkette cluster``, and ``kafkette serve --nodes``."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.faults.test_http import call, kafkette


@pytest.fixture
def admin_cluster(kafka_cluster_factory):
    cluster = kafka_cluster_factory(3, **{"admin.listener": "127.0.0.1:0"})
    return cluster, cluster.runner.broker.admin.url


def test_cluster_nodes_and_moves_over_http(admin_cluster):
    cluster, url = admin_cluster
    status, described = call(f"{url}/v1/cluster", "GET")
    assert status == 200 and described["controller"] == 1
    assert [(n["id"], n["state"]) for n in described["nodes"]] == [
        (1, "running"), (2, "running"), (3, "running")]
    status, after = call(f"{url}/v1/nodes/1/stop", "POST")
    assert status == 200 and after["controller"] == 2
    assert [n["state"] for n in after["nodes"]] == ["stopped", "running", "running"]
    assert call(f"{url}/v1/nodes/1/start", "POST")[1]["controller"] == 1
    status, moved = call(f"{url}/v1/groups/billing/move", "POST", {"node": 3})
    assert status == 200 and moved["node"] == 3
    assert cluster.coordinator_of("billing") == 3
    cluster.runner.run(cluster.runner.broker.logs.create_topic("t", 1))
    assert call(f"{url}/v1/topics/t/partitions/0/move", "POST", {"node": 2})[0] == 200
    assert cluster.leader_of("t", 0) == 2


@pytest.mark.parametrize(("path", "body", "reason"), [
    ("/v1/nodes/9/stop", None, "no node 9"),
    ("/v1/nodes/x/stop", None, "node must be a node id"),
    ("/v1/nodes/2/start", None, "node 2 is already running"),
    ("/v1/groups/billing/move", {"node": "three"}, "node must be a node id"),
    ("/v1/groups/billing/move", {}, "node must be a node id"),
])
def test_bad_cluster_requests_get_400(admin_cluster, path, body, reason):
    _, url = admin_cluster
    status, text = call(f"{url}{path}", "POST", body)
    assert status == 400 and reason in text


def test_single_node_cluster_view_and_refusal(kafka_broker_factory):
    b = kafka_broker_factory(**{"admin.listener": "127.0.0.1:0"})
    url = b.broker.admin.url
    assert [n["id"] for n in call(f"{url}/v1/cluster", "GET")[1]["nodes"]] == [1]
    status, text = call(f"{url}/v1/nodes/1/stop", "POST")
    assert status == 400 and "one node" in text


def test_cli_status_nodes_and_moves(admin_cluster):
    cluster, url = admin_cluster
    assert "controller 1" in kafkette("cluster", "status", "--admin", url).stdout
    stopped = kafkette("cluster", "nodes", "stop", "2", "--admin", url)
    assert stopped.returncode == 0 and re.search(r"^\s+2\s+\S+\s+stopped$", stopped.stdout, re.M)
    assert kafkette("cluster", "nodes", "start", "2", "--admin", url).returncode == 0
    moved = kafkette("cluster", "groups", "move", "billing", "2", "--admin", url)
    assert moved.stdout.strip() == "coordinator of billing on node 2"
    assert cluster.coordinator_of("billing") == 2
    bad = kafkette("cluster", "nodes", "stop", "7", "--admin", url)
    assert bad.returncode == 1 and "no node 7" in bad.stderr


def test_serve_nodes_prints_one_line_a_node(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "kafkette.broker", "serve", "--nodes", "3",
         "--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", f"log.dirs={tmp_path}"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline().strip() for _ in range(3)]
        found = [re.fullmatch(r"kafkette listening on 127\.0\.0\.1:(\d+) \(node\.id=(\d)\)", line)
                 for line in lines]
        assert all(found), lines
        assert [m.group(2) for m in found] == ["1", "2", "3"]
        assert len({m.group(1) for m in found}) == 3
    finally:
        proc.terminate()
        assert proc.wait(20) == 0


def test_the_console_json_sees_every_nodes_groups(admin_cluster):
    from kafkette.broker.cli.admin_client import AdminClient

    from .test_wire import address

    cluster, url = admin_cluster
    cluster.runner.run(cluster.runner.broker.logs.create_topic("t", 1))
    groups = ["g-a", "g-b", "g-c", "g-d", "g-e", "g-f"]
    for group in groups:
        admin = AdminClient(address(cluster, cluster.coordinator_of(group)))
        assert admin.commit(group, {("t", 0): 1}) == {("t", 0): "NONE"}
        admin.close()
    assert len({cluster.coordinator_of(g) for g in groups}) > 1
    listed = {g["group_id"] for g in call(f"{url}/v1/groups", "GET")[1]}
    assert set(groups) <= listed
    for group in groups:
        status, found = call(f"{url}/v1/groups/{group}", "GET")
        assert status == 200 and '"committed_offset": 1' in json.dumps(found), (group, found)
