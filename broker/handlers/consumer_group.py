"""ConsumerGroupHeartbeat (key 68) and ConsumerGroupDescribe (key 69), v0-1: the KIP-848
consumer group protocol. Decode, call the coordinator service, encode. With ``consumer``
missing from ``group.coordinator.rebalance.protocols`` both answer UNSUPPORTED_VERSION, as
Kafka 4.0 does.

With an authorizer, a heartbeat needs READ on its group and DESCRIBE on every topic it names
(KafkaApis), and carries a ``TopicFilter`` of the topics its principal may DESCRIBE: the topics
a regex subscription resolves to are filtered through it (GroupMetadataManager).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cache, lru_cache, partial
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from kafkette.coordinator.group.consumer.heartbeat import HeartbeatRequest
from kafkette.protocol.build import item_type
from kafkette.protocol.codec import response_type

from ..context import RequestContext
from ..routes import api
from ..security.acl import AclOperation, ResourceType
from ._groups_common import (
    ZERO,
    coordinator,
    interval,
    modern_heartbeat_response,
    ms,
    refused_heartbeat,
    respond_with,
)
from ._modern_describe import describe_groups

if TYPE_CHECKING:
    from ..security.acl_store import AclStore


@api(68, 0, 1)
def handle_consumer_group_heartbeat(ctx: RequestContext, req: Any):
    derived = ctx.derived
    if derived is not None and derived[0] is req:  # a steady member's repeated heartbeat
        request = derived[1]
    else:
        request = _heartbeat_request(ctx, req)
        ctx.derived = (req, request)
    version = ctx.api_version
    if ctx.services.acls is not None:  # ctx.authorizing, inlined: the hot path
        refused = refused_heartbeat(ctx, request)
        if refused:
            return _heartbeat_response(version, (refused, None, None))
    coord = ctx.services.groups.coordinator  # coordinator(ctx), inlined: the hot path
    if coord is None:
        coord = coordinator(ctx)
    answer = coord.consumer_group_heartbeat(request)
    if type(answer) is tuple:  # answered now (respond_with's case, without a closure)
        return _heartbeat_response(version, answer)
    return respond_with(answer, partial(_heartbeat_response, version))


def _heartbeat_request(ctx: RequestContext, req: Any) -> HeartbeatRequest:
    """The coordinator's form of a request (immutable, so a repeat of it may reuse it)."""
    tps = req.topic_partitions
    names = req.subscribed_topic_names
    return HeartbeatRequest(
        group_id=req.group_id, member_id=req.member_id, member_epoch=req.member_epoch,
        instance_id=req.instance_id, rack_id=req.rack_id,
        rebalance_timeout_ms=ms(req.rebalance_timeout),
        subscribed_topic_names=None if names is None else tuple(names),
        subscribed_topic_regex=getattr(req, "subscribed_topic_regex", None),
        server_assignor=req.server_assignor,
        owned=None if tps is None else HeartbeatRequest.owned_from(
            [(tp.topic_id, tp.partitions) for tp in tps]),
        api_version=ctx.api_version,
        client_id="null" if ctx.client_id is None else ctx.client_id,
        client_host=ctx.client_host,
        topic_filter=None if ctx.services.acls is None else DescribableTopics(
            ctx.services.acls, ctx.principal, ctx.client_host[1:]))


class DescribableTopics:
    """The coordinator's ``TopicFilter`` of one member: the topic names its principal may
    DESCRIBE from its address, decided when the coordinator asks (the group's regexes are
    resolved after the heartbeat, so ACLs changed in between count)."""

    __slots__ = ("_acls", "_principal", "_host")

    def __init__(self, acls: AclStore, principal: str, host: str) -> None:
        self._acls = acls
        self._principal = principal
        self._host = host

    def __call__(self, names: frozenset[str]) -> frozenset[str]:
        authorize, principal, host = self._acls.authorizer.authorize, self._principal, self._host
        return frozenset(name for name in names
                         if authorize(principal, host, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                      name))


@cache
def _heartbeat_types(version: int) -> tuple[type, type, type]:
    response_cls = response_type(68, version)
    assignment_cls = item_type(response_cls, "assignment")
    return response_cls, assignment_cls, item_type(assignment_cls, "topic_partitions")


@lru_cache(maxsize=4096)
def _steady_response(version: int, member_id: str, member_epoch: int, interval_ms: int):
    """The answer without an assignment (immutable, so one object per member and epoch)."""
    response_cls = _heartbeat_types(version)[0]
    return response_cls(throttle_time=ZERO, error_code=ErrorCode.none, error_message=None,
                        member_id=member_id, member_epoch=member_epoch,
                        heartbeat_interval=interval(interval_ms), assignment=None)


def _heartbeat_response(version: int, answer: Any):
    # The steady-state answer, which every member gets every heartbeat interval, is cached.
    code, message, result = answer
    if result is not None and result.assignment is None and len(result.member_id) <= 64:
        # (ids are client-chosen: only ordinary ones are kept, so the cache stays small)
        return _steady_response(version, result.member_id, result.member_epoch,
                                result.heartbeat_interval_ms)
    return modern_heartbeat_response(_heartbeat_types(version), answer)


@api(69, 0, 1)
async def handle_consumer_group_describe(ctx: RequestContext, req: Any):
    return await describe_groups(ctx, req.group_ids, req.include_authorized_operations,
                                 coordinator(ctx).consumer_group_describe, _member_fields,
                                 _member_topics)


def _member_fields(m: Any, assignment: Callable[[Any], Any]) -> dict[str, Any]:
    return dict(member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
                member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
                subscribed_topic_names=m.subscribed_topic_names,
                subscribed_topic_regex=m.subscribed_topic_regex or None,
                assignment=assignment(m.assignment),
                target_assignment=assignment(m.target_assignment), member_type=m.member_type)


def _member_topics(m: Any) -> Iterable[str]:
    """The topics a member names: subscribed, assigned or in its target assignment."""
    yield from m.subscribed_topic_names or ()
    yield from (p.topic_name for p in m.assignment)
    yield from (p.topic_name for p in m.target_assignment)
