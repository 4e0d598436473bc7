"""Hot-path counters of one broker: requests, errors and latency per API, bytes per topic.

Plain ints and floats in dicts, updated inline by the connection and the produce/fetch
handlers (a dict lookup and a few additions per request); the metrics collector turns them
into Prometheus samples only when ``/metrics`` is scraped. No imports beyond the stdlib: the
broker pays nothing for the admin server's libraries unless it is enabled.
"""

from __future__ import annotations

from bisect import bisect_left
from time import perf_counter
from typing import Any

# Upper bounds (seconds) of the request latency histogram buckets, +Inf implied.
LATENCY_BUCKETS: tuple[float, ...] = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 5.0, 10.0,
)
_N_BUCKETS = len(LATENCY_BUCKETS) + 1


class ApiStats:
    """One (api key, version): request and error counts, latency sum and bucket counts."""

    __slots__ = ("requests", "errors", "latency_sum", "buckets")

    def __init__(self) -> None:
        self.requests = 0
        self.errors = 0
        self.latency_sum = 0.0
        self.buckets = [0] * _N_BUCKETS  # per bucket, not cumulative


class BrokerStats:
    """Everything the request path counts for one broker."""

    def __init__(self) -> None:
        self.apis: dict[tuple[int, int], ApiStats] = {}
        self.bytes_in: dict[str, int] = {}
        self.bytes_out: dict[str, int] = {}

    def request_done(self, api_codec: Any, started: float, result: Any) -> None:
        """A response is ready: count it under its API key and version, with its latency.

        A response whose top-level ``error_code`` is set counts as an error (responses sent
        as pre-encoded bytes, and per-partition errors, are not inspected)."""
        elapsed = perf_counter() - started
        key = (api_codec.api_key, api_codec.version)
        stats = self.apis.get(key)
        if stats is None:
            stats = self.apis[key] = ApiStats()
        stats.requests += 1
        stats.latency_sum += elapsed
        stats.buckets[bisect_left(LATENCY_BUCKETS, elapsed)] += 1
        if getattr(result, "error_code", 0):
            stats.errors += 1

    def produced(self, topic: str, size: int) -> None:
        self.bytes_in[topic] = self.bytes_in.get(topic, 0) + size

    def fetched(self, topic_bytes: dict[str, int]) -> None:
        out = self.bytes_out
        for topic, size in topic_bytes.items():
            out[topic] = out.get(topic, 0) + size
