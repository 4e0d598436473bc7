"""DeleteRecords (key 21), versions 0-2: move a partition's log start offset forward."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from ..context import RequestContext
from ..routes import api
from ..security.acl import AclOperation, ResourceType
from ..services import ServiceError
from ._partitions import per_partition_async


@api(21, 0, 2)
async def handle_delete_records(ctx: RequestContext, req: Any):
    records = ctx.services.records
    denied = ctx.denied(AclOperation.DELETE, ResourceType.TOPIC, (t.name for t in req.topics))

    async def answer(topic: str, p: Any) -> dict[str, Any]:
        code, low = ErrorCode.none, -1
        if topic in denied:
            return dict(partition_index=p.partition_index, low_watermark=low,
                        error_code=ErrorCode.topic_authorization_failed)
        try:
            low = await records.delete_records(topic, p.partition_index, p.offset)
        except ServiceError as exc:
            code = exc.code
        return dict(partition_index=p.partition_index, low_watermark=low, error_code=code)

    return await per_partition_async(ctx, req, answer)
