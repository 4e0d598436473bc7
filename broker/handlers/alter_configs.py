"""AlterConfigs (key 33, versions 0-2) and IncrementalAlterConfigs (key 44, versions 0-1)
for topics. Broker configs are static in kafkette: changing one is refused as Kafka refuses a
read-only broker config."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make
from kafkette.storage.topic_config import LIST, TOPIC_CONFIGS

from ..context import RequestContext
from ..routes import api
from ..services import ServiceError

TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _incremental(current: dict[str, str], configs: Any) -> dict[str, str]:
    out = dict(current)
    for c in configs:
        d = TOPIC_CONFIGS.get(c.name)
        if d is None:
            raise ServiceError(ErrorCode.invalid_config, f"Unknown topic config name: {c.name}")
        op = c.config_operation
        if op == SET:
            if c.value is None:
                raise ServiceError(ErrorCode.invalid_config, f"Null value not supported for : {c.name}")
            out[c.name] = c.value
        elif op == DELETE:
            out.pop(c.name, None)
        elif op in (APPEND, SUBTRACT):
            if d.type != LIST:
                raise ServiceError(ErrorCode.invalid_config,
                                   f"Config value append is not allowed for config key: {c.name}"
                                   if op == APPEND else
                                   f"Config value subtract is not allowed for config key: {c.name}")
            items = [v for v in out.get(c.name, d.default).split(",") if v.strip()]
            values = [v.strip() for v in (c.value or "").split(",") if v.strip()]
            if op == APPEND:
                items += [v for v in values if v not in items]
            else:
                items = [v for v in items if v not in values]
            out[c.name] = ",".join(items)
        else:
            raise ServiceError(ErrorCode.invalid_request, f"Unknown config operation {op}")
    return out


async def _alter(ctx: RequestContext, req: Any,
                 new_configs: Callable[[dict[str, str], Any], dict[str, str]]):
    cls = ctx.response_type
    result_cls = item_type(cls, "responses")
    topics = ctx.services.topics
    results = []
    for res in req.resources:
        code, message = ErrorCode.none, None
        try:
            if res.resource_type == TOPIC:
                changes = res.configs
                await topics.alter_configs(
                    res.resource_name, lambda current: new_configs(current, changes),  # noqa: B023
                    validate_only=req.validate_only)
            elif res.resource_type == BROKER:
                names = ", ".join(c.name for c in res.configs)
                raise ServiceError(ErrorCode.invalid_config,
                                   f"Cannot update these configs dynamically: Set({names})")
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
    return await _alter(ctx, req, _incremental)


@api(33, 0, 2)
async def handle_alter_configs(ctx: RequestContext, req: Any):
    # Legacy AlterConfigs replaces every override of the resource with the given set.
    return await _alter(ctx, req, lambda _current, configs: {c.name: c.value for c in configs})
