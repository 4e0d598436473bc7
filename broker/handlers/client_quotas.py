"""DescribeClientQuotas (key 48, versions 0-1) and AlterClientQuotas (key 49, versions 0-1):
client quota configs of users, client ids and ips (broker/services/client_quota_store.py)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make

from ..context import RequestContext
from ..routes import api
from ..services import ServiceError
from ..services.client_quota_store import FilterComponent, QuotaOp


@api(48, 0, 1)
def handle_describe_client_quotas(ctx: RequestContext, req: Any):
    cls = ctx.response_type
    entry_cls = item_type(cls, "entries")
    entity_cls = item_type(entry_cls, "entity")
    value_cls = item_type(entry_cls, "values")
    components = [FilterComponent(c.entity_type, int(c.match_type), c.match)
                  for c in req.components]
    try:
        found = ctx.services.quotas.store.describe(components, req.strict)
    except ServiceError as refused:
        return make(cls, throttle_time=timedelta(0), error_code=refused.code,
                    error_message=refused.message, entries=None)
    entries = tuple(
        make(entry_cls,
             entity=tuple(make(entity_cls, entity_type=kind, entity_name=name)
                          for kind, name in entity),
             values=tuple(make(value_cls, key=key, value=value)
                          for key, value in sorted(quotas.items())))
        for entity, quotas in found)
    return make(cls, throttle_time=timedelta(0), error_code=ErrorCode.none, error_message=None,
                entries=entries)


@api(49, 0, 1)
async def handle_alter_client_quotas(ctx: RequestContext, req: Any):
    cls = ctx.response_type
    entry_cls = item_type(cls, "entries")
    entity_cls = item_type(entry_cls, "entity")
    changes = [([(e.entity_type, e.entity_name) for e in entry.entity],
                [QuotaOp(op.key, float(op.value), op.remove) for op in entry.ops])
               for entry in req.entries]
    results = await ctx.services.quotas.store.alter(changes, validate_only=req.validate_only)
    entries = tuple(
        make(entry_cls, error_code=ErrorCode.none if error is None else error.code,
             error_message=None if error is None else error.message,
             entity=tuple(make(entity_cls, entity_type=e.entity_type, entity_name=e.entity_name)
                          for e in entry.entity))
        for entry, error in zip(req.entries, results, strict=True))
    return make(cls, throttle_time=timedelta(0), entries=entries)
