"""Client quotas that bite: Kafka's ClientQuotaManager for produce and fetch byte rates,
ClientRequestQuotaManager for request time and ControllerMutationQuotaManager for partition
mutations (``mutation_quota``), over the limits of ``client_quota_store``.

Each (user, client id) a quota applies to has a rate measured as Kafka's ``Rate`` measures it:
``quota.window.num`` samples of ``quota.window.size.seconds`` each, the rate being the samples'
total over the time they cover (at least ``quota.window.num - 1`` windows). Recording a value
that takes the rate over the limit answers a throttle time, Kafka's
``(rate - limit) / limit * window``, which the handler puts in the response's
``throttle_time_ms`` and for which the connection stops reading the client's requests (Kafka
mutes the channel). Request-time throttles are at most one window.

Which limit applies is Kafka's DefaultQuotaCallback order, per quota key: user and client id,
user and default client id, user, default user and client id, default user and default client
id, default user, client id, default client id. The first one set wins; the rate is kept per
(user, client id) of that level (``""`` for the part the level does not name), so clients
under one user quota share one rate, and each user under the default user quota has its own.

No quota set: ``active`` is False and the hot paths check nothing else; the connection checks
``request.enabled`` alone (broker/request_quota.py meters every other API).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .client_quota_store import (
    CLIENT_ID,
    CONSUMER_BYTE_RATE,
    CONTROLLER_MUTATION_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    USER,
    ClientQuotaStore,
    Entity,
    entity_of,
)
from .mutation_quota import MutationQuota, TokenBucket

# The (user, client id) levels a quota is looked up at, in Kafka's order: (user part, client
# part) of the entity, each "name" (the request's own), "default" or absent; and which parts
# name the rate's key.
_NAME, _DEFAULT, _ABSENT = "name", "default", "absent"
_LEVELS = ((_NAME, _NAME), (_NAME, _DEFAULT), (_NAME, _ABSENT), (_DEFAULT, _NAME),
           (_DEFAULT, _DEFAULT), (_DEFAULT, _ABSENT), (_ABSENT, _NAME), (_ABSENT, _DEFAULT))
_NANOS_TO_PERCENTAGE = 100 / 1e9


def user_of(principal: str) -> str:
    """The quota user of a principal: its name (``User:alice`` -> ``alice``)."""
    return principal.split(":", 1)[1] if ":" in principal else principal


class Rate:
    """Kafka's SampledStat Rate over ``samples`` windows of ``window_ms`` each."""

    __slots__ = ("_samples", "_window_ms", "_starts", "_values", "_current")

    def __init__(self, samples: int, window_ms: int) -> None:
        self._samples = max(samples, 2)
        self._window_ms = max(window_ms, 1)
        self._starts: list[float] = []
        self._values: list[float] = []
        self._current = 0

    def record(self, value: float, now_ms: float) -> None:
        if not self._starts:
            self._starts.append(now_ms)
            self._values.append(0.0)
        elif now_ms - self._starts[self._current] >= self._window_ms:
            self._current = (self._current + 1) % self._samples
            if self._current >= len(self._starts):
                self._starts.append(now_ms)
                self._values.append(0.0)
            else:
                self._starts[self._current] = now_ms
                self._values[self._current] = 0.0
        self._values[self._current] += value

    def _purge(self, now_ms: float) -> None:
        expire = self._samples * self._window_ms
        for i, start in enumerate(self._starts):
            if now_ms - start >= expire:
                self._starts[i] = now_ms
                self._values[i] = 0.0

    def window_ms(self, now_ms: float) -> float:
        """The time the rate is measured over (Kafka's Rate.windowSize)."""
        self._purge(now_ms)
        elapsed = now_ms - min(self._starts) if self._starts else 0.0
        full = int(elapsed // self._window_ms)
        if full < self._samples - 1:
            elapsed += (self._samples - 1 - full) * self._window_ms
        return max(elapsed, 1.0)

    def measure(self, now_ms: float) -> float:
        """Per second."""
        window = self.window_ms(now_ms)
        return sum(self._values) / (window / 1000)


class QuotaKind:
    """One quota type (produce, fetch or request): the rates of the clients it limits."""

    def __init__(self, key: str, samples: int, window_ms: int,
                 max_throttle_ms: int | None = None) -> None:
        self.key = key
        self._samples = samples
        self._window_ms = window_ms
        self._max_throttle_ms = max_throttle_ms
        self.enabled = False
        # (user, client id) -> the limit found for it (None: no limit); cleared on a change
        self._limits: dict[tuple[str, str], tuple[float, tuple[str, str]] | None] = {}
        self._rates: dict[tuple[str, str], Rate] = {}
        self._lookup: Callable[[Entity], float | None] = lambda _e: None
        self.throttled_ms: dict[tuple[str, str], int] = {}  # the last throttle time per rate key

    def reset(self, lookup: Callable[[Entity], float | None], enabled: bool) -> None:
        self._lookup = lookup
        self.enabled = enabled
        self._limits.clear()

    def limit(self, user: str, client_id: str) -> tuple[float, tuple[str, str]] | None:
        """(limit, rate key) of this client, or None."""
        key = (user, client_id)
        try:
            return self._limits[key]
        except KeyError:
            pass
        found = None
        for user_part, client_part in _LEVELS:
            pairs: list[tuple[str, str | None]] = []
            if user_part != _ABSENT:
                pairs.append((USER, user if user_part == _NAME else None))
            if client_part != _ABSENT:
                pairs.append((CLIENT_ID, client_id if client_part == _NAME else None))
            value = self._lookup(entity_of(pairs))
            if value is not None:
                rate_key = (user if user_part != _ABSENT else "",
                            client_id if client_part != _ABSENT else "")
                found = (value, rate_key)
                break
        self._limits[key] = found
        return found

    def record(self, user: str, client_id: str, value: float, now_ms: float) -> int:
        """Record ``value`` for the client; the throttle time in ms (0: within its quota)."""
        found = self.limit(user, client_id)
        if found is None:
            return 0
        bound, rate_key = found
        rate = self._rates.get(rate_key)
        if rate is None:
            rate = self._rates[rate_key] = Rate(self._samples, self._window_ms)
        rate.record(value, now_ms)
        observed = rate.measure(now_ms)
        if observed <= bound:
            return 0
        throttle = round((observed - bound) / bound * rate.window_ms(now_ms))
        if self._max_throttle_ms is not None:
            throttle = min(throttle, self._max_throttle_ms)
        self.throttled_ms[rate_key] = throttle
        return throttle

    def unrecord(self, user: str, client_id: str, value: float, now_ms: float) -> None:
        found = self.limit(user, client_id)
        if found is not None and (rate := self._rates.get(found[1])) is not None:
            rate.record(-value, now_ms)

    def max_in_window(self, user: str, client_id: str) -> float | None:
        """The most that can be recorded at once without a certain throttle (Kafka's
        getMaxValueInQuotaWindow), None without a limit."""
        found = self.limit(user, client_id)
        if found is None:
            return None
        return found[0] * (self._samples - 1) * self._window_ms / 1000

    def measured(self, now_ms: float) -> list[dict[str, Any]]:
        """Each rate kept: its (user, client id), the rate now, its limit, the last throttle."""
        limits = {found[1]: found[0] for found in self._limits.values() if found is not None}
        return [{"user": user, "client_id": client, "rate": rate.measure(now_ms),
                 "limit": limits.get((user, client)),
                 "last_throttle_ms": self.throttled_ms.get((user, client), 0)}
                for (user, client), rate in sorted(self._rates.items())]


class ClientQuotas:
    """The produce, fetch and request quotas of every client, following the store."""

    def __init__(self, store: ClientQuotaStore, samples: int, window_seconds: int,
                 mutation_samples: int = 11, mutation_window_seconds: int = 1) -> None:
        window_ms = window_seconds * 1000
        self.store = store
        self.produce = QuotaKind(PRODUCER_BYTE_RATE, samples, window_ms)
        self.fetch = QuotaKind(CONSUMER_BYTE_RATE, samples, window_ms)
        self.request = QuotaKind(REQUEST_PERCENTAGE, samples, window_ms, window_ms)
        # controller_mutation_rate: the limits (its rates are the token buckets below)
        self.mutation = QuotaKind(CONTROLLER_MUTATION_RATE, mutation_samples,
                                  mutation_window_seconds * 1000)
        # the bucket holds at most the sample windows' worth of the rate (Kafka's burst)
        self._burst_seconds = max(mutation_samples, 1) * max(mutation_window_seconds, 1)
        self._buckets: dict[tuple[str, str], TokenBucket] = {}
        self.active = False  # any produce, fetch or request quota set
        store.on_change.append(self._reload)

    def _reload(self) -> None:
        for kind in (self.produce, self.fetch, self.request, self.mutation):
            values = {entity: quotas[kind.key] for entity, quotas in self.store.entities.items()
                      if kind.key in quotas}
            kind.reset(values.get, bool(values))
        self.active = self.produce.enabled or self.fetch.enabled or self.request.enabled

    def view(self) -> dict[str, Any]:
        """The quotas set and the rates measured (the admin server's ``/v1/quotas``)."""
        now = self.now_ms()
        return {
            "entities": [{"entity": {kind: name for kind, name in entity}, "quotas": quotas}
                         for entity, quotas in self.store.entities.items()],
            "produce": self.produce.measured(now), "fetch": self.fetch.measured(now),
            "request": self.request.measured(now),
            "controller_mutation": [
                {"user": user, "client_id": client, "tokens": bucket.tokens}
                for (user, client), bucket in sorted(self._buckets.items())],
        }

    @staticmethod
    def now_ms() -> float:
        return time.monotonic() * 1000

    def record_request_time(self, principal: str, client_id: str | None,
                            nanos: float, now_ms: float) -> int:
        """Request handler time of one request: its throttle time under request_percentage."""
        if not self.request.enabled:
            return 0
        return self.request.record(user_of(principal), client_id or "",
                                   nanos * _NANOS_TO_PERCENTAGE, now_ms)

    def mutation_quota(self, principal: str, client_id: str | None,
                       strict: bool) -> MutationQuota | None:
        """The controller mutation quota of one CreateTopics / CreatePartitions / DeleteTopics
        (strict for the versions that know THROTTLING_QUOTA_EXCEEDED); None when the client
        has no controller_mutation_rate."""
        if not self.mutation.enabled:
            return None
        found = self.mutation.limit(user_of(principal), client_id or "")
        if found is None:
            return None
        rate, rate_key = found
        burst = rate * self._burst_seconds
        bucket = self._buckets.get(rate_key)
        if bucket is None:
            bucket = self._buckets[rate_key] = TokenBucket(burst, self.now_ms())
        return MutationQuota(bucket, rate, burst, self.now_ms, strict=strict)
