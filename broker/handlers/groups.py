"""Classic group membership APIs: JoinGroup (11), Heartbeat (12), LeaveGroup (13), SyncGroup (14),
DescribeGroups (15), ListGroups (16), DeleteGroups (42). Decode, call the coordinator service,
encode."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkette.coordinator.group.requests import JoinRequest, JoinResult, SyncRequest, SyncResult
from kafkette.coordinator.runtime.error_codes import INCONSISTENT_GROUP_PROTOCOL, NONE
from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import response_type

from ..context import RequestContext
from ..routes import api
from ..security.acl import CLUSTER_NAME, AclOperation, ResourceType, all_operations
from ._groups_common import ZERO, coordinator, ms, respond_with
from .share_offsets import share_offsets

# READ | DELETE | DESCRIBE | DESCRIBE_CONFIGS | ALTER_CONFIGS (AclOperation codes 3, 6, 8, 10, 11):
# every operation a group supports in Kafka 4.0, what a broker without an authorizer allows.
GROUP_AUTHORIZED_OPERATIONS = all_operations(ResourceType.GROUP)
AUTH_OPS_OMITTED = -(2**31)
GROUP = ResourceType.GROUP
READ, DESCRIBE = AclOperation.READ, AclOperation.DESCRIBE
GROUP_AUTHORIZATION_FAILED = int(ErrorCode.group_authorization_failed)


# JoinGroup ---------------------------------------------------------------------------------------

def _join_response(ctx: RequestContext, res: JoinResult):
    name = res.protocol_name
    if ctx.api_version < 7:
        name = name or ""
    elif name == "":
        name = None
    members: tuple = ()
    if res.members:
        member_cls = item_type(ctx.response_type, "members")
        members = tuple(make(member_cls, member_id=m, group_instance_id=i, metadata=md)
                        for m, i, md in res.members)
    return ctx.respond(throttle_time=ZERO, error_code=ErrorCode(res.error),
                       generation_id=res.generation, protocol_type=res.protocol_type,
                       protocol_name=name, leader=res.leader,
                       skip_assignment=res.skip_assignment, member_id=res.member_id,
                       members=members)


@api(11, 0, 9)
def handle_join_group(ctx: RequestContext, req):
    if not ctx.authorize(READ, GROUP, req.group_id):
        return _join_response(ctx, JoinResult(GROUP_AUTHORIZATION_FAILED, member_id=req.member_id))
    v = ctx.api_version
    session = ms(req.session_timeout)
    request = JoinRequest(
        group_id=req.group_id, member_id=req.member_id,
        group_instance_id=getattr(req, "group_instance_id", None),
        session_timeout_ms=session,
        rebalance_timeout_ms=ms(req.rebalance_timeout) if v >= 1 else session,
        protocol_type=req.protocol_type,
        protocols=tuple((p.name, bytes(p.metadata)) for p in req.protocols),
        client_id="null" if ctx.client_id is None else ctx.client_id,
        client_host=ctx.client_host, version=v, reason=getattr(req, "reason", None),
    )
    return respond_with(coordinator(ctx).join_group(request),
                        lambda res: _join_response(ctx, res))


# SyncGroup ---------------------------------------------------------------------------------------

def _sync_response(ctx: RequestContext, res: SyncResult):
    return ctx.respond(throttle_time=ZERO, error_code=ErrorCode(res.error),
                       protocol_type=res.protocol_type, protocol_name=res.protocol_name,
                       assignment=res.assignment)


@api(14, 0, 5)
def handle_sync_group(ctx: RequestContext, req):
    if not ctx.authorize(READ, GROUP, req.group_id):
        return _sync_response(ctx, SyncResult(GROUP_AUTHORIZATION_FAILED))
    if ctx.api_version >= 5 and (req.protocol_type is None or req.protocol_name is None):
        return _sync_response(ctx, SyncResult(INCONSISTENT_GROUP_PROTOCOL))
    request = SyncRequest(
        group_id=req.group_id, member_id=req.member_id,
        group_instance_id=getattr(req, "group_instance_id", None),
        generation=req.generation_id,
        protocol_type=getattr(req, "protocol_type", None),
        protocol_name=getattr(req, "protocol_name", None),
        assignments={a.member_id: bytes(a.assignment) for a in req.assignments},
    )
    return respond_with(coordinator(ctx).sync_group(request),
                        lambda res: _sync_response(ctx, res))


# Heartbeat ---------------------------------------------------------------------------------------

@api(12, 0, 4)
def handle_heartbeat(ctx: RequestContext, req):
    version = ctx.api_version
    # READ on the group; ctx.authorizing inlined: the hottest request
    if ctx.services.acls is not None and not ctx.authorize(READ, GROUP, req.group_id):
        return _heartbeat_response(version, GROUP_AUTHORIZATION_FAILED)
    coord = ctx.services.groups.coordinator  # coordinator(ctx), inlined: the hottest request
    if coord is None:
        coord = coordinator(ctx)
    error = coord.heartbeat(req.group_id, req.member_id,
                            req.group_instance_id if version >= 3 else None, req.generation_id)
    if type(error) is int:
        response = _HEARTBEAT_OK.get(version) if error == 0 else _HEARTBEAT_RESPONSES.get(
            (version, error))
        return response if response is not None else _heartbeat_response(version, error)
    return respond_with(error, lambda code: _heartbeat_response(version, code))


# A handful of constant answers; reusing the object lets the connection and the codec reuse its
# encoding. Keyed by (version, error code); the error-free ones also by version alone.
_HEARTBEAT_RESPONSES: dict[tuple[int, int], object] = {}
_HEARTBEAT_OK: dict[int, object] = {}


def _heartbeat_response(version: int, error: int):
    response = _HEARTBEAT_RESPONSES.get((version, error))
    if response is None:
        response = _HEARTBEAT_RESPONSES[version, error] = make(
            response_type(12, version), throttle_time=ZERO, error_code=ErrorCode(error))
        if error == 0:
            _HEARTBEAT_OK[version] = response
    return response


# LeaveGroup --------------------------------------------------------------------------------------

@api(13, 0, 5)
def handle_leave_group(ctx: RequestContext, req):
    if not ctx.authorize(READ, GROUP, req.group_id):
        return _leave_response(ctx, GROUP_AUTHORIZATION_FAILED, [])
    if ctx.api_version >= 3:
        members = [(m.member_id, m.group_instance_id) for m in req.members]
    else:
        members = [(req.member_id, None)]
    return respond_with(coordinator(ctx).leave_group(req.group_id, members),
                        lambda answer: _leave_response(ctx, *answer))


def _leave_response(ctx: RequestContext, top: int, results: list):
    if ctx.api_version < 3:
        if top == NONE:
            top = next((err for _, _, err in results if err != NONE), NONE)
        return ctx.respond(throttle_time=ZERO, error_code=ErrorCode(top))
    member_cls = item_type(ctx.response_type, "members")
    return ctx.respond(
        throttle_time=ZERO, error_code=ErrorCode(top),
        members=tuple(make(member_cls, member_id=m, group_instance_id=i, error_code=ErrorCode(err))
                      for m, i, err in results))


# DescribeGroups ----------------------------------------------------------------------------------

@api(15, 0, 6)
async def handle_describe_groups(ctx: RequestContext, req):
    group_cls = item_type(ctx.response_type, "groups")
    member_cls = item_type(group_cls, "members")
    include_ops = getattr(req, "include_authorized_operations", False)
    # Kafka describes the groups it may, then lists the others GROUP_AUTHORIZATION_FAILED.
    denied = ctx.denied(DESCRIBE, GROUP, req.groups)
    described = await coordinator(ctx).describe_groups(
        [g for g in req.groups if g not in denied], ctx.api_version)

    def operations(group_id: str, error: int) -> int:
        if not include_ops or error != NONE:
            return AUTH_OPS_OMITTED
        return ctx.authorized_operations(GROUP, group_id)

    return ctx.respond(throttle_time=ZERO, groups=tuple(
        make(group_cls, error_code=ErrorCode(d.error), error_message=d.error_message,
             group_id=d.group_id, group_state=d.state, protocol_type=d.protocol_type,
             protocol_data=d.protocol_data, authorized_operations=operations(d.group_id, d.error),
             members=tuple(
                 make(member_cls, member_id=m.member_id, group_instance_id=m.group_instance_id,
                      client_id=m.client_id, client_host=m.client_host, member_metadata=meta,
                      member_assignment=m.assignment)
                 for m, meta in d.members))
        for d in described) + tuple(
        make(group_cls, error_code=ErrorCode.group_authorization_failed, error_message=None,
             group_id=g, group_state="", protocol_type="", protocol_data="",
             authorized_operations=AUTH_OPS_OMITTED, members=())
        for g in req.groups if g in denied))


# ListGroups --------------------------------------------------------------------------------------

@api(16, 0, 5)
async def handle_list_groups(ctx: RequestContext, req):
    states = {s.strip().lower() for s in getattr(req, "states_filter", ())}
    types = {t.lower() for t in getattr(req, "types_filter", ())}  # GroupType.parse: no trim
    listed_cls = item_type(ctx.response_type, "groups")
    error, rows = await coordinator(ctx).list_groups(states, types)
    # DESCRIBE on the cluster lists every group, else those it may DESCRIBE
    hidden = frozenset() if ctx.authorize(DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME) \
        else ctx.denied(DESCRIBE, GROUP, (row[0] for row in rows))
    return ctx.respond(throttle_time=ZERO, error_code=ErrorCode(error), groups=tuple(
        make(listed_cls, group_id=gid, protocol_type=ptype, group_state=state, group_type=gtype)
        for gid, ptype, state, gtype in rows if gid not in hidden))


# DeleteGroups ------------------------------------------------------------------------------------

@api(42, 0, 2)
async def handle_delete_groups(ctx: RequestContext, req):
    result_cls = item_type(ctx.response_type, "results")
    denied = ctx.denied(AclOperation.DELETE, GROUP, req.groups_names)
    errors: dict[str, int] = {gid: GROUP_AUTHORIZATION_FAILED for gid in denied}
    offsets = share_offsets(ctx)  # an Empty share group's state goes first
    failed = {gid: code for gid in dict.fromkeys(req.groups_names)
              if gid not in denied and (code := await offsets.delete_group_state(gid))}
    errors.update(failed)
    allowed = [gid for gid in req.groups_names if gid not in denied and gid not in failed]
    if allowed or not errors:
        errors.update(await coordinator(ctx).delete_groups(allowed))
    return ctx.respond(throttle_time=ZERO, results=tuple(
        make(result_cls, group_id=gid, error_code=ErrorCode(errors[gid]))
        for gid in req.groups_names))
