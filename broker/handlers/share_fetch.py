"""ShareFetch (key 78) and ShareAcknowledge (key 79), v1: share groups' records (KIP-932).

Decode, call the share service (``broker/services/shares.py``), encode. A share session opened
by a ShareFetch is tied to its connection: when the connection closes, the session ends and its
member's acquired records are released at once (``RequestContext.closing``). With the
``share.version`` feature finalized at 0 both answer UNSUPPORTED_VERSION, as Kafka does.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import response_type

from ..context import RequestContext
from ..routes import api
from ..security.acl import AclOperation, ResourceType
from ..services.shares import (
    MayRead,
    PartitionAcks,
    PartitionAnswer,
    ShareAnswer,
    ShareFetchParams,
)

GROUP_AUTHORIZATION_FAILED = int(ErrorCode.group_authorization_failed)
_GROUP_DENIED = "Group authorization failed."  # Kafka's message for the code


def _ms(value: Any) -> int:
    return int(value.total_seconds() * 1000)


def _acks(topics: Any) -> list[PartitionAcks]:
    return [(t.topic_id, p.partition_index,
             [(b.first_offset, b.last_offset, tuple(b.acknowledge_types))
              for b in p.acknowledgement_batches])
            for t in topics for p in t.partitions]


def _disabled(ctx: RequestContext) -> bool:
    return ctx.config.get_int("share.version") < 1


_NOT_ENABLED = "The share group protocol is not enabled."


def _group_refused(ctx: RequestContext, group_id: str | None) -> ShareAnswer | None:
    """Kafka's first check: READ on the group, else GROUP_AUTHORIZATION_FAILED for all."""
    if ctx.authorize(AclOperation.READ, ResourceType.GROUP, group_id or ""):
        return None
    return ShareAnswer(GROUP_AUTHORIZATION_FAILED, _GROUP_DENIED)


def _topic_reader(ctx: RequestContext) -> MayRead:
    """Whether the principal may READ a topic, decided once per topic for this request (None
    without an authorizer): the share service answers the others TOPIC_AUTHORIZATION_FAILED."""
    if not ctx.authorizing:
        return None
    decided: dict[str, bool] = {}

    def may_read(name: str) -> bool:
        allowed = decided.get(name)
        if allowed is None:
            allowed = decided[name] = ctx.authorize(AclOperation.READ, ResourceType.TOPIC, name)
        return allowed

    return may_read


@api(78, 1, 1)
async def handle_share_fetch(ctx: RequestContext, req: Any) -> Any:
    if _disabled(ctx):
        return _encode(ctx, ShareAnswer(ErrorCode.unsupported_version.value, _NOT_ENABLED),
                       fetch=True)
    refused = _group_refused(ctx, req.group_id)
    if refused is not None:
        return _encode(ctx, refused, fetch=True)
    params = ShareFetchParams(
        group_id=req.group_id or "", member_id=req.member_id or "",
        epoch=req.share_session_epoch, max_wait_ms=_ms(req.max_wait),
        min_bytes=req.min_bytes, max_bytes=req.max_bytes, max_records=req.max_records,
        batch_size=req.batch_size, topics=_acks(req.topics),
        forgotten=[(t.topic_id, p) for t in req.forgotten_topics_data for p in t.partitions],
        may_read=_topic_reader(ctx))
    if not params.group_id or not params.member_id:
        return _encode(ctx, ShareAnswer(ErrorCode.invalid_request.value,
                                        "group id and member id must be set"), fetch=True)
    closing = ctx.closing
    answer = await ctx.services.shares.fetch(
        ctx.cluster, ctx.services.records, params,
        None if closing is None else closing.when_closed)
    return _encode(ctx, answer, fetch=True)


@api(79, 1, 1)
async def handle_share_acknowledge(ctx: RequestContext, req: Any) -> Any:
    if _disabled(ctx):
        return _encode(ctx, ShareAnswer(ErrorCode.unsupported_version.value, _NOT_ENABLED),
                       fetch=False)
    refused = _group_refused(ctx, req.group_id)
    if refused is not None:
        return _encode(ctx, refused, fetch=False)
    group, member = req.group_id or "", req.member_id or ""
    if not group or not member:
        return _encode(ctx, ShareAnswer(ErrorCode.invalid_request.value,
                                        "group id and member id must be set"), fetch=False)
    answer = await ctx.services.shares.acknowledge(ctx.cluster, group, member,
                                                   req.share_session_epoch, _acks(req.topics),
                                                   _topic_reader(ctx))
    return _encode(ctx, answer, fetch=False)


def _encode(ctx: RequestContext, answer: ShareAnswer, *, fetch: bool) -> Any:
    cls = response_type(ctx.api_key, ctx.api_version)
    topic_cls = item_type(cls, "responses")
    part_cls = item_type(topic_cls, "partitions")
    leader_cls = item_type(part_cls, "current_leader")
    by_topic: dict[Any, list[PartitionAnswer]] = {}
    for part in answer.partitions:
        by_topic.setdefault(part.topic_id, []).append(part)
    topics = []
    for topic_id, parts in by_topic.items():
        entries = []
        for p in parts:
            leader = make(leader_cls, leader_id=p.leader_id, leader_epoch=0 if
                          p.leader_id >= 0 else -1)
            if fetch:
                acquired_cls = item_type(part_cls, "acquired_records")
                entries.append(make(
                    part_cls, partition_index=p.partition, error_code=ErrorCode(p.error),
                    error_message=None, acknowledge_error_code=p.ack_error,
                    acknowledge_error_message=None, current_leader=leader, records=p.records,
                    acquired_records=tuple(make(acquired_cls, first_offset=r.first_offset,
                                                last_offset=r.last_offset,
                                                delivery_count=r.delivery_count)
                                           for r in p.acquired)))
            else:
                entries.append(make(part_cls, partition_index=p.partition,
                                    error_code=ErrorCode(p.ack_error or p.error),
                                    error_message=None, current_leader=leader))
        topics.append(make(topic_cls, topic_id=topic_id, partitions=tuple(entries)))
    endpoint_cls = item_type(cls, "node_endpoints")
    endpoints = tuple(make(endpoint_cls, node_id=node, host=host, port=port, rack=None)
                      for node, (host, port) in sorted(answer.endpoints.items()))
    return make(cls, throttle_time=0, error_code=ErrorCode(answer.error),
                error_message=answer.error_message, acquisition_lock_timeout=answer.lock_ms,
                responses=tuple(topics), node_endpoints=endpoints)
