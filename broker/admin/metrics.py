"""``/metrics``: a snapshot taken on the event loop, turned into Prometheus text in a thread.

The snapshot copies plain numbers (request counters, log offsets, each group's committed
offsets) and yields to the loop every ``_GROUPS_PER_TURN`` groups, so a scrape with thousands
of groups never holds the loop for long; building the samples and formatting them happens in a
worker thread through a ``prometheus_client`` collector made for that one scrape.

Names of the lag series follow kafka-exporter (``kafka_consumergroup_lag``,
``kafka_topic_partition_current_offset``, ...); kafkette's own series start with ``kafkette_``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.registry import Collector

from kafkette.protocol.codec import request_type

from . import groups_view
from .stats import LATENCY_BUCKETS

_GROUPS_PER_TURN = 200


@dataclass(slots=True)
class Snapshot:
    apis: list[tuple[int, int, int, int, float, list[int]]] = field(default_factory=list)
    connections: int = 0
    bytes_in: dict[str, int] = field(default_factory=dict)
    bytes_out: dict[str, int] = field(default_factory=dict)
    # (topic, partition, log start offset, log end offset)
    partitions: list[tuple[str, int, int, int]] = field(default_factory=list)
    groups: list[groups_view.GroupSummary] = field(default_factory=list)
    offsets: dict[str, list[tuple[str, int, int]]] = field(default_factory=dict)
    rebalances: dict[str, tuple[int, int, int | None]] = field(default_factory=dict)
    commits: dict[str, int] = field(default_factory=dict)
    load_seconds: float | None = None


async def take_snapshot(broker: Any) -> Snapshot:
    stats = broker.stats
    snap = Snapshot(
        apis=[(key, version, s.requests, s.errors, s.latency_sum, list(s.buckets))
              for (key, version), s in stats.apis.items()],
        connections=len(broker.connections),
        bytes_in=dict(stats.bytes_in), bytes_out=dict(stats.bytes_out),
    )
    for info in broker.logs.topics():
        for p in range(info.partitions):
            plog = broker.logs.get_partition(info.name, p)
            if plog is not None:
                snap.partitions.append((info.name, p, plog.log_start_offset, plog.log_end_offset))
    for log in groups_view.event_logs(broker):
        for group_id, r in log.rebalances.items():
            snap.rebalances[group_id] = (r.count, r.total_ms, r.last_ms)
        snap.commits.update(log.commits)
        if log.load_seconds is not None:
            snap.load_seconds = max(snap.load_seconds or 0.0, log.load_seconds)
    snap.groups = groups_view.list_groups(broker)
    for i, group in enumerate(snap.groups):
        if i and i % _GROUPS_PER_TURN == 0:
            await asyncio.sleep(0)
        snap.offsets[group.group_id] = groups_view.committed_offsets(broker, group.group_id)
    return snap


@cache
def api_name(key: int, version: int) -> str:
    try:
        return request_type(key, version).__name__.removesuffix("Request")
    except Exception:  # noqa: BLE001 - a key kio does not know still gets a label
        return f"api{key}"


class SnapshotCollector(Collector):
    """Metric families of one snapshot (a collector per scrape)."""

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap

    def collect(self) -> Iterator[Metric]:
        yield from self._requests()
        yield from self._topics()
        yield from self._groups()

    def _requests(self) -> Iterator[Metric]:
        s = self.snap
        labels = ["api", "api_key", "version"]
        requests = CounterMetricFamily("kafkette_requests", "Requests answered, per API and version",
                                       labels=labels)
        errors = CounterMetricFamily(
            "kafkette_request_errors", "Responses with a top-level error code, per API and version",
            labels=labels)
        latency = HistogramMetricFamily(
            "kafkette_request_latency_seconds",
            "Time from reading a request to its response being ready", labels=labels)
        bounds = [repr(b) for b in LATENCY_BUCKETS] + ["+Inf"]
        for key, version, count, errs, total, per_bucket in sorted(s.apis):
            values = [api_name(key, version), str(key), str(version)]
            requests.add_metric(values, count)
            errors.add_metric(values, errs)
            cumulative, running = [], 0
            for bound, n in zip(bounds, per_bucket, strict=True):
                running += n
                cumulative.append((bound, running))
            latency.add_metric(values, cumulative, total)
        yield requests
        yield errors
        yield latency
        yield GaugeMetricFamily("kafkette_active_connections", "Open client connections",
                                value=s.connections)
        load = GaugeMetricFamily("kafkette_consumer_offsets_load_seconds",
                                 "Time the slowest __consumer_offsets partition took to load")
        if s.load_seconds is not None:
            load.add_metric([], s.load_seconds)
        yield load

    def _topics(self) -> Iterator[Metric]:
        s = self.snap
        parts = GaugeMetricFamily("kafka_topic_partitions", "Partitions of a topic",
                                  labels=["topic"])
        current = GaugeMetricFamily("kafka_topic_partition_current_offset",
                                    "Log-end offset of a partition", labels=["topic", "partition"])
        oldest = GaugeMetricFamily("kafka_topic_partition_oldest_offset",
                                   "Log-start offset of a partition", labels=["topic", "partition"])
        counts: dict[str, int] = {}
        for topic, p, start, end in s.partitions:
            counts[topic] = counts.get(topic, 0) + 1
            current.add_metric([topic, str(p)], end)
            oldest.add_metric([topic, str(p)], start)
        for topic, n in sorted(counts.items()):
            parts.add_metric([topic], n)
        bytes_in = CounterMetricFamily("kafkette_topic_bytes_in", "Record bytes produced",
                                       labels=["topic"])
        bytes_out = CounterMetricFamily("kafkette_topic_bytes_out", "Record bytes fetched",
                                        labels=["topic"])
        for topic, n in sorted(s.bytes_in.items()):
            bytes_in.add_metric([topic], n)
        for topic, n in sorted(s.bytes_out.items()):
            bytes_out.add_metric([topic], n)
        yield from (parts, current, oldest, bytes_in, bytes_out)

    def _groups(self) -> Iterator[Metric]:
        s = self.snap
        end_offsets = {(t, p): end for t, p, _start, end in s.partitions}
        by_state = GaugeMetricFamily("kafkette_groups", "Groups by state and protocol type",
                                     labels=["state", "protocol_type"])
        states: dict[tuple[str, str], int] = {}
        members = GaugeMetricFamily("kafka_consumergroup_members", "Members of a group",
                                    labels=["consumergroup"])
        generation = GaugeMetricFamily("kafkette_group_generation", "Generation of a group",
                                       labels=["consumergroup"])
        current = GaugeMetricFamily("kafka_consumergroup_current_offset",
                                    "Committed offset of a group for a partition",
                                    labels=["consumergroup", "topic", "partition"])
        lag = GaugeMetricFamily("kafka_consumergroup_lag",
                                "Log-end offset minus the group's committed offset",
                                labels=["consumergroup", "topic", "partition"])
        lag_sum = GaugeMetricFamily("kafka_consumergroup_lag_sum", "Lag of a group on a topic",
                                    labels=["consumergroup", "topic"])
        for g in s.groups:
            key = (g.state, g.protocol_type)
            states[key] = states.get(key, 0) + 1
            members.add_metric([g.group_id], g.members)
            generation.add_metric([g.group_id], g.generation)
            sums: dict[str, int] = {}
            for topic, p, offset in s.offsets.get(g.group_id, ()):
                current.add_metric([g.group_id, topic, str(p)], offset)
                end = end_offsets.get((topic, p))
                if end is not None:
                    lag.add_metric([g.group_id, topic, str(p)], end - offset)
                    sums[topic] = sums.get(topic, 0) + end - offset
            for topic, total in sorted(sums.items()):
                lag_sum.add_metric([g.group_id, topic], total)
        for (state, ptype), n in sorted(states.items()):
            by_state.add_metric([state, ptype], n)
        yield from (by_state, members, generation, current, lag, lag_sum)
        yield from self._rebalances()

    def _rebalances(self) -> Iterator[Metric]:
        s = self.snap
        count = CounterMetricFamily("kafkette_group_rebalances", "Completed rebalances of a group",
                                    labels=["consumergroup"])
        duration = SummaryMetricFamily("kafkette_group_rebalance_duration_seconds",
                                       "Duration of a group's completed rebalances",
                                       labels=["consumergroup"])
        last = GaugeMetricFamily("kafkette_group_last_rebalance_duration_seconds",
                                 "Duration of a group's last completed rebalance",
                                 labels=["consumergroup"])
        for group_id, (n, total_ms, last_ms) in sorted(s.rebalances.items()):
            count.add_metric([group_id], n)
            duration.add_metric([group_id], n, total_ms / 1000)
            if last_ms is not None:
                last.add_metric([group_id], last_ms / 1000)
        commits = CounterMetricFamily("kafkette_group_offset_commits",
                                      "Partition offsets committed by a group",
                                      labels=["consumergroup"])
        for group_id, n in sorted(s.commits.items()):
            commits.add_metric([group_id], n)
        yield from (count, duration, last, commits)


def render(snap: Snapshot) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(snap))
    return generate_latest(registry)


async def scrape(broker: Any) -> bytes:
    """The Prometheus text of ``broker`` now: snapshot on the loop, formatting in a thread."""
    snap = await take_snapshot(broker)
    return await asyncio.to_thread(render, snap)
