"""ListOffsets (key 2), versions 1-10: earliest, latest, max timestamp, by timestamp."""

from __future__ import annotations

import asyncio
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.storage.log import LEADER_EPOCH, PartitionLog

from ..context import RequestContext
from ..registry import api
from ._partitions import per_partition_async

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
    logs = ctx.broker.logs

    async def answer(topic: str, p: Any) -> dict[str, Any]:
        plog = logs.get_partition(topic, p.partition_index)
        if plog is None:
            code, ts, offset, epoch = ErrorCode.unknown_topic_or_partition, -1, -1, -1
        elif p.timestamp >= 0 or p.timestamp == MAX_TIMESTAMP:
            # Reads a batch from the segment file: keep it off the event loop.
            code, ts, offset, epoch = await asyncio.to_thread(_lookup, plog, p.timestamp)
        else:
            code, ts, offset, epoch = _lookup(plog, p.timestamp)
        return dict(partition_index=p.partition_index, error_code=code, timestamp=ts,
                    offset=offset, leader_epoch=epoch,
                    old_style_offsets=(offset,) if offset >= 0 else ())

    return await per_partition_async(ctx, req, answer)
