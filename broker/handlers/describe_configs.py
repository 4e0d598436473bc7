"""DescribeConfigs (key 32), versions 1-4, for topics, brokers, groups and client metrics
subscriptions."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make

from ..context import RequestContext
from ..routes import api
from ..security.acl import AclOperation
from ..services import ServiceError
from ..services.config_entries import DEFAULT_CONFIG, broker_config_entries
from ._config_access import config_refusal

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32


@api(32, 1, 4)
def handle_describe_configs(ctx: RequestContext, req: Any):
    cls = ctx.response_type
    result_cls = item_type(cls, "results")
    entry_cls = item_type(result_cls, "configs")
    syn_cls = item_type(entry_cls, "synonyms")
    topics = ctx.services.topics
    node_id = ctx.cluster.node_id
    results = []
    for res in req.resources:
        keys = set(res.configuration_keys) if res.configuration_keys is not None else None
        error, message, entries = ErrorCode.none, None, []
        refused = config_refusal(ctx, AclOperation.DESCRIBE_CONFIGS, res.resource_type,
                                 res.resource_name)
        if refused is not None:
            error, message = refused
        elif res.resource_type == TOPIC:
            try:
                entries = topics.config_entries(res.resource_name, keys)
            except ServiceError as exc:
                error, message = exc.code, exc.message
        elif res.resource_type == BROKER:
            if res.resource_name not in ("", str(node_id)):
                error, message = ErrorCode.invalid_request, (
                    f"Unexpected broker id, expected {node_id} or empty string, "
                    f"but received {res.resource_name}")
            else:
                layers = ctx.services.broker_configs
                entries = broker_config_entries(ctx.config, keys,
                                                layers.layer(res.resource_name, node_id),
                                                layers.cluster_default)
        elif res.resource_type == BROKER_LOGGER:
            entries = []
        elif res.resource_type == GROUP:
            try:
                entries = ctx.services.group_configs.entries(res.resource_name, keys)
            except ServiceError as exc:
                error, message = exc.code, exc.message
        elif res.resource_type == CLIENT_METRICS:
            try:
                entries = ctx.services.telemetry.configs.entries(res.resource_name, keys)
            except ServiceError as exc:
                error, message = exc.code, exc.message
        else:
            error, message = ErrorCode.invalid_request, \
                f"Unsupported resource type {res.resource_type}"
        configs = tuple(
            make(entry_cls, name=e["name"], value=e["value"], read_only=e["read_only"],
                 config_source=e["source"], is_sensitive=e.get("sensitive", False), is_default=e["source"] == DEFAULT_CONFIG,
                 synonyms=tuple(make(syn_cls, name=n, value=v, source=s) for n, v, s in e["synonyms"])
                 if req.include_synonyms else (),
                 config_type=e["type"], documentation=None)
            for e in entries
        )
        results.append(make(result_cls, error_code=error, error_message=message,
                            resource_type=res.resource_type, resource_name=res.resource_name,
                            configs=configs))
    return make(cls, throttle_time=timedelta(0), results=tuple(results))

