"""DescribeTopicPartitions (key 75), version 0: topics and their partitions, a page at a time.

As Kafka's DescribeTopicPartitionsRequestHandler: the topics asked (all topics when none is
named), deduplicated, sorted by name and taken from the cursor on; at most
min(max.request.partition.size.limit, ResponsePartitionLimit) partitions (at least 1), and
NextCursor names the first partition left out. Unknown topics are not created: they answer
UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an illegal name), and when every topic is
asked, none is listed. A cursor topic missing from the list asked, or a negative cursor
partition, is INVALID_REQUEST for every topic asked. A partition without a live replica has
leader -1 and no error (unlike Metadata).
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make

from ..context import RequestContext
from ..routes import api
from ..security.acl import AclOperation, ResourceType
from ..services.topic_service import valid_topic_name
from .metadata import AUTH_OPS_OMITTED, TOPIC_AUTHORIZED_OPERATIONS

log = logging.getLogger("kafkette.admin")
ZERO_UUID = uuid.UUID(int=0)
LIMIT_CONFIG = "max.request.partition.size.limit"


@api(75, 0, 0)
def handle_describe_topic_partitions(ctx: RequestContext, req: Any) -> Any:
    cls = ctx.response_type
    topic_cls = item_type(cls, "topics")
    cursor = req.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""
    every_topic = not req.topics
    topics_service = ctx.services.topics
    if every_topic:
        names = {t.name for t in topics_service.all() if t.name >= cursor_topic}
    else:
        names = {t.name for t in req.topics if t.name >= cursor_topic}
        if cursor is not None and cursor.topic_name not in names:
            return _refused(ctx, req, "DescribeTopicPartitionsRequest topic list should contain "
                                      f"the cursor topic: {cursor.topic_name}")
    if cursor is not None and cursor.partition_index < 0:
        return _refused(ctx, req, "DescribeTopicPartitionsRequest cursor partition must be "
                                  f"valid: {cursor}")
    # DESCRIBE on each topic, before whether it exists: a topic named is answered
    # TOPIC_AUTHORIZATION_FAILED after the others, and with every topic asked it is not listed.
    denied = ctx.denied(AclOperation.DESCRIBE, ResourceType.TOPIC, names)
    if denied:
        names -= denied
    authorizing = ctx.authorizing
    remaining = max(min(ctx.config.get_int(LIMIT_CONFIG), req.response_partition_limit), 1)
    part_cls = item_type(topic_cls, "partitions")
    cluster = ctx.cluster
    topics: list[Any] = []
    next_cursor = None
    for name in sorted(names):
        if remaining == 0:  # the previous topic filled the page: start the next one at 0
            next_cursor = make(item_type(cls, "next_cursor"), topic_name=name, partition_index=0)
            break
        info = topics_service.get(name)
        if info is None:
            if not every_topic:
                error = (ErrorCode.unknown_topic_or_partition if valid_topic_name(name)
                         else ErrorCode.invalid_topic_exception)
                topics.append(make(topic_cls, error_code=error, name=name, topic_id=ZERO_UUID,
                                   is_internal=False, partitions=(),
                                   topic_authorized_operations=_operations(ctx, name)
                                   if authorizing else TOPIC_AUTHORIZED_OPERATIONS))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor_topic else 0
        upper = min(info.partitions, start + remaining)
        partitions = []
        for p in range(start, upper):
            leader, replicas, isr, offline = cluster.partition_state(name, p)
            partitions.append(make(part_cls, error_code=ErrorCode.none, partition_index=p,
                                   leader_id=leader, leader_epoch=0, replica_nodes=tuple(replicas),
                                   isr_nodes=tuple(isr), eligible_leader_replicas=(),
                                   last_known_elr=(), offline_replicas=tuple(offline)))
        topics.append(make(topic_cls, error_code=ErrorCode.none, name=name,
                           topic_id=info.topic_id, is_internal=info.internal,
                           partitions=tuple(partitions),
                           topic_authorized_operations=_operations(ctx, name)
                           if authorizing else TOPIC_AUTHORIZED_OPERATIONS))
        if upper < info.partitions:
            next_cursor = make(item_type(cls, "next_cursor"), topic_name=name,
                               partition_index=upper)
            break
        remaining -= len(partitions)
    if not every_topic:
        topics.extend(make(topic_cls, error_code=ErrorCode.topic_authorization_failed, name=name,
                           topic_id=ZERO_UUID, is_internal=False, partitions=(),
                           topic_authorized_operations=AUTH_OPS_OMITTED)
                      for name in sorted(denied))
    return make(cls, throttle_time=timedelta(0), topics=tuple(topics), next_cursor=next_cursor)


def _operations(ctx: RequestContext, name: str) -> int:
    return ctx.authorized_operations(ResourceType.TOPIC, name)


def _refused(ctx: RequestContext, req: Any, message: str) -> Any:
    """Kafka's DescribeTopicPartitionsRequest.getErrorResponse: every topic asked carries the
    error, with no partitions (the response has no field for the message: it is logged)."""
    log.info("DescribeTopicPartitions refused: %s", message)
    cls = ctx.response_type
    topic_cls = item_type(cls, "topics")
    return make(cls, throttle_time=timedelta(0), next_cursor=None, topics=tuple(
        make(topic_cls, error_code=ErrorCode.invalid_request, name=t.name, topic_id=ZERO_UUID,
             is_internal=False, partitions=(), topic_authorized_operations=AUTH_OPS_OMITTED)
        for t in req.topics))

