"""``/metrics`` scraped and parsed with prometheus_client's own parser while a real group runs."""

from __future__ import annotations

import asyncio
import threading
import time
from types import SimpleNamespace

from aiokafka import AIOKafkaProducer
from kafka import KafkaProducer
from prometheus_client.parser import text_string_to_metric_families

from kafkette.broker.admin import metrics as metrics_module
from kafkette.broker.admin.exposition import Snapshot, render
from kafkette.broker.admin.metrics import Renderer
from tests.coordinator.env import Member
from tests.groups.helpers import wait_until

from .conftest import GROUP, TOPIC, LiveGroup, get, get_json, group_consumer


def scrape(url: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """sample name -> sorted labels -> value, from the Prometheus text of ``url``/metrics."""
    return parse_metrics(get(f"{url}/metrics").decode())


def parse_metrics(text: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def series(metrics: dict, name: str, **labels: str) -> float:
    return metrics[name][tuple(sorted(labels.items()))]


def lag_by_partition(metrics: dict) -> dict[int, float]:
    return {int(dict(labels)["partition"]): value
            for labels, value in metrics.get("kafka_consumergroup_lag", {}).items()
            if dict(labels)["consumergroup"] == GROUP and dict(labels)["topic"] == TOPIC}


async def test_lag_series_follow_commits_and_produces(live_group: LiveGroup):
    url, ends, committed = live_group.url, live_group.end_offsets, live_group.committed
    m = scrape(url)
    assert lag_by_partition(m) == {p: ends[p] - committed[p] for p in ends}
    for p in ends:
        labels = {"consumergroup": GROUP, "topic": TOPIC, "partition": str(p)}
        assert series(m, "kafka_consumergroup_current_offset", **labels) == committed[p]
        assert series(m, "kafka_topic_partition_current_offset", topic=TOPIC,
                      partition=str(p)) == ends[p]
    assert series(m, "kafka_consumergroup_lag_sum", consumergroup=GROUP, topic=TOPIC) == sum(
        ends[p] - committed[p] for p in ends)
    assert series(m, "kafka_consumergroup_members", consumergroup=GROUP) == 1
    assert series(m, "kafkette_groups", state="Stable", protocol_type="consumer") == 1
    assert series(m, "kafkette_group_offset_commits_total", consumergroup=GROUP) == len(ends)

    # Computed at scrape time: three more records on partition 1 show up as lag at once.
    producer = AIOKafkaProducer(bootstrap_servers=live_group.broker.bootstrap)
    await producer.start()
    try:
        for i in range(3):
            await producer.send_and_wait(TOPIC, b"late-%d" % i, partition=1)
    finally:
        await producer.stop()
    assert lag_by_partition(scrape(url)) == {0: ends[0] - committed[0], 1: ends[1] + 3 - committed[1]}


async def test_rebalances_are_counted_and_timed(live_group: LiveGroup):
    url = live_group.url
    m = scrape(url)
    assert series(m, "kafkette_group_rebalances_total", consumergroup=GROUP) == 1
    assert series(m, "kafkette_group_rebalance_duration_seconds_count", consumergroup=GROUP) == 1
    second = group_consumer(live_group.broker.bootstrap)
    await second.start()
    try:
        first = live_group.consumers[0]
        await wait_until(lambda: len(first.assignment()) == 1 and len(second.assignment()) == 1)
        await wait_until(lambda: get_json(f"{url}/v1/groups/{GROUP}")["state"] == "Stable")
        m = scrape(url)
        assert series(m, "kafkette_group_rebalances_total", consumergroup=GROUP) == 2
        assert series(m, "kafka_consumergroup_members", consumergroup=GROUP) == 2
        assert series(m, "kafkette_group_generation", consumergroup=GROUP) == 2
        total = series(m, "kafkette_group_rebalance_duration_seconds_sum", consumergroup=GROUP)
        last = series(m, "kafkette_group_last_rebalance_duration_seconds", consumergroup=GROUP)
        assert 0 <= last <= total < 30
        members = {m["member_id"] for m in get_json(f"{url}/v1/groups/{GROUP}")["members"]}
    finally:
        await second.stop()
    events = get_json(f"{url}/v1/groups/{GROUP}/events")
    joined = [e["member_id"] for e in events if e["kind"] == "member-joined"]
    assert len(joined) == 2 and set(joined) == members
    # the second one left with LeaveGroup (its own event), which started the next rebalance
    await wait_until(lambda: any(e["kind"] == "member-left"
                                 for e in get_json(f"{url}/v1/groups/{GROUP}/events")))
    events = get_json(f"{url}/v1/groups/{GROUP}/events")
    left = [(i, e) for i, e in enumerate(events) if e["kind"] == "member-left"]
    assert [e["member_id"] for _, e in left] == [joined[1]]
    assert events[left[0][0] + 1]["kind"] == "rebalance-started"


async def test_request_and_byte_counters(live_group: LiveGroup):
    consumer = live_group.consumers[0]
    want = sum(live_group.end_offsets.values())
    await consumer.seek_to_beginning()
    got, deadline = 0, time.monotonic() + 20
    while got < want and time.monotonic() < deadline:
        batches = await consumer.getmany(timeout_ms=500)
        got += sum(len(records) for records in batches.values())
    assert got == want
    m = scrape(live_group.url)
    sizes = {p["partition"]: p["size_bytes"] for t in get_json(f"{live_group.url}/v1/topics")
             if t["name"] == TOPIC for p in t["partitions"]}
    assert series(m, "kafkette_topic_bytes_in_total", topic=TOPIC) == sum(sizes.values())
    assert series(m, "kafkette_topic_bytes_out_total", topic=TOPIC) >= sum(sizes.values())
    requests = {dict(k)["api"]: v for k, v in m["kafkette_requests_total"].items()}
    errors = {dict(k)["api"]: v for k, v in m["kafkette_request_errors_total"].items()}
    assert requests["Produce"] == want  # one send_and_wait per record
    assert requests["JoinGroup"] >= 2 and errors["JoinGroup"] >= 1  # MEMBER_ID_REQUIRED first
    assert requests["SyncGroup"] >= 1 and requests["Fetch"] >= 1
    for labels, count in m["kafkette_request_latency_seconds_count"].items():
        assert m["kafkette_request_latency_seconds_bucket"][
            tuple(sorted({**dict(labels), "le": "+Inf"}.items()))] == count
    assert series(m, "kafkette_active_connections") >= 2
    assert series(m, "kafkette_consumer_offsets_load_seconds") >= 0


def test_scrape_with_a_thousand_groups_is_quick(kafka_broker_factory):
    broker = kafka_broker_factory(**{"admin.listener": "127.0.0.1:0", "num.partitions": 4})
    url = broker.broker.admin.url
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for p in range(4):
        for i in range(10):
            producer.send("bulk", b"%d" % i, partition=p)
    producer.flush()
    producer.close()
    member = Member(SimpleNamespace(broker=broker), "bulk")
    try:
        for i in range(1000):
            errors = member.commit(f"bulk-{i:04d}", {("bulk", p): i % 7 + p for p in range(4)})
            assert set(errors.values()) == {0}
    finally:
        member.close()
    get(f"{url}/metrics")  # warm up: starts the formatting worker process
    elapsed, delays = [], []
    for _ in range(3):
        stop = threading.Event()
        probe = asyncio.run_coroutine_threadsafe(_worst_loop_delay(stop), broker.loop)
        t0 = time.perf_counter()
        text = get(f"{url}/metrics").decode()
        elapsed.append(time.perf_counter() - t0)
        stop.set()
        delays.append(probe.result(10))
    print(f"scrapes of 1000 groups ({len(text)} bytes): "
          f"{', '.join(f'{e * 1000:.0f}' for e in elapsed)} ms; worst broker loop delay "
          f"during each: {', '.join(f'{d * 1000:.1f}' for d in delays)} ms")
    m = parse_metrics(text)
    assert series(m, "kafkette_groups", state="Empty", protocol_type="") == 1000
    lags = m["kafka_consumergroup_lag"]
    assert len(lags) == 4000
    assert series(m, "kafka_consumergroup_lag", consumergroup="bulk-0999", topic="bulk",
                  partition="3") == 10 - (999 % 7 + 3)
    assert min(elapsed) < 1.0, f"scrapes of 1000 groups took {elapsed} s"
    # The loop only copies numbers, 200 groups a turn; formatting happens in another process.
    # (The median: one scheduling hiccup of a shared machine is not the scrape's doing.)
    assert sorted(delays)[1] < 0.2, f"scrapes held the broker's loop for {delays} s"


async def _worst_loop_delay(stop: threading.Event) -> float:
    """The longest a 1 ms timer on the broker's loop fired late, until ``stop`` is set."""
    loop = asyncio.get_running_loop()
    worst = 0.0
    while not stop.is_set():
        before = loop.time()
        await asyncio.sleep(0.001)
        worst = max(worst, loop.time() - before - 0.001)
    return worst


def _small_snapshot() -> Snapshot:
    return Snapshot(partitions=[("t", 0, 0, 12)],
                    groups=[("g", "Stable", "consumer", 1, 3, [("t", 0, 5)])],
                    rebalances={"g": (3, 120, 40)}, commits={"g": 9})


async def test_worker_process_formats_the_same_text_as_in_process():
    renderer = Renderer()
    try:
        text = await renderer.render(_small_snapshot())
    finally:
        await renderer.close()
    assert text == render(_small_snapshot())
    m = parse_metrics(text.decode())
    assert series(m, "kafka_consumergroup_lag", consumergroup="g", topic="t", partition="0") == 7
    assert series(m, "kafkette_group_rebalance_duration_seconds_sum", consumergroup="g") == 0.12


async def test_without_a_worker_process_a_thread_formats(monkeypatch, caplog):
    monkeypatch.setattr(metrics_module.sys, "executable", "/bin/false")
    renderer = Renderer()
    try:
        for _ in range(2):
            assert await renderer.render(_small_snapshot()) == render(_small_snapshot())
    finally:
        await renderer.close()
    failures = [r for r in caplog.records if "metrics worker process failed" in r.getMessage()]
    assert len(failures) == 1  # tried once, then a thread every time


def _create(runner, name: str, partitions: int, replication: int) -> None:
    async def go() -> None:
        await runner.broker.services.topics.create(name, partitions, replication, [], {},
                                                   validate_only=False)
    runner.run(go())


def test_kafka_exporter_broker_and_replica_series_one_node(kafka_broker_factory):
    from kafkette.broker.cli.group_admin import ClusterAdmin

    broker = kafka_broker_factory(**{"admin.listener": "127.0.0.1:0"})
    _create(broker, "placed", 2, 1)
    with ClusterAdmin(broker.bootstrap) as admin:
        assert set(admin.commit("summed", {("placed", 0): 0, ("placed", 1): 0}).values()) == {
            "NONE"}
    KafkaProducer(bootstrap_servers=broker.bootstrap).send("placed", b"x", partition=1).get(10)
    with ClusterAdmin(broker.bootstrap) as admin:
        admin.commit("summed", {("placed", 0): 0, ("placed", 1): 1})
    m = scrape(broker.broker.admin.url)
    host, port = broker.address
    assert series(m, "kafka_brokers") == 1
    assert series(m, "kafka_broker_info", address=f"{host}:{port}", id="1") == 1
    for p in ("0", "1"):
        assert series(m, "kafka_topic_partition_leader", topic="placed", partition=p) == 1
        assert series(m, "kafka_topic_partition_replicas", topic="placed", partition=p) == 1
        assert series(m, "kafka_topic_partition_in_sync_replica", topic="placed",
                      partition=p) == 1
        assert series(m, "kafka_topic_partition_leader_is_preferred", topic="placed",
                      partition=p) == 1
        assert series(m, "kafka_topic_partition_under_replicated_partition", topic="placed",
                      partition=p) == 0
    assert series(m, "kafka_consumergroup_current_offset_sum", consumergroup="summed",
                  topic="placed") == 1
    assert series(m, "kafka_consumergroup_lag_sum", consumergroup="summed", topic="placed") == 0


def test_kafka_exporter_replica_series_follow_the_emulated_cluster(kafka_cluster_factory):
    cluster = kafka_cluster_factory(3, **{"admin.listener": "127.0.0.1:0"})
    runner = cluster.runner
    _create(runner, "spread", 3, 3)
    url = runner.broker.admin.url
    nodes = runner.broker.cluster_nodes
    m = scrape(url)
    assert series(m, "kafka_brokers") == 3
    for p in range(3):
        labels = {"topic": "spread", "partition": str(p)}
        assert series(m, "kafka_topic_partition_leader", **labels) == cluster.leader_of("spread", p)
        assert series(m, "kafka_topic_partition_replicas", **labels) == 3
        assert series(m, "kafka_topic_partition_in_sync_replica", **labels) == 3
        assert series(m, "kafka_topic_partition_under_replicated_partition", **labels) == 0
    preferred = runner.run(lambda: nodes.replicas("spread", 0))
    cluster.move_leader("spread", 0, preferred[1])
    cluster.stop_node(preferred[2])
    m = scrape(url)
    assert series(m, "kafka_brokers") == 2
    labels = {"topic": "spread", "partition": "0"}
    assert series(m, "kafka_topic_partition_leader", **labels) == preferred[1]
    assert series(m, "kafka_topic_partition_leader_is_preferred", **labels) == 0
    assert series(m, "kafka_topic_partition_in_sync_replica", **labels) == 2
    assert series(m, "kafka_topic_partition_under_replicated_partition", **labels) == 1
