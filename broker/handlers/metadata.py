"""Metadata (key 3): brokers, controller, cluster id, topics; auto-creates topics."""

from __future__ import annotations

import uuid
from datetime import timedelta

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make

from ..context import RequestContext
from ..routes import api
from ..security.acl import CLUSTER_NAME, AclOperation, ResourceType, all_operations
from ..services import ServiceError

ZERO_UUID = uuid.UUID(int=0)
AUTH_OPS_OMITTED = -(2**31)
# Without an authorizer Kafka allows, and reports, every operation a resource type supports
# (AclEntry.supportedOperations as a bit field of AclOperation codes): 3576 and 8096.
TOPIC_AUTHORIZED_OPERATIONS = all_operations(ResourceType.TOPIC)
CLUSTER_AUTHORIZED_OPERATIONS = all_operations(ResourceType.CLUSTER)
_TOPIC, _DESCRIBE, _CREATE = ResourceType.TOPIC, AclOperation.DESCRIBE, AclOperation.CREATE


@api(3, 0, 13)
async def handle_metadata(ctx: RequestContext, req):
    topics_service = ctx.services.topics
    cluster = ctx.cluster
    cls = ctx.response_type
    topic_cls = item_type(cls, "topics")
    part_cls = item_type(topic_cls, "partitions")
    node = cluster.node_id
    # Kafka sets it on every topic of the answer it may describe, unknown ones included.
    include_ops = getattr(req, "include_topic_authorized_operations", False)
    authorizing = ctx.authorizing

    if cluster.nodes is None:
        def partition_entry(topic: str, p: int) -> object:
            return make(part_cls, error_code=ErrorCode.none, partition_index=p, leader_id=node,
                        leader_epoch=0, replica_nodes=(node,), isr_nodes=(node,),
                        offline_replicas=())
    else:
        def partition_entry(topic: str, p: int) -> object:
            lead, replicas, isr, offline = cluster.partition_state(topic, p)
            # No live replica: Kafka answers LEADER_NOT_AVAILABLE with leader -1.
            return make(part_cls, error_code=ErrorCode.none if lead >= 0
                        else ErrorCode.leader_not_available, partition_index=p, leader_id=lead,
                        leader_epoch=0, replica_nodes=tuple(replicas), isr_nodes=tuple(isr),
                        offline_replicas=tuple(offline))

    def topic_entry(error: ErrorCode, name: str | None, info=None, topic_id=ZERO_UUID):
        partitions: tuple[object, ...] = ()
        if info is not None:
            topic_id = info.topic_id
            partitions = tuple(partition_entry(info.name, p) for p in range(info.partitions))
        ops = AUTH_OPS_OMITTED
        if include_ops and error != ErrorCode.topic_authorization_failed:
            ops = ctx.authorized_operations(_TOPIC, name) if authorizing and name is not None \
                else TOPIC_AUTHORIZED_OPERATIONS
        return make(topic_cls, error_code=error, name=name, topic_id=topic_id,
                    is_internal=bool(info and info.internal), partitions=partitions,
                    topic_authorized_operations=ops)

    def may_create(name: str) -> bool:
        """Auto-creating a topic needs CREATE on the cluster or on the topic."""
        return ctx.authorize(_CREATE, ResourceType.CLUSTER, CLUSTER_NAME) or \
            ctx.authorize(_CREATE, _TOPIC, name)

    requested = req.topics
    if ctx.api_version == 0 and not requested:
        requested = None  # v0: an empty list means all topics
    if requested is not None and ctx.api_version < 12 and any(
            t.name is None or getattr(t, "topic_id", None) not in (None, ZERO_UUID)
            for t in requested):
        return _invalid_request(ctx, requested)
    denied_ops = ErrorCode.topic_authorization_failed
    if requested is None:  # every topic it may describe, the others left out silently
        listed = topics_service.all()
        hidden = ctx.denied(_DESCRIBE, _TOPIC, (t.name for t in listed))
        topics = tuple(topic_entry(ErrorCode.none, t.name, t) for t in listed
                       if t.name not in hidden)
    else:
        auto_create = getattr(req, "allow_auto_topic_creation", True)
        entries = []
        for wanted in requested:
            name = wanted.name
            if name is None:
                tid = getattr(wanted, "topic_id", None)
                info = topics_service.get_by_id(tid) if tid else None
                if info is None:
                    entries.append(topic_entry(ErrorCode.unknown_topic_id, None,
                                               topic_id=tid or ZERO_UUID))
                elif not ctx.authorize(_DESCRIBE, _TOPIC, info.name):
                    entries.append(topic_entry(denied_ops, None, topic_id=info.topic_id))
                else:
                    entries.append(topic_entry(ErrorCode.none, info.name, info))
                continue
            if authorizing and (not ctx.authorize(_DESCRIBE, _TOPIC, name) or (
                    auto_create and topics_service.get(name) is None
                    and ctx.config.get_bool("auto.create.topics.enable")
                    and not may_create(name))):
                entries.append(topic_entry(denied_ops, name))
                continue
            try:
                info = await topics_service.lookup(name, auto_create=auto_create)
            except ServiceError as exc:
                entries.append(topic_entry(exc.code, name))
            else:
                entries.append(topic_entry(ErrorCode.none, name, info))
        topics = tuple(entries)

    broker_cls = item_type(cls, "brokers")
    return make(
        cls,
        throttle_time=timedelta(0),
        brokers=tuple(make(broker_cls, node_id=n, host=host, port=port, rack=None)
                      for n, host, port in cluster.brokers()),
        cluster_id=cluster.cluster_id,
        controller_id=cluster.controller(),
        topics=topics,
        cluster_authorized_operations=_cluster_operations(ctx)
        if getattr(req, "include_cluster_authorized_operations", False) else AUTH_OPS_OMITTED,
        error_code=ErrorCode.none,
    )


def _cluster_operations(ctx: RequestContext) -> int:
    """What the principal may do on the cluster; 0 without DESCRIBE on it (Kafka's rule)."""
    if not ctx.authorizing:
        return CLUSTER_AUTHORIZED_OPERATIONS
    if not ctx.authorize(_DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return 0
    return ctx.authorized_operations(ResourceType.CLUSTER, CLUSTER_NAME)


def _invalid_request(ctx: RequestContext, requested) -> object:
    """v10-11 carry topic ids but may not use them (KafkaApis: InvalidRequestException).

    Kafka answers MetadataRequest.getErrorResponse: every topic INVALID_REQUEST with no
    partitions, a null name as "" (the response does not allow null), no brokers.
    """
    cls = ctx.response_type
    topic_cls = item_type(cls, "topics")
    topics = tuple(
        make(topic_cls, error_code=ErrorCode.invalid_request, name=t.name or "",
             topic_id=getattr(t, "topic_id", None) or ZERO_UUID, is_internal=False,
             partitions=(), topic_authorized_operations=AUTH_OPS_OMITTED)
        for t in requested)
    return make(cls, throttle_time=timedelta(0), brokers=(), cluster_id=None, controller_id=-1,
                topics=topics, cluster_authorized_operations=AUTH_OPS_OMITTED,
                error_code=ErrorCode.invalid_request)
