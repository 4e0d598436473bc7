"""DescribeProducers (key 61), version 0: the producers each partition's log tracks (their
epoch, last sequence and timestamp, open transaction), as ``kafka-transactions.sh
describe-producers`` shows them.

As Kafka's KafkaApis.handleDescribeProducersRequest: an illegal topic name answers
INVALID_TOPIC_EXCEPTION and an unknown topic UNKNOWN_TOPIC_OR_PARTITION (with their messages)
for each partition asked; a partition the topic does not have is UNKNOWN_TOPIC_OR_PARTITION, one
this node holds no replica of NOT_LEADER_OR_FOLLOWER (both without a message).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make

from ..context import RequestContext
from ..routes import api
from ..security.acl import AclOperation, ResourceType
from ..services import ServiceError
from ..services.errors import UNKNOWN_PARTITION_MESSAGE
from ..services.topic_service import valid_topic_name


@api(61, 0, 0)
def handle_describe_producers(ctx: RequestContext, req: Any) -> Any:
    cls = ctx.response_type
    topic_cls = item_type(cls, "topics")
    part_cls = item_type(topic_cls, "partitions")
    state_cls = item_type(part_cls, "active_producers")
    records = ctx.services.records
    cluster = ctx.cluster
    topics = []
    denied = ctx.denied(AclOperation.READ, ResourceType.TOPIC,
                        [t.name for t in req.topics if valid_topic_name(t.name)])
    for t in req.topics:
        topic_error: tuple[ErrorCode, str | None] | None = None
        if not valid_topic_name(t.name):
            topic_error = ErrorCode.invalid_topic_exception, _invalid_name_message(t.name)
        elif t.name in denied:  # READ on the topic, before whether it exists
            topic_error = ErrorCode.topic_authorization_failed, "Topic authorization failed."
        elif ctx.services.topics.get(t.name) is None:
            topic_error = ErrorCode.unknown_topic_or_partition, UNKNOWN_PARTITION_MESSAGE
        partitions = []
        for p in t.partition_indexes:
            code, message, producers = ErrorCode.none, None, ()
            if topic_error is not None:
                code, message = topic_error
            elif not records.has_partition(t.name, p):
                code = ErrorCode.unknown_topic_or_partition
            elif not cluster.hosts(t.name, p):
                code = ErrorCode.not_leader_or_follower
            else:
                try:
                    producers = tuple(make(
                        state_cls, producer_id=a.producer_id, producer_epoch=a.epoch,
                        last_sequence=a.last_sequence, last_timestamp=a.last_timestamp,
                        coordinator_epoch=a.coordinator_epoch,
                        current_txn_start_offset=a.txn_start_offset)
                        for a in records.active_producers(t.name, p))
                except ServiceError as exc:
                    code = exc.code
            partitions.append(make(part_cls, partition_index=p, error_code=code,
                                   error_message=message, active_producers=producers))
        topics.append(make(topic_cls, name=t.name, partitions=tuple(partitions)))
    return make(cls, throttle_time=timedelta(0), topics=tuple(topics))


def _invalid_name_message(name: str) -> str:
    """Kafka's Topic.validate message."""
    if not name:
        reason = "the empty string is not allowed"
    elif name in (".", ".."):
        reason = f"'{name}' is not allowed"
    elif len(name) > 249:
        reason = f"the length of '{name}' is longer than the max allowed length 249"
    else:
        reason = f"'{name}' contains one or more characters other than ASCII alphanumerics, " \
                 "'.', '_' and '-'"
    return f"Topic name is invalid: {reason}"
