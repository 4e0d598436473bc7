"""WriteTxnMarkers (key 27) v1-2: append COMMIT/ABORT markers to the partitions this node leads.

Kafka's transaction coordinator sends it to partition leaders; ``kafka-transactions.sh abort``
(Admin.abortTransaction) sends it too, to abort a hanging transaction. As Kafka's
KafkaApis.handleWriteTxnMarkersRequest: CLUSTER_ACTION on the cluster is required (else every
partition answers CLUSTER_AUTHORIZATION_FAILED); a partition this broker does not have answers
UNKNOWN_TOPIC_OR_PARTITION, one it does not lead NOT_LEADER_OR_FOLLOWER; a
``__consumer_offsets`` partition gets its marker through the group coordinator (a coordinator
error answers NOT_LEADER_OR_FOLLOWER, so the sender retries where it moved). The marker is the
same control batch the local coordinator writes (broker/services/transactions.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.coordinator.runtime.error_codes import CoordinatorError
from kafkette.protocol.build import item_type, make

from ..context import RequestContext
from ..routes import api
from ..security.acl import CLUSTER_NAME, AclOperation, ResourceType
from ..services.errors import ServiceError, service_error
from ..services.offsets_log import OFFSETS_TOPIC
from ._groups_common import coordinator

_NOT_LEADER = ErrorCode.not_leader_or_follower


@api(27, 1, 2)
async def handle_write_txn_markers(ctx: RequestContext, req: Any) -> Any:
    allowed = ctx.authorize(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)
    answers: list[list[tuple[str, list[tuple[int, Any]]]]] = []
    for marker in req.markers:
        topics = []
        for t in marker.topics:
            parts = []
            for p in t.partition_indexes:
                if not allowed:
                    outcome: Any = ErrorCode.cluster_authorization_failed
                else:
                    outcome = _write(ctx, marker, t.name, p)
                parts.append((p, outcome))
            topics.append((t.name, parts))
        answers.append(topics)
    pending = [o for topics in answers for _, parts in topics for _, o in parts
               if not isinstance(o, ErrorCode)]
    written = iter(await asyncio.gather(*pending))  # in the order of ``answers``
    result_cls = item_type(ctx.response_type, "markers")
    topic_cls = item_type(result_cls, "topics")
    part_cls = item_type(topic_cls, "partitions")
    return ctx.respond(markers=tuple(
        make(result_cls, producer_id=marker.producer_id, topics=tuple(
            make(topic_cls, name=name, partitions=tuple(
                make(part_cls, partition_index=p,
                     error_code=o if isinstance(o, ErrorCode) else next(written))
                for p, o in parts))
            for name, parts in topics))
        for marker, topics in zip(req.markers, answers, strict=True)))


def _write(ctx: RequestContext, marker: Any, topic: str, partition: int
           ) -> ErrorCode | Awaitable[ErrorCode]:
    """The error of a refused marker, or an awaitable of the outcome of its write."""
    if topic == OFFSETS_TOPIC:
        return _offsets_marker(ctx, marker, partition)
    records = ctx.services.records
    if not records.has_partition(topic, partition):
        return ErrorCode.unknown_topic_or_partition
    try:
        written = records.append_marker(topic, partition, marker.producer_id,
                                        marker.producer_epoch, marker.transaction_result,
                                        marker.coordinator_epoch)
    except ServiceError as refused:
        return refused.code
    return _outcome(written)


async def _outcome(written: Awaitable[Any]) -> ErrorCode:
    try:
        await written
    except Exception as failed:  # noqa: BLE001 - mapped to Kafka's code
        return service_error(failed).code
    return ErrorCode.none


async def _offsets_marker(ctx: RequestContext, marker: Any, partition: int) -> ErrorCode:
    try:
        await coordinator(ctx).complete_transaction(partition, marker.producer_id,
                                                    marker.producer_epoch,
                                                    marker.transaction_result)
    except CoordinatorError:
        return _NOT_LEADER
    return ErrorCode.none
