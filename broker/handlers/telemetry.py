"""Client telemetry (KIP-714): GetTelemetrySubscriptions (key 71, version 0) and PushTelemetry
(key 72, version 0), answered by broker/services/client_telemetry.py; and ListConfigResources
(key 74, versions 0-1; ListClientMetricsResources at v0), which kafka-client-metrics.sh --list
calls."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make

from ..context import RequestContext
from ..routes import api
from ..services import ServiceError
from ..services.client_telemetry import ACCEPTED_COMPRESSION_TYPES

ZERO = timedelta(0)
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
_LISTED_TYPES = (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP)


def _source_address(ctx: RequestContext) -> str:
    return ctx.client_host.lstrip("/")


@api(71, 0, 0)
def handle_get_telemetry_subscriptions(ctx: RequestContext, req: Any):
    telemetry = ctx.services.telemetry
    try:
        instance = telemetry.get_subscriptions(req.client_instance_id, ctx.client_id or "",
                                               _source_address(ctx), ctx.principal)
    except ServiceError as refused:
        return ctx.respond(throttle_time=ZERO, error_code=refused.code,
                           client_instance_id=None, subscription_id=0,
                           accepted_compression_types=(), push_interval=ZERO,
                           telemetry_max_bytes=0, delta_temporality=False, requested_metrics=())
    return ctx.respond(throttle_time=ZERO, error_code=ErrorCode.none,
                       client_instance_id=instance.instance_id,
                       subscription_id=instance.subscription_id,
                       accepted_compression_types=ACCEPTED_COMPRESSION_TYPES,
                       push_interval=timedelta(milliseconds=instance.push_interval_ms),
                       telemetry_max_bytes=telemetry.max_bytes, delta_temporality=True,
                       requested_metrics=instance.metrics)


@api(72, 0, 0)
def handle_push_telemetry(ctx: RequestContext, req: Any):
    try:
        ctx.services.telemetry.push(req.client_instance_id, req.subscription_id,
                                    req.terminating, int(req.compression_type),
                                    bytes(req.metrics or b""), ctx.client_id or "",
                                    _source_address(ctx), ctx.principal)
    except ServiceError as refused:
        return ctx.respond(throttle_time=ZERO, error_code=refused.code)
    return ctx.respond(throttle_time=ZERO, error_code=ErrorCode.none)


@api(74, 0, 1)
def handle_list_config_resources(ctx: RequestContext, req: Any):
    cls = ctx.response_type
    resource_cls = item_type(cls, "config_resources")
    wanted = tuple(int(t) for t in getattr(req, "resource_types", (CLIENT_METRICS,)))
    if ctx.api_version == 0:
        wanted = (CLIENT_METRICS,)
    elif not wanted:
        wanted = _LISTED_TYPES
    if any(t not in _LISTED_TYPES for t in wanted):
        return ctx.respond(throttle_time=ZERO, error_code=ErrorCode.unsupported_version,
                           config_resources=())
    found: list[tuple[str, int]] = []
    services = ctx.services
    for kind in wanted:
        if kind == CLIENT_METRICS:
            names = services.telemetry.configs.names()
        elif kind == GROUP:
            names = sorted(services.group_configs.overrides)
        elif kind == TOPIC:
            names = sorted(t.name for t in services.topics.all())
        else:
            names = [str(ctx.cluster.node_id)]
        found += [(name, kind) for name in names]
    # v0 (ListClientMetricsResources) has no resource type: make drops it
    resources = [make(resource_cls, resource_name=name, resource_type=kind)
                 for name, kind in found]
    return ctx.respond(throttle_time=ZERO, error_code=ErrorCode.none,
                       config_resources=tuple(resources))
