"""ListOffsets (key 2), versions 1-10: earliest, latest, max timestamp, by timestamp."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from protocol.build import item_type, make
from storage.log import LEADER_EPOCH, PartitionLog

from ..context import RequestContext
from ..registry import api

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5


def _lookup(plog: PartitionLog, timestamp: int) -> tuple[ErrorCode, int, int, int]:
    """(error, timestamp, offset, leader epoch) as Kafka answers them."""
    if timestamp == LATEST:
        return ErrorCode.none, -1, plog.log_end_offset, LEADER_EPOCH
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return ErrorCode.none, -1, plog.log_start_offset, LEADER_EPOCH
    if timestamp == LATEST_TIERED:
        return ErrorCode.none, -1, -1, -1
    if timestamp == MAX_TIMESTAMP:
        found = plog.max_timestamp_offset()
    elif timestamp < 0:
        return ErrorCode.invalid_request, -1, -1, -1
    else:
        found = plog.offset_for_timestamp(timestamp)
    if found is None:
        return ErrorCode.none, -1, -1, -1
    offset, ts = found
    return ErrorCode.none, ts, offset, LEADER_EPOCH


@api(2, 1, 10)
async def handle_list_offsets(ctx: RequestContext, req: Any):
    cls = ctx.response_type
    topic_cls = item_type(cls, "topics")
    part_cls = item_type(topic_cls, "partitions")
    logs = ctx.broker.logs
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            plog = logs.get_partition(t.name, p.partition_index)
            if plog is None:
                code, ts, offset, epoch = ErrorCode.unknown_topic_or_partition, -1, -1, -1
            elif p.timestamp >= 0 or p.timestamp == MAX_TIMESTAMP:
                # Reads a batch from the segment file: keep it off the event loop.
                code, ts, offset, epoch = await asyncio.to_thread(_lookup, plog, p.timestamp)
            else:
                code, ts, offset, epoch = _lookup(plog, p.timestamp)
            parts.append(make(part_cls, partition_index=p.partition_index, error_code=code,
                              timestamp=ts, offset=offset, leader_epoch=epoch,
                              old_style_offsets=(offset,) if offset >= 0 else ()))
        topics.append(make(topic_cls, name=t.name, partitions=tuple(parts)))
    return make(cls, throttle_time=timedelta(0), topics=tuple(topics))
