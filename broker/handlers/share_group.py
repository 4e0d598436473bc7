"""ShareGroupHeartbeat (key 76) and ShareGroupDescribe (key 77), v1: share group membership
(KIP-932). Decode, call the coordinator's share group service, encode. With the
``share.version`` feature finalized at 0 both answer UNSUPPORTED_VERSION, as Kafka does.
"""

from __future__ import annotations

from functools import cache, partial
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.coordinator.group.share.share_heartbeat import ShareHeartbeatRequest
from kafkette.coordinator.group.share.share_manager import DescribedTopicPartitions
from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import response_type

from ..context import RequestContext
from ..routes import api
from ..security.acl import AclOperation, ResourceType
from ._groups_common import ZERO, coordinator, modern_heartbeat_response, respond_with
from .groups import AUTH_OPS_OMITTED

_HIDDEN_TOPICS = "The group has described topic(s) that the client is not authorized to describe."


@api(76, 1, 1)
def handle_share_group_heartbeat(ctx: RequestContext, req: Any):
    names = req.subscribed_topic_names
    request = ShareHeartbeatRequest(
        group_id=req.group_id, member_id=req.member_id, member_epoch=req.member_epoch,
        rack_id=req.rack_id, subscribed_topic_names=None if names is None else tuple(names),
        client_id="null" if ctx.client_id is None else ctx.client_id,
        client_host=ctx.client_host)
    version = ctx.api_version
    if ctx.authorizing:
        refused = _refused_heartbeat(ctx, request)
        if refused:
            return _heartbeat_response(version, (refused, None, None))
    answer = coordinator(ctx).share_groups().heartbeat(request)
    if type(answer) is tuple:
        return _heartbeat_response(version, answer)
    return respond_with(answer, partial(_heartbeat_response, version))


def _refused_heartbeat(ctx: RequestContext, request: ShareHeartbeatRequest) -> int:
    """Kafka's checks: READ on the group (GROUP_AUTHORIZATION_FAILED), then DESCRIBE on every
    subscribed topic name (TOPIC_AUTHORIZATION_FAILED); 0 when allowed."""
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return int(ErrorCode.group_authorization_failed)
    names = request.subscribed_topic_names
    if names and ctx.denied(AclOperation.DESCRIBE, ResourceType.TOPIC, names):
        return int(ErrorCode.topic_authorization_failed)
    return 0


@cache
def _heartbeat_types(version: int) -> tuple[type, type, type]:
    response_cls = response_type(76, version)
    assignment_cls = item_type(response_cls, "assignment")
    return response_cls, assignment_cls, item_type(assignment_cls, "topic_partitions")


def _heartbeat_response(version: int, answer: Any):
    return modern_heartbeat_response(_heartbeat_types(version), answer)


@api(77, 1, 1)
async def handle_share_group_describe(ctx: RequestContext, req: Any):
    group_cls = item_type(ctx.response_type, "groups")
    member_cls = item_type(group_cls, "members")
    assignment_cls = item_type(member_cls, "assignment")
    tp_cls = item_type(assignment_cls, "topic_partitions")
    include_ops = req.include_authorized_operations

    def assignment(parts: tuple[DescribedTopicPartitions, ...]):
        return make(assignment_cls, topic_partitions=tuple(
            make(tp_cls, topic_id=p.topic_id, topic_name=p.topic_name, partitions=p.partitions)
            for p in parts))

    def empty(group_id: str, code: int, message: str | None) -> Any:
        return make(group_cls, error_code=ErrorCode(code), error_message=message,
                    group_id=group_id, group_state="", group_epoch=0, assignment_epoch=0,
                    assignor_name="", members=(), authorized_operations=AUTH_OPS_OMITTED)

    # DESCRIBE on each group; Kafka answers the others after the described ones
    denied = ctx.denied(AclOperation.DESCRIBE, ResourceType.GROUP, req.group_ids)
    groups = []
    rows = await coordinator(ctx).share_groups().describe(
        [g for g in req.group_ids if g not in denied])
    for group_id, code, message, group in rows:
        if group is not None and ctx.authorizing and _hides_topics(ctx, group):
            groups.append(empty(group_id, int(ErrorCode.topic_authorization_failed),
                                _HIDDEN_TOPICS))
            continue
        if group is None:
            groups.append(make(group_cls, error_code=ErrorCode(code), error_message=message,
                               group_id=group_id, group_state="", group_epoch=0,
                               assignment_epoch=0, assignor_name="", members=(),
                               authorized_operations=AUTH_OPS_OMITTED))
            continue
        members = tuple(
            make(member_cls, member_id=m.member_id, rack_id=m.rack_id,
                 member_epoch=m.member_epoch, client_id=m.client_id,
                 client_host=m.client_host, subscribed_topic_names=m.subscribed_topic_names,
                 assignment=assignment(m.assignment))
            for m in group.members)
        groups.append(make(group_cls, error_code=ErrorCode.none, error_message=None,
                           group_id=group_id, group_state=group.group_state,
                           group_epoch=group.group_epoch,
                           assignment_epoch=group.assignment_epoch,
                           assignor_name=group.assignor_name, members=members,
                           authorized_operations=ctx.authorized_operations(
                               ResourceType.GROUP, group_id) if include_ops
                           else AUTH_OPS_OMITTED))
    groups.extend(empty(g, int(ErrorCode.group_authorization_failed), None)
                  for g in req.group_ids if g in denied)
    return make(ctx.response_type, throttle_time=ZERO, groups=tuple(groups))


def _hides_topics(ctx: RequestContext, group: Any) -> bool:
    """Whether a described group names a topic (subscribed or assigned to a member) the
    client may not DESCRIBE: Kafka then withholds the group."""
    names: set[str] = set()
    for m in group.members:
        names.update(m.subscribed_topic_names or ())
        names.update(p.topic_name for p in m.assignment)
    return bool(names) and bool(ctx.denied(AclOperation.DESCRIBE, ResourceType.TOPIC, names))
