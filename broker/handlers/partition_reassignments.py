"""AlterPartitionReassignments (key 45, v0-1) and ListPartitionReassignments (key 46, v0), as
Kafka's controller serves them (ControllerApis, ReplicationControlManager); the work is in
broker/services/reassignments.py.

Alter needs ALTER on the cluster, List DESCRIBE on the cluster: without it the whole request
is answered CLUSTER_AUTHORIZATION_FAILED (for Alter also on every partition asked, as Kafka's
error answer mirrors the request). v1 carries AllowReplicationFactorChange, echoed back.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make

from ..context import RequestContext
from ..routes import api
from ..security.acl import CLUSTER_NAME, AclOperation, ResourceType
from ..services.reassignments import PartitionReassignments

_CLUSTER_DENIED = "Cluster authorization failed."  # Kafka's message for the code


def _service(ctx: RequestContext) -> PartitionReassignments:
    return PartitionReassignments(ctx.services.topics, ctx.cluster, ctx.config,
                                  ctx.services.groups.coordinator)


@api(45, 0, 1)
async def handle_alter_partition_reassignments(ctx: RequestContext, req: Any) -> Any:
    cls = ctx.response_type
    topic_cls = item_type(cls, "responses")
    part_cls = item_type(topic_cls, "partitions")
    # v1+; v0 always allows a change. Echoed back from v1 (``make`` drops it for v0).
    allow_rf_change = bool(req.allow_replication_factor_change) if ctx.api_version >= 1 else True
    if not ctx.authorize(AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        denied = ErrorCode.cluster_authorization_failed
        return make(cls, throttle_time=timedelta(0), error_code=denied,
                    error_message=_CLUSTER_DENIED,
                    allow_replication_factor_change=allow_rf_change, responses=tuple(
                        make(topic_cls, name=t.name, partitions=tuple(
                            make(part_cls, partition_index=p.partition_index, error_code=denied,
                                 error_message=_CLUSTER_DENIED) for p in t.partitions))
                        for t in req.topics))
    requested = [(t.name, [(p.partition_index, None if p.replicas is None else list(p.replicas))
                           for p in t.partitions]) for t in req.topics]
    answers = await _service(ctx).alter(requested,
                                        allow_replication_factor_change=allow_rf_change)
    return make(cls, throttle_time=timedelta(0), error_code=ErrorCode.none, error_message=None,
                allow_replication_factor_change=allow_rf_change, responses=tuple(
                    make(topic_cls, name=topic, partitions=tuple(
                        make(part_cls, partition_index=a.partition, error_code=a.error,
                             error_message=a.message) for a in answered))
                    for topic, answered in answers))


@api(46, 0, 0)
def handle_list_partition_reassignments(ctx: RequestContext, req: Any) -> Any:
    cls = ctx.response_type
    topic_cls = item_type(cls, "topics")
    part_cls = item_type(topic_cls, "partitions")
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        denied = ErrorCode.cluster_authorization_failed
        return make(cls, throttle_time=timedelta(0), error_code=denied,
                    error_message=_CLUSTER_DENIED, topics=tuple(
                        make(topic_cls, name=t.name, partitions=tuple(
                            make(part_cls, partition_index=p) for p in t.partition_indexes))
                        for t in req.topics or ()))
    wanted = (None if req.topics is None
              else [(t.name, list(t.partition_indexes)) for t in req.topics])
    ongoing = _service(ctx).ongoing(wanted)
    return make(cls, throttle_time=timedelta(0), error_code=ErrorCode.none, error_message=None,
                topics=tuple(
                    make(topic_cls, name=topic, partitions=tuple(
                        make(part_cls, partition_index=p, replicas=tuple(r.replicas),
                             adding_replicas=tuple(r.adding), removing_replicas=tuple(r.removing))
                        for p, r in partitions))
                    for topic, partitions in ongoing))
