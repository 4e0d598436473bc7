"""A share group (KIP-932) in the admin console, ``/v1/groups/{id}`` and ``/metrics``: a real
confluent-kafka ``ShareConsumer`` acknowledges part of what it acquired and holds the rest; the
share-partition's start offset, in-flight records by state and lag are shown while it is loaded,
and the persisted start offset and lag once the consumer closed and it was unloaded."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from kafkette.protocol.records import build_batch
from tests.dataplane.test_wire import produce
from tests.share_fetch.test_wire import set_group_config
from tests.wire import WireClient

from .browser import dump_dom, parse
from .conftest import get, get_json
from .test_metrics import parse_metrics, series

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import AcknowledgeType, ShareConsumer  # noqa: E402

GROUP, TOPIC = "share-audit", "share-jobs"
HELD = (3, 4)  # acquired and never acknowledged; every other record of 0-9 is accepted


def wait_for(check: Callable[[], Any], timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def share_row(url: str) -> dict[str, Any] | None:
    group = get_json(f"{url}/v1/groups/{GROUP}")
    rows = group.get("share_partitions") or []
    return next((r for r in rows if (r["topic"], r["partition"]) == (TOPIC, 0)), None)


def test_share_partition_figures_in_the_console_and_metrics(kafka_broker_factory) -> None:
    runner = kafka_broker_factory(**{"admin.listener": "127.0.0.1:0",
                                     "group.share.heartbeat.interval.ms": "250",
                                     "group.share.session.timeout.ms": "3000"})
    url = runner.broker.admin.url
    runner.run(runner.broker.logs.create_topic(TOPIC, 1))
    set_group_config(runner.bootstrap, GROUP, share_auto_offset_reset="earliest")
    with WireClient(runner.bootstrap) as w:
        produce(w, TOPIC, 0, build_batch([(None, b"job-%d" % i) for i in range(10)]))

    consumer = ShareConsumer({"bootstrap.servers": runner.bootstrap, "group.id": GROUP,
                              "share.acknowledgement.mode": "explicit"})
    try:
        consumer.subscribe([TOPIC])
        received: list[Any] = []
        deadline = time.monotonic() + 30
        while len(received) < 10 and time.monotonic() < deadline:
            received += [m for m in consumer.poll(0.2) if not m.error()]
        assert sorted(m.offset() for m in received) == list(range(10))
        for m in received:
            if m.offset() not in HELD:
                consumer.acknowledge(m, AcknowledgeType.ACCEPT)
        assert not [v for v in (consumer.commit_sync(10.0) or {}).values() if v is not None]

        # loaded: SPSO 3 (0-2 accepted), 3-4 acquired, 5-9 acknowledged; lag 10 - 3 - 5
        row = wait_for(lambda: (r := share_row(url)) and r["start_offset"] == 3 and r)
        assert row == {"topic": TOPIC, "partition": 0, "start_offset": 3, "log_end_offset": 10,
                       "lag": 2, "loaded": True, "in_flight": 7, "available": 0,
                       "acquired": 2, "acknowledged": 5, "archived": 0}
        listed = {g["group_id"]: g for g in get_json(f"{url}/v1/groups")}
        assert listed[GROUP]["type"] == "share"

        m = parse_metrics(get(f"{url}/metrics").decode())
        labels = {"sharegroup": GROUP, "topic": TOPIC, "partition": "0"}
        assert series(m, "kafkette_share_partition_start_offset", **labels) == 3
        assert series(m, "kafka_sharegroup_lag", **labels) == 2
        assert series(m, "kafka_sharegroup_lag_sum", sharegroup=GROUP, topic=TOPIC) == 2
        assert {state: series(m, "kafkette_share_partition_in_flight_records", state=state,
                              **labels)
                for state in ("available", "acquired", "acknowledged", "archived")} == {
            "available": 0, "acquired": 2, "acknowledged": 5, "archived": 0}

        # the console's group page, after its scripts ran (live refresh included)
        page = parse(dump_dom(f"{url}/groups/{GROUP}"))
        (tr,) = page.find("table", id="share-partitions").find_all("tr", cls="share-partition")
        assert tr.text.split() == [TOPIC, "0", "3", "10", "7", "2", "5", "0", "2"]
    finally:
        consumer.close()

    # closed: its records are released and, with no session left, the share-partition is
    # unloaded; the persisted start offset and delivered count still give the lag
    row = wait_for(lambda: (r := share_row(url)) and not r["loaded"] and r)
    assert row is not None, share_row(url)
    assert (row["start_offset"], row["log_end_offset"], row["lag"], row["acquired"]) == (
        3, 10, 2, None)
    m = parse_metrics(get(f"{url}/metrics").decode())
    assert series(m, "kafka_sharegroup_lag", **labels) == 2
    assert not [k for k in m.get("kafkette_share_partition_in_flight_records", {})
                if ("sharegroup", GROUP) in k]
