"""CreatePartitions (key 37), versions 0-3."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make

from ..context import RequestContext
from ..registry import api


@api(37, 0, 3)
async def handle_create_partitions(ctx: RequestContext, req: Any):
    cls = ctx.response_type
    result_cls = item_type(cls, "results")
    logs = ctx.broker.logs
    node = ctx.broker.config.node_id
    results = []
    for t in req.topics:
        info = logs.topic(t.name)
        code, message = ErrorCode.none, None
        if info is None:
            code, message = ErrorCode.unknown_topic_or_partition, \
                "This server does not host this topic-partition."
        elif t.count < info.partitions:
            code, message = ErrorCode.invalid_partitions, (
                f"Topic currently has {info.partitions} partitions, which is higher than the "
                f"requested {t.count}.")
        elif t.count == info.partitions:
            code, message = ErrorCode.invalid_partitions, \
                f"Topic already has {info.partitions} partitions."
        elif t.assignments is not None and (
                len(t.assignments) != t.count - info.partitions
                or any(tuple(a.broker_ids) != (node,) for a in t.assignments)):
            code, message = ErrorCode.invalid_replica_assignment, (
                f"Attempted to add {t.count - info.partitions} additional partition(s), but only "
                f"{len(t.assignments)} assignment(s) were specified on broker {node}.")
        elif not req.validate_only:
            await logs.create_partitions(t.name, t.count)
        results.append(make(result_cls, name=t.name, error_code=code, error_message=message))
    return make(cls, throttle_time=timedelta(0), results=tuple(results))
