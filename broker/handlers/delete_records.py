"""DeleteRecords (key 21), versions 0-2: move a partition's log start offset forward."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from protocol.build import item_type, make
from storage.log import OffsetOutOfRangeError

from ..context import RequestContext
from ..registry import api


@api(21, 0, 2)
async def handle_delete_records(ctx: RequestContext, req: Any):
    cls = ctx.response_type
    topic_cls = item_type(cls, "topics")
    part_cls = item_type(topic_cls, "partitions")
    logs = ctx.broker.logs
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            code, low = ErrorCode.none, -1
            if logs.get_partition(t.name, p.partition_index) is None:
                code = ErrorCode.unknown_topic_or_partition
            else:
                try:
                    low = await logs.delete_records(t.name, p.partition_index, p.offset)
                except OffsetOutOfRangeError:
                    code = ErrorCode.offset_out_of_range
            parts.append(make(part_cls, partition_index=p.partition_index, low_watermark=low,
                              error_code=code))
        topics.append(make(topic_cls, name=t.name, partitions=tuple(parts)))
    return make(cls, throttle_time=timedelta(0), topics=tuple(topics))
