"""DeleteTopics (key 20), versions 1-6."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make

from ..context import RequestContext
from ..registry import api
from ._groups_common import coordinator

ZERO_UUID = uuid.UUID(int=0)


@api(20, 1, 6)
async def handle_delete_topics(ctx: RequestContext, req: Any):
    cls = ctx.response_type
    result_cls = item_type(cls, "responses")
    logs = ctx.broker.logs
    enabled = ctx.broker.config.get("delete.topic.enable", "true").lower() == "true"
    if ctx.api_version >= 6:
        wanted = [(t.name, t.topic_id) for t in req.topics]
    else:
        wanted = [(name, None) for name in req.topic_names]
    results = []
    for name, topic_id in wanted:
        if name is None and topic_id is not None and topic_id != ZERO_UUID:
            info = logs.topic_by_id(topic_id)
            missing = (ErrorCode.unknown_topic_id, "This server does not host this topic ID.")
        else:
            info = logs.topic(name) if name is not None else None
            missing = (ErrorCode.unknown_topic_or_partition,
                       "This server does not host this topic-partition.")
        code, message = ErrorCode.none, None
        if info is None:
            code, message = missing
        elif not enabled:
            code, message = ErrorCode.topic_deletion_disabled, "Topic deletion is disabled."
        else:
            await logs.delete_topic(info.name)
            await coordinator(ctx).on_partitions_deleted(
                [(info.name, p) for p in range(info.partitions)])
        results.append(make(result_cls, name=info.name if info else name,
                            topic_id=info.topic_id if info else (topic_id or ZERO_UUID),
                            error_code=code, error_message=message))
    return make(cls, throttle_time=timedelta(0), responses=tuple(results))
