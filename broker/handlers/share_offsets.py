"""DescribeShareGroupOffsets (key 90, v0-1), AlterShareGroupOffsets (91, v0) and
DeleteShareGroupOffsets (92, v0): the share-group offsets admin APIs (KIP-932). Decode, call
broker/services/share_offsets.py, encode. With the ``share.version`` feature finalized at 0
every group answers UNSUPPORTED_VERSION, as Kafka does.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make

from ..context import RequestContext
from ..routes import api
from ..services.errors import ServiceError
from ..services.record_service import LATEST
from ..services.share_offsets import ShareGroupView, ShareOffsets
from ._groups_common import ZERO, coordinator


def share_offsets(ctx: RequestContext) -> ShareOffsets:
    """The offsets admin APIs over this request's services (DeleteGroups uses it too)."""
    return _offsets(ctx)


def _offsets(ctx: RequestContext) -> ShareOffsets:
    share_groups = coordinator(ctx).share_groups()

    async def lookup(group_id: str) -> tuple[int, str | None, ShareGroupView | None]:
        ((_gid, code, message, group),) = await share_groups.describe([group_id])
        return code, message, group

    records = ctx.services.records
    state = ctx.services.share_state

    async def end_offset(topic: str, partition: int) -> int | None:
        try:
            return (await records.list_offset(topic, partition, LATEST))[1]
        except ServiceError:  # a partition that cannot answer has no lag
            return None

    return ShareOffsets(lookup, ctx.services.topics, state, end_offset, state.group_keys)


@api(90, 0, 1)
async def handle_describe_share_group_offsets(ctx: RequestContext, req: Any):
    group_cls = item_type(ctx.response_type, "groups")
    topic_cls = item_type(group_cls, "topics")
    partition_cls = item_type(topic_cls, "partitions")
    offsets = _offsets(ctx)
    groups = []
    for request_group in req.groups:
        topics = None if request_group.topics is None else [
            (t.topic_name, [int(p) for p in t.partitions]) for t in request_group.topics]
        described = await offsets.describe(request_group.group_id, topics)
        groups.append(make(
            group_cls, group_id=described.group_id, error_code=ErrorCode(described.error),
            error_message=described.message,
            topics=tuple(make(topic_cls, topic_name=t.name, topic_id=t.topic_id, partitions=tuple(
                make(partition_cls, partition_index=p.partition, start_offset=p.start_offset,
                     leader_epoch=p.leader_epoch, lag=p.lag, error_code=ErrorCode.none,
                     error_message=None)
                for p in t.partitions)) for t in described.topics)))
    return ctx.respond(throttle_time=ZERO, groups=tuple(groups))


@api(91, 0, 0)
async def handle_alter_share_group_offsets(ctx: RequestContext, req: Any):
    topic_cls = item_type(ctx.response_type, "responses")
    partition_cls = item_type(topic_cls, "partitions")
    result = await _offsets(ctx).alter(req.group_id, [
        (t.topic_name, [(int(p.partition_index), int(p.start_offset)) for p in t.partitions])
        for t in req.topics])
    return ctx.respond(
        throttle_time=ZERO, error_code=ErrorCode(result.error), error_message=result.message,
        responses=tuple(make(topic_cls, topic_name=t.name, topic_id=t.topic_id, partitions=tuple(
            make(partition_cls, partition_index=p.partition, error_code=ErrorCode(p.error),
                 error_message=p.message) for p in t.partitions)) for t in result.topics))


@api(92, 0, 0)
async def handle_delete_share_group_offsets(ctx: RequestContext, req: Any):
    topic_cls = item_type(ctx.response_type, "responses")
    result = await _offsets(ctx).delete(req.group_id, [t.topic_name for t in req.topics])
    return ctx.respond(
        throttle_time=ZERO, error_code=ErrorCode(result.error), error_message=result.message,
        responses=tuple(make(topic_cls, topic_name=t.name, topic_id=t.topic_id,
                             error_code=ErrorCode(t.error), error_message=t.message)
                        for t in result.topics))
