"""Hot-path counters of one broker: requests, errors and latency per API, bytes per topic.

Plain ints and floats in dicts, updated inline by the connection and the produce/fetch
handlers (a dict lookup and a few additions per request); the metrics collector turns them
into Prometheus samples only when ``/metrics`` is scraped. No imports beyond the stdlib: the
broker pays nothing for the admin server's libraries unless it is enabled.
"""

from __future__ import annotations

from time import perf_counter
from typing import Any

# Latency buckets: powers of two microseconds, 1 us to 2**24 us (16.8 s), then +Inf. A bucket
# index is the bit length of the whole microseconds, which is cheaper than a search.
LATENCY_BUCKETS: tuple[float, ...] = tuple((1 << k) / 1_000_000 for k in range(25))
_INF_BUCKET = len(LATENCY_BUCKETS)


class ApiStats:
    """One API version: error count, latency sum and per-bucket counts (their sum is the
    request count)."""

    __slots__ = ("api_key", "version", "errors", "latency_sum", "buckets")

    def __init__(self, api_key: int, version: int) -> None:
        self.api_key = api_key
        self.version = version
        self.errors = 0
        self.latency_sum = 0.0
        self.buckets = [0] * (_INF_BUCKET + 1)  # per bucket, not cumulative

    @property
    def requests(self) -> int:
        return sum(self.buckets)


class BrokerStats:
    """Everything the request path counts for one broker. Per-request counting (``per_request``)
    is on only while the admin server is: the connection skips it otherwise."""

    def __init__(self, per_request: bool = True) -> None:
        self.per_request = per_request
        # Keyed by api_key << 8 | version: an int hashes faster than a tuple.
        self.apis: dict[int, ApiStats] = {}
        self.bytes_in: dict[str, int] = {}
        self.bytes_out: dict[str, int] = {}

    def request_done(self, api_codec: Any, started: float, result: Any) -> None:
        """A response is ready: count it under its API key and version, with its latency.

        A response whose top-level ``error_code`` is set counts as an error (responses sent
        as pre-encoded bytes, and per-partition errors, are not inspected)."""
        elapsed = perf_counter() - started
        key = api_codec.api_key << 8 | api_codec.version
        stats = self.apis.get(key)
        if stats is None:
            stats = self.apis[key] = ApiStats(api_codec.api_key, api_codec.version)
        stats.latency_sum += elapsed
        stats.buckets[min(int(elapsed * 1_000_000).bit_length(), _INF_BUCKET)] += 1
        if getattr(result, "error_code", 0):
            stats.errors += 1

    def produced(self, topic: str, size: int) -> None:
        self.bytes_in[topic] = self.bytes_in.get(topic, 0) + size

    def fetched(self, topic_bytes: dict[str, int]) -> None:
        out = self.bytes_out
        for topic, size in topic_bytes.items():
            out[topic] = out.get(topic, 0) + size
