"""AlterConfigs (key 33, versions 0-2) and IncrementalAlterConfigs (key 44, versions 0-1)
for topics, brokers, groups and client metrics subscriptions. A BROKER resource is a node id (that broker's dynamic configs)
or "" (the cluster-wide default), see broker/services/broker_configs.py; a GROUP resource is a
group id, see broker/services/group_configs.py; a CLIENT_METRICS resource is a subscription name,
see broker/services/client_metrics.py."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make
from kafkette.storage.topic_config import LIST, TOPIC_CONFIGS

from ..config_def import config_key
from ..context import RequestContext
from ..routes import api
from ..security.acl import AclOperation
from ..services import ServiceError
from ._config_access import config_refusal

TOPIC, BROKER, CLIENT_METRICS, GROUP = 2, 4, 16, 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _topic_list_default(name: str) -> str | None:
    """The default of a LIST topic config (None: not a list)."""
    d = TOPIC_CONFIGS[name]
    return d.default if d.type == LIST else None


def _incremental(current: dict[str, str], configs: Any) -> dict[str, str]:
    for c in configs:
        if c.name not in TOPIC_CONFIGS:
            raise ServiceError(ErrorCode.invalid_config, f"Unknown topic config name: {c.name}")
    return _apply_operations(current, configs, _topic_list_default)


def _apply_operations(current: dict[str, str], configs: Any,
                      list_default: Callable[[str], str | None]) -> dict[str, str]:
    """Kafka's prepareIncrementalConfigs: SET, DELETE, and APPEND/SUBTRACT on LIST configs
    (``list_default(name)``: the value a list starts from, None for a config that is no list)."""
    out = dict(current)
    for c in configs:
        op = c.config_operation
        if op == SET:
            if c.value is None:
                raise ServiceError(ErrorCode.invalid_config, f"Null value not supported for : {c.name}")
            out[c.name] = c.value
        elif op == DELETE:
            out.pop(c.name, None)
        elif op in (APPEND, SUBTRACT):
            default = list_default(c.name)
            if default is None:
                raise ServiceError(ErrorCode.invalid_config,
                                   f"Config value append is not allowed for config key: {c.name}"
                                   if op == APPEND else
                                   f"Config value subtract is not allowed for config key: {c.name}")
            items = [v for v in out.get(c.name, default).split(",") if v.strip()]
            values = [v.strip() for v in (c.value or "").split(",") if v.strip()]
            if op == APPEND:
                items += [v for v in values if v not in items]
            else:
                items = [v for v in items if v not in values]
            out[c.name] = ",".join(items)
        else:
            raise ServiceError(ErrorCode.invalid_request, f"Unknown config operation {op}")
    return out


def _broker_list_default(config: Mapping[str, str]) -> Callable[[str], str | None]:
    def list_default(name: str) -> str | None:
        spec = config_key(name)
        return config.get(name, "") if spec is not None and spec.type == "LIST" else None
    return list_default


def _broker_incremental(config: Mapping[str, str]) -> Callable[[dict[str, str], Any], dict[str, str]]:
    return lambda current, configs: _apply_operations(current, configs,
                                                      _broker_list_default(config))


def _group_incremental(current: dict[str, str], configs: Any) -> dict[str, str]:
    return _apply_operations(current, configs, lambda _name: None)  # no group config is a list


def _client_metrics_incremental(current: dict[str, str], configs: Any) -> dict[str, str]:
    # metrics and match are lists (APPEND / SUBTRACT work on them), interval.ms is not
    return _apply_operations(current, configs,
                             lambda name: "" if name in ("metrics", "match") else None)


def _replace_all(_current: dict[str, str], configs: Any) -> dict[str, str]:
    # Legacy AlterConfigs replaces every override of the resource with the given set.
    return {c.name: c.value for c in configs}


async def _alter(ctx: RequestContext, req: Any,
                 topic_configs: Callable[[dict[str, str], Any], dict[str, str]],
                 broker_configs: Callable[[dict[str, str], Any], dict[str, str]],
                 group_configs: Callable[[dict[str, str], Any], dict[str, str]],
                 client_metrics: Callable[[dict[str, str], Any], dict[str, str]]):
    cls = ctx.response_type
    result_cls = item_type(cls, "responses")
    topics = ctx.services.topics
    results = []
    for res in req.resources:
        code, message = ErrorCode.none, None
        changes = res.configs
        refused = config_refusal(ctx, AclOperation.ALTER_CONFIGS, res.resource_type,
                                 res.resource_name)
        try:
            if refused is not None:
                raise ServiceError(refused[0])
            if res.resource_type == TOPIC:
                await topics.alter_configs(
                    res.resource_name, lambda current: topic_configs(current, changes),  # noqa: B023
                    validate_only=req.validate_only)
            elif res.resource_type == BROKER:
                await ctx.services.broker_configs.alter(
                    res.resource_name, ctx.cluster.node_id,
                    lambda current: broker_configs(current, changes),  # noqa: B023
                    validate_only=req.validate_only)
            elif res.resource_type == GROUP:
                await ctx.services.group_configs.alter(
                    res.resource_name,
                    lambda current: group_configs(current, changes),  # noqa: B023
                    validate_only=req.validate_only)
            elif res.resource_type == CLIENT_METRICS:
                await ctx.services.telemetry.configs.alter(
                    res.resource_name,
                    lambda current: client_metrics(current, changes),  # noqa: B023
                    validate_only=req.validate_only)
            else:
                raise ServiceError(ErrorCode.invalid_request,
                                   f"Unsupported resource type {res.resource_type}")
        except ServiceError as rej:
            code, message = rej.code, rej.message
        results.append(make(result_cls, error_code=code, error_message=message,
                            resource_type=res.resource_type, resource_name=res.resource_name))
    return make(cls, throttle_time=timedelta(0), responses=tuple(results))


@api(44, 0, 1)
async def handle_incremental_alter_configs(ctx: RequestContext, req: Any):
    return await _alter(ctx, req, _incremental, _broker_incremental(ctx.config),
                        _group_incremental, _client_metrics_incremental)


@api(33, 0, 2)
async def handle_alter_configs(ctx: RequestContext, req: Any):
    return await _alter(ctx, req, _replace_all, _replace_all, _replace_all, _replace_all)
