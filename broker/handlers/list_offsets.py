"""ListOffsets (key 2), versions 1-10: earliest, latest, max timestamp, by timestamp."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from ..context import RequestContext
from ..routes import api
from ..security.acl import AclOperation, ResourceType
from ..services import ServiceError
from ._partitions import per_partition_async


@api(2, 1, 10)
async def handle_list_offsets(ctx: RequestContext, req: Any):
    records = ctx.services.records
    read_committed = getattr(req, "isolation_level", 0) == 1
    denied = ctx.denied(AclOperation.DESCRIBE, ResourceType.TOPIC, (t.name for t in req.topics))

    async def answer(topic: str, p: Any) -> dict[str, Any]:
        code, ts, offset, epoch = ErrorCode.none, -1, -1, -1
        if topic in denied:
            code = ErrorCode.topic_authorization_failed
        else:
            try:
                ts, offset, epoch = await records.list_offset(topic, p.partition_index,
                                                              p.timestamp, read_committed)
            except ServiceError as exc:
                code = exc.code
        return dict(partition_index=p.partition_index, error_code=code, timestamp=ts,
                    offset=offset, leader_epoch=epoch,
                    old_style_offsets=(offset,) if offset >= 0 else ())

    return await per_partition_async(ctx, req, answer)
