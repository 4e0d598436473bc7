"""OffsetForLeaderEpoch (key 23), versions 2-4: consumers validate their positions with it.

A single-node kafkette partition has had one leader epoch, 0, since offset 0.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from protocol.build import item_type, make
from storage.log import LEADER_EPOCH

from ..context import RequestContext
from ..registry import api


@api(23, 2, 4)
def handle_offset_for_leader_epoch(ctx: RequestContext, req: Any):
    cls = ctx.response_type
    topic_cls = item_type(cls, "topics")
    part_cls = item_type(topic_cls, "partitions")
    logs = ctx.broker.logs
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            plog = logs.get_partition(t.topic, p.partition)
            code, epoch, end = ErrorCode.none, -1, -1
            if plog is None:
                code = ErrorCode.unknown_topic_or_partition
            elif p.current_leader_epoch > LEADER_EPOCH:
                code = ErrorCode.unknown_leader_epoch
            elif p.leader_epoch == LEADER_EPOCH:
                epoch, end = LEADER_EPOCH, plog.log_end_offset
            parts.append(make(part_cls, error_code=code, partition=p.partition, leader_epoch=epoch,
                              end_offset=end))
        topics.append(make(topic_cls, topic=t.topic, partitions=tuple(parts)))
    return make(cls, throttle_time=timedelta(0), topics=tuple(topics))
