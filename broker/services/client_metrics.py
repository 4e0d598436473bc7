"""Client metrics subscriptions (KIP-714): Kafka's CLIENT_METRICS config resources (resource type
16 in DescribeConfigs / IncrementalAlterConfigs / ListConfigResources), one per subscription
name, with Kafka's three configs:

* ``metrics``: metric name prefixes the matching clients push (``*``: every metric);
* ``interval.ms``: how often they push (100 ms to one hour, default five minutes);
* ``match``: ``selector=regex`` patterns a client must fully match (client_instance_id,
  client_id, client_software_name, client_software_version, client_source_address,
  client_source_port); none: every client.

They are checked as Kafka's ClientMetricsConfigs checks them and stored durably in ``log.dirs``.
``version`` counts changes, so a client's subscription is worked out again after one.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from kio.schema.errors import ErrorCode

from .config_file import read_config_file, write_config_file
from .errors import ServiceError

log = logging.getLogger("kafkette.telemetry")

CLIENT_METRICS_FILE = "kafkette-client-metrics.json"
METRICS, INTERVAL_MS, MATCH = "metrics", "interval.ms", "match"
ALL_METRICS = "*"
INTERVAL_MS_DEFAULT = 300_000
_MIN_INTERVAL_MS, _MAX_INTERVAL_MS = 100, 3_600_000
MATCH_SELECTORS = frozenset({"client_instance_id", "client_id", "client_software_name",
                             "client_software_version", "client_source_address",
                             "client_source_port"})
CLIENT_METRICS_CONFIG_SOURCE, DEFAULT_CONFIG_SOURCE = 7, 5  # DescribeConfigs ConfigSource
_INT, _LIST = 3, 7  # DescribeConfigs ConfigType
CONFIG_TYPES = {METRICS: _LIST, INTERVAL_MS: _INT, MATCH: _LIST}
_DEFAULTS = {METRICS: "", INTERVAL_MS: str(INTERVAL_MS_DEFAULT), MATCH: ""}


class Subscription(NamedTuple):
    name: str
    metrics: frozenset[str]
    interval_ms: int
    match: dict[str, re.Pattern[str]]

    def matches(self, selectors: Mapping[str, str | None]) -> bool:
        """Kafka's ClientMetricsInstanceMetadata.isMatch: every pattern fully matches."""
        for key, pattern in self.match.items():
            value = selectors.get(key)
            if value is None or pattern.fullmatch(value) is None:
                return False
        return True


def _items(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def parse_match(patterns: list[str]) -> dict[str, re.Pattern[str]]:
    """Kafka's ClientMetricsConfigs.parseMatchingPatterns."""
    out: dict[str, re.Pattern[str]] = {}
    for pattern in patterns:
        parts = pattern.split("=")
        if len(parts) != 2 or parts[0].strip() not in MATCH_SELECTORS:
            raise ServiceError(ErrorCode.invalid_config,
                               f"Illegal client matching pattern: {pattern}")
        try:
            out[parts[0].strip()] = re.compile(parts[1].strip())
        except re.error:
            raise ServiceError(ErrorCode.invalid_config,
                               f"Illegal client matching pattern: {pattern}") from None
    return out


def _subscription(name: str, values: Mapping[str, str]) -> Subscription:
    return Subscription(name, frozenset(_items(values.get(METRICS, ""))),
                        int(values.get(INTERVAL_MS, INTERVAL_MS_DEFAULT)),
                        parse_match(_items(values.get(MATCH, ""))))


def validate(name: str, values: Mapping[str, str | None]) -> dict[str, str]:
    """Kafka's ClientMetricsConfigs.validate: the subscription's configs, checked."""
    if not name:
        raise ServiceError(ErrorCode.invalid_request, "Subscription name can't be empty")
    out: dict[str, str] = {}
    for key, value in values.items():
        if key not in CONFIG_TYPES:
            raise ServiceError(ErrorCode.invalid_request,
                               f"Unknown client metrics configuration: {key}")
        if value is None:
            raise ServiceError(ErrorCode.invalid_request, f"Null value not supported for : {key}")
        out[key] = value.strip()
    if INTERVAL_MS in out:
        try:
            interval = int(out[INTERVAL_MS])
        except ValueError:
            raise ServiceError(ErrorCode.invalid_config,
                               f"Invalid value {out[INTERVAL_MS]} for configuration "
                               f"{INTERVAL_MS}: Not a number of type INT") from None
        if not _MIN_INTERVAL_MS <= interval <= _MAX_INTERVAL_MS:
            raise ServiceError(ErrorCode.invalid_request,
                               f"Invalid value {interval} for {INTERVAL_MS}, interval must be "
                               "between 100 and 3600000 (1 hour)")
    if MATCH in out:
        parse_match(_items(out[MATCH]))
    return out


class ClientMetricsConfigs:
    """Every client metrics subscription, durable in ``log.dirs``."""

    def __init__(self, log_dirs: str | Path) -> None:
        self._path = Path(log_dirs) / CLIENT_METRICS_FILE
        self.configs: dict[str, dict[str, str]] = {}
        self.subscriptions: dict[str, Subscription] = {}
        self.version = 0

    def load(self) -> None:
        data = read_config_file(self._path)
        if data is None:
            return
        for name, values in data.get("subscriptions", {}).items():
            self.configs[str(name)] = {str(k): str(v) for k, v in values.items()}
            self.subscriptions[str(name)] = _subscription(str(name), self.configs[str(name)])
        self.version += 1

    def names(self) -> list[str]:
        return sorted(self.configs)

    def entries(self, name: str, keys: set[str] | None) -> list[dict[str, Any]]:
        """DescribeConfigs of one subscription: its own values, Kafka's defaults for the rest."""
        if not name:
            raise ServiceError(ErrorCode.invalid_request,
                               "Client metrics subscription name must not be empty")
        own = self.configs.get(name, {})
        return [dict(name=key, value=own.get(key, _DEFAULTS[key]), type=CONFIG_TYPES[key],
                     read_only=False,
                     source=CLIENT_METRICS_CONFIG_SOURCE if key in own else DEFAULT_CONFIG_SOURCE,
                     synonyms=[])
                for key in sorted(CONFIG_TYPES) if keys is None or key in keys]

    async def alter(self, name: str,
                    change: Callable[[dict[str, str]], Mapping[str, str | None]],
                    *, validate_only: bool) -> None:
        own = validate(name, change(dict(self.configs.get(name, {}))))
        if validate_only:
            return
        if own:
            self.configs[name] = own
            self.subscriptions[name] = _subscription(name, own)
        else:  # every config deleted: the subscription is gone
            self.configs.pop(name, None)
            self.subscriptions.pop(name, None)
        self.version += 1
        await write_config_file(self._path, {"version": 1,
                                             "subscriptions": dict(sorted(self.configs.items()))})
        log.info("client metrics subscription %s: %s", name, own or "deleted")
