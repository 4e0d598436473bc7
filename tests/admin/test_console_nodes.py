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


def test_the_message_browser_marks_transactions_and_reads_committed(kafka_broker_factory):
    from tests.transactions.helpers import txn_producer

    broker = kafka_broker_factory(**{"admin.listener": "127.0.0.1:0"})
    url = broker.broker.admin.url
    plain = broker.producer()
    plain.produce("pay", b"plain", partition=0)
    assert plain.flush(30) == 0
    committed = txn_producer(broker, "committer")
    committed.init_transactions(30)
    committed.begin_transaction()
    committed.produce("pay", b"committed", partition=0)
    committed.commit_transaction(30)
    aborted = txn_producer(broker, "aborter")
    aborted.init_transactions(30)
    aborted.begin_transaction()
    aborted.produce("pay", b"aborted", partition=0)
    assert aborted.flush(30) == 0  # written, then aborted (not purged before it was sent)
    aborted.abort_transaction(30)
    still_open = txn_producer(broker, "opener")
    still_open.init_transactions(30)
    still_open.begin_transaction()
    still_open.produce("pay", b"open", partition=0)
    assert still_open.flush(30) == 0

    def shown(isolation: str) -> list[tuple[str, str | None]]:
        body = json.loads(get(f"{url}/v1/topics/pay/partitions/0/records?limit=100"
                              f"&isolation={isolation}"))
        return [(r["value"]["text"], r["transaction"]) for r in body["records"]]

    assert shown("read_uncommitted") == [("plain", None), ("committed", "committed"),
                                         ("aborted", "aborted"), ("open", "open")]
    assert shown("read_committed") == [("plain", None), ("committed", "committed")]
    page = get(f"{url}/topics/pay?partition=0&isolation=read_committed")
    assert 'value="read_committed" checked' in page and '<td class="txn committed">' in page
    assert "aborted" not in page.split('id="records"', 1)[1]
    still_open.abort_transaction(30)
