"""DescribeShareGroupOffsets (key 90, v0-1), AlterShareGroupOffsets (91, v0) and
DeleteShareGroupOffsets (92, v0): the share-group offsets admin APIs (KIP-932). Decode, call
broker/services/share_offsets.py, encode. With the ``share.version`` feature finalized at 0
every group answers UNSUPPORTED_VERSION, as Kafka does.
"""

from __future__ import annotations

import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make

from ..context import RequestContext
from ..routes import api
from ..security.acl import AclOperation, ResourceType
from ..services.errors import ServiceError
from ..services.record_service import LATEST
from ..services.share_offsets import ShareGroupView, ShareOffsets
from ._groups_common import ZERO, coordinator

ZERO_UUID = uuid.UUID(int=0)
GROUP_DENIED = ErrorCode.group_authorization_failed
TOPIC_DENIED = ErrorCode.topic_authorization_failed
# Kafka's messages for the codes
GROUP_DENIED_MESSAGE = "Group authorization failed."
TOPIC_DENIED_MESSAGE = "Topic authorization failed."


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
    # DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED), then on each topic: a topic named
    # but not describable answers TOPIC_AUTHORIZATION_FAILED per partition; with every topic
    # asked, the ones not describable are left out.
    denied_groups = ctx.denied(AclOperation.DESCRIBE, ResourceType.GROUP,
                               [g.group_id for g in req.groups])
    groups = []
    for request_group in req.groups:
        if request_group.group_id in denied_groups:
            groups.append(make(group_cls, group_id=request_group.group_id,
                               error_code=GROUP_DENIED, error_message=GROUP_DENIED_MESSAGE,
                               topics=()))
            continue
        topics = None if request_group.topics is None else [
            (t.topic_name, [int(p) for p in t.partitions]) for t in request_group.topics]
        denied_topics: frozenset[str] = frozenset()
        if topics is not None:
            denied_topics = ctx.denied(AclOperation.DESCRIBE, ResourceType.TOPIC,
                                       [name for name, _ in topics])
        described = await offsets.describe(
            request_group.group_id,
            topics if not denied_topics or topics is None
            else [t for t in topics if t[0] not in denied_topics])
        shown = described.topics
        if topics is None and ctx.authorizing:
            hidden = ctx.denied(AclOperation.DESCRIBE, ResourceType.TOPIC,
                                [t.name for t in shown])
            shown = [t for t in shown if t.name not in hidden]
        answered = [make(topic_cls, topic_name=t.name, topic_id=t.topic_id, partitions=tuple(
            make(partition_cls, partition_index=p.partition, start_offset=p.start_offset,
                 leader_epoch=p.leader_epoch, lag=p.lag, error_code=ErrorCode.none,
                 error_message=None)
            for p in t.partitions)) for t in shown]
        if described.error == 0 and topics is not None:
            answered.extend(make(topic_cls, topic_name=name, topic_id=ZERO_UUID, partitions=tuple(
                make(partition_cls, partition_index=p, start_offset=0, leader_epoch=0, lag=-1,
                     error_code=TOPIC_DENIED, error_message=TOPIC_DENIED_MESSAGE)
                for p in partitions)) for name, partitions in topics if name in denied_topics)
        groups.append(make(
            group_cls, group_id=described.group_id, error_code=ErrorCode(described.error),
            error_message=described.message, topics=tuple(answered)))
    return ctx.respond(throttle_time=ZERO, groups=tuple(groups))


@api(91, 0, 0)
async def handle_alter_share_group_offsets(ctx: RequestContext, req: Any):
    topic_cls = item_type(ctx.response_type, "responses")
    partition_cls = item_type(topic_cls, "partitions")
    # READ on the group (the whole request refused), then READ on each topic
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, req.group_id):
        return ctx.respond(throttle_time=ZERO, error_code=GROUP_DENIED,
                           error_message=GROUP_DENIED_MESSAGE, responses=())
    denied = ctx.denied(AclOperation.READ, ResourceType.TOPIC, [t.topic_name for t in req.topics])
    result = await _offsets(ctx).alter(req.group_id, [
        (t.topic_name, [(int(p.partition_index), int(p.start_offset)) for p in t.partitions])
        for t in req.topics if t.topic_name not in denied])
    responses = [make(topic_cls, topic_name=t.name, topic_id=t.topic_id, partitions=tuple(
        make(partition_cls, partition_index=p.partition, error_code=ErrorCode(p.error),
             error_message=p.message) for p in t.partitions)) for t in result.topics]
    if result.error == 0:
        responses.extend(make(topic_cls, topic_name=t.topic_name, topic_id=ZERO_UUID,
                              partitions=tuple(make(partition_cls,
                                                    partition_index=p.partition_index,
                                                    error_code=TOPIC_DENIED,
                                                    error_message=TOPIC_DENIED_MESSAGE)
                                               for p in t.partitions))
                         for t in req.topics if t.topic_name in denied)
    return ctx.respond(
        throttle_time=ZERO, error_code=ErrorCode(result.error), error_message=result.message,
        responses=tuple(responses))


@api(92, 0, 0)
async def handle_delete_share_group_offsets(ctx: RequestContext, req: Any):
    topic_cls = item_type(ctx.response_type, "responses")
    # DELETE on the group (the whole request refused), then READ on each topic
    if not ctx.authorize(AclOperation.DELETE, ResourceType.GROUP, req.group_id):
        return ctx.respond(throttle_time=ZERO, error_code=GROUP_DENIED,
                           error_message=GROUP_DENIED_MESSAGE, responses=())
    denied = ctx.denied(AclOperation.READ, ResourceType.TOPIC, [t.topic_name for t in req.topics])
    result = await _offsets(ctx).delete(
        req.group_id, [t.topic_name for t in req.topics if t.topic_name not in denied])
    responses = [make(topic_cls, topic_name=t.name, topic_id=t.topic_id,
                      error_code=ErrorCode(t.error), error_message=t.message)
                 for t in result.topics]
    if result.error == 0:
        responses.extend(make(topic_cls, topic_name=t.topic_name, topic_id=ZERO_UUID,
                              error_code=TOPIC_DENIED, error_message=TOPIC_DENIED_MESSAGE)
                         for t in req.topics if t.topic_name in denied)
    return ctx.respond(
        throttle_time=ZERO, error_code=ErrorCode(result.error), error_message=result.message,
        responses=tuple(responses))
