"""The console under ``--nodes N`` shows every node, and the group page says its rebalance
timeline starts afresh with the broker."""

from __future__ import annotations

import json
import urllib.request


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def test_every_node_is_shown_with_its_state_and_the_controller(kafka_cluster_factory):
    cluster = kafka_cluster_factory(3, **{"admin.listener": "127.0.0.1:0"})
    url = cluster.runner.broker.admin.url
    info = json.loads(get(f"{url}/v1/broker"))
    assert [(n["id"], n["state"]) for n in info["nodes"]] == [(1, "running"), (2, "running"),
                                                              (3, "running")]
    assert info["controller"] == cluster.controller
    cluster.stop_node(3)
    page = get(f"{url}/")
    rows = page.split('<table id="nodes"', 1)[1].split("</table>", 1)[0]
    assert rows.count('<tr class="node">') == 3
    for node in cluster.nodes:
        assert f"{node['host']}:{node['port']}" in rows
    assert rows.count("stopped") == 1 and rows.count("controller") == 1
    assert "3 nodes" in page


def test_the_group_page_says_when_its_timeline_starts(kafka_broker_factory):
    broker = kafka_broker_factory(**{"admin.listener": "127.0.0.1:0"})
    page = get(f"{broker.broker.admin.url}/groups/billing")
    since = page.split('id="timeline-since">', 1)[1].split("</p>", 1)[0]
    assert "since the broker started at" in since
    assert "a restart of the broker starts the timeline afresh" in since
