"""CreatePartitions (key 37), versions 0-3."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make

from ..context import RequestContext
from ..routes import api
from ..security.acl import AclOperation, ResourceType
from ..services import ServiceError
from ._quota import mutation_quota, mutation_throttle


@api(37, 0, 3)
async def handle_create_partitions(ctx: RequestContext, req: Any):
    cls = ctx.response_type
    result_cls = item_type(cls, "results")
    denied = ctx.denied(AclOperation.ALTER, ResourceType.TOPIC, (t.name for t in req.topics))
    try:  # the per-request partition limit counts the topics the principal may alter
        ctx.services.topics.check_added_partition_total(
            [(t.name, t.count) for t in req.topics if t.name not in denied])
    except ServiceError as exc:
        return make(cls, throttle_time=timedelta(0), results=tuple(
            make(result_cls, name=t.name, error_code=exc.code, error_message=exc.message)
            if t.name not in denied else
            make(result_cls, name=t.name, error_code=ErrorCode.topic_authorization_failed,
                 error_message=None)
            for t in req.topics))
    quota = mutation_quota(ctx, strict_since=3)  # controller_mutation_rate (KIP-599)
    results = []
    for t in req.topics:
        code, message = ErrorCode.none, None
        assignments = None if t.assignments is None else [a.broker_ids for a in t.assignments]
        if t.name in denied:  # ALTER on the topic
            results.append(make(result_cls, name=t.name,
                                error_code=ErrorCode.topic_authorization_failed,
                                error_message=None))
            continue
        try:
            await ctx.services.topics.add_partitions(t.name, t.count, assignments,
                                                     validate_only=req.validate_only,
                                                     quota=quota)
        except ServiceError as exc:
            code, message = exc.code, exc.message
        results.append(make(result_cls, name=t.name, error_code=code, error_message=message))
    return make(cls, throttle_time=mutation_throttle(ctx, quota), results=tuple(results))
