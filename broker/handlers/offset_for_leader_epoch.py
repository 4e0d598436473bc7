"""OffsetForLeaderEpoch (key 23), versions 2-4: consumers validate their positions with it.

A single-node kafkette partition has had one leader epoch, 0, since offset 0.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.storage.log import LEADER_EPOCH

from ..context import RequestContext
from ..registry import api
from ._partitions import per_partition


@api(23, 2, 4)
def handle_offset_for_leader_epoch(ctx: RequestContext, req: Any):
    logs = ctx.broker.logs

    def answer(topic: str, p: Any) -> dict[str, Any]:
        plog = logs.get_partition(topic, p.partition)
        code, epoch, end = ErrorCode.none, -1, -1
        if plog is None:
            code = ErrorCode.unknown_topic_or_partition
        elif p.current_leader_epoch > LEADER_EPOCH:
            code = ErrorCode.unknown_leader_epoch
        elif p.leader_epoch == LEADER_EPOCH:
            epoch, end = LEADER_EPOCH, plog.log_end_offset
        return dict(error_code=code, partition=p.partition, leader_epoch=epoch, end_offset=end)

    return per_partition(ctx, req, answer, topic_field="topic")
