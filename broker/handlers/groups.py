"""Classic group membership APIs: JoinGroup (11), Heartbeat (12), LeaveGroup (13), SyncGroup (14),
DescribeGroups (15), ListGroups (16), DeleteGroups (42)."""

from __future__ import annotations

import logging
from functools import cache

from kio.schema.errors import ErrorCode

from kafkette.coordinator import errors as E
from kafkette.coordinator.errors import CoordinatorError, append_error
from kafkette.coordinator.shard import JoinRequest, JoinResult, SyncRequest, SyncResult
from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import response_type

from ..context import RequestContext
from ..registry import api
from ._groups_common import ZERO, coordinator, ms, shard_for

log = logging.getLogger("kafkette.groups")

# READ | DELETE | DESCRIBE (AclOperation codes 3, 6, 8) — what an unauthenticated broker allows.
GROUP_AUTHORIZED_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)
AUTH_OPS_OMITTED = -(2**31)


# JoinGroup ---------------------------------------------------------------------------------------

def _join_response(ctx: RequestContext, res: JoinResult):
    v = ctx.api_version
    name = res.protocol_name
    if v < 7:
        name = name or ""
    elif name == "":
        name = None
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
    v = ctx.api_version
    if not req.group_id:
        return _join_response(ctx, JoinResult(E.INVALID_GROUP_ID, req.member_id))
    session = ms(req.session_timeout)
    rebalance = ms(req.rebalance_timeout) if v >= 1 else session
    cfg = coord.config if (coord := ctx.services.groups.coordinator) is not None else None
    if cfg is not None and not cfg.min_session_timeout_ms <= session <= cfg.max_session_timeout_ms:
        return _join_response(ctx, JoinResult(E.INVALID_SESSION_TIMEOUT, req.member_id))
    try:
        shard = shard_for(ctx, req.group_id)
    except CoordinatorError as exc:
        return _join_response(ctx, JoinResult(exc.code, req.member_id))
    request = JoinRequest(
        group_id=req.group_id, member_id=req.member_id,
        group_instance_id=getattr(req, "group_instance_id", None),
        session_timeout_ms=session, rebalance_timeout_ms=rebalance,
        protocol_type=req.protocol_type,
        protocols=tuple((p.name, bytes(p.metadata)) for p in req.protocols),
        client_id="null" if ctx.client_id is None else ctx.client_id,
        client_host=ctx.client_host, version=v, reason=getattr(req, "reason", None),
    )
    fut = shard.join_group(request)
    if fut.done():
        return _join_response(ctx, fut.result())

    async def parked():
        return _join_response(ctx, await fut)
    return parked()


# SyncGroup ---------------------------------------------------------------------------------------

def _sync_response(ctx: RequestContext, res: SyncResult):
    return ctx.respond(throttle_time=ZERO, error_code=ErrorCode(res.error),
                       protocol_type=res.protocol_type, protocol_name=res.protocol_name,
                       assignment=res.assignment)


@api(14, 0, 5)
def handle_sync_group(ctx: RequestContext, req):
    v = ctx.api_version
    if v >= 5 and (req.protocol_type is None or req.protocol_name is None):
        return _sync_response(ctx, SyncResult(E.INCONSISTENT_GROUP_PROTOCOL))
    if not req.group_id:
        return _sync_response(ctx, SyncResult(E.INVALID_GROUP_ID))
    try:
        shard = shard_for(ctx, req.group_id)
    except CoordinatorError as exc:
        return _sync_response(ctx, SyncResult(exc.code))
    request = SyncRequest(
        group_id=req.group_id, member_id=req.member_id,
        group_instance_id=getattr(req, "group_instance_id", None),
        generation=req.generation_id,
        protocol_type=getattr(req, "protocol_type", None),
        protocol_name=getattr(req, "protocol_name", None),
        assignments={a.member_id: bytes(a.assignment) for a in req.assignments},
    )
    fut = shard.sync_group(request)
    if fut.done():
        return _sync_response(ctx, fut.result())

    async def parked():
        return _sync_response(ctx, await fut)
    return parked()


# Heartbeat ---------------------------------------------------------------------------------------

@api(12, 0, 4)
def handle_heartbeat(ctx: RequestContext, req):
    if not req.group_id:
        error = E.INVALID_GROUP_ID
    else:
        try:
            shard = shard_for(ctx, req.group_id)
        except CoordinatorError as exc:
            # Kafka answers heartbeats blindly while the partition loads.
            error = E.NONE if exc.code == E.COORDINATOR_LOAD_IN_PROGRESS else exc.code
        else:
            error = shard.heartbeat(req.group_id, req.member_id,
                                    getattr(req, "group_instance_id", None), req.generation_id)
    return _heartbeat_response(ctx.api_version, error)


@cache
def _heartbeat_response(version: int, error: int):
    # A handful of constant answers; reusing the object lets the codec reuse its encoding.
    return make(response_type(12, version), throttle_time=ZERO, error_code=ErrorCode(error))


# LeaveGroup --------------------------------------------------------------------------------------

@api(13, 0, 5)
def handle_leave_group(ctx: RequestContext, req):
    v = ctx.api_version
    if v >= 3:
        members = [(m.member_id, m.group_instance_id) for m in req.members]
    else:
        members = [(req.member_id, None)]
    if not req.group_id:
        top, results = E.INVALID_GROUP_ID, []
    else:
        try:
            shard = shard_for(ctx, req.group_id)
        except CoordinatorError as exc:
            top, results = exc.code, []
        else:
            top, results = shard.leave_group(req.group_id, members)
    if v < 3:
        if top == E.NONE:
            top = next((err for _, _, err in results if err != E.NONE), E.NONE)
        return ctx.respond(throttle_time=ZERO, error_code=ErrorCode(top))
    member_cls = item_type(ctx.response_type, "members")
    return ctx.respond(
        throttle_time=ZERO, error_code=ErrorCode(top),
        members=tuple(make(member_cls, member_id=m, group_instance_id=i, error_code=ErrorCode(err))
                      for m, i, err in results))


# DescribeGroups ----------------------------------------------------------------------------------

@api(15, 0, 6)
def handle_describe_groups(ctx: RequestContext, req):
    v = ctx.api_version
    group_cls = item_type(ctx.response_type, "groups")
    member_cls = item_type(group_cls, "members")
    include_ops = getattr(req, "include_authorized_operations", False)
    ops = GROUP_AUTHORIZED_OPERATIONS if include_ops else AUTH_OPS_OMITTED
    out = []
    for group_id in req.groups:
        try:
            d = shard_for(ctx, group_id).describe_group(group_id, v)
        except CoordinatorError as exc:
            out.append(make(group_cls, error_code=ErrorCode(exc.code), error_message=None,
                            group_id=group_id, group_state="", protocol_type="",
                            protocol_data="", members=(), authorized_operations=ops))
            continue
        members = tuple(
            make(member_cls, member_id=m.member_id, group_instance_id=m.group_instance_id,
                 client_id=m.client_id, client_host=m.client_host, member_metadata=meta,
                 member_assignment=m.assignment)
            for m, meta in d.members)
        out.append(make(group_cls, error_code=ErrorCode(d.error), error_message=d.error_message,
                        group_id=group_id, group_state=d.state, protocol_type=d.protocol_type,
                        protocol_data=d.protocol_data, members=members,
                        authorized_operations=ops))
    return ctx.respond(throttle_time=ZERO, groups=tuple(out))


# ListGroups --------------------------------------------------------------------------------------

@api(16, 0, 5)
def handle_list_groups(ctx: RequestContext, req):
    states = {s.strip().lower() for s in getattr(req, "states_filter", ())}
    types = {t.lower() for t in getattr(req, "types_filter", ())}  # GroupType.parse: no trim
    listed_cls = item_type(ctx.response_type, "groups")
    try:
        coord = coordinator(ctx)
        if coord.loading():
            raise CoordinatorError(E.COORDINATOR_LOAD_IN_PROGRESS)
        shards = coord.active_shards()
    except CoordinatorError as exc:
        return ctx.respond(throttle_time=ZERO, error_code=ErrorCode(exc.code), groups=())
    groups = [make(listed_cls, group_id=gid, protocol_type=ptype, group_state=state,
                   group_type=gtype)
              for shard in shards for gid, ptype, state, gtype in shard.list_groups(states, types)]
    return ctx.respond(throttle_time=ZERO, error_code=ErrorCode.none, groups=tuple(groups))


# DeleteGroups ------------------------------------------------------------------------------------

@api(42, 0, 2)
async def handle_delete_groups(ctx: RequestContext, req):
    result_cls = item_type(ctx.response_type, "results")
    errors: dict[str, int] = {}
    by_shard: dict[int, tuple[object, list[str]]] = {}
    for group_id in req.groups_names:
        try:
            shard = shard_for(ctx, group_id)
        except CoordinatorError as exc:
            errors[group_id] = exc.code
            continue
        by_shard.setdefault(shard.partition, (shard, []))[1].append(group_id)
    for shard, ids in by_shard.values():
        results, write = shard.delete_groups(ids)  # type: ignore[attr-defined]
        failed = None
        if write is not None:
            try:
                await write
            except Exception as exc:  # noqa: BLE001 - mapped to a Kafka error
                failed = append_error(exc)
        for gid, err in results:
            errors[gid] = failed if failed is not None and err == E.NONE else err
    return ctx.respond(throttle_time=ZERO, results=tuple(
        make(result_cls, group_id=gid, error_code=ErrorCode(errors[gid]))
        for gid in req.groups_names))
