"""The broker's config keys as Kafka defines them (Kafka's ``ConfigDef``): each key's default
(``DEFAULTS``, Kafka's, except where a dev broker should differ, noted inline), its type and
check (``CONFIG_KEYS``), and ``parse_value``, which checks one value with Kafka's wording.
A new key goes into both tables.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import NamedTuple
from urllib.parse import urlsplit

from kafkette.coordinator.group.consumer.defaults import DEFAULTS as CONSUMER_GROUP_DEFAULTS
from kafkette.coordinator.group.share.defaults import DEFAULTS as SHARE_GROUP_DEFAULTS

from .security.config_keys import (
    PASSWORD,
    SECURITY_DEFAULTS,
    SECURITY_KEYS,
    is_password,
    scoped_key,
)

DEFAULTS: dict[str, str] = {
    "listeners": "PLAINTEXT://127.0.0.1:9092",
    "advertised.listeners": "",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
                                      "SASL_SSL:SASL_SSL",
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
    "fetch.max.bytes": "57671680",
    # DescribeTopicPartitions: the most partitions one response holds (the request may ask fewer).
    "max.request.partition.size.limit": "2000",
    # Client quotas' rate samples (count, seconds each); the largest KIP-714 metrics push.
    "quota.window.num": "11",
    "quota.window.size.seconds": "1",
    # controller_mutation_rate's token bucket holds num * seconds * rate partitions (KIP-599).
    "controller.quota.window.num": "11",
    "controller.quota.window.size.seconds": "1",
    "telemetry.max.bytes": "1048576",
    "max.connections": "2147483647",
    "max.connections.per.ip": "2147483647",
    "queued.max.response.total.bytes": "1073741824",
    "connections.max.idle.ms": "600000",
    "message.max.bytes": "1048588",
    # kafkette's own: HOST:PORT of the admin HTTP server (metrics, console); empty = off.
    "admin.listener": "",
    # kafkette's own: when set, the admin server asks every request for this token (Bearer, or
    # basic auth with it as password)
    "admin.auth.token": "",
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
    # Kafka's thread pools and log cleaner threads: kafkette runs one event loop, so these only
    # answer DescribeConfigs and may be changed dynamically, as in Kafka, without effect.
    "num.io.threads": "8",
    "num.network.threads": "3",
    "num.replica.fetchers": "1",
    "num.recovery.threads.per.data.dir": "2",
    "background.threads": "10",
    "log.cleaner.threads": "1",
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
    # Consumer group protocol, KIP-848 (Kafka 4.0 names and defaults): group.consumer.*,
    # group.coordinator.rebalance.protocols.
    **CONSUMER_GROUP_DEFAULTS,
    # Share groups, KIP-932 (Kafka 4.2 names and defaults): group.share.* (coordinator side),
    # and the share.version feature.
    **SHARE_GROUP_DEFAULTS,
    # Share groups, the share-partition side (Kafka 4.2 names and defaults).
    "group.share.record.lock.duration.ms": "30000",
    "group.share.min.record.lock.duration.ms": "15000",
    "group.share.max.record.lock.duration.ms": "60000",
    "group.share.delivery.count.limit": "5",
    "group.share.partition.max.record.locks": "2000",
    "group.share.max.share.sessions": "2000",
    # Transaction coordinator (Kafka's defaults)
    "transaction.state.log.num.partitions": "50",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.segment.bytes": "104857600",
    "transaction.max.timeout.ms": "900000",
    "transactional.id.expiration.ms": "604800000",
    "transaction.remove.expired.transaction.cleanup.interval.ms": "3600000",
    "add.partitions.to.txn.retry.backoff.max.ms": "100",
    # Produce verification (KIP-890 part 1): a transactional batch must go to a partition of
    # the producer's ongoing transaction; false lets hanging transactions happen, as in Kafka.
    "transaction.partition.verification.enable": "true",
    # The finalized level of the transaction.version feature (Kafka finalizes it with
    # kafka-storage format / kafka-features): 2 enables KIP-890's transaction version 2.
    "transaction.version": "2",
    # Share-state coordinator (KIP-932, Kafka's defaults): __share_group_state
    "share.coordinator.state.topic.num.partitions": "50",
    "share.coordinator.state.topic.segment.bytes": "104857600",
    "share.coordinator.snapshot.update.records.per.snapshot": "500",
    "share.coordinator.write.timeout.ms": "5000",
    "share.coordinator.append.linger.ms": "5",
    "share.coordinator.state.topic.prune.interval.ms": "300000",
    # Authorization (Kafka's names): empty = no authorizer, everything allowed; else Kafka's
    # StandardAuthorizer (broker/security/): ACLs, super users, the no-ACL default.
    "authorizer.class.name": "",
    "super.users": "",
    "allow.everyone.if.no.acl.found": "false",
    # TLS listeners and SASL (Kafka's defaults; broker/security/config_keys.py)
    **SECURITY_DEFAULTS,
}


class ConfigError(ValueError):
    pass


# Types and checks (Kafka's ConfigDef) -------------------------------------------------------

_INT_RANGES = {"SHORT": (-(2**15), 2**15 - 1), "INT": (-(2**31), 2**31 - 1),
               "LONG": (-(2**63), 2**63 - 1)}


class ConfigKey(NamedTuple):  # a NamedTuple, not a dataclass: cheap at start-up (broker/boot.py)
    """One accepted key: Kafka's type name and an optional check of the parsed value."""

    type: str  # INT, SHORT, LONG, DOUBLE, BOOLEAN, STRING, LIST
    check: Callable[[object], str | None] | None = None  # returns Kafka's complaint, or None


def at_least(low: int) -> Callable[[object], str | None]:
    return lambda v: None if v >= low else f"Value must be at least {low}"  # type: ignore[operator]  # the key's parser ran first: the value is an int


def between(low: int, high: int) -> Callable[[object], str | None]:
    def check(value: object) -> str | None:
        if value < low:  # type: ignore[operator]  # the key's parser ran first: the value is an int
            return f"Value must be at least {low}"
        return f"Value must be no more than {high}" if value > high else None  # type: ignore[operator]  # the key's parser ran first: the value is an int
    return check


def one_of(*choices: str) -> Callable[[object], str | None]:
    def check(value: object) -> str | None:
        items = value if isinstance(value, list) else [value]
        if all(item in choices for item in items) and items:
            return None
        return "String must be one of: " + ", ".join(choices)
    return check


def _listener_list(value: object) -> str | None:
    try:
        parse_listeners(",".join(value))  # type: ignore[arg-type]  # the key's parser ran first: the value is a list of str
    except ConfigError as exc:
        return str(exc)
    return None


def _one_dir(value: object) -> str | None:
    dirs = [d for d in str(value).split(",") if d.strip()]
    if len(dirs) != 1:
        return "kafkette stores its logs in exactly one directory"
    return None


# The authorizers kafkette implements (broker/security/): Kafka 4's, and the ZooKeeper-era name
# an older server.properties carries.
AUTHORIZER_CLASSES = ("org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                      "kafka.security.authorizer.AclAuthorizer")


def _authorizer_class(value: object) -> str | None:
    if value in ("",) + AUTHORIZER_CLASSES:
        return None
    return f"kafkette's authorizer is {AUTHORIZER_CLASSES[0]}"


CONFIG_KEYS: dict[str, ConfigKey] = {
    "listeners": ConfigKey("LIST", _listener_list),
    "advertised.listeners": ConfigKey("LIST"),
    "listener.security.protocol.map": ConfigKey("LIST"),
    "log.dirs": ConfigKey("STRING", _one_dir),
    "node.id": ConfigKey("INT", at_least(0)),
    "cluster.id": ConfigKey("STRING"),
    "num.partitions": ConfigKey("INT", at_least(1)),
    "default.replication.factor": ConfigKey("INT", at_least(1)),
    "auto.create.topics.enable": ConfigKey("BOOLEAN"),
    "socket.request.max.bytes": ConfigKey("INT", at_least(1)),
    "max.request.partition.size.limit": ConfigKey("INT", at_least(1)),
    "connections.max.idle.ms": ConfigKey("LONG"),
    "message.max.bytes": ConfigKey("INT", at_least(0)),
    "log.segment.bytes": ConfigKey("INT", at_least(1024 * 1024)),  # Kafka 4.x (KIP-1030)
    "log.retention.ms": ConfigKey("LONG", at_least(-1)),
    "log.retention.minutes": ConfigKey("INT"),
    "log.retention.hours": ConfigKey("INT"),
    "log.retention.bytes": ConfigKey("LONG"),
    "log.retention.check.interval.ms": ConfigKey("LONG", at_least(1)),
    "log.flush.interval.messages": ConfigKey("LONG", at_least(1)),
    "log.flush.interval.ms": ConfigKey("LONG"),
    "log.message.timestamp.type": ConfigKey("STRING", one_of("CreateTime", "LogAppendTime")),
    "log.cleanup.policy": ConfigKey("LIST", one_of("compact", "delete")),
    "log.index.interval.bytes": ConfigKey("INT", at_least(0)),
    "log.roll.hours": ConfigKey("INT", at_least(1)),
    "log.roll.ms": ConfigKey("LONG"),
    "log.cleaner.backoff.ms": ConfigKey("LONG", at_least(0)),
    "log.cleaner.delete.retention.ms": ConfigKey("LONG", at_least(0)),
    "log.cleaner.min.compaction.lag.ms": ConfigKey("LONG", at_least(0)),
    "log.message.timestamp.after.max.ms": ConfigKey("LONG", at_least(0)),
    "log.message.timestamp.before.max.ms": ConfigKey("LONG", at_least(0)),
    "compression.type": ConfigKey("STRING", one_of("uncompressed", "zstd", "lz4", "snappy",
                                                   "gzip", "producer")),
    "min.insync.replicas": ConfigKey("INT", at_least(1)),
    "num.io.threads": ConfigKey("INT", at_least(1)),
    "num.network.threads": ConfigKey("INT", at_least(1)),
    "num.replica.fetchers": ConfigKey("INT"),
    "num.recovery.threads.per.data.dir": ConfigKey("INT", at_least(1)),
    "background.threads": ConfigKey("INT", at_least(1)),
    "log.cleaner.threads": ConfigKey("INT", at_least(0)),
    "delete.topic.enable": ConfigKey("BOOLEAN"),
    "offsets.topic.num.partitions": ConfigKey("INT", at_least(1)),
    "offsets.topic.replication.factor": ConfigKey("SHORT", at_least(1)),
    "offsets.topic.segment.bytes": ConfigKey("INT", at_least(1)),
    "offsets.retention.minutes": ConfigKey("INT", at_least(1)),
    "offsets.retention.check.interval.ms": ConfigKey("LONG", at_least(1)),
    "offsets.commit.timeout.ms": ConfigKey("INT", at_least(1)),
    "offset.metadata.max.bytes": ConfigKey("INT"),
    "group.initial.rebalance.delay.ms": ConfigKey("INT", at_least(0)),
    "add.partitions.to.txn.retry.backoff.max.ms": ConfigKey("INT", at_least(0)),
    "transaction.version": ConfigKey("SHORT", between(0, 2)),
    "transaction.partition.verification.enable": ConfigKey("BOOLEAN"),
    "share.coordinator.state.topic.num.partitions": ConfigKey("INT", at_least(1)),
    "share.coordinator.state.topic.segment.bytes": ConfigKey("INT", at_least(1)),
    "share.coordinator.snapshot.update.records.per.snapshot": ConfigKey("INT", between(0, 500)),
    "share.coordinator.write.timeout.ms": ConfigKey("INT", at_least(1)),
    "share.coordinator.append.linger.ms": ConfigKey("INT", at_least(-1)),
    "share.coordinator.state.topic.prune.interval.ms": ConfigKey("INT", at_least(0)),
    "share.version": ConfigKey("SHORT", between(0, 1)),
    "group.share.heartbeat.interval.ms": ConfigKey("INT", at_least(1)),
    "group.share.min.heartbeat.interval.ms": ConfigKey("INT", at_least(1)),
    "group.share.max.heartbeat.interval.ms": ConfigKey("INT", at_least(1)),
    "group.share.session.timeout.ms": ConfigKey("INT", at_least(1)),
    "group.share.min.session.timeout.ms": ConfigKey("INT", at_least(1)),
    "group.share.max.session.timeout.ms": ConfigKey("INT", at_least(1)),
    "group.share.max.size": ConfigKey("INT", between(1, 1000)),
    "group.share.assignors": ConfigKey("LIST"),
    "group.share.record.lock.duration.ms": ConfigKey("INT", at_least(1000)),
    "group.share.min.record.lock.duration.ms": ConfigKey("INT", between(1000, 30000)),
    "group.share.max.record.lock.duration.ms": ConfigKey("INT", between(30000, 3600000)),
    "group.share.delivery.count.limit": ConfigKey("INT", between(2, 10)),
    "group.share.partition.max.record.locks": ConfigKey("INT", between(100, 10000)),
    "group.share.max.share.sessions": ConfigKey("INT", at_least(1)),
    "group.min.session.timeout.ms": ConfigKey("INT"),
    "group.max.session.timeout.ms": ConfigKey("INT"),
    "group.max.size": ConfigKey("INT", at_least(1)),
    "group.coordinator.append.linger.ms": ConfigKey("INT", at_least(-1)),
    "offsets.topic.compression.codec": ConfigKey("INT", between(0, 4)),
    "offsets.load.buffer.size": ConfigKey("INT", at_least(1)),
    "log.flush.offset.checkpoint.interval.ms": ConfigKey("INT", at_least(0)),
    "queued.max.requests": ConfigKey("INT", at_least(1)),
    "queued.max.request.bytes": ConfigKey("LONG", at_least(-1)),
    "queued.max.response.bytes": ConfigKey("INT", at_least(1)),
    "request.max.elements": ConfigKey("INT", at_least(1)),
    "fetch.max.bytes": ConfigKey("INT", at_least(1024)),
    "quota.window.num": ConfigKey("INT", at_least(1)),
    "quota.window.size.seconds": ConfigKey("INT", at_least(1)),
    "controller.quota.window.num": ConfigKey("INT", at_least(1)),
    "controller.quota.window.size.seconds": ConfigKey("INT", at_least(1)),
    "telemetry.max.bytes": ConfigKey("INT", at_least(1)),
    "max.connections": ConfigKey("INT", at_least(0)),
    "max.connections.per.ip": ConfigKey("INT", at_least(0)),
    "queued.max.response.total.bytes": ConfigKey("LONG", at_least(1)),
    "admin.listener": ConfigKey("STRING"),
    # KIP-848 (checked again, with Kafka's messages, by coordinator.group.consumer.consumer_group_config)
    "group.coordinator.rebalance.protocols": ConfigKey(
        "LIST", one_of("classic", "consumer", "share", "streams")),
    "group.consumer.heartbeat.interval.ms": ConfigKey("INT", at_least(1)),
    "group.consumer.min.heartbeat.interval.ms": ConfigKey("INT", at_least(1)),
    "group.consumer.max.heartbeat.interval.ms": ConfigKey("INT", at_least(1)),
    "group.consumer.session.timeout.ms": ConfigKey("INT", at_least(1)),
    "group.consumer.min.session.timeout.ms": ConfigKey("INT", at_least(1)),
    "group.consumer.max.session.timeout.ms": ConfigKey("INT", at_least(1)),
    "group.consumer.max.size": ConfigKey("INT", at_least(1)),
    "group.consumer.assignors": ConfigKey("LIST"),
    "group.consumer.migration.policy": ConfigKey(
        "STRING", one_of("bidirectional", "upgrade", "downgrade", "disabled")),
    "authorizer.class.name": ConfigKey("STRING", _authorizer_class),
    "super.users": ConfigKey("STRING"),
    "allow.everyone.if.no.acl.found": ConfigKey("BOOLEAN"),
    # TLS and SASL: a PASSWORD is parsed as a STRING and printed [hidden]
    **{key: ConfigKey("STRING" if spec.type == PASSWORD else spec.type, spec.check)
       for key, spec in SECURITY_KEYS.items()},
}


@cache
def _add_topic_synonyms() -> None:
    """Broker-level synonyms of topic configs the logs read (log.preallocate, log.roll.jitter.ms,
    ...), added to CONFIG_KEYS the first time a key outside it and DEFAULTS is looked up: the
    storage module that lists them is not imported before the listeners are up otherwise."""
    from kafkette.storage import topic_config

    types = {topic_config.BOOLEAN: "BOOLEAN", topic_config.INT: "INT",
             topic_config.LONG: "LONG", topic_config.SHORT: "SHORT",
             topic_config.DOUBLE: "DOUBLE", topic_config.LIST: "LIST"}
    for d in topic_config.TOPIC_CONFIGS.values():
        if d.synonym and d.synonym not in CONFIG_KEYS:
            CONFIG_KEYS[d.synonym] = ConfigKey(types.get(d.type, "STRING"),
                                               _topic_bounds(topic_config.bound_complaint, d.name))


def _topic_bounds(complaint: Callable[[str, float], str | None], topic_name: str
                  ) -> Callable[[object], str | None]:
    """The bounds of a topic config, checked on its broker-level synonym."""
    return lambda value: complaint(topic_name, value) if isinstance(value, int | float) else None


def config_key(key: str) -> ConfigKey | None:
    """The type and check of ``key``; None for a key the broker does not know."""
    spec = CONFIG_KEYS.get(key)
    if spec is None and key.startswith("listener.name."):
        scoped = scoped_key(key)  # listener.name.<l>.[<mechanism>.]<security key>
        return CONFIG_KEYS[scoped[0]] if scoped is not None else None
    if spec is None and key not in DEFAULTS:  # every synonym with a default is listed above
        _add_topic_synonyms()
        spec = CONFIG_KEYS.get(key)
    return spec

# Kafka keys of a shipped server.properties that mean nothing to a single-node broker: accepted
# without a warning (Kafka knows them), and without effect.
NO_EFFECT_KEYS = frozenset({
    "process.roles", "controller.quorum.voters", "controller.quorum.bootstrap.servers",
    "controller.listener.names", "inter.broker.listener.name", "num.network.threads",
    "num.io.threads", "socket.send.buffer.bytes", "socket.receive.buffer.bytes",
    "num.recovery.threads.per.data.dir", "transaction.state.log.replication.factor",
    "transaction.state.log.min.isr", "share.coordinator.state.topic.replication.factor",
    "share.coordinator.state.topic.min.isr", "broker.id",
})


def parse_value(key: str, raw: str) -> object:
    """The value of ``key`` parsed and checked as Kafka would; raises ConfigError."""
    spec = config_key(key)
    if spec is None:
        return raw
    value = raw.strip()
    parsed: object
    if spec.type in _INT_RANGES:
        low, high = _INT_RANGES[spec.type]
        try:
            parsed = int(value)
        except ValueError:
            parsed = None
        if parsed is None or not low <= parsed <= high:
            raise ConfigError(f"Invalid value {raw} for configuration {key}: "
                              f"Not a number of type {spec.type}")
    elif spec.type == "DOUBLE":
        try:
            parsed = float(value)
        except ValueError:
            raise ConfigError(f"Invalid value {raw} for configuration {key}: "
                              "Not a number of type DOUBLE") from None
    elif spec.type == "BOOLEAN":
        if value.lower() not in ("true", "false"):
            raise ConfigError(f"Invalid value {raw} for configuration {key}: "
                              "Expected value to be either true or false")
        parsed = value.lower() == "true"
    elif spec.type == "LIST":
        parsed = [item.strip() for item in value.split(",") if item.strip()]
    else:
        parsed = value
    complaint = spec.check(parsed) if spec.check else None
    if complaint:
        shown = "[hidden]" if is_password(key) else raw  # Kafka never prints a PASSWORD
        raise ConfigError(f"Invalid value {shown} for configuration {key}: {complaint}")
    return parsed


# Listeners ------------------------------------------------------------------------------------

class Listener(NamedTuple):
    name: str
    host: str
    port: int


def _parse_one_listener(item: str) -> Listener:
    if "://" not in item:
        raise ConfigError(f"listener {item!r} must look like PLAINTEXT://host:port")
    name, _, address = item.partition("://")
    name = name.strip().upper()
    parts = urlsplit("tcp://" + address)  # listener names such as SASL_SSL are no URL scheme
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None:
        raise ConfigError(f"listener {item!r} has no port")
    return Listener(name, parts.hostname or "0.0.0.0", port)


def _listener_port_problem(item: str) -> str | None:
    """What is wrong with the port of ``NAME://host:port``, in words; None when it is fine."""
    address = item.partition("://")[2]
    host, sep, port = address.rpartition(":")
    if not sep or not port or (host.startswith("[") and not host.endswith("]")):
        return f"listener {item!r} has no port: it must look like {item.partition('://')[0]}://host:port"
    if not port.isdigit():
        return f"listener {item!r}: the port {port!r} is not a number"
    if int(port) > 65535:
        return f"listener {item!r}: the port {port} is out of range (0-65535; 0 picks a free one)"
    return None


def parse_listeners(value: str) -> list[Listener]:
    """``NAME://host:port,...``: listener names must be unique (Kafka's rule)."""
    for item in value.split(","):
        problem = _listener_port_problem(item.strip()) if "://" in item else None
        if problem is not None:
            raise ConfigError(problem)
    out = [_parse_one_listener(item.strip()) for item in value.split(",") if item.strip()]
    if not out:
        raise ConfigError("no listener given (listeners=PLAINTEXT://host:port)")
    names = [item.name for item in out]
    if len(set(names)) != len(names):
        raise ConfigError("Each listener must have a different name")
    return out
