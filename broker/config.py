"""Broker configuration with Kafka's config names and defaults.

Defaults are Apache Kafka's, except where a dev broker should differ (noted inline).
Each component reads its own keys; add new keys to ``DEFAULTS`` with Kafka's default.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

DEFAULTS: dict[str, str] = {
    "listeners": "PLAINTEXT://127.0.0.1:9092",
    "advertised.listeners": "",
    "log.dirs": "/tmp/kafkette-logs",
    "node.id": "1",
    "cluster.id": "kafkette-cluster-0001",
    "num.partitions": "1",
    "default.replication.factor": "1",
    "auto.create.topics.enable": "true",
    "socket.request.max.bytes": "104857600",
    # Per connection (Kafka's are broker-wide; a channel is muted while its request is handled):
    # reading stops while this many requests, or bytes of them, wait on one connection
    # (queued.max.request.bytes: kafkette bounds it at 100 MiB; -1 = unbounded as in Kafka).
    "queued.max.requests": "500",
    "queued.max.request.bytes": "104857600",
    # kafkette's own: reading stops while a connection's unsent responses exceed this many bytes
    # (a client that does not read its answers), and one request may hold at most this many
    # array elements (bounds the event-loop work one request can cause; Kafka has no limit).
    "queued.max.response.bytes": "16777216",
    "request.max.elements": "20000",
    "connections.max.idle.ms": "600000",
    "message.max.bytes": "1048588",
    # Storage (Kafka defaults).
    "log.segment.bytes": "1073741824",
    "log.retention.ms": "604800000",
    "log.retention.bytes": "-1",
    "log.retention.check.interval.ms": "300000",
    "log.flush.interval.messages": "9223372036854775807",
    "log.flush.interval.ms": "9223372036854775807",
    "log.message.timestamp.type": "CreateTime",
    "log.cleanup.policy": "delete",
    "log.index.interval.bytes": "4096",
    "log.roll.hours": "168",
    "log.cleaner.backoff.ms": "15000",
    "log.cleaner.delete.retention.ms": "86400000",
    "log.cleaner.min.compaction.lag.ms": "0",
    "log.message.timestamp.after.max.ms": "3600000",
    "log.message.timestamp.before.max.ms": "9223372036854775807",
    "compression.type": "producer",
    "min.insync.replicas": "1",
    "delete.topic.enable": "true",
    # Group coordinator (Kafka's built-in defaults; tests and docker-compose set the initial
    # rebalance delay to 0, as Kafka's shipped config/server.properties does).
    "offsets.topic.num.partitions": "50",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.segment.bytes": "104857600",
    "offsets.retention.minutes": "10080",
    "offsets.retention.check.interval.ms": "600000",
    "offsets.commit.timeout.ms": "5000",
    "offset.metadata.max.bytes": "4096",
    "group.initial.rebalance.delay.ms": "3000",
    "group.min.session.timeout.ms": "6000",
    "group.max.session.timeout.ms": "1800000",
    "group.max.size": "2147483647",
    "group.coordinator.append.linger.ms": "10",
    "offsets.topic.compression.codec": "0",
    "offsets.load.buffer.size": "5242880",
    # Transaction coordinator (Kafka's defaults)
    "transaction.state.log.num.partitions": "50",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.segment.bytes": "104857600",
    "transaction.max.timeout.ms": "900000",
    "transactional.id.expiration.ms": "604800000",
    "transaction.remove.expired.transaction.cleanup.interval.ms": "3600000",
}


class ConfigError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Listener:
    name: str
    host: str
    port: int


def parse_listener(value: str) -> Listener:
    first = value.split(",")[0].strip()
    if "://" not in first:
        raise ConfigError(f"listener {value!r} must look like PLAINTEXT://host:port")
    parts = urlsplit(first)
    name = first.split("://", 1)[0]
    if parts.port is None:
        raise ConfigError(f"listener {value!r} has no port")
    return Listener(name, parts.hostname or "0.0.0.0", parts.port)


class BrokerConfig(Mapping[str, str]):
    """Kafka-style string properties with typed getters."""

    def __init__(self, overrides: Mapping[str, object] | None = None) -> None:
        self._values = dict(DEFAULTS)
        for key, value in (overrides or {}).items():
            self._values[key] = _to_str(value)

    @classmethod
    def from_sources(cls, properties_file: str | Path | None,
                     overrides: Iterable[str] = ()) -> BrokerConfig:
        values: dict[str, str] = {}
        if properties_file is not None:
            values.update(read_properties(Path(properties_file)))
        for item in overrides:
            if "=" not in item:
                raise ConfigError(f"--override expects key=value, got {item!r}")
            key, value = item.split("=", 1)
            values[key.strip()] = value.strip()
        return cls(values)

    def __getitem__(self, key: str) -> str:
        return self._values[key]

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def get_int(self, key: str) -> int:
        try:
            return int(self._values[key])
        except ValueError as exc:
            raise ConfigError(f"{key} must be an integer, got {self._values[key]!r}") from exc

    def get_bool(self, key: str) -> bool:
        value = self._values[key].strip().lower()
        if value not in ("true", "false"):
            raise ConfigError(f"{key} must be true or false, got {self._values[key]!r}")
        return value == "true"

    def get_str(self, key: str) -> str:
        return self._values[key]

    def with_overrides(self, **overrides: object) -> BrokerConfig:
        merged: dict[str, object] = dict(self._values)
        merged.update({k.replace("_", "."): v for k, v in overrides.items()})
        return BrokerConfig(merged)

    @property
    def listener(self) -> Listener:
        return parse_listener(self._values["listeners"])

    @property
    def advertised_listener(self) -> Listener | None:
        value = self._values.get("advertised.listeners", "")
        return parse_listener(value) if value else None

    @property
    def node_id(self) -> int:
        return self.get_int("node.id")

    @property
    def log_dirs(self) -> Path:
        return Path(self._values["log.dirs"].split(",")[0])


def _to_str(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def read_properties(path: Path) -> dict[str, str]:
    """Java .properties subset: key=value or key: value, # and ! comments, \\ continuations."""
    values: dict[str, str] = {}
    pending = ""
    for raw in path.read_text().splitlines():
        line = pending + raw.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\"):
            pending = line[:-1]
            continue
        for sep in ("=", ":"):
            if sep in line:
                key, value = line.split(sep, 1)
                values[key.strip()] = value.strip()
                break
        else:
            values[line] = ""
    return values
