"""OffsetForLeaderEpoch (key 23), versions 2-4: consumers validate their positions with it."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from ..context import RequestContext
from ..routes import api
from ..security.acl import CLUSTER_NAME, AclOperation, ResourceType
from ..services import ServiceError
from ._partitions import per_partition


@api(23, 2, 4)
def handle_offset_for_leader_epoch(ctx: RequestContext, req: Any):
    records = ctx.services.records
    # a broker's (CLUSTER_ACTION) or a consumer's (DESCRIBE on each topic) request
    denied = frozenset() if not ctx.authorizing or ctx.authorize(
        AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME) else ctx.denied(
        AclOperation.DESCRIBE, ResourceType.TOPIC, (t.topic for t in req.topics))

    def answer(topic: str, p: Any) -> dict[str, Any]:
        code, epoch, end = ErrorCode.none, -1, -1
        if topic in denied:
            return dict(error_code=ErrorCode.topic_authorization_failed, partition=p.partition,
                        leader_epoch=epoch, end_offset=end)
        try:
            epoch, end = records.end_offset_for_epoch(topic, p.partition, p.current_leader_epoch,
                                                       p.leader_epoch)
        except ServiceError as exc:
            code = exc.code
        return dict(error_code=code, partition=p.partition, leader_epoch=epoch, end_offset=end)

    return per_partition(ctx, req, answer, topic_field="topic")
