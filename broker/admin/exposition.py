"""Prometheus text from a metrics ``Snapshot``, through a ``prometheus_client`` collector.

Runs in the admin server's worker process (see ``metrics``): only plain data comes in and
nothing here touches the broker. Names of the lag series follow kafka-exporter
(``kafka_consumergroup_lag``, ``kafka_topic_partition_current_offset``, ...); kafkette's own
series start with ``kafkette_``.
"""

from __future__ import annotations

import pickle
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.registry import Collector

from ..stats import LATENCY_BUCKETS

_SHARE_STATES = ("available", "acquired", "acknowledged", "archived")


@dataclass(slots=True)
class Snapshot:
    # (api name, key, version, requests, errors, latency sum, per-bucket counts)
    apis: list[tuple[str, int, int, int, int, float, list[int]]] = field(default_factory=list)
    connections: int = 0
    bytes_in: dict[str, int] = field(default_factory=dict)
    bytes_out: dict[str, int] = field(default_factory=dict)
    # (topic, partition, log start offset, log end offset)
    partitions: list[tuple[str, int, int, int]] = field(default_factory=list)
    # (group id, state, protocol type, members, generation, [(topic, partition, committed)])
    groups: list[tuple[str, str, str, int, int, list[tuple[str, int, int]]]] = field(
        default_factory=list)
    rebalances: dict[str, tuple[int, int, int | None]] = field(default_factory=dict)
    commits: dict[str, int] = field(default_factory=dict)
    load_seconds: float | None = None
    # share-partitions: (group id, topic, partition, SPSO, lag or None,
    #                    (available, acquired, acknowledged, archived) or None when not loaded)
    share_partitions: list[tuple[str, str, int, int, int | None,
                                 tuple[int, int, int, int] | None]] = field(default_factory=list)
    # (node id, host, port) of every live broker
    brokers: list[tuple[int, str, int]] = field(default_factory=list)
    # (topic, partition) -> (leader, replicas, in-sync replicas, preferred replica leads)
    placement: dict[tuple[str, int], tuple[int, int, int, bool]] = field(default_factory=dict)
    # client telemetry (KIP-714): (client id, client instance id, metric, attributes, value)
    client_metrics: list[tuple[str, str, str, str, float]] = field(default_factory=list)


class SnapshotCollector(Collector):
    """Metric families of one snapshot (a collector per scrape)."""

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap

    def collect(self) -> Iterator[Metric]:
        yield from self._requests()
        yield from self._topics()
        yield from self._groups()
        yield from self._clients()

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
        bounds = [f"{b:.6f}".rstrip("0") for b in LATENCY_BUCKETS] + ["+Inf"]
        for name, key, version, count, errs, total, per_bucket in sorted(s.apis):
            values = [name, str(key), str(version)]
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
        yield from self._placement()

    def _placement(self) -> Iterator[Metric]:
        """kafka-exporter's broker and replica series."""
        s = self.snap
        yield GaugeMetricFamily("kafka_brokers", "Number of Brokers in the Kafka Cluster.",
                                value=len(s.brokers))
        info = GaugeMetricFamily("kafka_broker_info", "Information about the Kafka Broker.",
                                 labels=["address", "id"])
        for node, host, port in sorted(s.brokers):
            info.add_metric([f"{host}:{port}", str(node)], 1)
        labels = ["topic", "partition"]
        leader = GaugeMetricFamily("kafka_topic_partition_leader",
                                   "Leader Broker ID of this Topic/Partition", labels=labels)
        replicas = GaugeMetricFamily("kafka_topic_partition_replicas",
                                     "Number of Replicas for this Topic/Partition", labels=labels)
        in_sync = GaugeMetricFamily("kafka_topic_partition_in_sync_replica",
                                    "Number of In-Sync Replicas for this Topic/Partition",
                                    labels=labels)
        preferred = GaugeMetricFamily("kafka_topic_partition_leader_is_preferred",
                                      "1 if Topic/Partition is using the Preferred Broker",
                                      labels=labels)
        under = GaugeMetricFamily("kafka_topic_partition_under_replicated_partition",
                                  "1 if Topic/Partition is under Replicated", labels=labels)
        for (topic, p), (lead, n_replicas, n_isr, is_preferred) in sorted(s.placement.items()):
            values = [topic, str(p)]
            leader.add_metric(values, lead)
            replicas.add_metric(values, n_replicas)
            in_sync.add_metric(values, n_isr)
            preferred.add_metric(values, 1 if is_preferred else 0)
            under.add_metric(values, 1 if n_isr < n_replicas else 0)
        yield from (info, leader, replicas, in_sync, preferred, under)

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
        current_sum = GaugeMetricFamily(
            "kafka_consumergroup_current_offset_sum",
            "Current Offset of a ConsumerGroup at Topic for all partitions",
            labels=["consumergroup", "topic"])
        for group_id, state, protocol_type, n_members, gen, offsets in s.groups:
            key = (state, protocol_type)
            states[key] = states.get(key, 0) + 1
            members.add_metric([group_id], n_members)
            generation.add_metric([group_id], gen)
            sums: dict[str, int] = {}
            offset_sums: dict[str, int] = {}
            for topic, p, offset in offsets:
                current.add_metric([group_id, topic, str(p)], offset)
                offset_sums[topic] = offset_sums.get(topic, 0) + offset
                end = end_offsets.get((topic, p))
                if end is not None:
                    lag.add_metric([group_id, topic, str(p)], end - offset)
                    sums[topic] = sums.get(topic, 0) + end - offset
            for topic, total in sorted(sums.items()):
                lag_sum.add_metric([group_id, topic], total)
            for topic, total in sorted(offset_sums.items()):
                current_sum.add_metric([group_id, topic], total)
        for (state, ptype), n in sorted(states.items()):
            by_state.add_metric([state, ptype], n)
        yield from (by_state, members, generation, current, current_sum, lag, lag_sum)
        yield from self._rebalances()
        yield from self._share_partitions()

    def _share_partitions(self) -> Iterator[Metric]:
        labels = ["sharegroup", "topic", "partition"]
        start = GaugeMetricFamily("kafkette_share_partition_start_offset",
                                  "Share-partition start offset (SPSO) of a share group",
                                  labels=labels)
        in_flight = GaugeMetricFamily(
            "kafkette_share_partition_in_flight_records",
            "In-flight records of a loaded share-partition, by delivery state",
            labels=[*labels, "state"])
        lag = GaugeMetricFamily(
            "kafka_sharegroup_lag",
            "Records of a share-partition still to deliver: log-end offset minus the start "
            "offset, less records past it already acknowledged or archived", labels=labels)
        lag_sum = GaugeMetricFamily("kafka_sharegroup_lag_sum",
                                    "Lag of a share group on a topic",
                                    labels=["sharegroup", "topic"])
        sums: dict[tuple[str, str], int] = {}
        for group_id, topic, p, spso, behind, counts in self.snap.share_partitions:
            values = [group_id, topic, str(p)]
            start.add_metric(values, spso)
            if counts is not None:
                for state, n in zip(_SHARE_STATES, counts, strict=True):
                    in_flight.add_metric([*values, state], n)
            if behind is not None:
                lag.add_metric(values, behind)
                sums[(group_id, topic)] = sums.get((group_id, topic), 0) + behind
        for (group_id, topic), total in sorted(sums.items()):
            lag_sum.add_metric([group_id, topic], total)
        yield from (start, in_flight, lag, lag_sum)

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

    def _clients(self) -> Iterator[Metric]:
        pushed = GaugeMetricFamily(
            "kafkette_client_metric",
            "Latest value of a metric a client pushed (KIP-714 telemetry); attributes as k=v,...",
            labels=["client_id", "client_instance_id", "metric", "attributes"])
        for client_id, instance_id, metric, attributes, value in self.snap.client_metrics:
            pushed.add_metric([client_id, instance_id, metric, attributes], value)
        yield pushed


def render(snap: Snapshot) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(snap))
    return generate_latest(registry)


# The worker process: ``python -m kafkette.broker.admin.exposition`` reads length-prefixed
# pickled snapshots on stdin and answers each with its length-prefixed Prometheus text.
LENGTH = struct.Struct(">Q")


def serve_stdio() -> None:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        head = stdin.read(LENGTH.size)
        if len(head) < LENGTH.size:
            return  # the broker closed the pipe
        snap = pickle.loads(stdin.read(LENGTH.unpack(head)[0]))
        text = render(snap)
        stdout.write(LENGTH.pack(len(text)) + text)
        stdout.flush()


if __name__ == "__main__":
    serve_stdio()
