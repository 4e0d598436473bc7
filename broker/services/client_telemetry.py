"""Client telemetry (KIP-714): GetTelemetrySubscriptions and PushTelemetry as Kafka's
ClientMetricsManager answers them, and the metrics clients push, decoded from OTLP.

A client asks for its subscription (with no instance id the first time: it is given one); the
subscriptions matching it (``client_metrics``) give the metric prefixes it is to push (``*``
alone when one subscription takes every metric), the shortest push interval among them (five
minutes when none matches) and a subscription id, a CRC32C of those XORed with the instance id's
hash, so a change of subscriptions changes it. A push is refused THROTTLING_QUOTA_EXCEEDED when
it comes before the push interval since the last one (except the first push after a
GetTelemetrySubscriptions, or a terminating one), UNKNOWN_SUBSCRIPTION_ID when its subscription
id is not the instance's current one, UNSUPPORTED_COMPRESSION_TYPE for an unknown codec,
TELEMETRY_TOO_LARGE over ``telemetry.max.bytes``, INVALID_REQUEST after a terminating push;
a payload that is not OTLP is INVALID_RECORD.

The pushed metrics (an OTLP ``MetricsData``, decoded with ``opentelemetry-proto``) are kept per
client instance, latest value per metric and attributes, for the admin server (``/v1/clients``,
``/metrics``). Instances not heard from for three push intervals (at least a minute) are
dropped.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import google_crc32c
from kio.schema.errors import ErrorCode

from kafkette.protocol.records import CorruptRecordError, decompress

from .client_metrics import ALL_METRICS, INTERVAL_MS_DEFAULT, ClientMetricsConfigs
from .errors import ServiceError

log = logging.getLogger("kafkette.telemetry")

# Kafka's preference order: ZSTD, LZ4, GZIP, SNAPPY (CompressionType ids)
ACCEPTED_COMPRESSION_TYPES = (4, 3, 1, 2)
_KNOWN_COMPRESSION = frozenset({0, 1, 2, 3, 4})
_EXPIRY_MS = 60_000
_MAX_INSTANCES = 16384


@dataclass
class ClientInstance:
    instance_id: uuid.UUID
    client_id: str
    source_address: str
    principal: str
    subscription_id: int = 0
    subscription_version: int = -1
    metrics: tuple[str, ...] = ()
    push_interval_ms: int = INTERVAL_MS_DEFAULT
    last_get_ms: float = 0.0
    last_push_ms: float = 0.0
    last_seen_ms: float = 0.0
    terminating: bool = False
    last_error: int = 0
    pushes: int = 0
    # metric name -> [(attributes, value, kind)], the latest push's values
    values: dict[str, list[tuple[dict[str, str], float, str]]] = field(default_factory=dict)
    pushed_at_ms: float | None = None  # wall-clock ms of the latest push with metrics

    def selectors(self) -> dict[str, str | None]:
        return {"client_instance_id": str(self.instance_id), "client_id": self.client_id,
                "client_software_name": None, "client_software_version": None,
                "client_source_address": self.source_address, "client_source_port": None}


def _java_uuid_hash(value: uuid.UUID) -> int:
    msb, lsb = value.int >> 64, value.int & (2**64 - 1)
    h = msb ^ lsb
    return _int32((h >> 32) ^ h)


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


class ClientTelemetry:
    """Client instances, their subscriptions and their latest pushed metrics."""

    def __init__(self, configs: ClientMetricsConfigs, max_bytes: int) -> None:
        self.configs = configs
        self.max_bytes = max_bytes
        self.instances: dict[uuid.UUID, ClientInstance] = {}

    @staticmethod
    def _now_ms() -> float:
        return time.monotonic() * 1000

    def _expire(self, now: float) -> None:
        gone = [iid for iid, inst in self.instances.items()
                if now - inst.last_seen_ms > max(_EXPIRY_MS, 3 * inst.push_interval_ms)]
        for iid in gone:
            del self.instances[iid]

    def _instance(self, instance_id: uuid.UUID, client_id: str, source_address: str,
                  principal: str, now: float) -> ClientInstance:
        instance = self.instances.get(instance_id)
        if instance is None:
            self._expire(now)
            if len(self.instances) >= _MAX_INSTANCES:  # the least recently seen goes
                oldest = min(self.instances.values(), key=lambda i: i.last_seen_ms)
                del self.instances[oldest.instance_id]
            instance = self.instances[instance_id] = ClientInstance(
                instance_id, client_id, source_address, principal)
        if instance.subscription_version != self.configs.version:
            if instance.subscription_version >= 0:
                # Kafka makes a new instance for changed subscriptions: its timing starts over
                instance.last_get_ms = instance.last_push_ms = 0.0
                instance.terminating = False
                instance.last_error = 0
            self._subscribe(instance)
        instance.last_seen_ms = now
        return instance

    def _subscribe(self, instance: ClientInstance) -> None:
        """Kafka's createClientInstance: the matching subscriptions' metrics and interval."""
        interval = INTERVAL_MS_DEFAULT
        metrics: set[str] = set()
        selectors = instance.selectors()
        for sub in self.configs.subscriptions.values():
            if sub.matches(selectors):
                metrics |= sub.metrics
                interval = min(interval, sub.interval_ms)
        if ALL_METRICS in metrics:
            metrics = {ALL_METRICS}
        ordered = tuple(sorted(metrics))
        crc = google_crc32c.value(f"[{', '.join(ordered)}]{interval}".encode())
        instance.subscription_id = _int32(crc) ^ _java_uuid_hash(instance.instance_id)
        instance.subscription_id = _int32(instance.subscription_id)
        instance.metrics = ordered
        instance.push_interval_ms = interval
        instance.subscription_version = self.configs.version

    # GetTelemetrySubscriptions -------------------------------------------------------------------
    def get_subscriptions(self, instance_id: uuid.UUID | None, client_id: str,
                          source_address: str, principal: str) -> ClientInstance:
        """The client's instance, its subscription worked out; raises THROTTLING_QUOTA_EXCEEDED
        for a request before the push interval."""
        now = self._now_ms()
        if instance_id is None or instance_id.int == 0:
            instance_id = uuid.uuid4()
            while instance_id in self.instances:
                instance_id = uuid.uuid4()
        instance = self._instance(instance_id, client_id, source_address, principal, now)
        last = max(instance.last_get_ms, instance.last_push_ms)
        if (last and now - last < instance.push_interval_ms
                and instance.last_error not in (ErrorCode.unknown_subscription_id.value,
                                                ErrorCode.unsupported_compression_type.value)):
            raise ServiceError(ErrorCode.throttling_quota_exceeded,
                               f"Request from the client [{instance_id}] arrived before the "
                               "next push interval time")
        instance.last_get_ms = now
        instance.last_error = 0
        return instance

    # PushTelemetry ---------------------------------------------------------------------------
    def push(self, instance_id: uuid.UUID | None, subscription_id: int, terminating: bool,
             compression_type: int, payload: bytes, client_id: str, source_address: str,
             principal: str) -> None:
        """Accept one push (its metrics decoded and kept), or raise Kafka's error for it."""
        if instance_id is None or instance_id.int in (0, 1):
            raise ServiceError(ErrorCode.invalid_request,
                               f"Invalid request from the client [{instance_id}], invalid "
                               "client instance id")
        now = self._now_ms()
        instance = self._instance(instance_id, client_id, source_address, principal, now)
        try:
            self._validate_push(instance, subscription_id, terminating, compression_type,
                                payload, now)
        except ServiceError as refused:
            instance.last_error = refused.code.value
            raise
        finally:
            instance.terminating = terminating
        if payload:
            try:
                instance.values = decode_metrics(decompress(payload, compression_type))
            except (CorruptRecordError, ValueError) as exc:
                instance.last_error = ErrorCode.invalid_record.value
                log.warning("telemetry from client instance %s (%s) cannot be decoded: %s",
                            instance_id, client_id, exc)
                raise ServiceError(ErrorCode.invalid_record, None) from None
            instance.pushed_at_ms = time.time() * 1000
            instance.pushes += 1
        instance.last_error = 0

    def _validate_push(self, instance: ClientInstance, subscription_id: int, terminating: bool,
                       compression_type: int, payload: bytes, now: float) -> None:
        iid = instance.instance_id
        if instance.terminating:
            raise ServiceError(ErrorCode.invalid_request,
                               f"Client [{iid}] sent the previous request with state "
                               "terminating to TRUE, can not acceptany requests after that")
        accept = instance.last_get_ms > instance.last_push_ms or not instance.last_push_ms \
            or now - instance.last_push_ms >= instance.push_interval_ms
        if accept:
            instance.last_push_ms = now
        elif not terminating:
            raise ServiceError(ErrorCode.throttling_quota_exceeded,
                               f"Request from the client [{iid}] arrived before the next push "
                               "interval time")
        if subscription_id != instance.subscription_id:
            raise ServiceError(ErrorCode.unknown_subscription_id,
                               f"Unknown client subscription id for the client [{iid}]")
        if compression_type not in _KNOWN_COMPRESSION:
            raise ServiceError(ErrorCode.unsupported_compression_type,
                               f"Unknown compression type [{compression_type}] is received in "
                               f"telemetry request from [{iid}]")
        if len(payload) > self.max_bytes:
            raise ServiceError(ErrorCode.telemetry_too_large,
                               f"Telemetry request from [{iid}] is larger than the maximum "
                               f"allowed size [{self.max_bytes}]")

    # Views -----------------------------------------------------------------------------------
    def clients(self) -> list[dict[str, Any]]:
        """Every known client instance and its latest metrics (``/v1/clients``)."""
        self._expire(self._now_ms())
        out = []
        for inst in sorted(self.instances.values(), key=lambda i: (i.client_id,
                                                                   str(i.instance_id))):
            out.append({
                "client_instance_id": str(inst.instance_id), "client_id": inst.client_id,
                "source_address": inst.source_address, "principal": inst.principal,
                "subscription_id": inst.subscription_id,
                "requested_metrics": list(inst.metrics), "push_interval_ms": inst.push_interval_ms,
                "pushes": inst.pushes, "last_push_ms": inst.pushed_at_ms,
                "terminating": inst.terminating,
                "metrics": [{"name": name, "attributes": attrs, "value": value, "type": kind}
                            for name, points in sorted(inst.values.items())
                            for attrs, value, kind in points],
            })
        return out


def decode_metrics(data: bytes) -> dict[str, list[tuple[dict[str, str], float, str]]]:
    """An OTLP ``MetricsData``: metric name -> [(attributes, value, type)]; a histogram gives
    its count and sum as ``<name>.count`` and ``<name>.sum``."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData

    message = MetricsData()
    try:
        message.ParseFromString(data)
    except DecodeError as exc:
        raise ValueError(f"not an OTLP MetricsData: {exc}") from None
    out: dict[str, list[tuple[dict[str, str], float, str]]] = {}
    for resource in message.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                kind = metric.WhichOneof("data")
                if kind in ("gauge", "sum"):
                    points = getattr(metric, kind).data_points
                    for p in points:
                        value = p.as_double if p.WhichOneof("value") == "as_double" \
                            else float(p.as_int)
                        out.setdefault(metric.name, []).append((_attributes(p.attributes),
                                                                value, kind))
                elif kind in ("histogram", "exponential_histogram", "summary"):
                    for p in getattr(metric, kind).data_points:
                        attrs = _attributes(p.attributes)
                        out.setdefault(metric.name + ".count", []).append(
                            (attrs, float(p.count), kind))
                        out.setdefault(metric.name + ".sum", []).append(
                            (attrs, float(p.sum), kind))
    return out


def _attributes(attributes: Any) -> dict[str, str]:
    out = {}
    for kv in attributes:
        which = kv.value.WhichOneof("value")
        out[kv.key] = str(getattr(kv.value, which)) if which else ""
    return out


