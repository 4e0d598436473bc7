"""Controller mutation quotas (KIP-599, ``controller_mutation_rate``): how many partitions a
client may create or delete per second, as Kafka's ControllerMutationQuotaManager counts them.

Each (user, client id) the quota applies to has a token bucket (Kafka's ``TokenBucket``): it
holds at most ``controller.quota.window.num * controller.quota.window.size.seconds * rate``
tokens, starts full, and refills at ``rate`` tokens a second. CreateTopics, CreatePartitions and
DeleteTopics take one token per partition created or deleted; the bucket may go below zero.

A request gets one :class:`MutationQuota` for its lifetime:

* strict (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+: the clients that know the
  error): a topic is refused with THROTTLING_QUOTA_EXCEEDED while the bucket is below zero
  *before* it; otherwise it is accepted, whatever its size, and its partitions taken. The
  throttle time of the first refusal is the time the bucket needs to get back to zero;
* permissive (older versions): every topic is accepted and taken; once the bucket is below zero
  the response is throttled (``throttle_time_ms``, the connection muted) for that time.

The response carries the throttle time less the time since it was measured (Kafka's
``throttleTime``), so a request that waited answers what is left.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from kio.schema.errors import ErrorCode

from .errors import ServiceError


def java_round(value: float) -> int:
    """Java's Math.round: halves round up."""
    return math.floor(value + 0.5)


class TokenBucket:
    """Kafka's TokenBucket stat of one (user, client id): tokens left and when last refilled."""

    __slots__ = ("tokens", "updated_ms")

    def __init__(self, burst: float, now_ms: float) -> None:
        # Kafka's bucket starts at zero tokens refilled since the epoch: full.
        self.tokens = burst
        self.updated_ms = now_ms

    def measure(self, rate: float, burst: float, now_ms: float) -> float:
        """The tokens left now, after the refill since the last look."""
        elapsed = max(now_ms - self.updated_ms, 0.0)
        self.tokens = min(burst, self.tokens + rate * elapsed / 1000)
        self.updated_ms = max(now_ms, self.updated_ms)
        return self.tokens

    def take(self, permits: float, rate: float, burst: float, now_ms: float) -> None:
        self.tokens = min(burst, self.measure(rate, burst, now_ms) - permits)


class MutationQuota:
    """The controller mutation quota of one request (Kafka's Strict- and
    PermissiveControllerMutationQuota)."""

    __slots__ = ("_bucket", "_rate", "_burst", "_clock", "strict", "_throttle_ms",
                 "_throttled_at")

    def __init__(self, bucket: TokenBucket, rate: float, burst: float,
                 clock: Callable[[], float], *, strict: bool) -> None:
        self._bucket = bucket
        self._rate = rate
        self._burst = burst
        self._clock = clock
        self.strict = strict
        self._throttle_ms = 0
        self._throttled_at = 0.0

    def record(self, partitions: int) -> None:
        """Take ``partitions`` tokens for one topic's mutation; a strict quota raises
        THROTTLING_QUOTA_EXCEEDED instead while the bucket is already below zero."""
        now = self._clock()
        bucket = self._bucket
        if self.strict:
            tokens = bucket.measure(self._rate, self._burst, now)
            if tokens < 0:
                self._throttled(tokens, now)
                # Kafka's message is the error's own, which it leaves off the wire
                raise ServiceError(ErrorCode.throttling_quota_exceeded)
            bucket.take(partitions, self._rate, self._burst, now)
            return
        bucket.take(partitions, self._rate, self._burst, now)
        tokens = bucket.measure(self._rate, self._burst, now)
        if tokens < 0:
            self._throttled(tokens, now)

    def _throttled(self, tokens: float, now_ms: float) -> None:
        self._throttle_ms = java_round(-tokens / self._rate * 1000)
        self._throttled_at = now_ms

    def throttle_ms(self) -> int:
        """The throttle time for the response: the last one measured less the time since."""
        if not self._throttle_ms:
            return 0
        return max(0, self._throttle_ms - int(self._clock() - self._throttled_at))
