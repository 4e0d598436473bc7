"""ShareGroupHeartbeat (key 76) and ShareGroupDescribe (key 77), v1: share group membership
(KIP-932). Decode, call the coordinator's share group service, encode. With the
``share.version`` feature finalized at 0 both answer UNSUPPORTED_VERSION, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cache, partial
from typing import Any

from kafkette.coordinator.group.share.share_heartbeat import ShareHeartbeatRequest
from kafkette.protocol.build import item_type
from kafkette.protocol.codec import response_type

from ..context import RequestContext
from ..routes import api
from ._groups_common import (
    coordinator,
    modern_heartbeat_response,
    refused_heartbeat,
    respond_with,
)
from ._modern_describe import describe_groups


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
        refused = refused_heartbeat(ctx, request)
        if refused:
            return _heartbeat_response(version, (refused, None, None))
    answer = coordinator(ctx).share_groups().heartbeat(request)
    if type(answer) is tuple:
        return _heartbeat_response(version, answer)
    return respond_with(answer, partial(_heartbeat_response, version))


@cache
def _heartbeat_types(version: int) -> tuple[type, type, type]:
    response_cls = response_type(76, version)
    assignment_cls = item_type(response_cls, "assignment")
    return response_cls, assignment_cls, item_type(assignment_cls, "topic_partitions")


def _heartbeat_response(version: int, answer: Any):
    return modern_heartbeat_response(_heartbeat_types(version), answer)


@api(77, 1, 1)
async def handle_share_group_describe(ctx: RequestContext, req: Any):
    return await describe_groups(ctx, req.group_ids, req.include_authorized_operations,
                                 coordinator(ctx).share_groups().describe, _member_fields,
                                 _member_topics)


def _member_fields(m: Any, assignment: Callable[[Any], Any]) -> dict[str, Any]:
    return dict(member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
                client_id=m.client_id, client_host=m.client_host,
                subscribed_topic_names=m.subscribed_topic_names,
                assignment=assignment(m.assignment))


def _member_topics(m: Any) -> Iterable[str]:
    """The topics a member names: subscribed or assigned."""
    yield from m.subscribed_topic_names or ()
    yield from (p.topic_name for p in m.assignment)
