"""Topic-level configs: Kafka's names, their broker-level synonyms, types and validation."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

LONG_MAX = 9223372036854775807

# ConfigType values of DescribeConfigs v3+.
BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD = 1, 2, 3, 4, 5, 6, 7, 8, 9


@dataclass(frozen=True, slots=True)
class ConfigDef:
    name: str
    synonym: str | None  # broker config that supplies the default
    type: int
    default: str


_DEFS = [
    ConfigDef("cleanup.policy", "log.cleanup.policy", LIST, "delete"),
    ConfigDef("compression.type", "compression.type", STRING, "producer"),
    ConfigDef("compression.gzip.level", "compression.gzip.level", INT, "-1"),
    ConfigDef("compression.lz4.level", "compression.lz4.level", INT, "9"),
    ConfigDef("compression.zstd.level", "compression.zstd.level", INT, "3"),
    ConfigDef("delete.retention.ms", "log.cleaner.delete.retention.ms", LONG, "86400000"),
    ConfigDef("file.delete.delay.ms", "log.segment.delete.delay.ms", LONG, "60000"),
    ConfigDef("flush.messages", "log.flush.interval.messages", LONG, str(LONG_MAX)),
    ConfigDef("flush.ms", "log.flush.interval.ms", LONG, str(LONG_MAX)),
    ConfigDef("follower.replication.throttled.replicas", None, LIST, ""),
    ConfigDef("index.interval.bytes", "log.index.interval.bytes", INT, "4096"),
    ConfigDef("leader.replication.throttled.replicas", None, LIST, ""),
    ConfigDef("local.retention.bytes", "log.local.retention.bytes", LONG, "-2"),
    ConfigDef("local.retention.ms", "log.local.retention.ms", LONG, "-2"),
    ConfigDef("max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms", LONG, str(LONG_MAX)),
    ConfigDef("max.message.bytes", "message.max.bytes", INT, "1048588"),
    ConfigDef("message.timestamp.after.max.ms", "log.message.timestamp.after.max.ms", LONG, "3600000"),
    ConfigDef("message.timestamp.before.max.ms", "log.message.timestamp.before.max.ms", LONG, str(LONG_MAX)),
    ConfigDef("message.timestamp.type", "log.message.timestamp.type", STRING, "CreateTime"),
    ConfigDef("min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio", DOUBLE, "0.5"),
    ConfigDef("min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms", LONG, "0"),
    ConfigDef("min.insync.replicas", "min.insync.replicas", INT, "1"),
    ConfigDef("preallocate", "log.preallocate", BOOLEAN, "false"),
    ConfigDef("remote.storage.enable", None, BOOLEAN, "false"),
    ConfigDef("retention.bytes", "log.retention.bytes", LONG, "-1"),
    ConfigDef("retention.ms", "log.retention.ms", LONG, "604800000"),
    ConfigDef("segment.bytes", "log.segment.bytes", INT, "1073741824"),
    ConfigDef("segment.index.bytes", "log.index.size.max.bytes", INT, "10485760"),
    ConfigDef("segment.jitter.ms", "log.roll.jitter.ms", LONG, "0"),
    ConfigDef("segment.ms", "log.roll.ms", LONG, "604800000"),
    ConfigDef("unclean.leader.election.enable", "unclean.leader.election.enable", BOOLEAN, "false"),
]
TOPIC_CONFIGS: dict[str, ConfigDef] = {d.name: d for d in _DEFS}

_CHOICES = {
    "message.timestamp.type": {"CreateTime", "LogAppendTime"},
    "compression.type": {"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"},
}


# Kafka's LogConfig validators (atLeast / between) of the topic configs that have one.
MIN_SEGMENT_BYTES = 1024 * 1024  # Kafka 4.x (KIP-1030); internal.segment.bytes goes lower
_AT_LEAST: dict[str, int | float] = {
    "segment.bytes": MIN_SEGMENT_BYTES, "segment.ms": 1, "segment.jitter.ms": 0,
    "segment.index.bytes": 4, "flush.messages": 1, "flush.ms": 0, "retention.ms": -1,
    "max.message.bytes": 0, "index.interval.bytes": 0, "delete.retention.ms": 0,
    "min.compaction.lag.ms": 0, "max.compaction.lag.ms": 1, "file.delete.delay.ms": 0,
    "min.insync.replicas": 1, "message.timestamp.before.max.ms": 0,
    "message.timestamp.after.max.ms": 0, "local.retention.ms": -2, "local.retention.bytes": -2,
    "min.cleanable.dirty.ratio": 0,
}
_AT_MOST: dict[str, int | float] = {"min.cleanable.dirty.ratio": 1}
# Kafka's internal topic config (LogConfig.INTERNAL_SEGMENT_BYTES_CONFIG): a segment size under
# segment.bytes' minimum, for tests; never described. Over segment.bytes when set.
INTERNAL_SEGMENT_BYTES = "internal.segment.bytes"
_TYPE_RANGES = {INT: (-(2**31), 2**31 - 1), SHORT: (-(2**15), 2**15 - 1),
                LONG: (-(2**63), 2**63 - 1)}
_TYPE_NAMES = {INT: "INT", SHORT: "SHORT", LONG: "LONG"}


def bound_complaint(name: str, value: float) -> str | None:
    """Kafka's complaint about ``value`` for topic config ``name`` (or its broker synonym's
    value), or None when it is within the config's bounds."""
    low, high = _AT_LEAST.get(name), _AT_MOST.get(name)
    if low is not None and value < low:
        return f"Value must be at least {low}"
    if high is not None and value > high:
        return f"Value must be no more than {high}"
    return None


_CODEC_IDS = {"producer": -1, "uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


class InvalidConfigError(ValueError):
    pass


def validate_topic_configs(configs: Mapping[str, str | None], *,
                           min_segment_bytes: int = 14) -> dict[str, str]:
    """Kafka's checks on topic config overrides (type, range, LogConfig's bounds); raises
    InvalidConfigError with Kafka's INVALID_CONFIG wording. ``min_segment_bytes``: what a client
    may ask is Kafka's 1 MiB (``MIN_SEGMENT_BYTES``); the broker's own internal topics and
    storage tests go down to a batch header."""
    out: dict[str, str] = {}
    for name, value in configs.items():
        d = TOPIC_CONFIGS.get(name)
        if name == INTERNAL_SEGMENT_BYTES:
            d = ConfigDef(name, None, INT, "")
        if d is None:
            raise InvalidConfigError(f"Unknown topic config name: {name}")
        if value is None:
            raise InvalidConfigError(f"Null value not supported for topic configs: {name}")
        value = value.strip()
        try:
            if d.type in (INT, LONG, SHORT):
                int(value)
            elif d.type == DOUBLE:
                float(value)
            elif d.type == BOOLEAN and value.lower() not in ("true", "false"):
                raise ValueError
            if d.type in _TYPE_RANGES:
                low, high = _TYPE_RANGES[d.type]
                if not low <= int(value) <= high:
                    raise ValueError
        except ValueError:
            raise InvalidConfigError(
                f"Invalid value {value} for configuration {name}: Not a number of type "
                f"{_TYPE_NAMES.get(d.type, 'DOUBLE')}") from None
        if name == "cleanup.policy":
            parts = {p.strip() for p in value.split(",") if p.strip()}
            if not parts or not parts <= {"delete", "compact"}:
                raise InvalidConfigError(
                    f"Invalid value {value} for configuration cleanup.policy: String must be one of: compact, delete")
        elif name in _CHOICES and value not in _CHOICES[name]:
            raise InvalidConfigError(
                f"Invalid value {value} for configuration {name}: String must be one of: "
                + ", ".join(sorted(_CHOICES[name])))
        elif name in ("segment.bytes", INTERNAL_SEGMENT_BYTES):
            low = min_segment_bytes if name == "segment.bytes" else 14
            if int(value) < low:
                raise InvalidConfigError(f"Invalid value {value} for configuration {name}: "
                                         f"Value must be at least {low}")
        elif d.type in (INT, LONG, SHORT, DOUBLE):
            complaint = bound_complaint(name, float(value) if d.type == DOUBLE else int(value))
            if complaint is not None:
                raise InvalidConfigError(
                    f"Invalid value {value} for configuration {name}: {complaint}")
        out[name] = value
    return out


def effective_value(name: str, overrides: Mapping[str, str], broker: Mapping[str, str]) -> tuple[str, str]:
    """(value, source) where source is 'topic', 'broker' or 'default'."""
    if name in overrides:
        return overrides[name], "topic"
    d = TOPIC_CONFIGS[name]
    if d.synonym and d.synonym in broker:
        return broker[d.synonym], "broker"
    if name == "segment.ms" and "log.roll.hours" in broker:
        return str(int(broker["log.roll.hours"]) * 3600000), "broker"
    return d.default, "default"


@dataclass(frozen=True, slots=True)
class LogConfig:
    """The parsed settings a partition log acts on."""

    segment_bytes: int
    segment_ms: int
    retention_ms: int
    retention_bytes: int
    compact: bool
    delete: bool
    flush_messages: int
    flush_ms: int
    log_append_time: bool
    max_message_bytes: int
    delete_retention_ms: int
    min_compaction_lag_ms: int
    index_interval_bytes: int
    timestamp_before_max_ms: int
    timestamp_after_max_ms: int
    min_insync_replicas: int = 1
    min_cleanable_dirty_ratio: float = 0.5
    compression: int = -1  # compression.type as a codec id; -1 = "producer" (store as sent)

    @classmethod
    def build(cls, overrides: Mapping[str, str], broker: Mapping[str, str]) -> LogConfig:
        def get(name: str) -> str:
            return effective_value(name, overrides, broker)[0]

        policy = {p.strip() for p in get("cleanup.policy").split(",")}
        internal_segment_bytes = overrides.get(INTERNAL_SEGMENT_BYTES)
        return cls(
            segment_bytes=int(internal_segment_bytes or get("segment.bytes")),
            segment_ms=int(get("segment.ms")),
            retention_ms=int(get("retention.ms")),
            retention_bytes=int(get("retention.bytes")),
            compact="compact" in policy,
            delete="delete" in policy,
            flush_messages=int(get("flush.messages")),
            flush_ms=int(get("flush.ms")),
            log_append_time=get("message.timestamp.type") == "LogAppendTime",
            max_message_bytes=int(get("max.message.bytes")),
            delete_retention_ms=int(get("delete.retention.ms")),
            min_compaction_lag_ms=int(get("min.compaction.lag.ms")),
            index_interval_bytes=int(get("index.interval.bytes")),
            timestamp_before_max_ms=int(get("message.timestamp.before.max.ms")),
            timestamp_after_max_ms=int(get("message.timestamp.after.max.ms")),
            min_insync_replicas=int(get("min.insync.replicas")),
            min_cleanable_dirty_ratio=float(get("min.cleanable.dirty.ratio")),
            compression=_CODEC_IDS.get(get("compression.type"), -1),
        )
